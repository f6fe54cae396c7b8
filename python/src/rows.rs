//! Python rows (an iterable of dicts, as sqlite-utils' `insert_all` takes) as the
//! library's serialized items. Rows are taken from the iterator a chunk at a time with
//! the GIL held and turned into owned values, so that the load's reading thread holds
//! the GIL only while it copies.

use std::sync::Arc;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use liteload::generate::spec::{civil_from_days, days_from_civil};
use liteload::Progress;

/// Rows taken from Python per GIL hold.
const CHUNK: usize = 1024;

/// A Python value, copied out of the interpreter.
#[derive(Debug)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Text; also an integer beyond 64 bits (its digits, never a rounded float), and a
    /// date, time, decimal or any other object (its `isoformat()` or `str()`).
    Text(String),
    /// bytes, bytearray or memoryview: a BLOB (serialized as serde bytes).
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_none(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Text(t) => s.serialize_str(t),
            Value::Bytes(b) => s.serialize_bytes(b),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Map(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Nesting deeper than this is refused (a self-referencing list would never end).
const MAX_DEPTH: usize = 64;

/// Copies `obj` out of the interpreter.
pub fn value(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a value nested more than {MAX_DEPTH} deep"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Text(obj.str()?.to_string()),
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Text(s.to_cow()?.into_owned()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Bytes(b.as_bytes().to_vec()));
    }
    if obj.is_instance_of::<PyByteArray>() || obj.is_instance_of::<PyMemoryView>() {
        let b = obj.py().get_type::<PyBytes>().call1((obj,))?;
        return Ok(Value::Bytes(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut fields = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            fields.push((k.str()?.to_string(), value(&v, depth + 1)?));
        }
        return Ok(Value::Map(fields));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj
            .try_iter()?
            .map(|item| value(&item?, depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::List(items));
    }
    // numpy and pandas scalars, and anything else numeric, by the protocols they speak.
    let ty = obj.get_type();
    let type_name = ty.name()?.to_string();
    if matches!(type_name.as_str(), "NAType" | "NaTType") {
        return Ok(Value::Null);
    }
    if obj.hasattr(intern!(obj.py(), "isoformat"))? {
        return Ok(Value::Text(iso_text(obj, &type_name)?));
    }
    if obj.hasattr("__index__")? {
        if let Ok(i) = obj
            .call_method0("__index__")
            .and_then(|i| value(&i, depth + 1))
        {
            return Ok(i);
        }
    }
    if type_name.starts_with("float") || type_name == "longdouble" {
        if let Ok(f) = obj.call_method0("__float__") {
            return value(&f, depth + 1);
        }
    }
    if let Ok(item) = obj.call_method0("item") {
        // A numpy scalar of another kind (bool_, str_): its Python value.
        if !item.is(obj) {
            return value(&item, depth + 1);
        }
    }
    Ok(Value::Text(obj.str()?.to_string()))
}

/// A date, time or timestamp as the Arrow path stores it: ISO 8601, a timestamp with a
/// zone as its UTC instant with `Z`, the fraction of a second in 3, 6 or 9 digits and
/// none when it is zero.
fn iso_text(obj: &Bound<'_, PyAny>, type_name: &str) -> PyResult<String> {
    let py = obj.py();
    if type_name == "Timestamp" {
        // pandas: `value` is nanoseconds since the epoch, of the UTC instant when the
        // Timestamp has a zone and of the wall time when it has none.
        let ns: i64 = obj.getattr(intern!(py, "value"))?.extract()?;
        let aware = !obj.getattr(intern!(py, "tz"))?.is_none();
        return Ok(epoch_text(
            ns.div_euclid(1_000_000_000),
            ns.rem_euclid(1_000_000_000),
            aware,
        ));
    }
    // A datetime (or pandas Timestamp): read its fields and do the arithmetic here;
    // converting through Python (astimezone, replace) cost 15 µs a value.
    if obj.hasattr(intern!(py, "hour"))? && obj.hasattr(intern!(py, "year"))? {
        let field = |name: &Bound<'_, PyString>| -> PyResult<i64> { obj.getattr(name)?.extract() };
        let (y, mo, d) = (
            field(intern!(py, "year"))?,
            field(intern!(py, "month"))?,
            field(intern!(py, "day"))?,
        );
        let (h, mi, s) = (
            field(intern!(py, "hour"))?,
            field(intern!(py, "minute"))?,
            field(intern!(py, "second"))?,
        );
        let mut nanos = field(intern!(py, "microsecond"))? * 1000;
        if let Ok(ns) = obj.getattr(intern!(py, "nanosecond")) {
            nanos += ns.extract::<i64>()?;
        }
        let offset = obj.call_method0(intern!(py, "utcoffset"))?;
        let (offset_seconds, aware) = if offset.is_none() {
            (0, false)
        } else {
            let days: i64 = offset.getattr(intern!(py, "days"))?.extract()?;
            let secs: i64 = offset.getattr(intern!(py, "seconds"))?.extract()?;
            (days * 86_400 + secs, true)
        };
        let t = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_seconds;
        return Ok(epoch_text(t, nanos, aware));
    }
    // A date, or a time (its offset, if any, kept as Python writes it).
    Ok(obj
        .call_method0(intern!(py, "isoformat"))?
        .str()?
        .to_string())
}

/// `seconds` since the epoch and `nanos` past them as ISO 8601, with `Z` if `utc`.
fn epoch_text(seconds: i64, nanos: i64, utc: bool) -> String {
    let (y, mo, d) = civil_from_days(seconds.div_euclid(86_400));
    let sod = seconds.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    push_fraction(&mut out, nanos);
    if utc {
        out.push('Z');
    }
    out
}

/// Appends `.ddd`, `.dddddd` or `.ddddddddd` for `nanos` (nothing for 0).
fn push_fraction(out: &mut String, nanos: i64) {
    if nanos == 0 {
        return;
    }
    let digits = format!("{nanos:09}");
    let keep = match digits.trim_end_matches('0').len() {
        0..=3 => 3,
        4..=6 => 6,
        _ => 9,
    };
    out.push('.');
    out.push_str(&digits[..keep]);
}

/// One row: a dict's items, in order.
pub type Row = Value;

/// The rows of a Python iterator, as an iterator the library can read on its own thread.
/// A Python exception while iterating (or a value that cannot be stored) cancels the
/// load and is kept in `failed`, to be raised once the load has stopped.
pub struct Rows {
    iter: Py<PyAny>,
    buffer: std::vec::IntoIter<Row>,
    done: bool,
    progress: Arc<Progress>,
    failed: Arc<std::sync::Mutex<Option<PyErr>>>,
    /// Rows taken so far.
    taken: u64,
}

impl Rows {
    pub fn new(
        iter: Py<PyAny>,
        progress: Arc<Progress>,
        failed: Arc<std::sync::Mutex<Option<PyErr>>>,
    ) -> Rows {
        Rows {
            iter,
            buffer: Vec::new().into_iter(),
            done: false,
            progress,
            failed,
            taken: 0,
        }
    }

    fn refill(&mut self) {
        let taken: PyResult<Vec<Row>> = Python::attach(|py| {
            let iter = self.iter.bind(py);
            let mut rows = Vec::with_capacity(CHUNK);
            for _ in 0..CHUNK {
                let Some(item) = iter.call_method0("__next__").map(Some).or_else(|e| {
                    if e.is_instance_of::<pyo3::exceptions::PyStopIteration>(py) {
                        Ok(None)
                    } else {
                        Err(e)
                    }
                })?
                else {
                    self.done = true;
                    break;
                };
                let dict = item.cast::<PyDict>().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err(format!(
                        "expected a dict per row, found {}",
                        item.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })?;
                let row = value(dict.as_any(), 0).map_err(|e| {
                    let n = self.taken + rows.len() as u64 + 1;
                    let message = format!("row {n}: {}", e.value(py));
                    if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
                        pyo3::exceptions::PyTypeError::new_err(message)
                    } else {
                        pyo3::exceptions::PyValueError::new_err(message)
                    }
                })?;
                rows.push(row);
            }
            Ok(rows)
        });
        match taken {
            Ok(rows) => {
                self.taken += rows.len() as u64;
                self.buffer = rows.into_iter();
            }
            Err(e) => {
                // The load must not commit the rows before the failure: it is stopped
                // as if cancelled, and the caller raises this error instead.
                self.done = true;
                *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                self.progress.cancel();
            }
        }
    }
}

impl Iterator for Rows {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        loop {
            if let Some(row) = self.buffer.next() {
                return Some(row);
            }
            if self.done || self.progress.is_cancelled() {
                return None;
            }
            self.refill();
        }
    }
}

/// Rows a load samples to type its columns ([`liteload::ReadOptions::sample_rows`]).
const SAMPLE_ROWS: usize = 10_000;

/// One object column of a pandas frame that Arrow cannot hold (values of mixed types),
/// as the text a TEXT column stores for each value when the frame's rows go in as
/// dicts: so that the rest of the frame can still go through Arrow, and this column
/// alone is converted here. `None` (each value then needs its own type, and the frame
/// goes row by row) when the column would not be TEXT: bytes among its values (a BLOB
/// column keeps every value's type), or no text among the sampled rows (a numeric
/// column, whose later text would be a mismatch stored as it is).
#[pyfunction]
pub fn column_text(values: Vec<Bound<'_, PyAny>>) -> PyResult<Option<Vec<Option<String>>>> {
    let values = values
        .iter()
        .map(|v| value(v, 0))
        .collect::<PyResult<Vec<_>>>()?;
    let texty = |v: &Value| match v {
        Value::Text(_) | Value::Map(_) => true,
        Value::List(items) => !items.is_empty(),
        _ => false,
    };
    if values.iter().any(|v| matches!(v, Value::Bytes(_)))
        || !values.iter().take(SAMPLE_ROWS).any(texty)
    {
        return Ok(None);
    }
    // As a TEXT column stores each (liteload::source::convert::push_scalar): integers
    // and reals as their JSON text, booleans as 1/0, nested values as JSON.
    let text = |v: Value| -> PyResult<Option<String>> {
        Ok(match v {
            Value::Null => None,
            Value::Bool(b) => Some(if b { "1" } else { "0" }.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => serde_json::Number::from_f64(f).map(|n| n.to_string()),
            Value::Text(s) => Some(s),
            Value::Bytes(_) => unreachable!("columns with bytes are refused above"),
            nested @ (Value::List(_) | Value::Map(_)) => Some(
                serde_json::to_string(&nested)
                    .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?,
            ),
        })
    };
    values
        .into_iter()
        .map(text)
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}
