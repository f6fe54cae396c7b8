//! A table's rows typed and encoded as SQLite records while the split writes them (on
//! the spools' thread), so that its load only copies records into pages: the first
//! rows (as many as a load samples) are held until they type the table's columns as the
//! JSON reader's sample would, then every row is stored by the same conversions a load
//! makes ([`values::store`]), its `_id` (the rowid, the
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

use super::values::{self, Got, Owned};
use crate::error::{Error, Result};
use crate::source::convert::Mismatches;
use crate::types::{ColumnType, Lexeme, TypeGuess};

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
    /// The most bytes of rows all tables may hold at once while their types are
    /// undecided: past it, a table's rows are spooled as values, typed by its load as
    /// before, so that an input with many small tables (a new array key in every record)
    /// holds no more than this in memory.
    pub(super) held_max: usize,
}

/// Where a table's records go: its spool's file, and its path for messages.
pub(super) struct Spool<'s> {
    pub(super) out: &'s mut dyn Write,
    pub(super) path: &'s Path,
}

/// Writes `bytes` to `spool`.
fn write(spool: &mut Spool<'_>, bytes: &[u8]) -> Result<()> {
    spool
        .out
        .write_all(bytes)
        .map_err(|e| Error::io(Some(spool.path.to_path_buf()), e))
}

/// One table's typing.
pub(super) struct Typing {
    rules: Rules,
    /// The load's name for the table, for messages.
    name: Arc<str>,
    /// Rows held until the types are decided, and their bytes.
    held: Vec<Vec<u8>>,
    held_bytes: usize,
    /// Whether the table's rows go to its spool as rows of values (its load types
    /// them): where holding its first rows would pass [`Rules::held_max`].
    pub(super) values: bool,
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

impl Typing {
    /// The typing of the table its load names `name`.
    pub(super) fn new(rules: Rules, name: Arc<str>) -> Typing {
        Typing {
            rules,
            name,
            held: vec![],
            held_bytes: 0,
            values: false,
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
            Got::Raw(raw) => values::read_value(raw).map_or(Lexeme::Empty, |o| {
                values::lexeme(&o.got(), self.rules.fields)
            }),
            v => values::lexeme(v, self.rules.fields),
        }
    }

    /// Takes the row `row` of a table whose columns are `named` (by number), and writes
    /// its record to `spool` once the types are decided.
    /// `held` counts the bytes every table holds.
    pub(super) fn take(
        &mut self,
        row: &[u8],
        named: &[String],
        spool: &mut Spool<'_>,
        held: &mut usize,
    ) -> Result<()> {
        if self.values {
            return write(spool, row);
        }
        if self.types.is_some() {
            return self.store(row, named, spool);
        }
        if *held + row.len() > self.rules.held_max {
            // Too much held: this table's rows go as values (the rows held first).
            *held -= self.held_bytes;
            self.held_bytes = 0;
            self.values = true;
            for r in std::mem::take(&mut self.held) {
                write(spool, &r)?;
            }
            return write(spool, row);
        }
        *held += row.len();
        self.held_bytes += row.len();
        self.held.push(row.to_vec());
        if self.held.len() >= self.rules.sample.max(1) {
            *held -= self.held_bytes;
            self.held_bytes = 0;
            self.decide(named, spool)?;
        }
        Ok(())
    }

    /// Decides the types (if not yet) and writes the rows held.
    pub(super) fn finish(&mut self, named: &[String], spool: &mut Spool<'_>) -> Result<()> {
        if self.types.is_none() && !self.values {
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
            let mut bad = false;
            values::walk_row(row, |c, at| {
                match (guesses.get_mut(c), values::get(&row[at..])) {
                    (Some(g), Some((v, _))) => {
                        g.add(self.lexeme_of(&v));
                        met = met.max(c + 1);
                    }
                    _ => bad = true,
                }
            })
            .filter(|_| !bad)
            .ok_or_else(|| Error::internal("a row the split wrote cannot be read"))?;
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

    /// Types the columns of `row` past the `known` ones, each by its value in `row`
    /// (see [`Typing::type_of`]).
    fn type_new_columns(&mut self, row: &[u8], named: &[String], known: usize) {
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
    }

    /// Writes the record of `row`.
    fn store(&mut self, row: &[u8], named: &[String], spool: &mut Spool<'_>) -> Result<()> {
        // Where each column's value is in the row (0: none), found without reading it.
        let at = &mut self.at;
        at.clear();
        at.resize(self.types.as_ref().map_or(0, Vec::len), 0);
        let bad = || Error::internal("a row the split wrote cannot be read");
        values::walk_row(row, |c, i| {
            if c >= at.len() {
                at.resize(c + 1, 0);
            }
            at[c] = i;
        })
        .ok_or_else(bad)?;
        // Columns first met in this row: typed by its value here.
        let known = self.types.as_ref().map_or(0, Vec::len);
        if self.at.len() > known {
            self.type_new_columns(row, named, known);
        }
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
            let (empty_null, fields) = (self.rules.empty_null, self.rules.fields);
            if values::store(
                &mut self.record,
                &v,
                ty,
                empty_null,
                fields,
                &mut self.scratch,
            ) {
                let (name, column) = (&self.name, &named[c]);
                self.mismatches.note(|| {
                    format!(
                        "{name}:{no}:1: {} in {ty} column {column:?}",
                        values::json(&v)
                    )
                });
            }
        }
        self.out.clear();
        self.out
            .extend_from_slice(&(self.record.len() as u32).to_le_bytes());
        self.record.encode(&mut self.out);
        write(spool, &self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spool row: `_id`, then the values given, by column.
    fn row(id: i64, vals: &[(u32, &str)]) -> Vec<u8> {
        let mut r = vec![];
        r.extend_from_slice(&0u32.to_le_bytes());
        values::put_integer(&mut r, id);
        for (c, s) in vals {
            r.extend_from_slice(&c.to_le_bytes());
            values::put_text(&mut r, values::STRING, s.as_bytes());
        }
        r.extend_from_slice(&values::END.to_le_bytes());
        r
    }

    fn rules(held_max: usize) -> Rules {
        Rules {
            sample: 2,
            detect: true,
            fields: false,
            empty_null: false,
            given: vec![("_id".into(), ColumnType::Integer)],
            held_max,
        }
    }

    #[test]
    fn tables_past_the_held_bytes_spool_values_and_the_others_records() {
        let named: Vec<String> = ["_id", "a"].iter().map(|s| s.to_string()).collect();
        let (mut first, mut second) = (vec![], vec![]);
        let path = Path::new("spool");
        let mut held = 0;
        let mut one = Typing::new(rules(60), "one".into());
        let mut two = Typing::new(rules(60), "two".into());
        let rows: Vec<Vec<u8>> = (1..=4).map(|i| row(i, &[(1, "é\0x")])).collect();
        // Rows of 30 bytes: table one holds one, table two one more, and its second
        // would pass 60.
        let mut spool = Spool {
            out: &mut first,
            path,
        };
        one.take(&rows[0], &named, &mut spool, &mut held).unwrap();
        assert_eq!((held, first.len()), (30, 0));
        for r in &rows {
            let mut spool = Spool {
                out: &mut second,
                path,
            };
            two.take(r, &named, &mut spool, &mut held).unwrap();
        }
        assert!(two.values && two.types.is_none());
        assert_eq!(second, rows.concat(), "the rows as they came");
        assert_eq!(held, 30);
        // Table one decides at its sample's second row, then writes records.
        for r in &rows[1..] {
            let mut spool = Spool {
                out: &mut first,
                path,
            };
            one.take(r, &named, &mut spool, &mut held).unwrap();
        }
        let mut spool = Spool {
            out: &mut first,
            path,
        };
        one.finish(&named, &mut spool).unwrap();
        assert_eq!(held, 0);
        assert!(!one.values);
        assert_eq!(
            one.types.as_deref(),
            Some(&[ColumnType::Integer, ColumnType::Text][..])
        );
        let mut rest = &first[..];
        let mut got = vec![];
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            let record = liteload_btree::Record::parse(&rest[4..4 + len]).unwrap();
            got.push(format!("{:?}", record.values().collect::<Vec<_>>()));
            rest = &rest[4 + len..];
        }
        assert_eq!(got, vec![r#"[Null, Text([195, 169, 0, 120])]"#; 4]);
    }
}
