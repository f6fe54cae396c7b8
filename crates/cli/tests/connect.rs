//! `ingest --connect`: liteload as a feed's client, against a TLS feed server written
//! for these tests (rustls, a CA made here). The server checks the init line, streams
//! messages carrying a position (`seq`) from the position it is asked for (that message
//! included, so some are replayed), drops connections at random points and stalls. Every
//! connection is to 127.0.0.1.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::types::Value;
use tempfile::TempDir;

use common::{checked_rows, spawn_ingest, terminate};

type R = Result<(), Box<dyn std::error::Error>>;
type E = Box<dyn std::error::Error>;

const SECRET: &str = "user alice password hunter2-s3cret";

/// A CA, and a certificate for `localhost` it signed; the CA's PEM is written to
/// `ca.pem` in `dir`, and an unrelated self-signed CA to `other-ca.pem`.
fn test_pki(dir: &Path) -> Result<Arc<rustls::ServerConfig>, E> {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "liteload test CA");
    let ca_key = rcgen::KeyPair::generate()?;
    let ca = ca_params.self_signed(&ca_key)?;
    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    let leaf_key = rcgen::KeyPair::generate()?;
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])?
        .signed_by(&leaf_key, &ca, &ca_key)?;
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    std::fs::write(dir.join("other-ca.pem"), other.cert.pem())?;
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der())?;
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)?;
    Ok(Arc::new(cfg))
}

/// The feed: message `i` (from 1) carries `seq: i`, a key among 40, and a few sparse
/// fields (some null, some text with non-ASCII, a tab and a quote).
fn feed(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    (1..=n)
        .map(|i| {
            let mut m = serde_json::Map::new();
            m.insert("id".into(), rng.random_range(0..40).into());
            m.insert("seq".into(), i.into());
            // One kind per field, so each column's type is the model's.
            for (f, text) in [("a", false), ("b", true), ("c", false), ("d", true)] {
                match rng.random_range(0..5) {
                    0 => {
                        m.insert(f.into(), serde_json::Value::Null);
                    }
                    1 | 2 if text => {
                        m.insert(f.into(), format!("é{i}\u{1F600}\t\"").into());
                    }
                    1 | 2 => {
                        m.insert(f.into(), rng.random_range(-1000..1000).into());
                    }
                    _ => {}
                }
            }
            serde_json::Value::Object(m).to_string()
        })
        .collect()
}

/// SplitMix64: a fixed seed gives the same feed and the same chaos every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `r` (for the small ranges here, modulo bias does not matter).
    fn random_range(&mut self, r: std::ops::Range<i64>) -> i64 {
        r.start + (self.next() % (r.end - r.start) as u64) as i64
    }
}

/// The table the first `upto` messages give: present fields overwrite, null sets NULL.
fn model(msgs: &[String], upto: usize) -> Table {
    let mut t: Table = BTreeMap::new();
    for m in &msgs[..upto] {
        let v: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(m).expect("the feed is JSON");
        let row = t.entry(v["id"].as_i64().expect("an id")).or_default();
        for (k, x) in v {
            if k == "id" {
                continue;
            }
            let val = match x {
                serde_json::Value::Null => Value::Null,
                serde_json::Value::Number(n) => Value::Integer(n.as_i64().expect("ints")),
                serde_json::Value::String(s) => Value::Text(s),
                other => Value::Text(other.to_string()),
            };
            row.insert(k, val);
        }
    }
    t
}

/// The table in `db` (integrity-checked), as the model's shape.
fn table(db: &Path) -> Result<Table, E> {
    let c = common::open_checked(db)?;
    let mut t = BTreeMap::new();
    let exists: i64 = c.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 't'",
        [],
        |r| r.get(0),
    )?;
    if exists == 0 {
        return Ok(t);
    }
    let mut stmt = c.prepare("SELECT * FROM t")?;
    let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let mut row = BTreeMap::new();
        let mut id = 0;
        for (i, n) in names.iter().enumerate() {
            let v: Value = r.get(i)?;
            if n == "id" {
                if let Value::Integer(k) = v {
                    id = k;
                }
            } else {
                row.insert(n.clone(), v);
            }
        }
        t.insert(id, row);
    }
    Ok(t)
}

/// The model with the columns a table has: a field no message set yet is NULL there.
fn as_table(m: Table, columns: &[String]) -> Table {
    m.into_iter()
        .map(|(k, mut row)| {
            for c in columns {
                row.entry(c.clone()).or_insert(Value::Null);
            }
            (k, row)
        })
        .collect()
}

fn columns_of(t: &Table) -> Vec<String> {
    let mut c: Vec<String> = t.values().flat_map(|r| r.keys().cloned()).collect();
    c.sort();
    c.dedup();
    c
}

/// The stored position, if any.
fn stored_position(db: &Path) -> Result<Option<usize>, E> {
    let rows = checked_rows(
        db,
        "SELECT position FROM sqlite_schema, liteload_ingest_state WHERE sqlite_schema.name = 'liteload_ingest_state'",
    )
    .unwrap_or_default();
    Ok(match rows.first().map(|r| &r[0]) {
        Some(Value::Text(p)) => Some(p.parse()?),
        _ => None,
    })
}

/// How the feed server misbehaves.
#[derive(Clone, Copy)]
struct Chaos {
    /// Drop the connection after a random number of messages up to this (0: never).
    drop_within: usize,
    /// Of the connections, this share (per 1000) stall instead of dropping.
    stall_per_mille: u32,
    /// Messages per burst, and the pause between bursts.
    burst: usize,
    pause: Duration,
}

/// A feed server on 127.0.0.1: checks the init line `live SECRET from N`, streams the
/// feed from message N (inclusive: the message at the asked position is sent again),
/// and stays open, silent, once the feed is sent.
struct Server {
    addr: String,
    /// Init lines received, in order (the position part only).
    asked: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(
        tls: Option<Arc<rustls::ServerConfig>>,
        msgs: Arc<Vec<String>>,
        chaos: Chaos,
        seed: u64,
    ) -> Result<Server, E> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        l.set_nonblocking(true)?;
        let addr = format!("localhost:{}", l.local_addr()?.port());
        let asked = Arc::new(Mutex::new(vec![]));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (asked2, conns2, stop2) = (asked.clone(), connections.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                let Ok((s, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                n += 1;
                conns2.fetch_add(1, Ordering::Relaxed);
                let (tls, msgs, asked, stop) =
                    (tls.clone(), msgs.clone(), asked2.clone(), stop2.clone());
                std::thread::spawn(move || {
                    let _ = serve(s, tls, &msgs, chaos, seed.wrapping_add(n), &asked, &stop);
                });
            }
        });
        Ok(Server {
            addr,
            asked,
            connections,
            stop,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A server's stream that can say goodbye: TLS sends `close_notify`, TCP has nothing
/// to send.
trait Stream: Read + Write {
    fn close_notify(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Stream for TcpStream {}

impl Stream for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn close_notify(&mut self) -> std::io::Result<()> {
        self.conn.send_close_notify();
        self.flush()
    }
}

/// A feed connection accepted: its stream (TLS with `tls`) and the position its init
/// line `live SECRET from N` asks for (`None`: another line).
fn open_feed(
    s: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> Result<(Box<dyn Stream>, Option<String>), E> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut stream: Box<dyn Stream> = match tls {
        Some(cfg) => Box::new(rustls::StreamOwned::new(
            rustls::ServerConnection::new(cfg)?,
            s,
        )),
        None => Box::new(s),
    };
    let mut line = Vec::new();
    {
        let mut r = BufReader::new(&mut stream);
        r.read_until(b'\n', &mut line)?;
    }
    let line = String::from_utf8(line)?;
    let from = line
        .trim_end()
        .strip_prefix(&format!("live {SECRET} from "))
        .map(str::to_string);
    Ok((stream, from))
}

fn serve(
    s: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    msgs: &[String],
    chaos: Chaos,
    seed: u64,
    asked: &Mutex<Vec<String>>,
    stop: &AtomicBool,
) -> Result<(), E> {
    let (mut stream, from) = open_feed(s, tls)?;
    let Some(from) = from else {
        stream.write_all(b"{\"error\":\"bad credentials\"}\n")?;
        stream.flush()?;
        return Ok(());
    };
    asked.lock().map_err(|_| "poisoned")?.push(from.clone());
    let from: usize = from.parse()?;
    let mut rng = Rng(seed);
    let drop_at = match chaos.drop_within {
        0 => usize::MAX,
        n => rng.random_range(1..n as i64 + 1) as usize,
    };
    let stall = rng.random_range(0..1000) < i64::from(chaos.stall_per_mille);
    let start = from.max(1) - 1;
    for (sent, chunk) in msgs[start.min(msgs.len())..]
        .chunks(chaos.burst)
        .enumerate()
    {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if sent * chaos.burst >= drop_at {
            if stall {
                // Silent but open, until the client gives up on us.
                let mut b = [0u8; 1];
                let _ = stream.read(&mut b);
                std::thread::sleep(Duration::from_secs(30));
            }
            return Ok(()); // dropped, mid-feed, without a goodbye
        }
        let mut text = chunk.join("\n");
        text.push('\n');
        stream.write_all(text.as_bytes())?;
        stream.flush()?;
        std::thread::sleep(chaos.pause);
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn init_file(dir: &Path, secret: &str) -> R {
    std::fs::write(
        dir.join("init.txt"),
        format!("live {secret} from {{position}}\n"),
    )?;
    Ok(())
}

fn client_args<'a>(addr: &'a str, db: &'a str) -> Vec<&'a str> {
    vec![
        db,
        "--table",
        "t",
        "--key",
        "id",
        "--connect",
        addr,
        "--ca",
        "ca.pem",
        "--init-file",
        "init.txt",
        "--position",
        "seq",
        "--init-start",
        "1",
        "--stall",
        "1s",
        "--commit-interval",
        "50ms",
    ]
}

type Table = BTreeMap<i64, BTreeMap<String, Value>>;

/// Waits until `db` holds the model `want` (or `within` passes); returns (what it
/// holds, the model with its columns).
fn wait_for(db: &Path, want: &Table, within: Duration) -> Result<(Table, Table), E> {
    let deadline = Instant::now() + within;
    loop {
        let got = table(db)?;
        let want = as_table(want.clone(), &columns_of(&got));
        if got == want || Instant::now() > deadline {
            return Ok((got, want));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[test]
fn drops_and_stalls_lose_nothing_and_replays_are_counted() -> R {
    let d = TempDir::new()?;
    let tls = test_pki(d.path())?;
    init_file(d.path(), SECRET)?;
    let msgs = Arc::new(feed(3000, 7));
    let chaos = Chaos {
        drop_within: 600,
        stall_per_mille: 250,
        burst: 50,
        pause: Duration::from_millis(2),
    };
    let server = Server::start(Some(tls), msgs.clone(), chaos, 1)?;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("liteload"))
        .current_dir(d.path())
        .arg("ingest")
        .args(client_args(&server.addr, "s.db"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let (got, want) = wait_for(
        &d.path().join("s.db"),
        &model(&msgs, msgs.len()),
        Duration::from_secs(120),
    )?;
    assert_eq!(got, want);
    assert!(
        terminate(&mut child)?,
        "liteload failed:\n{}",
        stderr_of(&mut child)
    );
    let log = stderr_of(&mut child);
    assert!(!log.contains("hunter2"), "the init line leaked:\n{log}");
    let connections = server.connections.load(Ordering::Relaxed);
    assert!(connections >= 2, "no drop happened");
    // Each reconnect's first message is the one at the position asked for: a replay.
    let mut out = String::new();
    child
        .stdout
        .take()
        .ok_or("stdout")?
        .read_to_string(&mut out)?;
    let replayed: u64 = out
        .split("Feed: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .ok_or_else(|| format!("no feed summary in {out:?}"))?
        .replace(',', "")
        .parse()?;
    assert!(
        replayed >= 1 && replayed < connections,
        "{replayed} replayed over {connections} connections"
    );
    assert!(
        out.contains(&format!("last position {}", msgs.len())),
        "{out}"
    );
    let asked = server.asked.lock().map_err(|_| "poisoned")?.clone();
    assert_eq!(asked[0], "1");
    // Each reconnect asks from a position no earlier than the one before it.
    for w in asked.windows(2) {
        assert!(
            w[1].parse::<usize>()? >= w[0].parse::<usize>()?,
            "{asked:?}"
        );
    }
    assert_eq!(stored_position(&d.path().join("s.db"))?, Some(msgs.len()));
    Ok(())
}

#[test]
fn kill_dash_nine_at_random_moments_loses_nothing_before_the_stored_position() -> R {
    let d = TempDir::new()?;
    let tls = test_pki(d.path())?;
    init_file(d.path(), SECRET)?;
    let msgs = Arc::new(feed(4000, 11));
    let chaos = Chaos {
        drop_within: 1500,
        stall_per_mille: 0,
        burst: 40,
        pause: Duration::from_millis(3),
    };
    let server = Server::start(Some(tls), msgs.clone(), chaos, 2)?;
    let db = d.path().join("k.db");
    let args = client_args(&server.addr, "k.db");
    let mut rng = Rng(3);
    let mut kills = 0;
    // Positions stored by runs killed before the end of the feed.
    let mut mid_feed = vec![];
    for _ in 0..6 {
        let mut child = spawn_ingest(d.path(), &args)?;
        std::thread::sleep(Duration::from_millis(rng.random_range(150..900) as u64));
        child.kill()?;
        child.wait()?;
        kills += 1;
        // What is committed is exactly the feed up to the stored position.
        let got = table(&db)?;
        match stored_position(&db)? {
            Some(p) => assert_eq!(
                got,
                as_table(model(&msgs, p), &columns_of(&got)),
                "after kill {kills}, position {p}"
            ),
            None => assert!(got.is_empty()),
        }
        match stored_position(&db)? {
            Some(p) if p == msgs.len() => break,
            Some(p) => mid_feed.push(p),
            None => {}
        }
    }
    assert!(
        mid_feed.len() >= 2,
        "too few kills landed mid-feed: {mid_feed:?}"
    );
    // A last run to the end of the feed: the uninterrupted table. (The table may be
    // whole already; the run is stopped only once it has asked the feed.)
    let asked_before = server.asked.lock().map_err(|_| "poisoned")?.len();
    let mut child = spawn_ingest(d.path(), &args)?;
    let (got, want) = wait_for(&db, &model(&msgs, msgs.len()), Duration::from_secs(120))?;
    let start = std::time::Instant::now();
    while server.asked.lock().map_err(|_| "poisoned")?.len() == asked_before
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(terminate(&mut child)?, "{}", stderr_of(&mut child));
    assert_eq!(got, want);
    eprintln!("positions stored by killed runs: {mid_feed:?}");
    // Every run after the first asked from the position the one before it stored.
    let asked = server.asked.lock().map_err(|_| "poisoned")?.clone();
    assert!(asked.len() > kills, "{asked:?}");
    Ok(())
}

/// Runs liteload to its end and returns (success, stderr).
/// Runs the client until it exits; its exit code (-1 for a signal) and stderr.
fn run_to_end(dir: &Path, args: &[&str]) -> Result<(i32, String), E> {
    let mut child = spawn_ingest(dir, args)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            child.kill()?;
            return Err("liteload did not end".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let code = child.wait()?.code().unwrap_or(-1);
    Ok((code, stderr_of(&mut child)))
}

#[test]
fn a_wrong_certificate_a_refused_connection_and_a_rejected_init_line_are_clear_errors() -> R {
    let d = TempDir::new()?;
    let tls = test_pki(d.path())?;
    let msgs = Arc::new(feed(10, 5));
    let chaos = Chaos {
        drop_within: 0,
        stall_per_mille: 0,
        burst: 10,
        pause: Duration::ZERO,
    };
    let server = Server::start(Some(tls), msgs, chaos, 3)?;

    // The server's certificate is not signed by the CA given.
    init_file(d.path(), SECRET)?;
    let mut args = client_args(&server.addr, "a.db");
    args[8] = "other-ca.pem";
    let (code, err) = run_to_end(d.path(), &args)?;
    // A server that cannot be trusted is the server's failure, not bad usage (exit 3).
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("feed server") && err.contains("certificate is not trusted"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    // Nothing listens there.
    let free = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let closed = format!("localhost:{free}");
    let (code, err) = run_to_end(d.path(), &client_args(&closed, "b.db"))?;
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("connecting to {closed}")) && err.to_lowercase().contains("refused"),
        "{err}"
    );

    // Wrong credentials: the server answers and closes.
    init_file(d.path(), "user alice password wrong-hunter2")?;
    let (code, err) = run_to_end(d.path(), &client_args(&server.addr, "c.db"))?;
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("bad credentials") && err.contains("after the init line"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    // Plain TCP to a TLS server, and plain TCP to another host, are refused.
    init_file(d.path(), SECRET)?;
    let mut plain = client_args(&server.addr, "d.db");
    plain[7] = "--no-tls";
    plain.remove(8);
    let (code, _) = run_to_end(d.path(), &plain)?;
    assert_ne!(code, 0);
    let mut remote = plain.clone();
    remote[6] = "192.0.2.1:1501";
    let (code, err) = run_to_end(d.path(), &remote)?;
    // Plain TCP off loopback is the caller's choice to mend (exit 2).
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("only for loopback"), "{err}");
    Ok(())
}

/// How a connection of [`endings_server`] ends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    /// TLS `close_notify` (plain TCP: a FIN) once the bytes are written.
    Clean,
    /// The TCP connection closed (a FIN) without a TLS `close_notify`.
    NoCloseNotify,
    /// A reset (`SO_LINGER` 0, then close): bytes not yet read may be lost on the way.
    Reset,
}

/// One connection of [`endings_server`]: the position asked for, the position of the
/// last whole line it wrote before ending, and how it ended.
#[derive(Clone, Debug)]
struct Ended {
    asked: usize,
    last_whole: usize,
    ending: Ending,
}

/// What [`endings_server`] records, one entry per connection in order.
type EndedLog = Arc<Mutex<Vec<Ended>>>;

/// A feed server on 127.0.0.1 that ends every connection at a random byte (between
/// lines or inside one), in one of the [`Ending`]s, after writing the feed from the
/// position asked for in random pieces, the last of which holds a whole line and the
/// start of the next. The last connection that reaches the feed's end stays open.
fn endings_server(
    tls: Option<Arc<rustls::ServerConfig>>,
    msgs: Arc<Vec<String>>,
    seed: u64,
) -> Result<(String, EndedLog, Arc<AtomicBool>), E> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    l.set_nonblocking(true)?;
    let addr = format!("localhost:{}", l.local_addr()?.port());
    let log = Arc::new(Mutex::new(vec![]));
    let stop = Arc::new(AtomicBool::new(false));
    let (log2, stop2) = (log.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut rng = Rng(seed);
        while !stop2.load(Ordering::Relaxed) {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            // One connection at a time: the client never holds two.
            let _ = end_one(s, tls.clone(), &msgs, &mut rng, &log2, &stop2);
        }
    });
    Ok((addr, log, stop))
}

fn end_one(
    s: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    msgs: &[String],
    rng: &mut Rng,
    log: &Mutex<Vec<Ended>>,
    stop: &AtomicBool,
) -> Result<(), E> {
    s.set_nodelay(true)?;
    let sock = s.try_clone()?;
    let (mut stream, from) = open_feed(s, tls)?;
    let from: usize = from.ok_or("bad init line")?.parse()?;
    let start = from.max(1) - 1;
    let mut text = Vec::new();
    let mut ends = vec![]; // the byte just past each line, and its position
    for (i, m) in msgs[start..].iter().enumerate() {
        text.extend_from_slice(m.as_bytes());
        text.push(b'\n');
        ends.push((text.len(), start + i + 1));
    }
    // The cut: after the first line (the replayed one) and up to 80 more, at a line's
    // end or inside the next line; past the feed's end, no cut.
    let lines = 1 + rng.random_range(0..80) as usize;
    let cut = if lines >= ends.len() {
        None
    } else if rng.random_range(0..2) == 0 {
        Some(ends[lines - 1].0)
    } else {
        let (a, b) = (ends[lines - 1].0, ends[lines].0);
        Some(a + 1 + rng.random_range(0..(b - a - 1) as i64) as usize)
    };
    let upto = cut.unwrap_or(text.len());
    let whole = ends.iter().take_while(|(e, _)| *e <= upto).count();
    let last_whole = match whole {
        0 => from.max(1) - 1,
        w => ends[w - 1].1,
    };
    // The last write holds the last whole line and what follows it.
    let last_start = if whole >= 2 { ends[whole - 2].0 } else { 0 };
    let mut at = 0;
    while at < last_start {
        let n = (1 + rng.random_range(0..400) as usize).min(last_start - at);
        stream.write_all(&text[at..at + n])?;
        stream.flush()?;
        at += n;
    }
    stream.write_all(&text[at..upto])?;
    stream.flush()?;
    let ending = match rng.random_range(0..3) {
        0 => Ending::Clean,
        1 => Ending::NoCloseNotify,
        _ => Ending::Reset,
    };
    log.lock().map_err(|_| "poisoned")?.push(Ended {
        asked: from,
        last_whole,
        ending,
    });
    if cut.is_none() {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        return Ok(());
    }
    match ending {
        Ending::Clean => {
            stream.close_notify()?;
            sock.shutdown(std::net::Shutdown::Write)?;
            // Wait for the client to close its side: it has read everything then.
            let mut rest = [0u8; 256];
            let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
            while matches!((&sock).read(&mut rest), Ok(n) if n > 0) {}
        }
        Ending::NoCloseNotify => {
            sock.shutdown(std::net::Shutdown::Write)?;
            let mut rest = [0u8; 256];
            let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
            while matches!((&sock).read(&mut rest), Ok(n) if n > 0) {}
        }
        Ending::Reset => {
            socket2::SockRef::from(&sock).set_linger(Some(Duration::ZERO))?;
        }
    }
    drop(stream);
    drop(sock);
    Ok(())
}

/// Every way a connection can end, at every kind of point: each whole line read is
/// applied, the table equals the model of the whole feed, and each reconnect asks for
/// exactly the last line read (after a reset, no later than the last line written).
fn every_ending_keeps_every_line(tls: bool, seed: u64) -> R {
    let d = TempDir::new()?;
    let cfg = test_pki(d.path())?;
    init_file(d.path(), SECRET)?;
    let msgs = Arc::new(feed(1500, seed));
    let (addr, log, stop) = endings_server(tls.then_some(cfg), msgs.clone(), seed)?;
    let addr = if tls {
        addr
    } else {
        addr.replace("localhost", "127.0.0.1")
    };
    let mut args = client_args(&addr, "e.db");
    if !tls {
        args.splice(7..9, ["--no-tls"]);
    }
    let mut child = spawn_ingest(d.path(), &args)?;
    let (got, want) = wait_for(
        &d.path().join("e.db"),
        &model(&msgs, msgs.len()),
        Duration::from_secs(150),
    )?;
    let ok = terminate(&mut child)?;
    stop.store(true, Ordering::Relaxed);
    let err = stderr_of(&mut child);
    assert!(ok, "liteload failed:\n{err}");
    assert_eq!(got, want, "{err}");
    let log = log.lock().map_err(|_| "poisoned")?.clone();
    assert!(log.len() >= 5, "too few connections: {log:?}");
    for w in log.windows(2) {
        let (before, next) = (&w[0], &w[1]);
        match before.ending {
            Ending::Reset => assert!(
                next.asked >= before.asked && next.asked <= before.last_whole,
                "after {before:?}, asked {}",
                next.asked
            ),
            _ => assert_eq!(
                next.asked, before.last_whole,
                "after {before:?}: the reconnect asks for the last line read"
            ),
        }
    }
    assert_eq!(stored_position(&d.path().join("e.db"))?, Some(msgs.len()));
    Ok(())
}

#[test]
fn a_tls_feed_ended_in_every_way_loses_no_line_it_sent() -> R {
    every_ending_keeps_every_line(true, 21)
}

#[test]
fn a_plain_feed_ended_in_every_way_loses_no_line_it_sent() -> R {
    every_ending_keeps_every_line(false, 22)
}

/// A feed server whose certificate is self-signed and marked as a CA (as `openssl req
/// -x509` makes one), given to the client as its CA: trusted as that exact certificate,
/// for the names it carries, and for no other name.
#[test]
fn a_self_signed_ca_certificate_given_as_the_ca_is_pinned_with_its_name_checked() -> R {
    let d = TempDir::new()?;
    init_file(d.path(), SECRET)?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    std::fs::write(d.path().join("ca.pem"), cert.pem())?;
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der())?,
    )?;
    let msgs = Arc::new(feed(50, 9));
    let chaos = Chaos {
        drop_within: 0,
        stall_per_mille: 0,
        burst: 10,
        pause: Duration::ZERO,
    };
    let server = Server::start(Some(Arc::new(cfg)), msgs.clone(), chaos, 4)?;
    let mut child = spawn_ingest(d.path(), &client_args(&server.addr, "p.db"))?;
    let (got, want) = wait_for(
        &d.path().join("p.db"),
        &model(&msgs, msgs.len()),
        Duration::from_secs(30),
    )?;
    assert!(terminate(&mut child)?, "{}", stderr_of(&mut child));
    assert_eq!(got, want);
    // The same certificate does not vouch for a name it does not carry.
    let by_ip = server.addr.replace("localhost", "127.0.0.1");
    let (code, err) = run_to_end(d.path(), &client_args(&by_ip, "q.db"))?;
    assert_ne!(code, 0);
    assert!(err.contains("not trusted"), "{err}");
    Ok(())
}
