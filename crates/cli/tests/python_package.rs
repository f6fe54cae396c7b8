//! The Python package (`python/`): `pip install ./python` into a fresh virtual
//! environment, then its pytest suite (`python/tests`), which checks `liteload.write`,
//! `import_file` (against the `liteload` command the same install puts on the PATH),
//! `generate`, `ingest`, `KvStore`, the exceptions and Ctrl-C.
//!
//! The environment lives under the target directory and is made once (again when
//! `python/tests/requirements.txt` changes); maturin comes from those requirements, so
//! the package builds without build isolation, and its Rust build keeps its own target
//! directory there (incremental on later runs). A fresh machine needs Python 3 and
//! pip's registry.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn venv() -> PathBuf {
    common::python_venv(
        "python-package-venv",
        &Path::new(ROOT).join("python/tests/requirements.txt"),
    )
}

#[test]
fn pip_install_then_the_pytest_suite() {
    let venv = venv();
    let python = venv.join("bin/python");
    // The environment's bin first on the PATH: maturin for the build, then the
    // `liteload` command the install made for the tests.
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    common::run_ok(
        Command::new(&python)
            .current_dir(ROOT)
            .env("PATH", &path)
            .env(
                "CARGO_TARGET_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-build"),
            )
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-build-isolation",
                "--no-deps",
                "--force-reinstall",
                "./python",
            ]),
    );
    // Run from a scratch directory, so that pytest and hypothesis leave nothing in the
    // repository.
    let scratch = tempfile::tempdir().expect("a temp dir");
    let status = Command::new(&python)
        .current_dir(scratch.path())
        .env("PATH", path)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(Path::new(ROOT).join("python/tests"))
        .status()
        .expect("running pytest");
    assert!(status.success(), "the Python package's tests failed");
}
