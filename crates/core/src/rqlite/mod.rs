//! An rqlite cluster as a target ([`RqliteTarget`]): [`import`] and [`generate`] into
//! a replicated SQLite database over rqlite's HTTP API.
//!
//! Two ways in, chosen by [`Boot`]:
//! - **A new cluster** (one node, empty database): the file is built here as
//!   [`crate::import`] builds any new file (atomic-new; the page writer where it can;
//!   checked by SQLite's `integrity_check`), then sent whole with `POST /boot`. Other
//!   nodes join afterwards and copy it; the summary says how.
//! - **A cluster that holds data**: `/boot` and `/db/load` replace the whole database,
//!   so they are never used there. The table is created (or checked) first, then rows go
//!   as `?transaction` requests (see `load.rs`), each recording its rows in
//!   [`PROGRESS_TABLE`] in the same transaction, so a rerun after a kill continues where
//!   the cluster stopped, and no row is written twice. SQLite files are merged here
//!   first, then each table goes so ([`import_sqlite`]).
//!
//! Reads that check anything use `strong` consistency. A node that is down is retried,
//! with backoff and on to the other nodes of the cluster, for [`RqliteOptions::patience`].

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::durability::Durability;
use crate::error::{Error, Result};
use crate::generate::GenerateOptions;
use crate::options::{Engine, ImportOptions};
use crate::plan::{self, Dest};
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::sink::rqlite::client::{self, Client};
use crate::sink::rqlite::load::Shape;
use crate::sink::rqlite::progress::{self, LoadKey};
use crate::sink::rqlite::{spec_held, ClusterSink};
use crate::source::Input;
use crate::summary::{self, Durable, EngineUsed, Summary};

mod sqlite_inputs;

pub use crate::sink::rqlite::progress::PROGRESS_TABLE;
pub use crate::sink::rqlite::target::{redact, RqliteTarget, PASSWORD_VAR, USER_VAR};

/// Whether a load boots a new cluster with a file built here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Boot {
    /// Boot when the node is a single-node cluster with an empty database; insert rows
    /// otherwise.
    #[default]
    Auto,
    /// Boot, and fail unless the node is a single-node cluster with an empty database
    /// (booting replaces the database).
    Always,
    /// Insert rows, whatever the cluster holds.
    Never,
}

/// How a load talks to the cluster.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RqliteOptions {
    /// Boot a new cluster, or insert.
    pub boot: Boot,
    /// A request is sent when its body reaches this many bytes (rows in one JSON
    /// document; bench/README.md has the measurement that chose the default).
    pub request_bytes: usize,
    /// How long a call keeps trying a cluster that does not answer or has no leader.
    pub patience: Duration,
    /// Requests sent at once (each waits for its answer on a thread of its own). The
    /// first request, which creates the tables, is always answered before any other is
    /// sent, and the one that marks the load finished after every other. With more
    /// than one, each request carries a guard that lets it commit only after the one
    /// before it: requests commit in input order (rowids too), and none after a refused
    /// one commits; one that reaches the leader first is sent again once the one before
    /// it is answered. Default 1.
    pub in_flight: usize,
    /// For `rqlite+https://`: a PEM file of the certificates to trust, in place of the
    /// built-in web roots (a cluster whose certificates a private CA signed). `None`
    /// trusts the web roots only.
    pub ca: Option<std::path::PathBuf>,
}

impl Default for RqliteOptions {
    fn default() -> Self {
        RqliteOptions {
            boot: Boot::Auto,
            request_bytes: 4 << 20,
            patience: client::DEFAULT_PATIENCE,
            in_flight: 1,
            ca: None,
        }
    }
}

pub(crate) fn connect(target: &RqliteTarget, ropts: &RqliteOptions) -> Result<Client> {
    let mut client = Client::new(target, ropts.ca.as_deref())?;
    client.patience = ropts.patience;
    client.discover()?;
    Ok(client)
}

/// Whether to boot: the cluster's size and whether its database is empty decide.
fn choose_boot(client: &Client, boot: Boot) -> Result<bool> {
    if boot == Boot::Never {
        return Ok(false);
    }
    let size = client.cluster_size()?;
    let objects = client
        .query_rows("SELECT count(*) FROM sqlite_schema", &[])?
        .first()
        .and_then(|r| r.first())
        .and_then(Json::as_i64)
        .unwrap_or(-1);
    let fits = size == 1 && objects == 0;
    if boot == Boot::Always && !fits {
        return Err(Error::usage(format!(
            "booting replaces the whole database, so it needs a single-node cluster with an empty database; node {} is in a cluster of {size} node{} whose database holds {objects} schema object{}: insert the rows instead",
            client.node(),
            if size == 1 { "" } else { "s" },
            if objects == 1 { "" } else { "s" },
        )));
    }
    Ok(fits)
}

/// Loads `inputs` into the cluster at `target`, as [`crate::import`] loads a file.
/// Into a cluster that holds data, options that only a file has (durability, page
/// size, engine) do not apply, and a load that fails keeps the requests the cluster
/// committed before it, recorded in [`PROGRESS_TABLE`]: run it again to go on.
pub fn import(
    target: &RqliteTarget,
    inputs: &[Input],
    opts: &ImportOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    plan::validate_options(opts, inputs)?;
    if opts.on_conflict != crate::OnConflict::Fail {
        return Err(Error::usage(
            "a conflict rule (ignore, replace, update) is not yet carried to an rqlite cluster",
        ));
    }
    if let Some(sources) = crate::sqlite_files::sqlite_inputs(inputs)? {
        return import_sqlite(
            target,
            &sources,
            &crate::sqlite_files::SqliteOptions::default(),
            opts,
            ropts,
            progress,
        );
    }
    inputs.iter().for_each(|i| i.watch(&progress.cancel_flag()));
    let client = connect(target, ropts)?;
    if choose_boot(&client, ropts.boot)? {
        let mut o = opts.clone();
        (o.durability, o.verify, o.engine) = boot_file_settings(o.engine);
        return boot(&client, start, progress, |db| {
            let summary = crate::import(db, inputs, &o, progress)?;
            let keys: Vec<(LoadKey, u64)> = summary
                .files
                .iter()
                .map(|f| {
                    let key = LoadKey {
                        input: f.input.clone(),
                        table: f.table.clone(),
                        input_bytes: f.bytes,
                        primary_key: vec![],
                        resumable: true,
                    };
                    (key, f.rows)
                })
                .collect();
            record_finished(db, &keys)?;
            Ok(summary)
        });
    }
    import_rows(&client, inputs, opts, ropts, progress, start)
        .map_err(|e| plan::cause_hint(e, inputs, opts))
}

/// Copies the tables of the SQLite files `sources` (with `sq`) into the cluster at
/// `target`, as [`crate::sqlite_files::import_sqlite`] copies them into a file: an
/// empty single-node cluster is booted with the file they merge into; into a cluster
/// that holds data, they are merged here, then each table is made or appended to by
/// requests that record their progress, so a load that stops goes on where it stopped
/// when run again with the same files.
pub fn import_sqlite(
    target: &RqliteTarget,
    sources: &[std::path::PathBuf],
    sq: &crate::sqlite_files::SqliteOptions,
    opts: &ImportOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    if opts.on_conflict != crate::OnConflict::Fail {
        return Err(Error::usage(
            "a conflict rule (ignore, replace, update) is not yet carried to an rqlite cluster",
        ));
    }
    crate::sqlite_files::refuse_options(sq, opts)?;
    let client = connect(target, ropts)?;
    if choose_boot(&client, ropts.boot)? {
        let mut o = opts.clone();
        (o.durability, o.verify, o.engine) = boot_file_settings(o.engine);
        return boot(&client, start, progress, |db| {
            let summary = crate::sqlite_files::import_sqlite(db, sources, sq, &o, progress)?;
            let mut keys: Vec<(LoadKey, u64)> = vec![];
            for t in &summary.tables {
                let rows = file_rows(db, t)?;
                keys.push((sqlite_inputs::load_key(sources, t, vec![]), rows));
            }
            record_finished(db, &keys)?;
            Ok(summary)
        });
    }
    sqlite_inputs::into_cluster(&client, sources, sq, opts, ropts, progress, start)
}

/// Makes `opts.rows` rows in the cluster at `target`, as [`crate::generate`] makes them
/// in a file.
pub fn generate(
    target: &RqliteTarget,
    opts: &GenerateOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    let client = connect(target, ropts)?;
    if choose_boot(&client, ropts.boot)? {
        let mut o = opts.clone();
        (o.durability, o.verify, o.engine) = boot_file_settings(o.engine);
        return boot(&client, start, progress, |db| {
            let summary = crate::generate::generate(db, &o, progress)?;
            record_finished(db, &[(generate_key(opts), summary.rows)])?;
            Ok(summary)
        });
    }
    generate_rows(&client, opts, ropts, progress, start)
}

/// The progress key of a generate run: the same seed, rows and columns make the same
/// rows again.
fn generate_key(opts: &GenerateOptions) -> LoadKey {
    let spec: Vec<String> = opts.columns.iter().map(|c| c.definition()).collect();
    LoadKey {
        input: format!(
            "generate seed={} rows={} columns=({})",
            opts.seed,
            opts.rows,
            spec.join(", ")
        ),
        table: opts.table.clone(),
        input_bytes: None,
        // Generated rows take new rowids: no key of theirs is refused as a duplicate.
        primary_key: vec![],
        resumable: true,
    }
}

/// Records in the built file `db`, before it is sent, each load it holds as finished
/// (`keys`, with their rows), as a load by statements records its last request: running
/// the same load again then writes nothing and says so.
fn record_finished(db: &std::path::Path, keys: &[(LoadKey, u64)]) -> Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let record = || -> rusqlite::Result<()> {
        let mut conn = rusqlite::Connection::open(db)?;
        let tx = conn.transaction()?;
        tx.execute_batch(&progress::create_progress_sql())?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for (key, rows) in keys {
            tx.execute(
                &format!(
                    "INSERT INTO {}(input, tbl, input_bytes, first_row, last_row, rows, last_line, done, unix_time) VALUES (?1, ?2, ?3, 1, ?4, ?4, NULL, 1, ?5)",
                    quote_ident(PROGRESS_TABLE)
                ),
                rusqlite::params![
                    key.input,
                    key.table,
                    key.input_bytes.and_then(|b| i64::try_from(b).ok()),
                    i64::try_from(*rows).unwrap_or(i64::MAX),
                    i64::try_from(now).unwrap_or(i64::MAX)
                ],
            )?;
        }
        tx.commit()
    };
    record().map_err(|e| Error::sqlite(format!("recording the load in {}", db.display()), e))
}

/// How the boot path builds its file: a new file (atomic-new), checked by
/// `integrity_check`, by the page writer where it can (unless the direct engine was
/// asked for, in which case it is).
fn boot_file_settings(engine: Engine) -> (Option<Durability>, bool, Engine) {
    let engine = if engine == Engine::Sqlite {
        Engine::Auto
    } else {
        engine
    };
    (Some(Durability::AtomicNew), true, engine)
}

/// The boot path: build the file in a temporary directory with `build`, send it, check
/// every table's row count on the node.
fn boot(
    client: &Client,
    start: Instant,
    progress: &Progress,
    build: impl FnOnce(&std::path::Path) -> Result<Summary>,
) -> Result<Summary> {
    let dir = tempfile::Builder::new()
        .prefix("liteload-boot-")
        .tempdir()
        .map_err(|e| Error::io(None, e))?;
    let db = dir.path().join("boot.db");
    let mut summary = build(&db)?;
    progress.set_stage(Stage::Committing);
    client.boot(&db)?;
    for t in &summary.tables {
        let n = count_rows(client, t)?;
        if n != summary.rows && summary.tables.len() == 1 {
            return Err(Error::cluster(
                client.node(),
                format!(
                    "after the boot, table {} holds {n} rows, not the {} built",
                    quote_ident(t),
                    summary.rows
                ),
            ));
        }
    }
    let raft = client
        .status()
        .ok()
        .and_then(|s| {
            s.pointer("/store/addr")
                .and_then(Json::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| "RAFT_ADDR".into());
    summary.notes.push(format!(
        "booted node {} with a {}-byte database built here (atomic-new, checked by integrity_check); start each other node with `rqlited -join {raft} …` and it copies it",
        client.node(),
        summary.db_bytes
    ));
    summary.durability = Durable::Cluster;
    summary.engine = Some(EngineUsed::RqliteBoot);
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// The rows of `table` in the file `db`.
fn file_rows(db: &std::path::Path, table: &str) -> Result<u64> {
    let count = || -> rusqlite::Result<i64> {
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?
            .query_row(
                &format!("SELECT count(*) FROM {}", quote_ident(table)),
                [],
                |r| r.get(0),
            )
    };
    count()
        .map(|n| u64::try_from(n).unwrap_or(0))
        .map_err(|e| Error::sqlite(format!("counting the rows of {}", db.display()), e))
}

fn count_rows(client: &Client, table: &str) -> Result<u64> {
    Ok(client
        .query_rows(&format!("SELECT count(*) FROM {}", quote_ident(table)), &[])?
        .first()
        .and_then(|r| r.first())
        .and_then(Json::as_u64)
        .unwrap_or(0))
}

fn import_rows(
    client: &Client,
    inputs: &[Input],
    opts: &ImportOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    if opts.parse_only {
        return Err(Error::usage(
            "parsing alone writes nothing: it needs no cluster",
        ));
    }
    if opts.nested != crate::Nested::Json {
        return Err(Error::usage(
            "related tables are loaded into an empty cluster (booted with a file made \
             whole) or a file; this cluster holds data",
        ));
    }
    let mut plan = plan::plan(Dest::Cluster, inputs, opts, progress)?;
    write_rows(client, &mut plan, None, opts, ropts, progress, start)
}

/// Writes the loads of `plan` into the cluster through its [`ClusterSink`] (the table
/// of a spec, if `spec`, as that sink takes one).
fn write_rows(
    client: &Client,
    plan: &mut plan::ImportPlan<'_>,
    spec: Option<(plan::TableShape, LoadKey)>,
    opts: &ImportOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    let rules = plan.rules.clone();
    let mut summary = std::thread::scope(|scope| {
        let mut sink = ClusterSink::new(
            scope,
            client,
            &rules,
            progress,
            shape(ropts),
            ropts.in_flight,
        );
        if let Some((shape, key)) = spec {
            sink = sink.with_spec(shape, key);
        }
        match crate::import::load(plan, &mut sink, opts, progress) {
            Ok(summary) => Ok(summary),
            // A request the cluster refused stops the load: its error (the refused row,
            // with its place) is the cause of whatever stopped the rows after it.
            Err(e) => Err(sink.abandon().unwrap_or(e)),
        }
    })?;
    summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// How requests are cut.
fn shape(ropts: &RqliteOptions) -> Shape {
    Shape {
        request_bytes: ropts.request_bytes.max(1024),
        param_rows: 256,
        ordered: ropts.in_flight > 1,
    }
}

/// Generate into a cluster that holds data: planned as generate plans a file (one load,
/// the generator its source), the table read here through the client (its columns,
/// and its largest rowid less the rows an interrupted run of the same spec put in), and
/// written by the cluster's sink.
fn generate_rows(
    client: &Client,
    opts: &GenerateOptions,
    ropts: &RqliteOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    if opts.generate_only {
        return Err(Error::usage(
            "generating alone writes nothing: it needs no cluster",
        ));
    }
    progress.rows_total.store(opts.rows, Ordering::Relaxed);
    let key = generate_key(opts);
    let held = spec_held(client, &opts.table, &key)?;
    let (mut plan, load_opts) = crate::generate::plan_generate(Dest::Cluster, opts, held)?;
    let shape = plan
        .shapes
        .first()
        .cloned()
        .ok_or_else(|| Error::internal("generate's plan has no table"))?;
    let mut summary = write_rows(
        client,
        &mut plan,
        Some((shape, key)),
        &load_opts,
        ropts,
        progress,
        start,
    )?;
    if summary.tables.is_empty() {
        summary.tables.push(opts.table.clone());
    }
    Ok(summary)
}
