//! `liteload ingest`: a current-state table from a stream of sparse JSON updates. The
//! flags become a [`liteload::ingest::feed::Feed`] and its options; the library runs it
//! (readers, commit windows, resume); this prints what it reports.

use std::io::IsTerminal;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use liteload::ingest::connect::{self, Connect, Transport};
use liteload::ingest::feed::{self, Event, Feed, FeedOptions};
use liteload::ingest::listen;
use liteload::ingest::{Ingest, IngestOptions};
use liteload::Durability;

use crate::report::grouped;

const AFTER: &str = "\
Merge semantics: a message updates the row its key names. A field present overwrites the
column; a field absent leaves it as it was; an explicit null sets NULL (or is ignored with
--null keep). A new key inserts a row. Messages apply in arrival order per key. A field
never seen before adds a column typed by its first non-null value; later values of another
kind are counted and stored by the column's affinity (a number in a TEXT column becomes its
text). Nested objects and arrays are stored as JSON text.

Commit windows: messages are coalesced per key in memory (the last value of each field
wins) and written in one transaction when --commit-interval passes or --commit-rows
messages have arrived, whichever comes first. A closed window is written on a second
thread while the next one fills. A crash (kill -9, power loss with --durability durable)
leaves the table exactly as of the last committed window: what is lost is the open window
and the one being written, at most about two --commit-interval's worth of messages (for a
file, a rerun reapplies them).

Resume: for a file, the byte offset just past the last applied message is stored in the
database (table liteload_ingest_state) in the same transaction as the window; a rerun on
the same file continues from there, so nothing is lost or applied twice. --from-start
ignores it. stdin and TCP have no offsets: after a crash the sender must replay, and a
replayed message is applied again — harmless, since applying the same update twice gives
the same row (at-least-once, idempotent).

Feed client (--connect): liteload connects to the feed (TLS with the system's roots or
--ca; plain TCP only to loopback with --no-tls), sends the --init-file line with
{position} replaced by where to start, and reads messages. With --position FIELD, the
last applied message's FIELD is stored with each window, in its transaction; a rerun
asks the feed to start from there (--init-start on the very first run), and a reconnect
from the last message read. Messages the feed sends again at or before that position
are applied again (harmless) and counted as replayed. A dropped or stalled (--stall)
connection is made again after an exponential, jittered backoff (0.5 s to 30 s); the
first connection of a run must succeed, unless --retries allows more attempts. An
untrusted certificate, a server that does not speak TLS, and an init line the server
refuses (it closes the connection with an answer and no message) end the run with an
error that never shows the init line.

Examples:
  liteload ingest flights.db --table flights --key id feed.jsonl
  tail -F feed.jsonl | liteload ingest flights.db --table flights --key id -
  liteload ingest flights.db --table flights --key id --follow feed.jsonl --stats-json stats.jsonl
  liteload ingest flights.db --table flights --key id --listen 127.0.0.1:9999
  liteload ingest flights.db --table flights --key id --connect feed.example.com:1501 \
      --init-file init.txt --position pitr --init-start 1700000000";

/// Keep a current-state table from a stream of sparse JSON updates (one object per line).
#[derive(Args, Debug)]
#[command(after_long_help = AFTER, after_help = "See --help for the merge semantics, commit windows and resume.")]
pub struct IngestArgs {
    /// The SQLite database file (created if missing), or an rqlite cluster:
    /// rqlite://HOST:PORT (as for import; each window is one ?transaction request with
    /// its resume point).
    pub db: PathBuf,
    /// A file of newline-delimited JSON objects, or `-` for stdin (the default).
    #[arg(conflicts_with = "connect")]
    pub source: Option<String>,
    /// The table to keep (created if missing).
    #[arg(long, short = 't')]
    pub table: String,
    /// The key field(s), comma-separated: a message updates the row with this key.
    #[arg(long, value_delimiter = ',', required = true)]
    pub key: Vec<String>,
    /// Keep reading the file as it grows, like `tail -F` (a rotated or truncated file is
    /// read again from its start). Stops on SIGINT/SIGTERM.
    #[arg(long)]
    pub follow: bool,
    /// Accept TCP connections on this address (any number, each sending newline-delimited
    /// JSON). Loopback addresses only, unless --listen-any.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["source", "follow", "connect"])]
    pub listen: Option<SocketAddr>,
    /// Allow --listen on a non-loopback address. Such a listener needs a token
    /// (--token-file or --token-env) and should use TLS (--tls-cert, --tls-key).
    #[arg(long)]
    pub listen_any: bool,
    /// With --listen: senders must send this secret as their first line, or are closed.
    /// FILE holds the token (its first line). Required with --listen-any.
    #[arg(
        long,
        value_name = "FILE",
        requires = "listen",
        help_heading = "Listener"
    )]
    pub token_file: Option<PathBuf>,
    /// As --token-file, the token read from the environment variable NAME (never from
    /// the command line, where other users can see it).
    #[arg(
        long,
        value_name = "NAME",
        requires = "listen",
        help_heading = "Listener"
    )]
    pub token_env: Option<String>,
    /// With --listen: serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"], help_heading = "Listener")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_cert",
        help_heading = "Listener"
    )]
    pub tls_key: Option<PathBuf>,
    /// With --listen: at most this many senders at once; one more is closed at once.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 256,
        help_heading = "Listener"
    )]
    pub max_connections: usize,
    /// With --listen: a sender that sends nothing for this long is closed (e.g. 5m, 30s).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, help_heading = "Listener")]
    pub idle_timeout: Duration,
    /// With --listen: a sender must finish its TLS handshake and its token line within
    /// this long of connecting, however slowly it sends them, or it is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, help_heading = "Listener")]
    pub gate_timeout: Duration,
    /// Close a window this long after its first message (e.g. 1s, 250ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub commit_interval: Duration,
    /// Close a window after this many messages.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub commit_rows: usize,
    /// balanced (default: WAL, synchronous=NORMAL) or durable (synchronous=FULL).
    #[arg(long, value_name = "PROFILE", default_value = "balanced")]
    pub durability: Durability,
    /// What an explicit null does: `set` it (default) or `keep` the column as it was.
    #[arg(long, value_enum, default_value_t = NullPolicy::Set)]
    pub null: NullPolicy,
    /// Also append every raw message with its arrival time to this table.
    #[arg(long, value_name = "TABLE")]
    pub history: Option<String>,
    /// Read the file from its start, ignoring the stored resume point.
    #[arg(long)]
    pub from_start: bool,
    /// Write each bad message (position, reason, text) to FILE as a JSON line.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Stop at the first bad message (after committing the good ones before it), exit 1.
    #[arg(long)]
    pub strict: bool,
    /// A line longer than this is rejected without being read into memory whole.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_line_bytes: usize,
    /// Append one JSON object per committed window to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
    /// No status line, no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Connect to a feed at HOST:PORT and read its messages (TLS unless --no-tls);
    /// reconnects when the connection drops. Stops on SIGINT/SIGTERM.
    #[arg(
        long,
        value_name = "HOST:PORT",
        conflicts_with = "follow",
        help_heading = "Feed client"
    )]
    pub connect: Option<String>,
    #[command(flatten)]
    pub rqlite_ca: super::rqlite::RqliteCa,
    /// Trust the CA certificates in this PEM file instead of the system's roots. A
    /// self-signed server certificate (also one marked as a CA, as `openssl req -x509`
    /// makes) given here is trusted as exactly that certificate, its name still checked.
    #[arg(
        long,
        value_name = "FILE",
        requires = "connect",
        conflicts_with = "no_tls",
        help_heading = "Feed client"
    )]
    pub ca: Option<PathBuf>,
    /// Plain TCP instead of TLS: only to a loopback address.
    #[arg(long, requires = "connect", help_heading = "Feed client")]
    pub no_tls: bool,
    /// Send this file's text as the first line of each connection, {position} replaced
    /// by where to start. Credentials belong here: the file is never printed.
    #[arg(
        long,
        value_name = "FILE",
        requires = "connect",
        help_heading = "Feed client"
    )]
    pub init_file: Option<PathBuf>,
    /// The position to start from when none is stored yet (the first run).
    #[arg(
        long,
        value_name = "VALUE",
        requires = "connect",
        help_heading = "Feed client"
    )]
    pub init_start: Option<String>,
    /// The message field that holds the feed's position: its last applied value is
    /// stored with each window, and a rerun or reconnect starts from it.
    #[arg(
        long,
        value_name = "FIELD",
        requires = "connect",
        help_heading = "Feed client"
    )]
    pub position: Option<String>,
    /// No bytes from the feed for this long: drop the connection and make it again.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, help_heading = "Feed client")]
    pub stall: Duration,
    /// Give up after this many failed connection attempts in a row (default: the first
    /// connection must succeed; after it, retry for as long as the run lasts).
    #[arg(
        long,
        value_name = "N",
        requires = "connect",
        help_heading = "Feed client"
    )]
    pub retries: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NullPolicy {
    Set,
    Keep,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = s.trim().split_at(
        s.trim()
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(s.trim().len()),
    );
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a duration like 1s, 250ms or 2m"))?;
    let secs = match unit {
        "" | "s" => v,
        "ms" => v / 1000.0,
        "m" => v * 60.0,
        _ => return Err(format!("{s:?}: expected a duration like 1s, 250ms or 2m")),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("{s:?}: the duration must be above 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Checks the flags and turns them into the library's options.
pub(crate) fn options(a: &IngestArgs) -> Result<(IngestOptions, FeedOptions)> {
    if let Some(addr) = a.listen {
        if !addr.ip().is_loopback() && !a.listen_any {
            bail!(super::UsageError(format!(
                "--listen {addr}: not a loopback address; add --listen-any to accept connections from other hosts"
            )));
        }
        if !addr.ip().is_loopback() && a.token_file.is_none() && a.token_env.is_none() {
            bail!(super::UsageError(format!(
                "--listen {addr}: a listener other hosts can reach needs a token (--token-file or --token-env), so that only senders who have it can write"
            )));
        }
    }
    // A rejects or stats file must not be the feed or the database: writing it would
    // destroy what is read.
    let feed_files: Vec<liteload::Input> = a
        .source
        .iter()
        .filter(|s| s.as_str() != "-")
        .map(|s| liteload::Input::Path(s.into()))
        .collect();
    for out in a.rejects.iter().chain(&a.stats_json) {
        liteload::source::input::refuse_overwriting(out, &feed_files, Some(&a.db))?;
    }
    if a.max_connections == 0 {
        bail!(super::UsageError(
            "--max-connections 0 would refuse every sender".into()
        ));
    }
    let opts = {
        let mut built = IngestOptions::default();
        built.table = a.table.clone();
        built.keys = a.key.iter().map(|k| k.trim().to_string()).collect();
        built.durability = a.durability;
        built.null_keep = a.null == NullPolicy::Keep;
        built.commit_rows = a.commit_rows.max(1);
        built.commit_interval = a.commit_interval;
        built.history = a.history.clone();
        built
    };
    let feed_opts = {
        let mut built = FeedOptions::default();
        built.max_line_bytes = a.max_line_bytes;
        built.strict = a.strict;
        built.rejects = a.rejects.clone();
        built.stats_json = a.stats_json.clone();
        built.word_hint = crate::flag_hint;
        built
    };
    Ok((opts, feed_opts))
}

/// The feed client the flags ask for, if any.
pub(crate) fn connect(a: &IngestArgs) -> Result<Option<Connect>> {
    let Some(addr) = &a.connect else {
        return Ok(None);
    };
    let transport = if a.no_tls {
        Transport::Plain
    } else {
        Transport::Tls(connect::tls_config(a.ca.as_deref())?)
    };
    let mut c = Connect::new(addr.clone(), transport);
    c.init = a
        .init_file
        .as_deref()
        .map(connect::InitLine::from_file)
        .transpose()?;
    c.start.clone_from(&a.init_start);
    c.position_field.clone_from(&a.position);
    c.stall = a.stall;
    c.retries = a.retries;
    Ok(Some(c))
}

pub fn run(a: IngestArgs) -> Result<()> {
    // First of all: a SIGTERM while the engine opens or connects stops it cleanly too.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing the signal handler")?;
    }
    let (opts, feed_opts) = options(&a)?;
    let feed = match (connect(&a)?, a.listen, a.source.as_deref()) {
        (Some(client), _, _) => Feed::Connect(client),
        (None, Some(addr), _) => Feed::Listen {
            listener: TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?,
            gate: listen::Gate {
                token: listen::load_token(a.token_file.as_deref(), a.token_env.as_deref())?,
                tls: match (&a.tls_cert, &a.tls_key) {
                    (Some(c), Some(k)) => Some(listen::load_tls(c, k)?),
                    _ => None,
                },
                max_connections: a.max_connections,
                idle: a.idle_timeout,
                admit_within: a.gate_timeout,
            },
        },
        (None, None, None | Some("-")) => Feed::Stdin,
        (None, None, Some(path)) => Feed::File {
            path: PathBuf::from(path),
            follow: a.follow,
            from_start: a.from_start,
        },
    };
    let cluster = super::rqlite::target(&a.db)?;
    let mut engine = match &cluster {
        Some(t) => {
            let mut ropts = liteload::rqlite::RqliteOptions::default();
            ropts.ca = a.rqlite_ca.rqlite_ca.clone();
            Ingest::open_rqlite(t, &ropts, opts)?
        }
        None => {
            a.rqlite_ca.check_file()?;
            Ingest::open(&a.db, opts)?
        }
    };
    let start = Instant::now();
    let status = !a.quiet && std::io::stderr().is_terminal();
    let mut shown = 0;
    let mut on = |e: Event<'_>| match e {
        _ if a.quiet => {}
        Event::Bad { at, reason } if shown < 5 => {
            eprintln!("warning: {at}: {reason}");
            shown += 1;
        }
        Event::Bad { .. } => {}
        Event::Refused(reason) => eprintln!("warning: {reason}"),
        Event::Listening(addr) => eprintln!("listening on {addr}"),
        Event::Resuming { source, offset } => eprintln!(
            "note: resuming {source} at byte {offset} (use --from-start to read it all again)"
        ),
        Event::Note(n) => eprintln!("note: {n}"),
        Event::Connected { to, from } => {
            let from = from
                .map(|p| format!(", from position {p}"))
                .unwrap_or_default();
            if status {
                eprintln!();
            }
            eprintln!("connected to {to}{from}");
        }
        Event::Reconnecting { to, why, after } => {
            if status {
                eprintln!();
            }
            eprintln!(
                "warning: {to}: {why}: reconnecting in {:.1} s",
                after.as_secs_f64()
            );
        }
        Event::Tick {
            totals: t,
            last_commit_seconds,
        } if status => {
            let secs = start.elapsed().as_secs_f64().max(1e-3);
            let position = t
                .last_position
                .as_ref()
                .map(|p| format!(", position {p}"))
                .unwrap_or_default();
            eprint!(
                "\r{} messages ({}/s), {} inserted, {} updated, {} rejects, last commit {:.0} ms{position}   ",
                grouped(t.messages),
                grouped((t.messages as f64 / secs) as u64),
                grouped(t.inserted),
                grouped(t.updated),
                grouped(t.rejects),
                last_commit_seconds * 1000.0
            );
        }
        _ => {}
    };
    let result = feed::run(&mut engine, feed, &feed_opts, stop, &mut on);
    if status {
        eprintln!();
    }
    // An SQLite or I/O failure (a full disk) names the database.
    let t = match &cluster {
        Some(_) => result?,
        None => result.map_err(|e| e.in_file(&a.db))?,
    };
    if !a.quiet {
        let secs = start.elapsed().as_secs_f64();
        println!(
            "Ingested {} messages into \"{}\" in {:.2} s ({} messages/s): {} inserted, {} updated, {} rejects, {} commits",
            grouped(t.messages),
            a.table,
            secs,
            grouped((t.messages as f64 / secs.max(1e-9)) as u64),
            grouped(t.inserted),
            grouped(t.updated),
            grouped(t.rejects),
            grouped(t.commits)
        );
        if a.connect.is_some() {
            println!(
                "Feed: {} messages replayed (sent again at or before the position asked for), last position {}",
                grouped(t.replayed),
                t.last_position.as_deref().unwrap_or("none")
            );
        }
        if a.listen.is_some() && t.connection_errors > 0 {
            println!(
                "Listener: {} connections ended with an error (each closed alone; their whole lines before it are applied)",
                grouped(t.connection_errors)
            );
        }
        if t.type_mismatches > 0 {
            eprintln!(
                "note: {} values had another type than their column's",
                t.type_mismatches
            );
        }
    }
    Ok(())
}
