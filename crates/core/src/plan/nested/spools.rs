//! The one thread that writes the spools: it replays each record's events
//! ([`super::parse`]) in input order, numbering each table's rows from 1, naming child
//! tables and columns as they are first met (so names do not depend on which thread
//! took a record apart), and writes each row to its table's spool: each of its values
//! after its column's number (a `u32`, little-endian), as [`super::values`] has it, then
//! [`END`]. The spool's load ([`super::read`]) reads the values back as they are.
//!
//! With a key for the records (see [`TopKey`]), the records' table has no `_id`: each
//! record's key member is found before any of its rows is written, and its children's
//! `_parent` is that key.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::parse::{Event, Split};
use super::spool_file::SpoolFile;
use super::typing::{self, Typing};
use super::values::{self, Got, END};
use super::{ID, PARENT, POSITION, VALUE};
use crate::error::{Error, Result};
use crate::names::Names;
use crate::schema::quote_ident;
use crate::source::keys::PART;
use crate::types::ColumnType;

/// One table's spool.
pub(super) struct Spool {
    pub(super) table: String,
    pub(super) parent: Option<usize>,
    /// The path of its arrays from the record (keys joined by `.`; empty for the
    /// records' table).
    steps: String,
    /// Child tables by the member's path (keys joined by [`PART`]).
    children: Lookup<usize>,
    /// Each member's path (keys joined by [`PART`]): its column's number (from 3 in a
    /// child's table, from 1 in the records').
    columns: Lookup<u32>,
    /// Each column's name, by its number.
    pub(super) named: Vec<String>,
    /// Where in `columns` the last member's column was found (the next is tried first).
    last_column: usize,
    names: Names,
    next_id: i64,
    pub(super) rows: u64,
    pub(super) path: PathBuf,
    pub(super) out: SpoolFile,
    /// Its rows typed and written as records ([`super::typing`]), or as values where
    /// the load types them (`None`).
    pub(super) typing: Option<Typing>,
}

/// The key of the records' table, a member of each record (see
/// [`Spools::keyed`]).
struct TopKey {
    /// The key column, as the options name it.
    name: String,
    /// Every key met, as SQLite compares them in a TEXT column (a string's text, an
    /// integer's digits), and the record it keys: about 50 bytes a record, held until
    /// the spools are written.
    seen: HashMap<Box<[u8]>, u64>,
    /// Whether a key was a string: the column is then TEXT, else INTEGER.
    text: bool,
    /// The record's key ([`super::values`]), for its row and its children's `_parent`.
    value: Vec<u8>,
    /// Whether a string key is read as a text field (XML's values): a string that is
    /// an integer written plainly (`7`, not `07` or ` 7`) is then an integer key.
    fields: bool,
}

/// The most memory the spools' buffers take together before each writes its bytes to
/// its file and gives its buffer back (each also writes its own bytes once it holds
/// [`super::spool_file::FLUSH_AT`], keeping the buffer for the next rows): the bound
/// holds for any number of tables, each of which may once have filled its buffer.
const BUFFERED_MAX: usize = 32 << 20;

/// Appends the column number `c`.
#[inline]
fn column_no(out: &mut Vec<u8>, c: u32) {
    out.extend_from_slice(&c.to_le_bytes());
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
        row: Vec<u8>,
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
    /// Rows' buffers, kept for the next rows.
    free: Vec<Vec<u8>>,
    /// Bytes of rows the tables hold while their types are undecided.
    held: usize,
    /// The memory the spools' buffers take (at most [`BUFFERED_MAX`] after each row).
    buffered: usize,
    /// How rows are typed as they are written, and the input's name (a table's load is
    /// named after it); `None`: their loads type them.
    typing: Option<(typing::Rules, String)>,
}

impl Spools {
    /// Spools in `dir` for the records' table `top` (a name claimed), flattened
    /// members' columns joined by `flatten`; with `typing`, every table's rows typed by
    /// those rules (the types given are the records' table's) and spooled as records, the
    /// loads named after the input named there.
    pub(super) fn new(
        top: &str,
        flatten: Option<String>,
        dir: &Path,
        typing: Option<(typing::Rules, String)>,
    ) -> Result<Spools> {
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
            free: vec![],
            held: 0,
            buffered: 0,
            typing,
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
        // A key's type is known once every record is read: the loads type the rows.
        self.typing = None;
        let top = &mut self.spools[0];
        top.typing = None;
        top.names = Names::new();
        top.names.claim(name);
        top.named[0] = name.to_string();
        self.key = Some(TopKey {
            name: name.to_string(),
            seen: HashMap::new(),
            text: false,
            value: vec![],
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
        let Some((got, _)) = values::get(split.bytes(text)) else {
            return Some("the key is a value the reader refuses".into());
        };
        let read;
        let (got, raw) = match got {
            Got::Raw(raw) => match values::read_value(raw) {
                Some(v) => {
                    read = v;
                    (read.got(), Some(raw))
                }
                None => return Some("the key is a value the reader refuses".into()),
            },
            got => (got, None),
        };
        k.value.clear();
        let compared: Vec<u8> = match got {
            Got::String(s) if k.fields && plain_integer(s) => {
                // (Digits that `plain_integer` read as an integer of 64 bits.)
                values::put_integer(&mut k.value, s.parse().unwrap_or_default());
                s.as_bytes().to_vec()
            }
            Got::String(s) => {
                values::put_text(&mut k.value, values::STRING, s.as_bytes());
                k.text = true;
                s.as_bytes().to_vec()
            }
            Got::Integer(i) => {
                values::put_integer(&mut k.value, i);
                i.to_string().into_bytes()
            }
            got => {
                let number = |n: &str| match n.len() > 40 {
                    true => format!("the number {}…", &n[..40]),
                    false => format!("the number {n}"),
                };
                let held = match (got, raw) {
                    (Got::Null, _) => "null".to_string(),
                    (Got::Bool(_), _) => "a boolean".to_string(),
                    (Got::Json(t), _) if t.starts_with('[') => "an array".to_string(),
                    (Got::Json(t), _) if t.starts_with('{') => "an object".to_string(),
                    // (A number: ASCII, as read or as serde_json writes it.)
                    (_, Some(raw)) => number(raw),
                    (Got::Json(t), None) => number(t),
                    (Got::Real(r), None) => number(&serde_json::json!(r).to_string()),
                    _ => "a value".to_string(),
                };
                return Some(format!(
                    "the key column {:?} holds {held}: a key is an integer (64 bits) or a string",
                    k.name
                ));
            }
        };
        if let Some(first) = k.seen.get(compared.as_slice()) {
            // The key as JSON: a string quoted, an integer's digits.
            let shown = match values::get(&k.value) {
                Some((Got::String(s), _)) => serde_json::json!(s).to_string(),
                _ => String::from_utf8_lossy(&compared).into_owned(),
            };
            return Some(format!(
                "the key {shown} of column {:?} is record {first}'s already",
                k.name
            ));
        }
        k.seen.insert(compared.into_boxed_slice(), no);
        None
    }

    fn add(&mut self, table: String, parent: Option<usize>, steps: String) -> Result<usize> {
        let i = self.spools.len();
        let path = self.dir.join(format!("{i}.rows"));
        let out = SpoolFile::create(path.clone())?;
        let mut names = Names::new();
        let mut named = vec![ID.to_string()];
        names.claim(ID);
        if parent.is_some() {
            names.claim(PARENT);
            names.claim(POSITION);
            named.extend([PARENT.to_string(), POSITION.to_string()]);
        }
        // A child's load is named after the input and its table; the types given are
        // the records' table's.
        // The rows' numbers and places are integers whatever the options say of the
        // input's types.
        let typing = self.typing.as_ref().map(|(rules, input)| {
            let numbered = |n: &str| (n.to_string(), ColumnType::Integer);
            let (given, load) = match parent {
                None => (
                    std::iter::once(numbered(ID))
                        .chain(rules.given.iter().cloned())
                        .collect(),
                    input.clone(),
                ),
                Some(_) => (
                    vec![numbered(ID), numbered(PARENT), numbered(POSITION)],
                    format!("{input}[{table}]"),
                ),
            };
            Typing::new(
                typing::Rules {
                    given,
                    ..rules.clone()
                },
                load.into(),
            )
        });
        self.spools.push(Spool {
            table,
            parent,
            steps,
            children: Lookup::default(),
            columns: Lookup::default(),
            named,
            last_column: usize::MAX,
            names,
            next_id: 1,
            rows: 0,
            path,
            out,
            typing,
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
                    let (t, id, row) = self.begin_row();
                    self.stack.push(Frame::Row { t, id, row });
                }
                Event::Value { key, text: value } => {
                    // (The key is the row's first member, put there by `begin_row`.)
                    if self.stack.len() == 1 && self.is_key(split.bytes(key)) {
                        continue;
                    }
                    let Some(Frame::Row { t, row, .. }) = self.stack.last_mut() else {
                        return Err(Error::internal("a value outside a row"));
                    };
                    let spool = &mut self.spools[*t];
                    let c = column(
                        spool,
                        self.flatten.as_deref(),
                        &mut self.notes,
                        split.bytes(key),
                    );
                    column_no(row, c);
                    row.extend_from_slice(split.bytes(value));
                }
                Event::Element { text: value } => {
                    let (t, _, mut row) = self.begin_row();
                    let spool = &mut self.spools[t];
                    let c = column(
                        spool,
                        self.flatten.as_deref(),
                        &mut self.notes,
                        VALUE.as_bytes(),
                    );
                    column_no(&mut row, c);
                    row.extend_from_slice(split.bytes(value));
                    self.end_row(t, row)?;
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
                    let Some(Frame::Row { t, row, .. }) = self.stack.pop() else {
                        return Err(Error::internal("a row's end outside a row"));
                    };
                    self.end_row(t, row)?;
                }
            }
        }
        Ok(None)
    }

    /// A new row: of the array being written (its next element), else of the records'
    /// table; its table, `_id`, and the row so far.
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
        // (A row's first member is tried at the first column first.)
        self.spools[t].last_column = usize::MAX;
        let mut row = self.free.pop().unwrap_or_default();
        let key = self.key.as_ref();
        column_no(&mut row, 0);
        match (key, t) {
            (Some(k), 0) => row.extend_from_slice(&k.value),
            _ => values::put_integer(&mut row, id),
        }
        if let Some((p, pos)) = parent {
            column_no(&mut row, 1);
            match (key, self.spools[t].parent) {
                (Some(k), Some(0)) => row.extend_from_slice(&k.value),
                _ => values::put_integer(&mut row, p),
            }
            column_no(&mut row, 2);
            // (A position past 2^63 would need an array of as many elements.)
            values::put_integer(&mut row, pos as i64);
        }
        (t, id, row)
    }

    /// Ends the row `row` of table `t` and writes it to its spool.
    fn end_row(&mut self, t: usize, mut row: Vec<u8>) -> Result<()> {
        column_no(&mut row, END);
        let s = &mut self.spools[t];
        s.rows += 1;
        let before = s.out.memory();
        let written = match &mut s.typing {
            Some(typing) => {
                let mut spool = typing::Spool {
                    out: &mut s.out,
                    path: &s.path,
                };
                typing.take(&row, &s.named, &mut spool, &mut self.held)
            }
            None => s
                .out
                .write_all(&row)
                .map_err(|e| Error::io(Some(s.path.clone()), e)),
        };
        row.clear();
        self.free.push(row);
        written?;
        // (`before` is part of `buffered`.)
        self.buffered = self.buffered + self.spools[t].out.memory() - before;
        if self.buffered > BUFFERED_MAX {
            self.release()?;
        }
        Ok(())
    }

    /// Appends every spool's bytes held to its file, and gives the buffers back.
    pub(super) fn release(&mut self) -> Result<()> {
        for s in &mut self.spools {
            s.out.release()?;
        }
        self.buffered = 0;
        Ok(())
    }

    /// The memory the spools' buffers take, counted buffer by buffer.
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.spools.iter().map(|s| s.out.memory()).sum()
    }

    /// Writes the rows each table holds still (its types then decided), and every
    /// spool's bytes to its file.
    pub(super) fn finish(&mut self) -> Result<()> {
        for s in &mut self.spools {
            if let Some(typing) = &mut s.typing {
                let mut spool = typing::Spool {
                    out: &mut s.out,
                    path: &s.path,
                };
                typing.finish(&s.named, &mut spool)?;
            }
        }
        self.release()
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

/// The column number of the table of `s` that the member at `key` (a path put from a
/// `str`) fills; first met, it is named (renamings noted in `notes`; flattened paths'
/// keys joined by `flatten`).
fn column(s: &mut Spool, flatten: Option<&str>, notes: &mut Vec<String>, key: &[u8]) -> u32 {
    // Rows mostly hold their members in the same order: the one after the last found
    // is tried first.
    let next = s.last_column.wrapping_add(1);
    if s.columns.items.get(next).is_some_and(|(k, _)| **k == *key) {
        s.last_column = next;
        return s.columns.items[next].1;
    }
    if let Some(i) = s.columns.find(key) {
        s.last_column = i;
        return *s.columns.at(i);
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
    let c = s.named.len() as u32;
    s.named.push(got);
    *s.columns.insert(key, c)
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

#[cfg(test)]
mod tests {
    use super::super::parse::{self, Split};
    use super::*;
    use crate::Nested;

    /// Tables that each once filled a buffer (a record a table, each with more than
    /// [`FLUSH_AT`](super::super::spool_file::FLUSH_AT) of rows) do not keep those
    /// buffers: the spools' memory stays within the bound, and every row reaches its file.
    #[test]
    fn buffers_of_many_tables_stay_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut spools = Spools::new("t", None, dir.path(), None).unwrap();
        let element = format!("\"{}\"", "x".repeat(1000));
        let elements = vec![element; 1100].join(",");
        let tables = 48;
        for i in 0..tables {
            let text = format!("{{\"a{i}\": [{elements}]}}");
            let mut split = Split::sized(text.len(), 1);
            let rules = parse::Rules {
                rule: Nested::Tables,
                flatten: false,
            };
            parse::record(text.as_bytes(), rules, &mut split).unwrap();
            let bad = spools.record(&split, &split.events, i + 1).unwrap();
            assert_eq!(bad, None);
            let memory = spools.memory();
            assert_eq!(memory, spools.buffered);
            assert!(
                memory <= BUFFERED_MAX + 2 * super::super::spool_file::FLUSH_AT,
                "{memory} bytes buffered after {} tables",
                i + 1
            );
        }
        spools.finish().unwrap();
        assert_eq!(spools.memory(), 0);
        // The records' table and one child table a record, each child's rows in its file.
        assert_eq!(spools.spools.len(), tables as usize + 1);
        for s in &spools.spools[1..] {
            assert_eq!(s.rows, 1100);
            assert!(std::fs::metadata(&s.path).unwrap().len() > 1100 * 1000);
        }
    }
}
