//! Rows as rqlite requests: JSON arrays of `["SQL", params…]` statements. Values are
//! always parameters, never SQL text.
//!
//! Two statement shapes, chosen per run of rows by what the values need:
//! - **one document of rows** (`INSERT … SELECT value->>0, … FROM json_each(?)`): the
//!   rows as one parameter. rqlite gzips a Raft command when a request has 50
//!   statements or more, or a statement's SQL is 1 KiB or longer; this shape has short
//!   SQL and few statements, so nothing is compressed, and SQLite unpacks the rows on
//!   every node. The document's form is the cluster's SQLite's fastest
//!   ([`DocShape`]). It carries NULL, INTEGER and TEXT exactly.
//! - **bound parameters** (`INSERT … VALUES (?,?),(?,?)…`): for rows holding a REAL
//!   or a BLOB. SQLite's JSON parser does not round every decimal to the nearest double
//!   (3,392 of 19,994 random doubles came back one bit off on SQLite 3.50.4), while
//!   rqlite binds a JSON number as Go parses it, which is exact; a BLOB has no JSON
//!   form. ±Infinity has no JSON number either: it is written as the SQL constant
//!   `9e999`, which SQLite reads as infinity.
//!
//! rqlite reads a text parameter of the form `x'…'` as a BLOB. A text value that could
//! be taken so is sent as a BLOB of its bytes under `CAST(? AS TEXT)`, which gives the
//! same text back.

use std::io::Write as _;

use serde_json::Value as Json;

use crate::batch::{Batch, Value};
use crate::schema::quote_ident;

/// Rows per bound-parameter statement, at most (and at most 32,766 parameters).
const PARAM_ROWS: usize = 256;

/// The form of the document that carries a run of rows, by what the cluster's SQLite
/// unpacks fastest. Whatever the form, each row reaches `->>` as the same JSON array
/// text, so the values stored are the same.
///
/// Measured (bench/README.md): where `json_each` walks a JSON text of row arrays, it
/// renders each row back to text for `->>` to parse again, and that rendering, with the
/// parse of the whole text, was the largest cost on every node. A JSONB array whose
/// elements are the rows' JSON texts (JSONB's raw-text element) is walked without
/// parsing it, and each row comes out as its text by a copy: 12% faster into a 3-node
/// cluster (SQLite 3.50.4), though hex makes the request twice as long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DocShape {
    /// A JSON text, an array of row arrays, walked by `each`: `jsonb_each` (SQLite 3.51
    /// and later), which hands each row to `->>` in binary form, or `json_each`.
    Text { each: &'static str },
    /// A BLOB (sent in rqlite's `x'…'` form) of JSONB: an array of raw-text elements,
    /// each a row's JSON array text, walked by `json_each` (SQLite 3.45 and later read
    /// JSONB).
    RowTexts,
}

/// JSONB element types (SQLite's `JSONB_*`), the two this module writes.
const JSONB_TEXTRAW: u8 = 10;
const JSONB_ARRAY: u8 = 11;

/// Appends a JSONB element header: the type in the low nibble, the payload size in
/// the high nibble when it is at most 11, else in the 1, 2, 4 or 8 big-endian bytes
/// that follow (nibble 12, 13, 14, 15).
fn jsonb_header(out: &mut Vec<u8>, kind: u8, size: usize) {
    if size <= 11 {
        out.push(((size as u8) << 4) | kind);
    } else if let Ok(s) = u8::try_from(size) {
        out.extend_from_slice(&[0xC0 | kind, s]);
    } else if let Ok(s) = u16::try_from(size) {
        out.push(0xD0 | kind);
        out.extend_from_slice(&s.to_be_bytes());
    } else if let Ok(s) = u32::try_from(size) {
        out.push(0xE0 | kind);
        out.extend_from_slice(&s.to_be_bytes());
    } else {
        out.push(0xF0 | kind);
        out.extend_from_slice(&(size as u64).to_be_bytes());
    }
}

/// Reads a JSONB element header at `at`: (type, header length, payload size).
fn jsonb_read_header(doc: &[u8], at: usize) -> Option<(u8, usize, usize)> {
    let first = *doc.get(at)?;
    let n = match first >> 4 {
        s @ 0..=11 => return Some((first & 15, 1, s as usize)),
        12 => 1,
        13 => 2,
        14 => 4,
        _ => 8,
    };
    let bytes = doc.get(at + 1..at + 1 + n)?;
    let size = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64);
    Some((first & 15, 1 + n, usize::try_from(size).ok()?))
}

/// The row texts of a [`DocShape::RowTexts`] document, or `None` if it is not one.
fn jsonb_row_texts(doc: &[u8]) -> Option<Vec<String>> {
    let (kind, h, size) = jsonb_read_header(doc, 0)?;
    if kind != JSONB_ARRAY || h.checked_add(size)? != doc.len() {
        return None;
    }
    let mut at = h;
    let mut rows = vec![];
    while at < doc.len() {
        let (kind, h, size) = jsonb_read_header(doc, at)?;
        if kind != JSONB_TEXTRAW {
            return None;
        }
        let end = at.checked_add(h)?.checked_add(size)?;
        rows.push(String::from_utf8(doc.get(at + h..end)?.to_vec()).ok()?);
        at = end;
    }
    Some(rows)
}

/// Appends `bytes` as upper-case hex.
fn hex_into(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
}

fn hex_decode(h: &[u8]) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    h.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// A document statement read back from a request body: its SQL and its rows, each as
/// its JSON array text.
pub(crate) struct DocStatement {
    sql: String,
    jsonb: bool,
    pub rows: Vec<String>,
}

impl DocStatement {
    /// Reads the document statement `stmt` (`["SQL", document]`) of either
    /// [`DocShape`].
    pub(crate) fn read(stmt: &Json) -> Option<DocStatement> {
        let stmt = stmt.as_array()?;
        let sql = stmt.first()?.as_str()?.to_string();
        let text = stmt.get(1)?.as_str()?;
        if let Some(hex) = text.strip_prefix("x'").and_then(|t| t.strip_suffix('\'')) {
            let rows = jsonb_row_texts(&hex_decode(hex.as_bytes())?)?;
            return Some(DocStatement {
                sql,
                jsonb: true,
                rows,
            });
        }
        let doc: Json = serde_json::from_str(text).ok()?;
        let rows = doc.as_array()?.iter().map(|r| r.to_string()).collect();
        Some(DocStatement {
            sql,
            jsonb: false,
            rows,
        })
    }

    /// The same statement for one of its rows alone.
    pub(crate) fn one_row(&self, row: &str) -> Vec<u8> {
        let mut out = vec![];
        write_doc_statement(&mut out, &self.sql, self.jsonb, [row]);
        out
    }
}

/// Appends `["SQL", document]` for rows given as their JSON array texts: the document
/// a JSONB array of raw-text rows when `jsonb` ([`DocShape::RowTexts`]), else a JSON
/// text array of the rows.
fn write_doc_statement<'a>(
    out: &mut Vec<u8>,
    sql: &str,
    jsonb: bool,
    rows: impl IntoIterator<Item = &'a str>,
) {
    out.push(b'[');
    json_str(out, sql);
    out.push(b',');
    if jsonb {
        let mut payload = vec![];
        for r in rows {
            jsonb_header(&mut payload, JSONB_TEXTRAW, r.len());
            payload.extend_from_slice(r.as_bytes());
        }
        let mut doc = Vec::with_capacity(payload.len() + 9);
        jsonb_header(&mut doc, JSONB_ARRAY, payload.len());
        doc.extend_from_slice(&payload);
        blob_param(out, &doc);
    } else {
        let mut doc = String::from("[");
        for (k, r) in rows.into_iter().enumerate() {
            if k > 0 {
                doc.push(',');
            }
            doc.push_str(r);
        }
        doc.push(']');
        json_str(out, &doc);
    }
    out.push(b']');
}

/// Appends `s` as a JSON string.
pub(crate) fn json_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(out, s).expect("writing to a Vec");
}

/// Whether rqlite would read the text parameter `s` as a BLOB (its `x'…'` form):
/// checked loosely, so that every such text is caught (a few others go the safe way too).
pub(crate) fn looks_like_hex(s: &str) -> bool {
    let t = s.trim();
    t.len() >= 3
        && matches!(t.as_bytes()[0], b'x' | b'X')
        && t.as_bytes()[1] == b'\''
        && t.ends_with('\'')
}

/// Appends a text parameter, and returns the placeholder that reads it back as that
/// text.
pub(crate) fn text_param(out: &mut Vec<u8>, s: &str) -> &'static str {
    if looks_like_hex(s) {
        blob_param(out, s.as_bytes());
        "CAST(? AS TEXT)"
    } else {
        json_str(out, s);
        "?"
    }
}

fn blob_param(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b"\"x'");
    hex_into(out, b);
    out.extend_from_slice(b"'\"");
}

/// Whether a row can travel in the JSON document shape.
pub(crate) fn json_safe<'a>(mut row: impl Iterator<Item = Value<'a>>) -> bool {
    row.all(|v| matches!(v, Value::Null | Value::Integer(_) | Value::Text(_)))
}

/// Builds the statements of one table's rows.
pub(crate) struct Statements {
    insert: String,
    json_sql: String,
    shape: DocShape,
    ncols: usize,
}

impl Statements {
    pub(crate) fn new(table: &str, columns: &[String], shape: DocShape) -> Statements {
        let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        let insert = format!("INSERT INTO {}({})", quote_ident(table), cols.join(","));
        let picks: Vec<String> = (0..columns.len()).map(|i| format!("value->>{i}")).collect();
        let each = match shape {
            DocShape::Text { each } => each,
            DocShape::RowTexts => "json_each",
        };
        let json_sql = format!("{insert} SELECT {} FROM {each}(?)", picks.join(","));
        Statements {
            insert,
            json_sql,
            shape,
            ncols: columns.len(),
        }
    }

    /// Appends (to `out`, a request body being built, after a `[` or `,`) the statement
    /// that inserts `rows` of `batch` as one JSON document. Every row must be
    /// [`json_safe`].
    pub(crate) fn json_rows(&self, out: &mut Vec<u8>, batch: &Batch, rows: &[usize]) {
        // Every row's JSON array text, one after another; `ends` marks where each stops.
        let mut texts = Vec::with_capacity(rows.len() * 16 * self.ncols);
        let mut ends = Vec::with_capacity(rows.len());
        for &r in rows {
            texts.push(b'[');
            for (j, v) in batch.row(r).enumerate() {
                if j > 0 {
                    texts.push(b',');
                }
                match v {
                    Value::Null => texts.extend_from_slice(b"null"),
                    Value::Integer(i) => {
                        write!(texts, "{i}").expect("writing to a Vec");
                    }
                    Value::Text(s) => json_str(&mut texts, s),
                    Value::Real(_) | Value::Blob(_) => {
                        unreachable!("json_rows takes json_safe rows only")
                    }
                }
            }
            texts.push(b']');
            ends.push(texts.len());
        }
        // ASCII punctuation, integers and JSON strings written by serde_json: UTF-8.
        let texts = String::from_utf8(texts).expect("JSON text is UTF-8");
        let mut start = 0;
        write_doc_statement(
            out,
            &self.json_sql,
            self.shape == DocShape::RowTexts,
            ends.iter().map(|&e| {
                let r = &texts[start..e];
                start = e;
                r
            }),
        );
    }

    /// Appends statements that insert `rows` of `batch` with bound parameters (for rows
    /// that are not [`json_safe`], or one row per statement to find a bad row).
    /// Returns how many statements were appended, the first after a `,` when `comma`.
    pub(crate) fn param_rows(
        &self,
        out: &mut Vec<u8>,
        batch: &Batch,
        rows: &[usize],
        per_statement: usize,
        mut comma: bool,
    ) -> usize {
        let per = per_statement
            .clamp(1, PARAM_ROWS)
            .min((32766 / self.ncols.max(1)).max(1));
        let mut n = 0;
        for chunk in rows.chunks(per) {
            let mut params = Vec::new();
            let mut sql = format!("{} VALUES ", self.insert);
            for (k, &r) in chunk.iter().enumerate() {
                if k > 0 {
                    sql.push(',');
                }
                sql.push('(');
                for (j, v) in batch.row(r).enumerate() {
                    if j > 0 {
                        sql.push(',');
                    }
                    let placeholder = match v {
                        Value::Null => {
                            params.push(b',');
                            params.extend_from_slice(b"null");
                            "?"
                        }
                        Value::Integer(i) => {
                            params.push(b',');
                            write!(params, "{i}").expect("writing to a Vec");
                            "?"
                        }
                        Value::Real(f) if f.is_infinite() => {
                            if f > 0.0 {
                                "9e999"
                            } else {
                                "-9e999"
                            }
                        }
                        Value::Real(f) if f.is_nan() => {
                            // SQLite stores a NaN bound as a REAL as NULL.
                            params.push(b',');
                            params.extend_from_slice(b"null");
                            "?"
                        }
                        Value::Real(f) => {
                            params.push(b',');
                            serde_json::to_writer(&mut params, &f).expect("writing to a Vec");
                            "?"
                        }
                        Value::Text(s) => {
                            params.push(b',');
                            text_param(&mut params, s)
                        }
                        Value::Blob(b) => {
                            params.push(b',');
                            blob_param(&mut params, b);
                            "?"
                        }
                    };
                    sql.push_str(placeholder);
                }
                sql.push(')');
            }
            if comma {
                out.push(b',');
            }
            comma = true;
            out.push(b'[');
            json_str(out, &sql);
            out.extend_from_slice(&params);
            out.push(b']');
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rqlite_would_read_as_a_blob_is_caught() {
        for s in ["x'00'", "X''", "  x'4142'  ", "x'zz'", "\u{a0}x'41'\n"] {
            assert!(looks_like_hex(s), "{s:?}");
            let mut out = vec![];
            assert_eq!(text_param(&mut out, s), "CAST(? AS TEXT)");
        }
        for s in ["x", "x'", "xx'41'", "'x'41'", "x'41", ""] {
            assert!(!looks_like_hex(s), "{s:?}");
        }
    }

    #[test]
    fn statements_quote_every_identifier() {
        let s = Statements::new(
            "we\"ird",
            &["a b".into(), "c\"d".into()],
            DocShape::Text { each: "json_each" },
        );
        assert_eq!(
            s.json_sql,
            "INSERT INTO \"we\"\"ird\"(\"a b\",\"c\"\"d\") SELECT value->>0,value->>1 FROM json_each(?)"
        );
    }

    /// The values a load may carry: every kind, at its edges, and text that JSON,
    /// rqlite or SQLite could take for something else.
    fn hostile_batch() -> Batch {
        use crate::batch::{Cell, RowOrigin};
        let texts = [
            "",
            "x'00'",
            "X'4142'",
            " x'' ",
            "a\0b",
            "caf\u{e9} \u{1F600}",
            "\"",
            "\\",
            "\n\r\t",
            "\u{2028}",
            "null",
            "1e5",
            "007",
            "-0",
            "[1,2]",
            "{\"a\":1}",
        ];
        let ints = [0, -1, i64::MIN, i64::MAX, 9_007_199_254_740_993];
        let reals = [
            0.1,
            -0.0,
            5e-324,
            1.7976931348623157e308,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::from_bits(0x3FF0_0000_0000_0001),
        ];
        let mut b = Batch::new(3);
        let mut n = 0;
        let mut row = |b: &mut Batch, cells: [&dyn Fn(&mut Batch); 3]| {
            for c in cells {
                c(b);
            }
            n += 1;
            b.finish_row(RowOrigin {
                line: n + 1,
                record: n,
            });
        };
        for t in texts {
            row(
                &mut b,
                [&|b| b.push_text(t), &|b| b.push(Cell::Null), &|b| {
                    b.push(Cell::Integer(7))
                }],
            );
        }
        for i in ints {
            row(
                &mut b,
                [
                    &|b| b.push(Cell::Integer(i)),
                    &|b| b.push_text("x'00'"),
                    &|b| b.push(Cell::Null),
                ],
            );
        }
        for r in reals {
            row(
                &mut b,
                [
                    &|b| b.push(Cell::Real(r)),
                    &|b| b.push_blob(b"\0\xff"),
                    &|b| b.push_blob(b""),
                ],
            );
        }
        row(
            &mut b,
            [
                &|b| b.push_text(&"y".repeat(100_000)),
                &|b| b.push(Cell::Integer(1)),
                &|b| b.push(Cell::Real(2.5)),
            ],
        );
        b
    }

    /// Runs a request body's statements (rqlite's JSON) in `conn`, binding parameters
    /// as rqlite does: JSON numbers as INTEGER or REAL, strings as TEXT unless they are
    /// of the `x'…'` form, which is a BLOB.
    fn run_like_rqlite(conn: &rusqlite::Connection, body: &[u8]) {
        use rusqlite::types::Value as V;
        let v: serde_json::Value = serde_json::from_slice(body).unwrap();
        for stmt in v.as_array().unwrap() {
            let a = stmt.as_array().unwrap();
            let params: Vec<V> = a[1..]
                .iter()
                .map(|p| match p {
                    serde_json::Value::Null => V::Null,
                    serde_json::Value::Number(n) => match n.as_i64() {
                        Some(i) => V::Integer(i),
                        None => V::Real(n.as_f64().unwrap()),
                    },
                    serde_json::Value::String(s) => {
                        let t = s.trim();
                        let hex = t.len() >= 3
                            && matches!(t.as_bytes()[0], b'x' | b'X')
                            && t.as_bytes()[1] == b'\''
                            && t.ends_with('\'');
                        match hex
                            .then(|| hex_decode(&t.as_bytes()[2..t.len() - 1]))
                            .flatten()
                        {
                            Some(bytes) => V::Blob(bytes),
                            None => V::Text(s.clone()),
                        }
                    }
                    other => panic!("not a parameter rqlite takes: {other}"),
                })
                .collect();
            conn.execute(a[0].as_str().unwrap(), rusqlite::params_from_iter(params))
                .unwrap();
        }
    }

    fn table(conn: &rusqlite::Connection) -> Vec<Vec<rusqlite::types::Value>> {
        let mut st = conn
            .prepare("SELECT rowid, a, b, c FROM t ORDER BY rowid")
            .unwrap();
        let rows = st
            .query_map([], |r| (0..4).map(|i| r.get(i)).collect())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        rows
    }

    #[test]
    fn both_shapes_store_what_sqlite_stores_when_the_values_are_bound() {
        let batch = hostile_batch();
        let all: Vec<usize> = (0..batch.rows()).collect();
        let json: Vec<usize> = all
            .iter()
            .copied()
            .filter(|&r| json_safe(batch.row(r)))
            .collect();
        assert!(json.len() > 10 && json.len() < all.len());
        let fresh = || {
            let c = rusqlite::Connection::open_in_memory().unwrap();
            // Untyped, INTEGER and REAL columns: affinity applied the same either way.
            c.execute_batch("CREATE TABLE t(a, b INTEGER, c REAL)")
                .unwrap();
            c
        };
        // The reference: SQLite's own insert path, every value bound.
        let reference = fresh();
        for r in &all {
            let vals: Vec<rusqlite::types::Value> = batch
                .row(*r)
                .map(|v| match v {
                    Value::Null => rusqlite::types::Value::Null,
                    Value::Integer(i) => rusqlite::types::Value::Integer(i),
                    Value::Real(f) => rusqlite::types::Value::Real(f),
                    Value::Text(s) => rusqlite::types::Value::Text(s.into()),
                    Value::Blob(b) => rusqlite::types::Value::Blob(b.into()),
                })
                .collect();
            reference
                .execute(
                    "INSERT INTO t VALUES (?, ?, ?)",
                    rusqlite::params_from_iter(vals),
                )
                .unwrap();
        }
        let cols = ["a".to_string(), "b".into(), "c".into()];
        for shape in [
            DocShape::Text { each: "json_each" },
            DocShape::Text { each: "jsonb_each" },
            DocShape::RowTexts,
        ] {
            let st = Statements::new("t", &cols, shape);
            // The JSON-document shape for the rows it takes, bound parameters for the rest,
            // in the input's order.
            let mut body = vec![b'['];
            let mut k = 0;
            while k < all.len() {
                let safe = json.contains(&k);
                let mut run = vec![];
                while k < all.len() && json.contains(&k) == safe {
                    run.push(k);
                    k += 1;
                }
                if body.len() > 1 {
                    body.push(b',');
                }
                if safe {
                    st.json_rows(&mut body, &batch, &run);
                } else {
                    st.param_rows(&mut body, &batch, &run, 3, false);
                }
            }
            body.push(b']');
            let got = fresh();
            run_like_rqlite(&got, &body);
            assert_eq!(table(&got), table(&reference), "{shape:?}");

            // A document statement read back (to find a refused row) gives its rows,
            // and each row alone stores what the reference stores for it.
            let mut one = vec![b'['];
            st.json_rows(&mut one, &batch, &json);
            one.push(b']');
            let v: Json = serde_json::from_slice(&one).unwrap();
            let doc = DocStatement::read(&v[0]).unwrap();
            assert_eq!(doc.rows.len(), json.len());
            let singles = fresh();
            for row in &doc.rows {
                let mut body = vec![b'['];
                body.extend_from_slice(&doc.one_row(row));
                body.push(b']');
                run_like_rqlite(&singles, &body);
            }
            let want: Vec<_> = table(&reference)
                .into_iter()
                .filter(|r| matches!(r[0], rusqlite::types::Value::Integer(i) if json.contains(&(i as usize - 1))))
                .map(|r| r[1..].to_vec())
                .collect();
            let got: Vec<_> = table(&singles)
                .into_iter()
                .map(|r| r[1..].to_vec())
                .collect();
            assert_eq!(got, want, "{shape:?}, one row at a time");
        }
    }

    #[test]
    fn jsonb_headers_are_read_by_sqlite_at_every_size_boundary() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for len in [0, 1, 11, 12, 255, 256, 65_535, 65_536, 70_000] {
            let text = "z".repeat(len);
            let row = format!("[\"{text}\"]");
            let mut payload = vec![];
            jsonb_header(&mut payload, JSONB_TEXTRAW, row.len());
            payload.extend_from_slice(row.as_bytes());
            let mut doc = vec![];
            jsonb_header(&mut doc, JSONB_ARRAY, payload.len());
            doc.extend_from_slice(&payload);
            assert_eq!(jsonb_row_texts(&doc), Some(vec![row.clone()]), "{len}");
            let (n, got): (i64, String) = conn
                .query_row(
                    "SELECT count(*), max(value->>0) FROM json_each(?)",
                    [&doc],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!((n, got), (1, text), "{len}");
        }
    }
}
