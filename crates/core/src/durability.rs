//! Durability profiles: what a crash may leave, as PRAGMA sets and file protocols.
//!
//! | profile      | how                                                   | a crash leaves                     |
//! |--------------|-------------------------------------------------------|------------------------------------|
//! | `atomic-new` | build `DB.liteload-tmp` (journal in memory, no fsync, | no DB, or the complete DB          |
//! |              | exclusive lock), fsync it, link it to DB, fsync dir   |                                    |
//! | `balanced`   | WAL, synchronous=NORMAL, one transaction              | DB as of the last commit           |
//! | `durable`    | WAL, synchronous=FULL, one transaction                | every commit that returned         |
//! | `unsafe`     | journal OFF, synchronous OFF, in place                | possibly a corrupt DB              |
//!
//! An append through the page writer's side file (`crate::sink::target`) runs its one
//! transaction with a rollback journal under `balanced` and `durable` (synchronous FULL
//! and EXTRA), which promises the same after a crash; pages new to the file are then
//! written once instead of to the WAL and again at checkpoint. The file is back in WAL
//! mode after the commit.
//!
//! `atomic-new` keeps the rollback journal in memory rather than OFF: pages that did not
//! exist when the transaction began are never journaled, so for a new file the journal
//! stays tiny, and a statement that fails half way (a duplicate key in a multi-row
//! INSERT) is still undone exactly, which journal_mode=OFF cannot promise.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Hint, Result};

/// A durability profile. See the module docs for what each promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// A new file built beside its name and moved into place whole (see the module notes).
    AtomicNew,
    /// WAL with `synchronous=NORMAL`: an existing file changed in one transaction.
    Balanced,
    /// WAL with `synchronous=FULL`: a committed load survives a power loss.
    Durable,
    /// No journal, no sync: a crash can leave the file corrupt.
    Unsafe,
}

impl Durability {
    /// The profile's name: `atomic-new`, `balanced`, `durable` or `unsafe`.
    pub fn name(self) -> &'static str {
        match self {
            Durability::AtomicNew => "atomic-new",
            Durability::Balanced => "balanced",
            Durability::Durable => "durable",
            Durability::Unsafe => "unsafe",
        }
    }

    /// The PRAGMAs of this profile, run on a fresh connection before anything else.
    pub fn pragmas(self) -> &'static str {
        match self {
            Durability::AtomicNew => {
                "PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
            }
            Durability::Balanced => "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            Durability::Durable => "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
            Durability::Unsafe => {
                "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
            }
        }
    }
}

impl Durability {
    /// The PRAGMAs of this profile for a database that others read while it is being
    /// written (a kv store, an ingest table): like [`Durability::pragmas`] but never an
    /// exclusive lock. `atomic-new` does not apply to a file written in place.
    pub fn shared_pragmas(self) -> Result<&'static str> {
        match self {
            Durability::AtomicNew => Err(Error::usage(
                "atomic-new builds a new file; a database written in place takes balanced, durable or unsafe",
            )),
            Durability::Balanced | Durability::Durable => Ok(self.pragmas()),
            Durability::Unsafe => Ok("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"),
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "atomic-new" => Ok(Durability::AtomicNew),
            "balanced" => Ok(Durability::Balanced),
            "durable" => Ok(Durability::Durable),
            "unsafe" => Ok(Durability::Unsafe),
            other => Err(format!(
                "unknown durability {other:?} (expected atomic-new, balanced, durable or unsafe)"
            )),
        }
    }
}

/// Settings that shape the file, applied before the first table is created.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct FileSettings {
    /// Page size in bytes (a power of two, 512..=65536); only for a new file.
    pub page_size: Option<u32>,
    /// SQLite's `cache_size`: pages if positive, KiB if negative.
    pub cache_size: Option<i64>,
}

impl FileSettings {
    /// A page size and a cache size (`None`: SQLite's default for each).
    pub fn new(page_size: Option<u32>, cache_size: Option<i64>) -> Self {
        FileSettings {
            page_size,
            cache_size,
        }
    }

    /// A page size SQLite takes (a power of two from 512 to 65536), or none.
    pub(crate) fn check(&self) -> crate::Result<()> {
        match self.page_size {
            Some(ps) if !(512..=65536).contains(&ps) || !ps.is_power_of_two() => {
                Err(crate::Error::usage(format!(
                    "page size {ps}: expected a power of two from 512 to 65536"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// The name of the temp file an `atomic-new` load of `target` builds.
pub fn temp_path(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".liteload-tmp");
    PathBuf::from(s)
}

/// Makes the complete database file `tmp` appear at `path` in one step: `tmp` is synced,
/// linked to `path` (never replacing a file that appeared meanwhile; renamed where links
/// are unsupported) and removed, and the directory is synced.
pub fn publish(tmp: &Path, path: &Path) -> Result<()> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::io(Some(p), e)
    };
    File::open(tmp)
        .and_then(|f| f.sync_all())
        .map_err(io(tmp))?;
    match fs::hard_link(tmp, path) {
        Ok(()) => fs::remove_file(tmp).map_err(io(tmp))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::usage(format!(
                "{} appeared while this load ran; the loaded database is kept at {}",
                path.display(),
                tmp.display()
            )))
        }
        Err(_) => fs::rename(tmp, path).map_err(io(tmp))?,
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(io(&dir))?;
    Ok(())
}

/// A database open for one load, inside one transaction.
pub struct Target {
    /// The connection, inside the load's transaction.
    pub conn: Connection,
    /// The file the connection writes (the temp file for `AtomicNew`).
    pub path: PathBuf,
    /// The profile in force.
    pub durability: Durability,
    tmp: Option<PathBuf>,
    /// An existing file in a rollback-journal mode under a WAL profile: the load runs in
    /// its rollback journal (`synchronous=FULL`, as safe as the profile) and the file
    /// enters WAL mode only after the commit. WAL mode is recorded in the file's header
    /// (bytes 18 and 19, and leaving it again bumps the change counter), so switching
    /// before the load would change the file even when the load fails.
    wal_after_commit: bool,
    /// Things the user should know (a stale temp file removed, …).
    pub notes: Vec<String>,
}

/// Opens `path` for a load and begins its transaction. `requested` overrides the default
/// profile: `atomic-new` for a file that does not exist, `balanced` for one that does.
pub fn open(path: &Path, requested: Option<Durability>, settings: FileSettings) -> Result<Target> {
    let exists = path.exists();
    let durability = requested.unwrap_or(if exists {
        Durability::Balanced
    } else {
        Durability::AtomicNew
    });
    let mut notes = vec![];
    if durability == Durability::AtomicNew && exists {
        return Err(Error::usage(format!(
            "{}: durability atomic-new builds a new file, but this one exists",
            path.display()
        ))
        .with_hint(Hint::Append));
    }
    // A temp file from a killed run is removed whatever this run's profile: a kill after
    // the link into place (but before the unlink) leaves one beside a complete DB.
    let stale = temp_path(path);
    notes.extend(clear_stale(&stale)?);
    if !exists {
        usable_directory(path)?;
    }
    let (open_path, tmp) = if durability == Durability::AtomicNew {
        (stale.clone(), Some(stale))
    } else {
        (path.to_path_buf(), None)
    };
    let conn = Connection::open_with_flags(
        &open_path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(format!("opening {}", open_path.display()), e))?;
    let mut wal_after_commit = false;
    let mut setup = || -> rusqlite::Result<()> {
        crate::sqlite_info::configure(&conn)?;
        if exists && matches!(durability, Durability::Balanced | Durability::Durable) {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            wal_after_commit = !mode.eq_ignore_ascii_case("wal");
        }
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        if let Some(ps) = settings.page_size {
            if !exists {
                conn.execute_batch(&format!("PRAGMA page_size={ps};"))?;
            }
        }
        conn.execute_batch(match (wal_after_commit, durability) {
            (true, Durability::Durable) => "PRAGMA synchronous=EXTRA;",
            (true, _) => "PRAGMA synchronous=FULL;",
            _ => durability.pragmas(),
        })?;
        if let Some(cs) = settings.cache_size {
            conn.execute_batch(&format!("PRAGMA cache_size={cs};"))?;
        }
        conn.execute_batch(
            if durability == Durability::Balanced || durability == Durability::Durable {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN EXCLUSIVE"
            },
        )
    };
    if let Err(e) = setup() {
        drop(conn);
        if let Some(t) = &tmp {
            let _ = fs::remove_file(t);
        }
        return Err(Error::sqlite(format!("preparing {}", path.display()), e));
    }
    Ok(Target {
        conn,
        path: path.to_path_buf(),
        durability,
        tmp,
        wal_after_commit,
        notes,
    })
}

/// The temp file a new database at `db` is built as, cleared of one a killed run left
/// ([`clear_stale`]) and checked to be makeable there ([`usable_directory`]); with the
/// note for the user, if a stale one was removed. Every engine that builds a new file
/// starts here.
pub(crate) fn new_file_temp(db: &Path) -> Result<(PathBuf, Option<String>)> {
    let tmp = temp_path(db);
    let note = clear_stale(&tmp)?;
    usable_directory(db)?;
    Ok((tmp, note))
}

/// Checks that a new database can be made at `db`: its directory exists, is a
/// directory, and takes new files (tried by creating and removing `db`'s temp file,
/// which must not exist: call after [`clear_stale`]). The error is an I/O error naming
/// `db`, the user's path, not an internal file.
pub(crate) fn usable_directory(db: &Path) -> Result<()> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let fail = |kind: std::io::ErrorKind, why: String| {
        Err(Error::io(
            Some(db.to_path_buf()),
            std::io::Error::new(kind, why),
        ))
    };
    match fs::metadata(&dir) {
        Err(e) => {
            return fail(
                e.kind(),
                format!("its directory {} cannot be used: {e}", dir.display()),
            )
        }
        Ok(m) if !m.is_dir() => {
            return fail(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            )
        }
        Ok(_) => {}
    }
    let probe = temp_path(db);
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            drop(f);
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => fail(
            e.kind(),
            format!(
                "cannot create a file in its directory {}: {e}",
                dir.display()
            ),
        ),
    }
}

/// Removes a temp file left by a killed run, unless a live run still holds its lock.
/// Removes `tmp`, a load's temp file, if one is there and no liteload run holds it;
/// returns the note for the user.
pub(crate) fn clear_stale(tmp: &Path) -> Result<Option<String>> {
    if !tmp.exists() {
        return Ok(None);
    }
    remove_stale(tmp)?;
    Ok(Some(format!(
        "removed {} left by an interrupted run",
        tmp.display()
    )))
}

fn remove_stale(tmp: &Path) -> Result<()> {
    // The page writer holds an advisory lock on the file it builds (SeqFile); SQLite
    // holds its own locks while it finishes one.
    let writing = File::open(tmp)
        .is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)));
    let busy = writing
        || (|| -> rusqlite::Result<bool> {
            let c = Connection::open_with_flags(tmp, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
            c.busy_timeout(std::time::Duration::ZERO)?;
            match c.execute_batch("BEGIN EXCLUSIVE; ROLLBACK;") {
                Ok(()) => Ok(false),
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy =>
                {
                    Ok(true)
                }
                // Not a database at all (killed before the header was written): stale.
                Err(_) => Ok(false),
            }
        })()
        .unwrap_or(false);
    if busy {
        return Err(Error::usage(format!(
            "{} is locked: another liteload run is building this database now",
            tmp.display()
        )));
    }
    fs::remove_file(tmp).map_err(|e| Error::io(Some(tmp.to_path_buf()), e))
}

impl Target {
    /// Commits the load and makes it visible: for `atomic-new`, the file is synced and
    /// appears at its name in one step, and the directory is synced.
    pub fn commit(self) -> Result<()> {
        let Target {
            conn,
            path,
            tmp,
            durability,
            wal_after_commit,
            ..
        } = self;
        let file = tmp.as_deref().unwrap_or(&path).display().to_string();
        let closed = match conn.execute_batch("COMMIT") {
            Ok(()) => {
                if wal_after_commit {
                    // Best effort: a reader elsewhere keeps the file in its old mode,
                    // and the rows are committed either way.
                    let _ = conn.execute_batch(durability.pragmas());
                }
                conn.close()
            }
            .map_err(|(_, e)| Error::sqlite(format!("{file}: closing the database"), e)),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                release_wal(&conn);
                drop(conn);
                Err(Error::sqlite(format!("{file}: committing"), e))
            }
        };
        if let Err(e) = closed {
            // A new file that did not commit is no database to keep.
            if let Some(t) = &tmp {
                let _ = fs::remove_file(t);
            }
            return Err(e);
        }
        let Some(tmp) = tmp else { return Ok(()) };
        publish(&tmp, &path)
    }

    /// Abandons the load: the transaction is rolled back, a temp file removed. The target
    /// is as it was before the run.
    pub fn abort(self) {
        let Target { conn, tmp, .. } = self;
        let _ = conn.execute_batch("ROLLBACK");
        release_wal(&conn);
        drop(conn);
        if let Some(t) = tmp {
            let _ = fs::remove_file(t);
        }
    }
}

/// Gives back the disk space a WAL holds: a checkpoint, then the WAL truncated to
/// nothing. After a transaction that failed (a full disk, say), its frames are garbage
/// but keep the WAL's size, and SQLite removes the WAL on close only after a checkpoint,
/// which on a full disk fails: the WAL would keep the disk full. With the committed
/// frames checkpointed beforehand (see [`checkpoint_now`]) this needs no space. Best
/// effort, without waiting for readers; does nothing outside WAL mode.
pub fn release_wal(conn: &rusqlite::Connection) {
    let _ = conn.busy_timeout(std::time::Duration::ZERO);
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);");
}

/// Copies committed WAL frames into the database file now (without waiting for
/// readers), so that a later failed write leaves nothing committed in the WAL that a
/// full disk could keep there (see [`release_wal`]).
pub fn checkpoint_now(conn: &rusqlite::Connection) {
    let _ = conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE);");
}

/// Puts the file of `conn` in WAL mode, as every road leaves a file under `balanced` and
/// `durable` once a load committed; returns the note to give when it stays in rollback
/// mode (another connection has it open, which the switch needs it not to).
pub(crate) fn switch_to_wal(conn: &rusqlite::Connection) -> Option<String> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap_or_default();
    (!mode.eq_ignore_ascii_case("wal")).then(|| {
        "the load is committed, but the database stays in rollback-journal mode: another \
         connection opened it meanwhile"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file the page writer is building is never taken for a killed run's leftover:
    /// a second run is told the database is being built, and the file stays whole.
    #[test]
    fn a_temp_file_being_written_is_not_removed() -> Result<()> {
        let d = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let tmp = temp_path(&d.path().join("t.db"));
        let mut w = liteload_btree::SeqFile::create(&tmp).map_err(|e| Error::io(None, e))?;
        std::io::Write::write_all(&mut w, b"pages").map_err(|e| Error::io(None, e))?;
        let err = clear_stale(&tmp).unwrap_err();
        assert!(err.to_string().contains("another liteload run"), "{err}");
        assert!(tmp.exists());
        // A second writer of the same file is refused before it empties it.
        assert!(liteload_btree::SeqFile::create(&tmp).is_err());
        drop(w);
        assert!(clear_stale(&tmp)?.is_some());
        assert!(!tmp.exists());
        Ok(())
    }

    #[test]
    fn shared_databases_never_take_an_exclusive_lock() {
        for d in [
            Durability::Balanced,
            Durability::Durable,
            Durability::Unsafe,
        ] {
            let p = d.shared_pragmas().unwrap_or_default();
            assert!(
                p.contains("synchronous=") && !p.contains("EXCLUSIVE"),
                "{d:?}: {p}"
            );
        }
        assert!(Durability::AtomicNew.shared_pragmas().is_err());
        assert!(Durability::Unsafe.pragmas().contains("EXCLUSIVE"));
    }
}
