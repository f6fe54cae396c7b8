//! Errors: every input error carries the position of the bad byte.
//!
//! The message format is the one compilers use, so editors can jump to it:
//! `orders.csv:1042:17: record 1041, field 3 "price": expected …, found …`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where in the input something happened. Lines and columns count from 1; `column` is
/// a byte column within the line (the column of the first byte of the field); `record`
/// counts data records from 1 (the header is not a record).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// The input's name as the user gave it (`-` is shown as `<stdin>`).
    pub path: Arc<str>,
    pub line: u64,
    pub column: u64,
    pub record: u64,
    /// Byte offset of the start of the record in the (decoded) input.
    pub byte: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path, self.line, self.column)
    }
}

/// The error type of the library. It is boxed so that `Result<T, Error>` stays one word.
#[derive(Debug)]
pub struct Error(Box<ErrorKind>);

/// What went wrong. New kinds may be added, so match with a wildcard arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not what was expected at `pos`. `field` names the column when known.
    Input {
        pos: Position,
        field: Option<(usize, String)>,
        message: String,
    },
    /// Reading or writing a file failed.
    Io {
        path: Option<PathBuf>,
        source: std::io::Error,
    },
    /// SQLite refused a statement. `context` says what liteload was doing.
    Sqlite {
        context: String,
        source: rusqlite::Error,
    },
    /// The options and the data (or the existing database) do not fit together; the
    /// message names the flag that would fix it when there is one.
    Plan(String),
    /// More bad records than `--max-errors` allowed. The last one is `last`.
    TooManyErrors { limit: u64, last: Box<Error> },
}

impl Error {
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    pub fn input(
        pos: Position,
        field: Option<(usize, String)>,
        message: impl Into<String>,
    ) -> Self {
        Error(Box::new(ErrorKind::Input {
            pos,
            field,
            message: message.into(),
        }))
    }

    pub fn io(path: Option<PathBuf>, source: std::io::Error) -> Self {
        Error(Box::new(ErrorKind::Io { path, source }))
    }

    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Self {
        Error(Box::new(ErrorKind::Sqlite {
            context: context.into(),
            source,
        }))
    }

    pub fn plan(message: impl Into<String>) -> Self {
        Error(Box::new(ErrorKind::Plan(message.into())))
    }

    pub fn too_many(limit: u64, last: Error) -> Self {
        Error(Box::new(ErrorKind::TooManyErrors {
            limit,
            last: Box::new(last),
        }))
    }

    /// Names `file` in an SQLite or I/O error that does not name a file yet (a full disk
    /// while inserting, say), so every such message says which database it was.
    pub fn in_file(mut self, file: &std::path::Path) -> Self {
        let shown = file.display().to_string();
        match &mut *self.0 {
            ErrorKind::Sqlite { context, .. } if !context.contains(&shown) => {
                *context = format!("{shown}: {context}");
            }
            ErrorKind::Io { path: p @ None, .. } => *p = Some(file.to_path_buf()),
            _ => {}
        }
        self
    }

    /// The input position, for errors about the input.
    pub fn position(&self) -> Option<&Position> {
        match &*self.0 {
            ErrorKind::Input { pos, .. } => Some(pos),
            ErrorKind::TooManyErrors { last, .. } => last.position(),
            _ => None,
        }
    }

    /// Whether this is a bad record that `--rejects`/`--max-errors` may skip.
    pub fn is_bad_record(&self) -> bool {
        matches!(&*self.0, ErrorKind::Input { .. })
    }

    /// The reason alone, without the position prefix (for reject logs).
    pub fn reason(&self) -> String {
        match &*self.0 {
            ErrorKind::Input { field, message, .. } => match field {
                Some((i, name)) => format!("field {} {:?}: {}", i + 1, name, message),
                None => message.clone(),
            },
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            ErrorKind::Input {
                pos,
                field,
                message,
            } => {
                write!(f, "{pos}: ")?;
                if pos.record > 0 {
                    write!(f, "record {}", pos.record)?;
                    if field.is_some() {
                        write!(f, ", ")?;
                    } else {
                        write!(f, ": ")?;
                    }
                }
                if let Some((i, name)) = field {
                    write!(f, "field {} {:?}: ", i + 1, name)?;
                }
                write!(f, "{message}")
            }
            ErrorKind::Io {
                path: Some(p),
                source,
            } => write!(f, "{}: {}", p.display(), source),
            ErrorKind::Io { path: None, source } => write!(f, "{source}"),
            ErrorKind::Sqlite { context, source } => write!(f, "{context}: {source}"),
            ErrorKind::Plan(m) => write!(f, "{m}"),
            ErrorKind::TooManyErrors { limit, last } => {
                write!(
                    f,
                    "{last}\nstopped: more than {limit} bad records (--max-errors {limit})"
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.0 {
            ErrorKind::Io { source, .. } => Some(source),
            ErrorKind::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_error_reads_like_a_compiler_message() {
        let pos = Position {
            path: "orders.csv".into(),
            line: 1042,
            column: 17,
            record: 1041,
            byte: 0,
        };
        let e = Error::input(pos, Some((2, "price".into())), "expected 4 fields, found 3");
        assert_eq!(
            e.to_string(),
            "orders.csv:1042:17: record 1041, field 3 \"price\": expected 4 fields, found 3"
        );
        assert!(e.is_bad_record());
    }
}
