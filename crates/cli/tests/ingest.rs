//! `liteload ingest`, end to end: merge semantics, bad messages, resume after kill -9,
//! TCP with concurrent senders, --follow across a rotation, and a clean SIGTERM.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use rusqlite::types::Value;
use tempfile::TempDir;

use common::{checked_rows, listening_addr, spawn_ingest, terminate};

type R = Result<(), Box<dyn std::error::Error>>;

fn ingest(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the liteload binary is built");
    c.current_dir(dir).arg("ingest").args(args);
    c
}

/// A stream of `n` sparse messages over `keys` keys, and the table it must produce.
fn stream(n: usize, keys: u64, seed: u64) -> (String, BTreeMap<i64, BTreeMap<String, Value>>) {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut text = String::new();
    let mut model: BTreeMap<i64, BTreeMap<String, Value>> = BTreeMap::new();
    for _ in 0..n {
        let key = (next() % keys) as i64;
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), key.into());
        let row = model.entry(key).or_default();
        for _ in 0..(1 + next() % 4) {
            let f = format!("f{}", next() % 12);
            let v = next() % 1000;
            let (j, s) = if v < 50 {
                (serde_json::Value::Null, Value::Null)
            } else {
                ((v as i64).into(), Value::Integer(v as i64))
            };
            obj.insert(f.clone(), j);
            row.insert(f, s);
        }
        text.push_str(&serde_json::Value::Object(obj).to_string());
        text.push('\n');
    }
    (text, model)
}

/// The table as key -> column -> value (NULL columns left out).
fn table(db: &Path) -> Result<BTreeMap<i64, BTreeMap<String, Value>>, Box<dyn std::error::Error>> {
    let c = common::open_checked(db)?;
    let mut stmt = c.prepare("SELECT * FROM t ORDER BY id")?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let mut out = BTreeMap::new();
    let rows = stmt.query_map([], |r| {
        (0..names.len())
            .map(|i| r.get::<_, Value>(i))
            .collect::<rusqlite::Result<Vec<_>>>()
    })?;
    for row in rows {
        let row = row?;
        let Value::Integer(k) = row[0] else {
            return Err("key is not an integer".into());
        };
        let cols = names
            .iter()
            .zip(&row)
            .skip(1)
            .filter(|(_, v)| **v != Value::Null)
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        out.insert(k, cols);
    }
    Ok(out)
}

fn without_nulls(
    m: BTreeMap<i64, BTreeMap<String, Value>>,
) -> BTreeMap<i64, BTreeMap<String, Value>> {
    m.into_iter()
        .map(|(k, r)| {
            (
                k,
                r.into_iter().filter(|(_, v)| *v != Value::Null).collect(),
            )
        })
        .collect()
}

#[test]
fn merges_sparse_updates_and_reports_bad_messages() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("f.jsonl"),
        "{\"id\":\"a\",\"x\":1,\"y\":\"s\"}\n{\"id\":\"b\",\"x\":2}\nnot json\n{\"id\":\"a\",\"y\":null,\"z\":{\"n\":[1]}}\n{\"x\":5}\n{\"id\":true}\n",
    )?;
    ingest(
        d.path(),
        &[
            "s.db",
            "f.jsonl",
            "--table",
            "t",
            "--key",
            "id",
            "--rejects",
            "r.jsonl",
            "--stats-json",
            "st.jsonl",
        ],
    )
    .assert()
    .success()
    .stdout(predicate::str::contains("Ingested 3 messages into \"t\""))
    .stdout(predicate::str::contains("2 inserted, 0 updated, 3 rejects"))
    .stderr(predicate::str::contains(
        "warning: f.jsonl:5: the key field \"id\" is missing",
    ));
    let rows = checked_rows(
        &d.path().join("s.db"),
        "SELECT id, x, y, z FROM t ORDER BY id",
    )?;
    let t = |s: &str| Value::Text(s.into());
    assert_eq!(
        rows,
        vec![
            vec![t("a"), Value::Integer(1), Value::Null, t("{\"n\":[1]}")],
            vec![t("b"), Value::Integer(2), Value::Null, Value::Null]
        ]
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("r.jsonl"))?
            .lines()
            .count(),
        3
    );
    let st: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(d.path().join("st.jsonl"))?
            .lines()
            .next()
            .ok_or("no stats")?,
    )?;
    assert_eq!(st["messages"], 3);
    // --null keep ignores explicit nulls.
    ingest(
        d.path(),
        &[
            "k.db", "f.jsonl", "--table", "t", "--key", "id", "--null", "keep", "-q",
        ],
    )
    .assert()
    .success();
    assert_eq!(
        checked_rows(&d.path().join("k.db"), "SELECT y FROM t WHERE id = 'a'")?,
        vec![vec![t("s")]]
    );
    // --strict stops at the first bad message, after committing the good ones.
    ingest(
        d.path(),
        &[
            "x.db", "f.jsonl", "--table", "t", "--key", "id", "--strict", "-q",
        ],
    )
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "f.jsonl:3:2: record 3: expected a JSON object, found invalid JSON",
    ));
    assert_eq!(
        checked_rows(&d.path().join("x.db"), "SELECT count(*) FROM t")?,
        vec![vec![Value::Integer(2)]]
    );
    // A line over --max-line-bytes is a bad message; the stream goes on after it.
    let long = format!(
        "{{\"id\": 9, \"pad\": \"{}\"}}\n{{\"id\": 10}}\n",
        "x".repeat(5000)
    );
    std::fs::write(d.path().join("long.jsonl"), long)?;
    ingest(
        d.path(),
        &[
            "l.db",
            "long.jsonl",
            "--table",
            "t",
            "--key",
            "id",
            "--max-line-bytes",
            "100",
        ],
    )
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "long.jsonl:1:1: line longer than 100 bytes (raise the limit with --max-line-bytes)",
    ));
    assert_eq!(
        checked_rows(&d.path().join("l.db"), "SELECT id FROM t")?,
        vec![vec![Value::Integer(10)]]
    );
    Ok(())
}

#[test]
fn kill_dash_nine_and_rerun_gives_the_uninterrupted_table() -> R {
    let d = TempDir::new()?;
    let (text, model) = stream(200_000, 5_000, 11);
    std::fs::write(d.path().join("feed.jsonl"), &text)?;
    let args = [
        "feed.jsonl",
        "--table",
        "t",
        "--key",
        "id",
        "--commit-interval",
        "20ms",
        "-q",
    ];
    let t0 = Instant::now();
    let mut full = vec!["full.db"];
    full.extend_from_slice(&args);
    ingest(d.path(), &full).assert().success();
    let took = t0.elapsed();
    let reference = table(&d.path().join("full.db"))?;
    assert_eq!(
        reference,
        without_nulls(model),
        "the uninterrupted run differs from the model"
    );
    let mut killed = vec!["k.db"];
    killed.extend_from_slice(&args);
    let mut interrupted = 0;
    for i in 0..5u32 {
        let mut child = spawn_ingest(d.path(), &killed)?;
        std::thread::sleep(took.mul_f64(0.1 + f64::from(i) * 0.15));
        if child.try_wait()?.is_none() {
            interrupted += 1;
        }
        child.kill()?;
        child.wait()?;
        if d.path().join("k.db").exists() {
            checked_rows(&d.path().join("k.db"), "SELECT count(*) FROM sqlite_schema")?;
        }
    }
    assert!(interrupted > 0, "no kill landed during a run");
    ingest(d.path(), &killed).assert().success();
    assert_eq!(
        table(&d.path().join("k.db"))?,
        reference,
        "resumed runs differ from the uninterrupted one"
    );
    Ok(())
}

#[test]
fn tcp_senders_at_once_are_all_applied() -> R {
    let d = TempDir::new()?;
    let mut child = spawn_ingest(
        d.path(),
        &[
            "s.db",
            "--table",
            "t",
            "--key",
            "id",
            "--listen",
            "127.0.0.1:0",
            "--commit-interval",
            "50ms",
        ],
    )?;
    let (addr, _err) = listening_addr(&mut child)?;
    // Four senders, each owning its keys (so per-key order is each sender's order).
    let mut model = BTreeMap::new();
    let mut senders = vec![];
    for s in 0..4u64 {
        let (text, m) = stream(3_000, 200, 100 + s);
        let shifted: String = text
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
                v["id"] = (v["id"].as_i64().unwrap_or(0) + 1000 * s as i64).into();
                format!("{v}\n")
            })
            .collect();
        for (k, r) in m {
            model.insert(k + 1000 * s as i64, r);
        }
        let addr = addr.clone();
        senders.push(std::thread::spawn(move || -> std::io::Result<()> {
            let mut c = std::net::TcpStream::connect(addr)?;
            for chunk in shifted.as_bytes().chunks(4096) {
                c.write_all(chunk)?;
            }
            Ok(())
        }));
    }
    for s in senders {
        s.join().map_err(|_| "a sender panicked")??;
    }
    // Wait until every message has been committed, then stop cleanly.
    let want = without_nulls(model);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        if d.path().join("s.db").exists()
            && table(&d.path().join("s.db")).ok().as_ref() == Some(&want)
        {
            break;
        }
    }
    assert!(
        terminate(&mut child)?,
        "SIGTERM should stop it cleanly with exit 0"
    );
    assert_eq!(table(&d.path().join("s.db"))?, want);
    checked_rows(&d.path().join("s.db"), "SELECT count(*) FROM t")?;
    Ok(())
}

#[test]
fn follow_reads_a_growing_file_across_a_rotation() -> R {
    let d = TempDir::new()?;
    let feed = d.path().join("feed.jsonl");
    std::fs::write(&feed, "{\"id\": 1, \"v\": 1}\n")?;
    let mut child = spawn_ingest(
        d.path(),
        &[
            "s.db",
            "feed.jsonl",
            "--table",
            "t",
            "--key",
            "id",
            "--follow",
            "--commit-interval",
            "50ms",
            "-q",
        ],
    )?;
    std::thread::sleep(Duration::from_millis(400));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&feed)?
        .write_all(b"{\"id\": 2, \"v\": 2}\n")?;
    std::thread::sleep(Duration::from_millis(400));
    std::fs::rename(&feed, d.path().join("feed.jsonl.1"))?;
    std::fs::write(&feed, "{\"id\": 1, \"v\": 10}\n{\"id\": 3, \"v\": 3}\n")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = vec![
        vec![Value::Integer(1), Value::Integer(10)],
        vec![Value::Integer(2), Value::Integer(2)],
        vec![Value::Integer(3), Value::Integer(3)],
    ];
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        if checked_rows(&d.path().join("s.db"), "SELECT id, v FROM t ORDER BY id").ok()
            == Some(want.clone())
        {
            break;
        }
    }
    assert!(terminate(&mut child)?);
    assert_eq!(
        checked_rows(&d.path().join("s.db"), "SELECT id, v FROM t ORDER BY id")?,
        want
    );
    Ok(())
}
