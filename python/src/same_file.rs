//! Refusing a database that this process has open through another copy of SQLite.
//!
//! Python's `sqlite3` module (and pandas or SQLAlchemy over it) is a second SQLite in
//! the process beside the one liteload carries. Two copies do not see each other's
//! locks, and POSIX locks belong to the process, so a write beside an open `sqlite3`
//! connection can lose that connection's writes or corrupt the file (see
//! `liteload::same_process`). Coordinating would need both to be one library copy,
//! which a wheel cannot promise, so the package refuses instead: before a job or a
//! store's write touches a file, every descriptor this process has on it must be one
//! that liteload's own SQLite opened; any other means another SQLite (or the program
//! itself) has it open.
//!
//! Which descriptors are liteload's: those that appeared on the file while the package
//! opened a store or ran a job on it, kept while one of its stores is open there (its
//! SQLite keeps a closed connection's descriptor open while another of its connections
//! holds a lock on the file). With no store open, liteload's SQLite has no descriptor
//! on the file, so every one is another's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use pyo3::PyResult;

use liteload::same_process::{descriptors, file_id};

use crate::errors::usage;

/// Per file identity: the package's open stores there, and the descriptors its SQLite
/// opened on the file while they are open.
#[derive(Default)]
struct Own {
    stores: usize,
    fds: BTreeSet<i32>,
}

static OWN: Mutex<BTreeMap<(u64, u64), Own>> = Mutex::new(BTreeMap::new());

fn own() -> std::sync::MutexGuard<'static, BTreeMap<(u64, u64), Own>> {
    OWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// The descriptors on `path` now; empty when it does not exist or they cannot be
/// listed.
fn open_on(path: &Path) -> Option<((u64, u64), Vec<i32>)> {
    let id = file_id(path)?;
    Some((id, descriptors(id)?))
}

/// Raises `UsageError`, before anything is written, when this process has `path` open
/// other than through liteload's own SQLite. A file that does not exist yet, or a
/// platform that cannot list descriptors, passes.
pub fn check(path: &Path) -> PyResult<()> {
    match file_id(path) {
        Some(id) => check_id(id, path),
        None => Ok(()),
    }
}

/// As [`check`], for the file `id` (shown as `path`).
pub fn check_id(id: (u64, u64), path: &Path) -> PyResult<()> {
    let Some(fds) = descriptors(id) else {
        return Ok(());
    };
    let foreign = {
        let own = own();
        let mine = own.get(&id).map(|o| &o.fds);
        fds.iter().any(|fd| !mine.is_some_and(|m| m.contains(fd)))
    };
    if !foreign {
        return Ok(());
    }
    Err(usage(format!(
        "{} is open in this process through another copy of SQLite (a sqlite3.connect() \
         connection, or a pandas or SQLAlchemy engine's): liteload carries its own SQLite, \
         and two copies in one process do not see each other's locks, so writing now could \
         lose that connection's writes or corrupt the file. Nothing was written. Close those \
         connections first (con.close(), engine.dispose()), or load from another process \
         (the liteload command, or multiprocessing)",
        path.display()
    )))
}

/// Runs a job on `path` after [`check`]; the descriptors that appeared on the file
/// while it ran are liteload's own while a store of the package is open there.
pub fn job<T>(path: &Path, run: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    check(path)?;
    let before = open_on(path).map(|(_, f)| f).unwrap_or_default();
    let out = run();
    if let Some((id, after)) = open_on(path) {
        if let Some(o) = own().get_mut(&id) {
            o.fds
                .extend(after.into_iter().filter(|fd| !before.contains(fd)));
        }
    }
    out
}

/// One open store of the package on a file: its descriptors are liteload's own while
/// this lives.
pub struct Held {
    id: (u64, u64),
}

impl Held {
    /// Opens a store on `path` with `open`, after [`check`], and counts the descriptors
    /// that appeared as liteload's own.
    pub fn open<T>(path: &Path, open: impl FnOnce() -> PyResult<T>) -> PyResult<(T, Option<Held>)> {
        check(path)?;
        let before = open_on(path).map(|(_, f)| f).unwrap_or_default();
        let store = open()?;
        let held = open_on(path).map(|(id, after)| {
            let mut own = own();
            let o = own.entry(id).or_default();
            o.stores += 1;
            o.fds
                .extend(after.into_iter().filter(|fd| !before.contains(fd)));
            Held { id }
        });
        Ok((store, held))
    }

    /// The file's identity.
    pub fn id(&self) -> (u64, u64) {
        self.id
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut own = own();
        if let Some(o) = own.get_mut(&self.id) {
            o.stores = o.stores.saturating_sub(1);
            if o.stores == 0 {
                own.remove(&self.id);
            }
        }
    }
}
