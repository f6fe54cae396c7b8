//! Record batches read in pieces on several threads at once and handed on in piece
//! order: the reading of a database's table (PostgreSQL's COPY ranges, MySQL's key
//! ranges), where each piece is a statement of its own on a connection of its own.
//!
//! Worker threads take the pieces in order and read each into batches; the reader
//! hands the batches on piece by piece, so the rows come in piece order (key order for
//! a key's ranges). A worker starts a piece at most [`AHEAD`] pieces past the one being
//! read and holds at most [`HELD`] batches of it, which bounds what is held in memory
//! whatever the size of the table (a worker that waits on a later piece cannot stall
//! the reader: the piece being read was taken first, by a worker of its own). Dropping
//! the reader stops the workers at their next batch.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::RecordBatch;
use crossbeam_channel::{bounded, Receiver, Sender};

use crate::error::{Error, Result};

/// Pieces a worker may run ahead of the one being read.
pub(crate) const AHEAD: usize = 2;

/// Batches of a piece held before its worker waits for the reader.
pub(crate) const HELD: usize = 16;

/// What is read, piece by piece.
pub(crate) trait Pieces: Send + Sync + 'static {
    /// How many pieces there are.
    fn count(&self) -> usize;

    /// Reads piece `piece`, handing each batch to `emit`; `emit` says `false` when the
    /// reader has gone, and the read then stops with `Ok(false)`.
    fn read(&self, piece: usize, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<bool>;
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

struct Running {
    shared: Arc<Shared>,
    pieces: Vec<Receiver<Msg>>,
    at: usize,
}

/// The batches of `P`'s pieces in piece order, read when first asked for.
pub(crate) struct Ordered<P: Pieces> {
    /// Shown in messages: the table or query.
    name: String,
    pieces: Arc<P>,
    workers: usize,
    /// The workers' thread name.
    thread: &'static str,
    /// Where the load's progress shows what is being read.
    part: Arc<Mutex<String>>,
    running: Option<Running>,
}

impl<P: Pieces> Ordered<P> {
    /// A reader of `pieces` on up to `workers` threads named `thread`; `part` shows
    /// `name` while it reads.
    pub(crate) fn new(
        name: String,
        pieces: P,
        workers: usize,
        thread: &'static str,
        part: Arc<Mutex<String>>,
    ) -> Self {
        Ordered {
            name,
            pieces: Arc::new(pieces),
            workers: workers.max(1),
            thread,
            part,
            running: None,
        }
    }

    /// What is read.
    pub(crate) fn pieces(&self) -> &P {
        &self.pieces
    }

    fn start(&mut self) -> Running {
        let shared = Arc::new(Shared {
            next: Mutex::new(0),
            reading: Mutex::new(0),
            moved: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let (senders, receivers): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
            (0..self.pieces.count()).map(|_| bounded(HELD)).unzip();
        let senders = Arc::new(senders);
        for _ in 0..self.workers.min(self.pieces.count()) {
            let (pieces, shared, senders) = (self.pieces.clone(), shared.clone(), senders.clone());
            std::thread::Builder::new()
                .name(self.thread.into())
                .spawn(move || work(&*pieces, &shared, &senders))
                .expect("a thread for the reading");
        }
        Running {
            shared,
            pieces: receivers,
            at: 0,
        }
    }

    /// Stops the reading: no batch comes after this one.
    pub(crate) fn stop(&mut self) {
        if let Some(r) = &mut self.running {
            r.at = r.pieces.len();
            r.shared.stop.store(true, Ordering::SeqCst);
            r.shared.moved.notify_all();
        }
    }

    /// The next batch in piece order, the error that ended the reading, or `None` at the
    /// end.
    pub(crate) fn next_batch(&mut self) -> Option<Result<RecordBatch>> {
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
                Ok(Msg::Batch(b)) => return Some(Ok(b)),
                Ok(Msg::Done) => {
                    let r = self.running.as_mut().expect("started");
                    r.at += 1;
                    *r.shared.reading.lock().unwrap_or_else(|p| p.into_inner()) = r.at;
                    r.shared.moved.notify_all();
                    continue;
                }
                Ok(Msg::Failed(e)) => e,
                Err(_) => Error::internal(format!("{}: a reading thread stopped early", self.name)),
            };
            self.stop();
            return Some(Err(failed));
        }
    }
}

impl<P: Pieces> Drop for Ordered<P> {
    fn drop(&mut self) {
        if let Some(r) = &self.running {
            r.shared.stop.store(true, Ordering::SeqCst);
            r.shared.moved.notify_all();
        }
    }
}

/// One worker: takes pieces in order until none is left, or the reader stops.
fn work<P: Pieces>(pieces: &P, shared: &Shared, senders: &[Sender<Msg>]) {
    loop {
        let piece = {
            let mut next = shared.next.lock().unwrap_or_else(|p| p.into_inner());
            if *next >= pieces.count() {
                return;
            }
            *next += 1;
            *next - 1
        };
        // Wait until the reader is near this piece.
        {
            let mut reading = shared.reading.lock().unwrap_or_else(|p| p.into_inner());
            while piece > *reading + AHEAD && !shared.stop.load(Ordering::SeqCst) {
                reading = shared
                    .moved
                    .wait(reading)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let tx = &senders[piece];
        let mut emit =
            |b: RecordBatch| tx.send(Msg::Batch(b)).is_ok() && !shared.stop.load(Ordering::SeqCst);
        match pieces.read(piece, &mut emit) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};

    /// Pieces of `per` batches of one row each, the value `piece * 1000 + batch`,
    /// read with a delay that makes later pieces finish first; piece `fail` fails.
    struct Numbers {
        count: usize,
        per: usize,
        fail: Option<usize>,
    }

    impl Pieces for Numbers {
        fn count(&self) -> usize {
            self.count
        }

        fn read(&self, piece: usize, emit: &mut dyn FnMut(RecordBatch) -> bool) -> Result<bool> {
            std::thread::sleep(std::time::Duration::from_millis(
                ((self.count - piece) * 3) as u64,
            ));
            if Some(piece) == self.fail {
                return Err(Error::internal(format!("piece {piece} failed")));
            }
            let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
            for b in 0..self.per {
                let a = Int64Array::from(vec![(piece * 1000 + b) as i64]);
                if !emit(RecordBatch::try_new(schema.clone(), vec![Arc::new(a)]).unwrap()) {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }

    fn values(o: &mut Ordered<Numbers>) -> Vec<std::result::Result<i64, String>> {
        std::iter::from_fn(|| o.next_batch())
            .map(|b| {
                b.map(|b| {
                    let a = b
                        .column(0)
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .clone();
                    a.value(0)
                })
                .map_err(|e| e.to_string())
            })
            .collect()
    }

    #[test]
    fn batches_come_in_piece_order_whatever_finishes_first() {
        for workers in [1, 2, 5] {
            let n = Numbers {
                count: 9,
                per: 40,
                fail: None,
            };
            let mut o = Ordered::new("t".into(), n, workers, "test", Arc::default());
            let want: Vec<_> = (0..9)
                .flat_map(|p| (0..40).map(move |b| Ok((p * 1000 + b) as i64)))
                .collect();
            assert_eq!(values(&mut o), want, "{workers} workers");
        }
    }

    #[test]
    fn a_failed_piece_ends_the_reading_after_the_pieces_before_it() {
        let n = Numbers {
            count: 6,
            per: 3,
            fail: Some(2),
        };
        let mut o = Ordered::new("t".into(), n, 3, "test", Arc::default());
        let got = values(&mut o);
        assert_eq!(got.len(), 7, "{got:?}");
        assert!(got[..6].iter().all(Result::is_ok));
        assert!(got[6].as_ref().unwrap_err().contains("piece 2 failed"));
        // Dropped half-way: the workers stop.
        let n = Numbers {
            count: 6,
            per: 100,
            fail: None,
        };
        let mut o = Ordered::new("t".into(), n, 3, "test", Arc::default());
        assert!(o.next_batch().unwrap().is_ok());
        drop(o);
    }
}
