//! The copy of SQLite files into a new file by the page writer, records moved as they
//! are stored: no value is decoded, no b-tree is searched, no page is split. Each
//! table's rows are read in rowid order from every input's pages and written as the new
//! table's leaves; each index's entries are read in order from every input's copy of
//! the index and merged (a k-way merge, rowids rewritten where rows are numbered anew).
//!
//! It makes the file the merge rules of the parent module make, and is taken only where
//! it surely does ([`copy`] says why not otherwise, and SQLite's own `INSERT … SELECT`
//! copies instead):
//! - the target is a new file (`atomic-new`), the engine not SQLite's by request;
//! - every input is in a rollback-journal mode, and its pages are what
//!   `liteload_btree::Existing` reads (see [`crate::source::stored`]);
//! - a table held by several inputs is declared by the same `CREATE TABLE` text in each,
//!   with the same indexes (names and texts), none UNIQUE, none (and no column) with a
//!   collation or a descending key (the merge orders entries by SQLite's BINARY
//!   ascending order); no table is `WITHOUT ROWID` or `AUTOINCREMENT`, and every index
//!   has its statement (an automatic index of a constraint only where one input holds
//!   the table);
//! - rowids kept (an INTEGER PRIMARY KEY, a table from one input, or rowids kept on
//!   request) increase from one input to the next: where they do not, rows would have
//!   to interleave or conflict, and the copy goes back to SQLite's road (the file begun
//!   is removed).
//!
//! The records' values are those SQLite stored under the same declaration, so they
//! need no affinity, constraint or default applied again; each record and entry is
//! still checked to be one, and SQLite reads the finished file back (and checks it, with
//! `verify`) before it is put in place.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::atomic::Ordering as AtomicOrdering;

use liteload_btree::index::{compare, with_rowid};
use liteload_btree::{OldEntries, Record, Records};

use super::{Rowid, Source, SqliteOptions};
use crate::error::{Error, Result};
use crate::options::{Engine, ImportOptions};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::sink::page::file::DEFAULT_PAGE_SIZE;
use crate::sink::page::stored::{Refused, StoredWriter};
use crate::source::stored::{At, Pages, SchemaRow, StoredFile};
use crate::summary::{EngineUsed, Summary};

/// What [`copy`] did: the copy, or why it does not apply here (nothing written).
pub(super) enum Outcome {
    Done(Box<Summary>),
    NotHere(String),
}

/// A table of the new file and where its rows come from.
struct Table {
    name: String,
    sql: String,
    /// Each input holding it (index into the inputs) and its root page there.
    from: Vec<(usize, u32)>,
    /// Rows numbered anew, in order, from 1.
    renumber: bool,
    /// The name the implicit rowid is read by, where one reaches it.
    rowid: Option<&'static str>,
    indexes: Vec<Index>,
}

/// An index of a table of the new file: its name, statement (`None`: a constraint's
/// automatic index) and root page in each input, in the table's `from` order.
struct Index {
    name: String,
    sql: Option<String>,
    roots: Vec<u32>,
}

/// How one input's rowids of a table map to the new file's.
#[derive(Clone, PartialEq, Debug)]
enum Rowids {
    /// Kept.
    Same,
    /// Shifted by this much (the input's rowids run without a gap).
    Shift(i64),
    /// The input's rowids in order: rowid `old` becomes `base + 1 +` its place.
    Ranked { base: i64, old: Vec<i64> },
}

impl Rowids {
    fn new_rowid(&self, old: i64) -> Option<i64> {
        match self {
            Rowids::Same => Some(old),
            Rowids::Shift(d) => old.checked_add(*d),
            Rowids::Ranked { base, old: all } => {
                all.binary_search(&old).ok().map(|i| base + 1 + i as i64)
            }
        }
    }
}

/// Whether the copy may go by the page writer at all (before any input is opened).
pub(super) fn may_apply(db: &Path, opts: &ImportOptions) -> bool {
    opts.engine != Engine::Sqlite
        && matches!(
            opts.durability,
            None | Some(crate::durability::Durability::AtomicNew)
        )
        && !db.exists()
}

/// Copies `sources` (read by the parent module) into the new file `db` by the page
/// writer, if the module's conditions hold (else `NotHere`, nothing written).
pub(super) fn copy(
    db: &Path,
    sources: &[Source],
    sq: &SqliteOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Outcome> {
    let mut files = Vec::with_capacity(sources.len());
    for s in sources {
        match StoredFile::open(&s.path)? {
            Ok(f) => files.push(f),
            Err(why) => return Ok(Outcome::NotHere(why)),
        }
    }
    let tables = match plan(sources, &files, sq)? {
        Ok(t) => t,
        Err(why) => return Ok(Outcome::NotHere(why)),
    };
    let page_size = opts.file.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    let mut out = StoredWriter::create(db, page_size, opts.verify, progress)?;
    let mut rows_total = 0u64;
    for t in &tables {
        match write_table(&mut out, t, &files, progress)? {
            Ok(n) => rows_total += n,
            Err(why) => return Ok(Outcome::NotHere(why)),
        }
    }
    let notes = std::mem::take(&mut out.notes);
    out.finish()?;
    drop(files);
    let mut summary = Summary {
        rows: rows_total,
        tables: tables.iter().map(|t| t.name.clone()).collect(),
        engine: Some(EngineUsed::Direct),
        verified: opts.verify,
        notes,
        ..Summary::default()
    };
    for s in sources {
        summary.notes.extend(s.skipped.iter().cloned());
    }
    Ok(Outcome::Done(Box::new(summary)))
}

/// The words of a statement, upper-cased: runs of letters, digits and `_`.
fn words(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
}

/// The tables of the new file, in the order the parent module makes them, with their
/// inputs' root pages read under the snapshot; `Err(why)` where the module's conditions
/// do not hold.
fn plan(
    sources: &[Source],
    files: &[StoredFile],
    sq: &SqliteOptions,
) -> Result<std::result::Result<Vec<Table>, String>> {
    let schemas = files
        .iter()
        .map(StoredFile::schema)
        .collect::<Result<Vec<Vec<SchemaRow>>>>()?;
    let mut tables: Vec<Table> = vec![];
    for (i, s) in sources.iter().enumerate() {
        let shown = s.path.display();
        for t in &s.tables {
            let Some(row) = schemas[i]
                .iter()
                .find(|r| r.kind == "table" && r.name == t.name)
            else {
                return Ok(Err(format!("{shown} changed while it was read")));
            };
            if row.sql.as_deref() != Some(t.sql.as_str()) {
                return Ok(Err(format!("{shown} changed while it was read")));
            }
            if t.without_rowid {
                return Ok(Err(format!(
                    "table {} is WITHOUT ROWID",
                    quote_ident(&t.name)
                )));
            }
            if words(&t.sql).any(|w| w == "AUTOINCREMENT") {
                return Ok(Err(format!(
                    "table {} is AUTOINCREMENT",
                    quote_ident(&t.name)
                )));
            }
            let indexes: Vec<&SchemaRow> = schemas[i]
                .iter()
                .filter(|r| r.kind == "index" && r.table.eq_ignore_ascii_case(&t.name))
                .collect();
            if let Some(p) = tables
                .iter_mut()
                .find(|p| p.name.eq_ignore_ascii_case(&t.name))
            {
                if p.sql != t.sql {
                    return Ok(Err(format!(
                        "table {} is declared otherwise in {shown}",
                        quote_ident(&t.name)
                    )));
                }
                if indexes.len() != p.indexes.len()
                    || indexes
                        .iter()
                        .zip(&p.indexes)
                        .any(|(r, x)| r.name != x.name || r.sql != x.sql)
                {
                    return Ok(Err(format!(
                        "table {} has other indexes in {shown}",
                        quote_ident(&t.name)
                    )));
                }
                p.from.push((i, row.root));
                for (x, r) in p.indexes.iter_mut().zip(&indexes) {
                    x.roots.push(r.root);
                }
                continue;
            }
            tables.push(Table {
                name: t.name.clone(),
                sql: t.sql.clone(),
                from: vec![(i, row.root)],
                renumber: false,
                rowid: None,
                indexes: indexes
                    .iter()
                    .map(|r| Index {
                        name: r.name.clone(),
                        sql: r.sql.clone(),
                        roots: vec![r.root],
                    })
                    .collect(),
            });
        }
    }
    for t in &mut tables {
        let merged = t.from.len() > 1;
        let first = &sources[t.from[0].0];
        let rowid = first
            .tables
            .iter()
            .find(|x| x.name == t.name)
            .map(|x| x.rowid);
        if sq.keep_rowids && rowid == Some(Rowid::Hidden) {
            // No name reaches those rowids: SQLite's road numbers them anew, and says so.
            return Ok(Err(format!(
                "table {} has no name for its rowid",
                quote_ident(&t.name)
            )));
        }
        t.renumber = merged && !sq.keep_rowids && rowid != Some(Rowid::Data);
        if let Some(Rowid::Implicit(name)) = rowid {
            t.rowid = Some(name);
        }
        if !merged {
            continue;
        }
        let ordered = |sql: &str| !words(sql).any(|w| w == "COLLATE" || w == "DESC");
        if !ordered(&t.sql) {
            return Ok(Err(format!(
                "table {} declares a collation or a descending key",
                quote_ident(&t.name)
            )));
        }
        for x in &t.indexes {
            match &x.sql {
                None => {
                    return Ok(Err(format!(
                        "table {} has a UNIQUE or PRIMARY KEY constraint",
                        quote_ident(&t.name)
                    )))
                }
                Some(sql) if words(sql).any(|w| w == "UNIQUE") || !ordered(sql) => {
                    return Ok(Err(format!(
                        "index {} is UNIQUE, or has a collation or a descending key",
                        quote_ident(&x.name)
                    )))
                }
                Some(_) => {}
            }
        }
    }
    if tables.is_empty() {
        return Err(Error::usage("the inputs have no table to copy"));
    }
    // Every name once in the new file (as SQLite compares names): tables of several
    // inputs may bring indexes of one name, which SQLite's road renames.
    let mut names = std::collections::HashSet::new();
    for t in &tables {
        for name in std::iter::once(&t.name).chain(t.indexes.iter().map(|x| &x.name)) {
            if !names.insert(name.to_ascii_lowercase()) {
                return Ok(Err(format!(
                    "the name {} is taken twice among the inputs' tables and indexes",
                    quote_ident(name)
                )));
            }
        }
    }
    Ok(Ok(tables))
}

/// Entries merged ahead of the writer on a thread of their own, at most this many
/// batches of [`BATCH_BYTES`] (256 MiB): the writer takes them once the table's rows
/// are written, so that the index merge runs beside the table's copy.
const AHEAD_BATCHES: usize = 256;
const BATCH_BYTES: usize = 1 << 20;

/// Index entries merged ahead, each checked to be a record.
#[derive(Default)]
struct Batch {
    entries: Records,
    /// The last batch of an index.
    last: bool,
}

/// Writes table `t` and its indexes; the rows written, or why this road cannot copy
/// them (rowids that do not increase from one input to the next, index entries out of
/// SQLite's order). Where rowids are kept, the indexes are merged on another thread
/// while the rows are written.
fn write_table(
    out: &mut StoredWriter<'_>,
    t: &Table,
    files: &[StoredFile],
    progress: &Progress,
) -> Result<std::result::Result<u64, String>> {
    let pages: Vec<Pages<'_>> = files.iter().map(StoredFile::pages).collect();
    // Where rows are numbered anew, each input's new rowids are guessed before its rows
    // are read (no gap), so the merge need not wait for them.
    let known = match (t.renumber, t.rowid, t.indexes.is_empty()) {
        (false, _, _) => Some(vec![Rowids::Same; t.from.len()]),
        (true, Some(name), false) => Some(guessed_rowids(t, files, name)?),
        _ => None,
    };
    let ahead = !t.indexes.is_empty() && known.is_some();
    std::thread::scope(|scope| {
        let (tx, mut rx) = std::sync::mpsc::sync_channel::<Batch>(AHEAD_BATCHES);
        let merger = ahead.then(|| {
            let (pages, maps) = (&pages, known.as_deref().unwrap_or_default());
            scope.spawn(move || -> Result<std::result::Result<(), String>> {
                for x in &t.indexes {
                    let mut batch = Batch::default();
                    let merged = merge_index(t, x, pages, maps, progress, |entry| {
                        batch.entries.push_record(entry);
                        // The entries' bytes and their ends (8 bytes each) count.
                        let held = batch.entries.byte_len() + 8 * batch.entries.len();
                        if held >= BATCH_BYTES {
                            // The writer stopped: nothing more is wanted.
                            return Ok(tx.send(std::mem::take(&mut batch)).is_ok());
                        }
                        Ok(true)
                    })?;
                    if let Err(why) = merged {
                        return Ok(Err(why));
                    }
                    batch.last = true;
                    if tx.send(batch).is_err() {
                        break;
                    }
                }
                Ok(Ok(()))
            })
        });
        let joined = |m: Option<std::thread::ScopedJoinHandle<'_, _>>| match m {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the index merge panicked"))),
            None => Ok(Ok(())),
        };
        let (written, maps) = match copy_rows(out, t, &pages, progress)? {
            Ok(done) => done,
            Err(why) => {
                // SQLite's road copies instead: whatever the merge met is its to meet.
                drop(rx);
                let _ = joined(merger);
                return Ok(Err(why));
            }
        };
        // A guess proved wrong (rowids with gaps): the merge ahead stops, and the
        // indexes are merged here with the rowids as read.
        let ahead = ahead && known.as_ref().is_some_and(|k| *k == maps);
        let merger = match ahead {
            true => merger,
            false => {
                // Its entries (or its error: a shift past the largest rowid, say) are
                // not used.
                drop(rx);
                let _ = joined(merger);
                let (_, rx2) = std::sync::mpsc::sync_channel::<Batch>(0);
                rx = rx2;
                None
            }
        };
        for x in &t.indexes {
            progress.check()?;
            let mut index = out.index(&x.name, &t.name, x.sql.as_deref().unwrap_or(""));
            let mut entries = 0i64;
            let order = || {
                format!(
                    "the entries of index {} are not in the order this copy merges in",
                    quote_ident(&x.name)
                )
            };
            if ahead {
                loop {
                    let Ok(batch) = rx.recv() else {
                        // The merge ended early: its error, or why it stopped.
                        return match joined(merger)? {
                            Ok(()) => Err(Error::internal("the index merge stopped early")),
                            Err(why) => Ok(Err(why)),
                        };
                    };
                    entries += batch.entries.len() as i64;
                    for entry in batch.entries.iter() {
                        match index.push_record(entry) {
                            Ok(()) => {}
                            Err(Refused::Order) => return Ok(Err(order())),
                            Err(Refused::Failed(e)) => return Err(e),
                        }
                    }
                    if batch.last {
                        break;
                    }
                }
            } else {
                let mut bad_order = false;
                let merged = merge_index(t, x, &pages, &maps, progress, |entry| {
                    entries += 1;
                    match index.push_record(entry) {
                        Ok(()) => Ok(true),
                        Err(Refused::Order) => {
                            bad_order = true;
                            Ok(false)
                        }
                        Err(Refused::Failed(e)) => Err(e),
                    }
                })?;
                if let Err(why) = merged {
                    return Ok(Err(why));
                }
                if bad_order {
                    return Ok(Err(order()));
                }
            }
            // An index of every row (not partial) holds one entry a row: a damaged input
            // whose index lost or gained entries is refused, not copied into the file.
            let partial = x
                .sql
                .as_deref()
                .is_some_and(|sql| words(sql).any(|w| w == "WHERE"));
            if !partial && entries != written {
                return Err(Error::schema(format!(
                    "index {}: the inputs' copies hold {entries} entries for {written} rows \
                     (a damaged file)",
                    quote_ident(&x.name)
                )));
            }
            index.finish()?;
        }
        drop(rx);
        if let Err(why) = joined(merger)? {
            return Ok(Err(why));
        }
        Ok(Ok(written as u64))
    })
}

/// How each input's rowids of table `t` (numbered anew, read by `name`) map to the new
/// file's if they run without a gap (a shift each, from the smallest and largest alone):
/// the merge of the indexes can begin before the rows are read, and is done again once
/// they are where a gap proves the guess wrong.
fn guessed_rowids(t: &Table, files: &[StoredFile], name: &str) -> Result<Vec<Rowids>> {
    let mut base = 0i64;
    let mut maps = Vec::with_capacity(t.from.len());
    for &(i, _) in &t.from {
        maps.push(match files[i].rowid_range(&t.name, name)? {
            None => Rowids::Same,
            Some((lo, hi)) => {
                let shift = Rowids::Shift(base + 1 - lo);
                base = base.saturating_add(hi.saturating_sub(lo)).saturating_add(1);
                shift
            }
        });
    }
    Ok(maps)
}

/// Copies table `t`'s rows from each of its inputs, in turn, into a new table of
/// `out`: the rows written and how each input's rowids map to the new file's, or why
/// this road cannot copy them.
#[allow(clippy::type_complexity)]
fn copy_rows(
    out: &mut StoredWriter<'_>,
    t: &Table,
    pages: &[Pages<'_>],
    progress: &Progress,
) -> Result<std::result::Result<(i64, Vec<Rowids>), String>> {
    let mut maps = Vec::with_capacity(t.from.len());
    let mut written = 0i64;
    let mut table = out.table(&t.name, &t.sql);
    for &(i, root) in &t.from {
        let f = &pages[i];
        let mut rows = f.rows(root)?;
        let base = written;
        let mut old = vec![];
        let (mut first, mut last) = (None, 0i64);
        while let Some((rowid, record)) = rows.next_row().map_err(|e| f.btree_error(e))? {
            written += 1;
            let new = if t.renumber {
                first.get_or_insert(rowid);
                last = rowid;
                old.push(rowid);
                written
            } else {
                rowid
            };
            match table.push(new, record) {
                Ok(()) => {}
                Err(Refused::Order) => {
                    return Ok(Err(format!(
                        "the rows of table {} do not follow one another from one input to the next",
                        quote_ident(&t.name)
                    )))
                }
                Err(Refused::Failed(e)) => return Err(in_file(e, f)),
            }
            if written % 4096 == 0 {
                progress.rows.fetch_add(4096, AtomicOrdering::Relaxed);
                progress.check()?;
            }
        }
        maps.push(match first {
            // Without a gap, a shift: no table of every rowid is held.
            Some(first) if last - first + 1 == old.len() as i64 => Rowids::Shift(base + 1 - first),
            Some(_) => Rowids::Ranked { base, old },
            None => Rowids::Same,
        });
    }
    table.finish()?;
    progress
        .rows
        .fetch_add((written % 4096) as u64, AtomicOrdering::Relaxed);
    Ok(Ok((written, maps)))
}

/// Merges index `x` of table `t` from every input holding it, each entry (checked to be
/// a record, its rowid mapped by `maps`) handed to `each` in SQLite's order, until
/// `each` says stop.
fn merge_index(
    t: &Table,
    x: &Index,
    pages: &[Pages<'_>],
    maps: &[Rowids],
    progress: &Progress,
    mut each: impl FnMut(Record<'_>) -> Result<bool>,
) -> Result<std::result::Result<(), String>> {
    let streams = x
        .roots
        .iter()
        .zip(&t.from)
        .map(|(&root, &(i, _))| pages[i].entries(root).map(|e| (pages[i], e)))
        .collect::<Result<Vec<_>>>()?;
    let mut merge = Merge::new(streams, maps);
    let mut n = 0u64;
    while let Some(entry) = merge.next()? {
        if !each(entry)? {
            break;
        }
        n += 1;
        if n.is_multiple_of(65536) {
            progress.check()?;
        }
    }
    Ok(Ok(()))
}

/// An error about a record of input `f`, naming it.
fn in_file(e: Error, f: &Pages<'_>) -> Error {
    match e.kind() {
        crate::error::ErrorKind::Schema(_) => Error::schema(format!("{}: {e}", f.path().display())),
        _ => e,
    }
}

/// One input's next index entry (checked, rowid already rewritten; the only record
/// held), in a min-heap by SQLite's order (ties cannot happen: entries of different
/// inputs differ in rowid).
struct Head {
    entry: Records,
    stream: usize,
}

impl Head {
    fn record(&self) -> Record<'_> {
        self.entry.iter().next().expect("a head holds its entry")
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the heap's top is the least entry.
        compare(other.record().as_bytes(), self.record().as_bytes())
            .then(other.stream.cmp(&self.stream))
    }
}

/// The k-way merge of one index's entries from every input (each in order already).
/// The input whose entry is least goes on handing out entries while they stay below
/// every other input's next one: one comparison per entry where keys come in runs.
struct Merge<'a> {
    streams: Vec<(Pages<'a>, OldEntries<At<'a>>)>,
    maps: &'a [Rowids],
    heap: BinaryHeap<Head>,
    /// The entry handed out last, and its input, whose next entry comes next if it is
    /// still least.
    current: Option<Head>,
    /// A rewritten entry's bytes.
    scratch: Vec<u8>,
    started: bool,
}

impl<'a> Merge<'a> {
    fn new(streams: Vec<(Pages<'a>, OldEntries<At<'a>>)>, maps: &'a [Rowids]) -> Self {
        Merge {
            streams,
            maps,
            heap: BinaryHeap::new(),
            current: None,
            scratch: vec![],
            started: false,
        }
    }

    /// Input `s`'s next entry, checked to be a record and its rowid mapped, into `out`
    /// (which holds it alone); `false` at the input's end.
    fn read(&mut self, s: usize, out: &mut Records) -> Result<bool> {
        let (f, entries) = &mut self.streams[s];
        let f = *f;
        let Some(entry) = entries.next_entry().map_err(|e| f.btree_error(e))? else {
            return Ok(false);
        };
        let bad =
            |why: &str| Error::schema(format!("{}: an index entry {why}", f.path().display()));
        let rec = Record::parse(entry).map_err(|e| bad(&format!("is not a record ({e})")))?;
        out.clear();
        let map = &self.maps[s];
        if matches!(map, Rowids::Same) {
            out.push_record(rec);
            return Ok(true);
        }
        match with_rowid(rec, |old| map.new_rowid(old), &mut self.scratch) {
            Ok(Some(rewritten)) => out.push_record(rewritten),
            Ok(None) => return Err(bad("names a rowid its table does not hold")),
            Err(e) => return Err(bad(&e.to_string())),
        }
        Ok(true)
    }

    /// The next entry in SQLite's order; `None` at the end.
    fn next(&mut self) -> Result<Option<Record<'_>>> {
        if !self.started {
            self.started = true;
            for s in 0..self.streams.len() {
                let mut entry = Records::new();
                if self.read(s, &mut entry)? {
                    self.heap.push(Head { entry, stream: s });
                }
            }
        }
        if let Some(mut cur) = self.current.take() {
            // The input handed out last: its next entry, if it is still least.
            if self.read(cur.stream, &mut cur.entry)? {
                let least = self.heap.peek().is_none_or(|top| {
                    compare(cur.record().as_bytes(), top.record().as_bytes()) == Ordering::Less
                });
                if !least {
                    self.heap.push(cur);
                    self.current = self.heap.pop();
                } else {
                    self.current = Some(cur);
                }
            } else {
                self.current = self.heap.pop();
            }
        } else {
            self.current = self.heap.pop();
        }
        Ok(self.current.as_ref().map(Head::record))
    }
}
