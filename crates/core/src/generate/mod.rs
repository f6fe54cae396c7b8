//! `generate`: synthetic tables, deterministic for a seed, loaded as `import` loads:
//! one plan (the generator is the load's source, the spec's declaration its table's;
//! the engine chosen by the same rule), written by [`crate::import`]'s writers. Into a
//! new file the page writer takes the rows as whole leaves the generator fills on every
//! core (`leaves.rs`); elsewhere they go by batches.

mod leaves;
pub mod rng;
mod source;
pub mod spec;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::durability::{Durability, FileSettings};
use crate::error::{Error, Result};
use crate::import;
use crate::options::{Engine, ImportOptions};
use crate::plan::{self, Dest, TableShape};
use crate::progress::Progress;
use crate::summary::Summary;
use crate::table::IfExists;
pub use source::{GeneratorSource, CHUNK_ROWS};
pub use spec::{default_columns, ColumnSpec, Gen};

/// What to generate, and how to write it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GenerateOptions {
    /// Rows to make.
    pub rows: u64,
    /// The table to make them in.
    pub table: String,
    /// Its columns and how each is drawn.
    pub columns: Vec<ColumnSpec>,
    /// The seed: the same seed, spec and rows make the same values.
    pub seed: u64,
    /// Generator threads (the writer is one more).
    pub threads: usize,
    /// `None` picks `AtomicNew` for a new file and `Balanced` for an existing one.
    pub durability: Option<Durability>,
    /// Page size and the like, for a new file.
    pub file: FileSettings,
    /// Generate every value, write nothing: the floor under the SQLite path.
    pub generate_only: bool,
    /// The cap on rows per INSERT statement (SQLite's path).
    pub rows_per_statement: usize,
    /// SQLite's insert path, the direct page writer (a new file only), or `Auto` (the
    /// default): the page writer for a new file.
    pub engine: Engine,
    /// Direct engine: SQLite checks the file (`integrity_check`) before it is put in place.
    pub verify: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            rows: 0,
            table: "user".into(),
            columns: default_columns(),
            seed: 0,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            durability: None,
            file: FileSettings::default(),
            generate_only: false,
            rows_per_statement: crate::options::DEFAULT_ROWS_PER_STATEMENT,
            engine: Engine::Auto,
            verify: false,
        }
    }
}

fn validate(opts: &GenerateOptions) -> Result<()> {
    if opts.columns.is_empty() {
        return Err(Error::usage("no columns to generate"));
    }
    if opts.columns.len() > 2000 {
        return Err(Error::usage("more than SQLite's 2000 columns per table"));
    }
    let mut seen = HashSet::new();
    for c in &opts.columns {
        if !seen.insert(c.name.to_ascii_lowercase()) {
            return Err(Error::usage(format!("column {:?} is named twice", c.name)));
        }
    }
    if opts.columns.iter().filter(|c| c.gen == Gen::Rowid).count() > 1 {
        return Err(Error::usage("more than one rowid column"));
    }
    if opts.table.is_empty() {
        return Err(Error::usage("the table name is empty"));
    }
    if opts.engine == Engine::Direct && opts.generate_only {
        return Err(Error::usage(
            "generating only writes nothing, and the page writer writes: pick one",
        ));
    }
    opts.file.check()?;
    crate::schema::check_new_table(&opts.table, opts.columns.iter().map(|c| c.name.as_str()))
}

/// Generates `opts.rows` rows into `opts.table` of the database at `db`. A new file is
/// built `atomic-new` (a kill leaves no file); an existing table must have exactly the
/// spec's columns, and its rowids continue from its largest.
pub fn generate(db: &Path, opts: &GenerateOptions, progress: &Progress) -> Result<Summary> {
    generate_with(db, opts, progress).map_err(|e| e.in_file(db))
}

fn generate_with(db: &Path, opts: &GenerateOptions, progress: &Progress) -> Result<Summary> {
    let start = Instant::now();
    progress.rows_total.store(opts.rows, Ordering::Relaxed);
    let (mut plan, load_opts) = plan_generate(Dest::File(db), opts, None)?;
    let mut summary = import::write(db, &mut plan, &load_opts, progress, start)?;
    if summary.tables.is_empty() {
        summary.tables.push(opts.table.clone());
    }
    Ok(summary)
}

/// The plan of a generate run into `dest`, and the load options it was made with. A
/// table of a destination the plan cannot open itself (a cluster's) comes as `held`:
/// its actual name and what the caller read of it.
pub(crate) fn plan_generate(
    dest: Dest<'_>,
    opts: &GenerateOptions,
    held: Option<(String, plan::Continued)>,
) -> Result<(plan::ImportPlan<'static>, ImportOptions)> {
    validate(opts)?;
    // The load's options: the plan chooses the engine as for any load, and the writer
    // reads what it needs of them from the plan.
    let load_opts = ImportOptions {
        engine: opts.engine,
        durability: opts.durability,
        file: opts.file,
        verify: opts.verify,
        rows_per_statement: opts.rows_per_statement,
        batch_rows: CHUNK_ROWS as usize,
        parse_only: opts.generate_only,
        if_exists: IfExists::Append,
        ..ImportOptions::default()
    };
    let defs: Vec<String> = opts.columns.iter().map(|c| c.definition()).collect();
    let (table, continued) = match held {
        Some((actual, continued)) => (actual, Some(continued)),
        None => (opts.table.clone(), None),
    };
    let shape = TableShape {
        table,
        // The rowid column is left out of the rows: SQLite numbers them.
        rowid: None,
        indexes: vec![],
        declared: Some(crate::table::create_table_sql(&opts.table, &defs)),
        continued,
        constraints: Default::default(),
    };
    let spec_columns: Vec<String> = opts.columns.iter().map(|c| c.name.clone()).collect();
    let written: Vec<&ColumnSpec> = opts
        .columns
        .iter()
        .filter(|c| c.gen != Gen::Rowid)
        .collect();
    let plan = plan::plan_source(
        dest,
        shape,
        &spec_columns,
        "<generate>",
        written.iter().map(|c| c.name.clone()).collect(),
        written.iter().map(|c| c.column_type()).collect(),
        |first_rowid| {
            Box::new(GeneratorSource::new(
                opts.columns.clone(),
                opts.rows,
                opts.seed,
                first_rowid,
                opts.threads,
            ))
        },
        &load_opts,
    )?;
    Ok((plan, load_opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows are numbered from the largest rowid the plan read: rows another
    /// connection adds before the writer's transaction fail the load, with nothing
    /// written, rather than shift every rowid-drawn value.
    #[test]
    fn rows_added_after_the_plan_fail_the_load_with_nothing_written(
    ) -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("g.db");
        let opts = GenerateOptions {
            rows: 100,
            engine: Engine::Sqlite,
            threads: 2,
            ..GenerateOptions::default()
        };
        generate(&db, &opts, &Progress::default())?;
        let (mut plan, load_opts) = plan_generate(Dest::File(&db), &opts, None)?;
        let conn = rusqlite::Connection::open(&db)?;
        // A copy of a row under the next rowid (the spec's first column is the rowid).
        conn.execute_batch(
            "CREATE TEMP TABLE one AS SELECT * FROM user LIMIT 1; \
             UPDATE one SET id = (SELECT max(rowid) + 1 FROM user); \
             INSERT INTO user SELECT * FROM one; DROP TABLE one",
        )?;
        let count = || -> rusqlite::Result<i64> {
            conn.query_row("SELECT count(*) FROM user", [], |r| r.get(0))
        };
        let before = count()?;
        let e = import::write(
            &db,
            &mut plan,
            &load_opts,
            &Progress::default(),
            Instant::now(),
        )
        .expect_err("the table changed after the plan");
        assert!(
            e.to_string().contains("changed after the load was planned"),
            "{e}"
        );
        assert_eq!(count()?, before);
        // Planned again, the run continues the rowids.
        let s = generate(&db, &opts, &Progress::default())?;
        assert_eq!(s.rows, 100);
        assert_eq!(count()?, before + 100);
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok");
        Ok(())
    }
}
