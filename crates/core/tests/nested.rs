//! Related tables from nested JSON (`Nested::Tables`, `Nested::ObjectTables`), against a
//! reference written here: random nested documents (hostile keys that collide with the
//! reserved columns and with each other by case, empty arrays, nulls where objects
//! were, objects where scalars were, arrays in arrays, repeated keys) are split by the
//! documented rules into tables of rows, each inserted by SQLite's own INSERT into a
//! table of the schema liteload made; every table must then read back the same, and
//! SQLite's `integrity_check` and `foreign_key_check` be clean. Both writers (the page
//! writer into a new file, SQLite's insert path), both layouts (NDJSON, a JSON array),
//! with and without flattening.

use std::collections::{HashMap, HashSet};

use liteload::{import, Engine, ImportOptions, Input, Nested, Progress};
use proptest::prelude::*;
use rusqlite::types::Value as Sql;
use rusqlite::Connection;
use serde_json::{Map, Value};

type R<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// A table of the reference: its name, columns (by key path) and rows.
struct Table {
    name: String,
    /// The path of its arrays from the record, keys joined by `.`.
    steps: String,
    children: HashMap<String, usize>,
    columns: Vec<(String, String)>,
    taken: HashSet<String>,
    rows: Vec<Vec<(String, Value)>>,
}

/// The documented rules, written plainly: every table `_id` from 1; a child's rows
/// `_parent` and `_position`; an object element's members its columns, another element
/// `value`; a key whose name is taken (ignoring ASCII case) gets `_2`, `_3`, …; a blank
/// key is `c<place>`; child tables `<parent>_<key path joined by _>`, named apart the
/// same way.
struct Model {
    tables: Vec<Table>,
    names: HashSet<String>,
    rule: Nested,
    flatten: Option<String>,
    /// The records' key member (a primary key option), else `_id`.
    key: Option<String>,
    /// Names given to child tables by path.
    given: Vec<(String, String)>,
}

fn free(taken: &mut HashSet<String>, wanted: &str) -> String {
    if taken.insert(wanted.to_ascii_lowercase()) {
        return wanted.to_string();
    }
    (2..)
        .map(|n| format!("{wanted}_{n}"))
        .find(|n| taken.insert(n.to_ascii_lowercase()))
        .unwrap()
}

impl Model {
    fn new(top: &str, rule: Nested, flatten: Option<String>, key: Option<String>) -> Model {
        let mut m = Model {
            tables: vec![],
            names: HashSet::new(),
            rule,
            flatten,
            key,
            given: vec![],
        };
        m.names.insert(top.to_ascii_lowercase());
        m.table(top.to_string(), false, String::new());
        m
    }

    fn table(&mut self, name: String, child: bool, steps: String) -> usize {
        let key = self.key.clone().unwrap_or("_id".into());
        let reserved: &[&str] = if child {
            &["_id", "_parent", "_position"]
        } else {
            &[key.as_str()]
        };
        self.tables.push(Table {
            name,
            steps,
            children: HashMap::new(),
            // (Reserved columns have no key: U+0001 is none here.)
            columns: reserved
                .iter()
                .map(|r| ("\u{1}".to_string(), r.to_string()))
                .collect(),
            taken: reserved.iter().map(|r| r.to_string()).collect(),
            rows: vec![],
        });
        self.tables.len() - 1
    }

    fn column(&mut self, t: usize, key: &str) -> String {
        let tb = &mut self.tables[t];
        if let Some((_, c)) = tb.columns.iter().find(|(k, _)| k == key) {
            return c.clone();
        }
        let joined = key.replace('\0', self.flatten.as_deref().unwrap_or("_"));
        let wanted = if joined.trim().is_empty() {
            format!("c{}", tb.columns.len() + 1)
        } else {
            joined
        };
        let c = free(&mut tb.taken, &wanted);
        tb.columns.push((key.to_string(), c.clone()));
        c
    }

    fn row(&mut self, t: usize, obj: &Map<String, Value>, parent: Option<(Value, usize)>) {
        let id = self.tables[t].rows.len() as i64 + 1;
        // The row's place is taken first: its children come after it in no table of its.
        self.tables[t].rows.push(vec![]);
        // Keyed, a record's row has its key member (any ASCII case) first, and its
        // children reference it.
        let key = match (&self.key, t) {
            (Some(k), 0) => obj.iter().find(|(m, _)| m.eq_ignore_ascii_case(k)),
            _ => None,
        };
        let (mut cells, me) = match (&self.key, key) {
            (Some(k), Some((_, v))) => (vec![(k.clone(), v.clone())], v.clone()),
            _ => (vec![("_id".to_string(), Value::from(id))], Value::from(id)),
        };
        if let Some((p, pos)) = parent {
            cells.push(("_parent".into(), p));
            cells.push(("_position".into(), Value::from(pos)));
        }
        for (k, v) in obj {
            if key.is_some_and(|(m, _)| m == k) {
                continue;
            }
            self.member(t, &me, k.clone(), k.clone(), v, &mut cells);
        }
        self.tables[t].rows[id as usize - 1] = cells;
    }

    fn member(
        &mut self,
        t: usize,
        id: &Value,
        key: String,
        tkey: String,
        v: &Value,
        cells: &mut Vec<(String, Value)>,
    ) {
        let rule = self.rule;
        let takes = |a: &Vec<Value>| match rule {
            Nested::Tables => true,
            _ => a.iter().any(|e| e.is_object() || e.is_array()),
        };
        match v {
            Value::Array(a) if takes(a) => {
                let c = match self.tables[t].children.get(&key) {
                    Some(&c) => c,
                    None => {
                        let path = key.replace('\0', ".");
                        let steps = match self.tables[t].steps.as_str() {
                            "" => path,
                            above => format!("{above}.{path}"),
                        };
                        let wanted = match self.given.iter().find(|(p, _)| *p == steps) {
                            Some((_, name)) => name.clone(),
                            None => format!("{}_{tkey}", self.tables[t].name),
                        };
                        let name = free(&mut self.names, &wanted);
                        let c = self.table(name, true, steps);
                        self.tables[t].children.insert(key.clone(), c);
                        c
                    }
                };
                for (i, el) in a.iter().enumerate() {
                    let obj = match el {
                        Value::Object(m) => m.clone(),
                        other => Map::from_iter([("value".to_string(), other.clone())]),
                    };
                    self.row(c, &obj, Some((id.clone(), i)));
                }
            }
            Value::Object(m) if self.flatten.is_some() => {
                // The path's keys, told apart from a key holding the separator.
                for (k, v) in m {
                    self.member(
                        t,
                        id,
                        format!("{key}\0{k}"),
                        format!("{tkey}_{k}"),
                        v,
                        cells,
                    );
                }
            }
            v => {
                let c = self.column(t, &key);
                cells.push((c, v.clone()));
            }
        }
    }
}

/// A JSON value as the flat JSON reader gives it to a column declared `declared`,
/// before affinity: nested values as their JSON text, booleans 1/0, a real in a TEXT
/// column as serde_json writes it (`1e+300`, `2.0`: docs/import.md), an empty string
/// in an INTEGER or REAL column NULL.
fn sql_of(v: &Value, declared: &str) -> Sql {
    match v {
        Value::Number(n) if declared == "TEXT" && n.is_f64() => Sql::Text(n.to_string()),
        // An empty string is NULL in a typed column (nulls "typed", the default).
        Value::String(t) if t.is_empty() && matches!(declared, "INTEGER" | "REAL") => Sql::Null,
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Sql::Integer(i),
            None => Sql::Real(n.as_f64().unwrap()),
        },
        Value::String(s) => Sql::Text(s.clone()),
        other => Sql::Text(serde_json::to_string(other).unwrap()),
    }
}

fn rows(conn: &Connection, table: &str) -> R<Vec<Vec<Sql>>> {
    let q = format!(
        "SELECT * FROM \"{}\" ORDER BY rowid",
        table.replace('"', "\"\"")
    );
    let mut stmt = conn.prepare(&q)?;
    let n = stmt.column_count();
    let got = stmt
        .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?
        .collect::<Result<Vec<Vec<Sql>>, _>>()?;
    Ok(got)
}

fn columns(conn: &Connection, table: &str) -> R<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    let got = stmt
        .query_map([table], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(got)
}

/// SQLite's own checks of a file a load wrote: `integrity_check` and `foreign_key_check`.
fn sound(conn: &Connection) -> R {
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let fk: i64 = conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
        r.get(0)
    })?;
    assert_eq!(fk, 0, "foreign_key_check");
    Ok(())
}

/// Loads `records` with `opts` and compares every table with the model's rows inserted
/// by SQLite into the schema liteload made.
fn check(records: &[Vec<(String, Value)>], ndjson: bool, opts: &ImportOptions) -> R {
    let dir = tempfile::tempdir()?;
    // A JSON array's elements may span lines (their line breaks are blanks to the
    // spools); an NDJSON record is one line.
    let pretty = !ndjson && records.len().is_multiple_of(2);
    let texts: Vec<String> = records.iter().map(|r| written(r, pretty)).collect();
    let text = if ndjson {
        texts.iter().map(|t| t.clone() + "\n").collect::<String>()
    } else {
        format!("[\n{}\n]", texts.join(",\n"))
    };
    let name = if ndjson { "t.ndjson" } else { "t.json" };
    let input = dir.path().join(name);
    std::fs::write(&input, &text)?;
    let db = dir.path().join("out.db");
    import(&db, &[Input::Path(input)], opts, &Progress::default())?;
    let key = opts.pk.first().cloned();
    let mut model = Model::new("t", opts.nested, opts.read.flatten.clone(), key);
    model.given = opts.child_tables.clone();
    for r in records {
        let object: Map<String, Value> = r.iter().cloned().collect();
        model.row(0, &object, None);
    }
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    let mut tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    // A child table is made when an element is met.
    let mut want: Vec<String> = model
        .tables
        .iter()
        .filter(|t| t.name == "t" || !t.rows.is_empty())
        .map(|t| t.name.clone())
        .collect();
    tables.sort();
    want.sort();
    assert_eq!(tables, want, "the tables");
    let reference = Connection::open_in_memory()?;
    // A key of the records' own is typed by all its values (TEXT where one is a
    // string), and so is its children's `_parent`: given to the flat loads below.
    let key_type = match &model.key {
        Some(k) => conn
            .query_row(
                "SELECT type FROM pragma_table_info('t') WHERE name = ?1 COLLATE NOCASE",
                [k],
                |r| r.get::<_, String>(0),
            )
            .ok()
            .and_then(|ty| liteload::ColumnType::from_declared(&ty))
            .map(|ty| (k.clone(), ty)),
        None => None,
    };
    let top_children: HashSet<usize> = model.tables[0].children.values().copied().collect();
    for (i, t) in model
        .tables
        .iter()
        .enumerate()
        .filter(|(_, t)| t.name == "t" || !t.rows.is_empty())
    {
        let sql: String = conn.query_row(
            "SELECT sql FROM sqlite_schema WHERE name = ?1",
            [&t.name],
            |r| r.get(0),
        )?;
        reference.execute_batch(&sql)?;
        let got_cols = columns(&conn, &t.name)?;
        let declared: Vec<String> = conn
            .prepare("SELECT type FROM pragma_table_info(?1) ORDER BY cid")?
            .query_map([&t.name], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let want_cols: Vec<String> = t.columns.iter().map(|(_, c)| c.clone()).collect();
        assert_eq!(got_cols, want_cols, "the columns of {:?}", t.name);
        for row in &t.rows {
            let names: Vec<String> = row
                .iter()
                .map(|(c, _)| format!("\"{}\"", c.replace('"', "\"\"")))
                .collect();
            let marks = vec!["?"; row.len()].join(", ");
            let q = format!(
                "INSERT INTO \"{}\" ({}) VALUES ({marks})",
                t.name.replace('"', "\"\""),
                names.join(", ")
            );
            let values: Vec<Sql> = row
                .iter()
                .map(|(c, v)| {
                    let i = got_cols.iter().position(|g| g == c).unwrap();
                    sql_of(v, &declared[i])
                })
                .collect();
            reference.execute(&q, rusqlite::params_from_iter(values))?;
        }
        assert_eq!(
            rows(&conn, &t.name)?,
            rows(&reference, &t.name)?,
            "the rows of {:?}",
            t.name
        );
        // Typed as the JSON reader types the same rows: each table's rows, written as
        // NDJSON and loaded flat with the same sample and rules, give the same declared
        // types and the same values, type for type (the split types a table's columns
        // itself; a key's type comes from its values there too).
        let flat_input = dir.path().join(format!("{}.ndjson", tables.len()));
        let lines: String = t
            .rows
            .iter()
            .map(|row| {
                // (In the row's order, which names the columns as first met.)
                let members: Vec<String> = row
                    .iter()
                    .map(|(c, v)| format!("{}:{v}", Value::from(c.as_str())))
                    .collect();
                format!("{{{}}}\n", members.join(","))
            })
            .collect();
        std::fs::write(&flat_input, lines)?;
        let flat_db = dir.path().join(format!("flat-{}.db", tables.len()));
        let _ = std::fs::remove_file(&flat_db);
        let mut flat = ImportOptions::default();
        flat.read = opts.read.clone();
        flat.read.flatten = None;
        flat.detect_types = opts.detect_types;
        flat.table = Some(t.name.clone());
        if let Some((k, ty)) = &key_type {
            match i {
                0 => flat.types = vec![(k.clone(), *ty)],
                _ if top_children.contains(&i) => flat.types = vec![("_parent".into(), *ty)],
                _ => {}
            }
        }
        if !t.rows.is_empty() {
            import(
                &flat_db,
                &[Input::Path(flat_input)],
                &flat,
                &Progress::default(),
            )?;
            let flat_conn = Connection::open(&flat_db)?;
            sound(&flat_conn)?;
            let flat_declared: Vec<(String, String)> = flat_conn
                .prepare("SELECT name, type FROM pragma_table_info(?1) ORDER BY cid")?
                .query_map([&t.name], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let named: Vec<(String, String)> = got_cols
                .iter()
                .cloned()
                .zip(declared.iter().cloned())
                .collect();
            assert_eq!(named, flat_declared, "the types of {:?}", t.name);
            // (A table keyed by its records' integers holds them in the keys' order.)
            let sorted = |rows: Vec<Vec<Sql>>| {
                let mut rows: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
                rows.sort();
                rows
            };
            assert!(
                sorted(rows(&conn, &t.name)?) == sorted(rows(&flat_conn, &t.name)?),
                "the values of {:?} as a flat load types them",
                t.name
            );
        }
    }
    Ok(())
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a",
        "A",
        "b",
        "_id",
        "_ID",
        "_parent",
        "_position",
        "value",
        "Value",
        "ключ",
        "x y",
        "a_b",
        "",
        " ",
        "items",
        "sqlite_x",
        "_id_2",
    ])
    .prop_map(String::from)
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![0.5, -2.25, 1e300, 3.0, -1.5e-7]).prop_map(Value::from),
        prop::sample::select(vec![
            "".to_string(),
            "é\u{1F600}".to_string(),
            "a\u{0}b".to_string(),
            "12".to_string(),
            "007".to_string(),
            "x".repeat(3000),
            "[1]".to_string(),
            "q\"u\\o} {\n\t".to_string(),
        ])
        .prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A record's members as written, keys repeating (the last value wins, in the first
/// one's place); a wide record repeats among many keys.
fn record() -> impl Strategy<Value = Vec<(String, Value)>> {
    let wide = prop::collection::vec(
        (
            prop_oneof![key(), (0..24u8).prop_map(|i| format!("k{i}"))],
            leaf(),
        ),
        16..48,
    );
    prop_oneof![4 => prop::collection::vec((key(), value()), 0..5), 1 => wide]
}

/// `members` as JSON text, every repeat kept; `pretty`, over lines, indented.
fn written(members: &[(String, Value)], pretty: bool) -> String {
    let parts: Vec<String> = members
        .iter()
        .map(|(k, v)| match pretty {
            true => format!(
                "{}: {}",
                Value::from(k.as_str()),
                serde_json::to_string_pretty(v).unwrap()
            ),
            false => format!("{}:{}", Value::from(k.as_str()), v),
        })
        .collect();
    match pretty {
        true => format!("{{\n  {}\n}}", parts.join(",\n  ")),
        false => format!("{{{}}}", parts.join(",")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_table_is_what_sqlite_inserts_of_the_documented_split(
        records in prop::collection::vec(record(), 1..12),
        ndjson in any::<bool>(),
        objects_only in any::<bool>(),
        flatten in prop::option::of(prop::sample::select(vec!["_", "."])),
        sqlite in any::<bool>(),
        small_sample in any::<bool>(),
        keys in prop::option::of(any::<bool>()),
        named in any::<bool>(),
    ) {
        let mut records = records;
        // Keyed (a primary key option): each record gets a key member at some place,
        // in either case, all different, out of order; `true`: strings among them.
        if let Some(strings) = keys {
            let n = records.len();
            for (i, r) in records.iter_mut().enumerate() {
                let k = match (strings, i % 2) {
                    (true, 0) => Value::from(format!("k{i}é")),
                    _ => Value::from((n - i) as i64 * 1000 - 3000),
                };
                let name = if i % 3 == 0 { "ID" } else { "id" };
                r.insert(i % (r.len() + 1), (name.to_string(), k));
            }
        }
        let mut opts = ImportOptions::default();
        // Names given to some child tables: one of the records' arrays, one deeper, one
        // an array in an array, one that collides with a default name, by case.
        if named {
            opts.child_tables = [("items", "Lines"), ("a.b", "t_A"), ("value.value", "v"), ("x y", "T_ITEMS")]
                .iter()
                .map(|(p, n)| (p.to_string(), n.to_string()))
                .collect();
        }
        if keys.is_some() {
            opts.pk = vec!["id".to_string()];
        }
        opts.nested = if objects_only { Nested::ObjectTables } else { Nested::Tables };
        opts.read.flatten = flatten.map(String::from);
        opts.engine = if sqlite { Engine::Sqlite } else { Engine::Auto };
        // Columns first met after the sample are added as the rows arrive.
        if small_sample {
            opts.read.sample_rows = 2;
        }
        check(&records, ndjson, &opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

#[test]
fn a_record_with_a_nul_key_is_a_bad_record_at_its_place_and_nothing_of_it_is_loaded() -> R {
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("n.ndjson");
    std::fs::write(
        &input,
        "{\"a\":1,\"xs\":[{\"b\":1}]}\n{\"a\":2,\"xs\":[{\"b\":2},{\"c\\u0000\":3}]}\n{\"a\":3,\"xs\":[{\"b\":3}]}\n",
    )?;
    let db = dir.path().join("out.db");
    let mut opts = ImportOptions::default();
    opts.nested = Nested::Tables;
    let e = import(
        &db,
        &[Input::Path(input.clone())],
        &opts,
        &Progress::default(),
    )
    .expect_err("a NUL byte in a key");
    assert!(e.to_string().contains("n.ndjson:2:1: record 2"), "{e}");
    assert!(!db.exists());
    opts.max_errors = Some(1);
    let summary = import(&db, &[Input::Path(input)], &opts, &Progress::default())?;
    assert_eq!(summary.rejects, 1);
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    let parents: Vec<Vec<Sql>> = rows(&conn, "n")?;
    assert_eq!(
        parents,
        [
            [Sql::Integer(1), Sql::Integer(1)],
            [Sql::Integer(2), Sql::Integer(3)]
        ]
    );
    let children = rows(&conn, "n_xs")?;
    assert_eq!(
        children,
        [
            [1, 1, 0, 1].map(Sql::Integer).to_vec(),
            [2, 2, 0, 3].map(Sql::Integer).to_vec()
        ]
    );
    Ok(())
}

/// Without type detection every column of the input is TEXT, but the keys and places
/// the split gives are INTEGER: `_id` the rowid, `_parent` and `_position`; the same
/// through both engines (the page writer refused the table before, and SQLite's path
/// made `_id` a TEXT column that was no key).
#[test]
fn without_type_detection_the_splits_numbers_stay_integer_keys() -> R {
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("t.json");
    std::fs::write(
        &input,
        r#"[{"a": 1, "xs": [{"b": 2.5}, {"b": "x"}]}, {"a": "two", "xs": [{"b": 3}]}]"#,
    )?;
    for engine in [Engine::Auto, Engine::Sqlite] {
        let db = dir.path().join(format!("{engine:?}.db"));
        let mut opts = ImportOptions::default();
        opts.nested = Nested::Tables;
        opts.detect_types = false;
        opts.engine = engine;
        import(
            &db,
            &[Input::Path(input.clone())],
            &opts,
            &Progress::default(),
        )?;
        let conn = Connection::open(&db)?;
        sound(&conn)?;
        let declared = |table: &str| -> R<Vec<(String, String, i64)>> {
            let mut st = conn.prepare(&format!(
                "SELECT name, type, pk FROM pragma_table_info('{table}')"
            ))?;
            let got = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()?;
            Ok(got)
        };
        let s = |n: &str, t: &str, pk: i64| (n.to_string(), t.to_string(), pk);
        assert_eq!(
            declared("t")?,
            [s("_id", "INTEGER", 1), s("a", "TEXT", 0)],
            "{engine:?}"
        );
        assert_eq!(
            declared("t_xs")?,
            [
                s("_id", "INTEGER", 1),
                s("_parent", "INTEGER", 0),
                s("_position", "INTEGER", 0),
                s("b", "TEXT", 0)
            ],
            "{engine:?}"
        );
        assert_eq!(
            rows(&conn, "t_xs")?,
            [
                vec![
                    Sql::Integer(1),
                    Sql::Integer(1),
                    Sql::Integer(0),
                    Sql::Text("2.5".into())
                ],
                vec![
                    Sql::Integer(2),
                    Sql::Integer(1),
                    Sql::Integer(1),
                    Sql::Text("x".into())
                ],
                vec![
                    Sql::Integer(3),
                    Sql::Integer(2),
                    Sql::Integer(0),
                    Sql::Text("3".into())
                ],
            ],
            "{engine:?}"
        );
    }
    Ok(())
}

/// Records over many chunks, taken apart on several threads, come out in input order:
/// ids, parents, and names first met late (a key that collides with `_id`, a child
/// table) as the one-by-one reference has them.
#[test]
fn many_chunks_on_many_threads_keep_the_input_order() -> R {
    let records: Vec<Vec<(String, Value)>> = (0..40_000i64)
        .map(|i| {
            let mut r = vec![
                ("i".to_string(), Value::from(i)),
                (
                    "xs".to_string(),
                    Value::Array(
                        (0..i % 4)
                            .map(|j| serde_json::json!({"j": j, "s": "é".repeat((i % 7) as usize)}))
                            .collect(),
                    ),
                ),
            ];
            if i > 31_000 && i % 5 == 0 {
                r.push(("_ID".into(), Value::from(format!("late {i}"))));
                r.push(("ys".into(), serde_json::json!([[i, "y"], []])));
            }
            r
        })
        .collect();
    for (ndjson, threads) in [(true, 4), (false, 3)] {
        let mut opts = ImportOptions::default();
        opts.nested = Nested::Tables;
        opts.read.parse_threads = threads;
        check(&records, ndjson, &opts)?;
    }
    Ok(())
}

/// Into a connection the program holds: the tables are made inside the caller's
/// transaction, gone after its rollback, and there with their keys after its commit.
#[test]
fn into_a_callers_connection_related_tables_go_with_its_transaction() -> R {
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("o.ndjson");
    std::fs::write(
        &input,
        "{\"a\":1,\"xs\":[{\"b\":[1,2]}]}\n{\"a\":2,\"xs\":[]}\n{\"a\":3,\"xs\":[{\"b\":[]},{\"b\":[3]}]}\n",
    )?;
    let mut conn = Connection::open(dir.path().join("app.db"))?;
    let mut opts = ImportOptions::default();
    opts.nested = Nested::Tables;
    let inputs = [Input::Path(input)];
    let tx = conn.transaction()?;
    liteload::import_into_connection(&tx, &inputs, &opts, &Progress::default())?;
    tx.rollback()?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    assert_eq!(tables, 0);
    let tx = conn.transaction()?;
    let summary = liteload::import_into_connection(&tx, &inputs, &opts, &Progress::default())?;
    tx.commit()?;
    sound(&conn)?;
    assert_eq!(summary.rows, 3 + 3 + 3);
    assert_eq!(
        rows(&conn, "o_xs_b")?,
        [
            [1, 1, 0, 1].map(Sql::Integer).to_vec(),
            [2, 1, 1, 2].map(Sql::Integer).to_vec(),
            [3, 3, 0, 3].map(Sql::Integer).to_vec(),
        ]
    );
    let fk: i64 = conn.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
        r.get(0)
    })?;
    assert_eq!(fk, 0);
    Ok(())
}

/// The program's record batches (a list of structs, a struct holding a list, NULLs),
/// through the Rust door: flattened, with a child table named, or with lists of scalars
/// kept as JSON text; keyed by a column of the records.
#[cfg(feature = "arrow")]
#[test]
fn the_programs_record_batches_split_by_their_schema() -> R {
    use arrow_schema::{DataType, Field, Fields, Schema};
    use std::sync::Arc;
    let item = Fields::from(vec![
        Field::new("sku", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
    ]);
    let owner = Fields::from(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new_list("phones", Field::new_list_field(DataType::Utf8, true), true),
    ]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("owner", DataType::Struct(owner), true),
        Field::new_list(
            "items",
            Field::new_list_field(DataType::Struct(item), true),
            true,
        ),
    ]));
    let lines = r#"{"id": 1, "owner": {"name": "Zoë", "phones": ["1", "2"]}, "items": [{"sku": "a", "n": 2}, null]}
{"id": 2, "owner": null, "items": null}
{"id": 3, "owner": {"name": null, "phones": []}, "items": [{"sku": "b\u0000c"}]}
"#;
    let batches = || -> R<Input> {
        let reader = arrow_json::ReaderBuilder::new(schema.clone())
            .with_batch_size(2)
            .build(std::io::Cursor::new(lines))?;
        Ok(Input::record_batches("t", reader))
    };
    let dir = tempfile::tempdir()?;
    let table = |conn: &Connection, t: &str| rows(conn, t);
    let text = |s: &str| Sql::Text(s.into());
    // Flattened, the phones' table named.
    let db = dir.path().join("f.db");
    let mut opts = ImportOptions::default();
    opts.nested = Nested::Tables;
    opts.read.flatten = Some("_".into());
    opts.child_tables = vec![("owner.phones".into(), "phones".into())];
    import(&db, &[batches()?], &opts, &Progress::default())?;
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    assert_eq!(columns(&conn, "t")?, ["_id", "id", "owner_name"]);
    assert_eq!(
        table(&conn, "t")?,
        [
            vec![Sql::Integer(1), Sql::Integer(1), text("Zoë")],
            vec![Sql::Integer(2), Sql::Integer(2), Sql::Null],
            vec![Sql::Integer(3), Sql::Integer(3), Sql::Null],
        ]
    );
    assert_eq!(
        table(&conn, "phones")?,
        [
            vec![Sql::Integer(1), Sql::Integer(1), Sql::Integer(0), text("1")],
            vec![Sql::Integer(2), Sql::Integer(1), Sql::Integer(1), text("2")],
        ]
    );
    // A NULL element is a row of NULLs; a NULL list no row.
    assert_eq!(
        table(&conn, "t_items")?,
        [
            vec![
                Sql::Integer(1),
                Sql::Integer(1),
                Sql::Integer(0),
                text("a"),
                Sql::Integer(2)
            ],
            vec![
                Sql::Integer(2),
                Sql::Integer(1),
                Sql::Integer(1),
                Sql::Null,
                Sql::Null
            ],
            vec![
                Sql::Integer(3),
                Sql::Integer(3),
                Sql::Integer(0),
                text("b\0c"),
                Sql::Null
            ],
        ]
    );
    // Lists of scalars kept as JSON text: the struct is one JSON column, as flat.
    let db = dir.path().join("j.db");
    opts.nested = Nested::ObjectTables;
    opts.read.flatten = None;
    opts.child_tables = vec![];
    import(&db, &[batches()?], &opts, &Progress::default())?;
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    assert_eq!(columns(&conn, "t")?, ["_id", "id", "owner"]);
    let owner: String = conn.query_row("SELECT owner FROM t WHERE id = 1", [], |r| r.get(0))?;
    assert_eq!(owner, r#"{"name":"Zoë","phones":["1","2"]}"#);
    // Keyed by the records' own column (ASCII case ignored), over batches of two:
    // the key first, no `_id`, the children's `_parent` holding it.
    opts.pk = vec!["ID".into()];
    opts.nested = Nested::Tables;
    let db = dir.path().join("k.db");
    import(&db, &[batches()?], &opts, &Progress::default())?;
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    assert_eq!(columns(&conn, "t")?, ["ID", "owner"]);
    let ids: Vec<i64> = conn
        .prepare("SELECT ID FROM t ORDER BY rowid")?
        .query_map([], |r| r.get(0))?
        .collect::<std::result::Result<_, _>>()?;
    assert_eq!(ids, [1, 2, 3]);
    let parents: Vec<(i64, String)> = conn
        .prepare("SELECT _parent, typeof(_parent) FROM t_items ORDER BY _id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    assert_eq!(
        parents,
        [
            (1, "integer".into()),
            (1, "integer".into()),
            (3, "integer".into())
        ]
    );
    let fk: (String, String) = conn.query_row(
        "SELECT \"table\", \"to\" FROM pragma_foreign_key_list('t_items')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!(fk, ("t".into(), "ID".into()));
    drop(conn);
    // A key repeated (in a later batch) or missing, or a column that is no key: an
    // error, nothing written.
    let keyed = |ids: &str| -> R<Input> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new_list("xs", Field::new_list_field(DataType::Int64, true), true),
        ]));
        let reader = arrow_json::ReaderBuilder::new(schema)
            .with_batch_size(2)
            .build(std::io::Cursor::new(ids.to_string()))?;
        Ok(Input::record_batches("t", reader))
    };
    opts.pk = vec!["id".into()];
    opts.read.flatten = None;
    for (lines, said) in [
        (
            "{\"id\":1,\"xs\":[1]}\n{\"id\":2}\n{\"id\":1}\n",
            "record 3: the key 1 of column \"id\" is record 1's already",
        ),
        ("{\"id\":1}\n{\"xs\":[2]}\n", "record 2 has no key"),
    ] {
        let db = dir.path().join("bad.db");
        let e = import(&db, &[keyed(lines)?], &opts, &Progress::default()).unwrap_err();
        assert!(e.to_string().contains(said), "{e}");
        assert!(!db.exists());
    }
    opts.pk = vec!["xs".into()];
    let e = import(
        dir.path().join("bad.db"),
        &[keyed("{\"id\":1}\n")?],
        &opts,
        &Progress::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("no column of the records names"),
        "{e}"
    );
    opts.pk = vec!["owner".into()];
    opts.nested = Nested::ObjectTables;
    let e = import(
        dir.path().join("bad.db"),
        &[batches()?],
        &opts,
        &Progress::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("a key is an integer (64 bits) or a string"),
        "{e}"
    );
    // A string key: TEXT, in `_parent` too.
    let schema = Arc::new(Schema::new(vec![
        Field::new("code", DataType::Utf8, false),
        Field::new_list("xs", Field::new_list_field(DataType::Int64, true), true),
    ]));
    let reader = arrow_json::ReaderBuilder::new(schema).build(std::io::Cursor::new(
        "{\"code\":\"7\",\"xs\":[5,6]}\n{\"code\":\"ä-1\",\"xs\":[]}\n",
    ))?;
    opts.pk = vec!["code".into()];
    opts.nested = Nested::Tables;
    let db = dir.path().join("s.db");
    import(
        &db,
        &[Input::record_batches("t", reader)],
        &opts,
        &Progress::default(),
    )?;
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    assert_eq!(
        rows(&conn, "t_xs")?,
        [
            vec![Sql::Integer(1), text("7"), Sql::Integer(0), Sql::Integer(5)],
            vec![Sql::Integer(2), text("7"), Sql::Integer(1), Sql::Integer(6)],
        ]
    );
    let codes: Vec<(String, String)> = conn
        .prepare("SELECT code, typeof(code) FROM t ORDER BY rowid")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<std::result::Result<_, _>>()?;
    assert_eq!(
        codes,
        [("7".into(), "text".into()), ("ä-1".into(), "text".into())]
    );
    Ok(())
}

/// A record just within the record size limit loads: its spool's row, keys added, is
/// not held to the input's limit (it failed naming the temporary spool).
#[test]
fn a_record_at_the_size_limit_loads_whole() -> R {
    let dir = tempfile::tempdir()?;
    let limit = 1 << 20;
    let long = "x".repeat(limit - 12);
    let text = format!("{{\"a\": \"{long}\"}}\n{{\"a\": \"b\", \"n\": [1]}}\n");
    assert!(text.lines().next().unwrap().len() < limit);
    let src = dir.path().join("big.ndjson");
    std::fs::write(&src, text)?;
    let db = dir.path().join("big.db");
    let mut opts = ImportOptions::default();
    opts.nested = Nested::Tables;
    opts.read.max_record_bytes = limit;
    let s = import(&db, &[Input::Path(src)], &opts, &Progress::default())?;
    assert_eq!(s.rows, 3);
    let conn = Connection::open(&db)?;
    sound(&conn)?;
    let n: i64 = conn.query_row("SELECT length(a) FROM big WHERE _id = 1", [], |r| r.get(0))?;
    assert_eq!(n as usize, limit - 12);
    Ok(())
}

/// XML into related tables, many records (the spools read in chunks on every core):
/// the records' own columns hold what a flat load of the same document holds, typed
/// as CSV fields are, value for value and type for type.
#[test]
fn xml_records_columns_equal_a_flat_load_of_the_same_document() -> R {
    let dir = tempfile::tempdir()?;
    let mut doc = String::from("<?xml version=\"1.0\"?>\n<orders>\n");
    let texts = [
        "12",
        "-3",
        "1.5",
        "007",
        "abc",
        "",
        "é 😀",
        "1e3",
        "9223372036854775808",
    ];
    for i in 0..30_000usize {
        let t = |k: usize| texts[(i * 7 + k * 3) % texts.len()];
        doc.push_str(&format!(
            "<order id=\"{i}\" kind=\"{}\"><price>{}.25</price><code>{}</code><wide>{}</wide><item sku=\"s{i}\"/></order>\n",
            t(0),
            i % 100,
            t(1),
            if i < 20_000 { i.to_string() } else { t(2).to_string() },
        ));
    }
    doc.push_str("</orders>\n");
    let src = dir.path().join("orders.xml");
    std::fs::write(&src, doc)?;
    let (flat, nested) = (dir.path().join("f.db"), dir.path().join("n.db"));
    import(
        &flat,
        &[Input::Path(src.clone())],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    let mut opts = ImportOptions::default();
    opts.nested = Nested::Tables;
    import(&nested, &[Input::Path(src)], &opts, &Progress::default())?;
    let read = |db: &std::path::Path| -> R<(Vec<String>, Vec<Vec<Sql>>)> {
        let conn = Connection::open(db)?;
        sound(&conn)?;
        let types = conn
            .prepare("SELECT type FROM pragma_table_info('orders') WHERE name IN ('id', 'kind', 'price', 'code', 'wide') ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        let mut stmt =
            conn.prepare("SELECT code, id, kind, price, wide FROM orders ORDER BY rowid")?;
        let rows = stmt
            .query_map([], |r| (0..5).map(|i| r.get::<_, Sql>(i)).collect())?
            .collect::<Result<Vec<Vec<Sql>>, _>>()?;
        Ok((types, rows))
    };
    let (f, n) = (read(&flat)?, read(&nested)?);
    assert_eq!(f.0, n.0, "the types");
    assert_eq!(f.1.len(), 30_000);
    assert_eq!(f.1, n.1, "the values");
    let conn = Connection::open(&nested)?;
    let items: i64 = conn.query_row("SELECT count(*) FROM orders_item", [], |r| r.get(0))?;
    assert_eq!(items, 30_000);
    Ok(())
}
