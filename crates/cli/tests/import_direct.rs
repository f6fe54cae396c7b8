//! `liteload import --engine direct`: the page writer's file holds exactly what SQLite's
//! insert path writes (same schema, same rows, same values and types), passes SQLite's
//! and Debian sqlite3's integrity checks, and gets its indexes from SQLite afterwards.
//! What the page writer cannot do is refused without leaving a file.

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use rusqlite::types::Value;

type R = Result<(), Box<dyn std::error::Error>>;

fn import(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary builds");
    c.current_dir(dir).arg("import").args(args);
    c
}

type Dump = (String, Vec<String>, Vec<Vec<Value>>);

/// integrity_check, every schema entry's SQL, and every row of `table` in rowid order.
fn dump(db: &Path, table: &str) -> rusqlite::Result<Dump> {
    let c = rusqlite::Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let mut st = c.prepare("SELECT sql FROM sqlite_schema ORDER BY name")?;
    let schema = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    let mut st = c.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))?;
    let n = st.column_count();
    let rows = st
        .query_map([], |r| (0..n).map(|i| r.get(i)).collect())?
        .collect::<rusqlite::Result<Vec<Vec<Value>>>>()?;
    Ok((ok, schema, rows))
}

/// A CSV with every kind of cell: integers at width boundaries, reals, empty cells,
/// quoted text with commas and newlines, long text past the overflow threshold, unicode,
/// and a column whose type guess is wrong further down (stored as text, as SQLite would).
fn mixed_csv(rows: usize) -> String {
    let mut s = String::from("n,big,price,note,when,mixed\n");
    for i in 0..rows {
        let big = match i % 5 {
            0 => i64::MAX.to_string(),
            1 => i64::MIN.to_string(),
            2 => (1i64 << 47).to_string(),
            3 => "127".into(),
            _ => "-128".into(),
        };
        let note = match i % 7 {
            0 => String::new(),
            1 => "\"with, comma\"".into(),
            2 => "\"two\nlines\"".into(),
            3 => "x".repeat(5000 + i % 300),
            4 => "héllo wörld ✓".into(),
            _ => format!("note {i}"),
        };
        let mixed = if i == rows - 3 {
            "oops".to_string()
        } else {
            i.to_string()
        };
        let _ = writeln!(
            s,
            "{i},{big},{}.{},{note},2024-01-{:02},{mixed}",
            i % 1000,
            i % 100,
            1 + i % 28
        );
    }
    s
}

#[test]
fn direct_and_sqlite_write_the_same_table() -> R {
    let d = tempfile::tempdir()?;
    std::fs::write(d.path().join("mixed.csv"), mixed_csv(20_000))?;
    for (db, engine) in [("s.db", "sqlite"), ("d.db", "direct")] {
        import(
            d.path(),
            &[db, "mixed.csv", "--engine", engine, "--verify", "-q"],
        )
        .assert()
        .success();
    }
    let direct = dump(&d.path().join("d.db"), "mixed")?;
    assert_eq!(direct.0, "ok");
    assert_eq!(direct.2.len(), 20_000);
    assert_eq!(direct, dump(&d.path().join("s.db"), "mixed")?);
    // Debian's sqlite3 agrees the file is sound.
    if let Ok(out) = std::process::Command::new("sqlite3")
        .arg(d.path().join("d.db"))
        .arg("PRAGMA integrity_check; SELECT count(*) FROM mixed;")
        .output()
    {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n20000\n");
    }
    Ok(())
}

/// A file large enough to be parsed on several threads (past 8 MiB), with quoted
/// newlines, a type mismatch and bad records spread over it, reads as on one thread:
/// the same table, the same rejects with the same lines and columns.
#[test]
fn parallel_parsing_reads_as_one_thread_does() -> R {
    let d = tempfile::tempdir()?;
    let mut csv = String::new();
    for (i, line) in mixed_csv(20_000).lines().enumerate() {
        csv.push_str(line);
        csv.push('\n');
        if i % 4_999 == 17 {
            csv.push_str("1,2,3\n"); // too few fields
        }
    }
    assert!(
        csv.len() > 9 << 20,
        "big enough for several parsing threads"
    );
    std::fs::write(d.path().join("mixed.csv"), csv)?;
    let runs = [
        ("p.db", "direct", "2", "p.jsonl"),
        ("q.db", "direct", "1", "q.jsonl"),
        ("s.db", "sqlite", "3", "s.jsonl"),
    ];
    for (db, engine, threads, rejects) in runs {
        import(
            d.path(),
            &[
                db,
                "mixed.csv",
                "--engine",
                engine,
                "--parse-threads",
                threads,
                "--rejects",
                rejects,
                "-q",
            ],
        )
        .assert()
        .success();
    }
    let one = dump(&d.path().join("q.db"), "mixed")?;
    assert_eq!(one.2.len(), 20_000);
    assert_eq!(dump(&d.path().join("p.db"), "mixed")?, one);
    assert_eq!(dump(&d.path().join("s.db"), "mixed")?, one);
    let rejects = std::fs::read_to_string(d.path().join("q.jsonl"))?;
    assert_eq!(rejects.lines().count(), 5, "{rejects}");
    assert_eq!(std::fs::read_to_string(d.path().join("p.jsonl"))?, rejects);
    assert_eq!(std::fs::read_to_string(d.path().join("s.jsonl"))?, rejects);
    Ok(())
}

#[test]
fn direct_with_an_index_and_the_bundled_example() -> R {
    let d = tempfile::tempdir()?;
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/schedule.tsv");
    let ex = example.to_str().ok_or("path")?;
    import(d.path(), &["s.db", ex, "--index", "Stop", "-q"])
        .assert()
        .success();
    import(
        d.path(),
        &["d.db", ex, "--index", "Stop", "--engine", "direct", "-q"],
    )
    .assert()
    .success();
    let direct = dump(&d.path().join("d.db"), "schedule")?;
    assert!(direct.1.iter().any(|s| s.starts_with("CREATE INDEX")));
    assert_eq!(direct, dump(&d.path().join("s.db"), "schedule")?);
    // SQLite uses the index and keeps writing to the file.
    let c = rusqlite::Connection::open(d.path().join("d.db"))?;
    let plan: String = c.query_row(
        "EXPLAIN QUERY PLAN SELECT * FROM schedule WHERE Stop = 5",
        [],
        |r| r.get(3),
    )?;
    assert!(plan.contains("idx_schedule_Stop"), "{plan}");
    c.execute_batch("INSERT INTO schedule (Stop) VALUES (5); VACUUM;")?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(())
}

#[test]
fn what_the_page_writer_cannot_do_is_refused_and_leaves_no_file() -> R {
    let d = tempfile::tempdir()?;
    std::fs::write(d.path().join("a.csv"), "x,y\n1,2\n")?;
    std::fs::write(d.path().join("b.csv"), "x,y\n3,4\n")?;
    import(
        d.path(),
        &["two.db", "a.csv", "b.csv", "--engine", "direct"],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains(
        "loads one input (or typed inputs of one schema) into a new file",
    ));
    import(
        d.path(),
        &["pk.db", "a.csv", "--pk", "x", "--engine", "direct"],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("--engine sqlite"));
    // A column that appears after the sample (NDJSON) cannot be added to written pages.
    let mut nd = String::new();
    for i in 0..20_000 {
        let _ = writeln!(nd, "{{\"a\": {i}}}");
    }
    nd.push_str("{\"a\": 1, \"late\": 2}\n");
    std::fs::write(d.path().join("late.ndjson"), nd)?;
    import(d.path(), &["late.db", "late.ndjson", "--engine", "direct"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("appeared after the sample"));
    for f in ["two.db", "pk.db", "late.db", "late.db.liteload-tmp"] {
        assert!(!d.path().join(f).exists(), "{f} was left behind");
    }
    // An existing file is refused and kept as it was.
    import(d.path(), &["kept.db", "a.csv", "-q"])
        .assert()
        .success();
    let before = std::fs::read(d.path().join("kept.db"))?;
    import(d.path(), &["kept.db", "b.csv", "--engine", "direct"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("builds a new file"));
    assert_eq!(std::fs::read(d.path().join("kept.db"))?, before);
    Ok(())
}

#[test]
fn indexes_written_directly_equal_sqlites_and_the_memory_cap_falls_back() -> R {
    let d = tempfile::tempdir()?;
    std::fs::write(d.path().join("mixed.csv"), mixed_csv(6_000))?;
    let ix = [
        "--index",
        "note,big",
        "--unique-index",
        "n",
        "--index",
        "mixed",
        "--index",
        "note",
        "--index",
        "price",
    ];
    let mut runs: Vec<(&str, Vec<&str>)> = vec![
        ("s.db", vec!["--engine", "sqlite"]),
        ("d.db", vec!["--engine", "direct", "--verify"]),
        // 1,000 bytes of entries: every batch's entries go to a sorted run on disk, and
        // the runs are merged into the page writer.
        ("c.db", vec!["--engine", "direct", "--index-memory", "1000"]),
    ];
    for (db, extra) in runs.iter_mut() {
        let mut args = vec![*db, "mixed.csv", "-q"];
        args.extend(ix);
        args.append(extra);
        import(d.path(), &args).assert().success();
    }
    let want = dump(&d.path().join("s.db"), "mixed")?;
    assert_eq!(want.1.len(), 6, "{:?}", want.1);
    assert_eq!(dump(&d.path().join("d.db"), "mixed")?, want);
    assert_eq!(dump(&d.path().join("c.db"), "mixed")?, want);
    // Each index read in its own order gives the rows in the same order in all files
    // (integrity_check finds every entry, but not every order mistake).
    for (index, cols) in [
        ("idx_mixed_note_big", "note, big"),
        ("idx_mixed_n", "n"),
        ("idx_mixed_mixed", "mixed"),
        ("idx_mixed_note", "note"),
        ("idx_mixed_price", "price"),
    ] {
        let order = |db: &str| -> rusqlite::Result<Vec<i64>> {
            let c = rusqlite::Connection::open(d.path().join(db))?;
            let sql = format!("SELECT rowid FROM mixed INDEXED BY {index} ORDER BY {cols}, rowid");
            let mut st = c.prepare(&sql)?;
            let rows = st.query_map([], |r| r.get(0))?.collect();
            rows
        };
        let want = order("s.db")?;
        assert_eq!(want.len(), 6_000);
        assert_eq!(order("d.db")?, want, "{index}");
        assert_eq!(order("c.db")?, want, "{index}");
    }
    // A duplicate key under --unique-index fails, leaving no file.
    std::fs::write(d.path().join("dup.csv"), "k,v\n1,a\n2,b\n1,c\n")?;
    import(
        d.path(),
        &[
            "dup.db",
            "dup.csv",
            "--unique-index",
            "k",
            "--engine",
            "direct",
        ],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("UNIQUE"));
    assert!(!d.path().join("dup.db").exists());
    // The same through runs on disk: the duplicate meets its twin in the merge.
    let mut dup = String::from("k,v\n");
    for i in 0..50_000 {
        let _ = writeln!(dup, "{},x", if i == 49_999 { 7 } else { i });
    }
    std::fs::write(d.path().join("dup2.csv"), dup)?;
    import(
        d.path(),
        &[
            "dup2.db",
            "dup2.csv",
            "--unique-index",
            "k",
            "--engine",
            "direct",
            "--index-memory",
            "1000",
        ],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("UNIQUE"));
    assert!(!d.path().join("dup2.db").exists());
    let left: Vec<_> = std::fs::read_dir(d.path())?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    Ok(())
}
