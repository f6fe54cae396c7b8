//! Every file the direct writer makes is opened by SQLite and compared with the same rows
//! loaded through SQLite itself: same rows, same schema, `integrity_check` ok.

use std::path::Path;

use liteload_btree::{DbWriter, Value};
use liteload_fuzzcheck::{create_sql, dump, write_direct, write_sqlite, R, V};
use proptest::prelude::*;
use rusqlite::types::Value as Sql;
use rusqlite::Connection;

/// Sizes around every page size's overflow thresholds (local max X = U - 35, min local
/// M, and one overflow page beyond), and small ones.
fn length() -> impl Strategy<Value = usize> {
    let mut edges = vec![0usize, 1, 2, 10, 100];
    for u in [512usize, 1024, 4096, 65536] {
        let x = u - 35;
        let m = (u - 12) * 32 / 255 - 23;
        for base in [x, m + u - 4, x + u - 4] {
            edges.extend([base.saturating_sub(12), base - 1, base, base + 1, base + 9]);
        }
    }
    prop_oneof![0usize..40, prop::sample::select(edges)]
}

fn value() -> impl Strategy<Value = V> {
    let ints = prop_oneof![
        prop::sample::select(vec![
            0i64,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            32767,
            32768,
            -32768,
            -32769,
            8_388_607,
            8_388_608,
            -8_388_608,
            -8_388_609,
            2_147_483_647,
            2_147_483_648,
            -2_147_483_649,
            140_737_488_355_327,
            140_737_488_355_328,
            -140_737_488_355_329,
            i64::MAX,
            i64::MIN,
        ]),
        any::<i64>(),
    ];
    prop_oneof![
        Just(V::Null),
        ints.prop_map(V::Int),
        any::<f64>()
            .prop_filter("NaN reads back as NULL", |f| !f.is_nan())
            .prop_map(V::Real),
        length().prop_map(|n| V::Text("é".repeat(n / 2) + &"x".repeat(n % 2))),
        length().prop_map(|n| V::Blob((0..n).map(|i| (i * 7) as u8).collect())),
    ]
}

fn same_as_sqlite(page: u32, cols: usize, rows: &[(i64, Vec<V>)]) -> R {
    same_as_sqlite_cut(page, cols, rows, &[])
}

fn same_as_sqlite_cut(page: u32, cols: usize, rows: &[(i64, Vec<V>)], cuts: &[usize]) -> R {
    let d = tempfile::tempdir()?;
    let (a, b) = (d.path().join("direct.db"), d.path().join("sqlite.db"));
    write_direct(&a, page, cols, rows, cuts)?;
    write_sqlite(&b, page, cols, rows)?;
    let (got, want) = (dump(&a)?, dump(&b)?);
    if got != want {
        return Err(format!(
            "direct and SQLite files differ (page {page}, {cols} columns, {} rows)",
            rows.len()
        )
        .into());
    }
    Ok(())
}

fn table() -> impl Strategy<Value = (u32, usize, Vec<(i64, Vec<V>)>)> {
    let page = prop::sample::select(vec![512u32, 1024, 2048, 4096, 8192, 16384, 32768, 65536]);
    let cols = prop_oneof![8 => 1usize..6, 1 => 1usize..2000];
    (page, cols)
        .prop_flat_map(|(page, cols)| {
            let max_rows = if cols > 50 { 3 } else { 120 };
            let row = prop::collection::vec(value(), cols);
            (
                Just(page),
                Just(cols),
                prop::collection::vec((1i64..1000, row), 0..max_rows),
            )
        })
        .prop_map(|(page, cols, rows)| (page, cols, with_gaps(-500, rows)))
}

/// Strictly increasing rowids from `start` plus each row's random gap.
fn with_gaps(start: i64, rows: Vec<(i64, Vec<V>)>) -> Vec<(i64, Vec<V>)> {
    let mut id = start;
    rows.into_iter()
        .map(|(gap, r)| {
            id += gap;
            (id, r)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn files_equal_sqlites_own((page, cols, rows) in table()) {
        same_as_sqlite(page, cols, &rows).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    /// Leaves filled on other threads and appended give the same table.
    #[test]
    fn appended_leaves_equal_sqlites_own(
        (page, cols, rows) in table(),
        cuts in prop::collection::vec(0usize..120, 0..5),
    ) {
        same_as_sqlite_cut(page, cols, &rows, &cuts)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[test]
fn many_rows_make_several_interior_levels() -> R {
    // 512-byte pages: ~30 small rows a leaf, ~33 children an interior page: 60,000 rows
    // need three levels above the leaves.
    let rows: Vec<(i64, Vec<V>)> = (1..=60_000)
        .map(|i| (i * 3, vec![V::Int(i), V::Text(format!("row {i}"))]))
        .collect();
    same_as_sqlite(512, 2, &rows)?;
    same_as_sqlite(4096, 2, &rows)
}

#[test]
fn an_empty_table_and_a_rowid_alias() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("a.db");
    let mut db = DbWriter::create(&p, 4096)?;
    db.table("empty", "CREATE TABLE empty (x)").finish()?;
    let mut t = db.table(
        "user",
        "CREATE TABLE user (id INTEGER PRIMARY KEY, area TEXT, age INTEGER)",
    );
    for id in 1..=1000i64 {
        t.push(
            id,
            &[Value::Null, Value::Text(b"area"), Value::Integer(id % 90)],
        )?;
    }
    assert!(matches!(
        t.push(1000, &[Value::Null, Value::Null, Value::Null]),
        Err(liteload_btree::Error::RowidOrder {
            last: 1000,
            got: 1000
        })
    ));
    t.finish()?;
    db.finish()?.sync_all()?;
    let c = Connection::open(&p)?;
    let n: i64 = c.query_row("SELECT count(*) FROM empty", [], |r| r.get(0))?;
    assert_eq!(n, 0);
    let (sum, max): (i64, i64) = c.query_row(
        "SELECT sum(age), max(id) FROM user WHERE id > 10",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!(max, 1000);
    assert_eq!(sum, (11..=1000i64).map(|i| i % 90).sum::<i64>());
    let age: i64 = c.query_row("SELECT age FROM user WHERE id = 500", [], |r| r.get(0))?;
    assert_eq!(age, 500 % 90);
    Ok(())
}

#[test]
fn sqlite_keeps_using_the_file() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("k.db");
    let rows: Vec<(i64, Vec<V>)> = (1..=5000)
        .map(|i| {
            (
                i,
                vec![V::Int(i % 17), V::Text("x".repeat((i % 50) as usize * 100))],
            )
        })
        .collect();
    write_direct(&p, 1024, 2, &rows, &[1000, 40_000])?;
    let c = Connection::open(&p)?;
    c.execute_batch(
        "INSERT INTO t (c0, c1) SELECT c0 + 1, c1 FROM t WHERE rowid % 3 = 0;
         CREATE INDEX t_c0 ON t (c0);
         DELETE FROM t WHERE rowid % 7 = 0;
         VACUUM;",
    )?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let n: i64 = c.query_row("SELECT count(*) FROM t WHERE c0 = 3", [], |r| r.get(0))?;
    assert!(n > 0);
    drop(c);
    // Debian's own sqlite3 reads it too, where it is installed.
    if let Ok(out) = std::process::Command::new("sqlite3")
        .arg(&p)
        .arg("PRAGMA integrity_check;")
        .output()
    {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    }
    Ok(())
}

/// Past 1 GiB the lock-byte page must be skipped: by leaves and by overflow chains that
/// would run through it. (Writes a 1.2 GB file.)
#[test]
fn a_file_past_one_gibibyte_skips_the_lock_byte_page() -> R {
    let d = tempfile::tempdir()?;
    let p = d.path().join("big.db");
    let blob: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let small = "s".repeat(20_000);
    let mut db = DbWriter::create(&p, 65536)?;
    let mut t = db.table("t", "CREATE TABLE t (a, b)");
    let rows = 15_000i64;
    for i in 1..=rows {
        // Mostly two-page payloads, with small rows between, so chains and leaves both
        // meet the lock-byte page.
        let v = if i % 3 == 0 {
            Value::Text(small.as_bytes())
        } else {
            Value::Blob(&blob)
        };
        t.push(i, &[Value::Integer(i), v])?;
    }
    t.finish()?;
    db.finish()?.sync_all()?;
    assert!(std::fs::metadata(&p)?.len() > 1 << 30);
    let c = Connection::open(&p)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let (n, bytes): (i64, i64) =
        c.query_row("SELECT count(*), sum(length(b)) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    assert_eq!(n, rows);
    assert_eq!(
        bytes,
        (1..=rows)
            .map(|i| if i % 3 == 0 { 20_000 } else { 100_000 })
            .sum::<i64>()
    );
    let back: Vec<u8> = c.query_row("SELECT b FROM t WHERE a = 5000", [], |r| r.get(0))?;
    assert_eq!(back, blob);
    Ok(())
}

/// A schema too large for page 1: page 1 becomes the root over leaves of their own.
#[test]
fn a_large_schema_moves_off_page_one() -> R {
    for (page, tables, cols) in [(512u32, 1usize, 191usize), (512, 60, 30), (1024, 300, 5)] {
        let d = tempfile::tempdir()?;
        let p = d.path().join("s.db");
        let mut db = DbWriter::create(&p, page)?;
        for t in 0..tables {
            let defs: Vec<String> = (0..cols).map(|c| format!("\"column_{c}\"")).collect();
            let sql = format!("CREATE TABLE \"t{t}\" ({})", defs.join(", "));
            let mut w = db.table(&format!("t{t}"), &sql);
            w.push(1, &vec![Value::Integer(t as i64); cols])?;
            w.finish()?;
        }
        db.finish()?.sync_all()?;
        let c = Connection::open(&p)?;
        let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok", "page {page}, {tables} tables");
        let n: i64 = c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
        assert_eq!(n, tables as i64);
        let last = format!("SELECT \"column_{}\" FROM \"t{}\"", cols - 1, tables - 1);
        let v: i64 = c.query_row(&last, [], |r| r.get(0))?;
        assert_eq!(v, tables as i64 - 1);
    }
    Ok(())
}

/// The table and an index on its first `keys` columns, written directly (entries sorted
/// by `index::compare`) and by SQLite (`CREATE INDEX` after the rows); both files must
/// pass `integrity_check` (which checks every index entry against its row) and give the
/// same rows and schema, and the same order when read through the index. With
/// `int_pairs` and one key column of only integers, the entries go in as (key, rowid)
/// pairs instead of records.
fn index_same_as_sqlite(
    page: u32,
    cols: usize,
    keys: usize,
    rows: &[(i64, Vec<V>)],
    int_pairs: bool,
) -> R {
    use liteload_btree::index;
    let d = tempfile::tempdir()?;
    let (a, b) = (d.path().join("direct.db"), d.path().join("sqlite.db"));
    let key_cols: Vec<String> = (0..keys).map(|c| format!("\"c{c}\"")).collect();
    let index_sql = format!("CREATE INDEX \"i\" ON \"t\" ({})", key_cols.join(", "));
    // Direct.
    let mut db = DbWriter::create(&a, page)?;
    let mut t = db.table("t", &create_sql(cols));
    let mut entries: Vec<Vec<u8>> = vec![];
    for (rowid, row) in rows {
        let vals: Vec<Value> = row.iter().map(V::direct).collect();
        t.push(*rowid, &vals)?;
        let mut key: Vec<Value> = vals[..keys].to_vec();
        key.push(Value::Integer(*rowid));
        let mut rec = vec![];
        liteload_btree::record::encode(&key, &mut rec);
        entries.push(rec);
    }
    t.finish()?;
    let ints: Option<Vec<(i64, i64)>> = rows
        .iter()
        .map(|(rowid, row)| match row[0] {
            V::Int(k) if keys == 1 => Some((k, *rowid)),
            _ => None,
        })
        .collect();
    if let Some(mut pairs) = ints.filter(|_| int_pairs) {
        // One integer key: the writer encodes the entries from (key, rowid) pairs.
        pairs.sort();
        db.index_int_pairs("i", "t", &index_sql, &pairs)?;
    } else {
        entries.sort_by(|x, y| index::compare(x, y));
        let refs: Vec<&[u8]> = entries.iter().map(|e| e.as_slice()).collect();
        db.index("i", "t", &index_sql, &refs)?;
    }
    db.finish()?.sync_all()?;
    // SQLite.
    write_sqlite(&b, page, cols, rows)?;
    Connection::open(&b)?.execute_batch(&index_sql)?;
    let through_index = |p: &Path| -> Result<Vec<Vec<Sql>>, Box<dyn std::error::Error>> {
        let c = Connection::open(p)?;
        let mut st = c.prepare(&format!(
            "SELECT rowid, {} FROM \"t\" INDEXED BY \"i\" ORDER BY {}, rowid",
            key_cols.join(", "),
            key_cols.join(", ")
        ))?;
        let n = st.column_count();
        let rows = st
            .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?
            .collect::<Result<Vec<Vec<Sql>>, _>>()?;
        Ok(rows)
    };
    let (got, want) = (dump(&a)?, dump(&b)?);
    if got != want {
        return Err(format!("files differ (page {page}, {} rows)", rows.len()).into());
    }
    if through_index(&a)? != through_index(&b)? {
        return Err(format!("index order differs (page {page}, {} rows)", rows.len()).into());
    }
    Ok(())
}

fn indexed_table() -> impl Strategy<Value = (u32, usize, Vec<(i64, Vec<V>)>)> {
    let page = prop::sample::select(vec![512u32, 1024, 4096, 65536]);
    (page, 1usize..3)
        .prop_flat_map(|(page, keys)| {
            // Few distinct small values too, so equal keys meet and the rowid decides.
            let small = prop_oneof![(0i64..4).prop_map(V::Int), Just(V::Null), value()];
            let row = prop::collection::vec(small, 3);
            (
                Just(page),
                Just(keys),
                prop::collection::vec((1i64..50, row), 0..400),
            )
        })
        .prop_map(|(page, keys, rows)| (page, keys, with_gaps(-100, rows)))
}

/// Rows whose first column is an integer (few distinct values, so the rowid decides
/// often, and the width boundaries), for an index written from (key, rowid) pairs.
fn int_keyed_table() -> impl Strategy<Value = (u32, Vec<(i64, Vec<V>)>)> {
    let page = prop::sample::select(vec![512u32, 1024, 4096, 65536]);
    let key = prop_oneof![(-2i64..3), any::<i64>(), Just(i64::MIN), Just(i64::MAX)];
    let row = (key, value()).prop_map(|(k, v)| vec![V::Int(k), v]);
    (page, prop::collection::vec((1i64..50, row), 0..2000))
        .prop_map(|(page, rows)| (page, with_gaps(-100, rows)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn indexes_equal_sqlites_own((page, keys, rows) in indexed_table()) {
        index_same_as_sqlite(page, 3, keys, &rows, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn integer_pair_indexes_equal_sqlites_own((page, rows) in int_keyed_table()) {
        index_same_as_sqlite(page, 2, 1, &rows, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[test]
fn a_large_index_has_several_levels_and_long_keys_overflow() -> R {
    let rows: Vec<(i64, Vec<V>)> = (1..=20_000)
        .map(|i| {
            let long = if i % 97 == 0 {
                "k".repeat(3000)
            } else {
                String::new()
            };
            (
                i,
                vec![
                    V::Int((i * 7919) % 1000),
                    V::Text(format!("{long}{}", i % 13)),
                    V::Real(i as f64 / 3.0),
                ],
            )
        })
        .collect();
    index_same_as_sqlite(512, 3, 2, &rows, false)?;
    index_same_as_sqlite(4096, 3, 1, &rows, false)?;
    index_same_as_sqlite(512, 3, 1, &rows, true)
}

/// Rowids must rise across pushed and appended rows alike.
#[test]
fn rowids_out_of_order_are_refused_across_push_and_append() -> R {
    let d = tempfile::tempdir()?;
    let mut db = DbWriter::create(&d.path().join("o.db"), 4096)?;
    let mut t = db.table("t", &create_sql(1));
    t.push(5, &[Value::Integer(1)])?;
    let mut early = liteload_btree::Leaves::new(4096);
    early.push(3, &[Value::Integer(1)])?;
    assert!(t.append(&mut early).is_err(), "3 after 5");
    let mut late = liteload_btree::Leaves::new(4096);
    late.push(6, &[Value::Integer(1)])?;
    late.push(10, &[Value::Integer(1)])?;
    t.append(&mut late)?;
    assert!(t.push(9, &[Value::Integer(1)]).is_err(), "9 after 10");
    assert!(t.push(10, &[Value::Integer(1)]).is_err(), "10 twice");
    t.push(11, &[Value::Integer(1)])?;
    assert_eq!(t.rows(), 4);
    Ok(())
}

/// The public API takes no unsorted index entries and no bytes that are not a record,
/// in any build: each is an error, never a file SQLite would find malformed.
#[test]
fn unsorted_entries_and_bytes_that_are_no_record_are_refused() -> R {
    use liteload_btree::{Error, Record};
    let d = tempfile::tempdir()?;
    let (a, b, c) = (int_entry(1, 1), int_entry(2, 2), int_entry(2, 3));
    let cases: [(Vec<&[u8]>, &str); 4] = [
        (vec![&b, &a], "IndexOrder { at: 1 }"),
        (vec![&a, &b, &b], "IndexOrder { at: 2 }"),
        (vec![&a, &c, &b], "IndexOrder { at: 2 }"),
        (vec![&a, &[3, 1, 1, 7]], "NotARecord"),
    ];
    for (entries, want) in cases {
        let mut db = DbWriter::create(&d.path().join("x.db"), 4096)?;
        let mut t = db.table("t", "CREATE TABLE \"t\"(\"k\")");
        t.push(1, &[Value::Integer(1)])?;
        t.finish()?;
        let e = db.index("i", "t", "CREATE INDEX \"i\" ON \"t\"(\"k\")", &entries);
        assert!(format!("{e:?}").contains(want), "{e:?}");
    }
    let e = Record::parse(&[2, 1]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an SQLite record: the body's length is not what the serial types call for"
    );
    let mut db = DbWriter::create(&d.path().join("y.db"), 4096)?;
    let e = db
        .index("i", "t", "CREATE INDEX \"i\" ON \"t\"(\"k\")", &[&b, &a])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "index entry 1 does not sort after the one before it: entries must come sorted and distinct"
    );
    assert!(matches!(Record::parse(&[2, 1]), Err(Error::NotARecord(_))));
    // A bad first entry is reported as such, never decoded to be compared.
    let mut db = DbWriter::create(&d.path().join("z.db"), 4096)?;
    let e = db.index(
        "i",
        "t",
        "CREATE INDEX \"i\" ON \"t\"(\"k\")",
        &[&[3, 1, 1, 7], &a, &b],
    );
    assert!(matches!(e, Err(Error::NotARecord(_))), "{e:?}");
    // Pairs must rise strictly.
    for (pairs, at) in [(vec![(1, 1), (1, 1)], 1), (vec![(1, 2), (2, 1), (1, 3)], 2)] {
        let mut db = DbWriter::create(&d.path().join("p.db"), 4096)?;
        let e = db.index_int_pairs("i", "t", "CREATE INDEX \"i\" ON \"t\"(\"k\")", &pairs);
        assert!(
            matches!(e, Err(Error::IndexOrder { at: a }) if a == at),
            "{e:?}"
        );
    }
    assert!(matches!(
        Record::parse(&[2, 13, b'x', b'y']),
        Err(Error::NotARecord(_))
    ));
    assert!(Record::parse(&[2, 17, b'x', b'y']).is_ok());
    Ok(())
}

/// An index pushed one entry at a time (`IndexBuilder`) is the same file, byte for byte,
/// as the one written from all its entries at once, and SQLite finds it sound.
fn builder_writes_what_index_writes(page: u32, rows: &[(i64, Vec<V>)]) -> R {
    use liteload_btree::index;
    let d = tempfile::tempdir()?;
    let index_sql = "CREATE INDEX \"i\" ON \"t\" (\"c0\")";
    let mut entries: Vec<Vec<u8>> = rows
        .iter()
        .map(|(rowid, row)| {
            let mut rec = vec![];
            liteload_btree::record::encode(&[row[0].direct(), Value::Integer(*rowid)], &mut rec);
            rec
        })
        .collect();
    entries.sort_by(|x, y| index::compare(x, y));
    let write = |path: &Path, streamed: bool| -> R {
        let mut db = DbWriter::create(path, page)?;
        let mut t = db.table("t", &create_sql(3));
        for (rowid, row) in rows {
            let vals: Vec<Value> = row.iter().map(V::direct).collect();
            t.push(*rowid, &vals)?;
        }
        t.finish()?;
        if streamed {
            let mut b = db.index_builder("i", "t", index_sql);
            for e in &entries {
                b.push(e)?;
            }
            b.finish()?;
        } else {
            let refs: Vec<&[u8]> = entries.iter().map(|e| e.as_slice()).collect();
            db.index("i", "t", index_sql, &refs)?;
        }
        db.finish()?.sync_all()?;
        Ok(())
    };
    let (a, b) = (d.path().join("all.db"), d.path().join("streamed.db"));
    write(&a, false)?;
    write(&b, true)?;
    if std::fs::read(&a)? != std::fs::read(&b)? {
        return Err(format!("files differ (page {page}, {} rows)", rows.len()).into());
    }
    let ok: String = Connection::open(&b)?.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if ok != "ok" {
        return Err(ok.into());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn an_index_pushed_entry_by_entry_is_the_same_file((page, _, rows) in indexed_table()) {
        builder_writes_what_index_writes(page, &rows).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[test]
fn a_large_index_pushed_entry_by_entry_is_the_same_file_and_refuses_disorder() -> R {
    let rows: Vec<(i64, Vec<V>)> = (1..=20_000)
        .map(|i| {
            let long = if i % 97 == 0 {
                "k".repeat(3000)
            } else {
                String::new()
            };
            (
                i,
                vec![V::Text(format!("{long}{}", i % 13)), V::Int(i), V::Null],
            )
        })
        .collect();
    builder_writes_what_index_writes(512, &rows)?;
    builder_writes_what_index_writes(4096, &rows)?;
    let d = tempfile::tempdir()?;
    let mut db = DbWriter::create(&d.path().join("o.db"), 4096)?;
    let mut b = db.index_builder("i", "t", "CREATE INDEX \"i\" ON \"t\"(\"k\")");
    b.push(&int_entry(1, 1))?;
    b.push(&int_entry(2, 1))?;
    let e = b.push(&int_entry(2, 1));
    assert!(
        matches!(e, Err(liteload_btree::Error::IndexOrder { at: 2 })),
        "{e:?}"
    );
    let e = b.push(&[3, 1, 1, 7]);
    assert!(
        matches!(e, Err(liteload_btree::Error::NotARecord(_))),
        "{e:?}"
    );
    Ok(())
}

/// The index entry of integer key `k` in row `rowid`.
fn int_entry(k: i64, rowid: i64) -> Vec<u8> {
    let mut rec = vec![];
    liteload_btree::record::encode(&[Value::Integer(k), Value::Integer(rowid)], &mut rec);
    rec
}

/// Rows pushed through a table set aside and taken back every `every` rows (as the
/// import's page-writer sink does between batches) give SQLite's own file.
fn detached_same_as_sqlite(page: u32, cols: usize, rows: &[(i64, Vec<V>)], every: usize) -> R {
    let d = tempfile::tempdir()?;
    let (a, b) = (d.path().join("detached.db"), d.path().join("sqlite.db"));
    let mut db = DbWriter::create(&a, page)?;
    let mut table = Some(db.table("t", &create_sql(cols)).detach());
    for chunk in rows.chunks(every.max(1)) {
        let mut t = db.attach(table.take().ok_or("set aside")?);
        for (rowid, row) in chunk {
            let vals: Vec<Value<'_>> = row.iter().map(V::direct).collect();
            t.push(*rowid, &vals)?;
        }
        table = Some(t.detach());
    }
    let table = table.ok_or("set aside")?;
    if table.rows() != rows.len() as u64 {
        return Err(format!("{} rows of {}", table.rows(), rows.len()).into());
    }
    db.attach(table).finish()?;
    db.finish()?.sync_all()?;
    write_sqlite(&b, page, cols, rows)?;
    if dump(&a)? != dump(&b)? {
        return Err(format!("files differ (page {page}, {cols} columns, every {every})").into());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_table_set_aside_between_rows_is_the_same_file(
        (page, cols, rows) in table(),
        every in 1usize..40,
    ) {
        detached_same_as_sqlite(page, cols, &rows, every)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
