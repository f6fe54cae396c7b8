//! The side file as a sink ([`SideFileSink`]): one input appended to an existing
//! database through the page writer. The rows go to a side file beside it
//! ([`super::page`]), which SQLite's transfer optimization copies into the table inside
//! one transaction, taken before anything is built (see [`crate::append`] for when the
//! transfer applies and what it costs).

use std::path::PathBuf;
use std::sync::Arc;

use super::page::{GivenSchema, PageOut, PageSink};
use super::{BatchSink, Begun, Sampled, Sink, TablePlan};
use crate::append::{self, Destination};
use crate::batch::{Batch, RowOrigin};
use crate::durability::Durability;
use crate::error::{Error, Position, Result};
use crate::names::Names;
use crate::options::ImportOptions;
use crate::schema::quote_ident;
use crate::source::BadRecord;
use crate::summary::{Durable, Progress, Stage, Summary, Writer};
use crate::table::IndexSpec;
use crate::table::{already_held, HeldIndex};
use crate::types::ColumnType;

/// An append to the existing database at `db` through a side file.
pub(crate) struct SideFileSink<'p> {
    db: PathBuf,
    durability: Durability,
    opts: &'p ImportOptions,
    progress: &'p Progress,
    /// The database, inside the append's transaction, from `begin` until the commit.
    target: Option<append::Target>,
    page: Option<PageSink<'p>>,
    /// The table's actual name, and, for an existing table, its indexes (key columns).
    name: String,
    existing: Option<Vec<Vec<String>>>,
    /// Notes for the summary, ahead of the target's.
    notes: Vec<String>,
    /// For a table made beforehand whose definition the side file repeats: what is
    /// known of its rows (see [`crate::append::Destination::Exact`]).
    exact: Option<Exact>,
}

/// The side file of a table with constraints, between its rows and the transfer.
struct Exact {
    /// Where each row came from.
    origins: Origins,
    /// The rules of the table the records are checked against as they are written.
    rules: RowRules,
    /// Whether the table may have CHECK constraints, which `quick_check` evaluates.
    checks: bool,
    /// Whether a record broke one of them (or could not be looked at): the side file
    /// then goes in row by row.
    broken: bool,
    /// What [`Sink::settle`] found: `None` before, `Some(None)` when the side file
    /// passed its checks (the transfer copies it), `Some(Some(n))` when its rows went in
    /// one at a time, `n` of them taken.
    settled: Option<Option<u64>>,
}

impl<'p> SideFileSink<'p> {
    /// An append to `db` under `durability` with `opts` (indexes, what to do with an
    /// existing table, the page writer's settings).
    pub(crate) fn new(
        db: PathBuf,
        durability: Durability,
        opts: &'p ImportOptions,
        progress: &'p Progress,
    ) -> Self {
        SideFileSink {
            db,
            durability,
            opts,
            progress,
            target: None,
            page: None,
            name: String::new(),
            existing: None,
            notes: vec![],
            exact: None,
        }
    }

    fn page(&mut self) -> Result<&mut PageSink<'p>> {
        self.page
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before the side file's table"))
    }

    /// Rolls back and removes the side file: the database is as it was.
    fn abort(&mut self) {
        self.page = None;
        append::abandon(self.target.take(), &self.db);
    }
}

/// What each record of a table with constraints is checked for as it is written: NULL
/// in a NOT NULL column, and for a STRICT table a storage class its column does not take.
/// (CHECK constraints are SQLite's to evaluate, on the whole side file.)
struct RowRules {
    not_null: Vec<bool>,
    /// The column types of a STRICT table.
    strict: Option<Vec<ColumnType>>,
}

impl RowRules {
    /// Whether `batch` has a record that breaks a rule, or has no records to look at.
    fn broken_by(&self, batch: &Batch) -> bool {
        let Some(records) = batch.records() else {
            return batch.rows() > 0;
        };
        records.iter().any(|record| {
            record.serial_types().enumerate().any(|(i, t)| {
                if t == 0 {
                    return self.not_null.get(i).copied().unwrap_or(true);
                }
                match self.strict.as_ref().map(|types| types.get(i)) {
                    None => false,
                    // A REAL column keeps a whole number as an integer (SQLite reads it
                    // back as a REAL), so integers are REAL's too.
                    Some(Some(ColumnType::Integer)) => !matches!(t, 1..=6 | 8 | 9),
                    Some(Some(ColumnType::Real)) => !matches!(t, 1..=9),
                    Some(Some(ColumnType::Text)) => !(t >= 13 && t % 2 == 1),
                    Some(_) => true,
                }
            })
        })
    }
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
        let origin = self.rows[(rowid - 1) as usize];
        let pos = Position {
            path: self.source.clone(),
            line: origin.line,
            column: 1,
            record: origin.record,
            byte: 0,
        };
        BadRecord {
            error: Error::refused_row(Some(pos), e),
            fields,
        }
    }
}

impl Drop for SideFileSink<'_> {
    fn drop(&mut self) {
        if self.target.is_some() {
            self.abort();
        }
    }
}

impl BatchSink for SideFileSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        if let Some(exact) = &mut self.exact {
            exact.origins.push(batch);
            if !exact.broken && exact.rules.broken_by(batch) {
                exact.broken = true;
            }
        }
        self.page()?.write_batch(batch, bad)
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        self.page()?.add_columns(columns)
    }
}

impl Sink for SideFileSink<'_> {
    fn begin(&mut self, sampled: &Sampled<'_>) -> Result<Begun> {
        if self.target.is_some() {
            return Err(Error::internal("the side file takes one table"));
        }
        let target = append::Target::open(&self.db, self.durability, self.progress)?;
        self.target = Some(target);
        let target = self.target.as_ref().expect("just set");
        // Read again inside the transaction: no other writer changes it from here on.
        let mut exact = None;
        let existing = match target.destination(sampled.table, self.opts.if_exists)? {
            None => {
                self.abort();
                return Ok(Begun::Declined);
            }
            Some(Destination::New) => None,
            Some(Destination::Replace { name }) => {
                // Dropped in this transaction, before anything is written: if the load
                // fails, the old table is still there.
                target
                    .run(&format!("DROP TABLE {}", quote_ident(&name)))
                    .map_err(|e| Error::sqlite(format!("dropping {}", quote_ident(&name)), e))?;
                None
            }
            // JSON may name a column after the sample, which such a table does not have.
            Some(Destination::Plain { .. }) if sampled.grows || !self.opts.types.is_empty() => {
                self.abort();
                return Ok(Begun::Declined);
            }
            Some(Destination::Plain {
                name,
                columns,
                indexes,
            }) => Some((name, columns, indexes)),
            Some(Destination::Exact { .. }) if sampled.grows || !self.opts.types.is_empty() => {
                self.abort();
                return Ok(Begun::Declined);
            }
            Some(Destination::Exact {
                name,
                columns,
                table,
            }) => {
                let keys = table.indexes.iter().map(|ix| ix.columns.clone()).collect();
                exact = Some(table);
                Some((name, columns, keys))
            }
        };
        let (name, types) = match &existing {
            None => (sampled.table.to_string(), sampled.types.to_vec()),
            Some((name, columns, _)) => {
                let same = columns.len() == sampled.columns.len()
                    && columns
                        .iter()
                        .zip(sampled.columns)
                        .all(|((c, _), i)| c.eq_ignore_ascii_case(i));
                if !same {
                    self.abort();
                    return Ok(Begun::Declined);
                }
                (name.clone(), columns.iter().map(|(_, t)| *t).collect())
            }
        };
        let side = append::side_path(&self.db);
        // A side file a killed append left (this run holds the database's write lock,
        // so no other append to it is building one).
        self.notes = crate::durability::clear_stale(&side)?.into_iter().collect();
        // The side file holds the indexes asked for, and those of an existing (then
        // empty) table: SQLite copies entries only into indexes the source has too.
        let held: Vec<Vec<String>> = existing
            .as_ref()
            .map(|(_, _, indexes)| indexes.clone())
            .unwrap_or_default();
        let mut side_indexes = self.opts.indexes.clone();
        let mut given = None;
        if let Some(table) = &exact {
            // The table's own indexes under their own names, then those asked for that
            // it does not have by name (made in the database before the transfer).
            let mut names: Vec<(String, Option<String>)> = vec![];
            side_indexes.clear();
            let table_name = existing.as_ref().map(|(n, _, _)| n.as_str()).unwrap_or("");
            // The side file's own namespace: its one table and the table's indexes.
            let mut side_names = Names::new();
            side_names.claim(table_name);
            let mut held = vec![];
            for ix in &table.indexes {
                side_indexes.push(IndexSpec::new(ix.columns.iter().cloned(), ix.unique));
                names.push((ix.name.clone(), ix.sql.clone()));
                side_names.claim(&ix.name);
                held.push(HeldIndex {
                    unique: ix.unique,
                    columns: ix.columns.iter().cloned().map(Some).collect(),
                });
            }
            for ix in &self.opts.indexes {
                // Held already by its columns (whatever its name), or made in the
                // database before the transfer under a name free there; here under one
                // free in the side file (the transfer matches indexes by columns).
                if !already_held(&held, ix) {
                    let own = side_names.allocate(&ix.wanted_name(table_name));
                    side_indexes.push(ix.clone());
                    names.push((own.clone(), Some(ix.create_sql(table_name, &own))));
                }
            }
            given = Some(GivenSchema {
                create: table.create.clone(),
                indexes: names,
            });
        }
        for columns in held.iter().filter(|_| exact.is_none()) {
            // One side index per key (its name comes from the key): a key indexed
            // twice, or also asked for, is one index there, which each index here
            // copies from.
            let same = |ix: &IndexSpec| {
                ix.columns.len() == columns.len()
                    && ix
                        .columns
                        .iter()
                        .zip(columns)
                        .all(|(a, b)| a.eq_ignore_ascii_case(b))
            };
            if !side_indexes.iter().any(same) {
                side_indexes.push(IndexSpec::new(columns.iter().cloned(), false));
            }
        }
        let mut page = PageSink::new(
            PageOut::Side(side),
            target.page_size()?,
            side_indexes,
            self.opts.index_memory,
            self.opts.verify,
            self.progress,
        );
        if let Some(given) = given {
            let table = exact.as_ref().expect("given comes from an exact table");
            page = page.with_schema(given);
            self.exact = Some(Exact {
                origins: Origins::new(sampled.input.display_name().into()),
                rules: RowRules {
                    not_null: table.not_null.clone(),
                    strict: table.strict.then(|| types.clone()),
                },
                checks: table.checks,
                broken: false,
                settled: None,
            });
        }
        let begun = page.begin(&Sampled {
            input: sampled.input,
            table: &name,
            columns: sampled.columns,
            types: &types,
            grows: sampled.grows,
        })?;
        let Begun::Table(_) = begun else {
            return Err(Error::internal("the page writer declined a side file"));
        };
        self.page = Some(page);
        self.existing = existing.map(|(_, _, indexes)| indexes);
        self.name = name.clone();
        Ok(Begun::Table(TablePlan {
            table: name,
            columns: sampled.columns.to_vec(),
            types,
            may_alter: sampled.grows,
        }))
    }

    fn wants_records(&self) -> bool {
        true
    }

    fn settle(
        &mut self,
        summary: &mut Summary,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<()> {
        if self.exact.is_none() {
            return Ok(());
        }
        let result = self.check_exact(summary, bad);
        if result.is_err() {
            self.abort();
        }
        result
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        let result = self.transfer(summary);
        if result.is_err() {
            self.abort();
        }
        result
    }
}

impl SideFileSink<'_> {
    /// Finishes the side file of a table with constraints and checks it whole: when a
    /// record broke NOT NULL or STRICT, a UNIQUE index met a key twice, or (for a table
    /// with CHECK constraints) `quick_check` finds a row that breaks one, the transfer (which copies unchecked) is off, and the rows go
    /// in one at a time through SQLite's insert path, each refused one to `bad` with
    /// its position.
    fn check_exact(
        &mut self,
        summary: &mut Summary,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<()> {
        let mut page = self
            .page
            .take()
            .ok_or_else(|| Error::internal("the side file finished without a table"))?;
        page.finish(summary)?;
        let duplicates = page.duplicate_keys();
        drop(page);
        let (progress, name) = (self.progress, self.name.as_str());
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let target = self.target.as_ref().expect("begun");
        let side = append::side_path(&self.db);
        target.attach(&side)?;
        let exact = self.exact.as_mut().expect("checked by the caller");
        // NOT NULL and STRICT were checked record by record; only CHECK needs SQLite
        // to read the side file again (2 s of 16 for 3M rows of 29 columns).
        let passed =
            !duplicates && !exact.broken && (!exact.checks || target.side_passes_checks(name)?);
        if passed {
            exact.settled = Some(None);
            return Ok(());
        }
        let origins = std::mem::replace(&mut exact.origins, Origins::new("".into()));
        let t = quote_ident(name);
        let one = format!("INSERT INTO main.{t} SELECT * FROM liteload_side.{t} WHERE rowid = ?1");
        let taken = target.insert_each(
            &one,
            name,
            origins.len(),
            progress,
            &mut |rowid, e, fields| bad(origins.refused(rowid, &e, fields)),
        )?;
        self.exact.as_mut().expect("checked").settled = Some(Some(taken));
        Ok(())
    }

    /// Finishes the side file, moves its rows into the table and commits.
    fn transfer(&mut self, summary: &mut Summary) -> Result<()> {
        if let Some(Exact {
            settled: Some(Some(taken)),
            ..
        }) = self.exact
        {
            return self.commit_inserted(summary, taken);
        }
        let (progress, opts, name) = (self.progress, self.opts, self.name.as_str());
        let written = match self.page.take() {
            Some(mut page) => {
                page.finish(summary)?;
                page.create_sql().unwrap_or_default().to_string()
            }
            None if self.exact.is_some() => String::new(),
            None => return Err(Error::internal("the side file finished without a table")),
        };
        let target = self.target.as_ref().expect("begun");
        let side = append::side_path(&self.db);
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let moved = match &self.existing {
            Some(held) if held.is_empty() => {
                // An existing table without index may hold rows: SQLite copies into it
                // only while it has no index, so the indexes come after the rows, as on
                // SQLite's path.
                let moved = target.transfer(&side, name, None, &[])?;
                create_indexes(target, name, &opts.indexes, progress)?;
                moved
            }
            Some(_) => {
                // An empty table with indexes: every index first, then the rows and
                // their entries copied.
                create_indexes(target, name, &opts.indexes, progress)?;
                target.transfer(&side, name, None, &[])?
            }
            None => {
                // A new table: made with its indexes, each under a name free in the
                // database (the transfer matches the side file's indexes by columns,
                // not names), then the rows and their entries copied.
                let mut names = Names::of(target.conn())?;
                names.claim(name);
                let index_sql: Vec<String> = opts
                    .indexes
                    .iter()
                    .map(|ix| ix.create_sql(name, &names.allocate(&ix.wanted_name(name))))
                    .collect();
                target.transfer(&side, name, Some(written.as_str()), &index_sql)?
            }
        };
        progress.check()?;
        let target = self.target.take().expect("begun");
        let durability = target.durability();
        let committed = target.commit();
        let _ = std::fs::remove_file(&side);
        summary.notes.append(&mut self.notes);
        summary.notes.extend(committed?);
        summary.notes.push(if moved.copies_records {
            format!(
                "appended through a side file: SQLite copied its {} records into {} without decoding them",
                moved.rows,
                quote_ident(name)
            )
        } else {
            format!(
                "appended through a side file, but SQLite decoded its {} rows (its transfer \
                 optimization did not apply to {})",
                moved.rows,
                quote_ident(name)
            )
        });
        summary.rows = moved.rows;
        summary.rows_per_statement = 0;
        summary.durability = Durable::Profile(durability);
        summary.engine = Some(Writer::Direct);
        summary.verified = opts.verify;
        Ok(())
    }

    /// Commits rows that went in one at a time (the side file failed its checks), with
    /// the indexes asked for.
    fn commit_inserted(&mut self, summary: &mut Summary, taken: u64) -> Result<()> {
        let (progress, opts, name) = (self.progress, self.opts, self.name.as_str());
        let target = self.target.as_ref().expect("begun");
        create_indexes(target, name, &opts.indexes, progress)?;
        progress.check()?;
        let target = self.target.take().expect("begun");
        let durability = target.durability();
        let committed = target.commit();
        let _ = std::fs::remove_file(append::side_path(&self.db));
        summary.notes.append(&mut self.notes);
        summary.notes.extend(committed?);
        summary.notes.push(format!(
            "{} refused rows when the side file was checked, so its rows went in one at a \
             time through SQLite's insert path ({taken} taken)",
            quote_ident(name)
        ));
        summary.rows = taken;
        summary.rows_per_statement = 1;
        summary.durability = Durable::Profile(durability);
        summary.engine = Some(Writer::Sqlite);
        summary.verified = false;
        Ok(())
    }
}

/// Gives `table` of `target`'s database the `indexes` asked for that it lacks, each under
/// a name free there.
pub(crate) fn create_indexes(
    target: &append::Target,
    table: &str,
    indexes: &[IndexSpec],
    progress: &Progress,
) -> Result<()> {
    for ix in indexes {
        progress.check()?;
        if let Some(sql) = crate::names::index_sql(target.conn(), table, ix)? {
            target.run(&sql).map_err(|e| ix.build_error(table, e))?;
        }
    }
    Ok(())
}
