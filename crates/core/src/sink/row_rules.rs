//! The rules of a table made beforehand that the page writer checks record by record
//! ([`RowRules`]): NULL in a NOT NULL column, and for a STRICT table a storage class its
//! column does not take. CHECK constraints are SQLite's to evaluate, and UNIQUE ones are
//! checked as their indexes are built. Rows refused only once all are written are found
//! by their [`Origins`].

use std::sync::Arc;

use liteload_btree::Value as Cell;

use crate::batch::{Batch, RowOrigin, Value};
use crate::error::{Error, Position, Result};
use crate::schema::quote_ident;
use crate::source::BadRecord;
use crate::types::ColumnType;

/// What each record of a table with constraints is checked for as it is written.
pub(crate) struct RowRules {
    /// For each column in order, whether it is NOT NULL.
    pub(crate) not_null: Vec<bool>,
    /// The column types of a STRICT table.
    pub(crate) strict: Option<Vec<ColumnType>>,
}

impl RowRules {
    /// Whether a value of serial type `t` (the record format's: 0 NULL, 1-6, 8, 9
    /// integers, 7 a real, odd 13 and up text, even 12 and up a blob) breaks a rule of
    /// column `i`.
    fn breaks(&self, i: usize, t: u64) -> bool {
        if t == 0 {
            return self.not_null.get(i).copied().unwrap_or(true);
        }
        match self.strict.as_ref().map(|types| types.get(i)) {
            None => false,
            // A REAL column keeps a whole number as an integer (SQLite reads it back as
            // a REAL), so integers are REAL's too.
            Some(Some(ColumnType::Integer)) => !matches!(t, 1..=6 | 8 | 9),
            Some(Some(ColumnType::Real)) => !matches!(t, 1..=9),
            Some(Some(ColumnType::Text)) => !(t >= 13 && t % 2 == 1),
            Some(_) => true,
        }
    }

    /// The first row of `batch` that breaks a rule (by its records, else its values).
    pub(crate) fn first_broken(&self, batch: &Batch) -> Option<usize> {
        match batch.records() {
            Some(records) => records
                .iter()
                .position(|r| r.serial_types().enumerate().any(|(i, t)| self.breaks(i, t))),
            None => (0..batch.rows()).find(|&r| {
                batch.row(r).enumerate().any(|(i, v)| {
                    let t = match v {
                        Value::Null => 0,
                        Value::Integer(_) => 1,
                        Value::Real(_) => 7,
                        Value::Text(_) => 13,
                        Value::Blob(_) => 12,
                    };
                    self.breaks(i, t)
                })
            }),
        }
    }

    /// Whether `batch` has a record that breaks a rule.
    pub(crate) fn broken_by(&self, batch: &Batch) -> bool {
        self.first_broken(batch).is_some()
    }
}

/// The values of row `row` of `batch`, from its records where it holds them (a batch
/// of records keeps no values).
fn row_values(batch: &Batch, row: usize) -> Result<Vec<rusqlite::types::Value>> {
    use rusqlite::types::Value as Sql;
    let Some(records) = batch.records() else {
        return Ok(batch
            .row(row)
            .map(|v| match v {
                Value::Null => Sql::Null,
                Value::Integer(i) => i.into(),
                Value::Real(r) => r.into(),
                Value::Text(t) => t.to_string().into(),
                Value::Blob(b) => b.to_vec().into(),
            })
            .collect());
    };
    let record = records
        .iter()
        .nth(row)
        .ok_or_else(|| Error::internal("a refused row past its batch's records"))?;
    Ok((0..record.serial_types().count())
        .map(|i| match record.column(i) {
            None | Some(Cell::Null) => Sql::Null,
            Some(Cell::Integer(i)) => i.into(),
            Some(Cell::Real(r)) => r.into(),
            Some(Cell::Text(t)) => String::from_utf8_lossy(t).into_owned().into(),
            Some(Cell::Blob(b)) => b.to_vec().into(),
        })
        .collect())
}

/// SQLite's own refusal of row `row` of `batch` (from input `source`), which broke a rule
/// of the table `create` makes (named `table`): the row inserted into an empty copy of
/// that table in memory, so that the reason is the one SQLite's insert path gives. An
/// internal error if SQLite takes it.
pub(crate) fn refusal(
    create: &str,
    table: &str,
    source: &Arc<str>,
    batch: &Batch,
    row: usize,
) -> Error {
    let refused = || -> Result<Error> {
        let ctx = |e| Error::sqlite("checking a refused row", e);
        let conn = rusqlite::Connection::open_in_memory().map_err(ctx)?;
        conn.execute_batch(create).map_err(ctx)?;
        let values = row_values(batch, row)?;
        let sql = format!(
            "INSERT INTO {} VALUES ({})",
            quote_ident(table),
            vec!["?"; values.len()].join(", ")
        );
        match conn.execute(&sql, rusqlite::params_from_iter(values)) {
            Ok(_) => Err(Error::internal(format!(
                "a row of {} broke a rule of the table that SQLite does not hold",
                quote_ident(table)
            ))),
            Err(e) => {
                let pos = batch.origin(row).position(source);
                Ok(Error::refused_row(Some(pos), &e))
            }
        }
    };
    refused().unwrap_or_else(|e| e)
}

/// Where each row of a side file came from (row `i` is rowid `i + 1`): the position of
/// a row SQLite refuses only once all are written.
pub(crate) struct Origins {
    /// The input's name, for positions.
    source: Arc<str>,
    rows: Vec<RowOrigin>,
}

impl Origins {
    /// No rows yet, of input `source`.
    pub(crate) fn new(source: Arc<str>) -> Self {
        Origins {
            source,
            rows: vec![],
        }
    }

    /// Takes the origins of `batch`'s rows, which follow those taken before.
    pub(crate) fn push(&mut self, batch: &Batch) {
        self.rows.extend((0..batch.rows()).map(|r| batch.origin(r)));
    }

    /// How many rows.
    pub(crate) fn len(&self) -> u64 {
        self.rows.len() as u64
    }

    /// The bad record of the side file's row `rowid`, which SQLite refused with `e`;
    /// `fields` are its values as the side file holds them.
    pub(crate) fn refused(
        &self,
        rowid: i64,
        e: &rusqlite::Error,
        fields: serde_json::Value,
    ) -> BadRecord {
        BadRecord {
            error: Error::refused_row(Some(self.position(rowid)), e),
            fields,
        }
    }

    /// Where row `rowid` (counted from 1, in the order taken) came from.
    pub(crate) fn position(&self, rowid: i64) -> Position {
        self.rows[(rowid - 1) as usize].position(&self.source)
    }
}
