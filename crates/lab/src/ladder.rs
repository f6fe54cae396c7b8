//! Write-up 000's experiment: a transit-schedule TSV loaded into SQLite one change at a
//! time, from a formatted INSERT per row in autocommit to liteload's own loader.
//!
//! The data is generated from a fixed seed in the write-up's shape (864,913 rows of
//! route, branch, version, stop, vehicle, day, time). Every step reads and splits the
//! file itself, as the write-up's program does, so its time includes the parsing. The
//! autocommit step pays an fsync per row and runs on the first `cap` rows only; its rate
//! is extrapolated to the whole file and the report says so.
//!
//! Every run is verified before it counts: `integrity_check`, the row count, and the
//! sums of `Stop` and of the length of `Time` against those computed while generating.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use liteload::generate::rng::Rng;
use liteload::Engine;
use liteload::{Durability, ImportOptions, IndexSpec, Input, Progress};
use rusqlite::Connection;
use serde::Serialize;

use crate::durability::{Commits, Settings};
use crate::report::{integrity_ok, measure, remove_db, Experiment, Plan, Run};

/// The experiment's size.
#[derive(Clone, Debug, Serialize)]
pub struct LadderOptions {
    /// Rows in the generated TSV.
    pub rows: u64,
    /// Rows loaded by the one-transaction-per-row step (its rate is extrapolated).
    pub cap: u64,
    pub runs: usize,
    pub dir: PathBuf,
    pub seed: u64,
    /// The user's own TSV in the write-up's shape instead of the generated one (`rows`
    /// and `seed` then do not apply).
    pub input: Option<PathBuf>,
}

impl LadderOptions {
    /// 250,000 rows (about 20 s for the whole ladder here); 300 rows for the
    /// autocommit step.
    pub fn quick(dir: PathBuf) -> Self {
        LadderOptions {
            rows: 250_000,
            cap: 300,
            runs: 3,
            dir,
            seed: 20091027,
            input: None,
        }
    }

    /// The write-up's 864,913 rows, with 3,000 rows for the autocommit step.
    pub fn full(dir: PathBuf) -> Self {
        LadderOptions {
            rows: 864_913,
            cap: 3_000,
            ..Self::quick(dir)
        }
    }
}

const TABLE: &str = "CREATE TABLE TTC (id INTEGER PRIMARY KEY, Route_ID TEXT, Branch_Code TEXT, Version INTEGER, Stop INTEGER, Vehicle_Index INTEGER, Day INTEGER, Time TEXT)";
const INSERT: &str = "INSERT INTO TTC VALUES (NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const INDEX: &str = "CREATE INDEX TTC_Stop_Index ON TTC (Stop)";
/// The columns of the TSV's header line.
const HEADER: [&str; 7] = [
    "Route_ID",
    "Branch_Code",
    "Version",
    "Stop",
    "Vehicle_Index",
    "Day",
    "Time",
];
/// The write-up's row count and published timings (seconds for the whole file).
const WRITEUP_ROWS: f64 = 864_913.0;

fn published(seconds: f64) -> Option<f64> {
    Some(WRITEUP_ROWS / seconds)
}

/// What a correct load holds: rows, sum of Stop, total length of Time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Expect {
    rows: u64,
    stop: i64,
    time_len: i64,
}

/// Writes the TSV (with a header line) and returns what loading all of it, and its first
/// `cap` rows, must give.
fn write_tsv(path: &Path, rows: u64, cap: u64, seed: u64) -> std::io::Result<(Expect, Expect)> {
    let mut rng = Rng::for_chunk(seed, 0);
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    writeln!(w, "{}", HEADER.join("\t"))?;
    let (mut all, mut first) = (Expect::default(), Expect::default());
    const BRANCHES: [&str; 7] = ["", "A", "B", "C", "D", "E", "F"];
    for i in 0..rows {
        let route = rng.int_in(5, 519);
        let branch = BRANCHES[rng.below(7) as usize];
        let version = rng.int_in(1, 3);
        let stop = rng.int_in(1, 15_000);
        let vehicle = rng.int_in(1, 300);
        let day = rng.int_in(1, 7);
        let minute = rng.int_in(300, 1800);
        let time = format!("{}:{:02}:00", minute / 60, minute % 60);
        writeln!(
            w,
            "{route}\t{route}{branch}\t{version}\t{stop}\t{vehicle}\t{day}\t{time}"
        )?;
        for (e, counts) in [(&mut all, true), (&mut first, i < cap)] {
            if counts {
                e.rows += 1;
                e.stop += stop;
                e.time_len += time.len() as i64;
            }
        }
    }
    w.flush()?;
    Ok((all, first))
}

/// Calls `f` with the 7 fields of each of the first `limit` data lines of the TSV.
fn each_row(
    path: &Path,
    limit: u64,
    mut f: impl FnMut(&[&str; 7]) -> rusqlite::Result<()>,
) -> Result<(), String> {
    let mut r = BufReader::with_capacity(1 << 16, File::open(path).map_err(|e| e.to_string())?);
    let mut line = String::new();
    let mut n = 0u64;
    let mut first = true;
    while n < limit {
        line.clear();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            break;
        }
        if std::mem::take(&mut first) {
            continue;
        }
        let mut it = line.trim_end_matches(['\n', '\r']).split('\t');
        let mut fields = [""; 7];
        for f in fields.iter_mut() {
            *f = it
                .next()
                .ok_or_else(|| format!("line {}: too few fields", n + 2))?;
        }
        f(&fields).map_err(|e| format!("line {}: {e}", n + 2))?;
        n += 1;
    }
    Ok(())
}

/// A SQL string literal: the value in single quotes, quotes doubled. Only the
/// autocommit and exec steps build SQL text, as the write-up's program does.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn check(conn: &Connection, want: Expect) -> Result<(), String> {
    integrity_ok(conn)?;
    let got = conn
        .query_row(
            "SELECT count(*), total(Stop), total(length(Time)) FROM TTC",
            [],
            |r| {
                Ok(Expect {
                    rows: r.get::<_, i64>(0)? as u64,
                    stop: r.get::<_, f64>(1)? as i64,
                    time_len: r.get::<_, f64>(2)? as i64,
                })
            },
        )
        .map_err(|e| e.to_string())?;
    if got == want {
        Ok(())
    } else {
        Err(format!("read back {got:?}, expected {want:?}"))
    }
}

/// How one SQLite-side step loads the file.
#[derive(Clone, Copy)]
struct Way {
    /// Formatted SQL text per row (exec) rather than a prepared statement.
    exec: bool,
    /// One transaction for the whole load (else autocommit).
    transaction: bool,
    pragmas: &'static str,
    memory: bool,
    /// The index on Stop: None, before the load, after it.
    index: Option<bool>,
    /// Copy each field into its own string before binding it, as the write-up's program
    /// kept each field in a variable of its own until its last step.
    copy: bool,
}

impl Way {
    /// A prepared statement in one transaction, default PRAGMAs, on disk, no index: the
    /// step the others vary.
    const PREPARED: Way = Way {
        exec: false,
        transaction: true,
        pragmas: "",
        memory: false,
        index: None,
        copy: true,
    };

    /// The settings this way runs with: the PRAGMAs parsed, then checked against the
    /// connection after the load.
    fn settings(&self) -> Settings {
        let commits = if self.transaction {
            Commits::WholeRun
        } else {
            Commits::EachOperation
        };
        let mut s = Settings::from_pragmas(self.pragmas, commits);
        if self.memory {
            s = s.in_memory();
        }
        s
    }
}

fn load(path: &Path, db: &Path, limit: u64, way: Way, want: Expect) -> Result<Run, String> {
    remove_db(db);
    let e = |e: rusqlite::Error| e.to_string();
    let conn = if way.memory {
        Connection::open_in_memory()
    } else {
        Connection::open(db)
    }
    .map_err(e)?;
    conn.execute_batch(way.pragmas).map_err(e)?;
    conn.execute_batch(TABLE).map_err(e)?;
    let start = Instant::now();
    if way.index == Some(true) {
        conn.execute_batch(INDEX).map_err(e)?;
    }
    if way.transaction {
        conn.execute_batch("BEGIN").map_err(e)?;
    }
    if way.exec {
        each_row(path, limit, |f| {
            let sql = format!(
                "INSERT INTO TTC VALUES (NULL, {}, {}, {}, {}, {}, {}, {})",
                literal(f[0]),
                literal(f[1]),
                literal(f[2]),
                literal(f[3]),
                literal(f[4]),
                literal(f[5]),
                literal(f[6])
            );
            conn.execute_batch(&sql)
        })?;
    } else if way.copy {
        let mut stmt = conn.prepare(INSERT).map_err(e)?;
        each_row(path, limit, |f| {
            let v: [String; 7] = f.map(str::to_owned);
            stmt.execute(rusqlite::params_from_iter(v.iter())).map(drop)
        })?;
    } else {
        let mut stmt = conn.prepare(INSERT).map_err(e)?;
        each_row(path, limit, |f| {
            stmt.execute(rusqlite::params![f[0], f[1], f[2], f[3], f[4], f[5], f[6]])
                .map(drop)
        })?;
    }
    if way.transaction {
        conn.execute_batch("COMMIT").map_err(e)?;
    }
    if way.index == Some(false) {
        conn.execute_batch(INDEX).map_err(e)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    way.settings().confirm(&conn)?;
    check(&conn, want)?;
    drop(conn);
    remove_db(db);
    Ok(Run::timed(seconds))
}

/// The floor under every step: reading and splitting the file, no database.
fn parse_only(path: &Path, rows: u64) -> Result<Run, String> {
    let start = Instant::now();
    let mut n = 0u64;
    let mut bytes = 0usize;
    each_row(path, u64::MAX, |f| {
        n += 1;
        bytes += f.iter().map(|s| s.len()).sum::<usize>();
        Ok(())
    })?;
    let seconds = start.elapsed().as_secs_f64();
    if n != rows || bytes == 0 {
        return Err(format!("read {n} rows, expected {rows}"));
    }
    Ok(Run::timed(seconds))
}

fn liteload_import(
    path: &Path,
    db: &Path,
    durability: Durability,
    index: bool,
    engine: Engine,
    want: Expect,
) -> Result<Run, String> {
    remove_db(db);
    let opts = {
        let mut built = ImportOptions::default();
        built.engine = engine;
        built.table = Some("TTC".into());
        built.durability = Some(durability);
        built.indexes = if index {
            vec![IndexSpec::new(["Stop"], false)]
        } else {
            vec![]
        };
        built
    };
    let start = Instant::now();
    let summary = liteload::import(
        db,
        &[Input::Path(path.to_path_buf())],
        &opts,
        &Progress::default(),
    )
    .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if summary.rejects > 0 {
        return Err(format!("{} rows rejected", summary.rejects));
    }
    let conn = Connection::open(db).map_err(|e| e.to_string())?;
    check(&conn, want)?;
    if index {
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'TTC'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        if n != 1 {
            return Err(format!("{n} indexes on TTC, expected 1"));
        }
    }
    drop(conn);
    remove_db(db);
    Ok(Run::timed(seconds))
}

/// Reads a TSV in the write-up's shape (a header line, then 7 tab-separated fields:
/// route, branch, version, stop, vehicle, day, time) and returns what loading all of it,
/// and its first `cap` rows, must give. A line of another shape is an error naming it.
fn scan_tsv(path: &Path, cap: u64) -> Result<(Expect, Expect), String> {
    let (mut all, mut first) = (Expect::default(), Expect::default());
    let mut r = BufReader::with_capacity(1 << 16, File::open(path).map_err(|e| e.to_string())?);
    let mut line = String::new();
    let mut no = 0u64;
    loop {
        line.clear();
        if r.read_line(&mut line)
            .map_err(|e| format!("line {}: {e}", no + 1))?
            == 0
        {
            break;
        }
        no += 1;
        let fields: Vec<&str> = line.trim_end_matches(['\n', '\r']).split('\t').collect();
        if no == 1 {
            if fields != HEADER {
                return Err(format!(
                    "line 1: the header must name the write-up's columns, {}",
                    HEADER.join(", ")
                ));
            }
            continue;
        }
        if fields.len() != 7 {
            return Err(format!(
                "line {no}: {} fields; the ladder's table takes 7 (route, branch, version, stop, vehicle, day, time)",
                fields.len()
            ));
        }
        let stop = fields[3]
            .parse::<i64>()
            .map_err(|_| format!("line {no}, field 4: Stop {:?} is not an integer", fields[3]))?;
        let row = all.rows;
        for (e, counts) in [(&mut all, true), (&mut first, row < cap)] {
            if counts {
                e.rows += 1;
                e.stop += stop;
                e.time_len += fields[6].chars().count() as i64;
            }
        }
    }
    if all.rows == 0 {
        return Err("no rows after the header line".into());
    }
    Ok((all, first))
}

/// Runs the ladder: generates the TSV (or reads the user's), then every step `runs`
/// times, interleaved.
pub fn run(o: &LadderOptions, log: &mut dyn FnMut(&str)) -> Result<Experiment, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let db = o.dir.join("ladder.db");
    let (tsv, all, first, n, cap, generated) = match &o.input {
        Some(input) => {
            log(&format!("reading {}", input.display()));
            let (all, _) = scan_tsv(input, 0).map_err(|e| format!("{}: {e}", input.display()))?;
            let cap = o.cap.min(all.rows);
            let (all, first) =
                scan_tsv(input, cap).map_err(|e| format!("{}: {e}", input.display()))?;
            (input.clone(), all, first, all.rows, cap, false)
        }
        None => {
            let tsv = o.dir.join("schedule.tsv");
            log(&format!("writing {} rows to {}", o.rows, tsv.display()));
            let cap = o.cap.min(o.rows);
            let (all, first) = write_tsv(&tsv, o.rows, cap, o.seed)
                .map_err(|e| format!("{}: {e}", tsv.display()))?;
            (tsv, all, first, o.rows, cap, true)
        }
    };
    let (path, db) = (tsv.as_path(), db.as_path());
    let way = Way::PREPARED;
    let fast = "PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY;";
    // A SQLite-side step over the whole file.
    let step = |name: &str, writeup_secs: f64, w: Way| {
        Plan::new(
            name,
            Some(w.settings()),
            n,
            published(writeup_secs),
            move || load(path, db, n, w, all),
        )
    };
    let ours = |name: &str, durability: Durability, index: bool, engine: Engine| {
        Plan::new(
            name,
            Some(Settings::of_profile(durability)),
            n,
            None,
            move || liteload_import(path, db, durability, index, engine, all),
        )
    };
    let with = |pragmas: &'static str, index: Option<bool>| Way {
        pragmas,
        index,
        ..way
    };
    let autocommit = Way {
        exec: true,
        transaction: false,
        ..way
    };
    let plans = vec![
        Plan::new(
            "exec per row, autocommit",
            Some(autocommit.settings()),
            cap,
            published(9933.61),
            move || load(path, db, cap, autocommit, first),
        )
        .extrapolated_to(n),
        step(
            "exec per row, one transaction",
            38.03,
            Way { exec: true, ..way },
        ),
        step("prepared statement, one transaction", 16.27, way),
        step(
            "+ synchronous=OFF",
            12.41,
            with("PRAGMA synchronous=OFF;", None),
        ),
        step(
            "+ journal_mode=MEMORY (synchronous on)",
            13.50,
            with("PRAGMA journal_mode=MEMORY;", None),
        ),
        step(
            "+ synchronous=OFF and journal_mode=MEMORY",
            12.00,
            with(fast, None),
        ),
        step(
            "+ in-memory database",
            10.94,
            Way {
                memory: true,
                ..way
            },
        ),
        step(
            "+ sync OFF, journal MEMORY, fields bound as split (write-up's final step)",
            8.94,
            Way {
                copy: false,
                ..with(fast, None)
            },
        ),
        step(
            "final step, index before the load",
            18.13,
            Way {
                copy: false,
                ..with(fast, Some(true))
            },
        ),
        step(
            "final step, index after the load",
            13.66,
            Way {
                copy: false,
                ..with(fast, Some(false))
            },
        ),
        ours(
            "liteload import, balanced (WAL, synchronous=NORMAL)",
            Durability::Balanced,
            false,
            Engine::Sqlite,
        ),
        ours(
            "liteload import, atomic-new (new file default)",
            Durability::AtomicNew,
            false,
            Engine::Sqlite,
        ),
        ours(
            "liteload import, atomic-new, --index Stop",
            Durability::AtomicNew,
            true,
            Engine::Sqlite,
        ),
        ours(
            "liteload import --engine direct (page writer)",
            Durability::AtomicNew,
            false,
            Engine::Direct,
        ),
        Plan::new(
            "read and split the file only (floor)",
            None,
            n,
            published(0.94),
            move || parse_only(path, n),
        ),
    ];
    let steps = measure(plans, o.runs, log);
    if generated {
        let _ = std::fs::remove_file(&tsv);
    }
    let rate = |name: &str| {
        steps
            .iter()
            .find(|s| s.name.starts_with(name))
            .and_then(|s| s.median_rate())
    };
    let mut notes = vec![
        "Each step includes reading and splitting the TSV, as the write-up's program does; 'read and split only' is that part alone.".into(),
        "Up to the final step, each field is copied into a string of its own before it is bound (the write-up's program kept each field in a variable of its own); the final step binds the fields straight from the line, as the write-up's last change did.".into(),
        "The write-up's index steps ran on top of its final step; ours do too.".into(),
        "liteload import infers column types, binds typed values into multi-row INSERTs, and commits through its durability profile; its rows carry no id column (the rowid stands in).".into(),
        "The direct page writer (`--engine direct`) writes the table's pages itself instead of going through SQLite's insert path; the file is then SQLite's to use like any other.".into(),
    ];
    let final_step = "+ sync OFF, journal MEMORY, fields bound";
    if let (Some(worst), Some(best)) = (rate("exec per row, autocommit"), rate(final_step)) {
        notes.push(format!(
            "Overall speed-up of the write-up's ladder, its final step over autocommit: {:.0}x here, {:.0}x in the write-up (85 to 96,700 rows/s).",
            best / worst,
            9933.61 / 8.94
        ));
    }
    let setup = match &o.input {
        Some(p) => format!(
            "{} rows of {}; the autocommit step loads the first {} rows and its rate is extrapolated to the whole file",
            n,
            p.display(),
            cap
        ),
        None => format!(
            "{} rows of a generated transit-schedule TSV (seed {}); the autocommit step loads the first {} rows and its rate is extrapolated to the whole file",
            n, o.seed, cap
        ),
    };
    Ok(Experiment {
        id: "ladder".into(),
        title: "Bulk insert, one change at a time".into(),
        writeup: "000: Improve INSERT-per-second performance of SQLite (Stack Overflow)".into(),
        unit: "rows".into(),
        setup,
        published_by: "write-up 000: 3.60 GHz Pentium 4, Windows XP, SQLite 3.6.7, 2009".into(),
        runs: o.runs,
        steps,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_verifies_at_a_tiny_size() {
        let dir = tempfile::tempdir().unwrap();
        let o = LadderOptions {
            rows: 2_000,
            cap: 20,
            runs: 1,
            dir: dir.path().to_path_buf(),
            seed: 1,
            input: None,
        };
        let e = run(&o, &mut |_| {}).unwrap();
        assert_eq!(e.steps.len(), 15);
        for s in &e.steps {
            assert!(s.failed.is_none(), "{}: {:?}", s.name, s.failed);
            assert_eq!(s.seconds.len(), 1, "{}", s.name);
        }
        assert_eq!(e.steps[0].items, 20);
        assert_eq!(e.steps[0].extrapolated_to, Some(2_000));
        assert_eq!(e.baseline().unwrap().name, "exec per row, autocommit");
    }

    #[test]
    fn a_wrong_load_fails_its_check() {
        let dir = tempfile::tempdir().unwrap();
        let tsv = dir.path().join("t.tsv");
        let (all, _) = write_tsv(&tsv, 100, 10, 3).unwrap();
        let db = dir.path().join("t.db");
        let way = Way::PREPARED;
        // Loading 99 of 100 rows must not pass as the whole file.
        let err = match load(&tsv, &db, 99, way, all) {
            Err(e) => e,
            Ok(_) => panic!("a short load verified"),
        };
        assert!(err.contains("expected"), "{err}");
        assert!(load(&tsv, &db, 100, way, all).is_ok());
    }

    #[test]
    fn a_users_file_is_loaded_by_every_step_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let tsv = dir.path().join("mine.tsv");
        write_tsv(&tsv, 500, 0, 11).unwrap();
        let o = LadderOptions {
            rows: 1,
            cap: 10,
            runs: 1,
            dir: dir.path().join("work"),
            seed: 1,
            input: Some(tsv.clone()),
        };
        let e = run(&o, &mut |_| {}).unwrap();
        for s in &e.steps {
            assert!(s.failed.is_none(), "{}: {:?}", s.name, s.failed);
        }
        assert_eq!(e.steps[1].items, 500);
        assert!(tsv.exists(), "the user's file is never removed");
        assert!(e.notes.iter().any(|n| n.starts_with("Overall speed-up")));
        let bad = dir.path().join("bad.tsv");
        std::fs::write(
            &bad,
            format!("{}\n1\t1A\t1\tx\t1\t1\t5:00:00\n", HEADER.join("\t")),
        )
        .unwrap();
        let err = run(
            &LadderOptions {
                input: Some(bad),
                ..o.clone()
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.contains("line 2, field 4"), "{err}");
        let short = dir.path().join("short.tsv");
        std::fs::write(&short, "a\tb\n").unwrap();
        let err = run(
            &LadderOptions {
                input: Some(short),
                ..o
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn literals_double_their_quotes() {
        assert_eq!(literal("it's"), "'it''s'");
    }
}
