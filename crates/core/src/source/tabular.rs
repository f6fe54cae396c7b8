//! [`DelimitedSource`]: CSV/TSV records checked and converted into typed batches.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Arc;

use super::convert::{push_text_field, Mismatches, Values};
use super::delimited::{DelimitedReader, ParseError, Record, Resume};
use super::locale::{self, Rewrite};
use super::transcode::MALFORMED;
use super::Encoding;
use super::{BadRecord, Fill, Nulls, Ragged, ReadOptions, Sample, Source};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Hint, Position, Result};
use crate::schema::{clean_names, column_name_problem, numbered_names};
use crate::types::{classify, ColumnType, Lexeme, TypeGuess};

/// Reads delimited text. Every record is checked (UTF-8, no NUL bytes, field count)
/// before any of it reaches a batch, so a bad record never leaves half a row behind.
pub struct DelimitedSource<R> {
    rdr: DelimitedReader<R>,
    name: Arc<str>,
    opts: ReadOptions,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    sampled: VecDeque<(u64, Record)>,
    records: u64,
    rec: Record,
    mismatches: Mismatches,
    /// Hand out the sampled records, then stop (the rest is read elsewhere).
    sample_only: bool,
    /// Reused to encode rows when `opts.records` is set.
    record: liteload_btree::RecordBuilder,
    /// Locale-written numbers and dates to convert (`None`: nothing to convert).
    rewrite: Option<Rewrite>,
    /// A converted field's text.
    rewritten: String,
}

impl<R: Read + Send> DelimitedSource<R> {
    /// A source of the delimited text `rdr`, named `name` in positions.
    pub fn new(rdr: R, name: Arc<str>, opts: ReadOptions) -> Self {
        let rdr = DelimitedReader::new(rdr, opts.delimiter, opts.quote, opts.max_record_bytes);
        Self::with_reader(rdr, name, opts, vec![], vec![], 0)
    }

    /// A source for the input from `at` on, which another source already began: its
    /// `columns` and `types` are given (no header, no sample), and its records are
    /// numbered from `records + 1`.
    pub fn resumed(
        rdr: R,
        name: Arc<str>,
        opts: ReadOptions,
        columns: Vec<String>,
        types: Vec<ColumnType>,
        at: Resume,
        records: u64,
    ) -> Self {
        let rdr =
            DelimitedReader::resumed(rdr, opts.delimiter, opts.quote, opts.max_record_bytes, at);
        Self::with_reader(rdr, name, opts, columns, types, records)
    }

    fn with_reader(
        rdr: DelimitedReader<R>,
        name: Arc<str>,
        opts: ReadOptions,
        columns: Vec<String>,
        types: Vec<ColumnType>,
        records: u64,
    ) -> Self {
        DelimitedSource {
            rdr,
            name,
            columns,
            types,
            sampled: VecDeque::new(),
            records,
            rec: Record::default(),
            mismatches: Mismatches::default(),
            sample_only: false,
            record: liteload_btree::RecordBuilder::new(),
            // Checked when the load was planned; a format that does not parse converts nothing.
            rewrite: opts.locale.rewrite().ok().filter(|r| !r.is_empty()),
            rewritten: String::new(),
            opts,
        }
    }

    /// After [`Source::sample`]: `fill` hands out the sampled records and then reports
    /// `Done`; the input from [`DelimitedSource::resume_point`] on is left unread.
    pub fn stop_after_sample(&mut self) {
        self.sample_only = true;
    }

    /// Where the records not yet read start.
    pub fn resume_point(&self) -> Resume {
        self.rdr.resume_point()
    }

    /// Records numbered so far (sampled ones included).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The column names decided by the sample.
    pub fn columns(&self) -> &[String] {
        &self.columns
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

    fn parse_error(&self, e: ParseError) -> Error {
        match e {
            ParseError::Io(e) => Error::io(Some(self.name.to_string().into()), e),
            ParseError::UnterminatedQuote { line, column } => Error::input(
                self.pos(line, column, self.records + 1, 0),
                None,
                "expected a closing quote for the quoted field that starts here, found the end of the input",
            ),
        }
    }

    /// Reads the next record into `rec`, numbering it. `None` at the end of input.
    fn next_record(&mut self, rec: &mut Record) -> Result<Option<u64>> {
        match self.rdr.read_record(rec) {
            Ok(true) => {
                self.records += 1;
                Ok(Some(self.records))
            }
            Ok(false) => Ok(None),
            Err(e) => Err(self.parse_error(e)),
        }
    }

    /// The error for a record longer than the reader's limit (its bytes were dropped).
    fn too_long(&self, rec: &Record, no: u64) -> Error {
        Error::input(
            self.pos(rec.line, 1, no, rec.byte),
            None,
            format!("record longer than {} bytes", self.rdr.max_record()),
        )
        .with_hint(Hint::RecordLimit)
    }

    /// Checks a record's bytes and width. Returns the number of fields to take.
    fn check(&self, rec: &Record, no: u64) -> std::result::Result<usize, Error> {
        if rec.too_long {
            return Err(self.too_long(rec, no));
        }
        let data = rec.data();
        if let Some(i) = memchr::memchr(0, data) {
            let (f, col) = locate(rec, i);
            return Err(Error::input(
                self.pos(rec.meta(f).line, col, no, rec.byte),
                self.field_name(f),
                "expected text, found a NUL byte",
            )
            .with_hint(Hint::NotText));
        }
        let bad_utf8 = match std::str::from_utf8(data) {
            Err(e) => Some(e.valid_up_to()),
            Ok(_) => rec.split_char(),
        };
        if let Some(at) = bad_utf8 {
            let (f, col) = locate(rec, at);
            let pos = self.pos(rec.meta(f).line, col, no, rec.byte);
            return Err(
                if self.opts.encoding != Encoding::Utf8 && data[at] == MALFORMED {
                    Error::input(pos, self.field_name(f), format!(
                        "expected {:?} text, found bytes that are not (a lone surrogate or a cut-off character)",
                        self.opts.encoding
                    ))
                } else {
                    Error::input(
                        pos,
                        self.field_name(f),
                        format!("expected UTF-8 text, found the byte 0x{:02X}", data[at]),
                    )
                    .with_hint(Hint::Encoding)
                },
            );
        }
        let n = self.columns.len();
        let have = rec.len();
        let ok = have == n
            || (have < n && self.opts.ragged != Ragged::Error)
            || (have > n && self.opts.ragged == Ragged::Truncate);
        if !ok {
            let (col, line) = if have > n {
                (rec.meta(n).column, rec.meta(n).line)
            } else {
                (1, rec.line)
            };
            return Err(Error::input(
                self.pos(line, col, no, rec.byte),
                None,
                format!("expected {n} fields, found {have}"),
            )
            .with_hint(Hint::Ragged));
        }
        Ok(have.min(n))
    }

    fn field_name(&self, i: usize) -> Option<(usize, String)> {
        self.columns.get(i).map(|n| (i, n.clone()))
    }

    /// Converts a checked record into a row of `batch`: cells, or with
    /// `ReadOptions::records` an encoded SQLite record.
    fn push_row(&mut self, batch: &mut Batch, rec: &Record, no: u64, take: usize) {
        if self.opts.records {
            let mut record = std::mem::take(&mut self.record);
            record.clear();
            self.convert(&mut record, rec, take);
            for _ in take..self.columns.len() {
                record.null();
            }
            batch.push_record(&record);
            self.record = record;
        } else {
            self.convert(batch, rec, take);
            for _ in take..self.columns.len() {
                batch.push(Cell::Null);
            }
        }
        batch.finish_row(RowOrigin {
            line: rec.line,
            record: no,
        });
    }

    /// Converts the first `take` fields of a checked record into values of `to`.
    #[inline]
    fn convert(&mut self, to: &mut impl Values, rec: &Record, take: usize) {
        for i in 0..take {
            // SAFETY: `check` validated the whole record as UTF-8 and every field end
            // (and dropped quote) as a character boundary (`Record::split_char`), so
            // each field is valid UTF-8 by itself.
            let mut s = unsafe { std::str::from_utf8_unchecked(rec.field(i)) };
            if let Some(rw) = &self.rewrite {
                if rw.apply(s, &mut self.rewritten) {
                    s = &self.rewritten;
                }
            }
            let ty = self.types[i];
            let mismatch = match self.opts.nulls {
                Nulls::Typed => push_text_field(to, s, ty, false),
                Nulls::All => push_text_field(to, s, ty, true),
                // PostgreSQL's rule: `""` is the empty string, whatever the column.
                Nulls::Unquoted if s.is_empty() && rec.meta(i).quoted => {
                    to.text("");
                    ty.text_sources_type() != ColumnType::Text
                }
                Nulls::Unquoted => push_text_field(to, s, ty, true),
            };
            if mismatch {
                let (name, column, m) = (&self.name, &self.columns[i], rec.meta(i));
                self.mismatches.note(|| {
                    format!(
                        "{name}:{}:{}: {s:?} in {ty} column {column:?}",
                        m.line, m.column
                    )
                });
            }
        }
    }
}

/// The field holding byte `at` of a record's data, and that byte's column (exact for
/// unquoted fields, the field's start for quoted ones).
fn locate(rec: &Record, at: usize) -> (usize, u64) {
    let mut start = 0;
    for i in 0..rec.len() {
        let len = rec.field(i).len();
        if at < start + len || i + 1 == rec.len() {
            let m = rec.meta(i);
            let col = if m.quoted {
                m.column
            } else {
                m.column + (at - start) as u64
            };
            return (i, col);
        }
        start += len;
    }
    (0, 1)
}

impl<R: Read + Send> Source for DelimitedSource<R> {
    fn sample(&mut self) -> Result<Sample> {
        self.rdr
            .skip_lines(self.opts.skip_lines)
            .map_err(|e| self.parse_error(ParseError::Io(e)))?;
        let mut first = Record::default();
        let Some(no) = self.next_record(&mut first)? else {
            return Err(Error::input(
                self.pos(self.rdr.line(), 1, 0, 0),
                None,
                "expected a header row, found an empty input (nothing to name the columns)",
            ));
        };
        if first.too_long {
            return Err(self.too_long(&first, 0));
        }
        let (raw_names, first_is_data) = if self.opts.header {
            let bad = match std::str::from_utf8(first.data()) {
                Ok(_) => first.split_char(),
                Err(e) => Some(e.valid_up_to()),
            };
            let names = match bad {
                None => first.to_strings(),
                Some(at) => {
                    let (_, col) = locate(&first, at);
                    return Err(Error::input(
                        self.pos(first.line, col, 0, first.byte),
                        None,
                        "expected a UTF-8 header, found invalid bytes",
                    )
                    .with_hint(Hint::Encoding));
                }
            };
            self.records = 0; // the header is not a record
            (names, false)
        } else {
            (numbered_names(first.len()), true)
        };
        let raw_names = match &self.opts.columns {
            Some(given) if self.opts.header && given.len() != raw_names.len() => {
                return Err(Error::usage(format!(
                    "{}: {} column names were given, but the header has {}",
                    self.name,
                    given.len(),
                    raw_names.len()
                )));
            }
            Some(given) => given.clone(),
            None => raw_names,
        };
        if let Some((i, problem)) = raw_names
            .iter()
            .enumerate()
            .find_map(|(i, n)| column_name_problem(n).map(|p| (i, p)))
        {
            let col = if first_is_data {
                1
            } else {
                first.meta(i).column
            };
            // NULs in a header: most likely UTF-16 read as UTF-8 (no byte-order mark).
            let nul = raw_names.iter().any(|n| n.contains('\0'));
            return Err(Error::input(
                self.pos(first.line, col, 0, first.byte),
                None,
                format!("header field {}: {problem}", i + 1),
            )
            .with_hint(nul.then_some(crate::error::Hint::NotText)));
        }
        let (columns, notes) = clean_names(&raw_names);
        if columns.len() > crate::schema::MAX_COLUMNS {
            return Err(Error::usage(format!(
                "{}: {} columns is more than SQLite's limit of 2000 columns per table",
                self.name,
                columns.len()
            )));
        }
        self.columns = columns;
        self.rdr.keep_blank_lines(self.columns.len() == 1);
        if first_is_data {
            self.sampled.push_back((no, first));
        }
        while self.sampled.len() < self.opts.sample_rows {
            let mut rec = Record::default();
            match self.next_record(&mut rec)? {
                Some(no) => self.sampled.push_back((no, rec)),
                None => break,
            }
        }
        let mut guesses = vec![TypeGuess::default(); self.columns.len()];
        let mut buf = String::new();
        for (no, rec) in &self.sampled {
            if let Ok(take) = self.check(rec, *no) {
                for (i, g) in guesses.iter_mut().enumerate().take(take) {
                    let field = rec.field(i);
                    match &self.rewrite {
                        Some(rw)
                            if std::str::from_utf8(field).is_ok_and(|s| rw.apply(s, &mut buf)) =>
                        {
                            g.add(classify(buf.as_bytes()))
                        }
                        // A quoted empty field is the empty string under PostgreSQL's
                        // rule: text.
                        _ if field.is_empty()
                            && self.opts.nulls == Nulls::Unquoted
                            && rec.meta(i).quoted =>
                        {
                            g.add(Lexeme::Text)
                        }
                        _ => g.add(classify(field)),
                    }
                }
            }
        }
        // Without a locale: columns that look written in one, to point out.
        let mut locale = vec![];
        if self.opts.locale.is_empty() {
            let column = |i: usize| -> Vec<&str> {
                self.sampled
                    .iter()
                    .filter(|(_, r)| i < r.len())
                    .filter_map(|(_, r)| std::str::from_utf8(r.field(i)).ok())
                    .collect()
            };
            // A value to show: one with `mark` in it, if any.
            let first = |values: &[&str], mark: Option<char>| {
                let trimmed = || values.iter().map(|v| v.trim()).filter(|v| !v.is_empty());
                mark.and_then(|m| trimmed().find(|v| v.contains(m)))
                    .or_else(|| trimmed().next())
                    .unwrap_or_default()
                    .to_string()
            };
            for (i, name) in self.columns.iter().enumerate() {
                let values = column(i);
                if let Some(kind) = locale::guess(values.iter().copied()) {
                    let mark = kind.is_none().then_some(',');
                    locale.push((name.clone(), first(&values, mark), kind));
                }
            }
            // Beside decimal commas, `1.500` is fifteen hundred, not one and a half.
            if locale.iter().any(|(_, _, k)| k.is_none()) {
                for (i, name) in self.columns.iter().enumerate() {
                    let values = column(i);
                    if locale::dot_grouped(values.iter().copied()) {
                        locale.push((name.clone(), first(&values, Some('.')), None));
                    }
                }
            }
        }
        Ok(Sample {
            types: None,
            columns: self.columns.clone(),
            guesses,
            notes,
            locale,
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        debug_assert_eq!(types.len(), self.columns.len());
        self.types = types;
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        let mut rec = std::mem::take(&mut self.rec);
        let result = (|| {
            while batch.rows() < max_rows && batch.text_bytes() < max_text {
                let no = if let Some((no, r)) = self.sampled.pop_front() {
                    rec = r;
                    no
                } else if self.sample_only {
                    return Ok(Fill::Done);
                } else {
                    match self.next_record(&mut rec)? {
                        Some(no) => no,
                        None => return Ok(Fill::Done),
                    }
                };
                match self.check(&rec, no) {
                    Ok(take) => self.push_row(batch, &rec, no, take),
                    Err(error) => bad(BadRecord {
                        error,
                        fields: serde_json::Value::from(rec.to_strings()),
                    })?,
                }
            }
            Ok(Fill::Full)
        })();
        self.rec = rec;
        result
    }

    fn width(&self) -> usize {
        self.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    fn make_records(&mut self) -> bool {
        self.opts.records = true;
        true
    }
}
