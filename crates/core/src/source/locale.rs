//! Numbers and dates written the way a locale writes them, in delimited text: converted
//! only when asked ([`Locale`]), and otherwise pointed out ([`LocaleHint`]), never
//! changed silently.
//!
//! - A decimal comma: `1.234,56` (dots group thousands) becomes `1234.56`, and a
//!   dot-grouped integer `1.234.567` becomes `1234567`, so the column's type is inferred
//!   and stored as a number.
//! - Dates in given `strftime` formats (`%d.%m.%Y`, `%m/%d/%Y %H:%M`) become ISO 8601
//!   text (`2026-11-23`, `2026-11-23 14:05:00`), which SQLite's date functions read. A
//!   field that matches none of the formats is left as it is.

use chrono::format::{Item, StrftimeItems};
use chrono::{NaiveDate, NaiveDateTime};
use serde::Serialize;

use super::sniff::is_decimal_comma;
use crate::error::{Error, Result};

/// How locale-written fields are converted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Locale {
    /// Numbers use a decimal comma (and dots between thousands).
    pub decimal_comma: bool,
    /// Date (or date-time) formats, in `strftime` notation, tried in order.
    pub dates: Vec<String>,
}

/// One date format, checked.
#[derive(Clone, Debug)]
struct DateFormat {
    text: String,
    with_time: bool,
}

/// [`Locale`] made ready to apply (its formats checked once).
#[derive(Clone, Debug, Default)]
pub(crate) struct Rewrite {
    decimal_comma: bool,
    dates: Vec<DateFormat>,
}

impl Locale {
    /// Whether nothing is converted.
    pub fn is_empty(&self) -> bool {
        !self.decimal_comma && self.dates.is_empty()
    }

    /// Checks the date formats: each must parse as `strftime` and name a day, a month
    /// and a year.
    pub(crate) fn rewrite(&self) -> Result<Rewrite> {
        let mut dates = vec![];
        for f in &self.dates {
            let items: Vec<Item<'_>> = StrftimeItems::new(f).collect();
            if items.iter().any(|i| matches!(i, Item::Error)) {
                return Err(Error::usage(format!(
                    "the date format {f:?} is not strftime notation (e.g. %d.%m.%Y)"
                )));
            }
            let has = |specs: &[&str]| specs.iter().any(|s| f.contains(s));
            if !(has(&["%d", "%e"]) && has(&["%m", "%b", "%B"]) && has(&["%Y", "%y"])) {
                return Err(Error::usage(format!(
                    "the date format {f:?} must name a day, a month and a year (e.g. %d.%m.%Y)"
                )));
            }
            dates.push(DateFormat {
                text: f.clone(),
                with_time: has(&["%H", "%I", "%M", "%S", "%T", "%R"]),
            });
        }
        Ok(Rewrite {
            decimal_comma: self.decimal_comma,
            dates,
        })
    }
}

impl Rewrite {
    /// Whether it converts nothing.
    pub fn is_empty(&self) -> bool {
        !self.decimal_comma && self.dates.is_empty()
    }

    /// The field `s` converted (into `buf`), or `None` when it stays as it is.
    pub fn apply(&self, s: &str, buf: &mut String) -> bool {
        let t = s.trim();
        if self.decimal_comma && !t.is_empty() {
            if is_decimal_comma(t) {
                buf.clear();
                buf.extend(
                    t.chars()
                        .filter(|&c| c != '.')
                        .map(|c| if c == ',' { '.' } else { c }),
                );
                return true;
            }
            if is_grouped_integer(t) {
                buf.clear();
                buf.extend(t.chars().filter(|&c| c != '.'));
                return true;
            }
        }
        for f in &self.dates {
            let iso = if f.with_time {
                NaiveDateTime::parse_from_str(t, &f.text)
                    .ok()
                    .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
            } else {
                NaiveDate::parse_from_str(t, &f.text)
                    .ok()
                    .map(|d| d.format("%Y-%m-%d").to_string())
            };
            if let Some(iso) = iso {
                buf.clear();
                buf.push_str(&iso);
                return true;
            }
        }
        false
    }
}

/// `1.234` or `-12.345.678`: an integer with dots between thousands.
fn is_grouped_integer(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let groups: Vec<&str> = s.split('.').collect();
    groups.len() >= 2
        && (1..=3).contains(&groups[0].len())
        && groups[0].bytes().all(|c| c.is_ascii_digit())
        && groups[1..]
            .iter()
            .all(|g| g.len() == 3 && g.bytes().all(|c| c.is_ascii_digit()))
}

/// A column whose sampled values look locale-written, and how to convert them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LocaleHint {
    /// The input's name.
    pub input: String,
    /// The column.
    pub column: String,
    /// A sampled value.
    pub example: String,
    /// `None`: decimal-comma numbers; else the date format (strftime) they are in.
    pub date_format: Option<String>,
}

/// The date format every value of `values` is in, if it is one that day-above-12
/// evidence (or a four-digit year first) makes unambiguous, and not ISO 8601 already.
fn date_format_of<'a>(values: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let split = |v: &'a str| -> Option<(Vec<&'a str>, char, Option<&'a str>)> {
        let (d, time) = match v.split_once(' ') {
            Some((d, t)) => (d, Some(t)),
            None => (v, None),
        };
        let sep = ['.', '/', '-'].into_iter().find(|c| d.contains(*c))?;
        let parts: Vec<&str> = d.split(sep).collect();
        let digits = parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|c| c.is_ascii_digit()));
        digits.then_some((parts, sep, time))
    };
    let first = split(values.clone().next()?)?;
    let (sep, time) = (first.1, first.2);
    let time_fmt = match time {
        None => "",
        Some(t) if t.len() == 5 && t.as_bytes()[2] == b':' => " %H:%M",
        Some(t) if t.len() == 8 && t.as_bytes()[2] == b':' && t.as_bytes()[5] == b':' => {
            " %H:%M:%S"
        }
        Some(_) => return None,
    };
    let (mut a_big, mut b_big) = (false, false);
    for v in values {
        let (p, s, t) = split(v)?;
        if s != sep || t.is_some() != time.is_some() || p[2].len() != 4 {
            return None;
        }
        let (a, b) = (p[0].parse::<u32>().ok()?, p[1].parse::<u32>().ok()?);
        if a == 0 || b == 0 || a > 31 || b > 31 || (a > 12 && b > 12) {
            return None;
        }
        a_big |= a > 12;
        b_big |= b > 12;
    }
    let date = match (a_big, b_big) {
        (true, false) => format!("%d{sep}%m{sep}%Y"),
        (false, true) => format!("%m{sep}%d{sep}%Y"),
        // Ambiguous (no day above 12), or a mix: no guess.
        _ => return None,
    };
    Some(format!("{date}{time_fmt}"))
}

/// Whether `values` are all integers (or empty) and some are dot-grouped (`1.500`): in a
/// file whose other columns use a decimal comma, these are thousands, not decimals.
pub(crate) fn dot_grouped<'a>(values: impl Iterator<Item = &'a str> + Clone) -> bool {
    let nonempty = values.map(str::trim).filter(|v| !v.is_empty());
    nonempty.clone().any(is_grouped_integer)
        && nonempty
            .clone()
            .all(|v| v.parse::<i64>().is_ok() || is_grouped_integer(v))
}

/// What the sampled `values` of one column look like: decimal-comma numbers (at least
/// one with a comma, the rest numbers too) or dates in one unambiguous format.
pub(crate) fn guess<'a>(values: impl Iterator<Item = &'a str> + Clone) -> Option<Option<String>> {
    let nonempty = values.filter(|v| !v.trim().is_empty());
    let mut any = false;
    let mut comma = false;
    let numbers = nonempty.clone().all(|v| {
        any = true;
        let v = v.trim();
        comma |= is_decimal_comma(v);
        is_decimal_comma(v) || v.parse::<i64>().is_ok() || is_grouped_integer(v)
    });
    if !any {
        return None;
    }
    if numbers && comma {
        return Some(None);
    }
    date_format_of(nonempty.map(str::trim)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(l: &Locale, s: &str) -> Option<String> {
        let mut b = String::new();
        l.rewrite().ok()?.apply(s, &mut b).then_some(b)
    }

    #[test]
    fn decimal_commas_and_grouped_integers_become_numbers() {
        let l = Locale {
            decimal_comma: true,
            dates: vec![],
        };
        assert_eq!(apply(&l, "1.234,56").as_deref(), Some("1234.56"));
        assert_eq!(apply(&l, "-0,5").as_deref(), Some("-0.5"));
        assert_eq!(apply(&l, "1.234.567").as_deref(), Some("1234567"));
        assert_eq!(apply(&l, "12.5"), None);
        assert_eq!(apply(&l, "Größe 3,5"), None);
    }

    #[test]
    fn dates_in_the_given_formats_become_iso() {
        let l = Locale {
            decimal_comma: false,
            dates: vec!["%d.%m.%Y".into(), "%m/%d/%Y %H:%M".into()],
        };
        assert_eq!(apply(&l, "23.11.2026").as_deref(), Some("2026-11-23"));
        assert_eq!(
            apply(&l, "11/23/2026 14:05").as_deref(),
            Some("2026-11-23 14:05:00")
        );
        assert_eq!(apply(&l, "31.02.2026"), None, "no such day");
        assert_eq!(apply(&l, "tomorrow"), None);
        let bad = Locale {
            decimal_comma: false,
            dates: vec!["%Y".into()],
        };
        assert!(bad.rewrite().is_err());
    }

    #[test]
    fn guesses_are_made_only_when_unambiguous() {
        assert_eq!(guess(["1,5", "2", "1.234,56"].into_iter()), Some(None));
        assert_eq!(guess(["1.5", "2"].into_iter()), None);
        assert_eq!(
            guess(["23.11.2026", "01.12.2026"].into_iter()),
            Some(Some("%d.%m.%Y".into()))
        );
        assert_eq!(
            guess(["11/23/2026 14:05", "12/01/2026 09:00"].into_iter()),
            Some(Some("%m/%d/%Y %H:%M".into()))
        );
        assert_eq!(
            guess(["01.02.2026", "03.04.2026"].into_iter()),
            None,
            "no day above 12"
        );
        assert_eq!(guess(["2026-11-23"].into_iter()), None, "ISO already");
    }
}
