//! [`Checkpointer`]: copies a WAL database's committed frames into the database file on a
//! thread and connection of its own, so that the thread that writes windows only writes.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on
//! the writing thread: on a flight-feed-shaped stream it was about a sixth of every commit
//! (bench/README.md, "Ingest on two stream shapes"), and the writer is the one stage of
//! the pipeline that cannot be split. Here the writer turns it off and asks this thread
//! for a PASSIVE checkpoint after each commit; the two run side by side (a checkpoint
//! never blocks a writer, nor a writer a PASSIVE checkpoint).
//!
//! Invariants:
//! - the WAL stays bounded: SQLite starts the WAL from its beginning only when a write
//!   transaction begins with every frame checkpointed, which never happens while
//!   checkpoints trail commits; so before a commit, a WAL past [`WAL_BOUND`] makes the
//!   writer wait for the checkpoint in progress, and its transaction then starts the WAL
//!   over;
//! - durability is SQLite's own: the checkpoint connection has the writer's
//!   `synchronous` setting, and a checkpoint moves only committed frames;
//! - dropping the checkpointer finishes the checkpoint in progress and closes its
//!   connection before the writer's (which then checkpoints what is left and removes
//!   the WAL, as SQLite does when the last connection closes).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Error, Result};

/// The WAL size past which a commit waits for the checkpoint in progress.
pub(crate) const WAL_BOUND: u64 = 256 << 20;

#[derive(Default)]
struct State {
    /// Checkpoints asked for, and the number asked for when the last one finished.
    requested: u64,
    done: u64,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

pub(crate) struct Checkpointer {
    shared: Shared,
    wal: PathBuf,
    bound: u64,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread, with a connection to `db` that runs `pragmas` (the writer's
    /// durability PRAGMAs), and turns off the automatic checkpoint of `writer` (a
    /// connection to `db` in WAL mode). `writer`'s WAL is truncated to a quarter of
    /// `bound` when it starts over, so that its size on disk tells how much it holds.
    pub fn start(
        writer: &Connection,
        db: &Path,
        pragmas: &str,
        bound: u64,
    ) -> Result<Checkpointer> {
        let sql_err = |ctx: &'static str| move |e| Error::sqlite(ctx, e);
        writer
            .execute_batch(&format!(
                "PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit={};",
                bound / 4
            ))
            .map_err(sql_err("turning off the automatic checkpoint"))?;
        let conn = Connection::open(db).map_err(sql_err("opening the checkpoint connection"))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(sql_err("setting the busy timeout"))?;
        conn.execute_batch(pragmas)
            .map_err(sql_err("setting the checkpoint connection's PRAGMAs"))?;
        let shared: Shared = Arc::default();
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("liteload-checkpoint".into())
            .spawn(move || run(conn, &theirs))
            .map_err(|e| Error::io(None, e))?;
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        Ok(Checkpointer {
            shared,
            wal: wal.into(),
            bound,
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint of everything committed so far; returns at once.
    pub fn request(&self) {
        let (lock, cv) = &*self.shared;
        if let Ok(mut s) = lock.lock() {
            s.requested += 1;
            cv.notify_all();
        }
    }

    /// Before a commit: if the WAL has grown past its bound, waits until the checkpoints
    /// asked for are done, so that the commit starts the WAL over.
    pub fn before_commit(&self) {
        let big = std::fs::metadata(&self.wal).is_ok_and(|m| m.len() > self.bound);
        if !big {
            return;
        }
        let (lock, cv) = &*self.shared;
        let Ok(mut s) = lock.lock() else { return };
        while s.done < s.requested && !s.stop {
            s = match cv.wait(s) {
                Ok(s) => s,
                Err(_) => return,
            };
        }
    }
}

fn run(conn: Connection, shared: &Shared) {
    let (lock, cv) = &**shared;
    loop {
        let target = {
            let Ok(mut s) = lock.lock() else { return };
            while s.done == s.requested && !s.stop {
                s = match cv.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
            if s.done == s.requested {
                return;
            }
            s.requested
        };
        // Best effort, as SQLite's automatic checkpoint: a reader that holds old frames
        // only shortens it, and the next one goes on from there.
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
        let Ok(mut s) = lock.lock() else { return };
        s.done = target;
        cv.notify_all();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        if let Ok(mut s) = self.shared.0.lock() {
            s.stop = true;
            self.shared.1.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits that follow each other without a pause keep the WAL within its bound
    /// (plus one commit's frames), every row is there, and the database is sound.
    #[test]
    fn the_wal_stays_bounded_and_every_commit_is_kept() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let db = dir.path().join("c.db");
        let pragmas = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
        let conn = Connection::open(&db).map_err(|e| Error::sqlite("open", e))?;
        conn.execute_batch(pragmas)
            .and_then(|()| conn.execute_batch("CREATE TABLE t(x)"))
            .map_err(|e| Error::sqlite("setup", e))?;
        let bound = 2 << 20;
        let cp = Checkpointer::start(&conn, &db, pragmas, bound)?;
        let blob = vec![7u8; 64 << 10];
        let mut biggest = 0;
        for _ in 0..200 {
            cp.before_commit();
            conn.execute_batch("BEGIN IMMEDIATE")
                .and_then(|()| {
                    for _ in 0..8 {
                        conn.execute("INSERT INTO t VALUES (?1)", [&blob])?;
                    }
                    conn.execute_batch("COMMIT")
                })
                .map_err(|e| Error::sqlite("commit", e))?;
            cp.request();
            biggest = biggest.max(std::fs::metadata(&cp.wal).map_or(0, |m| m.len()));
        }
        drop(cp);
        // One commit is 8 blobs of 64 KiB; the WAL may pass the bound by a commit or two
        // (a checkpoint under way when it is crossed).
        assert!(biggest < bound + (3 << 20), "WAL grew to {biggest} bytes");
        let (n, ok): (i64, String) = conn
            .query_row(
                "SELECT count(*), (SELECT * FROM pragma_integrity_check) FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| Error::sqlite("check", e))?;
        assert_eq!((n, ok.as_str()), (1600, "ok"));
        Ok(())
    }
}
