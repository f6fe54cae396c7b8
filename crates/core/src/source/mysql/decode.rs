//! MySQL's values (as the binary protocol sends them: integers and floats as numbers,
//! dates and times as their parts, the rest as bytes) decoded into Arrow arrays, a
//! column at a time, by the type the result's column definition gives.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, Float64Builder, Int64Builder, StringBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use mysql::consts::{ColumnFlags, ColumnType};
use mysql::Value;

use crate::source::columnar::BIG_AS_TEXT;

/// The character set number of binary strings (`binary`).
const BINARY_CHARSET: u16 = 63;

/// How a column's values are read, and what it is stored as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT, YEAR, and INT UNSIGNED: INTEGER.
    Int,
    /// BIGINT UNSIGNED: INTEGER, the TEXT of its digits past 2^63 - 1.
    UInt,
    /// BIT(n): the bits as an unsigned number; `wide` (BIT(64)) as [`Kind::UInt`],
    /// else INTEGER.
    Bit { wide: bool },
    /// FLOAT: REAL, the shortest decimal that reads back as the same float.
    Float,
    /// DOUBLE: REAL.
    Double,
    /// DECIMAL: its exact text, or REAL.
    Decimal { real: bool },
    /// DATE: `YYYY-MM-DD`.
    Date,
    /// DATETIME(fsp): `YYYY-MM-DDTHH:MM:SS[.f]` with `fsp` digits, the wall-clock
    /// value as written.
    DateTime { fsp: u8 },
    /// TIMESTAMP(fsp): the instant in UTC, as DATETIME then `Z`.
    Timestamp { fsp: u8 },
    /// TIME(fsp): `[-]HH:MM:SS[.f]`, hours past 24 kept (to 838).
    Time { fsp: u8 },
    /// Character strings (CHAR, VARCHAR, TEXT, ENUM, SET, JSON) in UTF-8: TEXT.
    Text,
    /// Binary strings (BINARY, VARBINARY, BLOB): BLOB.
    Blob,
    /// Spatial values: their WKB, the SRID MySQL stores before it dropped: BLOB.
    Geometry,
}

impl Kind {
    /// The kind of a result's column, with DECIMAL as REAL when `decimals_real`.
    pub(crate) fn of(c: &mysql::Column, decimals_real: bool) -> Kind {
        use ColumnType::*;
        let unsigned = c.flags().contains(ColumnFlags::UNSIGNED_FLAG);
        let fsp = c.decimals().min(6);
        match c.column_type() {
            MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
            | MYSQL_TYPE_YEAR => Kind::Int,
            MYSQL_TYPE_LONGLONG if unsigned => Kind::UInt,
            MYSQL_TYPE_LONGLONG => Kind::Int,
            MYSQL_TYPE_BIT => Kind::Bit {
                wide: c.column_length() > 63,
            },
            MYSQL_TYPE_FLOAT => Kind::Float,
            MYSQL_TYPE_DOUBLE => Kind::Double,
            MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL => Kind::Decimal {
                real: decimals_real,
            },
            MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Kind::Date,
            MYSQL_TYPE_DATETIME | MYSQL_TYPE_DATETIME2 => Kind::DateTime { fsp },
            MYSQL_TYPE_TIMESTAMP | MYSQL_TYPE_TIMESTAMP2 => Kind::Timestamp { fsp },
            MYSQL_TYPE_TIME | MYSQL_TYPE_TIME2 => Kind::Time { fsp },
            MYSQL_TYPE_GEOMETRY => Kind::Geometry,
            MYSQL_TYPE_JSON | MYSQL_TYPE_ENUM | MYSQL_TYPE_SET => Kind::Text,
            _ if c.character_set() == BINARY_CHARSET => Kind::Blob,
            _ => Kind::Text,
        }
    }

    /// The Arrow type the column is decoded into.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Kind::Int => DataType::Int64,
            Kind::UInt | Kind::Bit { .. } => DataType::UInt64,
            Kind::Float | Kind::Double | Kind::Decimal { real: true } => DataType::Float64,
            Kind::Blob | Kind::Geometry => DataType::Binary,
            Kind::Decimal { real: false }
            | Kind::Date
            | Kind::DateTime { .. }
            | Kind::Timestamp { .. }
            | Kind::Time { .. }
            | Kind::Text => DataType::Utf8,
        }
    }
}

/// The Arrow schema of decoded batches: `columns` named, all nullable.
pub(crate) fn schema(columns: &[(String, Kind)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, kind)| {
                let f = Field::new(name, kind.data_type(), true);
                match kind {
                    Kind::UInt | Kind::Bit { wide: true } => {
                        f.with_metadata(std::collections::HashMap::from([(
                            BIG_AS_TEXT.to_string(),
                            "text".to_string(),
                        )]))
                    }
                    _ => f,
                }
            })
            .collect::<Vec<_>>(),
    ))
}

/// One column's values as they are decoded.
enum Builder {
    Int(Int64Builder),
    UInt(UInt64Builder),
    Real(Float64Builder),
    Text(StringBuilder),
    Binary(BinaryBuilder),
}

/// Rows decoded into a batch's columns.
pub(crate) struct Decoder {
    kinds: Vec<Kind>,
    builders: Vec<Builder>,
    schema: SchemaRef,
    rows: usize,
    /// A value's text, made here (dates and times).
    scratch: String,
}

impl Decoder {
    pub(crate) fn new(schema: SchemaRef, kinds: Vec<Kind>) -> Decoder {
        let builders = kinds.iter().map(|k| Self::builder(*k)).collect();
        Decoder {
            kinds,
            builders,
            schema,
            rows: 0,
            scratch: String::new(),
        }
    }

    fn builder(k: Kind) -> Builder {
        match k.data_type() {
            DataType::Int64 => Builder::Int(Int64Builder::new()),
            DataType::UInt64 => Builder::UInt(UInt64Builder::new()),
            DataType::Float64 => Builder::Real(Float64Builder::new()),
            DataType::Binary => Builder::Binary(BinaryBuilder::new()),
            _ => Builder::Text(StringBuilder::new()),
        }
    }

    /// Rows decoded since the last batch.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes one row's values (as many as there are columns); on error the row is
    /// not whole and the decoder must not be used again. The error names the column
    /// (an index) and why.
    pub(crate) fn push(&mut self, values: &[Value]) -> Result<(), (usize, String)> {
        if values.len() != self.kinds.len() {
            return Err((
                0,
                format!(
                    "a row of {} values where {} were asked for",
                    values.len(),
                    self.kinds.len()
                ),
            ));
        }
        for (c, v) in values.iter().enumerate() {
            self.value(c, v).map_err(|why| (c, why))?;
        }
        self.rows += 1;
        Ok(())
    }

    fn value(&mut self, c: usize, v: &Value) -> Result<(), String> {
        let kind = self.kinds[c];
        let unexpected = || format!("a {kind:?} column sent {v:?}");
        match (&mut self.builders[c], v) {
            (Builder::Int(b), Value::NULL) => b.append_null(),
            (Builder::UInt(b), Value::NULL) => b.append_null(),
            (Builder::Real(b), Value::NULL) => b.append_null(),
            (Builder::Text(b), Value::NULL) => b.append_null(),
            (Builder::Binary(b), Value::NULL) => b.append_null(),
            (Builder::Int(b), Value::Int(i)) => b.append_value(*i),
            (Builder::Int(b), Value::UInt(u)) => {
                b.append_value(i64::try_from(*u).map_err(|_| unexpected())?)
            }
            (Builder::Int(b), Value::Bytes(t)) => b.append_value(
                std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(unexpected)?,
            ),
            (Builder::UInt(b), Value::UInt(u)) => b.append_value(*u),
            (Builder::UInt(b), Value::Int(i)) => {
                b.append_value(u64::try_from(*i).map_err(|_| unexpected())?)
            }
            (Builder::UInt(b), Value::Bytes(bits)) if matches!(kind, Kind::Bit { .. }) => {
                if bits.len() > 8 {
                    return Err(unexpected());
                }
                b.append_value(bits.iter().fold(0u64, |n, &x| (n << 8) | u64::from(x)))
            }
            (Builder::UInt(b), Value::Bytes(t)) => b.append_value(
                std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(unexpected)?,
            ),
            (Builder::Real(b), Value::Double(d)) => b.append_value(*d),
            // The shortest decimal of the float, read as a double: 1.1, not
            // 1.100000023841858.
            (Builder::Real(b), Value::Float(f)) => {
                self.scratch.clear();
                let _ = write!(self.scratch, "{f}");
                b.append_value(self.scratch.parse().map_err(|_| unexpected())?)
            }
            (Builder::Real(b), Value::Bytes(t)) => b.append_value(
                std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(unexpected)?,
            ),
            (Builder::Text(b), Value::Bytes(t)) => {
                let s =
                    std::str::from_utf8(t).map_err(|e| format!("text that is not UTF-8 ({e})"))?;
                b.append_value(s)
            }
            (Builder::Text(b), Value::Date(y, mo, d, h, mi, s, us)) => {
                self.scratch.clear();
                let t = &mut self.scratch;
                let _ = write!(t, "{y:04}-{mo:02}-{d:02}");
                match kind {
                    Kind::Date => {}
                    Kind::DateTime { fsp } | Kind::Timestamp { fsp } => {
                        let _ = write!(t, "T{h:02}:{mi:02}:{s:02}");
                        fraction(t, *us, fsp);
                        if matches!(kind, Kind::Timestamp { .. }) {
                            t.push('Z');
                        }
                    }
                    _ => return Err(unexpected()),
                }
                b.append_value(&self.scratch)
            }
            (Builder::Text(b), Value::Time(neg, days, h, mi, s, us)) => {
                let Kind::Time { fsp } = kind else {
                    return Err(unexpected());
                };
                self.scratch.clear();
                let t = &mut self.scratch;
                let hours = u64::from(*days) * 24 + u64::from(*h);
                let sign = if *neg { "-" } else { "" };
                let _ = write!(t, "{sign}{hours:02}:{mi:02}:{s:02}");
                fraction(t, *us, fsp);
                b.append_value(&self.scratch)
            }
            (Builder::Binary(b), Value::Bytes(t)) if kind == Kind::Geometry => {
                // MySQL stores a spatial value as its SRID (4 bytes) and then its WKB.
                b.append_value(t.get(4..).ok_or_else(unexpected)?)
            }
            (Builder::Binary(b), Value::Bytes(t)) => b.append_value(t),
            _ => return Err(unexpected()),
        }
        Ok(())
    }

    /// The rows decoded since the last batch, as one.
    pub(crate) fn finish(&mut self) -> RecordBatch {
        let arrays: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| -> ArrayRef {
                match b {
                    Builder::Int(b) => Arc::new(b.finish()),
                    Builder::UInt(b) => Arc::new(b.finish()),
                    Builder::Real(b) => Arc::new(b.finish()),
                    Builder::Text(b) => Arc::new(b.finish()),
                    Builder::Binary(b) => Arc::new(b.finish()),
                }
            })
            .collect();
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), arrays).expect("builders match the schema")
    }
}

/// Appends `.` and the first `fsp` digits of the microseconds `us`, when `fsp` > 0 (as
/// MySQL prints a column of that precision).
fn fraction(t: &mut String, us: u32, fsp: u8) {
    if fsp == 0 {
        return;
    }
    let digits = format!("{us:06}");
    t.push('.');
    t.push_str(&digits[..usize::from(fsp).min(6)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    fn decode(kind: Kind, v: Value) -> RecordBatch {
        let cols = vec![("c".to_string(), kind)];
        let mut d = Decoder::new(schema(&cols), vec![kind]);
        d.push(&[v]).unwrap();
        d.finish()
    }

    fn text(kind: Kind, v: Value) -> String {
        decode(kind, v)
            .column(0)
            .as_string::<i32>()
            .value(0)
            .to_string()
    }

    #[test]
    fn times_and_dates_are_written_as_documented() {
        let dt = Value::Date(2024, 1, 2, 3, 4, 5, 120_000);
        assert_eq!(
            text(Kind::DateTime { fsp: 2 }, dt.clone()),
            "2024-01-02T03:04:05.12"
        );
        assert_eq!(
            text(Kind::DateTime { fsp: 0 }, dt.clone()),
            "2024-01-02T03:04:05"
        );
        assert_eq!(
            text(Kind::Timestamp { fsp: 6 }, dt.clone()),
            "2024-01-02T03:04:05.120000Z"
        );
        assert_eq!(
            text(Kind::Date, Value::Date(0, 0, 0, 0, 0, 0, 0)),
            "0000-00-00"
        );
        let t = Value::Time(true, 34, 22, 59, 59, 0);
        assert_eq!(text(Kind::Time { fsp: 0 }, t), "-838:59:59");
        assert_eq!(
            text(Kind::Time { fsp: 3 }, Value::Time(false, 0, 1, 2, 3, 4000)),
            "01:02:03.004"
        );
    }

    #[test]
    fn numbers_keep_their_values() {
        let b = decode(Kind::Float, Value::Float(1.1));
        assert_eq!(
            b.column(0)
                .as_primitive::<arrow_array::types::Float64Type>()
                .value(0),
            1.1
        );
        let b = decode(Kind::Bit { wide: false }, Value::Bytes(vec![0x02, 0xAA]));
        assert_eq!(
            b.column(0)
                .as_primitive::<arrow_array::types::UInt64Type>()
                .value(0),
            0x2AA
        );
        let b = decode(Kind::UInt, Value::UInt(u64::MAX));
        assert_eq!(
            b.column(0)
                .as_primitive::<arrow_array::types::UInt64Type>()
                .value(0),
            u64::MAX
        );
        let cols = vec![("c".to_string(), Kind::Text)];
        let mut d = Decoder::new(schema(&cols), vec![Kind::Text]);
        assert!(d
            .push(&[Value::Bytes(vec![0xff])])
            .unwrap_err()
            .1
            .contains("UTF-8"));
    }
}
