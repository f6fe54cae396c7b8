//! Records: a header of serial types, then the values, each in the smallest form the
//! format allows (schema format 4: the integers 0 and 1 take no body bytes).

use crate::{varint, Error};

/// One value of a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// NULL.
    Null,
    /// A 64-bit integer, stored in the fewest bytes that hold it.
    Integer(i64),
    /// A NaN is stored as NULL, as SQLite itself does.
    Real(f64),
    /// UTF-8 text. Not checked here: SQLite stores and returns the bytes it is given,
    /// so a caller with unchecked bytes validates them first.
    Text(&'a [u8]),
    /// Bytes, stored as they are.
    Blob(&'a [u8]),
}

/// The serial type of `v` and the size of its body.
pub fn serial_type(v: &Value<'_>) -> (u64, usize) {
    match *v {
        Value::Null => (0, 0),
        Value::Integer(0) => (8, 0),
        Value::Integer(1) => (9, 0),
        Value::Integer(i) => match i {
            -0x80..=0x7f => (1, 1),
            -0x8000..=0x7fff => (2, 2),
            -0x80_0000..=0x7f_ffff => (3, 3),
            -0x8000_0000..=0x7fff_ffff => (4, 4),
            -0x8000_0000_0000..=0x7fff_ffff_ffff => (5, 6),
            _ => (6, 8),
        },
        Value::Real(f) if f.is_nan() => (0, 0),
        Value::Real(_) => (7, 8),
        Value::Text(t) => (13 + 2 * t.len() as u64, t.len()),
        Value::Blob(b) => (12 + 2 * b.len() as u64, b.len()),
    }
}

/// The size of the record of `values`.
pub fn size(values: &[Value<'_>]) -> usize {
    let (head, body) = parts(values);
    head + body
}

/// (header size, body size) of the record of `values`.
#[inline]
pub fn parts(values: &[Value<'_>]) -> (usize, usize) {
    let mut types = 0;
    let mut body = 0;
    for v in values {
        let (t, n) = serial_type(v);
        types += varint::len(t);
        body += n;
    }
    // The header's size counts the varint that holds it.
    let mut head = types + 1;
    while varint::len(head as u64) + types > head {
        head = types + varint::len(head as u64);
    }
    (head, body)
}

/// Appends the record of `values` to `out`.
pub fn encode(values: &[Value<'_>], out: &mut Vec<u8>) {
    let (head, body) = parts(values);
    let start = out.len();
    out.resize(start + head + body, 0);
    write(values, head, body, &mut out[start..]);
}

/// Writes the record of `values`, whose [`parts`] are `head` and `body`, into `buf`
/// (exactly `head + body` bytes).
#[inline]
pub fn write(values: &[Value<'_>], head: usize, body: usize, buf: &mut [u8]) {
    debug_assert_eq!(buf.len(), head + body);
    let mut h = varint::put(buf, head as u64);
    let mut b = head;
    for v in values {
        let (t, n) = serial_type(v);
        h += varint::put(&mut buf[h..], t);
        let dst = &mut buf[b..b + n];
        match *v {
            Value::Integer(i) => dst.copy_from_slice(&i.to_be_bytes()[8 - n..]),
            Value::Real(f) if n == 8 => dst.copy_from_slice(&f.to_bits().to_be_bytes()),
            Value::Text(s) | Value::Blob(s) => dst.copy_from_slice(s),
            _ => {}
        }
        b += n;
    }
    debug_assert_eq!(h, head);
    debug_assert_eq!(b, head + body);
}

/// An encoded record whose header and body agree: it came from a [`Records`] (made by a
/// [`RecordBuilder`]) or passed [`Record::parse`]. The only kind of bytes the writers
/// take as a row, so none can write a cell SQLite would find malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a>(&'a [u8]);

impl<'a> Record<'a> {
    /// `bytes` as a record, if they are one: a header-size varint, serial types that
    /// exist (not 10 or 11) ending exactly at that size, then exactly the body bytes
    /// those types call for.
    pub fn parse(bytes: &'a [u8]) -> Result<Record<'a>, Error> {
        let record = Record::parse_prefix(bytes)?;
        if record.0.len() != bytes.len() {
            return Err(Error::NotARecord(
                "the body's length is not what the serial types call for",
            ));
        }
        Ok(record)
    }

    /// The record at the start of `bytes`, which may go on past its end: as
    /// [`Record::parse`], but the body may be followed by other bytes.
    pub fn parse_prefix(bytes: &'a [u8]) -> Result<Record<'a>, Error> {
        let bad = |why: &'static str| Err(Error::NotARecord(why));
        let Some((head, mut at)) = varint::get_checked(bytes) else {
            return bad("the header size is cut off");
        };
        if head < at as u64 || head > bytes.len() as u64 {
            return bad("the header size is outside the record");
        }
        let head = head as usize;
        let mut body = 0u64;
        while at < head {
            let Some((t, n)) = varint::get_checked(&bytes[at..head]) else {
                return bad("a serial type runs past the header");
            };
            at += n;
            body = body.saturating_add(match t {
                0 | 8 | 9 => 0,
                1..=4 => t,
                5 => 6,
                6 | 7 => 8,
                10 | 11 => return bad("serial types 10 and 11 are reserved"),
                _ => (t - 12) / 2,
            });
        }
        if body > (bytes.len() - head) as u64 {
            return bad("the body's length is not what the serial types call for");
        }
        Ok(Record(&bytes[..head + body as usize]))
    }

    /// `bytes`, which this crate's own [`encode`] made.
    pub(crate) fn encoded(bytes: &'a [u8]) -> Record<'a> {
        debug_assert!(Record::parse(bytes).is_ok());
        Record(bytes)
    }

    /// The encoded bytes.
    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    /// The serial type of each field, in order: what a field is (0 NULL, 1-6, 8 and 9
    /// integers, 7 a real, odd from 13 text, even from 12 a blob) without reading it.
    pub fn serial_types(self) -> impl Iterator<Item = u64> + 'a {
        let bytes = self.0;
        let (head, mut at) = varint::get(bytes);
        std::iter::from_fn(move || {
            if at >= head as usize {
                return None;
            }
            // The header was checked when the record was made or parsed.
            let (t, n) = varint::get(&bytes[at..]);
            at += n;
            Some(t)
        })
    }

    /// Field `i` (from 0), or `None` past the last. A stored NaN reads as NULL, as SQLite
    /// reads it. Never panics: the header and body agree (see [`Record::parse`]).
    pub fn column(self, i: usize) -> Option<Value<'a>> {
        Fields::new(self.0).nth(i).map(Value::from)
    }

    /// Every field in order, as [`Record::column`] reads each.
    pub fn values(self) -> impl Iterator<Item = Value<'a>> + 'a {
        Fields::new(self.0).map(Value::from)
    }
}

/// Encoded records one after another, each made by a [`RecordBuilder`] or checked by
/// [`Record::parse`]: a batch of rows for [`crate::TableWriter::push_record`] (or of
/// index entries for [`crate::IndexBuilder::push_record`]), built on one thread and
/// written on another without being checked again.
#[derive(Clone, Debug, Default)]
pub struct Records {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Records {
    /// No records.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every record, keeping the allocations.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Appends the record `built` holds.
    #[inline]
    pub fn push(&mut self, built: &RecordBuilder) {
        built.encode(&mut self.bytes);
        self.ends.push(self.bytes.len());
    }

    /// Appends a record already checked (a copy of its bytes).
    #[inline]
    pub fn push_record(&mut self, record: Record<'_>) {
        self.bytes.extend_from_slice(record.0);
        self.ends.push(self.bytes.len());
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held, to bound memory.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The records in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(a, b)| Record(&self.bytes[a..b]))
    }
}

/// A record built value by value: each value's serial type is decided once, as it is
/// added, and its body bytes are appended at once. Cheaper than a `[Value]` when the values
/// are made one at a time (a generator, a parser). Reuse it with [`RecordBuilder::clear`].
///
/// Invariant: `types` holds the header's serial-type varints, `body` the values' bytes,
/// both in column order.
#[derive(Clone, Debug, Default)]
pub struct RecordBuilder {
    types: Vec<u8>,
    body: Vec<u8>,
}

impl RecordBuilder {
    /// A record of no values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the record, keeping the allocations.
    #[inline]
    pub fn clear(&mut self) {
        self.types.clear();
        self.body.clear();
    }

    #[inline]
    fn serial(&mut self, t: u64) {
        if t < 0x80 {
            self.types.push(t as u8);
        } else {
            let mut b = [0u8; 9];
            let n = varint::put(&mut b, t);
            self.types.extend_from_slice(&b[..n]);
        }
    }

    #[inline]
    /// Adds a NULL.
    pub fn null(&mut self) {
        self.types.push(0);
    }

    #[inline]
    /// Adds an integer, in the smallest serial type that holds it.
    pub fn integer(&mut self, i: i64) {
        let (t, n) = serial_type(&Value::Integer(i));
        self.types.push(t as u8);
        if n > 0 {
            // All eight bytes, the `n` that count first, then cut: a copy of a fixed size
            // is one store, where a copy of `n` bytes was a call to memcpy (measured: 7%
            // of a Parquet load's time went to those calls).
            let at = self.body.len();
            let shifted = (i as u64) << (8 * (8 - n));
            self.body.extend_from_slice(&shifted.to_be_bytes());
            self.body.truncate(at + n);
        }
    }

    /// A NaN is stored as NULL, as SQLite does.
    #[inline]
    pub fn real(&mut self, f: f64) {
        if f.is_nan() {
            self.null();
        } else {
            // -0.0 is written as 0.0: SQLite's own INSERT into a column of REAL affinity
            // stores an integral real in its integer form, which has no sign.
            let f = if f == 0.0 { 0.0 } else { f };
            self.types.push(7);
            self.body.extend_from_slice(&f.to_bits().to_be_bytes());
        }
    }

    /// UTF-8 text.
    #[inline]
    pub fn text(&mut self, t: &[u8]) {
        self.serial(13 + 2 * t.len() as u64);
        self.body.extend_from_slice(t);
    }

    #[inline]
    /// Adds a blob.
    pub fn blob(&mut self, b: &[u8]) {
        self.serial(12 + 2 * b.len() as u64);
        self.body.extend_from_slice(b);
    }

    #[inline]
    /// Adds `v`, whatever its kind.
    pub fn value(&mut self, v: &Value<'_>) {
        match *v {
            Value::Null => self.null(),
            Value::Integer(i) => self.integer(i),
            Value::Real(f) => self.real(f),
            Value::Text(t) => self.text(t),
            Value::Blob(b) => self.blob(b),
        }
    }

    /// The header's size (counting the varint that holds it).
    #[inline]
    fn head(&self) -> usize {
        let types = self.types.len();
        let mut head = types + 1;
        while varint::len(head as u64) + types > head {
            head = types + varint::len(head as u64);
        }
        head
    }

    /// The record's size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.head() + self.body.len()
    }

    /// Whether no value was added (the record is then one byte: its header size).
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// Writes the record into `buf`, exactly [`RecordBuilder::len`] bytes.
    #[inline]
    pub fn write(&self, buf: &mut [u8]) {
        let head = self.head();
        debug_assert_eq!(buf.len(), head + self.body.len());
        let n = varint::put(buf, head as u64);
        buf[n..head].copy_from_slice(&self.types);
        buf[head..].copy_from_slice(&self.body);
    }

    /// Appends the record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let head = self.head();
        let mut size = [0u8; 9];
        let n = varint::put(&mut size, head as u64);
        debug_assert_eq!(n + self.types.len(), head);
        out.reserve(head + self.body.len());
        out.extend_from_slice(&size[..n]);
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.body);
    }
}

/// One field of a record, decoded for comparison.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Field<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

impl<'a> From<Field<'a>> for Value<'a> {
    fn from(f: Field<'a>) -> Self {
        match f {
            Field::Null => Value::Null,
            Field::Int(i) => Value::Integer(i),
            Field::Real(r) => Value::Real(r),
            Field::Text(t) => Value::Text(t),
            Field::Blob(b) => Value::Blob(b),
        }
    }
}

/// The fields of a well-formed record (as written by [`encode`]).
pub(crate) struct Fields<'a> {
    rec: &'a [u8],
    head: usize,
    head_end: usize,
    body: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(rec: &'a [u8]) -> Fields<'a> {
        let (h, n) = varint::get(rec);
        Fields {
            rec,
            head: n,
            head_end: h as usize,
            body: h as usize,
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Field<'a>;

    fn next(&mut self) -> Option<Field<'a>> {
        if self.head >= self.head_end {
            return None;
        }
        let (t, n) = varint::get(&self.rec[self.head..]);
        self.head += n;
        let at = self.body;
        let int = |len: usize| {
            let b = &self.rec[at..at + len];
            let mut v = if b[0] & 0x80 != 0 { -1i64 } else { 0 };
            for &x in b {
                v = (v << 8) | i64::from(x);
            }
            v
        };
        let (f, len) = match t {
            0 => (Field::Null, 0),
            1..=4 => (Field::Int(int(t as usize)), t as usize),
            5 => (Field::Int(int(6)), 6),
            6 => (Field::Int(int(8)), 8),
            7 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&self.rec[at..at + 8]);
                let f = f64::from_bits(u64::from_be_bytes(b));
                // SQLite reads a stored NaN as NULL (vdbeaux.c, serialGet).
                (
                    if f.is_nan() {
                        Field::Null
                    } else {
                        Field::Real(f)
                    },
                    8,
                )
            }
            8 => (Field::Int(0), 0),
            9 => (Field::Int(1), 0),
            t if t >= 13 && t % 2 == 1 => {
                let len = ((t - 13) / 2) as usize;
                (Field::Text(&self.rec[at..at + len]), len)
            }
            t => {
                let len = ((t.max(12) - 12) / 2) as usize;
                (Field::Blob(&self.rec[at..at + len]), len)
            }
        };
        self.body += len;
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_the_smallest_serial_type() {
        let cases = [
            (0, 8),
            (1, 9),
            (2, 1),
            (-128, 1),
            (128, 2),
            (-32769, 3),
            (8_388_608, 4),
            (2_147_483_648, 5),
            (140_737_488_355_328, 6),
            (i64::MIN, 6),
        ];
        for (i, t) in cases {
            assert_eq!(serial_type(&Value::Integer(i)).0, t, "{i}");
        }
    }

    #[test]
    fn a_record_is_header_then_body() {
        let mut out = vec![];
        encode(
            &[
                Value::Null,
                Value::Integer(300),
                Value::Text(b"ab"),
                Value::Integer(1),
            ],
            &mut out,
        );
        // header: size 5, NULL, int16, text(2) = 17, one
        assert_eq!(out, vec![5, 0, 2, 17, 9, 0x01, 0x2c, b'a', b'b']);
        assert_eq!(
            size(&[
                Value::Null,
                Value::Integer(300),
                Value::Text(b"ab"),
                Value::Integer(1)
            ]),
            9
        );
    }

    #[test]
    fn a_built_record_equals_the_encoded_one() {
        let long = vec![b'x'; 300];
        let values = [
            Value::Null,
            Value::Integer(0),
            Value::Integer(1),
            Value::Integer(-129),
            Value::Integer(i64::MIN),
            Value::Real(1.5),
            Value::Real(f64::NAN),
            Value::Text(b""),
            Value::Text(&long),
            Value::Blob(&long[..70]),
        ];
        for n in [0, 1, values.len()] {
            let mut want = vec![];
            encode(&values[..n], &mut want);
            let mut b = RecordBuilder::new();
            values[..n].iter().for_each(|v| b.value(v));
            let mut got = vec![];
            b.encode(&mut got);
            assert_eq!(got, want, "{n} values");
            assert_eq!(b.len(), want.len());
        }
        // 200 NULLs: a two-byte header size.
        let mut b = RecordBuilder::new();
        (0..200).for_each(|_| b.null());
        let mut got = vec![];
        b.encode(&mut got);
        assert_eq!(got.len(), 202);
        assert_eq!(varint::get(&got), (202, 2));
    }

    #[test]
    fn a_long_header_counts_its_own_size_varint() {
        let values = vec![Value::Null; 200];
        let mut out = vec![];
        encode(&values, &mut out);
        assert_eq!(out.len(), 202);
        assert_eq!(varint::get(&out), (202, 2));
    }

    #[test]
    fn only_whole_records_parse() {
        let mut b = RecordBuilder::new();
        b.integer(300);
        b.text(b"h\xC3\xA9");
        b.null();
        b.real(1.5);
        b.blob(&[0; 200]);
        let mut good = vec![];
        b.encode(&mut good);
        assert_eq!(
            Record::parse(&good).ok().map(Record::as_bytes),
            Some(&good[..])
        );
        let mut rs = Records::new();
        rs.push(&b);
        assert_eq!(rs.iter().next(), Some(Record(&good)));
        // Every cut, every byte after, every header size and a reserved type: refused.
        for cut in 0..good.len() {
            assert!(Record::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(Record::parse(&longer).is_err());
        for h in [0u8, 1, 0x7f] {
            let mut other = good.clone();
            other[0] = h;
            assert!(Record::parse(&other).is_err(), "header size {h}");
        }
        assert!(Record::parse(&[2, 10]).is_err());
        assert!(Record::parse(&[2, 0x80]).is_err());
        assert!(Record::parse(&[0xff; 9]).is_err());
        assert_eq!(
            Record::parse(&[1]).ok().map(Record::as_bytes),
            Some(&[1u8][..])
        );
    }
}
