//! Column types, and the rules that turn input text into typed values.
//!
//! The rules (documented in the README and `--help`):
//! - INTEGER: the text is exactly the canonical decimal form of an i64: an optional `-`,
//!   then digits with no leading zero (`0` itself is fine). So `007`, `+5`, `-0` and
//!   `1_000` are not integers, and an integer outside the i64 range is TEXT (never a
//!   rounded REAL).
//! - REAL: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` with a fraction or an
//!   exponent, and finite. `.5`, `1.`, `inf` and `NaN` are TEXT.
//! - Anything else is TEXT. Empty values say nothing about the type.

use std::fmt;
use std::str::FromStr;

use crate::affinity::Affinity;

/// The declared type of a column that liteload creates, and the conversion its values get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// INTEGER affinity: integers stay integers.
    Integer,
    /// REAL affinity.
    Real,
    /// TEXT affinity: values are stored as text.
    Text,
    /// BLOB affinity: values are stored as they come. Only typed inputs (Arrow binary
    /// columns) declare it; text read into such a column stays text.
    Blob,
}

impl ColumnType {
    /// The type name used in `CREATE TABLE`.
    pub fn sql(self) -> &'static str {
        match self {
            ColumnType::Integer => "INTEGER",
            ColumnType::Real => "REAL",
            ColumnType::Text => "TEXT",
            ColumnType::Blob => "BLOB",
        }
    }

    /// The conversion for a column that already exists with this declared type, following
    /// SQLite's affinity rules. `None` (NUMERIC or BLOB affinity) means "use the inferred type".
    pub fn from_declared(decl: &str) -> Option<ColumnType> {
        match Affinity::of_declared(decl) {
            Affinity::Integer => Some(ColumnType::Integer),
            Affinity::Text => Some(ColumnType::Text),
            Affinity::Real => Some(ColumnType::Real),
            Affinity::Numeric | Affinity::Blob => None,
        }
    }

    /// The affinity SQLite gives a column declared with [`ColumnType::sql`].
    pub fn affinity(self) -> Affinity {
        match self {
            ColumnType::Integer => Affinity::Integer,
            ColumnType::Real => Affinity::Real,
            ColumnType::Text => Affinity::Text,
            ColumnType::Blob => Affinity::Blob,
        }
    }

    /// The type a value read from text gets in this column: text stays text in a BLOB
    /// column, as in a TEXT one.
    pub(crate) fn text_sources_type(self) -> ColumnType {
        match self {
            ColumnType::Blob => ColumnType::Text,
            other => other,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.sql())
    }
}

impl FromStr for ColumnType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "integer" | "int" => Ok(ColumnType::Integer),
            "real" | "float" | "double" => Ok(ColumnType::Real),
            "text" | "string" => Ok(ColumnType::Text),
            other => Err(format!(
                "unknown type {other:?} (expected integer, real or text)"
            )),
        }
    }
}

/// What a piece of text looks like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lexeme {
    /// Nothing (an empty field).
    Empty,
    /// The canonical text of an integer.
    Integer(i64),
    /// The text of a finite real.
    Real(f64),
    /// Anything else.
    Text,
    /// Bytes (a program's serialized bytes): never read from text.
    Blob,
}

impl Lexeme {
    /// What a text value (a CSV field, an XML attribute) says about its column's type,
    /// by the rules in the module docs.
    pub fn of_text(s: &str) -> Lexeme {
        classify(s.as_bytes())
    }
}

/// Classifies `s` by the rules in the module docs. This is on the hot path: no allocation.
#[inline]
pub fn classify(s: &[u8]) -> Lexeme {
    if s.is_empty() {
        return Lexeme::Empty;
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let int_len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == 0 || (int_len > 1 && digits[0] == b'0') {
        return Lexeme::Text;
    }
    if int_len == digits.len() {
        if neg && int_len == 1 && digits[0] == b'0' {
            return Lexeme::Text; // "-0" would not survive a round trip
        }
        return match parse_i64(neg, digits) {
            Some(v) => Lexeme::Integer(v),
            None => Lexeme::Text,
        };
    }
    // A fraction and/or an exponent must follow.
    let mut i = int_len;
    if digits[i] == b'.' {
        let frac = digits[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if frac == 0 {
            return Lexeme::Text;
        }
        i += 1 + frac;
    }
    if i < digits.len() && (digits[i] == b'e' || digits[i] == b'E') {
        i += 1;
        if i < digits.len() && (digits[i] == b'+' || digits[i] == b'-') {
            i += 1;
        }
        let exp = digits[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if exp == 0 {
            return Lexeme::Text;
        }
        i += exp;
    }
    if i != digits.len() {
        return Lexeme::Text;
    }
    // SAFETY of the unwrap-free path: the bytes are ASCII, so this is valid UTF-8.
    match std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
    {
        Some(v) if v.is_finite() => Lexeme::Real(v),
        _ => Lexeme::Text,
    }
}

#[inline]
fn parse_i64(neg: bool, digits: &[u8]) -> Option<i64> {
    if digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        if v <= i64::MAX as u64 + 1 {
            Some((v as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Accumulates what the values of one column look like over the sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct TypeGuess {
    ints: u64,
    reals: u64,
    texts: u64,
    blobs: u64,
}

impl TypeGuess {
    /// Counts one more value that looks like `l`.
    pub fn add(&mut self, l: Lexeme) {
        match l {
            Lexeme::Empty => {}
            Lexeme::Integer(_) => self.ints += 1,
            Lexeme::Real(_) => self.reals += 1,
            Lexeme::Text => self.texts += 1,
            Lexeme::Blob => self.blobs += 1,
        }
    }

    /// The narrowest type that holds every value seen: INTEGER if all were integers,
    /// REAL if all were numbers, TEXT if any was text (also for a column with no values
    /// at all); BLOB when bytes were among them (SQLite stores every value of a BLOB
    /// column as it comes).
    pub fn resolve(&self) -> ColumnType {
        if self.blobs > 0 {
            ColumnType::Blob
        } else if self.texts > 0 || self.ints + self.reals == 0 {
            ColumnType::Text
        } else if self.reals > 0 {
            ColumnType::Real
        } else {
            ColumnType::Integer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_canonical_only() {
        assert_eq!(classify(b"0"), Lexeme::Integer(0));
        assert_eq!(classify(b"42"), Lexeme::Integer(42));
        assert_eq!(classify(b"-42"), Lexeme::Integer(-42));
        assert_eq!(classify(b"9223372036854775807"), Lexeme::Integer(i64::MAX));
        assert_eq!(classify(b"-9223372036854775808"), Lexeme::Integer(i64::MIN));
        for t in [
            "007",
            "02134",
            "+5",
            "-0",
            "1_000",
            "9223372036854775808",
            "-",
            " 1",
            "1 ",
        ] {
            assert_eq!(classify(t.as_bytes()), Lexeme::Text, "{t}");
        }
    }

    #[test]
    fn reals_need_a_fraction_or_exponent() {
        assert_eq!(classify(b"1.5"), Lexeme::Real(1.5));
        assert_eq!(classify(b"-0.25"), Lexeme::Real(-0.25));
        assert_eq!(classify(b"1e3"), Lexeme::Real(1000.0));
        assert_eq!(classify(b"1.5E-2"), Lexeme::Real(0.015));
        for t in [
            ".5", "1.", "inf", "NaN", "1e", "1e+", "00.5", "1.5.2", "1e999",
        ] {
            assert_eq!(classify(t.as_bytes()), Lexeme::Text, "{t}");
        }
    }

    #[test]
    fn guesses_the_narrowest_type() {
        let mut g = TypeGuess::default();
        assert_eq!(g.resolve(), ColumnType::Text);
        g.add(Lexeme::Integer(1));
        g.add(Lexeme::Empty);
        assert_eq!(g.resolve(), ColumnType::Integer);
        g.add(Lexeme::Real(1.5));
        assert_eq!(g.resolve(), ColumnType::Real);
        g.add(Lexeme::Text);
        assert_eq!(g.resolve(), ColumnType::Text);
        g.add(Lexeme::Blob);
        assert_eq!(g.resolve(), ColumnType::Blob);
    }

    #[test]
    fn declared_types_follow_affinity() {
        assert_eq!(
            ColumnType::from_declared("BIGINT"),
            Some(ColumnType::Integer)
        );
        assert_eq!(
            ColumnType::from_declared("varchar(10)"),
            Some(ColumnType::Text)
        );
        assert_eq!(ColumnType::from_declared("DOUBLE"), Some(ColumnType::Real));
        assert_eq!(ColumnType::from_declared("NUMERIC"), None);
        assert_eq!(ColumnType::from_declared(""), None);
    }
}
