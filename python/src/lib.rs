//! The native module of the `liteload` Python package (`liteload._liteload`). Each
//! function turns Python values into the library's inputs and options (keyword
//! arguments arrive as the command line's flags, parsed by the command's own code so
//! that both mean the same), runs the job with the GIL released, and returns a typed
//! summary or raises. The public API and its documentation are in `liteload/__init__.py`.

#![deny(unsafe_op_in_unsafe_fn)]

mod arrow;
mod errors;
mod kv;
mod rows;
mod run;
mod same_file;
mod summary;

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use liteload::ingest::feed::{self, Event, Feed};
use liteload::ingest::Ingest;
use liteload::{Durability, Engine, IfExists, ImportOptions, IndexSpec, Input, Progress};

use errors::{to_py, UsageError};
use summary::{IngestSummary, Summary};

fn usage(message: String) -> PyErr {
    UsageError::new_err(message)
}

/// `write`: Arrow data (anything with `__arrow_c_stream__`) or an iterator of dicts into
/// `table` of `db`.
#[pyfunction]
#[pyo3(signature = (db, table, data, *, mode, pk, indexes, unique_indexes, durability, engine, threads, rows_total, progress))]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    db: PathBuf,
    table: String,
    data: &Bound<'_, PyAny>,
    mode: &str,
    pk: Vec<String>,
    indexes: Vec<Vec<String>>,
    unique_indexes: Vec<Vec<String>>,
    durability: Option<&str>,
    engine: &str,
    threads: Option<usize>,
    rows_total: Option<u64>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let mut opts = ImportOptions::default();
    opts.table = Some(table.clone());
    opts.if_exists = match mode {
        "create" => IfExists::Fail,
        "append" => IfExists::Append,
        "replace" => IfExists::Replace,
        other => {
            return Err(usage(format!(
                "mode={other:?}: expected 'create', 'append' or 'replace'"
            )))
        }
    };
    opts.pk = pk;
    for (list, unique) in [(indexes, false), (unique_indexes, true)] {
        for columns in list {
            if columns.is_empty() || columns.iter().any(|c| c.is_empty()) {
                return Err(usage(format!("an index names no column: {columns:?}")));
            }
            opts.indexes.push(IndexSpec { columns, unique });
        }
    }
    opts.durability = durability
        .map(|d| {
            d.parse::<Durability>()
                .map_err(|e| usage(format!("durability={d:?}: {e}")))
        })
        .transpose()?;
    opts.engine = match engine {
        "auto" => Engine::Auto,
        "direct" => Engine::Direct,
        "sqlite" => Engine::Sqlite,
        other => {
            return Err(usage(format!(
                "engine={other:?}: expected 'auto', 'direct' or 'sqlite'"
            )))
        }
    };
    // Arrow data is converted on this many threads (as the command does for files).
    opts.read.parse_threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let counters = Arc::new(Progress::default());
    if let Some(n) = rows_total {
        counters.rows_total.store(n, Ordering::Relaxed);
    }
    let failed = Arc::new(Mutex::new(None));
    let input =
        if arrow::is_stream(data)? {
            Input::record_batches(table, arrow::stream(data)?)
        } else {
            let iter =
                data.try_iter().map_err(|_| {
                    PyTypeError::new_err(format!(
                "data must speak the Arrow stream interface (__arrow_c_stream__: a pyarrow \
                 Table, a polars or pandas DataFrame) or be an iterable of dicts, not {}",
                data.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
                })?;
            let rows = rows::Rows::new(iter.into_any().unbind(), counters.clone(), failed.clone());
            Input::serialized(table, rows)
        };
    let job_counters = counters.clone();
    let target = db.clone();
    let result = same_file::job(&target, || {
        run::run(py, &counters, None, progress, move || {
            Ok(liteload::import(&db, &[input], &opts, &job_counters)?)
        })
    });
    // A failure of the caller's own iterator is the error to raise; the load stopped
    // because of it and left the target as it was.
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    result.map(Summary::from)
}

/// `import_file`: `args` are `liteload import`'s (after the program's name).
#[pyfunction]
#[pyo3(signature = (args, progress = None))]
fn import_files(
    py: Python<'_>,
    args: Vec<OsString>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let plan = liteload_cli::options::import(args).map_err(to_py)?;
    let counters = Arc::new(Progress::default());
    let job_counters = counters.clone();
    let target = plan.db.clone();
    same_file::job(&target, || {
        run::run(py, &counters, None, progress, move || {
            Ok(liteload::import(
                &plan.db,
                &plan.inputs,
                &plan.options,
                &job_counters,
            )?)
        })
    })
    .map(Summary::from)
}

/// `generate`: `args` are `liteload generate`'s.
#[pyfunction]
#[pyo3(signature = (args, progress = None))]
fn generate(
    py: Python<'_>,
    args: Vec<OsString>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let plan = liteload_cli::options::generate(args).map_err(to_py)?;
    let counters = Arc::new(Progress::default());
    let job_counters = counters.clone();
    run::run(py, &counters, None, progress, move || {
        Ok(liteload::generate::generate(
            &plan.db,
            &plan.options,
            &job_counters,
        )?)
    })
    .map(Summary::from)
}

/// Lines for ingest from a Python iterator of str, bytes or dicts (a dict is one JSON
/// object), taken a chunk at a time with the GIL held.
struct Lines {
    iter: Py<PyAny>,
    buf: Vec<u8>,
    at: usize,
    done: bool,
    failed: Arc<Mutex<Option<PyErr>>>,
    stop: Arc<AtomicBool>,
}

impl Lines {
    fn refill(&mut self) -> PyResult<()> {
        self.buf.clear();
        self.at = 0;
        Python::attach(|py| {
            let iter = self.iter.bind(py);
            while self.buf.len() < 256 << 10 {
                let item = match iter.call_method0("__next__") {
                    Ok(item) => item,
                    Err(e) if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) => {
                        self.done = true;
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                };
                if let Ok(s) = item.cast::<PyString>() {
                    self.buf.extend_from_slice(s.to_cow()?.as_bytes());
                } else if let Ok(b) = item.cast::<PyBytes>() {
                    self.buf.extend_from_slice(b.as_bytes());
                } else {
                    let value = rows::value(&item, 0)?;
                    serde_json::to_writer(&mut self.buf, &value)
                        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
                }
                self.buf.push(b'\n');
            }
            Ok(())
        })
    }
}

impl Read for Lines {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buf.len() {
            if self.done || self.stop.load(Ordering::Relaxed) {
                return Ok(0);
            }
            if let Err(e) = self.refill() {
                self.done = true;
                let message = e.to_string();
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                return Err(std::io::Error::other(message));
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `ingest`: `args` are `liteload ingest`'s; `source`, when given, is an iterator of
/// lines or dicts read instead of the file the arguments name.
#[pyfunction]
#[pyo3(signature = (args, source = None, progress = None))]
fn ingest(
    py: Python<'_>,
    args: Vec<OsString>,
    source: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<IngestSummary> {
    let plan = liteload_cli::options::ingest(args).map_err(to_py)?;
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(Mutex::new(None));
    let feed = match (source, plan.connect, plan.source.as_deref()) {
        (None, Some(client), _) => Feed::Connect(client),
        (Some(items), _, _) => Feed::Reader {
            name: "messages".into(),
            reader: Box::new(Lines {
                iter: items.try_iter()?.into_any().unbind(),
                buf: Vec::new(),
                at: 0,
                done: false,
                failed: failed.clone(),
                stop: stop.clone(),
            }),
        },
        (None, None, None | Some("-")) => Feed::Stdin,
        (None, None, Some(path)) => Feed::File {
            path: PathBuf::from(path),
            follow: plan.follow,
            from_start: plan.from_start,
        },
    };
    let mut feed_opts = plan.feed;
    feed_opts.word_hint = errors::keyword_hint;
    let counters = Arc::new(Progress::default());
    let job_counters = counters.clone();
    let job_stop = stop.clone();
    let db = plan.db;
    let options = plan.options;
    let start = Instant::now();
    let target = db.clone();
    let result = same_file::job(&target, || {
        run::run(py, &counters, Some(&stop), progress, move || {
            let mut engine = Ingest::open(&db, options)?;
            let mut on = |e: Event<'_>| {
                if let Event::Tick { totals, .. } = e {
                    job_counters.rows.store(totals.messages, Ordering::Relaxed);
                }
            };
            let totals = feed::run(&mut engine, feed, &feed_opts, job_stop, &mut on)
                .map_err(|e| e.in_file(&db))?;
            Ok(totals)
        })
    });
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let totals = result?;
    Ok(IngestSummary::new(&totals, start.elapsed().as_secs_f64()))
}

/// The `liteload` command, as installed by pip: runs `argv` (the program's name first)
/// and returns the exit status.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| liteload_cli::run(argv))
}

#[pymodule]
fn _liteload(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("BadInput", py.get_type::<errors::BadInput>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("SchemaError", py.get_type::<errors::SchemaError>())?;
    m.add("ConstraintError", py.get_type::<errors::ConstraintError>())?;
    m.add("SqliteError", py.get_type::<errors::SqliteError>())?;
    m.add_class::<Summary>()?;
    m.add_class::<IngestSummary>()?;
    m.add_class::<kv::KvStore>()?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add_function(wrap_pyfunction!(import_files, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(ingest, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
