//! JSON read by several threads at once, handing out exactly the rows, bad records,
//! mismatches and numbering that [`JsonSource`](super::JsonSource) alone would.
//!
//! The source reads the sample itself (the head). The rest of the file is cut into
//! chunks of about [`CHUNK_BYTES_JSON`], each ending at a record boundary:
//! - newline-delimited JSON just after a `\n` (a line is a record);
//! - one JSON array just before a `,` between two elements, found by a planning thread
//!   that scans the file once, tracking strings (and their escapes) and nesting, and
//!   notes where each element starts (line, byte column) and ends.
//!
//! Chunk `j` is read by thread `j % threads`, record by record through the fast path
//! (see [`FastRow`]), against the columns known when the thread started the chunk;
//! chunks are handed out in order.
//!
//! A chunk whose every record takes the fast path comes back as a batch, its records
//! numbered from 1 and renumbered when it is handed out (lines too for NDJSON; an
//! array's elements carry the planner's lines). A chunk with a record that does not (a
//! bad record, a key without a column, a record over the limit, a number whose digits
//! only the slow path keeps), or one the planner could not cut (a syntax error, a value
//! that is no object), comes back to be read again, in order, by the source's own
//! sequential reader, which numbers, reports and adds columns exactly; after an array's
//! syntax error that reader stops the load, as it would have alone. Columns added then
//! are published to the threads for the chunks they start next; a batch read before is
//! narrower, and is widened with NULLs when handed out (its records had none of the new
//! keys, or they would have gone back too).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::fast::{fast_row, push_fast, FastRow};
use super::objects::{LineObjects, ObjectStream};
use super::record_path::Wrapping;
use super::scan;
use super::{Handed, Parts};
use crate::batch::{Batch, RowOrigin};
use crate::error::{Error, Result};
use crate::source::keys::KeyColumns;
use crate::source::parallel::{plan, range, Chunk, CHUNK_BYTES};
use crate::types::ColumnType;

/// Bytes per chunk: half of a CSV chunk, as fast on the 325 MB feed of bench/README.md
/// (0.95-1.02 s against 0.95-1.01 s) with a peak RSS of 63 MB instead of 72 MB.
pub(super) const CHUNK_BYTES_JSON: u64 = CHUNK_BYTES / 2;

/// The columns the threads read against: replaced whole when columns are added.
pub(super) struct Known {
    pub(super) keys: KeyColumns,
    pub(super) types: Vec<ColumnType>,
}

/// How the file holds its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One object per line.
    Lines,
    /// One top-level array of objects.
    Array,
}

/// An array element found by the planner: its bytes within its chunk, and the line and
/// byte column it starts at.
#[derive(Clone, Copy, Debug)]
struct Element {
    from: usize,
    to: usize,
    line: u64,
    column: u64,
}

/// A chunk as planned.
#[derive(Debug)]
struct Planned {
    chunk: Chunk,
    /// The line and byte column the chunk starts at (arrays; lines are counted by the
    /// thread).
    line: u64,
    column: u64,
    /// An array chunk's elements.
    elements: Vec<Element>,
    /// Whether the chunk runs to the end of the file.
    last: bool,
    /// Whether only the sequential reader can read it (the planner met something it
    /// cannot cut, or a value that is no object).
    sequential: bool,
}

/// What a thread made of a chunk.
enum Parsed {
    /// Every record took the fast path. Records are numbered from 1, lines from 1 for
    /// NDJSON (an array's are the planner's).
    Clean {
        batch: Batch,
        lines: u64,
        records: u64,
        mismatches: u64,
        /// The first mismatch: its line, its column, and the message after them.
        first: Option<(u64, u64, String)>,
    },
    /// To be read again, in order, by the sequential reader.
    Again,
}

/// A thread's chunks as read, and the way back for its batches.
type Lane = (Receiver<(Planned, Parsed)>, Sender<Batch>);

enum State {
    NotStarted,
    Running {
        next: usize,
        lanes: Vec<Lane>,
        /// How many chunks there are, once the planner is done (else `usize::MAX`).
        total: Arc<AtomicUsize>,
    },
    Done,
}

/// The chunks of one file after its head (see the module comment).
pub(crate) struct Chunks {
    path: PathBuf,
    name: Arc<str>,
    layout: Layout,
    /// Bytes of the file before the decoded input (a UTF-8 byte-order mark).
    base: u64,
    threads: usize,
    chunk_bytes: u64,
    max_record: usize,
    empty_null: bool,
    /// Strings are typed as CSV fields are (see [`super::super::ReadOptions`]).
    fields: bool,
    bytes_read: Arc<AtomicU64>,
    known: Arc<RwLock<Arc<Known>>>,
    /// The line the next NDJSON chunk starts on.
    line: u64,
    /// Whether rows go into batches as encoded records.
    encode: bool,
    /// Where an array's records were found (see [`super::record_path`]).
    wrapping: Option<Wrapping>,
    state: State,
    workers: Vec<JoinHandle<()>>,
}

impl Chunks {
    /// Chunks of the regular, uncompressed UTF-8 file `path` (named `name` in messages)
    /// holding JSON as `layout`, read by `threads` threads; a record over `max_record`
    /// bytes goes to the sequential reader.
    pub(crate) fn new(
        path: PathBuf,
        name: Arc<str>,
        layout: Layout,
        threads: usize,
        max_record: usize,
        empty_null: bool,
        bytes_read: Arc<AtomicU64>,
    ) -> Result<Chunks> {
        let base = crate::source::parallel::bom_len(&path)
            .map_err(|e| Error::io(Some(path.clone()), e))?;
        Ok(Chunks {
            path,
            name,
            layout,
            base,
            threads: threads.max(1),
            chunk_bytes: CHUNK_BYTES_JSON,
            max_record,
            empty_null,
            fields: false,
            bytes_read,
            known: Arc::new(RwLock::new(Arc::new(Known {
                keys: KeyColumns::default(),
                types: vec![],
            }))),
            line: 1,
            encode: false,
            wrapping: None,
            state: State::NotStarted,
            workers: vec![],
        })
    }

    /// Strings typed as CSV fields are (`fields`), or kept as text.
    pub(crate) fn with_text_fields(mut self, fields: bool) -> Self {
        self.fields = fields;
        self
    }

    /// Chunks of about `bytes` instead of [`CHUNK_BYTES_JSON`] (tests use tiny ones).
    #[cfg(test)]
    pub(super) fn with_chunk_bytes(mut self, bytes: u64) -> Self {
        self.chunk_bytes = bytes.max(1);
        self
    }

    /// Starts the planner and the threads from `head`: the line, byte column and
    /// decoded byte where the head stopped.
    fn start(&mut self, head: (u64, u64, u64)) -> Result<()> {
        let io = |e| Error::io(Some(self.path.clone()), e);
        let len = std::fs::metadata(&self.path).map_err(io)?.len() - self.base;
        self.line = head.0;
        let threads = self.threads;
        let total = Arc::new(AtomicUsize::new(usize::MAX));
        let mut lanes = vec![];
        let mut jobs = vec![];
        for _ in 0..threads {
            let (job_tx, job_rx) = bounded::<Planned>(4);
            let (tx, rx) = bounded::<(Planned, Parsed)>(2);
            // Batches handed out come back emptied, so a thread reuses their memory.
            let (back, back_rx) = unbounded::<Batch>();
            lanes.push((rx, back));
            jobs.push(job_tx);
            let job = Job {
                path: self.path.clone(),
                layout: self.layout,
                encode: self.encode,
                base: self.base,
                max_record: self.max_record,
                empty_null: self.empty_null,
                fields: self.fields,
                known: self.known.clone(),
            };
            let handle = std::thread::Builder::new()
                .name("liteload-json".into())
                .spawn(move || {
                    // The chunk's bytes, reused chunk after chunk.
                    let mut bytes = vec![];
                    for planned in job_rx {
                        let batch = back_rx.try_recv().unwrap_or_default();
                        let parsed = job.parse(&planned, batch, &mut bytes);
                        if tx.send((planned, parsed)).is_err() {
                            return; // the reader stopped
                        }
                    }
                })
                .map_err(|e| Error::io(None, e))?;
            self.workers.push(handle);
        }
        let (path, base, size, layout) =
            (self.path.clone(), self.base, self.chunk_bytes, self.layout);
        let wrapped = self.wrapping.is_some();
        let count = total.clone();
        let planner = std::thread::Builder::new()
            .name("liteload-json-plan".into())
            .spawn(move || {
                let mut j = 0;
                let mut send = |p: Planned| {
                    let ok = jobs[j % jobs.len()].send(p).is_ok();
                    j += 1;
                    ok
                };
                match layout {
                    Layout::Lines => {
                        let chunks = plan(&path, base, head.2, len, size).unwrap_or_else(|_| {
                            // The sequential reader meets the error and reports it.
                            vec![Chunk {
                                start: head.2,
                                end: len,
                            }]
                        });
                        let n = chunks.len();
                        for (k, chunk) in chunks.into_iter().enumerate() {
                            let p = Planned {
                                chunk,
                                line: 0,
                                column: 0,
                                elements: vec![],
                                last: k + 1 == n,
                                sequential: false,
                            };
                            if !send(p) {
                                return;
                            }
                        }
                    }
                    Layout::Array => plan_array(&path, base, head, len, size, wrapped, &mut send),
                }
                count.store(j, Ordering::Release);
            })
            .map_err(|e| Error::io(None, e))?;
        self.workers.push(planner);
        self.state = State::Running {
            next: 0,
            lanes,
            total,
        };
        Ok(())
    }

    fn stop(&mut self) {
        // Closing the lanes stops the threads at their next send.
        self.state = State::Done;
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

impl Parts for Chunks {
    /// Makes the threads encode rows as SQLite records (see
    /// [`Source::make_records`](super::Source::make_records)); before they start.
    fn encode(&mut self) {
        self.encode = true;
    }

    fn wrapped(&mut self, wrapping: Option<Wrapping>) {
        self.wrapping = wrapping;
    }

    /// Whether the chunks are being handed out (the head is no longer read).
    fn started(&self) -> bool {
        !matches!(self.state, State::NotStarted)
    }

    /// Makes `keys` and `types` the columns the threads read against from their next chunk.
    fn publish(&self, keys: &KeyColumns, types: &[ColumnType]) {
        let known = Arc::new(Known {
            keys: keys.clone(),
            types: types.to_vec(),
        });
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = known;
    }

    /// The next chunk, its rows numbered after `records` records; `head` (line, byte
    /// column, decoded byte) is where the head stopped (used on the first call only).
    fn next(&mut self, head: (u64, u64, u64), records: u64) -> Result<Handed> {
        if matches!(self.state, State::NotStarted) {
            self.start(head)?;
        }
        let State::Running { next, lanes, total } = &mut self.state else {
            return Ok(Handed::Done);
        };
        let (lane, _) = &lanes[*next % lanes.len()];
        let (planned, parsed) = match lane.recv() {
            Ok(got) => got,
            Err(_) if total.load(Ordering::Acquire) == *next => {
                self.stop();
                return Ok(Handed::Done);
            }
            Err(_) => return Err(Error::internal("a JSON reading thread stopped early")),
        };
        let chunk = planned.chunk;
        match parsed {
            Parsed::Clean {
                mut batch,
                lines,
                records: n,
                mismatches,
                first,
            } => {
                let line0 = match self.layout {
                    Layout::Lines => self.line - 1,
                    Layout::Array => 0,
                };
                batch.shift_origins(line0, records);
                self.line += lines;
                *next += 1;
                self.bytes_read
                    .store(self.base + chunk.end, Ordering::Relaxed);
                Ok(Handed::Batch {
                    batch,
                    records: n,
                    mismatches,
                    first: first.map(|(line, column, rest)| {
                        format!("{}:{}:{column}: {rest}", self.name, line0 + line)
                    }),
                })
            }
            Parsed::Again => {
                let to = if planned.last { u64::MAX } else { chunk.end };
                let rdr = range(&self.path, self.base, chunk.start, to - chunk.start)
                    .map_err(|e| Error::io(Some(self.path.clone()), e))?;
                let rdr = Box::new(BufReader::with_capacity(1 << 16, rdr));
                Ok(Handed::Again(match self.layout {
                    Layout::Lines => ObjectStream::Lines(LineObjects::new(
                        rdr,
                        self.max_record,
                        self.line,
                        chunk.start,
                    )),
                    Layout::Array => ObjectStream::array_part(
                        rdr,
                        self.max_record,
                        (planned.line, planned.column, chunk.start),
                        !planned.last,
                        self.wrapping.clone(),
                    ),
                }))
            }
        }
    }

    /// The chunk handed out as [`Handed::Again`] has been read; the sequential reader
    /// stopped on line `line` (where the next NDJSON chunk starts).
    fn reread(&mut self, line: u64) {
        if let State::Running { next, .. } = &mut self.state {
            *next += 1;
        }
        self.line = line;
    }

    /// Hands a batch back for a thread to reuse.
    fn give_back(&self, batch: Batch) {
        if let State::Running { lanes, next, .. } = &self.state {
            let _ = lanes[*next % lanes.len()].1.send(batch);
        }
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A planned chunk from `start` (byte, line, column) to `end`.
fn planned(
    start: (u64, u64, u64),
    end: u64,
    elements: Vec<Element>,
    last: bool,
    sequential: bool,
) -> Planned {
    Planned {
        chunk: Chunk {
            start: start.0,
            end,
        },
        line: start.1,
        column: start.2,
        elements,
        last,
        sequential,
    }
}

/// Cuts the rest of a top-level array, from `head` (line, byte column, decoded byte:
/// just after an element), into chunks of about `size` bytes, each ending before a
/// `,` between elements, and hands them to `send` in order (stopping when it says
/// `false`). Between elements only whitespace, one `,` and the final `]` are followed;
/// inside an element only strings (with escapes) and nesting, the thread's parse of the
/// element checking the rest. Anything else (a syntax error, a value that is no object
/// or array, an I/O error) makes the rest one chunk for the sequential reader, which
/// reports it exactly.
///
/// When the array is `wrapped` in a document, the last chunk, which holds the rest of
/// the document after the array, always goes to the sequential reader: only it checks
/// that the document closes (the planner sees whitespace after `]`, not a missing `}`).
///
/// Bytes are taken 64 at a time ([`scan`]).
fn plan_array(
    path: &std::path::Path,
    base: u64,
    head: (u64, u64, u64),
    len: u64,
    size: u64,
    wrapped: bool,
    send: &mut dyn FnMut(Planned) -> bool,
) {
    let (mut line, column, first) = head;
    // The column of byte `p` is `col_base + (p - col_from)`: set at the head, and at
    // each line end to the byte after it.
    let (mut col_from, mut col_base) = (first, column);
    let mut start = (first, line, column);
    let mut elements: Vec<Element> = vec![];
    // Nesting: 1 between the array's elements, 0 after its `]`.
    let mut depth = 1u32;
    // Between elements: after a `,`, so an element must come next.
    let mut want_element = false;
    // Whether the next block starts inside a string, or with an escaped byte.
    let (mut in_string, mut escaping) = (false, false);
    let mut element = (0u64, 0u64, 0u64);
    let mut sequential = false;
    let opened = File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(base + first))?;
        Ok(f)
    });
    let mut buf = vec![0u8; 1 << 20];
    // `buf[..have]` holds the bytes from `at` on not yet scanned (less than a block).
    let (mut at, mut have) = (first, 0usize);
    match opened {
        Err(_) => sequential = true,
        Ok(mut file) => 'read: loop {
            let room = (buf.len() - have).min((len - at) as usize - have);
            if room > 0 {
                match file.read(&mut buf[have..have + room]) {
                    Ok(0) | Err(_) => {
                        sequential = true;
                        break;
                    }
                    Ok(n) => have += n,
                }
            }
            let end = at + have as u64 == len;
            let whole = if end { have } else { have / 64 * 64 };
            for block_at in (0..whole).step_by(64) {
                let n = (whole - block_at).min(64);
                // A short last block is padded with whitespace, which changes nothing.
                let mut short = [b' '; 64];
                let b: &[u8; 64] = match buf[block_at..].first_chunk::<64>() {
                    Some(b) if n == 64 => b,
                    _ => {
                        short[..n].copy_from_slice(&buf[block_at..block_at + n]);
                        &short
                    }
                };
                let blk = at + block_at as u64;
                let m = scan::classify(b);
                let quotes = m.quote & !scan::escaped(m.backslash, &mut escaping);
                let outside = !scan::in_strings(quotes, &mut in_string);
                let solid = !m.space;
                let place = |j: u32, line: u64, col_from: u64, col_base: u64| {
                    let before = m.newline & ((1u64 << j) - 1);
                    let p = blk + j as u64;
                    if before == 0 {
                        (p, line, col_base + (p - col_from))
                    } else {
                        let last = 63 - before.leading_zeros();
                        (p, line + before.count_ones() as u64, (j - last) as u64)
                    }
                };
                // Events are the brackets outside strings; a comma matters only between
                // elements, where the bytes from `from` on up to the next bracket may be
                // whitespace and one comma (every field's comma would cost an event).
                let mut from = 0u32;
                let mut events = (m.open | m.close) & outside;
                loop {
                    let j = if events == 0 {
                        64
                    } else {
                        events.trailing_zeros()
                    };
                    events &= events.wrapping_sub(1);
                    if depth >= 2 {
                        if j == 64 {
                            break;
                        }
                        if m.open >> j & 1 == 1 {
                            depth += 1;
                        } else {
                            depth -= 1;
                            if depth == 1 {
                                let p = blk + j as u64;
                                elements.push(Element {
                                    from: (element.0 - start.0) as usize,
                                    to: (p + 1 - start.0) as usize,
                                    line: element.1,
                                    column: element.2,
                                });
                                from = j + 1;
                            }
                        }
                        continue;
                    }
                    let below = if j == 64 { u64::MAX } else { (1u64 << j) - 1 };
                    let gap = u64::MAX.checked_shl(from).unwrap_or(0) & below;
                    let commas = if depth == 1 { m.comma & gap } else { 0 };
                    let bad = solid & gap & !commas;
                    let mut commas = match bad {
                        0 => commas,
                        _ => commas & ((1u64 << bad.trailing_zeros()) - 1),
                    };
                    while commas != 0 {
                        let k = commas.trailing_zeros();
                        commas &= commas - 1;
                        if want_element {
                            sequential = true;
                            break 'read;
                        }
                        let p = blk + k as u64;
                        if p - start.0 >= size {
                            let chunk =
                                planned(start, p, std::mem::take(&mut elements), false, false);
                            if !send(chunk) {
                                return;
                            }
                            start = place(k, line, col_from, col_base);
                        }
                        want_element = true;
                    }
                    if bad != 0 {
                        sequential = true;
                        break 'read;
                    }
                    if j == 64 {
                        break;
                    }
                    match (depth, m.open >> j & 1 == 1, b[j as usize]) {
                        (1, true, _) if want_element => {
                            element = place(j, line, col_from, col_base);
                            depth = 2;
                            want_element = false;
                        }
                        (1, false, b']') if !want_element => depth = 0,
                        _ => {
                            sequential = true;
                            break 'read;
                        }
                    }
                    from = j + 1;
                }
                if m.newline != 0 {
                    let last = 63 - m.newline.leading_zeros();
                    line += m.newline.count_ones() as u64;
                    (col_from, col_base) = (blk + last as u64 + 1, 1);
                }
            }
            buf.copy_within(whole..have, 0);
            at += whole as u64;
            have -= whole;
            if end {
                break;
            }
        },
    }
    // The array must have ended, with nothing after it (or only the rest of the
    // document around it, which the sequential reader checks).
    let last = planned(
        start,
        len,
        elements,
        true,
        sequential || depth != 0 || wrapped,
    );
    send(last);
}

/// What a thread needs to read chunks on its own.
struct Job {
    path: PathBuf,
    layout: Layout,
    encode: bool,
    base: u64,
    max_record: usize,
    empty_null: bool,
    fields: bool,
    known: Arc<RwLock<Arc<Known>>>,
}

impl Job {
    fn parse(&self, planned: &Planned, mut batch: Batch, bytes: &mut Vec<u8>) -> Parsed {
        if planned.sequential {
            return Parsed::Again;
        }
        let known = self.known.read().unwrap_or_else(|p| p.into_inner()).clone();
        let chunk = planned.chunk;
        bytes.resize((chunk.end - chunk.start) as usize, 0);
        let buf = &mut bytes[..];
        let read = File::open(&self.path).and_then(|mut f| {
            f.seek(SeekFrom::Start(self.base + chunk.start))?;
            f.read_exact(buf)
        });
        if read.is_err() {
            // The sequential reader meets the same error and reports it where it is.
            return Parsed::Again;
        }
        batch.clear(known.keys.columns.len());
        let mut row = FastRow::default();
        let mut scratch = String::new();
        let mut encoded = liteload_btree::RecordBuilder::new();
        let (mut lines, mut records, mut mismatches) = (0u64, 0u64, 0u64);
        let mut first = None;
        let buf = &buf[..];
        let mut record =
            |span: std::ops::Range<usize>, line: u64, column: u64, batch: &mut Batch| -> bool {
                let text = &buf[span];
                if text.len() > self.max_record || !fast_row(text, &known.keys, &mut row) {
                    return false;
                }
                records += 1;
                let (m, bad) = if self.encode {
                    encoded.clear();
                    let r = push_fast(
                        &mut encoded,
                        &row,
                        &known.types,
                        self.empty_null,
                        self.fields,
                        &mut scratch,
                    );
                    batch.push_record(&encoded);
                    r
                } else {
                    push_fast(
                        batch,
                        &row,
                        &known.types,
                        self.empty_null,
                        self.fields,
                        &mut scratch,
                    )
                };
                if m > 0 {
                    mismatches += m;
                    if first.is_none() {
                        first = bad.map(|(c, v)| {
                            (
                                line,
                                column,
                                format!(
                                    "{v} in {} column {:?}",
                                    known.types[c], known.keys.columns[c]
                                ),
                            )
                        });
                    }
                }
                batch.finish_row(RowOrigin {
                    line,
                    record: records,
                });
                true
            };
        if self.layout == Layout::Lines {
            let mut offset = 0;
            // memchr finds the line ends (a byte-by-byte split was 4% of the read).
            let ends = memchr::memchr_iter(b'\n', buf).map(|i| i + 1);
            let last = (buf.last() != Some(&b'\n') && !buf.is_empty()).then_some(buf.len());
            for end in ends.chain(last) {
                let from = offset;
                let line = &buf[from..end];
                offset = end;
                lines += 1;
                let content = line.strip_suffix(b"\n").unwrap_or(line);
                if content.len() > self.max_record {
                    return Parsed::Again;
                }
                let text = content.trim_ascii();
                if text.is_empty() {
                    continue;
                }
                let lead = content.len() - content.trim_ascii_start().len();
                let span = from + lead..from + lead + text.len();
                if !record(span, lines, lead as u64 + 1, &mut batch) {
                    return Parsed::Again;
                }
            }
        } else {
            for e in &planned.elements {
                if !record(e.from..e.to, e.line, e.column, &mut batch) {
                    return Parsed::Again;
                }
            }
        }
        Parsed::Clean {
            batch,
            lines,
            records,
            mismatches,
            first,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{JsonSource, ObjectStream};
    use super::super::{ReadOptions, Source};
    use super::*;
    use crate::source::outcome::{drain, Outcome};
    use proptest::prelude::*;

    fn opts(layout: Layout, sample: usize, max_line: usize) -> ReadOptions {
        ReadOptions {
            format: match layout {
                Layout::Lines => crate::source::Format::Ndjson,
                Layout::Array => crate::source::Format::Json,
            },
            sample_rows: sample,
            max_record_bytes: max_line,
            ..ReadOptions::default()
        }
    }

    /// The slow path alone on one thread, the fast path on one thread, and the fast
    /// path in chunks of about `chunk` bytes on `threads` threads.
    fn three(
        text: &[u8],
        layout: Layout,
        chunk: u64,
        threads: usize,
        o: &ReadOptions,
    ) -> [Outcome; 3] {
        let [slow, fast, par, _] = four(text, layout, chunk, threads, o);
        [slow, fast, par]
    }

    /// [`three`], and the chunks again making encoded records.
    fn four(
        text: &[u8],
        layout: Layout,
        chunk: u64,
        threads: usize,
        o: &ReadOptions,
    ) -> [Outcome; 4] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, text).unwrap();
        let name: Arc<str> = "in.jsonl".into();
        let open = || {
            let f = std::io::BufReader::new(File::open(&path).unwrap());
            let mut r: Box<dyn std::io::BufRead + Send> = Box::new(f);
            // A UTF-8 byte-order mark is not part of the decoded input.
            if text.starts_with(b"\xEF\xBB\xBF") {
                let mut bom = [0u8; 3];
                r.read_exact(&mut bom).unwrap();
            }
            let stream = match layout {
                Layout::Lines => ObjectStream::lines(r, o.max_record_bytes),
                Layout::Array => {
                    let wanted = o
                        .record
                        .as_deref()
                        .map(|p| super::super::record_path::parse(p).unwrap());
                    ObjectStream::array(r, o.max_record_bytes, wanted)
                }
            };
            JsonSource::new(stream, name.clone(), o.clone())
        };
        let slow = drain(&mut open().slow_only(), 3);
        let fast = drain(&mut open(), 3);
        let chunks = || {
            Chunks::new(
                path.clone(),
                name.clone(),
                layout,
                threads,
                o.max_record_bytes,
                o.nulls == crate::Nulls::All,
                Arc::new(AtomicU64::new(0)),
            )
            .unwrap()
            .with_chunk_bytes(chunk)
        };
        let par = drain(&mut open().with_chunks(Box::new(chunks())), 3);
        let mut encoding = open().with_chunks(Box::new(chunks()));
        assert!(encoding.make_records());
        let encoded = drain(&mut encoding, 3);
        [slow, fast, par, encoded]
    }

    /// One line of input: objects with keys the sample may not have seen, values of
    /// every kind and of the wrong kind, numbers past 64 bits, escapes, non-ASCII,
    /// repeated keys, and lines that are no object or no JSON.
    fn line() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            4 => Just("a".to_string()),
            3 => Just("b".to_string()),
            2 => Just("c".to_string()),
            1 => Just("A".to_string()),
            1 => Just("d\\u00e9".to_string()),
            1 => Just("é".to_string()),
            1 => Just(String::new()),
            1 => Just("late".to_string()),
            1 => Just("nul\\u0000".to_string()),
            1 => Just("a_b".to_string()),
        ];
        let value = prop_oneof![
            4 => (-5i64..100).prop_map(|i| i.to_string()),
            2 => "[a-z ]{0,5}".prop_map(|s| format!("\"{s}\"")),
            1 => Just("\"\"".to_string()),
            1 => Just("null".to_string()),
            1 => Just("true".to_string()),
            1 => Just("2.5".to_string()),
            1 => Just("-0".to_string()),
            1 => Just("1e3".to_string()),
            1 => Just("9223372036854775807".to_string()),
            1 => Just("9223372036854775808".to_string()),
            1 => Just("18446744073709551616".to_string()),
            1 => Just("-9223372036854775809".to_string()),
            1 => Just("\"tab\\there \\\"q\\\" \\u00e9 \\ud83d\\ude00\"".to_string()),
            1 => Just("\"007\"".to_string()),
            1 => Just("[1, {\"x\": 2.50}]".to_string()),
            1 => Just("{\"n\": 12345678901234567890123}".to_string()),
            // Nested objects, for flattening: a path whose joined name collides with a
            // key (`a` > `b` and `a_b`), a deeper one, an empty one, a repeated key, a
            // NUL in a nested key, a rounded real inside.
            1 => Just("{\"b\": 1, \"c\": {\"d\": \"é\"}}".to_string()),
            1 => Just("{}".to_string()),
            1 => Just("{\"b\": \"x\", \"b\": 2}".to_string()),
            1 => Just("{\"n\\u0000\": 1}".to_string()),
            1 => Just("{\"r\": 1e300, \"s\": [{\"t\": 1}]}".to_string()),
        ];
        let object = prop::collection::vec((key, value), 0..5).prop_map(|kv| {
            let fields: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!("{{{}}}", fields.join(", "))
        });
        prop_oneof![
            12 => object,
            1 => Just(String::new()),
            1 => Just("   ".to_string()),
            1 => Just("[1, 2]".to_string()),
            1 => Just("42".to_string()),
            1 => Just("{\"a\": 1".to_string()),
            1 => Just("{\"a\": 1} {\"b\": 2}".to_string()),
            1 => Just("  {\"b\": \"x\"}  ".to_string()),
            1 => Just("{\"a\": \"y".repeat(12)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn the_fast_path_and_chunks_read_as_the_slow_path_reads(
            lines in prop::collection::vec(line(), 0..50),
            crlf in any::<bool>(),
            bom in any::<bool>(),
            last_eol in any::<bool>(),
            chunk in 1u64..300,
            threads in 1usize..4,
            sample in 1usize..12,
            max_line in prop_oneof![Just(64usize << 20), Just(40usize)],
            flatten in prop::option::of(prop_oneof![Just("_"), Just("."), Just("")]),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            text.push_str(&lines.join(eol));
            if last_eol && !lines.is_empty() {
                text.push_str(eol);
            }
            let o = ReadOptions {
                flatten: flatten.map(String::from),
                ..opts(Layout::Lines, sample, max_line)
            };
            let [slow, fast, par, encoded] = four(text.as_bytes(), Layout::Lines, chunk, threads, &o);
            prop_assert_eq!(&fast, &slow);
            prop_assert_eq!(&par, &slow);
            prop_assert_eq!(&encoded, &slow);
        }

        #[test]
        fn an_array_in_chunks_reads_as_the_slow_path_reads(
            elements in prop::collection::vec(element(), 0..50),
            seps in prop::collection::vec(sep(), 51),
            bom in any::<bool>(),
            tail in prop_oneof![
                6 => Just("]".to_string()),
                1 => Just("]\n  \n".to_string()),
                1 => Just(String::new()),
                1 => Just("] x".to_string()),
                1 => Just(",]".to_string()),
                1 => Just("] {}".to_string()),
            ],
            chunk in 1u64..300,
            threads in 1usize..4,
            sample in 1usize..12,
            max_element in prop_oneof![Just(64usize << 20), Just(40usize)],
            flatten in any::<bool>(),
        ) {
            let mut text = String::new();
            if bom {
                text.push('\u{feff}');
            }
            text.push_str(&seps[0]);
            text.push('[');
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&seps[i + 1]);
                text.push_str(e);
                text.push_str(&seps[50 - i]);
            }
            text.push_str(&tail);
            let o = ReadOptions {
                flatten: flatten.then(|| "_".to_string()),
                ..opts(Layout::Array, sample, max_element)
            };
            let [slow, fast, par, encoded] = four(text.as_bytes(), Layout::Array, chunk, threads, &o);
            prop_assert_eq!(&fast, &slow);
            prop_assert_eq!(&par, &slow);
            prop_assert_eq!(&encoded, &slow);
        }
    }

    /// Documents around an array of records: the text before the array, the text after
    /// it, the record path given (`None`: found by the reader), and whether the
    /// document around the array is sound (else the load must fail).
    fn wrapper() -> impl Strategy<Value = (String, String, Option<String>, bool)> {
        let w = |a: &str, b: &str, path: Option<&str>, ok: bool| {
            Just((a.to_string(), b.to_string(), path.map(String::from), ok))
        };
        prop_oneof![
            w(r#"{"Version": "5.5", "List": "#, "}", None, true),
            w(r#"{"Version": "5.5", "List": "#, "}", Some("List"), true),
            w(
                r#"{"n": [1, [2]], "o": {"x": [{"y": 1}]}, "List": "#,
                r#", "after": [1, "x", []], "z": -1.5e3, "t": true}"#,
                None,
                true
            ),
            w(
                r#"{"meta": {"n": [1, {"a": 2}]}, "data": {"x": 1, "items": "#,
                r#", "y": [1]}, "z": null}"#,
                Some("data.items"),
                true
            ),
            w(r#"{"a.b": {"c/d": "#, "}}", Some("/a.b/c~1d"), true),
            w(r#"{"é 😀": "#, "}", Some("é 😀"), true),
            w(
                r#"{"List": "#,
                r#", "more": [{"b": 1}]}"#,
                Some("List"),
                true
            ),
            w(r#"{"List": "#, r#", "more": [{"b": 1}]}"#, None, false),
            w(r#"{"List": "#, r#", "z": nul}"#, None, false),
            w(r#"{"List": "#, r#", "z": [1, }"#, None, false),
            w(r#"{"List": "#, r#", "z" 1}"#, None, false),
            w(r#"{"List": "#, r#", }"#, None, false),
            w(r#"{"List": "#, "", None, false),
            w(r#"{"List": "#, "} {}", None, false),
            w(r#"{"List": "#, "}\n{\"List\": []}", None, false),
            w(r#"{"x": 1, "List": "#, "}", Some("Lisst"), false),
            w(r#"{"x": {"List": 1}, "List": "#, "}", Some("x.List"), false),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// An array of records inside a document reads as the array alone does (the
        /// same rows, columns and bad records; an error where the array alone has one),
        /// on every path; a document broken around it is refused.
        #[test]
        fn an_array_at_a_record_path_reads_as_the_array_alone(
            elements in prop::collection::vec(element(), 0..30),
            seps in prop::collection::vec(sep(), 31),
            (before, after, path, sound) in wrapper(),
            chunk in 1u64..300,
            threads in 1usize..4,
            sample in 1usize..12,
        ) {
            let mut array = String::from("[");
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    array.push(',');
                }
                array.push_str(&seps[i]);
                array.push_str(e);
            }
            array.push_str(&seps[30]);
            array.push(']');
            let o = opts(Layout::Array, sample, 64 << 20);
            let [alone, ..] = four(array.as_bytes(), Layout::Array, chunk, threads, &o);
            let doc = format!("{before}{array}{after}");
            let o = ReadOptions { record: path.clone(), ..o };
            let [slow, fast, par, encoded] = four(doc.as_bytes(), Layout::Array, chunk, threads, &o);
            prop_assert_eq!(&fast, &slow);
            prop_assert_eq!(&par, &slow);
            prop_assert_eq!(&encoded, &slow);
            // Without a path, the reader takes the first member whose array starts with
            // an object (an empty one only when no member holds objects).
            let seen = path.is_some() || array[1..].trim_start().starts_with('{');
            if !seen {
                // (Which member, if any, is taken is the unit tests' matter.)
            } else if sound {
                prop_assert_eq!(&slow.rows, &alone.rows);
                prop_assert_eq!(&slow.columns, &alone.columns);
                prop_assert_eq!(slow.bad.len(), alone.bad.len());
                prop_assert_eq!(slow.error.is_some(), alone.error.is_some(), "{:?}", slow.error);
            } else {
                prop_assert!(slow.error.is_some(), "{} loaded", doc);
            }
        }
    }

    /// Whitespace around an array's elements, line ends included.
    fn sep() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => Just(String::new()),
            2 => Just("\n".to_string()),
            1 => Just(" \t".to_string()),
            1 => Just("\r\n  ".to_string()),
        ]
    }

    /// One array element: mostly objects (one per line of `line()`'s objects), now and
    /// then a value that is no object, a syntax error, or strings with brackets, commas
    /// and escaped quotes that a careless cut would split.
    fn element() -> impl Strategy<Value = String> {
        prop_oneof![
            14 => line().prop_filter("an object", |l| {
                serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v.is_object())
            }),
            2 => Just("{\"a\": \"],[{\\\"}\", \"b\": [1, {\"c\": \"x,y\"}]}".to_string()),
            1 => Just("{\"a\": \"\\\\\"}".to_string()),
            1 => Just("[1, 2]".to_string()),
            1 => Just("\"text\"".to_string()),
            1 => Just("42".to_string()),
            1 => Just("{\"a\": 1".to_string()),
            1 => Just("{\"a\": 1]".to_string()),
            1 => Just("{\"a\" 1}".to_string()),
            1 => Just("{\"a\": \"y".repeat(12) + "\"}"),
        ]
    }

    #[test]
    fn a_column_first_seen_in_a_later_chunk_widens_the_chunks_read_before() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!("{{\"a\": {i}, \"b\": \"x{i}\"}}\n"));
        }
        text.push_str("{\"a\": 1, \"new\": 2.5}\n");
        for i in 0..400 {
            text.push_str(&format!("{{\"b\": \"y{i}\", \"a\": {i}}}\n"));
        }
        let o = opts(Layout::Lines, 5, 1 << 20);
        let [slow, fast, par] = three(text.as_bytes(), Layout::Lines, 64, 3, &o);
        assert_eq!(slow.columns.len(), 3);
        assert_eq!(slow.rows.len(), 801);
        assert_eq!(fast, slow);
        assert_eq!(par, slow);
    }

    /// The byte-at-a-time planner that [`plan_array`] replaced: the reference its
    /// cuts, elements and positions are compared with.
    /// The bytes that matter to [`plan_array`] inside an element, outside its strings.
    static STRUCTURAL: [bool; 256] = {
        let mut t = [false; 256];
        t[b'"' as usize] = true;
        t[b'{' as usize] = true;
        t[b'}' as usize] = true;
        t[b'[' as usize] = true;
        t[b']' as usize] = true;
        t[b'\n' as usize] = true;
        t
    };

    fn plan_array_bytewise(
        path: &std::path::Path,
        base: u64,
        head: (u64, u64, u64),
        len: u64,
        size: u64,
        send: &mut dyn FnMut(Planned) -> bool,
    ) {
        let (mut line, mut column, mut at) = head;
        let mut start = (head.2, head.0, head.1);
        let mut elements: Vec<Element> = vec![];
        // Nesting: 1 between the array's elements, 0 after its `]`.
        let mut depth = 1u32;
        // Between elements: after a `,`, so an element must come next.
        let mut want_element = false;
        let (mut in_string, mut escaped) = (false, false);
        let mut element = (0u64, 0u64, 0u64);
        let mut sequential = false;
        let opened = File::open(path).and_then(|mut f| {
            f.seek(SeekFrom::Start(base + at))?;
            Ok(f)
        });
        let mut buf = vec![0u8; 1 << 20];
        match opened {
            Err(_) => sequential = true,
            Ok(mut file) => {
                'read: while at < len {
                    let n = match file.read(&mut buf) {
                        Ok(0) | Err(_) => {
                            sequential = true;
                            break;
                        }
                        Ok(n) => n,
                    };
                    let mut i = 0;
                    while i < n {
                        if in_string && !escaped {
                            // Straight to the string's next quote or backslash (the scan's
                            // hot spot: most of a feed's bytes are keys and text). A raw line
                            // end inside a string is not counted: it is invalid JSON, which the
                            // element's parse refuses and the sequential reader reports, at a
                            // place before it, stopping the load.
                            let skip = memchr::memchr2(b'"', b'\\', &buf[i..n]).unwrap_or(n - i);
                            i += skip;
                            at += skip as u64;
                            column += skip as u64;
                            if i == n {
                                break;
                            }
                        } else if depth >= 2 && !in_string {
                            // Inside an element, only quotes, brackets and line ends matter.
                            let skip = buf[i..n]
                                .iter()
                                .position(|&b| STRUCTURAL[b as usize])
                                .unwrap_or(n - i);
                            i += skip;
                            at += skip as u64;
                            column += skip as u64;
                            if i == n {
                                break;
                            }
                        }
                        let b = buf[i];
                        i += 1;
                        if in_string {
                            if escaped {
                                escaped = false;
                            } else if b == b'\\' {
                                escaped = true;
                            } else if b == b'"' {
                                in_string = false;
                            }
                        } else if depth >= 2 {
                            match b {
                                b'"' => in_string = true,
                                b'{' | b'[' => depth += 1,
                                b'}' | b']' => {
                                    depth -= 1;
                                    if depth == 1 {
                                        elements.push(Element {
                                            from: (element.0 - start.0) as usize,
                                            to: (at + 1 - start.0) as usize,
                                            line: element.1,
                                            column: element.2,
                                        });
                                    }
                                }
                                _ => {}
                            }
                        } else if !b.is_ascii_whitespace() {
                            match (depth, b) {
                                (1, b',') if !want_element => {
                                    if at - start.0 >= size {
                                        let chunk = planned(
                                            start,
                                            at,
                                            std::mem::take(&mut elements),
                                            false,
                                            false,
                                        );
                                        if !send(chunk) {
                                            return;
                                        }
                                        start = (at, line, column);
                                    }
                                    want_element = true;
                                }
                                (1, b'{' | b'[') if want_element => {
                                    element = (at, line, column);
                                    depth = 2;
                                    want_element = false;
                                }
                                (1, b']') if !want_element => depth = 0,
                                _ => sequential = true,
                            }
                        }
                        if b == b'\n' {
                            line += 1;
                            column = 1;
                        } else {
                            column += 1;
                        }
                        at += 1;
                        if sequential {
                            break 'read;
                        }
                    }
                }
            }
        }
        // The array must have ended, with nothing after it.
        let last = planned(start, len, elements, true, sequential || depth != 0);
        send(last);
    }

    type Plan = Vec<(
        u64,
        u64,
        u64,
        u64,
        Vec<(usize, usize, u64, u64)>,
        bool,
        bool,
    )>;

    type Planner =
        fn(&std::path::Path, u64, (u64, u64, u64), u64, u64, &mut dyn FnMut(Planned) -> bool);

    fn plan_with(planner: Planner, text: &str, size: u64) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.json");
        std::fs::write(&path, format!("[{{}}{text}")).unwrap();
        let mut got = vec![];
        let mut send = |p: Planned| {
            let elements = p.elements.iter().map(|e| (e.from, e.to, e.line, e.column));
            got.push((
                p.chunk.start,
                p.chunk.end,
                p.line,
                p.column,
                elements.collect(),
                p.last,
                p.sequential,
            ));
            true
        };
        planner(&path, 0, (1, 4, 3), text.len() as u64 + 3, size, &mut send);
        got
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// The planner that takes 64 bytes at a time cuts, finds elements and counts
        /// lines and columns as the byte-at-a-time one does, on arrays with strings that
        /// cross blocks, runs of backslashes, nesting, and anything between elements.
        /// Elements are valid JSON here: inside a broken one the two may differ (the new
        /// one follows escapes outside strings too), and that element's parse fails
        /// either way, which sends its chunk to the sequential reader: the outcome test
        /// above covers that.
        #[test]
        fn the_block_planner_plans_as_the_bytewise_one(
            parts in prop::collection::vec(prop_oneof![
                6 => element()
                    .prop_filter("valid JSON", |e| serde_json::from_str::<serde_json::Value>(e).is_ok())
                    .prop_map(|e| format!(",{e}")),
                2 => sep(),
                1 => Just(format!(",{{\"a\": \"{}\"}}", "\\\\".repeat(40))),
                1 => Just(format!(",{{\"a\": \"{}\\\"{}\"}}", "x".repeat(61), "]},{".repeat(20))),
                1 => Just(",{\"a\": [[[{\"b\": [\"]\"]}]]]}".to_string()),
                1 => Just(",\n".to_string()),
                1 => Just("x".to_string()),
                1 => Just(" ]".to_string()),
            ], 0..60),
            size in prop_oneof![Just(1u64), 2u64..200, Just(1u64 << 20)],
        ) {
            let text: String = parts.concat();
            prop_assert_eq!(
                plan_with(|p, b, h, l, s, send| plan_array(p, b, h, l, s, false, send), &text, size),
                plan_with(plan_array_bytewise, &text, size)
            );
        }
    }

    /// The planner's cuts: wrong ones would only send chunks to the sequential reader
    /// (the outcome tests cannot see that), so they are checked here.
    #[test]
    fn the_planner_cuts_between_elements_past_brackets_and_escapes_in_strings() {
        let text = concat!(
            "[{}, {\"a\": \"],[{\\\"}\\\\\", \"b\": [1, {\"c\": \"x,y\"}]},\n",
            "  {\"b\": \"x\"}  ,{}]\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.json");
        std::fs::write(&path, text).unwrap();
        let mut got = vec![];
        let mut send = |p: Planned| {
            got.push(p);
            true
        };
        // The head read `[{}`.
        plan_array(&path, 0, (1, 4, 3), text.len() as u64, 1, false, &mut send);
        let texts: Vec<Vec<&str>> = got
            .iter()
            .map(|p| {
                let chunk = &text[p.chunk.start as usize..p.chunk.end as usize];
                p.elements.iter().map(|e| &chunk[e.from..e.to]).collect()
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                vec![r#"{"a": "],[{\"}\\", "b": [1, {"c": "x,y"}]}"#],
                vec![r#"{"b": "x"}"#],
                vec!["{}"],
            ]
        );
        assert!(got.iter().all(|p| !p.sequential));
        assert!(got[2].last);
        let starts: Vec<(u64, u64)> = got
            .iter()
            .flat_map(|p| p.elements.iter().map(|e| (e.line, e.column)))
            .collect();
        assert_eq!(starts, vec![(1, 6), (2, 3), (2, 16)]);
    }
}
