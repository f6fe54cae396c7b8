//! A record's text taken apart (on the worker threads): its rows as events in the
//! order the splitter walks them, each key's path and each kept value (as
//! [`super::values`] writes it: typed, or a member's JSON text where only that text
//! gives the value) in an arena, so that the one thread that names and numbers the rows
//! ([`super::spools`]) only looks names up and copies bytes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::values;
use super::VALUE;
use crate::options::Nested;
use crate::source::keys::PART;

/// Where bytes are in a chunk's arena: 32 bits each end, so that an event takes 20
/// bytes, not 40 (a chunk's events are written by a worker and read by the spools'
/// thread: 300 MB of `bench/nested.py`'s orders make about 30 million).
pub(super) type Span = Range<u32>;

/// What a record becomes, in walk order: `Row` … `EndRow` for its own row; inside a
/// row, `Value`s and, for an array that becomes a child table, `Open`, a `Row` … `EndRow`
/// (or one `Element`) for each element, `Close`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Event {
    Row,
    /// A member kept: its key's path (keys joined by [`PART`]) and its value
    /// ([`super::values`]).
    Value {
        key: Span,
        text: Span,
    },
    /// A row of the open array's table whose one member is `value`, this value:
    /// an element that is not an object (one event, not three: a long array of
    /// numbers is held at a third of the memory).
    Element {
        text: Span,
    },
    /// An array member made rows: its key's path, and the same joined by `_`.
    Open {
        key: Span,
        table_key: Span,
    },
    Close,
    EndRow,
}

/// The events and arena of the records of one chunk.
#[derive(Default)]
pub(super) struct Split {
    pub(super) events: Vec<Event>,
    pub(super) arena: Vec<u8>,
    /// The one pass's buffers, kept from record to record.
    buffers: Buffers,
}

/// What [`one_pass`] writes a record's paths and keys in.
#[derive(Default)]
struct Buffers {
    path: (String, String),
    keys: Vec<u8>,
    key_at: Vec<(usize, usize)>,
    nested_keys: Vec<(usize, usize)>,
}

impl Split {
    /// Room for the records of `bytes` bytes of text, `records` of them (the arena
    /// about as large as the text, 40 events a record: an order of `bench/nested.py`,
    /// with its items and their discounts, makes about that many), so that it seldom
    /// grows; never more events than one for 8 bytes of text, so that a chunk of many
    /// tiny records reserves no more than its size allows.
    pub(super) fn sized(bytes: usize, records: usize) -> Split {
        Split {
            events: Vec::with_capacity(records.saturating_mul(40).min(bytes / 8)),
            arena: Vec::with_capacity(bytes + bytes / 4),
            buffers: Buffers::default(),
        }
    }

    /// This split emptied, with room as [`Split::sized`] gives (a written chunk's
    /// split, so that its pages serve the next chunk's: new ones cost a fault each).
    pub(super) fn reused(mut self, bytes: usize, records: usize) -> Split {
        self.events.clear();
        self.arena.clear();
        self.events
            .reserve(records.saturating_mul(40).min(bytes / 8));
        self.arena.reserve(bytes + bytes / 4);
        self
    }

    fn put(&mut self, bytes: &[u8]) -> Span {
        let at = self.arena.len();
        self.arena.extend_from_slice(bytes);
        self.span(at)
    }

    /// The arena from `at` to its end. (A record whose arena passes [`u32::MAX`] is
    /// refused by [`record`], its spans with it.)
    fn span(&self, at: usize) -> Span {
        at as u32..self.arena.len() as u32
    }

    /// The text at `r` (put there from a `str`).
    pub(super) fn text(&self, r: &Span) -> &str {
        // (Every range of a key was put from a `str`; never empty otherwise.)
        std::str::from_utf8(self.bytes(r)).unwrap_or_default()
    }

    /// The bytes at `r`.
    pub(super) fn bytes(&self, r: &Span) -> &[u8] {
        &self.arena[r.start as usize..r.end as usize]
    }
}

/// How records are taken apart.
#[derive(Clone, Copy)]
pub(super) struct Rules {
    pub(super) rule: Nested,
    pub(super) flatten: bool,
}

/// Takes the record of JSON `text` apart into `out` (its events, then `Ok`), or says
/// why not: `Err(None)` when it is not a JSON object (the stream's reader says why),
/// `Err(Some(why))` when a key that would name a column or table holds a NUL byte, or
/// when the chunk's arena would pass 4 GiB with it (see [`Span`]). Nothing of a record
/// not taken stays in `out`.
pub(super) fn record(
    text: &[u8],
    rules: Rules,
    out: &mut Split,
) -> std::result::Result<(), Option<String>> {
    record_within(text, rules, out, u32::MAX as usize)
}

/// [`record`], the arena at most `max` bytes.
fn record_within(
    text: &[u8],
    rules: Rules,
    out: &mut Split,
    max: usize,
) -> std::result::Result<(), Option<String>> {
    let before = (out.events.len(), out.arena.len());
    let taken = taken_apart(text, rules, out);
    if taken.is_ok() && out.arena.len() > max {
        out.events.truncate(before.0);
        out.arena.truncate(before.1);
        return Err(Some(
            "a record whose columns' names and values, taken apart, pass 4 GiB".into(),
        ));
    }
    taken
}

/// [`record`], but for the arena's bound.
fn taken_apart(
    text: &[u8],
    rules: Rules,
    out: &mut Split,
) -> std::result::Result<(), Option<String>> {
    if rules.rule == Nested::Tables {
        match one_pass(text, rules, out) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(e),
        }
    }
    raw_record(text, rules, out)
}

/// Takes the record apart by the raw texts of its values (each level's text parsed
/// again); what [`record`] falls back on.
fn raw_record(
    text: &[u8],
    rules: Rules,
    out: &mut Split,
) -> std::result::Result<(), Option<String>> {
    let Ok(members) = serde_json::from_slice::<Members<'_>>(text) else {
        return Err(None);
    };
    let (events, arena) = (out.events.len(), out.arena.len());
    out.events.push(Event::Row);
    let walked = walk(members, 0, &mut (String::new(), String::new()), rules, out);
    if let Err(why) = walked {
        out.events.truncate(events);
        out.arena.truncate(arena);
        return Err(Some(why));
    }
    out.events.push(Event::EndRow);
    Ok(())
}

/// Takes the record of JSON `text` apart as [`record`] does, in one pass of serde_json
/// over it (every array a child table: [`Nested::Tables`]), its values typed as they are
/// read (the values the JSON reader makes of the raw walk's texts).
/// `Ok(false)`, with nothing of the record in `out`, where only the raw texts give the
/// same rows: a repeated key (the last value takes the first's place), a real that may
/// be a rounded integer literal or is `-0`, a key with a NUL byte (bad, unless a repeat
/// drops it).
///
/// Hand-written because it measured faster: the raw-text walk parses each level's text
/// again (an order's line items three times over) and checks its UTF-8 at every level.
/// 300 MB of `bench/nested.py`'s orders, 5 rounds interleaved, with the ids written
/// without `write!`: 4.06 s and 7.76 CPU-s before, 3.64 s and 6.93 CPU-s after (medians).
fn one_pass(
    text: &[u8],
    rules: Rules,
    out: &mut Split,
) -> std::result::Result<bool, Option<String>> {
    // (Checked at once, as the JSON reader's fast path does: see [`crate::utf8`].)
    let Some(text) = crate::utf8::str(text) else {
        return Err(None);
    };
    let (events, arena) = (out.events.len(), out.arena.len());
    let mut buffers = std::mem::take(&mut out.buffers);
    buffers.path.0.clear();
    buffers.path.1.clear();
    buffers.keys.clear();
    buffers.key_at.clear();
    let mut walk = Walk {
        out,
        flatten: rules.flatten,
        path: buffers.path,
        base: (0, 0),
        keys: buffers.keys,
        key_at: buffers.key_at,
        nested_keys: buffers.nested_keys,
        stop: None,
    };
    walk.out.events.push(Event::Row);
    let mut de = serde_json::Deserializer::from_str(text);
    let read = serde::Deserializer::deserialize_map(
        &mut de,
        Object {
            walk: &mut walk,
            depth: 0,
        },
    )
    .and_then(|()| de.end());
    let Walk {
        stop,
        path,
        keys,
        key_at,
        nested_keys,
        ..
    } = walk;
    out.buffers = Buffers {
        path,
        keys,
        key_at,
        nested_keys,
    };
    match (read, stop) {
        (Ok(()), _) => {
            out.events.push(Event::EndRow);
            Ok(true)
        }
        (Err(_), stop) => {
            out.events.truncate(events);
            out.arena.truncate(arena);
            match stop {
                Some(Stop::Again) => Ok(false),
                None => Err(None),
            }
        }
    }
}

/// Why [`one_pass`] stopped short.
enum Stop {
    /// The raw-text walk must read the record.
    Again,
}

/// The state of [`one_pass`]: the path of the member being read (keys joined by
/// [`PART`], and by `_`), from `base` (where the row being read starts).
struct Walk<'o> {
    out: &'o mut Split,
    flatten: bool,
    path: (String, String),
    base: (usize, usize),
    /// The keys of the objects being read, innermost object's last: each key's bytes in
    /// `keys`, at `key_at`.
    keys: Vec<u8>,
    key_at: Vec<(usize, usize)>,
    /// Room for a nested object's keys as its JSON text is written.
    nested_keys: Vec<(usize, usize)>,
    stop: Option<Stop>,
}

impl Walk<'_> {
    fn stop<E: serde::de::Error>(&mut self, why: Stop) -> E {
        self.stop = Some(why);
        E::custom("stopped")
    }

    /// Puts the current path in the arena.
    fn put_key(&mut self) -> Span {
        self.out.put(&self.path.0.as_bytes()[self.base.0..])
    }

    /// Puts the current path, its keys joined by `_`, in the arena.
    fn put_table_key(&mut self) -> Span {
        self.out.put(&self.path.1.as_bytes()[self.base.1..])
    }

    /// A member kept at the current path, its value written by `write`.
    fn value(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let key = self.put_key();
        let at = self.out.arena.len();
        write(&mut self.out.arena);
        let text = self.out.span(at);
        self.out.events.push(Event::Value { key, text });
    }

    /// An integer that serde_json read as unsigned: past 64 bits signed, its digits.
    fn unsigned(out: &mut Vec<u8>, u: u64) {
        match i64::try_from(u) {
            Ok(i) => values::put_integer(out, i),
            Err(_) => values::put_text(out, values::JSON, u.to_string().as_bytes()),
        }
    }
}

/// An object's members, at `depth` under the walk's path (0: a row's own).
struct Object<'w, 'o> {
    walk: &'w mut Walk<'o>,
    depth: usize,
}

impl<'de> Visitor<'de> for Object<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        // This object's keys: `key_at[level..]` (a search among a few, a set past them).
        let (level, kept) = (self.walk.key_at.len(), self.walk.keys.len());
        let mut many: std::collections::HashSet<Vec<u8>> = Default::default();
        while let Some(Key(k)) = map.next_key()? {
            // A key with a NUL byte: the raw walk says whether the record is bad (a
            // repeat of a key above may yet drop the value that holds it).
            if k.contains('\0') {
                return Err(self.walk.stop(Stop::Again));
            }
            let walk = &mut *self.walk;
            let had = &walk.key_at[level..];
            if had.len() == FEW && many.is_empty() {
                many.extend(had.iter().map(|&(a, b)| walk.keys[a..b].to_vec()));
            }
            let repeated = match had.len() < FEW {
                true => had.iter().any(|&(a, b)| walk.keys[a..b] == *k.as_bytes()),
                false => !many.insert(k.as_bytes().to_vec()),
            };
            if repeated {
                return Err(self.walk.stop(Stop::Again));
            }
            let path = &mut self.walk.path;
            let (len, tlen) = (path.0.len(), path.1.len());
            if self.depth > 0 {
                path.0.push(PART);
                path.1.push('_');
            }
            path.0.push_str(&k);
            path.1.push_str(&k);
            map.next_value_seed(Member {
                walk: &mut *self.walk,
                depth: self.depth,
            })?;
            let walk = &mut *self.walk;
            walk.path.0.truncate(len);
            walk.path.1.truncate(tlen);
            let at = walk.keys.len();
            walk.keys.extend_from_slice(k.as_bytes());
            walk.key_at.push((at, walk.keys.len()));
        }
        self.walk.key_at.truncate(level);
        self.walk.keys.truncate(kept);
        Ok(())
    }
}

/// A member's value, at the walk's path.
struct Member<'w, 'o> {
    walk: &'w mut Walk<'o>,
    depth: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Member<'_, '_> {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Member<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    #[inline]
    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.walk.value(|o| values::put_tag(o, values::NULL));
        Ok(())
    }
    #[inline]
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> std::result::Result<(), E> {
        let tag = if b { values::TRUE } else { values::FALSE };
        self.walk.value(|o| values::put_tag(o, tag));
        Ok(())
    }
    #[inline]
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> std::result::Result<(), E> {
        self.walk.value(|o| values::put_integer(o, i));
        Ok(())
    }
    #[inline]
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> std::result::Result<(), E> {
        self.walk.value(|o| Walk::unsigned(o, u));
        Ok(())
    }
    #[inline]
    fn visit_f64<E: serde::de::Error>(self, r: f64) -> std::result::Result<(), E> {
        if crate::source::json::needs_its_text(r) {
            return Err(self.walk.stop(Stop::Again));
        }
        self.walk.value(|o| values::put_real(o, r));
        Ok(())
    }
    #[inline]
    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<(), E> {
        self.walk
            .value(|o| values::put_text(o, values::STRING, s.as_bytes()));
        Ok(())
    }
    #[inline]
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        let walk = self.walk;
        let key = walk.put_key();
        let table_key = walk.put_table_key();
        walk.out.events.push(Event::Open { key, table_key });
        while seq
            .next_element_seed(Element { walk: &mut *walk })?
            .is_some()
        {}
        walk.out.events.push(Event::Close);
        Ok(())
    }
    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        if self.walk.flatten {
            // (An empty object gives no member, as flattening says.)
            return Object {
                walk: self.walk,
                depth: self.depth + 1,
            }
            .visit_map(map);
        }
        let walk = self.walk;
        let key = walk.put_key();
        let at = walk.out.arena.len();
        let begun = values::begin_text(&mut walk.out.arena, values::JSON);
        if !crate::source::json::nested_object_text(
            map,
            &mut walk.out.arena,
            &mut walk.nested_keys,
        )? {
            return Err(walk.stop(Stop::Again));
        }
        values::end_text(&mut walk.out.arena, begun);
        let text = walk.out.span(at);
        walk.out.events.push(Event::Value { key, text });
        Ok(())
    }
}

/// An element of an array that makes rows: an object is a row, an array a row whose
/// one member `value` is it, any other value a row of `value` ([`Event::Element`]).
struct Element<'w, 'o> {
    walk: &'w mut Walk<'o>,
}

impl Element<'_, '_> {
    fn scalar(self, write: impl FnOnce(&mut Vec<u8>)) {
        let out = &mut *self.walk.out;
        let at = out.arena.len();
        write(&mut out.arena);
        let text = out.span(at);
        out.events.push(Event::Element { text });
    }

    /// Runs `inner` as a row of its own, at a fresh path.
    fn row<T>(self, inner: impl FnOnce(&mut Walk<'_>) -> T) -> T {
        let walk = self.walk;
        let base = walk.base;
        walk.base = (walk.path.0.len(), walk.path.1.len());
        walk.out.events.push(Event::Row);
        let got = inner(walk);
        walk.out.events.push(Event::EndRow);
        walk.path.0.truncate(walk.base.0);
        walk.path.1.truncate(walk.base.1);
        walk.base = base;
        got
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Element<'_, '_> {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    #[inline]
    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.scalar(|o| values::put_tag(o, values::NULL));
        Ok(())
    }
    #[inline]
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> std::result::Result<(), E> {
        let tag = if b { values::TRUE } else { values::FALSE };
        self.scalar(|o| values::put_tag(o, tag));
        Ok(())
    }
    #[inline]
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> std::result::Result<(), E> {
        self.scalar(|o| values::put_integer(o, i));
        Ok(())
    }
    #[inline]
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> std::result::Result<(), E> {
        self.scalar(|o| Walk::unsigned(o, u));
        Ok(())
    }
    #[inline]
    fn visit_f64<E: serde::de::Error>(self, r: f64) -> std::result::Result<(), E> {
        if crate::source::json::needs_its_text(r) {
            return Err(self.walk.stop(Stop::Again));
        }
        self.scalar(|o| values::put_real(o, r));
        Ok(())
    }
    #[inline]
    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<(), E> {
        self.scalar(|o| values::put_text(o, values::STRING, s.as_bytes()));
        Ok(())
    }
    #[inline]
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        self.row(|walk| {
            walk.path.0.push_str(VALUE);
            walk.path.1.push_str(VALUE);
            Member { walk, depth: 0 }.visit_seq(seq)
        })
    }
    #[inline]
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        self.row(|walk| Object { walk, depth: 0 }.visit_map(map))
    }
}

/// The members of an object (flattened at `depth` under `path`: its keys joined by
/// [`PART`], and by `_`) as events of the row being written.
fn walk(
    members: Members<'_>,
    depth: usize,
    path: &mut (String, String),
    rules: Rules,
    out: &mut Split,
) -> std::result::Result<(), String> {
    let bad = |e: serde_json::Error| format!("a value the reader took refuses: {e}");
    for (k, v) in members.0 {
        if k.contains('\0') {
            return Err(format!(
                "key {k:?} has a NUL byte, which no column name can hold"
            ));
        }
        let (len, tlen) = (path.0.len(), path.1.len());
        if depth > 0 {
            path.0.push(PART);
            path.1.push('_');
        }
        path.0.push_str(&k);
        path.1.push_str(&k);
        let raw = v.get().as_bytes();
        match raw.first() {
            Some(b'[') => {
                let elements: Vec<&RawValue> = serde_json::from_str(v.get()).map_err(bad)?;
                if takes(rules.rule, &elements) {
                    let key = out.put(path.0.as_bytes());
                    let table_key = out.put(path.1.as_bytes());
                    out.events.push(Event::Open { key, table_key });
                    for el in elements {
                        let m = match el.get().as_bytes().first() {
                            Some(b'{') => serde_json::from_str(el.get()).map_err(bad)?,
                            // (It becomes rows or JSON text by the same rules.)
                            Some(b'[') => Members(vec![(Cow::Borrowed(VALUE), el)]),
                            _ => {
                                let at = out.arena.len();
                                values::put_text(&mut out.arena, values::RAW, el.get().as_bytes());
                                let text = out.span(at);
                                out.events.push(Event::Element { text });
                                continue;
                            }
                        };
                        out.events.push(Event::Row);
                        walk(m, 0, &mut (String::new(), String::new()), rules, out)?;
                        out.events.push(Event::EndRow);
                    }
                    out.events.push(Event::Close);
                } else {
                    value(&path.0, raw, out);
                }
            }
            // (An empty object gives no member, as flattening says.)
            Some(b'{') if rules.flatten => {
                let m = serde_json::from_str(v.get()).map_err(bad)?;
                walk(m, depth + 1, path, rules, out)?
            }
            _ => value(&path.0, raw, out),
        }
        path.0.truncate(len);
        path.1.truncate(tlen);
    }
    Ok(())
}

/// A member kept at `key`, of JSON text `raw`: its text as read ([`values::RAW`]), an
/// array or object without the blanks between its tokens (the JSON reader keeps a
/// nested value's own text only where it holds an integer past 64 bits, and then
/// without them).
fn value(key: &str, raw: &[u8], out: &mut Split) {
    let key = out.put(key.as_bytes());
    let at = out.arena.len();
    let begun = values::begin_text(&mut out.arena, values::RAW);
    match raw.first() {
        Some(b'[' | b'{') => compact(raw, &mut out.arena),
        _ => out.arena.extend_from_slice(raw),
    }
    values::end_text(&mut out.arena, begun);
    let text = out.span(at);
    out.events.push(Event::Value { key, text });
}

/// Whether the array of `elements` becomes rows of a child table under `rule`.
fn takes(rule: Nested, elements: &[&RawValue]) -> bool {
    match rule {
        Nested::Json => false,
        Nested::Tables => true,
        Nested::ObjectTables => elements
            .iter()
            .any(|e| matches!(e.get().as_bytes().first(), Some(b'{' | b'['))),
    }
}

/// Appends the JSON text `raw` to `out` without the blanks between its tokens (a
/// string's bytes are kept: in valid JSON a line break in one is escaped).
fn compact(raw: &[u8], out: &mut Vec<u8>) {
    let (mut in_string, mut escaped) = (false, false);
    for &b in raw {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
    }
}

/// An object's members in the order their keys are first met, each value's JSON text
/// as read; a repeated key keeps its first place and takes its last value, as a
/// serde_json map does (and so the JSON reader).
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// Past this many keys, a repeat is found through an index, not by a search.
const FEW: usize = 16;

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Members<'de>, A::Error> {
                let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = vec![];
                let mut at: HashMap<Cow<'de, str>, usize> = HashMap::new();
                while let Some(Key(k)) = map.next_key()? {
                    let v: &'de RawValue = map.next_value()?;
                    if out.len() == FEW && at.is_empty() {
                        at = out
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.clone(), i))
                            .collect();
                    }
                    let had = match out.len() < FEW {
                        true => out.iter().position(|(had, _)| *had == k),
                        false => at.get(&k).copied(),
                    };
                    match had {
                        Some(i) => out[i].1 = v,
                        None => {
                            if out.len() >= FEW {
                                at.insert(k.clone(), out.len());
                            }
                            out.push((k, v));
                        }
                    }
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Object)
    }
}

/// A key, borrowed from the text where it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value as its load reads it (the one pass types values, the raw walk copies
    /// their texts).
    fn read(bytes: &[u8]) -> String {
        match values::get(bytes) {
            Some((values::Got::Raw(raw), n)) if n == bytes.len() => {
                values::read_value(raw).map_or("!".into(), |v| format!("{:?}", v.got()))
            }
            Some((v, n)) if n == bytes.len() => format!("{v:?}"),
            _ => "!".into(),
        }
    }

    /// Events as text, each value as its load reads it.
    fn shown(out: &Split, from: (usize, usize)) -> Vec<String> {
        let value = |r: &Span| read(out.bytes(r));
        out.events[from.0..]
            .iter()
            .map(|e| match e {
                Event::Row => "(".into(),
                Event::EndRow => ")".into(),
                Event::Value { key, text } => format!("{:?}={}", out.text(key), value(text)),
                Event::Open { key, table_key } => {
                    format!("[{:?}|{:?}", out.text(key), out.text(table_key))
                }
                Event::Element { text } => format!("<{}>", value(text)),
                Event::Close => "]".into(),
            })
            .collect()
    }

    fn json() -> impl Strategy<Value = String> {
        let leaf = prop::sample::select(vec![
            "null",
            "true",
            "false",
            "0",
            "-7",
            "1.50",
            "1e5",
            "-0",
            "-0.0",
            "2.5e-320",
            "9223372036854775808",
            "18446744073709551616",
            "123456789012345678901",
            "\"a\"",
            "\"\\u00e9\\n\\\"\"",
            "\"\\ud83d\\ude00\"",
            "\"\"",
        ])
        .prop_map(str::to_string);
        let key = prop::sample::select(vec!["a", "b", "A", "é", "k\\u0000", "_id", "value", ""]);
        leaf.prop_recursive(4, 32, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(", "))),
                prop::collection::vec((key.clone(), inner), 0..4).prop_map(|m| {
                    let m: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", m.join(", "))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

        /// The one pass takes a record apart as the raw walk does (the same events,
        /// keys and values), or leaves it to the raw walk; a record either refuses, the
        /// other refuses too, and for the same reason.
        #[test]
        fn one_pass_takes_records_apart_as_the_raw_walk_does(
            members in prop::collection::vec((prop::sample::select(vec!["a", "b", "x", "k\\u0000"]), json()), 0..5),
            flatten in any::<bool>(),
        ) {
            let m: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            let text = format!("{{{}}}", m.join(", "));
            let rules = Rules { rule: Nested::Tables, flatten };
            let (mut fast, mut raw) = (Split::default(), Split::default());
            let one = one_pass(text.as_bytes(), rules, &mut fast);
            let walked = raw_record(text.as_bytes(), rules, &mut raw);
            match one {
                Ok(true) => {
                    prop_assert!(walked.is_ok(), "{}: {:?}", text, walked);
                    prop_assert_eq!(shown(&fast, (0, 0)), shown(&raw, (0, 0)), "{}", text);
                }
                Ok(false) => prop_assert!(fast.events.is_empty() && fast.arena.is_empty()),
                Err(e) => {
                    prop_assert_eq!(&Err(e), &walked, "{}", text);
                    prop_assert!(fast.events.is_empty() && fast.arena.is_empty());
                }
            }
        }
    }

    #[test]
    fn a_record_past_the_arenas_bound_is_refused_and_leaves_nothing() {
        let rules = Rules {
            rule: Nested::Tables,
            flatten: false,
        };
        let mut out = Split::default();
        record(br#"{"a": 1}"#, rules, &mut out).expect("taken");
        let before = (out.events.len(), out.arena.len());
        let long = br#"{"b": "a value longer than what is left", "c": [{"d": 2}]}"#;
        let refused = record_within(long, rules, &mut out, before.1 + 20);
        assert!(refused.unwrap_err().unwrap().contains("4 GiB"));
        assert_eq!((out.events.len(), out.arena.len()), before);
        record_within(long, rules, &mut out, before.1 + 200).expect("within the bound");
    }

    #[test]
    fn compacting_keeps_strings_and_drops_blanks_between_tokens() {
        let mut out = vec![];
        compact(b"{ \"a b\" :\n [1, \"x\\\" ]\\n\" ,\t{}] }", &mut out);
        assert_eq!(out, b"{\"a b\":[1,\"x\\\" ]\\n\",{}]}");
    }

    #[test]
    fn a_record_is_its_events_in_walk_order() {
        let rules = Rules {
            rule: Nested::Tables,
            flatten: true,
        };
        let mut out = Split::default();
        let text = br#"{"a": 1, "o": {"p": [2, {"q": null}]}, "a": "last"}"#;
        record(text, rules, &mut out).expect("taken");
        let shown: Vec<String> = out
            .events
            .iter()
            .map(|e| match e {
                Event::Row => "(".into(),
                Event::EndRow => ")".into(),
                Event::Value { key, text } => {
                    format!(
                        "{}={}",
                        out.text(key).replace(PART, ">"),
                        read(out.bytes(text))
                    )
                }
                Event::Open { key, table_key } => {
                    format!(
                        "[{}|{}",
                        out.text(key).replace(PART, ">"),
                        out.text(table_key)
                    )
                }
                Event::Element { text } => format!("<{}>", read(out.bytes(text))),
                Event::Close => "]".into(),
            })
            .collect();
        assert_eq!(
            shown.join(" "),
            r#"( a=String("last") [o>p|o_p <Integer(2)> ( q=Null ) ] )"#
        );
        let before = (out.events.len(), out.arena.len());
        assert_eq!(record(b"[1]", rules, &mut out), Err(None));
        let nul = record(br#"{"x": [{"k\u0000": 1}]}"#, rules, &mut out);
        assert!(nul.unwrap_err().unwrap().contains("NUL"));
        assert_eq!((out.events.len(), out.arena.len()), before);
    }
}
