//! Opening an input: a file or stdin, gzip, text encodings, a UTF-8 byte-order mark.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::head::Compression;
use super::transcode::Transcode;
use super::Format;
use crate::error::{BadGzip, Cancelled, Error, Result};

/// One input: a file, stdin, a reader or bytes the program supplies, or the program's
/// own rows (see [`Input::serialized`] and [`Input::rows`]).
///
/// An input that is not a file has a *name*, which stands in for a file name: errors
/// point into it (`name:line:column`), and its extension gives the format, gzip and the
/// default table name as a file's would (`people.csv.gz`: gzip, CSV, table `people`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A file (gzip if its name ends in `.gz`).
    Path(PathBuf),
    /// Bytes from a reader, read once (a second load of the same input is refused).
    Reader(ReaderInput),
    /// Bytes in memory.
    Bytes {
        /// The name that stands in for a file name.
        name: String,
        /// The bytes.
        bytes: Arc<[u8]>,
    },
}

/// A reader, or the program's own values, given as an input with its name; see
/// [`Input::reader`] and [`Input::serialized`]. Read once.
#[derive(Clone)]
pub struct ReaderInput {
    name: String,
    reader: Arc<Mutex<Option<Taken>>>,
    /// The first bytes, once peeked (see [`Input::peek`]): the reader gives them again.
    head: Arc<Mutex<Option<Head>>>,
    /// The stop switch of the load reading it ([`Input::watch`]), checked by each read
    /// of the sample that sniffing takes.
    cancel: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

/// An input's first bytes (at most [`super::head::SAMPLE_BYTES`]) and whether they are
/// all of it.
pub type Head = (Arc<[u8]>, bool);

/// Standard input's first bytes, once peeked, and whether [`open`] has given them back
/// (it reads them again first, once). Standard input is one stream per process, so its
/// peeked head is too; it stays for later peeks, which never read stdin again.
static STDIN_HEAD: Mutex<Option<(Head, bool)>> = Mutex::new(None);

/// Whether standard input's first bytes were peeked (a later [`Input::peek`] of stdin
/// then reads nothing: it returns them).
pub(crate) fn stdin_peeked() -> bool {
    STDIN_HEAD
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .is_some()
}

/// Record batches the program supplies (see [`Input::record_batches`]).
#[cfg(feature = "arrow")]
pub(crate) type BatchReader = Box<dyn arrow_array::RecordBatchReader + Send>;

/// What a [`ReaderInput`] holds until it is read.
enum Taken {
    Read(Box<dyn Read + Send>),
    /// Items to serialize; `columns` names the values of positional rows.
    Items {
        items: Box<dyn super::serialized::Items>,
        columns: Option<Vec<String>>,
    },
    /// Arrow record batches.
    #[cfg(feature = "arrow")]
    Batches(BatchReader),
    /// A reader whose first read failed while its head was peeked: the failure, given
    /// again to whoever takes the input (the reader's own error, not "read already").
    Failed(io::ErrorKind, String),
    /// A reader whose head was being peeked when the load was cancelled.
    Cancelled,
}

/// The error of a reader whose first read failed, as often as it is asked for.
fn failed(kind: io::ErrorKind, why: &str) -> Error {
    Error::io(None, io::Error::new(kind, why))
}

impl ReaderInput {
    fn input(name: String, taken: Taken) -> Input {
        Input::Reader(ReaderInput {
            name,
            reader: Arc::new(Mutex::new(Some(taken))),
            head: Arc::new(Mutex::new(None)),
            cancel: Arc::new(Mutex::new(None)),
        })
    }

    /// The first bytes of a byte reader, read once and put back in front of it; `None`
    /// for items or batches, or a reader already read.
    fn peek(&self) -> Result<Option<Head>> {
        let mut head = self.head.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = &*head {
            return Ok(Some(h.clone()));
        }
        let mut reader = self.reader.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = match reader.take() {
            Some(Taken::Read(r)) => r,
            Some(Taken::Failed(kind, why)) => {
                let e = failed(kind, &why);
                *reader = Some(Taken::Failed(kind, why));
                return Err(e);
            }
            Some(Taken::Cancelled) => {
                *reader = Some(Taken::Cancelled);
                return Err(Error::interrupted());
            }
            other => {
                *reader = other;
                return Ok(None);
            }
        };
        let cancel = self
            .cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut checked = Counting {
            inner: &mut r,
            count: Arc::new(AtomicU64::new(0)),
            cancelled: cancel,
        };
        let (bytes, whole) = match super::head::read_sample(&mut checked, super::head::SAMPLE_BYTES)
        {
            Ok(sample) => sample,
            Err(e) if e.get_ref().is_some_and(|e| e.is::<Cancelled>()) => {
                *reader = Some(Taken::Cancelled);
                return Err(Error::interrupted());
            }
            Err(e) => {
                let why = format!("{}: {e}", self.name);
                let err = failed(e.kind(), &why);
                *reader = Some(Taken::Failed(e.kind(), why));
                return Err(err);
            }
        };
        let bytes: Arc<[u8]> = bytes.into();
        *reader = Some(Taken::Read(Box::new(
            io::Cursor::new(bytes.clone()).chain(r),
        )));
        *head = Some((bytes.clone(), whole));
        Ok(Some((bytes, whole)))
    }

    fn take(&self) -> Result<Taken> {
        let taken = self.reader.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(Taken::Failed(kind, why)) = taken {
            return Err(failed(kind, &why));
        }
        if let Some(Taken::Cancelled) = taken {
            return Err(Error::interrupted());
        }
        taken.ok_or_else(|| {
            Error::usage(format!(
                "{}: this reader was read already; a reader input is read once",
                self.name
            ))
        })
    }

    fn is_items(&self) -> bool {
        matches!(
            *self.reader.lock().unwrap_or_else(|p| p.into_inner()),
            Some(Taken::Items { .. })
        )
    }

    fn is_batches(&self) -> bool {
        #[cfg(not(feature = "arrow"))]
        return false;
        #[cfg(feature = "arrow")]
        matches!(
            *self.reader.lock().unwrap_or_else(|p| p.into_inner()),
            Some(Taken::Batches(_))
        )
    }
}

impl std::fmt::Debug for ReaderInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderInput")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The same reader (not merely one with the same name).
impl PartialEq for ReaderInput {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.reader, &other.reader)
    }
}

impl Eq for ReaderInput {}

impl Input {
    /// The bytes `reader` yields, named `name` (see [`Input`] for what the name does).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use liteload::{import, ImportOptions, Input, Progress};
    /// let dir = tempfile::tempdir()?;
    /// let body: &'static [u8] = b"city,pop\nOslo,709000\n";
    /// let input = Input::reader("cities.csv", body);
    /// let db = dir.path().join("geo.db");
    /// let summary = import(&db, &[input], &ImportOptions::default(), &Progress::default())?;
    /// assert_eq!(summary.tables, ["cities"]);
    /// # Ok(()) }
    /// ```
    pub fn reader(name: impl Into<String>, reader: impl Read + Send + 'static) -> Input {
        ReaderInput::input(name.into(), Taken::Read(Box::new(reader)))
    }

    /// `bytes`, named `name` (see [`Input`] for what the name does).
    pub fn bytes(name: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Input {
        Input::Bytes {
            name: name.into(),
            bytes: bytes.into(),
        }
    }

    /// The program's own values, each serialized with serde into one row: a struct's
    /// field names (or a map's keys) become the columns, in order. Column types come
    /// from the values, as for JSON: the first records decide (integers → INTEGER,
    /// floats → REAL, strings → TEXT; a field that is `None` in every record of the
    /// sample is TEXT), and a field first seen later is added to a table liteload
    /// created. `name` names the table by default and points errors at `name:N`, the
    /// Nth item. A value that serde cannot make into JSON (a map with keys that are
    /// not strings, say) is an error at its item.
    ///
    /// Each item is serialized straight into a row as it is needed (none is held but
    /// the sample), and stored exactly as the same items written as NDJSON would be:
    /// nested values become JSON text (with [`ReadOptions::flatten`](crate::ReadOptions::flatten),
    /// a nested struct's or map's members become columns, as NDJSON's objects do),
    /// non-finite floats NULL, and a key first seen after the sample adds a column
    /// (refused by the page writer, as for NDJSON).
    /// Bytes, which JSON has not, are BLOBs: a `Vec<u8>` (a non-empty sequence of
    /// `u8`) or `serialize_bytes` (`serde_bytes`) makes its column BLOB and is stored
    /// byte for byte; an empty `Vec<u8>` is an empty blob there, and `[]` in a column
    /// whose sample held no bytes.
    pub fn serialized<T, I>(name: impl Into<String>, items: I) -> Input
    where
        T: serde::Serialize,
        I: IntoIterator<Item = T>,
        I::IntoIter: Send + 'static,
    {
        let items = Box::new(items.into_iter());
        ReaderInput::input(
            name.into(),
            Taken::Items {
                items,
                columns: None,
            },
        )
    }

    /// The program's own rows: each row's values, in the order of `columns`. A value is
    /// anything serde serializes as a number, string, bool or null (an
    /// `Option<i64>`, a `&str`, …). A row with more values than columns is an error at
    /// it; one with fewer leaves the rest NULL. Otherwise as [`Input::serialized`].
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use liteload::{import, ImportOptions, Input, Progress};
    /// let dir = tempfile::tempdir()?;
    /// let rows = vec![vec![serde_json::json!(1), "one".into()], vec![2.into(), "two".into()]];
    /// let input = Input::rows("numbers", ["n", "word"], rows);
    /// let db = dir.path().join("n.db");
    /// let summary = import(&db, &[input], &ImportOptions::default(), &Progress::default())?;
    /// assert_eq!(summary.rows, 2);
    /// # Ok(()) }
    /// ```
    pub fn rows<C, R, V, I>(name: impl Into<String>, columns: C, rows: I) -> Input
    where
        C: IntoIterator,
        C::Item: Into<String>,
        R: IntoIterator<Item = V> + 'static,
        V: serde::Serialize,
        I: IntoIterator<Item = R>,
        I::IntoIter: Send + 'static,
    {
        let columns = Some(columns.into_iter().map(Into::into).collect());
        let items = Box::new(rows.into_iter().map(super::serialized::Values::new));
        ReaderInput::input(name.into(), Taken::Items { items, columns })
    }

    /// Arrow record batches the program holds or makes (a `RecordBatchReader` of
    /// arrow-rs: an iterator of batches with their schema; `arrow_array` is re-exported
    /// as [`crate::arrow_array`]), read once, in order. The column types come from the
    /// schema (see [`crate::source::columnar`]); `name` names the table by default and
    /// points errors at `name: record N` (the Nth row).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use liteload::arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchIterator, StringArray};
    /// use liteload::{import, ImportOptions, Input, Progress};
    /// let ids: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
    /// let names: ArrayRef = Arc::new(StringArray::from(vec![Some("Ada"), None]));
    /// let batch = RecordBatch::try_from_iter([("id", ids), ("name", names)])?;
    /// let schema = batch.schema();
    /// let input = Input::record_batches("people", RecordBatchIterator::new([Ok(batch)], schema));
    /// let dir = tempfile::tempdir()?;
    /// let db = dir.path().join("people.db");
    /// let summary = import(&db, &[input], &ImportOptions::default(), &Progress::default())?;
    /// assert_eq!(summary.rows, 2);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "arrow")]
    pub fn record_batches(
        name: impl Into<String>,
        batches: impl arrow_array::RecordBatchReader + Send + 'static,
    ) -> Input {
        ReaderInput::input(name.into(), Taken::Batches(Box::new(batches)))
    }

    /// Ties a reader input to the stop switch of the load that reads it, so that a read
    /// of its first bytes (taken to sniff it) stops once the load is cancelled.
    pub(crate) fn watch(&self, cancelled: &Arc<AtomicBool>) {
        if let Input::Reader(r) = self {
            *r.cancel.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancelled.clone());
        }
    }

    /// The program's record batches, if this input is those (taken: read once).
    #[cfg(feature = "arrow")]
    pub(crate) fn batches(&self) -> Result<Option<BatchReader>> {
        match self {
            Input::Reader(r) if r.is_batches() => match r.take()? {
                Taken::Batches(b) => Ok(Some(b)),
                _ => unreachable!("checked to be batches"),
            },
            _ => Ok(None),
        }
    }

    /// `-` is stdin; anything else is a path.
    pub fn from_arg(s: &str) -> Input {
        if s == "-" {
            Input::Stdin
        } else {
            Input::Path(PathBuf::from(s))
        }
    }

    /// The name used in messages.
    pub fn display_name(&self) -> String {
        match self {
            Input::Stdin => "<stdin>".to_string(),
            Input::Path(p) => p.display().to_string(),
            Input::Reader(r) => r.name.clone(),
            Input::Bytes { name, .. } => name.clone(),
        }
    }

    /// The file name, or the name that stands in for one (none for stdin).
    fn name_path(&self) -> Option<PathBuf> {
        match self {
            Input::Stdin => None,
            Input::Path(p) => Some(p.clone()),
            Input::Reader(r) => Some(PathBuf::from(&r.name)),
            Input::Bytes { name, .. } => Some(PathBuf::from(name)),
        }
    }

    /// Whether the name ends in `.gz`.
    pub fn is_gzip(&self) -> bool {
        self.name_path()
            .is_some_and(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")))
    }

    /// The name with `.gz` removed, for format and table-name detection.
    pub fn logical_path(&self) -> Option<PathBuf> {
        let p = self.name_path()?;
        Some(if self.is_gzip() {
            p.with_extension("")
        } else {
            p
        })
    }

    /// The format the input is in whatever its name says: the program's own values are
    /// read as NDJSON objects would be.
    pub(crate) fn fixed_format(&self) -> Option<Format> {
        match self {
            Input::Reader(r) if r.is_items() => Some(Format::Ndjson),
            Input::Reader(r) if r.is_batches() => Some(Format::Arrow),
            _ => None,
        }
    }

    /// The source of the program's own values, if this input is those; `None` else.
    pub(crate) fn items_source(
        &self,
        opts: &super::ReadOptions,
    ) -> Result<Option<Box<dyn super::Source>>> {
        let Input::Reader(r) = self else {
            return Ok(None);
        };
        if !r.is_items() {
            return Ok(None);
        }
        let Taken::Items { items, columns } = r.take()? else {
            unreachable!("checked to be items")
        };
        Ok(Some(Box::new(super::serialized::SerializedSource::new(
            items,
            columns.as_deref(),
            r.name.as_str().into(),
            opts.clone(),
        ))))
    }

    /// The input's first bytes (at most [`super::head::SAMPLE_BYTES`]) and whether they
    /// are all of it, without using them up: standard input's and a reader's are kept
    /// and read again first. `None` for the program's own values, or a reader already
    /// read.
    pub fn peek(&self) -> Result<Option<Head>> {
        let limit = super::head::SAMPLE_BYTES;
        match self {
            Input::Path(p) => {
                let mut f = File::open(p).map_err(|e| Error::io(Some(p.clone()), e))?;
                let (b, whole) = super::head::read_sample(&mut f, limit)
                    .map_err(|e| Error::io(Some(p.clone()), e))?;
                Ok(Some((b.into(), whole)))
            }
            Input::Bytes { bytes, .. } => Ok(Some((
                bytes[..bytes.len().min(limit)].into(),
                bytes.len() <= limit,
            ))),
            Input::Stdin => {
                let mut head = STDIN_HEAD.lock().unwrap_or_else(|p| p.into_inner());
                if head.is_none() {
                    let (b, whole) = super::head::read_sample(&mut io::stdin().lock(), limit)
                        .map_err(|e| {
                            Error::io(None, io::Error::new(e.kind(), format!("<stdin>: {e}")))
                        })?;
                    *head = Some(((b.into(), whole), false));
                }
                Ok(head.as_ref().map(|(h, _)| h.clone()))
            }
            Input::Reader(r) => r.peek(),
        }
    }

    /// About how many lines the input holds, for a plan that weighs roads by rows: the
    /// lines of its first 256 KiB scaled to its size. `None` when that cannot be known
    /// without reading it all: standard input, a reader, a compressed file, or no line
    /// end in the part read.
    pub fn estimated_lines(&self) -> Option<u64> {
        const SAMPLE: usize = 256 * 1024;
        let from_head = |size: u64, head: &[u8]| {
            if self.is_gzip() || Compression::of(head).is_some() {
                return None;
            }
            let lines = head.iter().filter(|&&b| b == b'\n').count() as u64;
            if lines == 0 {
                return None;
            }
            Some(if head.len() as u64 >= size {
                lines
            } else {
                (u128::from(size) * u128::from(lines) / head.len() as u128) as u64
            })
        };
        match self {
            Input::Path(p) => {
                let size = self.size()?;
                let mut head = Vec::with_capacity(SAMPLE);
                File::open(p)
                    .ok()?
                    .take(SAMPLE as u64)
                    .read_to_end(&mut head)
                    .ok()?;
                from_head(size, &head)
            }
            Input::Bytes { bytes, .. } => {
                from_head(bytes.len() as u64, &bytes[..bytes.len().min(SAMPLE)])
            }
            Input::Stdin | Input::Reader(_) => None,
        }
    }

    /// The size in bytes, when it is a regular file (for progress).
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::Stdin | Input::Reader(_) => None,
            Input::Path(p) => std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
            Input::Bytes { bytes, .. } => Some(bytes.len() as u64),
        }
    }
}

/// A text encoding to transcode from. UTF-8 input is passed through untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8, passed through.
    Utf8,
    /// Windows-1252 (a superset of ISO-8859-1).
    Latin1,
    /// UTF-16 with a byte-order mark (little-endian without one).
    Utf16,
    /// UTF-16, little-endian.
    Utf16Le,
    /// UTF-16, big-endian.
    Utf16Be,
}

impl Encoding {
    /// The name [`Encoding::from_str`](std::str::FromStr) reads back (UTF-16 without a
    /// byte-order mark is read little-endian, so both say `utf-16le`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Latin1 => "latin1",
            Encoding::Utf16 | Encoding::Utf16Le => "utf-16le",
            Encoding::Utf16Be => "utf-16be",
        }
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Ok(Encoding::Utf8),
            "latin1" | "latin-1" | "iso-8859-1" | "windows-1252" | "cp1252" => Ok(Encoding::Latin1),
            "utf-16" | "utf16" => Ok(Encoding::Utf16),
            "utf-16le" | "utf16le" => Ok(Encoding::Utf16Le),
            "utf-16be" | "utf16be" => Ok(Encoding::Utf16Be),
            other => Err(format!(
                "unknown encoding {other:?} (expected utf-8, latin1, utf-16, utf-16le or utf-16be)"
            )),
        }
    }
}

/// A gzip decoder whose format errors say so ([`BadGzip`]).
struct Gunzip<R: BufRead> {
    inner: flate2::read::MultiGzDecoder<R>,
    name: Arc<str>,
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| match e.kind() {
            // flate2's words for a bad header, a corrupt deflate stream, and a stream
            // that ends early; a failing disk says something else.
            io::ErrorKind::InvalidInput
            | io::ErrorKind::InvalidData
            | io::ErrorKind::UnexpectedEof => io::Error::new(
                io::ErrorKind::InvalidData,
                BadGzip {
                    name: self.name.clone(),
                    message: e.to_string(),
                },
            ),
            _ => e,
        })
    }
}

/// Counts the raw bytes read from the file (before decompression), for progress.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
    /// The load's stop switch: once set, the next read fails with [`Cancelled`], so a
    /// cancel is seen within one read of a reader that trickles (not within a batch).
    cancelled: Option<Arc<AtomicBool>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self
            .cancelled
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(io::Error::other(Cancelled));
        }
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The compression of the file at `path` by its first bytes, if any.
pub fn file_compression(path: &Path) -> Option<Compression> {
    let mut head = [0u8; 10];
    let n = File::open(path).and_then(|mut f| {
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    });
    Compression::of(&head[..n.ok()?])
}

/// Opens `input` as a stream of UTF-8 bytes with any byte-order mark removed, and
/// decompressed when its first bytes (or a `.gz` name) say it is compressed.
/// Raw bytes read are added to `bytes_read`; once `cancelled` is set, the next read fails
/// (an [`crate::ErrorKind::Interrupted`] error).
pub fn open(
    input: &Input,
    encoding: Encoding,
    bytes_read: Arc<AtomicU64>,
    cancelled: Option<Arc<AtomicBool>>,
) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = match input {
        Input::Stdin => {
            // Bytes peeked to sniff the input come first.
            let mut kept = STDIN_HEAD.lock().unwrap_or_else(|p| p.into_inner());
            match kept.as_mut() {
                Some(((head, _), given)) if !*given => {
                    *given = true;
                    Box::new(io::Cursor::new(head.clone()).chain(io::stdin()))
                }
                _ => Box::new(io::stdin()),
            }
        }
        Input::Path(p) => Box::new(File::open(p).map_err(|e| Error::io(Some(p.clone()), e))?),
        Input::Reader(r) => match r.take()? {
            Taken::Read(read) => read,
            // `take` gives a kept failure as its error, never as a `Taken`.
            #[cfg(feature = "arrow")]
            Taken::Batches(_) => unreachable!("batches are read by their own source"),
            Taken::Items { .. } | Taken::Failed(..) | Taken::Cancelled => {
                unreachable!("items are read by their own source")
            }
        },
        Input::Bytes { bytes, .. } => Box::new(io::Cursor::new(bytes.clone())),
    };
    let counted = Counting {
        inner: raw,
        count: bytes_read,
        cancelled,
    };
    let mut buffered = BufReader::with_capacity(256 * 1024, counted);
    // Compression by its magic bytes, whatever the name says (a `.gz` name is gzip).
    let head = buffered
        .fill_buf()
        .map_err(|e| Error::io(path_of(input), e))?;
    let compression = if input.is_gzip() {
        Some(Compression::Gzip)
    } else {
        Compression::of(head)
    };
    let decompressed: Box<dyn Read + Send> = match compression {
        None => Box::new(buffered),
        Some(Compression::Gzip) => Box::new(Gunzip {
            inner: flate2::read::MultiGzDecoder::new(buffered),
            name: input.display_name().into(),
        }),
        Some(c) => c
            .decoder(Box::new(buffered))
            .map_err(|e| Error::io(path_of(input), e))?,
    };
    let decoded = decode(decompressed, encoding, input)?;
    let mut br = BufReader::with_capacity(256 * 1024, decoded);
    skip_utf8_bom(&mut br).map_err(|e| Error::io(path_of(input), e))?;
    Ok(Box::new(br))
}

/// `raw` read in `encoding`, as UTF-8: passed through for UTF-8, else transcoded (a
/// UTF-8 byte-order mark is skipped whatever the encoding named; UTF-16 without its own
/// decides by its byte-order mark, little-endian without one).
pub(crate) fn decode(
    raw: Box<dyn Read + Send>,
    encoding: Encoding,
    input: &Input,
) -> Result<Box<dyn Read + Send>> {
    let decompressed = raw;
    Ok(match encoding {
        Encoding::Utf8 => decompressed,
        Encoding::Latin1 => {
            let mut raw = BufReader::with_capacity(64 * 1024, decompressed);
            skip_utf8_bom(&mut raw).map_err(|e| Error::io(path_of(input), e))?;
            let d = encoding_rs::WINDOWS_1252.new_decoder_without_bom_handling();
            Box::new(Transcode::new(raw, d))
        }
        Encoding::Utf16 => Box::new(Transcode::new(
            decompressed,
            encoding_rs::UTF_16LE.new_decoder(),
        )),
        Encoding::Utf16Le => Box::new(Transcode::new(
            decompressed,
            encoding_rs::UTF_16LE.new_decoder_with_bom_removal(),
        )),
        Encoding::Utf16Be => Box::new(Transcode::new(
            decompressed,
            encoding_rs::UTF_16BE.new_decoder_with_bom_removal(),
        )),
    })
}

fn path_of(input: &Input) -> Option<PathBuf> {
    match input {
        Input::Path(p) => Some(p.clone()),
        _ => None,
    }
}

fn skip_utf8_bom(br: &mut impl BufRead) -> io::Result<()> {
    // fill_buf may return fewer than 3 bytes for a tiny or trickling input; a BOM split
    // across reads is rare enough that peeking what is there is the right trade-off.
    let buf = br.fill_buf()?;
    if buf.starts_with(b"\xEF\xBB\xBF") {
        br.consume(3);
    }
    Ok(())
}

/// Whether `a` and `b` name the same file, however each is spelled: the same device and
/// inode when both exist, else the same resolved path (a file about to be created).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => resolved(a).is_some_and(|x| resolved(b) == Some(x)),
    }
}

/// `p` with its folder resolved (links, `..`), whether or not `p` itself exists.
fn resolved(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(parent.join(p.file_name()?))
}

/// An error if `out`, a file about to be written (a rejects log, say), is one of the
/// `inputs` or `db`: writing it would destroy what is being read.
pub fn refuse_overwriting(out: &Path, inputs: &[Input], db: Option<&Path>) -> Result<()> {
    let clash = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Path(p) => Some(p.as_path()),
            _ => None,
        })
        .chain(db)
        .find(|p| same_file(out, p));
    match clash {
        Some(p) => Err(Error::usage(format!(
            "{}: this is {}, which writing it would destroy; name another file",
            out.display(),
            if Some(p) == db {
                "the database"
            } else {
                "an input"
            }
        ))),
        None => Ok(()),
    }
}

/// The table name a file gives by default: its stem (without `.gz` and the format extension).
pub fn default_table_name(input: &Input) -> Option<String> {
    let p = input.logical_path()?;
    Path::new(&p)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
}

#[cfg(test)]
mod estimate_tests {
    use super::*;

    #[test]
    fn lines_are_counted_or_scaled_and_unknown_where_they_cannot_be() {
        let small = "a,b\n".to_string() + &"1,é\n".repeat(999);
        assert_eq!(
            Input::bytes("s.csv", small.into_bytes()).estimated_lines(),
            Some(1000)
        );
        // Past the sample, scaled (the sample ends inside a line): every line 10 bytes.
        let big = "123456789\n".repeat(100_000);
        let est = Input::bytes("b.csv", big.into_bytes())
            .estimated_lines()
            .expect("an estimate");
        assert!((99_900..=100_000).contains(&est), "{est}");
        let d = tempfile::tempdir().expect("a temporary directory");
        let p = d.path().join("f.csv");
        std::fs::write(&p, "x\n".repeat(300_000)).expect("written");
        assert_eq!(Input::Path(p).estimated_lines(), Some(300_000));
        // No line end, gzip, standard input: unknown.
        assert_eq!(
            Input::bytes("one.csv", b"abc".to_vec()).estimated_lines(),
            None
        );
        assert_eq!(
            Input::bytes("z.csv.gz", vec![0x1f, 0x8b, b'\n']).estimated_lines(),
            None
        );
        assert_eq!(Input::Stdin.estimated_lines(), None);
    }
}
