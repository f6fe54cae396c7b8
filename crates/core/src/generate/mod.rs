//! `generate`: synthetic tables, deterministic for a seed, loaded through the same
//! pipeline and durability profiles as `import`.

mod leaves;
pub mod rng;
mod source;
pub mod spec;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use crate::options::Engine;
use crate::sink::page::file as direct_engine;
use rusqlite::Connection;

use crate::durability::{Durability, FileSettings};
use crate::error::{Error, Hint, Result};
use crate::pipeline::{self, Rejects};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::sink::sqlite::file as run;
use crate::sink::sqlite::Inserter;
use crate::sink::NullSink;
use crate::summary::{self, Durable, Summary};
use crate::table;
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
    validate(opts)?;
    progress.rows_total.store(opts.rows, Ordering::Relaxed);
    let rejects = Mutex::new(Rejects::new(None, None)?);
    let mut summary = Summary {
        tables: vec![opts.table.clone()],
        rows_per_statement: 1,
        ..Summary::default()
    };
    if opts.generate_only {
        let mut src =
            GeneratorSource::new(opts.columns.clone(), opts.rows, opts.seed, 1, opts.threads);
        summary.rows = pipeline::run(
            &mut src,
            &mut NullSink::default(),
            CHUNK_ROWS as usize,
            progress,
            &rejects,
            &mut summary,
        )?;
        summary.durability = Durable::NotWritten;
        summary::finish(&mut summary, start);
        return Ok(summary);
    }
    if crate::plan::new_file_by_pages(opts.engine, db, opts.durability, || true) {
        return generate_direct(db, opts, progress, summary, start);
    }
    let load = |conn: &Connection, summary: &mut Summary| -> Result<()> {
        let names: Vec<String> = opts.columns.iter().map(|c| c.name.clone()).collect();
        let first_rowid = match table::existing_columns(conn, &opts.table)? {
            Some((actual, cols)) => {
                let have: Vec<String> = cols.iter().map(|c| c.name.clone()).collect();
                check_same_columns(&actual, &have, &names)?;
                let max: i64 = conn
                    .query_row(
                        &format!(
                            "SELECT coalesce(max(rowid), 0) FROM {}",
                            quote_ident(&actual)
                        ),
                        [],
                        |r| r.get(0),
                    )
                    .map_err(|e| Error::sqlite("reading the largest rowid", e))?;
                max + 1
            }
            None => {
                let defs: Vec<String> = opts.columns.iter().map(|c| c.definition()).collect();
                let sql = crate::table::create_table_sql(&opts.table, &defs);
                conn.execute_batch(&sql)
                    .map_err(|e| Error::sqlite(format!("running {sql}"), e))?;
                1
            }
        };
        let mut src = GeneratorSource::new(
            opts.columns.clone(),
            opts.rows,
            opts.seed,
            first_rowid,
            opts.threads,
        );
        let written: Vec<String> = opts
            .columns
            .iter()
            .filter(|c| c.gen != Gen::Rowid)
            .map(|c| c.name.clone())
            .collect();
        let mut sink = Inserter::new(
            conn,
            &opts.table,
            written,
            "<generate>".into(),
            opts.rows_per_statement,
        )?;
        summary.rows_per_statement = sink.rows_per_statement();
        summary.rows = pipeline::run(
            &mut src,
            &mut sink,
            CHUNK_ROWS as usize,
            progress,
            &rejects,
            summary,
        )?;
        Ok(())
    };
    run::through_sqlite(
        db,
        opts.durability,
        opts.file,
        progress,
        start,
        summary,
        load,
    )
}

/// Refuses to add rows to an existing table `actual` (with columns `have`) unless the
/// spec's columns `names` are the same, in the same order.
pub(crate) fn check_same_columns(actual: &str, have: &[String], names: &[String]) -> Result<()> {
    let same = have.len() == names.len()
        && have
            .iter()
            .zip(names)
            .all(|(a, b)| a.eq_ignore_ascii_case(b));
    if same {
        return Ok(());
    }
    Err(Error::schema(format!(
        "table {} exists with columns ({}), but the spec has ({})",
        quote_ident(actual),
        have.join(", "),
        names.join(", ")
    ))
    .with_hint(Hint::OtherTable))
}

/// `generate` through the direct page writer: a new file, rows in rowid order.
fn generate_direct(
    db: &Path,
    opts: &GenerateOptions,
    progress: &Progress,
    mut summary: Summary,
    start: Instant,
) -> Result<Summary> {
    if !matches!(opts.durability, None | Some(Durability::AtomicNew)) {
        return Err(Error::usage(
            "the direct engine writes a new file (durability atomic-new), not another profile",
        )
        .with_hint(Hint::SqliteEngine));
    }
    let defs: Vec<String> = opts.columns.iter().map(|c| c.definition()).collect();
    let sql = crate::table::create_table_sql(&opts.table, &defs);
    let page_size = opts
        .file
        .page_size
        .unwrap_or(direct_engine::DEFAULT_PAGE_SIZE);
    let (rows, notes) = direct_engine::build_new(
        db,
        page_size,
        &opts.table,
        &sql,
        opts.verify,
        progress,
        |t| {
            let fill = leaves::Fill {
                columns: &opts.columns,
                seed: opts.seed,
                rows: opts.rows,
                page_size: page_size as usize,
            };
            leaves::fill_table(&fill, opts.threads, t, progress)
        },
        |_, _| Ok(vec![]),
    )?;
    summary.rows = rows;
    Ok(run::finish_direct(summary, db, opts.verify, notes, start))
}
