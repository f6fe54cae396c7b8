//! What the page writer's sink does to a file it finished before anything else sees it
//! ([`complete`]), its default page size, and its errors as the library's.
//!
//! Durability of a new file is `atomic-new`, as for the SQLite path: the file is built
//! at [`crate::durability::temp_path`], synced, optionally checked by SQLite (`verify`:
//! `PRAGMA integrity_check` must say ok), and only then linked into place. An error or a
//! kill leaves no file at the target.

use std::path::Path;

use crate::error::{Error, Result};

/// SQLite's default page size, used when none is asked for.
pub const DEFAULT_PAGE_SIZE: u32 = 4096;

/// A page writer's error: I/O as I/O (with the file when known), the rest as a plan error.
pub(crate) fn from_btree(e: liteload_btree::Error, path: Option<&Path>) -> Error {
    match e {
        liteload_btree::Error::Io(io) => Error::io(path.map(Path::to_path_buf), io),
        e @ liteload_btree::Error::PageSize(_) => Error::usage(e.to_string()),
        other => Error::internal(other.to_string()),
    }
}
/// The last steps on a file the page writer finished at `tmp`, before anything else
/// sees it: SQLite runs `after` (CREATE INDEX … the page writer left to it) with its
/// journal in memory (a crash leaves no file at the target), reads the schema back
/// ([`crate::names::check_schema`]: a schema it refuses is a bug, never a success), and
/// with `verify` checks the file (`integrity_check` must say ok); then `progress` must
/// not be cancelled.
pub(crate) fn complete(
    tmp: &Path,
    after: &[String],
    verify: bool,
    progress: &crate::progress::Progress,
) -> Result<()> {
    {
        let conn = rusqlite::Connection::open(tmp)
            .map_err(|e| Error::sqlite("opening the written file", e))?;
        // The page writer's own schema rows; what `after` adds, SQLite makes itself.
        crate::names::check_schema(&conn)?;
        // Indexes and the like: SQLite builds them on the finished file, still under
        // the temp name, journal in memory (a crash leaves no file at the target).
        if !after.is_empty() {
            crate::sqlite_info::configure(&conn)
                .map_err(|e| Error::sqlite("configuring the connection", e))?;
            conn.execute_batch(crate::durability::Durability::AtomicNew.pragmas())
                .map_err(|e| Error::sqlite("setting up the written file", e))?;
        }
        for sql in after {
            progress.check()?;
            conn.execute_batch(sql).map_err(|e| {
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) {
                    // The data does not fit the index asked for: as on SQLite's path.
                    Error::constraint(
                        crate::error::extended_code(&e),
                        None,
                        format!("{sql}: two rows have the same key ({e})"),
                    )
                } else {
                    Error::sqlite(format!("running {sql}"), e)
                }
            })?;
        }
        conn.close()
            .map_err(|(_, e)| Error::sqlite("closing the written file", e))?;
    }
    if verify {
        let conn = rusqlite::Connection::open(tmp)
            .map_err(|e| Error::sqlite("opening the written file to verify it", e))?;
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("running integrity_check", e))?;
        if ok != "ok" {
            return Err(Error::internal(format!(
                "verifying: SQLite's integrity_check found problems in the written file: {ok}"
            )));
        }
    }
    progress.check()
}
