//! SQLite files as a source (`liteload::sqlite_files`): random schemas and values copied
//! and merged into new and existing files, every table and the schema equal to a
//! reference made by SQLite's own `ATTACH` + `INSERT … SELECT` of the same inputs under
//! the documented rules; and each rule and refusal on its own.

use std::path::{Path, PathBuf};

use liteload::rusqlite::{self, types::Value, Connection};
use liteload::sqlite_files::{import_sqlite, sqlite_inputs, SqliteOptions};
use liteload::{ImportOptions, Input, OnConflict, Progress};
use proptest::prelude::*;

type R<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

mod support;

use support::Rng;

fn q(name: &str) -> String {
    liteload::quote_ident(name)
}

/// A table's design: its columns (name, declared type), its key, and its options.
#[derive(Clone, Debug)]
struct Design {
    name: String,
    columns: Vec<(String, String)>,
    key: Key,
    strict: bool,
    generated: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    Rowid,
    IntegerPk,
    WithoutRowid,
}

impl Design {
    fn random(rng: &mut Rng, name: &str) -> Design {
        let names = [
            "a", "B", "c d", "é😀", "q\"x", "rowid", "oid", "sel ect", "[z]", "Ab",
        ];
        let key = *rng.pick(&[Key::Rowid, Key::Rowid, Key::IntegerPk, Key::WithoutRowid]);
        let strict = rng.chance(30);
        let types: &[&str] = if strict {
            &["INTEGER", "TEXT", "REAL", "BLOB", "ANY"]
        } else {
            &[
                "INTEGER",
                "TEXT",
                "REAL",
                "BLOB",
                "NUMERIC",
                "",
                "VARCHAR(3)",
            ]
        };
        let mut columns: Vec<(String, String)> = vec![];
        for _ in 0..1 + rng.below(5) {
            let n = rng.pick(&names).to_string();
            if columns.iter().any(|(c, _)| c.eq_ignore_ascii_case(&n)) {
                continue;
            }
            columns.push((n, rng.pick(types).to_string()));
        }
        Design {
            name: name.to_string(),
            columns,
            key,
            strict,
            generated: !strict && rng.chance(30),
        }
    }

    /// The CREATE TABLE, its columns in `order`.
    fn create(&self, order: &[usize], rng: &mut Rng) -> String {
        let mut parts = vec![];
        match self.key {
            Key::Rowid => {}
            Key::IntegerPk => parts.push("\"k\" INTEGER PRIMARY KEY".to_string()),
            Key::WithoutRowid => parts.push("\"k\" TEXT PRIMARY KEY".to_string()),
        }
        for &i in order {
            let (n, t) = &self.columns[i];
            let mut c = format!("{} {t}", q(n));
            if t == "TEXT" && rng.chance(40) {
                c.push_str(" COLLATE NOCASE");
            }
            if rng.chance(20) {
                c.push_str(" DEFAULT 7");
            }
            parts.push(c);
        }
        if self.generated {
            let first = q(&self.columns[0].0);
            let how = if rng.chance(50) { "VIRTUAL" } else { "STORED" };
            parts.push(format!("\"gen\" AS (typeof({first})) {how}"));
        }
        let mut opts = vec![];
        if self.key == Key::WithoutRowid {
            opts.push("WITHOUT ROWID");
        }
        if self.strict {
            opts.push("STRICT");
        }
        format!(
            "CREATE TABLE {}({}) {}",
            q(&self.name),
            parts.join(", "),
            opts.join(", ")
        )
    }

    fn value(&self, rng: &mut Rng, ty: &str) -> Value {
        let huge = "ß".repeat(30_000);
        let texts = [
            "",
            "a\0b",
            "é😀",
            "x y",
            "007",
            "1.5",
            huge.as_str(),
            "NULL",
        ];
        let any = match ty {
            "INTEGER" if self.strict => 0,
            "REAL" if self.strict => 1,
            "TEXT" if self.strict => 2,
            "BLOB" if self.strict => 3,
            _ => rng.below(5),
        };
        if rng.chance(15) {
            return Value::Null;
        }
        match any {
            0 => Value::Integer(*rng.pick(&[0, -1, i64::MAX, i64::MIN, 42, 7])),
            1 => Value::Real(*rng.pick(&[0.5, -0.0, 1e308, -2.25, 3.0])),
            2 => Value::Text(rng.pick(&texts).to_string()),
            3 => Value::Blob(
                rng.pick(&[vec![], vec![0u8, 255, 0], b"\xff\xfe".to_vec()])
                    .clone(),
            ),
            _ => Value::Null,
        }
    }
}

/// A design's name, its `CREATE TABLE` and its `CREATE INDEX` statements.
type Declared = (String, String, Vec<String>);

/// Writes an input: some of `designs` (columns in a random order), rows with random
/// values, some deleted (rowid gaps), indexes, and a view and a trigger.
///
/// `same`: every input declares each design alike (one `CREATE TABLE` text and one set
/// of indexes per design, in `same`'s order), in a rollback-journal mode, integer keys
/// in a range of input `nth`'s own: the inputs the page writer copies as stored.
fn write_input(
    path: &Path,
    designs: &[Design],
    rng: &mut Rng,
    same: Option<(&[Declared], usize)>,
) -> R {
    let c = Connection::open(path)?;
    if same.is_none() && rng.chance(50) {
        c.pragma_update(None, "journal_mode", "wal")?;
    }
    for d in designs {
        if !rng.chance(70) {
            continue;
        }
        let declared = same.and_then(|(s, _)| s.iter().find(|x| x.0 == d.name));
        match declared {
            Some((_, create, _)) => c.execute_batch(create)?,
            None => {
                let mut order: Vec<usize> = (0..d.columns.len()).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i + 1));
                }
                c.execute_batch(&d.create(&order, rng))?;
            }
        }
        let base = same.map_or(0, |(_, nth)| 100 * nth as i64);
        let mut names: Vec<String> = d.columns.iter().map(|(n, _)| q(n)).collect();
        if d.key != Key::Rowid {
            names.insert(0, "\"k\"".into());
        }
        let marks = vec!["?"; names.len()].join(", ");
        let sql = format!(
            "INSERT OR IGNORE INTO {} ({}) VALUES ({marks})",
            q(&d.name),
            names.join(", ")
        );
        let mut st = c.prepare(&sql)?;
        for _ in 0..rng.below(40) {
            let mut values: Vec<Value> = d.columns.iter().map(|(_, t)| d.value(rng, t)).collect();
            match d.key {
                Key::Rowid => {}
                Key::IntegerPk => values.insert(0, Value::Integer(base + rng.below(60) as i64)),
                Key::WithoutRowid => values.insert(0, Value::Text(format!("k{}", rng.below(60)))),
            }
            st.execute(rusqlite::params_from_iter(values))?;
        }
        if rng.chance(50) {
            c.execute(
                &format!("DELETE FROM {} WHERE rowid % 3 = 0", q(&d.name)),
                [],
            )
            .or_else(|_| {
                c.execute(
                    &format!("DELETE FROM {} WHERE random() % 3 = 0", q(&d.name)),
                    [],
                )
            })?;
        }
        if let Some((_, _, indexes)) = declared {
            for sql in indexes {
                let _ = c.execute_batch(sql);
            }
            continue;
        }
        for sql in random_indexes(d, rng) {
            let _ = c.execute_batch(&sql);
        }
    }
    if rng.chance(30) {
        c.execute_batch("CREATE VIEW \"v\" AS SELECT 1")?;
    }
    Ok(())
}

/// Some indexes on `d`'s columns: plain, on an expression, with a collation, descending,
/// partial; names that collide across tables and inputs.
fn random_indexes(d: &Design, rng: &mut Rng) -> Vec<String> {
    let mut out = vec![];
    for (j, (n, _)) in d.columns.iter().enumerate() {
        if rng.chance(40) {
            let how = match rng.below(4) {
                0 => format!("{} COLLATE NOCASE", q(n)),
                1 => format!("length({})", q(n)),
                2 => format!("{} DESC", q(n)),
                _ => q(n),
            };
            let partial = if rng.chance(30) {
                format!(" WHERE {} IS NOT NULL", q(n))
            } else {
                String::new()
            };
            let name = format!("idx {}", j % 2);
            out.push(format!(
                "CREATE INDEX {} ON {} ({how}){partial}",
                q(&format!("{name} {}", rng.below(2))),
                q(&d.name)
            ));
        }
    }
    out
}

/// The reference: the same inputs copied by SQLite alone (`ATTACH` + `INSERT … SELECT`),
/// by the documented rules, into `out` (which may hold tables already).
fn reference(out: &Path, inputs: &[PathBuf], rule: OnConflict) -> R {
    let c = Connection::open(out)?;
    let or = match rule {
        OnConflict::Ignore => "OR IGNORE",
        OnConflict::Replace => "OR REPLACE",
        _ => "",
    };
    let there: Vec<String> = c
        .prepare("SELECT lower(name) FROM sqlite_schema WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // How many inputs hold each table.
    let mut holders = std::collections::HashMap::<String, usize>::new();
    for p in inputs {
        let s = Connection::open(p)?;
        let names: Vec<String> = s
            .prepare("SELECT lower(name) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%'")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for n in names {
            *holders.entry(n).or_default() += 1;
        }
    }
    let mut made: Vec<(String, usize)> = vec![];
    for (i, p) in inputs.iter().enumerate() {
        c.execute("ATTACH ?1 AS src", [p.to_str().ok_or("path")?])?;
        let tables: Vec<(String, String)> = c
            .prepare("SELECT name, sql FROM src.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY rowid")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (t, sql) in tables {
            let lower = t.to_ascii_lowercase();
            let exists = there.contains(&lower) || made.iter().any(|(m, _)| *m == lower);
            if !exists {
                c.execute_batch(&sql)?;
                made.push((lower.clone(), i));
            }
            let cols: Vec<String> = c
                .prepare("SELECT name FROM pragma_table_xinfo(?1, 'src') WHERE hidden = 0")?
                .query_map([&t], |r| r.get::<_, String>(0))?
                .map(|n| n.map(|n| q(&n)))
                .collect::<rusqlite::Result<_>>()?;
            let implicit = c
                .prepare(&format!("SELECT rowid FROM src.{} LIMIT 1", q(&t)))
                .is_ok()
                && !cols.iter().any(|n| n == "\"k\"");
            let rowid = ["rowid", "oid", "_rowid_"].into_iter().find(|r| {
                !cols
                    .iter()
                    .any(|n| n.trim_matches('"').eq_ignore_ascii_case(r))
            });
            let keep = implicit && !exists && holders[&lower] == 1;
            let (list, order) = match (keep, implicit, rowid) {
                (true, _, Some(r)) => (
                    format!("{r}, {}", cols.join(", ")),
                    format!(" ORDER BY {r}"),
                ),
                (_, true, Some(r)) => (cols.join(", "), format!(" ORDER BY {r}")),
                _ => (cols.join(", "), String::new()),
            };
            c.execute_batch(&format!(
                "INSERT {or} INTO main.{t2} ({list}) SELECT {list} FROM src.{t2}{order}",
                t2 = q(&t)
            ))?;
        }
        c.execute_batch("DETACH src")?;
    }
    // The made tables' indexes, from the input that made each, named apart.
    for (t, i) in made {
        c.execute("ATTACH ?1 AS src", [inputs[i].to_str().ok_or("path")?])?;
        let idx: Vec<(String, String)> = c
            .prepare("SELECT name, sql FROM src.sqlite_schema WHERE type = 'index' AND lower(tbl_name) = ?1 AND sql IS NOT NULL ORDER BY rowid")?
            .query_map([&t], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        c.execute_batch("DETACH src")?;
        for (name, sql) in idx {
            let taken = |n: &str| -> rusqlite::Result<bool> {
                c.query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE lower(name) = lower(?1)",
                    [n],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n > 0)
            };
            let mut free = name.clone();
            let mut n = 2;
            while taken(&free)? {
                free = format!("{name}_{n}");
                n += 1;
            }
            let sql = match free == name {
                true => sql,
                false => {
                    // The name is the text after the keywords, up to " ON"/" on".
                    let head = if sql.starts_with("CREATE UNIQUE") {
                        "CREATE UNIQUE INDEX "
                    } else {
                        "CREATE INDEX "
                    };
                    let rest = &sql[head.len()..];
                    let on = rest
                        .find(" ON ")
                        .or_else(|| rest.find(" on "))
                        .ok_or("on")?;
                    format!("{head}{} {}", q(&free), rest[on..].trim_start())
                }
            };
            c.execute_batch(&sql)?;
        }
    }
    Ok(())
}

/// Every table's rows (rowid first where the table has one) and every schema entry.
fn contents(db: &Path) -> R<Vec<(String, Vec<Vec<Value>>)>> {
    let c = Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok", "{}", db.display());
    let mut out = vec![];
    let schema: Vec<Vec<Value>> = c
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_autoindex%' ORDER BY type, name")?
        .query_map([], |r| (0..4).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<rusqlite::Result<_>>()?;
    out.push(("schema".to_string(), schema.clone()));
    for row in schema {
        let (Value::Text(ty), Value::Text(name)) = (&row[0], &row[1]) else {
            continue;
        };
        if ty != "table" || name.starts_with("sqlite_") {
            continue;
        }
        let rowid = ["rowid", "oid", "_rowid_"].into_iter().find(|r| {
            c.prepare(&format!("SELECT {r} FROM {}", q(name))).is_ok()
                && c.query_row(
                    "SELECT count(*) FROM pragma_table_xinfo(?1) WHERE lower(name) = ?2",
                    [name.as_str(), r],
                    |x| x.get::<_, i64>(0),
                )
                .map(|n| n == 0)
                .unwrap_or(false)
        });
        let sql = match rowid {
            Some(r) => format!("SELECT {r}, * FROM {} ORDER BY {r}", q(name)),
            None => format!("SELECT * FROM {}", q(name)),
        };
        let mut st = c.prepare(&sql)?;
        let n = st.column_count();
        let rows: Vec<Vec<Value>> = st
            .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
            .collect::<rusqlite::Result<_>>()?;
        out.push((name.clone(), rows));
    }
    Ok(out)
}

fn load(
    out: &Path,
    inputs: &[PathBuf],
    rule: OnConflict,
    sq: &SqliteOptions,
) -> liteload::Result<liteload::Summary> {
    let mut opts = ImportOptions::default();
    opts.on_conflict = rule;
    import_sqlite(out, inputs, sq, &opts, &Progress::default())
}

fn case(seed: u64, existing: bool) -> R {
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir()?;
    // Names that collide by case between inputs, and with the target's.
    let names = ["t", "T", "Ünï", "a\"b", "s p"];
    let mut designs: Vec<Design> = vec![];
    for n in names {
        if designs.iter().any(|d| d.name.eq_ignore_ascii_case(n)) {
            // One design a name: "T" is "t"'s table in another input.
            let mut d = designs
                .iter()
                .find(|d| d.name.eq_ignore_ascii_case(n))
                .cloned()
                .ok_or("d")?;
            d.name = n.to_string();
            designs.push(d);
            continue;
        }
        designs.push(Design::random(&mut rng, n));
    }
    // Half the cases declare every table alike in every input (the page writer's copy
    // of records as stored, where nothing else stops it), half at random.
    let same: Option<Vec<Declared>> = rng.chance(50).then(|| {
        designs
            .iter()
            .map(|d| {
                let order: Vec<usize> = (0..d.columns.len()).collect();
                (
                    d.name.clone(),
                    d.create(&order, &mut rng),
                    random_indexes(d, &mut rng),
                )
            })
            .collect()
    });
    let mut inputs = vec![];
    for i in 0..1 + rng.below(4) {
        let p = dir.path().join(format!("in{i}.db"));
        // An input holds one of the case-variant designs of a name, not both.
        let drop = if rng.chance(50) { "t" } else { "T" };
        let mine: Vec<Design> = designs.iter().filter(|d| d.name != drop).cloned().collect();
        write_input(&p, &mine, &mut rng, same.as_deref().map(|s| (s, i)))?;
        inputs.push(p);
    }
    let rule = *rng.pick(&[OnConflict::Ignore, OnConflict::Replace]);
    let (got, want) = (dir.path().join("got.db"), dir.path().join("want.db"));
    if existing {
        // The target holds one design's table (from the first input's declaration,
        // where it has one), a row in it, and an index whose name an input may use.
        for p in [&got, &want] {
            let c = Connection::open(p)?;
            c.execute_batch("CREATE TABLE other (x); CREATE INDEX \"idx 0 0\" ON other (x); INSERT INTO other VALUES (1)")?;
            let s = Connection::open(&inputs[0])?;
            let first: Option<String> = s
                .query_row(
                    "SELECT sql FROM sqlite_schema WHERE type = 'table' ORDER BY rowid LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .ok();
            if let Some(sql) = first {
                c.execute_batch(&sql)?;
            }
        }
    }
    let before: Vec<Vec<u8>> = inputs.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    let result = load(&got, &inputs, rule, &SqliteOptions::default());
    reference(&want, &inputs, rule)?;
    let after: Vec<Vec<u8>> = inputs.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    assert!(before == after, "an input was written to");
    let tables: i64 = inputs
        .iter()
        .map(|p| {
            Connection::open(p)?.query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                [],
                |r| r.get::<_, i64>(0),
            )
        })
        .sum::<rusqlite::Result<i64>>()?;
    if tables == 0 {
        // Nothing to copy is the caller's mistake, and writes nothing.
        let e = result.err().ok_or("copied no table")?;
        assert!(matches!(e.kind(), liteload::ErrorKind::Usage(_)), "{e}");
        return Ok(());
    }
    match result {
        Ok(summary) => {
            let (g, w) = (contents(&got)?, contents(&want)?);
            assert_eq!(g, w, "seed {seed}");
            // Every table of the result but the target's own "other" is the load's.
            let loaded = g
                .iter()
                .filter(|(n, _)| n != "schema" && n != "other")
                .count();
            assert_eq!(summary.tables.len(), loaded, "seed {seed}");
        }
        Err(e) => return Err(format!("seed {seed}: {e}").into()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_inputs_merged_into_a_new_file_equal_sqlites_own_copy(seed in any::<u64>()) {
        case(seed, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }

    #[test]
    fn random_inputs_merged_into_an_existing_file_equal_sqlites_own_copy(seed in any::<u64>()) {
        case(seed, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}

fn db_with(path: &Path, sql: &str) -> R {
    Connection::open(path)?.execute_batch(sql)?;
    Ok(())
}

fn rows(db: &Path, sql: &str) -> R<Vec<Vec<Value>>> {
    let c = Connection::open(db)?;
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let mut st = c.prepare(sql)?;
    let n = st.column_count();
    let got = st
        .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<rusqlite::Result<_>>()?;
    Ok(got)
}

fn ints(v: &[&[i64]]) -> Vec<Vec<Value>> {
    v.iter()
        .map(|r| r.iter().map(|&i| Value::Integer(i)).collect())
        .collect()
}

#[test]
fn rowids_are_kept_alone_renumbered_merged_and_kept_on_request_unless_they_collide() -> R {
    let dir = tempfile::tempdir()?;
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    db_with(
        &a,
        "CREATE TABLE t (x); INSERT INTO t (rowid, x) VALUES (3, 30), (9, 90);
                 CREATE TABLE only_a (x); INSERT INTO only_a (rowid, x) VALUES (5, 1), (7, 2);",
    )?;
    db_with(
        &b,
        "CREATE TABLE t (x); INSERT INTO t (rowid, x) VALUES (1, 10), (4, 40);",
    )?;
    let out = dir.path().join("merged.db");
    let s = load(
        &out,
        &[a.clone(), b.clone()],
        OnConflict::Fail,
        &SqliteOptions::default(),
    )?;
    assert_eq!(s.rows, 6);
    // Merged: numbered anew in input order; alone: kept.
    assert_eq!(
        rows(&out, "SELECT rowid, x FROM t")?,
        ints(&[&[1, 30], &[2, 90], &[3, 10], &[4, 40]])
    );
    assert_eq!(
        rows(&out, "SELECT rowid, x FROM only_a")?,
        ints(&[&[5, 1], &[7, 2]])
    );
    // Kept on request: no collision, every rowid as its file has it.
    let mut keep = SqliteOptions::default();
    keep.keep_rowids = true;
    let kept = dir.path().join("kept.db");
    load(&kept, &[a.clone(), b.clone()], OnConflict::Fail, &keep)?;
    assert_eq!(
        rows(&kept, "SELECT rowid, x FROM t")?,
        ints(&[&[1, 10], &[3, 30], &[4, 40], &[9, 90]])
    );
    // A collision refuses the load: no file, nor its temp file.
    db_with(&b, "INSERT INTO t (rowid, x) VALUES (9, 99)")?;
    let refused = dir.path().join("refused.db");
    let e = load(&refused, &[a.clone(), b.clone()], OnConflict::Fail, &keep).unwrap_err();
    assert!(
        e.to_string().contains("UNIQUE") || e.to_string().contains("rowid"),
        "{e}"
    );
    assert!(!refused.exists());
    assert_eq!(
        std::fs::read_dir(dir.path())?.count(),
        4,
        "a temp file left"
    );
    // A conflict rule does not go with kept rowids.
    let e = load(&refused, &[a, b], OnConflict::Ignore, &keep).unwrap_err();
    assert!(matches!(e.kind(), liteload::ErrorKind::Usage(_)), "{e}");
    Ok(())
}

#[test]
fn an_integer_primary_key_is_data_and_a_conflict_is_the_rules_to_decide() -> R {
    let dir = tempfile::tempdir()?;
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    db_with(&a, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a1'), (5, 'a5');")?;
    db_with(&b, "CREATE TABLE t (v TEXT, id INTEGER PRIMARY KEY); INSERT INTO t VALUES ('b5', 5), ('b7', 7);")?;
    let text = |s: &str| Value::Text(s.into());
    for (rule, five) in [
        (OnConflict::Ignore, "a5"),
        (OnConflict::Replace, "b5"),
        (OnConflict::Update, "b5"),
    ] {
        let out = dir.path().join(format!("{rule:?}.db"));
        load(
            &out,
            &[a.clone(), b.clone()],
            rule,
            &SqliteOptions::default(),
        )?;
        assert_eq!(
            rows(&out, "SELECT id, v FROM t")?,
            vec![
                vec![Value::Integer(1), text("a1")],
                vec![Value::Integer(5), text(five)],
                vec![Value::Integer(7), text("b7")]
            ],
            "{rule:?}"
        );
    }
    // Into a file that exists, a refused load leaves it as it was.
    let there = dir.path().join("there.db");
    db_with(
        &there,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (7, 'there');
                     CREATE TABLE keep (x); INSERT INTO keep VALUES (1);",
    )?;
    let before = std::fs::read(&there)?;
    let e = load(
        &there,
        &[a.clone(), b.clone()],
        OnConflict::Fail,
        &SqliteOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("UNIQUE constraint failed: t.id"),
        "{e}"
    );
    assert_eq!(
        rows(&there, "SELECT id, v FROM t")?,
        vec![vec![Value::Integer(7), text("there")]]
    );
    assert_eq!(std::fs::read(&there)?.len(), before.len());
    Ok(())
}

#[test]
fn tables_of_one_name_with_other_columns_are_refused_before_anything_is_written() -> R {
    let dir = tempfile::tempdir()?;
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    db_with(&a, "CREATE TABLE t (x, y); INSERT INTO t VALUES (1, 2);")?;
    db_with(&b, "CREATE TABLE T (x, z); INSERT INTO T VALUES (1, 2);")?;
    let out = dir.path().join("o.db");
    let e = load(
        &out,
        &[a.clone(), b],
        OnConflict::Fail,
        &SqliteOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e.kind(), liteload::ErrorKind::Schema(_)), "{e}");
    assert!(e.to_string().contains("\"z\""), "{e}");
    assert!(!out.exists());
    // Only some tables, by name as SQLite compares names.
    db_with(&a, "CREATE TABLE u (k); INSERT INTO u VALUES ('é');")?;
    let mut only = SqliteOptions::default();
    only.tables = vec!["U".into()];
    load(&out, std::slice::from_ref(&a), OnConflict::Fail, &only)?;
    assert_eq!(
        rows(&out, "SELECT name FROM sqlite_schema")?,
        vec![vec![Value::Text("u".into())]]
    );
    only.tables = vec!["missing".into()];
    let e = load(&dir.path().join("p.db"), &[a], OnConflict::Fail, &only).unwrap_err();
    assert!(
        e.to_string().contains("no input has a table \"missing\""),
        "{e}"
    );
    Ok(())
}

#[test]
fn an_input_in_use_is_read_from_one_snapshot_and_never_written() -> R {
    let dir = tempfile::tempdir()?;
    let a = dir.path().join("a.db");
    db_with(
        &a,
        "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);",
    )?;
    // A writer holds an open transaction with rows not committed.
    let writer = Connection::open(&a)?;
    writer.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (3);")?;
    let out = dir.path().join("o.db");
    let s = load(
        &out,
        std::slice::from_ref(&a),
        OnConflict::Fail,
        &SqliteOptions::default(),
    )?;
    assert_eq!(s.rows, 2);
    writer.execute_batch("COMMIT")?;
    assert_eq!(rows(&out, "SELECT x FROM t")?, ints(&[&[1], &[2]]));
    assert_eq!(rows(&a, "SELECT count(*) FROM t")?, ints(&[&[3]]));
    Ok(())
}

#[test]
fn more_inputs_than_sqlite_attaches_at_once_go_into_a_new_file_and_views_are_named() -> R {
    let dir = tempfile::tempdir()?;
    let mut inputs = vec![];
    for i in 0..23i64 {
        let p = dir.path().join(format!("part{i:02}.db"));
        db_with(
            &p,
            &format!(
                "CREATE TABLE t (n INTEGER PRIMARY KEY, v); INSERT INTO t VALUES ({i}, 'p{i}');
                              CREATE INDEX t_v ON t (v); CREATE VIEW v{i} AS SELECT 1;"
            ),
        )?;
        inputs.push(p);
    }
    let out = dir.path().join("all.db");
    let s = load(&out, &inputs, OnConflict::Fail, &SqliteOptions::default())?;
    assert_eq!(s.rows, 23);
    assert_eq!(
        rows(&out, "SELECT count(*), sum(n) FROM t")?,
        ints(&[&[23, (0..23).sum()]])
    );
    assert_eq!(
        rows(
            &out,
            "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
        )?,
        ints(&[&[1]])
    );
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("view \"v3\" (not copied)")),
        "{:?}",
        s.notes
    );
    // Into a file that exists the load is one transaction: refused, the file untouched.
    let there = dir.path().join("there.db");
    db_with(&there, "CREATE TABLE other (x)")?;
    let e = load(&there, &inputs, OnConflict::Fail, &SqliteOptions::default()).unwrap_err();
    assert!(matches!(e.kind(), liteload::ErrorKind::Usage(_)), "{e}");
    assert_eq!(
        rows(&there, "SELECT count(*) FROM sqlite_schema")?,
        ints(&[&[1]])
    );
    Ok(())
}

#[test]
fn a_database_among_text_inputs_is_refused_and_alone_is_copied_by_import() -> R {
    let dir = tempfile::tempdir()?;
    let a = dir.path().join("a.db");
    db_with(&a, "CREATE TABLE t (x); INSERT INTO t VALUES (x'00ff');")?;
    let csv = dir.path().join("b.csv");
    std::fs::write(&csv, "x\n1\n")?;
    let both = [Input::Path(a.clone()), Input::Path(csv.clone())];
    assert!(sqlite_inputs(&both).is_err());
    let out = dir.path().join("o.db");
    let e =
        liteload::import(&out, &both, &ImportOptions::default(), &Progress::default()).unwrap_err();
    assert!(matches!(e.kind(), liteload::ErrorKind::Usage(_)), "{e}");
    assert!(!out.exists());
    // Alone, through the library's one door for files.
    let s = liteload::import(
        &out,
        &[Input::Path(a)],
        &ImportOptions::default(),
        &Progress::default(),
    )?;
    assert_eq!(s.rows, 1);
    assert_eq!(
        rows(&out, "SELECT x FROM t")?,
        vec![vec![Value::Blob(vec![0, 255])]]
    );
    // Text is still text.
    assert_eq!(sqlite_inputs(&[Input::Path(csv)])?, None);
    Ok(())
}

#[test]
fn a_replaced_table_gives_back_its_index_names_and_the_page_writer_makes_only_new_files() -> R {
    let dir = tempfile::tempdir()?;
    let a = dir.path().join("a.db");
    db_with(
        &a,
        "CREATE TABLE t (x); INSERT INTO t VALUES (1); CREATE INDEX t_x ON t (x);",
    )?;
    let there = dir.path().join("there.db");
    db_with(&there, "CREATE TABLE t (x, y); CREATE INDEX t_x ON t (y); CREATE TABLE u (z); CREATE INDEX u_z ON u (z);")?;
    let mut opts = ImportOptions::default();
    opts.if_exists = liteload::IfExists::Replace;
    import_sqlite(
        &there,
        std::slice::from_ref(&a),
        &SqliteOptions::default(),
        &opts,
        &Progress::default(),
    )?;
    assert_eq!(
        rows(
            &there,
            "SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index' ORDER BY name"
        )?,
        [["t_x", "t"], ["u_z", "u"]].map(|r| r.map(|s| Value::Text(s.into())).to_vec())
    );
    assert_eq!(rows(&there, "SELECT x FROM t")?, ints(&[&[1]]));
    let mut direct = ImportOptions::default();
    direct.engine = liteload::Engine::Direct;
    let run = |out: &Path, inputs: &[PathBuf]| {
        import_sqlite(
            out,
            inputs,
            &SqliteOptions::default(),
            &direct,
            &Progress::default(),
        )
    };
    // The page writer makes a new file: from this input, it does.
    let out = dir.path().join("o.db");
    let s = run(&out, std::slice::from_ref(&a))?;
    assert_eq!(s.engine, Some(liteload::EngineUsed::Direct));
    assert_eq!(rows(&out, "SELECT rowid, x FROM t")?, ints(&[&[1, 1]]));
    // Into a file that exists, and from an input in WAL mode, it does not: asked for, a
    // usage error, and nothing written.
    let before = std::fs::read(&there)?;
    let e = run(&there, std::slice::from_ref(&a)).unwrap_err();
    assert!(matches!(e.kind(), liteload::ErrorKind::Usage(_)), "{e}");
    assert_eq!(std::fs::read(&there)?, before);
    let wal = dir.path().join("wal.db");
    db_with(
        &wal,
        "PRAGMA journal_mode = wal; CREATE TABLE w (x); INSERT INTO w VALUES (2);",
    )?;
    let out2 = dir.path().join("o2.db");
    let e = run(&out2, &[wal]).unwrap_err();
    assert!(e.to_string().contains("WAL"), "{e}");
    assert!(!out2.exists());
    Ok(())
}

#[test]
fn a_schema_written_by_hand_runs_no_second_statement_in_the_target() -> R {
    let dir = tempfile::tempdir()?;
    let a = dir.path().join("a.db");
    db_with(
        &a,
        "CREATE TABLE t (x); INSERT INTO t VALUES (1); CREATE INDEX i ON t (x);",
    )?;
    let c = Connection::open(&a)?;
    c.execute_batch("PRAGMA writable_schema = ON;")?;
    c.execute(
        "UPDATE sqlite_schema SET sql = 'CREATE TABLE t (x); DROP TABLE victim' WHERE name = 't'",
        [],
    )?;
    drop(c);
    let there = dir.path().join("there.db");
    db_with(
        &there,
        "CREATE TABLE victim (v); INSERT INTO victim VALUES (7);",
    )?;
    let result = load(
        &there,
        std::slice::from_ref(&a),
        OnConflict::Fail,
        &SqliteOptions::default(),
    );
    assert!(result.is_err(), "{result:?}");
    assert_eq!(rows(&there, "SELECT v FROM victim")?, ints(&[&[7]]));
    Ok(())
}

#[test]
fn records_are_copied_as_stored_where_the_inputs_allow_and_by_sqlite_where_not() -> R {
    let dir = tempfile::tempdir()?;
    let make = |name: &str, sql: &str| -> R<PathBuf> {
        let p = dir.path().join(name);
        db_with(&p, sql)?;
        Ok(p)
    };
    let schema =
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n); CREATE INDEX t_v ON t (v, n); \
                  CREATE TABLE r (a, b); CREATE INDEX r_b ON r (b);";
    // Keys in a range of each input's own; implicit rowids with gaps (deleted rows) in
    // the second, none in the first; equal index keys across inputs; a huge text that
    // overflows its page; values of every class.
    let mut inputs = vec![];
    for i in 0..3i64 {
        let p = make(
            &format!("in{i}.db"),
            &format!(
                "{schema}
                 WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3000)
                 INSERT INTO t SELECT x + {base}, 'V' || (x % 7), CASE x % 4 WHEN 0 THEN x WHEN 1 THEN x / 3.0 WHEN 2 THEN NULL ELSE x'00ff' END FROM n;
                 INSERT INTO t VALUES ({base} + 5000, replace(hex(zeroblob({big})), '00', 'é'), 'a' || char(0) || 'b');
                 WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000)
                 INSERT INTO r SELECT x, 'k' || (x % 5) FROM n;
                 DELETE FROM r WHERE {i} = 1 AND rowid % 3 = 0;",
                base = i * 10_000,
                big = 20_000 + i
            ),
        )?;
        inputs.push(p);
    }
    let (got, want) = (dir.path().join("got.db"), dir.path().join("want.db"));
    let s = load(&got, &inputs, OnConflict::Fail, &SqliteOptions::default())?;
    assert_eq!(s.engine, Some(liteload::EngineUsed::Direct));
    assert_eq!(s.rows, 3 * 3001 + 2000 + 1334 + 2000);
    reference(&want, &inputs, OnConflict::Fail)?;
    assert_eq!(contents(&got)?, contents(&want)?);
    // Each index holds its table's rows, as SQLite reads them through it.
    for (ix, cols) in [("t_v", "v, n, id"), ("r_b", "b, rowid")] {
        let table = if ix == "t_v" { "t" } else { "r" };
        let q = format!(
            "SELECT {cols} FROM {table} INDEXED BY {ix} WHERE {} IS NOT NULL OR 1 ORDER BY {cols}",
            cols.split(',').next().unwrap_or("")
        );
        assert_eq!(rows(&got, &q)?, rows(&want, &q)?, "{ix}");
    }

    // Keys that interleave between inputs: SQLite's road, by the conflict rule.
    let overlap = make(
        "overlap.db",
        &format!("{schema} INSERT INTO t VALUES (2, 'x', 1), (20005, 'y', 2);"),
    )?;
    let mixed = [inputs[0].clone(), overlap];
    let (got2, want2) = (dir.path().join("got2.db"), dir.path().join("want2.db"));
    let s = load(
        &got2,
        &mixed,
        OnConflict::Replace,
        &SqliteOptions::default(),
    )?;
    assert_eq!(s.engine, Some(liteload::EngineUsed::Sqlite));
    reference(&want2, &mixed, OnConflict::Replace)?;
    assert_eq!(contents(&got2)?, contents(&want2)?);

    // Two inputs whose tables each have an index of one name, and a table of one input
    // with a UNIQUE constraint (its automatic index copied as stored): the names are
    // made apart as SQLite's road makes them, and the copy equals it.
    let u1 = make(
        "u1.db",
        "CREATE TABLE a (x UNIQUE, y); CREATE INDEX same ON a (y); INSERT INTO a VALUES (1, 2), ('é', NULL);",
    )?;
    let u2 = make(
        "u2.db",
        "CREATE TABLE b (z); CREATE INDEX same ON b (z); INSERT INTO b VALUES (3);",
    )?;
    for (k, pair) in [[u1.clone(), u2.clone()], [u2, u1.clone()]]
        .iter()
        .enumerate()
    {
        let (g, w) = (
            dir.path().join(format!("gu{k}.db")),
            dir.path().join(format!("wu{k}.db")),
        );
        load(&g, pair, OnConflict::Fail, &SqliteOptions::default())?;
        reference(&w, pair, OnConflict::Fail)?;
        assert_eq!(contents(&g)?, contents(&w)?);
    }
    let gu = dir.path().join("gu.db");
    let s = load(
        &gu,
        std::slice::from_ref(&u1),
        OnConflict::Fail,
        &SqliteOptions::default(),
    )?;
    assert_eq!(s.engine, Some(liteload::EngineUsed::Direct));
    let e = Connection::open(&gu)?
        .execute("INSERT INTO a VALUES (1, 0)", [])
        .unwrap_err();
    assert!(e.to_string().contains("UNIQUE"), "{e}");

    // An index whose schema says it holds every row, but holds some (a partial index
    // whose WHERE was cut by hand): refused, as SQLite's own check would find it.
    let cut = make(
        "cut.db",
        "CREATE TABLE c (id INTEGER PRIMARY KEY, v); CREATE INDEX c_v ON c (v) WHERE id < 3;
         INSERT INTO c VALUES (1, 'a'), (2, 'b'), (3, 'c');
         PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE INDEX c_v ON c (v)' WHERE name = 'c_v';",
    )?;
    let got_cut = dir.path().join("got_cut.db");
    let e = load(
        &got_cut,
        &[cut],
        OnConflict::Fail,
        &SqliteOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("2 entries for 3 rows"), "{e}");
    assert!(!got_cut.exists());

    // An input whose table page is damaged: an error naming it, and no file.
    let bad = dir.path().join("bad.db");
    std::fs::copy(&inputs[1], &bad)?;
    let root: i64 = Connection::open(&bad)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
        [],
        |r| r.get(0),
    )?;
    let mut bytes = std::fs::read(&bad)?;
    let at = (root as usize - 1) * 4096;
    bytes[at] = 0x42;
    std::fs::write(&bad, bytes)?;
    let got3 = dir.path().join("got3.db");
    let e = load(
        &got3,
        &[inputs[0].clone(), bad],
        OnConflict::Fail,
        &SqliteOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("bad.db"), "{e}");
    assert!(!got3.exists());
    assert!(!liteload::durability::temp_path(&got3).exists());
    Ok(())
}
