//! A SQLite database file read as it is stored: its tables' records and its indexes'
//! entries, page by page (`liteload_btree`'s readers), for a copy that moves them into
//! another file without decoding them.
//!
//! The snapshot: a read-only connection holds a read transaction on the file for as
//! long as the [`StoredFile`] lives (SQLite's SHARED lock), so no writer can change the
//! database file meanwhile (a writer needs the EXCLUSIVE lock to write it). That holds in
//! a rollback-journal mode only: in WAL mode the current pages may be in the WAL, so
//! such a file is refused here (and copied through SQLite instead), as is anything else
//! `liteload_btree::Existing` does not read (reserved bytes per page, another text
//! encoding than UTF-8, auto-vacuum, a header whose size is not current).
//!
//! Closing any descriptor of a file drops the process's POSIX locks on it, SQLite's
//! among them: the descriptor opened here is closed before the connection ends its
//! transaction (the fields are dropped in that order), so the lock outlives it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use liteload_btree::{Existing, OldEntries, TableRows};
use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::schema::quote_ident;

/// A database file under a read transaction, its pages read as stored (see the module
/// notes). Made by [`StoredFile::open`].
pub(crate) struct StoredFile {
    // Dropped first: the descriptor closes while the connection still holds its lock.
    file: File,
    header: Existing,
    conn: Connection,
    path: PathBuf,
}

/// An object of the file's schema, as `sqlite_schema` holds it.
#[derive(Clone, Debug)]
pub(crate) struct SchemaRow {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) table: String,
    pub(crate) root: u32,
    /// `None` for an index SQLite makes for a UNIQUE or PRIMARY KEY constraint.
    pub(crate) sql: Option<String>,
}

impl StoredFile {
    /// Opens the database at `path` read-only and begins a read transaction on it.
    /// `Ok(Err(why))`: the file is not one this reader takes (see the module notes).
    pub(crate) fn open(path: &Path) -> Result<std::result::Result<StoredFile, String>> {
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| Error::sqlite(format!("opening {shown}"), e))?;
        let err = |e| Error::sqlite(format!("reading {shown}"), e);
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(err)?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(Err(format!("{shown} is in WAL mode")));
        }
        // The lock is taken by the first read, and held to the transaction's end.
        conn.execute_batch("BEGIN").map_err(err)?;
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(err)?;
        let mut file = File::open(path).map_err(|e| Error::io(Some(path.to_path_buf()), e))?;
        let header = match Existing::read(&mut file) {
            Ok(h) => h,
            Err(liteload_btree::Error::Io(e)) => {
                return Err(Error::io(Some(path.to_path_buf()), e))
            }
            Err(e) => return Ok(Err(format!("{shown}: {e}"))),
        };
        Ok(Ok(StoredFile {
            file,
            header,
            conn,
            path: path.to_path_buf(),
        }))
    }

    /// The file's schema rows, in rowid order.
    pub(crate) fn schema(&self) -> Result<Vec<SchemaRow>> {
        self.conn
            .prepare("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema ORDER BY rowid")
            .and_then(|mut st| {
                st.query_map([], |r| {
                    Ok(SchemaRow {
                        kind: r.get(0)?,
                        name: r.get(1)?,
                        table: r.get(2)?,
                        root: r.get::<_, Option<u32>>(3)?.unwrap_or(0),
                        sql: r.get(4)?,
                    })
                })?
                .collect()
            })
            .map_err(|e| self.sqlite_error("reading the schema", e))
    }

    /// Table `table`'s smallest and largest rowid (`None`: no row), read by `rowid`
    /// (`rowid`, `oid` or `_rowid_`: a name no column of the table takes): two b-tree
    /// descents, not a scan.
    pub(crate) fn rowid_range(&self, table: &str, rowid: &str) -> Result<Option<(i64, i64)>> {
        debug_assert!(matches!(rowid, "rowid" | "oid" | "_rowid_"));
        let sql = format!(
            "SELECT (SELECT min({rowid}) FROM main.{t}), (SELECT max({rowid}) FROM main.{t})",
            t = quote_ident(table)
        );
        let (lo, hi): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sqlite_error("reading a table's rowids", e))?;
        Ok(lo.zip(hi))
    }

    /// The file's pages, to be read on any thread.
    pub(crate) fn pages(&self) -> Pages<'_> {
        Pages {
            file: &self.file,
            header: &self.header,
            path: &self.path,
        }
    }

    fn sqlite_error(&self, what: &str, e: rusqlite::Error) -> Error {
        Error::sqlite(format!("{}: {what}", self.path.display()), e)
    }
}

/// The pages of a [`StoredFile`], read at given offsets (each reader keeps its own
/// position), so that several threads may read one file at once.
#[derive(Clone, Copy)]
pub(crate) struct Pages<'a> {
    file: &'a File,
    header: &'a Existing,
    path: &'a Path,
}

impl<'a> Pages<'a> {
    /// The rows of the table whose b-tree is rooted at `root`, as stored, in rowid order.
    pub(crate) fn rows(&self, root: u32) -> Result<TableRows<At<'a>>> {
        self.header
            .table_rows(At::new(self.file), root)
            .map_err(|e| self.btree_error(e))
    }

    /// The entries of the index whose b-tree is rooted at `root`, in its order.
    pub(crate) fn entries(&self, root: u32) -> Result<OldEntries<At<'a>>> {
        self.header
            .index_entries(At::new(self.file), root)
            .map_err(|e| self.btree_error(e))
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &'a Path {
        self.path
    }

    /// An error of reading this file's pages, naming it.
    pub(crate) fn btree_error(&self, e: liteload_btree::Error) -> Error {
        match e {
            liteload_btree::Error::Io(e) => Error::io(Some(self.path.to_path_buf()), e),
            e => Error::schema(format!("{}: {e}", self.path.display())),
        }
    }
}

/// A reader of a shared file at a position of its own: each read is positioned
/// (`pread`), so readers on several threads do not move one another's place, and a
/// page costs one call rather than a seek and a read.
pub(crate) struct At<'a> {
    file: &'a File,
    pos: u64,
}

impl<'a> At<'a> {
    fn new(file: &'a File) -> Self {
        At { file, pos: 0 }
    }
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, self.pos)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for At<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let len = || self.file.metadata().map(|m| m.len());
        let next = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => len()?.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = next.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "a seek before the start")
        })?;
        Ok(self.pos)
    }
}
