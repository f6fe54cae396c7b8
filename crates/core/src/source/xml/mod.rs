//! Record-oriented XML: each element at a record path (`posts/row`) is a row.
//!
//! A row's columns are its attributes and its text-only child elements, by local name
//! (the prefix is kept only where two names would collide; a name SQLite would take for
//! an earlier column gets `_2`, as CSV headers do, with a note); a child with children
//! or attributes of its own, or one that repeats, is a TEXT column of JSON (see
//! [`record`]); the record's own text is a column named `text`. Values are typed from
//! the sample by the rules CSV fields follow; a name first seen after the sample adds a
//! column, as NDJSON keys do.
//!
//! The document is read as a stream: one thread cuts it into chunks of whole records
//! ([`split`]), others parse the chunks (quick-xml), and rows leave in document order.
//! Memory stays bounded by the chunks in flight, whatever the document's size.

mod prolog;
mod record;
pub(crate) mod split;

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};

use super::convert::{push_text_field, Mismatches, Values};
use super::input::{self, Encoding, Input};
use super::keys::KeyColumns;
use super::{BadRecord, Fill, ReadOptions, Sample, Source};
use crate::batch::{Batch, RowOrigin};
use crate::error::{Error, Position, Result};
use crate::types::{classify, ColumnType, Lexeme, TypeGuess};
use prolog::{Entities, Refs};
use record::{Rows, ATTRIBUTE, CHILD, OWN_TEXT};
use split::{SplitError, Splitter};

pub(crate) use prolog::encoding_of;
pub(crate) use split::choose_record;

/// A record path as given (`posts/row`, `/posts/row/`): its steps.
pub(crate) fn path_steps(path: &str) -> Result<Vec<String>> {
    let steps: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    if steps.is_empty() || steps.iter().any(|s| s.contains(char::is_whitespace)) {
        return Err(Error::usage(format!(
            "{path:?} is no record path (element names from the root, separated by '/', such as posts/row)"
        )));
    }
    Ok(steps)
}

/// `input` opened as XML: its encoding decoded, the record path that `opts.record`
/// names or [`choose_record`] chooses (and whether it was chosen), and a splitter that
/// cuts the document into chunks of whole records.
pub(crate) fn open_splitter(
    input: &Input,
    opts: &ReadOptions,
    bytes_read: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
) -> Result<(Splitter, Vec<String>, bool)> {
    let name: Arc<str> = input.display_name().into();
    let path_of = || match input {
        Input::Path(p) => Some(p.clone()),
        _ => None,
    };
    let pos = |line: u64, column: u64, byte: u64| Position {
        path: name.clone(),
        line,
        column,
        record: 0,
        byte,
    };
    let mut raw = input::open(input, Encoding::Utf8, bytes_read, Some(cancel))?;
    let mut head = Vec::with_capacity(4096);
    while head.len() < 1024 {
        let buf = raw.fill_buf().map_err(|e| Error::io(path_of(), e))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len().min(4096 - head.len());
        head.extend_from_slice(&buf[..n]);
        raw.consume(n);
    }
    // An encoding the caller gave wins over the byte-order mark and the declaration.
    let encoding = if opts.encoding == Encoding::Utf8 && !opts.encoding_given {
        encoding_of(&head).map_err(|(col, m)| Error::input(pos(1, col, 0), None, m))?
    } else {
        opts.encoding
    };
    let whole: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(head).chain(raw));
    let text = input::decode(whole, encoding, input)?;
    let mut splitter = Splitter::new(text, vec![], opts.max_record_bytes);
    splitter
        .fill_to(super::head::SAMPLE_BYTES)
        .map_err(|e| Error::io(path_of(), e))?;
    let (path, chosen) = match &opts.record {
        Some(p) => (path_steps(p)?, false),
        None => {
            // The sample's first 64 KiB, or more while they end inside the first
            // records (up to a record's size limit).
            let mut window = super::head::SAMPLE_BYTES;
            loop {
                let head = splitter.head();
                let complete = head.len() < window;
                let head = &head[..head.len().min(window)];
                let chosen = choose_record(head, complete)
                    .map_err(|m| Error::input(pos(1, 1, 0), None, m))?;
                if let Some(p) = chosen {
                    break (p, true);
                }
                if window >= opts.max_record_bytes {
                    return Err(Error::input(
                        pos(1, 1, 0),
                        None,
                        format!(
                            "the document's first records do not end within its first {} bytes, so the record path cannot be chosen; name it",
                            window
                        ),
                    ));
                }
                window = window.saturating_mul(4).min(opts.max_record_bytes);
                splitter
                    .fill_to(window)
                    .map_err(|e| Error::io(path_of(), e))?;
            }
        }
    };
    splitter.set_path(path.clone());
    Ok((splitter, path, chosen))
}

/// What the threads send, in document order by its number.
type Parsed = (u64, std::result::Result<Rows, Error>);

/// An XML document as a [`Source`].
pub(crate) struct XmlSource {
    name: Arc<str>,
    opts: ReadOptions,
    /// The record path, and whether it was chosen here (not given).
    path: Vec<String>,
    chosen: bool,
    rx: Receiver<Parsed>,
    /// Chunks that arrived before their turn.
    early: BTreeMap<u64, std::result::Result<Rows, Error>>,
    next_seq: u64,
    /// Parsed chunks to push, and the next row and field in the first.
    queue: VecDeque<Rows>,
    row: usize,
    field: usize,
    done: bool,
    keys: KeyColumns,
    types: Vec<ColumnType>,
    records: u64,
    mismatches: Mismatches,
    slots: Vec<Option<(usize, usize)>>,
    /// Rows as encoded SQLite records ([`Source::make_records`]), built here.
    record: Option<liteload_btree::RecordBuilder>,
}

impl XmlSource {
    /// Opens `input`: its encoding from a byte-order mark or the declaration (unless
    /// `opts.encoding` names one other than UTF-8), its record path from
    /// `opts.record` or [`choose_record`], and starts the threads that read it.
    pub(crate) fn open(
        input: &Input,
        opts: &ReadOptions,
        bytes_read: Arc<AtomicU64>,
        cancel: Arc<AtomicBool>,
    ) -> Result<Self> {
        let (splitter, path, chosen) = open_splitter(input, opts, bytes_read, cancel)?;
        let name: Arc<str> = input.display_name().into();
        let path_of = || match input {
            Input::Path(p) => Some(p.clone()),
            _ => None,
        };
        let rx = start_threads(splitter, name.clone(), opts, path_of());
        Ok(XmlSource {
            name,
            opts: opts.clone(),
            path,
            chosen,
            rx,
            early: BTreeMap::new(),
            next_seq: 0,
            queue: VecDeque::new(),
            row: 0,
            field: 0,
            done: false,
            keys: KeyColumns::flattening(opts.flatten.clone()),
            types: vec![],
            records: 0,
            mismatches: Mismatches::default(),
            slots: vec![],
            record: None,
        })
    }

    /// The next parsed chunk in document order, `None` at the end.
    fn next_rows(&mut self) -> Result<Option<Rows>> {
        if self.done {
            return Ok(None);
        }
        loop {
            if let Some(r) = self.early.remove(&self.next_seq) {
                self.next_seq += 1;
                return r.map(Some);
            }
            match self.rx.recv() {
                Ok((seq, r)) => {
                    self.early.insert(seq, r);
                }
                Err(_) => {
                    // Every sender is gone: the splitter sent its last chunk.
                    self.done = true;
                    return Ok(None);
                }
            }
        }
    }

    /// Makes sure the queue's front has a row to push; `false` at the end.
    fn front(&mut self) -> Result<bool> {
        loop {
            match self.queue.front() {
                Some(r) if self.row < r.rows.len() => return Ok(true),
                Some(_) => {
                    self.queue.pop_front();
                    self.row = 0;
                    self.field = 0;
                }
                None => match self.next_rows()? {
                    Some(r) => self.queue.push_back(r),
                    None => return Ok(false),
                },
            }
        }
    }

    /// The column of a field's key, `None` if it has none yet.
    fn column_of(&self, rows: &Rows, f: &record::Field) -> Option<usize> {
        self.keys.get(rows.str(f.key))
    }

    /// Adds a column for `key` (a field's stored key).
    fn add_key(keys: &mut KeyColumns, key: &str) -> usize {
        let (kind, qname) = key.split_at(1);
        if let (Some(sep), true) = (&keys.flatten, qname.contains(record::FLAT)) {
            // A flattened field: its steps' local names (an attribute's without `@`, the
            // own text `text`) joined by the separator.
            let steps: Vec<&str> = qname.split(record::FLAT).collect();
            let wanted: Vec<&str> = steps
                .iter()
                .map(|s| match *s {
                    OWN_TEXT => "text",
                    s => {
                        let s = s.strip_prefix('@').unwrap_or(s);
                        s.rsplit(':').next().unwrap_or(s)
                    }
                })
                .collect();
            let what = format!("<{}>", steps.join("> > <"));
            return keys.add_named(key, &wanted.join(sep), None, &what);
        }
        let what = match kind.as_bytes()[0] {
            ATTRIBUTE => format!("attribute {qname:?}"),
            CHILD => format!("element <{qname}>"),
            _ => "the record's own text".to_string(),
        };
        if kind.as_bytes()[0] != ATTRIBUTE && kind.as_bytes()[0] != CHILD {
            return keys.add_named(key, "text", None, &what);
        }
        let local = qname.rsplit(':').next().unwrap_or(qname);
        let alternative = (local != qname).then_some(qname);
        keys.add_named(key, local, alternative, &what)
    }

    /// Pushes the next row of `rows` into `batch`, or, when it has keys that are no
    /// columns yet, adds their columns (typed by its values) and returns them.
    fn push_row(&mut self, batch: &mut Batch, rows: &Rows) -> Option<Vec<(String, ColumnType)>> {
        let end = rows.rows[self.row];
        let fields = &rows.fields[self.field..end.fields_end];
        // One look-up per field: its column, or a note that the row has a new key.
        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        slots.resize(self.keys.columns.len(), None);
        let mut new_keys = false;
        for f in fields {
            match self.column_of(rows, f) {
                Some(c) => slots[c] = Some(f.value),
                None => new_keys = true,
            }
        }
        self.slots = slots;
        if new_keys {
            let mut added = vec![];
            for f in fields {
                if self.column_of(rows, f).is_none() {
                    let c = Self::add_key(&mut self.keys, rows.str(f.key));
                    let mut g = TypeGuess::default();
                    g.add(Self::lexeme(rows, f));
                    added.push((self.keys.columns[c].clone(), g.resolve()));
                }
            }
            self.types.extend(added.iter().map(|(_, t)| *t));
            return Some(added);
        }
        let slots = std::mem::take(&mut self.slots);
        self.records += 1;
        match self.record.take() {
            Some(mut record) => {
                record.clear();
                self.convert(&mut record, rows, &slots, end.line);
                batch.push_record(&record);
                self.record = Some(record);
            }
            None => self.convert(batch, rows, &slots, end.line),
        }
        self.slots = slots;
        batch.finish_row(RowOrigin {
            line: end.line,
            record: self.records,
        });
        self.field = end.fields_end;
        self.row += 1;
        None
    }

    /// Pushes a row's values (`slots`, per column: a range of `rows.text`, or none) into
    /// `to`, each converted by its column's type.
    fn convert(
        &mut self,
        to: &mut impl Values,
        rows: &Rows,
        slots: &[Option<(usize, usize)>],
        line: u64,
    ) {
        for (c, v) in slots.iter().enumerate() {
            let Some(v) = v else {
                to.null();
                continue;
            };
            let s = rows.str(*v);
            let ty = self.types[c];
            if push_text_field(to, s, ty, self.opts.nulls == crate::source::Nulls::All) {
                let (name, column) = (&self.name, &self.keys.columns[c]);
                self.mismatches
                    .note(|| format!("{name}:{line}:1: {s:?} in {ty} column {column:?}"));
            }
        }
    }

    /// An error about the whole document (placed at its start).
    fn document_error(&self, message: String) -> Error {
        let pos = Position {
            path: self.name.clone(),
            line: 1,
            column: 1,
            record: 0,
            byte: 0,
        };
        Error::input(pos, None, message)
    }

    fn lexeme(rows: &Rows, f: &record::Field) -> Lexeme {
        if f.json {
            Lexeme::Text
        } else {
            classify(rows.str(f.value).as_bytes())
        }
    }
}

/// The splitter's thread and the parsers' threads; rows come back on the receiver.
fn start_threads(
    mut splitter: Splitter,
    name: Arc<str>,
    opts: &ReadOptions,
    path: Option<std::path::PathBuf>,
) -> Receiver<Parsed> {
    let threads = opts.parse_threads.max(1);
    let (chunk_tx, chunk_rx) = bounded::<(
        u64,
        std::result::Result<(split::Chunk, Arc<Entities>), Error>,
    )>(threads * 2);
    let (rows_tx, rows_rx) = bounded::<Parsed>(threads * 2);
    let max = opts.max_record_bytes;
    let flatten = opts.flatten.is_some();
    let at = {
        let name = name.clone();
        move |line, column, byte| Position {
            path: name.clone(),
            line,
            column,
            record: 0,
            byte,
        }
    };
    let spawn_name = name.clone();
    std::thread::spawn(move || {
        for seq in 0u64.. {
            let job = match splitter.next_chunk() {
                Ok(None) => return,
                // The splitter read the DTD's entities when the root started.
                Ok(Some(chunk)) => Ok((chunk, splitter.entities())),
                Err(e) => Err(split_error(e, &splitter, &at, path.as_ref(), max)),
            };
            let failed = job.is_err();
            if chunk_tx.send((seq, job)).is_err() || failed {
                return;
            }
        }
    });
    for _ in 0..threads {
        let rx = chunk_rx.clone();
        let tx = rows_tx.clone();
        let name = spawn_name.clone();
        std::thread::spawn(move || {
            while let Ok((seq, job)) = rx.recv() {
                let failed = job.is_err();
                let out =
                    job.and_then(|(chunk, ents)| parse_chunk(&chunk, &ents, &name, max, flatten));
                let failed = failed || out.is_err();
                if tx.send((seq, out)).is_err() || failed {
                    return;
                }
            }
        });
    }
    rows_rx
}

/// The error of a document the splitter stopped at (`at` makes a position).
fn split_error(
    e: SplitError,
    splitter: &Splitter,
    at: &dyn Fn(u64, u64, u64) -> Position,
    path: Option<&std::path::PathBuf>,
    max: usize,
) -> Error {
    match e {
        SplitError::Io(e) => Error::io(path.cloned(), e),
        SplitError::Fault(f) => Error::input(at(f.line, f.column, f.byte), None, f.message),
        SplitError::Open { record, at: rec } => {
            // The record's parser says what is wrong with it where it can.
            let text = String::from_utf8_lossy(&record);
            let mut rows = Rows::default();
            // With the document's entities, so that an entity of its DTD is no error
            // here.
            let known = splitter.entities();
            let left = std::cell::Cell::new(Refs::chunk_budget(record.len(), max));
            let consumed = rec.byte + record.len() as u64;
            let parsed =
                record::parse_record(&text, rec.line, &known, max, &left, consumed, &mut rows);
            let (line, column, message) = match parsed {
                Err((offset, m)) => located(&record, rec, offset, m),
                Ok(()) => located(
                    &record,
                    rec,
                    0,
                    "the document ends inside this record".into(),
                ),
            };
            Error::input(at(line, column, rec.byte), None, message)
        }
    }
}

/// One record of [`related_records`]: its JSON object's range in the chunk's text, and
/// where its element starts (line, column, byte).
pub(crate) type RelatedRecord = (std::ops::Range<usize>, (u64, u64, u64));

/// The position of a line, column and byte of the input named `name` (no record).
fn place_in(name: &Arc<str>) -> impl Fn(u64, u64, u64) -> Position + '_ {
    move |line, column, byte| Position {
        path: name.clone(),
        line,
        column,
        record: 0,
        byte,
    }
}

/// A chunk of the document's records as the splitter cut them, with the entities
/// they are read with: read on one thread ([`next_related`]), made JSON objects on
/// any ([`related_records`]).
pub(crate) struct RelatedChunk {
    chunk: split::Chunk,
    ents: Arc<Entities>,
}

impl RelatedChunk {
    /// How many records the chunk holds.
    pub(crate) fn len(&self) -> usize {
        self.chunk.records.len()
    }
}

/// The next chunk of the document's records (from `splitter`, of `input`), `None` at
/// the end. A document that is not well-formed between or around records is an error
/// at its place, as in a flat load.
pub(crate) fn next_related(
    splitter: &mut Splitter,
    input: &Input,
    max: usize,
) -> Result<Option<RelatedChunk>> {
    let name: Arc<str> = input.display_name().into();
    let path = match input {
        Input::Path(p) => Some(p.clone()),
        _ => None,
    };
    let at = place_in(&name);
    match splitter.next_chunk() {
        Ok(None) => Ok(None),
        Ok(Some(chunk)) => Ok(Some(RelatedChunk {
            chunk,
            ents: splitter.entities(),
        })),
        Err(e) => Err(split_error(e, splitter, &at, path.as_ref(), max)),
    }
}

/// The records of `chunk` (of the input named `name`) as JSON objects for related
/// tables ([`record::record_object`]), back to back, one a line. A record that is not
/// well-formed is an error at its place, as in a flat load; the records before it are
/// kept with it.
pub(crate) fn related_records(
    chunk: RelatedChunk,
    name: &Arc<str>,
    max: usize,
) -> (Vec<u8>, Vec<RelatedRecord>, Option<Error>) {
    let at = place_in(name);
    let RelatedChunk { chunk, ents } = chunk;
    let left = std::cell::Cell::new(Refs::chunk_budget(chunk.bytes.len(), max));
    let mut text = Vec::with_capacity(chunk.bytes.len());
    let mut records = Vec::with_capacity(chunk.records.len());
    for rec in &chunk.records {
        let bytes = &chunk.bytes[rec.start..rec.end];
        let fail = |offset: usize, message: String| {
            let (line, column, message) = located(bytes, *rec, offset, message);
            Error::input(at(line, column, rec.byte + offset as u64), None, message)
        };
        if let Some((offset, m)) = record::bad_char(bytes) {
            return (text, records, Some(fail(offset, m)));
        }
        let src = match std::str::from_utf8(bytes) {
            Ok(src) => src,
            Err(e) => {
                let m = "bytes that are not UTF-8 (the document's encoding is UTF-8 unless a byte-order mark or its declaration names another)";
                return (text, records, Some(fail(e.valid_up_to(), m.into())));
            }
        };
        let consumed = rec.byte + bytes.len() as u64;
        let object = match record::record_object(src, &ents, max, &left, consumed) {
            Ok(o) => o,
            Err((offset, m)) => return (text, records, Some(fail(offset, m))),
        };
        let start = text.len();
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut text, &object);
        if text.len() - start > max {
            text.truncate(start);
            let m = format!("the record's values, entities expanded, pass {max} bytes");
            return (text, records, Some(fail(0, m)));
        }
        records.push((start..text.len(), (rec.line, rec.column, rec.byte)));
        text.push(b'\n');
    }
    (text, records, None)
}

/// Line and column of `offset` within a record that starts at `rec`.
fn located(
    bytes: &[u8],
    rec: split::RecordAt,
    offset: usize,
    message: String,
) -> (u64, u64, String) {
    let before = &bytes[..offset.min(bytes.len())];
    match memchr::memrchr(b'\n', before) {
        None => (rec.line, rec.column + offset as u64, message),
        Some(k) => (
            rec.line + memchr::memchr_iter(b'\n', before).count() as u64,
            (offset - k) as u64,
            message,
        ),
    }
}

/// Parses every record of `chunk`.
fn parse_chunk(
    chunk: &split::Chunk,
    ents: &Entities,
    name: &Arc<str>,
    max: usize,
    flatten: bool,
) -> Result<Rows> {
    let mut rows = Rows::with_capacity(chunk.bytes.len(), chunk.records.len());
    rows.flatten = flatten;
    let fail = |rec: &split::RecordAt, offset: usize, message: String| {
        let bytes = &chunk.bytes[rec.start..rec.end];
        let (line, column, message) = located(bytes, *rec, offset, message);
        Error::input(
            Position {
                path: name.clone(),
                line,
                column,
                record: 0,
                byte: rec.byte + offset as u64,
            },
            None,
            message,
        )
    };
    let left = std::cell::Cell::new(Refs::chunk_budget(chunk.bytes.len(), max));
    for rec in &chunk.records {
        let bytes = &chunk.bytes[rec.start..rec.end];
        if let Some((offset, m)) = record::bad_char(bytes) {
            return Err(fail(rec, offset, m));
        }
        let text = std::str::from_utf8(bytes).map_err(|e| {
            fail(
                rec,
                e.valid_up_to(),
                "bytes that are not UTF-8 (the document's encoding is UTF-8 unless a byte-order mark or its declaration names another)".into(),
            )
        })?;
        let consumed = rec.byte + bytes.len() as u64;
        record::parse_record(text, rec.line, ents, max, &left, consumed, &mut rows)
            .map_err(|(offset, m)| fail(rec, offset, m))?;
    }
    Ok(rows)
}

impl Source for XmlSource {
    fn sample(&mut self) -> Result<Sample> {
        let want = self.opts.sample_rows.max(1);
        let mut sampled = 0usize;
        let mut guesses: Vec<TypeGuess> = vec![];
        let mut k = 0; // chunks of the queue looked at
        while sampled < want {
            if k == self.queue.len() {
                match self.next_rows()? {
                    Some(r) => self.queue.push_back(r),
                    None => break,
                }
            }
            let rows = &self.queue[k];
            let mut from = 0;
            for r in &rows.rows {
                if sampled == want {
                    break;
                }
                for f in &rows.fields[from..r.fields_end] {
                    let key = rows.str(f.key);
                    let c = match self.keys.get(key) {
                        Some(c) => c,
                        None => Self::add_key(&mut self.keys, key),
                    };
                    if guesses.len() <= c {
                        guesses.resize(c + 1, TypeGuess::default());
                    }
                    guesses[c].add(Self::lexeme(rows, f));
                }
                from = r.fields_end;
                sampled += 1;
            }
            k += 1;
        }
        if sampled == 0 {
            return Err(
                self.document_error(format!("no record: no element at {}", self.path.join("/")))
            );
        }
        if self.keys.columns.is_empty() {
            return Err(self.document_error(format!(
                "the {sampled} sampled records at {} hold no attribute, child element or text: there is no column to make",
                self.path.join("/")
            )));
        }
        guesses.resize(self.keys.columns.len(), TypeGuess::default());
        let mut notes = std::mem::take(&mut self.keys.notes);
        if self.chosen {
            notes.insert(
                0,
                format!(
                    "records are the <{}> elements ({}: the first element that repeats under the root or its one child)",
                    self.path.last().map_or("", String::as_str),
                    self.path.join("/")
                ),
            );
        }
        Ok(Sample {
            columns: self.keys.columns.clone(),
            guesses,
            notes,
            types: None,
            locale: vec![],
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types = types;
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        _bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            if !self.front()? {
                return Ok(Fill::Done);
            }
            let rows = self.queue.pop_front().expect("front() found a row");
            let added = self.push_row(batch, &rows);
            self.queue.push_front(rows);
            if let Some(added) = added {
                return Ok(Fill::NewColumns(added));
            }
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.keys.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    fn make_records(&mut self) -> bool {
        self.record = Some(liteload_btree::RecordBuilder::new());
        true
    }
}
