//! Arrow record batches as rows. Each column's SQLite type comes from its Arrow type
//! (nothing is inferred):
//!
//! | Arrow | stored as |
//! |---|---|
//! | Int8..Int64, UInt8..UInt32, Boolean (0/1), Duration (a count of its unit) | INTEGER |
//! | UInt64 | INTEGER; a value above `i64::MAX` is a bad row |
//! | Float16/32/64 | REAL; NaN is NULL (SQLite stores a NaN as NULL too) |
//! | Decimal32..256 | TEXT, exact ([`Decimals::Text`]) or REAL ([`Decimals::Real`]) |
//! | Date32/64, Time32/64, Timestamp | TEXT in ISO 8601 ([`Temporal::Iso8601`]) or INTEGER ([`Temporal::Epoch`]) |
//! | Utf8, LargeUtf8, Utf8View | TEXT |
//! | Binary, LargeBinary, BinaryView, FixedSizeBinary | BLOB |
//! | List, LargeList, FixedSizeList, Struct, Map | TEXT: the value as JSON |
//! | Dictionary | as its value type |
//! | Null | NULL, in a column declared BLOB (no affinity) |
//!
//! Interval, Union, run-end encoded and list-view columns are refused by name. A null
//! (the validity bitmap) is NULL in every type. A text or blob longer than SQLite's limit
//! (1,000,000,000 bytes, also the limit for a whole row) makes its row a bad row, as a
//! UInt64 past `i64::MAX` does: SQLite could not read such a row back.

/// How dates, times and timestamps are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Temporal {
    /// TEXT in ISO 8601, which SQLite's date and time functions read: `2026-11-24`,
    /// `14:05:09.25`, `2026-11-24T14:05:09.25`. A timestamp with a time zone is the
    /// instant in UTC, ending in `Z`; Date64 is a date and time (it counts milliseconds).
    #[default]
    Iso8601,
    /// INTEGER, the value in its Arrow unit: days since 1970-01-01 (Date32),
    /// milliseconds since then (Date64), the timestamp's unit since then (UTC), the time
    /// of day in its unit (Time32/64).
    Epoch,
}

/// How decimals are stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Decimals {
    /// TEXT with every digit (`-1234.50`): exact, and SQLite's arithmetic still reads it.
    #[default]
    Text,
    /// REAL: the nearest double.
    Real,
}

/// SQLite's default limit on the length of a text or blob, and of a row (`SQLITE_MAX_LENGTH`).
pub const SQLITE_MAX_LENGTH: usize = 1_000_000_000;

#[cfg(feature = "arrow")]
mod arrow_rows;
#[cfg(feature = "arrow")]
pub use arrow_rows::*;
