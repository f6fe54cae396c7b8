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

/// Runs `cmd` and returns its stdout; panics with its output when it fails.
#[allow(dead_code)]
pub fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Python virtual environment named `name` under the target directory, with
/// `requirements` installed by pip: made once, and again when the requirements file
/// changes (a marker inside holds the text it was made from). A fresh machine needs only
/// Python 3 and pip's registry.
#[allow(dead_code)]
pub fn python_venv(name: &str, requirements: &Path) -> std::path::PathBuf {
    use std::process::Command;
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let wanted = std::fs::read_to_string(requirements).expect("the requirements");
    let marker = venv.join("liteload-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        let _ = std::fs::remove_dir_all(&venv);
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run_ok(
            Command::new(venv.join("bin/python"))
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(requirements),
        );
        std::fs::write(&marker, &wanted).expect("writing the marker");
    }
    venv
}
