//! Arrow arrays read as rows, by the mapping in [`super`]'s table.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    Float64Array, Int64Array, LargeBinaryArray, LargeStringArray, RecordBatch, StringArray,
    StringViewArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType, FieldRef};

use crate::batch::{Batch, Cell, RowOrigin};
use crate::types::ColumnType;

/// The field metadata key that asks for a UInt64 column's values past `i64::MAX` to be
/// stored as the TEXT of their digits rather than refused (a source database's
/// unsigned 64-bit integers).
pub(crate) const BIG_AS_TEXT: &str = "liteload.uint64_past_i64";

use super::{Decimals, Temporal, SQLITE_MAX_LENGTH};

/// How one Arrow column is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Null,
    Integer,
    UInt64,
    /// UInt64 whose field asks for values past `i64::MAX` as the TEXT of their digits
    /// ([`BIG_AS_TEXT`]): declared BLOB (no affinity), so SQLite's insert path keeps
    /// each value as it comes (INTEGER affinity would make such text REAL).
    UInt64Text,
    Real,
    Bool,
    Text,
    Blob,
    /// ISO 8601 text; `utc`: a timestamp with a zone, written in UTC with `Z`.
    Iso {
        utc: bool,
    },
    /// The raw count (temporal in epoch mode, durations).
    Count,
    DecimalText,
    DecimalReal,
    Json,
}

impl Kind {
    fn of(dt: &DataType, temporal: Temporal, decimals: Decimals) -> Option<Kind> {
        use DataType as D;
        let time = |utc| match temporal {
            Temporal::Iso8601 => Kind::Iso { utc },
            Temporal::Epoch => Kind::Count,
        };
        Some(match dt {
            D::Null => Kind::Null,
            D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 => {
                Kind::Integer
            }
            D::UInt64 => Kind::UInt64,
            D::Float16 | D::Float32 | D::Float64 => Kind::Real,
            D::Boolean => Kind::Bool,
            D::Utf8 | D::LargeUtf8 | D::Utf8View => Kind::Text,
            D::Binary | D::LargeBinary | D::BinaryView | D::FixedSizeBinary(_) => Kind::Blob,
            D::Date32 | D::Date64 | D::Time32(_) | D::Time64(_) => time(false),
            D::Timestamp(_, zone) => time(zone.is_some()),
            D::Duration(_) => Kind::Count,
            D::Decimal32(..) | D::Decimal64(..) | D::Decimal128(..) | D::Decimal256(..) => {
                match decimals {
                    Decimals::Text => Kind::DecimalText,
                    Decimals::Real => Kind::DecimalReal,
                }
            }
            D::List(_) | D::LargeList(_) | D::FixedSizeList(..) | D::Struct(_) | D::Map(..) => {
                Kind::Json
            }
            D::Dictionary(_, values) => Kind::of(values, temporal, decimals)?,
            _ => return None,
        })
    }

    fn column_type(self) -> ColumnType {
        match self {
            Kind::Integer | Kind::UInt64 | Kind::Bool | Kind::Count => ColumnType::Integer,
            Kind::Real | Kind::DecimalReal => ColumnType::Real,
            Kind::Text | Kind::Iso { .. } | Kind::DecimalText | Kind::Json => ColumnType::Text,
            Kind::Blob | Kind::Null | Kind::UInt64Text => ColumnType::Blob,
        }
    }
}

/// The columns of an Arrow schema as they are stored: which fields, in which order, and
/// how each is converted.
#[derive(Clone, Debug)]
pub struct Columns {
    fields: Vec<FieldRef>,
    kinds: Vec<Kind>,
    /// With flattening, where each column's values are (see [`Columns::flattened`]).
    leaves: Option<Vec<Leaf>>,
}

/// Where a flattened column's values are: the selected array it is in, and the child
/// indexes down through its structs (empty: that array itself).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Leaf {
    root: usize,
    path: Vec<usize>,
}

impl Columns {
    /// The plan for `fields`, or the first field whose type has no SQLite counterpart
    /// (its index and why).
    pub fn new(
        fields: Vec<FieldRef>,
        temporal: Temporal,
        decimals: Decimals,
    ) -> Result<Columns, (usize, String)> {
        let mut kinds = Vec::with_capacity(fields.len());
        for (i, f) in fields.iter().enumerate() {
            match Kind::of(f.data_type(), temporal, decimals) {
                Some(Kind::UInt64) if f.metadata().contains_key(BIG_AS_TEXT) => {
                    kinds.push(Kind::UInt64Text)
                }
                Some(k) => kinds.push(k),
                None => {
                    return Err((
                        i,
                        format!("its type {} has no SQLite counterpart", f.data_type()),
                    ))
                }
            }
        }
        Ok(Columns {
            fields,
            kinds,
            leaves: None,
        })
    }

    /// The plan for `fields` with every struct field replaced by its fields, at every
    /// depth, each named by the path of names joined by `separator` (`owner_address_city`)
    /// and nullable (NULL where a struct above it is); a struct without fields stays one
    /// column. Errors as [`Columns::new`]'s, with the index of the field of `fields`
    /// that holds the refused one.
    pub fn flattened(
        fields: Vec<FieldRef>,
        separator: &str,
        temporal: Temporal,
        decimals: Decimals,
    ) -> Result<Columns, (usize, String)> {
        fn walk(
            f: &FieldRef,
            name: String,
            at: (usize, &mut Vec<usize>),
            separator: &str,
            out: &mut Vec<(FieldRef, Leaf)>,
        ) {
            let (root, path) = at;
            match f.data_type() {
                DataType::Struct(children) if !children.is_empty() => {
                    for (k, c) in children.iter().enumerate() {
                        path.push(k);
                        let child = format!("{name}{separator}{}", c.name());
                        walk(c, child, (root, &mut *path), separator, out);
                        path.pop();
                    }
                }
                _ => {
                    let field = arrow_schema::Field::new(name, f.data_type().clone(), true)
                        .with_metadata(f.metadata().clone());
                    let leaf = Leaf {
                        root,
                        path: path.clone(),
                    };
                    out.push((Arc::new(field), leaf));
                }
            }
        }
        let mut out = vec![];
        for (root, f) in fields.iter().enumerate() {
            walk(
                f,
                f.name().clone(),
                (root, &mut vec![]),
                separator,
                &mut out,
            );
        }
        let (flat, leaves): (Vec<FieldRef>, Vec<Leaf>) = out.into_iter().unzip();
        // A field with no counterpart is named, and placed at the column it is in.
        let mut columns = Columns::new(flat.clone(), temporal, decimals)
            .map_err(|(i, why)| (leaves[i].root, format!("field {:?}: {why}", flat[i].name())))?;
        columns.leaves = Some(leaves);
        Ok(columns)
    }

    /// The arrays of this plan's columns, from `selected` (the arrays of the fields it
    /// was made from, in order): those arrays, or with flattening the fields of their
    /// structs, NULL where a struct above is.
    pub fn arrays(&self, selected: Vec<ArrayRef>) -> Result<Vec<ArrayRef>, ArrowError> {
        let Some(leaves) = &self.leaves else {
            return Ok(selected);
        };
        leaves
            .iter()
            .map(|leaf| {
                let mut a = selected[leaf.root].clone();
                for &k in &leaf.path {
                    let s = a.as_struct_opt().ok_or_else(|| {
                        ArrowError::SchemaError(format!(
                            "expected a struct, found {}",
                            a.data_type()
                        ))
                    })?;
                    a = with_nulls_of(s.column(k).clone(), s.nulls())?;
                }
                Ok(a)
            })
            .collect()
    }

    /// The fields, in table order.
    pub fn fields(&self) -> &[FieldRef] {
        &self.fields
    }

    /// The declared type of each column.
    pub fn types(&self) -> Vec<ColumnType> {
        self.kinds.iter().map(|k| k.column_type()).collect()
    }

    /// Typed readers of `arrays` (this plan's columns, in its order).
    pub fn readers(&self, arrays: &[ArrayRef]) -> Result<Vec<Reader>, (usize, ArrowError)> {
        arrays
            .iter()
            .zip(&self.fields)
            .zip(&self.kinds)
            .enumerate()
            .map(|(i, ((a, f), k))| Reader::new(a, f, *k).map_err(|e| (i, e)))
            .collect()
    }
}

/// One column of one record batch, cast to what the row loop reads.
pub enum Reader {
    /// Every value NULL.
    Null,
    /// Integers (every integer type, booleans and counts are cast to Int64 first).
    Int(Int64Array),
    /// UInt64, checked per value.
    U64(UInt64Array),
    /// UInt64, the TEXT of its digits past `i64::MAX`.
    U64Text(UInt64Array),
    /// Doubles; NaN reads as NULL.
    Real(Float64Array),
    /// Booleans, as 0/1.
    Bool(BooleanArray),
    /// Text.
    Str(StringArray),
    /// Text with 64-bit offsets.
    LargeStr(LargeStringArray),
    /// Text views.
    StrView(StringViewArray),
    /// Blobs.
    Bin(BinaryArray),
    /// Blobs with 64-bit offsets.
    LargeBin(LargeBinaryArray),
    /// Blob views.
    BinView(BinaryViewArray),
    /// Blobs of one width.
    Fixed(FixedSizeBinaryArray),
}

/// One value of a row, borrowed from its record batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val<'a> {
    /// NULL.
    Null,
    /// An INTEGER.
    Int(i64),
    /// A REAL.
    Real(f64),
    /// TEXT.
    Text(&'a str),
    /// A BLOB.
    Blob(&'a [u8]),
    /// A UInt64 past `i64::MAX`.
    TooBig(u64),
}

impl Reader {
    fn new(array: &ArrayRef, field: &FieldRef, kind: Kind) -> Result<Reader, ArrowError> {
        use arrow_cast::cast;
        use DataType as D;
        let array = match array.data_type() {
            D::Dictionary(_, values) => cast(array, values)?,
            _ => array.clone(),
        };
        Ok(match kind {
            Kind::Null => Reader::Null,
            Kind::Integer | Kind::Count => Reader::Int(as_i64(&array)?),
            Kind::UInt64 => Reader::U64(array.as_primitive::<UInt64Type>().clone()),
            Kind::UInt64Text => Reader::U64Text(array.as_primitive::<UInt64Type>().clone()),
            Kind::Bool => Reader::Bool(array.as_boolean().clone()),
            Kind::Real => Reader::Real(
                cast(&array, &D::Float64)?
                    .as_primitive::<Float64Type>()
                    .clone(),
            ),
            // Through the exact text: the nearest double (dividing by a power of ten, as a
            // cast does, rounds twice).
            Kind::DecimalReal => Reader::Real(
                cast(&array, &D::Utf8)?
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(|s| s.parse::<f64>().unwrap_or(f64::NAN)))
                    .collect(),
            ),
            Kind::Text => match array.data_type() {
                D::Utf8 => Reader::Str(array.as_string::<i32>().clone()),
                D::LargeUtf8 => Reader::LargeStr(array.as_string::<i64>().clone()),
                _ => Reader::StrView(array.as_string_view().clone()),
            },
            Kind::Blob => match array.data_type() {
                D::Binary => Reader::Bin(array.as_binary::<i32>().clone()),
                D::LargeBinary => Reader::LargeBin(array.as_binary::<i64>().clone()),
                D::BinaryView => Reader::BinView(array.as_binary_view().clone()),
                _ => Reader::Fixed(array.as_fixed_size_binary().clone()),
            },
            Kind::Iso { utc: false } | Kind::DecimalText => {
                Reader::Str(cast(&array, &D::Utf8)?.as_string::<i32>().clone())
            }
            Kind::Iso { utc: true } => Reader::Str(utc_text(&array)?),
            Kind::Json => Reader::Str(json_text(field, &array)?),
        })
    }

    /// Row `row`'s value (for a bad row's report; loads go through `put`).
    pub fn get(&self, row: usize) -> Val<'_> {
        macro_rules! or_null {
            ($a:expr, $v:expr) => {
                if $a.is_null(row) {
                    Val::Null
                } else {
                    $v
                }
            };
        }
        match self {
            Reader::Null => Val::Null,
            Reader::Int(a) => or_null!(a, Val::Int(a.value(row))),
            Reader::U64(a) | Reader::U64Text(a) => or_null!(a, {
                let v = a.value(row);
                i64::try_from(v).map_or(Val::TooBig(v), Val::Int)
            }),
            Reader::Real(a) => or_null!(a, {
                let v = a.value(row);
                if v.is_nan() {
                    Val::Null
                } else {
                    Val::Real(v)
                }
            }),
            Reader::Bool(a) => or_null!(a, Val::Int(i64::from(a.value(row)))),
            Reader::Str(a) => or_null!(a, Val::Text(a.value(row))),
            Reader::LargeStr(a) => or_null!(a, Val::Text(a.value(row))),
            Reader::StrView(a) => or_null!(a, Val::Text(a.value(row))),
            Reader::Bin(a) => or_null!(a, Val::Blob(a.value(row))),
            Reader::LargeBin(a) => or_null!(a, Val::Blob(a.value(row))),
            Reader::BinView(a) => or_null!(a, Val::Blob(a.value(row))),
            Reader::Fixed(a) => or_null!(a, Val::Blob(a.value(row))),
        }
    }
}

impl Reader {
    /// Puts row `row`'s value into `to` and returns its text or blob length; a value
    /// that cannot be stored is returned instead, untouched. One match per value (the
    /// hot loop of a load: `get` and a second match cost a third more).
    #[inline(always)]
    fn put(&self, row: usize, to: &mut impl Row) -> Result<usize, Val<'_>> {
        macro_rules! or_null {
            ($a:expr, $put:expr) => {{
                if $a.is_null(row) {
                    to.null();
                    Ok(0)
                } else {
                    $put
                }
            }};
        }
        macro_rules! bytes {
            ($a:expr, $method:ident, $val:ident) => {
                or_null!($a, {
                    let v = $a.value(row);
                    if v.len() > SQLITE_MAX_LENGTH {
                        return Err(Val::$val(v));
                    }
                    to.$method(v);
                    Ok(v.len())
                })
            };
        }
        match self {
            Reader::Null => {
                to.null();
                Ok(0)
            }
            Reader::Int(a) => or_null!(a, {
                to.int(a.value(row));
                Ok(0)
            }),
            Reader::U64(a) => or_null!(a, {
                let v = a.value(row);
                match i64::try_from(v) {
                    Ok(i) => {
                        to.int(i);
                        Ok(0)
                    }
                    Err(_) => Err(Val::TooBig(v)),
                }
            }),
            Reader::U64Text(a) => or_null!(a, {
                let v = a.value(row);
                match i64::try_from(v) {
                    Ok(i) => to.int(i),
                    Err(_) => to.text(&v.to_string()),
                }
                Ok(0)
            }),
            Reader::Real(a) => or_null!(a, {
                let v = a.value(row);
                if v.is_nan() {
                    to.null();
                } else {
                    to.real(v);
                }
                Ok(0)
            }),
            Reader::Bool(a) => or_null!(a, {
                to.int(i64::from(a.value(row)));
                Ok(0)
            }),
            Reader::Str(a) => bytes!(a, text, Text),
            Reader::LargeStr(a) => bytes!(a, text, Text),
            Reader::StrView(a) => bytes!(a, text, Text),
            Reader::Bin(a) => bytes!(a, blob, Blob),
            Reader::LargeBin(a) => bytes!(a, blob, Blob),
            Reader::BinView(a) => bytes!(a, blob, Blob),
            Reader::Fixed(a) => bytes!(a, blob, Blob),
        }
    }
}

/// An integer-like column (any integer type, booleans aside; a temporal type or a
/// duration, as its count) as Int64.
fn as_i64(array: &ArrayRef) -> Result<Int64Array, ArrowError> {
    use DataType as D;
    let wide = match array.data_type() {
        D::Int64 => return Ok(array.as_primitive::<Int64Type>().clone()),
        // Temporal types and durations are integers underneath: reinterpret the buffer
        // as its integer type (arrow_cast would refuse or convert some of them).
        D::Date32 | D::Time32(_) => {
            let data = array.to_data().into_builder().data_type(D::Int32).build()?;
            arrow_cast::cast(&arrow_array::make_array(data), &D::Int64)?
        }
        D::Date64 | D::Time64(_) | D::Timestamp(..) | D::Duration(_) => {
            let data = array.to_data().into_builder().data_type(D::Int64).build()?;
            arrow_array::make_array(data)
        }
        _ => arrow_cast::cast(array, &D::Int64)?,
    };
    Ok(wide.as_primitive::<Int64Type>().clone())
}

/// A timestamp column with a zone as ISO 8601 text of the instant in UTC, ending in `Z`.
fn utc_text(array: &ArrayRef) -> Result<StringArray, ArrowError> {
    let DataType::Timestamp(unit, _) = array.data_type() else {
        unreachable!("only timestamps have a zone")
    };
    let data = array
        .to_data()
        .into_builder()
        .data_type(DataType::Timestamp(*unit, None))
        .build()?;
    let naive = arrow_cast::cast(&arrow_array::make_array(data), &DataType::Utf8)?;
    let naive = naive.as_string::<i32>();
    let mut out = arrow_array::builder::StringBuilder::with_capacity(
        naive.len(),
        naive.value_data().len() + naive.len(),
    );
    for v in naive.iter() {
        match v {
            Some(s) => {
                // The builder takes a value in parts: no string per value.
                use std::fmt::Write;
                let _ = write!(out, "{s}Z");
                out.append_value("");
            }
            None => out.append_null(),
        }
    }
    Ok(out.finish())
}

/// A nested column (list, struct, map) as the JSON text of each value.
fn json_text(field: &FieldRef, array: &ArrayRef) -> Result<StringArray, ArrowError> {
    let options = arrow_json::writer::EncoderOptions::default().with_explicit_nulls(true);
    let field: FieldRef = Arc::new(
        field
            .as_ref()
            .clone()
            .with_data_type(array.data_type().clone()),
    );
    let mut encoder = arrow_json::writer::make_encoder(&field, array.as_ref(), &options)?;
    let mut out = arrow_array::builder::StringBuilder::with_capacity(array.len(), array.len() * 16);
    let mut buf = Vec::new();
    for row in 0..array.len() {
        if array.is_null(row) {
            out.append_null();
            continue;
        }
        buf.clear();
        encoder.encode(row, &mut buf);
        // arrow-json writes JSON, which is UTF-8; a failure here is its bug, not the input's.
        let s = std::str::from_utf8(&buf)
            .map_err(|e| ArrowError::JsonError(format!("the JSON encoder wrote bad UTF-8: {e}")))?;
        out.append_value(s);
    }
    Ok(out.finish())
}

/// A row that cannot be stored: the column (index in the plan) and why.
#[derive(Debug)]
pub struct BadRow {
    /// The row within its unit, from 1.
    pub row: u64,
    /// The column, from 0.
    pub column: usize,
    /// Why.
    pub message: String,
    /// The row's values, for a rejects log.
    pub fields: serde_json::Value,
}

/// Appends rows `rows` of the record batch read by `readers` to `batch`, as cells or (with
/// `records`) as encoded records; a row's origin is its number within the unit
/// (`first_row` is the number of the batch's row 0, from 1). Rows that cannot be stored
/// are left out and returned.
pub fn append_rows(
    readers: &[Reader],
    rows: std::ops::Range<usize>,
    first_row: u64,
    records: bool,
    batch: &mut Batch,
    record: &mut liteload_btree::RecordBuilder,
    bad: &mut Vec<BadRow>,
) {
    if records {
        let mut to = Records { batch, record };
        append(readers, rows, first_row, &mut to, bad);
    } else {
        append(readers, rows, first_row, &mut Cells(batch), bad);
    }
}

/// Where [`append`] puts a row's values (monomorphized: no test per value of which).
trait Row {
    fn start(&mut self);
    fn null(&mut self);
    fn int(&mut self, i: i64);
    fn real(&mut self, f: f64);
    fn text(&mut self, s: &str);
    fn blob(&mut self, b: &[u8]);
    fn abandon(&mut self);
    fn finish(&mut self, origin: RowOrigin);
}

struct Cells<'a>(&'a mut Batch);

impl Row for Cells<'_> {
    #[inline]
    fn start(&mut self) {}
    #[inline]
    fn null(&mut self) {
        self.0.push(Cell::Null);
    }
    #[inline]
    fn int(&mut self, i: i64) {
        self.0.push(Cell::Integer(i));
    }
    #[inline]
    fn real(&mut self, f: f64) {
        self.0.push(Cell::Real(f));
    }
    #[inline]
    fn text(&mut self, s: &str) {
        self.0.push_text(s);
    }
    #[inline]
    fn blob(&mut self, b: &[u8]) {
        self.0.push_blob(b);
    }
    fn abandon(&mut self) {
        self.0.abandon_row();
    }
    #[inline]
    fn finish(&mut self, origin: RowOrigin) {
        self.0.finish_row(origin);
    }
}

struct Records<'a> {
    batch: &'a mut Batch,
    record: &'a mut liteload_btree::RecordBuilder,
}

impl Row for Records<'_> {
    #[inline]
    fn start(&mut self) {
        self.record.clear();
    }
    #[inline]
    fn null(&mut self) {
        self.record.null();
    }
    #[inline]
    fn int(&mut self, i: i64) {
        self.record.integer(i);
    }
    #[inline]
    fn real(&mut self, f: f64) {
        self.record.real(f);
    }
    #[inline]
    fn text(&mut self, s: &str) {
        self.record.text(s.as_bytes());
    }
    #[inline]
    fn blob(&mut self, b: &[u8]) {
        self.record.blob(b);
    }
    fn abandon(&mut self) {}
    #[inline]
    fn finish(&mut self, origin: RowOrigin) {
        self.batch.push_record(self.record);
        self.batch.finish_row(origin);
    }
}

#[inline]
fn append(
    readers: &[Reader],
    rows: std::ops::Range<usize>,
    first_row: u64,
    to: &mut impl Row,
    bad: &mut Vec<BadRow>,
) {
    'rows: for row in rows {
        let mut bytes = 0usize;
        to.start();
        for (c, r) in readers.iter().enumerate() {
            let problem = match r.put(row, to) {
                Ok(n) => {
                    bytes += n;
                    continue;
                }
                Err(Val::Text(s)) => too_long(s.len()),
                Err(Val::Blob(b)) => too_long(b.len()),
                Err(Val::TooBig(n)) => format!(
                    "{n} does not fit SQLite's INTEGER (a UInt64 above {})",
                    i64::MAX
                ),
                Err(other) => {
                    unreachable!("only long values and big UInt64s are refused: {other:?}")
                }
            };
            to.abandon();
            bad.push(bad_row(readers, row, first_row, c, problem));
            continue 'rows;
        }
        if bytes > SQLITE_MAX_LENGTH {
            to.abandon();
            let message = format!(
                "the row's values take more than SQLite's limit of {SQLITE_MAX_LENGTH} bytes"
            );
            bad.push(bad_row(readers, row, first_row, 0, message));
            continue;
        }
        to.finish(RowOrigin {
            line: 0,
            record: first_row + row as u64,
        });
    }
}

#[cold]
fn bad_row(
    readers: &[Reader],
    row: usize,
    first_row: u64,
    column: usize,
    message: String,
) -> BadRow {
    BadRow {
        row: first_row + row as u64,
        column,
        message,
        fields: readers.iter().map(|r| json_of(r.get(row))).collect(),
    }
}

fn too_long(n: usize) -> String {
    format!("a value of {n} bytes, longer than SQLite's limit of {SQLITE_MAX_LENGTH}")
}

fn json_of(v: Val<'_>) -> serde_json::Value {
    match v {
        Val::Null => serde_json::Value::Null,
        Val::Int(i) => i.into(),
        Val::Real(f) => f.into(),
        Val::Text(s) if s.len() <= 4096 => s.into(),
        Val::Text(s) => format!("({} bytes of text)", s.len()).into(),
        Val::Blob(b) if b.len() <= 4096 => crate::source::convert::blob_json(b),
        Val::Blob(b) => format!("({} bytes of blob)", b.len()).into(),
        Val::TooBig(n) => n.into(),
    }
}

/// `child` (a struct's field) NULL also where its struct is: `parent`'s nulls.
fn with_nulls_of(
    child: ArrayRef,
    parent: Option<&arrow_buffer::NullBuffer>,
) -> Result<ArrayRef, ArrowError> {
    // A Null array is NULL throughout already, and holds no validity of its own.
    let Some(parent) = parent.filter(|_| child.data_type() != &DataType::Null) else {
        return Ok(child);
    };
    let nulls = arrow_buffer::NullBuffer::union(Some(parent), child.nulls());
    let data = child.to_data().into_builder().nulls(nulls).build()?;
    Ok(arrow_array::make_array(data))
}

/// The rows of `rb` in a record batch's columns taken at `take`.
pub fn project(rb: &RecordBatch, take: &[usize]) -> Vec<ArrayRef> {
    take.iter().map(|&i| rb.column(i).clone()).collect()
}
