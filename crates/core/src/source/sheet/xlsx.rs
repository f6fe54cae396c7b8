//! An `.xlsx` (or `.xlsm`) worksheet read on several threads: one inflates the sheet's
//! XML and cuts it into chunks of whole `<row>` elements, workers turn the chunks into
//! cells, and the cells are handed on in the sheet's order.
//!
//! Hand-written where calamine's streaming cell reader would do, for a measured gain:
//! that reader inflates, parses and types a sheet on one thread (a 1M-row, 21-column
//! sheet: about 13 s of its 15 s on that thread, `bench/spreadsheets.py`); here only the
//! inflating (about 2 s) stays on one. What a cell holds follows calamine's reader
//! exactly: the same events from the same XML parser (quick-xml, configured as calamine
//! configures it), mapped by the same rules (its `next_cell`, `read_value`, `read_v` and
//! `read_string` in `xlsx/`), into calamine's own [`Data`]. A differential test holds the
//! two readers to the same cells. A workbook laid out otherwise than this reader expects
//! (no `xl/workbook.xml`, a sheet whose main namespace has a prefix, an encoding other
//! than UTF-8) is left to calamine.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use calamine::{CellErrorType, Data, ExcelDateTime, ExcelDateTimeType};
use crossbeam_channel::bounded;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::QName;
use quick_xml::Reader;

type Zip = zip::ZipArchive<std::io::BufReader<std::fs::File>>;

/// A number format's kind, as calamine tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Other,
    DateTime,
    TimeDelta,
}

/// What every cell of the workbook is read with.
pub(super) struct Book {
    zip: Zip,
    /// The sheet's part in the archive.
    part: String,
    strings: Vec<String>,
    /// Each cell style's number format kind, by the style's index.
    formats: Vec<Format>,
    is_1904: bool,
}

/// An `Err` is a message, as calamine's are.
type Res<T> = std::result::Result<T, String>;

fn xml_err(e: impl std::fmt::Display) -> String {
    format!("Xml error: {e}")
}

/// A reader configured as calamine configures its own.
fn reader(bytes: &[u8]) -> Reader<&[u8]> {
    let mut r = Reader::from_reader(bytes);
    let c = r.config_mut();
    c.check_end_names = false;
    c.trim_text(false);
    c.check_comments = false;
    c.expand_empty_elements = true;
    r
}

/// The archive's name for the part `name` (ASCII case ignored, `\\` read as `/`, as
/// calamine looks parts up).
fn find_part(zip: &Zip, name: &str) -> Option<String> {
    zip.file_names()
        .filter_map(|n| n.ok())
        .find(|n| n.replace('\\', "/").eq_ignore_ascii_case(name))
        .map(|n| n.into_owned())
}

/// The part named `name` (found as [`find_part`] finds it), whole.
fn part(zip: &mut Zip, name: &str) -> Res<Option<Vec<u8>>> {
    let Some(found) = find_part(zip, name) else {
        return Ok(None);
    };
    let mut f = zip.by_name(&found).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(f.size().min(64 << 20) as usize);
    f.read_to_end(&mut out).map_err(|e| e.to_string())?;
    Ok(Some(out))
}

/// An attribute's raw value, by its exact key (the last of repeated ones).
fn attr<'a>(e: &'a BytesStart<'_>, key: &str) -> Res<Option<std::borrow::Cow<'a, str>>> {
    let mut found = None;
    for a in e.attributes().with_checks(false) {
        let a = a.map_err(xml_err)?;
        if a.key.as_ref() == key {
            found = Some(a.value);
        }
    }
    Ok(found)
}

impl Book {
    /// The workbook at `path` ready to read `sheet`, or `None` where its layout is one
    /// this reader leaves to calamine.
    pub(super) fn open(path: &Path, sheet: &str) -> Res<Option<Book>> {
        let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let Ok(mut zip) = zip::ZipArchive::new(std::io::BufReader::new(f)) else {
            return Ok(None);
        };
        let (Some(workbook), Some(rels)) = (
            part(&mut zip, "xl/workbook.xml")?,
            part(&mut zip, "xl/_rels/workbook.xml.rels")?,
        ) else {
            return Ok(None);
        };
        let targets = relationships(&rels)?;
        let (sheets, is_1904) = sheets(&workbook)?;
        let Some(target) = sheets
            .iter()
            .find(|(n, _)| n == sheet)
            .and_then(|(_, id)| targets.get(id))
        else {
            return Ok(None);
        };
        let part_name = match target.strip_prefix('/') {
            Some(abs) => abs.to_owned(),
            None => format!("xl/{target}"),
        };
        let Some(found) = find_part(&zip, &part_name) else {
            return Ok(None);
        };
        let strings = match part(&mut zip, "xl/sharedStrings.xml")? {
            Some(xml) => shared_strings(&xml)?,
            None => vec![],
        };
        let formats = match part(&mut zip, "xl/styles.xml")? {
            Some(xml) => formats(&xml)?,
            None => vec![],
        };
        Ok(Some(Book {
            zip,
            part: found,
            strings,
            formats,
            is_1904,
        }))
    }
}

/// A relationships part: each `Id`'s `Target`.
fn relationships(xml: &[u8]) -> Res<HashMap<String, String>> {
    let mut r = reader(xml);
    let mut out = HashMap::new();
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "Relationship" => {
                if let (Some(id), Some(target)) = (attr(&e, "Id")?, attr(&e, "Target")?) {
                    out.insert(id.into_owned(), target.into_owned());
                }
            }
            Event::Eof => return Ok(out),
            _ => {}
        }
    }
}

/// The workbook part: each sheet's name and relationship, and the date system.
fn sheets(xml: &[u8]) -> Res<(Vec<(String, String)>, bool)> {
    let mut r = reader(xml);
    let (mut out, mut is_1904) = (vec![], false);
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "sheet" => {
                let (mut name, mut id) = (String::new(), String::new());
                for a in e.attributes().with_checks(false) {
                    let a = a.map_err(xml_err)?;
                    let key = a.key.as_ref();
                    if key == "name" {
                        name = quick_xml::escape::unescape(&a.value)
                            .map_err(xml_err)?
                            .into_owned();
                    } else if key == "id" || key.ends_with(":id") {
                        id = a.value.into_owned();
                    }
                }
                out.push((name, id));
            }
            Event::Start(e) if e.local_name().as_ref() == "workbookPr" => {
                if let Some(v) = attr(&e, "date1904")? {
                    is_1904 = v == "1" || v == "true";
                }
            }
            Event::Eof => return Ok((out, is_1904)),
            _ => {}
        }
    }
}

/// The shared strings, each `<si>` read as calamine reads it.
fn shared_strings(xml: &[u8]) -> Res<Vec<String>> {
    let mut r = reader(xml);
    let mut out = vec![];
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "si" => {
                if let Some(s) = read_string(&mut r, e.name())? {
                    out.push(s);
                }
            }
            Event::End(e) if e.local_name().as_ref() == "sst" => return Ok(out),
            Event::Eof => return Err("Unexpected end of xml, expecting '</sst>'".into()),
            _ => {}
        }
    }
}

/// Each cell style's number format kind (`cellXfs`), by calamine's rules.
fn formats(xml: &[u8]) -> Res<Vec<Format>> {
    let mut r = reader(xml);
    let (mut custom, mut out) = (HashMap::new(), vec![]);
    let mut in_xfs = false;
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "numFmt" => {
                if let (Some(id), Some(code)) = (attr(&e, "numFmtId")?, attr(&e, "formatCode")?) {
                    let code = quick_xml::escape::unescape(&code).map_err(xml_err)?;
                    custom.insert(id.into_owned(), code.into_owned());
                }
            }
            Event::Start(e) if e.local_name().as_ref() == "cellXfs" => in_xfs = true,
            Event::End(e) if e.local_name().as_ref() == "cellXfs" => in_xfs = false,
            Event::Start(e) if in_xfs && e.local_name().as_ref() == "xf" => {
                out.push(match attr(&e, "numFmtId")? {
                    None => Format::Other,
                    Some(id) => match custom.get(id.as_ref()) {
                        Some(code) => custom_format(code),
                        None => builtin_format(&id),
                    },
                });
            }
            Event::Eof => return Ok(out),
            _ => {}
        }
    }
}

/// A custom number format's kind: a date or time where its first section has a date
/// or time token outside quotes, escapes and brackets; a duration where `[h]`, `[m]` or
/// `[s]` comes first.
fn custom_format(code: &str) -> Format {
    let (mut escaped, mut quoted, mut ap, mut hms) = (false, false, false, false);
    let mut brackets = 0u8;
    let mut prev = ' ';
    for c in code.chars() {
        if escaped {
            escaped = false;
        } else if matches!(c, '_' | '\\' | '*') {
            escaped = true;
        } else if quoted {
            quoted = c != '"';
        } else if c == '"' {
            quoted = true;
        } else if c == ';' {
            return Format::Other;
        } else if c == '[' {
            brackets += 1;
        } else if c == ']' && brackets == 1 && hms {
            return Format::TimeDelta;
        } else if c == ']' {
            brackets = brackets.saturating_sub(1);
        } else if matches!(c, 'a' | 'A') && !ap && brackets == 0 {
            ap = true;
        } else if brackets == 0
            && ((ap && matches!(c, 'p' | 'm' | '/' | 'P' | 'M'))
                || (!ap && matches!(c, 'd' | 'm' | 'h' | 'y' | 's' | 'D' | 'M' | 'H' | 'Y' | 'S')))
        {
            return Format::DateTime;
        } else if !(hms && c.eq_ignore_ascii_case(&prev)) {
            hms = prev == '[' && matches!(c, 'm' | 'h' | 's' | 'M' | 'H' | 'S');
        }
        prev = c;
    }
    Format::Other
}

/// A built-in number format's kind, by its id.
fn builtin_format(id: &str) -> Format {
    match id {
        "14" | "15" | "16" | "17" | "18" | "19" | "20" | "21" | "22" | "45" | "47" => {
            Format::DateTime
        }
        "27" | "28" | "29" | "30" | "31" | "32" | "33" | "34" | "35" | "36" | "50" | "51"
        | "52" | "53" | "54" | "55" | "56" | "57" | "58" => Format::DateTime,
        "46" => Format::TimeDelta,
        _ => Format::Other,
    }
}

/// A string (`<si>`, `<is>`) up to the end of `closing`: its `<t>`s joined (phonetic
/// runs left out), each trimmed of ASCII blanks unless `xml:space="preserve"`, Excel's
/// `_xHHHH_` escapes undone; `None` where the string has no `<t>` and no `<r>`
/// is never returned: an element without either is the empty string.
fn read_string(r: &mut Reader<&[u8]>, closing: QName<'_>) -> Res<Option<String>> {
    let closing = closing.as_ref().to_owned();
    let mut rich: Option<String> = None;
    let mut phonetic = false;
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "r" && rich.is_none() => {
                rich = Some(String::new());
            }
            Event::Start(e) if e.local_name().as_ref() == "rPh" => phonetic = true,
            Event::End(e) if e.name().as_ref() == closing => {
                return Ok(Some(rich.unwrap_or_default()));
            }
            Event::End(e) if e.local_name().as_ref() == "rPh" => phonetic = false,
            Event::Start(e) if e.local_name().as_ref() == "t" && !phonetic => {
                let preserve = matches!(attr(&e, "xml:space")?, Some(v) if v == "preserve");
                let mut text = String::new();
                loop {
                    match r.read_event().map_err(xml_err)? {
                        Event::Text(t) => text.push_str(&t.xml10_content()),
                        Event::CData(t) => text.push_str(&t.xml10_content()),
                        Event::GeneralRef(g) => entity(&g, &mut text)?,
                        Event::End(end) if end.name() == e.name() => break,
                        Event::Eof => return Err("Unexpected end of xml, expecting '</t>'".into()),
                        _ => {}
                    }
                }
                let text = if preserve {
                    unescape_excel(&text)
                } else {
                    unescape_excel(text.trim_matches([' ', '\t', '\r', '\n']))
                };
                match &mut rich {
                    Some(s) => s.push_str(&text),
                    None => rich = Some(text),
                }
            }
            Event::Eof => return Err("Unexpected end of xml".into()),
            _ => {}
        }
    }
}

/// Appends what the reference `&name;` stands for: one of XML's five entities or a
/// character reference; any other is an error.
fn entity(g: &quick_xml::events::BytesRef<'_>, out: &mut String) -> Res<()> {
    let name: &str = g;
    if let Some(s) = quick_xml::escape::resolve_xml_entity(name) {
        out.push_str(s);
        return Ok(());
    }
    match g.resolve_char_ref().map_err(xml_err)? {
        Some(c) => {
            out.push(c);
            Ok(())
        }
        None => Err(format!("Xml error: unrecognized entity `&{name};`")),
    }
}

/// Undoes Excel's `_xHHHH_` escapes (a UTF-16 code unit each; a surrogate pair as two;
/// a lone surrogate becomes U+FFFD).
fn unescape_excel(s: &str) -> String {
    fn unit(s: &[u8], at: usize) -> Option<u16> {
        let b = s.get(at..at + 7)?;
        if b[0] != b'_'
            || b[1] != b'x'
            || b[6] != b'_'
            || !b[2..6].iter().all(u8::is_ascii_hexdigit)
        {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&b[2..6]).ok()?, 16).ok()
    }
    if !s.contains("_x") {
        return s.to_owned();
    }
    let b = s.as_bytes();
    let (mut out, mut copied, mut i) = (String::with_capacity(s.len()), 0, 0);
    while let Some(off) = s[i..].find('_') {
        let at = i + off;
        let Some(u) = unit(b, at) else {
            i = at + 1;
            continue;
        };
        out.push_str(&s[copied..at]);
        let mut next = at + 7;
        let c = match u {
            0xD800..=0xDBFF => match unit(b, next) {
                Some(low @ 0xDC00..=0xDFFF) => {
                    next += 7;
                    char::from_u32(
                        0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(low) - 0xDC00),
                    )
                }
                _ => None,
            },
            _ => char::from_u32(u32::from(u)),
        };
        out.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
        copied = next;
        i = next;
    }
    out.push_str(&s[copied..]);
    out
}

/// A cell reference's `(row, column)` from 0 (`AB12`: (11, 27)); a row without a column
/// has column `None`.
fn row_column(r: &str) -> Res<(u32, Option<u32>)> {
    let b = r.as_bytes();
    let (mut col, mut row, mut i) = (0u32, 0u32, 0);
    let bad = |c: u8| format!("Expecting alphanumeric character, got {c:X}");
    while i < b.len() {
        match b[i] {
            c @ b'A'..=b'Z' => col = col.wrapping_mul(26).wrapping_add(u32::from(c - b'A') + 1),
            c @ b'a'..=b'z' => col = col.wrapping_mul(26).wrapping_add(u32::from(c - b'a') + 1),
            c @ b'0'..=b'9' => {
                row = u32::from(c - b'0');
                i += 1;
                break;
            }
            c => return Err(bad(c)),
        }
        i += 1;
    }
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => row = row.wrapping_mul(10).wrapping_add(u32::from(c - b'0')),
            c => return Err(bad(c)),
        }
        i += 1;
    }
    let row = row
        .checked_sub(1)
        .ok_or_else(|| "Range without row component".to_string())?;
    Ok((row, col.checked_sub(1)))
}

/// A row number as a chunk's worker knows it: exact, or counted from the row the
/// chunk starts on (a `<row>` without `r` follows the row before, in an earlier chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowAt {
    Exact(u32),
    After(u32),
}

impl RowAt {
    fn next(self) -> RowAt {
        match self {
            RowAt::Exact(n) => RowAt::Exact(n.wrapping_add(1)),
            RowAt::After(n) => RowAt::After(n.wrapping_add(1)),
        }
    }

    fn at(self, base: u32) -> u32 {
        match self {
            RowAt::Exact(n) => n,
            RowAt::After(n) => base.wrapping_add(n),
        }
    }
}

/// A chunk's cells in sheet order, each with a value, and the row the next chunk
/// starts on.
struct Cells<V> {
    cells: Vec<(RowAt, u32, V)>,
    end: RowAt,
}

/// Reads one chunk of whole `<row>` elements (a worker's part), each cell's value
/// mapped by `map` (`None`: no value).
fn chunk_cells<V>(xml: &[u8], book: &Shared<'_>, map: fn(Data) -> Option<V>) -> Res<Cells<V>> {
    let mut r = reader(xml);
    let (mut row, mut col) = (RowAt::After(0), 0u32);
    let mut cells = vec![];
    loop {
        match r.read_event().map_err(xml_err)? {
            Event::Start(e) if e.local_name().as_ref() == "row" => {
                if let Some(at) = attr(&e, "r")? {
                    row = RowAt::Exact(row_column(&at)?.0);
                }
            }
            Event::End(e) if e.local_name().as_ref() == "row" => {
                row = row.next();
                col = 0;
            }
            Event::Start(e) if e.local_name().as_ref() == "c" => {
                let (mut at, mut style, mut ty) = (None, None, None);
                for a in e.attributes().with_checks(false) {
                    let a = a.map_err(xml_err)?;
                    match a.key.as_ref() {
                        "r" => at = Some(a.value),
                        "s" => style = Some(a.value),
                        "t" => ty = Some(a.value),
                        _ => {}
                    }
                }
                let pos = match at {
                    Some(at) => {
                        let (r0, c0) = row_column(&at)?;
                        let c0 = c0.ok_or_else(|| "Range without column component".to_string())?;
                        col = c0;
                        (RowAt::Exact(r0), c0)
                    }
                    None => (row, col),
                };
                let mut data = Data::Empty;
                loop {
                    match r.read_event().map_err(xml_err)? {
                        Event::Start(v) => {
                            data = read_value(&mut r, &v, style.as_deref(), ty.as_deref(), book)?
                        }
                        Event::End(end) if end.local_name().as_ref() == "c" => break,
                        Event::Eof => return Err("Unexpected end of xml, expecting '</c>'".into()),
                        _ => {}
                    }
                }
                col = col.wrapping_add(1);
                if let Some(v) = map(data) {
                    cells.push((pos.0, pos.1, v));
                }
            }
            Event::Eof => return Ok(Cells { cells, end: row }),
            _ => {}
        }
    }
}

/// What the workers share: the book's strings and formats.
struct Shared<'b> {
    strings: &'b [String],
    formats: &'b [Format],
    is_1904: bool,
}

/// A cell's child element `e` (`<v>`, `<is>`, `<f>`) read to its end, as a value.
fn read_value(
    r: &mut Reader<&[u8]>,
    e: &BytesStart<'_>,
    style: Option<&str>,
    ty: Option<&str>,
    book: &Shared<'_>,
) -> Res<Data> {
    let to_end = |r: &mut Reader<&[u8]>| r.read_to_end(e.name()).map(|_| ()).map_err(xml_err);
    Ok(match e.local_name().as_ref() {
        "is" => read_string(r, e.name())?.map_or(Data::Empty, Data::String),
        "v" if matches!(ty, Some("inlineStr" | "is")) => {
            to_end(r)?;
            Data::Empty
        }
        "v" if matches!(ty, Some("n" | "s" | "b" | "e") | None) => {
            let v = match r.read_event().map_err(xml_err)? {
                Event::Text(t) => read_v(&t, style, ty, book)?,
                Event::End(end) if end.name() == e.name() => return Ok(Data::Empty),
                Event::Eof => return Err("Unexpected end of xml, expecting '</v>'".into()),
                _ => Data::Empty,
            };
            to_end(r)?;
            v
        }
        "v" => {
            let mut text = String::new();
            loop {
                match r.read_event().map_err(xml_err)? {
                    Event::Text(t) => text.push_str(&t.xml10_content()),
                    Event::GeneralRef(g) => entity(&g, &mut text)?,
                    Event::End(end) if end.name() == e.name() => break,
                    Event::Eof => return Err("Unexpected end of xml, expecting '</v>'".into()),
                    _ => {}
                }
            }
            read_v(&text, style, ty, book)?
        }
        "f" => {
            to_end(r)?;
            Data::Empty
        }
        _ => return Err("Unexpected node: v, f, or is".into()),
    })
}

/// A `<v>`'s text as the value of a cell of type `ty` and style `style`.
fn read_v(v: &str, style: Option<&str>, ty: Option<&str>, book: &Shared<'_>) -> Res<Data> {
    let format = match style {
        Some(s) => book.formats.get(index(s)).copied(),
        None => Some(Format::Other),
    };
    Ok(match ty {
        Some("s") => {
            if v.is_empty() {
                return Ok(Data::Empty);
            }
            match book.strings.get(index(v)) {
                Some(s) => Data::String(s.clone()),
                None => return Err("Cell string index not found in shared strings table".into()),
            }
        }
        Some("b") => {
            let t = v.trim();
            if t.is_empty() {
                Data::Empty
            } else if t == "0" || t.eq_ignore_ascii_case("false") {
                Data::Bool(false)
            } else if t == "1" || t.eq_ignore_ascii_case("true") {
                Data::Bool(true)
            } else {
                return Err(format!("Unrecognized boolean cell value: {v}"));
            }
        }
        Some("d") => Data::DateTimeIso(v.to_owned()),
        Some("e") => Data::Error(error_value(v)?),
        Some("str") => Data::String(unescape_excel(v)),
        Some("n") | None => {
            if v.is_empty() {
                return Ok(Data::Empty);
            }
            match fast_float2::parse::<f64, _>(v.as_bytes()) {
                Ok(n) => match format {
                    Some(Format::DateTime) => Data::DateTime(ExcelDateTime::new(
                        n,
                        ExcelDateTimeType::DateTime,
                        book.is_1904,
                    )),
                    Some(Format::TimeDelta) => Data::DateTime(ExcelDateTime::new(
                        n,
                        ExcelDateTimeType::TimeDelta,
                        book.is_1904,
                    )),
                    _ => Data::Float(n),
                },
                Err(_) if ty.is_none() => Data::String(v.to_owned()),
                Err(_) => return Err(format!("Error while parsing float: {v:?}")),
            }
        }
        Some(t) => return Err(format!("Unsupported cell type attribute: {t}")),
    })
}

/// A style or shared-string index, 0 where it is not a number (as calamine reads it).
fn index(s: &str) -> usize {
    atoi_simd::parse::<usize, true, false>(s.as_bytes()).unwrap_or(0)
}

fn error_value(v: &str) -> Res<CellErrorType> {
    Ok(match v {
        "#DIV/0!" => CellErrorType::Div0,
        "#N/A" => CellErrorType::NA,
        "#NAME?" => CellErrorType::Name,
        "#NULL!" => CellErrorType::Null,
        "#NUM!" => CellErrorType::Num,
        "#REF!" => CellErrorType::Ref,
        "#VALUE!" => CellErrorType::Value,
        _ => return Err(format!("Unsupported cell error value '{v}'")),
    })
}

/// Bytes read from the sheet at a time; a chunk is cut once this many are waiting.
const READ_BYTES: usize = 1 << 20;
/// A row may not run past this many bytes of XML (a real one is at most a few MB:
/// 16,384 cells of up to 32,767 characters each is the format's limit, about 1.6 GB,
/// but a row that large is a file built to exhaust memory).
const MAX_ROW_BYTES: usize = 512 << 20;

/// Where the sheet's XML stands while it is cut.
struct Cutter {
    /// Bytes read and not yet sent.
    pending: Vec<u8>,
    /// `pending[..searched]` holds no `<row` start but possibly the last one found.
    searched: usize,
    last_row: Option<usize>,
    /// Whether a comment, CDATA section or processing instruction was seen: cuts are
    /// then found by a scan that skips them.
    careful: bool,
}

/// Whether `b[at..]` starts a `<row` tag (`<row` then a blank, `>` or `/`).
fn row_tag_at(b: &[u8], at: usize) -> bool {
    b[at..].starts_with(b"<row")
        && matches!(
            b.get(at + 4),
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'>' | b'/')
        )
}

/// The start of the last `<row` tag in `b` outside comments, CDATA sections and
/// processing instructions (`b` starts outside them), and whether `</sheetData>` comes
/// first (then: its offset, and no cut is wanted).
fn careful_scan(b: &[u8]) -> (Option<usize>, Option<usize>) {
    let mut last = None;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &b[i..]) {
        let at = i + off;
        let rest = &b[at..];
        let skip_to = |end: &[u8]| memchr::memmem::find(rest, end).map(|e| at + e + end.len());
        let next = if rest.starts_with(b"<!--") {
            skip_to(b"-->")
        } else if rest.starts_with(b"<![CDATA[") {
            skip_to(b"]]>")
        } else if rest.starts_with(b"<?") {
            skip_to(b"?>")
        } else if rest.starts_with(b"</sheetData>") {
            return (last, Some(at));
        } else {
            if row_tag_at(b, at) {
                last = Some(at);
            }
            Some(at + 1)
        };
        match next {
            Some(n) => i = n,
            // Cut inside one: wait for more bytes (a cut before it is still safe).
            None => return (last, None),
        }
    }
    (last, None)
}

impl Cutter {
    /// Appends `more` bytes (`at_eof`: the last); then the chunk to send, if one is
    /// due, and whether the rows ended: `Some(true)` at `</sheetData>` (nothing after it
    /// is kept), `Some(false)` at the end of the XML without it.
    fn push(&mut self, more: &[u8], at_eof: bool) -> (Option<Vec<u8>>, Option<bool>) {
        let from = self.searched.saturating_sub(11);
        self.pending.extend_from_slice(more);
        if !self.careful
            && (memchr::memmem::find(&self.pending[from..], b"<!").is_some()
                || memchr::memmem::find(&self.pending[from..], b"<?").is_some())
        {
            self.careful = true;
        }
        let (last, end) = if self.careful {
            careful_scan(&self.pending)
        } else {
            let end =
                memchr::memmem::find(&self.pending[from..], b"</sheetData>").map(|e| from + e);
            let hay = &self.pending[..end.unwrap_or(self.pending.len())];
            let mut last = self.last_row;
            for at in memchr::memmem::rfind_iter(&hay[from.min(hay.len())..], b"<row") {
                if row_tag_at(hay, from + at) {
                    last = Some(from + at);
                    break;
                }
            }
            (last, end)
        };
        if let Some(end) = end {
            self.pending.truncate(end);
            return (Some(std::mem::take(&mut self.pending)), Some(true));
        }
        if at_eof {
            return (Some(std::mem::take(&mut self.pending)), Some(false));
        }
        self.searched = self.pending.len();
        self.last_row = last;
        match last {
            Some(cut) if cut > 0 && self.pending.len() >= READ_BYTES => {
                let rest = self.pending.split_off(cut);
                let chunk = std::mem::replace(&mut self.pending, rest);
                self.last_row = Some(0);
                self.searched = self.pending.len();
                (Some(chunk), None)
            }
            _ => (None, None),
        }
    }
}

/// The head of the sheet's XML (before `<sheetData>`): the last row its dimension
/// declares (from 1; 0: not declared), and where the rows start; `None` where the rows
/// are not in the main namespace without a prefix, or the XML is not UTF-8 (left to
/// calamine).
fn head(b: &[u8]) -> Res<Option<(u64, usize)>> {
    let Some(data) = memchr::memmem::find(b, b"<sheetData") else {
        return Ok(None);
    };
    if let Some(decl) = b.strip_prefix(b"<?xml") {
        let end = memchr::memmem::find(decl, b"?>").unwrap_or(decl.len());
        let decl = String::from_utf8_lossy(&decl[..end]).to_ascii_lowercase();
        if decl.contains("encoding") && !decl.contains("utf-8") {
            return Ok(None);
        }
    }
    if memchr::memmem::find(&b[..data], b"<!").is_some() {
        return Ok(None);
    }
    let mut last_row = 0;
    let mut r = reader(&b[..data]);
    loop {
        match r.read_event() {
            Ok(Event::Start(e)) if e.local_name().as_ref() == "dimension" => {
                if let Some(d) = attr(&e, "ref")? {
                    let end = d.rsplit(':').next().unwrap_or(&d);
                    if let Ok((row, _)) = row_column(end) {
                        last_row = u64::from(row) + 1;
                    }
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    let Some(gt) = memchr::memchr(b'>', &b[data..]) else {
        return Ok(None);
    };
    // `<sheetData/>`: no rows; the rows start after the tag either way.
    Ok(Some((last_row, data + gt + 1)))
}

/// Reads the book's sheet on several threads: tells `last_row` the last row its
/// dimension declares (from 1; 0: none), then hands each cell's position (row and column
/// from 0) and value (calamine's, mapped by `map` on the workers; `None`: no value) to
/// `cell`, in the sheet's order, until it returns `false`. `Ok(false)`: the sheet's
/// layout is one left to calamine, and nothing was handed out.
pub(super) fn read<V: Send>(
    mut book: Book,
    map: fn(Data) -> Option<V>,
    last_row: impl FnOnce(u64),
    mut cell: impl FnMut((u32, u32), V) -> bool + Send,
) -> Res<bool> {
    let mut sheet = book.zip.by_name(&book.part).map_err(|e| e.to_string())?;
    // The head: enough bytes to hold `<sheetData…>`.
    let mut buf = vec![0u8; READ_BYTES];
    let mut headbuf = Vec::new();
    let mut eof;
    let start = loop {
        let n = sheet.read(&mut buf).map_err(|e| e.to_string())?;
        headbuf.extend_from_slice(&buf[..n]);
        eof = n == 0;
        if let Some(at) = memchr::memmem::find(&headbuf, b"<sheetData") {
            if memchr::memchr(b'>', &headbuf[at..]).is_some() {
                break head(&headbuf)?;
            }
        }
        if eof || headbuf.len() > 64 << 20 {
            break None;
        }
    };
    let Some((rows, start)) = start else {
        return Ok(false);
    };
    last_row(rows);
    let shared = Shared {
        strings: &book.strings,
        formats: &book.formats,
        is_1904: book.is_1904,
    };
    let self_closing = headbuf[..start].ends_with(b"/>");
    let mut cutter = Cutter {
        pending: Vec::with_capacity(2 * READ_BYTES),
        searched: 0,
        last_row: None,
        careful: false,
    };
    let first = headbuf.split_off(start);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    let (work_tx, work_rx) = bounded::<(u64, Vec<u8>)>(workers * 2);
    let (done_tx, done_rx) = bounded::<(u64, Res<Cells<V>>)>(workers * 2);
    std::thread::scope(|s| -> Res<bool> {
        for _ in 0..workers {
            let (rx, tx, shared) = (work_rx.clone(), done_tx.clone(), &shared);
            s.spawn(move || {
                for (seq, xml) in rx {
                    if tx.send((seq, chunk_cells(&xml, shared, map))).is_err() {
                        return;
                    }
                }
            });
        }
        drop((work_rx, done_tx));
        let collector = s.spawn(move || -> Res<()> {
            let mut waiting: HashMap<u64, Res<Cells<V>>> = HashMap::new();
            let (mut next, mut base) = (0u64, 0u32);
            for (seq, cells) in done_rx {
                waiting.insert(seq, cells);
                while let Some(cells) = waiting.remove(&next) {
                    let cells = cells?;
                    for (row, col, v) in cells.cells {
                        if !cell((row.at(base), col), v) {
                            return Ok(());
                        }
                    }
                    base = cells.end.at(base);
                    next += 1;
                }
            }
            Ok(())
        });
        // This thread inflates and cuts.
        let mut seq = 0u64;
        let mut send = |chunk: Vec<u8>| -> bool {
            let ok = work_tx.send((seq, chunk)).is_ok();
            seq += 1;
            ok
        };
        let eof_message = "Unexpected end of xml, expecting '</sheetData>'";
        let mut failed = None;
        let mut ended = self_closing;
        let mut more = first;
        while !ended {
            let (chunk, end) = cutter.push(&more, eof);
            if end == Some(false) {
                failed = Some(eof_message.to_string());
            }
            ended = end.is_some();
            if let Some(c) = chunk {
                ended |= !send(c);
            }
            if ended {
                break;
            }
            if cutter.pending.len() > MAX_ROW_BYTES {
                failed = Some(format!(
                    "a row of the sheet runs past {} MB of XML",
                    MAX_ROW_BYTES >> 20
                ));
                break;
            }
            match sheet.read(&mut buf) {
                Ok(n) => {
                    more = buf[..n].to_vec();
                    eof = n == 0;
                }
                Err(e) => {
                    failed = Some(e.to_string());
                    break;
                }
            }
        }
        drop(work_tx);
        let collected = collector
            .join()
            .map_err(|_| "a sheet worker panicked".to_string())?;
        collected?;
        match failed {
            Some(m) => Err(m),
            None => Ok(true),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excel_escapes_are_undone_and_lone_surrogates_replaced() {
        assert_eq!(unescape_excel("a_x000D_b"), "a\rb");
        assert_eq!(unescape_excel("_xD83D__xDCF7_"), "\u{1F4F7}");
        assert_eq!(unescape_excel("_xD83D_x"), "\u{FFFD}x");
        assert_eq!(unescape_excel("_x005F_x000D_"), "_x000D_");
        assert_eq!(unescape_excel("_x00_ plain"), "_x00_ plain");
    }

    #[test]
    fn custom_formats_are_told_as_calamine_tells_them() {
        assert_eq!(custom_format("DD/MM/YY"), Format::DateTime);
        assert_eq!(custom_format("H:MM:SS;@"), Format::DateTime);
        assert_eq!(custom_format("[h]:mm:ss"), Format::TimeDelta);
        assert_eq!(custom_format("0.00"), Format::Other);
        assert_eq!(custom_format("\"days\" 0"), Format::Other);
        assert_eq!(custom_format("#,##0\\ [$\\u20bd-46D]"), Format::Other);
        assert_eq!(custom_format("[Red]0.00"), Format::Other);
        assert_eq!(custom_format("AM/PM"), Format::DateTime);
    }

    #[test]
    fn references_are_read_as_calamine_reads_them() {
        assert_eq!(row_column("AB12"), Ok((11, Some(27))));
        assert_eq!(row_column("7"), Ok((6, None)));
        assert!(row_column("A0").is_err());
        assert!(row_column("A-1").is_err());
    }

    #[test]
    fn cuts_fall_on_row_tags_outside_comments() {
        let b = b"<row r=\"1\"><c/></row><!-- <row> --><row r=\"2\"></row>";
        assert_eq!(careful_scan(b).0, Some(35));
        let b = b"<row r=\"1\"></row><![CDATA[<row ";
        assert_eq!(careful_scan(b), (Some(0), None));
        let b = b"<row r=\"1\"></row></sheetData><row ";
        assert_eq!(careful_scan(b), (Some(0), Some(17)));
        assert!(row_tag_at(b"<row>", 0));
        assert!(!row_tag_at(b"<rows>", 0));
    }
}
