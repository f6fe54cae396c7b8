//! Index b-trees, built bottom-up from records already in SQLite's order.
//!
//! An index entry is a record of the key columns followed by the row's rowid; entries
//! are ordered by [`compare`] (SQLite's order for the BINARY collation: NULL, then
//! numbers by value, then text and blobs by their bytes; field by field, the rowid last).
//!
//! Unlike a table b-tree, an index keeps entries in its interior pages too: the entry
//! between two neighbouring pages moves up into their parent as the divider. So the
//! pages of each level are planned over the entries (or, above the leaves, over the
//! dividers): as many as fit, then the next one goes up, and so on. A plan never ends a
//! level with a page of no cells: when the last item alone would be left over, the page
//! before it gives up its last item to be the divider instead.
//!
//! | page | header | cell |
//! |---|---|---|
//! | 0x0A index leaf | 8 bytes | payload size (varint), local payload, [first overflow page] |
//! | 0x02 index interior | 12 bytes (right-most child last) | left child (4 bytes), payload size (varint), local payload, [first overflow page] |
//!
//! Local payload: `X = (U - 12) * 64 / 255 - 23`, `M = (U - 12) * 32 / 255 - 23`,
//! `K = M + (P - M) % (U - 4)`; `P` if `P <= X`, else `K` if `K <= X`, else `M`.

use std::cmp::Ordering;

use crate::record::{Field, Fields};
use crate::varint;

pub(crate) const LEAF_INDEX: u8 = 0x0a;
pub(crate) const INTERIOR_INDEX: u8 = 0x02;

/// How an index entry's payload of `payload` bytes is split between cell and overflow.
pub fn local_payload(usable: usize, payload: usize) -> usize {
    crate::payload::split_payload(usable, payload, (usable - 12) * 64 / 255 - 23)
}

/// The bytes a cell of this payload takes in a page, its 2-byte pointer included
/// (`interior`: plus the 4-byte child).
pub(crate) fn cell_cost(usable: usize, payload: usize, interior: bool) -> usize {
    let local = local_payload(usable, payload);
    let overflow = if local < payload { 4 } else { 0 };
    let child = if interior { 4 } else { 0 };
    child + varint::len(payload as u64) + local + overflow + 2
}

/// Pages of one level over `n` items, each page a run of items `start..end`; the item at
/// `end` (for every page but the last) is the divider that goes up a level. `cost(i)` is
/// what item `i` takes in a page of `room` bytes. Every page holds at least one item.
///
/// For a leaf level the items are entries; for an interior level item `i` is the cell
/// (child `i`, divider `i + 1`), and the last child is the page's right-most pointer
/// rather than an item, so the caller plans over `children - 1` items and a page
/// `start..end` has children `start..=end`.
pub(crate) fn plan(n: usize, room: usize, cost: impl Fn(usize) -> usize) -> Vec<(usize, usize)> {
    let mut pages = vec![];
    let mut start = 0;
    loop {
        let mut end = start;
        let mut used = 0;
        while end < n && used + cost(end) <= room {
            used += cost(end);
            end += 1;
        }
        debug_assert!(end > start || n == 0, "a page takes at least one item");
        if end >= n {
            pages.push((start, n));
            return pages;
        }
        if end + 1 == n {
            // Only item `end` would be left, and it must go up as a divider: then the
            // last page would be empty. This page gives up its last item instead.
            debug_assert!(end - start >= 2, "a page holds at least two items");
            pages.push((start, end - 1));
            pages.push((end, n));
            return pages;
        }
        pages.push((start, end));
        start = end + 1;
    }
}

impl Field<'_> {
    fn class(&self) -> u8 {
        match self {
            Field::Null => 0,
            Field::Int(_) | Field::Real(_) => 1,
            Field::Text(_) => 2,
            Field::Blob(_) => 3,
        }
    }
}

/// An integer against a float, as SQLite's sqlite3IntFloatCompare does.
fn int_float(i: i64, f: f64) -> Ordering {
    if f < -9_223_372_036_854_775_808.0 {
        return Ordering::Greater;
    }
    if f >= 9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    match i.cmp(&(f as i64)) {
        Ordering::Equal => (i as f64).partial_cmp(&f).unwrap_or(Ordering::Equal),
        o => o,
    }
}

fn field_cmp(a: Field<'_>, b: Field<'_>) -> Ordering {
    match (a, b) {
        (Field::Int(x), Field::Int(y)) => x.cmp(&y),
        (Field::Real(x), Field::Real(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Field::Int(x), Field::Real(y)) => int_float(x, y),
        (Field::Real(x), Field::Int(y)) => int_float(y, x).reverse(),
        (Field::Text(x), Field::Text(y)) | (Field::Blob(x), Field::Blob(y)) => x.cmp(y),
        _ => a.class().cmp(&b.class()),
    }
}

/// SQLite's order of two records (BINARY collation, ascending), field by field; a
/// record that is a prefix of the other sorts first.
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let mut fa = Fields::new(a);
    let mut fb = Fields::new(b);
    loop {
        match (fa.next(), fb.next()) {
            (Some(x), Some(y)) => match field_cmp(x, y) {
                Ordering::Equal => continue,
                o => return o,
            },
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
        }
    }
}

/// The two fields of a record of exactly two integers (an index entry of one integer key
/// and its rowid), or `None`. Such entries sort as the pairs do.
pub fn int_pair(rec: &[u8]) -> Option<(i64, i64)> {
    let mut f = Fields::new(rec);
    match (f.next(), f.next(), f.next()) {
        (Some(Field::Int(a)), Some(Field::Int(b)), None) => Some((a, b)),
        _ => None,
    }
}

/// A 64-bit prefix of an index entry's place in [`compare`] order, for sorting many
/// entries without decoding them each time two meet: where `a`'s prefix is less than
/// `b`'s, `compare(a, b)` is `Less`. The flag says the prefix holds the whole key: when
/// both entries' flags are set and their prefixes are equal, their keys are equal too
/// and only the rowids (their last fields) decide. `keys` is the number of key fields
/// (all but the rowid); only a one-field key can be held whole.
///
/// Layout: the first field's class (NULL, number, text, blob) in the top byte, then
/// - a number: the top 56 bits of its value as an order-preserving f64 (rounding an
///   integer to the nearest f64 keeps order, ties left to [`compare`]; whole when the
///   value is a real or an integer within ±2^53 and the dropped bits are zero);
/// - text or a blob: its first 6 bytes, zero-padded, then its length capped at 7 (so a
///   value that is a prefix of another sorts first; whole when at most 6 bytes).
pub fn sort_prefix(rec: &[u8], keys: usize) -> (u64, bool) {
    let mut fields = Fields::new(rec);
    let one = keys == 1;
    let number = |f: f64| {
        // -0.0 equals 0.0 in SQLite; the map below would put it first.
        let b = if f == 0.0 { 0 } else { f.to_bits() };
        let ordered = if b >> 63 == 1 { !b } else { b | (1 << 63) };
        ((1u64 << 56) | (ordered >> 8), ordered & 0xff == 0)
    };
    let bytes = |class: u64, b: &[u8]| {
        let mut p = [0u8; 8];
        p[0] = class as u8;
        let n = b.len().min(6);
        p[1..1 + n].copy_from_slice(&b[..n]);
        p[7] = b.len().min(7) as u8;
        (u64::from_be_bytes(p), b.len() <= 6)
    };
    let (prefix, whole) = match fields.next() {
        None | Some(Field::Null) => (0, true),
        Some(Field::Int(i)) => {
            let (p, w) = number(i as f64);
            (p, w && i.unsigned_abs() <= 1 << 53)
        }
        Some(Field::Real(f)) => number(f),
        Some(Field::Text(t)) => bytes(2, t),
        Some(Field::Blob(b)) => bytes(3, b),
    };
    (prefix, whole && one)
}

/// The entry of a one-field key whose [`sort_prefix`] is `prefix` (said whole) and of
/// row `rowid`, appended to `out`; `false` (nothing appended) when the prefix is not of a
/// NULL, text or a blob: a number's prefix does not tell an integer from a real. Lets a
/// caller that knows each entry's rowid write sorted entries without reading them again.
pub fn entry_from_prefix(prefix: u64, rowid: i64, out: &mut Vec<u8>) -> bool {
    use crate::record::{encode, Value};
    let p = prefix.to_be_bytes();
    let len = usize::from(p[7]).min(6);
    let key = match p[0] {
        0 => Value::Null,
        2 => Value::Text(&p[1..1 + len]),
        3 => Value::Blob(&p[1..1 + len]),
        _ => return false,
    };
    encode(&[key, Value::Integer(rowid)], out);
    true
}

/// Index entry `entry` (whose last field, the rowid, is an integer) with its rowid
/// changed to `map(rowid)`, written to `out` (cleared first): the key fields' bytes are
/// kept as they are. For entries copied from one file into another where the rows were
/// numbered anew. `Ok(None)` where `map` gives none; refused: a record whose last field
/// is not an integer.
pub fn with_rowid<'o>(
    entry: crate::Record<'_>,
    map: impl FnOnce(i64) -> Option<i64>,
    out: &'o mut Vec<u8>,
) -> Result<Option<crate::Record<'o>>, crate::Error> {
    let bytes = entry.as_bytes();
    let (head, mut at) = varint::get(bytes);
    let head = head as usize;
    // The last serial type's position in the header, and its field's in the body.
    let (mut last, mut body, mut last_body) = (None, head, head);
    while at < head {
        let (t, n) = varint::get(&bytes[at..head]);
        last = Some((at, t));
        last_body = body;
        body += match t {
            0 | 8..=11 => 0,
            1..=4 => t as usize,
            5 => 6,
            6 | 7 => 8,
            _ => ((t - 12) / 2) as usize,
        };
        at += n;
    }
    let Some((pos, t)) = last.filter(|&(_, t)| matches!(t, 1..=6 | 8 | 9)) else {
        return Err(crate::Error::NotARecord(
            "an index entry's last field is not an integer rowid",
        ));
    };
    let old = match t {
        8 => 0,
        9 => 1,
        _ => {
            let b = &bytes[last_body..body];
            let mut v = if b[0] & 0x80 != 0 { -1i64 } else { 0 };
            for &x in b {
                v = (v << 8) | i64::from(x);
            }
            v
        }
    };
    let Some(rowid) = map(old) else {
        return Ok(None);
    };
    let (new_type, len) = crate::record::serial_type(&crate::Value::Integer(rowid));
    out.clear();
    out.extend_from_slice(&bytes[..pos]);
    out.push(new_type as u8);
    out.extend_from_slice(&bytes[pos + 1..last_body]);
    out.extend_from_slice(&rowid.to_be_bytes()[8 - len..]);
    // The header is as long as before (a one-byte type for a one-byte type), and the
    // last field's body is as long as its new type says.
    Ok(Some(crate::Record::encoded(out)))
}

/// Whether two index entries have the same key: their first `keys` fields equal and none
/// of them NULL (what a UNIQUE index forbids; NULLs are distinct in SQLite).
pub fn same_key(a: &[u8], b: &[u8], keys: usize) -> bool {
    Fields::new(a)
        .zip(Fields::new(b))
        .take(keys)
        .all(|(x, y)| !matches!(x, Field::Null) && field_cmp(x, y) == Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode, Value};

    fn rec(v: &[Value<'_>]) -> Vec<u8> {
        let mut out = vec![];
        encode(v, &mut out);
        out
    }

    #[test]
    fn with_rowid_changes_the_last_field_alone() {
        let keys = [
            vec![Value::Text(b"abc"), Value::Null],
            vec![Value::Real(-2.5), Value::Blob(&[0, 255])],
            vec![],
        ];
        for key in &keys {
            for old in [0i64, 1, -1, 300, i64::MAX] {
                for new in [0i64, 1, 2, -129, 1 << 40, i64::MIN] {
                    let mut values = key.clone();
                    values.push(Value::Integer(old));
                    let entry = rec(&values);
                    let mut out = vec![];
                    let got = with_rowid(
                        crate::Record::parse(&entry).unwrap(),
                        |o| (o == old).then_some(new),
                        &mut out,
                    )
                    .unwrap()
                    .unwrap()
                    .as_bytes()
                    .to_vec();
                    values.pop();
                    values.push(Value::Integer(new));
                    assert_eq!(got, rec(&values), "{key:?} {old} -> {new}");
                }
            }
        }
        let mut out = vec![];
        let text_last = rec(&[Value::Integer(1), Value::Text(b"x")]);
        assert!(with_rowid(crate::Record::parse(&text_last).unwrap(), Some, &mut out).is_err());
        let int_last = rec(&[Value::Integer(7)]);
        let none = with_rowid(crate::Record::parse(&int_last).unwrap(), |_| None, &mut out);
        assert!(matches!(none, Ok(None)));
    }

    #[test]
    fn local_payload_follows_the_format() {
        // 4096: x = 4084 * 64 / 255 - 23 = 1002, m = 489.
        assert_eq!(local_payload(4096, 1002), 1002);
        assert_eq!(local_payload(4096, 1003), 489, "k = 1003 > x, so m");
        assert_eq!(
            local_payload(4096, 5000),
            489 + (5000 - 489) % 4092,
            "k = 908"
        );
    }

    #[test]
    fn order_is_sqlites() {
        use Value::*;
        let order = [
            rec(&[Null, Integer(5)]),
            rec(&[Integer(-3), Integer(1)]),
            rec(&[Real(-2.5), Integer(1)]),
            rec(&[Integer(2), Integer(1)]),
            rec(&[Real(2.0), Integer(2)]),
            rec(&[Real(2.5), Integer(1)]),
            rec(&[Integer(i64::MAX), Integer(1)]),
            rec(&[Real(1e19), Integer(1)]),
            rec(&[Text(b""), Integer(1)]),
            rec(&[Text(b"a"), Integer(1)]),
            rec(&[Text(b"ab"), Integer(1)]),
            rec(&[Text(b"b"), Integer(1)]),
            rec(&[Blob(b""), Integer(1)]),
        ];
        for (i, a) in order.iter().enumerate() {
            for (j, b) in order.iter().enumerate() {
                assert_eq!(compare(a, b), i.cmp(&j), "{i} vs {j}");
            }
        }
        assert!(same_key(&order[3], &order[4], 1), "2 = 2.0");
        assert_eq!(int_pair(&order[1]), Some((-3, 1)));
        assert_eq!(int_pair(&order[2]), None);
        assert!(!same_key(&order[0], &order[0], 1), "NULLs are distinct");
    }

    #[test]
    fn prefixes_keep_the_order_and_rebuild_whole_entries() {
        use Value::*;
        let order = [
            rec(&[Null, Integer(5)]),
            rec(&[Integer(i64::MIN), Integer(1)]),
            rec(&[Integer(-(1 << 53) - 1), Integer(1)]),
            rec(&[Real(-2.5), Integer(1)]),
            rec(&[Real(-0.0), Integer(1)]),
            rec(&[Integer(0), Integer(2)]),
            rec(&[Real(0.0), Integer(3)]),
            rec(&[Integer(1 << 53), Integer(1)]),
            rec(&[Real(9_007_199_254_740_992.0), Integer(2)]),
            rec(&[Integer((1 << 53) + 1), Integer(1)]),
            rec(&[Integer(i64::MAX), Integer(1)]),
            rec(&[Text(b""), Integer(1)]),
            rec(&[Text(b"a"), Integer(1)]),
            rec(&[Text(b"a\0"), Integer(1)]),
            rec(&[Text(b"abcdef"), Integer(1)]),
            rec(&[Text(b"abcdef\0"), Integer(1)]),
            rec(&[Text(b"abcdefg"), Integer(1)]),
            rec(&[Text(b"b"), Integer(1)]),
            rec(&[Blob(b""), Integer(1)]),
            rec(&[Blob(b"\xff"), Integer(1)]),
        ];
        for (i, a) in order.iter().enumerate() {
            assert_eq!(compare(a, a), Ordering::Equal);
            for b in &order[i + 1..] {
                assert_eq!(compare(a, b), Ordering::Less);
                let (pa, wa) = sort_prefix(a, 1);
                let (pb, wb) = sort_prefix(b, 1);
                assert!(pa <= pb, "{a:?} {b:?}");
                if pa == pb && wa && wb {
                    assert!(same_key(a, b, 1), "{a:?} {b:?}");
                }
            }
            let (p, whole) = sort_prefix(a, 1);
            let mut out = vec![];
            let Some(Field::Int(r)) = Fields::new(a).nth(1) else {
                panic!("{a:?}")
            };
            if whole && entry_from_prefix(p, r, &mut out) {
                assert_eq!(&out, a, "rebuilt from its prefix");
            }
            assert!(!sort_prefix(a, 2).1, "a two-field key is never whole");
        }
    }

    #[test]
    fn plans_never_end_with_an_empty_page() {
        for n in 0..200 {
            for cost in [1, 7, 10, 33] {
                let pages = plan(n, 100, |_| cost);
                let mut expect = 0;
                for (k, &(s, e)) in pages.iter().enumerate() {
                    assert_eq!(s, expect, "n {n} cost {cost}: {pages:?}");
                    assert!(e > s || n == 0, "n {n} cost {cost}: {pages:?}");
                    assert!((e - s) * cost <= 100);
                    expect = if k + 1 == pages.len() { e } else { e + 1 };
                }
                assert_eq!(expect, n, "n {n} cost {cost}: {pages:?}");
            }
        }
    }
}
