//! An input's first bytes: how many are read to tell what it holds, and the compression
//! its magic bytes say.

use std::io::Read;

use serde::Serialize;

/// The most decompressed bytes a sniff reads.
pub const SAMPLE_BYTES: usize = 64 * 1024;

/// A compression told by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// gzip (`1f 8b`), members concatenated as `gzip` writes them.
    Gzip,
    /// Zstandard (`28 b5 2f fd`).
    Zstd,
    /// bzip2 (`BZh`).
    Bzip2,
    /// xz (`fd 37 7a 58 5a 00`).
    Xz,
}

impl Compression {
    /// The compression whose magic bytes `head` starts with.
    pub fn of(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if head.starts_with(b"BZh")
            && head.get(3).is_some_and(|b| (b'1'..=b'9').contains(b))
            && head.get(4..10).is_some_and(|m| {
                // The first block's magic (the digits of pi), or an empty stream's end.
                m == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
                    || m == [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]
            })
        {
            Some(Compression::Bzip2)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Some(Compression::Xz)
        } else {
            None
        }
    }

    /// Its name, as a file extension would give it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// The decompressed bytes of `r`. Gzip is decoded elsewhere (with errors that name
    /// a cut stream); this serves the others. A codec left out of the build (its cargo
    /// feature off) is an [`std::io::ErrorKind::Unsupported`] error that names it.
    pub(crate) fn decoder(self, r: Box<dyn Read + Send>) -> std::io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            #[cfg(feature = "zstd")]
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(r)?),
            #[cfg(feature = "bzip2")]
            Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(r)),
            #[cfg(feature = "xz")]
            Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(r)),
            #[allow(unreachable_patterns)]
            other => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    format!(
                        "{} input needs liteload built with its `{}` feature",
                        other.name(),
                        other.name()
                    ),
                ))
            }
        })
    }
}

/// Reads at most [`SAMPLE_BYTES`] from `r` (fewer only at its end). Returns the bytes
/// and whether they are all of it.
pub fn read_sample(r: &mut dyn Read, limit: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let mut buf = Vec::with_capacity(limit.min(SAMPLE_BYTES));
    let got = r.take(limit as u64).read_to_end(&mut buf)?;
    let whole = got < limit;
    Ok((buf, whole))
}
