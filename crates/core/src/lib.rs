//! liteload: load data into SQLite as fast as the disk allows, and never leave a
//! half-written or corrupt database behind.
//!
//! Data flows one way: a [`source`] turns input into typed [`Batch`]es on one thread (on
//! every core for a large CSV); one writer (SQLite's insert path, or the direct page
//! writer, see [`Engine`]) writes them on another. A new database file is built beside
//! its name and appears whole ([`durability`]); an existing one is changed in one
//! transaction; a connection the program holds gets a savepoint in its transaction
//! ([`import_into_connection`]). The jobs: [`import`], [`generate`], [`ingest`], [`kv`].
//! `docs/ARCHITECTURE.md` in the repository maps the code.
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

// The surface: the jobs (`import` here; `generate`, `ingest`, `kv`), their options and
// errors, inputs and readers (`source`), and the SQLite build (`sqlite_info`). The
// machinery (pipeline, sinks, the page-writer sink, affinity, schema checks) is private.
mod affinity;
mod batch;
mod cancel;
#[cfg(test)]
mod conformance;
mod destination;
pub mod durability;
mod error;
pub mod generate;
mod import;
pub mod ingest;
pub mod kv;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod load_tables;
#[cfg(feature = "mysql")]
pub mod mysql;
mod names;
mod options;
mod pipeline;
mod plan;
#[cfg(feature = "postgres")]
pub mod postgres;
mod progress;
#[cfg(feature = "network")]
pub mod rqlite;
pub mod same_process;
mod schema;
mod sink;
pub mod source;
pub mod sqlite_files;
pub mod sqlite_info;
mod summary;
mod table;
#[cfg(feature = "network")]
mod tls;
mod types;
mod utf8;

pub use batch::{Batch, Cell, RowOrigin, TextSpan, Value};
pub use durability::{Durability, FileSettings};
pub use error::{Error, ErrorKind, Hint, Position, Result};
pub use import::{import, import_into_connection};
pub use options::{Engine, ImportOptions, Nested, OnConflict, Quoting, DEFAULT_ROWS_PER_STATEMENT};
pub use plan::read_plan;
pub use progress::{Progress, Stage};
pub use schema::quote_ident;
pub use source::{Encoding, Format, Input, Nulls, Ragged, ReadOptions};
#[allow(deprecated)]
pub use summary::Writer;
pub use summary::{Durable, EngineUsed, Sniffed, Summary};
pub use table::{IfExists, IndexSpec};
pub use types::{ColumnType, Lexeme, TypeGuess};

/// The arrow-rs crate whose record batches [`Input::record_batches`] takes, re-exported
/// so that a program uses the same version.
#[cfg(feature = "arrow")]
pub use arrow_array;

/// The rusqlite crate (0.41) whose `Connection` [`import_into_connection`] takes,
/// re-exported so that a program uses the same version: one program links one SQLite
/// (`libsqlite3-sys` allows a single version per build), so a program on another
/// rusqlite release opens its connection with `liteload::rusqlite` instead.
pub use rusqlite;

/// The README's Rust examples, run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/rust.md's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/rust.md")]
pub struct RustDocDoctests;
