//! Input in another encoding, read as UTF-8, with malformed input kept visible.
//!
//! encoding_rs does the decoding. Where the input is malformed (a lone UTF-16
//! surrogate, an odd last byte), the output gets the byte 0xFF, which is never valid
//! UTF-8: the record holding it is then a bad record with its position, as invalid UTF-8
//! is, instead of a silent U+FFFD.

use std::io::{self, Read};

use encoding_rs::{Decoder, DecoderResult};

/// The byte written for each malformed input sequence.
pub const MALFORMED: u8 = 0xFF;

/// A `Read` of UTF-8 decoded from `inner`.
pub struct Transcode<R> {
    inner: R,
    decoder: Decoder,
    input: Box<[u8]>,
    in_pos: usize,
    in_end: usize,
    eof: bool,
    done: bool,
    out: Vec<u8>,
    out_pos: usize,
}

impl<R: Read> Transcode<R> {
    /// Decodes `inner` with `decoder` (which decides what a byte-order mark does).
    pub fn new(inner: R, decoder: Decoder) -> Self {
        Transcode {
            inner,
            decoder,
            input: vec![0; 64 * 1024].into_boxed_slice(),
            in_pos: 0,
            in_end: 0,
            eof: false,
            done: false,
            out: Vec::with_capacity(256 * 1024),
            out_pos: 0,
        }
    }

    /// Decodes what input there is into `out` (emptied first). `false` at the end.
    fn decode_more(&mut self) -> io::Result<bool> {
        self.out.clear();
        self.out_pos = 0;
        while self.out.is_empty() {
            if self.done {
                return Ok(false);
            }
            if self.in_pos == self.in_end && !self.eof {
                let n = loop {
                    match self.inner.read(&mut self.input) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        r => break r?,
                    }
                };
                self.in_pos = 0;
                self.in_end = n;
                self.eof = n == 0;
            }
            let src = &self.input[self.in_pos..self.in_end];
            let room = self
                .decoder
                .max_utf8_buffer_length_without_replacement(src.len())
                .unwrap_or(src.len() * 3 + 16)
                .max(16);
            self.out.resize(room, 0);
            let (result, read, written) =
                self.decoder
                    .decode_to_utf8_without_replacement(src, &mut self.out, self.eof);
            self.in_pos += read;
            self.out.truncate(written);
            match result {
                DecoderResult::InputEmpty => {
                    if self.eof {
                        self.done = true;
                    }
                }
                DecoderResult::OutputFull => {}
                DecoderResult::Malformed(_, _) => self.out.push(MALFORMED),
            }
        }
        Ok(true)
    }
}

impl<R: Read> Read for Transcode<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.out_pos == self.out.len() && !self.decode_more()? {
            return Ok(0);
        }
        let n = (self.out.len() - self.out_pos).min(buf.len());
        buf[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8], decoder: Decoder) -> Vec<u8> {
        let mut out = vec![];
        use crate::source::Trickle;
        Transcode::new(Trickle(bytes), decoder)
            .read_to_end(&mut out)
            .expect("reading from memory");
        out
    }

    #[test]
    fn utf16_decodes_and_marks_lone_surrogates() {
        let le: Vec<u8> = "aé✓😀"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let mut with_bom = vec![0xFF, 0xFE];
        with_bom.extend_from_slice(&le);
        assert_eq!(
            decode(&with_bom, encoding_rs::UTF_16LE.new_decoder()),
            "aé✓😀".as_bytes()
        );
        // A lone high surrogate, then 'b'.
        let bad = [0x3D, 0xD8, b'b', 0];
        assert_eq!(
            decode(&bad, encoding_rs::UTF_16LE.new_decoder_with_bom_removal()),
            [MALFORMED, b'b']
        );
        // An odd last byte.
        assert_eq!(
            decode(&[b'a', 0, b'b'], encoding_rs::UTF_16LE.new_decoder()),
            [b'a', MALFORMED]
        );
    }

    #[test]
    fn latin1_maps_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let out = decode(
            &all,
            encoding_rs::WINDOWS_1252.new_decoder_without_bom_handling(),
        );
        assert!(std::str::from_utf8(&out).is_ok());
        assert_eq!(String::from_utf8_lossy(&out).chars().count(), 256);
    }
}
