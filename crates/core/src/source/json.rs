//! JSON input: newline-delimited objects, or one top-level array of objects, streamed.
//!
//! Columns are the objects' keys in the order they are first seen. Keys are matched to
//! columns exactly; a key that differs from an earlier one only in ASCII case gets a
//! column of its own, `KEY_2` (SQLite's column names ignore case), as CSV headers do. A key
//! with a NUL byte makes its record a bad record. A key
//! first seen after the sample adds a column ([`Fill::NewColumns`]). JSON strings are
//! always TEXT (`"02134"` stays text); `true`/`false` are 1/0; nested objects and arrays
//! are stored as JSON text; an integer beyond i64 is stored as TEXT of its digits.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, Read};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::convert::{json_lexeme, push_json_value, push_scalar, Mismatches, Scalar, Values};
use super::keys::KeyColumns;
use super::{BadRecord, Fill, ReadOptions, Sample, Source};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Hint, Position, Result};
use crate::types::{ColumnType, TypeGuess};

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

/// A syntax or I/O error a stream cannot continue after, at its line and column.
#[derive(Debug)]
pub struct Fatal {
    /// The line.
    pub line: u64,
    /// The byte column.
    pub column: u64,
    /// What is wrong.
    pub message: String,
    /// The setting that would help, if one would.
    pub hint: Option<Hint>,
}

impl Fatal {
    fn new(line: u64, column: u64, message: impl Into<String>) -> Self {
        Fatal {
            line,
            column,
            message: message.into(),
            hint: None,
        }
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
    pub fn array(r: Box<dyn BufRead + Send>, max_element: usize) -> Self {
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
        })
    }

    /// The elements of a part of a top-level array that starts just after an element,
    /// at line `line`, byte column `column` and decoded byte `byte` of the input. With
    /// `segment`, `r` ends just after an element too, and its end ends the stream
    /// there; without, `r` runs to the end of the input (the array's `]` included).
    pub fn array_part(
        r: Box<dyn BufRead + Send>,
        max_element: usize,
        (line, column, byte): (u64, u64, u64),
        segment: bool,
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
        })
    }

    /// The next object, a skippable bad value, or `None` at the end. An `Err` is fatal:
    /// a syntax error the stream cannot continue after.
    fn next(&mut self) -> std::result::Result<Option<Item>, Fatal> {
        match self {
            ObjectStream::Lines(l) => l
                .next_item()
                .map_err(|(line, column, m)| Fatal::new(line, column, m)),
            ObjectStream::Array(a) => a.next(),
        }
    }

    /// As [`next`](Self::next), with the text the value was read from when it was read
    /// whole (a line, trimmed, or an array element).
    fn next_with_text(&mut self) -> std::result::Result<Option<WithText>, Fatal> {
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
    let mut v: Value = serde_json::from_slice(text)?;
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
                    Value::Array(_) | Value::Object(_) => *val = Value::String(t.to_string()),
                    _ if !t.contains(['.', 'e', 'E']) => *val = Value::String(t.to_string()),
                    _ => {}
                }
            }
        }
    }
    Ok(v)
}

/// Whether `v` is, or holds, a real whose literal's text must decide ([`needs_its_text`]).
fn maybe_rounded(v: &Value) -> bool {
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
fn needs_its_text(f: f64) -> bool {
    (f.abs() >= 9.2e18 && f.fract() == 0.0) || (f == 0.0 && f.is_sign_negative())
}

/// serde_json's message without its " at line L column C" tail (we give our own position).
fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
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
    r: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    line: u64,
    byte: u64,
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
fn line_item(raw: &RawLine<'_>) -> Item {
    {
        let (line, column, byte) = (raw.line, raw.column, raw.byte);
        match parse_lossless(raw.text) {
            Ok(Value::Object(map)) => Item::Obj(Obj {
                map,
                line,
                column,
                byte,
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
}

impl ArrayObjects {
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
    fn next_text(&mut self) -> std::result::Result<Option<ElementText>, Fatal> {
        if self.done {
            return Ok(None);
        }
        let io_err = |r: &Tracked<_>, e: io::Error| Fatal::new(r.line, r.col, e.to_string());
        if !self.started {
            self.started = true;
            match self.r.skip_ws().map_err(|e| io_err(&self.r, e))? {
                Some(b'[') => self.r.bump(),
                Some(b) => {
                    return Err(Fatal {
                        hint: Some(Hint::JsonLines),
                        ..Fatal::new(
                            self.r.line,
                            self.r.col,
                            format!(
                                "expected a JSON array of objects ('['), found {:?}",
                                b as char
                            ),
                        )
                    })
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
/// reader: 6.3 s against 2.3 s for the same objects as lines).
fn scan_element<R: BufRead + ?Sized>(
    r: &mut R,
    limit: u64,
) -> std::result::Result<(Vec<u8>, bool), (Vec<u8>, io::Error)> {
    let mut text = Vec::new();
    let (mut depth, mut in_string, mut skip) = (0u64, false, false);
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err((text, e)),
        };
        if buf.is_empty() {
            return Ok((text, false));
        }
        let mut i = 0;
        let mut end = None;
        if skip {
            // The byte after a backslash that ended the last buffer.
            i = 1;
            skip = false;
        }
        while i < buf.len() {
            if in_string {
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => i = buf.len(),
                    Some(k) if buf[i + k] == b'\\' => {
                        i += k + 2;
                        if i > buf.len() {
                            skip = true;
                            i = buf.len();
                        }
                    }
                    Some(k) => {
                        i += k + 1;
                        in_string = false;
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                }
            } else {
                let b = buf[i];
                i += 1;
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
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

/// An array element's bytes, read whole (its brackets closed) but not yet checked as
/// JSON, and where it starts.
pub struct ElementText {
    text: Vec<u8>,
    line: u64,
    column: u64,
    byte: u64,
}

impl ElementText {
    /// The element checked as serde_json checks a value it reads from a stream, with
    /// that error when it is not JSON: the bytes are the ones it would have read, and
    /// it stops at the element's closing byte.
    fn checked(self) -> std::result::Result<RawElement, Fatal> {
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

/// An array element's text, read whole and checked as JSON, and where it starts.
pub struct RawElement {
    raw: Box<serde_json::value::RawValue>,
    line: u64,
    column: u64,
    byte: u64,
}

impl RawElement {
    /// The element as the slow path reads it: an object, or a bad value.
    fn item(self) -> std::result::Result<Item, Fatal> {
        let RawElement {
            raw,
            line,
            column,
            byte,
        } = self;
        match parse_lossless(raw.get().as_bytes()) {
            Ok(Value::Object(map)) => Ok(Item::Obj(Obj {
                map,
                line,
                column,
                byte,
            })),
            Ok(other) => Ok(Item::Bad(BadObj {
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

/// What [`JsonSource::next_fast`] did.
enum Next {
    /// A record for the slow path.
    Record(Sampled),
    /// A row went into the batch.
    Pushed,
    /// The end of the input.
    Done,
}

enum Sampled {
    Obj(u64, Obj),
    /// An object of the sample kept as its text: its map was needed only for the
    /// sample's columns and types, and 10,000 maps held until they are handed out cost
    /// about 25 MB of the load's peak memory (the text, a tenth of that).
    Text(u64, SampledText),
    Bad(u64, BadObj),
}

/// The text of an object read in the sample (it parsed as one, with no key refused),
/// and where it started.
struct SampledText {
    text: Box<[u8]>,
    line: u64,
    column: u64,
    byte: u64,
}

impl SampledText {
    /// The object again, for the slow path.
    fn reparsed(self) -> Result<Obj> {
        match parse_lossless(&self.text) {
            Ok(Value::Object(map)) => Ok(Obj {
                map,
                line: self.line,
                column: self.column,
                byte: self.byte,
            }),
            _ => Err(Error::internal("a sampled JSON object no longer parses")),
        }
    }
}

/// What [`Parts::next`] hands out.
pub(super) enum Handed {
    /// The next chunk's rows, numbered; the line and column of the first mismatch are in
    /// its message.
    Batch {
        batch: Batch,
        records: u64,
        mismatches: u64,
        first: Option<String>,
    },
    /// The next chunk, to be read by the sequential reader (then [`Chunks::reread`]).
    Again(ObjectStream),
    /// No more chunks.
    Done,
}

/// The parts of a large file that other threads read (`json_chunks.rs`), as the source
/// reading the file's head sees them.
pub(super) trait Parts: Send {
    /// Makes the threads encode rows as SQLite records; before they start.
    fn encode(&mut self);
    /// Whether the parts are being handed out (the head is no longer read).
    fn started(&self) -> bool;
    /// Makes `keys` and `types` the columns the threads read against from their next part.
    fn publish(&self, keys: &KeyColumns, types: &[ColumnType]);
    /// The next part, after the head ended at `head` (line, column, byte) with `records`
    /// records read.
    fn next(&mut self, head: (u64, u64, u64), records: u64) -> Result<Handed>;
    /// The part handed out as [`Handed::Again`] has been read; the sequential reader
    /// stopped on line `line`.
    fn reread(&mut self, line: u64);
    /// Hands a batch back for a thread to reuse.
    fn give_back(&self, batch: Batch);
}

/// Reads JSON objects into typed batches.
pub struct JsonSource {
    stream: ObjectStream,
    name: Arc<str>,
    opts: ReadOptions,
    keys: KeyColumns,
    types: Vec<ColumnType>,
    sampled: VecDeque<Sampled>,
    pending: Option<(u64, Obj)>,
    records: u64,
    mismatches: Mismatches,
    scratch: String,
    /// After the sample, the rest of the file read by several threads (NDJSON in a
    /// regular file; see [`json_chunks`](super::json_chunks)).
    chunks: Option<Box<dyn Parts>>,
    /// Whether `stream` is a chunk being read again in order.
    rereading: bool,
    /// Whether lines after the sample may take the fast path (tests compare without).
    fast: bool,
    /// Whether rows go into batches as encoded records (see [`Source::make_records`]).
    encode: bool,
    /// Reused to encode rows when `encode` is set.
    record: liteload_btree::RecordBuilder,
    /// The array element the fast path's row borrows from.
    element: Option<ElementText>,
    /// The sampled object the fast path's row borrows from.
    held: Option<SampledText>,
}

impl JsonSource {
    /// A source of the objects of `stream`, named `name` in positions.
    pub fn new(stream: ObjectStream, name: Arc<str>, opts: ReadOptions) -> Self {
        JsonSource {
            stream,
            name,
            opts,
            keys: KeyColumns::default(),
            types: vec![],
            sampled: VecDeque::new(),
            pending: None,
            records: 0,
            mismatches: Mismatches::default(),
            scratch: String::new(),
            chunks: None,
            rereading: false,
            fast: true,
            encode: false,
            record: liteload_btree::RecordBuilder::new(),
            element: None,
            held: None,
        }
    }

    /// Reads every line as a map first, as before the fast path: the reference the fast
    /// path is tested against.
    #[cfg(test)]
    pub(super) fn slow_only(mut self) -> Self {
        self.fast = false;
        self
    }

    /// Reads what follows the sample in `chunks`, on their threads. For a source over
    /// the file that `chunks` cuts, from its start, in the layout `chunks` expects.
    pub(super) fn with_chunks(mut self, chunks: Box<dyn Parts>) -> Self {
        self.chunks = Some(chunks);
        self
    }

    /// The next chunk after the sample: its rows into `batch` (which must be empty), or
    /// the chunk as `stream`, to be read in order. `false` at the end.
    fn next_chunk(&mut self, batch: &mut Batch) -> Result<bool> {
        // Where the head stopped, before the first chunk (later `stream` may be a chunk
        // read again).
        let started = self.chunks.as_ref().is_some_and(|c| c.started());
        let head = match &self.stream {
            _ if started => Some((0, 0, 0)),
            ObjectStream::Lines(lines) => {
                let (line, byte) = lines.read_to();
                Some((line, 1, byte))
            }
            ObjectStream::Array(a) => a.position(),
        };
        let Some(head) = head else {
            // The head read the whole array (or none of it): it reads on alone.
            self.chunks = None;
            return Ok(true);
        };
        let chunks = self.chunks.as_mut().expect("reading chunks");
        match chunks.next(head, self.records)? {
            Handed::Batch {
                batch: mut got,
                records,
                mismatches,
                first,
            } => {
                // Read before columns were added: their rows have none of the new keys.
                got.widen(self.keys.columns.len());
                std::mem::swap(batch, &mut got);
                got.clear(0);
                chunks.give_back(got);
                self.records += records;
                self.mismatches.count += mismatches;
                if self.mismatches.first.is_none() {
                    self.mismatches.first = first;
                }
                Ok(true)
            }
            Handed::Again(stream) => {
                self.stream = stream;
                self.rereading = true;
                Ok(true)
            }
            Handed::Done => Ok(false),
        }
    }

    fn read(&mut self) -> Result<Option<Sampled>> {
        match self.stream.next() {
            Ok(None) => Ok(None),
            Ok(Some(item)) => Ok(Some(self.classify(item))),
            Err(f) => Err(self.fatal(f)),
        }
    }

    fn fatal(&self, f: Fatal) -> Error {
        let pos = Position {
            path: self.name.clone(),
            line: f.line,
            column: f.column,
            record: self.records + 1,
            byte: 0,
        };
        Error::input(pos, None, f.message).with_hint(f.hint)
    }

    /// Numbers `item` as the next record, and refuses an object with a key no column can have.
    fn classify(&mut self, item: Item) -> Sampled {
        {
            {
                self.records += 1;
                match item {
                    Item::Obj(o) => match o.map.keys().find(|k| k.contains('\0')) {
                        // SQLite's SQL text ends at a NUL: no column can have this name.
                        Some(k) => Sampled::Bad(
                            self.records,
                            BadObj {
                                line: o.line,
                                column: o.column,
                                byte: o.byte,
                                message: format!(
                                    "key {k:?} has a NUL byte, which no column name can hold"
                                ),
                                hint: None,
                                raw: Value::Object(o.map),
                            },
                        ),
                        None => Sampled::Obj(self.records, o),
                    },
                    Item::Bad(b) => Sampled::Bad(self.records, b),
                }
            }
        }
    }

    /// The next record after the sample (an NDJSON line or an array element): an object
    /// whose keys all have columns goes straight into `batch` without being built as a
    /// map ([`fast_row`]: about 3x less work a line); anything else comes back as the
    /// slow path's record.
    fn next_fast(&mut self, batch: &mut Batch, slots: &mut FastRow<'static>) -> Result<Next> {
        if !self.fast {
            return Ok(match self.read()? {
                Some(s) => Next::Record(s),
                None => Next::Done,
            });
        }
        // The row's allocations are reused record after record: emptied, they take any
        // lifetime (collecting an empty vector in place keeps its allocation).
        let mut row: FastRow<'_> = std::mem::take(slots).recycle();
        // Sampled objects kept as text come first; they were numbered when sampled.
        let (line, column, no) = if let Some(Sampled::Text(..)) = self.sampled.front() {
            let Some(Sampled::Text(no, text)) = self.sampled.pop_front() else {
                unreachable!("the front was a sampled text")
            };
            let held = self.held.insert(text);
            if !fast_row(&held.text, &self.keys, &mut row) {
                *slots = row.recycle();
                let text = self.held.take().expect("just held");
                return Ok(Next::Record(Sampled::Obj(no, text.reparsed()?)));
            }
            (held.line, held.column, no)
        } else {
            let (line, column) = match &mut self.stream {
                ObjectStream::Lines(lines) => {
                    let raw = match lines.next_line() {
                        Err((line, column, m)) => {
                            return Err(self.fatal(Fatal::new(line, column, m)))
                        }
                        Ok(None) => return Ok(Next::Done),
                        Ok(Some(Err(bad))) => {
                            return Ok(Next::Record(self.classify(Item::Bad(bad))))
                        }
                        Ok(Some(Ok(raw))) => raw,
                    };
                    if !fast_row(raw.text, &self.keys, &mut row) {
                        let item = line_item(&raw);
                        *slots = row.recycle();
                        return Ok(Next::Record(self.classify(item)));
                    }
                    (raw.line, raw.column)
                }
                // An element is read whole as text (checked as JSON) either way; only the
                // map of the slow path is saved.
                // (fast_row checks the text as JSON as it reads it; only what it refuses
                // is checked as a stream would check it, for the same errors.)
                ObjectStream::Array(array) => {
                    match array.next_text() {
                        Err(f) => return Err(self.fatal(f)),
                        Ok(None) => return Ok(Next::Done),
                        Ok(Some(el)) => self.element = Some(el),
                    }
                    let el = self.element.as_ref().expect("just read");
                    if !fast_row(&el.text, &self.keys, &mut row) {
                        *slots = row.recycle();
                        let el = self.element.take().expect("just read");
                        let item = el.checked().and_then(RawElement::item);
                        let item = item.map_err(|f| self.fatal(f))?;
                        return Ok(Next::Record(self.classify(item)));
                    }
                    (el.line, el.column)
                }
            };
            self.records += 1;
            (line, column, self.records)
        };
        let (m, bad) = if self.encode {
            let mut record = std::mem::take(&mut self.record);
            record.clear();
            let r = push_fast(
                &mut record,
                &row,
                &self.types,
                self.opts.nulls == super::Nulls::All,
                &mut self.scratch,
            );
            batch.push_record(&record);
            self.record = record;
            r
        } else {
            push_fast(
                batch,
                &row,
                &self.types,
                self.opts.nulls == super::Nulls::All,
                &mut self.scratch,
            )
        };
        self.mismatches.count += m;
        if let (None, Some((i, v))) = (&self.mismatches.first, bad) {
            self.mismatches.first = Some(format!(
                "{}:{}:{}: {} in {} column {:?}",
                self.name, line, column, v, self.types[i], self.keys.columns[i]
            ));
        }
        batch.finish_row(RowOrigin { line, record: no });
        *slots = row.recycle();
        Ok(Next::Pushed)
    }

    fn pos(&self, line: u64, column: u64, record: u64, byte: u64) -> Position {
        Position {
            path: self.name.clone(),
            line,
            column,
            record,
            byte,
        }
    }
}

impl Source for JsonSource {
    fn sample(&mut self) -> Result<Sample> {
        if self.opts.skip_lines > 0 {
            if let ObjectStream::Lines(l) = &mut self.stream {
                for _ in 0..self.opts.skip_lines {
                    let mut sink = Vec::new();
                    l.r.read_until(b'\n', &mut sink)
                        .map_err(|e| Error::io(None, e))?;
                    l.line += 1;
                    l.byte += sink.len() as u64;
                }
            }
        }
        let mut guesses: Vec<TypeGuess> = vec![];
        while self.sampled.len() < self.opts.sample_rows {
            let (item, text) = match self.stream.next_with_text() {
                Ok(None) => break,
                Ok(Some((item, text))) => (self.classify(item), text),
                Err(f) => return Err(self.fatal(f)),
            };
            let item = match item {
                Sampled::Obj(no, o) => {
                    for (k, v) in &o.map {
                        let i = match self.keys.get(k) {
                            Some(i) => i,
                            None => self.keys.add(k),
                        };
                        if guesses.len() <= i {
                            guesses.resize(i + 1, TypeGuess::default());
                        }
                        guesses[i].add(json_lexeme(v));
                    }
                    match text {
                        Some(text) if self.fast => Sampled::Text(
                            no,
                            SampledText {
                                text,
                                line: o.line,
                                column: o.column,
                                byte: o.byte,
                            },
                        ),
                        _ => Sampled::Obj(no, o),
                    }
                }
                other => other,
            };
            self.sampled.push_back(item);
        }
        if self.keys.columns.is_empty() {
            // Nothing names a column: the first bad record is the error, at its place.
            let first_bad = self.sampled.iter().find_map(|s| match s {
                Sampled::Bad(no, b) => Some((*no, b)),
                Sampled::Obj(..) | Sampled::Text(..) => None,
            });
            if let Some((no, b)) = first_bad {
                return Err(Error::input(
                    self.pos(b.line, b.column, no, b.byte),
                    None,
                    format!(
                        "{} (and no record of the sample is an object with keys to name the columns)",
                        b.message
                    ),
                )
                .with_hint(b.hint));
            }
        }
        Ok(Sample {
            types: None,
            columns: self.keys.columns.clone(),
            guesses,
            notes: std::mem::take(&mut self.keys.notes),
            locale: vec![],
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types = types;
        if let Some(c) = &self.chunks {
            c.publish(&self.keys, &self.types);
        }
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        let mut slots: Vec<Option<Value>> = Vec::new();
        let mut fast_slots = FastRow::default();
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            if self.pending.is_none()
                && self.sampled.is_empty()
                && self.chunks.is_some()
                && !self.rereading
            {
                // A chunk's batch is handed out whole, in a batch of its own.
                if !batch.is_empty() {
                    return Ok(Fill::Full);
                }
                if !self.next_chunk(batch)? {
                    return Ok(Fill::Done);
                }
                if !batch.is_empty() {
                    return Ok(Fill::Full);
                }
                continue;
            }
            let (no, obj) = if let Some(p) = self.pending.take() {
                p
            } else {
                // (A sample kept as text is read by the fast path.)
                let front = match self.sampled.front() {
                    Some(Sampled::Obj(..) | Sampled::Bad(..)) => self.sampled.pop_front(),
                    _ => None,
                };
                let item = match front {
                    Some(s) => s,
                    None => match self.next_fast(batch, &mut fast_slots)? {
                        Next::Record(s) => s,
                        Next::Pushed => continue,
                        Next::Done if self.rereading => {
                            // (An array's chunks carry their own lines.)
                            let line = match &self.stream {
                                ObjectStream::Lines(lines) => lines.read_to().0,
                                ObjectStream::Array(_) => 0,
                            };
                            self.rereading = false;
                            if let Some(c) = &mut self.chunks {
                                c.reread(line);
                            }
                            continue;
                        }
                        Next::Done => return Ok(Fill::Done),
                    },
                };
                match item {
                    Sampled::Obj(no, o) => (no, o),
                    Sampled::Text(no, t) => (no, t.reparsed()?),
                    Sampled::Bad(no, b) => {
                        bad(BadRecord {
                            error: b.error(self.pos(b.line, b.column, no, b.byte)),
                            fields: b.raw,
                        })?;
                        continue;
                    }
                }
            };
            // New keys: add their columns first, then come back for this object.
            let new: Vec<String> = obj
                .map
                .keys()
                .filter(|k| self.keys.get(k).is_none())
                .cloned()
                .collect();
            if !new.is_empty() {
                let mut added = vec![];
                for k in new {
                    let ty = {
                        let mut g = TypeGuess::default();
                        g.add(json_lexeme(&obj.map[&k]));
                        g.resolve()
                    };
                    let i = self.keys.add(&k);
                    self.types.push(ty);
                    added.push((self.keys.columns[i].clone(), ty));
                }
                self.pending = Some((no, obj));
                if let Some(c) = &self.chunks {
                    c.publish(&self.keys, &self.types);
                }
                return Ok(Fill::NewColumns(added));
            }
            slots.clear();
            slots.resize(self.keys.columns.len(), None);
            for (k, v) in obj.map {
                if let Some(i) = self.keys.get(&k) {
                    slots[i] = Some(v);
                }
            }
            let mut record = std::mem::take(&mut self.record);
            record.clear();
            let mut first = None;
            for (i, slot) in slots.iter().enumerate() {
                let mismatch = match slot {
                    None if self.encode => {
                        record.null();
                        false
                    }
                    None => {
                        batch.push(Cell::Null);
                        false
                    }
                    Some(v) => {
                        let (ty, empty_null) =
                            (self.types[i], self.opts.nulls == super::Nulls::All);
                        if self.encode {
                            push_json_value(&mut record, v, ty, empty_null, &mut self.scratch)
                        } else {
                            push_json_value(batch, v, ty, empty_null, &mut self.scratch)
                        }
                    }
                };
                if mismatch {
                    self.mismatches.count += 1;
                    first = first.or(Some(i));
                }
            }
            if self.encode {
                batch.push_record(&record);
            }
            self.record = record;
            if let (None, Some(i)) = (&self.mismatches.first, first) {
                self.mismatches.first = Some(format!(
                    "{}:{}:{}: {} in {} column {:?}",
                    self.name,
                    obj.line,
                    obj.column,
                    slots[i].as_ref().expect("a mismatch has a value"),
                    self.types[i],
                    self.keys.columns[i]
                ));
            }
            batch.finish_row(RowOrigin {
                line: obj.line,
                record: no,
            });
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.keys.columns.len()
    }

    /// Before the first `fill` only (the reading threads take it when they start).
    fn make_records(&mut self) -> bool {
        if self.chunks.as_ref().is_some_and(|c| c.started()) {
            return false;
        }
        if let Some(c) = &mut self.chunks {
            c.encode();
        }
        self.encode = true;
        true
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}

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
    /// serde_json rounded ([`maybe_rounded`]), alone or nested, or a nested object with
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

impl<'de> Deserialize<'de> for FastValue<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
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
        d.deserialize_any(V)
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
    fn recycle<'b>(mut self) -> FastRow<'b> {
        let width = self.at.len();
        self.reset(width);
        FastRow {
            values: self.values.into_iter().map(|_| unreachable!()).collect(),
            at: self.at,
        }
    }
}

/// Reads one NDJSON line (trimmed) as an object whose keys all have columns, into
/// `row` (a repeated key's last value wins, as in [`parse_lossless`]). `false`, with
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
    // The text checked as UTF-8 at once: serde_json then checks no string by itself
    // (3% of reading a feed's lines went to checking its many short strings one by one).
    let Ok(text) = std::str::from_utf8(text) else {
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
    use proptest::prelude::*;

    /// One element read: its text, line, column and byte, and the stream's position
    /// after it.
    type Element = (String, u64, u64, u64, (u64, u64, u64));

    /// What reading `input` element by element gives: the elements, and how the array
    /// ends (`None`, or the fatal error's line, column and message).
    type Read = (Vec<Element>, Option<(u64, u64, String)>);

    fn read_all(input: &[u8], capacity: usize, max_element: usize, by_serde: bool) -> Read {
        let r = std::io::BufReader::with_capacity(capacity, std::io::Cursor::new(input.to_vec()));
        let ObjectStream::Array(mut a) = ObjectStream::array(Box::new(r), max_element) else {
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
        ]
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
            capacity in prop_oneof![1usize..4, 4usize..40, Just(8192usize)],
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
