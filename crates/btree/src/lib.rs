//! Writes a new SQLite 3 database file page by page, bottom-up, for tables whose rows
//! arrive in rowid order: leaf pages are filled left to right and each written once,
//! then each interior level is built from the pages below it. No SQL engine, no page
//! cache, no journal, no page splits, sequential writes. SQLite opens the result as its
//! own file (`PRAGMA integrity_check` says ok) and can go on using it.
//!
//! Indexes are built the same way from entries sorted in SQLite's order (the `index`
//! module, whose top comment draws the index pages).
//!
//! A file that exists can be extended the same way ([`DbWriter::extend`]): new tables go
//! into pages past its end, and the few pages changed in place (page 1 and the schema
//! table's right edge, see [`Existing`]) are first saved to a rollback journal in
//! SQLite's own format ([`journal`]), which SQLite plays back after a crash.
//!
//! Leaf pages need no page numbers, so they can be filled on any thread: [`Leaves`]
//! holds sealed leaves for a run of rows, and [`TableWriter::append`] numbers and writes
//! them in order (an overflow chain's first page, the one number a leaf holds, is
//! patched in then). [`RecordBuilder`] makes a record value by value. The file goes out
//! through [`SeqFile`]: 8 MiB aligned blocks, written by a thread of its own, around the
//! page cache where the system allows.
//!
//! What is written (all integers big-endian):
//!
//! The database header, bytes 0..100 of page 1:
//!
//! | offset | size | value |
//! |---:|---:|---|
//! | 0 | 16 | `"SQLite format 3\0"` |
//! | 16 | 2 | page size (512..32768; 1 means 65536) |
//! | 18, 19 | 1, 1 | write and read versions: 1 (rollback journal) |
//! | 20 | 1 | reserved bytes per page: 0 (usable size = page size) |
//! | 21, 22, 23 | 1 each | payload fractions 64, 32, 32 |
//! | 24 | 4 | file change counter: 1 |
//! | 28 | 4 | database size in pages |
//! | 32, 36 | 4, 4 | freelist trunk page and count: 0 (no free pages) |
//! | 40 | 4 | schema cookie: 1 |
//! | 44 | 4 | schema format: 4 |
//! | 56 | 4 | text encoding: 1 (UTF-8) |
//! | 92 | 4 | version-valid-for: 1 (equal to the change counter, so the size is trusted) |
//! | 96 | 4 | version of the writer |
//!
//! Every other header byte is 0.
//!
//! A b-tree page header (at offset 100 on page 1, else 0):
//!
//! | offset | size | value |
//! |---:|---:|---|
//! | 0 | 1 | 0x0D table leaf, 0x05 table interior |
//! | 1 | 2 | first freeblock: 0 (cells are packed, nothing is free in between) |
//! | 3 | 2 | number of cells |
//! | 5 | 2 | start of the cell content area (0 means 65536) |
//! | 7 | 1 | fragmented free bytes: 0 |
//! | 8 | 4 | interior pages only: the right-most child |
//!
//! then one 2-byte offset per cell, in key order; the cells themselves fill the page from
//! its end down to the content start.
//!
//! A table leaf cell: payload size (varint), rowid (varint), the payload's first `local`
//! bytes, and if it does not all fit, the first overflow page (4 bytes). With usable
//! size `U` and payload `P`: `X = U - 35`, `M = (U - 12) * 32 / 255 - 23`,
//! `K = M + (P - M) % (U - 4)`; local is `P` if `P <= X`, else `K` if `K <= X`, else `M`.
//! An overflow page: the next overflow page (4 bytes, 0 at the end), then `U - 4` bytes.
//!
//! A table interior cell: the left child page (4 bytes), then a rowid (varint) that is the
//! largest rowid beneath that child. The last child is the header's right-most pointer.
//!
//! A record (the payload): a header of varints — its own size in bytes, then one serial
//! type per column — then the column values in order:
//!
//! | serial type | value | body bytes |
//! |---:|---|---:|
//! | 0 | NULL (and an INTEGER PRIMARY KEY column, whose value is the rowid) | 0 |
//! | 1, 2, 3, 4, 5, 6 | integer | 1, 2, 3, 4, 6, 8 |
//! | 7 | 64-bit IEEE float | 8 |
//! | 8, 9 | the integers 0 and 1 | 0 |
//! | 12 + 2n | blob of n bytes | n |
//! | 13 + 2n | text of n bytes | n |
//!
//! The lock-byte page, the one holding file offset 2^30, is never used by SQLite; in a
//! file that large it is written as zeros and no b-tree points at it.
//!
//! Page 1 holds the `sqlite_schema` table (type, name, tbl_name, rootpage, sql): a leaf
//! whose rows are the tables written, or, when they do not fit beside the header, the
//! root of interior levels over leaves of their own (possibly with no cell and only the
//! right-most pointer, as SQLite itself writes it).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod existing;
pub mod index;
mod interior;
pub mod journal;
mod leaves;
mod old_index;
mod payload;
pub mod record;
pub mod seqfile;
pub mod varint;
mod writer;

pub use existing::{Existing, TableEdge};
pub use leaves::Leaves;
pub use old_index::{FreedPages, IndexRoot, OldEntries, TableRows};
pub use payload::local_payload;
pub use record::{Record, RecordBuilder, Records, Value};
pub use seqfile::SeqFile;
pub use writer::{ChangedPage, DbWriter, DetachedTable, IndexBuilder, TableWriter};

/// Why a file cannot be written.
#[derive(Debug)]
pub enum Error {
    /// Writing the file failed.
    Io(std::io::Error),
    /// Rows must come in strictly increasing rowid order.
    RowidOrder {
        /// The rowid written last.
        last: i64,
        /// The rowid that came after it.
        got: i64,
    },
    /// Not a power of two from 512 to 65536.
    PageSize(u32),
    /// Bytes given as a record are not one; the reason.
    NotARecord(&'static str),
    /// Index entry `at` does not sort after the one before it (in [`index::compare`]
    /// order; entries are distinct, as the rowid at their end makes them).
    IndexOrder {
        /// The index of the entry, in the slice given.
        at: usize,
    },
    /// An existing file the page writer does not extend in place: why (see
    /// [`Existing::read`]).
    NotExtensible(String),
    /// A b-tree read from an existing file is not what SQLite writes: why (see
    /// [`TableRows`]).
    Malformed(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::RowidOrder { last, got } => write!(
                f,
                "rowid {got} after {last}: the direct writer needs rows in increasing rowid order"
            ),
            Error::PageSize(n) => {
                write!(f, "page size {n}: must be a power of two from 512 to 65536")
            }
            Error::NotARecord(why) => write!(f, "not an SQLite record: {why}"),
            Error::IndexOrder { at } => write!(
                f,
                "index entry {at} does not sort after the one before it: entries must come sorted and distinct"
            ),
            Error::NotExtensible(why) => {
                write!(f, "the file cannot be extended in place: {why}")
            }
            Error::Malformed(why) => write!(f, "the file is not what SQLite writes: {why}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}
