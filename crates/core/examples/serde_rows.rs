//! 1,000,000 rows of a program's own struct, through serde, into a new file by the
//! direct page writer; read back and compared, and checked by SQLite.
//!
//! `cargo run --release -p liteload --example serde_rows`

use liteload::Engine;
use liteload::{import, EngineUsed, ImportOptions, Input, Progress};

#[derive(serde::Serialize, Debug, PartialEq)]
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("readings.db");
    let opts = {
        let mut built = ImportOptions::default();
        built.engine = Engine::Direct;
        built
    };
    let input = Input::serialized("readings", (0..ROWS).map(reading));
    let summary = import(&db, &[input], &opts, &Progress::default())?;
    assert_eq!(
        (summary.rows, summary.engine),
        (ROWS as u64, Some(EngineUsed::Direct))
    );

    let conn = rusqlite::Connection::open(&db)?;
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let mut st =
        conn.prepare("SELECT sensor, place, celsius, note FROM readings ORDER BY rowid")?;
    let mut rows = st.query([])?;
    let mut i = 0;
    while let Some(r) = rows.next()? {
        let back = Reading {
            sensor: r.get(0)?,
            place: r.get(1)?,
            celsius: r.get(2)?,
            note: r.get(3)?,
        };
        assert_eq!(back, reading(i));
        i += 1;
    }
    assert_eq!(i, ROWS);
    println!(
        "{} rows in {:.2} s ({:.0} rows/s), read back equal",
        summary.rows, summary.seconds, summary.rows_per_second
    );
    Ok(())
}
