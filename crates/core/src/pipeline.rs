//! The pipeline: a source on its own thread -> a bounded channel of batches -> a sink.
//!
//! With two cores, one thread produces (parses or generates) and the calling thread
//! writes. Batches go back to the producer for reuse, so steady state allocates nothing.
//! When the sink fails, the channel closes and the producer stops at its next send; the
//! sink's error is the one returned.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::batch::{Batch, Value};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::sink::BatchSink;
use crate::source::{BadRecord, Fill, Source};
use crate::summary::Summary;
use crate::types::ColumnType;

/// Bad records: refused, or counted and logged when the user allowed it.
pub struct Rejects {
    tolerate: bool,
    max: Option<u64>,
    count: u64,
    samples: Vec<String>,
    file: Option<(PathBuf, BufWriter<File>)>,
}

impl Rejects {
    /// Refuses every bad record unless `rejects` (a file to log them to) or `max_errors` is set.
    pub fn new(rejects: Option<&Path>, max_errors: Option<u64>) -> Result<Rejects> {
        let file = match rejects {
            Some(p) => Some((
                p.to_path_buf(),
                BufWriter::new(File::create(p).map_err(|e| Error::io(Some(p.to_path_buf()), e))?),
            )),
            None => None,
        };
        Ok(Rejects {
            tolerate: rejects.is_some() || max_errors.is_some(),
            max: max_errors,
            count: 0,
            samples: vec![],
            file,
        })
    }

    /// Takes one bad record: an error unless bad records are tolerated and the limit is not passed; logged if a file was given.
    pub fn record(&mut self, bad: BadRecord) -> Result<()> {
        if !self.tolerate {
            return Err(bad.error);
        }
        self.count += 1;
        if let Some(m) = self.max {
            if self.count > m {
                return Err(Error::too_many(m, bad.error));
            }
        }
        if self.samples.len() < 5 {
            self.samples
                .push(bad.error.display_with(&|_| String::new()));
        }
        if let Some((path, w)) = &mut self.file {
            let pos = bad.error.position().cloned().unwrap_or_default();
            let line = serde_json::json!({
                "file": &*pos.path,
                "line": pos.line,
                "column": pos.column,
                "record": pos.record,
                "reason": bad.error.reason(),
                "fields": bad.fields,
            });
            writeln!(w, "{line}").map_err(|e| Error::io(Some(path.clone()), e))?;
        }
        Ok(())
    }

    /// Flushes the log; returns how many records were skipped and the first few messages.
    pub fn finish(mut self) -> Result<(u64, Vec<String>)> {
        if let Some((path, w)) = &mut self.file {
            w.flush().map_err(|e| Error::io(Some(path.clone()), e))?;
        }
        Ok((self.count, self.samples))
    }
}

enum Msg {
    Batch(Batch),
    AddColumns(Vec<(String, ColumnType)>),
}

/// Runs one source through its own thread into `sink` on this one. Returns the rows
/// written; type mismatches are added to `summary`.
pub fn run(
    src: &mut dyn Source,
    sink: &mut dyn BatchSink,
    batch_rows: usize,
    progress: &Progress,
    rejects: &Mutex<Rejects>,
    summary: &mut Summary,
) -> Result<u64> {
    let (tx, rx) = bounded::<Msg>(4);
    let (back_tx, back_rx) = unbounded::<Batch>();
    let batch_rows = batch_rows.max(1);
    std::thread::scope(|s| {
        let producer = s.spawn(move || produce(src, tx, back_rx, batch_rows, rejects));
        let written = consume(rx, back_tx, sink, progress, rejects);
        let produced = producer
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the parser thread panicked")));
        // The writer's error comes first: when it stops, the parser sees a closed channel.
        let written = written?;
        let mism = produced?;
        summary.type_mismatches += mism.count;
        if summary.first_type_mismatch.is_none() {
            summary.first_type_mismatch = mism.first;
        }
        Ok(written)
    })
}

fn produce(
    src: &mut dyn Source,
    tx: Sender<Msg>,
    back: Receiver<Batch>,
    batch_rows: usize,
    rejects: &Mutex<Rejects>,
) -> Result<crate::source::Mismatches> {
    const MAX_TEXT: usize = 16 << 20;
    let mut ncols = src.width();
    let mut batch = Batch::new(ncols);
    let mut bad = |b: BadRecord| rejects.lock().unwrap_or_else(|p| p.into_inner()).record(b);
    loop {
        let fill = src.fill(&mut batch, batch_rows, MAX_TEXT, &mut bad)?;
        let send_batch = |batch: Batch| tx.send(Msg::Batch(batch)).is_ok();
        match fill {
            Fill::Full | Fill::Done => {
                let done = fill == Fill::Done;
                if !batch.is_empty() {
                    if !send_batch(std::mem::take(&mut batch)) {
                        break; // the writer stopped; its error is the one to report
                    }
                    batch = back.try_recv().unwrap_or_default();
                    batch.clear(ncols);
                }
                if done {
                    break;
                }
            }
            Fill::NewColumns(cols) => {
                if !batch.is_empty() && !send_batch(std::mem::take(&mut batch)) {
                    break;
                }
                ncols += cols.len();
                if tx.send(Msg::AddColumns(cols)).is_err() {
                    break;
                }
                batch = back.try_recv().unwrap_or_default();
                batch.clear(ncols);
            }
        }
    }
    Ok(src.mismatches().clone())
}

fn consume(
    rx: Receiver<Msg>,
    back: Sender<Batch>,
    sink: &mut dyn BatchSink,
    progress: &Progress,
    rejects: &Mutex<Rejects>,
) -> Result<u64> {
    let mut rows = 0;
    progress.check()?;
    for msg in rx {
        progress.check()?;
        match msg {
            Msg::Batch(b) => {
                let mut bad = |row: usize, error: Error| {
                    let fields: Vec<serde_json::Value> = b
                        .row(row)
                        .map(|v| match v {
                            Value::Null => serde_json::Value::Null,
                            Value::Integer(i) => i.into(),
                            Value::Real(r) => r.into(),
                            Value::Text(t) => t.into(),
                            Value::Blob(b) => crate::source::convert::blob_json(b),
                        })
                        .collect();
                    rejects
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .record(BadRecord {
                            error,
                            fields: fields.into(),
                        })
                };
                let n = sink.write_batch(&b, &mut bad)?;
                rows += n;
                progress.rows.fetch_add(n, Ordering::Relaxed);
                let _ = back.send(b);
            }
            Msg::AddColumns(cols) => {
                sink.add_columns(&cols)?;
            }
        }
    }
    Ok(rows)
}
