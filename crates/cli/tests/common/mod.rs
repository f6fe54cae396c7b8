//! Helpers shared by the integration tests.

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::Connection;

/// Opens `db` after asserting that SQLite's `PRAGMA integrity_check` says `ok`: every
/// database a test reads is opened through here.
#[allow(dead_code)] // not every test binary uses both helpers
pub fn open_checked(db: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok", "integrity_check of {}", db.display());
    Ok(c)
}

/// Opens `db` through [`open_checked`] and returns every row of `sql`, each value as
/// SQLite stored it.
#[allow(dead_code)]
pub fn checked_rows(db: &Path, sql: &str) -> rusqlite::Result<Vec<Vec<Value>>> {
    let c = open_checked(db)?;
    let mut stmt = c.prepare(sql)?;
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| r.get::<_, Value>(i))
                .collect::<rusqlite::Result<Vec<_>>>()
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
