//! Spreadsheets through the Rust API's two doors: `import` into a file (by the page
//! writer and by SQLite's insert path) and `import_into_connection` inside a caller's
//! transaction. The cell-by-cell mapping is tested against openpyxl's reading in
//! `python/tests/test_spreadsheets.py`; here the doors keep the same rows.

use std::path::Path;

use liteload::{import, import_into_connection, Engine, ImportOptions, Input, Progress};
use rusqlite::types::Value;
use rusqlite::Connection;
use rust_xlsxwriter::{ExcelDateTime, Format, Formula, Workbook};

type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Sheet "a b" (mixed types, an error cell, the table from C3) and sheet "second".
fn book(path: &Path) -> R {
    let mut wb = Workbook::new();
    let date = Format::new().set_num_format("yyyy-mm-dd hh:mm:ss");
    let ws = wb.add_worksheet().set_name("a b")?;
    ws.write_string(2, 2, "k")?;
    ws.write_string(2, 3, "v")?;
    ws.write_string(2, 4, "at")?;
    for r in 0..300u32 {
        let row = 3 + r;
        ws.write_number(row, 2, f64::from(r))?;
        match r % 4 {
            0 => ws.write_string(row, 3, format!("é{r}\u{1F600}"))?,
            1 => ws.write_number(row, 3, f64::from(r) + 0.5)?,
            2 => ws.write_boolean(row, 3, r % 8 == 2)?,
            _ => ws.write_formula(row, 3, Formula::new("=NA()").set_result("#N/A"))?,
        };
        let at = ExcelDateTime::from_ymd(2026, 11, 29)?.and_hms((r % 24) as u16, 0, 1)?;
        ws.write_datetime_with_format(row, 4, &at, &date)?;
    }
    let second = wb.add_worksheet().set_name("second")?;
    second.write_string(0, 0, "x")?;
    second.write_number(1, 0, 7)?;
    wb.save(path)?;
    Ok(())
}

fn rows(conn: &Connection, table: &str) -> R<Vec<Vec<Value>>> {
    let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid"))?;
    let n = stmt.column_count();
    let got = stmt
        .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<Result<Vec<Vec<Value>>, _>>()?;
    Ok(got)
}

/// What the sheet "a b" holds, by the documented rules: `v` is TEXT (text among its
/// values), so its numbers are text and its booleans `1`/`0`; `#N/A` is NULL.
fn expected() -> Vec<Vec<Value>> {
    (0..300i64)
        .map(|r| {
            let v = match r % 4 {
                0 => Value::Text(format!("é{r}\u{1F600}")),
                1 => Value::Text(format!("{}", r as f64 + 0.5)),
                2 => Value::Text(if r % 8 == 2 { "1" } else { "0" }.into()),
                _ => Value::Null,
            };
            let at = Value::Text(format!("2026-11-29 {:02}:00:01", r % 24));
            vec![Value::Integer(r), v, at]
        })
        .collect()
}

#[test]
fn every_door_loads_the_same_rows() -> R {
    let dir = tempfile::tempdir()?;
    let xlsx = dir.path().join("book.xlsx");
    book(&xlsx)?;
    let input = [Input::Path(xlsx)];
    // The whole workbook (two tables: SQLite's insert path in one transaction), and one
    // sheet by the page writer.
    for (engine, sheet) in [
        (Engine::Auto, None),
        (Engine::Sqlite, None),
        (Engine::Direct, Some("a b")),
    ] {
        let db = dir.path().join(format!("{engine:?}.db"));
        let mut opts = ImportOptions::default();
        opts.engine = engine;
        opts.read.sheet = sheet.map(str::to_owned);
        let s = import(&db, &input, &opts, &Progress::default())?;
        assert_eq!(s.rows, if sheet.is_some() { 300 } else { 301 });
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("75 error cells loaded as NULL (the first: #N/A in D7)")),
            "{:?}",
            s.notes
        );
        let conn = Connection::open(&db)?;
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok");
        assert_eq!(rows(&conn, "a b")?, expected());
        if sheet.is_none() {
            assert_eq!(rows(&conn, "second")?, [vec![Value::Integer(7)]]);
        }
    }
    // The page writer makes one table a load: a workbook of two sheets is refused by
    // it, with nothing written.
    let mut opts = ImportOptions::default();
    opts.engine = Engine::Direct;
    let db = dir.path().join("refused.db");
    let e = import(&db, &input, &opts, &Progress::default()).expect_err("two tables");
    assert!(e.to_string().contains("one table"), "{e}");
    assert!(!db.exists());
    // Inside a caller's transaction: one sheet by name, rolled back, then kept.
    let mut conn = Connection::open(dir.path().join("app.db"))?;
    let mut opts = ImportOptions::default();
    opts.read.sheet = Some("a b".into());
    opts.table = Some("t".into());
    let tx = conn.transaction()?;
    import_into_connection(&tx, &input, &opts, &Progress::default())?;
    tx.rollback()?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    assert_eq!(tables, 0);
    let tx = conn.transaction()?;
    let s = import_into_connection(&tx, &input, &opts, &Progress::default())?;
    tx.commit()?;
    assert_eq!(s.rows, 300);
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    assert_eq!(rows(&conn, "t")?, expected());
    Ok(())
}
