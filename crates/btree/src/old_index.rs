//! The entries of an index that exists, read in order ([`OldEntries`]) to be merged with
//! new ones into a b-tree that takes over the index's root page
//! ([`crate::DbWriter::fill_index`]), and the index's other pages, which the merge no
//! longer uses, given to the file's freelist ([`FreedPages`], [`crate::DbWriter::free`]).
//! The same walk reads a table's rows as stored ([`TableRows`]: each rowid and record),
//! for a copy that moves records from one file to another without decoding them.
//!
//! The walk is in key order: a leaf's cells in turn; on an interior page, each cell's
//! left child, then the cell's own entry, and the right-most child last. Every page is
//! checked before its bytes are used, as [`crate::Existing`] checks the pages it reads:
//! page type, cell pointers within the cell area, each cell and its overflow chain within
//! the page and the file, no page met twice (so no cycle), all leaves at one depth, the
//! depth bounded; a table's rowids strictly increasing. An entry or a row is handed out
//! as its record's bytes; whether it is a record, and in order, is the writer's check
//! ([`crate::IndexBuilder::push`], [`crate::TableWriter::push_record`]).

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};

use crate::index::{local_payload, INTERIOR_INDEX, LEAF_INDEX};
use crate::interior::INTERIOR_TABLE;
use crate::leaves::LEAF_TABLE;
use crate::varint;
use crate::Error;

/// Deeper than any b-tree of a file SQLite can address.
const MAX_DEPTH: usize = 20;

/// The root page of an existing index that an index written by the page writer takes
/// over ([`crate::DbWriter::fill_index`]), read and journaled by
/// [`crate::Existing::empty_index`] (an index with no entry) or
/// [`crate::Existing::index_root`] (any index: its entries must then be merged in, read
/// by [`IndexRoot::entries`]).
#[derive(Clone, Debug)]
pub struct IndexRoot {
    pub(crate) root: u32,
    /// Whether the root is an empty leaf (the index has no entry).
    pub(crate) empty: bool,
    pub(crate) page_size: usize,
    /// The file's size in pages.
    pub(crate) file_pages: u32,
}

impl IndexRoot {
    /// Whether the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// A reader of the index's entries in order, from `file` (the file the root was read
    /// from, under the same lock; read, never written).
    pub fn entries<R: Read + Seek>(&self, file: R) -> OldEntries<R> {
        OldEntries::walk(file, self.page_size, self.file_pages, self.root, false)
    }
}

/// The pages of an existing index other than its root, all read by [`OldEntries`] to its
/// end: after a merge nothing points at them, and [`crate::DbWriter::free`] puts them on
/// the file's freelist.
#[derive(Debug)]
pub struct FreedPages {
    pub(crate) pages: Vec<u32>,
}

impl FreedPages {
    /// How many pages.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether there is none (the index was its root alone).
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
}

/// One page on the walk's path from the root.
struct Frame {
    pgno: u32,
    page: Vec<u8>,
    leaf: bool,
    cells: usize,
    /// A leaf: the next cell to hand out. An interior page: the child being walked
    /// (0..=cells, `cells` being the right-most child).
    next: usize,
    /// An interior page: whether child `next` was walked to its end.
    returned: bool,
}

/// The entries of an existing index in order (see the module notes), each a record of
/// its key columns and the rowid.
pub struct OldEntries<R> {
    file: R,
    page_size: usize,
    file_pages: u32,
    root: u32,
    stack: Vec<Frame>,
    seen: HashSet<u32>,
    /// Every page met, in the order met: b-tree pages and overflow pages.
    pages: Vec<u32>,
    leaf_depth: Option<usize>,
    entry: Vec<u8>,
    started: bool,
    /// A table b-tree (rows: a rowid and a record, in leaves only) rather than an index.
    table: bool,
    /// A table: the rowid of the row handed out last.
    rowid: Option<i64>,
}

/// The rows of a table b-tree of an existing file in rowid order (see the module notes):
/// each its rowid and its record's bytes as stored, the overflow chain followed. Made by
/// [`crate::Existing::table_rows`].
pub struct TableRows<R>(OldEntries<R>);

impl<R: Read + Seek> TableRows<R> {
    pub(crate) fn new(file: R, page_size: usize, file_pages: u32, root: u32) -> Self {
        TableRows(OldEntries::walk(file, page_size, file_pages, root, true))
    }

    /// The next row (rowid, record bytes), or `None` at the end. An error means the
    /// table is not what SQLite writes (or the file could not be read).
    pub fn next_row(&mut self) -> Result<Option<(i64, &[u8])>, Error> {
        let w = &mut self.0;
        if w.next_entry()?.is_none() {
            return Ok(None);
        }
        let rowid = w.rowid.expect("a row read has its rowid");
        Ok(Some((rowid, &w.entry)))
    }
}

impl<R: Read + Seek> OldEntries<R> {
    pub(crate) fn walk(file: R, page_size: usize, file_pages: u32, root: u32, table: bool) -> Self {
        OldEntries {
            file,
            page_size,
            file_pages,
            root,
            stack: vec![],
            seen: HashSet::new(),
            pages: vec![],
            leaf_depth: None,
            entry: vec![],
            started: false,
            table,
            rowid: None,
        }
    }

    /// The next entry, or `None` at the end. An error means the index is not what
    /// SQLite writes (or the file could not be read): nothing of it may be used.
    pub fn next_entry(&mut self) -> Result<Option<&[u8]>, Error> {
        if !self.started {
            self.started = true;
            self.descend(self.root)?;
        }
        loop {
            let Some(top) = self.stack.last_mut() else {
                return Ok(None);
            };
            if top.leaf {
                if top.next < top.cells {
                    let i = top.next;
                    top.next += 1;
                    self.read_cell(i)?;
                    return Ok(Some(&self.entry));
                }
            } else if !top.returned {
                let child = child_of(top, self.table)?;
                self.descend(child)?;
                continue;
            } else if top.next < top.cells {
                // The child left of cell `next` is done: the cell's entry (an index's;
                // a table's interior cells hold only a rowid), then the next child.
                let i = top.next;
                top.next += 1;
                top.returned = false;
                if self.table {
                    continue;
                }
                self.read_cell(i)?;
                return Ok(Some(&self.entry));
            }
            self.stack.pop();
            if let Some(parent) = self.stack.last_mut() {
                parent.returned = true;
            }
        }
    }

    /// Once every entry has been read: the index's pages other than its root.
    pub fn finish(self) -> Result<FreedPages, Error> {
        if !self.started || !self.stack.is_empty() {
            return Err(Error::NotExtensible(
                "an index's pages are freed only once all its entries are read".into(),
            ));
        }
        let mut pages: Vec<u32> = self.pages.into_iter().filter(|&p| p != self.root).collect();
        pages.sort_unstable();
        Ok(FreedPages { pages })
    }

    fn bad(&self, pgno: u32, what: &str) -> Error {
        let why = format!("its page {pgno} is malformed: {what}");
        if self.table {
            Error::Malformed(why)
        } else {
            Error::NotExtensible(why)
        }
    }

    /// Marks page `pgno` as met: within the file, not page 1, met once.
    fn meet(&mut self, pgno: u32, from: u32) -> Result<(), Error> {
        if pgno < 2 || pgno > self.file_pages {
            return Err(self.bad(from, "a page number outside the file"));
        }
        if !self.seen.insert(pgno) {
            return Err(self.bad(from, "a page that the index reaches twice"));
        }
        self.pages.push(pgno);
        Ok(())
    }

    fn read_page(&mut self, pgno: u32) -> Result<Vec<u8>, Error> {
        let mut page = vec![0u8; self.page_size];
        self.file
            .seek(SeekFrom::Start(u64::from(pgno - 1) * self.page_size as u64))?;
        self.file.read_exact(&mut page)?;
        Ok(page)
    }

    /// Reads and checks page `pgno` and puts it on the path.
    fn descend(&mut self, pgno: u32) -> Result<(), Error> {
        let from = self.stack.last().map_or(pgno, |f| f.pgno);
        if self.stack.len() == MAX_DEPTH {
            return Err(self.bad(from, "an index deeper than any valid one"));
        }
        self.meet(pgno, from)?;
        let page = self.read_page(pgno)?;
        let leaf = match (page[0], self.table) {
            (LEAF_INDEX, false) | (LEAF_TABLE, true) => true,
            (INTERIOR_INDEX, false) | (INTERIOR_TABLE, true) => false,
            (_, false) => return Err(self.bad(pgno, "not an index b-tree page")),
            (_, true) => return Err(self.bad(pgno, "not a table b-tree page")),
        };
        let cells = usize::from(u16::from_be_bytes([page[3], page[4]]));
        let ptrs = if leaf { 8 } else { 12 };
        if ptrs + 2 * cells > self.page_size {
            return Err(self.bad(pgno, "more cells than fit"));
        }
        for i in 0..cells {
            let at = usize::from(u16::from_be_bytes([
                page[ptrs + 2 * i],
                page[ptrs + 2 * i + 1],
            ]));
            if at < ptrs + 2 * cells || at >= self.page_size {
                return Err(self.bad(pgno, "a cell pointer outside the cell area"));
            }
        }
        if leaf {
            let depth = self.stack.len();
            if *self.leaf_depth.get_or_insert(depth) != depth {
                return Err(self.bad(pgno, "leaves at different depths"));
            }
            if cells == 0 && depth > 0 {
                return Err(self.bad(pgno, "a leaf with no entry below the root"));
            }
        }
        self.stack.push(Frame {
            pgno,
            page,
            leaf,
            cells,
            next: 0,
            returned: false,
        });
        Ok(())
    }

    /// Reads the entry of cell `i` of the page on top of the path into `entry`, its
    /// overflow chain followed.
    fn read_cell(&mut self, i: usize) -> Result<(), Error> {
        let top = self.stack.last().expect("a page is on the path");
        let (pgno, u) = (top.pgno, self.page_size);
        let ptrs = if top.leaf { 8 } else { 12 };
        let at = usize::from(u16::from_be_bytes([
            top.page[ptrs + 2 * i],
            top.page[ptrs + 2 * i + 1],
        ]));
        let table = self.table;
        let runs_off = || {
            let why = format!("its page {pgno} is malformed: a cell runs off the page");
            if table {
                Error::Malformed(why)
            } else {
                Error::NotExtensible(why)
            }
        };
        let skip = if top.leaf { 0 } else { 4 };
        if at + skip > u {
            return Err(runs_off());
        }
        let cell = &top.page[at + skip..];
        let (size, mut n) = varint::get_checked(cell).ok_or_else(runs_off)?;
        // No payload is larger than the file.
        if size > u64::from(self.file_pages) * u as u64 {
            return Err(self.bad(pgno, "a payload larger than the file"));
        }
        let size = size as usize;
        let local = if self.table {
            let (rowid, m) = varint::get_checked(&cell[n..]).ok_or_else(runs_off)?;
            n += m;
            let rowid = rowid as i64;
            if self.rowid.is_some_and(|last| rowid <= last) {
                return Err(self.bad(pgno, "rowids out of order"));
            }
            self.rowid = Some(rowid);
            crate::payload::local_payload(u, size)
        } else {
            local_payload(u, size)
        };
        let overflow = local < size;
        if n + local + if overflow { 4 } else { 0 } > cell.len() {
            return Err(runs_off());
        }
        self.entry.clear();
        self.entry.extend_from_slice(&cell[n..n + local]);
        if !overflow {
            return Ok(());
        }
        let p = &cell[n + local..n + local + 4];
        let mut next = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
        let mut left = size - local;
        let mut from = pgno;
        while left > 0 {
            self.meet(next, from)?;
            let page = self.read_page(next)?;
            let take = left.min(u - 4);
            self.entry.extend_from_slice(&page[4..4 + take]);
            left -= take;
            from = next;
            next = u32::from_be_bytes([page[0], page[1], page[2], page[3]]);
        }
        if next != 0 {
            return Err(self.bad(from, "an overflow chain longer than its payload"));
        }
        Ok(())
    }
}

/// The child being walked of interior frame `f`: the left child of cell `next`, or the
/// right-most child.
fn child_of(f: &Frame, table: bool) -> Result<u32, Error> {
    let at = if f.next < f.cells {
        let at = usize::from(u16::from_be_bytes([
            f.page[12 + 2 * f.next],
            f.page[12 + 2 * f.next + 1],
        ]));
        if at + 4 > f.page.len() {
            let why = format!("its page {} is malformed: a cell runs off the page", f.pgno);
            return Err(if table {
                Error::Malformed(why)
            } else {
                Error::NotExtensible(why)
            });
        }
        at
    } else {
        8
    };
    Ok(u32::from_be_bytes([
        f.page[at],
        f.page[at + 1],
        f.page[at + 2],
        f.page[at + 3],
    ]))
}
