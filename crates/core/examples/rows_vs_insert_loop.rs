//! Benchmark: a program's own structs into a new SQLite file, 1,000,000 rows, three
//! ways, interleaved, medians of 5 rounds:
//! - `loop`: what a skilled Rust user writes today: one prepared INSERT in one
//!   transaction, `journal_mode=OFF`, `synchronous=OFF` (a new file: nothing to protect);
//! - liteload `Input::serialized` through SQLite's insert path;
//! - liteload `Input::serialized` through the direct page writer.
//!
//! `cargo run --release -p liteload --example rows_vs_insert_loop`

use std::time::Instant;

use liteload::Engine;
use liteload::{import, ImportOptions, Input, Progress};

#[derive(serde::Serialize)]
struct Reading {
    sensor: i64,
    place: String,
    celsius: f64,
    note: Option<String>,
}

fn reading(i: i64) -> Reading {
    Reading {
        sensor: i,
        place: ["Oslo", "Zürich", "東京", ""][i as usize % 4].to_string(),
        celsius: (i % 800) as f64 / 8.0 - 40.5,
        note: (i % 10 == 0).then(|| format!("check {i}")),
    }
}

const ROWS: i64 = 1_000_000;
const ROUNDS: usize = 5;

fn insert_loop(db: &std::path::Path) -> rusqlite::Result<()> {
    let mut conn = rusqlite::Connection::open(db)?;
    conn.execute_batch(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
         CREATE TABLE readings(sensor INTEGER, place TEXT, celsius REAL, note TEXT)",
    )?;
    let tx = conn.transaction()?;
    {
        let mut st = tx.prepare("INSERT INTO readings VALUES (?1, ?2, ?3, ?4)")?;
        for i in 0..ROWS {
            let r = reading(i);
            st.execute(rusqlite::params![r.sensor, r.place, r.celsius, r.note])?;
        }
    }
    tx.commit()
}

fn liteload(db: &std::path::Path, engine: Engine) -> liteload::Result<()> {
    let opts = {
        let mut built = ImportOptions::default();
        built.engine = engine;
        built
    };
    let input = Input::serialized("readings", (0..ROWS).map(reading));
    import(db, &[input], &opts, &Progress::default()).map(|_| ())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let names = [
        "loop (rusqlite, prepared, 1 tx)",
        "liteload serialized, sqlite",
        "liteload serialized, direct",
    ];
    let mut times = vec![vec![]; names.len()];
    for round in 0..ROUNDS {
        for (k, t) in times.iter_mut().enumerate() {
            let db = dir.path().join(format!("r{round}-{k}.db"));
            let start = Instant::now();
            match k {
                0 => insert_loop(&db)?,
                1 => liteload(&db, Engine::Sqlite)?,
                _ => liteload(&db, Engine::Direct)?,
            }
            t.push(start.elapsed().as_secs_f64());
            let n: i64 = rusqlite::Connection::open(&db)?.query_row(
                "SELECT count(*) FROM readings",
                [],
                |r| r.get(0),
            )?;
            assert_eq!(n, ROWS);
            std::fs::remove_file(&db)?;
        }
    }
    let base = median(&mut times[0].clone());
    println!("{ROWS} rows, median of {ROUNDS} interleaved rounds");
    for (name, t) in names.iter().zip(&mut times) {
        let m = median(t);
        println!("{name:34} {m:6.3} s  {:5.2}x the loop's speed", base / m);
    }
    Ok(())
}
