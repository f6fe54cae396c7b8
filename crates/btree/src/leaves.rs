//! Table leaf pages: [`Leaves`], sealed leaves for a run of rows, filled on any thread
//! (leaves need no page numbers) and handed to a [`crate::TableWriter`] to be numbered and
//! written; and `Leaf`, the page being filled, which the writer also uses for page 1.

use crate::payload::local_payload;
use crate::record::{self, Record, RecordBuilder, Value};
use crate::varint;
use crate::Error;

/// The b-tree page type of a table leaf.
pub(crate) const LEAF_TABLE: u8 = 0x0d;

/// The content-start field: 65536 is written as 0.
pub(crate) fn content_start(top: usize) -> [u8; 2] {
    ((top % 65536) as u16).to_be_bytes()
}

/// A table leaf page being filled: cells from the end of the page down, their pointers
/// after the b-tree header (at `hdr`: 100 on page 1, else 0). The page is
/// `buf[base..base + size]`; the bytes before it are pages sealed earlier (see
/// [`Leaf::next_page`]), so leaves made in a row share one buffer and are never copied.
pub(crate) struct Leaf {
    pub(crate) buf: Vec<u8>,
    pub(crate) base: usize,
    pub(crate) size: usize,
    pub(crate) hdr: usize,
    pub(crate) cells: usize,
    pub(crate) top: usize,
    pub(crate) max_rowid: i64,
}

impl Leaf {
    pub(crate) fn new(page_size: usize, hdr: usize) -> Leaf {
        Leaf {
            buf: vec![0; page_size],
            base: 0,
            size: page_size,
            hdr,
            cells: 0,
            top: page_size,
            max_rowid: 0,
        }
    }

    #[inline]
    pub(crate) fn page(&mut self) -> &mut [u8] {
        &mut self.buf[self.base..self.base + self.size]
    }

    /// Whether a cell of `size` bytes (and its pointer) still fits.
    #[inline]
    pub(crate) fn fits(&self, size: usize) -> bool {
        self.hdr + 8 + 2 * (self.cells + 1) + size <= self.top
    }

    pub(crate) fn push(&mut self, cell: &[u8], rowid: i64) {
        self.alloc(cell.len(), rowid).copy_from_slice(cell);
    }

    /// Room for a cell of `size` bytes (which must fit), with its pointer set.
    #[inline]
    pub(crate) fn alloc(&mut self, size: usize, rowid: i64) -> &mut [u8] {
        debug_assert!(self.fits(size));
        self.top -= size;
        let ptr = self.hdr + 8 + 2 * self.cells;
        let top = self.top;
        self.cells += 1;
        self.max_rowid = rowid;
        let page = self.page();
        page[ptr..ptr + 2].copy_from_slice(&(top as u16).to_be_bytes());
        &mut page[top..top + size]
    }

    /// Writes the page header: the page is then complete (see [`Leaf::next_page`]).
    pub(crate) fn seal(&mut self, flag: u8) -> &[u8] {
        let (h, cells, top) = (self.hdr, self.cells, self.top);
        let page = self.page();
        page[h] = flag;
        page[h + 1..h + 3].fill(0); // no freeblocks
        page[h + 3..h + 5].copy_from_slice(&(cells as u16).to_be_bytes());
        page[h + 5..h + 7].copy_from_slice(&content_start(top));
        page[h + 7] = 0; // no fragmented bytes
        self.page()
    }

    /// Starts an empty page after the sealed one, zeroed (unused space holds no stale
    /// bytes); the sealed pages stay in `buf[..base]`.
    pub(crate) fn next_page(&mut self) {
        self.base += self.size;
        self.buf.resize(self.base + self.size, 0);
        self.cells = 0;
        self.top = self.size;
    }

    /// Forgets the sealed pages; with `keep_page`, the page being filled moves to the
    /// front, else it is emptied too.
    pub(crate) fn drop_sealed(&mut self, keep_page: bool) {
        if keep_page {
            self.buf.copy_within(self.base..self.base + self.size, 0);
            self.buf.truncate(self.size);
        } else {
            self.buf.clear();
            self.buf.resize(self.size, 0);
            self.cells = 0;
            self.top = self.size;
        }
        self.base = 0;
    }
}

/// Table leaf pages filled away from the file, on any thread: rows in strictly
/// increasing rowid order, each leaf packed as full as its cells allow. A row too big for
/// its cell keeps its overflow bytes here, with a zero pointer in the cell, until a
/// [`crate::TableWriter`] (which numbers the pages) writes them: see
/// [`crate::TableWriter::append`].
///
/// Invariants: `leaf.buf[..leaf.base]` holds whole sealed pages, `max_rowids[i]` is the
/// largest rowid of page `i`, and `patches` are in page order; the leaf being filled
/// holds the rows after the last sealed page.
pub struct Leaves {
    pub(crate) page_size: usize,
    /// The sealed pages, then the leaf being filled.
    pub(crate) leaf: Leaf,
    pub(crate) max_rowids: Vec<i64>,
    /// Overflowing cells: (page index, offset of the 4-byte pointer in the page, bytes of
    /// `spill` to write to overflow pages).
    pub(crate) patches: Vec<(usize, usize, std::ops::Range<usize>)>,
    pub(crate) spill: Vec<u8>,
    pub(crate) record: Vec<u8>,
    pub(crate) first_rowid: Option<i64>,
    pub(crate) last_rowid: Option<i64>,
    pub(crate) rows: u64,
}

impl Leaves {
    /// Empty leaves for pages of `page_size` bytes (the database's).
    pub fn new(page_size: usize) -> Leaves {
        Leaves {
            page_size,
            leaf: Leaf::new(page_size, 0),
            max_rowids: vec![],
            patches: vec![],
            spill: vec![],
            record: Vec::with_capacity(256),
            first_rowid: None,
            last_rowid: None,
            rows: 0,
        }
    }

    /// Rows held.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Appends a row. `values` are the record's columns in table order; an INTEGER
    /// PRIMARY KEY column must be `Value::Null` (its value is the rowid).
    pub fn push(&mut self, rowid: i64, values: &[Value<'_>]) -> Result<(), Error> {
        let (head, body) = record::parts(values);
        self.push_with(
            rowid,
            head + body,
            |cell| record::write(values, head, body, cell),
            |out| record::encode(values, out),
        )
    }

    /// Appends a row whose record was built with a [`RecordBuilder`].
    #[inline]
    pub fn push_built(&mut self, rowid: i64, built: &RecordBuilder) -> Result<(), Error> {
        self.push_with(
            rowid,
            built.len(),
            |cell| built.write(cell),
            |out| built.encode(out),
        )
    }

    /// Appends a row of a `payload`-byte record: in the common case the whole record
    /// fits in the cell and `write` puts it there (exactly `payload` bytes); otherwise
    /// `encode` appends it to a buffer and [`Leaves::push_record`] splits it.
    #[inline(always)]
    fn push_with(
        &mut self,
        rowid: i64,
        payload: usize,
        write: impl FnOnce(&mut [u8]),
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), Error> {
        if local_payload(self.page_size, payload) == payload {
            self.check_order(rowid)?;
            let size = varint::len(payload as u64) + varint::len(rowid as u64) + payload;
            if !self.leaf.fits(size) {
                self.seal_page();
            }
            let cell = self.leaf.alloc(size, rowid);
            let mut n = varint::put(cell, payload as u64);
            n += varint::put(&mut cell[n..], rowid as u64);
            write(&mut cell[n..]);
            self.counted(rowid);
            return Ok(());
        }
        let mut record = std::mem::take(&mut self.record);
        record.clear();
        encode(&mut record);
        let r = self.push_encoded(rowid, &record);
        self.record = record;
        r
    }

    /// Appends a row whose record is already encoded.
    pub fn push_record(&mut self, rowid: i64, record: Record<'_>) -> Result<(), Error> {
        self.push_encoded(rowid, record.as_bytes())
    }

    /// Appends a row of `record`, bytes that are a record (made by this crate's encoders
    /// or checked by [`Record::parse`]).
    fn push_encoded(&mut self, rowid: i64, record: &[u8]) -> Result<(), Error> {
        self.check_order(rowid)?;
        let payload = record.len();
        let local = local_payload(self.page_size, payload);
        let head = varint::len(payload as u64) + varint::len(rowid as u64);
        let size = head + local + if local < payload { 4 } else { 0 };
        if !self.leaf.fits(size) {
            self.seal_page();
        }
        let cell = self.leaf.alloc(size, rowid);
        let mut n = varint::put(cell, payload as u64);
        n += varint::put(&mut cell[n..], rowid as u64);
        debug_assert_eq!(n, head);
        cell[n..n + local].copy_from_slice(&record[..local]);
        if local < payload {
            // The pointer stays 0 until the writer knows the first overflow page.
            let at = self.leaf.top + n + local;
            let start = self.spill.len();
            self.spill.extend_from_slice(&record[local..]);
            self.patches
                .push((self.max_rowids.len(), at, start..self.spill.len()));
        }
        self.counted(rowid);
        Ok(())
    }

    pub(crate) fn check_order(&self, rowid: i64) -> Result<(), Error> {
        match self.last_rowid {
            Some(last) if rowid <= last => Err(Error::RowidOrder { last, got: rowid }),
            _ => Ok(()),
        }
    }

    #[inline]
    fn counted(&mut self, rowid: i64) {
        self.first_rowid.get_or_insert(rowid);
        self.last_rowid = Some(rowid);
        self.rows += 1;
    }

    /// Seals the leaf being filled, if it holds a cell.
    pub(crate) fn seal_page(&mut self) {
        if self.leaf.cells == 0 {
            return;
        }
        let max = self.leaf.max_rowid;
        self.leaf.seal(LEAF_TABLE);
        self.max_rowids.push(max);
        self.leaf.next_page();
    }

    /// Forgets the sealed pages (written elsewhere), keeping the leaf being filled and
    /// the overflow bytes of its cells.
    pub(crate) fn drop_sealed(&mut self) {
        let sealed = self.max_rowids.len();
        self.leaf.drop_sealed(true);
        self.max_rowids.clear();
        let keep = self.patches.partition_point(|p| p.0 < sealed);
        let cut = self
            .patches
            .get(keep)
            .map_or(self.spill.len(), |p| p.2.start);
        self.patches.drain(..keep);
        self.spill.drain(..cut);
        for p in &mut self.patches {
            debug_assert_eq!(p.0, sealed, "only the leaf being filled is left");
            p.0 = 0;
            p.2 = p.2.start - cut..p.2.end - cut;
        }
    }

    /// Forgets every row, keeping the allocations.
    pub fn clear(&mut self) {
        self.leaf.drop_sealed(false);
        self.max_rowids.clear();
        self.patches.clear();
        self.spill.clear();
        self.first_rowid = None;
        self.last_rowid = None;
        self.rows = 0;
    }
}
