//! [`ClusterWriter`]: writes one closed [`Window`] into an rqlite cluster as one
//! `?transaction` request, with the same merge as [`super::writer::Writer`]: per key,
//! the fields its messages set (the last value of each wins, an explicit null sets
//! NULL), the others kept; a new key's absent fields NULL. The resume point and the
//! history rows go in the same request, so a window is in the cluster with its resume
//! point or not at all.
//!
//! The statements: rows with the same set of present fields share a multi-row
//! `INSERT … VALUES … ON CONFLICT (keys) DO UPDATE SET f = excluded.f, …` (every column
//! listed, absent ones NULL, so a new row gets NULL as the SQLite path gives it; only
//! present ones updated). Values are bound parameters (REALs exactly; see
//! `crate::sink::rqlite::encode`). A row the table's constraints refuse is found (each row of
//! the refused statement alone, in a request made to fail at its end) and left out,
//! as the SQLite path leaves it out; the rest of the window is written.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value as Json;

use super::parse::{decode_key, KeyRef, Val};
use super::upsert::{Upsert, DEFAULT_MAX_PARAMS};
use super::window::Window;
use super::writer::{
    history_table_sql, key_text, state_table_sql, state_upsert_sql, window_ddl, ResumeRow,
};
use super::{CommitStats, STATE_TABLE};
use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::sink::rqlite::client::{CallError, Client};
use crate::sink::rqlite::encode;
use crate::types::ColumnType;

/// Rows per upsert statement, at most (fewer when their parameters would pass
/// [`DEFAULT_MAX_PARAMS`]).
const ROWS_PER_STATEMENT: usize = 256;

pub(crate) struct ClusterWriter {
    client: Client,
    table: String,
    keys: Vec<String>,
    history: Option<String>,
    table_exists: bool,
    columns: Vec<(String, Option<ColumnType>)>,
    /// The table's row count after the last window (0 before it exists; `None` until
    /// known): the count before a window whose answer was lost.
    last_count: Option<u64>,
}

/// One statement of a window's request, as JSON text, and the rows (window row
/// indexes, in `Sorted` order) it holds.
struct Stmt {
    json: String,
    rows: Vec<usize>,
}

impl ClusterWriter {
    pub(crate) fn new(
        client: Client,
        table: String,
        keys: Vec<String>,
        history: Option<String>,
        existing: Option<Vec<(String, Option<ColumnType>)>>,
    ) -> ClusterWriter {
        ClusterWriter {
            client,
            table,
            keys,
            history,
            last_count: existing.is_none().then_some(0),
            table_exists: existing.is_some(),
            columns: existing.unwrap_or_default(),
        }
    }

    /// The table's row count, read with strong consistency.
    fn count_now(&self) -> Result<u64> {
        let rows = self.client.query_rows(
            &format!("SELECT count(*) FROM {}", quote_ident(&self.table)),
            &[],
        )?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(Json::as_u64)
            .unwrap_or(0))
    }

    /// The table's definition and its indexes, from the cluster, in a connection of
    /// its own in memory: the engine checks them as it checks a local table.
    pub(crate) fn schema_mirror(client: &Client, table: &str) -> Result<Connection> {
        let mirror =
            Connection::open_in_memory().map_err(|e| Error::sqlite("opening :memory:", e))?;
        let rows = client.query_rows(
            "SELECT sql FROM sqlite_schema WHERE tbl_name = ? COLLATE NOCASE AND sql IS NOT NULL ORDER BY type = 'index'",
            &[Json::from(table)],
        )?;
        for r in rows {
            if let Some(sql) = r.first().and_then(Json::as_str) {
                mirror
                    .execute_batch(sql)
                    .map_err(|e| Error::sqlite("copying the cluster's table definition", e))?;
            }
        }
        Ok(mirror)
    }

    /// Where a previous run stopped reading `source`, read from the cluster.
    pub(crate) fn resume_point(&self, source: &str) -> Result<Option<ResumeRow>> {
        if !self.client.has_table(STATE_TABLE)? {
            return Ok(None);
        }
        let rows = self.client.query_rows(
            &format!("SELECT line, offset, file, position FROM {STATE_TABLE} WHERE source = ?"),
            &[Json::from(source)],
        )?;
        Ok(rows.first().map(|r| {
            (
                r.first().and_then(Json::as_u64).unwrap_or(0),
                r.get(1).and_then(Json::as_u64).unwrap_or(0),
                r.get(2).and_then(Json::as_str).map(String::from),
                r.get(3).and_then(Json::as_str).map(String::from),
            )
        }))
    }

    /// Writes `w` in one request; on error nothing of it is written (or, if the cluster
    /// could not say whether it was, the error says so).
    pub(crate) fn commit(&mut self, w: &Window) -> Result<CommitStats> {
        if self.last_count.is_none() {
            // Read once, so that a window whose answer is lost still counts right.
            self.last_count = Some(self.count_now()?);
        }
        let (exists, columns) = (self.table_exists, self.columns.clone());
        let (ddl, new_columns) = window_ddl(
            &self.table,
            &self.keys,
            &mut self.table_exists,
            &mut self.columns,
            w,
        );
        let result = self.send_window(w, &ddl);
        if result.is_err() {
            // Nothing of the window is in: neither are its columns.
            (self.table_exists, self.columns) = (exists, columns);
        }
        let (before, after, refused) = result?;
        let before = before.or(self.last_count).unwrap_or(after);
        self.last_count = Some(after);
        let keys = w.rows.len() as u64;
        let inserted = after.saturating_sub(before).min(keys);
        Ok(CommitStats {
            messages: w.messages,
            keys,
            inserted,
            updated: keys.saturating_sub(inserted + refused.len() as u64),
            rejects: w.rejects + refused.len() as u64,
            refused,
            new_columns,
            offset: w.position.as_ref().map(|p| p.offset),
            ..CommitStats::default()
        })
    }

    /// Sends the window, leaving out rows the table refuses. Returns the table's row
    /// count before (`None` when the answer was lost and the window found applied) and
    /// after it, and the reasons of the rows refused.
    fn send_window(&self, w: &Window, ddl: &[String]) -> Result<(Option<u64>, u64, Vec<String>)> {
        let sorted = w.sorted();
        let t = quote_ident(&self.table);
        let mut head: Vec<String> = ddl.iter().map(|s| plain(s)).collect();
        head.push(plain(&format!("SELECT count(*) FROM {t}")));
        let mut rows = if self.table_exists {
            self.row_statements(sorted)?
        } else {
            vec![]
        };
        let mut tail = vec![plain(&format!("SELECT count(*) FROM {t}"))];
        if let Some(h) = &self.history {
            tail.push(plain(&history_table_sql(h)));
            for &(at, a, b) in &w.history {
                let raw = String::from_utf8_lossy(&w.text[a..b]);
                let mut params = vec![b','];
                serde_json::to_writer(&mut params, &at).expect("writing to a Vec");
                params.push(b',');
                // A message that rqlite would read as a BLOB is stored as text all the same.
                let ph = encode::text_param(&mut params, &raw);
                let sql = format!(
                    "INSERT INTO {} (received, message) VALUES (?, {ph})",
                    quote_ident(h)
                );
                let mut s = vec![b'['];
                encode::json_str(&mut s, &sql);
                s.extend_from_slice(&params);
                s.push(b']');
                tail.push(String::from_utf8(s).expect("JSON is UTF-8"));
            }
        }
        if let Some(p) = &w.position {
            tail.push(plain(&state_table_sql()));
            let mut s = vec![b'['];
            encode::json_str(&mut s, &state_upsert_sql());
            s.push(b',');
            encode::json_str(&mut s, &p.source);
            s.extend_from_slice(format!(",{},{},", p.line, p.offset).as_bytes());
            match &p.file {
                Some(f) => encode::json_str(&mut s, f),
                None => s.extend_from_slice(b"null"),
            }
            s.push(b',');
            match &p.position {
                Some(f) => encode::json_str(&mut s, f),
                None => s.extend_from_slice(b"null"),
            }
            s.push(b']');
            tail.push(String::from_utf8(s).expect("JSON is UTF-8"));
        }
        let mut refused: Vec<String> = vec![];
        loop {
            let body = assemble(&head, &rows, &tail);
            match self.request(&body, w) {
                Ok(None) => {
                    // Applied, its answer lost: the count now is the count after it.
                    return Ok((None, self.count_now()?, refused));
                }
                Ok(Some(results)) => {
                    let count = |i: usize| {
                        results
                            .get(i)
                            .and_then(|r| r.first())
                            .and_then(|r| r.first())
                            .and_then(Json::as_u64)
                            .unwrap_or(0)
                    };
                    let before = count(head.len() - 1);
                    let after = count(head.len() + rows.len());
                    return Ok((Some(before), after, refused));
                }
                Err(CallError::Statement {
                    index,
                    message,
                    node,
                }) if (head.len()..head.len() + rows.len()).contains(&index) => {
                    // One of this statement's rows is refused: find it, leave it out.
                    let k = index - head.len();
                    let Some(bad) = self.find_refused(&head, &rows[..k], &rows[k], sorted) else {
                        return Err(Error::cluster(
                            node,
                            format!("the cluster refused a write into {t}: {message}"),
                        ));
                    };
                    refused.push(format!(
                        "the row with key ({}) was not written: {message}",
                        key_text(sorted, bad, self.keys.len())
                    ));
                    let keep: Vec<usize> =
                        rows[k].rows.iter().copied().filter(|&r| r != bad).collect();
                    rows.splice(k..=k, self.statements_for(sorted, &keep)?);
                }
                Err(CallError::Statement { message, node, .. }) => {
                    return Err(Error::cluster(
                        node,
                        format!("the cluster refused the window's writes into {t}: {message}"),
                    ));
                }
                Err(CallError::Cluster(e)) | Err(CallError::Uncertain(e)) => return Err(e),
            }
        }
    }

    /// Sends one window's request, and returns its results, or `None` when the
    /// cluster could not say whether it applied it and the resume point says it did
    /// (a window whose position is stored was applied; the rest is sent again: the
    /// merge is idempotent, the history rows are not, hence the check).
    fn request(
        &self,
        body: &[u8],
        w: &Window,
    ) -> std::result::Result<Option<Vec<Vec<Vec<Json>>>>, CallError> {
        let start = Instant::now();
        loop {
            match self.client.request(body) {
                Err(CallError::Uncertain(e)) => {
                    if start.elapsed() > self.client.patience {
                        return Err(CallError::Cluster(e));
                    }
                    std::thread::sleep(Duration::from_millis(500));
                    self.client.next_node();
                    if let Some(p) = &w.position {
                        let stored = self.resume_point(&p.source).map_err(CallError::Cluster)?;
                        if stored.is_some_and(|(line, offset, _, _)| {
                            line == p.line && offset == p.offset
                        }) {
                            return Ok(None);
                        }
                    } else if self.history.is_some() {
                        return Err(CallError::Cluster(e));
                    }
                }
                other => return other.map(Some),
            }
        }
    }

    /// The upsert statements of rows `which` (positions in `sorted.order`).
    fn statements_for(&self, sorted: &super::window::Sorted, which: &[usize]) -> Result<Vec<Stmt>> {
        let nkeys = self.keys.len();
        let ncols = self.columns.len();
        // Rows grouped by their set of present columns, each group in key order.
        let mut groups: HashMap<Vec<u32>, Vec<usize>> = HashMap::new();
        let mut order: Vec<Vec<u32>> = vec![];
        for &i in which {
            let mut present: Vec<u32> = sorted.fields(i).map(|(c, _)| c).collect();
            present.sort_unstable();
            present.dedup();
            let g = groups.entry(present.clone()).or_default();
            if g.is_empty() {
                order.push(present);
            }
            g.push(i);
        }
        let upsert = Upsert {
            table: &self.table,
            keys: &self.keys,
            columns: &self.columns,
        };
        let per = upsert.rows_per_statement(DEFAULT_MAX_PARAMS, ROWS_PER_STATEMENT);
        let mut out = vec![];
        for present in order {
            for chunk in groups[&present].chunks(per) {
                let mut params = vec![];
                let mut tuples = vec![];
                for &i in chunk {
                    let mut ph: Vec<&str> = vec![];
                    for part in decode_key(sorted.key(i), nkeys) {
                        params.push(b',');
                        match part {
                            KeyRef::Int(v) => params.extend_from_slice(v.to_string().as_bytes()),
                            KeyRef::Text(t) => {
                                let s = std::str::from_utf8(t)
                                    .map_err(|_| Error::usage("a key is not UTF-8"))?;
                                ph.push(encode::text_param(&mut params, s));
                                continue;
                            }
                        }
                        ph.push("?");
                    }
                    // The last value of each column wins.
                    let mut vals: Vec<Option<Val>> = vec![None; ncols];
                    for (c, v) in sorted.fields(i) {
                        vals[c as usize] = Some(v);
                    }
                    for v in vals {
                        params.push(b',');
                        let p = match v {
                            None | Some(Val::Null) => {
                                params.extend_from_slice(b"null");
                                "?"
                            }
                            Some(Val::Int(x)) => {
                                params.extend_from_slice(x.to_string().as_bytes());
                                "?"
                            }
                            Some(Val::Real(x)) if x.is_finite() => {
                                serde_json::to_writer(&mut params, &x).expect("writing to a Vec");
                                "?"
                            }
                            Some(Val::Real(x)) => {
                                params.extend_from_slice(b"null");
                                if x.is_nan() {
                                    "?"
                                } else if x > 0.0 {
                                    "(9e999+0*?)"
                                } else {
                                    "(-9e999+0*?)"
                                }
                            }
                            Some(Val::Text { at, len }) => {
                                let s = std::str::from_utf8(sorted.text(at, len))
                                    .map_err(|_| Error::usage("a text value is not UTF-8"))?;
                                encode::text_param(&mut params, s)
                            }
                        };
                        ph.push(p);
                    }
                    tuples.push(format!("({})", ph.join(", ")));
                }
                let sql = upsert.insert_merge_sql(&tuples, &present);
                let mut s = vec![b'['];
                encode::json_str(&mut s, &sql);
                s.extend_from_slice(&params);
                s.push(b']');
                out.push(Stmt {
                    json: String::from_utf8(s).expect("JSON is UTF-8"),
                    rows: chunk.to_vec(),
                });
            }
        }
        Ok(out)
    }

    fn row_statements(&self, sorted: &super::window::Sorted) -> Result<Vec<Stmt>> {
        let all: Vec<usize> = (0..sorted.order.len()).collect();
        self.statements_for(sorted, &all)
    }

    /// The first row of `refused` that the table refuses, found by sending the window's
    /// head, the statements before it and each of its rows alone, in a request made to
    /// fail at its end (so nothing of it stays).
    fn find_refused(
        &self,
        head: &[String],
        before: &[Stmt],
        refused: &Stmt,
        sorted: &super::window::Sorted,
    ) -> Option<usize> {
        let singles: Vec<Stmt> = refused
            .rows
            .iter()
            .filter_map(|&r| self.statements_for(sorted, &[r]).ok()?.pop())
            .collect();
        let probe = [plain("SELECT * FROM \"_liteload_probe_has_no_table_\"")];
        let mut all: Vec<&Stmt> = before.iter().collect();
        all.extend(singles.iter());
        let body = assemble_refs(head, &all, &probe);
        match self.client.request(&body) {
            Err(CallError::Statement { index, .. }) => {
                let first = head.len() + before.len();
                (first..first + singles.len())
                    .contains(&index)
                    .then(|| singles[index - first].rows[0])
            }
            _ => None,
        }
    }
}

fn plain(sql: &str) -> String {
    let mut out = vec![b'['];
    encode::json_str(&mut out, sql);
    out.push(b']');
    String::from_utf8(out).expect("JSON is UTF-8")
}

fn assemble(head: &[String], rows: &[Stmt], tail: &[String]) -> Vec<u8> {
    let refs: Vec<&Stmt> = rows.iter().collect();
    assemble_refs(head, &refs, tail)
}

fn assemble_refs(head: &[String], rows: &[&Stmt], tail: &[String]) -> Vec<u8> {
    let parts = head
        .iter()
        .map(String::as_str)
        .chain(rows.iter().map(|s| s.json.as_str()))
        .chain(tail.iter().map(String::as_str));
    let mut body = vec![b'['];
    for (i, p) in parts.enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(p.as_bytes());
    }
    body.push(b']');
    body
}
