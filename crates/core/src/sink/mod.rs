//! The writers of a load, one [`Sink`] each: the page writer into a new file
//! ([`page`]), the page writer into a side file that SQLite's transfer copies into an
//! existing database ([`side_file`]), SQLite's insert path through a connection
//! ([`sqlite`]), an rqlite cluster that holds data (`rqlite`, with the network
//! feature), and none ([`null`]). A sink never parses text, and never plans: it is
//! handed each table as the plan and the input's sample describe it.
//!
//! A sink's life: [`Sink::begin`] for each table in turn (it creates or checks it, and
//! says which types the rows must have), [`BatchSink::write_batch`] for its rows, then
//! [`Sink::finish`] once after the last table (indexes, then commit, publish or
//! transfer). A sink dropped before `finish` returned leaves the destination as it was.

pub(crate) mod merge;
pub(crate) mod null;
pub(crate) mod page;
pub(crate) mod row_rules;
#[cfg(feature = "network")]
pub(crate) mod rqlite;
pub(crate) mod side;
pub(crate) mod side_file;
pub(crate) mod sqlite;
pub(crate) mod target;

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::summary::Summary;
use crate::types::ColumnType;

pub(crate) use crate::plan::table::TablePlan;
pub(crate) use null::NullSink;

/// What batches are written through: the part of a writer the pipeline drives.
pub(crate) trait BatchSink {
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

/// A table as one input's sample describes it, handed to [`Sink::begin`].
pub(crate) struct SampledTable<'a> {
    /// The table the plan names.
    pub(crate) table: &'a str,
    /// The input's columns, in the order its batches carry them.
    pub(crate) columns: &'a [String],
    /// Their types, inferred or given.
    pub(crate) types: &'a [ColumnType],
    /// The name messages give the rows' source: the input's (the first of typed inputs
    /// read together), or `<generate>`.
    pub(crate) name: &'a str,
    /// The input, where the rows come from one (a writer that records which input it
    /// loaded, to resume it, reads it).
    pub(crate) input: Option<&'a crate::source::Input>,
    /// Whether columns may appear after the sample (JSON keys first seen later).
    pub(crate) grows: bool,
}

/// How a table's load starts, as [`Sink::begin`] found it.
pub(crate) enum TableStart {
    /// Its rows are written to this table.
    Write(TablePlan),
    /// Every row of this table's input is in already (an earlier run finished its load,
    /// as the destination records): nothing to write, the input is not read.
    #[cfg_attr(not(feature = "network"), allow(dead_code))]
    AlreadyLoaded(TablePlan),
}

/// A writer of a whole load.
pub(crate) trait Sink: BatchSink {
    /// Makes the destination ready for `table`'s rows (the one begun before ends here).
    /// Every problem with the table is found here, before any of its rows is written.
    fn begin(&mut self, table: &SampledTable<'_>) -> Result<TableStart>;

    /// Writes the rows of `src` as pages the source fills itself, when both can (the
    /// page writer's new table, generate's rows): `None` when not, and the rows go by
    /// batches. Called once per table, after [`Sink::begin`].
    fn take_pages(
        &mut self,
        _src: &mut dyn crate::source::Source,
        _progress: &crate::progress::Progress,
    ) -> Option<Result<u64>> {
        None
    }

    /// Whether batches should carry encoded records ([`Batch::records`]): the page
    /// writer's, which the parser threads build.
    fn wants_records(&self) -> bool {
        false
    }

    /// Whether batches should carry encoded records where the table's rowid column
    /// holds each row's number (1 for the first) and its record holds NULL there (as
    /// SQLite stores an INTEGER PRIMARY KEY): the page writer's, for a table it starts
    /// at rowid 1.
    fn wants_numbered_records(&self) -> bool {
        self.wants_records()
    }

    /// After the last batch, before [`Sink::finish`]: rows the destination refuses only
    /// once all are written (the side file of a table with constraints, checked whole)
    /// go to `bad`, each with its position and fields; if `bad` returns an error, so
    /// does this. Most writers refuse rows as they come, and have nothing to do here.
    fn settle(
        &mut self,
        _summary: &mut Summary,
        _bad: &mut dyn FnMut(crate::source::BadRecord) -> Result<()>,
    ) -> Result<()> {
        Ok(())
    }

    /// After the last table: builds the indexes, then makes the load last (commit,
    /// publish, transfer), and fills in what the writer knows of `summary` (its
    /// writer, durability and notes; the side file its row count too).
    fn finish(&mut self, summary: &mut Summary) -> Result<()>;
}
