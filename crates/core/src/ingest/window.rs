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
//! - `rows[i].len` is the number of entries whose `row` is `i`;
//! - text values of entries lie inside `text`.

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
}

/// One field set by a message: its row, column and value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub row: u32,
    pub col: u32,
    pub val: Val,
}

/// A window's rows in key order with their fields side by side: what the writer walks.
/// Row `order[i]`'s fields are `fields[starts[i]..starts[i + 1]]`, in arrival order (a
/// column may appear more than once; the last is its value).
pub(crate) struct Sorted {
    pub order: Vec<u32>,
    pub starts: Vec<usize>,
    pub fields: Vec<(u32, Val)>,
}

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
}

impl Window {
    /// The row for `key`, added empty if the window has none yet.
    pub fn row_for(&mut self, key: &[u8]) -> usize {
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
        let val = match val {
            Val::Text { at, len } => {
                let here = self.text.len();
                self.text.extend_from_slice(&src[at..at + len]);
                Val::Text { at: here, len }
            }
            v => v,
        };
        self.entries.push(Entry {
            row: row as u32,
            col,
            val,
        });
        self.rows[row].len += 1;
    }

    /// The rows in key order (byte order of the encoded keys), each with its fields
    /// gathered in one place, in arrival order.
    pub fn sorted(&self) -> Sorted {
        let prefix = |k: &[u8]| {
            let mut b = [0u8; 16];
            let n = k.len().min(16);
            b[..n].copy_from_slice(&k[..n]);
            u128::from_be_bytes(b)
        };
        let mut keyed: Vec<(u128, u32)> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (prefix(self.key(r)), i as u32))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| {
                self.key(&self.rows[a.1 as usize])
                    .cmp(self.key(&self.rows[b.1 as usize]))
            })
        });
        let order: Vec<u32> = keyed.into_iter().map(|(_, r)| r).collect();
        let mut rank = vec![0u32; self.rows.len()];
        let mut starts = Vec::with_capacity(order.len() + 1);
        starts.push(0);
        for (i, &r) in order.iter().enumerate() {
            rank[r as usize] = i as u32;
            starts.push(starts[i] + self.rows[r as usize].len as usize);
        }
        let mut next = starts.clone();
        let mut fields = vec![(0u32, Val::Null); self.entries.len()];
        for e in &self.entries {
            let at = &mut next[rank[e.row as usize] as usize];
            fields[*at] = (e.col, e.val);
            *at += 1;
        }
        debug_assert!(order
            .iter()
            .enumerate()
            .all(|(i, _)| next[i] == starts[i + 1]));
        Sorted {
            order,
            starts,
            fields,
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
        self.keys.clear();
        self.text.clear();
        self.index.clear();
        self.rows.clear();
        self.entries.clear();
        self.history.clear();
        self.messages = 0;
        self.rejects = 0;
        self.start = None;
        self.position = None;
        self.mismatches = 0;
        self.columns.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sorted = w.sorted();
        assert_eq!(sorted.order, vec![b as u32, a as u32], "key order");
        assert_eq!(sorted.starts, vec![0, 1, 5]);
        let world = Val::Text { at: 5, len: 5 };
        assert_eq!(
            sorted.fields[1..].to_vec(),
            vec![
                (0, Val::Int(1)),
                (70, Val::Int(2)),
                (0, world),
                (70, Val::Null)
            ]
        );
        assert_eq!(&w.text[5..10], b"world");
        assert_eq!(w.key(&w.rows[b]), b"a");
        w.clear();
        assert!(w.rows.is_empty() && w.is_empty());
        assert_eq!(w.row_for(b"a"), 0);
    }
}
