//! The plan of a load ([`ImportPlan`]), made from the options and the inputs before any
//! writer is touched: per load (an input, or typed inputs of one schema) how it is read
//! and which table it goes to, and the one writer that takes them all ([`EngineRoute`]),
//! chosen in [`choose_engine`] for the library, the command and the Python package alike.
//!
//! The first load's inputs, and every input that can be read only once (standard input,
//! a reader, the program's rows), are opened and sampled here, so their columns and
//! types are in the plan: for a load of one input (the page writer's, the side file's)
//! everything is known before any writer is touched, and the side file is chosen only
//! for a table whose columns the sample has in order. The other files of a load of
//! many are sampled when their turn comes ([`Load::source`]), still before their table
//! is begun, so that one sample is held at a time: sampling them all here held them all
//! (40 files of 100k rows: 25 MB resident became 210 MB), and sampling them twice cost
//! 16-24% of such a load (bench/README.md). A problem found then rolls the load back
//! with everything else.

mod nested;
pub(crate) mod table;

use std::borrow::Cow;
use std::path::Path;

use crate::destination::{self, Destination};
use crate::durability::Durability;
use crate::error::{Error, Hint, Result};
use crate::options::{Engine, ImportOptions, Nested, Quoting};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::source::input::{default_table_name, Encoding};
use crate::source::locale::LocaleHint;
use crate::source::sniff::{self, Dialect, Given};
use crate::source::{open_source, Format, Input, ReadOptions, Source};
use crate::summary::Sniffed;
use crate::types::ColumnType;

/// Where the rows of a load go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest<'a> {
    /// A database file (it may not exist yet).
    File(&'a Path),
    /// A connection the program holds: SQLite's insert path, whatever the engine.
    Connection,
    /// An rqlite cluster's database, written by statements.
    #[cfg_attr(not(feature = "network"), allow(dead_code))]
    Cluster,
}

/// The engine a plan chose, and how it enters the target: the one word for the writer
/// choice is "engine" ([`Engine`] is what the options ask, [`crate::EngineUsed`] what
/// the summary reports; each engine writes through a sink, the direct one's being the
/// page writer's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EngineRoute {
    /// The page writer builds a new file beside its name and puts it in place.
    NewFile,
    /// The page writer builds a side file beside an existing database, which SQLite's
    /// transfer copies into the table, in one transaction of this profile (see
    /// [`crate::sink::target`]), chosen when [`destination::side_file_takes`] the table
    /// as the plan reads it; the writer holds the table to that rule again inside its
    /// transaction, and fails (nothing written) if another connection changed it since.
    SideFile(Durability),
    /// A new table in an existing database the page writer can extend (see
    /// `liteload_btree::Existing`: rollback journal mode, no auto-vacuum, UTF-8), or rows
    /// after the last of a table there without index that the side file would take: the
    /// pages go past the file's end and the schema (or the table's right edge) changes in
    /// place under a rollback journal in SQLite's format, synced (a committed load survives a power loss, as with
    /// `durable`, whatever profile was asked), under SQLite's EXCLUSIVE lock for the
    /// whole load; then the file is put in the profile's journal mode (WAL for
    /// `balanced` and `durable`), as every road leaves it. Chosen instead of the side
    /// file when the plan finds the file extensible and the table absent or so; the
    /// writer checks both again under its lock and fails (nothing written) if either
    /// changed.
    InPlace(Durability),
    /// An upsert (a conflict rule) into an existing table: the page writer builds a side
    /// file, merged into the table by one statement in key order in one transaction of
    /// this profile (see [`crate::sink::merge`]); as for the side file, the writer fails
    /// (nothing written) if the table changed since the plan.
    Merge(Durability),
    /// SQLite's insert path.
    Sqlite,
    /// Nothing is written: the rows are parsed and counted.
    Null,
}

/// How a table of a load of several tables (a copy of a database) is made: its name,
/// key and indexes come from the source's schema, not from the options.
#[derive(Clone, Debug, Default)]
pub(crate) struct TableShape {
    /// The table's name, free in the load and in the target file (see [`plan_tables`]).
    pub(crate) table: String,
    /// Its INTEGER PRIMARY KEY: a column whose values are the rowids (for the page
    /// writer, arriving in strictly increasing order).
    pub(crate) rowid: Option<String>,
    /// Its indexes, built after its rows, when the load makes the table.
    pub(crate) indexes: Vec<crate::table::IndexSpec>,
    /// The CREATE TABLE a table of a spec is made with (generate's: its columns,
    /// constraints and rowid column, which the rows leave out), when the load makes it.
    pub(crate) declared: Option<String>,
    /// For a table of a spec that existed when planned: what the plan read of it, which
    /// the writer finds again inside its transaction or fails.
    pub(crate) continued: Option<Continued>,
    /// Defaults and columns referencing other tables of the load (a nested child's
    /// parent, a copied database's foreign keys), declared when the load makes the
    /// table.
    pub(crate) constraints: crate::table::Constraints,
}

/// A table whose rows a load of a spec continues (generate into a table it made
/// before): the source numbered its rows from `last_rowid + 1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Continued {
    /// Its columns, in order: exactly the spec's.
    pub(crate) columns: Vec<String>,
    /// Its largest rowid (0 when empty).
    pub(crate) last_rowid: i64,
}

impl Continued {
    /// What `table` is in `conn` now: `None` when there is no such table.
    pub(crate) fn read(
        conn: &rusqlite::Connection,
        table: &str,
    ) -> Result<Option<(String, Continued)>> {
        let Some((actual, cols)) = crate::table::existing_columns(conn, table)? else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT coalesce(max(rowid), 0) FROM {}",
            crate::schema::quote_ident(&actual)
        );
        let last_rowid = conn
            .query_row(&sql, [], |r| r.get(0))
            .map_err(|e| Error::sqlite("reading the largest rowid", e))?;
        let columns = cols.into_iter().map(|c| c.name).collect();
        Ok(Some((
            actual,
            Continued {
                columns,
                last_rowid,
            },
        )))
    }
}

/// What the writers are told of the options, once the plan checked them: how a table
/// is made or taken, and the writer's own settings. Sinks read these, never the
/// options (which also hold how inputs are read, and the command's concerns).
#[derive(Clone, Debug)]
pub(crate) struct WriteRules {
    /// What an existing table does: append, replace or fail.
    pub(crate) if_exists: crate::table::IfExists,
    /// The primary key of a table the load makes.
    pub(crate) pk: Vec<String>,
    /// What a row whose key is taken does, and the key (empty: the table's own).
    pub(crate) on_conflict: crate::OnConflict,
    pub(crate) key: Vec<String>,
    /// Whether columns the table lacks are added to it.
    pub(crate) alter: bool,
    /// Indexes made after the rows.
    pub(crate) indexes: Vec<crate::table::IndexSpec>,
    /// Columns whose type the options give: that type stands over the one the table
    /// declares, and no side file takes the load (it would keep the table's).
    pub(crate) typed_columns: Vec<String>,
    /// The page writer's: bytes of index entries held before they spill, whether SQLite
    /// checks the written file, and the page size of a new file.
    pub(crate) index_memory: usize,
    pub(crate) verify: bool,
    pub(crate) page_size: Option<u32>,
    /// SQLite's path: the cap on rows per INSERT statement.
    pub(crate) rows_per_statement: usize,
}

impl WriteRules {
    /// The rules `opts` give.
    pub(crate) fn of(opts: &ImportOptions) -> WriteRules {
        WriteRules {
            if_exists: opts.if_exists,
            pk: opts.pk.clone(),
            on_conflict: opts.on_conflict,
            key: opts.key.clone(),
            alter: opts.alter,
            indexes: opts.indexes.clone(),
            typed_columns: opts.types.iter().map(|(n, _)| n.clone()).collect(),
            index_memory: opts.index_memory,
            verify: opts.verify,
            page_size: opts.file.page_size,
            rows_per_statement: opts.rows_per_statement,
        }
    }
}

/// One load of a plan: inputs read together into one table.
pub(crate) struct Load<'i> {
    /// One input, or typed inputs (Parquet, Arrow) of one schema; none for rows the
    /// program makes (generate's).
    pub(crate) inputs: Cow<'i, [Input]>,
    /// The input the summary lists the load under, when it is not `inputs` (a spool's
    /// rows are the input's).
    pub(crate) listed: Option<Input>,
    /// The name messages give the rows' source.
    pub(crate) name: String,
    /// How they are read (format, delimiter, quote, header, encoding, …).
    pub(crate) read: ReadOptions,
    /// The table they go to, as the options or the file name give it.
    pub(crate) table: String,
    /// The columns, from the sample, in the order the batches carry them (once sampled:
    /// see the module's docs).
    pub(crate) columns: Vec<String>,
    /// Their types: inferred from the sample (or the input's schema), then those the
    /// options give.
    pub(crate) types: Vec<ColumnType>,
    /// The source opened and sampled, until [`Load::source`] hands it out.
    source: Option<Box<dyn Source>>,
    /// Whether the inputs were sampled (by the plan, or by [`Load::source`]).
    sampled: bool,
}

/// A load's plan: its loads in order and the writer.
pub(crate) struct ImportPlan<'i> {
    pub(crate) loads: Vec<Load<'i>>,
    pub(crate) engine: EngineRoute,
    /// What the writer is told of the options.
    pub(crate) rules: WriteRules,
    /// For a load of several tables, each load's table as the source's schema gives it
    /// (in load order); empty when the options shape the tables.
    pub(crate) shapes: Vec<TableShape>,
    /// What sniffing found, per input that was sniffed.
    pub(crate) sniffed: Vec<Sniffed>,
    /// What the samples showed: notes, and values that look like another locale's.
    pub(crate) notes: Vec<String>,
    pub(crate) locale_hints: Vec<LocaleHint>,
    /// Records the plan read and skipped (related tables split the input whole before
    /// any load): the load's rejects take them first.
    pub(crate) rejected: Vec<crate::source::BadRecord>,
    /// The folder of the loads' spools, removed with the plan.
    pub(crate) _spools: Option<tempfile::TempDir>,
}

/// Plans loading `inputs` into `dest` with `opts`: checks the options, reads what
/// sniffing needs of each input, names each load's table, reads each input's sample
/// (its columns and types), and chooses the writer. Nothing is written.
pub(crate) fn plan<'i>(
    dest: Dest<'_>,
    inputs: &'i [Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<ImportPlan<'i>> {
    validate_options(opts, inputs)?;
    for input in inputs {
        if let Input::Path(p) = input {
            if crate::sqlite_info::is_sqlite_file(p) {
                return Err(Error::usage(format!(
                    "{} is a SQLite database: it is copied table by table into a database \
                     file, not read as records",
                    p.display()
                )));
            }
        }
    }
    let mut resolved = Vec::with_capacity(inputs.len());
    for input in inputs {
        resolved.push(resolve(input, opts)?);
    }
    if opts.nested != Nested::Json {
        return plan_nested(dest, inputs, resolved, opts, progress);
    }
    if let Some((path, _)) = opts.child_tables.first() {
        return Err(Error::usage(format!(
            "a name for the child table at {path:?} applies to related tables, which this \
             load does not make"
        )));
    }
    let formats: Vec<Format> = resolved.iter().map(|(ro, _)| ro.format).collect();
    let mut loads = vec![];
    let mut sniffed = vec![];
    let mut sheet_notes = vec![];
    for (range, (read, dialect)) in groups(&formats).into_iter().zip(resolved) {
        let inputs = &inputs[range];
        let input = &inputs[0];
        sniffed.extend(dialect.map(|(d, changed)| Sniffed {
            input: input.display_name(),
            described: d.describe(),
            changed,
            dialect: d,
        }));
        if read.format == Format::Spreadsheet {
            sheet_loads(inputs, &read, opts, &mut loads, &mut sheet_notes)?;
            continue;
        }
        loads.push(Load {
            inputs: Cow::Borrowed(inputs),
            listed: None,
            name: input.display_name(),
            read,
            table: table_name(input, opts)?,
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
        });
    }
    let (mut notes, mut locale_hints) = (sheet_notes, vec![]);
    for (i, load) in loads.iter_mut().enumerate() {
        if i > 0 && load.rereadable() {
            continue;
        }
        let sampled = load.open(opts, progress)?;
        (load.columns, load.types) = (sampled.columns, sampled.types);
        notes.extend(sampled.notes);
        locale_hints.extend(sampled.locale_hints);
        load.source = Some(sampled.src);
        load.sampled = true;
    }
    let engine = choose_engine_saying(dest, &loads, false, opts, &mut notes)?;
    let rules = WriteRules::of(opts);
    decide_first_table(dest, engine, &loads, &rules)?;
    Ok(ImportPlan {
        loads,
        engine,
        rules,
        shapes: vec![],
        sniffed,
        notes,
        locale_hints,
        rejected: vec![],
        _spools: None,
    })
}

/// Plans a load of related tables (see [`nested`]): the one input split into a spool a
/// table, each spool a load with its table's shape, sampled now.
fn plan_nested<'i>(
    dest: Dest<'_>,
    inputs: &'i [Input],
    resolved: Vec<(ReadOptions, Option<(Dialect, bool)>)>,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<ImportPlan<'i>> {
    let ([input], [(read, dialect)]) = (inputs, resolved.as_slice()) else {
        return Err(Error::usage(
            "related tables are made from one input at a time",
        ));
    };
    if opts.on_conflict != crate::OnConflict::Fail {
        return Err(Error::usage(
            "related tables are made new by the load: no rule for rows whose key is taken \
             can be given",
        ));
    }
    for (i, (path, name)) in opts.child_tables.iter().enumerate() {
        if name.trim().is_empty() || path.is_empty() {
            return Err(Error::usage(format!(
                "a child table's name is given for a path: {path:?} to {name:?} is not one"
            )));
        }
        if opts.child_tables[..i].iter().any(|(p, _)| p == path) {
            return Err(Error::usage(format!(
                "two names are given for the child table at {path:?}"
            )));
        }
    }
    let key = match opts.pk.as_slice() {
        [] => None,
        [k] => Some(k.as_str()),
        more => {
            return Err(Error::usage(format!(
                "related tables reference their records by one key column, not {}",
                more.len()
            )))
        }
    };
    if let Some(k) = key {
        if opts.types.iter().any(|(c, _)| c.eq_ignore_ascii_case(k)) {
            return Err(Error::usage(format!(
                "the key column {k:?} of related tables takes its type from its values \
                 (INTEGER, or TEXT where one is a string): none can be given"
            )));
        }
    }
    let sniffed = dialect
        .iter()
        .map(|(d, changed)| Sniffed {
            input: input.display_name(),
            described: d.describe(),
            changed: *changed,
            dialect: d.clone(),
        })
        .collect();
    let table = table_name(input, opts)?;
    let spooled = nested::spool(dest, input, read, &table, key, opts, progress)?;
    if let Dest::File(db) = dest {
        nested::refuse_existing(db, &spooled.tables, opts.if_exists)?;
    }
    progress
        .bytes_total
        .fetch_add(spooled.bytes, std::sync::atomic::Ordering::Relaxed);
    let (mut loads, mut sources) = nested::loads(&spooled, read, input, &progress.bytes_read)?;
    // The types the options give are the records' table's; a key's type is decided by
    // its values, and the `_parent` of the records' children has it too.
    let mut top = opts.clone();
    let children = ImportOptions {
        types: vec![],
        ..opts.clone()
    };
    let mut keyed_children = children.clone();
    if let Some((k, ty)) = spooled.key_to_type() {
        top.types.push((k.clone(), *ty));
        keyed_children.types = vec![(nested::PARENT.to_string(), *ty)];
    }
    let (mut notes, mut locale_hints) = (spooled.notes, vec![]);
    for (i, load) in loads.iter_mut().enumerate() {
        let child_of_top = spooled.shapes[i]
            .constraints
            .foreign_keys
            .iter()
            .any(|fk| fk.table == spooled.tables[0].0);
        let options = match i {
            0 => &top,
            _ if child_of_top => &keyed_children,
            _ => &children,
        };
        let mut sampled = match sources[i].take() {
            Some(src) => load.sampled(src, options)?,
            None => load.open(options, progress)?,
        };
        // The split numbers rows and positions with integers, whatever types the input's
        // columns take (all TEXT without type detection); a key of the records' own
        // has its type given above.
        for (c, ty) in sampled.columns.iter().zip(sampled.types.iter_mut()) {
            let numbered = match i {
                0 => c == nested::ID && spooled.key.is_none(),
                _ => {
                    c == nested::ID
                        || c == nested::POSITION
                        || (c == nested::PARENT && !(child_of_top && spooled.key.is_some()))
                }
            };
            if numbered {
                *ty = ColumnType::Integer;
            }
        }
        (load.columns, load.types) = (sampled.columns, sampled.types);
        // A spool's notes are its table's: named as the load is, not by the spool.
        let spool = load.inputs[0].display_name();
        notes.extend(
            sampled
                .notes
                .into_iter()
                .map(|n| match n.strip_prefix(&spool) {
                    Some(rest) => format!("{}{rest}", load.name),
                    None => n,
                }),
        );
        locale_hints.extend(sampled.locale_hints);
        load.source = Some(sampled.src);
        load.sampled = true;
    }
    let engine = choose_engine_saying(dest, &loads, true, opts, &mut notes)?;
    Ok(ImportPlan {
        loads,
        engine,
        rules: WriteRules::of(opts),
        shapes: spooled.shapes,
        sniffed,
        notes,
        locale_hints,
        rejected: spooled.rejected,
        _spools: Some(spooled.dir),
    })
}

/// Plans loading each of `inputs` (the program's record batches, read with `read`)
/// into the table `shapes` gives at the same place, one load each: the plan of a
/// database copied table by table (see [`crate::postgres`]). Each input's sample is its
/// schema. The tables are named here, once: a table whose name another of the load has
/// to SQLite (which ignores case), or that an index or trigger of the existing file
/// `dest` has, gets a free one, with a note.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn plan_tables<'i>(
    dest: Dest<'_>,
    inputs: &'i [Input],
    mut shapes: Vec<TableShape>,
    read: &ReadOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<ImportPlan<'i>> {
    let mut notes = vec![];
    name_tables(dest, &mut shapes, &mut notes)?;
    let mut loads = vec![];
    for (i, shape) in shapes.iter().enumerate() {
        let mut load = Load {
            inputs: Cow::Borrowed(&inputs[i..i + 1]),
            listed: None,
            name: inputs[i].display_name(),
            read: read.clone(),
            table: shape.table.clone(),
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
        };
        let sampled = load.open(opts, progress)?;
        (load.columns, load.types) = (sampled.columns, sampled.types);
        notes.extend(sampled.notes);
        load.source = Some(sampled.src);
        load.sampled = true;
        loads.push(load);
    }
    let engine = choose_engine(dest, &loads, true, opts)?;
    Ok(ImportPlan {
        loads,
        engine,
        rules: WriteRules::of(opts),
        shapes,
        sniffed: vec![],
        notes,
        locale_hints: vec![],
        rejected: vec![],
        _spools: None,
    })
}

/// Plans the rows a program makes (generate's) into the table `shape` describes: one
/// load, named `name`, of `columns` of `types`, whose source `make` builds given the
/// rowid its first row takes. Into an existing file the table is read now (without a
/// lock): one there must have exactly `spec_columns` (the table's, the rowid column
/// included), and the rows continue its rowids; the writer finds it the same inside its
/// transaction, or fails with nothing written. Only SQLite's path reads the file: the
/// page writer makes a new one, and parsing alone writes none. A destination the plan
/// cannot open (a cluster, read through its client) comes with `shape.continued`
/// already read by the caller, and is held to the same rule.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_source(
    dest: Dest<'_>,
    mut shape: TableShape,
    spec_columns: &[String],
    name: &str,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    make: impl FnOnce(i64) -> Box<dyn Source>,
    opts: &ImportOptions,
) -> Result<ImportPlan<'static>> {
    let engine = choose_engine(dest, &[], true, opts)?;
    if let (Dest::File(db), EngineRoute::Sqlite, None) = (dest, engine, &shape.continued) {
        if db.exists() {
            let conn = read_only(db)?;
            if let Some((actual, continued)) = Continued::read(&conn, &shape.table)? {
                shape.table = actual;
                shape.continued = Some(continued);
            }
        }
    }
    let mut first_rowid = 1;
    if let Some(continued) = &shape.continued {
        crate::table::check_same_columns(&shape.table, &continued.columns, spec_columns)?;
        first_rowid = continued.last_rowid + 1;
    }
    let load = Load {
        inputs: Cow::Borrowed(&[]),
        listed: None,
        name: name.to_string(),
        read: ReadOptions::default(),
        table: shape.table.clone(),
        columns,
        types,
        source: Some(make(first_rowid)),
        sampled: true,
    };
    Ok(ImportPlan {
        loads: vec![load],
        engine,
        rules: WriteRules::of(opts),
        shapes: vec![shape],
        sniffed: vec![],
        notes: vec![],
        locale_hints: vec![],
        rejected: vec![],
        _spools: None,
    })
}

/// Names the tables of `shapes` apart: from each other as SQLite compares names, and
/// from the indexes and triggers of the file at `dest` if it exists (a table of the
/// file with a table's name is that table: the rows go there, as the options allow).
/// Each renaming is a note. Read without a lock: an object made in between makes the
/// load fail in its transaction, with nothing written.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn name_tables(dest: Dest<'_>, shapes: &mut [TableShape], notes: &mut Vec<String>) -> Result<()> {
    use crate::schema::quote_ident;
    use rusqlite::OptionalExtension;
    let mut taken = crate::names::Names::new();
    for s in shapes.iter_mut() {
        let got = taken.allocate(&s.table);
        if got != s.table {
            notes.push(format!(
                "table {} is made as {}: another table of the load has that name to SQLite, which ignores case",
                quote_ident(&s.table),
                quote_ident(&got)
            ));
            s.table = got;
        }
    }
    let Dest::File(db) = dest else {
        return Ok(());
    };
    if !db.exists() {
        return Ok(());
    }
    let conn = read_only(db)?;
    let mut names = crate::names::Names::of(&conn)?;
    for s in shapes.iter() {
        names.claim(&s.table);
    }
    for s in shapes.iter_mut() {
        let kind: Option<String> = conn
            .query_row(
                "SELECT type FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
                [&s.table],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| Error::sqlite("reading the schema", e))?;
        if kind.is_some() && !matches!(kind.as_deref(), Some("table" | "view")) {
            let free = names.allocate(&s.table);
            notes.push(format!(
                "table {} is made as {}: the file has an object of that name",
                quote_ident(&s.table),
                quote_ident(&free)
            ));
            s.table = free;
        }
    }
    Ok(())
}

/// The one place the writer is chosen (see [`Engine`] for the rule of `Auto`). Loads
/// whose tables are shaped by their source (`several`: a copy of a database, or
/// generate's rows) take the page writer into a new file, else SQLite's path.
fn choose_engine(
    dest: Dest<'_>,
    loads: &[Load<'_>],
    several: bool,
    opts: &ImportOptions,
) -> Result<EngineRoute> {
    choose_engine_saying(dest, loads, several, opts, &mut vec![])
}

/// [`choose_engine`], with a note in `notes` where the road taken is not the fastest
/// one and the reason is the file's or the table's.
fn choose_engine_saying(
    dest: Dest<'_>,
    loads: &[Load<'_>],
    several: bool,
    opts: &ImportOptions,
    notes: &mut Vec<String>,
) -> Result<EngineRoute> {
    let db = match dest {
        Dest::Connection | Dest::Cluster => return Ok(EngineRoute::Sqlite),
        Dest::File(_) if opts.parse_only => return Ok(EngineRoute::Null),
        Dest::File(db) => db,
    };
    if several && !opts.pk.is_empty() {
        // (Related tables keyed by a member: the keys come in the records' order.)
        if opts.engine == Engine::Direct {
            return Err(
                Error::usage("the direct engine cannot order rows by a primary key")
                    .with_hint(Hint::SqliteEngine),
            );
        }
        return Ok(EngineRoute::Sqlite);
    }
    if several {
        if let Some(durability) = several_in_place(db, loads, opts) {
            return Ok(EngineRoute::InPlace(durability));
        }
        if opts.engine == Engine::Direct
            && !matches!(opts.durability, None | Some(Durability::AtomicNew))
        {
            return Err(Error::usage(
                "the direct engine writes a new file (durability atomic-new), not another profile",
            )
            .with_hint(Hint::SqliteEngine));
        }
        if opts.engine == Engine::Direct {
            destination::refuse_existing(db)?;
        }
        return Ok(
            if new_file_by_pages(opts.engine, db, opts.durability, || true) {
                EngineRoute::NewFile
            } else {
                EngineRoute::Sqlite
            },
        );
    }
    if opts.on_conflict != crate::OnConflict::Fail && opts.engine == Engine::Auto {
        // SQLite's path reports what keeps the merge out, if anything.
        return Ok(match merge(db, loads, opts) {
            Ok(Some(durability)) => EngineRoute::Merge(durability),
            Ok(None) | Err(_) => EngineRoute::Sqlite,
        });
    }
    let fits = page_writer_refusal(loads, opts).is_none();
    match opts.engine {
        Engine::Sqlite => Ok(EngineRoute::Sqlite),
        Engine::Auto if !fits => Ok(EngineRoute::Sqlite),
        Engine::Auto if !db.exists() => Ok(
            if new_file_by_pages(opts.engine, db, opts.durability, || true) {
                EngineRoute::NewFile
            } else {
                EngineRoute::Sqlite
            },
        ),
        Engine::Auto => Ok(match side_file(db, &loads[0], opts) {
            Ok(Some(durability)) => {
                let (road, why) = side_or_in_place(db, &loads[0], opts, durability);
                notes.extend(why);
                road
            }
            // A table with rows and indexes: merged in place, or SQLite's path, which
            // reports what keeps the side file out, if anything.
            Ok(None) | Err(_) => match merge_in_place(db, &loads[0], opts, false) {
                Some(Ok(durability)) => EngineRoute::InPlace(durability),
                Some(Err(why)) => {
                    notes.push(format!(
                        "not written in place ({why}): through SQLite's insert path"
                    ));
                    EngineRoute::Sqlite
                }
                None => EngineRoute::Sqlite,
            },
        }),
        Engine::Direct => {
            if let Some(why) = page_writer_refusal(loads, opts) {
                return Err(
                    Error::usage(format!("the direct engine {why}")).with_hint(Hint::SqliteEngine)
                );
            }
            if db.exists() && opts.durability != Some(Durability::AtomicNew) {
                return match side_file(db, &loads[0], opts)? {
                    Some(durability) => {
                        let (road, why) = side_or_in_place(db, &loads[0], opts, durability);
                        notes.extend(why);
                        Ok(road)
                    }
                    None => match merge_in_place(db, &loads[0], opts, true) {
                        Some(Ok(durability)) => Ok(EngineRoute::InPlace(durability)),
                        _ => Err(side_file_refusal(db)),
                    },
                };
            }
            destination::refuse_existing(db)?;
            if !matches!(opts.durability, None | Some(Durability::AtomicNew)) {
                return Err(Error::usage(
                    "the direct engine writes a new file with durability atomic-new",
                )
                .with_hint(Hint::SqliteEngine));
            }
            Ok(EngineRoute::NewFile)
        }
    }
}

/// Why the direct engine cannot append to the table of the existing database `db`.
fn side_file_refusal(db: &Path) -> Error {
    Error::schema(format!(
        "{}: the direct engine appends to a new table, to one without constraint or \
         trigger whose indexes are on columns, ascending, BINARY, not partial or UNIQUE, \
         or to an empty one whose constraints it checks (see the docs on appends in place \
         and through a side file), whose columns the input has in order (NDJSON and JSON: \
         to a new table only); this one is not",
        db.display()
    ))
    .with_hint(Hint::SqliteEngine)
}

/// Whether a job that writes a new file through the page writer when `fits` (its own
/// conditions) holds takes it with `engine`: always for `Direct`, for `Auto` when the
/// file is new and the durability the default (`atomic-new`). Import and generate share
/// this rule.
pub(crate) fn new_file_by_pages(
    engine: Engine,
    db: &Path,
    durability: Option<Durability>,
    fits: impl FnOnce() -> bool,
) -> bool {
    match engine {
        Engine::Direct => true,
        Engine::Sqlite => false,
        Engine::Auto => {
            !db.exists() && matches!(durability, None | Some(Durability::AtomicNew)) && fits()
        }
    }
}

/// Why the page writer cannot take these loads with these options (`None`: it can).
fn page_writer_refusal(loads: &[Load<'_>], opts: &ImportOptions) -> Option<&'static str> {
    if loads.len() != 1 {
        return Some("loads one input (or typed inputs of one schema) into one table");
    }
    if !opts.pk.is_empty() {
        return Some("cannot order rows by a primary key");
    }
    if opts.alter {
        return Some("writes a new table, to which no column is added");
    }
    if opts.on_conflict != crate::OnConflict::Fail {
        return Some("takes every row as it comes; a rule for rows whose key is taken needs SQLite's insert path");
    }
    None
}

/// The road of a load the side file takes: in place ([`EngineRoute::InPlace`]) when
/// the page writer can extend the file (see [`extensible`]) and the table is a name free
/// there, a table (without index, or empty with indexes) that the side file would take
/// with none asked for, or an empty table made beforehand that it would take, bad
/// records not set aside (read now, without a lock: the writer reads
/// both again under its lock); else the side file, with a note that says why.
fn side_or_in_place(
    db: &Path,
    load: &Load<'_>,
    opts: &ImportOptions,
    durability: Durability,
) -> (EngineRoute, Option<String>) {
    // Why the table cannot be written in place (`None`: it can).
    let declined = || -> Result<Option<&'static str>> {
        let conn = read_only(db)?;
        let mut names = crate::names::Names::of(&conn)?;
        let grows = load.read.format.may_add_columns();
        let takes = |d: &Destination| {
            destination::side_file_takes(d, &load.columns, grows, !opts.types.is_empty())
        };
        Ok(
            match destination::destination(&conn, &load.table, opts.if_exists)? {
                Some(Destination::New) if names.claim(&load.table) => None,
                Some(Destination::Replace { .. }) => Some("the table is replaced"),
                Some(d @ (Destination::Plain { .. } | Destination::Exact { .. }))
                    if !opts.indexes.is_empty() && takes(&d) =>
                {
                    Some("indexes are asked for a table that exists")
                }
                // With indexes only while empty (made beforehand): they are filled.
                Some(d @ Destination::Plain { .. }) if takes(&d) => None,
                // A table made beforehand: its rows are checked as they are written, and
                // a row that breaks a rule fails the load (pages written in place cannot
                // set it aside, as the side file's check can when bad records are kept).
                Some(d @ Destination::Exact { .. }) if takes(&d) => {
                    (opts.rejects.is_some() || opts.max_errors.is_some()).then_some(
                        "bad records are set aside, which rows written in place cannot be \
                         into a table with constraints",
                    )
                }
                _ => Some("the table is not one the page writer adds to in place"),
            },
        )
    };
    let why = match extensible(db) {
        Err(why) => Some(why),
        Ok(()) => match declined() {
            Ok(None) => None,
            Ok(Some(why)) => Some(why.to_string()),
            Err(e) => Some(e.to_string()),
        },
    };
    match why {
        None => (EngineRoute::InPlace(durability), None),
        Some(why) => (
            EngineRoute::SideFile(durability),
            Some(format!("not written in place ({why}): through a side file")),
        ),
    }
}

/// The profile of a load written into an existing file (in place, through a side file
/// or merged): the one asked for, `balanced` by default; `None` for `atomic-new`, which
/// writes a new file.
fn in_file_profile(opts: &ImportOptions) -> Option<Durability> {
    match opts.durability {
        None => Some(Durability::Balanced),
        Some(Durability::AtomicNew) => None,
        Some(d) => Some(d),
    }
}

/// The road of a load into a table with rows and indexes (see [`Destination::Plain`]),
/// which only the page writer in place takes, merging each index's entries with the new
/// ones: `None` when the load is not one (no such table, columns not the table's in
/// order, indexes asked for, `atomic-new`); else its profile in place, or why not
/// (the file cannot be extended in place; or, unless `forced`, the merge would cost more
/// than SQLite's insert path, see [`merge_pays`]). Read now, without a lock: the writer
/// reads the file and the table again under its lock.
fn merge_in_place(
    db: &Path,
    load: &Load<'_>,
    opts: &ImportOptions,
    forced: bool,
) -> Option<std::result::Result<Durability, String>> {
    let durability = in_file_profile(opts)?;
    if !opts.indexes.is_empty() {
        return None;
    }
    let dest = destination::inspect(db, &load.table, opts.if_exists).ok()??;
    let Destination::Plain {
        merged: true,
        ref name,
        ..
    } = dest
    else {
        return None;
    };
    let grows = load.read.format.may_add_columns();
    if !destination::in_place_takes(&dest, &load.columns, grows, !opts.types.is_empty()) {
        return None;
    }
    if let Err(why) = extensible(db) {
        return Some(Err(why));
    }
    if !forced {
        if let Err(why) = merge_pays(db, name, load) {
            return Some(Err(why));
        }
    }
    Some(Ok(durability))
}

/// Whether merging the indexes of table `table` (of the existing database `db`) with the
/// entries of `load`'s rows beats SQLite's insert path, or why not. A merge reads and
/// writes every old entry once, sequentially; SQLite's path inserts each new entry into
/// the old b-tree. So the merge pays unless the old rows (the table's largest rowid)
/// outnumber the new ones (the input's estimated lines) [`MERGE_RATIO`] times over, or,
/// when the input's records cannot be estimated (standard input, compressed, not
/// delimited text), unless the table holds more than [`MERGE_ALWAYS`] rows.
fn merge_pays(db: &Path, table: &str, load: &Load<'_>) -> std::result::Result<(), String> {
    let old: i64 = read_only(db)
        .and_then(|conn| {
            conn.query_row(
                &format!("SELECT max(rowid) FROM {}", quote_ident(table)),
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
            .map_err(|e| Error::sqlite(format!("reading {}", quote_ident(table)), e))
        })
        .map_err(|e| e.to_string())?
        .unwrap_or(0);
    let old = old.max(0) as u64;
    // Lines are records in delimited text (near enough: a quoted field may hold one).
    let new: Option<u64> = match load.read.format {
        Format::Csv | Format::Tsv => load.inputs.iter().map(Input::estimated_lines).sum(),
        _ => None,
    };
    match new {
        Some(new) if old <= MERGE_RATIO.saturating_mul(new) || old <= MERGE_ALWAYS => Ok(()),
        Some(new) => Err(format!(
            "its indexes would be rewritten for {old} rows to add about {new}, more than \
             {MERGE_RATIO} old rows for each new one"
        )),
        None if old <= MERGE_ALWAYS => Ok(()),
        None => Err(format!(
            "its indexes would be rewritten for {old} rows, and how many the input adds \
             cannot be told before reading it"
        )),
    }
}

/// Old rows for each new one up to which a merge of the indexes in place beats SQLite's
/// insert path (see [`merge_pays`]; measured in bench/README.md, "Rows added to an
/// indexed table").
const MERGE_RATIO: u64 = 25;

/// Rows of an indexed table whose indexes are merged in place whatever the number of
/// rows added (see [`merge_pays`]): the merge's whole cost stays near 50 ms (0.5 s for
/// 10M rows with two indexes, measured).
const MERGE_ALWAYS: u64 = 100_000;

/// The profile of a load of several tables (a copy of a database, or generate's rows)
/// into the existing database `db` in place, or `None`: SQLite's path is asked for, or
/// `atomic-new`, or a table of the load has a name taken in the file (a table there,
/// which the table rule decides on SQLite's path), or the page writer cannot extend the
/// file (read now, without a lock; the writer reads both again under its lock).
fn several_in_place(db: &Path, loads: &[Load<'_>], opts: &ImportOptions) -> Option<Durability> {
    // No loads: generate's plan, which chooses before it names its table; it keeps
    // SQLite's path into an existing file.
    if opts.engine == Engine::Sqlite || !db.exists() || loads.is_empty() {
        return None;
    }
    let mut names = read_only(db)
        .and_then(|conn| crate::names::Names::of(&conn))
        .ok()?;
    if !loads.iter().all(|l| names.claim(&l.table)) {
        return None;
    }
    let durability = in_file_profile(opts)?;
    extensible(db).is_ok().then_some(durability)
}

/// Whether the page writer can extend the existing database `db` in place (read
/// without a lock: the writer reads it again under its lock), or why not: its header
/// (see `liteload_btree::Existing`), or, for a file in WAL mode, another connection that
/// has it open (the load must be its only connection, see
/// `sqlite_info::open_exclusive`).
fn extensible(db: &Path) -> std::result::Result<(), String> {
    std::fs::File::open(db)
        .map_err(liteload_btree::Error::Io)
        .and_then(|mut f| liteload_btree::Existing::read_checkpointed(&mut f))
        .map_err(|e| e.to_string())?;
    match crate::sqlite_info::header_in_wal_mode(db) {
        Ok(false) => Ok(()),
        Ok(true) if crate::sqlite_info::alone_in_wal(db) => Ok(()),
        Ok(true) => Err("another connection has the file open, in WAL mode".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The profile of an append through a side file to the existing database `db`, or
/// `None` when its table cannot take one (read now, without a lock: the side file's
/// writer reads it again inside its transaction).
fn side_file(db: &Path, load: &Load<'_>, opts: &ImportOptions) -> Result<Option<Durability>> {
    let Some(durability) = in_file_profile(opts) else {
        return Ok(None);
    };
    let grows = load.read.format.may_add_columns();
    Ok(destination::inspect(db, &load.table, opts.if_exists)?
        .filter(|dest| {
            destination::side_file_takes(dest, &load.columns, grows, !opts.types.is_empty())
        })
        .map(|_| durability))
}

/// The profile of an upsert through a side file merged in key order into a table of the
/// existing database `db`, or `None` when it cannot take one: one load, of columns known
/// from the sample, rows added to an existing table (not replacing it, not refused by
/// it), no primary key, added columns or types given, and a table
/// [`destination::merge_target`] takes (read now, without a lock: the merge reads it
/// again inside its transaction and fails if it changed since).
fn merge(db: &Path, loads: &[Load<'_>], opts: &ImportOptions) -> Result<Option<Durability>> {
    let Some(durability) = in_file_profile(opts) else {
        return Ok(None);
    };
    let [load] = loads else {
        return Ok(None);
    };
    if !db.exists()
        || opts.if_exists != crate::table::IfExists::Append
        || !opts.pk.is_empty()
        || opts.alter
        || !opts.types.is_empty()
        || load.read.format.may_add_columns()
    {
        return Ok(None);
    }
    let conn = read_only(db)?;
    Ok(
        destination::merge_target(&conn, &load.table, &load.columns, &opts.key)?
            .map(|_| durability),
    )
}

/// Applies the table rule ([`table::decide`]) to the first load's sample and its table
/// as the plan reads it (without a lock) on the roads that follow it: SQLite's path
/// into a file (the file's table) and the page writer's new file (no table). A load the
/// writer would refuse (a table that exists under `fail`, a column it lacks without
/// alter, a key or index on a column the input does not have) fails here, before any
/// writer is touched; the writer decides again on the table as it finds it. The other
/// loads of a load of many are sampled when their turn comes, and decided then.
fn decide_first_table(
    dest: Dest<'_>,
    engine: EngineRoute,
    loads: &[Load<'_>],
    rules: &WriteRules,
) -> Result<()> {
    let (Dest::File(db), Some(load)) = (dest, loads.first()) else {
        return Ok(());
    };
    let existing = match engine {
        EngineRoute::Sqlite if db.exists() => {
            crate::table::existing_columns(&read_only(db)?, &load.table)?
        }
        EngineRoute::Sqlite | EngineRoute::NewFile => None,
        _ => return Ok(()),
    };
    table::decide(
        &load.table,
        existing,
        &load.columns,
        &load.types,
        rules,
        None,
        &std::collections::HashSet::new(),
    )
    .map(|_| ())
}

/// The existing database `db`, opened read-only for the plan to look at (no lock is
/// held between reads: each writer reads what it relies on again in its transaction).
fn read_only(db: &Path) -> Result<rusqlite::Connection> {
    rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(format!("opening {}", db.display()), e))
}

/// Typed inputs (Parquet, Arrow) all together when every input is one of the same
/// format (they must share a schema, and go to one table), else one input each: the
/// ranges of the inputs (whose resolved formats are `formats`) read as one load.
fn groups(formats: &[Format]) -> Vec<std::ops::Range<usize>> {
    let n = formats.len();
    if n > 1 && formats[0].is_typed() && formats.iter().all(|f| *f == formats[0]) {
        std::iter::once(0..n).collect()
    } else {
        (0..n).map(|i| i..i + 1).collect()
    }
}

/// A load for each worksheet of the workbook `inputs[0]` that holds a value, in the
/// workbook's order (or for the one `read.sheet` names), into the table the options
/// name or else one named after the sheet; a sheet with no value gets a note and no
/// table.
fn sheet_loads<'i>(
    inputs: &'i [Input],
    read: &ReadOptions,
    opts: &ImportOptions,
    loads: &mut Vec<Load<'i>>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let input = &inputs[0];
    let display = input.display_name();
    let Input::Path(path) = input else {
        // The reader says why it cannot read it.
        loads.push(Load {
            inputs: Cow::Borrowed(inputs),
            listed: None,
            name: display,
            read: read.clone(),
            table: table_name(input, opts)?,
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
        });
        return Ok(());
    };
    let (with, without) = match &read.sheet {
        // The reader says so if there is no such sheet.
        Some(sheet) => (vec![sheet.clone()], vec![]),
        None => crate::source::worksheets(path, &display)?,
    };
    if with.is_empty() {
        return Err(Error::usage(format!(
            "{display}: no worksheet holds a value ({} without)",
            without.len()
        )));
    }
    for sheet in &without {
        notes.push(format!(
            "{display}: sheet {sheet:?} holds no value: no table"
        ));
    }
    for sheet in with {
        let table = match &opts.table {
            Some(t) => t.clone(),
            None => sheet.clone(),
        };
        if let Some(problem) = crate::schema::table_name_problem(&table) {
            return Err(Error::usage(format!(
                "{display}: sheet {sheet:?}: {problem}; name another table"
            ))
            .with_hint(Hint::Table));
        }
        loads.push(Load {
            inputs: Cow::Borrowed(inputs),
            listed: None,
            name: format!("{display}[{sheet}]"),
            read: ReadOptions {
                sheet: Some(sheet),
                ..read.clone()
            },
            table,
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
        });
    }
    Ok(())
}

/// The table of `input`: the one the options name, else the file's stem.
fn table_name(input: &Input, opts: &ImportOptions) -> Result<String> {
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
    Ok(table)
}

/// Options that no input could make right.
pub(crate) fn validate_options(opts: &ImportOptions, inputs: &[Input]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::usage("no input files"));
    }
    if inputs.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        return Err(Error::usage("stdin (-) can be read only once"));
    }
    opts.file.check()?;
    if !opts.key.is_empty() && opts.on_conflict == crate::OnConflict::Fail {
        return Err(Error::usage(
            "key columns name the key of a conflict rule (ignore, replace or update); with none, a taken key fails the row",
        ));
    }
    if let Some(t) = &opts.table {
        if t.is_empty() {
            return Err(Error::usage("the table name is empty"));
        }
    }
    // Two indexes on the same columns (SQLite ignores case in names) would get the same
    // name: one would be dropped, or the page writer would write a schema SQLite refuses.
    for (i, a) in opts.indexes.iter().enumerate() {
        let key = |ix: &crate::table::IndexSpec| -> Vec<String> {
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
    // One place for each: the load's format, delimiter and quote are its own fields;
    // those of `read` are what the plan resolves per input, and would be ignored.
    let unread = ReadOptions::default();
    if (opts.read.format, opts.read.delimiter, opts.read.quote)
        != (unread.format, unread.delimiter, unread.quote)
    {
        return Err(Error::usage(
            "the format, delimiter and quote of a load are set on the load's own options \
             (format, delimiter, quoting); those of its read options are what the plan \
             resolves for each input, and must be left at their defaults",
        ));
    }
    if opts.read.max_record_bytes == 0 {
        return Err(Error::usage(
            "the longest record allowed is 0 bytes: no record could be loaded",
        ));
    }
    Ok(())
}

/// An input opened and sampled: its source, its columns and their types (inferred,
/// then overridden by the options), and what the sample showed.
struct Opened {
    src: Box<dyn Source>,
    columns: Vec<String>,
    types: Vec<ColumnType>,
    notes: Vec<String>,
    locale_hints: Vec<LocaleHint>,
}

impl Load<'_> {
    /// Whether its inputs can be read again from their start (files, bytes in memory).
    fn rereadable(&self) -> bool {
        self.inputs
            .iter()
            .all(|i| matches!(i, Input::Path(_) | Input::Bytes { .. }))
    }

    /// The load's source, sampled, ready to give its rows: the one the plan holds, or
    /// the inputs opened and sampled now (their columns and types are then set, and
    /// the sample's notes go to `summary`). Called once per load.
    pub(crate) fn source(
        &mut self,
        opts: &ImportOptions,
        progress: &Progress,
        summary: &mut crate::summary::Summary,
    ) -> Result<Box<dyn Source>> {
        if let Some(src) = self.source.take() {
            return Ok(src);
        }
        if self.sampled {
            return Err(Error::internal("a load's source was asked for twice"));
        }
        let again = self.open(opts, progress)?;
        (self.columns, self.types) = (again.columns, again.types);
        self.sampled = true;
        summary.notes.extend(again.notes);
        summary.locale_hints.extend(again.locale_hints);
        Ok(again.src)
    }

    /// Opens the load's inputs and reads their sample.
    fn open(&self, opts: &ImportOptions, progress: &Progress) -> Result<Opened> {
        let input = &self.inputs[0];
        let ro = &self.read;
        let typed = ro.format.is_typed() || input.fixed_format() == Some(Format::Arrow);
        if typed && (!opts.types.is_empty() || !opts.detect_types) {
            return Err(Error::usage(format!(
                "{}: the column types come from the input's schema; they cannot be set or turned off",
                input.display_name()
            )));
        }
        let src = if typed {
            crate::source::open_typed(self.inputs.to_vec(), ro, progress)?
        } else {
            open_source(input, ro, progress)?
        };
        self.sampled(src, opts)
    }

    /// Samples `src`, this load's source, and types its columns as `opts` say.
    fn sampled(&self, mut src: Box<dyn Source>, opts: &ImportOptions) -> Result<Opened> {
        let input = &self.inputs[0];
        let sample = src.sample()?;
        let locale_hints = sample
            .locale
            .iter()
            .map(|(column, example, date_format)| LocaleHint {
                input: input.display_name(),
                column: column.clone(),
                example: example.clone(),
                date_format: date_format.clone(),
            })
            .collect();
        let notes = sample
            .notes
            .iter()
            .map(|n| format!("{}: {}", input.display_name(), n))
            .collect();
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
            columns: sample.columns,
            types: inferred,
            notes,
            locale_hints,
        })
    }
}

/// The read options of `input`, and what sniffing found when it ran, with whether it
/// changed anything the name and options alone would have given.
fn resolve(input: &Input, opts: &ImportOptions) -> Result<(ReadOptions, Option<(Dialect, bool)>)> {
    let fixed = input.fixed_format();
    let named = fixed
        .or(opts.format)
        .or_else(|| input.logical_path().and_then(|p| Format::from_path(&p)));
    // XML is sniffed for its record path and encoding, as delimited text for its dialect.
    // JSON, for the path of the records in a top-level object (the reader finds it
    // itself: sniffing only reports it).
    let delimited = |f: Option<Format>| {
        f.is_none_or(|f| matches!(f, Format::Csv | Format::Tsv | Format::Xml | Format::Json))
    };
    let open_question = named.is_none()
        || (named == Some(Format::Csv)
            && opts.delimiter.is_none()
            && opts.quoting == Quoting::Default)
        // Whether tab-separated fields are quoted is told from them, as for CSV.
        || (named == Some(Format::Tsv) && opts.quoting == Quoting::Default)
        || (matches!(named, Some(Format::Xml | Format::Json)) && opts.read.record.is_none())
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
        // A record path names an array in one JSON document, never lines.
        (None, Some(d)) if d.format == Format::Ndjson && opts.read.record.is_some() => Format::Json,
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
        if format == Format::Xml {
            // The reader tells the encoding itself (refusing a declaration the bytes
            // contradict); the record path is the one the sample shows.
            if ro.record.is_none() {
                ro.record = d.record.clone();
            }
        } else if ro.encoding == Encoding::Utf8
            && !ro.encoding_given
            && d.encoding != Encoding::Utf8
        {
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
        if format == Format::Xml || (format == Format::Json && ro.record.is_some()) {
            d.record = ro.record.clone();
        }
        if format != Format::Xml {
            d.encoding = ro.encoding;
        }
    }
    let changed = named.is_none()
        || ro.delimiter != before.delimiter
        || ro.quote != before.quote
        || ro.header != before.header
        || ro.encoding != before.encoding
        || ro.record != before.record;
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
    if opts.read.flatten.is_some()
        && !matches!(
            format,
            Format::Json | Format::Ndjson | Format::Xml | Format::Parquet | Format::Arrow
        )
    {
        return Err(Error::usage(format!(
            "{}: flattening nested objects applies to JSON, NDJSON, XML, Parquet and Arrow, not to {format:?}",
            input.display_name()
        )));
    }
    if opts.read.record.is_some() && !matches!(format, Format::Xml | Format::Json) {
        return Err(Error::usage(format!(
            "{}: a record path applies to XML and JSON documents, not to {format:?}",
            input.display_name()
        )));
    }
    if opts.read.sheet.is_some() && format != Format::Spreadsheet {
        return Err(Error::usage(format!(
            "{}: a sheet name applies to spreadsheets, not to {format:?}",
            input.display_name()
        )));
    }
    if format == Format::Spreadsheet && opts.read.skip_lines > 0 {
        return Err(Error::usage(format!(
            "{}: skipping lines applies to CSV, TSV and NDJSON, not to a spreadsheet (its empty rows are skipped)",
            input.display_name()
        )));
    }
    if format == Format::Json && opts.read.skip_lines > 0 {
        return Err(Error::usage(format!(
            "{}: skipping lines applies to CSV, TSV and NDJSON, not to a JSON array",
            input.display_name()
        )));
    }
    if opts.read.nulls == crate::source::Nulls::Unquoted
        && !matches!(format, Format::Csv | Format::Tsv)
    {
        return Err(Error::usage(format!(
            "{}: telling quoted from unquoted empty values (NULL for unquoted ones) applies to CSV and TSV, not to {format:?}",
            input.display_name()
        )));
    }
    let mut ro = opts.read.clone();
    ro.format = format;
    // A workbook's header is told from its first rows, as delimited text's is.
    ro.header_sniffed = format == Format::Spreadsheet
        && opts.sniff
        && opts.sniff_header
        && ro.header
        && ro.columns.is_none();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::IfExists;

    /// A load the writer of SQLite's path would refuse is refused by the plan, which
    /// only reads the file: its bytes stay as they were, and no journal or side file
    /// appears beside it.
    #[test]
    fn the_plan_refuses_what_the_table_rule_refuses_before_any_writer_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        let before = std::fs::read(&db).unwrap();
        let input = [Input::bytes("t.csv", b"a,b\n1,2\n".to_vec())];
        let cases: [(IfExists, bool, Option<&str>); 4] = [
            (IfExists::Fail, false, Some("exists already")),
            (IfExists::Append, false, Some("has no column \"b\"")),
            (IfExists::Append, true, None),
            (IfExists::Replace, false, None),
        ];
        for (if_exists, alter, refused) in cases {
            let opts = ImportOptions {
                if_exists,
                alter,
                engine: Engine::Sqlite,
                ..ImportOptions::default()
            };
            let planned = plan(Dest::File(&db), &input, &opts, &Progress::default());
            match (refused, planned) {
                (Some(why), Err(e)) => assert!(e.to_string().contains(why), "{e}"),
                (None, Ok(p)) => assert_eq!(p.engine, EngineRoute::Sqlite),
                (want, got) => panic!(
                    "{if_exists:?} alter={alter}: wanted {want:?}, got {:?}",
                    got.map(|p| p.engine)
                ),
            }
            assert_eq!(std::fs::read(&db).unwrap(), before);
            let beside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(beside.len(), 1, "{beside:?}");
        }
    }
}
