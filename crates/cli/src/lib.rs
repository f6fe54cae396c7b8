//! The `liteload` command as a library, so that other front ends (the Python package's
//! `liteload` script) run the same command. Flags and commands only: the work is in the
//! `liteload` crate.
//!
//! Exit codes: 0 success; 1 bad input (a record, a JSON value, an empty file, a
//! missing key, a row SQLite's constraints refuse);
//! 2 bad usage (flags that contradict each other or do not fit the data);
//! 3 the system failed (I/O, SQLite, an rqlite cluster); 4 the database does not fit
//! (a table exists already or is a view, lacks a column); 70 a bug in liteload; 130
//! interrupted. A closed stdout (broken pipe) exits 0.

#![forbid(unsafe_code)]

mod cmd;
mod progress;
mod report;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

pub use cmd::UsageError;

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
    Sniff(cmd::sniff::SniffArgs),
    /// Print a shell completion script: liteload completions bash > /etc/bash_completion.d/liteload
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): liteload man > liteload.1; man ./liteload.1
    Man,
}

/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives
/// it) and returns the exit status: 0 done, 1 bad input, 2 bad usage, 3 I/O or SQLite,
/// 4 a database that does not fit, 70 a bug, 130 interrupted. Help and version requests print and return 0; a flag clap refuses
/// prints its message and returns 2.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Printing to a closed stream is not worth a second error.
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    let result = match cli.command {
        Command::Import(a) => cmd::import::run(*a),
        Command::Generate(a) => cmd::generate::run(*a),
        Command::Ingest(a) => cmd::ingest::run(*a),
        Command::Kv(a) => cmd::kv::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Info(a) => cmd::info::run(a),
        Command::Sniff(a) => cmd::sniff::run(a),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_complete::generate(shell, &mut Cli::command(), "liteload", &mut out);
            Ok(())
        }
        Command::Man => man(),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            if is_broken_pipe(&e) {
                return 0;
            }
            eprintln!("error: {}", message(&e));
            exit_code(&e)
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
        Hint::Delimiter(d) => format!(
            " (the file looks {}-separated: --delimiter {})",
            liteload::source::sniff::shown(d),
            liteload::source::sniff::shown(d)
        ),
        other => other.text(),
    }
}

/// The man page: the command, then a section per subcommand (their options included).
fn man() -> anyhow::Result<()> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(&mut out)?;
    page.render_name_section(&mut out)?;
    page.render_synopsis_section(&mut out)?;
    page.render_description_section(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("liteload {}", sub.get_name());
        std::io::Write::write_all(
            &mut out,
            format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes(),
        )?;
        let m = clap_mangen::Man::new(sub.clone().bin_name(name));
        // The subcommand's sections become subsections of its own.
        let mut part = Vec::new();
        m.render_synopsis_section(&mut part)?;
        m.render_description_section(&mut part)?;
        m.render_options_section(&mut part)?;
        m.render_extra_section(&mut part)?;
        let part = String::from_utf8_lossy(&part).replace(".SH ", ".SS ");
        std::io::Write::write_all(&mut out, part.as_bytes())?;
    }
    page.render_version_section(&mut out)?;
    Ok(())
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
        Some(ErrorKind::Input { .. })
        | Some(ErrorKind::Constraint { .. })
        | Some(ErrorKind::TooManyErrors { .. }) => 1,
        Some(ErrorKind::Usage(_)) => 2,
        Some(ErrorKind::Schema(_)) => 4,
        Some(ErrorKind::Internal(_)) => 70,
        Some(ErrorKind::Interrupted) => 130,
        Some(_) => 3,
        None if e.downcast_ref::<cmd::UsageError>().is_some() => 2,
        None if e.downcast_ref::<cmd::kv::Missing>().is_some() => 1,
        None => 3,
    }
}

#[cfg(test)]
mod tests {
    /// The command's defaults are the library's: a flag left out means what the option
    /// left at its default means to a program.
    #[test]
    fn the_commands_default_engine_is_the_librarys() -> anyhow::Result<()> {
        use super::{Cli, Command};
        use clap::Parser;
        let Command::Import(a) =
            Cli::try_parse_from(["liteload", "import", "x.db", "y.csv"])?.command
        else {
            panic!("parsed as another command")
        };
        let import = crate::cmd::import::options(&a)?;
        assert_eq!(import.engine, liteload::ImportOptions::default().engine);
        let Command::Generate(a) =
            Cli::try_parse_from(["liteload", "generate", "x.db", "--rows", "1"])?.command
        else {
            panic!("parsed as another command")
        };
        let generate = crate::cmd::generate::options(&a)?;
        assert_eq!(
            generate.engine,
            liteload::generate::GenerateOptions::default().engine
        );
        Ok(())
    }
}
