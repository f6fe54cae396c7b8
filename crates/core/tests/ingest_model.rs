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

/// A field of the constrained table: `f1` INTEGER with a CHECK (13 is refused), `f2`
/// NOT NULL, `f3` UNIQUE (a few values, so keys collide), `f0` anything (NUL and
/// non-ASCII text included).
fn constrained_message() -> impl Strategy<Value = (i64, Vec<(usize, Value)>)> {
    let value = |f: usize| -> BoxedStrategy<Value> {
        match f {
            0 => prop_oneof![
                any::<i32>().prop_map(|i| json!(i)),
                "[a-zé\u{0}😀]{0,5}".prop_map(|s| json!(s)),
                Just(Value::Null),
            ]
            .boxed(),
            1 => prop_oneof![(10i64..15).prop_map(|i| json!(i)), Just(Value::Null)].boxed(),
            2 => prop_oneof!["[xy]{1,2}".prop_map(|s| json!(s)), Just(Value::Null)].boxed(),
            _ => prop_oneof![
                (0i64..4).prop_map(|i| json!(format!("u{i}"))),
                Just(Value::Null)
            ]
            .boxed(),
        }
    };
    (
        0i64..8,
        prop::collection::vec(
            (0usize..4).prop_flat_map(move |f| (Just(f), value(f))),
            1..4,
        ),
    )
}

/// Tables made beforehand: every kind of constraint (the writer then updates first), and
/// a UNIQUE index alone (the writer's one-statement upsert, its inserts counted by
/// rowids, also when a row is refused).
const CONSTRAINED: [&str; 2] = [
    "CREATE TABLE t (id TEXT PRIMARY KEY, f0, \
     f1 INTEGER CHECK (f1 IS NULL OR f1 <> 13), f2 TEXT NOT NULL, f3 TEXT UNIQUE)",
    "CREATE TABLE t (id TEXT PRIMARY KEY, f0, f1 INTEGER, f2 TEXT, f3 TEXT UNIQUE)",
];

/// Ingest into a table made beforehand with constraints, against SQLite applying the same
/// windows row by row: each window's messages merged per key (the last value of a field
/// wins), then in key order an UPDATE of the present fields of a key that is there, or an
/// INSERT of every column (absent ones NULL), each in a savepoint; a refused row is
/// skipped and counted. Both must give the same table, the same inserted count and the
/// same number of refused rows — through the one-statement upsert (text keys) and the
/// UPDATE first (windows that mostly update), and every database passes integrity_check.
fn check_constrained(
    ddl: &str,
    stream: &[(i64, Vec<(usize, Value)>)],
    window: usize,
) -> Result<(), TestCaseError> {
    let fail = |e: &dyn std::fmt::Display| TestCaseError::fail(e.to_string());
    let d = tempfile::tempdir().map_err(|e| fail(&e))?;
    let db = d.path().join("c.db");
    rusqlite::Connection::open(&db)
        .and_then(|c| c.execute_batch(ddl))
        .map_err(|e| fail(&e))?;
    let mut ing = Ingest::open(&db, {
        let mut built = IngestOptions::default();
        built.table = "t".into();
        built.keys = vec!["id".into()];
        built.commit_rows = window;
        built.commit_interval = Duration::from_secs(3600);
        built
    })
    .map_err(|e| fail(&e))?;
    let reference = rusqlite::Connection::open_in_memory().map_err(|e| fail(&e))?;
    reference.execute_batch(ddl).map_err(|e| fail(&e))?;
    let (mut inserted, mut refused) = (0u64, 0u64);
    for chunk in stream.chunks(window) {
        let mut merged: BTreeMap<String, BTreeMap<usize, Value>> = BTreeMap::new();
        for (key, fields) in chunk {
            let key = format!("k{key:02}");
            let mut obj = serde_json::Map::new();
            obj.insert("id".into(), json!(key));
            for (f, v) in fields {
                obj.insert(format!("f{f}"), v.clone());
                merged.entry(key.clone()).or_default().insert(*f, v.clone());
            }
            ing.push(obj, String::new(), None).map_err(|e| fail(&e))?;
        }
        ing.commit().map_err(|e| fail(&e))?;
        let sql_value = |v: &Value| match v {
            Value::Null => Sql::Null,
            Value::String(s) => Sql::Text(s.clone()),
            n => Sql::Integer(n.as_i64().expect("integers only")),
        };
        // A value of the UNIQUE column that moves inside the window (claimed by one key
        // while another key of the window held it before): whether the claim comes
        // before or after the release is the writer's order (updates of keys that are
        // there may go before new keys), which the docs leave open; such a case is left,
        // as the refusal below is.
        for (key, fields) in &merged {
            if let Some(v @ Value::String(_)) = fields.get(&3) {
                let holder: Option<String> = reference
                    .query_row("SELECT id FROM t WHERE f3 = ?1", [sql_value(v)], |r| {
                        r.get(0)
                    })
                    .ok();
                if holder
                    .as_ref()
                    .is_some_and(|h| h != key && merged.contains_key(h))
                {
                    return Ok(());
                }
            }
        }
        for (key, fields) in &merged {
            let there: bool = reference
                .query_row("SELECT count(*) FROM t WHERE id = ?1", [key], |r| r.get(0))
                .map_err(|e| fail(&e))?;
            let (sql, mut params): (String, Vec<Sql>) = if there {
                let set: Vec<String> = fields.keys().map(|f| format!("f{f} = ?")).collect();
                let mut p: Vec<Sql> = fields.values().map(sql_value).collect();
                p.push(Sql::Text(key.clone()));
                (format!("UPDATE t SET {} WHERE id = ?", set.join(", ")), p)
            } else {
                let p = (0..4)
                    .map(|f| fields.get(&f).map_or(Sql::Null, sql_value))
                    .collect();
                (
                    "INSERT INTO t (f0, f1, f2, f3, id) VALUES (?, ?, ?, ?, ?)".into(),
                    p,
                )
            };
            if !there {
                params.push(Sql::Text(key.clone()));
            }
            reference
                .execute_batch("SAVEPOINT r")
                .map_err(|e| fail(&e))?;
            match reference.execute(&sql, rusqlite::params_from_iter(params)) {
                Ok(_) => inserted += u64::from(!there),
                Err(e) => {
                    // A value of the UNIQUE column claimed from a row of the same window
                    // (which holds it, or lets it go later in the window): which row is
                    // refused is the writer's order (updates of keys that are there may
                    // go before new keys), not promised; such a case is left.
                    let claimed = fields.get(&3).map(sql_value);
                    let holder: Option<String> = match (e.sqlite_error_code(), claimed) {
                        (Some(rusqlite::ErrorCode::ConstraintViolation), Some(v)) => reference
                            .query_row("SELECT id FROM t WHERE f3 = ?1", [v], |r| r.get(0))
                            .ok(),
                        _ => None,
                    };
                    if holder.is_some_and(|h| merged.contains_key(&h)) {
                        return Ok(());
                    }
                    refused += 1;
                    reference
                        .execute_batch("ROLLBACK TO r")
                        .map_err(|e| fail(&e))?;
                }
            }
            reference.execute_batch("RELEASE r").map_err(|e| fail(&e))?;
        }
    }
    let t = ing.totals().clone();
    let c = ing.connection().map_err(|e| fail(&e))?;
    let rows = |c: &rusqlite::Connection| -> rusqlite::Result<Vec<Vec<Sql>>> {
        let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok");
        let mut stmt = c.prepare("SELECT id, f0, f1, f2, f3 FROM t ORDER BY id")?;
        let got = stmt
            .query_map([], |r| (0..5).map(|i| r.get::<_, Sql>(i)).collect())?
            .collect();
        got
    };
    prop_assert_eq!(
        rows(&c).map_err(|e| fail(&e))?,
        rows(&reference).map_err(|e| fail(&e))?
    );
    prop_assert_eq!((t.inserted, t.rejects), (inserted, refused));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_table_with_constraints_gets_what_sqlite_gives_it(
        stream in prop::collection::vec(constrained_message(), 0..60),
        window in 1usize..12,
    ) {
        for ddl in CONSTRAINED {
            check_constrained(ddl, &stream, window)?;
        }
    }
}
