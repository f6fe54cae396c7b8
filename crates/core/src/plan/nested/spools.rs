//! The one thread that writes the spools: it replays each record's events
//! ([`super::parse`]) in input order, numbering each table's rows from 1, naming child
//! tables and columns as they are first met (so names do not depend on which thread
//! took a record apart), and writes each row to its table's spool as one NDJSON line.
//!
//! With a key for the records (see [`TopKey`]), the records' table has no `_id`: each
//! record's key member is found before any of its rows is written, and its children's
//! `_parent` is that key.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::parse::{Event, Split};
use super::{ID, PARENT, POSITION, VALUE};
use crate::error::{Error, Result};
use crate::names::Names;
use crate::schema::quote_ident;
use crate::source::keys::PART;

/// One table's spool.
pub(super) struct Spool {
    pub(super) table: String,
    pub(super) parent: Option<usize>,
    /// The path of its arrays from the record (keys joined by `.`; empty for the
    /// records' table).
    steps: String,
    /// Child tables by the member's path (keys joined by [`PART`]).
    children: Lookup<usize>,
    /// Each member's path (keys joined by [`PART`]): its column's name, as the row's
    /// text puts it (`,"name":`).
    columns: Lookup<Box<[u8]>>,
    names: Names,
    next_id: i64,
    pub(super) rows: u64,
    pub(super) path: PathBuf,
    pub(super) out: BufWriter<File>,
}

/// The key of the records' table, a member of each record (see
/// [`Spools::keyed`]).
struct TopKey {
    /// The key column, as the options name it.
    name: String,
    /// Its name as a row's text puts it, first (`"name":`).
    put: Box<[u8]>,
    /// Every key met, as SQLite compares them in a TEXT column (a string's text, an
    /// integer's digits), and the record it keys: about 50 bytes a record, held until
    /// the spools are written.
    seen: HashMap<Box<[u8]>, u64>,
    /// Whether a key was a string: the column is then TEXT, else INTEGER.
    text: bool,
    /// The record's key as JSON, for its row and its children's `_parent`.
    json: Vec<u8>,
    /// Whether a string key is read as a text field (XML's values): a string that is
    /// an integer written plainly (`7`, not `07` or ` 7`) is then an integer key.
    fields: bool,
}

/// Appends `before` and the member name `name` (which needs no escape), quoted, and `:`.
fn member(out: &mut Vec<u8>, before: &str, name: &str) {
    out.extend_from_slice(before.as_bytes());
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// Appends the digits of `n` (by serde_json's integer writer: `write!`'s formatting
/// machinery took about 6% of a nested load's CPU time here).
fn number<N: serde::Serialize>(out: &mut Vec<u8>, n: N) {
    // Writing into a Vec cannot fail, and integers always serialize.
    let _ = serde_json::to_writer(out, &n);
}

/// Whether `s` is an integer of 64 bits written as SQLite writes it back: digits without
/// a leading zero, a `-` before them at most.
fn plain_integer(s: &str) -> bool {
    s.parse::<i64>().is_ok_and(|i| i.to_string() == s)
}

/// A row being written, or an array whose elements are being written.
enum Frame {
    Row {
        t: usize,
        id: i64,
        text: Vec<u8>,
    },
    Array {
        t: usize,
        parent: i64,
        position: u64,
    },
}

/// The spools of a load, the records' table first.
pub(super) struct Spools {
    pub(super) spools: Vec<Spool>,
    tables: Names,
    flatten: Option<String>,
    dir: PathBuf,
    pub(super) notes: Vec<String>,
    stack: Vec<Frame>,
    key: Option<TopKey>,
    /// Names given to child tables by their paths, and whether each was met.
    pub(super) given: Vec<(String, String, bool)>,
}

impl Spools {
    /// Spools in `dir` for the records' table `top` (a name claimed), flattened
    /// members' columns joined by `flatten`.
    pub(super) fn new(top: &str, flatten: Option<String>, dir: &Path) -> Result<Spools> {
        let mut tables = Names::new();
        tables.claim(top);
        let mut s = Spools {
            spools: vec![],
            tables,
            flatten,
            dir: dir.to_path_buf(),
            notes: vec![],
            stack: vec![],
            key: None,
            given: vec![],
        };
        s.add(top.to_string(), None, String::new())?;
        Ok(s)
    }

    /// Keys the records' table by the member named `name` (ASCII case ignored; a
    /// flattened member by its joined name) instead of `_id`: every record must have
    /// one such member, an integer or a string, different in every record (as SQLite
    /// compares them in a TEXT column), or it is bad. Before any row is written.
    /// With `fields`, a string that is an integer written plainly is that integer (the
    /// load types XML's text so).
    pub(super) fn keyed(&mut self, name: &str, fields: bool) {
        let top = &mut self.spools[0];
        top.names = Names::new();
        top.names.claim(name);
        let mut put = vec![b'{'];
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut put, name);
        put.push(b':');
        self.key = Some(TopKey {
            name: name.to_string(),
            put: put.into_boxed_slice(),
            seen: HashMap::new(),
            text: false,
            json: vec![],
            fields,
        });
    }

    /// The key column's name and whether it is TEXT (else INTEGER), when keyed.
    pub(super) fn key(&self) -> Option<(&str, bool)> {
        self.key.as_ref().map(|k| (k.name.as_str(), k.text))
    }

    /// Whether the top row's member at the path `key` is the key's.
    fn is_key(&self, key: &[u8]) -> bool {
        let Some(k) = &self.key else { return false };
        match key.contains(&(PART as u8)) {
            false => key.eq_ignore_ascii_case(k.name.as_bytes()),
            true => String::from_utf8_lossy(key)
                .replace(PART, self.flatten.as_deref().unwrap_or("_"))
                .eq_ignore_ascii_case(&k.name),
        }
    }

    /// Finds the key of the record of `events` (number `no`) and takes it, or says
    /// why the record is bad.
    fn take_key(&mut self, split: &Split, events: &[Event], no: u64) -> Option<String> {
        let mut depth = 0;
        let mut found = None;
        for e in events {
            match e {
                Event::Row => depth += 1,
                Event::EndRow => depth -= 1,
                Event::Value { key, text } if depth == 1 && self.is_key(split.bytes(key)) => {
                    if found.is_some() {
                        let k = self.key.as_ref().map_or("", |k| &k.name);
                        return Some(format!("two members name the key column {k:?}"));
                    }
                    found = Some(text);
                }
                _ => {}
            }
        }
        let k = self.key.as_mut()?;
        let Some(text) = found else {
            return Some(format!("no member names the key column {:?}", k.name));
        };
        let raw = split.bytes(text);
        let compared: Vec<u8> = match raw.first() {
            Some(b'"') => match serde_json::from_slice::<String>(raw) {
                Ok(s) if k.fields && plain_integer(&s) => {
                    k.json.clear();
                    k.json.extend_from_slice(s.as_bytes());
                    s.into_bytes()
                }
                Ok(s) => {
                    k.json.clear();
                    k.json.extend_from_slice(raw);
                    k.text = true;
                    s.into_bytes()
                }
                Err(_) => return Some("the key is a string the reader refuses".into()),
            },
            _ => match serde_json::from_slice::<i64>(raw) {
                Ok(i) => {
                    k.json.clear();
                    let _ = write!(k.json, "{i}");
                    k.json.clone()
                }
                Err(_) => {
                    let held = match raw.first() {
                        Some(b'[') => "an array".to_string(),
                        Some(b'{') => "an object".to_string(),
                        Some(b'n') => "null".to_string(),
                        Some(b't' | b'f') => "a boolean".to_string(),
                        // (A number: ASCII, cut after 40 digits.)
                        _ => match raw.len() > 40 {
                            true => format!("the number {}…", String::from_utf8_lossy(&raw[..40])),
                            false => format!("the number {}", String::from_utf8_lossy(raw)),
                        },
                    };
                    return Some(format!(
                        "the key column {:?} holds {held}: a key is an integer (64 bits) or a string",
                        k.name
                    ));
                }
            },
        };
        if let Some(first) = k.seen.get(compared.as_slice()) {
            return Some(format!(
                "the key {} of column {:?} is record {first}'s already",
                String::from_utf8_lossy(&k.json),
                k.name
            ));
        }
        k.seen.insert(compared.into_boxed_slice(), no);
        None
    }

    fn add(&mut self, table: String, parent: Option<usize>, steps: String) -> Result<usize> {
        let i = self.spools.len();
        let path = self.dir.join(format!("{i}.ndjson"));
        let file = File::create(&path).map_err(|e| Error::io(Some(path.clone()), e))?;
        let mut names = Names::new();
        names.claim(ID);
        if parent.is_some() {
            names.claim(PARENT);
            names.claim(POSITION);
        }
        self.spools.push(Spool {
            table,
            parent,
            steps,
            children: Lookup::default(),
            columns: Lookup::default(),
            names,
            next_id: 1,
            rows: 0,
            path,
            out: BufWriter::with_capacity(1 << 20, file),
        });
        Ok(i)
    }

    /// Writes the rows of one record, number `no`: `events` of `split`, from its `Row`
    /// to its `EndRow`. `Ok(Some(why))`: the record is bad, and nothing of it is
    /// written.
    pub(super) fn record(
        &mut self,
        split: &Split,
        events: &[Event],
        no: u64,
    ) -> Result<Option<String>> {
        if self.key.is_some() {
            if let Some(why) = self.take_key(split, events, no) {
                return Ok(Some(why));
            }
        }
        for e in events {
            match e {
                Event::Row => {
                    let (t, id, text) = self.begin_row();
                    self.stack.push(Frame::Row { t, id, text });
                }
                Event::Value { key, text: value } => {
                    // (The key is the row's first member, put there by `begin_row`.)
                    if self.stack.len() == 1 && self.is_key(split.bytes(key)) {
                        continue;
                    }
                    let Some(Frame::Row { t, text, .. }) = self.stack.last_mut() else {
                        return Err(Error::internal("a value outside a row"));
                    };
                    let spool = &mut self.spools[*t];
                    let column = column(
                        spool,
                        self.flatten.as_deref(),
                        &mut self.notes,
                        split.bytes(key),
                    );
                    text.extend_from_slice(column);
                    text.extend_from_slice(split.bytes(value));
                }
                Event::Element { text: value } => {
                    let (t, _, mut text) = self.begin_row();
                    let spool = &mut self.spools[t];
                    let column = column(
                        spool,
                        self.flatten.as_deref(),
                        &mut self.notes,
                        VALUE.as_bytes(),
                    );
                    text.extend_from_slice(column);
                    text.extend_from_slice(split.bytes(value));
                    self.end_row(t, text)?;
                }
                Event::Open { key, table_key } => {
                    let Some(&Frame::Row { t, id, .. }) = self.stack.last() else {
                        return Err(Error::internal("an array outside a row"));
                    };
                    let c = match self.spools[t].children.get(split.bytes(key)) {
                        Some(&c) => c,
                        None => self.child(t, split.text(key), split.text(table_key))?,
                    };
                    self.stack.push(Frame::Array {
                        t: c,
                        parent: id,
                        position: 0,
                    });
                }
                Event::Close => {
                    self.stack.pop();
                }
                Event::EndRow => {
                    let Some(Frame::Row { t, text, .. }) = self.stack.pop() else {
                        return Err(Error::internal("a row's end outside a row"));
                    };
                    self.end_row(t, text)?;
                }
            }
        }
        Ok(None)
    }

    /// A new row: of the array being written (its next element), else of the records'
    /// table; its table, `_id`, and its text so far.
    fn begin_row(&mut self) -> (usize, i64, Vec<u8>) {
        let (t, parent) = match self.stack.last_mut() {
            Some(Frame::Array {
                t,
                parent,
                position,
            }) => {
                *position += 1;
                (*t, Some((*parent, *position - 1)))
            }
            _ => (0, None),
        };
        let id = self.spools[t].next_id;
        self.spools[t].next_id += 1;
        let mut text = Vec::with_capacity(256);
        let key = self.key.as_ref();
        match (key, t) {
            (Some(k), 0) => {
                text.extend_from_slice(&k.put);
                text.extend_from_slice(&k.json);
            }
            _ => {
                member(&mut text, "{", ID);
                number(&mut text, id);
            }
        }
        if let Some((p, pos)) = parent {
            member(&mut text, ",", PARENT);
            match (key, self.spools[t].parent) {
                (Some(k), Some(0)) => text.extend_from_slice(&k.json),
                _ => {
                    number(&mut text, p);
                }
            }
            member(&mut text, ",", POSITION);
            number(&mut text, pos);
        }
        (t, id, text)
    }

    /// Ends the row `text` of table `t` and writes it to its spool.
    fn end_row(&mut self, t: usize, mut text: Vec<u8>) -> Result<()> {
        text.extend_from_slice(b"}\n");
        let s = &mut self.spools[t];
        s.rows += 1;
        s.out
            .write_all(&text)
            .map_err(|e| Error::io(Some(s.path.clone()), e))
    }

    /// The child table of table `t` for the arrays at `key` (`table_key` joined by `_`):
    /// named as given for its path, else `<parent>_<table_key>`.
    fn child(&mut self, t: usize, key: &str, table_key: &str) -> Result<usize> {
        let steps = match self.spools[t].steps.as_str() {
            "" => key.replace(PART, "."),
            above => format!("{above}.{}", key.replace(PART, ".")),
        };
        let wanted = match self.given.iter_mut().find(|(p, _, _)| *p == steps) {
            Some((_, name, met)) => {
                *met = true;
                name.clone()
            }
            None => format!("{}_{table_key}", self.spools[t].table),
        };
        let got = self.tables.allocate(&wanted);
        if got != wanted {
            self.notes.push(format!(
                "the arrays at {:?} of table {} go to table {}: the name {} is taken",
                key.replace(PART, " > "),
                quote_ident(&self.spools[t].table),
                quote_ident(&got),
                quote_ident(&wanted)
            ));
        }
        let c = self.add(got, Some(t), steps)?;
        self.spools[t].children.insert(key.as_bytes(), c);
        Ok(c)
    }
}

/// The column of the table of `s` that the member at `key` (a path put from a `str`)
/// fills, as the row's text puts it (`,"name":`); first met, it is named (renamings
/// noted in `notes`; flattened paths' keys joined by `flatten`).
fn column<'s>(
    s: &'s mut Spool,
    flatten: Option<&str>,
    notes: &mut Vec<String>,
    key: &[u8],
) -> &'s [u8] {
    if let Some(i) = s.columns.find(key) {
        return s.columns.at(i);
    }
    let key_text = String::from_utf8_lossy(key);
    // A blank key names the column by its place, as the JSON reader names one.
    let reserved = if s.parent.is_some() { 3 } else { 1 };
    let sep = flatten.unwrap_or("_");
    let joined = key_text.replace(PART, sep);
    let wanted = match joined.trim().is_empty() {
        true => format!("c{}", reserved + s.columns.len() + 1),
        false => joined,
    };
    let got = s.names.allocate_column(&wanted);
    if got != key_text {
        let why = if got == wanted {
            ""
        } else {
            ": the name is taken"
        };
        let shown = key_text.replace(PART, " > ");
        notes.push(format!(
            "table {}: the member at {shown:?} is stored in column {}{why}",
            quote_ident(&s.table),
            quote_ident(&got)
        ));
    }
    let mut put = vec![b','];
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut put, &got);
    put.push(b':');
    s.columns.insert(key, put.into_boxed_slice())
}

/// Values by a short byte key: a search among a few, an index past them. Hand-written
/// because it measured faster: a `HashMap<String, _>` lookup (SipHash) and a `str`
/// check per member were about a tenth of the spools' thread on 30 MB of orders.
struct Lookup<V> {
    items: Vec<(Box<[u8]>, V)>,
    index: HashMap<Box<[u8]>, usize>,
}

impl<V> Default for Lookup<V> {
    fn default() -> Self {
        Lookup {
            items: vec![],
            index: HashMap::new(),
        }
    }
}

impl<V> Lookup<V> {
    /// Past this many, keys are found through the index.
    const FEW: usize = 16;

    fn len(&self) -> usize {
        self.items.len()
    }

    fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key).map(|i| self.at(i))
    }

    /// Where `key` is held.
    fn find(&self, key: &[u8]) -> Option<usize> {
        match self.items.len() <= Self::FEW {
            true => self.items.iter().position(|(k, _)| **k == *key),
            false => self.index.get(key).copied(),
        }
    }

    /// The value held at `i` (from [`Lookup::find`]).
    fn at(&self, i: usize) -> &V {
        &self.items[i].1
    }

    /// Adds `key` (not held) with `value`; returns the value held.
    fn insert(&mut self, key: &[u8], value: V) -> &V {
        let i = self.items.len();
        self.items.push((key.into(), value));
        if self.items.len() > Self::FEW {
            if self.index.is_empty() {
                for (j, (k, _)) in self.items.iter().enumerate() {
                    self.index.insert(k.clone(), j);
                }
            } else {
                self.index.insert(key.into(), i);
            }
        }
        &self.items[i].1
    }
}
