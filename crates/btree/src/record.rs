//! Records: a header of serial types, then the values, each in the smallest form the
//! format allows (schema format 4: the integers 0 and 1 take no body bytes).

use crate::varint;

/// One value of a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    /// A NaN is stored as NULL, as SQLite itself does.
    Real(f64),
    /// UTF-8 text.
    Text(&'a [u8]),
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
    pub fn null(&mut self) {
        self.types.push(0);
    }

    #[inline]
    pub fn integer(&mut self, i: i64) {
        let (t, n) = serial_type(&Value::Integer(i));
        self.types.push(t as u8);
        self.body.extend_from_slice(&i.to_be_bytes()[8 - n..]);
    }

    /// A NaN is stored as NULL, as SQLite does.
    #[inline]
    pub fn real(&mut self, f: f64) {
        if f.is_nan() {
            self.null();
        } else {
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
    pub fn blob(&mut self, b: &[u8]) {
        self.serial(12 + 2 * b.len() as u64);
        self.body.extend_from_slice(b);
    }

    #[inline]
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
        let start = out.len();
        out.resize(start + self.len(), 0);
        self.write(&mut out[start..]);
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
}
