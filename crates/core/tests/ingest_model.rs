//! The ingest engine against a reference model: a plain in-memory merge of the same
//! stream. For random streams (random keys, sparse field sets, nulls, nested values,
//! fields first seen late) and any commit window, the table equals the model.

use std::collections::BTreeMap;
use std::time::Duration;

use liteload::ingest::{Ingest, IngestOptions, LineMeta, Messages};
use proptest::prelude::*;
use rusqlite::types::Value as Sql;
use serde_json::{json, Value};

/// A field value: integers, reals with a fraction (so no affinity rewrites them),
/// text that does not look numeric, null, and nested values.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i32>().prop_map(|i| json!(i)),
        (-1000i32..1000).prop_map(|i| json!(f64::from(i) + 0.5)),
        "[a-z ]{0,6}".prop_map(|s| json!(format!("s{s}"))),
        Just(Value::Null),
        (any::<i8>(), "[a-z]{0,3}").prop_map(|(i, s)| json!({"n": i, "t": [s]})),
    ]
}

/// A message: a key among a few, and 1-4 of 6 fields.
fn message() -> impl Strategy<Value = (i64, Vec<(usize, Value)>)> {
    (
        0i64..6,
        prop::collection::vec((0usize..6, field_value()), 1..4),
    )
}

type Model = BTreeMap<i64, BTreeMap<String, Value>>;

fn apply(model: &mut Model, key: i64, fields: &[(usize, Value)]) {
    let row = model.entry(key).or_default();
    for (f, v) in fields {
        row.insert(format!("f{f}"), v.clone());
    }
}

fn same(model: &Value, got: &Sql) -> bool {
    match (model, got) {
        (Value::Null, Sql::Null) => true,
        (Value::Number(n), Sql::Integer(i)) => n.as_i64() == Some(*i),
        (Value::Number(n), Sql::Real(r)) => n.as_f64() == Some(*r),
        (Value::String(s), Sql::Text(t)) => s == t,
        // TEXT affinity stores a number that arrives in a TEXT column as its text.
        (Value::Number(n), Sql::Text(t)) => match n.as_i64() {
            Some(i) => t.parse::<i64>().ok() == Some(i),
            None => t.parse::<f64>().ok() == n.as_f64(),
        },
        (v @ (Value::Object(_) | Value::Array(_)), Sql::Text(t)) => {
            serde_json::from_str::<Value>(t).is_ok_and(|parsed| parsed == *v)
        }
        _ => false,
    }
}

/// How the stream reaches the engine.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Feed {
    /// One object at a time, each window written on the caller's thread.
    Objects,
    /// Parsed batches as the CLI's readers make them, windows written in the background.
    Batches,
}

/// The key as the stream sends it: the integer, or (`text`) a string that sorts as it
/// does. A text key takes the writer's other road (its rows are numbered by rowids, so
/// new keys and updates go in one upsert, counted by those rowids).
fn key_json(key: i64, text: bool) -> Value {
    if text {
        json!(format!("k{key:02}"))
    } else {
        json!(key)
    }
}

fn check(
    stream: &[(i64, Vec<(usize, Value)>)],
    window: usize,
    feed: Feed,
    text: bool,
) -> Result<(), TestCaseError> {
    let fail = |e: &dyn std::fmt::Display| TestCaseError::fail(e.to_string());
    let d = tempfile::tempdir().map_err(|e| fail(&e))?;
    let mut ing = Ingest::open(&d.path().join("s.db"), {
        let mut built = IngestOptions::default();
        built.table = "flights".into();
        built.keys = vec!["id".into()];
        built.commit_rows = window;
        built.commit_interval = Duration::from_secs(3600);
        built
    })
    .map_err(|e| fail(&e))?;
    let mut model = Model::new();
    let mut batch = Messages::new(ing.key_fields());
    for (key, fields) in stream {
        let mut obj = serde_json::Map::new();
        obj.insert("id".into(), key_json(*key, text));
        for (f, v) in fields {
            obj.insert(format!("f{f}"), v.clone());
        }
        apply(&mut model, *key, fields);
        if feed == Feed::Batches {
            let line = serde_json::to_vec(&obj).map_err(|e| fail(&e))?;
            batch.push_line(&line, false, LineMeta::default());
            continue;
        }
        ing.push(obj, String::new(), None).map_err(|e| fail(&e))?;
        if ing.due() {
            ing.commit().map_err(|e| fail(&e))?;
        }
    }
    let mut next = 0;
    while next < batch.len() {
        let pushed = ing.push_messages(&batch, next, None, |_, _| false);
        prop_assert!(!pushed.stopped, "every message of the stream is good");
        next = pushed.next;
        if ing.due() {
            ing.commit_background().map_err(|e| fail(&e))?;
        }
    }
    ing.commit().map_err(|e| fail(&e))?;
    let c = ing.connection().unwrap();
    if model.is_empty() {
        return Ok(());
    }
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| fail(&e))?;
    prop_assert_eq!(ok, "ok");
    let mut stmt = c
        .prepare("SELECT * FROM flights ORDER BY id")
        .map_err(|e| fail(&e))?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<Sql>> = stmt
        .query_map([], |r| {
            (0..names.len())
                .map(|i| r.get::<_, Sql>(i))
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| fail(&e))?;
    prop_assert_eq!(rows.len(), model.len());
    for (row, (key, fields)) in rows.iter().zip(&model) {
        let want_key = match key_json(*key, text) {
            Value::String(s) => Sql::Text(s),
            _ => Sql::Integer(*key),
        };
        prop_assert_eq!(&row[0], &want_key);
        for (name, got) in names.iter().zip(row).skip(1) {
            let want = fields.get(name).cloned().unwrap_or(Value::Null);
            prop_assert!(
                same(&want, got),
                "key {} column {}: model {} table {:?}",
                key,
                name,
                want,
                got
            );
        }
    }
    let t = ing.totals();
    prop_assert_eq!(t.messages, stream.len() as u64);
    prop_assert_eq!(t.inserted, model.len() as u64);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_table_equals_the_model(
        stream in prop::collection::vec(message(), 0..60),
        window in 1usize..8,
        text in any::<bool>(),
    ) {
        check(&stream, window, Feed::Objects, text)?;
        check(&stream, 1_000_000, Feed::Objects, text)?;
        check(&stream, window, Feed::Batches, text)?;
    }
}

#[test]
fn a_rerun_resumes_after_the_last_commit_and_bad_messages_are_counted(
) -> Result<(), Box<dyn std::error::Error>> {
    use liteload::ingest::SourcePosition;
    let d = tempfile::tempdir()?;
    let db = d.path().join("s.db");
    let opts = {
        let mut built = IngestOptions::default();
        built.table = "t".into();
        built.keys = vec!["k".into()];
        built.commit_rows = 2;
        built.history = Some("h".into());
        built
    };
    let lines = [
        r#"{"k": "a", "x": 1}"#,
        "not json",
        r#"{"x": 2}"#,
        r#"{"k": 1.5}"#,
        r#"{"k": "b", "y": null}"#,
        r#"{"k": "a", "x": 3}"#,
    ];
    let mut ing = Ingest::open(&db, opts.clone())?;
    let mut offset = 0;
    let mut reasons = vec![];
    for (i, l) in lines.iter().enumerate() {
        offset += l.len() as u64 + 1;
        let pos = SourcePosition {
            source: "f".into(),
            file: Some("1:2".into()),
            line: i as u64 + 2,
            offset,
            position: None,
        };
        if let Err(r) = ing.push_line(l.as_bytes(), Some(pos)) {
            reasons.push(r);
        }
        if ing.due() {
            ing.commit()?;
        }
        if i == 3 {
            break; // a "crash" after the window that ended at line 4
        }
    }
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[1].contains("\"k\" is missing") && reasons[2].contains("non-integer"));
    drop(ing);
    let ing = Ingest::open(&db, opts)?;
    let at = ing.resume_point("f")?.ok_or("no resume point")?;
    let committed: u64 = lines[..4].iter().map(|l| l.len() as u64 + 1).sum();
    assert_eq!(
        at,
        SourcePosition {
            source: "f".into(),
            file: Some("1:2".into()),
            line: 5,
            offset: committed,
            position: None,
        }
    );
    let n: i64 = ing
        .connection()
        .unwrap()
        .query_row("SELECT count(*) FROM h", [], |r| r.get(0))?;
    assert_eq!(n, 1, "only applied messages go to the history");
    Ok(())
}
