//! Arrow data from Python through the Arrow PyCapsule interface: any object with
//! `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader, a polars DataFrame, a
//! pandas DataFrame, a DuckDB relation, …) hands over a C stream of record batches,
//! which arrow-rs reads without copying.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use liteload::arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};

/// Whether `obj` speaks the Arrow C stream interface.
pub fn is_stream(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.hasattr("__arrow_c_stream__")
}

/// The record batches of `obj`, read on any thread.
pub fn stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err("__arrow_c_stream__ returned something other than a PyCapsule")
    })?;
    // The name check is what makes the pointer's type known.
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?;
    let raw = ptr.as_ptr().cast::<FFI_ArrowArrayStream>();
    // SAFETY: a capsule named "arrow_array_stream" holds a valid, initialised
    // `struct ArrowArrayStream` (the Arrow PyCapsule interface), which stays alive while
    // `capsule` does, here. `from_raw` moves the stream out and leaves a released one
    // behind, so the capsule's destructor (which releases only a stream that is not
    // released yet) does not release it a second time, and the reader owns it alone.
    let reader = unsafe { RecordBatchStreamReader::from_raw(raw) };
    reader.map_err(|e| PyTypeError::new_err(format!("reading the Arrow stream's schema: {e}")))
}
