//! Rows into a table of a cluster that already holds data: [`RqliteSink`] turns
//! batches into `?transaction` requests, each with its rows and a row of the progress
//! table (`_liteload_progress`: which rows of which input are in), sent by one sender
//! thread while the next request is built.
//!
//! Resuming: rows are numbered from 1 in the order the source gives them (a bad record
//! skipped as allowed gets no number, so the numbering is the same on a rerun of the
//! same input with the same options). A request records the range of row numbers it
//! holds; since a request is one transaction, a range is recorded exactly when its
//! rows are in. A rerun skips every recorded row, so no row is written twice, whichever
//! request a kill stopped. When a request's outcome is unknown (the connection broke
//! after it was sent, the leader was lost while committing it), its range is looked up
//! with strong consistency before it is sent again.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use rusqlite::Connection;
use serde_json::Value as Json;

use super::client::{constraint_code_of, CallError, Client};
use super::encode::{self, Statements};
use crate::batch::{Batch, RowOrigin};
use crate::error::{Error, Position, Result};
use crate::schema::quote_ident;
use crate::sink::BatchSink;
use crate::types::ColumnType;

/// The table a load records its progress in, in the cluster.
pub const PROGRESS_TABLE: &str = "_liteload_progress";

pub(crate) fn create_progress_sql() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {}(input TEXT NOT NULL, tbl TEXT NOT NULL, input_bytes INTEGER, first_row INTEGER NOT NULL, last_row INTEGER NOT NULL, rows INTEGER NOT NULL, last_line INTEGER, done INTEGER NOT NULL DEFAULT 0, unix_time INTEGER)",
        quote_ident(PROGRESS_TABLE)
    )
}

/// Statements of rows a request holds at most before it is sent, whatever its size.
/// rqlite gzips the Raft command of a request of 50 statements or more, and that gzip
/// took most of the leader's CPU where it happened (bench/README.md). A document
/// statement holds up to 4,096 rows, so narrow rows would otherwise reach 50 statements
/// before 4 MiB; one more call of `emit` adds at most 16 statements (of bound rows), and
/// the progress rows and the first request's DDL a few more.
const STATEMENTS_PER_REQUEST: usize = 30;

/// Which load a progress row belongs to.
#[derive(Clone, Debug)]
pub(crate) struct LoadKey {
    pub input: String,
    pub table: String,
    pub input_bytes: Option<u64>,
    /// The table's primary key columns (none for a table without one), to tell a
    /// refused key's constraint from a UNIQUE index's.
    pub primary_key: Vec<String>,
    /// The input can be read again as it was (a file): a load of it resumes where an
    /// earlier one of the same file stopped, and one that finished is not repeated.
    /// False for what is read once (standard input, a reader, bytes, the program's
    /// rows or record batches): its name says nothing of its contents, so each load is
    /// new, and the progress recorded under that name before is replaced.
    pub resumable: bool,
}

/// What the cluster holds of a load already.
#[derive(Debug, Default)]
pub(crate) struct Resume {
    /// Row ranges in, sorted and merged.
    pub done: Vec<(u64, u64)>,
    /// The load finished before: every row is in.
    pub finished: bool,
    /// Progress rows of an earlier load of this input that had another size, finished:
    /// they are replaced by this load's.
    pub stale: bool,
}

impl Resume {
    pub(crate) fn rows_in(&self) -> u64 {
        self.done.iter().map(|(a, b)| b - a + 1).sum()
    }

    fn contains(&self, row: u64) -> bool {
        let i = self.done.partition_point(|&(_, b)| b < row);
        self.done.get(i).is_some_and(|&(a, _)| a <= row)
    }
}

/// Reads the progress of `key` (strongly consistent). Progress recorded for the same
/// input and table with another input size is an error while unfinished (the input
/// changed under an interrupted load), and is replaced when finished.
pub(crate) fn read_resume(client: &Client, key: &LoadKey) -> Result<Resume> {
    if !client.has_table(PROGRESS_TABLE)? {
        return Ok(Resume::default());
    }
    let rows = client.query_rows(
        &format!(
            "SELECT input_bytes, first_row, last_row, done FROM {} WHERE input = ? AND tbl = ? ORDER BY first_row",
            quote_ident(PROGRESS_TABLE)
        ),
        &[Json::from(key.input.clone()), Json::from(key.table.clone())],
    )?;
    let mut resume = Resume::default();
    for r in rows {
        let bytes = r.first().and_then(Json::as_u64);
        let (Some(a), Some(b)) = (
            r.get(1).and_then(Json::as_u64),
            r.get(2).and_then(Json::as_u64),
        ) else {
            continue;
        };
        let done = r.get(3).and_then(Json::as_i64) == Some(1);
        if bytes != key.input_bytes {
            if done {
                resume.stale = true;
                continue;
            }
            return Err(Error::usage(format!(
                "an interrupted load of {} into {} is recorded in {} for an input of {} bytes, and the input now has {}: rows cannot be matched; delete its rows there (input = {:?}) to load it anew",
                key.input,
                quote_ident(&key.table),
                PROGRESS_TABLE,
                bytes.map_or("unknown".into(), |b| b.to_string()),
                key.input_bytes.map_or("unknown".into(), |b| b.to_string()),
                key.input,
            )));
        }
        resume.finished |= done;
        match resume.done.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => resume.done.push((a, b)),
        }
    }
    Ok(resume)
}

/// How requests are shaped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// A request is sent once its body reaches this many bytes.
    pub request_bytes: usize,
    /// Rows per bound-parameter statement.
    pub param_rows: usize,
    /// Requests may be in flight at once: each then commits only after the one before
    /// it (see [`guard`]), so that requests commit in input order and none after a
    /// refused one commits.
    pub ordered: bool,
}

/// One request: its body, the rows it holds, and what each statement is.
pub(crate) struct Request {
    body: Vec<u8>,
    first: u64,
    last: u64,
    rows: u64,
    statements: Vec<Stmt>,
    /// The last row of the request that must commit before this one: its first
    /// statement is a [`guard`] that fails until that request's progress row is in.
    after: Option<u64>,
}

/// The statement that makes a request commit only after the one before it (rows
/// `first..=last` of `key`): while that request's progress row is not in the cluster, it
/// inserts a progress row of NULLs, which the table's NOT NULL refuses, and rqlite rolls
/// the whole request back. Requests in flight at once thus commit in input order, and
/// none after a refused one ever commits.
fn guard(key: &LoadKey, first: u64, last: u64) -> String {
    keyed(
        &format!(
            "INSERT INTO {t}(input, tbl, first_row, last_row, rows) SELECT NULL, NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE input = {{}} AND tbl = {{}} AND first_row = ? AND last_row = ?)",
            t = quote_ident(PROGRESS_TABLE)
        ),
        key,
        &format!(",{first},{last}"),
    )
}

/// The requests answered so far (by their last row), for a request whose [`guard`]
/// found the one before it not yet committed: it waits here for that answer.
#[derive(Default)]
pub(crate) struct Answered {
    done: Mutex<std::collections::BTreeSet<u64>>,
    changed: std::sync::Condvar,
}

impl Answered {
    fn add(&self, last: u64) {
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(last);
        self.changed.notify_all();
    }

    /// Waits until the request ending at `last` is answered or `failed` is set (checked
    /// at least every 100 ms). Returns whether it was answered.
    fn wait_for(&self, last: u64, failed: &Mutex<Option<Error>>) -> bool {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if done.contains(&last) {
                return true;
            }
            if failed.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                return false;
            }
            done = self
                .changed
                .wait_timeout(done, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// What a statement of a request holds, to find a refused row.
enum Stmt {
    Other,
    Json(Vec<RowOrigin>),
    Params(Vec<(RowOrigin, Vec<u8>)>),
}

/// Batches into requests; see the module's documentation.
pub(crate) struct RqliteSink<'c> {
    client: &'c Client,
    source: Arc<str>,
    statements: Statements,
    key: LoadKey,
    resume: Resume,
    shape: Shape,
    /// Statements (JSON arrays) that go first in the first request.
    prelude: Vec<String>,
    body: Vec<u8>,
    stmts: Vec<Stmt>,
    first: u64,
    last: u64,
    rows: u64,
    last_line: u64,
    next_row: u64,
    pub(crate) written: u64,
    tx: Option<Sender<Request>>,
    failed: Arc<Mutex<Option<Error>>>,
    /// Whether the first request (the one with the prelude) is answered.
    first_sent: bool,
    /// With [`Shape::ordered`]: the rows of the last request built, which the next one
    /// must commit after.
    previous: Option<(u64, u64)>,
    /// The last row of the request the body being gathered has a [`guard`] for.
    guarded_after: Option<u64>,
    answered: Arc<Answered>,
}

impl<'c> RqliteSink<'c> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        client: &'c Client,
        source: Arc<str>,
        table: &str,
        columns: &[String],
        key: LoadKey,
        resume: Resume,
        shape: Shape,
        prelude: Vec<String>,
        sender: &Sender<Request>,
        failed: Arc<Mutex<Option<Error>>>,
        answered: Arc<Answered>,
    ) -> RqliteSink<'c> {
        RqliteSink {
            client,
            source,
            statements: Statements::new(table, columns, client.doc_shape()),
            key,
            resume,
            shape,
            prelude,
            body: Vec::new(),
            stmts: vec![],
            first: 0,
            last: 0,
            rows: 0,
            last_line: 0,
            next_row: 1,
            written: 0,
            tx: Some(sender.clone()),
            failed,
            first_sent: false,
            previous: None,
            guarded_after: None,
            answered,
        }
    }

    /// An error once a sender failed. The failure itself stays where it is: the senders
    /// stop on it (none sends a request after a refused one), and
    /// [`TableLoad::abandon`] returns it as the load's cause.
    fn check_failed(&self) -> Result<()> {
        match self
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            Some(e) => Err(Error::cluster(
                self.client.node(),
                format!("the load stopped: {e}"),
            )),
            None => Ok(()),
        }
    }

    fn open_body(&mut self) {
        if self.body.is_empty() {
            self.body.push(b'[');
            if let Some((first, last)) = self.previous.filter(|_| self.shape.ordered) {
                self.body
                    .extend_from_slice(guard(&self.key, first, last).as_bytes());
                self.body.push(b',');
                self.stmts.push(Stmt::Other);
                self.guarded_after = Some(last);
            }
            for p in self.prelude.drain(..) {
                self.body.extend_from_slice(p.as_bytes());
                self.body.push(b',');
                self.stmts.push(Stmt::Other);
            }
        }
    }

    /// The request of what is gathered, with its progress row (for `done`, the row
    /// that marks the whole load finished, replacing its ranges).
    fn build(&mut self, done: bool) -> Request {
        self.open_body();
        let progress = if done {
            let delete = progress_delete(&self.key);
            self.stmts.push(Stmt::Other);
            self.body.extend_from_slice(delete.as_bytes());
            self.body.push(b',');
            let total = self.resume.rows_in() + self.written + self.rows;
            progress_insert(&self.key, 1, self.next_row - 1, total, self.last_line, true)
        } else {
            progress_insert(
                &self.key,
                self.first,
                self.last,
                self.rows,
                self.last_line,
                false,
            )
        };
        self.stmts.push(Stmt::Other);
        self.body.extend_from_slice(progress.as_bytes());
        self.body.push(b']');
        let req = Request {
            body: std::mem::take(&mut self.body),
            first: self.first,
            last: self.last,
            rows: self.rows,
            statements: std::mem::take(&mut self.stmts),
            after: self.guarded_after.take(),
        };
        if !done && req.rows > 0 {
            self.previous = Some((req.first, req.last));
        }
        self.written += req.rows;
        self.rows = 0;
        self.first = 0;
        req
    }

    /// Sends what is gathered, with its progress row. The first request (it creates the
    /// tables) is sent from here, and answered, before any other; the rest go to the
    /// senders.
    fn flush(&mut self) -> Result<()> {
        if self.rows == 0 && self.first_sent {
            return Ok(());
        }
        let req = self.build(false);
        if !self.first_sent {
            self.first_sent = true;
            send_one(self.client, &req, &self.key, &self.source)?;
            self.answered.add(req.last);
            return Ok(());
        }
        let tx = self.tx.as_ref().expect("the sink is not finished");
        if tx.send(req).is_err() {
            self.check_failed()?;
            return Err(Error::internal("the sender stopped"));
        }
        self.check_failed()
    }

    /// Sends the rest and closes the senders' queue. Returns the request that marks the
    /// load finished, to be sent once every request before it is answered.
    pub(crate) fn finish(&mut self) -> Result<Request> {
        if self.rows > 0 {
            self.flush()?;
        }
        self.tx = None;
        Ok(self.build(true))
    }
}

/// A statement about `key`'s progress rows: `sql` holds two `{}` for the input and
/// table placeholders, which come first among its parameters; `rest` (JSON, each
/// after a ',') follows them.
fn keyed(sql: &str, key: &LoadKey, rest: &str) -> String {
    let sql = sql
        .replacen("{}", text_placeholder(&key.input), 1)
        .replacen("{}", text_placeholder(&key.table), 1);
    let mut out = vec![b'['];
    encode::json_str(&mut out, &sql);
    out.push(b',');
    encode::text_param(&mut out, &key.input);
    out.push(b',');
    encode::text_param(&mut out, &key.table);
    out.extend_from_slice(rest.as_bytes());
    out.push(b']');
    String::from_utf8(out).expect("JSON is UTF-8")
}

fn progress_insert(
    key: &LoadKey,
    first: u64,
    last: u64,
    rows: u64,
    line: u64,
    done: bool,
) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let rest = format!(
        ",{},{first},{last},{rows},{line},{},{now}",
        key.input_bytes.map_or("null".into(), |b| b.to_string()),
        u8::from(done)
    );
    keyed(
        &format!(
            "INSERT INTO {}(input, tbl, input_bytes, first_row, last_row, rows, last_line, done, unix_time) VALUES ({{}}, {{}}, ?, ?, ?, ?, ?, ?, ?)",
            quote_ident(PROGRESS_TABLE)
        ),
        key,
        &rest,
    )
}

fn progress_delete(key: &LoadKey) -> String {
    keyed(
        &format!(
            "DELETE FROM {} WHERE input = {{}} AND tbl = {{}}",
            quote_ident(PROGRESS_TABLE)
        ),
        key,
        "",
    )
}

fn text_placeholder(s: &str) -> &'static str {
    if encode::looks_like_hex(s) {
        "CAST(? AS TEXT)"
    } else {
        "?"
    }
}

/// The statement deleting every progress row of `key` (a finished load of another
/// version of the input), for the first request.
pub(crate) fn stale_progress_delete(key: &LoadKey) -> String {
    progress_delete(key)
}

impl BatchSink for RqliteSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        _bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        self.check_failed()?;
        let mut run: Vec<usize> = vec![];
        let mut run_json = true;
        let mut added = 0;
        for r in 0..batch.rows() {
            let n = self.next_row;
            self.next_row += 1;
            if self.resume.contains(n) {
                continue;
            }
            let json = encode::json_safe(batch.row(r));
            if !run.is_empty() && json != run_json {
                self.emit(batch, &run, run_json);
                run.clear();
            }
            run_json = json;
            run.push(r);
            if self.first == 0 {
                self.first = n;
            }
            self.last = n;
            self.rows += 1;
            added += 1;
            self.last_line = batch.origin(r).line;
            if run.len() >= 4096 {
                self.emit(batch, &run, run_json);
                run.clear();
                if self.full() {
                    self.flush()?;
                }
            }
        }
        if !run.is_empty() {
            self.emit(batch, &run, run_json);
        }
        if self.full() {
            self.flush()?;
        }
        Ok(added)
    }

    fn add_columns(&mut self, _columns: &[(String, ColumnType)]) -> Result<()> {
        Err(Error::usage(
            "a column appeared after the sample; a load into an rqlite cluster writes the columns it saw first (name every column in the sample, or load into a file)",
        ))
    }
}

impl RqliteSink<'_> {
    /// Whether the request being built is to be sent: at its size, or at
    /// [`STATEMENTS_PER_REQUEST`] statements of rows.
    fn full(&self) -> bool {
        self.body.len() >= self.shape.request_bytes || self.stmts.len() >= STATEMENTS_PER_REQUEST
    }

    fn emit(&mut self, batch: &Batch, rows: &[usize], json: bool) {
        self.open_body();
        // The body is `[` alone, or statements each followed by ','.
        if json {
            self.statements.json_rows(&mut self.body, batch, rows);
            self.body.push(b',');
            self.stmts
                .push(Stmt::Json(rows.iter().map(|&r| batch.origin(r)).collect()));
        } else {
            for chunk in rows.chunks(self.shape.param_rows.max(1)) {
                let mut singles = vec![];
                for &r in chunk {
                    let mut one = vec![b'['];
                    self.statements.param_rows(&mut one, batch, &[r], 1, false);
                    one.push(b']');
                    singles.push((batch.origin(r), one));
                }
                let n = self.statements.param_rows(
                    &mut self.body,
                    batch,
                    chunk,
                    self.shape.param_rows,
                    false,
                );
                debug_assert_eq!(n, 1);
                self.body.push(b',');
                self.stmts.push(Stmt::Params(singles));
            }
        }
    }
}

/// A sender: sends requests from the queue until it closes, or until one (of any
/// sender) fails: the first failure is left in `failed`, and what is queued after it is
/// dropped. Returns the rows it sent.
pub(crate) fn send_all(
    client: &Client,
    rx: Receiver<Request>,
    failed: &Mutex<Option<Error>>,
    answered: &Answered,
    key: &LoadKey,
    source: &Arc<str>,
) -> u64 {
    let mut sent = 0;
    for req in rx.iter() {
        loop {
            if failed.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                // Another sender failed: the load stops; what is queued is dropped
                // (and a request in flight after the refused one fails its guard).
                break;
            }
            match send_guarded(client, &req, key, source) {
                Ok(true) => {
                    sent += req.rows;
                    answered.add(req.last);
                }
                // The request before this one is not committed yet: wait for its
                // answer, then send this one again; stop if it was refused.
                Ok(false) => match req.after {
                    Some(before) if answered.wait_for(before, failed) => continue,
                    _ => {}
                },
                Err(e) => {
                    failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                }
            }
            break;
        }
    }
    sent
}

/// Creates the queue between a sink and its sender.
pub(crate) fn queue(in_flight: usize) -> (Sender<Request>, Receiver<Request>) {
    bounded(in_flight.max(1))
}

pub(crate) fn send_one(
    client: &Client,
    req: &Request,
    key: &LoadKey,
    source: &Arc<str>,
) -> Result<()> {
    match send_guarded(client, req, key, source)? {
        true => Ok(()),
        false => Err(Error::cluster(
            client.node(),
            "the request before this one is not in the cluster",
        )),
    }
}

/// Sends `req` until it is applied (`true`), refused (an error), or held back by its
/// [`guard`] because the request before it is not committed yet (`false`).
fn send_guarded(client: &Client, req: &Request, key: &LoadKey, source: &Arc<str>) -> Result<bool> {
    let start = Instant::now();
    loop {
        match client.execute(&req.body, true) {
            Ok(_) => return Ok(true),
            Err(CallError::Statement { index: 0, .. }) if req.after.is_some() => return Ok(false),
            Err(CallError::Statement { index, message, .. }) => {
                return Err(locate(client, req, index, message, key, source));
            }
            Err(CallError::Cluster(e)) => return Err(e),
            Err(CallError::Uncertain(e)) => {
                if start.elapsed() > client.patience {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(500));
                client.next_node();
                if req.rows > 0 && range_recorded(client, key, req.first, req.last)? {
                    return Ok(true);
                }
                // Not applied: send it again.
            }
        }
    }
}

/// Whether the progress row of rows `first..=last` is in the cluster.
fn range_recorded(client: &Client, key: &LoadKey, first: u64, last: u64) -> Result<bool> {
    let rows = client.query_rows(
        &format!(
            "SELECT count(*) FROM {} WHERE input = ? AND tbl = ? AND first_row <= ? AND last_row >= ?",
            quote_ident(PROGRESS_TABLE)
        ),
        &[
            Json::from(key.input.clone()),
            Json::from(key.table.clone()),
            Json::from(first),
            Json::from(last),
        ],
    );
    match rows {
        Ok(r) => Ok(r
            .first()
            .and_then(|r| r.first())
            .and_then(Json::as_i64)
            .unwrap_or(0)
            > 0),
        // No progress table yet: the first request (which makes it) was not applied.
        Err(e) if e.to_string().contains("no such table") => Ok(false),
        Err(e) => Err(e),
    }
}

/// The error for a request the cluster refused at statement `index`: for a statement of
/// rows, the row, found by sending that statement's rows one per statement in a
/// transaction that is made to fail at its end (so nothing of it stays).
fn locate(
    client: &Client,
    req: &Request,
    index: usize,
    message: String,
    key: &LoadKey,
    source: &Arc<str>,
) -> Error {
    let singles: Vec<(RowOrigin, Vec<u8>)> = match req.statements.get(index) {
        Some(Stmt::Params(rows)) => rows.clone(),
        Some(Stmt::Json(origins)) => match doc_statement_of(&req.body, index) {
            Some(doc) if doc.rows.len() == origins.len() => origins
                .iter()
                .zip(&doc.rows)
                .map(|(o, row)| (*o, doc.one_row(row)))
                .collect(),
            _ => vec![],
        },
        _ => vec![],
    };
    let whole = || {
        Error::cluster(
            client.node(),
            format!("the cluster refused the request: {message}"),
        )
    };
    if singles.is_empty() {
        return whole();
    }
    // The statements before the refused one (the table's CREATE, say) go first.
    let before: Vec<Json> = serde_json::from_slice::<Json>(&req.body)
        .ok()
        .and_then(|v| v.as_array().map(|a| a[..index.min(a.len())].to_vec()))
        .unwrap_or_default();
    let mut body = vec![b'['];
    for st in &before {
        serde_json::to_writer(&mut body, st).expect("writing to a Vec");
        body.push(b',');
    }
    for (_, s) in &singles {
        body.extend_from_slice(s);
        body.push(b',');
    }
    body.extend_from_slice(b"[\"SELECT * FROM \\\"_liteload_probe_has_no_table_\\\"\"]]");
    match client.execute(&body, true) {
        Err(CallError::Statement { index, message, .. })
            if (before.len()..before.len() + singles.len()).contains(&index) =>
        {
            let o = singles[index - before.len()].0;
            let pos = Position {
                path: source.clone(),
                line: o.line,
                column: 1,
                record: o.record,
                byte: 0,
            };
            Error::constraint(
                constraint_code_of(&message, &key.primary_key),
                Some(pos),
                message,
            )
        }
        _ => whole(),
    }
}

/// The document statement at `index` of a request body.
fn doc_statement_of(body: &[u8], index: usize) -> Option<encode::DocStatement> {
    let v: Json = serde_json::from_slice(body).ok()?;
    encode::DocStatement::read(v.as_array()?.get(index)?)
}

/// The cluster's `CREATE TABLE` of `table` (its actual name and SQL), if it has one.
pub(crate) fn cluster_table(client: &Client, table: &str) -> Result<Option<(String, String)>> {
    let rows = client.query_rows(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE",
        &[Json::from(table)],
    )?;
    Ok(rows.first().and_then(|r| {
        Some((
            r.first()?.as_str()?.to_string(),
            r.get(1)?.as_str()?.to_string(),
        ))
    }))
}

/// The statement (rqlite JSON) running `sql` with no parameters.
pub(crate) fn plain(sql: &str) -> String {
    let mut out = vec![b'['];
    encode::json_str(&mut out, sql);
    out.push(b']');
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// An in-memory database holding the table `sql` creates: the cluster's table, to plan
/// against with the same checks as a file.
pub(crate) fn mirror_of(sql: &str) -> Result<Connection> {
    let c = Connection::open_in_memory().map_err(|e| Error::sqlite("opening :memory:", e))?;
    c.execute_batch(sql)
        .map_err(|e| Error::sqlite("copying the cluster's table definition", e))?;
    Ok(c)
}

/// The column names of `table` in `conn` (none when it has no such table).
pub(crate) fn table_columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    Ok(crate::table::existing_columns(conn, table)?
        .map(|(_, cols)| cols.into_iter().map(|c| c.name).collect())
        .unwrap_or_default())
}

/// One table's rows on their way into the cluster: the request builder and its sender
/// threads, which live on the caller's scope. Dropped before [`TableLoad::end`], the
/// requests queued are still sent (each is a whole transaction with its progress rows,
/// so a rerun goes on after them), and the load is not marked finished.
pub(crate) struct TableLoad<'c, 'scope> {
    client: &'c Client,
    sink: RqliteSink<'c>,
    senders: Vec<std::thread::ScopedJoinHandle<'scope, u64>>,
    failed: Arc<Mutex<Option<Error>>>,
    key: LoadKey,
    source: Arc<str>,
}

impl<'c, 'scope> TableLoad<'c, 'scope> {
    /// Starts the load `key` of rows into `table`'s `columns`, `prelude` (statements as
    /// rqlite JSON) first in its first request: reads what the cluster holds of it
    /// already, and starts `in_flight` senders on `scope`. `None` when an earlier run
    /// finished it (nothing to write); what was found goes to `notes`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        client: &'c Client,
        table: &str,
        columns: &[String],
        key: LoadKey,
        source: Arc<str>,
        mut prelude: Vec<String>,
        shape: Shape,
        in_flight: usize,
        notes: &mut Vec<String>,
    ) -> Result<Option<Self>>
    where
        'c: 'scope,
    {
        let resume = if key.resumable {
            read_resume(client, &key)?
        } else {
            // Replace what a load of another input by this name recorded.
            if client.has_table(PROGRESS_TABLE)? {
                prelude.push(stale_progress_delete(&key));
            }
            Resume::default()
        };
        if resume.finished {
            notes.push(format!(
                "{} was loaded into {} before ({} rows, recorded in {}): nothing written",
                key.input,
                quote_ident(table),
                resume.rows_in(),
                PROGRESS_TABLE
            ));
            return Ok(None);
        }
        if resume.stale && resume.done.is_empty() {
            prelude.push(stale_progress_delete(&key));
        }
        if !resume.done.is_empty() {
            notes.push(format!(
                "resumed: {} rows of {} were in {} from an earlier run, and are skipped",
                resume.rows_in(),
                key.input,
                quote_ident(table)
            ));
        }
        let failed = Arc::new(Mutex::new(None));
        let answered = Arc::new(Answered::default());
        let (tx, rx) = queue(in_flight);
        let sink = RqliteSink::new(
            client,
            source.clone(),
            table,
            columns,
            key.clone(),
            resume,
            shape,
            prelude,
            &tx,
            failed.clone(),
            answered.clone(),
        );
        drop(tx);
        let senders = (0..in_flight.max(1))
            .map(|_| {
                let rx = rx.clone();
                let (failed, answered) = (failed.clone(), answered.clone());
                let (key, source) = (key.clone(), source.clone());
                scope.spawn(move || send_all(client, rx, &failed, &answered, &key, &source))
            })
            .collect();
        Ok(Some(TableLoad {
            client,
            sink,
            senders,
            failed,
            key,
            source,
        }))
    }

    /// The request builder, which batches are written through.
    pub(crate) fn sink(&mut self) -> &mut RqliteSink<'c> {
        &mut self.sink
    }

    /// Stops after a failed load: the queue closes (what is in it is still sent, each
    /// request a whole transaction), the senders finish; returns the first error one of
    /// them met. The load is not marked finished.
    pub(crate) fn abandon(self) -> Option<Error> {
        let TableLoad {
            sink,
            senders,
            failed,
            ..
        } = self;
        drop(sink);
        for h in senders {
            let _ = h.join();
        }
        let e = failed.lock().unwrap_or_else(|p| p.into_inner()).take();
        e
    }

    /// Sends the rest, waits for every answer, then marks the load finished. Returns
    /// the rows this run wrote. A sender's failure comes first.
    pub(crate) fn end(self) -> Result<u64> {
        let TableLoad {
            client,
            mut sink,
            senders,
            failed,
            key,
            source,
        } = self;
        let done = sink.finish();
        let written = sink.written;
        drop(sink);
        let sent: u64 = senders
            .into_iter()
            .map(|h| h.join().expect("a sender does not panic"))
            .sum();
        if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        // Every request is in: the load is marked finished.
        send_one(client, &done?, &key, &source)?;
        debug_assert!(sent <= written);
        Ok(written)
    }
}
