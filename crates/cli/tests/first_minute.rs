//! The first minute: files as people have them (testdata/first-minute: spreadsheet
//! exports, `.txt`, `|`-separated, quoted delimiters, one column, no header, JSON with a
//! `.txt` name, compressed bytes on stdin) load with no flags into the table a person
//! would expect, and the summary says what was sniffed.

mod common;

use std::io::Write;
use std::path::Path;

use assert_cmd::Command;
use rusqlite::types::Value;
use tempfile::TempDir;

use common::checked_rows;

type R = Result<(), Box<dyn std::error::Error>>;
type Rows = Vec<Vec<Value>>;
/// (file, what the summary says was sniffed, columns, rows)
type Case<'a> = (&'a str, &'a str, Vec<&'a str>, Rows);

fn data(name: &str) -> String {
    format!(
        "{}/../../testdata/first-minute/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn liteload() -> Command {
    Command::cargo_bin("liteload").expect("the liteload binary")
}

/// Imports `file` with `flags` and returns stderr.
fn import(db: &Path, file: &str, flags: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = liteload()
        .arg("import")
        .arg(db)
        .arg(file)
        .args(flags)
        .output()?;
    let err = String::from_utf8(out.stderr)?;
    assert!(out.status.success(), "{file}: {err}");
    Ok(err)
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

fn i(v: i64) -> Value {
    Value::Integer(v)
}

fn r(v: f64) -> Value {
    Value::Real(v)
}

/// The table's column names and its rows in rowid order.
fn table(db: &Path, name: &str) -> Result<(Vec<String>, Rows), Box<dyn std::error::Error>> {
    let c = common::open_checked(db)?;
    let stmt = c.prepare(&format!("SELECT * FROM \"{name}\" ORDER BY rowid"))?;
    let cols = stmt.column_names().map(str::to_string).collect();
    drop(stmt);
    drop(c);
    Ok((
        cols,
        checked_rows(db, &format!("SELECT * FROM \"{name}\" ORDER BY rowid"))?,
    ))
}

#[test]
fn spreadsheet_exports_and_text_files_load_with_no_flags() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("fm.db");
    let cases: Vec<Case<'_>> = vec![
        (
            "people.txt",
            "sniffed: ",
            vec!["id", "name", "city"],
            vec![
                vec![i(1), t("Ada Lovelace"), t("London")],
                vec![i(2), t("Alan Turing"), t("Wilmslow")],
                vec![i(3), t("Grace \"Amazing\" Hopper"), t("New York")],
            ],
        ),
        (
            "export.psv",
            "'|'-separated, header, UTF-8",
            vec!["sku", "title", "price"],
            vec![
                vec![t("A-1"), t("Hammer, 16 oz"), r(12.5)],
                vec![t("B-2"), t("Nails; box of 100"), r(3.0)],
            ],
        ),
        (
            "quoted.csv",
            "",
            vec!["name", "notes", "score"],
            vec![
                vec![t("Smith, John"), t("said \"hi\"; left"), i(7)],
                vec![t("Doe, Jane"), t("a|b"), i(9)],
            ],
        ),
        (
            "readings.dat",
            "','-separated, no header, UTF-8",
            vec!["c1", "c2", "c3"],
            vec![
                vec![i(1), r(20.5), t("2026-11-23")],
                vec![i(2), r(21.25), t("2026-11-24")],
                vec![i(3), r(19.75), t("2026-11-25")],
            ],
        ),
        (
            "events.txt",
            "newline-delimited JSON, UTF-8",
            vec!["id", "kind", "extra"],
            vec![
                vec![i(1), t("start"), Value::Null],
                vec![i(2), t("stop"), i(1)],
            ],
        ),
        (
            "array.txt",
            "a JSON array, UTF-8",
            vec!["id", "kind"],
            vec![vec![i(1), t("start")], vec![i(2), t("stop")]],
        ),
    ];
    for (file, sniffed, cols, rows) in cases {
        let err = import(&db, &data(file), &[])?;
        let stem = file.split('.').next().unwrap_or(file);
        assert_eq!(
            table(&db, stem)?,
            (cols.iter().map(|c| c.to_string()).collect(), rows),
            "{file}"
        );
        if !sniffed.is_empty() {
            assert!(
                err.contains(&format!("sniffed: {}: ", data(file))) && err.contains(sniffed),
                "{file}: {err}"
            );
        }
    }
    Ok(())
}

#[test]
fn a_european_spreadsheet_csv_loads_and_its_numbers_and_dates_are_pointed_out() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("de.db");
    let file = data("spreadsheet_de.csv");
    let err = import(&db, &file, &[])?;
    assert!(
        err.contains("';'-separated, header, UTF-8 with BOM"),
        "{err}"
    );
    assert!(
        err.contains(
            "column \"Preis\" looks written with a decimal comma (1.234,56); --decimal-comma"
        ),
        "{err}"
    );
    assert!(
        err.contains("column \"Menge\" looks written with a decimal comma (1.500)"),
        "{err}"
    );
    assert!(err.contains("column \"Lieferdatum\" looks like dates in %d.%m.%Y (23.11.2026), kept as text; --dates '%d.%m.%Y'"), "{err}");
    let (cols, rows) = table(&db, "spreadsheet_de")?;
    assert_eq!(cols, ["Artikel", "Preis", "Menge", "Lieferdatum"]);
    assert_eq!(rows[1][0], t("Birnen; grün"));
    assert_eq!(rows[0][1], t("1.234,56"), "as written without the flag");

    // With the flags: numbers and ISO dates that SQLite's functions read.
    import(
        &db,
        &file,
        &[
            "--table",
            "converted",
            "--decimal-comma",
            "--dates",
            "%d.%m.%Y",
        ],
    )?;
    let (_, rows) = table(&db, "converted")?;
    assert_eq!(
        rows,
        vec![
            vec![t("Äpfel, rot"), r(1234.56), i(3), t("2026-11-23")],
            vec![t("Birnen; grün"), r(0.5), i(12), t("2026-12-01")],
            vec![t("Käse"), r(12.0), i(1500), t("2027-01-15")],
        ]
    );
    let next_day = checked_rows(
        &db,
        "SELECT date(Lieferdatum, '+1 day') FROM converted LIMIT 1",
    )?;
    assert_eq!(next_day, vec![vec![t("2026-11-24")]]);

    // --summary-json carries the same: the dialect and the columns pointed out.
    let out = liteload()
        .arg("import")
        .arg(&db)
        .arg(&file)
        .args(["--table", "json", "--summary-json", "-q"])
        .output()?;
    assert!(out.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(summary["sniffed"][0]["dialect"]["delimiter"], ";");
    assert_eq!(summary["sniffed"][0]["dialect"]["bom"], true);
    assert_eq!(summary["locale_hints"][0]["column"], "Preis");
    assert_eq!(summary["locale_hints"][1]["date_format"], "%d.%m.%Y");

    // US dates with a time, converted by their format.
    import(&db, &data("us_dates.csv"), &["--dates", "%m/%d/%Y %H:%M"])?;
    let (_, rows) = table(&db, "us_dates")?;
    assert_eq!(rows[0], vec![t("2026-11-23 14:05:00"), i(10)]);
    Ok(())
}

#[test]
fn one_column_with_commas_is_one_column_and_the_override_splits_it() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("one.db");
    let err = import(&db, &data("names.txt"), &[])?;
    assert!(
        err.contains("one column (no delimiter in the header)"),
        "{err}"
    );
    let (cols, rows) = table(&db, "names")?;
    assert_eq!(cols, ["name"]);
    assert_eq!(
        rows,
        vec![vec![t("Smith, John")], vec![t("Doe, Jane")], vec![t("Ada")]]
    );
    // Naming the delimiter is taken as is: the header then has fewer fields than the
    // records, which is an error whose hint names the ragged-row choices.
    let out = liteload()
        .args(["import"])
        .arg(d.path().join("two.db"))
        .arg(data("names.txt"))
        .args(["--delimiter", ","])
        .output()?;
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)?.contains("expected 1 fields, found 2"));
    // A name that says CSV is taken at its word: `,` splits, and the wider records
    // are errors rather than one column read silently.
    let csv = d.path().join("names.csv");
    std::fs::copy(data("names.txt"), &csv)?;
    let out = liteload()
        .args(["import"])
        .arg(d.path().join("three.db"))
        .arg(&csv)
        .output()?;
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)?.contains("expected 1 fields, found 2"));
    Ok(())
}

#[test]
fn compressed_bytes_on_stdin_are_told_by_their_magic() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("z.db");
    let text = std::fs::read(data("people.txt"))?;
    let gz = {
        let mut e = flate2::write::GzEncoder::new(vec![], flate2::Compression::default());
        e.write_all(&text)?;
        e.finish()?
    };
    let zs = zstd::stream::encode_all(&text[..], 3)?;
    let bz = {
        let mut e = bzip2::write::BzEncoder::new(vec![], bzip2::Compression::default());
        e.write_all(&text)?;
        e.finish()?
    };
    let xz = {
        let mut e = liblzma::write::XzEncoder::new(vec![], 6);
        e.write_all(&text)?;
        e.finish()?
    };
    for (name, bytes, shown) in [
        ("gz", gz, "gzip"),
        ("zs", zs, "zstd"),
        ("bz", bz, "bzip2"),
        ("xz", xz, "xz"),
    ] {
        let out = liteload()
            .args(["import"])
            .arg(&db)
            .args(["-", "--table", name])
            .write_stdin(bytes.clone())
            .output()?;
        let err = String::from_utf8(out.stderr)?;
        assert!(out.status.success(), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "'\\t'-separated, no quoting, header, UTF-8, {shown}"
            )),
            "{err}"
        );
        assert_eq!(table(&db, name)?.1.len(), 3, "{name}");
        // The same bytes in a file with a misleading name.
        let f = d.path().join(format!("{name}.csv"));
        std::fs::write(&f, &bytes)?;
        import(
            &db,
            f.to_str().ok_or("path")?,
            &["--table", &format!("{name}_file")],
        )?;
        assert_eq!(
            table(&db, &format!("{name}_file"))?.1.len(),
            3,
            "{name} file"
        );
    }
    Ok(())
}

#[test]
fn text_that_is_not_utf8_is_an_error_unless_a_guess_is_asked_for() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("l.db");
    let f = d.path().join("latin.csv");
    std::fs::write(&f, b"name;city\nJos\xe9;M\xfcnchen\n")?;
    let out = liteload().arg("import").arg(&db).arg(&f).output()?;
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)?.contains("--encoding"));
    let err = import(&db, f.to_str().ok_or("path")?, &["--guess-encoding"])?;
    assert!(err.contains("Windows-1252 (guessed: not UTF-8)"), "{err}");
    assert_eq!(table(&db, "latin")?.1, vec![vec![t("José"), t("München")]]);
    Ok(())
}

#[test]
fn sniff_prints_what_import_would_use_as_a_table_and_as_json() -> R {
    let out = liteload()
        .args(["sniff", "--json"])
        .arg(data("spreadsheet_de.csv"))
        .arg(data("events.txt"))
        .output()?;
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(lines[0]["delimiter"], ";");
    assert_eq!(lines[0]["header"], true);
    assert_eq!(lines[0]["bom"], true);
    assert_eq!(lines[1]["format"], "ndjson");
    let table = liteload()
        .args(["sniff"])
        .arg(data("people.txt"))
        .output()?;
    let text = String::from_utf8(table.stdout)?;
    assert!(
        text.starts_with("FILE") && text.contains("'\\t'") && text.contains("none"),
        "{text}"
    );
    Ok(())
}

#[test]
fn every_sniffed_setting_yields_to_its_flag() -> R {
    let d = TempDir::new()?;
    let db = d.path().join("o.db");
    // --header keeps a numeric first line as names.
    import(&db, &data("readings.dat"), &["--header", "--table", "h"])?;
    assert_eq!(table(&db, "h")?.0, ["1", "20.5", "2026-11-23"]);
    // A delimiter named is used as is; when records then differ in width, the hint
    // names the delimiter that fits them all.
    let out = liteload()
        .args(["import"])
        .arg(&db)
        .arg(data("export.psv"))
        .args(["--delimiter", ",", "--table", "comma"])
        .output()?;
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr)?;
    assert!(
        err.contains("expected 1 fields, found 2 (the file looks '|'-separated: --delimiter '|')"),
        "{err}"
    );
    // On stdin too, from the bytes peeked before the load (stdin is not read again).
    let out = liteload()
        .args(["import"])
        .arg(&db)
        .args(["-", "--table", "piped", "--delimiter", ","])
        .write_stdin(std::fs::read(data("export.psv"))?)
        .output()?;
    let err = String::from_utf8(out.stderr)?;
    assert!(
        err.contains(
            "<stdin>:2:12: record 1: expected 1 fields, found 2 (the file looks '|'-separated"
        ),
        "{err}"
    );
    // --no-sniff takes nothing from the content: a .dat name says no format.
    let out = liteload()
        .args(["import"])
        .arg(&db)
        .arg(data("readings.dat"))
        .args(["--no-sniff"])
        .output()?;
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)?.contains("cannot tell the format from the file name"));
    Ok(())
}
