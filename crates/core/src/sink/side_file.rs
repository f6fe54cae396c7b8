//! The side file as a sink ([`SideFileSink`]): one input appended to an existing
//! database through the page writer. The rows go to a side file beside it
//! ([`super::page`]), which SQLite's transfer optimization copies into the table inside
//! one transaction, taken before anything is built (see [`super::target`] for when the
//! transfer applies and what it costs).

use std::path::PathBuf;

use super::page::GivenSchema;
use super::row_rules::{Origins, RowRules};
use super::side::{create_indexes, Side};
use super::{BatchSink, SampledTable, Sink, TablePlan, TableStart};
use crate::batch::Batch;
use crate::destination::{side_file_takes, Destination};
use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::names::Names;
use crate::plan::WriteRules;
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::source::BadRecord;
use crate::summary::{Durable, EngineUsed, Summary};
use crate::table::IndexSpec;
use crate::table::{already_held, HeldIndex};
use crate::types::ColumnType;

/// An append to the existing database at `db` through a side file.
pub(crate) struct SideFileSink<'p> {
    side: Side<'p>,
    /// The table's actual name, and, for an existing table, its indexes (key columns).
    name: String,
    existing: Option<Vec<Vec<String>>>,
    /// For a table made beforehand whose definition the side file repeats: what is
    /// known of its rows (see [`crate::destination::Destination::Exact`]).
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
    /// An append to `db` under `durability` with `rules` (indexes, what to do with an
    /// existing table, the page writer's settings).
    pub(crate) fn new(
        db: PathBuf,
        durability: Durability,
        rules: &'p WriteRules,
        progress: &'p Progress,
    ) -> Self {
        SideFileSink {
            side: Side::new(db, durability, rules, progress),
            name: String::new(),
            existing: None,
            exact: None,
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
        self.side.page()?.write_batch(batch, bad)
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        self.side.page()?.add_columns(columns)
    }
}

impl Sink for SideFileSink<'_> {
    fn begin(&mut self, sampled: &SampledTable<'_>) -> Result<TableStart> {
        let rules = self.side.rules;
        let target = self.side.open()?;
        // Read again inside the transaction: no other writer changes it from here on.
        // The plan chose this writer by the same rule on what it read without a lock.
        let changed = |side: &mut Side<'_>| -> Result<TableStart> {
            side.abort();
            Err(crate::destination::changed_since_planned(sampled.table))
        };
        let Some(dest) = target.destination(sampled.table, rules.if_exists)? else {
            return changed(&mut self.side);
        };
        if !side_file_takes(
            &dest,
            sampled.columns,
            sampled.grows,
            !rules.typed_columns.is_empty(),
        ) {
            return changed(&mut self.side);
        }
        let mut exact = None;
        let existing = match dest {
            Destination::New => None,
            Destination::Replace { name } => {
                // Dropped in this transaction, before anything is written: if the load
                // fails, the old table is still there.
                target
                    .run(&format!("DROP TABLE {}", quote_ident(&name)))
                    .map_err(|e| Error::sqlite(format!("dropping {}", quote_ident(&name)), e))?;
                None
            }
            Destination::Plain {
                name,
                columns,
                indexes,
                ..
            } => Some((name, columns, indexes)),
            Destination::Exact {
                name,
                columns,
                table,
            } => {
                let keys = table.indexes.iter().map(|ix| ix.columns.clone()).collect();
                exact = Some(table);
                Some((name, columns, keys))
            }
        };
        let (name, types) = match &existing {
            None => (sampled.table.to_string(), sampled.types.to_vec()),
            Some((name, columns, _)) => (name.clone(), columns.iter().map(|(_, t)| *t).collect()),
        };
        // The side file holds the indexes asked for, and those of an existing (then
        // empty) table: SQLite copies entries only into indexes the source has too.
        let held: Vec<Vec<String>> = existing
            .as_ref()
            .map(|(_, _, indexes)| indexes.clone())
            .unwrap_or_default();
        let mut side_indexes = rules.indexes.clone();
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
            for ix in &rules.indexes {
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
        let mut page = self.side.new_page(side_indexes, rules.verify)?;
        if let Some(given) = given {
            let table = exact.as_ref().expect("given comes from an exact table");
            page = page.with_schema(given);
            self.exact = Some(Exact {
                origins: Origins::new(sampled.name.into()),
                rules: RowRules {
                    not_null: table.not_null.clone(),
                    strict: table.strict.then(|| types.clone()),
                },
                checks: table.checks,
                broken: false,
                settled: None,
            });
        }
        let begun = page.begin(&SampledTable {
            name: sampled.name,
            input: sampled.input,
            table: &name,
            columns: sampled.columns,
            types: &types,
            grows: sampled.grows,
        })?;
        let TableStart::Write(_) = begun else {
            return Err(Error::internal("the page writer declined a side file"));
        };
        self.side.set_page(page);
        self.existing = existing.map(|(_, _, indexes)| indexes);
        self.name = name.clone();
        Ok(TableStart::Write(TablePlan {
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
            self.side.abort();
        }
        result
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        let result = self.transfer(summary);
        if result.is_err() {
            self.side.abort();
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
        let duplicates = self
            .side
            .finish_page(summary)?
            .ok_or_else(|| Error::internal("the side file finished without a table"))?
            .duplicate_keys();
        let (progress, name) = (self.side.progress, self.name.as_str());
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let target = self.side.target()?;
        target.attach(&self.side.path())?;
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
        let (progress, rules, name) = (self.side.progress, self.side.rules, self.name.as_str());
        let written = match self.side.finish_page(summary)? {
            Some(page) => page.create_sql().unwrap_or_default().to_string(),
            None if self.exact.is_some() => String::new(),
            None => return Err(Error::internal("the side file finished without a table")),
        };
        let target = self.side.target()?;
        let side = self.side.path();
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let moved = match &self.existing {
            Some(held) if held.is_empty() => {
                // An existing table without index may hold rows: SQLite copies into it
                // only while it has no index, so the indexes come after the rows, as on
                // SQLite's path.
                let moved = target.transfer(&side, name, None, &[])?;
                create_indexes(target, name, &rules.indexes, progress)?;
                moved
            }
            Some(_) => {
                // An empty table with indexes: every index first, then the rows and
                // their entries copied.
                create_indexes(target, name, &rules.indexes, progress)?;
                target.transfer(&side, name, None, &[])?
            }
            None => {
                // A new table: made with its indexes, each under a name free in the
                // database (the transfer matches the side file's indexes by columns,
                // not names), then the rows and their entries copied.
                let mut names = Names::of(target.conn())?;
                names.claim(name);
                let index_sql: Vec<String> = rules
                    .indexes
                    .iter()
                    .map(|ix| ix.create_sql(name, &names.allocate(&ix.wanted_name(name))))
                    .collect();
                target.transfer(&side, name, Some(written.as_str()), &index_sql)?
            }
        };
        let durability = self.side.commit(name, false, summary)?;
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
        summary.engine = Some(EngineUsed::Direct);
        summary.verified = rules.verify;
        Ok(())
    }

    /// Commits rows that went in one at a time (the side file failed its checks), with
    /// the indexes asked for.
    fn commit_inserted(&mut self, summary: &mut Summary, taken: u64) -> Result<()> {
        let name = self.name.as_str();
        let durability = self.side.commit(name, true, summary)?;
        summary.notes.push(format!(
            "{} refused rows when the side file was checked, so its rows went in one at a \
             time through SQLite's insert path ({taken} taken)",
            quote_ident(name)
        ));
        summary.rows = taken;
        summary.rows_per_statement = 1;
        summary.durability = Durable::Profile(durability);
        summary.engine = Some(EngineUsed::Sqlite);
        summary.verified = false;
        Ok(())
    }
}
