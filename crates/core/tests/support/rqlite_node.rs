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

fn free_port() -> R<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub struct Node {
    http: u16,
    child: Child,
    agent: ureq::Agent,
}

impl Node {
    /// Starts a node whose data lives in `dir`, and waits until it leads.
    pub fn start(dir: &Path) -> R<Node> {
        let bin = rqlited();
        let _g = PORTS.lock().unwrap_or_else(|p| p.into_inner());
        let (http, raft) = (free_port()?, free_port()?);
        let log = std::fs::File::create(dir.join("rqlited.log"))?;
        let child = Command::new(bin)
            .arg("-node-id")
            .arg("n0")
            .arg("-http-addr")
            .arg(format!("127.0.0.1:{http}"))
            .arg("-raft-addr")
            .arg(format!("127.0.0.1:{raft}"))
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        let node = Node { http, child, agent };
        let start = Instant::now();
        loop {
            let ready = node
                .agent
                .get(format!("{}/readyz", node.api()))
                .call()
                .is_ok_and(|r| r.status() == 200);
            if ready {
                return Ok(node);
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Err("rqlited was not ready in 60 s".into());
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
