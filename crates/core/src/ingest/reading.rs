//! Reader threads' side of a feed: lines read (through [`Buffered`], which says how
//! much it holds), parsed into messages and sent in batches; what other threads tell
//! the engine's thread; what a feed's client learns from a connection's messages. Used
//! by the feed's own readers (`feed.rs`) and by its client (`connect.rs`).

use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;

use super::{FileSource, LineMeta, Messages};
use crate::error::{Error, Hint, Result};
use crate::source::json::LineObjects;

/// Compares two positions: as numbers when both are, else as text.
pub fn compare_positions(a: &str, b: &str) -> std::cmp::Ordering {
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        return x.cmp(&y);
    }
    if let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) {
        if let Some(o) = x.partial_cmp(&y) {
            return o;
        }
    }
    a.as_bytes().cmp(b.as_bytes())
}

/// What the reader threads send: parsed lines in batches, or a failure that ends the run.
pub(super) enum Batch {
    Messages {
        from: Arc<str>,
        source: Option<FileSource>,
        msgs: Box<Messages>,
    },
    Fatal(Error),
}

/// What threads other than readers tell the engine's thread, for display (only the
/// network doors have such threads).
#[cfg_attr(not(feature = "network"), allow(dead_code))]
pub(super) enum Notice {
    Note(String),
    Connected {
        to: String,
        from: Option<String>,
    },
    Reconnecting {
        to: String,
        why: String,
        after: Duration,
    },
}

/// A buffered reader that tells how many bytes it holds, so a reader thread can hand
/// over its batch before a read that may block (a quiet TCP peer, an idle stdin).
pub(super) struct Buffered<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    held: Arc<AtomicUsize>,
}

impl<R: Read> Buffered<R> {
    pub(super) fn new(inner: R) -> (Self, Arc<AtomicUsize>) {
        let held = Arc::new(AtomicUsize::new(0));
        let b = Buffered {
            inner,
            buf: vec![0; 256 * 1024].into_boxed_slice(),
            pos: 0,
            end: 0,
            held: held.clone(),
        };
        (b, held)
    }
}

impl<R: Read> Read for Buffered<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Buffered<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.end {
            self.end = loop {
                match self.inner.read(&mut self.buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            self.pos = 0;
            self.held.store(self.end, Ordering::Relaxed);
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
        self.held.store(self.end - self.pos, Ordering::Relaxed);
    }
}

const BATCH: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;

/// How readers parse: the key fields, whether good messages keep their text (for a
/// history table or a rejects file), the longest line, how hints are worded.
#[derive(Clone)]
pub(super) struct Parsing {
    pub(super) keys: Arc<[String]>,
    pub(super) keep_raw: bool,
    pub(super) max_line: usize,
    pub(super) word_hint: fn(Hint) -> String,
}

impl Parsing {
    /// Lines of `r`, whose first byte is byte `offset` of line `line` of the input.
    pub(super) fn lines<R: BufRead + Send + 'static>(
        &self,
        r: R,
        line: u64,
        offset: u64,
    ) -> LineObjects {
        LineObjects::new(Box::new(r), self.max_line, line, offset).with_limit_hint(Hint::LineLimit)
    }

    /// Reads one listener connection to its end (or `stop`), sending what it parses on
    /// `tx`; a failure ends this connection only, and is returned in words.
    #[cfg(feature = "network")]
    pub(super) fn read_connection(
        &self,
        reader: impl Read + Send + 'static,
        name: &Arc<str>,
        tx: &Sender<Batch>,
        stop: &AtomicBool,
    ) -> std::result::Result<(), String> {
        let (reader, held) = Buffered::new(reader);
        let mut lines = self.lines(reader, 1, 0);
        read_lines(&mut lines, &held, name, None, self, tx, stop, None).map_err(|e| e.to_string())
    }

    /// Reads `reader` to its end (or `stop`), sending what it parses on `tx`.
    pub(super) fn read_all(
        &self,
        reader: impl Read + Send + 'static,
        name: &Arc<str>,
        tx: &Sender<Batch>,
        stop: &AtomicBool,
    ) {
        let (reader, held) = Buffered::new(reader);
        let mut lines = self.lines(reader, 1, 0);
        if let Err(e) = read_lines(&mut lines, &held, name, None, self, tx, stop, None) {
            let _ = tx.send(Batch::Fatal(e));
        }
    }
}

/// What a feed's client learns from one connection's messages.
pub(super) struct Tracker<'a> {
    /// The position field.
    field: Option<&'a str>,
    /// The position the connection asked to start from.
    asked: Option<String>,
    /// Messages at or before `asked`.
    replayed: &'a AtomicU64,
    /// The last position read.
    pub last: Option<String>,
    /// Good messages read.
    pub good: u64,
    /// The first bad line, if it came before any good one (a server's refusal).
    pub first_bad: Option<Vec<u8>>,
}

impl<'a> Tracker<'a> {
    #[cfg_attr(not(feature = "network"), allow(dead_code))]
    pub(super) fn new(
        field: Option<&'a str>,
        asked: Option<String>,
        replayed: &'a AtomicU64,
    ) -> Self {
        Tracker {
            field,
            asked,
            replayed,
            last: None,
            good: 0,
            first_bad: None,
        }
    }

    fn saw(&mut self, msgs: &Messages, raw: &[u8]) {
        let Some(m) = msgs.messages().last() else {
            return;
        };
        if m.bad.is_some() {
            if self.good == 0 && self.first_bad.is_none() {
                self.first_bad = Some(raw.to_vec());
            }
            return;
        }
        self.good += 1;
        if let Some(p) = self.field.and_then(|f| msgs.position_of(m, f)) {
            if self
                .asked
                .as_deref()
                .is_some_and(|a| compare_positions(&p, a).is_le())
            {
                self.replayed.fetch_add(1, Ordering::Relaxed);
            }
            self.last = Some(p);
        }
    }
}

/// Parses what `lines` holds now (to the end of its input) and sends it to the engine
/// thread in batches: a batch goes when it is full, or when `held` says the next line
/// needs a read that may block. `source_id` names a source whose positions are resume
/// points; `track` learns what a feed's client needs from each message.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_lines(
    lines: &mut LineObjects,
    held: &AtomicUsize,
    from: &Arc<str>,
    source_id: Option<&FileSource>,
    how: &Parsing,
    tx: &Sender<Batch>,
    stop: &AtomicBool,
    mut track: Option<&mut Tracker<'_>>,
) -> Result<()> {
    let (keys, keep_raw) = (&how.keys[..], how.keep_raw);
    let mut msgs = Messages::new(keys);
    let send = |msgs: &mut Messages| {
        tx.send(Batch::Messages {
            from: from.clone(),
            source: source_id.cloned(),
            msgs: Box::new(std::mem::replace(msgs, Messages::new(keys))),
        })
        .is_ok()
    };
    while !stop.load(Ordering::Relaxed) {
        let next = match lines.next_line() {
            Ok(next) => next,
            Err((l, c, m)) => {
                // The lines read before the failure are whole messages: they are sent
                // on before the failure is reported, so that a caller that goes on
                // (a reconnect asking from the last position read, a listener serving
                // others) never skips one it has counted as read.
                if !msgs.is_empty() {
                    send(&mut msgs);
                }
                return Err(Error::io(
                    None,
                    std::io::Error::other(format!("{from}:{l}:{c}: {m}")),
                ));
            }
        };
        let Some(next) = next else { break };
        match next {
            Ok(raw) => {
                let meta = LineMeta {
                    line: raw.line,
                    column: raw.column,
                    next_line: 0,
                    next_offset: 0,
                };
                let text = raw.text;
                msgs.push_line(text, keep_raw, meta);
            }
            Err(bad) => {
                let meta = LineMeta {
                    line: bad.line,
                    column: bad.column,
                    next_line: 0,
                    next_offset: 0,
                };
                let why = bad.message + &bad.hint.map(how.word_hint).unwrap_or_default();
                msgs.push_bad(why, lines.last_line(), meta);
            }
        }
        if let Some(t) = track.as_deref_mut() {
            t.saw(&msgs, lines.last_line());
        }
        let (line, offset) = lines.position();
        msgs.set_last_position(line, offset);
        if (msgs.len() >= BATCH
            || msgs.text_bytes() >= BATCH_BYTES
            || held.load(Ordering::Relaxed) == 0)
            && !send(&mut msgs)
        {
            return Ok(());
        }
    }
    if !msgs.is_empty() {
        send(&mut msgs);
    }
    Ok(())
}
