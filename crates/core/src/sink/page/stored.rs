//! The page writer for records copied as they are stored ([`StoredWriter`]): tables
//! whose rows arrive as (rowid, record) in rowid order, and indexes whose entries arrive
//! in SQLite's order, written into a new database file that nothing else sees until it
//! is complete (built at [`crate::durability::temp_path`], read back by SQLite, checked
//! with `verify`, then linked into place; an error, a cancel or a kill leaves no file
//! at the target).
//!
//! Every record and entry is checked to be one ([`liteload_btree::Record::parse`]) and
//! in order before it is written, so bytes read from another file cannot make a file
//! SQLite would find malformed. The caller vouches that each record fits the table's
//! declaration (the same `CREATE TABLE` as the file it was read from) and each entry the
//! index's.

use std::path::{Path, PathBuf};

use liteload_btree::{DbWriter, IndexBuilder, Record, SeqFile, TableWriter};

use super::file::{complete, from_btree};
use crate::durability;
use crate::error::{Error, Result};
use crate::progress::Progress;

/// A new database file being written from stored records (see the module notes).
pub(crate) struct StoredWriter<'p> {
    db: PathBuf,
    /// The temp file, while it is this writer's to remove.
    tmp: Option<PathBuf>,
    writer: Option<DbWriter<SeqFile>>,
    verify: bool,
    progress: &'p Progress,
    /// A stale temp file removed, …
    pub(crate) notes: Vec<String>,
}

/// Why a push was refused: the load cannot go on this way (`Order`: rows or entries out
/// of order, which another road may still copy), or failed.
pub(crate) enum Refused {
    /// Rowids not increasing, or index entries not in SQLite's order.
    Order,
    /// Anything else.
    Failed(Error),
}

impl From<Error> for Refused {
    fn from(e: Error) -> Self {
        Refused::Failed(e)
    }
}

impl<'p> StoredWriter<'p> {
    /// Starts the new database `db` (which must not exist) with pages of `page_size`
    /// bytes.
    pub(crate) fn create(
        db: &Path,
        page_size: u32,
        verify: bool,
        progress: &'p Progress,
    ) -> Result<Self> {
        crate::destination::refuse_existing(db)?;
        let (tmp, note) = durability::new_file_temp(db)?;
        let writer = DbWriter::create(&tmp, page_size).map_err(|e| from_btree(e, Some(&tmp)))?;
        Ok(StoredWriter {
            db: db.to_path_buf(),
            tmp: Some(tmp),
            writer: Some(writer),
            verify,
            progress,
            notes: note.into_iter().collect(),
        })
    }

    fn writer(&mut self) -> &mut DbWriter<SeqFile> {
        self.writer.as_mut().expect("a writer not finished")
    }

    /// Starts table `name` declared by `sql`.
    pub(crate) fn table(&mut self, name: &str, sql: &str) -> StoredTable<'_> {
        let path = self.tmp.clone();
        StoredTable {
            table: self.writer().table(name, sql),
            path,
        }
    }

    /// Starts index `name` of `table` declared by `sql` (empty: the automatic index of a
    /// constraint of the table's declaration).
    pub(crate) fn index(&mut self, name: &str, table: &str, sql: &str) -> StoredIndex<'_> {
        let path = self.tmp.clone();
        StoredIndex {
            index: self.writer().index_builder(name, table, sql),
            path,
        }
    }

    /// Ends the file, has SQLite read it back (and check it, with `verify`), and puts it
    /// in place.
    pub(crate) fn finish(mut self) -> Result<()> {
        let tmp = self.tmp.clone().expect("a writer not finished");
        let writer = self.writer.take().expect("a writer not finished");
        writer.finish().map_err(|e| from_btree(e, Some(&tmp)))?;
        complete(&tmp, &[], self.verify, self.progress)?;
        durability::publish(&tmp, &self.db)?;
        self.tmp = None;
        Ok(())
    }
}

impl Drop for StoredWriter<'_> {
    fn drop(&mut self) {
        // Not finished: the writer's thread ends, then its file goes.
        drop(self.writer.take());
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

fn refused(e: liteload_btree::Error, path: Option<&Path>) -> Refused {
    match e {
        liteload_btree::Error::RowidOrder { .. } | liteload_btree::Error::IndexOrder { .. } => {
            Refused::Order
        }
        liteload_btree::Error::NotARecord(why) => Refused::Failed(Error::schema(format!(
            "a stored record is not one SQLite writes: {why}"
        ))),
        e => Refused::Failed(from_btree(e, path)),
    }
}

/// A table being written (see [`StoredWriter::table`]).
pub(crate) struct StoredTable<'w> {
    table: TableWriter<'w, SeqFile>,
    path: Option<PathBuf>,
}

impl StoredTable<'_> {
    /// Adds a row, its rowid above every one before it.
    #[inline]
    pub(crate) fn push(&mut self, rowid: i64, record: &[u8]) -> std::result::Result<(), Refused> {
        let r = Record::parse(record).map_err(|e| refused(e, None))?;
        self.table
            .push_record(rowid, r)
            .map_err(|e| refused(e, self.path.as_deref()))
    }

    /// Writes the table's last pages and its schema row.
    pub(crate) fn finish(self) -> Result<()> {
        let path = self.path;
        self.table
            .finish()
            .map(|_| ())
            .map_err(|e| from_btree(e, path.as_deref()))
    }
}

/// An index being written (see [`StoredWriter::index`]).
pub(crate) struct StoredIndex<'w> {
    index: IndexBuilder<'w, SeqFile>,
    path: Option<PathBuf>,
}

impl StoredIndex<'_> {
    /// Adds an entry (a record of the key columns, then the rowid), after the one before
    /// it in SQLite's order.
    #[inline]
    pub(crate) fn push_record(&mut self, entry: Record<'_>) -> std::result::Result<(), Refused> {
        self.index.push_record(entry).map_err(|e| refused(e, None))
    }

    /// Writes the index's last pages and its schema row.
    pub(crate) fn finish(self) -> Result<()> {
        let path = self.path;
        self.index
            .finish()
            .map(|_| ())
            .map_err(|e| from_btree(e, path.as_deref()))
    }
}
