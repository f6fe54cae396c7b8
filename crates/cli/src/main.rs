//! The `liteload` command. Flags and commands only: the work is in the `liteload` crate.
//!
//! Exit codes: 0 success; 1 bad input (a record, a JSON value, an empty file, a
//! missing key);
//! 2 bad usage (flags, or flags that do not fit the data or the database);
//! 3 the system failed (I/O, SQLite). A closed stdout (broken pipe) exits 0.

#![forbid(unsafe_code)]

mod cmd;
mod progress;
mod report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "liteload",
    version,
    about = "Put data into SQLite as fast as the disk allows, never leaving a half-written database behind",
    long_about = None,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Import(Box<cmd::import::ImportArgs>),
    Generate(Box<cmd::generate::GenerateArgs>),
    Ingest(Box<cmd::ingest::IngestArgs>),
    Kv(cmd::kv::KvArgs),
    Bench(cmd::bench::BenchArgs),
    Info(cmd::info::InfoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Import(a) => cmd::import::run(*a),
        Command::Generate(a) => cmd::generate::run(*a),
        Command::Ingest(a) => cmd::ingest::run(*a),
        Command::Kv(a) => cmd::kv::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Info(a) => cmd::info::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", message(&e));
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The error and its causes, each said once: a cause whose text the message already
/// holds (SQLite's errors repeat their own text as their source) is left out.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for link in e.chain() {
        let text = match link.downcast_ref::<liteload::Error>() {
            Some(le) => le.display_with(&flag_hint),
            None => link.to_string(),
        };
        // rusqlite's innermost cause, "Error code N: <the code's generic text>", says
        // less than SQLite's own message before it.
        if text.is_empty()
            || out.contains(&text)
            || (!out.is_empty() && text.starts_with("Error code "))
        {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// A library hint worded as the flag that does it.
pub(crate) fn flag_hint(h: liteload::Hint) -> String {
    use liteload::Hint;
    match h {
        Hint::Encoding => {
            " (name the file's encoding with --encoding, e.g. --encoding latin1)".into()
        }
        Hint::NotText => " (is this a binary file or UTF-16? see --encoding)".into(),
        Hint::Ragged => " (use --ragged pad or --ragged truncate to accept such rows)".into(),
        Hint::RecordLimit => {
            " (an unbalanced quote? raise the limit with --max-record-bytes)".into()
        }
        Hint::LineLimit => " (raise the limit with --max-line-bytes)".into(),
        Hint::JsonLines => " (for one object per line use --nl)".into(),
        Hint::SqliteEngine => "; use --engine sqlite".into(),
        Hint::Alter => "; use --alter to add it".into(),
        Hint::Append => " (leave --durability out to append in one transaction)".into(),
        Hint::Format => "; use --csv, --tsv, --nl, --json or --format (parquet, arrow)".into(),
        Hint::Table => "; name the table with --table".into(),
        Hint::OtherTable => "; load into another --table".into(),
        Hint::Overwrite => "; use --force to overwrite".into(),
        Hint::MaxErrors(n) => format!(" (--max-errors {n})"),
        other => other.text(),
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn exit_code(e: &anyhow::Error) -> u8 {
    use liteload::ErrorKind;
    match e.downcast_ref::<liteload::Error>().map(|e| e.kind()) {
        Some(ErrorKind::Input { .. }) | Some(ErrorKind::TooManyErrors { .. }) => 1,
        Some(ErrorKind::Plan(_)) => 2,
        Some(ErrorKind::Interrupted) => 130,
        Some(_) => 3,
        None if e.downcast_ref::<cmd::UsageError>().is_some() => 2,
        None if e.downcast_ref::<cmd::kv::Missing>().is_some() => 1,
        None => 3,
    }
}
