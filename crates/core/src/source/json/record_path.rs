//! Records at a path: the array of objects a JSON document holds under one or more keys
//! (`{"Version": "5.5", "List": [{…}, {…}]}`), read as a top-level array is.
//!
//! The path is given as keys joined by `.` (`data.items`), or as a JSON Pointer (RFC
//! 6901: `/data/items`, `~1` for a `/` and `~0` for a `~` in a key) when a key holds a
//! `.` or the path starts with `/`. Without one, a top-level array holds the records; a
//! top-level object holds them in its one member whose value is an array starting with
//! an object: the first such member is taken, and a second one met later is an error
//! (the load is atomic: nothing of it is kept).
//!
//! Everything outside the records (the keys on the way, the other members, what follows
//! the array) is read as JSON and checked, in bounded memory, before the load can end:
//! a document broken outside its records is refused. Of keys that repeat on the path,
//! the first is taken.

use serde::Deserialize;

use super::fatal::{json_message, Fatal};

/// The steps of a record path as given: `Err` says why it is none.
pub fn parse(path: &str) -> std::result::Result<Vec<String>, String> {
    if let Some(pointer) = path.strip_prefix('/') {
        return pointer
            .split('/')
            .map(|token| {
                let mut key = String::with_capacity(token.len());
                let mut chars = token.chars();
                while let Some(c) = chars.next() {
                    match (c, c == '~') {
                        (_, false) => key.push(c),
                        (_, true) => match chars.next() {
                            Some('0') => key.push('~'),
                            Some('1') => key.push('/'),
                            _ => {
                                return Err(format!(
                                    "{path:?} is no JSON Pointer: '~' is written '~0' in a key, '/' is written '~1'"
                                ))
                            }
                        },
                    }
                }
                Ok(key)
            })
            .collect();
    }
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(format!(
            "{path:?} is no record path (keys from the top separated by '.', such as data.items, or a JSON Pointer such as /data/items)"
        ));
    }
    Ok(path.split('.').map(String::from).collect())
}

/// `steps` written back as a path [`parse`] reads as the same steps: keys joined by
/// `.` when none holds a `.` (or is empty, or starts one with `/`), else a JSON Pointer.
pub fn shown(steps: &[String]) -> String {
    let dotted = steps.iter().all(|s| !s.is_empty() && !s.contains('.'))
        && !steps.first().is_some_and(|s| s.starts_with('/'));
    if dotted && !steps.is_empty() {
        return steps.join(".");
    }
    steps
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// What a document's start held: where its records' array was found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wrapping {
    /// The keys from the top to the array (empty: a top-level array).
    pub steps: Vec<String>,
    /// Whether the path was chosen by the reader (not given): a second member of the
    /// top-level object holding an array of objects is then an error.
    pub chosen: bool,
}

/// A cursor over JSON text that knows the line, byte column and byte of its next byte:
/// what the reader of the records' array uses, as seen by this module.
pub(super) trait Cursor: std::io::Read {
    /// The next byte, not consumed; `None` at the end.
    fn peek(&mut self) -> std::io::Result<Option<u8>>;
    /// Consumes the byte `peek` gave.
    fn bump(&mut self);
    /// Consumes whitespace; the next byte after it.
    fn skip_ws(&mut self) -> std::io::Result<Option<u8>>;
    /// Line, byte column, byte of the next byte.
    fn at(&self) -> (u64, u64, u64);
}

/// A fatal error at the cursor's place.
fn here(r: &impl Cursor, message: impl Into<String>) -> Fatal {
    let (line, column, _) = r.at();
    Fatal::new(line, column, message)
}

fn io(r: &impl Cursor, e: std::io::Error) -> Fatal {
    here(r, e.to_string())
}

/// serde_json's error for a value read from `r` that started at `start`, placed in the
/// input.
fn json_error(start: (u64, u64, u64), e: &serde_json::Error) -> Fatal {
    let (l, c) = (e.line() as u64, e.column() as u64);
    let (line, column) = if l <= 1 {
        (start.0, start.1 + c.saturating_sub(1))
    } else {
        (start.0 + l - 1, c.max(1))
    };
    let what = if e.is_io() { "" } else { "invalid JSON: " };
    Fatal::new(line, column, format!("{what}{}", json_message(e)))
}

/// What the value at the cursor's next byte is, in words, for messages.
fn kind_at(b: Option<u8>) -> &'static str {
    match b {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'-' | b'0'..=b'9') => "a number",
        None => "nothing (the end of the input)",
        Some(_) => "text that is no JSON value",
    }
}

/// Reads a key (the cursor on its `"`) and the `:` after it.
fn key(r: &mut impl Cursor) -> std::result::Result<String, Fatal> {
    match r.skip_ws().map_err(|e| io(r, e))? {
        Some(b'"') => {}
        b => {
            return Err(here(
                r,
                format!("expected a key in double quotes, found {}", kind_at(b)),
            ))
        }
    }
    let start = r.at();
    // A string ends on its closing quote: serde_json reads nothing past it.
    let k = String::deserialize(&mut serde_json::Deserializer::from_reader(&mut *r))
        .map_err(|e| json_error(start, &e))?;
    match r.skip_ws().map_err(|e| io(r, e))? {
        Some(b':') => r.bump(),
        b => {
            return Err(here(
                r,
                format!("expected ':' after the key {k:?}, found {}", kind_at(b)),
            ))
        }
    }
    Ok(k)
}

/// Reads one value and checks it as JSON, keeping none of it (serde_json passes over
/// strings without building them) but a number's or literal's characters.
fn skip_value(r: &mut impl Cursor) -> std::result::Result<(), Fatal> {
    let b = r.skip_ws().map_err(|e| io(r, e))?;
    let start = r.at();
    match b {
        // Objects, arrays and strings end on a closing byte: serde_json reads nothing
        // past them.
        Some(b'{' | b'[' | b'"') => {
            serde::de::IgnoredAny::deserialize(&mut serde_json::Deserializer::from_reader(&mut *r))
                .map_err(|e| json_error(start, &e))?;
        }
        // Numbers and literals end where their characters do: read them here, then
        // check them.
        Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
            let mut text = vec![];
            while let Some(c) = r.peek().map_err(|e| io(r, e))? {
                if !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.')) {
                    break;
                }
                text.push(c);
                r.bump();
            }
            if serde_json::from_slice::<serde::de::IgnoredAny>(&text).is_err() {
                return Err(Fatal::new(
                    start.0,
                    start.1,
                    format!(
                        "invalid JSON: expected a number, true, false or null, found {:?}",
                        String::from_utf8_lossy(&text)
                    ),
                ));
            }
        }
        b => {
            return Err(here(
                r,
                format!("expected a JSON value, found {}", kind_at(b)),
            ))
        }
    }
    Ok(())
}

/// After a member's value: consumes a `,` and says `true`, or the object's `}` and
/// says `false`.
fn next_member(r: &mut impl Cursor) -> std::result::Result<bool, Fatal> {
    match r.skip_ws().map_err(|e| io(r, e))? {
        Some(b',') => {
            r.bump();
            Ok(true)
        }
        Some(b'}') => {
            r.bump();
            Ok(false)
        }
        b => Err(here(
            r,
            format!(
                "expected ',' or '}}' after a member's value, found {}",
                kind_at(b)
            ),
        )),
    }
}

/// Whether the array at the cursor (its `[` consumed, the cursor on the next byte)
/// starts with an object; when not, the array is read to its end.
fn holds_objects(r: &mut impl Cursor) -> std::result::Result<bool, Fatal> {
    let mut first = true;
    loop {
        match r.skip_ws().map_err(|e| io(r, e))? {
            Some(b']') => {
                r.bump();
                return Ok(false);
            }
            Some(b'{') if first => return Ok(true),
            Some(b',') if !first => r.bump(),
            b if !first => {
                return Err(here(
                    r,
                    format!(
                        "expected ',' or ']' after an array element, found {}",
                        kind_at(b)
                    ),
                ))
            }
            _ => {}
        }
        first = false;
        skip_value(r)?;
    }
}

/// Reads the start of a document whose first byte (after whitespace) is `{`, up to the
/// `[` of the records' array: at `steps`, or with `None` the top-level object's first
/// member holding an array of objects. With `true`, the cursor is just past that `[`.
/// With `false` (no path given, no member holds objects, exactly one holds an empty
/// array: an export without records), the whole document has been read and checked,
/// and the wrapping names that member.
pub(super) fn enter(
    r: &mut impl Cursor,
    steps: Option<&[String]>,
) -> std::result::Result<(Wrapping, bool), Fatal> {
    r.skip_ws().map_err(|e| io(r, e))?;
    let start = r.at();
    r.bump(); // the `{`
    let Some(steps) = steps else {
        // The top-level object's members, until one holds an array of objects; the
        // members holding an empty array, in case none does.
        let mut empty = vec![];
        let mut any = r.skip_ws().map_err(|e| io(r, e))? != Some(b'}');
        if !any {
            r.bump();
        }
        while any {
            let k = key(r)?;
            if r.skip_ws().map_err(|e| io(r, e))? == Some(b'[') {
                r.bump();
                if r.skip_ws().map_err(|e| io(r, e))? == Some(b']') {
                    empty.push(k.clone());
                }
                if holds_objects(r)? {
                    return Ok((
                        Wrapping {
                            steps: vec![k],
                            chosen: true,
                        },
                        true,
                    ));
                }
            } else {
                skip_value(r)?;
            }
            any = next_member(r)?;
        }
        if r.skip_ws().map_err(|e| io(r, e))?.is_some() {
            return Err(Fatal {
                hint: Some(crate::error::Hint::JsonLines),
                ..here(r, "expected the end of the input after the top-level object, found more (newline-delimited JSON?)")
            });
        }
        // An export with no records: its one empty array is where they would be.
        if let [k] = &empty[..] {
            return Ok((
                Wrapping {
                    steps: vec![k.clone()],
                    chosen: true,
                },
                false,
            ));
        }
        // (One object alone may be newline-delimited JSON of one record: the hint says so.)
        return Err(Fatal {
            hint: Some(crate::error::Hint::JsonLines),
            ..Fatal::new(
                start.0,
                start.1,
                "expected a JSON array of objects, or an object with a member that holds one; this object has none (name the record path of a deeper one)",
            )
        });
    };
    for (level, step) in steps.iter().enumerate() {
        let last = level + 1 == steps.len();
        let on = shown(&steps[..=level]);
        let mut any = r.skip_ws().map_err(|e| io(r, e))? != Some(b'}');
        loop {
            if !any {
                let at = if level == 0 {
                    "the top-level object".to_string()
                } else {
                    format!("the object at {}", shown(&steps[..level]))
                };
                return Err(here(
                    r,
                    format!("{at} has no member {step:?} (record path {on})"),
                ));
            }
            let k = key(r)?;
            if k == *step {
                let b = r.skip_ws().map_err(|e| io(r, e))?;
                match (b, last) {
                    (Some(b'['), true) | (Some(b'{'), false) => {
                        r.bump();
                        break;
                    }
                    _ => {
                        return Err(here(
                            r,
                            format!(
                                "the member at {on} holds {}, not {}",
                                kind_at(b),
                                if last {
                                    "an array of records"
                                } else {
                                    "an object"
                                }
                            ),
                        ))
                    }
                }
            }
            skip_value(r)?;
            any = next_member(r)?;
        }
    }
    Ok((
        Wrapping {
            steps: steps.to_vec(),
            chosen: false,
        },
        true,
    ))
}

/// Reads the rest of the document after the records' array's `]`: the rest of every
/// object around it, checked, then nothing but whitespace. With `w.chosen`, a later
/// member of the top-level object holding an array of objects is an error.
pub(super) fn leave(r: &mut impl Cursor, w: &Wrapping) -> std::result::Result<(), Fatal> {
    for level in (0..w.steps.len()).rev() {
        while next_member(r)? {
            let k = key(r)?;
            if w.chosen && level == 0 && r.skip_ws().map_err(|e| io(r, e))? == Some(b'[') {
                let at = r.at();
                r.bump();
                if holds_objects(r)? {
                    return Err(Fatal::new(
                        at.0,
                        at.1,
                        format!(
                            "the member {k:?} holds an array of objects too, after the records at {}: name the record path",
                            shown(&w.steps)
                        ),
                    ));
                }
                // (`holds_objects` read the array to its end.)
                continue;
            }
            skip_value(r)?;
        }
    }
    match r.skip_ws().map_err(|e| io(r, e))? {
        None => Ok(()),
        Some(_) => Err(Fatal {
            hint: Some(crate::error::Hint::JsonLines),
            ..here(
                r,
                "expected the end of the input after the top-level object, found more",
            )
        }),
    }
}

/// The records' path a document's head shows (see the module comment), for sniffing:
/// `None` when the head is no object, or ends before the path is settled.
pub fn sniffed(head: &[u8]) -> Option<Vec<String>> {
    let mut r = Head {
        text: head,
        line: 1,
        col: 1,
        byte: 0,
    };
    if r.skip_ws().ok()? != Some(b'{') {
        return None;
    }
    enter(&mut r, None).ok().map(|(w, _)| w.steps)
}

/// A [`Cursor`] over bytes in memory.
struct Head<'a> {
    text: &'a [u8],
    line: u64,
    col: u64,
    byte: u64,
}

impl std::io::Read for Head<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.text.len());
        buf[..n].copy_from_slice(&self.text[..n]);
        for _ in 0..n {
            self.bump();
        }
        Ok(n)
    }
}

impl Cursor for Head<'_> {
    fn peek(&mut self) -> std::io::Result<Option<u8>> {
        Ok(self.text.first().copied())
    }
    fn bump(&mut self) {
        if let Some((&b, rest)) = self.text.split_first() {
            self.text = rest;
            self.byte += 1;
            if b == b'\n' {
                (self.line, self.col) = (self.line + 1, 1);
            } else {
                self.col += 1;
            }
        }
    }
    fn skip_ws(&mut self) -> std::io::Result<Option<u8>> {
        while self.text.first().is_some_and(u8::is_ascii_whitespace) {
            self.bump();
        }
        self.peek()
    }
    fn at(&self) -> (u64, u64, u64) {
        (self.line, self.col, self.byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_dotted_and_as_pointers() {
        assert_eq!(parse("List").unwrap(), ["List"]);
        assert_eq!(parse("data.items").unwrap(), ["data", "items"]);
        assert_eq!(parse("/a.b/c~1d~0e").unwrap(), ["a.b", "c/d~e"]);
        assert_eq!(parse("/").unwrap(), [""]);
        assert!(parse("").is_err());
        assert!(parse("a..b").is_err());
        assert!(parse("/a~2").is_err());
        for steps in [
            vec!["List".to_string()],
            vec!["a.b".into(), "c/d~e".into()],
            vec!["".into()],
            vec!["/x".into()],
            vec!["é".into(), "😀".into()],
        ] {
            assert_eq!(parse(&shown(&steps)).unwrap(), steps, "{}", shown(&steps));
        }
    }

    /// Reads `doc` with the record path `path`: the objects' `a` values and the
    /// wrapping, or the fatal error's line, column, message and hint.
    fn read(doc: &str, path: Option<&str>) -> Result<(Vec<i64>, Option<Wrapping>), String> {
        let r = std::io::BufReader::with_capacity(3, std::io::Cursor::new(doc.as_bytes().to_vec()));
        let mut s = super::super::ObjectStream::array(
            Box::new(r),
            1 << 20,
            path.map(|p| parse(p).unwrap()),
        );
        let mut got = vec![];
        loop {
            match s.next() {
                Ok(Some(super::super::Item::Obj(o))) => got.push(o.map["a"].as_i64().unwrap()),
                Ok(Some(super::super::Item::Bad(b))) => return Err(b.message),
                Ok(None) => break,
                Err(f) => {
                    return Err(format!(
                        "{}:{}: {} {:?}",
                        f.line, f.column, f.message, f.hint
                    ))
                }
            }
        }
        let super::super::ObjectStream::Array(a) = s else {
            unreachable!()
        };
        Ok((got, a.wrapping().cloned()))
    }

    #[test]
    fn records_found_without_a_path_and_what_is_refused() {
        let chosen = |k: &str| {
            Some(Wrapping {
                steps: vec![k.to_string()],
                chosen: true,
            })
        };
        assert_eq!(
            read(
                r#"{"v": "5.5", "tags": [], "n": [1], "List": [{"a": 1}, {"a": 2}], "z": [[{"x": 1}]]}"#,
                None
            ),
            Ok((vec![1, 2], chosen("List")))
        );
        // An export without records: its one empty array.
        assert_eq!(
            read(r#"{"v": 1, "List": []}"#, None),
            Ok((vec![], chosen("List")))
        );
        assert_eq!(read(r#"[{"a": 3}]"#, None), Ok((vec![3], None)));
        assert_eq!(read("", None), Ok((vec![], None)));
        let refused = |doc: &str, path: Option<&str>, want: &str| {
            let e = read(doc, path).unwrap_err();
            assert!(e.contains(want), "{doc}: {e}");
        };
        refused(
            r#"{"a": [], "b": []}"#,
            None,
            "1:1: expected a JSON array of objects, or an object with a member that holds one",
        );
        refused(r#"{"a": 1}"#, None, "has none");
        refused(
            "{\"a\": 1}\n{\"a\": 2}\n",
            None,
            "found more (newline-delimited JSON?) Some(JsonLines)",
        );
        refused(
            r#"{"L": [{"a": 1}], "M": [{"a": 2}]}"#,
            None,
            "1:24: the member \"M\" holds an array of objects too, after the records at L",
        );
        refused(
            r#"{"L": [{"a": 1}], "M": [1, {"a": 2}]} x"#,
            None,
            "expected the end of the input after the top-level object",
        );
        refused(
            r#"{"L": [{"a": 1}], "M": [1, {"a": 2}, ]}"#,
            None,
            "1:38: expected a JSON value",
        );
        refused(
            r#"{"L": [{"a": 1}] "M": 1}"#,
            None,
            "expected ',' or '}' after a member's value",
        );
        refused(r#"{"L": [{"a": 1}], "M": 01}"#, None, "found \"01\"");
        refused(
            r#"[{"a": 1}]"#,
            Some("L"),
            "expected an object holding the records at L",
        );
        refused(
            r#"{"L": {"a": 1}}"#,
            Some("L"),
            "the member at L holds an object, not an array of records",
        );
        refused(
            r#"{"L": [{"a": 1}]}"#,
            Some("L.M"),
            "the member at L holds an array, not an object",
        );
        refused(
            r#"{"x": {"y": 1}}"#,
            Some("x.L"),
            "the object at x has no member \"L\" (record path x.L)",
        );
        refused(
            r#"{"L": [{"a": 1}], "L": 2, }"#,
            Some("L"),
            "expected a key in double quotes",
        );
        // A number outside the records is checked whole, however long.
        let long = format!(
            r#"{{"n": {}, "L": [{{"a": 5}}], "m": -{}e-3}}"#,
            "9".repeat(5000),
            "1".repeat(700)
        );
        assert_eq!(read(&long, None), Ok((vec![5], chosen("L"))));
        // Of keys that repeat on the path, the first is taken; the rest is checked.
        assert_eq!(
            read(r#"{"L": [{"a": 1}], "L": [{"a": 2}]}"#, Some("L"))
                .unwrap()
                .0,
            vec![1]
        );
    }

    #[test]
    fn the_head_shows_the_one_member_holding_objects() {
        let s = |t: &str| sniffed(t.as_bytes());
        assert_eq!(
            s(r#"{"Version": "5.5", "n": [1, [2]], "o": {"x": [{}]}, "List": [ {"a": 1}"#),
            Some(vec!["List".to_string()])
        );
        assert_eq!(s(r#"[{"a": 1}]"#), None);
        assert_eq!(s(r#"{"a": 1}"#), None);
        assert_eq!(s(r#"{"Version": "5.5", "Li"#), None);
        assert_eq!(s(r#"{"a": [], "b": [{"#), Some(vec!["b".to_string()]));
    }
}
