//! What a copy from MySQL reads: a database's base tables (or some of them, or a
//! query's result), each table's columns as a `SELECT` of them describes them, its keys
//! and indexes, and the pieces its rows are read in; and every object of the database
//! it does not copy, named for the summary.

use mysql::prelude::Queryable;
use mysql::Conn;

use super::connect::Server;
use super::decode::Kind;
use super::read::{quote, Piece};
use crate::error::{Error, Result};
use crate::table::{ForeignKey, IndexSpec};

/// A table (or query) to copy.
pub(crate) struct Table {
    /// Its name in SQLite.
    pub(crate) name: String,
    /// Its database and name on the server (`None` for a query).
    pub(crate) on_server: Option<(String, String)>,
    /// Shown in messages: `database.table`, or `query`.
    pub(crate) shown: String,
    pub(crate) columns: Vec<(String, Kind)>,
    /// The one-column integer primary key (an index into `columns`).
    pub(crate) rowid: Option<usize>,
    pub(crate) indexes: Vec<IndexSpec>,
    /// Its storage engine (`InnoDB`, `MyISAM`, …; empty for a view or a query).
    pub(crate) engine: String,
    /// Whether it is a view (copied as a table of its rows).
    pub(crate) view: bool,
    /// The statement that reads it whole.
    select: String,
}

/// The columns a statement's result has, by their kinds.
fn columns_of(
    conn: &mut Conn,
    server: &Server,
    sql: &str,
    shown: &str,
    decimals_real: bool,
) -> Result<Vec<(String, Kind)>> {
    let stmt = conn
        .prep(sql)
        .map_err(|e| server.error(&format!("describing {shown}"), &e))?;
    let cols = stmt
        .columns()
        .iter()
        .map(|c| (c.name_str().into_owned(), Kind::of(c, decimals_real)))
        .collect();
    let _ = conn.close(stmt);
    Ok(cols)
}

/// A query's result, as the table `name`.
pub(crate) fn query(
    conn: &mut Conn,
    server: &Server,
    sql: &str,
    name: &str,
    decimals_real: bool,
) -> Result<Table> {
    let columns = columns_of(conn, server, sql, "the query", decimals_real)?;
    if columns.is_empty() {
        return Err(Error::usage(
            "the query returns no columns: it must be a SELECT",
        ));
    }
    Ok(Table {
        name: name.to_string(),
        on_server: None,
        shown: "query".into(),
        columns,
        rowid: None,
        indexes: vec![],
        engine: String::new(),
        view: false,
        select: sql.to_string(),
    })
}

/// The base tables of `database` (only `wanted`, by name, where it names any) in name
/// order, with notes on the indexes that cannot be carried.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tables(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    wanted: &[String],
    views: bool,
    decimals_real: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Table>> {
    let failed = |e: mysql::Error| server.error("reading the list of tables", &e);
    let listed: Vec<(String, Option<String>)> = conn
        .exec(
            "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? AND (TABLE_TYPE = 'BASE TABLE' OR (? AND TABLE_TYPE = 'VIEW')) \
             ORDER BY TABLE_NAME",
            (database, views),
        )
        .map_err(failed)?;
    let view_sql: Vec<(String, String)> = match views {
        true => conn
            .exec(
                "SELECT TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?",
                (database,),
            )
            .map_err(failed)?,
        false => vec![],
    };
    for w in wanted {
        if !listed.iter().any(|(t, _)| t == w) {
            return Err(Error::usage(format!(
                "database {database}: no table {w:?} (the names of its tables are case-sensitive as the server's are)"
            )));
        }
    }
    let mut out = vec![];
    for (name, engine) in listed {
        if !wanted.is_empty() && !wanted.contains(&name) {
            continue;
        }
        let shown = format!("{database}.{name}");
        let from = format!("{}.{}", quote(database), quote(&name));
        let columns = columns_of(
            conn,
            server,
            &format!("SELECT * FROM {from}"),
            &shown,
            decimals_real,
        )?;
        let list: Vec<String> = columns.iter().map(|(c, _)| quote(c)).collect();
        let mut t = Table {
            select: format!("SELECT {} FROM {from}", list.join(", ")),
            name,
            on_server: Some((database.to_string(), String::new())),
            shown,
            columns,
            rowid: None,
            indexes: vec![],
            engine: engine.unwrap_or_default(),
            view: false,
        };
        if let Some((_, n)) = &mut t.on_server {
            n.clone_from(&t.name);
        }
        if let Some((_, sql)) = view_sql.iter().find(|(v, _)| *v == t.name) {
            notes.push(format!(
                "view {} copied as a table of its rows; its SQL (MySQL's, not SQLite's): {sql}",
                t.shown
            ));
            t.engine.clear();
            t.view = true;
            out.push(t);
            continue;
        }
        keys(conn, server, database, &mut t, notes)?;
        out.push(t);
    }
    Ok(out)
}

/// `t`'s primary key and indexes: a one-column signed integer primary key is its
/// INTEGER PRIMARY KEY; any other primary key and every UNIQUE index a UNIQUE index;
/// every other index on whole columns an index. Prefix, full-text, spatial and
/// functional indexes are skipped, each with a note.
fn keys(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    t: &mut Table,
    notes: &mut Vec<String>,
) -> Result<()> {
    type Part = (String, i64, Option<String>, Option<i64>, String);
    let parts: Vec<Part> = conn
        .exec(
            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART, INDEX_TYPE \
             FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX",
            (database, t.name.as_str()),
        )
        .map_err(|e| server.error(&format!("reading the indexes of {}", t.shown), &e))?;
    let mut i = 0;
    while i < parts.len() {
        let name = parts[i].0.clone();
        let mut j = i;
        while j < parts.len() && parts[j].0 == name {
            j += 1;
        }
        let group = &parts[i..j];
        i = j;
        let unique = group[0].1 == 0;
        let skip = if group.iter().any(|p| p.2.is_none()) {
            Some("an index on an expression")
        } else if group.iter().any(|p| p.3.is_some()) {
            Some("an index on a prefix of a column")
        } else if matches!(group[0].4.as_str(), "FULLTEXT" | "SPATIAL" | "VECTOR") {
            Some("not a b-tree index")
        } else {
            None
        };
        if let Some(why) = skip {
            notes.push(format!("{}: index {name:?} not copied ({why})", t.shown));
            continue;
        }
        let cols: Vec<String> = group.iter().filter_map(|p| p.2.clone()).collect();
        let at: Vec<Option<usize>> = cols
            .iter()
            .map(|c| {
                t.columns
                    .iter()
                    .position(|(n, _)| n.eq_ignore_ascii_case(c))
            })
            .collect();
        if at.iter().any(Option::is_none) {
            notes.push(format!(
                "{}: index {name:?} not copied (a column it names is not read)",
                t.shown
            ));
            continue;
        }
        let cols: Vec<String> = at
            .iter()
            .flatten()
            .map(|&k| t.columns[k].0.clone())
            .collect();
        if name == "PRIMARY" {
            if let [Some(k)] = at.as_slice() {
                if t.columns[*k].1 == Kind::Int {
                    t.rowid = Some(*k);
                    continue;
                }
            }
            t.indexes.push(IndexSpec::new(cols, true));
            continue;
        }
        let mut spec = IndexSpec::new(cols, unique);
        spec.name = Some(name);
        t.indexes.push(spec);
    }
    Ok(())
}

/// The pieces `t` is read in, on a connection inside the snapshot: `want` ranges of its
/// integer key, in key order (as the page writer takes an INTEGER PRIMARY KEY), or the
/// whole table in one.
pub(crate) fn pieces(
    conn: &mut Conn,
    server: &Server,
    t: &Table,
    want: usize,
) -> Result<Vec<Piece>> {
    let whole = || {
        vec![Piece {
            sql: t.select.clone(),
            params: vec![],
        }]
    };
    let (Some(k), Some(_)) = (t.rowid, &t.on_server) else {
        return Ok(whole());
    };
    let key = quote(&t.columns[k].0);
    let range: Option<(Option<i64>, Option<i64>)> = conn
        .query_first(format!(
            "SELECT MIN({key}), MAX({key}) FROM ({}) AS t",
            t.select
        ))
        .map_err(|e| server.error(&format!("reading the key range of {}", t.shown), &e))?;
    let ordered = format!("{} WHERE {key} BETWEEN ? AND ? ORDER BY {key}", t.select);
    let Some((Some(lo), Some(hi))) = range else {
        return Ok(whole());
    };
    let span = i128::from(hi) - i128::from(lo) + 1;
    let n = i128::try_from(want.max(1)).unwrap_or(1).min(span);
    let step = (span + n - 1) / n;
    let mut out = vec![];
    let mut start = i128::from(lo);
    while start <= i128::from(hi) {
        let end = (start + step - 1).min(i128::from(hi));
        out.push(Piece {
            sql: ordered.clone(),
            params: vec![start as i64, end as i64],
        });
        start = end + 1;
    }
    Ok(out)
}

/// Every object of `database` the copy leaves behind, named with why: views (unless
/// `views` copied them), triggers, routines, events, foreign keys (unless
/// `foreign_keys`: [`foreign_keys`] named those it did not declare) and the CHECK
/// constraints of the copied tables not in `carried` (see [`checks`]).
pub(crate) fn not_copied(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    copied: &[String],
    (views, foreign_keys): (bool, bool),
    carried: &[String],
    notes: &mut Vec<String>,
) -> Result<()> {
    let failed = |e: mysql::Error| server.error("reading what is not copied", &e);
    let views: Vec<String> = match views {
        true => vec![],
        false => conn
            .exec(
                "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? ORDER BY 1",
                (database,),
            )
            .map_err(failed)?,
    };
    for v in views {
        notes.push(format!(
            "view {database}.{v} not copied (only base tables are)"
        ));
    }
    let triggers: Vec<(String, String)> = conn
        .exec(
            "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS \
             WHERE TRIGGER_SCHEMA = ? ORDER BY 1",
            (database,),
        )
        .map_err(failed)?;
    for (tr, on) in triggers {
        notes.push(format!(
            "trigger {tr} on {database}.{on} not copied (MySQL's trigger SQL is not SQLite's)"
        ));
    }
    let routines: Vec<(String, String)> = conn
        .exec(
            "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES \
             WHERE ROUTINE_SCHEMA = ? ORDER BY 1",
            (database,),
        )
        .map_err(failed)?;
    for (r, kind) in routines {
        notes.push(format!(
            "{} {database}.{r} not copied (SQLite has none)",
            kind.to_lowercase()
        ));
    }
    let events: Vec<String> = conn
        .exec(
            "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY 1",
            (database,),
        )
        .map_err(failed)?;
    for e in events {
        notes.push(format!(
            "event {database}.{e} not copied (SQLite has no scheduler)"
        ));
    }
    let fks: Vec<(String, String, String)> = conn
        .exec(
            "SELECT CONSTRAINT_NAME, TABLE_NAME, REFERENCED_TABLE_NAME \
             FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? ORDER BY 2, 1",
            (database,),
        )
        .map_err(failed)?;
    for (name, table, to) in fks
        .into_iter()
        .filter(|f| !foreign_keys && copied.contains(&f.1))
    {
        notes.push(format!(
            "foreign key {name} of {database}.{table} (to {to}) not declared (the rows are copied as they are)"
        ));
    }
    for (name, table, clause) in check_clauses(conn, server, database)?
        .into_iter()
        .filter(|c| copied.contains(&c.1) && !carried.contains(&format!("{}.{}", c.1, c.0)))
    {
        notes.push(format!(
            "CHECK constraint {name} of {database}.{table} not carried ({clause}: SQLite would not evaluate it as MySQL does)"
        ));
    }
    Ok(())
}

/// Every CHECK constraint of `database`: its name, its table's and its clause.
fn check_clauses(
    conn: &mut Conn,
    server: &Server,
    database: &str,
) -> Result<Vec<(String, String, String)>> {
    // CHECK_CONSTRAINTS is there from MySQL 8.0.16 and MariaDB 10.2 (older servers have
    // no CHECKs to name); MariaDB's has the table's name, MySQL's is joined to it.
    let mariadb = "SELECT CONSTRAINT_NAME, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS \
                   WHERE CONSTRAINT_SCHEMA = ? ORDER BY 2, 1";
    let mysql = "SELECT tc.CONSTRAINT_NAME, tc.TABLE_NAME, cc.CHECK_CLAUSE \
                 FROM information_schema.TABLE_CONSTRAINTS tc JOIN information_schema.CHECK_CONSTRAINTS cc \
                 ON cc.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND cc.CONSTRAINT_NAME = tc.CONSTRAINT_NAME \
                 WHERE tc.CONSTRAINT_TYPE = 'CHECK' AND tc.CONSTRAINT_SCHEMA = ? ORDER BY 2, 1";
    // ER_BAD_FIELD_ERROR (no TABLE_NAME: MySQL), ER_UNKNOWN_TABLE (no such view).
    let code = |e: &mysql::Error| match e {
        mysql::Error::MySqlError(m) => m.code,
        _ => 0,
    };
    match conn.exec(mariadb, (database,)) {
        Err(e) if code(&e) == 1054 => conn.exec(mysql, (database,)),
        other => other,
    }
    .or_else(|e| if code(&e) == 1109 { Ok(vec![]) } else { Err(e) })
    .map_err(|e| server.error("reading the CHECK constraints", &e))
}

/// The CHECK constraints of the copied `tables` that SQLite evaluates as MySQL does on
/// the values the copy stores (see [`crate::source::checks`]): for each table (in
/// `tables`' order) each constraint's name and SQLite's expression. Each one declared
/// is added to `carried` (`table.name`); [`not_copied`] names the others.
pub(crate) fn checks(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    tables: &[Table],
    carried: &mut Vec<String>,
) -> Result<Vec<Vec<(String, String)>>> {
    use crate::source::checks::{to_sqlite, Class, Dialect};
    let mut out = vec![vec![]; tables.len()];
    for (name, table, clause) in check_clauses(conn, server, database)? {
        let Some(t) = tables
            .iter()
            .position(|t| t.name == table && t.on_server.is_some() && !t.view)
        else {
            continue;
        };
        let column = |c: &str| {
            let (n, kind) = tables[t]
                .columns
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(c))?;
            // Integers and DOUBLE compare alike; FLOAT is compared as its
            // single-precision value, which the copy stores as its shortest decimal.
            matches!(kind, Kind::Int | Kind::Double).then(|| (n.clone(), Class::Number))
        };
        if let Some(expr) = to_sqlite(&clause, Dialect::MySql, &column) {
            out[t].push((name.clone(), expr));
            carried.push(format!("{table}.{name}"));
        }
    }
    Ok(out)
}

/// The foreign keys between the copied `tables` that SQLite can declare: one column or
/// several, referencing a copied table's INTEGER PRIMARY KEY or exactly the columns of
/// one of its UNIQUE indexes ([`crate::table::is_parent_key`]); for each table (in
/// `tables`' order) its keys. Each other foreign key of a
/// copied table is named in `notes` with why.
pub(crate) fn foreign_keys(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    tables: &[Table],
    notes: &mut Vec<String>,
) -> Result<Vec<Vec<ForeignKey>>> {
    type Row = (String, String, String, String, String, String);
    // One row a column of a key, in the key's order.
    let rows: Vec<Row> = conn
        .exec(
            "SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, \
             REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME \
             FROM information_schema.KEY_COLUMN_USAGE \
             WHERE CONSTRAINT_SCHEMA = ? AND REFERENCED_TABLE_NAME IS NOT NULL \
             ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
            (database,),
        )
        .map_err(|e| server.error("reading the foreign keys", &e))?;
    // The columns by their names in SQLite, where all are copied.
    let here = |t: &Table, of: &[String]| -> Option<Vec<String>> {
        of.iter()
            .map(|c| {
                t.columns
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(c))
                    .map(|(n, _)| n.clone())
            })
            .collect()
    };
    let mut out = vec![vec![]; tables.len()];
    let mut at = 0;
    while at < rows.len() {
        let (table, name, _, ref_db, ref_table, _) = rows[at].clone();
        let end = at
            + rows[at..]
                .iter()
                .take_while(|r| r.0 == table && r.1 == name)
                .count();
        let columns: Vec<String> = rows[at..end].iter().map(|r| r.2.clone()).collect();
        let keys: Vec<String> = rows[at..end].iter().map(|r| r.5.clone()).collect();
        at = end;
        let Some(from) = tables
            .iter()
            .position(|t| t.name == table && t.on_server.is_some())
        else {
            continue;
        };
        let to = tables
            .iter()
            .position(|t| t.name == ref_table)
            .filter(|_| ref_db == database);
        let parent = to.map(|to| {
            let p = &tables[to];
            let rowid = p.rowid.map(|k| p.columns[k].0.as_str());
            (p.name.as_str(), rowid, p.indexes.as_slice(), here(p, &keys))
        });
        let declared = crate::table::foreign_key(
            here(&tables[from], &columns),
            parent,
            &format!("{ref_db}.{ref_table}"),
            &keys,
        );
        match declared {
            Ok(fk) => out[from].push(fk),
            Err(why) => notes.push(format!(
                "{database}.{table}: foreign key {name:?} not declared ({why})"
            )),
        }
    }
    Ok(out)
}

/// The column defaults of the copied base tables that SQLite can declare as the copy
/// stores the column: an integer for an integer column, a finite number for a
/// FLOAT or DOUBLE, a string for a character column (MariaDB's quoted literal without a
/// backslash escape, or MySQL's raw text of a constant); for each table (in `tables`'
/// order) its defaults by column name, as SQLite literals. Each other default (an
/// expression, `CURRENT_TIMESTAMP`, a date, a DECIMAL, a BLOB's) is named in `notes`.
pub(crate) fn defaults(
    conn: &mut Conn,
    server: &Server,
    database: &str,
    tables: &[Table],
    notes: &mut Vec<String>,
) -> Result<Vec<Vec<(String, String)>>> {
    let failed = |e: mysql::Error| server.error("reading the column defaults", &e);
    let version: Option<String> = conn.query_first("SELECT VERSION()").map_err(failed)?;
    let mariadb = version.is_some_and(|v| v.contains("MariaDB"));
    let rows: Vec<(String, String, String, String)> = conn
        .exec(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_DEFAULT, EXTRA FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND COLUMN_DEFAULT IS NOT NULL ORDER BY TABLE_NAME, ORDINAL_POSITION",
            (database,),
        )
        .map_err(failed)?;
    let mut out = vec![vec![]; tables.len()];
    for (table, column, default, extra) in rows {
        // MariaDB writes "no default" as the text NULL (a string 'NULL' is quoted).
        if mariadb && default == "NULL" {
            continue;
        }
        let Some(t) = tables
            .iter()
            .position(|t| t.name == table && t.on_server.is_some() && !t.view)
        else {
            continue;
        };
        let Some(&(ref name, kind)) = tables[t]
            .columns
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&column))
        else {
            continue;
        };
        let expression = extra.to_ascii_uppercase().contains("DEFAULT_GENERATED");
        let literal = match kind {
            _ if expression => None,
            Kind::Int => default.parse::<i64>().ok().map(|i| i.to_string()),
            Kind::Float | Kind::Double => default
                .parse::<f64>()
                .ok()
                .filter(|f| {
                    f.is_finite() && default.bytes().all(|b| b"0123456789.eE+-".contains(&b))
                })
                .map(|_| default.clone()),
            Kind::Text if mariadb => {
                let quoted =
                    default.len() >= 2 && default.starts_with('\'') && default.ends_with('\'');
                (quoted && !default.contains('\\')).then(|| default.clone())
            }
            Kind::Text => Some(format!("'{}'", default.replace('\'', "''"))),
            _ => None,
        };
        match literal {
            Some(l) => out[t].push((name.clone(), l)),
            None => notes.push(format!(
                "{}: the default of column {name:?} not carried ({default}: SQLite would not store it as the copy stores the column)",
                tables[t].shown
            )),
        }
    }
    Ok(out)
}
