//! The parser checks on a corpus from a fixed seed: random bytes over small alphabets
//! that make the interesting cases common (quotes, delimiters, line ends, split UTF-8,
//! braces), so that `cargo test` keeps every check working without a fuzzer.

use liteload_fuzzcheck::parsers;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Up to `max_len` pieces drawn from `alphabet`.
    fn text(&mut self, alphabet: &[&[u8]], max_len: u64) -> Vec<u8> {
        let len = self.next() % max_len;
        let mut out = vec![];
        for _ in 0..len {
            out.extend_from_slice(alphabet[(self.next() % alphabet.len() as u64) as usize]);
        }
        out
    }
}

/// `cases` inputs: two option bytes, then pieces of `alphabet`.
fn corpus(
    seed: u64,
    cases: usize,
    alphabet: &[&[u8]],
    max_len: u64,
    check: &dyn Fn(&[u8]) -> Result<(), String>,
) {
    let mut rng = XorShift(seed);
    for case in 0..cases {
        let mut data = vec![rng.next() as u8, rng.next() as u8];
        data.extend(rng.text(alphabet, max_len));
        if let Err(e) = check(&data) {
            panic!(
                "case {case}, input {:?}: {e}",
                String::from_utf8_lossy(&data)
            );
        }
    }
}

#[test]
fn delimited_readers_agree_with_each_other_and_the_reference() {
    let alphabet: &[&[u8]] = &[
        b"a",
        b"b",
        b",",
        b"\t",
        b";",
        b"\"",
        b"'",
        b"\n",
        b"\r",
        b"\r\n",
        b" ",
        "é".as_bytes(),
        b"\xC3",
        b"\0",
    ];
    let compared = std::sync::atomic::AtomicUsize::new(0);
    corpus(0x9E37_79B9_7F4A_7C15, 1500, alphabet, 60, &|d| {
        let c = parsers::delimited_agree(d)?;
        compared.fetch_add(usize::from(c), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    assert!(compared.into_inner() > 0);
}

/// Tables written by the rules (quoted where a field needs it, and sometimes where it
/// does not), read back: every one is clean, so each is compared with the reference.
#[test]
fn written_tables_read_back_as_the_reference_reads_them() {
    let pieces: [&str; 11] = ["a", "b", "é", " ", ",", "\t", "\"", "'", "\n", "\r\n", "1"];
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let mut compared = 0;
    for case in 0..800 {
        // Option bytes: `,` with `"`, tab with `"`, or `,` with `'` (see delimited_options).
        let (o, delim, quote) = [(0u8, ',', '"'), (1, '\t', '"'), (4, ',', '\'')][case % 3];
        let width = 1 + rng.next() % 4;
        let mut text = String::new();
        for _ in 0..1 + rng.next() % 6 {
            let fields: Vec<String> = (0..width)
                .map(|_| {
                    let f: String = (0..rng.next() % 4)
                        .map(|_| pieces[(rng.next() % pieces.len() as u64) as usize])
                        .collect();
                    let needs =
                        f.contains([delim, quote, '\n', '\r']) || (width == 1 && f.is_empty());
                    if needs || rng.next().is_multiple_of(5) {
                        let q = quote.to_string();
                        format!("{quote}{}{quote}", f.replace(&q, &(q.clone() + &q)))
                    } else {
                        f
                    }
                })
                .collect();
            text.push_str(&fields.join(&delim.to_string()));
            text.push_str(["\n", "\r\n", "\r"][(rng.next() % 3) as usize]);
        }
        let mut data = vec![o, rng.next() as u8];
        data.extend_from_slice(text.as_bytes());
        match parsers::delimited_agree(&data) {
            Ok(c) => compared += usize::from(c),
            Err(e) => panic!("case {case}, input {text:?}: {e}"),
        }
    }
    assert!(
        compared > 700,
        "only {compared} of 800 tables compared with the reference"
    );
}

#[test]
fn the_reference_reads_the_documented_rules() {
    let r = parsers::reference_records(
        b"\n\nx,y\r\n\"a\"\"b\"c,d\"e\r\n\n1,\"2\n3\"",
        b',',
        Some(b'"'),
    );
    let want: Vec<Vec<&[u8]>> = vec![
        vec![b"x", b"y"],
        vec![b"a\"bc", b"d\"e"],
        vec![b"1", b"2\n3"],
    ];
    assert_eq!(
        r,
        Some(
            want.iter()
                .map(|r| r.iter().map(|f| f.to_vec()).collect())
                .collect()
        )
    );
    assert_eq!(
        parsers::reference_records(b"a\n\"b", b',', Some(b'"')),
        None
    );
    // One column: an empty line is a record.
    let one = parsers::reference_records(b"a\n\nb\n", b',', Some(b'"')).unwrap();
    assert_eq!(one.len(), 3);
}

#[test]
fn json_readers_keep_what_serde_json_reads() {
    let alphabet: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"a\"",
        b"\"b\"",
        b":",
        b",",
        b"1",
        b"-2.5e3",
        b"null",
        b"true",
        b"\n",
        b" ",
        b"\"\\u0000\"",
        "\"é\"".as_bytes(),
        b"\xFF",
        b"18446744073709551616",
    ];
    corpus(0xD1B5_4A32_D192_ED03, 1500, alphabet, 40, &|d| {
        parsers::json_agree(&d[2..])
    });
}

#[test]
fn ingest_lines_are_good_only_when_serde_json_reads_a_keyed_object() {
    let alphabet: &[&[u8]] = &[
        b"{",
        b"}",
        b"\"id\"",
        b"\"x\"",
        b":",
        b",",
        b"1",
        b"1.5",
        b"\"k\"",
        b"null",
        b"[",
        b"]",
        b" ",
        b"true",
        b"9223372036854775808",
        b"\xFF",
    ];
    corpus(0x94D0_49BB_1331_11EB, 3000, alphabet, 24, &|d| {
        parsers::ingest_line_agrees(&d[2..])
    });
}

#[test]
fn generate_specs_parse_or_are_refused() {
    let alphabet: &[&[u8]] = &[
        b"n",
        b":",
        b"int",
        b"real",
        b"text",
        b"choice",
        b"date",
        b"(",
        b")",
        b",",
        b"1",
        b"-5",
        b"..",
        b"%",
        b"null",
        b"=",
        b"seq",
        b"uuid",
        b"0.5",
        "é".as_bytes(),
        b" ",
    ];
    corpus(0xBF58_476D_1CE4_E5B9, 3000, alphabet, 12, &|d| {
        parsers::spec_never_panics(&d[2..])
    });
}
