//! A table (or a query) read on several connections at once, all inside one snapshot,
//! and handed on as Arrow record batches in a fixed order.
//!
//! The snapshot ([`Pool::open`]): one connection takes `LOCK TABLES … READ` on every
//! table to be copied, which waits for the transactions writing them to end and holds
//! off new ones; each reading connection then starts `START TRANSACTION WITH
//! CONSISTENT SNAPSHOT` (InnoDB's read view is made there), and the lock is let go. So
//! every connection sees the same rows of those tables, as mydumper's does, without the
//! global lock (`RELOAD`) that needs. Without the `LOCK TABLES` privilege the copy
//! reads on one connection, inside its one snapshot.
//!
//! The rows are cut into pieces (ranges of an integer primary key, in key order, or the
//! whole table), each a prepared `SELECT` read with the binary protocol on a connection
//! of the pool, decoded into batches and handed on in piece order
//! ([`crate::source::ordered`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use mysql::prelude::Queryable;
use mysql::{Conn, Value};

use super::connect::Server;
use super::decode::{self, Decoder, Kind};
use crate::error::{Error, Result};
use crate::source::ordered::{Ordered, Pieces};

/// Bytes of values at which a batch is handed on, whatever its row count.
const BATCH_BYTES: u64 = 16 << 20;

/// Connections that all see one snapshot, each used by one worker at a time.
pub(crate) struct Pool {
    server: Server,
    idle: Mutex<Vec<Conn>>,
    freed: Condvar,
    size: usize,
}

/// `name` quoted as a MySQL identifier (backquotes, a backquote doubled).
pub(crate) fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

impl Pool {
    /// Up to `want` connections inside one snapshot of `tables` (`database.table`
    /// pairs; empty for a query: one connection then), with a note where the snapshot
    /// could be had on one connection only.
    pub(crate) fn open(
        server: &Server,
        want: usize,
        tables: &[(String, String)],
    ) -> Result<(Pool, Option<String>)> {
        let begin = |c: &mut Conn| {
            c.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .and_then(|()| {
                    c.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                })
                .map_err(|e| server.error("beginning the snapshot", &e))
        };
        let single = |note: Option<String>| -> Result<(Pool, Option<String>)> {
            let mut c = server.connect()?;
            begin(&mut c)?;
            Ok((Pool::of(server, vec![c]), note))
        };
        if want <= 1 || tables.is_empty() {
            return single(None);
        }
        let mut lock = server.connect()?;
        let list: Vec<String> = tables
            .iter()
            .map(|(d, t)| format!("{}.{} READ", quote(d), quote(t)))
            .collect();
        match lock.query_drop(format!("LOCK TABLES {}", list.join(", "))) {
            Ok(()) => {}
            // ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR: no LOCK TABLES.
            Err(mysql::Error::MySqlError(e)) if matches!(e.code, 1044 | 1142) => {
                return single(Some(format!(
                    "read on one connection: the user may not LOCK TABLES, which reading \
                     on several inside one snapshot needs ({})",
                    e.message
                )));
            }
            Err(e) => return Err(server.error("locking the tables for the snapshot", &e)),
        }
        let mut conns = vec![];
        for _ in 0..want {
            let mut c = server.connect()?;
            begin(&mut c)?;
            conns.push(c);
        }
        lock.query_drop("UNLOCK TABLES")
            .map_err(|e| server.error("unlocking the tables", &e))?;
        Ok((Pool::of(server, conns), None))
    }

    fn of(server: &Server, conns: Vec<Conn>) -> Pool {
        Pool {
            server: server.clone(),
            size: conns.len(),
            idle: Mutex::new(conns),
            freed: Condvar::new(),
        }
    }

    /// How many connections read at once.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// A connection of the pool, waiting for one to be free.
    pub(crate) fn take(&self) -> Conn {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(c) = idle.pop() {
                return c;
            }
            idle = self.freed.wait(idle).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub(crate) fn give(&self, c: Conn) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
        self.freed.notify_one();
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }
}

/// One statement of a reader and its parameters (a key range's bounds).
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub(crate) sql: String,
    pub(crate) params: Vec<i64>,
}

/// The rows of one table or query (see the module's docs), read when first asked for.
pub(crate) struct Reader {
    schema: SchemaRef,
    ordered: Ordered<Statements>,
}

/// A reader's pieces and how they are decoded.
struct Statements {
    /// Shown in messages: `database.table`, or `query`.
    name: String,
    schema: SchemaRef,
    kinds: Vec<Kind>,
    pieces: Vec<Piece>,
    pool: Arc<Pool>,
    batch_rows: usize,
    bytes_read: Arc<AtomicU64>,
}

impl Reader {
    /// A reader of `pieces` (statements whose rows have `columns`) on the connections
    /// of `pool`, in batches of `batch_rows`; the bytes it reads are added to
    /// `progress`, which shows its name while it reads.
    pub(crate) fn new(
        name: String,
        columns: &[(String, Kind)],
        pieces: Vec<Piece>,
        pool: Arc<Pool>,
        batch_rows: usize,
        progress: &crate::progress::Progress,
    ) -> Self {
        let schema = decode::schema(columns);
        let workers = pool.size();
        let statements = Statements {
            name: name.clone(),
            schema: schema.clone(),
            kinds: columns.iter().map(|c| c.1).collect(),
            pieces,
            pool,
            batch_rows: batch_rows.max(1),
            bytes_read: progress.bytes_read.clone(),
        };
        Reader {
            schema,
            ordered: Ordered::new(
                name,
                statements,
                workers,
                "liteload-mysql-read",
                progress.part_handle(),
            ),
        }
    }
}

impl Iterator for Reader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.ordered
            .next_batch()
            .map(|b| b.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Pieces for Statements {
    fn count(&self) -> usize {
        self.pieces.len()
    }

    /// Reads piece `piece` on a connection of the pool (given back after it, whole or
    /// failed: a failed statement leaves the connection usable).
    fn read(&self, piece: usize, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<bool> {
        let mut conn = self.pool.take();
        let read = self.read_on(&mut conn, piece, emit);
        self.pool.give(conn);
        read
    }
}

impl Statements {
    fn read_on(
        &self,
        conn: &mut Conn,
        piece: usize,
        emit: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<bool> {
        let p = &self.pieces[piece];
        let server = self.pool.server();
        let what = format!("reading {}", self.name);
        let params = match p.params.as_slice() {
            [] => mysql::Params::Empty,
            some => mysql::Params::Positional(some.iter().map(|&i| Value::Int(i)).collect()),
        };
        let mut result = conn
            .exec_iter(p.sql.as_str(), params)
            .map_err(|e| server.error(&what, &e))?;
        let mut decoder = Decoder::new(self.schema.clone(), self.kinds.clone());
        let mut row_no = 0u64;
        let mut bytes = 0u64;
        let set = result
            .iter()
            .ok_or_else(|| Error::database(server.shown.clone(), format!("{what}: no result")))?;
        for row in set {
            let row = row.map_err(|e| server.error(&what, &e))?;
            row_no += 1;
            // The row's values, taken whole (none was taken before).
            let values = row.unwrap();
            for v in &values {
                bytes += match v {
                    Value::Bytes(b) => b.len() as u64 + 1,
                    Value::NULL => 1,
                    _ => 8,
                };
            }
            if let Err((c, why)) = decoder.push(&values) {
                let column = self.schema.field(c).name();
                return Err(Error::database(
                    server.shown.clone(),
                    format!(
                        "{what}: row {row_no} of its piece {}, column {column:?}: {why}",
                        piece + 1
                    ),
                ));
            }
            // A batch is handed on at its row count, or sooner where its values are big
            // (long texts, blobs): what a batch holds is bounded by bytes too.
            if decoder.rows() >= self.batch_rows || bytes >= BATCH_BYTES {
                self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
                bytes = 0;
                if !emit(decoder.finish()) {
                    return Ok(false);
                }
            }
        }
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        if decoder.rows() > 0 && !emit(decoder.finish()) {
            return Ok(false);
        }
        Ok(true)
    }
}
