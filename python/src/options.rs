//! The package's keyword arguments as the library's option types: `import_file`'s as
//! [`ImportOptions`], `generate`'s as [`GenerateOptions`], `ingest`'s as
//! [`IngestOptions`] and [`FeedOptions`]. Each keyword maps onto a field here, in one
//! place; the library checks what depends on the data or the database.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;

use liteload::generate::spec::ColumnSpec;
use liteload::generate::GenerateOptions;
use liteload::ingest::connect::{self, Connect, Transport};
use liteload::ingest::feed::FeedOptions;
use liteload::ingest::IngestOptions;
use liteload::source::columnar::{Decimals, Temporal};
use liteload::source::locale::Locale;
use liteload::{
    ColumnType, Durability, Encoding, Engine, FileSettings, Format, IfExists, ImportOptions,
    IndexSpec, Nulls, OnConflict, Quoting, Ragged,
};

use crate::keywords::Keywords;

const ENGINES: &[(&str, Engine)] = &[
    ("auto", Engine::Auto),
    ("direct", Engine::Direct),
    ("sqlite", Engine::Sqlite),
];

pub const IF_EXISTS: &[(&str, IfExists)] = &[
    ("append", IfExists::Append),
    ("fail", IfExists::Fail),
    ("replace", IfExists::Replace),
];

/// The threads a job uses when the caller names none: every core.
fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `durability=`.
pub fn durability(kw: &mut Keywords<'_>) -> PyResult<Option<Durability>> {
    kw.parsed("durability", |s| s.parse::<Durability>())
}

/// `engine=`.
pub fn engine(kw: &mut Keywords<'_>) -> PyResult<Engine> {
    Ok(kw.choice("engine", ENGINES)?.unwrap_or_default())
}

/// `page_size=` and `cache_size=`.
fn file_settings(kw: &mut Keywords<'_>) -> PyResult<FileSettings> {
    let page_size = kw.option::<u32>("page_size", "an int")?;
    let cache_size = kw.option::<i64>("cache_size", "an int")?;
    Ok(FileSettings::new(page_size, cache_size))
}

/// A one-character option (`delimiter=`, `quote=`): one ASCII character, or `"tab"`.
fn one_byte(kw: &Keywords<'_>, name: &str, s: &str) -> PyResult<u8> {
    match s {
        "tab" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(kw.usage(format!(
            "{name}={s:?}: expected one ASCII character (or 'tab')"
        ))),
    }
}

/// `on_conflict=` and `key=`.
pub fn conflict(kw: &mut Keywords<'_>, o: &mut ImportOptions) -> PyResult<()> {
    o.on_conflict = kw
        .choice(
            "on_conflict",
            &[
                ("fail", OnConflict::Fail),
                ("ignore", OnConflict::Ignore),
                ("replace", OnConflict::Replace),
                ("update", OnConflict::Update),
            ],
        )?
        .unwrap_or_default();
    o.key = kw.names("key")?;
    Ok(())
}

/// `indexes=` and `unique_indexes=` as index specs.
pub fn indexes(kw: &mut Keywords<'_>) -> PyResult<Vec<IndexSpec>> {
    let mut out = vec![];
    for (name, unique) in [("indexes", false), ("unique_indexes", true)] {
        for columns in kw.name_lists(name)? {
            out.push(IndexSpec::new(columns, unique));
        }
    }
    Ok(out)
}

/// `import_file`'s keywords (all but the database, the sources and `progress`).
pub fn import(kw: &mut Keywords<'_>) -> PyResult<ImportOptions> {
    let mut o = ImportOptions::default();
    o.table = kw.option("table", "a str")?;
    o.format = kw.parsed("format", |s| s.parse::<Format>())?;
    o.delimiter = match kw.option::<String>("delimiter", "a str")? {
        Some(d) => Some(one_byte(kw, "delimiter", &d)?),
        None => None,
    };
    let quote = kw.any("quote")?;
    o.quoting = if quote.is_none() || quote.extract::<bool>().ok() == Some(true) {
        Quoting::Default
    } else if quote.extract::<bool>().ok() == Some(false) {
        Quoting::Off
    } else {
        match quote.extract::<String>() {
            Ok(q) => Quoting::Char(one_byte(kw, "quote", &q)?),
            Err(_) => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "import_file(): quote= takes a str of one character, or False, not {}",
                    quote.get_type().name()?
                )))
            }
        }
    };
    match kw.option::<bool>("header", "True, False or None")? {
        None => {}
        Some(h) => {
            o.read.header = h;
            o.sniff_header = false;
        }
    }
    let columns = kw.names("columns")?;
    o.read.columns = (!columns.is_empty()).then_some(columns);
    o.read.skip_lines = kw.count("skip")?.unwrap_or(0);
    let encoding = kw.parsed("encoding", |s| s.parse::<Encoding>())?;
    o.read.encoding_given = encoding.is_some();
    o.read.encoding = encoding.unwrap_or(o.read.encoding);
    o.sniff = kw.get("sniff", "a bool")?;
    o.guess_encoding = kw.get("guess_encoding", "a bool")?;
    if o.guess_encoding && !o.sniff {
        return Err(
            kw.usage("guess_encoding=True reads the sample, which sniff=False forbids: pick one")
        );
    }
    o.read.locale = {
        let mut l = Locale::default();
        l.decimal_comma = kw.get("decimal_comma", "a bool")?;
        l.dates = kw.names("dates")?;
        l
    };
    let select = kw.names("select")?;
    o.read.select = (!select.is_empty()).then_some(select);
    o.read.record = kw.option("record", "a str")?;
    o.read.sheet = kw.option("sheet", "a str")?;
    shapes(kw, &mut o)?;
    o.read.temporal = kw
        .choice(
            "temporal",
            &[("iso", Temporal::Iso8601), ("epoch", Temporal::Epoch)],
        )?
        .unwrap_or(Temporal::Iso8601);
    o.read.decimals = kw
        .choice(
            "decimals",
            &[("text", Decimals::Text), ("real", Decimals::Real)],
        )?
        .unwrap_or(Decimals::Text);
    o.alter = kw.get("alter", "a bool")?;
    o.if_exists = kw.choice("if_exists", IF_EXISTS)?.unwrap_or(o.if_exists);
    o.pk = kw.names("pk")?;
    conflict(kw, &mut o)?;
    o.indexes = indexes(kw)?;
    o.types = column_types(kw, "types")?;
    o.detect_types = kw.get("detect_types", "a bool")?;
    let nulls = kw
        .choice(
            "nulls",
            &[
                ("typed", Nulls::Typed),
                ("all", Nulls::All),
                ("unquoted", Nulls::Unquoted),
            ],
        )?
        .unwrap_or_default();
    let empty_null: bool = kw.get("empty_null", "a bool")?;
    o.read.nulls = match (nulls, empty_null) {
        (Nulls::Typed, true) | (Nulls::All, _) => Nulls::All,
        (Nulls::Unquoted, true) => {
            return Err(kw.usage(
                "empty_null=True is nulls='all', which nulls='unquoted' contradicts: pick one",
            ))
        }
        (n, _) => n,
    };
    o.read.sample_rows = kw.size("sample", 1)?.unwrap_or(o.read.sample_rows);
    o.rejects = kw.option::<PathBuf>("rejects", "a path")?;
    o.max_errors = kw.count("max_errors")?;
    o.read.ragged = kw
        .choice(
            "ragged",
            &[("pad", Ragged::Pad), ("truncate", Ragged::Truncate)],
        )?
        .unwrap_or(Ragged::Error);
    o.read.max_record_bytes = kw
        .size("max_record_bytes", 1)?
        .unwrap_or(o.read.max_record_bytes);
    o.read.parse_threads = kw.size("threads", 1)?.unwrap_or_else(all_cores);
    o.durability = durability(kw)?;
    o.file = file_settings(kw)?;
    o.parse_only = kw.get("parse_only", "a bool")?;
    o.batch_rows = kw.size("batch_rows", 1)?.unwrap_or(o.batch_rows);
    o.rows_per_statement = kw
        .size("rows_per_statement", 1)?
        .unwrap_or(o.rows_per_statement);
    o.engine = engine(kw)?;
    o.verify = kw.get("verify", "a bool")?;
    o.index_memory = kw.size("index_memory", 1)?.unwrap_or(o.index_memory);
    Ok(o)
}

/// `name=` (`types=`, or `write`'s `dtype=`): a mapping of column names to
/// `"integer"`, `"real"` or `"text"`.
/// The keywords that shape nested data (`nested=`, `scalar_arrays=`, `child_tables=`,
/// `flatten=`), shared by `import_file` and `write`.
pub fn shapes(kw: &mut Keywords<'_>, o: &mut ImportOptions) -> PyResult<()> {
    let tables = kw.choice("nested", &[("json", false), ("tables", true)])?;
    let scalars_json = kw.choice("scalar_arrays", &[("table", false), ("json", true)])?;
    o.nested = match (tables.unwrap_or(false), scalars_json.unwrap_or(false)) {
        (false, false) => liteload::Nested::Json,
        (false, true) => {
            return Err(kw.usage("scalar_arrays= applies with nested=\"tables\""));
        }
        (true, false) => liteload::Nested::Tables,
        (true, true) => liteload::Nested::ObjectTables,
    };
    o.child_tables = names_by(kw, "child_tables")?;
    o.read.flatten = {
        let v = kw.any("flatten")?;
        if let Ok(sep) = v.extract::<String>() {
            Some(sep)
        } else {
            match v.extract::<bool>() {
                Ok(on) => on.then(|| "_".to_string()),
                Err(_) => {
                    return Err(kw.wrong_type("flatten", "a bool or a str (the separator)", &v))
                }
            }
        }
    };
    Ok(())
}

/// A dict of str to str, as given: `[]` when absent.
fn names_by(kw: &mut Keywords<'_>, name: &str) -> PyResult<Vec<(String, String)>> {
    let value = kw.any(name)?;
    if value.is_none() {
        return Ok(vec![]);
    }
    let wrong = || {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}= takes a dict of str to str (a path to a table name)"
        ))
    };
    let map = value.cast::<pyo3::types::PyDict>().map_err(|_| wrong())?;
    map.iter()
        .map(|(k, v)| {
            Ok((
                k.extract().map_err(|_| wrong())?,
                v.extract().map_err(|_| wrong())?,
            ))
        })
        .collect()
}

pub fn column_types(kw: &mut Keywords<'_>, name: &str) -> PyResult<Vec<(String, ColumnType)>> {
    let value = kw.any(name)?;
    if value.is_none() {
        return Ok(vec![]);
    }
    let map = value.cast::<pyo3::types::PyDict>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}= takes a dict of column names to 'integer', 'real' or 'text'"
        ))
    })?;
    let mut out = vec![];
    for (column, ty) in map.iter() {
        let column: String = column.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!("{name}=: a column name is a str"))
        })?;
        let ty: String = ty.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{name}=: the type of {column:?} is a str: 'integer', 'real' or 'text'"
            ))
        })?;
        let parsed = ty
            .parse::<ColumnType>()
            .map_err(|e| kw.usage(format!("{name}={{{column:?}: {ty:?}}}: {e}")))?;
        out.push((column, parsed));
    }
    Ok(out)
}

/// `generate`'s keywords.
pub fn generate(kw: &mut Keywords<'_>) -> PyResult<GenerateOptions> {
    let mut o = GenerateOptions::default();
    o.rows = kw
        .count("rows")?
        .ok_or_else(|| kw.usage("rows= is the number of rows to make"))?;
    let table = kw.option::<String>("table", "a str")?;
    let columns = kw.names("columns")?;
    let spec = kw.option::<PathBuf>("spec", "a path")?;
    let (spec_table, specs) = match (spec, columns.is_empty()) {
        (Some(_), false) => {
            return Err(kw.usage("columns= and spec= both name the columns: pick one"))
        }
        (Some(path), true) => {
            let (t, c) = liteload::generate::spec::read_file(&path)
                .map_err(|e| crate::errors::library_error(&e))?;
            (t, c)
        }
        (None, false) => (
            None,
            columns
                .iter()
                .map(|c| ColumnSpec::parse(c).map_err(|e| kw.usage(format!("columns=: {e}"))))
                .collect::<PyResult<Vec<_>>>()?,
        ),
        (None, true) => (None, o.columns.clone()),
    };
    o.table = table.or(spec_table).unwrap_or(o.table);
    o.columns = specs;
    o.seed = kw.count("seed")?.unwrap_or(0);
    o.threads = kw.size("threads", 1)?.unwrap_or(o.threads);
    o.engine = engine(kw)?;
    o.durability = durability(kw)?;
    o.file = file_settings(kw)?;
    o.generate_only = kw.get("generate_only", "a bool")?;
    o.rows_per_statement = kw
        .size("rows_per_statement", 1)?
        .unwrap_or(o.rows_per_statement);
    o.verify = kw.get("verify", "a bool")?;
    Ok(o)
}

/// A duration: a `datetime.timedelta`, or seconds (an int or a float), above 0.
fn seconds(kw: &mut Keywords<'_>, name: &str) -> PyResult<Option<Duration>> {
    let value = kw.any(name)?;
    if value.is_none() {
        return Ok(None);
    }
    let s = match value.extract::<Duration>() {
        Ok(d) => d.as_secs_f64(),
        Err(_) => value.extract::<f64>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{name}= takes a number of seconds or a datetime.timedelta, not {}",
                value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?,
    };
    if !(s > 0.0 && s.is_finite()) {
        return Err(kw.usage(format!("{name}={s}: expected a number of seconds above 0")));
    }
    Ok(Some(Duration::from_secs_f64(s)))
}

/// What `ingest`'s keywords ask for.
pub struct Ingest {
    pub options: IngestOptions,
    pub feed: FeedOptions,
    pub follow: bool,
    pub from_start: bool,
    pub connect: Option<Connect>,
}

/// `ingest`'s keywords.
pub fn ingest(kw: &mut Keywords<'_>) -> PyResult<Ingest> {
    let mut o = IngestOptions::default();
    o.table = kw.get("table", "a str")?;
    o.keys = kw.names("key")?;
    if o.keys.is_empty() {
        return Err(kw.usage("key= names the key column(s)"));
    }
    if let Some(d) = durability(kw)? {
        o.durability = d;
    }
    o.null_keep = kw
        .choice("null", &[("set", false), ("keep", true)])?
        .unwrap_or(false);
    o.commit_rows = kw.size("commit_rows", 1)?.unwrap_or(o.commit_rows);
    o.commit_interval = seconds(kw, "commit_interval")?.unwrap_or(o.commit_interval);
    o.history = kw.option("history", "a str")?;
    let mut feed = FeedOptions::default();
    feed.max_line_bytes = kw.size("max_line_bytes", 1)?.unwrap_or(feed.max_line_bytes);
    feed.strict = kw.get("strict", "a bool")?;
    feed.rejects = kw.option("rejects", "a path")?;
    feed.stats_json = kw.option("stats_json", "a path")?;
    feed.word_hint = crate::errors::keyword_hint;
    let follow = kw.get("follow", "a bool")?;
    let from_start = kw.get("from_start", "a bool")?;
    let address = kw.option::<String>("connect", "a str: HOST:PORT")?;
    let ca = kw.option::<PathBuf>("ca", "a path")?;
    let no_tls: bool = kw.get("no_tls", "a bool")?;
    let init_file = kw.option::<PathBuf>("init_file", "a path")?;
    // A position is the feed's own text; an int is taken as its digits.
    let init_start = match kw.any("init_start")? {
        v if v.is_none() => None,
        v => Some(match v.extract::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => v.extract::<String>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("init_start= takes a str or an int")
            })?,
        }),
    };
    let position = kw.option::<String>("position", "a str")?;
    let stall = seconds(kw, "stall")?;
    let retries = kw.option::<u32>("retries", "an int")?;
    let connect = match address {
        None => {
            let client_only = [
                ("ca", ca.is_some()),
                ("no_tls", no_tls),
                ("init_file", init_file.is_some()),
                ("init_start", init_start.is_some()),
                ("position", position.is_some()),
                ("stall", stall.is_some()),
                ("retries", retries.is_some()),
            ];
            if let Some((name, _)) = client_only.iter().find(|(_, set)| *set) {
                return Err(kw.usage(format!("{name}= is for the feed client: pass connect=")));
            }
            None
        }
        Some(addr) => {
            if follow {
                return Err(kw.usage("follow=True reads a file; connect= reads a feed"));
            }
            if no_tls && ca.is_some() {
                return Err(kw.usage("ca= and no_tls=True: pick one"));
            }
            let transport = if no_tls {
                Transport::Plain
            } else {
                Transport::Tls(
                    connect::tls_config(ca.as_deref())
                        .map_err(|e| crate::errors::library_error(&e))?,
                )
            };
            let mut c = Connect::new(addr, transport);
            c.init = init_file
                .as_deref()
                .map(connect::InitLine::from_file)
                .transpose()
                .map_err(|e| crate::errors::library_error(&e))?;
            c.start = init_start;
            c.position_field = position;
            if let Some(s) = stall {
                c.stall = s;
            }
            c.retries = retries;
            Some(c)
        }
    };
    Ok(Ingest {
        options: o,
        feed,
        follow,
        from_start,
        connect,
    })
}
