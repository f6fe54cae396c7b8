//! The Python package (`python/`) as a user gets it: the abi3 wheel, built once with the
//! `dist` profile (at most 40 MB), installed into a fresh virtual environment whose
//! PATH has no cargo or rustc, then the package's pytest suite (`python/tests`), which
//! checks `liteload.write`, `import_file` (against the `liteload` command the same
//! install puts on the PATH), `generate`, `ingest`, `KvStore`, the exceptions and
//! Ctrl-C.
//!
//! Two environments live under the target directory: one with the tests' requirements
//! (made once, again when `python/tests/requirements.txt` changes; maturin comes from
//! it), and the fresh one, made anew each run, holding only the wheel's install and a
//! `.pth` line that lends it the first one's packages (pytest, pandas, …) without
//! installing them again. The wheel's Rust build keeps its own target directory there
//! (incremental on later runs). A fresh machine needs Python 3 and pip's registry.
//!
//! CI builds the wheel with the same command at the lowest priority while the checks and
//! the other tests run (`.ci/wheel`), and names its folder in `LITELOAD_WHEEL_DIR`: this
//! test then waits for that build and tests its wheel.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The most bytes the wheel and the extension in it may take (issue 38).
const MAX_WHEEL_BYTES: u64 = 40 << 20;

fn venv() -> PathBuf {
    common::python_venv(
        "python-package-venv",
        &Path::new(ROOT).join("python/tests/requirements.txt"),
    )
}

/// rqlited: `LITELOAD_RQLITED`, or built by bench/rqlite/build-rqlited.sh where the
/// other tests build it (once).
fn rqlited() -> PathBuf {
    if let Some(p) = std::env::var_os("LITELOAD_RQLITED") {
        return PathBuf::from(p);
    }
    let dest = Path::new(ROOT).join("target/rqlited-v8.43.4/rqlited");
    common::run_ok(
        Command::new("sh")
            .arg(Path::new(ROOT).join("bench/rqlite/build-rqlited.sh"))
            .arg(&dest),
    );
    dest
}

/// PATH without the directories that hold cargo or rustc.
fn path_without_rust(first: &Path) -> String {
    let kept = std::env::var("PATH").unwrap_or_default();
    let kept = kept
        .split(':')
        .filter(|d| !d.is_empty())
        .filter(|d| !Path::new(d).join("cargo").exists() && !Path::new(d).join("rustc").exists());
    std::iter::once(first.display().to_string())
        .chain(kept.map(String::from))
        .collect::<Vec<_>>()
        .join(":")
}

/// The folder that holds the wheel CI's `.ci/wheel build` made beside the other tests
/// (`LITELOAD_WHEEL_DIR`), once that build has ended: `None` when no such build was
/// started, or when it failed (this test then builds the wheel itself). The build writes
/// `.done` or `.failed` there when it ends.
fn wheel_built_beside() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("LITELOAD_WHEEL_DIR")?);
    let start = std::time::Instant::now();
    loop {
        if dir.join(".done").exists() {
            return Some(dir);
        }
        if dir.join(".failed").exists() {
            eprintln!("the wheel built beside the tests failed; building it here");
            return None;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(90 * 60),
            "no wheel in {} after 90 minutes",
            dir.display()
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

#[test]
fn the_dist_wheel_in_a_fresh_venv_then_the_pytest_suite() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // 1. The wheel, with maturin from the requirements' environment (or as CI's
    //    .ci/wheel built it with the same command while the other tests ran).
    let built = wheel_built_beside();
    let deps = venv();
    let wheels = match built {
        Some(dir) => dir,
        None => {
            let wheels = tmp.join("python-wheels");
            let _ = std::fs::remove_dir_all(&wheels);
            common::run_ok(
                Command::new(deps.join("bin/maturin"))
                    .current_dir(ROOT)
                    .env("CARGO_TARGET_DIR", tmp.join("python-build"))
                    .args(["build", "--quiet", "--profile", "dist", "--manifest-path"])
                    .arg(Path::new(ROOT).join("python/Cargo.toml"))
                    .arg("--out")
                    .arg(&wheels),
            );
            wheels
        }
    };
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin's output")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains("-abi3-"), "an abi3 wheel, not {name}");
    let bytes = std::fs::metadata(&wheel).expect("the wheel").len();
    assert!(bytes <= MAX_WHEEL_BYTES, "{name} is {bytes} bytes");
    // The extension unpacked, too.
    let listed = Command::new(deps.join("bin/python"))
        .args([
            "-c",
            "import sys, zipfile; print(max(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()))",
        ])
        .arg(&wheel)
        .output()
        .expect("reading the wheel");
    let largest: u64 = String::from_utf8_lossy(&listed.stdout)
        .trim()
        .parse()
        .expect("a size");
    assert!(
        largest <= MAX_WHEEL_BYTES,
        "the extension is {largest} bytes"
    );

    // 2. A fresh environment with the wheel alone installed; the tests' own packages
    //    are lent by a .pth line (the first environment's site-packages, after its own).
    let fresh = tmp.join("python-wheel-venv");
    let _ = std::fs::remove_dir_all(&fresh);
    common::run_ok(Command::new("python3").args(["-m", "venv"]).arg(&fresh));
    let site = |venv: &Path| -> PathBuf {
        let out = Command::new(venv.join("bin/python"))
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .expect("asking for site-packages");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    };
    // The requirements' environment may hold a liteload from an earlier build; the one
    // under test is the wheel's.
    let _ = Command::new(deps.join("bin/python"))
        .args(["-m", "pip", "uninstall", "--quiet", "--yes", "liteload"])
        .output();
    std::fs::write(
        site(&fresh).join("liteload-test-deps.pth"),
        format!("{}\n", site(&deps).display()),
    )
    .expect("writing the .pth");
    let path = path_without_rust(&fresh.join("bin"));
    let no_rust = |c: &mut Command| {
        c.env("PATH", &path)
            .env_remove("CARGO")
            .env_remove("RUSTC")
            .env_remove("CARGO_TARGET_DIR");
    };
    let mut install = Command::new(fresh.join("bin/python"));
    install.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-index",
        "--no-deps",
    ]);
    install.arg(&wheel);
    no_rust(&mut install);
    common::run_ok(&mut install);

    // 3. The suite, from a scratch directory so that pytest and hypothesis leave nothing
    //    in the repository.
    let scratch = tempfile::tempdir().expect("a temp dir");
    let mut pytest = Command::new(fresh.join("bin/python"));
    pytest
        .current_dir(scratch.path())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(Path::new(ROOT).join("python/tests"));
    no_rust(&mut pytest);
    // rqlited for the rqlite:// target's tests (built once, as the other rqlite tests do).
    pytest.env("LITELOAD_RQLITED", rqlited());
    let status = pytest.status().expect("running pytest");
    assert!(status.success(), "the Python package's tests failed");
}
