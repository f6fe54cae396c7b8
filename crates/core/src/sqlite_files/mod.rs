//! SQLite files as a source: every table of one or more database files copied into
//! another, each with the declared schema its file gives it (its `CREATE TABLE` as
//! written: constraints, collations, defaults, generated columns, `STRICT`, `WITHOUT
//! ROWID`), and its indexes.
//!
//! The rules of a merge, where several inputs (or the target) hold a table of one name
//! (names compared as SQLite compares them, ASCII case folded):
//! - the columns must be the same (by name; generated columns are not copied, SQLite
//!   computes them again), else the load is refused before anything is written;
//! - the first input that has the table makes it (where the target lacks it), with its
//!   indexes, built after every input's rows; the others' schemas are not compared
//!   further;
//! - an INTEGER PRIMARY KEY is data: it keeps its value, and a row whose key (or any
//!   UNIQUE column) is in the table already is a conflict, which the load's conflict rule
//!   decides (`Fail` refuses the load);
//! - an implicit rowid is renumbered (rows appended in each input's rowid order), unless
//!   the table comes from one input alone into a table the load makes (then every rowid
//!   is kept), or rowids are kept on request, where a rowid already in the table refuses
//!   the load.
//!
//! Views, triggers, virtual tables and their shadow tables are not copied; the summary
//! names each. `sqlite_sequence` follows from the rows (SQLite keeps it);
//! `sqlite_stat1` is not copied (`ANALYZE` makes it anew).
//!
//! Into a new file, the page writer copies the records as they are stored where the
//! inputs allow it (`stored.rs` says when: exactly the file the road below makes). Else
//! the inputs are read through SQLite, attached read-only: each is read inside one
//! transaction, a snapshot, whatever another connection writes meanwhile. The rows go
//! through SQLite's own `INSERT … SELECT` in the load's transaction: a new file is put
//! in place only when every table is in, and a file that exists takes all of the load
//! or none of it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};

use crate::durability::{self, Durability, Target};
use crate::error::{Error, Result};
use crate::options::{ImportOptions, OnConflict};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::source::Input;
use crate::summary::{self, Durable, EngineUsed, Summary};
use crate::table::IfExists;

mod stored;

/// What to copy from SQLite files, besides the load's [`ImportOptions`] (whose
/// `on_conflict`, `if_exists` and durability apply as for any load).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Only these tables (names compared as SQLite compares them); empty: every table.
    pub tables: Vec<String>,
    /// Keep every implicit rowid as its input has it, also where a table is merged: a
    /// rowid already in the table then refuses the load (no conflict rule applies).
    pub keep_rowids: bool,
}

pub use crate::sqlite_info::is_sqlite_file;

/// The SQLite databases among `inputs`: `None` when there is none, their paths when
/// every input is one; a mix is refused (a database is copied table by table, text is
/// read as records: two loads).
pub fn sqlite_inputs(inputs: &[Input]) -> Result<Option<Vec<PathBuf>>> {
    let dbs: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Path(p) if is_sqlite_file(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    match dbs.len() {
        0 => Ok(None),
        n if n == inputs.len() => Ok(Some(dbs)),
        _ => Err(Error::usage(format!(
            "{} is a SQLite database, copied table by table; the other inputs are read as \
             records: load them in another run",
            dbs[0].display()
        ))),
    }
}

/// The tables of the SQLite database at `path` that a copy takes (in its schema's
/// order), read through SQLite with the file opened read-only.
pub fn table_names(path: &Path) -> Result<Vec<String>> {
    Ok(read_source(path, &[])?
        .tables
        .into_iter()
        .map(|t| t.name)
        .collect())
}

/// A table of an input, as its file declares it.
#[derive(Clone, Debug)]
pub(crate) struct SourceTable {
    pub(crate) name: String,
    /// Its `CREATE TABLE`, as `sqlite_schema` holds it.
    pub(crate) sql: String,
    /// The columns an INSERT names: every column but generated ones.
    pub(crate) columns: Vec<String>,
    /// Every column's name in order, generated ones too, ASCII lowercased.
    pub(crate) all: Vec<String>,
    /// It has a generated column.
    pub(crate) generated: bool,
    /// `WITHOUT ROWID`.
    pub(crate) without_rowid: bool,
    pub(crate) rowid: Rowid,
    /// Its indexes' names and `CREATE INDEX` statements (not those of its constraints,
    /// which come with the table).
    pub(crate) indexes: Vec<(String, String)>,
}

/// How a table's rows are keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rowid {
    /// `WITHOUT ROWID`, or an INTEGER PRIMARY KEY (a column, copied as data).
    Data,
    /// An implicit rowid, read by this name.
    Implicit(&'static str),
    /// An implicit rowid that no name reaches (every one is a column's).
    Hidden,
}

/// One input's tables (those the options take, in its schema's order) and the objects
/// it has that are not copied.
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    pub(crate) tables: Vec<SourceTable>,
    pub(crate) skipped: Vec<String>,
}

/// Copies the tables of the SQLite databases `sources` (with `sq`) into the database at
/// `db` (a new file, or one that exists), by the merge rules of this module, with
/// `opts`. On error the target is as it was before (no file, for a new one), and no
/// input is written to.
pub fn import_sqlite(
    db: impl AsRef<Path>,
    sources: &[PathBuf],
    sq: &SqliteOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let db = db.as_ref();
    let start = Instant::now();
    refuse_options(sq, opts)?;
    if sources.is_empty() {
        return Err(Error::usage("no SQLite database to copy"));
    }
    for s in sources {
        if same_file(s, db) {
            return Err(Error::usage(format!(
                "{} is the target: a database is not copied into itself",
                s.display()
            )));
        }
    }
    let read = sources
        .iter()
        .map(|p| read_source(p, &sq.tables))
        .collect::<Result<Vec<_>>>()?;
    for want in &sq.tables {
        if !read
            .iter()
            .any(|s| s.tables.iter().any(|t| t.name.eq_ignore_ascii_case(want)))
        {
            return Err(Error::usage(format!(
                "no input has a table {}",
                quote_ident(want)
            )));
        }
    }
    if stored::may_apply(db, opts) {
        match stored::copy(db, &read, sq, opts, progress)? {
            stored::Outcome::Done(summary) => {
                let mut summary = *summary;
                summary.durability = Durable::Profile(Durability::AtomicNew);
                finish_summary(&mut summary, db, sources, start);
                return Ok(summary);
            }
            stored::Outcome::NotHere(why) if opts.engine == crate::options::Engine::Direct => {
                return Err(Error::usage(format!(
                    "copying SQLite files by the page writer: {why}"
                ))
                .with_hint(crate::error::Hint::SqliteEngine));
            }
            stored::Outcome::NotHere(_) => {}
        }
    } else if opts.engine == crate::options::Engine::Direct {
        return Err(Error::usage(
            "copying SQLite files by the page writer: it builds a new file (durability atomic-new)",
        )
        .with_hint(crate::error::Hint::SqliteEngine));
    }
    let mut target = durability::open(db, opts.durability, opts.file)?;
    let result = copy(&mut target, &read, sq, opts, progress);
    match result {
        Ok(mut summary) => {
            if opts.verify {
                let check: String = target
                    .conn
                    .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                    .map_err(|e| Error::sqlite(format!("{}: checking", db.display()), e))?;
                if check != "ok" {
                    target.abort();
                    return Err(Error::schema(format!(
                        "{}: SQLite's integrity_check of the copy says: {check}",
                        db.display()
                    )));
                }
                summary.verified = true;
            }
            let durability = target.durability;
            summary.notes.splice(0..0, target.notes.drain(..));
            target.commit()?;
            summary.durability = Durable::Profile(durability);
            finish_summary(&mut summary, db, sources, start);
            Ok(summary)
        }
        Err(e) => {
            target.abort();
            Err(e)
        }
    }
}

/// The sizes and times of a copy from `sources` into `db` begun at `start`.
fn finish_summary(summary: &mut Summary, db: &Path, sources: &[PathBuf], start: Instant) {
    summary.db_bytes = std::fs::metadata(db).map_or(0, |m| m.len());
    summary.bytes_read = sources
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    summary::finish(summary, start);
}

/// Options that a copy of SQLite files cannot take.
pub(crate) fn refuse_options(sq: &SqliteOptions, opts: &ImportOptions) -> Result<()> {
    let refused = if !opts.pk.is_empty() || !opts.key.is_empty() {
        Some("keys come from the tables' own declarations")
    } else if !opts.indexes.is_empty() {
        Some("indexes come from the inputs' own")
    } else if opts.alter || !opts.types.is_empty() {
        Some("the columns and their types come from the inputs' tables")
    } else if opts.table.is_some() {
        Some("tables keep their names (choose some by name instead)")
    } else if opts.parse_only {
        Some("there is nothing to parse: the rows are copied by SQLite")
    } else if opts.nested != crate::options::Nested::default() {
        Some("tables are copied as they are; there is nothing nested to take apart")
    } else if sq.keep_rowids && opts.on_conflict != OnConflict::Fail {
        Some("rowids kept refuse a rowid that is in the table already; a conflict rule does not go with them")
    } else {
        None
    };
    match refused {
        Some(why) => Err(Error::usage(format!("copying SQLite files: {why}"))),
        None => Ok(()),
    }
}

/// Whether `a` and `b` name one file (both exist and are the same inode, or the same
/// path once made absolute).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Reads the schema of the database at `path` (opened read-only): its tables, those of
/// `only` where it names some, and what it has that is not copied.
pub(crate) fn read_source(path: &Path, only: &[String]) -> Result<Source> {
    let shown = path.display().to_string();
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(format!("opening {shown}"), e))?;
    let err = |e| Error::sqlite(format!("reading the schema of {shown}"), e);
    conn.execute_batch("BEGIN").map_err(err)?;
    let kinds: HashMap<String, String> = conn
        .prepare("SELECT name, type FROM pragma_table_list WHERE schema = 'main'")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(err)?;
    let objects: Vec<(String, String, String, Option<String>)> = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid")
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .map_err(err)?;
    let wanted = |name: &str| only.is_empty() || only.iter().any(|w| w.eq_ignore_ascii_case(name));
    let mut tables = vec![];
    let mut skipped = vec![];
    for (kind, name, _, sql) in &objects {
        if kind != "table" || name.starts_with("sqlite_") || !wanted(name) {
            if matches!(kind.as_str(), "view" | "trigger") && wanted(name) {
                skipped.push(format!(
                    "{shown}: {kind} {} (not copied)",
                    quote_ident(name)
                ));
            }
            continue;
        }
        let ty = kinds.get(name).cloned().unwrap_or_default();
        if ty == "virtual" || ty == "shadow" {
            skipped.push(format!(
                "{shown}: {} table {} (not copied)",
                if ty == "virtual" { "virtual" } else { "shadow" },
                quote_ident(name)
            ));
            continue;
        }
        let Some(sql) = sql.clone() else { continue };
        // SQLite writes each table's statement from `CREATE TABLE` on: anything else
        // was written into the schema by hand, and is not run here.
        if !sql.starts_with("CREATE TABLE ") {
            return Err(Error::schema(format!(
                "{shown}: table {} is declared by a statement that is not a CREATE TABLE",
                quote_ident(name)
            )));
        }
        let shape = layout(&conn, "main", name).map_err(err)?;
        let rowid = if shape.without_rowid || shape.ipk {
            Rowid::Data
        } else {
            ["rowid", "oid", "_rowid_"]
                .into_iter()
                .find(|n| !shape.all.iter().any(|c| c == n))
                .map_or(Rowid::Hidden, Rowid::Implicit)
        };
        let indexes: Vec<(String, String)> = objects
            .iter()
            .filter(|(k, _, t, s)| k == "index" && t == name && s.is_some())
            .map(|(_, n, _, s)| (n.clone(), s.clone().unwrap_or_default()))
            .collect();
        if let Some((n, _)) = indexes.iter().find(|(_, s)| {
            !s.starts_with("CREATE INDEX ") && !s.starts_with("CREATE UNIQUE INDEX ")
        }) {
            return Err(Error::schema(format!(
                "{shown}: index {} is declared by a statement that is not a CREATE INDEX",
                quote_ident(n)
            )));
        }
        tables.push(SourceTable {
            name: name.clone(),
            sql,
            columns: shape.columns,
            all: shape.all,
            generated: shape.generated,
            without_rowid: shape.without_rowid,
            rowid,
            indexes,
        });
    }
    let _ = conn.execute_batch("COMMIT");
    Ok(Source {
        path: path.to_path_buf(),
        tables,
        skipped,
    })
}

/// A table of the target, as the load leaves it.
struct Planned {
    /// Its name in the target.
    name: String,
    /// The columns every input's table must have (lowercased, sorted).
    columns: Vec<String>,
    /// Made by this load (from this input's table), or there already.
    made_from: Option<usize>,
    /// The inputs that hold it, in order.
    from: Vec<usize>,
    /// The target's table is keyed by an implicit rowid.
    target_rowid: bool,
    /// The target's columns in order (generated ones too), lowercased.
    all: Vec<String>,
    /// The target's table has a generated column, or an index while rows are copied
    /// (a table there already).
    generated_or_indexed: bool,
}

pub(crate) fn column_set(columns: &[String]) -> Vec<String> {
    let mut c: Vec<String> = columns.iter().map(|c| c.to_ascii_lowercase()).collect();
    c.sort();
    c
}

/// Plans the tables, then copies every input's rows in the target's open transaction,
/// then builds the indexes of the tables the load made.
fn copy(
    target: &mut Target,
    sources: &[Source],
    sq: &SqliteOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let conn = &target.conn;
    let shown_db = target.path.display().to_string();
    let terr = |what: &str, e| Error::sqlite(format!("{shown_db}: {what}"), e);
    // What the target has now: each object's name and its table's.
    let there: Vec<(String, String)> = conn
        .prepare("SELECT lower(name), lower(tbl_name) FROM main.sqlite_schema")
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| terr("reading its schema", e))?;
    let mut plan: Vec<Planned> = vec![];
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut notes = vec![];
    for (i, s) in sources.iter().enumerate() {
        notes.extend(s.skipped.iter().cloned());
        for t in &s.tables {
            let key = t.name.to_ascii_lowercase();
            let cols = column_set(&t.columns);
            if let Some(&p) = by_name.get(&key) {
                let p = &mut plan[p];
                if p.columns != cols {
                    return Err(Error::schema(format!(
                        "table {} of {} has the columns {} where the table it is merged into has {}",
                        quote_ident(&t.name),
                        s.path.display(),
                        shown_columns(&cols),
                        shown_columns(&p.columns)
                    )));
                }
                p.from.push(i);
                continue;
            }
            let there = crate::table::existing_columns(conn, &t.name)?;
            let planned = match there {
                Some((actual, _)) if opts.if_exists != IfExists::Replace => {
                    if opts.if_exists == IfExists::Fail {
                        return Err(Error::schema(format!(
                            "table {} exists already",
                            quote_ident(&actual)
                        ))
                        .with_hint(crate::error::Hint::Append));
                    }
                    let shape =
                        layout(conn, "main", &actual).map_err(|e| terr("reading a table", e))?;
                    let columns = column_set(&shape.columns);
                    if columns != cols {
                        return Err(Error::schema(format!(
                            "table {} of {} has the columns {} where the table there has {}",
                            quote_ident(&t.name),
                            s.path.display(),
                            shown_columns(&cols),
                            shown_columns(&columns)
                        )));
                    }
                    Planned {
                        name: actual,
                        columns,
                        made_from: None,
                        from: vec![i],
                        target_rowid: !shape.without_rowid && !shape.ipk,
                        all: shape.all,
                        generated_or_indexed: shape.generated || shape.indexed,
                    }
                }
                _ => Planned {
                    name: t.name.clone(),
                    columns: cols,
                    made_from: Some(i),
                    from: vec![i],
                    target_rowid: matches!(t.rowid, Rowid::Implicit(_) | Rowid::Hidden),
                    all: t.all.clone(),
                    generated_or_indexed: t.generated,
                },
            };
            by_name.insert(key, plan.len());
            plan.push(planned);
        }
    }
    if plan.is_empty() {
        return Err(Error::usage("the inputs have no table to copy"));
    }
    // Attach the inputs, read-only, outside a transaction (SQLite attaches only there);
    // SQLite attaches a few at once: a new file takes them a group at a time, each group
    // in a transaction of its own, the file put in place only at the end; a file that
    // exists takes the load in one transaction, so as many as attach at once.
    let group = usize::try_from(
        conn.limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED)
            .unwrap_or(10),
    )
    .unwrap_or(10)
    .max(1);
    let new_file = target.durability == Durability::AtomicNew;
    if !new_file && sources.len() > group {
        return Err(Error::usage(format!(
            "{} inputs into a database that exists: SQLite attaches {group} at once, and \
             the load is one transaction; merge them into a new file first",
            sources.len()
        )));
    }
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DQS_DDL, true)
        .map_err(|e| terr("configuring", e))?;
    // A new file's connection locks it exclusively, and a database attached later
    // would be locked so too (which a read-only one cannot be): the default for those
    // is set back to NORMAL, the target's own mode kept.
    let mode: String = conn
        .query_row("PRAGMA main.locking_mode", [], |r| r.get(0))
        .map_err(|e| terr("configuring", e))?;
    conn.execute_batch(&format!(
        "PRAGMA locking_mode = NORMAL; PRAGMA main.locking_mode = {}",
        if mode.eq_ignore_ascii_case("exclusive") {
            "EXCLUSIVE"
        } else {
            "NORMAL"
        }
    ))
    .map_err(|e| terr("configuring", e))?;
    let _watch = crate::cancel::CancelWatch::new(conn, progress);
    let begin = match target.durability {
        Durability::Balanced | Durability::Durable => "BEGIN IMMEDIATE",
        _ => "BEGIN EXCLUSIVE",
    };
    let mut rows_total = 0u64;
    let mut made = HashSet::new();
    for (g, chunk) in sources.chunks(group).enumerate() {
        conn.execute_batch("COMMIT")
            .map_err(|e| terr("committing", e))?;
        if g > 0 {
            for k in 0..group {
                let _ = conn.execute_batch(&format!("DETACH DATABASE \"s{k}\""));
            }
        }
        for (k, s) in chunk.iter().enumerate() {
            conn.execute(
                &format!("ATTACH DATABASE ?1 AS \"s{k}\""),
                [read_only_uri(&s.path)],
            )
            .map_err(|e| Error::sqlite(format!("opening {}", s.path.display()), e))?;
        }
        conn.execute_batch(begin)
            .map_err(|e| terr("beginning", e))?;
        for (k, s) in chunk.iter().enumerate() {
            let i = g * group + k;
            for t in &s.tables {
                progress.check()?;
                let p = by_name[&t.name.to_ascii_lowercase()];
                let p = &plan[p];
                if p.made_from == Some(i) && made.insert(p.name.to_ascii_lowercase()) {
                    if opts.if_exists == IfExists::Replace {
                        conn.execute_batch(&format!(
                            "DROP TABLE IF EXISTS main.{}",
                            quote_ident(&p.name)
                        ))
                        .map_err(|e| terr("dropping a table to replace it", e))?;
                    }
                    // One statement (`execute` refuses a second): the text comes from
                    // the input's file, whose schema could have been written by hand.
                    conn.execute(&t.sql, []).map_err(|e| {
                        Error::sqlite(
                            format!(
                                "{}: making table {} as {} declares it",
                                shown_db,
                                quote_ident(&t.name),
                                s.path.display()
                            ),
                            e,
                        )
                    })?;
                }
                let keep = match t.rowid {
                    Rowid::Implicit(n) if p.target_rowid => (sq.keep_rowids
                        || (p.made_from.is_some() && p.from.len() == 1))
                        .then_some(n),
                    _ => None,
                };
                if sq.keep_rowids && t.rowid == Rowid::Hidden {
                    notes.push(format!(
                        "{}: table {} names a column rowid, oid and _rowid_: its rowids \
                         cannot be read, and are numbered anew",
                        s.path.display(),
                        quote_ident(&t.name)
                    ));
                }
                // Whole rows (`SELECT *`) where the two tables' columns are one list:
                // SQLite then copies each record as it is stored (its transfer
                // optimization), rowids numbered anew where the table has no index, as
                // the rules say; else each column by name.
                let whole = keep.is_none()
                    && t.all == p.all
                    && !t.generated
                    && (t.rowid == Rowid::Data || !p.generated_or_indexed);
                let sql = insert_sql(&p.name, k, t, keep, whole, opts.on_conflict);
                let n = conn.execute(&sql, []).map_err(|e| {
                    Error::sqlite(
                        format!(
                            "{}: copying table {} of {}",
                            shown_db,
                            quote_ident(&t.name),
                            s.path.display()
                        ),
                        e,
                    )
                })?;
                rows_total += n as u64;
                progress.rows.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    // The indexes of the tables the load made, after their rows, named apart from
    // every name the target has; a table replaced took its own objects with it.
    let made: HashSet<String> = plan
        .iter()
        .filter(|p| p.made_from.is_some())
        .map(|p| p.name.to_ascii_lowercase())
        .collect();
    let mut names = crate::names::Names::new();
    for (name, _) in there.iter().filter(|(_, table)| !made.contains(table)) {
        names.claim(name);
    }
    for p in &plan {
        names.claim(&p.name);
    }
    for p in plan.iter().filter(|p| p.made_from.is_some()) {
        let i = p.made_from.unwrap_or(0);
        let Some(t) = sources[i]
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&p.name))
        else {
            continue;
        };
        for (name, sql) in &t.indexes {
            progress.check()?;
            let free = names.allocate(name);
            let sql = match free == *name {
                true => sql.clone(),
                false => {
                    let renamed = renamed_index(sql, &free).ok_or_else(|| {
                        Error::schema(format!(
                            "index {} of {}: its name is taken in the target, and its \
                             statement is not one this copy can rename",
                            quote_ident(name),
                            sources[i].path.display()
                        ))
                    })?;
                    notes.push(format!(
                        "index {} of {} is {} here: its name was taken",
                        quote_ident(name),
                        sources[i].path.display(),
                        quote_ident(&free)
                    ));
                    renamed
                }
            };
            conn.execute(&sql, []).map_err(|e| {
                Error::sqlite(
                    format!("{shown_db}: building index {}", quote_ident(&free)),
                    e,
                )
            })?;
        }
    }
    Ok(Summary {
        rows: rows_total,
        tables: plan.iter().map(|p| p.name.clone()).collect(),
        engine: Some(EngineUsed::Sqlite),
        notes,
        ..Summary::default()
    })
}

/// What a copy needs to know of a table's columns and key.
pub(crate) struct Layout {
    /// The columns an INSERT names: every column but generated ones.
    pub(crate) columns: Vec<String>,
    /// Every column's name in order, generated ones too, ASCII lowercased.
    pub(crate) all: Vec<String>,
    /// It has a generated column.
    pub(crate) generated: bool,
    /// `WITHOUT ROWID`.
    pub(crate) without_rowid: bool,
    /// Its INTEGER PRIMARY KEY is the rowid.
    pub(crate) ipk: bool,
    /// It has an index (its constraints' included).
    pub(crate) indexed: bool,
}

/// The layout of table `name` of the database `schema` of `conn`.
pub(crate) fn layout(conn: &Connection, schema: &str, name: &str) -> rusqlite::Result<Layout> {
    let cols: Vec<(String, String, i64, i64)> = conn
        .prepare("SELECT name, type, pk, hidden FROM pragma_table_xinfo(?1, ?2)")?
        .query_map([name, schema], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let without_rowid = conn.query_row(
        "SELECT wr FROM pragma_table_list WHERE schema = ?2 AND name = ?1",
        [name, schema],
        |r| r.get::<_, i64>(0),
    )? != 0;
    let (indexes, pk_index) = conn.query_row(
        "SELECT count(*), count(*) FILTER (WHERE origin = 'pk') FROM pragma_index_list(?1, ?2)",
        [name, schema],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )?;
    let pks: Vec<_> = cols.iter().filter(|c| c.2 > 0).collect();
    // A column `INTEGER PRIMARY KEY DESC` is not the rowid: its key is an index.
    let ipk = !without_rowid
        && pk_index == 0
        && pks.len() == 1
        && pks[0].1.eq_ignore_ascii_case("INTEGER");
    Ok(Layout {
        columns: cols
            .iter()
            .filter(|c| c.3 == 0)
            .map(|c| c.0.clone())
            .collect(),
        all: cols.iter().map(|c| c.0.to_ascii_lowercase()).collect(),
        generated: cols.iter().any(|c| c.3 == 2 || c.3 == 3),
        without_rowid,
        ipk,
        indexed: indexes > 0,
    })
}

/// The statement that appends table `t` of the input attached as `s{k}` to the target's
/// `table`: its rows in rowid order, the rowid too where `keep` names it, and a row that
/// conflicts decided by `rule`.
fn insert_sql(
    table: &str,
    k: usize,
    t: &SourceTable,
    keep: Option<&str>,
    whole: bool,
    rule: OnConflict,
) -> String {
    let cols: Vec<String> = t.columns.iter().map(|c| quote_ident(c)).collect();
    let mut list = cols.join(", ");
    if let Some(r) = keep {
        list = match list.is_empty() {
            true => r.to_string(),
            false => format!("{r}, {list}"),
        };
    }
    let or = match rule {
        OnConflict::Ignore => " OR IGNORE",
        OnConflict::Replace => " OR REPLACE",
        OnConflict::Fail | OnConflict::Update => "",
    };
    let order = match t.rowid {
        Rowid::Implicit(r) => format!(" ORDER BY {r}"),
        _ => String::new(),
    };
    let upsert = match rule {
        OnConflict::Update if !cols.is_empty() => format!(
            " ON CONFLICT DO UPDATE SET {}",
            cols.iter()
                .map(|c| format!("{c} = excluded.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => String::new(),
    };
    // `WHERE true`: an upsert after a SELECT needs it to parse.
    if whole {
        return format!(
            "INSERT{or} INTO main.{} SELECT * FROM \"s{k}\".{}{}{upsert}",
            quote_ident(table),
            quote_ident(&t.name),
            if upsert.is_empty() { "" } else { " WHERE true" },
        );
    }
    format!(
        "INSERT{or} INTO main.{} ({list}) SELECT {list} FROM \"s{k}\".{}{}{order}{upsert}",
        quote_ident(table),
        quote_ident(&t.name),
        if upsert.is_empty() { "" } else { " WHERE true" },
    )
}

/// `columns` for a message.
pub(crate) fn shown_columns(columns: &[String]) -> String {
    format!(
        "({})",
        columns
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The URI that opens `path` read-only (`file:` with every byte outside the unreserved
/// ones and `/` percent-encoded, so that `?`, `#` and `%` in a name are the name's).
fn read_only_uri(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?mode=ro");
    uri
}

/// `sql` (a `CREATE [UNIQUE] INDEX name …` as `sqlite_schema` holds it: the keywords as
/// SQLite writes them, then the name as written) with the index named `name` instead;
/// `None` if it does not start so.
pub(crate) fn renamed_index(sql: &str, name: &str) -> Option<String> {
    let rest = sql
        .strip_prefix("CREATE UNIQUE INDEX ")
        .map(|r| ("CREATE UNIQUE INDEX ", r))
        .or_else(|| {
            sql.strip_prefix("CREATE INDEX ")
                .map(|r| ("CREATE INDEX ", r))
        });
    let (head, rest) = rest?;
    let rest = rest.trim_start();
    let end = match rest.chars().next()? {
        q @ ('"' | '`' | '\'') => {
            // A quote doubled is the quote itself.
            let mut i = 1;
            let b = rest.as_bytes();
            loop {
                let at = rest[i..].find(q)? + i;
                if b.get(at + 1) == Some(&(q as u8)) {
                    i = at + 2;
                    continue;
                }
                break at + 1;
            }
        }
        '[' => rest.find(']')? + 1,
        _ => rest
            .find(|c: char| c.is_whitespace() || c == '(')
            .unwrap_or(rest.len()),
    };
    if end == 0 {
        return None;
    }
    Some(format!(
        "{head}{} {}",
        quote_ident(name),
        rest[end..].trim_start()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_is_renamed_whatever_quotes_its_name_has() {
        for (sql, want) in [
            ("CREATE INDEX i ON t(a)", "CREATE INDEX \"j\" ON t(a)"),
            (
                "CREATE UNIQUE INDEX [my idx] on t(a)",
                "CREATE UNIQUE INDEX \"j\" on t(a)",
            ),
            (
                "CREATE INDEX \"a\"\"b\" ON t(a)",
                "CREATE INDEX \"j\" ON t(a)",
            ),
            ("CREATE INDEX `x`  ON t(a)", "CREATE INDEX \"j\" ON t(a)"),
            ("CREATE INDEX 'x''y'\nON t(a)", "CREATE INDEX \"j\" ON t(a)"),
        ] {
            assert_eq!(renamed_index(sql, "j").as_deref(), Some(want), "{sql}");
        }
        assert_eq!(renamed_index("CREATE TABLE t(a)", "j"), None);
    }

    #[test]
    fn a_name_with_uri_characters_is_encoded() {
        let uri = read_only_uri(Path::new("/tmp/a b?c#d%e.db"));
        assert_eq!(uri, "file:/tmp/a%20b%3Fc%23d%25e.db?mode=ro");
    }
}
