//! The column spec language of `generate`.
//!
//! A column is `NAME=KIND[:ARGS][;OPTION=VALUE]…`:
//!
//! | kind | example | values | declared type |
//! |---|---|---|---|
//! | `rowid` | `id=rowid` | 1, 2, 3, … (continuing an existing table's) | INTEGER PRIMARY KEY |
//! | `int:LO..HI` | `age=int:18..99` | integers, both ends included | INTEGER |
//! | `float:LO..HI` | `price=float:0..100` | LO ≤ x < HI | REAL |
//! | `choice:A,B,…` | `age=choice:5,10,15;weights=1,2,1` | one of the list | INTEGER/REAL if every item is one, else TEXT |
//! | `digits:N` | `area=digits:6` | N decimal digits (leading zeros kept) | TEXT |
//! | `text:MIN..MAX` | `name=text:3..12;alphabet=abc` | MIN..=MAX characters of the alphabet (a–z by default) | TEXT |
//! | `uuid` | `key=uuid` | random (version 4) UUIDs | TEXT |
//! | `timestamp:START..END` | `at=timestamp:2020-01-01..2021-01-01;format=%Y-%m-%d` | UTC times START ≤ t < END, strftime-style `%Y %m %d %H %M %S`, or `format=unix` | TEXT (INTEGER for unix) |
//! | `const:V` | `source=const:import` | V | by V's look (see `crate::types`) |
//!
//! Any column but `rowid` takes `null=F`: the fraction of NULLs, 0 to 1. A column with
//! no NULLs is declared `NOT NULL`.

use std::fmt::Write as _;

use super::rng::Rng;
use crate::batch::{Batch, Cell};
use crate::types::{classify, ColumnType, Lexeme};

/// A literal of a `choice` or `const`.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// An integer.
    Integer(i64),
    /// A real.
    Real(f64),
    /// A text.
    Text(String),
}

impl Lit {
    fn parse(s: &str) -> Lit {
        match classify(s.as_bytes()) {
            Lexeme::Integer(i) => Lit::Integer(i),
            Lexeme::Real(r) => Lit::Real(r),
            _ => Lit::Text(s.to_string()),
        }
    }
}

/// How `timestamp` values are written.
#[derive(Clone, Debug, PartialEq)]
pub enum TimeFormat {
    /// Seconds since the Unix epoch, as an INTEGER.
    Unix,
    /// Text by a strftime-like pattern.
    Pattern(String),
}

/// A value generator.
#[derive(Clone, Debug, PartialEq)]
pub enum Gen {
    /// The rowid (an INTEGER PRIMARY KEY).
    Rowid,
    /// An integer, uniform in `lo..=hi`.
    Int {
        /// The least value.
        lo: i64,
        /// The greatest value.
        hi: i64,
    },
    /// A real, uniform in `lo..hi`.
    Float {
        /// The least value.
        lo: f64,
        /// The bound, not reached.
        hi: f64,
    },
    /// One of `items`, uniformly or by weight.
    Choice {
        /// The values to choose from.
        items: Vec<Lit>,
        /// Cumulative weights, one per item, ending at 1; `None` for uniform.
        cumulative: Option<Vec<f64>>,
        /// The column is REAL (no text item, some real one): integer items become reals.
        /// Decided once here rather than per value.
        int_as_real: bool,
    },
    /// Text of exactly this many decimal digits.
    Digits(usize),
    /// Text of `min..=max` characters from `alphabet`.
    Text {
        /// The fewest characters.
        min: usize,
        /// The most characters.
        max: usize,
        /// The characters to draw from (not empty).
        alphabet: Vec<char>,
    },
    /// A random (version 4) UUID as text.
    Uuid,
    /// A time, uniform in `lo..=hi` seconds since the epoch.
    Timestamp {
        /// The earliest time.
        lo: i64,
        /// The latest time.
        hi: i64,
        /// How it is stored.
        format: TimeFormat,
    },
    /// The same value in every row.
    Const(Lit),
}

/// One column: its name, generator, and fraction of NULLs.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSpec {
    /// The column's name.
    pub name: String,
    /// How its values are drawn.
    pub gen: Gen,
    /// The fraction of rows that are NULL, in `0..=1`.
    pub null: f64,
}

fn range<T: std::str::FromStr>(what: &str, args: &str) -> Result<(T, T), String> {
    let (a, b) = args
        .split_once("..")
        .ok_or_else(|| format!("{what}: expected a range LO..HI, found {args:?}"))?;
    let p = |s: &str| {
        s.trim()
            .parse::<T>()
            .map_err(|_| format!("{what}: {s:?} is not a number"))
    };
    Ok((p(a)?, p(b)?))
}

impl ColumnSpec {
    /// Parses `NAME=KIND[:ARGS][;OPTION=VALUE]…`. Errors say what was expected.
    pub fn parse(spec: &str) -> Result<ColumnSpec, String> {
        let (name, rest) = spec
            .split_once('=')
            .ok_or_else(|| format!("{spec:?}: expected NAME=GENERATOR, e.g. age=int:18..99"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("{spec:?}: the column name is empty"));
        }
        let mut parts = rest.split(';');
        let head = parts.next().unwrap_or_default().trim();
        let (kind, args) = head.split_once(':').unwrap_or((head, ""));
        let mut null = 0.0;
        let mut weights: Option<Vec<f64>> = None;
        let mut alphabet: Option<Vec<char>> = None;
        let mut format: Option<String> = None;
        for opt in parts {
            let (k, v) = opt
                .split_once('=')
                .ok_or_else(|| format!("{name}: option {opt:?}: expected KEY=VALUE"))?;
            match k.trim() {
                "null" => {
                    null = v.trim().parse::<f64>().map_err(|_| {
                        format!("{name}: null={v}: expected a fraction from 0 to 1")
                    })?;
                    if !(0.0..=1.0).contains(&null) {
                        return Err(format!("{name}: null={v}: expected a fraction from 0 to 1"));
                    }
                }
                "weights" => {
                    let w = v
                        .split(',')
                        .map(|x| {
                            x.trim()
                                .parse::<f64>()
                                .ok()
                                .filter(|w| *w >= 0.0 && w.is_finite())
                        })
                        .collect::<Option<Vec<f64>>>()
                        .ok_or_else(|| {
                            format!("{name}: weights={v}: expected non-negative numbers")
                        })?;
                    weights = Some(w);
                }
                "alphabet" => alphabet = Some(v.chars().collect()),
                "format" => format = Some(v.to_string()),
                other => {
                    return Err(format!(
                    "{name}: unknown option {other:?} (expected null, weights, alphabet or format)"
                ))
                }
            }
        }
        let what = format!("{name}={kind}");
        let gen = match kind.trim() {
            "rowid" => Gen::Rowid,
            "int" => {
                let (lo, hi) = range::<i64>(&what, args)?;
                if lo > hi {
                    return Err(format!("{what}: bad range {lo}..{hi}: LO is above HI"));
                }
                Gen::Int { lo, hi }
            }
            "float" => {
                let (lo, hi) = range::<f64>(&what, args)?;
                if lo >= hi || lo.is_nan() || hi.is_nan() || !lo.is_finite() || !hi.is_finite() {
                    return Err(format!("{what}: bad range {lo}..{hi}: expected finite LO below HI"));
                }
                Gen::Float { lo, hi }
            }
            "choice" => {
                if args.is_empty() {
                    return Err(format!("{what}: expected a list, e.g. choice:red,green,blue"));
                }
                let mut items: Vec<Lit> = args.split(',').map(Lit::parse).collect();
                if items.iter().any(|l| matches!(l, Lit::Text(_))) {
                    // A TEXT column: every item is stored as the text it was given, as
                    // SQLite's TEXT affinity would store it (never a number in TEXT).
                    items = args.split(',').map(|t| Lit::Text(t.to_string())).collect();
                }
                let cumulative = match weights.take() {
                    None => None,
                    Some(w) if w.len() != items.len() => {
                        return Err(format!("{what}: {} weights for {} choices", w.len(), items.len()))
                    }
                    Some(w) if w.iter().sum::<f64>() <= 0.0 => return Err(format!("{what}: the weights add up to 0")),
                    Some(w) => Some(
                        w.iter()
                            .scan(0.0, |acc, x| {
                                *acc += x;
                                Some(*acc)
                            })
                            .collect(),
                    ),
                };
                let int_as_real = items.iter().all(|l| !matches!(l, Lit::Text(_)))
                    && items.iter().any(|l| matches!(l, Lit::Real(_)));
                Gen::Choice {
                    items,
                    cumulative,
                    int_as_real,
                }
            }
            "digits" => {
                let n: usize = args.trim().parse().map_err(|_| format!("{what}: expected digits:N, e.g. digits:6"))?;
                if n == 0 || n > 1000 {
                    return Err(format!("{what}: expected from 1 to 1000 digits"));
                }
                Gen::Digits(n)
            }
            "text" => {
                let (min, max) = range::<usize>(&what, args)?;
                if min > max {
                    return Err(format!("{what}: bad range {min}..{max}: MIN is above MAX"));
                }
                let alphabet = alphabet.take().unwrap_or_else(|| ('a'..='z').collect());
                if alphabet.is_empty() || alphabet.contains(&'\0') {
                    return Err(format!("{what}: the alphabet is empty or has a NUL"));
                }
                Gen::Text { min, max, alphabet }
            }
            "uuid" => Gen::Uuid,
            "timestamp" => {
                let (a, b) = args
                    .split_once("..")
                    .ok_or_else(|| format!("{what}: expected START..END, e.g. timestamp:2020-01-01..2021-01-01"))?;
                let lo = parse_time(a).ok_or_else(|| format!("{what}: {a:?} is not a date (YYYY-MM-DD[THH:MM[:SS]])"))?;
                let hi = parse_time(b).ok_or_else(|| format!("{what}: {b:?} is not a date (YYYY-MM-DD[THH:MM[:SS]])"))?;
                if lo >= hi {
                    return Err(format!("{what}: bad range: START is not before END"));
                }
                let format = match format.take().as_deref() {
                    Some("unix") => TimeFormat::Unix,
                    Some(p) => TimeFormat::Pattern(p.to_string()),
                    None => TimeFormat::Pattern("%Y-%m-%d %H:%M:%S".into()),
                };
                Gen::Timestamp { lo, hi, format }
            }
            "const" => Gen::Const(Lit::parse(args)),
            other => {
                return Err(format!(
                    "{name}: unknown generator {other:?} (expected rowid, int, float, choice, digits, text, uuid, timestamp or const)"
                ))
            }
        };
        if weights.is_some() || alphabet.is_some() || format.is_some() {
            return Err(format!(
                "{what}: an option given does not apply to this generator"
            ));
        }
        if gen == Gen::Rowid && null > 0.0 {
            return Err(format!("{name}: a rowid column cannot be NULL"));
        }
        Ok(ColumnSpec {
            name: name.to_string(),
            gen,
            null,
        })
    }

    /// The column's type.
    pub fn column_type(&self) -> ColumnType {
        let of = |l: &Lit| match l {
            Lit::Integer(_) => ColumnType::Integer,
            Lit::Real(_) => ColumnType::Real,
            Lit::Text(_) => ColumnType::Text,
        };
        match &self.gen {
            Gen::Rowid | Gen::Int { .. } => ColumnType::Integer,
            Gen::Timestamp {
                format: TimeFormat::Unix,
                ..
            } => ColumnType::Integer,
            Gen::Float { .. } => ColumnType::Real,
            Gen::Digits(_) | Gen::Text { .. } | Gen::Uuid | Gen::Timestamp { .. } => {
                ColumnType::Text
            }
            Gen::Const(l) => of(l),
            // Called for every value of a choice column: no allocation here.
            Gen::Choice { items, .. } => {
                if items.iter().all(|l| of(l) == ColumnType::Integer) {
                    ColumnType::Integer
                } else if items.iter().all(|l| of(l) != ColumnType::Text) {
                    ColumnType::Real
                } else {
                    ColumnType::Text
                }
            }
        }
    }

    /// The column's definition in `CREATE TABLE`.
    pub fn definition(&self) -> String {
        let name = crate::schema::quote_ident(&self.name);
        match self.gen {
            Gen::Rowid => format!("{name} INTEGER NOT NULL PRIMARY KEY"),
            _ if self.null == 0.0 => format!("{name} {} NOT NULL", self.column_type()),
            _ => format!("{name} {}", self.column_type()),
        }
    }

    /// Appends this column's value for row `rowid` to `batch`. Every call draws the same
    /// number of random numbers for the same spec (NULL or not), so a chunk's contents
    /// depend only on its seed.
    #[inline]
    pub fn push(&self, rng: &mut Rng, rowid: i64, batch: &mut Batch, scratch: &mut String) {
        scratch.clear();
        match self.draw(rng, rowid, scratch) {
            Drawn::Null => batch.push(Cell::Null),
            Drawn::Integer(i) => batch.push(Cell::Integer(i)),
            Drawn::Real(f) => batch.push(Cell::Real(f)),
            Drawn::Text { start, len } => batch.push_text(&scratch[start..start + len]),
            Drawn::Ascii { bytes, len } => batch.push_text(
                std::str::from_utf8(&bytes[..usize::from(len)]).expect("ASCII is UTF-8"),
            ),
        }
    }

    /// This column's value for row `rowid`, a text appended to `text` (whose earlier
    /// contents are kept, so one buffer can hold a row's texts). The one definition of
    /// every generator: [`ColumnSpec::push`] and the direct engine's leaf filling both
    /// call it, so both make the same table.
    #[inline(always)]
    pub fn draw(&self, rng: &mut Rng, rowid: i64, text: &mut String) -> Drawn {
        if self.null > 0.0 && rng.unit() < self.null {
            return Drawn::Null;
        }
        let start = text.len();
        let texted = |text: &String| Drawn::Text {
            start,
            len: text.len() - start,
        };
        match &self.gen {
            Gen::Rowid => Drawn::Integer(rowid),
            Gen::Int { lo, hi } => Drawn::Integer(rng.int_in(*lo, *hi)),
            Gen::Float { lo, hi } => {
                // For a range wider than f64::MAX, hi - lo is inf: the weighted sum does
                // not overflow. A value that rounding takes up to hi is lo instead (LO <= x < HI).
                let u = rng.unit();
                let span = hi - lo;
                let x = if span.is_finite() {
                    lo + span * u
                } else {
                    lo * (1.0 - u) + hi * u
                };
                Drawn::Real(if x < *hi { x } else { *lo })
            }
            Gen::Choice {
                items,
                cumulative,
                int_as_real,
            } => {
                let i = match cumulative {
                    None => rng.below(items.len() as u64) as usize,
                    Some(c) => {
                        let x = rng.unit() * c[c.len() - 1];
                        c.partition_point(|&edge| edge <= x).min(items.len() - 1)
                    }
                };
                let ty = if *int_as_real {
                    ColumnType::Real
                } else {
                    ColumnType::Integer
                };
                lit(&items[i], ty, text)
            }
            Gen::Digits(n) if *n <= 18 => {
                // `n` digits, zero-padded (as `{v:0n$}`, without the formatter), returned
                // inline: no text buffer for the common short case.
                let mut v = rng.below(10u64.pow(*n as u32));
                let mut bytes = [b'0'; 18];
                for d in bytes[..*n].iter_mut().rev() {
                    *d = b'0' + (v % 10) as u8;
                    v /= 10;
                }
                Drawn::Ascii {
                    bytes,
                    len: *n as u8,
                }
            }
            Gen::Digits(n) => {
                let mut left = *n;
                while left > 0 {
                    let k = left.min(18);
                    let mut v = rng.below(10u64.pow(k as u32));
                    // `k` digits, zero-padded (as `{v:0k$}`, without the formatter).
                    let mut digits = [b'0'; 18];
                    for d in digits[..k].iter_mut().rev() {
                        *d = b'0' + (v % 10) as u8;
                        v /= 10;
                    }
                    text.extend(digits[..k].iter().map(|&d| char::from(d)));
                    left -= k;
                }
                texted(text)
            }
            Gen::Text { min, max, alphabet } => {
                let len = rng.int_in(*min as i64, *max as i64) as usize;
                for _ in 0..len {
                    text.push(alphabet[rng.below(alphabet.len() as u64) as usize]);
                }
                texted(text)
            }
            Gen::Uuid => {
                let (a, b) = (rng.next_u64(), rng.next_u64());
                let a = (a & !0xF000) | 0x4000; // version 4
                let b = (b & !(0xC << 60)) | (0x8 << 60); // RFC 4122 variant
                let _ = write!(
                    text,
                    "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xFFFF,
                    a & 0xFFFF,
                    b >> 48,
                    b & 0xFFFF_FFFF_FFFF
                );
                texted(text)
            }
            Gen::Timestamp { lo, hi, format } => {
                let t = rng.int_in(*lo, hi - 1);
                match format {
                    TimeFormat::Unix => Drawn::Integer(t),
                    TimeFormat::Pattern(p) => {
                        format_time(t, p, text);
                        texted(text)
                    }
                }
            }
            Gen::Const(l) => lit(l, self.column_type(), text),
        }
    }
}

/// A value drawn by [`ColumnSpec::draw`]; a text is `start..start + len` of the buffer
/// it was given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Drawn {
    /// NULL.
    Null,
    /// An integer.
    Integer(i64),
    /// A real.
    Real(f64),
    /// Text written to the caller's buffer.
    Text {
        /// Where it starts in the buffer.
        start: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// A short ASCII text, `bytes[..len]`.
    Ascii {
        /// The text's bytes (ASCII); only the first `len` count.
        bytes: [u8; 18],
        /// How many of `bytes` are the text.
        len: u8,
    },
}

/// A literal as a value of a column of type `ty` (an integer in a REAL column is a real).
fn lit(l: &Lit, ty: ColumnType, text: &mut String) -> Drawn {
    match (l, ty) {
        (Lit::Integer(i), ColumnType::Real) => Drawn::Real(*i as f64),
        (Lit::Integer(i), _) => Drawn::Integer(*i),
        (Lit::Real(r), _) => Drawn::Real(*r),
        (Lit::Text(t), _) => {
            let start = text.len();
            text.push_str(t);
            Drawn::Text {
                start,
                len: t.len(),
            }
        }
    }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian); the inverse of
/// [`civil_from_days`].
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a day number (days since 1970-01-01).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// Seconds since the Unix epoch of `YYYY-MM-DD[(T| )HH:MM[:SS]][Z]`, in UTC.
pub fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches('Z');
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut dp = date.splitn(3, '-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: i64 = dp.next()?.parse().ok()?;
    let d: i64 = dp.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let mut secs = 0;
    if let Some(t) = time {
        let mut tp = t.split(':');
        let h: i64 = tp.next()?.parse().ok()?;
        let mi: i64 = tp.next()?.parse().ok()?;
        let se: i64 = tp.next().map(|x| x.parse().ok()).unwrap_or(Some(0))?;
        if h > 23 || mi > 59 || se > 60 {
            return None;
        }
        secs = h * 3600 + mi * 60 + se;
    }
    Some(days_from_civil(y, m, d) * 86_400 + secs)
}

/// Writes `t` (Unix seconds, UTC) by a strftime-style pattern: `%Y %m %d %H %M %S %%`.
pub fn format_time(t: i64, pattern: &str, out: &mut String) {
    let (y, mo, d) = civil_from_days(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let _ = match chars.next() {
            Some('Y') => write!(out, "{y:04}"),
            Some('m') => write!(out, "{mo:02}"),
            Some('d') => write!(out, "{d:02}"),
            Some('H') => write!(out, "{:02}", s / 3600),
            Some('M') => write!(out, "{:02}", s / 60 % 60),
            Some('S') => write!(out, "{:02}", s % 60),
            Some('%') => write!(out, "%"),
            Some(other) => write!(out, "%{other}"),
            None => write!(out, "%"),
        };
    }
}

/// The write-up's table: `user(id, area, age, active)`.
pub fn default_columns() -> Vec<ColumnSpec> {
    [
        "id=rowid",
        "area=digits:6",
        "age=choice:5,10,15",
        "active=int:0..1",
    ]
    .iter()
    .map(|s| ColumnSpec::parse(s).expect("the default spec parses"))
    .collect()
}

/// A spec file, as TOML: an optional `table = "NAME"` and `[[column]]` tables with
/// `name`, `gen` (the spec after `=`, as above) and an optional `null` fraction.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    table: Option<String>,
    #[serde(default)]
    column: Vec<SpecColumn>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecColumn {
    name: String,
    gen: String,
    null: Option<f64>,
}

/// The table name (if the file names one) and the columns of the spec file at `path`.
/// A file that cannot be read is an I/O error; one that is not UTF-8, not TOML, or
/// holds a column spec that does not parse is a usage error naming the file.
pub fn read_file(path: &std::path::Path) -> crate::Result<(Option<String>, Vec<ColumnSpec>)> {
    let bytes = std::fs::read(path).map_err(|e| crate::Error::io(Some(path.to_path_buf()), e))?;
    let shown = path.display();
    let text = String::from_utf8(bytes).map_err(|e| {
        crate::Error::usage(format!(
            "{shown}: not UTF-8 (byte {}): a spec file is TOML, which is UTF-8",
            e.utf8_error().valid_up_to() + 1
        ))
    })?;
    let file: SpecFile =
        toml::from_str(&text).map_err(|e| crate::Error::usage(format!("{shown}: {e}")))?;
    let mut columns = vec![];
    for c in file.column {
        let mut s = format!("{}={}", c.name, c.gen);
        if let Some(n) = c.null {
            s.push_str(&format!(";null={n}"));
        }
        columns
            .push(ColumnSpec::parse(&s).map_err(|e| crate::Error::usage(format!("{shown}: {e}")))?);
    }
    Ok((file.table, columns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{RowOrigin, Value};

    fn values(spec: &str, n: usize) -> Vec<String> {
        let c = ColumnSpec::parse(spec).unwrap_or_else(|e| panic!("{e}"));
        let mut rng = Rng::for_chunk(7, 0);
        let mut b = Batch::new(1);
        let mut s = String::new();
        for i in 0..n {
            c.push(&mut rng, i as i64 + 1, &mut b, &mut s);
            b.finish_row(RowOrigin::default());
        }
        (0..n)
            .map(|r| match b.row(r).next() {
                Some(Value::Null) | None => "NULL".to_string(),
                Some(Value::Integer(i)) => i.to_string(),
                Some(Value::Real(f)) => f.to_string(),
                Some(Value::Text(t)) => t.to_string(),
                Some(Value::Blob(b)) => format!("{b:?}"),
            })
            .collect()
    }

    #[test]
    fn every_generator_stays_in_its_range() {
        assert!(values("a=int:-3..3", 500)
            .iter()
            .all(|v| (-3..=3).contains(&v.parse::<i64>().unwrap_or(99))));
        assert!(values("a=float:1..2", 500)
            .iter()
            .all(|v| (1.0..2.0).contains(&v.parse::<f64>().unwrap_or(9.0))));
        assert!(values("a=choice:x,y;weights=0,1", 200)
            .iter()
            .all(|v| v == "y"));
        assert!(values("a=digits:25", 100)
            .iter()
            .all(|v| v.len() == 25 && v.bytes().all(|b| b.is_ascii_digit())));
        assert!(values("a=text:2..4;alphabet=ab", 200)
            .iter()
            .all(|v| (2..=4).contains(&v.len()) && v.chars().all(|c| c == 'a' || c == 'b')));
        let uuids = values("a=uuid", 50);
        assert!(uuids
            .iter()
            .all(|u| u.len() == 36 && &u[14..15] == "4" && "89ab".contains(&u[19..20])));
        let ts = values(
            "a=timestamp:2020-02-28..2020-03-02;format=%Y-%m-%dT%H:%M:%SZ",
            300,
        );
        assert!(
            ts.iter().all(
                |t| t.as_str() >= "2020-02-28T00:00:00Z" && t.as_str() < "2020-03-02T00:00:00Z"
            ),
            "{ts:?}"
        );
        assert!(ts.iter().any(|t| t.starts_with("2020-02-29")), "leap day");
        assert!(values("a=const:hi", 3).iter().all(|v| v == "hi"));
        assert_eq!(values("a=rowid", 3), ["1", "2", "3"]);
    }

    #[test]
    fn null_fraction_is_close_to_asked() {
        let n = values("a=int:1..9;null=0.25", 20_000)
            .iter()
            .filter(|v| *v == "NULL")
            .count();
        assert!((4_500..5_500).contains(&n), "{n} NULLs of 20000 at 0.25");
        assert!(values("a=int:1..9;null=1", 100).iter().all(|v| v == "NULL"));
    }

    #[test]
    fn types_follow_generators() {
        let t = |s: &str| ColumnSpec::parse(s).map(|c| c.column_type());
        assert_eq!(t("a=choice:5,10,15"), Ok(ColumnType::Integer));
        assert_eq!(t("a=choice:5,1.5"), Ok(ColumnType::Real));
        assert_eq!(t("a=choice:5,x"), Ok(ColumnType::Text));
        assert_eq!(
            t("a=timestamp:2020-01-01..2020-01-02;format=unix"),
            Ok(ColumnType::Integer)
        );
        assert_eq!(
            ColumnSpec::parse("id=rowid").map(|c| c.definition()),
            Ok("\"id\" INTEGER NOT NULL PRIMARY KEY".into())
        );
        assert_eq!(
            ColumnSpec::parse("a=uuid;null=0.5").map(|c| c.definition()),
            Ok("\"a\" TEXT".into())
        );
    }

    #[test]
    fn bad_specs_say_what_was_expected() {
        let e = |s: &str| ColumnSpec::parse(s).err().unwrap_or_default();
        assert_eq!(e("a=int:5..1"), "a=int: bad range 5..1: LO is above HI");
        assert_eq!(e("a=normal:0..1"), "a: unknown generator \"normal\" (expected rowid, int, float, choice, digits, text, uuid, timestamp or const)");
        assert_eq!(e("a=int:1..x"), "a=int: \"x\" is not a number");
        assert_eq!(
            e("a=int:1..2;null=2"),
            "a: null=2: expected a fraction from 0 to 1"
        );
        assert_eq!(
            e("a=choice:x,y;weights=1"),
            "a=choice: 1 weights for 2 choices"
        );
        assert_eq!(e("id=rowid;null=0.1"), "id: a rowid column cannot be NULL");
        assert_eq!(
            e("noequals"),
            "\"noequals\": expected NAME=GENERATOR, e.g. age=int:18..99"
        );
    }

    #[test]
    fn civil_dates_round_trip() {
        for (s, want) in [
            ("1970-01-01", 0),
            ("2000-03-01T00:00:01", 951_868_801),
            ("1969-12-31T23:59:59", -1),
        ] {
            assert_eq!(parse_time(s), Some(want), "{s}");
        }
        let mut out = String::new();
        format_time(951_868_801, "%Y-%m-%d %H:%M:%S", &mut out);
        assert_eq!(out, "2000-03-01 00:00:01");
    }
}
