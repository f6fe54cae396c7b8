//! Parquet and Arrow files as other tools write them (pyarrow with several codecs, page
//! versions and row-group sizes, a Feather file, DuckDB's own Parquet writer), loaded by
//! `liteload import` with both engines and compared value by value with DuckDB's reading
//! of the same file (`tests/foreign/check.py`, which also runs `integrity_check`).
//!
//! The writers and DuckDB come from `tests/foreign/requirements.txt`, installed by this
//! test with pip into a virtual environment of its own under the target directory (once;
//! again when the requirements change), so a fresh machine needs only Python 3 and pip's
//! registry.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const FOREIGN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/foreign");

use common::run_ok as run;

/// The Python of the test's virtual environment.
fn python() -> PathBuf {
    let requirements = Path::new(FOREIGN).join("requirements.txt");
    common::python_venv("foreign-writers-venv", &requirements)
        .join("bin")
        .join("python")
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
