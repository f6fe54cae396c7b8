//! The SQL of ingest's merge, for both of its stores ([`super::writer`] into a file,
//! [`super::cluster`] into rqlite): a table of key columns and value columns, where a
//! row's present fields are set and its absent ones kept. Every identifier is quoted;
//! values are always parameters.

use crate::schema::quote_ident;
use crate::types::ColumnType;

/// SQLite's default cap on a statement's parameters (`SQLITE_MAX_VARIABLE_NUMBER`,
/// 32,766 since 3.32): where the connection cannot be asked (a cluster), statements are
/// sized to it.
#[cfg_attr(not(feature = "network"), allow(dead_code))]
pub(crate) const DEFAULT_MAX_PARAMS: usize = 32_766;

/// The upsert statements of one table.
pub(crate) struct Upsert<'a> {
    pub(crate) table: &'a str,
    pub(crate) keys: &'a [String],
    pub(crate) columns: &'a [(String, Option<ColumnType>)],
}

impl Upsert<'_> {
    /// The quoted names of the keys, then of every column: the order of an INSERT's
    /// values.
    fn names(&self) -> Vec<String> {
        self.keys
            .iter()
            .chain(self.columns.iter().map(|(n, _)| n))
            .map(|n| quote_ident(n))
            .collect()
    }

    /// Parameters one row binds: its keys, then every column.
    pub(crate) fn width(&self) -> usize {
        self.keys.len() + self.columns.len()
    }

    /// Rows per multi-row statement: at most `cap`, and as many as `max_params`
    /// parameters allow (at least one).
    pub(crate) fn rows_per_statement(&self, max_params: usize, cap: usize) -> usize {
        (max_params / self.width().max(1)).clamp(1, cap.max(1))
    }

    /// `INSERT INTO t (keys…, every column) VALUES (?, …), …` of `rows` rows.
    pub(crate) fn insert_sql(&self, rows: usize) -> String {
        let names = self.names();
        let one = format!("({})", vec!["?"; names.len()].join(", "));
        format!(
            "INSERT INTO {} ({}) VALUES {}",
            quote_ident(self.table),
            names.join(", "),
            vec![one; rows].join(", ")
        )
    }

    /// [`Upsert::insert_sql`] of `rows` rows `ON CONFLICT (keys) DO UPDATE SET c =
    /// coalesce(excluded.c, c), …`: for rows that set no column to NULL, the merge of
    /// [`Upsert::update_kept_sql`] and the insert of a new key in one statement, so a key
    /// costs one search of the table's key index instead of two.
    pub(crate) fn insert_kept_sql(&self, rows: usize) -> String {
        let set: Vec<String> = self
            .columns
            .iter()
            .map(|(n, _)| {
                let n = quote_ident(n);
                format!("{n} = coalesce(excluded.{n}, {n})")
            })
            .collect();
        let keys: Vec<String> = self.keys.iter().map(|k| quote_ident(k)).collect();
        format!(
            "{} ON CONFLICT ({}) DO UPDATE SET {}",
            self.insert_sql(rows),
            keys.join(", "),
            set.join(", ")
        )
    }

    /// `INSERT INTO t (keys…) VALUES (?, …) ON CONFLICT DO NOTHING`: a key, unless it is
    /// there (a table with no columns but its keys).
    pub(crate) fn insert_keys_sql(&self) -> String {
        let keys: Vec<String> = self.keys.iter().map(|k| quote_ident(k)).collect();
        format!(
            "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
            quote_ident(self.table),
            keys.join(", "),
            vec!["?"; keys.len()].join(", ")
        )
    }

    /// `INSERT INTO t (keys…, every column) VALUES <tuples> ON CONFLICT (keys) DO UPDATE
    /// SET c = excluded.c, …` for the columns at `present` (positions in the columns),
    /// or `DO NOTHING` when none is: the others keep their value on a key that is there,
    /// and are NULL (as bound) on a new one. `tuples` are the rows' placeholders, each
    /// `(…)` with the keys' then every column's.
    #[cfg_attr(not(feature = "network"), allow(dead_code))]
    pub(crate) fn insert_merge_sql(&self, tuples: &[String], present: &[u32]) -> String {
        let names = self.names();
        let set: Vec<String> = present
            .iter()
            .map(|&c| {
                let n = quote_ident(&self.columns[c as usize].0);
                format!("{n} = excluded.{n}")
            })
            .collect();
        let conflict = if set.is_empty() {
            "DO NOTHING".to_string()
        } else {
            format!("DO UPDATE SET {}", set.join(", "))
        };
        format!(
            "INSERT INTO {} ({}) VALUES {} ON CONFLICT ({}) {conflict}",
            quote_ident(self.table),
            names.join(", "),
            tuples.join(", "),
            names[..self.keys.len()].join(", ")
        )
    }

    /// `UPDATE t SET c = CASE WHEN ?f THEN ?v ELSE c END, … WHERE k = ?k AND …`:
    /// parameters are the keys, then the columns' values, then one presence flag per
    /// column.
    pub(crate) fn update_sql(&self) -> String {
        let (nkeys, ncols) = (self.keys.len(), self.columns.len());
        self.update_by_key(|c, n| {
            format!(
                "{n} = CASE WHEN ?{} THEN ?{} ELSE {n} END",
                nkeys + ncols + c + 1,
                nkeys + c + 1
            )
        })
    }

    /// `UPDATE t SET c = coalesce(?v, c), … WHERE k = ?k AND …`, for a row that sets no
    /// column to NULL: an unbound (NULL) value keeps the column. Parameters as in
    /// [`Upsert::update_sql`], without the flags: each column costs SQLite about half
    /// the steps of a CASE.
    pub(crate) fn update_kept_sql(&self) -> String {
        let nkeys = self.keys.len();
        self.update_by_key(|c, n| format!("{n} = coalesce(?{}, {n})", nkeys + c + 1))
    }

    /// `UPDATE t SET <set(c, quoted name) for each column> WHERE k = ?1 AND …`.
    fn update_by_key(&self, set: impl Fn(usize, &str) -> String) -> String {
        let sets: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(c, (n, _))| set(c, &quote_ident(n)))
            .collect();
        let wheres: Vec<String> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{} = ?{}", quote_ident(k), i + 1))
            .collect();
        format!(
            "UPDATE {} SET {} WHERE {}",
            quote_ident(self.table),
            sets.join(", "),
            wheres.join(" AND ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both stores' statements, run by SQLite on hostile names: the merge keeps absent
    /// columns, sets present ones (NULL included), and inserts new keys with NULLs.
    #[test]
    fn the_merge_statements_run_and_merge_as_documented() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let keys = vec!["k\"ey".to_string()];
        let columns = vec![
            ("a b".to_string(), None),
            ("É]".to_string(), Some(ColumnType::Integer)),
        ];
        conn.execute_batch(
            "CREATE TABLE \"t;x\" (\"k\"\"ey\" TEXT PRIMARY KEY NOT NULL, \"a b\", \"É]\" INTEGER)",
        )
        .unwrap();
        let u = Upsert {
            table: "t;x",
            keys: &keys,
            columns: &columns,
        };
        assert_eq!(u.rows_per_statement(DEFAULT_MAX_PARAMS, 64), 64);
        assert_eq!(u.rows_per_statement(5, 64), 1);
        conn.execute(
            &u.insert_sql(2),
            rusqlite::params!["1", "x", 1, "2", "y", 2],
        )
        .unwrap();
        conn.execute(&u.insert_keys_sql(), ["3"]).unwrap();
        conn.execute(&u.insert_keys_sql(), ["1"]).unwrap();
        // Key 1: only the second column present (set to NULL); key 4: new.
        let tuples = vec!["(?, ?, ?)".to_string(), "(?, ?, ?)".to_string()];
        conn.execute(
            &u.insert_merge_sql(&tuples, &[1]),
            rusqlite::params!["1", None::<i64>, None::<i64>, "4", None::<i64>, 4],
        )
        .unwrap();
        // Key 2: the first column set, the second kept (flag off).
        conn.execute(
            &u.update_sql(),
            rusqlite::params!["2", "z", 99, true, false],
        )
        .unwrap();
        // Key 3: coalesce keeps what is unbound.
        conn.execute(
            &u.update_kept_sql(),
            rusqlite::params!["3", "w", None::<i64>],
        )
        .unwrap();
        // Keys 2 and 5 in one statement: 2 is there (its unbound column kept, the other
        // set: the text '7' takes the column's INTEGER affinity), 5 is new.
        conn.execute(
            &u.insert_kept_sql(2),
            rusqlite::params!["2", None::<i64>, "7", "5", "v", None::<i64>],
        )
        .unwrap();
        let rows: Vec<(String, Option<String>, Option<i64>)> = conn
            .prepare("SELECT * FROM \"t;x\" ORDER BY 1")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                ("1".into(), Some("x".into()), None),
                ("2".into(), Some("z".into()), Some(7)),
                ("3".into(), Some("w".into()), None),
                ("4".into(), None, Some(4)),
                ("5".into(), Some("v".into()), None),
            ]
        );
    }
}
