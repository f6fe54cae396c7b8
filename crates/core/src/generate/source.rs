//! [`GeneratorSource`]: rows made on worker threads, handed over in rowid order.
//!
//! Rows are cut into chunks of [`CHUNK_ROWS`]; chunk `c` is generated from its own
//! generator, seeded by `(seed, c)`, by worker `c % threads`, and each worker makes its
//! chunks in order. Reading chunk `c` from worker `c % threads` therefore yields the rows
//! in order, and the contents depend on the seed alone — never on the thread count.
//!
//! A `rowid` column is not put in the batches: its values are exactly the rowids SQLite
//! assigns when none is given (the largest so far plus one), and leaving it out spares
//! SQLite a key check per row (10M rows: 2.5 s -> 1.4 s, bench/README.md).

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use super::rng::Rng;
use super::spec::{ColumnSpec, Gen};
use crate::batch::{Batch, RowOrigin};
use crate::error::Result;
use crate::source::{BadRecord, Fill, Mismatches, Sample, Source};
use crate::types::ColumnType;

pub use super::rng::CHUNK_ROWS;

struct Worker {
    rx: Receiver<Batch>,
    back: Sender<Batch>,
    handle: Option<JoinHandle<()>>,
}

/// Generates `rows` rows of `columns`; rowids start at `first_rowid`.
pub struct GeneratorSource {
    columns: Arc<Vec<ColumnSpec>>,
    rows: u64,
    seed: u64,
    first_rowid: i64,
    threads: usize,
    workers: Vec<Worker>,
    next_chunk: u64,
    mismatches: Mismatches,
}

impl GeneratorSource {
    /// A source of `rows` rows of `columns` drawn from `seed`, numbered from rowid `first_rowid`, drawn on `threads` threads.
    pub fn new(
        columns: Vec<ColumnSpec>,
        rows: u64,
        seed: u64,
        first_rowid: i64,
        threads: usize,
    ) -> Self {
        GeneratorSource {
            columns: Arc::new(columns),
            rows,
            seed,
            first_rowid,
            threads: threads.max(1),
            workers: vec![],
            next_chunk: 0,
            mismatches: Mismatches::default(),
        }
    }

    fn chunks(&self) -> u64 {
        self.rows.div_ceil(CHUNK_ROWS)
    }

    fn start(&mut self) {
        let nchunks = self.chunks();
        for k in 0..(self.threads as u64).min(nchunks) {
            let (tx, rx) = bounded::<Batch>(2);
            let (back, back_rx) = unbounded::<Batch>();
            let (columns, seed, first, rows, step) = (
                self.columns.clone(),
                self.seed,
                self.first_rowid,
                self.rows,
                self.threads as u64,
            );
            let width = self.width();
            let handle = std::thread::spawn(move || {
                let mut scratch = String::new();
                let mut c = k;
                while c < nchunks {
                    let mut b = back_rx.try_recv().unwrap_or_default();
                    b.clear(width);
                    fill_chunk(&columns, seed, first, rows, c, &mut b, &mut scratch);
                    if tx.send(b).is_err() {
                        return; // the reader is gone
                    }
                    c += step;
                }
            });
            self.workers.push(Worker {
                rx,
                back,
                handle: Some(handle),
            });
        }
    }
}

/// Generates chunk `c` into `b`, leaving out `rowid` columns (SQLite assigns them).
pub fn fill_chunk(
    columns: &[ColumnSpec],
    seed: u64,
    first_rowid: i64,
    rows: u64,
    c: u64,
    b: &mut Batch,
    scratch: &mut String,
) {
    let start = c * CHUNK_ROWS;
    let end = (start + CHUNK_ROWS).min(rows);
    let mut rng = Rng::for_chunk(seed, c);
    for i in start..end {
        let rowid = first_rowid + i as i64;
        for col in columns {
            if col.gen != Gen::Rowid {
                col.push(&mut rng, rowid, b, scratch);
            }
        }
        b.finish_row(RowOrigin {
            line: 0,
            record: i + 1,
        });
    }
}

impl Source for GeneratorSource {
    /// The columns (the rowid column left out); the threads start with the first fill.
    fn sample(&mut self) -> Result<Sample> {
        Ok(Sample {
            types: None,
            columns: self
                .columns
                .iter()
                .filter(|c| c.gen != Gen::Rowid)
                .map(|c| c.name.clone())
                .collect(),
            guesses: vec![],
            notes: vec![],
            locale: vec![],
        })
    }

    fn set_types(&mut self, _types: Vec<ColumnType>) {}

    /// Hands over the next chunk whole (`max_rows` and `max_text` do not apply: chunk
    /// boundaries are fixed for determinism). `batch` must be empty.
    fn fill(
        &mut self,
        batch: &mut Batch,
        _max_rows: usize,
        _max_text: usize,
        _bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        debug_assert!(batch.is_empty());
        if self.workers.is_empty() && self.chunks() > 0 {
            self.start();
        }
        if self.next_chunk >= self.chunks() {
            return Ok(Fill::Done);
        }
        let w = &self.workers[(self.next_chunk % self.threads as u64) as usize];
        let mut got =
            w.rx.recv()
                .map_err(|_| crate::error::Error::internal("a generator thread stopped early"))?;
        std::mem::swap(batch, &mut got);
        let _ = w.back.send(got);
        self.next_chunk += 1;
        Ok(if self.next_chunk >= self.chunks() {
            Fill::Done
        } else {
            Fill::Full
        })
    }

    fn width(&self) -> usize {
        self.columns.iter().filter(|c| c.gen != Gen::Rowid).count()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }

    /// The rows as whole leaves filled on every thread ([`super::leaves`]): the same
    /// table the batches make, for rows numbered from rowid 1 not yet handed out.
    fn write_pages(
        &mut self,
        table: &mut liteload_btree::TableWriter<'_, liteload_btree::SeqFile>,
        page_size: u32,
        progress: &crate::progress::Progress,
    ) -> Option<Result<u64>> {
        if self.first_rowid != 1 || !self.workers.is_empty() || self.next_chunk != 0 {
            return None;
        }
        let fill = super::leaves::Fill {
            columns: &self.columns,
            seed: self.seed,
            rows: self.rows,
            page_size: page_size as usize,
        };
        let written = super::leaves::fill_table(&fill, self.threads, table, progress);
        // Every row is out: the batches have nothing left to give.
        self.next_chunk = self.chunks();
        Some(written)
    }
}

impl Drop for GeneratorSource {
    fn drop(&mut self) {
        let handles: Vec<JoinHandle<()>> = self
            .workers
            .iter_mut()
            .filter_map(|w| w.handle.take())
            .collect();
        self.workers.clear(); // closes the channels, so a blocked worker stops
        for h in handles {
            let _ = h.join();
        }
    }
}
