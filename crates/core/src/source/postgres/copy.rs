//! A table (or a query) read as binary COPY on several connections at once, all inside
//! one snapshot, and handed on as Arrow record batches in a fixed order.
//!
//! The rows are cut into pieces (block ranges of the table, or key ranges of an
//! integer primary key, each its own `COPY (SELECT …) TO STDOUT (FORMAT binary)`).
//! Worker threads take the pieces in order, each on a connection of the [`Pool`] that
//! has set its transaction to the exported snapshot, and decode them into batches; the
//! reader hands the batches on piece by piece, so the rows come in piece order (key
//! order for a key's ranges). A worker starts a piece at most [`AHEAD`] pieces past the
//! one being read and holds at most [`HELD`] batches of it, which bounds what is held
//! in memory (a worker that waits on a later piece cannot stall the reader: the piece
//! being read was taken first, by a worker of its own). Dropping the reader stops the
//! workers at their next batch.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use crossbeam_channel::{bounded, Receiver, Sender};

use super::connect::Server;
use super::decode::{self, Decoder, Kind, Next};
use crate::error::{Error, Result};

/// Pieces a worker may run ahead of the one being read.
const AHEAD: usize = 2;

/// Batches of a piece held before its worker waits for the reader: with [`AHEAD`], what
/// a reader holds in memory is bounded whatever the size of the table.
const HELD: usize = 16;

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

/// What a worker hands on for one piece.
enum Msg {
    Batch(RecordBatch),
    Done,
    Failed(Error),
}

/// What the workers and the reader share.
struct Shared {
    /// The next piece a worker takes.
    next: Mutex<usize>,
    /// The piece the reader is on, with its condition (workers wait on it).
    reading: Mutex<usize>,
    moved: Condvar,
    stop: AtomicBool,
}

/// The rows of one table or query, read when first asked for (see the module's docs).
pub(crate) struct CopyReader {
    /// Shown in messages: `schema.table`, or `query`.
    name: String,
    schema: SchemaRef,
    kinds: Vec<Kind>,
    pieces: Arc<Vec<String>>,
    pool: Arc<Pool>,
    workers: usize,
    batch_rows: usize,
    bytes_read: Arc<AtomicU64>,
    /// Where the load's progress shows what is being read.
    part: Arc<Mutex<String>>,
    /// A column whose values must rise strictly (an integer key read in block order, on
    /// the statistics' word), and the flag set when they do not.
    ascending: Option<(usize, Arc<AtomicBool>)>,
    last_key: Option<i64>,
    running: Option<Running>,
}

struct Running {
    shared: Arc<Shared>,
    pieces: Vec<Receiver<Msg>>,
    at: usize,
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
        CopyReader {
            name,
            schema: decode::schema(columns),
            kinds: columns.iter().map(|c| c.1).collect(),
            pieces: Arc::new(pieces),
            pool,
            workers: workers.max(1),
            batch_rows: batch_rows.max(1),
            bytes_read: progress.bytes_read.clone(),
            part: progress.part_handle(),
            ascending: None,
            last_key: None,
            running: None,
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

    fn start(&mut self) -> Running {
        let shared = Arc::new(Shared {
            next: Mutex::new(0),
            reading: Mutex::new(0),
            moved: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let (senders, receivers): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
            self.pieces.iter().map(|_| bounded(HELD)).unzip();
        let senders = Arc::new(senders);
        for _ in 0..self.workers.min(self.pieces.len()) {
            let work = Work {
                name: self.name.clone(),
                schema: self.schema.clone(),
                kinds: self.kinds.clone(),
                pieces: self.pieces.clone(),
                pool: self.pool.clone(),
                batch_rows: self.batch_rows,
                bytes_read: self.bytes_read.clone(),
                shared: shared.clone(),
                senders: senders.clone(),
            };
            std::thread::Builder::new()
                .name("liteload-pg-copy".into())
                .spawn(move || work.run())
                .expect("a thread for the copy");
        }
        Running {
            shared,
            pieces: receivers,
            at: 0,
        }
    }
}

impl Drop for CopyReader {
    fn drop(&mut self) {
        if let Some(r) = &self.running {
            r.shared.stop.store(true, Ordering::SeqCst);
            r.shared.moved.notify_all();
        }
    }
}

impl Iterator for CopyReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.running.is_none() {
            self.name
                .clone_into(&mut self.part.lock().unwrap_or_else(|p| p.into_inner()));
            let r = self.start();
            self.running = Some(r);
        }
        loop {
            let got = {
                let r = self.running.as_ref().expect("started");
                r.pieces.get(r.at)?.recv()
            };
            let failed = match got {
                Ok(Msg::Batch(b)) => {
                    if self.in_order(&b) {
                        return Some(Ok(b));
                    }
                    if let Some((_, broken)) = &self.ascending {
                        broken.store(true, Ordering::SeqCst);
                    }
                    Error::database(
                        self.pool.server().shown.clone(),
                        format!(
                            "{}: the table's rows are not in the order of its key (its \
                             statistics said they were)",
                            self.name
                        ),
                    )
                }
                Ok(Msg::Done) => {
                    let r = self.running.as_mut().expect("started");
                    r.at += 1;
                    *r.shared.reading.lock().unwrap_or_else(|p| p.into_inner()) = r.at;
                    r.shared.moved.notify_all();
                    continue;
                }
                Ok(Msg::Failed(e)) => e,
                Err(_) => Error::internal(format!("{}: a copying thread stopped early", self.name)),
            };
            let r = self.running.as_mut().expect("started");
            r.at = r.pieces.len();
            r.shared.stop.store(true, Ordering::SeqCst);
            r.shared.moved.notify_all();
            return Some(Err(ArrowError::ExternalError(Box::new(failed))));
        }
    }
}

impl RecordBatchReader for CopyReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// One worker's share of a reader.
struct Work {
    name: String,
    schema: SchemaRef,
    kinds: Vec<Kind>,
    pieces: Arc<Vec<String>>,
    pool: Arc<Pool>,
    batch_rows: usize,
    bytes_read: Arc<AtomicU64>,
    shared: Arc<Shared>,
    senders: Arc<Vec<Sender<Msg>>>,
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
    fn feed(&mut self, chunk: &[u8], work: &Work, tx: &Sender<Msg>) -> Result<bool> {
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
                    if full
                        && (tx.send(Msg::Batch(self.decoder.finish())).is_err()
                            || work.shared.stop.load(Ordering::SeqCst))
                    {
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
    fn run(self) {
        loop {
            let piece = {
                let mut next = self.shared.next.lock().unwrap_or_else(|p| p.into_inner());
                if *next >= self.pieces.len() {
                    return;
                }
                *next += 1;
                *next - 1
            };
            // Wait until the reader is near this piece.
            {
                let mut reading = self
                    .shared
                    .reading
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                while piece > *reading + AHEAD && !self.shared.stop.load(Ordering::SeqCst) {
                    reading = self
                        .shared
                        .moved
                        .wait(reading)
                        .unwrap_or_else(|p| p.into_inner());
                }
            }
            if self.shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let tx = &self.senders[piece];
            match self.copy(piece, tx) {
                Ok(true) => {
                    let _ = tx.send(Msg::Done);
                }
                Ok(false) => return,
                Err(e) => {
                    let _ = tx.send(Msg::Failed(e));
                    return;
                }
            }
        }
    }

    /// Runs piece `piece`, sending its batches to `tx`; `Ok(false)` when the reader
    /// has gone.
    fn copy(&self, piece: usize, tx: &Sender<Msg>) -> Result<bool> {
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
                if !tuples.feed(&chunk, self, tx)? {
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
        if decoder.rows() > 0 && tx.send(Msg::Batch(decoder.finish())).is_err() {
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
