//! Property test: a random table, written as CSV and as NDJSON, imported, reads back
//! equal, value for value: any i64, any finite f64, any text, empty strings and NULLs.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;
use proptest::prelude::*;
use rusqlite::types::Value;

#[derive(Clone, Copy, Debug)]
enum Ty {
    Int,
    Real,
    Text,
}

fn column() -> impl Strategy<Value = Ty> {
    prop_oneof![Just(Ty::Int), Just(Ty::Real), Just(Ty::Text)]
}

/// A value of type `ty`; NULL is allowed where the format can say NULL.
fn value(ty: Ty, text_null: bool) -> BoxedStrategy<Value> {
    let v = match ty {
        Ty::Int => any::<i64>().prop_map(Value::Integer).boxed(),
        Ty::Real => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Real)
            .boxed(),
        Ty::Text => any::<String>()
            .prop_filter("no NUL in delimited text", |s| !s.contains('\0'))
            .prop_map(Value::Text)
            .boxed(),
    };
    match ty {
        Ty::Text if !text_null => v,
        _ => prop_oneof![4 => v, 1 => Just(Value::Null)].boxed(),
    }
}

fn table(text_null: bool) -> impl Strategy<Value = (Vec<Ty>, Vec<Vec<Value>>)> {
    prop::collection::vec(column(), 1..6).prop_flat_map(move |cols| {
        let row: Vec<BoxedStrategy<Value>> = cols.iter().map(|t| value(*t, text_null)).collect();
        (Just(cols), prop::collection::vec(row, 0..25))
    })
}

fn type_flags(cols: &[Ty]) -> Vec<String> {
    cols.iter()
        .enumerate()
        .flat_map(|(i, t)| {
            let ty = match t {
                Ty::Int => "integer",
                Ty::Real => "real",
                Ty::Text => "text",
            };
            ["--type".to_string(), format!("c{i}={ty}")]
        })
        .collect()
}

fn csv(cols: &[Ty], rows: &[Vec<Value>]) -> String {
    let mut s = (0..cols.len())
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    s.push_str("\r\n");
    for r in rows {
        let fields: Vec<String> = r
            .iter()
            .map(|v| match v {
                Value::Null => String::new(),
                Value::Integer(i) => i.to_string(),
                Value::Real(f) => format!("{f:e}"),
                Value::Text(t) => format!("\"{}\"", t.replace('"', "\"\"")),
                Value::Blob(_) => unreachable!(),
            })
            .collect();
        s.push_str(&fields.join(","));
        s.push_str("\r\n");
    }
    s
}

fn ndjson(cols: &[Ty], rows: &[Vec<Value>]) -> String {
    let mut s = String::new();
    for r in rows {
        let mut obj = serde_json::Map::new();
        for (i, v) in r.iter().enumerate() {
            let j = match v {
                Value::Null => serde_json::Value::Null,
                Value::Integer(i) => (*i).into(),
                Value::Real(f) => (*f).into(),
                Value::Text(t) => t.clone().into(),
                Value::Blob(_) => unreachable!(),
            };
            obj.insert(format!("c{i}"), j);
        }
        let _ = writeln!(s, "{}", serde_json::Value::Object(obj));
    }
    let _ = cols;
    s
}

fn load_and_read(
    dir: &Path,
    file: &str,
    contents: &str,
    cols: &[Ty],
) -> Result<Vec<Vec<Value>>, TestCaseError> {
    let db = dir.join(format!("{file}.db"));
    let _ = std::fs::remove_file(&db);
    std::fs::write(dir.join(file), contents).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let out = Command::cargo_bin("liteload")
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .current_dir(dir)
        .args(["import", "-q", &format!("{file}.db"), file, "--table", "t"])
        .args(type_flags(cols))
        .output()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = common::checked_rows(&db, "SELECT * FROM t ORDER BY rowid")
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(rows)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn csv_round_trips((cols, rows) in table(false)) {
        let d = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = load_and_read(d.path(), "in.csv", &csv(&cols, &rows), &cols)?;
        prop_assert_eq!(got, rows);
    }

    #[test]
    fn ndjson_round_trips((cols, rows) in table(true)) {
        // An NDJSON input with no objects has no columns: nothing to create a table from.
        prop_assume!(!rows.is_empty());
        let d = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let got = load_and_read(d.path(), "in.ndjson", &ndjson(&cols, &rows), &cols)?;
        prop_assert_eq!(got, rows);
    }
}
