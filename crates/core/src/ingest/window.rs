//! [`Window`]: one commit window's messages, gathered per key in memory.
//!
//! Allocation-free in the steady state: keys and texts go to two arenas, rows are found
//! through a hash table of row indexes (no key object per row), and every field a
//! message sets is appended to one vector of entries, in arrival order. Coalescing is
//! finished by the writer: it binds a row's entries in arrival order, so the last value
//! of each field wins (appending costs a store; finding the earlier entry to overwrite
//! cost a chain of cache misses, 40% of the engine thread). A window is cleared and
//! reused after its commit, keeping its capacity.
//!
//! Invariants:
//! - `rows[i].key` lies inside `keys`, and no two rows have the same key bytes;
//! - `rows[i].len` is the number of entries whose row is `i`, and `rows[i].text` the
//!   bytes their text values take in `text`;
//! - a text entry's bits are where its length (a LEB128 varint) and then its bytes lie
//!   in `text`.

use std::hash::BuildHasher;
use std::time::Instant;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::parse::Val;
use super::SourcePosition;
use crate::types::ColumnType;

/// One key's coalesced update.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub key: (usize, usize),
    /// How many entries the row has.
    pub len: u32,
    /// The bytes its entries' text values take in the window's `text` (with their
    /// lengths).
    pub text: usize,
}

/// One field set by a message, in 16 bytes (a window holds millions; at 32 bytes, moving
/// them was most of gathering a window): its row with the value's kind in the top two
/// bits (rows are fewer than `MAX_WINDOW_ENTRIES`, far below 2^30), its column, and the
/// value's bits: an integer, a real's bits, or where the text's length (a LEB128
/// varint) and then its bytes lie in the window's `text`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    row_kind: u32,
    col: u32,
    bits: u64,
}

/// A field of a [`Sorted`] row in 16 bytes: its column, the kind of its value, and the
/// value's bits as in [`Entry`], text found in [`Sorted::text`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Slot {
    col: u32,
    kind: u32,
    bits: u64,
}

const NULL: u32 = 0;
const INT: u32 = 1;
const REAL: u32 = 2;
const TEXT: u32 = 3;
const ROW_BITS: u32 = 30;

/// Appends `n` as a LEB128 varint.
fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The LEB128 varint at the start of `b`, and its length in bytes.
fn get_len(b: &[u8]) -> (usize, usize) {
    let (mut n, mut shift) = (0usize, 0);
    for (i, &byte) in b.iter().enumerate() {
        n |= ((byte & 0x7f) as usize) << shift;
        if byte < 0x80 {
            return (n, i + 1);
        }
        shift += 7;
    }
    unreachable!("a text's length is written whole before its bytes")
}

impl Slot {
    /// The column and the value; text as a range of `text` (the arena it was written to).
    fn decode(self, text: &[u8]) -> (u32, Val) {
        let val = match self.kind {
            NULL => Val::Null,
            INT => Val::Int(self.bits as i64),
            REAL => Val::Real(f64::from_bits(self.bits)),
            _ => {
                let at = self.bits as usize;
                let (len, head) = get_len(&text[at..]);
                Val::Text { at: at + head, len }
            }
        };
        (self.col, val)
    }
}

/// A window's rows in key order, each row's key and fields side by side, and the fields'
/// text in the same order: what the writer walks, front to back. Sorted row `i` is
/// window row `order[i]`; its key is `key(i)` and its fields `fields(i)`.
#[derive(Default)]
pub(crate) struct Sorted {
    pub order: Vec<u32>,
    starts: Vec<usize>,
    fields: Vec<Slot>,
    text: Vec<u8>,
    keys: Vec<u8>,
    key_starts: Vec<usize>,
    /// Buffers of the sort, kept to be reused.
    scratch_keyed: Vec<(u128, u32)>,
    scratch_rank: Vec<u32>,
    scratch_text_starts: Vec<usize>,
}

impl Sorted {
    /// The fields of sorted row `i`, in arrival order (a column may appear more than
    /// once; the last is its value); a text value is a range of [`Sorted::text`].
    pub fn fields(&self, i: usize) -> impl Iterator<Item = (u32, Val)> + '_ {
        self.fields[self.starts[i]..self.starts[i + 1]]
            .iter()
            .map(|s| s.decode(&self.text))
    }

    /// The encoded key of sorted row `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        &self.keys[self.key_starts[i]..self.key_starts[i + 1]]
    }

    /// The bytes of a text value of `fields`.
    pub fn text(&self, at: usize, len: usize) -> &[u8] {
        &self.text[at..at + len]
    }
}

/// Buffers of a window smaller than this are always kept for its next use.
const KEEP_BYTES: usize = 16 << 20;

/// Empties `v` for the window's next use, keeping its allocation unless it is large and
/// the window just written used less than a quarter of it: after a burst (a backlog read
/// at full speed, then a trickle) the windows do not hold the burst's memory for ever.
fn empty<T>(v: &mut Vec<T>) {
    let used = v.len();
    v.clear();
    if v.capacity() * std::mem::size_of::<T>() > KEEP_BYTES && used < v.capacity() / 4 {
        v.shrink_to(used * 2);
    }
}

impl Sorted {
    /// Empties every buffer as [`empty`] does.
    fn empty(&mut self) {
        empty(&mut self.order);
        empty(&mut self.starts);
        empty(&mut self.fields);
        empty(&mut self.text);
        empty(&mut self.keys);
        empty(&mut self.key_starts);
        empty(&mut self.scratch_keyed);
        empty(&mut self.scratch_rank);
        empty(&mut self.scratch_text_starts);
    }
}

/// Entries a window must have before [`Window::sorted`] gathers them on more than one
/// thread.
const PARALLEL_ENTRIES: usize = 1 << 20;

#[derive(Default)]
pub(crate) struct Window {
    pub keys: Vec<u8>,
    pub text: Vec<u8>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    pub rows: Vec<Row>,
    pub entries: Vec<Entry>,
    /// Raw messages for the history table: arrival time and a range of `text`.
    pub history: Vec<(f64, usize, usize)>,
    pub messages: u64,
    pub rejects: u64,
    pub start: Option<Instant>,
    pub position: Option<SourcePosition>,
    /// The key columns' types, once known (the table is created from them).
    pub key_types: Option<Vec<ColumnType>>,
    /// Every non-key column as of the window's close: the writer adds those it lacks.
    pub columns: Vec<(String, Option<ColumnType>)>,
    /// Values whose kind differed from their column's declared type.
    pub mismatches: u64,
    /// The rows in key order, once [`Window::prepare`] ran.
    sorted: Sorted,
    /// Whether `sorted` is of the window as it is: cleared by every change.
    prepared: bool,
}

impl Window {
    /// The row for `key`, added empty if the window has none yet.
    pub fn row_for(&mut self, key: &[u8]) -> usize {
        self.prepared = false;
        let hash = self.hasher.hash_one(key);
        let (keys, rows) = (&self.keys, &self.rows);
        let found = self.index.find(hash, |&r| {
            let k = rows[r as usize].key;
            &keys[k.0..k.1] == key
        });
        if let Some(&r) = found {
            return r as usize;
        }
        let at = self.keys.len();
        self.keys.extend_from_slice(key);
        let r = self.rows.len();
        self.rows.push(Row {
            key: (at, self.keys.len()),
            len: 0,
            text: 0,
        });
        let (keys, rows, hasher) = (&self.keys, &self.rows, &self.hasher);
        self.index.insert_unique(hash, r as u32, |&r| {
            let k = rows[r as usize].key;
            hasher.hash_one(&keys[k.0..k.1])
        });
        r
    }

    /// Sets column `col` of row `row` to `val`, whose text (if any) is in `src`.
    pub fn set(&mut self, row: usize, col: u32, val: Val, src: &[u8]) {
        assert!(row < 1 << ROW_BITS, "a window holds fewer rows than 2^30");
        self.prepared = false;
        let (kind, bits) = match val {
            Val::Null => (NULL, 0),
            Val::Int(v) => (INT, v as u64),
            Val::Real(v) => (REAL, v.to_bits()),
            Val::Text { at, len } => {
                let here = self.text.len();
                put_len(&mut self.text, len);
                self.text.extend_from_slice(&src[at..at + len]);
                self.rows[row].text += self.text.len() - here;
                (TEXT, here as u64)
            }
        };
        self.entries.push(Entry {
            row_kind: row as u32 | kind << ROW_BITS,
            col,
            bits,
        });
        self.rows[row].len += 1;
    }

    /// Puts the rows in key order (byte order of the encoded keys), each with its key, its
    /// fields (in arrival order) and their text copied into one place, for
    /// [`Window::sorted`]. Run on the engine's thread when the window closes, while the
    /// window before it is still being written, so that the one thread that writes
    /// SQLite only writes; the buffers are kept for the window's next use (a window
    /// reused is sorted without the page faults of fresh memory).
    ///
    /// Gathering is a scatter of every entry to its row's place. The writer used to read
    /// the window in key order instead, and each row's key, fields and text then cost a
    /// cache miss that nothing overlapped (0.45 s of a 0.75 s commit of 290k rows here);
    /// in one loop over the entries, the misses overlap, and with enough entries the rows
    /// are split between threads.
    pub fn prepare(&mut self) {
        let parts = if self.entries.len() >= PARALLEL_ENTRIES {
            std::thread::available_parallelism().map_or(1, |p| p.get().min(4))
        } else {
            1
        };
        self.prepare_in(parts);
    }

    /// The rows in key order, as [`Window::prepare`] left them.
    ///
    /// # Panics
    /// If the window was changed after it was last prepared (or never was).
    pub fn sorted(&self) -> &Sorted {
        assert!(
            self.prepared,
            "a window is prepared after its last change and before it is written"
        );
        &self.sorted
    }

    /// Whether [`Window::sorted`] is up to date.
    pub fn is_prepared(&self) -> bool {
        self.prepared
    }

    /// [`Window::prepare`], with its rows gathered in `parts` ranges, each on a thread.
    fn prepare_in(&mut self, parts: usize) {
        let mut out = std::mem::take(&mut self.sorted);
        self.sort_into(parts, &mut out);
        self.sorted = out;
        self.prepared = true;
    }

    fn sort_into(&self, parts: usize, out: &mut Sorted) {
        let parts = parts.max(1);
        let prefix = |k: &[u8]| {
            let mut b = [0u8; 16];
            let n = k.len().min(16);
            b[..n].copy_from_slice(&k[..n]);
            u128::from_be_bytes(b)
        };
        let keyed = &mut out.scratch_keyed;
        keyed.clear();
        keyed.extend(
            self.rows
                .iter()
                .enumerate()
                .map(|(i, r)| (prefix(self.key(r)), i as u32)),
        );
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                self.key(&self.rows[a.1 as usize])
                    .cmp(self.key(&self.rows[b.1 as usize]))
            })
        });
        let Sorted {
            order,
            starts,
            fields,
            text,
            keys,
            key_starts,
            scratch_keyed,
            scratch_rank: rank,
            scratch_text_starts: text_starts,
        } = out;
        order.clear();
        order.extend(scratch_keyed.iter().map(|&(_, r)| r));
        let n = order.len();
        rank.clear();
        rank.resize(self.rows.len(), 0);
        for v in [&mut *starts, &mut *text_starts, &mut *key_starts] {
            v.clear();
            v.reserve(n + 1);
            v.push(0);
        }
        keys.clear();
        keys.reserve(self.keys.len());
        for (i, &r) in order.iter().enumerate() {
            rank[r as usize] = i as u32;
            let row = &self.rows[r as usize];
            starts.push(starts[i] + row.len as usize);
            text_starts.push(text_starts[i] + row.text);
            keys.extend_from_slice(self.key(row));
            key_starts.push(keys.len());
        }
        fields.clear();
        fields.resize(self.entries.len(), Slot::default());
        text.clear();
        text.resize(text_starts[n], 0);
        let (starts, text_starts, rank) = (&*starts, &*text_starts, &*rank);
        // Row ranges of about equal entries, and each range's share of the outputs.
        let mut cuts = vec![0];
        for p in 1..parts {
            let goal = starts[n] * p / parts;
            cuts.push(
                starts
                    .partition_point(|&s| s < goal)
                    .min(n)
                    .max(cuts[p - 1]),
            );
        }
        cuts.push(n);
        let mut jobs = vec![];
        let (mut f_rest, mut t_rest) = (&mut fields[..], &mut text[..]);
        for p in 0..parts {
            let (a, b) = (cuts[p], cuts[p + 1]);
            let (f, f_next) = f_rest.split_at_mut(starts[b] - starts[a]);
            let (t, t_next) = t_rest.split_at_mut(text_starts[b] - text_starts[a]);
            (f_rest, t_rest) = (f_next, t_next);
            jobs.push((a..b, f, t));
        }
        let gather = |(rows, f, t): (std::ops::Range<usize>, &mut [Slot], &mut [u8])| {
            let (f0, t0) = (starts[rows.start], text_starts[rows.start]);
            let mut next: Vec<(usize, usize)> = (rows.start..rows.end)
                .map(|i| (starts[i] - f0, text_starts[i] - t0))
                .collect();
            for e in &self.entries {
                let r = rank[(e.row_kind & ((1 << ROW_BITS) - 1)) as usize] as usize;
                if !rows.contains(&r) {
                    continue;
                }
                let (fa, ta) = &mut next[r - rows.start];
                let kind = e.row_kind >> ROW_BITS;
                let bits = if kind == TEXT {
                    let at = e.bits as usize;
                    let (len, head) = get_len(&self.text[at..]);
                    let whole = head + len;
                    t[*ta..*ta + whole].copy_from_slice(&self.text[at..at + whole]);
                    let moved = (*ta + t0) as u64;
                    *ta += whole;
                    moved
                } else {
                    e.bits
                };
                f[*fa] = Slot {
                    col: e.col,
                    kind,
                    bits,
                };
                *fa += 1;
            }
        };
        if parts == 1 {
            jobs.into_iter().for_each(gather);
        } else {
            std::thread::scope(|s| {
                let mut jobs = jobs.into_iter();
                let first = jobs.next();
                let gather = &gather;
                for job in jobs {
                    s.spawn(move || gather(job));
                }
                first.into_iter().for_each(gather);
            });
        }
    }

    pub fn key(&self, row: &Row) -> &[u8] {
        &self.keys[row.key.0..row.key.1]
    }

    /// Whether anything must be written (messages, rejects that move the resume point).
    pub fn is_empty(&self) -> bool {
        self.messages == 0 && self.rejects == 0 && self.position.is_none()
    }

    /// Empties the window for reuse, keeping its allocations.
    pub fn clear(&mut self) {
        empty(&mut self.keys);
        empty(&mut self.text);
        self.index.clear();
        empty(&mut self.rows);
        empty(&mut self.entries);
        empty(&mut self.history);
        self.sorted.empty();
        self.messages = 0;
        self.rejects = 0;
        self.start = None;
        self.position = None;
        self.mismatches = 0;
        self.columns.clear();
        self.prepared = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A large buffer the last window barely used is given back; one it used well, or a
    /// small one, is kept.
    #[test]
    fn a_burst_does_not_hold_its_memory() {
        let big = KEEP_BYTES * 2;
        let mut v: Vec<u8> = Vec::with_capacity(big);
        v.resize(big, 1);
        empty(&mut v);
        assert!(v.is_empty() && v.capacity() >= big, "a full buffer is kept");
        v.resize(100, 1);
        empty(&mut v);
        assert!(
            v.capacity() < KEEP_BYTES,
            "then given back: {}",
            v.capacity()
        );
        let mut small: Vec<u8> = Vec::with_capacity(KEEP_BYTES / 2);
        small.push(1);
        empty(&mut small);
        assert!(small.capacity() >= KEEP_BYTES / 2);
    }

    #[test]
    fn rows_gather_their_fields_in_arrival_order() {
        let mut w = Window::default();
        let src = b"helloworld";
        let a = w.row_for(b"b");
        w.set(a, 0, Val::Int(1), src);
        w.set(a, 70, Val::Int(2), src);
        let b = w.row_for(b"a");
        w.set(b, 0, Val::Text { at: 0, len: 5 }, src);
        assert_eq!(w.row_for(b"b"), a);
        w.set(a, 0, Val::Text { at: 5, len: 5 }, src);
        w.set(a, 70, Val::Null, src);
        assert_eq!(w.rows.len(), 2);
        w.prepare();
        let sorted = w.sorted();
        assert_eq!(sorted.order, vec![b as u32, a as u32], "key order");
        let fields: Vec<Vec<(u32, Val)>> = (0..2).map(|i| sorted.fields(i).collect()).collect();
        // Each text follows its length, one byte here.
        assert_eq!(
            fields,
            vec![
                vec![(0, Val::Text { at: 1, len: 5 })],
                vec![
                    (0, Val::Int(1)),
                    (70, Val::Int(2)),
                    (0, Val::Text { at: 7, len: 5 }),
                    (70, Val::Null)
                ]
            ]
        );
        assert_eq!(sorted.text(7, 5), b"world");
        assert_eq!(sorted.text(1, 5), b"hello");
        assert_eq!((sorted.key(0), sorted.key(1)), (&b"a"[..], &b"b"[..]));
        assert_eq!(w.key(&w.rows[b]), b"a");
        w.clear();
        assert!(w.rows.is_empty() && w.is_empty());
        assert!(w.sorted.fields.is_empty() && w.sorted.text.is_empty());
        assert_eq!(w.row_for(b"a"), 0);
    }

    /// A window of random rows, keys (some sharing a 16-byte prefix) and fields, with
    /// texts of every length; gathered on 1 to 4 threads, every sorted row has exactly
    /// its key and, in arrival order, its fields and their text.
    #[test]
    fn gathering_on_threads_keeps_every_rows_fields_in_order() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut w = Window::default();
        // Each field as (column, kind, bytes): 0 null, 1 an integer, 2 text.
        type Field = (u32, u8, Vec<u8>);
        let mut model: std::collections::BTreeMap<Vec<u8>, Vec<Field>> = Default::default();
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        for _ in 0..20_000 {
            let k = rnd() % 3000;
            let key = if k % 3 == 0 {
                format!("a shared prefix of more than 16 bytes {k}").into_bytes()
            } else {
                k.to_be_bytes()[..(k % 8 + 1) as usize].to_vec()
            };
            let row = w.row_for(&key);
            let col = (rnd() % 40) as u32;
            let (val, kind, bytes) = match rnd() % 3 {
                0 => {
                    let v = rnd() as i64;
                    (Val::Int(v), 1, v.to_le_bytes().to_vec())
                }
                1 => (Val::Null, 0, vec![]),
                _ => {
                    let at = (rnd() % 2048) as usize;
                    let len = (rnd() % 2048) as usize;
                    (Val::Text { at, len }, 2, src[at..at + len].to_vec())
                }
            };
            w.set(row, col, val, &src);
            model.entry(key).or_default().push((col, kind, bytes));
        }
        for parts in 1..=4 {
            w.prepare_in(parts);
            let sorted = w.sorted();
            assert_eq!(sorted.order.len(), model.len());
            for (i, (key, want)) in model.iter().enumerate() {
                assert_eq!(sorted.key(i), &key[..], "parts {parts}, row {i}");
                assert_eq!(w.key(&w.rows[sorted.order[i] as usize]), &key[..]);
                let got: Vec<Field> = sorted
                    .fields(i)
                    .map(|(c, v)| match v {
                        Val::Null => (c, 0, vec![]),
                        Val::Int(v) => (c, 1, v.to_le_bytes().to_vec()),
                        Val::Real(v) => (c, 3, v.to_le_bytes().to_vec()),
                        Val::Text { at, len } => (c, 2, sorted.text(at, len).to_vec()),
                    })
                    .collect();
                assert_eq!(&got, want, "parts {parts}, row {i}");
            }
        }
    }
}
