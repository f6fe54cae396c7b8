//! The UTF-8 check of a whole record's text before it is parsed (serde_json then checks
//! no string of it again), by simdutf8 rather than the standard library: on text with
//! many non-ASCII letters the standard check took about a tenth of the JSON readers'
//! CPU time (300 MB of `bench/nested.py`'s orders, names with `äöüé`), simdutf8 a
//! fraction of that (see bench/README.md, "One UTF-8 check").

/// `bytes` as text, or `None` where they are not UTF-8.
#[inline]
pub(crate) fn str(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Says of any bytes what the standard library says.
        #[test]
        fn checks_as_the_standard_library_does(bytes in prop::collection::vec(any::<u8>(), 0..64), text in ".{0,16}") {
            prop_assert_eq!(super::str(&bytes), std::str::from_utf8(&bytes).ok());
            let mut joined = text.into_bytes();
            joined.extend_from_slice(&bytes);
            prop_assert_eq!(super::str(&joined), std::str::from_utf8(&joined).ok());
        }
    }
}
