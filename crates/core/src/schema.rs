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
