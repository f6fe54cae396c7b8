//! [`ParallelDelimited`]: one delimited file parsed by several threads at once, handing
//! out exactly the rows, errors and numbering that [`DelimitedSource`] alone would.
//!
//! The header and the sample are read by one ordinary source (the *head*). The rest of
//! the file is cut into chunks of about [`CHUNK_BYTES`], each ending just after a `\n`;
//! chunk `j` is parsed by thread `j % threads`, and the chunks are handed out in order.
//!
//! Why this gives the sequential result: a chunk parsed from a true record boundary
//! makes the same records as the sequential parse up to its end, and its end is a true
//! boundary unless a quoted field runs across it, in which case the chunk's parse hits
//! its end inside quotes and fails. Chunk 0 starts where the head stopped, a true
//! boundary; so, in order, every chunk whose predecessors parsed cleanly starts on one.
//!
//! A worker cannot number lines (it does not know how many came before), so it numbers
//! from 1, and the rows of a clean chunk are renumbered when it is handed out. A chunk
//! with anything to report — a bad record, a value not of its column's type, a parse
//! error — is parsed again, in order, by a resumed sequential source that numbers
//! exactly and reports through the caller's `bad`; after a parse error (perhaps a quoted
//! field across the chunk's end) that source reads on to the end of the file.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::delimited::Resume;
use super::tabular::DelimitedSource;
use super::{BadRecord, Fill, Mismatches, ReadOptions, Sample, Source};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::types::ColumnType;

/// Bytes per chunk (a chunk runs on to the end of the line this falls in): small enough
/// that a chunk's batch stays in the tens of MB, large enough that opening it is noise.
pub const CHUNK_BYTES: u64 = 2 << 20;

type Reader = Box<dyn Read + Send>;

/// A chunk of the decoded input: bytes `start..end`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chunk {
    pub(super) start: u64,
    pub(super) end: u64,
}

/// What a worker made of a chunk.
enum Parsed {
    /// Nothing to report. Lines and records are numbered from 1 (chunk 0: exactly).
    Clean {
        batch: Batch,
        lines: u64,
        records: u64,
    },
    /// To be parsed again in order; `to_end`: a parse error, so on to the end of file.
    Again { to_end: bool },
}

enum Phase {
    Head,
    Chunks {
        chunks: Vec<Chunk>,
        next: usize,
        lanes: Vec<(Receiver<Parsed>, Sender<Batch>)>,
        /// Where chunk `next` starts, numbered exactly.
        at: Resume,
        /// A chunk being parsed again.
        again: Option<DelimitedSource<Reader>>,
    },
    Rest(DelimitedSource<Reader>),
    Done,
}

/// See the module comment. Made by [`ParallelDelimited::new`] for a regular file.
pub struct ParallelDelimited {
    head: DelimitedSource<Reader>,
    path: PathBuf,
    name: Arc<str>,
    opts: ReadOptions,
    threads: usize,
    chunk_bytes: u64,
    /// Bytes of the file before the decoded input (a UTF-8 byte-order mark).
    base: u64,
    bytes_read: Arc<AtomicU64>,
    types: Vec<ColumnType>,
    /// Records handed out or numbered so far, outside the head.
    records: u64,
    phase: Phase,
    /// Of the sources that are done.
    finished: Mismatches,
    /// Of all: `finished` and the source reading now.
    mismatches: Mismatches,
    workers: Vec<JoinHandle<()>>,
}

/// The file `path` from decoded offset `from` (file offset `from + base`), `len` bytes.
pub(super) fn range(path: &Path, base: u64, from: u64, len: u64) -> io::Result<Reader> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(base + from))?;
    Ok(Box::new(f.take(len)))
}

/// Whether the file starts with a UTF-8 byte-order mark (which the head's reader skips).
pub(super) fn bom_len(path: &Path) -> io::Result<u64> {
    let mut head = [0u8; 3];
    let mut f = File::open(path)?;
    let mut got = 0;
    while got < 3 {
        match f.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(if got == 3 && head == [0xEF, 0xBB, 0xBF] {
        3
    } else {
        0
    })
}

/// Cuts decoded bytes `from..len` into chunks of about `size`, each ending after a `\n`
/// (the last at the end of the file).
pub(super) fn plan(
    path: &Path,
    base: u64,
    from: u64,
    len: u64,
    size: u64,
) -> io::Result<Vec<Chunk>> {
    let mut f = File::open(path)?;
    let mut chunks = vec![];
    let mut start = from;
    let mut buf = vec![0u8; 64 << 10];
    while start < len {
        let mut probe = start + size;
        let end = loop {
            if probe >= len {
                break len;
            }
            f.seek(SeekFrom::Start(base + probe))?;
            let n = f.read(&mut buf)?;
            if n == 0 {
                break len;
            }
            match memchr::memchr(b'\n', &buf[..n]) {
                Some(i) => break probe + i as u64 + 1,
                None => probe += n as u64,
            }
        };
        chunks.push(Chunk { start, end });
        start = end;
    }
    Ok(chunks)
}

impl ParallelDelimited {
    /// A source for the regular file `path` (UTF-8, not compressed) read with `opts` by
    /// `threads` threads. `bytes_read` counts the input read, as for other sources.
    pub fn new(
        path: &Path,
        name: Arc<str>,
        opts: ReadOptions,
        threads: usize,
        bytes_read: Arc<AtomicU64>,
    ) -> Result<Self> {
        let io = |e| Error::io(Some(path.to_path_buf()), e);
        let base = bom_len(path).map_err(io)?;
        let head = range(path, base, 0, u64::MAX).map_err(io)?;
        Ok(ParallelDelimited {
            head: DelimitedSource::new(head, name.clone(), opts.clone()),
            path: path.to_path_buf(),
            name,
            opts,
            threads: threads.max(1),
            chunk_bytes: CHUNK_BYTES,
            base,
            bytes_read,
            types: vec![],
            records: 0,
            phase: Phase::Head,
            finished: Mismatches::default(),
            mismatches: Mismatches::default(),
            workers: vec![],
        })
    }

    /// Chunks of about `bytes` instead of [`CHUNK_BYTES`] (tests use tiny ones).
    pub fn with_chunk_bytes(mut self, bytes: u64) -> Self {
        self.chunk_bytes = bytes.max(1);
        self
    }

    /// Plans the chunks after the head and starts the workers.
    fn start_chunks(&mut self) -> Result<()> {
        let io = |e| Error::io(Some(self.path.clone()), e);
        let len = std::fs::metadata(&self.path).map_err(io)?.len() - self.base;
        let at = self.head.resume_point();
        self.records = self.head.records();
        let chunks = plan(&self.path, self.base, at.byte, len, self.chunk_bytes).map_err(io)?;
        let threads = self.threads.min(chunks.len().max(1));
        let mut lanes = vec![];
        for k in 0..threads {
            let (tx, rx) = bounded::<Parsed>(2);
            // Batches handed out come back emptied, so a worker reuses their memory.
            let (back, back_rx) = unbounded::<Batch>();
            lanes.push((rx, back));
            let job = Job {
                path: self.path.clone(),
                name: self.name.clone(),
                opts: self.opts.clone(),
                columns: self.head.columns().to_vec(),
                types: self.types.clone(),
                base: self.base,
                first: (at, self.records),
            };
            let mine: Vec<(usize, Chunk)> = chunks
                .iter()
                .copied()
                .enumerate()
                .skip(k)
                .step_by(threads)
                .collect();
            let handle = std::thread::Builder::new()
                .name("liteload-parse".into())
                .spawn(move || {
                    for (j, chunk) in mine {
                        let batch = back_rx.try_recv().unwrap_or_default();
                        if tx.send(job.parse(j, chunk, batch)).is_err() {
                            return; // the reader stopped
                        }
                    }
                })
                .map_err(|e| Error::io(None, e))?;
            self.workers.push(handle);
        }
        self.phase = Phase::Chunks {
            chunks,
            next: 0,
            lanes,
            at,
            again: None,
        };
        Ok(())
    }

    /// A sequential source from `at` for `len` bytes, numbering records after `records`.
    fn resumed(&self, at: Resume, len: u64, records: u64) -> Result<DelimitedSource<Reader>> {
        let rdr = range(&self.path, self.base, at.byte, len)
            .map_err(|e| Error::io(Some(self.path.clone()), e))?;
        Ok(DelimitedSource::resumed(
            rdr,
            self.name.clone(),
            self.opts.clone(),
            self.head.columns().to_vec(),
            self.types.clone(),
            at,
            records,
        ))
    }

    /// Makes `mismatches` the finished sources' plus the current one's.
    fn sync_mismatches(&mut self) {
        let mut all = self.finished.clone();
        match &self.phase {
            Phase::Head => add(&mut all, self.head.mismatches()),
            Phase::Chunks {
                again: Some(src), ..
            }
            | Phase::Rest(src) => add(&mut all, src.mismatches()),
            _ => {}
        }
        self.mismatches = all;
    }

    fn fill_chunks(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        loop {
            match &mut self.phase {
                Phase::Head => {
                    let f = self.head.fill(batch, max_rows, max_text, bad)?;
                    if f != Fill::Done {
                        return Ok(f);
                    }
                    let m = self.head.mismatches().clone();
                    add(&mut self.finished, &m);
                    self.start_chunks()?;
                    if !batch.is_empty() {
                        return Ok(Fill::Full);
                    }
                }
                Phase::Chunks {
                    chunks,
                    next,
                    lanes,
                    at,
                    again,
                } => {
                    if let Some(src) = again {
                        let f = src.fill(batch, max_rows, max_text, bad)?;
                        if f != Fill::Done {
                            return Ok(f);
                        }
                        *at = src.resume_point();
                        self.records = src.records();
                        let m = src.mismatches().clone();
                        *again = None;
                        *next += 1;
                        add(&mut self.finished, &m);
                        if !batch.is_empty() {
                            return Ok(Fill::Full);
                        }
                        continue;
                    }
                    if *next == chunks.len() {
                        self.stop_workers();
                        self.phase = Phase::Done;
                        return Ok(Fill::Done);
                    }
                    if !batch.is_empty() {
                        return Ok(Fill::Full);
                    }
                    let chunk = chunks[*next];
                    let (lane, back) = &lanes[*next % lanes.len()];
                    let parsed = lane
                        .recv()
                        .map_err(|_| Error::internal("a parsing thread stopped early"))?;
                    match parsed {
                        Parsed::Clean {
                            batch: mut got,
                            lines,
                            records,
                        } => {
                            if *next > 0 {
                                got.shift_origins(at.line - 1, self.records);
                            }
                            std::mem::swap(batch, &mut got);
                            let _ = back.send(got);
                            at.line += lines;
                            at.byte = chunk.end;
                            at.line_start = chunk.end;
                            at.after_cr = false;
                            self.records += records;
                            *next += 1;
                            self.bytes_read
                                .store(self.base + chunk.end, Ordering::Relaxed);
                            return Ok(Fill::Full);
                        }
                        Parsed::Again { to_end: false } => {
                            let (at, len) = (*at, chunk.end - chunk.start);
                            let src = self.resumed(at, len, self.records)?;
                            if let Phase::Chunks { again, .. } = &mut self.phase {
                                *again = Some(src);
                            }
                        }
                        Parsed::Again { to_end: true } => {
                            let at = *at;
                            let src = self.resumed(at, u64::MAX, self.records)?;
                            self.stop_workers();
                            self.phase = Phase::Rest(src);
                        }
                    }
                }
                Phase::Rest(src) => {
                    let f = src.fill(batch, max_rows, max_text, bad)?;
                    if f == Fill::Done {
                        let m = src.mismatches().clone();
                        add(&mut self.finished, &m);
                        self.phase = Phase::Done;
                    }
                    return Ok(f);
                }
                Phase::Done => return Ok(Fill::Done),
            }
        }
    }

    fn stop_workers(&mut self) {
        if let Phase::Chunks { lanes, .. } = &mut self.phase {
            lanes.clear();
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

fn add(to: &mut Mismatches, m: &Mismatches) {
    to.count += m.count;
    if to.first.is_none() {
        to.first.clone_from(&m.first);
    }
}

/// What a worker needs to parse chunks on its own.
struct Job {
    path: PathBuf,
    name: Arc<str>,
    opts: ReadOptions,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    base: u64,
    /// Where chunk 0 starts, and the records before it.
    first: (Resume, u64),
}

impl Job {
    fn parse(&self, j: usize, chunk: Chunk, mut batch: Batch) -> Parsed {
        let (at, records) = if j == 0 {
            self.first
        } else {
            let at = Resume {
                byte: chunk.start,
                line: 1,
                line_start: chunk.start,
                after_cr: false,
                keep_blank: self.first.0.keep_blank,
            };
            (at, 0)
        };
        let Ok(rdr) = range(&self.path, self.base, chunk.start, chunk.end - chunk.start) else {
            return Parsed::Again { to_end: true };
        };
        let mut src = DelimitedSource::resumed(
            rdr,
            self.name.clone(),
            self.opts.clone(),
            self.columns.clone(),
            self.types.clone(),
            at,
            records,
        );
        batch.clear(self.columns.len());
        // Parsed to the end even past a bad record: only a parse that reaches the end
        // shows that the chunk ends between records.
        let mut bad_seen = false;
        let mut bad = |_: BadRecord| {
            bad_seen = true;
            Ok(())
        };
        match src.fill(&mut batch, usize::MAX, usize::MAX, &mut bad) {
            Ok(Fill::Done) if !bad_seen && src.mismatches().count == 0 => Parsed::Clean {
                batch,
                lines: src.resume_point().line - at.line,
                records: src.records() - records,
            },
            Ok(Fill::Done) => Parsed::Again { to_end: false },
            Ok(_) | Err(_) => Parsed::Again { to_end: true },
        }
    }
}

impl Source for ParallelDelimited {
    fn sample(&mut self) -> Result<Sample> {
        let sample = self.head.sample()?;
        self.head.stop_after_sample();
        Ok(sample)
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types.clone_from(&types);
        self.head.set_types(types);
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        let r = self.fill_chunks(batch, max_rows, max_text, bad);
        self.sync_mismatches();
        r
    }

    fn width(&self) -> usize {
        self.head.width()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    /// Before the first `fill` only (the workers take the options when they start).
    fn make_records(&mut self) -> bool {
        if !matches!(self.phase, Phase::Head) {
            return false;
        }
        self.opts.records = true;
        self.head.make_records()
    }
}

impl Drop for ParallelDelimited {
    fn drop(&mut self) {
        self.stop_workers();
    }
}

#[cfg(test)]
mod tests {
    use super::super::outcome::{drain, Outcome};
    use super::*;
    use crate::source::Ragged;
    use proptest::prelude::*;

    fn both(text: &[u8], chunk: u64, threads: usize, opts: &ReadOptions) -> (Outcome, Outcome) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("in.csv");
        std::fs::write(&p, text).unwrap();
        let name: Arc<str> = "in.csv".into();
        let input = super::super::Input::Path(p.clone());
        let reader =
            super::super::input::open(&input, opts.encoding, Arc::new(AtomicU64::new(0)), None)
                .unwrap();
        let mut seq = DelimitedSource::new(reader, name.clone(), opts.clone());
        let mut par =
            ParallelDelimited::new(&p, name, opts.clone(), threads, Arc::new(AtomicU64::new(0)))
                .unwrap()
                .with_chunk_bytes(chunk);
        (drain(&mut seq, 3), drain(&mut par, 3))
    }

    fn opts(sample_rows: usize) -> ReadOptions {
        ReadOptions {
            sample_rows,
            ragged: Ragged::Error,
            ..ReadOptions::default()
        }
    }

    #[test]
    fn clean_rows_come_out_in_order_and_numbered_as_one_reader_numbers_them() {
        let mut text = String::from("\u{feff}id,name,score\r\n");
        for i in 0..500 {
            text.push_str(&format!("{i},name {i},{}.5\r\n", i % 7));
            if i % 50 == 0 {
                text.push_str("\r\n"); // a blank line
            }
        }
        for chunk in [1, 10, 64, 1000, 1 << 20] {
            let (seq, par) = both(text.as_bytes(), chunk, 3, &opts(20));
            assert_eq!(seq.rows.len(), 500);
            assert_eq!(par, seq, "chunks of {chunk}");
        }
    }

    #[test]
    fn a_quoted_field_across_a_chunk_end_and_bad_records_read_as_one_reader_reads_them() {
        let mut text = String::from("a,b\n");
        for i in 0..300 {
            match i % 37 {
                3 => text.push_str(&format!("{i},\"two\nlines, and a comma\"\n")),
                9 => text.push_str(&format!("{i},x,extra\n")), // a bad record
                17 => text.push_str(&format!("text{i},y\n")),  // a type mismatch
                _ => text.push_str(&format!("{i},\"q{i}\"\n")),
            }
        }
        for chunk in [1, 5, 33, 100, 4096] {
            let (seq, par) = both(text.as_bytes(), chunk, 2, &opts(10));
            assert!(!seq.bad.is_empty() && seq.mismatches.0 > 0);
            assert_eq!(par, seq, "chunks of {chunk}");
        }
    }

    #[test]
    fn an_unterminated_quote_is_the_same_error() {
        let mut text = String::from("a,b\n");
        for i in 0..100 {
            text.push_str(&format!("{i},v\n"));
        }
        text.push_str("1,\"never closed\n2,3\n");
        let (seq, par) = both(text.as_bytes(), 16, 2, &opts(5));
        assert!(seq.error.is_some());
        assert_eq!(par, seq);
    }

    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => (0i64..1000).prop_map(|i| i.to_string()),
            2 => "[a-z ]{0,6}",
            1 => Just("\"x,\ny\"".to_string()),
            1 => Just("\"say \"\"hi\"\"\"".to_string()),
            1 => Just(String::new()),
            1 => Just("1.5".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn any_input_reads_as_one_reader_reads_it(
            rows in prop::collection::vec(prop::collection::vec(field(), 1..4), 0..60),
            width in 1usize..4,
            blank in prop::collection::vec(any::<bool>(), 60),
            crlf in any::<bool>(),
            chunk in 1u64..200,
            threads in 1usize..4,
            sample in 1usize..20,
        ) {
            // One column keeps blank lines as records; several skip them.
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = ["a", "b", "c"][..width].join(",") + eol;
            for (r, blank) in rows.iter().zip(&blank) {
                text.push_str(&r.join(","));
                text.push_str(eol);
                if *blank {
                    text.push_str(eol);
                }
            }
            let (seq, par) = both(text.as_bytes(), chunk, threads, &opts(sample));
            prop_assert_eq!(par, seq);
        }
    }
}
