//! `liteload import` of Parquet and Arrow files: the flags that apply to typed input
//! (format, --select, --temporal, --decimals, globs, indexes, rejects, summary) and the
//! exit codes of bad input. The value mapping itself is tested against a reference in
//! the library's tests (`crates/core/tests/arrow_in.rs`) and against DuckDB's reading
//! in `foreign_writers.rs`.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Date32Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use assert_cmd::Command;
use common::checked_rows;
use predicates::prelude::*;
use rusqlite::types::Value;

fn liteload(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary");
    c.current_dir(dir);
    c
}

fn write_parquet(path: &Path, rb: &RecordBatch, group: usize) {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(path).expect("create"),
        rb.schema(),
        Some(props),
    )
    .expect("a writer");
    w.write(rb).expect("write");
    w.close().expect("close");
}

fn trips(first: i64, n: i64) -> RecordBatch {
    let id: ArrayRef = Arc::new(Int64Array::from((first..first + n).collect::<Vec<_>>()));
    let stop: ArrayRef = Arc::new(StringArray::from(
        (first..first + n)
            .map(|i| format!("stop {}", i % 17))
            .collect::<Vec<_>>(),
    ));
    let day: ArrayRef = Arc::new(Date32Array::from(
        (first..first + n)
            .map(|i| 20_000 + i as i32)
            .collect::<Vec<_>>(),
    ));
    RecordBatch::try_from_iter([("id", id), ("stop", stop), ("day", day)]).expect("a batch")
}

fn day_file(dir: &Path, name: &str, first: i64) -> PathBuf {
    let p = dir.join(name);
    write_parquet(&p, &trips(first, 500), 128);
    p
}

#[test]
fn a_glob_of_files_loads_into_one_table_with_indexes_by_either_engine() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("days")).expect("mkdir");
    for (k, name) in [
        "2026-11-01.parquet",
        "2026-11-02.parquet",
        "2026-11-03.parquet",
    ]
    .iter()
    .enumerate()
    {
        day_file(&dir.path().join("days"), name, k as i64 * 500);
    }
    for engine in ["auto", "sqlite"] {
        let db = format!("{engine}.db");
        liteload(dir.path())
            .args([
                "import",
                &db,
                "days/*.parquet",
                "--table",
                "trips",
                "--index",
                "id",
            ])
            .args(["--index", "stop", "--engine", engine, "--summary-json"])
            .assert()
            .success()
            .stdout(predicate::str::contains("\"rows\":1500"));
        let rows = checked_rows(
            &dir.path().join(&db),
            "SELECT count(*), sum(id), min(day), max(stop), \
             (SELECT count(*) FROM sqlite_schema WHERE type = 'index') FROM trips",
        )
        .expect("read back");
        assert_eq!(
            rows[0],
            [
                Value::Integer(1500),
                Value::Integer(1499 * 1500 / 2),
                Value::Text("2024-10-04".into()),
                Value::Text("stop 9".into()),
                Value::Integer(2),
            ]
        );
    }
    liteload(dir.path())
        .args(["import", "x.db", "nothing/*.parquet"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no file matches this pattern"));
}

#[test]
fn select_temporal_and_format_flags_shape_the_table() {
    let dir = tempfile::tempdir().expect("dir");
    let p = day_file(dir.path(), "trips.data", 0);
    // No extension that says the format: told by its magic bytes, or named by --format.
    liteload(dir.path())
        .args(["import", "s.db", "trips.data"])
        .assert()
        .success()
        .stderr(predicate::str::contains("sniffed: trips.data: Parquet"));
    liteload(dir.path())
        .args(["import", "n.db", "trips.data", "--no-sniff"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--format"));
    liteload(dir.path())
        .args(["import", "t.db"])
        .arg(&p)
        .args([
            "--format",
            "parquet",
            "--select",
            "day,ID",
            "--temporal",
            "epoch",
            "-q",
        ])
        .assert()
        .success();
    let rows = checked_rows(
        &dir.path().join("t.db"),
        "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('trips')",
    )
    .expect("schema");
    assert_eq!(rows[0], [Value::Text("day INTEGER, id INTEGER".into())]);
    let rows = checked_rows(
        &dir.path().join("t.db"),
        "SELECT day, id FROM trips WHERE rowid = 3",
    )
    .expect("row");
    assert_eq!(rows[0], [Value::Integer(20_002), Value::Integer(2)]);
    liteload(dir.path())
        .args([
            "import",
            "u.db",
            "trips.data",
            "--format",
            "parquet",
            "--select",
            "when",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no column \"when\" to select (columns: id, stop, day)",
        ));
}

#[test]
fn bad_typed_input_exits_1_with_its_position_and_rejects_log_it() {
    let dir = tempfile::tempdir().expect("dir");
    let n: ArrayRef = Arc::new(UInt64Array::from(vec![Some(7), Some(u64::MAX), None]));
    write_parquet(
        &dir.path().join("big.parquet"),
        &RecordBatch::try_from_iter([("n", n)]).expect("batch"),
        2,
    );
    liteload(dir.path())
        .args(["import", "b.db", "big.parquet"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "big.parquet: record 2, field 1 \"n\": 18446744073709551615 does not fit SQLite's INTEGER",
        ));
    assert!(!dir.path().join("b.db").exists());
    liteload(dir.path())
        .args([
            "import",
            "b.db",
            "big.parquet",
            "--rejects",
            "bad.ndjson",
            "-q",
        ])
        .assert()
        .success();
    let log = std::fs::read_to_string(dir.path().join("bad.ndjson")).expect("the log");
    let line: serde_json::Value = serde_json::from_str(log.trim()).expect("one JSON line");
    assert_eq!(line["record"], 2);
    assert_eq!(line["fields"], serde_json::json!([18446744073709551615u64]));
    // a truncated file: exit 1, nothing written
    let bytes = std::fs::read(dir.path().join("big.parquet")).expect("read");
    std::fs::write(dir.path().join("cut.parquet"), &bytes[..bytes.len() - 10]).expect("write");
    liteload(dir.path())
        .args(["import", "c.db", "cut.parquet"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cut.parquet: not a readable Parquet file",
        ));
    assert!(!dir.path().join("c.db").exists());
}

#[test]
fn into_an_existing_table_rows_append_with_its_affinity() {
    let dir = tempfile::tempdir().expect("dir");
    day_file(dir.path(), "trips.parquet", 0);
    let db = dir.path().join("app.db");
    rusqlite::Connection::open(&db)
        .and_then(|c| {
            c.execute_batch(
                "CREATE TABLE trips (id TEXT, stop TEXT, day TEXT, note TEXT DEFAULT 'x')",
            )
        })
        .expect("a table");
    for _ in 0..2 {
        liteload(dir.path())
            .args(["import", "app.db", "trips.parquet", "-q"])
            .assert()
            .success();
    }
    let rows = checked_rows(
        &db,
        "SELECT count(*), typeof(id), min(note), max(day) FROM trips",
    )
    .expect("read back");
    assert_eq!(
        rows[0],
        [
            Value::Integer(1000),
            Value::Text("text".into()),
            Value::Text("x".into()),
            Value::Text("2026-02-15".into()),
        ]
    );
}
