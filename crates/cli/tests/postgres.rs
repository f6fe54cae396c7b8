//! `liteload import DB postgresql://…` as a user runs it, against a real server (the
//! library's test harness): a whole schema, the exit codes of its failures, a password
//! from the environment never printed, and Ctrl-C in the middle of a copy leaving no
//! file.

#[path = "../../core/tests/support/pg.rs"]
mod pg;
#[path = "../../core/tests/support/pki.rs"]
mod pki;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pg::PgServer;

fn liteload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_liteload"))
}

#[test]
fn a_schema_its_failures_and_ctrl_c() {
    let server = PgServer::start();
    server.database(
        "shop",
        "CREATE TABLE orders (id int PRIMARY KEY, total numeric(10,2), at timestamptz);
         INSERT INTO orders SELECT g, g / 100.0, '2026-01-01'::timestamptz + g * interval '1 minute'
           FROM generate_series(1, 1000) g;
         CREATE TABLE big (v text);
         INSERT INTO big SELECT repeat('v', 200) FROM generate_series(1, 2000000);",
    );
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.db");
    let url = server.socket_url("shop");

    let out = liteload()
        .arg("import")
        .arg(&db)
        .arg(&url)
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
    assert_eq!(
        (ok.as_str(), total.as_str(), at.as_str()),
        ("ok", "1.50", "2026-01-01T02:30:00Z")
    );
    drop(c);

    // A password from the environment works over TCP and is never printed; a wrong one
    // is exit code 3, with no file left.
    let other = dir.path().join("other.db");
    let ok = liteload()
        .arg("import")
        .arg(&other)
        .arg(server.tcp_url("shop"))
        .args([
            "--query",
            "SELECT count(*) AS n FROM orders",
            "--table",
            "n",
        ])
        .env("PGPASSWORD", pg::PASSWORD)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    std::fs::remove_file(&other).unwrap();
    let bad = liteload()
        .arg("import")
        .arg(&other)
        .arg(server.tcp_url("shop"))
        .env("PGPASSWORD", "not-the-password")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(3), "{err}");
    assert!(
        err.contains("password authentication failed") && !err.contains("not-the-password"),
        "{err}"
    );
    assert!(!other.exists());

    // A table that is not there: a usage error naming the ones that are.
    let missing = liteload()
        .arg("import")
        .arg(&other)
        .arg(&url)
        .args(["--tables", "nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("(tables: big, orders)"));
    // Flags of a copy without a database to copy.
    let stray = liteload()
        .arg("import")
        .arg(&other)
        .arg(dir.path().join("x.csv"))
        .args(["--schema", "s"])
        .output()
        .unwrap();
    assert_eq!(stray.status.code(), Some(2));

    // Ctrl-C while the big table is copied: exit 130, no file, no temp file.
    let mut child = liteload()
        .arg("import")
        .arg(&other)
        .arg(&url)
        .args(["--tables", "big"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tmp = dir.path().join("other.db.liteload-tmp");
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
        .filter(|n| n != "shop.db")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
