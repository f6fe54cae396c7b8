//! A table's spool file, written from memory: its bytes are held until it has
//! [`FLUSH_AT`] of them (or until the split says all tables together hold too many), then
//! appended to the file, opened for that write only. A document with thousands of
//! arrays (thousands of child tables) so holds no file open between writes (a load
//! of more tables than the process may open files at once), and no table holds a
//! buffer it does not fill.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// A table's bytes are appended to its file once it holds this many.
pub(super) const FLUSH_AT: usize = 1 << 20;

/// A spool file and the bytes written to it not yet in the file.
pub(super) struct SpoolFile {
    path: PathBuf,
    held: Vec<u8>,
}

impl SpoolFile {
    /// The spool at `path`, created empty (so that it exists, whatever is written).
    pub(super) fn create(path: PathBuf) -> Result<SpoolFile> {
        File::create(&path).map_err(|e| Error::io(Some(path.clone()), e))?;
        Ok(SpoolFile { path, held: vec![] })
    }

    /// Bytes written and not yet in the file.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }

    /// The memory its buffer takes (kept between writes, up to twice [`FLUSH_AT`]).
    pub(super) fn memory(&self) -> usize {
        self.held.capacity()
    }

    /// Appends the bytes held to the file and gives the buffer's memory back.
    pub(super) fn release(&mut self) -> Result<()> {
        self.append()
            .map_err(|e| Error::io(Some(self.path.clone()), e))?;
        self.held = Vec::new();
        Ok(())
    }

    fn append(&mut self) -> std::io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mut file = OpenOptions::new().append(true).open(&self.path)?;
        file.write_all(&self.held)?;
        // (A buffer a long row grew is not kept past the next rows' need.)
        self.held.clear();
        if self.held.capacity() > 2 * FLUSH_AT {
            self.held.shrink_to(FLUSH_AT);
        }
        Ok(())
    }
}

impl Write for SpoolFile {
    /// Holds `buf`, and appends what is held to the file once that is [`FLUSH_AT`].
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.held.extend_from_slice(buf);
        if self.held.len() >= FLUSH_AT {
            self.append()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.append()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_reach_the_file_in_order_when_held_past_the_bound_or_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.rows");
        let mut s = SpoolFile::create(path.clone()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        s.write_all(b"ab").unwrap();
        assert_eq!((s.held(), std::fs::read(&path).unwrap().len()), (2, 0));
        let big = vec![7u8; FLUSH_AT];
        s.write_all(&big).unwrap();
        assert_eq!(
            (s.held(), std::fs::read(&path).unwrap().len()),
            (0, FLUSH_AT + 2)
        );
        s.write_all(b"cd").unwrap();
        assert!(s.memory() >= FLUSH_AT);
        s.release().unwrap();
        assert_eq!(s.memory(), 0);
        let got = std::fs::read(&path).unwrap();
        assert_eq!((&got[..2], &got[got.len() - 2..]), (&b"ab"[..], &b"cd"[..]));
        assert_eq!(got.len(), FLUSH_AT + 4);
    }
}
