//! What stops a JSON stream: a syntax or I/O error at its place.

use crate::error::Hint;

/// A syntax or I/O error a stream cannot continue after, at its line and column.
#[derive(Debug)]
pub struct Fatal {
    /// The line.
    pub line: u64,
    /// The byte column.
    pub column: u64,
    /// What is wrong.
    pub message: String,
    /// The setting that would help, if one would.
    pub hint: Option<Hint>,
    /// The error is in the document around the records (before their array or after
    /// it), so it has no record number.
    pub outside: bool,
}

impl Fatal {
    pub(super) fn new(line: u64, column: u64, message: impl Into<String>) -> Self {
        Fatal {
            line,
            column,
            message: message.into(),
            hint: None,
            outside: false,
        }
    }

    /// The error, as one in the document around the records.
    pub(super) fn outside(self) -> Self {
        Fatal {
            outside: true,
            ..self
        }
    }
}

/// serde_json's message without its " at line L column C" tail (the reader gives its
/// own position).
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
