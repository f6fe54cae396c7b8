//! The `liteload` command, end to end: real files in testdata/, a temp dir per test, and
//! every database checked by SQLite (`PRAGMA integrity_check`) and read back.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use rusqlite::types::Value;
use tempfile::TempDir;

type R = Result<(), Box<dyn std::error::Error>>;

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(name)
}

fn liteload() -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the liteload binary is built");
    c.env_remove("RUST_LOG");
    c
}

/// `liteload import DB ARGS…` run in `dir`.
fn import(dir: &Path, args: &[&str]) -> Command {
    let mut c = liteload();
    c.current_dir(dir).arg("import").args(args);
    c
}

/// Opens `db`, asserts `integrity_check` is ok, and returns every row of `sql`.
fn rows(db: &Path, sql: &str) -> Result<Vec<Vec<Value>>, Box<dyn std::error::Error>> {
    Ok(common::checked_rows(db, sql)?)
}

/// The declared type of each column of `table`.
fn decl(db: &Path, table: &str) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let c = common::open_checked(db)?;
    let mut stmt = c.prepare("SELECT name, type FROM pragma_table_info(?1)")?;
    let v = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(v)
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}
fn i(v: i64) -> Value {
    Value::Integer(v)
}
fn f(v: f64) -> Value {
    Value::Real(v)
}
const N: Value = Value::Null;

fn copy_in(dir: &Path, name: &str) -> Result<PathBuf, std::io::Error> {
    let to = dir.join(Path::new(name).file_name().unwrap_or_default());
    std::fs::copy(testdata(name), &to)?;
    Ok(to)
}

// ---------------------------------------------------------------- types

#[test]
fn types_are_inferred_by_the_documented_rules() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "types.csv")?;
    import(d.path(), &["out.db", "types.csv"])
        .assert()
        .success();
    let db = d.path().join("out.db");
    let types: Vec<String> = decl(&db, "types")?.into_iter().map(|(_, t)| t).collect();
    // zip has leading zeros, big is beyond i64: both TEXT, never numbers.
    assert_eq!(
        types,
        ["INTEGER", "TEXT", "TEXT", "REAL", "TEXT", "INTEGER"]
    );
    let got = rows(&db, "SELECT * FROM types ORDER BY rowid")?;
    assert_eq!(
        got,
        vec![
            vec![
                i(1),
                t("02134"),
                t("18446744073709551616"),
                f(1.5),
                t("hello"),
                i(3)
            ],
            vec![i(2), t("00501"), t("5"), f(2.0), t(""), N],
            vec![
                i(3),
                t("90210"),
                t("-9223372036854775809"),
                f(-0.25),
                t("quoted, with comma"),
                i(7)
            ],
        ]
    );
    Ok(())
}

#[test]
fn empty_null_no_detect_types_and_type_overrides() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "types.csv")?;
    import(d.path(), &["a.db", "types.csv", "--empty-null"])
        .assert()
        .success();
    assert_eq!(
        rows(
            &d.path().join("a.db"),
            "SELECT note FROM types WHERE id = 2"
        )?,
        vec![vec![N]]
    );

    import(d.path(), &["b.db", "types.csv", "--no-detect-types"])
        .assert()
        .success();
    let db = d.path().join("b.db");
    assert!(decl(&db, "types")?.iter().all(|(_, t)| t == "TEXT"));
    assert_eq!(
        rows(&db, "SELECT id, price FROM types WHERE rowid = 1")?,
        vec![vec![t("1"), t("1.5")]]
    );

    import(
        d.path(),
        &[
            "c.db",
            "types.csv",
            "--type",
            "id=text",
            "--type",
            "qty=real",
        ],
    )
    .assert()
    .success();
    let db = d.path().join("c.db");
    assert_eq!(
        rows(&db, "SELECT id, qty FROM types WHERE rowid = 1")?,
        vec![vec![t("1"), f(3.0)]]
    );

    import(d.path(), &["d.db", "types.csv", "--type", "nope=text"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "a type is given for column \"nope\", but types.csv has no such column",
        ));
    import(d.path(), &["d.db", "types.csv", "--type", "id=number"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown type \"number\""));
    assert!(!d.path().join("d.db").exists());
    Ok(())
}

#[test]
fn a_value_that_does_not_fit_is_stored_and_counted() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("m.csv"), "n\n1\n2\n3\nabc\n")?;
    import(d.path(), &["m.db", "m.csv", "--sample", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("1 type mismatch"))
        .stderr(predicate::str::contains(
            "m.csv:5:1: \"abc\" in INTEGER column \"n\"",
        ));
    assert_eq!(
        rows(
            &d.path().join("m.db"),
            "SELECT n, typeof(n) FROM m ORDER BY rowid"
        )?,
        vec![
            vec![i(1), t("integer")],
            vec![i(2), t("integer")],
            vec![i(3), t("integer")],
            vec![t("abc"), t("text")]
        ]
    );
    Ok(())
}

// ---------------------------------------------------------------- formats

#[test]
fn csv_follows_rfc4180() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "rfc4180.csv")?;
    import(d.path(), &["o.db", "rfc4180.csv"])
        .assert()
        .success();
    assert_eq!(
        rows(
            &d.path().join("o.db"),
            "SELECT * FROM rfc4180 ORDER BY rowid"
        )?,
        vec![
            vec![t("Smith, J."), t("He said \"hi\""), i(1)],
            vec![t("multi\r\nline"), t(""), i(2)],
            vec![t("plain"), t(""), N],
        ]
    );
    Ok(())
}

#[test]
fn a_tsv_field_that_is_no_whole_quoted_field_is_read_as_it_stands() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "cities.tsv")?;
    import(d.path(), &["o.db", "cities.tsv"]).assert().success();
    let db = d.path().join("o.db");
    assert_eq!(
        rows(&db, "SELECT * FROM cities ORDER BY rowid")?,
        vec![
            vec![t("Oslo"), i(709037), t("\"quoted\" stays")],
            vec![t("Bergen"), i(285911), t("")]
        ]
    );
    import(d.path(), &["q.db", "cities.tsv", "--quote", "\""])
        .assert()
        .success();
    assert_eq!(
        rows(
            &d.path().join("q.db"),
            "SELECT note FROM cities WHERE rowid = 1"
        )?,
        vec![vec![t("quoted stays")]]
    );
    Ok(())
}

#[test]
fn delimiter_no_header_columns_and_skip() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("semi.txt"), "1;a\n2;b\n")?;
    import(
        d.path(),
        &[
            "o.db",
            "semi.txt",
            "--csv",
            "--delimiter",
            ";",
            "--no-header",
        ],
    )
    .assert()
    .success();
    let db = d.path().join("o.db");
    assert_eq!(
        decl(&db, "semi")?,
        vec![
            ("c1".into(), "INTEGER".into()),
            ("c2".into(), "TEXT".into())
        ]
    );
    import(
        d.path(),
        &[
            "o.db",
            "semi.txt",
            "--csv",
            "--delimiter",
            ";",
            "--no-header",
            "--columns",
            "k,v",
            "--table",
            "named",
        ],
    )
    .assert()
    .success();
    assert_eq!(
        rows(&db, "SELECT k, v FROM named ORDER BY k")?,
        vec![vec![i(1), t("a")], vec![i(2), t("b")]]
    );
    copy_in(d.path(), "preamble.csv")?;
    import(d.path(), &["o.db", "preamble.csv", "--skip", "2"])
        .assert()
        .success();
    assert_eq!(
        rows(&db, "SELECT x, y FROM preamble")?,
        vec![vec![i(1), i(2)]]
    );
    // --columns replaces the header's names; the header line is still not data.
    import(
        d.path(),
        &[
            "o.db",
            "preamble.csv",
            "--skip",
            "2",
            "--columns",
            "p,q",
            "--table",
            "pq",
        ],
    )
    .assert()
    .success();
    assert_eq!(rows(&db, "SELECT p, q FROM pq")?, vec![vec![i(1), i(2)]]);
    copy_in(d.path(), "events.json")?;
    import(d.path(), &["o.db", "events.json", "--skip", "1"])
        .assert()
        .code(2)
        .stderr("error: events.json: skipping lines applies to CSV, TSV and NDJSON, not to a JSON array\n");
    import(d.path(), &["o.db", "preamble.csv", "--delimiter", "ab"])
        .assert()
        .code(2)
        .stderr("error: --delimiter \"ab\": expected one ASCII character (or `tab`)\n");
    Ok(())
}

#[test]
fn byte_order_mark_and_encodings() -> R {
    let d = TempDir::new()?;
    for f in ["bom.csv", "latin1.csv", "utf16.csv"] {
        copy_in(d.path(), f)?;
    }
    import(d.path(), &["o.db", "bom.csv"]).assert().success();
    let db = d.path().join("o.db");
    assert_eq!(decl(&db, "bom")?[0].0, "a");
    import(d.path(), &["o.db", "latin1.csv", "--encoding", "latin1"])
        .assert()
        .success();
    assert_eq!(
        rows(&db, "SELECT * FROM latin1")?,
        vec![vec![t("José"), t("São Paulo")]]
    );
    import(d.path(), &["o.db", "utf16.csv", "--encoding", "utf-16"])
        .assert()
        .success();
    assert_eq!(rows(&db, "SELECT name FROM utf16")?, vec![vec![t("été")]]);
    Ok(())
}

#[test]
fn ndjson_and_json_arrays_load_alike() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "events.ndjson")?;
    copy_in(d.path(), "events.json")?;
    import(d.path(), &["o.db", "events.ndjson", "--table", "a"])
        .assert()
        .success();
    import(d.path(), &["o.db", "events.json", "--table", "b"])
        .assert()
        .success();
    let db = d.path().join("o.db");
    let expected = vec![
        vec![
            i(1),
            t("open"),
            i(1),
            t(r#"{"ip":"10.0.0.1"}"#),
            t(r#"["a","b"]"#),
            N,
            N,
        ],
        vec![i(2), t("close"), i(0), N, N, t("007"), N],
        vec![i(3), N, N, N, N, N, f(2.5)],
    ];
    for table in ["a", "b"] {
        let cols: Vec<String> = decl(&db, table)?
            .into_iter()
            .map(|(n, t)| format!("{n} {t}"))
            .collect();
        assert_eq!(
            cols,
            [
                "id INTEGER",
                "kind TEXT",
                "ok INTEGER",
                "meta TEXT",
                "tags TEXT",
                "code TEXT",
                "score REAL"
            ]
        );
        assert_eq!(
            rows(&db, &format!("SELECT * FROM {table} ORDER BY id"))?,
            expected
        );
    }
    Ok(())
}

#[test]
fn json_keys_first_seen_after_the_sample_add_columns() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "events.ndjson")?;
    import(d.path(), &["o.db", "events.ndjson", "--sample", "1"])
        .assert()
        .success();
    let db = d.path().join("o.db");
    assert_eq!(
        rows(&db, "SELECT id, code, score FROM events ORDER BY id")?,
        vec![
            vec![i(1), N, N],
            vec![i(2), t("007"), N],
            vec![i(3), N, f(2.5)]
        ]
    );
    // Into an existing table, a new key needs --alter.
    std::fs::write(
        d.path().join("more.ndjson"),
        "{\"id\": 4}\n{\"id\": 5, \"fresh\": 1}\n",
    )?;
    import(
        d.path(),
        &["o.db", "more.ndjson", "--table", "events", "--sample", "1"],
    )
    .assert()
    .code(4)
    .stderr(predicate::str::contains(
        "has no column \"fresh\", which the input has from some record on; use --alter",
    ));
    assert_eq!(rows(&db, "SELECT count(*) FROM events")?, vec![vec![i(3)]]);
    import(
        d.path(),
        &[
            "o.db",
            "more.ndjson",
            "--table",
            "events",
            "--sample",
            "1",
            "--alter",
        ],
    )
    .assert()
    .success();
    assert_eq!(
        rows(
            &db,
            "SELECT id, fresh FROM events WHERE id >= 4 ORDER BY id"
        )?,
        vec![vec![i(4), N], vec![i(5), i(1)]]
    );
    Ok(())
}

#[test]
fn gzip_and_stdin() -> R {
    let d = TempDir::new()?;
    let raw = std::fs::read(testdata("types.csv"))?;
    let mut gz = flate2_like_gzip(&raw)?;
    std::fs::write(d.path().join("types.csv.gz"), &mut gz)?;
    import(d.path(), &["o.db", "types.csv.gz"])
        .assert()
        .success();
    let db = d.path().join("o.db");
    assert_eq!(rows(&db, "SELECT count(*) FROM types")?, vec![vec![i(3)]]);
    import(d.path(), &["o.db", "-"])
        .write_stdin(raw.clone())
        .assert()
        .code(2)
        .stderr("error: <stdin>: an input without a file name gives no table name; name the table with --table\n");
    import(d.path(), &["o.db", "-", "--table", "piped"])
        .write_stdin(raw)
        .assert()
        .success();
    assert_eq!(rows(&db, "SELECT count(*) FROM piped")?, vec![vec![i(3)]]);
    Ok(())
}

/// gzip through the system's `gzip`, so the test needs no compression crate of its own.
/// A `.gz` that is not a whole gzip stream (cut short, a garbled body, no gzip at all)
/// is bad input: exit 1, naming the file, no database left, whatever the format, engine
/// or tolerance of bad records.
#[test]
fn a_broken_gzip_input_is_bad_input() -> R {
    let d = TempDir::new()?;
    let csv: Vec<u8> = (0..2000)
        .flat_map(|k| format!("{k},row {k}\n").into_bytes())
        .collect();
    let good = flate2_like_gzip(&[b"id,name\n".as_slice(), &csv].concat())?;
    let mut garbled = good.clone();
    let mid = garbled.len() / 2;
    for b in &mut garbled[mid..mid + 16] {
        *b ^= 0x5a;
    }
    let cases: [(&str, Vec<u8>); 3] = [
        ("cut", good[..good.len() / 2].to_vec()),
        ("garbled", garbled),
        ("plain", b"id,name\n1,x\n".to_vec()),
    ];
    for (name, bytes) in cases {
        for ext in ["csv", "ndjson"] {
            let file = format!("{name}.{ext}.gz");
            std::fs::write(d.path().join(&file), &bytes)?;
            for extra in [&[][..], &["--max-errors", "5"], &["--engine", "sqlite"]] {
                let mut args = vec!["o.db", file.as_str()];
                args.extend_from_slice(extra);
                import(d.path(), &args)
                    .assert()
                    .code(1)
                    .stderr(predicate::str::contains(file.clone()))
                    .stderr(predicate::str::contains("not a whole gzip stream"));
                assert!(!d.path().join("o.db").exists(), "{file} {extra:?}");
            }
        }
    }
    Ok(())
}

fn flate2_like_gzip(data: &[u8]) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    child.stdin.take().ok_or("no stdin")?.write_all(data)?;
    let out = child.wait_with_output()?;
    Ok(out.stdout)
}

#[test]
fn an_unknown_extension_is_sniffed_or_needs_a_format_flag() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("data.txt"), "a\n1\n")?;
    import(d.path(), &["s.db", "data.txt"])
        .assert()
        .success()
        .stderr(predicates::str::contains("sniffed: data.txt: "));
    import(d.path(), &["o.db", "data.txt", "--no-sniff"])
        .assert()
        .code(2)
        .stderr("error: data.txt: cannot tell the format from the file name; use --csv, --tsv, --nl, --json or --format (parquet, arrow)\n");
    import(d.path(), &["o.db", "data.txt", "--format", "csv"])
        .assert()
        .success();
    Ok(())
}

// ---------------------------------------------------------------- bad input

/// Every file in testdata/bad fails with exactly the message in its .err file, exit 1,
/// and leaves no database (and no temp file) behind.
#[test]
fn bad_inputs_fail_with_their_golden_message() -> R {
    let d = TempDir::new()?;
    let mut seen = 0;
    for entry in std::fs::read_dir(testdata("bad"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "err") {
            continue;
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("name")?
            .to_string();
        std::fs::copy(&path, d.path().join(&name))?;
        let expected = std::fs::read_to_string(path.with_extension("err"))?;
        import(d.path(), &["out.db", &name])
            .assert()
            .code(1)
            .stderr(expected);
        assert!(!d.path().join("out.db").exists(), "{name} left a database");
        assert!(
            !d.path().join("out.db.liteload-tmp").exists(),
            "{name} left a temp file"
        );
        seen += 1;
    }
    assert!(seen >= 9);
    Ok(())
}

#[test]
fn a_failed_append_leaves_the_database_as_it_was() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.csv"), "a,b\n1,x\n2,y\n")?;
    import(d.path(), &["o.db", "t.csv"]).assert().success();
    std::fs::write(d.path().join("t2.csv"), "a,b\n3,z\n4\n")?;
    import(d.path(), &["o.db", "t2.csv", "--table", "t"])
        .assert()
        .code(1);
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT a FROM t ORDER BY a")?,
        vec![vec![i(1)], vec![i(2)]]
    );
    Ok(())
}

#[test]
fn rejects_file_and_max_errors() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("r.csv"), "a,b\n1,x\n2\n3,y,extra\n4,z\n")?;
    import(d.path(), &["o.db", "r.csv", "--rejects", "rej.ndjson"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Loaded 2 rows into \"r\""))
        .stdout(predicate::str::contains("2 rejects"));
    let rej = std::fs::read_to_string(d.path().join("rej.ndjson"))?;
    let lines: Vec<serde_json::Value> = rej
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["line"], 3);
    assert_eq!(lines[0]["fields"], serde_json::json!(["2"]));
    assert_eq!(lines[1]["column"], 5);
    assert!(lines[1]["reason"]
        .as_str()
        .is_some_and(|r| r.starts_with("expected 2 fields, found 3")));
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT a FROM r ORDER BY a")?,
        vec![vec![i(1)], vec![i(4)]]
    );

    import(d.path(), &["m.db", "r.csv", "--max-errors", "1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "r.csv:4:5: record 3: expected 2 fields, found 3",
        ))
        .stderr(predicate::str::contains(
            "stopped: more than 1 bad records (--max-errors 1)",
        ));
    assert!(!d.path().join("m.db").exists());
    Ok(())
}

#[test]
fn ragged_rows_can_be_padded_or_truncated() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("r.csv"), "a,b\n1\n2,y,extra\n")?;
    import(d.path(), &["p.db", "r.csv", "--ragged", "pad"])
        .assert()
        .code(1);
    import(d.path(), &["t.db", "r.csv", "--ragged", "truncate"])
        .assert()
        .success();
    assert_eq!(
        rows(&d.path().join("t.db"), "SELECT a, b FROM r ORDER BY a")?,
        vec![vec![i(1), N], vec![i(2), t("y")]]
    );
    Ok(())
}

#[test]
fn a_record_over_the_size_limit_is_an_error_not_an_allocation() -> R {
    let d = TempDir::new()?;
    // An unbalanced quote: read to the end without holding the bytes, then named.
    std::fs::write(
        d.path().join("big.csv"),
        format!("a\n\"{}", "x".repeat(100_000)),
    )?;
    import(d.path(), &["o.db", "big.csv", "--max-record-bytes", "1000"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "big.csv:2:1: record 1: expected a closing quote",
        ));
    // A long record that ends: a bad record, at its position.
    std::fs::write(
        d.path().join("long.csv"),
        format!("a\n1\n\"{}\"\n3\n", "x".repeat(100_000)),
    )?;
    import(
        d.path(),
        &["o.db", "long.csv", "--max-record-bytes", "1000"],
    )
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "long.csv:3:1: record 2: record longer than 1000 bytes",
    ));
    Ok(())
}

#[test]
fn a_header_only_file_creates_an_empty_text_table() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("h.csv"), "a,b\n")?;
    import(d.path(), &["o.db", "h.csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Loaded 0 rows into \"h\""));
    let db = d.path().join("o.db");
    assert_eq!(
        decl(&db, "h")?,
        vec![("a".into(), "TEXT".into()), ("b".into(), "TEXT".into())]
    );
    assert_eq!(rows(&db, "SELECT count(*) FROM h")?, vec![vec![i(0)]]);
    Ok(())
}

// ---------------------------------------------------------------- names

#[test]
fn names_from_input_are_only_ever_quoted_identifiers() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("k.csv"),
        "select,\"we\"\"ird name\",,SELECT,from\n1,2,3,4,5\n",
    )?;
    import(
        d.path(),
        &[
            "o.db",
            "k.csv",
            "--table",
            "t\"; DROP TABLE x; --",
            "--index",
            "from",
        ],
    )
    .assert()
    .success()
    .stderr(predicate::str::contains(
        "note: k.csv: column 3 has no name; it is called \"c3\"",
    ))
    .stderr(predicate::str::contains(
        "note: k.csv: column 4 repeats the name \"SELECT\"; it is called \"SELECT_2\"",
    ));
    let db = d.path().join("o.db");
    let cols: Vec<String> = decl(&db, "t\"; DROP TABLE x; --")?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(cols, ["select", "we\"ird name", "c3", "SELECT_2", "from"]);
    assert_eq!(
        rows(&db, "SELECT \"from\" FROM \"t\"\"; DROP TABLE x; --\"")?,
        vec![vec![i(5)]]
    );
    Ok(())
}

// ---------------------------------------------------------------- keys, indexes, appends

#[test]
fn keys_and_indexes() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("k.csv"),
        "id,name,city\n3,c,Oslo\n1,a,Rome\n2,b,Oslo\n",
    )?;
    import(
        d.path(),
        &[
            "o.db",
            "k.csv",
            "--pk",
            "id",
            "--index",
            "city",
            "--unique-index",
            "name,city",
        ],
    )
    .assert()
    .success();
    let db = d.path().join("o.db");
    let schema = rows(&db, "SELECT sql FROM sqlite_schema ORDER BY name")?;
    let text: Vec<String> = schema
        .into_iter()
        .filter_map(|r| match &r[0] {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert!(
        text.iter()
            .any(|s| s.contains("\"id\" INTEGER PRIMARY KEY")),
        "{text:?}"
    );
    assert!(
        text.contains(&"CREATE INDEX \"idx_k_city\" ON \"k\" (\"city\")".to_string()),
        "{text:?}"
    );
    assert!(
        text.contains(
            &"CREATE UNIQUE INDEX \"idx_k_name_city\" ON \"k\" (\"name\", \"city\")".to_string()
        ),
        "{text:?}"
    );
    // The key is the rowid.
    assert_eq!(
        rows(&db, "SELECT rowid, name FROM k ORDER BY rowid")?,
        vec![vec![i(1), t("a")], vec![i(2), t("b")], vec![i(3), t("c")]]
    );

    import(d.path(), &["c.db", "k.csv", "--pk", "name,city"])
        .assert()
        .success();
    assert!(rows(&d.path().join("c.db"), "SELECT sql FROM sqlite_schema")?[0][0] == t("CREATE TABLE \"k\" (\n  \"id\" INTEGER,\n  \"name\" TEXT,\n  \"city\" TEXT,\n  PRIMARY KEY (\"name\", \"city\")\n)"));

    import(d.path(), &["x.db", "k.csv", "--index", "nope"])
        .assert()
        .code(2)
        .stderr(
            "error: index column \"nope\": table \"k\" has no such column (columns: id, name, city)\n",
        );
    assert!(!d.path().join("x.db").exists());
    Ok(())
}

#[test]
fn a_duplicate_key_fails_the_load_or_is_rejected() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("dup.csv"), "id,v\n1,a\n1,b\n2,c\n")?;
    import(d.path(), &["o.db", "dup.csv", "--pk", "id"])
        .assert()
        .code(1)
        .stderr("error: dup.csv:3:1: record 2: SQLite refused the row: UNIQUE constraint failed: dup.id\n");
    assert!(!d.path().join("o.db").exists());
    import(
        d.path(),
        &["o.db", "dup.csv", "--pk", "id", "--rejects", "r.ndjson"],
    )
    .assert()
    .success();
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT id, v FROM dup ORDER BY id")?,
        vec![vec![i(1), t("a")], vec![i(2), t("c")]]
    );
    let rej: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(d.path().join("r.ndjson"))?.trim())?;
    assert_eq!(rej["fields"], serde_json::json!([1, "b"]));
    Ok(())
}

#[test]
fn appends_match_columns_by_name_and_alter_adds_them() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.csv"), "a,b\n1,x\n")?;
    import(d.path(), &["o.db", "t.csv"]).assert().success();
    std::fs::write(d.path().join("t2.csv"), "B,A\ny,2\n")?;
    import(d.path(), &["o.db", "t2.csv", "--table", "t"])
        .assert()
        .success()
        .stdout(predicate::str::contains("(balanced)"));
    std::fs::write(d.path().join("t3.csv"), "a,c\n3,new\n")?;
    import(d.path(), &["o.db", "t3.csv", "--table", "t"])
        .assert()
        .code(4)
        .stderr("error: table \"t\" has no column \"c\" (it has: a, b); use --alter to add it\n");
    import(d.path(), &["o.db", "t3.csv", "--table", "t", "--alter"])
        .assert()
        .success();
    let db = d.path().join("o.db");
    assert_eq!(
        rows(&db, "SELECT a, b, c FROM t ORDER BY a")?,
        vec![
            vec![i(1), t("x"), N],
            vec![i(2), t("y"), N],
            vec![i(3), N, t("new")]
        ]
    );
    import(d.path(), &["o.db", "t3.csv", "--table", "t", "--pk", "a"])
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "a primary key applies when liteload creates the table",
        ));
    Ok(())
}

#[test]
fn several_files_load_in_one_run() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("x.csv"), "a\n1\n")?;
    std::fs::write(d.path().join("y.csv"), "a\n2\n")?;
    import(d.path(), &["o.db", "x.csv", "y.csv"])
        .assert()
        .success();
    let db = d.path().join("o.db");
    assert_eq!(
        rows(&db, "SELECT (SELECT a FROM x), (SELECT a FROM y)")?,
        vec![vec![i(1), i(2)]]
    );
    import(d.path(), &["all.db", "x.csv", "y.csv", "--table", "both"])
        .assert()
        .success();
    assert_eq!(
        rows(&d.path().join("all.db"), "SELECT a FROM both ORDER BY a")?,
        vec![vec![i(1)], vec![i(2)]]
    );
    Ok(())
}

// ---------------------------------------------------------------- durability and output

#[test]
fn a_stale_temp_file_is_cleaned_up_and_reported() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.csv"), "a\n1\n")?;
    std::fs::write(
        d.path().join("o.db.liteload-tmp"),
        b"half a database from a killed run",
    )?;
    import(d.path(), &["o.db", "t.csv"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "note: removed o.db.liteload-tmp left by an interrupted run",
        ));
    assert!(!d.path().join("o.db.liteload-tmp").exists());
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT a FROM t")?,
        vec![vec![i(1)]]
    );
    // Beside an existing DB too (a kill between the link into place and the unlink).
    std::fs::write(d.path().join("o.db.liteload-tmp"), b"")?;
    import(d.path(), &["o.db", "t.csv"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "note: removed o.db.liteload-tmp left by an interrupted run",
        ));
    assert!(!d.path().join("o.db.liteload-tmp").exists());
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT count(*) FROM t")?,
        vec![vec![i(2)]]
    );
    Ok(())
}

#[test]
fn durability_profiles() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.csv"), "a\n1\n")?;
    import(d.path(), &["u.db", "t.csv", "--durability", "unsafe"])
        .assert()
        .success()
        .stderr(predicate::str::contains("warning: --durability unsafe: a crash or power loss during this load can leave u.db corrupt"));
    import(d.path(), &["u.db", "t.csv", "--durability", "atomic-new"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "durability atomic-new builds a new file, but this one exists (leave --durability out",
        ));
    import(d.path(), &["w.db", "t.csv", "--durability", "durable"])
        .assert()
        .success();
    assert_eq!(
        rows(&d.path().join("w.db"), "PRAGMA journal_mode")?,
        vec![vec![t("wal")]]
    );
    import(d.path(), &["p.db", "t.csv", "--page-size", "65536"])
        .assert()
        .success();
    assert_eq!(
        rows(&d.path().join("p.db"), "PRAGMA page_size")?,
        vec![vec![i(65536)]]
    );
    import(d.path(), &["p2.db", "t.csv", "--page-size", "1000"])
        .assert()
        .code(2)
        .stderr("error: page size 1000: expected a power of two from 512 to 65536\n");
    Ok(())
}

#[test]
fn summary_json_and_parse_only() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "types.csv")?;
    let out = import(d.path(), &["o.db", "types.csv", "--summary-json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let s: serde_json::Value = serde_json::from_slice(&out)?;
    assert_eq!(s["rows"], 3);
    assert_eq!(s["tables"], serde_json::json!(["types"]));
    assert_eq!(s["durability"], "atomic-new");
    assert!(s["db_bytes"].as_u64().is_some_and(|b| b > 0));
    assert!(s["seconds"].as_f64().is_some());
    import(d.path(), &["none.db", "types.csv", "--parse-only"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Parsed 3 rows into \"types\""));
    assert!(!d.path().join("none.db").exists());
    Ok(())
}

#[test]
fn quiet_prints_nothing_and_help_explains() -> R {
    let d = TempDir::new()?;
    copy_in(d.path(), "types.csv")?;
    import(d.path(), &["o.db", "types.csv", "--quiet"])
        .assert()
        .success()
        .stdout("")
        .stderr("");
    liteload()
        .args(["import", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("A leading zero"))
        .stdout(predicate::str::contains("Examples:"))
        .stdout(predicate::str::contains("--rejects <FILE>"));
    liteload()
        .args(["info"])
        .assert()
        .success()
        .stdout(predicate::str::contains("DEFAULT_MEMSTATUS=0"));
    Ok(())
}

/// `--if-exists`: append (the default), fail (exit 2, nothing written) or replace (the old
/// table dropped in the load's transaction, so a failed load keeps it).
#[test]
fn if_exists_appends_fails_or_replaces() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("a.csv"), "n,s\n1,x\n")?;
    std::fs::write(d.path().join("b.csv"), "k\nzoë\n")?;
    std::fs::write(d.path().join("bad.csv"), "k\n1\n2,3\n")?;
    let db = d.path().join("o.db");
    for _ in 0..2 {
        import(d.path(), &["o.db", "a.csv", "--table", "t"])
            .assert()
            .success();
    }
    assert_eq!(rows(&db, "SELECT count(*) FROM t")?, vec![vec![i(2)]]);
    import(
        d.path(),
        &["o.db", "a.csv", "--table", "t", "--if-exists", "fail"],
    )
    .assert()
    .code(4)
    .stderr(predicate::str::contains("exists already"));
    import(
        d.path(),
        &["o.db", "bad.csv", "--table", "t", "--if-exists", "replace"],
    )
    .assert()
    .code(1);
    assert_eq!(rows(&db, "SELECT count(*) FROM t")?, vec![vec![i(2)]]);
    import(
        d.path(),
        &["o.db", "b.csv", "--table", "t", "--if-exists", "replace"],
    )
    .assert()
    .success();
    assert_eq!(rows(&db, "SELECT * FROM t")?, vec![vec![t("zoë")]]);
    assert_eq!(decl(&db, "t")?, vec![("k".to_string(), "TEXT".to_string())]);
    Ok(())
}

/// XML: told by its extension (`.xml`, `.xml.gz`) or its first byte (stdin, `.txt`),
/// records at the sniffed path (which `sniff` shows) or at --record; a document that is
/// not well-formed is exit 1 with its line and column, and leaves no database.
#[test]
fn xml_by_name_content_and_record_path() -> R {
    let d = TempDir::new()?;
    let doc = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<posts>\n  <meta v=\"2\"/>\n  <row Id=\"1\" Score=\"10\" Body=\"&lt;p&gt;Hi &amp; bye&lt;/p&gt;\" Title=\"Zoë\"/>\n  <row Id=\"2\" Score=\"-1\" Body=\"x\" ParentId=\"1\"/>\n</posts>\n";
    std::fs::write(d.path().join("Posts.xml"), doc)?;
    std::fs::write(d.path().join("texts.txt"), doc)?;
    std::fs::write(d.path().join("p.xml.gz"), flate2_like_gzip(doc.as_bytes())?)?;
    liteload()
        .current_dir(d.path())
        .args(["sniff", "Posts.xml", "texts.txt"])
        .assert()
        .success()
        .stdout(predicate::str::contains("records: the elements at posts/row").count(2));
    for (src, table) in [
        ("Posts.xml", "Posts"),
        ("texts.txt", "texts"),
        ("p.xml.gz", "p"),
    ] {
        import(d.path(), &["o.db", src]).assert().success();
        let db = d.path().join("o.db");
        assert_eq!(
            decl(&db, table)?,
            [
                ("Id", "INTEGER"),
                ("Score", "INTEGER"),
                ("Body", "TEXT"),
                ("Title", "TEXT"),
                ("ParentId", "INTEGER")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(
            rows(
                &db,
                &format!("SELECT Id, Body, Title, ParentId FROM \"{table}\"")
            )?,
            vec![
                vec![i(1), t("<p>Hi & bye</p>"), t("Zoë"), Value::Null],
                vec![i(2), t("x"), Value::Null, i(1)]
            ]
        );
    }
    import(
        d.path(),
        &["o.db", "-", "--table", "piped", "--record", "posts/meta"],
    )
    .write_stdin(doc)
    .assert()
    .success();
    assert_eq!(
        rows(&d.path().join("o.db"), "SELECT v FROM piped")?,
        vec![vec![i(2)]]
    );
    std::fs::write(
        d.path().join("bad.xml"),
        "<posts>\n  <row Id=\"1\"/>\n  <row Id=\"2\">\n</posts>\n",
    )?;
    import(d.path(), &["new.db", "bad.xml"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "bad.xml:4:1: ill-formed document: expected `</row>`, but `</posts>` was found",
        ));
    assert!(!d.path().join("new.db").exists());
    Ok(())
}

/// JSON records under a key: found with a note, or named by `--record` (dotted or a
/// JSON Pointer), shown by `sniff`; stdin's pretty-printed object is JSON by its first
/// bytes; a document broken after its records, or holding two arrays of objects, loads
/// nothing; `--record` with CSV is refused.
#[test]
fn json_records_at_a_path() -> R {
    let d = TempDir::new()?;
    let doc = "{\n  \"Version\": \"5.5\",\n  \"List\": [\n    {\"id\": 1, \"name\": \"Zoë\"},\n    {\"id\": 2, \"name\": \"😀\", \"tags\": [1]}\n  ],\n  \"count\": 2\n}\n";
    std::fs::write(d.path().join("export.json"), doc)?;
    liteload()
        .current_dir(d.path())
        .args(["sniff", "export.json"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "records: the objects of the array at List",
        ));
    import(d.path(), &["o.db", "export.json"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "note: export.json: the records are the objects of the array at List",
        ));
    let want = vec![
        vec![i(1), t("Zoë"), Value::Null],
        vec![i(2), t("😀"), t("[1]")],
    ];
    let db = d.path().join("o.db");
    assert_eq!(rows(&db, "SELECT id, name, tags FROM export")?, want);
    // Named, dotted or as a JSON Pointer; piped, the object is told from its first bytes.
    let nested = format!("{{\"data\": {{\"a.b\": {doc}}}}}");
    for (i, path) in ["data.a.b.List", "/data/a.b/List"].iter().enumerate() {
        std::fs::write(d.path().join("nested.json"), &nested)?;
        import(
            d.path(),
            &[
                "o.db",
                "nested.json",
                "--table",
                &format!("n{i}"),
                "--record",
                path,
            ],
        )
        .assert()
        .code(if i == 0 { 1 } else { 0 });
    }
    assert_eq!(rows(&db, "SELECT id, name, tags FROM n1")?, want);
    import(d.path(), &["o.db", "-", "--table", "piped"])
        .write_stdin(doc)
        .assert()
        .success();
    assert_eq!(rows(&db, "SELECT id, name, tags FROM piped")?, want);
    // Broken after the records, or ambiguous: nothing is loaded.
    let before = std::fs::read(&db)?;
    std::fs::write(
        d.path().join("broken.json"),
        doc.replace("\"count\": 2", "\"count\": tru"),
    )?;
    import(d.path(), &["o.db", "broken.json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("broken.json:7:12: "));
    std::fs::write(
        d.path().join("two.json"),
        doc.replace("\"count\": 2", "\"More\": [{\"id\": 3}]"),
    )?;
    import(d.path(), &["o.db", "two.json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "two.json:7:11: the member \"More\" holds an array of objects too, after the records at List",
        ));
    assert_eq!(std::fs::read(&db)?, before);
    std::fs::write(d.path().join("t.csv"), "a\n1\n")?;
    import(d.path(), &["o.db", "t.csv", "--record", "List"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "a record path applies to XML and JSON documents",
        ));
    Ok(())
}

/// `--flatten`: nested objects' members as columns, a collision named `_2` with a note;
/// the separator a flag; refused for CSV.
#[test]
fn flatten_nested_objects_into_columns() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("n.ndjson"),
        "{\"id\": 1, \"owner\": {\"name\": \"Zoë\", \"address\": {\"city\": \"Köln\"}}, \"owner_name\": \"dup\", \"tags\": [1]}\n{\"id\": 2, \"owner\": null, \"x\": {}}\n",
    )?;
    import(d.path(), &["o.db", "n.ndjson", "--flatten"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "key \"owner_name\" is stored in column \"owner_name_2\"",
        ));
    let db = d.path().join("o.db");
    assert_eq!(
        decl(&db, "n")?
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        [
            "id",
            "owner_name",
            "owner_address_city",
            "owner_name_2",
            "tags",
            "owner"
        ]
    );
    assert_eq!(
        rows(&db, "SELECT * FROM n")?,
        vec![
            vec![i(1), t("Zoë"), t("Köln"), t("dup"), t("[1]"), Value::Null],
            vec![
                i(2),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null
            ],
        ]
    );
    import(
        d.path(),
        &[
            "o.db",
            "n.ndjson",
            "--table",
            "dots",
            "--flatten",
            "--flatten-separator",
            ".",
        ],
    )
    .assert()
    .success();
    assert_eq!(
        rows(&db, "SELECT \"owner.address.city\" FROM dots WHERE id = 1")?,
        vec![vec![t("Köln")]]
    );
    // XML: a child with attributes or children taken apart; repeats stay JSON.
    std::fs::write(
        d.path().join("o.xml"),
        "<orders>\n<order id=\"1\"><customer vip=\"yes\"><name>Zoë</name><address><city>Köln</city></address>note</customer><item sku=\"a\"/><item sku=\"b\"/></order>\n<order id=\"2\"><customer><name>B</name></customer><customer_name>dup</customer_name></order>\n</orders>\n",
    )?;
    import(d.path(), &["o.db", "o.xml", "--flatten"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "element <customer_name> is stored in column \"customer_name_2\"",
        ));
    assert_eq!(
        rows(&db, "SELECT * FROM o")?,
        vec![
            vec![
                i(1),
                t("yes"),
                t("Zoë"),
                t("Köln"),
                t("note"),
                t("[{\"@sku\":\"a\"},{\"@sku\":\"b\"}]"),
                Value::Null
            ],
            vec![
                i(2),
                Value::Null,
                t("B"),
                Value::Null,
                Value::Null,
                Value::Null,
                t("dup")
            ],
        ]
    );
    assert_eq!(
        decl(&db, "o")?
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        [
            "id",
            "customer_vip",
            "customer_name",
            "customer_address_city",
            "customer_text",
            "item",
            "customer_name_2"
        ]
    );
    std::fs::write(d.path().join("t.csv"), "a\n1\n")?;
    import(d.path(), &["o.db", "t.csv", "--flatten"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "flattening nested objects applies to JSON, NDJSON, XML, Parquet and Arrow",
        ));
    Ok(())
}

/// `--nulls`: typed (the default), all (`--empty-null`), unquoted (PostgreSQL's CSV
/// rule); the last for delimited text only, and not with `--empty-null`.
#[test]
fn nulls_typed_all_and_unquoted() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.csv"), "id,n,s\n1,7,\"\"\n2,,\n")?;
    for (rule, want) in [
        ("typed", vec![vec![i(7), t("")], vec![Value::Null, t("")]]),
        (
            "all",
            vec![vec![i(7), Value::Null], vec![Value::Null, Value::Null]],
        ),
        (
            "unquoted",
            vec![vec![i(7), t("")], vec![Value::Null, Value::Null]],
        ),
    ] {
        let db = format!("{rule}.db");
        import(d.path(), &[&db, "t.csv", "--nulls", rule])
            .assert()
            .success();
        assert_eq!(
            rows(&d.path().join(&db), "SELECT n, s FROM t ORDER BY id")?,
            want,
            "{rule}"
        );
    }
    import(d.path(), &["e.db", "t.csv", "--empty-null"])
        .assert()
        .success();
    assert_eq!(
        rows(&d.path().join("e.db"), "SELECT n, s FROM t ORDER BY id")?,
        vec![vec![i(7), Value::Null], vec![Value::Null, Value::Null]]
    );
    import(
        d.path(),
        &["x.db", "t.csv", "--nulls", "unquoted", "--empty-null"],
    )
    .assert()
    .code(2)
    .stderr(predicate::str::contains("pick one"));
    std::fs::write(d.path().join("t.ndjson"), "{\"a\": \"\"}\n")?;
    import(d.path(), &["x.db", "t.ndjson", "--nulls", "unquoted"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("applies to CSV and TSV"));
    assert!(!d.path().join("x.db").exists());
    Ok(())
}

/// `--on-conflict` and `--key`: rows whose key is taken are refused (the default),
/// dropped, replaced, or update the loaded columns and keep the others.
#[test]
fn on_conflict_fail_ignore_replace_update() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("in.csv"), "id,name\n1,Ada\n3,Cy\n")?;
    let setup = |db: &str| -> rusqlite::Result<()> {
        rusqlite::Connection::open(d.path().join(db))?.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER); INSERT INTO t VALUES (1, 'old', 10), (2, 'two', 20);",
        )
    };
    for (rule, want) in [
        (
            "ignore",
            vec![
                vec![i(1), t("old"), i(10)],
                vec![i(2), t("two"), i(20)],
                vec![i(3), t("Cy"), Value::Null],
            ],
        ),
        (
            "replace",
            vec![
                vec![i(1), t("Ada"), Value::Null],
                vec![i(2), t("two"), i(20)],
                vec![i(3), t("Cy"), Value::Null],
            ],
        ),
        (
            "update",
            vec![
                vec![i(1), t("Ada"), i(10)],
                vec![i(2), t("two"), i(20)],
                vec![i(3), t("Cy"), Value::Null],
            ],
        ),
    ] {
        let db = format!("{rule}.db");
        setup(&db)?;
        import(
            d.path(),
            &[
                &db,
                "in.csv",
                "--table",
                "t",
                "--on-conflict",
                rule,
                "--key",
                "id",
            ],
        )
        .assert()
        .success();
        assert_eq!(
            rows(&d.path().join(&db), "SELECT * FROM t ORDER BY id")?,
            want,
            "{rule}"
        );
    }
    setup("fail.db")?;
    import(d.path(), &["fail.db", "in.csv", "--table", "t"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("in.csv:2"));
    assert_eq!(
        rows(&d.path().join("fail.db"), "SELECT count(*) FROM t")?,
        vec![vec![i(2)]]
    );
    import(
        d.path(),
        &["fail.db", "in.csv", "--table", "t", "--key", "id"],
    )
    .assert()
    .code(2)
    .stderr(predicate::str::contains("conflict rule"));
    Ok(())
}
