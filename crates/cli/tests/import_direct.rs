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
    mixed_csv_from(0, rows)
}

/// [`mixed_csv`] with `n` (and the row's other cells) counted from `start`.
fn mixed_csv_from(start: usize, rows: usize) -> String {
    let mut s = String::from("n,big,price,note,when,mixed\n");
    for i in start..start + rows {
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
        let mixed = if i == start + rows - 3 {
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
        "loads one input (or typed inputs of one schema) into one table",
    ));
    import(
        d.path(),
        &["pk.db", "a.csv", "--pk", "x", "--engine", "direct"],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("--engine sqlite"));
    for f in ["two.db", "pk.db", "pk.db.liteload-tmp"] {
        assert!(!d.path().join(f).exists(), "{f} was left behind");
    }
    // An existing table the page writer cannot take (an index in descending order) is
    // refused, and the file kept as it was, byte for byte.
    import(d.path(), &["kept.db", "a.csv", "-q"])
        .assert()
        .success();
    rusqlite::Connection::open(d.path().join("kept.db"))?
        .execute_batch("PRAGMA journal_mode=DELETE; CREATE INDEX a_x ON a (x DESC);")?;
    let before = std::fs::read(d.path().join("kept.db"))?;
    import(
        d.path(),
        &["kept.db", "b.csv", "--table", "a", "--engine", "direct"],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("appends to a new table"));
    assert_eq!(std::fs::read(d.path().join("kept.db"))?, before);
    assert!(!d.path().join("kept.db-wal").exists());
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

/// Everything in the file: integrity_check, the schema, and every table's rows with
/// their rowids, in rowid order.
fn dump_all(db: &Path) -> rusqlite::Result<(String, Vec<String>, Vec<Vec<Value>>)> {
    let c = rusqlite::Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let mut st = c.prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY name")?;
    let mut schema = vec![];
    let mut tables = vec![];
    for row in st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })? {
        let (kind, name, sql) = row?;
        if kind == "table" {
            tables.push(name);
        }
        schema.push(sql);
    }
    let mut rows = vec![];
    for t in tables {
        let mut st = c.prepare(&format!("SELECT rowid, * FROM \"{t}\" ORDER BY rowid"))?;
        let n = st.column_count();
        for r in st.query_map([], |r| (0..n).map(|i| r.get(i)).collect())? {
            rows.push(r?);
        }
    }
    Ok((ok, schema, rows))
}

/// An existing database with a table of its own, in WAL mode as a balanced load
/// leaves it.
fn existing_db(path: &Path) -> rusqlite::Result<()> {
    let c = rusqlite::Connection::open(path)?;
    c.execute_batch(
        "PRAGMA journal_mode=WAL; CREATE TABLE other (a INTEGER, b TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
         INSERT INTO other SELECT i, printf('row %d é', i) FROM n;",
    )
}

/// Runs `import` with `args` on a copy of `base` named `name` and returns the output.
/// Unless SQLite's path or `unsafe` (which needs the file to itself) is asked for, a
/// connection of this process has the copy open
/// meanwhile (in WAL mode, holding its SHARED lock, as an application reading the file
/// does), which keeps the page writer from writing a WAL file in place: these tests are
/// of the side file.
fn import_into_copy(
    dir: &Path,
    base: &str,
    name: &str,
    args: &[&str],
) -> Result<String, Box<dyn std::error::Error>> {
    std::fs::copy(dir.join(base), dir.join(name))?;
    let reader = rusqlite::Connection::open(dir.join(name))?;
    if !args.contains(&"sqlite") && !args.contains(&"unsafe") {
        reader.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
    }
    let out = import(dir, &[&[name][..], args].concat()).output()?;
    drop(reader);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} {args:?}: {text}");
    Ok(text)
}

/// Into an existing database the page writer builds a side file that SQLite copies in
/// without decoding it: a new table (with indexes), and an existing plain table, under
/// every profile, hold exactly what SQLite's insert path writes: schema, rowids,
/// values and types; the rest of the file is untouched; the file is left in the
/// journal mode SQLite's path leaves it; no side file stays.
#[test]
fn appends_through_a_side_file_equal_sqlites_path() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path();
    std::fs::write(p.join("mixed.csv"), mixed_csv(8_000))?;
    existing_db(&p.join("base.db"))?;
    // The same columns again, for the append to an existing table.
    std::fs::write(p.join("more.csv"), mixed_csv_from(8_000, 3_000))?;

    let cases: [&[&str]; 5] = [
        &[],
        &[
            "--index",
            "note,big",
            "--unique-index",
            "n",
            "--index",
            "price",
        ],
        &["--durability", "durable"],
        &["--durability", "unsafe"],
        &["--index", "mixed"],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let (s, a) = (format!("s{i}.db"), format!("a{i}.db"));
        let mut args = vec!["mixed.csv"];
        args.extend(*extra);
        let sqlite_args: Vec<&str> = args.iter().copied().chain(["--engine", "sqlite"]).collect();
        import_into_copy(p, "base.db", &s, &sqlite_args)?;
        let out = import_into_copy(p, "base.db", &a, &args)?;
        assert!(out.contains("direct page writer"), "{extra:?}: {out}");
        // (`unsafe` has the file to itself: in place.)
        let road = if extra.contains(&"unsafe") {
            "written in place"
        } else {
            "without decoding them"
        };
        assert!(out.contains(road), "{extra:?}: {out}");
        // Then more rows into the table just made (indexed ones take SQLite's path).
        for db in [&s, &a] {
            import(p, &[db, "more.csv", "--table", "mixed", "-q"])
                .assert()
                .success();
        }
        let want = dump_all(&p.join(&s))?;
        assert_eq!(want.0, "ok");
        assert_eq!(want.2.len(), 5_000 + 8_000 + 3_000, "{extra:?}");
        assert_eq!(dump_all(&p.join(&a))?, want, "{extra:?}");
        let mode: String =
            rusqlite::Connection::open(p.join(&a))?
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let sqlite_mode: String =
            rusqlite::Connection::open(p.join(&s))?
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        assert_eq!(mode, sqlite_mode, "{extra:?}");
        assert!(!p.join(format!("{a}.liteload-append")).exists());
    }
    // The append to the existing plain table went through the side file too.
    std::fs::copy(p.join("base.db"), p.join("e.db"))?;
    import(p, &["e.db", "mixed.csv", "-q"]).assert().success();
    let out = import_into_copy(p, "e.db", "e2.db", &["more.csv", "--table", "mixed"])?;
    assert!(out.contains("without decoding them"), "{out}");
    Ok(())
}

/// Where the page writer cannot go (an index it does not write, a trigger, or columns
/// in another order), the default engine takes SQLite's path with the same result, and
/// `--engine direct` refuses, leaving the file as it was. An existing table with rows
/// and a plain index takes the page writer in place (its index merged), with the same
/// result. An empty table with a UNIQUE index or a CHECK constraint takes the side file
/// with the table's own definition (checked before the copy), with the same result as
/// SQLite's path.
#[test]
fn appends_the_transfer_cannot_take_go_to_sqlite() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path();
    std::fs::write(p.join("t.csv"), "a,b\n1,x\n2,y\n")?;
    std::fs::write(p.join("swapped.csv"), "b,a\nz,3\n")?;
    existing_db(&p.join("base.db"))?;
    let setup =
        "CREATE TABLE t (a INTEGER, b TEXT); CREATE INDEX ti ON t (a); INSERT INTO t VALUES (0, 's');";
    rusqlite::Connection::open(p.join("base.db"))?
        .execute_batch(&format!("DROP TABLE IF EXISTS t; {setup}"))?;
    let s = import_into_copy(
        p,
        "base.db",
        "s.db",
        &["t.csv", "--table", "t", "--engine", "sqlite"],
    )?;
    assert!(!s.contains("direct page writer"), "{s}");
    for engine in ["auto", "direct"] {
        // No other connection holds the file (one would keep the page writer out of a
        // file in WAL mode: then SQLite's path, or a refusal).
        std::fs::copy(p.join("base.db"), p.join("a.db"))?;
        let out = import(p, &["a.db", "t.csv", "--table", "t", "--engine", engine]).output()?;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.contains("index(es) merged"),
            "{engine}: {said}"
        );
        assert_eq!(
            dump_all(&p.join("a.db"))?,
            dump_all(&p.join("s.db"))?,
            "{engine}"
        );
    }
    // Another connection holding the file (in WAL mode) keeps the page writer out, and a
    // table with rows and indexes has no side file: SQLite's path, and the summary says
    // why.
    let held = import_into_copy(p, "base.db", "h.db", &["t.csv", "--table", "t"])?;
    assert!(
        held.contains("not written in place (another connection has the file open")
            && held.contains("through SQLite's insert path"),
        "{held}"
    );
    assert_eq!(dump_all(&p.join("h.db"))?, dump_all(&p.join("s.db"))?);
    for (setup, input) in [
        ("CREATE TABLE t (a INTEGER, b TEXT); CREATE INDEX ti ON t (a DESC);", "t.csv"),
        ("CREATE TABLE t (a INTEGER, b TEXT); CREATE INDEX ti ON t (b COLLATE NOCASE);", "t.csv"),
        ("CREATE TABLE t (a INTEGER, b TEXT); CREATE INDEX ti ON t (a) WHERE a > 0;", "t.csv"),
        ("CREATE TABLE t (a INTEGER, b TEXT); CREATE INDEX ti ON t (a + 1);", "t.csv"),
        ("CREATE TABLE t (a INTEGER, b TEXT); CREATE TRIGGER tg AFTER INSERT ON t BEGIN SELECT 1; END;", "t.csv"),
        ("CREATE TABLE t (a INTEGER, b TEXT);", "swapped.csv"),
    ] {
        rusqlite::Connection::open(p.join("base.db"))?
            .execute_batch(&format!("DROP TABLE IF EXISTS t; {setup}"))?;
        let s = import_into_copy(p, "base.db", "s.db", &[input, "--table", "t", "--engine", "sqlite"])?;
        let a = import_into_copy(p, "base.db", "a.db", &[input, "--table", "t"])?;
        assert!(!a.contains("direct page writer") && !s.contains("direct page writer"), "{setup}: {a}");
        assert_eq!(dump_all(&p.join("a.db"))?, dump_all(&p.join("s.db"))?, "{setup}");
        std::fs::copy(p.join("base.db"), p.join("r.db"))?;
        let before = dump_all(&p.join("r.db"))?;
        import(p, &["r.db", input, "--table", "t", "--engine", "direct"])
            .assert()
            .failure()
            .stderr(predicate::str::contains("--engine sqlite"));
        assert_eq!(dump_all(&p.join("r.db"))?, before, "{setup}");
        assert!(!p.join("r.db.liteload-append").exists());
    }
    for setup in [
        "CREATE TABLE t (a INTEGER, b TEXT); CREATE UNIQUE INDEX ti ON t (a);",
        "CREATE TABLE t (a INTEGER, b TEXT CHECK (b <> ''));",
    ] {
        rusqlite::Connection::open(p.join("base.db"))?
            .execute_batch(&format!("DROP TABLE IF EXISTS t; {setup}"))?;
        let s = import_into_copy(
            p,
            "base.db",
            "s.db",
            &["t.csv", "--table", "t", "--engine", "sqlite"],
        )?;
        let a = import_into_copy(p, "base.db", "a.db", &["t.csv", "--table", "t"])?;
        assert!(
            a.contains("direct page writer") && !s.contains("direct page writer"),
            "{setup}: {a}"
        );
        assert_eq!(
            dump_all(&p.join("a.db"))?,
            dump_all(&p.join("s.db"))?,
            "{setup}"
        );
    }
    Ok(())
}

/// The side file follows the database it goes into: another page size and auto-vacuum
/// are kept (and the records still copied); a UTF-16 database, which SQLite cannot
/// attach a UTF-8 file to, takes SQLite's path; a WAL database that another connection
/// holds open is appended through the WAL. Each equals SQLite's path.
#[test]
fn appends_follow_the_databases_own_format() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path();
    std::fs::write(p.join("mixed.csv"), mixed_csv(4_000))?;
    let formats = [
        ("PRAGMA page_size=1024; PRAGMA auto_vacuum=FULL;", true),
        ("PRAGMA encoding='UTF-16le';", false),
    ];
    for (pragmas, side) in formats {
        let _ = std::fs::remove_file(p.join("base.db"));
        let c = rusqlite::Connection::open(p.join("base.db"))?;
        c.execute_batch(pragmas)?;
        c.execute_batch("CREATE TABLE other (a); INSERT INTO other VALUES ('é');")?;
        drop(c);
        let s = import_into_copy(p, "base.db", "s.db", &["mixed.csv", "--engine", "sqlite"])?;
        let a = import_into_copy(p, "base.db", "a.db", &["mixed.csv"])?;
        assert!(!s.contains("direct page writer"));
        assert_eq!(a.contains("without decoding them"), side, "{pragmas}: {a}");
        assert_eq!(
            dump_all(&p.join("a.db"))?,
            dump_all(&p.join("s.db"))?,
            "{pragmas}"
        );
        let c = rusqlite::Connection::open(p.join("a.db"))?;
        let format: (i64, i64, String) = c.query_row(
            "SELECT (SELECT page_size FROM pragma_page_size), (SELECT auto_vacuum FROM pragma_auto_vacuum), (SELECT encoding FROM pragma_encoding)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let want: (i64, i64, String) = rusqlite::Connection::open(p.join("base.db"))?.query_row(
            "SELECT (SELECT page_size FROM pragma_page_size), (SELECT auto_vacuum FROM pragma_auto_vacuum), (SELECT encoding FROM pragma_encoding)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        assert_eq!(format, want, "{pragmas}");
    }
    // A reader holds the WAL database open: its journal mode cannot change.
    existing_db(&p.join("w.db"))?;
    std::fs::copy(p.join("w.db"), p.join("ws.db"))?;
    let reader = rusqlite::Connection::open(p.join("w.db"))?;
    let n: i64 = reader.query_row("SELECT count(*) FROM other", [], |r| r.get(0))?;
    assert_eq!(n, 5_000);
    let out = import(p, &["w.db", "mixed.csv"]).output()?;
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("through the WAL") && text.contains("without decoding them"),
        "{text}"
    );
    import(p, &["ws.db", "mixed.csv", "--engine", "sqlite", "-q"])
        .assert()
        .success();
    drop(reader);
    assert_eq!(dump_all(&p.join("w.db"))?, dump_all(&p.join("ws.db"))?);
    Ok(())
}

/// An existing empty table with indexes, written by hand beforehand (as schemas often
/// are; its own declared types): the side file holds the same indexes, and SQLite copies
/// rows and entries into it; with `--index` on top, and a key indexed twice. The same
/// as SQLite's path.
#[test]
fn appends_into_an_empty_indexed_table_copy_its_indexes_too() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path();
    std::fs::write(p.join("mixed.csv"), mixed_csv(5_000))?;
    existing_db(&p.join("base.db"))?;
    rusqlite::Connection::open(p.join("base.db"))?.execute_batch(
        "CREATE TABLE mixed (n int, big BIGINT, price DOUBLE, note VARCHAR(100), \"when\" TEXT, mixed INTEGER);
         CREATE INDEX m_note_big ON mixed (note, big);
         CREATE INDEX m_price ON mixed (price);
         CREATE INDEX m_price_again ON mixed (price);",
    )?;
    for extra in [&[][..], &["--index", "n"][..]] {
        let args: Vec<&str> = ["mixed.csv"]
            .iter()
            .copied()
            .chain(extra.iter().copied())
            .collect();
        let sqlite_args: Vec<&str> = args.iter().copied().chain(["--engine", "sqlite"]).collect();
        import_into_copy(p, "base.db", "s.db", &sqlite_args)?;
        let out = import_into_copy(p, "base.db", "a.db", &args)?;
        assert!(out.contains("without decoding them"), "{extra:?}: {out}");
        let want = dump_all(&p.join("s.db"))?;
        assert_eq!(want.0, "ok");
        assert_eq!(dump_all(&p.join("a.db"))?, want, "{extra:?}");
        // Each index reads the rows in the same order in both files.
        for (index, cols) in [("m_note_big", "note, big"), ("m_price_again", "price")] {
            let order = |db: &str| -> rusqlite::Result<Vec<i64>> {
                let c = rusqlite::Connection::open(p.join(db))?;
                let sql =
                    format!("SELECT rowid FROM mixed INDEXED BY {index} ORDER BY {cols}, rowid");
                let mut st = c.prepare(&sql)?;
                let rows = st.query_map([], |r| r.get(0))?.collect();
                rows
            };
            assert_eq!(order("a.db")?, order("s.db")?, "{index}");
        }
    }
    Ok(())
}

/// `--if-exists replace` drops the old table (rows, index, trigger) in the load's
/// transaction and copies the new one in: the same as SQLite's path; a load that fails
/// leaves the old table.
#[test]
fn replacing_a_table_goes_through_the_side_file() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path();
    std::fs::write(p.join("mixed.csv"), mixed_csv(3_000))?;
    existing_db(&p.join("base.db"))?;
    rusqlite::Connection::open(p.join("base.db"))?.execute_batch(
        "CREATE TABLE mixed (x TEXT NOT NULL, y); INSERT INTO mixed VALUES ('old', 1);
         CREATE INDEX mx ON mixed (y);
         CREATE TRIGGER mt AFTER INSERT ON mixed BEGIN SELECT 1; END;",
    )?;
    let args = ["mixed.csv", "--if-exists", "replace", "--index", "note"];
    let sqlite_args: Vec<&str> = args.iter().copied().chain(["--engine", "sqlite"]).collect();
    import_into_copy(p, "base.db", "s.db", &sqlite_args)?;
    let out = import_into_copy(p, "base.db", "a.db", &args)?;
    assert!(out.contains("without decoding them"), "{out}");
    let want = dump_all(&p.join("s.db"))?;
    assert_eq!(want.0, "ok");
    assert_eq!(dump_all(&p.join("a.db"))?, want);
    // A duplicate under --unique-index fails the load; the old table stays.
    std::fs::copy(p.join("base.db"), p.join("f.db"))?;
    let before = dump_all(&p.join("f.db"))?;
    std::fs::write(p.join("dup.csv"), "k\n1\n1\n")?;
    import(
        p,
        &[
            "f.db",
            "dup.csv",
            "--table",
            "mixed",
            "--if-exists",
            "replace",
            "--unique-index",
            "k",
        ],
    )
    .assert()
    .failure()
    .stderr(predicate::str::contains("UNIQUE"));
    assert_eq!(dump_all(&p.join("f.db"))?, before);
    Ok(())
}

/// Sparse objects as a feed has them, with everything that takes JSON off the fast path:
/// keys first seen long after the sample, a key differing from
/// another only in case, integers past 64 bits, a real in an integer column, nested
/// values, escapes, non-ASCII and NUL in text, repeated keys, `null`, booleans. Over
/// 8 MiB, so the file is read in parts on several threads.
fn feed_lines() -> Vec<String> {
    let mut lines = vec![];
    for i in 0..60_000u64 {
        let mut f = vec![
            format!("\"id\": {i}"),
            format!("\"pad\": \"{}\"", "p".repeat(100 + (i % 17) as usize)),
        ];
        match i % 11 {
            0 => f.push(r#""note": "h\u00e9llo, \"w\u00f6rld\" \u2713 nul\u0000end""#.into()),
            1 => f.push(r#""n": 9223372036854775808"#.into()),
            2 => f.push(r#""n": 2.5"#.into()),
            3 => f.push(r#""route": [{"lat": 1.50, "lon": -2}, 18446744073709551616]"#.into()),
            4 => f.push(r#""Note": "case""#.into()),
            5 => f.push(r#""n": null, "note": """#.into()),
            6 => f.push(format!("\"n\": {}, \"n\": {}", i, i + 1)),
            7 => f.push(r#""flag": true, "r": -0"#.into()),
            8 => f.push(r#""r": 1e300, "n": -9223372036854775808"#.into()),
            _ => f.push(format!("\"n\": {i}, \"r\": {}.25", i % 1000)),
        }
        if i >= 20_000 && i % 97 == 0 {
            f.push(format!("\"late\": {}", i % 50));
        }
        if i == 45_000 {
            f.push(r#""later": "x""#.into());
        }
        lines.push(format!("{{{}}}", f.join(", ")));
    }
    lines
}

/// A table as SQLite reads it back: integrity_check, its columns (name, declared type,
/// in order), its indexes' columns, and every row with each value's storage class.
type Table = (
    String,
    Vec<(String, String)>,
    Vec<Vec<String>>,
    Vec<Vec<Value>>,
);

fn read_table(db: &Path, table: &str) -> rusqlite::Result<Table> {
    let c = rusqlite::Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let mut st = c.prepare("SELECT name, type FROM pragma_table_xinfo(?1) ORDER BY cid")?;
    let columns = st
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<(String, String)>>>()?;
    let mut st = c.prepare(
        "SELECT group_concat(ii.name, ',') FROM pragma_index_list(?1) il, \
         pragma_index_info(il.name) ii GROUP BY il.name ORDER BY il.name",
    )?;
    let indexes = st
        .query_map([table], |r| Ok(vec![r.get::<_, String>(0)?]))?
        .collect::<rusqlite::Result<Vec<Vec<String>>>>()?;
    let select: Vec<String> = columns
        .iter()
        .map(|(n, _)| {
            let q = format!("\"{}\"", n.replace('"', "\"\""));
            format!("{q}, typeof({q})")
        })
        .collect();
    let mut st = c.prepare(&format!(
        "SELECT {} FROM \"{table}\" ORDER BY rowid",
        select.join(", ")
    ))?;
    let n = st.column_count();
    let rows = st
        .query_map([], |r| (0..n).map(|i| r.get(i)).collect())?
        .collect::<rusqlite::Result<Vec<Vec<Value>>>>()?;
    Ok((ok, columns, indexes, rows))
}

#[test]
fn json_through_the_page_writer_equals_sqlites_path() -> R {
    let d = tempfile::tempdir()?;
    let lines = feed_lines();
    std::fs::write(d.path().join("feed.ndjson"), lines.join("\n") + "\n")?;
    std::fs::write(
        d.path().join("feed.json"),
        format!("[\n{}\n]\n", lines.join(",\n")),
    )?;
    assert!(std::fs::metadata(d.path().join("feed.json"))?.len() > 8 << 20);
    for file in ["feed.ndjson", "feed.json"] {
        for db in ["d.db", "s.db"] {
            let _ = std::fs::remove_file(d.path().join(db));
        }
        let direct = import(
            d.path(),
            &[
                "d.db",
                file,
                "--table",
                "t",
                "--index",
                "n",
                "--index",
                "Note_2,id",
            ],
        )
        .output()?;
        let said = String::from_utf8_lossy(&direct.stdout).to_string()
            + &String::from_utf8_lossy(&direct.stderr);
        assert!(direct.status.success(), "{said}");
        assert!(said.contains("direct page writer"), "{said}");
        import(
            d.path(),
            &[
                "s.db",
                file,
                "--table",
                "t",
                "--index",
                "n",
                "--index",
                "Note_2,id",
                "--engine",
                "sqlite",
                "-q",
            ],
        )
        .assert()
        .success();
        let (ok, columns, indexes, rows) = read_table(&d.path().join("d.db"), "t")?;
        assert_eq!(ok, "ok");
        assert_eq!(rows.len(), 60_000);
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.ends_with(&["late", "later"]), "{names:?}");
        assert_eq!(indexes.len(), 2, "{indexes:?}");
        assert_eq!(
            (ok, columns, indexes, rows),
            read_table(&d.path().join("s.db"), "t")?,
            "{file}"
        );
        // As a new table of an existing file (rollback mode): in place, same table.
        for db in ["d.db", "s.db"] {
            let _ = std::fs::remove_file(d.path().join(db));
            let c = rusqlite::Connection::open(d.path().join(db))?;
            c.execute_batch("CREATE TABLE other(x); INSERT INTO other VALUES (1);")?;
        }
        let appended = import(d.path(), &["d.db", file, "--table", "t"]).output()?;
        let said = String::from_utf8_lossy(&appended.stdout).to_string()
            + &String::from_utf8_lossy(&appended.stderr);
        assert!(appended.status.success(), "{said}");
        assert!(said.contains("written in place"), "{said}");
        import(
            d.path(),
            &["s.db", file, "--table", "t", "--engine", "sqlite", "-q"],
        )
        .assert()
        .success();
        assert_eq!(
            read_table(&d.path().join("d.db"), "t")?,
            read_table(&d.path().join("s.db"), "t")?,
            "{file} appended"
        );
    }
    Ok(())
}
