//! Loads into a table made beforehand, against SQLite itself: random rows (values that
//! do not fit a STRICT column, NULLs that break NOT NULL, rows that fail a CHECK, keys
//! repeated against a UNIQUE or PRIMARY KEY index, non-ASCII, NUL, long text) loaded by
//! liteload into an empty table of a random definition, and the same values inserted one
//! at a time by SQLite's own `INSERT`, each in a savepoint (a refused row rolled back).
//! Both must give the same table and refuse the same records, with the reasons SQLite's
//! path gives. When no row is refused, the load must have gone through the side file
//! with the table's own definition (records copied by SQLite's transfer).

use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::{import, Engine, EngineUsed, ImportOptions, Input, Nulls, Progress};
use proptest::prelude::*;

mod support;

/// A table made beforehand: its definition and its columns (all of them, in order),
/// and whether each is TEXT (where the typed NULL rule keeps an empty field as '').
struct Shape {
    ddl: &'static str,
    columns: &'static [(&'static str, bool)],
}

const SHAPES: &[Shape] = &[
    // The challenge's kind: STRICT, NOT NULL, a text primary key, JSON in a column.
    Shape {
        ddl: "CREATE TABLE t (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL, r REAL, \
              s TEXT, j TEXT CHECK (j IS NULL OR json_valid(j))) STRICT",
        columns: &[
            ("id", true),
            ("n", false),
            ("r", false),
            ("s", true),
            ("j", true),
        ],
    },
    // Not STRICT: CHECK, DEFAULT, a collation off any index, a UNIQUE pair, a plain index.
    Shape {
        ddl: "CREATE TABLE t (a INT CHECK (a IS NULL OR a <> 3), b TEXT COLLATE NOCASE \
              DEFAULT 'd', c VARCHAR(5) NOT NULL, d DOUBLE, UNIQUE (c, a)); \
              CREATE INDEX t_d ON t (d)",
        columns: &[("a", false), ("b", true), ("c", true), ("d", false)],
    },
    // STRICT with a UNIQUE INTEGER column and a table-wide CHECK.
    Shape {
        ddl: "CREATE TABLE t (k INT UNIQUE, v TEXT NOT NULL, w REAL, CHECK (length(v) < 40)) \
              STRICT",
        columns: &[("k", false), ("v", true), ("w", false)],
    },
    // No CHECK: NOT NULL and STRICT are checked record by record as the side file is
    // written, with nothing after to catch what that misses.
    Shape {
        ddl: "CREATE TABLE t (id TEXT PRIMARY KEY, n INT NOT NULL, r REAL, s TEXT NOT NULL) STRICT",
        columns: &[("id", true), ("n", false), ("r", false), ("s", true)],
    },
    Shape {
        ddl: "CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL UNIQUE, c REAL DEFAULT 0.5)",
        columns: &[("a", false), ("b", true), ("c", false)],
    },
];

/// A field: its text and whether the CSV quotes it.
fn field() -> impl Strategy<Value = (String, bool)> {
    let text = prop_oneof![
        6 => prop::sample::select(vec![
            "", "1", "2", "3", "-0", "2.5", "1e3", "007", " 5", "x", "X", "é", "🦀",
            "{\"k\": [1, null]}", "{bad", "a\0b", "9223372036854775808", "1.0",
        ])
        .prop_map(String::from),
        1 => "[a-z\u{e9}\u{1F980}\"\n,]{30,60}",
    ];
    (text, any::<bool>())
}

fn csv_field((text, quoted): &(String, bool)) -> String {
    let needs = text.contains([',', '"', '\n', '\r']) || text.starts_with(' ');
    if *quoted || needs {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.clone()
    }
}

/// What one load gave: the table's rows by rowid, and the refused records (number and
/// reason).
#[derive(Debug, PartialEq)]
struct Outcome {
    rows: Vec<Vec<Sql>>,
    refused: Vec<(u64, String)>,
}

fn read_rows(c: &Connection) -> Vec<Vec<Sql>> {
    support::table_rows(c, "t", true)
}

/// Loads `text` into a new database holding `shape` with `engine` and `nulls`; returns
/// the outcome and the writer the summary names.
fn load(shape: &Shape, text: &str, engine: Engine, nulls: Nulls) -> (Outcome, Option<EngineUsed>) {
    load_with(shape, text, engine, nulls, None)
}

/// A new database holding `shape`'s empty table, in a directory of its own, and `text`
/// written as the input beside it.
fn made(shape: &Shape, text: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch(shape.ddl)
        .unwrap();
    let src = dir.path().join("in.csv");
    std::fs::write(&src, text).unwrap();
    (dir, db, src)
}

/// The options of a load into table `t`, appended to, with `engine` and `nulls` (and
/// `index_memory` bytes of index entries before they spill, when given).
fn options(engine: Engine, nulls: Nulls, index_memory: Option<usize>) -> ImportOptions {
    let mut o = ImportOptions::default();
    o.table = Some("t".into());
    o.if_exists = liteload::IfExists::Append;
    o.engine = engine;
    o.read.nulls = nulls;
    o.sniff = false;
    if let Some(bytes) = index_memory {
        o.index_memory = bytes;
    }
    o
}

fn load_with(
    shape: &Shape,
    text: &str,
    engine: Engine,
    nulls: Nulls,
    index_memory: Option<usize>,
) -> (Outcome, Option<EngineUsed>) {
    let (dir, db, src) = made(shape, text);
    let rejects = dir.path().join("rejects.jsonl");
    let mut o = options(engine, nulls, index_memory);
    o.max_errors = Some(1_000);
    o.rejects = Some(rejects.clone());
    let s = import(&db, &[Input::Path(src)], &o, &Progress::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    // Sorted: records refused as they are read come first in the log, before those the
    // side file's check refuses.
    let mut refused = std::fs::read_to_string(&rejects)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["record"].as_u64().unwrap(),
                v["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect::<Vec<_>>();
    refused.sort();
    assert_eq!(refused.len() as u64, s.rejects);
    let rows = read_rows(&c);
    (Outcome { rows, refused }, s.engine)
}

/// What a load that sets no bad record aside gives: the table's rows, the writer and
/// whether it wrote in place (else whether the summary said why not); or the first
/// refused record's number and reason (the table then as it was, empty).
type FailFast = Result<(Vec<Vec<Sql>>, Option<EngineUsed>, InPlace), (u64, String)>;

/// Whether a load wrote in place, and whether the summary said why where it did not.
#[derive(Debug, PartialEq)]
enum InPlace {
    Yes,
    NoBecause,
    NoUnsaid,
}

/// Loads `text` into a new database holding `shape` with `engine` and `nulls`, no bad
/// record set aside: the first one fails the load.
fn load_fail_fast(shape: &Shape, text: &str, engine: Engine, nulls: Nulls) -> FailFast {
    load_fail_fast_with(shape, text, engine, nulls, None)
}

fn load_fail_fast_with(
    shape: &Shape,
    text: &str,
    engine: Engine,
    nulls: Nulls,
    index_memory: Option<usize>,
) -> FailFast {
    let (_dir, db, src) = made(shape, text);
    let o = options(engine, nulls, index_memory);
    let result = import(&db, &[Input::Path(src)], &o, &Progress::default());
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    let mut journal = db.clone().into_os_string();
    journal.push("-journal");
    assert!(
        !std::path::Path::new(&journal).exists(),
        "a journal is left"
    );
    match result {
        Ok(s) => {
            let said = |p: &str| s.notes.iter().any(|n| n.starts_with(p));
            let in_place = if said("written in place") {
                InPlace::Yes
            } else if said("not written in place") {
                InPlace::NoBecause
            } else {
                InPlace::NoUnsaid
            };
            Ok((read_rows(&c), s.engine, in_place))
        }
        Err(e) => {
            assert!(read_rows(&c).is_empty(), "a failed load left rows: {e}");
            let record = e.position().map_or(0, |p| p.record);
            Err((record, e.reason()))
        }
    }
}

/// The same values inserted one at a time by SQLite: the table's rows, and the numbers
/// of the refused records.
fn reference(
    shape: &Shape,
    rows: &[Vec<(String, bool)>],
    nulls: Nulls,
) -> (Vec<Vec<Sql>>, Vec<u64>) {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch(shape.ddl).unwrap();
    let names: Vec<&str> = shape.columns.iter().map(|(n, _)| *n).collect();
    let sql = format!(
        "INSERT INTO t ({}) VALUES ({})",
        names.join(", "),
        vec!["?"; names.len()].join(", ")
    );
    let values = rows.iter().map(|r| {
        // A NUL byte is not text: the CSV reader refuses the record (docs/import.md).
        if r.iter().any(|(v, _)| v.contains('\0')) {
            return None;
        }
        let row = r.iter().zip(shape.columns);
        Some(
            row.map(|((v, quoted), (_, text))| support::bound(v, *quoted, *text, nulls))
                .collect(),
        )
    });
    let refused = support::insert_each(&c, &sql, values);
    (read_rows(&c), refused)
}

fn check(shape: &Shape, rows: &[Vec<(String, bool)>], nulls: Nulls) {
    let names: Vec<&str> = shape.columns.iter().map(|(n, _)| *n).collect();
    let mut text = names.join(",") + "\n";
    for r in rows {
        text.push_str(&r.iter().map(csv_field).collect::<Vec<_>>().join(","));
        text.push('\n');
    }
    let (ours, writer) = load(shape, &text, Engine::Auto, nulls);
    let (by_sqlite, _) = load(shape, &text, Engine::Sqlite, nulls);
    let (rows_ref, refused_ref) = reference(shape, rows, nulls);
    assert_eq!(ours.rows, rows_ref, "{}\n{text}", shape.ddl);
    let numbers: Vec<u64> = ours.refused.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, refused_ref, "{}\n{text}", shape.ddl);
    // The same reasons as SQLite's own path gives through liteload.
    assert_eq!(ours, by_sqlite, "{}\n{text}", shape.ddl);
    if refused_ref.is_empty() {
        assert_eq!(writer, Some(EngineUsed::Direct), "{}\n{text}", shape.ddl);
    }
    // No bad record set aside: the first refused one fails the load, with SQLite's
    // reason, on every road; clean rows are written in place.
    let ours = load_fail_fast(shape, &text, Engine::Auto, nulls);
    let by_sqlite = load_fail_fast(shape, &text, Engine::Sqlite, nulls);
    match (&ours, &by_sqlite) {
        (Ok((rows, writer, in_place)), Ok((rows_sqlite, _, _))) => {
            assert_eq!(rows, rows_sqlite, "{}\n{text}", shape.ddl);
            assert_eq!(rows, &rows_ref, "{}\n{text}", shape.ddl);
            assert_eq!(*writer, Some(EngineUsed::Direct), "{}\n{text}", shape.ddl);
            // CHECK too: each row put to a copy of the table in memory as it is written.
            assert_eq!(*in_place, InPlace::Yes, "{}\n{text}", shape.ddl);
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "{}\n{text}", shape.ddl);
            // A record the reader refuses (a NUL) may stop the load before the writer
            // meets an earlier one it refuses: the reader runs ahead of the writer.
            if !text.contains('\0') {
                assert_eq!(
                    Some(a.0),
                    refused_ref.first().copied(),
                    "{}\n{text}",
                    shape.ddl
                );
            }
        }
        _ => panic!(
            "one road failed, the other did not: {ours:?} / {by_sqlite:?}\n{}\n{text}",
            shape.ddl
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn loads_into_made_tables_store_what_sqlite_stores(
        shape in 0..SHAPES.len(),
        unquoted in any::<bool>(),
        rows in prop::collection::vec(prop::collection::vec(field(), 5), 1..25),
    ) {
        let shape = &SHAPES[shape];
        let rows: Vec<Vec<(String, bool)>> = rows
            .into_iter()
            .map(|mut r| { r.truncate(shape.columns.len()); r })
            .collect();
        let nulls = if unquoted { Nulls::Unquoted } else { Nulls::Typed };
        check(shape, &rows, nulls);
    }
}

/// Rows that keep every rule go through the side file, into each shape, with no row
/// refused: the fast path is the one taken, not merely a correct one.
#[test]
fn clean_rows_take_the_side_file() {
    let rows = |n: usize, shape: usize| -> Vec<Vec<(String, bool)>> {
        (0..n)
            .map(|i| match shape {
                0 => vec![
                    (format!("id-{i}"), true),
                    (i.to_string(), false),
                    (format!("{i}.5"), false),
                    ("é\"🦀".into(), true),
                    (format!("{{\"i\": {i}}}"), true),
                ],
                1 => vec![
                    ((i + 10).to_string(), false),
                    ("B".into(), true),
                    (format!("c{i}"), true),
                    ("".into(), false),
                ],
                2 => vec![
                    (i.to_string(), false),
                    ("v".into(), true),
                    ("".into(), false),
                ],
                3 => vec![
                    (format!("k{i}"), false),
                    (i.to_string(), false),
                    ("1e3".into(), false),
                    ("".into(), true),
                ],
                _ => vec![
                    ((i % 7).to_string(), false),
                    (format!("b{i}"), true),
                    ("".into(), false),
                ],
            })
            .collect()
    };
    for (k, shape) in SHAPES.iter().enumerate() {
        for nulls in [Nulls::Typed, Nulls::Unquoted] {
            check(shape, &rows(3000, k), nulls);
        }
    }
}

/// Index entries past the memory allowed spill to sorted runs on disk; a key repeated
/// there is found as the runs merge, and the load still refuses just that record.
#[test]
fn keys_repeated_in_spilled_entries_are_refused_too() {
    let shape = &SHAPES[0];
    let mut text = String::from("id,n,r,s,j\n");
    for i in 0..20_000 {
        text.push_str(&format!("k{i},{i},0.5,s,{{}}\n"));
    }
    for (i, repeat) in [(20_000, None), (20_001, Some(7))] {
        let id = repeat.map_or(format!("k{i}"), |k| format!("k{k}"));
        text.push_str(&format!("{id},{i},0.5,s,[]\n"));
    }
    let (ours, writer) = load_with(shape, &text, Engine::Auto, Nulls::Typed, Some(64 << 10));
    assert_eq!(ours.rows.len(), 20_001);
    assert_eq!(ours.refused.len(), 1, "{:?}", ours.refused);
    assert_eq!(ours.refused[0].0, 20_002);
    assert!(
        ours.refused[0].1.contains("UNIQUE constraint failed: t.id"),
        "{:?}",
        ours.refused
    );
    assert_eq!(writer, Some(EngineUsed::Sqlite));
    let (by_sqlite, _) = load(shape, &text, Engine::Sqlite, Nulls::Typed);
    assert_eq!(ours, by_sqlite);
    // Without the repeat: the side file, its entries merged from the runs.
    let clean: String = text
        .lines()
        .take(20_002)
        .map(|l| format!("{l}\n"))
        .collect();
    let (ours, writer) = load_with(shape, &clean, Engine::Auto, Nulls::Typed, Some(64 << 10));
    assert_eq!(
        (ours.rows.len(), writer),
        (20_001, Some(EngineUsed::Direct))
    );
}

/// A refused row past the errors allowed fails the load as a whole: the table stays
/// empty, and no side file is left beside the database.
#[test]
fn too_many_refused_rows_leave_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch(SHAPES[2].ddl)
        .unwrap();
    let src = dir.path().join("in.csv");
    let long = "x".repeat(50);
    std::fs::write(&src, format!("k,v,w\n1,a,1\n2,{long},2\n3,c,3\n")).unwrap();
    let mut o = ImportOptions::default();
    o.table = Some("t".into());
    o.if_exists = liteload::IfExists::Append;
    let e = import(&db, &[Input::Path(src)], &o, &Progress::default()).unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("in.csv:3:1") && shown.contains("CHECK constraint failed: length(v) < 40"),
        "{shown}"
    );
    let c = Connection::open(&db).unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("liteload"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Filled in place (no bad record set aside), a table made beforehand whose key repeats
/// in index entries spilled to disk fails with the row SQLite refuses first, and is left
/// empty; without the repeat it is filled in place from the merged runs.
#[test]
fn keys_repeated_in_spilled_entries_fail_a_load_in_place() {
    let shape = &SHAPES[3];
    let mut text = String::from("id,n,r,s\n");
    for i in 0..20_000 {
        text.push_str(&format!("k{i},{i},0.5,s\n"));
    }
    let clean = text.clone();
    // Two repeats: the one of the smaller row number is the one reported.
    text.push_str("k19999,1,0.5,s\nk5,2,0.5,s\n");
    let small = Some(64 << 10);
    let ours = load_fail_fast_with(shape, &text, Engine::Auto, Nulls::Typed, small);
    let by_sqlite = load_fail_fast_with(shape, &text, Engine::Sqlite, Nulls::Typed, small);
    assert_eq!(ours, by_sqlite);
    let (record, reason) = ours.unwrap_err();
    assert_eq!(record, 20_001);
    assert!(
        reason.contains("UNIQUE constraint failed: t.id"),
        "{reason}"
    );
    let (rows, writer, in_place) =
        load_fail_fast_with(shape, &clean, Engine::Auto, Nulls::Typed, small).unwrap();
    assert_eq!(
        (rows.len(), writer, in_place),
        (20_000, Some(EngineUsed::Direct), InPlace::Yes)
    );
}
