//! [`SeqFile`]: a new file written front to back in large blocks, by a thread of its own,
//! around the page cache where the system allows it.
//!
//! A b-tree written bottom-up is one long sequential write that nobody reads back before
//! it is synced. Through the page cache every byte is copied into the kernel and written
//! again at `fsync`; on the machines this was measured on that copy cost more than the
//! disk (100M rows: 32% of all CPU samples were the kernel's copy; `dd` of 1.9 GB took
//! 1.9 to 6.3 s buffered and 0.6 to 1.2 s with `oflag=direct`). So on Linux full blocks
//! go out with `O_DIRECT` from aligned buffers, while the caller fills the next block.
//! Where `O_DIRECT` is refused (another system, a file system without it, such as tmpfs),
//! the same blocks go through the ordinary handle: slower, never wrong.
//!
//! Invariants: bytes reach the file in the order written; a block written with
//! `O_DIRECT` starts at a multiple of [`ALIGN`] (of [`BLOCK`] in a new file, which is
//! written from 0) and is [`BLOCK`] bytes long, from a buffer
//! aligned to [`ALIGN`]. The first `seek` or `flush` writes out everything held (the part
//! past the last whole block through the ordinary handle) and from then on every write
//! goes straight through the ordinary handle: correct for any use, fast for the one
//! sequential pass that matters. Errors of the writing thread are returned by the next
//! call that hands it work, or by `flush`.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;
use std::thread::JoinHandle;

/// Bytes per block handed to the writing thread.
pub const BLOCK: usize = 8 << 20;

/// Alignment of the blocks' memory and file offsets: a page of memory, and a multiple of
/// the logical block size of the disks we know.
pub const ALIGN: usize = 4096;

/// Blocks in flight: one being filled, two queued or being written.
const DEPTH: usize = 2;

/// A buffer of [`BLOCK`] bytes whose start is aligned to [`ALIGN`] (a slice of a larger
/// allocation, so no unsafe code is needed).
struct Block {
    mem: Vec<u8>,
    start: usize,
}

impl Block {
    fn new() -> Block {
        let mem = vec![0u8; BLOCK + ALIGN];
        let start = mem.as_ptr().align_offset(ALIGN);
        debug_assert!(start < ALIGN);
        Block { mem, start }
    }

    fn bytes(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.start + BLOCK]
    }
}

/// Work for the writing thread: a full block at a file offset.
struct Job {
    block: Block,
    offset: u64,
}

/// A file written sequentially in [`BLOCK`]-sized pieces by a background thread. See the
/// module comment for when it bypasses the page cache.
pub struct SeqFile {
    file: File,
    /// The block being filled, and how many bytes of it are used.
    block: Option<Block>,
    used: usize,
    /// The file offset of the block being filled (sequential) or of the next write (after
    /// the first seek or flush).
    pos: u64,
    to_writer: Option<crossbeam_channel::Sender<Job>>,
    from_writer: crossbeam_channel::Receiver<io::Result<Block>>,
    thread: Option<JoinHandle<Vec<File>>>,
    /// The writing thread's descriptors once it ended, closed when this is dropped.
    ended: Vec<File>,
}

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}

#[cfg(unix)]
fn write_at(f: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, offset)
}

#[cfg(not(unix))]
fn write_at(f: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    let mut f = f;
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(buf)
}

/// The writing thread: each block through `direct` if it has one and it takes the
/// block, else through `plain` (after the first refusal, always `plain`). Returns its
/// descriptors when it ends, never closing one itself: closing any descriptor of a file
/// drops the process's POSIX locks on it (SQLite's, for a file extended in place), so
/// they close only when the [`SeqFile`] is dropped.
fn writer(
    mut direct: Option<File>,
    plain: File,
    jobs: crossbeam_channel::Receiver<Job>,
    done: crossbeam_channel::Sender<io::Result<Block>>,
) -> Vec<File> {
    let mut refused = None;
    for mut job in jobs {
        let offset = job.offset;
        let bytes = job.block.bytes();
        let r = match direct.as_ref().map(|d| write_at(d, bytes, offset)) {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) if e.raw_os_error() == Some(22) => {
                // EINVAL: this file system does not take O_DIRECT writes.
                refused = direct.take();
                write_at(&plain, bytes, offset)
            }
            Some(Err(e)) => Err(e),
            None => write_at(&plain, bytes, offset),
        };
        let failed = r.is_err();
        if done.send(r.map(|()| job.block)).is_err() || failed {
            break;
        }
    }
    direct.into_iter().chain(refused).chain([plain]).collect()
}

impl SeqFile {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> io::Result<SeqFile> {
        Self::open(path, true)
    }

    /// Creates (or truncates) the file at `path`, written through the page cache: for a
    /// file read back at once and then removed (it may never reach the disk), where
    /// `O_DIRECT` would make the reader fetch every block from the disk again.
    pub fn create_buffered(path: &Path) -> io::Result<SeqFile> {
        Self::open(path, false)
    }

    /// Opens the existing file at `path` to write from `offset` on (its old bytes before
    /// it are never written; none is removed): for new pages past the end of a database
    /// that is extended in place. No advisory lock is taken: the caller holds SQLite's.
    /// Blocks go out with `O_DIRECT` when `offset` is aligned as the disk requires, else
    /// through the page cache. The caller must keep the returned value (and so its
    /// descriptors) while it changes the file under SQLite's lock: closing any
    /// descriptor of a file drops the process's POSIX locks on it.
    pub fn extend(path: &Path, offset: u64) -> io::Result<SeqFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let direct = if offset.is_multiple_of(ALIGN as u64) {
            open_direct(path)
        } else {
            None
        };
        Self::start(file, direct, offset)
    }

    fn open(path: &Path, direct_io: bool) -> io::Result<SeqFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // An exclusive advisory lock (flock) for as long as this writer lives, taken
        // before the file is emptied: another process that finds the file (a second
        // run, or one clearing what a killed run left) sees it in use instead of
        // removing or truncating it. Where the file system has no such locks, none.
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{}: another process is writing this file", path.display()),
                ))
            }
            Err(std::fs::TryLockError::Error(_)) => {}
        }
        file.set_len(0)?;
        let direct = if direct_io { open_direct(path) } else { None };
        Self::start(file, direct, 0)
    }

    /// The writer of `file` from `offset` on, its blocks through `direct` where given.
    fn start(file: File, direct: Option<File>, offset: u64) -> io::Result<SeqFile> {
        let plain = file.try_clone()?;
        let (to_writer, jobs) = crossbeam_channel::bounded(DEPTH);
        let (done, from_writer) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new()
            .name("liteload-btree-write".into())
            .spawn(move || writer(direct, plain, jobs, done))?;
        Ok(SeqFile {
            file,
            block: Some(Block::new()),
            used: 0,
            pos: offset,
            to_writer: Some(to_writer),
            from_writer,
            thread: Some(thread),
            ended: vec![],
        })
    }

    /// Writes out everything held, then syncs the file's data and metadata to the disk.
    pub fn sync_all(&mut self) -> io::Result<()> {
        self.settle()?;
        self.file.sync_all()
    }

    /// Whether writes still go to the writing thread (no seek or flush yet).
    fn sequential(&self) -> bool {
        self.to_writer.is_some()
    }

    /// Hands the full block to the writing thread and takes an empty one: a recycled
    /// block once [`DEPTH`] are in flight, a new one before.
    fn send_block(&mut self) -> io::Result<()> {
        debug_assert_eq!(self.used, BLOCK);
        let block = self.block.take().expect("a block is being filled");
        let tx = self.to_writer.as_ref().expect("sequential");
        if tx
            .send(Job {
                block,
                offset: self.pos,
            })
            .is_err()
        {
            return Err(self.thread_error());
        }
        self.pos += BLOCK as u64;
        self.used = 0;
        let next = match self.from_writer.try_recv() {
            Ok(r) => r?,
            Err(_) if tx.len() < DEPTH => Block::new(),
            Err(_) => self
                .from_writer
                .recv()
                .map_err(|_| io::Error::other("the writing thread stopped"))??,
        };
        self.block = Some(next);
        Ok(())
    }

    /// The error that stopped the writing thread.
    fn thread_error(&mut self) -> io::Error {
        self.to_writer = None;
        for r in self.from_writer.iter() {
            if let Err(e) = r {
                return e;
            }
        }
        io::Error::other("the writing thread stopped")
    }

    /// Ends the sequential phase: waits for the writing thread to write every block, then
    /// writes the bytes of the unfinished block through the ordinary handle.
    fn settle(&mut self) -> io::Result<()> {
        let Some(tx) = self.to_writer.take() else {
            return Ok(());
        };
        drop(tx);
        let mut first_error = None;
        for r in self.from_writer.iter() {
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        if let Some(t) = self.thread.take() {
            let files = t
                .join()
                .map_err(|_| io::Error::other("the writing thread panicked"))?;
            self.ended.extend(files);
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        if let Some(mut block) = self.block.take() {
            let used = self.used;
            write_at(&self.file, &block.bytes()[..used], self.pos)?;
            self.pos += used as u64;
            self.used = 0;
        }
        Ok(())
    }
}

impl Write for SeqFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.sequential() {
            write_at(&self.file, buf, self.pos)?;
            self.pos += buf.len() as u64;
            return Ok(buf.len());
        }
        let used = self.used;
        let n = buf.len().min(BLOCK - used);
        let block = self.block.as_mut().expect("a block is being filled");
        block.bytes()[used..used + n].copy_from_slice(&buf[..n]);
        self.used += n;
        if self.used == BLOCK {
            self.send_block()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.settle()
    }
}

impl Seek for SeqFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.settle()?;
        self.pos = match to {
            SeekFrom::Start(p) => p,
            SeekFrom::End(d) => self
                .file
                .metadata()?
                .len()
                .checked_add_signed(d)
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "seek before the start")
                })?,
            SeekFrom::Current(d) => self.pos.checked_add_signed(d).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "seek before the start")
            })?,
        };
        Ok(self.pos)
    }
}

impl Drop for SeqFile {
    /// Writes out what is held, as a `BufWriter` does; errors are lost here, so call
    /// `flush` to see them.
    fn drop(&mut self) {
        let _ = self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_arrive_in_order_across_blocks_and_after_a_seek() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = SeqFile::create(&p).unwrap();
        // Pieces of awkward sizes, over several blocks, then an unfinished one.
        let total = 3 * BLOCK + 12_345;
        let data: Vec<u8> = (0..total).map(|i| (i * 7 + i / 4096) as u8).collect();
        for piece in data.chunks(4093) {
            f.write_all(piece).unwrap();
        }
        f.seek(SeekFrom::Start(10)).unwrap();
        f.write_all(b"rewritten").unwrap();
        f.seek(SeekFrom::End(0)).unwrap();
        f.write_all(b"tail").unwrap();
        f.flush().unwrap();
        drop(f);
        let got = std::fs::read(&p).unwrap();
        let mut want = data;
        want[10..19].copy_from_slice(b"rewritten");
        want.extend_from_slice(b"tail");
        assert_eq!(got.len(), want.len());
        assert!(got == want, "file contents differ");
    }

    /// tmpfs takes no `O_DIRECT`: the blocks must go through the ordinary handle.
    #[test]
    fn a_file_system_without_direct_io_gets_the_same_bytes() {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return;
        }
        let dir = tempfile::tempdir_in(shm).unwrap();
        let p = dir.path().join("f");
        let mut f = SeqFile::create(&p).unwrap();
        let data: Vec<u8> = (0..2 * BLOCK + 5).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        drop(f);
        assert!(std::fs::read(&p).unwrap() == data);
    }

    #[test]
    fn dropping_writes_out_what_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = SeqFile::create(&p).unwrap();
        f.write_all(&vec![5u8; BLOCK + 3]).unwrap();
        drop(f);
        let got = std::fs::read(&p).unwrap();
        assert_eq!(got.len(), BLOCK + 3);
        assert!(got.iter().all(|&b| b == 5));
    }
}
