//! XML input against a reference: random documents (hostile names that collide,
//! namespaces, entities of an internal DTD, character references, CDATA, comments and
//! processing instructions, optional, repeated and nested elements, skipped siblings,
//! every encoding liteload reads) are loaded by liteload and parsed by roxmltree, a
//! tree parser; the reference maps the tree to rows by the documented rules and SQLite
//! stores its values through its own INSERT. Every column name, type and cell must be
//! the same. Malformed and hostile documents (truncated, mismatched tags, contradicted
//! encodings, external entities, entity bombs) are positioned errors that leave no file.

use std::path::Path;

use liteload::rusqlite::{types::Value as Sql, Connection};
use liteload::{import, ColumnType, ImportOptions, Input, Lexeme, Nulls, Progress, TypeGuess};
use proptest::prelude::*;
use serde_json::{Map, Value};

mod support;

use support::Rng;

const NAMES: &[&str] = &[
    "id", "ID", "Id", "name", "naïve", "名前", "a-b", "a.b", "_x", "x", "x_2", "text", "select",
    "ns1:id", "ns2:id", "ns1:name", "ns2:x", "Score", "body",
];
const ENTITIES: &[(&str, &str)] = &[("e1", "one & two"), ("e2", "one & two!"), ("ws", "a\nb")];
const DTD: &str = "<!DOCTYPE root [\n  <!ENTITY e1 \"one &amp; two\">\n  <!-- a comment ]> -->\n  <!ENTITY e2 '&e1;!'>\n  <!ENTITY ws \"a&#10;b\">\n  <!ENTITY ext SYSTEM \"file:///etc/passwd\">\n]>\n";

/// A random value as pieces: literal text, or a reference to an entity of [`DTD`].
fn value(rng: &mut Rng, latin1: bool) -> Vec<Result<String, usize>> {
    const NUMBERS: &[&str] = &[
        "12",
        "-3",
        "007",
        "1.5",
        "-0",
        "1e5",
        "99999999999999999999",
        "0",
        "",
    ];
    if rng.chance(35) {
        return vec![Ok(rng.pick(NUMBERS).to_string())];
    }
    let chars: &[&str] = if latin1 {
        &[
            "a", "Z", "7", " ", "<", ">", "&", "\"", "'", "é", "ÿ", "\n", "\t", ";", "]]>", "-",
        ]
    } else {
        &[
            "a", "Z", "7", " ", "<", ">", "&", "\"", "'", "é", "名", "🦀", "\n", "\t", ";", "]]>",
            "\u{2028}",
        ]
    };
    let mut out = vec![];
    for _ in 0..rng.below(6) {
        if !latin1 && rng.chance(15) {
            out.push(Err(rng.below(ENTITIES.len())));
        } else {
            let s: String = (0..1 + rng.below(5)).map(|_| *rng.pick(chars)).collect();
            out.push(Ok(s));
        }
    }
    out
}

/// `v` written into an attribute value quoted with `"`.
fn attribute(rng: &mut Rng, v: &[Result<String, usize>]) -> String {
    let mut out = String::new();
    for p in v {
        match p {
            Err(e) => out.push_str(&format!("&{};", ENTITIES[*e].0)),
            Ok(s) => {
                for c in s.chars() {
                    match c {
                        '<' => out.push_str("&lt;"),
                        '&' => out.push_str(if rng.chance(50) { "&amp;" } else { "&#38;" }),
                        '"' => out.push_str("&quot;"),
                        '\n' => out.push_str(if rng.chance(50) { "&#10;" } else { "&#xA;" }),
                        '\t' => out.push_str("&#9;"),
                        c if rng.chance(10) => out.push_str(&format!("&#x{:X};", c as u32)),
                        c => out.push(c),
                    }
                }
            }
        }
    }
    out
}

/// `v` written as element content, with CDATA, comments and PIs mixed in.
fn content(rng: &mut Rng, v: &[Result<String, usize>]) -> String {
    let mut out = String::new();
    for p in v {
        match p {
            Err(e) => out.push_str(&format!("&{};", ENTITIES[*e].0)),
            Ok(s) if rng.chance(20) && !s.contains("]]>") => {
                out.push_str(&format!("<![CDATA[{s}]]>"));
            }
            Ok(s) => {
                for c in s.chars() {
                    match c {
                        '<' => out.push_str("&lt;"),
                        '&' => out.push_str("&amp;"),
                        '>' => out.push_str("&gt;"),
                        '\n' if rng.chance(30) => out.push_str("\r\n"),
                        c => out.push(c),
                    }
                }
            }
        }
        if rng.chance(10) {
            out.push_str(if rng.chance(50) {
                "<!-- c -->"
            } else {
                "<?pi data?>"
            });
        }
    }
    out
}

/// A name of [`NAMES`] (one Latin-1 can write, for a Latin-1 document).
fn name(rng: &mut Rng, latin1: bool) -> &'static str {
    loop {
        let n = *rng.pick(NAMES);
        if !latin1
            || n.chars()
                .all(|c| u32::from(c) < 0x80 || (0xA0..0x100).contains(&u32::from(c)))
        {
            return n;
        }
    }
}

fn element(rng: &mut Rng, depth: usize, latin1: bool) -> String {
    let name = name(rng, latin1);
    let mut s = format!("<{name}");
    if rng.chance(25) {
        let v = value(rng, latin1);
        s.push_str(&format!(
            " {}=\"{}\"",
            rng.pick(&["k", "ns1:k", "n"]),
            attribute(rng, &v)
        ));
    }
    let kids = if depth < 2 && rng.chance(25) {
        1 + rng.below(3)
    } else {
        0
    };
    if kids == 0 && rng.chance(20) {
        return s + "/>";
    }
    s.push('>');
    for _ in 0..kids {
        s.push_str(&element(rng, depth + 1, latin1));
    }
    let v = value(rng, latin1);
    s.push_str(&content(rng, &v));
    s + &format!("</{name}>")
}

/// A random document body (after the declaration), and its record path's last step.
fn document(rng: &mut Rng, latin1: bool) -> (String, &'static str) {
    let record = *rng.pick(&["row", "ns1:row", "item"]);
    let mut s = String::from(DTD);
    s.push_str("<root xmlns:ns1=\"urn:one\" xmlns:ns2=\"urn:two\">\n");
    for _ in 0..1 + rng.below(12) {
        match rng.below(10) {
            0 => s.push_str(&format!(
                "  <meta a=\"1\"><{record} skipped=\"yes\"/></meta>\n"
            )),
            1 => s.push_str("  <!-- <row> --> <?pi ?>\n"),
            _ => {}
        }
        s.push_str(&format!("  <{record}"));
        let mut used = vec![];
        for _ in 0..rng.below(5) {
            let n = name(rng, latin1);
            if used.contains(&n) {
                continue;
            }
            used.push(n);
            let v = value(rng, latin1);
            s.push_str(&format!(" {n}=\"{}\"", attribute(rng, &v)));
        }
        if rng.chance(20) {
            s.push_str(" xmlns:ns3=\"urn:three\"");
        }
        let kids = rng.below(5);
        if kids == 0 && rng.chance(50) {
            s.push_str("/>\n");
            continue;
        }
        s.push('>');
        for _ in 0..kids {
            if rng.chance(30) {
                s.push_str("\n    ");
            }
            s.push_str(&element(rng, 0, latin1));
        }
        if rng.chance(25) {
            let v = value(rng, latin1);
            s.push_str(&content(rng, &v));
        }
        s.push_str(&format!("\n  </{record}>\n"));
    }
    s.push_str("</root>\n");
    (s, record)
}

/// The reference's qualified name of a node or attribute (prefix as declared).
fn qname(node: roxmltree::Node, ns: Option<&str>, local: &str) -> String {
    match ns.and_then(|u| node.lookup_prefix(u)) {
        Some(p) if !p.is_empty() => format!("{p}:{local}"),
        _ => local.to_string(),
    }
}

fn text_of(n: roxmltree::Node) -> String {
    n.children()
        .filter(|c| c.is_text())
        .map(|c| c.text().unwrap_or(""))
        .collect()
}

fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

fn simple(n: roxmltree::Node) -> bool {
    n.attributes().len() == 0 && !n.children().any(|c| c.is_element())
}

fn grouped<'a, 'i>(n: roxmltree::Node<'a, 'i>) -> Vec<(String, Vec<roxmltree::Node<'a, 'i>>)> {
    let mut out: Vec<(String, Vec<roxmltree::Node<'a, 'i>>)> = vec![];
    for c in n.children().filter(|c| c.is_element()) {
        let q = qname(c, c.tag_name().namespace(), c.tag_name().name());
        match out.iter_mut().find(|(k, _)| *k == q) {
            Some(g) => g.1.push(c),
            None => out.push((q, vec![c])),
        }
    }
    out
}

fn json(n: roxmltree::Node) -> Value {
    if simple(n) {
        return Value::String(text_of(n));
    }
    let mut m = Map::new();
    for a in n.attributes() {
        m.insert(
            format!("@{}", qname(n, a.namespace(), a.name())),
            Value::String(a.value().into()),
        );
    }
    for (k, g) in grouped(n) {
        let v = match g.as_slice() {
            [one] => json(*one),
            many => Value::Array(many.iter().map(|c| json(*c)).collect()),
        };
        m.insert(k, v);
    }
    let t = text_of(n);
    if !trim(&t).is_empty() {
        m.insert("#text".into(), Value::String(trim(&t).into()));
    }
    Value::Object(m)
}

/// Columns as the documented rule names them: local name; the qualified name when the
/// local one is taken (ASCII case ignored); else `_2`, `_3`, ….
#[derive(Default)]
struct Columns {
    keys: Vec<String>,
    names: Vec<String>,
}

impl Columns {
    fn of(&mut self, key: &str, local: &str, qualified: &str) -> usize {
        if let Some(i) = self.keys.iter().position(|k| k == key) {
            return i;
        }
        let free = |n: &str| !self.names.iter().any(|m| m.eq_ignore_ascii_case(n));
        let name = if free(local) {
            local.to_string()
        } else if qualified != local && free(qualified) {
            qualified.to_string()
        } else {
            (2..)
                .map(|k| format!("{local}_{k}"))
                .find(|n| free(n))
                .unwrap()
        };
        self.keys.push(key.into());
        self.names.push(name);
        self.names.len() - 1
    }
}

/// The reference's rows: column names, and per record (column, value, is JSON).
/// Per record: (column, value, whether the value is JSON).
type Rows = Vec<Vec<(usize, String, bool)>>;

fn reference(doc: &str, record: &str) -> (Vec<String>, Rows) {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let tree = roxmltree::Document::parse_with_options(doc, opts).expect("the reference parses it");
    let mut cols = Columns::default();
    let mut rows = vec![];
    for r in tree.root_element().children().filter(|c| c.is_element()) {
        if qname(r, r.tag_name().namespace(), r.tag_name().name()) != record {
            continue;
        }
        let mut row = vec![];
        for a in r.attributes() {
            let q = qname(r, a.namespace(), a.name());
            row.push((
                cols.of(&format!("@{q}"), a.name(), &q),
                a.value().to_string(),
                false,
            ));
        }
        for (q, g) in grouped(r) {
            let local = q.rsplit(':').next().unwrap().to_string();
            let c = cols.of(&format!("<{q}"), &local, &q);
            match g.as_slice() {
                [one] if simple(*one) => row.push((c, text_of(*one), false)),
                [one] => row.push((c, json(*one).to_string(), true)),
                many => row.push((
                    c,
                    Value::Array(many.iter().map(|n| json(*n)).collect()).to_string(),
                    true,
                )),
            }
        }
        let t = text_of(r);
        if !trim(&t).is_empty() {
            row.push((
                cols.of("#text", "text", "text"),
                trim(&t).to_string(),
                false,
            ));
        }
        rows.push(row);
    }
    (cols.names, rows)
}

fn encode(body: &str, encoding: &str) -> Vec<u8> {
    let decl = |e: &str| format!("<?xml version=\"1.0\" encoding=\"{e}\"?>\n{body}");
    match encoding {
        "utf-8" => decl("UTF-8").into_bytes(),
        "utf-8-bom" => [&b"\xEF\xBB\xBF"[..], body.as_bytes()].concat(),
        "utf-16le" => {
            let mut b = vec![0xFF, 0xFE];
            b.extend(decl("UTF-16").encode_utf16().flat_map(u16::to_le_bytes));
            b
        }
        "utf-16be" => {
            let mut b = vec![0xFE, 0xFF];
            b.extend(decl("UTF-16").encode_utf16().flat_map(u16::to_be_bytes));
            b
        }
        "latin1" => decl("ISO-8859-1")
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap())
            .collect(),
        _ => unreachable!(),
    }
}

fn load(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    record: Option<&str>,
    (threads, sample): (usize, usize),
) -> liteload::Result<Connection> {
    let src = dir.join(name);
    std::fs::write(&src, bytes).unwrap();
    let db = dir.join(format!("{name}.db"));
    let mut o = ImportOptions::default();
    o.table = Some("t".into());
    o.read.record = record.map(String::from);
    o.read.parse_threads = threads;
    o.read.sample_rows = sample;
    import(&db, &[Input::Path(src)], &o, &Progress::default())?;
    let c = Connection::open(db).unwrap();
    support::assert_intact(&c);
    Ok(c)
}

/// Loads `doc_bytes` on `threads` threads, types inferred from the first `sample`
/// records, and compares the table with the reference's reading of `body`.
fn check(doc_bytes: &[u8], body: &str, record: &str, (threads, sample): (usize, usize)) {
    let dir = tempfile::tempdir().unwrap();
    let (names, rows) = reference(body, record);
    let path = format!("root/{record}");
    let run = (threads, sample);
    if rows.iter().take(sample).all(Vec::is_empty) {
        let e = load(dir.path(), "d.xml", doc_bytes, Some(&path), run).expect_err("an error");
        assert!(e.to_string().contains("there is no column to make"), "{e}");
        return;
    }
    let c = load(dir.path(), "d.xml", doc_bytes, Some(&path), run)
        .unwrap_or_else(|e| panic!("{e}\n{body}"));
    support::assert_intact(&c);
    let got_names: Vec<(String, String)> = c
        .prepare("SELECT name, type FROM pragma_table_info('t') ORDER BY cid")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Types by the CSV rules: over the sampled records for a column they hold, else from
    // the value of the first record that has it (it adds the column).
    let mut guesses = vec![TypeGuess::default(); names.len()];
    let (mut seen, mut typed) = (vec![false; names.len()], vec![false; names.len()]);
    for (k, row) in rows.iter().enumerate() {
        for (col, v, json) in row {
            if !typed[*col] {
                guesses[*col].add(if *json {
                    Lexeme::Text
                } else {
                    Lexeme::of_text(v)
                });
            }
            seen[*col] = true;
        }
        if k + 1 >= sample {
            for (t, s) in typed.iter_mut().zip(&seen) {
                *t |= *s;
            }
        }
    }
    let types: Vec<ColumnType> = guesses.iter().map(TypeGuess::resolve).collect();
    let want_names: Vec<(String, String)> = names
        .iter()
        .zip(&types)
        .map(|(n, t)| (n.clone(), t.sql().to_string()))
        .collect();
    assert_eq!(got_names, want_names, "\n{body}");
    // SQLite stores the reference's values through its own INSERT (an empty value in a
    // numeric column is NULL, the rule for CSV fields).
    let cols = names
        .iter()
        .map(|n| liteload::quote_ident(n))
        .collect::<Vec<_>>()
        .join(", ");
    let decl = names
        .iter()
        .zip(&types)
        .map(|(n, t)| format!("{} {}", liteload::quote_ident(n), t.sql()))
        .collect::<Vec<_>>()
        .join(", ");
    c.execute_batch(&format!("CREATE TEMP TABLE want ({decl})"))
        .unwrap();
    let marks = vec!["?"; names.len()].join(", ");
    for row in &rows {
        let mut values = vec![Sql::Null; names.len()];
        for (col, v, _) in row {
            values[*col] = support::bound(v, true, types[*col] == ColumnType::Text, Nulls::Typed);
        }
        c.execute(
            &format!("INSERT INTO want ({cols}) VALUES ({marks})"),
            liteload::rusqlite::params_from_iter(values),
        )
        .unwrap();
    }
    assert_eq!(
        support::table_rows(&c, "main.t", false),
        support::table_rows(&c, "want", false),
        "\n{body}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_cell_is_the_references(
        seed in 1u64..,
        enc in 0usize..5,
        threads in 1usize..4,
        sample in prop_oneof![Just(1usize), Just(3), Just(10_000)],
    ) {
        let encoding = ["utf-8", "utf-8-bom", "utf-16le", "utf-16be", "latin1"][enc];
        let mut rng = Rng(seed);
        let (body, record) = document(&mut rng, encoding == "latin1");
        check(&encode(&body, encoding), &body, record, (threads, sample));
    }
}

#[test]
fn many_chunks_on_many_threads_keep_document_order() {
    let mut rng = Rng(7);
    let mut body = String::from("<root xmlns:ns1=\"urn:one\" xmlns:ns2=\"urn:two\">\n");
    while body.len() < 5 << 20 {
        let n = body.len();
        body.push_str(&format!("<row n=\"{n}\">"));
        body.push_str(&element(&mut rng, 0, false).replace(['&', ';'], "_"));
        body.push_str("</row>\n");
    }
    body.push_str("</root>\n");
    for threads in [1, 3] {
        check(body.as_bytes(), &body, "row", (threads, 10_000));
    }
}

/// The error a load of `doc` gives, after checking that it left no database behind.
fn error_of(doc: &[u8], record: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let e = match load(dir.path(), "bad.xml", doc, record, (2, 10_000)) {
        Ok(_) => panic!("loaded: {}", String::from_utf8_lossy(doc)),
        Err(e) => e.to_string(),
    };
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "bad.xml")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?} ({e})");
    e
}

#[test]
fn malformed_documents_are_positioned_errors_that_leave_nothing() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"<p>\n<row a=\"1\"/>\n<row a=\"2\">",
            "bad.xml:3:12: the document ends inside an element",
        ),
        (b"<p>\n<row><a></b></row>\n</p>", "bad.xml:2:9: "),
        (
            b"<p>\n<row/>\n</q>",
            "bad.xml:3:1: the end tag </q> does not match the open element <p>",
        ),
        (
            b"<p><row a=\"1\" a=\"2\"/><row/></p>",
            "bad.xml:1:15: attribute \"a\" is given twice",
        ),
        (
            b"<p><row a=\"x<y\"/><row/></p>",
            "'<' in an attribute value",
        ),
        (
            b"<p><row>&nope;</row><row/></p>",
            "the entity &nope; is not defined",
        ),
        (
            b"<p><row a=\"&nope;\"/><row/></p>",
            "the entity &nope; is not defined",
        ),
        (
            b"<p><row>\xFF</row><row/></p>",
            "bad.xml:1:9: bytes that are not UTF-8",
        ),
        (
            b"<?xml version=\"1.0\" encoding=\"UTF-16\"?><p><row/><row/></p>",
            "bad.xml:1:31: the document declares encoding \"UTF-16\" but is written in 8-bit bytes",
        ),
        (
            b"<?xml version=\"1.0\" encoding=\"EBCDIC\"?><p><row/><row/></p>",
            "is not one liteload reads",
        ),
        (
            b"\xFF\xFE<\0?\0x\0m\0l\0 \0e\0n\0c\0o\0d\0i\0n\0g\0=\0'\0l\0a\0t\0i\0n\0\x31\0'\0?\0>\0",
            "UTF-16 (by its byte-order mark) but declares encoding \"latin1\"",
        ),
        (
            b"<!DOCTYPE p [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><p><row>&x;</row><row/></p>",
            "the entity &x; is external; liteload never reads external entities",
        ),
        (b"<p a='1'/>", "has no child elements to take as records"),
        (b"id,name\n1,x\n", "bad.xml:1:1: "),
        (b"", "bad.xml"),
    ];
    for (doc, want) in cases {
        let e = error_of(doc, None);
        assert!(e.contains(want), "{:?}: {e}", String::from_utf8_lossy(doc));
    }
    assert!(error_of(b"<p><row/></p>", Some("p/item")).contains("no record: no element at p/item"));
    assert!(error_of(b"<p><row/></p>", Some("q/row")).contains("does not start with"));
}

#[test]
fn an_entity_bomb_is_refused_fast() {
    let mut doc =
        String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n");
    for k in 1..=9 {
        let prev = if k == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", k - 1)
        };
        doc.push_str(&format!(
            " <!ENTITY lol{k} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    doc.push_str("]>\n<lolz><row a=\"&lol9;\"/><row>&lol9;</row></lolz>\n");
    let t = std::time::Instant::now();
    let e = error_of(doc.as_bytes(), None);
    assert!(
        e.contains("bad.xml:2:1: the DOCTYPE: the entity &lol"),
        "{e}"
    );
    assert!(e.contains("expands to more than 1 MiB"), "{e}");
    assert!(t.elapsed().as_secs() < 1, "{:?}", t.elapsed());
}

#[test]
fn the_record_path_is_sniffed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let doc = b"<catalog><info v=\"1\"/><book id=\"1\"><title>A</title></book><book id=\"2\"><title>B</title><tag>x</tag><tag>y</tag></book></catalog>";
    std::fs::write(dir.path().join("c.xml"), doc).unwrap();
    let input = Input::Path(dir.path().join("c.xml"));
    let (read, sniffed) = liteload::read_plan(&input, &ImportOptions::default()).unwrap();
    assert_eq!(read.record.as_deref(), Some("catalog/book"));
    assert!(sniffed
        .unwrap()
        .described
        .starts_with("XML, records at catalog/book"));
    let c = load(dir.path(), "c2.xml", doc, None, (1, 10_000)).unwrap();
    let rows: Vec<(i64, String, Option<String>)> = c
        .prepare("SELECT id, title, tag FROM t")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        [
            (1, "A".into(), None),
            (2, "B".into(), Some("[\"x\",\"y\"]".into()))
        ]
    );
    // Under a wrapper: RSS's items, not its one channel.
    let rss = b"<rss version=\"2.0\"><channel><title>t</title><link>l</link><item><title>a</title></item><item><title>b</title><link>x</link></item></channel></rss>";
    let c = load(dir.path(), "feed.xml", rss, None, (1, 10_000)).unwrap();
    let titles: Vec<(String, Option<String>)> = c
        .prepare("SELECT title, link FROM t")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(titles, [("a".into(), None), ("b".into(), Some("x".into()))]);
}

/// Well-formedness everywhere: a random document with one snippet put at the start of a
/// random line (between records, above them in the root, inside a record, or after the
/// root), good or faulty, is loaded exactly when a conforming parser (roxmltree) parses
/// it; a refusal names a position and leaves nothing.
#[test]
fn a_fault_anywhere_is_refused_as_a_conforming_parser_refuses_it() {
    const SNIPPETS: &[&str] = &[
        // Faults.
        "<m><a>x</b></m>",
        "<m>&undefined;</m>",
        "<m a=\"1\" a=\"2\"/>",
        "<m>a & b</m>",
        "<m a=x/>",
        "<m a=\"<\"/>",
        "<!-- a -- b -->",
        "<?xml version=\"1.0\"?>",
        "<m></m x>",
        "</m>",
        "<m a=\"&undefined;\"/>",
        "<m>&#0;</m>",
        "<m>a\u{1}b</m>",
        "<m a=\"\u{1f}\"/>",
        "<m>\u{FFFE}</m>",
        "<!-- \u{8} -->",
        // Good ones.
        "<m>&amp;&#233;&e1;</m>",
        "<m a='1' b=\"&e2;\">t<n/></m>",
        "<!-- fine -->",
        "<?pi data?>",
        "<m><![CDATA[ <x> & ]]></m>",
    ];
    let (mut loaded, mut refused) = (0, 0);
    for seed in 1..=300u64 {
        let mut rng = Rng(seed);
        let (body, record) = document(&mut rng, false);
        let lines: Vec<&str> = body.split_inclusive('\n').collect();
        let snippet = *rng.pick(SNIPPETS);
        // Never the DTD's lines: a snippet there is no DTD syntax (a different class).
        let first = lines
            .iter()
            .position(|l| l.starts_with("<root"))
            .unwrap_or(0)
            + 1;
        let at = first + rng.below(lines.len() + 1 - first);
        let mut doc = String::new();
        for (i, l) in lines.iter().enumerate() {
            if i == at {
                doc.push_str(snippet);
            }
            doc.push_str(l);
        }
        if at == lines.len() {
            doc.push_str(snippet);
        }
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let want = roxmltree::Document::parse_with_options(&doc, opts).is_ok();
        let dir = tempfile::tempdir().unwrap();
        let path = format!("root/{record}");
        let got = load(
            dir.path(),
            "d.xml",
            doc.as_bytes(),
            Some(&path),
            (2, 10_000),
        );
        match (want, got) {
            (true, Ok(_)) => loaded += 1,
            (false, Err(e)) => {
                refused += 1;
                assert!(e.to_string().contains("d.xml:"), "no position: {e}");
                let left = std::fs::read_dir(dir.path()).unwrap().count();
                assert_eq!(left, 1, "only the input is left: {e}");
            }
            (true, Err(e)) => {
                panic!("seed {seed}: refused a document the reference parses ({e}):\n{doc}")
            }
            (false, Ok(_)) => {
                panic!("seed {seed}: loaded a document the reference refuses:\n{doc}")
            }
        }
    }
    // Both sides of the class were tried, many times.
    assert!(
        loaded > 50 && refused > 100,
        "{loaded} loaded, {refused} refused"
    );
}

/// Many uses of a large entity: the record and the document are counted as they are
/// expanded, so the load fails at the first use over its bound, fast, having built
/// little; in a record's attribute, its text, and between records.
#[test]
fn many_uses_of_a_large_entity_fail_at_the_first_over_the_bound() {
    // An entity of 1,000,000 bytes (under the 1 MiB each one may expand to).
    let mut dtd = String::from("<!DOCTYPE r [\n <!ENTITY a \"0123456789\">\n");
    for k in 1..=5 {
        let prev = if k == 1 {
            "a".to_string()
        } else {
            format!("a{}", k - 1)
        };
        dtd.push_str(&format!(
            " <!ENTITY a{k} \"{}\">\n",
            format!("&{prev};").repeat(10)
        ));
    }
    dtd.push_str("]>\n");
    let uses = "&a5;".repeat(1_500);
    for body in [
        format!("<r><row>{uses}</row><row/></r>"),
        format!("<r><row v=\"{uses}\"/><row/></r>"),
        format!("<r>{}</r>", "<row>&a5;</row>".repeat(1_500)),
    ] {
        let doc = format!("{dtd}{body}");
        let t = std::time::Instant::now();
        let e = error_of(doc.as_bytes(), Some("r/row"));
        assert!(e.contains("expand"), "{e}");
        assert!(t.elapsed().as_secs() < 3, "{:?}: {e}", t.elapsed());
    }
    // Little was built: the process's peak resident memory (this binary's other tests
    // included) stays far below the 1.5 GB one document would have taken.
    let peak_kib: u64 = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0);
    assert!(peak_kib < 1 << 20, "peak RSS {peak_kib} KiB");
    // One use is fine: any document may expand to 1 MiB.
    let dir = tempfile::tempdir().unwrap();
    let doc = format!("{dtd}<r><row>&a5;</row></r>");
    let conn = load(dir.path(), "ok.xml", doc.as_bytes(), Some("r/row"), (1, 10)).unwrap();
    let n: i64 = conn
        .query_row("SELECT length(text) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1_000_000);
}

/// An encoding given explicitly wins over the declaration, UTF-8 too; without one, the
/// declaration says it (ISO-8859-1 read as Windows-1252).
#[test]
fn an_encoding_given_wins_over_the_declaration() {
    let dir = tempfile::tempdir().unwrap();
    let utf8 =
        "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r><row v=\"é€\"/><row v=\"x\"/></r>";
    let latin = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r><row v=\"\xE9\x80\"/><row v=\"x\"/></r>";
    let read = |name: &str, bytes: &[u8], given: Option<liteload::Encoding>| -> String {
        let src = dir.path().join(name);
        std::fs::write(&src, bytes).unwrap();
        let db = dir.path().join(format!("{name}.db"));
        let mut o = ImportOptions::default();
        o.table = Some("t".into());
        if let Some(e) = given {
            o.read.encoding = e;
            o.read.encoding_given = true;
        }
        import(&db, &[Input::Path(src)], &o, &Progress::default()).unwrap();
        let c = Connection::open(db).unwrap();
        support::assert_intact(&c);
        c.query_row("SELECT v FROM t WHERE rowid = 1", [], |r| r.get(0))
            .unwrap()
    };
    // The declaration alone: latin1 bytes are Windows-1252 (0x80 is the euro sign).
    assert_eq!(read("l.xml", latin, None), "é€");
    // UTF-8 bytes behind a latin1 declaration: --encoding utf-8 wins.
    assert_eq!(
        read("u.xml", utf8.as_bytes(), Some(liteload::Encoding::Utf8)),
        "é€"
    );
    // And --encoding latin1 over a UTF-8 declaration.
    let declared_utf8 = [
        &b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><r><row v=\""[..],
        b"\xE9\x80",
        b"\"/><row v=\"x\"/></r>",
    ]
    .concat();
    assert_eq!(
        read("d.xml", &declared_utf8, Some(liteload::Encoding::Latin1)),
        "é€"
    );
}

/// A first record longer than the 64 KiB the record path is chosen from: the path is
/// still the records' (the window grows), not a false "no child elements" nor a path
/// inside the first record.
#[test]
fn a_first_record_past_the_sniffing_window_is_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(100_000);
    let repeated = "<t>y</t>".repeat(20_000);
    for (name, doc) in [
        (
            "attr.xml",
            format!("<r><row a=\"{long}\"/><row a=\"b\"/></r>"),
        ),
        (
            "kids.xml",
            format!("<r><row>{repeated}</row><row><t>z</t></row></r>"),
        ),
    ] {
        let conn = load(dir.path(), name, doc.as_bytes(), None, (2, 10_000))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2, "{name}");
    }
}
