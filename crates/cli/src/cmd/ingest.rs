//! `liteload ingest`: a current-state table from a stream of sparse JSON updates.
//!
//! Readers (a file, stdin, or TCP connections) parse lines on their own threads and send
//! objects over a channel; this thread applies them to the engine and commits when a
//! window closes — also while the input is idle — and once more at the end or on
//! SIGINT/SIGTERM.

use std::fs::File;
use std::io::{BufRead, IsTerminal, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::listen;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use liteload::ingest::FileSource;
use liteload::ingest::{Ingest, IngestOptions, LineMeta, Messages};
use liteload::source::json::LineObjects;
use liteload::Durability;

use super::import::grouped;
use super::kv::Missing;

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

Examples:
  liteload ingest flights.db --table flights --key id feed.jsonl
  tail -F feed.jsonl | liteload ingest flights.db --table flights --key id -
  liteload ingest flights.db --table flights --key id --follow feed.jsonl --stats-json stats.jsonl
  liteload ingest flights.db --table flights --key id --listen 127.0.0.1:9999";

/// Keep a current-state table from a stream of sparse JSON updates (one object per line).
#[derive(Args, Debug)]
#[command(after_long_help = AFTER, after_help = "See --help for the merge semantics, commit windows and resume.")]
pub struct IngestArgs {
    /// The SQLite database file (created if missing).
    pub db: PathBuf,
    /// A file of newline-delimited JSON objects, or `-` for stdin (the default).
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
    #[arg(long, value_name = "ADDR:PORT", conflicts_with_all = ["source", "follow"])]
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

/// What readers send to the engine thread: messages parsed in batches (one channel
/// operation per batch, not per message), or a failure that ends the run. `source` names
/// the file whose positions are resume points.
enum Batch {
    Messages {
        from: Arc<str>,
        source: Option<FileSource>,
        msgs: Box<Messages>,
    },
    Fatal(String),
}

/// A buffered reader that tells how many bytes it holds, so a reader thread can hand
/// over its batch before a read that may block (a quiet TCP peer, an idle stdin).
struct Buffered<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    held: Arc<AtomicUsize>,
}

impl<R: Read> Buffered<R> {
    fn new(inner: R) -> (Self, Arc<AtomicUsize>) {
        let held = Arc::new(AtomicUsize::new(0));
        let b = Buffered {
            inner,
            buf: vec![0; 256 * 1024].into_boxed_slice(),
            pos: 0,
            end: 0,
            held: held.clone(),
        };
        (b, held)
    }
}

impl<R: Read> Read for Buffered<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Buffered<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.end {
            self.end = loop {
                match self.inner.read(&mut self.buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            self.pos = 0;
            self.held.store(self.end, Ordering::Relaxed);
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
        self.held.store(self.end - self.pos, Ordering::Relaxed);
    }
}

const BATCH: usize = 1024;

/// How readers parse: the key fields, whether good messages keep their text (for a
/// history table), and the longest line accepted.
#[derive(Clone)]
struct Parsing {
    keys: Arc<[String]>,
    keep_raw: bool,
    max_line: usize,
}

impl Parsing {
    /// Lines of `r`, whose first byte is byte `offset` of line `line` of the input.
    fn lines<R: BufRead + Send + 'static>(&self, r: R, line: u64, offset: u64) -> LineObjects {
        LineObjects::new(Box::new(r), self.max_line, line, offset)
            .with_limit_hint(liteload::Hint::LineLimit)
    }
}

const BATCH_BYTES: usize = 1 << 20;

/// Parses what `lines` holds now (to the end of its input) and sends it to the engine
/// thread in batches: a batch goes when it is full, or when `held` says the next line
/// needs a read that may block. `source_id` names a file whose positions are resume
/// points.
fn read_lines(
    lines: &mut LineObjects,
    held: &AtomicUsize,
    from: &Arc<str>,
    source_id: Option<&FileSource>,
    how: &Parsing,
    tx: &Sender<Batch>,
    stop: &AtomicBool,
) -> Result<(), String> {
    let (keys, keep_raw) = (&how.keys[..], how.keep_raw);
    let mut msgs = Messages::new(keys);
    let send = |msgs: &mut Messages| {
        tx.send(Batch::Messages {
            from: from.clone(),
            source: source_id.cloned(),
            msgs: Box::new(std::mem::replace(msgs, Messages::new(keys))),
        })
        .is_ok()
    };
    while !stop.load(Ordering::Relaxed) {
        let next = lines
            .next_line()
            .map_err(|(l, c, m)| format!("{from}:{l}:{c}: {m}"))?;
        let Some(next) = next else { break };
        match next {
            Ok(raw) => {
                let meta = LineMeta {
                    line: raw.line,
                    column: raw.column,
                    next_line: 0,
                    next_offset: 0,
                };
                let text = raw.text;
                msgs.push_line(text, keep_raw, meta);
            }
            Err(bad) => {
                let meta = LineMeta {
                    line: bad.line,
                    column: bad.column,
                    next_line: 0,
                    next_offset: 0,
                };
                let why = bad.message + &bad.hint.map(crate::flag_hint).unwrap_or_default();
                msgs.push_bad(why, lines.last_line(), meta);
            }
        }
        let (line, offset) = lines.position();
        msgs.set_last_position(line, offset);
        if (msgs.len() >= BATCH
            || msgs.text_bytes() >= BATCH_BYTES
            || held.load(Ordering::Relaxed) == 0)
            && !send(&mut msgs)
        {
            return Ok(());
        }
    }
    if !msgs.is_empty() {
        send(&mut msgs);
    }
    Ok(())
}

fn file_identity(f: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    f.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// How a file's identity is stored with its resume point.
fn identity_text(id: Option<(u64, u64)>) -> Option<Arc<str>> {
    id.map(|(dev, ino)| format!("{dev}:{ino}").into())
}

/// Reads a file from `start`, and with `follow`, keeps reading as it grows, reopening
/// it from the start when it is rotated (another file at the path) or truncated.
fn file_reader(
    path: PathBuf,
    start: (u64, u64),
    follow: bool,
    how: Parsing,
    tx: Sender<Batch>,
    stop: Arc<AtomicBool>,
) {
    let name: Arc<str> = path.display().to_string().into();
    let key: Arc<str> = path
        .canonicalize()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| name.to_string())
        .into();
    let (mut line, mut offset) = start;
    loop {
        let opened = File::open(&path).and_then(|mut f| {
            f.seek(SeekFrom::Start(offset))?;
            Ok(f)
        });
        let f = match opened {
            Ok(f) => f,
            Err(e) if follow && e.kind() == std::io::ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(100));
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                continue;
            }
            Err(e) => {
                let _ = tx.send(Batch::Fatal(format!("{name}: {e}")));
                return;
            }
        };
        let ident = file_identity(&f);
        let id = FileSource {
            path: key.clone(),
            file: identity_text(ident),
        };
        let (reader, held) = Buffered::new(f);
        let mut lines = how.lines(reader, line, offset);
        if follow {
            // The file may be mid-write: a line is a message once its \n is there.
            lines = lines.holding_partial_lines();
        }
        loop {
            if let Err(e) = read_lines(&mut lines, &held, &name, Some(&id), &how, &tx, &stop) {
                let _ = tx.send(Batch::Fatal(e));
                return;
            }
            offset = lines.position().1;
            if !follow || stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
            // Rotated (another file now at the path) or truncated: start that file over.
            let now = std::fs::metadata(&path).ok();
            let rotated = match (&now, File::open(&path).ok().and_then(|g| file_identity(&g))) {
                (Some(m), Some(id_now)) => Some(id_now) != ident || m.len() < offset,
                _ => false,
            };
            if rotated {
                line = 1;
                offset = 0;
                break;
            }
        }
    }
}

pub fn run(a: IngestArgs) -> Result<()> {
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
    let feed: Vec<liteload::Input> = a
        .source
        .iter()
        .filter(|s| s.as_str() != "-")
        .map(|s| liteload::Input::Path(s.into()))
        .collect();
    for out in a.rejects.iter().chain(&a.stats_json) {
        liteload::source::input::refuse_overwriting(out, &feed, Some(&a.db))?;
    }
    if a.max_connections == 0 {
        bail!(super::UsageError(
            "--max-connections 0 would refuse every sender".into()
        ));
    }
    let gate = listen::Gate {
        token: listen::load_token(a.token_file.as_deref(), a.token_env.as_deref())?,
        tls: match (&a.tls_cert, &a.tls_key) {
            (Some(c), Some(k)) => Some(listen::load_tls(c, k)?),
            _ => None,
        },
        max_connections: a.max_connections,
        idle: a.idle_timeout,
    };
    let opts = IngestOptions {
        table: a.table.clone(),
        keys: a.key.iter().map(|k| k.trim().to_string()).collect(),
        durability: a.durability,
        null_keep: a.null == NullPolicy::Keep,
        commit_rows: a.commit_rows.max(1),
        commit_interval: a.commit_interval,
        history: a.history.clone(),
        ..IngestOptions::default()
    };
    let mut engine = Ingest::open(&a.db, opts)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing the signal handler")?;
    }
    // Bounded: a reader that outruns the engine waits instead of filling memory.
    let (tx, rx) = bounded::<Batch>(64);
    let how = Parsing {
        keys: engine.key_fields().into(),
        // A rejects file shows each bad message whole, also one refused after parsing.
        keep_raw: a.history.is_some() || a.rejects.is_some(),
        max_line: a.max_line_bytes,
    };
    let mut resumed = None;
    let source = a.source.clone().unwrap_or_else(|| "-".into());
    if let Some(addr) = a.listen {
        let listener = TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?;
        listener.set_nonblocking(true)?;
        if !a.quiet {
            eprintln!("listening on {}", listener.local_addr()?);
        }
        let (stop2, stop3, quiet) = (stop.clone(), stop.clone(), a.quiet);
        std::thread::spawn(move || {
            listen::accept(listener, gate, stop2, quiet, move |stream, name| {
                let (reader, held) = Buffered::new(stream);
                let mut lines = how.lines(reader, 1, 0);
                let _ = read_lines(&mut lines, &held, &name, None, &how, &tx, &stop3);
            })
        });
    } else if source == "-" {
        let stop2 = stop.clone();
        std::thread::spawn(move || {
            let (reader, held) = Buffered::new(std::io::stdin());
            let mut lines = how.lines(reader, 1, 0);
            let name: Arc<str> = "<stdin>".into();
            if let Err(e) = read_lines(&mut lines, &held, &name, None, &how, &tx, &stop2) {
                let _ = tx.send(Batch::Fatal(e));
            }
        });
    } else {
        let path = PathBuf::from(&source);
        let id = path
            .canonicalize()
            .with_context(|| format!("opening {source}"))?
            .display()
            .to_string();
        let mut start = (1, 0);
        if !a.from_start {
            if let Some(p) = engine.resume_point(&id)? {
                let len = std::fs::metadata(&path)?.len();
                let now = File::open(&path)
                    .ok()
                    .and_then(|f| identity_text(file_identity(&f)));
                if p.file.is_some() && p.file != now {
                    if !a.quiet {
                        eprintln!("note: {source} is another file than the one the last run read (stopped at byte {}): reading it from the start", p.offset);
                    }
                } else if p.offset <= len {
                    start = (p.line, p.offset);
                    resumed = Some(p.offset);
                } else if !a.quiet {
                    eprintln!("note: {source} is shorter than where the last run stopped (byte {}): reading it from the start", p.offset);
                }
            }
        }
        let (stop2, follow) = (stop.clone(), a.follow);
        std::thread::Builder::new()
            .name("liteload-read".into())
            .spawn(move || file_reader(path, start, follow, how, tx, stop2))
            .context("starting the reader")?;
    }
    if let (Some(off), false) = (resumed, a.quiet) {
        eprintln!("note: resuming {source} at byte {off} (use --from-start to read it all again)");
    }
    drive(&a, &mut engine, rx, &stop).map_err(|e| match e.downcast::<liteload::Error>() {
        // An SQLite or I/O failure (a full disk) names the database.
        Ok(le) => le.in_file(&a.db).into(),
        Err(e) => e,
    })
}

fn drive(
    a: &IngestArgs,
    engine: &mut Ingest,
    rx: Receiver<Batch>,
    stop: &AtomicBool,
) -> Result<()> {
    let start = Instant::now();
    let mut rejects = match &a.rejects {
        Some(p) => Some(std::io::BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let mut stats = match &a.stats_json {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?,
        ),
        None => None,
    };
    let status = !a.quiet && std::io::stderr().is_terminal();
    let mut last_status = Instant::now();
    let mut last_commit = 0.0;
    let mut shown = 0;
    let mut failure: Option<anyhow::Error> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Batch::Messages { from, source, msgs }) => {
                let mut next = 0;
                while next < msgs.len() && failure.is_none() {
                    let mut report = Ok(());
                    let pushed = engine.push_messages(&msgs, next, source.as_ref(), |m, reason| {
                        let at = match m.bad_column {
                            Some(c) => format!("{from}:{}:{c}", m.meta.line),
                            None => format!("{from}:{}", m.meta.line),
                        };
                        let raw = String::from_utf8_lossy(msgs.raw(m));
                        match bad(a, &mut rejects, &mut shown, &at, reason, &raw) {
                            Ok(None) => true,
                            Ok(Some(e)) => {
                                failure = Some(e);
                                false
                            }
                            Err(e) => {
                                report = Err(e);
                                false
                            }
                        }
                    });
                    report?;
                    next = pushed.next;
                    if next < msgs.len() && !pushed.stopped {
                        // The window is full: close it and go on with the rest.
                        commit_window(a, engine, &mut stats, &mut rejects, &mut last_commit)?;
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
            Ok(Batch::Fatal(e)) => {
                failure = Some(anyhow::anyhow!(e));
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if engine.due() {
            commit_window(a, engine, &mut stats, &mut rejects, &mut last_commit)?;
        }
        if status && last_status.elapsed() >= Duration::from_millis(500) {
            let t = engine.totals();
            let secs = start.elapsed().as_secs_f64().max(1e-3);
            eprint!(
                "\r{} messages ({}/s), {} inserted, {} updated, {} rejects, last commit {:.0} ms   ",
                grouped(t.messages),
                grouped((t.messages as f64 / secs) as u64),
                grouped(t.inserted),
                grouped(t.updated),
                grouped(t.rejects),
                last_commit * 1000.0
            );
            last_status = Instant::now();
        }
    }
    // Whatever happened, the good messages before it are committed.
    let earlier = engine.wait()?;
    let s = engine.commit()?;
    for s in earlier.iter().chain([&s]) {
        report_refused(a, &mut rejects, s)?;
        if let Some(f) = &mut stats {
            if s.messages + s.rejects > 0 {
                writeln!(f, "{}", serde_json::to_string(s)?)?;
            }
        }
    }
    if let Some(r) = &mut rejects {
        r.flush()?;
    }
    if status {
        eprintln!();
    }
    let t = engine.totals().clone();
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
        if t.type_mismatches > 0 {
            eprintln!(
                "note: {} values had another type than their column's",
                t.type_mismatches
            );
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Closes the open window: it is written on the engine's commit thread while the next
/// one fills; the window before it, now written, is logged.
fn commit_window(
    a: &IngestArgs,
    engine: &mut Ingest,
    stats: &mut Option<File>,
    rejects: &mut Option<std::io::BufWriter<File>>,
    last_commit: &mut f64,
) -> Result<()> {
    if let Some(s) = engine.commit_background()? {
        *last_commit = s.commit_seconds;
        if let Some(f) = stats {
            writeln!(f, "{}", serde_json::to_string(&s)?)?;
        }
        report_refused(a, rejects, &s)?;
    }
    Ok(())
}

/// Reports the rows a window's commit could not write (the table's own constraints
/// refused them): to the rejects file, and as warnings.
fn report_refused(
    a: &IngestArgs,
    rejects: &mut Option<std::io::BufWriter<File>>,
    s: &liteload::ingest::CommitStats,
) -> Result<()> {
    for reason in &s.refused {
        if let Some(w) = rejects {
            writeln!(
                w,
                "{}",
                serde_json::json!({"at": "commit", "reason": reason, "message": null})
            )?;
        }
        if !a.quiet {
            eprintln!("warning: {reason}");
        }
    }
    Ok(())
}

/// Reports a bad message. Returns the error to stop with under --strict.
fn bad(
    a: &IngestArgs,
    rejects: &mut Option<std::io::BufWriter<File>>,
    shown: &mut u32,
    at: &str,
    reason: &str,
    raw: &str,
) -> Result<Option<anyhow::Error>> {
    if let Some(w) = rejects {
        writeln!(
            w,
            "{}",
            serde_json::json!({"at": at, "reason": reason, "message": raw})
        )?;
    }
    if a.strict {
        return Ok(Some(
            Missing(format!(
                "{at}: {reason} (--strict: stopped; the messages before it are committed)"
            ))
            .into(),
        ));
    }
    if !a.quiet && *shown < 5 {
        eprintln!("warning: {at}: {reason}");
        *shown += 1;
    }
    Ok(None)
}
