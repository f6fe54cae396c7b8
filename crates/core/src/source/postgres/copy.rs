//! A table (or a query) read as binary COPY on several connections at once, all inside
//! one snapshot, and handed on as Arrow record batches in a fixed order.
//!
//! The rows are cut into pieces (block ranges of the table, or key ranges of an
//! integer primary key, each its own `COPY (SELECT …) TO STDOUT (FORMAT binary)`), each
//! read on a connection of the [`Pool`] that has set its transaction to the exported
//! snapshot, decoded into batches and handed on in piece order (key order for a key's
//! ranges) by [`crate::source::ordered`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use super::connect::Server;
use super::decode::{self, Decoder, Kind, Next};
use crate::error::{Error, Result};
use crate::source::ordered::{Ordered, Pieces};

/// Connections inside one exported snapshot, made as they are needed and reused.
pub(crate) struct Pool {
    server: Server,
    snapshot: String,
    idle: Mutex<Vec<Session>>,
}

/// A connection of the pool with the runtime that drives it: a worker enters the
/// runtime once a piece and reads the whole piece's stream inside it (the blocking
/// client entered it once a row: a tenth of the copy's CPU, by `perf`).
struct Session {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Pool {
    pub(crate) fn new(server: Server, snapshot: String) -> Self {
        Pool {
            server,
            snapshot,
            idle: Mutex::new(vec![]),
        }
    }

    pub(crate) fn server(&self) -> &Server {
        &self.server
    }

    /// An idle connection, or a new one in a read-only transaction that sees the
    /// snapshot.
    fn take(&self) -> Result<Session> {
        if let Some(c) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(c);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io(None, e))?;
        // The snapshot's name is the server's own (`pg_export_snapshot`), quoted as a
        // literal all the same.
        let quoted = self.snapshot.replace('\'', "''");
        let client = runtime.block_on(async {
            let client = self.server.connect_here().await?;
            client
                .batch_execute(&format!(
                    "SET TIME ZONE 'UTC'; BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{quoted}'"
                ))
                .await
                .map_err(|e| self.server.error("joining the copy's snapshot", &e))?;
            Ok::<_, Error>(client)
        })?;
        Ok(Session { runtime, client })
    }

    fn give(&self, c: Session) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(c);
    }
}

/// The rows of one table or query, read when first asked for (see the module's docs).
pub(crate) struct CopyReader {
    schema: SchemaRef,
    ordered: Ordered<Work>,
    /// A column whose values must rise strictly (an integer key read in block order, on
    /// the statistics' word), and the flag set when they do not.
    ascending: Option<(usize, Arc<AtomicBool>)>,
    last_key: Option<i64>,
}

impl CopyReader {
    /// A reader of `pieces` (COPY statements whose rows have `columns`), on up to
    /// `workers` connections of `pool`, in batches of `batch_rows`; the COPY bytes it
    /// reads are added to `progress`, which shows its name while it reads.
    pub(crate) fn new(
        name: String,
        columns: &[(String, Kind)],
        pieces: Vec<String>,
        pool: Arc<Pool>,
        workers: usize,
        batch_rows: usize,
        progress: &crate::progress::Progress,
    ) -> Self {
        let schema = decode::schema(columns);
        let work = Work {
            name: name.clone(),
            schema: schema.clone(),
            kinds: columns.iter().map(|c| c.1).collect(),
            pieces,
            pool,
            batch_rows: batch_rows.max(1),
            bytes_read: progress.bytes_read.clone(),
        };
        CopyReader {
            schema,
            ordered: Ordered::new(
                name,
                work,
                workers,
                "liteload-pg-copy",
                progress.part_handle(),
            ),
            ascending: None,
            last_key: None,
        }
    }

    /// Checks that column `column` (an integer with no NULL) rises strictly from batch to
    /// batch; if it does not, the reader fails and sets `broken`.
    pub(crate) fn ascending(mut self, column: usize, broken: Arc<AtomicBool>) -> Self {
        self.ascending = Some((column, broken));
        self
    }

    /// Whether `batch` keeps the checked column rising (see [`CopyReader::ascending`]).
    fn in_order(&mut self, batch: &RecordBatch) -> bool {
        let Some((column, _)) = &self.ascending else {
            return true;
        };
        let Some(keys) = batch
            .column(*column)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
        else {
            return false;
        };
        if keys.null_count() > 0 {
            return false;
        }
        for &k in keys.values().iter() {
            if self.last_key.is_some_and(|last| k <= last) {
                return false;
            }
            self.last_key = Some(k);
        }
        true
    }
}

impl Iterator for CopyReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let failed = match self.ordered.next_batch()? {
            Ok(b) if self.in_order(&b) => return Some(Ok(b)),
            Ok(_) => {
                if let Some((_, broken)) = &self.ascending {
                    broken.store(true, Ordering::SeqCst);
                }
                self.ordered.stop();
                let work = self.ordered.pieces();
                Error::database(
                    work.pool.server().shown.clone(),
                    format!(
                        "{}: the table's rows are not in the order of its key (its \
                         statistics said they were)",
                        work.name
                    ),
                )
            }
            Err(e) => e,
        };
        Some(Err(ArrowError::ExternalError(Box::new(failed))))
    }
}

impl RecordBatchReader for CopyReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// What a reader's workers share: the pieces and how they are decoded.
struct Work {
    /// Shown in messages: `schema.table`, or `query`.
    name: String,
    schema: SchemaRef,
    kinds: Vec<Kind>,
    pieces: Vec<String>,
    pool: Arc<Pool>,
    batch_rows: usize,
    bytes_read: Arc<AtomicU64>,
}

impl Pieces for Work {
    fn count(&self) -> usize {
        self.pieces.len()
    }

    fn read(&self, piece: usize, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<bool> {
        self.copy(piece, emit)
    }
}

/// The tuples of one piece's COPY stream as its chunks arrive.
struct Tuples {
    decoder: Decoder,
    width: usize,
    /// Bytes of a tuple (or of the header) cut between two of the server's messages.
    carry: Vec<u8>,
    header: bool,
    ended: bool,
    row: u64,
}

impl Tuples {
    /// Decodes the tuples `chunk` completes, handing on full batches to `tx`; `false`
    /// when the reader has gone.
    fn feed(
        &mut self,
        chunk: &[u8],
        work: &Work,
        emit: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<bool> {
        let joined;
        let data: &[u8] = if self.carry.is_empty() {
            chunk
        } else {
            let mut c = std::mem::take(&mut self.carry);
            c.extend_from_slice(chunk);
            joined = c;
            &joined
        };
        let mut at = 0;
        if self.header {
            match decode::header_len(data).map_err(|m| work.bad(self.row, None, m))? {
                Some(h) => {
                    at = h;
                    self.header = false;
                }
                None => {
                    self.carry = data.to_vec();
                    return Ok(true);
                }
            }
        }
        while at < data.len() && !self.ended {
            match decode::next_tuple(&data[at..], self.width)
                .map_err(|m| work.bad(self.row, None, m))?
            {
                Next::Tuple(len) => {
                    self.row += 1;
                    self.decoder
                        .push(&data[at..at + len])
                        .map_err(|b| work.bad(self.row, Some(b.column), b.message))?;
                    at += len;
                    let full = self.decoder.rows() >= work.batch_rows
                        || self.decoder.bytes() >= BATCH_BYTES;
                    if full && !emit(self.decoder.finish()) {
                        return Ok(false);
                    }
                }
                Next::End => {
                    at += 2;
                    self.ended = true;
                }
                Next::More => break,
            }
        }
        self.carry = data[at..].to_vec();
        Ok(true)
    }
}

/// Bytes of text and blobs at which a batch is handed on, whatever its row count.
const BATCH_BYTES: usize = 16 << 20;

impl Work {
    /// Runs piece `piece`, handing its batches to `emit`; `Ok(false)` when the reader
    /// has gone.
    fn copy(&self, piece: usize, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<bool> {
        use futures_util::StreamExt;
        let session = self.pool.take()?;
        let server = self.pool.server();
        let mut tuples = Tuples {
            decoder: Decoder::new(self.kinds.clone(), self.schema.clone()),
            width: self.kinds.len(),
            carry: vec![],
            header: true,
            ended: false,
            row: 0,
        };
        let failed = |e: &tokio_postgres::Error| server.error(&format!("copying {}", self.name), e);
        let went_on = session.runtime.block_on(async {
            let stream = session
                .client
                .copy_out(self.pieces[piece].as_str())
                .await
                .map_err(|e| failed(&e))?;
            let mut stream = std::pin::pin!(stream);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| failed(&e))?;
                self.bytes_read
                    .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                if !tuples.feed(&chunk, self, emit)? {
                    return Ok(false);
                }
            }
            Ok::<_, Error>(true)
        })?;
        if !went_on {
            return Ok(false);
        }
        if !tuples.ended || !tuples.carry.is_empty() {
            return Err(Error::database(
                server.shown.clone(),
                format!(
                    "copying {}: the COPY output ended in the middle of a row",
                    self.name
                ),
            ));
        }
        let decoder = &mut tuples.decoder;
        if decoder.rows() > 0 && !emit(decoder.finish()) {
            return Ok(false);
        }
        self.pool.give(session);
        Ok(true)
    }

    /// A value or tuple the decoder refused: the server sent what its type does not
    /// allow (a bug, or another server speaking for PostgreSQL).
    fn bad(&self, row: u64, column: Option<usize>, message: String) -> Error {
        let column = column
            .and_then(|c| self.schema.fields().get(c))
            .map_or(String::new(), |f| format!(", column {:?}", f.name()));
        Error::database(
            self.pool.server().shown.clone(),
            format!(
                "copying {}: row {row} of a piece{column}: {message}",
                self.name
            ),
        )
    }
}
