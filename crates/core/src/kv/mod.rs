//! [`KvStore`]: a key-value store of blobs in one SQLite file.
//!
//! Schema: `kv(k PRIMARY KEY NOT NULL, v BLOB NOT NULL)`, an ordinary rowid table.
//! The key column has no declared type, so a key keeps its kind: the integer `1` and the
//! text `"1"` are different keys. The table keeps rowids (no `WITHOUT ROWID`) because
//! SQLite's incremental blob I/O, which streams values in and out without holding them
//! whole, works only on rowid tables.
//!
//! A store made with [`KvOptions::int_keys`] is `kv(k INTEGER PRIMARY KEY, v BLOB NOT
//! NULL)`, as write-up 001's kvtest makes it: the key *is* the rowid, so a read is one
//! B-tree lookup instead of an index lookup and then the table. Such a store holds
//! integer keys only: writing a text key is an error, and reading one finds nothing. An
//! existing store is used as its schema says, whatever the options.
//!
//! Every write is its own transaction unless made through [`KvStore::batch`]; reads see
//! the last commit. Durability follows [`Durability`]: `balanced` (WAL, NORMAL) by default.

use std::io::{Read, Write};
use std::path::Path;

use rusqlite::blob::Blob;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params, Connection, OptionalExtension, ToSql, MAIN_DB};

mod export;

pub use export::{safe_relative, Export};

use crate::durability::Durability;
use crate::error::{Error, Result};

/// A key: text (a path, a name) or an integer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// An integer key.
    Int(i64),
    /// A text key.
    Text(String),
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::Text(s.to_string())
    }
}

impl From<i64> for Key {
    fn from(i: i64) -> Key {
        Key::Int(i)
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Int(i) => write!(f, "{i}"),
            Key::Text(s) => f.write_str(s),
        }
    }
}

impl ToSql for Key {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Key::Int(i) => ValueRef::Integer(*i),
            Key::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// How a store is opened.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct KvOptions {
    /// `balanced` (default), `durable` or `unsafe`. `atomic-new` does not apply to a store
    /// that is written in place.
    pub durability: Durability,
    /// Bytes of the file SQLite may read through `mmap` (0: none).
    pub mmap_size: u64,
    /// Page size of a new store.
    pub page_size: Option<u32>,
    /// SQLite's `cache_size` (pages if positive, KiB if negative).
    pub cache_size: Option<i64>,
    /// A new store keys by integer, the key being the rowid (see the module notes).
    pub int_keys: bool,
    /// A store may be added to a file that holds other tables and none (true by
    /// default). False refuses such a file (a [`crate::ErrorKind::Schema`] error, the file
    /// unchanged), so that a store opened on the wrong database does not quietly add
    /// its table there; a new or empty file, or one with a store, opens either way.
    pub beside_other_tables: bool,
}

impl Default for KvOptions {
    fn default() -> Self {
        KvOptions {
            durability: Durability::Balanced,
            mmap_size: 0,
            page_size: None,
            cache_size: None,
            int_keys: false,
            beside_other_tables: true,
        }
    }
}

const CHUNK: usize = 64 * 1024;

/// Write-up 001's folder layout for integer keys, at most 100 entries a folder: the
/// key as six (or more) digits, cut into two-digit folders: 12345 -> `01/23/45`.
/// `key` must not be negative.
pub fn tree_path(key: i64) -> std::path::PathBuf {
    debug_assert!(key >= 0);
    let d = format!("{key:06}");
    let (head, tail) = d.split_at(d.len() - 4);
    [head, &tail[..2], &tail[2..]].iter().collect()
}

/// Refuses a file at `path` that holds tables and no store (read without writing; a file
/// that does not exist passes).
fn refuse_other_tables(path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let read = |path: &Path| -> rusqlite::Result<(bool, Vec<String>)> {
        let conn = Connection::open_with_flags(path, flags)?;
        let mut stmt = conn.prepare(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok((names.iter().any(|n| n == "kv"), names))
    };
    let (has_store, names) =
        read(path).map_err(|e| Error::sqlite(format!("reading {}", path.display()), e))?;
    if has_store || names.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    Err(Error::schema(format!(
        "{} holds other tables ({}{}) and no store: is it the database you meant? Opening it \
         as a store would add a table `kv` to it",
        path.display(),
        shown.join(", "),
        if names.len() > 3 { ", …" } else { "" }
    )))
}

/// A blob store. Not `Sync`: open one per thread.
pub struct KvStore {
    conn: Connection,
    /// The file, for error messages.
    path: std::path::PathBuf,
    /// `k` is the rowid (`INTEGER PRIMARY KEY`): integer keys only.
    int_keys: bool,
}

impl Drop for KvStore {
    fn drop(&mut self) {
        // A write that failed (a full disk) leaves its frames in the WAL: give the space
        // back before SQLite closes the file.
        crate::durability::release_wal(&self.conn);
    }
}

impl KvStore {
    /// An SQLite error while doing `ctx`, naming the store's file.
    fn sql<'a>(&'a self, ctx: &'a str) -> impl FnOnce(rusqlite::Error) -> Error + 'a {
        move |e| Error::sqlite(format!("{}: {ctx}", self.path.display()), e)
    }

    /// Opens (creating if needed) the store at `path`.
    pub fn open(path: &Path, opts: KvOptions) -> Result<KvStore> {
        let pragmas = opts.durability.shared_pragmas()?;
        if !opts.beside_other_tables {
            refuse_other_tables(path)?;
        }
        let conn = Connection::open(path)
            .map_err(|e| Error::sqlite(format!("opening {}", path.display()), e))?;
        let setup = || -> rusqlite::Result<bool> {
            crate::sqlite_info::configure(&conn)?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            if let Some(ps) = opts.page_size {
                conn.execute_batch(&format!("PRAGMA page_size={ps};"))?;
            }
            conn.execute_batch(pragmas)?;
            conn.execute_batch(&format!("PRAGMA mmap_size={};", opts.mmap_size))?;
            if let Some(cs) = opts.cache_size {
                conn.execute_batch(&format!("PRAGMA cache_size={cs};"))?;
            }
            conn.execute_batch(if opts.int_keys {
                "CREATE TABLE IF NOT EXISTS kv(k INTEGER PRIMARY KEY, v BLOB NOT NULL)"
            } else {
                "CREATE TABLE IF NOT EXISTS kv(k PRIMARY KEY NOT NULL, v BLOB NOT NULL)"
            })?;
            // What the file holds decides, not the options: `k` declared INTEGER and the
            // only primary key column is the rowid.
            conn.query_row(
                "SELECT count(*) = 1 AND max(name = 'k' AND upper(type) = 'INTEGER') FROM pragma_table_info('kv') WHERE pk > 0",
                [],
                |r| r.get::<_, bool>(0),
            )
        };
        let int_keys =
            setup().map_err(|e| Error::sqlite(format!("preparing {}", path.display()), e))?;
        crate::durability::checkpoint_now(&conn);
        Ok(KvStore {
            conn,
            path: path.to_path_buf(),
            int_keys,
        })
    }

    /// Whether this store keys by integer only, the key being the rowid.
    pub fn int_keys(&self) -> bool {
        self.int_keys
    }

    /// Refuses a text key for a store of integer keys.
    fn writable(&self, key: &Key) -> Result<()> {
        match key {
            Key::Text(t) if self.int_keys => Err(Error::usage(format!(
                "{}: this store keys by integer (its keys are rowids); {t:?} is text",
                self.path.display()
            ))),
            _ => Ok(()),
        }
    }

    /// Whether `key` could be in this store at all.
    fn could_hold(&self, key: &Key) -> bool {
        !(self.int_keys && matches!(key, Key::Text(_)))
    }

    /// Runs `f` in one read transaction: every read in it sees the same commit, and the
    /// store's lock is taken once instead of once per read (what kvtest does). Inside a
    /// [`KvStore::batch`], `f` runs in the batch's transaction, and sees its writes.
    pub fn reading<T>(&self, f: impl FnOnce(&KvStore) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            return f(self);
        }
        self.conn
            .execute_batch("BEGIN")
            .map_err(self.sql("beginning a read"))?;
        let out = f(self);
        let end = self.conn.execute_batch("COMMIT");
        let v = out?;
        end.map_err(self.sql("ending a read"))?;
        Ok(v)
    }

    /// The connection, for queries this API does not cover.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Stores `value` under `key`, replacing any value there.
    pub fn put(&self, key: &Key, value: &[u8]) -> Result<()> {
        self.writable(key)?;
        self.conn
            .prepare_cached(
                "INSERT INTO kv(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
            )
            .and_then(|mut s| s.execute(params![key, value]))
            .map_err(self.sql("storing a value"))?;
        Ok(())
    }

    /// Stores `len` bytes read from `r` under `key`, streamed through incremental blob
    /// I/O in 64 KiB pieces: the value is never in memory whole. All or nothing: if `r`
    /// fails or ends early, the store is as it was.
    pub fn put_reader(&self, key: &Key, mut r: impl Read, len: u64) -> Result<()> {
        self.writable(key)?;
        let len_i = i64::try_from(len).map_err(|_| Error::usage("value too large"))?;
        // A savepoint, so this is atomic on its own and inside a batch alike.
        self.conn
            .execute_batch("SAVEPOINT put_reader")
            .map_err(self.sql("beginning a savepoint"))?;
        let result = self.stream_in(key, &mut r, len, len_i);
        let end = match result {
            Ok(()) => "RELEASE put_reader",
            Err(_) => "ROLLBACK TO put_reader; RELEASE put_reader",
        };
        let ended = self.conn.execute_batch(end);
        // After a failure SQLite may have rolled the whole transaction back already (a
        // full disk does): then the savepoint is gone, and the first error is the one
        // that says what happened.
        result?;
        ended.map_err(self.sql("ending a savepoint"))
    }

    fn stream_in(&self, key: &Key, r: &mut impl Read, len: u64, len_i: i64) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO kv(k, v) VALUES (?1, zeroblob(?2)) ON CONFLICT(k) DO UPDATE SET v = excluded.v")
            .and_then(|mut s| s.execute(params![key, len_i]))
            .map_err(self.sql("making room for a value"))?;
        let rowid = self
            .rowid(key)?
            .ok_or_else(|| Error::internal("the value vanished while being written"))?;
        let mut blob = self
            .conn
            .blob_open(MAIN_DB, c"kv", c"v", rowid, false)
            .map_err(self.sql("opening the value for writing"))?;
        let mut buf = vec![0u8; CHUNK];
        let mut left = len;
        while left > 0 {
            let want = (left as usize).min(CHUNK);
            let n = r
                .read(&mut buf[..want])
                .map_err(|e| Error::io(Some(self.path.clone()), e))?;
            if n == 0 {
                return Err(Error::io(
                    None,
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("the input ended {left} bytes early"),
                    ),
                ));
            }
            blob.write_all(&buf[..n])
                .map_err(|e| Error::io(Some(self.path.clone()), e))?;
            left -= n as u64;
        }
        Ok(())
    }

    fn rowid(&self, key: &Key) -> Result<Option<i64>> {
        if !self.could_hold(key) {
            return Ok(None);
        }
        self.conn
            .prepare_cached("SELECT rowid FROM kv WHERE k = ?1")
            .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional())
            .map_err(self.sql("finding a key"))
    }

    /// The value under `key`, read with one SQL statement.
    pub fn get(&self, key: &Key) -> Result<Option<Vec<u8>>> {
        self.read_with(key, <[u8]>::to_vec)
    }

    /// Replaces `buf` with the value under `key`, read with one SQL statement and copied
    /// once, straight from SQLite's row into `buf` (whose allocation is reused). Returns
    /// `false` (and leaves `buf` empty) when there is none.
    pub fn get_into(&self, key: &Key, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        Ok(self.read_with(key, |v| buf.extend_from_slice(v))?.is_some())
    }

    /// Calls `f` with the value under `key`, borrowed from SQLite's row: no copy is
    /// made. Returns `None` when there is none.
    pub fn read_with<T>(&self, key: &Key, f: impl FnOnce(&[u8]) -> T) -> Result<Option<T>> {
        if !self.could_hold(key) {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT v FROM kv WHERE k = ?1")
            .map_err(self.sql("reading a value"))?;
        let mut rows = stmt.query([key]).map_err(self.sql("reading a value"))?;
        let Some(r) = rows.next().map_err(self.sql("reading a value"))? else {
            return Ok(None);
        };
        let v = r.get_ref(0).map_err(self.sql("reading a value"))?;
        let bytes = v.as_blob().map_err(|e| {
            Error::sqlite(
                format!("{}: reading a value", self.path.display()),
                rusqlite::Error::FromSqlConversionFailure(0, v.data_type(), Box::new(e)),
            )
        })?;
        Ok(Some(f(bytes)))
    }

    /// A reader over the value under `key` (incremental blob I/O: `Read + Seek`, nothing
    /// read until asked). It must be dropped before the value is written again.
    pub fn open_reader(&self, key: &Key) -> Result<Option<Blob<'_>>> {
        let Some(rowid) = self.rowid(key)? else {
            return Ok(None);
        };
        self.conn
            .blob_open(MAIN_DB, c"kv", c"v", rowid, true)
            .map(Some)
            .map_err(self.sql("opening a value for reading"))
    }

    /// A reader for many values in a row. It keeps one blob handle open and moves it
    /// from value to value (`sqlite3_blob_reopen`), where [`KvStore::open_reader`] opens a
    /// new one each time, which costs a statement compile per value.
    pub fn values(&self) -> ValueReader<'_> {
        ValueReader {
            store: self,
            blob: None,
        }
    }

    /// Removes `key`. Returns whether it was there.
    pub fn delete(&self, key: &Key) -> Result<bool> {
        if !self.could_hold(key) {
            return Ok(false);
        }
        let n = self
            .conn
            .prepare_cached("DELETE FROM kv WHERE k = ?1")
            .and_then(|mut s| s.execute([key]))
            .map_err(self.sql("deleting a key"))?;
        Ok(n > 0)
    }

    /// Whether `key` has a value.
    pub fn contains(&self, key: &Key) -> Result<bool> {
        Ok(self.rowid(key)?.is_some())
    }

    /// Keys in order (integers first, then text by bytes), text keys limited to those
    /// starting with `prefix` when one is given.
    pub fn keys(&self, prefix: Option<&str>) -> Result<Vec<Key>> {
        let map = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Key> {
            Ok(match r.get_ref(0)? {
                ValueRef::Integer(i) => Key::Int(i),
                other => Key::Text(
                    String::from_utf8_lossy(other.as_bytes().unwrap_or_default()).into_owned(),
                ),
            })
        };
        let out = match prefix {
            None => {
                let mut s = self
                    .conn
                    .prepare("SELECT k FROM kv ORDER BY k")
                    .map_err(self.sql("listing keys"))?;
                let v = s
                    .query_map([], map)
                    .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>());
                v.map_err(self.sql("listing keys"))?
            }
            Some(p) => {
                // substr compares bytes exactly; LIKE would treat % and _ as patterns.
                let mut s = self
                    .conn
                    .prepare("SELECT k FROM kv WHERE typeof(k) = 'text' AND k >= ?1 AND substr(k, 1, length(?1)) = ?1 ORDER BY k")
                    .map_err(self.sql("listing keys"))?;
                let v = s
                    .query_map([p], map)
                    .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>());
                v.map_err(self.sql("listing keys"))?
            }
        };
        Ok(out)
    }

    /// Number of keys.
    pub fn len(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM kv", [], |r| r.get(0))
            .map_err(self.sql("counting keys"))?;
        Ok(n as u64)
    }

    /// Whether the store holds no value.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Runs `f` in one transaction: every put and delete in it commits together, or none
    /// does (when `f` fails).
    pub fn batch<T>(&mut self, f: impl FnOnce(&KvStore) -> Result<T>) -> Result<T> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(self.sql("beginning a batch"))?;
        match f(self) {
            Ok(v) => {
                self.conn
                    .execute_batch("COMMIT")
                    .map_err(self.sql("committing a batch"))?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// Reads values one after another through one reused blob handle. Must be dropped
/// before the store writes again.
pub struct ValueReader<'s> {
    store: &'s KvStore,
    blob: Option<Blob<'s>>,
}

impl ValueReader<'_> {
    /// Replaces `buf` with the value under `key`. Returns `false` (and leaves `buf` empty)
    /// when there is none.
    pub fn read_into(&mut self, key: &Key, buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        let store = self.store;
        // In a store of integer keys the key is the rowid: the handle moves straight to
        // it, one B-tree lookup (a missing key is told apart below).
        let rowid = match key {
            Key::Int(i) if store.int_keys && self.blob.is_some() => *i,
            _ => match store.rowid(key)? {
                Some(r) => r,
                None => return Ok(false),
            },
        };
        match &mut self.blob {
            Some(b) => {
                if let Err(e) = b.reopen(rowid) {
                    // SQLite leaves the handle unusable after a failed move.
                    self.blob = None;
                    if store.int_keys && store.rowid(key)?.is_none() {
                        return Ok(false);
                    }
                    return Err(store.sql("moving to a value")(e));
                }
            }
            None => {
                let b = self
                    .store
                    .conn
                    .blob_open(MAIN_DB, c"kv", c"v", rowid, true)
                    .map_err(store.sql("opening a value for reading"))?;
                self.blob = Some(b);
            }
        }
        let b = self
            .blob
            .as_mut()
            .ok_or_else(|| Error::internal("no blob handle"))?;
        buf.resize(b.len(), 0);
        b.read_at_exact(buf, 0)
            .map_err(store.sql("reading a value"))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    /// SQLite's own check of the whole file.
    fn assert_intact(s: &KvStore) {
        let ok: String = s
            .connection()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity_check runs");
        assert_eq!(ok, "ok");
    }

    fn store() -> Result<(tempfile::TempDir, KvStore)> {
        let d = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let s = KvStore::open(&d.path().join("kv.db"), KvOptions::default())?;
        Ok((d, s))
    }

    #[test]
    fn a_store_of_integer_keys_reads_by_rowid_and_refuses_text() -> Result<()> {
        let d = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let path = d.path().join("int.db");
        let opts = KvOptions {
            int_keys: true,
            ..KvOptions::default()
        };
        let s = KvStore::open(&path, opts)?;
        assert!(s.int_keys());
        for k in [-5i64, 0, 7, i64::MAX] {
            s.put(
                &Key::Int(k),
                &bytes(100 + k.unsigned_abs() as usize % 50, k as u8),
            )?;
        }
        assert_eq!(s.get(&Key::Int(7))?, Some(bytes(107, 7)));
        let mut into = vec![1, 2, 3];
        assert!(s.get_into(&Key::Int(7), &mut into)? && into == bytes(107, 7));
        assert!(!s.get_into(&Key::Int(8), &mut into)? && into.is_empty());
        assert!(!s.get_into(&Key::from("7"), &mut into)?);
        assert_eq!(s.read_with(&Key::Int(7), |v| v.len())?, Some(107));
        assert_eq!(s.read_with(&Key::Int(8), |v| v.len())?, None);
        let err = s.put(&Key::from("7"), b"x").unwrap_err().to_string();
        assert!(err.contains("keys by integer"), "{err}");
        assert!(s.put_reader(&Key::from("a"), &b"x"[..], 1).is_err());
        assert_eq!(s.get(&Key::from("7"))?, None);
        assert!(!s.contains(&Key::from("7"))? && !s.delete(&Key::from("7"))?);
        // One B-tree lookup: the key is the rowid.
        let plan: String = s
            .connection()
            .query_row(
                "EXPLAIN QUERY PLAN SELECT v FROM kv WHERE k = ?1",
                [7],
                |r| r.get(3),
            )
            .map_err(|e| Error::sqlite("plan", e))?;
        assert!(plan.contains("INTEGER PRIMARY KEY (rowid=?)"), "{plan}");
        // The blob reader moves straight to a rowid and tells a missing key apart.
        let mut r = s.values();
        let mut buf = vec![];
        assert!(r.read_into(&Key::Int(0), &mut buf)? && buf == bytes(100, 0));
        assert!(!r.read_into(&Key::Int(8), &mut buf)? && buf.is_empty());
        assert!(r.read_into(&Key::Int(i64::MAX), &mut buf)?);
        assert!(!r.read_into(&Key::from("x"), &mut buf)?);
        assert!(r.read_into(&Key::Int(-5), &mut buf)? && buf == bytes(105, 251));
        drop(r);
        let n = s.reading(|st| {
            let mut n = 0;
            for k in [-5i64, 0, 7, 8] {
                n += st.get(&Key::Int(k))?.is_some() as usize;
            }
            Ok(n)
        })?;
        assert_eq!(n, 3);
        assert_intact(&s);
        drop(s);
        // Reopened without the option, the file's schema decides.
        let s = KvStore::open(&path, KvOptions::default())?;
        assert!(s.int_keys());
        assert_eq!(
            s.keys(None)?,
            vec![Key::Int(-5), Key::Int(0), Key::Int(7), Key::Int(i64::MAX)]
        );
        // A default store keeps both kinds and looks keys up through its index.
        let t = KvStore::open(&d.path().join("any.db"), KvOptions::default())?;
        assert!(!t.int_keys());
        t.put(&Key::from("7"), b"t")?;
        t.put(&Key::Int(7), b"i")?;
        assert_eq!(t.get(&Key::from("7"))?, Some(b"t".to_vec()));
        assert_intact(&t);
        Ok(())
    }

    #[test]
    fn values_of_every_size_round_trip_both_ways() -> Result<()> {
        let (_d, s) = store()?;
        for (i, n) in [0, 1, 100, 4095, 4096, 4097, 65_536, 3 << 20]
            .into_iter()
            .enumerate()
        {
            let v = bytes(n, i as u8);
            let (a, b) = (Key::Text(format!("put/{n}")), Key::Int(n as i64));
            s.put(&a, &v)?;
            s.put_reader(&b, &v[..], n as u64)?;
            assert_eq!(s.get(&a)?.as_deref(), Some(&v[..]), "put {n}");
            assert_eq!(s.get(&b)?.as_deref(), Some(&v[..]), "put_reader {n}");
            let mut r = s.open_reader(&b)?.ok_or_else(|| Error::usage("missing"))?;
            let mut back = vec![];
            r.read_to_end(&mut back).map_err(|e| Error::io(None, e))?;
            assert_eq!(back, v, "open_reader {n}");
            drop(r);
            let mut values = s.values();
            assert!(values.read_into(&a, &mut back)?);
            assert_eq!(back, v, "values, first {n}");
            assert!(values.read_into(&b, &mut back)?, "values, reopened {n}");
            assert_eq!(back, v, "values, reopened {n}");
            assert!(!values.read_into(&Key::from("absent"), &mut back)? && back.is_empty());
        }
        Ok(())
    }

    #[test]
    fn ranged_reads_seek_without_reading_the_rest() -> Result<()> {
        let (_d, s) = store()?;
        let v = bytes(1 << 20, 9);
        s.put(&Key::from("big"), &v)?;
        let mut r = s
            .open_reader(&Key::from("big"))?
            .ok_or_else(|| Error::usage("missing"))?;
        let io = |e| Error::io(None, e);
        r.seek(SeekFrom::Start(500_000)).map_err(io)?;
        let mut buf = [0u8; 10];
        r.read_exact(&mut buf).map_err(io)?;
        assert_eq!(&buf, &v[500_000..500_010]);
        r.seek(SeekFrom::End(-3)).map_err(io)?;
        let mut tail = vec![];
        r.read_to_end(&mut tail).map_err(io)?;
        assert_eq!(tail, &v[v.len() - 3..]);
        Ok(())
    }

    #[test]
    fn keys_keep_their_kind_and_prefixes_are_literal() -> Result<()> {
        let (_d, s) = store()?;
        s.put(&Key::Int(1), b"int")?;
        s.put(&Key::from("1"), b"text")?;
        for k in ["a/x", "a/y", "a%/z", "a_b", "b/1"] {
            s.put(&Key::from(k), k.as_bytes())?;
        }
        assert_eq!(s.get(&Key::Int(1))?.as_deref(), Some(&b"int"[..]));
        assert_eq!(s.get(&Key::from("1"))?.as_deref(), Some(&b"text"[..]));
        assert_eq!(
            s.keys(Some("a/"))?,
            vec![Key::from("a/x"), Key::from("a/y")]
        );
        assert_eq!(s.keys(Some("a%"))?, vec![Key::from("a%/z")]);
        assert_eq!(s.keys(None)?.len(), 7);
        assert!(s.delete(&Key::from("a/x"))?);
        assert!(!s.delete(&Key::from("a/x"))?);
        assert!(!s.contains(&Key::from("a/x"))?);
        assert_eq!(s.len()?, 6);
        Ok(())
    }

    #[test]
    fn a_short_stream_leaves_the_old_value_and_batches_are_atomic() -> Result<()> {
        let (_d, mut s) = store()?;
        let k = Key::from("k");
        s.put(&k, b"old")?;
        assert!(s.put_reader(&k, &b"abc"[..], 10).is_err());
        assert_eq!(s.get(&k)?.as_deref(), Some(&b"old"[..]));
        let failed: Result<()> = s.batch(|s| {
            s.put(&Key::from("x"), b"1")?;
            s.put_reader(&Key::from("y"), &b"22"[..], 2)?;
            Err(Error::usage("changed my mind"))
        });
        assert!(failed.is_err());
        assert!(!s.contains(&Key::from("x"))? && !s.contains(&Key::from("y"))?);
        s.batch(|s| {
            s.put(&Key::from("x"), b"1")?;
            s.put_reader(&Key::from("y"), &b"22"[..], 2)
        })?;
        assert_eq!(s.get(&Key::from("y"))?.as_deref(), Some(&b"22"[..]));
        assert_intact(&s);
        Ok(())
    }

    #[test]
    fn a_read_inside_a_batch_sees_the_batch() -> Result<()> {
        let (_d, mut s) = store()?;
        s.put(&Key::from("a"), b"1")?;
        let seen = s.batch(|s| {
            s.put(&Key::from("b"), b"2")?;
            s.reading(|r| Ok((r.get(&Key::from("a"))?, r.get(&Key::from("b"))?)))
        })?;
        assert_eq!(seen, (Some(b"1".to_vec()), Some(b"2".to_vec())));
        // The batch committed as usual, and a read outside one has its own transaction.
        assert!(s.connection().is_autocommit());
        assert_eq!(s.reading(|r| r.len())?, 2);
        // A read that fails inside a batch fails the batch, which is undone.
        let failed: Result<()> = s.batch(|s| {
            s.put(&Key::from("c"), b"3")?;
            s.reading(|_| Err(Error::usage("no")))
        });
        assert!(failed.is_err() && !s.contains(&Key::from("c"))?);
        assert_intact(&s);
        Ok(())
    }
}
