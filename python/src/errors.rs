//! The library's errors as Python exceptions, worded in the package's keyword arguments.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use liteload::{ErrorKind, Hint};

create_exception!(
    liteload,
    Error,
    PyException,
    "The base of liteload's own errors."
);
create_exception!(
    liteload,
    BadInput,
    Error,
    "The input is not what was expected: `.path`, `.line`, `.column` (from 1; 0 when not \
     known) and `.record` (the record's number, from 1) say where, `.field` names the \
     column when known."
);

/// `UsageError(Error, ValueError)`: a bad value or options that do not fit is a
/// `ValueError` to Python, as pandas raises for its own (a table that exists already,
/// an unknown `if_exists`). Two bases, which `create_exception!` cannot give, so the
/// class is made by calling `type`, once.
static USAGE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `SchemaError(UsageError)`.
static SCHEMA_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn class<'py>(
    py: Python<'py>,
    name: &str,
    bases: Bound<'py, PyTuple>,
    doc: &str,
) -> PyResult<Py<PyType>> {
    let body = PyDict::new(py);
    body.set_item("__doc__", doc)?;
    body.set_item("__module__", "liteload")?;
    Ok(py
        .get_type::<PyType>()
        .call1((name, bases, body))?
        .cast_into::<PyType>()?
        .unbind())
}

/// The class `UsageError`.
pub fn usage_type(py: Python<'_>) -> &Bound<'_, PyType> {
    USAGE_ERROR
        .get_or_init(py, || {
            let bases = PyTuple::new(py, [py.get_type::<Error>(), py.get_type::<PyValueError>()])
                .expect("a tuple of two classes");
            class(
                py,
                "UsageError",
                bases,
                "The options do not fit together, or do not fit the data or the database \
                 (also a bad value of a keyword argument: it is a ValueError). Nothing was \
                 written.",
            )
            .expect("type() makes a subclass of two exception classes")
        })
        .bind(py)
}

/// The class `SchemaError`.
pub fn schema_type(py: Python<'_>) -> &Bound<'_, PyType> {
    SCHEMA_ERROR
        .get_or_init(py, || {
            let bases = PyTuple::new(py, [usage_type(py).clone()]).expect("a tuple of a class");
            class(
                py,
                "SchemaError",
                bases,
                "The database does not fit the load: a table exists already or is a view, \
                 lacks a column the input has, or would pass SQLite's limits. Nothing was \
                 written.",
            )
            .expect("type() makes a subclass of an exception class")
        })
        .bind(py)
}

/// A `UsageError` (a `ValueError` too) saying `message`.
pub fn usage(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| PyErr::from_type(usage_type(py).clone(), message))
}
create_exception!(
    liteload,
    ConstraintError,
    BadInput,
    "SQLite refused a row for its contents (UNIQUE, NOT NULL, CHECK, FOREIGN KEY, a \
     STRICT column's type, a value too big): `.code` is SQLite's extended result code \
     (2067 for UNIQUE; None when not known), and the position attributes say which \
     row (0 and None when the refusal is not about one row)."
);
create_exception!(
    liteload,
    SqliteError,
    Error,
    "SQLite refused a statement; the message says what liteload was doing."
);

/// A library hint worded as the keyword argument that does it.
pub fn keyword_hint(h: Hint) -> String {
    match h {
        Hint::Encoding => " (name the file's encoding, e.g. encoding='latin1')".into(),
        Hint::NotText => " (is this a binary file or UTF-16? see encoding=)".into(),
        Hint::Ragged => " (pass ragged='pad' or ragged='truncate' to accept such rows)".into(),
        Hint::RecordLimit => " (an unbalanced quote? raise max_record_bytes=)".into(),
        Hint::LineLimit => " (raise max_line_bytes=)".into(),
        Hint::JsonLines => " (for one object per line pass format='ndjson')".into(),
        Hint::SqliteEngine => "; pass engine='sqlite'".into(),
        Hint::Alter => "; pass alter=True to add it".into(),
        Hint::Append => " (leave durability unset to append in one transaction)".into(),
        Hint::Format => "; name it with format= (csv, tsv, ndjson, json, parquet, arrow)".into(),
        Hint::Table => "; name the table with table=".into(),
        Hint::OtherTable => {
            "; load into another table, or pass if_exists='append' or 'replace'".into()
        }
        Hint::MaxErrors(n) => format!(" (max_errors={n})"),
        Hint::Delimiter(d) => format!(
            " (the file looks {}-separated: pass delimiter={})",
            liteload::source::sniff::shown(d),
            liteload::source::sniff::shown(d)
        ),
        other => other.text(),
    }
}

/// The Python exception for an error of a job or of its options.
pub fn to_py(e: anyhow::Error) -> PyErr {
    if let Some(le) = e.downcast_ref::<liteload::Error>() {
        return library_error(le);
    }
    Error::new_err(format!("{e:#}"))
}

/// The Python exception for one of the library's errors.
pub fn library_error(e: &liteload::Error) -> PyErr {
    let message = e.display_with(&keyword_hint);
    match e.kind() {
        ErrorKind::Input { .. }
        | ErrorKind::TooManyErrors { .. }
        | ErrorKind::Constraint { .. } => {
            let code = match e.kind() {
                ErrorKind::Constraint { code, .. } => Some(*code),
                ErrorKind::TooManyErrors { last, .. } => match last.kind() {
                    ErrorKind::Constraint { code, .. } => Some(*code),
                    _ => None,
                },
                _ => None,
            };
            let err = match code {
                Some(_) => ConstraintError::new_err(message),
                None => BadInput::new_err(message),
            };
            Python::attach(|py| {
                let value = err.value(py);
                let pos = e.position();
                let field = match e.kind() {
                    ErrorKind::Input { field, .. } => field.as_ref().map(|(_, n)| n.clone()),
                    ErrorKind::TooManyErrors { last, .. } => match last.kind() {
                        ErrorKind::Input { field, .. } => field.as_ref().map(|(_, n)| n.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                // Setting attributes on a fresh exception instance cannot fail but for
                // memory, which Python reports itself.
                let _ = value.setattr("path", pos.map(|p| p.path.to_string()));
                let _ = value.setattr("line", pos.map_or(0, |p| p.line));
                let _ = value.setattr("column", pos.map_or(0, |p| p.column));
                let _ = value.setattr("record", pos.map_or(0, |p| p.record));
                let _ = value.setattr("field", field);
                if let Some(code) = code {
                    let _ = value.setattr("code", code);
                }
            });
            err
        }
        ErrorKind::Usage(_) => usage(message),
        ErrorKind::Schema(_) => {
            Python::attach(|py| PyErr::from_type(schema_type(py).clone(), message))
        }
        ErrorKind::Io { path, source } => {
            let file = path.as_ref().map(|p| p.display().to_string());
            match source.raw_os_error() {
                // OSError(errno, message, filename) becomes FileNotFoundError and the like.
                Some(errno) => PyOSError::new_err((errno, message, file)),
                None => PyOSError::new_err(message),
            }
        }
        ErrorKind::Sqlite { .. } => SqliteError::new_err(message),
        // A database server that could not be reached, refused the login or failed
        // during the copy: an OSError, as a failed socket is in Python.
        ErrorKind::Database { .. } => pyo3::exceptions::PyConnectionError::new_err(message),
        ErrorKind::Interrupted => PyKeyboardInterrupt::new_err(message),
        _ => Error::new_err(message),
    }
}
