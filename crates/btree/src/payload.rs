//! How a cell's payload is split between the cell and overflow pages: the one piece of
//! arithmetic table and index pages share (they differ only in how much a cell holds).
//! It runs once per row: `#[inline]` lets it be inlined into the leaf filling, which is
//! in another module (and may be in another codegen unit).

/// How a row's payload is split between its cell and overflow pages.
///
/// For a table leaf of usable size `u`: `x = u - 35` bytes fit in the cell; beyond that
/// `m = (u - 12) * 32 / 255 - 23` are kept, or `k = m + (p - m) % (u - 4)` when that
/// still fits, and the rest goes to overflow pages of `u - 4` bytes each.
#[inline]
pub fn local_payload(usable: usize, payload: usize) -> usize {
    split_payload(usable, payload, usable - 35)
}

/// The local part of a payload on a page whose cells hold at most `x` payload bytes
/// (tables and indexes differ only in `x`; `m` and `k` are the same).
#[inline]
pub(crate) fn split_payload(usable: usize, payload: usize, x: usize) -> usize {
    if payload <= x {
        return payload;
    }
    let m = (usable - 12) * 32 / 255 - 23;
    let k = m + (payload - m) % (usable - 4);
    if k <= x {
        k
    } else {
        m
    }
}
