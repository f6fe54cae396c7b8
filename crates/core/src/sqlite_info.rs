//! The SQLite that liteload is built with: its version and compile-time options.
//!
//! The bundled SQLite is compiled with the options in `.cargo/config.toml`
//! (`LIBSQLITE3_FLAGS`): no memory-statistics mutex on every allocation
//! (`SQLITE_DEFAULT_MEMSTATUS=0`), no shared cache, no deprecated interfaces.

use rusqlite::Connection;

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
        let (version, opts) = super::build_info()?;
        assert!(version.starts_with("3."));
        assert!(opts.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{opts:?}");
        Ok(())
    }
}
