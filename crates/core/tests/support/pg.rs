//! A real PostgreSQL server for the tests, started from Debian's binaries
//! (`/usr/lib/postgresql/*/bin`, or `LITELOAD_PG_BIN`) in a temporary directory: a Unix
//! socket there and a free loopback port, `trust` on the socket and a password
//! (`secret`, SCRAM) over TCP, as an unprivileged user (`nobody`) when the tests run as
//! root. Stopped (immediately) when dropped. `.ci/run` installs the package when it is
//! missing.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use super::pki::write_pki;

pub struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    as_nobody: bool,
}

pub const PASSWORD: &str = "secret";

fn bin_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("LITELOAD_PG_BIN") {
        return PathBuf::from(p);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .filter(|p| p.join("initdb").exists())
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found
        .pop()
        .expect("PostgreSQL's server binaries (apt-get install postgresql; or set LITELOAD_PG_BIN)")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PgServer {
    pub fn start() -> PgServer {
        Self::start_with(false)
    }

    /// A server that also speaks TLS, with a certificate for `localhost` and 127.0.0.1
    /// signed by a CA whose PEM is [`PgServer::ca_pem`]; a second, unrelated CA is
    /// [`PgServer::other_ca_pem`].
    pub fn start_tls() -> PgServer {
        Self::start_with(true)
    }

    pub fn ca_pem(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn other_ca_pem(&self) -> std::path::PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    fn start_with(tls: bool) -> PgServer {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("liteload-pg")
            .tempdir_in("/tmp")
            .unwrap();
        let as_nobody = is_root();
        std::fs::write(dir.path().join("pw"), PASSWORD).unwrap();
        if tls {
            write_pki(dir.path());
        }
        if as_nobody {
            let ok = Command::new("chown")
                .args(["-R", "nobody:nogroup"])
                .arg(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown of the server's directory");
        }
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let server = PgServer {
            dir,
            bin,
            port,
            as_nobody,
        };
        let data = server.dir.path().join("data");
        server.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--pwfile",
                server.dir.path().join("pw").to_str().unwrap(),
                "-N",
            ],
        );
        let mut opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            server.dir.path().display()
        );
        if tls {
            let d = server.dir.path().display();
            opts.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
            ));
        }
        server.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                server.dir.path().join("log").to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        server
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let out = if self.as_nobody {
            Command::new("runuser")
                .args(["-u", "nobody", "--"])
                .arg(&exe)
                .args(args)
                .output()
        } else {
            Command::new(&exe).args(args).output()
        }
        .unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A URI over the Unix socket (trusted: no password).
    pub fn socket_url(&self, db: &str) -> String {
        format!(
            "postgresql://postgres@/{db}?host={}&port={}",
            self.dir.path().display(),
            self.port
        )
    }

    /// A URI over TCP on loopback, without the password (it needs one).
    pub fn tcp_url(&self, db: &str) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// A client on the socket.
    pub fn client(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(
            &format!(
                "host={} port={} user=postgres dbname={db}",
                self.dir.path().display(),
                self.port
            ),
            postgres::NoTls,
        )
        .unwrap()
    }

    /// Makes database `db` and runs `sql` in it.
    pub fn database(&self, db: &str, sql: &str) {
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE \"{db}\""))
            .unwrap();
        self.client(db).batch_execute(sql).unwrap();
    }

    /// Stops the server at once (as a crash would).
    pub fn kill(&self) {
        let data = self.dir.path().join("data");
        self.run(
            "pg_ctl",
            &[
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        if data.join("postmaster.pid").exists() {
            let exe = self.bin.join("pg_ctl");
            let mut c = if self.as_nobody {
                let mut c = Command::new("runuser");
                c.args(["-u", "nobody", "--"]).arg(exe);
                c
            } else {
                Command::new(exe)
            };
            let _ = c
                .args([
                    "-D",
                    data.to_str().unwrap(),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ])
                .output();
        }
    }
}
