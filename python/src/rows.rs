//! Python rows (an iterable of dicts, as sqlite-utils' `insert_all` takes) as the
//! library's serialized items. Rows are taken from the iterator a chunk at a time with
//! the GIL held and turned into owned values, so that the load's reading thread holds
//! the GIL only while it copies.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

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
    if obj.is_instance_of::<PyBytes>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "a bytes value in a dict row: store binary data from an Arrow table (a binary column becomes BLOB)",
        ));
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
    if obj.hasattr("isoformat")? {
        return Ok(Value::Text(iso_text(obj)?));
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
fn iso_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = obj.py();
    let mut obj = obj.clone();
    let mut zulu = false;
    let aware = obj.hasattr("astimezone")?
        && obj.hasattr("utcoffset")?
        && !obj.call_method0("utcoffset")?.is_none();
    if aware {
        let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("tzinfo", py.None())?;
        obj = obj
            .call_method1("astimezone", (utc,))?
            .call_method("replace", (), Some(&kwargs))?;
        zulu = true;
    }
    let text = obj.call_method0("isoformat")?.str()?.to_string();
    let mut out = match text.find('.') {
        Some(dot) => {
            let digits = text[dot + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let rest = &text[dot + 1 + digits..];
            let fraction = text[dot + 1..dot + 1 + digits].trim_end_matches('0');
            let mut s = text[..dot].to_string();
            if !fraction.is_empty() {
                let width = fraction.len().div_ceil(3) * 3;
                s.push('.');
                s.push_str(&format!("{fraction:0<width$}"));
            }
            s.push_str(rest);
            s
        }
        None => text,
    };
    if zulu {
        out.push('Z');
    }
    Ok(out)
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
