//! The names a load gives the schema objects it creates in a file (tables, indexes), and
//! SQLite's own reading of a file's schema before the file is final.
//!
//! SQLite keeps tables, indexes, views and triggers in one namespace and compares names
//! ignoring ASCII case (`"Idx_A"` and `"idx_a"` are one name; `"É"` and `"é"` are two).
//! A name made by joining parts (`idx_T_a_b` from table `T` and columns `a`, `b`) is not
//! one-to-one: column `a_b` makes the same one. So every name a load makes is handed out
//! by one [`Names`] per target file, which knows every name in the file and every name
//! handed out already, and never hands one out twice.
//!
//! Then, as defense in depth for writers that write `sqlite_schema` rows themselves (the
//! page writer), [`check_schema`] has SQLite read the file's schema back before the file
//! is published or the transaction commits: every `CREATE` must parse and no name may be
//! there twice. Its cost is the schema's size, not the data's.

use std::collections::HashSet;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::table::{already_held, held_indexes, HeldIndex, IndexSpec};

/// The names taken in one file's schema, compared as SQLite compares them.
///
/// Invariant: a name [`Names::allocate`] returned is not equal, ignoring ASCII case, to
/// any name it was seeded with, claimed, or returned before.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    /// ASCII-lowercased.
    taken: HashSet<String>,
}

impl Names {
    /// No name taken (a file that does not exist yet).
    pub(crate) fn new() -> Names {
        Names::default()
    }

    /// Every name in the `main` schema of the database `conn` holds.
    pub(crate) fn of(conn: &Connection) -> Result<Names> {
        let ctx = |e| Error::sqlite("reading the names in the schema", e);
        let mut stmt = conn
            .prepare("SELECT name FROM main.sqlite_schema")
            .map_err(ctx)?;
        let names = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(ctx)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(ctx)?;
        let mut out = Names::new();
        for n in names {
            out.claim(&n);
        }
        Ok(out)
    }

    /// Marks `name` taken (a table the load writes into, or one already there); returns
    /// whether it was free.
    pub(crate) fn claim(&mut self, name: &str) -> bool {
        self.taken.insert(name.to_ascii_lowercase())
    }

    /// `wanted` if it is free and SQLite would take it for an object of ours, else the
    /// first free one of `wanted_2`, `wanted_3`, …; the name returned is taken from then
    /// on. A name SQLite reserves (the `sqlite_` prefix) gets `x` put before it.
    pub(crate) fn allocate(&mut self, wanted: &str) -> String {
        let reserved = wanted.len() >= 7 && wanted.as_bytes()[..7].eq_ignore_ascii_case(b"sqlite_");
        let base = if reserved {
            format!("x{wanted}")
        } else {
            wanted.replace('\0', "")
        };
        if self.claim(&base) {
            return base;
        }
        (2u64..)
            .map(|n| format!("{base}_{n}"))
            .find(|n| self.claim(n))
            .expect("some suffix is free")
    }
}

impl Names {
    /// As [`Names::allocate`], for a column: a column may start with `sqlite_`.
    pub(crate) fn allocate_column(&mut self, wanted: &str) -> String {
        if self.claim(wanted) {
            return wanted.to_string();
        }
        (2u64..)
            .map(|n| format!("{wanted}_{n}"))
            .find(|n| self.claim(n))
            .expect("some suffix is free")
    }
}

/// The `CREATE INDEX` that gives `table` (in the database `conn` holds) the index `ix`
/// asks for, under a name nothing in that database has; `None` when the table has such
/// an index already (an append that asks again for the index it made).
pub(crate) fn index_sql(conn: &Connection, table: &str, ix: &IndexSpec) -> Result<Option<String>> {
    index_to_make(&held_indexes(conn, table)?, || Names::of(conn), table, ix)
}

/// The one rule of [`index_sql`], for a database read through any door: `None` when
/// `held` (the table's indexes) already does what `ix` asks, else its `CREATE INDEX`
/// under a name free among those `taken` returns (read only then).
pub(crate) fn index_to_make(
    held: &[HeldIndex],
    taken: impl FnOnce() -> Result<Names>,
    table: &str,
    ix: &IndexSpec,
) -> Result<Option<String>> {
    if already_held(held, ix) {
        return Ok(None);
    }
    let name = taken()?.allocate(&ix.wanted_name(table));
    Ok(Some(ix.create_sql(table, &name)))
}

/// Has SQLite read the schema of the database `conn` holds (its `main` schema) from the
/// file: every `CREATE` in it must parse, and no name may be there twice (ignoring ASCII
/// case, as SQLite compares them). A failure is a bug in the writer that made the file:
/// an internal error, never a success.
pub(crate) fn check_schema(conn: &Connection) -> Result<()> {
    let bad = |what: String| {
        Error::internal(format!(
            "the schema written is not one SQLite accepts: {what}"
        ))
    };
    // A schema SQLite cannot parse fails the first statement that needs it; a fresh
    // read is forced by asking for it from a statement of its own.
    let mut stmt = conn
        .prepare("SELECT type, name FROM main.sqlite_schema")
        .map_err(|e| bad(e.to_string()))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(|e| bad(e.to_string()))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| bad(e.to_string()))?;
    let mut seen = Names::new();
    for (kind, name) in rows {
        if !seen.claim(&name) {
            return Err(bad(format!(
                "the name {} is used twice ({kind})",
                quote_ident(&name)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_taken_name_gets_the_next_free_suffix() {
        let mut n = Names::new();
        n.claim("T");
        assert_eq!(n.allocate("t"), "t_2");
        assert_eq!(n.allocate("T"), "T_3");
        n.claim("x_2");
        assert_eq!(n.allocate("x"), "x");
        assert_eq!(n.allocate("X"), "X_3");
        assert_eq!(n.allocate("sqlite_stat1"), "xsqlite_stat1");
        assert_eq!(n.allocate("É"), "É");
        assert_eq!(n.allocate("é"), "é");
    }

    proptest! {
        /// Whatever is wanted, in whatever case and order, no two names handed out are
        /// one name to SQLite, and SQLite creates an index under each.
        #[test]
        fn no_name_is_handed_out_twice(
            seed in proptest::collection::vec("[aAéÉ_]{0,3}(_[0-9])?", 0..6),
            wanted in proptest::collection::vec("[aAéÉ_]{0,3}(_[0-9])?|sqlite_[aA]?", 1..12),
        ) {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch("CREATE TABLE \"host table\"(a)").unwrap();
            let mut n = Names::of(&conn).unwrap();
            for s in &seed {
                n.claim(s);
            }
            let mut out = HashSet::new();
            for w in &wanted {
                let got = n.allocate(w);
                prop_assert!(!seed.iter().any(|s| s.eq_ignore_ascii_case(&got)));
                prop_assert!(out.insert(got.to_ascii_lowercase()), "{got} twice");
                let sql = format!("CREATE INDEX {} ON \"host table\"(a)", quote_ident(&got));
                prop_assert!(conn.execute_batch(&sql).is_ok(), "{sql}");
            }
            check_schema(&conn).unwrap();
        }
    }

    #[test]
    fn an_index_held_already_is_not_made_again_and_a_name_taken_is_not_reused() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t(a_b, a, b); CREATE TABLE idx_t_a(x); \
             CREATE INDEX idx_t_a_b ON t(a_b);",
        )
        .unwrap();
        let ix = |cols: &[&str], unique| IndexSpec::new(cols.iter().copied(), unique);
        // The same columns: held.
        assert_eq!(index_sql(&conn, "t", &ix(&["A_B"], false)).unwrap(), None);
        // UNIQUE on (a, b): its natural name is taken by the index on a_b.
        let sql = index_sql(&conn, "t", &ix(&["a", "b"], true))
            .unwrap()
            .unwrap();
        assert!(sql.contains("\"idx_t_a_b_2\""), "{sql}");
        conn.execute_batch(&sql).unwrap();
        // A table holds the name idx_t_a.
        let sql = index_sql(&conn, "t", &ix(&["a"], false)).unwrap().unwrap();
        assert!(sql.contains("\"idx_t_a_2\""), "{sql}");
        // A plain index does not stand in for a UNIQUE one.
        let sql = index_sql(&conn, "t", &ix(&["a_b"], true)).unwrap().unwrap();
        assert!(sql.contains("UNIQUE"), "{sql}");
        check_schema(&conn).unwrap();
    }

    #[test]
    fn a_schema_with_one_name_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("twice.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE t(a); CREATE TABLE u(a); CREATE INDEX ix ON t(a); \
             PRAGMA writable_schema = ON; \
             UPDATE sqlite_schema SET name = 'IX', tbl_name = 'IX' WHERE name = 'u';",
        )
        .unwrap();
        drop(conn);
        let conn = Connection::open(&path).unwrap();
        let e = check_schema(&conn).unwrap_err();
        assert!(
            matches!(e.kind(), crate::error::ErrorKind::Internal(_)),
            "{e}"
        );
    }
}
