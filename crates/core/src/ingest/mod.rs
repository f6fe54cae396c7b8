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
//! column, as SQLite's column names do; a field that differs from a key field only in
//! case, or whose name has a NUL byte, or that would take the table past SQLite's 2000
//! columns, makes its message bad: counted, reported and skipped, never the end of the
//! stream.
//!
//! Messages are coalesced in memory per key for one commit window (the last value of
//! each field wins) and written in one transaction, in key order: per key an UPDATE of
//! just its present columns (one statement for every shape of sparse row: each column
//! is `CASE WHEN ?flag THEN ?value ELSE column END`, the flags bound only for present
//! columns), and the keys that UPDATE found absent go to a multi-row INSERT; then the
//! window's raw messages to the history table if asked, and — for a file source — the
//! byte offset just past the last applied message, so a rerun resumes exactly there. A
//! crash loses at most the open window (and the one being written), and a rerun
//! reapplies them from the file.
//!
//! The data flow: readers parse lines into [`Messages`] batches (`parse`), the engine
//! folds them into a window (`window`), and a closed window is written by the `writer`
//! on a thread of its own while the next one fills (see bench/README.md for what each
//! step saved).

mod checkpoint;
#[cfg(feature = "network")]
mod cluster;
#[cfg(feature = "network")]
pub mod connect;
pub mod feed;
#[cfg(feature = "network")]
pub mod listen;
mod parse;
mod reading;
mod upsert;
mod window;
mod writer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::types::ColumnType;
use parse::{decode_key, KeyRef, Val};
pub use parse::{LineMeta, Message, Messages};
use window::Window;
use writer::Writer;

use crate::schema::MAX_COLUMNS;

/// The table that remembers where each file source was applied up to.
pub const STATE_TABLE: &str = "liteload_ingest_state";

/// How to ingest.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct IngestOptions {
    /// The table to keep (created if missing).
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
    /// Messages applied in the window.
    pub messages: u64,
    /// Distinct keys they touched.
    pub keys: u64,
    /// Rows inserted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Bad messages and refused rows.
    pub rejects: u64,
    /// Columns added.
    pub new_columns: u64,
    /// Seconds the commit took.
    pub commit_seconds: f64,
    /// The source position committed with the window (file sources).
    pub offset: Option<u64>,
    /// Rows the table's own constraints (NOT NULL, CHECK, a UNIQUE index) refused, each
    /// a reason naming its key: they were not written, the rest of the window was.
    /// Counted in `rejects` too.
    pub refused: Vec<String>,
}

/// Totals since the engine was opened. Messages and rejects count as they are pushed;
/// rows inserted and updated as their windows are committed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    /// Messages pushed.
    pub messages: u64,
    /// Rows inserted by committed windows.
    pub inserted: u64,
    /// Rows updated by committed windows.
    pub updated: u64,
    /// Bad messages and refused rows.
    pub rejects: u64,
    /// Windows committed.
    pub commits: u64,
    /// Values stored in another type than their column's.
    pub type_mismatches: u64,
    /// Columns added.
    pub new_columns: u64,
    /// Messages a feed sent again at or before the position it was asked to start
    /// after (applied again: harmless, the merge is idempotent). Counted by the feed's
    /// client.
    pub replayed: u64,
    /// Listener connections that ended with an error (turned away at the gate, reset,
    /// closed without a TLS `close_notify`, silent past the idle timeout): each ended
    /// that connection alone. Its whole lines read before the error are applied.
    pub connection_errors: u64,
    /// The feed position of the last applied message that carried one.
    pub last_position: Option<String>,
}

/// Where a source stands: its name, which file it was, the line and byte just past the
/// last message, and for a feed, the position field's value in the last message that
/// had one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcePosition {
    /// The source's name (a file's resolved path).
    pub source: Arc<str>,
    /// The identity of the file at `source` when it was read (see [`FileSource::file`]);
    /// `None` when unknown (a resume point stored before identities were).
    pub file: Option<Arc<str>>,
    /// The line after the last message, from 1.
    pub line: u64,
    /// The byte after the last message.
    pub offset: u64,
    /// A feed's position (see [`FileSource::position_field`]); `None` for a file.
    pub position: Option<Arc<str>>,
}

/// A source whose positions are resume points: a file (its byte offsets), or a feed
/// whose messages carry their position in a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSource {
    /// Its path: the resume table's key.
    pub path: Arc<str>,
    /// What tells this file from another one later put at the same path (on Unix, the
    /// device and inode: `dev:ino`). A rerun resumes only in the same file.
    pub file: Option<Arc<str>>,
    /// For a feed: the message field whose value is the feed's position. The last
    /// applied value is stored with each window, in its transaction.
    pub position_field: Option<Arc<str>>,
}

/// What [`Ingest::push_messages`] did: the index of the first message it did not take,
/// and whether the `bad` callback asked to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// The index of the first message not taken.
    pub next: usize,
    /// Whether it stopped because `bad` asked it to (else the window is full).
    pub stopped: bool,
}

/// A window closes once it holds this many field values (1 GiB of entries) or keys,
/// whatever `commit_rows` says.
const MAX_WINDOW_ENTRIES: usize = 1 << 26;

const UNMAPPED: u32 = u32::MAX;

/// The engine. Feed it with [`Ingest::push_messages`] (batches parsed by readers),
/// [`Ingest::push`] or [`Ingest::push_line`]; when [`Ingest::due`] says so, close the
/// window with [`Ingest::commit`] (written on this thread) or
/// [`Ingest::commit_background`] (written on another thread while the next window
/// fills); and once more at the end with `commit`.
///
/// At most one window is being written while another fills; a window's writes, its
/// history and its resume point are one transaction, and windows commit in order.
pub struct Ingest {
    opts: IngestOptions,
    writer: Arc<Mutex<Store>>,
    in_flight: Option<JoinHandle<(Window, Result<CommitStats>)>>,
    window: Window,
    spare: Option<Window>,
    key_types: Option<Vec<ColumnType>>,
    /// Non-key columns: name and declared type (`None`: untyped).
    columns: Vec<(String, Option<ColumnType>)>,
    /// Column index by name as it came, and by ASCII-lowercased name.
    exact: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    /// Column of each name of the batch being pushed.
    colmap: Vec<u32>,
    scratch: Option<Messages>,
    totals: Totals,
}

/// What windows are written to: a local database, or an rqlite cluster.
enum Store {
    File(Writer),
    #[cfg(feature = "network")]
    Cluster(cluster::ClusterWriter),
}

impl Store {
    fn commit(&mut self, w: &Window) -> Result<CommitStats> {
        match self {
            Store::File(s) => s.commit(w),
            #[cfg(feature = "network")]
            Store::Cluster(c) => c.commit(w),
        }
    }

    fn resume_point(&self, source: &str) -> Result<Option<writer::ResumeRow>> {
        match self {
            Store::File(s) => s.resume_point(source),
            #[cfg(feature = "network")]
            Store::Cluster(c) => c.resume_point(source),
        }
    }
}

/// Read access to the database between commits (see [`Ingest::connection`]).
pub struct ConnectionGuard<'a>(MutexGuard<'a, Store>);

impl std::ops::Deref for ConnectionGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match &*self.0 {
            Store::File(w) => &w.conn,
            #[cfg(feature = "network")]
            Store::Cluster(_) => unreachable!("a guard is only made for a local database"),
        }
    }
}

/// Whether a socket read ended at its read timeout (the error kind differs by platform).
#[cfg(feature = "network")]
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
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

fn kind(v: &Val) -> Option<ColumnType> {
    match v {
        Val::Null => None,
        Val::Int(_) => Some(ColumnType::Integer),
        Val::Real(_) => Some(ColumnType::Real),
        Val::Text { .. } => Some(ColumnType::Text),
    }
}

/// The options' own checks, before anything is opened.
fn check_options(opts: &IngestOptions) -> Result<()> {
    if opts.keys.is_empty() {
        return Err(Error::usage("no key field: name at least one"));
    }
    if opts.table.is_empty() {
        return Err(Error::usage("the table name is empty"));
    }
    for t in std::iter::once(&opts.table).chain(&opts.history) {
        if let Some(p) = crate::schema::table_name_problem(t) {
            return Err(Error::usage(p));
        }
    }
    crate::schema::check_new_table(&opts.table, opts.keys.iter().map(String::as_str))?;
    let names = std::iter::once(&opts.table).chain(&opts.history);
    for (i, a) in names.clone().enumerate() {
        if a.eq_ignore_ascii_case(STATE_TABLE) {
            return Err(Error::usage(format!(
                "table {}: liteload keeps the resume points there; name another table",
                quote_ident(a)
            )));
        }
        if names.clone().skip(i + 1).any(|b| a.eq_ignore_ascii_case(b)) {
            return Err(Error::usage(format!(
                "the history table cannot be the table itself ({})",
                quote_ident(a)
            )));
        }
    }
    Ok(())
}

/// The table's key types and non-key columns if it exists in `conn` (a local database,
/// or a copy of a cluster's definition), checked to have a primary key or unique index
/// on exactly the keys; and whether it exists.
#[allow(clippy::type_complexity)]
fn existing_table(
    conn: &Connection,
    opts: &IngestOptions,
) -> Result<(
    Option<Vec<ColumnType>>,
    Vec<(String, Option<ColumnType>)>,
    bool,
)> {
    let mut key_types = None;
    let mut columns: Vec<(String, Option<ColumnType>)> = vec![];
    let existing = crate::table::existing_columns(conn, &opts.table)?;
    if let Some((_, cols)) = &existing {
        let mut kt = vec![];
        for k in &opts.keys {
            let c = cols
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(k))
                .ok_or_else(|| {
                    Error::schema(format!(
                        "table {} has no key column {k:?}",
                        quote_ident(&opts.table)
                    ))
                })?;
            kt.push(ColumnType::from_declared(&c.declared).unwrap_or(ColumnType::Text));
        }
        key_types = Some(kt);
        columns = cols
            .iter()
            .filter(|c| !opts.keys.iter().any(|k| k.eq_ignore_ascii_case(&c.name)))
            .map(|c| (c.name.clone(), ColumnType::from_declared(&c.declared)))
            .collect();
        // The upsert needs a primary key or unique index on exactly the key columns.
        let keys: Vec<String> = opts.keys.iter().map(|k| quote_ident(k)).collect();
        let probe = format!(
            "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO NOTHING",
            quote_ident(&opts.table),
            keys.join(", "),
            vec!["NULL"; keys.len()].join(", "),
            keys.join(", ")
        );
        conn.prepare(&probe).map_err(|e| {
            Error::schema(format!(
                "table {} has no primary key or unique index on ({}): {e}",
                quote_ident(&opts.table),
                opts.keys.join(", ")
            ))
        })?;
    }
    Ok((key_types, columns, existing.is_some()))
}

/// Writes `w` and times it.
fn run_commit(writer: &Mutex<Store>, w: &mut Window) -> Result<CommitStats> {
    let t0 = Instant::now();
    let mut writer = writer
        .lock()
        .map_err(|_| Error::internal("an earlier commit failed; the engine cannot go on"))?;
    if !w.is_prepared() {
        w.prepare();
    }
    let stats = writer.commit(w)?;
    Ok(CommitStats {
        at: now_unix(),
        commit_seconds: t0.elapsed().as_secs_f64(),
        ..stats
    })
}

impl Ingest {
    /// Opens the database at `db` (creating it if needed). An existing table must have
    /// the key columns, under a primary key or unique index on exactly them.
    pub fn open(db: &Path, opts: IngestOptions) -> Result<Ingest> {
        check_options(&opts)?;
        let pragmas = opts.durability.shared_pragmas()?;
        let conn = Connection::open(db)
            .map_err(|e| Error::sqlite(format!("opening {}", db.display()), e))?;
        crate::sqlite_info::configure(&conn).map_err(sql_err("configuring the connection"))?;
        conn.execute_batch(pragmas)
            .map_err(sql_err("setting the durability PRAGMAs"))?;
        // Upserts land all over the table: a page cache that holds its hot part saves a
        // read per upsert (the 2 MB default thrashes on a table of a few hundred MB).
        conn.execute_batch(&format!("PRAGMA cache_size=-{};", opts.cache_kib))
            .map_err(sql_err("setting the cache size"))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(sql_err("setting the busy timeout"))?;
        conn.set_prepared_statement_cache_capacity(64);
        let (key_types, columns, existing) = existing_table(&conn, &opts)?;
        let mut writer = Writer::new(
            conn,
            opts.table.clone(),
            opts.keys.clone(),
            opts.history.clone(),
            existing.then(|| columns.clone()),
        );
        writer.checkpoint_aside(db, pragmas)?;
        Ok(Ingest::with_store(
            opts,
            Store::File(writer),
            key_types,
            columns,
        ))
    }

    /// Opens an engine that writes each window into the rqlite cluster at `target` (see
    /// [`crate::rqlite`]), as one `?transaction` request with its resume point: the
    /// merge is the same as into a file; `durability` and `cache_kib` are the
    /// cluster's business and do not apply.
    #[cfg(feature = "network")]
    pub fn open_rqlite(
        target: &crate::rqlite::RqliteTarget,
        ropts: &crate::rqlite::RqliteOptions,
        opts: IngestOptions,
    ) -> Result<Ingest> {
        check_options(&opts)?;
        let client = crate::rqlite::connect(target, ropts)?;
        let mirror = cluster::ClusterWriter::schema_mirror(&client, &opts.table)?;
        let (key_types, columns, existing) = existing_table(&mirror, &opts)?;
        let writer = cluster::ClusterWriter::new(
            client,
            opts.table.clone(),
            opts.keys.clone(),
            opts.history.clone(),
            existing.then(|| columns.clone()),
        );
        Ok(Ingest::with_store(
            opts,
            Store::Cluster(writer),
            key_types,
            columns,
        ))
    }

    fn with_store(
        opts: IngestOptions,
        store: Store,
        key_types: Option<Vec<ColumnType>>,
        columns: Vec<(String, Option<ColumnType>)>,
    ) -> Ingest {
        let by_name = columns
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.to_ascii_lowercase(), i))
            .collect();
        Ingest {
            scratch: Some(Messages::new(&opts.keys)),
            opts,
            writer: Arc::new(Mutex::new(store)),
            in_flight: None,
            window: Window::default(),
            spare: None,
            key_types,
            columns,
            exact: HashMap::new(),
            by_name,
            colmap: vec![],
            totals: Totals::default(),
        }
    }

    fn writer(&self) -> Result<MutexGuard<'_, Store>> {
        self.writer
            .lock()
            .map_err(|_| Error::internal("an earlier commit failed; the engine cannot go on"))
    }

    /// Where a previous run stopped reading `source`, if it committed anything from it.
    pub fn resume_point(&self, source: &str) -> Result<Option<SourcePosition>> {
        Ok(self
            .writer()?
            .resume_point(source)?
            .map(|(line, offset, file, position)| SourcePosition {
                source: source.into(),
                file: file.map(Into::into),
                line,
                offset,
                position: position.map(Into::into),
            }))
    }

    /// Whether raw messages are kept in a history table.
    pub fn keeps_history(&self) -> bool {
        self.opts.history.is_some()
    }

    /// The fields that name a row, for [`Messages::new`].
    pub fn key_fields(&self) -> &[String] {
        &self.opts.keys
    }

    /// Applies messages `from..` of `batch` in order, until the batch ends, the window is
    /// full (`commit_rows`; the caller commits and pushes again from `next`), or `bad`
    /// returns `false` for a bad message. `bad` sees every bad message with its reason;
    /// a bad message still moves the resume point. `source` names the file whose
    /// positions the messages carry, if they are resume points.
    pub fn push_messages(
        &mut self,
        batch: &Messages,
        from: usize,
        source: Option<&FileSource>,
        bad: impl FnMut(&Message, &str) -> bool,
    ) -> Pushed {
        self.push_from(batch, from, source, bad, true)
    }

    /// As [`Ingest::push_messages`]; with `bounded` false the window takes every message.
    fn push_from(
        &mut self,
        batch: &Messages,
        from: usize,
        source: Option<&FileSource>,
        mut bad: impl FnMut(&Message, &str) -> bool,
        bounded: bool,
    ) -> Pushed {
        self.colmap.clear();
        self.colmap.resize(batch.name_count(), UNMAPPED);
        let msgs = batch.messages();
        let mut next = from;
        let mut last = None;
        let mut stopped = false;
        while next < msgs.len() && !(bounded && self.full()) {
            let m = &msgs[next];
            next += 1;
            if self.window.start.is_none() {
                self.window.start = Some(Instant::now());
            }
            last = Some(m.meta);
            if let Err(reason) = self.apply(batch, m) {
                self.window.rejects += 1;
                self.totals.rejects += 1;
                if !bad(m, &reason) {
                    stopped = true;
                    break;
                }
            }
        }
        if let (Some(src), Some(meta)) = (source, last) {
            let position = match &src.position_field {
                // The last pushed message that carries a position; else the window's.
                Some(field) => match msgs[from..next]
                    .iter()
                    .rev()
                    .find_map(|m| batch.position_of(m, field))
                {
                    Some(p) => {
                        let p: Arc<str> = p.into();
                        self.totals.last_position = Some(p.to_string());
                        Some(p)
                    }
                    None => self
                        .window
                        .position
                        .as_ref()
                        .and_then(|w| w.position.clone()),
                },
                None => None,
            };
            // A feed is resumed by its position alone: without one there is nothing to store.
            if src.position_field.is_none() || position.is_some() {
                self.window.position = Some(SourcePosition {
                    source: src.path.clone(),
                    file: src.file.clone(),
                    line: meta.next_line,
                    offset: meta.next_offset,
                    position,
                });
            }
        }
        Pushed { next, stopped }
    }

    fn full(&self) -> bool {
        self.pending() as usize >= self.opts.commit_rows
            || self.window.entries.len() >= MAX_WINDOW_ENTRIES
            || self.window.rows.len() >= MAX_WINDOW_ENTRIES
    }

    fn apply(&mut self, batch: &Messages, m: &Message) -> std::result::Result<(), String> {
        if let Some(reason) = &m.bad {
            return Err(reason.clone());
        }
        let key = batch.key(m);
        let nkeys = batch.key_count();
        match &self.key_types {
            Some(t) => {
                let same = decode_key(key, nkeys).zip(t).all(|(k, t)| {
                    matches!(
                        (k, t),
                        (KeyRef::Int(_), ColumnType::Integer) | (KeyRef::Text(_), ColumnType::Text)
                    )
                });
                if !same {
                    let want: Vec<&str> = t.iter().map(|t| t.sql()).collect();
                    return Err(format!(
                        "the key is of another type than the table's ({})",
                        want.join(", ")
                    ));
                }
            }
            None => {
                self.key_types = Some(
                    decode_key(key, nkeys)
                        .map(|k| match k {
                            KeyRef::Int(_) => ColumnType::Integer,
                            KeyRef::Text(_) => ColumnType::Text,
                        })
                        .collect(),
                )
            }
        }
        // Columns first, so a message that cannot be stored changes nothing.
        let new_names = batch
            .fields(m)
            .iter()
            .filter(|(name, _)| self.colmap[*name as usize] == UNMAPPED)
            .count();
        if new_names > 0 && self.columns.len() + nkeys + new_names > MAX_COLUMNS {
            let new: std::collections::HashSet<String> = batch
                .fields(m)
                .iter()
                .filter(|(name, _)| self.colmap[*name as usize] == UNMAPPED)
                .map(|(name, _)| batch.name(*name).to_ascii_lowercase())
                .filter(|n| !self.by_name.contains_key(n))
                .collect();
            if self.columns.len() + nkeys + new.len() > MAX_COLUMNS {
                return Err(format!(
                    "{} new fields would give the table more than SQLite's {MAX_COLUMNS} columns",
                    new.len()
                ));
            }
        }
        for &(name, val) in batch.fields(m) {
            if self.colmap[name as usize] == UNMAPPED {
                self.colmap[name as usize] = self.column_for(batch.name(name), &val) as u32;
            }
        }
        let row = self.window.row_for(key);
        for &(name, val) in batch.fields(m) {
            if val == Val::Null && self.opts.null_keep {
                continue;
            }
            let col = self.colmap[name as usize];
            if let (Some(declared), Some(k)) = (self.columns[col as usize].1, kind(&val)) {
                if declared != k && !(declared == ColumnType::Real && k == ColumnType::Integer) {
                    self.totals.type_mismatches += 1;
                }
            }
            self.window.set(row, col, val, &batch.text);
        }
        if self.opts.history.is_some() {
            let raw = batch.raw(m);
            let at = self.window.text.len();
            self.window.text.extend_from_slice(raw);
            let end = self.window.text.len();
            self.window.history.push((now_unix(), at, end));
        }
        self.window.messages += 1;
        self.totals.messages += 1;
        Ok(())
    }

    /// The column for field `name`, added (declared by `first`'s kind) if new. Names that
    /// differ only in ASCII case share a column, as SQLite's column names do.
    fn column_for(&mut self, name: &str, first: &Val) -> usize {
        if let Some(&i) = self.exact.get(name) {
            return i;
        }
        let lower = name.to_ascii_lowercase();
        let i = match self.by_name.get(&lower) {
            Some(&i) => i,
            None => {
                self.by_name.insert(lower, self.columns.len());
                self.columns.push((name.to_string(), kind(first)));
                self.columns.len() - 1
            }
        };
        self.exact.insert(name.to_string(), i);
        i
    }

    /// Applies one message given as parsed text, through the same path as a batch.
    fn push_one(
        &mut self,
        line: &[u8],
        raw: Option<&[u8]>,
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        let mut batch = self
            .scratch
            .take()
            .unwrap_or_else(|| Messages::new(&self.opts.keys));
        batch.clear();
        let meta = LineMeta {
            line: position.as_ref().map_or(0, |p| p.line.saturating_sub(1)),
            column: 1,
            next_line: position.as_ref().map_or(0, |p| p.line),
            next_offset: position.as_ref().map_or(0, |p| p.offset),
        };
        batch.push_with_raw(line, raw, meta);
        let mut reason = None;
        let source = position.as_ref().map(|p| FileSource {
            path: p.source.clone(),
            file: p.file.clone(),
            position_field: None,
        });
        self.push_from(
            &batch,
            0,
            source.as_ref(),
            |_, r| {
                reason = Some(r.to_string());
                true
            },
            false,
        );
        self.scratch = Some(batch);
        match reason {
            Some(r) => Err(r),
            None => Ok(()),
        }
    }

    /// Parses and applies one raw line. An error is a bad message (the reason); the
    /// engine goes on.
    pub fn push_line(
        &mut self,
        line: &[u8],
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        let line = line.trim_ascii();
        let raw = self.opts.history.is_some().then_some(line);
        self.push_one(line, raw, position)
    }

    /// Applies one message (`raw` is kept for the history table). An error is a bad
    /// message: nothing of it was applied.
    pub fn push(
        &mut self,
        obj: Map<String, Value>,
        raw: String,
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        let line = serde_json::to_vec(&obj).map_err(|e| e.to_string())?;
        let raw = self.opts.history.is_some().then_some(raw.as_bytes());
        self.push_one(&line, raw, position)
    }

    /// Counts a bad message (its position still advances the resume point).
    pub fn reject(
        &mut self,
        reason: String,
        position: Option<SourcePosition>,
    ) -> std::result::Result<(), String> {
        if position.is_some() {
            self.window.position = position;
        }
        if self.window.start.is_none() {
            self.window.start = Some(Instant::now());
        }
        self.window.rejects += 1;
        self.totals.rejects += 1;
        Err(reason)
    }

    /// Whether the open window should be committed now.
    pub fn due(&self) -> bool {
        self.full()
            || self
                .window
                .start
                .is_some_and(|t| t.elapsed() >= self.opts.commit_interval)
    }

    /// Messages in the open window.
    pub fn pending(&self) -> u64 {
        self.window.messages + self.window.rejects
    }

    /// Totals since the engine was opened.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The database connection, to read between commits: it shows every window whose
    /// commit has finished (a window being written in the background holds it until
    /// then).
    ///
    /// An engine writing to an rqlite cluster (`Ingest::open_rqlite`) has no local
    /// database: that is an error.
    pub fn connection(&self) -> Result<ConnectionGuard<'_>> {
        let guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        #[cfg(feature = "network")]
        if matches!(*guard, Store::Cluster(_)) {
            return Err(Error::usage(
                "this engine writes to an rqlite cluster: it has no local database to read",
            ));
        }
        Ok(ConnectionGuard(guard))
    }

    /// Hands the open window to what writes it: its columns and key types as of now.
    fn close_window(&mut self) -> Window {
        let fresh = self.spare.take().unwrap_or_default();
        let mut w = std::mem::replace(&mut self.window, fresh);
        w.key_types.clone_from(&self.key_types);
        w.columns.clone_from(&self.columns);
        w
    }

    fn account(&mut self, mut w: Window, stats: CommitStats) -> CommitStats {
        self.totals.inserted += stats.inserted;
        self.totals.updated += stats.updated;
        self.totals.rejects += stats.refused.len() as u64;
        self.totals.commits += 1;
        self.totals.new_columns += stats.new_columns;
        w.clear();
        self.spare = Some(w);
        stats
    }

    /// Waits for the window being written in the background, if any, and returns its
    /// statistics. After an error nothing of that window is written and the engine must
    /// not be used again.
    pub fn wait(&mut self) -> Result<Option<CommitStats>> {
        let Some(h) = self.in_flight.take() else {
            return Ok(None);
        };
        let (w, result) = h
            .join()
            .map_err(|_| Error::internal("the commit thread panicked"))?;
        let stats = result?;
        Ok(Some(self.account(w, stats)))
    }

    /// Closes the open window and writes it on another thread, after waiting for the one
    /// before it (whose statistics this returns). Errors are those of the earlier window.
    pub fn commit_background(&mut self) -> Result<Option<CommitStats>> {
        if self.window.is_empty() {
            return self.wait();
        }
        let mut w = self.close_window();
        // Sorted here, while the window before it is still being written: the thread
        // that writes SQLite is the pipeline's narrowest stage.
        w.prepare();
        let done = self.wait()?;
        let writer = Arc::clone(&self.writer);
        self.in_flight = Some(
            std::thread::Builder::new()
                .name("liteload-commit".into())
                .spawn(move || {
                    let r = run_commit(&writer, &mut w);
                    (w, r)
                })
                .map_err(|e| Error::io(None, e))?,
        );
        Ok(done)
    }

    /// Writes the open window in one transaction, on this thread, after any window being
    /// written in the background (whose statistics are then only in the totals). On
    /// error nothing of the window is written and the engine must not be used again.
    pub fn commit(&mut self) -> Result<CommitStats> {
        self.wait()?;
        if self.window.is_empty() {
            return Ok(CommitStats::default());
        }
        let mut w = self.close_window();
        let stats = run_commit(&self.writer, &mut w)?;
        Ok(self.account(w, stats))
    }
}

impl Drop for Ingest {
    /// A window being written in the background is finished (the open one is not).
    fn drop(&mut self) {
        let _ = self.wait();
    }
}
