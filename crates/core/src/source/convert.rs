//! Turning input values into typed cells, by the type rules ([`crate::ColumnType`]) and
//! SQLite's affinity rules.

use crate::affinity::{Affinity, Stored};
use crate::batch::{Batch, Cell};
use crate::types::{classify, ColumnType, Lexeme};

/// Counts values stored in a type other than their column's (SQLite's flexible typing
/// keeps them as they are), and remembers the first for the summary.
#[derive(Clone, Debug, Default)]
pub struct Mismatches {
    /// How many.
    pub count: u64,
    /// `path:line:column: "value" in INTEGER column "name"`.
    pub first: Option<String>,
}

impl Mismatches {
    /// Counts one more; `first` describes it when it is the first.
    #[inline]
    pub(crate) fn note(&mut self, first: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(first());
        }
    }
}

/// Where a row's converted values go: a batch's cells, or an SQLite record being built
/// (the direct engine's rows, see [`Batch::push_record`]).
pub trait Values {
    /// Adds a NULL.
    fn null(&mut self);
    /// Adds an integer.
    fn integer(&mut self, i: i64);
    /// Adds a real.
    fn real(&mut self, r: f64);
    /// Adds a text.
    fn text(&mut self, s: &str);
    /// Adds a blob.
    fn blob(&mut self, b: &[u8]);
}

impl Values for Batch {
    #[inline]
    fn null(&mut self) {
        self.push(Cell::Null);
    }
    #[inline]
    fn integer(&mut self, i: i64) {
        self.push(Cell::Integer(i));
    }
    #[inline]
    fn real(&mut self, r: f64) {
        self.push(Cell::Real(r));
    }
    #[inline]
    fn text(&mut self, s: &str) {
        self.push_text(s);
    }
    #[inline]
    fn blob(&mut self, b: &[u8]) {
        self.push_blob(b);
    }
}

impl Values for liteload_btree::RecordBuilder {
    #[inline]
    fn null(&mut self) {
        liteload_btree::RecordBuilder::null(self);
    }
    #[inline]
    fn integer(&mut self, i: i64) {
        liteload_btree::RecordBuilder::integer(self, i);
    }
    #[inline]
    fn real(&mut self, r: f64) {
        liteload_btree::RecordBuilder::real(self, r);
    }
    #[inline]
    fn text(&mut self, s: &str) {
        liteload_btree::RecordBuilder::text(self, s.as_bytes());
    }
    #[inline]
    fn blob(&mut self, b: &[u8]) {
        liteload_btree::RecordBuilder::blob(self, b);
    }
}

/// Pushes `v`, a value as SQLite stores it, into `to`.
#[inline]
fn push_stored(to: &mut impl Values, v: Stored<'_>) {
    match v {
        Stored::Null => to.null(),
        Stored::Integer(i) => to.integer(i),
        Stored::Real(r) => to.real(r),
        Stored::Text(t) => to.text(t),
    }
}

/// Pushes delimited-text field `s` (already checked UTF-8) into `to` as a value of
/// column type `ty`: what SQLite would store for it in a column of that type (its
/// affinity, ported from SQLite), so both engines store the same value. Returns
/// `true` when the text is not the type's canonical form (the summary's mismatches).
#[inline]
pub fn push_text_field(to: &mut impl Values, s: &str, ty: ColumnType, empty_null: bool) -> bool {
    // Text keeps its type in a BLOB column (no affinity), as in a TEXT one.
    let ty = ty.text_sources_type();
    if s.is_empty() && (empty_null || ty != ColumnType::Text) {
        to.null();
        return false;
    }
    if ty == ColumnType::Text {
        to.text(s);
        return false;
    }
    let aff = ty.affinity();
    let lexeme = classify(s.as_bytes());
    match lexeme {
        Lexeme::Integer(i) => {
            push_stored(to, aff.integer_value(i));
            false
        }
        // SQLite reads only the first 19 significant digits of a decimal; a longer one
        // takes its exact path.
        Lexeme::Real(r) if s.len() <= 20 => {
            push_stored(to, aff.real(r));
            ty != ColumnType::Real
        }
        _ => {
            push_stored(to, aff.text(s));
            !(ty == ColumnType::Real && matches!(lexeme, Lexeme::Real(_)))
        }
    }
}

/// What a JSON value says about its column's type (JSON strings are always text).
pub fn json_lexeme(v: &serde_json::Value) -> Lexeme {
    use serde_json::Value as J;
    match v {
        J::Null => Lexeme::Empty,
        J::Bool(b) => Lexeme::Integer(i64::from(*b)),
        J::Number(n) => match (n.as_i64(), n.is_f64()) {
            (Some(i), _) => Lexeme::Integer(i),
            (None, true) => Lexeme::Real(n.as_f64().unwrap_or(f64::NAN)),
            (None, false) => Lexeme::Text, // an integer beyond i64: kept as its digits
        },
        J::String(_) | J::Array(_) | J::Object(_) => Lexeme::Text,
    }
}

/// A blob as JSON, for a rejects log: `{"hex": "00ff…"}`.
pub fn blob_json(b: &[u8]) -> serde_json::Value {
    let mut hex = String::with_capacity(2 * b.len());
    for byte in b {
        hex.push_str(&format!("{byte:02x}"));
    }
    serde_json::json!({ "hex": hex })
}

/// One value of a record with its own types (a JSON value, a serialized field), as
/// [`push_scalar`] stores it. A nested value (array, object) comes as its JSON text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar<'a> {
    /// JSON null, `None`, unit.
    Null,
    /// A boolean: 1 or 0.
    Bool(bool),
    /// An integer.
    Integer(i64),
    /// Finite.
    Real(f64),
    /// Text (also the digits of an integer past 64 bits, and nested values' JSON).
    Text(&'a str),
    /// Bytes: a serialized byte string (`serialize_bytes`, as `serde_bytes` gives it)
    /// or a non-empty sequence of `u8` (a `Vec<u8>`).
    Blob(&'a [u8]),
    /// An empty sequence: nothing tells bytes from a list, so it is an empty blob in a
    /// BLOB column and `[]` (its JSON) in any other.
    EmptyList,
}

impl Scalar<'_> {
    /// What the value says about its column's type (text is always text).
    pub fn lexeme(self) -> Lexeme {
        match self {
            Scalar::Null => Lexeme::Empty,
            Scalar::Bool(b) => Lexeme::Integer(i64::from(b)),
            Scalar::Integer(i) => Lexeme::Integer(i),
            Scalar::Real(r) => Lexeme::Real(r),
            Scalar::Text(_) => Lexeme::Text,
            Scalar::Blob(_) => Lexeme::Blob,
            Scalar::EmptyList => Lexeme::Empty,
        }
    }
}

/// Pushes `v` as a value of column type `ty`: what SQLite stores for it in a column of
/// that type. In a TEXT column a number is stored as its JSON text (booleans as 1/0).
/// An empty text is NULL outside a TEXT column, or everywhere with `empty_null`.
/// `scratch` is reused to format numbers. Returns `true` on a type mismatch.
pub fn push_scalar(
    batch: &mut impl Values,
    v: Scalar<'_>,
    ty: ColumnType,
    empty_null: bool,
    scratch: &mut String,
) -> bool {
    use std::fmt::Write;
    let column = ty;
    // A BLOB column (bytes were in the sample) converts nothing, as SQLite's BLOB
    // affinity: a number stays a number, text stays text.
    let blob_column = column == ColumnType::Blob;
    let ty = ty.text_sources_type();
    let aff = if blob_column {
        Affinity::Blob
    } else {
        ty.affinity()
    };
    match v {
        // Bytes are stored as they are whatever the column's affinity (SQLite converts
        // no blob); an empty list goes by its column's type.
        Scalar::Blob(b) => {
            batch.blob(b);
            column != ColumnType::Blob
        }
        Scalar::EmptyList if column == ColumnType::Blob => {
            batch.blob(&[]);
            false
        }
        Scalar::EmptyList => {
            push_stored(batch, aff.text("[]"));
            ty != ColumnType::Text
        }
        Scalar::Null => {
            batch.null();
            false
        }
        Scalar::Text(s) => {
            if s.is_empty() && (empty_null || ty != ColumnType::Text) {
                batch.null();
                return false;
            }
            push_stored(batch, aff.text(s));
            ty != ColumnType::Text || blob_column
        }
        Scalar::Bool(b) if ty == ColumnType::Text && !blob_column => {
            batch.text(if b { "1" } else { "0" });
            false
        }
        Scalar::Integer(i) if ty == ColumnType::Text && !blob_column => {
            scratch.clear();
            let _ = write!(scratch, "{i}");
            batch.text(scratch);
            false
        }
        Scalar::Real(r) if ty == ColumnType::Text && !blob_column => {
            scratch.clear();
            match serde_json::Number::from_f64(r) {
                Some(n) => scratch.push_str(&n.to_string()),
                None => scratch.push_str("null"),
            }
            batch.text(scratch);
            false
        }
        Scalar::Bool(b) => {
            push_stored(batch, aff.integer_value(i64::from(b)));
            blob_column
        }
        Scalar::Integer(i) => {
            push_stored(batch, aff.integer_value(i));
            blob_column
        }
        Scalar::Real(r) => {
            push_stored(batch, aff.real(r));
            ty != ColumnType::Real
        }
    }
}

/// Pushes JSON value `v` as a value of column type `ty` ([`push_scalar`]). Nested
/// values become JSON text; with `fields`, a string is typed as a CSV field is
/// ([`push_text_field`]: the text values of XML, spooled as JSON). Returns `true` on a
/// type mismatch.
pub fn push_json_value(
    batch: &mut impl Values,
    v: &serde_json::Value,
    ty: ColumnType,
    empty_null: bool,
    fields: bool,
    scratch: &mut String,
) -> bool {
    use serde_json::Value as J;
    let text;
    let scalar = match v {
        J::Null => Scalar::Null,
        J::Bool(b) => Scalar::Bool(*b),
        J::String(s) if fields => return push_text_field(batch, s, ty, empty_null),
        J::String(s) => Scalar::Text(s),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Scalar::Integer(i),
            (None, Some(r)) if n.is_f64() => Scalar::Real(r),
            // An integer beyond i64: its digits, as text.
            _ => {
                text = n.to_string();
                Scalar::Text(&text)
            }
        },
        J::Array(_) | J::Object(_) => {
            text = v.to_string();
            Scalar::Text(&text)
        }
    };
    push_scalar(batch, scalar, ty, empty_null, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{RowOrigin, Value};

    #[test]
    fn text_fields_follow_their_column_type() {
        let mut b = Batch::new(7);
        let mism = [
            push_text_field(&mut b, "42", ColumnType::Integer, false),
            push_text_field(&mut b, "", ColumnType::Integer, false),
            push_text_field(&mut b, "007", ColumnType::Integer, false),
            push_text_field(&mut b, "3", ColumnType::Real, false),
            push_text_field(&mut b, "", ColumnType::Text, false),
            push_text_field(&mut b, "", ColumnType::Text, true),
            push_text_field(&mut b, "2.5", ColumnType::Integer, false),
        ];
        b.finish_row(RowOrigin::default());
        assert_eq!(mism, [false, false, true, false, false, false, true]);
        let row: Vec<Value> = b.row(0).collect();
        assert_eq!(
            row,
            vec![
                Value::Integer(42),
                Value::Null,
                Value::Integer(7),
                Value::Real(3.0),
                Value::Text(""),
                Value::Null,
                Value::Real(2.5)
            ]
        );
    }

    #[test]
    fn json_values_keep_their_kind() {
        let mut b = Batch::new(5);
        let mut s = String::new();
        let v: serde_json::Value =
            serde_json::from_str(r#"[18446744073709551615, true, {"a":[1]}, "12", 1.5]"#)
                .unwrap_or_default();
        let arr = v.as_array().cloned().unwrap_or_default();
        let mism: Vec<bool> = arr
            .iter()
            .zip([
                ColumnType::Text,
                ColumnType::Integer,
                ColumnType::Text,
                ColumnType::Integer,
                ColumnType::Real,
            ])
            .map(|(v, t)| push_json_value(&mut b, v, t, false, false, &mut s))
            .collect();
        b.finish_row(RowOrigin::default());
        assert_eq!(mism, vec![false, false, false, true, false]);
        let row: Vec<Value> = b.row(0).collect();
        assert_eq!(
            row,
            vec![
                Value::Text("18446744073709551615"),
                Value::Integer(1),
                Value::Text(r#"{"a":[1]}"#),
                Value::Integer(12),
                Value::Real(1.5)
            ]
        );
    }
}
