//! [`Existing`]: a database file that exists, read for the page writer to extend in
//! place, and the one change it makes to that file's b-trees: cells added at a table's
//! right edge.
//!
//! New b-trees go into pages past the file's old end. Linking them in changes only page
//! 1 (the header: size, change counter, schema cookie) and the right-most path of the
//! schema table, whose root is page 1: the new schema rows take rowids after its last, so
//! they go into its right-most leaf, and what does not fit there goes into new leaves to
//! its right, each level above gaining cells the same way (page 1 keeps its number: when
//! it is full, what it held moves to a new page and it becomes the root above). Those
//! pages are read here, before anything is written, so that their old contents can go
//! to a rollback journal first (see [`crate::journal`]).
//!
//! What the file must be (anything else is refused, before a byte is written): SQLite 3
//! with a rollback journal (write and read versions 1: not WAL; or WAL, versions 2, when
//! the caller has checkpointed it under an exclusive lock), no reserved bytes per
//! page, the standard payload fractions, a size SQLite trusts (version-valid-for equal to
//! the change counter) that matches the file's length, schema format 4 (or 0 with an
//! empty schema, which the extension makes 4), UTF-8 text (or 0, likewise: made 1), and
//! neither auto-vacuum nor incremental vacuum (whose pointer maps new pages would need).
//! Every page read is checked before its bytes are used: page type, cell count, cell
//! pointers and cell extents within the page, child pages within the file, the depth
//! bounded.

use std::io::{self, Read, Seek, SeekFrom};

use crate::interior::{interior_page, INTERIOR_TABLE, MAX_INTERIOR_CELL};
use crate::leaves::{Leaf, LEAF_TABLE};
use crate::old_index::{IndexRoot, OldEntries, TableRows};
use crate::payload::local_payload;
use crate::varint;
use crate::Error;

/// Bytes of the database header before page 1's b-tree header.
pub(crate) const DB_HEADER: usize = 100;

/// Deeper than any b-tree of a file SQLite can address (2^32 pages).
const MAX_DEPTH: usize = 20;

/// An existing database file as the page writer extends it: its header fields and the
/// pages it may change in place, as they were when read.
#[derive(Clone, Debug)]
pub struct Existing {
    pub(crate) page_size: usize,
    /// The size in pages, from the header (equal to the file's length).
    pub(crate) pages: u32,
    pub(crate) change_counter: u32,
    pub(crate) schema_cookie: u32,
    /// The schema table's right-most path, page 1 (its root) first: page numbers and
    /// their bytes as read.
    pub(crate) schema_path: Vec<(u32, Vec<u8>)>,
    /// The largest rowid of the schema table (0 when it has no row).
    pub(crate) schema_rowid: i64,
    /// The right-most paths of tables that rows are added to ([`Existing::table_edge`]),
    /// and the roots of indexes filled ([`Existing::index_root`]).
    pub(crate) edges: Vec<(u32, Vec<u8>)>,
    /// The freelist's first trunk page (0: none) and its size in pages, from the header.
    pub(crate) freelist: (u32, u32),
}

/// The right edge of an existing table that rows are added to: its right-most path, root
/// first, and its largest rowid (new rows take larger ones). From
/// [`Existing::table_edge`]; given to [`crate::DbWriter::append_to`].
#[derive(Clone, Debug)]
pub struct TableEdge {
    pub(crate) path: Vec<(u32, Vec<u8>)>,
    pub(crate) max_rowid: i64,
    /// Whether the table has no row (its root is an empty leaf).
    pub(crate) empty: bool,
}

impl TableEdge {
    /// The table's largest rowid (0 when it has no row).
    pub fn max_rowid(&self) -> i64 {
        self.max_rowid
    }
}

impl Existing {
    /// Reads the header and the schema table's right-most path of the database in `file`
    /// (positioned anywhere), checking that the page writer can extend it (see the module
    /// notes). The caller holds a lock that keeps other writers out until it is done.
    pub fn read<R: Read + Seek>(file: &mut R) -> Result<Existing, Error> {
        Existing::read_with(file, false)
    }

    /// [`Existing::read`] of a database that may be in WAL mode, which the extension
    /// leaves in the mode it finds (page 1's file format versions are kept, and go to the
    /// journal as they are, so that a rollback restores them). The caller holds SQLite's
    /// EXCLUSIVE lock on the database file, which no other connection has open (in WAL
    /// mode every connection holds a SHARED lock while it has the file open), and has
    /// checkpointed the WAL into the database file and emptied it: the file then holds
    /// every page, and nothing reads the WAL until the change is committed or undone.
    pub fn read_checkpointed<R: Read + Seek>(file: &mut R) -> Result<Existing, Error> {
        Existing::read_with(file, true)
    }

    fn read_with<R: Read + Seek>(file: &mut R, wal: bool) -> Result<Existing, Error> {
        let len = file.seek(SeekFrom::End(0))?;
        let mut head = [0u8; DB_HEADER];
        if len < DB_HEADER as u64 {
            return Err(refuse("it is shorter than a database header"));
        }
        read_at(file, 0, &mut head)?;
        if &head[..16] != b"SQLite format 3\0" {
            return Err(refuse("it is not an SQLite 3 database"));
        }
        let page_size = match u16::from_be_bytes([head[16], head[17]]) {
            1 => 65536,
            n => usize::from(n),
        };
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(refuse("its header has no valid page size"));
        }
        if (head[18] == 2 || head[19] == 2) && !wal {
            return Err(refuse("it is in WAL mode"));
        }
        if !matches!((head[18], head[19]), (1, 1) | (2, 2)) {
            return Err(refuse(
                "its file format versions are not SQLite 3's rollback mode",
            ));
        }
        if head[20] != 0 {
            return Err(refuse(
                "its pages reserve bytes (for checksums or encryption)",
            ));
        }
        if head[21..24] != [64, 32, 32] {
            return Err(refuse("its payload fractions are not the standard ones"));
        }
        let be =
            |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let (change_counter, pages) = (be(24), be(28));
        if be(92) != change_counter {
            return Err(refuse(
                "its header's size is not current (an old writer changed it last)",
            ));
        }
        if pages == 0 || u64::from(pages) * page_size as u64 != len {
            return Err(refuse("its length is not the size its header gives"));
        }
        // 0: nothing was ever stored in the schema (the writer sets 4).
        let schema_format = be(44);
        if schema_format != 4 && schema_format != 0 {
            return Err(refuse("its schema format is not 4"));
        }
        if be(56) != 1 && be(56) != 0 {
            return Err(refuse("its text encoding is not UTF-8"));
        }
        if be(52) != 0 || be(64) != 0 {
            return Err(refuse("it uses auto-vacuum"));
        }
        let mut schema_path = vec![];
        let mut pgno = 1u32;
        let schema_rowid = loop {
            if schema_path.len() == MAX_DEPTH {
                return Err(refuse("its schema b-tree is deeper than any valid one"));
            }
            let mut page = vec![0u8; page_size];
            read_at(file, u64::from(pgno - 1) * page_size as u64, &mut page)?;
            let next = match Node::parse(&page, pgno, page_size, pages)? {
                Node::Leaf { cells } => Err(cells.last().map_or(0, |c| c.0)),
                Node::Interior { right, .. } => Ok(right),
            };
            schema_path.push((pgno, page));
            match next {
                Err(last_rowid) => break last_rowid,
                Ok(right) => pgno = right,
            }
        };
        if (schema_format == 0 || be(56) == 0) && (schema_rowid != 0 || schema_path.len() > 1) {
            return Err(refuse("its schema has rows but no schema format"));
        }
        Ok(Existing {
            page_size,
            pages,
            change_counter,
            schema_cookie: be(40),
            schema_path,
            schema_rowid,
            edges: vec![],
            freelist: (be(32), be(36)),
        })
    }

    /// Reads the right-most path of the table b-tree rooted at page `root` of the same
    /// file (read by [`Existing::read`], under the same lock), for rows added after its
    /// last: its pages are journaled with the schema's ([`Existing::originals`]). Refused:
    /// a root that is not a table b-tree (an index, a WITHOUT ROWID table), a right-most
    /// leaf with no row below a root, and a table whose largest rowid is `i64::MAX`
    /// (SQLite then picks rowids at random).
    pub fn table_edge<R: Read + Seek>(
        &mut self,
        file: &mut R,
        root: u32,
    ) -> Result<TableEdge, Error> {
        if root < 2 || root > self.pages {
            return Err(refuse("the table's root page is outside the file"));
        }
        let mut path = vec![];
        let mut pgno = root;
        let mut empty = false;
        let max_rowid = loop {
            if path.len() == MAX_DEPTH {
                return Err(refuse("a table b-tree deeper than any valid one"));
            }
            let mut page = vec![0u8; self.page_size];
            read_at(file, u64::from(pgno - 1) * self.page_size as u64, &mut page)?;
            let next = match Node::parse(&page, pgno, self.page_size, self.pages)? {
                Node::Leaf { cells } if cells.is_empty() && !path.is_empty() => {
                    return Err(refuse("the table's right-most leaf holds no row"))
                }
                Node::Leaf { cells } => {
                    empty = cells.is_empty();
                    Err(cells.last().map_or(0, |c| c.0))
                }
                Node::Interior { right, .. } => Ok(right),
            };
            path.push((pgno, page));
            match next {
                Err(max) => break max,
                Ok(right) => pgno = right,
            }
        };
        if max_rowid == i64::MAX {
            return Err(refuse("the table's largest rowid is the largest there is"));
        }
        for (n, p) in &path {
            if !self.edges.iter().any(|e| e.0 == *n) {
                self.edges.push((*n, p.clone()));
            }
        }
        Ok(TableEdge {
            path,
            max_rowid,
            empty,
        })
    }

    /// Reads the root page `root` of an index of the same file (read by
    /// [`Existing::read`], under the same lock) that must have no entry: an index leaf
    /// with no cell. The page is journaled with the schema's ([`Existing::originals`]),
    /// since the index written into it ([`crate::DbWriter::fill_index`]) changes it in
    /// place. Refused: a root outside the file, page 1, and any page that is not an empty
    /// index leaf (a table, an index with entries).
    pub fn empty_index<R: Read + Seek>(
        &mut self,
        file: &mut R,
        root: u32,
    ) -> Result<IndexRoot, Error> {
        let index = self.index_root(file, root)?;
        if !index.empty {
            return Err(refuse(&format!(
                "its page {root} is not the root of an empty index"
            )));
        }
        Ok(index)
    }

    /// Reads the root page `root` of an index of the same file (read by
    /// [`Existing::read`], under the same lock), with or without entries, and journals
    /// it with the schema's ([`Existing::originals`]): an index written by
    /// [`crate::DbWriter::fill_index`] takes it over, changing it in place, and must hold
    /// the index's entries ([`IndexRoot::entries`]) merged with the new ones. Refused: a
    /// root outside the file, page 1, and any page that is not an index b-tree page.
    pub fn index_root<R: Read + Seek>(
        &mut self,
        file: &mut R,
        root: u32,
    ) -> Result<IndexRoot, Error> {
        if root < 2 || root > self.pages {
            return Err(refuse("the index's root page is outside the file"));
        }
        let mut page = vec![0u8; self.page_size];
        read_at(file, u64::from(root - 1) * self.page_size as u64, &mut page)?;
        let cells = u16::from_be_bytes([page[3], page[4]]);
        let empty = match page[0] {
            crate::index::LEAF_INDEX => cells == 0,
            crate::index::INTERIOR_INDEX => false,
            _ => {
                return Err(refuse(&format!(
                    "its page {root} is not the root of an index"
                )))
            }
        };
        if !self.edges.iter().any(|e| e.0 == root) {
            self.edges.push((root, page));
        }
        Ok(IndexRoot {
            root,
            empty,
            page_size: self.page_size,
            file_pages: self.pages,
        })
    }

    /// A reader of the rows of the table b-tree rooted at page `root` of the same file
    /// (read by [`Existing::read`]), from `file`, in rowid order: nothing is journaled or
    /// written, so this reads a file the caller only reads (a source whose records are
    /// copied as stored), under a lock that keeps writers out until the reader is done.
    /// Refused: a root outside the file or page 1.
    pub fn table_rows<R: Read + Seek>(&self, file: R, root: u32) -> Result<TableRows<R>, Error> {
        if root < 2 || root > self.pages {
            return Err(Error::Malformed(format!(
                "a table's root page {root} is outside the file"
            )));
        }
        Ok(TableRows::new(file, self.page_size, self.pages, root))
    }

    /// A reader of the entries of the index b-tree rooted at page `root` of the same file
    /// (read by [`Existing::read`]), from `file`, in the index's order, for a file the
    /// caller only reads (see [`Existing::table_rows`]). Refused: a root outside the file
    /// or page 1.
    pub fn index_entries<R: Read + Seek>(
        &self,
        file: R,
        root: u32,
    ) -> Result<OldEntries<R>, Error> {
        if root < 2 || root > self.pages {
            return Err(Error::Malformed(format!(
                "an index's root page {root} is outside the file"
            )));
        }
        Ok(OldEntries::walk(
            file,
            self.page_size,
            self.pages,
            root,
            false,
        ))
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> u32 {
        self.page_size as u32
    }

    /// The file's size in pages when read: new pages are written from page `pages() + 1`.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// The pages the extension may change in place, with their contents as read: what
    /// the rollback journal must hold before any of them is written.
    pub fn originals(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.schema_path
            .iter()
            .chain(&self.edges)
            .map(|(n, p)| (*n, p.as_slice()))
    }
}

fn refuse(why: &str) -> Error {
    Error::NotExtensible(why.to_string())
}

fn read_at<R: Read + Seek>(file: &mut R, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// The b-tree header's offset on page `pgno`.
fn header_at(pgno: u32) -> usize {
    if pgno == 1 {
        DB_HEADER
    } else {
        0
    }
}

/// A table b-tree page as read, its cells checked to lie within it.
enum Node<'p> {
    /// Its cells: (rowid, the cell's bytes as stored, overflow pointer included).
    Leaf { cells: Vec<(i64, &'p [u8])> },
    /// Its cells (left child, largest rowid beneath it) and its right-most child.
    Interior { cells: Vec<(u32, i64)>, right: u32 },
}

impl<'p> Node<'p> {
    fn parse(page: &'p [u8], pgno: u32, page_size: usize, pages: u32) -> Result<Node<'p>, Error> {
        let bad = |what: &str| refuse(&format!("its page {pgno} is malformed: {what}"));
        let h = header_at(pgno);
        let kind = page[h];
        let count = usize::from(u16::from_be_bytes([page[h + 3], page[h + 4]]));
        let ptrs = h + if kind == LEAF_TABLE { 8 } else { 12 };
        if kind != LEAF_TABLE && kind != INTERIOR_TABLE {
            return Err(bad("not a table b-tree page"));
        }
        if ptrs + 2 * count > page_size {
            return Err(bad("more cells than fit"));
        }
        let child_ok = |c: u32| c >= 2 && c <= pages;
        let mut leaf = vec![];
        let mut interior = vec![];
        for i in 0..count {
            let at = usize::from(u16::from_be_bytes([
                page[ptrs + 2 * i],
                page[ptrs + 2 * i + 1],
            ]));
            if at < ptrs + 2 * count || at >= page_size {
                return Err(bad("a cell pointer outside the cell area"));
            }
            let cell = &page[at..];
            if kind == LEAF_TABLE {
                let (size, a) =
                    varint::get_checked(cell).ok_or_else(|| bad("a cell runs off the page"))?;
                let (rowid, b) = varint::get_checked(&cell[a..])
                    .ok_or_else(|| bad("a cell runs off the page"))?;
                let size = usize::try_from(size).map_err(|_| bad("a payload too large"))?;
                let local = local_payload(page_size, size);
                let len = a + b + local + if local < size { 4 } else { 0 };
                if len > cell.len() {
                    return Err(bad("a cell runs off the page"));
                }
                leaf.push((rowid as i64, &cell[..len]));
            } else {
                if cell.len() < 5 {
                    return Err(bad("a cell runs off the page"));
                }
                let child = u32::from_be_bytes([cell[0], cell[1], cell[2], cell[3]]);
                let (key, _) = varint::get_checked(&cell[4..])
                    .ok_or_else(|| bad("a cell runs off the page"))?;
                if !child_ok(child) {
                    return Err(bad("a child page outside the file"));
                }
                interior.push((child, key as i64));
            }
        }
        if kind == LEAF_TABLE {
            if leaf.windows(2).any(|w| w[0].0 >= w[1].0) {
                return Err(bad("rowids out of order"));
            }
            return Ok(Node::Leaf { cells: leaf });
        }
        let right = u32::from_be_bytes([page[h + 8], page[h + 9], page[h + 10], page[h + 11]]);
        if !child_ok(right) {
            return Err(bad("a child page outside the file"));
        }
        Ok(Node::Interior {
            cells: interior,
            right,
        })
    }
}

/// Adds `cells` (table leaf cells: rowid and bytes, overflow pointer included, every
/// rowid larger than any in the tree, in increasing order) at the right edge of the
/// table b-tree whose right-most path, root first, is `path` (as read by
/// [`Existing::read`]). New pages are handed to `alloc`, which writes them past the
/// file's end and returns their numbers, children before their parents. Returns the
/// pages of `path` that change, with their new contents (page 1's first 100 bytes as
/// they were: the caller updates the header). Every leaf stays at one depth: a full
/// root moves into a new page and becomes the root above it and its new siblings.
pub(crate) fn grow_right(
    path: &[(u32, Vec<u8>)],
    page_size: usize,
    cells: &[(i64, Vec<u8>)],
    alloc: &mut dyn FnMut(&[u8]) -> io::Result<u32>,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let mut changed = vec![];
    if cells.is_empty() {
        return Ok(changed);
    }
    let depth = path.len();
    let (leaf_no, leaf_page) = &path[depth - 1];
    let Node::Leaf { cells: old } = Node::parse(leaf_page, *leaf_no, page_size, u32::MAX)? else {
        return Err(Error::NotExtensible(
            "a path that does not end in a leaf".into(),
        ));
    };
    let mut all: Vec<(i64, &[u8])> = old;
    all.extend(cells.iter().map(|(r, c)| (*r, c.as_slice())));
    // The leaf level: the path's leaf keeps what fits, new leaves take the rest.
    let leaf_fit = |hdr: usize, items: &[(i64, &[u8])]| -> usize {
        let mut used = hdr + 8;
        items
            .iter()
            .take_while(|(_, c)| {
                used += c.len() + 2;
                used <= page_size
            })
            .count()
    };
    let leaf_image = |hdr: usize, items: &[(i64, &[u8])]| -> Vec<u8> {
        let mut leaf = Leaf::new(page_size, hdr);
        for (rowid, cell) in items {
            leaf.push(cell, *rowid);
        }
        leaf.seal(LEAF_TABLE).to_vec()
    };
    let mut new_leaves = |items: &[(i64, &[u8])]| -> io::Result<Vec<(u32, i64)>> {
        let mut out = vec![];
        let mut at = 0;
        while at < items.len() {
            let n = leaf_fit(0, &items[at..]).max(1);
            let page = leaf_image(0, &items[at..at + n]);
            out.push((alloc(&page)?, items[at + n - 1].0));
            at += n;
        }
        Ok(out)
    };
    let leaf_hdr = header_at(*leaf_no);
    if depth == 1 {
        if leaf_fit(leaf_hdr, &all) == all.len() {
            changed.push((
                *leaf_no,
                with_header(leaf_image(leaf_hdr, &all), leaf_page, leaf_hdr),
            ));
            return Ok(changed);
        }
        // The root is full: all of it moves into new leaves, and it becomes their parent.
        let children = new_leaves(&all)?;
        let root = root_over(children, *leaf_no, page_size, alloc)?;
        changed.push((*leaf_no, with_header(root, leaf_page, leaf_hdr)));
        return Ok(changed);
    }
    let n = leaf_fit(leaf_hdr, &all).max(1);
    changed.push((*leaf_no, leaf_image(leaf_hdr, &all[..n])));
    let kept_max = all[n - 1].0;
    let siblings = new_leaves(&all[n..])?;
    grow_up(path, page_size, kept_max, siblings, alloc, changed)
}

/// Adds the leaves `leaves` (written past the file's end: page, largest rowid, every
/// rowid larger than any in the tree, in order) at the right edge of the table b-tree
/// whose right-most path is `path`, as [`grow_right`] adds cells: the right-most leaf
/// stays as it is, the levels above gain the new leaves as children. A root that is a
/// leaf moves into a new page (unless it is empty) and becomes their parent.
pub(crate) fn grow_right_by_leaves(
    path: &[(u32, Vec<u8>)],
    page_size: usize,
    leaves: Vec<(u32, i64)>,
    alloc: &mut dyn FnMut(&[u8]) -> io::Result<u32>,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    if leaves.is_empty() {
        return Ok(vec![]);
    }
    let (leaf_no, leaf_page) = &path[path.len() - 1];
    let Node::Leaf { cells } = Node::parse(leaf_page, *leaf_no, page_size, u32::MAX)? else {
        return Err(Error::NotExtensible(
            "a path that does not end in a leaf".into(),
        ));
    };
    let kept_max = cells.last().map_or(0, |c| c.0);
    if path.len() == 1 {
        let hdr = header_at(*leaf_no);
        let mut children = vec![];
        if !cells.is_empty() {
            // Its cells, laid out again on a page with no database header.
            let mut leaf = Leaf::new(page_size, 0);
            for (rowid, cell) in &cells {
                leaf.push(cell, *rowid);
            }
            children.push((alloc(leaf.seal(LEAF_TABLE))?, kept_max));
        }
        children.extend(leaves);
        let root = root_over(children, *leaf_no, page_size, alloc)?;
        return Ok(vec![(*leaf_no, with_header(root, leaf_page, hdr))]);
    }
    grow_up(path, page_size, kept_max, leaves, alloc, vec![])
}

/// The interior levels of [`grow_right`], bottom-up from the level above the leaves: each
/// node of the path takes its new children (its right-most child, now a cell with the
/// largest rowid `kept_max` beneath it, and that child's new `siblings`) while they fit,
/// new nodes to its right the rest; the root keeps its page.
fn grow_up(
    path: &[(u32, Vec<u8>)],
    page_size: usize,
    mut kept_max: i64,
    mut siblings: Vec<(u32, i64)>,
    alloc: &mut dyn FnMut(&[u8]) -> io::Result<u32>,
    mut changed: Vec<(u32, Vec<u8>)>,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let depth = path.len();
    // The interior levels, bottom-up: each node of the path takes its new children
    // (its right-most child, now a cell, and that child's new siblings) while they fit.
    for level in (0..depth - 1).rev() {
        if siblings.is_empty() {
            // The child kept its page and gained rows: nothing above it changes (the
            // right-most child has no key of its own).
            break;
        }
        let (no, page) = &path[level];
        let hdr = header_at(*no);
        let Node::Interior { cells: old, .. } = Node::parse(page, *no, page_size, u32::MAX)? else {
            return Err(Error::NotExtensible("a path through a leaf".into()));
        };
        let child = path[level + 1].0;
        let mut children = old;
        children.push((child, kept_max));
        children.extend(siblings.iter().copied());
        if level == 0 {
            let fits = interior_fit(hdr, &children, page_size) == children.len();
            let root = if fits {
                interior_page(page_size, &children, hdr)
            } else {
                let moved = new_interiors(&children, page_size, alloc)?;
                root_over(moved, *no, page_size, alloc)?
            };
            changed.push((*no, with_header(root, page, hdr)));
            break;
        }
        let mut n = interior_fit(hdr, &children, page_size);
        if children.len() - n == 1 {
            // A new interior page gets at least two children.
            n -= 1;
        }
        changed.push((*no, interior_page(page_size, &children[..n], hdr)));
        kept_max = children[n - 1].1;
        siblings = new_interiors(&children[n..], page_size, alloc)?;
    }
    Ok(changed)
}

/// How many of `children` an interior page (b-tree header at `hdr`) holds: every one
/// but the last is a cell, the last the right-most pointer.
fn interior_fit(hdr: usize, children: &[(u32, i64)], page_size: usize) -> usize {
    let mut used = hdr + 12;
    let mut n = children.len().min(1);
    while n < children.len() {
        // Child `n` fits when child `n - 1` becomes a cell.
        used += 4 + varint::len(children[n - 1].1 as u64) + 2;
        if used > page_size {
            break;
        }
        n += 1;
    }
    n
}

/// New interior pages over `children`, spread evenly (each takes at least two when
/// there are two); returns them with their largest rowids.
fn new_interiors(
    children: &[(u32, i64)],
    page_size: usize,
    alloc: &mut dyn FnMut(&[u8]) -> io::Result<u32>,
) -> io::Result<Vec<(u32, i64)>> {
    if children.is_empty() {
        return Ok(vec![]);
    }
    let per_page = (page_size - 12) / MAX_INTERIOR_CELL + 1;
    let pages = children.len().div_ceil(per_page);
    let mut out = Vec::with_capacity(pages);
    let mut at = 0;
    for p in 0..pages {
        let take = (children.len() - at) / (pages - p);
        let group = &children[at..at + take];
        out.push((
            alloc(&interior_page(page_size, group, 0))?,
            group[take - 1].1,
        ));
        at += take;
    }
    Ok(out)
}

/// The root page `root` (b-tree header at its offset) over `children`, with levels of
/// new interior pages between them until they fit on it.
fn root_over(
    mut children: Vec<(u32, i64)>,
    root: u32,
    page_size: usize,
    alloc: &mut dyn FnMut(&[u8]) -> io::Result<u32>,
) -> io::Result<Vec<u8>> {
    let hdr = header_at(root);
    while interior_fit(hdr, &children, page_size) < children.len() {
        children = new_interiors(&children, page_size, alloc)?;
    }
    Ok(interior_page(page_size, &children, hdr))
}

/// `page` with the bytes before its b-tree header (page 1's database header) taken from
/// `old`.
fn with_header(mut page: Vec<u8>, old: &[u8], hdr: usize) -> Vec<u8> {
    page[..hdr].copy_from_slice(&old[..hdr]);
    page
}
