//! A real MariaDB server for the tests, started from Debian's binaries (`mariadbd`,
//! `mariadb-install-db`; or `LITELOAD_MARIADB_BIN`, the folder holding both) in a
//! temporary directory: a Unix socket there and a free loopback port; `root` on the
//! socket without a password, and `app` with the password [`PASSWORD`] over TCP. Killed
//! when dropped. `.ci/run` installs the package when it is missing.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use mysql::prelude::Queryable;

use super::pki;

pub const PASSWORD: &str = "s3cret pw";

pub struct MyServer {
    dir: tempfile::TempDir,
    pub port: u16,
    child: Child,
}

fn tool(name: &str) -> PathBuf {
    if let Some(d) = std::env::var_os("LITELOAD_MARIADB_BIN") {
        return PathBuf::from(d).join(name);
    }
    for d in ["/usr/sbin", "/usr/bin"] {
        let p = PathBuf::from(d).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("MariaDB's {name} (apt-get install mariadb-server; or set LITELOAD_MARIADB_BIN)")
}

impl MyServer {
    pub fn start() -> MyServer {
        Self::start_with(false)
    }

    /// A server that also speaks TLS, with a certificate for `localhost` and 127.0.0.1
    /// signed by a CA whose PEM is [`MyServer::ca_pem`]; a second, unrelated CA is
    /// [`MyServer::other_ca_pem`].
    pub fn start_tls() -> MyServer {
        Self::start_with(true)
    }

    pub fn ca_pem(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn other_ca_pem(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    fn start_with(tls: bool) -> MyServer {
        let dir = tempfile::Builder::new()
            .prefix("liteload-my")
            .tempdir_in("/tmp")
            .unwrap();
        let data = dir.path().join("data");
        if tls {
            pki::write_pki(dir.path());
        }
        let user = if is_root() { "root" } else { "" };
        // A temp directory of its own: a starting server deletes every `#sql*` file in
        // its tmpdir, another server's temporary tables included.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let mut install = Command::new(tool("mariadb-install-db"));
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if !user.is_empty() {
            install.arg("--user=root");
        }
        let out = install.output().unwrap();
        assert!(
            out.status.success(),
            "mariadb-install-db: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // A free port is picked, then let go: another test's server may take it first
        // (tests run at once, other test binaries too). Such a start fails, or answers
        // on that port as the other server: then it starts again on another port.
        let mut dir = Some(dir);
        for _attempt in 0..8 {
            let port = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                l.local_addr().unwrap().port()
            };
            let d = dir.take().expect("the directory");
            let mut server = Command::new(tool("mariadbd"));
            server
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", tmp.display()))
                .arg(format!("--socket={}", d.path().join("sock").display()))
                .arg(format!("--port={port}"))
                .args([
                    "--bind-address=127.0.0.1",
                    "--innodb-buffer-pool-size=128M",
                    "--innodb-log-file-size=64M",
                    "--innodb-flush-log-at-trx-commit=0",
                    "--skip-log-bin",
                    "--default-time-zone=+05:30",
                ])
                .arg(format!(
                    "--log-error={}",
                    d.path().join("err.log").display()
                ))
                .arg(format!("--pid-file={}", d.path().join("pid").display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if !user.is_empty() {
                server.arg("--user=root");
            }
            if tls {
                let p = d.path().display();
                server.args([
                    format!("--ssl-cert={p}/server.crt"),
                    format!("--ssl-key={p}/server.key"),
                    format!("--ssl-ca={p}/ca.pem"),
                ]);
            }
            let child = server.spawn().unwrap();
            let mut s = MyServer {
                dir: d,
                port,
                child,
            };
            if s.came_up() {
                return s;
            }
            s.kill();
            dir = Some(std::mem::replace(&mut s.dir, tempfile::tempdir().unwrap()));
            let _ = std::fs::remove_file(dir.as_ref().unwrap().path().join("sock"));
        }
        panic!(
            "MariaDB did not start: {}",
            std::fs::read_to_string(dir.unwrap().path().join("err.log")).unwrap_or_default()
        );
    }

    /// Whether the server started (made its `app` user) and its port is its own.
    fn came_up(&mut self) -> bool {
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let Ok(mut root) = self.try_root() else {
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            };
            if root
                .query_drop("SELECT 1 FROM mysql.user WHERE user = 'app'")
                .is_ok()
            {
                let made: Option<i64> = root
                    .query_first("SELECT count(*) FROM mysql.user WHERE user = 'app'")
                    .unwrap();
                if made == Some(0) {
                    root.query_drop(format!("CREATE USER app@'%' IDENTIFIED BY '{PASSWORD}'"))
                        .unwrap();
                    root.query_drop("GRANT ALL ON *.* TO app@'%'").unwrap();
                }
            }
            let ours = mysql::Conn::new(
                mysql::OptsBuilder::new()
                    .ip_or_hostname(Some("127.0.0.1"))
                    .tcp_port(self.port)
                    .user(Some("app"))
                    .pass(Some(PASSWORD))
                    .prefer_socket(false),
            )
            .and_then(|mut c| c.query_first::<String, _>("SELECT @@socket"));
            return matches!(ours, Ok(Some(sock)) if sock == self.socket().display().to_string());
        }
        false
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// A URI for `root` over the socket.
    pub fn socket_url(&self, db: &str) -> String {
        format!("mysql://root@/{db}?socket={}", self.socket().display())
    }

    /// A URI over TCP for `app`, without its password.
    pub fn tcp_url(&self, db: &str) -> String {
        format!("mysql://app@127.0.0.1:{}/{db}?ssl-mode=DISABLED", self.port)
    }

    /// A URI over TCP for `app`, with its password (percent-encoded).
    pub fn tcp_url_with_password(&self, db: &str) -> String {
        format!(
            "mysql://app:{}@127.0.0.1:{}/{db}?ssl-mode=DISABLED",
            PASSWORD.replace(' ', "%20"),
            self.port
        )
    }

    fn try_root(&self) -> mysql::Result<mysql::Conn> {
        mysql::Conn::new(
            mysql::OptsBuilder::new()
                .socket(Some(self.socket().to_str().unwrap()))
                .user(Some("root"))
                .prefer_socket(false),
        )
    }

    /// `root` on the socket.
    pub fn root(&self) -> mysql::Conn {
        self.try_root().unwrap()
    }

    /// `root` on the socket in database `db`.
    pub fn conn(&self, db: &str) -> mysql::Conn {
        let mut c = self.root();
        c.query_drop(format!("USE `{db}`")).unwrap();
        c
    }

    /// Makes database `db` and runs `sql` in it (several statements, each checked:
    /// dropping a result unread would hide a later statement's error).
    pub fn database(&self, db: &str, sql: &str) {
        self.root()
            .query_drop(format!("CREATE DATABASE `{db}`"))
            .unwrap();
        let mut c = self.conn(db);
        let mut r = c.query_iter(sql).unwrap();
        while let Some(set) = r.iter() {
            for row in set {
                row.unwrap();
            }
        }
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for MyServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}
