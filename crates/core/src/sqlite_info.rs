//! The SQLite that liteload is built with: its version and compile-time options, and
//! the settings every connection liteload opens gets.
//!
//! SQLite's compile-time options are set by whoever builds `libsqlite3-sys`: the
//! `LIBSQLITE3_FLAGS` environment variable of the final build. This workspace sets it
//! in `.cargo/config.toml` ([`WANTED`]); a program that depends on liteload builds
//! SQLite with its own, so it either copies that line into its own
//! `.cargo/config.toml` or runs without them. None of them changes what is stored:
//! the one that changes behaviour, `SQLITE_DQS=0` (a double-quoted word is never a
//! string), is also set on every connection liteload opens ([`configure`]); the others
//! are speed (no memory-statistics mutex on every allocation, no shared cache).
//! [`build_info`] says which of them the linked SQLite lacks.

use rusqlite::config::DbConfig;
use rusqlite::Connection;

/// The compile-time options this workspace builds SQLite with (as
/// `PRAGMA compile_options` names them).
pub const WANTED: [&str; 5] = [
    "DEFAULT_MEMSTATUS=0",
    "OMIT_SHARED_CACHE",
    "OMIT_DEPRECATED",
    "DQS=0",
    "ENABLE_STAT4",
];

/// The linked SQLite.
#[derive(Clone, Debug)]
pub struct BuildInfo {
    /// `sqlite_version()`.
    pub version: String,
    /// `PRAGMA compile_options`.
    pub compile_options: Vec<String>,
    /// Options of [`WANTED`] it was built without (a dependent's own build).
    pub missing: Vec<&'static str>,
}

/// The linked SQLite's version and options.
pub fn info() -> rusqlite::Result<BuildInfo> {
    let (version, compile_options) = build_info()?;
    let missing = WANTED
        .into_iter()
        .filter(|w| !compile_options.iter().any(|o| o == w))
        .collect();
    Ok(BuildInfo {
        version,
        compile_options,
        missing,
    })
}

/// Sets what liteload relies on, on a connection it opened: double-quoted words are
/// identifiers only, never strings (as `SQLITE_DQS=0` makes it for every connection),
/// so a misquoted identifier is an error instead of a silent string.
///
/// Foreign keys are not enforced, as on a plain `sqlite3` connection (SQLite's default,
/// which the bundled build turns around): a load never deletes or changes rows of a
/// table it was not asked to load (an `OR REPLACE` of a parent row would delete its
/// children through `ON DELETE CASCADE`). `PRAGMA foreign_key_check` after a load finds
/// rows whose parent is missing.
pub fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "foreign_keys", false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DML, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DDL, false)?;
    Ok(())
}

/// Whether `path` is a SQLite database: a regular file (never a pipe, whose bytes a
/// look would take) that starts with SQLite's header, `SQLite format 3` and a NUL.
pub fn is_sqlite_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
        && std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
        && &head == b"SQLite format 3\0"
}

/// Whether the database file at `path` says it is in WAL mode (its header's file format
/// versions are 2).
pub(crate) fn header_in_wal_mode(path: &std::path::Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 20];
    std::fs::File::open(path)?.read_exact(&mut head)?;
    Ok(head[18] == 2 && head[19] == 2)
}

/// Opens the database at `path` (in WAL mode) as a connection that must be its only
/// one: SQLite's EXCLUSIVE locking mode, set before anything is read, so that it uses no
/// shared memory and its first read takes the EXCLUSIVE lock on the database file and
/// keeps it until it closes (refused while another connection has the file open: in WAL
/// mode each holds a SHARED lock on it while open); and no checkpoint when it closes,
/// which would also remove the WAL file, even one another process opened after this
/// process's locks were dropped (closing any descriptor of the file drops them). Its
/// page cache trusts the lock: what is written to the file past this connection is not
/// seen by it, so a caller that does so closes it and reads through another.
pub(crate) fn open_exclusive(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE")?;
    configure(&conn)?;
    Ok(conn)
}

/// Whether no other connection has the database at `path` open, for a file in WAL
/// mode: a connection of [`open_exclusive`] gets its lock at once. Nothing is written
/// (the WAL is read, not checkpointed).
pub(crate) fn alone_in_wal(path: &std::path::Path) -> bool {
    let probe = || -> rusqlite::Result<()> {
        let conn = open_exclusive(path)?;
        conn.busy_timeout(std::time::Duration::ZERO)?;
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
    };
    probe().is_ok()
}

/// SQLite's version and `PRAGMA compile_options`, read from the linked library.
pub fn build_info() -> rusqlite::Result<(String, Vec<String>)> {
    let c = Connection::open_in_memory()?;
    let version: String = c.query_row("SELECT sqlite_version()", [], |r| r.get(0))?;
    let mut stmt = c.prepare("PRAGMA compile_options")?;
    let opts = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((version, opts))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundled_build_has_our_options() -> rusqlite::Result<()> {
        let i = super::info()?;
        assert!(i.version.starts_with("3."));
        assert!(i.missing.is_empty(), "{:?}", i.compile_options);
        Ok(())
    }

    #[test]
    fn a_double_quoted_word_is_never_a_string() -> rusqlite::Result<()> {
        let c = rusqlite::Connection::open_in_memory()?;
        super::configure(&c)?;
        c.execute_batch("CREATE TABLE t(a)")?;
        let e = c
            .execute_batch("INSERT INTO t VALUES (\"no_such_column\")")
            .unwrap_err();
        assert!(e.to_string().contains("no such column"), "{e}");
        Ok(())
    }
}
