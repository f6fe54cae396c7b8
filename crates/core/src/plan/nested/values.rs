//! A value as the split hands it on: a tag byte and its payload, written by the workers
//! ([`super::parse`]) into a chunk's arena, copied by the spools' thread into a table's
//! spool, and read back by the spool's load ([`super::read`]) straight into a row, so no
//! value's text is parsed twice. What a value becomes is what the JSON reader makes of
//! the same member ([`read_value`]): a string, an integer of 64 bits, a real, a boolean,
//! a null; an integer past 64 bits, an object or an array kept whole as its JSON text; and
//! a member the workers only copied ([`RAW`]: the raw-text walk's values) read as the
//! JSON reader reads it.
//!
//! Layout: the tag, then for [`INTEGER`] and [`REAL`] 8 bytes (little-endian), for
//! [`STRING`], [`JSON`] and [`RAW`] a length of 4 bytes (little-endian) and that many
//! bytes of UTF-8 (the payload is bounded by the record it came from, which the reader
//! bounds far below 4 GiB).

use crate::source::convert::{push_scalar, push_text_field, Scalar, Values};
use crate::source::json::parse_lossless;
use crate::types::{classify, ColumnType, Lexeme};

/// JSON's `null`.
pub(super) const NULL: u8 = 0;
/// `false`.
pub(super) const FALSE: u8 = 1;
/// `true`.
pub(super) const TRUE: u8 = 2;
/// An integer of 64 bits.
pub(super) const INTEGER: u8 = 3;
/// A finite real that is no integer literal past 64 bits, and no `-0`.
pub(super) const REAL: u8 = 4;
/// A JSON string's text (typed as a delimited field is where the load takes strings so).
pub(super) const STRING: u8 = 5;
/// Text that is no string: an object or array as JSON text, an integer's digits past 64
/// bits.
pub(super) const JSON: u8 = 6;
/// A member's JSON text as read, for the spool's load to read as the JSON reader does.
pub(super) const RAW: u8 = 7;

/// Ends a row of values (a spool's, see [`super::spools`]), where a column's number
/// would be.
pub(super) const END: u32 = u32::MAX;

/// Appends a value of `tag` without payload ([`NULL`], [`FALSE`], [`TRUE`]).
#[inline]
pub(super) fn put_tag(out: &mut Vec<u8>, tag: u8) {
    out.push(tag);
}

/// Appends the integer `i`.
#[inline]
pub(super) fn put_integer(out: &mut Vec<u8>, i: i64) {
    out.push(INTEGER);
    out.extend_from_slice(&i.to_le_bytes());
}

/// Appends the real `r`.
#[inline]
pub(super) fn put_real(out: &mut Vec<u8>, r: f64) {
    out.push(REAL);
    out.extend_from_slice(&r.to_le_bytes());
}

/// Appends `text` under `tag` ([`STRING`], [`JSON`], [`RAW`]).
#[inline]
pub(super) fn put_text(out: &mut Vec<u8>, tag: u8, text: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
}

/// Starts a value of `tag` whose text is written next; [`end_text`] with what this
/// returns sets its length.
#[inline]
pub(super) fn begin_text(out: &mut Vec<u8>, tag: u8) -> usize {
    out.push(tag);
    out.extend_from_slice(&[0; 4]);
    out.len()
}

/// Ends the value [`begin_text`] began at `at`.
#[inline]
pub(super) fn end_text(out: &mut [u8], at: usize) {
    let len = (out.len() - at) as u32;
    out[at - 4..at].copy_from_slice(&len.to_le_bytes());
}

/// A value read back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Got<'a> {
    Null,
    Bool(bool),
    Integer(i64),
    Real(f64),
    /// A string.
    String(&'a str),
    /// Text that is no string (an object's or array's JSON, an integer's digits).
    Json(&'a str),
    /// A member's JSON text, to be read ([`read_value`]).
    Raw(&'a str),
}

/// Reads the value at the start of `bytes`: the value and the bytes it took, or `None`
/// where they hold no whole value or its text is not UTF-8.
#[inline]
pub(super) fn get(bytes: &[u8]) -> Option<(Got<'_>, usize)> {
    let (&tag, rest) = bytes.split_first()?;
    let eight = |rest: &[u8]| -> Option<[u8; 8]> { rest.get(..8)?.try_into().ok() };
    Some(match tag {
        NULL => (Got::Null, 1),
        FALSE => (Got::Bool(false), 1),
        TRUE => (Got::Bool(true), 1),
        INTEGER => (Got::Integer(i64::from_le_bytes(eight(rest)?)), 9),
        REAL => (Got::Real(f64::from_le_bytes(eight(rest)?)), 9),
        STRING | JSON | RAW => {
            let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            let text = crate::utf8::str(rest.get(4..4 + len)?)?;
            let got = match tag {
                STRING => Got::String(text),
                JSON => Got::Json(text),
                _ => Got::Raw(text),
            };
            (got, 5 + len)
        }
        _ => return None,
    })
}

/// The length of the value at the start of `bytes` (tag and payload), if they hold
/// one whole, without reading it.
#[inline]
pub(super) fn len(bytes: &[u8]) -> Option<usize> {
    let n = match *bytes.first()? {
        NULL | FALSE | TRUE => 1,
        INTEGER | REAL => 9,
        STRING | JSON | RAW => 5 + u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize,
        _ => return None,
    };
    (bytes.len() >= n).then_some(n)
}

/// The text of the [`STRING`], [`JSON`] or [`RAW`] value at the start of `bytes`, not
/// checked as UTF-8 (a caller that takes it as text checks it, or knows where it came
/// from).
#[inline]
pub(super) fn payload(bytes: &[u8]) -> Option<&[u8]> {
    let len = u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize;
    bytes.get(5..5 + len)
}

/// Walks the row of values at the start of `bytes` (a spool's row: each value after its
/// column's number, then [`END`]; see [`super::spools`]), calling `f` with each value's
/// column and its place in `bytes`, without reading the values. Returns the row's
/// length, or `None` where `bytes` hold no whole row (or a tag that is none).
#[inline]
pub(super) fn walk_row(bytes: &[u8], mut f: impl FnMut(usize, usize)) -> Option<usize> {
    let mut n = 0;
    loop {
        let c = u32::from_le_bytes(bytes.get(n..n + 4)?.try_into().ok()?);
        n += 4;
        if c == END {
            return Some(n);
        }
        f(c as usize, n);
        n += len(bytes.get(n..)?)?;
    }
}

/// What `v` says about its column's type; with `fields`, a string as a delimited
/// field's text does.
pub(super) fn lexeme(v: &Got<'_>, fields: bool) -> Lexeme {
    match v {
        Got::String(s) if fields => classify(s.as_bytes()),
        v => scalar(v).lexeme(),
    }
}

/// A value as the conversions take it (a raw member read first: [`read_value`]).
pub(super) fn scalar<'a>(v: &Got<'a>) -> Scalar<'a> {
    match *v {
        Got::Null | Got::Raw(_) => Scalar::Null,
        Got::Bool(b) => Scalar::Bool(b),
        Got::Integer(i) => Scalar::Integer(i),
        Got::Real(r) => Scalar::Real(r),
        Got::String(s) | Got::Json(s) => Scalar::Text(s),
    }
}

/// Stores `v` into `to` as a value of a column of type `ty`, as the JSON reader stores
/// a member (with `fields`, a string as a delimited field, as XML's text is): whether
/// it is of another type than its column's (a mismatch).
#[inline]
pub(super) fn store(
    to: &mut impl Values,
    v: &Got<'_>,
    ty: ColumnType,
    empty_null: bool,
    fields: bool,
    scratch: &mut String,
) -> bool {
    match v {
        Got::String(s) if fields => push_text_field(to, s, ty, empty_null),
        v => push_scalar(to, scalar(v), ty, empty_null, scratch),
    }
}

/// A value as JSON, for a message.
pub(super) fn json(v: &Got<'_>) -> String {
    match *v {
        Got::String(s) => serde_json::json!(s).to_string(),
        Got::Json(s) | Got::Raw(s) => s.to_string(),
        Got::Null => "null".into(),
        Got::Bool(b) => b.to_string(),
        Got::Integer(i) => i.to_string(),
        Got::Real(r) => serde_json::json!(r).to_string(),
    }
}

/// A value as the JSON reader stores a member of this JSON text (see
/// [`parse_lossless`]: an integer past 64 bits, or a nested value holding one, keeps its
/// digits), owning its text; `None` where the text is no JSON value.
pub(super) fn read_value(raw: &str) -> Option<Owned> {
    use serde_json::Value as J;
    let member = format!("{{\"v\":{raw}}}");
    let J::Object(mut map) = parse_lossless(member.as_bytes()).ok()? else {
        return None;
    };
    Some(match map.remove("v")? {
        J::Null => Owned::Null,
        J::Bool(b) => Owned::Bool(b),
        J::String(s) => Owned::String(s),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Owned::Integer(i),
            (None, Some(r)) if n.is_f64() => Owned::Real(r),
            _ => Owned::Json(n.to_string()),
        },
        v @ (J::Array(_) | J::Object(_)) => Owned::Json(v.to_string()),
    })
}

/// A value read from a member's JSON text ([`read_value`]).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Owned {
    Null,
    Bool(bool),
    Integer(i64),
    Real(f64),
    String(String),
    Json(String),
}

impl Owned {
    /// The value as read back from a spool.
    pub(super) fn got(&self) -> Got<'_> {
        match self {
            Owned::Null => Got::Null,
            Owned::Bool(b) => Got::Bool(*b),
            Owned::Integer(i) => Got::Integer(*i),
            Owned::Real(r) => Got::Real(*r),
            Owned::String(s) => Got::String(s),
            Owned::Json(s) => Got::Json(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_written() {
        let mut out = vec![];
        put_tag(&mut out, NULL);
        put_tag(&mut out, TRUE);
        put_integer(&mut out, i64::MIN);
        put_real(&mut out, -1.5e300);
        put_text(&mut out, STRING, "é\0x".as_bytes());
        let at = begin_text(&mut out, JSON);
        out.extend_from_slice(b"[1,2]");
        end_text(&mut out, at);
        put_text(&mut out, RAW, b"");
        let mut got = vec![];
        let mut rest = &out[..];
        while !rest.is_empty() {
            let (v, n) = get(rest).expect("a value");
            got.push(format!("{v:?}"));
            rest = &rest[n..];
        }
        assert_eq!(
            got,
            [
                "Null",
                "Bool(true)",
                "Integer(-9223372036854775808)",
                "Real(-1.5e300)",
                "String(\"é\\0x\")",
                "Json(\"[1,2]\")",
                "Raw(\"\")"
            ]
        );
        // Cut short, a bad tag, text that is not UTF-8: no value.
        assert_eq!(get(&out[2..5]), None);
        assert_eq!(get(&[9]), None);
        assert_eq!(get(&[STRING, 1, 0, 0, 0, 0xff]), None);
    }

    #[test]
    fn raw_members_are_read_as_the_json_reader_reads_them() {
        let read = |s: &str| read_value(s).map(|v| format!("{:?}", v.got()));
        assert_eq!(read("12").as_deref(), Some("Integer(12)"));
        assert_eq!(read("1e2").as_deref(), Some("Real(100.0)"));
        assert_eq!(read("-0").as_deref(), Some("String(\"-0\")"));
        assert_eq!(read("-0.0").as_deref(), Some("Real(-0.0)"));
        assert_eq!(
            read("18446744073709551616").as_deref(),
            Some("String(\"18446744073709551616\")")
        );
        assert_eq!(
            read("18446744073709551615").as_deref(),
            Some("Json(\"18446744073709551615\")")
        );
        assert_eq!(
            read("[1,{\"a\":\"\\u00e9\"}]").as_deref(),
            Some("Json(\"[1,{\\\"a\\\":\\\"é\\\"}]\")")
        );
        assert_eq!(read("[1e19]").as_deref(), Some("String(\"[1e19]\")"));
        assert_eq!(read("\"x\"").as_deref(), Some("String(\"x\")"));
        assert_eq!(read("nul"), None);
    }
}
