//! `import`: inputs → typed batches (one parser thread) → SQLite (the calling thread).
//!
//! Order of work for each input: sample the first records, decide column names and
//! types, create or check the table (before any row is written, so a planning error
//! leaves the database untouched), then stream. Indexes are built after every row is in,
//! then the single transaction commits (see [`crate::durability`] for what that means on
//! disk for each profile).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::Connection;

use crate::append;
use crate::direct::{self as direct_engine, DirectSink, Engine, IndexEntries, SortedEntries};
use crate::durability::{Durability, FileSettings};
use crate::error::{Error, Hint, Result};
use crate::pipeline::{self, Rejects};
use crate::run;
use crate::schema::quote_ident;
use crate::sink::{sqlite::DEFAULT_ROWS_PER_STATEMENT, NullSink, SqliteSink};
use crate::source::input::{default_table_name, Encoding};
use crate::source::locale::LocaleHint;
use crate::source::sniff::{self, Dialect, Given};
use crate::source::{open_source, Format, Input, ReadOptions, Source};
use crate::summary::{self, Durable, Progress, Sniffed, Stage, Summary, Writer};
use crate::table::{self, IfExists, IndexSpec};
use crate::types::ColumnType;

/// How quoting works for delimited input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quoting {
    /// `"` for CSV; off for TSV.
    #[default]
    Default,
    /// This byte quotes.
    Char(u8),
    /// No quoting: every byte is data.
    Off,
}

/// Everything `import` needs to know besides the database and the inputs.
///
/// New options may be added in any release, so the struct is `#[non_exhaustive]`: start
/// from [`Default`] and set fields, and adding an option never breaks the caller.
///
/// ```
/// let mut opts = liteload::ImportOptions::default();
/// opts.table = Some("people".into());
/// opts.max_errors = Some(10);
/// ```
///
/// A struct literal does not compile outside this crate:
///
/// ```compile_fail
/// let opts = liteload::ImportOptions { alter: true, ..Default::default() };
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Read options; `format`, `delimiter` and `quote` there are overridden per input.
    pub read: ReadOptions,
    /// The format of every input; `None` means "from each file's extension".
    pub format: Option<Format>,
    /// The field delimiter of every delimited input; `None`: `,` for CSV, tab for TSV.
    pub delimiter: Option<u8>,
    /// The quote of delimited inputs.
    pub quoting: Quoting,
    /// The table for every input; `None` means "each file's stem".
    pub table: Option<String>,
    /// Add columns that the table lacks instead of failing.
    pub alter: bool,
    /// Infer INTEGER/REAL/TEXT from the sample; `false` makes every column TEXT.
    pub detect_types: bool,
    /// Types that override the inferred ones, by column name.
    pub types: Vec<(String, ColumnType)>,
    /// Primary key columns of a created table.
    pub pk: Vec<String>,
    /// Indexes built after the load.
    pub indexes: Vec<IndexSpec>,
    /// `None` picks `atomic-new` for a new file and `balanced` for an existing one.
    pub durability: Option<Durability>,
    /// Page size and the like, for a new file.
    pub file: FileSettings,
    /// Keep going past bad records, writing each (as JSON) to this file.
    pub rejects: Option<PathBuf>,
    /// Keep going past up to this many bad records.
    pub max_errors: Option<u64>,
    /// Parse and convert everything, write nothing.
    pub parse_only: bool,
    /// Rows per batch handed from the parser to the writer.
    pub batch_rows: usize,
    /// The cap on rows per INSERT statement.
    pub rows_per_statement: usize,
    /// SQLite's insert path, the direct page writer (one input, or typed inputs of one
    /// schema, into a new file), or `Auto` (the default): the page writer where it
    /// surely applies.
    pub engine: Engine,
    /// Direct engine: SQLite checks the file (`integrity_check`) before it is put in place.
    pub verify: bool,
    /// Direct engine: index entries are gathered and sorted in memory up to this many
    /// bytes (all indexes together, the sort's own room counted); beyond it they go to
    /// sorted runs in temporary files in the database's directory, merged when the
    /// indexes are written.
    pub index_memory: usize,
    /// What to do when the table exists already (and liteload did not create it in this
    /// load).
    pub if_exists: IfExists,
    /// Tell from each input's first bytes what the options leave open
    /// ([`crate::source::sniff`]): the format when the name does not give it (`.txt`,
    /// `.dat`, no name, stdin), the delimiter and quote of CSV when `delimiter` and
    /// `quoting` are left at their defaults, UTF-16 by its byte-order mark when the
    /// encoding is left at UTF-8. Each choice is in the summary. Compression is told by
    /// its magic bytes whatever this says.
    pub sniff: bool,
    /// With `sniff`: whether the first record of delimited text is a header is sniffed
    /// too (it is data only when it holds numbers or dates where the other records do);
    /// `false` keeps `read.header`.
    pub sniff_header: bool,
    /// With `sniff` and the encoding left at UTF-8: input whose sample is not UTF-8 is
    /// read as Windows-1252 (a superset of Latin-1, which decodes any byte), and the
    /// summary says it was a guess. Without it such input is an error that asks for
    /// the encoding.
    pub guess_encoding: bool,
}

/// Builder methods, one per common option, each returning the options: start from
/// [`Default`] and chain them.
///
/// ```
/// use liteload::{ColumnType, Durability, Engine, Format, IfExists, ImportOptions};
/// let opts = ImportOptions::default()
///     .format(Format::Csv)
///     .delimiter(b';')
///     .table("people")
///     .column_type("zip", ColumnType::Text)
///     .primary_key(["id"])
///     .index(["city"], false)
///     .max_errors(10)
///     .if_exists(IfExists::Replace)
///     .durability(Durability::Durable)
///     .engine(Engine::Sqlite);
/// assert_eq!(opts.table.as_deref(), Some("people"));
/// assert_eq!(opts.read.header, true);
/// ```
impl ImportOptions {
    /// The format of every input (else each file's extension, or sniffing, says).
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// The field delimiter of delimited inputs.
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = Some(delimiter);
        self
    }

    /// The quote of delimited inputs.
    pub fn quoting(mut self, quoting: Quoting) -> Self {
        self.quoting = quoting;
        self
    }

    /// Whether the first record of delimited input names the columns (it does by default).
    pub fn header(mut self, header: bool) -> Self {
        self.read.header = header;
        self.sniff_header = false;
        self
    }

    /// The table for every input (else each file's stem).
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = Some(table.into());
        self
    }

    /// Add columns an existing table lacks instead of refusing the load.
    pub fn alter(mut self, alter: bool) -> Self {
        self.alter = alter;
        self
    }

    /// The type of column `name`, over the inferred one.
    pub fn column_type(mut self, name: impl Into<String>, ty: ColumnType) -> Self {
        self.types.push((name.into(), ty));
        self
    }

    /// The primary key of a table the load creates.
    pub fn primary_key<I: IntoIterator<Item = S>, S: Into<String>>(mut self, columns: I) -> Self {
        self.pk = columns.into_iter().map(Into::into).collect();
        self
    }

    /// An index built after the rows, on `columns` in order; `unique` refuses a key
    /// seen twice.
    pub fn index<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        columns: I,
        unique: bool,
    ) -> Self {
        self.indexes.push(IndexSpec {
            columns: columns.into_iter().map(Into::into).collect(),
            unique,
        });
        self
    }

    /// The durability profile (else `atomic-new` for a new file, `balanced` for one
    /// that exists).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = Some(durability);
        self
    }

    /// Keep going past bad records, writing each (as JSON) to `path`.
    pub fn rejects(mut self, path: impl Into<PathBuf>) -> Self {
        self.rejects = Some(path.into());
        self
    }

    /// Keep going past up to `n` bad records.
    pub fn max_errors(mut self, n: u64) -> Self {
        self.max_errors = Some(n);
        self
    }

    /// What to do with a table that exists before the load.
    pub fn if_exists(mut self, if_exists: IfExists) -> Self {
        self.if_exists = if_exists;
        self
    }

    /// The writer ([`Engine::Auto`] by default).
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = engine;
        self
    }

    /// Tell what the options leave open from each input's first bytes (on by default).
    pub fn sniff(mut self, sniff: bool) -> Self {
        self.sniff = sniff;
        self
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            read: ReadOptions::default(),
            format: None,
            delimiter: None,
            quoting: Quoting::Default,
            table: None,
            alter: false,
            detect_types: true,
            types: vec![],
            pk: vec![],
            indexes: vec![],
            durability: None,
            file: FileSettings::default(),
            rejects: None,
            max_errors: None,
            parse_only: false,
            batch_rows: 8192,
            rows_per_statement: DEFAULT_ROWS_PER_STATEMENT,
            engine: Engine::Auto,
            verify: false,
            index_memory: 1 << 30,
            if_exists: IfExists::Append,
            sniff: true,
            sniff_header: true,
            guess_encoding: false,
        }
    }
}

/// How one input's columns land in the table.
pub(crate) struct TablePlan {
    pub(crate) table: String,
    pub(crate) columns: Vec<String>,
    pub(crate) types: Vec<ColumnType>,
    /// Whether columns may be added to it as the input goes (created in this run, or --alter).
    may_alter: bool,
}

/// Loads `inputs` into the database at `db`. On error the database is as it was before
/// the call (see [`crate::durability`]); a rejects file may hold what was skipped.
/// `progress` is read from other threads while the load runs ([`Progress`]); pass
/// `&Progress::default()` when nothing watches.
pub fn import(
    db: impl AsRef<Path>,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let db = db.as_ref();
    if let Some(r) = &opts.rejects {
        crate::source::input::refuse_overwriting(r, inputs, Some(db))?;
    }
    inputs.iter().for_each(|i| i.watch(&progress.cancel_flag()));
    let mut summary = import_with(db, inputs, opts, progress)
        .map_err(|e| cause_hint(e, inputs, opts).in_file(db))?;
    summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
    Ok(summary)
}

/// Loads `inputs` through `conn`, a connection the program already holds, with SQLite's
/// insert path: inside the caller's transaction if one is open (the caller then commits
/// or rolls back, and after a rollback nothing of the load remains), else in a
/// transaction of its own that commits on success. On error nothing the load did
/// remains, and the caller's transaction goes on. The connection's settings are the
/// caller's: `durability`, `file` and the engine of `opts` do not apply (the page writer
/// only builds new files).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use liteload::{import_into_connection, ImportOptions, Input, Progress};
/// let dir = tempfile::tempdir()?;
/// let csv = dir.path().join("people.csv");
/// std::fs::write(&csv, "name,age\nAda,36\nAlan,41\n")?;
/// let mut conn = rusqlite::Connection::open(dir.path().join("app.db"))?;
/// let input = [Input::Path(csv)];
/// let (opts, progress) = (ImportOptions::default(), Progress::default());
///
/// let tx = conn.transaction()?;
/// import_into_connection(&tx, &input, &opts, &progress)?;
/// tx.rollback()?; // nothing of the load remains
/// let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
/// assert_eq!(tables, 0);
///
/// let tx = conn.transaction()?;
/// let summary = import_into_connection(&tx, &input, &opts, &progress)?;
/// tx.commit()?;
/// assert_eq!(summary.rows, 2);
/// let age: i64 = conn.query_row("SELECT age FROM people WHERE name = 'Ada'", [], |r| r.get(0))?;
/// assert_eq!(age, 36);
/// # Ok(()) }
/// ```
pub fn import_into_connection(
    conn: &Connection,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    validate_options(opts, inputs)?;
    if opts.parse_only {
        return Err(Error::usage(
            "a load into a connection writes rows; parsing alone needs no connection",
        ));
    }
    if let Some(r) = &opts.rejects {
        crate::source::input::refuse_overwriting(r, inputs, conn.path().map(Path::new))?;
    }
    inputs.iter().for_each(|i| i.watch(&progress.cancel_flag()));
    // A savepoint: nested in the caller's transaction, or a transaction of its own.
    conn.execute_batch("SAVEPOINT liteload_import")
        .map_err(|e| Error::sqlite("beginning the load", e))?;
    match import_into(Some(conn), inputs, opts, progress)
        .and_then(|s| progress.check().map(|()| s))
        .map_err(|e| cause_hint(e, inputs, opts))
    {
        Ok(mut summary) => {
            conn.execute_batch("RELEASE liteload_import")
                .map_err(|e| Error::sqlite("ending the load", e))?;
            summary.engine = Some(Writer::Sqlite);
            summary.durability = Durable::Callers;
            summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
            summary::finish(&mut summary, start);
            Ok(summary)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO liteload_import; RELEASE liteload_import");
            Err(e)
        }
    }
}

fn import_with(
    db: &Path,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    let total: Option<u64> = inputs.iter().map(|i| i.size()).sum();
    progress
        .bytes_total
        .store(total.unwrap_or(0), Ordering::Relaxed);
    validate_options(opts, inputs)?;
    if opts.parse_only {
        let mut summary = import_into(None, inputs, opts, progress)?;
        summary.durability = Durable::NotWritten;
        summary::finish(&mut summary, start);
        return Ok(summary);
    }
    if run::direct(opts.engine, db, opts.durability, || {
        direct_fits(inputs, opts)
    }) {
        return import_direct(db, inputs, opts, progress, start);
    }
    if opts.engine == Engine::Auto && db.exists() && direct_fits(inputs, opts) {
        if let Some(summary) = import_append(db, inputs, opts, progress, start)? {
            return Ok(summary);
        }
    }
    run::through_sqlite(
        db,
        opts.durability,
        opts.file,
        progress,
        start,
        Summary::default(),
        |conn, summary| {
            *summary = import_into(Some(conn), inputs, opts, progress)?;
            Ok(())
        },
    )
}

/// `import` through the direct page writer: one input into a new file, the table
/// created from the sample's columns and types, rows written page by page, then its
/// indexes. Anything the page writer cannot do (a second input, an existing file that
/// the transfer cannot take, --pk, --alter, a column that appears after the sample) is
/// refused with a pointer to `--engine sqlite`.
fn import_direct(
    db: &Path,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    let groups = input_groups(inputs, opts);
    if let Some(why) = direct_refusal(&groups, opts) {
        return Err(Error::usage(format!("the direct engine {why}")).with_hint(Hint::SqliteEngine));
    }
    if db.exists() && opts.durability != Some(Durability::AtomicNew) {
        return match import_append(db, inputs, opts, progress, start)? {
            Some(summary) => Ok(summary),
            None => Err(Error::schema(format!(
                "{}: the direct engine appends to a new table, or to one without \
                 constraint or trigger (and without rows if it has indexes) whose columns \
                 the input has in order (NDJSON and JSON: to a new table only); this one \
                 is not",
                db.display()
            ))
            .with_hint(Hint::SqliteEngine)),
        };
    }
    // Before anything is read or a rejects file made.
    direct_engine::refuse_existing(db)?;
    if !matches!(opts.durability, None | Some(Durability::AtomicNew)) {
        return Err(
            Error::usage("the direct engine writes a new file with durability atomic-new")
                .with_hint(Hint::SqliteEngine),
        );
    }
    let mut summary = Summary::default();
    let opened = open_input(groups[0], opts, progress, &mut summary)?;
    let (name, types) = (opened.table.clone(), opened.types.clone());
    let written = write_direct(
        DirectOut::New(db),
        opened,
        &name,
        types,
        opts,
        progress,
        &mut summary,
    )?;
    Ok(run::finish_direct(
        summary,
        db,
        opts.verify,
        written.notes,
        start,
    ))
}

/// Why the page writer cannot take these inputs with these options (`None`: it can).
fn direct_refusal(groups: &[&[Input]], opts: &ImportOptions) -> Option<&'static str> {
    if groups.len() != 1 {
        return Some("loads one input (or typed inputs of one schema) into one table");
    }
    if !opts.pk.is_empty() {
        return Some("cannot order rows by a primary key");
    }
    if opts.alter {
        return Some("writes a new table, to which no column is added");
    }
    None
}

/// `import` of one input into an existing database through the page writer: the rows
/// go to a side file, which SQLite's transfer optimization copies into the table (see
/// [`crate::append`]). `None`, before the input is read (or, for an existing table, read
/// again from the start), when that cannot apply: the caller takes SQLite's path.
fn import_append(
    db: &Path,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Option<Summary>> {
    let groups = input_groups(inputs, opts);
    if direct_refusal(&groups, opts).is_some() {
        return Ok(None);
    }
    let durability = match opts.durability {
        None => Durability::Balanced,
        Some(Durability::AtomicNew) => return Ok(None),
        Some(d) => d,
    };
    let input = &groups[0][0];
    let Some(table_name) = opts.table.clone().or_else(|| default_table_name(input)) else {
        return Ok(None);
    };
    let target = append::Target::open(db, durability)?;
    let abort = |target: append::Target, e: Error| {
        target.abort();
        Err(e)
    };
    let dest = match target.destination(&table_name, opts.if_exists) {
        Ok(d) => d,
        Err(e) => return abort(target, e),
    };
    let existing = match dest {
        None => {
            target.abort();
            return Ok(None);
        }
        Some(append::Destination::New) => None,
        Some(append::Destination::Replace { name }) => {
            // Dropped in this transaction, before anything is read: if the load fails,
            // the old table is still there.
            if let Err(e) = target.run(&format!("DROP TABLE {}", quote_ident(&name))) {
                return abort(
                    target,
                    Error::sqlite(format!("dropping {}", quote_ident(&name)), e),
                );
            }
            None
        }
        // Only an input that can be read again may be sampled here and handed back.
        // JSON may name a column after the sample, which such a table does not have.
        Some(append::Destination::Plain { .. })
            if !matches!(input, Input::Path(_) | Input::Bytes { .. })
                || !opts.types.is_empty()
                || read_options_for(input, opts)
                    .is_ok_and(|ro| matches!(ro.format, Format::Json | Format::Ndjson)) =>
        {
            target.abort();
            return Ok(None);
        }
        Some(append::Destination::Plain {
            name,
            columns,
            indexes,
        }) => Some((name, columns, indexes)),
    };
    let mut summary = Summary::default();
    let opened = match open_input(groups[0], opts, progress, &mut summary) {
        Ok(o) => o,
        Err(e) => return abort(target, e),
    };
    let (name, types) = match &existing {
        None => (opened.table.clone(), opened.types.clone()),
        Some((name, columns, _)) => {
            let same = columns.len() == opened.columns.len()
                && columns
                    .iter()
                    .zip(&opened.columns)
                    .all(|((c, _), i)| c.eq_ignore_ascii_case(i));
            if !same {
                target.abort();
                return Ok(None);
            }
            (name.clone(), columns.iter().map(|(_, t)| *t).collect())
        }
    };
    let side = append::side_path(db);
    // A side file a killed append left (this run holds the database's write lock, so no
    // other append to it is building one).
    let mut notes = match crate::durability::clear_stale(&side) {
        Ok(n) => n.into_iter().collect::<Vec<_>>(),
        Err(e) => return abort(target, e),
    };
    // The side file holds the indexes asked for, and those of an existing (then empty)
    // table: SQLite copies entries only into indexes the source has too.
    let held: Vec<Vec<String>> = existing
        .as_ref()
        .map(|(_, _, indexes)| indexes.clone())
        .unwrap_or_default();
    let mut side_opts = opts.clone();
    for columns in &held {
        // One side index per key (its name comes from the key): a key indexed twice,
        // or also asked for, is one index there, which each index here copies from.
        let same = |ix: &IndexSpec| {
            ix.columns.len() == columns.len()
                && ix
                    .columns
                    .iter()
                    .zip(columns)
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
        };
        if !side_opts.indexes.iter().any(same) {
            side_opts.indexes.push(IndexSpec {
                columns: columns.clone(),
                unique: false,
            });
        }
    }
    let moved = (|| -> Result<append::Moved> {
        let written = write_direct(
            DirectOut::Side(&side, target.page_size()?),
            opened,
            &name,
            types,
            &side_opts,
            progress,
            &mut summary,
        )?;
        progress.check()?;
        progress.set_stage(Stage::Committing);
        let index_sql: Vec<String> = opts.indexes.iter().map(|ix| ix.sql(&name)).collect();
        let create = existing.is_none().then_some(written.create.as_str());
        let moved = if existing.is_some() && held.is_empty() {
            // An existing table without index may hold rows: SQLite copies into it only
            // while it has no index, so the indexes come after the rows, as on SQLite's
            // path.
            let moved = target.transfer(&side, &name, None, &[])?;
            for (ix, sql) in opts.indexes.iter().zip(&index_sql) {
                progress.check()?;
                target.run(sql).map_err(|e| ix.build_error(&name, e))?;
            }
            moved
        } else {
            // A new table, or an empty one with indexes: every index first, then the
            // rows and their entries copied.
            if existing.is_some() {
                for (ix, sql) in opts.indexes.iter().zip(&index_sql) {
                    target.run(sql).map_err(|e| ix.build_error(&name, e))?;
                }
            }
            target.transfer(&side, &name, create, &index_sql)?
        };
        progress.check()?;
        Ok(moved)
    })();
    let moved = match moved {
        Ok(m) => m,
        Err(e) => {
            target.abort();
            let _ = std::fs::remove_file(&side);
            return Err(e);
        }
    };
    let durability = target.durability();
    let committed = target.commit();
    let _ = std::fs::remove_file(&side);
    notes.extend(committed?);
    notes.push(if moved.copies_records {
        format!(
            "appended through a side file: SQLite copied its {} records into {} without decoding them",
            moved.rows,
            quote_ident(&name)
        )
    } else {
        format!(
            "appended through a side file, but SQLite decoded its {} rows (its transfer \
             optimization did not apply to {})",
            moved.rows,
            quote_ident(&name)
        )
    });
    summary.rows = moved.rows;
    summary.rows_per_statement = 0;
    summary.durability = Durable::Profile(durability);
    summary.engine = Some(Writer::Direct);
    summary.verified = opts.verify;
    summary.notes.extend(notes);
    summary.db_bytes = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    summary::finish(&mut summary, start);
    Ok(Some(summary))
}

/// Where the page writer's file goes.
enum DirectOut<'a> {
    /// A new database at this path, built beside it and moved into place.
    New(&'a Path),
    /// An append's side file at this path, with pages of this size, left there for
    /// the transfer.
    Side(&'a Path, u32),
}

/// What [`write_direct`] wrote.
struct Written {
    /// Notes of the page writer (a stale temp file removed, …).
    notes: Vec<String>,
    /// The table's CREATE TABLE.
    create: String,
}

/// Writes the rows of `opened` (with these column `types`) to table `name` of a file
/// the page writer builds, with the indexes of `opts`; fills in `summary` (rows, table,
/// rejects).
fn write_direct(
    out: DirectOut<'_>,
    opened: Opened,
    name: &str,
    types: Vec<ColumnType>,
    opts: &ImportOptions,
    progress: &Progress,
    summary: &mut Summary,
) -> Result<Written> {
    summary.rows_per_statement = 0;
    let rejects = Mutex::new(Rejects::new(opts.rejects.as_deref(), opts.max_errors)?);
    let grows = matches!(opened.format, Format::Json | Format::Ndjson);
    let Opened {
        mut src, columns, ..
    } = opened;
    if columns.is_empty() {
        return Err(Error::usage(format!(
            "no columns for the new table {}: the input has no records to name them",
            quote_ident(name)
        )));
    }
    for ix in &opts.indexes {
        for c in &ix.columns {
            if !columns.iter().any(|k| k.eq_ignore_ascii_case(c)) {
                return Err(Error::usage(format!(
                    "index column {c:?}: table {} has no such column (columns: {})",
                    quote_ident(name),
                    columns.join(", ")
                )));
            }
        }
    }
    let cols: Vec<(String, ColumnType)> =
        columns.iter().cloned().zip(types.iter().copied()).collect();
    crate::schema::check_new_table(name, columns.iter().map(String::as_str))?;
    let create = table::create_sql(name, &cols, &[]);
    let position = |c: &String| {
        columns
            .iter()
            .position(|k| k.eq_ignore_ascii_case(c))
            .expect("index columns were checked")
    };
    let gather: Vec<IndexEntries> = opts
        .indexes
        .iter()
        .map(|ix| IndexEntries::new(ix.columns.iter().map(position).collect()))
        .collect();
    src.set_types(types.clone());
    // The parser encodes the records on its threads instead of the writer (10M-row TSV:
    // see bench/README.md); index keys are read back from them.
    src.make_records();
    let page_size = match out {
        DirectOut::Side(_, page_size) => page_size,
        DirectOut::New(_) => opts
            .file
            .page_size
            .unwrap_or(direct_engine::DEFAULT_PAGE_SIZE),
    };
    let layout: Vec<Option<usize>> = (0..columns.len()).map(Some).collect();
    // Index entries past `index_memory` go to sorted runs beside the database.
    let file = match out {
        DirectOut::New(p) | DirectOut::Side(p, _) => p,
    };
    let spill_dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let table_name = name.to_string();
    let fill = |t: &mut liteload_btree::TableWriter<'_, liteload_btree::SeqFile>| {
        let mut sink = DirectSink::new(t, 1, layout).with_indexes(
            gather,
            opts.index_memory,
            Some(spill_dir.clone()),
        );
        if grows {
            sink = sink.growing(name, cols.clone());
        }
        let rows = pipeline::run(
            src.as_mut(),
            &mut sink,
            opts.batch_rows,
            progress,
            &rejects,
            &mut |_| {
                if grows {
                    Ok(())
                } else {
                    Err(Error::usage(
                        "a column appeared after the sample; the direct engine writes the columns it saw first",
                    )
                    .with_hint(Hint::SqliteEngine))
                }
            },
            summary,
        )?;
        let final_columns = sink.columns().map_or_else(|| cols.clone(), <[_]>::to_vec);
        Ok((rows, sink.into_indexes(), final_columns))
    };
    type Built = (u64, Vec<IndexEntries>, Vec<(String, ColumnType)>);
    let indexes = |w: &mut liteload_btree::DbWriter<liteload_btree::SeqFile>,
                   (_, gathered, _): &mut Built| {
        progress.set_stage(Stage::Indexing);
        let mut by_sqlite = vec![];
        for (ix, mut entries) in opts.indexes.iter().zip(std::mem::take(gathered)) {
            progress.check()?;
            let (name, sql) = (ix.name(&table_name), ix.stored_sql(&table_name));
            let unique_error = || {
                Error::constraint(
                    Some(crate::error::UNIQUE),
                    None,
                    format!(
                    "the index on {} ({}): two rows have the same key (UNIQUE constraint failed)",
                    quote_ident(&table_name),
                    ix.columns.join(", ")
                ),
                )
            };
            if entries.spilled() {
                // Runs on disk, merged into the page writer one entry at a time.
                let keys = ix.columns.len();
                let mut b = w.index_builder(&name, &table_name, &sql);
                let mut last: Option<Vec<u8>> = None;
                let mut merged = 0u64;
                entries.merge(&spill_dir, |rec| {
                    merged += 1;
                    if merged.is_multiple_of(1 << 20) {
                        // A long merge stays cancellable.
                        progress.check()?;
                    }
                    if ix.unique {
                        if last
                            .as_deref()
                            .is_some_and(|l| liteload_btree::index::same_key(l, rec, keys))
                        {
                            return Err(unique_error());
                        }
                        last = Some(rec.to_vec());
                    }
                    b.push(rec)
                        .map_err(|e| Error::internal(format!("writing the index: {e}")))
                })?;
                b.finish()
                    .map_err(|e| Error::internal(format!("writing the index: {e}")))?;
                continue;
            }
            let sorted = match entries.sorted() {
                Some(sorted) => sorted,
                None => {
                    by_sqlite.push(ix.sql(&table_name));
                    continue;
                }
            };
            if ix.unique && sorted.has_equal_keys(ix.columns.len()) {
                return Err(unique_error());
            }
            match &sorted {
                SortedEntries::IntPairs(pairs) => {
                    w.index_int_pairs(&name, &table_name, &sql, pairs)
                }
                SortedEntries::Records(records) => w.index(&name, &table_name, &sql, records),
            }
            .map_err(|e| Error::internal(format!("writing the index: {e}")))?;
        }
        Ok(by_sqlite)
    };
    // A new file is built beside its name and moved into place; a side file stays.
    let (path, notes) = match out {
        DirectOut::New(db) => {
            direct_engine::refuse_existing(db)?;
            let (tmp, note) = crate::durability::new_file_temp(db)?;
            (tmp, note.into_iter().collect())
        }
        DirectOut::Side(side, _) => (side.to_path_buf(), vec![]),
    };
    let buffered = matches!(out, DirectOut::Side(..));
    let (rows, _, final_columns) = direct_engine::build_at(
        &path,
        buffered,
        page_size,
        name,
        &create,
        opts.verify,
        progress,
        fill,
        indexes,
    )?;
    if let DirectOut::New(db) = out {
        crate::durability::publish(&path, db)?;
    }
    let (count, samples) = rejects
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish()?;
    summary.rows = rows;
    summary.tables = vec![name.to_string()];
    summary.rejects = count;
    summary.reject_samples = samples;
    // The table's text, with the columns it gained (the page writer stored the same).
    let create = if final_columns.len() == cols.len() {
        create
    } else {
        table::create_sql(name, &final_columns, &[])
    };
    Ok(Written { notes, create })
}

pub(crate) fn validate_options(opts: &ImportOptions, inputs: &[Input]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::usage("no input files"));
    }
    if inputs.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        return Err(Error::usage("stdin (-) can be read only once"));
    }
    if let Some(ps) = opts.file.page_size {
        if !(512..=65536).contains(&ps) || !ps.is_power_of_two() {
            return Err(Error::usage(format!(
                "page size {ps}: expected a power of two from 512 to 65536"
            )));
        }
    }
    if let Some(t) = &opts.table {
        if t.is_empty() {
            return Err(Error::usage("the table name is empty"));
        }
    }
    // Two indexes on the same columns (SQLite ignores case in names) would get the same
    // name: one would be dropped, or the page writer would write a schema SQLite refuses.
    for (i, a) in opts.indexes.iter().enumerate() {
        let key = |ix: &IndexSpec| -> Vec<String> {
            ix.columns.iter().map(|c| c.to_ascii_lowercase()).collect()
        };
        if let Some(b) = opts.indexes[i + 1..].iter().find(|b| key(b) == key(a)) {
            return Err(Error::usage(format!(
                "two indexes on the same columns ({} and {}): ask for one",
                a.columns.join(", "),
                b.columns.join(", ")
            )));
        }
    }
    if opts.read.max_record_bytes == 0 {
        return Err(Error::usage(
            "the longest record allowed is 0 bytes: no record could be loaded",
        ));
    }
    Ok(())
}

/// Whether `Engine::Auto` may load `inputs` through the page writer (it also needs a
/// new file with the default durability, see [`run::direct`]).
fn direct_fits(inputs: &[Input], opts: &ImportOptions) -> bool {
    let [group] = input_groups(inputs, opts)[..] else {
        return false;
    };
    opts.pk.is_empty()
        && !opts.alter
        && (group[0].fixed_format() == Some(Format::Arrow)
            || read_options_for(&group[0], opts).is_ok_and(|ro| {
                matches!(
                    ro.format,
                    Format::Csv | Format::Tsv | Format::Ndjson | Format::Json
                ) || ro.format.is_typed()
            }))
}

/// The inputs as loads: typed inputs (Parquet, Arrow) all together when every input is
/// one of the same format (they must share a schema, and go to one table), else one
/// input each.
pub(crate) fn input_groups<'a>(inputs: &'a [Input], opts: &ImportOptions) -> Vec<&'a [Input]> {
    let typed = |i: &Input| {
        i.fixed_format()
            .or_else(|| read_options_for(i, opts).ok().map(|ro| ro.format))
            .filter(|f| f.is_typed())
    };
    let first = inputs.first().and_then(typed);
    if inputs.len() > 1 && first.is_some() && inputs.iter().all(|i| typed(i) == first) {
        vec![inputs]
    } else {
        inputs.chunks(1).collect()
    }
}

fn read_options_for(input: &Input, opts: &ImportOptions) -> Result<ReadOptions> {
    Ok(resolve(input, opts)?.0)
}

/// The read options of `input`, and what sniffing found when it ran, with whether it
/// changed anything the name and options alone would have given.
fn resolve(input: &Input, opts: &ImportOptions) -> Result<(ReadOptions, Option<(Dialect, bool)>)> {
    let fixed = input.fixed_format();
    let named = fixed
        .or(opts.format)
        .or_else(|| input.logical_path().and_then(|p| Format::from_path(&p)));
    let delimited = |f: Option<Format>| f.is_none_or(|f| matches!(f, Format::Csv | Format::Tsv));
    let open_question = named.is_none()
        || (named == Some(Format::Csv)
            && opts.delimiter.is_none()
            && opts.quoting == Quoting::Default)
        // Whether tab-separated fields are quoted is told from them, as for CSV.
        || (named == Some(Format::Tsv) && opts.quoting == Quoting::Default)
        || (opts.sniff_header && opts.read.header && opts.read.columns.is_none())
        || opts.guess_encoding;
    let mut dialect = if opts.sniff && fixed.is_none() && delimited(named) && open_question {
        let given = Given {
            format: named,
            delimiter: opts.delimiter,
            quote: match opts.quoting {
                Quoting::Default => None,
                Quoting::Char(c) => Some(Some(c)),
                Quoting::Off => Some(None),
            },
            encoding: opts.read.encoding,
        };
        sniff::sniff_input(input, given)?
    } else {
        None
    };
    let format = match (named, &dialect) {
        (Some(f), _) => f,
        (None, Some(d)) => d.format,
        (None, None) if input.logical_path().is_none() => Format::Csv,
        (None, None) => {
            return Err(Error::usage(format!(
                "{}: cannot tell the format from the file name",
                input.display_name()
            ))
            .with_hint(Hint::Format))
        }
    };
    let mut ro = options_for_format(input, format, opts)?;
    if let Some(d) = dialect.as_mut() {
        if opts.guess_encoding && ro.encoding == Encoding::Utf8 && !d.valid_text {
            d.encoding = Encoding::Latin1;
            d.encoding_guessed = true;
        }
    }
    if !ro.locale.is_empty() {
        if !matches!(format, Format::Csv | Format::Tsv) {
            return Err(Error::usage(format!(
                "{}: decimal commas and date formats apply to delimited text (CSV, TSV), not to {format:?}",
                input.display_name()
            )));
        }
        ro.locale.rewrite()?;
    }
    let before = ro.clone();
    if let Some(d) = &dialect {
        if matches!(format, Format::Csv | Format::Tsv) {
            if format == Format::Csv && opts.delimiter.is_none() {
                ro.delimiter = d.delimiter;
            }
            // One rule for CSV and TSV: fields that start and end with a quote are quoted.
            if opts.quoting == Quoting::Default {
                ro.quote = d.quote;
            }
            if opts.sniff_header && opts.read.columns.is_none() && opts.read.header {
                ro.header = d.header;
            }
        }
        if ro.encoding == Encoding::Utf8 && d.encoding != Encoding::Utf8 {
            // UTF-16 by its byte-order mark, or Windows-1252 guessed when asked to.
            ro.encoding = d.encoding;
        }
    }
    // What is reported is what is used: a delimiter, quote or header given by the
    // caller stands in the dialect over what sniffing found.
    if let Some(d) = dialect.as_mut() {
        if matches!(format, Format::Csv | Format::Tsv) {
            d.delimiter = ro.delimiter;
            d.quote = ro.quote;
            d.header = ro.header;
        }
        d.encoding = ro.encoding;
    }
    let changed = named.is_none()
        || ro.delimiter != before.delimiter
        || ro.quote != before.quote
        || ro.header != before.header
        || ro.encoding != before.encoding;
    Ok((ro, dialect.map(|d| (d, changed))))
}

/// How a load with `opts` would read `input`: its read options, and what sniffing found
/// when it ran. Nothing is loaded; the first bytes of standard input or a reader, read
/// to sniff them, stay to be read.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use liteload::{read_plan, ImportOptions, Input};
/// let input = Input::bytes("export.txt", &b"name;price\nApfel;1,5\n"[..]);
/// let (read, sniffed) = read_plan(&input, &ImportOptions::default())?;
/// assert_eq!(read.delimiter, b';');
/// assert!(sniffed.is_some_and(|s| s.described.starts_with("';'-separated")));
/// # Ok(()) }
/// ```
pub fn read_plan(input: &Input, opts: &ImportOptions) -> Result<(ReadOptions, Option<Sniffed>)> {
    let (ro, dialect) = resolve(input, opts)?;
    Ok((
        ro,
        dialect.map(|(d, changed)| Sniffed {
            input: input.display_name(),
            described: d.describe(),
            changed,
            dialect: d,
        }),
    ))
}

/// A record of another width than the header's: if another delimiter makes every
/// sampled record of that input the same width, the hint names it (the cause), not the
/// ways to accept ragged rows.
pub(crate) fn cause_hint(e: Error, inputs: &[Input], opts: &ImportOptions) -> Error {
    if e.hint() != Some(Hint::Ragged) {
        return e;
    }
    let Some(input) = e
        .position()
        .and_then(|p| inputs.iter().find(|i| i.display_name() == *p.path))
    else {
        return e;
    };
    // Standard input is not read again for a hint (a producer may still be writing):
    // only bytes peeked before the load are looked at.
    if matches!(input, Input::Stdin) && !crate::source::input::stdin_peeked() {
        return e;
    }
    let Ok((used, _)) = resolve(input, opts) else {
        return e;
    };
    let given = Given {
        format: Some(Format::Csv),
        delimiter: None,
        quote: None,
        encoding: used.encoding,
    };
    match sniff::sniff_input(input, given) {
        Ok(Some(d)) if d.delimiter_found && d.delimiter != used.delimiter => {
            e.with_hint(Hint::Delimiter(d.delimiter))
        }
        _ => e,
    }
}

/// The read options of `input` read as `format`, before sniffing.
fn options_for_format(input: &Input, format: Format, opts: &ImportOptions) -> Result<ReadOptions> {
    if format == Format::Json && opts.read.skip_lines > 0 {
        return Err(Error::usage(format!(
            "{}: skipping lines applies to CSV, TSV and NDJSON, not to a JSON array",
            input.display_name()
        )));
    }
    let mut ro = opts.read.clone();
    ro.format = format;
    ro.delimiter = opts
        .delimiter
        .unwrap_or(if format == Format::Tsv { b'\t' } else { b',' });
    ro.quote = match opts.quoting {
        Quoting::Default if format == Format::Tsv => None,
        Quoting::Default => Some(b'"'),
        Quoting::Char(c) => Some(c),
        Quoting::Off => None,
    };
    if matches!(format, Format::Csv | Format::Tsv) {
        let shown = |b: u8| format!("{:?}", char::from(b));
        if matches!(ro.delimiter, b'\n' | b'\r') {
            return Err(Error::usage(format!(
                "the delimiter {} ends lines: records could not be told apart",
                shown(ro.delimiter)
            )));
        }
        if let Some(q) = ro.quote {
            if q == ro.delimiter || matches!(q, b'\n' | b'\r') {
                return Err(Error::usage(format!(
                    "the quote {} cannot be the delimiter or a line end",
                    shown(q)
                )));
            }
        }
    }
    Ok(ro)
}

fn import_into(
    conn: Option<&Connection>,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let mut summary = Summary {
        rows_per_statement: 1,
        ..Summary::default()
    };
    let rejects = Mutex::new(Rejects::new(opts.rejects.as_deref(), opts.max_errors)?);
    let mut created: HashSet<String> = HashSet::new();
    let mut loaded: Vec<(String, Vec<String>)> = vec![];
    for group in input_groups(inputs, opts) {
        let input = &group[0];
        let Opened {
            mut src,
            table,
            columns,
            types: inferred,
            ..
        } = open_input(group, opts, progress, &mut summary)?;
        let sample_columns = columns;
        let plan = match conn {
            Some(c) => plan_table(c, &table, &sample_columns, &inferred, opts, &mut created)?,
            None => TablePlan {
                table: table.clone(),
                columns: sample_columns.clone(),
                types: inferred.clone(),
                may_alter: true,
            },
        };
        src.set_types(plan.types.clone());
        let name: Arc<str> = input.display_name().into();
        let rows = match conn {
            Some(conn) => {
                let mut sink = SqliteSink::new(
                    conn,
                    &plan.table,
                    plan.columns.clone(),
                    name,
                    opts.rows_per_statement,
                )?;
                summary.rows_per_statement = sink.rows_per_statement();
                let plan_ref = &plan;
                pipeline::run(
                    src.as_mut(),
                    &mut sink,
                    opts.batch_rows,
                    progress,
                    &rejects,
                    &mut |cols| add_columns(conn, plan_ref, cols),
                    &mut summary,
                )?
            }
            None => pipeline::run(
                src.as_mut(),
                &mut NullSink::default(),
                opts.batch_rows,
                progress,
                &rejects,
                &mut |_| Ok(()),
                &mut summary,
            )?,
        };
        summary.rows += rows;
        if !summary.tables.contains(&plan.table) {
            summary.tables.push(plan.table.clone());
        }
        match loaded.iter_mut().find(|(t, _)| *t == plan.table) {
            Some((_, cols)) => cols.extend(plan.columns.iter().cloned()),
            None => loaded.push((plan.table.clone(), plan.columns.clone())),
        }
    }
    if let Some(conn) = conn {
        progress.set_stage(Stage::Indexing);
        for (table, _) in &loaded {
            for ix in &opts.indexes {
                progress.check()?;
                conn.execute_batch(&ix.sql(table))
                    .map_err(|e| ix.build_error(table, e))?;
            }
        }
    }
    let (count, samples) = rejects
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish()?;
    summary.rejects = count;
    summary.reject_samples = samples;
    Ok(summary)
}

/// An input opened and sampled: its source, the table it goes to, its columns and their
/// types (inferred, then overridden by `--type`).
pub(crate) struct Opened {
    pub(crate) src: Box<dyn Source>,
    pub(crate) table: String,
    pub(crate) columns: Vec<String>,
    pub(crate) types: Vec<ColumnType>,
    /// The input's format.
    pub(crate) format: Format,
}

pub(crate) fn open_input(
    group: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
    summary: &mut Summary,
) -> Result<Opened> {
    let input = &group[0];
    let (ro, sniffed) = read_plan(input, opts)?;
    summary.sniffed.extend(sniffed);
    let locale_hints = |sample: &crate::source::Sample| -> Vec<LocaleHint> {
        sample
            .locale
            .iter()
            .map(|(column, example, date_format)| LocaleHint {
                input: input.display_name(),
                column: column.clone(),
                example: example.clone(),
                date_format: date_format.clone(),
            })
            .collect()
    };
    let typed = ro.format.is_typed() || input.fixed_format() == Some(Format::Arrow);
    if typed && (!opts.types.is_empty() || !opts.detect_types) {
        return Err(Error::usage(format!(
            "{}: the column types come from the input's schema; they cannot be set or turned off",
            input.display_name()
        )));
    }
    let mut src = if typed {
        crate::source::open_typed(group.to_vec(), &ro, progress)?
    } else {
        open_source(input, &ro, progress)?
    };
    let sample = src.sample()?;
    summary.locale_hints.extend(locale_hints(&sample));
    summary.notes.extend(
        sample
            .notes
            .iter()
            .map(|n| format!("{}: {}", input.display_name(), n)),
    );
    let table = match (&opts.table, default_table_name(input)) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) => t,
        (None, None) => {
            return Err(Error::usage(format!(
                "{}: an input without a file name gives no table name",
                input.display_name()
            ))
            .with_hint(Hint::Table))
        }
    };
    if let Some(problem) = crate::schema::table_name_problem(&table) {
        return Err(Error::usage(format!(
            "{}: {problem}; name another table",
            input.display_name()
        )));
    }
    let mut inferred: Vec<ColumnType> = sample
        .guesses
        .iter()
        .map(|g| {
            if opts.detect_types {
                g.resolve()
            } else {
                ColumnType::Text
            }
        })
        .collect();
    inferred.resize(sample.columns.len(), ColumnType::Text);
    if let Some(declared) = &sample.types {
        inferred.clone_from(declared);
    }
    for (name, ty) in &opts.types {
        match sample
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
        {
            Some(i) => inferred[i] = *ty,
            None => {
                return Err(Error::usage(format!(
                    "a type is given for column {name:?}, but {} has no such column (columns: {})",
                    input.display_name(),
                    sample.columns.join(", ")
                )))
            }
        }
    }
    Ok(Opened {
        src,
        table,
        columns: sample.columns,
        types: inferred,
        format: ro.format,
    })
}

/// Creates the table, or checks (and with --alter widens) an existing one. Every
/// problem is found here, before any row is written.
pub(crate) fn plan_table(
    conn: &Connection,
    table: &str,
    columns: &[String],
    inferred: &[ColumnType],
    opts: &ImportOptions,
    created: &mut HashSet<String>,
) -> Result<TablePlan> {
    let exec = |sql: &str| {
        conn.execute_batch(sql)
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))
    };
    let check_names = |what: &str, names: &[String], have: &[String]| -> Result<()> {
        for n in names {
            if !have.iter().any(|c| c.eq_ignore_ascii_case(n)) {
                return Err(Error::usage(format!(
                    "{what} {n:?}: table {} has no such column (columns: {})",
                    quote_ident(table),
                    have.join(", ")
                )));
            }
        }
        Ok(())
    };
    match table::existing_columns(conn, table)? {
        None => {
            if columns.is_empty() {
                return Err(Error::usage(format!(
                    "no columns for the new table {}: the input has no records to name them",
                    quote_ident(table)
                )));
            }
            check_names("primary key column", &opts.pk, columns)?;
            for ix in &opts.indexes {
                check_names("index column", &ix.columns, columns)?;
            }
            let cols: Vec<(String, ColumnType)> = columns
                .iter()
                .cloned()
                .zip(inferred.iter().copied())
                .collect();
            crate::schema::check_new_table(table, columns.iter().map(String::as_str))?;
            exec(&table::create_sql(table, &cols, &opts.pk))?;
            created.insert(table.to_ascii_lowercase());
            Ok(TablePlan {
                table: table.to_string(),
                columns: columns.to_vec(),
                types: inferred.to_vec(),
                may_alter: true,
            })
        }
        Some((actual, _))
            if opts.if_exists != IfExists::Append
                && !created.contains(&actual.to_ascii_lowercase()) =>
        {
            if opts.if_exists == IfExists::Fail {
                return Err(Error::schema(format!(
                    "table {} exists already",
                    quote_ident(&actual)
                ))
                .with_hint(Hint::OtherTable));
            }
            exec(&format!("DROP TABLE {}", quote_ident(&actual)))?;
            plan_table(conn, table, columns, inferred, opts, created)
        }
        Some((actual, existing)) => {
            let ours = created.contains(&actual.to_ascii_lowercase());
            if !opts.pk.is_empty() && !ours {
                return Err(Error::schema(format!(
                    "a primary key applies when liteload creates the table, and {} exists already",
                    quote_ident(&actual)
                )));
            }
            let mut names = vec![];
            let mut types = vec![];
            let mut have: Vec<String> = existing.iter().map(|c| c.name.clone()).collect();
            for (i, col) in columns.iter().enumerate() {
                match existing.iter().find(|c| c.name.eq_ignore_ascii_case(col)) {
                    Some(c) => {
                        let ty = if opts.types.iter().any(|(n, _)| n.eq_ignore_ascii_case(col)) {
                            inferred[i]
                        } else {
                            ColumnType::from_declared(&c.declared).unwrap_or(inferred[i])
                        };
                        names.push(c.name.clone());
                        types.push(ty);
                    }
                    None if opts.alter || ours => {
                        exec(&table::add_column_sql(&actual, col, inferred[i]))?;
                        names.push(col.clone());
                        types.push(inferred[i]);
                        have.push(col.clone());
                    }
                    None => {
                        return Err(Error::schema(format!(
                            "table {} has no column {col:?} (it has: {})",
                            quote_ident(&actual),
                            have.join(", ")
                        ))
                        .with_hint(Hint::Alter))
                    }
                }
            }
            for ix in &opts.indexes {
                check_names("index column", &ix.columns, &have)?;
            }
            Ok(TablePlan {
                table: actual,
                columns: names,
                types,
                may_alter: opts.alter || ours,
            })
        }
    }
}

/// Adds columns that appeared in the input after the sample.
fn add_columns(conn: &Connection, plan: &TablePlan, cols: &[(String, ColumnType)]) -> Result<()> {
    let existing = table::existing_columns(conn, &plan.table)?
        .map(|(_, c)| c)
        .unwrap_or_default();
    let new = cols
        .iter()
        .filter(|(n, _)| !existing.iter().any(|c| c.name.eq_ignore_ascii_case(n)))
        .count();
    if existing.len() + new > crate::schema::MAX_COLUMNS {
        return Err(Error::schema(format!(
            "table {} would have {} columns, more than SQLite's limit of {}",
            quote_ident(&plan.table),
            existing.len() + new,
            crate::schema::MAX_COLUMNS
        )));
    }
    for (name, ty) in cols {
        if existing.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
            continue;
        }
        if !plan.may_alter {
            return Err(Error::schema(format!(
                "table {} has no column {name:?}, which the input has from some record on",
                quote_ident(&plan.table)
            ))
            .with_hint(Hint::Alter));
        }
        let sql = table::add_column_sql(&plan.table, name, *ty);
        conn.execute_batch(&sql)
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))?;
    }
    Ok(())
}
