//! `liteload import DB mysql://…` as a user runs it, against a real MariaDB server (the
//! library's test harness): a database, the password from `MYSQL_PWD` or an option file
//! (never printed), the exit codes of its failures, and Ctrl-C in the middle of a copy
//! leaving no file.

#[path = "../../core/tests/support/mysql.rs"]
mod mysql_server;
#[path = "../../core/tests/support/pki.rs"]
mod pki;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql_server::MyServer;

fn liteload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_liteload"))
}

#[test]
fn a_database_its_passwords_failures_and_ctrl_c() {
    let my = MyServer::start();
    my.database(
        "shop",
        "CREATE TABLE orders (id INT PRIMARY KEY, total DECIMAL(10,2), at TIMESTAMP NULL);
         INSERT INTO orders SELECT seq, seq / 100, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq MINUTE
           FROM seq_1_to_1000;
         CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(200));
         INSERT INTO big SELECT seq, REPEAT('v', 200) FROM seq_1_to_1500000;",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    let out = liteload()
        .arg("import")
        .arg(&db)
        .arg(my.socket_url("shop"))
        .args(["--tables", "orders"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("1,000 rows") && said.contains("\"orders\""),
        "{said}"
    );
    let c = liteload::rusqlite::Connection::open(&db).unwrap();
    let (ok, total, at): (String, String, String) = c
        .query_row(
            "SELECT (SELECT integrity_check FROM pragma_integrity_check), total, at FROM orders WHERE id = 150",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    // The server runs in +05:30: the instant is written in UTC.
    assert_eq!(
        (ok.as_str(), total.as_str(), at.as_str()),
        ("ok", "1.50", "2025-12-31T21:00:00Z")
    );
    drop(c);

    // The password from MYSQL_PWD, then from an option file in HOME; never printed.
    let count = |out: &std::path::Path, envs: &[(&str, &str)]| {
        let mut cmd = liteload();
        cmd.arg("import").arg(out).arg(my.tcp_url("shop")).args([
            "--query",
            "SELECT count(*) AS n FROM orders",
            "--table",
            "n",
        ]);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.env_remove("MYSQL_PWD")
            .envs(envs.iter().copied())
            .output()
            .unwrap()
    };
    let home = tempfile::tempdir().unwrap();
    let from_env = dir.path().join("env.db");
    let out = count(
        &from_env,
        &[
            ("MYSQL_PWD", mysql_server::PASSWORD),
            ("HOME", home.path().to_str().unwrap()),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        home.path().join(".my.cnf"),
        format!(
            "[mysqld]\npassword=wrong\n[client]\npassword=\"{}\"\n",
            mysql_server::PASSWORD
        ),
    )
    .unwrap();
    let from_file = dir.path().join("file.db");
    let out = count(&from_file, &[("HOME", home.path().to_str().unwrap())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: i64 = liteload::rusqlite::Connection::open(&from_file)
        .unwrap()
        .query_row("SELECT n FROM n", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1000);
    let wrong = dir.path().join("wrong.db");
    let out = count(&wrong, &[("MYSQL_PWD", "not it"), ("HOME", "/nonexistent")]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Access denied") && !err.contains("not it"),
        "{err}"
    );
    assert!(!wrong.exists());
    // A missing table is a usage error, as are views with a query.
    let missing = liteload()
        .arg("import")
        .arg(&wrong)
        .arg(my.socket_url("shop"))
        .args(["--tables", "nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let views = liteload()
        .arg("import")
        .arg(&wrong)
        .arg(my.socket_url("shop"))
        .args(["--views", "--query", "SELECT 1 AS x", "--table", "q"])
        .output()
        .unwrap();
    assert_eq!(views.status.code(), Some(2));
    assert!(!wrong.exists());

    // Ctrl-C while the big table is copied: exit 130, no file, no temp file.
    let mut child = liteload()
        .arg("import")
        .arg(&wrong)
        .arg(my.socket_url("shop"))
        .args(["--tables", "big"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tmp = dir.path().join("wrong.db.liteload-tmp");
    let start = Instant::now();
    while !tmp.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the copy never began"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the copy ended before it was stopped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !["shop.db", "env.db", "file.db"].contains(&n.to_str().unwrap()))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // The server is still serving: the copy's connections ended cleanly.
    let n: Option<i64> = my
        .conn("shop")
        .query_first("SELECT count(*) FROM big")
        .unwrap();
    assert_eq!(n, Some(1_500_000));
}
