//! Related tables from nested JSON ([`Nested`](crate::options::Nested)), and from XML
//! read as JSON objects (`source::xml::related_records`; the spools' strings are then
//! typed as CSV fields, as XML's text is), and from typed input ([`typed`]): the
//! input's records are read once, in order, and each is split into rows: its own, and one for
//! every element of every array in it (recursively), each row written to its table's
//! spool (its values typed as they are read, [`values`], and its rows encoded as SQLite
//! records once its first rows have typed its columns, [`typing`]; in a temporary folder
//! beside the target; read back by [`read`] without parsing them again). Each spool is then a load of
//! the plan, with its table's shape: the key `_id` (for the records' table, a member of
//! each record where the options name one), and for a child `_parent`, declared as a
//! FOREIGN KEY to its parent's key and indexed. The spools are written whole
//! before the first table is sampled, so every table's columns and types come from its
//! own rows.
//!
//! Three kinds of thread: one reads the records' texts in chunks ([`read_chunks`]);
//! workers take each chunk's records apart ([`parse`]); and the calling thread writes
//! the chunks' rows in input order ([`spools`]), so the rows, their keys and every name
//! are the same whatever thread took a record apart. A record is taken
//! apart whole before any of its rows is written: a bad one (not an object, or a key
//! with a NUL byte where a name would hold it) is skipped whole, with its place in the
//! input, as the load's error limit allows.

mod parse;
mod read;
mod spool_file;
mod spools;
#[cfg(feature = "arrow")]
mod typed;
mod typing;
mod values;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::{Dest, Load, TableShape};
use crate::error::{Error, Position, Result};
use crate::options::ImportOptions;
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::source::convert::Mismatches;
use crate::source::json::{Fatal, Item, ObjectStream, TextRecord};
use crate::source::xml::split::Splitter;
use crate::source::{BadRecord, Format, Input, ReadOptions, Source};
use crate::table::{ForeignKey, IfExists, IndexSpec};
use crate::types::ColumnType;
use parse::{Rules, Split};
use spools::Spools;

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
    /// The spools (one file a table, top table first), removed when dropped.
    pub(crate) dir: tempfile::TempDir,
    /// Each table's name and spool, top table first, children after their parents.
    pub(crate) tables: Vec<(String, PathBuf)>,
    /// Each table's columns by their numbers in its spool, in the same order (none for
    /// Arrow spools, whose schema has them).
    columns: Vec<Vec<String>>,
    /// Each table's types and mismatches where its spool holds records, in the same order.
    typed: Vec<Option<(Vec<ColumnType>, Mismatches)>>,
    /// Each table's shape, in the same order.
    pub(crate) shapes: Vec<TableShape>,
    /// Columns renamed, tables named apart.
    pub(crate) notes: Vec<String>,
    /// Records skipped (as the error limit allows), in input order.
    pub(crate) rejected: Vec<BadRecord>,
    /// Rows spooled, all tables together.
    pub(crate) bytes: u64,
    /// The records' key column and its type (INTEGER, or TEXT where a key was a
    /// string), which its children's `_parent` has too; `None`: keyed by `_id`.
    pub(crate) key: Option<(String, ColumnType)>,
    /// The spools' format: rows of values ([`spools`]; `Format::Ndjson` here), or Arrow
    /// IPC files for typed input.
    format: Format,
    /// Whether the spools' strings are typed as CSV fields are (XML's text values).
    text_fields: bool,
}

impl Spooled {
    /// The key's column and type where the loads must be told it; `None` for Arrow
    /// spools too, whose schema types the key (and `_parent`) already.
    pub(crate) fn key_to_type(&self) -> Option<&(String, ColumnType)> {
        self.key.as_ref().filter(|_| self.format != Format::Arrow)
    }
}

/// Records' texts handed to the workers together.
struct Chunk {
    seq: usize,
    /// The number of its first record (from 1).
    first: u64,
    text: Vec<u8>,
    records: Vec<Read>,
    /// What stopped the input after these records (a syntax error, a failed read).
    end: Option<Error>,
    /// XML records still to be made JSON objects (then `text` and `records` are
    /// empty): the worker makes them, so that every core does.
    xml: Option<crate::source::xml::RelatedChunk>,
}

/// A record as read: its text in the chunk's, and where it starts.
enum Read {
    Line {
        text: Range<usize>,
        at: (u64, u64, u64),
    },
    Element {
        text: Range<usize>,
        at: (u64, u64, u64),
    },
    /// (Boxed: a chunk holds a `Read` a record, and the good ones are small.)
    Bad(Box<crate::source::json::BadObj>),
}

/// A chunk taken apart: each record's events or why it is bad, and the error that
/// stops the load after them, if one does.
struct Done {
    seq: usize,
    split: Split,
    records: Vec<Taken>,
    /// The chunk's text.
    text: Vec<u8>,
    end: Option<Error>,
}

/// A record taken apart: its events (a range of its chunk's), with its number, where
/// it starts and its text in the chunk's (for a record the spools find bad), or a bad
/// record.
enum Taken {
    Rows {
        events: Range<usize>,
        no: u64,
        at: (u64, u64, u64),
        text: Range<usize>,
    },
    /// (Boxed: a chunk holds a `Taken` a record, and the good ones are small.)
    Bad(Box<BadRecord>),
}

/// The most bytes of rows the split holds while tables' types are undecided (see
/// [`typing::Rules::held_max`]).
const HELD_BYTES: usize = 64 << 20;

/// About this many bytes of records a chunk.
const CHUNK_BYTES: usize = 1 << 20;

/// A written chunk's buffers serve the next chunks if no larger than this (a chunk's
/// text, its split's arena): the pages of new ones cost a fault each, 0.09 of 0.29
/// system CPU-s on 300 MB of `bench/nested.py`'s orders.
const SPARE_MAX: usize = 4 * CHUNK_BYTES;

/// Reads `input` (JSON or NDJSON, with `read`) whole into spools, one a table, the
/// records' table named `table` (keyed by its member `key`, else by `_id`), in a
/// temporary folder beside `dest`'s file (else the system's). Bad records are refused,
/// or kept for the load's rejects as `opts` allow.
pub(crate) fn spool(
    dest: Dest<'_>,
    input: &Input,
    read: &ReadOptions,
    table: &str,
    key: Option<&str>,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Spooled> {
    let name: Arc<str> = input.display_name().into();
    let typed = cfg!(feature = "arrow") && read.format.is_typed();
    let xml = read.format == Format::Xml;
    if !typed && !xml && !matches!(read.format, Format::Json | Format::Ndjson) {
        return Err(Error::usage(format!(
            "{name}: related tables are made from JSON, NDJSON, XML, Parquet and Arrow input"
        )));
    }
    if xml && read.flatten.is_some() {
        return Err(Error::usage(format!(
            "{name}: related tables from XML take every element with attributes or \
             children of its own as a row of a child table: there is nothing to flatten"
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
    #[cfg(feature = "arrow")]
    if typed {
        return spool_typed(dir, input, read, table, key, opts, progress);
    }
    let mut records = match xml {
        true => {
            let (splitter, path, chosen) = crate::source::xml::open_splitter(
                input,
                read,
                progress.bytes_read.clone(),
                progress.cancel_flag(),
            )?;
            Records::Xml(Box::new(splitter), path, chosen)
        }
        false => Records::Json(crate::source::open_objects(input, read, progress)?),
    };
    let typing = typing::Rules {
        sample: read.sample_rows,
        detect: opts.detect_types,
        fields: xml,
        empty_null: read.nulls == crate::source::Nulls::All,
        given: opts.types.clone(),
        held_max: HELD_BYTES,
    };
    let mut split = Spools::new(
        table,
        read.flatten.clone(),
        dir.path(),
        Some((typing, name.to_string())),
    )?;
    split.given = opts
        .child_tables
        .iter()
        .map(|(path, name)| (path.clone(), name.clone(), false))
        .collect();
    if let Some(key) = key {
        split.keyed(key, xml);
    }
    let rules = Rules {
        rule: opts.nested,
        flatten: read.flatten.is_some(),
    };
    let tolerate = opts.max_errors.is_some() || opts.rejects.is_some();
    let mut rejected = vec![];
    let workers = read.parse_threads.max(1);
    std::thread::scope(|scope| -> Result<()> {
        let (work_tx, work_rx) = crossbeam_channel::bounded::<Chunk>(workers * 2);
        let (done_tx, done_rx) = crossbeam_channel::bounded::<Done>(workers * 2);
        // Buffers of chunks written, for the next chunks (see [`Spare`]).
        let (spare_split_tx, spare_split_rx) = crossbeam_channel::bounded::<Split>(workers * 2);
        let (spare_text_tx, spare_text_rx) = crossbeam_channel::bounded::<Vec<u8>>(workers * 2);
        for _ in 0..workers {
            let (work_rx, done_tx, name) = (work_rx.clone(), done_tx.clone(), name.clone());
            let spare = spare_split_rx.clone();
            let fields = opts.rejects.is_some();
            let max = read.max_record_bytes;
            std::thread::Builder::new()
                .name("liteload-nested".into())
                .spawn_scoped(scope, move || {
                    for chunk in work_rx {
                        let split = spare.try_recv().ok();
                        if done_tx
                            .send(take_apart(chunk, split, rules, &name, fields, max))
                            .is_err()
                        {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::io(None, e))?;
        }
        drop((work_rx, done_tx, spare_split_rx));
        let records = &mut records;
        let reading = name.clone();
        let max = read.max_record_bytes;
        std::thread::Builder::new()
            .name("liteload-records".into())
            .spawn_scoped(scope, move || match records {
                Records::Json(stream) => {
                    read_chunks(stream, &reading, progress, work_tx, spare_text_rx)
                }
                Records::Xml(splitter, _, _) => {
                    read_xml_chunks(splitter, input, max, progress, work_tx)
                }
            })
            .map_err(|e| Error::io(None, e))?;
        // Chunks come back in any order; their rows are written in input order.
        let mut waiting = BTreeMap::new();
        let mut next = 0;
        for done in done_rx {
            waiting.insert(done.seq, done);
            while let Some(done) = waiting.remove(&next) {
                next += 1;
                progress.check()?;
                let Done {
                    split: taken,
                    records,
                    text,
                    end,
                    ..
                } = done;
                let mut reject = |bad: BadRecord| -> Result<()> {
                    if !tolerate {
                        return Err(bad.error);
                    }
                    if opts.max_errors.is_some_and(|m| rejected.len() as u64 >= m) {
                        return Err(Error::too_many(opts.max_errors.unwrap_or(0), bad.error));
                    }
                    rejected.push(bad);
                    Ok(())
                };
                for record in records {
                    match record {
                        Taken::Bad(bad) => reject(*bad)?,
                        Taken::Rows {
                            events,
                            no,
                            at: (line, column, byte),
                            text: range,
                        } => {
                            let Some(why) = split.record(&taken, &taken.events[events], no)? else {
                                continue;
                            };
                            let pos = Position {
                                path: name.clone(),
                                line,
                                column,
                                record: no,
                                byte,
                            };
                            let fields = match opts.rejects.is_some() {
                                true => serde_json::from_slice(&text[range]).unwrap_or(Value::Null),
                                false => Value::Null,
                            };
                            let error = Error::input(pos, None, why);
                            reject(BadRecord { error, fields })?;
                        }
                    }
                }
                if let Some(e) = end {
                    return Err(e);
                }
                // (Dropped where the next chunks have buffers enough, or where a long
                // record made them larger than chunks need.)
                if taken.arena.capacity() <= SPARE_MAX && text.capacity() <= SPARE_MAX {
                    let _ = spare_split_tx.try_send(taken);
                    let _ = spare_text_tx.try_send(text);
                }
            }
        }
        Ok(())
    })?;
    if let Records::Xml(_, path, true) = &records {
        split.notes.push(format!(
            "{name}: records are the <{}> elements ({}: the first element that repeats \
             under the root or its one child)",
            path.last().map_or("", String::as_str),
            path.join("/")
        ));
    }
    if let Records::Json(ObjectStream::Array(a)) = &records {
        if let Some(w) = a.wrapping().filter(|w| w.chosen) {
            split.notes.push(format!(
                "{name}: the records are the objects of the array at {} (the one member of \
                 the top-level object holding objects)",
                crate::source::json::record_path::shown(&w.steps)
            ));
        }
    }
    unused_names(&split.given, &mut split.notes);
    let top_key = split.key().map(|(k, text)| {
        let ty = match text {
            true => ColumnType::Text,
            false => ColumnType::Integer,
        };
        (k.to_string(), ty)
    });
    split.finish()?;
    let mut made = vec![];
    // (`finish` wrote every spool's bytes to its file.)
    for s in split.spools {
        made.push(Made {
            table: s.table,
            parent: s.parent,
            rows: s.rows,
            path: s.path,
            named: s.named,
            typed: s
                .typing
                .filter(|t| !t.values)
                .map(|t| (t.types.unwrap_or_default(), t.mismatches)),
        });
    }
    let tables = Tables {
        made,
        notes: split.notes,
        format: Format::Ndjson,
        text_fields: xml,
    };
    assemble(dir, tables, top_key, rejected, opts)
}

/// A table spooled: its name, its parent's place, its rows and its spool.
struct Made {
    table: String,
    parent: Option<usize>,
    rows: u64,
    path: PathBuf,
    /// Its columns by their numbers in the spool (none in an Arrow spool).
    named: Vec<String>,
    /// Where the spool holds records ([`typing`]): their columns' types, and the values
    /// stored in another type.
    typed: Option<(Vec<ColumnType>, Mismatches)>,
}

/// The tables of an input, spooled, the records' first and children after parents, and
/// what was noted of their names.
struct Tables {
    made: Vec<Made>,
    notes: Vec<String>,
    format: Format,
    /// Whether the spools' strings are text values to type (XML's).
    text_fields: bool,
}

/// The spooled tables of one input as the plan takes them: each table's shape (its key,
/// its reference to its parent, indexed), keyed by `key` (else `_id`).
fn assemble(
    dir: tempfile::TempDir,
    spooled: Tables,
    key: Option<(String, ColumnType)>,
    rejected: Vec<BadRecord>,
    opts: &ImportOptions,
) -> Result<Spooled> {
    let mut bytes = 0;
    let mut tables: Vec<(String, PathBuf)> = vec![];
    let mut columns = vec![];
    let mut typed = vec![];
    let mut shapes = vec![];
    // Kept: the top table, and every child with a row (one met only through empty
    // arrays has none, and no columns to make it with); a kept child's parent is kept,
    // as it has the rows that made the child's.
    let kept: Vec<bool> = spooled
        .made
        .iter()
        .enumerate()
        .map(|(i, s)| i == 0 || s.rows > 0)
        .collect();
    let key_of = |t: usize| match (t, &key) {
        (0, Some((k, _))) => k.clone(),
        _ => ID.to_string(),
    };
    for (i, s) in spooled.made.into_iter().enumerate() {
        bytes += std::fs::metadata(&s.path)
            .map_err(|e| Error::io(Some(s.path.clone()), e))?
            .len();
        if !kept[i] {
            continue;
        }
        let parent = s.parent.map(|p| {
            (
                tables[kept[..p].iter().filter(|&&k| k).count()].0.clone(),
                key_of(p),
            )
        });
        let mut shape = TableShape {
            table: s.table.clone(),
            rowid: Some(key_of(i)),
            ..TableShape::default()
        };
        match parent {
            Some((parent, key)) => {
                shape.indexes = vec![IndexSpec {
                    columns: vec![PARENT.to_string()],
                    unique: false,
                    name: None,
                }];
                shape.constraints.foreign_keys = vec![ForeignKey {
                    columns: vec![PARENT.to_string()],
                    table: parent,
                    keys: vec![key],
                }];
            }
            None => shape.indexes = opts.indexes.clone(),
        }
        tables.push((s.table, s.path));
        columns.push(s.named);
        typed.push(s.typed);
        shapes.push(shape);
    }
    Ok(Spooled {
        dir,
        tables,
        columns,
        typed,
        shapes,
        notes: spooled.notes,
        rejected,
        bytes,
        key,
        format: spooled.format,
        text_fields: spooled.text_fields,
    })
}

/// Reads typed `input` (Parquet, Arrow) whole into spools (see [`typed`]).
#[cfg(feature = "arrow")]
fn spool_typed(
    dir: tempfile::TempDir,
    input: &Input,
    read: &ReadOptions,
    table: &str,
    key: Option<&str>,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Spooled> {
    let name: Arc<str> = input.display_name().into();
    let (schema, batches) = crate::source::arrow_source::in_order(
        input,
        read.format,
        &name,
        &progress.bytes_read,
        opts.batch_rows.max(1024),
    )?;
    let roots = crate::source::arrow_source::select(&schema, read.select.as_deref(), &name)?;
    let schema = schema
        .project(&roots)
        .map_err(|e| Error::internal(format!("a projection of {name}: {e}")))?;
    let mut given: Vec<(String, String, bool)> = opts
        .child_tables
        .iter()
        .map(|(path, name)| (path.clone(), name.clone(), false))
        .collect();
    let mut split = typed::Split::new(
        table,
        &schema,
        opts.nested,
        read.flatten.clone(),
        &mut given,
        dir.path(),
        key.map(|k| (k, name.clone())),
    )?;
    for batch in batches {
        progress.check()?;
        let batch = batch?
            .project(&roots)
            .map_err(|e| Error::internal(format!("a projection of {name}: {e}")))?;
        split.batch(&batch)?;
    }
    split.finish()?;
    let key = split.key.as_ref().map(|k| {
        let ty = match k.text {
            true => ColumnType::Text,
            false => ColumnType::Integer,
        };
        (k.name.clone(), ty)
    });
    let mut notes = split.notes;
    unused_names(&given, &mut notes);
    let made = split
        .tables
        .into_iter()
        .map(|t| Made {
            table: t.name,
            parent: t.parent,
            rows: t.rows,
            path: t.path,
            named: vec![],
            typed: None,
        })
        .collect();
    let tables = Tables {
        made,
        notes,
        format: Format::Arrow,
        text_fields: false,
    };
    assemble(dir, tables, key, vec![], opts)
}

/// Notes each name given for a child table whose path no array had.
fn unused_names(given: &[(String, String, bool)], notes: &mut Vec<String>) {
    for (path, name, _) in given.iter().filter(|(_, _, met)| !met) {
        notes.push(format!(
            "{name:?}, the name given to the child table at {path:?}, is unused: no array \
             was met there"
        ));
    }
}

/// The loads of `spooled`'s tables, in its order: each its spool, read back as rows of
/// values (the source given beside it, [`read`]) or as an Arrow IPC file (opened by the
/// load); bytes read are added to `bytes_read`.
#[allow(clippy::type_complexity)]
pub(crate) fn loads<'i>(
    spooled: &Spooled,
    read: &ReadOptions,
    input: &Input,
    bytes_read: &Arc<std::sync::atomic::AtomicU64>,
) -> Result<(Vec<Load<'i>>, Vec<Option<Box<dyn Source>>>)> {
    let (mut loads, mut sources) = (vec![], vec![]);
    for (i, (table, path)) in spooled.tables.iter().enumerate() {
        let name = if i == 0 {
            input.display_name()
        } else {
            format!("{}[{table}]", input.display_name())
        };
        let read = ReadOptions {
            format: spooled.format,
            record: None,
            flatten: None,
            select: None,
            text_fields: spooled.text_fields,
            encoding: crate::source::input::Encoding::Utf8,
            ..read.clone()
        };
        sources.push(match spooled.format {
            Format::Arrow => None,
            _ => {
                let named = spooled.columns[i].clone();
                let rows = read::SpoolRows::open(path.clone(), named.clone(), bytes_read.clone())?;
                Some(match &spooled.typed[i] {
                    Some((types, mismatches)) => {
                        let columns = named[..types.len()].to_vec();
                        let src = read::RecordSource::new(
                            rows.of_records(),
                            columns,
                            types.clone(),
                            mismatches.clone(),
                        );
                        Box::new(src) as Box<dyn Source>
                    }
                    None => Box::new(read::SpoolSource::new(
                        rows,
                        name.as_str().into(),
                        read.clone(),
                    )),
                })
            }
        });
        loads.push(Load {
            inputs: Cow::Owned(vec![Input::Path(path.clone())]),
            name,
            read,
            table: table.clone(),
            columns: vec![],
            types: vec![],
            source: None,
            sampled: false,
            listed: (i == 0).then(|| input.clone()),
        });
    }
    Ok((loads, sources))
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

/// Where the records come from: a JSON reader, or an XML document's splitter with its
/// record path and whether the path was chosen.
enum Records {
    Json(ObjectStream),
    Xml(Box<Splitter>, Vec<String>, bool),
}

/// Reads an XML document's records as JSON objects into chunks for the workers, in
/// order, until the document ends, stops, or nobody takes them.
fn read_xml_chunks(
    splitter: &mut Splitter,
    input: &Input,
    max: usize,
    progress: &Progress,
    work: crossbeam_channel::Sender<Chunk>,
) {
    let mut first = 1;
    for seq in 0.. {
        let read = progress
            .check()
            .and_then(|()| crate::source::xml::next_related(splitter, input, max));
        let mut chunk = Chunk {
            seq,
            first,
            text: vec![],
            records: vec![],
            end: None,
            xml: None,
        };
        let at_end = match read {
            Ok(None) => return,
            Ok(Some(raw)) => {
                first += raw.len() as u64;
                chunk.xml = Some(raw);
                false
            }
            Err(e) => {
                chunk.end = Some(e);
                true
            }
        };
        if work.send(chunk).is_err() || at_end {
            return;
        }
    }
}

/// Reads the records' texts into chunks for the workers, in order, until the input
/// ends, stops, or nobody takes them.
fn read_chunks(
    stream: &mut ObjectStream,
    name: &Arc<str>,
    progress: &Progress,
    work: crossbeam_channel::Sender<Chunk>,
    spare: crossbeam_channel::Receiver<Vec<u8>>,
) {
    // A chunk's text: a written chunk's, else new, with room for its last record to
    // run past the chunk's size without a copy.
    let text = || match spare.try_recv() {
        Ok(mut text) => {
            text.clear();
            text
        }
        Err(_) => Vec::with_capacity(CHUNK_BYTES * 2),
    };
    let mut records = 0u64;
    let mut chunk = Chunk {
        seq: 0,
        first: 1,
        text: text(),
        records: vec![],
        end: None,
        xml: None,
    };
    loop {
        let read = progress.check().and_then(|()| {
            stream
                .next_text_record()
                .map_err(|f| fatal(name, f, records))
        });
        let at_end = match read {
            Ok(None) => true,
            Err(e) => {
                chunk.end = Some(e);
                true
            }
            Ok(Some(record)) => {
                records += 1;
                let at = record.at();
                let start = chunk.text.len();
                chunk.text.extend_from_slice(record.text());
                let text = start..chunk.text.len();
                chunk.records.push(match record {
                    TextRecord::Line(_) => Read::Line { text, at },
                    TextRecord::Element(_) => Read::Element { text, at },
                    TextRecord::Bad(b) => Read::Bad(Box::new(b)),
                });
                false
            }
        };
        if at_end || chunk.text.len() >= CHUNK_BYTES {
            let seq = chunk.seq;
            let full = std::mem::replace(
                &mut chunk,
                Chunk {
                    seq: seq + 1,
                    first: records + 1,
                    text: text(),
                    records: vec![],
                    end: None,
                    xml: None,
                },
            );
            if work.send(full).is_err() || at_end {
                return;
            }
        }
    }
}

/// A chunk's records taken apart (see [`parse::record`]); a record that is not an
/// object is read by the stream's own reader for its message (a fatal one ends the
/// chunk). With `fields`, a bad record keeps its value for the rejects file.
/// XML records are first made JSON objects (a record that is not well-formed ends the
/// chunk; `max` bounds a record).
fn take_apart(
    mut chunk: Chunk,
    spare: Option<Split>,
    rules: Rules,
    name: &Arc<str>,
    fields: bool,
    max: usize,
) -> Done {
    if let Some(raw) = chunk.xml.take() {
        let (text, records, end) = crate::source::xml::related_records(raw, name, max);
        chunk.text = text;
        chunk.records = records
            .into_iter()
            .map(|(text, at)| Read::Line { text, at })
            .collect();
        chunk.end = end.or(chunk.end);
    }
    let mut split = match spare {
        Some(split) => split.reused(chunk.text.len(), chunk.records.len()),
        None => Split::sized(chunk.text.len(), chunk.records.len()),
    };
    let mut records = Vec::with_capacity(chunk.records.len());
    let mut end = chunk.end;
    let bad = |records: &mut Vec<Taken>, error: Error, fields: Value| {
        records.push(Taken::Bad(Box::new(BadRecord { error, fields })));
    };
    for (i, read) in chunk.records.into_iter().enumerate() {
        let no = chunk.first + i as u64;
        let pos = |(line, column, byte): (u64, u64, u64)| Position {
            path: name.clone(),
            line,
            column,
            record: no,
            byte,
        };
        let (range, at, line) = match &read {
            Read::Bad(b) => {
                let e = Error::input(pos((b.line, b.column, b.byte)), None, b.message.clone());
                bad(&mut records, e.with_hint(b.hint), b.raw.clone());
                continue;
            }
            Read::Line { text, at } => (text.clone(), *at, true),
            Read::Element { text, at } => (text.clone(), *at, false),
        };
        let text = &chunk.text[range.clone()];
        let start = split.events.len();
        match parse::record(text, rules, &mut split) {
            Ok(()) => records.push(Taken::Rows {
                events: start..split.events.len(),
                no,
                at,
                text: range.clone(),
            }),
            Err(Some(why)) => {
                let value = match fields {
                    true => serde_json::from_slice(text).unwrap_or(Value::Null),
                    false => Value::Null,
                };
                bad(&mut records, Error::input(pos(at), None, why), value);
            }
            // Not an object: the stream's own reader says why, or stops.
            Err(None) => {
                let record = match line {
                    true => TextRecord::line(text, at),
                    false => TextRecord::element(text.to_vec(), at),
                };
                match record.item() {
                    Ok(Item::Bad(b)) => {
                        let e = Error::input(pos((b.line, b.column, b.byte)), None, b.message);
                        bad(&mut records, e.with_hint(b.hint), b.raw);
                    }
                    Ok(Item::Obj(o)) => {
                        let why = "an object the splitter could not take apart";
                        let e = Error::input(pos((o.line, o.column, o.byte)), None, why);
                        bad(&mut records, e, Value::Object(o.map));
                    }
                    Err(f) => {
                        // The input stops here: what the chunk read after it is not read.
                        end = Some(fatal(name, f, no - 1));
                        break;
                    }
                }
            }
        }
    }
    Done {
        seq: chunk.seq,
        split,
        records,
        text: chunk.text,
        end,
    }
}

/// The error of `f`, the input's stop after `records` records.
fn fatal(name: &Arc<str>, f: Fatal, records: u64) -> Error {
    // (No record number for an error in the document around the records.)
    let record = if f.outside { 0 } else { records + 1 };
    let pos = Position {
        path: name.clone(),
        line: f.line,
        column: f.column,
        record,
        byte: 0,
    };
    Error::input(pos, None, f.message).with_hint(f.hint)
}
