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
    folded: HashMap<String, usize>,
    /// Notes on keys stored under another name, for the summary.
    pub notes: Vec<String>,
}

impl KeyColumns {
    /// The column of `key`, if it has one.
    #[inline]
    pub fn get(&self, key: &str) -> Option<usize> {
        self.exact.get(key).copied()
    }

    /// A column for a key not seen before.
    pub fn add(&mut self, key: &str) -> usize {
        let i = self.columns.len();
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
        self.exact.insert(key.to_string(), i);
        self.folded.insert(name.to_ascii_lowercase(), i);
        self.columns.push(name);
        i
    }
}
