//! One record element into named values: its attributes and text-only children are
//! text values (typed later, as CSV fields are); a child with attributes or children of
//! its own, or a name that repeats, is one JSON value; the record's own text (trimmed,
//! when it is not only whitespace) is named `text`.
//!
//! JSON for an element: a string when it has neither attributes nor children (its
//! text); else an object with `"@name"` per attribute, one member per child name (an
//! array when the name repeats), and `"#text"` for its own text, trimmed, when there is
//! any. Names are qualified names as written (`dc:title`).

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde_json::{Map, Value};

use std::cell::Cell;

use super::prolog::{Entities, Refs, MAX_ENTITY_DEPTH};

/// How deep elements may nest within a record.
const MAX_DEPTH: usize = 256;

/// The kinds of key: an attribute, a child element, the record's own text. A key is
/// stored as its kind's byte followed by the qualified name.
pub(crate) const ATTRIBUTE: u8 = b'@';
pub(crate) const CHILD: u8 = b'<';
pub(crate) const OWN_TEXT: &str = "#text";

/// One named value of a record: ranges in [`Rows::text`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub key: (usize, usize),
    pub value: (usize, usize),
    /// The value is JSON (always TEXT), not a text to type.
    pub json: bool,
}

/// Where a row's fields end in [`Rows::fields`], and where its record starts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowEnd {
    pub fields_end: usize,
    pub line: u64,
}

/// The parsed records of one chunk, keys and values in one buffer.
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub text: String,
    pub fields: Vec<Field>,
    pub rows: Vec<RowEnd>,
    /// Reused while parsing: a tag's attribute names.
    names: Vec<(usize, usize)>,
    /// Whether a child with attributes or children (named once) gives a field for each
    /// of them instead of one JSON value, at every depth (see [`FLAT`]).
    pub flatten: bool,
}

/// Between the steps of a flattened field's key (after [`CHILD`]: `owner`, then `@id`
/// for an attribute, `name` for a child, `#text` for the element's own text): a NUL,
/// which no XML name holds (the same byte as the JSON reader's [`PART`](crate::source::keys::PART)).
pub(crate) const FLAT: char = crate::source::keys::PART;

impl Rows {
    pub(crate) fn str(&self, (a, b): (usize, usize)) -> &str {
        &self.text[a..b]
    }

    /// Rows for a chunk of `bytes` bytes and `records` records.
    pub(crate) fn with_capacity(bytes: usize, records: usize) -> Self {
        Rows {
            text: String::with_capacity(bytes + bytes / 8),
            fields: Vec::with_capacity(records * 8),
            rows: Vec::with_capacity(records),
            names: vec![],
            flatten: false,
        }
    }

    /// An attribute, its raw value normalized straight into `text`.
    fn push_attribute(&mut self, name: &str, raw: &str, ents: &Refs<'_>) -> Result<(), Fault> {
        let k = self.text.len();
        self.text.push(char::from(ATTRIBUTE));
        self.text.push_str(name);
        let v = self.text.len();
        normalize(raw, ents, 0, &mut self.text)?;
        self.fields.push(Field {
            key: (k, v),
            value: (v, self.text.len()),
            json: false,
        });
        Ok(())
    }

    fn push_field(&mut self, kind: u8, name: &str, value: &str, json: bool) {
        let k = self.text.len();
        self.text.push(char::from(kind));
        self.text.push_str(name);
        let v = self.text.len();
        self.text.push_str(value);
        self.fields.push(Field {
            key: (k, v),
            value: (v, self.text.len()),
            json,
        });
    }
}

/// Why a record could not be read: the byte offset in it, and the message.
pub(crate) type Fault = (usize, String);

struct Node {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
    text: String,
}

impl Node {
    fn simple(&self) -> bool {
        self.attrs.is_empty() && self.children.is_empty()
    }

    fn json(&self) -> Value {
        if self.simple() {
            return Value::String(self.text.clone());
        }
        let mut m = Map::new();
        for (k, v) in &self.attrs {
            m.insert(format!("@{k}"), Value::String(v.clone()));
        }
        for (name, group) in grouped(&self.children) {
            let v = match group.as_slice() {
                [one] => one.json(),
                many => Value::Array(many.iter().map(|n| n.json()).collect()),
            };
            m.insert(name.to_string(), v);
        }
        let t = trim_xml(&self.text);
        if !t.is_empty() {
            m.insert(OWN_TEXT.into(), Value::String(t.into()));
        }
        Value::Object(m)
    }
}

/// XML's whitespace (space, tab, CR, LF) trimmed from both ends.
pub(crate) fn trim_xml(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

/// Children grouped by name, in the order names first appear.
fn grouped(children: &[Node]) -> Vec<(&str, Vec<&Node>)> {
    let mut out: Vec<(&str, Vec<&Node>)> = vec![];
    let mut index: hashbrown::HashMap<&str, usize> = hashbrown::HashMap::new();
    for c in children {
        let k = if out.len() < 16 {
            out.iter().position(|(n, _)| *n == c.name)
        } else {
            if index.is_empty() {
                index.extend(out.iter().enumerate().map(|(k, (n, _))| (*n, k)));
            }
            index.get(c.name.as_str()).copied()
        };
        match k {
            Some(k) => out[k].1.push(c),
            None => {
                if !index.is_empty() || out.len() >= 16 {
                    index.insert(&c.name, out.len());
                }
                out.push((&c.name, vec![c]));
            }
        }
    }
    out
}

fn quick_error(r: &Reader<&[u8]>, e: quick_xml::Error) -> Fault {
    (r.error_position() as usize, e.to_string())
}

/// XML's name characters, loosely: what may follow a name's first character.
fn is_name_byte(c: u8) -> bool {
    !c.is_ascii() || c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'-' | b'.')
}

/// Calls `each` with every attribute's qualified name and raw value (to normalize with
/// [`normalize`]; an error's offset is in the value) in `raw`, the text of a start tag
/// after its name. Namespace declarations (`xmlns`, `xmlns:p`) are
/// not data and are left out. `at` is the tag's offset, for errors.
///
/// Hand-written rather than quick-xml's attribute iterator and value normalizer, which
/// go a byte at a time: on bench/xml.py's posts (escaped HTML bodies of ~870 bytes) they
/// were 36% of all CPU of a load; memchr over the values made it 1.4x faster (0.508 s
/// to 0.360 s wall for 200k posts).
fn attributes(
    raw: &str,
    at: usize,
    names: &mut Vec<(usize, usize)>,
    mut each: impl FnMut(&str, &str) -> Result<(), (usize, String)>,
) -> Result<(), Fault> {
    let b = raw.as_bytes();
    names.clear();
    let mut i = 0;
    loop {
        let start = i;
        while b
            .get(i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        if i == b.len() || (b[i] == b'/' && i + 1 == b.len()) {
            return Ok(());
        }
        if i == start {
            return Err((at + i, "attributes must be separated by whitespace".into()));
        }
        let n0 = i;
        while b.get(i).copied().is_some_and(is_name_byte) {
            i += 1;
        }
        if i == n0 || b[n0].is_ascii_digit() || matches!(b[n0], b'-' | b'.') {
            return Err((at + n0, "a character that starts no attribute name".into()));
        }
        let name = &raw[n0..i];
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            return Err((at + i, format!("attribute {name:?} has no '=' and value")));
        }
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let q = match b.get(i) {
            Some(q @ (b'"' | b'\'')) => *q,
            _ => {
                return Err((
                    at + i,
                    format!("the value of attribute {name:?} is not quoted"),
                ))
            }
        };
        let v0 = i + 1;
        let v1 = memchr::memchr(q, &b[v0..]).map(|k| v0 + k).ok_or_else(|| {
            (
                at + i,
                format!("the value of attribute {name:?} is not closed"),
            )
        })?;
        i = v1 + 1;
        if names.iter().any(|&(a, z)| &raw[a..z] == name) {
            return Err((at + n0, format!("attribute {name:?} is given twice")));
        }
        names.push((n0, n0 + name.len()));
        if name == "xmlns" || name.starts_with("xmlns:") {
            continue;
        }
        each(name, &raw[v0..v1]).map_err(|(k, m)| (at + v0 + k, m))?;
    }
}

/// Appends attribute value `raw`, normalized (XML 1.0, 3.3.3: references expanded, each
/// literal tab, newline or CR a space), to `out`; an error's offset is in `raw`.
fn normalize(raw: &str, ents: &Refs<'_>, depth: usize, out: &mut String) -> Result<(), Fault> {
    let b = raw.as_bytes();
    // Tabs and CRs are rare in values: look for them only where there are any.
    let rare = memchr::memchr2(b'\t', b'\r', b).is_some();
    let mut i = 0;
    loop {
        let next = if rare {
            b[i..]
                .iter()
                .position(|c| matches!(c, b'&' | b'<' | b'\n' | b'\t' | b'\r'))
        } else {
            memchr::memchr3(b'&', b'<', b'\n', &b[i..])
        };
        let Some(k) = next else {
            out.push_str(&raw[i..]);
            return Ok(());
        };
        out.push_str(&raw[i..i + k]);
        i += k;
        match b[i] {
            b'<' => return Err((i, "'<' in an attribute value (write it as &lt;)".into())),
            b'\r' if b.get(i + 1) == Some(&b'\n') => {
                out.push(' ');
                i += 2;
            }
            b'&' => {
                let end = memchr::memchr(b';', &b[i..])
                    .filter(|&e| e > 1)
                    .ok_or_else(|| {
                        (
                            i,
                            "'&' that starts no reference (write it as &amp;)".to_string(),
                        )
                    })?;
                let name = &raw[i + 1..i + end];
                if name.starts_with('#') {
                    ents.expand_into(name, out).map_err(|m| (i, m))?;
                } else if let Some(t) = quick_xml::escape::resolve_predefined_entity(name) {
                    out.push_str(t);
                } else {
                    let text = ents
                        .replacement(name)
                        .ok_or_else(|| (i, ents.why_not(name)))?;
                    if depth == 0 {
                        // The whole expansion, nested references included.
                        ents.charge(name).map_err(|m| (i, m))?;
                    }
                    if depth >= MAX_ENTITY_DEPTH {
                        return Err((
                            i,
                            format!("entity references nest more than {MAX_ENTITY_DEPTH} deep"),
                        ));
                    }
                    normalize(text, ents, depth + 1, out).map_err(|(_, m)| (i, m))?;
                }
                i += end + 1;
            }
            _ => {
                out.push(' ');
                i += 1;
            }
        }
    }
}

/// Reads the element whose start tag is `e` (its end tag too, unless `empty`).
fn node(
    r: &mut Reader<&[u8]>,
    e: &BytesStart<'_>,
    empty: bool,
    ents: &Refs<'_>,
    depth: usize,
) -> Result<Node, Fault> {
    let at = r.buffer_position() as usize;
    if depth > MAX_DEPTH {
        return Err((at, format!("elements nest more than {MAX_DEPTH} deep")));
    }
    let mut n = Node {
        name: e.name().as_ref().to_string(),
        attrs: vec![],
        children: vec![],
        text: String::new(),
    };
    let mut names = vec![];
    attributes(e.attributes_raw(), at, &mut names, |k, raw| {
        let mut v = String::new();
        normalize(raw, ents, 0, &mut v)?;
        n.attrs.push((k.into(), v));
        Ok(())
    })?;
    if !empty {
        content(r, ents, depth, &mut n.children, &mut n.text)?;
    }
    Ok(n)
}

/// Reads an element's content up to and including its end tag.
fn content(
    r: &mut Reader<&[u8]>,
    ents: &Refs<'_>,
    depth: usize,
    children: &mut Vec<Node>,
    text: &mut String,
) -> Result<(), Fault> {
    loop {
        let at = r.buffer_position() as usize;
        match r.read_event().map_err(|e| quick_error(r, e))? {
            Event::Start(c) => children.push(node(r, &c, false, ents, depth + 1)?),
            Event::Empty(c) => children.push(node(r, &c, true, ents, depth + 1)?),
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::CData(c) => text.push_str(&c.xml10_content()),
            Event::GeneralRef(g) => {
                ents.charge(&g).map_err(|m| (at, m))?;
                ents.expand_into(&g, text).map_err(|m| (at, m))?
            }
            Event::End(_) => return Ok(()),
            Event::Comment(c) => {
                // quick-xml takes any comment; XML forbids '--' in one.
                let body = c.into_inner();
                if body.contains("--") || body.ends_with('-') {
                    return Err((at, "'--' inside a comment".into()));
                }
            }
            Event::PI(_) => {}
            Event::Decl(_) | Event::DocType(_) => {
                return Err((at, "an XML declaration or DOCTYPE inside an element".into()))
            }
            Event::Eof => return Err((at, "the document ends inside an element".into())),
        }
    }
}

/// The first character of `b` (UTF-8) that XML 1.0 does not allow in a document, and a
/// message: a C0 control other than tab, line feed and carriage return, or U+FFFE or
/// U+FFFF (surrogates cannot be valid UTF-8, which is checked apart).
///
/// Hand-written: a branch-free OR over 64-byte blocks, which the compiler vectorizes,
/// passes every block without a byte below 0x20 (most of them; tab, LF and CR are the
/// only ones a document usually has), and one prepared `memmem` finds the rarer `EF BF`
/// lead of U+FFFE/U+FFFF; a byte-at-a-time scan with an early exit does not vectorize.
pub(crate) fn bad_char(b: &[u8]) -> Option<Fault> {
    static LEAD: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\xEF\xBF"));
    for (k, block) in b.chunks(64).enumerate() {
        if block.iter().fold(0u8, |acc, &c| acc | u8::from(c < 0x20)) == 0 {
            continue;
        }
        if let Some(p) = block
            .iter()
            .position(|&c| c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r'))
        {
            let i = k * 64 + p;
            return Some((
                i,
                format!("a character XML does not allow (U+{:04X})", b[i]),
            ));
        }
    }
    let mut from = 0;
    while let Some(k) = LEAD.find(&b[from..]) {
        let i = from + k;
        if let Some(&last @ (0xBE | 0xBF)) = b.get(i + 2) {
            let cp = if last == 0xBE { "FFFE" } else { "FFFF" };
            return Some((i, format!("a character XML does not allow (U+{cp})")));
        }
        from = i + 2;
    }
    None
}

/// Checks a start tag outside the records (`<name attr="v" …>` or `…/>`, whole) as a
/// conforming parser does: its name, attributes (each once, quoted, separated by
/// whitespace) and their values (no `<`, every reference defined). Nothing is kept.
pub(crate) fn check_start_tag(tag: &str, ents: &Entities, consumed: u64) -> Result<(), Fault> {
    let inner = tag
        .strip_suffix("/>")
        .or_else(|| tag.strip_suffix('>'))
        .and_then(|t| t.strip_prefix('<'))
        .ok_or_else(|| (0, "a tag that is not closed by '>'".to_string()))?;
    let name_end = inner
        .bytes()
        .position(|c| !is_name_byte(c))
        .unwrap_or(inner.len());
    let chunk_left = Cell::new(usize::MAX);
    let refs = Refs::new(ents, usize::MAX, &chunk_left, consumed);
    let mut names = vec![];
    let mut scratch = String::new();
    attributes(&inner[name_end..], name_end + 1, &mut names, |_, raw| {
        scratch.clear();
        normalize(raw, &refs, 0, &mut scratch)
    })
}

/// Checks an end tag outside the records (`</name>`, whole): only whitespace may follow
/// the name.
pub(crate) fn check_end_tag(tag: &str) -> Result<(), Fault> {
    let inner = &tag[2..tag.len() - 1];
    let name_end = inner
        .bytes()
        .position(|c| !is_name_byte(c))
        .unwrap_or(inner.len());
    match inner[name_end..]
        .bytes()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
    {
        Some(k) => Err((2 + name_end + k, "an end tag holds only its name".into())),
        None => Ok(()),
    }
}

/// Checks character data outside the records as a conforming parser does: every `&`
/// starts a reference to a defined entity or a valid character, and no `]]>`.
pub(crate) fn check_text(text: &str, ents: &Entities) -> Result<(), Fault> {
    if let Some(k) = memchr::memmem::find(text.as_bytes(), b"]]>") {
        return Err((k, "']]>' in text (it may only end a CDATA section)".into()));
    }
    // Nothing is expanded here (nothing is kept), so nothing is counted either: a
    // reference need only be to a character or a declared internal entity.
    let b = text.as_bytes();
    let mut scratch = String::new();
    for i in memchr::memchr_iter(b'&', b) {
        let end = memchr::memchr(b';', &b[i..])
            .filter(|&e| {
                e > 1
                    && b[i + 1..i + e]
                        .iter()
                        .all(|&c| is_name_byte(c) || c == b'#')
            })
            .ok_or_else(|| {
                (
                    i,
                    "'&' that starts no reference (write it as &amp;)".to_string(),
                )
            })?;
        let name = &text[i + 1..i + end];
        if name.starts_with('#') {
            scratch.clear();
            ents.expand_into(name, &mut scratch).map_err(|m| (i, m))?;
        } else if quick_xml::escape::resolve_predefined_entity(name).is_none()
            && ents.replacement(name).is_none()
        {
            return Err((i, ents.why_not(name)));
        }
    }
    Ok(())
}

/// Parses the record element `src` into one row of `out`. `line` is where it starts,
/// `consumed` the document's bytes up to its end; its entity references may expand to
/// what is left of `max_bytes` and `chunk_left` (see [`Refs`]).
pub(crate) fn parse_record(
    src: &str,
    line: u64,
    ents: &Entities,
    max_bytes: usize,
    chunk_left: &Cell<usize>,
    consumed: u64,
    out: &mut Rows,
) -> Result<(), Fault> {
    let ents = &Refs::new(
        ents,
        max_bytes.saturating_sub(src.len()),
        chunk_left,
        consumed,
    );
    let start_text = out.text.len();
    let mut names = std::mem::take(&mut out.names);
    let result = parse_into(src, ents, out, &mut names);
    out.names = names;
    result?;
    finish_row(out, start_text, line, max_bytes)
}

fn parse_into(
    src: &str,
    ents: &Refs<'_>,
    out: &mut Rows,
    names: &mut Vec<(usize, usize)>,
) -> Result<(), Fault> {
    if let Some(tag) = src.strip_suffix("/>") {
        // A record that is one empty-element tag (as a dump's `<row …/>`): its
        // attributes are all it holds, read without a tokenizer.
        let name_end = tag
            .bytes()
            .position(|c| !is_name_byte(c) && c != b'<')
            .unwrap_or(tag.len());
        return attributes(&tag[name_end..], name_end, names, |k, raw| {
            out.push_attribute(k, raw, ents)
        });
    }
    let mut r = Reader::from_str(src);
    let (e, empty) = match r.read_event().map_err(|e| quick_error(&r, e))? {
        Event::Start(e) => (e, false),
        Event::Empty(e) => (e, true),
        _ => return Err((0, "a record that is no element".into())),
    };
    let at = e.name().as_ref().len() + 1;
    attributes(e.attributes_raw(), at, names, |k, raw| {
        out.push_attribute(k, raw, ents)
    })?;
    if !empty {
        let mut children = vec![];
        let mut own = String::new();
        content(&mut r, ents, 1, &mut children, &mut own)?;
        for (name, group) in grouped(&children) {
            match group.as_slice() {
                [one] if one.simple() => out.push_field(CHILD, name, &one.text, false),
                [one] if out.flatten => push_flat(out, name, one),
                [one] => out.push_field(CHILD, name, &one.json().to_string(), true),
                many => {
                    let v = Value::Array(many.iter().map(|n| n.json()).collect());
                    out.push_field(CHILD, name, &v.to_string(), true);
                }
            }
        }
        let t = trim_xml(&own);
        if !t.is_empty() {
            out.push_field(OWN_TEXT.as_bytes()[0], &OWN_TEXT[1..], t, false);
        }
    }
    Ok(())
}

/// The fields of `node`, a child at `path` with attributes or children, flattened: an
/// attribute or a text-only child named once is a text field, a child with attributes or
/// children of its own is flattened in turn, a name that repeats is one JSON value (an
/// array), the element's own text (trimmed) the step `#text`.
fn push_flat(out: &mut Rows, path: &str, node: &Node) {
    for (k, v) in &node.attrs {
        out.push_field(CHILD, &format!("{path}{FLAT}@{k}"), v, false);
    }
    for (name, group) in grouped(&node.children) {
        let p = format!("{path}{FLAT}{name}");
        match group.as_slice() {
            [one] if one.simple() => out.push_field(CHILD, &p, &one.text, false),
            [one] => push_flat(out, &p, one),
            many => {
                let v = Value::Array(many.iter().map(|n| n.json()).collect());
                out.push_field(CHILD, &p, &v.to_string(), true);
            }
        }
    }
    let t = trim_xml(&node.text);
    if !t.is_empty() {
        out.push_field(CHILD, &format!("{path}{FLAT}{OWN_TEXT}"), t, false);
    }
}

/// The record element `src` as one JSON object, for related tables: its attributes and
/// its text-only children named once are strings; a child with attributes or children
/// of its own is an array of objects (of one, too), so that it always makes rows of a
/// child table; text-only children that repeat are an array of strings; the element's
/// own text (trimmed, when it is more than whitespace) is `text`, and so in every
/// object below. Names are local names; where two collide in one element, the prefix
/// is kept, then `_2`, `_3`, … (ASCII case ignored, as SQLite names columns). The rest
/// as [`parse_record`] (entities expand within the same budgets); the caller bounds the
/// object's text, which it writes anyway.
pub(crate) fn record_object(
    src: &str,
    ents: &Entities,
    max_bytes: usize,
    chunk_left: &Cell<usize>,
    consumed: u64,
) -> Result<Map<String, Value>, Fault> {
    let refs = &Refs::new(
        ents,
        max_bytes.saturating_sub(src.len()),
        chunk_left,
        consumed,
    );
    let mut r = Reader::from_str(src);
    let node = match r.read_event().map_err(|e| quick_error(&r, e))? {
        Event::Start(e) => node(&mut r, &e, false, refs, 1)?,
        Event::Empty(e) => node(&mut r, &e, true, refs, 1)?,
        _ => return Err((0, "a record that is no element".into())),
    };
    Ok(related_object(&node))
}

/// `node` as an object of related tables (see [`record_object`]).
fn related_object(node: &Node) -> Map<String, Value> {
    let mut m = Map::new();
    let mut taken: Vec<String> = vec![];
    let mut put = |m: &mut Map<String, Value>, qname: &str, v: Value| {
        let local = qname.rsplit(':').next().unwrap_or(qname);
        let free = |n: &str, taken: &[String]| !taken.iter().any(|t| t.eq_ignore_ascii_case(n));
        let name = if free(local, &taken) {
            local.to_string()
        } else if qname != local && free(qname, &taken) {
            qname.to_string()
        } else {
            (2..)
                .map(|k| format!("{local}_{k}"))
                .find(|n| free(n, &taken))
                .unwrap_or_default()
        };
        taken.push(name.clone());
        m.insert(name, v);
    };
    for (k, v) in &node.attrs {
        put(&mut m, k, Value::String(v.clone()));
    }
    for (name, group) in grouped(&node.children) {
        let v = match group.as_slice() {
            [one] if one.simple() => Value::String(one.text.clone()),
            many if many.iter().all(|n| n.simple()) => {
                Value::Array(many.iter().map(|n| Value::String(n.text.clone())).collect())
            }
            many => Value::Array(
                many.iter()
                    .map(|n| match n.simple() {
                        true => Value::String(n.text.clone()),
                        false => Value::Object(related_object(n)),
                    })
                    .collect(),
            ),
        };
        put(&mut m, name, v);
    }
    let t = trim_xml(&node.text);
    if !t.is_empty() {
        put(&mut m, "text", Value::String(t.to_string()));
    }
    m
}

fn finish_row(out: &mut Rows, start_text: usize, line: u64, max_bytes: usize) -> Result<(), Fault> {
    if out.text.len() - start_text > max_bytes {
        return Err((
            0,
            format!("the record's values, entities expanded, pass {max_bytes} bytes"),
        ));
    }
    out.rows.push(RowEnd {
        fields_end: out.fields.len(),
        line,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn characters_xml_does_not_allow_are_found_where_they_are() {
        let long = "é".repeat(100);
        for (text, at) in [
            (format!("{long}\u{1}"), Some(200)),
            (format!("{long}\t\n\r"), None),
            ("ab\u{FFFE}".to_string(), Some(2)),
            (format!("{long}\u{FFFF}"), Some(200)),
            ("\u{FFEF}\u{FFBF}x".to_string(), None),
            ("\u{1F}".to_string(), Some(0)),
        ] {
            assert_eq!(
                super::bad_char(text.as_bytes()).map(|(k, _)| k),
                at,
                "{text:?}"
            );
        }
    }

    use super::*;

    fn row(src: &str) -> Vec<(String, String, bool)> {
        let ents = Entities::from_doctype("<!DOCTYPE r [<!ENTITY e \"E&amp;\">]>").unwrap();
        let mut out = Rows::default();
        parse_record(src, 1, &ents, 1 << 20, &Cell::new(usize::MAX), 0, &mut out).unwrap();
        out.fields
            .iter()
            .map(|f| {
                (
                    out.str(f.key).to_string(),
                    out.str(f.value).to_string(),
                    f.json,
                )
            })
            .collect()
    }

    fn s(k: &str, v: &str, json: bool) -> (String, String, bool) {
        (k.into(), v.into(), json)
    }

    #[test]
    fn attributes_children_and_text() {
        assert_eq!(
            row("<row Id=\"1\" xmlns:a=\"u\" a:Body=\"&lt;p&gt;&#xA;x\ty &e;\"/>"),
            vec![s("@Id", "1", false), s("@a:Body", "<p>\nx y E&", false)]
        );
        assert_eq!(
            row("<b id='7'>\n  <t>A &amp; <![CDATA[<B>]]></t>\n  <tag>x</tag><tag>y</tag>\n  <p c='1'>z</p>tail &e;\n</b>"),
            vec![
                s("@id", "7", false),
                s("<t", "A & <B>", false),
                s("<tag", "[\"x\",\"y\"]", true),
                s("<p", "{\"@c\":\"1\",\"#text\":\"z\"}", true),
                s("#text", "tail E&", false),
            ]
        );
        assert_eq!(row("<r><e/></r>"), vec![s("<e", "", false)]);
    }

    #[test]
    fn malformed_records_are_errors() {
        let ents = Entities::default();
        let mut out = Rows::default();
        for bad in [
            "<r><a></b></r>",
            "<r a='1' a='2'/>",
            "<r>&nope;</r>",
            "<r x='&nope;'/>",
        ] {
            assert!(
                parse_record(bad, 1, &ents, 1 << 20, &Cell::new(usize::MAX), 0, &mut out).is_err(),
                "{bad}"
            );
        }
    }
}
