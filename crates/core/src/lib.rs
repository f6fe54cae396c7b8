//! liteload: load data into SQLite as fast as the disk allows, and never leave a
//! half-written or corrupt database behind.
//!
//! Data flows one way: a [`source`] turns input text into typed [`Batch`]es on one
//! thread; a [`sink`] writes them on another. A new database file is built beside its
//! name and appears whole ([`durability`]); an existing one is changed in one transaction.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use liteload::{import, ImportOptions, Input, Progress};
//! let dir = tempfile::tempdir()?;
//! let csv = dir.path().join("people.csv");
//! std::fs::write(&csv, "name,age\nAda,36\nAlan,41\n")?;
//! let db = dir.path().join("out.db");
//! let summary = import(&db, &[Input::Path(csv)], &ImportOptions::default(), &Progress::default())?;
//! assert_eq!(summary.rows, 2);
//! assert_eq!(summary.tables, vec!["people".to_string()]);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod affinity;
pub mod batch;
pub mod direct;
pub mod durability;
pub mod error;
pub mod generate;
pub mod import;
pub mod ingest;
pub mod kv;
pub mod pipeline;
pub mod schema;
pub mod sink;
pub mod source;
pub mod sqlite_info;
pub mod summary;
pub mod table;
pub mod types;

pub use batch::{Batch, Cell, Value};
pub use durability::Durability;
pub use error::{Error, ErrorKind, Hint, Position, Result};
pub use import::{import, import_into_connection, ImportOptions, Quoting};
pub use source::{Encoding, Format, Input, Ragged, ReadOptions};
pub use summary::{Durable, Progress, Stage, Summary, Writer};
pub use table::IndexSpec;
pub use types::ColumnType;

/// The README's Rust examples, run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
