//! Rows whose key is taken (`OnConflict`), against SQLite itself: random rows (keys
//! taken in the table and repeated within the input, NULLs that break NOT NULL, values
//! that do not fit their column) loaded by liteload into a table made beforehand, and the
//! same rows inserted one at a time by SQLite's own `INSERT`, `INSERT OR IGNORE`,
//! `INSERT OR REPLACE` or `INSERT … ON CONFLICT (key) DO UPDATE`, each in a savepoint
//! (a refused row rolled back and counted). Both must give the same table and the same
//! number of refused rows.

use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::{import, ColumnType, ImportOptions, Input, Nulls, OnConflict, Progress};
use proptest::prelude::*;

mod support;

/// A table made beforehand, its first rows, the columns the input has, and the key.
struct Shape {
    ddl: &'static str,
    table: &'static str,
    seed_rows: &'static str,
    columns: &'static [(&'static str, ColumnType)],
    key: &'static [&'static str],
}

const SHAPES: &[Shape] = &[
    Shape {
        ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b INTEGER NOT NULL DEFAULT 7, c REAL)",
        table: "t",
        seed_rows: "INSERT INTO t VALUES (1, 'one', 1, 1.5), (2, 'two', 2, 2.5), (5, NULL, 5, NULL)",
        columns: &[("id", ColumnType::Integer), ("a", ColumnType::Text), ("b", ColumnType::Integer)],
        key: &["id"],
    },
    Shape {
        ddl: "CREATE TABLE u (k TEXT, v INTEGER, w TEXT CHECK (w <> 'bad')); CREATE UNIQUE INDEX u_k ON u (k)",
        table: "u",
        seed_rows: "INSERT INTO u VALUES ('x', 1, 'keep'), ('y', 2, NULL)",
        columns: &[("w", ColumnType::Text), ("k", ColumnType::Text), ("v", ColumnType::Integer)],
        key: &["k"],
    },
];

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "", "1", "2", "3", "5", "x", "y", "z", "bad", "007", "é", "2.5",
    ])
    .prop_map(String::from)
}

/// A table's rows, and how many input rows were refused.
type Outcome = (Vec<Vec<Sql>>, u64);

fn csv_field(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Loads `rows` into a fresh copy of `shape` with `rule`; returns the table's rows and
/// the refused count, then the same from SQLite one row at a time.
fn both(shape: &Shape, rows: &[Vec<String>], rule: OnConflict) -> (Outcome, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let setup = |c: &Connection| {
        c.execute_batch(&format!("{}; {};", shape.ddl, shape.seed_rows))
            .unwrap()
    };
    setup(&Connection::open(&db).unwrap());
    let names: Vec<&str> = shape.columns.iter().map(|(n, _)| *n).collect();
    let mut text = names.join(",") + "\n";
    for r in rows {
        text.push_str(&r.iter().map(|v| csv_field(v)).collect::<Vec<_>>().join(","));
        text.push('\n');
    }
    let src = dir.path().join("in.csv");
    std::fs::write(&src, &text).unwrap();
    let mut o = ImportOptions::default();
    o.table = Some(shape.table.into());
    o.on_conflict = rule;
    o.max_errors = Some(1_000);
    o.sniff = false;
    let s = import(&db, &[Input::Path(src)], &o, &Progress::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let read = |c: &Connection| support::table_rows(c, shape.table, false);
    let loaded = Connection::open(&db).unwrap();
    support::assert_intact(&loaded);
    let ours = (read(&loaded), s.rejects);
    // Into a table keyed by its rowid, the rows are merged from a side file in key order
    // (one statement, or one at a time when it refused a row).
    if shape.table == "t" && rule != OnConflict::Fail {
        let merged = s
            .notes
            .iter()
            .any(|n| n.contains("merged through a side file"));
        assert_eq!(merged, s.rejects == 0, "{:?}", s.notes);
    }

    let c = Connection::open_in_memory().unwrap();
    setup(&c);
    let or = match rule {
        OnConflict::Ignore => "OR IGNORE ",
        OnConflict::Replace => "OR REPLACE ",
        _ => "",
    };
    let upsert = if rule == OnConflict::Update {
        let set: Vec<String> = names
            .iter()
            .filter(|n| !shape.key.contains(n))
            .map(|n| format!("{n} = excluded.{n}"))
            .collect();
        format!(
            " ON CONFLICT ({}) DO UPDATE SET {}",
            shape.key.join(", "),
            set.join(", ")
        )
    } else {
        String::new()
    };
    let sql = format!(
        "INSERT {or}INTO {} ({}) VALUES ({}){upsert}",
        shape.table,
        names.join(", "),
        vec!["?"; names.len()].join(", ")
    );
    // The values liteload binds: text (SQLite's affinity converts it), and an empty
    // field NULL outside a TEXT column.
    let values = rows.iter().map(|r| {
        let row = r.iter().zip(shape.columns);
        Some(
            row.map(|(v, (_, ty))| support::bound(v, true, *ty == ColumnType::Text, Nulls::Typed))
                .collect(),
        )
    });
    let refused = support::insert_each(&c, &sql, values).len() as u64;
    (ours, (read(&c), refused))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_rule_stores_what_sqlite_stores(
        shape in 0usize..2,
        rule in 0usize..4,
        rows in prop::collection::vec(prop::collection::vec(value(), 3), 1..30),
    ) {
        let rule = [OnConflict::Fail, OnConflict::Ignore, OnConflict::Replace, OnConflict::Update][rule];
        let (ours, sqlite) = both(&SHAPES[shape], &rows, rule);
        prop_assert_eq!(ours, sqlite);
    }
}

/// Rows that break nothing but their keys, repeated: the merge in key order must keep
/// each key's rows in input order (a random mix of rows mostly has one that SQLite
/// refuses, which sends the merge to its row-by-row path).
fn clean_row() -> impl Strategy<Value = Vec<String>> {
    let id = prop::sample::select(vec!["1", "2", "3", "5", "7", "8", " 9", "2.0"]);
    let b = prop::sample::select(vec!["1", "2", "007", "-4"]);
    (id, value(), b).prop_map(|(i, a, b)| vec![i.to_string(), a, b.to_string()])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn merging_in_key_order_stores_what_sqlite_stores(
        rule in 1usize..4,
        rows in prop::collection::vec(clean_row(), 1..40),
    ) {
        let rule = [OnConflict::Fail, OnConflict::Ignore, OnConflict::Replace, OnConflict::Update][rule];
        let (ours, sqlite) = both(&SHAPES[0], &rows, rule);
        prop_assert_eq!(ours.1, 0);
        prop_assert_eq!(ours, sqlite);
    }
}

/// A rule with a table that is replaced, or refused because it exists, does what
/// those say: the merge is for rows added to the table.
#[test]
fn a_rule_keeps_what_if_exists_says() {
    use liteload::IfExists;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let src = dir.path().join("in.csv");
    std::fs::write(&src, "id,a\n1,new\n3,three\n").unwrap();
    for (if_exists, want) in [
        (
            IfExists::Append,
            Some(vec![
                (1, "new".to_string()),
                (2, "two".into()),
                (3, "three".into()),
            ]),
        ),
        (
            IfExists::Replace,
            Some(vec![(1, "new".to_string()), (3, "three".into())]),
        ),
        (IfExists::Fail, None),
    ] {
        let _ = std::fs::remove_file(&db);
        Connection::open(&db)
            .unwrap()
            .execute_batch(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); \
                 INSERT INTO t VALUES (1, 'one', 'x'), (2, 'two', 'y');",
            )
            .unwrap();
        let mut o = ImportOptions::default();
        o.table = Some("t".into());
        o.on_conflict = OnConflict::Update;
        o.if_exists = if_exists;
        // A replaced table is made from the input: the key is named for it.
        o.key = vec!["id".into()];
        let got = import(&db, &[Input::Path(src.clone())], &o, &Progress::default());
        let rows: Vec<(i64, String)> = Connection::open(&db)
            .unwrap()
            .prepare("SELECT id, a FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        match want {
            Some(want) => {
                got.unwrap_or_else(|e| panic!("{if_exists:?}: {e}"));
                assert_eq!(rows, want, "{if_exists:?}");
            }
            None => {
                assert!(got.is_err(), "{if_exists:?}");
                assert_eq!(rows, vec![(1, "one".to_string()), (2, "two".into())]);
            }
        }
    }
}

#[test]
fn a_key_that_settles_nothing_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE n (a, b); CREATE TABLE two (a UNIQUE, b UNIQUE)")
        .unwrap();
    std::fs::write(dir.path().join("in.csv"), "a,b\n1,2\n").unwrap();
    let load = |table: &str, key: &[&str], rule: OnConflict| {
        let mut o = ImportOptions::default();
        o.table = Some(table.into());
        o.on_conflict = rule;
        o.key = key.iter().map(|k| k.to_string()).collect();
        import(
            &db,
            &[Input::Path(dir.path().join("in.csv"))],
            &o,
            &Progress::default(),
        )
        .err()
        .map(|e| e.to_string())
    };
    assert!(load("n", &[], OnConflict::Update)
        .unwrap()
        .contains("has no primary key and no UNIQUE index"));
    assert!(load("two", &[], OnConflict::Update)
        .unwrap()
        .contains("2 UNIQUE indexes: name the key columns"));
    assert_eq!(load("two", &["b"], OnConflict::Update), None);
    assert!(load("two", &["a"], OnConflict::Fail)
        .unwrap()
        .contains("key columns name the key of a conflict rule"));
    // A key that is no key of the table: a schema error naming it, not SQLite's.
    let e = load("n", &["b"], OnConflict::Update).unwrap();
    assert!(
        e.contains("the key (b) is neither the primary key nor a UNIQUE index of \"n\""),
        "{e}"
    );
    // A table the load makes gets the key as its primary key.
    assert_eq!(load("made", &["a"], OnConflict::Update), None);
    assert_eq!(load("made", &["a"], OnConflict::Update), None);
    let c = Connection::open(&db).unwrap();
    assert_eq!(
        c.query_row("SELECT count(*) FROM made", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        1
    );
}

/// A cancel while the merge's one statement runs (the load's commit stage) stops it:
/// the load is `Interrupted`, and the table is as it was, byte for byte.
#[test]
fn a_cancel_during_the_merge_leaves_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 2 FROM n WHERE i < 1999999)
             INSERT INTO t SELECT i, 'old ' || i, i FROM n;",
        )
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let mut text = String::from("id,a\n");
    for i in 0..600_000u64 {
        text.push_str(&format!("{},new {i}\n", (i * 7919) % 2_000_000));
    }
    let src = dir.path().join("in.csv");
    std::fs::write(&src, &text).unwrap();
    let mut o = ImportOptions::default();
    o.table = Some("t".into());
    o.on_conflict = OnConflict::Update;
    o.sniff = false;
    let progress = std::sync::Arc::new(Progress::default());
    let p = progress.clone();
    let watcher = std::thread::spawn(move || {
        while p.stage() != liteload::Stage::Committing {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        p.cancel();
    });
    let result = import(&db, &[Input::Path(src)], &o, &progress);
    watcher.join().unwrap();
    let e = result.expect_err("cancelled while merging");
    assert!(e.is_interrupted(), "{e}");
    let c = Connection::open(&db).unwrap();
    support::assert_intact(&c);
    drop(c);
    assert!(std::fs::read(&db).unwrap() == before, "the file changed");
}

/// A load never deletes or changes rows of a table it was not asked to load: replacing
/// parent rows keeps their children, whose foreign keys say ON DELETE CASCADE (as a
/// plain sqlite3 connection does), on the merge's road (an INTEGER PRIMARY KEY) and on
/// SQLite's path (a TEXT key), for each rule.
#[test]
fn a_load_leaves_other_tables_alone_whatever_their_foreign_keys_say() {
    for (parent, key) in [
        ("CREATE TABLE p (id INTEGER PRIMARY KEY, v TEXT)", "id"),
        ("CREATE TABLE p (id TEXT PRIMARY KEY, v TEXT)", "id"),
    ] {
        for rule in [OnConflict::Replace, OnConflict::Update, OnConflict::Ignore] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("t.db");
            Connection::open(&db)
                .unwrap()
                .execute_batch(&format!(
                    "{parent}; INSERT INTO p VALUES (1, 'old'), (2, 'old');
                     CREATE TABLE c (pid REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE, w TEXT);
                     INSERT INTO c VALUES (1, 'kept'), (2, 'kept'), (2, 'kept too');"
                ))
                .unwrap();
            std::fs::write(dir.path().join("p.csv"), "id,v\n1,new\n2,new\n3,new\n").unwrap();
            let mut o = ImportOptions::default();
            o.table = Some("p".into());
            o.on_conflict = rule;
            o.key = vec![key.into()];
            import(
                &db,
                &[Input::Path(dir.path().join("p.csv"))],
                &o,
                &Progress::default(),
            )
            .unwrap();
            let c = Connection::open(&db).unwrap();
            support::assert_intact(&c);
            let children: i64 = c
                .query_row("SELECT count(*) FROM c", [], |r| r.get(0))
                .unwrap();
            assert_eq!(children, 3, "{parent} {rule:?}");
            let parents: i64 = c
                .query_row("SELECT count(*) FROM p", [], |r| r.get(0))
                .unwrap();
            assert_eq!(parents, 3, "{parent} {rule:?}");
        }
    }
}
