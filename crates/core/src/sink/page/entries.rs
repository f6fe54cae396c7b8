//! An index's entries for the page writer: gathered while its table is written (in
//! rising rowid order), sorted by SQLite's order of values (spilled to temp files and
//! merged when they outgrow memory), then handed to `liteload-btree` as sorted input.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use liteload_btree::Value as Cell;

use crate::error::{Error, Result};

/// One index's entries, gathered while its table is written (in rising rowid order),
/// until [`IndexEntries::sorted`] orders them.
#[derive(Debug)]
pub struct IndexEntries {
    /// The table columns of the key, in key order.
    pub columns: Vec<usize>,
    /// (key, rowid) per row while every key is one integer: they sort as pairs, and the
    /// page writer encodes their records (16 bytes held per row).
    pairs: Vec<(i64, i64)>,
    /// Otherwise, once the first key that is not one integer came (earlier pairs are
    /// moved here then): each entry's record (key columns, then rowid), one after
    /// another in `data`, entry `i` ending at `ends[i]`.
    records: bool,
    data: Vec<u8>,
    ends: Vec<usize>,
    /// The records once sorted: runs of them in order, each ending at its offsets.
    sorted: Vec<(Vec<u8>, Vec<usize>)>,
    /// Sorted runs written to disk when the entries outgrew their memory, each a
    /// sequence of records in index order, each record its length (8 bytes,
    /// little-endian) then its bytes. The entries held in memory come after them.
    spills: Vec<File>,
    /// The first entry's rowid, while every later one has the next rowid (so entry `i`
    /// has rowid `first + i`, and a sorted entry can be rebuilt from its prefix).
    consecutive: Option<i64>,
    /// Set when the entries outgrew the memory allowed: they were dropped, and SQLite
    /// builds this index on the finished file instead.
    pub given_up: bool,
}

/// An index's entries in SQLite's order (key columns, then rowid), ready for the page
/// writer.
pub enum SortedEntries<'a> {
    /// One integer key: (key, rowid) pairs, strictly increasing.
    IntPairs(Vec<(i64, i64)>),
    /// Records, in [`liteload_btree::index::compare`] order.
    Records(Vec<&'a [u8]>),
}

impl SortedEntries<'_> {
    /// Each entry, in order, as its record's bytes (a pair encoded as a record of two
    /// integers).
    pub fn each_record<E>(
        &self,
        mut each: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        match self {
            SortedEntries::IntPairs(pairs) => {
                let mut rec = vec![];
                for &(k, r) in pairs {
                    rec.clear();
                    liteload_btree::record::encode(&[Cell::Integer(k), Cell::Integer(r)], &mut rec);
                    each(&rec)?;
                }
                Ok(())
            }
            SortedEntries::Records(records) => records.iter().try_for_each(|rec| each(rec)),
        }
    }
}

impl SortedEntries<'_> {
    /// The smallest rowid of an entry whose key (of `keys` columns, none of them NULL)
    /// an entry of a smaller rowid has: the row SQLite's insert path, taking the rows in
    /// rowid order, refuses first under a UNIQUE index.
    pub fn first_repeat(&self, keys: usize) -> Option<i64> {
        use rayon::prelude::*;
        match self {
            SortedEntries::IntPairs(p) => p
                .par_windows(2)
                .filter(|w| w[0].0 == w[1].0)
                .map(|w| w[1].1)
                .min(),
            SortedEntries::Records(r) => r
                .par_windows(2)
                .filter(|w| liteload_btree::index::same_key(w[0], w[1], keys))
                .filter_map(|w| entry_rowid(w[1], keys))
                .min(),
        }
    }

    /// Whether two neighbours have the same key of `keys` columns, none of them NULL
    /// (what a UNIQUE index forbids).
    pub fn has_equal_keys(&self, keys: usize) -> bool {
        use rayon::prelude::*;
        match self {
            SortedEntries::IntPairs(p) => p.par_windows(2).any(|w| w[0].0 == w[1].0),
            SortedEntries::Records(r) => r
                .par_windows(2)
                .any(|w| liteload_btree::index::same_key(w[0], w[1], keys)),
        }
    }
}

impl IndexEntries {
    /// Entries of the index on the table columns `columns`, none gathered yet.
    pub fn new(columns: Vec<usize>) -> Self {
        let records = columns.len() != 1;
        IndexEntries {
            columns,
            pairs: vec![],
            records,
            data: vec![],
            ends: vec![],
            sorted: vec![],
            spills: vec![],
            consecutive: None,
            given_up: false,
        }
    }

    /// The most bytes these entries will take, sorting included: pairs sort in place;
    /// records need their arena and offsets, a 16-byte sort key each, a sorted copy
    /// with its offsets, and a slice each for the page writer.
    pub fn bytes(&self) -> usize {
        self.pairs.len() * std::mem::size_of::<(i64, i64)>()
            + 2 * self.data.len()
            + self.ends.len() * (2 * std::mem::size_of::<usize>() + 16 + 16)
    }

    /// Adds the entry of row `rowid` whose key columns hold `key`. Rows come in rising
    /// rowid order.
    pub(crate) fn push(&mut self, key: &[Cell<'_>], rowid: i64) {
        let count = (self.pairs.len() + self.ends.len()) as i64;
        self.consecutive = match self.consecutive {
            _ if count == 0 => Some(rowid),
            Some(first) if first.checked_add(count) == Some(rowid) => Some(first),
            _ => None,
        };
        if !self.records {
            if let [Cell::Integer(k)] = key {
                self.pairs.push((*k, rowid));
                return;
            }
            self.records = true;
            for (k, r) in std::mem::take(&mut self.pairs) {
                self.push_record(&[Cell::Integer(k), Cell::Integer(r)]);
            }
        }
        let n = key.len();
        if n < 8 {
            let mut entry = [Cell::Null; 8];
            entry[..n].copy_from_slice(key);
            entry[n] = Cell::Integer(rowid);
            self.push_record(&entry[..=n]);
        } else {
            let entry: Vec<Cell<'_>> = key.iter().copied().chain([Cell::Integer(rowid)]).collect();
            self.push_record(&entry);
        }
    }

    fn push_record(&mut self, entry: &[Cell<'_>]) {
        liteload_btree::record::encode(entry, &mut self.data);
        self.ends.push(self.data.len());
    }

    /// Drops the entries: SQLite builds this index on the finished file instead (see
    /// [`IndexEntries::given_up`]).
    pub(crate) fn give_up(&mut self) {
        *self = IndexEntries {
            given_up: true,
            ..IndexEntries::new(std::mem::take(&mut self.columns))
        }
    }

    /// Whether sorted runs were written to disk (see [`IndexEntries::merge`]).
    pub fn spilled(&self) -> bool {
        !self.spills.is_empty()
    }

    /// Sorts the entries held and writes them as a run to a temporary file in `dir`
    /// (removed when closed), then holds none.
    pub fn spill(&mut self, dir: &Path) -> Result<()> {
        let io = |e| Error::io(Some(dir.to_path_buf()), e);
        let mut file = tempfile::tempfile_in(dir).map_err(io)?;
        {
            let mut out = BufWriter::with_capacity(1 << 20, &mut file);
            let mut put = |rec: &[u8]| -> std::io::Result<()> {
                out.write_all(&(rec.len() as u64).to_le_bytes())?;
                out.write_all(rec)
            };
            match self.sorted() {
                Some(sorted) => sorted.each_record(&mut put).map_err(io)?,
                None => return Err(Error::internal("index entries given up cannot be spilled")),
            }
            out.flush().map_err(io)?;
        }
        file.rewind().map_err(io)?;
        self.spills.push(file);
        self.pairs = vec![];
        self.data = vec![];
        self.ends = vec![];
        self.sorted = vec![];
        self.consecutive = None;
        Ok(())
    }

    /// Every entry, spilled runs and those held alike, in SQLite's index order, one at a
    /// time to `each`: the held entries are spilled to `dir` too, then the runs are
    /// merged (memory: one entry and a read buffer per run).
    pub fn merge(&mut self, dir: &Path, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        use std::cmp::Ordering;
        use std::collections::BinaryHeap;
        if !self.pairs.is_empty() || !self.ends.is_empty() {
            self.spill(dir)?;
        }
        let io = |e| Error::io(Some(dir.to_path_buf()), e);
        let mut runs: Vec<BufReader<File>> = std::mem::take(&mut self.spills)
            .into_iter()
            .map(|f| BufReader::with_capacity(1 << 16, f))
            .collect();
        let read = |run: &mut BufReader<File>| -> std::io::Result<Option<Vec<u8>>> {
            let mut len = [0u8; 8];
            match run.read_exact(&mut len) {
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                r => r?,
            }
            let len = u64::from_le_bytes(len);
            if len > 1 << 32 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a spilled index run is damaged",
                ));
            }
            let mut rec = vec![0; len as usize];
            run.read_exact(&mut rec)?;
            Ok(Some(rec))
        };
        /// A run's next entry; the heap's greatest is the entry first in index order.
        struct Head {
            rec: Vec<u8>,
            run: usize,
        }
        impl Ord for Head {
            fn cmp(&self, other: &Self) -> Ordering {
                liteload_btree::index::compare(&other.rec, &self.rec)
            }
        }
        impl PartialOrd for Head {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }
        impl PartialEq for Head {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other) == Ordering::Equal
            }
        }
        impl Eq for Head {}
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (run, r) in runs.iter_mut().enumerate() {
            if let Some(rec) = read(r).map_err(io)? {
                heap.push(Head { rec, run });
            }
        }
        while let Some(Head { rec, run }) = heap.pop() {
            each(&rec)?;
            if let Some(next) = read(&mut runs[run]).map_err(io)? {
                heap.push(Head { rec: next, run });
            }
        }
        Ok(())
    }

    /// The entries in SQLite's index order (key columns, then rowid), sorted on every
    /// core; `None` when they were given up (SQLite builds such an index).
    ///
    /// Records are sorted by a 64-bit prefix of their order
    /// ([`liteload_btree::index::sort_prefix`]); only entries whose prefixes tie are
    /// decoded and compared, and not even those when both prefixes hold the whole key
    /// (then gathering order, which is rowid order, decides). Comparing decoded records
    /// for every pair measured slower than SQLite's own `CREATE INDEX` (a text key:
    /// 16.1 s against 8.7 s for 10M rows).
    pub fn sorted(&mut self) -> Option<SortedEntries<'_>> {
        use rayon::prelude::*;
        if self.given_up {
            return None;
        }
        if !self.records {
            let mut pairs = std::mem::take(&mut self.pairs);
            pairs.par_sort_unstable();
            return Some(SortedEntries::IntPairs(pairs));
        }
        let keys = self.columns.len();
        // Per entry: (prefix, its number), the number's top bit set when the prefix
        // holds the whole key.
        const WHOLE: u64 = 1 << 63;
        let data = &self.data;
        let ends = &self.ends;
        let record = |i: usize| &data[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        let mut order: Vec<(u64, u64)> = (0..ends.len())
            .into_par_iter()
            .map(|i| {
                let (prefix, whole) = liteload_btree::index::sort_prefix(record(i), keys);
                (prefix, i as u64 | if whole { WHOLE } else { 0 })
            })
            .collect();
        if order.par_iter().all(|k| k.1 & WHOLE != 0) {
            // Every key held whole by its prefix: (prefix, number) is the order, and
            // integers sort faster than a comparison that looks at flags.
            order.par_sort_unstable();
        } else {
            order.par_sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| {
                    if a.1 & b.1 & WHOLE != 0 {
                        a.1.cmp(&b.1)
                    } else {
                        let (i, j) = ((a.1 & !WHOLE) as usize, (b.1 & !WHOLE) as usize);
                        liteload_btree::index::compare(record(i), record(j))
                    }
                })
            });
        }
        // The records in sorted order, a run per task: the page writer reads them twice
        // (to check them, then to write them), and passes over records in order
        // measured far faster than over records scattered through the arena. An entry
        // whose prefix holds its key (NULL, or text or a blob of up to 6 bytes) is
        // rebuilt from the prefix and its rowid instead of read: copying 10M scattered
        // records took 0.5 s.
        let first = self.consecutive;
        let runs: Vec<(Vec<u8>, Vec<usize>)> = order
            .par_chunks(1 << 16)
            .map(|run| {
                let mut buf = Vec::new();
                let mut ends = Vec::with_capacity(run.len());
                for &(prefix, tag) in run {
                    let i = (tag & !WHOLE) as usize;
                    let rebuilt = tag & WHOLE != 0
                        && first.is_some_and(|first| {
                            liteload_btree::index::entry_from_prefix(
                                prefix,
                                first + i as i64,
                                &mut buf,
                            )
                        });
                    if !rebuilt {
                        buf.extend_from_slice(record(i));
                    }
                    ends.push(buf.len());
                }
                (buf, ends)
            })
            .collect();
        drop(order);
        self.data = vec![];
        self.ends = vec![];
        self.sorted = runs;
        Some(SortedEntries::Records(
            self.sorted
                .iter()
                .flat_map(|(buf, ends)| {
                    ends.iter().scan(0, |from, &to| {
                        let record = &buf[*from..to];
                        *from = to;
                        Some(record)
                    })
                })
                .collect(),
        ))
    }
}

/// The rowid of an index entry of `keys` key columns (its last column).
pub fn entry_rowid(entry: &[u8], keys: usize) -> Option<i64> {
    match liteload_btree::Record::parse(entry).ok()?.column(keys)? {
        Cell::Integer(i) => Some(i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liteload_btree::index::compare;
    use proptest::prelude::*;

    /// Values that meet at every edge of the sort prefix: integers past ±2^53 and at
    /// the i64 limits, reals equal to integers, -0.0 and 0.0, NaN (stored as NULL), text
    /// of 6 and 7 bytes, with NUL bytes and non-ASCII, long text, blobs and NULL.
    fn value() -> impl Strategy<Value = Val> {
        let ints = prop_oneof![
            (-3i64..4),
            Just(i64::MAX),
            Just(i64::MIN),
            Just((1 << 53) + 1),
            Just(1 << 53),
            Just(-(1 << 53) - 1),
            any::<i64>(),
        ];
        let text = prop_oneof![
            Just(String::new()),
            Just("a".to_string()),
            Just("a\0".to_string()),
            Just("abcdef".to_string()),
            Just("abcdefg".to_string()),
            Just("abcdef\0".to_string()),
            Just("é✓".to_string()),
            "[a\\x00é]{0,9}",
            "x{990,1100}",
        ];
        prop_oneof![
            3 => ints.prop_map(Val::Int),
            1 => prop_oneof![
                Just(0.0),
                Just(-0.0),
                Just(f64::NAN),
                Just(9_007_199_254_740_992.0),
                Just(9.223_372_036_854_776e18),
                Just(-2.5),
                Just(3.0),
                any::<f64>(),
            ]
            .prop_map(Val::Real),
            2 => text.prop_map(Val::Text),
            1 => prop::collection::vec(any::<u8>(), 0..9).prop_map(Val::Blob),
            1 => Just(Val::Null),
        ]
    }

    #[derive(Clone, Debug)]
    enum Val {
        Null,
        Int(i64),
        Real(f64),
        Text(String),
        Blob(Vec<u8>),
    }

    impl Val {
        fn cell(&self) -> Cell<'_> {
            match self {
                Val::Null => Cell::Null,
                Val::Int(i) => Cell::Integer(*i),
                Val::Real(f) => Cell::Real(*f),
                Val::Text(t) => Cell::Text(t.as_bytes()),
                Val::Blob(b) => Cell::Blob(b),
            }
        }
    }

    /// The entries of `keys`, gathered for rowids 1, 2, … (or, with `gaps`, 1, 4, 7, …:
    /// then no entry is rebuilt from its prefix) and sorted, against the same entries
    /// sorted by `compare` (a total order: the rowids differ).
    fn sorts_as_compare(keys: &[Vec<Val>], gaps: bool) -> Result<(), TestCaseError> {
        let rowid = |i: usize| if gaps { 1 + 3 * i as i64 } else { 1 + i as i64 };
        let width = keys.first().map_or(1, Vec::len);
        let mut ix = IndexEntries::new((0..width).collect());
        let mut want: Vec<Vec<u8>> = vec![];
        for (i, key) in keys.iter().enumerate() {
            let cells: Vec<Cell<'_>> = key.iter().map(Val::cell).collect();
            ix.push(&cells, rowid(i));
            let mut entry = cells.clone();
            entry.push(Cell::Integer(rowid(i)));
            let mut rec = vec![];
            liteload_btree::record::encode(&entry, &mut rec);
            want.push(rec);
        }
        want.sort_by(|a, b| compare(a, b));
        let got: Vec<Vec<u8>> = match ix.sorted().expect("not given up") {
            SortedEntries::IntPairs(pairs) => pairs
                .iter()
                .map(|&(k, r)| {
                    let mut rec = vec![];
                    liteload_btree::record::encode(&[Cell::Integer(k), Cell::Integer(r)], &mut rec);
                    rec
                })
                .collect(),
            SortedEntries::Records(r) => r.iter().map(|e| e.to_vec()).collect(),
        };
        prop_assert_eq!(got, want);
        Ok(())
    }

    /// The entries of `keys` (rowids 1, 2, …) spilled to a run every `every` entries,
    /// then merged, against the same entries sorted by `compare`.
    fn merges_as_compare(keys: &[Val], every: usize) -> Result<(), TestCaseError> {
        let d = tempfile::tempdir().expect("a temporary directory");
        let mut ix = IndexEntries::new(vec![0]);
        let mut want: Vec<Vec<u8>> = vec![];
        for (i, key) in keys.iter().enumerate() {
            let rowid = i as i64 + 1;
            ix.push(&[key.cell()], rowid);
            let mut rec = vec![];
            liteload_btree::record::encode(&[key.cell(), Cell::Integer(rowid)], &mut rec);
            want.push(rec);
            if (i + 1) % every == 0 {
                ix.spill(d.path()).expect("spilled");
            }
        }
        want.sort_by(|a, b| compare(a, b));
        let mut got: Vec<Vec<u8>> = vec![];
        ix.merge(d.path(), |rec| {
            got.push(rec.to_vec());
            Ok(())
        })
        .expect("merged");
        prop_assert_eq!(got, want);
        prop_assert!(!ix.spilled());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn spilled_runs_merge_into_sqlites_order(
            keys in prop::collection::vec(value(), 0..300),
            every in 1usize..80,
        ) {
            merges_as_compare(&keys, every)?;
        }

        #[test]
        fn spilled_integer_runs_merge_into_sqlites_order(
            keys in prop::collection::vec(-5i64..5, 0..300),
            every in 1usize..80,
        ) {
            let keys: Vec<Val> = keys.into_iter().map(Val::Int).collect();
            merges_as_compare(&keys, every)?;
        }

        #[test]
        fn one_column_keys_sort_as_sqlite_orders_them(
            keys in prop::collection::vec(value(), 0..300),
            gaps in any::<bool>(),
        ) {
            let keys: Vec<Vec<Val>> = keys.into_iter().map(|v| vec![v]).collect();
            sorts_as_compare(&keys, gaps)?;
        }

        #[test]
        fn integer_keys_sort_as_pairs_until_another_kind_comes(
            ints in prop::collection::vec(-5i64..5, 0..200),
            then in value(),
        ) {
            let mut keys: Vec<Vec<Val>> = ints.into_iter().map(|i| vec![Val::Int(i)]).collect();
            sorts_as_compare(&keys, false)?;
            keys.push(vec![then]);
            sorts_as_compare(&keys, false)?;
        }

        #[test]
        fn two_column_keys_sort_as_sqlite_orders_them(
            keys in prop::collection::vec((value(), value()), 0..200),
        ) {
            let keys: Vec<Vec<Val>> = keys.into_iter().map(|(a, b)| vec![a, b]).collect();
            sorts_as_compare(&keys, false)?;
        }
    }
}
