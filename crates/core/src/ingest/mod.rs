//! `ingest`: keep a current-state table from a stream of sparse JSON updates.
//!
//! Merge semantics: a message updates the one row its key names. A field present in the
//! message overwrites that column; a field absent leaves it as it was; an explicit `null`
//! sets NULL (or, with `null_keep`, is ignored). A new key inserts a row. Messages apply
//! in arrival order per key. A field never seen before adds a column, declared by its
//! first non-null value (INTEGER, REAL or TEXT; untyped when the first value is null);
//! later values of another kind are counted and stored by the column's affinity: a
//! number in a TEXT column becomes its text, an integer in a REAL column a real,
//! non-numeric text in a numeric column stays text. Nested objects and
//! arrays are stored as JSON text. JSON keys that differ only in ASCII case name the same
//! column, as SQLite's column names do.
//!
//! Messages are coalesced in memory per key for one commit window (the last value of
//! each field wins) and written in one transaction: an upsert per key through one
//! prepared statement that names every column and carries a bitmask of the present ones
//! (`SET c = CASE WHEN (?m >> i) & 1 THEN excluded.c ELSE c END`), so sparse rows of any
//! shape share one statement (a statement per set of present columns thrashed the cache:
//! ~24 µs per upsert, bench/README.md); the window's raw messages to the history table if
//! asked, and — for a file source — the byte offset just past the last applied message,
//! so a rerun resumes exactly there. A crash loses at most the open window, and a rerun
//! reapplies it from the file.

pub mod message;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::types::ColumnType;
pub use message::{FieldValue, KeyPart};

/// The table that remembers where each file source was applied up to.
pub const STATE_TABLE: &str = "liteload_ingest_state";

/// How to ingest.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    pub table: String,
    /// The fields that name a row (its primary key, or a unique index on them).
    pub keys: Vec<String>,
    /// `balanced` (default) or `durable`; `unsafe` is allowed and warned about by the CLI.
    pub durability: Durability,
    /// Ignore explicit nulls instead of setting NULL.
    pub null_keep: bool,
    /// A window closes after this many messages (bad ones included) …
    pub commit_rows: usize,
    /// … or this long after its first message, whichever comes first.
    pub commit_interval: Duration,
    /// Also append every raw message, with its arrival time, to this table.
    pub history: Option<String>,
    /// SQLite's page cache, in KiB.
    pub cache_kib: u64,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            table: String::new(),
            keys: vec![],
            durability: Durability::Balanced,
            null_keep: false,
            commit_rows: 1_000_000,
            commit_interval: Duration::from_secs(1),
            history: None,
            cache_kib: 256 * 1024,
        }
    }
}

/// One commit window, as `--stats-json` reports it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CommitStats {
    /// Seconds since the Unix epoch when the commit finished.
    pub at: f64,
    pub messages: u64,
    pub keys: u64,
    pub inserted: u64,
    pub updated: u64,
    pub rejects: u64,
    pub new_columns: u64,
    pub commit_seconds: f64,
    /// The source position committed with the window (file sources).
    pub offset: Option<u64>,
}

/// Totals since the engine was opened.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    pub messages: u64,
    pub inserted: u64,
    pub updated: u64,
    pub rejects: u64,
    pub commits: u64,
    pub type_mismatches: u64,
    pub new_columns: u64,
}

#[derive(Debug)]
struct Pending {
    key: Vec<KeyPart>,
    fields: Vec<(usize, FieldValue)>,
}

/// Where a file source stands: its name, and the line and byte just past the last message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePosition {
    pub source: std::sync::Arc<str>,
    pub line: u64,
    pub offset: u64,
}

/// The engine. Feed it with [`Ingest::push`] (or [`Ingest::push_line`]), call
/// [`Ingest::commit`] when [`Ingest::due`] says so, and once more at the end.
pub struct Ingest {
    conn: Connection,
    opts: IngestOptions,
    table_exists: bool,
    key_types: Option<Vec<ColumnType>>,
    /// Non-key columns: name and declared type (`None`: untyped).
    columns: Vec<(String, Option<ColumnType>)>,
    /// Column index by name as it came, and by ASCII-lowercased name.
    exact: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    unaltered: usize,
    window: HashMap<Vec<KeyPart>, usize>,
    rows: Vec<Pending>,
    window_messages: u64,
    window_rejects: u64,
    window_start: Option<Instant>,
    history: Vec<(f64, String)>,
    position: Option<SourcePosition>,
    totals: Totals,
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn sql_err(ctx: &str) -> impl FnOnce(rusqlite::Error) -> Error + '_ {
    move |e| Error::sqlite(ctx, e)
}

fn kind(v: &FieldValue) -> Option<ColumnType> {
    match v {
        FieldValue::Null => None,
        FieldValue::Int(_) => Some(ColumnType::Integer),
        FieldValue::Real(_) => Some(ColumnType::Real),
        FieldValue::Text(_) => Some(ColumnType::Text),
    }
}

fn to_sql(v: &FieldValue) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match v {
        FieldValue::Null => ValueRef::Null,
        FieldValue::Int(i) => ValueRef::Integer(*i),
        FieldValue::Real(f) => ValueRef::Real(*f),
        FieldValue::Text(s) => ValueRef::Text(s.as_bytes()),
    })
}

fn key_sql(k: &KeyPart) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match k {
        KeyPart::Int(i) => ValueRef::Integer(*i),
        KeyPart::Text(s) => ValueRef::Text(s.as_bytes()),
    })
}

impl Ingest {
    /// Opens the database at `db` (creating it if needed). An existing table must have
    /// the key columns, under a primary key or unique index on exactly them.
    pub fn open(db: &Path, opts: IngestOptions) -> Result<Ingest> {
        if opts.keys.is_empty() {
            return Err(Error::plan("--key: name at least one key field"));
        }
        if opts.table.is_empty() {
            return Err(Error::plan("--table: the name is empty"));
        }
        let pragmas = opts.durability.shared_pragmas()?;
        let conn = Connection::open(db)
            .map_err(|e| Error::sqlite(format!("opening {}", db.display()), e))?;
        conn.execute_batch(pragmas)
            .map_err(sql_err("setting the durability PRAGMAs"))?;
        // Upserts land all over the table: a page cache that holds its hot part saves a
        // read per upsert (the 2 MB default thrashes on a table of a few hundred MB).
        conn.execute_batch(&format!("PRAGMA cache_size=-{};", opts.cache_kib))
            .map_err(sql_err("setting the cache size"))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(sql_err("setting the busy timeout"))?;
        conn.set_prepared_statement_cache_capacity(1024);
        let mut me = Ingest {
            conn,
            opts,
            table_exists: false,
            key_types: None,
            columns: vec![],
            exact: HashMap::new(),
            by_name: HashMap::new(),
            unaltered: 0,
            window: HashMap::new(),
            rows: vec![],
            window_messages: 0,
            window_rejects: 0,
            window_start: None,
            history: vec![],
            position: None,
            totals: Totals::default(),
        };
        if let Some((_, cols)) = crate::table::existing_columns(&me.conn, &me.opts.table)? {
            let mut key_types = vec![];
            for k in &me.opts.keys {
                let c = cols
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(k))
                    .ok_or_else(|| {
                        Error::plan(format!(
                            "table {} has no key column {k:?}",
                            quote_ident(&me.opts.table)
                        ))
                    })?;
                key_types.push(ColumnType::from_declared(&c.declared).unwrap_or(ColumnType::Text));
            }
            for c in cols
                .iter()
                .filter(|c| !me.opts.keys.iter().any(|k| k.eq_ignore_ascii_case(&c.name)))
            {
                me.by_name
                    .insert(c.name.to_ascii_lowercase(), me.columns.len());
                me.columns
                    .push((c.name.clone(), ColumnType::from_declared(&c.declared)));
            }
            me.unaltered = me.columns.len();
            me.table_exists = true;
            me.key_types = Some(key_types);
            // The upsert needs a primary key or unique index on exactly the key columns.
            let keys: Vec<String> = me.opts.keys.iter().map(|k| quote_ident(k)).collect();
            let probe = format!(
                "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO NOTHING",
                quote_ident(&me.opts.table),
                keys.join(", "),
                vec!["NULL"; keys.len()].join(", "),
                keys.join(", ")
            );
            me.conn.prepare(&probe).map_err(|e| {
                Error::plan(format!(
                    "table {} has no primary key or unique index on ({}): {e}",
                    quote_ident(&me.opts.table),
                    me.opts.keys.join(", ")
                ))
            })?;
        }
        Ok(me)
    }

    /// Where a previous run stopped reading `source`, if it committed anything from it.
    pub fn resume_point(&self, source: &str) -> Result<Option<SourcePosition>> {
        let exists: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
                [STATE_TABLE],
                |r| r.get::<_, i64>(0),
            )
            .map_err(sql_err("reading the resume point"))?
            > 0;
        if !exists {
            return Ok(None);
        }
        self.conn
            .query_row(
                &format!("SELECT line, offset FROM {STATE_TABLE} WHERE source = ?1"),
                [source],
                |r| {
                    Ok(SourcePosition {
                        source: source.into(),
                        line: r.get::<_, i64>(0)? as u64,
                        offset: r.get::<_, i64>(1)? as u64,
                    })
                },
            )
            .optional()
            .map_err(sql_err("reading the resume point"))
    }

    /// Parses and applies one raw line. An error is a bad message (the reason); the
    /// engine goes on.
    pub fn push_line(
        &mut self,
        line: &[u8],
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(m)) => self.push(
                m,
                String::from_utf8_lossy(line).trim_end().to_string(),
                position,
            ),
            Ok(_) => self.reject("expected a JSON object".into(), position),
            Err(e) => self.reject(format!("invalid JSON: {e}"), position),
        }
    }

    /// Counts a bad message (its position still advances the resume point).
    pub fn reject(
        &mut self,
        reason: String,
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        self.note_position(position);
        self.window_rejects += 1;
        self.totals.rejects += 1;
        Err(reason)
    }

    fn note_position(&mut self, position: Option<SourcePosition>) {
        if position.is_some() {
            self.position = position;
        }
        if self.window_start.is_none() {
            self.window_start = Some(Instant::now());
        }
    }

    /// Applies one message (`raw` is kept for the history table). An error is a bad
    /// message: nothing of it was applied.
    pub fn push(
        &mut self,
        obj: Map<String, Value>,
        raw: String,
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        let (key, fields) = match message::split(obj, &self.opts.keys) {
            Ok(kf) => kf,
            Err(why) => return self.reject(why, position),
        };
        let types: Vec<ColumnType> = key
            .iter()
            .map(|k| match k {
                KeyPart::Int(_) => ColumnType::Integer,
                KeyPart::Text(_) => ColumnType::Text,
            })
            .collect();
        match &self.key_types {
            Some(t) if *t != types => {
                let want: Vec<&str> = t.iter().map(|t| t.sql()).collect();
                return self.reject(
                    format!(
                        "the key is of another type than the table's ({})",
                        want.join(", ")
                    ),
                    position,
                );
            }
            Some(_) => {}
            None => self.key_types = Some(types),
        }
        self.note_position(position);
        let mut values = Vec::with_capacity(fields.len());
        for (name, v) in fields {
            let fv = FieldValue::from_json_owned(v);
            if fv == FieldValue::Null && self.opts.null_keep {
                continue;
            }
            let idx = match self.exact.get(&name) {
                Some(&i) => i,
                None => {
                    let lower = name.to_ascii_lowercase();
                    let i = match self.by_name.get(&lower) {
                        Some(&i) => i,
                        None => {
                            self.by_name.insert(lower, self.columns.len());
                            self.columns.push((name.clone(), kind(&fv)));
                            self.columns.len() - 1
                        }
                    };
                    self.exact.insert(name, i);
                    i
                }
            };
            if let (Some(declared), Some(k)) = (self.columns[idx].1, kind(&fv)) {
                if declared != k && !(declared == ColumnType::Real && k == ColumnType::Integer) {
                    self.totals.type_mismatches += 1;
                }
            }
            values.push((idx, fv));
        }
        let slot = match self.window.get(&key) {
            Some(&s) => s,
            None => {
                self.rows.push(Pending {
                    key: key.clone(),
                    fields: vec![],
                });
                self.window.insert(key, self.rows.len() - 1);
                self.rows.len() - 1
            }
        };
        let row = &mut self.rows[slot];
        for (idx, v) in values {
            match row.fields.iter_mut().find(|(i, _)| *i == idx) {
                Some(f) => f.1 = v,
                None => row.fields.push((idx, v)),
            }
        }
        if self.opts.history.is_some() {
            self.history.push((now_unix(), raw));
        }
        self.window_messages += 1;
        self.totals.messages += 1;
        Ok(())
    }

    /// Whether the open window should be committed now.
    pub fn due(&self) -> bool {
        self.pending() as usize >= self.opts.commit_rows
            || self
                .window_start
                .is_some_and(|t| t.elapsed() >= self.opts.commit_interval)
    }

    /// Messages in the open window.
    pub fn pending(&self) -> u64 {
        self.window_messages + self.window_rejects
    }

    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The database connection (read it between commits).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Writes the open window in one transaction. On error nothing of the window is
    /// written and the engine must not be used again.
    pub fn commit(&mut self) -> Result<CommitStats> {
        let t0 = Instant::now();
        if self.window_messages == 0 && self.window_rejects == 0 && self.position.is_none() {
            return Ok(CommitStats::default());
        }
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(sql_err("beginning a commit window"))?;
        let result = self.write_window();
        let stats = match result {
            Ok(s) => {
                self.conn
                    .execute_batch("COMMIT")
                    .map_err(sql_err("committing a window"))?;
                s
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        let stats = CommitStats {
            at: now_unix(),
            commit_seconds: t0.elapsed().as_secs_f64(),
            ..stats
        };
        self.totals.inserted += stats.inserted;
        self.totals.updated += stats.updated;
        self.totals.commits += 1;
        self.totals.new_columns += stats.new_columns;
        self.window.clear();
        self.rows.clear();
        self.history.clear();
        self.window_messages = 0;
        self.window_rejects = 0;
        self.window_start = None;
        self.unaltered = self.columns.len();
        Ok(stats)
    }

    fn write_window(&mut self) -> Result<CommitStats> {
        let t = quote_ident(&self.opts.table);
        let exec = |conn: &Connection, sql: &str| {
            conn.execute_batch(sql)
                .map_err(|e| Error::sqlite(format!("running {sql}"), e))
        };
        let mut new_columns = 0;
        if !self.table_exists {
            if let Some(kt) = self.key_types.clone() {
                let mut defs: Vec<String> = self
                    .opts
                    .keys
                    .iter()
                    .zip(&kt)
                    .map(|(k, ty)| format!("{} {} NOT NULL", quote_ident(k), ty.sql()))
                    .collect();
                for (name, ty) in &self.columns {
                    defs.push(
                        format!("{} {}", quote_ident(name), ty.map_or("", |t| t.sql()))
                            .trim_end()
                            .to_string(),
                    );
                }
                let keys: Vec<String> = self.opts.keys.iter().map(|k| quote_ident(k)).collect();
                defs.push(format!("PRIMARY KEY ({})", keys.join(", ")));
                exec(
                    &self.conn,
                    &format!("CREATE TABLE {t} (\n  {}\n)", defs.join(",\n  ")),
                )?;
                new_columns = self.columns.len() as u64;
                self.table_exists = true;
                self.unaltered = self.columns.len();
            }
        }
        for (name, ty) in &self.columns[self.unaltered..] {
            exec(
                &self.conn,
                format!(
                    "ALTER TABLE {t} ADD COLUMN {} {}",
                    quote_ident(name),
                    ty.map_or("", |t| t.sql())
                )
                .trim_end(),
            )?;
            new_columns += 1;
        }
        let before = if self.rows.is_empty() {
            0
        } else {
            self.count()?
        };
        if !self.rows.is_empty() {
            // In key order, upserts walk the table's B-tree front to back instead of
            // jumping around it. Per-key order is unaffected: one row per key.
            self.rows.sort_unstable_by(|a, b| a.key.cmp(&b.key));
            let sql = self.upsert_sql();
            let ncols = self.columns.len();
            let nkeys = self.opts.keys.len();
            let masks = ncols.div_ceil(62);
            let mut stmt = self
                .conn
                .prepare_cached(&sql)
                .map_err(|e| Error::sqlite(format!("preparing {sql}"), e))?;
            let mut slots: Vec<Option<&FieldValue>> = vec![None; ncols];
            let mut mask = vec![0i64; masks];
            for row in &self.rows {
                slots.iter_mut().for_each(|s| *s = None);
                mask.iter_mut().for_each(|m| *m = 0);
                for (i, v) in &row.fields {
                    slots[*i] = Some(v);
                }
                for (i, k) in row.key.iter().enumerate() {
                    stmt.raw_bind_parameter(i + 1, key_sql(k))
                        .map_err(sql_err("binding a key"))?;
                }
                for (c, slot) in slots.iter().enumerate() {
                    let v = match slot {
                        Some(v) => {
                            mask[c / 62] |= 1 << (c % 62);
                            to_sql(v)
                        }
                        None => ToSqlOutput::Borrowed(ValueRef::Null),
                    };
                    stmt.raw_bind_parameter(nkeys + c + 1, v)
                        .map_err(sql_err("binding a value"))?;
                }
                for (m, bits) in mask.iter().enumerate() {
                    stmt.raw_bind_parameter(nkeys + ncols + m + 1, *bits)
                        .map_err(sql_err("binding the mask"))?;
                }
                stmt.raw_execute()
                    .map_err(|e| Error::sqlite(format!("upserting into {t}"), e))?;
            }
        }
        let after = if self.rows.is_empty() {
            0
        } else {
            self.count()?
        };
        if let Some(h) = &self.opts.history {
            let h = quote_ident(h);
            exec(&self.conn, &format!("CREATE TABLE IF NOT EXISTS {h} (id INTEGER PRIMARY KEY, received REAL NOT NULL, message TEXT NOT NULL)"))?;
            let mut stmt = self
                .conn
                .prepare_cached(&format!(
                    "INSERT INTO {h} (received, message) VALUES (?1, ?2)"
                ))
                .map_err(sql_err("preparing the history insert"))?;
            for (at, raw) in &self.history {
                stmt.execute(rusqlite::params![at, raw])
                    .map_err(sql_err("appending to the history"))?;
            }
        }
        if let Some(p) = &self.position {
            exec(&self.conn, &format!("CREATE TABLE IF NOT EXISTS {STATE_TABLE} (source TEXT PRIMARY KEY, line INTEGER NOT NULL, offset INTEGER NOT NULL)"))?;
            self.conn
                .prepare_cached(&format!(
                    "INSERT INTO {STATE_TABLE} (source, line, offset) VALUES (?1, ?2, ?3) ON CONFLICT (source) DO UPDATE SET line = excluded.line, offset = excluded.offset"
                ))
                .and_then(|mut s| s.execute(rusqlite::params![&*p.source, p.line as i64, p.offset as i64]))
                .map_err(sql_err("storing the resume point"))?;
        }
        let inserted = after.saturating_sub(before);
        Ok(CommitStats {
            messages: self.window_messages,
            keys: self.rows.len() as u64,
            inserted,
            updated: self.rows.len() as u64 - inserted,
            rejects: self.window_rejects,
            new_columns,
            offset: self.position.as_ref().map(|p| p.offset),
            ..CommitStats::default()
        })
    }

    /// `INSERT INTO t (keys…, every column) VALUES (?…) ON CONFLICT (keys) DO UPDATE SET
    /// c = CASE WHEN (?m >> i) & 1 THEN excluded.c ELSE c END, …` with one mask parameter
    /// per 62 columns (bit i of mask m stands for column 62·m + i).
    fn upsert_sql(&self) -> String {
        let t = quote_ident(&self.opts.table);
        let keys: Vec<String> = self.opts.keys.iter().map(|k| quote_ident(k)).collect();
        let cols: Vec<String> = self.columns.iter().map(|(n, _)| quote_ident(n)).collect();
        let nparams = keys.len() + cols.len();
        let all: Vec<&str> = keys.iter().chain(&cols).map(|s| s.as_str()).collect();
        let update = if cols.is_empty() {
            "NOTHING".to_string()
        } else {
            let sets: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(c, n)| {
                    format!(
                        "{n} = CASE WHEN (?{} >> {}) & 1 THEN excluded.{n} ELSE {n} END",
                        nparams + c / 62 + 1,
                        c % 62
                    )
                })
                .collect();
            format!("UPDATE SET {}", sets.join(", "))
        };
        format!(
            "INSERT INTO {t} ({}) VALUES ({}) ON CONFLICT ({}) DO {update}",
            all.join(", "),
            (1..=nparams)
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", "),
            keys.join(", ")
        )
    }

    fn count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row(
                &format!("SELECT count(*) FROM {}", quote_ident(&self.opts.table)),
                [],
                |r| r.get(0),
            )
            .map_err(sql_err("counting rows"))?;
        Ok(n as u64)
    }
}
