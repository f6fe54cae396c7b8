//! A file SQLite wrote, read page by page (`Existing::table_rows`, `index_entries`) and
//! its records written as they are stored into a new file by the page writer: the copy
//! equals SQLite's file, row for row; and damaged pages are errors, never a panic.

use std::fs::File;
use std::path::Path;

use liteload_btree::{DbWriter, Existing, Record};
use liteload_fuzzcheck::{create_sql, dump, write_sqlite, R, V};
use proptest::prelude::*;
use rusqlite::Connection;

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        Just(V::Null),
        any::<i64>().prop_map(V::Int),
        prop::sample::select(vec![0i64, 1, -1, 255, 1 << 40]).prop_map(V::Int),
        any::<f64>()
            .prop_filter("not NaN", |f| !f.is_nan())
            .prop_map(V::Real),
        (0usize..6000).prop_map(|n| V::Text("é".repeat(n / 2) + &"x".repeat(n % 2))),
        (0usize..6000).prop_map(|n| V::Blob((0..n).map(|i| (i * 7) as u8).collect())),
    ]
}

/// Copies table "t" of `from` (and its index "t_c0") into a new file at `to` as stored.
fn copy_as_stored(from: &Path, to: &Path, page: u32, cols: usize) -> R<usize> {
    let (root, index_root, index_sql): (u32, u32, String) = {
        let c = Connection::open(from)?;
        c.query_row(
            "SELECT t.rootpage, i.rootpage, i.sql FROM sqlite_schema t, sqlite_schema i \
             WHERE t.name = 't' AND i.name = 't_c0'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?
    };
    let mut file = File::open(from)?;
    let header = Existing::read(&mut file)?;
    let mut out = DbWriter::create(to, page)?;
    let mut rows = header.table_rows(&file, root)?;
    let mut table = out.table("t", &create_sql(cols));
    while let Some((rowid, record)) = rows.next_row()? {
        table.push_record(rowid, Record::parse(record)?)?;
    }
    table.finish()?;
    let mut entries = header.index_entries(&file, index_root)?;
    let mut index = out.index_builder("t_c0", "t", &index_sql);
    let mut n = 0;
    while let Some(e) = entries.next_entry()? {
        index.push(e)?;
        n += 1;
    }
    index.finish()?;
    out.finish()?;
    Ok(n)
}

fn table() -> impl Strategy<Value = (u32, usize, Vec<(i64, Vec<V>)>)> {
    let page = prop::sample::select(vec![512u32, 1024, 4096, 65536]);
    (page, 1usize..5).prop_flat_map(|(page, cols)| {
        let row = prop::collection::vec(value(), cols);
        let rows = prop::collection::vec((1i64..50, row), 0..300).prop_map(|rows| {
            let mut id = -20;
            rows.into_iter()
                .map(|(gap, r)| {
                    id += gap;
                    (id, r)
                })
                .collect()
        });
        (Just(page), Just(cols), rows)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn records_read_as_stored_copy_into_the_same_table((page, cols, rows) in table()) {
        let run = || -> R {
            let d = tempfile::tempdir()?;
            let (from, to) = (d.path().join("sqlite.db"), d.path().join("copy.db"));
            write_sqlite(&from, page, cols, &rows)?;
            Connection::open(&from)?.execute_batch("CREATE INDEX t_c0 ON t (c0)")?;
            let entries = copy_as_stored(&from, &to, page, cols)?;
            assert_eq!(entries, rows.len());
            assert_eq!(dump(&to)?, dump(&from)?);
            let c = Connection::open(&to)?;
            let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
            assert_eq!(check, "ok");
            Ok(())
        };
        run().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    /// Bytes changed anywhere past the header: reading the table and index through is
    /// an error or a walk that ends, never a panic or a loop.
    #[test]
    fn damaged_pages_are_errors_not_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..20),
    ) {
        let run = || -> R {
            let d = tempfile::tempdir()?;
            let from = d.path().join("sqlite.db");
            let rows: Vec<(i64, Vec<V>)> = (0..400)
                .map(|i| (i * 3 + 1, vec![V::Int(i % 7), V::Text("ü".repeat(i as usize * 5))]))
                .collect();
            write_sqlite(&from, 1024, 2, &rows)?;
            Connection::open(&from)?.execute_batch("CREATE INDEX t_c0 ON t (c0, c1)")?;
            let (root, index_root): (u32, u32) = Connection::open(&from)?.query_row(
                "SELECT t.rootpage, i.rootpage FROM sqlite_schema t, sqlite_schema i \
                 WHERE t.name = 't' AND i.name = 't_c0'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let mut bytes = std::fs::read(&from)?;
            for (at, b) in &flips {
                let i = 100 + at.index(bytes.len() - 100);
                bytes[i] = *b;
            }
            std::fs::write(&from, &bytes)?;
            let mut file = File::open(&from)?;
            let Ok(header) = Existing::read(&mut file) else { return Ok(()) };
            if let Ok(mut rows) = header.table_rows(&file, root) {
                while let Ok(Some((_, rec))) = rows.next_row() {
                    let _ = Record::parse(rec);
                }
            }
            if let Ok(mut entries) = header.index_entries(&file, index_root) {
                while let Ok(Some(e)) = entries.next_entry() {
                    let _ = Record::parse(e);
                }
            }
            Ok(())
        };
        run().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
