//! Which empty fields are NULL (`Nulls`), against a reference: random CSV (quoted and
//! unquoted empty fields, quoted values with delimiters, quotes and line ends, numbers,
//! text, non-ASCII) split by a reference splitter that tells quoted fields from unquoted
//! ones; the reference types each column by the documented rules and SQLite stores its
//! values through its own INSERT. Every cell must be the same, on one thread and on
//! several (a file large enough to be parsed in parts).

use std::path::Path;

use liteload::rusqlite::Connection;
use liteload::{
    import, ColumnType, ImportOptions, Input, Lexeme, Nulls, Progress, Quoting, TypeGuess,
};
use proptest::prelude::*;

mod support;

/// A field as written: its text and whether it is quoted.
type Field = (String, bool);

/// RFC 4180 with `"` quotes and LF line ends: the records and, per field, whether it
/// was quoted.
fn reference_split(text: &str) -> Vec<Vec<Field>> {
    let mut records = vec![];
    let mut record = vec![];
    let mut field = String::new();
    let (mut quoted, mut in_quotes, mut started) = (false, false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' if !started => {
                (quoted, in_quotes, started) = (true, true, true);
            }
            ',' => {
                record.push((std::mem::take(&mut field), quoted));
                (quoted, started) = (false, false);
            }
            '\n' => {
                record.push((std::mem::take(&mut field), quoted));
                records.push(std::mem::take(&mut record));
                (quoted, started) = (false, false);
            }
            c => {
                started = true;
                field.push(c);
            }
        }
    }
    records
}

fn write_field(out: &mut String, (text, quoted): &Field) {
    if *quoted {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// A CSV of `width` columns (header `c1..cN`) and the given rows.
fn csv(width: usize, rows: &[Vec<Field>]) -> String {
    let mut out = (1..=width)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in rows {
        for (i, f) in row.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_field(&mut out, f);
        }
        out.push('\n');
    }
    out
}

fn field() -> impl Strategy<Value = Field> {
    prop_oneof![
        Just((String::new(), false)),
        Just((String::new(), true)),
        prop::sample::select(vec![
            "12",
            "-3",
            "007",
            "1.5",
            "0",
            "x",
            "é名",
            "9223372036854775808"
        ])
        .prop_map(|s| (s.to_string(), false)),
        prop::sample::select(vec![
            "12",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            " ",
            "🦀",
            "1e3"
        ])
        .prop_map(|s| (s.to_string(), true)),
    ]
}

fn rows() -> impl Strategy<Value = (usize, Vec<Vec<Field>>)> {
    (1usize..5).prop_flat_map(|w| {
        let row = prop::collection::vec(field(), w)
            .prop_filter("a line of one empty field is no record here", move |r| {
                w > 1 || r[0] != (String::new(), false)
            });
        (Just(w), prop::collection::vec(row, 1..40))
    })
}

fn load(dir: &Path, text: &str, nulls: Nulls, threads: usize) -> Connection {
    let src = dir.join("t.csv");
    std::fs::write(&src, text).unwrap();
    let db = dir.join("t.db");
    let mut o = ImportOptions::default();
    o.table = Some("t".into());
    o.sniff = false;
    o.delimiter = Some(b',');
    o.quoting = Quoting::Char(b'"');
    o.read.nulls = nulls;
    o.read.parse_threads = threads;
    import(&db, &[Input::Path(src)], &o, &Progress::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    Connection::open(db).unwrap()
}

/// Loads `text` and compares every cell with the reference's reading of it.
fn check(text: &str, nulls: Nulls, threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let records = reference_split(text);
    let (header, rows) = records.split_first().unwrap();
    let width = header.len();
    // Types from the first 10,000 records, by the CSV rules.
    let mut guesses = vec![TypeGuess::default(); width];
    for row in rows.iter().take(10_000) {
        for (g, (s, quoted)) in guesses.iter_mut().zip(row) {
            g.add(match () {
                _ if s.is_empty() && *quoted && nulls == Nulls::Unquoted => Lexeme::Text,
                _ => Lexeme::of_text(s),
            });
        }
    }
    let types: Vec<ColumnType> = guesses.iter().map(TypeGuess::resolve).collect();
    let c = load(dir.path(), text, nulls, threads);
    support::assert_intact(&c);
    let decl = types
        .iter()
        .enumerate()
        .map(|(i, t)| format!("c{} {}", i + 1, t.sql()))
        .collect::<Vec<_>>()
        .join(", ");
    let got_types: Vec<String> = c
        .prepare("SELECT type FROM pragma_table_info('t') ORDER BY cid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        got_types,
        types
            .iter()
            .map(|t| t.sql().to_string())
            .collect::<Vec<_>>(),
        "{text}"
    );
    c.execute_batch(&format!("CREATE TEMP TABLE want ({decl})"))
        .unwrap();
    let marks = vec!["?"; width].join(", ");
    for row in rows {
        let values = row
            .iter()
            .zip(&types)
            .map(|((s, quoted), ty)| support::bound(s, *quoted, *ty == ColumnType::Text, nulls));
        c.execute(
            &format!("INSERT INTO want VALUES ({marks})"),
            liteload::rusqlite::params_from_iter(values),
        )
        .unwrap();
    }
    assert_eq!(
        support::table_rows(&c, "main.t", false),
        support::table_rows(&c, "want", false),
        "{text}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn empty_fields_are_null_by_the_rule_chosen((width, rows) in rows(), mode in 0usize..3) {
        let nulls = [Nulls::Typed, Nulls::All, Nulls::Unquoted][mode];
        check(&csv(width, &rows), nulls, 1);
    }
}

#[test]
fn the_rule_holds_when_a_large_file_is_parsed_in_parts() {
    let fields: [Field; 6] = [
        (String::new(), false),
        (String::new(), true),
        ("42".into(), false),
        ("a,b".into(), true),
        ("x".into(), false),
        ("line\nend".into(), true),
    ];
    let mut rows = vec![];
    let mut k = 0usize;
    while rows.len() < 800_000 {
        rows.push(vec![
            fields[k % 6].clone(),
            fields[(k / 6) % 6].clone(),
            (((k * 7) % 1000).to_string(), k.is_multiple_of(5)),
        ]);
        k += 1;
    }
    let text = csv(3, &rows);
    assert!(
        text.len() > 9 << 20,
        "{} bytes: too few for the parallel reader",
        text.len()
    );
    for nulls in [Nulls::Unquoted, Nulls::Typed] {
        check(&text, nulls, 2);
    }
}
