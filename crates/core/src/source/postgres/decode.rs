//! PostgreSQL's binary COPY format decoded into Arrow arrays, a column at a time: each
//! field goes straight into its column's builder, without a per-value object.
//!
//! The stream (PostgreSQL's "COPY binary" file format): an 11-byte signature, a flags
//! word and a header extension, then tuples, each a 16-bit field count (-1 ends the
//! stream) and per field a 32-bit length (-1 for NULL) and that many bytes. Every value
//! is in its type's binary send format, big-endian. Every length is checked against
//! the bytes there before they are read: the server is not trusted to be well-formed.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// How a column's binary values are read, and what it is stored as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// boolean: 0/1.
    Bool,
    /// smallint, integer, bigint, oid: INTEGER.
    Int,
    /// real: REAL, the shortest decimal that reads back as the same float (what
    /// PostgreSQL prints), so `1.1` is 1.1 and not 1.100000023841858.
    Float4,
    /// double precision: REAL.
    Float8,
    /// Text in the client encoding (UTF-8): text, varchar, char(n), name, json, and every
    /// column the copy casts to text on the server.
    Text,
    /// jsonb: a version byte (1), then the JSON text.
    Jsonb,
    /// bytea: BLOB.
    Bytes,
    /// uuid: its 36-character text.
    Uuid,
    /// date: `YYYY-MM-DD`.
    Date,
    /// time: `HH:MM:SS[.ffffff]` (six digits when the fraction is not zero).
    Time,
    /// timestamp: `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
    Timestamp,
    /// timestamptz: the instant in UTC, ending in `Z`.
    TimestampTz,
    /// numeric: its exact text, or REAL.
    Numeric { real: bool },
}

impl Kind {
    /// The Arrow type the column is decoded into (see [`crate::source::columnar`] for
    /// how that is stored).
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Kind::Bool => DataType::Boolean,
            Kind::Int => DataType::Int64,
            Kind::Float4 | Kind::Float8 | Kind::Numeric { real: true } => DataType::Float64,
            Kind::Bytes => DataType::Binary,
            Kind::Text
            | Kind::Jsonb
            | Kind::Uuid
            | Kind::Date
            | Kind::Time
            | Kind::Timestamp
            | Kind::TimestampTz
            | Kind::Numeric { real: false } => DataType::Utf8,
        }
    }
}

/// The Arrow schema of decoded batches: `columns` named, all nullable.
pub(crate) fn schema(columns: &[(String, Kind)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, kind)| Field::new(name, kind.data_type(), true))
            .collect::<Vec<_>>(),
    ))
}

/// The signature that starts a binary COPY stream.
pub(crate) const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The length of the stream's header at the start of `buf` (signature, flags, extension),
/// `Ok(None)` when more bytes are needed.
pub(crate) fn header_len(buf: &[u8]) -> Result<Option<usize>, String> {
    if buf.len() < 19 {
        return Ok(None);
    }
    if &buf[..11] != SIGNATURE {
        return Err("the server's COPY output does not start with the binary signature".into());
    }
    let ext = i32::from_be_bytes(buf[15..19].try_into().expect("4 bytes"));
    let ext = usize::try_from(ext).map_err(|_| "a negative COPY header extension length")?;
    Ok((buf.len() >= 19 + ext).then_some(19 + ext))
}

/// What starts `buf`: a whole tuple of this many bytes, the end of the stream (2 bytes),
/// or too few bytes to tell.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Tuple(usize),
    End,
    More,
}

/// Measures the tuple at the start of `buf`, which must have `width` fields.
pub(crate) fn next_tuple(buf: &[u8], width: usize) -> Result<Next, String> {
    if buf.len() < 2 {
        return Ok(Next::More);
    }
    let n = i16::from_be_bytes([buf[0], buf[1]]);
    if n == -1 {
        return Ok(Next::End);
    }
    if usize::try_from(n).ok() != Some(width) {
        return Err(format!(
            "a COPY tuple of {n} fields where {width} were asked for"
        ));
    }
    let mut at = 2usize;
    for _ in 0..width {
        let Some(len) = buf.get(at..at + 4) else {
            return Ok(Next::More);
        };
        let len = i32::from_be_bytes(len.try_into().expect("4 bytes"));
        at += 4;
        if len >= 0 {
            at += len as usize;
        } else if len != -1 {
            return Err(format!("a COPY field of length {len}"));
        }
    }
    Ok(if at <= buf.len() {
        Next::Tuple(at)
    } else {
        Next::More
    })
}

/// One column's values as they are decoded.
enum Builder {
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Text(StringBuilder),
    Bytes(BinaryBuilder),
}

/// Decodes tuples into record batches of the columns' kinds.
pub(crate) struct Decoder {
    kinds: Vec<Kind>,
    schema: SchemaRef,
    builders: Vec<Builder>,
    rows: usize,
    /// Bytes of text and blobs in the builders (a batch is handed on past a bound).
    bytes: usize,
    scratch: String,
}

/// A value that could not be decoded: which column, and why.
#[derive(Debug)]
pub(crate) struct BadValue {
    pub(crate) column: usize,
    pub(crate) message: String,
}

impl Decoder {
    pub(crate) fn new(kinds: Vec<Kind>, schema: SchemaRef) -> Self {
        let builders = kinds.iter().map(|k| new_builder(*k)).collect();
        Decoder {
            kinds,
            schema,
            builders,
            rows: 0,
            bytes: 0,
            scratch: String::new(),
        }
    }

    /// Rows decoded since the last batch.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes of text and blobs decoded since the last batch.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Decodes one tuple measured by [`next_tuple`] (`tuple` is exactly its bytes).
    pub(crate) fn push(&mut self, tuple: &[u8]) -> Result<(), BadValue> {
        let mut at = 2usize;
        for c in 0..self.kinds.len() {
            let len = i32::from_be_bytes(tuple[at..at + 4].try_into().expect("measured"));
            at += 4;
            let value = if len < 0 {
                None
            } else {
                let v = &tuple[at..at + len as usize];
                at += len as usize;
                Some(v)
            };
            self.value(c, value)
                .map_err(|message| BadValue { column: c, message })?;
        }
        self.rows += 1;
        Ok(())
    }

    fn value(&mut self, c: usize, value: Option<&[u8]>) -> Result<(), String> {
        let kind = self.kinds[c];
        let Some(v) = value else {
            match &mut self.builders[c] {
                Builder::Bool(b) => b.append_null(),
                Builder::Int(b) => b.append_null(),
                Builder::Float(b) => b.append_null(),
                Builder::Text(b) => b.append_null(),
                Builder::Bytes(b) => b.append_null(),
            }
            return Ok(());
        };
        let s = &mut self.scratch;
        match (&mut self.builders[c], kind) {
            (Builder::Bool(b), _) => b.append_value(fixed::<1>(v)?[0] != 0),
            (Builder::Int(b), _) => b.append_value(match v.len() {
                2 => i64::from(i16::from_be_bytes(fixed(v)?)),
                4 if kind == Kind::Int => i64::from(i32::from_be_bytes(fixed(v)?)),
                8 => i64::from_be_bytes(fixed(v)?),
                n => return Err(format!("an integer of {n} bytes")),
            }),
            (Builder::Float(b), Kind::Float4) => {
                let f = f32::from_be_bytes(fixed(v)?);
                s.clear();
                write!(s, "{f}").expect("a String takes any write");
                b.append_value(s.parse::<f64>().unwrap_or(f64::from(f)));
            }
            (Builder::Float(b), Kind::Float8) => b.append_value(f64::from_be_bytes(fixed(v)?)),
            (Builder::Float(b), _) => {
                s.clear();
                numeric(v, s)?;
                // NaN and the infinities are spelled as Rust reads them.
                b.append_value(s.parse::<f64>().map_err(|_| format!("numeric {s:?}"))?);
            }
            (Builder::Bytes(b), _) => {
                self.bytes += v.len();
                b.append_value(v);
            }
            (Builder::Text(b), kind) => {
                let text = match kind {
                    Kind::Text => utf8(v)?,
                    Kind::Jsonb => match v.split_first() {
                        Some((1, json)) => utf8(json)?,
                        _ => return Err("jsonb of an unknown version".into()),
                    },
                    _ => {
                        s.clear();
                        match kind {
                            Kind::Uuid => uuid(fixed(v)?, s),
                            Kind::Date => date(i32::from_be_bytes(fixed(v)?), s),
                            Kind::Time => time_of_day(i64::from_be_bytes(fixed(v)?), s),
                            Kind::Timestamp => timestamp(i64::from_be_bytes(fixed(v)?), s, ""),
                            Kind::TimestampTz => timestamp(i64::from_be_bytes(fixed(v)?), s, "Z"),
                            Kind::Numeric { .. } => numeric(v, s)?,
                            _ => unreachable!("text kinds are matched above"),
                        }
                        s.as_str()
                    }
                };
                self.bytes += text.len();
                b.append_value(text);
            }
        }
        Ok(())
    }

    /// The rows decoded since the last batch, as a batch (the builders start again).
    pub(crate) fn finish(&mut self) -> RecordBatch {
        let arrays: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    Builder::Bool(b) => Arc::new(b.finish()),
                    Builder::Int(b) => Arc::new(b.finish()),
                    Builder::Float(b) => Arc::new(b.finish()),
                    Builder::Text(b) => Arc::new(b.finish()),
                    Builder::Bytes(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(self.schema.clone(), arrays)
            .expect("the builders are made from the schema")
    }
}

fn new_builder(kind: Kind) -> Builder {
    match kind.data_type() {
        DataType::Boolean => Builder::Bool(BooleanBuilder::new()),
        DataType::Int64 => Builder::Int(Int64Builder::new()),
        DataType::Float64 => Builder::Float(Float64Builder::new()),
        DataType::Binary => Builder::Bytes(BinaryBuilder::new()),
        _ => Builder::Text(StringBuilder::new()),
    }
}

fn fixed<const N: usize>(v: &[u8]) -> Result<[u8; N], String> {
    v.try_into()
        .map_err(|_| format!("a value of {} bytes where {N} were expected", v.len()))
}

fn utf8(v: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(v).map_err(|e| format!("text that is not UTF-8 ({e})"))
}

fn uuid(v: [u8; 16], s: &mut String) {
    for (i, b) in v.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        write!(s, "{b:02x}").expect("a String takes any write");
    }
}

/// Days from 2000-01-01 (PostgreSQL's epoch) to 1970-01-01 (the civil algorithm's).
const PG_EPOCH_DAYS: i64 = 10_957;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// `YYYY-MM-DD` of PostgreSQL's day number `days` (`infinity`, `-infinity`, and ` BC`
/// after a year before 1, as PostgreSQL prints them).
fn date(days: i32, s: &mut String) {
    match days {
        i32::MAX => s.push_str("infinity"),
        i32::MIN => s.push_str("-infinity"),
        _ => {
            let (y, m, d) = civil(i64::from(days) + PG_EPOCH_DAYS);
            ymd(y, m, d, s);
            if y <= 0 {
                s.push_str(" BC");
            }
        }
    }
}

fn ymd(y: i64, m: u32, d: u32, s: &mut String) {
    let year = if y <= 0 { 1 - y } else { y };
    write!(s, "{year:04}-{m:02}-{d:02}").expect("a String takes any write");
}

/// `HH:MM:SS` and, when there are any, the six digits of the microseconds (as Python's
/// `isoformat` writes them).
fn time_of_day(micros: i64, s: &mut String) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    write!(
        s,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
    .expect("a String takes any write");
    if frac != 0 {
        write!(s, ".{frac:06}").expect("a String takes any write");
    }
}

/// ISO 8601 of PostgreSQL's microseconds since 2000-01-01, then `zone`.
fn timestamp(micros: i64, s: &mut String, zone: &str) {
    match micros {
        i64::MAX => s.push_str("infinity"),
        i64::MIN => s.push_str("-infinity"),
        _ => {
            let days = micros.div_euclid(MICROS_PER_DAY);
            let (y, m, d) = civil(days + PG_EPOCH_DAYS);
            ymd(y, m, d, s);
            s.push('T');
            time_of_day(micros.rem_euclid(MICROS_PER_DAY), s);
            s.push_str(zone);
            if y <= 0 {
                s.push_str(" BC");
            }
        }
    }
}

/// The proleptic Gregorian (year, month, day) of a day number from 1970-01-01 (year 0
/// is 1 BC), after Howard Hinnant's `civil_from_days`.
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// numeric's exact text as PostgreSQL prints it: the digits of its base-10000 groups,
/// `dscale` digits after the point (`NaN`, `Infinity`, `-Infinity` for those).
fn numeric(v: &[u8], s: &mut String) -> Result<(), String> {
    let word = |i: usize| -> Result<i16, String> {
        v.get(i * 2..i * 2 + 2)
            .map(|b| i16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a numeric cut short".to_string())
    };
    let ndigits = word(0)?;
    let weight = i64::from(word(1)?);
    let sign = word(2)? as u16;
    let dscale = word(3)? as u16;
    match sign {
        0xC000 => {
            s.push_str("NaN");
            return Ok(());
        }
        0xD000 => {
            s.push_str("Infinity");
            return Ok(());
        }
        0xF000 => {
            s.push_str("-Infinity");
            return Ok(());
        }
        0x0000 | 0x4000 => {}
        _ => return Err(format!("a numeric of sign word {sign:#x}")),
    }
    let n = usize::try_from(ndigits).map_err(|_| "a numeric of negative length")?;
    if v.len() != 8 + 2 * n {
        return Err("a numeric whose length is not its digits'".into());
    }
    let digits: Vec<i64> = (0..n)
        .map(|i| word(4 + i).map(i64::from))
        .collect::<Result<_, _>>()?;
    if digits.iter().any(|d| !(0..10_000).contains(d)) {
        return Err("a numeric digit group past 9999".into());
    }
    // Group i stands for 10000^(weight - i).
    let group = |i: i64| -> i64 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0)
    };
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                write!(s, "{}", group(i)).expect("a String takes any write");
            } else {
                write!(s, "{:04}", group(i)).expect("a String takes any write");
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut left = usize::from(dscale);
        let mut i = weight + 1;
        while left > 0 {
            let g = format!("{:04}", group(i));
            let take = left.min(4);
            s.push_str(&g[..take]);
            left -= take;
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(ndigits: i16, weight: i16, sign: u16, dscale: u16, digits: &[i16]) -> String {
        let mut v = vec![];
        for w in [ndigits, weight, sign as i16, dscale as i16]
            .iter()
            .chain(digits)
        {
            v.extend_from_slice(&w.to_be_bytes());
        }
        let mut s = String::new();
        numeric(&v, &mut s).unwrap();
        s
    }

    #[test]
    fn numerics_print_as_postgresql_prints_them() {
        assert_eq!(num(0, 0, 0, 0, &[]), "0");
        assert_eq!(num(0, 0, 0, 2, &[]), "0.00");
        assert_eq!(num(2, 0, 0x4000, 2, &[1234, 5000]), "-1234.50");
        assert_eq!(num(1, -1, 0, 4, &[5]), "0.0005");
        assert_eq!(num(1, 2, 0, 0, &[7]), "700000000");
        assert_eq!(num(2, 1, 0, 0, &[12, 3]), "120003");
        assert_eq!(num(0, 0, 0xC000, 0, &[]), "NaN");
        assert_eq!(num(0, 0, 0xF000, 0, &[]), "-Infinity");
    }

    #[test]
    fn dates_and_times_are_iso_8601() {
        let mut s = String::new();
        date(0, &mut s);
        assert_eq!(s, "2000-01-01");
        s.clear();
        date(-730_119, &mut s);
        assert_eq!(s, "0001-01-01");
        s.clear();
        date(2_921_939, &mut s);
        assert_eq!(s, "9999-12-31");
        s.clear();
        timestamp(-1, &mut s, "Z");
        assert_eq!(s, "1999-12-31T23:59:59.999999Z");
        s.clear();
        time_of_day(45_296_250_000, &mut s);
        assert_eq!(s, "12:34:56.250000");
        s.clear();
        date(-730_120, &mut s);
        assert_eq!(s, "0001-12-31 BC");
    }

    #[test]
    fn a_tuple_is_measured_before_it_is_read() {
        let mut t = vec![0, 2];
        t.extend_from_slice(&(-1i32).to_be_bytes());
        t.extend_from_slice(&3i32.to_be_bytes());
        t.extend_from_slice(b"abc");
        assert_eq!(next_tuple(&t, 2), Ok(Next::Tuple(t.len())));
        assert_eq!(next_tuple(&t[..t.len() - 1], 2), Ok(Next::More));
        assert!(next_tuple(&t, 3).is_err());
        assert_eq!(next_tuple(&[0xff, 0xff], 2), Ok(Next::End));
        let mut bad = vec![0, 1];
        bad.extend_from_slice(&(-7i32).to_be_bytes());
        assert!(next_tuple(&bad, 1).is_err());
    }
}
