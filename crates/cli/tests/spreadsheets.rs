//! `liteload import` of spreadsheets: a worksheet a table, `--sheet`, notes, positions and
//! exit codes, and the atomic load. The cell-by-cell mapping is tested against openpyxl's
//! reading in `python/tests/test_spreadsheets.py`.

mod common;

use std::path::Path;

use assert_cmd::Command;
use common::checked_rows;
use predicates::prelude::*;
use rusqlite::types::Value;
use rust_xlsxwriter::{ExcelDateTime, Format, Formula, Workbook};

fn liteload(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary");
    c.current_dir(dir);
    c
}

/// Three sheets: "Orders 2024" (types, an error cell, a formula, a merged range, an empty
/// row, the table from B2), "Empty", and "people".
fn book(path: &Path) {
    let mut wb = Workbook::new();
    let date = Format::new().set_num_format("yyyy-mm-dd");
    let orders = wb.add_worksheet().set_name("Orders 2024").expect("name");
    for (c, h) in ["id", "name", "price", "paid", "day", "twice", "bad"]
        .iter()
        .enumerate()
    {
        orders.write_string(1, 1 + c as u16, *h).expect("write");
    }
    orders.write_number(2, 1, 1).expect("write");
    orders.write_string(2, 2, "Ünïcode 😀 <&>").expect("write");
    orders.write_number(2, 3, 2.5).expect("write");
    orders.write_boolean(2, 4, true).expect("write");
    let d = ExcelDateTime::from_ymd(2024, 2, 29).expect("a date");
    orders
        .write_datetime_with_format(2, 5, &d, &date)
        .expect("write");
    orders
        .write_formula(2, 6, Formula::new("=B3*2").set_result("2"))
        .expect("write");
    orders
        .write_formula(2, 7, Formula::new("=1/0").set_result("#DIV/0!"))
        .expect("write");
    // Row 4 is empty: skipped.
    orders.write_number(4, 1, 2).expect("write");
    orders
        .merge_range(4, 2, 4, 3, "merged", &Format::new())
        .expect("merge");
    wb.add_worksheet().set_name("Empty").expect("name");
    let people = wb.add_worksheet().set_name("people").expect("name");
    people.write_string(0, 0, "name").expect("write");
    people.write_string(1, 0, "Ada").expect("write");
    people.write_string(2, 0, "Alan").expect("write");
    wb.save(path).expect("save");
}

#[test]
fn every_worksheet_with_a_value_is_a_table_with_its_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    book(&dir.path().join("book.xlsx"));
    liteload(dir.path())
        .args(["import", "out.db", "book.xlsx"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            r#"sheet "Empty" holds no value: no table"#,
        ))
        .stderr(predicate::str::contains(
            "book.xlsx[Orders 2024]: 1 error cell loaded as NULL (the first: #DIV/0! in H3)",
        ));
    let db = dir.path().join("out.db");
    let cols = checked_rows(
        &db,
        r#"SELECT name, type FROM pragma_table_info('Orders 2024') ORDER BY cid"#,
    )
    .expect("columns");
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        cols,
        [
            ("id", "INTEGER"),
            ("name", "TEXT"),
            ("price", "REAL"),
            ("paid", "INTEGER"),
            ("day", "TEXT"),
            ("twice", "INTEGER"),
            ("bad", "TEXT"),
        ]
        .map(|(n, t)| vec![text(n), text(t)])
    );
    let rows = checked_rows(&db, r#"SELECT * FROM "Orders 2024" ORDER BY rowid"#).expect("rows");
    assert_eq!(
        rows,
        [
            vec![
                Value::Integer(1),
                text("Ünïcode 😀 <&>"),
                Value::Real(2.5),
                Value::Integer(1),
                text("2024-02-29"),
                Value::Integer(2),
                Value::Null,
            ],
            vec![
                Value::Integer(2),
                text("merged"),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ],
        ]
    );
    let people = checked_rows(&db, "SELECT name FROM people ORDER BY rowid").expect("rows");
    assert_eq!(people, [vec![text("Ada")], vec![text("Alan")]]);
}

#[test]
fn one_sheet_by_name_and_bad_names_and_doors_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    book(&dir.path().join("book.xlsx"));
    liteload(dir.path())
        .args([
            "import",
            "one.db",
            "book.xlsx",
            "--sheet",
            "people",
            "--table",
            "p",
        ])
        .assert()
        .success();
    let rows = checked_rows(&dir.path().join("one.db"), "SELECT count(*) FROM p").expect("rows");
    assert_eq!(rows, [vec![Value::Integer(2)]]);
    liteload(dir.path())
        .args(["import", "none.db", "book.xlsx", "--sheet", "nope"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            r#"no sheet named "nope" (the workbook has "Orders 2024", "Empty", "people")"#,
        ));
    assert!(!dir.path().join("none.db").exists());
    liteload(dir.path())
        .args(["import", "none.db", "-", "--format", "xlsx", "--table", "t"])
        .write_stdin(std::fs::read(dir.path().join("book.xlsx")).expect("read"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "a spreadsheet is read from a file",
        ));
    liteload(dir.path())
        .args(["import", "none.db", "book.xlsx", "--record", "x"])
        .assert()
        .code(2);
    std::fs::write(dir.path().join("fake.xlsx"), "id,name\n1,x\n").expect("write");
    liteload(dir.path())
        .args(["import", "none.db", "fake.xlsx"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("fake.xlsx"));
    assert!(!dir.path().join("none.db").exists());
}

#[test]
fn a_value_outside_the_sampled_columns_names_its_cell_and_loads_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut wb = Workbook::new();
    let ws = wb.add_worksheet().set_name("S").expect("name");
    ws.write_string(0, 0, "a").expect("write");
    for r in 1..40u32 {
        ws.write_number(r, 0, f64::from(r)).expect("write");
    }
    ws.write_string(40, 3, "far").expect("write");
    wb.save(dir.path().join("wide.xlsx")).expect("save");
    liteload(dir.path())
        .args(["import", "w.db", "wide.xlsx", "--sample", "10"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "wide.xlsx[S]:41:4: record 40: a value in cell D41, outside the table's columns A..A",
        ));
    assert!(!dir.path().join("w.db").exists());
}
