//! Related tables from nested JSON ([`Nested`]): the input's records are read once, in
//! order, and each is split into rows: its own, and one for every element of every
//! array in it (recursively), each row written to its table's spool (NDJSON in a
//! temporary folder beside the target). Each spool is then a load of the plan, with its
//! table's shape: the key `_id`, and for a child `_parent`, declared as a FOREIGN KEY to
//! its parent's `_id` and indexed. The spools are written whole before the first table
//! is sampled, so every table's columns and types come from its own rows.
//!
//! A record is split whole before any of its rows is spooled: a bad one (not an
//! object, or a key with a NUL byte where a name would hold it) is skipped whole, with
//! its place in the input, as the load's error limit allows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Dest, Load, TableShape};
use crate::error::{Error, Position, Result};
use crate::names::Names;
use crate::options::{ImportOptions, Nested};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::source::json::{Item, ObjectStream, TextRecord};
use crate::source::keys::PART;
use crate::source::{BadRecord, Format, Input, ReadOptions};
use crate::table::{ForeignKey, IfExists, IndexSpec};

/// Every table's key: its rows numbered from 1 in input order.
pub(crate) const ID: &str = "_id";
/// A child row's parent's `_id`.
pub(crate) const PARENT: &str = "_parent";
/// A child row's element's place in its array, from 0.
pub(crate) const POSITION: &str = "_position";
/// The column of an element that is not an object.
pub(crate) const VALUE: &str = "value";

/// The loads of a nested input, one per table, and what the plan keeps for them.
pub(crate) struct Spooled {
    /// The spools (one NDJSON file a table, top table first), removed when dropped.
    pub(crate) dir: tempfile::TempDir,
    /// Each table's name and spool, top table first, children after their parents.
    pub(crate) tables: Vec<(String, PathBuf)>,
    /// Each table's shape, in the same order.
    pub(crate) shapes: Vec<TableShape>,
    /// Columns renamed, tables named apart.
    pub(crate) notes: Vec<String>,
    /// Records skipped (as the error limit allows), in input order.
    pub(crate) rejected: Vec<BadRecord>,
    /// Rows spooled, all tables together.
    pub(crate) bytes: u64,
}

/// An object's members in the order their keys are first met, each value's JSON text
/// as read; a repeated key keeps its first place and takes its last value, as a
/// serde_json map does (and so the JSON reader).
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Members<'de>, A::Error> {
                let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = vec![];
                // Past a few keys, where each key is, to find a repeat in one step.
                let mut at: HashMap<Cow<'de, str>, usize> = HashMap::new();
                while let Some(Key(k)) = map.next_key()? {
                    let v: &'de RawValue = map.next_value()?;
                    if out.len() == 16 {
                        at = out
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.clone(), i))
                            .collect();
                    }
                    let had = match out.len() < 16 {
                        true => out.iter().position(|(had, _)| *had == k),
                        false => at.get(&k).copied(),
                    };
                    match had {
                        Some(i) => out[i].1 = v,
                        None if out.len() < 16 => out.push((k, v)),
                        None => {
                            at.insert(k.clone(), out.len());
                            out.push((k, v));
                        }
                    }
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(Object)
    }
}

/// A key, borrowed from the text where it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Text)
    }
}

/// One table's spool while the records are split.
struct Spool {
    table: String,
    parent: Option<usize>,
    /// Child tables by the member's path (keys joined by [`PART`]).
    children: HashMap<String, usize>,
    /// Column names by the member's path (keys joined by [`PART`]).
    columns: HashMap<String, String>,
    names: Names,
    next_id: i64,
    rows: u64,
    path: PathBuf,
    out: BufWriter<File>,
}

/// The records' splitter (see the module's docs).
struct Splitter {
    spools: Vec<Spool>,
    tables: Names,
    rule: Nested,
    flatten: Option<String>,
    dir: PathBuf,
    notes: Vec<String>,
    /// The rows of the record being split, with their tables.
    pending: Vec<(usize, Vec<u8>)>,
    /// A spool that could not be made, which stops the load.
    failed: Option<Error>,
}

impl Splitter {
    fn new(top: &str, rule: Nested, flatten: Option<String>, dir: &Path) -> Result<Splitter> {
        let mut tables = Names::new();
        tables.claim(top);
        let mut s = Splitter {
            spools: vec![],
            tables,
            rule,
            flatten,
            dir: dir.to_path_buf(),
            notes: vec![],
            pending: vec![],
            failed: None,
        };
        s.add(top.to_string(), None)?;
        Ok(s)
    }

    fn add(&mut self, table: String, parent: Option<usize>) -> Result<usize> {
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
            children: HashMap::new(),
            columns: HashMap::new(),
            names,
            next_id: 1,
            rows: 0,
            path,
            out: BufWriter::with_capacity(1 << 20, file),
        });
        Ok(i)
    }

    /// Whether the array of `elements` becomes rows of a child table.
    fn takes(&self, elements: &[&RawValue]) -> bool {
        match self.rule {
            Nested::Json => false,
            Nested::Tables => true,
            Nested::ObjectTables => elements
                .iter()
                .any(|e| matches!(e.get().as_bytes().first(), Some(b'{' | b'['))),
        }
    }

    /// Splits the record of JSON `text` and spools its rows; `Ok(Err(()))` when the
    /// text is not an object the splitter takes (the stream's reader says why), and
    /// `Ok(Err(Some(why)))` when it is one with a key no name can hold. Nothing of a
    /// record that is not taken is spooled.
    fn record(&mut self, text: &[u8]) -> Result<std::result::Result<(), Option<String>>> {
        let Ok(members) = serde_json::from_slice::<Members<'_>>(text) else {
            return Ok(Err(None));
        };
        let before: Vec<i64> = self.spools.iter().map(|s| s.next_id).collect();
        self.pending.clear();
        if let Err(why) = self.row(0, members, None) {
            if let Some(e) = self.failed.take() {
                return Err(e);
            }
            for (s, id) in self.spools.iter_mut().zip(before) {
                s.next_id = id;
            }
            self.pending.clear();
            return Ok(Err(Some(why)));
        }
        for (t, text) in self.pending.drain(..) {
            let s = &mut self.spools[t];
            s.rows += 1;
            s.out
                .write_all(&text)
                .map_err(|e| Error::io(Some(s.path.clone()), e))?;
        }
        Ok(Ok(()))
    }

    fn row(
        &mut self,
        t: usize,
        members: Members<'_>,
        parent: Option<(i64, usize)>,
    ) -> std::result::Result<(), String> {
        let id = self.spools[t].next_id;
        self.spools[t].next_id += 1;
        let mut text = Vec::with_capacity(256);
        let _ = write!(text, "{{\"{ID}\":{id}");
        if let Some((p, pos)) = parent {
            let _ = write!(text, ",\"{PARENT}\":{p},\"{POSITION}\":{pos}");
        }
        self.members(
            t,
            id,
            members,
            0,
            &mut (String::new(), String::new()),
            &mut text,
        )?;
        text.extend_from_slice(b"}\n");
        self.pending.push((t, text));
        Ok(())
    }

    /// The members of an object (flattened at `depth` under `path`: its keys joined by
    /// [`PART`], and by `_`) into the row `text` of row `id` of table `t`.
    fn members(
        &mut self,
        t: usize,
        id: i64,
        members: Members<'_>,
        depth: usize,
        path: &mut (String, String),
        text: &mut Vec<u8>,
    ) -> std::result::Result<(), String> {
        let bad = |e: serde_json::Error| format!("a value the reader took refuses: {e}");
        for (k, v) in members.0 {
            if k.contains('\0') {
                return Err(format!(
                    "key {k:?} has a NUL byte, which no column name can hold"
                ));
            }
            let (len, tlen) = (path.0.len(), path.1.len());
            if depth > 0 {
                path.0.push(PART);
                path.1.push('_');
            }
            path.0.push_str(&k);
            path.1.push_str(&k);
            let raw = v.get().as_bytes();
            match raw.first() {
                Some(b'[') => {
                    let elements: Vec<&RawValue> = serde_json::from_str(v.get()).map_err(bad)?;
                    if self.takes(&elements) {
                        let c = self.child(t, &path.0, &path.1)?;
                        for (i, el) in elements.into_iter().enumerate() {
                            let m = match el.get().as_bytes().first() {
                                Some(b'{') => serde_json::from_str(el.get()).map_err(bad)?,
                                _ => Members(vec![(Cow::Borrowed(VALUE), el)]),
                            };
                            self.row(c, m, Some((id, i)))?;
                        }
                    } else {
                        self.value(t, &path.0, raw, text);
                    }
                }
                // (An empty object gives no member, as flattening says.)
                Some(b'{') if self.flatten.is_some() => {
                    let m = serde_json::from_str(v.get()).map_err(bad)?;
                    self.members(t, id, m, depth + 1, path, text)?
                }
                _ => self.value(t, &path.0, raw, text),
            }
            path.0.truncate(len);
            path.1.truncate(tlen);
        }
        Ok(())
    }

    /// The member at `key` of table `t`, of JSON text `raw`, into the row `text`: as
    /// read, without the blanks between its tokens (the spool's reader takes it as the
    /// input's reader would, and the row stays on its line).
    fn value(&mut self, t: usize, key: &str, raw: &[u8], text: &mut Vec<u8>) {
        let column = self.column(t, key);
        text.push(b',');
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *text, column);
        text.push(b':');
        match raw.first() {
            Some(b'[' | b'{') => compact(raw, text),
            _ => text.extend_from_slice(raw),
        }
    }

    /// The column of table `t` that the member at `key` fills.
    fn column(&mut self, t: usize, key: &str) -> &str {
        let s = &mut self.spools[t];
        if !s.columns.contains_key(key) {
            // A blank key names the column by its place, as the JSON reader names one.
            let reserved = if s.parent.is_some() { 3 } else { 1 };
            let sep = self.flatten.as_deref().unwrap_or("_");
            let joined = key.replace(PART, sep);
            let wanted = match joined.trim().is_empty() {
                true => format!("c{}", reserved + s.columns.len() + 1),
                false => joined,
            };
            let got = s.names.allocate_column(&wanted);
            if got != key {
                let why = if got == wanted {
                    ""
                } else {
                    ": the name is taken"
                };
                let shown = key.replace(PART, " > ");
                self.notes.push(format!(
                    "table {}: the member at {shown:?} is stored in column {}{why}",
                    quote_ident(&s.table),
                    quote_ident(&got)
                ));
            }
            s.columns.insert(key.to_string(), got);
        }
        &s.columns[key]
    }

    /// The child table of table `t` for the arrays at `key` (`table_key` joined by `_`).
    fn child(
        &mut self,
        t: usize,
        key: &str,
        table_key: &str,
    ) -> std::result::Result<usize, String> {
        if let Some(&c) = self.spools[t].children.get(key) {
            return Ok(c);
        }
        let wanted = format!("{}_{table_key}", self.spools[t].table);
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
        let c = match self.add(got, Some(t)) {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                self.failed = Some(e);
                return Err(why);
            }
        };
        self.spools[t].children.insert(key.to_string(), c);
        Ok(c)
    }
}

/// Appends the JSON text `raw` to `out` without the blanks between its tokens (a
/// string's bytes are kept: in valid JSON a line break in one is escaped).
fn compact(raw: &[u8], out: &mut Vec<u8>) {
    let (mut in_string, mut escaped) = (false, false);
    for &b in raw {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        out.push(b);
    }
}

/// Reads `input` (JSON or NDJSON, with `read`) whole into spools, one a table, the
/// records' table named `table`, in a temporary folder beside `dest`'s file (else the
/// system's). Bad records are refused, or kept for the load's rejects as `opts` allow.
pub(crate) fn spool(
    dest: Dest<'_>,
    input: &Input,
    read: &ReadOptions,
    table: &str,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Spooled> {
    let name: Arc<str> = input.display_name().into();
    if !matches!(read.format, Format::Json | Format::Ndjson) {
        return Err(Error::usage(format!(
            "{name}: related tables are made from JSON and NDJSON input"
        )));
    }
    let dir = match dest {
        Dest::File(db) => {
            let parent = db
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            tempfile::Builder::new()
                .prefix(".liteload-nested-")
                .tempdir_in(parent)
        }
        _ => tempfile::Builder::new()
            .prefix("liteload-nested-")
            .tempdir(),
    }
    .map_err(|e| Error::io(None, e))?;
    let mut stream = crate::source::open_objects(input, read, progress)?;
    let mut split = Splitter::new(table, opts.nested, read.flatten.clone(), dir.path())?;
    let tolerate = opts.max_errors.is_some() || opts.rejects.is_some();
    let mut rejected = vec![];
    let mut records = 0u64;
    let pos = |line, column, record, byte| Position {
        path: name.clone(),
        line,
        column,
        record,
        byte,
    };
    let fatal = |f: crate::source::json::Fatal, records: u64| {
        // (No record number for an error in the document around the records.)
        let record = if f.outside { 0 } else { records + 1 };
        Error::input(pos(f.line, f.column, record, 0), None, f.message).with_hint(f.hint)
    };
    loop {
        progress.check()?;
        let record = match stream.next_text_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(f) => return Err(fatal(f, records)),
        };
        records += 1;
        let bad = match record {
            TextRecord::Bad(b) => Some(BadRecord {
                error: Error::input(pos(b.line, b.column, records, b.byte), None, b.message)
                    .with_hint(b.hint),
                fields: b.raw,
            }),
            record => {
                let (line, column, byte) = record.at();
                match split.record(record.text())? {
                    Ok(()) => None,
                    Err(Some(why)) => Some(BadRecord {
                        error: Error::input(pos(line, column, records, byte), None, why),
                        fields: match opts.rejects {
                            Some(_) => serde_json::from_slice(record.text()).unwrap_or(Value::Null),
                            None => Value::Null,
                        },
                    }),
                    // Not an object: the stream's own reader says why, or stops.
                    Err(None) => match record.item().map_err(|f| fatal(f, records - 1))? {
                        Item::Bad(b) => Some(BadRecord {
                            error: Error::input(
                                pos(b.line, b.column, records, b.byte),
                                None,
                                b.message,
                            )
                            .with_hint(b.hint),
                            fields: b.raw,
                        }),
                        Item::Obj(o) => Some(BadRecord {
                            error: Error::input(
                                pos(o.line, o.column, records, o.byte),
                                None,
                                "an object the splitter could not take apart",
                            ),
                            fields: Value::Object(o.map),
                        }),
                    },
                }
            }
        };
        if let Some(bad) = bad {
            if !tolerate {
                return Err(bad.error);
            }
            if opts.max_errors.is_some_and(|m| rejected.len() as u64 >= m) {
                return Err(Error::too_many(opts.max_errors.unwrap_or(0), bad.error));
            }
            rejected.push(bad);
        }
    }
    if let ObjectStream::Array(a) = &stream {
        if let Some(w) = a.wrapping().filter(|w| w.chosen) {
            split.notes.push(format!(
                "{name}: the records are the objects of the array at {} (the one member of \
                 the top-level object holding objects)",
                crate::source::json::record_path::shown(&w.steps)
            ));
        }
    }
    let mut bytes = 0;
    let mut tables: Vec<(String, PathBuf)> = vec![];
    let mut shapes = vec![];
    // Kept: the top table, and every child with a row (a table first met in a bad
    // record may have none); a kept child's parent has rows, as it made them.
    let kept: Vec<bool> = split
        .spools
        .iter()
        .enumerate()
        .map(|(i, s)| i == 0 || s.rows > 0)
        .collect();
    for (i, s) in split.spools.into_iter().enumerate() {
        let file = s
            .out
            .into_inner()
            .map_err(|e| Error::io(Some(s.path.clone()), e.into_error()))?;
        bytes += file
            .metadata()
            .map_err(|e| Error::io(Some(s.path.clone()), e))?
            .len();
        drop(file);
        if !kept[i] {
            continue;
        }
        // (A kept child's parent is kept: it has the rows that made the child's.)
        let parent = s
            .parent
            .map(|p| tables[kept[..p].iter().filter(|&&k| k).count()].0.clone());
        let mut shape = TableShape {
            table: s.table.clone(),
            rowid: Some(ID.to_string()),
            ..TableShape::default()
        };
        match parent {
            Some(parent) => {
                shape.indexes = vec![IndexSpec {
                    columns: vec![PARENT.to_string()],
                    unique: false,
                    name: None,
                }];
                shape.foreign_key = Some(ForeignKey {
                    column: PARENT.to_string(),
                    table: parent,
                    key: ID.to_string(),
                });
            }
            None => shape.indexes = opts.indexes.clone(),
        }
        tables.push((s.table, s.path));
        shapes.push(shape);
    }
    Ok(Spooled {
        dir,
        tables,
        shapes,
        notes: split.notes,
        rejected,
        bytes,
    })
}

/// The loads of `spooled`'s tables, in its order: each its spool, read as NDJSON.
pub(crate) fn loads<'i>(spooled: &Spooled, read: &ReadOptions, input: &Input) -> Vec<Load<'i>> {
    spooled
        .tables
        .iter()
        .enumerate()
        .map(|(i, (table, path))| Load {
            inputs: Cow::Owned(vec![Input::Path(path.clone())]),
            name: if i == 0 {
                input.display_name()
            } else {
                format!("{}[{table}]", input.display_name())
            },
            read: ReadOptions {
                format: Format::Ndjson,
                record: None,
                flatten: None,
                encoding: crate::source::input::Encoding::Utf8,
                ..read.clone()
            },
            table: table.clone(),
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
            listed: (i == 0).then(|| input.clone()),
        })
        .collect()
}

/// Refuses a load of related tables into the existing file `db` where one of its tables
/// is there and `if_exists` does not replace it (the keys start from 1).
pub(crate) fn refuse_existing(
    db: &Path,
    tables: &[(String, PathBuf)],
    if_exists: IfExists,
) -> Result<()> {
    if !db.exists() || if_exists == IfExists::Replace {
        return Ok(());
    }
    let conn = super::read_only(db)?;
    for (t, _) in tables {
        if let Some((actual, _)) = crate::table::existing_columns(&conn, t)? {
            return Err(Error::schema(format!(
                "table {} exists already: related tables are made by the load (their keys \
                 count from 1), or replaced",
                quote_ident(&actual)
            ))
            .with_hint(crate::error::Hint::OtherTable));
        }
    }
    Ok(())
}
