//! Bytes from Python objects for a job that reads them on its own thread: a file object
//! (binary or text) for `import_file`, an iterator of lines or dicts for `ingest`.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyIterator, PyMapping, PyString};

/// Where a Python exception raised by the caller's object waits to be raised again in
/// place of the job's error (the job stopped because of it).
pub type Failed = Arc<Mutex<Option<PyErr>>>;

/// How much one refill takes from Python (one `read(n)`, or lines up to about this).
const CHUNK: usize = 256 << 10;

/// A Python object that gives bytes a chunk at a time.
pub trait Chunks: Send {
    /// Appends the next chunk to `buf` (empty on entry), with the GIL held; returns
    /// false once the object has no more.
    fn next_chunk(&mut self, py: Python<'_>, buf: &mut Vec<u8>) -> PyResult<bool>;
}

/// [`Chunks`] as `std::io::Read`, taking the GIL for each refill only. An exception
/// from the object stops the read; it is kept in `failed`, and the read fails.
pub struct PyRead<C> {
    chunks: C,
    buf: Vec<u8>,
    at: usize,
    done: bool,
    failed: Failed,
    stop: Option<Arc<AtomicBool>>,
}

impl<C: Chunks> PyRead<C> {
    pub fn new(chunks: C, failed: Failed) -> Self {
        PyRead {
            chunks,
            buf: Vec::new(),
            at: 0,
            done: false,
            failed,
            stop: None,
        }
    }

    /// Ends the input (as if the object had no more) once `stop` is set.
    pub fn stopped_by(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }
}

impl<C: Chunks> Read for PyRead<C> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buf.len() {
            let stopped = self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed));
            if self.done || stopped {
                return Ok(0);
            }
            self.buf.clear();
            self.at = 0;
            match Python::attach(|py| self.chunks.next_chunk(py, &mut self.buf)) {
                Ok(more) => self.done = !more,
                Err(e) => {
                    self.done = true;
                    let message = e.to_string();
                    *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return Err(std::io::Error::other(message));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A file object's `read(n)`: bytes as they are, str as UTF-8 (a text file's own
/// decoding has run).
pub struct FileObject(Py<PyAny>);

impl FileObject {
    pub fn new(file: &Bound<'_, PyAny>) -> Self {
        FileObject(file.clone().unbind())
    }
}

impl Chunks for FileObject {
    fn next_chunk(&mut self, py: Python<'_>, buf: &mut Vec<u8>) -> PyResult<bool> {
        let chunk = self.0.bind(py).call_method1("read", (CHUNK,))?;
        if let Ok(b) = chunk.cast::<PyBytes>() {
            buf.extend_from_slice(b.as_bytes());
        } else if let Ok(s) = chunk.cast::<PyString>() {
            buf.extend_from_slice(s.to_cow()?.as_bytes());
        } else if let Ok(b) = chunk.cast::<PyByteArray>() {
            buf.extend_from_slice(&b.to_vec());
        } else if chunk.is_none() {
            // A non-blocking stream with nothing yet: read again a little later.
            py.detach(|| std::thread::sleep(std::time::Duration::from_millis(10)));
            return Ok(true);
        } else {
            return Err(PyTypeError::new_err(format!(
                "read() of the file object returned {}, not bytes or str",
                chunk.get_type().name()?
            )));
        }
        Ok(!buf.is_empty())
    }
}

/// Messages for ingest from an iterator of str, bytes or dicts (a dict is one JSON
/// object), one line each.
pub struct Messages {
    iter: Py<PyAny>,
    /// Items taken so far (for messages: the first is 1).
    count: u64,
}

impl Messages {
    pub fn new(iter: &Bound<'_, PyIterator>) -> Self {
        Messages {
            iter: iter.clone().into_any().unbind(),
            count: 0,
        }
    }
}

impl Chunks for Messages {
    fn next_chunk(&mut self, py: Python<'_>, buf: &mut Vec<u8>) -> PyResult<bool> {
        let iter = self.iter.bind(py);
        while buf.len() < CHUNK {
            let item = match iter.call_method0("__next__") {
                Ok(item) => item,
                Err(e) if e.is_instance_of::<PyStopIteration>(py) => return Ok(!buf.is_empty()),
                Err(e) => return Err(e),
            };
            self.count += 1;
            if let Ok(s) = item.cast::<PyString>() {
                buf.extend_from_slice(s.to_cow()?.as_bytes());
            } else if let Ok(b) = item.cast::<PyBytes>() {
                buf.extend_from_slice(b.as_bytes());
            } else if item.is_instance_of::<PyDict>() || item.cast::<PyMapping>().is_ok() {
                let value = crate::rows::value(&item, 0)?;
                serde_json::to_writer(&mut *buf, &value)
                    .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
            } else {
                return Err(PyTypeError::new_err(format!(
                    "ingest(): message {} is a {}, not a line (str or bytes) or a dict",
                    self.count,
                    item.get_type().name()?
                )));
            }
            buf.push(b'\n');
        }
        Ok(true)
    }
}
