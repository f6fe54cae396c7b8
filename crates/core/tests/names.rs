//! One name per schema object, through `import`'s door: random tables and `--index`es
//! whose names are built to collide (a column `a_b` beside columns `a` and `b`, a table
//! named like another table's index, ASCII case, non-ASCII) into a new file and into a
//! file that already holds objects of those names, on each writer (the page writer, the
//! side file, SQLite's insert path), loaded twice (the second load appends and asks for
//! the same indexes again). Every file is one SQLite reads whole (`integrity_check`, no
//! name twice), and every index asked for is there on its columns, UNIQUE where asked.

use liteload::rusqlite::Connection;
use liteload::{import, Engine, ImportOptions, IndexSpec, Input, Progress};
use proptest::prelude::*;

mod support;

const TABLES: [&str; 5] = ["t", "T", "idx_t_a", "é", "idx_T_a_b"];
const KEYS: [&[&str]; 5] = [&["a_b"], &["a", "b"], &["A", "b"], &["a"], &["b", "a_b"]];

/// The names SQLite holds twice, ignoring ASCII case (none, in a file it accepts).
fn twice(c: &Connection) -> Vec<String> {
    c.prepare("SELECT lower(name) FROM sqlite_schema GROUP BY lower(name) HAVING count(*) > 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Whether `table` has an index on exactly `columns` (ASCII case ignored), UNIQUE if
/// `unique`.
fn has_index(c: &Connection, table: &str, columns: &[&str], unique: bool) -> bool {
    let mut list = c
        .prepare("SELECT name, \"unique\" FROM pragma_index_list(?1)")
        .unwrap();
    let indexes: Vec<(String, bool)> = list
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    indexes.iter().any(|(name, u)| {
        let cols: Vec<String> = c
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .unwrap()
            .query_map([name], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        (*u || !unique)
            && cols.len() == columns.len()
            && cols
                .iter()
                .zip(columns)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_index_gets_a_name_of_its_own(
        table in proptest::sample::select(TABLES.to_vec()),
        indexes in proptest::collection::vec((0..KEYS.len(), any::<bool>()), 1..4),
        existing in any::<bool>(),
        sqlite in any::<bool>(),
    ) {
        // Two indexes on the same columns are refused as a usage error: one each.
        let mut seen: Vec<usize> = vec![];
        let indexes: Vec<(usize, bool)> = indexes
            .into_iter()
            .filter(|(k, _)| {
                let lower: Vec<String> = KEYS[*k].iter().map(|c| c.to_ascii_lowercase()).collect();
                let dup = seen.iter().any(|s| {
                    KEYS[*s].iter().map(|c| c.to_ascii_lowercase()).collect::<Vec<_>>() == lower
                });
                seen.push(*k);
                !dup
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("n.db");
        if existing {
            // Objects with the names this load's indexes and table want.
            Connection::open(&db)
                .unwrap()
                .execute_batch(
                    "CREATE TABLE other (a_b, a, b);
                     CREATE INDEX idx_t_a_b ON other (a_b);
                     CREATE INDEX \"IDX_T_A\" ON other (a);
                     CREATE TABLE idx_t_a_b_2 (z);
                     CREATE INDEX \"idx_é_a\" ON other (b);",
                )
                .unwrap();
        }
        let src = dir.path().join("in.csv");
        std::fs::write(&src, "a_b,a,b\n1,1,1\n2,2,2\n3,3,3\n").unwrap();
        let mut o = ImportOptions::default();
        o.table = Some(table.into());
        o.indexes = indexes
            .iter()
            .map(|&(k, unique)| IndexSpec::new(KEYS[k].iter().copied(), unique))
            .collect();
        if sqlite {
            o.engine = Engine::Sqlite;
        }
        // The table may be named like an index of the file: then it is made under a
        // free name, or refused; either way the file stays one SQLite reads.
        let first = import(&db, &[Input::Path(src.clone())], &o, &Progress::default());
        let second = first
            .as_ref()
            .ok()
            .map(|_| {
                // Again, appending: the UNIQUE indexes refuse the same rows, so a
                // second input of new rows.
                std::fs::write(&src, "a_b,a,b\n4,4,4\n").unwrap();
                import(&db, &[Input::Path(src.clone())], &o, &Progress::default())
            });
        if db.exists() {
            let c = Connection::open(&db).unwrap();
            support::assert_intact(&c);
            prop_assert!(twice(&c).is_empty(), "{:?}", twice(&c));
        }
        let summary = match first {
            Ok(s) => s,
            Err(e) => {
                // Only a table name an index of the file holds may refuse the load,
                // with a schema error that says so.
                prop_assert!(existing, "{}", e);
                prop_assert!(e.to_string().contains("name another table"), "{}", e);
                prop_assert!(matches!(e.kind(), liteload::ErrorKind::Schema(_)), "{}", e);
                return Ok(());
            }
        };
        prop_assert_eq!(summary.rows, 3);
        let made = summary.tables[0].clone();
        let c = Connection::open(&db).unwrap();
        for &(k, unique) in &indexes {
            prop_assert!(
                has_index(&c, &made, KEYS[k], unique),
                "{:?} unique {} on {} ({:?})", KEYS[k], unique, made, second.as_ref().map(|s| s.as_ref().map(|s| s.rows))
            );
        }
        if let Some(second) = second {
            let s = second.unwrap();
            prop_assert_eq!(s.rows, 1);
            let n: i64 = c
                .query_row(&format!("SELECT count(*) FROM \"{}\"", made.replace('"', "\"\"")), [], |r| r.get(0))
                .unwrap();
            prop_assert_eq!(n, 4);
            // Asked again, no index was made twice.
            let count: i64 = c
                .query_row("SELECT count(*) FROM pragma_index_list(?1)", [&made], |r| r.get(0))
                .unwrap();
            prop_assert_eq!(count as usize, indexes.len());
        }
    }
}
