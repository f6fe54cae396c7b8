//! Several tables of one load into one database: a copy of a database (PostgreSQL's
//! tables, each its own Arrow input). The plan ([`plan::plan_tables`]) names the tables
//! and chooses the writer (the page writer into a new file, SQLite's insert path into a
//! file that exists), and the load runs as any import does ([`import::write`]); each
//! table gets its INTEGER PRIMARY KEY (from [`TableShape::rowid`]) and, when the load
//! makes it, its indexes after its rows.

use std::path::Path;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::import;
use crate::options::ImportOptions;
use crate::plan::{self, Dest, TableShape};
use crate::progress::Progress;
use crate::source::{Format, Input, ReadOptions};
use crate::summary::Summary;

/// Loads `inputs[i]` (Arrow record batches) into table `shapes[i]` of `db`, with at
/// least `parse_threads` threads converting batches. A new file is written whole or not
/// at all; into a file that exists, every table the load makes is made in the one
/// transaction of its rows, and a table there already takes the rows only as
/// `opts.if_exists` allows.
pub(crate) fn load_tables(
    db: &Path,
    inputs: &[Input],
    shapes: Vec<TableShape>,
    parse_threads: usize,
    opts: &ImportOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    let mut read = ReadOptions {
        format: Format::Arrow,
        ..opts.read.clone()
    };
    read.parse_threads = read.parse_threads.max(parse_threads);
    let mut plan = plan::plan_tables(Dest::File(db), inputs, shapes, &read, opts, progress)?;
    import::write(db, &mut plan, opts, progress, start)
}

/// What `PRAGMA foreign_key_check` finds in `tables` of the copy at `db`: a note for
/// each table with rows whose declared foreign key finds no parent (a source database checks
/// its keys as rows change, but PostgreSQL's `NOT VALID` keys or MySQL's
/// `foreign_key_checks = 0` may leave some).
pub(crate) fn orphans(db: &Path, tables: &[String]) -> Result<Vec<String>> {
    let check = || -> rusqlite::Result<Vec<String>> {
        let conn =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut out = vec![];
        for t in tables {
            let n: i64 = conn.query_row(
                "SELECT count(*) FROM pragma_foreign_key_check(?1)",
                [t],
                |r| r.get(0),
            )?;
            if n > 0 {
                out.push(format!(
                    "table {}: {n} row{} whose foreign key finds no parent (PRAGMA foreign_key_check)",
                    crate::schema::quote_ident(t),
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
        Ok(out)
    };
    check().map_err(|e| Error::sqlite(format!("{}: checking its foreign keys", db.display()), e))
}

/// Why `opts` cannot go with a copy of a database's tables, if it cannot: the keys,
/// indexes and types come from the database, and the copy makes its tables.
pub(crate) fn refused_for_copy(opts: &ImportOptions) -> Option<&'static str> {
    if !opts.pk.is_empty() || !opts.key.is_empty() {
        Some("keys come from the database's own primary keys")
    } else if !opts.indexes.is_empty() {
        Some("indexes come from the database's own")
    } else if opts.on_conflict != crate::OnConflict::Fail {
        Some("a conflict rule applies to loads into a table that exists; a copy makes its tables")
    } else if opts.alter || !opts.types.is_empty() {
        Some("the column types come from the database")
    } else if opts.if_exists == crate::table::IfExists::Replace {
        Some("a copy makes its tables; it does not replace tables that exist")
    } else {
        None
    }
}

/// What a copy's load adds to its writers: keys that do not rise refused with no file
/// left, and a name of its own for every object. (What the writers store, keyed tables,
/// blobs, NaN and all, is the conformance suite's `page_tables` and `sqlite_tables`.)
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, RecordBatchIterator,
        StringArray,
    };
    use rusqlite::Connection;

    use super::*;
    use crate::schema::quote_ident;
    use crate::table::IndexSpec;

    type R<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

    struct Case {
        shape: TableShape,
        batch: RecordBatch,
    }

    fn keyed(ids: Vec<i64>) -> R<Case> {
        let n = ids.len();
        let huge = "þ".repeat(40_000);
        let texts = ["", "é😀", "a\0b", huge.as_str(), "ß", "x"];
        let names: Vec<Option<&str>> = (0..n)
            .map(|i| (i % 7 != 4).then(|| texts[i % texts.len()]))
            .collect();
        let reals = [f64::NAN, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5, 1e308];
        let r: Vec<Option<f64>> = (0..n)
            .map(|i| (i % 5 != 3).then(|| reals[i % reals.len()]))
            .collect();
        let blobs: [&[u8]; 3] = [b"", &[0, 255, 0], b"\xff\xfe"];
        let b: Vec<Option<&[u8]>> = (0..n)
            .map(|i| (i % 4 != 1).then(|| blobs[i % blobs.len()]))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(Float64Array::from(r)),
            Arc::new(BinaryArray::from(b)),
        ];
        let batch =
            RecordBatch::try_from_iter(["id", "na\"me", "r", "b"].into_iter().zip(columns))?;
        Ok(Case {
            shape: TableShape {
                table: "ke yed".into(),
                rowid: Some("id".into()),
                indexes: vec![
                    IndexSpec::new(["na\"me"], false),
                    IndexSpec::new(["r", "id"], true),
                ],
                ..TableShape::default()
            },
            batch,
        })
    }

    fn inputs(cases: &[Case]) -> Vec<Input> {
        cases
            .iter()
            .map(|c| {
                let schema = c.batch.schema();
                Input::record_batches(
                    c.shape.table.clone(),
                    RecordBatchIterator::new(vec![Ok(c.batch.clone())], schema),
                )
            })
            .collect()
    }

    fn run(db: &Path, cases: &[Case]) -> Result<Summary> {
        let opts = ImportOptions {
            batch_rows: 1000,
            ..ImportOptions::default()
        };
        load_tables(
            db,
            &inputs(cases),
            cases.iter().map(|c| c.shape.clone()).collect(),
            1,
            &opts,
            &Progress::default(),
            Instant::now(),
        )
    }

    /// The page writer takes an INTEGER PRIMARY KEY's values as rowids in the order they
    /// come (a copy reads them in key order): keys out of order, or a NULL key, are
    /// refused, and no file is left.
    #[test]
    fn keys_out_of_order_or_null_leave_no_file() -> R {
        let dir = tempfile::tempdir()?;
        for ids in [vec![1, 2, 3, 3], vec![5, 4]] {
            let db = dir.path().join("k.db");
            let e = run(&db, &[keyed(ids.clone())?]).expect_err("keys out of order");
            assert!(!db.exists(), "{ids:?}: {e}");
        }
        let mut case = keyed(vec![1, 2, 3])?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            case.batch.column(1).clone(),
            case.batch.column(2).clone(),
            case.batch.column(3).clone(),
        ];
        case.batch =
            RecordBatch::try_from_iter(["id", "na\"me", "r", "b"].into_iter().zip(columns))?;
        let db = dir.path().join("n.db");
        run(&db, &[case]).expect_err("a NULL key");
        assert!(!db.exists());
        assert_eq!(
            std::fs::read_dir(dir.path())?.count(),
            0,
            "nothing left beside"
        );
        Ok(())
    }

    /// Names built to collide (ASCII case, underscores that join like column lists, a
    /// source index named like another table or like SQLite's own, non-ASCII) for the
    /// tables and indexes of a load, into a new file and into a file that already holds
    /// objects of those names: every file is one SQLite reads (integrity_check, no name
    /// twice), every table has its rows, and every index asked for is there on its
    /// columns, UNIQUE where asked (and enforcing).
    mod names_collide {
        use proptest::prelude::*;

        use super::*;

        const TABLES: [&str; 7] = ["t", "T", "idx_t_a", "idx_t_a_b", "É", "é", "x\"q"];
        const WANTED: [Option<&str>; 8] = [
            None,
            Some("ix"),
            Some("IX"),
            Some("t"),
            Some("idx_t_a"),
            Some("sqlite_autoindex_t_1"),
            Some("é"),
            Some("idx_t_a_b"),
        ];
        const KEYS: [&[&str]; 5] = [&["a_b"], &["a", "b"], &["A", "b"], &["a"], &["b", "a_b"]];

        fn case(table: &str, indexes: &[(usize, bool, usize)]) -> Case {
            let n = 50i64;
            let col = |k: i64| -> ArrayRef {
                Arc::new(Int64Array::from(
                    (0..n).map(|i| i * 3 + k).collect::<Vec<_>>(),
                ))
            };
            let batch = RecordBatch::try_from_iter(["a", "b", "a_b"].into_iter().zip([
                col(0),
                col(1),
                col(2),
            ]))
            .expect("a batch");
            let indexes = indexes
                .iter()
                .map(|&(k, unique, w)| IndexSpec {
                    columns: KEYS[k].iter().map(|c| c.to_string()).collect(),
                    unique,
                    name: WANTED[w].map(String::from),
                })
                .collect();
            Case {
                shape: TableShape {
                    table: table.into(),
                    rowid: None,
                    indexes,
                    ..TableShape::default()
                },
                batch,
            }
        }

        /// Each index of `want` on `table` of `conn`: one there on its columns, UNIQUE
        /// where asked.
        fn holds(conn: &Connection, table: &str, want: &[IndexSpec]) -> R {
            let held = crate::table::held_indexes(conn, table)?;
            for ix in want {
                assert!(
                    held.iter().any(|h| (h.unique || !ix.unique)
                        && h.columns.len() == ix.columns.len()
                        && h.columns
                            .iter()
                            .zip(&ix.columns)
                            .all(|(a, b)| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(b)))),
                    "{table}: {ix:?} missing from {held:?}"
                );
            }
            if want.iter().any(|ix| ix.unique) {
                let again = format!(
                    "INSERT INTO {t} SELECT * FROM {t} LIMIT 1",
                    t = quote_ident(table)
                );
                assert!(
                    conn.execute_batch(&again).is_err(),
                    "{table}: UNIQUE enforced"
                );
            }
            Ok(())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(24))]
            #[test]
            fn every_object_gets_a_name_of_its_own(
                tables in proptest::sample::subsequence(TABLES.to_vec(), 1..4),
                indexes in proptest::collection::vec(
                    proptest::collection::vec((0..KEYS.len(), any::<bool>(), 0..WANTED.len()), 0..4),
                    4,
                ),
                existing in any::<bool>(),
            ) {
                let dir = tempfile::tempdir().unwrap();
                let db = dir.path().join("names.db");
                if existing {
                    // Objects already there with the names the load wants: an index
                    // named like a table of the load, tables named like its indexes.
                    Connection::open(&db).unwrap().execute_batch(
                        "CREATE TABLE pre(a, b); CREATE INDEX \"T\" ON pre(a); \
                         CREATE INDEX ix ON pre(b); CREATE TABLE idx_T_A_2(z); \
                         CREATE UNIQUE INDEX \"é_2\" ON pre(a, b);",
                    ).unwrap();
                }
                let cases: Vec<Case> = tables
                    .iter()
                    .zip(&indexes)
                    .map(|(t, ix)| case(t, ix))
                    .collect();
                let summary = run(&db, &cases).unwrap();
                prop_assert_eq!(summary.rows, 50 * cases.len() as u64);
                let conn = Connection::open(&db).unwrap();
                crate::names::check_schema(&conn).unwrap();
                let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
                prop_assert_eq!(ok, "ok");
                // The tables the load made, in its order (renamed ones too).
                let made: Vec<String> = conn
                    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT IN ('pre', 'idx_T_A_2') ORDER BY rootpage")
                    .unwrap()
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap();
                prop_assert_eq!(made.len(), cases.len(), "{:?}", made);
                // Tables are made in the load's order, so their root pages rise with it.
                for (c, t) in cases.iter().zip(&made) {
                    prop_assert!(
                        t.eq_ignore_ascii_case(&c.shape.table)
                            || t.to_ascii_lowercase().starts_with(&c.shape.table.to_ascii_lowercase()),
                        "{} made as {}", c.shape.table, t
                    );
                    let n: i64 = conn
                        .query_row(&format!("SELECT count(*) FROM {}", quote_ident(t)), [], |r| r.get(0))
                        .unwrap();
                    prop_assert_eq!(n, 50);
                    holds(&conn, t, &c.shape.indexes).unwrap();
                }
            }
        }
    }
}
