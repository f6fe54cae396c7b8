//! Appends into an existing database through the page writer's side file (SQLite's
//! transfer optimization) hold exactly what SQLite's own insert path writes, for
//! arbitrary hostile CSV: the whole file is compared, schema and every row with its
//! rowid, values and storage classes, after `integrity_check`.

use std::path::Path;

use liteload::{import, Engine, EngineUsed, ImportOptions, IndexSpec, Input, Progress};
use proptest::prelude::*;
use rusqlite::types::Value;

type Dump = (String, Vec<String>, Vec<Vec<Value>>);

fn dump(db: &Path) -> rusqlite::Result<Dump> {
    let c = rusqlite::Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let mut st = c.prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY name")?;
    let entries = st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut rows = vec![];
    for (kind, name, _) in &entries {
        if kind != "table" {
            continue;
        }
        let sql = format!(
            "SELECT rowid, *, typeof(rowid) FROM {} ORDER BY rowid",
            liteload::quote_ident(name)
        );
        let mut st = c.prepare(&sql)?;
        let n = st.column_count();
        for r in st.query_map([], |r| (0..n).map(|i| r.get(i)).collect())? {
            rows.push(r?);
        }
        // Storage classes too: a value SQLite would keep as TEXT must not become a number.
        let types = format!(
            "SELECT {} FROM {} ORDER BY rowid",
            (0..n - 2)
                .map(|i| format!("typeof(\"c{i}\")"))
                .collect::<Vec<_>>()
                .join(", "),
            liteload::quote_ident(name)
        );
        if name == "t" {
            let mut st = c.prepare(&types)?;
            let m = st.column_count();
            for r in st.query_map([], |r| (0..m).map(|i| r.get(i)).collect())? {
                rows.push(r?);
            }
        }
    }
    Ok((ok, entries.into_iter().map(|e| e.2).collect(), rows))
}

/// One CSV field of a column of `kind` (0 integers, 1 reals, 2 text, 3 anything), now
/// and then one of another kind: numbers at the edges of their types, text that looks
/// like numbers, quotes, separators, newlines, non-ASCII, long text past the overflow
/// threshold, empty.
fn field(kind: u8) -> BoxedStrategy<String> {
    let ints = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (-300i64..300).prop_map(|i| i.to_string()),
        Just(i64::MAX.to_string()),
        Just(i64::MIN.to_string()),
    ];
    let reals = prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        (-1000i32..1000).prop_map(|i| format!("{}.5", i)),
    ];
    let text = prop_oneof![
        "[a-zé✓\"\n, ]{0,12}".prop_map(|s| format!("\"{}\"", s.replace('"', "\"\""))),
        (1000usize..6000).prop_map(|n| "ü".repeat(n)),
    ];
    let odd = prop_oneof![
        Just("9223372036854775808".to_string()),
        Just("007".to_string()),
        Just("1e999".to_string()),
        Just(" 12 ".to_string()),
        Just(String::new()),
        Just("abc".to_string()),
    ];
    let main = match kind {
        0 => ints.boxed(),
        1 => reals.boxed(),
        2 => text.boxed(),
        _ => prop_oneof![ints, reals, text].boxed(),
    };
    prop_oneof![12 => main, 1 => odd].boxed()
}

/// Rows of `width` columns, each column of its own kind.
fn rows(kinds: Vec<u8>, max: usize) -> impl Strategy<Value = Vec<Vec<String>>> {
    let row: Vec<BoxedStrategy<String>> = kinds.into_iter().map(field).collect();
    prop::collection::vec(row, 0..max)
}

fn csv(rows: &[Vec<String>], width: usize) -> String {
    let mut s = (0..width)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.join(","));
        s.push('\n');
    }
    s
}

/// Declared types a hand-written table may have, of INTEGER, REAL and TEXT affinity.
const DECLARED: [&str; 9] = [
    "int",
    "INTEGER",
    "BIGINT",
    "REAL",
    "DOUBLE",
    "float",
    "TEXT",
    "VARCHAR(5)",
    "CLOB",
];

/// An existing database, in WAL mode or (`rollback`) rollback-journal mode, where loads
/// go in place; with `declared`, it holds table `t` written by hand with those declared
/// types (indexes from `DECLARED`) and an index on its first column.
fn existing(path: &Path, declared: Option<&[usize]>, rollback: bool) -> rusqlite::Result<()> {
    let c = rusqlite::Connection::open(path)?;
    let mode = if rollback { "DELETE" } else { "WAL" };
    c.execute_batch(&format!(
        "PRAGMA journal_mode={mode}; CREATE TABLE other (x, y TEXT);
         INSERT INTO other VALUES (1, 'one'), (NULL, 'é'), (2.5, NULL);"
    ))?;
    if let Some(types) = declared {
        let cols: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("c{i} {}", DECLARED[*t]))
            .collect();
        c.execute_batch(&format!(
            "CREATE TABLE t ({}); CREATE INDEX t_first ON t (c0);",
            cols.join(", ")
        ))?;
    }
    Ok(())
}

/// Loads `csv` into `t` of `db`: the writer, and whether it wrote in place.
fn load(
    db: &Path,
    csv: &Path,
    engine: Engine,
    index: bool,
) -> Result<(EngineUsed, bool), liteload::Error> {
    let mut opts = ImportOptions::default();
    opts.table = Some("t".into());
    opts.engine = engine;
    if index {
        opts.indexes = vec![IndexSpec::new(["c0", "c1"], false)];
    }
    let s = import(
        db,
        &[Input::Path(csv.to_path_buf())],
        &opts,
        &Progress::default(),
    )?;
    let in_place = s.notes.iter().any(|n| n.starts_with("written in place"));
    Ok((s.engine.expect("a load names its writer"), in_place))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// A new table (with and without an index), or an empty one written by hand with
    /// declared types of each affinity and an index, then a second load into it (with an
    /// index asked for, now that it has rows, on SQLite's path; with an index it has and
    /// none asked for, in place, the index's entries merged), against SQLite's path; into
    /// a file in rollback mode or in WAL mode (in place), or in WAL mode while another
    /// connection has it open (the side file). `later` adds an index over two columns
    /// between the loads.
    #[test]
    fn appends_equal_sqlites_insert_path(
        // The second file's columns are of the table's kinds, or each of another kind.
        (first, second) in (prop::collection::vec(0u8..4, 2..6), any::<bool>())
            .prop_flat_map(|(kinds, retype)| {
                let again = kinds.iter().map(|k| if retype { (k + 1) % 4 } else { *k }).collect();
                (rows(kinds, 40), rows(again, 40))
            }),
        index in any::<bool>(),
        declared in prop::option::of(prop::collection::vec(0..DECLARED.len(), 6)),
        mode in 0u8..3,
        later in any::<bool>(),
    ) {
        let (rollback, held) = (mode == 0, mode == 2);
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let width = first.first().or(second.first()).map_or(0, Vec::len);
        prop_assume!(width > 0 && !first.is_empty());
        std::fs::write(p.join("a.csv"), csv(&first, width)).unwrap();
        std::fs::write(p.join("b.csv"), csv(&second, width)).unwrap();
        let declared = declared.as_ref().map(|d| &d[..width]);
        existing(&p.join("s.db"), declared, rollback).unwrap();
        existing(&p.join("d.db"), declared, rollback).unwrap();
        // Another connection that has the file open (its SHARED lock, in WAL mode).
        let _reader = held.then(|| {
            let c = rusqlite::Connection::open(p.join("d.db")).unwrap();
            c.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(())).unwrap();
            c
        });
        for f in ["a.csv", "b.csv"] {
            let want = load(&p.join("s.db"), &p.join(f), Engine::Sqlite, index);
            let got = load(&p.join("d.db"), &p.join(f), Engine::Auto, index);
            match (&want, &got) {
                (Ok(_), Ok(_)) => {}
                (Err(a), Err(b)) => prop_assert_eq!(format!("{:?}", a.kind()), format!("{:?}", b.kind())),
                _ => prop_assert!(false, "{f}: SQLite's path {want:?}, the default {got:?}"),
            }
            if f == "a.csv" {
                if let Ok((w, in_place)) = got {
                    // A new table, or the empty hand-written one (its index filled from
                    // its root in place): through the page writer.
                    prop_assert_eq!(w, EngineUsed::Direct);
                    prop_assert_eq!(in_place, !(held || index && declared.is_some()));
                }
                if later && width > 1 {
                    for db in ["s.db", "d.db"] {
                        rusqlite::Connection::open(p.join(db))
                            .unwrap()
                            .execute_batch("CREATE INDEX t_later ON t (c1, c0)")
                            .unwrap();
                    }
                }
            } else if let Ok((w, in_place)) = got {
                // Rows added to liteload's table with an index made since and none asked
                // for: in place, that index merged (the file alone in WAL mode or not).
                if later && width > 1 && !index && !held && declared.is_none() {
                    prop_assert_eq!(w, EngineUsed::Direct);
                    prop_assert!(in_place);
                }
            }
        }
        let want = dump(&p.join("s.db")).unwrap();
        prop_assert_eq!(&want.0, "ok");
        prop_assert_eq!(dump(&p.join("d.db")).unwrap(), want);
        prop_assert!(!p.join("d.db.liteload-append").exists());
    }
}

/// A kill during a side-file append leaves the file in rollback-journal mode (its WAL
/// mode switched off for the transfer). The next append that commits puts the profile's
/// WAL mode back; one that fails leaves the file as it was, rollback mode included.
#[test]
fn the_next_append_restores_wal_mode_after_a_killed_one() -> Result<(), Box<dyn std::error::Error>>
{
    let d = tempfile::tempdir()?;
    let mode = |db: &Path| -> rusqlite::Result<String> {
        rusqlite::Connection::open(db)?.query_row("PRAGMA journal_mode", [], |r| r.get(0))
    };
    std::fs::write(d.path().join("ok.csv"), "c0,c1\n1,a\n2,b\n")?;
    std::fs::write(d.path().join("bad.csv"), "c0,c1\n1,a\n2,b,extra\n")?;
    for (input, succeeds) in [("ok.csv", true), ("bad.csv", false)] {
        let db = d.path().join(format!("{input}.db"));
        existing(&db, None, false)?;
        // What a killed append leaves: rollback-journal mode.
        rusqlite::Connection::open(&db)?.execute_batch("PRAGMA journal_mode=DELETE")?;
        assert_eq!(mode(&db)?, "delete");
        let loaded = load(&db, &d.path().join(input), Engine::Auto, false);
        assert_eq!(loaded.is_ok(), succeeds, "{loaded:?}");
        assert_eq!(
            mode(&db)?,
            if succeeds { "wal" } else { "delete" },
            "{input}"
        );
        assert_eq!(dump(&db)?.0, "ok");
    }
    Ok(())
}

/// Each index's entries in its own order, read through it (`INDEXED BY`).
fn index_orders(db: &Path) -> rusqlite::Result<Vec<String>> {
    let c = rusqlite::Connection::open(db)?;
    let mut out = vec![];
    for (index, shown, order) in [
        ("t_text", "quote(c2)", "c2"),
        ("t_pair", "quote(c1) || ',' || quote(c0)", "c1, c0"),
    ] {
        out.push(c.query_row(
            &format!(
                "SELECT group_concat(e, ' ') FROM (SELECT {shown} || ':' || rowid AS e \
                 FROM t INDEXED BY {index} ORDER BY {order}, rowid)"
            ),
            [],
            |r| r.get(0),
        )?);
    }
    Ok(out)
}

/// A table made by hand with rows (some deleted, so its rowids have gaps) and two
/// indexes (text; a real then an integer), then hostile rows added by the default engine
/// (in place, each index's old entries merged with the new) and by SQLite's insert path:
/// the same rows, the same index entries in the same order, `integrity_check` ok, the
/// old indexes' pages on the freelist; in rollback mode and in WAL mode.
#[test]
fn rows_added_to_an_indexed_table_merge_its_indexes_as_sqlites_insert_path_stores_them(
) -> Result<(), Box<dyn std::error::Error>> {
    let d = tempfile::tempdir()?;
    let mut input = String::from("c0,c1,c2\n");
    for i in 0..4000i64 {
        let text = match i % 6 {
            0 => format!("\"é\u{1}{i}, \"\"q\"\"\""),
            1 => "ü".repeat(700 + (i % 900) as usize),
            2 => String::new(),
            3 => format!("{}", i % 17),
            4 => "\"line\nbreak\"".into(),
            _ => format!("t{}", i % 50),
        };
        let real = if i % 11 == 0 {
            "abc".into()
        } else {
            format!("{}.25", i % 300 - 150)
        };
        let int = if i % 13 == 0 {
            i64::MIN.to_string()
        } else {
            (i * 7919 % 1000).to_string()
        };
        input.push_str(&format!("{int},{real},{text}\n"));
    }
    std::fs::write(d.path().join("more.csv"), &input)?;
    for journal in ["DELETE", "WAL"] {
        let (ours, theirs) = (
            d.path().join(format!("ours-{journal}.db")),
            d.path().join(format!("theirs-{journal}.db")),
        );
        for db in [&ours, &theirs] {
            let c = rusqlite::Connection::open(db)?;
            c.execute_batch(&format!(
                "PRAGMA journal_mode={journal};
                 CREATE TABLE t (c0 INTEGER, c1 REAL, c2 TEXT);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
                 INSERT INTO t SELECT i % 97, i * 0.5, CASE WHEN i % 9 = 0 THEN NULL
                   WHEN i % 5 = 0 THEN printf('%.*c', 2000, 'x') ELSE 'v' || i END FROM n;
                 DELETE FROM t WHERE rowid % 7 = 2;
                 CREATE INDEX t_text ON t (c2); CREATE INDEX t_pair ON t (c1, c0);"
            ))?;
        }
        let free_before: i64 =
            rusqlite::Connection::open(&ours)?
                .query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        let csv = d.path().join("more.csv");
        let (w, in_place) = load(&ours, &csv, Engine::Auto, false)?;
        assert_eq!((w, in_place), (EngineUsed::Direct, true), "{journal}");
        load(&theirs, &csv, Engine::Sqlite, false)?;
        let want = dump(&theirs)?;
        assert_eq!(want.0, "ok");
        assert_eq!(dump(&ours)?, want, "{journal}");
        assert_eq!(index_orders(&ours)?, index_orders(&theirs)?, "{journal}");
        let c = rusqlite::Connection::open(&ours)?;
        let free: i64 = c.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        assert!(
            free > free_before,
            "{journal}: the old indexes' pages are free"
        );
        let mode = |c: &rusqlite::Connection| -> rusqlite::Result<String> {
            c.query_row("PRAGMA journal_mode", [], |r| r.get(0))
        };
        assert_eq!(mode(&c)?, mode(&rusqlite::Connection::open(&theirs)?)?);
    }
    Ok(())
}

/// The merge's rule: a few rows added to a big indexed table take SQLite's insert path
/// (rewriting every old entry would cost more than inserting the new ones), and the
/// summary says why; the direct engine merges whatever the sizes. Both leave what
/// SQLite's path leaves.
#[test]
fn a_few_rows_added_to_a_big_indexed_table_take_sqlites_path_unless_the_merge_is_forced(
) -> Result<(), Box<dyn std::error::Error>> {
    let d = tempfile::tempdir()?;
    let csv = d.path().join("few.csv");
    std::fs::write(&csv, "c0,c1\n1,one\n2,two\n3,three\n")?;
    let mut dumps = vec![];
    for (name, engine) in [
        ("auto", Engine::Auto),
        ("direct", Engine::Direct),
        ("sqlite", Engine::Sqlite),
    ] {
        let db = d.path().join(format!("{name}.db"));
        rusqlite::Connection::open(&db)?.execute_batch(
            "CREATE TABLE t (c0 INTEGER, c1 TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
             INSERT INTO t SELECT i, 'v' || (i % 1000) FROM n;
             CREATE INDEX t_c1 ON t (c1);",
        )?;
        let mut opts = ImportOptions::default();
        opts.table = Some("t".into());
        opts.engine = engine;
        let s = import(
            &db,
            &[Input::Path(csv.clone())],
            &opts,
            &Progress::default(),
        )?;
        let in_place = s.notes.iter().any(|n| n.starts_with("written in place"));
        match engine {
            Engine::Auto => {
                assert!(!in_place, "{:?}", s.notes);
                assert!(
                    s.notes.iter().any(|n| n.contains(
                        "not written in place (its indexes would be rewritten for 200000 rows"
                    )),
                    "{:?}",
                    s.notes
                );
            }
            Engine::Direct => assert!(in_place, "{:?}", s.notes),
            _ => {}
        }
        dumps.push(dump(&db)?);
    }
    assert_eq!(dumps[0].0, "ok");
    assert_eq!(dumps[0], dumps[2]);
    assert_eq!(dumps[1], dumps[2]);
    Ok(())
}
