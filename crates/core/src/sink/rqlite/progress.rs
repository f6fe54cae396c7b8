//! The progress table of a load into a cluster (`_liteload_progress`): which rows of
//! which input are in, one row a request, so that a rerun goes on where the cluster
//! stopped.
//!
//! Rows are numbered from 1 in the order the source gives them (a bad record skipped
//! as allowed gets no number, so the numbering is the same on a rerun of the same input
//! with the same options). A request records the range of row numbers it holds; since a
//! request is one transaction, a range is recorded exactly when its rows are in. A rerun
//! skips every recorded row, so no row is written twice, whichever request a kill
//! stopped. A request may be guarded ([`guard`]) to commit only after the one before it.

use serde_json::Value as Json;

use super::client::Client;
use super::encode::{self};
use crate::error::{Error, Result};
use crate::schema::quote_ident;

/// The table a load records its progress in, in the cluster.
pub const PROGRESS_TABLE: &str = "_liteload_progress";

pub(crate) fn create_progress_sql() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {}(input TEXT NOT NULL, tbl TEXT NOT NULL, input_bytes INTEGER, first_row INTEGER NOT NULL, last_row INTEGER NOT NULL, rows INTEGER NOT NULL, last_line INTEGER, done INTEGER NOT NULL DEFAULT 0, unix_time INTEGER)",
        quote_ident(PROGRESS_TABLE)
    )
}

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
        // A finished load of no rows records the range 1..=0.
        self.done
            .iter()
            .map(|(a, b)| (b + 1).saturating_sub(*a))
            .sum()
    }

    pub(super) fn contains(&self, row: u64) -> bool {
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

/// The statement that makes a request commit only after the one before it (rows
/// `first..=last` of `key`): while that request's progress row is not in the cluster, it
/// inserts a progress row of NULLs, which the table's NOT NULL refuses, and rqlite rolls
/// the whole request back. Requests in flight at once thus commit in input order, and
/// none after a refused one ever commits.
pub(super) fn guard(key: &LoadKey, first: u64, last: u64) -> String {
    keyed(
        &format!(
            "INSERT INTO {t}(input, tbl, first_row, last_row, rows) SELECT NULL, NULL, NULL, NULL, NULL WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE input = {{}} AND tbl = {{}} AND first_row = ? AND last_row = ?)",
            t = quote_ident(PROGRESS_TABLE)
        ),
        key,
        &format!(",{first},{last}"),
    )
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

pub(crate) fn progress_insert(
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

pub(super) fn progress_delete(key: &LoadKey) -> String {
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

/// Whether the progress row of rows `first..=last` is in the cluster.
pub(super) fn range_recorded(
    client: &Client,
    key: &LoadKey,
    first: u64,
    last: u64,
) -> Result<bool> {
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
