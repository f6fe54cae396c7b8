//! `liteload.KvStore`: the library's blob store, with Python's mapping protocol.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyMemoryView, PyString};

use liteload::kv::{Key, KvOptions};
use liteload::Durability;

use crate::errors::library_error;

/// A blob store in one SQLite file: keys are integers or strings, values bytes.
/// Every write commits on its own unless made with `put_many`.
#[pyclass(module = "liteload", subclass)]
pub struct KvStore {
    /// `None` once closed. A mutex because a connection may be used by one thread at a
    /// time; Python objects may be shared between threads.
    store: Mutex<Option<liteload::kv::KvStore>>,
    path: PathBuf,
    /// The descriptors the store holds, counted as the package's own (see
    /// [`crate::same_file`]) until it is closed.
    held: Mutex<Option<crate::same_file::Held>>,
}

fn key(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    if obj.is_instance_of::<PyInt>() {
        return Ok(Key::Int(obj.extract()?));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Key::Text(s.to_cow()?.into_owned()));
    }
    Err(PyTypeError::new_err(format!(
        "a key is an int or a str, not {}",
        obj.get_type().name()?
    )))
}

/// A Python file-like object's `read(n)`, as `std::io::Read`.
struct PyReader<'a, 'py>(&'a Bound<'py, PyAny>);

impl Read for PyReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let chunk = self
            .0
            .call_method1("read", (buf.len(),))
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let bytes = chunk
            .cast::<PyBytes>()
            .map_err(|_| std::io::Error::other("read() returned something other than bytes"))?
            .as_bytes();
        if bytes.len() > buf.len() {
            return Err(std::io::Error::other("read(n) returned more than n bytes"));
        }
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(bytes.len())
    }
}

impl KvStore {
    fn with<T>(&self, f: impl FnOnce(&mut liteload::kv::KvStore) -> PyResult<T>) -> PyResult<T> {
        let mut guard = self.store.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_mut() {
            Some(store) => f(store),
            None => Err(PyValueError::new_err(format!(
                "the store {} is closed",
                self.path.display()
            ))),
        }
    }

    /// As [`KvStore::with`], for a write: refused while another SQLite in this process
    /// has the file open (see [`crate::same_file`]), which may have happened since the
    /// store was opened.
    fn writing<T>(&self, f: impl FnOnce(&mut liteload::kv::KvStore) -> PyResult<T>) -> PyResult<T> {
        self.with(|s| {
            let id = self
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .map(|h| h.id());
            if let Some(id) = id {
                crate::same_file::check_id(id, &self.path)?;
            }
            f(s)
        })
    }

    fn put_value(store: &liteload::kv::KvStore, k: &Key, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(b) = value.cast::<PyBytes>() {
            return store.put(k, b.as_bytes()).map_err(|e| library_error(&e));
        }
        if value.is_instance_of::<PyByteArray>() || value.is_instance_of::<PyMemoryView>() {
            // Copied once: a bytearray may change, and a memoryview may be of any shape;
            // bytes() gives its contents in order.
            let bytes = value.py().get_type::<PyBytes>().call1((value,))?;
            let bytes = bytes.cast::<PyBytes>()?;
            return store
                .put(k, bytes.as_bytes())
                .map_err(|e| library_error(&e));
        }
        if !value.hasattr("read")? {
            return Err(PyTypeError::new_err(format!(
                "a value is bytes-like (bytes, bytearray, memoryview) or a binary file-like object, not {}",
                value.get_type().name()?
            )));
        }
        // A seekable stream is copied in pieces with its length known up front; any
        // other is read whole first.
        let seekable = value
            .call_method0("seekable")
            .and_then(|s| s.extract::<bool>())
            .unwrap_or(false);
        if seekable {
            let start: u64 = value.call_method0("tell")?.extract()?;
            let end: u64 = value.call_method1("seek", (0, 2))?.extract()?;
            value.call_method1("seek", (start,))?;
            let len = end.saturating_sub(start);
            return store
                .put_reader(k, PyReader(value), len)
                .map_err(|e| library_error(&e));
        }
        let mut all = Vec::new();
        PyReader(value).read_to_end(&mut all)?;
        store.put(k, &all).map_err(|e| library_error(&e))
    }
}

#[pymethods]
impl KvStore {
    /// Opens the store at `path`, creating it if needed. `durability` is `balanced`
    /// (WAL, a crash loses no committed write), `durable` (also survives power loss) or
    /// `unsafe` (fastest; a crash can corrupt the file). `int_keys` makes a new store
    /// whose keys are ints only, each the row's rowid (write-up 001's layout); an
    /// existing store keeps the kind its file has.
    ///
    /// A file that holds other tables and no store is refused (`SchemaError`, the file
    /// unchanged) unless `create` is true: a store opened on the wrong database does
    /// not quietly add its table there.
    #[new]
    #[pyo3(signature = (path, *, durability = "balanced", mmap_size = 0, page_size = None, cache_size = None, int_keys = false, create = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: PathBuf,
        durability: &str,
        mmap_size: u64,
        page_size: Option<u32>,
        cache_size: Option<i64>,
        int_keys: bool,
        create: bool,
    ) -> PyResult<Self> {
        let mut opts = KvOptions::default();
        opts.durability = durability
            .parse::<Durability>()
            .map_err(|e| crate::errors::usage(format!("durability={durability:?}: {e}")))?;
        opts.mmap_size = mmap_size;
        opts.page_size = page_size;
        opts.cache_size = cache_size;
        opts.int_keys = int_keys;
        opts.beside_other_tables = create;
        let (store, held) = crate::same_file::Held::open(&path, || {
            liteload::kv::KvStore::open(&path, opts).map_err(|e| match e.kind() {
                liteload::ErrorKind::Schema(_) => {
                    crate::errors::library_error(&liteload::Error::schema(format!(
                        "{e} (pass create=True to add a store to it)"
                    )))
                }
                _ => library_error(&e),
            })
        })?;
        Ok(KvStore {
            store: Mutex::new(Some(store)),
            path,
            held: Mutex::new(held),
        })
    }

    /// The value under `key`, or `default` when there is none.
    #[pyo3(signature = (key, default = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = self::key(key)?;
        let got = self.with(|s| s.get(&k).map_err(|e| library_error(&e)))?;
        Ok(match got {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    /// Stores `value` (bytes, or a binary file-like object read to its end) under `key`,
    /// replacing any value there; all or nothing.
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = self::key(key)?;
        self.writing(|s| Self::put_value(s, &k, value))
    }

    /// Stores every `(key, value)` pair of `items` in one transaction: all or none.
    fn put_many(&self, items: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.writing(|s| {
            let mut failed: Option<PyErr> = None;
            let mut n = 0u64;
            let result = s.batch(|store| {
                for item in items.try_iter().map_err(|e| stash(&mut failed, e))? {
                    let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item
                        .and_then(|i| i.extract())
                        .map_err(|e| stash(&mut failed, e))?;
                    let k = self::key(&k).map_err(|e| stash(&mut failed, e))?;
                    Self::put_value(store, &k, &v).map_err(|e| stash(&mut failed, e))?;
                    n += 1;
                }
                Ok(())
            });
            match (result, failed) {
                (_, Some(e)) => Err(e),
                (Err(e), None) => Err(library_error(&e)),
                (Ok(()), None) => Ok(n),
            }
        })
    }

    /// Removes `key`; whether it was there.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = self::key(key)?;
        self.writing(|s| s.delete(&k).map_err(|e| library_error(&e)))
    }

    /// The keys, in key order (integers before strings), optionally only the string keys
    /// that start with `prefix`.
    #[pyo3(signature = (prefix = None))]
    fn keys<'py>(&self, py: Python<'py>, prefix: Option<&str>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let keys = self.with(|s| s.keys(prefix).map_err(|e| library_error(&e)))?;
        keys.into_iter()
            .map(|k| match k {
                Key::Int(i) => Ok(i.into_pyobject(py)?.into_any()),
                Key::Text(t) => Ok(t.into_pyobject(py)?.into_any()),
            })
            .collect()
    }

    /// Copies the value under `key` into the binary file-like object `out` in 64 KiB
    /// pieces (never whole in memory); whether there was one.
    fn read_into(&self, key: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = self::key(key)?;
        let py = out.py();
        self.with(|s| {
            let Some(mut blob) = s.open_reader(&k).map_err(|e| library_error(&e))? else {
                return Ok(false);
            };
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = blob.read(&mut buf)?;
                if n == 0 {
                    return Ok(true);
                }
                out.call_method1("write", (PyBytes::new(py, &buf[..n]),))?;
            }
        })
    }

    /// Closes the store; later calls raise ValueError.
    fn close(&self) {
        self.store.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.held.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _ty: Option<Bound<'_, PyAny>>,
        _value: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) {
        self.close();
    }

    fn __len__(&self) -> PyResult<usize> {
        let n = self.with(|s| s.len().map_err(|e| library_error(&e)))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = self::key(key)?;
        self.with(|s| s.contains(&k).map_err(|e| library_error(&e)))
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let k = self::key(key)?;
        match self.with(|s| s.get(&k).map_err(|e| library_error(&e)))? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value)
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.delete(key)? {
            Ok(())
        } else {
            Err(PyKeyError::new_err(key.clone().unbind()))
        }
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let keys = self.keys(py, None)?;
        Ok(pyo3::types::PyList::new(py, keys)?.try_iter()?.into_any())
    }

    fn __repr__(&self) -> String {
        format!("KvStore({:?})", self.path.display().to_string())
    }
}

/// Keeps the first Python error of a batch and gives the library an error that rolls
/// the batch back.
fn stash(slot: &mut Option<PyErr>, e: PyErr) -> liteload::Error {
    let message = e.to_string();
    slot.get_or_insert(e);
    liteload::Error::usage(message)
}
