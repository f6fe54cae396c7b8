//! What the differential tests share: a table read back whole, SQLite's own integrity
//! check, and the value liteload binds for a delimited-text field (the reference's
//! side of each comparison).
#![allow(dead_code)]

pub mod mysql;
pub mod pg;
pub mod pki;

/// A small deterministic generator (xorshift), so that a case is one seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::Nulls;

/// Ages and quantities the CHECK tests try: around the constraints' bounds, and NULL.
pub const AGES: [Option<i32>; 8] = [
    None,
    Some(-3),
    Some(-1),
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(7),
];
pub const QTYS: [Option<i64>; 7] = [None, Some(-1), Some(0), Some(1), Some(3), Some(9), Some(10)];

/// The DDL of the CHECK tests: table `t` of `columns` with every constraint (`c00`, …:
/// `carried` then `named`), table `r` with the carried ones alone (`r00`, …), the
/// table rows are tried on.
pub fn check_tables(columns: &str, carried: &[&str], named: &[&str]) -> String {
    let mut ddl = format!("CREATE TABLE t ({columns}");
    for (i, c) in carried.iter().chain(named).enumerate() {
        ddl.push_str(&format!(", CONSTRAINT c{i:02} CHECK ({c})"));
    }
    ddl.push_str(&format!("); CREATE TABLE r ({columns}"));
    for (i, c) in carried.iter().enumerate() {
        ddl.push_str(&format!(", CONSTRAINT r{i:02} CHECK ({c})"));
    }
    ddl.push_str(");");
    ddl
}

/// Tries `n` rows against a server's CHECK constraints and the copy's: `each(i)` inserts
/// row `i` on both sides and says whether the server took it, whether SQLite did (an
/// error SQLite gives must be a CHECK failing), and the row for a message. Every row
/// must get one verdict from both, and both verdicts must be met more than 20 times, so
/// that the comparison says something.
pub fn same_verdicts(
    n: usize,
    mut each: impl FnMut(usize) -> (bool, liteload::rusqlite::Result<usize>, String),
) {
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..n {
        let (server, lite, row) = each(i);
        if let Err(e) = &lite {
            assert!(
                e.to_string().contains("CHECK constraint failed"),
                "{row}: {e}"
            );
        }
        assert_eq!(server, lite.is_ok(), "row {i}: {row}");
        if server {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    assert!(
        accepted > 20 && refused > 20,
        "{accepted} accepted, {refused} refused"
    );
}

/// Every row of `table` (as SQL: `t`, `main.t`, `want`), ordered by rowid, with the
/// rowid as the first value when `with_rowid`.
pub fn table_rows(c: &Connection, table: &str, with_rowid: bool) -> Vec<Vec<Sql>> {
    let rowid = if with_rowid { "rowid, " } else { "" };
    let mut st = c
        .prepare(&format!("SELECT {rowid}* FROM {table} ORDER BY rowid"))
        .unwrap();
    let n = st.column_count();
    st.query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Panics unless SQLite's `PRAGMA integrity_check` of the database says ok.
pub fn assert_intact(c: &Connection) {
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// The value liteload binds for a field with text `text` (`quoted` or not) in a TEXT
/// column (`text_column`) or another under `nulls`: the text, which SQLite's affinity
/// converts, or NULL for an empty field the rule makes NULL (typed: outside TEXT; all:
/// any; unquoted: an unquoted one).
pub fn bound(text: &str, quoted: bool, text_column: bool, nulls: Nulls) -> Sql {
    let null = text.is_empty()
        && match nulls {
            Nulls::Unquoted => !quoted,
            Nulls::All => true,
            _ => !text_column,
        };
    if null {
        Sql::Null
    } else {
        Sql::Text(text.to_string())
    }
}

/// SQLite's own insert path, the reference: runs `sql` (an INSERT of one row's values)
/// for each of `rows` in a savepoint of its own, a refused row rolled back (`None`: a
/// row the reader refuses before SQLite sees it). Returns the numbers (from 1) of the
/// rows refused.
pub fn insert_each(
    c: &Connection,
    sql: &str,
    rows: impl IntoIterator<Item = Option<Vec<Sql>>>,
) -> Vec<u64> {
    let mut refused = vec![];
    for (i, values) in rows.into_iter().enumerate() {
        let Some(values) = values else {
            refused.push(i as u64 + 1);
            continue;
        };
        c.execute_batch("SAVEPOINT r").unwrap();
        match c.execute(sql, liteload::rusqlite::params_from_iter(values)) {
            Ok(_) => c.execute_batch("RELEASE r").unwrap(),
            Err(_) => {
                refused.push(i as u64 + 1);
                c.execute_batch("ROLLBACK TO r; RELEASE r").unwrap();
            }
        }
    }
    refused
}
