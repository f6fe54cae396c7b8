//! JSON input: newline-delimited objects, or one top-level array of objects, streamed.
//!
//! Columns are the objects' keys in the order they are first seen. Keys are matched to
//! columns exactly; a key that differs from an earlier one only in ASCII case gets a
//! column of its own, `KEY_2` (SQLite's column names ignore case), as CSV headers do. A key
//! with a NUL byte makes its record a bad record. A key
//! first seen after the sample adds a column ([`Fill::NewColumns`]). JSON strings are
//! always TEXT (`"02134"` stays text); `true`/`false` are 1/0; nested objects and arrays
//! are stored as JSON text; an integer beyond i64 is stored as TEXT of its digits.

mod chunks;
mod fast;
mod fatal;
mod flatten;
mod objects;
pub mod record_path;
mod scan;

pub(crate) use chunks::{Chunks, Layout};
pub(crate) use fast::nested_object_text;
use fast::{fast_row, push_fast, FastRow};
pub(crate) use objects::needs_its_text;
pub(crate) use objects::TextRecord;
pub use objects::{
    explain_bad_line, parse_lossless, BadObj, ElementText, Fatal, Item, LineObjects, Obj,
    ObjectStream, RawElement,
};
use objects::{line_item, parse_lossless_keeping};

use std::collections::VecDeque;
use std::io::BufRead;
use std::sync::Arc;

use serde_json::Value;

use super::convert::{json_lexeme, push_json_value, Mismatches};
use super::keys::KeyColumns;
use super::{BadRecord, Fill, ReadOptions, Sample, Source};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Position, Result};
use crate::types::{classify, Lexeme};
use crate::types::{ColumnType, TypeGuess};

/// What [`JsonSource::next_fast`] did.
enum Next {
    /// A record for the slow path.
    Record(Sampled),
    /// A row went into the batch.
    Pushed,
    /// The end of the input.
    Done,
}

enum Sampled {
    Obj(u64, Obj),
    /// An object of the sample kept as its text: its map was needed only for the
    /// sample's columns and types, and 10,000 maps held until they are handed out cost
    /// about 25 MB of the load's peak memory (the text, a tenth of that).
    Text(u64, SampledText),
    Bad(u64, BadObj),
}

/// The text of an object read in the sample (it parsed as one, with no key refused),
/// and where it started.
struct SampledText {
    text: Box<[u8]>,
    line: u64,
    column: u64,
    byte: u64,
}

impl SampledText {
    /// The object again, for the slow path (flattened with `flatten`, as
    /// [`JsonSource::classify`] flattens a record read the first time).
    fn reparsed(self, flatten: bool) -> Result<Obj> {
        match parse_lossless_keeping(&self.text) {
            Ok((Value::Object(mut map), whole)) => Ok(Obj {
                map: if flatten {
                    flatten::objects_again(&mut map, &whole);
                    flatten::flatten(map)
                } else {
                    map
                },
                line: self.line,
                column: self.column,
                byte: self.byte,
                whole: vec![],
            }),
            _ => Err(Error::internal("a sampled JSON object no longer parses")),
        }
    }
}

/// What [`Parts::next`] hands out.
pub(super) enum Handed {
    /// The next chunk's rows, numbered; the line and column of the first mismatch are in
    /// its message.
    Batch {
        batch: Batch,
        records: u64,
        mismatches: u64,
        first: Option<String>,
    },
    /// The next chunk, to be read by the sequential reader (then [`Chunks::reread`]).
    Again(ObjectStream),
    /// No more chunks.
    Done,
}

/// The parts of a large file that other threads read ([`chunks`]), as the source
/// reading the file's head sees them.
pub(super) trait Parts: Send {
    /// Makes the threads encode rows as SQLite records; before they start.
    fn encode(&mut self);
    /// Whether the parts are being handed out (the head is no longer read).
    fn started(&self) -> bool;
    /// Says where the records' array was found (see [`record_path`]), so that the part
    /// that ends the input is read with the rest of the document around it; before the
    /// first [`next`](Self::next).
    fn wrapped(&mut self, wrapping: Option<record_path::Wrapping>);
    /// Makes `keys` and `types` the columns the threads read against from their next part.
    fn publish(&self, keys: &KeyColumns, types: &[ColumnType]);
    /// The next part, after the head ended at `head` (line, column, byte) with `records`
    /// records read.
    fn next(&mut self, head: (u64, u64, u64), records: u64) -> Result<Handed>;
    /// The part handed out as [`Handed::Again`] has been read; the sequential reader
    /// stopped on line `line`.
    fn reread(&mut self, line: u64);
    /// Hands a batch back for a thread to reuse.
    fn give_back(&self, batch: Batch);
}

/// Reads JSON objects into typed batches.
pub struct JsonSource {
    stream: ObjectStream,
    name: Arc<str>,
    opts: ReadOptions,
    keys: KeyColumns,
    types: Vec<ColumnType>,
    sampled: VecDeque<Sampled>,
    pending: Option<(u64, Obj)>,
    records: u64,
    mismatches: Mismatches,
    scratch: String,
    /// After the sample, the rest of the file read by several threads (NDJSON in a
    /// regular file; see [`chunks`]).
    chunks: Option<Box<dyn Parts>>,
    /// Whether `stream` is a chunk being read again in order.
    rereading: bool,
    /// Whether lines after the sample may take the fast path (tests compare without).
    fast: bool,
    /// Whether rows go into batches as encoded records (see [`Source::make_records`]).
    encode: bool,
    /// Reused to encode rows when `encode` is set.
    record: liteload_btree::RecordBuilder,
    /// The array element the fast path's row borrows from.
    element: Option<ElementText>,
    /// The sampled object the fast path's row borrows from.
    held: Option<SampledText>,
}

impl JsonSource {
    /// A source of the objects of `stream`, named `name` in positions.
    pub fn new(stream: ObjectStream, name: Arc<str>, opts: ReadOptions) -> Self {
        JsonSource {
            stream,
            name,
            keys: KeyColumns::flattening(opts.flatten.clone()),
            opts,
            types: vec![],
            sampled: VecDeque::new(),
            pending: None,
            records: 0,
            mismatches: Mismatches::default(),
            scratch: String::new(),
            chunks: None,
            rereading: false,
            fast: true,
            encode: false,
            record: liteload_btree::RecordBuilder::new(),
            element: None,
            held: None,
        }
    }

    /// Reads every line as a map first, as before the fast path: the reference the fast
    /// path is tested against.
    #[cfg(test)]
    pub(super) fn slow_only(mut self) -> Self {
        self.fast = false;
        self
    }

    /// Reads what follows the sample in `chunks`, on their threads. For a source over
    /// the file that `chunks` cuts, from its start, in the layout `chunks` expects.
    pub(super) fn with_chunks(mut self, chunks: Box<dyn Parts>) -> Self {
        self.chunks = Some(chunks);
        self
    }

    /// The next chunk after the sample: its rows into `batch` (which must be empty), or
    /// the chunk as `stream`, to be read in order. `false` at the end.
    fn next_chunk(&mut self, batch: &mut Batch) -> Result<bool> {
        // Where the head stopped, before the first chunk (later `stream` may be a chunk
        // read again).
        let started = self.chunks.as_ref().is_some_and(|c| c.started());
        let head = match &self.stream {
            _ if started => Some((0, 0, 0)),
            ObjectStream::Lines(lines) => {
                let (line, byte) = lines.read_to();
                Some((line, 1, byte))
            }
            ObjectStream::Array(a) => a.position(),
        };
        let Some(head) = head else {
            // The head read the whole array (or none of it): it reads on alone.
            self.chunks = None;
            return Ok(true);
        };
        let chunks = self.chunks.as_mut().expect("reading chunks");
        if !started {
            if let ObjectStream::Array(a) = &self.stream {
                chunks.wrapped(a.wrapping().cloned());
            }
        }
        match chunks.next(head, self.records)? {
            Handed::Batch {
                batch: mut got,
                records,
                mismatches,
                first,
            } => {
                // Read before columns were added: their rows have none of the new keys.
                got.widen(self.keys.columns.len());
                std::mem::swap(batch, &mut got);
                got.clear(0);
                chunks.give_back(got);
                self.records += records;
                self.mismatches.count += mismatches;
                if self.mismatches.first.is_none() {
                    self.mismatches.first = first;
                }
                Ok(true)
            }
            Handed::Again(stream) => {
                self.stream = stream;
                self.rereading = true;
                Ok(true)
            }
            Handed::Done => Ok(false),
        }
    }

    fn read(&mut self) -> Result<Option<Sampled>> {
        match self.stream.next() {
            Ok(None) => Ok(None),
            Ok(Some(item)) => Ok(Some(self.classify(item))),
            Err(f) => Err(self.fatal(f)),
        }
    }

    fn fatal(&self, f: Fatal) -> Error {
        let pos = Position {
            path: self.name.clone(),
            line: f.line,
            column: f.column,
            // (0: none, for an error in the document around the records.)
            record: if f.outside { 0 } else { self.records + 1 },
            byte: 0,
        };
        Error::input(pos, None, f.message).with_hint(f.hint)
    }

    /// Numbers `item` as the next record, and refuses an object with a key no column can have.
    fn classify(&mut self, item: Item) -> Sampled {
        {
            {
                self.records += 1;
                let flat = self.keys.flatten.is_some();
                let item = match item {
                    Item::Obj(mut o) if flat => {
                        flatten::objects_again(&mut o.map, &std::mem::take(&mut o.whole));
                        Item::Obj(o)
                    }
                    item => item,
                };
                match item {
                    Item::Obj(o) => match flatten::nul_key(&o.map, flat) {
                        // SQLite's SQL text ends at a NUL: no column can have this name.
                        Some(k) => Sampled::Bad(
                            self.records,
                            BadObj {
                                line: o.line,
                                column: o.column,
                                byte: o.byte,
                                message: format!(
                                    "key {k:?} has a NUL byte, which no column name can hold"
                                ),
                                hint: None,
                                raw: Value::Object(o.map),
                            },
                        ),
                        None if flat => Sampled::Obj(
                            self.records,
                            Obj {
                                map: flatten::flatten(o.map),
                                ..o
                            },
                        ),
                        None => Sampled::Obj(self.records, o),
                    },
                    Item::Bad(b) => Sampled::Bad(self.records, b),
                }
            }
        }
    }

    /// The next record after the sample (an NDJSON line or an array element): an object
    /// whose keys all have columns goes straight into `batch` without being built as a
    /// map ([`fast_row`]: about 3x less work a line); anything else comes back as the
    /// slow path's record.
    fn next_fast(&mut self, batch: &mut Batch, slots: &mut FastRow<'static>) -> Result<Next> {
        if !self.fast {
            return Ok(match self.read()? {
                Some(s) => Next::Record(s),
                None => Next::Done,
            });
        }
        // The row's allocations are reused record after record: emptied, they take any
        // lifetime (collecting an empty vector in place keeps its allocation).
        let mut row: FastRow<'_> = std::mem::take(slots).recycle();
        // Sampled objects kept as text come first; they were numbered when sampled.
        let (line, column, no) = if let Some(Sampled::Text(..)) = self.sampled.front() {
            let Some(Sampled::Text(no, text)) = self.sampled.pop_front() else {
                unreachable!("the front was a sampled text")
            };
            let held = self.held.insert(text);
            if !fast_row(&held.text, &self.keys, &mut row) {
                *slots = row.recycle();
                let text = self.held.take().expect("just held");
                let obj = text.reparsed(self.keys.flatten.is_some())?;
                return Ok(Next::Record(Sampled::Obj(no, obj)));
            }
            (held.line, held.column, no)
        } else {
            let (line, column) = match &mut self.stream {
                ObjectStream::Lines(lines) => {
                    let raw = match lines.next_line() {
                        Err((line, column, m)) => {
                            return Err(self.fatal(Fatal::new(line, column, m)))
                        }
                        Ok(None) => return Ok(Next::Done),
                        Ok(Some(Err(bad))) => {
                            return Ok(Next::Record(self.classify(Item::Bad(bad))))
                        }
                        Ok(Some(Ok(raw))) => raw,
                    };
                    if !fast_row(raw.text, &self.keys, &mut row) {
                        let item = line_item(&raw);
                        *slots = row.recycle();
                        return Ok(Next::Record(self.classify(item)));
                    }
                    (raw.line, raw.column)
                }
                // An element is read whole as text (checked as JSON) either way; only the
                // map of the slow path is saved.
                // (fast_row checks the text as JSON as it reads it; only what it refuses
                // is checked as a stream would check it, for the same errors.)
                ObjectStream::Array(array) => {
                    match array.next_text() {
                        Err(f) => return Err(self.fatal(f)),
                        Ok(None) => return Ok(Next::Done),
                        Ok(Some(el)) => self.element = Some(el),
                    }
                    let el = self.element.as_ref().expect("just read");
                    if !fast_row(&el.text, &self.keys, &mut row) {
                        *slots = row.recycle();
                        let el = self.element.take().expect("just read");
                        let item = el.checked().and_then(RawElement::item);
                        let item = item.map_err(|f| self.fatal(f))?;
                        return Ok(Next::Record(self.classify(item)));
                    }
                    (el.line, el.column)
                }
            };
            self.records += 1;
            (line, column, self.records)
        };
        let (m, bad) = if self.encode {
            let mut record = std::mem::take(&mut self.record);
            record.clear();
            let r = push_fast(
                &mut record,
                &row,
                &self.types,
                self.opts.nulls == super::Nulls::All,
                self.opts.text_fields,
                &mut self.scratch,
            );
            batch.push_record(&record);
            self.record = record;
            r
        } else {
            push_fast(
                batch,
                &row,
                &self.types,
                self.opts.nulls == super::Nulls::All,
                self.opts.text_fields,
                &mut self.scratch,
            )
        };
        self.mismatches.count += m;
        if let (None, Some((i, v))) = (&self.mismatches.first, bad) {
            self.mismatches.first = Some(format!(
                "{}:{}:{}: {} in {} column {:?}",
                self.name, line, column, v, self.types[i], self.keys.columns[i]
            ));
        }
        batch.finish_row(RowOrigin { line, record: no });
        *slots = row.recycle();
        Ok(Next::Pushed)
    }

    fn pos(&self, line: u64, column: u64, record: u64, byte: u64) -> Position {
        Position {
            path: self.name.clone(),
            line,
            column,
            record,
            byte,
        }
    }
}

impl Source for JsonSource {
    fn sample(&mut self) -> Result<Sample> {
        if self.opts.skip_lines > 0 {
            if let ObjectStream::Lines(l) = &mut self.stream {
                for _ in 0..self.opts.skip_lines {
                    let mut sink = Vec::new();
                    l.r.read_until(b'\n', &mut sink)
                        .map_err(|e| Error::io(None, e))?;
                    l.line += 1;
                    l.byte += sink.len() as u64;
                }
            }
        }
        let mut guesses: Vec<TypeGuess> = vec![];
        while self.sampled.len() < self.opts.sample_rows {
            let (item, text) = match self.stream.next_with_text() {
                Ok(None) => break,
                Ok(Some((item, text))) => (self.classify(item), text),
                Err(f) => return Err(self.fatal(f)),
            };
            let item = match item {
                Sampled::Obj(no, o) => {
                    for (k, v) in &o.map {
                        let i = match self.keys.get(k) {
                            Some(i) => i,
                            None => self.keys.add(k),
                        };
                        if guesses.len() <= i {
                            guesses.resize(i + 1, TypeGuess::default());
                        }
                        guesses[i].add(lexeme(v, self.opts.text_fields));
                    }
                    match text {
                        Some(text) if self.fast => Sampled::Text(
                            no,
                            SampledText {
                                text,
                                line: o.line,
                                column: o.column,
                                byte: o.byte,
                            },
                        ),
                        _ => Sampled::Obj(no, o),
                    }
                }
                other => other,
            };
            self.sampled.push_back(item);
        }
        if let ObjectStream::Array(a) = &self.stream {
            if let Some(w) = a.wrapping().filter(|w| w.chosen) {
                self.keys.notes.push(format!(
                    "the records are the objects of the array at {} (the one member of the top-level object holding objects)",
                    record_path::shown(&w.steps)
                ));
            }
        }
        if self.keys.columns.is_empty() {
            // Nothing names a column: the first bad record is the error, at its place.
            let first_bad = self.sampled.iter().find_map(|s| match s {
                Sampled::Bad(no, b) => Some((*no, b)),
                Sampled::Obj(..) | Sampled::Text(..) => None,
            });
            if let Some((no, b)) = first_bad {
                return Err(Error::input(
                    self.pos(b.line, b.column, no, b.byte),
                    None,
                    format!(
                        "{} (and no record of the sample is an object with keys to name the columns)",
                        b.message
                    ),
                )
                .with_hint(b.hint));
            }
        }
        Ok(Sample {
            types: None,
            columns: self.keys.columns.clone(),
            guesses,
            notes: std::mem::take(&mut self.keys.notes),
            locale: vec![],
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types = types;
        if let Some(c) = &self.chunks {
            c.publish(&self.keys, &self.types);
        }
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        let mut slots: Vec<Option<Value>> = Vec::new();
        let mut fast_slots = FastRow::default();
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            if self.pending.is_none()
                && self.sampled.is_empty()
                && self.chunks.is_some()
                && !self.rereading
            {
                // A chunk's batch is handed out whole, in a batch of its own.
                if !batch.is_empty() {
                    return Ok(Fill::Full);
                }
                if !self.next_chunk(batch)? {
                    return Ok(Fill::Done);
                }
                if !batch.is_empty() {
                    return Ok(Fill::Full);
                }
                continue;
            }
            let (no, obj) = if let Some(p) = self.pending.take() {
                p
            } else {
                // (A sample kept as text is read by the fast path.)
                let front = match self.sampled.front() {
                    Some(Sampled::Obj(..) | Sampled::Bad(..)) => self.sampled.pop_front(),
                    _ => None,
                };
                let item = match front {
                    Some(s) => s,
                    None => match self.next_fast(batch, &mut fast_slots)? {
                        Next::Record(s) => s,
                        Next::Pushed => continue,
                        Next::Done if self.rereading => {
                            // (An array's chunks carry their own lines.)
                            let line = match &self.stream {
                                ObjectStream::Lines(lines) => lines.read_to().0,
                                ObjectStream::Array(_) => 0,
                            };
                            self.rereading = false;
                            if let Some(c) = &mut self.chunks {
                                c.reread(line);
                            }
                            continue;
                        }
                        Next::Done => return Ok(Fill::Done),
                    },
                };
                match item {
                    Sampled::Obj(no, o) => (no, o),
                    Sampled::Text(no, t) => (no, t.reparsed(self.keys.flatten.is_some())?),
                    Sampled::Bad(no, b) => {
                        bad(BadRecord {
                            error: b.error(self.pos(b.line, b.column, no, b.byte)),
                            fields: b.raw,
                        })?;
                        continue;
                    }
                }
            };
            // New keys: add their columns first, then come back for this object.
            let new: Vec<String> = obj
                .map
                .keys()
                .filter(|k| self.keys.get(k).is_none())
                .cloned()
                .collect();
            if !new.is_empty() {
                let mut added = vec![];
                for k in new {
                    let ty = {
                        let mut g = TypeGuess::default();
                        g.add(lexeme(&obj.map[&k], self.opts.text_fields));
                        g.resolve()
                    };
                    let i = self.keys.add(&k);
                    self.types.push(ty);
                    added.push((self.keys.columns[i].clone(), ty));
                }
                self.pending = Some((no, obj));
                if let Some(c) = &self.chunks {
                    c.publish(&self.keys, &self.types);
                }
                return Ok(Fill::NewColumns(added));
            }
            slots.clear();
            slots.resize(self.keys.columns.len(), None);
            for (k, v) in obj.map {
                if let Some(i) = self.keys.get(&k) {
                    slots[i] = Some(v);
                }
            }
            let mut record = std::mem::take(&mut self.record);
            record.clear();
            let mut first = None;
            for (i, slot) in slots.iter().enumerate() {
                let mismatch = match slot {
                    None if self.encode => {
                        record.null();
                        false
                    }
                    None => {
                        batch.push(Cell::Null);
                        false
                    }
                    Some(v) => {
                        let (ty, empty_null, fields) = (
                            self.types[i],
                            self.opts.nulls == super::Nulls::All,
                            self.opts.text_fields,
                        );
                        if self.encode {
                            push_json_value(
                                &mut record,
                                v,
                                ty,
                                empty_null,
                                fields,
                                &mut self.scratch,
                            )
                        } else {
                            push_json_value(batch, v, ty, empty_null, fields, &mut self.scratch)
                        }
                    }
                };
                if mismatch {
                    self.mismatches.count += 1;
                    first = first.or(Some(i));
                }
            }
            if self.encode {
                batch.push_record(&record);
            }
            self.record = record;
            if let (None, Some(i)) = (&self.mismatches.first, first) {
                self.mismatches.first = Some(format!(
                    "{}:{}:{}: {} in {} column {:?}",
                    self.name,
                    obj.line,
                    obj.column,
                    slots[i].as_ref().expect("a mismatch has a value"),
                    self.types[i],
                    self.keys.columns[i]
                ));
            }
            batch.finish_row(RowOrigin {
                line: obj.line,
                record: no,
            });
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.keys.columns.len()
    }

    /// Before the first `fill` only (the reading threads take it when they start).
    fn make_records(&mut self) -> bool {
        if self.chunks.as_ref().is_some_and(|c| c.started()) {
            return false;
        }
        if let Some(c) = &mut self.chunks {
            c.encode();
        }
        self.encode = true;
        true
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}
/// What a JSON value says about its column's type; with `fields`, a string as the
/// same text in a CSV field says.
fn lexeme(v: &serde_json::Value, fields: bool) -> Lexeme {
    match v {
        serde_json::Value::String(s) if fields => classify(s.as_bytes()),
        v => json_lexeme(v),
    }
}
