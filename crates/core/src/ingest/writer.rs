//! [`Writer`]: writes one closed [`Window`] in one transaction. It owns the connection,
//! so the engine can run it on another thread while the next window fills.

use rusqlite::{Connection, OptionalExtension};

use super::checkpoint::{Checkpointer, WAL_BOUND};
use super::parse::{decode_key, KeyRef, Val};
use super::upsert::Upsert;
use super::window::{Sorted, Window};
use super::{CommitStats, STATE_TABLE};
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::sink::sqlite::raw_stmt::RawStatement;
use crate::types::ColumnType;

/// What writing a window's rows did.
struct Written {
    inserted: u64,
    /// Why each row the table's constraints refused was not written.
    refused: Vec<String>,
}

/// Rows per multi-row INSERT of new keys (fewer when their parameters would pass the
/// connection's limit).
const INSERT_ROWS: usize = 64;

/// A stored resume point: line, byte offset, file identity, feed position.
pub(crate) type ResumeRow = (u64, u64, Option<String>, Option<String>);

pub(crate) struct Writer {
    /// Declared before `conn`: dropped (its thread joined, its connection closed) first.
    checkpointer: Option<Checkpointer>,
    pub conn: Connection,
    table: String,
    keys: Vec<String>,
    history: Option<String>,
    pub table_exists: bool,
    /// The table's non-key columns, as the upsert names them.
    columns: Vec<(String, Option<ColumnType>)>,
    /// The share of the last window's rows that were new keys (1 before the first).
    new_share: f64,
}

/// The statements that make the table fit window `w`: its `CREATE TABLE` once the key
/// types are known (keys NOT NULL, their PRIMARY KEY, the columns so far), or `ALTER
/// TABLE … ADD COLUMN` for the columns `columns` lacks. Updates `exists` and `columns`
/// to what the table is once they ran, and returns them with the number of columns added.
pub(crate) fn window_ddl(
    table: &str,
    keys: &[String],
    exists: &mut bool,
    columns: &mut Vec<(String, Option<ColumnType>)>,
    w: &Window,
) -> (Vec<String>, u64) {
    let t = quote_ident(table);
    let known = columns.len();
    let mut ddl = vec![];
    let mut new_columns = 0;
    if !*exists {
        if let Some(kt) = &w.key_types {
            let mut defs: Vec<String> = keys
                .iter()
                .zip(kt)
                .map(|(k, ty)| format!("{} {} NOT NULL", quote_ident(k), ty.sql()))
                .collect();
            for (name, ty) in &w.columns {
                defs.push(
                    format!("{} {}", quote_ident(name), ty.map_or("", |t| t.sql()))
                        .trim_end()
                        .to_string(),
                );
            }
            let quoted: Vec<String> = keys.iter().map(|k| quote_ident(k)).collect();
            defs.push(format!("PRIMARY KEY ({})", quoted.join(", ")));
            ddl.push(crate::table::create_table_sql(table, &defs));
            new_columns = w.columns.len() as u64;
            *exists = true;
            columns.clone_from(&w.columns);
        }
    } else {
        for (name, ty) in &w.columns[known.min(w.columns.len())..] {
            ddl.push(
                format!(
                    "ALTER TABLE {t} ADD COLUMN {} {}",
                    quote_ident(name),
                    ty.map_or("", |t| t.sql())
                )
                .trim_end()
                .to_string(),
            );
            columns.push((name.clone(), *ty));
            new_columns += 1;
        }
    }
    (ddl, new_columns)
}

/// The key of row `i` (of `sorted`'s order), as messages show it.
pub(crate) fn key_text(sorted: &Sorted, i: usize, nkeys: usize) -> String {
    let key: Vec<String> = decode_key(sorted.key(i), nkeys)
        .map(|k| match k {
            KeyRef::Int(v) => v.to_string(),
            KeyRef::Text(t) => format!("{:?}", String::from_utf8_lossy(t)),
        })
        .collect();
    key.join(", ")
}

/// The resume table, as a new database gets it.
pub(crate) fn state_table_sql() -> String {
    format!("CREATE TABLE IF NOT EXISTS {STATE_TABLE} (source TEXT PRIMARY KEY, line INTEGER NOT NULL, offset INTEGER NOT NULL, file TEXT, position TEXT)")
}

/// Stores a resume point (parameters: source, line, offset, file, position).
pub(crate) fn state_upsert_sql() -> String {
    format!("INSERT INTO {STATE_TABLE} (source, line, offset, file, position) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (source) DO UPDATE SET line = excluded.line, offset = excluded.offset, file = excluded.file, position = excluded.position")
}

/// The history table of `name`, made if missing.
pub(crate) fn history_table_sql(name: &str) -> String {
    format!("CREATE TABLE IF NOT EXISTS {} (id INTEGER PRIMARY KEY, received REAL NOT NULL, message TEXT NOT NULL)", quote_ident(name))
}

fn sql_err(ctx: &str) -> impl FnOnce(rusqlite::Error) -> Error + '_ {
    move |e| Error::sqlite(ctx, e)
}

impl Writer {
    pub fn new(
        conn: Connection,
        table: String,
        keys: Vec<String>,
        history: Option<String>,
        existing: Option<Vec<(String, Option<ColumnType>)>>,
    ) -> Writer {
        Writer {
            checkpointer: None,
            conn,
            table,
            keys,
            history,
            table_exists: existing.is_some(),
            columns: existing.unwrap_or_default(),
            new_share: 1.0,
        }
    }

    /// Checkpoints this database on a thread of its own from now on (see
    /// [`Checkpointer`]); nothing is done for a database that is not in WAL mode.
    pub fn checkpoint_aside(&mut self, db: &std::path::Path, pragmas: &str) -> Result<()> {
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(sql_err("reading the journal mode"))?;
        if mode.eq_ignore_ascii_case("wal") {
            self.checkpointer = Some(Checkpointer::start(&self.conn, db, pragmas, WAL_BOUND)?);
        }
        Ok(())
    }

    /// Writes `w` in one transaction; on error nothing of it is written.
    pub fn commit(&mut self, w: &Window) -> Result<CommitStats> {
        if let Some(c) = &self.checkpointer {
            c.before_commit();
        }
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(sql_err("beginning a commit window"))?;
        let done = self.write(w).and_then(|s| {
            self.conn
                .execute_batch("COMMIT")
                .map_err(sql_err("committing a window"))?;
            if let Some(c) = &self.checkpointer {
                c.request();
            }
            Ok(s)
        });
        if done.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
            // The failed window's frames would keep the WAL's size (a full disk stays full).
            crate::durability::release_wal(&self.conn);
        }
        done
    }

    fn exec(&self, sql: &str) -> Result<()> {
        self.conn
            .execute_batch(sql)
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))
    }

    fn write(&mut self, w: &Window) -> Result<CommitStats> {
        let (ddl, new_columns) = window_ddl(
            &self.table,
            &self.keys,
            &mut self.table_exists,
            &mut self.columns,
            w,
        );
        for sql in &ddl {
            self.exec(sql)?;
        }
        let Written { inserted, refused } = if w.rows.is_empty() {
            Written {
                inserted: 0,
                refused: vec![],
            }
        } else {
            self.write_rows(w)?
        };
        if let Some(h) = &self.history {
            self.exec(&history_table_sql(h))?;
            let h = quote_ident(h);
            let mut stmt = self
                .conn
                .prepare_cached(&format!(
                    "INSERT INTO {h} (received, message) VALUES (?1, ?2)"
                ))
                .map_err(sql_err("preparing the history insert"))?;
            for &(at, a, b) in &w.history {
                let raw = String::from_utf8_lossy(&w.text[a..b]);
                stmt.execute(rusqlite::params![at, raw])
                    .map_err(sql_err("appending to the history"))?;
            }
        }
        if let Some(p) = &w.position {
            self.state_table()?;
            self.conn
                .prepare_cached(&state_upsert_sql())
                .and_then(|mut s| {
                    s.execute(rusqlite::params![
                        &*p.source,
                        p.line as i64,
                        p.offset as i64,
                        p.file.as_deref(),
                        p.position.as_deref()
                    ])
                })
                .map_err(sql_err("storing the resume point"))?;
        }
        Ok(CommitStats {
            messages: w.messages,
            keys: w.rows.len() as u64,
            inserted,
            updated: w.rows.len() as u64 - inserted - refused.len() as u64,
            rejects: w.rejects + refused.len() as u64,
            refused,
            new_columns,
            offset: w.position.as_ref().map(|p| p.offset),
            ..CommitStats::default()
        })
    }

    /// Writes the window's rows in key order (the writes then walk the table's B-tree
    /// front to back; per-key order is unaffected: one row per key). Each row is first an
    /// UPDATE by its key of only its present columns (`coalesce` for a row that sets no
    /// column to NULL, else a CASE on each column's presence flag); a row that changed
    /// nothing is new and goes to a multi-row INSERT, which then needs no per-column
    /// logic at all. Into an empty table the UPDATEs are skipped.
    /// Returns the number of rows inserted.
    ///
    /// Binding: each execution starts from cleared bindings (every parameter NULL), and
    /// only the key, the present columns and their flags are bound, so an absent column
    /// inserts NULL and, its flag NULL, keeps its value on update.
    fn write_rows(&mut self, w: &Window) -> Result<Written> {
        let sorted = w.sorted();
        let nkeys = self.keys.len();
        let ncols = self.columns.len();
        let width = nkeys + ncols;
        let prepare = |sql: String| {
            RawStatement::prepare(&self.conn, &sql)
                .map_err(|e| Error::sqlite(format!("preparing {sql}"), e))
        };
        let max_params = self
            .conn
            .limit(rusqlite::limits::Limit::SQLITE_LIMIT_VARIABLE_NUMBER)
            .map_err(sql_err("reading the parameter limit"))?
            .max(1) as usize;
        let many = self.upsert().rows_per_statement(max_params, INSERT_ROWS);
        if ncols == 0 {
            return Ok(Written {
                inserted: self.insert_keys(sorted)?,
                refused: vec![],
            });
        }
        // Into an empty table every row is new: no UPDATE can find its key.
        let empty = self
            .conn
            .query_row(
                &format!(
                    "SELECT NOT EXISTS (SELECT 1 FROM {})",
                    quote_ident(&self.table)
                ),
                [],
                |r| r.get::<_, bool>(0),
            )
            .map_err(sql_err("looking into the table"))?;
        // Into a table that has rows, a row that sets no column to NULL goes straight to
        // a multi-row INSERT … ON CONFLICT DO UPDATE (one search of the key index, where
        // an UPDATE that finds nothing and then an INSERT cost two: a third of a commit
        // on a stream where a quarter of the messages bring a new key). The rows it
        // inserted are then counted by the table's rowids, which only a table that
        // numbers its own rows allows (`rowid_mark`); other tables keep the UPDATE first.
        // So does a stream whose last window mostly updated keys that were there: an
        // upsert that finds its key builds a record it throws away before it updates
        // (measured slower than the UPDATE alone on bench/ingest.py's mixed shape).
        let mark = if empty || self.new_share < 0.5 {
            None
        } else {
            self.rowid_mark()?
        };
        let (mut update, mut update_kept) = match (empty, mark) {
            (true, _) => (None, None),
            (false, Some(_)) => (Some(prepare(self.upsert().update_sql())?), None),
            (false, None) => (
                Some(prepare(self.upsert().update_sql())?),
                Some(prepare(self.upsert().update_kept_sql())?),
            ),
        };
        let insert_sql = |rows| match mark {
            Some(_) => self.upsert().insert_kept_sql(rows),
            None => self.upsert().insert_sql(rows),
        };
        let mut insert_many = prepare(insert_sql(many))?;
        let mut insert_one = prepare(insert_sql(1))?;
        let bind_err = sql_err("binding a row");
        let mut new_rows: Vec<usize> = Vec::with_capacity(many);
        let mut inserted = 0u64;
        // SAFETY (every bind_text below): the text is in `sorted`, owned until the end
        // of this function, and every statement's bindings are cleared before it returns.
        let bind_row = |stmt: &mut RawStatement, i: usize, base: usize, flags: bool| {
            for (k, part) in decode_key(sorted.key(i), nkeys).enumerate() {
                match part {
                    KeyRef::Int(v) => stmt.bind_int(base + k + 1, v)?,
                    KeyRef::Text(t) => unsafe { stmt.bind_text(base + k + 1, t)? },
                }
            }
            for (c, val) in sorted.fields(i) {
                let idx = base + nkeys + c as usize + 1;
                // Bound in arrival order: a column set twice ends with its last value
                // (and a later null must unbind an earlier value).
                match val {
                    Val::Null => stmt.bind_null(idx)?,
                    Val::Int(v) => stmt.bind_int(idx, v)?,
                    Val::Real(v) => stmt.bind_real(idx, v)?,
                    Val::Text { at, len } => unsafe { stmt.bind_text(idx, sorted.text(at, len))? },
                }
                if flags {
                    stmt.bind_int(idx + ncols, 1)?;
                }
            }
            Ok::<(), rusqlite::Error>(())
        };
        // A row the table's own constraints refuse (NOT NULL, CHECK, a UNIQUE index of
        // the user's) is refused alone: SQLite undoes just that statement, and the rest
        // of the window is written.
        let is_constraint = |e: &rusqlite::Error| {
            e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
        };
        let mut refused: Vec<(usize, rusqlite::Error)> = vec![];
        let result = (|| -> rusqlite::Result<()> {
            let mut insert_each = |rows: &[usize],
                                   refused: &mut Vec<(usize, rusqlite::Error)>|
             -> rusqlite::Result<u64> {
                let mut n = 0;
                for &i in rows {
                    insert_one.clear_bindings();
                    bind_row(&mut insert_one, i, 0, false)?;
                    match insert_one.run() {
                        Ok(()) => n += 1,
                        Err(e) if is_constraint(&e) => refused.push((i, e)),
                        Err(e) => return Err(e),
                    }
                }
                Ok(n)
            };
            for i in 0..sorted.order.len() {
                // A row that sets no column to NULL takes the statement without flags.
                let sets_null = || sorted.fields(i).any(|(_, v)| v == Val::Null);
                let chosen = match (&mut update, &mut update_kept) {
                    (Some(u), _) if sets_null() => Some((u, true)),
                    (_, Some(k)) => Some((k, false)),
                    _ => None,
                };
                let is_new = match chosen {
                    Some((u, flags)) => {
                        u.clear_bindings();
                        bind_row(u, i, 0, flags)?;
                        match u.run() {
                            Ok(()) => u.changes() == 0,
                            Err(e) if is_constraint(&e) => {
                                refused.push((i, e));
                                continue;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    None => true,
                };
                if is_new {
                    new_rows.push(i);
                }
                if new_rows.len() == many {
                    insert_many.clear_bindings();
                    for (r, &i) in new_rows.iter().enumerate() {
                        bind_row(&mut insert_many, i, r * width, false)?;
                    }
                    match insert_many.run() {
                        Ok(()) => inserted += many as u64,
                        // One of them is refused: each on its own, to find which.
                        Err(e) if is_constraint(&e) => {
                            inserted += insert_each(&new_rows, &mut refused)?;
                        }
                        Err(e) => return Err(e),
                    }
                    new_rows.clear();
                }
            }
            inserted += insert_each(&new_rows, &mut refused)?;
            Ok(())
        })();
        for s in [
            update.as_mut(),
            update_kept.as_mut(),
            Some(&mut insert_many),
            Some(&mut insert_one),
        ]
        .into_iter()
        .flatten()
        {
            s.clear_bindings();
        }
        result.map_err(|e| match e {
            rusqlite::Error::SqliteFailure(..) => {
                Error::sqlite(format!("writing into {}", quote_ident(&self.table)), e)
            }
            e => bind_err(e),
        })?;
        if let Some(before) = mark {
            inserted = self.rowid_high()?.saturating_sub(before) as u64;
        }
        self.new_share = inserted as f64 / sorted.order.len().max(1) as f64;
        let reasons = refused
            .iter()
            .map(|(i, e)| {
                format!(
                    "the row with key ({}) was not written: {e}",
                    key_text(sorted, *i, nkeys)
                )
            })
            .collect();
        Ok(Written {
            inserted,
            refused: reasons,
        })
    }

    /// The table's highest rowid, if every row this commit inserts will be numbered
    /// after it, one by one (SQLite gives a new row the highest rowid plus one): a table
    /// with rowids that no column names (no INTEGER PRIMARY KEY, so no AUTOINCREMENT,
    /// whose numbers can skip), with no trigger (an upsert would fire INSERT triggers
    /// where the UPDATE that found nothing fired none), far from the last rowid, and
    /// whose rows' absent columns (NULL in the upsert's would-be row) break nothing:
    /// SQLite checks NOT NULL and CHECK on that row before it finds the key taken, so
    /// an update of a key that is there would be refused (no NOT NULL column but the
    /// primary key's, no CHECK anywhere in its definition). `None` otherwise.
    fn rowid_mark(&self) -> Result<Option<i64>> {
        let plain: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM pragma_table_list WHERE schema = 'main' \
                   AND name = ?1 COLLATE NOCASE AND type = 'table' AND wr = 0) \
                 AND NOT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE pk > 0 \
                   AND upper(type) = 'INTEGER') \
                 AND NOT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE pk = 0 \
                   AND \"notnull\") \
                 AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' \
                   AND name = ?1 COLLATE NOCASE AND upper(sql) LIKE '%CHECK%') \
                 AND NOT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger' \
                   AND tbl_name = ?1 COLLATE NOCASE)",
                [&self.table],
                |r| r.get(0),
            )
            // A SQLite older than 3.37 (a system library) has no pragma_table_list: the
            // UPDATE first, as before.
            .unwrap_or(false);
        if !plain {
            return Ok(None);
        }
        let high = self.rowid_high()?;
        Ok((high < i64::MAX - (1 << 40)).then_some(high))
    }

    /// The table's highest rowid (0 for an empty table).
    fn rowid_high(&self) -> Result<i64> {
        self.conn
            .query_row(
                &format!(
                    "SELECT coalesce(max(rowid), 0) FROM {}",
                    quote_ident(&self.table)
                ),
                [],
                |r| r.get(0),
            )
            .map_err(sql_err("reading the table's highest rowid"))
    }

    /// The rows of a table that has no columns but its keys: each key is inserted unless
    /// it is there. Returns the number inserted.
    fn insert_keys(&self, sorted: &Sorted) -> Result<u64> {
        let nkeys = self.keys.len();
        let sql = self.upsert().insert_keys_sql();
        let mut stmt = RawStatement::prepare(&self.conn, &sql)
            .map_err(|e| Error::sqlite(format!("preparing {sql}"), e))?;
        let mut inserted = 0;
        let result = (|| -> rusqlite::Result<()> {
            for i in 0..sorted.order.len() {
                for (k, part) in decode_key(sorted.key(i), nkeys).enumerate() {
                    match part {
                        KeyRef::Int(v) => stmt.bind_int(k + 1, v)?,
                        // SAFETY: the text is in `w`, borrowed until the bindings are
                        // cleared below.
                        KeyRef::Text(t) => unsafe { stmt.bind_text(k + 1, t)? },
                    }
                }
                stmt.run()?;
                inserted += stmt.changes();
            }
            Ok(())
        })();
        stmt.clear_bindings();
        result
            .map_err(|e| Error::sqlite(format!("writing into {}", quote_ident(&self.table)), e))?;
        Ok(inserted)
    }

    /// The statements of the merge into this table.
    fn upsert(&self) -> Upsert<'_> {
        Upsert {
            table: &self.table,
            keys: &self.keys,
            columns: &self.columns,
        }
    }

    /// Creates the resume table, or adds the `file` and `position` columns to one made
    /// before they existed. Run in each commit that stores a position (one a window),
    /// inside its transaction, so a rolled-back window leaves nothing half made.
    fn state_table(&self) -> Result<()> {
        self.exec(&state_table_sql())?;
        for column in ["file", "position"] {
            let has: bool = self
                .conn
                .query_row(
                    "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                    [STATE_TABLE, column],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(sql_err("reading the resume table's columns"))?
                > 0;
            if !has {
                self.exec(&format!(
                    "ALTER TABLE {STATE_TABLE} ADD COLUMN {column} TEXT"
                ))?;
            }
        }
        Ok(())
    }

    /// Where a previous run stopped reading `source`: (line, byte offset, the file's
    /// identity and the feed position, each if stored).
    pub fn resume_point(&self, source: &str) -> Result<Option<ResumeRow>> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
                [STATE_TABLE],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql_err("looking for the resume table"))?
            > 0;
        if !exists {
            return Ok(None);
        }
        self.conn
            .query_row(
                &format!("SELECT * FROM {STATE_TABLE} WHERE source = ?1"),
                [source],
                |r| {
                    let optional = |name: &str| match r.as_ref().column_index(name) {
                        Ok(i) => r.get::<_, Option<String>>(i),
                        Err(_) => Ok(None),
                    };
                    Ok((
                        r.get::<_, i64>("line")? as u64,
                        r.get::<_, i64>("offset")? as u64,
                        optional("file")?,
                        optional("position")?,
                    ))
                },
            )
            .optional()
            .map_err(sql_err("reading the resume point"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-statement upsert counts its inserts by rowids, so it is taken only where
    /// new rows are numbered one by one after the highest rowid.
    #[test]
    fn only_a_table_that_numbers_its_own_rows_takes_the_one_statement_upsert() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE plain (id TEXT PRIMARY KEY, a);
             INSERT INTO plain VALUES ('x', 1), ('y', 2);
             CREATE TABLE ipk (id INTEGER PRIMARY KEY, a);
             CREATE TABLE other_ipk (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, a);
             CREATE TABLE wr (id TEXT PRIMARY KEY, a) WITHOUT ROWID;
             CREATE TABLE trig (id TEXT PRIMARY KEY, a);
             CREATE TRIGGER t_ins AFTER INSERT ON trig BEGIN SELECT 1; END;
             CREATE TABLE high (id TEXT PRIMARY KEY, a);
             INSERT INTO high (rowid, id) VALUES (9223372036854775000, 'z');
             CREATE TABLE nn (id TEXT PRIMARY KEY, a NOT NULL);
             CREATE TABLE ck (id TEXT PRIMARY KEY, a CHECK (a <> 1));",
        )
        .unwrap();
        let mut w = Writer::new(conn, String::new(), vec!["id".into()], None, None);
        let mut mark = |t: &str| {
            w.table = t.into();
            w.rowid_mark().unwrap()
        };
        assert_eq!(mark("plain"), Some(2));
        assert_eq!(mark("PLAIN"), Some(2), "names are matched as SQLite does");
        for t in ["ipk", "other_ipk", "wr", "trig", "high", "nn", "ck"] {
            assert_eq!(mark(t), None, "{t}");
        }
    }
}
