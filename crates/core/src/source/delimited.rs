//! A streaming RFC 4180 parser for CSV, TSV and other delimited text.
//!
//! liteload parses delimited text itself, rather than through the `csv` crate, because
//! its errors must name the line *and column* of the bad field, it must tell a quoted
//! empty field from an unquoted one, and an unterminated quote must be an error (the
//! `csv` crate accepts one at the end of input silently).
//!
//! Notes for hackers, since this is the hot loop:
//! - Input is read in 256 KiB blocks into one buffer; a record may span blocks, so the
//!   parser is a state machine whose state survives a refill, and field bytes are copied
//!   (unescaped) into `Record::data` as they are scanned. Nothing is allocated per record
//!   once the record's vectors have grown.
//! - Unquoted bytes are skipped with `memchr3` (delimiter, `\n`, `\r`), quoted bytes with
//!   `memchr2` (quote, `\n`), so the per-byte work is SIMD.
//! - Lines count record terminators outside quotes (`\n`, `\r\n`, or a lone `\r`) and
//!   `\n` inside quotes. Columns are 1-based byte offsets from the start of the line.
//! - Empty lines between records are skipped, except when the input has one column:
//!   there an empty line is a record with one empty field ([`DelimitedReader::keep_blank_lines`]).

use std::io::{self, Read};

/// Why a record could not be parsed. Positions are filled in by the caller's context.
#[derive(Debug)]
pub enum ParseError {
    /// Reading failed.
    Io(io::Error),
    /// A quoted field that starts at (line, column) never ends.
    UnterminatedQuote {
        /// The line of the opening quote.
        line: u64,
        /// Its column.
        column: u64,
    },
}

/// One field's place in a record.
#[derive(Clone, Copy, Debug, Default)]
pub struct FieldMeta {
    end: usize,
    /// Whether the field was quoted.
    pub quoted: bool,
    /// The line the field starts on.
    pub line: u64,
    /// The byte column it starts at.
    pub column: u64,
}

/// A parsed record: field bytes, unescaped, back to back.
#[derive(Debug, Default)]
pub struct Record {
    data: Vec<u8>,
    fields: Vec<FieldMeta>,
    /// Offsets in `data` where a closing quote was dropped inside a field (`"ab"cd`):
    /// bytes on either side were not next to each other in the input.
    seams: Vec<usize>,
    /// Set when the record was longer than the reader's limit: its data was dropped.
    pub too_long: bool,
    /// Line on which the record starts (1-based).
    pub line: u64,
    /// Byte offset of the record's first byte in the input.
    pub byte: u64,
}

impl Record {
    /// Fields in the record.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Field `i`, unescaped.
    pub fn field(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.fields[i - 1].end };
        &self.data[start..self.fields[i].end]
    }

    /// Where field `i` was.
    pub fn meta(&self, i: usize) -> FieldMeta {
        self.fields[i]
    }

    /// All field bytes back to back, for one UTF-8 or NUL check per record.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// With `data` valid UTF-8: the first offset where a field ends, or a dropped quote
    /// joined bytes, in the middle of a character. Two halves of a character on either
    /// side of a delimiter or quote make valid UTF-8 back to back, but each field alone
    /// is not; `None` means every field is valid UTF-8 by itself.
    pub fn split_char(&self) -> Option<usize> {
        let mid_char = |at: &usize| self.data.get(*at).is_some_and(|&b| b & 0xC0 == 0x80);
        self.fields
            .iter()
            .map(|f| f.end)
            .chain(self.seams.iter().copied())
            .find(mid_char)
    }

    /// The fields, unescaped.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.len()).map(move |i| self.field(i))
    }

    /// The fields as owned strings (lossy), for reject logs and headers.
    pub fn to_strings(&self) -> Vec<String> {
        self.iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    StartRecord,
    StartField,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

const BUF_SIZE: usize = 256 * 1024;

/// The first delimiter, `\n` or `\r` in `chunk`. Most fields are short, and for a short
/// field a plain loop finds the end before `memchr3` has set up its vector search (10M-row
/// TSV, one thread: see bench/README.md); a longer field goes on with `memchr3`.
#[inline(always)]
fn find_field_end(delim: u8, chunk: &[u8]) -> Option<usize> {
    const SHORT: usize = 16;
    let head = &chunk[..chunk.len().min(SHORT)];
    match head
        .iter()
        .position(|&b| b == delim || b == b'\n' || b == b'\r')
    {
        Some(i) => Some(i),
        None if chunk.len() <= SHORT => None,
        None => memchr::memchr3(delim, b'\n', b'\r', &chunk[SHORT..]).map(|i| i + SHORT),
    }
}

/// A place between two records, and the reader's state there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume {
    /// Offset of the next byte in the input.
    pub byte: u64,
    /// The line that byte is on (1-based).
    pub line: u64,
    /// Offset of that line's first byte.
    pub line_start: u64,
    /// The byte before was a `\r`, so a `\n` here ends no further line.
    pub after_cr: bool,
    /// Keep empty lines as records of one empty field (a one-column input).
    pub keep_blank: bool,
}

/// Reads records from delimited text. `quote` of `None` turns quoting off (plain TSV).
pub struct DelimitedReader<R> {
    rdr: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    delim: u8,
    quote: Option<u8>,
    max_record: usize,
    /// Absolute offset of `buf[0]`.
    abs: u64,
    line: u64,
    line_start: u64,
    after_cr: bool,
    keep_blank: bool,
}

impl<R: Read> DelimitedReader<R> {
    /// A reader of `rdr` with delimiter `delim` and quote `quote` (`None`: no quoting); a record longer than `max_record` bytes is an error.
    pub fn new(rdr: R, delim: u8, quote: Option<u8>, max_record: usize) -> Self {
        DelimitedReader {
            rdr,
            buf: vec![0; BUF_SIZE],
            pos: 0,
            end: 0,
            eof: false,
            delim,
            quote,
            max_record,
            abs: 0,
            line: 1,
            line_start: 0,
            after_cr: false,
            keep_blank: false,
        }
    }

    /// Where the next record starts, and the state needed to go on reading from there
    /// with another reader (see [`DelimitedReader::resumed`]). Only meaningful between
    /// records, which is where `read_record` leaves the reader.
    pub fn resume_point(&self) -> Resume {
        Resume {
            byte: self.here(),
            line: self.line,
            line_start: self.line_start,
            after_cr: self.after_cr,
            keep_blank: self.keep_blank,
        }
    }

    /// A reader of input that continues another's at `at`: `rdr` yields the bytes from
    /// `at.byte` on. Records, lines and columns are numbered as the other reader would
    /// have numbered them.
    pub fn resumed(rdr: R, delim: u8, quote: Option<u8>, max_record: usize, at: Resume) -> Self {
        let mut r = DelimitedReader::new(rdr, delim, quote, max_record);
        r.abs = at.byte;
        r.line = at.line;
        r.line_start = at.line_start;
        r.after_cr = at.after_cr;
        r.keep_blank = at.keep_blank;
        r
    }

    /// Makes an empty line a record of one empty field (for one-column input, where an
    /// empty line is an empty value, not nothing).
    pub fn keep_blank_lines(&mut self, keep: bool) {
        self.keep_blank = keep;
    }

    /// The line the next record would start on.
    pub fn line(&self) -> u64 {
        self.line
    }

    fn refill(&mut self) -> io::Result<bool> {
        debug_assert_eq!(self.pos, self.end);
        if self.eof {
            return Ok(false);
        }
        self.abs += self.end as u64;
        self.pos = 0;
        self.end = 0;
        loop {
            match self.rdr.read(&mut self.buf) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end = n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    #[inline]
    fn here(&self) -> u64 {
        self.abs + self.pos as u64
    }

    #[inline]
    fn new_line_at(&mut self, next_line_start: u64) {
        self.line += 1;
        self.line_start = next_line_start;
    }

    /// Skips `n` physical lines (for `--skip`), quoting ignored.
    pub fn skip_lines(&mut self, n: u64) -> io::Result<()> {
        for _ in 0..n {
            loop {
                if self.pos == self.end && !self.refill()? {
                    return Ok(());
                }
                match memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                    Some(i) => {
                        self.pos += i + 1;
                        let h = self.here();
                        self.new_line_at(h);
                        break;
                    }
                    None => self.pos = self.end,
                }
            }
        }
        Ok(())
    }

    /// The most bytes a record may hold; a longer one comes back with
    /// [`Record::too_long`] set.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// Reads the next record into `rec`. Returns `false` at the end of input. A record
    /// over the length limit is read to its end (so the next one starts in step) without
    /// holding its bytes, and comes back with [`Record::too_long`] set and no usable data.
    pub fn read_record(&mut self, rec: &mut Record) -> Result<bool, ParseError> {
        rec.too_long = false;
        let more = self.read_record_inner(rec)?;
        if more && rec.data.len() > self.max_record {
            rec.too_long = true;
        }
        Ok(more)
    }

    fn read_record_inner(&mut self, rec: &mut Record) -> Result<bool, ParseError> {
        rec.data.clear();
        rec.seams.clear();
        rec.fields.clear();
        let mut state = State::StartRecord;
        let mut field = FieldMeta::default();
        loop {
            if self.pos == self.end && !self.refill().map_err(ParseError::Io)? {
                return match state {
                    State::StartRecord => Ok(false),
                    State::Quoted => Err(ParseError::UnterminatedQuote {
                        line: field.line,
                        column: field.column,
                    }),
                    _ => {
                        field.end = rec.data.len();
                        rec.fields.push(field);
                        Ok(true)
                    }
                };
            }
            match state {
                State::StartRecord => {
                    let b = self.buf[self.pos];
                    if self.keep_blank
                        && (b == b'\n' || b == b'\r')
                        && !(b == b'\n' && self.after_cr)
                    {
                        self.after_cr = false;
                        rec.line = self.line;
                        rec.byte = self.here();
                        field.line = self.line;
                        field.column = 1;
                        state = State::Unquoted;
                        continue;
                    }
                    if b == b'\n' {
                        self.pos += 1;
                        if !std::mem::take(&mut self.after_cr) {
                            let h = self.here();
                            self.new_line_at(h);
                        } else {
                            self.line_start = self.here();
                        }
                        continue;
                    }
                    self.after_cr = false;
                    if b == b'\r' {
                        self.pos += 1;
                        self.after_cr = true;
                        let h = self.here();
                        self.new_line_at(h);
                        continue;
                    }
                    rec.line = self.line;
                    rec.byte = self.here();
                    state = State::StartField;
                }
                State::StartField => {
                    field = FieldMeta {
                        end: 0,
                        quoted: false,
                        line: self.line,
                        column: self.here() - self.line_start + 1,
                    };
                    if Some(self.buf[self.pos]) == self.quote {
                        self.pos += 1;
                        field.quoted = true;
                        state = State::Quoted;
                    } else {
                        state = State::Unquoted;
                    }
                }
                State::Unquoted => loop {
                    // One unquoted field after another without going round the state
                    // machine: the common case of plain CSV/TSV.
                    let chunk = &self.buf[self.pos..self.end];
                    match find_field_end(self.delim, chunk) {
                        None => {
                            rec.data.extend_from_slice(chunk);
                            self.pos = self.end;
                            self.check_len(rec)?;
                            break;
                        }
                        Some(i) => {
                            rec.data.extend_from_slice(&chunk[..i]);
                            let b = chunk[i];
                            self.pos += i + 1;
                            field.end = rec.data.len();
                            rec.fields.push(field);
                            if b != self.delim {
                                self.after_cr = b == b'\r';
                                let h = self.here();
                                self.new_line_at(h);
                                return Ok(true);
                            }
                            if self.pos == self.end || Some(self.buf[self.pos]) == self.quote {
                                state = State::StartField;
                                break;
                            }
                            // The next field starts here, unquoted (as StartField would).
                            field = FieldMeta {
                                end: 0,
                                quoted: false,
                                line: self.line,
                                column: self.here() - self.line_start + 1,
                            };
                        }
                    }
                },
                State::Quoted => {
                    let q = self.quote.unwrap_or(b'"');
                    let chunk = &self.buf[self.pos..self.end];
                    match memchr::memchr2(q, b'\n', chunk) {
                        None => {
                            rec.data.extend_from_slice(chunk);
                            self.pos = self.end;
                            self.check_len(rec)?;
                        }
                        Some(i) => {
                            let b = chunk[i];
                            if b == b'\n' {
                                rec.data.extend_from_slice(&chunk[..=i]);
                                self.pos += i + 1;
                                let h = self.here();
                                self.new_line_at(h);
                            } else {
                                rec.data.extend_from_slice(&chunk[..i]);
                                self.pos += i + 1;
                                state = State::QuoteInQuoted;
                            }
                        }
                    }
                }
                State::QuoteInQuoted => {
                    let b = self.buf[self.pos];
                    if Some(b) == self.quote {
                        rec.data.push(b);
                        self.pos += 1;
                        state = State::Quoted;
                    } else {
                        // The closing quote; anything but a delimiter or line end after it
                        // is kept as data, as most CSV readers do.
                        rec.seams.push(rec.data.len());
                        state = State::Unquoted;
                    }
                }
            }
        }
    }

    /// Past the limit mid-record: the bytes so far are dropped (memory stays bounded)
    /// and the record is marked; parsing goes on to its end.
    #[inline]
    fn check_len(&self, rec: &mut Record) -> Result<(), ParseError> {
        if rec.data.len() > self.max_record {
            rec.too_long = true;
            rec.data.clear();
            rec.fields.clear();
            rec.seams.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(
        input: &str,
        delim: u8,
        quote: Option<u8>,
    ) -> Result<Vec<(u64, Vec<String>)>, ParseError> {
        use crate::source::Trickle;
        let mut out = vec![];
        for trickle in [false, true] {
            out.clear();
            let mut rec = Record::default();
            let mut r: DelimitedReader<Box<dyn Read>> = DelimitedReader::new(
                if trickle {
                    Box::new(Trickle(input.as_bytes()))
                } else {
                    Box::new(input.as_bytes())
                },
                delim,
                quote,
                1 << 20,
            );
            while r.read_record(&mut rec)? {
                out.push((rec.line, rec.to_strings()));
            }
        }
        Ok(out)
    }

    fn rows(v: &[(u64, Vec<String>)]) -> Vec<Vec<&str>> {
        v.iter()
            .map(|(_, r)| r.iter().map(|s| s.as_str()).collect())
            .collect()
    }

    #[test]
    fn rfc4180_quotes_delimiters_newlines_crlf() -> Result<(), ParseError> {
        let got = parse(
            "a,b,c\r\n\"x,1\",\"he said \"\"hi\"\"\",\"two\r\nlines\"\r\n,,\n",
            b',',
            Some(b'"'),
        )?;
        assert_eq!(
            rows(&got),
            vec![
                vec!["a", "b", "c"],
                vec!["x,1", "he said \"hi\"", "two\r\nlines"],
                vec!["", "", ""]
            ]
        );
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 2, 4]);
        Ok(())
    }

    #[test]
    fn last_record_without_newline_and_blank_lines() -> Result<(), ParseError> {
        let got = parse("a\tb\n\n\n1\t2", b'\t', None)?;
        assert_eq!(rows(&got), vec![vec!["a", "b"], vec!["1", "2"]]);
        assert_eq!(got[1].0, 4);
        Ok(())
    }

    #[test]
    fn blank_lines_are_empty_values_in_one_column_input() -> Result<(), ParseError> {
        let mut r = DelimitedReader::new("a\r\n\r\nx\n\n".as_bytes(), b',', Some(b'"'), 1 << 20);
        r.keep_blank_lines(true);
        let mut rec = Record::default();
        let mut got = vec![];
        while r.read_record(&mut rec)? {
            got.push((rec.line, rec.to_strings()));
        }
        let want: Vec<(u64, Vec<String>)> = vec![
            (1, vec!["a".into()]),
            (2, vec!["".into()]),
            (3, vec!["x".into()]),
            (4, vec!["".into()]),
        ];
        assert_eq!(got, want);
        Ok(())
    }

    #[test]
    fn quotes_are_data_when_quoting_is_off() -> Result<(), ParseError> {
        let got = parse("\"a\"\tb\"c\n", b'\t', None)?;
        assert_eq!(rows(&got), vec![vec!["\"a\"", "b\"c"]]);
        Ok(())
    }

    #[test]
    fn unterminated_quote_is_an_error_with_its_start() {
        match parse("a,b\n1,\"open\n2,3\n", b',', Some(b'"')) {
            Err(ParseError::UnterminatedQuote { line, column }) => {
                assert_eq!((line, column), (2, 3))
            }
            other => panic!("expected an unterminated quote, got {other:?}"),
        }
    }

    #[test]
    fn field_columns_are_byte_offsets_in_the_line() {
        let mut r =
            DelimitedReader::new("x,yy\nabc,\"d\",e\n".as_bytes(), b',', Some(b'"'), 1 << 20);
        let mut rec = Record::default();
        assert!(r.read_record(&mut rec).is_ok_and(|b| b));
        assert!(r.read_record(&mut rec).is_ok_and(|b| b));
        let cols: Vec<(u64, u64, bool)> = (0..3)
            .map(|i| (rec.meta(i).line, rec.meta(i).column, rec.meta(i).quoted))
            .collect();
        assert_eq!(cols, vec![(2, 1, false), (2, 5, true), (2, 9, false)]);
    }
}
