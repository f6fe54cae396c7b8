//! The embedding API: inputs that are not files, error kinds and hints, cancelling.
//! Every database is checked by SQLite (`integrity_check`) and read back.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use liteload::generate::{generate, GenerateOptions};
use liteload::Engine;
use liteload::{import, ErrorKind, Format, ImportOptions, Input, Progress};
use rusqlite::Connection;

type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn checked(db: &Path) -> R<Connection> {
    let conn = Connection::open(db)?;
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(conn)
}

fn opts(engine: Engine) -> ImportOptions {
    {
        let mut built = ImportOptions::default();
        built.engine = engine;
        built
    }
}

const ENGINES: [Engine; 2] = [Engine::Sqlite, Engine::Direct];

#[derive(serde::Serialize, Clone, Debug, PartialEq)]
struct Person {
    id: i64,
    name: String,
    score: f64,
    nick: Option<String>,
}

fn hostile(i: i64) -> Person {
    let names = [
        "Ada",
        "",
        "zoë \u{1F600}",
        "a\0b",
        "007",
        "1e3",
        "'; DROP TABLE x; --",
        "\u{FEFF}x",
    ];
    Person {
        id: i * 7 - 3,
        name: names[i as usize % names.len()].repeat(1 + (i as usize % 3)),
        score: i as f64 / 3.0,
        nick: (i % 4 != 0).then(|| format!("n{i}")),
    }
}

/// Structs through serde are stored as their values, by both engines.
#[test]
fn serialized_structs_are_stored_as_their_values() -> R {
    let dir = tempfile::tempdir()?;
    let people: Vec<Person> = (0..5000).map(hostile).collect();
    for engine in ENGINES {
        let db = dir.path().join(format!("{engine:?}.db"));
        let input = Input::serialized("people", people.clone());
        let s = import(&db, &[input], &opts(engine), &Progress::default())?;
        assert_eq!(
            (s.rows, s.tables.clone()),
            (5000, vec!["people".to_string()])
        );
        let conn = checked(&db)?;
        let mut st = conn.prepare("SELECT id, name, score, nick FROM people ORDER BY rowid")?;
        let back: Vec<Person> = st
            .query_map([], |r| {
                Ok(Person {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    score: r.get(2)?,
                    nick: r.get(3)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        assert_eq!(back, people, "{engine:?}");
        let types: String = conn.query_row(
            "SELECT group_concat(type, ',') FROM pragma_table_info('people')",
            [],
            |r| r.get(0),
        )?;
        assert_eq!(types, "INTEGER,TEXT,REAL,TEXT");
    }
    Ok(())
}

#[test]
fn rows_of_values_take_the_given_column_names() -> R {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("r.db");
    let rows = vec![
        vec![
            serde_json::json!(1),
            "x\u{e9}".into(),
            serde_json::Value::Null,
        ],
        vec![2.into(), "y".into()], // short: the rest is NULL
    ];
    let input = Input::rows("t", ["a", "b", "c c"], rows);
    import(
        &db,
        &[input],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    let conn = checked(&db)?;
    let got: Vec<(i64, String, Option<String>)> = conn
        .prepare("SELECT a, b, \"c c\" FROM t ORDER BY a")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(
        got,
        vec![(1, "x\u{e9}".into(), None), (2, "y".into(), None)]
    );

    let long = Input::rows("u", ["a"], vec![vec![1, 2]]);
    let e = import(
        dir.path().join("u.db"),
        &[long],
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Input { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "u:1:1: record 1: the row has a value 2 but there are 1 columns"
    );
    Ok(())
}

/// gzip from a reader, named like a file: the name gives gzip, the format and the table.
#[test]
fn a_reader_is_read_like_the_file_it_is_named_after() -> R {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let dir = tempfile::tempdir()?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all("k\tv\n1\tÅ\n2\t\u{1F600}\n".as_bytes())?;
    let gz = gz.finish()?;
    for engine in ENGINES {
        let db = dir.path().join(format!("{engine:?}.db"));
        let input = Input::reader("pairs.tsv.gz", std::io::Cursor::new(gz.clone()));
        import(
            &db,
            std::slice::from_ref(&input),
            &opts(engine),
            &Progress::default(),
        )?;
        let conn = checked(&db)?;
        let v: String =
            conn.query_row("SELECT group_concat(v, '|') FROM pairs", [], |r| r.get(0))?;
        assert_eq!(v, "Å|\u{1F600}");
        // A reader is read once: the same input again is refused, and says why.
        let again = import(
            dir.path().join("again.db"),
            &[input],
            &opts(engine),
            &Progress::default(),
        )
        .unwrap_err();
        assert!(matches!(again.kind(), ErrorKind::Usage(_)));
        assert_eq!(
            again.to_string(),
            "pairs.tsv.gz: this reader was read already; a reader input is read once"
        );
    }
    // Bytes in memory can be loaded again and again.
    let bytes = Input::bytes("b.csv", b"x\n1\n".to_vec());
    for n in 0..2 {
        let db = dir.path().join(format!("b{n}.db"));
        assert_eq!(
            import(
                &db,
                std::slice::from_ref(&bytes),
                &ImportOptions::default(),
                &Progress::default()
            )?
            .rows,
            1
        );
    }
    Ok(())
}

/// A reader that fails at once: its own error comes back (kind and words), from the
/// first look at its bytes and again from any later use, never "read already".
#[test]
fn a_reader_that_fails_gives_its_own_error() -> R {
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the peer went away",
            ))
        }
    }
    let dir = tempfile::tempdir()?;
    for engine in ENGINES {
        let input = Input::reader("feed.csv", Failing);
        for attempt in 0..2 {
            let db = dir.path().join(format!("{engine:?}{attempt}.db"));
            let e = import(
                &db,
                std::slice::from_ref(&input),
                &opts(engine),
                &Progress::default(),
            )
            .unwrap_err();
            match e.kind() {
                ErrorKind::Io { source, .. } => {
                    assert_eq!(source.kind(), std::io::ErrorKind::ConnectionReset, "{e}")
                }
                other => panic!("{other:?}"),
            }
            assert!(e.to_string().contains("the peer went away"), "{e}");
            assert!(!db.exists());
        }
    }
    Ok(())
}

/// A database in a directory that does not exist: an I/O error that names the path
/// given, not an internal temp file, from every engine and every job.
#[test]
fn a_database_in_a_missing_directory_is_an_io_error_naming_it() -> R {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("no such dir").join("x.db");
    let input = Input::bytes("b.csv", b"x\n1\n".to_vec());
    let mut errors = vec![];
    for engine in ENGINES {
        errors.push(
            import(
                &db,
                std::slice::from_ref(&input),
                &opts(engine),
                &Progress::default(),
            )
            .unwrap_err(),
        );
    }
    let mut g = GenerateOptions::default();
    g.rows = 10;
    errors.push(generate(&db, &g, &Progress::default()).unwrap_err());
    for e in errors {
        match e.kind() {
            ErrorKind::Io { path, source } => {
                assert_eq!(path.as_deref(), Some(db.as_path()), "{e}");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!e.to_string().contains("liteload-tmp"), "{e}");
    }
    Ok(())
}

/// Bad input read through the library: the error says where, and its hint names the
/// library's setting, never a command-line flag; a front end words it its own way.
#[test]
fn errors_name_settings_not_flags() -> R {
    let dir = tempfile::tempdir()?;
    /// (name, body, format, sniff, error)
    type Case<'a> = (&'a str, &'a [u8], Option<Format>, bool, &'a str);
    let cases: [Case<'_>; 6] = [
        ("r.csv", b"a,b\n1\n", None, true, "r.csv:2:1: record 1: expected 2 fields, found 1 (set ReadOptions::ragged to Pad or Truncate to accept such rows)"),
        ("u.csv", b"a\n\xE9\n", None, true, "u.csv:2:1: record 1, field 1 \"a\": expected UTF-8 text, found the byte 0xE9 (name the input's encoding in ReadOptions::encoding, e.g. Latin1)"),
        ("n.csv", b"a\nx\0\n", None, true, "n.csv:2:2: record 1, field 1 \"a\": expected text, found a NUL byte (is this a binary file or UTF-16? see ReadOptions::encoding)"),
        ("o.json", b"{\"a\":1}\n", None, true, "o.json:1:1: expected a JSON array of objects, or an object with a member that holds one; this object has none (name the record path of a deeper one) (for one object per line use Format::Ndjson)"),
        ("noext", b"a\n1\n", None, false, "noext: cannot tell the format from the file name; name it in ImportOptions::format"),
        ("e.csv", b"name;price\nfoo;1,5\n", None, false, "e.csv:2:7: record 1: expected 1 fields, found 2 (the input looks ';'-separated: set ImportOptions::delimiter to it)"),
    ];
    for (i, (name, body, format, sniff, want)) in cases.into_iter().enumerate() {
        let o = {
            let mut built = ImportOptions::default();
            built.format = format;
            built.sniff = sniff;
            built
        };
        let db = dir.path().join(format!("{i}.db"));
        let e = import(
            &db,
            &[Input::bytes(name, body.to_vec())],
            &o,
            &Progress::default(),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), want);
        assert!(!e.to_string().contains("--"), "{e}");
        assert!(e.hint().is_some());
        let worded = e.display_with(&|h| format!(" <{h:?}>"));
        assert!(
            worded.ends_with('>') && !worded.contains("ReadOptions"),
            "{worded}"
        );
        assert!(!db.exists(), "a failed load leaves no file");
    }
    Ok(())
}

/// A reader that asks the load to stop once it has handed out `after` bytes.
struct CancelAfter<R> {
    inner: R,
    left: usize,
    progress: Arc<Progress>,
}

impl<R: Read> Read for CancelAfter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.saturating_sub(n);
        if self.left == 0 {
            self.progress.cancel();
        }
        Ok(n)
    }
}

fn many_rows() -> impl Read + Send + 'static {
    let rows = (0..400_000).map(|i| format!("{i},name {i}\n"));
    std::io::Cursor::new(format!("id,name\n{}", rows.collect::<String>()).into_bytes())
}

#[test]
fn a_cancelled_load_leaves_the_target_as_it_was() -> R {
    let dir = tempfile::tempdir()?;
    // Into a new file, both engines: no file.
    for engine in ENGINES {
        let db = dir.path().join(format!("new-{engine:?}.db"));
        let progress = Arc::new(Progress::default());
        let r = CancelAfter {
            inner: many_rows(),
            left: 1 << 20,
            progress: progress.clone(),
        };
        let e = import(&db, &[Input::reader("t.csv", r)], &opts(engine), &progress).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Interrupted), "{e:?}");
        assert!(e.is_interrupted());
        assert!(!db.exists(), "{engine:?}");
        assert!(std::fs::read_dir(dir.path())?.all(|f| !f
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("new-")));
    }
    // Into an existing file: its rows as they were.
    let db = dir.path().join("old.db");
    import(
        &db,
        &[Input::bytes("t.csv", b"id,name\n-1,kept\n".to_vec())],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    let progress = Arc::new(Progress::default());
    let r = CancelAfter {
        inner: many_rows(),
        left: 1 << 20,
        progress: progress.clone(),
    };
    let e = import(
        &db,
        &[Input::reader("t.csv", r)],
        &ImportOptions::default(),
        &progress,
    )
    .unwrap_err();
    assert!(e.is_interrupted());
    let n: i64 = checked(&db)?.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(n, 1);

    // Into the caller's transaction: nothing of the load, and the transaction goes on.
    let mut conn = Connection::open(dir.path().join("app.db"))?;
    let tx = conn.transaction()?;
    tx.execute_batch("CREATE TABLE mine(x); INSERT INTO mine VALUES (1)")?;
    let progress = Arc::new(Progress::default());
    let r = CancelAfter {
        inner: many_rows(),
        left: 1 << 20,
        progress: progress.clone(),
    };
    let e = liteload::import_into_connection(
        &tx,
        &[Input::reader("t.csv", r)],
        &ImportOptions::default(),
        &progress,
    )
    .unwrap_err();
    assert!(e.is_interrupted());
    tx.commit()?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    assert_eq!(tables, ["mine"]);

    // generate, stopped from another thread while it runs: no file.
    for engine in ENGINES {
        let db = dir.path().join(format!("gen-{engine:?}.db"));
        let progress = Progress::default();
        let o = {
            let mut built = GenerateOptions::default();
            built.rows = 50_000_000;
            built.engine = engine;
            built
        };
        let e = std::thread::scope(|s| {
            s.spawn(|| {
                while progress.rows.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                progress.cancel();
            });
            generate(&db, &o, &progress)
        })
        .unwrap_err();
        assert!(e.is_interrupted(), "{e:?}");
        assert!(!db.exists());
    }
    Ok(())
}

#[test]
fn a_full_disk_seen_by_sqlite_is_an_io_error() {
    let full = rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
        Some("database or disk is full".into()),
    );
    let e = liteload::Error::sqlite("inserting rows", full).in_file(Path::new("x.db"));
    match e.kind() {
        ErrorKind::Io { path, source } => {
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
            assert_eq!(path.as_deref(), Some(Path::new("x.db")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "x.db: inserting rows: database or disk is full"
    );
}

/// `IfExists`: appending is the default; `Fail` refuses before writing; `Replace` drops
/// the old table in the load's transaction, so a load that fails keeps the old table.
#[test]
fn an_existing_table_is_appended_to_refused_or_replaced() -> R {
    use liteload::IfExists;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let load = |body: &'static str, if_exists: IfExists| {
        let mut o = ImportOptions::default();
        o.table = Some("t".into());
        o.if_exists = if_exists;
        import(
            &db,
            &[Input::bytes("in.csv", body.as_bytes())],
            &o,
            &Progress::default(),
        )
    };
    let rows = |conn: &Connection| -> R<Vec<(String, String)>> {
        let mut st = conn.prepare("SELECT * FROM t ORDER BY 1")?;
        let got = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, rusqlite::types::Value>(0)?,
                    r.get::<_, rusqlite::types::Value>(1)?,
                ))
            })?
            .map(|r| r.map(|(a, b)| (format!("{a:?}"), format!("{b:?}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(got)
    };
    load("a,b\n1,x\n", IfExists::Fail)?;
    load("a,b\n2,y\n", IfExists::Append)?;
    assert_eq!(rows(&checked(&db)?)?.len(), 2);
    let err = load("a,b\n3,z\n", IfExists::Fail).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Schema(_)), "{err}");
    assert!(err.to_string().contains("exists already"), "{err}");
    assert_eq!(rows(&checked(&db)?)?.len(), 2);
    // A replacement whose input fails halfway leaves the old table and its rows.
    let err = load("c\n1\n2,3\n", IfExists::Replace).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Input { .. }), "{err}");
    assert_eq!(rows(&checked(&db)?)?.len(), 2);
    // A replacement with other columns: the old table is gone, the new one holds the input.
    load("n,\"we\"\"ird\"\nzoë,\u{1F600}\n", IfExists::Replace)?;
    let conn = checked(&db)?;
    assert_eq!(
        rows(&conn)?,
        vec![(
            "Text(\"zoë\")".to_string(),
            "Text(\"\u{1F600}\")".to_string()
        )]
    );
    let cols: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('t')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    assert_eq!(cols, ["n", "we\"ird"]);
    Ok(())
}

/// A reader that hands out one line every 50 ms, forever.
struct Trickle {
    n: u64,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let line = if self.n == 0 {
            "id,name\n".to_string()
        } else {
            format!("{},x\n", self.n)
        };
        self.n += 1;
        let k = line.len().min(buf.len());
        buf[..k].copy_from_slice(&line.as_bytes()[..k]);
        Ok(k)
    }
}

/// A cancel is seen at the reader's next read, not when a batch of thousands of rows
/// has filled (which a trickling reader takes minutes to do); the same counters, reset,
/// then carry a load to its end.
#[test]
fn a_cancel_stops_a_trickling_reader_at_its_next_read_and_reset_makes_progress_reusable() -> R {
    let dir = tempfile::tempdir()?;
    for engine in ENGINES {
        let db = dir.path().join(format!("trickle-{engine:?}.db"));
        let progress = Progress::default();
        let (e, after_cancel) = std::thread::scope(|s| {
            let load = s.spawn(|| {
                import(
                    &db,
                    &[Input::reader("t.csv", Trickle { n: 0 })],
                    &opts(engine),
                    &progress,
                )
            });
            std::thread::sleep(std::time::Duration::from_millis(400));
            progress.cancel();
            let cancelled = std::time::Instant::now();
            let e = load.join().expect("the load does not panic").unwrap_err();
            (e, cancelled.elapsed())
        });
        assert!(e.is_interrupted(), "{e:?}");
        // A bound far above one read (50 ms) and far below a batch (minutes).
        assert!(
            after_cancel < std::time::Duration::from_secs(5),
            "{after_cancel:?}"
        );
        assert!(!db.exists());
        // Still cancelled: the next load with these counters stops at once.
        let csv = || Input::bytes("t.csv", b"id,name\n1,a\n2,b\n".to_vec());
        assert!(import(&db, &[csv()], &opts(engine), &progress)
            .unwrap_err()
            .is_interrupted());
        progress.reset();
        assert_eq!(progress.rows.load(std::sync::atomic::Ordering::Relaxed), 0);
        let summary = import(db.clone(), &[csv()], &opts(engine), &progress)?;
        assert_eq!(summary.rows, 2);
        checked(&db)?;
    }
    Ok(())
}

/// The format, delimiter and quote have one place each, the load's own options: set on
/// its read options (what a plan resolves per input), they are refused, not ignored;
/// set where they belong, they are what the plan reads with.
#[test]
fn format_delimiter_and_quote_have_one_place() -> R {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("x.db");
    let input = || Input::bytes("t.txt", b"a|b\n'1|2'|3\n".to_vec());
    let refused: [fn(&mut ImportOptions); 3] = [
        |o| o.read.delimiter = b'|',
        |o| o.read.quote = Some(b'\''),
        |o| o.read.format = Format::Tsv,
    ];
    for set in refused {
        let mut o = ImportOptions::default();
        set(&mut o);
        let e = import(&db, &[input()], &o, &Progress::default()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{e}");
        assert!(e.to_string().contains("delimiter"), "{e}");
        assert!(!db.exists());
    }
    let o = ImportOptions::default()
        .format(Format::Csv)
        .delimiter(b'|')
        .quoting(liteload::Quoting::Char(b'\''))
        .table("t");
    let (read, _) = liteload::read_plan(&input(), &o)?;
    assert_eq!(
        (read.format, read.delimiter, read.quote),
        (Format::Csv, b'|', Some(b'\''))
    );
    import(&db, &[input()], &o, &Progress::default())?;
    let row: (String, i64) =
        checked(&db)?.query_row("SELECT a, b FROM t", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    assert_eq!(row, ("1|2".to_string(), 3));
    Ok(())
}
