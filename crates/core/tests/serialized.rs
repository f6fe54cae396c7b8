//! `Input::serialized` and `Input::rows` store what the same items written as NDJSON
//! store (the reference: serde_json's text read by the NDJSON source), for hostile
//! values: non-finite floats, integers past i64, NUL, non-ASCII, empty strings, nested
//! values, keys that collide to SQLite, keys first seen later. Bytes, which JSON cannot
//! carry, are held to what SQLite's own INSERT stores when they are bound as blobs.
//! Flattened items store what their NDJSON stores flattened.

use std::collections::BTreeMap;

use liteload::{import, ImportOptions, Input, Progress};
use proptest::prelude::*;
use rusqlite::Connection;

/// Every table's schema and rows, each value as `typeof:quote`.
fn dump(db: &std::path::Path) -> Vec<String> {
    let c = Connection::open(db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let sql: Vec<String> = c
        .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = sql.clone();
    let cols: Vec<String> = c
        .prepare("SELECT name FROM pragma_table_info('t')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let exprs: Vec<String> = cols
        .iter()
        .map(|n| {
            let q = format!("\"{}\"", n.replace('"', "\"\""));
            format!("typeof({q}) || ':' || quote({q})")
        })
        .collect();
    if !exprs.is_empty() {
        let mut st = c
            .prepare(&format!(
                "SELECT {} FROM t ORDER BY rowid",
                exprs.join(" || ' | ' || ")
            ))
            .unwrap();
        out.extend(
            st.query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .map(Result::unwrap),
        );
    }
    out
}

fn load(input: Input, engine: liteload::Engine) -> Result<Vec<String>, String> {
    load_sampling(input, engine, ImportOptions::default().read.sample_rows)
}

/// As [`load`], deciding types from the first `sample_rows` records.
fn load_sampling(
    input: Input,
    engine: liteload::Engine,
    sample_rows: usize,
) -> Result<Vec<String>, String> {
    load_with(input, engine, sample_rows, None)
}

/// As [`load_sampling`], nested objects flattened when `flatten` names a separator.
fn load_with(
    input: Input,
    engine: liteload::Engine,
    sample_rows: usize,
    flatten: Option<&str>,
) -> Result<Vec<String>, String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let mut opts = ImportOptions::default();
    opts.engine = engine;
    opts.table = Some("t".into());
    opts.read.sample_rows = sample_rows;
    opts.read.flatten = flatten.map(String::from);
    match import(&db, &[input], &opts, &Progress::default()) {
        Ok(_) => Ok(dump(&db)),
        Err(e) => Err(e.to_string()),
    }
}

fn as_ndjson<T: serde::Serialize>(items: &[T]) -> Input {
    let mut text = Vec::new();
    for i in items {
        serde_json::to_writer(&mut text, i).unwrap();
        text.push(b'\n');
    }
    Input::bytes("ref.ndjson", text)
}

#[derive(serde::Serialize, Clone, Debug)]
enum Shape {
    Dot,
    Circle(f64),
    Box { w: u8, h: u8 },
}

#[derive(serde::Serialize, Clone, Debug)]
struct Hostile {
    i: i64,
    u: u64,
    big: i128,
    f: f64,
    small: f32,
    b: bool,
    c: char,
    s: String,
    maybe: Option<String>,
    shape: Shape,
    unit: (),
    list: Vec<i32>,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("007".to_string()),
        Just(" 42".to_string()),
        Just("1e3".to_string()),
        Just("a\0b".to_string()),
        Just("-0.0".to_string()),
        "\\PC{0,12}",
        "[0-9.eE+-]{1,8}",
    ]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-0.0),
        Just(1e300),
        any::<f64>(),
        (-1000i32..1000).prop_map(|i| f64::from(i) / 8.0),
    ]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    (
        (
            any::<i64>(),
            any::<u64>(),
            any::<i128>(),
            float(),
            any::<f32>(),
            any::<bool>(),
        ),
        (any::<char>(), text(), proptest::option::of(text())),
        (
            0u8..3,
            float(),
            proptest::collection::vec(any::<i32>(), 0..3),
        ),
    )
        .prop_map(
            |((i, u, big, f, small, b), (c, s, maybe), (k, r, list))| Hostile {
                i,
                u,
                big,
                f,
                small,
                b,
                c,
                s,
                maybe,
                shape: match k {
                    0 => Shape::Dot,
                    1 => Shape::Circle(r),
                    _ => Shape::Box { w: 1, h: 2 },
                },
                unit: (),
                list,
            },
        )
}

/// A map item: keys that may collide to SQLite (`A`/`a`), be blank, or appear late.
fn map_item() -> impl Strategy<Value = BTreeMap<String, serde_json::Value>> {
    let key = prop_oneof![
        Just("a"),
        Just("A"),
        Just(" "),
        Just("é"),
        Just("k"),
        Just("zz")
    ];
    let value = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i64>().prop_map(serde_json::Value::from),
        float().prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
        Just(serde_json::json!({"x": [1, "y"]})),
        any::<bool>().prop_map(serde_json::Value::from),
    ];
    proptest::collection::btree_map(key.prop_map(String::from), value, 1..5)
}

const ENGINES: [liteload::Engine; 2] = [liteload::Engine::Sqlite, liteload::Engine::Direct];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn structs_store_what_their_ndjson_stores(items in proptest::collection::vec(hostile(), 1..40)) {
        for engine in ENGINES {
            let ours = load(Input::serialized("t", items.clone()), engine);
            let reference = load(as_ndjson(&items), engine);
            prop_assert_eq!(ours, reference);
        }
    }

    #[test]
    fn maps_store_what_their_ndjson_stores(
        items in proptest::collection::vec(map_item(), 1..30),
        sample in 1usize..8,
    ) {
        // Keys first seen after the sample add columns, as in NDJSON (the page writer
        // refuses a column that appears late: the same refusal for both readers).
        for engine in ENGINES {
            let ours = load_sampling(Input::serialized("t", items.clone()), engine, sample);
            let reference = load_sampling(as_ndjson(&items), engine, sample);
            prop_assert_eq!(ours, reference);
        }
    }

    #[test]
    fn rows_store_what_objects_of_their_columns_store(
        rows in proptest::collection::vec(proptest::collection::vec(map_item().prop_map(|m| m.into_values().next().unwrap()), 3), 1..30)
    ) {
        let columns = ["a", "B", "b"]; // B and b are one name to SQLite: b is stored as b_2
        let objects: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| serde_json::json!({"a": r[0], "B": r[1], "b": r[2]}))
            .collect();
        let ours = load(Input::rows("t", columns, rows.clone()), liteload::Engine::Sqlite);
        let reference = load(as_ndjson(&objects), liteload::Engine::Sqlite);
        prop_assert_eq!(ours, reference);
    }
}

/// A key first seen after the sample adds a column to a table liteload created (typed
/// by its first value), as the NDJSON reader does; a row of values with more values
/// than columns is a bad record, which a rejects budget skips.
#[test]
fn a_key_after_the_sample_adds_a_column() {
    let mut items: Vec<BTreeMap<&str, i64>> = vec![BTreeMap::from([("a", 1)]); 3];
    items.push(BTreeMap::from([("a", 2), ("late", 3)]));
    let got = load_sampling(Input::serialized("t", items), liteload::Engine::Sqlite, 2).unwrap();
    assert_eq!(
        got,
        [
            "CREATE TABLE \"t\" (\n  \"a\" INTEGER\n, \"late\" INTEGER)",
            "integer:1 | null:NULL",
            "integer:1 | null:NULL",
            "integer:1 | null:NULL",
            "integer:2 | integer:3",
        ]
    );
    let rows = vec![vec![1], vec![2, 3], vec![4]];
    let mut opts = ImportOptions::default();
    opts.max_errors = Some(1);
    let dir = tempfile::tempdir().unwrap();
    let s = import(
        dir.path().join("y.db"),
        &[Input::rows("t", ["a"], rows)],
        &opts,
        &Progress::default(),
    )
    .unwrap();
    assert_eq!((s.rows, s.rejects), (2, 1));
}

/// Rows with their columns given make the table even when there are none.
#[test]
fn no_rows_still_make_the_table_of_the_given_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let rows: Vec<Vec<i64>> = vec![];
    let s = import(
        &db,
        &[Input::rows("t", ["a", "b"], rows)],
        &ImportOptions::default(),
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(s.rows, 0);
    let d = dump(&db);
    assert_eq!(d, ["CREATE TABLE \"t\" (\n  \"a\" TEXT,\n  \"b\" TEXT\n)"]);
}

/// Bytes as serde gives them: `serialize_bytes` (what `serde_bytes` does).
#[derive(Clone, Debug)]
struct ByteString(Vec<u8>);

impl serde::Serialize for ByteString {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

#[derive(serde::Serialize, Clone, Debug)]
struct WithBytes {
    raw: Vec<u8>,
    buf: ByteString,
    wide: Vec<u16>,
    maybe: Option<Vec<u8>>,
}

/// `items` serialized into table `t` of a new database by `engine`; the directory
/// holding it goes when the first value is dropped.
fn imported<T: serde::Serialize + Clone + Send + 'static>(
    items: &[T],
    engine: liteload::Engine,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let mut opts = ImportOptions::default();
    opts.engine = engine;
    opts.table = Some("t".into());
    import(
        &db,
        &[Input::serialized("t", items.to_vec())],
        &opts,
        &Progress::default(),
    )
    .unwrap();
    (dir, db)
}

/// `column`'s declared type and its values as `typeof:quote`, in rowid order.
fn column_of(db: &std::path::Path, column: &str) -> (String, Vec<String>) {
    let c = Connection::open(db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let declared: String = c
        .query_row(
            "SELECT type FROM pragma_table_info('t') WHERE name = ?1",
            [column],
            |r| r.get(0),
        )
        .unwrap();
    let values = c
        .prepare(&format!(
            "SELECT typeof(\"{column}\") || ':' || quote(\"{column}\") FROM t ORDER BY rowid"
        ))
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (declared, values)
}

/// What SQLite's own INSERT stores for `values` bound into a column declared `declared`
/// (each `None` as NULL, bytes as a blob, text as text).
fn bound(declared: &str, values: &[rusqlite::types::Value]) -> Vec<String> {
    let c = Connection::open_in_memory().unwrap();
    c.execute(&format!("CREATE TABLE t(v {declared})"), [])
        .unwrap();
    for v in values {
        c.execute("INSERT INTO t VALUES (?1)", [v]).unwrap();
    }
    let values = c
        .prepare("SELECT typeof(v) || ':' || quote(v) FROM t ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    values
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `Vec<u8>` and `serialize_bytes` are BLOBs, stored byte for byte as SQLite stores a
    /// bound blob; an empty one is an empty blob in that BLOB column, and `[]` in a
    /// column whose sample held no bytes; a sequence of wider integers stays JSON text.
    #[test]
    fn bytes_are_stored_as_sqlite_stores_bound_blobs(
        items in proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..4),
                proptest::collection::vec(any::<u8>(), 0..4),
                proptest::collection::vec(any::<u16>(), 0..3),
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..3)),
            ),
            1..20,
        )
    ) {
        let items: Vec<WithBytes> = items
            .into_iter()
            .map(|(raw, buf, wide, maybe)| WithBytes { raw, buf: ByteString(buf), wide, maybe })
            .collect();
        use rusqlite::types::Value as V;
        let blob_or_list = |b: &Vec<u8>, blob_column: bool| {
            if blob_column { V::Blob(b.clone()) } else { V::Text("[]".into()) }
        };
        for engine in ENGINES {
            let (_dir, db) = imported(&items, engine);
            // raw: BLOB once any value holds a byte, else every value is "[]".
            let blob = items.iter().any(|i| !i.raw.is_empty());
            let (declared, got) = column_of(&db, "raw");
            prop_assert_eq!(&declared, if blob { "BLOB" } else { "TEXT" });
            let want: Vec<V> = items.iter().map(|i| blob_or_list(&i.raw, blob)).collect();
            prop_assert_eq!(got, bound(&declared, &want));
            // buf: serialize_bytes is bytes even when empty.
            let (declared, got) = column_of(&db, "buf");
            prop_assert_eq!(&declared, "BLOB");
            let want: Vec<V> = items.iter().map(|i| V::Blob(i.buf.0.clone())).collect();
            prop_assert_eq!(got, bound(&declared, &want));
            // wide: JSON text, as NDJSON stores it.
            let (declared, got) = column_of(&db, "wide");
            prop_assert_eq!(&declared, "TEXT");
            let want: Vec<V> = items
                .iter()
                .map(|i| V::Text(serde_json::to_string(&i.wide).unwrap()))
                .collect();
            prop_assert_eq!(got, bound(&declared, &want));
            // maybe: NULL for None, else as raw.
            let blob = items.iter().any(|i| i.maybe.as_ref().is_some_and(|b| !b.is_empty()));
            let (declared, got) = column_of(&db, "maybe");
            prop_assert_eq!(&declared, if blob { "BLOB" } else { "TEXT" });
            let want: Vec<V> = items
                .iter()
                .map(|i| i.maybe.as_ref().map_or(V::Null, |b| blob_or_list(b, blob)))
                .collect();
            prop_assert_eq!(got, bound(&declared, &want));
        }
    }
}

/// A field of any type, as serde gives each: a column that mixes them.
#[derive(Clone, Debug)]
enum Mixed {
    Bytes(Vec<u8>),
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    Null,
}

impl serde::Serialize for Mixed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Mixed::Bytes(b) => s.serialize_bytes(b),
            Mixed::Int(i) => s.serialize_i64(*i),
            Mixed::Real(r) => s.serialize_f64(*r),
            Mixed::Text(t) => s.serialize_str(t),
            Mixed::Bool(b) => s.serialize_bool(*b),
            Mixed::Null => s.serialize_none(),
        }
    }
}

#[derive(serde::Serialize, Clone, Debug)]
struct MixedRow {
    v: Mixed,
}

fn mixed() -> impl Strategy<Value = Mixed> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(Mixed::Bytes),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>()].prop_map(Mixed::Int),
        prop_oneof![Just(-0.0), Just(1e300), Just(0.5), any::<f64>()]
            .prop_filter("finite", |r| r.is_finite())
            .prop_map(Mixed::Real),
        text().prop_map(Mixed::Text),
        any::<bool>().prop_map(Mixed::Bool),
        Just(Mixed::Null),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A column whose sample holds bytes is BLOB, and a BLOB column converts nothing, as
    /// SQLite's own INSERT of each value bound with its type stores it: a number stays a
    /// number, text (also numeric-looking text) stays text, bytes stay bytes.
    #[test]
    fn a_blob_column_stores_every_value_as_sqlite_stores_it_bound(
        rest in proptest::collection::vec(mixed(), 0..30),
    ) {
        let mut items = vec![MixedRow { v: Mixed::Bytes(vec![0, 0xff]) }];
        items.extend(rest.into_iter().map(|v| MixedRow { v }));
        use rusqlite::types::Value as V;
        let want: Vec<V> = items
            .iter()
            .map(|r| match &r.v {
                Mixed::Bytes(b) => V::Blob(b.clone()),
                Mixed::Int(i) => V::Integer(*i),
                Mixed::Real(x) => V::Real(*x),
                Mixed::Text(t) => V::Text(t.clone()),
                Mixed::Bool(b) => V::Integer(i64::from(*b)),
                Mixed::Null => V::Null,
            })
            .collect();
        for engine in ENGINES {
            let (_dir, db) = imported(&items, engine);
            let (declared, got) = column_of(&db, "v");
            prop_assert_eq!(&declared, "BLOB");
            prop_assert_eq!(got, bound(&declared, &want), "engine {:?}", engine);
        }
    }
}

/// A nested map item for flattening: keys whose joined paths collide with other keys
/// (`a_b` against `a` > `b`, `A` against `a`), blank and non-ASCII keys, empty objects,
/// objects in arrays (JSON text), objects where scalars were in other items, deep nesting.
fn nested_item() -> impl Strategy<Value = serde_json::Value> {
    let key = prop_oneof![
        Just("a"),
        Just("A"),
        Just("b"),
        Just("a_b"),
        Just("a.b"),
        Just("ab"),
        Just(""),
        Just("é"),
    ];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i64>().prop_map(serde_json::Value::from),
        float().prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
        any::<bool>().prop_map(serde_json::Value::from),
        Just(serde_json::json!([{"x": {"y": 1}}, 2])),
        Just(serde_json::json!({})),
    ];
    let value = leaf.prop_recursive(4, 24, 4, move |inner| {
        proptest::collection::vec((key.clone().prop_map(String::from), inner), 0..4)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
    });
    let top = prop_oneof![
        Just("a"),
        Just("A"),
        Just("a_b"),
        Just("ab"),
        Just(""),
        Just("z")
    ];
    proptest::collection::vec((top.prop_map(String::from), value), 1..5)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

#[derive(serde::Serialize, Clone, Debug)]
struct Owner {
    name: String,
    address: Option<Address>,
    shape: Shape,
}

#[derive(serde::Serialize, Clone, Debug)]
struct Address {
    city: String,
    zip: Option<i64>,
    lines: Vec<String>,
}

#[derive(serde::Serialize, Clone, Debug)]
struct Owned {
    id: i64,
    owner: Owner,
    owner_name: String,
    hostile: Hostile,
}

fn owned() -> impl Strategy<Value = Owned> {
    (
        any::<i64>(),
        text(),
        proptest::option::of((text(), proptest::option::of(any::<i64>()))),
        0u8..3,
        hostile(),
    )
        .prop_map(|(id, name, address, k, hostile)| Owned {
            id,
            owner: Owner {
                name: name.clone(),
                address: address.map(|(city, zip)| Address {
                    city,
                    zip,
                    lines: vec![name.clone()],
                }),
                shape: match k {
                    0 => Shape::Dot,
                    1 => Shape::Circle(0.5),
                    _ => Shape::Box { w: 3, h: 4 },
                },
            },
            owner_name: name,
            hostile,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Flattened, nested maps store what their NDJSON stores flattened: the same
    /// columns (named by the joined paths, collisions by the same allocator), types
    /// and values, keys first seen after the sample included.
    #[test]
    fn flattened_maps_store_what_their_flattened_ndjson_stores(
        items in proptest::collection::vec(nested_item(), 1..25),
        sample in 1usize..8,
        separator in prop_oneof![Just("_"), Just("."), Just("")],
    ) {
        for engine in ENGINES {
            let ours = load_with(Input::serialized("t", items.clone()), engine, sample, Some(separator));
            let reference = load_with(as_ndjson(&items), engine, sample, Some(separator));
            prop_assert_eq!(ours, reference);
        }
    }

    /// Flattened, nested structs (an `Option` of one, enum variants with data, which JSON
    /// writes as objects, a field named as a flattened path is) store what their NDJSON
    /// stores flattened.
    #[test]
    fn flattened_structs_store_what_their_flattened_ndjson_stores(
        items in proptest::collection::vec(owned(), 1..25),
    ) {
        for engine in ENGINES {
            let ours = load_with(Input::serialized("t", items.clone()), engine, 100, Some("_"));
            let reference = load_with(as_ndjson(&items), engine, 100, Some("_"));
            prop_assert!(ours.is_ok(), "{:?}", ours);
            prop_assert_eq!(ours, reference);
        }
    }
}

/// With flattening, a NUL in a nested key is refused as at the top (no column can be
/// named by it), and positional rows, whose columns are given, are not flattened.
#[test]
fn flattening_refuses_a_nul_in_a_nested_key_and_leaves_positional_rows_whole() {
    let items = vec![serde_json::json!({"a": {"b\0c": 1}})];
    let mut opts = ImportOptions::default();
    opts.read.flatten = Some("_".into());
    let dir = tempfile::tempdir().unwrap();
    let err = import(
        dir.path().join("n.db"),
        &[Input::serialized("t", items)],
        &opts,
        &Progress::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("has a NUL byte"), "{err}");

    let rows = vec![vec![
        serde_json::json!(1),
        serde_json::json!({"x": {"y": 2}}),
    ]];
    let db = dir.path().join("r.db");
    opts.table = Some("t".into());
    import(
        &db,
        &[Input::rows("t", ["id", "obj"], rows)],
        &opts,
        &Progress::default(),
    )
    .unwrap();
    assert_eq!(
        dump(&db),
        [
            "CREATE TABLE \"t\" (\n  \"id\" INTEGER,\n  \"obj\" TEXT\n)",
            "integer:1 | text:'{\"x\":{\"y\":2}}'",
        ]
    );
}
