//! SQLite's insert path: [`SqliteSink`] takes a load's tables through a connection
//! (creating, checking or widening each, then its rows, then the indexes), writing each
//! table's rows through an [`Inserter`]: batches bound to a prepared multi-row INSERT.
//!
//! The statement inserts as many rows as SQLite's bound-parameter limit allows, read at
//! run time with `sqlite3_limit(SQLITE_LIMIT_VARIABLE_NUMBER)` (32766 since SQLite 3.32;
//! a build may set it lower), capped by `max_rows_per_statement`. Rows left over at the
//! end of a batch go through a one-row statement. Values are bound typed (INTEGER, REAL,
//! TEXT), never formatted into SQL.

pub(crate) mod file;
pub(crate) mod raw_stmt;

use std::collections::HashSet;
use std::sync::Arc;

use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode};

use super::{BatchSink, SampledTable, Sink, TablePlan, TableStart};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::options::OnConflict;
use crate::plan::table as table_plan;
use crate::plan::TableShape;
use crate::plan::WriteRules;
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::summary::Summary;
use crate::table;
use crate::types::ColumnType;
use raw_stmt::BatchStatement;

/// Inserts batches into one table through one connection, inside the caller's transaction.
pub(crate) struct Inserter<'c> {
    conn: &'c Connection,
    table: String,
    columns: Vec<String>,
    /// What a row with a taken key does.
    conflict: Conflict,
    source: Arc<str>,
    max_rows_per_statement: usize,
    multi: Option<BatchStatement<'c>>,
    single: BatchStatement<'c>,
}

impl<'c> Inserter<'c> {
    /// Prepares inserts into `table`'s `columns` (in batch order), a row whose key is
    /// taken doing what `conflict` says. `source` names the input in error messages.
    pub(crate) fn with_conflict(
        conn: &'c Connection,
        table: &str,
        columns: Vec<String>,
        source: Arc<str>,
        max_rows_per_statement: usize,
        conflict: Conflict,
    ) -> Result<Self> {
        let single = prepare(conn, table, &columns, 1, &conflict)?;
        let mut s = Inserter {
            conn,
            table: table.to_string(),
            columns,
            conflict,
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
        let mut rows = (vars / self.columns.len().max(1)).min(self.max_rows_per_statement);
        // An upsert goes a row per statement: measured on bench/on_conflict.py (1M rows
        // into 10M), many rows per `INSERT … ON CONFLICT DO UPDATE` took 8.1-9.2 s and
        // one row per statement 5.2 s.
        if self.conflict.update_key.is_some() {
            rows = 1;
        }
        self.multi = if rows > 1 {
            Some(prepare(
                self.conn,
                &self.table,
                &self.columns,
                rows,
                &self.conflict,
            )?)
        } else {
            None
        };
        Ok(())
    }

    /// Rows per multi-row statement (1 when the limit allows no more).
    pub(crate) fn rows_per_statement(&self) -> usize {
        self.multi.as_ref().map_or(1, |m| m.rows())
    }

    fn row_error(&self, batch: &Batch, row: usize, e: rusqlite::Error) -> Error {
        Error::refused_row(Some(batch.origin(row).position(&self.source)), &e)
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
pub(crate) fn is_row_error(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, ErrorCode::ConstraintViolation | ErrorCode::TypeMismatch | ErrorCode::TooBig))
}

/// What an INSERT does with a row whose key is taken.
#[derive(Clone, Debug, Default)]
pub(crate) struct Conflict {
    /// After `INSERT `: empty, `OR IGNORE ` or `OR REPLACE `.
    or: &'static str,
    /// For an update: the key, whose rows get the other loaded columns' new values.
    update_key: Option<Vec<String>>,
}

impl Conflict {
    /// The rule of `rules.on_conflict` into `table` (which exists), whose loaded columns
    /// are `columns`. `Update` needs a key: `rules.key`, else the table's primary key,
    /// else its one UNIQUE index; each of its columns must be loaded.
    pub(crate) fn of(
        conn: &Connection,
        table: &str,
        columns: &[String],
        rules: &WriteRules,
    ) -> Result<Conflict> {
        let or = match rules.on_conflict {
            OnConflict::Fail | OnConflict::Update => "",
            OnConflict::Ignore => "OR IGNORE ",
            OnConflict::Replace => "OR REPLACE ",
        };
        if rules.on_conflict != OnConflict::Update {
            return Ok(Conflict {
                or,
                update_key: None,
            });
        }
        let key = if rules.key.is_empty() {
            table::unique_key(conn, table)?
        } else {
            if !table::is_unique_key(conn, table, &rules.key)? {
                return Err(Error::schema(format!(
                    "the key ({}) is neither the primary key nor a UNIQUE index of {}: rows cannot be matched by it (make it one, or name the key the table has)",
                    rules.key.join(", "),
                    crate::schema::quote_ident(table)
                )));
            }
            rules.key.clone()
        };
        for k in &key {
            if !columns.iter().any(|c| c.eq_ignore_ascii_case(k)) {
                return Err(Error::usage(format!(
                    "key column {k:?} is not among the loaded columns ({}): rows could not be matched to the table's",
                    columns.join(", ")
                )));
            }
        }
        Ok(Conflict {
            or,
            update_key: Some(key),
        })
    }

    /// After `INSERT `: empty, `OR IGNORE ` or `OR REPLACE `.
    pub(crate) fn or(&self) -> &'static str {
        self.or
    }

    /// What follows the values of an INSERT of `columns`: empty, or an upsert clause that
    /// sets every loaded column but the key's.
    pub(crate) fn clause(&self, columns: &[String]) -> String {
        let Some(key) = &self.update_key else {
            return String::new();
        };
        let target: Vec<String> = key.iter().map(|k| quote_ident(k)).collect();
        let set: Vec<String> = columns
            .iter()
            .filter(|c| !key.iter().any(|k| k.eq_ignore_ascii_case(c)))
            .map(|c| format!("{0} = excluded.{0}", quote_ident(c)))
            .collect();
        let action = if set.is_empty() {
            "NOTHING".to_string()
        } else {
            format!("UPDATE SET {}", set.join(", "))
        };
        format!(" ON CONFLICT ({}) DO {action}", target.join(", "))
    }
}

fn prepare<'c>(
    conn: &'c Connection,
    table: &str,
    columns: &[String],
    rows: usize,
    conflict: &Conflict,
) -> Result<BatchStatement<'c>> {
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let one = format!("({})", vec!["?"; columns.len()].join(","));
    let sql = format!(
        "INSERT {}INTO {} ({}) VALUES {}{}",
        conflict.or,
        quote_ident(table),
        cols.join(","),
        vec![one.as_str(); rows].join(","),
        conflict.clause(columns)
    );
    BatchStatement::prepare(conn, &sql, rows, columns.len()).map_err(|e| {
        Error::sqlite(
            format!("preparing the insert into {}", quote_ident(table)),
            e,
        )
    })
}

impl BatchSink for Inserter<'_> {
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
        self.single = prepare(self.conn, &self.table, &self.columns, 1, &self.conflict)?;
        self.prepare_multi()
    }
}

impl Inserter<'_> {
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

/// SQLite's insert path for a whole load, through a connection whose transaction the
/// caller holds (the load's own, or the program's savepoint): each table created,
/// checked or widened as the options say, its rows inserted, then the indexes built.
pub(crate) struct SqliteSink<'c> {
    conn: &'c Connection,
    rules: &'c WriteRules,
    progress: &'c Progress,
    /// Tables this load created (lowercase): replaced or widened freely.
    created: HashSet<String>,
    /// Tables loaded, in order, for the indexes.
    loaded: Vec<String>,
    /// The table begun last and its statements.
    current: Option<(TablePlan, Inserter<'c>)>,
    rows_per_statement: usize,
    /// The tables of a load of several, each begun by its name with its shape (empty:
    /// the options shape every table).
    shapes: Vec<TableShape>,
}

impl<'c> SqliteSink<'c> {
    /// A load through `conn` with `rules` (its table rules, indexes and statement size).
    pub(crate) fn new(conn: &'c Connection, rules: &'c WriteRules, progress: &'c Progress) -> Self {
        SqliteSink {
            conn,
            rules,
            progress,
            created: HashSet::new(),
            loaded: vec![],
            current: None,
            rows_per_statement: 1,
            shapes: vec![],
        }
    }

    /// Loads several tables, each begun by the name of its shape: a table the load
    /// makes gets the shape's key, and its indexes after the rows; one that exists
    /// takes the rows as the options allow. The options' key and indexes do not apply.
    pub(crate) fn with_tables(mut self, shapes: Vec<TableShape>) -> Self {
        self.shapes = shapes;
        self
    }

    fn current(&mut self) -> Result<&mut (TablePlan, Inserter<'c>)> {
        self.current
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before their table was begun"))
    }
}

impl BatchSink for SqliteSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        self.current()?.1.write_batch(batch, bad)
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        let conn = self.conn;
        let (plan, inserter) = self.current()?;
        widen(conn, plan, columns)?;
        inserter.add_columns(columns)
    }
}

impl Sink for SqliteSink<'_> {
    fn begin(&mut self, table: &SampledTable<'_>) -> Result<TableStart> {
        self.current = None;
        let shape = if self.shapes.is_empty() {
            None
        } else {
            Some(
                self.shapes
                    .iter()
                    .find(|s| s.table == table.table)
                    .ok_or_else(|| {
                        Error::internal(format!("no shape for table {:?}", table.table))
                    })?,
            )
        };
        let plan = begin_table(
            self.conn,
            table.table,
            table.columns,
            table.types,
            self.rules,
            shape,
            &mut self.created,
        )?;
        let conflict = Conflict::of(self.conn, &plan.table, &plan.columns, self.rules)?;
        let inserter = Inserter::with_conflict(
            self.conn,
            &plan.table,
            plan.columns.clone(),
            table.name.into(),
            self.rules.rows_per_statement,
            conflict,
        )?;
        self.rows_per_statement = inserter.rows_per_statement();
        if !self.loaded.contains(&plan.table) {
            self.loaded.push(plan.table.clone());
        }
        self.current = Some((plan.clone(), inserter));
        Ok(TableStart::Write(plan))
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        self.current = None;
        self.progress.set_stage(Stage::Indexing);
        for table in &self.loaded {
            let indexes = match self.shapes.iter().find(|s| s.table == *table) {
                // A table of a copy gets its source's indexes when the load made it.
                Some(shape) if self.created.contains(&table.to_ascii_lowercase()) => &shape.indexes,
                Some(_) => continue,
                None => &self.rules.indexes,
            };
            for ix in indexes {
                self.progress.check()?;
                if let Some(sql) = crate::names::index_sql(self.conn, table, ix)? {
                    self.conn
                        .execute_batch(&sql)
                        .map_err(|e| ix.build_error(table, e))?;
                }
            }
        }
        summary.rows_per_statement = self.rows_per_statement;
        Ok(())
    }
}

/// Makes `table` ready in `conn` for a load with `rules` (its sample gave `columns` of
/// types `inferred`): the table is read where the rows will be written (inside the
/// caller's transaction), [`table_plan::decide`] (or, for a spec's table,
/// [`table_plan::decide_spec`]) says what to do, and its statements run here; `created`
/// holds the tables this load made so far. Every problem is found before any row is
/// written.
pub(crate) fn begin_table(
    conn: &Connection,
    table: &str,
    columns: &[String],
    inferred: &[ColumnType],
    rules: &WriteRules,
    shape: Option<&TableShape>,
    created: &mut HashSet<String>,
) -> Result<TablePlan> {
    let decision = match shape.and_then(|s| Some((s, s.declared.as_deref()?))) {
        Some((s, create)) => table_plan::decide_spec(
            table,
            columns,
            inferred,
            create,
            s.continued.as_ref(),
            crate::plan::Continued::read(conn, table)?,
        )?,
        None => table_plan::decide(
            table,
            table::existing_columns(conn, table)?,
            columns,
            inferred,
            rules,
            shape,
            created,
        )?,
    };
    for sql in &decision.statements {
        conn.execute_batch(sql)
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))?;
    }
    if decision.creates {
        created.insert(decision.plan.table.to_ascii_lowercase());
    }
    Ok(decision.plan)
}

/// Adds columns that appeared in the input after the sample, as
/// [`table_plan::widening`] allows.
fn widen(conn: &Connection, plan: &TablePlan, cols: &[(String, ColumnType)]) -> Result<()> {
    let existing = table::existing_columns(conn, &plan.table)?
        .map(|(_, c)| c)
        .unwrap_or_default();
    for sql in table_plan::widening(plan, &existing, cols)? {
        conn.execute_batch(&sql)
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))?;
    }
    Ok(())
}
