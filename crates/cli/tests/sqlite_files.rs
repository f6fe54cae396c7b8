//! `liteload import OUT.db A.db B.db`: SQLite files told by their header and copied
//! table by table, with the flags that go with them and the refusals of those that do
//! not. (The merge rules themselves: the core's tests/sqlite_files.rs.)

mod common;

use std::path::Path;

use assert_cmd::Command;
use common::checked_rows;
use predicates::prelude::*;
use rusqlite::types::Value;

fn liteload(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary");
    c.current_dir(dir);
    c
}

fn db_with(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .and_then(|c| c.execute_batch(sql))
        .expect(sql);
}

#[test]
fn shards_merge_into_one_file_with_their_schema_and_the_flags_that_go_with_them() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let p = dir.path();
    // A name that would be CSV by its extension, and one without: the header decides.
    db_with(
        &p.join("a.csv"),
        "CREATE TABLE ev (id INTEGER PRIMARY KEY, what TEXT COLLATE NOCASE NOT NULL) STRICT;
         INSERT INTO ev VALUES (1, 'é'), (2, 'a' || char(0) || 'b');
         CREATE INDEX ev_what ON ev (what);
         CREATE TABLE log (m); INSERT INTO log (rowid, m) VALUES (10, 'x'), (20, 'y');
         CREATE TRIGGER tr AFTER INSERT ON log BEGIN SELECT 1; END;",
    );
    db_with(
        &p.join("b"),
        "CREATE TABLE ev (what TEXT, id INTEGER PRIMARY KEY);
         INSERT INTO ev VALUES ('z', 3);
         CREATE TABLE log (m); INSERT INTO log (rowid, m) VALUES (5, 'z');",
    );
    liteload(p)
        .args(["import", "m.db", "a.csv", "b"])
        .assert()
        .success()
        .stderr(predicate::str::contains("trigger \"tr\" (not copied)"));
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        checked_rows(&p.join("m.db"), "SELECT id, what FROM ev ORDER BY id").expect("ev"),
        [
            vec![Value::Integer(1), text("é")],
            vec![Value::Integer(2), text("a\u{0}b")],
            vec![Value::Integer(3), text("z")]
        ]
    );
    assert_eq!(
        checked_rows(
            &p.join("m.db"),
            "SELECT sql FROM sqlite_schema WHERE name IN ('ev', 'ev_what') ORDER BY name"
        )
        .expect("schema"),
        [
            vec![text(
                "CREATE TABLE ev (id INTEGER PRIMARY KEY, what TEXT COLLATE NOCASE NOT NULL) STRICT"
            )],
            vec![text("CREATE INDEX ev_what ON ev (what)")]
        ]
    );
    // Merged: numbered anew; with --keep-rowids: as the files have them.
    let rowids = |db: &str| checked_rows(&p.join(db), "SELECT rowid FROM log").expect("log");
    assert_eq!(
        rowids("m.db"),
        [
            [Value::Integer(1)],
            [Value::Integer(2)],
            [Value::Integer(3)]
        ]
    );
    liteload(p)
        .args([
            "import",
            "k.db",
            "a.csv",
            "b",
            "--keep-rowids",
            "--tables",
            "LOG",
        ])
        .assert()
        .success();
    assert_eq!(
        rowids("k.db"),
        [
            [Value::Integer(5)],
            [Value::Integer(10)],
            [Value::Integer(20)]
        ]
    );
    // A key in two files: refused by default (no file), decided by --on-conflict.
    db_with(&p.join("b"), "INSERT INTO ev VALUES ('dup', 1)");
    liteload(p)
        .args(["import", "c.db", "a.csv", "b"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("UNIQUE constraint failed: ev.id"));
    assert!(!p.join("c.db").exists());
    liteload(p)
        .args([
            "import",
            "c.db",
            "a.csv",
            "b",
            "--on-conflict",
            "ignore",
            "-q",
        ])
        .assert()
        .success();
    assert_eq!(
        checked_rows(&p.join("c.db"), "SELECT what FROM ev WHERE id = 1").expect("ev"),
        [[text("é")]]
    );
}

#[test]
fn flags_and_inputs_that_do_not_go_with_sqlite_files_are_usage_errors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let p = dir.path();
    db_with(
        &p.join("a.db"),
        "CREATE TABLE t (x); INSERT INTO t VALUES (1);",
    );
    std::fs::write(p.join("t.csv"), "x\n1\n").expect("write");
    for (args, says) in [
        (
            &["a.db", "t.csv"][..],
            "is a SQLite database, copied table by table",
        ),
        (
            &["t.csv", "--keep-rowids"][..],
            "--keep-rowids goes with SQLite files",
        ),
        (
            &["t.csv", "--tables", "t"][..],
            "--tables goes with a postgresql:// or mysql:// input or SQLite files",
        ),
        (
            &["a.db", "--pk", "x"][..],
            "keys come from the tables' own declarations",
        ),
        (&["a.db", "--table", "u"][..], "tables keep their names"),
        (
            &["a.db", "--keep-rowids", "--on-conflict", "replace"][..],
            "does not go with",
        ),
        (
            &["a.db", "--tables", "nope"][..],
            "no input has a table \"nope\"",
        ),
    ] {
        liteload(p)
            .args(["import", "o.db"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(!p.join("o.db").exists(), "{args:?}");
    }
}

#[test]
fn shards_declared_alike_are_copied_as_stored_and_direct_says_why_not_otherwise() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let p = dir.path();
    for i in 0..3 {
        db_with(
            &p.join(format!("s{i}.db")),
            &format!(
                "CREATE TABLE ev (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX ev_v ON ev (v);
                 INSERT INTO ev VALUES ({a}, 'é'), ({b}, 'a' || char(0) || 'b');",
                a = i * 10 + 1,
                b = i * 10 + 2
            ),
        );
    }
    liteload(p)
        .args(["import", "m.db", "s0.db", "s1.db", "s2.db", "--verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains("direct page writer"));
    assert_eq!(
        checked_rows(
            &p.join("m.db"),
            "SELECT count(*), sum(id), count(DISTINCT v) FROM ev INDEXED BY ev_v WHERE v > ''"
        )
        .expect("read"),
        vec![vec![
            Value::Integer(6),
            Value::Integer(69),
            Value::Integer(2)
        ]]
    );
    // Declared otherwise in one input: SQLite's road by default, refused with the
    // reason when the page writer is asked for.
    db_with(
        &p.join("other.db"),
        "CREATE TABLE ev (v TEXT, id INTEGER PRIMARY KEY); INSERT INTO ev VALUES ('z', 100);",
    );
    liteload(p)
        .args(["import", "n.db", "s0.db", "other.db", "--engine", "direct"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("declared otherwise in other.db"));
    assert!(!p.join("n.db").exists());
    liteload(p)
        .args(["import", "n.db", "s0.db", "other.db"])
        .assert()
        .success();
    assert_eq!(
        checked_rows(&p.join("n.db"), "SELECT count(*) FROM ev").expect("read"),
        vec![vec![Value::Integer(3)]]
    );
}

#[test]
fn sniff_tells_a_database_by_its_header_and_names_its_tables() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let p = dir.path();
    db_with(
        &p.join("shop.csv"),
        "CREATE TABLE \"order items\" (x); CREATE TABLE b (y); CREATE VIEW v AS SELECT 1;",
    );
    liteload(p)
        .args(["sniff", "shop.csv"])
        .assert()
        .success()
        .stdout(predicate::str::contains("sqlite"))
        .stdout(predicate::str::contains("(\"order items\", \"b\")"));
    liteload(p)
        .args(["sniff", "--json", "shop.csv"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            r#"{"input":"shop.csv","format":"sqlite","tables":["order items","b"]}"#,
        ));
}

/// Ctrl-C (SIGINT) during a merge by the page writer: the load stops with exit 130 and
/// leaves no file, not even its temporary one.
#[test]
fn ctrl_c_during_a_stored_merge_leaves_no_file() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let p = dir.path();
    let mut parts = vec![];
    for k in 0..4 {
        let name = format!("p{k}.db");
        db_with(
            &p.join(&name),
            &format!(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, w REAL); CREATE INDEX t_v ON t (v);
                 WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000)
                 INSERT INTO t SELECT x + {k} * 1000000, 'v' || (x % 7), x * 0.5 FROM c;"
            ),
        );
        parts.push(name);
    }
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("liteload"))
        .current_dir(p)
        .args(["import", "out.db", "-q"])
        .args(&parts)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("liteload starts");
    // Once the temporary file is there, the merge is under way (4M rows take a few
    // tenths of a second optimized).
    let start = std::time::Instant::now();
    while !std::fs::read_dir(p).expect("the dir").any(|e| {
        e.expect("an entry")
            .file_name()
            .to_string_lossy()
            .contains("out.db")
    }) {
        assert!(start.elapsed().as_secs() < 30, "no temporary file appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let out = child.wait_with_output().expect("liteload ends");
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing was changed"),
        "{out:?}"
    );
    let left: Vec<String> = std::fs::read_dir(p)
        .expect("the dir")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| !n.starts_with('p'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
