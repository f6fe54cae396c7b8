//! A spool read back as the source of its table's load: its records as the spools'
//! thread encoded them ([`RecordSource`], see [`super::typing`]), or, for a load keyed
//! by a member of the records ([`SpoolSource`]), each row's values as the spools'
//! thread wrote them ([`super::spools`], [`super::values`]), typed and stored as
//! the JSON reader types and stores the members of its objects (the columns in the
//! order first met, the types from the first rows' values, a column first met later
//! typed by its first row's value; a string typed as a delimited field is where the
//! load reads text fields, XML's). No value's text is parsed again but a member only the
//! raw-text walk could read ([`values::RAW`]).
//!
//! Hand-written rather than read through the program's own values
//! ([`crate::source::serialized`], which types and stores them alike) because it
//! measured faster: the threads reading the three spools of 300 MB of
//! `bench/nested.py`'s orders (3.9M rows) took 0.42 CPU-s, against 0.86 through rows of
//! the program's values (perf, one run each).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::values::{self, Got, Owned};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Result};
use crate::source::convert::Mismatches;
use crate::source::{BadRecord, Fill, Nulls, ReadOptions, Sample, Source};
use crate::types::{ColumnType, Lexeme, TypeGuess};

/// The rows of one spool.
pub(super) struct SpoolRows {
    path: PathBuf,
    /// The spool, while it is being read.
    file: Option<File>,
    /// Whether the spool was read to its end.
    ended: bool,
    /// Each column's name, by its number in the spool.
    named: Vec<String>,
    /// Each spool column's column in the rows, once met.
    columns: Vec<Option<usize>>,
    /// Bytes read and not yet taken: `buf[at..]`.
    buf: Vec<u8>,
    at: usize,
    /// The row being read: `buf[row.0..row.1]`.
    row: (usize, usize),
    /// Whether the spool holds records ([`super::typing`]), else rows of values.
    records: bool,
    /// Bytes read, added to the load's count every so often.
    bytes_read: Arc<AtomicU64>,
    unsaid: u64,
}

/// Bytes read from a spool at a time (a row longer than this grows the buffer).
const READ: usize = 1 << 20;

impl SpoolRows {
    /// The rows of the spool at `path`, whose columns are `named`; bytes read are added
    /// to `bytes_read`.
    pub(super) fn open(
        path: PathBuf,
        named: Vec<String>,
        bytes_read: Arc<AtomicU64>,
    ) -> Result<SpoolRows> {
        Ok(SpoolRows {
            path,
            file: None,
            ended: false,
            columns: vec![None; named.len()],
            named,
            buf: vec![],
            at: 0,
            row: (0, 0),
            records: false,
            bytes_read,
            unsaid: 0,
        })
    }

    /// The length of the whole row at the start of `bytes`, if they hold one.
    fn row_len(&self, bytes: &[u8]) -> Option<usize> {
        if self.records {
            let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
            return (bytes.len() >= 4 + len).then_some(4 + len);
        }
        values::walk_row(bytes, |_, _| {})
    }

    /// The same spool, holding records ([`super::typing`]).
    pub(super) fn of_records(mut self) -> SpoolRows {
        self.records = true;
        self
    }

    /// Finds the next row in the buffer, reading more where it holds no whole row:
    /// `Ok(false)` at the end.
    fn next_row(&mut self) -> std::io::Result<bool> {
        loop {
            if let Some(n) = self.row_len(&self.buf[self.at..]) {
                self.row = (self.at, self.at + n);
                self.at += n;
                return Ok(true);
            }
            // Keep what is left of a row, then read more after it.
            self.buf.drain(..self.at);
            self.at = 0;
            let had = self.buf.len();
            self.buf.resize(had + READ, 0);
            let got = match (&mut self.file, self.ended) {
                (_, true) => 0,
                (Some(file), false) => file.read(&mut self.buf[had..])?,
                (None, false) => self
                    .file
                    .insert(File::open(&self.path)?)
                    .read(&mut self.buf[had..])?,
            };
            self.buf.truncate(had + got);
            if got == 0 {
                // (Opened when first read, closed once read: a load of many tables
                // holds one spool open.)
                (self.file, self.ended) = (None, true);
                return match had {
                    0 => Ok(false),
                    _ => Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "a spooled row cut short",
                    )),
                };
            }
        }
    }
}

/// A spool as a [`Source`]: see the module's note.
pub(super) struct SpoolSource {
    rows: SpoolRows,
    name: Arc<str>,
    opts: ReadOptions,
    /// Column names, in the order first met.
    columns: Vec<String>,
    types: Vec<ColumnType>,
    /// The rows read while sampling, each value with its column.
    sampled: VecDeque<Vec<(usize, Owned)>>,
    /// Rows pushed so far.
    pushed: u64,
    /// Whether the row in `rows.row` is still to be pushed (its new columns were said).
    pending: bool,
    mismatches: Mismatches,
    scratch: String,
    /// Each column's value in the row being pushed (empty between rows; its allocation
    /// kept).
    slots: Vec<Option<Got<'static>>>,
}

impl SpoolSource {
    /// The spool `rows`, named `name` in messages, read with `opts`.
    pub(super) fn new(rows: SpoolRows, name: Arc<str>, opts: ReadOptions) -> SpoolSource {
        SpoolSource {
            rows,
            name,
            opts,
            columns: vec![],
            types: vec![],
            sampled: VecDeque::new(),
            pushed: 0,
            pending: false,
            mismatches: Mismatches::default(),
            scratch: String::new(),
            slots: vec![],
        }
    }

    /// Names the column of spool column `c` (met now).
    fn meet(&mut self, c: u32) -> usize {
        let i = self.columns.len();
        self.columns.push(self.rows.named[c as usize].clone());
        self.rows.columns[c as usize] = Some(i);
        i
    }
}

/// Where [`push`] stores a row.
struct Pushing<'s> {
    name: &'s str,
    columns: &'s [String],
    types: &'s [ColumnType],
    empty_null: bool,
    fields: bool,
    mismatches: &'s mut Mismatches,
    scratch: &'s mut String,
}

/// Pushes the values `slots` holds by column as one row of `batch`, NULL where it has
/// none: row number `no`.
fn push(to: &mut Pushing<'_>, batch: &mut Batch, slots: &[Option<Got<'_>>], no: u64) {
    for (c, v) in slots.iter().enumerate() {
        let ty = to.types[c];
        let Some(v) = v else {
            batch.push(Cell::Null);
            continue;
        };
        if values::store(batch, v, ty, to.empty_null, to.fields, to.scratch) {
            let (name, column) = (to.name, &to.columns[c]);
            to.mismatches.note(|| {
                format!(
                    "{name}:{no}:1: {} in {ty} column {column:?}",
                    values::json(v)
                )
            });
        }
    }
    batch.finish_row(RowOrigin {
        line: no,
        record: no,
    });
}

impl SpoolRows {
    /// Calls `f` with each value of the row in `self.row` and its spool column, a raw
    /// member read as the JSON reader reads it (given as `Owned`).
    fn each<'s>(&'s self, mut f: impl FnMut(u32, Result<Got<'s>, Owned>)) -> Result<()> {
        let bad = || {
            // Only the spools' thread writes a spool, and only whole rows: a row that
            // cannot be read is the spool's file changed under the load.
            Error::io(
                Some(self.path.clone()),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a spooled row that cannot be read",
                ),
            )
        };
        let row = &self.buf[self.row.0..self.row.1];
        let mut failed = None;
        let walked = values::walk_row(row, |c, at| {
            if failed.is_some() {
                return;
            }
            let read = match values::get(&row[at..]) {
                _ if c >= self.named.len() => None,
                Some((Got::Raw(raw), _)) => values::read_value(raw).map(Err),
                Some((v, _)) => Some(Ok(v)),
                None => None,
            };
            match read {
                Some(v) => f(c as u32, v),
                None => failed = Some(bad()),
            }
        });
        match (walked, failed) {
            (Some(_), None) => Ok(()),
            (_, Some(e)) => Err(e),
            (None, None) => Err(bad()),
        }
    }

    /// Reads the next row, counting its bytes: `Ok(false)` at the end.
    fn advance(&mut self) -> Result<bool> {
        let more = self
            .next_row()
            .map_err(|e| Error::io(Some(self.path.clone()), e))?;
        if more {
            self.unsaid += (self.row.1 - self.row.0) as u64;
        }
        if self.unsaid >= 1 << 20 || !more {
            self.bytes_read.fetch_add(self.unsaid, Ordering::Relaxed);
            self.unsaid = 0;
        }
        Ok(more)
    }
}

impl Owned {
    /// `v`, owning its text.
    fn of(v: &Got<'_>) -> Owned {
        match *v {
            Got::Null | Got::Raw(_) => Owned::Null,
            Got::Bool(b) => Owned::Bool(b),
            Got::Integer(i) => Owned::Integer(i),
            Got::Real(r) => Owned::Real(r),
            Got::String(s) => Owned::String(s.to_string()),
            Got::Json(s) => Owned::Json(s.to_string()),
        }
    }
}

impl Source for SpoolSource {
    fn sample(&mut self) -> Result<Sample> {
        let mut guesses: Vec<TypeGuess> = vec![];
        let fields = self.opts.text_fields;
        while self.sampled.len() < self.opts.sample_rows.max(1) && self.rows.advance()? {
            let mut read = vec![];
            self.rows.each(|c, v| {
                read.push((c, v.map_or_else(|owned| owned, |v| Owned::of(&v))));
            })?;
            let mut row = vec![];
            for (c, v) in read {
                let i = match self.rows.columns[c as usize] {
                    Some(i) => i,
                    None => {
                        guesses.push(TypeGuess::default());
                        self.meet(c)
                    }
                };
                guesses[i].add(values::lexeme(&v.got(), fields));
                row.push((i, v));
            }
            self.sampled.push_back(row);
        }
        Ok(Sample {
            types: None,
            columns: self.columns.clone(),
            guesses,
            notes: vec![],
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
        let fields = self.opts.text_fields;
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            let sampled = self.sampled.pop_front();
            if sampled.is_none() && !self.pending && !self.rows.advance()? {
                return Ok(Fill::Done);
            }
            self.pending = false;
            let mut owned: Vec<(usize, Owned)> = vec![];
            let mut new: Vec<(u32, Lexeme)> = vec![];
            let mut held: Vec<Option<Got<'_>>> = std::mem::take(&mut self.slots)
                .into_iter()
                .map(|_| None)
                .collect();
            held.resize(self.columns.len(), None);
            match &sampled {
                Some(row) => {
                    for (i, v) in row {
                        held[*i] = Some(v.got());
                    }
                }
                None => {
                    let columns = &self.rows.columns;
                    self.rows.each(|c, v| match (columns[c as usize], v) {
                        (Some(i), Ok(v)) => held[i] = Some(v),
                        (Some(i), Err(o)) => owned.push((i, o)),
                        (None, Ok(v)) => new.push((c, values::lexeme(&v, fields))),
                        (None, Err(o)) => new.push((c, values::lexeme(&o.got(), fields))),
                    })?;
                }
            }
            if !new.is_empty() {
                // Columns first met in this row: said first (typed by this row's
                // values), then the row (read again), as the JSON reader does.
                held.clear();
                self.slots = held.into_iter().map(|_| None).collect();
                let mut added = vec![];
                for (c, l) in new {
                    let mut guess = TypeGuess::default();
                    guess.add(l);
                    let ty = guess.resolve();
                    let i = self.meet(c);
                    self.types.push(ty);
                    added.push((self.columns[i].clone(), ty));
                }
                self.pending = true;
                return Ok(Fill::NewColumns(added));
            }
            for (i, o) in &owned {
                held[*i] = Some(o.got());
            }
            self.pushed += 1;
            let mut to = Pushing {
                name: &self.name,
                columns: &self.columns,
                types: &self.types,
                empty_null: self.opts.nulls == Nulls::All,
                fields,
                mismatches: &mut self.mismatches,
                scratch: &mut self.scratch,
            };
            push(&mut to, batch, &held, self.pushed);
            held.clear();
            self.slots = held.into_iter().map(|_| None).collect();
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}

/// A spool of records ([`super::typing`]) as a [`Source`]: its columns and types as the
/// split decided them, its records handed on as they are (the page writer's rows, the
/// table's `_id` each row's number) or read into cells for other writers.
pub(super) struct RecordSource {
    rows: SpoolRows,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    mismatches: Mismatches,
    records: bool,
    /// Rows handed on so far.
    pushed: u64,
}

impl RecordSource {
    /// The records of `rows` (opened for records), of columns `columns` typed `types`,
    /// and the values the split stored in a type other than their column's.
    pub(super) fn new(
        rows: SpoolRows,
        columns: Vec<String>,
        types: Vec<ColumnType>,
        mismatches: Mismatches,
    ) -> RecordSource {
        RecordSource {
            rows,
            columns,
            types,
            mismatches,
            records: false,
            pushed: 0,
        }
    }
}

impl Source for RecordSource {
    fn sample(&mut self) -> Result<Sample> {
        Ok(Sample {
            columns: self.columns.clone(),
            guesses: vec![],
            notes: vec![],
            types: Some(self.types.clone()),
            locale: vec![],
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types = types;
    }

    fn make_records(&mut self) -> bool {
        self.records = true;
        true
    }

    fn numbers_rowids(&self) -> bool {
        true
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        _bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            if !self.rows.advance()? {
                return Ok(Fill::Done);
            }
            let bad = |why: String| {
                Error::io(
                    Some(self.rows.path.clone()),
                    std::io::Error::new(std::io::ErrorKind::InvalidData, why),
                )
            };
            // (The length before it was read with it.)
            let bytes = &self.rows.buf[self.rows.row.0 + 4..self.rows.row.1];
            let record = liteload_btree::Record::parse(bytes)
                .map_err(|e| bad(format!("a spooled record: {e}")))?;
            self.pushed += 1;
            let no = self.pushed;
            if self.records {
                batch.push_parsed(record);
            } else {
                // Its rowid, `_id`, is its number; a shorter record is NULL past its end.
                for c in 0..self.columns.len() {
                    let cell = match record.column(c) {
                        _ if c == 0 => Cell::Integer(no as i64),
                        None | Some(liteload_btree::Value::Null) => Cell::Null,
                        Some(liteload_btree::Value::Integer(i)) => Cell::Integer(i),
                        Some(liteload_btree::Value::Real(r)) => Cell::Real(r),
                        Some(liteload_btree::Value::Text(t)) => {
                            let t = crate::utf8::str(t).ok_or_else(|| {
                                bad("a spooled record's text is not UTF-8".into())
                            })?;
                            batch.push_text(t);
                            continue;
                        }
                        Some(liteload_btree::Value::Blob(b)) => {
                            batch.push_blob(b);
                            continue;
                        }
                    };
                    batch.push(cell);
                }
            }
            batch.finish_row(RowOrigin {
                line: no,
                record: no,
            });
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}
