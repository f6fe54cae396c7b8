//! A batch: a block of typed rows, backed by one text arena.
//!
//! Invariants: `cells.len() == rows() * ncols`; every `Cell::Text(span)` lies inside
//! `text` and is valid UTF-8 (checked when the row was added), every `Cell::Blob(span)`
//! lies inside `text`; `lines.len() == rows()`.
//! A batch of *records* instead (for the direct engine, see [`Batch::push_record`]) holds
//! no cells: `records.len() == rows()`, row `i`'s SQLite record being the `i`th.
//! A batch is reused after it is written (`clear` keeps the allocations), so the hot path
//! allocates per batch, not per row or per field.

/// One value of a batch. Text lives in the batch's arena.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// NULL.
    Null,
    /// An INTEGER.
    Integer(i64),
    /// A REAL.
    Real(f64),
    /// Made only by [`Batch::push_text`]: a span of that batch's arena.
    Text(TextSpan),
    /// A BLOB, made only by [`Batch::push_blob`]: a span of that batch's arena.
    Blob(TextSpan),
}

/// Where a text (or blob) value lies in its batch's arena. Its fields are private: a
/// span can only come from [`Batch::push_text`], which makes it whole UTF-8 (or
/// [`Batch::push_blob`], whose spans are only ever read as bytes), and a batch takes no
/// span from outside (see [`Batch::push`]); so reading a text back needs no check.
///
/// Offsets and lengths are 48 bits (a low `u32` and a high `u16` each), so a span is
/// exact for any arena up to 256 TiB, far past 4 GiB, while a [`Cell`] stays 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSpan {
    start: u32,
    len: u32,
    start_hi: u16,
    len_hi: u16,
}

/// The largest arena a span can address: 2^48 bytes.
const MAX_ARENA: u64 = 1 << 48;

impl TextSpan {
    /// The span of `len` bytes from `start`, which must end within [`MAX_ARENA`].
    #[inline]
    fn new(start: usize, len: usize) -> TextSpan {
        let (s, l) = (start as u64, len as u64);
        debug_assert!(s + l <= MAX_ARENA);
        TextSpan {
            start: s as u32,
            len: l as u32,
            start_hi: (s >> 32) as u16,
            len_hi: (l >> 32) as u16,
        }
    }

    #[inline]
    fn start_usize(self) -> usize {
        ((u64::from(self.start_hi) << 32) | u64::from(self.start)) as usize
    }

    #[inline]
    fn len_usize(self) -> usize {
        self.len() as usize
    }

    /// The text's length in bytes.
    pub fn len(self) -> u64 {
        (u64::from(self.len_hi) << 32) | u64::from(self.len)
    }

    /// Whether the text is empty.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// A value borrowed from a batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// NULL.
    Null,
    /// An INTEGER.
    Integer(i64),
    /// A REAL.
    Real(f64),
    /// TEXT, valid UTF-8.
    Text(&'a str),
    /// A BLOB.
    Blob(&'a [u8]),
}

/// Rows of `ncols` typed values. Where each row came from is kept for error messages.
#[derive(Debug, Default)]
pub struct Batch {
    ncols: usize,
    cells: Vec<Cell>,
    text: Vec<u8>,
    lines: Vec<RowOrigin>,
    records: liteload_btree::Records,
}

/// The line and record number a row came from (the file is the batch's input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowOrigin {
    /// The input line the row starts on, from 1.
    pub line: u64,
    /// The input record the row is, from 1 (the header is not a record).
    pub record: u64,
}

impl RowOrigin {
    /// Where the row is in input `path`: its line and record, column 1 (a refusal is
    /// about the whole row).
    pub fn position(self, path: &std::sync::Arc<str>) -> crate::error::Position {
        crate::error::Position {
            path: path.clone(),
            line: self.line,
            column: 1,
            record: self.record,
            byte: 0,
        }
    }
}

impl Batch {
    /// An empty batch of rows `ncols` wide.
    pub fn new(ncols: usize) -> Batch {
        Batch {
            ncols,
            ..Batch::default()
        }
    }

    /// Empties the batch, keeping its allocations, and sets its width.
    pub fn clear(&mut self, ncols: usize) {
        self.ncols = ncols;
        self.cells.clear();
        self.text.clear();
        self.lines.clear();
        self.records.clear();
    }

    /// Columns per row.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.lines.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Moves every row's origin `lines` lines and `records` records on (for rows read
    /// from a part of an input whose numbering started at 1).
    pub fn shift_origins(&mut self, lines: u64, records: u64) {
        for o in &mut self.lines {
            o.line += lines;
            o.record += records;
        }
    }

    /// Bytes of text held, to bound a batch's memory.
    pub fn text_bytes(&self) -> usize {
        self.text.len() + self.records.byte_len()
    }

    /// Appends a row given as an encoded SQLite record instead of cells; a batch holds
    /// either kind of row, never both. Finish the row with [`Batch::finish_row`].
    #[inline]
    pub fn push_record(&mut self, record: &liteload_btree::RecordBuilder) {
        debug_assert!(self.cells.is_empty(), "a batch of cells");
        self.records.push(record);
    }

    /// Appends a row given as a record already checked ([`liteload_btree::Record::parse`]),
    /// as [`Batch::push_record`] does.
    #[inline]
    pub fn push_parsed(&mut self, record: liteload_btree::Record<'_>) {
        debug_assert!(self.cells.is_empty(), "a batch of cells");
        self.records.push_record(record);
    }

    /// The rows as encoded records, if this is a batch of records.
    pub fn records(&self) -> Option<&liteload_btree::Records> {
        (!self.records.is_empty()).then_some(&self.records)
    }

    /// Appends a text value to the current (unfinished) row.
    #[inline]
    pub fn push_text(&mut self, s: &str) {
        let span = self.append(s.as_bytes());
        self.cells.push(Cell::Text(span));
    }

    /// Appends a blob value to the current (unfinished) row.
    #[inline]
    pub fn push_blob(&mut self, b: &[u8]) {
        let span = self.append(b);
        self.cells.push(Cell::Blob(span));
    }

    /// Copies `bytes` to the end of the arena and returns their span.
    ///
    /// An arena that would pass 2^48 bytes cannot grow: that is reported as the
    /// allocation failure it is (`handle_alloc_error`, which aborts as any failed
    /// allocation does), never as a wrapped span, so no size yields a span that reads
    /// other bytes than were pushed. No 64-bit target in use can map that much memory.
    #[inline]
    fn append(&mut self, bytes: &[u8]) -> TextSpan {
        let start = self.text.len();
        let fits = (start as u64)
            .checked_add(bytes.len() as u64)
            .is_some_and(|end| end <= MAX_ARENA);
        if !fits {
            std::alloc::handle_alloc_error(std::alloc::Layout::new::<[u8; 1]>());
        }
        self.text.extend_from_slice(bytes);
        TextSpan::new(start, bytes.len())
    }

    /// Appends a NULL, INTEGER or REAL value to the current (unfinished) row.
    ///
    /// # Panics
    /// On a text or blob cell (use [`Batch::push_text`] or [`Batch::push_blob`]): its
    /// span would belong to another batch's arena, and reading it here could split a
    /// character.
    #[inline]
    pub fn push(&mut self, c: Cell) {
        assert!(
            !matches!(c, Cell::Text(_) | Cell::Blob(_)),
            "Batch::push takes no text or blob cell; use push_text or push_blob"
        );
        self.cells.push(c);
    }

    /// Ends the current row. It must hold exactly `ncols` cells.
    #[inline]
    pub fn finish_row(&mut self, origin: RowOrigin) {
        debug_assert!(
            self.cells.len() == (self.lines.len() + 1) * self.ncols
                || self.records.len() == self.lines.len() + 1
        );
        self.lines.push(origin);
    }

    /// Makes every row `ncols` wide (no narrower than now) by adding NULLs at its end:
    /// rows read before their input named the columns added since. Cells keep their
    /// spans (the arena is unchanged). A batch of records is left as it is: a record
    /// shorter than its table reads as NULL in the missing columns.
    pub fn widen(&mut self, ncols: usize) {
        assert!(ncols >= self.ncols, "a batch is widened, never narrowed");
        if ncols == self.ncols || !self.records.is_empty() {
            self.ncols = ncols;
            return;
        }
        let old = std::mem::take(&mut self.cells);
        self.cells.reserve(self.lines.len() * ncols);
        if self.ncols > 0 {
            for row in old.chunks(self.ncols) {
                self.cells.extend_from_slice(row);
                self.cells
                    .resize(self.cells.len() + ncols - self.ncols, Cell::Null);
            }
        } else {
            self.cells.resize(self.lines.len() * ncols, Cell::Null);
        }
        self.ncols = ncols;
    }

    /// Drops the cells of an unfinished row (after a conversion error in the middle of it).
    pub fn abandon_row(&mut self) {
        self.cells.truncate(self.lines.len() * self.ncols);
    }

    /// Where row `row` came from.
    pub fn origin(&self, row: usize) -> RowOrigin {
        self.lines[row]
    }

    /// The values of row `row`.
    pub fn row(&self, row: usize) -> impl ExactSizeIterator<Item = Value<'_>> + '_ {
        let cells = &self.cells[row * self.ncols..(row + 1) * self.ncols];
        cells.iter().map(move |c| self.value(*c))
    }

    /// The value of a cell of this batch (one from [`Batch::cells`]; a cell of another
    /// batch is not this one's, so this is not public).
    #[inline]
    fn value(&self, c: Cell) -> Value<'_> {
        match c {
            Cell::Null => Value::Null,
            Cell::Integer(i) => Value::Integer(i),
            Cell::Real(r) => Value::Real(r),
            Cell::Text(span) => {
                let start = span.start_usize();
                let b = &self.text[start..start + span.len_usize()];
                // SAFETY: a span is only made by `push_text` from a `&str` into this
                // batch's arena (spans cannot be built outside this module, and `push`
                // refuses text cells, so none comes from another batch); the arena is
                // only appended to until `clear`, which also drops every cell. So every
                // span is a whole UTF-8 string.
                Value::Text(unsafe { std::str::from_utf8_unchecked(b) })
            }
            Cell::Blob(span) => {
                let start = span.start_usize();
                Value::Blob(&self.text[start..start + span.len_usize()])
            }
        }
    }

    /// All cells, row-major.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "no text or blob cell")]
    fn a_text_cell_from_another_batch_is_refused() {
        let mut a = Batch::new(1);
        a.push_text("é");
        a.finish_row(RowOrigin::default());
        let foreign = a.cells()[0];
        let mut b = Batch::new(1);
        b.push(foreign);
    }

    #[test]
    #[should_panic(expected = "no text or blob cell")]
    fn a_blob_cell_from_another_batch_is_refused() {
        let mut a = Batch::new(1);
        a.push_blob(b"x");
        a.finish_row(RowOrigin::default());
        let foreign = a.cells()[0];
        Batch::new(1).push(foreign);
    }

    #[test]
    fn rows_read_back_as_pushed() {
        let mut b = Batch::new(3);
        b.push(Cell::Integer(7));
        b.push_text("héllo");
        b.push(Cell::Null);
        b.finish_row(RowOrigin { line: 2, record: 1 });
        b.push(Cell::Real(1.5));
        b.push_text("");
        b.abandon_row();
        b.push_blob(b"\xff\0");
        b.push_text("é");
        b.push_blob(b"");
        b.finish_row(RowOrigin { line: 3, record: 2 });
        assert_eq!(b.rows(), 2);
        let row: Vec<Value> = b.row(0).collect();
        assert_eq!(
            row,
            vec![Value::Integer(7), Value::Text("héllo"), Value::Null]
        );
        let row: Vec<Value> = b.row(1).collect();
        assert_eq!(
            row,
            vec![Value::Blob(b"\xff\0"), Value::Text("é"), Value::Blob(b"")]
        );
        b.clear(2);
        assert!(b.is_empty());
        assert_eq!(b.ncols(), 2);
    }

    /// Past 4 GiB of arena (where 32-bit spans would wrap), every value still reads
    /// back as exactly the bytes pushed: a text after 4 GiB of blobs is that text.
    #[test]
    fn spans_past_four_gib_read_back_exactly() {
        let mut b = Batch::new(1);
        // Zeroed pages from the allocator: the source costs no memory until read.
        let big = vec![0u8; (u32::MAX as usize) - 2];
        b.push_blob(&big);
        b.finish_row(RowOrigin::default());
        drop(big);
        b.push_blob(b"\xc3\xc3\xc3");
        b.finish_row(RowOrigin::default());
        b.push_text("a");
        b.finish_row(RowOrigin::default());
        b.push_text("é past 4 GiB");
        b.finish_row(RowOrigin::default());
        assert!(b.text_bytes() > u32::MAX as usize);
        assert_eq!(b.row(1).next(), Some(Value::Blob(b"\xc3\xc3\xc3")));
        assert_eq!(b.row(2).next(), Some(Value::Text("a")));
        assert_eq!(b.row(3).next(), Some(Value::Text("é past 4 GiB")));
        match b.cells()[0] {
            Cell::Blob(span) => assert_eq!(span.len(), u64::from(u32::MAX) - 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cell_stays_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Cell>(), 16);
    }

    #[test]
    fn a_widened_batch_has_nulls_at_the_end_of_each_row() {
        let mut b = Batch::new(2);
        b.push_text("a");
        b.push(Cell::Integer(1));
        b.finish_row(RowOrigin { line: 1, record: 1 });
        b.push(Cell::Null);
        b.push_text("é");
        b.finish_row(RowOrigin { line: 2, record: 2 });
        b.widen(4);
        assert_eq!(b.ncols(), 4);
        let rows: Vec<Vec<Value>> = (0..2).map(|r| b.row(r).collect()).collect();
        assert_eq!(
            rows,
            vec![
                vec![
                    Value::Text("a"),
                    Value::Integer(1),
                    Value::Null,
                    Value::Null
                ],
                vec![Value::Null, Value::Text("é"), Value::Null, Value::Null],
            ]
        );
        assert_eq!(b.origin(1), RowOrigin { line: 2, record: 2 });
    }
}
