//! The durability labels, checked by experiment where an experiment can check them: a
//! writer with each step class's settings is killed (kill -9) at random moments, and what
//! is on disk afterwards must be what the labels promise for a program crash. (What a
//! power loss does cannot be tested here; those labels follow SQLite's documentation,
//! see `durability.rs`.)
//!
//! The writer is this test binary run again with `LABEL_CHILD` set: it inserts rows with
//! the class's PRAGMAs and commit size and prints `C n` after each commit returns.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use liteload::generate::rng::Rng;
use liteload_lab::durability::{Commits, CrashCost, Settings, Survives};
use rusqlite::Connection;

/// Each class of step the lab runs: PRAGMAs and commit size.
const CLASSES: [(&str, Commits); 8] = [
    ("", Commits::EachOperation),
    ("", Commits::WholeRun),
    ("PRAGMA synchronous=OFF;", Commits::WholeRun),
    ("PRAGMA synchronous=NORMAL;", Commits::Batches),
    (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        Commits::Batches,
    ),
    (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
        Commits::EachOperation,
    ),
    (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;",
        Commits::Batches,
    ),
    (
        "PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF;",
        Commits::Batches,
    ),
];

const BATCH: u64 = 200;

fn commits_name(c: Commits) -> &'static str {
    match c {
        Commits::EachOperation => "each",
        Commits::Batches => "batches",
        Commits::WholeRun => "whole",
    }
}

/// The writer (runs only in the child).
#[test]
fn label_child() {
    let Ok(spec) = std::env::var("LABEL_CHILD") else {
        return;
    };
    let (i, db) = spec.split_once(':').unwrap();
    let (pragmas, commits) = CLASSES[i.parse::<usize>().unwrap()];
    let c = Connection::open(db).unwrap();
    c.execute_batch(pragmas).unwrap();
    c.execute_batch("CREATE TABLE IF NOT EXISTS t(n INTEGER, pad BLOB)")
        .unwrap();
    println!("C 0");
    let per = match commits {
        Commits::EachOperation => 1,
        Commits::Batches => BATCH,
        Commits::WholeRun => u64::MAX,
    };
    let mut n = 0u64;
    loop {
        if per > 1 {
            c.execute_batch("BEGIN").unwrap();
        }
        let mut in_tx = 0;
        while in_tx < per {
            c.execute("INSERT INTO t VALUES (?1, zeroblob(300))", [n as i64])
                .unwrap();
            n += 1;
            in_tx += 1;
        }
        if per > 1 {
            c.execute_batch("COMMIT").unwrap();
        }
        println!("C {n}");
    }
}

#[test]
fn a_killed_writer_leaves_what_its_labels_promise() {
    if std::env::var("LABEL_CHILD").is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng::for_chunk(7, 0);
    for (i, (pragmas, commits)) in CLASSES.iter().enumerate() {
        let labels = Settings::from_pragmas(pragmas, *commits).labels();
        for k in 0..3 {
            let db = dir.path().join(format!("c{i}-{k}.db"));
            let mut child = Command::new(&exe)
                .args(["--exact", "label_child", "--nocapture", "--test-threads=1"])
                .env("LABEL_CHILD", format!("{i}:{}", db.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            // Read the commits as they are reported, on a thread, until the kill.
            let reader = std::thread::spawn(move || {
                let mut last = None;
                for l in BufReader::new(out).lines() {
                    let Ok(l) = l else { break };
                    if let Some(n) = l.strip_prefix("C ") {
                        last = n.parse::<u64>().ok();
                    }
                }
                last
            });
            std::thread::sleep(Duration::from_millis(150 + rng.below(500)));
            child.kill().unwrap();
            child.wait().unwrap();
            let committed = reader.join().unwrap();
            let what = format!(
                "class {i} ({pragmas} {}), kill {k}: {labels:?}, last reported commit {committed:?}",
                commits_name(*commits)
            );
            let Some(committed) = committed else {
                continue; // killed before the table existed
            };
            let c = Connection::open(&db).unwrap();
            let check: Result<(String, u64), rusqlite::Error> = (|| {
                let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
                let rows: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
                Ok((ok, rows as u64))
            })();
            if labels.survives == Survives::Nothing {
                // No promise to check: a crash may corrupt. Whatever happened is allowed.
                continue;
            }
            let (ok, rows) = check.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(ok, "ok", "{what}");
            // What a commit survives: a program crash keeps every reported commit.
            assert!(rows >= committed, "{what}: {rows} rows on disk");
            // What a crash costs: only the work since the last commit.
            match labels.crash_cost {
                CrashCost::NothingCommitted => {
                    assert!(rows <= committed + 1, "{what}: {rows} rows")
                }
                CrashCost::SinceLastCommit => {
                    assert!(
                        rows % BATCH == 0 && rows <= committed + BATCH,
                        "{what}: {rows} rows"
                    )
                }
                CrashCost::WholeRun => assert_eq!(rows, 0, "{what}: a partial run is on disk"),
            }
        }
    }
}
