//! The options of a load ([`ImportOptions`]) and the writer it asks for ([`Engine`]):
//! plain values, read by the plan ([`crate::plan`]) and the writers alike.

use std::path::PathBuf;

use crate::durability::{Durability, FileSettings};
use crate::source::{Format, ReadOptions};
use crate::table::{IfExists, IndexSpec};
use crate::types::ColumnType;

/// Which writer loads the rows. The default is [`Engine::Auto`], for the library, the
/// command and the Python package alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Engine {
    /// SQLite's insert path (any target, any durability).
    Sqlite,
    /// The page writer (a new file, `atomic-new`).
    Direct,
    /// The page writer where it surely applies, else SQLite's insert path: `Direct` for a
    /// new file with the default durability (`atomic-new`) and, for `import`, one CSV,
    /// TSV, NDJSON or JSON input or typed inputs (Parquet, Arrow) of one schema, without
    /// a primary key or `alter`. A JSON key first seen after the sample adds a column at
    /// the table's end as the rows are written (rows written before read NULL there).
    /// Both make the same table (`tests/sinks.rs` holds them to it); the page writer is
    /// faster (bench/README.md).
    #[default]
    Auto,
}

/// The default cap on rows per INSERT statement. Past a few hundred rows the gain from
/// fewer `sqlite3_step` calls is gone (see bench/README.md), and a huge VALUES list only
/// costs prepare time.
pub const DEFAULT_ROWS_PER_STATEMENT: usize = 512;

/// How quoting works for delimited input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quoting {
    /// `"` for CSV; off for TSV.
    #[default]
    Default,
    /// This byte quotes.
    Char(u8),
    /// No quoting: every byte is data.
    Off,
}

/// What a row does whose key (the table's primary key or a UNIQUE index, see
/// [`ImportOptions::key`]) is in the table already.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnConflict {
    /// The row is refused: a bad record, as any row SQLite refuses.
    #[default]
    Fail,
    /// The row is dropped, as SQLite's `INSERT OR IGNORE` drops it (which also drops a
    /// row that breaks a NOT NULL or CHECK constraint).
    Ignore,
    /// The row replaces the one in the table, as SQLite's `INSERT OR REPLACE`.
    Replace,
    /// The loaded columns of the row in the table are set to the new values; its other
    /// columns keep theirs (`INSERT … ON CONFLICT (key) DO UPDATE`).
    Update,
}

impl std::str::FromStr for OnConflict {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "fail" => Ok(OnConflict::Fail),
            "ignore" => Ok(OnConflict::Ignore),
            "replace" => Ok(OnConflict::Replace),
            "update" => Ok(OnConflict::Update),
            other => Err(format!(
                "unknown conflict rule {other:?} (expected fail, ignore, replace or update)"
            )),
        }
    }
}

/// Everything `import` needs to know besides the database and the inputs.
///
/// New options may be added in any release, so the struct is `#[non_exhaustive]`: start
/// from [`Default`] and set fields, and adding an option never breaks the caller.
///
/// ```
/// let mut opts = liteload::ImportOptions::default();
/// opts.table = Some("people".into());
/// opts.max_errors = Some(10);
/// ```
///
/// A struct literal does not compile outside this crate:
///
/// ```compile_fail
/// let opts = liteload::ImportOptions { alter: true, ..Default::default() };
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Read options. Their `format`, `delimiter` and `quote` are what a plan resolves
    /// for each input ([`crate::read_plan`] shows them): a load refuses them set, so
    /// that each has one place, the fields below.
    pub read: ReadOptions,
    /// The format of every input; `None` means "from each file's extension".
    pub format: Option<Format>,
    /// The field delimiter of every delimited input; `None`: `,` for CSV, tab for TSV.
    pub delimiter: Option<u8>,
    /// The quote of delimited inputs.
    pub quoting: Quoting,
    /// The table for every input; `None` means "each file's stem".
    pub table: Option<String>,
    /// Add columns that the table lacks instead of failing.
    pub alter: bool,
    /// Infer INTEGER/REAL/TEXT from the sample; `false` makes every column TEXT.
    pub detect_types: bool,
    /// Types that override the inferred ones, by column name.
    pub types: Vec<(String, ColumnType)>,
    /// Primary key columns of a created table.
    pub pk: Vec<String>,
    /// What a row whose key is in the table already does. Any rule but `Fail` takes
    /// SQLite's insert path (the page writer takes every row as it comes).
    pub on_conflict: OnConflict,
    /// The key for `on_conflict`: columns of the table's primary key or of one of its
    /// UNIQUE indexes. Empty: the table's primary key, else its one UNIQUE index (for
    /// `Update`, which needs one). A table this load creates gets these columns as its
    /// primary key when `pk` is empty.
    pub key: Vec<String>,
    /// Indexes built after the load.
    pub indexes: Vec<IndexSpec>,
    /// `None` picks `atomic-new` for a new file and `balanced` for an existing one.
    pub durability: Option<Durability>,
    /// Page size and the like, for a new file.
    pub file: FileSettings,
    /// Keep going past bad records, writing each (as JSON) to this file.
    pub rejects: Option<PathBuf>,
    /// Keep going past up to this many bad records.
    pub max_errors: Option<u64>,
    /// Parse and convert everything, write nothing.
    pub parse_only: bool,
    /// Rows per batch handed from the parser to the writer.
    pub batch_rows: usize,
    /// The cap on rows per INSERT statement.
    pub rows_per_statement: usize,
    /// SQLite's insert path, the direct page writer (one input, or typed inputs of one
    /// schema, into a new file), or `Auto` (the default): the page writer where it
    /// surely applies.
    pub engine: Engine,
    /// Direct engine: SQLite checks the file (`integrity_check`) before it is put in place.
    pub verify: bool,
    /// Direct engine: index entries are gathered and sorted in memory up to this many
    /// bytes (all indexes together, the sort's own room counted); beyond it they go to
    /// sorted runs in temporary files in the database's directory, merged when the
    /// indexes are written.
    pub index_memory: usize,
    /// What to do when the table exists already (and liteload did not create it in this
    /// load).
    pub if_exists: IfExists,
    /// Tell from each input's first bytes what the options leave open
    /// ([`crate::source::sniff`]): the format when the name does not give it (`.txt`,
    /// `.dat`, no name, stdin), the delimiter and quote of CSV when `delimiter` and
    /// `quoting` are left at their defaults, UTF-16 by its byte-order mark when the
    /// encoding is left at UTF-8. Each choice is in the summary. Compression is told by
    /// its magic bytes whatever this says.
    pub sniff: bool,
    /// With `sniff`: whether the first record of delimited text is a header is sniffed
    /// too (it is data only when it holds numbers or dates where the other records do);
    /// `false` keeps `read.header`.
    pub sniff_header: bool,
    /// With `sniff` and the encoding left at UTF-8: input whose sample is not UTF-8 is
    /// read as Windows-1252 (a superset of Latin-1, which decodes any byte), and the
    /// summary says it was a guess. Without it such input is an error that asks for
    /// the encoding.
    pub guess_encoding: bool,
    /// JSON, NDJSON, XML, Parquet and Arrow: what an array (a list column, an XML
    /// element with attributes or children, or one that repeats) inside a record becomes
    /// (see [`Nested`]).
    pub nested: Nested,
    /// With related tables: a name for the child table of the arrays at a path, in
    /// place of `<parent>_<key>`. The path is the keys from the record down, joined by
    /// `.` (`items.discounts`; an array in an array adds `value`; a flattened object's
    /// keys are steps too). A name another table of the load has gets `_2`, with a note.
    pub child_tables: Vec<(String, String)>,
}

/// What an array inside a JSON record becomes.
///
/// With related tables, every table of the load gets an `_id INTEGER PRIMARY KEY`
/// numbered from 1 in input order, and a child table (`<parent>_<key>`, the key's path
/// joined by `_` when flattening) gets `_parent` (a FOREIGN KEY to its parent's `_id`,
/// indexed) and `_position` (the element's place in its array, from 0). An element
/// that is an object gives its members as columns (its own arrays recurse); any other
/// element is the column `value` (an array in an array is then the child table
/// `<child>_value`). An empty array gives no row. Every table is new: a table of the
/// load that exists is replaced or refused as [`IfExists`] says, never appended to.
///
/// With one [`ImportOptions::pk`] column, the records' table is keyed by that member of
/// each record instead of `_id` (ASCII case ignored): INTEGER when every key is an
/// integer, else TEXT, and its children's `_parent` references it. A record without it,
/// with it twice, with a key that is no 64-bit integer or string, or with an earlier
/// record's key is a bad record, nothing of it loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nested {
    /// An array is one JSON text column, as any nested value.
    #[default]
    Json,
    /// Every array becomes rows of a child table.
    Tables,
    /// An array holding an object or an array becomes rows of a child table; one of
    /// scalars only (or an empty one) stays JSON text.
    ObjectTables,
}

impl std::str::FromStr for Nested {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Nested::Json),
            "tables" => Ok(Nested::Tables),
            "object-tables" => Ok(Nested::ObjectTables),
            other => Err(format!(
                "unknown nested rule {other:?} (expected json, tables or object-tables)"
            )),
        }
    }
}

/// Builder methods, one per common option, each returning the options: start from
/// [`Default`] and chain them.
///
/// ```
/// use liteload::{ColumnType, Durability, Engine, Format, IfExists, ImportOptions};
/// let opts = ImportOptions::default()
///     .format(Format::Csv)
///     .delimiter(b';')
///     .table("people")
///     .column_type("zip", ColumnType::Text)
///     .primary_key(["id"])
///     .index(["city"], false)
///     .max_errors(10)
///     .if_exists(IfExists::Replace)
///     .durability(Durability::Durable)
///     .engine(Engine::Sqlite);
/// assert_eq!(opts.table.as_deref(), Some("people"));
/// assert_eq!(opts.read.header, true);
/// ```
impl ImportOptions {
    /// The format of every input (else each file's extension, or sniffing, says).
    pub fn format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// The field delimiter of delimited inputs.
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = Some(delimiter);
        self
    }

    /// The quote of delimited inputs.
    pub fn quoting(mut self, quoting: Quoting) -> Self {
        self.quoting = quoting;
        self
    }

    /// Whether the first record of delimited input names the columns (it does by default).
    pub fn header(mut self, header: bool) -> Self {
        self.read.header = header;
        self.sniff_header = false;
        self
    }

    /// The table for every input (else each file's stem).
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = Some(table.into());
        self
    }

    /// Add columns an existing table lacks instead of refusing the load.
    pub fn alter(mut self, alter: bool) -> Self {
        self.alter = alter;
        self
    }

    /// The type of column `name`, over the inferred one.
    pub fn column_type(mut self, name: impl Into<String>, ty: ColumnType) -> Self {
        self.types.push((name.into(), ty));
        self
    }

    /// The primary key of a table the load creates.
    pub fn primary_key<I: IntoIterator<Item = S>, S: Into<String>>(mut self, columns: I) -> Self {
        self.pk = columns.into_iter().map(Into::into).collect();
        self
    }

    /// An index built after the rows, on `columns` in order; `unique` refuses a key
    /// seen twice.
    pub fn index<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        columns: I,
        unique: bool,
    ) -> Self {
        self.indexes.push(IndexSpec::new(columns, unique));
        self
    }

    /// The durability profile (else `atomic-new` for a new file, `balanced` for one
    /// that exists).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = Some(durability);
        self
    }

    /// Keep going past bad records, writing each (as JSON) to `path`.
    pub fn rejects(mut self, path: impl Into<PathBuf>) -> Self {
        self.rejects = Some(path.into());
        self
    }

    /// Keep going past up to `n` bad records.
    pub fn max_errors(mut self, n: u64) -> Self {
        self.max_errors = Some(n);
        self
    }

    /// What to do with a table that exists before the load.
    pub fn if_exists(mut self, if_exists: IfExists) -> Self {
        self.if_exists = if_exists;
        self
    }

    /// The writer ([`Engine::Auto`] by default).
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = engine;
        self
    }

    /// Tell what the options leave open from each input's first bytes (on by default).
    pub fn sniff(mut self, sniff: bool) -> Self {
        self.sniff = sniff;
        self
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            read: ReadOptions::default(),
            format: None,
            delimiter: None,
            quoting: Quoting::Default,
            table: None,
            alter: false,
            detect_types: true,
            types: vec![],
            pk: vec![],
            on_conflict: OnConflict::Fail,
            key: vec![],
            indexes: vec![],
            durability: None,
            file: FileSettings::default(),
            rejects: None,
            max_errors: None,
            parse_only: false,
            batch_rows: 8192,
            rows_per_statement: DEFAULT_ROWS_PER_STATEMENT,
            engine: Engine::Auto,
            verify: false,
            index_memory: 1 << 30,
            child_tables: vec![],
            if_exists: IfExists::Append,
            nested: Nested::Json,
            sniff: true,
            sniff_header: true,
            guess_encoding: false,
        }
    }
}
