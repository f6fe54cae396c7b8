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
    // ladder, pragmas (prepared and as written), upsert, kv reads, kv writes, generate.
    assert_eq!(html.matches("<svg").count(), 7);
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
    assert_eq!(exps.len(), 7);
    // Every step that keeps data carries both labels, computed from its settings; and
    // the pick for "every commit survives power loss" is the fastest step whose commits
    // do, whatever a crash costs (never autocommit when one commit is as safe).
    let recs = j["recommendations"]
        .as_array()
        .ok_or("no recommendations")?;
    for e in exps {
        let id = e["id"].as_str().ok_or("no id")?;
        let steps = e["steps"].as_array().ok_or("no steps")?;
        let rate = |s: &serde_json::Value| -> f64 {
            let secs: Vec<f64> = s["seconds"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|v| v.as_f64())
                .collect();
            let counts: Vec<f64> = s["counts"]
                .as_array()
                .map_or(vec![], |c| c.iter().filter_map(|v| v.as_f64()).collect());
            let items = s["items"].as_f64().unwrap_or(0.0);
            let mut r: Vec<f64> = secs
                .iter()
                .enumerate()
                .map(|(i, t)| counts.get(i).copied().unwrap_or(items) / t.max(1e-9))
                .collect();
            r.sort_by(|a, b| a.total_cmp(b));
            if r.len() % 2 == 1 {
                r[r.len() / 2]
            } else {
                (r[r.len() / 2 - 1] + r[r.len() / 2]) / 2.0
            }
        };
        for s in steps {
            if !s["settings"].is_null() {
                assert!(s["labels"]["survives"].is_string(), "{id}: {s}");
                assert!(s["labels"]["crash_cost"].is_string(), "{id}: {s}");
            }
        }
        let durable: Vec<&serde_json::Value> = steps
            .iter()
            .filter(|s| s["labels"]["survives"] == "power-loss")
            .collect();
        let pick = recs.iter().find(|r| {
            r["experiment"] == id
                && r["need"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("every commit survives power loss"))
        });
        match pick {
            Some(p) => {
                let best = durable.iter().map(|s| rate(s)).fold(0.0, f64::max);
                let got = p["rate"].as_f64().ok_or("no rate")?;
                assert!(
                    (got - best).abs() <= 1e-6 * best,
                    "{id}: picked {got}, fastest durable {best}"
                );
            }
            None => assert!(durable.is_empty(), "{id}: durable steps but no pick"),
        }
    }
    let notes = |id: &str| -> String {
        exps.iter()
            .find(|e| e["id"] == id)
            .map(|e| e["notes"].to_string())
            .unwrap_or_default()
    };
    assert!(
        notes("ladder").contains("Overall speed-up"),
        "{}",
        notes("ladder")
    );
    assert!(
        notes("upsert").contains("Loss window, measured"),
        "{}",
        notes("upsert")
    );
    assert!(
        notes("kv-reads").contains("write-up: about 1.35x"),
        "{}",
        notes("kv-reads")
    );
    assert!(
        notes("kv-reads").contains("in one transaction, as kvtest"),
        "{}",
        notes("kv-reads")
    );
    assert!(
        notes("generate").contains("leaderboard"),
        "{}",
        notes("generate")
    );
    assert!(notes("pragmas-as-written").contains("failed over all runs"));
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
        "pragmas-as-written",
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

#[test]
fn bench_ladder_runs_on_the_users_own_file() -> R {
    let d = TempDir::new()?;
    let mut tsv = String::from("Route_ID\tBranch_Code\tVersion\tStop\tVehicle_Index\tDay\tTime\n");
    for i in 0..300 {
        tsv.push_str(&format!(
            "{}\t{}A\t1\t{}\t7\t3\t6:{:02}:00\n",
            5 + i % 9,
            5 + i % 9,
            1000 + i,
            i % 60
        ));
    }
    std::fs::write(d.path().join("mine.tsv"), &tsv)?;
    Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args([
            "bench", "ladder", "--runs", "1", "--cap", "5", "--dir", "w", "--input", "mine.tsv",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("300 rows of mine.tsv"))
        .stdout(predicate::str::contains("write-up's final step"))
        .stdout(predicate::str::contains("FAILED").not());
    assert!(d.path().join("mine.tsv").exists());
    std::fs::write(d.path().join("bad.tsv"), "a\tb\n1\t2\n")?;
    Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args([
            "bench", "ladder", "--runs", "1", "--dir", "w", "--input", "bad.tsv",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("bad.tsv: line 1"));
    Ok(())
}

#[test]
fn bench_kv_runs_kvtest_as_written() -> R {
    let d = TempDir::new()?;
    Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args(["bench", "kv", "--tiny", "--runs", "1", "--dir", "w"])
        .args([
            "--int",
            "--read-txn",
            "--jmode",
            "delete",
            "--order",
            "desc",
            "--cold",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("integer keys as the rowid"))
        .stdout(predicate::str::contains("in desc order"))
        .stdout(predicate::str::contains("cache"))
        .stdout(predicate::str::contains("FAILED").not());
    Command::cargo_bin("liteload")?
        .args(["bench", "kv", "--jmode", "fast"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("expected delete, wal or off"));
    Ok(())
}
