//! `liteload kv`, end to end.

mod common;

use std::path::Path;
use std::process::Command as Process;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use rusqlite::types::Value;
use tempfile::TempDir;

type R = Result<(), Box<dyn std::error::Error>>;

fn kv(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the liteload binary is built");
    c.current_dir(dir).arg("kv").args(args);
    c
}

fn blob(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn put_get_rm_ls() -> R {
    let d = TempDir::new()?;
    let big = blob(3 << 20, 1);
    std::fs::write(d.path().join("big.bin"), &big)?;
    kv(d.path(), &["put", "s.db", "photos/a.jpg", "big.bin"])
        .assert()
        .success();
    kv(d.path(), &["put", "s.db", "notes/empty"])
        .write_stdin(Vec::new())
        .assert()
        .success();
    kv(d.path(), &["put", "s.db", "notes/hi", "-"])
        .write_stdin("hello")
        .assert()
        .success();
    kv(d.path(), &["put", "s.db", "42", "--int"])
        .write_stdin("forty-two")
        .assert()
        .success();
    let out = kv(d.path(), &["get", "s.db", "photos/a.jpg"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(out, big);
    kv(d.path(), &["get", "s.db", "notes/empty"])
        .assert()
        .success()
        .stdout("");
    kv(d.path(), &["get", "s.db", "42", "--int"])
        .assert()
        .success()
        .stdout("forty-two");
    kv(d.path(), &["get", "s.db", "42"])
        .assert()
        .code(1)
        .stderr("error: s.db: no key \"42\"\n");
    kv(d.path(), &["get", "s.db", "notes/hi", "-o", "hi.txt"])
        .assert()
        .success();
    assert_eq!(std::fs::read(d.path().join("hi.txt"))?, b"hello");
    kv(d.path(), &["ls", "s.db"])
        .assert()
        .success()
        .stdout("42\nnotes/empty\nnotes/hi\nphotos/a.jpg\n");
    kv(d.path(), &["ls", "s.db", "--prefix", "notes/"])
        .assert()
        .success()
        .stdout("notes/empty\nnotes/hi\n");
    kv(d.path(), &["rm", "s.db", "notes/hi", "nope"])
        .assert()
        .code(1)
        .stderr("error: s.db: no key nope\n");
    kv(d.path(), &["ls", "s.db", "--prefix", "notes/"])
        .assert()
        .success()
        .stdout("notes/empty\n");
    common::checked_rows(&d.path().join("s.db"), "SELECT count(*) FROM kv")?;
    Ok(())
}

/// A tree of files with awkward names and sizes around SQLite's page boundaries.
fn make_tree(root: &Path) -> Result<usize, std::io::Error> {
    let mut n = 0;
    for (i, size) in [0usize, 1, 4095, 4096, 4097, 100_000].iter().enumerate() {
        let sub = root.join(format!("d{}", i % 3)).join("deeper dir");
        std::fs::create_dir_all(&sub)?;
        std::fs::write(sub.join(format!("f {i} ü%_.bin")), blob(*size, i as u32))?;
        n += 1;
    }
    std::fs::write(root.join("top.txt"), b"top")?;
    Ok(n + 1)
}

fn same_tree(a: &Path, b: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let mut n = 0;
    let mut stack = vec![a.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let p = e?.path();
            let rel = p.strip_prefix(a)?;
            if p.is_dir() {
                stack.push(p.clone());
                assert!(b.join(rel).is_dir(), "{} missing", rel.display());
            } else {
                assert_eq!(
                    std::fs::read(&p)?,
                    std::fs::read(b.join(rel))?,
                    "{} differs",
                    rel.display()
                );
                n += 1;
            }
        }
    }
    Ok(n)
}

#[test]
fn import_dir_and_export_dir_round_trip_byte_for_byte() -> R {
    let d = TempDir::new()?;
    let src = d.path().join("src");
    let files = make_tree(&src)?;
    kv(d.path(), &["import-dir", "s.db", "src"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(format!("Stored {files} files")));
    kv(d.path(), &["export-dir", "s.db", "out"])
        .assert()
        .success();
    assert_eq!(same_tree(&src, &d.path().join("out"))?, files);
    assert_eq!(same_tree(&d.path().join("out"), &src)?, files);
    // Existing files are kept unless --force.
    kv(d.path(), &["export-dir", "s.db", "out"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "files written so far); use --force to overwrite",
        ));
    kv(d.path(), &["export-dir", "s.db", "out", "--force", "-q"])
        .assert()
        .success();
    // Commit windows give the same store.
    kv(
        d.path(),
        &["import-dir", "w.db", "src", "--commit-every", "2", "-q"],
    )
    .assert()
    .success();
    let rows = common::checked_rows(&d.path().join("w.db"), "SELECT count(*) FROM kv")?;
    assert_eq!(rows[0][0], Value::Integer(files as i64));
    Ok(())
}

/// A file import-dir cannot store (a link, a name that is not UTF-8) is never dropped
/// silently: quiet or not, each is named on stderr and the run exits 1, with every other
/// file stored.
#[cfg(unix)]
#[test]
fn import_dir_names_each_file_it_leaves_out_and_fails() -> R {
    use std::os::unix::ffi::OsStrExt;
    let d = TempDir::new()?;
    let src = d.path().join("src");
    std::fs::create_dir_all(src.join("sub"))?;
    std::fs::write(src.join("a.txt"), b"a")?;
    std::fs::write(src.join("sub").join("b\u{1}x"), b"b")?;
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    if std::fs::write(src.join(latin1), b"c").is_err() {
        return Ok(()); // a filesystem that refuses such names cannot have them
    }
    std::os::unix::fs::symlink(src.join("a.txt"), src.join("link"))?;
    for quiet in [false, true] {
        let db = format!("s{quiet}.db");
        let mut args = vec!["import-dir", db.as_str(), "src"];
        if quiet {
            args.push("-q");
        }
        let out = kv(d.path(), &args).assert().code(1);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains("is not UTF-8") && err.contains("caf"), "{err}");
        assert!(
            err.contains("link") && err.contains("not a regular file"),
            "{err}"
        );
        assert!(err.contains("2 file(s)"), "{err}");
        let rows = common::checked_rows(&d.path().join(&db), "SELECT k FROM kv ORDER BY k")?;
        let keys: Vec<Value> = rows.into_iter().map(|r| r[0].clone()).collect();
        assert_eq!(
            keys,
            vec![
                Value::Text("a.txt".into()),
                Value::Text("sub/b\u{1}x".into())
            ]
        );
    }
    Ok(())
}

#[test]
fn export_never_writes_outside_the_folder() -> R {
    let d = TempDir::new()?;
    for k in [
        "../escape",
        "/etc/passwd-copy",
        "a/../../b",
        "back\\slash",
        "a//b",
        "trailing/",
        "./dot",
        "ok/./file",
        "ok/.",
        &"n".repeat(256),
        &format!("{}/z", "d".repeat(300)),
        "ok/file",
        "zz/after-the-long-ones",
    ] {
        kv(d.path(), &["put", "s.db", k, "-"])
            .write_stdin("x")
            .assert()
            .success();
    }
    // A key with a NUL byte, put through SQL (the shell cannot pass one).
    let c = rusqlite::Connection::open(d.path().join("s.db"))?;
    c.execute("INSERT INTO kv(k, v) VALUES (?1, x'00')", ["nul\0key"])?;
    drop(c);
    let out = kv(d.path(), &["export-dir", "s.db", "out/inner"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out)?;
    for why in [
        "has a `..` part",
        "is an absolute path",
        "has a backslash",
        "has an empty part",
        "has a `.` part",
        "has a NUL byte",
        "longer than a file name may be",
    ] {
        assert!(err.contains(why), "no {why:?} in {err}");
    }
    assert!(
        err.contains("error: 12 key(s) could not be file names under out/inner"),
        "{err}"
    );
    assert_eq!(std::fs::read(d.path().join("out/inner/ok/file"))?, b"x");
    // Keys after the ones that cannot be file names are still written.
    assert_eq!(
        std::fs::read(d.path().join("out/inner/zz/after-the-long-ones"))?,
        b"x"
    );
    assert!(
        !d.path().join("escape").exists()
            && !d.path().join("out/escape").exists()
            && !d.path().join("b").exists()
    );
    // A link inside the folder is not followed out of it.
    #[cfg(unix)]
    {
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside)?;
        std::fs::create_dir_all(d.path().join("x"))?;
        std::os::unix::fs::symlink(&outside, d.path().join("x/ok"))?;
        kv(d.path(), &["export-dir", "s.db", "x"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("is a link"));
        assert!(!outside.join("file").exists());
    }
    Ok(())
}

#[test]
fn the_tree_layout_puts_at_most_100_entries_in_a_folder() -> R {
    let d = TempDir::new()?;
    for k in ["0", "7", "12345", "999999"] {
        kv(d.path(), &["put", "s.db", k, "--int", "-"])
            .write_stdin(k)
            .assert()
            .success();
    }
    kv(d.path(), &["export-dir", "s.db", "t", "--tree", "-q"])
        .assert()
        .success();
    for (k, p) in [
        ("0", "00/00/00"),
        ("7", "00/00/07"),
        ("12345", "01/23/45"),
        ("999999", "99/99/99"),
    ] {
        assert_eq!(std::fs::read_to_string(d.path().join("t").join(p))?, k);
    }
    Ok(())
}

#[test]
fn kill_during_import_dir_leaves_a_consistent_store() -> R {
    let d = TempDir::new()?;
    let src = d.path().join("src");
    std::fs::create_dir(&src)?;
    for i in 0..3000u32 {
        std::fs::write(src.join(format!("{i:05}")), blob(10_000, i))?;
    }
    let bin = assert_cmd::cargo::cargo_bin("liteload");
    let run = |db: &str| {
        Process::new(&bin)
            .current_dir(d.path())
            .args(["kv", "import-dir", db, "src", "-q", "--commit-every", "100"])
            .spawn()
    };
    let t0 = Instant::now();
    assert!(run("full.db")?.wait()?.success());
    let full = t0.elapsed();
    for i in 0..4u32 {
        let db = format!("k{i}.db");
        let mut child = run(&db)?;
        std::thread::sleep(
            full.mul_f64(f64::from(i) / 4.0 + 0.1)
                .max(Duration::from_millis(5)),
        );
        child.kill()?;
        child.wait()?;
        let path = d.path().join(&db);
        if !path.exists() {
            continue;
        }
        // A kill before the store's table was made leaves a database with no schema at
        // all (SQLite made the file when it was opened): nothing stored, nothing broken.
        let objects = common::checked_rows(&path, "SELECT name FROM sqlite_schema")?;
        if objects.is_empty() {
            continue;
        }
        // integrity_check is ok; what is there is whole: every stored value equals its file,
        // and whole commit windows only (a multiple of 100, or everything).
        let rows = common::checked_rows(&path, "SELECT k, v FROM kv")?;
        assert!(
            rows.len() % 100 == 0 || rows.len() == 3000,
            "{} rows: not whole windows",
            rows.len()
        );
        for r in &rows {
            let (Value::Text(k), Value::Blob(v)) = (&r[0], &r[1]) else {
                return Err("bad row".into());
            };
            assert_eq!(&std::fs::read(src.join(k))?, v, "{k} differs");
        }
    }
    Ok(())
}

#[test]
fn bench_kv_runs_verified_and_writes_json_and_svg() -> R {
    let d = TempDir::new()?;
    let mut c = Command::cargo_bin("liteload")?;
    c.current_dir(d.path())
        .args([
            "bench",
            "kv",
            "--count",
            "300",
            "--size",
            "3000",
            "--variance",
            "500",
            "--runs",
            "2",
        ])
        .args(["--dir", "work", "--json", "r.json", "--svg", "c.svg"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "reads, every blob once in random order",
        ))
        .stdout(predicate::str::contains("db: blob API + mmap"))
        .stdout(predicate::str::contains("space after init"))
        .stdout(predicate::str::contains("FAILED").not());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json"))?)?;
    let reads = r["reads"].as_array().ok_or("no reads")?;
    assert_eq!(reads.len(), 5);
    for s in reads
        .iter()
        .chain(r["writes"].as_array().ok_or("no writes")?)
    {
        assert_eq!(s["seconds"].as_array().map(|v| v.len()), Some(2), "{s}");
        assert!(s["failed"].is_null(), "{s}");
    }
    assert!(r["space"]["db_bytes"]
        .as_u64()
        .is_some_and(|b| b > 300 * 2500));
    assert!(std::fs::read_to_string(d.path().join("c.svg"))?.starts_with("<svg"));
    assert!(
        !d.path().join("work").exists(),
        "the working folder is removed unless --keep"
    );
    Ok(())
}
