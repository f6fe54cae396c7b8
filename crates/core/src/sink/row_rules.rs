//! The rules of a table made beforehand that the page writer checks record by record
//! ([`RowRules`]): NULL in a NOT NULL column, and for a STRICT table a storage class its
//! column does not take. CHECK constraints are SQLite's to evaluate ([`Checks`]: each row
//! put to an empty copy of the table in memory), and UNIQUE ones are checked as their
//! indexes are built. Rows refused only once all are written are found by their
//! [`Origins`].

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

/// A table's rules as SQLite itself holds them, CHECK constraints among them: each row
/// of a batch inserted into an empty copy of the table in memory (made by its own CREATE
/// TABLE), in a transaction rolled back after the batch, so that memory stays one
/// batch's. The first row the copy refuses is the first SQLite's insert path would refuse
/// for a rule of the row itself (NOT NULL, STRICT, CHECK); a key repeated from an earlier
/// batch is the indexes' to find (within a batch the copy's own UNIQUE indexes find it).
pub(crate) struct Checks {
    conn: rusqlite::Connection,
    insert: String,
    columns: usize,
}

impl Checks {
    /// The copy of the table `create` makes (named `table`, of `columns` columns).
    pub(crate) fn new(create: &str, table: &str, columns: usize) -> Result<Checks> {
        let ctx = |e| Error::sqlite("preparing the check of a table's rules", e);
        let conn = rusqlite::Connection::open_in_memory().map_err(ctx)?;
        conn.execute_batch(create).map_err(ctx)?;
        let insert = format!(
            "INSERT INTO {} VALUES ({})",
            quote_ident(table),
            vec!["?"; columns].join(", ")
        );
        conn.prepare_cached(&insert).map_err(ctx)?;
        Ok(Checks {
            conn,
            insert,
            columns,
        })
    }

    /// The first row of `batch` (read from `source`) the table's copy refuses, with
    /// SQLite's refusal (its position the row's).
    pub(crate) fn first_refused(
        &mut self,
        batch: &Batch,
        source: &Arc<str>,
    ) -> Result<Option<(usize, Error)>> {
        use rusqlite::types::ValueRef;
        let ctx = |e| Error::sqlite("checking a table's rules", e);
        let tx = self.conn.transaction().map_err(ctx)?;
        let refused = {
            let mut insert = tx.prepare_cached(&self.insert).map_err(ctx)?;
            // One row's values at a time, the buffer kept: a batch holds records or values.
            let mut values: Vec<ValueRef<'_>> = Vec::with_capacity(self.columns);
            let mut records = batch.records().map(|r| r.iter());
            let mut refused = None;
            for row in 0..batch.rows() {
                values.clear();
                match records.as_mut() {
                    Some(records) => {
                        let record = records.next().ok_or_else(|| {
                            Error::internal("a batch with fewer records than rows")
                        })?;
                        values.extend(record.values().map(|v| match v {
                            Cell::Null => ValueRef::Null,
                            Cell::Integer(i) => ValueRef::Integer(i),
                            Cell::Real(r) => ValueRef::Real(r),
                            Cell::Text(t) => ValueRef::Text(t),
                            Cell::Blob(b) => ValueRef::Blob(b),
                        }));
                    }
                    None => values.extend(batch.row(row).map(|v| match v {
                        Value::Null => ValueRef::Null,
                        Value::Integer(i) => ValueRef::Integer(i),
                        Value::Real(r) => ValueRef::Real(r),
                        Value::Text(t) => ValueRef::Text(t.as_bytes()),
                        Value::Blob(b) => ValueRef::Blob(b),
                    })),
                }
                bind_all(&mut insert, self.columns, &values).map_err(ctx)?;
                if let Err(e) = insert.raw_execute() {
                    refused = Some((row, e));
                    break;
                }
            }
            refused
        };
        tx.rollback().map_err(ctx)?;
        Ok(refused.map(|(row, e)| {
            let pos = batch.origin(row).position(source);
            (row, Error::refused_row(Some(pos), &e))
        }))
    }
}

/// Binds `values` to the first parameters of `insert`, NULL to the rest of its
/// `columns` (a row that holds fewer, as SQLite reads a short record).
fn bind_all(
    insert: &mut rusqlite::CachedStatement<'_>,
    columns: usize,
    values: &[rusqlite::types::ValueRef<'_>],
) -> rusqlite::Result<()> {
    for i in 0..columns {
        let v = values
            .get(i)
            .copied()
            .unwrap_or(rusqlite::types::ValueRef::Null);
        insert.raw_bind_parameter(i + 1, rusqlite::types::ToSqlOutput::Borrowed(v))?;
    }
    Ok(())
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
