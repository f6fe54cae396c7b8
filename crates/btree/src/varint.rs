//! SQLite's variable-length integers: 1 to 9 bytes, big-endian groups of 7 bits with the
//! high bit set on every byte but the last; a 9th byte carries 8 bits.

/// The number of bytes [`put`] writes for `v`.
pub fn len(v: u64) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        0x1000_0000..=0x07_ffff_ffff => 5,
        0x08_0000_0000..=0x03ff_ffff_ffff => 6,
        0x0400_0000_0000..=0x01_ffff_ffff_ffff => 7,
        0x02_0000_0000_0000..=0x00ff_ffff_ffff_ffff => 8,
        _ => 9,
    }
}

/// Writes `v` at the start of `out` and returns the number of bytes written
/// (`len(v)`; `out` must hold at least that many). The one-byte case, most of a table's
/// lengths and serial types, is inlined into the caller.
#[inline(always)]
pub fn put(out: &mut [u8], v: u64) -> usize {
    if v < 0x80 {
        out[0] = v as u8;
        return 1;
    }
    put_long(out, v)
}

#[inline(never)]
fn put_long(out: &mut [u8], v: u64) -> usize {
    let n = len(v);
    if n == 9 {
        out[8] = v as u8;
        let mut rest = v >> 8;
        for i in (0..8).rev() {
            out[i] = (rest as u8 & 0x7f) | 0x80;
            rest >>= 7;
        }
        return 9;
    }
    let mut rest = v;
    for i in (0..n).rev() {
        out[i] = (rest as u8 & 0x7f) | if i + 1 < n { 0x80 } else { 0 };
        rest >>= 7;
    }
    debug_assert_eq!(rest, 0);
    n
}

/// Reads a varint from the start of `b`: (value, bytes read).
pub fn get(b: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(8) {
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    ((v << 8) | u64::from(b[8]), 9)
}

/// A varint at the start of `b`, or `None` if `b` ends inside it (for bytes not yet
/// trusted).
#[inline]
pub(crate) fn get_checked(b: &[u8]) -> Option<(u64, usize)> {
    // One byte, the common case (every serial type below 128: short texts, all numbers).
    match b.first() {
        Some(&x) if x & 0x80 == 0 => return Some((u64::from(x), 1)),
        None => return None,
        _ => {}
    }
    let end = b
        .iter()
        .take(8)
        .position(|&x| x & 0x80 == 0)
        .map_or(9, |i| i + 1);
    (end <= b.len()).then(|| get(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_every_length_boundary() {
        let mut cases = vec![0u64, u64::MAX, i64::MAX as u64, (-1i64) as u64];
        for bits in [7, 14, 21, 28, 35, 42, 49, 56] {
            cases.push((1u64 << bits) - 1);
            cases.push(1u64 << bits);
        }
        for v in cases {
            let mut b = [0u8; 9];
            let n = put(&mut b, v);
            assert_eq!(n, len(v), "{v:#x}");
            assert_eq!(get(&b), (v, n), "{v:#x}");
        }
        let mut b = [0u8; 9];
        assert_eq!(put(&mut b, 0x80), 2);
        assert_eq!(&b[..2], &[0x81, 0x00]);
    }
}
