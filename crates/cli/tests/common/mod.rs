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

/// Starts `liteload ingest ARGS` in `dir`, its stderr piped (for the listening address).
#[allow(dead_code)]
pub fn spawn_ingest(dir: &Path, args: &[&str]) -> std::io::Result<std::process::Child> {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("liteload"))
        .current_dir(dir)
        .arg("ingest")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
}

/// The address a listening ingest prints first on stderr, and the rest of its stderr.
#[allow(dead_code)]
pub fn listening_addr(
    child: &mut std::process::Child,
) -> Result<(String, std::io::BufReader<std::process::ChildStderr>), Box<dyn std::error::Error>> {
    use std::io::BufRead;
    let mut err = std::io::BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let mut first = String::new();
    err.read_line(&mut first)?;
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .ok_or(format!("unexpected: {first}"))?
        .to_string();
    Ok((addr, err))
}

/// Sends SIGTERM to `child` and tells whether it then exited 0.
#[allow(dead_code)]
pub fn terminate(child: &mut std::process::Child) -> Result<bool, Box<dyn std::error::Error>> {
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    Ok(child.wait()?.success())
}
