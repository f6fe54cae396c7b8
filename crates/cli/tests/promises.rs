//! The classes of broken promise found by hostile input (issue 13), each tested as a
//! class against a reference: the page writer against SQLite's own insert path (and
//! SQLite's `integrity_check` on every file), names against what SQLite accepts, ingest
//! against "a bad message never stops the stream", partial lines against a writer that
//! finishes them later.

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use proptest::prelude::*;
use rusqlite::types::Value;
use tempfile::TempDir;

use common::checked_rows;

type R = Result<(), Box<dyn std::error::Error>>;

/// What a finished command wrote to stderr.
fn stderr(out: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&out.get_output().stderr).to_string()
}

/// Appends `bytes` to the file at `path`, as a writer of a growing feed does.
fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .write_all(bytes)
}

fn liteload(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary builds");
    c.current_dir(dir).args(args);
    c
}

/// Every row of `t` with `typeof()` beside each value, after `integrity_check`.
fn typed_rows(db: &Path, cols: usize) -> rusqlite::Result<Vec<Vec<Value>>> {
    let list: Vec<String> = (1..=cols).map(|i| format!("typeof(c{i}), c{i}")).collect();
    checked_rows(
        db,
        &format!("SELECT {} FROM t ORDER BY rowid", list.join(", ")),
    )
}

// Values that misfit their column (after a sample, or under given types), and random
// numberish cells, go through every writer in the library's conformance suite
// (crates/core/tests/sinks.rs: misfit_after_sample, misfit_given_types,
// numberish_cells), judged by SQLite's own INSERT.

#[test]
fn zip_codes_forced_to_integer_are_integers() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("z.csv"), "zip\n02134\n00501\n")?;
    liteload(
        d.path(),
        &["import", "z.db", "z.csv", "--type", "zip=integer", "-q"],
    )
    .assert()
    .success();
    let rows = checked_rows(&d.path().join("z.db"), "SELECT typeof(zip), zip FROM z")?;
    assert_eq!(
        rows,
        vec![
            vec![Value::Text("integer".into()), Value::Integer(2134)],
            vec![Value::Text("integer".into()), Value::Integer(501)],
        ]
    );
    Ok(())
}

#[test]
fn names_sqlite_refuses_are_refused_by_both_engines() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("nul.csv"), "a,b\0c\n1,2\n")?;
    std::fs::write(d.path().join("ok.csv"), "a\n1\n")?;
    std::fs::write(d.path().join("sqlite_schema.csv"), "a\n1\n")?;
    for engine in ["direct", "sqlite", "auto"] {
        let e = ["--engine", engine];
        let out = liteload(d.path(), &["import", "n.db", "nul.csv", e[0], e[1]])
            .assert()
            .code(1);
        let err = stderr(&out);
        assert!(err.contains("nul.csv:1:") && err.contains("NUL"), "{err}");
        for args in [
            vec!["import", "n.db", "ok.csv", "--table", "sqlite_master"],
            vec!["import", "n.db", "ok.csv", "--table", "SQLITE_SCHEMA"],
            vec!["import", "n.db", "sqlite_schema.csv"],
        ] {
            let mut a = args.clone();
            a.extend_from_slice(&e);
            let out = liteload(d.path(), &a).assert().code(2);
            let err = stderr(&out);
            assert!(err.contains("reserves"), "{err}");
        }
        for args in [
            vec![
                "generate",
                "g.db",
                "--rows",
                "5",
                "--table",
                "sqlite_master",
            ],
            vec![
                "generate",
                "g.db",
                "--rows",
                "5",
                "--column",
                "a\0b=int:1..2",
            ],
        ] {
            let mut a = args.clone();
            a.extend_from_slice(&e);
            // A NUL cannot be an argument of a process; the spec file carries it.
            if a.iter().any(|s| s.contains('\0')) {
                std::fs::write(
                    d.path().join("spec.toml"),
                    "[[column]]\nname = \"a\\u0000b\"\ngen = \"int:1..2\"\n",
                )?;
                a = vec!["generate", "g.db", "--rows", "5", "--spec", "spec.toml"];
                a.extend_from_slice(&e);
            }
            liteload(d.path(), &a).assert().code(2);
        }
        assert!(!d.path().join("n.db").exists() && !d.path().join("g.db").exists());
    }
    Ok(())
}

#[test]
fn json_keys_differing_in_case_get_columns_of_their_own() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("k.ndjson"),
        "{\"a\":1,\"A\":2}\n{\"A\":3}\n{\"b\\u0000\":4}\n{\"a\":5}\n",
    )?;
    let out = liteload(
        d.path(),
        &["import", "k.db", "k.ndjson", "--rejects", "r.jsonl"],
    )
    .assert()
    .success();
    let err = stderr(&out);
    assert!(
        err.contains("A_2"),
        "a note names the renamed column: {err}"
    );
    let rows = checked_rows(
        &d.path().join("k.db"),
        "SELECT a, A_2 FROM k ORDER BY rowid",
    )?;
    assert_eq!(
        rows,
        vec![
            vec![Value::Integer(1), Value::Integer(2)],
            vec![Value::Null, Value::Integer(3)],
            vec![Value::Integer(5), Value::Null],
        ]
    );
    let rejects = std::fs::read_to_string(d.path().join("r.jsonl"))?;
    assert!(rejects.contains("NUL"), "{rejects}");
    Ok(())
}

#[test]
fn json_integers_beyond_64_bits_keep_their_digits() -> R {
    let d = TempDir::new()?;
    let big = [
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
    ];
    let mut nd = String::new();
    let mut arr = vec![];
    for b in big {
        nd.push_str(&format!("{{\"n\":{b},\"m\":[{b}]}}\n"));
        arr.push(format!("{{\"n\":{b}}}"));
    }
    std::fs::write(d.path().join("b.ndjson"), nd)?;
    std::fs::write(d.path().join("b.json"), format!("[{}]", arr.join(",")))?;
    for file in ["b.ndjson", "b.json"] {
        let db = format!("{file}.db");
        liteload(d.path(), &["import", &db, file, "--table", "b", "-q"])
            .assert()
            .success();
        let rows = checked_rows(
            &d.path().join(&db),
            "SELECT typeof(n), n FROM b ORDER BY rowid",
        )?;
        if file == "b.ndjson" {
            // Nested in an array, stored as JSON text: the digits are kept there too.
            let nested = checked_rows(&d.path().join(&db), "SELECT m FROM b ORDER BY rowid")?;
            for (row, b) in nested.iter().zip(big) {
                assert!(
                    matches!(&row[0], Value::Text(t) if t.contains(b)),
                    "{row:?}"
                );
            }
        }
        let want: Vec<Vec<Value>> = big
            .iter()
            .map(|b| vec![Value::Text("text".into()), Value::Text(b.to_string())])
            .collect();
        assert_eq!(rows, want, "{file}");
    }
    Ok(())
}

#[test]
fn generate_float_ranges_wider_than_f64_stay_in_range() -> R {
    let d = TempDir::new()?;
    for engine in ["direct", "sqlite"] {
        let db = format!("{engine}.db");
        liteload(
            d.path(),
            &[
                "generate",
                &db,
                "--rows",
                "2000",
                "--table",
                "t",
                "--column",
                "a=float:-1e308..1e308",
                "--column",
                "b=choice:5,x,1.50",
                "--engine",
                engine,
                "-q",
            ],
        )
        .assert()
        .success();
        let rows = checked_rows(
            &d.path().join(&db),
            "SELECT count(*), sum(a >= -1e308 AND a < 1e308), count(DISTINCT a), \
             sum(typeof(b) = 'text'), sum(b IN ('5','x','1.50')) FROM t",
        )?;
        let n = Value::Integer(2000);
        assert_eq!(rows[0][0], n);
        assert_eq!(rows[0][1], n, "every value within LO <= x < HI");
        assert!(matches!(rows[0][2], Value::Integer(k) if k > 1900));
        assert_eq!(rows[0][3], n, "a TEXT choice stores its items as text");
        assert_eq!(rows[0][4], n);
    }
    Ok(())
}

fn ingest_args<'a>(file: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["ingest", "s.db", file, "--table", "t", "--key", "id", "-q"];
    a.extend_from_slice(extra);
    a
}

#[test]
fn a_bad_field_name_never_stops_ingest() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("f.jsonl"),
        "{\"id\":1,\"v\":1}\n{\"id\":2,\"ID\":5}\n{\"id\":3,\"v\\u0000\":1}\n{\"id\":4,\"Id\":1,\"v\":2}\n{\"id\":5,\"v\":3}\n",
    )?;
    liteload(d.path(), &ingest_args("f.jsonl", &["--rejects", "r.jsonl"]))
        .assert()
        .success();
    let rows = checked_rows(&d.path().join("s.db"), "SELECT id, v FROM t ORDER BY id")?;
    assert_eq!(
        rows,
        vec![
            vec![Value::Integer(1), Value::Integer(1)],
            vec![Value::Integer(5), Value::Integer(3)],
        ]
    );
    let rejects = std::fs::read_to_string(d.path().join("r.jsonl"))?;
    assert_eq!(rejects.lines().count(), 3, "{rejects}");
    assert!(
        rejects.contains("key column") && rejects.contains("NUL"),
        "{rejects}"
    );
    Ok(())
}

#[test]
fn an_unterminated_last_line_is_read_again_by_a_rerun() -> R {
    let d = TempDir::new()?;
    let feed = d.path().join("f.jsonl");
    std::fs::write(&feed, "{\"id\":1,\"v\":1}\n{\"id\":2,\"v\":")?;
    // The half line is bad now; the stored position stays before it.
    liteload(d.path(), &ingest_args("f.jsonl", &[]))
        .assert()
        .success();
    append(&feed, b"2}\n")?;
    liteload(d.path(), &ingest_args("f.jsonl", &[]))
        .assert()
        .success();
    let rows = checked_rows(&d.path().join("s.db"), "SELECT id, v FROM t ORDER BY id")?;
    assert_eq!(
        rows,
        vec![
            vec![Value::Integer(1), Value::Integer(1)],
            vec![Value::Integer(2), Value::Integer(2)],
        ]
    );
    Ok(())
}

#[test]
fn follow_waits_for_the_end_of_a_line_written_in_two_parts() -> R {
    let d = TempDir::new()?;
    let feed = d.path().join("f.jsonl");
    std::fs::write(&feed, "{\"id\":1,\"v\":1}\n{\"id\":2,")?;
    let mut child = common::spawn_ingest(
        d.path(),
        &ingest_args(
            "f.jsonl",
            &[
                "--follow",
                "--commit-interval",
                "50ms",
                "--rejects",
                "r.jsonl",
            ],
        )[1..],
    )?;
    std::thread::sleep(Duration::from_millis(700));
    append(&feed, b"\"v\":2}\n")?;
    let want = vec![
        vec![Value::Integer(1), Value::Integer(1)],
        vec![Value::Integer(2), Value::Integer(2)],
    ];
    let db = d.path().join("s.db");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline
        && checked_rows(&db, "SELECT id, v FROM t ORDER BY id").ok() != Some(want.clone())
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(common::terminate(&mut child)?);
    assert_eq!(checked_rows(&db, "SELECT id, v FROM t ORDER BY id")?, want);
    let rejects = std::fs::read_to_string(d.path().join("r.jsonl")).unwrap_or_default();
    assert_eq!(rejects, "", "no half line was taken as a message");
    Ok(())
}

/// Pieces of fields: ASCII, whole characters, and halves of characters.
const PIECES: &[&[u8]] = &[
    b"a",
    b"7",
    "é".as_bytes(),
    "✓".as_bytes(),
    b"\xC3",
    b"\xA9",
    b"\xE2\x9C",
    b"\x93",
    b" ",
];

/// A CSV line from `fields` (each a list of piece indexes and a layout: 0 unquoted,
/// 1 quoted, 2 quoted with an unquoted tail), and whether the line is valid UTF-8.
fn utf8_line(fields: &[(Vec<usize>, u8)]) -> (Vec<u8>, bool) {
    let mut line = vec![];
    for (i, (pieces, layout)) in fields.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        let bytes: Vec<u8> = pieces.iter().flat_map(|&p| PIECES[p].to_vec()).collect();
        match layout {
            0 => line.extend_from_slice(&bytes),
            1 => {
                line.push(b'"');
                line.extend_from_slice(&bytes);
                line.push(b'"');
            }
            _ => {
                let half = bytes.len() / 2;
                line.push(b'"');
                line.extend_from_slice(&bytes[..half]);
                line.push(b'"');
                line.extend_from_slice(&bytes[half..]);
            }
        }
    }
    let ok = std::str::from_utf8(&line).is_ok();
    line.push(b'\n');
    (line, ok)
}

/// Loads `csv` (header `a,b`) with rejects kept, and checks that exactly the records
/// whose bytes are valid UTF-8 were loaded, in order.
fn only_valid_utf8_loads(csv: &[u8], want: &[usize], extra: &[&str]) -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("u.csv"), csv)?;
    for engine in ["direct", "sqlite"] {
        let db = format!("{engine}.db");
        let mut args = vec![
            "import",
            &db,
            "u.csv",
            "--rejects",
            "r.jsonl",
            "--engine",
            engine,
        ];
        args.extend_from_slice(&["--no-detect-types", "-q"]);
        args.extend_from_slice(extra);
        liteload(d.path(), &args).assert().success();
        let rows = checked_rows(&d.path().join(&db), "SELECT a FROM u ORDER BY rowid")?;
        let got: Vec<usize> = rows
            .iter()
            .map(|r| match &r[0] {
                Value::Text(t) => t
                    .split('|')
                    .next()
                    .unwrap_or("")
                    .parse()
                    .unwrap_or(usize::MAX),
                _ => usize::MAX,
            })
            .collect();
        assert_eq!(got, want, "{engine}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The reference: a record is loaded exactly when its bytes are valid UTF-8, however
    /// its characters fall around delimiters and quotes.
    #[test]
    fn invalid_utf8_around_separators_is_a_bad_record(
        lines in prop::collection::vec(
            prop::collection::vec((prop::collection::vec(0..PIECES.len(), 0..5), 0u8..3), 2..3),
            1..40,
        )
    ) {
        let mut csv = b"a,b\n".to_vec();
        let mut want = vec![];
        for (no, fields) in lines.iter().enumerate() {
            let (mut line, ok) = utf8_line(fields);
            // The first field numbers the record: "N|" then the generated pieces.
            let mut numbered = format!("{no}|").into_bytes();
            numbered.append(&mut line);
            csv.extend_from_slice(&numbered);
            if ok {
                want.push(no);
            }
        }
        let res = only_valid_utf8_loads(&csv, &want, &[]);
        prop_assert!(res.is_ok(), "{res:?}");
    }
}

#[test]
fn invalid_utf8_around_separators_in_a_file_parsed_in_parts() -> R {
    // Over 8 MiB, so it is cut into parts and parsed on several threads.
    let mut csv = b"a,b\n".to_vec();
    let mut want = vec![];
    let mut x: u64 = 7;
    let mut no = 0;
    while csv.len() < 9 << 20 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let fields: Vec<(Vec<usize>, u8)> = (0..2)
            .map(|k| {
                let r = (x >> (20 + 16 * k)) as usize;
                let pieces = if r.is_multiple_of(97) {
                    vec![r % PIECES.len(), (r / 7) % PIECES.len()]
                } else {
                    vec![0, 2, 3]
                };
                (pieces, ((r / 11) % 3) as u8)
            })
            .collect();
        let (line, ok) = utf8_line(&fields);
        csv.extend_from_slice(format!("{no}|").as_bytes());
        csv.extend_from_slice(&line);
        if ok {
            want.push(no);
        }
        no += 1;
    }
    assert!(want.len() < no, "some records are bad");
    only_valid_utf8_loads(&csv, &want, &["--parse-threads", "3"])
}

#[test]
fn max_record_bytes_holds_for_every_record() -> R {
    let d = TempDir::new()?;
    let mut csv = String::from("n,s\n");
    let mut want = vec![];
    let mut x: u64 = 3;
    for n in 0..300 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = if n == 150 {
            100_000
        } else {
            (x >> 40) as usize % 2500
        };
        let quoted = n % 3 == 0;
        let s = "y".repeat(len);
        if quoted {
            csv.push_str(&format!("{n},\"{s}\nz\"\n"));
        } else {
            csv.push_str(&format!("{n},{s}\n"));
        }
        let bytes = n.to_string().len() + len + if quoted { 2 } else { 0 };
        if bytes <= 1000 {
            want.push(vec![Value::Integer(n as i64)]);
        }
    }
    std::fs::write(d.path().join("m.csv"), &csv)?;
    for engine in ["direct", "sqlite"] {
        let db = format!("{engine}.db");
        liteload(
            d.path(),
            &[
                "import",
                &db,
                "m.csv",
                "--max-record-bytes",
                "1000",
                "--rejects",
                "r.jsonl",
                "--engine",
                engine,
                "-q",
            ],
        )
        .assert()
        .success();
        assert_eq!(
            checked_rows(&d.path().join(&db), "SELECT n FROM m ORDER BY rowid")?,
            want
        );
    }
    liteload(
        d.path(),
        &["import", "z.db", "m.csv", "--max-record-bytes", "0"],
    )
    .assert()
    .code(2);
    // A JSON array element over the limit stops the load at its place (it cannot be
    // skipped without reading it); an NDJSON line over it is a bad record.
    let big = "x".repeat(5000);
    std::fs::write(
        d.path().join("a.json"),
        format!("[{{\"a\":1}},\n{{\"a\":\"{big}\"}},{{\"a\":3}}]"),
    )?;
    let out = liteload(
        d.path(),
        &["import", "a.db", "a.json", "--max-record-bytes", "1000"],
    )
    .assert()
    .code(1);
    let err = stderr(&out);
    assert!(
        err.contains("a.json:2:1") && err.contains("longer"),
        "{err}"
    );
    std::fs::write(
        d.path().join("n.ndjson"),
        format!("{{\"a\":1}}\n{{\"a\":\"{big}\"}}\n{{\"a\":3}}\n"),
    )?;
    liteload(
        d.path(),
        &["import", "n.db", "n.ndjson", "--max-record-bytes", "1000"],
    )
    .args(["--rejects", "nr.jsonl", "-q"])
    .assert()
    .success();
    assert_eq!(
        checked_rows(&d.path().join("n.db"), "SELECT a FROM n ORDER BY rowid")?,
        vec![vec![Value::Integer(1)], vec![Value::Integer(3)]]
    );
    Ok(())
}

#[test]
fn encodings_skip_a_utf8_bom_and_refuse_malformed_input() -> R {
    let d = TempDir::new()?;
    let mut latin = b"\xEF\xBB\xBFname,n\n".to_vec();
    latin.extend_from_slice(b"Jos\xE9,1\n");
    std::fs::write(d.path().join("l.csv"), latin)?;
    liteload(
        d.path(),
        &["import", "l.db", "l.csv", "--encoding", "latin1", "-q"],
    )
    .assert()
    .success();
    assert_eq!(
        checked_rows(&d.path().join("l.db"), "SELECT name, n FROM l")?,
        vec![vec![Value::Text("José".into()), Value::Integer(1)]]
    );
    // UTF-16LE with a byte-order mark; the second record holds a lone surrogate.
    let utf16 = |s: &str| -> Vec<u8> { s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect() };
    let mut w = vec![0xFF, 0xFE];
    w.extend(utf16("a,b\n1,x\n2,"));
    w.extend_from_slice(&[0x3D, 0xD8]);
    w.extend(utf16("y\n3,z\n"));
    std::fs::write(d.path().join("w.csv"), &w)?;
    for enc in ["utf-16", "utf-16le"] {
        let db = format!("{enc}.db");
        liteload(
            d.path(),
            &[
                "import",
                &db,
                "w.csv",
                "--encoding",
                enc,
                "--rejects",
                "r.jsonl",
                "-q",
            ],
        )
        .assert()
        .success();
        assert_eq!(
            checked_rows(&d.path().join(&db), "SELECT a, b FROM w ORDER BY rowid")?,
            vec![
                vec![Value::Integer(1), Value::Text("x".into())],
                vec![Value::Integer(3), Value::Text("z".into())],
            ]
        );
    }
    let out = liteload(
        d.path(),
        &["import", "x.db", "w.csv", "--encoding", "utf-16"],
    )
    .assert()
    .code(1);
    let err = stderr(&out);
    assert!(
        err.contains("w.csv:3:") && err.contains("lone surrogate"),
        "{err}"
    );
    Ok(())
}

/// A small tmpfs, unmounted when dropped; `None` where mounting is not allowed (not
/// root, no mount namespace rights).
struct SmallDisk(TempDir);

impl SmallDisk {
    fn new(size: &str) -> Option<SmallDisk> {
        let d = TempDir::new().ok()?;
        let ok = Process::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(d.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(d))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Process::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_no_wal_behind_and_the_error_names_the_file() -> R {
    let Some(disk) = SmallDisk::new("8m") else {
        eprintln!("skipped: this machine does not let the test mount a small tmpfs");
        return Ok(());
    };
    let src = TempDir::new()?;
    let mut x: u64 = 1;
    for i in 0..40 {
        let bytes: Vec<u8> = (0..500_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        std::fs::write(src.path().join(format!("f{i}")), bytes)?;
    }
    let dir = disk.0.path();
    let out = liteload(dir, &["kv", "import-dir", "s.db"])
        .arg(src.path())
        .assert()
        .code(3);
    let err = stderr(&out);
    assert!(err.contains("s.db") && err.contains("full"), "{err}");
    assert_eq!(err.matches("full").count(), 1, "said once: {err}");
    let wal = std::fs::metadata(dir.join("s.db-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "the failed write's WAL frames are given back");
    checked_rows(&dir.join("s.db"), "SELECT count(*) FROM kv")?;
    std::fs::remove_file(dir.join("s.db"))?;
    // A new database that does not fit: no file, no temp file, and the error names it.
    let mut csv = String::from("a,b\n");
    for i in 0..400_000 {
        csv.push_str(&format!(
            "{i},text number {}\n",
            i as u64 * 7919 % 1_000_007
        ));
    }
    std::fs::write(src.path().join("rows.csv"), csv)?;
    for engine in ["sqlite", "direct"] {
        let db = dir.join(format!("{engine}.db"));
        let out = liteload(dir, &["import", "--engine", engine])
            .arg(&db)
            .arg(src.path().join("rows.csv"))
            .assert()
            .code(3);
        let err = stderr(&out);
        assert!(err.contains(&format!("{engine}.db")), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir)?.collect();
        assert!(left.is_empty(), "{engine}: {left:?}");
    }
    Ok(())
}

#[test]
fn ingest_resumes_only_in_the_same_file() -> R {
    let d = TempDir::new()?;
    let feed = d.path().join("f.jsonl");
    std::fs::write(&feed, "{\"id\":1,\"v\":1}\n{\"id\":2,\"v\":2}\n")?;
    liteload(d.path(), &ingest_args("f.jsonl", &[]))
        .assert()
        .success();
    // Another, longer file put at the same path: every message of it is applied.
    let other = d.path().join("g.jsonl");
    std::fs::write(
        &other,
        "{\"id\":3,\"v\":3}\n{\"id\":4,\"v\":4}\n{\"id\":5,\"v\":5}\n",
    )?;
    std::fs::rename(&other, &feed)?;
    let out = liteload(
        d.path(),
        &["ingest", "s.db", "f.jsonl", "--table", "t", "--key", "id"],
    )
    .assert()
    .success();
    let err = stderr(&out);
    assert!(err.contains("another file"), "{err}");
    assert_eq!(
        checked_rows(&d.path().join("s.db"), "SELECT id FROM t ORDER BY id")?,
        (1..=5).map(|i| vec![Value::Integer(i)]).collect::<Vec<_>>()
    );
    // The same file grown: only the new message is read.
    append(&feed, b"{\"id\":6,\"v\":6}\n")?;
    let out = liteload(
        d.path(),
        &["ingest", "s.db", "f.jsonl", "--table", "t", "--key", "id"],
    )
    .assert()
    .success();
    let err = stderr(&out);
    assert!(err.contains("resuming"), "{err}");
    assert_eq!(
        checked_rows(&d.path().join("s.db"), "SELECT count(*) FROM t")?,
        vec![vec![Value::Integer(6)]]
    );
    Ok(())
}

#[test]
fn errors_have_one_kind_and_a_place() -> R {
    let d = TempDir::new()?;
    // The only record is bad: a bad-input error at its place, not "no columns".
    std::fs::write(d.path().join("one.ndjson"), "{\"a\":1\n")?;
    std::fs::write(d.path().join("nul.ndjson"), "{\"a\\u0000\":1}\n")?;
    for f in ["one.ndjson", "nul.ndjson"] {
        let out = liteload(d.path(), &["import", "o.db", f]).assert().code(1);
        let err = stderr(&out);
        assert!(err.contains(&format!("{f}:1:")), "{err}");
    }
    // A unique index the data breaks: the same exit code (a refused row) on both engines.
    std::fs::write(d.path().join("u.csv"), "a,b\n1,x\n1,y\n")?;
    for (engine, col) in [
        ("direct", "a"),
        ("sqlite", "a"),
        ("direct", "b"),
        ("sqlite", "b"),
    ] {
        std::fs::write(d.path().join("u.csv"), "a,b\n1,x\n1,x\n")?;
        let db = format!("{engine}{col}.db");
        let out = liteload(
            d.path(),
            &[
                "import",
                &db,
                "u.csv",
                "--unique-index",
                col,
                "--engine",
                engine,
            ],
        )
        .assert()
        .code(1);
        let err = stderr(&out);
        assert!(err.contains("same key"), "{engine} {col}: {err}");
        assert!(!d.path().join(&db).exists());
    }
    // --summary-json counts the bytes read.
    let out = liteload(d.path(), &["import", "s.db", "u.csv", "--summary-json"])
        .assert()
        .success();
    let summary: serde_json::Value = serde_json::from_slice(&out.get_output().stdout)?;
    assert_eq!(
        summary["bytes_read"],
        std::fs::metadata(d.path().join("u.csv"))?.len()
    );
    // An ingest reject refused after parsing still shows the message.
    std::fs::write(
        d.path().join("k.jsonl"),
        "{\"id\":1}\n{\"id\":\"x\",\"v\":2}\n",
    )?;
    liteload(
        d.path(),
        &["ingest", "i.db", "k.jsonl", "--table", "t", "--key", "id"],
    )
    .args(["--rejects", "r.jsonl", "-q"])
    .assert()
    .success();
    let rejects = std::fs::read_to_string(d.path().join("r.jsonl"))?;
    let line: serde_json::Value = serde_json::from_str(rejects.trim())?;
    assert_eq!(line["message"], "{\"id\":\"x\",\"v\":2}", "{rejects}");
    Ok(())
}

#[test]
fn json_values_are_stored_alike_by_both_engines() -> R {
    let values = [
        "\"007\"",
        "\" 42\"",
        "\"1e3\"",
        "\"abc\"",
        "1.0",
        "-0.0",
        "1e3",
        "2.5",
        "true",
        "18446744073709551616",
        "9223372036854775807",
        "-9223372036854775808",
        "{\"a\":1}",
        "[1,2]",
        "null",
        "\"\"",
        "\"٣\"",
    ];
    let mut nd = String::from("{\"c1\":1,\"c2\":1.5,\"c3\":\"x\",\"c4\":1,\"c5\":1}\n");
    for v in values {
        nd.push_str(&format!(
            "{{\"c1\":{v},\"c2\":{v},\"c3\":{v},\"c4\":{v},\"c5\":{v}}}\n"
        ));
    }
    let d = TempDir::new()?;
    std::fs::write(d.path().join("t.ndjson"), nd)?;
    for extra in [
        vec!["--sample", "1"],
        vec![
            "--type",
            "c1=text",
            "--type",
            "c2=integer",
            "--type",
            "c4=real",
            "--sample",
            "1",
        ],
    ] {
        let mut out = vec![];
        for engine in ["direct", "sqlite"] {
            let db = format!("{engine}{}.db", extra.len());
            let mut args = vec!["import", &db, "t.ndjson", "--engine", engine, "-q"];
            args.extend_from_slice(&extra);
            liteload(d.path(), &args).assert().success();
            out.push(typed_rows(&d.path().join(&db), 5)?);
        }
        assert_eq!(out[0], out[1], "{extra:?}");
    }
    Ok(())
}

#[test]
fn ingest_keeps_the_digits_of_integers_beyond_64_bits() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("f.jsonl"),
        "{\"id\":1,\"n\":18446744073709551616}\n{\"id\":2,\"n\":-99999999999999999999,\"r\":1e300}\n",
    )?;
    liteload(d.path(), &ingest_args("f.jsonl", &[]))
        .assert()
        .success();
    assert_eq!(
        checked_rows(&d.path().join("s.db"), "SELECT n, r FROM t ORDER BY id")?,
        vec![
            vec![Value::Text("18446744073709551616".into()), Value::Null],
            vec![
                Value::Text("-99999999999999999999".into()),
                Value::Real(1e300)
            ],
        ]
    );
    Ok(())
}

#[test]
fn rows_the_tables_constraints_refuse_are_skipped_not_fatal() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("s.db");
    rusqlite::Connection::open(&db)?.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL CHECK (length(v) < 5));",
    )?;
    // 200 new rows in one window (multi-row INSERTs), three of them refused; then an
    // update that would break NOT NULL.
    let mut feed = String::new();
    for i in 1..=200 {
        let v = match i {
            7 => "null".to_string(),
            70 => "\"far too long\"".to_string(),
            150 => "null".to_string(),
            _ => format!("\"v{}\"", i % 100),
        };
        feed.push_str(&format!("{{\"id\":{i},\"v\":{v}}}\n"));
    }
    std::fs::write(d.path().join("a.jsonl"), feed)?;
    liteload(d.path(), &ingest_args("a.jsonl", &["--rejects", "r.jsonl"]))
        .assert()
        .success();
    std::fs::write(
        d.path().join("b.jsonl"),
        "{\"id\":1,\"v\":null}\n{\"id\":2,\"v\":\"ok\"}\n",
    )?;
    liteload(
        d.path(),
        &ingest_args("b.jsonl", &["--rejects", "r2.jsonl"]),
    )
    .assert()
    .success();
    let rows = checked_rows(&db, "SELECT id, v FROM t ORDER BY id")?;
    assert_eq!(rows.len(), 197);
    assert!(!rows
        .iter()
        .any(|r| matches!(r[0], Value::Integer(7 | 70 | 150))));
    assert_eq!(rows[0], vec![Value::Integer(1), Value::Text("v1".into())]);
    assert_eq!(rows[1], vec![Value::Integer(2), Value::Text("ok".into())]);
    let r = std::fs::read_to_string(d.path().join("r.jsonl"))?;
    assert_eq!(r.lines().count(), 3, "{r}");
    assert!(r.contains("key (70)") && r.contains("CHECK"), "{r}");
    let r2 = std::fs::read_to_string(d.path().join("r2.jsonl"))?;
    assert!(r2.contains("key (1)") && r2.contains("NOT NULL"), "{r2}");
    Ok(())
}

#[test]
fn a_delimiter_or_quote_that_cannot_work_is_refused() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("s.csv"), "a,b\n1,2\n")?;
    for args in [
        vec!["--delimiter", "\""],
        vec!["--delimiter", "\n"],
        vec!["--delimiter", "\r"],
        vec!["--quote", ","],
        vec!["--quote", "\n"],
        vec!["--tsv", "--quote", "\t"],
    ] {
        let mut a = vec!["import", "x.db", "s.csv"];
        a.extend_from_slice(&args);
        liteload(d.path(), &a).assert().code(2);
        assert!(!d.path().join("x.db").exists(), "{args:?}");
    }
    Ok(())
}

#[test]
fn ingest_refuses_tables_and_keys_that_would_collide() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("f.jsonl"), "{\"id\":1}\n")?;
    for extra in [
        vec!["--table", "t", "--key", "id", "--history", "T"],
        vec!["--table", "LITELOAD_INGEST_STATE", "--key", "id"],
        vec!["--table", "t", "--key", "id,ID"],
        vec!["--table", "sqlite_stat1", "--key", "id"],
        vec!["--table", "t", "--key", "id", "--history", "sqlite_x"],
    ] {
        let mut a = vec!["ingest", "s.db", "f.jsonl"];
        a.extend_from_slice(&extra);
        liteload(d.path(), &a).assert().code(2);
    }
    Ok(())
}

#[test]
fn a_view_is_not_a_table_to_write_into() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("v.db");
    rusqlite::Connection::open(&db)?
        .execute_batch("CREATE TABLE base(a, b); CREATE VIEW s AS SELECT * FROM base;")?;
    std::fs::write(d.path().join("s.csv"), "a,b\n1,2\n")?;
    std::fs::write(d.path().join("s.jsonl"), "{\"a\":1}\n")?;
    for args in [
        vec!["import", "v.db", "s.csv"],
        vec!["generate", "v.db", "--rows", "3", "--table", "S"],
        vec!["ingest", "v.db", "s.jsonl", "--table", "s", "--key", "a"],
    ] {
        let out = liteload(d.path(), &args).assert().code(4);
        let err = stderr(&out);
        assert!(err.contains("is a view"), "{args:?}: {err}");
    }
    checked_rows(&db, "SELECT count(*) FROM base")?;
    Ok(())
}

#[test]
fn indexes_are_named_once_and_every_file_with_them_is_sound() -> R {
    let d = TempDir::new()?;
    let mut csv = String::from("n,S,r\n");
    for i in 0..500 {
        let n = if i == 250 {
            "007".to_string()
        } else {
            (i * 37 % 101).to_string()
        };
        csv.push_str(&format!("{n},\"t{}\",{}.5\n", i % 7, i % 13));
    }
    std::fs::write(d.path().join("ix.csv"), csv)?;
    for dup in [
        vec!["--index", "n", "--index", "N"],
        vec!["--index", "n", "--unique-index", "n"],
        vec!["--index", "n,s", "--index", "N,S"],
    ] {
        for engine in ["direct", "sqlite"] {
            let mut a = vec!["import", "x.db", "ix.csv", "--engine", engine];
            a.extend_from_slice(&dup);
            liteload(d.path(), &a).assert().code(2);
            assert!(!d.path().join("x.db").exists());
        }
    }
    for (k, ixs) in [
        vec!["--index", "n"],
        vec!["--index", "N"],
        vec!["--index", "s"],
        vec!["--index", "n,s,r"],
        vec!["--index", "r", "--index", "s,n"],
        vec!["--index", "n,N"],
    ]
    .iter()
    .enumerate()
    {
        let mut dumps = vec![];
        for engine in ["direct", "sqlite"] {
            let db = format!("{engine}{k}.db");
            let mut a = vec![
                "import", &db, "ix.csv", "--engine", engine, "-q", "--table", "t",
            ];
            a.extend_from_slice(ixs);
            liteload(d.path(), &a).assert().success();
            let c = common::open_checked(&d.path().join(&db))?;
            let sql: Vec<String> = c
                .prepare("SELECT sql FROM sqlite_schema ORDER BY name")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let rows = checked_rows(
                &d.path().join(&db),
                "SELECT typeof(n), n, typeof(S), S, typeof(r), r FROM t ORDER BY rowid",
            )?;
            dumps.push((sql, rows));
        }
        assert_eq!(dumps[0], dumps[1], "{ixs:?}");
    }
    Ok(())
}

#[test]
fn an_output_file_never_overwrites_an_input_or_the_database() -> R {
    let d = TempDir::new()?;
    std::fs::write(d.path().join("in.csv"), "a\n1\n")?;
    std::fs::write(d.path().join("f.jsonl"), "{\"id\":1}\n")?;
    for args in [
        vec!["import", "x.db", "in.csv", "--rejects", "in.csv"],
        vec!["import", "x.db", "in.csv", "--rejects", "./in.csv"],
        vec!["import", "x.db", "in.csv", "--rejects", "x.db"],
        vec![
            "ingest",
            "y.db",
            "f.jsonl",
            "--table",
            "t",
            "--key",
            "id",
            "--rejects",
            "f.jsonl",
        ],
        vec![
            "ingest",
            "y.db",
            "f.jsonl",
            "--table",
            "t",
            "--key",
            "id",
            "--stats-json",
            "y.db",
        ],
    ] {
        liteload(d.path(), &args).assert().code(2);
    }
    assert_eq!(std::fs::read_to_string(d.path().join("in.csv"))?, "a\n1\n");
    assert_eq!(
        std::fs::read_to_string(d.path().join("f.jsonl"))?,
        "{\"id\":1}\n"
    );
    assert!(!d.path().join("x.db").exists() && !d.path().join("y.db").exists());
    // kv export-dir never writes over the store it reads.
    let k = d.path().join("k");
    std::fs::create_dir(&k)?;
    liteload(&k, &["kv", "put", "s.db", "s.db", "-"])
        .write_stdin("v")
        .assert()
        .success();
    liteload(&k, &["kv", "export-dir", "s.db", ".", "--force"])
        .assert()
        .code(1);
    liteload(&k, &["kv", "get", "s.db", "s.db", "-o", "s.db"])
        .assert()
        .code(2);
    checked_rows(&k.join("s.db"), "SELECT count(*) FROM kv")?;
    Ok(())
}

/// The sniffer as a class, against Python's `csv` (issue 36): 192 generated files
/// (quoted delimiters in every record, in some, only in the header; LF, CRLF, lone CR;
/// `,` `;` `|` tab; `.tsv` with quoted fields; minimal and full quoting), each written by
/// `csv.writer` with a known dialect; every record liteload stores (sniffing on, types
/// off) equals what `csv.reader` reads with that dialect. The driver is
/// `tests/reference/sniff_vs_python_csv.py` (standard library only).
#[test]
fn sniffed_files_load_as_pythons_csv_reads_them() -> R {
    let said = python_reference("sniff_vs_python_csv.py")?;
    assert!(said.contains("\"cases\": 192, \"failures\": 0"), "{said}");
    Ok(())
}

/// Runs the driver `tests/reference/SCRIPT` (Python's standard library only) against
/// this build's `liteload` in a scratch directory; fails with its report unless it
/// passes. Returns what it printed.
fn python_reference(script: &str) -> Result<String, Box<dyn std::error::Error>> {
    let d = TempDir::new()?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference")
        .join(script);
    let out = Process::new("python3")
        .arg(&path)
        .arg(assert_cmd::cargo::cargo_bin("liteload"))
        .arg(d.path())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(text)
}

/// The `sniffed:` line says what the load used: a header flag, a delimiter or a quote
/// given on the command line stands in it over what sniffing found.
#[test]
fn the_sniffed_line_says_what_was_used() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("p.txt"),
        "1,\"Doe, John\",Paris\n2,\"Roe, Jane\",Rome\n",
    )?;
    let out = Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args(["import", "p.db", "p.txt"])
        .assert()
        .success();
    let err = stderr(&out);
    assert!(
        err.contains("sniffed: p.txt: ','-separated, no header"),
        "{err}"
    );
    let rows = checked_rows(&d.path().join("p.db"), "SELECT * FROM p ORDER BY rowid")?;
    assert_eq!(rows[0][1], Value::Text("Doe, John".into()));
    assert_eq!(rows[0].len(), 3);
    let out = Command::cargo_bin("liteload")?
        .current_dir(d.path())
        .args(["import", "q.db", "p.txt", "--header"])
        .assert()
        .success();
    let err = stderr(&out);
    assert!(
        err.contains("sniffed: p.txt: ','-separated, header"),
        "{err}"
    );
    // The first record became the names; the second is the one row.
    assert_eq!(
        checked_rows(&d.path().join("q.db"), "SELECT count(*) FROM p")?,
        vec![vec![Value::Integer(1)]]
    );
    Ok(())
}

/// Where a JSON error is, as a class against Python's `json` (issue 36): NDJSON and
/// arrays, small and over 8 MiB (the parallel reader), with a raw line break, tab or
/// control character in a string, a missing comma or colon, at random places; the
/// `FILE:LINE:COLUMN` liteload reports is where `json.loads` puts the fault (1-based).
/// The driver is `tests/reference/json_positions.py`.
#[test]
fn json_errors_are_where_pythons_json_puts_them() -> R {
    let said = python_reference("json_positions.py")?;
    assert!(said.contains("\"cases\": 15, \"failures\": 0"), "{said}");
    Ok(())
}

/// JSON `-0` follows the type rules as CSV does (TEXT, never silently 0 or -0.0), nested
/// `-0` keeps its text, and `-0.0` is the real 0.0, as SQLite's own INSERT stores it in a
/// REAL column; the same from both engines, in NDJSON and in an array.
#[test]
fn json_negative_zero_is_what_the_type_rules_say() -> R {
    let d = TempDir::new()?;
    std::fs::write(
        d.path().join("z.ndjson"),
        "{\"a\": -0, \"b\": [-0,{\"x\":-0}], \"c\": -0.0}\n{\"a\": \"x\", \"b\": [1], \"c\": 1.5}\n",
    )?;
    std::fs::write(
        d.path().join("z.json"),
        "[{\"a\": -0, \"b\": [-0,{\"x\":-0}], \"c\": -0.0},\n {\"a\": \"x\", \"b\": [1], \"c\": 1.5}]",
    )?;
    for file in ["z.ndjson", "z.json"] {
        for engine in ["direct", "sqlite"] {
            let db = format!("{file}-{engine}.db");
            Command::cargo_bin("liteload")?
                .current_dir(d.path())
                .args([
                    "import", &db, file, "--table", "t", "-q", "--engine", engine,
                ])
                .assert()
                .success();
            let rows = checked_rows(
                &d.path().join(&db),
                "SELECT a, typeof(a), b, c, typeof(c) FROM t WHERE rowid = 1",
            )?;
            assert!(
                matches!(rows[0][3], Value::Real(c) if c.is_sign_positive()),
                "{file} {engine}: {:?}",
                rows[0][3]
            );
            assert_eq!(
                rows[0],
                vec![
                    Value::Text("-0".into()),
                    Value::Text("text".into()),
                    Value::Text("[-0,{\"x\":-0}]".into()),
                    Value::Real(0.0),
                    Value::Text("real".into()),
                ],
                "{file} {engine}"
            );
        }
    }
    Ok(())
}

/// UTF-16 without a byte-order mark, little- and big-endian: sniffing tells it by its
/// zero bytes and loads it (and `sniff` says so); without sniffing, the error about the
/// header's NUL bytes points at --encoding.
#[test]
fn utf16_without_a_byte_order_mark_loads_or_says_how() -> R {
    let d = TempDir::new()?;
    let text = "name,city\nZoë,Paris\nÅsa,Oslo\n";
    let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    for (name, bytes, shown) in [("le.csv", le, "utf-16le"), ("be.csv", be, "utf-16be")] {
        std::fs::write(d.path().join(name), bytes)?;
        let db = format!("{name}.db");
        Command::cargo_bin("liteload")?
            .current_dir(d.path())
            .args(["import", &db, name, "--table", "t", "-q"])
            .assert()
            .success();
        assert_eq!(
            checked_rows(
                &d.path().join(&db),
                "SELECT name, city FROM t ORDER BY rowid"
            )?,
            vec![
                vec![Value::Text("Zoë".into()), Value::Text("Paris".into())],
                vec![Value::Text("Åsa".into()), Value::Text("Oslo".into())],
            ]
        );
        let out = Command::cargo_bin("liteload")?
            .current_dir(d.path())
            .args(["sniff", name])
            .assert()
            .success();
        let said = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        assert!(said.contains(shown), "{said}");
        let out = Command::cargo_bin("liteload")?
            .current_dir(d.path())
            .args(["import", "no.db", name, "--no-sniff"])
            .assert()
            .code(1);
        assert!(stderr(&out).contains("--encoding"), "{}", stderr(&out));
    }
    Ok(())
}

/// A public corpus of tricky CSV files (csv-spectrum, testdata/csv-spectrum/NOTICE.md):
/// quoted commas, escaped quotes, line breaks in fields (LF and CRLF), JSON in a field,
/// empty quoted fields, UTF-8. Each file, named `.csv` and again `.txt` (so its format
/// and delimiter are sniffed too), loads as exactly the records its JSON expects.
#[test]
fn a_public_csv_corpus_loads_as_its_expected_records() -> R {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/csv-spectrum");
    let d = TempDir::new()?;
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus.join("csvs"))? {
        let path = entry?.path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or("a name")?
            .to_string();
        let want: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_slice(
            &std::fs::read(corpus.join("json").join(format!("{stem}.json")))?,
        )?;
        for ext in ["csv", "txt"] {
            let name = format!("{stem}.{ext}");
            std::fs::copy(&path, d.path().join(&name))?;
            let db = format!("{stem}-{ext}.db");
            let out = Command::cargo_bin("liteload")?
                .current_dir(d.path())
                .args([
                    "import",
                    &db,
                    &name,
                    "--table",
                    "t",
                    "--no-detect-types",
                    "-q",
                ])
                .assert()
                .success();
            let names: Vec<String> = want.first().map_or(vec![], |r| r.keys().cloned().collect());
            let cols = names
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ");
            let got = checked_rows(
                &d.path().join(&db),
                &format!("SELECT {cols} FROM t ORDER BY rowid"),
            )?;
            let want_rows: Vec<Vec<Value>> = want
                .iter()
                .map(|r| {
                    r.values()
                        .map(|v| Value::Text(v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .collect();
            assert_eq!(got, want_rows, "{name}: {}", stderr(&out));
            checked += 1;
        }
    }
    assert_eq!(checked, 22);
    Ok(())
}
