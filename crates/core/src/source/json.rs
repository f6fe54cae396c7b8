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

use super::convert::{json_lexeme, push_json_value, Mismatches};
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
                budget: u64::MAX,
            },
            max_element: max_element as u64,
            started: false,
            first: true,
            done: false,
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
}

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

/// Whether `v` is, or holds, a real that may be an integer literal serde_json rounded:
/// integral and 2^63 or more in magnitude.
fn maybe_rounded(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_f64()
                && n.as_f64()
                    .is_some_and(|f| f.abs() >= 9.2e18 && f.fract() == 0.0)
        }
        Value::Array(a) => a.iter().any(maybe_rounded),
        Value::Object(o) => o.values().any(maybe_rounded),
        _ => false,
    }
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
        let raw = match self.next_line()? {
            None => return Ok(None),
            Some(Err(bad)) => return Ok(Some(Item::Bad(bad))),
            Some(Ok(raw)) => raw,
        };
        let (line, column, byte) = (raw.line, raw.column, raw.byte);
        Ok(Some(match parse_lossless(raw.text) {
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
        }))
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
    /// Bytes the element being read may still take before it is too long.
    budget: u64,
}

impl<R: BufRead> Tracked<R> {
    fn advance(&mut self, bytes: &[u8]) {
        self.byte += bytes.len() as u64;
        match memchr::memrchr(b'\n', bytes) {
            Some(i) => {
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
    max_element: u64,
    started: bool,
    first: bool,
    done: bool,
}

impl ArrayObjects {
    fn next(&mut self) -> std::result::Result<Option<Item>, Fatal> {
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
        // Objects, arrays and strings end on a closing byte, so serde_json reads nothing
        // past the element and the stream stays in step.
        self.r.budget = self.max_element.saturating_add(1);
        let mut de = serde_json::Deserializer::from_reader(&mut self.r);
        let element = Box::<serde_json::value::RawValue>::deserialize(&mut de)
            .and_then(|raw| parse_lossless(raw.get().as_bytes()));
        match element {
            Ok(Value::Object(map)) => Ok(Some(Item::Obj(Obj {
                map,
                line,
                column,
                byte,
            }))),
            Ok(other) => Ok(Some(Item::Bad(BadObj {
                line,
                column,
                byte,
                message: format!("expected a JSON object, found {}", kind_of(&other)),
                hint: None,
                raw: other,
            }))),
            Err(e) => {
                let (l, c) = (e.line() as u64, e.column() as u64);
                let (el, ec) = if l <= 1 {
                    (line, column + c.saturating_sub(1))
                } else {
                    (line + l - 1, c)
                };
                let what = if e.is_io() { "" } else { "invalid JSON: " };
                Err(Fatal::new(el, ec, format!("{what}{}", json_message(&e))))
            }
        }
    }
}

enum Sampled {
    Obj(u64, Obj),
    Bad(u64, BadObj),
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
        }
    }

    fn read(&mut self) -> Result<Option<Sampled>> {
        match self.stream.next() {
            Ok(None) => Ok(None),
            Ok(Some(item)) => {
                self.records += 1;
                Ok(Some(match item {
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
                }))
            }
            Err(f) => {
                let pos = Position {
                    path: self.name.clone(),
                    line: f.line,
                    column: f.column,
                    record: self.records + 1,
                    byte: 0,
                };
                Err(Error::input(pos, None, f.message).with_hint(f.hint))
            }
        }
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
            let Some(item) = self.read()? else { break };
            if let Sampled::Obj(_, o) = &item {
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
            }
            self.sampled.push_back(item);
        }
        if self.keys.columns.is_empty() {
            // Nothing names a column: the first bad record is the error, at its place.
            let first_bad = self.sampled.iter().find_map(|s| match s {
                Sampled::Bad(no, b) => Some((*no, b)),
                Sampled::Obj(..) => None,
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
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        let mut slots: Vec<Option<Value>> = Vec::new();
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            let (no, obj) = if let Some(p) = self.pending.take() {
                p
            } else {
                let item = match self.sampled.pop_front() {
                    Some(s) => s,
                    None => match self.read()? {
                        Some(s) => s,
                        None => return Ok(Fill::Done),
                    },
                };
                match item {
                    Sampled::Obj(no, o) => (no, o),
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
                return Ok(Fill::NewColumns(added));
            }
            slots.clear();
            slots.resize(self.keys.columns.len(), None);
            for (k, v) in obj.map {
                if let Some(i) = self.keys.get(&k) {
                    slots[i] = Some(v);
                }
            }
            for (i, slot) in slots.iter().enumerate() {
                match slot {
                    None => batch.push(Cell::Null),
                    Some(v) => {
                        if push_json_value(
                            batch,
                            v,
                            self.types[i],
                            self.opts.empty_null,
                            &mut self.scratch,
                        ) {
                            self.mismatches.count += 1;
                            if self.mismatches.first.is_none() {
                                self.mismatches.first = Some(format!(
                                    "{}:{}:{}: {} in {} column {:?}",
                                    self.name,
                                    obj.line,
                                    obj.column,
                                    v,
                                    self.types[i],
                                    self.keys.columns[i]
                                ));
                            }
                        }
                    }
                }
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

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}
