//! What the target table of a load into an existing file is, read by the plan before any
//! writer is touched (without a lock) and again by the writer inside its transaction:
//! absent, to replace, plain enough for SQLite's transfer of a side file's records, an
//! empty table whose definition a side file can repeat, or a table an upsert's side file
//! can be merged into in key order. What qualifies follows SQLite's transfer
//! optimization (insert.c, `xferOptimization`); [`crate::sink::target`] runs it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Hint, Result};
use crate::schema::quote_ident;
use crate::table::IfExists;
use crate::table::{self, TableColumn};
use crate::types::ColumnType;

/// The page writer only builds new files: an error if `db` exists.
pub(crate) fn refuse_existing(db: &Path) -> Result<()> {
    if db.exists() {
        return Err(Error::usage(format!(
            "{}: the direct engine builds a new file, but this one exists",
            db.display()
        ))
        .with_hint(Hint::SqliteEngine));
    }
    Ok(())
}

/// The destination table, as found inside the append's transaction.
pub(crate) enum Destination {
    /// No table by that name: this load creates it.
    New,
    /// A table (its actual name) to drop in the load's transaction and create anew.
    Replace { name: String },
    /// A table that reads as liteload creates them, without trigger: its actual name,
    /// columns and their types, and its indexes (key columns).
    Plain {
        name: String,
        columns: Vec<(String, ColumnType)>,
        indexes: Vec<Vec<String>>,
        /// The indexes' names, in the order of `indexes`.
        index_names: Vec<String>,
        /// Whether it has indexes and rows: then only the page writer in place takes it,
        /// merging each index's entries with the new ones (SQLite's transfer, which the
        /// side file ends with, copies index entries only into an empty table).
        merged: bool,
    },
    /// An empty table made beforehand with constraints the page writer does not
    /// check (NOT NULL, CHECK, DEFAULT, collations, UNIQUE and PRIMARY KEY indexes,
    /// STRICT): the side file repeats its definition word for word, so the transfer
    /// takes the two as the same and copies records and index entries unchecked. So the
    /// side file is checked first (NOT NULL and STRICT types record by record as they
    /// are written, UNIQUE indexes as they are built, CHECK by SQLite's `quick_check`
    /// of the finished table), and when anything fails there,
    /// its rows go in one at a time through SQLite's insert path instead, each refused
    /// one a bad record ([`exact_table`] says which tables qualify).
    Exact {
        name: String,
        columns: Vec<(String, ColumnType)>,
        table: ExactTable,
    },
}

/// The definition of a table that the side file repeats (see [`Destination::Exact`]).
#[derive(Clone, Debug)]
pub(crate) struct ExactTable {
    /// Its CREATE TABLE as SQLite keeps it.
    pub(crate) create: String,
    /// Its indexes: name, CREATE INDEX text (`None` for a constraint's automatic
    /// index), key columns (table columns, ascending, BINARY) and whether it is UNIQUE.
    pub(crate) indexes: Vec<ExactIndex>,
    /// For each column in order, whether it is NOT NULL.
    pub(crate) not_null: Vec<bool>,
    /// Whether the table is STRICT.
    pub(crate) strict: bool,
    /// Whether its text may hold a CHECK constraint (it names CHECK anywhere, a column
    /// called `checked` included): only SQLite can evaluate one.
    pub(crate) checks: bool,
}

/// One index of an [`ExactTable`].
#[derive(Clone, Debug)]
pub(crate) struct ExactIndex {
    pub(crate) name: String,
    pub(crate) sql: Option<String>,
    pub(crate) columns: Vec<String>,
    pub(crate) unique: bool,
}

/// What `table` is in the existing database at `db` under `if_exists` (see
/// [`destination`]), read without a lock, for a plan: the append reads it again inside
/// its transaction.
pub(crate) fn inspect(db: &Path, table: &str, if_exists: IfExists) -> Result<Option<Destination>> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(format!("opening {}", db.display()), e))?;
    crate::sqlite_info::configure(&conn)
        .map_err(|e| Error::sqlite(format!("preparing {}", db.display()), e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| Error::sqlite(format!("preparing {}", db.display()), e))?;
    destination(&conn, table, if_exists)
}

/// What `table` is in the database under `if_exists`: absent, a table to replace, a
/// table this path can append to, or `None` when the transfer cannot apply to it
/// (or `fail` refuses it, which SQLite's path reports).
pub(crate) fn destination(
    conn: &Connection,
    table: &str,
    if_exists: IfExists,
) -> Result<Option<Destination>> {
    // SQLite attaches only files of the main file's text encoding; the page writer
    // writes UTF-8.
    let encoding: String = conn
        .query_row("PRAGMA encoding", [], |r| r.get(0))
        .map_err(|e| Error::sqlite("reading the database's text encoding", e))?;
    if encoding != "UTF-8" {
        return Ok(None);
    }
    let Some((name, columns)) = table::existing_columns(conn, table)? else {
        return Ok(Some(Destination::New));
    };
    match if_exists {
        IfExists::Append => {}
        IfExists::Replace => return Ok(Some(Destination::Replace { name })),
        IfExists::Fail => return Ok(None),
    }
    let (Some(plain), Some(indexes)) = (
        plain_columns(conn, &name, &columns)?,
        plain_indexes(conn, &name)?,
    ) else {
        if !is_empty(conn, &name)? {
            return Ok(None);
        }
        return exact_table(conn, &name, &columns);
    };
    let columns = plain;
    let merged = !indexes.is_empty() && !is_empty(conn, &name)?;
    let (index_names, indexes) = indexes.into_iter().unzip();
    Ok(Some(Destination::Plain {
        name,
        columns,
        indexes,
        index_names,
        merged,
    }))
}

/// Whether a side file takes an input of `columns` (in the order its batches carry
/// them) into `dest`: a new or replaced table always; an existing one (not one whose
/// indexes only a merge in place takes, see [`Destination::Plain`]) when the input has
/// the table's columns in the table's order, no column may appear after the sample
/// (`grows`: JSON and XML may name one later, which such a table does not have), and no
/// column type is given (`types_given`: the table's types are the ones used). The plan
/// chooses the side file by this rule; the side file's writer reads the table again
/// inside its transaction and holds it to the same rule ([`changed_since_planned`] when
/// it no longer holds).
pub(crate) fn side_file_takes(
    dest: &Destination,
    columns: &[String],
    grows: bool,
    types_given: bool,
) -> bool {
    match dest {
        Destination::Plain { merged: true, .. } => false,
        d => in_place_takes(d, columns, grows, types_given),
    }
}

/// [`side_file_takes`] for the page writer in place, which also takes a table with rows
/// and indexes (merging them).
pub(crate) fn in_place_takes(
    dest: &Destination,
    columns: &[String],
    grows: bool,
    types_given: bool,
) -> bool {
    match dest {
        Destination::New | Destination::Replace { .. } => true,
        Destination::Plain { columns: have, .. } | Destination::Exact { columns: have, .. } => {
            !grows
                && !types_given
                && have.len() == columns.len()
                && have
                    .iter()
                    .zip(columns)
                    .all(|((c, _), i)| c.eq_ignore_ascii_case(i))
        }
    }
}

/// The error of a writer that finds, inside its transaction, that table `table` is no
/// longer what the plan read without a lock (another connection changed it in between):
/// nothing was written, and a new plan reads it as it is now.
pub(crate) fn changed_since_planned(table: &str) -> Error {
    Error::schema(format!(
        "table {} changed after the load was planned (another connection altered, made \
         or dropped it, or added rows); nothing was written: run the load again",
        quote_ident(table)
    ))
}

/// Whether table `name` has no row.
fn is_empty(conn: &Connection, name: &str) -> Result<bool> {
    let sql = format!("SELECT NOT EXISTS (SELECT 1 FROM {})", quote_ident(name));
    conn.query_row(&sql, [], |r| r.get(0))
        .map_err(|e| Error::sqlite(format!("running {sql}"), e))
}

/// Table `name` as a [`Destination::Exact`] (its columns and definition) when a side
/// file can repeat it: a rowid table (not WITHOUT ROWID, no INTEGER PRIMARY KEY,
/// whose rowids the page writer does not order) whose every column has INTEGER, REAL
/// or TEXT affinity (STRICT's INT, INTEGER, REAL and TEXT among them) and is neither
/// hidden nor generated; no trigger and no foreign key; every index on table columns,
/// ascending, BINARY and not partial (UNIQUE and PRIMARY KEY ones included). NOT NULL,
/// CHECK, DEFAULT, a column's collation and STRICT are what the side file checks or
/// copies. `None` otherwise.
pub(crate) fn exact_table(
    conn: &Connection,
    name: &str,
    columns: &[TableColumn],
) -> Result<Option<Destination>> {
    let ctx = |e| Error::sqlite(format!("reading the schema of {}", quote_ident(name)), e);
    let mut typed = vec![];
    for c in columns {
        match ColumnType::from_declared(&c.declared) {
            Some(t) => typed.push((c.name.clone(), t)),
            None => return Ok(None),
        }
    }
    let not_null: Vec<bool> = conn
        .prepare("SELECT \"notnull\" FROM pragma_table_info(?1) ORDER BY cid")
        .and_then(|mut st| {
            st.query_map([name], |r| r.get::<_, i64>(0).map(|n| n != 0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx)?;
    let (create, hidden, triggers, keys, rowid_alias): (Option<String>, i64, i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1), \
             (SELECT count(*) FROM pragma_table_xinfo(?1) WHERE hidden != 0), \
             (SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1), \
             (SELECT count(*) FROM pragma_foreign_key_list(?1)), \
             (SELECT count(*) = 1 AND max(upper(type)) = 'INTEGER' \
                FROM pragma_table_info(?1) WHERE pk > 0)",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .map_err(ctx)?;
    let (strict, without_rowid): (i64, i64) = conn
        .query_row(
            "SELECT strict, wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap_or((0, 1));
    let Some(create) = create else {
        return Ok(None);
    };
    if hidden != 0
        || triggers != 0
        || keys != 0
        || rowid_alias != 0
        || without_rowid != 0
        || not_null.len() != typed.len()
    {
        return Ok(None);
    }
    let mut list = conn
        .prepare(
            "SELECT l.name, l.\"unique\", l.partial, s.sql FROM pragma_index_list(?1) AS l \
             LEFT JOIN sqlite_schema AS s ON s.type = 'index' AND s.name = l.name \
             ORDER BY l.name",
        )
        .map_err(ctx)?;
    let found = list
        .query_map([name], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(ctx)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(ctx)?;
    let mut keys = conn.prepare(KEY_COLUMNS).map_err(ctx)?;
    let mut indexes = vec![];
    for (index, unique, partial, sql) in found {
        if partial != 0 {
            return Ok(None);
        }
        let Some(key) = plain_key(&mut keys, &index).map_err(ctx)? else {
            return Ok(None);
        };
        indexes.push(ExactIndex {
            name: index,
            sql,
            columns: key,
            unique: unique != 0,
        });
    }
    Ok(Some(Destination::Exact {
        name: name.to_string(),
        columns: typed,
        table: ExactTable {
            checks: create.to_ascii_uppercase().contains("CHECK"),
            create,
            indexes,
            not_null,
            strict: strict != 0,
        },
    }))
}

/// An existing table whose rows an upsert's side file can be merged into by one
/// statement in key order (see [`merge_target`]).
#[derive(Clone, Debug)]
pub(crate) struct MergeTarget {
    /// The table's actual name.
    pub(crate) name: String,
    /// The input's columns as the table spells them, in the input's order, with the
    /// table's types.
    pub(crate) columns: Vec<(String, ColumnType)>,
    /// The key: the table's INTEGER PRIMARY KEY (its rowid), one of `columns`.
    pub(crate) key: String,
}

/// Table `table` as a [`MergeTarget`] for rows of `input` columns whose key is `key`
/// (empty: the table's primary key), when merging them in key order stores what SQLite
/// stores merging them in input order: the key is the table's INTEGER PRIMARY KEY (the
/// rowid, so a new row's rowid is its key, whatever the order) and the table has no
/// other UNIQUE index (whose conflicts would depend on the order), no trigger and no
/// foreign key, and every input column is one of the table's, with INTEGER, REAL or TEXT
/// affinity. `None` otherwise (or when there is no such table).
pub(crate) fn merge_target(
    conn: &Connection,
    table: &str,
    input: &[String],
    key: &[String],
) -> Result<Option<MergeTarget>> {
    let encoding: String = conn
        .query_row("PRAGMA encoding", [], |r| r.get(0))
        .map_err(|e| Error::sqlite("reading the database's text encoding", e))?;
    let Some((name, columns)) = table::existing_columns(conn, table)? else {
        return Ok(None);
    };
    if encoding != "UTF-8" {
        return Ok(None);
    }
    let ctx = |e| Error::sqlite(format!("reading the schema of {}", quote_ident(&name)), e);
    let (pk, unique, triggers, keys, without_rowid): (Option<String>, i64, i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT CASE WHEN count(*) = 1 AND upper(max(type)) = 'INTEGER' \
                       THEN max(name) END FROM pragma_table_info(?1) WHERE pk > 0), \
             (SELECT count(*) FROM pragma_index_list(?1) WHERE \"unique\"), \
             (SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1), \
             (SELECT count(*) FROM pragma_foreign_key_list(?1)), \
             (SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND name = ?1 \
                AND wr)",
            [&name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .map_err(ctx)?;
    let Some(pk) = pk else {
        return Ok(None);
    };
    let named = match key {
        [] => true,
        [k] => k.eq_ignore_ascii_case(&pk),
        _ => false,
    };
    if !named || unique != 0 || triggers != 0 || keys != 0 || without_rowid != 0 {
        return Ok(None);
    }
    let mut typed = vec![];
    for c in input {
        let Some(col) = columns.iter().find(|t| t.name.eq_ignore_ascii_case(c)) else {
            return Ok(None);
        };
        let Some(ty) = ColumnType::from_declared(&col.declared) else {
            return Ok(None);
        };
        typed.push((col.name.clone(), ty));
    }
    if !typed.iter().any(|(c, _)| c.eq_ignore_ascii_case(&pk)) {
        return Ok(None);
    }
    Ok(Some(MergeTarget {
        name,
        columns: typed,
        key: pk,
    }))
}

/// The columns of table `name` with the types the side file gives them, when SQLite's
/// transfer takes the side file's table (liteload's own CREATE TABLE of those columns)
/// as the same (insert.c, `xferOptimization`): every column's affinity INTEGER, REAL or
/// TEXT, and none NOT NULL, with a DEFAULT, a collation, part of a PRIMARY KEY, hidden or
/// generated; no CHECK, no foreign key, no trigger; neither STRICT nor WITHOUT ROWID.
/// `None` otherwise. Indexes are [`plain_indexes`]' to judge.
fn plain_columns(
    conn: &Connection,
    name: &str,
    columns: &[TableColumn],
) -> Result<Option<Vec<(String, ColumnType)>>> {
    let ctx = |e| Error::sqlite(format!("reading the schema of {}", quote_ident(name)), e);
    let mut typed = vec![];
    for c in columns {
        match ColumnType::from_declared(&c.declared) {
            Some(t) => typed.push((c.name.clone(), t)),
            None => return Ok(None),
        }
    }
    let mut st = conn
        .prepare(
            "SELECT count(*) FROM pragma_table_xinfo(?1) \
             WHERE \"notnull\" != 0 OR dflt_value IS NOT NULL OR pk != 0 OR hidden != 0",
        )
        .map_err(ctx)?;
    let constrained: i64 = st.query_row([name], |r| r.get(0)).map_err(ctx)?;
    let (sql, triggers, keys): (String, i64, i64) = conn
        .query_row(
            "SELECT (SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1), \
             (SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1), \
             (SELECT count(*) FROM pragma_foreign_key_list(?1))",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(ctx)?;
    // STRICT and WITHOUT ROWID (SQLite 3.37 on; an older library cannot tell: no).
    let special: i64 = conn
        .query_row(
            "SELECT strict OR wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap_or(1);
    // No pragma shows a CHECK constraint or a column's collation: the table's text must
    // not name either (a column called `checked` merely sends the load to SQLite's path).
    let text = sql.to_ascii_uppercase();
    if constrained != 0
        || triggers != 0
        || keys != 0
        || special != 0
        || text.contains("CHECK")
        || text.contains("COLLATE")
    {
        return Ok(None);
    }
    Ok(Some(typed))
}

/// An index's name and key columns.
type NamedKey = (String, Vec<String>);

/// The name and key columns of each index on table `name`, when every one is an index the page
/// writer writes and SQLite's transfer takes as the same (insert.c,
/// `xferCompatibleIndex`): made by CREATE INDEX, on table columns in ascending order
/// with the BINARY collation, not partial, and not UNIQUE (into a table with such an
/// index SQLite's path turns a duplicate into a bad record, where the page writer would
/// fail the load). `None` otherwise.
fn plain_indexes(conn: &Connection, name: &str) -> Result<Option<Vec<NamedKey>>> {
    let ctx = |e| Error::sqlite(format!("reading the indexes of {}", quote_ident(name)), e);
    let mut list = conn
        .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1)")
        .map_err(ctx)?;
    let found = list
        .query_map([name], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .map_err(ctx)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(ctx)?;
    let mut keys = conn.prepare(KEY_COLUMNS).map_err(ctx)?;
    let mut indexes = vec![];
    for (index, unique, origin, partial) in found {
        if unique != 0 || origin != "c" || partial != 0 {
            return Ok(None);
        }
        let Some(key) = plain_key(&mut keys, &index).map_err(ctx)? else {
            return Ok(None);
        };
        indexes.push((index, key));
    }
    Ok(Some(indexes))
}

/// The key columns of an index, with their order and collation (for [`plain_key`]).
const KEY_COLUMNS: &str =
    "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno";

/// The key columns of `index` when each is a table column, ascending, BINARY (what the
/// page writer orders by); `None` otherwise. `keys` is [`KEY_COLUMNS`] prepared.
fn plain_key(
    keys: &mut rusqlite::Statement<'_>,
    index: &str,
) -> rusqlite::Result<Option<Vec<String>>> {
    let cols = keys
        .query_map([index], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut key = vec![];
    for (col, desc, coll) in cols {
        match col {
            Some(c) if desc == 0 && coll.as_deref() == Some("BINARY") => key.push(c),
            _ => return Ok(None),
        }
    }
    Ok(Some(key))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const COLUMNS: usize = 12;

    /// A CREATE TABLE of `name` with COLUMNS plain columns (INTEGER, TEXT, REAL in turn),
    /// as liteload makes them.
    pub(crate) fn plain_create(name: &str) -> String {
        let cols: Vec<(String, ColumnType)> = (0..COLUMNS)
            .map(|k| {
                let t = [ColumnType::Integer, ColumnType::Text, ColumnType::Real][k % 3];
                (format!("c{k}"), t)
            })
            .collect();
        table::create_sql(name, &cols, &[])
    }

    fn with_check(create: &str) -> String {
        let end = create.rfind(')').expect("a CREATE TABLE ends with )");
        format!("{}, CHECK (c0 > 0))", &create[..end])
    }

    /// Tables whose columns SQLite's transfer takes as the side file's qualify, however
    /// they are written; any constraint, default, collation, trigger or foreign key, and
    /// any index but plain ascending BINARY ones, disqualifies.
    #[test]
    fn plain_tables_qualify_and_others_do_not() -> rusqlite::Result<()> {
        let c = Connection::open_in_memory()?;
        let cases = [
            (plain_create("t"), true),
            (
                "CREATE TABLE t (a int, b VARCHAR(10), c DOUBLE, \"d e\" text)".into(),
                true,
            ),
            ("CREATE TABLE t (a INTEGER, b TEXT UNIQUE)".into(), true),
            (plain_create("t").replace("TEXT", "TEXT NOT NULL"), false),
            (plain_create("t").replace("REAL", "REAL DEFAULT 1"), false),
            (
                plain_create("t").replace("TEXT", "TEXT COLLATE NOCASE"),
                false,
            ),
            (format!("{} STRICT", plain_create("t")), false),
            (with_check(&plain_create("t")), false),
            ("CREATE TABLE t (a)".to_string(), false),
            ("CREATE TABLE t (a NUMERIC)".to_string(), false),
            (
                "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)".to_string(),
                false,
            ),
            (
                "CREATE TABLE t (a TEXT PRIMARY KEY, b TEXT) WITHOUT ROWID".to_string(),
                false,
            ),
            (
                "CREATE TABLE t (a INTEGER REFERENCES other (x))".to_string(),
                false,
            ),
            (
                "CREATE TABLE t (a INTEGER, b INTEGER AS (a + 1))".to_string(),
                false,
            ),
        ];
        c.execute_batch("CREATE TABLE other (x INTEGER PRIMARY KEY)")?;
        for (create, plain) in cases {
            c.execute_batch(&format!("DROP TABLE IF EXISTS t; {create}"))
                .unwrap_or_else(|e| panic!("{create}: {e}"));
            let (name, cols) = table::existing_columns(&c, "T").unwrap().unwrap();
            let got = plain_columns(&c, &name, &cols).unwrap().is_some();
            assert_eq!(got, plain, "{create}");
        }
        // A UNIQUE constraint is an index the page writer would judge otherwise.
        assert!(plain_indexes(&c, "t").unwrap().is_some());
        c.execute_batch("DROP TABLE t; CREATE TABLE t (a INTEGER, b TEXT UNIQUE)")?;
        assert!(plain_indexes(&c, "t").unwrap().is_none());
        c.execute_batch(&format!("DROP TABLE t; {}", plain_create("t")))?;
        for (extra, plain) in [
            ("CREATE INDEX i ON t (c0, c1)", true),
            ("CREATE UNIQUE INDEX i ON t (c0)", false),
            ("CREATE INDEX i ON t (c0 DESC)", false),
            ("CREATE INDEX i ON t (c1 COLLATE NOCASE)", false),
            ("CREATE INDEX i ON t (c0) WHERE c0 > 0", false),
            ("CREATE INDEX i ON t (c0 + 1)", false),
        ] {
            c.execute_batch(extra)?;
            let got = plain_indexes(&c, "t").unwrap().is_some();
            assert_eq!(got, plain, "{extra}");
            c.execute_batch("DROP INDEX i")?;
        }
        c.execute_batch("CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END")?;
        let (name, cols) = table::existing_columns(&c, "t").unwrap().unwrap();
        assert!(plain_columns(&c, &name, &cols).unwrap().is_none());
        Ok(())
    }
}
