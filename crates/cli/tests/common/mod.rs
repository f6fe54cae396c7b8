//! Helpers shared by the integration tests.

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::Connection;

/// Opens `db`, asserts that `PRAGMA integrity_check` is `ok`, and returns every row of
/// `sql`, each value as SQLite stored it.
pub fn checked_rows(db: &Path, sql: &str) -> rusqlite::Result<Vec<Vec<Value>>> {
    let c = Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok", "integrity_check of {}", db.display());
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
