//! The HTTP side of the rqlite target: one client for a cluster, which learns its nodes,
//! follows the leader, and retries a node that is down (with backoff, on to the next
//! known node) until a deadline.
//!
//! What rqlite answers, and what this makes of it: `200` with a `results` array (each
//! slot a statement's result or its `error`); a redirect to the leader (`301`, followed
//! here; v8 nodes usually forward writes themselves); `503` while there is no leader
//! (retried); `401`/`403` for credentials (an error at once, never retried).

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::Value as Json;

use super::encode::DocShape;
use super::target::RqliteTarget;
use crate::error::{Error, Result};

/// How long one call keeps trying a cluster that does not answer (no node reachable, or
/// no leader) before it gives up.
pub(crate) const DEFAULT_PATIENCE: Duration = Duration::from_secs(60);

/// A statement's slot in rqlite's `results`.
#[derive(Debug)]
pub(crate) struct Slot {
    pub values: Vec<Vec<Json>>,
}

/// Why a call failed: a statement's error (the request was refused as a whole, nothing
/// of it applied), or the cluster (unreachable, refused, or an answer that says neither
/// yes nor no, so the request may or may not have been applied).
#[derive(Debug)]
pub(crate) enum CallError {
    Statement {
        index: usize,
        message: String,
        /// The node that answered.
        node: String,
    },
    Cluster(Error),
    /// The request may have been applied: the connection broke after it was sent, or
    /// the leader was lost while committing it.
    Uncertain(Error),
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Error {
        match e {
            // SQLite refused the statement in the cluster: a row's constraint (no
            // position known here: the rows path finds it), or the statement itself.
            CallError::Statement { message, .. } if constraint_code(&message).is_some() => {
                Error::constraint(constraint_code(&message), None, message)
            }
            CallError::Statement {
                index,
                message,
                node,
            } => Error::cluster(
                node,
                format!(
                    "the cluster refused statement {} of the request: {message}",
                    index + 1
                ),
            ),
            CallError::Cluster(e) | CallError::Uncertain(e) => e,
        }
    }
}

/// SQLite's extended result code for a constraint that `message` (SQLite's own words, as
/// an rqlite node passes them on) names; `None` for any other refusal.
pub(crate) fn constraint_code(message: &str) -> Option<i32> {
    // sqlite3.h: SQLITE_CONSTRAINT (19) | n << 8.
    const CODES: [(&str, i32); 6] = [
        ("UNIQUE constraint failed", 2067),
        ("PRIMARY KEY constraint failed", 1555),
        ("NOT NULL constraint failed", 1299),
        ("CHECK constraint failed", 275),
        ("FOREIGN KEY constraint failed", 787),
        ("cannot store", 3091),
    ];
    CODES
        .iter()
        .find(|(words, _)| message.contains(words))
        .map(|&(_, code)| code)
}

/// [`constraint_code`] for a table whose primary key is `primary_key`: SQLite words a
/// duplicate primary key as a UNIQUE failure of its columns, with the extended code
/// SQLITE_CONSTRAINT_PRIMARYKEY (1555), which the message alone does not carry.
pub(crate) fn constraint_code_of(message: &str, primary_key: &[String]) -> Option<i32> {
    let code = constraint_code(message)?;
    let columns = message
        .split_once("UNIQUE constraint failed: ")
        .map(|(_, cols)| cols);
    let is_key = columns.is_some_and(|cols| {
        let named: Vec<&str> = cols
            .split(", ")
            .map(|c| c.rsplit_once('.').map_or(c, |(_, col)| col))
            .collect();
        !primary_key.is_empty()
            && named.len() == primary_key.len()
            && named
                .iter()
                .zip(primary_key)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    });
    Some(if is_key { 1555 } else { code })
}

pub(crate) struct Client {
    agent: ureq::Agent,
    scheme: &'static str,
    nodes: Mutex<Vec<String>>,
    current: AtomicUsize,
    auth: Option<String>,
    user: Option<String>,
    pub(crate) patience: Duration,
    /// The cluster's SQLite version (`major * 1_000_000 + minor * 1_000 + patch`), read
    /// by [`Client::discover`]; 0 when unknown.
    sqlite: std::sync::atomic::AtomicU64,
}

/// The certificates of the PEM file `path`, as the HTTP client takes them.
fn read_ca(path: &Path) -> Result<Vec<ureq::tls::Certificate<'static>>> {
    Ok(crate::tls::ca_certificates(path)?
        .iter()
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect())
}

impl Client {
    /// A client for `target`, trusting the certificates in the PEM file `ca` for
    /// HTTPS where one is given; nothing is sent yet.
    pub(crate) fn new(target: &RqliteTarget, ca: Option<&Path>) -> Result<Client> {
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(ca) = ca {
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&read_ca(ca)?));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let auth = target.user.as_ref().map(|u| {
            let pair = format!("{u}:{}", target.password.as_deref().unwrap_or(""));
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        Ok(Client {
            agent,
            scheme: if target.https { "https" } else { "http" },
            nodes: Mutex::new(target.nodes.clone()),
            current: AtomicUsize::new(0),
            auth,
            user: target.user.clone(),
            patience: DEFAULT_PATIENCE,
            sqlite: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The node asked last.
    pub(crate) fn node(&self) -> String {
        let nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        nodes[self.current.load(Ordering::Relaxed) % nodes.len()].clone()
    }

    pub(crate) fn next_node(&self) {
        self.current.fetch_add(1, Ordering::Relaxed);
    }

    fn use_node(&self, node: &str) {
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        let i = match nodes.iter().position(|n| n == node) {
            Some(i) => i,
            None => {
                nodes.push(node.to_string());
                nodes.len() - 1
            }
        };
        self.current.store(i, Ordering::Relaxed);
    }

    /// The form of a document of rows that the cluster's SQLite unpacks fastest:
    /// `jsonb_each` over JSON text from 3.51 on (it has none before), a JSONB array of
    /// row texts from 3.45 on (the first to read JSONB), else `json_each` over JSON text.
    pub(crate) fn doc_shape(&self) -> DocShape {
        match self.sqlite.load(Ordering::Relaxed) {
            v if v >= 3_051_000 => DocShape::Text { each: "jsonb_each" },
            v if v >= 3_045_000 => DocShape::RowTexts,
            _ => DocShape::Text { each: "json_each" },
        }
    }

    /// Learns every node of the cluster (`GET /nodes`), so that a call can go on when
    /// the node it asked goes down, and the cluster's SQLite version.
    pub(crate) fn discover(&self) -> Result<()> {
        let version = self
            .query_rows("SELECT sqlite_version()", &[])?
            .first()
            .and_then(|r| r.first())
            .and_then(Json::as_str)
            .map(|v| {
                v.split('.')
                    .map(|p| p.parse::<u64>().unwrap_or(0))
                    .chain(std::iter::repeat(0))
                    .take(3)
                    .fold(0, |acc, p| acc * 1000 + p)
            })
            .unwrap_or(0);
        self.sqlite.store(version, Ordering::Relaxed);
        let body = self.call("GET", "/nodes", None)?;
        let v: Json = serde_json::from_slice(&body)
            .map_err(|e| Error::cluster(self.node(), format!("GET /nodes: {e}")))?;
        let items: Vec<&Json> = match &v {
            Json::Object(m) => m.values().collect(),
            Json::Array(a) => a.iter().collect(),
            _ => vec![],
        };
        for n in items {
            if let Some(api) = n.get("api_addr").and_then(Json::as_str) {
                let hostport = api.split("://").nth(1).unwrap_or(api).trim_end_matches('/');
                let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
                if !nodes.iter().any(|k| k == hostport) {
                    nodes.push(hostport.to_string());
                }
            }
        }
        Ok(())
    }

    /// `GET /status`, parsed.
    pub(crate) fn status(&self) -> Result<Json> {
        let body = self.call("GET", "/status", None)?;
        serde_json::from_slice(&body)
            .map_err(|e| Error::cluster(self.node(), format!("GET /status: {e}")))
    }

    /// How many voting and non-voting nodes the cluster has.
    pub(crate) fn cluster_size(&self) -> Result<usize> {
        let body = self.call("GET", "/nodes?nonvoters", None)?;
        let v: Json = serde_json::from_slice(&body)
            .map_err(|e| Error::cluster(self.node(), format!("GET /nodes: {e}")))?;
        Ok(match v {
            Json::Object(m) => m.len(),
            Json::Array(a) => a.len(),
            _ => 0,
        })
    }

    /// Runs `statements` (rqlite's JSON: `[["SQL", params…], …]`) through
    /// `/db/execute`, in one transaction when `transaction`. Every slot is checked: the
    /// first that holds an error fails the call, and then (in a transaction) nothing of
    /// the request was applied.
    pub(crate) fn execute(
        &self,
        statements: &[u8],
        transaction: bool,
    ) -> Result<Vec<Slot>, CallError> {
        let path = if transaction {
            "/db/execute?transaction"
        } else {
            "/db/execute"
        };
        let body = self.call_with("POST", path, Some(statements), false)?;
        self.slots(&body)
    }

    /// Runs `statements`, reads and writes, through `/db/request` in one transaction
    /// (strongly consistent): each statement's rows (empty for a write). Checked as
    /// [`Client::execute`] checks.
    pub(crate) fn request(&self, statements: &[u8]) -> Result<Vec<Vec<Vec<Json>>>, CallError> {
        let body = self.call_with(
            "POST",
            "/db/request?transaction&level=strong",
            Some(statements),
            false,
        )?;
        Ok(self.slots(&body)?.into_iter().map(|s| s.values).collect())
    }

    /// Runs read-only `statements` with `strong` consistency (through the leader, after
    /// every write before it is applied).
    /// A read that the node could not pass to the leader is asked again, with backoff,
    /// for `patience`.
    pub(crate) fn query(&self, statements: &[u8]) -> Result<Vec<Slot>, CallError> {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(100);
        loop {
            let body = self
                .call("POST", "/db/query?level=strong", Some(statements))
                .map_err(CallError::Cluster)?;
            match self.slots(&body) {
                Err(CallError::Uncertain(e)) => {
                    if start.elapsed() > self.patience {
                        return Err(CallError::Cluster(e));
                    }
                    self.next_node();
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
                other => return other,
            }
        }
    }

    /// One query, with its parameters, strongly consistent; its rows.
    pub(crate) fn query_rows(&self, sql: &str, params: &[Json]) -> Result<Vec<Vec<Json>>> {
        let mut stmt = vec![Json::String(sql.into())];
        stmt.extend(params.iter().cloned());
        let body = serde_json::to_vec(&vec![Json::Array(stmt)]).expect("JSON of JSON values");
        let mut slots = self.query(&body).map_err(Error::from)?;
        Ok(slots.pop().map(|s| s.values).unwrap_or_default())
    }

    /// Whether the database has a table named `name` (strongly consistent).
    pub(crate) fn has_table(&self, name: &str) -> Result<bool> {
        let rows = self.query_rows(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?",
            &[Json::from(name)],
        )?;
        Ok(rows.first().and_then(|r| r.first()).and_then(Json::as_i64) == Some(1))
    }

    /// `POST /boot` of the SQLite file at `path`: it replaces the node's database, and
    /// only a single-node cluster takes it.
    pub(crate) fn boot(&self, path: &Path) -> Result<()> {
        // Streamed from the file, which may be far larger than memory.
        self.call_payload("POST", "/boot", Some(Payload::File(path)), true)
            .map(|_| ())
            .map_err(Error::from)
    }

    fn slots(&self, body: &[u8]) -> Result<Vec<Slot>, CallError> {
        let v: Json = serde_json::from_slice(body).map_err(|e| {
            CallError::Cluster(Error::cluster(
                self.node(),
                format!("an answer that is not JSON: {e}"),
            ))
        })?;
        if let Some(e) = v.get("error").and_then(Json::as_str) {
            // The node could not pass the request to the leader (it went down, say): it
            // may have reached the log.
            return Err(CallError::Uncertain(Error::cluster(self.node(), e)));
        }
        let Some(results) = v.get("results").and_then(Json::as_array) else {
            return Err(CallError::Cluster(Error::cluster(
                self.node(),
                "an answer without results",
            )));
        };
        let mut out = Vec::with_capacity(results.len());
        for (index, r) in results.iter().enumerate() {
            if let Some(e) = r.get("error").and_then(Json::as_str) {
                return Err(CallError::Statement {
                    index,
                    message: e.to_string(),
                    node: self.node(),
                });
            }
            let values = r
                .get("values")
                .and_then(Json::as_array)
                .map(|rows| {
                    rows.iter()
                        .map(|row| row.as_array().cloned().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default();
            out.push(Slot { values });
        }
        Ok(out)
    }

    /// One HTTP call, to the current node: redirects followed, an unreachable node or a
    /// cluster without a leader retried (backoff from 100 ms to 2 s, on to the next
    /// known node) until `patience` is spent. Credentials refused fail at once.
    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> Result<Vec<u8>> {
        self.call_with(method, path, body, true)
            .map_err(Error::from)
    }

    /// [`Client::call`]; unless `resend`, a request that may have reached the cluster
    /// (the connection broke after it was sent, or the leader was lost while it was
    /// being committed) is not sent again but answered [`CallError::Uncertain`], for the
    /// caller to find out whether it was applied.
    pub(crate) fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        resend: bool,
    ) -> Result<Vec<u8>, CallError> {
        self.call_payload(method, path, body.map(Payload::Bytes), resend)
    }

    fn call_payload(
        &self,
        method: &str,
        path: &str,
        body: Option<Payload<'_>>,
        resend: bool,
    ) -> Result<Vec<u8>, CallError> {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(100);
        let mut redirects = 0;
        loop {
            let node = self.node();
            let url = format!("{}://{node}{path}", self.scheme);
            let sent = match (method, body) {
                ("GET", _) => {
                    let mut r = self.agent.get(&url);
                    if let Some(a) = &self.auth {
                        r = r.header("Authorization", a);
                    }
                    r.call()
                }
                (_, b) => {
                    let mut r = self
                        .agent
                        .post(&url)
                        .header("Content-Type", "application/json");
                    if let Some(a) = &self.auth {
                        r = r.header("Authorization", a);
                    }
                    match b {
                        None => r.send(&[][..]),
                        Some(Payload::Bytes(b)) => r.send(b),
                        Some(Payload::File(p)) => match std::fs::File::open(p) {
                            Ok(f) => r.send(f),
                            Err(e) => {
                                return Err(CallError::Cluster(Error::io(Some(p.to_path_buf()), e)))
                            }
                        },
                    }
                }
            };
            let retry_why = match sent {
                Ok(mut resp) => {
                    let status = resp.status().as_u16();
                    if matches!(status, 301 | 302 | 307 | 308) && redirects < 5 {
                        redirects += 1;
                        if let Some(loc) =
                            resp.headers().get("location").and_then(|l| l.to_str().ok())
                        {
                            let host = loc.split("://").nth(1).unwrap_or(loc);
                            let host = host.split('/').next().unwrap_or(host);
                            self.use_node(host);
                            continue;
                        }
                    }
                    let mut bytes = vec![];
                    let read = resp
                        .body_mut()
                        .with_config()
                        .limit(1 << 30)
                        .reader()
                        .read_to_end(&mut bytes);
                    match status {
                        200 => {
                            if let Err(e) = read {
                                let e = Error::cluster(&node, format!("reading the answer: {e}"));
                                return Err(if resend {
                                    CallError::Cluster(e)
                                } else {
                                    CallError::Uncertain(e)
                                });
                            }
                            return Ok(bytes);
                        }
                        401 | 403 => {
                            let who = match &self.user {
                                Some(u) => format!("user {u:?}"),
                                None => "an anonymous request".into(),
                            };
                            return Err(CallError::Cluster(Error::cluster(
                                &node,
                                format!(
                                    "the cluster refused {who} (HTTP {status}): wrong credentials, or not allowed to {}",
                                    if path.starts_with("/db/execute") || path.starts_with("/boot") {
                                        "write"
                                    } else {
                                        "read"
                                    }
                                ),
                            )));
                        }
                        _ => {
                            let text = String::from_utf8_lossy(&bytes).trim().to_string();
                            let e = Error::cluster(
                                &node,
                                format!("{method} {}: HTTP {status}: {text}", strip(path)),
                            );
                            if status < 500 {
                                return Err(CallError::Cluster(e));
                            }
                            // 503: no leader yet. 500: the node could not reach the leader
                            // (it went down), or the leader was lost while committing: the
                            // request may be in the log.
                            if !resend && status != 503 {
                                return Err(CallError::Uncertain(e));
                            }
                            format!("HTTP {status}: {text}")
                        }
                    }
                }
                Err(e) if tls_failure(&e) => {
                    // Refused in the handshake, before the request: nothing was sent, and
                    // asking again would get the same answer.
                    return Err(CallError::Cluster(Error::cluster(
                        &node,
                        format!("the TLS connection failed: {e} (a cluster whose certificates a private CA signed is trusted only with that CA's certificate)"),
                    )));
                }
                Err(e) => {
                    if !resend && !unsent(&e) {
                        return Err(CallError::Uncertain(Error::cluster(&node, e.to_string())));
                    }
                    format!("{e}")
                }
            };
            if start.elapsed() >= self.patience {
                return Err(CallError::Cluster(Error::cluster(
                    &node,
                    format!(
                        "gave up after {:.0} s: {retry_why}",
                        start.elapsed().as_secs_f64()
                    ),
                )));
            }
            self.next_node();
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }
}

/// A request body: bytes in memory, or a file read as it is sent (again on a retry).
#[derive(Clone, Copy)]
enum Payload<'a> {
    Bytes(&'a [u8]),
    File(&'a Path),
}

/// Whether a call failed in the TLS handshake (an untrusted certificate, say).
fn tls_failure(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Rustls(_) | ureq::Error::Tls(_) | ureq::Error::TlsRequired => true,
        ureq::Error::Io(io) => io
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()),
        _ => false,
    }
}

/// Whether a failed call surely never reached the server (so sending it again cannot
/// apply it twice).
fn unsent(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
        ),
        _ => false,
    }
}

fn strip(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}
