//! SQLite's column affinity, applied in Rust: what SQLite would store for a value bound
//! to a column of a given declared type.
//!
//! The SQLite path binds values and lets SQLite convert them; the page writer stores
//! values as they are given. For the two to make the same table (and for the page
//! writer's files to pass `PRAGMA integrity_check`, which flags numeric-looking TEXT in a
//! numeric column and numbers in a TEXT column), every value is converted here first,
//! exactly as SQLite 3.54's `applyAffinity` would (sqlite3.c: `sqlite3AffinityType`,
//! `applyNumericAffinity`, `sqlite3AtoF`, `sqlite3Atoi64`, `sqlite3VdbeIntegerAffinity`).
//! Converting twice changes nothing, so the SQLite path may convert again.
//!
//! A differential proptest (`tests` below) stores random text through SQLite and through
//! these rules and compares `typeof()` and the value.

/// A column's affinity, derived from its declared type by SQLite's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Affinity {
    /// No conversion (a column declared BLOB, or with no type).
    Blob,
    /// Numbers become text.
    Text,
    /// Text that looks numeric becomes INTEGER or REAL.
    Numeric,
    /// As NUMERIC, and a REAL that is a whole number becomes INTEGER.
    Integer,
    /// As NUMERIC, and an INTEGER becomes REAL.
    Real,
}

/// A value as SQLite would store it in a column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stored<'a> {
    /// NULL.
    Null,
    /// An INTEGER.
    Integer(i64),
    /// A REAL (never NaN).
    Real(f64),
    /// TEXT, as SQLite keeps it (up to a NUL, which ends it).
    Text(&'a str),
}

impl Affinity {
    /// The affinity of declared type `decl`, by SQLite's rules in their order: a type
    /// containing `INT` is INTEGER; else `CHAR`, `CLOB` or `TEXT` make TEXT; else `BLOB`
    /// (or no type at all) makes BLOB; else `REAL`, `FLOA` or `DOUB` make REAL; anything
    /// else is NUMERIC. Case is ignored (ASCII only, as SQLite does).
    pub fn of_declared(decl: &str) -> Affinity {
        if decl.is_empty() {
            return Affinity::Blob;
        }
        // A port of sqlite3AffinityType: a rolling window over the last four bytes.
        let mut h: u32 = 0;
        let mut aff = Affinity::Numeric;
        let word = |s: &[u8; 4]| u32::from_be_bytes(*s);
        for &b in decl.as_bytes() {
            h = (h << 8).wrapping_add(u32::from(b.to_ascii_lowercase()));
            if h == word(b"char") || h == word(b"clob") || h == word(b"text") {
                aff = Affinity::Text;
            } else if h == word(b"blob") && matches!(aff, Affinity::Numeric | Affinity::Real) {
                aff = Affinity::Blob;
            } else if (h == word(b"real") || h == word(b"floa") || h == word(b"doub"))
                && aff == Affinity::Numeric
            {
                aff = Affinity::Real;
            } else if h & 0x00FF_FFFF == u32::from_be_bytes([0, b'i', b'n', b't']) {
                return Affinity::Integer;
            }
        }
        aff
    }

    /// Whether text that looks like a number becomes one in this column.
    pub fn is_numeric(self) -> bool {
        matches!(self, Affinity::Numeric | Affinity::Integer | Affinity::Real)
    }

    /// What SQLite stores for text `s` bound to a column of this affinity.
    pub fn text(self, s: &str) -> Stored<'_> {
        if !self.is_numeric() {
            return Stored::Text(s);
        }
        match text_to_number(s.as_bytes()) {
            Some(Number::Integer(i)) => self.integer_value(i),
            Some(Number::Real(r)) => self.real(r),
            None => Stored::Text(s),
        }
    }

    /// What SQLite stores for a real bound to a numeric column: an integral real within
    /// range becomes an integer, which a REAL column reads back as a real (so `-0.0`
    /// becomes `0.0` there). For a TEXT or BLOB column the real comes back as it is: the
    /// caller decides its text (SQLite would store the real formatted with `%!.15g`).
    pub fn real<'a>(self, r: f64) -> Stored<'a> {
        match self {
            Affinity::Numeric | Affinity::Integer => match integer_affinity(r) {
                Some(i) => Stored::Integer(i),
                None => Stored::Real(r),
            },
            Affinity::Real => Stored::Real(if r == 0.0 { 0.0 } else { r }),
            Affinity::Text | Affinity::Blob => Stored::Real(r),
        }
    }

    /// What a numeric column stores for an integer: REAL columns read it as a real.
    pub fn integer_value<'a>(self, i: i64) -> Stored<'a> {
        match self {
            Affinity::Real => Stored::Real(i as f64),
            _ => Stored::Integer(i),
        }
    }
}

/// A number parsed from text.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Number {
    Integer(i64),
    Real(f64),
}

/// SQLite's whitespace for numbers: space, `\t`, `\n`, `\v`, `\f`, `\r`.
fn is_space(b: u8) -> bool {
    b == b' ' || (0x09..=0x0d).contains(&b)
}

/// The number SQLite's numeric affinity makes of `text`, or `None` when it stays text:
/// `applyNumericAffinity(pRec, 1)` over `sqlite3AtoF`.
fn text_to_number(text: &[u8]) -> Option<Number> {
    // sqlite3AtoF sees a C string: it ends at the first NUL.
    let z = match memchr::memchr(0, text) {
        Some(n) => &text[..n],
        None => text,
    };
    let parsed = atof(z)?;
    if !parsed.fraction_or_exponent {
        // alsoAnInt: the real is the integer, or the whole text is an i64.
        let i = real_to_i64(parsed.value);
        if real_same_as_int(parsed.value, i) {
            return Some(Number::Integer(i));
        }
        if let Some(i) = atoi64(text) {
            return Some(Number::Integer(i));
        }
    }
    Some(match integer_affinity(parsed.value) {
        Some(i) => Number::Integer(i),
        None => Number::Real(parsed.value),
    })
}

struct Parsed {
    value: f64,
    fraction_or_exponent: bool,
}

/// `sqlite3AtoF`: `None` unless all of `z` (whitespace around it allowed) is one of
/// `[+-]digits[E[+-]digits]`, `[+-]digits.[digits][E[+-]digits]`, `[+-].digits[E[+-]digits]`.
/// The value is `s * 10^d` with `s` the first ~19 significant digits (later ones are
/// dropped, as SQLite drops them), rounded to the nearest double.
fn atof(z: &[u8]) -> Option<Parsed> {
    const CAP: u64 = (u64::MAX - 9) / 10;
    let at = |i: usize| z.get(i).copied().unwrap_or(0);
    let digit = |b: u8| b.is_ascii_digit();
    let mut i = 0;
    while is_space(at(i)) {
        i += 1;
    }
    let mut neg = false;
    if at(i) == b'-' || at(i) == b'+' {
        neg = at(i) == b'-';
        i += 1;
    }
    let mut s: u64 = 0;
    let mut d: i64 = 0;
    let mut seen_digit = false;
    let mut fp = false;
    if digit(at(i)) {
        seen_digit = true;
        while digit(at(i)) {
            s = s * 10 + u64::from(at(i) - b'0');
            i += 1;
            if s >= CAP {
                while digit(at(i)) {
                    i += 1;
                    d += 1;
                }
                break;
            }
        }
    }
    if at(i) == b'.' {
        i += 1;
        if digit(at(i)) {
            while digit(at(i)) {
                if s < CAP {
                    s = s * 10 + u64::from(at(i) - b'0');
                    d -= 1;
                }
                i += 1;
            }
        } else if !seen_digit {
            return None;
        }
        fp = true;
    } else if !seen_digit {
        return None;
    }
    if at(i) == b'e' || at(i) == b'E' {
        let mut j = i + 1;
        let mut esign = 1;
        if at(j) == b'-' {
            esign = -1;
            j += 1;
        } else if at(j) == b'+' {
            j += 1;
        }
        if digit(at(j)) {
            let mut exp: i64 = 0;
            while digit(at(j)) {
                exp = if exp < 10000 {
                    exp * 10 + i64::from(at(j) - b'0')
                } else {
                    10000
                };
                j += 1;
            }
            d += esign * exp;
            fp = true;
            i = j;
        }
        // Else the `e` is left unread, and is trailing garbage below.
    }
    while is_space(at(i)) {
        i += 1;
    }
    if i < z.len() {
        return None;
    }
    let mut value = if s == 0 { 0.0 } else { pow10_value(s, d) };
    if neg {
        value = -value;
    }
    Some(Parsed {
        value,
        fraction_or_exponent: fp,
    })
}

/// The double nearest `s * 10^d` (SQLite's `sqlite3Fp10Convert2`, with its range limits).
fn pow10_value(s: u64, d: i64) -> f64 {
    if d < -348 {
        return 0.0;
    }
    if d > 347 {
        return f64::INFINITY;
    }
    // Rust's float parsing rounds correctly; the text is ASCII digits and an exponent.
    format!("{s}e{d}").parse().unwrap_or(f64::NAN)
}

/// `sqlite3Atoi64` returning 0: `text` (whitespace around it allowed, optional sign) is
/// exactly a decimal integer in the i64 range.
fn atoi64(text: &[u8]) -> Option<i64> {
    let mut i = 0;
    while i < text.len() && is_space(text[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < text.len() && (text[i] == b'-' || text[i] == b'+') {
        neg = text[i] == b'-';
        i += 1;
    }
    let start = i;
    while i < text.len() && text[i] == b'0' {
        i += 1;
    }
    let digits_from = i;
    let mut u: u128 = 0;
    while i < text.len() && text[i].is_ascii_digit() {
        u = (u * 10 + u128::from(text[i] - b'0')).min(u128::from(u64::MAX) * 10);
        i += 1;
    }
    if i == digits_from && start == digits_from {
        return None; // no digits
    }
    if text[i..].iter().any(|&b| !is_space(b)) {
        return None;
    }
    if neg {
        if u <= 1 << 63 {
            return Some((u as u64).wrapping_neg() as i64);
        }
        None
    } else {
        i64::try_from(u).ok()
    }
}

/// `sqlite3VdbeIntegerAffinity`: the integer a real equals, when it is one and strictly
/// inside the i64 range.
fn integer_affinity(r: f64) -> Option<i64> {
    let ix = real_to_i64(r);
    (r == ix as f64 && ix > i64::MIN && ix < i64::MAX).then_some(ix)
}

/// `sqlite3RealToI64`: a real truncated to an integer, saturating.
fn real_to_i64(r: f64) -> i64 {
    if r < -9_223_372_036_854_774_784.0 {
        i64::MIN
    } else if r > 9_223_372_036_854_774_784.0 {
        i64::MAX
    } else {
        r as i64
    }
}

/// `sqlite3RealSameAsInt`: `i` (truncated from `r`) is `r`, exactly, within ±2^51.
fn real_same_as_int(r: f64, i: i64) -> bool {
    r == 0.0
        || (r.to_bits() == (i as f64).to_bits()
            && (-2_251_799_813_685_248..2_251_799_813_685_248).contains(&i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rusqlite::types::ValueRef;

    #[test]
    fn declared_types_map_as_sqlite_maps_them() {
        for (decl, aff) in [
            ("", Affinity::Blob),
            ("INTEGER", Affinity::Integer),
            ("bigint", Affinity::Integer),
            ("VARCHAR(10)", Affinity::Text),
            ("CHARINT", Affinity::Integer),
            ("DOUBLE", Affinity::Real),
            ("float", Affinity::Real),
            ("REALBLOB", Affinity::Blob),
            ("BLOBREAL", Affinity::Blob),
            ("TEXTBLOB", Affinity::Text),
            ("NUMERIC", Affinity::Numeric),
            ("DECIMAL(10,2)", Affinity::Numeric),
            ("DATE", Affinity::Numeric),
            ("POINT", Affinity::Integer),
            ("STRING", Affinity::Numeric),
        ] {
            assert_eq!(Affinity::of_declared(decl), aff, "{decl}");
        }
    }

    #[test]
    fn examples() {
        let i = Affinity::Integer;
        assert_eq!(i.text("02134"), Stored::Integer(2134));
        assert_eq!(i.text(" 42"), Stored::Integer(42));
        assert_eq!(i.text("+5"), Stored::Integer(5));
        assert_eq!(i.text("-0"), Stored::Integer(0));
        assert_eq!(i.text("1e3"), Stored::Integer(1000));
        assert_eq!(i.text("1.5"), Stored::Real(1.5));
        assert_eq!(i.text("abc"), Stored::Text("abc"));
        assert_eq!(i.text("0x10"), Stored::Text("0x10"));
        assert_eq!(i.text("inf"), Stored::Text("inf"));
        assert_eq!(Affinity::Real.text("-0.0"), Stored::Real(0.0));
        assert_eq!(Affinity::Text.text("007"), Stored::Text("007"));
        assert_eq!(Affinity::Blob.text("7"), Stored::Text("7"));
    }

    const DECLS: [&str; 6] = ["INTEGER", "REAL", "NUMERIC", "TEXT", "", "VARCHAR(3)"];

    /// What SQLite stores for `s` in each of `DECLS`, by inserting it.
    fn sqlite_stores(conn: &rusqlite::Connection, s: &str) -> Vec<String> {
        conn.execute("DELETE FROM t", []).unwrap_or_default();
        let ok = conn.execute("INSERT INTO t VALUES (?1,?1,?1,?1,?1,?1)", [s]);
        assert!(ok.is_ok(), "{ok:?}");
        let mut stmt = conn.prepare_cached("SELECT * FROM t").expect("select");
        let mut rows = stmt.query([]).expect("query");
        let row = rows.next().expect("step").expect("a row");
        (0..DECLS.len())
            .map(|c| describe_ref(row.get_ref(c).expect("column")))
            .collect()
    }

    fn describe_ref(v: ValueRef<'_>) -> String {
        match v {
            ValueRef::Null => "null".into(),
            ValueRef::Integer(i) => format!("integer {i}"),
            ValueRef::Real(r) => format!("real {:?}", r.to_bits()),
            ValueRef::Text(t) => format!("text {t:?}"),
            ValueRef::Blob(b) => format!("blob {b:?}"),
        }
    }

    fn describe(v: Stored<'_>) -> String {
        match v {
            Stored::Null => "null".into(),
            Stored::Integer(i) => format!("integer {i}"),
            Stored::Real(r) => format!("real {:?}", r.to_bits()),
            Stored::Text(t) => format!("text {:?}", t.as_bytes()),
        }
    }

    fn table() -> rusqlite::Connection {
        let conn = rusqlite::Connection::open_in_memory().expect("memory db");
        let cols: Vec<String> = DECLS
            .iter()
            .enumerate()
            .map(|(i, d)| format!("c{i} {d}"))
            .collect();
        conn.execute_batch(&format!("CREATE TABLE t({})", cols.join(",")))
            .expect("create");
        conn
    }

    fn check(conn: &rusqlite::Connection, s: &str) {
        let ours: Vec<String> = DECLS
            .iter()
            .map(|d| describe(Affinity::of_declared(d).text(s)))
            .collect();
        assert_eq!(ours, sqlite_stores(conn, s), "text {s:?}");
    }

    #[test]
    fn hostile_examples_match_sqlite() {
        let conn = table();
        for s in [
            "",
            " ",
            "007",
            " 42 ",
            "+5",
            "-0",
            "-0.0",
            "1e3",
            "1E+3",
            "1e",
            "1e+",
            ".5",
            "5.",
            "-.5",
            ".",
            "-",
            "+",
            "1.5e-3",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "00000000000000000000000001",
            "123456789012345678901234567890",
            "1.00000000000000000000000000001",
            "9007199254740993",
            "9007199254740993.0",
            "2251799813685248",
            "2251799813685249",
            "1e999",
            "-1e999",
            "1e-999",
            "1e-320",
            "4.9e-324",
            "2.4703282292062328e-324",
            "inf",
            "NaN",
            "0x1F",
            "1_000",
            "١٢",
            "１２",
            "42\0",
            "42\0x",
            "\u{a0}42",
            "\t\n\x0b\x0c\r7\r\n",
            "1e10000000",
            "0e5",
            "9.223372036854775807e18",
            "-9.223372036854775808e18",
            "3500000000000000.2500001",
        ] {
            check(&conn, s);
        }
    }

    fn numberish() -> impl Strategy<Value = String> {
        let ws = prop::sample::select(vec!["", " ", "\t", "\n", "\r\n", "\u{b}", "\u{a0}"]);
        let sign = prop::sample::select(vec!["", "-", "+", "--"]);
        let digits = "[0-9]{0,25}";
        let frac = prop::option::of("\\.[0-9]{0,22}");
        let exp = prop::option::of("[eE][+-]?[0-9]{0,4}");
        let tail = prop::sample::select(vec!["", "", "", "x", "\0", "\0 1", "٣"]);
        (ws.clone(), sign, digits, frac, exp, ws, tail).prop_map(|(a, s, d, f, e, b, t)| {
            format!(
                "{a}{s}{d}{}{}{b}{t}",
                f.unwrap_or_default(),
                e.unwrap_or_default()
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn numeric_text_is_stored_as_sqlite_stores_it(s in numberish()) {
            let conn = table();
            check(&conn, &s);
        }

        #[test]
        fn any_text_is_stored_as_sqlite_stores_it(s in "\\PC{0,12}") {
            let conn = table();
            check(&conn, &s);
        }

        #[test]
        fn reals_are_stored_as_sqlite_stores_them(r in prop::num::f64::ANY) {
            let conn = table();
            conn.execute("INSERT INTO t VALUES (?1,?1,?1,?1,?1,?1)", [r]).expect("insert");
            let got: Vec<String> = conn
                .query_row("SELECT * FROM t", [], |row| {
                    Ok((0..DECLS.len())
                        .map(|c| row.get_ref(c).map(describe_ref).unwrap_or_default())
                        .collect())
                })
                .expect("select");
            let ours: Vec<String> = DECLS[..3]
                .iter()
                .map(|d| describe(Affinity::of_declared(d).real(r)))
                .collect();
            // NaN is bound as NULL by SQLite; TEXT columns turn reals into SQLite's text.
            if !r.is_nan() {
                prop_assert_eq!(&ours[..], &got[..3]);
            }
        }
    }
}
