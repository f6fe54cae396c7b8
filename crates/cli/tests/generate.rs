//! `liteload generate`, end to end: the default table, every generator, determinism
//! across thread counts, appends, errors before anything is written, and kill -9.

mod common;

use std::path::Path;
use std::process::Command as Process;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use rusqlite::types::Value;
use tempfile::TempDir;

use common::checked_rows;

type R = Result<(), Box<dyn std::error::Error>>;

fn generate(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the liteload binary is built");
    c.current_dir(dir).arg("generate").args(args);
    c
}

fn one(db: &Path, sql: &str) -> Result<Value, Box<dyn std::error::Error>> {
    Ok(checked_rows(db, sql)?.remove(0).remove(0))
}

/// A digest of every row, in rowid order.
fn digest(db: &Path, table: &str) -> Result<String, Box<dyn std::error::Error>> {
    let rows = checked_rows(db, &format!("SELECT * FROM \"{table}\" ORDER BY rowid"))?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in rows.iter().flatten() {
        for b in format!("{v:?}").bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    Ok(format!("{}:{h:016x}", rows.len()))
}

#[test]
fn the_default_table_is_the_write_ups() -> R {
    let d = TempDir::new()?;
    generate(d.path(), &["u.db", "--rows", "20000"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "Generated 20,000 rows of \"user\" in",
        ));
    let db = d.path().join("u.db");
    let sql = one(&db, "SELECT sql FROM sqlite_schema WHERE name = 'user'")?;
    assert_eq!(
        sql,
        Value::Text("CREATE TABLE \"user\" (\n  \"id\" INTEGER NOT NULL PRIMARY KEY,\n  \"area\" TEXT NOT NULL,\n  \"age\" INTEGER NOT NULL,\n  \"active\" INTEGER NOT NULL\n)".into())
    );
    let stats = checked_rows(
        &db,
        "SELECT count(*), min(id), max(id), sum(length(area) = 6 AND area NOT GLOB '*[^0-9]*'), \
         sum(age IN (5, 10, 15)), count(DISTINCT age), sum(active IN (0, 1)), count(DISTINCT active) FROM user",
    )?;
    let n = Value::Integer(20000);
    assert_eq!(
        stats[0],
        vec![
            n.clone(),
            Value::Integer(1),
            n.clone(),
            n.clone(),
            n.clone(),
            Value::Integer(3),
            n,
            Value::Integer(2)
        ]
    );
    Ok(())
}

#[test]
fn the_same_seed_gives_the_same_table_whatever_the_threads() -> R {
    let d = TempDir::new()?;
    let rows = "50000"; // several chunks
    let spec = [
        "--column",
        "id=rowid",
        "--column",
        "x=float:0..1;null=0.1",
        "--column",
        "u=uuid",
        "--column",
        "t=text:0..9",
    ];
    let mut digests = vec![];
    for (db, threads, seed) in [("a.db", "1", "7"), ("b.db", "3", "7"), ("c.db", "2", "8")] {
        generate(
            d.path(),
            &[
                db,
                "--rows",
                rows,
                "--threads",
                threads,
                "--seed",
                seed,
                "-q",
            ],
        )
        .args(spec)
        .assert()
        .success();
        digests.push(digest(&d.path().join(db), "user")?);
    }
    assert_eq!(digests[0], digests[1], "1 and 3 threads differ");
    assert_ne!(digests[0], digests[2], "another seed gave the same table");
    Ok(())
}

#[test]
fn every_generator_lands_typed_and_in_range() -> R {
    let d = TempDir::new()?;
    generate(
        d.path(),
        &[
            "g.db",
            "--rows",
            "20000",
            "--table",
            "g",
            "--column",
            "id=rowid",
            "--column",
            "i=int:-5..5",
            "--column",
            "f=float:10..20",
            "--column",
            "c=choice:red,green,blue;weights=0,1,1",
            "--column",
            "dg=digits:3",
            "--column",
            "tx=text:2..4;alphabet=xyz",
            "--column",
            "u=uuid",
            "--column",
            "ts=timestamp:2024-02-28..2024-03-01;format=%Y-%m-%dT%H:%M:%SZ",
            "--column",
            "ux=timestamp:2024-01-01..2024-01-02;format=unix",
            "--column",
            "k=const:42",
            "--column",
            "n=int:1..9;null=0.3",
        ],
    )
    .assert()
    .success();
    let db = d.path().join("g.db");
    let types: Vec<Vec<Value>> = checked_rows(&db, "SELECT type FROM pragma_table_info('g')")?;
    let types: Vec<String> = types.into_iter().map(|r| format!("{:?}", r[0])).collect();
    assert_eq!(
        types,
        [
            "INTEGER", "INTEGER", "REAL", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "INTEGER",
            "INTEGER", "INTEGER"
        ]
        .iter()
        .map(|t| format!("{:?}", Value::Text(t.to_string())))
        .collect::<Vec<_>>()
    );
    let checks = checked_rows(
        &db,
        "SELECT sum(i BETWEEN -5 AND 5), sum(f >= 10 AND f < 20 AND typeof(f) = 'real'), sum(c IN ('green','blue')), \
         sum(length(dg) = 3), sum(length(tx) BETWEEN 2 AND 4 AND tx NOT GLOB '*[^xyz]*'), \
         sum(u GLOB '????????-????-4???-[89ab]???-????????????'), \
         sum(ts >= '2024-02-28T00:00:00Z' AND ts < '2024-03-01T00:00:00Z'), sum(ts LIKE '2024-02-29%') > 0, \
         sum(ux >= 1704067200 AND ux < 1704153600), sum(k = 42), sum(n IS NULL) FROM g",
    )?;
    let all = Value::Integer(20000);
    let got = &checks[0];
    for (i, v) in got.iter().enumerate().take(7) {
        assert_eq!(v, &all, "check {i}");
    }
    assert_eq!(got[7], Value::Integer(1), "no leap day");
    assert_eq!(got[8], all);
    assert_eq!(got[9], all);
    let Value::Integer(nulls) = got[10] else {
        return Err("no count".into());
    };
    assert!(
        (5400..6600).contains(&nulls),
        "{nulls} NULLs at a fraction of 0.3 of 20000"
    );
    Ok(())
}

#[test]
fn a_spec_file_names_the_table_and_columns() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("spec.toml"),
        "table = \"people\"\n[[column]]\nname = \"id\"\ngen = \"rowid\"\n[[column]]\nname = \"email\"\ngen = \"text:5..12\"\nnull = 0.5\n",
    )?;
    generate(d.path(), &["p.db", "--rows", "1000", "--spec", "spec.toml"])
        .assert()
        .success();
    let db = d.path().join("p.db");
    let Value::Integer(nulls) = one(&db, "SELECT count(*) FROM people WHERE email IS NULL")? else {
        return Err("no count".into());
    };
    assert!(
        (350..650).contains(&nulls),
        "{nulls} NULLs at a fraction of 0.5 of 1000"
    );
    std::fs::write(
        d.path().join("bad.toml"),
        "[[column]]\nname = \"x\"\ngen = \"int:9..1\"\n",
    )?;
    generate(d.path(), &["b.db", "--rows", "10", "--spec", "bad.toml"])
        .assert()
        .code(2)
        .stderr("error: bad.toml: x=int: bad range 9..1: LO is above HI\n");
    Ok(())
}

#[test]
fn appends_continue_the_rowid_sequence() -> R {
    let d = TempDir::new()?;
    generate(d.path(), &["a.db", "--rows", "10000", "-q"])
        .assert()
        .success();
    generate(d.path(), &["a.db", "--rows", "500", "--seed", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(balanced)"));
    let db = d.path().join("a.db");
    assert_eq!(
        checked_rows(
            &db,
            "SELECT count(*), max(id), count(DISTINCT id) FROM user"
        )?[0],
        vec![
            Value::Integer(10500),
            Value::Integer(10500),
            Value::Integer(10500)
        ]
    );
    Ok(())
}

#[test]
fn bad_specs_fail_before_anything_is_written() -> R {
    let d = TempDir::new()?;
    generate(d.path(), &["x.db", "--rows", "10", "--column", "a=normal:0..1"])
        .assert()
        .code(2)
        .stderr("error: --column a: unknown generator \"normal\" (expected rowid, int, float, choice, digits, text, uuid, timestamp or const)\n");
    generate(
        d.path(),
        &["x.db", "--rows", "10", "--column", "a=int:3..1"],
    )
    .assert()
    .code(2)
    .stderr("error: --column a=int: bad range 3..1: LO is above HI\n");
    generate(
        d.path(),
        &[
            "x.db",
            "--rows",
            "10",
            "--column",
            "a=int:1..3",
            "--column",
            "A=int:1..3",
        ],
    )
    .assert()
    .code(2)
    .stderr("error: column \"A\" is named twice\n");
    generate(
        d.path(),
        &[
            "x.db",
            "--rows",
            "10",
            "--engine",
            "direct",
            "--generate-only",
        ],
    )
    .assert()
    .code(2)
    .stderr(predicate::str::contains("pick one"));
    // A spec file that is not UTF-8 (Latin-1, UTF-16) is a usage error, like any bad spec.
    for (name, bytes) in [
        (
            "latin1.toml",
            b"[[column]]\nname = \"caf\xe9\"\ngen = \"int:1..2\"\n".to_vec(),
        ),
        ("utf16.toml", b"\xff\xfe[\0[\0".to_vec()),
    ] {
        std::fs::write(d.path().join(name), bytes)?;
        generate(d.path(), &["x.db", "--rows", "10", "--spec", name])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("not UTF-8"));
    }
    assert!(!d.path().join("x.db").exists());
    generate(d.path(), &["y.db", "--rows", "10", "-q"])
        .assert()
        .success();
    let before = digest(&d.path().join("y.db"), "user")?;
    generate(d.path(), &["y.db", "--rows", "10", "--column", "id=rowid", "--column", "other=int:1..2"])
        .assert()
        .code(4)
        .stderr("error: table \"user\" exists with columns (id, area, age, active), but the spec has (id, other); load into another --table\n");
    assert_eq!(digest(&d.path().join("y.db"), "user")?, before);
    Ok(())
}

#[test]
fn summary_json_and_generate_only() -> R {
    let d = TempDir::new()?;
    let out = generate(d.path(), &["s.db", "--rows", "1000", "--summary-json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let s: serde_json::Value = serde_json::from_slice(&out)?;
    assert_eq!(s["rows"], 1000);
    assert_eq!(s["durability"], "atomic-new");
    generate(d.path(), &["none.db", "--rows", "1000", "--generate-only"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "Generated (not written) 1,000 rows",
        ));
    assert!(!d.path().join("none.db").exists());
    Ok(())
}

#[test]
fn kill_during_generate_leaves_no_file_or_a_complete_one() -> R {
    let d = TempDir::new()?;
    let rows: i64 = 4_000_000;
    let bin = assert_cmd::cargo::cargo_bin("liteload");
    let run = |db: &str| {
        Process::new(&bin)
            .current_dir(d.path())
            .args(["generate", "-q", db, "--rows", &rows.to_string()])
            .spawn()
    };
    let t0 = Instant::now();
    assert!(run("full.db")?.wait()?.success());
    let full = t0.elapsed();
    let expected = digest(&d.path().join("full.db"), "user")?;
    let mut interrupted = 0;
    for i in 0..5u32 {
        let delay = full.mul_f64(f64::from(i) / 5.0 + 0.05);
        let mut child = run("k.db")?;
        std::thread::sleep(delay.max(Duration::from_millis(5)));
        child.kill()?;
        child.wait()?;
        let db = d.path().join("k.db");
        if db.exists() {
            assert_eq!(
                digest(&db, "user")?,
                expected,
                "a killed run left a partial table"
            );
            std::fs::remove_file(&db)?;
        } else {
            interrupted += 1;
        }
    }
    assert!(
        interrupted > 0,
        "no kill landed during a run; the test proved nothing"
    );
    Ok(())
}

#[test]
fn the_direct_engine_writes_the_same_table_as_sqlite() -> Result<(), Box<dyn std::error::Error>> {
    let d = tempfile::tempdir()?;
    let spec = [
        "--column",
        "id=rowid",
        "--column",
        "area=digits:6",
        "--column",
        "age=choice:5,10,15",
        "--column",
        "score=float:0..1;null=0.1",
        "--column",
        "name=text:0..700",
        "--column",
        "tag=uuid",
    ];
    let mut direct = vec![
        "d.db", "--rows", "30000", "--seed", "7", "--engine", "direct", "--verify", "-q",
    ];
    direct.extend(spec);
    generate(d.path(), &direct).assert().success();
    let mut sqlite = vec![
        "s.db", "--rows", "30000", "--seed", "7", "--engine", "sqlite", "-q",
    ];
    sqlite.extend(spec);
    generate(d.path(), &sqlite).assert().success();
    let dump =
        |name: &str| -> rusqlite::Result<(String, Vec<Vec<rusqlite::types::Value>>, String)> {
            let c = rusqlite::Connection::open(d.path().join(name))?;
            let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
            let mut st = c.prepare("SELECT * FROM user ORDER BY id")?;
            let rows = st
                .query_map([], |r| (0..6).map(|i| r.get(i)).collect())?
                .collect::<rusqlite::Result<Vec<Vec<rusqlite::types::Value>>>>()?;
            let sql: String = c.query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'user'",
                [],
                |r| r.get(0),
            )?;
            Ok((ok, rows, sql))
        };
    let (ok, rows, sql) = dump("d.db")?;
    assert_eq!(ok, "ok");
    assert_eq!(rows.len(), 30_000);
    assert_eq!((ok, rows, sql), dump("s.db")?);
    assert!(!d.path().join("d.db.liteload-tmp").exists());
    // Several groups of rows filled on different threads (and more threads than cores),
    // rows whose text overflows into overflow pages, small pages: still the same table.
    let many = [
        "--rows",
        "300000",
        "--seed",
        "3",
        "--page-size",
        "1024",
        "--column",
        "id=rowid",
        "--column",
        "area=digits:6",
        "--column",
        "note=text:0..3000;null=0.98",
        "-q",
    ];
    for (db, engine, threads) in [("m1.db", "direct", "3"), ("m2.db", "sqlite", "1")] {
        let mut args = vec![db, "--engine", engine, "--threads", threads];
        args.extend(many);
        generate(d.path(), &args).assert().success();
    }
    let m = digest(&d.path().join("m1.db"), "user")?;
    assert!(m.starts_with("300000:"), "{m}");
    assert_eq!(m, digest(&d.path().join("m2.db"), "user")?);
    // A new file only: an existing one is refused and left as it was.
    let before = std::fs::metadata(d.path().join("d.db"))?.len();
    generate(d.path(), &["d.db", "--rows", "10", "--engine", "direct"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("builds a new file"));
    assert_eq!(std::fs::metadata(d.path().join("d.db"))?.len(), before);
    Ok(())
}

/// Ctrl-C stops a load at its next batch, leaves no file, and exits 130; the same for
/// SQLite's path into an existing database, whose rows stay as they were.
#[test]
fn an_interrupt_leaves_the_database_as_it_was() -> Result<(), Box<dyn std::error::Error>> {
    let d = TempDir::new()?;
    let bin = assert_cmd::cargo::cargo_bin("liteload");
    Command::new(&bin)
        .current_dir(d.path())
        .args(["generate", "old.db", "--rows", "10", "--quiet"])
        .assert()
        .success();
    for (db, engine) in [("new.db", "direct"), ("old.db", "sqlite")] {
        let child = Process::new(&bin)
            .current_dir(d.path())
            .args([
                "generate",
                db,
                "--rows",
                "500000000",
                "--engine",
                engine,
                "--quiet",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        // Once it is writing: its temp file or its journal is there.
        let start = Instant::now();
        while std::fs::read_dir(d.path())?.count() < 2 + usize::from(db == "old.db")
            && start.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        Process::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()?;
        let out = child.wait_with_output()?;
        assert_eq!(out.status.code(), Some(130), "{engine}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("stopped before the end; nothing was changed"),
            "{err}"
        );
    }
    assert!(!d.path().join("new.db").exists());
    let left: Vec<String> = std::fs::read_dir(d.path())?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert_eq!(left, ["old.db"], "no temp file or journal left");
    assert_eq!(
        checked_rows(&d.path().join("old.db"), "SELECT count(*) FROM user")?,
        vec![vec![Value::Integer(10)]]
    );
    Ok(())
}
