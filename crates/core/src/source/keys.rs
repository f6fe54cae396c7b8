//! Columns named by the keys of records (JSON objects, serialized structs and maps),
//! in the order keys are first seen.

// hashbrown's default hasher (foldhash): SipHash was 7% of reading JSON lines.
use hashbrown::HashMap;

/// Columns for keys. A column's name is its key, unless that is blank (`cN`) or the same
/// to SQLite as an earlier column's, ignoring ASCII case (then `KEY_2`, `KEY_3`, …): the
/// rule CSV headers follow (see [`crate::schema::clean_names`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyColumns {
    /// Column names, in order.
    pub columns: Vec<String>,
    exact: HashMap<String, usize>,
    /// The keys of up to 16 bytes again, for [`get`](Self::get).
    short: ShortKeys,
    folded: HashMap<String, usize>,
    /// Notes on keys stored under another name, for the summary.
    pub notes: Vec<String>,
    /// The separator of a flattened key's column name (see [`PART`]); `None`: records
    /// are not flattened.
    pub flatten: Option<String>,
}

/// Joins the keys of a flattened member's path (`owner`, `address`, `city`) into the
/// one key a reader looks its column up by. A NUL, which no key with a column holds
/// (SQLite's SQL text ends at one), so two paths never share a key, whatever their
/// names; their column names are the keys joined by the separator, which may collide,
/// and then take the allocator's `_2`.
pub(crate) const PART: char = '\0';

impl KeyColumns {
    /// The column of `key`, if it has one.
    #[inline]
    pub fn get(&self, key: &str) -> Option<usize> {
        if key.len() <= ShortKeys::MAX {
            self.short.get(key.as_bytes())
        } else {
            self.exact.get(key).copied()
        }
    }

    /// A column for a key not seen before, named `wanted` unless that is taken; then
    /// `alternative` (when given and free), else `wanted_2`, `wanted_3`, …. A name other
    /// than `wanted` is noted, the key described as `what`.
    pub fn add_named(
        &mut self,
        key: &str,
        wanted: &str,
        alternative: Option<&str>,
        what: &str,
    ) -> usize {
        let free = |n: &str| !self.folded.contains_key(&n.to_ascii_lowercase());
        let name = match alternative {
            _ if free(wanted) => wanted.to_string(),
            Some(a) if free(a) => a.to_string(),
            _ => {
                let mut k = 2;
                while !free(&format!("{wanted}_{k}")) {
                    k += 1;
                }
                format!("{wanted}_{k}")
            }
        };
        if name != wanted {
            self.notes
                .push(format!("{what} is stored in column {name:?}"));
        }
        self.insert(key, name)
    }

    /// Makes `name` the column of `key`.
    fn insert(&mut self, key: &str, name: String) -> usize {
        let i = self.columns.len();
        self.exact.insert(key.to_string(), i);
        if key.len() <= ShortKeys::MAX {
            self.short.insert(key.as_bytes(), i);
        }
        self.folded.insert(name.to_ascii_lowercase(), i);
        self.columns.push(name);
        i
    }

    /// Columns for records whose nested objects are flattened, named by their paths'
    /// keys joined by `separator`.
    pub fn flattening(separator: Option<String>) -> Self {
        KeyColumns {
            flatten: separator,
            ..KeyColumns::default()
        }
    }

    /// A column for a key not seen before.
    pub fn add(&mut self, key: &str) -> usize {
        let i = self.columns.len();
        if let (Some(sep), true) = (&self.flatten, key.contains(PART)) {
            let parts: Vec<&str> = key.split(PART).collect();
            let mut wanted = parts.join(sep);
            if wanted.trim().is_empty() {
                wanted = format!("c{}", i + 1);
            }
            let what = format!("the member at {:?}", parts.join(" > "));
            return self.add_named(key, &wanted, None, &what);
        }
        let base = if key.trim().is_empty() {
            format!("c{}", i + 1)
        } else {
            key.to_string()
        };
        let mut name = base.clone();
        let mut k = 2;
        while self.folded.contains_key(&name.to_ascii_lowercase()) {
            name = format!("{base}_{k}");
            k += 1;
        }
        if name != key {
            self.notes
                .push(format!("key {key:?} is stored in column {name:?}"));
        }
        self.insert(key, name)
    }
}

/// Keys of up to [`ShortKeys::MAX`] bytes in an open-addressed table, each held as its
/// length and two zero-padded little-endian words, so that a lookup is one hash of
/// those words and word compares, with no call to `memcmp`.
///
/// Hand-written because it measured faster: on the 1.42M-object feed of bench/README.md,
/// whose keys are a few bytes long, `HashMap::get` and its `memcmp` were 10% of all CPU
/// of a JSON load, this table is 6%, and the array loads in 0.98 s instead of 1.025 s
/// (medians of 6, interleaved).
///
/// Invariants: `slots.len()` is 0 or a power of two, more than twice the keys held; a
/// slot with `tag` 0 is empty, else `tag` is the key's length plus one; a key is in the
/// first empty-or-equal slot probing linearly from its hash.
#[derive(Clone, Debug, Default)]
struct ShortKeys {
    slots: Vec<Slot>,
    len: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    lo: u64,
    hi: u64,
    tag: u8,
    column: usize,
}

impl ShortKeys {
    /// The longest key held, in bytes.
    const MAX: usize = 16;

    /// `key` (at most [`MAX`](Self::MAX) bytes) as two words and a tag (its length plus
    /// one). For a given length every byte lands in a fixed place of the words, so two
    /// keys are equal exactly when their words and tags are. The words are loaded
    /// whole, overlapping where the key is short: bytes copied one by one into a buffer
    /// read back as words stalled each lookup on store forwarding.
    #[inline]
    fn words(key: &[u8]) -> (u64, u64, u8) {
        let n = key.len();
        let w8 = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"));
        let w4 = |at: usize| {
            u64::from(u32::from_le_bytes(
                key[at..at + 4].try_into().expect("4 bytes"),
            ))
        };
        let (lo, hi) = match n {
            8.. => (w8(0), w8(n - 8)),
            4..=7 => (w4(0) | w4(n - 4) << 32, 0),
            1..=3 => (
                u64::from(key[0]) | u64::from(key[n / 2]) << 8 | u64::from(key[n - 1]) << 16,
                0,
            ),
            0 => (0, 0),
        };
        (lo, hi, n as u8 + 1)
    }

    #[inline]
    fn home(&self, lo: u64, hi: u64, tag: u8) -> usize {
        // The product's top bits: the only ones that every bit of the words reaches.
        let h = (lo ^ hi.rotate_left(29) ^ u64::from(tag)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// The column of `key` (at most [`MAX`](Self::MAX) bytes), if it has one.
    #[inline]
    fn get(&self, key: &[u8]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let (lo, hi, tag) = Self::words(key);
        let mask = self.slots.len() - 1;
        let mut i = self.home(lo, hi, tag);
        loop {
            let s = &self.slots[i];
            if s.tag == 0 {
                return None;
            }
            if s.tag == tag && s.lo == lo && s.hi == hi {
                return Some(s.column);
            }
            i = (i + 1) & mask;
        }
    }

    /// Holds `key` (at most [`MAX`](Self::MAX) bytes, not held yet) for `column`.
    fn insert(&mut self, key: &[u8], column: usize) {
        if (self.len + 1) * 2 >= self.slots.len() {
            let grown = vec![Slot::default(); (self.slots.len() * 2).max(16)];
            let old = std::mem::replace(&mut self.slots, grown);
            for s in old.into_iter().filter(|s| s.tag != 0) {
                self.place(s);
            }
        }
        let (lo, hi, tag) = Self::words(key);
        self.place(Slot {
            lo,
            hi,
            tag,
            column,
        });
        self.len += 1;
    }

    fn place(&mut self, s: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(s.lo, s.hi, s.tag);
        while self.slots[i].tag != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            // Short keys sharing prefixes and lengths, NUL and non-ASCII included.
            "[ab\\x00é]{0,9}",
            "[a-z0-9_]{0,20}",
            "text[0-9]{1,3}",
            ".{0,18}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every key finds the column it was added as, and no other key finds one: the
        /// same answers as a `HashMap` of the keys.
        #[test]
        fn keys_find_their_columns_as_a_map_does(
            added in prop::collection::vec(key(), 0..120),
            probes in prop::collection::vec(key(), 0..60),
        ) {
            let mut keys = KeyColumns::default();
            let mut model = std::collections::HashMap::new();
            for k in &added {
                if !model.contains_key(k) {
                    let c = keys.add(k);
                    model.insert(k.clone(), c);
                }
            }
            for k in added.iter().chain(&probes) {
                prop_assert_eq!(keys.get(k), model.get(k).copied(), "key {:?}", k);
            }
        }
    }
}
