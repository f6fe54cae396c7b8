//! The sinks' own conformance suite: every [`crate::sink::Sink`] implementation, built here and driven
//! by the load loop ([`crate::import::load`]) as the planner's writers are, against
//! SQLite's own row-by-row INSERT of the same values into a table of the same
//! declaration. (`tests/sinks.rs` drives the public doors: the command's and the
//! library's routes; this one drives each writer, including those no door reaches
//! alone.)
//!
//! The writers:
//! - `page`: the page writer into a new file;
//! - `page_tables`: the page writer into a new file, several tables shaped by a source's
//!   schema (each with an index built after its rows), as a database copy writes them;
//! - `page_tables_in_place`: the same tables into an existing file (rollback journal
//!   mode) that holds a table, in place past its end;
//! - `in_place`: a new table of an existing file (rollback journal mode), written past
//!   its end by the page writer, the schema changed in place under a rollback journal;
//! - `in_place_wal`: the same into a file in WAL mode that no other connection has open
//!   (the WAL checkpointed under the lock; the file stays in WAL mode);
//! - `side_file`: a new table of an existing file in WAL mode that another connection
//!   has open (which keeps the page writer out of the file), through a side file and
//!   SQLite's transfer;
//! - `in_place_append`: rows added after the last of a table (without index) of an
//!   existing file in rollback mode that holds rows, in place past the file's end;
//! - `in_place_merged`: the same into such a table with an index on each column: each
//!   index's old entries merged with the new ones into new pages, its old pages freed;
//! - `side_file_append`: rows added to a table of an existing file in WAL mode (another
//!   connection holding it open) that
//!   holds rows;
//! - `merge`: an upsert into an existing table with an INTEGER PRIMARY KEY, half the
//!   input's keys taken, against SQLite's `INSERT … ON CONFLICT DO UPDATE`;
//! - `sqlite`: SQLite's insert path through a connection, in the caller's transaction;
//! - `sqlite_tables`: the same with several shaped tables;
//! - `null`: nothing written, every row counted;
//! - `cluster`: an rqlite node that holds a table of its own, by requests of 64 KiB.
//!
//! Beside the fixed cases, `<writer>::random_csv` draws hostile CSV (numbers at the edges
//! of their types, text that looks like numbers, quotes and line breaks, long text,
//! columns of mixed kinds) for every writer.
//!
//! Each case is given as CSV text, NDJSON, or Arrow record batches of uneven sizes (the
//! program's values, typed: integers at their edges, -0.0, NUL and non-ASCII text), so
//! every writer meets each kind of batch its sources make.
//!
//! The cluster's sink (`cluster`, with the network feature) writes into one rqlited node
//! started for the case (built on first use, as `tests/sinks.rs` builds it), whose
//! database is then read back through rqlite's backup.
//! Each test is `<writer>::<case>`. Every file written is checked by `integrity_check`,
//! and a table that was there before keeps its rows. Where the plan's rule keeps a
//! writer from a case (an NDJSON input, whose columns may grow, is not appended through
//! a side file or merged), the test checks that the plan chooses SQLite's path instead.

use std::path::Path;

use proptest::prelude::*;
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::durability::Durability;
use crate::import::load;
use crate::options::{ImportOptions, OnConflict};
use crate::plan::{self, Dest, EngineRoute, ImportPlan, TableShape};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::sink::merge::MergeSink;
use crate::sink::page::PageSink;
use crate::sink::side_file::SideFileSink;
use crate::sink::sqlite::SqliteSink;
use crate::sink::NullSink;
use crate::source::Input;
use crate::table::IndexSpec;

type R<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// How a case's input is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// CSV text: every value text, `Null` an empty field.
    Csv,
    /// NDJSON: each value a JSON string, number or null.
    Ndjson,
    /// Arrow record batches (Int64, Float64 or Utf8 columns by their values), cut into
    /// batches of uneven sizes.
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))]
    Arrow,
}

/// An input and the values SQLite's INSERT binds for it.
struct Case {
    /// The columns, as the input names them.
    header: Vec<&'static str>,
    /// The records, as `format` says.
    rows: Vec<Vec<Value>>,
    format: Format,
}

/// Shown with each text cut to 40 characters and its length, so that a failing case of
/// long values stays readable.
impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cell = |v: &Value| match v {
            Value::Text(t) if t.chars().count() > 40 => {
                format!(
                    "{:?}… ({} chars)",
                    t.chars().take(40).collect::<String>(),
                    t.chars().count()
                )
            }
            other => format!("{other:?}"),
        };
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(cell).collect())
            .collect();
        f.debug_struct("Case")
            .field("format", &self.format)
            .field("header", &self.header)
            .field("rows", &rows)
            .finish()
    }
}

impl Case {
    /// The case as an input named after `table`.
    fn input(&self, table: &str) -> Input {
        match self.format {
            #[cfg(feature = "arrow")]
            Format::Arrow => self.record_batches(table),
            #[cfg(not(feature = "arrow"))]
            Format::Arrow => unreachable!("Arrow cases need the arrow feature"),
            _ => Input::bytes(self.file_name(table), self.bytes()),
        }
    }

    /// The rows as record batches of 1, 700, 333, 1, 700, … rows, each column typed by
    /// its first value that is not NULL (Utf8 when none is).
    #[cfg(feature = "arrow")]
    fn record_batches(&self, table: &str) -> Input {
        use arrow_array::{
            ArrayRef, BinaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
        };
        use arrow_schema::{DataType, Field, Schema};
        use std::sync::Arc;
        let types: Vec<DataType> = (0..self.header.len())
            .map(
                |c| match self.rows.iter().map(|r| &r[c]).find(|v| **v != Value::Null) {
                    Some(Value::Integer(_)) => DataType::Int64,
                    Some(Value::Real(_)) => DataType::Float64,
                    Some(Value::Blob(_)) => DataType::Binary,
                    _ => DataType::Utf8,
                },
            )
            .collect();
        let schema = Arc::new(Schema::new(
            self.header
                .iter()
                .zip(&types)
                .map(|(h, t)| Field::new(*h, t.clone(), true))
                .collect::<Vec<_>>(),
        ));
        let column = |rows: &[Vec<Value>], c: usize| -> ArrayRef {
            let cells = rows.iter().map(|r| &r[c]);
            match types[c] {
                DataType::Int64 => Arc::new(Int64Array::from_iter(cells.map(|v| match v {
                    Value::Integer(i) => Some(*i),
                    _ => None,
                }))),
                DataType::Float64 => Arc::new(Float64Array::from_iter(cells.map(|v| match v {
                    Value::Real(f) => Some(*f),
                    _ => None,
                }))),
                DataType::Binary => Arc::new(BinaryArray::from_iter(cells.map(|v| match v {
                    Value::Blob(b) => Some(b.clone()),
                    _ => None,
                }))),
                _ => Arc::new(StringArray::from_iter(cells.map(|v| match v {
                    Value::Text(t) => Some(t.clone()),
                    _ => None,
                }))),
            }
        };
        let mut batches = vec![];
        let (mut at, mut sizes) = (0, [1, 700, 333].into_iter().cycle());
        while at < self.rows.len() {
            let end = (at + sizes.next().unwrap_or(1)).min(self.rows.len());
            let rows = &self.rows[at..end];
            let columns = (0..self.header.len()).map(|c| column(rows, c)).collect();
            batches.push(Ok(RecordBatch::try_new(schema.clone(), columns)
                .expect("columns of the schema's types")));
            at = end;
        }
        let batches = arrow_array::RecordBatchIterator::new(batches, schema);
        Input::record_batches(table, batches)
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        if self.format == Format::Ndjson {
            for r in &self.rows {
                let mut obj = serde_json::Map::new();
                for (h, v) in self.header.iter().zip(r) {
                    let j = match v {
                        Value::Null => serde_json::Value::Null,
                        Value::Integer(i) => (*i).into(),
                        Value::Real(f) => (*f).into(),
                        Value::Text(t) => t.clone().into(),
                        Value::Blob(_) => unreachable!("no blob in JSON"),
                    };
                    obj.insert(h.to_string(), j);
                }
                out.push_str(&serde_json::Value::Object(obj).to_string());
                out.push('\n');
            }
            return out.into_bytes();
        }
        let line = |fields: Vec<String>| -> String {
            let quoted: Vec<String> = fields
                .iter()
                .map(|f| format!("\"{}\"", f.replace('"', "\"\"")))
                .collect();
            quoted.join(",") + "\n"
        };
        out.push_str(&line(self.header.iter().map(|h| h.to_string()).collect()));
        for r in &self.rows {
            out.push_str(&line(
                r.iter()
                    .map(|v| match v {
                        Value::Text(t) => t.clone(),
                        Value::Null => String::new(),
                        other => unreachable!("CSV values are text: {other:?}"),
                    })
                    .collect(),
            ));
        }
        out.into_bytes()
    }

    fn file_name(&self, table: &str) -> String {
        format!(
            "{table}.{}",
            if self.format == Format::Ndjson {
                "ndjson"
            } else {
                "csv"
            }
        )
    }

    /// The value SQLite's INSERT binds for `v` in a column declared `declared`: CSV's
    /// empty field is NULL in an INTEGER or REAL column and '' in a TEXT one (the
    /// documented rule).
    fn bound(&self, v: &Value, declared: &str) -> Value {
        match v {
            Value::Null if self.format == Format::Csv && declared == "TEXT" => {
                Value::Text(String::new())
            }
            other => other.clone(),
        }
    }

    /// The case with a [`KEY`] column of keys 1, 2, … in front (for the merge).
    fn keyed(&self) -> Case {
        let mut header = vec![KEY];
        header.extend(&self.header);
        let rows = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let id = i as i64 + 1;
                let key = match self.format {
                    Format::Csv => Value::Text(id.to_string()),
                    Format::Ndjson | Format::Arrow => Value::Integer(id),
                };
                std::iter::once(key).chain(r.iter().cloned()).collect()
            })
            .collect();
        Case {
            header,
            rows,
            format: self.format,
        }
    }
}

impl Case {
    /// The case without its columns that hold a blob.
    fn without_blobs(self) -> Case {
        let keep: Vec<usize> = (0..self.header.len())
            .filter(|&c| !self.rows.iter().any(|r| matches!(r[c], Value::Blob(_))))
            .collect();
        Case {
            header: keep.iter().map(|&c| self.header[c]).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| keep.iter().map(|&c| r[c].clone()).collect())
                .collect(),
            format: self.format,
        }
    }

    /// The case with a [`KEY`] column in front whose integers rise with gaps from
    /// `i64::MIN` to `i64::MAX`: the rowids of a table keyed by it.
    fn rowid_keyed(&self) -> Case {
        let n = self.rows.len() as i64;
        let mut keyed = self.keyed();
        for (i, row) in keyed.rows.iter_mut().enumerate() {
            let i = i as i64;
            row[0] = Value::Integer(match i {
                0 => i64::MIN,
                _ if i == n - 1 => i64::MAX,
                _ => i * 3 - 3_000,
            });
        }
        keyed
    }
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn csv(header: &[&'static str], rows: Vec<Vec<&str>>) -> Case {
    Case {
        header: header.to_vec(),
        rows: rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|f| if f.is_empty() { Value::Null } else { text(f) })
                    .collect()
            })
            .collect(),
        format: Format::Csv,
    }
}

// ---- the cases ----

fn numbers_at_the_edges() -> Case {
    csv(
        &["i", "r", "mixed"],
        vec![
            vec!["-9223372036854775808", "1.5", "7"],
            vec!["9223372036854775807", "-0.0", "007"],
            vec!["0", "1e308", "9223372036854775808"],
            vec!["-1", "2.2250738585072014e-308", "1.0"],
            vec!["", "", ""],
            vec!["42", "-1e-5", " 12 "],
        ],
    )
}

fn non_ascii_and_quotes() -> Case {
    csv(
        &["名前", "zoë \"quoted\"", "sel;ect"],
        vec![
            vec!["Ada Lovelace", "ünïcödé", "😀😀"],
            vec!["\u{202E}rtl", "e\u{301}", "\u{FEFF}bom inside"],
            vec!["line\nbreak", "comma, inside", "\"quoted\""],
            vec!["١٢٣", "１２", "\u{a0}7"],
        ],
    )
}

fn values_past_a_page() -> Case {
    let big = "þx\"".repeat(40_000);
    let page = "y".repeat(4_090);
    csv(
        &["id", "body", "tail"],
        vec![
            vec!["1", &big, "a"],
            vec!["2", &page, ""],
            vec!["3", "", &big],
            vec!["4", "short", "b"],
        ],
    )
}

fn many_rows_across_batches() -> Case {
    let rows: Vec<Vec<String>> = (0..5_000)
        .map(|i: i64| {
            vec![
                (i * 7919 % 10_007 - 5_000).to_string(),
                format!("v{}é", i * 31 % 977),
                if i % 13 == 0 {
                    String::new()
                } else {
                    format!("{}.25", i)
                },
            ]
        })
        .collect();
    csv(
        &["k", "v", "r"],
        rows.iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect(),
    )
}

fn wide() -> Case {
    let header: Vec<&'static str> = (0..120)
        .map(|i| &*Box::leak(format!("c{i}").into_boxed_str()))
        .collect();
    let rows: Vec<Vec<String>> = (0..50)
        .map(|r| {
            (0..120)
                .map(|c| match c % 3 {
                    0 => (r * c).to_string(),
                    1 => format!("t{r}_{c}"),
                    _ => String::new(),
                })
                .collect()
        })
        .collect();
    csv(
        &header,
        rows.iter()
            .map(|r| r.iter().map(String::as_str).collect())
            .collect(),
    )
}

/// One CSV field of a column of `kind` (0 integers, 1 reals, 2 text, 3 any of them), now
/// and then one of another kind: numbers at the edges of their types, text that looks
/// like a number, quotes, separators, line breaks, non-ASCII, text past a page,
/// empty. (tests/append.rs's fields, which that test took through the command's door.)
fn random_field(kind: u8) -> BoxedStrategy<String> {
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
        (-1000i32..1000).prop_map(|i| format!("{i}.5")),
        Just("-0.0".to_string()),
    ];
    let text = prop_oneof![
        "[a-zé✓\"\n, ]{0,12}",
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

/// Random CSV: 1 to 5 columns, each of its own kind, 1 to 60 rows.
fn random_csv() -> impl Strategy<Value = Case> {
    prop::collection::vec(0u8..4, 1..6).prop_flat_map(|kinds| {
        let width = kinds.len();
        let row: Vec<BoxedStrategy<String>> = kinds.into_iter().map(random_field).collect();
        prop::collection::vec(row, 1..60).prop_map(move |rows| {
            let header: Vec<&'static str> = (0..width)
                .map(|i| &*Box::leak(format!("c{i}").into_boxed_str()))
                .collect();
            csv(
                &header,
                rows.iter()
                    .map(|r| r.iter().map(String::as_str).collect())
                    .collect(),
            )
        })
    })
}

/// NDJSON: a NUL inside a string, numbers as JSON numbers, nulls, a key first seen late.
fn ndjson_with_nul() -> Case {
    Case {
        header: vec!["s", "n", "x"],
        rows: vec![
            vec![text("a\0b"), Value::Integer(i64::MIN), Value::Real(-0.0)],
            vec![text("é😀"), Value::Integer(3), Value::Null],
            vec![Value::Null, Value::Integer(i64::MAX), Value::Real(1.5e300)],
            vec![text(""), Value::Null, Value::Real(0.1)],
        ],
        format: Format::Ndjson,
    }
}

/// Arrow record batches: integers at the edges, -0.0, NaN (NULL to SQLite), the
/// infinities and the largest and smallest doubles, a NUL and non-ASCII in text, blobs
/// (empty, NUL and 0xff bytes, past a page), NULLs in every column, a column of NULLs
/// alone, across batches of uneven sizes. The several-tables writers take it keyed: an
/// INTEGER PRIMARY KEY column in front, whose values are the rowids (as a copy's key).
#[cfg_attr(not(feature = "arrow"), allow(dead_code))]
fn arrow_batches() -> Case {
    let rows = (0..2_000i64)
        .map(|i| {
            let n = match i % 5 {
                0 => Value::Integer(i64::MIN + i),
                1 => Value::Integer(i64::MAX - i),
                2 => Value::Null,
                _ => Value::Integer(i * 7919 % 10_007 - 5_000),
            };
            let r = match i % 7 {
                0 => Value::Real(-0.0),
                1 => Value::Real(f64::MAX / (i + 1) as f64),
                2 => Value::Real(f64::MIN_POSITIVE * i as f64),
                3 => Value::Real(f64::NAN),
                4 => Value::Real(f64::INFINITY),
                5 => Value::Real(f64::NEG_INFINITY),
                _ => Value::Null,
            };
            let b = match i % 5 {
                0 => Value::Blob(vec![0, 255, 0]),
                1 => Value::Blob(vec![]),
                2 => Value::Null,
                3 => Value::Blob(b"\xff\xfe".to_vec()),
                _ => Value::Blob(vec![7; 5_000 + i as usize]),
            };
            let t = match i % 6 {
                0 => text(format!("a\0b{i}")),
                1 => text("é😀\u{202E}"),
                2 => Value::Null,
                3 => text(""),
                4 => text("x".repeat(5_000 + i as usize)),
                _ => text(format!("{i}")),
            };
            vec![n, r, t, b, Value::Null]
        })
        .collect();
    Case {
        header: vec!["n", "r", "名前 \"t\"", "b", "nothing"],
        rows,
        format: Format::Arrow,
    }
}

// ---- the writers ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SinkUnderTest {
    Page,
    PageTables,
    PageTablesInPlace,
    InPlace,
    InPlaceWal,
    InPlaceAppend,
    InPlaceMerged,
    SideFile,
    SideFileAppend,
    Merge,
    Sqlite,
    SqliteTables,
    Null,
    #[cfg(feature = "network")]
    Cluster,
}

/// An rqlite node, for the cluster's sink.
#[cfg(feature = "network")]
#[path = "../tests/support/rqlite_node.rs"]
mod rqlite_node;

/// The merge's key column.
const KEY: &str = "merge key";

/// The tables of a case's target, for the several-tables writers.
const TABLES: [&str; 2] = ["t", "T u"];

/// A table's reference: its declaration as the writer made it, then SQLite's INSERT.
struct Reference {
    conn: Connection,
}

/// A table as SQLite shows it: its columns (name, declared type) and its rows with
/// their rowids, each value with its storage class.
type Shown = (Vec<(String, String)>, Vec<Vec<String>>);

fn shown(conn: &Connection, table: &str) -> R<Shown> {
    let cols = conn
        .prepare("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<(String, String)>>>()?;
    let mut stmt = conn.prepare(&format!(
        "SELECT rowid, * FROM {} ORDER BY rowid",
        quote_ident(table)
    ))?;
    let n = stmt.column_count();
    // Each value with its storage class, reals by their bits (-0.0 is not 0.0).
    let rows = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| {
                    Ok(match r.get::<_, Value>(i)? {
                        Value::Real(f) => format!("real {:#x}", f.to_bits()),
                        other => format!("{other:?}"),
                    })
                })
                .collect()
        })?
        .collect::<rusqlite::Result<Vec<Vec<String>>>>()?;
    Ok((cols, rows))
}

fn declaration(conn: &Connection, table: &str) -> R<String> {
    Ok(conn.query_row(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get(0),
    )?)
}

fn check(conn: &Connection) -> R {
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(())
}

impl Reference {
    /// `table` made with `create` (the written table's own declaration), rows `before`
    /// in it, then one INSERT (`upsert`: … ON CONFLICT([`KEY`]) DO UPDATE) per record of
    /// `case`.
    fn new(create: &str, table: &str, before: &[Vec<Value>], case: &Case, upsert: bool) -> R<Self> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(create)?;
        let (cols, _) = shown(&conn, table)?;
        let holes = vec!["?"; cols.len()].join(", ");
        let mut insert = conn.prepare(&format!(
            "INSERT INTO {} VALUES ({holes})",
            quote_ident(table)
        ))?;
        for row in before {
            insert.execute(rusqlite::params_from_iter(row))?;
        }
        drop(insert);
        let names: Vec<String> = cols.iter().map(|(n, _)| quote_ident(n)).collect();
        let mut sql = format!(
            "INSERT INTO {}({}) VALUES ({})",
            quote_ident(table),
            names[..case.header.len()].join(", "),
            vec!["?"; case.header.len()].join(", ")
        );
        if upsert {
            let set: Vec<String> = names[1..case.header.len()]
                .iter()
                .map(|n| format!("{n} = excluded.{n}"))
                .collect();
            sql.push_str(&format!(
                " ON CONFLICT({}) DO UPDATE SET {}",
                quote_ident(KEY),
                set.join(", ")
            ));
        }
        let mut stmt = conn.prepare(&sql)?;
        for r in &case.rows {
            let bound: Vec<Value> = r
                .iter()
                .zip(&cols)
                .map(|(v, (_, declared))| case.bound(v, declared))
                .collect();
            stmt.execute(rusqlite::params_from_iter(bound))?;
        }
        drop(stmt);
        Ok(Reference { conn })
    }
}

/// Plans `case` into `db` as the load would, for `writer`'s inputs.
/// A connection that has read the database at `db`, so holds it open (in WAL mode, its
/// SHARED lock) while it lives.
fn reader(db: &Path) -> R<Connection> {
    let c = Connection::open(db)?;
    c.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
    Ok(c)
}

fn planned<'i>(db: &Path, inputs: &'i [Input], opts: &ImportOptions) -> R<ImportPlan<'i>> {
    Ok(plan::plan(
        Dest::File(db),
        inputs,
        opts,
        &Progress::default(),
    )?)
}

fn options() -> ImportOptions {
    ImportOptions {
        batch_rows: 100,
        ..ImportOptions::default()
    }
}

fn run(writer: SinkUnderTest, case: Case) -> R {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("out.db");
    let progress = Progress::default();
    match writer {
        SinkUnderTest::Page => {
            let inputs = [case.input("t")];
            let opts = options();
            let mut plan = planned(&db, &inputs, &opts)?;
            let rules = plan.rules.clone();
            assert_eq!(plan.engine, EngineRoute::NewFile);
            let mut sink = PageSink::new_file(&db, &rules, &progress);
            let summary = load(&mut plan, &mut sink, &opts, &progress)?;
            assert_eq!(summary.rows, case.rows.len() as u64);
            compare(&db, &["t"], &case, &[], false)
        }
        SinkUnderTest::PageTables
        | SinkUnderTest::PageTablesInPlace
        | SinkUnderTest::SqliteTables => {
            if writer == SinkUnderTest::PageTablesInPlace {
                Connection::open(&db)?
                    .execute_batch("CREATE TABLE other(x); INSERT INTO other VALUES (1)")?;
            }
            // Typed rows come keyed, as a copy's table with an INTEGER PRIMARY KEY.
            let keyed = case.format == Format::Arrow;
            let case = if keyed { case.rowid_keyed() } else { case };
            let inputs: Vec<Input> = TABLES.iter().map(|t| case.input(t)).collect();
            let opts = options();
            // One load per table, as a copy plans them: inputs of a typed format
            // planned together would be one load (one schema, one table).
            let mut plan = planned(&db, &inputs[..1], &opts)?;
            plan.loads.extend(planned(&db, &inputs[1..], &opts)?.loads);
            let rules = plan.rules.clone();
            // Shaped as a copy's tables are: each with an index of its own (the same
            // wanted name for both, to SQLite's case-blind eyes, when made).
            plan.shapes = TABLES
                .iter()
                .map(|t| TableShape {
                    table: t.to_string(),
                    rowid: keyed.then(|| KEY.to_string()),
                    indexes: vec![IndexSpec::new([case.header[usize::from(keyed)]], false)],
                    ..TableShape::default()
                })
                .collect();
            let summary = if writer == SinkUnderTest::PageTables {
                let mut sink =
                    PageSink::new_file(&db, &rules, &progress).with_tables(plan.shapes.clone());
                load(&mut plan, &mut sink, &opts, &progress)?
            } else if writer == SinkUnderTest::PageTablesInPlace {
                let mut sink = PageSink::in_place(&db, Durability::Balanced, &rules, &progress)
                    .with_tables(plan.shapes.clone());
                let summary = load(&mut plan, &mut sink, &opts, &progress)?;
                drop(sink);
                assert!(!dir.path().join("out.db-journal").exists());
                summary
            } else {
                let conn = Connection::open(&db)?;
                conn.execute_batch("CREATE TABLE other(x); INSERT INTO other VALUES (1)")?;
                let tx = conn.unchecked_transaction()?;
                let mut sink =
                    SqliteSink::new(&tx, &rules, &progress).with_tables(plan.shapes.clone());
                let summary = load(&mut plan, &mut sink, &opts, &progress)?;
                drop(sink);
                tx.commit()?;
                summary
            };
            assert_eq!(summary.rows, 2 * case.rows.len() as u64);
            compare(&db, &TABLES, &case, &[], false)?;
            // Every table got its index, built whole.
            let conn = Connection::open(&db)?;
            for t in TABLES {
                let n: i64 =
                    conn.query_row("SELECT count(*) FROM pragma_index_list(?1)", [t], |r| {
                        r.get(0)
                    })?;
                assert_eq!(n, 1, "{t}");
            }
            Ok(())
        }
        SinkUnderTest::InPlace | SinkUnderTest::InPlaceWal => {
            let wal = writer == SinkUnderTest::InPlaceWal;
            let mode = if wal { "WAL" } else { "DELETE" };
            Connection::open(&db)?.execute_batch(&format!(
                "PRAGMA journal_mode={mode}; CREATE TABLE other(x); INSERT INTO other VALUES (1); \
                 CREATE INDEX t_x ON other(x)"
            ))?;
            let inputs = [case.input("t")];
            let mut opts = options();
            // An index asked for whose natural name ("t_…") may be taken by the file's.
            opts.indexes = vec![crate::table::IndexSpec::new(
                [case.header[0].to_string()],
                false,
            )];
            let mut plan = planned(&db, &inputs, &opts)?;
            let rules = plan.rules.clone();
            assert_eq!(plan.engine, EngineRoute::InPlace(Durability::Balanced));
            let mut sink = PageSink::in_place(&db, Durability::Balanced, &rules, &progress);
            load(&mut plan, &mut sink, &opts, &progress)?;
            drop(sink);
            assert!(!dir.path().join("out.db-journal").exists());
            let indexes: i64 = Connection::open(&db)?.query_row(
                "SELECT count(*) FROM pragma_index_list('t')",
                [],
                |r| r.get(0),
            )?;
            assert_eq!(indexes, 1, "the index asked for");
            let mode: String =
                Connection::open(&db)?.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            assert_eq!(mode, "wal", "balanced leaves the file in WAL mode");
            compare(&db, &["t"], &case, &[], false)
        }
        SinkUnderTest::SideFile => {
            Connection::open(&db)?.execute_batch(
                "PRAGMA journal_mode=WAL; CREATE TABLE other(x); INSERT INTO other VALUES (1)",
            )?;
            // Another connection has the file open: the page writer keeps out of it.
            let _reader = reader(&db)?;
            let inputs = [case.input("t")];
            let opts = options();
            let mut plan = planned(&db, &inputs, &opts)?;
            let rules = plan.rules.clone();
            assert_eq!(plan.engine, EngineRoute::SideFile(Durability::Balanced));
            let mut sink = SideFileSink::new(db.clone(), Durability::Balanced, &rules, &progress);
            load(&mut plan, &mut sink, &opts, &progress)?;
            drop(sink);
            compare(&db, &["t"], &case, &[], false)
        }
        SinkUnderTest::SideFileAppend
        | SinkUnderTest::InPlaceAppend
        | SinkUnderTest::InPlaceMerged
        | SinkUnderTest::Merge => {
            let merge = writer == SinkUnderTest::Merge;
            let indexed = writer == SinkUnderTest::InPlaceMerged;
            let in_place = writer == SinkUnderTest::InPlaceAppend || indexed;
            // A BLOB column keeps the side file and the merge out (the plan's rule: they
            // take columns of INTEGER, REAL and TEXT affinity), so their case leaves
            // blobs out.
            let case = case.without_blobs();
            let case = if merge { case.keyed() } else { case };
            let inputs = [case.input("t")];
            // The table made beforehand with the types a new table would get, holding
            // rows: for the merge, every other key of the input's.
            let mut opts = options();
            // (Planned on an input of its own: an input of record batches is read once.)
            let probe = [case.input("t")];
            let types = planned(&dir.path().join("new.db"), &probe, &opts)?.loads[0]
                .types
                .clone();
            let cols: Vec<(String, crate::types::ColumnType)> = case
                .header
                .iter()
                .map(|h| h.to_string())
                .zip(types)
                .collect();
            let key: Vec<String> = if merge { vec![KEY.into()] } else { vec![] };
            let create = crate::table::create_sql("t", &cols, &key);
            let before: Vec<Vec<Value>> = (0..case.rows.len() as i64)
                .filter(|i| i % 2 == 0)
                .map(|i| {
                    let mut row = vec![Value::Null; cols.len()];
                    row[0] = if merge {
                        Value::Integer(i + 1)
                    } else {
                        Value::Text("before".into())
                    };
                    row
                })
                .collect();
            {
                let conn = Connection::open(&db)?;
                if !in_place {
                    // WAL mode, and below another connection that holds the file open,
                    // keep the page writer from the file itself: the side file.
                    conn.execute_batch("PRAGMA journal_mode=WAL")?;
                }
                conn.execute_batch(&create)?;
                let holes = vec!["?"; cols.len()].join(", ");
                for row in &before {
                    conn.execute(
                        &format!("INSERT INTO t VALUES ({holes})"),
                        rusqlite::params_from_iter(row),
                    )?;
                }
                if indexed {
                    // Made after the rows, as a schema's migration adds one.
                    for (i, (col, _)) in cols.iter().enumerate() {
                        conn.execute_batch(&format!(
                            "CREATE INDEX \"t by {i}\" ON t ({})",
                            quote_ident(col)
                        ))?;
                    }
                }
            }
            if merge {
                opts.on_conflict = OnConflict::Update;
                opts.key = vec![KEY.into()];
            }
            let _reader = if in_place { None } else { Some(reader(&db)?) };
            let mut plan = planned(&db, &inputs, &opts)?;
            let rules = plan.rules.clone();
            if case.format == Format::Ndjson {
                // Columns may come after the sample: the plan keeps the side file and
                // the merge out of it.
                assert_eq!(plan.engine, EngineRoute::Sqlite);
                return Ok(());
            }
            if merge {
                assert_eq!(plan.engine, EngineRoute::Merge(Durability::Balanced));
                let mut sink = MergeSink::new(db.clone(), Durability::Balanced, &rules, &progress);
                load(&mut plan, &mut sink, &opts, &progress)?;
            } else if in_place {
                assert_eq!(plan.engine, EngineRoute::InPlace(Durability::Balanced));
                let mut sink = PageSink::in_place(&db, Durability::Balanced, &rules, &progress);
                load(&mut plan, &mut sink, &opts, &progress)?;
                drop(sink);
                assert!(!dir.path().join("out.db-journal").exists());
            } else {
                assert_eq!(plan.engine, EngineRoute::SideFile(Durability::Balanced));
                let mut sink =
                    SideFileSink::new(db.clone(), Durability::Balanced, &rules, &progress);
                load(&mut plan, &mut sink, &opts, &progress)?;
            }
            compare(&db, &["t"], &case, &before, merge)
        }
        SinkUnderTest::Sqlite => {
            let inputs = [case.input("t")];
            let opts = options();
            let mut plan = planned(&db, &inputs, &opts)?;
            let rules = plan.rules.clone();
            let conn = Connection::open(&db)?;
            let tx = conn.unchecked_transaction()?;
            let mut sink = SqliteSink::new(&tx, &rules, &progress);
            load(&mut plan, &mut sink, &opts, &progress)?;
            drop(sink);
            tx.commit()?;
            compare(&db, &["t"], &case, &[], false)
        }
        #[cfg(feature = "network")]
        SinkUnderTest::Cluster => {
            use crate::rqlite::RqliteTarget;
            use crate::sink::rqlite::client::Client;
            use crate::sink::rqlite::load::Shape;
            use crate::sink::rqlite::ClusterSink;
            // The node holds a table of its own before, which the load keeps.
            let node = rqlite_node::Node::start(dir.path())?;
            node.execute("CREATE TABLE other(x)")?;
            node.execute("INSERT INTO other VALUES (1)")?;
            let client = Client::new(&RqliteTarget::parse(&node.url())?, None)?;
            let inputs = [case.input("t")];
            let opts = options();
            let mut plan = plan::plan(Dest::Cluster, &inputs, &opts, &progress)?;
            assert_eq!(plan.engine, EngineRoute::Sqlite);
            let rules = plan.rules.clone();
            // Requests of 64 KiB: most cases take several, each its own transaction.
            let shape = Shape {
                request_bytes: 64 << 10,
                param_rows: 256,
                ordered: false,
            };
            let summary = std::thread::scope(|scope| {
                let mut sink = ClusterSink::new(scope, &client, &rules, &progress, shape, 1);
                load(&mut plan, &mut sink, &opts, &progress)
            })?;
            assert_eq!(summary.rows, case.rows.len() as u64);
            node.backup(&db)?;
            compare(&db, &["t"], &case, &[], false)
        }
        SinkUnderTest::Null => {
            let inputs = [case.input("t")];
            let opts = options();
            let mut plan = planned(&db, &inputs, &opts)?;
            let summary = load(&mut plan, &mut NullSink::default(), &opts, &progress)?;
            assert_eq!(summary.rows, case.rows.len() as u64);
            assert!(!db.exists(), "nothing is written");
            Ok(())
        }
    }
}

/// Each of `tables` in `db` against the reference made with its own declaration, with
/// `before` in it first; `other`, where the file had it, kept.
fn compare(db: &Path, tables: &[&str], case: &Case, before: &[Vec<Value>], upsert: bool) -> R {
    let got = Connection::open(db)?;
    check(&got)?;
    for t in tables {
        let create = declaration(&got, t)?;
        let want = Reference::new(&create, t, before, case, upsert)?;
        assert_eq!(shown(&got, t)?, shown(&want.conn, t)?, "table {t}");
    }
    let other: bool = got.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'other'",
        [],
        |r| r.get(0),
    )?;
    if other {
        let x: i64 = got.query_row("SELECT x FROM other", [], |r| r.get(0))?;
        assert_eq!(x, 1, "the file's other table is kept");
    }
    Ok(())
}

macro_rules! suite {
    ($($writer:ident: $kind:expr;)*) => {$(
        mod $writer {
            use super::*;
            #[test]
            fn numbers_at_the_edges() -> R { run($kind, super::numbers_at_the_edges()) }
            #[test]
            fn non_ascii_and_quotes() -> R { run($kind, super::non_ascii_and_quotes()) }
            #[test]
            fn values_past_a_page() -> R { run($kind, super::values_past_a_page()) }
            #[test]
            fn many_rows_across_batches() -> R { run($kind, super::many_rows_across_batches()) }
            #[test]
            fn wide() -> R { run($kind, super::wide()) }
            #[test]
            fn ndjson_with_nul() -> R { run($kind, super::ndjson_with_nul()) }
            #[cfg(feature = "arrow")]
            #[test]
            fn arrow_batches() -> R { run($kind, super::arrow_batches()) }
            proptest! {
                #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
                #[test]
                fn random_csv(case in super::random_csv()) {
                    run($kind, case).map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
            }
        }
    )*};
}

suite! {
    page: SinkUnderTest::Page;
    page_tables: SinkUnderTest::PageTables;
    page_tables_in_place: SinkUnderTest::PageTablesInPlace;
    in_place: SinkUnderTest::InPlace;
    in_place_wal: SinkUnderTest::InPlaceWal;
    in_place_append: SinkUnderTest::InPlaceAppend;
    in_place_merged: SinkUnderTest::InPlaceMerged;
    side_file: SinkUnderTest::SideFile;
    side_file_append: SinkUnderTest::SideFileAppend;
    merge: SinkUnderTest::Merge;
    sqlite: SinkUnderTest::Sqlite;
    sqlite_tables: SinkUnderTest::SqliteTables;
    null: SinkUnderTest::Null;
}

#[cfg(feature = "network")]
suite! {
    cluster: SinkUnderTest::Cluster;
}
