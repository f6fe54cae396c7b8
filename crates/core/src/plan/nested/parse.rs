//! A record's text taken apart (on the worker threads): its rows as events in the
//! order the splitter walks them, each key's path and each kept value's JSON text in an
//! arena, so that the one thread that names and numbers the rows
//! ([`super::spools`]) only looks names up and copies bytes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::VALUE;
use crate::options::Nested;
use crate::source::keys::PART;

/// What a record becomes, in walk order: `Row` … `EndRow` for its own row; inside a
/// row, `Value`s and, for an array that becomes a child table, `Open`, a `Row` … `EndRow`
/// (or one `Element`) for each element, `Close`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Event {
    Row,
    /// A member kept: its key's path (keys joined by [`PART`]) and its JSON text.
    Value {
        key: Range<usize>,
        text: Range<usize>,
    },
    /// A row of the open array's table whose one member is `value`, of this JSON text:
    /// an element that is not an object (one event, not three: a long array of
    /// numbers is held at a third of the memory).
    Element {
        text: Range<usize>,
    },
    /// An array member made rows: its key's path, and the same joined by `_`.
    Open {
        key: Range<usize>,
        table_key: Range<usize>,
    },
    Close,
    EndRow,
}

/// The events and arena of the records of one chunk.
#[derive(Default)]
pub(super) struct Split {
    pub(super) events: Vec<Event>,
    pub(super) arena: Vec<u8>,
}

impl Split {
    fn put(&mut self, bytes: &[u8]) -> Range<usize> {
        let at = self.arena.len();
        self.arena.extend_from_slice(bytes);
        at..self.arena.len()
    }

    /// The text at `r` (put there from a `str`).
    pub(super) fn text(&self, r: &Range<usize>) -> &str {
        // (Every range of a key was put from a `str`; never empty otherwise.)
        std::str::from_utf8(&self.arena[r.clone()]).unwrap_or_default()
    }

    /// The bytes at `r`.
    pub(super) fn bytes(&self, r: &Range<usize>) -> &[u8] {
        &self.arena[r.clone()]
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
/// `Err(Some(why))` when a key that would name a column or table holds a NUL byte.
/// Nothing of a record not taken stays in `out`.
pub(super) fn record(
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
                                let text = out.put(el.get().as_bytes());
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

/// A member kept at `key`, of JSON text `raw`: as read, an array or object without
/// the blanks between its tokens (the spool's reader takes it as the input's reader
/// would, and the row stays on its line).
fn value(key: &str, raw: &[u8], out: &mut Split) {
    let key = out.put(key.as_bytes());
    let at = out.arena.len();
    match raw.first() {
        Some(b'[' | b'{') => compact(raw, &mut out.arena),
        _ => out.arena.extend_from_slice(raw),
    }
    let text = at..out.arena.len();
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
                    format!("{}={}", out.text(key).replace(PART, ">"), out.text(text))
                }
                Event::Open { key, table_key } => {
                    format!(
                        "[{}|{}",
                        out.text(key).replace(PART, ">"),
                        out.text(table_key)
                    )
                }
                Event::Element { text } => format!("<{}>", out.text(text)),
                Event::Close => "]".into(),
            })
            .collect();
        assert_eq!(shown.join(" "), r#"( a="last" [o>p|o_p <2> ( q=null ) ] )"#);
        let before = (out.events.len(), out.arena.len());
        assert_eq!(record(b"[1]", rules, &mut out), Err(None));
        let nul = record(br#"{"x": [{"k\u0000": 1}]}"#, rules, &mut out);
        assert!(nul.unwrap_err().unwrap().contains("NUL"));
        assert_eq!((out.events.len(), out.arena.len()), before);
    }
}
