//! Typed input: random Arrow tables (every type of the mapping, nulls, hostile text and
//! blobs past the overflow thresholds, 0 rows) written as Parquet, an IPC file, an IPC
//! stream and as record batches in memory, loaded by both engines, and read back value
//! by value and type by type against a reference written here from the Arrow values
//! (dates checked through SQLite's own date functions). Every file is checked by
//! `integrity_check`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, DictionaryArray,
    FixedSizeBinaryArray, Float32Array, Float64Array, Int16Array, Int64Array, Int8Array,
    LargeStringArray, NullArray, RecordBatch, RecordBatchIterator, StringArray, StringViewArray,
    StructArray, TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
    UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use liteload::source::columnar::{Decimals, Temporal};
use liteload::{import, Engine, ErrorKind, Format, ImportOptions, Input, Progress};
use proptest::prelude::*;
use rusqlite::types::Value as Sql;
use rusqlite::Connection;

type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// What a cell must read back as.
#[derive(Clone, Debug, PartialEq)]
enum Want {
    Null,
    Int(i64),
    /// Compared bit for bit.
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// TEXT that SQLite's `julianday` reads as this many milliseconds since 1970 (a
    /// timestamp: microsecond digits kept, checked to the millisecond by SQLite).
    Instant(i64),
    /// TEXT that SQLite's `julianday` reads as this day since 1970.
    Day(i64),
    /// TEXT that is this JSON.
    Json(serde_json::Value),
}

/// One column: its Arrow array and what each row must read back as.
#[derive(Debug)]
struct Col {
    name: String,
    array: ArrayRef,
    want: Vec<Want>,
}

fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9 ]{0,12}",
        2 => "\\PC{0,8}",
        1 => Just(String::new()),
        1 => Just("nul\0inside".to_string()),
        1 => Just("'); DROP TABLE t; --".to_string()),
        // past a 4096-byte page's local payload: overflow pages
        1 => (5000usize..20000).prop_map(|n| "é".repeat(n / 2)),
    ]
}

fn blob_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..16),
        1 => (5000usize..30000).prop_map(|n| (0..n).map(|i| (i * 7 % 256) as u8).collect()),
    ]
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop_oneof![1 => Just(None), 4 => s.prop_map(Some)]
}

/// The Arrow types of the mapping, each as a generator of a column of `rows` values.
fn column(
    rows: usize,
    kind: u8,
    temporal: Temporal,
    decimals: Decimals,
) -> BoxedStrategy<(ArrayRef, Vec<Want>)> {
    use proptest::collection::vec;
    let w = |o: Option<i64>| o.map_or(Want::Null, Want::Int);
    match kind % 18 {
        0 => vec(opt(any::<i8>()), rows)
            .prop_map(move |v| {
                (
                    Arc::new(Int8Array::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(x.map(i64::from))).collect(),
                )
            })
            .boxed(),
        1 => vec(opt(any::<i16>()), rows)
            .prop_map(move |v| {
                (
                    Arc::new(Int16Array::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(x.map(i64::from))).collect(),
                )
            })
            .boxed(),
        2 => vec(opt(any::<i64>()), rows)
            .prop_map(move |v| {
                (
                    Arc::new(Int64Array::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(*x)).collect(),
                )
            })
            .boxed(),
        3 => vec(opt(any::<u32>()), rows)
            .prop_map(move |v| {
                (
                    Arc::new(UInt32Array::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(x.map(i64::from))).collect(),
                )
            })
            .boxed(),
        4 => vec(opt(0..=i64::MAX as u64), rows)
            .prop_map(move |v| {
                (
                    Arc::new(UInt64Array::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(x.map(|u| u as i64))).collect(),
                )
            })
            .boxed(),
        5 => vec(
            opt(prop_oneof![any::<f32>(), Just(f32::NAN), Just(-0.0f32)]),
            rows,
        )
        .prop_map(move |v| {
            let want = v
                .iter()
                .map(|x| match x {
                    Some(f) if !f.is_nan() => Want::Real(f64::from(*f)),
                    _ => Want::Null,
                })
                .collect();
            (Arc::new(Float32Array::from(v)) as ArrayRef, want)
        })
        .boxed(),
        6 => vec(
            opt(prop_oneof![
                any::<f64>(),
                Just(f64::INFINITY),
                Just(f64::NAN),
                Just(-0.0f64)
            ]),
            rows,
        )
        .prop_map(move |v| {
            let want = v
                .iter()
                .map(|x| match x {
                    Some(f) if !f.is_nan() => Want::Real(*f),
                    _ => Want::Null,
                })
                .collect();
            (Arc::new(Float64Array::from(v)) as ArrayRef, want)
        })
        .boxed(),
        7 => vec(opt(any::<bool>()), rows)
            .prop_map(move |v| {
                (
                    Arc::new(BooleanArray::from(v.clone())) as ArrayRef,
                    v.iter().map(|x| w(x.map(i64::from))).collect(),
                )
            })
            .boxed(),
        8 => vec(opt(text_value()), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| x.clone().map_or(Want::Null, Want::Text))
                    .collect();
                (Arc::new(StringArray::from(v)) as ArrayRef, want)
            })
            .boxed(),
        9 => vec(opt(text_value()), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| x.clone().map_or(Want::Null, Want::Text))
                    .collect();
                (Arc::new(LargeStringArray::from(v)) as ArrayRef, want)
            })
            .boxed(),
        10 => vec(opt(text_value()), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| x.clone().map_or(Want::Null, Want::Text))
                    .collect();
                (Arc::new(StringViewArray::from(v)) as ArrayRef, want)
            })
            .boxed(),
        11 => vec(opt(blob_value()), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| x.clone().map_or(Want::Null, Want::Blob))
                    .collect();
                let refs: Vec<Option<&[u8]>> = v.iter().map(|x| x.as_deref()).collect();
                (Arc::new(BinaryArray::from(refs)) as ArrayRef, want)
            })
            .boxed(),
        12 => vec(opt(any::<[u8; 3]>()), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| x.map_or(Want::Null, |b| Want::Blob(b.to_vec())))
                    .collect();
                let arr = FixedSizeBinaryArray::try_from_sparse_iter_with_size(v.into_iter(), 3)
                    .expect("width 3");
                (Arc::new(arr) as ArrayRef, want)
            })
            .boxed(),
        13 => vec(opt(-700_000i32..2_900_000), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| match (x, temporal) {
                        (None, _) => Want::Null,
                        (Some(d), Temporal::Epoch) => Want::Int(i64::from(*d)),
                        (Some(d), _) => Want::Day(i64::from(*d)),
                    })
                    .collect();
                (Arc::new(Date32Array::from(v)) as ArrayRef, want)
            })
            .boxed(),
        14 => (0u8..3)
            .prop_flat_map(move |unit| {
                // values of each unit within years 0000-9999 (nanoseconds: all of i64)
                let range = match unit {
                    0 => -62_167_219_200i64..253_402_300_799,
                    1 => -62_167_219_200_000..253_402_300_799_999,
                    _ => i64::MIN..i64::MAX,
                };
                (Just(unit), vec(opt(range), rows))
            })
            .prop_map(move |(unit, v)| {
                let want = v
                    .iter()
                    .map(|x| match (x, temporal) {
                        (None, _) => Want::Null,
                        (Some(t), Temporal::Epoch) => Want::Int(*t),
                        (Some(t), _) => Want::Instant(match unit {
                            0 => t * 1000,
                            1 => *t,
                            _ => t.div_euclid(1_000_000),
                        }),
                    })
                    .collect();
                let arr: ArrayRef = match unit {
                    0 => Arc::new(TimestampSecondArray::from(v)),
                    1 => Arc::new(TimestampMillisecondArray::from(v).with_timezone("+05:30")),
                    _ => Arc::new(TimestampNanosecondArray::from(v).with_timezone("UTC")),
                };
                (arr, want)
            })
            .boxed(),
        15 => vec(opt(-10i128.pow(17)..10i128.pow(17)), rows)
            .prop_map(move |v| {
                let want = v
                    .iter()
                    .map(|x| match (x, decimals) {
                        (None, _) => Want::Null,
                        (Some(d), Decimals::Text) => Want::Text(decimal_text(*d, 4)),
                        (Some(d), _) => Want::Real(decimal_text(*d, 4).parse().expect("a number")),
                    })
                    .collect();
                let arr = Decimal128Array::from(v)
                    .with_precision_and_scale(20, 4)
                    .expect("valid");
                (Arc::new(arr) as ArrayRef, want)
            })
            .boxed(),
        16 => vec(opt(vec(opt(any::<i64>()), 0..4)), rows)
            .prop_map(move |v| {
                let mut b = ListBuilder::new(Int64Builder::new());
                let mut want = vec![];
                for x in &v {
                    match x {
                        None => {
                            b.append_null();
                            want.push(Want::Null);
                        }
                        Some(items) => {
                            for i in items {
                                b.values().append_option(*i);
                            }
                            b.append(true);
                            want.push(Want::Json(serde_json::json!(items)));
                        }
                    }
                }
                (Arc::new(b.finish()) as ArrayRef, want)
            })
            .boxed(),
        _ => (
            vec(opt((any::<i64>(), text_value())), rows),
            vec(0u8..3, rows),
        )
            .prop_map(move |(v, dict_keys)| {
                // a struct column and a dictionary column, alternately by row count parity
                if rows.is_multiple_of(2) {
                    let a: Vec<Option<i64>> = v.iter().map(|x| x.as_ref().map(|p| p.0)).collect();
                    let s: Vec<Option<String>> =
                        v.iter().map(|x| x.as_ref().map(|p| p.1.clone())).collect();
                    let valid: Vec<bool> = v.iter().map(Option::is_some).collect();
                    let arr = StructArray::try_new(
                        vec![
                            Field::new("a", DataType::Int64, true),
                            Field::new("s", DataType::Utf8, true),
                        ]
                        .into(),
                        vec![
                            Arc::new(Int64Array::from(a)) as ArrayRef,
                            Arc::new(StringArray::from(s)),
                        ],
                        Some(valid.into()),
                    )
                    .expect("a struct");
                    let want = v
                        .iter()
                        .map(|x| match x {
                            None => Want::Null,
                            Some((a, s)) => Want::Json(serde_json::json!({"a": a, "s": s})),
                        })
                        .collect();
                    (Arc::new(arr) as ArrayRef, want)
                } else {
                    let words = ["zero", "ünï", ""];
                    let keys: Vec<Option<i32>> = dict_keys
                        .iter()
                        .zip(&v)
                        .map(|(k, x)| x.as_ref().map(|_| i32::from(*k)))
                        .collect();
                    let want = keys
                        .iter()
                        .map(|k| {
                            k.map_or(Want::Null, |k| Want::Text(words[k as usize].to_string()))
                        })
                        .collect();
                    let arr = DictionaryArray::<Int32Type>::try_new(
                        keys.into(),
                        Arc::new(StringArray::from(words.to_vec())),
                    )
                    .expect("a dictionary");
                    (Arc::new(arr) as ArrayRef, want)
                }
            })
            .boxed(),
    }
}

fn decimal_text(v: i128, scale: u32) -> String {
    let digits = v.unsigned_abs().to_string();
    let padded = format!("{digits:0>width$}", width = scale as usize + 1);
    let (int, frac) = padded.split_at(padded.len() - scale as usize);
    format!("{}{int}.{frac}", if v < 0 { "-" } else { "" })
}

/// A table: 1-12 columns of random kinds, 0-40 rows (one test below has 500 columns).
fn table(temporal: Temporal, decimals: Decimals) -> impl Strategy<Value = Vec<Col>> {
    (0usize..40, proptest::collection::vec(any::<u8>(), 1..12)).prop_flat_map(
        move |(rows, kinds)| {
            let cols: Vec<_> = kinds
                .iter()
                .map(|&k| column(rows, k, temporal, decimals))
                .collect();
            cols.prop_map(|cs| {
                cs.into_iter()
                    .enumerate()
                    .map(|(i, (array, want))| Col {
                        // names that need quoting, and two that differ only in case
                        name: match i {
                            0 => "Id".into(),
                            1 => "id".into(),
                            2 => "select \"x\"".into(),
                            _ => format!("c{i} é"),
                        },
                        array,
                        want,
                    })
                    .collect()
            })
        },
    )
}

fn batch(cols: &[Col]) -> RecordBatch {
    let fields: Vec<Field> = cols
        .iter()
        .map(|c| Field::new(&c.name, c.array.data_type().clone(), true))
        .collect();
    let rows = cols.first().map_or(0, |c| c.array.len());
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols.iter().map(|c| c.array.clone()).collect(),
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .expect("a batch")
}

#[derive(Clone, Copy, Debug)]
enum Written {
    Parquet,
    IpcFile,
    IpcStream,
    Memory,
}

/// The table as `how`, split into record batches (and Parquet row groups) of `per` rows.
fn input(dir: &Path, cols: &[Col], how: Written, per: usize) -> R<Input> {
    let rb = batch(cols);
    let mut parts = vec![];
    let mut at = 0;
    while at < rb.num_rows() {
        let n = per.min(rb.num_rows() - at);
        parts.push(rb.slice(at, n));
        at += n;
    }
    if parts.is_empty() {
        parts.push(rb.clone());
    }
    let schema = rb.schema();
    Ok(match how {
        Written::Parquet => {
            let p = dir.join("t.parquet");
            let props = parquet::file::properties::WriterProperties::builder()
                .set_max_row_group_row_count(Some(per.max(1)))
                .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                .build();
            let mut w = parquet::arrow::ArrowWriter::try_new(
                std::fs::File::create(&p)?,
                schema,
                Some(props),
            )?;
            for part in &parts {
                w.write(part)?;
            }
            w.close()?;
            Input::Path(p)
        }
        Written::IpcFile => {
            let p = dir.join("t.arrow");
            let mut w =
                arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&p)?, &schema)?;
            for part in &parts {
                w.write(part)?;
            }
            w.finish()?;
            Input::Path(p)
        }
        Written::IpcStream => {
            let mut bytes = vec![];
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &schema)?;
            for part in &parts {
                w.write(part)?;
            }
            w.finish()?;
            drop(w);
            Input::reader("t.arrows", std::io::Cursor::new(bytes))
        }
        Written::Memory => Input::record_batches(
            "t",
            RecordBatchIterator::new(parts.into_iter().map(Ok), schema),
        ),
    })
}

fn checked(db: &Path) -> R<Connection> {
    let conn = Connection::open(db)?;
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(conn)
}

/// Reads table `t` back and compares every cell with `cols`' wants.
fn compare(conn: &Connection, cols: &[Col]) -> R {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('t')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    assert_eq!(names.len(), cols.len());
    let mut stmt = conn.prepare("SELECT * FROM t ORDER BY rowid")?;
    let ncols = cols.len();
    let rows: Vec<Vec<Sql>> = stmt
        .query_map([], |r| (0..ncols).map(|i| r.get::<_, Sql>(i)).collect())?
        .collect::<Result<_, _>>()?;
    let nrows = cols.first().map_or(0, |c| c.want.len());
    assert_eq!(rows.len(), nrows);
    for (r, row) in rows.iter().enumerate() {
        for (c, got) in row.iter().enumerate() {
            let want = &cols[c].want[r];
            let ok = match (want, got) {
                (Want::Null, Sql::Null) => true,
                (Want::Int(a), Sql::Integer(b)) => a == b,
                // A zero reads back as 0.0 from either engine, -0.0 too: SQLite's own
                // INSERT into a REAL column stores an integral real without its sign.
                (Want::Real(a), Sql::Real(b)) => {
                    a.to_bits() == b.to_bits() || (*a == 0.0 && b.to_bits() == 0f64.to_bits())
                }
                (Want::Text(a), Sql::Text(b)) => a == b,
                (Want::Blob(a), Sql::Blob(b)) => a == b,
                (Want::Json(a), Sql::Text(b)) => {
                    serde_json::from_str::<serde_json::Value>(b).ok().as_ref() == Some(a)
                }
                (Want::Day(d), Sql::Text(t)) => {
                    let jd: Option<f64> =
                        conn.query_row("SELECT julianday(?1)", [t], |r| r.get(0))?;
                    // SQLite reads years 0000-9999 only; outside them NULL is its answer.
                    match jd {
                        Some(jd) => (jd - 2440587.5) == *d as f64,
                        None => !(-719528..2932897).contains(d),
                    }
                }
                (Want::Instant(ms), Sql::Text(t)) => {
                    let got: Option<i64> = conn.query_row(
                        "SELECT CAST(round((julianday(?1) - 2440587.5) * 86400000.0) AS INTEGER)",
                        [t],
                        |r| r.get(0),
                    )?;
                    match got {
                        // julianday is a double: a millisecond of slack
                        Some(g) => (g - ms).abs() <= 1,
                        None => !(-62_167_219_200_000..253_402_300_800_000).contains(ms),
                    }
                }
                _ => false,
            };
            assert!(
                ok,
                "row {r}, column {c} ({}): want {want:?}, got {got:?}",
                cols[c].name
            );
        }
    }
    Ok(())
}

fn load(
    cols: &[Col],
    how: Written,
    engine: Engine,
    per: usize,
    temporal: Temporal,
    decimals: Decimals,
) -> R {
    let dir = tempfile::tempdir()?;
    let inp = input(dir.path(), cols, how, per)?;
    let db = dir.path().join("out.db");
    let mut o = ImportOptions::default();
    o.engine = engine;
    o.table = Some("t".into());
    o.read.parse_threads = 3;
    o.read.temporal = temporal;
    o.read.decimals = decimals;
    o.batch_rows = 7;
    let s = import(&db, &[inp], &o, &Progress::default())?;
    assert_eq!(s.rows as usize, cols[0].want.len());
    compare(&checked(&db)?, cols)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_type_reads_back_as_the_mapping_says(
        cols in table(Temporal::Iso8601, Decimals::Text),
        how in prop_oneof![Just(Written::Parquet), Just(Written::IpcFile), Just(Written::IpcStream), Just(Written::Memory)],
        direct in any::<bool>(),
        per in 1usize..20,
    ) {
        let engine = if direct { Engine::Direct } else { Engine::Sqlite };
        load(&cols, how, engine, per, Temporal::Iso8601, Decimals::Text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn epoch_and_real_options_read_back(
        cols in table(Temporal::Epoch, Decimals::Real),
        direct in any::<bool>(),
    ) {
        let engine = if direct { Engine::Direct } else { Engine::Sqlite };
        load(&cols, Written::Parquet, engine, 5, Temporal::Epoch, Decimals::Real).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[test]
fn five_hundred_columns_and_zero_rows_load() -> R {
    for rows in [0usize, 3] {
        let cols: Vec<Col> = (0..500)
            .map(|i| Col {
                name: format!("col{i}"),
                array: Arc::new(Int64Array::from(
                    (0..rows as i64).map(|r| r * i).collect::<Vec<_>>(),
                )),
                want: (0..rows as i64).map(|r| Want::Int(r * i)).collect(),
            })
            .collect();
        for engine in [Engine::Direct, Engine::Sqlite] {
            load(
                &cols,
                Written::Parquet,
                engine,
                2,
                Temporal::Iso8601,
                Decimals::Text,
            )?;
        }
    }
    Ok(())
}

fn import_err(
    inputs: &[Input],
    f: impl FnOnce(&mut ImportOptions),
) -> (liteload::Error, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("out.db");
    let mut o = ImportOptions::default();
    o.engine = Engine::Auto;
    f(&mut o);
    let e = import(&db, inputs, &o, &Progress::default()).expect_err("must fail");
    (e, db, dir)
}

fn parquet_of(dir: &Path, name: &str, rb: &RecordBatch, group: usize) -> R<std::path::PathBuf> {
    let p = dir.join(name);
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&p)?, rb.schema(), Some(props))?;
    w.write(rb)?;
    w.close()?;
    Ok(p)
}

fn two_cols(n: i64) -> RecordBatch {
    let a: ArrayRef = Arc::new(Int64Array::from((0..n).collect::<Vec<_>>()));
    let b: ArrayRef = Arc::new(StringArray::from(
        (0..n).map(|i| format!("v{i}")).collect::<Vec<_>>(),
    ));
    RecordBatch::try_from_iter([("a", a), ("b", b)]).expect("a batch")
}

#[test]
fn files_of_one_schema_load_into_one_table_and_another_schema_is_refused() -> R {
    let dir = tempfile::tempdir()?;
    let one = parquet_of(dir.path(), "one.parquet", &two_cols(1000), 300)?;
    let two = parquet_of(dir.path(), "two.parquet", &two_cols(10), 3)?;
    for engine in [Engine::Auto, Engine::Sqlite] {
        let db = dir.path().join(format!("{engine:?}.db"));
        let mut o = ImportOptions::default();
        o.engine = engine;
        let s = import(
            &db,
            &[Input::Path(one.clone()), Input::Path(two.clone())],
            &o,
            &Progress::default(),
        )?;
        assert_eq!((s.rows, s.tables.clone()), (1010, vec!["one".to_string()]));
        let conn = checked(&db)?;
        let (n, sum): (i64, i64) = conn.query_row("SELECT count(*), sum(a) FROM one", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        assert_eq!((n, sum), (1010, 999 * 1000 / 2 + 45));
    }
    // the same names, another type: refused, naming both files and the column; no file left
    let c: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
    let b: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
    let other = parquet_of(
        dir.path(),
        "other.parquet",
        &RecordBatch::try_from_iter([("a", c), ("b", b)])?,
        10,
    )?;
    let (e, db, _d) = import_err(
        &[Input::Path(one.clone()), Input::Path(other.clone())],
        |_| {},
    );
    let msg = e.to_string();
    assert!(matches!(e.kind(), ErrorKind::Input { .. }), "{msg}");
    assert!(
        msg.contains("other.parquet")
            && msg.contains("one.parquet")
            && msg.contains("\"a\"")
            && msg.contains("Float64"),
        "{msg}"
    );
    assert!(!db.exists(), "a failed load into a new file leaves none");
    Ok(())
}

#[test]
fn select_picks_and_orders_columns_and_names_a_missing_one() -> R {
    let dir = tempfile::tempdir()?;
    let p = parquet_of(dir.path(), "t.parquet", &two_cols(50), 7)?;
    for engine in [Engine::Direct, Engine::Sqlite] {
        let db = dir.path().join(format!("{engine:?}.db"));
        let mut o = ImportOptions::default();
        o.engine = engine;
        o.read.select = Some(vec!["B".into(), "a".into()]);
        import(&db, &[Input::Path(p.clone())], &o, &Progress::default())?;
        let conn = checked(&db)?;
        let names: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('t')")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        assert_eq!(names, ["b", "a"]);
        let (b, a): (String, i64) =
            conn.query_row("SELECT b, a FROM t WHERE rowid = 8", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        assert_eq!((b.as_str(), a), ("v7", 7));
    }
    let (e, _, _d) = import_err(&[Input::Path(p)], |o| {
        o.read.select = Some(vec!["nope".into()])
    });
    assert!(
        e.to_string()
            .contains("no column \"nope\" to select (columns: a, b)"),
        "{e}"
    );
    Ok(())
}

#[test]
fn corrupt_and_truncated_files_are_errors_that_leave_nothing() -> R {
    let dir = tempfile::tempdir()?;
    let p = parquet_of(dir.path(), "t.parquet", &two_cols(5000), 1000)?;
    let bytes = std::fs::read(&p)?;
    // truncated: the footer is gone
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &bytes[..bytes.len() / 2])?;
    let (e, db, _d) = import_err(&[Input::Path(cut)], |_| {});
    assert!(
        e.to_string()
            .contains("cut.parquet: not a readable Parquet file"),
        "{e}"
    );
    assert!(!db.exists());
    // a page garbled in the middle (the footer intact): the row group and column named
    let mut bad = bytes.clone();
    for b in &mut bad[bytes.len() / 3..bytes.len() / 3 + 64] {
        *b = 0xA5;
    }
    let garbled = dir.path().join("garbled.parquet");
    std::fs::write(&garbled, &bad)?;
    for engine in [Engine::Direct, Engine::Sqlite] {
        let (e, db, _d) = import_err(&[Input::Path(garbled.clone())], |o| o.engine = engine);
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("{}: field ", garbled.display()))
                && msg.contains("row group "),
            "{msg}"
        );
        assert!(!db.exists());
    }
    // not Arrow at all
    let junk = dir.path().join("junk.arrow");
    std::fs::write(&junk, b"id,name\n1,x\n")?;
    let (e, _, _d) = import_err(&[Input::Path(junk)], |_| {});
    assert!(
        e.to_string()
            .contains("junk.arrow: not a readable Arrow IPC stream"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_uint64_past_i64_is_a_bad_row_that_rejects_can_skip() -> R {
    let v: ArrayRef = Arc::new(UInt64Array::from(vec![1, u64::MAX, 3]));
    let rb = RecordBatch::try_from_iter([("n", v)])?;
    let dir = tempfile::tempdir()?;
    let p = parquet_of(dir.path(), "t.parquet", &rb, 10)?;
    let (e, db, _d) = import_err(&[Input::Path(p.clone())], |_| {});
    assert_eq!(
        e.to_string(),
        format!("{}: record 2, field 1 \"n\": 18446744073709551615 does not fit SQLite's INTEGER (a UInt64 above 9223372036854775807)", p.display())
    );
    assert!(!db.exists());
    for engine in [Engine::Direct, Engine::Sqlite] {
        let db = dir.path().join(format!("{engine:?}.db"));
        let mut o = ImportOptions::default();
        o.engine = engine;
        o.max_errors = Some(1);
        let s = import(&db, &[Input::Path(p.clone())], &o, &Progress::default())?;
        assert_eq!((s.rows, s.rejects), (2, 1));
        let got: Vec<i64> = checked(&db)?
            .prepare("SELECT n FROM t")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        assert_eq!(got, [1, 3]);
    }
    Ok(())
}

#[test]
fn an_unsupported_type_is_named_before_anything_is_written() -> R {
    let iv: ArrayRef = Arc::new(arrow_array::IntervalYearMonthArray::from(vec![1]));
    let rb = RecordBatch::try_from_iter([("span", iv)])?;
    let input = Input::record_batches("t", RecordBatchIterator::new([Ok(rb.clone())], rb.schema()));
    let (e, db, _d) = import_err(&[input], |_| {});
    assert_eq!(
        e.to_string(),
        "t: field 1 \"span\": its type Interval(YearMonth) has no SQLite counterpart"
    );
    assert!(!db.exists());
    Ok(())
}

#[test]
fn a_null_column_is_null_and_types_cannot_be_overridden() -> R {
    let n: ArrayRef = Arc::new(NullArray::new(2));
    let rb = RecordBatch::try_from_iter([("nothing", n)])?;
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("n.db");
    let input = Input::record_batches("t", RecordBatchIterator::new([Ok(rb.clone())], rb.schema()));
    import(
        &db,
        &[input],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    let conn = checked(&db)?;
    let (n, decl): (i64, String) = conn.query_row(
        r#"SELECT (SELECT count(*) FROM t WHERE "nothing" IS NULL), (SELECT type FROM pragma_table_info('t'))"#,
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!((n, decl.as_str()), (2, "BLOB"));
    let input = Input::record_batches("t", RecordBatchIterator::new([Ok(rb.clone())], rb.schema()));
    let (e, _, _d) = import_err(&[input], |o| {
        o.types = vec![("nothing".into(), liteload::ColumnType::Text)]
    });
    assert!(
        e.to_string()
            .contains("the column types come from the input's schema"),
        "{e}"
    );
    Ok(())
}

#[test]
fn the_format_comes_from_the_name_or_the_option() -> R {
    assert_eq!(
        Format::from_path(Path::new("x.parquet")),
        Some(Format::Parquet)
    );
    assert_eq!(
        Format::from_path(Path::new("x.feather")),
        Some(Format::Arrow)
    );
    assert_eq!(
        Format::from_path(Path::new("x.arrows")),
        Some(Format::Arrow)
    );
    assert_eq!("parquet".parse::<Format>(), Ok(Format::Parquet));
    // Parquet bytes in memory, named without an extension, with the format given
    let dir = tempfile::tempdir()?;
    let p = parquet_of(dir.path(), "t.parquet", &two_cols(20), 7)?;
    let db = dir.path().join("b.db");
    let mut o = ImportOptions::default();
    o.format = Some(Format::Parquet);
    o.table = Some("t".into());
    let s = import(
        &db,
        &[Input::bytes("blob", std::fs::read(&p)?)],
        &o,
        &Progress::default(),
    )?;
    assert_eq!(s.rows, 20);
    let sum: i64 = checked(&db)?.query_row("SELECT sum(a) FROM t", [], |r| r.get(0))?;
    assert_eq!(sum, 190);
    // a Parquet stream (stdin, a reader) cannot be read: said plainly
    let (e, _, _d) = import_err(
        &[Input::reader(
            "t.parquet",
            std::io::Cursor::new(std::fs::read(&p)?),
        )],
        |_| {},
    );
    assert!(
        e.to_string()
            .contains("a Parquet file is read from its end first"),
        "{e}"
    );
    Ok(())
}

/// The types the random tables leave out, one column each, with a null: through an IPC
/// file (every type) and Parquet (those it stores), by both engines.
#[test]
fn the_other_types_read_back_as_the_mapping_says() -> R {
    use arrow_array::builder::{MapBuilder, StringBuilder};
    use arrow_array::{
        BinaryViewArray, Date64Array, Decimal256Array, DurationMillisecondArray, Float16Array,
        Int32Array, LargeBinaryArray, Time32MillisecondArray, Time64NanosecondArray, UInt16Array,
        UInt8Array,
    };
    let mut map = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    map.keys().append_value("a");
    map.values().append_value(1);
    map.append(true)?;
    map.append(false)?;
    let col = |name: &str, array: ArrayRef, want: [Want; 2]| Col {
        name: name.into(),
        array,
        want: want.to_vec(),
    };
    let text = |s: &str| Want::Text(s.into());
    let parquet_too = vec![
        col("f16", Arc::new(Float16Array::from(vec![Some(<arrow_array::types::Float16Type as arrow_array::ArrowPrimitiveType>::Native::from_f32(1.5)), None])), [Want::Real(1.5), Want::Null]),
        col("i32", Arc::new(Int32Array::from(vec![Some(i32::MIN), None])), [Want::Int(i64::from(i32::MIN)), Want::Null]),
        col("u8", Arc::new(UInt8Array::from(vec![Some(255), None])), [Want::Int(255), Want::Null]),
        col("u16", Arc::new(UInt16Array::from(vec![Some(65535), None])), [Want::Int(65535), Want::Null]),
        col("lbin", Arc::new(LargeBinaryArray::from(vec![Some(&b"\0\xff"[..]), None])), [Want::Blob(vec![0, 255]), Want::Null]),
        col("d64", Arc::new(Date64Array::from(vec![Some(1_700_000_000_123), None])), [text("2023-11-14T22:13:20.123"), Want::Null]),
        col("t32", Arc::new(Time32MillisecondArray::from(vec![Some(3_723_004), None])), [text("01:02:03.004"), Want::Null]),
        col("t64", Arc::new(Time64NanosecondArray::from(vec![Some(5), None])), [text("00:00:00.000000005"), Want::Null]),
        col("d256", Arc::new(Decimal256Array::from(vec![Some(arrow_buffer::i256::from_i128(-123_456_789)), None]).with_precision_and_scale(40, 6)?), [text("-123.456789"), Want::Null]),
        col("map", Arc::new(map.finish()), [Want::Json(serde_json::json!({"a": 1})), Want::Null]),
    ];
    let ipc_only = vec![
        col(
            "bview",
            Arc::new(BinaryViewArray::from(vec![Some(&b"view"[..]), None])),
            [Want::Blob(b"view".to_vec()), Want::Null],
        ),
        col(
            "dur",
            Arc::new(DurationMillisecondArray::from(vec![Some(-42), None])),
            [Want::Int(-42), Want::Null],
        ),
    ];
    for engine in [Engine::Direct, Engine::Sqlite] {
        load(
            &parquet_too,
            Written::Parquet,
            engine,
            1,
            Temporal::Iso8601,
            Decimals::Text,
        )?;
        let all: Vec<Col> = parquet_too
            .iter()
            .chain(&ipc_only)
            .map(|c| Col {
                name: c.name.clone(),
                array: c.array.clone(),
                want: c.want.clone(),
            })
            .collect();
        load(
            &all,
            Written::IpcFile,
            engine,
            1,
            Temporal::Iso8601,
            Decimals::Text,
        )?;
    }
    Ok(())
}

#[test]
fn a_parquet_and_an_arrow_file_load_each_as_its_own_format() -> R {
    let dir = tempfile::tempdir()?;
    let p = parquet_of(dir.path(), "a.parquet", &two_cols(30), 7)?;
    let rb = two_cols(12);
    let a = dir.path().join("b.arrow");
    let mut w = arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&a)?, &rb.schema())?;
    w.write(&rb)?;
    w.finish()?;
    let db = dir.path().join("ab.db");
    let mut o = ImportOptions::default();
    o.engine = Engine::Auto;
    o.table = Some("t".into());
    let s = import(
        &db,
        &[Input::Path(p), Input::Path(a)],
        &o,
        &Progress::default(),
    )?;
    assert_eq!(s.rows, 42);
    let n: i64 = checked(&db)?.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(n, 42);
    Ok(())
}

#[test]
fn hostile_column_names_are_cleaned_or_refused_before_anything_is_written() -> R {
    let col =
        |n: &str| -> (String, ArrayRef) { (n.to_string(), Arc::new(Int64Array::from(vec![1, 2]))) };
    // blank and case-colliding names are renamed (with notes); `rowid` is an ordinary column
    let rb = RecordBatch::try_from_iter([col(""), col("Rowid"), col("rowid"), col("x y")])?;
    for engine in [Engine::Direct, Engine::Sqlite] {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("n.db");
        let mut o = ImportOptions::default();
        o.engine = engine;
        let input =
            Input::record_batches("t", RecordBatchIterator::new([Ok(rb.clone())], rb.schema()));
        let s = import(&db, &[input], &o, &Progress::default())?;
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        let conn = checked(&db)?;
        let names: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('t')")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        assert_eq!(names, ["c1", "Rowid", "rowid_2", "x y"]);
    }
    // a NUL in a name: refused, no file
    let rb = RecordBatch::try_from_iter([col("a\0b")])?;
    let input = Input::record_batches("t", RecordBatchIterator::new([Ok(rb.clone())], rb.schema()));
    let (e, db, _d) = import_err(&[input], |_| {});
    assert!(e.to_string().contains("has a NUL byte"), "{e}");
    assert!(!db.exists());
    Ok(())
}
