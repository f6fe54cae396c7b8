//! Related tables from typed input (Parquet, Arrow IPC, the program's record batches).
//! The tables follow from the schema alone: a list column (a `List` or `LargeList`;
//! with [`Nested::ObjectTables`] only one of structs or lists) is a child table, each
//! element a row, a struct element's fields its columns, any other element the column
//! `value`. With flattening, a struct's fields are columns of its table, named by their
//! path, and the lists among them children too; without, a struct is one column (JSON
//! text, as a flat load stores it, lists inside and all).
//!
//! Each record batch is split column by column: a list's elements are taken (Arrow's
//! `take`) into its child's batch, beside `_id`, `_parent` and `_position`; every table's
//! batches go to its spool, an Arrow IPC file that its load reads as any Arrow file, so
//! that every value is stored as a flat load stores it. A list that is NULL, like an
//! empty one, gives no row; a struct element that is NULL gives a row of NULLs.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, new_empty_array, Array, ArrayRef, Int64Array, RecordBatch};
use arrow_array::{StructArray, UInt64Array};
use arrow_buffer::NullBuffer;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{ID, PARENT, POSITION, VALUE};
use crate::error::{Error, Position, Result};
use crate::names::Names;
use crate::options::Nested;
use crate::schema::quote_ident;

/// A column coming into a table, before it is kept or made a child: its name
/// (flattened paths joined by the separator), the same joined by `_` (for a child
/// table's name), and joined by `.` (its path, for a name given to its table).
struct Incoming {
    column: String,
    table_key: String,
    steps: String,
    array: ArrayRef,
}

/// What an incoming column of a table is: one of its columns, the list of a child, or
/// the records' own key (written first).
#[derive(Clone, Copy)]
enum Role {
    Kept,
    Child(usize),
    Key,
}

/// The records' own key: a column of theirs, named as the options name it, an integer
/// or a string in every record, different in each.
pub(super) struct Key {
    pub(super) name: String,
    /// Whether it is a string (TEXT), else an integer (INTEGER, the rowid).
    pub(super) text: bool,
    /// Every key met and the record it keys (about 50 bytes a record).
    ints: std::collections::HashMap<i64, u64>,
    texts: std::collections::HashMap<String, u64>,
    /// Records read so far.
    records: u64,
    /// The input's name, for the place of a bad key.
    input: Arc<str>,
}

/// One table and its spool.
pub(super) struct Table {
    pub(super) name: String,
    pub(super) parent: Option<usize>,
    /// Its path from the record (keys joined by `.`; empty for the records' table).
    steps: String,
    schema: SchemaRef,
    /// One for each incoming column, in order.
    roles: Vec<Role>,
    next_id: i64,
    pub(super) rows: u64,
    pub(super) path: PathBuf,
    writer: FileWriter<BufWriter<File>>,
}

/// The tables of a typed input, the records' table first, children after parents.
pub(super) struct Split {
    pub(super) tables: Vec<Table>,
    pub(super) notes: Vec<String>,
    flatten: Option<String>,
    rule: Nested,
    names: Names,
    dir: PathBuf,
    pub(super) key: Option<Key>,
}

impl Split {
    /// The tables of input of `schema`, whose records go to `top`, spooled in `dir`;
    /// `given`: names for child tables by path, each marked when its path is met; `key`:
    /// the records' column (ASCII case ignored; flattened, by its joined name) that keys
    /// them instead of `_id`.
    pub(super) fn new(
        top: &str,
        schema: &Schema,
        rule: Nested,
        flatten: Option<String>,
        given: &mut [(String, String, bool)],
        dir: &Path,
        key: Option<(&str, Arc<str>)>,
    ) -> Result<Split> {
        let mut names = Names::new();
        names.claim(top);
        let mut s = Split {
            tables: vec![],
            notes: vec![],
            flatten,
            rule,
            names,
            dir: dir.to_path_buf(),
            key: None,
        };
        let columns: Vec<(String, ArrayRef)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), new_empty_array(f.data_type())))
            .collect();
        let incoming = s.incoming(columns, None)?;
        if let Some((k, input)) = key {
            s.key = Some(s.key_of(k, &incoming, input)?);
        }
        s.table(top.to_string(), None, String::new(), &incoming, given)?;
        Ok(s)
    }

    /// The key named `k` among the records' `incoming` columns (of the input named
    /// `input`).
    fn key_of(&self, k: &str, incoming: &[Incoming], input: Arc<str>) -> Result<Key> {
        let named: Vec<&Incoming> = incoming
            .iter()
            .filter(|i| i.column.eq_ignore_ascii_case(k) && !self.takes(i.array.data_type()))
            .collect();
        let inc = match named.as_slice() {
            [one] => one,
            [] => {
                return Err(Error::usage(format!(
                    "no column of the records names the key column {k:?}"
                )))
            }
            _ => {
                return Err(Error::usage(format!(
                    "two columns of the records name the key column {k:?}"
                )))
            }
        };
        let text = match inc.array.data_type() {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64 => false,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
            DataType::Dictionary(_, v)
                if matches!(
                    **v,
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) =>
            {
                true
            }
            other => {
                return Err(Error::usage(format!(
                    "the key column {k:?} is {other}: a key is an integer (64 bits) or a string"
                )))
            }
        };
        Ok(Key {
            name: k.to_string(),
            text,
            ints: Default::default(),
            texts: Default::default(),
            records: 0,
            input,
        })
    }

    /// The records' keys of a batch's key column `array` (as INTEGER or TEXT), each
    /// checked: present, and not an earlier record's.
    fn keys(&mut self, array: &ArrayRef) -> Result<ArrayRef> {
        let Some(k) = self.key.as_mut() else {
            return Err(Error::internal("keys of records not keyed"));
        };
        let to = if k.text {
            DataType::Utf8
        } else {
            DataType::Int64
        };
        let opts = arrow_cast::CastOptions {
            safe: false,
            ..Default::default()
        };
        let keys = arrow_cast::cast_with_options(array, &to, &opts).map_err(|e| {
            let (first, last) = (k.records + 1, k.records + array.len() as u64);
            let at = Position {
                path: k.input.clone(),
                line: 0,
                column: 0,
                record: first,
                byte: 0,
            };
            let m = format!(
                "the key column {:?} holds a value past a 64-bit integer in records \
                 {first}-{last}: {e}",
                k.name
            );
            Error::input(at, None, m)
        })?;
        for i in 0..keys.len() {
            let no = k.records + i as u64 + 1;
            let at = Position {
                path: k.input.clone(),
                line: 0,
                column: 0,
                record: no,
                byte: 0,
            };
            if keys.is_null(i) {
                let m = format!(
                    "record {no} has no key in column {:?} (NULL): a key is in every record",
                    k.name
                );
                return Err(Error::input(at, None, m));
            }
            let first = match k.text {
                true => {
                    let v = keys.as_string::<i32>().value(i);
                    match k.texts.get(v) {
                        Some(&f) => Some((f, format!("{v:?}"))),
                        None => {
                            k.texts.insert(v.to_string(), no);
                            None
                        }
                    }
                }
                false => {
                    let v = keys
                        .as_primitive::<arrow_array::types::Int64Type>()
                        .value(i);
                    k.ints.insert(v, no).map(|f| (f, v.to_string()))
                }
            };
            if let Some((f, shown)) = first {
                let m = format!(
                    "record {no}: the key {shown} of column {:?} is record {f}'s already \
                     (typed input has no bad records: nothing is loaded)",
                    k.name
                );
                return Err(Error::input(at, None, m));
            }
        }
        k.records += keys.len() as u64;
        Ok(keys)
    }

    /// Makes the table `name` for `incoming` columns (and its children's tables).
    fn table(
        &mut self,
        name: String,
        parent: Option<usize>,
        steps: String,
        incoming: &[Incoming],
        given: &mut [(String, String, bool)],
    ) -> Result<usize> {
        let t = self.tables.len();
        let mut columns = Names::new();
        let mut fields = match (&self.key, t) {
            (Some(k), 0) => {
                columns.claim(&k.name);
                let ty = if k.text {
                    DataType::Utf8
                } else {
                    DataType::Int64
                };
                vec![Field::new(k.name.clone(), ty, false)]
            }
            _ => {
                columns.claim(ID);
                vec![Field::new(ID, DataType::Int64, false)]
            }
        };
        if let Some(p) = parent {
            columns.claim(PARENT);
            columns.claim(POSITION);
            // (A child of keyed records holds their key.)
            let ty = match (&self.key, p) {
                (Some(k), 0) if k.text => DataType::Utf8,
                _ => DataType::Int64,
            };
            fields.push(Field::new(PARENT, ty, false));
            fields.push(Field::new(POSITION, DataType::Int64, false));
        }
        let mut roles = vec![];
        let mut children = vec![];
        for inc in incoming {
            if t == 0
                && self
                    .key
                    .as_ref()
                    .is_some_and(|k| inc.column.eq_ignore_ascii_case(&k.name))
                && !self.takes(inc.array.data_type())
            {
                roles.push(Role::Key);
                continue;
            }
            if self.takes(inc.array.data_type()) {
                roles.push(Role::Child(usize::MAX));
                children.push(roles.len() - 1);
                continue;
            }
            let got = columns.allocate_column(&inc.column);
            if got != inc.column {
                self.notes.push(format!(
                    "table {}: the column {:?} is stored in column {}: the name is taken",
                    quote_ident(&name),
                    inc.column,
                    quote_ident(&got)
                ));
            }
            fields.push(Field::new(got, inc.array.data_type().clone(), true));
            roles.push(Role::Kept);
        }
        let path = self.dir.join(format!("{t}.arrow"));
        let schema = Arc::new(Schema::new(fields));
        let file = File::create(&path).map_err(|e| Error::io(Some(path.clone()), e))?;
        let writer = FileWriter::try_new_buffered(file, &schema)
            .map_err(|e| Error::io(Some(path.clone()), std::io::Error::other(e)))?;
        self.tables.push(Table {
            name,
            parent,
            steps,
            schema,
            roles,
            next_id: 1,
            rows: 0,
            path,
            writer,
        });
        for i in children {
            let inc = &incoming[i];
            let steps = match self.tables[t].steps.as_str() {
                "" => inc.steps.clone(),
                above => format!("{above}.{}", inc.steps),
            };
            let wanted = match given.iter_mut().find(|(p, _, _)| *p == steps) {
                Some((_, name, met)) => {
                    *met = true;
                    name.clone()
                }
                None => format!("{}_{}", self.tables[t].name, inc.table_key),
            };
            let got = self.names.allocate(&wanted);
            if got != wanted {
                self.notes.push(format!(
                    "the lists at {steps:?} of table {} go to table {}: the name {} is taken",
                    quote_ident(&self.tables[t].name),
                    quote_ident(&got),
                    quote_ident(&wanted)
                ));
            }
            let (values, _) = elements(&inc.array, 0)?;
            let element = self.element_columns(values)?;
            let c = self.table(got, Some(t), steps, &element, given)?;
            self.tables[t].roles[i] = Role::Child(c);
        }
        Ok(t)
    }

    /// Whether a column of type `ty` is a child table's list.
    fn takes(&self, ty: &DataType) -> bool {
        let value = match ty {
            DataType::List(f) | DataType::LargeList(f) => f.data_type(),
            _ => return false,
        };
        match self.rule {
            Nested::Json => false,
            Nested::Tables => true,
            Nested::ObjectTables => matches!(
                value,
                DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_)
            ),
        }
    }

    /// `columns` as a table's incoming columns: with flattening, a struct's fields in
    /// its place, by path (`under`: the struct's names above them).
    fn incoming(
        &self,
        columns: Vec<(String, ArrayRef)>,
        under: Option<&Incoming>,
    ) -> Result<Vec<Incoming>> {
        let mut out = vec![];
        for (name, array) in columns {
            let inc = match under {
                None => Incoming {
                    column: name.clone(),
                    table_key: name.clone(),
                    steps: name,
                    array,
                },
                Some(u) => Incoming {
                    column: format!(
                        "{}{}{name}",
                        u.column,
                        self.flatten.as_deref().unwrap_or("_")
                    ),
                    table_key: format!("{}_{name}", u.table_key),
                    steps: format!("{}.{name}", u.steps),
                    array,
                },
            };
            match (&self.flatten, inc.array.data_type()) {
                (Some(_), DataType::Struct(_)) => {
                    let fields = fields_of(inc.array.as_struct())?;
                    out.extend(self.incoming(fields, Some(&inc))?);
                }
                _ => out.push(inc),
            }
        }
        Ok(out)
    }

    /// The incoming columns of a child table whose elements are `values`: a struct's
    /// fields, else the one column `value`.
    fn element_columns(&self, values: ArrayRef) -> Result<Vec<Incoming>> {
        match values.data_type() {
            DataType::Struct(_) => {
                let fields = fields_of(values.as_struct())?;
                self.incoming(fields, None)
            }
            _ => self.incoming(vec![(VALUE.to_string(), values)], None),
        }
    }

    /// Splits a record batch of the records' table.
    pub(super) fn batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let columns: Vec<(String, ArrayRef)> = batch
            .schema()
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| (f.name().clone(), a.clone()))
            .collect();
        let incoming = self.incoming(columns, None)?;
        self.write(0, batch.num_rows(), incoming, None)
    }

    /// Writes `n` rows of table `t` from its `incoming` columns (and for a child, its
    /// rows' `_parent` and `_position`), then its children's rows.
    fn write(
        &mut self,
        t: usize,
        n: usize,
        incoming: Vec<Incoming>,
        parent: Option<(ArrayRef, ArrayRef)>,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let first = self.tables[t].next_id;
        self.tables[t].next_id += n as i64;
        let roles = self.tables[t].roles.clone();
        let keys = match roles.iter().position(|r| matches!(r, Role::Key)) {
            Some(at) => Some(self.keys(&incoming[at].array)?),
            None => None,
        };
        let mut arrays: Vec<ArrayRef> = match &keys {
            Some(keys) => vec![keys.clone()],
            None => vec![Arc::new(Int64Array::from_iter_values(
                first..first + n as i64,
            ))],
        };
        if let Some((p, pos)) = parent {
            arrays.extend([p, pos]);
        }
        let mut children = vec![];
        for (inc, role) in incoming.into_iter().zip(roles) {
            match role {
                Role::Kept => arrays.push(inc.array),
                Role::Child(c) => children.push((c, inc.array)),
                Role::Key => {}
            }
        }
        let table = &mut self.tables[t];
        let batch = RecordBatch::try_new(table.schema.clone(), arrays)
            .map_err(|e| Error::internal(format!("a batch of {:?}: {e}", table.name)))?;
        table
            .writer
            .write(&batch)
            .map_err(|e| Error::io(Some(table.path.clone()), std::io::Error::other(e)))?;
        table.rows += n as u64;
        for (c, list) in children {
            // Keyed, a child's `_parent` is its record's key: the records' places (from
            // 0) taken from the keys.
            let (values, (indices, mut parents, positions)) =
                elements(&list, if keys.is_some() { 0 } else { first })?;
            if let Some(keys) = &keys {
                parents = arrow_select::take::take(keys, &parents, None)
                    .map_err(|e| Error::internal(format!("the keys of a list's records: {e}")))?;
            }
            let taken = arrow_select::take::take(&values, &indices, None)
                .map_err(|e| Error::internal(format!("the elements of a list: {e}")))?;
            let element = self.element_columns(taken)?;
            self.write(c, indices.len(), element, Some((parents, positions)))?;
        }
        Ok(())
    }

    /// Ends every spool's file.
    pub(super) fn finish(&mut self) -> Result<()> {
        for t in &mut self.tables {
            t.writer
                .finish()
                .map_err(|e| Error::io(Some(t.path.clone()), std::io::Error::other(e)))?;
        }
        Ok(())
    }
}

/// The elements of the list column `list` whose rows are numbered from `first`: its
/// values, and which of them are elements (a NULL list has none, whatever its range
/// holds), each element's row's number and its place in its list.
fn elements(list: &ArrayRef, first: i64) -> Result<(ArrayRef, (UInt64Array, ArrayRef, ArrayRef))> {
    let (values, offsets): (ArrayRef, Vec<i64>) = match list.data_type() {
        DataType::List(_) => {
            let l = list.as_list::<i32>();
            let o = l.value_offsets().iter().map(|&o| i64::from(o)).collect();
            (l.values().clone(), o)
        }
        DataType::LargeList(_) => {
            let l = list.as_list::<i64>();
            (l.values().clone(), l.value_offsets().to_vec())
        }
        other => {
            return Err(Error::internal(format!(
                "a child table's column is no list: {other}"
            )))
        }
    };
    let nulls = list.logical_nulls();
    let (mut indices, mut parents, mut positions) = (vec![], vec![], vec![]);
    for i in 0..list.len() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            continue;
        }
        for j in offsets[i]..offsets[i + 1] {
            indices.push(j as u64);
            parents.push(first + i as i64);
            positions.push(j - offsets[i]);
        }
    }
    Ok((
        values,
        (
            UInt64Array::from(indices),
            Arc::new(Int64Array::from(parents)),
            Arc::new(Int64Array::from(positions)),
        ),
    ))
}

/// A struct's fields, each NULL where the struct is.
fn fields_of(s: &StructArray) -> Result<Vec<(String, ArrayRef)>> {
    let nulls = s.logical_nulls().filter(|n| n.null_count() > 0);
    s.fields()
        .iter()
        .zip(s.columns())
        .map(|(f, a)| {
            let masked = match (&nulls, a.data_type()) {
                (None, _) | (Some(_), DataType::Null) => a.clone(),
                (Some(n), _) => {
                    let data = a.to_data();
                    let union = NullBuffer::union(Some(n), data.nulls());
                    let data = data.into_builder().nulls(union).build().map_err(|e| {
                        Error::usage(format!(
                            "the field {:?} ({}) cannot be NULL where its struct is: {e}",
                            f.name(),
                            f.data_type()
                        ))
                    })?;
                    make_array(data)
                }
            };
            Ok((f.name().clone(), masked))
        })
        .collect()
}
