//! SQLite files into a cluster that holds data (rqlite #1185 asks for it).
//!
//! The inputs are merged here first, into a new file in a temporary directory, by the
//! rules a merge into a new file follows ([`crate::sqlite_files`]): the inputs' tables
//! of one name become one, rowids numbered as those rules say. Then each table of that
//! file goes to the cluster as a load into a table that exists goes there:
//! - a table the cluster lacks is made by its declared `CREATE TABLE` (constraints,
//!   collations, `STRICT`, `WITHOUT ROWID`) and keeps the merged file's rowids, as a
//!   table a load makes does in a file; its indexes are built after its rows, named
//!   apart from every name the cluster has;
//! - a table the cluster has takes the rows as the load's `if_exists` allows, where its
//!   columns are the same (by name): an INTEGER PRIMARY KEY is data, so a key in the
//!   table already is a refused row; an implicit rowid is numbered anew, unless rowids
//!   are kept on request (a rowid in the table already is then refused).
//!
//! Rows go as the cluster sink sends any rows ([`TableLoad`]): requests that are each
//! one transaction with a row of the progress table, so a load stopped by a refused
//! row, a kill or a lost leader goes on where the cluster stopped when run again with
//! the same inputs (the merge is made again, the same rows in the same order).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value as Json;

use super::{shape, RqliteOptions};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::options::ImportOptions;
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::sink::rqlite::client::Client;
use crate::sink::rqlite::load::{cluster_table, mirror_of, plain, TableLoad};
use crate::sink::rqlite::progress::{create_progress_sql, progress_insert, read_resume, LoadKey};
use crate::sink::BatchSink;
use crate::sqlite_files::{self, Rowid, SourceTable, SqliteOptions};
use crate::summary::{self, Durable, EngineUsed, Summary};
use crate::table::IfExists;

/// Rows a batch read from the merged file holds.
const BATCH_ROWS: usize = 4096;

/// The progress key of table `table` of a load of `sources`: the inputs' names in
/// order, and their sizes together.
pub(super) fn load_key(sources: &[PathBuf], table: &str, primary_key: Vec<String>) -> LoadKey {
    LoadKey {
        input: sources_name(sources),
        table: table.to_string(),
        input_bytes: Some(
            sources
                .iter()
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .sum(),
        ),
        primary_key,
        resumable: true,
    }
}

/// The key under which a load records, in the request that makes its table, that it
/// made it (a finished load of no rows): a rerun then keeps rowids and builds indexes
/// as that load would.
fn made_key(key: &LoadKey) -> LoadKey {
    LoadKey {
        input: format!("{} (made the table)", key.input),
        ..key.clone()
    }
}

/// How messages and the progress table name the inputs together.
fn sources_name(sources: &[PathBuf]) -> String {
    let names: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
    match names.as_slice() {
        [one] => one.clone(),
        _ => format!("the merge of {}", names.join(" + ")),
    }
}

/// Loads the SQLite files `sources` (with `sq`) into the cluster of `client`, which
/// holds data; see the module's documentation.
pub(super) fn into_cluster(
    client: &Client,
    sources: &[PathBuf],
    sq: &SqliteOptions,
    opts: &ImportOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    // The merge: a new file, as a boot builds, whatever the cluster load's settings.
    let dir = tempfile::Builder::new()
        .prefix("liteload-merge-")
        .tempdir()
        .map_err(|e| Error::io(None, e))?;
    let merged = dir.path().join("merged.db");
    let mut local = opts.clone();
    local.durability = Some(Durability::AtomicNew);
    local.if_exists = IfExists::Fail;
    local.verify = false;
    if local.engine == crate::options::Engine::Sqlite {
        local.engine = crate::options::Engine::Auto;
    }
    let made = sqlite_files::import_sqlite(&merged, sources, sq, &local, progress)?;
    let read = sqlite_files::read_source(&merged, &[])?;
    let conn = Connection::open_with_flags(&merged, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| Error::sqlite("opening the merged file", e))?;
    let total: u64 = made.rows;
    progress.rows.store(0, Ordering::Relaxed);
    progress.rows_total.store(total, Ordering::Relaxed);

    let mut notes = made.notes.clone();
    // Every table is decided before any row is sent: one the load may not write to
    // refuses the whole load, as into a file.
    let decisions = read
        .tables
        .iter()
        .map(|t| decide(client, t, sources, sq, opts, &mut notes))
        .collect::<Result<Vec<Decision>>>()?;
    let mut tables = vec![];
    let mut rows = 0u64;
    std::thread::scope(|scope| -> Result<()> {
        for (t, d) in read.tables.iter().zip(decisions) {
            progress.check()?;
            progress.set_stage(Stage::Loading);
            let (name, written) = load_table(
                scope, client, &conn, t, d, sources, ropts, progress, &mut notes,
            )?;
            rows += written;
            tables.push(name);
        }
        Ok(())
    })?;
    let mut summary = Summary {
        rows,
        tables,
        engine: Some(EngineUsed::Rqlite),
        durability: Durable::Cluster,
        notes,
        ..Summary::default()
    };
    summary.bytes_read = sources
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// How one table goes to the cluster, as found there.
struct Decision {
    /// The cluster's name of it.
    actual: String,
    /// The statements (rqlite JSON) that make it ready (none when it is appended to).
    ready: Vec<String>,
    /// This load makes it (its indexes follow its rows).
    makes: bool,
    /// The name the rows' rowid is written by, where they keep it.
    rowid: Option<&'static str>,
    /// The primary key's columns of the table the rows go to.
    primary_key: Vec<String>,
}

/// Loads table `t` of the merged file `conn` into the cluster as `d` decided: returns
/// its name there and the rows this run wrote.
#[allow(clippy::too_many_arguments)]
fn load_table<'c, 'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    client: &'c Client,
    conn: &Connection,
    t: &SourceTable,
    d: Decision,
    sources: &[PathBuf],
    ropts: &RqliteOptions,
    progress: &Progress,
    notes: &mut Vec<String>,
) -> Result<(String, u64)>
where
    'c: 'scope,
{
    let mut columns: Vec<String> = d.rowid.iter().map(|r| r.to_string()).collect();
    columns.extend(t.columns.iter().cloned());
    let key = load_key(sources, &d.actual, d.primary_key.clone());
    let source: Arc<str> =
        format!("{} table {}", sources_name(sources), quote_ident(&t.name)).into();
    let load = TableLoad::start(
        scope,
        client,
        &d.actual,
        &columns,
        key,
        source.clone(),
        vec![plain(&create_progress_sql())],
        d.ready,
        shape(ropts),
        ropts.in_flight,
        notes,
    )?;
    let written = match load {
        None => 0,
        Some(mut load) => match send_rows(conn, t, d.rowid, &mut load, progress) {
            Ok(()) => load.end()?,
            Err(e) => return Err(load.abandon().unwrap_or(e)),
        },
    };
    if d.makes {
        progress.set_stage(Stage::Indexing);
        build_indexes(client, &d.actual, t, notes)?;
    }
    Ok((d.actual, written))
}

/// What table `t` needs in the cluster: made, replaced, or appended to, by the
/// load's rules; a table an earlier run of this load began is taken as it left it.
fn decide(
    client: &Client,
    t: &SourceTable,
    sources: &[PathBuf],
    sq: &SqliteOptions,
    opts: &ImportOptions,
    notes: &mut Vec<String>,
) -> Result<Decision> {
    let merged_rowid = match t.rowid {
        Rowid::Implicit(n) => Some(n),
        _ => None,
    };
    let primary_key = |mirror: &Connection, table: &str| -> Result<Vec<String>> {
        mirror
            .prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")
            .and_then(|mut st| {
                st.query_map([table], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .map_err(|e| Error::sqlite("reading a table's primary key", e))
    };
    let made = |mut ready: Vec<String>, actual: String| -> Result<Decision> {
        if !ready.is_empty() {
            // Recorded with the table's first rows: a rerun goes on as this load does.
            let key = made_key(&load_key(sources, &actual, vec![]));
            ready.push(progress_insert(&key, 1, 0, 0, 0, true));
        }
        Ok(Decision {
            primary_key: primary_key(&mirror_of(&t.sql)?, &t.name)?,
            actual,
            ready,
            makes: true,
            rowid: merged_rowid,
        })
    };
    let Some((actual, sql)) = cluster_table(client, &t.name)? else {
        return made(vec![plain(&t.sql)], t.name.clone());
    };
    // Begun by an earlier run of this load (its progress is recorded): taken as that
    // run left it, made by it where its first request recorded so.
    let key = load_key(sources, &actual, vec![]);
    let begun = !read_resume(client, &key)?.done.is_empty();
    if begun && read_resume(client, &made_key(&key))?.finished {
        return made(vec![], actual);
    }
    let mirror = mirror_of(&sql)?;
    let there = sqlite_files::layout(&mirror, "main", &actual)
        .map_err(|e| Error::sqlite("reading the cluster's table definition", e))?;
    match opts.if_exists {
        IfExists::Fail if !begun => {
            return Err(Error::schema(format!(
                "table {} exists in the cluster already, and a table that exists is not \
                 to be loaded into",
                quote_ident(&actual)
            )));
        }
        IfExists::Replace if !begun => {
            return made(
                vec![
                    plain(&format!("DROP TABLE {}", quote_ident(&actual))),
                    plain(&t.sql),
                ],
                actual,
            );
        }
        _ => {}
    }
    let want = sqlite_files::column_set(&t.columns);
    let has = sqlite_files::column_set(&there.columns);
    if want != has {
        return Err(Error::schema(format!(
            "table {} of the inputs has the columns {} where the cluster's has {}",
            quote_ident(&t.name),
            sqlite_files::shown_columns(&want),
            sqlite_files::shown_columns(&has)
        )));
    }
    let target_rowid = !there.without_rowid && !there.ipk;
    let rowid = match (sq.keep_rowids, merged_rowid, target_rowid) {
        (true, Some(_), true) => {
            let free = ["rowid", "oid", "_rowid_"]
                .into_iter()
                .find(|n| !there.all.iter().any(|c| c == n));
            if free.is_none() {
                notes.push(format!(
                    "the cluster's table {} names a column rowid, oid and _rowid_: its rows' rowids are numbered anew",
                    quote_ident(&actual)
                ));
            }
            free
        }
        _ => None,
    };
    Ok(Decision {
        primary_key: primary_key(&mirror, &actual)?,
        actual,
        ready: vec![],
        makes: false,
        rowid,
    })
}

/// Reads table `t`'s rows from the merged file in rowid order (key order for a table
/// without one), the rowid first where `rowid` names it, and writes them through `load`.
fn send_rows(
    conn: &Connection,
    t: &SourceTable,
    rowid: Option<&str>,
    load: &mut TableLoad<'_, '_>,
    progress: &Progress,
) -> Result<()> {
    let merged_rowid = match t.rowid {
        Rowid::Implicit(n) => Some(n),
        _ => None,
    };
    // The merged file's name of the rowid (the cluster's may differ).
    let mut list: Vec<String> = match (rowid, merged_rowid) {
        (Some(_), Some(r)) => vec![r.to_string()],
        (Some(_), None) => {
            return Err(Error::internal(
                "a rowid to keep that the merge does not name",
            ))
        }
        _ => vec![],
    };
    list.extend(t.columns.iter().map(|c| quote_ident(c)));
    // Without a name for the rowid (WITHOUT ROWID, or every name a column's), the
    // table's own order: key order, or rowid order.
    let order = merged_rowid.map_or(String::new(), |r| format!(" ORDER BY {r}"));
    // SQLite gives every table a column that is not generated: the list is not empty.
    let sql = format!(
        "SELECT {} FROM {}{order}",
        list.join(", "),
        quote_ident(&t.name)
    );
    let err = |e| {
        Error::sqlite(
            format!("reading table {} of the merge", quote_ident(&t.name)),
            e,
        )
    };
    let mut st = conn.prepare(&sql).map_err(err)?;
    let ncols = list.len();
    let mut batch = Batch::new(ncols);
    let mut q = st.query([]).map_err(err)?;
    let mut n = 0u64;
    let mut refuse = |_: usize, e: Error| -> Result<()> { Err(e) };
    while let Some(r) = q.next().map_err(err)? {
        n += 1;
        for (i, column) in list.iter().enumerate() {
            match r.get_ref(i).map_err(err)? {
                ValueRef::Null => batch.push(Cell::Null),
                ValueRef::Integer(v) => batch.push(Cell::Integer(v)),
                ValueRef::Real(v) => batch.push(Cell::Real(v)),
                ValueRef::Text(b) => match std::str::from_utf8(b) {
                    Ok(s) => batch.push_text(s),
                    Err(_) => {
                        return Err(Error::schema(format!(
                            "table {}, row {n}, column {}: a text that is not UTF-8, which rqlite's JSON API cannot carry",
                            quote_ident(&t.name),
                            column
                        )))
                    }
                },
                ValueRef::Blob(b) => batch.push_blob(b),
            }
        }
        // No lines in a database: the record (the row's place in the table) says where.
        batch.finish_row(RowOrigin { line: 0, record: n });
        if batch.rows() >= BATCH_ROWS {
            progress.check()?;
            let w = load.sink().write_batch(&batch, &mut refuse)?;
            progress.rows.fetch_add(w, Ordering::Relaxed);
            batch.clear(ncols);
        }
    }
    if !batch.is_empty() {
        let w = load.sink().write_batch(&batch, &mut refuse)?;
        progress.rows.fetch_add(w, Ordering::Relaxed);
    }
    Ok(())
}

/// Builds `t`'s indexes on the cluster's `table`, after its rows: each named apart from
/// every name the cluster has, and none the table has already (an earlier run built it).
fn build_indexes(
    client: &Client,
    table: &str,
    t: &SourceTable,
    notes: &mut Vec<String>,
) -> Result<()> {
    if t.indexes.is_empty() {
        return Ok(());
    }
    let text = |v: &Json| v.as_str().map(str::to_string);
    let objects: Vec<(String, String, Option<String>)> = client
        .query_rows(
            "SELECT name, tbl_name, sql FROM sqlite_schema WHERE name IS NOT NULL",
            &[],
        )?
        .iter()
        .map(|r| {
            (
                r.first().and_then(text).unwrap_or_default(),
                r.get(1).and_then(text).unwrap_or_default(),
                r.get(2).and_then(text),
            )
        })
        .collect();
    // Compared with the name set aside: the statement after it.
    let body = |sql: &str| sqlite_files::renamed_index(sql, "_");
    let mut taken = crate::names::Names::new();
    for (name, _, _) in &objects {
        taken.claim(name);
    }
    for (name, sql) in &t.indexes {
        let have = objects.iter().any(|(_, tbl, s)| {
            tbl.eq_ignore_ascii_case(table)
                && s.as_deref()
                    .and_then(body)
                    .is_some_and(|b| Some(b) == body(sql))
        });
        if have {
            continue;
        }
        let free = taken.allocate(name);
        let sql = if free == *name {
            sql.clone()
        } else {
            notes.push(format!(
                "index {} is {} in the cluster: its name was taken",
                quote_ident(name),
                quote_ident(&free)
            ));
            sqlite_files::renamed_index(sql, &free).ok_or_else(|| {
                Error::schema(format!(
                    "index {}: its name is taken in the cluster, and its statement is not one this copy can rename",
                    quote_ident(name)
                ))
            })?
        };
        let body = format!("[{}]", plain(&sql));
        client.execute(body.as_bytes(), true).map_err(Error::from)?;
    }
    Ok(())
}
