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
    /// The line, from 1.
    pub line: u64,
    /// The byte column within the line, from 1.
    pub column: u64,
    /// The data record, from 1 (0 when the error is not about one record).
    pub record: u64,
    /// Byte offset of the start of the record in the (decoded) input.
    pub byte: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            // Input without lines (Parquet, Arrow): the record says where.
            write!(f, "{}", self.path)
        } else {
            write!(f, "{}:{}:{}", self.path, self.line, self.column)
        }
    }
}

/// SQLite's extended result code for a UNIQUE constraint (`SQLITE_CONSTRAINT_UNIQUE`).
pub(crate) const UNIQUE: i32 = 2067;

/// SQLite's extended result code in `e`, if SQLite gave one.
pub(crate) fn extended_code(e: &rusqlite::Error) -> Option<i32> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

/// The error type of the library. It is boxed so that `Result<T, Error>` stays one word.
///
/// Its message names no option of any front end: where a setting would fix the problem,
/// the error carries a [`Hint`], which `Display` words in terms of this library's
/// options and a front end (the `liteload` command, say) may word in its own with
/// [`Error::display_with`].
#[derive(Debug)]
pub struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    hint: Option<Hint>,
}

/// A setting that would get past an error. Front ends word it in their own terms (a
/// command-line flag, a keyword argument); [`Hint::text`] words it in this library's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// Name the input's text encoding ([`crate::ReadOptions::encoding`]).
    Encoding,
    /// The input holds NUL bytes: binary, or UTF-16 read as UTF-8 (name its encoding).
    NotText,
    /// Accept records with too few or too many fields ([`crate::Ragged`]).
    Ragged,
    /// A record over the length limit: an unbalanced quote, or raise
    /// [`crate::ReadOptions::max_record_bytes`].
    RecordLimit,
    /// A line over an ingest feed's length limit ([`crate::ingest::feed::FeedOptions`]).
    LineLimit,
    /// The input is one JSON object per line ([`crate::Format::Ndjson`]).
    JsonLines,
    /// SQLite's insert path can do this where the page writer cannot ([`crate::Engine::Sqlite`]).
    SqliteEngine,
    /// Allow columns to be added to an existing table ([`crate::ImportOptions::alter`]).
    Alter,
    /// Leave the durability unset to add to an existing file in one transaction.
    Append,
    /// Name the input's format ([`crate::ImportOptions::format`]).
    Format,
    /// Name the table ([`crate::ImportOptions::table`]).
    Table,
    /// Load into another table.
    OtherTable,
    /// A file is in the way: allow overwriting it.
    Overwrite,
    /// More bad records than the allowed number, which is this ([`crate::ImportOptions::max_errors`]).
    MaxErrors(u64),
    /// Records differ in width, and this delimiter makes every sampled record the same
    /// width ([`crate::ImportOptions::delimiter`]).
    Delimiter(u8),
}

impl Hint {
    /// The hint as a suffix of the message it belongs to (with its separator), in terms
    /// of this library's options.
    pub fn text(self) -> String {
        match self {
            Hint::Encoding => {
                " (name the input's encoding in ReadOptions::encoding, e.g. Latin1)".into()
            }
            Hint::NotText => " (is this a binary file or UTF-16? see ReadOptions::encoding)".into(),
            Hint::Ragged => {
                " (set ReadOptions::ragged to Pad or Truncate to accept such rows)".into()
            }
            Hint::Delimiter(d) => format!(
                " (the input looks {}-separated: set ImportOptions::delimiter to it)",
                shown(d)
            ),
            Hint::RecordLimit => {
                " (an unbalanced quote? raise ReadOptions::max_record_bytes)".into()
            }
            Hint::LineLimit => " (raise the line limit, FeedOptions::max_line_bytes)".into(),
            Hint::JsonLines => " (for one object per line use Format::Ndjson)".into(),
            Hint::SqliteEngine => "; use Engine::Sqlite".into(),
            Hint::Alter => "; set ImportOptions::alter to add it".into(),
            Hint::Append => " (leave the durability unset to append in one transaction)".into(),
            Hint::Format => "; name it in ImportOptions::format".into(),
            Hint::Table => "; name the table in ImportOptions::table".into(),
            Hint::OtherTable => "; load into another table".into(),
            Hint::Overwrite => "; allow overwriting to replace it".into(),
            Hint::MaxErrors(n) => format!(" (ImportOptions::max_errors is {n})"),
        }
    }
}

/// What went wrong. New kinds may be added, so match with a wildcard arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input is not what was expected at `pos`. `field` names the column when known.
    Input {
        /// Where.
        pos: Position,
        /// The field's index (from 0) and name, when known.
        field: Option<(usize, String)>,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed. A full disk is this kind, with
    /// [`std::io::ErrorKind::StorageFull`], whether the file system or SQLite saw it.
    Io {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The system's error.
        source: std::io::Error,
    },
    /// SQLite refused a statement. `context` says what liteload was doing.
    Sqlite {
        /// What liteload was doing.
        context: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// Bad usage: options that contradict each other, or that do not fit the data or the
    /// writer (the page writer and a primary key, say). [`Error::hint`] names the setting
    /// that would fix it when there is one. Nothing was written.
    Usage(String),
    /// The database does not fit the load: a table exists already or is a view, lacks a
    /// column the input has, or would pass SQLite's limits. Nothing was written.
    Schema(String),
    /// SQLite refused a row for its contents: a constraint (UNIQUE, NOT NULL, CHECK,
    /// FOREIGN KEY, a STRICT column's type) or a value over SQLite's limits. A load that
    /// tolerates bad records skips such a row like a bad record.
    Constraint {
        /// SQLite's extended result code (`SQLITE_CONSTRAINT_UNIQUE` is 2067), when the
        /// writer reports it (an rqlite cluster answers with the message alone: the code
        /// is then read from it where it names a constraint).
        code: Option<i32>,
        /// The row's place in its input; `None` for a key that an index built after the
        /// rows finds twice.
        pos: Option<Position>,
        /// SQLite's message.
        message: String,
    },
    /// A bug in liteload: a worker thread panicked or stopped early. Please report it.
    Internal(String),
    /// More bad records than allowed. The last one is `last`.
    TooManyErrors {
        /// The number allowed.
        limit: u64,
        /// The bad record past it.
        last: Box<Error>,
    },
    /// The caller stopped the work ([`crate::Progress::cancel`]); the target is as it was.
    Interrupted,
    /// An rqlite cluster ([`crate::rqlite`]) could not be reached, refused the
    /// credentials, or answered with an error that is not about one row.
    Cluster {
        /// The node asked last (`host:port`), never with credentials.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// A database server that rows are read from (PostgreSQL, see [`crate::postgres`])
    /// could not be reached, refused the credentials, or failed during the copy.
    Database {
        /// The server and database (PostgreSQL's `host:port/dbname`, a MySQL URI),
        /// never with a password.
        server: String,
        /// What went wrong, with what the server said.
        message: String,
    },
    /// A feed server that ingest follows ([`crate::ingest::connect`]) failed the TLS
    /// handshake, or kept closing connections without sending a message (it refused
    /// the credentials, say): retrying would not help.
    Peer {
        /// The server (`host:port`).
        peer: String,
        /// What went wrong, with what the server answered when it said anything.
        message: String,
    },
}

impl Error {
    fn new(kind: ErrorKind) -> Self {
        Error(Box::new(Inner { kind, hint: None }))
    }

    /// What went wrong: bad input, bad usage, a database that does not fit, a refused
    /// row, I/O, SQLite, a cluster, a bug, or interrupted.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The setting that would get past this error, if one would.
    pub fn hint(&self) -> Option<Hint> {
        match &self.0.kind {
            ErrorKind::TooManyErrors { limit, .. } => Some(Hint::MaxErrors(*limit)),
            _ => self.0.hint,
        }
    }

    /// This error with `hint` (`None` keeps the one it has).
    pub fn with_hint(mut self, hint: impl Into<Option<Hint>>) -> Self {
        if let Some(h) = hint.into() {
            self.0.hint = Some(h);
        }
        self
    }

    /// The caller stopped the work.
    pub fn interrupted() -> Self {
        Error::new(ErrorKind::Interrupted)
    }

    /// Whether the caller stopped the work.
    pub fn is_interrupted(&self) -> bool {
        matches!(self.0.kind, ErrorKind::Interrupted)
    }

    /// Bad input at `pos`, in field `field` (index from 0 and name) when known.
    pub fn input(
        pos: Position,
        field: Option<(usize, String)>,
        message: impl Into<String>,
    ) -> Self {
        Error::new(ErrorKind::Input {
            pos,
            field,
            message: message.into(),
        })
    }

    /// Reading or writing `path` (when known) failed. A read that failed because a
    /// gzip input is corrupt or cut short is bad input instead, naming the input; one
    /// refused because the load was cancelled is [`ErrorKind::Interrupted`].
    pub fn io(path: Option<PathBuf>, source: std::io::Error) -> Self {
        if source.get_ref().is_some_and(|e| e.is::<Cancelled>()) {
            return Error::interrupted();
        }
        let bad_gzip = source.get_ref().and_then(|e| e.downcast_ref::<BadGzip>());
        if let Some(bad) = bad_gzip {
            let pos = Position {
                path: bad.name.clone(),
                ..Position::default()
            };
            return Error::input(
                pos,
                None,
                format!("not a whole gzip stream: {}", bad.message),
            );
        }
        Error::new(ErrorKind::Io { path, source })
    }

    /// SQLite refused something while liteload was doing `context`. A full disk
    /// (`SQLITE_FULL`) becomes an I/O error, as the file system's own would be.
    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Self {
        let context = context.into();
        // Only a cancelled load interrupts liteload's statements (crate::cancel).
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            return Error::interrupted();
        }
        if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            let full = std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!("{context}: {source}"),
            );
            return Error::io(None, full);
        }
        Error::new(ErrorKind::Sqlite { context, source })
    }

    /// The rqlite node at `node` could not be reached or answered with an error.
    pub fn cluster(node: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Cluster {
            node: node.into(),
            message: message.into(),
        })
    }

    /// A database server that rows are read from failed (see [`ErrorKind::Database`]).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn database(server: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Database {
            server: server.into(),
            message: message.into(),
        })
    }

    /// A feed server that will not serve (see [`ErrorKind::Peer`]).
    #[cfg_attr(not(feature = "network"), allow(dead_code))]
    pub(crate) fn peer(peer: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Peer {
            peer: peer.into(),
            message: message.into(),
        })
    }

    /// Bad usage: options that contradict each other or do not fit the data.
    pub fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage(message.into()))
    }

    /// The database does not fit the load.
    pub fn schema(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Schema(message.into()))
    }

    /// SQLite refused a row: `code` is its extended result code, `pos` the row's place.
    pub fn constraint(
        code: Option<i32>,
        pos: Option<Position>,
        message: impl Into<String>,
    ) -> Self {
        Error::new(ErrorKind::Constraint {
            code,
            pos,
            message: message.into(),
        })
    }

    /// A row refused by SQLite (`e`), at `pos`.
    pub(crate) fn refused_row(pos: Option<Position>, e: &rusqlite::Error) -> Self {
        Error::constraint(extended_code(e), pos, e.to_string())
    }

    /// A bug: `message` says what broke.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal(message.into()))
    }

    /// More bad records than `limit`; `last` is the one past it.
    pub fn too_many(limit: u64, last: Error) -> Self {
        Error::new(ErrorKind::TooManyErrors {
            limit,
            last: Box::new(last),
        })
    }

    /// Names `file` in an SQLite or I/O error that does not name a file yet (a full disk
    /// while inserting, say), so every such message says which database it was.
    pub fn in_file(mut self, file: &std::path::Path) -> Self {
        let shown = file.display().to_string();
        match &mut self.0.kind {
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
        match &self.0.kind {
            ErrorKind::Input { pos, .. } => Some(pos),
            ErrorKind::Constraint { pos, .. } => pos.as_ref(),
            ErrorKind::TooManyErrors { last, .. } => last.position(),
            _ => None,
        }
    }

    /// Whether this is a bad record (bad input, or a row SQLite refused), which a load
    /// that tolerates bad records may skip.
    pub fn is_bad_record(&self) -> bool {
        matches!(
            &self.0.kind,
            ErrorKind::Input { .. } | ErrorKind::Constraint { pos: Some(_), .. }
        )
    }

    /// The reason alone, without the position prefix (for reject logs).
    pub fn reason(&self) -> String {
        match &self.0.kind {
            ErrorKind::Input { field, message, .. } => match field {
                Some((i, name)) => format!("field {} {:?}: {}", i + 1, name, message),
                None => message.clone(),
            },
            ErrorKind::Constraint {
                pos: Some(_),
                message,
                ..
            } => format!("SQLite refused the row: {message}"),
            _ => self.to_string(),
        }
    }
}

impl Error {
    /// The message, with each hint worded by `hint` (a front end's own terms) instead
    /// of [`Hint::text`].
    pub fn display_with(&self, hint: &dyn Fn(Hint) -> String) -> String {
        let mut out = String::new();
        self.write(&mut out, hint).expect("writing to a String");
        out
    }

    fn write(&self, f: &mut dyn fmt::Write, hint: &dyn Fn(Hint) -> String) -> fmt::Result {
        match &self.0.kind {
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
                write!(f, "{message}")?;
            }
            ErrorKind::Io {
                path: Some(p),
                source,
            } => write!(f, "{}: {}", p.display(), source)?,
            ErrorKind::Io { path: None, source } => write!(f, "{source}")?,
            ErrorKind::Sqlite { context, source } => write!(f, "{context}: {source}")?,
            ErrorKind::Usage(m) | ErrorKind::Schema(m) => write!(f, "{m}")?,
            ErrorKind::Constraint {
                pos: None, message, ..
            } => write!(f, "{message}")?,
            ErrorKind::Constraint {
                pos: Some(pos),
                message,
                ..
            } => {
                write!(f, "{pos}: ")?;
                if pos.record > 0 {
                    write!(f, "record {}: ", pos.record)?;
                }
                write!(f, "SQLite refused the row: {message}")?;
            }
            ErrorKind::Internal(m) => write!(f, "{m} (a bug in liteload: please report it)")?,
            ErrorKind::TooManyErrors { limit, last } => {
                last.write(f, hint)?;
                write!(f, "\nstopped: more than {limit} bad records")?;
            }
            ErrorKind::Interrupted => write!(f, "stopped before the end; nothing was changed")?,
            ErrorKind::Cluster { node, message } => write!(f, "rqlite node {node}: {message}")?,
            ErrorKind::Peer { peer, message } => write!(f, "feed server {peer}: {message}")?,
            // A MySQL server is shown by its URI (scheme and all); PostgreSQL's by
            // `host:port/dbname`.
            ErrorKind::Database { server, message } if server.contains("://") => {
                write!(f, "{server}: {message}")?
            }
            ErrorKind::Database { server, message } => write!(f, "PostgreSQL {server}: {message}")?,
        }
        match self.hint() {
            Some(h) => write!(f, "{}", hint(h)),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &|h| h.text())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            ErrorKind::Io { source, .. } => Some(source),
            ErrorKind::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A byte as the user would type it.
pub fn shown(b: u8) -> String {
    match b {
        b'\t' => "'\\t'".into(),
        b => format!("'{}'", char::from(b)),
    }
}

/// Bytes that were to be gzip and are not (a corrupt or cut stream): the input is bad,
/// not the disk. Carried inside the `io::Error` of a read, and made an input error by
/// [`Error::io`], so it is reported (and exits) as bad input.
#[derive(Debug)]
pub(crate) struct BadGzip {
    /// The input's name.
    pub name: Arc<str>,
    /// What the decoder said.
    pub message: String,
}

impl std::fmt::Display for BadGzip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: not a whole gzip stream: {}",
            self.name, self.message
        )
    }
}

impl std::error::Error for BadGzip {}

/// A read refused because the load was cancelled; [`Error::io`] makes it
/// [`ErrorKind::Interrupted`].
#[derive(Debug)]
pub(crate) struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the load was cancelled")
    }
}

impl std::error::Error for Cancelled {}

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
