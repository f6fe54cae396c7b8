//! [`NullSink`]: counts rows and writes nothing, to measure parsing alone.

use super::{BatchSink, SampledTable, Sink, TablePlan, TableStart};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::summary::{Durable, Summary};
use crate::types::ColumnType;

/// Accepts every batch and keeps only the row count. It reads every value, so the cost
/// of a batch's layout is measured too.
#[derive(Debug, Default)]
pub(crate) struct NullSink {
    /// Rows taken.
    pub(crate) rows: u64,
    /// A checksum of the values seen, so the work cannot be optimized away.
    pub(crate) checksum: u64,
}

impl BatchSink for NullSink {
    fn write_batch(
        &mut self,
        batch: &Batch,
        _bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        for c in batch.cells() {
            let h = match c {
                crate::batch::Cell::Null => 0,
                crate::batch::Cell::Integer(i) => *i as u64,
                crate::batch::Cell::Real(r) => r.to_bits(),
                crate::batch::Cell::Text(span) | crate::batch::Cell::Blob(span) => span.len(),
            };
            self.checksum = self.checksum.rotate_left(5) ^ h;
        }
        self.rows += batch.rows() as u64;
        Ok(batch.rows() as u64)
    }

    fn add_columns(&mut self, _columns: &[(String, ColumnType)]) -> Result<()> {
        Ok(())
    }
}

impl Sink for NullSink {
    /// Every table is taken as sampled, and may grow.
    fn begin(&mut self, table: &SampledTable<'_>) -> Result<TableStart> {
        Ok(TableStart::Write(TablePlan {
            table: table.table.to_string(),
            columns: table.columns.to_vec(),
            types: table.types.to_vec(),
            may_alter: true,
        }))
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        summary.durability = Durable::NotWritten;
        Ok(())
    }
}
