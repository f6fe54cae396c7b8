//! [`SqliteSink`]: batches bound to a prepared multi-row INSERT.
//!
//! The statement inserts as many rows as SQLite's bound-parameter limit allows, read at
//! run time with `sqlite3_limit(SQLITE_LIMIT_VARIABLE_NUMBER)` (32766 since SQLite 3.32;
//! a build may set it lower), capped by `max_rows_per_statement`. Rows left over at the
//! end of a batch go through a one-row statement. Values are bound typed (INTEGER, REAL,
//! TEXT), never formatted into SQL.

use std::sync::Arc;

use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode};

use super::raw_stmt::BatchStatement;
use super::Sink;
use crate::batch::Batch;
use crate::error::{Error, Position, Result};
use crate::schema::quote_ident;
use crate::types::ColumnType;

/// Inserts batches into one table through one connection, inside the caller's transaction.
pub struct SqliteSink<'c> {
    conn: &'c Connection,
    table: String,
    columns: Vec<String>,
    source: Arc<str>,
    max_rows_per_statement: usize,
    multi: Option<BatchStatement<'c>>,
    single: BatchStatement<'c>,
}

/// The default cap on rows per INSERT statement. Past a few hundred rows the gain from
/// fewer `sqlite3_step` calls is gone (see bench/README.md), and a huge VALUES list only
/// costs prepare time.
pub const DEFAULT_ROWS_PER_STATEMENT: usize = 512;

impl<'c> SqliteSink<'c> {
    /// Prepares inserts into `table`'s `columns` (in batch order). `source` names the
    /// input in error messages.
    pub fn new(
        conn: &'c Connection,
        table: &str,
        columns: Vec<String>,
        source: Arc<str>,
        max_rows_per_statement: usize,
    ) -> Result<Self> {
        let single = prepare(conn, table, &columns, 1)?;
        let mut s = SqliteSink {
            conn,
            table: table.to_string(),
            columns,
            source,
            max_rows_per_statement: max_rows_per_statement.max(1),
            multi: None,
            single,
        };
        s.prepare_multi()?;
        Ok(s)
    }

    fn prepare_multi(&mut self) -> Result<()> {
        let vars = self
            .conn
            .limit(Limit::SQLITE_LIMIT_VARIABLE_NUMBER)
            .map_err(|e| Error::sqlite("reading SQLITE_LIMIT_VARIABLE_NUMBER", e))?
            as usize;
        let rows = (vars / self.columns.len().max(1)).min(self.max_rows_per_statement);
        self.multi = if rows > 1 {
            Some(prepare(self.conn, &self.table, &self.columns, rows)?)
        } else {
            None
        };
        Ok(())
    }

    /// Rows per multi-row statement (1 when the limit allows no more).
    pub fn rows_per_statement(&self) -> usize {
        self.multi.as_ref().map_or(1, |m| m.rows())
    }

    fn row_error(&self, batch: &Batch, row: usize, e: rusqlite::Error) -> Error {
        let o = batch.origin(row);
        let pos = Position {
            path: self.source.clone(),
            line: o.line,
            column: 1,
            record: o.record,
            byte: 0,
        };
        Error::refused_row(Some(pos), &e)
    }

    /// Inserts rows `rows` one at a time, sending refused ones to `bad`.
    fn write_singly(
        &mut self,
        batch: &Batch,
        rows: std::ops::Range<usize>,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        let mut n = 0;
        for r in rows {
            match self.single.execute_rows(batch, r) {
                Ok(_) => n += 1,
                Err(e) if is_row_error(&e) => {
                    let err = self.row_error(batch, r, e);
                    bad(r, err)?;
                }
                Err(e) => {
                    return Err(Error::sqlite(
                        format!("inserting into {}", quote_ident(&self.table)),
                        e,
                    ))
                }
            }
        }
        Ok(n)
    }
}

/// Whether SQLite refused this row for its contents (so other rows may still go in),
/// rather than failing as a whole (disk full, I/O error).
fn is_row_error(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig))
}

fn prepare<'c>(
    conn: &'c Connection,
    table: &str,
    columns: &[String],
    rows: usize,
) -> Result<BatchStatement<'c>> {
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let one = format!("({})", vec!["?"; columns.len()].join(","));
    let sql = format!(
        "INSERT INTO {} ({}) VALUES {}",
        quote_ident(table),
        cols.join(","),
        vec![one.as_str(); rows].join(",")
    );
    BatchStatement::prepare(conn, &sql, rows, columns.len()).map_err(|e| {
        Error::sqlite(
            format!("preparing the insert into {}", quote_ident(table)),
            e,
        )
    })
}

impl Sink for SqliteSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        debug_assert_eq!(batch.ncols(), self.columns.len());
        self.write_batch_from(batch, 0, bad)
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        self.multi = None;
        for (name, _) in columns {
            self.columns.push(name.clone());
        }
        self.single = prepare(self.conn, &self.table, &self.columns, 1)?;
        self.prepare_multi()
    }
}

impl SqliteSink<'_> {
    /// `write_batch` for the rows of `batch` from `start` on.
    fn write_batch_from(
        &mut self,
        batch: &Batch,
        start: usize,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        let k = self.rows_per_statement();
        let n = batch.rows();
        let mut done = start;
        let mut written = 0;
        while k > 1 && n - done >= k {
            let stmt = self
                .multi
                .as_mut()
                .expect("k > 1 means a multi-row statement");
            match stmt.execute_rows(batch, done) {
                Ok(()) => written += k as u64,
                // SQLite undid the whole statement; find the refused rows one by one.
                Err(e) if is_row_error(&e) => {
                    written += self.write_singly(batch, done..done + k, bad)?
                }
                Err(e) => {
                    return Err(Error::sqlite(
                        format!("inserting into {}", quote_ident(&self.table)),
                        e,
                    ))
                }
            }
            done += k;
        }
        written += self.write_singly(batch, done..n, bad)?;
        Ok(written)
    }
}
