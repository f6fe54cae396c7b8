//! `liteload import`: flags parsed and checked into `ImportOptions`, then the library runs.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{ArgAction, Args};
use liteload::source::columnar::{Decimals, Temporal};
use liteload::FileSettings;
use liteload::{
    ColumnType, Durability, Encoding, Format, IfExists, ImportOptions, IndexSpec, Input, Nulls,
    OnConflict, Progress, Quoting, Ragged, ReadOptions, Summary,
};

use super::UsageError;
use crate::progress::Bar;
use crate::report::{grouped, made_how};

const EXAMPLES: &str = "\
Examples:
  liteload import transit.db schedule.tsv               table \"schedule\", types inferred
  liteload import shop.db orders.csv.gz --pk id --index customer_id
  liteload import logs.db - --nl --table events < events.ndjson
  liteload import shop.db more_orders.csv --table orders --alter
  liteload import shop.db dirty.csv --rejects rejects.ndjson --max-errors 100
  liteload import trips.db 'days/*.parquet' --table trips --select id,stop,at
  liteload import copy.db 'postgresql://ann@db.example.com/shop'        every table of public
  liteload import copy.db 'postgresql:///shop?host=/var/run/postgresql' --tables orders,items
  liteload import top.db 'postgresql://ann@db/shop' --query 'SELECT * FROM orders WHERE total > 100' --table big
  liteload import copy.db 'mysql://ann@db.example.com/shop' --tables orders,items
  liteload import copy.db 'mariadb://root@localhost/shop?socket=/run/mysqld/mysqld.sock'

PostgreSQL (a postgresql:// URI as the one input): every base table of the schema (--schema,
  default public; --tables for some) is copied into a table of the same name, all inside one
  snapshot, with binary COPY on several connections (--connections). The password comes from
  the URI, PGPASSWORD or ~/.pgpass, never needed on the command line; sslmode is honored.
  Types: smallint/integer/bigint INTEGER; real/double REAL (NaN NULL); numeric exact TEXT
  (--decimals real: REAL); boolean 0/1; text/varchar/char TEXT; bytea BLOB; uuid TEXT; date
  YYYY-MM-DD; timestamp ISO 8601; timestamptz ISO 8601 in UTC with Z; time HH:MM:SS[.ffffff];
  json/jsonb and arrays JSON TEXT; anything else its text as PostgreSQL prints it. A
  one-column integer primary key becomes INTEGER PRIMARY KEY; other keys and unique
  constraints UNIQUE indexes; b-tree indexes on columns are rebuilt (others are skipped,
  with a note). Constant defaults, and CHECKs SQLite evaluates as PostgreSQL does
  (comparisons of numbers, = and <> of text, IN lists, IS NULL, AND/OR/NOT), are
  declared; the others are named in the summary.

MySQL and MariaDB (a mysql:// or mariadb:// URI as the one input): every base table of the
  database is copied the same way, inside one snapshot taken under LOCK TABLES … READ (one
  connection where the user may not lock), in ranges of an integer primary key. The password
  comes from the URI, MYSQL_PWD or the option files' [client] group; ?ssl-mode= as the
  mysql client's (DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY), ?ssl-ca=,
  ?socket=. Types: integers and YEAR INTEGER (BIGINT UNSIGNED declared BLOB: INTEGER, TEXT
  past 2^63-1); BIT INTEGER; FLOAT/DOUBLE REAL; DECIMAL exact TEXT (--decimals real);
  DATE YYYY-MM-DD; DATETIME ISO 8601 as written; TIMESTAMP ISO 8601 in UTC with Z; zero
  dates with their zeros; TIME [-]HHH:MM:SS; strings, ENUM, SET, JSON TEXT in UTF-8;
  binary strings BLOB; spatial WKB BLOB. --views and --foreign-keys as for PostgreSQL;
  triggers, routines and events are named in the summary, not copied; CHECKs on numbers
  are declared, the others named.

Parquet and Arrow: the types come from the file's schema: integers and booleans INTEGER,
  floats REAL (NaN as NULL), strings TEXT, binary BLOB, decimals exact TEXT (--decimals
  real), dates and timestamps ISO 8601 TEXT (--temporal epoch: INTEGER), lists, structs
  and maps JSON TEXT. A UInt64 above 2^63-1 is a bad record.

Types: each column is INTEGER, REAL or TEXT, inferred from the first --sample records.
  INTEGER: exactly a 64-bit integer in canonical form: 42, -7, 0. A leading zero (007,
    02134), a plus sign or -0 is TEXT: never silently an integer. An integer beyond the
    64-bit range is TEXT (its digits kept), never a rounded REAL.
  REAL: a decimal with a fraction or exponent (1.5, -0.25, 6e23). .5, 1., inf, NaN are TEXT.
  An empty field in an INTEGER or REAL column is NULL; in a TEXT column it is '' unless
  --empty-null. JSON strings are always TEXT, true/false are 1/0, nested objects and
  arrays are stored as JSON text.
  A value that does not fit its column's type (\"abc\" after 10,000 integers) is stored as
  it is, by SQLite's flexible typing, and counted in the summary; in an INTEGER or REAL
  column SQLite itself turns numeric-looking text (\"007\") into a number: use --type to
  make such a column TEXT.

Durability (--durability):
  atomic-new  default for a new DB: built as DB.liteload-tmp with no journal syncs, then
              synced and moved into place. A crash leaves no DB or the complete DB.
  balanced    default for an existing DB: WAL, synchronous=NORMAL, one transaction. A
              crash leaves the DB as before the load. (The file stays in WAL mode.) An
              append through the page writer's side file, and a load into a file in
              rollback-journal mode, runs with a rollback journal and synchronous=FULL
              instead (new pages are then written once), and the file is in WAL mode
              once the load commits (a failed load leaves it byte for byte as it was).
  durable     like balanced with synchronous=FULL (EXTRA for a side-file append).
  unsafe      journal and syncs off, in place: a crash can corrupt the DB.

Exit codes: 0 done; 1 bad input or a row the table's constraints refuse; 2 bad usage;
3 I/O or SQLite failure; 4 the database does not fit (a table exists, lacks a column);
70 a bug in liteload; 130 interrupted.";

/// Bulk-load CSV, TSV, NDJSON, JSON, XML, Parquet or Arrow files into a table of an SQLite
/// database, or copy a PostgreSQL database's tables.
///
/// Each FILE goes into the table named by --table, or by its file name without extensions
/// (people.csv.gz -> people); Parquet and Arrow files of one schema all go into one
/// table (the first file's name), with the column types of their schema. The table is created with inferred column types if it does
/// not exist; if it does, columns are matched by name. All files load in one transaction.
#[derive(Args, Debug)]
#[command(after_long_help = EXAMPLES, after_help = "See --help for the type rules, durability profiles and examples.")]
pub struct ImportArgs {
    /// The SQLite database file (created if missing), or an rqlite cluster:
    /// rqlite://HOST:PORT (rqlite+https://…; USER:PASSWORD@ or LITELOAD_RQLITE_USER and
    /// LITELOAD_RQLITE_PASSWORD for basic auth).
    pub db: PathBuf,

    /// Input files; `-` reads stdin. A `.gz` suffix is decompressed. A quoted pattern
    /// (`'data/*.parquet'`) is expanded. Or one PostgreSQL database:
    /// `postgresql://USER@HOST:PORT/DBNAME` (see --schema, --tables, --query), or one
    /// MySQL or MariaDB database: `mysql://USER@HOST:PORT/DBNAME`. Or SQLite
    /// database files (told by their header): every table copied with its declared
    /// schema and indexes, tables of one name merged (see --tables, --keep-rowids,
    /// --on-conflict); into a new file the page writer copies their records as stored
    /// where the tables allow it (docs/import.md, "SQLite files"), else SQLite does.
    #[arg(required = true)]
    pub files: Vec<String>,

    // ---- Databases (PostgreSQL, MySQL/MariaDB)
    /// PostgreSQL: the schema whose base tables are copied (default public). MySQL: the
    /// database (default: the URI's).
    #[arg(long, value_name = "NAME", help_heading = "Databases")]
    pub schema: Option<String>,

    /// PostgreSQL, MySQL: copy only these tables (exact names, comma-separated). SQLite
    /// files: only these tables (names as SQLite compares them).
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        help_heading = "Databases",
        conflicts_with = "query"
    )]
    pub tables: Vec<String>,

    /// PostgreSQL, MySQL: copy this query's rows instead, into the table --table names.
    #[arg(
        long,
        value_name = "SQL",
        help_heading = "Databases",
        conflicts_with = "schema",
        requires = "table"
    )]
    pub query: Option<String>,

    /// PostgreSQL, MySQL: copy the views too (PostgreSQL's materialized views as well), each
    /// as a table of its rows (its SQL in the summary). Without it each is named there
    /// as not copied.
    #[arg(long, help_heading = "Databases", conflicts_with = "query")]
    pub views: bool,

    /// PostgreSQL, MySQL: declare the foreign keys between the copied tables (to a key
    /// or the columns of a UNIQUE index), the rows checked after the copy (`PRAGMA
    /// foreign_key_check`, each table with orphans in the summary). Without it, and for
    /// the keys SQLite cannot declare, each is named in the summary.
    #[arg(long, help_heading = "Databases", conflicts_with = "query")]
    pub foreign_keys: bool,

    /// PostgreSQL, MySQL: connections that read at once (default: one per core, at most
    /// 8).
    #[arg(long, value_name = "N", help_heading = "Databases", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub connections: Option<u16>,

    // ---- SQLite files
    /// SQLite files: keep every implicit rowid as its file has it, also where tables of
    /// one name are merged (then a rowid already in the table refuses the load). By
    /// default a table merged from several files, or appended to one there, is numbered
    /// anew in input order; an INTEGER PRIMARY KEY is data and is always kept.
    #[arg(long, help_heading = "SQLite files")]
    pub keep_rowids: bool,

    // ---- format
    /// Input format: csv, tsv, ndjson (one JSON object per line), json (one array of
    /// objects, or an object holding one, see --record), xml (an element per row, see
    /// --record), parquet, arrow (an Arrow IPC file or stream), or xlsx (a spreadsheet:
    /// .xlsx, .xlsm, .xlsb, .xls or .ods, see --sheet). Default: from each file's
    /// extension (.csv, .tsv, .ndjson/.jsonl, .json, .xml, .parquet/.pq; .arrow, .feather,
    /// .ipc, .arrows; .xlsx, .xlsm, .xlsb, .xls, .ods), else from its first bytes (`[` JSON, `{` NDJSON unless
    /// its first line is no whole object and the object holds an array of objects, `<`
    /// XML, else delimited text).
    #[arg(long, value_name = "FMT", help_heading = "Format")]
    pub format: Option<Format>,
    /// Same as --format csv.
    #[arg(long, help_heading = "Format", conflicts_with_all = ["format", "tsv", "nl", "json"])]
    pub csv: bool,
    /// Same as --format tsv (tab-separated; quoting as in CSV: fields that start and end
    /// with `"` are quoted, and a file without such fields is read without quoting).
    #[arg(long, help_heading = "Format", conflicts_with_all = ["format", "nl", "json"])]
    pub tsv: bool,
    /// Same as --format ndjson.
    #[arg(long, help_heading = "Format", conflicts_with_all = ["format", "json"])]
    pub nl: bool,
    /// Same as --format json.
    #[arg(long, help_heading = "Format", conflicts_with = "format")]
    pub json: bool,
    /// Field delimiter: one character, or `tab`. Example: --delimiter ';'
    #[arg(long, value_name = "CHAR", help_heading = "Format")]
    pub delimiter: Option<String>,
    /// Quote character. Default: `"` where the sample's fields start and end with it (one
    /// rule for CSV and TSV, decided before fields are counted), else none.
    #[arg(
        long,
        value_name = "CHAR",
        help_heading = "Format",
        conflicts_with = "no_quote"
    )]
    pub quote: Option<String>,
    /// Turn quoting off: quotes are ordinary characters.
    #[arg(long, help_heading = "Format")]
    pub no_quote: bool,
    /// The first record is data; columns are named c1, c2, … (or by --columns).
    #[arg(long, help_heading = "Format", conflicts_with = "header")]
    pub no_header: bool,
    /// The first record names the columns, whatever sniffing would say (by default it
    /// is data only when it holds numbers or dates where the other records do).
    #[arg(long, help_heading = "Format")]
    pub header: bool,
    /// Take nothing from the content: the format from the name (stdin is CSV), `,` for
    /// CSV, a header line, UTF-8. Compression is still told by its magic bytes.
    #[arg(long, help_heading = "Format")]
    pub no_sniff: bool,
    /// Input that is not UTF-8 (and has no UTF-16 byte-order mark) is read as
    /// Windows-1252, a superset of Latin-1, and the summary says so; without this it is
    /// an error that asks for --encoding.
    #[arg(long, help_heading = "Format", conflicts_with = "no_sniff")]
    pub guess_encoding: bool,
    /// Numbers use a decimal comma: `1.234,56` is stored as the REAL 1234.56 (and
    /// `1.234.567` as the INTEGER 1234567). Delimited text only.
    #[arg(long, help_heading = "Format")]
    pub decimal_comma: bool,
    /// Fields that are dates in one of these strftime formats, comma-separated, are stored
    /// as ISO 8601 text that SQLite's date functions read (`23.11.2026` -> `2026-11-23`).
    /// Example: --dates '%d.%m.%Y,%d.%m.%Y %H:%M'. Delimited text only.
    #[arg(
        long,
        value_name = "FORMAT[,FORMAT]",
        value_delimiter = ',',
        help_heading = "Format"
    )]
    pub dates: Vec<String>,
    /// Column names, comma-separated: they replace the header's names (or, with
    /// --no-header, name the columns). Example: --columns id,name,price
    #[arg(
        long,
        value_name = "A,B,C",
        value_delimiter = ',',
        help_heading = "Format"
    )]
    pub columns: Option<Vec<String>>,
    /// XML: the path of the record elements from the root, `/`-separated (posts/row,
    /// catalog/books/book); each becomes a row, its attributes and text-only child
    /// elements its columns (by local name), a child with children, attributes or
    /// repeats a JSON text column, its own text the column `text`. Default: the root
    /// and the first element name that repeats under it, or under the one element a root
    /// holds (rss/channel/item). JSON: the keys from the top-level object to the array of
    /// records, `.`-separated (List, data.items), or a JSON Pointer (/data/items, `~1`
    /// for a `/` in a key); default: a top-level array, or the one member of a top-level
    /// object that holds an array of objects (a second one is an error), with a note.
    /// The rest of the document is read and checked. `liteload sniff` shows either.
    #[arg(long, value_name = "PATH", help_heading = "Format")]
    pub record: Option<String>,
    /// JSON, NDJSON: the members of nested objects become columns of their own, named by
    /// their keys' path joined by --flatten-separator (owner_address_city); arrays stay
    /// JSON text, an empty object gives no column. XML: a child with attributes or
    /// children (named once) gives a column for each of them, at every depth
    /// (customer_address_city, customer_vip for an attribute, customer_text for its own
    /// text); repeated children stay one JSON column. Parquet, Arrow: the fields of struct
    /// columns, at every depth, NULL where a struct above is. A name that collides with
    /// another column's gets `_2`, with a note.
    #[arg(long, help_heading = "Format")]
    pub flatten: bool,
    /// What joins the keys of a flattened column's name.
    #[arg(
        long,
        value_name = "SEP",
        default_value = "_",
        requires = "flatten",
        help_heading = "Format"
    )]
    pub flatten_separator: String,
    /// JSON, NDJSON, XML, Parquet, Arrow: `tables` makes every array (list column,
    /// structured or repeated XML element) in a record rows of a child table, named
    /// <table>_<key> (deeper arrays
    /// <table>_<key>_<key>), loaded in the same atomic load: every table gets `_id INTEGER PRIMARY KEY` (1, 2, … in input
    /// order), a child's rows `_parent` (its parent row's _id, a FOREIGN KEY, indexed)
    /// and `_position` (the element's place, from 0). An object element gives its
    /// members as columns; another element the column `value`. An empty array gives no
    /// row. With --flatten, arrays inside nested objects are children too. With --pk
    /// COL the records' table is keyed by each record's member COL instead of _id, and
    /// its children's _parent holds it (a record without one, or repeating one, is a bad
    /// record). `json`: an array is JSON text, as every nested value.
    #[arg(
        long,
        value_enum,
        value_name = "RULE",
        default_value = "json",
        help_heading = "Format"
    )]
    pub nested: NestedArg,
    /// With --nested tables: `json` keeps an array of scalars only (or an empty one) as
    /// JSON text in its parent's column; arrays holding objects or arrays are still
    /// child tables.
    #[arg(
        long,
        value_enum,
        value_name = "AS",
        default_value = "table",
        help_heading = "Format"
    )]
    pub scalar_arrays: ScalarArraysArg,
    /// With --nested tables: name the child table of the arrays at PATH (the keys from
    /// the record down, joined by '.'; an array in an array adds `value`) instead of
    /// <parent>_<key>. Repeatable. Example: --child-table items.discounts=discounts
    #[arg(long, value_name = "PATH=NAME", help_heading = "Format")]
    pub child_table: Vec<String>,
    /// Spreadsheets: load this worksheet only (into the table --table names, else one
    /// named after the sheet). Default: every worksheet that holds a value, each into a
    /// table named after it. A sheet's columns run from its leftmost to its rightmost
    /// column with a value in the header and the sampled rows; rows with no value are
    /// skipped. Numbers are INTEGER or REAL as in CSV, booleans 1/0, dates and times ISO
    /// 8601 text (either date system), error cells (#N/A) NULL with a note, formulas
    /// their cached values; a merged range's value is in its top-left cell.
    #[arg(long, value_name = "NAME", help_heading = "Format")]
    pub sheet: Option<String>,
    /// Skip this many lines at the start of each file, before the header.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "Format")]
    pub skip: u64,
    /// Text encoding of the input: utf-8, latin1 (ISO-8859-1, read as Windows-1252),
    /// utf-16, utf-16le, utf-16be. Given, it wins over a byte-order mark and an XML
    /// declaration; by default UTF-8 unless either says otherwise. A UTF-8 byte-order
    /// mark is always skipped.
    #[arg(long, value_name = "ENC", help_heading = "Format")]
    pub encoding: Option<Encoding>,

    // ---- typed input (Parquet, Arrow)
    /// Parquet/Arrow: load only these columns, in this order (Parquet does not decode the
    /// others). Example: --select id,name
    #[arg(
        long,
        value_name = "A,B,C",
        value_delimiter = ',',
        help_heading = "Parquet and Arrow"
    )]
    pub select: Option<Vec<String>>,
    /// Parquet/Arrow dates, times and timestamps: `iso` (TEXT in ISO 8601, which SQLite's
    /// date functions read; a timestamp with a time zone in UTC with `Z`) or `epoch`
    /// (INTEGER in the column's own unit: days for Date32, ms for Date64, the
    /// timestamp's unit since 1970-01-01 UTC).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = TemporalArg::Iso, help_heading = "Parquet and Arrow")]
    pub temporal: TemporalArg,
    /// Parquet/Arrow decimals and PostgreSQL numerics: `text` (exact, every digit) or
    /// `real` (nearest double).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = DecimalsArg::Text, help_heading = "Parquet and Arrow")]
    pub decimals: DecimalsArg,

    // ---- table
    /// Table name (default: each file's name without extensions; required for stdin).
    #[arg(long, short = 't', value_name = "NAME", help_heading = "Table")]
    pub table: Option<String>,
    /// Add columns the existing table lacks (ALTER TABLE … ADD COLUMN) instead of failing.
    #[arg(long, help_heading = "Table")]
    pub alter: bool,
    /// When the table exists already: append (add the rows), fail (refuse before writing
    /// anything), or replace (drop it and create it from the input, in the load's
    /// transaction: a failed load keeps the old table).
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = IfExistsArg::Append, help_heading = "Table")]
    pub if_exists: IfExistsArg,
    /// Primary key of a new table, comma-separated. One INTEGER column becomes the rowid
    /// (INTEGER PRIMARY KEY). Example: --pk id
    #[arg(
        long,
        value_name = "COLS",
        value_delimiter = ',',
        help_heading = "Table"
    )]
    pub pk: Vec<String>,
    /// What a row whose key is in the table already does: fail (a bad record, the
    /// default), ignore (dropped, as INSERT OR IGNORE), replace (as INSERT OR REPLACE), or
    /// update (the row's loaded columns set to the new values, its others kept, as
    /// sqlite-utils upsert). Into a table keyed by its INTEGER PRIMARY KEY (and no other
    /// UNIQUE index) the rows are merged from a side file in key order by one statement;
    /// elsewhere they go through SQLite's insert path, a row per statement.
    #[arg(
        long,
        value_name = "RULE",
        default_value = "fail",
        help_heading = "Table"
    )]
    pub on_conflict: OnConflictArg,
    /// The key of --on-conflict: comma-separated columns of the table's primary key or of
    /// one of its UNIQUE indexes (default: the primary key, else the one UNIQUE index); a
    /// table the load creates gets them as its primary key. Example: --key id
    #[arg(
        long,
        value_name = "COLS",
        value_delimiter = ',',
        help_heading = "Table"
    )]
    pub key: Vec<String>,
    /// Create an index on these comma-separated columns after the rows are in
    /// (repeatable). Example: --index last,first --index city
    #[arg(long, value_name = "COLS", action = ArgAction::Append, help_heading = "Table")]
    pub index: Vec<String>,
    /// Like --index, with UNIQUE (repeatable).
    #[arg(long, value_name = "COLS", action = ArgAction::Append, help_heading = "Table")]
    pub unique_index: Vec<String>,

    // ---- types
    /// Set a column's type instead of inferring it (repeatable): integer, real or text.
    /// Example: --type zip=text
    #[arg(long = "type", value_name = "COL=TYPE", action = ArgAction::Append, help_heading = "Types")]
    pub types: Vec<String>,
    /// Store every value as TEXT (as `sqlite3 .import` does).
    #[arg(long, help_heading = "Types")]
    pub no_detect_types: bool,
    /// Which empty fields are NULL: typed (in INTEGER and REAL columns; '' in TEXT ones),
    /// all, or unquoted (PostgreSQL's CSV rule: `a,,b` is NULL in any column, `a,"",b`
    /// the empty string; CSV and TSV only).
    #[arg(
        long,
        value_name = "RULE",
        default_value = "typed",
        help_heading = "Types"
    )]
    pub nulls: NullsArg,
    /// Same as --nulls all.
    #[arg(long, help_heading = "Types")]
    pub empty_null: bool,
    /// Records read to infer types (and, for JSON, to find the columns).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        help_heading = "Types"
    )]
    pub sample: usize,

    // ---- bad input
    /// Keep going past bad records, writing each to FILE as one JSON object per line
    /// (file, line, column, record, reason, fields).
    #[arg(long, value_name = "FILE", help_heading = "Bad input")]
    pub rejects: Option<PathBuf>,
    /// Keep going past at most N bad records (each is reported); one more fails the load.
    #[arg(long, value_name = "N", help_heading = "Bad input")]
    pub max_errors: Option<u64>,
    /// Rows with fewer fields than the header: `pad` fills them with NULL; `truncate` also
    /// drops extra fields. Default: such a row is a bad record.
    #[arg(long, value_name = "HOW", help_heading = "Bad input")]
    pub ragged: Option<RaggedArg>,
    /// A record (or JSON line) longer than this many bytes is bad, before memory runs out.
    #[arg(long, value_name = "N", default_value_t = 64 << 20, help_heading = "Bad input")]
    pub max_record_bytes: usize,
    /// Threads that parse a CSV, TSV, NDJSON or JSON file of 8 MiB or more (uncompressed,
    /// UTF-8) at once, each a part of the file; rows, errors and line numbers are those of
    /// one reader.
    /// Default: the number of cores. 1 parses on one thread.
    #[arg(long, value_name = "N", help_heading = "Durability and speed")]
    pub parse_threads: Option<usize>,

    // ---- durability and speed
    /// atomic-new, balanced, durable or unsafe (see --help for what each promises).
    #[arg(long, value_name = "PROFILE", help_heading = "Durability and speed")]
    pub durability: Option<Durability>,
    /// Page size of a new database, a power of two from 512 to 65536.
    #[arg(long, value_name = "BYTES", help_heading = "Durability and speed")]
    pub page_size: Option<u32>,
    /// SQLite page cache: pages if positive, KiB if negative. Example: --cache-size -262144
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Durability and speed"
    )]
    pub cache_size: Option<i64>,
    /// Read and convert everything, write nothing: checks the input, and measures the
    /// parsing floor.
    #[arg(long, help_heading = "Durability and speed")]
    pub parse_only: bool,
    /// Rows per batch passed from the parser thread to the writer.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 8192,
        hide_short_help = true,
        help_heading = "Durability and speed"
    )]
    pub batch_rows: usize,
    /// The most rows one INSERT statement carries (also bounded by SQLite's limit on
    /// bound parameters, read at run time).
    #[arg(long, value_name = "N", default_value_t = liteload::DEFAULT_ROWS_PER_STATEMENT, hide_short_help = true, help_heading = "Durability and speed")]
    pub rows_per_statement: usize,
    /// How rows are written: `sqlite` (SQLite's insert path, any target), `direct` (the
    /// page writer: one input, or Parquet/Arrow files of one schema, into a new file, or
    /// into an existing one in place, past its end under a rollback journal SQLite plays
    /// back after a crash: a new table, rows after the last of a table without
    /// constraint or trigger (its indexes merged with the new entries), or an empty
    /// table made with NOT NULL, CHECK, UNIQUE, PRIMARY KEY or STRICT (checked as it is
    /// written); through a side file SQLite copies in where it cannot go in place (a file
    /// in WAL mode another connection has open, a table replaced, bad records set aside
    /// from a table made with constraints);
    /// the input's columns in the table's order; NDJSON/JSON only into a new table), or
    /// `auto`: `direct` for one CSV, TSV, NDJSON or JSON input (or Parquet/Arrow inputs
    /// of one schema) where it applies and pays (a few rows added to a big indexed table
    /// go through `sqlite`), no --pk or --alter, else `sqlite`. SQLite files: `auto`
    /// copies records as stored into a new file where the inputs allow it, `direct`
    /// insists (refused, with the reason, where they do not). The summary says which
    /// road a load took and why.
    #[arg(long, value_enum, default_value_t = super::generate::Engine::Auto, help_heading = "Durability and speed")]
    pub engine: super::generate::Engine,
    /// With the page writer (--engine direct, or auto where it picks it): SQLite runs
    /// `PRAGMA integrity_check` on the written file (an append's side file) before it
    /// is put in place (copied in); a failure leaves no file (the database as it was).
    #[arg(long, help_heading = "Durability and speed")]
    pub verify: bool,
    /// With the page writer: index entries are gathered and sorted in memory up to this
    /// many bytes (all indexes together, the sort's own room counted); beyond it they are
    /// written as sorted runs to temporary files beside the database and merged.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30, hide_short_help = true, help_heading = "Durability and speed")]
    pub index_memory: usize,

    // ---- output
    /// No progress bar, no summary (errors are still printed).
    #[arg(long, short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Print the summary as one JSON object on stdout.
    #[arg(long = "summary-json", help_heading = "Output")]
    pub summary_json: bool,

    #[command(flatten)]
    pub rqlite: super::rqlite::RqliteArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NestedArg {
    Json,
    Tables,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScalarArraysArg {
    Table,
    Json,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum TemporalArg {
    Iso,
    Epoch,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum DecimalsArg {
    Text,
    Real,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum IfExistsArg {
    Append,
    Fail,
    Replace,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnConflictArg {
    Fail,
    Ignore,
    Replace,
    Update,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NullsArg {
    Typed,
    All,
    Unquoted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RaggedArg {
    Pad,
    Truncate,
}

fn one_byte(flag: &str, s: &str) -> Result<u8, UsageError> {
    match s {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(UsageError(format!(
            "{flag} {s:?}: expected one ASCII character (or `tab`)"
        ))),
    }
}

fn index_spec(s: &str, unique: bool) -> Result<IndexSpec, UsageError> {
    let columns: Vec<String> = s.split(',').map(|c| c.trim().to_string()).collect();
    if columns.iter().any(|c| c.is_empty()) {
        return Err(UsageError(format!(
            "--index {s:?}: expected comma-separated column names"
        )));
    }
    Ok(IndexSpec::new(columns, unique))
}

/// Checks the flags and turns them into the library's options.
pub(crate) fn options(a: &ImportArgs) -> Result<ImportOptions, UsageError> {
    let format = a.format.or(if a.csv {
        Some(Format::Csv)
    } else if a.tsv {
        Some(Format::Tsv)
    } else if a.nl {
        Some(Format::Ndjson)
    } else if a.json {
        Some(Format::Json)
    } else {
        None
    });
    let quoting = match (&a.quote, a.no_quote) {
        (_, true) => Quoting::Off,
        (Some(q), _) => Quoting::Char(one_byte("--quote", q)?),
        (None, false) => Quoting::Default,
    };
    let mut types = vec![];
    for t in &a.types {
        let (col, ty) = t.split_once('=').ok_or_else(|| {
            UsageError(format!("--type {t:?}: expected COLUMN=TYPE, e.g. zip=text"))
        })?;
        let ty: ColumnType = ty
            .parse()
            .map_err(|e| UsageError(format!("--type {t:?}: {e}")))?;
        types.push((col.to_string(), ty));
    }
    let mut child_tables = vec![];
    for t in &a.child_table {
        let (path, name) = t.split_once('=').ok_or_else(|| {
            UsageError(format!(
                "--child-table {t:?}: expected PATH=NAME, e.g. items.discounts=discounts"
            ))
        })?;
        child_tables.push((path.to_string(), name.to_string()));
    }
    let mut indexes = vec![];
    for s in &a.index {
        indexes.push(index_spec(s, false)?);
    }
    for s in &a.unique_index {
        indexes.push(index_spec(s, true)?);
    }
    let read = {
        let mut built = ReadOptions::default();
        built.header = !a.no_header;
        built.columns = a.columns.clone();
        built.skip_lines = a.skip;
        built.encoding = a.encoding.unwrap_or(Encoding::Utf8);
        built.encoding_given = a.encoding.is_some();
        built.locale = {
            let mut l = liteload::source::locale::Locale::default();
            l.decimal_comma = a.decimal_comma;
            l.dates.clone_from(&a.dates);
            l
        };
        built.nulls = match (a.nulls, a.empty_null) {
            (NullsArg::All, _) | (NullsArg::Typed, true) => Nulls::All,
            (NullsArg::Typed, false) => Nulls::Typed,
            (NullsArg::Unquoted, false) => Nulls::Unquoted,
            (NullsArg::Unquoted, true) => {
                return Err(UsageError(
                    "--empty-null is --nulls all, which --nulls unquoted contradicts: pick one"
                        .into(),
                ))
            }
        };
        built.sample_rows = a.sample.max(1);
        built.max_record_bytes = a.max_record_bytes;
        built.parse_threads = a.parse_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        built.select = a.select.clone();
        built.record = a.record.clone();
        built.sheet = a.sheet.clone();
        built.flatten = a.flatten.then(|| a.flatten_separator.clone());
        built.temporal = match a.temporal {
            TemporalArg::Iso => Temporal::Iso8601,
            TemporalArg::Epoch => Temporal::Epoch,
        };
        built.decimals = match a.decimals {
            DecimalsArg::Text => Decimals::Text,
            DecimalsArg::Real => Decimals::Real,
        };
        built.ragged = match a.ragged {
            None => Ragged::Error,
            Some(RaggedArg::Pad) => Ragged::Pad,
            Some(RaggedArg::Truncate) => Ragged::Truncate,
        };
        built
    };
    Ok({
        let mut built = ImportOptions::default();
        built.read = read;
        built.format = format;
        built.delimiter = a
            .delimiter
            .as_deref()
            .map(|d| one_byte("--delimiter", d))
            .transpose()?;
        built.quoting = quoting;
        built.sniff = !a.no_sniff;
        built.sniff_header = !a.header && !a.no_header;
        built.guess_encoding = a.guess_encoding;
        built.table = a.table.clone();
        built.alter = a.alter;
        built.detect_types = !a.no_detect_types;
        built.types = types;
        built.pk =
            a.pk.iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
        built.indexes = indexes;
        built.on_conflict = match a.on_conflict {
            OnConflictArg::Fail => OnConflict::Fail,
            OnConflictArg::Ignore => OnConflict::Ignore,
            OnConflictArg::Replace => OnConflict::Replace,
            OnConflictArg::Update => OnConflict::Update,
        };
        built.key = a
            .key
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        built.durability = a.durability;
        built.file = FileSettings::new(a.page_size, a.cache_size);
        built.rejects = a.rejects.clone();
        built.max_errors = a.max_errors;
        built.parse_only = a.parse_only;
        built.batch_rows = a.batch_rows.max(1);
        built.rows_per_statement = a.rows_per_statement.max(1);
        built.engine = match a.engine {
            super::generate::Engine::Direct => liteload::Engine::Direct,
            super::generate::Engine::Sqlite => liteload::Engine::Sqlite,
            super::generate::Engine::Auto => liteload::Engine::Auto,
        };
        built.verify = a.verify;
        built.index_memory = a.index_memory;
        built.child_tables = child_tables;
        built.nested = match (a.nested, a.scalar_arrays) {
            (NestedArg::Json, ScalarArraysArg::Table) => liteload::Nested::Json,
            (NestedArg::Json, ScalarArraysArg::Json) => {
                return Err(UsageError(
                    "--scalar-arrays applies with --nested tables".into(),
                ))
            }
            (NestedArg::Tables, ScalarArraysArg::Table) => liteload::Nested::Tables,
            (NestedArg::Tables, ScalarArraysArg::Json) => liteload::Nested::ObjectTables,
        };
        built.if_exists = match a.if_exists {
            IfExistsArg::Append => IfExists::Append,
            IfExistsArg::Fail => IfExists::Fail,
            IfExistsArg::Replace => IfExists::Replace,
        };
        built
    })
}

pub fn run(a: ImportArgs) -> Result<()> {
    let opts = options(&a)?;
    let mysql = mysql_source(&a)?;
    let postgres = match mysql {
        Some(_) => None,
        None => postgres_source(&a)?,
    };
    let database = postgres.is_some() || mysql.is_some();
    let inputs = match database {
        true => vec![],
        false => expand(&a.files)?,
    };
    let sqlite = match database {
        true => None,
        false => liteload::sqlite_files::sqlite_inputs(&inputs)?,
    };
    if a.keep_rowids && sqlite.is_none() {
        return Err(UsageError("--keep-rowids goes with SQLite files as inputs".into()).into());
    }
    if sqlite.is_some() && (a.schema.is_some() || a.query.is_some() || a.connections.is_some()) {
        return Err(UsageError(
            "--schema, --query and --connections go with a postgresql:// input; SQLite files take --tables"
                .into(),
        )
        .into());
    }
    if !database && sqlite.is_none() && !a.tables.is_empty() {
        return Err(UsageError(
            "--tables goes with a postgresql:// or mysql:// input or SQLite files".into(),
        )
        .into());
    }
    if opts.durability == Some(Durability::Unsafe) && !a.quiet {
        eprintln!(
            "warning: --durability unsafe: a crash or power loss during this load can leave {} corrupt",
            a.db.display()
        );
    }
    let cluster = super::rqlite::target(&a.db)?;
    match &cluster {
        Some(_) if a.durability.is_some() || a.page_size.is_some() => {
            return Err(UsageError(
                "--durability and --page-size apply to a file; a cluster keeps its own settings"
                    .into(),
            )
            .into())
        }
        Some(_) => {}
        None => a.rqlite.check_file()?,
    }
    if database && cluster.is_some() {
        return Err(UsageError(
            "a PostgreSQL or MySQL database is copied into a file; to fill a cluster, copy into a file first".into(),
        )
        .into());
    }
    let progress = Arc::new(Progress::default());
    crate::progress::cancel_on_signals(progress.clone())?;
    let bar = Bar::start(progress.clone(), a.quiet);
    let result = match (&cluster, postgres) {
        (_, Some((url, pg))) => {
            liteload::postgres::import_postgres(&a.db, &url, &pg, &opts, &progress)
        }
        (_, None) if mysql.is_some() => {
            let (url, my) = mysql.unwrap_or_default();
            liteload::mysql::import_mysql(&a.db, &url, &my, &opts, &progress)
        }
        (_, None) if sqlite.is_some() => {
            let mut sq = liteload::sqlite_files::SqliteOptions::default();
            sq.tables.clone_from(&a.tables);
            sq.keep_rowids = a.keep_rowids;
            let dbs = sqlite.unwrap_or_default();
            match &cluster {
                Some(t) => liteload::rqlite::import_sqlite(
                    t,
                    &dbs,
                    &sq,
                    &opts,
                    &a.rqlite.options(),
                    &progress,
                ),
                None => liteload::sqlite_files::import_sqlite(&a.db, &dbs, &sq, &opts, &progress),
            }
        }
        (Some(t), None) => {
            liteload::rqlite::import(t, &inputs, &opts, &a.rqlite.options(), &progress)
        }
        (None, None) => liteload::import(&a.db, &inputs, &opts, &progress),
    };
    drop(bar);
    let summary = result?;
    report(&a, &summary).context("writing the summary")
}

/// The MySQL or MariaDB database the inputs name, with what to copy of it; `None` for
/// anything else.
fn mysql_source(a: &ImportArgs) -> Result<Option<(String, liteload::mysql::MysqlOptions)>> {
    let is_my = |f: &String| liteload::mysql::is_mysql_url(f);
    match a.files.as_slice() {
        [one] if is_my(one) => {
            let mut my = liteload::mysql::MysqlOptions::default();
            my.database.clone_from(&a.schema);
            my.tables.clone_from(&a.tables);
            my.query.clone_from(&a.query);
            my.connections = a.connections.map(usize::from);
            my.views = a.views;
            my.foreign_keys = a.foreign_keys;
            Ok(Some((one.clone(), my)))
        }
        files if files.iter().any(is_my) => Err(UsageError(
            "a MySQL database is the one input of its load: copy files in another run".into(),
        )
        .into()),
        _ => Ok(None),
    }
}

/// The PostgreSQL database the inputs name, with what to copy of it; `None` for files.
fn postgres_source(a: &ImportArgs) -> Result<Option<(String, liteload::postgres::PgOptions)>> {
    let is_pg = |f: &String| liteload::postgres::is_postgres_url(f);
    // (--tables goes with SQLite files too: checked once the inputs are known.)
    let pg_flags = a.schema.is_some()
        || a.query.is_some()
        || a.connections.is_some()
        || a.views
        || a.foreign_keys;
    match a.files.as_slice() {
        [one] if is_pg(one) => {
            let mut pg = liteload::postgres::PgOptions::default();
            pg.schema.clone_from(&a.schema);
            pg.tables.clone_from(&a.tables);
            pg.query.clone_from(&a.query);
            pg.connections = a.connections.map(usize::from);
            pg.views = a.views;
            pg.foreign_keys = a.foreign_keys;
            Ok(Some((one.clone(), pg)))
        }
        files if files.iter().any(is_pg) => Err(UsageError(
            "a PostgreSQL database is the one input of its load: copy files in another run".into(),
        )
        .into()),
        _ if pg_flags => Err(UsageError(
            "--schema, --query, --views, --foreign-keys and --connections go with a postgresql:// (or mysql://) input".into(),
        )
        .into()),
        _ => Ok(None),
    }
}

/// The inputs the arguments name. An argument that names no file but holds a glob
/// pattern (`*`, `?`, `[`) is expanded here, in name order, so that a pattern quoted
/// against the shell works too; a pattern that matches nothing is an error.
pub(crate) fn expand(files: &[String]) -> Result<Vec<Input>, UsageError> {
    let mut inputs = vec![];
    for f in files {
        let pattern = f.contains(['*', '?', '[']) && !std::path::Path::new(f).exists();
        if !pattern {
            inputs.push(Input::from_arg(f));
            continue;
        }
        let paths = glob::glob(f).map_err(|e| UsageError(format!("{f:?}: {e}")))?;
        let mut found: Vec<PathBuf> = paths
            .filter_map(|p| p.ok())
            .filter(|p| p.is_file())
            .collect();
        if found.is_empty() {
            return Err(UsageError(format!("{f:?}: no file matches this pattern")));
        }
        found.sort();
        inputs.extend(found.into_iter().map(Input::Path));
    }
    Ok(inputs)
}

fn report(a: &ImportArgs, s: &Summary) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if a.summary_json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(s).map_err(std::io::Error::other)?
        )?;
    }
    if a.quiet {
        return Ok(());
    }
    for sn in s.sniffed.iter().filter(|sn| sn.changed) {
        eprintln!("sniffed: {}: {}", sn.input, sn.described);
    }
    for h in &s.locale_hints {
        match &h.date_format {
            None => eprintln!(
                "note: {}: column {:?} looks written with a decimal comma ({}); --decimal-comma reads it so, as numbers",
                h.input, h.column, h.example
            ),
            Some(f) => eprintln!(
                "note: {}: column {:?} looks like dates in {f} ({}), kept as text; --dates '{f}' stores them as ISO 8601 (YYYY-MM-DD)",
                h.input, h.column, h.example
            ),
        }
    }
    for n in &s.notes {
        eprintln!("note: {n}");
    }
    if s.rejects > 0 {
        let dest = match &a.rejects {
            Some(p) => format!(" (written to {})", p.display()),
            None => String::new(),
        };
        eprintln!(
            "note: skipped {} bad record{}{dest}; the first:",
            s.rejects,
            plural(s.rejects)
        );
        for m in &s.reject_samples {
            eprintln!("  {m}");
        }
    }
    if let Some(first) = &s.first_type_mismatch {
        eprintln!(
            "note: {} value{} did not fit {} column's type and {} stored as {}; the first: {first} (set a type with --type COLUMN=text)",
            s.type_mismatches,
            plural(s.type_mismatches),
            if s.type_mismatches == 1 { "its" } else { "their" },
            if s.type_mismatches == 1 { "was" } else { "were" },
            if s.type_mismatches == 1 { "it is" } else { "they are" },
        );
    }
    if !a.summary_json {
        let tables: Vec<String> = s.tables.iter().map(|t| format!("\"{t}\"")).collect();
        let what = if a.parse_only { "Parsed" } else { "Loaded" };
        let db = if a.parse_only {
            String::new()
        } else {
            match s.engine {
                Some(liteload::EngineUsed::Rqlite) => {
                    format!("; {} ({})", super::rqlite::shown(&a.db), made_how(s))
                }
                _ => format!(
                    "; {} {} ({})",
                    super::rqlite::shown(&a.db),
                    human_bytes(s.db_bytes),
                    made_how(s)
                ),
            }
        };
        writeln!(
            out,
            "{what} {} row{} into {} in {:.2} s ({} rows/s); {} reject{}, {} type mismatch{}{db}",
            grouped(s.rows),
            plural(s.rows),
            tables.join(", "),
            s.seconds,
            grouped(s.rows_per_second as u64),
            s.rejects,
            plural(s.rejects),
            s.type_mismatches,
            if s.type_mismatches == 1 { "" } else { "es" },
        )?;
    }
    Ok(())
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(864913), "864,913");
        assert_eq!(grouped(10_000_000), "10,000,000");
    }

    #[test]
    fn one_byte_flags() {
        assert_eq!(one_byte("--delimiter", "tab").ok(), Some(b'\t'));
        assert_eq!(one_byte("--delimiter", ";").ok(), Some(b';'));
        assert!(one_byte("--delimiter", "é").is_err());
    }
}
