//! The side file as a sink ([`SideFileSink`]): one input appended to an existing
//! database through the page writer. The rows go to a side file beside it
//! ([`super::page`]), which SQLite's transfer optimization copies into the table inside
//! one transaction, taken before anything is built (see [`crate::append`] for when the
//! transfer applies and what it costs).

use std::path::PathBuf;

use super::page::{PageOut, PageSink};
use super::{BatchSink, Begun, Sampled, Sink, TablePlan};
use crate::append::{self, Destination};
use crate::batch::Batch;
use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::options::ImportOptions;
use crate::schema::quote_ident;
use crate::summary::{Durable, Progress, Stage, Summary, Writer};
use crate::table::IndexSpec;
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
        if let Some(target) = self.target.take() {
            target.abort();
        }
        let _ = std::fs::remove_file(append::side_path(&self.db));
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
        let target = append::Target::open(&self.db, self.durability)?;
        self.target = Some(target);
        let target = self.target.as_ref().expect("just set");
        // Read again inside the transaction: no other writer changes it from here on.
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
        for columns in &held {
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
                side_indexes.push(IndexSpec {
                    columns: columns.clone(),
                    unique: false,
                });
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

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        let result = self.transfer(summary);
        if result.is_err() {
            self.abort();
        }
        result
    }
}

impl SideFileSink<'_> {
    /// Finishes the side file, moves its rows into the table and commits.
    fn transfer(&mut self, summary: &mut Summary) -> Result<()> {
        let mut page = self
            .page
            .take()
            .ok_or_else(|| Error::internal("the side file finished without a table"))?;
        page.finish(summary)?;
        let written = page.create_sql().unwrap_or_default().to_string();
        drop(page);
        let (progress, opts, name) = (self.progress, self.opts, self.name.as_str());
        let target = self.target.as_ref().expect("begun");
        let side = append::side_path(&self.db);
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let index_sql: Vec<String> = opts.indexes.iter().map(|ix| ix.sql(name)).collect();
        let moved = match &self.existing {
            Some(held) if held.is_empty() => {
                // An existing table without index may hold rows: SQLite copies into it
                // only while it has no index, so the indexes come after the rows, as on
                // SQLite's path.
                let moved = target.transfer(&side, name, None, &[])?;
                for (ix, sql) in opts.indexes.iter().zip(&index_sql) {
                    progress.check()?;
                    target.run(sql).map_err(|e| ix.build_error(name, e))?;
                }
                moved
            }
            existing => {
                // A new table, or an empty one with indexes: every index first, then
                // the rows and their entries copied.
                if existing.is_some() {
                    for (ix, sql) in opts.indexes.iter().zip(&index_sql) {
                        target.run(sql).map_err(|e| ix.build_error(name, e))?;
                    }
                }
                let create = existing.is_none().then_some(written.as_str());
                target.transfer(&side, name, create, &index_sql)?
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
}
