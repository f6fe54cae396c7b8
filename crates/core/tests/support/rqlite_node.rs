//! One rqlited node on 127.0.0.1 with a database of its own, stopped when dropped
//! (rqlited v8.43.4, built by bench/rqlite/build-rqlited.sh on first use and kept under
//! target/, as the command's cluster tests build it; `LITELOAD_RQLITED` names another).
//! Shared by the library's conformance suite (`src/conformance.rs`, through `#[path]`)
//! and `tests/sinks.rs`.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

type R<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn rqlited() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(p) = std::env::var_os("LITELOAD_RQLITED") {
                return PathBuf::from(p);
            }
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let dest = workspace.join("target/rqlited-v8.43.4/rqlited");
            let st = Command::new("sh")
                .arg(workspace.join("bench/rqlite/build-rqlited.sh"))
                .arg(&dest)
                .status()
                .expect("running build-rqlited.sh");
            assert!(st.success(), "building rqlited failed");
            dest
        })
        .clone()
}

/// Nodes start one at a time (ports are picked free, then bound by rqlited).
static PORTS: Mutex<()> = Mutex::new(());

fn free_listener() -> R<TcpListener> {
    Ok(TcpListener::bind("127.0.0.1:0")?)
}

pub struct Node {
    http: u16,
    child: Child,
    agent: ureq::Agent,
}

impl Node {
    /// Starts a node whose data lives in `dir`, and waits until it leads.
    ///
    /// Ports are picked free and then bound by rqlited, so another socket (a client's
    /// outgoing connection in a test running beside this one) can take one between the
    /// two: a node that exits before it is ready is started again on fresh ports, and the
    /// error names rqlited's last words.
    pub fn start(dir: &Path) -> R<Node> {
        let mut last = String::new();
        for attempt in 0..5 {
            match Node::start_once(dir, attempt)? {
                Ok(node) => return Ok(node),
                Err(why) => last = why,
            }
        }
        Err(format!("rqlited did not start in five tries; last: {last}").into())
    }

    /// One try: `Ok(Err(why))` when the node exited or was not ready in time.
    fn start_once(dir: &Path, attempt: u32) -> R<std::result::Result<Node, String>> {
        let bin = rqlited();
        let _g = PORTS.lock().unwrap_or_else(|p| p.into_inner());
        // Both listeners are held until both ports are known, so the two differ.
        let (a, b) = (free_listener()?, free_listener()?);
        let (http, raft) = (a.local_addr()?.port(), b.local_addr()?.port());
        drop((a, b));
        let data = dir.join(format!("data{attempt}"));
        let log_path = dir.join(format!("rqlited{attempt}.log"));
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(bin)
            .arg("-node-id")
            .arg("n0")
            .arg("-http-addr")
            .arg(format!("127.0.0.1:{http}"))
            .arg("-raft-addr")
            .arg(format!("127.0.0.1:{raft}"))
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let mut node = Node { http, child, agent };
        let start = Instant::now();
        let tail = |why: &str| {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let from = lines.len().saturating_sub(5);
            format!("{why}: {}", lines[from..].join(" | "))
        };
        loop {
            let ready = node
                .agent
                .get(format!("{}/readyz", node.api()))
                .call()
                .is_ok_and(|r| r.status() == 200);
            if ready {
                return Ok(Ok(node));
            }
            if let Some(status) = node.child.try_wait()? {
                return Ok(Err(tail(&format!("rqlited exited ({status})"))));
            }
            if start.elapsed() > Duration::from_secs(60) {
                // Dropping the node stops it.
                return Ok(Err(tail("rqlited was not ready in 60 s")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn api(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }

    /// The target liteload writes to.
    pub fn url(&self) -> String {
        format!("rqlite://127.0.0.1:{}", self.http)
    }

    /// Runs `sql` in the node's database.
    pub fn execute(&self, sql: &str) -> R {
        let body = serde_json::to_vec(&[sql])?;
        let mut resp = self
            .agent
            .post(format!("{}/db/execute", self.api()))
            .header("Content-Type", "application/json")
            .send(&body[..])?;
        let text = resp.body_mut().read_to_string()?;
        if resp.status() != 200 || text.contains("\"error\"") {
            return Err(format!("{sql}: {text}").into());
        }
        Ok(())
    }

    /// The node's database, copied whole into `path` (rqlite's backup).
    pub fn backup(&self, path: &Path) -> R {
        let mut resp = self.agent.get(format!("{}/db/backup", self.api())).call()?;
        if resp.status() != 200 {
            return Err(format!("backup: status {}", resp.status()).into());
        }
        let bytes = resp.body_mut().with_config().limit(1 << 30).read_to_vec()?;
        std::fs::write(path, bytes)?;
        Ok(())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
