//! Telling what an input holds from its first bytes, for inputs whose name does not say
//! (`.txt`, `.dat`, no name, stdin) and for the settings a name never says (the
//! delimiter of a `.csv`, whether its first line is a header).
//!
//! - Compression, by magic bytes: gzip, zstd, bzip2, xz.
//! - Text encoding: UTF-16 by its byte-order mark, or without one by its zero bytes (a
//!   zero as every other byte, which UTF-8 text never has); else UTF-8 (a UTF-8
//!   byte-order mark is noted). Anything that is not valid UTF-8 is left to the reader, whose error asks
//!   for the encoding to be named.
//! - Format: a JSON array (`[`), newline-delimited JSON (`{`), XML (`<`), else delimited
//!   text. XML's record path: the root and the first element name that repeats under it
//!   (or under the one element a root holds, and so on down).
//! - Delimiter and quote: every candidate (`,` `\t` `;` `|`, and any other punctuation
//!   byte of the first line) splits the sample quote-aware. Quoting is decided before
//!   fields are counted, one rule for CSV and TSV: where fields start and end with `"`,
//!   they are quoted (RFC 4180). The winner makes every sampled record the same width (at least
//!   2), with no quoted field followed by text before the next delimiter, the fewest
//!   unquoted fields that hold another common delimiter (a decimal-comma number in a `;`
//!   file is no such field), then the most fields, then the order above; another
//!   delimiter that fits as well is reported ([`Dialect::also_fits`]). No candidate
//!   fits every record: `,`, and the choice says it was not sniffed. Records end at LF,
//!   CRLF or a lone CR.
//! - Header: the first record is data, not names, only when some columns hold numbers
//!   or dates in every other sampled record and the first record does too in each of
//!   them. Otherwise it is a header (as most files have).
//!
//! The sample is at most [`SAMPLE_BYTES`] of decompressed text, so sniffing costs about a
//! millisecond whatever the input's size.

use std::borrow::Cow;
use std::io::Read;

use serde::Serialize;

pub use super::head::{read_sample, Compression, SAMPLE_BYTES};
use super::input::Encoding;
use super::Format;
use crate::error::Result;

/// Records a sniff looks at, at most.
const SAMPLE_RECORDS: usize = 1000;

/// What a sniff found: how to read the input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Dialect {
    /// The compression, if any.
    pub compression: Option<Compression>,
    /// The text encoding (UTF-8, or UTF-16 by its byte-order mark).
    #[serde(serialize_with = "encoding_name")]
    pub encoding: Encoding,
    /// Whether the text starts with a byte-order mark.
    pub bom: bool,
    /// Whether the sample is valid in its encoding (UTF-8: every byte sequence; a
    /// character cut by the sample's end is no fault).
    pub valid_text: bool,
    /// The encoding is a guess asked for: the sample is not UTF-8, so Windows-1252
    /// (which reads any byte) is used.
    pub encoding_guessed: bool,
    /// The format.
    #[serde(serialize_with = "format_name")]
    pub format: Format,
    /// Delimited text: the field delimiter.
    #[serde(serialize_with = "byte_text")]
    pub delimiter: u8,
    /// Delimited text: the quote, if fields are quoted.
    #[serde(serialize_with = "opt_byte_text")]
    pub quote: Option<u8>,
    /// Delimited text: whether the first record names the columns.
    pub header: bool,
    /// Delimited text: whether a delimiter made every sampled record the same width
    /// (`false`: none did, and `,` is a default, not a finding).
    pub delimiter_found: bool,
    /// Records in the sample.
    pub sampled_records: usize,
    /// Delimited text: another delimiter that fits the sample as well as the one chosen
    /// but splits it into another number of fields (the choice was a tie: the one with
    /// more fields won). `None` when the choice was clear.
    #[serde(serialize_with = "opt_byte_text")]
    pub also_fits: Option<u8>,
    /// XML: the record path the sample implies (see [`super::ReadOptions::record`]),
    /// `None` when it shows none. JSON: the path of the array of objects a top-level
    /// object holds, as the head shows it (the reader finds it again, and checks that
    /// no later member holds one too).
    pub record: Option<String>,
}

fn encoding_name<S: serde::Serializer>(e: &Encoding, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(match e {
        Encoding::Utf16 | Encoding::Utf16Le => "utf-16le",
        Encoding::Utf16Be => "utf-16be",
        Encoding::Latin1 => "latin1",
        Encoding::Utf8 => "utf-8",
    })
}

fn format_name<S: serde::Serializer>(f: &Format, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(match f {
        Format::Csv | Format::Tsv => "delimited",
        Format::Ndjson => "ndjson",
        Format::Json => "json",
        Format::Parquet => "parquet",
        Format::Arrow => "arrow",
        Format::Xml => "xml",
        Format::Spreadsheet => "spreadsheet",
    })
}

fn byte_text<S: serde::Serializer>(b: &u8, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&char::from(*b).to_string())
}

fn opt_byte_text<S: serde::Serializer>(
    b: &Option<u8>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match b {
        Some(b) => s.serialize_some(&char::from(*b).to_string()),
        None => s.serialize_none(),
    }
}

pub use crate::error::shown;

impl Dialect {
    /// One line, as the summary prints it: `';'-separated, header, UTF-8 with BOM, gzip`.
    pub fn describe(&self) -> String {
        let mut parts = vec![];
        match self.format {
            Format::Csv | Format::Tsv => {
                parts.push(if self.delimiter_found {
                    match self.also_fits {
                        Some(other) => format!(
                            "{}-separated ({} would split every sampled record evenly too)",
                            shown(self.delimiter),
                            shown(other)
                        ),
                        None => format!("{}-separated", shown(self.delimiter)),
                    }
                } else if self.delimiter == b',' {
                    "no delimiter fits every record (read as ','-separated)".into()
                } else {
                    "one column (no delimiter in the header)".into()
                });
                if self.quote != Some(b'"') {
                    parts.push(match self.quote {
                        Some(q) => format!("{} quotes", shown(q)),
                        None => "no quoting".into(),
                    });
                }
                parts.push(if self.header { "header" } else { "no header" }.into());
            }
            Format::Ndjson => parts.push("newline-delimited JSON".into()),
            Format::Json => parts.push(match &self.record {
                Some(r) => format!("JSON, records at {r}"),
                None => "a JSON array".into(),
            }),
            Format::Parquet => parts.push("Parquet".into()),
            Format::Arrow => parts.push("Arrow".into()),
            Format::Xml => parts.push(match &self.record {
                Some(r) => format!("XML, records at {r}"),
                None => "XML".into(),
            }),
            Format::Spreadsheet => parts.push("a spreadsheet".into()),
        }
        if self.format.is_typed() || self.format == Format::Spreadsheet {
            return parts.join(", ");
        }
        let enc = match self.encoding {
            Encoding::Utf16 | Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
            Encoding::Latin1 => "Windows-1252",
            Encoding::Utf8 => "UTF-8",
        };
        parts.push(if self.bom {
            format!("{enc} with BOM")
        } else if self.encoding_guessed && self.encoding == Encoding::Latin1 {
            format!("{enc} (guessed: not UTF-8)")
        } else if self.encoding_guessed {
            format!("{enc} (guessed: no byte-order mark, a zero as every other byte)")
        } else {
            enc.into()
        });
        if let Some(c) = self.compression {
            parts.push(c.name().into());
        }
        parts.join(", ")
    }
}

/// Decompresses the start of `raw` (a sample of a compressed input: a cut stream is no
/// error here), up to [`SAMPLE_BYTES`]. Returns the bytes and whether they are all of
/// the input.
pub fn decompressed_sample(
    c: Compression,
    raw: &[u8],
    raw_whole: bool,
) -> std::result::Result<(Vec<u8>, bool), String> {
    let owned: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(raw.to_vec()));
    let mut d = c
        .decoder(owned)
        .map_err(|e| format!("not a {} stream: {e}", c.name()))?;
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut whole = raw_whole;
    loop {
        match d.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() >= SAMPLE_BYTES {
                    out.truncate(SAMPLE_BYTES);
                    whole = false;
                    break;
                }
            }
            // The sample ends mid-stream: what was decoded is the sample.
            Err(_) if !raw_whole => {
                whole = false;
                break;
            }
            Err(e) => return Err(format!("not a whole {} stream: {e}", c.name())),
        }
    }
    Ok((out, whole))
}

/// The encoding of `bytes` (`given`, or UTF-16 by byte-order mark, else UTF-8), whether
/// there is a byte-order mark, and the text of the sample (lossy only where the sample
/// was cut or the reader will refuse it).
pub fn text_of(bytes: &[u8], given: Encoding) -> (Encoding, bool, Cow<'_, str>) {
    let decode = |e: &'static encoding_rs::Encoding| {
        let (t, _) = e.decode_with_bom_removal(bytes);
        Cow::Owned(t.into_owned())
    };
    match given {
        Encoding::Latin1 => {
            let bom = bytes.starts_with(b"\xEF\xBB\xBF");
            let rest = if bom { &bytes[3..] } else { bytes };
            let (t, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(rest);
            return (given, bom, Cow::Owned(t.into_owned()));
        }
        Encoding::Utf16 | Encoding::Utf16Le => {
            return (
                given,
                bytes.starts_with(b"\xFF\xFE"),
                decode(encoding_rs::UTF_16LE),
            )
        }
        Encoding::Utf16Be => {
            return (
                given,
                bytes.starts_with(b"\xFE\xFF"),
                decode(encoding_rs::UTF_16BE),
            )
        }
        Encoding::Utf8 => {}
    }
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return (Encoding::Utf8, true, String::from_utf8_lossy(rest));
    }
    if bytes.starts_with(b"\xFF\xFE") {
        let (t, _) = encoding_rs::UTF_16LE.decode_with_bom_removal(bytes);
        return (Encoding::Utf16Le, true, Cow::Owned(t.into_owned()));
    }
    if bytes.starts_with(b"\xFE\xFF") {
        let (t, _) = encoding_rs::UTF_16BE.decode_with_bom_removal(bytes);
        return (Encoding::Utf16Be, true, Cow::Owned(t.into_owned()));
    }
    if let Some(e) = utf16_without_bom(bytes) {
        let codec = match e {
            Encoding::Utf16Be => encoding_rs::UTF_16BE,
            _ => encoding_rs::UTF_16LE,
        };
        let (t, _) = codec.decode_without_bom_handling(bytes);
        return (e, false, Cow::Owned(t.into_owned()));
    }
    (Encoding::Utf8, false, String::from_utf8_lossy(bytes))
}

/// UTF-16 without a byte-order mark, told by its zero bytes: text written mostly in
/// Latin script has a zero as every other byte (the high byte of each unit), which
/// UTF-8 text never has (it holds no NUL). Little-endian when the zeros are at odd
/// offsets, big-endian at even ones; `None` unless the first 4 KiB hold at least 8
/// units, three quarters of them show it, and almost none the other way (a stray NUL
/// in a short UTF-8 file is no UTF-16).
fn utf16_without_bom(bytes: &[u8]) -> Option<Encoding> {
    let head = &bytes[..bytes.len().min(4096) & !1];
    let units = head.len() / 2;
    if units < 8 {
        return None;
    }
    let (mut even, mut odd) = (0, 0);
    for pair in head.chunks_exact(2) {
        even += usize::from(pair[0] == 0);
        odd += usize::from(pair[1] == 0);
    }
    if odd * 4 >= units * 3 && even * 20 <= units {
        Some(Encoding::Utf16Le)
    } else if even * 4 >= units * 3 && odd * 20 <= units {
        Some(Encoding::Utf16Be)
    } else {
        None
    }
}

/// A record's fields as they stand in the text, and whether each was quoted.
type Record<'a> = Vec<(&'a str, bool)>;

/// The records of `text` split by `delim` and `quote` (quote-aware, a doubled quote
/// inside quotes escapes it; a line ends at LF, CRLF or a lone CR; blank lines are
/// skipped). With `whole` false the last record, maybe cut, is dropped.
fn records(text: &str, delim: u8, quote: Option<u8>, whole: bool) -> Vec<Record<'_>> {
    split(text, delim, quote, whole).0
}

/// [`records`], and how many quoted fields are malformed: text follows the closing
/// quote before the next delimiter or line end (`"a,b"|"c` split at `,`), a sign that
/// the delimiter is wrong.
fn split(text: &str, delim: u8, quote: Option<u8>, whole: bool) -> (Vec<Record<'_>>, usize) {
    let b = text.as_bytes();
    let mut out: Vec<Record<'_>> = vec![];
    let mut rec: Record<'_> = vec![];
    let mut malformed = 0;
    let (mut i, mut start, mut quoted, mut in_q) = (0usize, 0usize, false, false);
    let field = |s: usize, e: usize, q: bool| -> (&str, bool) {
        let mut e = e;
        if e > s && b[e - 1] == b'\r' {
            e -= 1;
        }
        // Splits fall on ASCII bytes, so these are char boundaries.
        (&text[s..e], q)
    };
    while i < b.len() && out.len() < SAMPLE_RECORDS {
        let c = b[i];
        if in_q {
            if Some(c) == quote {
                if b.get(i + 1) == Some(&c) {
                    i += 2;
                    continue;
                }
                in_q = false;
                if b.get(i + 1)
                    .is_some_and(|&n| n != delim && n != b'\n' && n != b'\r')
                {
                    malformed += 1;
                }
            }
            i += 1;
            continue;
        }
        let line_end = c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n'));
        if Some(c) == quote && i == start {
            in_q = true;
            quoted = true;
        } else if c == delim {
            rec.push(field(start, i, quoted));
            start = i + 1;
            quoted = false;
        } else if line_end {
            rec.push(field(start, i, quoted));
            let blank = rec.len() == 1 && rec[0].0.is_empty() && !rec[0].1;
            if !blank {
                out.push(std::mem::take(&mut rec));
            }
            rec.clear();
            start = i + 1;
            quoted = false;
        }
        i += 1;
    }
    if i >= b.len() && whole && start < b.len() && !in_q {
        rec.push(field(start, b.len(), quoted));
        out.push(rec);
    }
    (out, malformed)
}

/// What a value looks like, for the header test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Empty,
    Number,
    Date,
    Text,
}

/// `1.234,56`, `-0,5`, `12,5`: a number written with a decimal comma.
pub fn is_decimal_comma(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let Some((int, frac)) = s.split_once(',') else {
        return false;
    };
    if frac.is_empty() || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let groups: Vec<&str> = int.split('.').collect();
    match groups.as_slice() {
        [one] => !one.is_empty() && one.bytes().all(|c| c.is_ascii_digit()),
        [first, rest @ ..] => {
            (1..=3).contains(&first.len())
                && first.bytes().all(|c| c.is_ascii_digit())
                && rest
                    .iter()
                    .all(|g| g.len() == 3 && g.bytes().all(|c| c.is_ascii_digit()))
        }
        [] => false,
    }
}

/// `2026-11-23`, `23.11.2026`, `11/23/2026` (and with a time after a space or `T`).
fn is_date(s: &str) -> bool {
    let d = s.split([' ', 'T']).next().unwrap_or("");
    let parts: Vec<&str> = d.split(['-', '.', '/']).collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|c| c.is_ascii_digit()))
        && parts.iter().any(|p| p.len() == 4)
}

fn kind(field: &str, quote: Option<u8>) -> Kind {
    let mut s = field.trim();
    if let Some(q) = quote.map(char::from) {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            s = &s[1..s.len() - 1];
        }
    }
    if s.is_empty() {
        Kind::Empty
    } else if s.parse::<f64>().is_ok_and(f64::is_finite) || is_decimal_comma(s) {
        Kind::Number
    } else if is_date(s) {
        Kind::Date
    } else {
        Kind::Text
    }
}

/// Whether the first of `recs` (all of one width) is data rather than column names.
fn first_is_data(recs: &[Record<'_>], quote: Option<u8>) -> bool {
    let kinds: Vec<Vec<Kind>> = recs
        .iter()
        .map(|r| r.iter().map(|(f, _)| kind(f, quote)).collect())
        .collect();
    first_row_is_data(&kinds)
}

/// Whether the first of `rows` (each value's [`Kind`]) is data rather than column
/// names, by the rule in the module comment; a row shorter than another has nothing
/// in the columns it lacks. Delimited text and spreadsheets share it.
pub(crate) fn first_row_is_data(rows: &[Vec<Kind>]) -> bool {
    let Some((first, rest)) = rows.split_first() else {
        return false;
    };
    if rest.is_empty() {
        // One record: data only when every field is a number or a date.
        return first.iter().all(|k| matches!(k, Kind::Number | Kind::Date));
    }
    let (mut data, mut names) = (0, 0);
    for (col, name) in first.iter().enumerate() {
        let mut kinds = rest
            .iter()
            .filter_map(|r| r.get(col))
            .copied()
            .filter(|k| *k != Kind::Empty);
        let Some(k) = kinds.next() else { continue };
        if k == Kind::Text || !kinds.all(|x| x == k) {
            continue;
        }
        match name {
            Kind::Empty => {}
            f if *f == k => data += 1,
            _ => names += 1,
        }
    }
    data > 0 && names == 0
}

/// The common delimiters, in the order that breaks ties.
const COMMON: [u8; 4] = [b',', b'\t', b';', b'|'];

/// A candidate's standing: higher is better, field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    /// Every sampled record is this wide (2 or more).
    consistent: bool,
    /// No quoted field has text after its closing quote.
    well_formed: bool,
    /// One of the common delimiters: another byte wins only where none fits.
    common: bool,
    /// Per mille of unquoted fields that hold no other common delimiter.
    clean: usize,
    width: usize,
    rank: std::cmp::Reverse<usize>,
    /// 2: a quote the sample uses; 1: the usual choice when no field is quoted (`"`, or
    /// none for tab-separated text); 0: otherwise.
    quote: u8,
}

/// The delimiter, quote and header of delimited `text`, whether a delimiter made every
/// sampled record the same width, the records sampled, and another delimiter that fits
/// the sample as well (every record one width, well-formed quotes, as clean) but splits
/// it otherwise: a tie that is reported, not settled silently. `delimiter` and `quote`
/// given are used as is.
/// `csv`: the name says CSV, so when no delimiter fits it is `,` (records of another
/// width are then errors); otherwise a header without any common delimiter makes the
/// text one column.
pub fn delimited(
    text: &str,
    whole: bool,
    delimiter: Option<u8>,
    quote: Option<Option<u8>>,
    csv: bool,
) -> (u8, Option<u8>, bool, bool, usize, Option<u8>) {
    let first_line = text.split(['\n', '\r']).next().unwrap_or("");
    let mut delims: Vec<u8> = match delimiter {
        Some(d) => vec![d],
        None => COMMON.to_vec(),
    };
    if delimiter.is_none() {
        for b in first_line.bytes() {
            if b.is_ascii_punctuation() && !matches!(b, b'"' | b'\'') && !delims.contains(&b) {
                delims.push(b);
            }
        }
    }
    let quotes: Vec<Option<u8>> = match quote {
        Some(q) => vec![q],
        None => vec![Some(b'"'), None, Some(b'\'')],
    };
    let mut best: Option<(Score, u8, Option<u8>)> = None;
    let mut scored: Vec<(Score, u8)> = vec![];
    for (rank, &d) in delims.iter().enumerate() {
        // Quoting is decided before fields are counted: where fields start with `"`
        // (split at `d`) and end with it, they are quoted fields, as RFC 4180 reads
        // them, and reading them otherwise is no candidate (it would split `"Doe,
        // John"` in two). A field such as `"quoted" stays` is no quoted field.
        // The split at `d` with `"` quoting, made once: it decides the rule and is the
        // `"` candidate's own.
        let mut dq = (quote.is_none() && d != b'"').then(|| split(text, d, Some(b'"'), whole));
        let rfc_quoted = dq.as_ref().is_some_and(|(recs, malformed)| {
            *malformed == 0 && recs.iter().flatten().any(|(_, q)| *q)
        });
        for &q in &quotes {
            if Some(d) == q || (rfc_quoted && q != Some(b'"')) {
                continue;
            }
            let made = if q == Some(b'"') { dq.take() } else { None };
            let (recs, malformed) = made.unwrap_or_else(|| split(text, d, q, whole));
            let Some(width) = recs.first().map(Vec::len) else {
                continue;
            };
            let consistent = width >= 2 && recs.iter().all(|r| r.len() == width);
            // Unquoted fields that hold another common delimiter: a sign of the wrong split.
            let fields = recs.iter().map(Vec::len).sum::<usize>().max(1);
            let unclean = recs
                .iter()
                .flatten()
                .filter(|(f, quoted)| {
                    !quoted
                        && f.bytes().any(|b| COMMON.contains(&b) && b != d)
                        && !(d != b',' && is_decimal_comma(f.trim()))
                })
                .count();
            let used = recs.iter().flatten().any(|(_, quoted)| *quoted);
            let quote = match q {
                _ if used => 2,
                Some(b'"') if d != b'\t' => 1,
                None if d == b'\t' => 1,
                _ => 0,
            };
            let score = Score {
                consistent,
                well_formed: malformed == 0,
                common: COMMON.contains(&d),
                clean: 1000 - unclean * 1000 / fields,
                width,
                rank: std::cmp::Reverse(rank),
                quote,
            };
            scored.push((score, d));
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, d, q));
            }
        }
    }
    let fallback_quote = quote.unwrap_or(Some(b'"'));
    let Some((_, d, q)) = best.filter(|(s, _, _)| s.consistent) else {
        // No delimiter fits. A header with none of the common ones names one column
        // (its values may hold commas): read it whole, with a delimiter it lacks.
        let one_column = !csv && !first_line.bytes().any(|b| COMMON.contains(&b));
        let absent = COMMON
            .iter()
            .rev()
            .copied()
            .find(|c| !text.as_bytes().contains(c));
        let d = match (delimiter, one_column, absent) {
            (Some(d), _, _) => d,
            (None, true, Some(a)) => a,
            _ => b',',
        };
        let recs = records(text, d, fallback_quote, whole);
        return (
            d,
            fallback_quote,
            !first_is_data(&recs, fallback_quote),
            false,
            recs.len(),
            None,
        );
    };
    let won = best.map(|(s, _, _)| s);
    let also = scored
        .iter()
        .filter(|(s, other)| {
            *other != d
                && s.consistent
                && s.well_formed
                && won.is_some_and(|w| w.well_formed && s.clean == w.clean && s.width != w.width)
        })
        .max_by_key(|(s, _)| *s)
        .map(|(_, other)| *other);
    let recs = records(text, d, q, whole);
    (d, q, !first_is_data(&recs, q), true, recs.len(), also)
}

/// What the caller fixed; sniffing finds the rest.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Given {
    pub format: Option<Format>,
    pub delimiter: Option<u8>,
    pub quote: Option<Option<u8>>,
    pub encoding: Encoding,
}

/// Sniffs `input` from its first bytes (which stay to be read); `None` when it has none
/// to peek (the program's own values).
pub(crate) fn sniff_input(input: &super::Input, given: Given) -> Result<Option<Dialect>> {
    let Some((raw, raw_whole)) = input.peek()? else {
        return Ok(None);
    };
    let compression = if input.is_gzip() {
        Some(Compression::Gzip)
    } else {
        Compression::of(&raw)
    };
    // Typed files by their magic bytes: a Parquet file, an Arrow IPC file or stream.
    if compression.is_none() && given.format.is_none() {
        let typed = if raw.starts_with(b"PAR1") {
            Some(Format::Parquet)
        } else if raw.starts_with(b"ARROW1") || raw.starts_with(&[0xff, 0xff, 0xff, 0xff]) {
            Some(Format::Arrow)
        } else {
            None
        };
        if let Some(format) = typed {
            return Ok(Some(Dialect {
                compression,
                encoding: Encoding::Utf8,
                bom: false,
                valid_text: true,
                encoding_guessed: false,
                format,
                delimiter: b',',
                quote: None,
                header: true,
                delimiter_found: false,
                sampled_records: 0,
                also_fits: None,
                record: None,
            }));
        }
    }
    let (bytes, whole): (Cow<'_, [u8]>, bool) = match compression {
        Some(c) => {
            // A stream that cannot be decoded is left to the reader, whose error says how.
            let Ok((b, w)) = decompressed_sample(c, &raw, raw_whole) else {
                return Ok(None);
            };
            (Cow::Owned(b), w)
        }
        None => (Cow::Borrowed(&raw[..]), raw_whole),
    };
    let (mut encoding, bom, text) = text_of(&bytes, given.encoding);
    // UTF-16 told by its zero bytes, without a byte-order mark, is a guess, and says so.
    let utf16_guessed = given.encoding == Encoding::Utf8 && !bom && encoding != Encoding::Utf8;
    let valid_text = encoding != Encoding::Utf8 || {
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        match std::str::from_utf8(body) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none() && !whole,
        }
    };
    let format = given.format.unwrap_or_else(|| format_of(&text));
    let (delimiter, quote, header, delimiter_found, sampled_records, also_fits) = match format {
        Format::Csv => delimited(
            &text,
            whole,
            given.delimiter,
            given.quote,
            given.format == Some(Format::Csv),
        ),
        // Quoting in tab-separated text follows the same rule as in CSV: fields that
        // start and end with `"` are quoted; without such fields, none is.
        Format::Tsv => delimited(
            &text,
            whole,
            Some(given.delimiter.unwrap_or(b'\t')),
            given.quote,
            false,
        ),
        _ => (b',', None, true, false, 0, None),
    };
    let mut record = None;
    if format == Format::Xml {
        // The XML rules: a byte-order mark, or the declaration (a contradiction is left
        // to the reader, whose error says where).
        if given.encoding == Encoding::Utf8 {
            encoding = super::xml::encoding_of(&bytes).unwrap_or(encoding);
        }
        // A head that cannot settle the path (a first record longer than it) names none:
        // the reader reads further.
        record = super::xml::choose_record(text.as_bytes(), whole)
            .ok()
            .flatten()
            .map(|p| p.join("/"));
    }
    if format == Format::Json {
        record = super::json::record_path::sniffed(text.as_bytes())
            .map(|p| super::json::record_path::shown(&p));
    }
    Ok(Some(Dialect {
        compression,
        encoding,
        bom,
        valid_text,
        encoding_guessed: utf16_guessed,
        format,
        delimiter,
        quote,
        header,
        delimiter_found,
        sampled_records,
        also_fits,
        record,
    }))
}

/// The format of `text` by its first non-blank character. Text that starts with `{` is
/// newline-delimited JSON, unless its first line is no whole JSON value and the object
/// it starts holds an array of objects in the head (a document whose records are at a
/// path, see [`super::ReadOptions::record`]).
pub fn format_of(text: &str) -> Format {
    let text = text.trim_start();
    match text.as_bytes().first() {
        Some(b'[') => Format::Json,
        Some(b'{') => {
            let first_line = text.split('\n').next().unwrap_or_default();
            let one_value = serde_json::from_str::<serde::de::IgnoredAny>(first_line).is_ok();
            if !one_value && super::json::record_path::sniffed(text.as_bytes()).is_some() {
                Format::Json
            } else {
                Format::Ndjson
            }
        }
        Some(b'<') => Format::Xml,
        _ => Format::Csv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(text: &str) -> (u8, Option<u8>, bool, bool) {
        let (d, q, h, found, _, _) = delimited(text, true, None, None, false);
        (d, q, h, found)
    }

    #[test]
    fn spreadsheet_exports_in_a_european_locale() {
        let t = "Name;Preis;Datum\r\nÄpfel;1.234,56;23.11.2026\r\nBirnen;0,5;01.12.2026\r\n";
        assert_eq!(sniff(t), (b';', Some(b'"'), true, true));
    }

    #[test]
    fn tabs_pipes_and_quoted_delimiters() {
        assert_eq!(sniff("a\tb\n1\t2\n").0, b'\t');
        assert_eq!(sniff("a|b|c\n1|x,y|3\n").0, b'|');
        let q = "name,note\n\"Smith; John\",\"a, b\"\n\"Doe; Jane\",c\n";
        assert_eq!(sniff(q), (b',', Some(b'"'), true, true));
    }

    #[test]
    fn quoting_is_decided_before_fields_are_counted() {
        // Every record has one quoted delimiter: quoting is still quoting.
        let people = "1,\"Doe, John\",Paris\n2,\"Roe, Jane\",Rome\n";
        assert_eq!(sniff(people), (b',', Some(b'"'), false, true));
        // A delimiter that occurs only inside quotes is not the delimiter.
        let pipes = "\"a,b\"|\"c,d\"\n\"e,f\"|\"g,h\"\n\"i\"|\"j\"\n";
        assert_eq!(sniff(pipes).0, b'|');
        assert_eq!(sniff(pipes).1, Some(b'"'));
        // Tab-separated text: quoted when its fields start with quotes, else not.
        let tsv = |t: &str| delimited(t, true, Some(b'\t'), None, false).1;
        assert_eq!(tsv("\"a\tb\"\tc\n\"d\"\te\n"), Some(b'"'));
        assert_eq!(tsv("a\tb\n1\t2 \"in\" text\n"), None);
    }

    #[test]
    fn utf16_without_a_byte_order_mark_is_told_by_its_zero_bytes() {
        let text = "name,city\nZoë,Paris\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        let (e, bom, t) = text_of(&le, Encoding::Utf8);
        assert_eq!((e, bom, t.as_ref()), (Encoding::Utf16Le, false, text));
        let (e, _, t) = text_of(&be, Encoding::Utf8);
        assert_eq!((e, t.as_ref()), (Encoding::Utf16Be, text));
        // UTF-8, also with a NUL byte or two, and too little to tell, stay UTF-8.
        for s in [
            &b"a,b\n1,\x002\n"[..],
            b"a\x00",
            b"a\nx\x00\n",
            b"a\x00b\x00c\x00d\x00\n\x00x\n",
            "日本語,テキスト\n".as_bytes(),
        ] {
            assert_eq!(text_of(s, Encoding::Utf8).0, Encoding::Utf8, "{s:?}");
        }
    }

    #[test]
    fn a_lone_cr_ends_a_record() {
        let (d, _, h, found, n, _) = delimited("a,b\r1,2\r3,4\r", true, None, None, false);
        assert_eq!((d, h, found, n), (b',', true, true, 3));
    }

    #[test]
    fn a_tie_between_delimiters_is_reported() {
        let (d, _, _, _, _, also) = delimited("a.b.c-d\n1.2.3-4\n", true, None, None, false);
        assert_eq!((d, also), (b'.', Some(b'-')));
        let (_, _, _, _, _, also) = delimited("a,b\n1,2\n", true, None, None, false);
        assert_eq!(also, None);
    }

    #[test]
    fn headerless_numbers_and_one_column_files() {
        assert_eq!(
            sniff("1,2.5,2026-01-01\n3,4,2026-01-02\n"),
            (b',', Some(b'"'), false, true)
        );
        let one = sniff("name\nAda\nAlan\n");
        assert!(!one.3, "no delimiter was found");
        assert!(one.2);
        // One column whose values hold commas: read whole, not split.
        let commas = sniff("name\nSmith, John\nDoe, Jane\n");
        assert_eq!((commas.0, commas.3), (b'|', false));
    }

    #[test]
    fn decimal_commas_are_told_from_thousands() {
        for yes in ["1,5", "-0,25", "1.234,56", "12.345.678,9"] {
            assert!(is_decimal_comma(yes), "{yes}");
        }
        for no in ["1,", ",5", "1.23,4.5", "12.34,5", "a,b", "1234"] {
            assert!(!is_decimal_comma(no), "{no}");
        }
    }

    #[test]
    fn formats_and_compressions_by_their_first_bytes() {
        assert_eq!(format_of("  [{\"a\":1}]"), Format::Json);
        assert_eq!(format_of("{\"a\":1}\n"), Format::Ndjson);
        assert_eq!(
            format_of("{\"a\":[{\"b\":1}]}\n{\"a\":[]}\n"),
            Format::Ndjson
        );
        assert_eq!(
            format_of("{\n \"v\": 1,\n \"List\": [\n  {\"a\": 1"),
            Format::Json
        );
        assert_eq!(format_of("{\n \"v\": 1\n}\n"), Format::Ndjson);
        assert_eq!(format_of("a,b\n"), Format::Csv);
        assert_eq!(format_of("\n<?xml version=\"1.0\"?><a/>"), Format::Xml);
        let parquet = crate::Input::bytes("x.data", &b"PAR1\0\0"[..]);
        let given = Given {
            format: None,
            delimiter: None,
            quote: None,
            encoding: Encoding::Utf8,
        };
        let d = sniff_input(&parquet, given)
            .ok()
            .flatten()
            .map(|d| (d.format, d.describe()));
        assert_eq!(d, Some((Format::Parquet, "Parquet".to_string())));
        assert_eq!(Compression::of(&[0x1f, 0x8b, 8]), Some(Compression::Gzip));
        assert_eq!(Compression::of(b"BZh91AY&SY"), Some(Compression::Bzip2));
        assert_eq!(Compression::of(b"BZh9,name\n"), None);
        assert_eq!(Compression::of(b"a,b"), None);
    }
}
