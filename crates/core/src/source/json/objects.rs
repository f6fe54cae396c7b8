//! The records of a JSON input, framed: one object per line ([`LineObjects`]) or the
//! elements of one top-level array ([`ArrayObjects`]), each with where it starts, and
//! what is not a loadable object told apart from what ends the stream.

use std::collections::HashMap;
use std::io::{self, BufRead, Read};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::fatal::json_message;
pub use super::fatal::Fatal;
use super::record_path::{self, Cursor, Wrapping};
use crate::error::{Error, Hint, Position};

/// One object read, with where it started.
#[derive(Debug)]
pub struct Obj {
    /// The object.
    pub map: Map<String, Value>,
    /// The line it starts on.
    pub line: u64,
    /// The byte column it starts at.
    pub column: u64,
    /// The byte offset it starts at.
    pub byte: u64,
    /// The keys of members that are objects kept as their JSON text (see
    /// [`parse_lossless_keeping`]), for flattening to read again.
    pub whole: Vec<String>,
}

/// A value that is not a loadable object, and the stream can go on after it.
#[derive(Debug)]
pub struct BadObj {
    /// The line it starts on.
    pub line: u64,
    /// The byte column of the problem.
    pub column: u64,
    /// The byte offset the value starts at.
    pub byte: u64,
    /// What is wrong.
    pub message: String,
    /// The setting that would accept it, if one would.
    pub hint: Option<Hint>,
    /// The value, for a rejects log (its text when it is not JSON).
    pub raw: Value,
}

impl BadObj {
    /// The error for this value, at `pos`.
    pub fn error(&self, pos: Position) -> Error {
        Error::input(pos, None, self.message.clone()).with_hint(self.hint)
    }
}

/// What a JSON stream yields: an object, or a bad value it can go on after.
#[derive(Debug)]
pub enum Item {
    /// An object.
    Obj(Obj),
    /// A value that is no object, or a line that is not JSON.
    Bad(BadObj),
}

/// A stream of JSON objects from either layout.
pub enum ObjectStream {
    /// One object per line.
    Lines(LineObjects),
    /// One array of objects.
    Array(ArrayObjects),
}

impl ObjectStream {
    /// Objects one per line of `r`; a line over `max_line` bytes is a bad value.
    pub fn lines(r: Box<dyn BufRead + Send>, max_line: usize) -> Self {
        ObjectStream::Lines(LineObjects::new(r, max_line, 1, 0))
    }

    /// The elements of one top-level array; an element longer than `max_element` bytes
    /// stops the read with an error at its place (it cannot be skipped without reading it).
    ///
    /// With `wanted`, the array at that record path of a top-level object (see
    /// [`record_path`]); without, a top-level array or the array of objects a
    /// top-level object holds.
    pub fn array(
        r: Box<dyn BufRead + Send>,
        max_element: usize,
        wanted: Option<Vec<String>>,
    ) -> Self {
        ObjectStream::Array(ArrayObjects {
            r: Tracked {
                inner: r,
                line: 1,
                col: 1,
                byte: 0,
                nl_col: 0,
                budget: u64::MAX,
            },
            max_element: max_element as u64,
            #[cfg(test)]
            by_serde: false,
            started: false,
            first: true,
            done: false,
            segment: false,
            wanted,
            wrapping: None,
        })
    }

    /// The elements of a part of a top-level array that starts just after an element,
    /// at line `line`, byte column `column` and decoded byte `byte` of the input. With
    /// `segment`, `r` ends just after an element too, and its end ends the stream
    /// there; without, `r` runs to the end of the input (the array's `]` included, and
    /// the rest of the objects of `wrapping` around it).
    pub(super) fn array_part(
        r: Box<dyn BufRead + Send>,
        max_element: usize,
        (line, column, byte): (u64, u64, u64),
        segment: bool,
        wrapping: Option<Wrapping>,
    ) -> Self {
        ObjectStream::Array(ArrayObjects {
            r: Tracked {
                inner: r,
                line,
                col: column,
                byte,
                nl_col: 0,
                budget: u64::MAX,
            },
            max_element: max_element as u64,
            #[cfg(test)]
            by_serde: false,
            started: true,
            first: false,
            done: false,
            segment,
            wanted: None,
            wrapping,
        })
    }

    /// The next object, a skippable bad value, or `None` at the end. An `Err` is fatal:
    /// a syntax error the stream cannot continue after.
    pub(crate) fn next(&mut self) -> std::result::Result<Option<Item>, Fatal> {
        match self {
            ObjectStream::Lines(l) => l
                .next_item()
                .map_err(|(line, column, m)| Fatal::new(line, column, m)),
            ObjectStream::Array(a) => a.next(),
        }
    }

    /// The next record's text, not yet parsed (for a reader that takes it apart itself),
    /// a bad line, or `None` at the end. An `Err` is fatal, as for [`next`](Self::next).
    pub(crate) fn next_text_record(
        &mut self,
    ) -> std::result::Result<Option<TextRecord<'_>>, Fatal> {
        Ok(match self {
            ObjectStream::Lines(l) => match l
                .next_line()
                .map_err(|(line, column, m)| Fatal::new(line, column, m))?
            {
                None => None,
                Some(Err(bad)) => Some(TextRecord::Bad(bad)),
                Some(Ok(raw)) => Some(TextRecord::Line(raw)),
            },
            ObjectStream::Array(a) => a.next_text()?.map(TextRecord::Element),
        })
    }

    /// As [`next`](Self::next), with the text the value was read from when it was read
    /// whole (a line, trimmed, or an array element).
    pub(super) fn next_with_text(&mut self) -> std::result::Result<Option<WithText>, Fatal> {
        Ok(match self {
            ObjectStream::Lines(l) => match l
                .next_line()
                .map_err(|(line, column, m)| Fatal::new(line, column, m))?
            {
                None => None,
                Some(Err(bad)) => Some((Item::Bad(bad), None)),
                Some(Ok(raw)) => Some((line_item(&raw), Some(Box::from(raw.text)))),
            },
            ObjectStream::Array(a) => match a.next_raw()? {
                None => None,
                Some(el) => {
                    let text = Box::from(el.raw.get().as_bytes());
                    Some((el.item()?, Some(text)))
                }
            },
        })
    }
}

/// An item, and the text it was read from when it was read whole.
type WithText = (Item, Option<Box<[u8]>>);

/// Parses JSON text as serde_json does, except that in an object an integer beyond the
/// 64-bit range keeps its digits (as a string) instead of becoming a rounded real: the
/// README's rule. serde_json gives such an integer as a real, so an integral real of
/// 2^63 or more in magnitude is looked up in the text; only then is the text read twice.
pub fn parse_lossless(text: &[u8]) -> serde_json::Result<Value> {
    parse_lossless_keeping(text).map(|(v, _)| v)
}

/// As [`parse_lossless`], with the keys of the members that are objects kept as their
/// JSON text (strings in the value): flattening reads those again
/// ([`super::flatten::objects_again`]), as the members of the record they are.
pub(super) fn parse_lossless_keeping(text: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut v: Value = serde_json::from_slice(text)?;
    let mut whole = vec![];
    if let Value::Object(map) = &mut v {
        if map.values().any(maybe_rounded) {
            let raw: HashMap<String, &serde_json::value::RawValue> = serde_json::from_slice(text)?;
            for (k, val) in map.iter_mut() {
                let Some(r) = raw.get(k).filter(|_| maybe_rounded(val)) else {
                    continue;
                };
                let t = r.get().trim();
                match val {
                    // A nested value is stored as JSON text: its own text keeps the digits.
                    Value::Object(_) => {
                        *val = Value::String(t.to_string());
                        whole.push(k.clone());
                    }
                    Value::Array(_) => *val = Value::String(t.to_string()),
                    _ if !t.contains(['.', 'e', 'E']) => *val = Value::String(t.to_string()),
                    _ => {}
                }
            }
        }
    }
    Ok((v, whole))
}

/// Whether `v` is, or holds, a real whose literal's text must decide ([`needs_its_text`]).
pub(super) fn maybe_rounded(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && n.as_f64().is_some_and(needs_its_text),
        Value::Array(a) => a.iter().any(maybe_rounded),
        Value::Object(o) => o.values().any(maybe_rounded),
        _ => false,
    }
}

/// Whether a real serde_json parsed may stand for a literal it cannot give back, so the
/// literal's own text decides: an integer of 2^63 or more in magnitude (rounded), or a
/// negative zero (`-0` is an integer literal, TEXT by the type rules as in CSV, and
/// `[-0]` stays `[-0]`; `-0.0` stays a real).
pub(crate) fn needs_its_text(f: f64) -> bool {
    (f.abs() >= 9.2e18 && f.fract() == 0.0) || (f == 0.0 && f.is_sign_negative())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Newline-delimited JSON. A bad line is skippable: the next line starts afresh.
pub struct LineObjects {
    pub(super) r: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    pub(super) line: u64,
    pub(super) byte: u64,
    max_line: usize,
    limit_hint: Hint,
    /// Hold an unterminated last line back until its `\n` arrives (a file still growing).
    hold_partial: bool,
    /// Bytes of `buf` that are an unterminated line read earlier, held back.
    partial: usize,
    /// The line and byte just past the last line that ended in `\n` (or the start).
    resume: (u64, u64),
}

impl LineObjects {
    /// Treats only lines that end in `\n` as lines: an unterminated last line is held
    /// back (not returned, not counted in [`LineObjects::position`]) until a later read
    /// completes it. For a file another program may still be writing.
    pub fn holding_partial_lines(mut self) -> Self {
        self.hold_partial = true;
        self
    }

    /// The hint of the error for a line over the limit (by default [`Hint::RecordLimit`]).
    pub fn with_limit_hint(mut self, hint: Hint) -> Self {
        self.limit_hint = hint;
        self
    }

    /// Reads objects from `r`, whose first byte is byte `byte` of line `line` of the input
    /// (both 1-based line, 0-based byte: `1, 0` for the start).
    pub fn new(r: Box<dyn BufRead + Send>, max_line: usize, line: u64, byte: u64) -> Self {
        LineObjects {
            r,
            buf: Vec::new(),
            line,
            byte,
            max_line,
            limit_hint: Hint::RecordLimit,
            hold_partial: false,
            partial: 0,
            resume: (line, byte),
        }
    }

    /// The text of the line last read (without its line end).
    pub fn last_line(&self) -> &[u8] {
        self.buf.trim_ascii_end()
    }

    /// The line and byte offset just past the last complete line read (one ending in
    /// `\n`): where a resumed read starts. An unterminated last line is not passed, so a
    /// rerun reads it again once its writer has finished it.
    pub fn position(&self) -> (u64, u64) {
        self.resume
    }

    /// The line and byte offset just past the last line read, whether or not it ended
    /// in `\n` (with [`LineObjects::holding_partial_lines`], one held back is not read).
    pub fn read_to(&self) -> (u64, u64) {
        (self.line, self.byte)
    }

    /// The next non-blank line, trimmed, or `None` at the end; a line over the limit is
    /// skipped without being held in memory and comes back as `Err` of the bad item.
    /// An outer `Err` is an I/O failure: (line, column, message).
    #[allow(clippy::type_complexity)]
    pub fn next_line(
        &mut self,
    ) -> std::result::Result<Option<std::result::Result<RawLine<'_>, BadObj>>, (u64, u64, String)>
    {
        loop {
            if self.partial == 0 {
                self.buf.clear();
            }
            let (line, byte) = (self.line, self.byte);
            let room = (self.max_line + 1).saturating_sub(self.partial) as u64;
            let read = (&mut self.r)
                .take(room)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| (line, 1, e.to_string()))?;
            let n = self.partial + read;
            if n == 0 {
                return Ok(None);
            }
            let ended = self.buf.ends_with(b"\n");
            if !ended && n <= self.max_line {
                // The input ends inside a line.
                if self.hold_partial {
                    self.partial = n;
                    return Ok(None);
                }
            }
            self.partial = 0;
            self.byte += n as u64;
            self.line += 1;
            if ended {
                self.resume = (self.line, self.byte);
            }
            if n > self.max_line && !self.buf.ends_with(b"\n") {
                // Skip the rest of the line without holding it in memory.
                loop {
                    let chunk = self.r.fill_buf().map_err(|e| (line, 1, e.to_string()))?;
                    if chunk.is_empty() {
                        break;
                    }
                    let (used, end) = match memchr::memchr(b'\n', chunk) {
                        Some(i) => (i + 1, true),
                        None => (chunk.len(), false),
                    };
                    self.r.consume(used);
                    self.byte += used as u64;
                    if end {
                        self.resume = (self.line, self.byte);
                        break;
                    }
                }
                return Ok(Some(Err(BadObj {
                    line,
                    column: 1,
                    byte,
                    message: format!("line longer than {} bytes", self.max_line),
                    hint: Some(self.limit_hint),
                    raw: Value::Null,
                })));
            }
            if self.buf.trim_ascii().is_empty() {
                continue;
            }
            let lead = (self.buf.len() - self.buf.trim_ascii_start().len()) as u64;
            return Ok(Some(Ok(RawLine {
                text: self.buf.trim_ascii(),
                line,
                column: lead + 1,
                byte,
            })));
        }
    }

    /// The next object, a bad line, or `None` at the end. An `Err` is an I/O failure:
    /// (line, column, message).
    pub fn next_item(&mut self) -> std::result::Result<Option<Item>, (u64, u64, String)> {
        Ok(match self.next_line()? {
            None => None,
            Some(Err(bad)) => Some(Item::Bad(bad)),
            Some(Ok(raw)) => Some(line_item(&raw)),
        })
    }
}

/// What a line of newline-delimited JSON holds: an object, or a bad line.
pub(super) fn line_item(raw: &RawLine<'_>) -> Item {
    {
        let (line, column, byte) = (raw.line, raw.column, raw.byte);
        match parse_lossless_keeping(raw.text) {
            Ok((Value::Object(map), whole)) => Item::Obj(Obj {
                map,
                line,
                column,
                byte,
                whole,
            }),
            _ => {
                let (at, message) = explain_bad_line(raw.text);
                let raw = match serde_json::from_slice::<Value>(raw.text) {
                    Ok(v) => v,
                    Err(_) => Value::String(String::from_utf8_lossy(raw.text).into_owned()),
                };
                Item::Bad(BadObj {
                    line,
                    column: column + at,
                    byte,
                    message,
                    hint: None,
                    raw,
                })
            }
        }
    }
}

/// One non-blank line of newline-delimited JSON, trimmed, and where it starts.
pub struct RawLine<'a> {
    /// The line's text, trimmed.
    pub text: &'a [u8],
    /// Its line number.
    pub line: u64,
    /// The byte column its text starts at.
    pub column: u64,
    /// The byte offset the line starts at.
    pub byte: u64,
}

/// Why `text` (a trimmed line) is not a JSON object: the 0-based column of the problem
/// within `text`, and the message.
pub fn explain_bad_line(text: &[u8]) -> (u64, String) {
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(_)) => (0, "expected a JSON object".to_string()),
        Ok(other) => (
            0,
            format!("expected a JSON object, found {}", kind_of(&other)),
        ),
        Err(e) => (
            e.column().saturating_sub(1) as u64,
            format!(
                "expected a JSON object, found invalid JSON: {}",
                json_message(&e)
            ),
        ),
    }
}

/// A reader that tracks the line and column of the next byte.
struct Tracked<R> {
    inner: R,
    line: u64,
    col: u64,
    byte: u64,
    /// The column of the last `\n` read (where a raw line break in a string is).
    nl_col: u64,
    /// Bytes the element being read may still take before it is too long.
    budget: u64,
}

impl<R: BufRead> Tracked<R> {
    fn advance(&mut self, bytes: &[u8]) {
        self.byte += bytes.len() as u64;
        match memchr::memrchr(b'\n', bytes) {
            Some(i) => {
                self.nl_col = match memchr::memrchr(b'\n', &bytes[..i]) {
                    Some(j) => (i - j) as u64,
                    None => self.col + i as u64,
                };
                self.line += memchr::memchr_iter(b'\n', bytes).count() as u64;
                self.col = (bytes.len() - i) as u64;
            }
            None => self.col += bytes.len() as u64,
        }
    }

    fn peek(&mut self) -> io::Result<Option<u8>> {
        Ok(self.inner.fill_buf()?.first().copied())
    }

    fn bump(&mut self) {
        self.advance(b"x");
        self.inner.consume(1);
    }

    fn skip_ws(&mut self) -> io::Result<Option<u8>> {
        while let Some(b) = self.peek()? {
            if b.is_ascii_whitespace() {
                if b == b'\n' {
                    self.line += 1;
                    self.col = 1;
                    self.byte += 1;
                    self.inner.consume(1);
                } else {
                    self.bump();
                }
            } else {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }
}

impl<R: BufRead> Cursor for Tracked<R> {
    fn peek(&mut self) -> io::Result<Option<u8>> {
        Tracked::peek(self)
    }
    fn bump(&mut self) {
        Tracked::bump(self)
    }
    fn skip_ws(&mut self) -> io::Result<Option<u8>> {
        Tracked::skip_ws(self)
    }
    fn at(&self) -> (u64, u64, u64) {
        (self.line, self.col, self.byte)
    }
}

impl<R: BufRead> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "an array element longer than the longest record allowed (raise the limit)",
            ));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.budget).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.budget -= n as u64;
        let (line, col, byte) = (self.line, self.col, self.byte);
        self.advance(&buf[..n]);
        debug_assert!(
            self.line >= line && (self.line > line || self.col >= col) && self.byte >= byte
        );
        Ok(n)
    }
}

/// A top-level JSON array of objects, read one element at a time.
pub struct ArrayObjects {
    r: Tracked<Box<dyn BufRead + Send>>,
    /// Elements read by serde_json from the stream, as before [`scan_element`]: the
    /// reference it is tested against.
    #[cfg(test)]
    by_serde: bool,
    max_element: u64,
    started: bool,
    first: bool,
    done: bool,
    /// The input is a part of the array that ends just after an element (see
    /// [`ObjectStream::array_part`]).
    segment: bool,
    /// The record path given (see [`record_path`]); `None`: a top-level array, or the
    /// array the top-level object holds.
    wanted: Option<Vec<String>>,
    /// Where the array was found, once its `[` is read: `None` at the top level.
    wrapping: Option<Wrapping>,
}

impl ArrayObjects {
    /// Where the records' array was found: `None` before its `[` is read, or when it
    /// is the top-level value.
    pub(crate) fn wrapping(&self) -> Option<&Wrapping> {
        self.wrapping.as_ref()
    }

    /// Where the next element's `,` (or the array's `]`) is looked for: line, byte
    /// column and decoded byte. `None` before the `[` is read, or after the `]`.
    pub fn position(&self) -> Option<(u64, u64, u64)> {
        (self.started && !self.done && !self.first).then_some((
            self.r.line,
            self.r.col,
            self.r.byte,
        ))
    }

    /// The next element, checked as JSON, `None` after the array. An `Err` is fatal.
    fn next_raw(&mut self) -> std::result::Result<Option<RawElement>, Fatal> {
        self.next_text()?.map(ElementText::checked).transpose()
    }

    /// The next element's text, not yet checked as JSON (see [`ElementText`]), `None`
    /// after the array. An `Err` is fatal.
    pub(super) fn next_text(&mut self) -> std::result::Result<Option<ElementText>, Fatal> {
        if self.done {
            return Ok(None);
        }
        let io_err = |r: &Tracked<_>, e: io::Error| Fatal::new(r.line, r.col, e.to_string());
        if !self.started {
            self.started = true;
            match self.r.skip_ws().map_err(|e| io_err(&self.r, e))? {
                Some(b'[') if self.wanted.is_none() => self.r.bump(),
                Some(b'{') => {
                    let (w, entered) = record_path::enter(&mut self.r, self.wanted.as_deref())
                        .map_err(Fatal::outside)?;
                    self.wrapping = Some(w);
                    if !entered {
                        self.done = true;
                        return Ok(None);
                    }
                }
                Some(b) => {
                    let message = match &self.wanted {
                        Some(steps) => format!(
                            "expected an object holding the records at {}, found {:?}",
                            record_path::shown(steps),
                            b as char
                        ),
                        None => format!(
                            "expected a JSON array of objects ('['), found {:?}",
                            b as char
                        ),
                    };
                    return Err(Fatal {
                        hint: self.wanted.is_none().then_some(Hint::JsonLines),
                        outside: self.wanted.is_some(),
                        ..Fatal::new(self.r.line, self.r.col, message)
                    });
                }
                None => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
        let mut b = self.r.skip_ws().map_err(|e| io_err(&self.r, e))?;
        if b == Some(b']') {
            self.r.bump();
            self.done = true;
            if let Some(w) = &self.wrapping {
                record_path::leave(&mut self.r, w).map_err(Fatal::outside)?;
                return Ok(None);
            }
            return match self.r.skip_ws().map_err(|e| io_err(&self.r, e))? {
                None => Ok(None),
                Some(_) => Err(Fatal::new(
                    self.r.line,
                    self.r.col,
                    "expected the end of the input after the array, found more",
                )),
            };
        }
        if !self.first {
            if b.is_none() && self.segment {
                self.done = true;
                return Ok(None);
            }
            if b != Some(b',') {
                return Err(Fatal::new(
                    self.r.line,
                    self.r.col,
                    "expected ',' or ']' after an array element",
                ));
            }
            self.r.bump();
            b = self.r.skip_ws().map_err(|e| io_err(&self.r, e))?;
        }
        self.first = false;
        let (line, column, byte) = (self.r.line, self.r.col, self.r.byte);
        match b {
            Some(b'{') | Some(b'[') | Some(b'"') => {}
            None => {
                return Err(Fatal::new(
                    line,
                    column,
                    "expected an array element or ']', found the end of the input",
                ))
            }
            Some(_) => {
                return Err(Fatal::new(
                    line,
                    column,
                    "expected a JSON object as an array element",
                ))
            }
        }
        let limit = self.max_element.saturating_add(1);
        #[cfg(test)]
        let scanned = if self.by_serde {
            Ok((vec![], false))
        } else {
            scan_element(&mut self.r.inner, limit)
        };
        #[cfg(not(test))]
        let scanned = scan_element(&mut self.r.inner, limit);
        let (text, whole) = match scanned {
            Ok(scanned) => scanned,
            Err((text, e)) => {
                let mut at = Tracked {
                    inner: &text[..],
                    line,
                    col: column,
                    byte,
                    nl_col: 0,
                    budget: 0,
                };
                at.advance(&text);
                return Err(Fatal::new(at.line, at.col, e.to_string()));
            }
        };
        if whole {
            self.r.advance(&text);
            return Ok(Some(ElementText {
                text,
                line,
                column,
                byte,
            }));
        }
        // The input ends inside the element, or the element is too long: serde_json
        // reads those bytes again, then the rest of the input, for its error exactly
        // as it would have read them from the input. (Objects, arrays and strings end
        // on a closing byte, so it reads nothing past an element.)
        let mut again = Tracked {
            inner: std::io::Read::chain(&text[..], &mut self.r.inner),
            line,
            col: column,
            byte,
            nl_col: 0,
            budget: limit,
        };
        let mut de = serde_json::Deserializer::from_reader(&mut again);
        let read = Box::<serde_json::value::RawValue>::deserialize(&mut de);
        let (end_line, end_col, end_byte) = (again.line, again.col, again.byte);
        match read {
            // serde_json reads one byte at a time here: a line break it failed on is
            // the last byte read, where `again` saw it.
            Err(e) if e.column() == 0 && e.line() >= 2 => Err(Fatal::new(
                end_line - 1,
                again.nl_col,
                format!("invalid JSON: {}", json_message(&e)),
            )),
            Err(e) => Err(element_error(line, column, &text, &e)),
            Ok(raw) if end_byte - byte >= text.len() as u64 => {
                (self.r.line, self.r.col, self.r.byte) = (end_line, end_col, end_byte);
                Ok(Some(ElementText {
                    text: raw.get().as_bytes().to_vec(),
                    line,
                    column,
                    byte,
                }))
            }
            Ok(_) => Err(Fatal::new(
                end_line,
                end_col,
                "an array element ends before its brackets close",
            )),
        }
    }

    fn next(&mut self) -> std::result::Result<Option<Item>, Fatal> {
        match self.next_raw()? {
            Some(el) => el.item().map(Some),
            None => Ok(None),
        }
    }
}

/// Reads one array element (its first byte, `{`, `[` or `"`, not yet consumed) from
/// `r` as bytes, following strings, their escapes and the nesting of brackets, without
/// checking it as JSON. Returns the bytes and whether they are whole: `false` when the
/// input ends first, or past `limit` bytes (the bytes read so far). On an I/O error,
/// the bytes read before it.
///
/// Hand-written because it measured faster: serde_json reading the element from the
/// stream took each byte through `io::Read` one at a time (a 327 MB array on one
/// reader: 6.3 s against 2.3 s for the same objects as lines). Inside an object or array
/// the bytes are taken 64 at a time ([`super::scan`], as the array planner takes them):
/// byte by byte, with a search for each string's end, the scan was a tenth of a nested
/// load's CPU time (300 MB of `bench/nested.py`'s orders: 0.2 CPU-s, see
/// bench/README.md "Records found 64 bytes at a time").
fn scan_element<R: BufRead + ?Sized>(
    r: &mut R,
    limit: u64,
) -> std::result::Result<(Vec<u8>, bool), (Vec<u8>, io::Error)> {
    let mut text = Vec::new();
    let mut s = Scan::default();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((text, e)),
        };
        if buf.is_empty() {
            return Ok((text, false));
        }
        let end = s.scan(buf);
        let take = end.unwrap_or(buf.len());
        text.extend_from_slice(&buf[..take]);
        r.consume(take);
        if text.len() as u64 > limit {
            return Ok((text, false));
        }
        if end.is_some() {
            return Ok((text, true));
        }
    }
}

/// Where [`scan_element`] is in an element, from one buffer to the next.
#[derive(Clone, Copy, Default)]
struct Scan {
    depth: u64,
    in_string: bool,
    /// After a backslash in a string: whether its letter is still to come (the last
    /// buffer ended on the backslash), and how many bytes of the escape are left to pass
    /// over. `\u` takes four more bytes whatever they are, as serde_json reads them
    /// before it checks them: a quote among them does not end the string.
    letter_next: bool,
    skip: usize,
}

impl Scan {
    /// Follows the element through `buf`: the length of its end in `buf`, if there.
    fn scan(&mut self, buf: &[u8]) -> Option<usize> {
        let mut i = 0;
        while i < buf.len() {
            // Whole blocks, inside an object or array, between escapes.
            if self.depth > 0 && !self.letter_next && self.skip == 0 && buf.len() - i >= 64 {
                match self.blocks(&buf[i..]) {
                    Blocks::End(n) => return Some(i + n),
                    Blocks::Scanned(n) if n > 0 => {
                        i += n;
                        continue;
                    }
                    // A block the blocks cannot follow: byte by byte.
                    Blocks::Scanned(_) => {
                        let stop = i + 64;
                        match self.bytes(buf, i, stop) {
                            Ok(end) => return Some(end),
                            Err(at) => i = at,
                        }
                        continue;
                    }
                }
            }
            let stop = match (self.depth, self.in_string) {
                // The element's first byte; a string element whole.
                (0, false) => i + 1,
                (0, true) => buf.len(),
                // Up to the next place a block could start.
                _ => (i + 64).min(buf.len()),
            };
            match self.bytes(buf, i, stop) {
                Ok(end) => return Some(end),
                Err(at) => i = at,
            }
        }
        None
    }

    /// Follows `buf[i..stop]` byte by byte: `Ok` with the element's end, or `Err` with
    /// where it stopped (`stop`, or past it to finish an escape).
    fn bytes(
        &mut self,
        buf: &[u8],
        mut i: usize,
        stop: usize,
    ) -> std::result::Result<usize, usize> {
        if self.letter_next && i < buf.len() {
            self.letter_next = false;
            self.skip = if buf[i] == b'u' { 5 } else { 1 };
        }
        let passed = self.skip.min(buf.len() - i);
        i += passed;
        self.skip -= passed;
        while i < stop {
            if self.in_string {
                match memchr::memchr2(b'"', b'\\', &buf[i..stop]) {
                    None => i = stop,
                    Some(k) if buf[i + k] == b'\\' => {
                        i += k + 1;
                        if i == buf.len() {
                            self.letter_next = true;
                        } else {
                            self.skip = if buf[i] == b'u' { 5 } else { 1 };
                            let passed = self.skip.min(buf.len() - i);
                            i += passed;
                            self.skip -= passed;
                        }
                    }
                    Some(k) => {
                        i += k + 1;
                        self.in_string = false;
                        if self.depth == 0 {
                            return Ok(i);
                        }
                    }
                }
            } else {
                let b = buf[i];
                i += 1;
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Ok(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        Err(i)
    }

    /// Follows whole 64-byte blocks of `buf` (inside an object or array, no escape
    /// pending): the element's end, or the bytes followed, which stop before a block
    /// where a `\u` escape could hold a quote (only serde_json's reading of four bytes
    /// after it decides such a block: see `skip`).
    fn blocks(&mut self, buf: &[u8]) -> Blocks {
        let mut at = 0;
        let (mut in_string, mut escaping) = (self.in_string, false);
        while let Some(b) = buf.get(at..).and_then(|b| b.first_chunk::<64>()) {
            let m = super::scan::classify(b);
            let mut carry = escaping;
            let escaped = super::scan::escaped(m.backslash, &mut carry);
            // (`escaped` takes every backslash as one in a string: checked below.)
            // A `\u` escape: its four bytes, which serde_json takes whatever they are,
            // must be in the block and hold no quote or backslash (as `\uXXXX` never
            // does), or only the bytes decide.
            let mut unsure = false;
            let mut e = escaped;
            while e != 0 {
                let j = e.trailing_zeros() as usize;
                e &= e - 1;
                if b[j] == b'u' && (j + 4 >= 64 || (m.quote | m.backslash) >> (j + 1) & 0b1111 != 0)
                {
                    unsure = true;
                    break;
                }
            }
            if unsure {
                break;
            }
            let quotes = m.quote & !escaped;
            let mut inside = in_string;
            let strings = super::scan::in_strings(quotes, &mut inside);
            // A backslash outside strings escapes nothing (the JSON is bad, and the
            // bytes say where): taken as escaping, it would hide a quote.
            if m.backslash & !strings != 0 {
                break;
            }
            let mut events = (m.open | m.close) & !strings;
            let mut depth = self.depth;
            while events != 0 {
                let j = events.trailing_zeros();
                events &= events - 1;
                if m.open >> j & 1 == 1 {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        self.depth = 0;
                        self.in_string = false;
                        return Blocks::End(at + j as usize + 1);
                    }
                }
            }
            self.depth = depth;
            in_string = inside;
            escaping = carry;
            at += 64;
        }
        self.in_string = in_string;
        // An escape begun at a block's end: its letter is the next byte.
        self.letter_next = escaping;
        Blocks::Scanned(at)
    }
}

/// What [`Scan::blocks`] found.
enum Blocks {
    /// The element ends after this many bytes.
    End(usize),
    /// This many bytes (whole blocks) were followed, the element going on.
    Scanned(usize),
}

/// An array element's bytes, read whole (its brackets closed) but not yet checked as
/// JSON, and where it starts.
pub struct ElementText {
    pub(super) text: Vec<u8>,
    pub(super) line: u64,
    pub(super) column: u64,
    byte: u64,
}

impl ElementText {
    /// The element checked as serde_json checks a value it reads from a stream, with
    /// that error when it is not JSON: the bytes are the ones it would have read, and
    /// it stops at the element's closing byte.
    pub(super) fn checked(self) -> std::result::Result<RawElement, Fatal> {
        let ElementText {
            text,
            line,
            column,
            byte,
        } = self;
        let mut de = serde_json::Deserializer::from_reader(&text[..]);
        match Box::<serde_json::value::RawValue>::deserialize(&mut de) {
            Ok(raw) => Ok(RawElement {
                raw,
                line,
                column,
                byte,
            }),
            Err(e) => Err(element_error(line, column, &text, &e)),
        }
    }
}

/// A record's text as read: a line (trimmed), an array element (not yet checked), or a
/// line the stream refused as it read it (too long).
pub(crate) enum TextRecord<'a> {
    Line(RawLine<'a>),
    Element(ElementText),
    Bad(BadObj),
}

impl<'a> TextRecord<'a> {
    /// A line's trimmed `text` that starts at line, byte column and byte offset `at`.
    pub(crate) fn line(text: &'a [u8], (line, column, byte): (u64, u64, u64)) -> Self {
        TextRecord::Line(RawLine {
            text,
            line,
            column,
            byte,
        })
    }

    /// An array element's `text`, read whole, that starts at `at` (as for a line).
    pub(crate) fn element(text: Vec<u8>, (line, column, byte): (u64, u64, u64)) -> Self {
        TextRecord::Element(ElementText {
            text,
            line,
            column,
            byte,
        })
    }

    /// The text (none for a refused line).
    pub(crate) fn text(&self) -> &[u8] {
        match self {
            TextRecord::Line(l) => l.text,
            TextRecord::Element(e) => &e.text,
            TextRecord::Bad(_) => b"",
        }
    }

    /// Its line, byte column and byte offset.
    pub(crate) fn at(&self) -> (u64, u64, u64) {
        match self {
            TextRecord::Line(l) => (l.line, l.column, l.byte),
            TextRecord::Element(e) => (e.line, e.column, e.byte),
            TextRecord::Bad(b) => (b.line, b.column, b.byte),
        }
    }

    /// What the stream's own reader makes of it: an object, a bad value, or (for an
    /// element that is not JSON) the fatal error at its place.
    pub(crate) fn item(self) -> std::result::Result<Item, Fatal> {
        match self {
            TextRecord::Line(l) => Ok(line_item(&l)),
            TextRecord::Element(e) => e.checked()?.item(),
            TextRecord::Bad(b) => Ok(Item::Bad(b)),
        }
    }
}

/// An array element's text, read whole and checked as JSON, and where it starts.
pub struct RawElement {
    raw: Box<serde_json::value::RawValue>,
    line: u64,
    column: u64,
    byte: u64,
}

impl RawElement {
    /// The element as the slow path reads it: an object, or a bad value.
    pub(super) fn item(self) -> std::result::Result<Item, Fatal> {
        let RawElement {
            raw,
            line,
            column,
            byte,
        } = self;
        match parse_lossless_keeping(raw.get().as_bytes()) {
            Ok((Value::Object(map), whole)) => Ok(Item::Obj(Obj {
                map,
                line,
                column,
                byte,
                whole,
            })),
            Ok((other, _)) => Ok(Item::Bad(BadObj {
                line,
                column,
                byte,
                message: format!("expected a JSON object, found {}", kind_of(&other)),
                hint: None,
                raw: other,
            })),
            Err(e) => Err(element_error(line, column, raw.get().as_bytes(), &e)),
        }
    }
}

/// A serde_json error in an element that starts at `line`, `column`, placed in the file.
/// `text` is the element's text from its start, as far as it is known.
///
/// serde_json counts a `\n` it fails on (a raw line break inside a string) before it
/// stops, so it reports the next line at column 0; the fault is that `\n`, at the end of
/// the line before, and is reported there (1-based, as every other column).
fn element_error(line: u64, column: u64, text: &[u8], e: &serde_json::Error) -> Fatal {
    let (mut l, mut c) = (e.line() as u64, e.column() as u64);
    if c == 0 && l >= 2 && memchr::memchr_iter(b'\n', text).count() as u64 >= l - 1 {
        if let Some(len) = text.split(|&b| b == b'\n').nth(l as usize - 2) {
            l -= 1;
            c = len.len() as u64 + 1;
        }
    }
    let (el, ec) = if l <= 1 {
        (line, column + c.saturating_sub(1))
    } else {
        (line + l - 1, c.max(1))
    };
    let what = if e.is_io() { "" } else { "invalid JSON: " };
    Fatal::new(el, ec, format!("{what}{}", json_message(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One element read: its text, line, column and byte, and the stream's position
    /// after it.
    type Element = (String, u64, u64, u64, (u64, u64, u64));

    /// What reading `input` element by element gives: the elements, and how the array
    /// ends (`None`, or the fatal error's line, column and message).
    type Read = (Vec<Element>, Option<(u64, u64, String)>);

    fn read_all(input: &[u8], capacity: usize, max_element: usize, by_serde: bool) -> Read {
        let r = std::io::BufReader::with_capacity(capacity, std::io::Cursor::new(input.to_vec()));
        let ObjectStream::Array(mut a) = ObjectStream::array(Box::new(r), max_element, None) else {
            unreachable!("an array stream")
        };
        a.by_serde = by_serde;
        let mut got = vec![];
        for _ in 0..200 {
            match a.next_raw() {
                Ok(Some(el)) => got.push((
                    el.raw.get().to_string(),
                    el.line,
                    el.column,
                    el.byte,
                    (a.r.line, a.r.col, a.r.byte),
                )),
                Ok(None) => return (got, None),
                Err(f) => return (got, Some((f.line, f.column, f.message))),
            }
        }
        (got, None)
    }

    /// Pieces of arrays: elements valid and not, strings with escapes and brackets,
    /// bytes that are no UTF-8, and stray text.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => Just(br#"{"a": 1, "b": "x"}"#.to_vec()),
            2 => Just(br#"{"s": "q\"u{o}t[e]\\", "n": [1, {"m": null}]}"#.to_vec()),
            1 => Just(br#"{"u": "\u00e9\ud83d\ude00", "e": 1e5}"#.to_vec()),
            1 => Just(b"{\"t\": \"line\nbreak\"}".to_vec()),
            1 => Just(br#"{"bad": "\q"}"#.to_vec()),
            1 => Just(br#"{"short": "\u12"}"#.to_vec()),
            1 => Just(br#""\u"#.to_vec()),
            1 => Just(br#"{"a": 1,, "b": 2}"#.to_vec()),
            1 => Just(br#"{"a": tru}"#.to_vec()),
            1 => Just(br#"{"a": 1]"#.to_vec()),
            1 => Just(br#"{"a": "open"#.to_vec()),
            1 => Just(br#"{"a": [1, 2}"#.to_vec()),
            1 => Just(b"{\"a\": \"\xff\xfe\"}".to_vec()),
            1 => Just(br#""just a string""#.to_vec()),
            1 => Just(br#"[1, "]", {"x": []}]"#.to_vec()),
            1 => Just(br#"{"z": "\\\\"}"#.to_vec()),
            1 => Just(br#"{"big": 123456789012345678901234567890}"#.to_vec()),
            1 => Just(b"42".to_vec()),
            1 => Just(b"}".to_vec()),
            1 => "[ -~]{0,12}".prop_map(String::into_bytes),
            // Long ones, whose bytes are taken 64 at a time: escapes, `\u` and brackets
            // in strings anywhere in a block and across blocks, and the bad ones a
            // block cannot follow (a short `\u`, a backslash outside a string).
            4 => long(),
        ]
    }

    /// A long element: an object of strings and arrays made of pieces of text that
    /// matter to the scan.
    fn long() -> impl Strategy<Value = Vec<u8>> {
        let bit = prop::sample::select(vec![
            "a",
            "é",
            " ",
            "\\\"",
            "\\\\",
            "\\u00e9",
            "\\u12",
            "\\u1\\\"",
            "]",
            "}",
            "[",
            "{",
            ",",
            "\\n",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ]);
        let string = prop::collection::vec(bit, 0..40).prop_map(|b| format!("\"{}\"", b.concat()));
        let member = prop_oneof![
            4 => string.clone(),
            1 => Just("[1, [2, {\"k\": [3]}], {}]".to_string()),
            1 => Just("\\\"oops\"".to_string()),
            1 => Just("{\"deep\": {\"deeper\": [\"}\", \"]\"]}}".to_string()),
        ];
        prop::collection::vec((string, member), 1..6).prop_map(|ms| {
            let ms: Vec<String> = ms.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            format!("{{{}}}", ms.join(", ")).into_bytes()
        })
    }

    fn sep() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => Just(b",".to_vec()),
            2 => Just(b",\n".to_vec()),
            1 => Just(b"\n, ".to_vec()),
            1 => Just(b"".to_vec()),
            1 => Just(b" ,\r\n\t".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]


        /// Elements found by the scan read exactly as serde_json reading the stream
        /// reads them: the same texts, places and positions after each, and the same
        /// error at the same place, whatever the buffer's size and the length limit.
        #[test]
        fn scanned_elements_read_as_serde_json_reads_the_stream(
            pieces in prop::collection::vec((piece(), sep()), 0..12),
            head in prop_oneof![Just(b"[".to_vec()), Just(b" \n[\n".to_vec()), Just(b"{".to_vec())],
            tail in prop_oneof![
                Just(b"]".to_vec()),
                Just(b"\n]\n".to_vec()),
                Just(b"] x".to_vec()),
                Just(vec![]),
            ],
            cut in prop::option::of(0usize..400),
            capacity in prop_oneof![1usize..4, 4usize..40, 60usize..200, Just(8192usize)],
            max_element in prop_oneof![Just(64usize << 20), 1usize..60],
        ) {
            let mut input = head;
            for (i, (p, s)) in pieces.iter().enumerate() {
                if i > 0 {
                    input.extend_from_slice(s);
                }
                input.extend_from_slice(p);
            }
            input.extend_from_slice(&tail);
            if let Some(c) = cut {
                input.truncate(c);
            }
            let scanned = read_all(&input, capacity, max_element, false);
            let by_serde = read_all(&input, capacity, max_element, true);
            prop_assert_eq!(scanned, by_serde, "input {:?}", String::from_utf8_lossy(&input));
        }
    }
}
