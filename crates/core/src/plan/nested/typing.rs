//! A table's rows typed and encoded as SQLite records while the split writes them (on
//! the spools' thread), so that its load only copies records into pages: the first
//! rows (as many as a load samples) are held until they type the table's columns as the
//! JSON reader's sample would, then every row is stored by the same conversions a load
//! makes ([`push_scalar`], [`push_text_field`] for XML's text), its `_id` (the rowid, the
//! row's number) as NULL, as SQLite stores an INTEGER PRIMARY KEY. A column first met
//! later is typed by its first value, as the JSON reader types a column it adds; rows
//! written before it have shorter records, which read as NULL there.
//!
//! Spool layout: each record's length (a `u32`, little-endian), then the record.
//!
//! Hand-written because it measured faster than spooling typed values for the load to
//! convert: 1.408 s against 1.377 s for 300 MB of `bench/nested.py`'s orders, medians
//! of 5 interleaved (bench/README.md, "Values typed once, records spooled").

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use liteload_btree::RecordBuilder;

use super::values::{self, Got, Owned, END};
use crate::error::{Error, Result};
use crate::source::convert::{push_scalar, push_text_field, Mismatches, Scalar};
use crate::types::{classify, ColumnType, Lexeme, TypeGuess};

/// How a load types and stores values, as its options say.
#[derive(Clone)]
pub(super) struct Rules {
    /// Rows that type the columns.
    pub(super) sample: usize,
    /// Whether types are inferred (else every column is TEXT).
    pub(super) detect: bool,
    /// Whether strings are typed as delimited fields are (XML's text).
    pub(super) fields: bool,
    /// Whether an empty string is NULL in every column.
    pub(super) empty_null: bool,
    /// Types given for columns by name (the records' table's).
    pub(super) given: Vec<(String, ColumnType)>,
}

/// Where a table's records go: its spool's file, and its path for messages.
pub(super) struct Spool<'s> {
    pub(super) out: &'s mut dyn Write,
    pub(super) path: &'s Path,
}

/// One table's typing.
pub(super) struct Typing {
    rules: Rules,
    /// The load's name for the table, for messages.
    name: Arc<str>,
    /// Rows held until the types are decided.
    held: Vec<Vec<u8>>,
    /// Each column's type, once decided.
    pub(super) types: Option<Vec<ColumnType>>,
    pub(super) mismatches: Mismatches,
    /// Rows stored.
    rows: u64,
    record: RecordBuilder,
    out: Vec<u8>,
    scratch: String,
    /// Where each column's value is in the row being stored (0: none).
    at: Vec<usize>,
}

/// Each value of the row `row` (a spool's row: see [`super::spools`]) and its column.
fn each<'r>(row: &'r [u8], mut f: impl FnMut(usize, Got<'r>)) -> Result<()> {
    let bad = || Error::internal("a row the split wrote cannot be read");
    let mut rest = row;
    loop {
        let (c, after) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
        let c = u32::from_le_bytes(*c);
        if c == END {
            return Ok(());
        }
        let (v, n) = values::get(after).ok_or_else(bad)?;
        rest = &after[n..];
        f(c as usize, v);
    }
}

/// What `v` says about its column's type; with `fields`, a string as a delimited
/// field's text does.
pub(super) fn lexeme(v: &Got<'_>, fields: bool) -> Lexeme {
    match v {
        Got::String(s) if fields => classify(s.as_bytes()),
        v => scalar(v).lexeme(),
    }
}

/// A value as the conversions take it (a raw member read first: [`values::read_value`]).
pub(super) fn scalar<'a>(v: &Got<'a>) -> Scalar<'a> {
    match *v {
        Got::Null | Got::Raw(_) => Scalar::Null,
        Got::Bool(b) => Scalar::Bool(b),
        Got::Integer(i) => Scalar::Integer(i),
        Got::Real(r) => Scalar::Real(r),
        Got::String(s) | Got::Json(s) => Scalar::Text(s),
    }
}

/// A value as JSON, for a message.
pub(super) fn json(v: &Got<'_>) -> String {
    match *v {
        Got::String(s) => serde_json::json!(s).to_string(),
        Got::Json(s) | Got::Raw(s) => s.to_string(),
        Got::Null => "null".into(),
        Got::Bool(b) => b.to_string(),
        Got::Integer(i) => i.to_string(),
        Got::Real(r) => serde_json::json!(r).to_string(),
    }
}

impl Typing {
    /// The typing of the table its load names `name`.
    pub(super) fn new(rules: Rules, name: Arc<str>) -> Typing {
        Typing {
            rules,
            name,
            held: vec![],
            types: None,
            mismatches: Mismatches::default(),
            rows: 0,
            record: RecordBuilder::new(),
            out: vec![],
            scratch: String::new(),
            at: vec![],
        }
    }

    /// The type of a column named `name` first met with value `v`.
    fn type_of(&self, name: &str, v: Option<&Got<'_>>) -> ColumnType {
        if let Some((_, ty)) = self
            .rules
            .given
            .iter()
            .find(|(c, _)| c.eq_ignore_ascii_case(name))
        {
            return *ty;
        }
        if !self.rules.detect {
            return ColumnType::Text;
        }
        let mut guess = TypeGuess::default();
        if let Some(v) = v {
            guess.add(self.lexeme_of(v));
        }
        guess.resolve()
    }

    /// What `v` says of its column's type, a raw member read first.
    fn lexeme_of(&self, v: &Got<'_>) -> Lexeme {
        match v {
            Got::Raw(raw) => values::read_value(raw)
                .map_or(Lexeme::Empty, |o| lexeme(&o.got(), self.rules.fields)),
            v => lexeme(v, self.rules.fields),
        }
    }

    /// Takes the row `row` of a table whose columns are `named` (by number), and writes
    /// its record to `spool` once the types are decided.
    pub(super) fn take(
        &mut self,
        row: &[u8],
        named: &[String],
        spool: &mut Spool<'_>,
    ) -> Result<()> {
        if self.types.is_some() {
            return self.store(row, named, spool);
        }
        self.held.push(row.to_vec());
        if self.held.len() >= self.rules.sample.max(1) {
            self.decide(named, spool)?;
        }
        Ok(())
    }

    /// Decides the types (if not yet) and writes the rows held.
    pub(super) fn finish(&mut self, named: &[String], spool: &mut Spool<'_>) -> Result<()> {
        if self.types.is_none() {
            self.decide(named, spool)?;
        }
        Ok(())
    }

    /// Types the columns met so far by the rows held, as a load's sample does, and
    /// writes those rows.
    fn decide(&mut self, named: &[String], spool: &mut Spool<'_>) -> Result<()> {
        let mut met = 0;
        let mut guesses: Vec<TypeGuess> = vec![TypeGuess::default(); named.len()];
        for row in &self.held {
            each(row, |c, v| {
                if let Some(g) = guesses.get_mut(c) {
                    g.add(self.lexeme_of(&v));
                    met = met.max(c + 1);
                }
            })?;
        }
        // The columns are numbered as first met: those of the held rows come first.
        let types = (0..met)
            .map(|c| {
                match self
                    .rules
                    .given
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(&named[c]))
                {
                    Some((_, ty)) => *ty,
                    None if !self.rules.detect => ColumnType::Text,
                    None => guesses[c].resolve(),
                }
            })
            .collect();
        self.types = Some(types);
        for row in std::mem::take(&mut self.held) {
            self.store(&row, named, spool)?;
        }
        Ok(())
    }

    /// Writes the record of `row`.
    fn store(&mut self, row: &[u8], named: &[String], spool: &mut Spool<'_>) -> Result<()> {
        // Where each column's value is in the row (0: none), found without reading it.
        let at = &mut self.at;
        at.clear();
        at.resize(self.types.as_ref().map_or(0, Vec::len), 0);
        let bad = || Error::internal("a row the split wrote cannot be read");
        let mut i = 0;
        loop {
            let c = row.get(i..i + 4).ok_or_else(bad)?;
            let c = u32::from_le_bytes(c.try_into().map_err(|_| bad())?);
            i += 4;
            if c == END {
                break;
            }
            let c = c as usize;
            if c >= at.len() {
                at.resize(c + 1, 0);
            }
            at[c] = i;
            i += values::len(&row[i..]).ok_or_else(bad)?;
        }
        // Columns first met in this row: typed by its value here.
        let known = self.types.as_ref().map_or(0, Vec::len);
        let added: Vec<ColumnType> = named[known..self.at.len()]
            .iter()
            .zip(&self.at[known..])
            .map(|(name, &i)| {
                let v = match i {
                    0 => None,
                    i => values::get(&row[i..]).map(|(v, _)| v),
                };
                self.type_of(name, v.as_ref())
            })
            .collect();
        self.types.get_or_insert_with(Vec::new).extend(added);
        self.rows += 1;
        let no = self.rows;
        let types = self.types.as_deref().unwrap_or_default();
        self.record.clear();
        for (c, &ty) in types.iter().enumerate() {
            let i = self.at.get(c).copied().unwrap_or(0);
            // The rowid (its value is the row's number), or no value.
            if c == 0 || i == 0 {
                self.record.null();
                continue;
            }
            // A string (typed as text, not as a field) or JSON text into a TEXT column is
            // stored as it is: no conversion looks at it, and its bytes are a `str`'s,
            // put in the arena by the workers.
            let as_is = match row[i] {
                values::STRING => !self.rules.fields,
                values::JSON => true,
                _ => false,
            };
            if ty == ColumnType::Text && as_is {
                let text = values::payload(&row[i..]).ok_or_else(bad)?;
                match text.is_empty() && self.rules.empty_null {
                    true => self.record.null(),
                    false => self.record.text(text),
                }
                continue;
            }
            let (v, _) = values::get(&row[i..]).ok_or_else(bad)?;
            let read;
            let v = match v {
                Got::Raw(raw) => {
                    read = values::read_value(raw).unwrap_or(Owned::Null);
                    read.got()
                }
                v => v,
            };
            let mismatch = match v {
                Got::String(s) if self.rules.fields => {
                    push_text_field(&mut self.record, s, ty, self.rules.empty_null)
                }
                v => push_scalar(
                    &mut self.record,
                    scalar(&v),
                    ty,
                    self.rules.empty_null,
                    &mut self.scratch,
                ),
            };
            if mismatch {
                let (name, column) = (&self.name, &named[c]);
                self.mismatches
                    .note(|| format!("{name}:{no}:1: {} in {ty} column {column:?}", json(&v)));
            }
        }
        self.out.clear();
        self.out
            .extend_from_slice(&(self.record.len() as u32).to_le_bytes());
        self.record.encode(&mut self.out);
        spool
            .out
            .write_all(&self.out)
            .map_err(|e| Error::io(Some(spool.path.to_path_buf()), e))
    }
}
