//! Upserts through a side file ([`MergeSink`]): the rows of an `ignore`, `replace` or
//! `update` load are written by the page writer into a side file beside the database,
//! then merged into the table by one `INSERT … SELECT … ORDER BY key` with the rule's
//! conflict clause, inside one transaction.
//!
//! Why: a row per statement in input order touches the table's pages at random; in key
//! order each leaf is read and written once for all the rows that land on it (1M upserts
//! into 10M rows, bench/on_conflict.py). Key order gives the table that input order
//! gives only where the order cannot change the outcome, which
//! [`crate::destination::merge_target`] decides (the key is the rowid, no other UNIQUE
//! index, no trigger); rows of one key keep their input order (`ORDER BY key, rowid`),
//! and when a key is NULL (a new rowid, which depends on the order) the rows are merged
//! in input order. When the one statement fails on a row (NOT NULL, CHECK, a value the
//! key cannot take), it is undone whole and the side file's rows go in one at a time in
//! input order, each refused one a bad record with its position.

use std::path::PathBuf;

use super::row_rules::Origins;
use super::side::Side;
use super::sqlite::{is_row_error, Conflict};
use super::{BatchSink, SampledTable, Sink, TablePlan, TableStart};
use crate::batch::Batch;
use crate::destination::MergeTarget;
use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::plan::WriteRules;
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::source::BadRecord;
use crate::summary::{Durable, EngineUsed, Summary};
use crate::types::ColumnType;

/// An upsert into a table of the existing database at `db` through a side file.
pub(crate) struct MergeSink<'p> {
    side: Side<'p>,
    merging: Option<Merging>,
    /// Rows merged, once [`Sink::settle`] ran, and whether by the one statement.
    taken: Option<(u64, bool)>,
}

/// The table being merged into, and what is known of the side file's rows.
struct Merging {
    into: MergeTarget,
    conflict: Conflict,
    /// The key's position among the columns.
    key: usize,
    /// Whether a row's key is NULL (then the merge keeps the input order).
    null_key: bool,
    /// Where each row came from.
    origins: Origins,
}

impl<'p> MergeSink<'p> {
    /// An upsert into `db` under `durability` with `rules` (its rule and key).
    pub(crate) fn new(
        db: PathBuf,
        durability: Durability,
        rules: &'p WriteRules,
        progress: &'p Progress,
    ) -> Self {
        MergeSink {
            side: Side::new(db, durability, rules, progress),
            merging: None,
            taken: None,
        }
    }

    /// Finishes the side file and merges its rows (see the module docs).
    fn merge(
        &mut self,
        summary: &mut Summary,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<()> {
        self.side
            .finish_page(summary)?
            .ok_or_else(|| Error::internal("the side file finished without a table"))?;
        let progress = self.side.progress;
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let target = self.side.target()?;
        let m = self.merging.as_mut().expect("begun");
        target.attach(&self.side.path())?;
        let t = quote_ident(&m.into.name);
        let cols: Vec<String> = m.into.columns.iter().map(|(c, _)| quote_ident(c)).collect();
        let names: Vec<String> = m.into.columns.iter().map(|(c, _)| c.clone()).collect();
        let (cols, or) = (cols.join(", "), m.conflict.or());
        let clause = m.conflict.clause(&names);
        let order = if m.null_key {
            "rowid".to_string()
        } else {
            format!("{}, rowid", quote_ident(&m.into.key))
        };
        let all = format!(
            "INSERT {or}INTO main.{t} ({cols}) SELECT {cols} FROM liteload_side.{t} \
             WHERE true ORDER BY {order}{clause}"
        );
        let rows = m.origins.len();
        match target.execute(&all) {
            Ok(_) => {
                self.taken = Some((rows, true));
                return Ok(());
            }
            Err(e) if is_row_error(&e) => {}
            Err(e) => return Err(Error::sqlite(format!("running {all}"), e)),
        }
        // A row refused: the statement is undone; each row on its own, in input order.
        let one = format!(
            "INSERT {or}INTO main.{t} ({cols}) SELECT {cols} FROM liteload_side.{t} \
             WHERE rowid = ?1{clause}"
        );
        let origins = &m.origins;
        let taken = target.insert_each(
            &one,
            &m.into.name,
            rows,
            progress,
            &mut |rowid, e, fields| bad(origins.refused(rowid, &e, fields)),
        )?;
        self.side.notes.push(format!(
            "{t} refused rows in the merge of the side file, so its rows went in one at a \
             time ({taken} taken)"
        ));
        self.taken = Some((taken, false));
        Ok(())
    }
}

impl BatchSink for MergeSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        let m = self
            .merging
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before the side file's table"))?;
        m.origins.push(batch);
        if !m.null_key {
            m.null_key = match batch.records() {
                Some(records) => records
                    .iter()
                    .any(|r| r.serial_types().nth(m.key).is_none_or(|t| t == 0)),
                None => batch.rows() > 0,
            };
        }
        self.side.page()?.write_batch(batch, bad)
    }

    fn add_columns(&mut self, _columns: &[(String, ColumnType)]) -> Result<()> {
        Err(Error::internal("an upsert's side file gains no column"))
    }
}

impl Sink for MergeSink<'_> {
    fn begin(&mut self, sampled: &SampledTable<'_>) -> Result<TableStart> {
        let rules = self.side.rules;
        let target = self.side.open()?;
        // Read again inside the transaction: no other writer changes it from here on.
        // The plan chose the merge by the same rule on what it read without a lock.
        let into = match target.merge_target(sampled.table, sampled.columns, &rules.key)? {
            Some(into) if !sampled.grows && rules.if_exists == crate::table::IfExists::Append => {
                into
            }
            _ => {
                self.side.abort();
                return Err(crate::destination::changed_since_planned(sampled.table));
            }
        };
        let names: Vec<String> = into.columns.iter().map(|(c, _)| c.clone()).collect();
        let types: Vec<ColumnType> = into.columns.iter().map(|(_, t)| *t).collect();
        let conflict = Conflict::of(target.conn(), &into.name, &names, rules)?;
        let key = names
            .iter()
            .position(|c| c.eq_ignore_ascii_case(&into.key))
            .expect("a merge target has its key among the columns");
        let mut page = self.side.new_page(vec![], false)?;
        let TableStart::Write(_) = page.begin(&SampledTable {
            name: sampled.name,
            input: sampled.input,
            table: &into.name,
            columns: &names,
            types: &types,
            grows: false,
        })?
        else {
            return Err(Error::internal("the page writer declined a side file"));
        };
        self.side.set_page(page);
        let plan = TablePlan {
            table: into.name.clone(),
            columns: names,
            types,
            may_alter: false,
        };
        self.merging = Some(Merging {
            into,
            conflict,
            key,
            null_key: false,
            origins: Origins::new(sampled.name.into()),
        });
        Ok(TableStart::Write(plan))
    }

    fn wants_records(&self) -> bool {
        true
    }

    fn settle(
        &mut self,
        summary: &mut Summary,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<()> {
        let result = self.merge(summary, bad);
        if result.is_err() {
            self.side.abort();
        }
        result
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        let Some((taken, whole)) = self.taken else {
            self.side.abort();
            return Err(Error::internal("the merge finished before it settled"));
        };
        let name = self.merging.as_ref().expect("begun").into.name.clone();
        let durability = match self.side.commit(&name, true, summary) {
            Ok(durability) => durability,
            Err(e) => {
                self.side.abort();
                return Err(e);
            }
        };
        if whole {
            summary.notes.push(format!(
                "merged through a side file: {taken} rows into {} by one statement in key order",
                quote_ident(&name)
            ));
        }
        summary.rows = taken;
        summary.rows_per_statement = 0;
        summary.durability = Durable::Profile(durability);
        summary.engine = Some(EngineUsed::Sqlite);
        summary.verified = false;
        Ok(())
    }
}
