//! Readers: delimited text and JSON, turned into typed [`Batch`]es.
//!
//! A source never knows about SQLite. It is driven in two steps: [`Source::sample`]
//! reads the header and the first records (kept in memory) so that column names and
//! types can be decided, then [`Source::fill`] converts records into batches with the
//! types that were decided, the sampled records first.

#[cfg(feature = "arrow")]
pub(crate) mod arrow_source;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) mod checks;
pub mod columnar;
pub(crate) mod convert;
pub(crate) mod delimited;
pub mod head;
pub mod input;
pub(crate) mod json;
pub(crate) mod keys;
pub mod locale;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) mod ordered;
#[cfg(test)]
mod outcome;
pub mod parallel;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod serialized;
#[cfg(feature = "spreadsheet")]
pub(crate) mod sheet;
pub mod sniff;
pub(crate) mod stored;
pub mod tabular;
pub(crate) mod transcode;
pub(crate) mod xml;

use std::path::Path;
use std::sync::Arc;

use crate::batch::Batch;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::types::{ColumnType, TypeGuess};
pub use convert::Mismatches;
pub use input::{Encoding, Input};

/// An input format. More may be added (match with a wildcard arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Comma-separated values.
    Csv,
    /// Tab-separated values.
    Tsv,
    /// Newline-delimited JSON: one object per line.
    Ndjson,
    /// One JSON array of objects.
    Json,
    /// Parquet (typed columns; see [`columnar`] for how they are stored).
    Parquet,
    /// Arrow IPC: a file (Feather v2) or a stream, told apart by their first bytes.
    Arrow,
    /// XML: each element at a record path is a row (see [`ReadOptions::record`]).
    Xml,
    /// A spreadsheet workbook (`.xlsx`, `.xlsm`, `.xlsb`, `.xls`, `.ods`): each worksheet
    /// a table (see [`ReadOptions::sheet`]).
    Spreadsheet,
}

impl Format {
    /// Whether the format carries its own column types (Parquet, Arrow): nothing is
    /// inferred, and inputs of one schema load as one.
    pub fn is_typed(self) -> bool {
        matches!(self, Format::Parquet | Format::Arrow)
    }

    /// Whether a record read after the sample may name a column the sample did not
    /// have (JSON keys, XML names): the table may have to grow during the load.
    pub fn may_add_columns(self) -> bool {
        matches!(self, Format::Json | Format::Ndjson | Format::Xml)
    }

    /// The format a file name implies (`.csv`, `.tsv`/`.tab`, `.ndjson`/`.jsonl`, `.json`,
    /// each optionally followed by `.gz`; `.parquet`/`.pq`; `.arrow`, `.feather`, `.ipc`
    /// and `.arrows`; `.xml`; `.xlsx`, `.xlsm`, `.xlsb`, `.xls`, `.ods`).
    pub fn from_path(p: &Path) -> Option<Format> {
        let ext = p.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(Format::Csv),
            "tsv" | "tab" => Some(Format::Tsv),
            "ndjson" | "jsonl" | "nl" => Some(Format::Ndjson),
            "json" => Some(Format::Json),
            "parquet" | "pq" => Some(Format::Parquet),
            "arrow" | "feather" | "ipc" | "arrows" => Some(Format::Arrow),
            "xml" => Some(Format::Xml),
            "xlsx" | "xlsm" | "xlsb" | "xls" | "ods" => Some(Format::Spreadsheet),
            _ => None,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "tsv" | "tab" => Ok(Format::Tsv),
            "ndjson" | "jsonl" | "nl" => Ok(Format::Ndjson),
            "json" => Ok(Format::Json),
            "parquet" | "pq" => Ok(Format::Parquet),
            "arrow" | "feather" | "ipc" | "arrows" => Ok(Format::Arrow),
            "xml" => Ok(Format::Xml),
            "xlsx" | "xlsm" | "xlsb" | "xls" | "ods" | "spreadsheet" => Ok(Format::Spreadsheet),
            other => Err(format!(
                "unknown format {other:?} (expected csv, tsv, ndjson, json, parquet, arrow, xml or xlsx)"
            )),
        }
    }
}

/// What to do with a delimited record whose field count differs from the header's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ragged {
    /// It is a bad record.
    #[default]
    Error,
    /// Missing fields are NULL; extra fields are still an error.
    Pad,
    /// Missing fields are NULL and extra fields are dropped.
    Truncate,
}

/// Which empty values are NULL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nulls {
    /// An empty value is NULL in an INTEGER or REAL column and `''` in a TEXT one.
    #[default]
    Typed,
    /// Every empty value is NULL.
    All,
    /// PostgreSQL's rule for CSV: an unquoted empty field is NULL in any column, a quoted
    /// one (`""`) is `''` in any column (and makes its column TEXT when sampled).
    /// Delimited text only: other formats cannot say which values were quoted.
    Unquoted,
}

impl std::str::FromStr for Nulls {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "typed" => Ok(Nulls::Typed),
            "all" => Ok(Nulls::All),
            "unquoted" => Ok(Nulls::Unquoted),
            other => Err(format!(
                "unknown NULL convention {other:?} (expected typed, all or unquoted)"
            )),
        }
    }
}

/// How to read one input.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The format.
    pub format: Format,
    /// Field delimiter for delimited formats.
    pub delimiter: u8,
    /// Quote character; `None` turns quoting off.
    pub quote: Option<u8>,
    /// Whether the first record is a header.
    pub header: bool,
    /// Column names that replace the header's (or name the columns when there is none).
    pub columns: Option<Vec<String>>,
    /// Physical lines to skip before anything is read.
    pub skip_lines: u64,
    /// The input's text encoding, transcoded to UTF-8 as it is read.
    pub encoding: Encoding,
    /// Whether `encoding` was given by the caller: it then wins over a byte-order mark
    /// and an XML declaration, UTF-8 too. Otherwise UTF-8 stands for "not known": a
    /// UTF-16 byte-order mark or an XML declaration says what the input is.
    pub encoding_given: bool,
    /// Which empty values are NULL (by default only those in numeric columns).
    pub nulls: Nulls,
    /// Records with another field count than the header's.
    pub ragged: Ragged,
    /// Records to read before deciding column types.
    pub sample_rows: usize,
    /// A record (or JSON line) longer than this is an error, found before memory runs out.
    pub max_record_bytes: usize,
    /// Threads that parse a large, uncompressed, UTF-8 delimited file at once (see
    /// [`parallel`]); 1 parses on one thread.
    pub parse_threads: usize,
    /// Delimited and typed input: make batches of encoded SQLite records instead of
    /// cells (see [`crate::batch::Batch::push_record`]), for the direct engine when
    /// nothing needs the cells (no index to gather). Other formats make cells regardless.
    pub records: bool,
    /// Typed input (Parquet, Arrow): the columns to load, by name, in this order; `None`
    /// loads all. Parquet does not decode the others.
    pub select: Option<Vec<String>>,
    /// JSON: a string is typed and stored as the same text in a CSV field is (the
    /// spools of related tables from XML, whose values are text); else it is TEXT.
    pub(crate) text_fields: bool,
    /// Typed input: how dates, times and timestamps are stored.
    pub temporal: columnar::Temporal,
    /// Typed input: how decimals are stored.
    pub decimals: columnar::Decimals,
    /// Delimited text: numbers with a decimal comma and dates in given formats,
    /// converted as they are read ([`locale`]); nothing by default.
    pub locale: locale::Locale,
    /// XML: the path of the record elements from the root, `/`-separated
    /// (`posts/row`), each step an element's qualified or local name. `None`: the root
    /// and the first element name that repeats directly under it, or under the one
    /// element a root holds, and so on down (`rss/channel/item`).
    ///
    /// JSON: the keys from the top-level object to the array of records, `.`-separated
    /// (`data.items`), or a JSON Pointer (`/data/items`; `~1` is a `/` in a key, `~0` a
    /// `~`). `None`: a top-level array, or the one member of a top-level object whose
    /// value is an array starting with an object (a second such member is an error;
    /// with none, the one member holding an empty array). The rest of the document is
    /// read and checked as JSON. Other formats refuse a record path.
    pub record: Option<String>,
    /// JSON and NDJSON (and [`Input::serialized`](crate::Input::serialized)'s structs and
    /// maps): the members of nested objects become columns of their own, named by their
    /// paths' keys joined by this separator (`owner_address_city`); arrays stay JSON
    /// text. XML: a child with attributes or children, named once in its record,
    /// gives a field for each of them, at every depth. Parquet and Arrow: the fields of
    /// struct columns, at every depth, NULL where a struct above is. `None`: a nested
    /// object, element or struct is one JSON text column.
    pub flatten: Option<String>,
    /// Spreadsheets: the worksheet to read, by name. `None`: each worksheet holding a
    /// value is a load of its own (its table named after it), and a source opened
    /// directly reads the first.
    pub sheet: Option<String>,
    /// Spreadsheets: whether the first row with a value is told header or data by the
    /// sample (as sniffing does for delimited text) instead of by `header`.
    pub header_sniffed: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: Format::Csv,
            delimiter: b',',
            quote: Some(b'"'),
            header: true,
            columns: None,
            skip_lines: 0,
            encoding: Encoding::Utf8,
            encoding_given: false,
            nulls: Nulls::Typed,
            ragged: Ragged::Error,
            sample_rows: 10_000,
            max_record_bytes: 64 << 20,
            parse_threads: 1,
            records: false,
            select: None,
            text_fields: false,
            temporal: columnar::Temporal::Iso8601,
            decimals: columnar::Decimals::Text,
            locale: locale::Locale::default(),
            record: None,
            flatten: None,
            sheet: None,
            header_sniffed: false,
        }
    }
}

/// What the sample found.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Column names, cleaned: a blank name becomes `cN`, one that SQLite would take for
    /// an earlier one (ASCII case ignored) gets `_2`, `_3`, ….
    pub columns: Vec<String>,
    /// What the sampled values say of each column's type.
    pub guesses: Vec<TypeGuess>,
    /// Notes for the user about names that were changed.
    pub notes: Vec<String>,
    /// The column types the input declares (a typed format's schema), which are used
    /// instead of `guesses`; `None` for inputs whose types are inferred.
    pub types: Option<Vec<ColumnType>>,
    /// Columns whose sampled values look locale-written (delimited text read without a
    /// [`locale::Locale`]): (column, a value, `None` for decimal-comma numbers or the
    /// date format).
    pub locale: Vec<(String, String, Option<String>)>,
}

/// A record that could not be loaded: why, and its text for the rejects file.
#[derive(Debug)]
pub struct BadRecord {
    /// Why, with its position.
    pub error: Error,
    /// The record's fields, for a rejects log.
    pub fields: serde_json::Value,
}

/// What [`Source::fill`] stopped on.
#[derive(Debug, PartialEq)]
pub enum Fill {
    /// The batch is full; call again.
    Full,
    /// The input is exhausted (the batch may hold the last rows).
    Done,
    /// A record has fields that are not columns yet (JSON). Add these columns (to the
    /// table and to the following batches, which will be wider), then call again.
    NewColumns(Vec<(String, ColumnType)>),
}

/// A reader of one input that yields typed batches.
pub trait Source: Send {
    /// Reads the header and up to `sample_rows` records. Called once, first.
    fn sample(&mut self) -> Result<Sample>;

    /// Sets the type of each column, in sample order. Called once, after `sample`.
    fn set_types(&mut self, types: Vec<ColumnType>);

    /// Appends up to `max_rows` rows to `batch` (stopping early when its text passes
    /// `max_text` bytes). A bad record is passed to `bad`; if `bad` returns an error,
    /// `fill` returns it. After an error from `fill` other than through `bad`, the
    /// source must not be used again.
    fn fill(
        &mut self,
        batch: &mut Batch,
        max_rows: usize,
        max_text: usize,
        bad: &mut dyn FnMut(BadRecord) -> Result<()>,
    ) -> Result<Fill>;

    /// Columns in each row of the batches `fill` makes now (grows after `NewColumns`).
    fn width(&self) -> usize;

    /// Values stored in a type other than their column's so far.
    fn mismatches(&self) -> &Mismatches;

    /// Notes on how values were read (a spreadsheet's error cells loaded as NULL),
    /// taken once, after the last `fill`.
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// From now on, makes batches of encoded records (see [`ReadOptions::records`]) if
    /// this source can; returns whether it will.
    fn make_records(&mut self) -> bool {
        false
    }

    /// Whether the rows' rowid column (their table's INTEGER PRIMARY KEY) holds each
    /// row's number, 1 for the first, and the records this source makes hold NULL
    /// there: a split's spool of related rows.
    #[doc(hidden)]
    fn numbers_rowids(&self) -> bool {
        false
    }

    /// Writes every row into `table`, a new and empty table of a file of `page_size`
    /// pages whose rowids start at 1, as pages the source fills itself, if it can
    /// (generate's rows, drawn straight into leaf pages on every core), and returns how
    /// many it wrote; `None` when it cannot (nothing was read: its rows go by batches).
    #[doc(hidden)]
    fn write_pages(
        &mut self,
        _table: &mut liteload_btree::TableWriter<'_, liteload_btree::SeqFile>,
        _page_size: u32,
        _progress: &Progress,
    ) -> Option<Result<u64>> {
        None
    }
}

/// Opens `input` with `opts` as a [`Source`]. Raw bytes read are added to
/// `progress.bytes_read`; a reader's next read after [`Progress::cancel`] fails with
/// [`crate::ErrorKind::Interrupted`].
pub fn open_source(
    input: &Input,
    opts: &ReadOptions,
    progress: &Progress,
) -> Result<Box<dyn Source>> {
    let bytes_read = progress.bytes_read.clone();
    let cancel = Some(progress.cancel_flag());
    if let Some(src) = input.items_source(opts)? {
        return Ok(src);
    }
    if input.fixed_format() == Some(Format::Arrow) || opts.format.is_typed() {
        return open_typed(vec![input.clone()], opts, progress);
    }
    if opts.format == Format::Spreadsheet {
        return open_sheet(input, opts, progress);
    }
    if opts.format == Format::Xml {
        return Ok(Box::new(xml::XmlSource::open(
            input,
            opts,
            progress.bytes_read.clone(),
            progress.cancel_flag(),
        )?));
    }
    let name: Arc<str> = input.display_name().into();
    let wanted = match (&opts.record, opts.format) {
        (Some(path), Format::Json) => {
            Some(json::record_path::parse(path).map_err(|m| Error::usage(format!("{name}: {m}")))?)
        }
        _ => None,
    };
    // A large, plain UTF-8 file is read in parts on several threads.
    let parts = match input {
        Input::Path(path)
            if opts.parse_threads > 1
                && opts.encoding == Encoding::Utf8
                && !input.is_gzip()
                && input::file_compression(path).is_none()
                && std::fs::metadata(path)
                    .is_ok_and(|m| m.is_file() && m.len() >= 4 * parallel::CHUNK_BYTES) =>
        {
            Some(path)
        }
        _ => None,
    };
    if let Some(path) = parts {
        if matches!(opts.format, Format::Csv | Format::Tsv) {
            return Ok(Box::new(parallel::ParallelDelimited::new(
                path,
                name,
                opts.clone(),
                opts.parse_threads,
                bytes_read,
            )?));
        }
        let layout = match opts.format {
            Format::Ndjson => json::Layout::Lines,
            _ => json::Layout::Array,
        };
        if matches!(opts.format, Format::Ndjson | Format::Json) {
            let chunks = json::Chunks::new(
                path.clone(),
                name.clone(),
                layout,
                opts.parse_threads,
                opts.max_record_bytes,
                opts.nulls == Nulls::All,
                bytes_read.clone(),
            )?
            .with_text_fields(opts.text_fields);
            let reader = input::open(input, opts.encoding, bytes_read, cancel)?;
            let stream = match layout {
                json::Layout::Lines => json::ObjectStream::lines(reader, opts.max_record_bytes),
                json::Layout::Array => {
                    json::ObjectStream::array(reader, opts.max_record_bytes, wanted)
                }
            };
            return Ok(Box::new(
                json::JsonSource::new(stream, name, opts.clone()).with_chunks(Box::new(chunks)),
            ));
        }
    }
    let reader = input::open(input, opts.encoding, bytes_read, cancel)?;
    Ok(match opts.format {
        Format::Csv | Format::Tsv => {
            Box::new(tabular::DelimitedSource::new(reader, name, opts.clone()))
        }
        Format::Ndjson => Box::new(json::JsonSource::new(
            json::ObjectStream::lines(reader, opts.max_record_bytes),
            name,
            opts.clone(),
        )),
        Format::Json => Box::new(json::JsonSource::new(
            json::ObjectStream::array(reader, opts.max_record_bytes, wanted),
            name,
            opts.clone(),
        )),
        Format::Parquet | Format::Arrow | Format::Xml | Format::Spreadsheet => {
            unreachable!("typed formats, XML and spreadsheets are opened above")
        }
    })
}

/// The objects of the JSON or NDJSON `input` read with `opts`, in order, on the
/// calling thread: for a reader that takes each record whole (nested arrays split into
/// related tables). Bytes read count in `progress`, and a cancel stops the next read.
pub(crate) fn open_objects(
    input: &Input,
    opts: &ReadOptions,
    progress: &Progress,
) -> Result<json::ObjectStream> {
    let name = input.display_name();
    let reader = input::open(
        input,
        opts.encoding,
        progress.bytes_read.clone(),
        Some(progress.cancel_flag()),
    )?;
    Ok(match opts.format {
        Format::Ndjson => json::ObjectStream::lines(reader, opts.max_record_bytes),
        Format::Json => {
            let wanted = match &opts.record {
                Some(path) => Some(
                    json::record_path::parse(path)
                        .map_err(|m| Error::usage(format!("{name}: {m}")))?,
                ),
                None => None,
            };
            json::ObjectStream::array(reader, opts.max_record_bytes, wanted)
        }
        other => {
            return Err(Error::usage(format!(
            "{name}: related tables are made from JSON, NDJSON, XML, Parquet and Arrow, not {other:?}"
        )))
        }
    })
}

/// The worksheets of the workbook at `path` (named `name` in messages) that hold a
/// value, in the workbook's order, and those that hold none. A library built without
/// its `spreadsheet` feature reads none: that is a usage error naming the feature.
pub(crate) fn worksheets(path: &Path, name: &str) -> Result<(Vec<String>, Vec<String>)> {
    #[cfg(feature = "spreadsheet")]
    return sheet::worksheets(path, name);
    #[cfg(not(feature = "spreadsheet"))]
    {
        let _ = path;
        Err(Error::usage(format!(
            "{name}: spreadsheet input needs liteload built with its `spreadsheet` feature"
        )))
    }
}

/// Opens a worksheet of the workbook `input` (see [`ReadOptions::sheet`]). A workbook is
/// read from a file: its parts are found by seeking. A library built without its
/// `spreadsheet` feature reads none: that is a usage error naming the feature.
fn open_sheet(input: &Input, opts: &ReadOptions, progress: &Progress) -> Result<Box<dyn Source>> {
    let name = input.display_name();
    let Input::Path(path) = input else {
        return Err(Error::usage(format!(
            "{name}: a spreadsheet is read from a file (its parts are found by seeking)"
        )));
    };
    if input.is_gzip() || input::file_compression(path).is_some() {
        return Err(Error::usage(format!(
            "{name}: a spreadsheet is read uncompressed (it is compressed inside already)"
        )));
    }
    #[cfg(feature = "spreadsheet")]
    return Ok(Box::new(sheet::SheetSource::open(
        path,
        &name,
        opts,
        progress.bytes_read.clone(),
        progress.cancel_flag(),
    )?));
    #[cfg(not(feature = "spreadsheet"))]
    {
        let _ = (opts, progress);
        Err(Error::usage(format!(
            "{name}: spreadsheet input needs liteload built with its `spreadsheet` feature"
        )))
    }
}

/// Opens typed `inputs` (Parquet, Arrow; see [`Format::is_typed`]) of one schema as one
/// [`Source`], read in order: their rows go to one table. A second input whose columns
/// (names, Arrow types, order) differ from the first's is an error when it is reached.
///
/// A library built without its `arrow` feature reads no typed input: that is a usage
/// error naming the feature.
pub fn open_typed(
    inputs: Vec<Input>,
    opts: &ReadOptions,
    progress: &Progress,
) -> Result<Box<dyn Source>> {
    #[cfg(feature = "arrow")]
    return Ok(Box::new(arrow_source::ArrowSource::new(
        inputs,
        opts.clone(),
        progress.bytes_read.clone(),
    )));
    #[cfg(not(feature = "arrow"))]
    {
        let _ = (opts, progress);
        let name = inputs.first().map_or_else(String::new, Input::display_name);
        Err(Error::usage(format!(
            "{name}: Parquet and Arrow input needs liteload built with its `arrow` feature"
        )))
    }
}

/// A reader that hands out one byte at a time, so that tests reach every path where a
/// sequence (a record, a character) is split across reads.
#[cfg(test)]
pub(crate) struct Trickle<'a>(pub &'a [u8]);

#[cfg(test)]
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() || buf.is_empty() {
            return Ok(0);
        }
        buf[0] = self.0[0];
        self.0 = &self.0[1..];
        Ok(1)
    }
}
