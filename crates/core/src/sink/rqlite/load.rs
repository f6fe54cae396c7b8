//! Rows into a table of a cluster that already holds data: [`RqliteSink`] turns
//! batches into `?transaction` requests, each with its rows and a row of the progress
//! table (`_liteload_progress`: which rows of which input are in), sent by one sender
//! thread while the next request is built.
//! Resuming is the progress table's ([`super::progress`]); sending, the senders'
//! ([`super::send`]).

use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;
use rusqlite::Connection;
use serde_json::Value as Json;

use super::client::Client;
use super::encode::{self, Statements};
use super::progress::{
    guard, progress_delete, progress_insert, read_resume, stale_progress_delete, LoadKey, Resume,
    PROGRESS_TABLE,
};
use super::send::{queue, send_all, send_one, Answered, Request, Stmt};
use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::sink::BatchSink;
use crate::types::ColumnType;

/// Statements of rows a request holds at most before it is sent, whatever its size.
/// rqlite gzips the Raft command of a request of 50 statements or more, and that gzip
/// took most of the leader's CPU where it happened (bench/README.md). A document
/// statement holds up to 4,096 rows, so narrow rows would otherwise reach 50 statements
/// before 4 MiB; one more call of `emit` adds at most 16 statements (of bound rows), and
/// the progress rows and the first request's DDL a few more.
const STATEMENTS_PER_REQUEST: usize = 30;

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
    /// rqlite JSON) first in its first request, then `table_ready` (what makes the table
    /// ready: DROP, CREATE, ADD COLUMN) unless an earlier run of this load put rows in
    /// (a resumed load finds its table as that run left it: replaced, made or widened
    /// already, and dropping it again would lose the rows it skips). Reads what the
    /// cluster holds of the load already, and starts `in_flight` senders on `scope`.
    /// `None` when an earlier run finished it (nothing to write); what was found goes to
    /// `notes`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start<'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        client: &'c Client,
        table: &str,
        columns: &[String],
        key: LoadKey,
        source: Arc<str>,
        mut prelude: Vec<String>,
        table_ready: Vec<String>,
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
        if resume.done.is_empty() {
            prelude.extend(table_ready);
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
