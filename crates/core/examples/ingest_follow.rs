//! A current-state table kept from a file that is followed as it grows, and rotated
//! (renamed away, a new file at its path) while it is read: every message lands once.
//!
//! `cargo run -p liteload --example ingest_follow`

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use liteload::ingest::feed::{self, Event, Feed, FeedOptions};
use liteload::ingest::{Ingest, IngestOptions};

fn append(path: &std::path::Path, lines: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(lines.as_bytes())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let (db, log) = (dir.path().join("flights.db"), dir.path().join("feed.jsonl"));
    append(
        &log,
        "{\"id\": \"a\", \"alt\": 100}\n{\"id\": \"b\", \"alt\": 200}\n",
    )?;
    let opts = {
        let mut built = IngestOptions::default();
        built.table = "flights".into();
        built.keys = vec!["id".into()];
        built.commit_interval = Duration::from_millis(50);
        built
    };
    let mut engine = Ingest::open(&db, opts)?;
    let stop = Arc::new(AtomicBool::new(false));
    let follow = Feed::File {
        path: log.clone(),
        follow: true,
        from_start: false,
    };
    let stop2 = stop.clone();
    let running = std::thread::spawn(move || {
        let mut notes = vec![];
        let totals = feed::run(
            &mut engine,
            follow,
            &FeedOptions::default(),
            stop2,
            &mut |e| {
                if let Event::Note(n) = e {
                    notes.push(n);
                }
            },
        );
        (totals, notes)
    });

    let rows = |sql: &str| -> rusqlite::Result<i64> {
        rusqlite::Connection::open(&db)?.query_row(sql, [], |r| r.get(0))
    };
    let wait_for = |sql: &str, want: i64| -> Result<(), Box<dyn std::error::Error>> {
        let start = Instant::now();
        while rows(sql).unwrap_or(-1) != want {
            if start.elapsed() > Duration::from_secs(30) {
                return Err(format!("{sql} never became {want}").into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    };
    wait_for("SELECT count(*) FROM flights", 2)?;
    append(&log, "{\"id\": \"a\", \"alt\": 150}\n")?; // grows: an update
    wait_for("SELECT alt FROM flights WHERE id = 'a'", 150)?;
    // Rotated: the old file moves away, a new one starts at the same path.
    std::fs::rename(&log, dir.path().join("feed.jsonl.1"))?;
    append(
        &log,
        "{\"id\": \"c\", \"alt\": 300}\n{\"id\": \"b\", \"alt\": 250}\n",
    )?;
    wait_for("SELECT count(*) FROM flights", 3)?;
    wait_for("SELECT alt FROM flights WHERE id = 'b'", 250)?;

    stop.store(true, Ordering::Relaxed);
    let (totals, notes) = running.join().map_err(|_| "the feed thread panicked")?;
    let totals = totals?;
    assert_eq!((totals.messages, totals.rejects), (5, 0));
    let ok: String =
        rusqlite::Connection::open(&db)?.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    println!(
        "followed feed.jsonl through a rotation: {} messages, {} rows, notes: {notes:?}",
        totals.messages,
        rows("SELECT count(*) FROM flights")?
    );
    Ok(())
}
