//! The program's own values as an input: each item serialized (serde) as one NDJSON
//! line, read back by the NDJSON source, so that they are typed, named and stored
//! exactly as the same objects in a file would be. Items are serialized as the reader
//! asks for bytes, a few at a time: memory stays bounded however many there are.

use std::cell::RefCell;
use std::io::{self, Read};
use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap};
use serde::{Serialize, Serializer};

/// Bytes to fill before handing them out (the reader asks for its buffer's worth).
const CHUNK: usize = 64 * 1024;

/// NDJSON text made from the items of an iterator.
pub(crate) struct Lines<I> {
    items: I,
    buf: Vec<u8>,
    at: usize,
    done: bool,
    /// An item that failed to serialize: its error is returned once the lines before
    /// it are read, so the reader reports it at that item's line.
    failed: Option<io::Error>,
}

impl<I> Lines<I> {
    pub(crate) fn new(items: I) -> Self {
        Lines {
            items,
            buf: Vec::with_capacity(CHUNK),
            at: 0,
            done: false,
            failed: None,
        }
    }
}

impl<T: Serialize, I: Iterator<Item = T>> Read for Lines<I> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buf.len() {
            if let Some(e) = self.failed.take() {
                self.done = true;
                return Err(e);
            }
            self.buf.clear();
            self.at = 0;
            while !self.done && self.failed.is_none() && self.buf.len() < CHUNK {
                match self.items.next() {
                    Some(item) => {
                        let start = self.buf.len();
                        match serde_json::to_writer(&mut self.buf, &item) {
                            Ok(()) => self.buf.push(b'\n'),
                            Err(e) => {
                                self.buf.truncate(start);
                                self.failed = Some(io::Error::new(io::ErrorKind::InvalidData, e));
                            }
                        }
                    }
                    None => self.done = true,
                }
            }
            if self.buf.is_empty() {
                if let Some(e) = self.failed.take() {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One row of values serialized as an object keyed by the column names. The values
/// are an iterator, consumed by the one serialization each row gets.
pub(crate) struct Row<R> {
    pub(crate) columns: Arc<[String]>,
    pub(crate) values: RefCell<Option<R>>,
}

impl<R, V> Serialize for Row<R>
where
    R: IntoIterator<Item = V>,
    V: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let values = self
            .values
            .borrow_mut()
            .take()
            .ok_or_else(|| S::Error::custom("a row is serialized once"))?;
        let mut map = s.serialize_map(None)?;
        let mut names = self.columns.iter();
        for (i, v) in values.into_iter().enumerate() {
            let name = names.next().ok_or_else(|| {
                S::Error::custom(format!(
                    "the row has a value {} but there are {} columns",
                    i + 1,
                    self.columns.len()
                ))
            })?;
            map.serialize_entry(name, &v)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(r: impl Read) -> String {
        let mut s = String::new();
        let mut r = r;
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn items_become_ndjson_lines_through_small_reads() {
        #[derive(Serialize)]
        struct P {
            name: String,
            age: Option<u8>,
        }
        let items = (0..3).map(|i| P {
            name: format!("n\u{e9}\0{i}"),
            age: (i != 1).then_some(i as u8),
        });
        let mut lines = Lines::new(items);
        let mut out = Vec::new();
        let mut byte = [0u8; 1];
        while lines.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"name\":\"n\u{e9}\\u0000 0\",\"age\":0}\n{\"name\":\"n\u{e9}\\u0000 1\",\"age\":null}\n{\"name\":\"n\u{e9}\\u0000 2\",\"age\":2}\n"
                .replace(' ', "")
        );
    }

    #[test]
    fn a_row_with_more_values_than_columns_is_an_error() {
        let cols: Arc<[String]> = vec!["a".to_string()].into();
        let row = |v: Vec<i64>| Row {
            columns: cols.clone(),
            values: RefCell::new(Some(v)),
        };
        assert_eq!(
            text(Lines::new(vec![row(vec![1]), row(vec![])].into_iter())),
            "{\"a\":1}\n{}\n"
        );
        let mut r = Lines::new(vec![row(vec![1, 2])].into_iter());
        let e = r.read(&mut [0u8; 16]).unwrap_err();
        assert!(
            e.to_string()
                .contains("the row has a value 2 but there are 1 columns"),
            "{e}"
        );
    }
}
