//! [`DbWriter`] and [`TableWriter`]: a new database file written front to back.
//!
//! File order: page 1 is reserved first (written last, when the schema is known); then
//! each table's pages in the order they are finished: overflow pages of a cell before the
//! leaf that holds it, leaves left to right, then each interior level; the schema's own
//! overflow pages, if any, come last. Every page is written once, at the end of the file,
//! so the writes are sequential.

use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use crate::existing::{Existing, TableEdge};
use crate::index;
use crate::interior::{interior_page, MAX_INTERIOR_CELL};
use crate::leaves::{content_start, Leaf, Leaves, LEAF_TABLE};
use crate::old_index::{FreedPages, IndexRoot};
use crate::payload::local_payload;
use crate::record::{self, Record, RecordBuilder, Value};
use crate::seqfile::SeqFile;
use crate::varint;
use crate::Error;

/// The SQLite version recorded in the header as the last writer (3.54.1). SQLite reads it
/// for information only.
const WRITER_VERSION: u32 = 3_054_001;

/// SQLite's PENDING_BYTE: the page holding this offset is the lock-byte page.
const LOCK_BYTE: usize = 1 << 30;
/// Bytes of the database header before page 1's b-tree header.
const DB_HEADER: usize = 100;

/// A database file being written. Add tables with [`DbWriter::table`], one at a time,
/// then [`DbWriter::finish`].
pub struct DbWriter<W: Write + Seek> {
    /// Written one page at a time: give it a buffered writer (such as [`SeqFile`]).
    out: W,
    page_size: usize,
    /// Pages written or reserved so far; the next page written is `pages + 1`.
    pages: u32,
    schema: Vec<SchemaRow>,
    /// The file extended, when this writer adds to one that exists (see
    /// [`DbWriter::extend`]).
    base: Option<Existing>,
    /// Pages of existing tables' right edges to change in place, from tables that rows
    /// were appended to ([`DbWriter::append_to`]), and existing indexes' roots filled
    /// ([`DbWriter::fill_index`]).
    edges_changed: Vec<ChangedPage>,
    /// The root page of the existing empty index that the index being written fills.
    fill: Option<u32>,
    /// While an index fills an existing root: the page written last (its number, counted
    /// in `pages`, and its bytes, not yet in the output). It goes out when the next page
    /// comes; the last one is the index's root, which goes to the existing root instead.
    held: Option<(u32, Vec<u8>)>,
    /// Pages of existing indexes that nothing points at any more ([`DbWriter::free`]),
    /// for the freelist.
    freed: Vec<u32>,
}

/// A page written in place by an extension: its number and new contents.
pub type ChangedPage = (u32, Vec<u8>);

struct SchemaRow {
    /// "table" or "index".
    kind: &'static str,
    name: String,
    /// The table it belongs to (a table's own name for a table).
    table: String,
    sql: String,
    root: u32,
}

impl DbWriter<SeqFile> {
    /// Creates (or truncates) the file at `path`, written through a [`SeqFile`].
    pub fn create(path: &Path, page_size: u32) -> Result<Self, Error> {
        DbWriter::new(SeqFile::create(path)?, page_size)
    }

    /// As [`DbWriter::create`], through the page cache ([`SeqFile::create_buffered`]).
    pub fn create_buffered(path: &Path, page_size: u32) -> Result<Self, Error> {
        DbWriter::new(SeqFile::create_buffered(path)?, page_size)
    }
}

impl<W: Write + Seek> DbWriter<W> {
    /// Starts a database in `out` (positioned at its start) with pages of `page_size`
    /// bytes: a power of two from 512 to 65536.
    pub fn new(out: W, page_size: u32) -> Result<Self, Error> {
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(Error::PageSize(page_size));
        }
        let mut w = DbWriter {
            out,
            page_size: page_size as usize,
            pages: 0,
            schema: vec![],
            base: None,
            edges_changed: vec![],
            fill: None,
            held: None,
            freed: vec![],
        };
        // Page 1 is reserved now and written by `finish`.
        w.write_page(&vec![0; page_size as usize])?;
        Ok(w)
    }

    /// Continues the existing database `base` (read by [`Existing::read`]): pages are
    /// written from its end on through `out` (positioned there, `base.pages()` pages into
    /// the file), and [`DbWriter::finish_in_place`] links the tables into its schema.
    /// Nothing of the file as it was is written through `out`.
    pub fn extend(out: W, base: Existing) -> DbWriter<W> {
        DbWriter {
            out,
            page_size: base.page_size,
            pages: base.pages,
            schema: vec![],
            base: Some(base),
            edges_changed: vec![],
            fill: None,
            held: None,
            freed: vec![],
        }
    }

    /// Continues the existing table whose right edge is `edge` (read from this writer's
    /// file by [`Existing::table_edge`]) in a writer that extends a file: rows pushed
    /// take rowids after its largest (checked), go into new leaves past the file's end,
    /// and the table's right-most path gains them as children when the table finishes
    /// (the root keeps its page; nothing is added to the schema).
    pub fn append_to(&mut self, edge: TableEdge) -> TableWriter<'_, W> {
        let mut leaves = Leaves::new(self.page_size);
        leaves.last_rowid = Some(edge.max_rowid);
        TableWriter {
            db: self,
            name: String::new(),
            sql: String::new(),
            leaves,
            children: vec![],
            rows: 0,
            edge: Some(edge),
        }
    }

    /// Writes out what the output holds (its `flush`), keeping it: for a writer given up
    /// before its end, so that nothing more reaches the file once the caller undoes what
    /// was written.
    pub fn flush(&mut self) -> Result<(), Error> {
        Ok(self.out.flush()?)
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The lock-byte page: the one holding file offset 2^30 (SQLite's PENDING_BYTE),
    /// which SQLite never uses and `integrity_check` counts as taken. It is written as
    /// zeros and never referenced.
    fn lock_page(&self) -> u32 {
        (LOCK_BYTE / self.page_size) as u32 + 1
    }

    /// The number of the page written after page `n` (the lock-byte page is skipped).
    fn after(&self, n: u32) -> u32 {
        if n + 1 == self.lock_page() {
            n + 2
        } else {
            n + 1
        }
    }

    /// Writes the next page; returns its number.
    fn write_page(&mut self, page: &[u8]) -> io::Result<u32> {
        debug_assert_eq!(page.len(), self.page_size);
        if self.fill.is_some() {
            // The page is numbered now and written once the next one comes (see `held`).
            self.release_held()?;
            let n = self.after(self.pages);
            self.pages = n;
            self.held = Some((n, page.to_vec()));
            return Ok(n);
        }
        self.emit(page)
    }

    /// Writes the held page's bytes (see `held`), the lock-byte page's first when it
    /// comes right before it.
    fn release_held(&mut self) -> io::Result<()> {
        if let Some((n, page)) = self.held.take() {
            if n == self.lock_page() + 1 {
                self.out.write_all(&vec![0; self.page_size])?;
            }
            self.out.write_all(&page)?;
        }
        Ok(())
    }

    /// Writes `page` as the next page of the output; returns its number.
    fn emit(&mut self, page: &[u8]) -> io::Result<u32> {
        if self.pages + 1 == self.lock_page() {
            self.out.write_all(&vec![0; self.page_size])?;
            self.pages += 1;
        }
        self.out.write_all(page)?;
        self.pages += 1;
        Ok(self.pages)
    }

    /// Starts table `name`, whose `CREATE TABLE` text is `sql` (stored as given: SQLite
    /// parses it when it opens the file, so it must describe the rows pushed).
    pub fn table(&mut self, name: &str, sql: &str) -> TableWriter<'_, W> {
        let leaves = Leaves::new(self.page_size);
        TableWriter {
            db: self,
            name: name.to_string(),
            sql: sql.to_string(),
            leaves,
            children: vec![],
            rows: 0,
            edge: None,
        }
    }

    /// Takes back a table set aside by [`TableWriter::detach`] from this writer, no
    /// other table having been started meanwhile.
    ///
    /// # Panics
    /// If `table` came from a writer of another page size.
    pub fn attach(&mut self, table: DetachedTable) -> TableWriter<'_, W> {
        assert_eq!(
            table.page_size, self.page_size,
            "a table attached to another writer than its own"
        );
        TableWriter {
            db: self,
            name: table.name,
            sql: table.sql,
            leaves: table.leaves,
            children: table.children,
            rows: table.rows,
            edge: table.edge,
        }
    }

    /// Writes index `name` on `table` (its `CREATE INDEX` text is `sql`; an empty `sql`
    /// is stored as NULL, which makes it the automatic index `name`, such as
    /// `sqlite_autoindex_t_1`, of a UNIQUE or PRIMARY KEY constraint of the table's
    /// `CREATE TABLE`, which then must declare it) from `entries`:
    /// records of the key columns then the rowid, already in [`index::compare`] order
    /// (the caller sorts them; a UNIQUE index must have no two equal keys). Leaves are
    /// written first, then each interior level; returns the root page.
    pub fn index(
        &mut self,
        name: &str,
        table: &str,
        sql: &str,
        entries: &[&[u8]],
    ) -> Result<u32, Error> {
        // Checked in every build, on every core: decoding each entry and comparing each
        // neighbour pair took 18% of the CPU of a 10M-row import with an integer index
        // when it ran on one thread. The first bad entry is the one reported.
        use rayon::prelude::*;
        let bad = |e: &[u8]| Record::parse(e).is_err();
        if entries.len() == 1 && bad(entries[0]) {
            Record::parse(entries[0])?;
        }
        // One pass: an entry is parsed before it is compared (a bad one must not be
        // decoded), so each is parsed twice, the second time from the cache.
        if let Some(i) = entries.par_windows(2).position_first(|w| {
            bad(w[0]) || bad(w[1]) || index::compare(w[0], w[1]) != std::cmp::Ordering::Less
        }) {
            Record::parse(entries[i])?;
            Record::parse(entries[i + 1])?;
            return Err(Error::IndexOrder { at: i + 1 });
        }
        let root = self.index_levels(
            entries.len(),
            |i| entries[i].len(),
            |i, out| out.extend_from_slice(entries[i]),
        )?;
        Ok(self.add_index(name, table, sql, root)?)
    }

    /// Writes index `name` on `table` (its `CREATE INDEX` text is `sql`) over one
    /// integer column from `pairs` of (key, rowid) in strictly increasing order (which is
    /// [`index::compare`] order for such entries; checked). The records are encoded
    /// here, so nothing but the pairs is held per entry. Returns the root page.
    pub fn index_int_pairs(
        &mut self,
        name: &str,
        table: &str,
        sql: &str,
        pairs: &[(i64, i64)],
    ) -> Result<u32, Error> {
        use rayon::prelude::*;
        if let Some(i) = pairs.par_windows(2).position_first(|w| w[0] >= w[1]) {
            return Err(Error::IndexOrder { at: i + 1 });
        }
        let values = |i: usize| [Value::Integer(pairs[i].0), Value::Integer(pairs[i].1)];
        let root = self.index_levels(
            pairs.len(),
            |i| crate::record::size(&values(i)),
            |i, out| crate::record::encode(&values(i), out),
        )?;
        Ok(self.add_index(name, table, sql, root)?)
    }

    /// Starts index `name` on `table` (its `CREATE INDEX` text is `sql`) whose entries
    /// are pushed one at a time, in [`index::compare`] order (checked), by
    /// [`IndexBuilder::push`]: for entries that do not fit in memory together (merged
    /// from sorted runs on disk). Memory held: one page of entries and one divider per
    /// leaf.
    pub fn index_builder(&mut self, name: &str, table: &str, sql: &str) -> IndexBuilder<'_, W> {
        IndexBuilder {
            db: self,
            name: name.to_string(),
            table: table.to_string(),
            sql: sql.to_string(),
            count: 0,
            leaf: Run::default(),
            used: 0,
            full: None,
            full_divider: vec![],
            spare: Run::default(),
            children: vec![],
            dividers: vec![],
        }
    }

    /// Makes the next index written (by [`DbWriter::index`],
    /// [`DbWriter::index_int_pairs`] or [`DbWriter::index_builder`]) the contents of the
    /// existing index `index` (of the file this writer extends, read by
    /// [`Existing::empty_index`] or [`Existing::index_root`]): its root goes into that
    /// index's root page, changed in place (returned by [`DbWriter::finish_in_place`]),
    /// and it adds nothing to the schema (the name and text it is given are not used);
    /// that call returns the existing root. Its entries must be the index's: the key
    /// columns of its definition, in its order and collation, then the rowid; an index
    /// that has entries keeps them all (read by [`IndexRoot::entries`] and merged in),
    /// and its old pages then go to [`DbWriter::free`].
    pub fn fill_index(&mut self, index: IndexRoot) -> Result<(), Error> {
        if self.base.is_none() || self.fill.is_some() {
            return Err(Error::NotExtensible(
                "an index is filled by a writer that extends a file, one at a time".into(),
            ));
        }
        self.fill = Some(index.root);
        Ok(())
    }

    /// Puts `freed` (the pages of an existing index other than its root, read to its end
    /// by [`crate::OldEntries`] and merged into the index written into its root by
    /// [`DbWriter::fill_index`]) on the file's freelist: [`DbWriter::finish_in_place`]
    /// writes new freelist trunk pages past the file's end listing them, ahead of the
    /// freelist the file had. Refused: a writer of a new file, a page outside the file
    /// as it was, or one freed already.
    pub fn free(&mut self, freed: FreedPages) -> Result<(), Error> {
        let Some(base) = &self.base else {
            return Err(Error::NotExtensible(
                "pages are freed by a writer that extends a file".into(),
            ));
        };
        if freed.pages.iter().any(|&p| p < 2 || p > base.pages)
            || freed
                .pages
                .iter()
                .any(|p| self.freed.binary_search(p).is_ok())
            || base
                .originals()
                .any(|(p, _)| freed.pages.binary_search(&p).is_ok())
        {
            return Err(Error::NotExtensible(
                "pages freed that are outside the file, freed already or changed in place".into(),
            ));
        }
        self.freed.extend(freed.pages);
        self.freed.sort_unstable();
        Ok(())
    }

    /// Records index `name` whose root is `root`, or (filling an existing index) moves
    /// the root page, held back, to the existing root and returns that.
    fn add_index(&mut self, name: &str, table: &str, sql: &str, root: u32) -> io::Result<u32> {
        if let Some(existing) = self.fill.take() {
            let Some((n, image)) = self.held.take() else {
                return Err(io::Error::other("an index filling a root wrote no page"));
            };
            debug_assert_eq!(n, root, "the root is the last page written");
            // Its number is free again, and the lock-byte page before it was not written.
            self.pages = n - 1;
            if self.pages == self.lock_page() {
                self.pages -= 1;
            }
            self.edges_changed.push((existing, image));
            return Ok(existing);
        }
        self.schema.push(SchemaRow {
            kind: "index",
            name: name.to_string(),
            table: table.to_string(),
            sql: sql.to_string(),
            root,
        });
        Ok(root)
    }

    /// Writes the pages of an index over `n` entries already in order: entry `i` is
    /// `size(i)` bytes, which `put(i, out)` appends to `out`. Leaves first, then each
    /// interior level over the dividers; returns the root page.
    fn index_levels(
        &mut self,
        n: usize,
        size: impl Fn(usize) -> usize + Sync,
        put: impl Fn(usize, &mut Vec<u8>) + Sync,
    ) -> Result<u32, Error> {
        use rayon::prelude::*;
        let u = self.page_size;
        // The cells' sizes on every core first: the plan is a walk over them in order,
        // which with the sizes computed inside took 0.2 s for 10M integer entries.
        let costs: Vec<u32> = (0..n)
            .into_par_iter()
            .map(|i| index::cell_cost(u, size(i), false) as u32)
            .collect();
        let pages = index::plan(n, u - 8, |i| costs[i] as usize);
        drop(costs);
        let mut children = Vec::with_capacity(pages.len());
        let last = pages.len() - 1;
        // The image of leaf `start..end`, built from its entries one after another.
        let leaf = |start: usize, end: usize, overflow: &dyn Fn(usize) -> Option<u32>| {
            let mut arena: Vec<u8> = Vec::with_capacity(u);
            let mut ends: Vec<usize> = Vec::with_capacity(end - start);
            for i in start..end {
                put(i, &mut arena);
                ends.push(arena.len());
            }
            let cells: Vec<(u32, &[u8])> = ends
                .iter()
                .scan(0, |from, &to| {
                    let cell = &arena[*from..to];
                    *from = to;
                    Some((0, cell))
                })
                .collect();
            index_page_image(u, &cells, overflow, None)
        };
        let max = (0..n).into_par_iter().map(&size).max().unwrap_or(0);
        if index::local_payload(u, max) == max {
            // No entry overflows, so no page is written between two leaves: the leaves
            // are built on every core (their encoding was most of an integer index's
            // writing time on one thread), a run at a time, and written in order.
            for run in pages.chunks(1024) {
                let images: Vec<Vec<u8>> = run
                    .par_iter()
                    .map(|&(start, end)| leaf(start, end, &|_| None))
                    .collect();
                for image in images {
                    children.push(self.write_page(&image)?);
                }
            }
        } else {
            for &(start, end) in &pages {
                // Overflow pages first, then the leaf that points at them.
                let mut first = Vec::with_capacity(end - start);
                let mut entry = vec![];
                for i in start..end {
                    let local = index::local_payload(u, size(i));
                    first.push(if local < size(i) {
                        entry.clear();
                        put(i, &mut entry);
                        Some(self.write_overflow(&entry[local..])?)
                    } else {
                        None
                    });
                }
                let image = leaf(start, end, &|k| first[k]);
                children.push(self.write_page(&image)?);
            }
        }
        let dividers: Vec<Vec<u8>> = pages[..last]
            .iter()
            .map(|&(_, end)| {
                let mut divider = Vec::with_capacity(size(end));
                put(end, &mut divider);
                divider
            })
            .collect();
        self.index_interior_levels(children, dividers)
    }

    /// Writes an index's interior levels over `children` (pages of one level, in order)
    /// and the `dividers` between them, up to one root; returns it.
    fn index_interior_levels(
        &mut self,
        mut children: Vec<u32>,
        mut dividers: Vec<Vec<u8>>,
    ) -> Result<u32, Error> {
        let u = self.page_size;
        while children.len() > 1 {
            debug_assert_eq!(dividers.len() + 1, children.len());
            let pages = index::plan(dividers.len(), u - 12, |i| {
                index::cell_cost(u, dividers[i].len(), true)
            });
            let last = pages.len() - 1;
            let mut up_children = Vec::with_capacity(pages.len());
            let mut up_dividers = Vec::with_capacity(pages.len());
            for (k, &(start, end)) in pages.iter().enumerate() {
                let cells: Vec<(u32, &[u8])> = (start..end)
                    .map(|i| (children[i], dividers[i].as_slice()))
                    .collect();
                up_children.push(self.index_page(&cells, Some(children[end]))?);
                if k < last {
                    up_dividers.push(std::mem::take(&mut dividers[end]));
                }
            }
            children = up_children;
            dividers = up_dividers;
        }
        Ok(children[0])
    }

    /// Writes one index page holding `cells` (child, entry) in order: a leaf when `right`
    /// is `None` (children ignored), else an interior page whose right-most child is
    /// `right`. Overflow pages of its cells are written first. Returns its number.
    fn index_page(&mut self, cells: &[(u32, &[u8])], right: Option<u32>) -> io::Result<u32> {
        let u = self.page_size;
        let mut first = Vec::with_capacity(cells.len());
        for &(_, entry) in cells {
            let local = index::local_payload(u, entry.len());
            first.push(if local < entry.len() {
                Some(self.write_overflow(&entry[local..])?)
            } else {
                None
            });
        }
        let page = index_page_image(u, cells, &|i| first[i], right);
        self.write_page(&page)
    }

    /// Writes the overflow pages of `rest` (the payload beyond the cell); returns the
    /// first one's number.
    fn write_overflow(&mut self, rest: &[u8]) -> io::Result<u32> {
        let chunk = self.page_size - 4;
        let first = self.after(self.pages);
        let n = rest.len().div_ceil(chunk);
        let mut page = vec![0u8; self.page_size];
        for (i, part) in rest.chunks(chunk).enumerate() {
            let this = self.after(self.pages);
            let next = if i + 1 < n { self.after(this) } else { 0 };
            page[..4].copy_from_slice(&next.to_be_bytes());
            page[4..4 + part.len()].copy_from_slice(part);
            page[4 + part.len()..].fill(0);
            let written = self.write_page(&page)?;
            debug_assert_eq!(written, this);
        }
        Ok(first)
    }

    /// Builds the cell of a row for a leaf (writing its overflow pages, if any) into
    /// `cell`.
    fn leaf_cell(&mut self, rowid: i64, payload: &[u8], cell: &mut Vec<u8>) -> io::Result<()> {
        let local = local_payload(self.page_size, payload.len());
        cell.clear();
        let mut head = [0u8; 18];
        let mut n = varint::put(&mut head, payload.len() as u64);
        n += varint::put(&mut head[n..], rowid as u64);
        cell.extend_from_slice(&head[..n]);
        cell.extend_from_slice(&payload[..local]);
        if local < payload.len() {
            let first = self.write_overflow(&payload[local..])?;
            cell.extend_from_slice(&first.to_be_bytes());
        }
        Ok(())
    }

    /// The size of a row's cell, without building it.
    fn leaf_cell_size(&self, rowid: i64, payload: usize) -> usize {
        let local = local_payload(self.page_size, payload);
        varint::len(payload as u64)
            + varint::len(rowid as u64)
            + local
            + if local < payload { 4 } else { 0 }
    }

    /// Writes interior levels over `children` (page, largest rowid beneath), bottom-up,
    /// until one page is left: the root.
    fn interior_levels(&mut self, children: Vec<(u32, i64)>) -> io::Result<u32> {
        Ok(self.reduce(children, 1)?[0].0)
    }

    /// Writes interior levels over `children` until at most `max` are left.
    fn reduce(&mut self, mut children: Vec<(u32, i64)>, max: usize) -> io::Result<Vec<(u32, i64)>> {
        let per_page = (self.page_size - 12) / MAX_INTERIOR_CELL + 1;
        while children.len() > max {
            // Children spread evenly: every page gets at least two (one cell and the
            // right-most pointer), since pages = ceil(n / per_page) and n >= 2.
            let pages = children.len().div_ceil(per_page);
            let mut parents = Vec::with_capacity(pages);
            let mut at = 0;
            for p in 0..pages {
                let take = (children.len() - at) / (pages - p);
                let group = &children[at..at + take];
                debug_assert!(group.len() >= 2 && group.len() <= per_page);
                let page = interior_page(self.page_size, group, 0);
                parents.push((self.write_page(&page)?, group[take - 1].1));
                at += take;
            }
            children = parents;
        }
        Ok(children)
    }

    /// Writes page 1 (the header and the schema table) and flushes; returns the output.
    /// The caller makes it durable (`sync_all` on a file).
    pub fn finish(mut self) -> Result<W, Error> {
        if self.base.is_some() {
            return Err(Error::NotExtensible(
                "a writer that extends a file finishes in place".into(),
            ));
        }
        let records = self.schema_records();
        let need: usize = records
            .iter()
            .enumerate()
            .map(|(i, r)| self.leaf_cell_size(i as i64 + 1, r.len()) + 2)
            .sum();
        let mut page1 = if need <= self.page_size - DB_HEADER - 8 {
            let mut leaf = Leaf::new(self.page_size, DB_HEADER);
            // The schema rows on page 1 itself, a leaf.
            let mut cell = vec![];
            for (i, r) in records.iter().enumerate() {
                self.leaf_cell(i as i64 + 1, r, &mut cell)?;
                leaf.push(&cell, i as i64 + 1);
            }
            leaf.seal(LEAF_TABLE).to_vec()
        } else {
            // Leaves of their own, and page 1 the root above them.
            let mut t = self.table("", "");
            for (i, r) in records.iter().enumerate() {
                t.push_record(i as i64 + 1, Record::encoded(r))?;
            }
            let children = t.last_leaf()?;
            let on_page1 = (self.page_size - DB_HEADER - 12) / MAX_INTERIOR_CELL + 1;
            let children = self.reduce(children, on_page1)?;
            interior_page(self.page_size, &children, DB_HEADER)
        };
        let size = self.pages;
        let h = &mut page1[..DB_HEADER];
        h[..16].copy_from_slice(b"SQLite format 3\0");
        let ps = if self.page_size == 65536 {
            1
        } else {
            self.page_size as u16
        };
        h[16..18].copy_from_slice(&ps.to_be_bytes());
        h[18] = 1; // write version: rollback journal
        h[19] = 1; // read version
        h[20] = 0; // reserved bytes per page
        h[21] = 64; // maximum embedded payload fraction
        h[22] = 32; // minimum embedded payload fraction
        h[23] = 32; // leaf payload fraction
        h[24..28].copy_from_slice(&1u32.to_be_bytes()); // file change counter
        h[28..32].copy_from_slice(&size.to_be_bytes()); // database size in pages
                                                        // 32..40: no freelist.
        h[40..44].copy_from_slice(&1u32.to_be_bytes()); // schema cookie
        h[44..48].copy_from_slice(&4u32.to_be_bytes()); // schema format
        h[56..60].copy_from_slice(&1u32.to_be_bytes()); // text encoding: UTF-8
        h[56..60].copy_from_slice(&1u32.to_be_bytes()); // text encoding: UTF-8
        h[92..96].copy_from_slice(&1u32.to_be_bytes()); // version-valid-for = change counter
        h[96..100].copy_from_slice(&WRITER_VERSION.to_be_bytes());
        let mut out = self.out;
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&page1)?;
        out.flush()?;
        Ok(out)
    }
}

impl<W: Write + Seek> DbWriter<W> {
    /// The schema rows of the tables and indexes written, as records.
    fn schema_records(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.schema)
            .iter()
            .map(|t| {
                let mut record = vec![];
                record::encode(
                    &[
                        Value::Text(t.kind.as_bytes()),
                        Value::Text(t.name.as_bytes()),
                        Value::Text(t.table.as_bytes()),
                        Value::Integer(i64::from(t.root)),
                        // An automatic index (of a UNIQUE or PRIMARY KEY constraint)
                        // has no text of its own: SQLite makes it from the table's.
                        if t.kind == "index" && t.sql.is_empty() {
                            Value::Null
                        } else {
                            Value::Text(t.sql.as_bytes())
                        },
                    ],
                    &mut record,
                );
                record
            })
            .collect()
    }

    /// Ends an extension ([`DbWriter::extend`]): the new schema rows (rowids after the
    /// schema's last) are added at the schema table's right edge, their overflow pages
    /// and any new schema pages written through the output past the old end; then the
    /// output is flushed. Returns it and the pages to change in place, page 1 first with
    /// its header updated (the new size, the change counter and the schema cookie one
    /// more, version-valid-for equal to the counter). Nothing is written in place here:
    /// the caller journals the originals ([`Existing::originals`]) before it writes these
    /// (see [`crate::journal`]).
    pub fn finish_in_place(mut self) -> Result<(W, Vec<ChangedPage>), Error> {
        let Some(base) = self.base.take() else {
            return Err(Error::NotExtensible(
                "a writer of a new file finishes with finish()".into(),
            ));
        };
        if self.fill.is_some() {
            return Err(Error::NotExtensible(
                "an index to fill an existing root was never written".into(),
            ));
        }
        let records = self.schema_records();
        let schema_changes = !records.is_empty();
        let mut cells = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            let rowid = base.schema_rowid + 1 + i as i64;
            let mut cell = vec![];
            self.leaf_cell(rowid, r, &mut cell)?;
            cells.push((rowid, cell));
        }
        let mut changed =
            crate::existing::grow_right(&base.schema_path, self.page_size, &cells, &mut |page| {
                self.write_page(page)
            })?;
        changed.append(&mut self.edges_changed);
        let (trunk, free_count) = self.write_freelist(base.freelist)?;
        // Page 1 first (its header changes even when its b-tree does not).
        match changed.iter().position(|c| c.0 == 1) {
            Some(at) => {
                let page1 = changed.remove(at);
                changed.insert(0, page1);
            }
            None => changed.insert(0, (1, base.schema_path[0].1.clone())),
        }
        let counter = base.change_counter.wrapping_add(1);
        let h = &mut changed[0].1[..DB_HEADER];
        h[24..28].copy_from_slice(&counter.to_be_bytes());
        h[28..32].copy_from_slice(&self.pages.to_be_bytes());
        h[32..36].copy_from_slice(&trunk.to_be_bytes());
        h[36..40].copy_from_slice(&free_count.to_be_bytes());
        if schema_changes {
            h[40..44].copy_from_slice(&base.schema_cookie.wrapping_add(1).to_be_bytes());
        }
        h[44..48].copy_from_slice(&4u32.to_be_bytes()); // schema format
        h[56..60].copy_from_slice(&1u32.to_be_bytes()); // text encoding: UTF-8
        h[92..96].copy_from_slice(&counter.to_be_bytes());
        h[96..100].copy_from_slice(&WRITER_VERSION.to_be_bytes());
        let mut out = self.out;
        out.flush()?;
        Ok((out, changed))
    }
}

impl<W: Write + Seek> DbWriter<W> {
    /// Writes freelist trunk pages past the end for the pages freed ([`DbWriter::free`]),
    /// chained ahead of the file's freelist `old` (first trunk, size); returns the new
    /// first trunk and size, `old` when nothing was freed. Each trunk holds its next
    /// trunk (4 bytes), its leaf count (4) and the leaves' numbers: at most
    /// `usable / 4 - 8` of them, the limit SQLite itself keeps to for older readers.
    fn write_freelist(&mut self, old: (u32, u32)) -> Result<(u32, u32), Error> {
        let freed = std::mem::take(&mut self.freed);
        if freed.is_empty() {
            return Ok(old);
        }
        let per_trunk = self.page_size / 4 - 8;
        let (mut next, mut count) = old;
        for leaves in freed.chunks(per_trunk) {
            let mut page = vec![0u8; self.page_size];
            page[..4].copy_from_slice(&next.to_be_bytes());
            page[4..8].copy_from_slice(&(leaves.len() as u32).to_be_bytes());
            for (i, leaf) in leaves.iter().enumerate() {
                page[8 + 4 * i..12 + 4 * i].copy_from_slice(&leaf.to_be_bytes());
            }
            next = self.write_page(&page)?;
            count += leaves.len() as u32 + 1;
        }
        Ok((next, count))
    }
}

/// A table being written, set aside from its [`DbWriter`] ([`TableWriter::detach`]) so
/// that one value can own both the file and the table between calls; give it back with
/// [`DbWriter::attach`] to the writer it came from. Nothing of it is written while it is
/// detached.
pub struct DetachedTable {
    name: String,
    sql: String,
    leaves: Leaves,
    children: Vec<(u32, i64)>,
    rows: u64,
    /// The page size of the writer it came from, to catch an attach to another.
    page_size: usize,
    edge: Option<TableEdge>,
}

impl DetachedTable {
    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// A table being written: rows in strictly increasing rowid order, pushed one by one or
/// appended as [`Leaves`] filled elsewhere.
pub struct TableWriter<'d, W: Write + Seek> {
    db: &'d mut DbWriter<W>,
    name: String,
    sql: String,
    /// Rows pushed here; sealed pages are written as soon as there are any. Its
    /// `last_rowid` is the table's (appended rows included), so it checks the order.
    leaves: Leaves,
    /// Leaves written so far: (page, largest rowid in it).
    children: Vec<(u32, i64)>,
    rows: u64,
    /// The existing table's right edge, for rows appended to it.
    edge: Option<TableEdge>,
}

impl<W: Write + Seek> TableWriter<'_, W> {
    /// Appends a row. `values` are the record's columns in table order; an INTEGER
    /// PRIMARY KEY column must be `Value::Null` (its value is the rowid).
    pub fn push(&mut self, rowid: i64, values: &[Value<'_>]) -> Result<(), Error> {
        self.leaves.push(rowid, values)?;
        self.pushed()
    }

    /// Replaces the table's `CREATE TABLE` text (stored as given), for a table that
    /// gained columns while its rows were written. Rows pushed before hold fewer
    /// columns than the new text names, which SQLite reads as NULL (as after `ALTER
    /// TABLE ... ADD COLUMN`); the text must name at least as many columns as any row
    /// holds, and add no default or constraint that such a row would break.
    pub fn set_sql(&mut self, sql: &str) {
        self.sql = sql.to_string();
    }

    /// Appends a row whose record is already encoded.
    pub fn push_record(&mut self, rowid: i64, record: Record<'_>) -> Result<(), Error> {
        self.leaves.push_record(rowid, record)?;
        self.pushed()
    }

    /// Appends a row whose record was built with a [`RecordBuilder`].
    pub fn push_built(&mut self, rowid: i64, built: &RecordBuilder) -> Result<(), Error> {
        self.leaves.push_built(rowid, built)?;
        self.pushed()
    }

    fn pushed(&mut self) -> Result<(), Error> {
        self.rows += 1;
        if !self.leaves.max_rowids.is_empty() {
            let mut own = std::mem::replace(&mut self.leaves, Leaves::new(0));
            let r = self.write_sealed(&mut own);
            own.drop_sealed();
            self.leaves = own;
            r?;
        }
        Ok(())
    }

    /// Appends rows filled elsewhere (their rowids above every rowid here), writing their
    /// pages in order; `leaves` is left empty for reuse. The leaf this writer was filling
    /// is written first, as it is.
    pub fn append(&mut self, leaves: &mut Leaves) -> Result<(), Error> {
        assert_eq!(
            leaves.page_size, self.db.page_size,
            "leaves of another page size"
        );
        let (Some(first), Some(last)) = (leaves.first_rowid, leaves.last_rowid) else {
            return Ok(());
        };
        self.leaves.check_order(first)?;
        self.flush_leaf()?;
        leaves.seal_page();
        self.write_sealed(leaves)?;
        self.leaves.last_rowid = Some(last);
        self.rows += leaves.rows;
        leaves.clear();
        Ok(())
    }

    /// Writes the sealed pages of `leaves`, each after the overflow pages its cells point
    /// to (so the pointers can be filled in).
    fn write_sealed(&mut self, leaves: &mut Leaves) -> io::Result<()> {
        let ps = self.db.page_size;
        let mut patches = leaves.patches.iter().peekable();
        let sealed = leaves.leaf.base;
        for (i, page) in leaves.leaf.buf[..sealed].chunks_exact_mut(ps).enumerate() {
            while let Some((_, at, range)) = patches.next_if(|p| p.0 == i) {
                let first = self.db.write_overflow(&leaves.spill[range.clone()])?;
                debug_assert_eq!(page[*at..at + 4], [0; 4]);
                page[*at..at + 4].copy_from_slice(&first.to_be_bytes());
            }
            let n = self.db.write_page(page)?;
            self.children.push((n, leaves.max_rowids[i]));
        }
        let sealed = leaves.max_rowids.len();
        debug_assert!(
            patches.all(|p| p.0 == sealed),
            "the patches left are on the leaf being filled"
        );
        Ok(())
    }

    /// Seals the leaf being filled (which holds a cell) and returns its image, written
    /// nowhere yet (its overflow pages are, and it points at them).
    fn seal_in_place(&mut self) -> io::Result<Vec<u8>> {
        self.leaves.seal_page();
        let mut own = std::mem::replace(&mut self.leaves, Leaves::new(0));
        let ps = self.db.page_size;
        let mut result = Ok(());
        for (_, at, range) in own.patches.iter().filter(|p| p.0 == 0) {
            match self.db.write_overflow(&own.spill[range.clone()]) {
                Ok(first) => own.leaf.buf[*at..at + 4].copy_from_slice(&first.to_be_bytes()),
                Err(e) => result = Err(e),
            }
        }
        let page = own.leaf.buf[..ps].to_vec();
        own.drop_sealed();
        self.leaves = own;
        result.map(|()| page)
    }

    /// Seals and writes the leaf being filled, if it holds a cell.
    fn flush_leaf(&mut self) -> io::Result<()> {
        if self.leaves.leaf.cells == 0 {
            return Ok(());
        }
        self.leaves.seal_page();
        let mut own = std::mem::replace(&mut self.leaves, Leaves::new(0));
        let r = self.write_sealed(&mut own);
        own.drop_sealed();
        self.leaves = own;
        r
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Sets the table aside, as it is, releasing its writer (see [`DetachedTable`]).
    pub fn detach(self) -> DetachedTable {
        DetachedTable {
            page_size: self.db.page_size,
            name: self.name,
            sql: self.sql,
            leaves: self.leaves,
            children: self.children,
            rows: self.rows,
            edge: self.edge,
        }
    }

    /// Writes the last leaf; returns every leaf (page, largest rowid in it).
    fn last_leaf(&mut self) -> io::Result<Vec<(u32, i64)>> {
        self.flush_leaf()?;
        if self.children.is_empty() {
            // An empty table is one empty leaf.
            let mut empty = Leaf::new(self.db.page_size, 0);
            let n = self.db.write_page(empty.seal(LEAF_TABLE))?;
            self.children.push((n, 0));
        }
        Ok(std::mem::take(&mut self.children))
    }

    /// Writes the last leaf and the interior levels, and records the table in the schema.
    /// Returns its root page.
    pub fn finish(mut self) -> Result<u32, Error> {
        if let Some(edge) = self.edge.take() {
            let root = edge.path[0].0;
            if edge.empty && self.children.is_empty() {
                // An empty table whose new rows fit one leaf: that leaf is its root page
                // (a root other than page 1 may not be an interior page of one child).
                if self.leaves.leaf.cells > 0 {
                    let page = self.seal_in_place()?;
                    self.db.edges_changed.push((root, page));
                }
                return Ok(root);
            }
            self.flush_leaf()?;
            let children = std::mem::take(&mut self.children);
            let db = &mut *self.db;
            let page_size = db.page_size;
            let changed = crate::existing::grow_right_by_leaves(
                &edge.path,
                page_size,
                children,
                &mut |page| db.write_page(page),
            )?;
            db.edges_changed.extend(changed);
            return Ok(edge.path[0].0);
        }
        let children = self.last_leaf()?;
        let root = self.db.interior_levels(children)?;
        self.db.schema.push(SchemaRow {
            kind: "table",
            table: self.name.clone(),
            name: std::mem::take(&mut self.name),
            sql: std::mem::take(&mut self.sql),
            root,
        });
        Ok(root)
    }
}

/// An index written from entries pushed one at a time (see [`DbWriter::index_builder`]).
/// Leaves are planned as [`DbWriter::index`] plans them: a page takes entries while they
/// fit, the next one goes up as the divider; a full leaf is written only once the next
/// one has an entry, so that at the end it can give up its last entry to be the divider
/// instead of leaving an empty last page.
pub struct IndexBuilder<'d, W: Write + Seek> {
    db: &'d mut DbWriter<W>,
    name: String,
    table: String,
    sql: String,
    count: usize,
    /// The open leaf's entries and the bytes their cells take.
    leaf: Run,
    used: usize,
    /// A full leaf not written yet (and the divider after it, `full_divider`).
    full: Option<Run>,
    full_divider: Vec<u8>,
    /// A leaf's buffers, kept for the next one.
    spare: Run,
    children: Vec<u32>,
    dividers: Vec<Vec<u8>>,
}

/// Entries side by side in one buffer: a leaf's, held without an allocation each.
#[derive(Default)]
struct Run {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Run {
    fn push(&mut self, entry: &[u8]) {
        self.bytes.extend_from_slice(entry);
        self.ends.push(self.bytes.len());
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Takes off the last entry.
    fn pop(&mut self) -> Option<Vec<u8>> {
        let n = self.ends.len().checked_sub(1)?;
        let out = self.get(n).to_vec();
        self.ends.pop();
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
        Some(out)
    }
}

impl<W: Write + Seek> IndexBuilder<'_, W> {
    /// Adds the next entry: a record of the key columns then the rowid, after the one
    /// pushed before it in [`index::compare`] order (else [`Error::IndexOrder`], `at`
    /// counting the entries pushed).
    pub fn push(&mut self, entry: &[u8]) -> Result<(), Error> {
        self.push_record(Record::parse(entry)?)
    }

    /// [`IndexBuilder::push`] of an entry already checked to be a record.
    pub fn push_record(&mut self, entry: Record<'_>) -> Result<(), Error> {
        let entry = entry.as_bytes();
        // The entry pushed last: the open leaf's last, or (a leaf just filled) the
        // divider after it.
        let last = match self.leaf.ends.len() {
            0 if self.full.is_some() => Some(self.full_divider.as_slice()),
            0 => None,
            n => Some(self.leaf.get(n - 1)),
        };
        if last.is_some_and(|l| index::compare(l, entry) != std::cmp::Ordering::Less) {
            return Err(Error::IndexOrder { at: self.count });
        }
        self.count += 1;
        let u = self.db.page_size;
        let cost = index::cell_cost(u, entry.len(), false);
        if self.leaf.is_empty() || self.used + cost <= u - 8 {
            if self.leaf.is_empty() {
                if let Some(mut cells) = self.full.take() {
                    self.write_leaf(&cells)?;
                    self.dividers.push(std::mem::take(&mut self.full_divider));
                    cells.clear();
                    self.spare = cells;
                }
            }
            self.leaf.push(entry);
            self.used += cost;
        } else {
            let next = std::mem::take(&mut self.spare);
            self.full = Some(std::mem::replace(&mut self.leaf, next));
            self.full_divider = entry.to_vec();
            self.used = 0;
        }
        Ok(())
    }

    fn write_leaf(&mut self, entries: &Run) -> Result<(), Error> {
        let cells: Vec<(u32, &[u8])> = (0..entries.ends.len())
            .map(|i| (0, entries.get(i)))
            .collect();
        let page = self.db.index_page(&cells, None)?;
        self.children.push(page);
        Ok(())
    }

    /// Writes the last leaf and the interior levels; returns the root page.
    pub fn finish(mut self) -> Result<u32, Error> {
        if let Some(mut cells) = self.full.take() {
            // The divider would leave the last leaf empty: the full leaf gives up its
            // last entry to be the divider, and the divider is the last leaf's entry.
            debug_assert!(self.leaf.is_empty() && cells.ends.len() >= 2);
            let up = cells.pop().expect("a full leaf holds entries");
            self.write_leaf(&cells)?;
            self.dividers.push(up);
            self.leaf.clear();
            let divider = std::mem::take(&mut self.full_divider);
            self.leaf.push(&divider);
        }
        let leaf = std::mem::take(&mut self.leaf);
        self.write_leaf(&leaf)?;
        let (children, dividers) = (
            std::mem::take(&mut self.children),
            std::mem::take(&mut self.dividers),
        );
        let root = self.db.index_interior_levels(children, dividers)?;
        Ok(self
            .db
            .add_index(&self.name, &self.table, &self.sql, root)?)
    }
}

/// The image of an index page of `u` bytes holding `cells` (child, entry) in order: a
/// leaf when `right` is `None` (children ignored), else an interior page whose
/// right-most child is `right`. `overflow(i)` is the first overflow page of cell `i`,
/// which must be `Some` exactly when its entry does not fit in the cell.
fn index_page_image(
    u: usize,
    cells: &[(u32, &[u8])],
    overflow: &dyn Fn(usize) -> Option<u32>,
    right: Option<u32>,
) -> Vec<u8> {
    let hdr = if right.is_some() { 12 } else { 8 };
    let mut page = vec![0u8; u];
    let mut top = u;
    for (i, &(child, entry)) in cells.iter().enumerate() {
        let local = index::local_payload(u, entry.len());
        let first = overflow(i);
        debug_assert_eq!(first.is_some(), local < entry.len());
        let mut head = [0u8; 9];
        let n = varint::put(&mut head, entry.len() as u64);
        let child_len = if right.is_some() { 4 } else { 0 };
        let len = child_len + n + local + if first.is_some() { 4 } else { 0 };
        top -= len;
        let cell = &mut page[top..top + len];
        cell[..child_len].copy_from_slice(&child.to_be_bytes()[..child_len]);
        cell[child_len..child_len + n].copy_from_slice(&head[..n]);
        cell[child_len + n..child_len + n + local].copy_from_slice(&entry[..local]);
        if let Some(f) = first {
            cell[len - 4..].copy_from_slice(&f.to_be_bytes());
        }
        let ptr = hdr + 2 * i;
        page[ptr..ptr + 2].copy_from_slice(&(top as u16).to_be_bytes());
    }
    debug_assert!(hdr + 2 * cells.len() <= top, "cells overlap their pointers");
    page[0] = if right.is_some() {
        index::INTERIOR_INDEX
    } else {
        index::LEAF_INDEX
    };
    page[3..5].copy_from_slice(&(cells.len() as u16).to_be_bytes());
    page[5..7].copy_from_slice(&content_start(top));
    if let Some(r) = right {
        page[8..12].copy_from_slice(&r.to_be_bytes());
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_payload_follows_the_format() {
        // 4096-byte pages: x = 4061, m = 489.
        assert_eq!(local_payload(4096, 4061), 4061);
        assert_eq!(local_payload(4096, 4062), 489, "k = 4062 > x, so m");
        assert_eq!(local_payload(4096, 489 + 4092 + 10), 499);
        assert_eq!(local_payload(4096, 100_000), 489 + (100_000 - 489) % 4092);
        // 512-byte pages: x = 477, m = 39.
        assert_eq!(local_payload(512, 478), 39);
        assert_eq!(local_payload(512, 39 + 508 + 100), 139);
    }
}
