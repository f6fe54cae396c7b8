//! Write-up 004's experiment: a synthetic `user` table (id, area, age, active) written as
//! fast as the machine allows, by SQLite's insert path and by liteload's direct page
//! writer, with generating the values alone as the floor.
//!
//! Every write is checked: `integrity_check`, the row count, and the sums of `area`, `age`
//! and `active`, which both engines must agree on (same seed, same values).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use liteload::generate::{generate, GenerateOptions};
use liteload::Engine;
use liteload::Progress;
use rusqlite::Connection;
use serde::Serialize;

use crate::report::{integrity_ok, measure, remove_db, Experiment, Plan, Run};
use crate::stats::Safety;

/// The experiment's size.
#[derive(Clone, Debug, Serialize)]
pub struct GenerateBenchOptions {
    pub rows: u64,
    pub runs: usize,
    pub dir: PathBuf,
    pub seed: u64,
}

impl GenerateBenchOptions {
    /// 2 million rows.
    pub fn quick(dir: PathBuf) -> Self {
        GenerateBenchOptions {
            rows: 2_000_000,
            runs: 3,
            dir,
            seed: 4,
        }
    }

    /// The write-up's 100 million rows (about 2 GB per file).
    pub fn full(dir: PathBuf) -> Self {
        GenerateBenchOptions {
            rows: 100_000_000,
            ..Self::quick(dir)
        }
    }
}

/// Rows, and the sums of the three generated columns.
type Sums = (u64, i64, i64, i64);

fn write(
    db: &Path,
    o: &GenerateBenchOptions,
    engine: Engine,
    agreed: &RefCell<Option<Sums>>,
) -> Result<Run, String> {
    remove_db(db);
    let opts = {
        let mut built = GenerateOptions::default();
        built.rows = o.rows;
        built.seed = o.seed;
        built.engine = engine;
        built
    };
    let start = Instant::now();
    let s = generate(db, &opts, &Progress::default()).map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if s.rows != o.rows {
        return Err(format!("wrote {} rows, asked for {}", s.rows, o.rows));
    }
    let conn = Connection::open(db).map_err(|e| e.to_string())?;
    integrity_ok(&conn)?;
    let sums: Sums = conn
        .query_row(
            "SELECT count(*), total(area), total(age), total(active) FROM user",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, f64>(1)? as i64,
                    r.get::<_, f64>(2)? as i64,
                    r.get::<_, f64>(3)? as i64,
                ))
            },
        )
        .map_err(|e| e.to_string())?;
    drop(conn);
    remove_db(db);
    if sums.0 != o.rows {
        return Err(format!("{} rows read back, expected {}", sums.0, o.rows));
    }
    let mut a = agreed.borrow_mut();
    match *a {
        Some(prev) if prev != sums => {
            return Err(format!(
                "read back (rows, Σarea, Σage, Σactive) = {sums:?}, another run gave {prev:?}"
            ))
        }
        _ => *a = Some(sums),
    }
    Ok(Run::timed(seconds))
}

fn generate_only(o: &GenerateBenchOptions) -> Result<Run, String> {
    let opts = {
        let mut built = GenerateOptions::default();
        built.rows = o.rows;
        built.seed = o.seed;
        built.generate_only = true;
        built
    };
    let start = Instant::now();
    let s = generate(&o.dir.join("unused.db"), &opts, &Progress::default())
        .map_err(|e| e.to_string())?;
    let seconds = start.elapsed().as_secs_f64();
    if s.rows != o.rows {
        return Err(format!("generated {} rows, asked for {}", s.rows, o.rows));
    }
    Ok(Run::timed(seconds))
}

/// Runs the three steps `runs` times, interleaved.
pub fn run(o: &GenerateBenchOptions, log: &mut dyn FnMut(&str)) -> Result<Experiment, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let db = o.dir.join("generate.db");
    let agreed = RefCell::new(None);
    let (db, agreed) = (db.as_path(), &agreed);
    // Write-up 004's best figures, for 100M rows.
    let per_s = |secs: f64| Some(100e6 / secs);
    let plans = vec![
        Plan::new(
            "SQLite insert path (liteload generate, atomic-new)",
            Some(Safety::AllOrNothing),
            o.rows,
            per_s(32.37),
            move || write(db, o, Engine::Sqlite, agreed),
        ),
        Plan::new(
            "direct page writer (--engine direct, atomic-new)",
            Some(Safety::AllOrNothing),
            o.rows,
            None,
            move || write(db, o, Engine::Direct, agreed),
        ),
        Plan::new(
            "generate the values only (floor)",
            None,
            o.rows,
            per_s(17.0),
            move || generate_only(o),
        ),
    ];
    let steps = measure(plans, o.runs, log);
    Ok(Experiment {
        id: "generate".into(),
        title: "Synthetic rows at the physical limit".into(),
        writeup: "004: Towards inserting one billion rows in SQLite under a minute".into(),
        unit: "rows".into(),
        setup: format!(
            "{} rows of user(id INTEGER PRIMARY KEY, area, age, active), seed {}, {} generator threads",
            o.rows,
            o.seed,
            GenerateOptions::default().threads
        ),
        published_by: "write-up 004: MacBook Pro 2019, 2.4 GHz quad-core i5, SSD (c. 2021): Rust, 4 generator threads + 1 writer; its floor is its loop without SQLite".into(),
        runs: o.runs,
        steps,
        notes: vec![
            "Both engines write a new file and sync it before it is put in place; the time includes that fsync.".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_engines_verify_and_agree_at_a_tiny_size() {
        let dir = tempfile::tempdir().unwrap();
        let o = GenerateBenchOptions {
            rows: 20_000,
            runs: 2,
            dir: dir.path().to_path_buf(),
            seed: 9,
        };
        let e = run(&o, &mut |_| {}).unwrap();
        for s in &e.steps {
            assert!(s.failed.is_none(), "{}: {:?}", s.name, s.failed);
            assert_eq!(s.seconds.len(), 2);
        }
    }
}
