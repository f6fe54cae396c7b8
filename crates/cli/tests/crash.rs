//! kill -9 at random moments of a load: the database is always either absent (or as it
//! was) or complete, never in between, and always passes `PRAGMA integrity_check`.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rusqlite::Connection;

type R = Result<(), Box<dyn std::error::Error>>;

const ROWS: u64 = 1_500_000;

/// Writes ROWS rows and returns (count, sum of `n`, total length of `s`) to check against.
fn write_input(path: &Path) -> Result<(i64, i64, i64), std::io::Error> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(w, "id,n,s")?;
    let (mut sum, mut len) = (0i64, 0i64);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for id in 0..ROWS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (x % 1_000_000) as i64;
        let s = format!("v{}", x % 100_000);
        sum += n;
        len += s.len() as i64;
        writeln!(w, "{id},{n},{s}")?;
    }
    w.flush()?;
    Ok((ROWS as i64, sum, len))
}

fn spawn(dir: &Path, args: &[&str]) -> Result<Child, std::io::Error> {
    Command::new(assert_cmd::cargo::cargo_bin("liteload"))
        .current_dir(dir)
        .arg("import")
        .arg("-q")
        .args(args)
        .spawn()
}

/// The table's (count, sum(n), sum(length(s))) after an integrity check.
fn contents(db: &Path) -> Result<(i64, i64, i64), Box<dyn std::error::Error>> {
    let c = Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok", "integrity_check after kill -9");
    Ok(c.query_row(
        "SELECT count(*), coalesce(sum(n),0), coalesce(sum(length(s)),0) FROM big",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

/// Delays spread over the load, from a seed printed for reproduction.
fn delays(full: Duration, n: usize) -> Vec<Duration> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    eprintln!("kill delays seed {seed}");
    let mut x = seed;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Stratified: the i-th delay falls in the i-th slice of the load's duration.
            let slice = full.as_secs_f64() / n as f64;
            Duration::from_secs_f64(slice * (i as f64 + (x % 1000) as f64 / 1000.0))
        })
        .collect()
}

#[test]
fn kill_during_a_new_file_load_leaves_no_file_or_a_complete_one() -> R {
    kills_during_a_new_file_load(&[])
}

#[test]
fn kill_during_a_direct_load_with_an_index_leaves_no_file_or_a_complete_one() -> R {
    kills_during_a_new_file_load(&["--engine", "direct", "--index", "n"])
}

/// kill -9 at several moments of `import` into a new file (with `extra` flags).
fn kills_during_a_new_file_load(extra: &[&str]) -> R {
    let with = |args: &[&'static str]| -> Vec<&str> {
        args.iter().copied().chain(extra.iter().copied()).collect()
    };
    let d = tempfile::tempdir()?;
    let expected = write_input(&d.path().join("big.csv"))?;
    let t0 = Instant::now();
    assert!(spawn(d.path(), &with(&["full.db", "big.csv"]))?
        .wait()?
        .success());
    let full = t0.elapsed();
    assert_eq!(contents(&d.path().join("full.db"))?, expected);

    let mut interrupted = 0;
    for delay in delays(full, 6) {
        let db = d.path().join("k.db");
        let mut child = spawn(d.path(), &with(&["k.db", "big.csv"]))?;
        std::thread::sleep(delay);
        let finished = child.try_wait()?.is_some();
        child.kill()?; // SIGKILL
        child.wait()?;
        if db.exists() {
            assert_eq!(
                contents(&db)?,
                expected,
                "a killed load left a partial database (delay {delay:?})"
            );
            std::fs::remove_file(&db)?;
        } else {
            assert!(!finished, "the load finished but left no database");
            interrupted += 1;
        }
    }
    assert!(
        interrupted > 0,
        "no kill landed during a load; the test proved nothing"
    );
    // The next run cleans up whatever temp file the kills left.
    assert!(spawn(d.path(), &with(&["k.db", "big.csv"]))?
        .wait()?
        .success());
    assert_eq!(contents(&d.path().join("k.db"))?, expected);
    assert!(!d.path().join("k.db.liteload-tmp").exists());
    Ok(())
}

#[test]
fn kill_during_an_append_leaves_the_table_before_or_after() -> R {
    let d = tempfile::tempdir()?;
    let (n, sum, len) = write_input(&d.path().join("big.csv"))?;
    std::fs::write(d.path().join("seed.csv"), "id,n,s\n-1,5,abc\n")?;
    let before = (1, 5, 3);
    let after = (n + 1, sum + 5, len + 3);
    let t0 = Instant::now();
    assert!(spawn(d.path(), &["full.db", "big.csv"])?.wait()?.success());
    let full = t0.elapsed();

    let mut saw_before = 0;
    for delay in delays(full, 5) {
        let db = d.path().join("a.db");
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(d.path().join("a.db-wal"));
        let _ = std::fs::remove_file(d.path().join("a.db-shm"));
        assert!(spawn(d.path(), &["a.db", "seed.csv", "--table", "big"])?
            .wait()?
            .success());
        let mut child = spawn(d.path(), &["a.db", "big.csv", "--table", "big"])?;
        std::thread::sleep(delay);
        child.kill()?;
        child.wait()?;
        let got = contents(&db)?;
        assert!(
            got == before || got == after,
            "append left {got:?}, neither {before:?} nor {after:?}"
        );
        if got == before {
            saw_before += 1;
        }
    }
    assert!(
        saw_before > 0,
        "no kill landed during an append; the test proved nothing"
    );
    Ok(())
}

/// kill -9 during a load of a new table into an existing database in rollback mode (the
/// page writer in place, past the file's end, under a rollback journal): the table is
/// absent or complete, the rest of the file as it was, once SQLite has opened it (and
/// played back a hot journal a kill left).
#[test]
fn kill_during_a_new_table_in_place_leaves_it_absent_or_complete() -> R {
    kills_during_a_new_table(false)
}

/// The same in WAL mode, which no other connection has open: in place too (the WAL
/// checkpointed under the load's lock); after every kill the file is in WAL mode, as it
/// was.
#[test]
fn kill_during_a_new_table_in_place_in_wal_mode_leaves_it_absent_or_complete() -> R {
    kills_during_a_new_table(true)
}

fn kills_during_a_new_table(wal: bool) -> R {
    let d = tempfile::tempdir()?;
    let expected = write_input(&d.path().join("big.csv"))?;
    std::fs::write(d.path().join("seed.csv"), "k\n1\n2\n3\n")?;
    let t0 = Instant::now();
    assert!(spawn(d.path(), &["full.db", "big.csv"])?.wait()?.success());
    let full = t0.elapsed();

    let (mut saw_absent, mut saw_side) = (0, 0);
    for delay in delays(full * 2, 6) {
        let db = d.path().join("a.db");
        for f in ["a.db", "a.db-wal", "a.db-shm", "a.db-journal"] {
            let _ = std::fs::remove_file(d.path().join(f));
        }
        assert!(spawn(d.path(), &["a.db", "seed.csv"])?.wait()?.success());
        if wal {
            Connection::open(&db)?.execute_batch("PRAGMA journal_mode=WAL")?;
        }
        let mut child = spawn(d.path(), &["a.db", "big.csv"])?;
        std::thread::sleep(delay);
        child.kill()?;
        child.wait()?;
        if d.path().join("a.db.liteload-append").exists() {
            saw_side += 1;
        }
        let c = Connection::open(&db)?;
        let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok", "integrity_check after kill -9 (delay {delay:?})");
        if wal {
            let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            assert_eq!(
                mode, "wal",
                "the journal mode after kill -9 (delay {delay:?})"
            );
        }
        let seed: i64 = c.query_row("SELECT sum(k) FROM seed", [], |r| r.get(0))?;
        assert_eq!(seed, 6, "the table already there changed");
        let has_big: i64 = c.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'big'",
            [],
            |r| r.get(0),
        )?;
        drop(c);
        if has_big == 0 {
            saw_absent += 1;
        } else {
            assert_eq!(
                contents(&db)?,
                expected,
                "a killed append left part of its table"
            );
        }
    }
    assert!(
        saw_absent > 0,
        "no kill landed during an append; the test proved nothing"
    );
    assert_eq!(saw_side, 0, "a new table in place made a side file");
    assert!(!d.path().join("a.db-journal").exists());
    Ok(())
}

/// kill -9 during a load into an empty STRICT table made beforehand with a UNIQUE and a
/// plain index and a CHECK constraint (filled in place: the rows past the file's end,
/// each index into its own root page, each row put to a copy of the table in memory for
/// its CHECK): the table is empty or complete, its indexes agreeing with it.
#[test]
fn kill_during_a_load_into_a_made_table_in_place_leaves_it_empty_or_complete() -> R {
    let d = tempfile::tempdir()?;
    let after = write_input(&d.path().join("big.csv"))?;
    let t0 = Instant::now();
    assert!(spawn(d.path(), &["full.db", "big.csv"])?.wait()?.success());
    let full = t0.elapsed();
    let mut saw_empty = 0;
    for delay in delays(full * 3, 6) {
        let db = d.path().join("a.db");
        for f in ["a.db", "a.db-wal", "a.db-shm", "a.db-journal"] {
            let _ = std::fs::remove_file(d.path().join(f));
        }
        Connection::open(&db)?.execute_batch(
            "CREATE TABLE big (id INT NOT NULL UNIQUE, n INT NOT NULL CHECK (n >= 0), \
             s TEXT NOT NULL) STRICT;
             CREATE INDEX big_s ON big (s);",
        )?;
        let mut child = spawn(d.path(), &["a.db", "big.csv", "--table", "big"])?;
        std::thread::sleep(delay);
        child.kill()?;
        child.wait()?;
        // integrity_check (in `contents`) also checks each index against the table.
        let got = contents(&db)?;
        assert!(
            got == (0, 0, 0) || got == after,
            "a killed load left {got:?}, neither empty nor {after:?}"
        );
        if got == (0, 0, 0) {
            saw_empty += 1;
        }
    }
    assert!(
        saw_empty > 0,
        "no kill landed during the load; the test proved nothing"
    );
    Ok(())
}

/// kill -9 during rows added to a table that has rows and indexes (in place: the rows
/// after its last, each index's old entries merged with the new into new pages, the old
/// pages freed): the table and its indexes as they were or complete.
#[test]
fn kill_during_an_index_merge_in_place_leaves_the_table_before_or_after() -> R {
    let d = tempfile::tempdir()?;
    let (n, sum, len) = write_input(&d.path().join("big.csv"))?;
    let base = d.path().join("base.db");
    assert!(spawn(d.path(), &["base.db", "big.csv", "--table", "big"])?
        .wait()?
        .success());
    Connection::open(&base)?.execute_batch(
        "PRAGMA journal_mode=DELETE; CREATE INDEX big_s ON big (s); CREATE INDEX big_n ON big (n);",
    )?;
    let (before, after) = ((n, sum, len), (2 * n, 2 * sum, 2 * len));
    // Once whole: the road is the merge in place, and the time it takes.
    std::fs::copy(&base, d.path().join("full.db"))?;
    let t0 = Instant::now();
    let out = Command::new(assert_cmd::cargo::cargo_bin("liteload"))
        .current_dir(d.path())
        .args(["import", "full.db", "big.csv", "--table", "big"])
        .output()?;
    let full = t0.elapsed();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("index(es) merged"), "{said}");
    assert_eq!(contents(&d.path().join("full.db"))?, after);
    let mut saw_before = 0;
    for delay in delays(full, 4) {
        let db = d.path().join("a.db");
        for f in ["a.db-wal", "a.db-shm", "a.db-journal"] {
            let _ = std::fs::remove_file(d.path().join(f));
        }
        std::fs::copy(&base, &db)?;
        let mut child = spawn(d.path(), &["a.db", "big.csv", "--table", "big"])?;
        std::thread::sleep(delay);
        child.kill()?;
        child.wait()?;
        // integrity_check (in `contents`) also checks each index against the table.
        let got = contents(&db)?;
        assert!(
            got == before || got == after,
            "a killed merge left {got:?}, neither {before:?} nor {after:?}"
        );
        if got == before {
            saw_before += 1;
        }
    }
    assert!(
        saw_before > 0,
        "no kill landed during the merge; the test proved nothing"
    );
    Ok(())
}

/// kill -9 during a load that replaces a table (the page writer's side file, then
/// SQLite's transfer, in one transaction with the DROP): the table is as it was or
/// complete, and the next run removes the side file a kill left.
#[test]
fn kill_during_a_replace_through_a_side_file_leaves_the_table_before_or_after() -> R {
    let d = tempfile::tempdir()?;
    let after = write_input(&d.path().join("big.csv"))?;
    std::fs::write(d.path().join("seed.csv"), "id,n,s\n-1,5,abc\n")?;
    let before = (1, 5, 3);
    let t0 = Instant::now();
    assert!(spawn(d.path(), &["full.db", "big.csv"])?.wait()?.success());
    let full = t0.elapsed();
    let (mut saw_before, mut saw_side) = (0, 0);
    for delay in delays(full * 2, 6) {
        let db = d.path().join("a.db");
        for f in ["a.db", "a.db-wal", "a.db-shm", "a.db-journal"] {
            let _ = std::fs::remove_file(d.path().join(f));
        }
        assert!(spawn(d.path(), &["a.db", "seed.csv", "--table", "big"])?
            .wait()?
            .success());
        let mut child = spawn(
            d.path(),
            &[
                "a.db",
                "big.csv",
                "--table",
                "big",
                "--if-exists",
                "replace",
            ],
        )?;
        std::thread::sleep(delay);
        child.kill()?;
        child.wait()?;
        if d.path().join("a.db.liteload-append").exists() {
            saw_side += 1;
        }
        let got = contents(&db)?;
        assert!(
            got == before || got == after,
            "a killed replace left {got:?}, neither {before:?} nor {after:?}"
        );
        if got == before {
            saw_before += 1;
        }
    }
    assert!(
        saw_before > 0,
        "no kill landed during the load; the test proved nothing"
    );
    // A side file left by a kill (the last one, or one planted as a kill leaves it) is
    // removed by the next append.
    eprintln!("kills that left a side file: {saw_side}");
    std::fs::write(d.path().join("a.db.liteload-append"), b"half a side file")?;
    std::fs::write(d.path().join("more.csv"), "m\n1\n")?;
    assert!(spawn(d.path(), &["a.db", "more.csv"])?.wait()?.success());
    assert!(!d.path().join("a.db.liteload-append").exists());
    Ok(())
}

/// A reader in another connection while rows are appended in place (SQLite's EXCLUSIVE
/// lock held by the load): each of its reads waits (its busy timeout) and then sees the
/// table before the load or after it, never in between, and at the end the table after.
#[test]
fn a_reader_during_an_append_in_place_sees_the_table_before_or_after() -> R {
    readers_during_an_append(false)
}

/// The same in WAL mode: the reader's connection, opened again and again, may also keep
/// the load from the file (the side file then), or wait for its lock; either way it sees
/// the table before or after, and the file stays in WAL mode.
#[test]
fn a_reader_during_an_append_in_wal_mode_sees_the_table_before_or_after() -> R {
    readers_during_an_append(true)
}

fn readers_during_an_append(wal: bool) -> R {
    let d = tempfile::tempdir()?;
    let (n, sum, len) = write_input(&d.path().join("big.csv"))?;
    std::fs::write(d.path().join("seed.csv"), "id,n,s\n-1,5,abc\n")?;
    let before = (1, 5, 3);
    let after = (n + 1, sum + 5, len + 3);
    let db = d.path().join("a.db");
    assert!(spawn(d.path(), &["a.db", "seed.csv", "--table", "big"])?
        .wait()?
        .success());
    if wal {
        Connection::open(&db)?.execute_batch("PRAGMA journal_mode=WAL")?;
    }
    let mut child = spawn(d.path(), &["a.db", "big.csv", "--table", "big"])?;
    let (mut reads, mut saw_after) = (0, false);
    loop {
        let done = child.try_wait()?.is_some();
        let c = Connection::open(&db)?;
        c.busy_timeout(Duration::from_secs(60))?;
        let got: (i64, i64, i64) = c.query_row(
            "SELECT count(*), coalesce(sum(n),0), coalesce(sum(length(s)),0) FROM big",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        reads += 1;
        assert!(
            got == before || got == after,
            "a reader saw {got:?}, neither {before:?} nor {after:?}"
        );
        saw_after |= got == after;
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait()?.success());
    assert!(
        saw_after,
        "the reader never saw the rows after {reads} reads"
    );
    assert_eq!(contents(&db)?, after);
    if wal {
        let mode: String =
            Connection::open(&db)?.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        assert_eq!(mode, "wal");
    }
    Ok(())
}
