//! Writers of batches. A sink never parses text.

pub mod null;
pub(crate) mod raw_stmt;
pub mod sqlite;

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::types::ColumnType;

pub use null::NullSink;
pub use sqlite::SqliteSink;

/// Where batches go.
pub trait Sink {
    /// Writes every row of `batch`. A row the destination refuses (a duplicate key) is
    /// passed to `bad` with its row index; if `bad` returns an error, so does this, and
    /// the rows of `batch` written before it stay written (the caller's transaction
    /// decides their fate). Returns the number of rows written.
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64>;

    /// Widens the destination by `columns`; later batches carry them last.
    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()>;
}
