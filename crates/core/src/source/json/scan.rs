//! The JSON bytes that matter to the array planner, found 64 at a time as bit masks: bit
//! `j` of a mask stands for byte `j` of a block.
//!
//! The planner used to visit the array byte by byte, skipping strings with `memchr2`: on
//! the 327 MB array of bench/README.md that scan was 0.3-0.4 of the load's 2.1 CPU
//! seconds, since a short string costs a call. Classifying a block with SSE2 compares
//! and following strings with a prefix XOR (the method of simdjson's first stage) takes
//! about 55 ms for the same file on this machine, which is why this is written by hand.

/// What each byte of a block is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Masks {
    pub quote: u64,
    pub backslash: u64,
    pub newline: u64,
    /// `{` and `[`.
    pub open: u64,
    /// `}` and `]`.
    pub close: u64,
    pub comma: u64,
    /// Space, tab, CR and LF: JSON's whitespace.
    pub space: u64,
}

/// The masks of `b`.
pub(super) fn classify(b: &[u8; 64]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline: every CPU this code runs on has it.
        unsafe { classify_sse2(b) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        classify_scalar(b)
    }
}

/// [`classify`] one byte at a time: the reference, and the code for other targets.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(super) fn classify_scalar(b: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (j, &c) in b.iter().enumerate() {
        let bit = 1u64 << j;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'[' => m.open |= bit,
            b'}' | b']' => m.close |= bit,
            b',' => m.comma |= bit,
            b'\n' => {
                m.newline |= bit;
                m.space |= bit;
            }
            b' ' | b'\t' | b'\r' => m.space |= bit,
            _ => {}
        }
    }
    m
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(b: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{__m128i, _mm_set_epi64x};
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
    let eq = |v: __m128i, c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
    let bits = |v: __m128i| _mm_movemask_epi8(v) as u16 as u64;
    let mut m = Masks::default();
    for k in 0..4 {
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            i64::from_le_bytes(w)
        };
        let v = _mm_set_epi64x(word(16 * k + 8), word(16 * k));
        let shift = 16 * k;
        let newline = eq(v, b'\n');
        m.quote |= bits(eq(v, b'"')) << shift;
        m.backslash |= bits(eq(v, b'\\')) << shift;
        m.newline |= bits(newline) << shift;
        // `[` and `]` are `{` and `}` less 0x20, and no other byte ORed with 0x20 is.
        let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
        m.open |= bits(eq(folded, b'{')) << shift;
        m.close |= bits(eq(folded, b'}')) << shift;
        m.comma |= bits(eq(v, b',')) << shift;
        let blank = _mm_or_si128(eq(v, b' '), eq(v, b'\t'));
        m.space |= bits(_mm_or_si128(_mm_or_si128(blank, eq(v, b'\r')), newline)) << shift;
    }
    m
}

/// The bytes of a block that a backslash escapes, given its backslashes and whether the
/// block's first byte is escaped (`carry`, updated for the next block). A backslash
/// escapes the byte after it unless it is itself escaped.
pub(super) fn escaped(backslash: u64, carry: &mut bool) -> u64 {
    if backslash == 0 && !*carry {
        return 0;
    }
    let (mut out, mut pending) = (0u64, *carry);
    for j in 0..64 {
        if pending {
            out |= 1 << j;
            pending = false;
        } else if backslash >> j & 1 == 1 {
            pending = true;
        }
    }
    *carry = pending;
    out
}

/// The bytes of a block inside strings, given its unescaped quotes and whether the block
/// starts inside one (`carry`, updated for the next block). An opening quote counts as
/// inside, a closing one as outside.
pub(super) fn in_strings(quotes: u64, carry: &mut bool) -> u64 {
    let mut x = quotes;
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    if *carry {
        x = !x;
    }
    *carry = x >> 63 == 1;
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn classify_agrees_with_the_bytewise_reference(
            bytes in prop::collection::vec(prop_oneof![
                4 => prop::sample::select(b"\"\\\n{}[], \t\rax\0\x7f\x80\xff".to_vec()),
                1 => any::<u8>(),
            ], 64)
        ) {
            let b: [u8; 64] = bytes.try_into().unwrap();
            prop_assert_eq!(classify(&b), classify_scalar(&b));
        }

        /// Strings and escapes followed across blocks agree with a byte-at-a-time walk.
        #[test]
        fn strings_and_escapes_agree_with_a_walk(
            text in prop::collection::vec(
                prop::sample::select(b"\"\\ax".to_vec()), 0..400)
        ) {
            let (mut in_str, mut esc) = (false, false);
            let mut want = vec![];
            for &c in &text {
                let quote = c == b'"' && !esc;
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                }
                if quote {
                    in_str = !in_str;
                }
                want.push(in_str);
            }
            let (mut s_carry, mut e_carry) = (false, false);
            let mut got = vec![];
            for block in text.chunks(64) {
                let mut b = [b' '; 64];
                b[..block.len()].copy_from_slice(block);
                let m = classify(&b);
                let inside = in_strings(m.quote & !escaped(m.backslash, &mut e_carry), &mut s_carry);
                got.extend((0..block.len()).map(|j| inside >> j & 1 == 1));
            }
            prop_assert_eq!(got, want);
        }
    }
}
