//! `generate --engine direct`: values drawn straight into leaf pages on every core, the
//! pages appended in order by the one thread that owns the file.
//!
//! The rows are those of [`super::GeneratorSource`]: chunk `c` of [`CHUNK_ROWS`] rows
//! comes from `Rng::for_chunk(seed, c)`, and each value from [`ColumnSpec::draw`], so the
//! table is the one the SQLite path makes for the same seed. Here chunks are taken
//! [`GROUP_CHUNKS`] at a time: group `g` is filled by thread `g % threads` into a
//! [`Leaves`], and the writer appends group 0, 1, 2, … Only each group's last leaf can be
//! less than full (1 page in ~640 for the default table at 4096-byte pages).

use std::sync::atomic::Ordering;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use liteload_btree::{Leaves, RecordBuilder, SeqFile, TableWriter};

use super::rng::Rng;
use super::rng::CHUNK_ROWS;
use super::spec::{ColumnSpec, Drawn, Gen};
use crate::error::{Error, Result};
use crate::progress::Progress;

/// Chunks per group: the unit of work of one filling thread.
pub const GROUP_CHUNKS: u64 = 16;

/// Rows per group.
const GROUP_ROWS: u64 = GROUP_CHUNKS * CHUNK_ROWS;

/// What to fill: `rows` rows of `columns`, rowids from 1.
pub struct Fill<'a> {
    /// The columns, in order.
    pub columns: &'a [ColumnSpec],
    /// The seed every value derives from.
    pub seed: u64,
    /// Rows in all.
    pub rows: u64,
    /// The page size in bytes.
    pub page_size: usize,
}

impl Fill<'_> {
    fn groups(&self) -> u64 {
        self.rows.div_ceil(GROUP_ROWS)
    }

    /// Fills `leaves` with the rows of group `g`. A `rowid` column is the INTEGER PRIMARY
    /// KEY: NULL in the record, and no random number drawn (as on the SQLite path).
    fn group(&self, g: u64, leaves: &mut Leaves, record: &mut RecordBuilder, text: &mut String) {
        let first_chunk = g * GROUP_CHUNKS;
        let last_chunk = (first_chunk + GROUP_CHUNKS).min(self.rows.div_ceil(CHUNK_ROWS));
        for c in first_chunk..last_chunk {
            let mut rng = Rng::for_chunk(self.seed, c);
            let start = c * CHUNK_ROWS;
            let end = (start + CHUNK_ROWS).min(self.rows);
            for i in start..end {
                let rowid = 1 + i as i64;
                record.clear();
                for col in self.columns {
                    if matches!(col.gen, Gen::Rowid) {
                        record.null();
                        continue;
                    }
                    text.clear();
                    match col.draw(&mut rng, rowid, text) {
                        Drawn::Null => record.null(),
                        Drawn::Integer(i) => record.integer(i),
                        Drawn::Real(f) => record.real(f),
                        Drawn::Text { start, len } => {
                            record.text(&text.as_bytes()[start..start + len])
                        }
                        Drawn::Ascii { bytes, len } => record.text(&bytes[..usize::from(len)]),
                    }
                }
                // Rowids rise within a group by construction, so this cannot fail.
                let pushed = leaves.push_built(rowid, record);
                debug_assert!(pushed.is_ok());
            }
        }
    }
}

/// Fills every group on `threads` threads and appends them to `table` in order; returns
/// the rows written. `progress.rows` counts rows as their pages are handed to the file.
pub fn fill_table(
    fill: &Fill<'_>,
    threads: usize,
    table: &mut TableWriter<'_, SeqFile>,
    progress: &Progress,
) -> Result<u64> {
    let threads = threads.max(1) as u64;
    let groups = fill.groups();
    std::thread::scope(|s| {
        let mut lanes: Vec<(Receiver<Leaves>, Sender<Leaves>)> = vec![];
        for k in 0..threads.min(groups) {
            // Two groups ahead per thread; emptied leaves come back for reuse.
            let (tx, rx) = bounded::<Leaves>(2);
            let (back, back_rx) = unbounded::<Leaves>();
            s.spawn(move || {
                let (mut record, mut text) = (RecordBuilder::new(), String::new());
                let mut g = k;
                while g < groups {
                    let mut leaves = back_rx
                        .try_recv()
                        .unwrap_or_else(|_| Leaves::new(fill.page_size));
                    fill.group(g, &mut leaves, &mut record, &mut text);
                    if tx.send(leaves).is_err() {
                        return; // the writer stopped
                    }
                    g += threads;
                }
            });
            lanes.push((rx, back));
        }
        // The lanes are dropped when this returns, so on an error every filler stops.
        let mut write = move || -> Result<u64> {
            let mut rows = 0;
            for g in 0..groups {
                progress.check()?;
                let (rx, back) = &lanes[(g % threads) as usize];
                let mut leaves = rx
                    .recv()
                    .map_err(|_| Error::internal("a generator thread stopped early"))?;
                let n = leaves.rows();
                table.append(&mut leaves).map_err(|e| match e {
                    liteload_btree::Error::Io(io) => Error::io(None, io),
                    other => Error::usage(other.to_string()),
                })?;
                rows += n;
                progress.rows.fetch_add(n, Ordering::Relaxed);
                let _ = back.send(leaves);
            }
            Ok(rows)
        };
        write()
    })
}
