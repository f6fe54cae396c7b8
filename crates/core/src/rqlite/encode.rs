//! Rows as rqlite requests: JSON arrays of `["SQL", params…]` statements. Values are
//! always parameters, never SQL text.
//!
//! Two statement shapes, chosen per run of rows by what the values need:
//! - **one JSON document** (`INSERT … SELECT value->>0, … FROM json_each(?)`): the rows
//!   as one text parameter. rqlite gzips a Raft command when a request has 50
//!   statements or more, or a statement's SQL is 1 KiB or longer; this shape has short
//!   SQL and few statements, so nothing is compressed, and SQLite unpacks the rows on
//!   every node (bench/README.md has the measurements that chose it). It carries NULL,
//!   INTEGER and TEXT exactly.
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

use std::fmt::Write as _;
use std::io::Write as _;

use crate::batch::{Batch, Value};
use crate::schema::quote_ident;

/// Rows per bound-parameter statement, at most (and at most 32,766 parameters).
const PARAM_ROWS: usize = 256;

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
    for byte in b {
        write!(HexOut(out), "{byte:02X}").expect("writing to a Vec");
    }
    out.extend_from_slice(b"'\"");
}

struct HexOut<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for HexOut<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Whether a row can travel in the JSON document shape.
pub(crate) fn json_safe<'a>(mut row: impl Iterator<Item = Value<'a>>) -> bool {
    row.all(|v| matches!(v, Value::Null | Value::Integer(_) | Value::Text(_)))
}

/// Builds the statements of one table's rows.
pub(crate) struct Statements {
    insert: String,
    json_sql: String,
    ncols: usize,
}

impl Statements {
    pub(crate) fn new(table: &str, columns: &[String]) -> Statements {
        let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        let insert = format!("INSERT INTO {}({})", quote_ident(table), cols.join(","));
        let picks: Vec<String> = (0..columns.len()).map(|i| format!("value->>{i}")).collect();
        let json_sql = format!("{insert} SELECT {} FROM json_each(?)", picks.join(","));
        Statements {
            insert,
            json_sql,
            ncols: columns.len(),
        }
    }

    /// Appends (to `out`, a request body being built, after a `[` or `,`) the statement
    /// that inserts `rows` of `batch` as one JSON document. Every row must be
    /// [`json_safe`].
    pub(crate) fn json_rows(&self, out: &mut Vec<u8>, batch: &Batch, rows: &[usize]) {
        let mut doc = Vec::with_capacity(rows.len() * 16 * self.ncols);
        doc.push(b'[');
        for (k, &r) in rows.iter().enumerate() {
            if k > 0 {
                doc.push(b',');
            }
            doc.push(b'[');
            for (j, v) in batch.row(r).enumerate() {
                if j > 0 {
                    doc.push(b',');
                }
                match v {
                    Value::Null => doc.extend_from_slice(b"null"),
                    Value::Integer(i) => {
                        write!(doc, "{i}").expect("writing to a Vec");
                    }
                    Value::Text(s) => json_str(&mut doc, s),
                    Value::Real(_) | Value::Blob(_) => {
                        unreachable!("json_rows takes json_safe rows only")
                    }
                }
            }
            doc.push(b']');
        }
        doc.push(b']');
        out.push(b'[');
        json_str(out, &self.json_sql);
        out.push(b',');
        // ASCII punctuation, integers and JSON strings written by serde_json: UTF-8.
        let doc = String::from_utf8(doc).expect("JSON text is UTF-8");
        json_str(out, &doc);
        out.push(b']');
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
        let s = Statements::new("we\"ird", &["a b".into(), "c\"d".into()]);
        assert_eq!(
            s.json_sql,
            "INSERT INTO \"we\"\"ird\"(\"a b\",\"c\"\"d\") SELECT value->>0,value->>1 FROM json_each(?)"
        );
    }
}
