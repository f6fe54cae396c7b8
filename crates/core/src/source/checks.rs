//! A source database's CHECK constraints as SQLite expressions, where SQLite evaluates
//! them exactly as the source does on the values the copy stores ([`to_sqlite`]); any
//! other is left out of the copy and named in its summary.
//!
//! What is taken, from PostgreSQL (`CHECK (…)` as `pg_get_constraintdef` prints it):
//! - columns whose values the copy stores as PostgreSQL compares them: integers and
//!   floats (SQLite's INTEGER and REAL), and text copied as it is (`text`, `varchar`:
//!   not `char(n)`, which pads, nor a value the copy writes as other text);
//! - number and string literals, and casts that change nothing (a number to a number
//!   type, text to a text type);
//! - `AND`, `OR`, `NOT`, `IS [NOT] NULL`, parentheses; `=`, `<>` between two numbers or
//!   two texts; `<`, `<=`, `>`, `>=` between numbers only (text order is the database's
//!   collation in PostgreSQL, bytes in SQLite); `+`, `-`, `*` on numbers (`/` and `%`
//!   are left: an integer's division by zero is an error in PostgreSQL and NULL in
//!   SQLite); `x = ANY (ARRAY[…])` (what `IN (…)` reads back as) as `x IN (…)`;
//!   `length`, `char_length` and `character_length` of text (characters, in both).
//!
//! From MySQL and MariaDB (`CHECK_CONSTRAINTS.CHECK_CLAUSE`, names in backticks): the
//! same over integer and DOUBLE columns and number literals, with `x IN (…)`; no text
//! (MySQL compares text by the column's collation, often blind to case and to trailing
//! spaces) and no FLOAT column (compared as the single-precision value, which the copy
//! stores as its shortest decimal).
//!
//! A PostgreSQL constraint marked `NOT VALID` is never taken: rows from before it may
//! break it. Each expression is written with every identifier quoted and every literal
//! SQLite's own, never the input's text.

use crate::schema::quote_ident;

/// How a column's or a subexpression's values compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Number,
    Text,
    /// A truth value (a comparison, `AND`, …).
    Bool,
}

/// Whose SQL a constraint is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `CHECK (…)` as `pg_get_constraintdef` prints it.
    Postgres,
    /// The clause alone, as MySQL and MariaDB keep it (names in backticks).
    MySql,
}

/// SQLite's expression for the constraint `def` of `dialect`, or `None` where it is not
/// one SQLite evaluates as the source does (see the module notes). `column` gives a
/// source column's name in SQLite and its class, or `None` for a column the copy stores
/// otherwise.
pub(crate) fn to_sqlite(
    def: &str,
    dialect: Dialect,
    column: &dyn Fn(&str) -> Option<(String, Class)>,
) -> Option<String> {
    let body = match dialect {
        Dialect::Postgres => def.trim().strip_prefix("CHECK")?.trim_start(),
        Dialect::MySql => def.trim(),
    };
    if body.ends_with("NOT VALID") {
        return None;
    }
    let tokens = tokenize(body, dialect)?;
    let mut p = Parser {
        tokens,
        at: 0,
        column,
    };
    let (sql, class) = p.expr()?;
    (p.at == p.tokens.len() && class == Class::Bool).then_some(sql)
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// A word: a keyword or an unquoted name (PostgreSQL prints names that need no
    /// quotes without them, in lower case).
    Word(String),
    /// A quoted name.
    Quoted(String),
    Number(String),
    String(String),
    Punct(&'static str),
}

fn tokenize(s: &str, dialect: Dialect) -> Option<Vec<Token>> {
    const PUNCT: [&str; 16] = [
        "::", ">=", "<=", "<>", "!=", "(", ")", "[", "]", ",", "=", "<", ">", "+", "-", "*",
    ];
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'\'' && dialect == Dialect::Postgres {
            let (text, next) = quoted(b, i)?;
            i = next;
            out.push(Token::String(text));
        } else if (c == b'"' && dialect == Dialect::Postgres)
            || (c == b'`' && dialect == Dialect::MySql)
        {
            let (text, next) = quoted(b, i)?;
            i = next;
            out.push(Token::Quoted(text));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let n = &s[start..i];
            n.parse::<f64>().ok().filter(|f| f.is_finite())?;
            out.push(Token::Number(n.to_string()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(Token::Word(s[start..i].to_string()));
        } else {
            let p = PUNCT.iter().find(|p| s[i..].starts_with(**p))?;
            out.push(Token::Punct(p));
            i += p.len();
        }
    }
    Some(out)
}

/// The string or name quoted at `b[i]` (`'…'` or `"…"`, the quote doubled inside) and
/// the index after it.
fn quoted(b: &[u8], mut i: usize) -> Option<(String, usize)> {
    let q = b[i];
    let mut text = Vec::new();
    i += 1;
    loop {
        match *b.get(i)? {
            x if x == q && b.get(i + 1) == Some(&q) => {
                text.push(q);
                i += 2;
            }
            x if x == q => return Some((String::from_utf8(text).ok()?, i + 1)),
            x => {
                text.push(x);
                i += 1;
            }
        }
    }
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    column: &'a dyn Fn(&str) -> Option<(String, Class)>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn punct(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(q)) if *q == p) {
            self.at += 1;
            return true;
        }
        false
    }

    fn word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w)) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expr(&mut self) -> Option<(String, Class)> {
        let (mut sql, mut class) = self.and()?;
        while self.word("OR") {
            let (r, rc) = self.and()?;
            (class == Class::Bool && rc == Class::Bool).then_some(())?;
            sql = format!("({sql} OR {r})");
            class = Class::Bool;
        }
        Some((sql, class))
    }

    fn and(&mut self) -> Option<(String, Class)> {
        let (mut sql, class) = self.not()?;
        while self.word("AND") {
            let (r, rc) = self.not()?;
            (class == Class::Bool && rc == Class::Bool).then_some(())?;
            sql = format!("({sql} AND {r})");
        }
        Some((sql, class))
    }

    fn not(&mut self) -> Option<(String, Class)> {
        if self.word("NOT") {
            let (e, c) = self.not()?;
            (c == Class::Bool).then_some(())?;
            return Some((format!("(NOT {e})"), Class::Bool));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Option<(String, Class)> {
        let (l, lc) = self.sum()?;
        if self.word("IS") {
            let not = self.word("NOT");
            self.word("NULL").then_some(())?;
            let is = if not { "IS NOT NULL" } else { "IS NULL" };
            return Some((format!("({l} {is})"), Class::Bool));
        }
        if self.word("IN") {
            // `x IN (a, b, …)`, as MySQL keeps it.
            (lc != Class::Bool).then_some(())?;
            self.punct("(").then_some(())?;
            let items = self.list(lc)?;
            self.punct(")").then_some(())?;
            return Some((format!("({l} IN ({}))", items.join(", ")), Class::Bool));
        }
        let op = match self.peek() {
            Some(Token::Punct(p)) if matches!(*p, "=" | "<>" | "!=" | "<" | "<=" | ">" | ">=") => {
                *p
            }
            _ => return Some((l, lc)),
        };
        self.at += 1;
        if op == "=" && self.word("ANY") {
            return self.any(l, lc);
        }
        let (r, rc) = self.sum()?;
        let ordered = matches!(op, "<" | "<=" | ">" | ">=");
        let fits = lc == rc && (lc == Class::Number || (lc == Class::Text && !ordered));
        fits.then_some(())?;
        let op = if op == "!=" { "<>" } else { op };
        Some((format!("({l} {op} {r})"), Class::Bool))
    }

    /// `l = ANY (ARRAY[a, b, …])`, the array's elements of `l`'s class.
    fn any(&mut self, l: String, lc: Class) -> Option<(String, Class)> {
        (lc != Class::Bool).then_some(())?;
        self.punct("(").then_some(())?;
        // `(ARRAY[…])::text[]` as PostgreSQL prints a cast array, or `ARRAY[…]`.
        let wrapped = self.punct("(");
        self.word("ARRAY").then_some(())?;
        self.punct("[").then_some(())?;
        let items = self.list(lc)?;
        self.punct("]").then_some(())?;
        if wrapped {
            self.punct(")").then_some(())?;
            if self.punct("::") {
                let c = self.type_name()?;
                (c == lc).then_some(())?;
                self.punct("[").then_some(())?;
                self.punct("]").then_some(())?;
            }
        }
        self.punct(")").then_some(())?;
        Some((format!("({l} IN ({}))", items.join(", ")), Class::Bool))
    }

    /// Expressions of class `class`, separated by commas.
    fn list(&mut self, class: Class) -> Option<Vec<String>> {
        let mut items = vec![];
        loop {
            let (e, c) = self.sum()?;
            (c == class).then_some(())?;
            items.push(e);
            if !self.punct(",") {
                return Some(items);
            }
        }
    }

    fn sum(&mut self) -> Option<(String, Class)> {
        let (mut sql, class) = self.product()?;
        loop {
            let op = if self.punct("+") {
                "+"
            } else if self.punct("-") {
                "-"
            } else {
                return Some((sql, class));
            };
            let (r, rc) = self.product()?;
            (class == Class::Number && rc == Class::Number).then_some(())?;
            sql = format!("({sql} {op} {r})");
        }
    }

    fn product(&mut self) -> Option<(String, Class)> {
        let (mut sql, class) = self.unary()?;
        while self.punct("*") {
            let (r, rc) = self.unary()?;
            (class == Class::Number && rc == Class::Number).then_some(())?;
            sql = format!("({sql} * {r})");
        }
        Some((sql, class))
    }

    fn unary(&mut self) -> Option<(String, Class)> {
        if self.punct("-") {
            let (e, c) = self.unary()?;
            (c == Class::Number).then_some(())?;
            return Some((format!("(- {e})"), c));
        }
        // PostgreSQL prints a negative constant as a string cast to its type
        // (`'-2'::integer`): that is the number.
        if let Some(Token::String(text)) = self.peek().cloned() {
            let number = text.parse::<f64>().is_ok_and(f64::is_finite)
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
            let at = self.at;
            self.at += 1;
            if number && self.punct("::") && self.type_name() == Some(Class::Number) {
                return self.casts(text, Class::Number);
            }
            self.at = at;
        }
        let (sql, class) = self.primary()?;
        self.casts(sql, class)
    }

    /// Casts after an operand: each must keep its class (a number to a number type,
    /// text to a text type).
    fn casts(&mut self, sql: String, class: Class) -> Option<(String, Class)> {
        while self.punct("::") {
            let to = self.type_name()?;
            (to == class).then_some(())?;
        }
        Some((sql, class))
    }

    /// A type name after `::`: the class of the types whose cast changes nothing here.
    fn type_name(&mut self) -> Option<Class> {
        let Some(Token::Word(w)) = self.peek().cloned() else {
            return None;
        };
        self.at += 1;
        let class = match w.to_ascii_lowercase().as_str() {
            "integer" | "bigint" | "smallint" | "int" | "int4" | "int8" | "int2" | "numeric"
            | "real" => Class::Number,
            "double" => {
                self.word("precision").then_some(())?;
                Class::Number
            }
            "text" | "varchar" => Class::Text,
            "character" => {
                self.word("varying").then_some(())?;
                Class::Text
            }
            _ => return None,
        };
        // A length or precision (`character varying(10)`, `numeric(5,2)`) would cut or
        // round the value: not a cast that changes nothing.
        if matches!(self.peek(), Some(Token::Punct("("))) {
            return None;
        }
        Some(class)
    }

    fn primary(&mut self) -> Option<(String, Class)> {
        let t = self.peek()?.clone();
        self.at += 1;
        match t {
            Token::Punct("(") => {
                let e = self.expr()?;
                self.punct(")").then_some(())?;
                Some(e)
            }
            Token::Number(n) => Some((n, Class::Number)),
            Token::String(s) => Some((format!("'{}'", s.replace('\'', "''")), Class::Text)),
            Token::Quoted(name) => (self.column)(&name).map(|(n, c)| (quote_ident(&n), c)),
            Token::Word(w) => {
                if self.punct("(") {
                    let f = w.to_ascii_lowercase();
                    matches!(f.as_str(), "length" | "char_length" | "character_length")
                        .then_some(())?;
                    let (arg, c) = self.expr()?;
                    (c == Class::Text).then_some(())?;
                    self.punct(")").then_some(())?;
                    return Some((format!("length({arg})"), Class::Number));
                }
                // Keywords are not names here (a column so named is printed quoted).
                let keyword = [
                    "and", "or", "not", "is", "null", "true", "false", "any", "array", "all",
                    "some", "like", "ilike", "between", "in", "case", "when", "then", "else",
                    "end", "cast", "collate",
                ]
                .contains(&w.to_ascii_lowercase().as_str());
                if keyword {
                    return None;
                }
                (self.column)(&w).map(|(n, c)| (quote_ident(&n), c))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(name: &str) -> Option<(String, Class)> {
        match name {
            "age" | "qty" | "price" => Some((name.to_string(), Class::Number)),
            "status" | "Name X" => Some((name.to_string(), Class::Text)),
            _ => None,
        }
    }

    fn sql(def: &str) -> Option<String> {
        to_sqlite(def, Dialect::Postgres, &columns)
    }

    #[test]
    fn what_mysql_keeps_becomes_sqlite_for_numbers() {
        let my = |def: &str| {
            to_sqlite(def, Dialect::MySql, &|n: &str| {
                matches!(n, "age" | "qty").then(|| (n.to_string(), Class::Number))
            })
        };
        assert_eq!(my("`age` >= 0").as_deref(), Some("(\"age\" >= 0)"));
        assert_eq!(
            my("`age` in (1,2,-3) and `qty` * 2 < 10").as_deref(),
            Some("((\"age\" IN (1, 2, (- 3))) AND ((\"qty\" * 2) < 10))")
        );
        assert_eq!(
            my("(`age` is not null)").as_deref(),
            Some("(\"age\" IS NOT NULL)")
        );
        for def in [
            "`name` <> 'x'",
            "`age` <=> 1",
            "`age` div 2 > 1",
            "\"age\" > 1",
            "`age` > '1'",
        ] {
            assert_eq!(my(def), None, "{def}");
        }
    }

    #[test]
    fn what_postgres_prints_becomes_sqlite_where_both_agree() {
        assert_eq!(sql("CHECK ((age >= 0))").as_deref(), Some("(\"age\" >= 0)"));
        assert_eq!(
            sql("CHECK (((qty > 0) AND (price <= (100)::numeric)))").as_deref(),
            Some("((\"qty\" > 0) AND (\"price\" <= 100))")
        );
        assert_eq!(
            sql("CHECK (((status)::text = ANY ((ARRAY['new'::character varying, 'it''s'::character varying])::text[])))").as_deref(),
            Some("(\"status\" IN ('new', 'it''s'))")
        );
        assert_eq!(
            sql("CHECK ((char_length(\"Name X\") > 2))").as_deref(),
            Some("(length(\"Name X\") > 2)")
        );
        assert_eq!(
            sql("CHECK (((age IS NULL) OR (NOT (qty < -1))))").as_deref(),
            Some("((\"age\" IS NULL) OR (NOT (\"qty\" < (- 1))))")
        );
        assert_eq!(
            sql("CHECK ((status <> 'x'::text))").as_deref(),
            Some("(\"status\" <> 'x')")
        );
        assert_eq!(
            sql("CHECK ((age > '-2'::integer))").as_deref(),
            Some("(\"age\" > -2)")
        );
    }

    #[test]
    fn anything_else_is_left_to_the_summary() {
        for def in [
            "CHECK ((status > 'a'::text))",     // text order is a collation
            "CHECK ((age / 2 > 1))",            // division by zero differs
            "CHECK ((created < now()))",        // a column stored otherwise, a function
            "CHECK ((lower(status) = status))", // lower() differs past ASCII
            "CHECK ((age > 0)) NOT VALID",      // old rows may break it
            "CHECK ((status ~~ 'a%'::text))",   // LIKE
            "CHECK ((age = status))",           // classes differ
            "CHECK (age)",                      // not a truth value
            "CHECK (((price)::numeric(5,2) > (0)::numeric))", // a cast that rounds
            "CHECK ((age > 0) AND (true))",
            "CHECK ((unknown_col > 0))",
            "CHECK ((age > 0)",
        ] {
            assert_eq!(sql(def), None, "{def}");
        }
    }
}
