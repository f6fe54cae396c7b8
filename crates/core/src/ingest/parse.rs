//! [`Messages`]: a batch of stream messages parsed straight into one arena.
//!
//! A reader thread parses its lines into a `Messages` and hands the whole batch to the
//! engine: no `serde_json::Value` tree, no map or string per message. Field names are
//! interned once per batch (the engine maps each to a column once per batch, not once
//! per field), values are typed as the merge needs them, and keys are encoded as one
//! byte string that hashes, compares and sorts as a unit.
//!
//! Invariants:
//! - every text range (`Val::Text`, a message's key and raw ranges) lies inside `text`;
//! - a good message's fields are `fields[m.fields.0..m.fields.1]`, each naming an entry
//!   of `names`; a bad message has empty key and field ranges and a reason;
//! - a key is its parts encoded by `encode_key_part`, one per key field.

use std::fmt;

use hashbrown::HashMap;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::source::json::explain_bad_line;

/// A field's value as the merge sees it. Text lives in the arena of whatever holds the
/// value (a [`Messages`] batch, or the engine's window).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text { at: usize, len: usize },
}

const KEY_INT: u8 = 1;
const KEY_TEXT: u8 = 2;

/// One part of an encoded key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyRef<'a> {
    Int(i64),
    Text(&'a [u8]),
}

/// Appends one part of a key to `out` (`last`: the key's last part). Integers are 8 big-endian bytes with the
/// sign bit flipped, so byte order is numeric order; a text part is its bytes, preceded
/// by its length unless it is the last part. Byte order of encoded single-part keys is
/// SQLite's order of the same values (BINARY collation), which is what sorting a window
/// by key is for.
fn encode_key_part(part: KeyRef<'_>, last: bool, out: &mut Vec<u8>) {
    match part {
        KeyRef::Int(v) => {
            out.push(KEY_INT);
            out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
        }
        KeyRef::Text(t) => {
            out.push(KEY_TEXT);
            if !last {
                out.extend_from_slice(&(t.len() as u64).to_be_bytes());
            }
            out.extend_from_slice(t);
        }
    }
}

/// The parts of a key of `n` parts written by [`encode_key_part`].
pub(crate) fn decode_key(mut enc: &[u8], n: usize) -> impl Iterator<Item = KeyRef<'_>> {
    (0..n).map(move |i| {
        let (tag, rest) = enc.split_first().map_or((0, &[][..]), |(t, r)| (*t, r));
        if tag == KEY_INT {
            let mut b = [0u8; 8];
            b.copy_from_slice(&rest[..8]);
            enc = &rest[8..];
            KeyRef::Int((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
        } else {
            debug_assert_eq!(tag, KEY_TEXT);
            let len = if i + 1 < n {
                let mut b = [0u8; 8];
                b.copy_from_slice(&rest[..8]);
                let len = u64::from_be_bytes(b) as usize;
                let (t, r) = rest[8..].split_at(len);
                enc = r;
                return KeyRef::Text(t);
            } else {
                rest.len()
            };
            let (t, r) = rest.split_at(len);
            enc = r;
            KeyRef::Text(t)
        }
    })
}

/// Where a line came from and where the stream stands after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineMeta {
    /// Line and column (1-based) where the message starts.
    pub line: u64,
    /// The byte column the line's text starts at, from 1.
    pub column: u64,
    /// Line and byte offset just past it: the resume point once it is applied.
    pub next_line: u64,
    /// The byte just past the line.
    pub next_offset: u64,
}

/// One message of a batch.
#[derive(Clone, Debug)]
pub struct Message {
    /// Where the line was.
    pub meta: LineMeta,
    /// Why the message cannot be applied; `None` for a good one.
    pub bad: Option<String>,
    /// For a line that is not readable JSON (or too long): the column of the problem.
    pub bad_column: Option<u64>,
    key: (usize, usize),
    fields: (usize, usize),
    raw: (usize, usize),
}

/// A batch of parsed messages (see the module notes for its invariants).
pub struct Messages {
    keys: Vec<String>,
    pub(crate) text: Vec<u8>,
    names: Vec<Box<str>>,
    name_ix: HashMap<Box<str>, u32>,
    /// Why the message being parsed was refused for one of its member names.
    name_problem: Option<String>,
    fields: Vec<(u32, Val)>,
    msgs: Vec<Message>,
    key_slots: Vec<KeySlot>,
    key_buf: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
enum KeySlot {
    Missing,
    Null,
    Int(i64),
    Text(usize, usize),
    Unusable(&'static str),
}

impl Messages {
    /// An empty batch for a stream whose rows are named by the fields `keys`.
    pub fn new(keys: &[String]) -> Messages {
        Messages {
            keys: keys.to_vec(),
            text: Vec::with_capacity(64 * 1024),
            names: vec![],
            name_ix: HashMap::new(),
            name_problem: None,
            fields: Vec::with_capacity(4096),
            msgs: Vec::with_capacity(512),
            key_slots: vec![KeySlot::Missing; keys.len()],
            key_buf: Vec::with_capacity(32),
        }
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Whether it holds no message.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Bytes held in the arena (a reader sends its batch when this grows large).
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// The messages, in arrival order.
    pub fn messages(&self) -> &[Message] {
        &self.msgs
    }

    /// The text a message was parsed from, when it was kept (always for a bad one).
    pub fn raw(&self, m: &Message) -> &[u8] {
        &self.text[m.raw.0..m.raw.1]
    }

    pub(crate) fn key(&self, m: &Message) -> &[u8] {
        &self.text[m.key.0..m.key.1]
    }

    pub(crate) fn fields(&self, m: &Message) -> &[(u32, Val)] {
        &self.fields[m.fields.0..m.fields.1]
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The value of field `name` in message `m`, as a feed position: an integer's or a
    /// real's text, a string's contents. `None` when the message is bad, lacks the field,
    /// or its value is null or not usable in an init line (longer than 256 bytes, or
    /// holding a control character).
    pub fn position_of(&self, m: &Message, name: &str) -> Option<String> {
        if m.bad.is_some() {
            return None;
        }
        let id = *self.name_ix.get(name)?;
        let (_, val) = self.fields(m).iter().rev().find(|(n, _)| *n == id)?;
        let text = match *val {
            Val::Null => return None,
            Val::Int(i) => i.to_string(),
            Val::Real(r) => r.to_string(),
            Val::Text { at, len } => std::str::from_utf8(&self.text[at..at + len])
                .ok()?
                .to_string(),
        };
        (text.len() <= 256 && !text.chars().any(char::is_control)).then_some(text)
    }

    pub(crate) fn name_count(&self) -> usize {
        self.names.len()
    }

    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Records a line that is bad before parsing (over the length limit): the problem is
    /// at `meta.column`.
    pub fn push_bad(&mut self, reason: String, raw: &[u8], meta: LineMeta) {
        self.push_rejected(reason, Some(meta.column), raw, meta)
    }

    fn push_rejected(&mut self, reason: String, column: Option<u64>, raw: &[u8], meta: LineMeta) {
        let at = self.text.len();
        self.text.extend_from_slice(raw);
        let end = self.text.len();
        self.msgs.push(Message {
            meta,
            bad: Some(reason),
            bad_column: column,
            key: (end, end),
            fields: (self.fields.len(), self.fields.len()),
            raw: (at, end),
        });
    }

    /// Parses one line (without its line end). A line that is not an applicable message
    /// becomes a bad message with the reason; its column points into the line.
    /// `keep_raw` keeps a good message's text too (for a history table).
    pub fn push_line(&mut self, line: &[u8], keep_raw: bool, meta: LineMeta) {
        self.push_with_raw(line, if keep_raw { Some(line) } else { None }, meta)
    }

    /// As [`Messages::push_line`], keeping `raw` (when given) as the message's text.
    pub(crate) fn push_with_raw(&mut self, line: &[u8], raw: Option<&[u8]>, meta: LineMeta) {
        let (text0, fields0) = (self.text.len(), self.fields.len());
        self.key_slots
            .iter_mut()
            .for_each(|s| *s = KeySlot::Missing);
        let parsed = {
            let mut de = serde_json::Deserializer::from_slice(line);
            de.deserialize_map(ObjectVisitor { b: self })
                .and_then(|()| de.end())
        };
        if parsed.is_err() {
            self.text.truncate(text0);
            self.fields.truncate(fields0);
            if let Some(reason) = self.name_problem.take() {
                return self.push_rejected(reason, None, line, meta);
            }
            let (column, reason) = explain_bad_line(line);
            return self.push_rejected(reason, Some(meta.column + column), line, meta);
        }
        if let Err(reason) = self.check_key() {
            self.text.truncate(text0);
            self.fields.truncate(fields0);
            return self.push_rejected(reason, None, line, meta);
        }
        self.keep_big_integers(line, fields0);
        // Encoded into a reused buffer (the parts' text is in `text`, which then grows).
        let mut enc = std::mem::take(&mut self.key_buf);
        enc.clear();
        let n = self.key_slots.len();
        for (i, slot) in self.key_slots.iter().enumerate() {
            let part = match *slot {
                KeySlot::Int(v) => KeyRef::Int(v),
                KeySlot::Text(at, len) => KeyRef::Text(&self.text[at..at + len]),
                _ => unreachable!("check_key accepted only integers and text"),
            };
            encode_key_part(part, i + 1 == n, &mut enc);
        }
        let k0 = self.text.len();
        self.text.extend_from_slice(&enc);
        let k1 = self.text.len();
        self.key_buf = enc;
        let raw = match raw {
            Some(r) => {
                self.text.extend_from_slice(r);
                (k1, self.text.len())
            }
            None => (k1, k1),
        };
        self.msgs.push(Message {
            meta,
            bad: None,
            bad_column: None,
            key: (k0, k1),
            fields: (fields0, self.fields.len()),
            raw,
        });
    }

    /// serde_json reads an integer beyond 64 bits as a rounded real; such a field of the
    /// message whose fields start at `from` gets its digits back, as text, from the
    /// line (read again only then).
    fn keep_big_integers(&mut self, line: &[u8], from: usize) {
        let rounded = |v: &Val| matches!(v, Val::Real(f) if f.abs() >= 9.2e18 && f.fract() == 0.0);
        if !self.fields[from..].iter().any(|(_, v)| rounded(v)) {
            return;
        }
        let Ok(Value::Object(map)) = crate::source::json::parse_lossless(line) else {
            return;
        };
        for i in from..self.fields.len() {
            let (id, v) = self.fields[i];
            if !rounded(&v) {
                continue;
            }
            if let Some(Value::String(digits)) = map.get(&*self.names[id as usize]) {
                let at = self.text.len();
                self.text.extend_from_slice(digits.as_bytes());
                self.fields[i].1 = Val::Text {
                    at,
                    len: digits.len(),
                };
            }
        }
    }

    fn check_key(&self) -> Result<(), String> {
        for (k, slot) in self.keys.iter().zip(&self.key_slots) {
            match slot {
                KeySlot::Missing => return Err(format!("the key field {k:?} is missing")),
                KeySlot::Null => return Err(format!("the key field {k:?} is null")),
                KeySlot::Unusable(what) => {
                    return Err(format!(
                        "the key field {k:?} is {what}; a key must be a string or an integer"
                    ))
                }
                KeySlot::Int(_) | KeySlot::Text(..) => {}
            }
        }
        Ok(())
    }

    /// Sets where the stream stands after the last message (its resume point).
    pub fn set_last_position(&mut self, next_line: u64, next_offset: u64) {
        if let Some(m) = self.msgs.last_mut() {
            m.meta.next_line = next_line;
            m.meta.next_offset = next_offset;
        }
    }

    /// Empties the batch, keeping its allocations.
    pub fn clear(&mut self) {
        self.text.clear();
        self.names.clear();
        self.name_ix.clear();
        self.fields.clear();
        self.msgs.clear();
    }
}

/// The top level of a message: an object, each member a key part or a field.
struct ObjectVisitor<'b> {
    b: &'b mut Messages,
}

enum Member {
    Key(usize),
    Field(u32),
}

impl<'de> Visitor<'de> for ObjectVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let b = self.b;
        while let Some(member) = map.next_key_seed(NameSeed { b: &mut *b })? {
            match member {
                Member::Key(i) => {
                    b.key_slots[i] = map.next_value_seed(KeySeed { text: &mut b.text })?;
                }
                Member::Field(id) => {
                    let v = map.next_value_seed(ValSeed { text: &mut b.text })?;
                    b.fields.push((id, v));
                }
            }
        }
        Ok(())
    }
}

/// A member name: one of the key fields (exact match), or a field name interned.
struct NameSeed<'b> {
    b: &'b mut Messages,
}

impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = Member;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Member, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed<'_> {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Member, E> {
        let b = self.b;
        if let Some(i) = b.keys.iter().position(|k| k == s) {
            return Ok(Member::Key(i));
        }
        if let Some(&id) = b.name_ix.get(s) {
            return Ok(Member::Field(id));
        }
        // A new name: one SQLite could not hold as a column makes the message bad (it is
        // counted and skipped; the stream goes on).
        let problem = if s.contains('\0') {
            Some(format!(
                "field {s:?} has a NUL byte, which no column name can hold"
            ))
        } else {
            b.keys.iter().find(|k| k.eq_ignore_ascii_case(s)).map(|k| {
                format!(
                    "field {s:?} names the key column {k:?} (SQLite's column names ignore case); a key field must be spelled as the key"
                )
            })
        };
        if let Some(p) = problem {
            b.name_problem = Some(p);
            return Err(E::custom("a member name no column can have"));
        }
        let id = b.names.len() as u32;
        b.names.push(s.into());
        b.name_ix.insert(s.into(), id);
        Ok(Member::Field(id))
    }
}

/// A field's value: booleans as 1/0, integers beyond i64 as their digits, nested objects
/// and arrays as their compact JSON text.
struct ValSeed<'t> {
    text: &'t mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for ValSeed<'_> {
    type Value = Val;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(self)
    }
}

impl ValSeed<'_> {
    fn text(self, bytes: &[u8]) -> Val {
        let at = self.text.len();
        self.text.extend_from_slice(bytes);
        Val::Text {
            at,
            len: bytes.len(),
        }
    }

    fn json<E: de::Error>(self, v: &Value) -> Result<Val, E> {
        let at = self.text.len();
        serde_json::to_writer(&mut *self.text, v).map_err(E::custom)?;
        Ok(Val::Text {
            at,
            len: self.text.len() - at,
        })
    }
}

impl<'de> Visitor<'de> for ValSeed<'_> {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Val, E> {
        Ok(Val::Int(i64::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Val, E> {
        Ok(Val::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Val, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Val::Int(i),
            Err(_) => self.text(v.to_string().as_bytes()),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Val, E> {
        Ok(Val::Real(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Val, E> {
        Ok(self.text(v.as_bytes()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Val, A::Error> {
        let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        self.json(&v)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Val, A::Error> {
        let v = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        self.json(&v)
    }
}

/// A key field's value: a string or an integer, or what makes it unusable.
struct KeySeed<'t> {
    text: &'t mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = KeySlot;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<KeySlot, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = KeySlot;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<KeySlot, E> {
        Ok(KeySlot::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<KeySlot, E> {
        Ok(KeySlot::Unusable("a boolean"))
    }
    fn visit_i64<E>(self, v: i64) -> Result<KeySlot, E> {
        Ok(KeySlot::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<KeySlot, E> {
        Ok(i64::try_from(v).map_or(KeySlot::Unusable("a non-integer number"), KeySlot::Int))
    }
    fn visit_f64<E>(self, _: f64) -> Result<KeySlot, E> {
        Ok(KeySlot::Unusable("a non-integer number"))
    }
    fn visit_str<E>(self, v: &str) -> Result<KeySlot, E> {
        let at = self.text.len();
        self.text.extend_from_slice(v.as_bytes());
        Ok(KeySlot::Text(at, v.len()))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<KeySlot, A::Error> {
        de::IgnoredAny::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(KeySlot::Unusable("an object"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<KeySlot, A::Error> {
        de::IgnoredAny::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(KeySlot::Unusable("an array"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_key(parts: &[KeyRef<'_>], out: &mut Vec<u8>) {
        for (i, p) in parts.iter().enumerate() {
            encode_key_part(*p, i + 1 == parts.len(), out);
        }
    }

    fn parse(line: &str) -> Messages {
        let mut b = Messages::new(&["id".to_string()]);
        b.push_line(line.as_bytes(), false, LineMeta::default());
        b
    }

    fn reason(line: &str) -> Option<String> {
        parse(line).messages()[0].bad.clone()
    }

    fn text(b: &Messages, v: Val) -> String {
        match v {
            Val::Text { at, len } => String::from_utf8_lossy(&b.text[at..at + len]).into(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn keys_must_be_strings_or_integers() {
        assert_eq!(reason(r#"{"id": "a", "x": 1}"#), None);
        assert_eq!(reason(r#"{"id": 7}"#), None);
        assert_eq!(
            reason(r#"{"x": 1}"#).as_deref(),
            Some("the key field \"id\" is missing")
        );
        assert_eq!(
            reason(r#"{"id": null}"#).as_deref(),
            Some("the key field \"id\" is null")
        );
        assert!(reason(r#"{"id": 1.5}"#).is_some_and(|e| e.contains("non-integer")));
        assert!(reason(r#"{"id": [1]}"#).is_some_and(|e| e.contains("an array")));
        assert!(reason(r#"{"id": {"a": 1}}"#).is_some_and(|e| e.contains("an object")));
        assert!(reason(r#"{"id": true}"#).is_some_and(|e| e.contains("a boolean")));
        assert!(reason("[1]").is_some_and(|e| e.contains("expected a JSON object")));
        assert!(reason(r#"{"id": 1} x"#).is_some_and(|e| e.contains("invalid JSON")));
    }

    #[test]
    fn values_keep_their_kind() {
        let b = parse(
            r#"{"id": 1, "a": true, "b": 3, "c": 2.5, "d": "s\"", "e": {"x": [1, 2]}, "f": 18446744073709551615, "g": null, "h": -0, "i": 1.0}"#,
        );
        let m = &b.messages()[0];
        let got: Vec<(String, String)> = b
            .fields(m)
            .iter()
            .map(|(n, v)| (b.name(*n).to_string(), text(&b, *v)))
            .collect();
        let want = [
            ("a", "Int(1)"),
            ("b", "Int(3)"),
            ("c", "Real(2.5)"),
            ("d", "s\""),
            ("e", r#"{"x":[1,2]}"#),
            ("f", "18446744073709551615"),
            ("g", "Null"),
            ("h", "Real(-0.0)"),
            ("i", "Real(1.0)"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn keys_encode_in_value_order_and_decode_back() {
        let cases: Vec<Vec<KeyRef>> = vec![
            vec![KeyRef::Int(i64::MIN)],
            vec![KeyRef::Int(-1)],
            vec![KeyRef::Int(0)],
            vec![KeyRef::Int(i64::MAX)],
        ];
        let enc: Vec<Vec<u8>> = cases
            .iter()
            .map(|c| {
                let mut v = vec![];
                encode_key(c, &mut v);
                v
            })
            .collect();
        assert!(enc.windows(2).all(|w| w[0] < w[1]));
        let multi = [KeyRef::Text(b"ab"), KeyRef::Int(-5), KeyRef::Text(b"")];
        let mut v = vec![];
        encode_key(&multi, &mut v);
        assert_eq!(decode_key(&v, 3).collect::<Vec<_>>(), multi.to_vec());
        let mut a = vec![];
        encode_key(&[KeyRef::Text(b"FL1")], &mut a);
        let mut z = vec![];
        encode_key(&[KeyRef::Text(b"FL10")], &mut z);
        assert!(a < z);
    }

    #[test]
    fn names_are_interned_per_batch() {
        let mut b = Messages::new(&["id".to_string()]);
        for i in 0..3 {
            b.push_line(
                format!(r#"{{"id": {i}, "lat": 1, "lon": 2}}"#).as_bytes(),
                true,
                LineMeta::default(),
            );
        }
        assert_eq!(b.name_count(), 2);
        assert_eq!(b.raw(&b.messages()[2]), br#"{"id": 2, "lat": 1, "lon": 2}"#);
    }
}
