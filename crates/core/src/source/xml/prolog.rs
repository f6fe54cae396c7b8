//! What comes before an XML document's root: the encoding (byte-order mark or
//! declaration) and the internal DTD's general entities.
//!
//! Safety by construction: an external entity (`SYSTEM`/`PUBLIC`) is remembered by name
//! only, never fetched or read from disk, and referring to one is an error; every
//! internal entity's full expansion is measured when the DTD is read, so a reference
//! loop or an exponential "billion laughs" chain is refused before any of it is built.
//! Each use is then counted before it is expanded ([`Refs`]): against the record's size
//! limit, and against the bytes of the document read so far (at most
//! [`AMPLIFICATION`] times them, past a first [`FREE_EXPANSION`] bytes, the bound
//! libxml2 sets), so many uses of a large entity fail at the first one over, not after
//! gigabytes were built.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::HashMap;

use crate::source::input::Encoding;

/// The most bytes one entity may expand to, references within it included.
pub(crate) const MAX_ENTITY_BYTES: usize = 1 << 20;

/// How deep entity references may nest within each other.
pub(crate) const MAX_ENTITY_DEPTH: usize = 16;

/// Entity references may expand to this many bytes per byte of the document (read up
/// to the reference) ...
pub(crate) const AMPLIFICATION: u64 = 5;

/// ... past this many bytes, which any document may expand to.
pub(crate) const FREE_EXPANSION: u64 = 1 << 20;

/// What the first bytes of a document say of its encoding: `Ok(None)` for UTF-8 (no
/// byte-order mark and no declaration, or one that names UTF-8 or ASCII), or an error
/// message and the 1-based column on line 1 it points at.
pub(crate) fn encoding_of(head: &[u8]) -> Result<Encoding, (u64, String)> {
    let utf16 = |be: bool, bom: bool| {
        // The declaration, decoded, must not name an 8-bit encoding.
        let enc = if be {
            encoding_rs::UTF_16BE
        } else {
            encoding_rs::UTF_16LE
        };
        let body = if bom { &head[2..] } else { head };
        let (text, _) = enc.decode_without_bom_handling(body);
        match declared(text.as_bytes()) {
            Some((col, name)) if !name.to_ascii_lowercase().starts_with("utf-16") => Err((
                col,
                format!(
                    "the document is UTF-16 (by its {}) but declares encoding {name:?}",
                    if bom {
                        "byte-order mark"
                    } else {
                        "first bytes"
                    }
                ),
            )),
            _ => Ok(match (be, bom) {
                (_, true) => Encoding::Utf16,
                (true, false) => Encoding::Utf16Be,
                (false, false) => Encoding::Utf16Le,
            }),
        }
    };
    if head.starts_with(b"\xFF\xFE") {
        return utf16(false, true);
    }
    if head.starts_with(b"\xFE\xFF") {
        return utf16(true, true);
    }
    if head.starts_with(b"<\0?\0") {
        return utf16(false, false);
    }
    if head.starts_with(b"\0<\0?") {
        return utf16(true, false);
    }
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let Some((col, name)) = declared(body) else {
        return Ok(Encoding::Utf8);
    };
    match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "utf-8" | "utf8" | "us-ascii" | "ascii" => Ok(Encoding::Utf8),
        _ if body.len() < head.len() => Err((
            col,
            format!("the document starts with a UTF-8 byte-order mark but declares encoding {name:?}"),
        )),
        "iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "cp1252" => Ok(Encoding::Latin1),
        n if n.starts_with("utf-16") => Err((
            col,
            format!("the document declares encoding {name:?} but is written in 8-bit bytes (UTF-16 starts with a byte-order mark or a zero byte)"),
        )),
        _ => Err((
            col,
            format!("encoding {name:?} is not one liteload reads (UTF-8, UTF-16, ISO-8859-1, windows-1252)"),
        )),
    }
}

/// The encoding named by the XML declaration at the start of `text`, and the 1-based
/// column of its value.
fn declared(text: &[u8]) -> Option<(u64, String)> {
    if !text.starts_with(b"<?xml") {
        return None;
    }
    let end = memchr::memmem::find(text, b"?>")?;
    let decl = &text[..end];
    let at = memchr::memmem::find(decl, b"encoding")?;
    let mut i = at + "encoding".len();
    while decl.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    if decl.get(i) != Some(&b'=') {
        return None;
    }
    i += 1;
    while decl.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    let q = *decl.get(i).filter(|q| matches!(q, b'"' | b'\''))?;
    let rest = &decl[i + 1..];
    let close = memchr::memchr(q, rest)?;
    Some((
        i as u64 + 2,
        String::from_utf8_lossy(&rest[..close]).into_owned(),
    ))
}

/// An internal DTD's general entities: name to replacement text (character references
/// already expanded, entity references left in, as the XML specification has it).
#[derive(Debug, Default)]
pub(crate) struct Entities {
    map: HashMap<String, Entity>,
    /// Each internal entity's full expansion in bytes (measured when the DTD is read).
    sizes: HashMap<String, usize>,
    /// Bytes the document's references expanded to so far, on every thread.
    expanded: AtomicU64,
}

#[derive(Debug)]
enum Entity {
    Internal(String),
    /// Declared with `SYSTEM` or `PUBLIC`: never read.
    External,
}

/// Why a reference could not be expanded.
pub(crate) fn undefined(name: &str) -> String {
    format!("the entity &{name}; is not defined (only the five predefined ones and those of the document's internal DTD are)")
}

fn external(name: &str) -> String {
    format!("the entity &{name}; is external; liteload never reads external entities")
}

impl Entities {
    /// The entities declared in `doctype`, the text of a `<!DOCTYPE …>` declaration.
    /// An error (its message and byte offset in `doctype`) for a malformed declaration,
    /// a reference to an undefined or external entity within an entity, a reference
    /// loop, or an entity whose expansion passes [`MAX_ENTITY_BYTES`].
    pub(crate) fn from_doctype(doctype: &str) -> Result<Entities, (usize, String)> {
        let mut ents = Entities::default();
        let b = doctype.as_bytes();
        let Some(open) = memchr::memchr(b'[', b) else {
            return Ok(ents);
        };
        let mut i = open + 1;
        while i < b.len() {
            match b[i] {
                b']' => break,
                c if c.is_ascii_whitespace() => i += 1,
                b'%' => {
                    // A parameter-entity reference: declarations we do not read.
                    i = memchr::memchr(b';', &b[i..]).map_or(b.len(), |k| i + k + 1);
                }
                b'<' if b[i..].starts_with(b"<!--") => {
                    i = memchr::memmem::find(&b[i + 4..], b"-->")
                        .map(|k| i + 4 + k + 3)
                        .ok_or_else(|| (i, "a comment in the DTD is not closed".to_string()))?;
                }
                b'<' if b[i..].starts_with(b"<?") => {
                    i = memchr::memmem::find(&b[i..], b"?>")
                        .map(|k| i + k + 2)
                        .ok_or_else(|| {
                            (
                                i,
                                "a processing instruction in the DTD is not closed".to_string(),
                            )
                        })?;
                }
                b'<' if b[i..].starts_with(b"<!ENTITY") => {
                    i = ents.declaration(doctype, i)?;
                }
                b'<' if b[i..].starts_with(b"<!") => i = skip_declaration(b, i)?,
                _ => return Err((i, "unexpected text in the DTD's internal subset".into())),
            }
        }
        ents.check_expansions()?;
        Ok(ents)
    }

    /// Reads `<!ENTITY …>` at `start`; returns the offset after it.
    fn declaration(&mut self, text: &str, start: usize) -> Result<usize, (usize, String)> {
        let b = text.as_bytes();
        let mut i = start + "<!ENTITY".len();
        let ws = |i: &mut usize| {
            while b.get(*i).is_some_and(u8::is_ascii_whitespace) {
                *i += 1;
            }
        };
        ws(&mut i);
        let parameter = b.get(i) == Some(&b'%');
        if parameter {
            i += 1;
            ws(&mut i);
        }
        let name_start = i;
        while b
            .get(i)
            .is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b'>'))
        {
            i += 1;
        }
        let name = &text[name_start..i];
        if name.is_empty() {
            return Err((start, "an entity declaration without a name".into()));
        }
        ws(&mut i);
        let entity = match b.get(i) {
            Some(q @ (b'"' | b'\'')) => {
                let close = memchr::memchr(*q, &b[i + 1..])
                    .ok_or_else(|| (i, format!("the value of entity {name:?} is not closed")))?;
                let literal = &text[i + 1..i + 1 + close];
                let value = expand_char_refs(literal).map_err(|m| (i + 1, m))?;
                i += close + 2;
                Entity::Internal(value.into_owned())
            }
            _ => Entity::External,
        };
        let end = skip_declaration(b, start)?;
        // The first declaration of a name binds (XML 1.0, 4.2); parameter entities are
        // not general ones.
        if !parameter && !self.map.contains_key(name) {
            self.map.insert(name.to_string(), entity);
        }
        Ok(end.max(i))
    }

    /// Measures every entity's full expansion, refusing loops and oversized ones.
    fn check_expansions(&mut self) -> Result<(), (usize, String)> {
        let mut sizes: HashMap<&str, usize> = HashMap::new();
        let names: Vec<&str> = self
            .map
            .iter()
            .filter(|(_, e)| matches!(e, Entity::Internal(_)))
            .map(|(n, _)| n.as_str())
            .collect();
        for name in names {
            let mut stack = vec![];
            self.expanded_len(name, &mut sizes, &mut stack)
                .map_err(|m| (0, m))?;
        }
        let sizes: HashMap<String, usize> =
            sizes.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
        self.sizes = sizes;
        Ok(())
    }

    fn expanded_len<'a>(
        &'a self,
        name: &'a str,
        sizes: &mut HashMap<&'a str, usize>,
        stack: &mut Vec<&'a str>,
    ) -> Result<usize, String> {
        if let Some(n) = sizes.get(name) {
            return Ok(*n);
        }
        if stack.contains(&name) {
            return Err(format!("the entity &{name}; refers to itself"));
        }
        if stack.len() >= MAX_ENTITY_DEPTH {
            return Err(format!(
                "entity references nest more than {MAX_ENTITY_DEPTH} deep at &{name};"
            ));
        }
        let text = match self.map.get(name) {
            Some(Entity::Internal(t)) => t.as_str(),
            Some(Entity::External) => return Err(external(name)),
            None => return Err(undefined(name)),
        };
        stack.push(name);
        let mut total = 0usize;
        for piece in pieces(text) {
            total += match piece {
                Piece::Text(t) => t.len(),
                Piece::Ref(r) if quick_xml::escape::resolve_predefined_entity(r).is_some() => 1,
                Piece::Ref(r) if r.starts_with('#') => 4,
                Piece::Ref(r) => self.expanded_len(r, sizes, stack)?,
                Piece::Bad => {
                    return Err(format!(
                        "the value of entity &{name}; has an '&' that starts no reference"
                    ))
                }
            };
            if total > MAX_ENTITY_BYTES {
                return Err(format!(
                    "the entity &{name}; expands to more than {} MiB, which liteload refuses (an entity expansion attack?)",
                    MAX_ENTITY_BYTES >> 20
                ));
            }
        }
        stack.pop();
        sizes.insert(name, total);
        Ok(total)
    }

    /// The replacement text of `name` for an attribute value, which quick-xml expands
    /// further; `None` if it is not defined or external (see [`Self::why_not`]).
    pub(crate) fn replacement(&self, name: &str) -> Option<&str> {
        match self.map.get(name) {
            Some(Entity::Internal(t)) => Some(t),
            _ => None,
        }
    }

    /// Why `name` has no replacement text.
    pub(crate) fn why_not(&self, name: &str) -> String {
        match self.map.get(name) {
            Some(Entity::External) => external(name),
            _ => undefined(name),
        }
    }

    /// Appends the full expansion of the reference `&name;` to `out`.
    pub(crate) fn expand_into(&self, name: &str, out: &mut String) -> Result<(), String> {
        if let Some(c) = char_ref(name)? {
            out.push(c);
            return Ok(());
        }
        if let Some(t) = quick_xml::escape::resolve_predefined_entity(name) {
            out.push_str(t);
            return Ok(());
        }
        let Some(text) = self.replacement(name) else {
            return Err(self.why_not(name));
        };
        // Sizes and loops were checked when the DTD was read.
        for piece in pieces(text) {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Ref(r) => self.expand_into(r, out)?,
                Piece::Bad => {
                    return Err(format!(
                        "the value of entity &{name}; has an '&' that starts no reference"
                    ))
                }
            }
        }
        Ok(())
    }
}

/// The references of one record, counted as they are used: [`Refs::charge`] is called
/// with a declared entity's name before its replacement text is built.
pub(crate) struct Refs<'a> {
    ents: &'a Entities,
    /// Bytes the record's references may still expand to.
    record_left: Cell<usize>,
    /// Bytes the references of the record's chunk may still expand to.
    chunk_left: &'a Cell<usize>,
    /// The most bytes the document's references may expand to, up to this record.
    document_limit: u64,
}

impl<'a> Refs<'a> {
    /// The references of a record whose literal text leaves `record_left` bytes of
    /// its size limit, in a chunk whose references may still expand to `chunk_left`
    /// bytes, ending `consumed` bytes into the document.
    pub(crate) fn new(
        ents: &'a Entities,
        record_left: usize,
        chunk_left: &'a Cell<usize>,
        consumed: u64,
    ) -> Self {
        Refs {
            ents,
            record_left: Cell::new(record_left),
            chunk_left,
            document_limit: FREE_EXPANSION.saturating_add(consumed.saturating_mul(AMPLIFICATION)),
        }
    }

    /// The most bytes a chunk of `bytes` bytes may expand to, with records of at most
    /// `max_record` bytes: one whole record's worth, or the document's ratio.
    pub(crate) fn chunk_budget(bytes: usize, max_record: usize) -> usize {
        let ratio = FREE_EXPANSION.saturating_add((bytes as u64).saturating_mul(AMPLIFICATION));
        max_record.max(usize::try_from(ratio).unwrap_or(usize::MAX))
    }

    /// Counts a use of entity `name` (declared in the DTD: others fail where they are
    /// expanded) before it is expanded: an error, and nothing built, when it would take
    /// the record past its size limit or the document past its amplification bound.
    pub(crate) fn charge(&self, name: &str) -> Result<(), String> {
        let Some(&size) = self.ents.sizes.get(name) else {
            return Ok(());
        };
        let left = self.record_left.get();
        if size > left {
            return Err(format!(
                "the entity references of this record expand past the record size limit (&{name}; is {size} bytes)"
            ));
        }
        self.record_left.set(left - size);
        let chunk = self.chunk_left.get();
        let total = self.ents.expanded.fetch_add(size as u64, Ordering::Relaxed) + size as u64;
        if size > chunk || total > self.document_limit {
            return Err(format!(
                "entity references expand to more than {AMPLIFICATION} times the document's bytes \
                 (past the first {} MiB), which liteload refuses as libxml2 does (an entity expansion attack?)",
                FREE_EXPANSION >> 20
            ));
        }
        self.chunk_left.set(chunk - size);
        Ok(())
    }
}

impl std::ops::Deref for Refs<'_> {
    type Target = Entities;

    fn deref(&self) -> &Entities {
        self.ents
    }
}

/// `#NN` or `#xHH`: the character; `Ok(None)` for a name.
fn char_ref(name: &str) -> Result<Option<char>, String> {
    let Some(num) = name.strip_prefix('#') else {
        return Ok(None);
    };
    let code = match num.strip_prefix('x') {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => num.parse::<u32>(),
    };
    match code.ok().and_then(char::from_u32) {
        // XML's Char production: no NUL and no other C0 control but tab, LF and CR.
        Some(c) if c != '\0' && (c >= ' ' || matches!(c, '\t' | '\n' | '\r')) => Ok(Some(c)),
        _ => Err(format!("&{name}; is not a character XML allows")),
    }
}

enum Piece<'a> {
    Text(&'a str),
    Ref(&'a str),
    Bad,
}

/// Splits replacement text into literal text and `&name;` references.
fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match memchr::memchr(b'&', rest.as_bytes()) {
            Some(0) => match memchr::memchr(b';', rest.as_bytes()) {
                Some(k) if k > 1 => {
                    let r = &rest[1..k];
                    rest = &rest[k + 1..];
                    Some(Piece::Ref(r))
                }
                _ => {
                    rest = "";
                    Some(Piece::Bad)
                }
            },
            Some(k) => {
                let t = &rest[..k];
                rest = &rest[k..];
                Some(Piece::Text(t))
            }
            None => {
                let t = rest;
                rest = "";
                Some(Piece::Text(t))
            }
        }
    })
}

/// An entity value's literal with its character references expanded (entity
/// references stay, to be expanded where the entity is used).
fn expand_char_refs(literal: &str) -> Result<Cow<'_, str>, String> {
    if !literal.contains("&#") {
        return Ok(Cow::Borrowed(literal));
    }
    let mut out = String::with_capacity(literal.len());
    for piece in pieces(literal) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Ref(r) => match char_ref(r)? {
                Some(c) => out.push(c),
                None => {
                    out.push('&');
                    out.push_str(r);
                    out.push(';');
                }
            },
            Piece::Bad => return Err("an '&' that starts no reference".into()),
        }
    }
    Ok(Cow::Owned(out))
}

/// The offset after the markup declaration (`<!…>`) at `start`, quotes respected.
fn skip_declaration(b: &[u8], start: usize) -> Result<usize, (usize, String)> {
    let mut i = start + 2;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                i = memchr::memchr(q, &b[i + 1..])
                    .map(|k| i + 1 + k + 1)
                    .ok_or_else(|| (i, "a quoted value in the DTD is not closed".to_string()))?;
            }
            b'>' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err((start, "a declaration in the DTD is not closed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_from_bom_and_declaration() {
        assert_eq!(encoding_of(b"<a/>"), Ok(Encoding::Utf8));
        assert_eq!(
            encoding_of(b"<?xml version=\"1.0\" encoding='ISO-8859-1'?><a/>"),
            Ok(Encoding::Latin1)
        );
        assert_eq!(encoding_of(b"\xFF\xFE<\0a\0/\0>\0"), Ok(Encoding::Utf16));
        assert_eq!(encoding_of(b"<\0?\0x\0m\0l\0"), Ok(Encoding::Utf16Le));
        assert_eq!(encoding_of(b"\0<\0?\0x\0m\0l"), Ok(Encoding::Utf16Be));
        let e = encoding_of(b"<?xml version=\"1.0\" encoding=\"UTF-16\"?><a/>").unwrap_err();
        assert_eq!(e.0, 31);
        assert!(e.1.contains("8-bit"), "{}", e.1);
        let e = encoding_of(b"<?xml version=\"1.0\" encoding=\"Shift_JIS\"?><a/>").unwrap_err();
        assert!(e.1.contains("not one liteload reads"), "{}", e.1);
        let mut le = b"\xFF\xFE".to_vec();
        for c in "<?xml version=\"1.0\" encoding=\"latin1\"?>".bytes() {
            le.extend([c, 0]);
        }
        assert!(encoding_of(&le).unwrap_err().1.contains("UTF-16"));
    }

    #[test]
    fn entities_expand_and_bombs_are_refused() {
        let e = Entities::from_doctype(
            "<!DOCTYPE r [<!ENTITY a \"A&#x42;\"> <!-- x --> <!ENTITY b '&a;&a;&amp;'> <!ELEMENT r ANY> <!ENTITY x SYSTEM \"file:///etc/passwd\">]>",
        )
        .unwrap();
        let mut out = String::new();
        e.expand_into("b", &mut out).unwrap();
        assert_eq!(out, "ABAB&");
        assert!(e
            .expand_into("x", &mut out)
            .unwrap_err()
            .contains("external"));
        assert!(e
            .expand_into("nope", &mut out)
            .unwrap_err()
            .contains("not defined"));
        let mut lol = String::from("<!DOCTYPE lolz [<!ENTITY lol \"lol\">");
        for k in 1..10 {
            let prev = if k == 1 {
                "lol".to_string()
            } else {
                format!("lol{}", k - 1)
            };
            lol.push_str(&format!(
                "<!ENTITY lol{k} \"{}\">",
                format!("&{prev};").repeat(10)
            ));
        }
        lol.push_str("]>");
        let t = std::time::Instant::now();
        let err = Entities::from_doctype(&lol).unwrap_err();
        assert!(err.1.contains("expands to more than"), "{}", err.1);
        assert!(t.elapsed().as_secs() < 1);
        let err = Entities::from_doctype("<!DOCTYPE r [<!ENTITY a \"&b;\"><!ENTITY b \"&a;\">]>")
            .unwrap_err();
        assert!(err.1.contains("refers to itself"), "{}", err.1);
    }
}
