//! `liteload import --nested tables`: an export's records at a path into parent and
//! child tables through the command, both writers, the notes, the exit codes, and no
//! spool left beside the target whether the load succeeds or fails. The mapping itself
//! is tested against a reference in `crates/core/tests/nested.rs`.

mod common;

use std::path::Path;

use assert_cmd::Command;
use common::checked_rows;
use predicates::prelude::*;
use rusqlite::types::Value;

fn liteload(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("liteload").expect("the binary");
    c.current_dir(dir);
    c
}

const EXPORT: &str = r#"{"Version": "5.5", "List": [
  {"id": 1, "customer": {"name": "Zoë"}, "items": [
     {"sku": "a", "qty": 2, "discounts": [{"code": "X", "pct": 5}, {"code": "Y", "pct": 1}]},
     {"sku": "b", "qty": 1, "discounts": []}],
   "tags": ["new", "gift"]},
  {"id": 2, "_id": "theirs", "items": [], "tags": null},
  {"id": 3, "items": [{"sku": "c", "qty": 7}], "tags": [["x", 1]]}
]}"#;

/// No spool folder is left in `dir`.
fn no_spool(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .expect("the folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.starts_with(".liteload-nested"))
        .collect();
    assert!(left.is_empty(), "spools left: {left:?}");
}

/// `liteload import o.db orders.json --nested tables ARGS` in `dir`.
fn load_nested(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    liteload(dir)
        .args(["import", "o.db", "orders.json", "--nested", "tables"])
        .args(args)
        .assert()
}

/// `sql`'s rows from `dir/o.db`, SQLite's check passed.
fn query(dir: &Path, sql: &str) -> Vec<Vec<Value>> {
    checked_rows(&dir.join("o.db"), sql).expect(sql)
}

fn ints(v: &[i64]) -> Vec<Value> {
    v.iter().map(|&i| Value::Integer(i)).collect()
}

#[test]
fn an_export_loads_into_parent_and_child_tables_by_either_writer() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("orders.json"), EXPORT).expect("write");
    for engine in ["auto", "sqlite"] {
        let db = dir.path().join(format!("{engine}.db"));
        liteload(dir.path())
            .args(["import", db.to_str().unwrap(), "orders.json", "--nested", "tables"])
            .args(["--engine", engine])
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "the records are the objects of the array at List",
            ))
            .stderr(predicate::str::contains(
                r#"table "orders": the member at "_id" is stored in column "_id_2": the name is taken"#,
            ));
        no_spool(dir.path());
        let orders = checked_rows(
            &db,
            "SELECT _id, id, customer, _id_2, tags FROM orders ORDER BY _id",
        )
        .expect("orders");
        assert_eq!(
            orders,
            [
                vec![
                    Value::Integer(1),
                    Value::Integer(1),
                    Value::Text(r#"{"name":"Zoë"}"#.into()),
                    Value::Null,
                    Value::Null
                ],
                vec![
                    Value::Integer(2),
                    Value::Integer(2),
                    Value::Null,
                    Value::Text("theirs".into()),
                    Value::Null
                ],
                vec![
                    Value::Integer(3),
                    Value::Integer(3),
                    Value::Null,
                    Value::Null,
                    Value::Null
                ],
            ]
        );
        let items = checked_rows(
            &db,
            "SELECT _id, _parent, _position, sku, qty FROM orders_items ORDER BY _id",
        )
        .expect("items");
        let text = |s: &str| Value::Text(s.into());
        assert_eq!(
            items,
            [
                [ints(&[1, 1, 0]), vec![text("a"), Value::Integer(2)]].concat(),
                [ints(&[2, 1, 1]), vec![text("b"), Value::Integer(1)]].concat(),
                [ints(&[3, 3, 0]), vec![text("c"), Value::Integer(7)]].concat(),
            ]
        );
        let discounts = checked_rows(
            &db,
            "SELECT _parent, _position, code, pct FROM orders_items_discounts ORDER BY _id",
        )
        .expect("discounts");
        assert_eq!(
            discounts,
            [
                [ints(&[1, 0]), vec![text("X"), Value::Integer(5)]].concat(),
                [ints(&[1, 1]), vec![text("Y"), Value::Integer(1)]].concat(),
            ]
        );
        let tags = checked_rows(
            &db,
            "SELECT _parent, _position, value FROM orders_tags ORDER BY _id",
        )
        .expect("tags");
        assert_eq!(
            tags,
            [
                [ints(&[1, 0]), vec![text("new")]].concat(),
                [ints(&[1, 1]), vec![text("gift")]].concat(),
                [ints(&[3, 0]), vec![Value::Null]].concat(),
            ]
        );
        let inner = checked_rows(
            &db,
            "SELECT _parent, _position, value FROM orders_tags_value ORDER BY _id",
        )
        .expect("arrays in arrays");
        assert_eq!(
            inner,
            [
                [ints(&[3, 0]), vec![text("x")]].concat(),
                [ints(&[3, 1]), vec![text("1")]].concat(),
            ]
        );
        let fk = checked_rows(&db, "SELECT count(*) FROM pragma_foreign_key_check").expect("fk");
        assert_eq!(fk, [[Value::Integer(0)]]);
        let indexes = checked_rows(
            &db,
            "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND sql LIKE '%(\"_parent\")'",
        )
        .expect("indexes");
        assert_eq!(indexes, [[Value::Integer(4)]], "an index on each _parent");
    }
}

#[test]
fn scalar_arrays_stay_json_text_when_asked() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("orders.json"), EXPORT).expect("write");
    load_nested(dir.path(), &["--scalar-arrays", "json"]).success();
    let tags = query(dir.path(), "SELECT tags FROM orders ORDER BY _id");
    assert_eq!(
        tags,
        [
            vec![Value::Text(r#"["new","gift"]"#.into())],
            vec![Value::Null],
            vec![Value::Null],
        ]
    );
    let tables = query(
        dir.path(),
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    );
    let names: Vec<Value> = [
        "orders",
        "orders_items",
        "orders_items_discounts",
        "orders_tags",
    ]
    .iter()
    .map(|n| Value::Text(n.to_string()))
    .collect();
    assert_eq!(
        tables,
        names.into_iter().map(|n| vec![n]).collect::<Vec<_>>()
    );
}

#[test]
fn refusals_write_nothing_and_leave_no_spool() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("orders.json"), EXPORT).expect("write");
    // Without --nested tables: a usage error.
    liteload(dir.path())
        .args(["import", "o.db", "orders.json", "--scalar-arrays", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--scalar-arrays applies with --nested tables",
        ));
    // A key of two columns, a type for the key, a conflict rule, the direct engine
    // with a key: usage.
    for (args, said) in [
        (&["--pk", "id,sku"][..], "by one key column, not 2"),
        (
            &["--pk", "id", "--type", "id=text"][..],
            "takes its type from its values",
        ),
        (
            &["--on-conflict", "ignore"][..],
            "no rule for rows whose key",
        ),
        (
            &["--pk", "id", "--engine", "direct"][..],
            "cannot order rows by a primary key",
        ),
    ] {
        load_nested(dir.path(), args)
            .code(2)
            .stderr(predicate::str::contains(said));
    }
    assert!(!dir.path().join("o.db").exists());
    // A syntax error in the document after the records: bad input at its place.
    std::fs::write(dir.path().join("broken.json"), &EXPORT[..EXPORT.len() - 1]).expect("write");
    liteload(dir.path())
        .args(["import", "o.db", "broken.json", "--nested", "tables"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("broken.json:8:2: expected"));
    assert!(!dir.path().join("o.db").exists());
    no_spool(dir.path());
    // A table of the load that exists: refused, the file as it was.
    load_nested(dir.path(), &[]).success();
    let before = std::fs::read(dir.path().join("o.db")).expect("read");
    load_nested(dir.path(), &[])
        .failure()
        .stderr(predicate::str::contains(r#"table "orders" exists already"#));
    assert_eq!(
        std::fs::read(dir.path().join("o.db")).expect("read"),
        before
    );
    no_spool(dir.path());
    // Replaced, the rows are the input's once.
    load_nested(dir.path(), &["--if-exists", "replace"]).success();
    let n = query(dir.path(), "SELECT count(*) FROM orders_items");
    assert_eq!(n, [[Value::Integer(3)]]);
}

#[test]
fn records_keyed_by_their_own_member_are_referenced_by_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Keys out of order, one spelled in capitals, one a string (the key is then TEXT);
    // a record without a key, one repeating a key and one keyed by a real are bad.
    let lines = [
        r#"{"items": [{"sku": "a", "tags": ["x"]}, {"sku": "b"}], "id": 30}"#,
        r#"{"ID": 7, "items": [{"sku": "c"}]}"#,
        r#"{"id": "k-9", "items": [{"sku": "d"}]}"#,
        r#"{"items": [{"sku": "lost"}]}"#,
        r#"{"id": 30, "items": [{"sku": "lost too"}]}"#,
        r#"{"id": 2.5, "items": []}"#,
    ];
    std::fs::write(dir.path().join("orders.json"), lines.join("\n")).expect("write");
    liteload(dir.path())
        .args(["import", "o.db", "orders.json", "--format", "ndjson"])
        .args(["--nested", "tables", "--pk", "id", "--max-errors", "3"])
        .args(["--rejects", "bad.ndjson"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "orders.json:5:1: record 5: the key 30 of column \"id\" is record 1's already",
        ))
        .stderr(predicate::str::contains(
            "record 4: no member names the key column \"id\"",
        ))
        .stderr(predicate::str::contains("holds the number 2.5"));
    let bad = std::fs::read_to_string(dir.path().join("bad.ndjson")).expect("rejects");
    assert_eq!(bad.lines().count(), 3);
    assert!(bad.contains("lost too"), "{bad}");
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        query(
            dir.path(),
            "SELECT id, typeof(id) FROM orders ORDER BY rowid"
        ),
        [
            vec![text("30"), text("text")],
            vec![text("7"), text("text")],
            vec![text("k-9"), text("text")]
        ]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _id, _parent, _position, sku FROM orders_items ORDER BY _id"
        ),
        [
            vec![Value::Integer(1), text("30"), Value::Integer(0), text("a")],
            vec![Value::Integer(2), text("30"), Value::Integer(1), text("b")],
            vec![Value::Integer(3), text("7"), Value::Integer(0), text("c")],
            vec![Value::Integer(4), text("k-9"), Value::Integer(0), text("d")],
        ]
    );
    // A grandchild references its parent's _id.
    assert_eq!(
        query(dir.path(), "SELECT _parent, value FROM orders_items_tags"),
        [vec![Value::Integer(1), text("x")]]
    );
    let fks = query(
        dir.path(),
        "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('orders_items') \
         UNION ALL SELECT 'check', count(*), NULL FROM pragma_foreign_key_check",
    );
    assert_eq!(
        fks,
        [
            vec![text("orders"), text("_parent"), text("id")],
            vec![text("check"), Value::Integer(0), Value::Null]
        ]
    );
    no_spool(dir.path());
    // Integer keys only: an INTEGER PRIMARY KEY (the rowid).
    std::fs::write(dir.path().join("orders.json"), lines[..2].join("\n")).expect("write");
    liteload(dir.path())
        .args(["import", "o.db", "orders.json", "--format", "ndjson"])
        .args(["--nested", "tables", "--pk", "id", "--if-exists", "replace"])
        .assert()
        .success();
    assert_eq!(
        query(dir.path(), "SELECT rowid, id FROM orders ORDER BY rowid"),
        [ints(&[7, 7]), ints(&[30, 30])]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _parent, typeof(_parent) FROM orders_items ORDER BY _id"
        ),
        [
            vec![Value::Integer(30), text("integer")],
            vec![Value::Integer(30), text("integer")],
            vec![Value::Integer(7), text("integer")]
        ]
    );
}

#[test]
fn xml_records_keyed_by_an_attribute_are_referenced_by_it() {
    let dir = tempfile::tempdir().expect("a temp dir");
    // Keys written plainly are integers; a second 7 and a record without a key are
    // bad, nothing of them loaded. A child `<id>` beside the attribute is `id_2`.
    let doc = r#"<orders>
  <order id="7"><item sku="a"><discount pct="5"/></item><item sku="b"/></order>
  <order id="12"><item sku="c"/></order>
  <order id="7"><item sku="lost"/></order>
  <order><item sku="lost too"/></order>
  <order id="3"><id>4</id></order>
  <order ID="-2"><item sku="d"/></order>
</orders>
"#;
    std::fs::write(dir.path().join("orders.xml"), doc).expect("write");
    liteload(dir.path())
        .args([
            "import",
            "o.db",
            "orders.xml",
            "--nested",
            "tables",
            "--pk",
            "id",
        ])
        .args(["--max-errors", "3"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the key 7 of column \"id\" is record 1's already",
        ))
        .stderr(predicate::str::contains("no member names the key column"));
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        query(
            dir.path(),
            "SELECT id, typeof(id), id_2 FROM orders ORDER BY rowid"
        ),
        [
            vec![Value::Integer(-2), text("integer"), Value::Null],
            vec![Value::Integer(3), text("integer"), Value::Integer(4)],
            vec![Value::Integer(7), text("integer"), Value::Null],
            vec![Value::Integer(12), text("integer"), Value::Null]
        ]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _parent, typeof(_parent), _position, sku FROM orders_item ORDER BY _id"
        ),
        [
            vec![
                Value::Integer(7),
                text("integer"),
                Value::Integer(0),
                text("a")
            ],
            vec![
                Value::Integer(7),
                text("integer"),
                Value::Integer(1),
                text("b")
            ],
            vec![
                Value::Integer(12),
                text("integer"),
                Value::Integer(0),
                text("c")
            ],
            vec![
                Value::Integer(-2),
                text("integer"),
                Value::Integer(0),
                text("d")
            ],
        ]
    );
    // A grandchild references its parent's _id; the keys are declared and hold.
    assert_eq!(
        query(dir.path(), "SELECT _parent, pct FROM orders_item_discount"),
        [vec![Value::Integer(1), Value::Integer(5)]]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT \"table\", \"to\" FROM pragma_foreign_key_list('orders_item') \
             UNION ALL SELECT 'check', count(*) FROM pragma_foreign_key_check \
             UNION ALL SELECT 'pk', pk FROM pragma_table_info('orders') WHERE name = 'id'",
        ),
        [
            vec![text("orders"), text("id")],
            vec![text("check"), Value::Integer(0)],
            vec![text("pk"), Value::Integer(1)]
        ]
    );
    no_spool(dir.path());
    // A key that is not an integer written plainly (`007`, `A-1`) makes the key TEXT,
    // every key as written, in `_parent` too.
    std::fs::write(
        dir.path().join("orders.xml"),
        "<orders><order id=\"007\"><item sku=\"a\"/></order><order id=\"8\"><item sku=\"b\"/></order>\
         <order id=\"A-1\"/></orders>",
    )
    .expect("write");
    liteload(dir.path())
        .args([
            "import",
            "t.db",
            "orders.xml",
            "--nested",
            "tables",
            "--pk",
            "id",
        ])
        .assert()
        .success();
    // Read through the checked open: `integrity_check` and `foreign_key_check` first.
    let rows = |sql: &str| checked_rows(&dir.path().join("t.db"), sql).expect(sql);
    let t = |a: &str, b: &str| vec![Value::Text(a.into()), Value::Text(b.into())];
    assert_eq!(
        rows("SELECT id, typeof(id) FROM orders ORDER BY rowid"),
        [t("007", "text"), t("8", "text"), t("A-1", "text")]
    );
    assert_eq!(
        rows("SELECT _parent, typeof(_parent) FROM orders_item ORDER BY _id"),
        [t("007", "text"), t("8", "text")]
    );
    no_spool(dir.path());
}

#[test]
fn child_tables_are_named_by_their_paths_when_asked() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("orders.json"), EXPORT).expect("write");
    load_nested(
        dir.path(),
        &[
            "--child-table",
            "items=lines",
            "--child-table",
            "items.discounts=discounts",
            "--child-table",
            "itms=typo",
        ],
    )
    .success()
    .stderr(predicate::str::contains(
        r#""typo", the name given to the child table at "itms", is unused"#,
    ));
    let tables = query(
        dir.path(),
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    );
    let names: Vec<Vec<Value>> = [
        "discounts",
        "lines",
        "orders",
        "orders_tags",
        "orders_tags_value",
    ]
    .iter()
    .map(|n| vec![Value::Text(n.to_string())])
    .collect();
    assert_eq!(tables, names);
    // The grandchild references the renamed child.
    assert_eq!(
        query(
            dir.path(),
            "SELECT \"table\" FROM pragma_foreign_key_list('discounts')"
        ),
        [[Value::Text("lines".into())]]
    );
    assert_eq!(
        query(dir.path(), "SELECT count(*) FROM discounts"),
        [ints(&[2])]
    );
    // Without related tables, or twice for one path, or without a name: usage.
    for (args, said) in [
        (
            &["import", "x.db", "orders.json", "--child-table", "items=l"][..],
            "applies to related tables",
        ),
        (
            &["import", "x.db", "orders.json", "--nested", "tables"]
                .iter()
                .chain(&["--child-table", "items=a", "--child-table", "items=b"])
                .copied()
                .collect::<Vec<_>>()[..],
            "two names are given",
        ),
        (
            &[
                "import",
                "x.db",
                "orders.json",
                "--nested",
                "tables",
                "--child-table",
                "items",
            ][..],
            "expected PATH=NAME",
        ),
    ] {
        liteload(dir.path())
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(said));
    }
    assert!(!dir.path().join("x.db").exists());
    no_spool(dir.path());
}

#[test]
fn xml_records_split_into_related_tables_and_refusals_leave_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let doc = r#"<?xml version="1.0"?>
<!DOCTYPE orders [<!ENTITY co "Acme &amp; Co">]>
<orders>
  <order id="1"><total>12.50</total><customer><name>Zoë &co;</name></customer>
    <item sku="a" qty="2"><discount pct="5"/><discount pct="1"/></item>
    <item sku="b" qty="1">gift</item><tag>new</tag><tag>gift</tag></order>
  <order id="2"><total>3</total><item sku="c" qty="7"/></order>
</orders>
"#;
    std::fs::write(dir.path().join("orders.xml"), doc).expect("write");
    liteload(dir.path())
        .args(["import", "o.db", "orders.xml", "--nested", "tables"])
        .assert()
        .success();
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        query(dir.path(), "SELECT _id, id, total FROM orders ORDER BY _id"),
        [
            vec![Value::Integer(1), Value::Integer(1), Value::Real(12.5)],
            vec![Value::Integer(2), Value::Integer(2), Value::Real(3.0)]
        ]
    );
    // An element with children of its own is a table's row, even once.
    assert_eq!(
        query(dir.path(), "SELECT _parent, name FROM orders_customer"),
        [vec![Value::Integer(1), text("Zoë Acme & Co")]]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _id, _parent, _position, sku, qty, text FROM orders_item ORDER BY _id"
        ),
        [
            vec![
                Value::Integer(1),
                Value::Integer(1),
                Value::Integer(0),
                text("a"),
                Value::Integer(2),
                Value::Null
            ],
            vec![
                Value::Integer(2),
                Value::Integer(1),
                Value::Integer(1),
                text("b"),
                Value::Integer(1),
                text("gift")
            ],
            vec![
                Value::Integer(3),
                Value::Integer(2),
                Value::Integer(0),
                text("c"),
                Value::Integer(7),
                Value::Null
            ],
        ]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _parent, pct FROM orders_item_discount ORDER BY _id"
        ),
        [ints(&[1, 5]), ints(&[1, 1])]
    );
    assert_eq!(
        query(
            dir.path(),
            "SELECT _parent, value FROM orders_tag ORDER BY _id"
        ),
        [
            vec![Value::Integer(1), text("new")],
            vec![Value::Integer(1), text("gift")]
        ]
    );
    no_spool(dir.path());
    // Flattening: usage. A record that is not well-formed: bad input at its place,
    // nothing written.
    liteload(dir.path())
        .args([
            "import",
            "x.db",
            "orders.xml",
            "--nested",
            "tables",
            "--flatten",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing to flatten"));
    std::fs::write(
        dir.path().join("bad.xml"),
        "<orders>\n<order id=\"1\"><item/></order>\n<order id=\"2\"><item></order>\n</orders>\n",
    )
    .expect("write");
    liteload(dir.path())
        .args(["import", "x.db", "bad.xml", "--nested", "tables"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("bad.xml:3:"));
    assert!(!dir.path().join("x.db").exists());
    no_spool(dir.path());
}

/// A document with more arrays at distinct paths (more child tables) than the process
/// may open files loads whole: no spool is held open between its writes and reads.
#[test]
fn more_child_tables_than_open_files_allowed_load_by_either_writer() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let n = 300;
    let records: Vec<String> = (0..n)
        .map(|i| {
            format!(r#"{{"id": {i}, "a{i}": [{{"x": {i}, "s": "é{i}"}}], "all": [{i}, {i}]}}"#)
        })
        .collect();
    std::fs::write(
        dir.path().join("orders.json"),
        format!("[{}]", records.join(",\n")),
    )
    .expect("write");
    let bin = assert_cmd::cargo::cargo_bin("liteload");
    for engine in ["auto", "sqlite"] {
        let db = format!("{engine}.db");
        // (A limit of 64 files: the split makes 302 tables.)
        std::process::Command::new("sh")
            .current_dir(dir.path())
            .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
            .arg(&bin)
            .args(["import", &db, "orders.json", "--nested", "tables", "-q"])
            .args(["--engine", engine])
            .status()
            .map(|s| assert!(s.success(), "{engine}: {s}"))
            .expect("sh");
        no_spool(dir.path());
        let db = dir.path().join(db);
        let tables = checked_rows(
            &db,
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
        )
        .expect("tables");
        assert_eq!(tables, [ints(&[n + 2])], "{engine}");
        for i in [0, 150, n - 1] {
            let rows = checked_rows(
                &db,
                &format!("SELECT _parent, _position, x, s FROM \"orders_a{i}\""),
            )
            .expect("a child table");
            assert_eq!(
                rows,
                [vec![
                    Value::Integer(i + 1),
                    Value::Integer(0),
                    Value::Integer(i),
                    Value::Text(format!("é{i}")),
                ]],
                "{engine}"
            );
        }
        let all = checked_rows(&db, "SELECT count(*), sum(value) FROM orders_all").expect("all");
        assert_eq!(all, [ints(&[2 * n, n * (n - 1)])], "{engine}");
        let fk = checked_rows(&db, "PRAGMA foreign_key_check").expect("fk");
        assert!(fk.is_empty(), "{engine}: {fk:?}");
    }
}
