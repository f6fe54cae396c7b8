//! `liteload bench`: every experiment runs at smoke-test sizes, verifies its steps, and
//! writes a table, JSON records, SVG charts and one HTML page of the expected shape.
//! Speed is not checked here (see bench/ and `bench all --full`).

use assert_cmd::Command;
use predicates::prelude::*;
use tempfile::TempDir;

type R = Result<(), Box<dyn std::error::Error>>;

#[test]
fn bench_all_tiny_writes_a_report_with_every_experiment() -> R {
    let d = TempDir::new()?;
    Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args(["bench", "all", "--tiny", "--runs", "2", "--dir", "work"])
        .args(["--html", "r.html", "--json", "r.json", "--svg-dir", "svg"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Bulk insert, one change at a time",
        ))
        .stdout(predicate::str::contains("PRAGMAs under a mixed workload"))
        .stdout(predicate::str::contains("liteload ingest"))
        .stdout(predicate::str::contains(
            "Fastest verified setting per need",
        ))
        .stdout(predicate::str::contains("FAILED").not());
    let html = std::fs::read_to_string(d.path().join("r.html"))?;
    assert!(html.starts_with("<!DOCTYPE html>"));
    // ladder, pragmas, upsert, kv reads, kv writes, generate.
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(
        html.contains("syntax error"),
        "the write-up's SELECT is reported"
    );
    assert!(
        !html.contains("<script") && !html.contains("<link"),
        "self-contained"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json"))?)?;
    let exps = j["experiments"].as_array().ok_or("no experiments")?;
    assert_eq!(exps.len(), 6);
    let steps: usize = exps
        .iter()
        .map(|e| e["steps"].as_array().map_or(0, |s| s.len()))
        .sum();
    let runs = j["runs"].as_array().ok_or("no runs")?;
    assert_eq!(runs.len(), 2 * steps, "one record per run of every step");
    for r in runs {
        assert!(r["seconds"].as_f64().is_some_and(|s| s > 0.0), "{r}");
        assert!(r["per_second"].as_f64().is_some_and(|s| s > 0.0), "{r}");
    }
    assert!(j["machine"]["sqlite_version"]
        .as_str()
        .is_some_and(|v| v.starts_with("3.")));
    assert!(!j["recommendations"]
        .as_array()
        .ok_or("no recommendations")?
        .is_empty());
    for id in [
        "ladder",
        "pragmas",
        "upsert",
        "kv-reads",
        "kv-writes",
        "generate",
    ] {
        let svg = std::fs::read_to_string(d.path().join("svg").join(format!("{id}.svg")))?;
        assert!(svg.starts_with("<svg"), "{id}");
    }
    assert!(!d.path().join("work").exists(), "working folder removed");
    Ok(())
}

#[test]
fn bench_pragmas_counts_only_successful_operations() -> R {
    let d = TempDir::new()?;
    Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args(["bench", "pragmas", "--seconds", "0.05", "--runs", "1"])
        .args(["--dir", "w", "--json", "p.json", "--svg", "p.svg"])
        .assert()
        .success()
        .stdout(predicate::str::contains("WAL, synchronous=NORMAL"));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("p.json"))?)?;
    let steps = j["experiments"][0]["steps"].as_array().ok_or("no steps")?;
    assert_eq!(steps.len(), 22);
    for s in steps {
        // Fixed-time steps carry the operations of each run.
        assert!(s["counts"][0].as_u64().is_some_and(|n| n > 0), "{s}");
        assert!(s["failed"].is_null(), "{s}");
    }
    Ok(())
}

#[test]
fn bench_refuses_a_folder_it_did_not_make_and_bad_sizes() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("precious.txt"), "keep me")?;
    Command::cargo_bin("liteload")?
        .args(["bench", "ladder", "--tiny", "--dir"])
        .arg(d.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("not made by liteload bench"));
    assert!(d.path().join("precious.txt").exists());
    Command::cargo_bin("liteload")?
        .args(["bench", "pragmas", "--seconds", "0", "--dir"])
        .arg(d.path().join("p"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("expected a positive number"));
    Command::cargo_bin("liteload")?
        .args(["bench", "upsert", "--full", "--tiny"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot be used with"));
    Ok(())
}
