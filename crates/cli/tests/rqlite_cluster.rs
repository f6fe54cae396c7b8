//! The `rqlite://` target against real rqlite clusters on 127.0.0.1 (rqlited v8.43.4,
//! built by bench/rqlite/build-rqlited.sh on first use and kept under target/).
//!
//! What is checked is every node's own copy (`level=none`), compared with what SQLite's
//! own insert path makes of the same input in a local file.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

fn liteload() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_liteload"))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// rqlited, built once for all tests of this file.
fn rqlited() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("LITELOAD_RQLITED") {
                return PathBuf::from(p);
            }
            let dest = workspace().join("target/rqlited-v8.43.4/rqlited");
            let st = Command::new("sh")
                .arg(workspace().join("bench/rqlite/build-rqlited.sh"))
                .arg(&dest)
                .status()
                .expect("running build-rqlited.sh");
            assert!(st.success(), "building rqlited failed");
            dest
        })
        .clone()
}

/// Clusters start one at a time (ports are picked free, then bound by rqlited).
static PORTS: Mutex<()> = Mutex::new(());

fn free_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

fn port(l: &TcpListener) -> u16 {
    l.local_addr().unwrap().port()
}

struct Node {
    id: String,
    http: u16,
    raft: u16,
    dir: PathBuf,
    child: Option<Child>,
}

struct Cluster {
    _tmp: tempfile::TempDir,
    nodes: Vec<Node>,
    auth: Option<PathBuf>,
    /// The directory of [`test_pki`]'s files, when the nodes serve HTTPS.
    tls: Option<PathBuf>,
    agent: ureq::Agent,
    creds: Option<String>,
}

impl Cluster {
    fn start(n: usize) -> Cluster {
        Cluster::start_with(n, None)
    }

    fn start_with(n: usize, auth_json: Option<&str>) -> Cluster {
        Cluster::start_opts(n, auth_json, None)
    }

    /// Nodes that serve HTTPS with `pki`'s certificate ([`test_pki`]).
    fn start_tls(n: usize, pki: &Path) -> Cluster {
        Cluster::start_opts(n, None, Some(pki))
    }

    fn start_opts(n: usize, auth_json: Option<&str>, tls: Option<&Path>) -> Cluster {
        let bin = rqlited();
        let _g = PORTS.lock().unwrap_or_else(|p| p.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let auth = auth_json.map(|j| {
            let p = tmp.path().join("auth.json");
            std::fs::write(&p, j).unwrap();
            p
        });
        let mut tls_config = ureq::tls::TlsConfig::builder();
        if let Some(pki) = tls {
            let pem = std::fs::read(pki.join("ca.pem")).unwrap();
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|i| match i.unwrap() {
                    ureq::tls::PemItem::Certificate(c) => Some(c),
                    _ => None,
                })
                .collect();
            tls_config = tls_config.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .tls_config(tls_config.build())
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build()
            .into();
        let mut c = Cluster {
            nodes: vec![],
            auth,
            tls: tls.map(Path::to_path_buf),
            agent,
            creds: auth_json.map(|_| format!("Basic {}", base64_of("admin:right-pass"))),
            _tmp: tmp,
        };
        for i in 0..n {
            c.add_node(&bin);
            if i == 0 {
                c.wait_leader();
            }
        }
        c.wait_members(n);
        c
    }

    /// Starts one more node, which joins the first.
    fn add_node(&mut self, bin: &Path) {
        let i = self.nodes.len();
        // Both listeners are held until both ports are known, so the two differ.
        let (a, b) = (free_listener(), free_listener());
        let (http, raft) = (port(&a), port(&b));
        drop((a, b));
        self.nodes.push(Node {
            id: format!("n{i}"),
            http,
            raft,
            dir: self._tmp.path().join(format!("n{i}")),
            child: None,
        });
        self.spawn(i, bin);
    }

    fn spawn(&mut self, i: usize, bin: &Path) {
        let join = if i == 0 {
            None
        } else {
            Some(format!("127.0.0.1:{}", self.nodes[0].raft))
        };
        let n = &self.nodes[i];
        let mut cmd = Command::new(bin);
        cmd.arg("-node-id")
            .arg(&n.id)
            .arg("-http-addr")
            .arg(format!("127.0.0.1:{}", n.http))
            .arg("-raft-addr")
            .arg(format!("127.0.0.1:{}", n.raft));
        if let Some(a) = &self.auth {
            cmd.arg("-auth").arg(a).arg("-join-as").arg("admin");
        }
        if let Some(pki) = &self.tls {
            cmd.arg("-http-cert")
                .arg(pki.join("node.pem"))
                .arg("-http-key")
                .arg(pki.join("node.key"));
        }
        if let Some(j) = join {
            cmd.arg("-join").arg(j);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self._tmp.path().join(format!("{}.log", n.id)))
            .unwrap();
        cmd.arg(&n.dir).stdout(Stdio::null()).stderr(log);
        let child = cmd.spawn().expect("starting rqlited");
        self.nodes[i].child = Some(child);
    }

    fn url(&self, i: usize) -> String {
        let scheme = if self.tls.is_some() {
            "rqlite+https"
        } else {
            "rqlite"
        };
        format!("{scheme}://127.0.0.1:{}", self.nodes[i].http)
    }

    /// The node's HTTP API, for the test's own requests.
    fn api(&self, i: usize) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.nodes[i].http)
    }

    fn get(&self, i: usize, path: &str) -> Option<Json> {
        let mut r = self.agent.get(format!("{}{path}", self.api(i)));
        if let Some(c) = &self.creds {
            r = r.header("Authorization", c);
        }
        let mut resp = r.call().ok()?;
        if resp.status() != 200 {
            return None;
        }
        serde_json::from_str(
            &resp
                .body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_string()
                .ok()?,
        )
        .ok()
    }

    fn leader(&self) -> Option<usize> {
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_none() {
                continue;
            }
            if let Some(v) = self.get(i, "/nodes") {
                for node in v.as_object()?.values() {
                    if node["leader"] == Json::Bool(true) {
                        let id = node["id"].as_str()?;
                        return self.nodes.iter().position(|k| k.id == id);
                    }
                }
            }
        }
        None
    }

    fn wait_leader(&self) -> usize {
        let start = Instant::now();
        loop {
            if let Some(l) = self.leader() {
                if self.get(l, "/readyz").is_some() || start.elapsed() > Duration::from_secs(5) {
                    return l;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no leader in 60 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn wait_members(&self, n: usize) {
        let start = Instant::now();
        loop {
            let l = self.wait_leader();
            let count = self
                .get(l, "/nodes")
                .and_then(|v| {
                    v.as_object().map(|m| {
                        m.values()
                            .filter(|x| x["reachable"] == Json::Bool(true))
                            .count()
                    })
                })
                .unwrap_or(0);
            if count >= n {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{n} nodes did not join"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn restart(&mut self, i: usize) {
        let bin = rqlited();
        self.spawn(i, &bin);
    }

    /// Rows of `sql` on node `i`'s own copy (`level=none`).
    fn local(&self, i: usize, sql: &str) -> Option<Vec<Vec<Json>>> {
        let mut r = self
            .agent
            .post(format!("{}/db/query?level=none", self.api(i)))
            .header("Content-Type", "application/json");
        if let Some(c) = &self.creds {
            r = r.header("Authorization", c);
        }
        let body = serde_json::to_vec(&vec![vec![sql]]).unwrap();
        let mut resp = r.send(&body[..]).ok()?;
        let v: Json = serde_json::from_str(
            &resp
                .body_mut()
                .with_config()
                .limit(1 << 30)
                .read_to_string()
                .ok()?,
        )
        .ok()?;
        let res = &v["results"][0];
        if res.get("error").is_some() {
            return None;
        }
        Some(
            res["values"]
                .as_array()
                .map(|rows| {
                    rows.iter()
                        .map(|r| r.as_array().cloned().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    /// Runs `sql` through node `i` (redirected to the leader); panics if it fails.
    fn execute(&self, i: usize, sql: &str) {
        let body = serde_json::to_vec(&vec![vec![sql]]).unwrap();
        let mut r = self
            .agent
            .post(format!("{}/db/execute?redirect", self.api(i)))
            .header("Content-Type", "application/json");
        if let Some(c) = &self.creds {
            r = r.header("Authorization", c);
        }
        let text = r
            .send(&body[..])
            .expect("the cluster answers")
            .body_mut()
            .read_to_string()
            .unwrap();
        assert!(!text.contains("\"error\""), "{sql}: {text}");
    }

    /// [`Cluster::local`], each row as one string (a one-column row as its value).
    fn local_rows(&self, i: usize, sql: &str) -> Option<Vec<String>> {
        Some(
            self.local(i, sql)?
                .into_iter()
                .map(|r| match r.as_slice() {
                    [one] => one.to_string(),
                    _ => Json::Array(r).to_string(),
                })
                .collect(),
        )
    }

    /// Waits until node `i`'s copy of `sql` is `want` (followers apply a little later).
    fn wait_local(&self, i: usize, sql: &str, want: &[Vec<Json>]) {
        let want: Vec<Vec<Json>> = want.iter().map(|r| reals_as_f64(r)).collect();
        let want = &want[..];
        let start = Instant::now();
        loop {
            let got = self
                .local(i, sql)
                .map(|rows| rows.iter().map(|r| reals_as_f64(r)).collect::<Vec<_>>());
            if got.as_deref() == Some(want) {
                // The node's file is sound, as SQLite itself sees it.
                assert_eq!(
                    self.local_rows(i, "PRAGMA integrity_check"),
                    Some(vec!["\"ok\"".to_string()]),
                    "node {i}"
                );
                return;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let log = std::fs::read_to_string(self._tmp.path().join(format!("n{i}.log")))
                    .unwrap_or_default();
                let tail: String = log.lines().rev().take(15).collect::<Vec<_>>().join("\n");
                eprintln!("node {i}'s log, last lines first:\n{tail}");
                let got = got.unwrap_or_default();
                let first_diff = got.iter().zip(want).position(|(a, b)| a != b);
                panic!(
                    "node {i}: {} rows, want {}; first difference at {first_diff:?}: {:?} vs {:?}",
                    got.len(),
                    want.len(),
                    first_diff.map(|k| &got[k]),
                    first_diff.map(|k| &want[k]),
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}

/// The query that shows a table exactly: rowid, then every column's type and value
/// (TEXT and BLOB as hex), by rowid. REALs are compared as doubles (rqlite's JSON gives
/// the shortest decimal that reads back as the same double).
fn exact_sql(table: &str, columns: &[&str]) -> String {
    exact_sql_by(table, columns, "rowid")
}

/// [`exact_sql`] ordered by `order` (and starting with it) instead of the rowid: for a
/// table whose rowids depend on arrival order, which a merge does not keep.
fn exact_sql_by(table: &str, columns: &[&str], order: &str) -> String {
    let parts: Vec<String> = columns
        .iter()
        .map(|c| {
            format!(
                "typeof(\"{c}\"), CASE WHEN typeof(\"{c}\") IN ('text', 'blob') THEN hex(\"{c}\") ELSE \"{c}\" END"
            )
        })
        .collect();
    format!(
        "SELECT {order}, {} FROM \"{table}\" ORDER BY {order}",
        parts.join(", ")
    )
}

/// A row of [`exact_sql`] with each value after a `"real"` type as an f64 (rqlite may
/// write a large double without a fraction or exponent, which reads as an integer).
fn reals_as_f64(row: &[Json]) -> Vec<Json> {
    let mut out = row.to_vec();
    for k in 1..out.len() {
        if out[k - 1] == "real" {
            if let Some(f) = out[k].as_f64() {
                out[k] = Json::from(f);
            }
        }
    }
    out
}

/// `sql`'s rows in a local file, as JSON values like rqlite's.
fn file_rows(db: &Path, sql: &str) -> Vec<Vec<Json>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn.prepare(sql).unwrap();
    let n = st.column_count();
    let rows = st
        .query_map([], |r| {
            Ok((0..n)
                .map(|k| match r.get_ref(k).unwrap() {
                    rusqlite::types::ValueRef::Null => Json::Null,
                    rusqlite::types::ValueRef::Integer(i) => Json::from(i),
                    rusqlite::types::ValueRef::Real(f) => Json::from(f),
                    rusqlite::types::ValueRef::Text(t) => {
                        Json::from(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Blob(_) => panic!("hex gives text"),
                })
                .collect())
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    rows
}

/// What SQLite's own insert path makes of `args` in a local file: the reference.
fn reference(args: &[&str], sql: &str, dir: &Path) -> Vec<Vec<Json>> {
    let db = dir.join("reference.db");
    let _ = std::fs::remove_file(&db);
    let out = Command::new(liteload())
        .arg("import")
        .arg(&db)
        .args(args)
        .args(["--engine", "sqlite", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    file_rows(&db, sql)
}

/// Runs liteload (the arguments `args` gives for a node's URL) against node 1, kills it
/// (kill -9) once `started` holds; runs it again against a follower and kills the
/// leader 300 ms in; if that run fails, runs it once more on a live node, which must
/// finish; then restarts the old leader and waits for it to rejoin.
fn kill_liteload_then_leader(
    c: &mut Cluster,
    args: impl Fn(&str) -> Vec<String>,
    started: impl Fn(&Cluster) -> bool,
) {
    // A killed run leaves its temporary files (a merge of SQLite inputs): in a folder
    // of the test's, not the system's.
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(liteload())
        .args(args(&c.url(1)))
        .env("TMPDIR", tmp.path())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !started(c)
        && start.elapsed() < Duration::from_secs(60)
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let leader = c.wait_leader();
    let child = Command::new(liteload())
        .args(args(&c.url((leader + 1) % 3)))
        .env("TMPDIR", tmp.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    c.kill(leader);
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        eprintln!(
            "the run during the leader's kill stopped: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let live = (0..3).find(|&i| c.nodes[i].child.is_some()).unwrap();
        let out = Command::new(liteload())
            .args(args(&c.url(live)))
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    c.restart(leader);
    c.wait_members(3);
}

/// The rows of node 0's progress table (0 before it has one).
fn progress_rows(c: &Cluster) -> u64 {
    c.local_rows(0, "SELECT count(*) FROM _liteload_progress")
        .and_then(|r| r.first().and_then(|n| n.parse::<u64>().ok()))
        .unwrap_or(0)
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(liteload()).args(args).output().unwrap()
}

/// Hostile values, every kind a CSV gives: text rqlite would read as a BLOB (`x'00'`),
/// NUL, non-ASCII, quotes, huge text, integers at the edges, REALs drawn from random
/// bits (which go as bound parameters), values that do not fit their column.
fn hostile_csv(path: &Path, rows: usize) {
    let mut s = String::from("id,name,score,ratio,note\n");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let texts = [
        "x'00'",
        "X'4142'",
        " x'' ",
        "caf\u{e9} \u{1F600}",
        "a\"b",
        "",
        "line\nbreak",
        "\u{2028}",
        "NULL",
        "007",
        "1e5",
        "-0",
    ];
    for i in 0..rows {
        let t = texts[i % texts.len()];
        let score = match i % 7 {
            0 => "9223372036854775807".to_string(),
            1 => "-9223372036854775808".to_string(),
            2 => "abc".to_string(),
            3 => String::new(),
            _ => ((next() % 2000) as i64 - 1000).to_string(),
        };
        let ratio = if i % 5 == 0 {
            // A random finite double, written to round-trip.
            let f = f64::from_bits(next());
            if f.is_finite() {
                format!("{f:e}")
            } else {
                "1.5".into()
            }
        } else {
            format!("{}.25", i % 100)
        };
        let note = if i == rows / 2 {
            "y".repeat(300_000)
        } else {
            format!("n{i}")
        };
        let q = |v: &str| format!("\"{}\"", v.replace('"', "\"\""));
        s.push_str(&format!(
            "{},{},{},{},{}\n",
            i + 1,
            q(t),
            score,
            ratio,
            q(&note)
        ));
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn import_into_a_three_node_cluster_survives_kills_of_liteload_and_the_leader() {
    let mut c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("hostile.csv");
    hostile_csv(&csv, 120_000);
    let csv_s = csv.to_str().unwrap();
    let sql = exact_sql("hostile", &["id", "name", "score", "ratio", "note"]);
    let want = reference(&[csv_s], &sql, dir.path());

    // A load killed (kill -9) after its first requests are in, then the leader killed
    // during the rerun; whatever that run does, one more run finishes the load.
    let run_on = |url: &str| -> Vec<String> {
        [
            "import",
            url,
            csv_s,
            "--quiet",
            "--batch-rows",
            "500",
            "--rqlite-request-bytes",
            "65536",
        ]
        .map(String::from)
        .to_vec()
    };
    kill_liteload_then_leader(&mut c, run_on, |c| progress_rows(c) >= 3);
    c.wait_members(3);
    for i in 0..3 {
        c.wait_local(i, &sql, &want);
    }
    // A finished load run again writes nothing.
    let out = run(&["import", &c.url(0), csv_s]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing written"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.wait_local(2, &sql, &want);
}

#[test]
fn a_refused_row_fails_the_load_with_its_position_and_leaves_the_cluster_unchanged() {
    let c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("dup.csv");
    std::fs::write(&csv, "id,v\n1,a\n2,b\n3,c\n2,d\n5,e\n").unwrap();
    let out = run(&["import", &c.url(0), csv.to_str().unwrap(), "--pk", "id"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dup.csv:5:") && err.contains("record 4"),
        "{err}"
    );
    assert!(err.contains("UNIQUE"), "{err}");
    for i in 0..3 {
        let tables = c.local_rows(i, "SELECT name FROM sqlite_schema").unwrap();
        assert!(tables.is_empty(), "node {i}: {tables:?}");
    }
}

/// Standard input is read once: a second load of it into the same table is a new load
/// (its name says nothing of its contents), not a finished one to skip; a file loaded
/// again is skipped, as before.
#[test]
fn stdin_twice_lands_twice_and_a_file_twice_once() {
    let c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    // A table first, so that the loads below go in by statements, not by booting.
    c.execute(0, "CREATE TABLE other(x)");
    let seed = dir.path().join("seed.csv");
    std::fs::write(&seed, "x\n1\n").unwrap();
    let out = run(&["import", &c.url(0), seed.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{out:?}");
    for (body, n) in [("a,b\n1,x\n", 1), ("a,b\n2,y\n3,z\n", 3)] {
        let out = Command::new(liteload())
            .args(["import", &c.url(0), "-", "--table", "t", "-q"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(body.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        c.wait_local(0, "SELECT count(*) FROM t", &[vec![Json::from(n)]]);
    }
    let out = run(&["import", &c.url(0), seed.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{out:?}");
    c.wait_local(0, "SELECT count(*) FROM seed", &[vec![Json::from(1)]]);
}

/// Indexes into a cluster that holds data take names nothing there has (an index on
/// column `a_b` and one on `(a, b)` are one name made naively; a table of the cluster
/// holds another), and a load that asks again for the indexes it made makes none twice.
#[test]
fn indexes_into_a_cluster_get_names_of_their_own() {
    let c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    c.execute(0, "CREATE TABLE idx_t_a_b_2 (x)");
    let csv = dir.path().join("t.csv");
    for body in ["a_b,a,b\n1,1,1\n2,2,2\n", "a_b,a,b\n3,3,3\n"] {
        std::fs::write(&csv, body).unwrap();
        let out = run(&[
            "import",
            &c.url(0),
            csv.to_str().unwrap(),
            "--table",
            "t",
            "--index",
            "a_b",
            "--unique-index",
            "a,b",
            "-q",
        ]);
        assert!(out.status.success(), "{out:?}");
    }
    c.wait_local(0, "SELECT count(*) FROM t", &[vec![Json::from(3)]]);
    let names = c
        .local_rows(
            0,
            "SELECT name FROM sqlite_schema WHERE tbl_name = 't' AND type = 'index' ORDER BY name",
        )
        .unwrap();
    assert_eq!(names, vec!["\"idx_t_a_b\"", "\"idx_t_a_b_3\""]);
    assert_eq!(
        c.local_rows(0, "PRAGMA integrity_check"),
        Some(vec!["\"ok\"".to_string()])
    );
}

/// A row the table refuses, at random positions, with every in-flight setting: the load
/// fails naming the row, and every node keeps exactly a prefix of the input, in input
/// order and ending before the refused row, with nothing after it (requests in flight
/// at once commit in order, each only after the one before it); the progress rows cover
/// that prefix and no more, so a rerun resumes in order.
#[test]
fn nothing_after_a_refused_request_commits_whatever_is_in_flight() {
    let c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    // Small requests (16 KiB, about 15 of them), and requests of the default size
    // (4 MiB): 110,000 rows of 400 bytes are 11 of them.
    let small = dir.path().join("in.csv");
    let large = dir.path().join("large.csv");
    for (csv, n, pad) in [(&small, 20_000u64, 0usize), (&large, 110_000, 400)] {
        let mut text = String::from("id,v\n");
        let pad = "p".repeat(pad);
        for i in 1..=n {
            text.push_str(&format!("{i},row {i}{pad}\n"));
        }
        std::fs::write(csv, text).unwrap();
    }
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let runs = [
        ("1", Some("16384")),
        ("2", Some("16384")),
        ("4", Some("16384")),
        ("4", Some("16384")),
        ("3", Some("16384")),
        // The defaults: one request in flight, 4 MiB each.
        ("1", None),
        ("3", None),
    ];
    for (k, (in_flight, request_bytes)) in runs.iter().enumerate() {
        let (csv, n) = match request_bytes {
            Some(_) => (&small, 20_000u64),
            None => (&large, 110_000),
        };
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Anywhere past the first request, with requests after it.
        let refused = n / 10 + rng % (n - n / 5);
        let table = format!("t{k}");
        c.execute(
            0,
            &format!("CREATE TABLE {table} (id INTEGER, v TEXT CHECK (id <> {refused}))"),
        );
        let url = c.url(0);
        let mut args = vec![
            "import",
            &url,
            csv.to_str().unwrap(),
            "--table",
            &table,
            "--rqlite-in-flight",
            in_flight,
        ];
        if let Some(bytes) = request_bytes {
            args.extend(["--rqlite-request-bytes", bytes]);
        }
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("record {refused}:")) && err.contains("refused the row"),
            "{err}"
        );
        let ids = |i: usize| -> Vec<u64> {
            c.local(i, &format!("SELECT id FROM {table} ORDER BY rowid"))
                .unwrap_or_default()
                .iter()
                .filter_map(|r| r.first().and_then(Json::as_u64))
                .collect()
        };
        let leader_count = (0..3).map(|i| ids(i).len()).max().unwrap();
        let start = Instant::now();
        for i in 0..3 {
            let mut got = ids(i);
            while got.len() < leader_count && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(100));
                got = ids(i);
            }
            let off = got.iter().zip(1u64..).position(|(id, want)| *id != want);
            assert_eq!(
                off,
                None,
                "in-flight {in_flight}, refused {refused}, node {i}: {} rows, not a prefix in input order from row {off:?} ({:?})",
                got.len(),
                off.map(|o| &got[o..(o + 3).min(got.len())])
            );
            assert!(
                got.len() < refused as usize,
                "node {i} kept {} rows",
                got.len()
            );
            assert_eq!(got.len(), leader_count, "node {i}");
            assert_eq!(
                c.local_rows(i, "PRAGMA integrity_check"),
                Some(vec!["\"ok\"".to_string()]),
                "node {i}"
            );
        }
        let ranges = c
            .local(
                0,
                &format!(
                    "SELECT min(first_row), max(last_row), sum(rows) FROM _liteload_progress WHERE tbl = '{table}'"
                ),
            );
        // No progress table: the first request (which makes it) was the refused one.
        let got = ranges.map(|r| r[0].clone());
        let want = (leader_count > 0).then(|| {
            vec![
                Json::from(1),
                Json::from(leader_count as u64),
                Json::from(leader_count as u64),
            ]
        });
        assert_eq!(got, want, "in-flight {in_flight}: progress rows");
        // A rerun resumes after the prefix, meets the refused row again, and adds
        // nothing.
        let again = run(&args);
        assert_eq!(again.status.code(), Some(1));
        assert_eq!(
            ids(0).len(),
            leader_count,
            "in-flight {in_flight}: the rerun added rows"
        );
        eprintln!("in-flight {in_flight}, {request_bytes:?} bytes: refused {refused}, kept {leader_count}");
    }
}

/// `liteload generate DB SPEC…` through SQLite's path: the reference a cluster's rows
/// are compared with.
fn generate_into_file(db: &Path, spec: &[&str]) {
    let out = run(&[
        &["generate", db.to_str().unwrap()][..],
        spec,
        &["--engine", "sqlite"],
    ]
    .concat());
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn generate_into_a_cluster_makes_the_rows_a_file_gets_across_kills_of_liteload_and_the_leader() {
    let mut c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    let spec = ["--rows", "200000", "--seed", "9", "--quiet"];
    generate_into_file(&db, &spec);
    let sql = exact_sql("user", &["id", "area", "age", "active"]);
    let want = file_rows(&db, &sql);
    let run_on = |url: &str| -> Vec<String> {
        let mut v: Vec<String> = ["generate", url, "--rqlite-request-bytes", "65536"]
            .map(String::from)
            .to_vec();
        v.extend(spec.map(String::from));
        v
    };
    kill_liteload_then_leader(&mut c, run_on, |c| progress_rows(c) >= 3);
    for i in 0..3 {
        c.wait_local(i, &sql, &want);
    }
}

/// Generate into a cluster's table that holds rows continues its rowids as it does in a
/// file, the same spec run again writes nothing there (its progress says it finished),
/// and a table whose columns are not the spec's is refused with nothing sent.
#[test]
fn generate_into_a_cluster_table_that_holds_rows_continues_it_as_in_a_file() {
    let c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    let first = ["--rows", "3000", "--seed", "4", "--quiet"];
    let second = ["--rows", "2000", "--seed", "5", "--quiet"];
    generate_into_file(&db, &first);
    generate_into_file(&db, &second);
    let sql = exact_sql("user", &["id", "area", "age", "active"]);
    let want = file_rows(&db, &sql);
    assert_eq!(want.len(), 5000);
    let url = c.url(0);
    // The first boots the empty node, the second goes in by requests, and the first
    // again is recorded as done.
    for (spec, rows) in [(first, "3000"), (second, "2000"), (first, "0")] {
        let out = run(&[&["generate", &url, "--summary-json"][..], &spec].concat());
        assert!(out.status.success(), "{out:?}");
        let summary: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["rows"].to_string(), rows, "{summary}");
    }
    c.wait_local(0, &sql, &want);
    // Other columns: refused before a row is sent.
    let out = run(&[
        "generate",
        &url,
        "--rows",
        "10",
        "--column",
        "id=rowid",
        "--column",
        "v=const:1",
        "--quiet",
    ]);
    // A schema error, as into a file.
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("exists with columns (id, area, age, active)"),
        "{out:?}"
    );
    c.wait_local(0, &sql, &want);
}

#[test]
fn a_new_single_node_cluster_is_booted_and_joining_nodes_copy_it() {
    let mut c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("hostile.csv");
    hostile_csv(&csv, 20_000);
    let csv_s = csv.to_str().unwrap();
    let sql = exact_sql("hostile", &["id", "name", "score", "ratio", "note"]);
    let want = reference(&[csv_s], &sql, dir.path());
    let out = run(&["import", &c.url(0), csv_s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("booted node") && err.contains("-join"),
        "{err}"
    );
    // Booting again is refused: the database is not empty now.
    let out = run(&["import", &c.url(0), csv_s, "--rqlite-boot"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // Running the load again writes nothing: the booted file recorded it as finished,
    // as a load by statements records its last request.
    let out = run(&["import", &c.url(0), csv_s]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("was loaded into") && err.contains("nothing written"),
        "{err}"
    );
    let bin = rqlited();
    for _ in 1..3 {
        c.add_node(&bin);
    }
    c.wait_members(3);
    for i in 0..3 {
        c.wait_local(i, &sql, &want);
    }
}

#[test]
fn wrong_credentials_are_a_clear_error_and_write_nothing() {
    let auth = r#"[
        {"username": "admin", "password": "right-pass", "perms": ["all"]},
        {"username": "reader", "password": "r-pass", "perms": ["query", "status"]}
    ]"#;
    let mut c = Cluster::start_with(1, Some(auth));
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(&csv, "name,age\nAda,36\n").unwrap();
    let csv_s = csv.to_str().unwrap();
    let url = format!("rqlite://admin:wrong-pass@127.0.0.1:{}", c.nodes[0].http);
    let out = run(&["import", &url, csv_s, "--rqlite-no-boot"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused user \"admin\""), "{err}");
    assert!(!err.contains("wrong-pass"), "the password is shown: {err}");
    // A user without the right to write, with the password from the environment.
    let out = Command::new(liteload())
        .args([
            "import",
            &format!("rqlite://reader@127.0.0.1:{}", c.nodes[0].http),
            csv_s,
            "--rqlite-no-boot",
        ])
        .env("LITELOAD_RQLITE_PASSWORD", "r-pass")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not allowed to write"),
        "{out:?}"
    );
    assert_eq!(
        c.local_rows(0, "SELECT count(*) FROM sqlite_schema")
            .unwrap(),
        ["0"]
    );
    // The right password loads.
    let out = Command::new(liteload())
        .args([
            "import",
            &format!("rqlite://admin@127.0.0.1:{}", c.nodes[0].http),
            csv_s,
            "--rqlite-no-boot",
        ])
        .env("LITELOAD_RQLITE_PASSWORD", "right-pass")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        c.local_rows(0, "SELECT name, age FROM people").unwrap(),
        ["[\"Ada\",36]"]
    );
    c.kill(0);
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Every column of `table` in a local file, in the exact form [`exact_sql`] gives.
fn file_columns(db: &Path, table: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    let cols = st
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    cols
}

#[test]
fn ingest_into_a_cluster_merges_as_into_a_file_across_kills_of_liteload_and_the_leader() {
    let mut c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let feed = dir.path().join("feed.jsonl");
    let gen = Command::new("python3")
        .arg(workspace().join("bench/gen_feed.py"))
        .args(["60000", "3000"])
        .arg(&feed)
        .status()
        .unwrap();
    assert!(gen.success());
    // Hostile extras: text rqlite would read as a BLOB, NUL, an explicit null, a
    // number too large for an integer, a huge text.
    let mut extra = String::new();
    extra.push_str("{\"id\": 7, \"note\": \"x'00'\", \"alt\": null}\n");
    extra.push_str(
        "{\"id\": 8, \"note\": \"a\\u0000b\", \"big\": 123456789012345678901234567890}\n",
    );
    extra.push_str(&format!(
        "{{\"id\": 9, \"note\": \"{}\", \"ratio\": 0.1}}\n",
        "z".repeat(200_000)
    ));
    extra.push_str("{\"id\": 7, \"ratio\": -2.2250738585072014e-308}\n");
    let mut all = std::fs::read_to_string(&feed).unwrap();
    all.push_str(&extra);
    std::fs::write(&feed, all).unwrap();
    let feed_s = feed.to_str().unwrap();
    let args = [
        "--table",
        "flights",
        "--key",
        "id",
        "--commit-rows",
        "2000",
        "--quiet",
    ];

    let local = dir.path().join("local.db");
    let out = run(&[&["ingest", local.to_str().unwrap(), feed_s][..], &args[..]].concat());
    assert!(out.status.success(), "{out:?}");
    let cols = file_columns(&local, "flights");
    let col_refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let sql = exact_sql_by("flights", &col_refs, "id");
    let want = file_rows(&local, &sql);

    // kill -9 of liteload after some windows are in, then of the leader during the
    // rerun; one more run finishes.
    let run_on = |url: &str| -> Vec<String> {
        let mut v: Vec<String> = ["ingest", url, feed_s].map(String::from).to_vec();
        v.extend(args.map(String::from));
        v
    };
    kill_liteload_then_leader(&mut c, run_on, |c| {
        c.local_rows(0, "SELECT offset FROM liteload_ingest_state")
            .is_some_and(|r| !r.is_empty())
    });
    c.wait_members(3);
    for i in 0..3 {
        c.wait_local(i, &sql, &want);
    }
}

/// A CA and a certificate for 127.0.0.1 it signed: `ca.pem`, `node.pem` and `node.key`
/// in `dir`, and an unrelated CA's certificate in `other-ca.pem`.
fn test_pki(dir: &Path) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "liteload test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let node_key = rcgen::KeyPair::generate().unwrap();
    let node = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&node_key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.join("node.pem"), node.pem()).unwrap();
    std::fs::write(dir.join("node.key"), node_key.serialize_pem()).unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.join("other-ca.pem"), other.cert.pem()).unwrap();
}

#[test]
fn https_to_a_cluster_a_private_ca_signed_needs_that_ca_and_loads_with_it() {
    let pki = tempfile::tempdir().unwrap();
    test_pki(pki.path());
    let ca = pki.path().join("ca.pem");
    let other = pki.path().join("other-ca.pem");
    let mut c = Cluster::start_tls(1, pki.path());
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("people.csv");
    std::fs::write(&csv, "name,age\nAda,36\n\"x'00'\",7\n").unwrap();
    let csv_s = csv.to_str().unwrap();
    let url = c.url(0);
    // Not trusted: the built-in web roots, or another CA. A clear error at once (no
    // minute of retries), and nothing written.
    for extra in [vec![], vec!["--rqlite-ca", other.to_str().unwrap()]] {
        let t0 = Instant::now();
        let mut args = vec!["import", &url, csv_s];
        args.extend(extra);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("TLS") && err.contains("certificate"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    }
    assert_eq!(
        c.local_rows(0, "SELECT count(*) FROM sqlite_schema")
            .unwrap(),
        ["0"]
    );
    // Trusted: an empty single node is booted over HTTPS, then a second table goes in
    // as inserts, and an ingest merges into a third.
    let ca_s = ca.to_str().unwrap();
    let out = run(&["import", &url, csv_s, "--rqlite-ca", ca_s]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&[
        "import",
        &url,
        csv_s,
        "--table",
        "again",
        "--rqlite-ca",
        ca_s,
    ]);
    assert!(out.status.success(), "{out:?}");
    for t in ["people", "again"] {
        assert_eq!(
            c.local_rows(0, &format!("SELECT name, typeof(name), age FROM {t}"))
                .unwrap(),
            ["[\"Ada\",\"text\",36]", "[\"x'00'\",\"text\",7]"],
            "{t}"
        );
    }
    let feed = dir.path().join("feed.jsonl");
    std::fs::write(&feed, "{\"id\":1,\"a\":\"x\"}\n{\"id\":1,\"b\":2}\n").unwrap();
    let out = run(&[
        "ingest",
        &url,
        "--table",
        "state",
        "--key",
        "id",
        feed.to_str().unwrap(),
        "--rqlite-ca",
        ca_s,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        c.local_rows(0, "SELECT id, a, b FROM state").unwrap(),
        ["[1,\"x\",2]"]
    );
    // The option belongs to an rqlite+https:// database only.
    let db = dir.path().join("file.db");
    let out = run(&["import", db.to_str().unwrap(), csv_s, "--rqlite-ca", ca_s]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    c.kill(0);
}

/// A proxy in front of one node: it passes each request on (one per connection) and
/// the answer back, except the answer to POST /db/request number `drop_at` (from 1),
/// which it reads from the node and then drops with the connection, as a network does
/// when it breaks after a request arrived. Returns its port.
fn dropping_proxy(upstream: u16, drop_at: usize) -> u16 {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let seen = seen.clone();
            std::thread::spawn(move || {
                // The request: headers, then Content-Length bytes of body.
                let mut req = vec![];
                let mut buf = [0u8; 65536];
                let head_end = loop {
                    if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match client.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&req[..head_end]).to_string();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while req.len() < head_end + len {
                    match client.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                // One request per connection: the node closes after answering.
                let mut out = String::new();
                for l in head.trim_end().lines() {
                    if !l.to_ascii_lowercase().starts_with("connection:") {
                        out.push_str(l);
                        out.push_str("\r\n");
                    }
                }
                out.push_str("Connection: close\r\n\r\n");
                let Ok(mut node) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                    return;
                };
                node.write_all(out.as_bytes()).unwrap();
                node.write_all(&req[head_end..]).unwrap();
                let mut answer = vec![];
                let _ = node.read_to_end(&mut answer);
                if head.starts_with("POST /db/request")
                    && seen.fetch_add(1, Ordering::SeqCst) + 1 == drop_at
                {
                    return; // dropped: the client's connection closes unanswered
                }
                let _ = client.write_all(&answer);
            });
        }
    });
    port
}

#[test]
fn an_ingest_window_whose_answer_is_lost_is_found_applied_and_counted_right() {
    let c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    let feed = dir.path().join("feed.jsonl");
    // 6 windows of 50 messages over 30 keys: new keys and updates in each.
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&format!(
            "{{\"id\": {}, \"v{}\": {i}}}\n",
            (i * 7) % 30 + i / 100 * 30,
            i % 4
        ));
    }
    std::fs::write(&feed, text).unwrap();
    let feed_s = feed.to_str().unwrap();
    let args = ["--table", "t", "--key", "id", "--commit-rows", "50"];
    let local = dir.path().join("local.db");
    let want = run(&[&["ingest", local.to_str().unwrap(), feed_s][..], &args[..]].concat());
    assert!(want.status.success(), "{want:?}");
    let proxy = dropping_proxy(c.nodes[0].http, 3);
    let url = format!("rqlite://127.0.0.1:{proxy}");
    let got = run(&[&["ingest", &url, feed_s][..], &args[..]].concat());
    assert!(got.status.success(), "{got:?}");
    // The same counts as into a file: "N inserted, M updated".
    let counts = |o: &std::process::Output| {
        let e = String::from_utf8_lossy(&o.stdout).to_string();
        let at = e.find(" inserted, ").unwrap_or_else(|| panic!("{e}"));
        let from = e[..at].rfind(": ").unwrap() + 2;
        let to = e[at..].find(" updated").unwrap() + at;
        e[from..to].to_string()
    };
    assert_eq!(counts(&got), counts(&want));
    let cols = file_columns(&local, "t");
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let sql = exact_sql_by("t", &cols, "id");
    c.wait_local(0, &sql, &file_rows(&local, &sql));
}

/// Related tables into a cluster: an empty one is booted with the file made whole (every
/// table, its keys and the foreign keys sound); one that holds data refuses, unchanged.
#[test]
fn nested_tables_boot_an_empty_cluster_and_are_refused_by_one_with_data() {
    let c = Cluster::start(1);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("orders.ndjson");
    let mut text = String::new();
    for i in 0..500 {
        text.push_str(&format!(
            "{{\"id\":{i},\"items\":[{{\"sku\":\"é{i}\",\"discounts\":[{{\"pct\":{}}}]}},{{\"sku\":\"b\"}}]}}\n",
            i % 40
        ));
    }
    std::fs::write(&src, text).unwrap();
    let args = [
        "import",
        &c.url(0),
        src.to_str().unwrap(),
        "--table",
        "orders",
    ];
    let out = run(&[&args[..], &["--nested", "tables", "-q"]].concat());
    assert!(out.status.success(), "{out:?}");
    c.wait_local(
        0,
        "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM orders_items), \
         (SELECT count(*) FROM orders_items_discounts), \
         (SELECT sum(pct) FROM orders_items_discounts), \
         (SELECT count(*) FROM pragma_foreign_key_check)",
        &[vec![
            Json::from(500),
            Json::from(1000),
            Json::from(500),
            Json::from((0..500).map(|i| i % 40).sum::<i64>()),
            Json::from(0),
        ]],
    );
    let out = run(&[&args[..], &["--nested", "tables", "-q"]].concat());
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("this cluster holds data"),
        "{out:?}"
    );
    c.wait_local(
        0,
        "SELECT count(*) FROM orders_items",
        &[vec![Json::from(1000)]],
    );
}

/// Related tables from XML and from Parquet, each keyed by the records' own `id`, boot
/// empty clusters as JSON's do: every table, the key and the foreign keys sound.
#[test]
fn xml_and_parquet_related_tables_boot_an_empty_cluster_keyed_by_their_own_id() {
    use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // XML: 300 orders (ids shuffled by a step), each with two items, the first with a
    // discount.
    let xml = dir.path().join("orders.xml");
    let mut doc = String::from("<orders>\n");
    for i in 0..300i64 {
        let id = (i * 7) % 300;
        doc.push_str(&format!(
            "<order id=\"{id}\"><note>é &amp; {i}</note><item sku=\"a{i}\"><discount pct=\"{}\"/></item><item sku=\"b\"/></order>\n",
            i % 40
        ));
    }
    doc.push_str("</orders>\n");
    std::fs::write(&xml, doc).unwrap();
    // Parquet: the same shape as columns, items a list of structs.
    let parquet = dir.path().join("orders.parquet");
    let fields = vec![
        arrow_schema::Field::new("sku", arrow_schema::DataType::Utf8, true),
        arrow_schema::Field::new("pct", arrow_schema::DataType::Int64, true),
    ];
    let mut items = ListBuilder::new(StructBuilder::from_fields(fields, 300));
    for i in 0..300i64 {
        let s = items.values();
        s.field_builder::<StringBuilder>(0)
            .unwrap()
            .append_value(format!("a{i}"));
        s.field_builder::<Int64Builder>(1)
            .unwrap()
            .append_value(i % 40);
        s.append(true);
        s.field_builder::<StringBuilder>(0)
            .unwrap()
            .append_value("b");
        s.field_builder::<Int64Builder>(1).unwrap().append_null();
        s.append(true);
        items.append(true);
    }
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..300).map(|i| (i * 7) % 300),
    ));
    let items: ArrayRef = Arc::new(items.finish());
    let rb = RecordBatch::try_from_iter([("id", id), ("items", items)]).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&parquet).unwrap(),
        rb.schema(),
        None,
    )
    .unwrap();
    w.write(&rb).unwrap();
    w.close().unwrap();
    let pct_sum = (0..300).map(|i| i % 40).sum::<i64>();
    for (src, child, pct_table) in [
        (&xml, "orders_item", "orders_item_discount"),
        (&parquet, "orders_items", "orders_items"),
    ] {
        let c = Cluster::start(1);
        let out = run(&[
            "import",
            &c.url(0),
            src.to_str().unwrap(),
            "--table",
            "orders",
            "--nested",
            "tables",
            "--pk",
            "id",
            "-q",
        ]);
        assert!(out.status.success(), "{out:?}");
        c.wait_local(
            0,
            &format!(
                "SELECT (SELECT count(*) FROM orders), (SELECT sum(id) FROM orders), \
                 (SELECT count(*) FROM \"{child}\"), \
                 (SELECT count(*) FROM \"{child}\" WHERE _parent NOT IN (SELECT id FROM orders)), \
                 (SELECT sum(pct) FROM \"{pct_table}\"), \
                 (SELECT pk FROM pragma_table_info('orders') WHERE name = 'id'), \
                 (SELECT count(*) FROM pragma_foreign_key_check)"
            ),
            &[vec![
                Json::from(300),
                Json::from((0..300).sum::<i64>()),
                Json::from(600),
                Json::from(0),
                Json::from(pct_sum),
                Json::from(1),
                Json::from(0),
            ]],
        );
        assert_eq!(
            c.local_rows(0, "PRAGMA integrity_check"),
            Some(vec!["\"ok\"".to_string()]),
            "{}",
            src.display()
        );
    }
}

/// SQLite files boot an empty cluster with the file they merge into (their declared
/// schema, rows and indexes); run again, the load is known as finished and writes
/// nothing.
#[test]
fn sqlite_files_boot_an_empty_cluster_and_a_second_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    for (p, sql) in [
        (&a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT; CREATE INDEX t_v ON t (v); \
              INSERT INTO t VALUES (1, 'é'), (3, 'x'); CREATE TABLE e (x);"),
        (&b, "CREATE TABLE t (v TEXT, id INTEGER PRIMARY KEY); INSERT INTO t VALUES ('z', 2);"),
    ] {
        rusqlite::Connection::open(p).unwrap().execute_batch(sql).unwrap();
    }
    let c = Cluster::start(1);
    let args = [
        "import",
        &c.url(0),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-q",
    ];
    let out = run(&args);
    assert!(out.status.success(), "{out:?}");
    c.wait_local(
        0,
        "SELECT (SELECT group_concat(id || v, ',') FROM (SELECT * FROM t ORDER BY id)), \
         (SELECT sql FROM sqlite_schema WHERE name = 't_v'), \
         (SELECT strict FROM pragma_table_list WHERE name = 't')",
        &[vec![
            Json::from("1é,2z,3x"),
            Json::from("CREATE INDEX t_v ON t (v)"),
            Json::from(1),
        ]],
    );
    // Now it holds data, this load's: nothing is written again.
    let out = run(&args[..4]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("was loaded into \"t\" before (3 rows") && err.contains("nothing written"),
        "{err}"
    );
    assert_eq!(
        c.local_rows(0, "SELECT count(*) FROM t"),
        Some(vec!["3".to_string()])
    );
}

/// SQLite files into a three-node cluster (which a load never boots): liteload killed
/// (kill -9) after its first requests, then the leader killed during the rerun; the
/// runs after go on where the cluster stopped, and every node ends with the table the
/// same merge makes in a local file, rowid for rowid.
#[test]
fn sqlite_files_into_a_three_node_cluster_survive_kills_of_liteload_and_the_leader() {
    let mut c = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("hostile.csv");
    hostile_csv(&csv, 60_000);
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    for db in [&a, &b] {
        let out = run(&["import", db.to_str().unwrap(), csv.to_str().unwrap(), "-q"]);
        assert!(out.status.success(), "{out:?}");
    }
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    let sql = exact_sql("hostile", &["id", "name", "score", "ratio", "note"]);
    let reference = dir.path().join("merged.db");
    let out = run(&["import", reference.to_str().unwrap(), a_s, b_s, "-q"]);
    assert!(out.status.success(), "{out:?}");
    let want = file_rows(&reference, &sql);
    assert_eq!(want.len(), 120_000);
    let run_on = |url: &str| -> Vec<String> {
        [
            "import",
            url,
            a_s,
            b_s,
            "--quiet",
            "--rqlite-request-bytes",
            "65536",
        ]
        .map(String::from)
        .to_vec()
    };
    kill_liteload_then_leader(&mut c, run_on, |c| progress_rows(c) >= 4);
    for i in 0..3 {
        c.wait_local(i, &sql, &want);
    }
}

/// A temporary table `seq` of the numbers 1 to 30000 (the bundled SQLite has no
/// generate_series).
const SEQ: &str = "CREATE TEMP TABLE seq (value INTEGER PRIMARY KEY); \
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000) \
    INSERT INTO seq SELECT x FROM c;";

/// Files declared alike boot an empty cluster through the page writer (`--engine
/// direct` refuses where it cannot take them): the records copied as stored, rowids
/// renumbered in input order, the index merged; the node's file sound and equal to
/// SQLite's own merge.
#[test]
fn sqlite_files_declared_alike_boot_a_cluster_by_the_page_writer() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let schema =
        "CREATE TABLE ev (what TEXT, n INTEGER, b BLOB); CREATE INDEX ev_what ON ev (what);";
    for (k, f) in ["a.db", "b.db"].into_iter().enumerate() {
        rusqlite::Connection::open(p(f))
            .unwrap()
            .execute_batch(&format!(
                "{SEQ} {schema} INSERT INTO ev SELECT 'w' || (value % 13) || char(0) || 'é', \
                 value * {}, randomblob(value % 40) FROM seq WHERE value <= 5000; \
                 DELETE FROM ev WHERE rowid % 11 = 0;",
                k + 1
            ))
            .unwrap();
    }
    let reference = p("reference.db");
    let (a, b) = (p("a.db"), p("b.db"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = run(&[
        "import",
        reference.to_str().unwrap(),
        a,
        b,
        "-q",
        "--engine",
        "sqlite",
    ]);
    assert!(out.status.success(), "{out:?}");
    let c = Cluster::start(1);
    let out = run(&["import", &c.url(0), a, b, "-q", "--engine", "direct"]);
    assert!(out.status.success(), "{out:?}");
    let sql = exact_sql("ev", &["what", "n", "b"]);
    let want = file_rows(&reference, &sql);
    assert_eq!(want.len(), 2 * (5000 - 454));
    c.wait_local(0, &sql, &want);
    let by_index = "SELECT what, rowid FROM ev INDEXED BY ev_what ORDER BY what, rowid";
    c.wait_local(0, by_index, &file_rows(&reference, by_index));
}

/// SQLite files into a cluster that holds data (rqlite #1185): a table the cluster
/// lacks is made as declared, its rowids kept, its indexes built after its rows (a name
/// taken there renamed); a table it has is appended to (an INTEGER PRIMARY KEY as data,
/// implicit rowids numbered anew). Every table ends as the same loads leave a local
/// file. A refused row stops the load with the requests before it committed; once its
/// cause is gone, a rerun goes on where it stopped, no row written twice.
#[test]
fn sqlite_files_go_into_a_cluster_that_holds_data_as_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let there = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT; \
                 INSERT INTO t VALUES (1, 'é'); \
                 CREATE TABLE logs (msg, at); INSERT INTO logs VALUES ('first', 0); \
                 CREATE INDEX ix ON logs (at); \
                 CREATE TABLE u (k INTEGER UNIQUE, s TEXT); INSERT INTO u VALUES (20000, 'in the way');";
    // Hostile values of every class: NUL, non-ASCII, text rqlite would take for a BLOB,
    // quotes, huge text, integers at the edges, REALs of 17 digits, BLOBs.
    let a_sql = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL) STRICT; \
        INSERT INTO t SELECT value + 10, CASE value % 5 WHEN 0 THEN 'a' || char(0) || 'b' \
          WHEN 1 THEN 'x''00''' WHEN 2 THEN 'ü\"' || value WHEN 3 THEN printf('%.*c', 5000, 'w') \
          ELSE '' END FROM seq WHERE value <= 2000; \
        CREATE TABLE logs (msg, at); \
        INSERT INTO logs SELECT CASE value % 4 WHEN 0 THEN value * 1e-3 + 0.1 WHEN 1 THEN x'00ff' \
          WHEN 2 THEN 9223372036854775807 - value ELSE NULL END, value FROM seq WHERE value <= 1500; \
        CREATE TABLE m (a TEXT COLLATE NOCASE, b REAL DEFAULT 2.5 CHECK (b > 0)); \
        INSERT INTO m SELECT 'k' || value, value / 7.0 FROM seq WHERE value <= 300; \
        DELETE FROM m WHERE rowid % 3 = 0; CREATE INDEX ix ON m (a); \
        CREATE TABLE n (k TEXT PRIMARY KEY COLLATE NOCASE, w) WITHOUT ROWID; \
        INSERT INTO n SELECT 'K' || value, -value FROM seq WHERE value <= 200;";
    let b_sql = "CREATE TABLE t (v TEXT NOT NULL, id INTEGER PRIMARY KEY) STRICT; \
        INSERT INTO t SELECT 'b' || value, value + 5000 FROM seq WHERE value <= 1000; \
        CREATE TABLE logs (at, msg); INSERT INTO logs SELECT value, 'b' FROM seq WHERE value <= 700;";
    for (f, sql) in [("a.db", a_sql), ("b.db", b_sql)] {
        rusqlite::Connection::open(p(f))
            .unwrap()
            .execute_batch(&format!("{SEQ} {sql}"))
            .unwrap();
    }
    let reference = p("reference.db");
    rusqlite::Connection::open(&reference)
        .unwrap()
        .execute_batch(there)
        .unwrap();
    let c = Cluster::start(1);
    for sql in there.split("; ") {
        c.execute(0, sql.trim_end_matches(';'));
    }
    let (a, b) = (p("a.db"), p("b.db"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let url = c.url(0);
    let append = ["--if-exists", "append", "-q"];
    let small = ["--rqlite-request-bytes", "20000", "--rqlite-in-flight", "3"];
    let mut args = vec!["import", url.as_str(), a, b];
    args.extend(append);
    args.extend(small);
    let out = run(&args);
    assert!(out.status.success(), "{out:?}");
    let mut file_args = vec!["import", reference.to_str().unwrap(), a, b];
    file_args.extend(append);
    let out = run(&file_args);
    assert!(out.status.success(), "{out:?}");
    for (table, order, columns) in [
        ("t", "id", &["v"][..]),
        ("logs", "rowid", &["msg", "at"]),
        ("m", "rowid", &["a", "b"]),
        ("n", "k", &["w"]),
    ] {
        let sql = exact_sql_by(table, columns, order);
        let want = file_rows(&reference, &sql);
        assert!(want.len() > 100, "{table}");
        c.wait_local(0, &sql, &want);
    }
    let schema = "SELECT group_concat(name || ':' || sql, char(10)) FROM \
                  (SELECT name, sql FROM sqlite_schema WHERE name NOT LIKE '%liteload%' ORDER BY name)";
    c.wait_local(0, schema, &file_rows(&reference, schema));
    assert_eq!(
        c.local_rows(0, "SELECT sql FROM sqlite_schema WHERE name = 'ix_2'"),
        Some(vec![r#""CREATE INDEX \"ix_2\" ON m (a)""#.to_string()])
    );

    // A key in the table already is a refused row: nothing of that table's load after it.
    let e = p("e.db");
    rusqlite::Connection::open(&e)
        .unwrap()
        .execute_batch(&format!(
            "{SEQ} CREATE TABLE u (k INTEGER UNIQUE, s TEXT); \
             INSERT INTO u SELECT value, 'e' || value FROM seq WHERE value <= 30000;"
        ))
        .unwrap();
    let mut args = vec!["import", url.as_str(), e.to_str().unwrap()];
    args.extend(append);
    args.extend(["--rqlite-request-bytes", "4000"]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UNIQUE constraint failed: u.k"), "{err}");
    assert!(err.contains("e.db table \"u\": record 20000:"), "{err}");
    let held: u64 = c.local_rows(0, "SELECT count(*) FROM u").unwrap()[0]
        .parse()
        .unwrap();
    assert!(held > 1 && held < 20000, "{held}");
    // The cause gone, the rerun goes on after the committed requests.
    c.execute(0, "DELETE FROM u WHERE s = 'in the way'");
    args.retain(|a| *a != "-q");
    let out = run(&args);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("resumed:"),
        "{out:?}"
    );
    c.wait_local(
        0,
        "SELECT count(*), count(DISTINCT k), sum(k), min(k), max(k) FROM u",
        &[vec![
            Json::from(30000),
            Json::from(30000),
            Json::from(30000 * 30001 / 2),
            Json::from(1),
            Json::from(30000),
        ]],
    );
    // Run again, the load is known as finished. Another input with `--if-exists
    // fail`: a table the cluster has refuses the load before any row.
    let out = run(&["import", url.as_str(), e.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{out:?}");
    let f = p("f.db");
    rusqlite::Connection::open(&f)
        .unwrap()
        .execute_batch("CREATE TABLE u (k INTEGER UNIQUE, s TEXT); INSERT INTO u VALUES (-1, 'f');")
        .unwrap();
    let out = run(&[
        "import",
        url.as_str(),
        f.to_str().unwrap(),
        "--if-exists",
        "fail",
    ]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists in the cluster already"),
        "{out:?}"
    );
    assert_eq!(
        c.local_rows(0, "SELECT count(*) FROM u"),
        Some(vec!["30000".to_string()])
    );
}
