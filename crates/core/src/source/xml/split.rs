//! Cutting a document into chunks of whole record elements, so that records can be
//! parsed on several threads.
//!
//! The scan is structural: it tells text from markup and knows comments, CDATA
//! sections, processing instructions, the DOCTYPE (with its internal subset) and quoted
//! attribute values, so a `<` or `>` inside any of them never cuts a record. Outside
//! records (above them, between them, in elements off the record path, after the root)
//! it checks every token as a conforming parser does: one root, end tags that match,
//! attributes once each and quoted, every reference defined, no character XML forbids,
//! no text outside the root, comments without `--`, no XML declaration past the start.
//! Inside a record it only counts depth; the record's own parser (quick-xml) checks the
//! rest. Memory is bounded: the buffer holds at most the record being read
//! (or one token outside records) and the next read, and each is limited to
//! `max_record` bytes.

use std::io::Read;

use std::sync::Arc;

use memchr::memmem;

use super::prolog::Entities;
use super::record;

/// How deep elements may nest above and beside the records (libxml2's default bound).
const MAX_OUTER_DEPTH: usize = 256;

/// The least bytes read from the input at a time; a chunk is about this big.
pub(crate) const READ_BYTES: usize = 1 << 20;

/// Where one record lies in its chunk, and where it starts in the document.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordAt {
    pub start: usize,
    pub end: usize,
    pub line: u64,
    pub column: u64,
    /// Byte offset in the (UTF-8) document.
    pub byte: u64,
}

/// Whole records, back to back with whatever lay between them.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    pub bytes: Vec<u8>,
    pub records: Vec<RecordAt>,
}

/// A document that is not well-formed, or a record too long: where and why.
#[derive(Debug)]
pub(crate) struct Fault {
    pub line: u64,
    pub column: u64,
    pub byte: u64,
    pub message: String,
}

/// A record path's step matches an element by its qualified or its local name.
pub(crate) fn step_matches(step: &str, qname: &[u8]) -> bool {
    let local = memchr::memrchr(b':', qname).map_or(qname, |k| &qname[k + 1..]);
    step.as_bytes() == qname || step.as_bytes() == local
}

/// The record path a document implies: its root, and the first child name that repeats
/// directly under it within `head` (a sample of the document); where the root holds one
/// element only (a wrapper, as RSS's `rss/channel`), the first name that repeats under
/// that one, and so on down; else the root's first child. An error when `head` shows no
/// root or a root without child elements. `Ok(None)` when `head` is not `complete` (the
/// document goes on) and ends before two of the root's children ended, so that what it
/// shows cannot settle the path (a first record longer than the sample): a longer head
/// may.
pub(crate) fn choose_record(head: &[u8], complete: bool) -> Result<Option<Vec<String>>, String> {
    use quick_xml::events::Event;
    let text = String::from_utf8_lossy(head);
    let mut r = quick_xml::Reader::from_str(&text);
    r.config_mut().check_end_names = false;
    // The sample's elements: name, and children (indexes into `nodes`).
    let mut nodes: Vec<(String, Vec<usize>)> = vec![];
    let mut open: Vec<usize> = vec![];
    // Children of the root that ended within the sample.
    let mut ended = 0usize;
    let mut cut = false;
    loop {
        let (name, empty) = match r.read_event() {
            Ok(Event::Start(e)) => (e.name().as_ref().to_string(), false),
            Ok(Event::Empty(e)) => {
                ended += usize::from(open.len() == 1);
                (e.name().as_ref().to_string(), true)
            }
            Ok(Event::End(_)) => {
                open.pop();
                ended += usize::from(open.len() == 1);
                if open.is_empty() {
                    break;
                }
                continue;
            }
            Ok(Event::Eof) | Err(_) => {
                cut = !open.is_empty() || nodes.is_empty();
                break;
            }
            Ok(_) => continue,
        };
        let k = nodes.len();
        nodes.push((name, vec![]));
        match open.last() {
            Some(&parent) => nodes[parent].1.push(k),
            None if k > 0 => break, // a second root: the sample is no document
            None => {}
        }
        if !empty {
            open.push(k);
        } else if open.is_empty() {
            break;
        }
    }
    if cut && !complete && ended < 2 {
        return Ok(None);
    }
    let Some((root, root_children)) = nodes.first() else {
        return Err("no root element was found at the start of the document".into());
    };
    let mut path = vec![root.clone()];
    let mut node = 0;
    loop {
        let names: Vec<&str> = nodes[node].1.iter().map(|&c| nodes[c].0.as_str()).collect();
        let repeated = names
            .iter()
            .enumerate()
            .find(|(i, n)| names[..*i].contains(n))
            .map(|(_, n)| n.to_string());
        if let Some(n) = repeated {
            path.push(n);
            return Ok(Some(path));
        }
        match nodes[node].1.as_slice() {
            [only] => {
                path.push(nodes[*only].0.clone());
                node = *only;
            }
            _ => break,
        }
    }
    match root_children.first() {
        Some(&c) => Ok(Some(vec![root.clone(), nodes[c].0.clone()])),
        None => Err(format!(
            "the root element <{root}> has no child elements to take as records; name the record element's path"
        )),
    }
}

#[derive(Clone, Copy, Debug)]
struct Open {
    /// Where the record starts in `buf`.
    start: usize,
    depth: usize,
    line: u64,
    column: u64,
    byte: u64,
}

/// Reads a document (UTF-8) and hands out [`Chunk`]s of the records at `path`.
pub(crate) struct Splitter {
    reader: Box<dyn Read + Send>,
    path: Vec<String>,
    max_record: usize,
    buf: Vec<u8>,
    /// The next byte to scan in `buf`.
    pos: usize,
    eof: bool,
    /// The document offset of `buf[0]`.
    base: u64,
    /// Newlines are counted up to this document offset...
    counted: u64,
    /// ...which lies on this line (from 1), which starts at this offset.
    line: u64,
    line_start: u64,
    /// Names of the open elements above records.
    stack: Vec<Vec<u8>>,
    /// The names of the open elements that are not on the record path (skipped whole,
    /// but checked), innermost last.
    skipped: Vec<Vec<u8>>,
    /// The internal DTD's entities, once the root element starts.
    ents: Option<Arc<Entities>>,
    rec: Option<Open>,
    root_seen: bool,
    root_done: bool,
    /// The DOCTYPE declaration's text, once read, and where it starts.
    pub doctype: Option<String>,
    pub doctype_at: (u64, u64, u64),
    pending: Vec<RecordAt>,
    /// Records handed out so far.
    pub records: u64,
}

impl Splitter {
    /// A splitter of `reader`'s document by `path` (root first), refusing records and
    /// tokens longer than `max_record` bytes.
    pub(crate) fn new(reader: Box<dyn Read + Send>, path: Vec<String>, max_record: usize) -> Self {
        Splitter {
            reader,
            path,
            max_record,
            buf: Vec::new(),
            pos: 0,
            eof: false,
            base: 0,
            counted: 0,
            line: 1,
            line_start: 0,
            stack: vec![],
            skipped: vec![],
            ents: None,
            rec: None,
            root_seen: false,
            root_done: false,
            doctype: None,
            doctype_at: (1, 1, 0),
            pending: vec![],
            records: 0,
        }
    }

    /// Reads until `buf` holds at least `want` bytes or the input ends.
    pub(crate) fn fill_to(&mut self, want: usize) -> std::io::Result<()> {
        while !self.eof && self.buf.len() < want {
            let start = self.buf.len();
            self.buf.resize(start + (want - start).max(64 * 1024), 0);
            let n = loop {
                match self.reader.read(&mut self.buf[start..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.buf.truncate(start);
                        return Err(e);
                    }
                }
            };
            self.buf.truncate(start + n);
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// The first bytes of the document (after [`Self::fill_to`]).
    pub(crate) fn head(&self) -> &[u8] {
        &self.buf
    }

    /// The document's entities (those of its internal DTD), known once the root element
    /// started (before any record).
    pub(crate) fn entities(&self) -> Arc<Entities> {
        self.ents.clone().unwrap_or_default()
    }

    /// The entities, read from the DOCTYPE the first time they are needed.
    fn ents(&mut self) -> Result<Arc<Entities>, SplitError> {
        if let Some(e) = &self.ents {
            return Ok(e.clone());
        }
        let ents = match self.doctype.as_deref().map(Entities::from_doctype) {
            None => Entities::default(),
            Some(Ok(e)) => e,
            Some(Err((_, m))) => {
                let (line, column, byte) = self.doctype_at;
                return Err(SplitError::Fault(Fault {
                    line,
                    column,
                    byte,
                    message: format!("the DOCTYPE: {m}"),
                }));
            }
        };
        let ents = Arc::new(ents);
        self.ents = Some(ents.clone());
        Ok(ents)
    }

    /// Checks the token `buf[at..end]` outside the records with `check`, whose error
    /// offset is in the token.
    fn check_token(
        &mut self,
        at: usize,
        end: usize,
        check: impl FnOnce(&str, &Entities, u64) -> Result<(), record::Fault>,
    ) -> Result<(), SplitError> {
        let ents = self.ents()?;
        let consumed = self.base + end as u64;
        if let Some((k, m)) = record::bad_char(&self.buf[at..end]) {
            return Err(self.fault(at + k, m));
        }
        let checked = match std::str::from_utf8(&self.buf[at..end]) {
            Ok(text) => check(text, &ents, consumed),
            Err(e) => Err((
                e.valid_up_to(),
                "bytes that are not UTF-8 (the document's encoding is UTF-8 unless a byte-order mark or its declaration names another)".into(),
            )),
        };
        checked.map_err(|(k, m)| self.fault(at + k, m))
    }

    /// Sets the record path (before the first chunk).
    pub(crate) fn set_path(&mut self, path: Vec<String>) {
        self.path = path;
    }

    /// The next chunk of records; `None` at the end of a well-formed document.
    pub(crate) fn next_chunk(&mut self) -> Result<Option<Chunk>, SplitError> {
        loop {
            self.scan()?;
            if !self.pending.is_empty() {
                return Ok(Some(self.take_chunk()));
            }
            if self.eof {
                return self.finish().map(|()| None);
            }
            self.check_record_size()?;
            self.compact();
            let want = self.buf.len() + READ_BYTES;
            self.fill_to(want).map_err(SplitError::Io)?;
        }
    }

    fn take_chunk(&mut self) -> Chunk {
        let first = self.pending[0].start;
        let last = self.pending[self.pending.len() - 1].end;
        let records = self
            .pending
            .drain(..)
            .map(|r| RecordAt {
                start: r.start - first,
                end: r.end - first,
                ..r
            })
            .collect::<Vec<_>>();
        self.records += records.len() as u64;
        Chunk {
            bytes: self.buf[first..last].to_vec(),
            records,
        }
    }

    /// Drops the bytes before what is still needed (the open record, or the token at
    /// `pos`), counting their lines first.
    fn compact(&mut self) {
        let keep = self.rec.map_or(self.pos, |r| r.start);
        self.locate(keep);
        self.buf.drain(..keep);
        self.base += keep as u64;
        self.pos -= keep;
        if let Some(r) = self.rec.as_mut() {
            r.start -= keep;
        }
    }

    /// Line, column and document offset of `buf[at]`; `at` never goes back.
    fn locate(&mut self, at: usize) -> (u64, u64, u64) {
        let abs = self.base + at as u64;
        if abs > self.counted {
            let from = (self.counted - self.base) as usize;
            for k in memchr::memchr_iter(b'\n', &self.buf[from..at]) {
                self.line += 1;
                self.line_start = self.base + (from + k) as u64 + 1;
            }
            self.counted = abs;
        }
        (self.line, abs - self.line_start + 1, abs)
    }

    fn fault(&mut self, at: usize, message: impl Into<String>) -> SplitError {
        let at = at.max((self.counted.saturating_sub(self.base)) as usize);
        let (line, column, byte) = self.locate(at);
        SplitError::Fault(Fault {
            line,
            column,
            byte,
            message: message.into(),
        })
    }

    /// Scans tokens until the buffer runs out (`pos` is then at the end, or at a token
    /// that needs more bytes).
    fn scan(&mut self) -> Result<(), SplitError> {
        loop {
            let len = self.buf.len();
            if self.pos >= len {
                return Ok(());
            }
            let at = self.pos;
            if self.buf[at] != b'<' {
                let found = memchr::memchr(b'<', &self.buf[at..]).map(|k| at + k);
                let end = found.unwrap_or(len);
                if self.rec.is_none() && self.skipped.is_empty() && self.stack.is_empty() {
                    if let Some(k) = self.buf[at..end]
                        .iter()
                        .position(|c| !c.is_ascii_whitespace())
                    {
                        return Err(
                            self.fault(at + k, "text outside the root element (is this XML?)")
                        );
                    }
                } else if self.rec.is_none() {
                    if found.is_none() && !self.eof {
                        // Text outside the records is checked whole (a reference or a
                        // character may be cut by the buffer's end).
                        if len - at > self.max_record {
                            return Err(self.fault(
                                at,
                                format!(
                                    "text longer than {} bytes outside the records",
                                    self.max_record
                                ),
                            ));
                        }
                        return Ok(());
                    }
                    self.check_token(at, end, |t, ents, _| record::check_text(t, ents))?;
                }
                self.pos = end;
                continue;
            }
            let Some(end) = self.token_end(at)? else {
                // The token goes on past the buffer.
                if len - at > self.max_record && self.rec.is_none() {
                    return Err(
                        self.fault(at, format!("markup longer than {} bytes", self.max_record))
                    );
                }
                return Ok(());
            };
            self.pos = end;
            let second = self.buf[at + 1];
            if self.rec.is_none() {
                self.check_markup(at, end)?;
            }
            match second {
                b'!' | b'?' => {
                    if self.buf[at..].starts_with(b"<!DOCTYPE") {
                        if self.root_seen || self.doctype.is_some() {
                            return Err(self.fault(at, "a DOCTYPE after the document's start"));
                        }
                        self.doctype = Some(String::from_utf8_lossy(&self.buf[at..end]).into());
                        self.doctype_at = self.locate(at);
                    } else if self.buf[at..].starts_with(b"<![CDATA[")
                        && self.rec.is_none()
                        && self.stack.is_empty()
                        && self.skipped.is_empty()
                    {
                        return Err(self.fault(at, "a CDATA section outside the root element"));
                    }
                }
                b'/' => self.end_tag(at, end)?,
                _ => self.start_tag(at, end)?,
            }
        }
    }

    /// The end of the token at `at` (a `<`), or `None` if the buffer ends first.
    fn token_end(&mut self, at: usize) -> Result<Option<usize>, SplitError> {
        let b = &self.buf[at..];
        let find = |pat: &[u8], from: usize| {
            memmem::find(&b[from..], pat).map(|k| at + from + k + pat.len())
        };
        if b.len() < 2 {
            return Ok(None);
        }
        Ok(match b[1] {
            b'!' if b.starts_with(b"<!--") => find(b"-->", 4),
            b'!' if b.starts_with(b"<![CDATA[") => find(b"]]>", 9),
            b'!' if b.starts_with(b"<!DOCTYPE") => doctype_end(b).map(|k| at + k),
            b'!' if b.len() < 9 => None,
            b'!' => {
                return Err(self.fault(
                    at,
                    "markup starting '<!' that is no comment, CDATA section or DOCTYPE",
                ))
            }
            b'?' => find(b"?>", 2),
            _ => fast_tag_end(b).or_else(|| tag_end(b)).map(|k| at + k),
        })
    }

    fn name_of(&self, from: usize, end: usize) -> &[u8] {
        let b = &self.buf[from..end];
        let n = b
            .iter()
            .position(|c| c.is_ascii_whitespace() || matches!(c, b'/' | b'>'))
            .unwrap_or(b.len());
        &b[..n]
    }

    fn start_tag(&mut self, at: usize, end: usize) -> Result<(), SplitError> {
        let empty = self.buf[end - 2] == b'/';
        if let Some(r) = self.rec.as_mut() {
            if !empty {
                r.depth += 1;
            }
            return self.check_record_size();
        }
        let name = self.name_of(at + 1, end).to_vec();
        if !self.skipped.is_empty() {
            self.check_token(at, end, record::check_start_tag)?;
            if !empty {
                self.push_skipped(at, name)?;
            }
            return Ok(());
        }
        if name.is_empty() || name[0].is_ascii_digit() || matches!(name[0], b'-' | b'.' | b'<') {
            return Err(self.fault(at, "'<' that starts no element name"));
        }
        if self.root_done {
            return Err(self.fault(
                at,
                format!(
                    "a second root element <{}> (a document has one)",
                    String::from_utf8_lossy(&name)
                ),
            ));
        }
        let depth = self.stack.len();
        if depth == 0 {
            self.root_seen = true;
        }
        let n = self.path.len();
        let on_path = depth < n && step_matches(&self.path[depth], &name);
        if depth == 0 && !on_path {
            return Err(self.fault(
                at,
                format!(
                    "the root element is <{}>, which the record path {} does not start with",
                    String::from_utf8_lossy(&name),
                    self.path.join("/")
                ),
            ));
        }
        if !(on_path && depth == n - 1) {
            // A record's start tag is its parser's to check.
            self.check_token(at, end, record::check_start_tag)?;
        } else {
            // The entities are read before the first record.
            self.ents()?;
        }
        if on_path && depth == n - 1 {
            let (line, column, byte) = self.locate(at);
            self.rec = Some(Open {
                start: at,
                depth: usize::from(!empty),
                line,
                column,
                byte,
            });
            if empty {
                self.end_record(end);
            }
            if empty && depth == 0 {
                self.root_done = true;
            }
            return Ok(());
        }
        if on_path {
            if empty {
                self.root_done |= depth == 0;
            } else {
                self.stack.push(name);
            }
        } else if !empty {
            self.push_skipped(at, name)?;
        }
        Ok(())
    }

    /// Enters element `name` (at `at`), which is off the record path.
    fn push_skipped(&mut self, at: usize, name: Vec<u8>) -> Result<(), SplitError> {
        if self.stack.len() + self.skipped.len() >= MAX_OUTER_DEPTH {
            return Err(self.fault(
                at,
                format!("elements nest more than {MAX_OUTER_DEPTH} deep"),
            ));
        }
        self.skipped.push(name);
        Ok(())
    }

    /// Checks a comment, processing instruction, DOCTYPE, CDATA section or end tag outside
    /// the records at `buf[at..end]` (start tags are checked where they are read, so that
    /// a record's own start tag is left to its parser).
    fn check_markup(&mut self, at: usize, end: usize) -> Result<(), SplitError> {
        let t = &self.buf[at..end];
        if t.starts_with(b"<!") || t.starts_with(b"<?") {
            if let Some((k, m)) = record::bad_char(t) {
                return Err(self.fault(at + k, m));
            }
        }
        if t.starts_with(b"<!--") {
            let body = &t[4..t.len() - 3];
            if let Some(k) = memmem::find(body, b"--") {
                return Err(self.fault(at + 4 + k, "'--' inside a comment"));
            }
            if body.ends_with(b"-") {
                return Err(self.fault(end - 4, "a comment that ends in '--->'"));
            }
        } else if t.starts_with(b"<?") {
            let target_end = t[2..]
                .iter()
                .position(|c| c.is_ascii_whitespace() || *c == b'?')
                .map_or(t.len(), |k| k + 2);
            let target = &t[2..target_end];
            if target.is_empty() {
                return Err(self.fault(at, "a processing instruction without a target"));
            }
            let at_start =
                self.base == 0 && (at == 0 || (at == 3 && self.buf.starts_with(b"\xEF\xBB\xBF")));
            if target.eq_ignore_ascii_case(b"xml") && !at_start {
                return Err(
                    self.fault(at, "an XML declaration that is not at the document's start")
                );
            }
        } else if t.starts_with(b"</") {
            self.check_token(at, end, |t, _, _| record::check_end_tag(t))?;
        }
        Ok(())
    }

    fn end_tag(&mut self, at: usize, end: usize) -> Result<(), SplitError> {
        if let Some(r) = self.rec.as_mut() {
            r.depth -= 1;
            if r.depth == 0 {
                self.end_record(end);
                if self.path.len() == 1 {
                    self.root_done = true;
                }
            }
            return Ok(());
        }
        let name = self.name_of(at + 2, end).to_vec();
        if let Some(open) = self.skipped.pop() {
            if open != name {
                return Err(self.fault(
                    at,
                    format!(
                        "the end tag </{}> does not match the open element <{}>",
                        String::from_utf8_lossy(&name),
                        String::from_utf8_lossy(&open)
                    ),
                ));
            }
            return Ok(());
        }
        match self.stack.pop() {
            None => Err(self.fault(
                at,
                format!(
                    "the end tag </{}> closes no open element",
                    String::from_utf8_lossy(&name)
                ),
            )),
            Some(open) if open != name => Err(self.fault(
                at,
                format!(
                    "the end tag </{}> does not match the open element <{}>",
                    String::from_utf8_lossy(&name),
                    String::from_utf8_lossy(&open)
                ),
            )),
            Some(_) => {
                self.root_done |= self.stack.is_empty();
                Ok(())
            }
        }
    }

    fn end_record(&mut self, end: usize) {
        let r = self.rec.take().expect("a record is open");
        self.pending.push(RecordAt {
            start: r.start,
            end,
            line: r.line,
            column: r.column,
            byte: r.byte,
        });
    }

    fn check_record_size(&mut self) -> Result<(), SplitError> {
        match self.rec {
            Some(r) if self.buf.len().max(self.pos) - r.start > self.max_record => {
                Err(SplitError::Fault(Fault {
                    line: r.line,
                    column: r.column,
                    byte: r.byte,
                    message: format!("a record longer than {} bytes", self.max_record),
                }))
            }
            _ => Ok(()),
        }
    }

    /// At the end of the input: what is still open is an error.
    fn finish(&mut self) -> Result<(), SplitError> {
        if let Some(r) = self.rec {
            return Err(SplitError::Open {
                record: self.buf[r.start..].to_vec(),
                at: RecordAt {
                    start: 0,
                    end: self.buf.len() - r.start,
                    line: r.line,
                    column: r.column,
                    byte: r.byte,
                },
            });
        }
        let end = self.buf.len();
        if self.pos < end {
            return Err(self.fault(self.pos, "the document ends inside markup"));
        }
        if let Some(open) = self.stack.last() {
            let m = format!(
                "the document ends before <{}> is closed",
                String::from_utf8_lossy(open)
            );
            return Err(self.fault(end, m));
        }
        if !self.skipped.is_empty() {
            return Err(self.fault(end, "the document ends inside an element"));
        }
        if !self.root_seen {
            return Err(self.fault(
                end,
                "no root element: the document is empty or holds no XML",
            ));
        }
        Ok(())
    }
}

/// Why splitting stopped.
#[derive(Debug)]
pub(crate) enum SplitError {
    Io(std::io::Error),
    Fault(Fault),
    /// The input ended inside this record (its bytes so far), which its parser explains.
    Open {
        record: Vec<u8>,
        at: RecordAt,
    },
}

/// The end of the tag at `b[0]` when it is plain to see: no tag holds a `<` (not even in
/// a quoted value), so when the one `>` before the next `<` is the only one, it ends the
/// tag, whatever the quotes. `None` when that does not hold (a `>` in a value or in the
/// text after the tag, or no `<` within `b`): [`tag_end`] then scans quote by quote.
///
/// Measured: the quote-by-quote scan was a fifth of all CPU of a load of bench/xml.py's
/// posts (a memchr per quote of every attribute); documents written by serializers
/// escape `>` in values, so this path takes nearly every tag.
fn fast_tag_end(b: &[u8]) -> Option<usize> {
    let gt = 1 + memchr::memchr(b'>', &b[1..])?;
    let lt = 1 + memchr::memchr(b'<', &b[1..])?;
    (gt < lt && memchr::memchr(b'>', &b[gt + 1..lt]).is_none()).then_some(gt + 1)
}

/// The end of a start or end tag at `b[0]`, skipping quoted attribute values.
fn tag_end(b: &[u8]) -> Option<usize> {
    let mut i = 1;
    loop {
        let k = memchr::memchr3(b'>', b'"', b'\'', &b[i..])?;
        let c = b[i + k];
        if c == b'>' {
            return Some(i + k + 1);
        }
        let close = memchr::memchr(c, &b[i + k + 1..])?;
        i += k + 1 + close + 1;
    }
}

/// The end of a DOCTYPE declaration at `b[0]`, its internal subset (with quoted
/// values and comments) skipped.
fn doctype_end(b: &[u8]) -> Option<usize> {
    let mut i = "<!DOCTYPE".len();
    let mut subset = false;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => i += memchr::memchr(q, &b[i + 1..])? + 2,
            b'<' if subset && b[i..].starts_with(b"<!--") => {
                i += 4 + memmem::find(&b[i + 4..], b"-->")? + 3;
            }
            b'[' if !subset => {
                subset = true;
                i += 1;
            }
            b']' if subset => {
                subset = false;
                i += 1;
            }
            b'>' if !subset => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(doc: &str, path: &str) -> Result<Vec<String>, String> {
        let mut s = Splitter::new(
            Box::new(std::io::Cursor::new(doc.as_bytes().to_vec())),
            path.split('/').map(String::from).collect(),
            1 << 20,
        );
        let mut out = vec![];
        loop {
            match s.next_chunk() {
                Ok(Some(c)) => {
                    for r in &c.records {
                        out.push(format!(
                            "{}:{}:{}",
                            r.line,
                            r.column,
                            String::from_utf8_lossy(&c.bytes[r.start..r.end])
                        ));
                    }
                }
                Ok(None) => return Ok(out),
                Err(SplitError::Fault(f)) => {
                    return Err(format!("{}:{}: {}", f.line, f.column, f.message))
                }
                Err(SplitError::Open { at, .. }) => {
                    return Err(format!("{}:{}: open", at.line, at.column))
                }
                Err(SplitError::Io(e)) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn records_are_cut_whole() {
        let doc = "<?xml version=\"1.0\"?>\n<!DOCTYPE p [<!ENTITY x \"]>\">]>\n<p>\n <!-- <row> -->\n <meta a='>'/>\n <row a=\"<x>\"/>\n <row><![CDATA[</row>]]><c/></row>\n <other><row/></other>\n</p>\n";
        assert_eq!(
            split(doc, "p/row").unwrap(),
            vec![
                "6:2:<row a=\"<x>\"/>",
                "7:2:<row><![CDATA[</row>]]><c/></row>"
            ]
        );
    }

    #[test]
    fn malformed_skeletons_are_positioned() {
        assert_eq!(
            split("<p><row/></q>", "p/row").unwrap_err(),
            "1:10: the end tag </q> does not match the open element <p>"
        );
        assert_eq!(
            split("<p><row/>", "p/row").unwrap_err(),
            "1:10: the document ends before <p> is closed"
        );
        assert_eq!(
            split("<p><row><a></row>", "p/row").unwrap_err(),
            "1:4: open"
        );
        assert_eq!(
            split("<p/><p/>", "p/row").unwrap_err(),
            "1:5: a second root element <p> (a document has one)"
        );
        assert_eq!(
            split("a,b\n1,2\n", "p/row").unwrap_err(),
            "1:1: text outside the root element (is this XML?)"
        );
        assert!(split("<q/>", "p/row")
            .unwrap_err()
            .contains("does not start with"));
        assert!(split("", "p/row").unwrap_err().contains("no root element"));
    }

    #[test]
    fn the_record_path_is_the_first_repeated_child() {
        assert_eq!(
            choose_record(b"<p><meta/><row/><row/></p>", true)
                .unwrap()
                .unwrap(),
            ["p", "row"]
        );
        assert_eq!(
            choose_record(b"<p><a><x/><x/></a><b/></p>", true)
                .unwrap()
                .unwrap(),
            ["p", "a"]
        );
        assert!(choose_record(b"<p a='1'/>", true).is_err());
        // A first record past the sample: not settled by it, not "no child elements".
        assert_eq!(
            choose_record(b"<p><row a='1'><t>x</t><t>", false).unwrap(),
            None
        );
        assert_eq!(choose_record(b"<p><row a='", false).unwrap(), None);
    }
}
