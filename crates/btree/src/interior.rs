//! Table interior pages: a cell (left child, largest rowid beneath it) per child but the
//! last, which is the right-most pointer.

use crate::leaves::content_start;
use crate::varint;

/// The b-tree page type of a table interior page.
pub(crate) const INTERIOR_TABLE: u8 = 0x05;
/// The largest interior cell: child page (4) + 9-byte rowid varint, and its pointer (2).
pub(crate) const MAX_INTERIOR_CELL: usize = 4 + 9 + 2;

/// An interior page over `group` (b-tree header at `hdr`): a cell (child, largest
/// rowid beneath it) for every child but the last, which is the right-most pointer.
/// One child alone makes a page of no cells, as SQLite itself makes of page 1 when
/// the schema's one cell does not fit there.
pub(crate) fn interior_page(page_size: usize, group: &[(u32, i64)], hdr: usize) -> Vec<u8> {
    let mut page = vec![0u8; page_size];
    let cells = group.len() - 1;
    let mut top = page_size;
    for (i, &(child, max)) in group[..cells].iter().enumerate() {
        let mut cell = [0u8; 13];
        cell[..4].copy_from_slice(&child.to_be_bytes());
        let n = 4 + varint::put(&mut cell[4..], max as u64);
        top -= n;
        page[top..top + n].copy_from_slice(&cell[..n]);
        let ptr = hdr + 12 + 2 * i;
        page[ptr..ptr + 2].copy_from_slice(&(top as u16).to_be_bytes());
    }
    debug_assert!(
        hdr + 12 + 2 * cells <= top,
        "interior cells overlap their pointers"
    );
    page[hdr] = INTERIOR_TABLE;
    page[hdr + 3..hdr + 5].copy_from_slice(&(cells as u16).to_be_bytes());
    page[hdr + 5..hdr + 7].copy_from_slice(&content_start(top));
    page[hdr + 8..hdr + 12].copy_from_slice(&group[cells].0.to_be_bytes());
    page
}
