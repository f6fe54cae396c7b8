//! Running an ingest from a feed: readers (a file, followed or not; stdin; any reader;
//! TCP senders through a [`Gate`]) parse lines on their own threads and send them in
//! batches over a bounded channel; the calling thread applies them to the [`Ingest`]
//! and commits when a window closes (also while the feed is idle), and once more at the
//! end, when the feed ends or `stop` is set.
//!
//! A followed file that is rotated (another file at its path) or truncated is read again
//! from its start. A file's resume point is used unless the options say to start over,
//! and only if the file is the one (same identity) and as long as when it was stored.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};

#[cfg(feature = "network")]
use super::connect::{self, Connect};
#[cfg(feature = "network")]
use super::listen::{self, Gate};
pub use super::reading::compare_positions;
use super::reading::{read_lines, Batch, Buffered, Notice, Parsing};
use super::{CommitStats, FileSource, Ingest, Totals};
use crate::error::{Error, Hint, Position, Result};
#[cfg(feature = "network")]
use std::net::TcpListener;

/// Where messages come from.
pub enum Feed {
    /// Standard input.
    Stdin,
    /// Any reader, with a name for positions.
    Reader {
        /// The name in positions (`name:line`).
        name: Arc<str>,
        /// The bytes.
        reader: Box<dyn Read + Send>,
    },
    /// A file of newline-delimited JSON.
    File {
        /// The file.
        path: PathBuf,
        /// Keep reading as it grows, like `tail -F`, until stopped.
        follow: bool,
        /// Ignore the stored resume point.
        from_start: bool,
    },
    /// TCP senders on `listener`, let in by `gate`.
    #[cfg(feature = "network")]
    Listen {
        /// Bound by the caller (so it knows the address before the run).
        listener: TcpListener,
        /// Who may send.
        gate: Gate,
    },
    /// A feed this client connects to (and reconnects to), resumed by position.
    #[cfg(feature = "network")]
    Connect(Connect),
}

/// How a feed is run, besides the [`Ingest`]'s own options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FeedOptions {
    /// A line longer than this is a bad message, skipped without being held whole.
    pub max_line_bytes: usize,
    /// Stop at the first bad message (after committing the good ones before it).
    pub strict: bool,
    /// Write each bad message (position, reason, text) to this file as a JSON line.
    pub rejects: Option<PathBuf>,
    /// Append one JSON object per committed window ([`CommitStats`]) to this file.
    pub stats_json: Option<PathBuf>,
    /// How a bad message's reason words a [`Hint`] (a front end words it as its own
    /// option); [`Hint::text`] by default.
    pub word_hint: fn(Hint) -> String,
}

impl Default for FeedOptions {
    fn default() -> Self {
        FeedOptions {
            max_line_bytes: 16 << 20,
            strict: false,
            rejects: None,
            stats_json: None,
            word_hint: Hint::text,
        }
    }
}

/// What a running feed tells its caller, for display.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A bad message at `at` (`name:line[:column]`): counted, logged, skipped.
    Bad {
        /// `name:line[:column]`.
        at: &'a str,
        /// Why it is bad.
        reason: &'a str,
    },
    /// A row the table's own constraints refused at commit.
    Refused(&'a str),
    /// The listener is accepting on this address.
    Listening(std::net::SocketAddr),
    /// A file is read from the resume point stored by an earlier run: this byte.
    Resuming {
        /// The file.
        source: &'a str,
        /// The byte it is read from.
        offset: u64,
    },
    /// Something the user should know (a file read from its start, a sender turned away).
    Note(String),
    /// The feed's client is connected, having asked for messages from `from`.
    Connected {
        /// `HOST:PORT`.
        to: &'a str,
        /// The position the init line carried, if any.
        from: Option<&'a str>,
    },
    /// The feed's connection was lost or could not be made: trying again after `after`.
    Reconnecting {
        /// `HOST:PORT`.
        to: &'a str,
        /// What happened.
        why: &'a str,
        /// The wait before the next attempt.
        after: Duration,
    },
    /// About twice a second: the totals so far and the last commit's seconds.
    Tick {
        /// Totals since the engine was opened.
        totals: &'a Totals,
        /// How long the last commit took.
        last_commit_seconds: f64,
    },
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
    key: Arc<str>,
    start: (u64, u64),
    follow: bool,
    how: Parsing,
    tx: Sender<Batch>,
    stop: Arc<AtomicBool>,
) {
    let name: Arc<str> = path.display().to_string().into();
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
                let _ = tx.send(Batch::Fatal(Error::io(Some(path.clone()), e)));
                return;
            }
        };
        let ident = file_identity(&f);
        let id = FileSource {
            path: key.clone(),
            file: identity_text(ident),
            position_field: None,
        };
        let (reader, held) = Buffered::new(f);
        let mut lines = how.lines(reader, line, offset);
        if follow {
            // The file may be mid-write: a line is a message once its \n is there.
            lines = lines.holding_partial_lines();
        }
        loop {
            if let Err(e) = read_lines(&mut lines, &held, &name, Some(&id), &how, &tx, &stop, None)
            {
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

/// Where to start reading `path`: its stored resume point, if it is the same file and
/// at least as long; else its start (saying why through `on`).
fn start_of(
    engine: &Ingest,
    path: &std::path::Path,
    key: &str,
    from_start: bool,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<(u64, u64)> {
    let shown = path.display().to_string();
    if from_start {
        return Ok((1, 0));
    }
    let Some(p) = engine.resume_point(key)? else {
        return Ok((1, 0));
    };
    let len = std::fs::metadata(path)
        .map_err(|e| Error::io(Some(path.to_path_buf()), e))?
        .len();
    let now = File::open(path)
        .ok()
        .and_then(|f| identity_text(file_identity(&f)));
    if p.file.is_some() && p.file != now {
        on(Event::Note(format!(
            "{shown} is another file than the one the last run read (stopped at byte {}): reading it from the start",
            p.offset
        )));
        Ok((1, 0))
    } else if p.offset <= len {
        on(Event::Resuming {
            source: &shown,
            offset: p.offset,
        });
        Ok((p.line, p.offset))
    } else {
        on(Event::Note(format!(
            "{shown} is shorter than where the last run stopped (byte {}): reading it from the start",
            p.offset
        )));
        Ok((1, 0))
    }
}

/// Runs `engine` from `feed` until the feed ends or `stop` is set, then commits what is
/// open. Returns the totals. A failure (a feed that cannot be read, a full disk, a bad
/// message with `strict`) ends the run after committing the good messages before it.
pub fn run(
    engine: &mut Ingest,
    feed: Feed,
    opts: &FeedOptions,
    stop: Arc<AtomicBool>,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Totals> {
    // Bounded: a reader that outruns the engine waits instead of filling memory.
    let (tx, rx) = bounded::<Batch>(64);
    let how = Parsing {
        keys: engine.key_fields().into(),
        // A rejects file shows each bad message whole, also one refused after parsing.
        keep_raw: engine.keeps_history() || opts.rejects.is_some(),
        max_line: opts.max_line_bytes,
        word_hint: opts.word_hint,
    };
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .map(|_| ())
            .map_err(|e| Error::io(None, e))
    };
    match feed {
        #[cfg(feature = "network")]
        Feed::Listen { listener, gate } => {
            if let Ok(addr) = listener.local_addr() {
                on(Event::Listening(addr));
            }
            let (notes_tx, notes_rx) = crossbeam_channel::unbounded::<Notice>();
            let stop2 = stop.clone();
            let failed = Arc::new(AtomicU64::new(0));
            let failed2 = failed.clone();
            spawn(
                "liteload-listen",
                Box::new(move || {
                    let stop3 = stop2.clone();
                    listen::accept(
                        listener,
                        gate,
                        stop2,
                        failed2,
                        move |n| {
                            let _ = notes_tx.send(Notice::Note(n));
                        },
                        move |stream, name| how.read_connection(stream, &name, &tx, &stop3),
                    )
                }),
            )?;
            let counters = Counters {
                connection_errors: Some(failed),
                ..Counters::default()
            };
            return drive(engine, rx, Some(notes_rx), counters, opts, &stop, on);
        }
        #[cfg(feature = "network")]
        Feed::Connect(c) => {
            let key = c.source_name();
            let stored = engine
                .resume_point(&key)?
                .and_then(|p| p.position.map(|p| p.to_string()));
            c.check(stored.as_deref(), engine.key_fields())?;
            if let Some(p) = &stored {
                on(Event::Note(format!(
                    "{}: resuming from the stored position {p}",
                    c.addr
                )));
            }
            let (notes_tx, notes_rx) = crossbeam_channel::unbounded::<Notice>();
            let replayed = Arc::new(AtomicU64::new(0));
            // The client stops when this run ends, however it ends (a stop, a failure).
            let ended = SetOnDrop(Arc::new(AtomicBool::new(false)));
            let (replayed2, ended2) = (replayed.clone(), ended.0.clone());
            spawn(
                "liteload-connect",
                Box::new(move || connect::run(c, stored, how, tx, notes_tx, replayed2, ended2)),
            )?;
            let counters = Counters {
                replayed: Some(replayed),
                ..Counters::default()
            };
            return drive(engine, rx, Some(notes_rx), counters, opts, &stop, on);
        }
        Feed::Stdin => {
            let stop2 = stop.clone();
            spawn(
                "liteload-read",
                Box::new(move || how.read_all(std::io::stdin(), &"<stdin>".into(), &tx, &stop2)),
            )?;
        }
        Feed::Reader { name, reader } => {
            let stop2 = stop.clone();
            spawn(
                "liteload-read",
                Box::new(move || how.read_all(reader, &name, &tx, &stop2)),
            )?;
        }
        Feed::File {
            path,
            follow,
            from_start,
        } => {
            let key: Arc<str> = path
                .canonicalize()
                .map_err(|e| Error::io(Some(path.clone()), e))?
                .display()
                .to_string()
                .into();
            let start = start_of(engine, &path, &key, from_start, on)?;
            let stop2 = stop.clone();
            spawn(
                "liteload-read",
                Box::new(move || file_reader(path, key, start, follow, how, tx, stop2)),
            )?;
        }
    }
    drive(engine, rx, None, Counters::default(), opts, &stop, on)
}

/// What threads beside the engine's count, added to the totals it reports.
#[derive(Default)]
struct Counters {
    replayed: Option<Arc<AtomicU64>>,
    connection_errors: Option<Arc<AtomicU64>>,
}

impl Counters {
    fn totals(&self, engine: &Ingest) -> Totals {
        let count = |c: &Option<Arc<AtomicU64>>| c.as_ref().map_or(0, |r| r.load(Ordering::SeqCst));
        let mut totals = engine.totals().clone();
        totals.replayed = count(&self.replayed);
        totals.connection_errors = count(&self.connection_errors);
        totals
    }
}

/// Sets its flag when dropped.
#[cfg(feature = "network")]
struct SetOnDrop(Arc<AtomicBool>);

#[cfg(feature = "network")]
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Where bad messages and windows are logged.
struct Logs {
    rejects: Option<std::io::BufWriter<File>>,
    stats: Option<File>,
}

impl Logs {
    fn open(opts: &FeedOptions) -> Result<Logs> {
        let io = |p: &PathBuf| {
            let p = p.clone();
            move |e| Error::io(Some(p), e)
        };
        Ok(Logs {
            rejects: match &opts.rejects {
                Some(p) => Some(std::io::BufWriter::new(File::create(p).map_err(io(p))?)),
                None => None,
            },
            stats: match &opts.stats_json {
                Some(p) => Some(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(p)
                        .map_err(io(p))?,
                ),
                None => None,
            },
        })
    }

    fn reject(&mut self, line: serde_json::Value) -> Result<()> {
        if let Some(w) = &mut self.rejects {
            writeln!(w, "{line}").map_err(|e| Error::io(None, e))?;
        }
        Ok(())
    }

    /// Logs a committed window: its stats, and the rows its commit refused.
    fn window(&mut self, s: &CommitStats, on: &mut dyn FnMut(Event<'_>)) -> Result<()> {
        for reason in &s.refused {
            self.reject(serde_json::json!({"at": "commit", "reason": reason, "message": null}))?;
            on(Event::Refused(reason));
        }
        if let Some(f) = &mut self.stats {
            if s.messages + s.rejects > 0 {
                let line = serde_json::to_string(s).map_err(|e| Error::io(None, e.into()))?;
                writeln!(f, "{line}").map_err(|e| Error::io(None, e))?;
            }
        }
        Ok(())
    }
}

fn drive(
    engine: &mut Ingest,
    rx: Receiver<Batch>,
    notes: Option<Receiver<Notice>>,
    counters: Counters,
    opts: &FeedOptions,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<Totals> {
    let mut logs = Logs::open(opts)?;
    let mut last_tick = Instant::now();
    let mut last_commit = 0.0;
    let mut failure: Option<Error> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        for n in notes.iter().flat_map(|r| r.try_iter()) {
            match n {
                Notice::Note(n) => on(Event::Note(n)),
                Notice::Connected { to, from } => on(Event::Connected {
                    to: &to,
                    from: from.as_deref(),
                }),
                Notice::Reconnecting { to, why, after } => on(Event::Reconnecting {
                    to: &to,
                    why: &why,
                    after,
                }),
            }
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Batch::Messages { from, source, msgs }) => {
                let mut next = 0;
                while next < msgs.len() && failure.is_none() {
                    let mut logged = Ok(());
                    let pushed = engine.push_messages(&msgs, next, source.as_ref(), |m, reason| {
                        let column = m.bad_column;
                        let at = match column {
                            Some(c) => format!("{from}:{}:{c}", m.meta.line),
                            None => format!("{from}:{}", m.meta.line),
                        };
                        let raw = String::from_utf8_lossy(msgs.raw(m));
                        logged = logs.reject(serde_json::json!({"at": at, "reason": reason, "message": raw}));
                        if logged.is_err() {
                            return false;
                        }
                        if opts.strict {
                            let pos = Position {
                                path: from.clone(),
                                line: m.meta.line,
                                column: column.unwrap_or(1),
                                // One message a line: a message is numbered by its
                                // line (blank lines count, as a reader's line count).
                                record: m.meta.line,
                                byte: 0,
                            };
                            failure = Some(Error::input(
                                pos,
                                None,
                                format!("{reason} (stopped at the first bad message; the messages before it are committed)"),
                            ));
                            return false;
                        }
                        on(Event::Bad { at: &at, reason });
                        true
                    });
                    logged?;
                    next = pushed.next;
                    if next < msgs.len() && !pushed.stopped {
                        // The window is full: close it and go on with the rest.
                        commit_window(engine, &mut logs, &mut last_commit, on)?;
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
            Ok(Batch::Fatal(e)) => {
                failure = Some(e);
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if engine.due() {
            commit_window(engine, &mut logs, &mut last_commit, on)?;
        }
        if last_tick.elapsed() >= Duration::from_millis(500) {
            let totals = counters.totals(engine);
            on(Event::Tick {
                totals: &totals,
                last_commit_seconds: last_commit,
            });
            last_tick = Instant::now();
        }
    }
    // Whatever happened, the good messages before it are committed.
    let earlier = engine.wait()?;
    let last = engine.commit()?;
    for s in earlier.iter().chain([&last]) {
        logs.window(s, on)?;
    }
    if let Some(r) = &mut logs.rejects {
        r.flush().map_err(|e| Error::io(None, e))?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(counters.totals(engine)),
    }
}

/// Closes the open window: it is written on the engine's commit thread while the next
/// one fills; the window before it, now written, is logged.
fn commit_window(
    engine: &mut Ingest,
    logs: &mut Logs,
    last_commit: &mut f64,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<()> {
    if let Some(s) = engine.commit_background()? {
        *last_commit = s.commit_seconds;
        logs.window(&s, on)?;
    }
    Ok(())
}
