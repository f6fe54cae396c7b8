//! A rollback journal in SQLite's own format, for changes the page writer makes to a file
//! that exists ([`crate::DbWriter::extend`]): SQLite itself rolls such a change back when
//! it finds the journal hot, so a crash at any moment leaves the old file or the new one.
//!
//! The order of a change, as SQLite's pager makes it with `synchronous=FULL`:
//! 1. [`begin`]: the journal is written (a header whose record count is 0, then one
//!    record per page to be changed in place, holding its old contents) and synced, with
//!    its directory the first time; then the count is written and the journal synced
//!    again. Until that second sync, a crash leaves a journal of no records, which SQLite
//!    plays back as "cut the file to its old size".
//! 2. The new pages go past the old end (the caller's writer), and [`commit`] writes the
//!    pages changed in place and syncs the database.
//! 3. [`commit`] removes the journal and syncs its directory: the commit point. Before
//!    it, SQLite finds a hot journal (its first byte is not 0 and nobody holds a lock)
//!    and plays it back: every page as it was, the file cut to its old size.
//!
//! The format (fileformat2, "the rollback journal"; integers big-endian):
//!
//! | offset | size | value |
//! |---:|---:|---|
//! | 0 | 8 | magic `d9 d5 05 f9 20 a1 63 d7` |
//! | 8 | 4 | number of page records |
//! | 12 | 4 | nonce: the checksums' starting value |
//! | 16 | 4 | the database's size in pages before the change |
//! | 20 | 4 | sector size: the header is padded with zeros to this many bytes |
//! | 24 | 4 | page size |
//!
//! then each record: the page number (4), the page's old contents, and a checksum (4):
//! the nonce plus the page's bytes at offsets `page_size - 200`, `page_size - 400`, …
//! (every 200th byte from the end, while the offset is positive), as unsigned 32-bit sums.
//!
//! Every file operation goes through [`Files`]: [`DiskFiles`] on a real file, or a test's
//! model of a disk that can stop after any write or sync and lose what was not synced.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::existing::Existing;

/// The journal's first 8 bytes.
pub const MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// The header's size, padded: SQLite reads the sector size from the header, so any power
/// of two from 32 to 65536 does; 4096 is what SQLite itself writes on Linux.
pub const SECTOR: usize = 4096;

/// The file operations of a change in place, in the order they reach the disk only when
/// synced: the seam a crash test stops at.
pub trait Files {
    /// Writes `bytes` at `offset` of the database file.
    fn db_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Makes every write to the database file durable.
    fn db_sync(&mut self) -> io::Result<()>;
    /// Cuts the database file to `len` bytes.
    fn db_truncate(&mut self, len: u64) -> io::Result<()>;
    /// Writes `bytes` at `offset` of the journal, creating it empty if it is not there.
    fn journal_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// Makes every write to the journal durable, and (the first time) its directory
    /// entry.
    fn journal_sync(&mut self) -> io::Result<()>;
    /// Removes the journal and syncs its directory.
    fn journal_remove(&mut self) -> io::Result<()>;
}

/// The checksum of a page record.
pub fn checksum(nonce: u32, page: &[u8]) -> u32 {
    let mut sum = nonce;
    let mut i = page.len() as isize - 200;
    while i > 0 {
        sum = sum.wrapping_add(u32::from(page[i as usize]));
        i -= 200;
    }
    sum
}

/// Writes and syncs the journal of a change to `base`: its old size and the old contents
/// of every page the change may write in place ([`Existing::originals`]). Nothing of the
/// database is written before this returns.
pub fn begin<F: Files + ?Sized>(files: &mut F, base: &Existing, nonce: u32) -> io::Result<()> {
    let page_size = base.page_size;
    let mut header = vec![0u8; SECTOR];
    header[..8].copy_from_slice(&MAGIC);
    // 8..12: no record yet, until the records are durable.
    header[12..16].copy_from_slice(&nonce.to_be_bytes());
    header[16..20].copy_from_slice(&base.pages.to_be_bytes());
    header[20..24].copy_from_slice(&(SECTOR as u32).to_be_bytes());
    header[24..28].copy_from_slice(&(page_size as u32).to_be_bytes());
    files.journal_write(0, &header)?;
    let mut records = Vec::new();
    let mut count = 0u32;
    for (pgno, page) in base.originals() {
        records.extend_from_slice(&pgno.to_be_bytes());
        records.extend_from_slice(page);
        records.extend_from_slice(&checksum(nonce, page).to_be_bytes());
        count += 1;
    }
    files.journal_write(SECTOR as u64, &records)?;
    files.journal_sync()?;
    files.journal_write(8, &count.to_be_bytes())?;
    files.journal_sync()
}

/// Writes the pages changed in place (`changed`: page number and new contents, as
/// [`crate::DbWriter::finish_in_place`] returns them, every one journaled by [`begin`])
/// after the caller's writer has written and flushed the new pages, syncs the database,
/// and removes the journal: the commit point.
pub fn commit<F: Files + ?Sized>(
    files: &mut F,
    page_size: u32,
    changed: &[(u32, Vec<u8>)],
) -> io::Result<()> {
    for (pgno, page) in changed {
        files.db_write(u64::from(pgno - 1) * u64::from(page_size), page)?;
    }
    files.db_sync()?;
    files.journal_remove()
}

/// Undoes a change that has not committed, as SQLite would play its journal back: every
/// journaled page as it was, the file cut to its old size, synced, and the journal
/// removed.
pub fn roll_back<F: Files + ?Sized>(files: &mut F, base: &Existing) -> io::Result<()> {
    for (pgno, page) in base.originals() {
        files.db_write(u64::from(pgno - 1) * base.page_size as u64, page)?;
    }
    files.db_truncate(u64::from(base.pages) * base.page_size as u64)?;
    files.db_sync()?;
    files.journal_remove()
}

/// A nonce for a journal: not secret, only unlikely to match a stale journal's.
pub fn nonce() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}

/// [`Files`] on disk: the database through a descriptor the caller keeps open while it
/// changes the file under SQLite's lock (closing any descriptor of the file drops the
/// process's POSIX locks on it, SQLite's included), the journal beside it under SQLite's
/// name for it.
pub struct DiskFiles {
    db: File,
    journal_path: PathBuf,
    journal: Option<File>,
    dir_synced: bool,
}

impl DiskFiles {
    /// Opens the database at `path` for reading and writing (it must exist).
    pub fn open(path: &Path) -> io::Result<DiskFiles> {
        let db = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let mut journal_path = path.as_os_str().to_owned();
        journal_path.push("-journal");
        Ok(DiskFiles {
            db,
            journal_path: journal_path.into(),
            journal: None,
            dir_synced: false,
        })
    }

    /// The database's descriptor, to read it ([`Existing::read`]).
    pub fn db(&mut self) -> &mut File {
        &mut self.db
    }

    /// The journal's path: the database's with `-journal` added.
    pub fn journal_path(&self) -> &Path {
        &self.journal_path
    }

    fn sync_dir(&self) -> io::Result<()> {
        let dir = match self.journal_path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // Directories open read-only; where that is refused (not a Unix), none is synced.
        match File::open(dir) {
            Ok(d) => d.sync_all(),
            Err(_) => Ok(()),
        }
    }
}

#[cfg(unix)]
fn write_all_at(f: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, bytes, offset)
}

#[cfg(not(unix))]
fn write_all_at(mut f: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(bytes)
}

impl Files for DiskFiles {
    fn db_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        write_all_at(&self.db, bytes, offset)
    }

    fn db_sync(&mut self) -> io::Result<()> {
        self.db.sync_all()
    }

    fn db_truncate(&mut self, len: u64) -> io::Result<()> {
        self.db.set_len(len)
    }

    fn journal_write(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if self.journal.is_none() {
            // A journal left by a change that committed (SQLite's PERSIST and TRUNCATE
            // modes keep one whose header is zeroed) is emptied first.
            self.journal = Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&self.journal_path)?,
            );
        }
        write_all_at(self.journal.as_ref().expect("opened above"), bytes, offset)
    }

    fn journal_sync(&mut self) -> io::Result<()> {
        if let Some(j) = &self.journal {
            j.sync_all()?;
        }
        if !self.dir_synced {
            self.sync_dir()?;
            self.dir_synced = true;
        }
        Ok(())
    }

    fn journal_remove(&mut self) -> io::Result<()> {
        self.journal = None;
        match std::fs::remove_file(&self.journal_path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.sync_dir()
    }
}
