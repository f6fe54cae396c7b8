//! Parquet and Arrow files as other tools write them (pyarrow with several codecs, page
//! versions and row-group sizes, a Feather file, DuckDB's own Parquet writer), loaded by
//! `liteload import` with both engines and compared value by value with DuckDB's reading
//! of the same file (`tests/foreign/check.py`, which also runs `integrity_check`).
//!
//! The writers and DuckDB come from `tests/foreign/requirements.txt`, installed by this
//! test with pip into a virtual environment of its own under the target directory (once;
//! again when the requirements change), so a fresh machine needs only Python 3 and pip's
//! registry.

use std::path::{Path, PathBuf};
use std::process::Command;

const FOREIGN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/foreign");

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The Python of the test's virtual environment, installed if it is not (or holds other
/// versions than the requirements name).
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("foreign-writers-venv");
    let requirements = Path::new(FOREIGN).join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("the requirements");
    let marker = venv.join("liteload-installed.txt");
    let python = venv.join("bin").join("python");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        let _ = std::fs::remove_dir_all(&venv);
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements));
        std::fs::write(&marker, &wanted).expect("writing the marker");
    }
    python
}

#[test]
fn files_written_by_pyarrow_and_duckdb_load_as_duckdb_reads_them() {
    let python = python();
    let dir = tempfile::tempdir().expect("a temp dir");
    let made = run(Command::new(&python)
        .arg(Path::new(FOREIGN).join("make.py"))
        .arg(dir.path()));
    let files: Vec<&str> = made.lines().filter(|l| !l.is_empty()).collect();
    assert!(files.len() >= 6, "make.py wrote {files:?}");
    for file in files {
        for engine in ["direct", "sqlite"] {
            let db = dir.path().join(format!("{file}.{engine}.db"));
            run(Command::new(assert_cmd::cargo::cargo_bin("liteload"))
                .current_dir(dir.path())
                .args(["import", "-q", "--table", "t", "--engine", engine])
                .arg(&db)
                .arg(file));
            run(Command::new(&python)
                .arg(Path::new(FOREIGN).join("check.py"))
                .arg(dir.path().join(file))
                .arg(&db)
                .arg("t"));
        }
    }
}
