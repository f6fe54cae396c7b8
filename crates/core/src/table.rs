//! Matching input columns to a table: creating it, or checking and widening an existing one.

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::schema::quote_ident;
use crate::types::ColumnType;

/// What a load does to a table that exists before it starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IfExists {
    /// Add the rows to it (columns matched by name).
    #[default]
    Append,
    /// Refuse the load before anything is written.
    Fail,
    /// Drop it and create it anew from the input, in the load's transaction: if the load
    /// fails, the old table is still there.
    Replace,
}

/// A table's column as SQLite declares it.
#[derive(Clone, Debug)]
pub struct TableColumn {
    /// The column's name.
    pub name: String,
    /// Its declared type, as written in CREATE TABLE.
    pub declared: String,
}

/// The table's columns, or `None` when there is no table by that name.
pub fn existing_columns(
    conn: &Connection,
    table: &str,
) -> Result<Option<(String, Vec<TableColumn>)>> {
    let ctx = |e| Error::sqlite(format!("reading the schema of {}", quote_ident(table)), e);
    let actual: Option<(String, String)> = conn
        .query_row(
            "SELECT name, type FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE \
             ORDER BY type IN ('table', 'view') DESC LIMIT 1",
            [table],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })
        .map_err(ctx)?;
    let Some((actual, kind)) = actual else {
        return Ok(None);
    };
    if kind == "view" {
        return Err(Error::schema(format!(
            "{} is a view, which rows cannot be written into; name a table",
            quote_ident(&actual)
        )));
    }
    if kind != "table" {
        // Tables, indexes and triggers share SQLite's one namespace.
        return Err(Error::schema(format!(
            "the file has {} {} (a table cannot share its name, SQLite ignoring case); name another table",
            if kind == "index" { "an index" } else { "a trigger" },
            quote_ident(&actual)
        )));
    }
    let mut stmt = conn
        .prepare("SELECT name, type FROM pragma_table_info(?1)")
        .map_err(ctx)?;
    let cols = stmt
        .query_map([&actual], |r| {
            Ok(TableColumn {
                name: r.get(0)?,
                declared: r.get(1)?,
            })
        })
        .map_err(ctx)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(ctx)?;
    Ok(Some((actual, cols)))
}

/// The key rows of `table` are matched by: its primary key's columns, else those of its
/// one UNIQUE index. An error naming what there is when neither settles it.
pub fn unique_key(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let ctx = |e| Error::sqlite(format!("reading the keys of {}", quote_ident(table)), e);
    let pk = primary_key(conn, table)?;
    if !pk.is_empty() {
        return Ok(pk);
    }
    let unique: Vec<String> = conn
        .prepare("SELECT name FROM pragma_index_list(?1) WHERE \"unique\" AND partial = 0")
        .and_then(|mut st| {
            st.query_map([table], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx)?;
    match unique.as_slice() {
        [one] => conn
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .and_then(|mut st| {
                st.query_map([one], |r| r.get::<_, Option<String>>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(ctx)?
            .into_iter()
            .map(|c| {
                c.ok_or_else(|| {
                    Error::schema(format!(
                        "the unique index {} of {} is on an expression, which rows cannot be matched by; name the key columns",
                        quote_ident(one),
                        quote_ident(table)
                    ))
                })
            })
            .collect(),
        [] => Err(Error::usage(format!(
            "{} has no primary key and no UNIQUE index: name the key columns (and give the table a UNIQUE index on them)",
            quote_ident(table)
        ))),
        many => Err(Error::usage(format!(
            "{} has no primary key and {} UNIQUE indexes: name the key columns",
            quote_ident(table),
            many.len()
        ))),
    }
}

/// The columns of `table`'s primary key, in the key's order (none without one).
fn primary_key(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let ctx = |e| Error::sqlite(format!("reading the keys of {}", quote_ident(table)), e);
    let mut pk: Vec<(i64, String)> = conn
        .prepare("SELECT pk, name FROM pragma_table_info(?1) WHERE pk > 0")
        .and_then(|mut st| {
            st.query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(ctx)?;
    pk.sort();
    Ok(pk.into_iter().map(|(_, n)| n).collect())
}

/// Whether `key` (a set of columns, ASCII case ignored) is `table`'s primary key or the
/// columns of one of its UNIQUE indexes that is not partial: what an upsert's
/// `ON CONFLICT (key)` needs.
pub fn is_unique_key(conn: &Connection, table: &str, key: &[String]) -> Result<bool> {
    let same = |cols: &[String]| {
        cols.len() == key.len()
            && cols
                .iter()
                .all(|c| key.iter().any(|k| k.eq_ignore_ascii_case(c)))
    };
    let pk = primary_key(conn, table)?;
    if !pk.is_empty() && same(&pk) {
        return Ok(true);
    }
    let held = held_indexes(conn, table)?;
    Ok(held.iter().any(|ix| {
        ix.unique
            && ix.columns.iter().all(Option::is_some)
            && same(&ix.columns.iter().flatten().cloned().collect::<Vec<_>>())
    }))
}

/// An index a table has: whether it is UNIQUE and its key columns (`None` for an
/// expression).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeldIndex {
    pub(crate) unique: bool,
    pub(crate) columns: Vec<Option<String>>,
}

/// The SQL that lists `?1`'s indexes that are not partial, one row per key column in
/// order: index name, unique, column name (NULL for an expression). Plain SQL, so that a
/// cluster answers it as a file does.
pub(crate) const HELD_INDEXES_SQL: &str =
    "SELECT il.name, il.\"unique\", ii.name FROM pragma_index_list(?1) il \
     JOIN pragma_index_info(il.name) ii WHERE il.partial = 0 ORDER BY il.seq, il.name, ii.seqno";

/// Groups [`HELD_INDEXES_SQL`]'s rows into indexes.
pub(crate) fn group_held(
    rows: impl IntoIterator<Item = (String, bool, Option<String>)>,
) -> Vec<HeldIndex> {
    let mut out: Vec<(String, HeldIndex)> = vec![];
    for (name, unique, column) in rows {
        match out.last_mut() {
            Some((n, ix)) if *n == name => ix.columns.push(column),
            _ => out.push((
                name,
                HeldIndex {
                    unique,
                    columns: vec![column],
                },
            )),
        }
    }
    out.into_iter().map(|(_, ix)| ix).collect()
}

/// The indexes `table` has in the database `conn` holds (see [`HeldIndex`]).
pub(crate) fn held_indexes(conn: &Connection, table: &str) -> Result<Vec<HeldIndex>> {
    let ctx = |e| Error::sqlite(format!("reading the indexes of {}", quote_ident(table)), e);
    let mut stmt = conn.prepare(HELD_INDEXES_SQL).map_err(ctx)?;
    let rows = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(ctx)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(ctx)?;
    Ok(group_held(rows))
}

/// Whether `held` already does what `ix` asks: the same key columns in order (ASCII case
/// ignored), and UNIQUE if `ix` is.
pub(crate) fn already_held(held: &[HeldIndex], ix: &IndexSpec) -> bool {
    held.iter().any(|h| {
        (h.unique || !ix.unique)
            && h.columns.len() == ix.columns.len()
            && h.columns
                .iter()
                .zip(&ix.columns)
                .all(|(a, b)| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(b)))
    })
}

/// `CREATE TABLE` for new columns with their types. A single INTEGER key column becomes
/// `INTEGER PRIMARY KEY` (the rowid); other keys become a `PRIMARY KEY (…)` clause.
pub fn create_sql(table: &str, columns: &[(String, ColumnType)], pk: &[String]) -> String {
    create_sql_referencing(table, columns, pk, &Constraints::default())
}

/// Columns that reference the key of another table (a nested child's reference to its
/// parent row, a source database's foreign key), declared as a FOREIGN KEY: `columns`
/// and `keys` pair up, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ForeignKey {
    pub(crate) columns: Vec<String>,
    pub(crate) table: String,
    pub(crate) keys: Vec<String>,
}

/// A copied parent table of a foreign key: its name, its INTEGER PRIMARY KEY column, its
/// indexes, and the key's columns by their names here (`None`: one is not copied).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) type ParentKey<'a> = (
    &'a str,
    Option<&'a str>,
    &'a [IndexSpec],
    Option<Vec<String>>,
);

/// A source database's foreign key as the copy declares it, or why it does not: `child`
/// its columns by their names here (`None`: one is not copied); `parent` the referenced
/// table where it is copied (its name, its INTEGER PRIMARY KEY column, its indexes and
/// the key's columns by their names here, `None` where one is not copied), shown in a
/// reason as `shown_parent` with the key's source names `keys`.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn foreign_key(
    child: Option<Vec<String>>,
    parent: Option<ParentKey<'_>>,
    shown_parent: &str,
    keys: &[String],
) -> std::result::Result<ForeignKey, String> {
    let Some((table, rowid, indexes, here)) = parent else {
        return Err(format!(
            "the table it references, {shown_parent}, is not copied"
        ));
    };
    let Some(columns) = child else {
        return Err("a column of it is not copied".into());
    };
    match here {
        Some(k) if is_parent_key(rowid, indexes, &k) => Ok(ForeignKey {
            columns,
            table: table.to_string(),
            keys: k,
        }),
        _ => Err(format!(
            "{} of {shown_parent} {} no key or UNIQUE index of its own here",
            keys.join(", "),
            if keys.len() == 1 { "has" } else { "have" }
        )),
    }
}

/// Whether `keys` (a parent table's columns, by name) are a key SQLite takes for a
/// foreign key: the table's INTEGER PRIMARY KEY `rowid` alone, or exactly the columns of
/// one of its UNIQUE `indexes` (in any order, as SQLite looks the index up).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn is_parent_key(rowid: Option<&str>, indexes: &[IndexSpec], keys: &[String]) -> bool {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    (keys.len() == 1 && rowid.is_some_and(|r| same(r, &keys[0])))
        || indexes.iter().any(|ix| {
            ix.unique
                && ix.columns.len() == keys.len()
                && keys.iter().all(|k| ix.columns.iter().any(|c| same(c, k)))
                && ix.columns.iter().all(|c| keys.iter().any(|k| same(c, k)))
        })
}

/// What a table made by a load declares besides its columns' types and its key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Constraints {
    /// Columns referencing other tables of the load.
    pub(crate) foreign_keys: Vec<ForeignKey>,
    /// Columns' defaults, as SQL that SQLite evaluates (a literal), by column name.
    pub(crate) defaults: Vec<(String, String)>,
    /// CHECK constraints: each its name and an expression SQLite evaluates (made by the
    /// library from a source's definition, never the input's text; every row the load
    /// writes satisfies it, as its source held it to it).
    pub(crate) checks: Vec<(String, String)>,
}

/// [`create_sql`], with `constraints` declared: each default on its column, each
/// foreign key and CHECK as a table constraint.
pub(crate) fn create_sql_referencing(
    table: &str,
    columns: &[(String, ColumnType)],
    pk: &[String],
    constraints: &Constraints,
) -> String {
    let single_int_pk = pk.len() == 1
        && columns
            .iter()
            .any(|(n, t)| n.eq_ignore_ascii_case(&pk[0]) && *t == ColumnType::Integer);
    let mut parts: Vec<String> = columns
        .iter()
        .map(|(n, t)| {
            let mut s = format!("{} {}", quote_ident(n), t.sql());
            if single_int_pk && n.eq_ignore_ascii_case(&pk[0]) {
                s.push_str(" PRIMARY KEY");
            }
            if let Some((_, d)) = constraints.defaults.iter().find(|(c, _)| c == n) {
                s.push_str(" DEFAULT ");
                s.push_str(d);
            }
            s
        })
        .collect();
    if !pk.is_empty() && !single_int_pk {
        let keys: Vec<String> = pk.iter().map(|k| quote_ident(k)).collect();
        parts.push(format!("PRIMARY KEY ({})", keys.join(", ")));
    }
    let list = |names: &[String]| {
        names
            .iter()
            .map(|n| quote_ident(n))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for fk in &constraints.foreign_keys {
        parts.push(format!(
            "FOREIGN KEY ({}) REFERENCES {} ({})",
            list(&fk.columns),
            quote_ident(&fk.table),
            list(&fk.keys)
        ));
    }
    for (name, expr) in &constraints.checks {
        parts.push(format!("CONSTRAINT {} CHECK ({expr})", quote_ident(name)));
    }
    create_table_sql(table, &parts)
}

/// `CREATE TABLE` of `table` (quoted here) from column definitions and table
/// constraints, already SQL (their names quoted). The one place every writer's table
/// text is made: import, generate and ingest create tables that read alike.
pub fn create_table_sql(table: &str, definitions: &[String]) -> String {
    format!(
        "CREATE TABLE {} (\n  {}\n)",
        quote_ident(table),
        definitions.join(",\n  ")
    )
}

/// `ALTER TABLE … ADD COLUMN`.
pub fn add_column_sql(table: &str, name: &str, ty: ColumnType) -> String {
    format!(
        "ALTER TABLE {} ADD COLUMN {} {}",
        quote_ident(table),
        quote_ident(name),
        ty.sql()
    )
}

/// An index to build after the rows are in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSpec {
    /// The indexed columns, in order.
    pub columns: Vec<String>,
    /// Whether no two rows may have the same key.
    pub unique: bool,
    /// The name it should have (a source database's own), kept where no other object of
    /// the file has it; `None` for `idx_TABLE_COLUMNS`. Either way the name it gets is
    /// one no other object of the file has: a taken one gets a suffix (`_2`, …).
    pub name: Option<String>,
}

impl IndexSpec {
    /// An index on `columns`, UNIQUE or not, named by the table and columns.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(columns: I, unique: bool) -> Self {
        IndexSpec {
            columns: columns.into_iter().map(Into::into).collect(),
            unique,
            name: None,
        }
    }

    /// The name this index asks for on `table`: its own, else `idx_T_a_b`. Only a
    /// wish: the name it is created under is one no other object of the file has (a
    /// suffix where this one is taken).
    pub fn wanted_name(&self, table: &str) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("idx_{}_{}", table, self.columns.join("_")))
    }

    /// The error for building this index on `table`: rows that break a unique index are
    /// a plan error (the index does not fit the data), with both engines alike; any other
    /// failure is SQLite's.
    pub fn build_error(&self, table: &str, e: rusqlite::Error) -> Error {
        let what = format!(
            "the index on {} ({})",
            quote_ident(table),
            self.columns.join(", ")
        );
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) {
            Error::constraint(
                crate::error::extended_code(&e),
                None,
                format!("{what}: two rows have the same key ({e})"),
            )
        } else {
            Error::sqlite(format!("creating {what}"), e)
        }
    }

    /// `CREATE [UNIQUE] INDEX "name" ON "T" ("a", "b")`: the text SQLite keeps in
    /// `sqlite_schema` for it, too. `name` must be free in the file.
    pub fn create_sql(&self, table: &str, name: &str) -> String {
        let cols: Vec<String> = self.columns.iter().map(|c| quote_ident(c)).collect();
        format!(
            "CREATE {}INDEX {} ON {} ({})",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(name),
            quote_ident(table),
            cols.join(", ")
        )
    }
}

/// Refuses to add rows to an existing table `actual` (with columns `have`) unless the
/// spec's columns `names` are the same, in the same order.
pub(crate) fn check_same_columns(actual: &str, have: &[String], names: &[String]) -> Result<()> {
    let same = have.len() == names.len()
        && have
            .iter()
            .zip(names)
            .all(|(a, b)| a.eq_ignore_ascii_case(b));
    if same {
        return Ok(());
    }
    Err(crate::error::Error::schema(format!(
        "table {} exists with columns ({}), but the spec has ({})",
        crate::schema::quote_ident(actual),
        have.join(", "),
        names.join(", ")
    ))
    .with_hint(crate::error::Hint::OtherTable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_key_becomes_the_rowid() {
        let cols = vec![
            ("id".to_string(), ColumnType::Integer),
            ("n a\"me".to_string(), ColumnType::Text),
        ];
        assert_eq!(
            create_sql("t;x", &cols, &["id".into()]),
            "CREATE TABLE \"t;x\" (\n  \"id\" INTEGER PRIMARY KEY,\n  \"n a\"\"me\" TEXT\n)"
        );
        assert!(create_sql("t", &cols, &["id".into(), "n a\"me".into()])
            .contains("PRIMARY KEY (\"id\", \"n a\"\"me\")"));
    }

    #[test]
    fn created_tables_are_valid_sql() -> rusqlite::Result<()> {
        let c = Connection::open_in_memory()?;
        let cols = vec![
            ("select".to_string(), ColumnType::Integer),
            ("".to_string(), ColumnType::Real),
        ];
        c.execute_batch(&create_sql("my \"table\"", &cols, &[]))?;
        c.execute_batch(&IndexSpec::new(["select"], true).create_sql("my \"table\"", "idx \"x\""))?;
        let found = existing_columns(&c, "MY \"TABLE\"")
            .map_err(|e| rusqlite::Error::InvalidParameterName(e.to_string()))?;
        let (name, cols) = found.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
        assert_eq!(name, "my \"table\"");
        assert_eq!(cols.len(), 2);
        Ok(())
    }
}
