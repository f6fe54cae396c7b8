//! What an append's side file ([`super::side_file`]) and an upsert's merge
//! ([`super::merge`]) share: the existing database inside one write transaction
//! ([`Target`]), the side file the page writer fills beside it, where each of its rows
//! came from, and the end of the load either way: abort (rolled back, side file
//! removed) or commit (indexes asked for, commit, side file removed).

use std::path::PathBuf;

use super::page::{PageOut, PageSink};
use super::target::{self, Target};
use super::Sink;

use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::plan::WriteRules;
use crate::progress::Progress;
use crate::summary::Summary;
use crate::table::IndexSpec;

/// A load into the existing database at `db` through a side file: its transaction from
/// [`Side::open`] until [`Side::commit`] or [`Side::abort`] (a drop aborts).
pub(crate) struct Side<'p> {
    pub(crate) db: PathBuf,
    pub(crate) durability: Durability,
    pub(crate) rules: &'p WriteRules,
    pub(crate) progress: &'p Progress,
    /// The database, inside the load's transaction, from `open` until the commit.
    target: Option<Target>,
    /// The side file's page writer, from its table's `begin` until it is finished.
    page: Option<PageSink<'p>>,
    /// Notes for the summary, ahead of the target's.
    pub(crate) notes: Vec<String>,
}

impl<'p> Side<'p> {
    /// A load into `db` under `durability` with `rules`; nothing is opened yet.
    pub(crate) fn new(
        db: PathBuf,
        durability: Durability,
        rules: &'p WriteRules,
        progress: &'p Progress,
    ) -> Self {
        Side {
            db,
            durability,
            rules,
            progress,
            target: None,
            page: None,
            notes: vec![],
        }
    }

    /// Opens the database and begins the load's transaction (before anything is read
    /// or built, so no other writer changes the table from here on). Once per load: a
    /// side file takes one table.
    pub(crate) fn open(&mut self) -> Result<&Target> {
        if self.target.is_some() {
            return Err(Error::internal("the side file takes one table"));
        }
        Ok(self
            .target
            .insert(Target::open(&self.db, self.durability, self.progress)?))
    }

    /// The database inside the transaction; between `open` and the commit.
    pub(crate) fn target(&self) -> Result<&Target> {
        self.target
            .as_ref()
            .ok_or_else(|| Error::internal("the side file's database is not open"))
    }

    /// The side file's path.
    pub(crate) fn path(&self) -> PathBuf {
        target::side_path(&self.db)
    }

    /// A page writer for the side file, with `indexes` (built after the rows) and the
    /// page size of the database; a side file a killed load left is removed first (this
    /// load holds the database's write lock, so no other one is building one). Hand it
    /// back with [`Side::set_page`] once its table has begun.
    pub(crate) fn new_page(
        &mut self,
        indexes: Vec<IndexSpec>,
        verify: bool,
    ) -> Result<PageSink<'p>> {
        let side = self.path();
        self.notes.extend(crate::durability::clear_stale(&side)?);
        let page_size = self.target()?.page_size()?;
        Ok(PageSink::new(
            PageOut::Side(side),
            page_size,
            indexes,
            self.rules.index_memory,
            verify,
            self.progress,
        ))
    }

    /// The side file's page writer, its table begun.
    pub(crate) fn set_page(&mut self, page: PageSink<'p>) {
        self.page = Some(page);
    }

    /// The side file's page writer, for rows.
    pub(crate) fn page(&mut self) -> Result<&mut PageSink<'p>> {
        self.page
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before the side file's table"))
    }

    /// Finishes the side file (its indexes, its file synced) and returns its writer,
    /// for what it knows of the file; `None` when it was finished before.
    pub(crate) fn finish_page(&mut self, summary: &mut Summary) -> Result<Option<PageSink<'p>>> {
        match self.page.take() {
            Some(mut page) => {
                page.finish(summary)?;
                Ok(Some(page))
            }
            None => Ok(None),
        }
    }

    /// Gives `table` the indexes asked for that it lacks (with `indexes`), commits the
    /// transaction and removes the side file; the notes go to `summary`. Returns the
    /// profile the transaction ran under.
    pub(crate) fn commit(
        &mut self,
        table: &str,
        indexes: bool,
        summary: &mut Summary,
    ) -> Result<Durability> {
        if indexes {
            create_indexes(self.target()?, table, &self.rules.indexes, self.progress)?;
        }
        self.progress.check()?;
        let target = self.target.take().expect("checked by target()");
        let durability = target.durability();
        let committed = target.commit();
        let _ = std::fs::remove_file(self.path());
        summary.notes.append(&mut self.notes);
        summary.notes.extend(committed?);
        Ok(durability)
    }

    /// Rolls back and removes the side file: the database is as it was.
    pub(crate) fn abort(&mut self) {
        self.page = None;
        target::abandon(self.target.take(), &self.db);
    }
}

impl Drop for Side<'_> {
    fn drop(&mut self) {
        if self.target.is_some() {
            self.abort();
        }
    }
}

/// Gives `table` of `target`'s database the `indexes` asked for that it lacks, each under
/// a name free there.
pub(crate) fn create_indexes(
    target: &target::Target,
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
