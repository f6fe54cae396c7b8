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
