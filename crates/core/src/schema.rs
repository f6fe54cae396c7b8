//! Column names: cleaning what the input gives, and quoting identifiers for SQL.

use std::collections::HashSet;

/// Quotes an identifier for SQL: wrapped in double quotes, inner quotes doubled. Every
/// table, column and index name liteload puts into SQL goes through here, so a name from
/// the input is never SQL text.
pub fn quote_ident(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for c in name.chars() {
        if c == '"' {
            s.push('"');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// SQLite's limit on a table's columns (SQLITE_MAX_COLUMN as bundled).
pub const MAX_COLUMNS: usize = 2000;

/// Why SQLite would refuse `name` for a table liteload creates, if it would: a NUL byte
/// (SQL text ends there) or the `sqlite_` prefix SQLite keeps for its own tables (any
/// ASCII case: `sqlite_master`, `SQLITE_schema`, `sqlite_stat1`, …). Every other name is
/// fine once quoted by [`quote_ident`]. Both engines check here before creating anything.
pub fn table_name_problem(name: &str) -> Option<String> {
    if name.contains('\0') {
        return Some(format!("table name {name:?} has a NUL byte"));
    }
    if name.len() >= 7 && name.as_bytes()[..7].eq_ignore_ascii_case(b"sqlite_") {
        return Some(format!(
            "table name {name:?} starts with \"sqlite_\", which SQLite reserves for its own tables"
        ));
    }
    None
}

/// Why SQLite would refuse `name` as a column name, if it would: a NUL byte.
pub fn column_name_problem(name: &str) -> Option<String> {
    name.contains('\0')
        .then(|| format!("column name {name:?} has a NUL byte"))
}

/// Checks a new table's name and column names (see [`table_name_problem`] and
/// [`column_name_problem`]), and that no two columns are the same name to SQLite (ASCII
/// case ignored). A plan error names the first problem.
pub fn check_new_table<'a>(
    table: &str,
    columns: impl IntoIterator<Item = &'a str>,
) -> crate::Result<()> {
    if let Some(p) = table_name_problem(table) {
        return Err(crate::Error::usage(p));
    }
    let mut seen: HashSet<String> = HashSet::new();
    for c in columns {
        if seen.len() == MAX_COLUMNS {
            return Err(crate::Error::usage(format!(
                "more than SQLite's limit of {MAX_COLUMNS} columns per table"
            )));
        }
        if let Some(p) = column_name_problem(c) {
            return Err(crate::Error::usage(p));
        }
        if !seen.insert(c.to_ascii_lowercase()) {
            return Err(crate::Error::usage(format!(
                "column name {c:?} is used twice (SQLite ignores case in names)"
            )));
        }
    }
    Ok(())
}

/// Makes column names usable: an empty (or all-blank) name becomes `cN` (N is the 1-based
/// column number), and a name equal to an earlier one, ignoring ASCII case as SQLite does,
/// gets `_2`, `_3`, … Returns the names and one note per change, for the user.
pub fn clean_names(raw: &[String]) -> (Vec<String>, Vec<String>) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(raw.len());
    let mut notes = vec![];
    for (i, name) in raw.iter().enumerate() {
        let base = if name.trim().is_empty() {
            let n = format!("c{}", i + 1);
            notes.push(format!(
                "column {} has no name; it is called {:?}",
                i + 1,
                n
            ));
            n
        } else {
            name.clone()
        };
        let mut candidate = base.clone();
        let mut k = 2;
        while seen.contains(&candidate.to_ascii_lowercase()) {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        if candidate != base {
            notes.push(format!(
                "column {} repeats the name {:?}; it is called {:?}",
                i + 1,
                base,
                candidate
            ));
        }
        seen.insert(candidate.to_ascii_lowercase());
        out.push(candidate);
    }
    (out, notes)
}

/// Names `c1..cN`, for input without a header.
pub fn numbered_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("c{i}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_doubles_inner_quotes() {
        assert_eq!(
            quote_ident("a\"b; DROP TABLE x"),
            "\"a\"\"b; DROP TABLE x\""
        );
        assert_eq!(quote_ident("select"), "\"select\"");
    }

    #[test]
    fn names_sqlite_refuses_are_found() {
        for bad in [
            "sqlite_master",
            "SQLITE_SCHEMA",
            "sqlite_x",
            "a\0b",
            "Sqlite_",
        ] {
            assert!(table_name_problem(bad).is_some(), "{bad}");
        }
        for good in ["sqlite", "my sqlite_master", "", "\"; DROP", "ünï"] {
            assert!(table_name_problem(good).is_none(), "{good}");
        }
        assert!(column_name_problem("a\0").is_some());
        assert!(column_name_problem("sqlite_master").is_none());
        assert!(check_new_table("t", ["a", "A"]).is_err());
        assert!(check_new_table("t", ["a", "\u{c4}", "\u{e4}"]).is_ok());
        let many: Vec<String> = (0..=MAX_COLUMNS).map(|i| format!("c{i}")).collect();
        assert!(check_new_table("t", many.iter().map(String::as_str)).is_err());
        assert!(check_new_table("t", many[1..].iter().map(String::as_str)).is_ok());
    }

    /// Every name the checks let through makes a CREATE TABLE that SQLite runs, and
    /// every name SQLite refuses is caught by them.
    #[test]
    fn checks_agree_with_sqlite() -> rusqlite::Result<()> {
        let conn = rusqlite::Connection::open_in_memory()?;
        let names = [
            "t",
            "sqlite_master",
            "sqlite_schema",
            "SQLITE_temp_master",
            "sqlite_stat1",
            "x\0y",
            "\0",
            "",
            " ",
            "\"",
            "a\"b",
            "[x]",
            "`y`",
            "select",
            "ÄÖ",
            "sqlite",
            "sqlitex",
            "main",
            "temp",
            "\u{1F600}",
        ];
        for (i, n) in names.iter().enumerate() {
            let ours = check_new_table(n, ["c"]).is_ok();
            let sql = format!("CREATE TABLE {}(c)", quote_ident(n));
            let theirs = !n.contains('\0') && conn.execute_batch(&sql).is_ok();
            assert_eq!(ours, theirs, "table {n:?} ({i})");
            if theirs {
                conn.execute_batch(&format!("DROP TABLE {}", quote_ident(n)))?;
            }
        }
        Ok(())
    }

    #[test]
    fn empty_and_repeated_names_are_renamed() {
        let raw: Vec<String> = ["id", "", "Name", "name", "id", "name_2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (names, notes) = clean_names(&raw);
        assert_eq!(
            names,
            vec!["id", "c2", "Name", "name_2", "id_2", "name_2_2"]
        );
        assert_eq!(notes.len(), 4);
    }
}
