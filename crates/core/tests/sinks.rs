//! The conformance suite: every case through every writer, against SQLite's own
//! row-by-row INSERT of the same values.
//!
//! A case is an input (CSV or NDJSON written here from known records, or Arrow record
//! batches), the options it is loaded with, and what must come of it: a table (its
//! columns, their declared types, and the values a reference table gets when each
//! record is bound to one `INSERT` statement of SQLite's, column affinity and all), or a
//! refusal of a given kind. The writers ("sinks"):
//!
//! - `sqlite`: SQLite's insert path into a new file;
//! - `direct`: the page writer into a new file;
//! - `append`: into a file that holds another table already (the page writer's side file
//!   and transfer where it applies, SQLite's insert path where not);
//! - `connection`: into a connection the program holds, inside its transaction;
//! - `null`: parsing alone (the rows are counted, nothing is written);
//! - `rqlite`: into an rqlite node that holds data (rows as requests; with the `network`
//!   feature, rqlited built on first use). A load that fails keeps what the cluster
//!   committed before it (recorded, so that a rerun goes on), so after a refusal only
//!   the error is compared.
//!
//! Every file is checked by `integrity_check`; after a refusal the target must be as it
//! was (no new file, the old file byte for byte, the caller's transaction still usable).
//! The tests are named `<sink>::<case>`, so `cargo test --test sinks -- --list` shows
//! the coverage.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "arrow")]
use liteload::arrow_array::{
    ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, RecordBatchIterator, StringArray,
};
use liteload::{
    import, import_into_connection, quote_ident, Engine, EngineUsed, ErrorKind, ImportOptions,
    Input, Progress, Summary,
};
use rusqlite::types::Value;
use rusqlite::Connection;

type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// A table's columns: name and declared type.
type Columns = Vec<(String, String)>;

/// The writers a case runs through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sink {
    Sqlite,
    Direct,
    Append,
    Connection,
    Null,
    #[cfg(feature = "network")]
    Rqlite,
}

/// What a case's input is made from.
enum Source {
    /// Bytes under a file name (its extension tells the format).
    Bytes(&'static str, Vec<u8>),
    /// Arrow record batches.
    #[cfg(feature = "arrow")]
    Arrow(RecordBatch),
    /// A reader made anew for each run, given the run's progress counters.
    Reader(&'static str, fn(Arc<Progress>) -> Box<dyn Read + Send>),
}

/// What must come of a case.
enum Expect {
    /// A table `t` with these columns (name, declared type), holding what a reference
    /// table of the same declaration holds after one `INSERT` per record, binding these
    /// values; `rejects` records skipped.
    Table {
        columns: Vec<(String, String)>,
        rows: Vec<Vec<Value>>,
        rejects: u64,
    },
    /// An error for which this holds, and the target as it was.
    Refused(fn(&ErrorKind) -> bool),
}

struct Case {
    source: Source,
    options: fn(&mut ImportOptions),
    expect: Expect,
    /// Writers that cannot take the case and say so before writing anything (the page
    /// writer and a primary key); they must refuse it with a plan error.
    unsupported: &'static [Sink],
    /// The refusal or the skipped records come from the table's constraints, which
    /// parsing alone does not see: the `null` writer counts every record.
    constraints: bool,
    /// A record the table's constraints refuse is skipped (a bad-record budget) on
    /// every writer but an rqlite cluster's, which stops the load at it instead (a
    /// committed request keeps all its rows; docs/rqlite.md).
    cluster_stops: bool,
}

/// A CSV file of `header` and `records`, every field quoted (quotes doubled).
fn csv_bytes(header: &[&str], records: &[Vec<String>]) -> Vec<u8> {
    let line = |fields: &mut dyn Iterator<Item = &str>| -> String {
        let quoted: Vec<String> = fields
            .map(|f| format!("\"{}\"", f.replace('"', "\"\"")))
            .collect();
        quoted.join(",") + "\n"
    };
    let mut out = line(&mut header.iter().copied());
    for r in records {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out.into_bytes()
}

/// The values SQLite's own INSERT binds for CSV records: each field as TEXT (the column's
/// affinity converts it), but an empty field in an INTEGER or REAL column as NULL (the
/// documented rule for empty fields).
fn csv_values(types: &[&str], records: &[Vec<String>]) -> Vec<Vec<Value>> {
    records
        .iter()
        .map(|r| {
            r.iter()
                .zip(types)
                .map(|(f, t)| {
                    if f.is_empty() && *t != "TEXT" {
                        Value::Null
                    } else {
                        Value::Text(f.clone())
                    }
                })
                .collect()
        })
        .collect()
}

fn columns(names: &[&str], types: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .zip(types)
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// A CSV case whose table has the header's names and these types.
fn csv_case(header: &[&str], types: &[&str], records: Vec<Vec<String>>) -> Case {
    Case {
        source: Source::Bytes("t.csv", csv_bytes(header, &records)),
        options: |_| {},
        expect: Expect::Table {
            columns: columns(header, types),
            rows: csv_values(types, &records),
            rejects: 0,
        },
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

// ---- the cases ----

/// A NUL byte in delimited text is refused where it is (it means the encoding was
/// misread); NUL inside a JSON string or an Arrow string is stored (`json_values`,
/// `text_in_every_column_type`).
fn nul() -> Case {
    let mut case = csv_case(
        &["a", "b"],
        &["TEXT", "INTEGER"],
        strings(&[&["plain", "1"], &["x\0y", "2"], &["tail\0", "3"]]),
    );
    case.expect = Expect::Refused(|k| match k {
        ErrorKind::Input { pos, message, .. } => {
            (pos.line, pos.column) == (3, 1) && message.contains("NUL")
        }
        _ => false,
    });
    case
}

fn non_ascii() -> Case {
    csv_case(
        &["名前", "zoë", "emoji😀"],
        &["TEXT", "TEXT", "TEXT"],
        strings(&[
            &["Ada Lovelace", "ünïcödé", "😀😀"],
            &["\u{202E}rtl", "e\u{301}", "\u{FEFF}bom inside"],
            &["١٢٣", "１２", "\u{a0}7"],
        ]),
    )
}

fn huge_text() -> Case {
    let huge = "x\u{e9}\"".repeat(1 << 20);
    csv_case(
        &["id", "body"],
        &["INTEGER", "TEXT"],
        vec![
            vec!["1".into(), "small".into()],
            vec!["2".into(), huge],
            vec!["3".into(), "after".into()],
        ],
    )
}

#[cfg(feature = "arrow")]
fn huge_blob() -> Case {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let blobs: Vec<Option<&[u8]>> = vec![Some(b"\0\xff"), Some(&big), Some(b""), None];
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        ("b", Arc::new(BinaryArray::from(blobs.clone())) as ArrayRef),
    ])
    .unwrap();
    Case {
        source: Source::Arrow(batch),
        options: |_| {},
        expect: Expect::Table {
            columns: columns(&["id", "b"], &["INTEGER", "BLOB"]),
            rows: blobs
                .iter()
                .zip(1..)
                .map(|(b, i)| {
                    vec![
                        Value::Integer(i),
                        b.map_or(Value::Null, |b| Value::Blob(b.to_vec())),
                    ]
                })
                .collect(),
            rejects: 0,
        },
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

/// Values that look numeric to one rule and not to another: each goes into columns made
/// INTEGER, REAL and TEXT (by a sample of one record, or by the types given).
const MISFITS: &[&str] = &[
    "007",
    "02134",
    "00501",
    " 42",
    "42 ",
    "+5",
    "-0",
    "-0.0",
    "1e3",
    "1E+3",
    "1.0",
    "2.50",
    ".5",
    "5.",
    "1e",
    "inf",
    "-inf",
    "NaN",
    "nan",
    "Infinity",
    "0x1F",
    "1_000",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "123456789012345678901234567890",
    "1e999",
    "1e-999",
    "١٢",
    "１２",
    "\u{a0}7",
    "9007199254740993",
    "3500000000000000.2500001",
    "0.1",
    "-",
    "abc",
    "",
];

fn misfit_after_sample() -> Case {
    let mut records = strings(&[&["1", "1.5", "x"]]);
    records.extend(MISFITS.iter().map(|v| vec![v.to_string(); 3]));
    let mut case = csv_case(&["i", "r", "t"], &["INTEGER", "REAL", "TEXT"], records);
    case.options = |o| o.read.sample_rows = 1;
    case
}

/// The same values in columns whose types are given, against what the sample says.
fn misfit_given_types() -> Case {
    let records: Vec<Vec<String>> = MISFITS.iter().map(|v| vec![v.to_string(); 3]).collect();
    let mut case = csv_case(&["i", "r", "t"], &["INTEGER", "REAL", "TEXT"], records);
    case.options = |o| {
        *o = std::mem::take(o)
            .column_type("i", liteload::ColumnType::Integer)
            .column_type("r", liteload::ColumnType::Real)
            .column_type("t", liteload::ColumnType::Text);
    };
    case
}

/// Numberish cells drawn from a fixed seed (digits, signs, dots, exponents, blanks and
/// non-ASCII digits, 0 to 21 digits long) after a sample of one canonical record.
fn numberish_cells() -> Case {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let pick = |from: &[&str], at: u64| from[at as usize % from.len()].to_string();
    let mut records = strings(&[&["1", "2.5", "z"]]);
    for _ in 0..300 {
        let mut row = vec![];
        for _ in 0..3 {
            let mut c = pick(&["", "", " ", "+", "-"], next(5));
            let digits = next(22);
            for _ in 0..digits {
                c.push(char::from(b'0' + next(10) as u8));
            }
            if next(2) == 0 {
                c.push('.');
                for _ in 0..next(4) {
                    c.push(char::from(b'0' + next(10) as u8));
                }
            }
            if next(3) == 0 {
                c += &pick(&["e", "E", "e+", "e-", "E-"], next(5));
                c += &next(400).to_string();
            }
            c += &pick(&["", "", "", " ", "x", "٣"], next(6));
            row.push(c);
        }
        records.push(row);
    }
    let mut case = csv_case(&["i", "r", "t"], &["INTEGER", "REAL", "TEXT"], records);
    case.options = |o| o.read.sample_rows = 1;
    case
}

fn negative_zero() -> Case {
    csv_case(
        &["r", "i", "t"],
        &["REAL", "INTEGER", "TEXT"],
        strings(&[
            &["-0.0", "1", "-0"],
            &["1.5", "-2", "x"],
            &["-0.25", "0", "0"],
        ]),
    )
}

#[cfg(feature = "arrow")]
fn nan_and_infinities() -> Case {
    let reals = vec![
        Some(f64::NAN),
        Some(f64::INFINITY),
        Some(f64::NEG_INFINITY),
        Some(-0.0),
        Some(f64::MIN_POSITIVE),
        None,
    ];
    let batch = RecordBatch::try_from_iter([(
        "r",
        Arc::new(Float64Array::from(reals.clone())) as ArrayRef,
    )])
    .unwrap();
    Case {
        source: Source::Arrow(batch),
        options: |_| {},
        expect: Expect::Table {
            columns: columns(&["r"], &["REAL"]),
            rows: reals
                .iter()
                .map(|r| vec![r.map_or(Value::Null, Value::Real)])
                .collect(),
            rejects: 0,
        },
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

fn integer_edges() -> Case {
    let mut case = csv_case(
        &["v", "w"],
        &["INTEGER", "TEXT"],
        strings(&[
            &["1", "a"],
            &["9223372036854775807", "9223372036854775807"],
            &["-9223372036854775808", "-9223372036854775808"],
            &["9223372036854775808", "9223372036854775808"],
            &["-9223372036854775809", "-9223372036854775809"],
            &["18446744073709551616", "18446744073709551616"],
        ]),
    );
    case.options = |o| o.read.sample_rows = 1;
    case
}

fn json_values() -> Case {
    let lines = [
        r#"{"i":1,"r":1.5,"s":"02134","b":true,"n":null,"o":{"k":[1,2]},"z":-0,"big":9223372036854775808}"#,
        r#"{"i":-9223372036854775808,"r":-0.0,"s":"x\u0000y","b":false,"n":null,"o":[],"z":-0,"big":1}"#,
        r#"{"i":9223372036854775807,"r":1e300,"s":"","b":true,"n":null,"o":{},"z":-0,"big":2}"#,
    ];
    let t = |s: &str| Value::Text(s.into());
    Case {
        source: Source::Bytes("t.ndjson", (lines.join("\n") + "\n").into_bytes()),
        options: |_| {},
        expect: Expect::Table {
            columns: columns(
                &["i", "r", "s", "b", "n", "o", "z", "big"],
                &[
                    "INTEGER", "REAL", "TEXT", "INTEGER", "TEXT", "TEXT", "TEXT", "TEXT",
                ],
            ),
            rows: vec![
                vec![
                    Value::Integer(1),
                    Value::Real(1.5),
                    t("02134"),
                    Value::Integer(1),
                    Value::Null,
                    t(r#"{"k":[1,2]}"#),
                    t("-0"),
                    t("9223372036854775808"),
                ],
                vec![
                    Value::Integer(i64::MIN),
                    Value::Real(-0.0),
                    t("x\0y"),
                    Value::Integer(0),
                    Value::Null,
                    t("[]"),
                    t("-0"),
                    t("1"),
                ],
                vec![
                    Value::Integer(i64::MAX),
                    Value::Real(1e300),
                    t(""),
                    Value::Integer(1),
                    Value::Null,
                    t("{}"),
                    t("-0"),
                    t("2"),
                ],
            ],
            rejects: 0,
        },
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

fn empty_input() -> Case {
    Case {
        source: Source::Bytes("t.csv", vec![]),
        options: |_| {},
        expect: Expect::Refused(|k| matches!(k, ErrorKind::Input { .. })),
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

fn header_only() -> Case {
    csv_case(&["a", "b"], &["TEXT", "TEXT"], vec![])
}

fn two_thousand_columns() -> Case {
    let names: Vec<String> = (1..=2000).map(|i| format!("c{i}")).collect();
    let header: Vec<&str> = names.iter().map(String::as_str).collect();
    let records: Vec<Vec<String>> = (0..3)
        .map(|r| (0..2000).map(|c| (r * 2000 + c).to_string()).collect())
        .collect();
    csv_case(&header, &["INTEGER"; 2000], records)
}

fn names_colliding_by_case() -> Case {
    let mut case = csv_case(
        &["a", "A", "b", "B", "a"],
        &["INTEGER"; 5],
        strings(&[&["1", "2", "3", "4", "5"]]),
    );
    // Column names are one in SQLite whatever their case: the later ones are renamed.
    if let Expect::Table { columns: c, .. } = &mut case.expect {
        for (i, name) in ["a", "A_2", "b", "B_2", "a_3"].iter().enumerate() {
            c[i].0 = name.to_string();
        }
    }
    case
}

fn names_needing_quotes() -> Case {
    let mut case = csv_case(
        &[
            "select", "a b", "x\"y", "[z]", "1st", "", "t.c", "😀", "'q'",
        ],
        &["TEXT"; 9],
        strings(&[&["1a", "2a", "3a", "4a", "5a", "6a", "7a", "8a", "9a"]]),
    );
    if let Expect::Table { columns: c, .. } = &mut case.expect {
        c[5].0 = "c6".into();
    }
    case
}

/// Indexes built after the rows, one of them UNIQUE, over keys of every kind (NULLs,
/// which a UNIQUE index takes twice; integers at the edges; reals equal to integers;
/// non-ASCII and NUL-free text of every length; text that misfits its column).
fn indexed() -> Case {
    let mut records = vec![];
    for i in 0..500i64 {
        let k = match i % 7 {
            0 => String::new(),
            1 => (i64::MAX - i).to_string(),
            2 => (i64::MIN + i).to_string(),
            3 => format!("{i}.0"),
            4 => format!("{}é{i}", "x".repeat((i % 50) as usize)),
            5 => format!("{}", i * 1_000_003),
            _ => format!("{}.{}", i, i % 10 + 1),
        };
        records.push(vec![i.to_string(), k, format!("g{}", i % 13)]);
    }
    let mut case = csv_case(&["id", "k", "g"], &["INTEGER", "INTEGER", "TEXT"], records);
    case.options = |o| {
        o.read.sample_rows = 2;
        *o = std::mem::take(o)
            .index(["k"], true)
            .index(["g", "id"], false);
    };
    case
}

fn duplicate_keys() -> Case {
    let mut case = csv_case(
        &["id", "v"],
        &["INTEGER", "TEXT"],
        strings(&[&["1", "a"], &["2", "b"], &["1", "again"]]),
    );
    case.options = |o| o.pk = vec!["id".into()];
    case.expect = Expect::Refused(|k| match k {
        // SQLITE_CONSTRAINT_PRIMARYKEY, at the third record.
        ErrorKind::Constraint {
            code: Some(1555),
            pos: Some(pos),
            ..
        } => (pos.line, pos.record) == (4, 3),
        _ => false,
    });
    case.unsupported = &[Sink::Direct];
    case.constraints = true;
    case
}

fn duplicate_keys_skipped() -> Case {
    let mut case = duplicate_keys();
    case.options = |o| {
        o.pk = vec!["id".into()];
        o.max_errors = Some(5);
    };
    case.expect = Expect::Table {
        columns: columns(&["id", "v"], &["INTEGER", "TEXT"]),
        rows: csv_values(&["INTEGER", "TEXT"], &strings(&[&["1", "a"], &["2", "b"]])),
        rejects: 1,
    };
    case.cluster_stops = true;
    case
}

fn rejects() -> Case {
    let mut case = csv_case(
        &["a", "b"],
        &["INTEGER", "TEXT"],
        strings(&[&["1", "x"], &["3", "z"]]),
    );
    // A record with a field too many, and one that is not UTF-8, between the good ones.
    case.source = Source::Bytes("t.csv", b"a,b\n1,x\n2,y,extra\n\xff\xfe,w\n3,z\n".to_vec());
    case.options = |o| o.max_errors = Some(10);
    if let Expect::Table { rejects, .. } = &mut case.expect {
        *rejects = 2;
    }
    case
}

/// Rows of a few hundred bytes each, forever.
struct Endless {
    n: u64,
    pending: Vec<u8>,
}

impl Endless {
    fn new() -> Self {
        Endless {
            n: 0,
            pending: b"id,text\n".to_vec(),
        }
    }
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.is_empty() {
            self.n += 1;
            self.pending = format!("{},{}\n", self.n, "row ".repeat(50)).into_bytes();
        }
        let k = buf.len().min(self.pending.len());
        buf[..k].copy_from_slice(&self.pending[..k]);
        self.pending.drain(..k);
        Ok(k)
    }
}

/// `inner`, with `at_end` called once `left` bytes have been read.
struct After<F: FnMut() -> std::io::Result<()>> {
    inner: Endless,
    left: usize,
    at_end: F,
}

impl<F: FnMut() -> std::io::Result<()>> Read for After<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            (self.at_end)()?;
        }
        let want = buf.len().min(self.left.max(1));
        let n = self.inner.read(&mut buf[..want])?;
        self.left = self.left.saturating_sub(n);
        Ok(n)
    }
}

fn cancel_midway() -> Case {
    Case {
        source: Source::Reader("t.csv", |progress| {
            Box::new(After {
                inner: Endless::new(),
                left: 4 << 20,
                at_end: move || {
                    progress.cancel();
                    Ok(())
                },
            })
        }),
        options: |_| {},
        expect: Expect::Refused(|k| matches!(k, ErrorKind::Interrupted)),
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

fn source_error_midway() -> Case {
    Case {
        source: Source::Reader("t.csv", |_| {
            Box::new(After {
                inner: Endless::new(),
                left: 4 << 20,
                at_end: || Err(std::io::Error::other("the disk went away")),
            })
        }),
        options: |_| {},
        expect: Expect::Refused(|k| match k {
            ErrorKind::Io { source, .. } => source.to_string().contains("the disk went away"),
            _ => false,
        }),
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

#[cfg(feature = "arrow")]
fn text_in_every_column_type() -> Case {
    let batch = RecordBatch::try_from_iter([
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("a\0b"),
                None,
                Some(""),
                Some("ü"),
            ])) as ArrayRef,
        ),
        (
            "i",
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                Some(i64::MAX),
                None,
                Some(0),
            ])) as ArrayRef,
        ),
    ])
    .unwrap();
    Case {
        source: Source::Arrow(batch),
        options: |_| {},
        expect: Expect::Table {
            columns: columns(&["s", "i"], &["TEXT", "INTEGER"]),
            rows: vec![
                vec![Value::Text("a\0b".into()), Value::Integer(i64::MIN)],
                vec![Value::Null, Value::Integer(i64::MAX)],
                vec![Value::Text("".into()), Value::Null],
                vec![Value::Text("ü".into()), Value::Integer(0)],
            ],
            rejects: 0,
        },
        unsupported: &[],
        constraints: false,
        cluster_stops: false,
    }
}

// ---- running a case ----

/// What a writer made of a case: its table (columns and rows, read back), or its error.
enum Outcome {
    Table {
        columns: Vec<(String, String)>,
        rows: Vec<Vec<Value>>,
        /// The columns of each index on `t`, in order.
        indexes: Vec<Vec<String>>,
        summary: Summary,
    },
    Counted(Summary),
    Refused(liteload::Error),
}

fn input(source: &Source, progress: &Arc<Progress>) -> Input {
    match source {
        Source::Bytes(name, bytes) => Input::bytes(*name, bytes.clone()),
        #[cfg(feature = "arrow")]
        Source::Arrow(batch) => {
            let schema = batch.schema();
            Input::record_batches(
                "t",
                RecordBatchIterator::new(vec![Ok(batch.clone())], schema),
            )
        }
        Source::Reader(name, make) => Input::reader(*name, make(progress.clone())),
    }
}

/// The columns (name, declared type) and every row of `t`, after `integrity_check`.
fn read_table(conn: &Connection) -> R<(Columns, Vec<Vec<Value>>)> {
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let mut st = conn.prepare("SELECT name, type FROM pragma_table_info('t') ORDER BY cid")?;
    let columns = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<(String, String)>, _>>()?;
    let list: Vec<String> = columns.iter().map(|(n, _)| quote_ident(n)).collect();
    let mut st = conn.prepare(&format!("SELECT {} FROM t ORDER BY rowid", list.join(",")))?;
    let n = columns.len();
    let rows = st
        .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<Result<Vec<Vec<Value>>, _>>()?;
    Ok((columns, rows))
}

/// What a writer made of a case that it took: the table `t` in `conn`, read back.
fn table_outcome(conn: &Connection, summary: Summary) -> R<Outcome> {
    let (columns, rows) = read_table(conn)?;
    Ok(Outcome::Table {
        columns,
        rows,
        indexes: indexes_of(conn)?,
        summary,
    })
}

/// The key columns of each index on `t`, by index name.
fn indexes_of(conn: &Connection) -> R<Vec<Vec<String>>> {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM pragma_index_list('t') ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut out = vec![];
    for name in names {
        let cols: Vec<String> = conn
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")?
            .query_map([&name], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        out.push(cols);
    }
    Ok(out)
}

/// The reference: a table declared with `columns`, one `INSERT` per record binding
/// `values`, read back.
fn reference(columns: &[(String, String)], values: &[Vec<Value>]) -> R<Vec<Vec<Value>>> {
    let conn = Connection::open_in_memory()?;
    let decl: Vec<String> = columns
        .iter()
        .map(|(n, t)| format!("{} {t}", quote_ident(n)))
        .collect();
    conn.execute(&format!("CREATE TABLE t({})", decl.join(",")), [])?;
    let marks = vec!["?"; columns.len()].join(",");
    let mut st = conn.prepare(&format!("INSERT INTO t VALUES({marks})"))?;
    for row in values {
        st.execute(rusqlite::params_from_iter(row))?;
    }
    drop(st);
    Ok(read_table(&conn)?.1)
}

/// A file that holds a table of its own, for `append`.
fn existing_file(path: &Path) -> R {
    let conn = Connection::open(path)?;
    conn.execute_batch("CREATE TABLE other(x); INSERT INTO other VALUES ('kept');")?;
    Ok(())
}

fn files_in(dir: &Path) -> R<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    v.sort();
    Ok(v)
}

fn run(sink: Sink, case: &Case) -> R<Outcome> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("out.db");
    let progress = Arc::new(Progress::default());
    let mut opts = ImportOptions::default();
    opts.table = Some("t".into());
    (case.options)(&mut opts);
    opts.engine = match sink {
        Sink::Direct => Engine::Direct,
        Sink::Append => Engine::Auto,
        _ => Engine::Sqlite,
    };
    let rejects_file = dir.path().join("rejects.ndjson");
    if opts.max_errors.is_some() {
        opts.rejects = Some(rejects_file.clone());
    }
    let inputs = [input(&case.source, &progress)];
    let outcome = match sink {
        Sink::Sqlite | Sink::Direct | Sink::Null => {
            opts.parse_only = sink == Sink::Null;
            let before = files_in(dir.path())?;
            match import(&db, &inputs, &opts, &progress) {
                Ok(summary) if sink == Sink::Null => {
                    assert!(!db.exists(), "parsing alone wrote a database");
                    Outcome::Counted(summary)
                }
                Ok(summary) => table_outcome(&Connection::open(&db)?, summary)?,
                Err(e) => {
                    let mut after = files_in(dir.path())?;
                    after.retain(|p| *p != rejects_file);
                    assert_eq!(after, before, "a refused load left files behind: {e}");
                    Outcome::Refused(e)
                }
            }
        }
        Sink::Append => {
            existing_file(&db)?;
            let bytes = std::fs::read(&db)?;
            match import(&db, &inputs, &opts, &progress) {
                Ok(summary) => {
                    // The side file and transfer wherever the page writer can take the
                    // case (a primary key sends it through SQLite's insert path).
                    let side_file = opts.pk.is_empty();
                    assert_eq!(summary.engine == Some(EngineUsed::Direct), side_file);
                    let conn = Connection::open(&db)?;
                    // The file was in rollback-journal mode; a load that commits leaves
                    // it in WAL mode, whichever path wrote it (docs/import.md).
                    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
                    assert_eq!(mode, "wal");
                    let kept: String = conn.query_row("SELECT x FROM other", [], |r| r.get(0))?;
                    assert_eq!(kept, "kept");
                    table_outcome(&conn, summary)?
                }
                Err(e) => {
                    let after = std::fs::read(&db)?;
                    let first = bytes.iter().zip(&after).position(|(a, b)| a != b);
                    assert!(
                        after == bytes,
                        "a refused append changed the file: {} bytes before, {} after, first difference at {first:?} ({e})",
                        bytes.len(),
                        after.len()
                    );
                    Outcome::Refused(e)
                }
            }
        }
        #[cfg(feature = "network")]
        Sink::Rqlite => {
            let node = node::Node::start(dir.path())?;
            node.execute("CREATE TABLE other(x)")?;
            node.execute("INSERT INTO other VALUES ('kept')")?;
            let target = liteload::rqlite::RqliteTarget::parse(&node.url())?;
            let mut ropts = liteload::rqlite::RqliteOptions::default();
            ropts.boot = liteload::rqlite::Boot::Never;
            let result = liteload::rqlite::import(&target, &inputs, &opts, &ropts, &progress);
            let copy = dir.path().join("cluster.db");
            node.backup(&copy)?;
            let conn = Connection::open(&copy)?;
            let kept: String = conn.query_row("SELECT x FROM other", [], |r| r.get(0))?;
            assert_eq!(kept, "kept");
            match result {
                Ok(summary) => {
                    assert_eq!(summary.engine, Some(EngineUsed::Rqlite));
                    table_outcome(&conn, summary)?
                }
                Err(e) => Outcome::Refused(e),
            }
        }
        Sink::Connection => {
            existing_file(&db)?;
            let mut conn = Connection::open(&db)?;
            let tx = conn.transaction()?;
            tx.execute("INSERT INTO other VALUES ('before')", [])?;
            let result = import_into_connection(&tx, &inputs, &opts, &progress);
            // The caller's transaction goes on either way.
            tx.execute("INSERT INTO other VALUES ('after')", [])?;
            let outcome = match result {
                Ok(summary) => table_outcome(&tx, summary)?,
                Err(e) => {
                    let tables: i64 = tx.query_row(
                        "SELECT count(*) FROM sqlite_schema WHERE name = 't'",
                        [],
                        |r| r.get(0),
                    )?;
                    assert_eq!(tables, 0, "a refused load left its table: {e}");
                    Outcome::Refused(e)
                }
            };
            tx.commit()?;
            let n: i64 = conn.query_row("SELECT count(*) FROM other", [], |r| r.get(0))?;
            assert_eq!(n, 3);
            outcome
        }
    };
    Ok(outcome)
}

/// Runs `case` through `sink` and checks what came of it.
fn check(sink: Sink, case: Case) -> R {
    let outcome = run(sink, &case)?;
    if case.unsupported.contains(&sink) {
        match outcome {
            Outcome::Refused(e) if matches!(e.kind(), ErrorKind::Usage(_)) => return Ok(()),
            Outcome::Refused(e) => panic!("{sink:?} refused with the wrong kind: {e:?}"),
            _ => panic!("{sink:?} took a case it is said not to take"),
        }
    }
    #[cfg(feature = "network")]
    if case.cluster_stops && sink == Sink::Rqlite {
        // Stopped at the refused record (SQLITE_CONSTRAINT_PRIMARYKEY), with its place.
        match outcome {
            Outcome::Refused(e) => match e.kind() {
                ErrorKind::Constraint {
                    code: Some(1555),
                    pos: Some(pos),
                    ..
                } => assert_eq!((pos.line, pos.record), (4, 3)),
                _ => panic!("{sink:?} refused with the wrong kind: {e:?}"),
            },
            _ => panic!("{sink:?} did not stop at the refused record"),
        }
        return Ok(());
    }
    if let (true, Outcome::Counted(summary)) = (case.constraints, &outcome) {
        assert!(summary.rows > 0);
        return Ok(());
    }
    match (&case.expect, outcome) {
        (Expect::Refused(kind), Outcome::Refused(e)) => {
            assert!(
                kind(e.kind()),
                "{sink:?} refused with the wrong kind: {e:?}"
            );
        }
        (Expect::Refused(_), _) => panic!("{sink:?} took what must be refused"),
        (Expect::Table { .. }, Outcome::Refused(e)) => panic!("{sink:?} refused: {e:?}"),
        (Expect::Table { rows, rejects, .. }, Outcome::Counted(summary)) => {
            assert_eq!(summary.rows, rows.len() as u64);
            assert_eq!(summary.rejects, *rejects);
        }
        (
            Expect::Table {
                columns,
                rows: values,
                rejects,
            },
            Outcome::Table {
                columns: got_columns,
                rows,
                indexes,
                summary,
            },
        ) => {
            assert_eq!(&got_columns, columns, "{sink:?}: the columns");
            // The indexes asked for, each on its columns (integrity_check has held each
            // to the table's rows).
            let mut opts = ImportOptions::default();
            (case.options)(&mut opts);
            let mut asked: Vec<Vec<String>> =
                opts.indexes.iter().map(|ix| ix.columns.clone()).collect();
            let mut indexes = indexes;
            asked.sort();
            indexes.sort();
            assert_eq!(indexes, asked, "{sink:?}: the indexes");
            assert_eq!(summary.rows, values.len() as u64);
            assert_eq!(summary.rejects, *rejects);
            let want = reference(columns, values)?;
            assert_eq!(rows.len(), want.len(), "{sink:?}: the row count");
            for (i, (got, want)) in rows.iter().zip(&want).enumerate() {
                for (c, (g, w)) in got.iter().zip(want).enumerate() {
                    let same = match (g, w) {
                        (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
                        _ => g == w,
                    };
                    assert!(
                        same,
                        "{sink:?}: row {i}, column {:?}: stored {}, SQLite's INSERT stores {}",
                        columns[c].0,
                        show(g),
                        show(w)
                    );
                }
            }
        }
    }
    Ok(())
}

/// A value as an error message shows it (huge ones cut short).
fn show(v: &Value) -> String {
    let s = format!("{v:?}");
    if s.len() > 120 {
        format!(
            "{}… ({} chars)",
            s.chars().take(120).collect::<String>(),
            s.len()
        )
    } else {
        s
    }
}

/// One test per case for a sink, in a module named after it; the cases with Arrow
/// input only in a build with the `arrow` feature.
macro_rules! cases {
    ($sink:ident, $kind:expr) => {
        mod $sink {
            use super::*;
            cases!(@each $kind;
                nul, non_ascii, huge_text, misfit_after_sample, misfit_given_types,
                numberish_cells, negative_zero, integer_edges,
                json_values, empty_input, header_only, two_thousand_columns,
                names_colliding_by_case, names_needing_quotes, indexed, duplicate_keys,
                duplicate_keys_skipped, rejects, cancel_midway, source_error_midway);
            #[cfg(feature = "arrow")]
            mod arrow {
                use super::*;
                cases!(@each $kind; huge_blob, nan_and_infinities, text_in_every_column_type);
            }
        }
    };
    (@each $kind:expr; $($case:ident),*) => {
        $(
            #[test]
            fn $case() -> R {
                check($kind, $crate::$case())
            }
        )*
    };
}

cases!(sqlite, Sink::Sqlite);
cases!(direct, Sink::Direct);
cases!(append, Sink::Append);
cases!(connection, Sink::Connection);
cases!(null, Sink::Null);
#[cfg(feature = "network")]
cases!(rqlite, Sink::Rqlite);

/// `replace` into a cluster's table replaces it, also when the input would make the same
/// table again (the cluster's writer once compared the definitions, found no difference,
/// and appended): loaded twice from bytes (a new load each time, nothing resumed), the
/// table holds the input's rows once, and the node's other table is kept.
#[cfg(feature = "network")]
#[test]
fn replace_into_a_cluster_table_of_the_same_definition_replaces_it() -> R {
    let dir = tempfile::tempdir()?;
    let node = node::Node::start(dir.path())?;
    node.execute("CREATE TABLE other(x)")?;
    node.execute("INSERT INTO other VALUES ('kept')")?;
    let target = liteload::rqlite::RqliteTarget::parse(&node.url())?;
    let mut ropts = liteload::rqlite::RqliteOptions::default();
    ropts.boot = liteload::rqlite::Boot::Never;
    let mut opts = ImportOptions::default();
    opts.table = Some("t".into());
    opts.if_exists = liteload::IfExists::Replace;
    let progress = Progress::default();
    for _ in 0..2 {
        let inputs = [Input::bytes("t.csv", b"a,b\n1,x\n2,y\n3,z\n".to_vec())];
        let summary = liteload::rqlite::import(&target, &inputs, &opts, &ropts, &progress)?;
        assert_eq!(summary.rows, 3);
    }
    let copy = dir.path().join("cluster.db");
    node.backup(&copy)?;
    let conn = Connection::open(&copy)?;
    let rows: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(rows, 3, "replaced, not appended");
    let kept: String = conn.query_row("SELECT x FROM other", [], |r| r.get(0))?;
    assert_eq!(kept, "kept");
    Ok(())
}

/// An rqlite node, for the `rqlite` writer.
#[cfg(feature = "network")]
#[path = "support/rqlite_node.rs"]
mod node;

/// SQLite files through the Rust API (`rqlite::import`, told by their header as
/// `import` tells them) into a node that holds data, and into a file that holds the
/// same: the two end equal, table by table, rowid by rowid, and in their schemas (an
/// index name the target has taken is renamed alike); both pass `integrity_check`.
#[cfg(feature = "network")]
#[test]
fn sqlite_files_into_a_cluster_with_data_end_as_in_a_file() -> R {
    let dir = tempfile::tempdir()?;
    let p = |n: &str| dir.path().join(n);
    Connection::open(p("a.db"))?.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v); \
         INSERT INTO t VALUES (2, 'é' || char(0) || 'x'), (9, x'00'), (12, 9223372036854775807); \
         CREATE TABLE n (k TEXT COLLATE NOCASE, w REAL); \
         INSERT INTO n (rowid, k, w) VALUES (4, 'K', 1e300), (7, 'k''', -0.5); \
         CREATE INDEX ix ON n (k);",
    )?;
    Connection::open(p("b.db"))?.execute_batch(
        "CREATE TABLE n (w REAL, k TEXT COLLATE NOCASE); INSERT INTO n VALUES (2.5, 'z'), (NULL, NULL);",
    )?;
    let there = [
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
        "INSERT INTO t VALUES (1, 'there')",
        "CREATE INDEX ix ON t (v)",
    ];
    let file = p("file.db");
    let conn = Connection::open(&file)?;
    std::fs::create_dir(p("node"))?;
    let node = node::Node::start(&p("node"))?;
    for sql in there {
        conn.execute_batch(sql)?;
        node.execute(sql)?;
    }
    drop(conn);
    let inputs = [Input::Path(p("a.db")), Input::Path(p("b.db"))];
    let opts = ImportOptions::default();
    let progress = Progress::default();
    let target = liteload::rqlite::RqliteTarget::parse(&node.url())?;
    let ropts = liteload::rqlite::RqliteOptions::default();
    let cluster = liteload::rqlite::import(&target, &inputs, &opts, &ropts, &progress)?;
    let local = liteload::import(&file, &inputs, &opts, &progress)?;
    assert_eq!((cluster.rows, local.rows), (7, 7));
    let copy = p("cluster.db");
    node.backup(&copy)?;
    let rows = |db: &Path, sql: &str| -> R<Vec<Vec<Value>>> {
        let conn = Connection::open(db)?;
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok", "{}", db.display());
        let mut st = conn.prepare(sql)?;
        let n = st.column_count();
        let out = st
            .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
            .collect::<rusqlite::Result<Vec<Vec<Value>>>>()?;
        Ok(out)
    };
    for sql in [
        "SELECT rowid, id, v FROM t ORDER BY rowid",
        "SELECT rowid, k, w FROM n ORDER BY rowid",
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE '%liteload%' ORDER BY name",
    ] {
        let want = rows(&file, sql)?;
        assert!(want.len() >= 3, "{sql}");
        assert_eq!(rows(&copy, sql)?, want, "{sql}");
    }
    Ok(())
}
