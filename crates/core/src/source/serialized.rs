//! The program's own values as an input: each item is serialized (serde) straight into
//! a row, with no text in between. Values are typed and stored as the same items
//! written as NDJSON and read back would be (a differential test holds it to that):
//! a struct's fields or a map's keys name the columns, in the order first seen;
//! integers, floats, booleans and strings are scalars; `None` and unit are NULL; a
//! non-finite float is NULL (JSON has none); bytes (`serialize_bytes`, as `serde_bytes`
//! gives them, or a non-empty sequence of `u8` such as a `Vec<u8>`) are a BLOB, which
//! JSON cannot say (an empty sequence is an empty BLOB in a BLOB column, `[]`
//! elsewhere); any other nested value (a sequence, a map, a struct, an enum variant with
//! data) is stored as its JSON text. With flattening ([`ReadOptions::flatten`]) a
//! struct's or a map's members that are themselves structs or maps become columns under
//! their paths, as the JSON reader flattens objects (an empty one gives no column); the
//! values of positional rows ([`crate::Input::rows`]), whose columns are given, are not
//! flattened.

use std::collections::VecDeque;
use std::fmt::Display;
use std::sync::Arc;

use serde::ser::{self, Impossible, Serialize};

use super::convert::{push_scalar, Mismatches, Scalar};
use super::keys::{KeyColumns, PART};
use super::{BadRecord, Fill, ReadOptions, Sample, Source};
use crate::batch::{Batch, Cell, RowOrigin};
use crate::error::{Error, Position, Result};
use crate::types::{ColumnType, TypeGuess};

/// Where one item's values go.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Null,
    Bool(bool),
    Integer(i64),
    Real(f64),
    /// Text (or JSON text) in the row's `text`.
    Text(usize, usize),
    /// Bytes in the row's `bytes`.
    Blob(usize, usize),
    /// An empty sequence (see [`Scalar::EmptyList`]).
    EmptyList,
}

/// One item, serialized: `(column, value)` pairs, text in one buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Row {
    fields: Vec<(usize, Field)>,
    text: String,
    bytes: Vec<u8>,
}

impl Row {
    fn clear(&mut self) {
        self.fields.clear();
        self.text.clear();
        self.bytes.clear();
    }

    fn scalar(&self, f: Field) -> Scalar<'_> {
        match f {
            Field::Null => Scalar::Null,
            Field::Bool(b) => Scalar::Bool(b),
            Field::Integer(i) => Scalar::Integer(i),
            Field::Real(r) => Scalar::Real(r),
            Field::Text(a, b) => Scalar::Text(&self.text[a..b]),
            Field::Blob(a, b) => Scalar::Blob(&self.bytes[a..b]),
            Field::EmptyList => Scalar::EmptyList,
        }
    }
}

/// An item that cannot be a row; `Nested` is a value the scalar serializer does not
/// take, stored as its JSON text instead.
#[derive(Debug)]
pub(crate) enum SerError {
    Nested,
    Bad(String),
}

impl Display for SerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SerError::Nested => f.write_str("a nested value"),
            SerError::Bad(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: Display>(msg: T) -> Self {
        SerError::Bad(msg.to_string())
    }
}

type Res<T = ()> = std::result::Result<T, SerError>;

/// Refuses a key holding a NUL: SQLite's SQL text ends at one, so no column has it.
fn no_nul(key: &str) -> Res {
    if key.contains('\0') {
        return Err(SerError::Bad(format!(
            "key {key:?} has a NUL byte, which no column name can hold"
        )));
    }
    Ok(())
}

/// A map's key as JSON writes it: a string, or a number's text.
fn map_key<T: Serialize + ?Sized>(key: &T) -> Res<String> {
    match serde_json::to_value(key) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        Ok(serde_json::Value::Number(n)) => Ok(n.to_string()),
        _ => Err(SerError::Bad(
            "a map key must be a string or a number".into(),
        )),
    }
}

/// Columns and how new keys are treated: added while sampling, an error after.
pub(crate) struct Columns {
    keys: KeyColumns,
    /// Positional rows ([`crate::Input::rows`]): the given column count.
    fixed: Option<usize>,
}

impl Columns {
    /// The column of `key`: a member's key, or with flattening its path's keys joined
    /// by [`PART`] (each checked by [`ItemSer::member`]).
    fn of_key(&mut self, key: &str) -> Res<usize> {
        if let Some(i) = self.keys.get(key) {
            return Ok(i);
        }
        if self.keys.flatten.is_none() {
            no_nul(key)?;
        }
        if self.fixed.is_some() {
            return Err(SerError::Bad(format!(
                "key {key:?} is not one of the given columns ({})",
                self.keys.columns.join(", ")
            )));
        }
        Ok(self.keys.add(key))
    }

    fn of_position(&self, k: usize) -> Res<usize> {
        match self.fixed {
            Some(n) if k < n => Ok(k),
            Some(n) => Err(SerError::Bad(format!(
                "the row has a value {} but there are {n} columns",
                k + 1
            ))),
            None => Err(SerError::Bad(
                "expected a struct or a map, found a sequence".into(),
            )),
        }
    }
}

/// Serializes one item (a struct, a map, or a row's sequence of values) into a [`Row`].
struct ItemSer<'a> {
    row: &'a mut Row,
    cols: &'a mut Columns,
    /// The column of the next value: a map's key just seen, or a sequence's position.
    next: usize,
    /// With flattening: the path of the member being serialized, its keys joined by
    /// [`PART`], and how many keys it has.
    path: String,
    depth: usize,
    /// With flattening: the map key just seen (its column waits for its value, which
    /// may be a map whose members are the columns).
    key: String,
}

impl<'a> ItemSer<'a> {
    fn new(row: &'a mut Row, cols: &'a mut Columns) -> Self {
        ItemSer {
            row,
            cols,
            next: 0,
            path: String::new(),
            depth: 0,
            key: String::new(),
        }
    }

    fn flattening(&self) -> bool {
        self.cols.keys.flatten.is_some()
    }

    /// A struct's field or a map's entry: its value at the column of `key`, or with
    /// flattening, a struct or map value's members under the path.
    fn member<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Res {
        if !self.flattening() {
            let col = self.cols.of_key(key)?;
            return self.value(col, v);
        }
        no_nul(key)?;
        let len = self.path.len();
        if self.depth > 0 {
            self.path.push(PART);
        }
        self.path.push_str(key);
        self.depth += 1;
        let r = self.flat_value(v);
        self.depth -= 1;
        self.path.truncate(len);
        r
    }

    /// With flattening: `v` at the column of the path, or its members under it.
    fn flat_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        let (start, bytes) = (self.row.text.len(), self.row.bytes.len());
        match v.serialize(ValueSer {
            text: &mut self.row.text,
            bytes: &mut self.row.bytes,
        }) {
            Ok(field) => {
                let col = self.cols.of_key(&self.path)?;
                self.row.fields.push((col, field));
                Ok(())
            }
            Err(SerError::Nested) => {
                self.row.text.truncate(start);
                self.row.bytes.truncate(bytes);
                // A struct's or map's members, under the path (`self` takes them as it
                // takes a record's, and anything else is `Nested` below the record).
                match v.serialize(&mut *self) {
                    Err(SerError::Nested) => {}
                    r => return r,
                }
                // An enum variant with data is an object in JSON (`{"Variant": …}`),
                // flattened as one; anything else is JSON text.
                if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(v) {
                    for (k, x) in &m {
                        self.member(k, x)?;
                    }
                    return Ok(());
                }
                let path = std::mem::take(&mut self.path);
                let col = self.cols.of_key(&path);
                self.path = path;
                self.json(col?, v)
            }
            Err(e) => Err(e),
        }
    }

    /// `v`'s JSON text at column `col`.
    fn json<T: Serialize + ?Sized>(&mut self, col: usize, v: &T) -> Res {
        let json = serde_json::to_string(v).map_err(|e| SerError::Bad(e.to_string()))?;
        let start = self.row.text.len();
        self.row.text.push_str(&json);
        self.row
            .fields
            .push((col, Field::Text(start, self.row.text.len())));
        Ok(())
    }
    fn value<T: Serialize + ?Sized>(&mut self, col: usize, v: &T) -> Res {
        let (start, bytes) = (self.row.text.len(), self.row.bytes.len());
        let field = match v.serialize(ValueSer {
            text: &mut self.row.text,
            bytes: &mut self.row.bytes,
        }) {
            Ok(f) => f,
            Err(SerError::Nested) => {
                self.row.text.truncate(start);
                self.row.bytes.truncate(bytes);
                return self.json(col, v);
            }
            Err(e) => return Err(e),
        };
        self.row.fields.push((col, field));
        Ok(())
    }

    /// The error for an item (`depth` 0) that is `what`, not a struct or a map; below
    /// the item (with flattening) such a member is `Nested`.
    fn not_a_row(&self, what: &str) -> SerError {
        if self.depth > 0 {
            return SerError::Nested;
        }
        SerError::Bad(format!("expected a struct or a map, found {what}"))
    }
}

macro_rules! not_a_row {
    ($($f:ident($($t:ty),*) $what:literal;)*) => {
        $(fn $f(self, $(_: $t),*) -> Res<Self::Ok> { Err(self.not_a_row($what)) })*
    };
}

impl<'a, 'b> ser::Serializer for &'b mut ItemSer<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Impossible<(), SerError>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), SerError>;

    not_a_row! {
        serialize_bool(bool) "a boolean";
        serialize_i8(i8) "a number"; serialize_i16(i16) "a number";
        serialize_i32(i32) "a number"; serialize_i64(i64) "a number";
        serialize_u8(u8) "a number"; serialize_u16(u16) "a number";
        serialize_u32(u32) "a number"; serialize_u64(u64) "a number";
        serialize_f32(f32) "a number"; serialize_f64(f64) "a number";
        serialize_char(char) "a string"; serialize_str(&str) "a string";
        serialize_bytes(&[u8]) "bytes"; serialize_none() "None"; serialize_unit() "()";
        serialize_unit_struct(&'static str) "a unit struct";
        serialize_unit_variant(&'static str, u32, &'static str) "an enum variant";
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Res {
        v.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Res {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Res {
        Err(self.not_a_row("an enum variant"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Res<Self> {
        if self.depth > 0 {
            return Err(SerError::Nested);
        }
        self.cols.of_position(0)?;
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Res<Self> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Res<Self> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Res<Self::SerializeTupleVariant> {
        Err(self.not_a_row("an enum variant"))
    }
    fn serialize_map(self, _: Option<usize>) -> Res<Self> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Res<Self> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Res<Self::SerializeStructVariant> {
        Err(self.not_a_row("an enum variant"))
    }
}

impl ser::SerializeSeq for &mut ItemSer<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        let col = self.cols.of_position(self.next)?;
        self.next += 1;
        self.value(col, v)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeTuple for &mut ItemSer<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for &mut ItemSer<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut ItemSer<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Res {
        self.member(key, v)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeMap for &mut ItemSer<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Res {
        let key = map_key(key)?;
        if self.flattening() {
            self.key = key;
        } else {
            self.next = self.cols.of_key(&key)?;
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        if self.flattening() {
            let key = std::mem::take(&mut self.key);
            return self.member(&key, v);
        }
        self.value(self.next, v)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

/// Serializes one scalar value (or bytes), its text or bytes appended to a row's
/// buffers; anything nested is [`SerError::Nested`].
struct ValueSer<'a> {
    text: &'a mut String,
    bytes: &'a mut Vec<u8>,
}

impl ValueSer<'_> {
    fn text(self, s: &str) -> Res<Field> {
        let start = self.text.len();
        self.text.push_str(s);
        Ok(Field::Text(start, self.text.len()))
    }

    fn int(self, i: i128) -> Res<Field> {
        match i64::try_from(i) {
            Ok(i) => Ok(Field::Integer(i)),
            Err(_) => self.text(&i.to_string()), // beyond i64: its digits, as JSON keeps them
        }
    }
}

/// `serialize_*` methods for integer types that always fit in an i64.
macro_rules! small_integers {
    ($($f:ident($t:ty))*) => {
        $(fn $f(self, v: $t) -> Res<Field> { Ok(Field::Integer(v.into())) })*
    };
}

/// The compound `serialize_*` methods (tuples, maps, structs and their variants) of a
/// serializer of one value: each is [`SerError::Nested`].
macro_rules! nested_compounds {
    () => {
        fn serialize_tuple(self, _: usize) -> Res<Self::SerializeTuple> {
            Err(SerError::Nested)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Res<Self::SerializeTupleStruct> {
            Err(SerError::Nested)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Res<Self::SerializeTupleVariant> {
            Err(SerError::Nested)
        }
        fn serialize_map(self, _: Option<usize>) -> Res<Self::SerializeMap> {
            Err(SerError::Nested)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Res<Self::SerializeStruct> {
            Err(SerError::Nested)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Res<Self::SerializeStructVariant> {
            Err(SerError::Nested)
        }
    };
}

/// A sequence taken as bytes while every element is a `u8` (a `Vec<u8>`); any other
/// element makes it [`SerError::Nested`] (its JSON text, then).
struct ByteSeq<'a> {
    bytes: &'a mut Vec<u8>,
    start: usize,
}

impl ser::SerializeSeq for ByteSeq<'_> {
    type Ok = Field;
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Res {
        self.bytes.push(v.serialize(OneByte)?);
        Ok(())
    }
    fn end(self) -> Res<Field> {
        Ok(if self.bytes.len() == self.start {
            Field::EmptyList
        } else {
            Field::Blob(self.start, self.bytes.len())
        })
    }
}

/// A `u8`, or [`SerError::Nested`] for anything else.
struct OneByte;

macro_rules! not_a_byte {
    ($($f:ident($($t:ty),*);)*) => {
        $(fn $f(self, $(_: $t),*) -> Res<u8> { Err(SerError::Nested) })*
    };
}

impl ser::Serializer for OneByte {
    type Ok = u8;
    type Error = SerError;
    type SerializeSeq = Impossible<u8, SerError>;
    type SerializeTuple = Impossible<u8, SerError>;
    type SerializeTupleStruct = Impossible<u8, SerError>;
    type SerializeTupleVariant = Impossible<u8, SerError>;
    type SerializeMap = Impossible<u8, SerError>;
    type SerializeStruct = Impossible<u8, SerError>;
    type SerializeStructVariant = Impossible<u8, SerError>;

    fn serialize_u8(self, v: u8) -> Res<u8> {
        Ok(v)
    }
    not_a_byte! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u16(u16); serialize_u32(u32); serialize_u64(u64);
        serialize_f32(f32); serialize_f64(f64); serialize_char(char); serialize_str(&str);
        serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Res<u8> {
        Err(SerError::Nested)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, _: &T) -> Res<u8> {
        Err(SerError::Nested)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Res<u8> {
        Err(SerError::Nested)
    }
    fn serialize_seq(self, _: Option<usize>) -> Res<Self::SerializeSeq> {
        Err(SerError::Nested)
    }
    nested_compounds!();
}

impl<'a> ser::Serializer for ValueSer<'a> {
    type Ok = Field;
    type Error = SerError;
    type SerializeSeq = ByteSeq<'a>;
    type SerializeTuple = Impossible<Field, SerError>;
    type SerializeTupleStruct = Impossible<Field, SerError>;
    type SerializeTupleVariant = Impossible<Field, SerError>;
    type SerializeMap = Impossible<Field, SerError>;
    type SerializeStruct = Impossible<Field, SerError>;
    type SerializeStructVariant = Impossible<Field, SerError>;

    fn serialize_bool(self, b: bool) -> Res<Field> {
        Ok(Field::Bool(b))
    }
    small_integers! {
        serialize_i8(i8) serialize_i16(i16) serialize_i32(i32) serialize_i64(i64)
        serialize_u8(u8) serialize_u16(u16) serialize_u32(u32)
    }
    fn serialize_i128(self, v: i128) -> Res<Field> {
        self.int(v)
    }
    fn serialize_u64(self, v: u64) -> Res<Field> {
        self.int(v.into())
    }
    fn serialize_u128(self, v: u128) -> Res<Field> {
        match i128::try_from(v) {
            Ok(i) => self.int(i),
            Err(_) => self.text(&v.to_string()),
        }
    }
    fn serialize_f32(self, v: f32) -> Res<Field> {
        // JSON writes an f32 in its shortest form (serde_json's own choice among equally
        // short ones), which reads back as this f64.
        if !v.is_finite() {
            return Ok(Field::Null);
        }
        let text = serde_json::to_string(&v).map_err(|e| SerError::Bad(e.to_string()))?;
        Ok(Field::Real(text.parse().unwrap_or(f64::from(v))))
    }
    fn serialize_f64(self, v: f64) -> Res<Field> {
        Ok(if v.is_finite() {
            Field::Real(v)
        } else {
            Field::Null
        })
    }
    fn serialize_char(self, c: char) -> Res<Field> {
        self.text(c.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, s: &str) -> Res<Field> {
        self.text(s)
    }
    fn serialize_bytes(self, b: &[u8]) -> Res<Field> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        Ok(Field::Blob(start, self.bytes.len()))
    }
    fn serialize_none(self) -> Res<Field> {
        Ok(Field::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Res<Field> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Res<Field> {
        Ok(Field::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Res<Field> {
        Ok(Field::Null)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Res<Field> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Res<Field> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Res<Field> {
        Err(SerError::Nested)
    }
    fn serialize_seq(self, _: Option<usize>) -> Res<Self::SerializeSeq> {
        Ok(ByteSeq {
            start: self.bytes.len(),
            bytes: self.bytes,
        })
    }
    nested_compounds!();
}

/// Items of any type that serde serializes, each one row.
pub(crate) trait Items: Send {
    /// Serializes the next item into `row` (cleared first); `None` at the end.
    fn next_into(&mut self, row: &mut Row, cols: &mut Columns) -> Option<Res>;
}

impl<T: Serialize, I: Iterator<Item = T> + Send> Items for I {
    fn next_into(&mut self, row: &mut Row, cols: &mut Columns) -> Option<Res> {
        let item = self.next()?;
        row.clear();
        Some(item.serialize(&mut ItemSer::new(row, cols)))
    }
}

/// Values of the program's own, as a [`Source`].
pub(crate) struct SerializedSource {
    items: Box<dyn Items>,
    name: Arc<str>,
    opts: ReadOptions,
    cols: Columns,
    types: Vec<ColumnType>,
    /// Items read while sampling: their number and the row, or why they are bad.
    sampled: VecDeque<(u64, std::result::Result<Row, String>)>,
    items_read: u64,
    row: Row,
    mismatches: Mismatches,
    scratch: String,
    /// Each column's value in the row being pushed.
    slots: Vec<Option<Field>>,
    /// An item with new keys, pushed once their columns are added.
    pending: Option<(u64, Row)>,
}

impl SerializedSource {
    /// Items serialized into rows. `columns` names the columns of positional rows (each
    /// item a sequence of values); without it, items are structs or maps.
    pub(crate) fn new(
        items: Box<dyn Items>,
        columns: Option<&[String]>,
        name: Arc<str>,
        opts: ReadOptions,
    ) -> Self {
        let mut keys = KeyColumns::default();
        for c in columns.unwrap_or_default() {
            keys.add(c);
        }
        if columns.is_none() {
            keys.flatten.clone_from(&opts.flatten);
        }
        SerializedSource {
            items,
            name,
            opts,
            cols: Columns {
                keys,
                fixed: columns.map(<[String]>::len),
            },
            types: vec![],
            sampled: VecDeque::new(),
            items_read: 0,
            row: Row::default(),
            mismatches: Mismatches::default(),
            scratch: String::new(),
            slots: vec![],
            pending: None,
        }
    }

    /// The error for item `no`.
    fn bad(&self, no: u64, message: String) -> BadRecord {
        let pos = Position {
            path: self.name.clone(),
            line: no,
            column: 1,
            record: no,
            byte: 0,
        };
        BadRecord {
            error: Error::input(pos, None, message),
            fields: serde_json::Value::Null,
        }
    }

    /// Pushes `row` (item `no`) into `batch`, a value per column, NULL where it has none.
    fn push_row(&mut self, batch: &mut Batch, row: &Row, no: u64) {
        let n = self.cols.keys.columns.len();
        let mut slots = std::mem::take(&mut self.slots);
        slots.clear();
        slots.resize(n, None);
        for (c, f) in &row.fields {
            slots[*c] = Some(*f); // a key given twice: the last wins, as in JSON
        }
        for (c, f) in slots.iter().copied().enumerate() {
            let ty = self.types[c];
            match f {
                None => batch.push(Cell::Null),
                Some(f) => {
                    let v = row.scalar(f);
                    if push_scalar(
                        batch,
                        v,
                        ty,
                        self.opts.nulls == super::Nulls::All,
                        &mut self.scratch,
                    ) {
                        let (name, column) = (&self.name, &self.cols.keys.columns[c]);
                        self.mismatches
                            .note(|| format!("{name}:{no}:1: {v:?} in {ty} column {column:?}"));
                    }
                }
            }
        }
        self.slots = slots;
        batch.finish_row(RowOrigin {
            line: no,
            record: no,
        });
    }
}

impl Source for SerializedSource {
    fn sample(&mut self) -> Result<Sample> {
        let mut row = Row::default();
        while (self.sampled.len()) < self.opts.sample_rows.max(1) {
            let Some(r) = self.items.next_into(&mut row, &mut self.cols) else {
                break;
            };
            self.items_read += 1;
            self.sampled.push_back((
                self.items_read,
                r.map(|()| row.clone()).map_err(|e| e.to_string()),
            ));
        }
        let n = self.cols.keys.columns.len();
        let mut guesses = vec![TypeGuess::default(); n];
        for (_, r) in &self.sampled {
            if let Ok(row) = r {
                for (c, f) in &row.fields {
                    guesses[*c].add(row.scalar(*f).lexeme());
                }
            }
        }
        if n == 0 {
            if let Some((no, Err(m))) = self.sampled.iter().find(|s| s.1.is_err()) {
                return Err(self.bad(*no, m.clone()).error);
            }
        }
        Ok(Sample {
            types: None,
            columns: self.cols.keys.columns.clone(),
            guesses,
            notes: std::mem::take(&mut self.cols.keys.notes),
            locale: vec![],
        })
    }

    fn set_types(&mut self, types: Vec<ColumnType>) {
        self.types = types;
    }

    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill> {
        while batch.rows() < max_rows && batch.text_bytes() < max_text {
            if let Some((no, r)) = self.sampled.pop_front() {
                match r {
                    Ok(row) => self.push_row(batch, &row, no),
                    Err(m) => bad(self.bad(no, m))?,
                }
                continue;
            }
            if let Some((no, row)) = self.pending.take() {
                self.push_row(batch, &row, no);
                self.row = row;
                continue;
            }
            let mut row = std::mem::take(&mut self.row);
            let Some(r) = self.items.next_into(&mut row, &mut self.cols) else {
                self.row = row;
                return Ok(Fill::Done);
            };
            self.items_read += 1;
            let no = self.items_read;
            if r.is_ok() && self.cols.keys.columns.len() > self.types.len() {
                // Keys first seen now: their columns first (typed by this item's values),
                // then this item, as the NDJSON reader does.
                let first_new = self.types.len();
                let mut guesses =
                    vec![TypeGuess::default(); self.cols.keys.columns.len() - first_new];
                for (c, f) in &row.fields {
                    if *c >= first_new {
                        guesses[c - first_new].add(row.scalar(*f).lexeme());
                    }
                }
                let added: Vec<(String, ColumnType)> = guesses
                    .iter()
                    .enumerate()
                    .map(|(k, g)| (self.cols.keys.columns[first_new + k].clone(), g.resolve()))
                    .collect();
                self.types.extend(added.iter().map(|(_, t)| *t));
                self.pending = Some((no, row));
                return Ok(Fill::NewColumns(added));
            }
            let result = match r {
                Ok(()) => {
                    self.push_row(batch, &row, no);
                    Ok(())
                }
                Err(e) => bad(self.bad(no, e.to_string())),
            };
            self.row = row;
            result?;
        }
        Ok(Fill::Full)
    }

    fn width(&self) -> usize {
        self.cols.keys.columns.len()
    }

    fn mismatches(&self) -> &Mismatches {
        &self.mismatches
    }
}

/// A row's values as a sequence, serialized once ([`crate::Input::rows`]).
pub(crate) struct Values<R>(std::cell::RefCell<Option<R>>);

impl<R> Values<R> {
    pub(crate) fn new(r: R) -> Self {
        Values(std::cell::RefCell::new(Some(r)))
    }
}

impl<R: IntoIterator<Item = V>, V: Serialize> Serialize for Values<R> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use ser::{Error as _, SerializeSeq};
        let values = self
            .0
            .borrow_mut()
            .take()
            .ok_or_else(|| S::Error::custom("a row is serialized once"))?;
        let mut seq = s.serialize_seq(None)?;
        for v in values {
            seq.serialize_element(&v)?;
        }
        seq.end()
    }
}
