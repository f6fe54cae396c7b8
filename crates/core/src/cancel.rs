//! [`CancelWatch`]: a cancelled load stops inside a long SQLite statement too.
//!
//! A load checks [`Progress::cancel`] between batches, indexes and page groups; a single
//! statement of SQLite's can run for seconds (moving a side file's 3M rows in, merging
//! 1M upserts, building an index on 10M rows), and a cancel then waited for it. While a
//! watch lives, a thread looks at the stop switch every [`LOOK_EVERY`] and, once it is
//! set, interrupts the connection (`sqlite3_interrupt`): the running statement fails with
//! `SQLITE_INTERRUPT`, which [`crate::Error::sqlite`] reports as
//! [`crate::ErrorKind::Interrupted`], and the load's transaction is rolled back as for
//! any other failure.
//!
//! Only on liteload's own connections: SQLite rolls back the whole transaction of an
//! interrupted INSERT, UPDATE or DELETE, so a caller's connection (a load into it runs in
//! a savepoint inside the caller's transaction) is never interrupted; such a load stops
//! between batches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::progress::Progress;

/// How often the watch looks at the stop switch.
const LOOK_EVERY: Duration = Duration::from_millis(20);

pub(crate) struct CancelWatch {
    /// Set (and signalled) when the watch is dropped.
    done: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl CancelWatch {
    /// Interrupts `conn` once `progress` is cancelled, until this is dropped. Without a
    /// thread (none could be started) the load still stops between statements.
    pub(crate) fn new(conn: &Connection, progress: &Progress) -> CancelWatch {
        let handle = conn.get_interrupt_handle();
        let cancelled: Arc<AtomicBool> = progress.cancel_flag();
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let theirs = done.clone();
        let thread = std::thread::Builder::new()
            .name("liteload-cancel".into())
            .spawn(move || {
                let (lock, cv) = &*theirs;
                let Ok(mut finished) = lock.lock() else {
                    return;
                };
                loop {
                    if *finished {
                        return;
                    }
                    if cancelled.load(Ordering::Relaxed) {
                        handle.interrupt();
                        return;
                    }
                    finished = match cv.wait_timeout(finished, LOOK_EVERY) {
                        Ok((f, _)) => f,
                        Err(_) => return,
                    };
                }
            })
            .ok();
        CancelWatch { done, thread }
    }
}

impl Drop for CancelWatch {
    fn drop(&mut self) {
        if let Ok(mut finished) = self.done.0.lock() {
            *finished = true;
            self.done.1.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::error::{Error, ErrorKind};

    /// A statement that would run for minutes stops soon after the cancel, as
    /// `Interrupted`; the connection is usable after; a watch dropped before any cancel
    /// interrupts nothing.
    #[test]
    fn a_cancel_stops_a_running_statement() {
        let conn = Connection::open_in_memory().unwrap();
        let progress = Arc::new(Progress::default());
        {
            let _idle = CancelWatch::new(&conn, &progress);
        }
        let endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
                       WHERE i < 4000000000) SELECT count(*) FROM n";
        let watch = CancelWatch::new(&conn, &progress);
        let p = progress.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            p.cancel();
        });
        let t0 = Instant::now();
        let e = conn
            .query_row(endless, [], |r| r.get::<_, i64>(0))
            .map_err(|e| Error::sqlite("counting", e))
            .expect_err("interrupted");
        canceller.join().unwrap();
        assert!(matches!(e.kind(), ErrorKind::Interrupted), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        drop(watch);
        let one: i64 = conn.query_row("SELECT 1", [], |r| r.get(0)).unwrap();
        assert_eq!(one, 1);
    }
}
