//! The fast path for a JSON record: its fields deserialized by serde straight into a
//! batch's cells against the columns known (no `Map`, no `Value`), nested values written
//! as their text while they are read; a record this path cannot store exactly as the
//! slow path would goes back to it.

use serde::Deserialize;
use serde_json::Value;

use super::objects::needs_its_text;
use crate::source::convert::{push_scalar, push_text_field, Scalar, Values};
use crate::source::keys::{KeyColumns, PART};
use crate::types::ColumnType;

/// The fast path of an NDJSON line (see [`fast_row`]): one value of an object.
pub(super) enum FastValue<'a> {
    Null,
    Bool(bool),
    Integer(i64),
    /// An integer past i64 (below 2^64), stored as its digits.
    Unsigned(u64),
    Real(f64),
    Text(std::borrow::Cow<'a, str>),
    /// An array or object, stored as its JSON text: the text `Value::to_string` gives
    /// for it (see [`NestedText`]).
    Nested(String),
    /// A value only the slow path reads exactly: a real that may be an integer literal
    /// serde_json rounded ([`maybe_rounded`](super::objects::maybe_rounded)), alone or nested, or a nested object with
    /// a repeated key.
    Rounded,
}

impl FastValue<'_> {
    /// The value as serde_json gives it (for the message of a type mismatch).
    fn to_json(&self) -> Value {
        match self {
            FastValue::Null | FastValue::Rounded => Value::Null,
            FastValue::Bool(b) => Value::Bool(*b),
            FastValue::Integer(i) => Value::from(*i),
            FastValue::Unsigned(u) => Value::from(*u),
            FastValue::Real(r) => {
                serde_json::Number::from_f64(*r).map_or(Value::Null, Value::Number)
            }
            FastValue::Text(s) => Value::String(s.to_string()),
            FastValue::Nested(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

/// Reads a [`FastValue`].
struct ValueVisitor;

impl<'de> Deserialize<'de> for FastValue<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueVisitor {
    type Value = FastValue<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Null)
    }
    fn visit_bool<E>(self, b: bool) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Integer(i))
    }
    fn visit_u64<E>(self, u: u64) -> std::result::Result<Self::Value, E> {
        Ok(match i64::try_from(u) {
            Ok(i) => FastValue::Integer(i),
            Err(_) => FastValue::Unsigned(u),
        })
    }
    fn visit_f64<E>(self, r: f64) -> std::result::Result<Self::Value, E> {
        // As `maybe_rounded` judges a real.
        Ok(if needs_its_text(r) {
            FastValue::Rounded
        } else {
            FastValue::Real(r)
        })
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Text(std::borrow::Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Text(std::borrow::Cow::Owned(s.to_string())))
    }
    fn visit_string<E>(self, s: String) -> std::result::Result<Self::Value, E> {
        Ok(FastValue::Text(std::borrow::Cow::Owned(s)))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut n = NestedText::default();
        n.sequence(seq)?;
        Ok(n.finish())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut n = NestedText::default();
        n.object(map)?;
        Ok(n.finish())
    }
}

/// A nested array or object written out as JSON text while it is read, as
/// `Value::to_string` writes the `Value` serde_json would build for it: compact, keys in
/// the order read, strings and numbers written by serde_json itself. Two cases where the
/// text would differ are only noted, for the slow path: a real that may be a rounded
/// integer literal ([`maybe_rounded`]), and a repeated key (a map keeps the first place
/// and the last value).
///
/// Hand-written because it measured faster: building each nested `Value` (a map per
/// object, a string per key) and writing it out took about a tenth of loading the feed
/// of bench/README.md, a quarter of whose objects hold a nested array (NDJSON 1.05 ->
/// 0.94 s, the array 1.17 -> 1.05 s, medians of 5, interleaved; the same rows).
#[derive(Default)]
struct NestedText {
    out: Vec<u8>,
    /// Where each key of the objects being written lies in `out`, innermost object
    /// last.
    keys: Vec<(usize, usize)>,
    slow: bool,
}

impl NestedText {
    fn finish(self) -> FastValue<'static> {
        if self.slow {
            return FastValue::Rounded;
        }
        match String::from_utf8(self.out) {
            Ok(text) => FastValue::Nested(text),
            // (Never: every piece is written from a `str` or by serde_json.)
            Err(_) => FastValue::Rounded,
        }
    }

    fn json<T: serde::Serialize + ?Sized>(&mut self, v: &T) {
        // Writing into a Vec cannot fail, and these values always serialize.
        let _ = serde_json::to_writer(&mut self.out, v);
    }

    fn sequence<'de, A: serde::de::SeqAccess<'de>>(
        &mut self,
        mut seq: A,
    ) -> std::result::Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            if !first {
                self.out.push(b',');
            }
            if seq.next_element_seed(&mut *self)?.is_none() {
                if !first {
                    self.out.pop();
                }
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }

    fn object<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        mut map: A,
    ) -> std::result::Result<(), A::Error> {
        self.out.push(b'{');
        let level = self.keys.len();
        loop {
            let start = self.out.len();
            if level < self.keys.len() {
                self.out.push(b',');
            }
            let at = self.out.len();
            if map.next_key_seed(Key(&mut *self))?.is_none() {
                self.out.truncate(start);
                break;
            }
            let end = self.out.len();
            let key = &self.out[at..end];
            if self.keys[level..]
                .iter()
                .any(|&(a, b)| &self.out[a..b] == key)
            {
                self.slow = true;
            }
            self.keys.push((at, end));
            self.out.push(b':');
            map.next_value_seed(&mut *self)?;
        }
        self.keys.truncate(level);
        self.out.push(b'}');
        Ok(())
    }
}

/// Writes a key of a nested object.
struct Key<'n>(&'n mut NestedText);

impl<'de> serde::de::DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, s: &str) -> std::result::Result<(), E> {
        self.0.json(s);
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut NestedText {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut NestedText {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_none<E>(self) -> std::result::Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_bool<E>(self, b: bool) -> std::result::Result<(), E> {
        self.json(&b);
        Ok(())
    }
    fn visit_i64<E>(self, i: i64) -> std::result::Result<(), E> {
        self.json(&i);
        Ok(())
    }
    fn visit_u64<E>(self, u: u64) -> std::result::Result<(), E> {
        self.json(&u);
        Ok(())
    }
    fn visit_f64<E>(self, r: f64) -> std::result::Result<(), E> {
        // As `maybe_rounded` judges a real.
        if needs_its_text(r) {
            self.slow = true;
        }
        // A parsed real is finite: serde_json writes it as `Value::Number` would.
        self.json(&r);
        Ok(())
    }
    fn visit_str<E>(self, s: &str) -> std::result::Result<(), E> {
        self.json(s);
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        self.sequence(seq)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        self.object(map)
    }
}

/// A key of the fast path, borrowed from the line unless it has escapes.
struct FastKey<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for FastKey<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct K;
        impl<'de> serde::de::Visitor<'de> for K {
            type Value = FastKey<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(FastKey(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Self::Value, E> {
                Ok(FastKey(std::borrow::Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(K)
    }
}

/// The values of one line read by [`fast_row`]: `(column, value)` in the order the
/// keys came, and for each column the place of its value plus one (0: none). Between
/// lines `at` is all 0 (see [`FastRow::reset`]).
#[derive(Default)]
pub(super) struct FastRow<'a> {
    values: Vec<(usize, FastValue<'a>)>,
    at: Vec<u32>,
}

impl<'a> FastRow<'a> {
    /// Empties the row for a line of `width` columns.
    fn reset(&mut self, width: usize) {
        for (c, _) in &self.values {
            self.at[*c] = 0;
        }
        self.values.clear();
        self.at.resize(width, 0);
    }

    /// The value of column `c`, if the line has one.
    fn get(&self, c: usize) -> Option<&FastValue<'a>> {
        match self.at[c] {
            0 => None,
            i => Some(&self.values[i as usize - 1].1),
        }
    }

    /// The row, emptied, for a line of another lifetime (its allocations kept:
    /// collecting an empty vector in place reuses it).
    pub(super) fn recycle<'b>(mut self) -> FastRow<'b> {
        let width = self.at.len();
        self.reset(width);
        FastRow {
            values: self.values.into_iter().map(|_| unreachable!()).collect(),
            at: self.at,
        }
    }
}

/// With flattening: a member's value, at its path's column, or for an object its members
/// in turn under the path (see [`super::flatten`]). Anything the slow path would read
/// otherwise clears `ok`: a key without a column, a NUL in a nested key, a repeated key
/// at any level (the slow path keeps the last value of a key whole, an object's too), a
/// rounded real.
struct Member<'k, 's, 'p, 'a> {
    keys: &'k KeyColumns,
    row: &'s mut FastRow<'a>,
    path: &'p mut String,
    ok: &'p mut bool,
}

impl<'a> Member<'_, '_, '_, 'a> {
    fn store(self, v: FastValue<'a>) {
        match self.keys.get(self.path) {
            Some(c) if *self.ok && !matches!(v, FastValue::Rounded) => match self.row.at[c] {
                0 => {
                    self.row.values.push((c, v));
                    self.row.at[c] = self.row.values.len() as u32;
                }
                _ => *self.ok = false,
            },
            _ => *self.ok = false,
        }
    }

    /// Reads an object's members under the path; `nested`: below the record itself.
    fn members<A: serde::de::MapAccess<'a>>(
        self,
        mut map: A,
        nested: bool,
    ) -> std::result::Result<(), A::Error> {
        let mut seen: Vec<std::borrow::Cow<'a, str>> = vec![];
        while let Some(FastKey(k)) = map.next_key()? {
            // A NUL anywhere is the slow path's to refuse, even in the key of an empty
            // object, which names no column here.
            if (nested && k.contains(PART)) || k.contains('\0') || seen.contains(&k) {
                *self.ok = false;
            }
            let len = self.path.len();
            if nested {
                self.path.push(PART);
            }
            self.path.push_str(&k);
            seen.push(k);
            map.next_value_seed(Member {
                keys: self.keys,
                row: &mut *self.row,
                path: &mut *self.path,
                ok: &mut *self.ok,
            })?;
            self.path.truncate(len);
        }
        Ok(())
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Member<'_, '_, '_, 'de> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Member<'_, '_, '_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_unit()?);
        Ok(())
    }
    fn visit_none<E: serde::de::Error>(self) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_none()?);
        Ok(())
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_bool(b)?);
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_i64(i)?);
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_u64(u)?);
        Ok(())
    }
    fn visit_f64<E: serde::de::Error>(self, r: f64) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_f64(r)?);
        Ok(())
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_borrowed_str(v)?);
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_str(v)?);
        Ok(())
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> std::result::Result<(), E> {
        self.store(ValueVisitor.visit_string(v)?);
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        self.store(ValueVisitor.visit_seq(seq)?);
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        self.members(map, true)
    }
}

/// The JSON text of the object `map` is reading, as [`FastValue::Nested`] holds it (the
/// text of the `Value` serde_json would build), appended to `out`; `false`, with `out`
/// as it was, where only the slow path writes it exactly (a real that may be rounded, a
/// repeated key). The text is written from `str`s and by serde_json: UTF-8. `keys` is
/// room for the keys' places, kept from call to call.
pub(crate) fn nested_object_text<'de, A: serde::de::MapAccess<'de>>(
    map: A,
    out: &mut Vec<u8>,
    keys: &mut Vec<(usize, usize)>,
) -> std::result::Result<bool, A::Error> {
    let at = out.len();
    keys.clear();
    let mut n = NestedText {
        out: std::mem::take(out),
        keys: std::mem::take(keys),
        slow: false,
    };
    let read = n.object(map);
    *out = n.out;
    *keys = n.keys;
    if read.is_err() || n.slow {
        out.truncate(at);
    }
    read.map(|()| !n.slow)
}

/// Reads one NDJSON line (trimmed) as an object whose keys all have columns, into
/// `row` (a repeated key's last value wins, as in [`parse_lossless`]; with flattening
/// (see [`KeyColumns::flatten`]), the members of nested objects under their paths, and
/// a repeated key is the slow path's). `false`, with
/// `row` in any state, when the line needs the slow path: it is no object or no valid
/// JSON, it has a key without a column, or a number whose digits only the slow path
/// keeps. On `true` the values are exactly what [`parse_lossless`] would give.
pub(super) fn fast_row<'a>(text: &'a [u8], keys: &KeyColumns, row: &mut FastRow<'a>) -> bool {
    struct Row<'k, 's, 'a> {
        keys: &'k KeyColumns,
        row: &'s mut FastRow<'a>,
    }
    impl<'de> serde::de::Visitor<'de> for Row<'_, '_, 'de> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<bool, A::Error> {
            let mut ok = true;
            if self.keys.flatten.is_some() {
                let mut path = String::new();
                Member {
                    keys: self.keys,
                    row: self.row,
                    path: &mut path,
                    ok: &mut ok,
                }
                .members(map, false)?;
                return Ok(ok);
            }
            while let Some(FastKey(k)) = map.next_key()? {
                match self.keys.get(&k) {
                    Some(c) if ok => {
                        let v: FastValue<'de> = map.next_value()?;
                        if matches!(v, FastValue::Rounded) {
                            ok = false;
                        }
                        match self.row.at[c] {
                            0 => {
                                self.row.values.push((c, v));
                                self.row.at[c] = self.row.values.len() as u32;
                            }
                            i => self.row.values[i as usize - 1].1 = v,
                        }
                    }
                    _ => {
                        ok = false;
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(ok)
        }
    }
    row.reset(keys.columns.len());
    // The text checked as UTF-8 at once ([`crate::utf8`]): serde_json then checks no
    // string by itself (3% of reading a feed's lines went to checking its many short
    // strings one by one).
    let Some(text) = crate::utf8::str(text) else {
        return false;
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let ok = serde::Deserializer::deserialize_map(&mut de, Row { keys, row });
    matches!(ok, Ok(true)) && de.end().is_ok()
}

/// Pushes the values of `row` as one row of cells of columns `types` (NULL where the
/// line has no value), as [`push_json_value`] would push the slow path's values.
/// Returns how many values were not of their column's type, and the first of them (its
/// column, and the value as JSON for the message).
pub(super) fn push_fast(
    batch: &mut impl Values,
    row: &FastRow<'_>,
    types: &[ColumnType],
    empty_null: bool,
    fields: bool,
    scratch: &mut String,
) -> (u64, Option<(usize, Value)>) {
    let mut mismatches = 0;
    let mut first = None;
    for (i, &ty) in types.iter().enumerate() {
        let Some(v) = row.get(i) else {
            batch.null();
            continue;
        };
        let text;
        let scalar = match v {
            FastValue::Null | FastValue::Rounded => Scalar::Null,
            FastValue::Bool(b) => Scalar::Bool(*b),
            FastValue::Integer(n) => Scalar::Integer(*n),
            FastValue::Unsigned(u) => {
                text = u.to_string();
                Scalar::Text(&text)
            }
            FastValue::Real(r) => Scalar::Real(*r),
            FastValue::Text(t) if fields => {
                if push_text_field(batch, t, ty, empty_null) {
                    mismatches += 1;
                    if first.is_none() {
                        first = Some((i, v.to_json()));
                    }
                }
                continue;
            }
            FastValue::Text(t) => Scalar::Text(t),
            FastValue::Nested(n) => Scalar::Text(n),
        };
        if push_scalar(batch, scalar, ty, empty_null, scratch) {
            mismatches += 1;
            if first.is_none() {
                first = Some((i, v.to_json()));
            }
        }
    }
    (mismatches, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::json::objects::maybe_rounded;
    use proptest::prelude::*;

    /// A nested JSON value as generated: objects keep their keys in order, repeats
    /// included.
    #[derive(Clone, Debug)]
    enum Tree {
        Leaf(&'static str),
        Text(String),
        Arr(Vec<Tree>),
        Obj(Vec<(String, Tree)>),
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            prop::sample::select(vec![
                "null",
                "true",
                "false",
                "0",
                "-12",
                "1.5",
                "1e3",
                "1E-2",
                "-0",
                "0.0",
                "-0.0",
                "2.5e-320",
                "9223372036854775807",
                "9223372036854775808",
                "18446744073709551615",
                "18446744073709551616",
                "1.0e19",
                "-9.3e18",
                "123456789012345678901",
                "3.14159265358979323846",
                "1.7976931348623157e308",
            ])
            .prop_map(Tree::Leaf),
            "[a\"\\\\/\\x00-\\x1f é€😀]{0,6}".prop_map(Tree::Text),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Tree::Arr),
                prop::collection::vec((key(), inner), 0..4).prop_map(Tree::Obj),
            ]
        })
    }

    /// Keys that often repeat, within an object and between levels.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![3 => "[ab]?", 1 => "[ab\"é\\\\]{0,2}"]
    }

    /// `s` as a JSON string, every character escaped as `\uXXXX` or not.
    fn render_str(s: &str, escape_all: bool, out: &mut String) {
        if !escape_all {
            out.push_str(&serde_json::to_string(s).expect("a string"));
            return;
        }
        out.push('"');
        let mut units = [0u16; 2];
        for c in s.chars() {
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
        out.push('"');
    }

    fn render(t: &Tree, ws: &str, escape_all: bool, out: &mut String) {
        match t {
            Tree::Leaf(l) => out.push_str(l),
            Tree::Text(s) => render_str(s, escape_all, out),
            Tree::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    render(v, ws, escape_all, out);
                }
                out.push_str(ws);
                out.push(']');
            }
            Tree::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    render_str(k, escape_all, out);
                    out.push_str(ws);
                    out.push(':');
                    render(v, ws, escape_all, out);
                }
                out.push('}');
            }
        }
    }

    fn repeats_a_key(t: &Tree) -> bool {
        match t {
            Tree::Leaf(_) | Tree::Text(_) => false,
            Tree::Arr(items) => items.iter().any(repeats_a_key),
            Tree::Obj(fields) => {
                let keys: std::collections::HashSet<&String> =
                    fields.iter().map(|(k, _)| k).collect();
                keys.len() < fields.len() || fields.iter().any(|(_, v)| repeats_a_key(v))
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// A nested value written while it is read is the text of the `Value` serde_json
        /// builds for it, or is left to the slow path exactly when that text would not
        /// be: a key repeated, or a real that may be a rounded integer.
        #[test]
        fn nested_values_are_written_as_their_values_are(
            t in tree().prop_filter("nested", |t| matches!(t, Tree::Arr(_) | Tree::Obj(_))),
            ws in prop::sample::select(vec!["", " ", "\n\t "]),
            escape_all in any::<bool>(),
        ) {
            let mut text = String::new();
            render(&t, ws, escape_all, &mut text);
            let value: Value = serde_json::from_str(&text).expect("valid JSON");
            let got: FastValue<'_> = serde_json::from_str(&text).expect("valid JSON");
            match got {
                FastValue::Rounded => prop_assert!(
                    maybe_rounded(&value) || repeats_a_key(&t),
                    "{} left to the slow path", text
                ),
                FastValue::Nested(n) => {
                    prop_assert!(!maybe_rounded(&value) && !repeats_a_key(&t), "{}", text);
                    prop_assert_eq!(n, value.to_string(), "{}", text);
                }
                _ => prop_assert!(false, "{} is no nested value", text),
            }
        }
    }
}
