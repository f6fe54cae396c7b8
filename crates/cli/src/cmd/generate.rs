//! `liteload generate`: flags parsed into `GenerateOptions`, then the library runs.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::{ArgAction, Args, ValueEnum};
use liteload::generate::{default_columns, ColumnSpec, GenerateOptions};
use liteload::FileSettings;
use liteload::{Durability, Progress};

use super::UsageError;
use crate::progress::Bar;
use crate::report::grouped;

const AFTER: &str = "\
Generators (--column NAME=KIND[:ARGS][;OPTION=VALUE]...):
  rowid                      1, 2, 3, ... (continues an existing table's); INTEGER PRIMARY KEY
  int:LO..HI                 integers, both ends included              INTEGER
  float:LO..HI               LO <= x < HI                              REAL
  choice:A,B,C[;weights=W,..] one of the list                          INTEGER/REAL/TEXT
  digits:N                   N decimal digits, leading zeros kept      TEXT
  text:MIN..MAX[;alphabet=S] MIN..MAX characters of S (default a-z)    TEXT
  uuid                       random version-4 UUIDs                    TEXT
  timestamp:START..END[;format=F]  UTC times, START <= t < END; F uses %Y %m %d %H %M %S
                             (default \"%Y-%m-%d %H:%M:%S\"), or format=unix   TEXT/INTEGER
  const:V                    V                                          by V's look
  Any column but rowid takes ;null=F, the fraction of NULLs (0 to 1). A column with no
  NULLs is declared NOT NULL.

Without --column or --spec, the table is write-up 004's:
  user(id INTEGER NOT NULL PRIMARY KEY, area TEXT NOT NULL (six digits),
       age INTEGER NOT NULL (5, 10 or 15), active INTEGER NOT NULL (0 or 1))

A spec file is TOML:
  table = \"people\"            # optional; --table wins
  [[column]]
  name = \"id\"
  gen = \"rowid\"
  [[column]]
  name = \"email\"
  gen = \"text:5..12\"
  null = 0.1                   # optional; same as ;null=0.1

The same --seed gives the same table, byte for byte, whatever --threads is.

Examples:
  liteload generate users.db --rows 100000000
  liteload generate t.db --rows 1000000 --table events --column id=rowid \\
      --column 'kind=choice:click,view,buy;weights=70,25,5' \\
      --column 'at=timestamp:2024-01-01..2025-01-01' --column 'note=text:0..40;null=0.3'";

/// Generate a synthetic table, deterministic for a seed, as fast as SQLite can take it.
#[derive(Args, Debug)]
#[command(after_long_help = AFTER, after_help = "See --help for the generators, the spec file and examples.")]
pub struct GenerateArgs {
    /// The SQLite database file (created if missing), or an rqlite cluster:
    /// rqlite://HOST:PORT (as for import).
    pub db: PathBuf,
    /// How many rows to generate.
    #[arg(long, value_name = "N")]
    pub rows: u64,
    /// Table name (default: the spec file's `table`, else "user").
    #[arg(long, short = 't', value_name = "NAME")]
    pub table: Option<String>,
    /// A column, NAME=GENERATOR (repeatable; see --help). Replaces the default table.
    #[arg(long = "column", value_name = "SPEC", action = ArgAction::Append, conflicts_with = "spec")]
    pub columns: Vec<String>,
    /// A TOML file of columns (see --help).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// The seed: the same seed makes the same table.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Generator threads (default: the number of cores); the writer is one more thread.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How rows are written: `sqlite` (SQLite's insert path, any target), `direct` (the
    /// page writer: a new file, written page by page without SQLite's insert path), or
    /// `auto`: `direct` for a new file with the default durability, else `sqlite`.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,
    /// With the page writer (--engine direct, or auto where it picks it): SQLite runs
    /// `PRAGMA integrity_check` on the written file
    /// before it is put in place; a failure leaves no file.
    #[arg(long)]
    pub verify: bool,
    /// atomic-new (default for a new file), balanced (default for an existing one),
    /// durable or unsafe; see `liteload import --help`.
    #[arg(long, value_name = "PROFILE")]
    pub durability: Option<Durability>,
    /// Page size of a new database, a power of two from 512 to 65536.
    #[arg(long, value_name = "BYTES")]
    pub page_size: Option<u32>,
    /// SQLite page cache: pages if positive, KiB if negative.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub cache_size: Option<i64>,
    /// Generate every value and write nothing: the floor under the SQLite path.
    #[arg(long)]
    pub generate_only: bool,
    /// The most rows one INSERT statement carries.
    #[arg(long, value_name = "N", default_value_t = liteload::DEFAULT_ROWS_PER_STATEMENT, hide_short_help = true)]
    pub rows_per_statement: usize,
    /// No progress bar, no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print the summary as one JSON object on stdout (also --json).
    #[arg(long = "summary-json", visible_alias = "json")]
    pub summary_json: bool,

    #[command(flatten)]
    pub rqlite: super::rqlite::RqliteArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    Auto,
    Sqlite,
    Direct,
}

/// Checks the flags and turns them into the library's options.
pub(crate) fn options(a: &GenerateArgs) -> Result<GenerateOptions> {
    if a.engine == Engine::Direct && a.generate_only {
        return Err(UsageError("--engine direct and --generate-only: pick one".into()).into());
    }
    let (spec_table, columns) = match (&a.spec, a.columns.is_empty()) {
        (Some(p), _) => liteload::generate::spec::read_file(p)?,
        (None, false) => (
            None,
            a.columns
                .iter()
                .map(|c| ColumnSpec::parse(c).map_err(|e| UsageError(format!("--column {e}"))))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        (None, true) => (None, default_columns()),
    };
    let opts = {
        let mut built = GenerateOptions::default();
        built.rows = a.rows;
        built.table = a
            .table
            .clone()
            .or(spec_table)
            .unwrap_or_else(|| "user".into());
        built.columns = columns;
        built.seed = a.seed;
        built.threads = a
            .threads
            .unwrap_or_else(|| GenerateOptions::default().threads)
            .max(1);
        built.durability = a.durability;
        built.file = FileSettings::new(a.page_size, a.cache_size);
        built.generate_only = a.generate_only;
        built.rows_per_statement = a.rows_per_statement.max(1);
        built.engine = match a.engine {
            Engine::Direct => liteload::Engine::Direct,
            Engine::Sqlite => liteload::Engine::Sqlite,
            Engine::Auto => liteload::Engine::Auto,
        };
        built.verify = a.verify;
        built
    };
    if let Some(ps) = opts.file.page_size {
        if !(512..=65536).contains(&ps) || !ps.is_power_of_two() {
            return Err(UsageError(format!(
                "--page-size {ps}: expected a power of two from 512 to 65536"
            ))
            .into());
        }
    }
    Ok(opts)
}

pub fn run(a: GenerateArgs) -> Result<()> {
    let opts = options(&a)?;
    if opts.durability == Some(Durability::Unsafe) && !a.quiet {
        eprintln!(
            "warning: --durability unsafe: a crash or power loss during this run can leave {} corrupt",
            super::rqlite::shown(&a.db)
        );
    }
    let cluster = super::rqlite::target(&a.db)?;
    match &cluster {
        Some(_) if a.durability.is_some() => {
            return Err(super::UsageError(
                "--durability applies to a file; a cluster keeps its own settings".into(),
            )
            .into())
        }
        Some(_) => {}
        None => a.rqlite.check_file()?,
    }
    let progress = Arc::new(Progress::default());
    crate::progress::cancel_on_signals(progress.clone())?;
    let bar = Bar::start(progress.clone(), a.quiet);
    let result = match &cluster {
        Some(t) => liteload::rqlite::generate(t, &opts, &a.rqlite.options(), &progress),
        None => liteload::generate::generate(&a.db, &opts, &progress),
    };
    drop(bar);
    let s = result?;
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if a.summary_json {
        writeln!(out, "{}", serde_json::to_string(&s)?)?;
    }
    if a.quiet {
        return Ok(());
    }
    for n in &s.notes {
        eprintln!("note: {n}");
    }
    if !a.summary_json {
        let db = if a.generate_only {
            String::new()
        } else {
            format!(
                "; {} ({})",
                super::rqlite::shown(&a.db),
                crate::report::made_how(&s)
            )
        };
        writeln!(
            out,
            "{} {} rows of \"{}\" in {:.2} s ({} rows/s){db}",
            if a.generate_only {
                "Generated (not written)"
            } else {
                "Generated"
            },
            grouped(s.rows),
            opts.table,
            s.seconds,
            grouped(s.rows_per_second as u64),
        )?;
    }
    Ok(())
}
