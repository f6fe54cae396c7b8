//! Write-up 002's experiment: a stream of sparse JSON updates kept as one current row
//! per key, applied in the write-up's successive ways and by `liteload ingest`.
//!
//! The stream is generated from a fixed seed: flight-like messages, each an `id` (one of
//! `keys`), a `type`, and a few fields of that type (numbers, text, now and then null or
//! a nested array). A message sets the fields it names (null sets NULL) and leaves the
//! others alone. Every step parses each line itself and writes the table `flights`;
//! every run is checked against the reference state (computed in memory) row by row and
//! field by field, plus `integrity_check`. The steps with a transaction per message pay
//! fsyncs per message and run on the first `cap` messages only (rate extrapolated).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use liteload::generate::rng::Rng;
use liteload::ingest::{Ingest, IngestOptions};
use liteload::quote_ident;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::durability::{Commits, Settings};
use crate::report::{integrity_ok, measure, remove_db, Experiment, Plan, Run};
use crate::stats::median;

/// The experiment's size.
#[derive(Clone, Debug, Serialize)]
pub struct UpsertOptions {
    pub messages: u64,
    pub keys: u64,
    /// Messages applied by the transaction-per-message steps.
    pub cap: u64,
    pub runs: usize,
    pub dir: PathBuf,
    pub seed: u64,
    /// The `liteload` executable, to measure ingest's loss window by killing it (kill -9)
    /// at random moments while a paced stream is piped in; `None` skips that part.
    pub ingest_exe: Option<PathBuf>,
    /// How many times to kill it.
    pub kills: usize,
    /// Messages per second sent to it.
    pub send_rate: u64,
}

impl UpsertOptions {
    /// The write-up's largest run: 20,000 messages (over 5,000 flights); 200 messages for
    /// the transaction-per-message steps.
    pub fn quick(dir: PathBuf) -> Self {
        UpsertOptions {
            messages: 20_000,
            keys: 5_000,
            cap: 200,
            runs: 3,
            dir,
            seed: 2021,
            ingest_exe: None,
            kills: 5,
            send_rate: 20_000,
        }
    }

    /// A million messages over 300,000 flights; 2,000 for the per-message steps.
    pub fn full(dir: PathBuf) -> Self {
        UpsertOptions {
            messages: 1_000_000,
            keys: 300_000,
            cap: 2_000,
            ..Self::quick(dir)
        }
    }
}

const TYPES: [(&str, u64, &[&str]); 6] = [
    (
        "position",
        60,
        &[
            "lat",
            "lon",
            "alt",
            "gs",
            "heading",
            "clock",
            "updateType",
            "air_ground",
            "squawk",
            "vertRate",
            "alt_gnss",
            "speed_ias",
        ],
    ),
    (
        "flightplan",
        12,
        &[
            "ident",
            "reg",
            "orig",
            "dest",
            "route",
            "aircrafttype",
            "speed",
            "alt",
            "edt",
            "eta",
            "fdt",
            "waypoints",
        ],
    ),
    (
        "departure",
        8,
        &[
            "ident",
            "orig",
            "adt",
            "actual_out",
            "actual_off",
            "gate_origin",
            "terminal_origin",
        ],
    ),
    (
        "arrival",
        8,
        &[
            "ident",
            "dest",
            "aat",
            "actual_on",
            "actual_in",
            "gate_destination",
            "terminal_destination",
            "baggage_claim",
        ],
    ),
    ("cancellation", 2, &["ident", "status", "reason"]),
    (
        "extendedFlightInfo",
        10,
        &[
            "atcident",
            "ident",
            "reg",
            "aircrafttype",
            "predicted_off",
            "predicted_on",
            "predicted_in",
            "status",
        ],
    ),
];

/// Every field a message may carry besides `id`, in a fixed order: the table's columns.
pub fn columns() -> Vec<&'static str> {
    let mut seen = HashSet::new();
    let mut out = vec!["type"];
    for (_, _, fields) in TYPES {
        for f in fields {
            if seen.insert(*f) {
                out.push(f);
            }
        }
    }
    out
}

fn round(x: f64, places: i32) -> f64 {
    let m = 10f64.powi(places);
    (x * m).round() / m
}

fn field_value(rng: &mut Rng, name: &str) -> Value {
    if rng.below(100) < 3 {
        return Value::Null;
    }
    let int = |rng: &mut Rng, lo, hi| Value::from(rng.int_in(lo, hi));
    match name {
        "lat" => Value::from(round(rng.unit() * 180.0 - 90.0, 5)),
        "lon" => Value::from(round(rng.unit() * 360.0 - 180.0, 5)),
        "alt" | "gs" | "heading" | "speed" | "vertRate" | "alt_gnss" | "speed_ias" => {
            int(rng, 0, 45_000)
        }
        "clock" | "edt" | "eta" | "fdt" | "adt" | "aat" => int(rng, 1_600_000_000, 1_610_000_000),
        n if n.starts_with("actual_") || n.starts_with("predicted_") => {
            int(rng, 1_600_000_000, 1_610_000_000)
        }
        "waypoints" => Value::Array(
            (0..1 + rng.below(3))
                .map(|_| {
                    let mut m = Map::new();
                    m.insert("lat".into(), round(rng.unit() * 180.0 - 90.0, 3).into());
                    m.insert("lon".into(), round(rng.unit() * 360.0 - 180.0, 3).into());
                    Value::Object(m)
                })
                .collect(),
        ),
        _ => Value::from(format!(
            "{}-{}",
            name[..3.min(name.len())].to_uppercase(),
            rng.below(100_000)
        )),
    }
}

/// The stream: `messages` JSON lines over `keys` flights.
pub fn feed(messages: u64, keys: u64, seed: u64) -> Vec<String> {
    let mut rng = Rng::for_chunk(seed, 0);
    let total: u64 = TYPES.iter().map(|t| t.1).sum();
    (0..messages)
        .map(|_| {
            let mut pick = rng.below(total);
            let (kind, _, pool) = TYPES
                .iter()
                .find(|t| {
                    if pick < t.1 {
                        true
                    } else {
                        pick -= t.1;
                        false
                    }
                })
                .expect("weights cover the range");
            let mut m = Map::new();
            m.insert(
                "id".into(),
                Value::from(format!("FL{:06}", rng.below(keys))),
            );
            m.insert("type".into(), Value::from(*kind));
            let want = (1 + rng.below(7)).min(pool.len() as u64);
            let mut names: Vec<&str> = pool.to_vec();
            for i in 0..want as usize {
                let j = i + rng.below((names.len() - i) as u64) as usize;
                names.swap(i, j);
                let v = field_value(&mut rng, names[i]);
                m.insert(names[i].into(), v);
            }
            serde_json::to_string(&Value::Object(m)).expect("a map serializes")
        })
        .collect()
}

/// A JSON value as SQLite stores it here: nested values as their JSON text.
fn sql_value(v: &Value) -> Sql {
    match v {
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Integer(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Sql::Integer(i),
            (None, Some(f)) => Sql::Real(f),
            _ => Sql::Text(n.to_string()),
        },
        Value::String(s) => Sql::Text(s.clone()),
        other => Sql::Text(other.to_string()),
    }
}

type State = HashMap<String, HashMap<String, Sql>>;

fn parse(line: &str) -> Result<(String, Map<String, Value>), String> {
    let Value::Object(mut m) = serde_json::from_str(line).map_err(|e| e.to_string())? else {
        return Err("not an object".into());
    };
    match m.remove("id") {
        Some(Value::String(id)) => Ok((id, m)),
        _ => Err("no string id".into()),
    }
}

/// The final state after the first `n` messages.
fn reference(lines: &[String], n: usize) -> State {
    let mut s = State::new();
    for l in &lines[..n] {
        let (id, m) = parse(l).expect("generated lines parse");
        let row = s.entry(id).or_default();
        for (k, v) in &m {
            row.insert(k.clone(), sql_value(v));
        }
    }
    s
}

/// [`reference`] where an explicit null never overwrites a value (a field that was only
/// ever null stays NULL): what `COALESCE(excluded.c, c)` upserts store.
fn reference_null_keeps(lines: &[String]) -> State {
    let mut s = State::new();
    for l in lines {
        let (id, m) = parse(l).expect("generated lines parse");
        let row = s.entry(id).or_default();
        for (k, v) in &m {
            if !v.is_null() || !row.contains_key(k) {
                row.insert(k.clone(), sql_value(v));
            }
        }
    }
    s
}

/// The table must hold exactly the reference rows, every field equal (absent = NULL).
fn verify(conn: &Connection, want: &State) -> Result<(), String> {
    integrity_ok(conn)?;
    let e = |e: rusqlite::Error| e.to_string();
    let mut stmt = conn.prepare("SELECT * FROM flights").map_err(e)?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let id_col = names.iter().position(|n| n == "id").ok_or("no id column")?;
    let mut rows = stmt.query([]).map_err(e)?;
    let mut seen = 0usize;
    while let Some(r) = rows.next().map_err(e)? {
        let id: String = r.get(id_col).map_err(e)?;
        let Some(fields) = want.get(&id) else {
            return Err(format!("row {id:?} should not exist"));
        };
        for (i, name) in names.iter().enumerate() {
            if i == id_col {
                continue;
            }
            let got: Sql = r.get(i).map_err(e)?;
            let exp = fields.get(name).cloned().unwrap_or(Sql::Null);
            if got != exp {
                return Err(format!("{id}.{name}: {got:?}, expected {exp:?}"));
            }
        }
        seen += 1;
    }
    if seen != want.len() {
        return Err(format!("{seen} rows, expected {}", want.len()));
    }
    // Every field set to a value must have a column.
    for (id, fields) in want {
        for (k, v) in fields {
            if *v != Sql::Null && !names.contains(k) {
                return Err(format!("{id}.{k} was set but the table has no such column"));
            }
        }
    }
    Ok(())
}

fn open(db: &Path, pragmas: &str) -> Result<Connection, String> {
    remove_db(db);
    let conn = Connection::open(db).map_err(|e| e.to_string())?;
    conn.set_prepared_statement_cache_capacity(4096);
    let cols: Vec<String> = columns().iter().map(|c| quote_ident(c)).collect();
    conn.execute_batch(&format!(
        "{pragmas} CREATE TABLE flights (id TEXT PRIMARY KEY, {});",
        cols.join(", ")
    ))
    .map_err(|e| e.to_string())?;
    Ok(conn)
}

fn quoted(names: &[&String]) -> Vec<String> {
    names.iter().map(|n| quote_ident(n)).collect()
}

fn insert(conn: &Connection, id: &str, m: &Map<String, Value>) -> rusqlite::Result<()> {
    let names: Vec<&String> = m.keys().collect();
    let q = quoted(&names);
    let marks: Vec<String> = (1..=names.len() + 1).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO flights (id{}{}) VALUES ({})",
        if q.is_empty() { "" } else { ", " },
        q.join(", "),
        marks.join(", ")
    );
    let vals = std::iter::once(Sql::Text(id.to_string())).chain(m.values().map(sql_value));
    conn.prepare_cached(&sql)?
        .execute(params_from_iter(vals))
        .map(drop)
}

fn update(conn: &Connection, id: &str, m: &Map<String, Value>) -> rusqlite::Result<()> {
    if m.is_empty() {
        return Ok(());
    }
    let names: Vec<&String> = m.keys().collect();
    let sets: Vec<String> = quoted(&names)
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 1))
        .collect();
    let sql = format!(
        "UPDATE flights SET {} WHERE id = ?{}",
        sets.join(", "),
        names.len() + 1
    );
    let vals = m
        .values()
        .map(sql_value)
        .chain(std::iter::once(Sql::Text(id.to_string())));
    conn.prepare_cached(&sql)?
        .execute(params_from_iter(vals))
        .map(drop)
}

/// Write-up 002 v1..v4: a SELECT, then an UPDATE or an INSERT, per message.
fn select_then_write(conn: &Connection, line: &str) -> Result<(), String> {
    let (id, m) = parse(line)?;
    let e = |e: rusqlite::Error| e.to_string();
    let exists = conn
        .prepare_cached("SELECT 1 FROM flights WHERE id = ?1")
        .map_err(e)?
        .exists([&id])
        .map_err(e)?;
    if exists {
        update(conn, &id, &m).map_err(e)
    } else {
        insert(conn, &id, &m).map_err(e)
    }
}

const NORMAL: &str = "PRAGMA synchronous=NORMAL;";

/// How often the per-message steps commit.
#[derive(Clone, Copy)]
enum Commit {
    EachMessage,
    Once,
    EverySecond,
}

fn per_message(
    db: &Path,
    lines: &[String],
    pragmas: &str,
    commit: Commit,
    want: &State,
) -> Result<Run, String> {
    let conn = open(db, pragmas)?;
    let e = |e: rusqlite::Error| e.to_string();
    let start = Instant::now();
    let mut window = Instant::now();
    if !matches!(commit, Commit::EachMessage) {
        conn.execute_batch("BEGIN").map_err(e)?;
    }
    for l in lines {
        select_then_write(&conn, l)?;
        if matches!(commit, Commit::EverySecond) && window.elapsed() >= Duration::from_secs(1) {
            conn.execute_batch("COMMIT; BEGIN").map_err(e)?;
            window = Instant::now();
        }
    }
    if !matches!(commit, Commit::EachMessage) {
        conn.execute_batch("COMMIT").map_err(e)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let commits = match commit {
        Commit::EachMessage => Commits::EachOperation,
        Commit::Once => Commits::WholeRun,
        Commit::EverySecond => Commits::Batches,
    };
    Settings::from_pragmas(pragmas, commits).confirm(&conn)?;
    verify(&conn, want)?;
    drop(conn);
    remove_db(db);
    Ok(Run::timed(seconds))
}

/// Write-up 002 v5 (`upsert: false`) and v6 (`upsert: true`): messages merged per key in
/// memory for a second, then written in one transaction: v5 asks which keys exist with
/// one `SELECT … IN` per 500 keys and UPDATEs or INSERTs; v6 runs one prepared
/// `INSERT … ON CONFLICT DO UPDATE` per key.
fn coalesced(db: &Path, lines: &[String], upsert: bool, want: &State) -> Result<Run, String> {
    let conn = open(db, NORMAL)?;
    let start = Instant::now();
    let mut cache: HashMap<String, Map<String, Value>> = HashMap::new();
    let mut order: Vec<String> = vec![];
    let mut window = Instant::now();
    for (i, l) in lines.iter().enumerate() {
        let (id, m) = parse(l)?;
        match cache.get_mut(&id) {
            Some(row) => row.extend(m),
            None => {
                order.push(id.clone());
                cache.insert(id, m);
            }
        }
        if window.elapsed() >= Duration::from_secs(1) || i + 1 == lines.len() {
            flush(&conn, &mut cache, &mut order, upsert).map_err(|e| e.to_string())?;
            window = Instant::now();
        }
    }
    windowed_done(conn, db, want, start)
}

/// The end of a step that commits a window a second: its time, its settings and its
/// table checked, its file removed.
fn windowed_done(conn: Connection, db: &Path, want: &State, start: Instant) -> Result<Run, String> {
    let seconds = start.elapsed().as_secs_f64();
    Settings::from_pragmas(NORMAL, Commits::Batches).confirm(&conn)?;
    verify(&conn, want)?;
    drop(conn);
    remove_db(db);
    Ok(Run::timed(seconds))
}

fn flush(
    conn: &Connection,
    cache: &mut HashMap<String, Map<String, Value>>,
    order: &mut Vec<String>,
    upsert: bool,
) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    if upsert {
        for id in order.iter() {
            let m = &cache[id];
            let names: Vec<&String> = m.keys().collect();
            let q = quoted(&names);
            let marks: Vec<String> = (1..=names.len() + 1).map(|i| format!("?{i}")).collect();
            let sets: Vec<String> = q.iter().map(|c| format!("{c} = excluded.{c}")).collect();
            let sql = if sets.is_empty() {
                "INSERT INTO flights (id) VALUES (?1) ON CONFLICT (id) DO NOTHING".to_string()
            } else {
                format!(
                    "INSERT INTO flights (id, {}) VALUES ({}) ON CONFLICT (id) DO UPDATE SET {}",
                    q.join(", "),
                    marks.join(", "),
                    sets.join(", ")
                )
            };
            let vals = std::iter::once(Sql::Text(id.clone())).chain(m.values().map(sql_value));
            conn.prepare_cached(&sql)?.execute(params_from_iter(vals))?;
        }
    } else {
        for chunk in order.chunks(500) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("?{i}")).collect();
            let sql = format!("SELECT id FROM flights WHERE id IN ({})", marks.join(", "));
            let mut stmt = conn.prepare_cached(&sql)?;
            let existing: HashSet<String> = stmt
                .query_map(params_from_iter(chunk.iter()), |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for id in chunk {
                if existing.contains(id) {
                    update(conn, id, &cache[id])?;
                } else {
                    insert(conn, id, &cache[id])?;
                }
            }
        }
    }
    tx.commit()?;
    cache.clear();
    order.clear();
    Ok(())
}

/// The strongest plain-Python way we know (issue 19), rebuilt in Rust: messages merged
/// per key for a second, explicit nulls skipped, then one prepared `INSERT … ON
/// CONFLICT(id) DO UPDATE SET c = COALESCE(excluded.c, c)` over every column (Python's
/// single `executemany`) per key, in one `BEGIN IMMEDIATE` transaction. An explicit
/// null keeps the value, so `want` is [`reference_null_keeps`].
fn coalesce_every_column(db: &Path, lines: &[String], want: &State) -> Result<Run, String> {
    let conn = open(db, NORMAL)?;
    let cols = columns();
    let q: Vec<String> = cols.iter().map(|c| quote_ident(c)).collect();
    let marks: Vec<String> = (1..=cols.len() + 1).map(|i| format!("?{i}")).collect();
    let sets: Vec<String> = q
        .iter()
        .map(|c| format!("{c} = COALESCE(excluded.{c}, flights.{c})"))
        .collect();
    let sql = format!(
        "INSERT INTO flights (id, {}) VALUES ({}) ON CONFLICT (id) DO UPDATE SET {}",
        q.join(", "),
        marks.join(", "),
        sets.join(", ")
    );
    let e = |e: rusqlite::Error| e.to_string();
    let start = Instant::now();
    let mut window: HashMap<String, Map<String, Value>> = HashMap::new();
    let mut started = Instant::now();
    let flush = |window: &mut HashMap<String, Map<String, Value>>| -> rusqlite::Result<()> {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut stmt = conn.prepare_cached(&sql)?;
        for (id, m) in window.iter() {
            let vals = std::iter::once(Sql::Text(id.clone())).chain(
                cols.iter()
                    .map(|c| m.get(*c).map(sql_value).unwrap_or(Sql::Null)),
            );
            stmt.execute(params_from_iter(vals))?;
        }
        conn.execute_batch("COMMIT")?;
        window.clear();
        Ok(())
    };
    for (i, l) in lines.iter().enumerate() {
        let (id, m) = parse(l)?;
        let row = window.entry(id).or_default();
        for (k, v) in m {
            if !v.is_null() || !row.contains_key(&k) {
                row.insert(k, v);
            }
        }
        if started.elapsed() >= Duration::from_secs(1) || i + 1 == lines.len() {
            flush(&mut window).map_err(e)?;
            started = Instant::now();
        }
    }
    windowed_done(conn, db, want, start)
}

/// `liteload ingest`'s engine with its defaults: balanced durability, 1-second windows.
fn liteload_ingest(db: &Path, lines: &[String], want: &State) -> Result<Run, String> {
    remove_db(db);
    let e = |e: liteload::Error| e.to_string();
    let start = Instant::now();
    let mut ing = Ingest::open(db, {
        let mut built = IngestOptions::default();
        built.table = "flights".into();
        built.keys = vec!["id".into()];
        built
    })
    .map_err(e)?;
    for l in lines {
        ing.push_line(l.as_bytes(), None)?;
        if ing.due() {
            ing.commit_background().map_err(e)?;
        }
    }
    ing.commit().map_err(e)?;
    let seconds = start.elapsed().as_secs_f64();
    let bad = ing.totals().rejects;
    drop(ing);
    if bad > 0 {
        return Err(format!("{bad} messages rejected"));
    }
    let conn = Connection::open(db).map_err(|e| e.to_string())?;
    verify(&conn, want)?;
    drop(conn);
    remove_db(db);
    Ok(Run::timed(seconds))
}

/// What killing `liteload ingest` cost, over several kills.
#[derive(Clone, Debug, Serialize)]
pub struct LossWindow {
    /// Messages written to its stdin but not in the table after each kill.
    pub lost: Vec<u64>,
    /// Messages per second sent.
    pub send_rate: u64,
    /// Seconds per window.
    pub window_s: f64,
    /// What ingest promises to lose at most: the open window and the one being written,
    /// at the send rate, plus what the pipe holds unread (64 KiB of lines).
    pub promise: u64,
}

impl LossWindow {
    pub fn describe(&self) -> String {
        let as_f: Vec<f64> = self.lost.iter().map(|&x| x as f64).collect();
        format!(
            "Loss window, measured: liteload ingest (balanced, {} s windows) killed with kill -9 at {} random moments while {} messages/s were piped in: median {:.0} messages lost, max {}; the promise (the open window and the one being written, plus the pipe's unread 64 KiB) is at most {} here. After every kill the table held exactly the first N messages merged (N = the last stored seq + 1), integrity_check ok.",
            self.window_s,
            self.lost.len(),
            self.send_rate,
            median(&as_f),
            self.lost.iter().max().copied().unwrap_or(0),
            self.promise
        )
    }
}

/// Kills `liteload ingest` (`exe`) at random moments while `lines` (each given a `seq`)
/// are piped in at `o.send_rate`; after each kill checks that the table is exactly the
/// merge of a prefix of what was sent and counts what is missing.
pub fn loss_window(
    exe: &Path,
    dir: &Path,
    lines: &[String],
    o: &UpsertOptions,
    log: &mut dyn FnMut(&str),
) -> Result<LossWindow, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let seqd: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{{\"seq\":{i},{}", &l[1..]))
        .collect();
    let db = dir.join("loss.db");
    let mut rng = Rng::for_chunk(o.seed, 77);
    let mut lost = vec![];
    let rate = o.send_rate.max(100);
    let line_bytes = seqd.iter().map(|l| l.len() + 1).sum::<usize>() / seqd.len().max(1);
    let window_s = 1.0;
    for k in 0..o.kills {
        remove_db(&db);
        // Kill between 1.2 and 3.5 windows in: windows open, written and committed.
        let at = Duration::from_secs_f64(window_s * (1.2 + 2.3 * rng.unit()));
        log(&format!(
            "loss window: kill {} of {} after {:.2} s",
            k + 1,
            o.kills,
            at.as_secs_f64()
        ));
        let mut child = Command::new(exe)
            .args(["ingest", "--table", "flights", "--key", "id", "--quiet"])
            .arg(&db)
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let start = Instant::now();
        let mut sent = 0usize;
        while start.elapsed() < at && sent < seqd.len() {
            let due = ((start.elapsed().as_secs_f64() * rate as f64) as usize).min(seqd.len());
            if due > sent {
                let mut chunk = String::new();
                for l in &seqd[sent..due] {
                    chunk.push_str(l);
                    chunk.push('\n');
                }
                stdin
                    .write_all(chunk.as_bytes())
                    .map_err(|e| format!("writing to ingest: {e}"))?;
                sent = due;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().map_err(|e| e.to_string())?;
        let _ = child.wait();
        drop(stdin);
        if sent == seqd.len() {
            return Err("the stream ran out before the kill; send more messages".into());
        }
        let applied = if db.exists() {
            let conn = Connection::open(&db).map_err(|e| e.to_string())?;
            integrity_ok(&conn)?;
            let has: bool = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE name = 'flights'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(|e| e.to_string())?
                > 0;
            let applied = if has {
                let last: Option<i64> = conn
                    .query_row("SELECT max(seq) FROM flights", [], |r| r.get(0))
                    .map_err(|e| e.to_string())?;
                last.map_or(0, |x| x as usize + 1)
            } else {
                0
            };
            if applied > 0 {
                verify(&conn, &reference(&seqd, applied))
                    .map_err(|e| format!("after kill {}: {e}", k + 1))?;
            }
            applied
        } else {
            0
        };
        if applied > sent {
            return Err(format!("{applied} messages applied but only {sent} sent"));
        }
        lost.push((sent - applied) as u64);
    }
    remove_db(&db);
    Ok(LossWindow {
        lost,
        send_rate: rate,
        window_s,
        promise: (2.0 * window_s * rate as f64) as u64 + (65_536 / line_bytes.max(1)) as u64,
    })
}

/// Runs every step `runs` times, interleaved.
pub fn run(o: &UpsertOptions, log: &mut dyn FnMut(&str)) -> Result<Experiment, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    log(&format!(
        "generating {} messages over {} keys",
        o.messages, o.keys
    ));
    let lines = feed(o.messages, o.keys.max(1), o.seed);
    let cap = (o.cap.min(o.messages)) as usize;
    let all = reference(&lines, lines.len());
    let keeps = reference_null_keeps(&lines);
    let first = reference(&lines, cap);
    let db = o.dir.join("upsert.db");
    let (db, lines, all, first, keeps) = (db.as_path(), lines.as_slice(), &all, &first, &keeps);
    let n = o.messages;
    let normal = NORMAL;
    let per = |pragmas: &str, commits| Some(Settings::from_pragmas(pragmas, commits));
    let ingest_settings = Settings {
        commits: Commits::Batches,
        ..Settings::of_profile(liteload::Durability::Balanced)
    };
    let plans = vec![
        Plan::new(
            "SELECT then UPDATE/INSERT, a transaction per message",
            per("", Commits::EachOperation),
            cap as u64,
            Some(19.9),
            move || per_message(db, &lines[..cap], "", Commit::EachMessage, first),
        )
        .extrapolated_to(n),
        Plan::new(
            "+ synchronous=NORMAL",
            per(normal, Commits::EachOperation),
            cap as u64,
            Some(25.6),
            move || per_message(db, &lines[..cap], normal, Commit::EachMessage, first),
        )
        .extrapolated_to(n),
        Plan::new(
            "all in one transaction",
            per(normal, Commits::WholeRun),
            n,
            Some(649.5),
            move || per_message(db, lines, normal, Commit::Once, all),
        ),
        Plan::new(
            "a commit every second",
            per(normal, Commits::Batches),
            n,
            Some(585.3),
            move || per_message(db, lines, normal, Commit::EverySecond, all),
        ),
        Plan::new(
            "1-second windows merged in memory, SELECT … IN, UPDATE/INSERT",
            per(normal, Commits::Batches),
            n,
            Some(4631.7),
            move || coalesced(db, lines, false, all),
        ),
        Plan::new(
            "1-second windows, prepared INSERT … ON CONFLICT DO UPDATE",
            per(normal, Commits::Batches),
            n,
            Some(7899.9),
            move || coalesced(db, lines, true, all),
        ),
        Plan::new(
            "1-second windows, one INSERT … ON CONFLICT DO UPDATE SET c = COALESCE(excluded.c, c) over every column (nulls keep)",
            per(normal, Commits::Batches),
            n,
            None,
            move || coalesce_every_column(db, lines, keeps),
        ),
        Plan::new(
            "liteload ingest (balanced: WAL, 1-second windows)",
            Some(ingest_settings),
            n,
            None,
            move || liteload_ingest(db, lines, all),
        ),
    ];
    let steps = measure(plans, o.runs, log);
    let mut notes = vec![
        "Every step is in Rust here; the write-up's steps are Python with SQLAlchemy, so its absolute rates are far lower. The ratios between steps are the comparable part.".into(),
        "The steps after the first keep synchronous=NORMAL with the default rollback journal, as the write-up does from its v2; liteload ingest uses WAL with synchronous=NORMAL.".into(),
        "Each run is checked field by field against the merged state computed in memory (a message sets the fields it names, null sets NULL; for the COALESCE step, the strongest plain-Python way we know rebuilt in Rust, an explicit null keeps the value, and its state is merged so).".into(),
    ];
    if let Some(exe) = &o.ingest_exe {
        let lines = feed(o.messages.max(200_000), o.keys.max(1), o.seed + 1);
        let l = loss_window(exe, &o.dir, &lines, o, log)?;
        notes.push(l.describe());
    }
    Ok(Experiment {
        id: "upsert".into(),
        title: "Current state from a stream of sparse updates".into(),
        writeup: "002: Firestarter, from 20 to 7,900 messages per second (FlightAware)".into(),
        unit: "messages".into(),
        setup: format!(
            "{} generated messages over {} keys (seed {}); the transaction-per-message steps apply the first {} and their rate is extrapolated",
            o.messages, o.keys, o.seed, cap
        ),
        published_by: "write-up 002: Xeon E5-2630 2.3 GHz, spinning disk, Python 3.9 + SQLAlchemy 1.3, SQLite 3.31 (c. 2020); 100 to 20,000 messages".into(),
        runs: o.runs,
        steps,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feed_is_fixed_by_its_seed_and_sparse() {
        let a = feed(200, 50, 1);
        assert_eq!(a, feed(200, 50, 1));
        assert_ne!(a, feed(200, 50, 2));
        let cols = columns();
        for l in &a {
            let (id, m) = parse(l).unwrap();
            assert!(id.starts_with("FL"));
            assert!(m.len() >= 2 && m.len() < cols.len());
            assert!(m.keys().all(|k| cols.contains(&k.as_str())), "{l}");
        }
    }

    #[test]
    fn every_step_matches_the_reference_at_a_tiny_size() {
        let dir = tempfile::tempdir().unwrap();
        let o = UpsertOptions {
            messages: 3_000,
            keys: 400,
            cap: 30,
            runs: 1,
            dir: dir.path().to_path_buf(),
            seed: 5,
            ingest_exe: None,
            kills: 0,
            send_rate: 1,
        };
        let e = run(&o, &mut |_| {}).unwrap();
        assert_eq!(e.steps.len(), 8);
        for s in &e.steps {
            assert!(s.failed.is_none(), "{}: {:?}", s.name, s.failed);
            assert_eq!(s.seconds.len(), 1);
        }
    }

    #[test]
    fn the_coalesce_step_is_judged_by_the_merge_where_nulls_keep() {
        let dir = tempfile::tempdir().unwrap();
        let lines = feed(3_000, 200, 9);
        let db = dir.path().join("c.db");
        coalesce_every_column(&db, &lines, &reference_null_keeps(&lines)).unwrap();
        // Explicit nulls in the feed make the two merges differ, and the step's table
        // is not the one where a null sets NULL.
        let Err(err) = coalesce_every_column(&db, &lines, &reference(&lines, lines.len())) else {
            panic!("the table matched the merge where a null sets NULL");
        };
        assert!(err.contains("expected Null"), "{err}");
    }

    #[test]
    fn a_lost_field_fails_verification() {
        let dir = tempfile::tempdir().unwrap();
        let lines = feed(100, 10, 3);
        let want = reference(&lines, lines.len());
        let db = dir.path().join("v.db");
        let conn = open(&db, "").unwrap();
        for l in &lines {
            select_then_write(&conn, l).unwrap();
        }
        assert!(verify(&conn, &want).is_ok());
        conn.execute_batch("UPDATE flights SET \"type\" = 'x' WHERE rowid = 1")
            .unwrap();
        let err = verify(&conn, &want).unwrap_err();
        assert!(err.contains(".type"), "{err}");
    }
}
