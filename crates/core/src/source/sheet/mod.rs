//! Spreadsheets in (`.xlsx`, `.xlsm`, `.xlsb`, `.xls`, `.ods`, read through calamine):
//! one worksheet is one table.
//!
//! The table's columns run from the leftmost to the rightmost column holding a value in
//! the header and the sampled rows (empty columns around them are dropped); rows with
//! no value are dropped wherever they are. The header is the first row with a value,
//! told from data by the rule delimited text has ([`super::sniff`]): a text cell is
//! text, a number or boolean a number, a date a date. Values are typed as
//! [`cells`] says, and stored by the type rules every typed input has
//! ([`super::convert::push_scalar`]). A value in a column outside the table's is a bad
//! record, named by its cell.

mod cells;
mod xlsx;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use self::cells::{Row, Sent, Value};
use super::convert::{push_scalar, Mismatches, Scalar};
use super::sniff::{first_row_is_data, Kind};
use super::{BadRecord, Fill, Nulls, ReadOptions, Sample, Source};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Position, Result};
use crate::schema::{clean_names, column_name_problem, numbered_names};
use crate::types::{ColumnType, TypeGuess};

/// The worksheets of the workbook at `path` that hold at least one value, in the
/// workbook's order, and those that hold none.
pub(crate) fn worksheets(path: &Path, name: &str) -> Result<(Vec<String>, Vec<String>)> {
    cells::worksheets(path).map_err(|m| {
        let pos = Position {
            path: name.into(),
            line: 0,
            column: 0,
            record: 0,
            byte: 0,
        };
        Error::input(pos, None, m)
    })
}

/// `A`, `B`, …, `Z`, `AA`, … for column `n` (from 1).
pub(crate) fn column_letters(mut n: u32) -> String {
    let mut out = vec![];
    while n > 0 {
        let d = (n - 1) % 26;
        out.push(b'A' + d as u8);
        n = (n - 1) / 26;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// One worksheet as a [`Source`].
pub(crate) struct SheetSource {
    rows: Receiver<Sent>,
    /// `book.xlsx[Sheet1]`, in positions.
    name: Arc<str>,
    opts: ReadOptions,
    /// Rows received and not yet handed out (the sample first).
    pending: VecDeque<Row>,
    /// The thread sent its last row.
    done: bool,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    /// The table's first column in the sheet (from 1); `columns.len()` follow it.
    first_column: u32,
    records: u64,
    mismatches: Mismatches,
    /// Error cells loaded as NULL: how many, and the first (cell and value).
    errors: (u64, Option<String>),
    scratch: String,
}

impl SheetSource {
    /// Opens worksheet `sheet` of the workbook `path`, named `display` in messages
    /// (the workbook's first worksheet when `sheet` is `None`); its rows are read on a
    /// thread from now on.
    pub(crate) fn open(
        path: &Path,
        display: &str,
        opts: &ReadOptions,
        bytes_read: Arc<AtomicU64>,
        cancel: Arc<AtomicBool>,
    ) -> Result<SheetSource> {
        let sheet = match &opts.sheet {
            Some(s) => s.clone(),
            None => {
                let (with, without) = worksheets(path, display)?;
                match with.into_iter().chain(without).next() {
                    Some(s) => s,
                    None => {
                        return Err(Error::usage(format!(
                            "{display}: the workbook has no worksheet"
                        )))
                    }
                }
            }
        };
        let rows = cells::start(path.to_path_buf(), sheet.clone(), bytes_read, cancel)
            .map_err(|e| Error::io(None, e))?;
        Ok(SheetSource {
            rows,
            name: format!("{display}[{sheet}]").into(),
            opts: opts.clone(),
            pending: VecDeque::new(),
            done: false,
            columns: vec![],
            types: vec![],
            first_column: 1,
            records: 0,
            mismatches: Mismatches::default(),
            errors: (0, None),
            scratch: String::new(),
        })
    }

    /// The next row, `None` after the last.
    fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Ok(Some(r));
            }
            if self.done {
                return Ok(None);
            }
            match self.rows.recv() {
                Ok(Ok(rows)) => self.pending.extend(rows),
                Ok(Err(m)) => {
                    self.done = true;
                    return Err(Error::input(self.pos(0, 0), None, m));
                }
                Err(_) => self.done = true,
            }
        }
    }

    fn pos(&self, line: u64, column: u32) -> Position {
        Position {
            path: self.name.clone(),
            line,
            column: u64::from(column),
            record: self.records,
            byte: 0,
        }
    }

    /// Pushes `row`'s values into `batch`, or says which cell lies outside the table.
    fn push_row(&mut self, batch: &mut Batch, row: &Row) -> std::result::Result<(), BadRecord> {
        let last = self.first_column + self.columns.len() as u32;
        if let Some((c, _)) = row
            .cells
            .iter()
            .find(|(c, _)| *c < self.first_column || *c >= last)
        {
            let message = format!(
                "a value in cell {}{}, outside the table's columns {}..{} (taken from the header and the first {} rows)",
                column_letters(*c),
                row.number,
                column_letters(self.first_column),
                column_letters(last - 1),
                self.opts.sample_rows,
            );
            return Err(BadRecord {
                error: Error::input(self.pos(row.number, *c), None, message),
                fields: fields_json(row),
            });
        }
        let empty_null = self.opts.nulls == Nulls::All;
        let mut cells = row.cells.iter().peekable();
        for (i, ty) in self.types.iter().copied().enumerate() {
            let column = self.first_column + i as u32;
            let v = match cells.next_if(|(c, _)| *c == column) {
                None => {
                    batch.push(Cell::Null);
                    continue;
                }
                Some((_, v)) => v,
            };
            if let Value::Error(e) = v {
                self.errors.0 += 1;
                if self.errors.1.is_none() {
                    self.errors.1 =
                        Some(format!("{e} in {}{}", column_letters(column), row.number));
                }
            }
            let s = scalar(v);
            if push_scalar(batch, s, ty, empty_null, &mut self.scratch) {
                let (name, col, n) = (&self.name, &self.columns[i], row.number);
                self.mismatches.note(|| {
                    let cell = column_letters(column);
                    format!("{name}:{cell}{n}: {s:?} in {ty} column {col:?}")
                });
            }
        }
        batch.finish_row(RowOrigin {
            line: row.number,
            record: self.records,
        });
        Ok(())
    }
}

/// A row's values for a rejects file: `{"A": …, "C": …}`.
fn fields_json(row: &Row) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (c, v) in &row.cells {
        let j = match v {
            Value::Integer(n) => serde_json::json!(n),
            Value::Real(r) => serde_json::json!(r),
            Value::Bool(b) => serde_json::json!(b),
            Value::Text(t) | Value::Date(t) | Value::Error(t) => serde_json::json!(t),
        };
        m.insert(column_letters(*c), j);
    }
    serde_json::Value::Object(m)
}

/// A value as every typed input's values are stored ([`push_scalar`]): an error cell
/// is NULL.
fn scalar(v: &Value) -> Scalar<'_> {
    match v {
        Value::Integer(n) => Scalar::Integer(*n),
        Value::Real(r) => Scalar::Real(*r),
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Text(t) | Value::Date(t) => Scalar::Text(t),
        Value::Error(_) => Scalar::Null,
    }
}

/// What a value says for the header test.
fn kind(v: &Value) -> Kind {
    match v {
        Value::Integer(_) | Value::Real(_) | Value::Bool(_) => Kind::Number,
        Value::Date(_) => Kind::Date,
        Value::Text(t) if t.trim().is_empty() => Kind::Empty,
        Value::Text(_) => Kind::Text,
        Value::Error(_) => Kind::Empty,
    }
}

/// A header cell's text: what the sheet shows, more or less (numbers as SQLite writes
/// them, booleans `TRUE`/`FALSE`, an error cell no name).
fn header_text(v: &Value) -> String {
    match v {
        Value::Integer(n) => n.to_string(),
        // As a real is written in a TEXT column (`1e300`, not 301 digits).
        Value::Real(r) => {
            serde_json::Number::from_f64(*r).map_or_else(String::new, |n| n.to_string())
        }
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_owned(),
        Value::Text(t) | Value::Date(t) => t.clone(),
        Value::Error(_) => String::new(),
    }
}

impl Source for SheetSource {
    fn sample(&mut self) -> Result<Sample> {
        let want = self.opts.sample_rows.max(1) + 1;
        while self.pending.len() < want && !self.done {
            match self.rows.recv() {
                Ok(Ok(rows)) => self.pending.extend(rows),
                Ok(Err(m)) => return Err(Error::input(self.pos(0, 0), None, m)),
                Err(_) => self.done = true,
            }
        }
        let Some(first) = self.pending.front() else {
            return Err(Error::input(
                self.pos(0, 0),
                None,
                "the sheet holds no value (nothing to name the columns)",
            ));
        };
        let first_number = first.number;
        let lo = self
            .pending
            .iter()
            .take(want)
            .filter_map(|r| r.cells.first().map(|c| c.0))
            .min()
            .unwrap_or(1);
        let hi = self
            .pending
            .iter()
            .take(want)
            .filter_map(|r| r.cells.last().map(|c| c.0))
            .max()
            .unwrap_or(lo);
        let width = (hi - lo + 1) as usize;
        if width > crate::schema::MAX_COLUMNS {
            return Err(Error::usage(format!(
                "{}: {width} columns is more than SQLite's limit of 2000 columns per table",
                self.name
            )));
        }
        self.first_column = lo;
        fn grid(r: &Row, lo: u32, width: usize) -> Vec<Option<&Value>> {
            let mut out = vec![None; width];
            for (c, v) in &r.cells {
                out[(c - lo) as usize] = Some(v);
            }
            out
        }
        let header = if self.opts.header_sniffed {
            let kinds: Vec<Vec<Kind>> = self
                .pending
                .iter()
                .take(want)
                .map(|r| {
                    grid(r, lo, width)
                        .iter()
                        .map(|v| v.map_or(Kind::Empty, kind))
                        .collect()
                })
                .collect();
            !first_row_is_data(&kinds)
        } else {
            self.opts.header
        };
        let mut notes = vec![];
        let raw_names: Vec<String> = if header {
            let row = self.pending.pop_front().unwrap_or_default();
            grid(&row, lo, width)
                .iter()
                .map(|v| v.map_or_else(String::new, header_text))
                .collect()
        } else {
            if self.opts.header_sniffed {
                notes.push(format!(
                    "{}: row {first_number} holds data, not names: the columns are c1, c2, …",
                    self.name
                ));
            }
            numbered_names(width)
        };
        let raw_names = match &self.opts.columns {
            Some(given) if given.len() != width => {
                return Err(Error::usage(format!(
                    "{}: {} column names were given, but the sheet has {width} columns",
                    self.name,
                    given.len(),
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
            return Err(Error::input(
                self.pos(first_number, lo + i as u32),
                None,
                format!(
                    "header cell {}{first_number}: {problem}",
                    column_letters(lo + i as u32)
                ),
            ));
        }
        let (columns, renamed) = clean_names(&raw_names);
        notes.extend(renamed.into_iter().map(|n| format!("{}: {n}", self.name)));
        let mut guesses = vec![TypeGuess::default(); width];
        for r in self.pending.iter().take(want) {
            for (c, v) in &r.cells {
                if let Some(g) = c.checked_sub(lo).and_then(|k| guesses.get_mut(k as usize)) {
                    g.add(scalar(v).lexeme());
                }
            }
        }
        self.columns = columns.clone();
        Ok(Sample {
            columns,
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
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            let Some(row) = self.next_row()? else {
                return Ok(Fill::Done);
            };
            self.records += 1;
            if let Err(b) = self.push_row(batch, &row) {
                bad(b)?;
            }
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    fn notes(&mut self) -> Vec<String> {
        match std::mem::take(&mut self.errors) {
            (0, _) => vec![],
            (n, first) => vec![format!(
                "{}: {n} error cell{} loaded as NULL (the first: {})",
                self.name,
                if n == 1 { "" } else { "s" },
                first.unwrap_or_default()
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_letters_count_as_the_sheet_does() {
        let got: Vec<String> = [1, 2, 26, 27, 52, 53, 702, 703, 16384]
            .into_iter()
            .map(column_letters)
            .collect();
        assert_eq!(got, ["A", "B", "Z", "AA", "AZ", "BA", "ZZ", "AAA", "XFD"]);
    }
}
