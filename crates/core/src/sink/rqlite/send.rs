//! Requests on their way to the cluster: the queue between a sink and its sender
//! threads, the senders, and what happens when a request is refused (the row found) or
//! its outcome is unknown (the connection broke after it was sent, the leader was lost
//! while committing it: its range is looked up with strong consistency before it is
//! sent again).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use serde_json::Value as Json;

use super::client::{constraint_code_of, CallError, Client};
use super::encode::{self};
use super::progress::{range_recorded, LoadKey};
use crate::batch::RowOrigin;
use crate::error::{Error, Result};

/// One request: its body, the rows it holds, and what each statement is.
pub(crate) struct Request {
    pub(super) body: Vec<u8>,
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) rows: u64,
    pub(super) statements: Vec<Stmt>,
    /// The last row of the request that must commit before this one: its first
    /// statement is a [`guard`] that fails until that request's progress row is in.
    pub(super) after: Option<u64>,
}

/// The requests answered so far (by their last row), for a request whose [`guard`]
/// found the one before it not yet committed: it waits here for that answer.
#[derive(Default)]
pub(crate) struct Answered {
    done: Mutex<std::collections::BTreeSet<u64>>,
    changed: std::sync::Condvar,
}

impl Answered {
    pub(super) fn add(&self, last: u64) {
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
pub(super) enum Stmt {
    Other,
    Json(Vec<RowOrigin>),
    Params(Vec<(RowOrigin, Vec<u8>)>),
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
            let pos = singles[index - before.len()].0.position(source);
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
