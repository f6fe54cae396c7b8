//! The random numbers behind `generate`: wyrand, seeded per chunk with SplitMix64.
//!
//! Hand-written rather than taken from `rand` because the promise is byte-for-byte the
//! same table for the same `--seed` in every liteload version: this code, not a
//! dependency's version, decides the sequence. wyrand passes BigCrush and PractRand and
//! costs one multiply per draw.

/// Rows per chunk: chunk `c` of a table draws from `Rng::for_chunk(seed, c)`. Part of
/// the determinism promise: changing it changes every table.
pub const CHUNK_ROWS: u64 = 8192;

/// A wyrand generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

/// SplitMix64's finalizer: spreads nearby inputs (chunk numbers) far apart.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator of chunk `chunk` under `seed`.
    pub fn for_chunk(seed: u64, chunk: u64) -> Rng {
        Rng(mix(seed ^ mix(chunk.wrapping_add(0x9E37_79B9_7F4A_7C15))))
    }

    #[inline]
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xA076_1D64_78BD_642F);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xE703_7ED1_A0B4_28DB);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Uniform in `0..n` (`n > 0`), by Lemire's multiply-shift (bias below 2^-64 * n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    #[inline]
    pub fn int_in(&mut self, lo: i64, hi: i64) -> i64 {
        let span = hi.wrapping_sub(lo) as u64;
        if span == u64::MAX {
            return self.next_u64() as i64;
        }
        lo.wrapping_add(self.below(span + 1) as i64)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_chunks_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::for_chunk(42, 0);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::for_chunk(42, 0);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(Rng::for_chunk(42, 1).next_u64(), a[0]);
    }

    #[test]
    fn ranges_are_inclusive_and_cover_both_ends() {
        let mut r = Rng::for_chunk(1, 1);
        let mut seen = [false; 3];
        for _ in 0..1000 {
            let v = r.int_in(-1, 1);
            assert!((-1..=1).contains(&v));
            seen[(v + 1) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert!((0..1000).all(|_| (0.0..1.0).contains(&r.unit())));
        let _ = r.int_in(i64::MIN, i64::MAX);
    }
}
