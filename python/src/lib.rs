//! The native module of the `liteload` Python package (`liteload._liteload`). Each
//! function turns Python values into the library's inputs and option types (the
//! keyword arguments of the Python function arrive as one dict, mapped field by field
//! in [`options`]), runs the job with the GIL released, and returns a typed summary or
//! raises. The public API and its documentation are in `liteload/__init__.py`.

#![deny(unsafe_op_in_unsafe_fn)]

mod arrow;
mod dest;
mod errors;
mod keywords;
mod kv;
mod options;
mod rows;
mod run;
mod same_file;
mod stream;
mod summary;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString};

use liteload::ingest::feed::{self, Event, Feed};
use liteload::ingest::Ingest;
use liteload::{Format, IfExists, ImportOptions, Input, Progress};

use keywords::Keywords;
use summary::{IngestSummary, Summary};

/// `write`: Arrow data (anything with `__arrow_c_stream__`) or an iterator of dicts into
/// `table` of `db`.
#[pyfunction]
#[pyo3(signature = (db, table, data, options, rows_total = None, progress = None))]
fn write(
    py: Python<'_>,
    db: PathBuf,
    table: String,
    data: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
    rows_total: Option<u64>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let mut kw = Keywords::new("write", options)?;
    let mut opts = ImportOptions::default();
    opts.table = Some(table.clone());
    // `mode=` is the first spelling of `if_exists=` (create = fail); both may be given
    // only when they agree.
    let mode = kw.choice(
        "mode",
        &[
            ("create", IfExists::Fail),
            ("append", IfExists::Append),
            ("replace", IfExists::Replace),
        ],
    )?;
    let if_exists = kw.choice("if_exists", options::IF_EXISTS)?;
    opts.if_exists = match (mode, if_exists) {
        (Some(m), Some(i)) if m != i => {
            return Err(kw.usage("mode= and if_exists= disagree: pass if_exists= alone"))
        }
        (m, i) => i.or(m).unwrap_or(IfExists::Fail),
    };
    opts.alter = kw.get("alter", "a bool")?;
    // Arrow data arrives cast already (liteload/__init__.py); this is for dict rows.
    opts.types = options::column_types(&mut kw, "dtype")?;
    opts.pk = kw.names("pk")?;
    options::conflict(&mut kw, &mut opts)?;
    opts.indexes = options::indexes(&mut kw)?;
    opts.durability = options::durability(&mut kw)?;
    opts.engine = options::engine(&mut kw)?;
    options::shapes(&mut kw, &mut opts)?;
    // Arrow data is converted on this many threads (as the command does for files).
    opts.read.parse_threads = kw
        .size("threads", 1)?
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    kw.finish()?;
    let dest = dest::Dest::of("write", db, opts.durability.is_some(), None)?;
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
            if opts.nested != liteload::Nested::Json {
                return Err(errors::usage(
                    "write(): nested= applies to Arrow data (a pyarrow Table, a polars or \
                     pandas DataFrame with pyarrow installed), not to dict rows",
                ));
            }
            let rows = rows::Rows::new(iter.into_any().unbind(), counters.clone(), failed.clone());
            Input::serialized(table, rows)
        };
    let result = dest.import(py, &counters, progress, &[input], &opts);
    // A failure of the caller's own iterator is the error to raise; the load stopped
    // because of it and left the target as it was.
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    result.map(Summary::from)
}

/// `import_file`: `sources` are paths (str), bytes, or file objects; `options` holds
/// every keyword of the Python function (see [`options::import`]).
#[pyfunction]
#[pyo3(signature = (db, sources, options, progress = None))]
fn import_file(
    py: Python<'_>,
    db: PathBuf,
    sources: Vec<Bound<'_, PyAny>>,
    options: &Bound<'_, PyDict>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let mut kw = Keywords::new("import_file", options)?;
    let opts = options::import(&mut kw)?;
    let mut pg = liteload::postgres::PgOptions::default();
    pg.schema = kw.option("schema", "a str")?;
    pg.tables = kw.names("tables")?;
    pg.query = kw.option("query", "a str")?;
    pg.connections = kw.size("connections", 1)?;
    pg.views = kw.get("views", "a bool")?;
    pg.foreign_keys = kw.get("foreign_keys", "a bool")?;
    let keep_rowids: bool = kw.get("keep_rowids", "a bool")?;
    kw.finish()?;
    let url = match sources.as_slice() {
        [one] => one
            .cast::<PyString>()
            .ok()
            .map(|s| s.to_cow().map(|c| c.into_owned()))
            .transpose()?
            .filter(|s| liteload::postgres::is_postgres_url(s) || liteload::mysql::is_mysql_url(s)),
        _ => None,
    };
    let dest = dest::Dest::of(
        "import_file",
        db,
        opts.durability.is_some(),
        Some(&opts.file),
    )?;
    let pg_keywords = pg.schema.is_some()
        || !pg.tables.is_empty()
        || pg.query.is_some()
        || pg.connections.is_some()
        || pg.views
        || pg.foreign_keys;
    if let Some(url) = url.clone().filter(|u| liteload::mysql::is_mysql_url(u)) {
        let mut my = liteload::mysql::MysqlOptions::default();
        my.database = pg.schema.clone();
        my.tables = pg.tables.clone();
        my.query = pg.query.clone();
        my.connections = pg.connections;
        my.views = pg.views;
        my.foreign_keys = pg.foreign_keys;
        let counters = Arc::new(Progress::default());
        let c = counters.clone();
        return dest
            .run(
                py,
                &counters,
                None,
                progress,
                move |path| Ok(liteload::mysql::import_mysql(path, &url, &my, &opts, &c)?),
                |_, _| {
                    Err(liteload::Error::usage(
                        "a MySQL database is copied into a file; to fill a cluster, copy into a file first",
                    )
                    .into())
                },
            )
            .map(Summary::from);
    }
    if let Some(url) = url {
        let counters = Arc::new(Progress::default());
        let c = counters.clone();
        return dest
            .run(
                py,
                &counters,
                None,
                progress,
                move |path| Ok(liteload::postgres::import_postgres(path, &url, &pg, &opts, &c)?),
                |_, _| {
                    Err(liteload::Error::usage(
                        "a PostgreSQL database is copied into a file; to fill a cluster, copy into a file first",
                    )
                    .into())
                },
            )
            .map(Summary::from);
    }
    let failed: stream::Failed = Arc::new(Mutex::new(None));
    let mut inputs = vec![];
    for source in &sources {
        inputs.push(input(source, &failed)?);
    }
    let sqlite =
        liteload::sqlite_files::sqlite_inputs(&inputs).map_err(|e| errors::library_error(&e))?;
    if let Some(dbs) = sqlite {
        if pg.schema.is_some()
            || pg.query.is_some()
            || pg.connections.is_some()
            || pg.views
            || pg.foreign_keys
        {
            return Err(errors::usage(
                "import_file(): schema=, query=, views=, foreign_keys= and connections= go with a postgresql:// source; SQLite files take tables=",
            ));
        }
        // An input that Python's sqlite3 has open would lose that connection's locks
        // when liteload's SQLite closes its own descriptor on it (POSIX locks are the
        // process's): refused, as a target is.
        for p in &dbs {
            same_file::check(p)?;
        }
        let mut sq = liteload::sqlite_files::SqliteOptions::default();
        sq.tables = pg.tables;
        sq.keep_rowids = keep_rowids;
        let counters = Arc::new(Progress::default());
        let (c, c2) = (counters.clone(), counters.clone());
        let (cluster_opts, cluster_sq, cluster_dbs) = (opts.clone(), sq.clone(), dbs.clone());
        return dest
            .run(
                py,
                &counters,
                None,
                progress,
                move |path| {
                    Ok(liteload::sqlite_files::import_sqlite(
                        path, &dbs, &sq, &opts, &c,
                    )?)
                },
                move |cluster, ropts| {
                    Ok(liteload::rqlite::import_sqlite(
                        cluster,
                        &cluster_dbs,
                        &cluster_sq,
                        &cluster_opts,
                        ropts,
                        &c2,
                    )?)
                },
            )
            .map(Summary::from);
    }
    if keep_rowids {
        return Err(errors::usage(
            "import_file(): keep_rowids= goes with SQLite files as sources",
        ));
    }
    if pg_keywords {
        return Err(errors::usage(
            "import_file(): schema=, tables=, query=, views=, foreign_keys= and connections= go with a postgresql:// source",
        ));
    }
    if opts.table.is_none() {
        if let Some(unnamed) = inputs.iter().find(|i| {
            matches!(i, Input::Reader(_) | Input::Bytes { .. }) && i.display_name().starts_with('<')
        }) {
            return Err(errors::usage(format!(
                "import_file(): {} has no file name to name its table: pass table=",
                unnamed.display_name()
            )));
        }
    }
    let counters = Arc::new(Progress::default());
    let result = dest.import(py, &counters, progress, &inputs, &opts);
    // A failure of the caller's file object is the error to raise; the load stopped
    // because of it and left the target as it was.
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    result.map(Summary::from)
}

/// One source of `import_file`: a path (str; `-` is standard input), bytes-like data,
/// or a file object (binary or text), read on the load's thread.
fn input(source: &Bound<'_, PyAny>, failed: &stream::Failed) -> PyResult<Input> {
    if let Ok(path) = source.cast::<PyString>() {
        return Ok(Input::from_arg(&path.to_cow()?));
    }
    if source.is_instance_of::<PyBytes>()
        || source.is_instance_of::<PyByteArray>()
        || source.is_instance_of::<PyMemoryView>()
    {
        let bytes = source.py().get_type::<PyBytes>().call1((source,))?;
        let bytes = bytes.cast::<PyBytes>()?.as_bytes().to_vec();
        return Ok(Input::bytes("<bytes>", bytes));
    }
    if source.hasattr("read")? {
        // A file opened by name keeps it (its extension tells the format, its stem the
        // table); `<stdin>` and the like are not file names.
        let name = source
            .getattr("name")
            .ok()
            .and_then(|n| n.extract::<String>().ok())
            .filter(|n| !n.is_empty() && !n.starts_with('<'))
            .unwrap_or_else(|| "<stream>".into());
        return Ok(Input::reader(
            name,
            stream::PyRead::new(stream::FileObject::new(source), failed.clone()),
        ));
    }
    Err(PyTypeError::new_err(format!(
        "import_file() reads a path, bytes or a file object, not {}",
        source.get_type().name()?
    )))
}

/// `sniff`: what `import_file` would take `source` to be, in `import_file`'s keywords
/// (`format`, `delimiter`, `quote`, `header`, `encoding`) and a few facts besides
/// (`bom`, `compression`, `described`, `changed`: whether sniffing found anything the
/// name alone does not say). Reads the first bytes only.
#[pyfunction]
fn sniff<'py>(py: Python<'py>, source: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let failed: stream::Failed = Arc::new(Mutex::new(None));
    let input = input(source, &failed)?;
    let plan = liteload::read_plan(&input, &ImportOptions::default());
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let (ro, sniffed) = plan.map_err(|e| errors::library_error(&e))?;
    let delimited = matches!(ro.format, Format::Csv | Format::Tsv);
    let out = PyDict::new(py);
    out.set_item("input", input.display_name())?;
    out.set_item(
        "format",
        match ro.format {
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Ndjson => "ndjson",
            Format::Json => "json",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Xml => "xml",
            _ => "other",
        },
    )?;
    let char_of = |b: u8| char::from(b).to_string();
    if delimited {
        out.set_item("delimiter", char_of(ro.delimiter))?;
        match ro.quote {
            Some(q) => out.set_item("quote", char_of(q))?,
            None => out.set_item("quote", false)?,
        }
        out.set_item("header", ro.header)?;
    } else {
        for key in ["delimiter", "quote", "header"] {
            out.set_item(key, py.None())?;
        }
    }
    let d = sniffed.as_ref().map(|s| &s.dialect);
    out.set_item("encoding", d.map_or(ro.encoding, |d| d.encoding).name())?;
    // JSON: the path the head shows (the reader finds it itself).
    out.set_item(
        "record",
        ro.record
            .clone()
            .or_else(|| d.and_then(|d| d.record.clone())),
    )?;
    out.set_item("bom", d.is_some_and(|d| d.bom))?;
    out.set_item(
        "compression",
        d.and_then(|d| d.compression).map(|c| c.name()),
    )?;
    out.set_item("described", sniffed.as_ref().map(|s| s.described.clone()))?;
    out.set_item("changed", sniffed.as_ref().is_some_and(|s| s.changed))?;
    Ok(out)
}

/// `generate`: `options` holds every keyword of the Python function.
#[pyfunction]
#[pyo3(signature = (db, options, progress = None))]
fn generate(
    py: Python<'_>,
    db: PathBuf,
    options: &Bound<'_, PyDict>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<Summary> {
    let mut kw = Keywords::new("generate", options)?;
    let opts = options::generate(&mut kw)?;
    kw.finish()?;
    let dest = dest::Dest::of("generate", db, opts.durability.is_some(), Some(&opts.file))?;
    let counters = Arc::new(Progress::default());
    let job_counters = counters.clone();
    dest.run(
        py,
        &counters,
        None,
        progress,
        |path| Ok(liteload::generate::generate(path, &opts, &job_counters)?),
        |cluster, ropts| {
            Ok(liteload::rqlite::generate(
                cluster,
                &opts,
                ropts,
                &job_counters,
            )?)
        },
    )
    .map(Summary::from)
}

/// `ingest`: `source` is a path (str; `-` is standard input), an iterator of lines or
/// dicts, or None with `connect=`; `options` holds every keyword of the Python function.
#[pyfunction]
#[pyo3(signature = (db, source, options, progress = None))]
fn ingest(
    py: Python<'_>,
    db: PathBuf,
    source: &Bound<'_, PyAny>,
    options: &Bound<'_, PyDict>,
    progress: Option<&Bound<'_, PyAny>>,
) -> PyResult<IngestSummary> {
    let mut kw = Keywords::new("ingest", options)?;
    let plan = options::ingest(&mut kw)?;
    kw.finish()?;
    let durability_set = options
        .get_item("durability")?
        .is_some_and(|d| !d.is_none());
    let dest = dest::Dest::of("ingest", db.clone(), durability_set, None)?;
    let stop = Arc::new(AtomicBool::new(false));
    let failed = Arc::new(Mutex::new(None));
    let path = match source.cast::<PyString>() {
        Ok(s) => Some(s.to_cow()?.into_owned()),
        Err(_) => None,
    };
    if path.is_none() && (plan.follow || plan.from_start) {
        return Err(errors::usage(
            "ingest(): follow= and from_start= are for a file source (a path)",
        ));
    }
    // The rejects and stats files must not be the feed or the database: writing them
    // would destroy what is read.
    let feed_files: Vec<Input> = path
        .iter()
        .filter(|p| p.as_str() != "-")
        .map(|p| Input::Path(p.into()))
        .collect();
    for out in plan.feed.rejects.iter().chain(&plan.feed.stats_json) {
        liteload::source::input::refuse_overwriting(out, &feed_files, Some(&db))
            .map_err(|e| errors::library_error(&e))?;
    }
    let feed =
        match (plan.connect, path) {
            (Some(_), Some(_)) => return Err(errors::usage(
                "ingest(): a source and connect= both name the feed: pass source=None to connect",
            )),
            (Some(client), None) if source.is_none() => Feed::Connect(client),
            (None, None) if source.is_none() => return Err(PyTypeError::new_err(
                "ingest() needs a source: a path, an iterable of lines (str or bytes) or dicts, \
                 or None with connect='HOST:PORT'",
            )),
            (Some(_), None) => return Err(errors::usage(
                "ingest(): a source and connect= both name the feed: pass source=None to connect",
            )),
            (None, Some(p)) if p == "-" => Feed::Stdin,
            (None, Some(p)) => Feed::File {
                path: PathBuf::from(p),
                follow: plan.follow,
                from_start: plan.from_start,
            },
            (None, None) => {
                let iter = source.try_iter().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "ingest() reads a path, an iterable of lines (str or bytes) or dicts, \
                     or None with connect=, not {}",
                        source
                            .get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })?;
                Feed::Reader {
                    name: "messages".into(),
                    reader: Box::new(
                        stream::PyRead::new(stream::Messages::new(&iter), failed.clone())
                            .stopped_by(stop.clone()),
                    ),
                }
            }
        };
    let counters = Arc::new(Progress::default());
    let job_counters = counters.clone();
    let job_stop = stop.clone();
    let options = plan.options;
    let feed_opts = plan.feed;
    let start = Instant::now();
    // Either closure runs, once: the feed goes to whichever it is.
    let feed = Mutex::new(Some(feed));
    let options = Mutex::new(Some(options));
    let go = |engine| {
        keep(
            engine,
            once(&feed),
            &feed_opts,
            job_stop.clone(),
            &job_counters,
        )
    };
    let result = dest.run(
        py,
        &counters,
        Some(&stop),
        progress,
        |path| Ok(go(Ingest::open(path, once(&options))?).map_err(|e| e.in_file(path))?),
        |cluster, ropts| Ok(go(Ingest::open_rqlite(cluster, ropts, once(&options))?)?),
    );
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let totals = result?;
    Ok(IngestSummary::new(&totals, start.elapsed().as_secs_f64()))
}

/// The value of a slot that is taken once (by whichever of two closures runs).
fn once<T>(slot: &Mutex<Option<T>>) -> T {
    slot.lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .expect("taken by the one closure that runs")
}

/// Runs the ingest `engine` over `feed` until it ends or `stop`, counting messages.
fn keep(
    mut engine: Ingest,
    feed: Feed,
    opts: &feed::FeedOptions,
    stop: Arc<AtomicBool>,
    counters: &Progress,
) -> liteload::Result<liteload::ingest::Totals> {
    let mut on = |e: Event<'_>| {
        if let Event::Tick { totals, .. } = e {
            counters.rows.store(totals.messages, Ordering::Relaxed);
        }
    };
    feed::run(&mut engine, feed, opts, stop, &mut on)
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
    m.add("UsageError", errors::usage_type(py))?;
    m.add("SchemaError", errors::schema_type(py))?;
    m.add("ConstraintError", py.get_type::<errors::ConstraintError>())?;
    m.add("SqliteError", py.get_type::<errors::SqliteError>())?;
    m.add_class::<Summary>()?;
    m.add_class::<IngestSummary>()?;
    m.add_class::<kv::KvStore>()?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add_function(wrap_pyfunction!(import_file, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(sniff, m)?)?;
    m.add_function(wrap_pyfunction!(rows::column_text, m)?)?;
    m.add_function(wrap_pyfunction!(ingest, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
