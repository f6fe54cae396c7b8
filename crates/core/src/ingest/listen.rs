//! Who may write into an ingest over TCP, and how many at once.
//!
//! - A listener may require a secret token: then the first line a sender sends must be
//!   the token, compared in constant time; a sender without it is closed before any of
//!   its lines is read as a message. The token comes from a file or an environment
//!   variable (never from a command line, where `ps` shows it) and is never printed.
//! - With a certificate and key (PEM), connections are TLS (rustls): the token and the
//!   messages are not readable on the wire.
//! - At most `max_connections` senders at once: one more is closed at once (descriptors
//!   stay free for the database); a sender silent for `idle` is closed, and one that has
//!   not passed the gate (handshake, token line) within `admit_within` too.
//! - One sender's failure is that sender's alone: a reset, an abrupt TLS close, garbage
//!   or silence close its connection (reported and counted), never the listener.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use super::timed_out;
use crate::error::{Error, Result};

/// The longest token line read.
const MAX_TOKEN_LINE: u64 = 4096;

/// How a listener lets senders in.
#[derive(Clone)]
pub struct Gate {
    /// The secret a sender's first line must be.
    pub token: Option<Arc<[u8]>>,
    /// Serve TLS with this configuration ([`load_tls`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Senders at once; one more is closed at once.
    pub max_connections: usize,
    /// A sender silent this long is closed.
    pub idle: Duration,
    /// A sender must finish its TLS handshake and token line within this long of
    /// connecting, however slowly it sends them, or it is closed.
    pub admit_within: Duration,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        f.debug_struct("Gate")
            .field("token", &self.token.as_ref().map(|_| "<secret>"))
            .field("tls", &self.tls.is_some())
            .field("max_connections", &self.max_connections)
            .field("idle", &self.idle)
            .field("admit_within", &self.admit_within)
            .finish()
    }
}

/// The token from `file` (its first line) or from the environment variable `env`.
/// An empty token is refused: it would let anyone in.
pub fn load_token(file: Option<&Path>, env: Option<&str>) -> Result<Option<Arc<[u8]>>> {
    let raw = match (file, env) {
        (Some(_), Some(_)) => {
            return Err(Error::usage(
                "a token file and a token variable: give the token one way",
            ))
        }
        (Some(f), None) => std::fs::read(f).map_err(|e| Error::io(Some(f.to_path_buf()), e))?,
        (None, Some(v)) => match std::env::var_os(v) {
            Some(t) => t.into_encoded_bytes(),
            None => {
                return Err(Error::usage(format!(
                    "the token variable {v}: no such environment variable"
                )))
            }
        },
        (None, None) => return Ok(None),
    };
    let token = raw
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    if token.is_empty() {
        return Err(Error::usage("the token is empty"));
    }
    Ok(Some(token.into()))
}

/// A TLS server configuration from a PEM certificate chain and a PEM private key.
pub fn load_tls(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::usage(format!(
                "{}: not a PEM certificate chain: {e}",
                cert.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(Error::usage(format!(
            "{}: no certificate in it",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error::usage(format!("{}: not a PEM private key: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::usage(format!("setting up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            Error::usage(format!(
                "the TLS certificate and key do not go together: {e}"
            ))
        })?;
    Ok(Arc::new(config))
}

/// One held connection: counted while it lives.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many connection failures are reported one by one; past these, one report at
/// each power of two (a flood of hostile senders does not flood the log).
const REPORTED_ONE_BY_ONE: u64 = 16;

/// Accepts senders on `listener` (made non-blocking here) until `stop`, each on a
/// thread of its own: once through the gate, `serve` gets its byte stream and a name
/// for messages, and says how the connection ended.
///
/// Nothing one sender does ends the listener: a sender turned away at the gate, or
/// whose connection fails (a reset, a TLS close without `close_notify`, silence past
/// [`Gate::idle`]), is reported through `note` and counted in `failed`, and the others
/// are served on.
pub fn accept(
    listener: TcpListener,
    gate: Gate,
    stop: Arc<AtomicBool>,
    failed: Arc<AtomicU64>,
    note: impl Fn(String) + Send + Sync + 'static,
    serve: impl Fn(Box<dyn Read + Send>, Arc<str>) -> std::result::Result<(), String>
        + Send
        + Sync
        + 'static,
) {
    if let Err(e) = listener.set_nonblocking(true) {
        note(format!("the listener cannot poll for its stop: {e}"));
    }
    let (serve, note) = (Arc::new(serve), Arc::new(note));
    let active = Arc::new(AtomicUsize::new(0));
    let mut n = 0u64;
    let mut refused = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        n += 1;
        if active.load(Ordering::SeqCst) >= gate.max_connections {
            refused += 1;
            if refused.is_power_of_two() {
                note(format!(
                    "{refused} connection(s) closed: {} senders at once is the most allowed",
                    gate.max_connections
                ));
            }
            drop(stream);
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let held = Held(active.clone());
        let (gate, serve, note2, failed2) =
            (gate.clone(), serve.clone(), note.clone(), failed.clone());
        let name: Arc<str> = format!("connection {n} ({peer})").into();
        let started = std::thread::Builder::new()
            .name("liteload-conn".into())
            .spawn(move || {
                let _held = held;
                // A serving failure names the connection and the line itself.
                let ended = admit(stream, &gate)
                    .map_err(|why| format!("{name}: closed: {why}"))
                    .and_then(|r| serve(r, name));
                if let Err(why) = ended {
                    let k = failed2.fetch_add(1, Ordering::SeqCst) + 1;
                    if k <= REPORTED_ONE_BY_ONE {
                        note2(why);
                    } else if k.is_power_of_two() {
                        note2(format!(
                            "{k} connections have ended with an error (the last: {why})"
                        ));
                    }
                }
            });
        if started.is_err() {
            note("could not start a thread for a connection; it was closed".into());
        }
    }
}

/// A sender's socket: every read waits at most [`Gate::idle`], and until the sender has
/// passed the gate, no read goes past `admit_by` (a sender that trickles its TLS
/// handshake or token line byte by byte is closed all the same).
struct Timed {
    socket: TcpStream,
    idle: Duration,
    admit_by: Option<(Instant, Duration)>,
    /// The read timeout the socket has now (set again only when it changes).
    timeout: Option<Duration>,
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let now = Instant::now();
            let wait = match self.admit_by {
                Some((by, within)) if now >= by => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "did not pass the gate (TLS handshake, token line) within {:.1} s",
                            within.as_secs_f64()
                        ),
                    ))
                }
                Some((by, _)) => (by - now).min(self.idle),
                None => self.idle,
            }
            // A zero timeout means "block forever" to the socket.
            .max(Duration::from_millis(1));
            if self.timeout != Some(wait) {
                self.socket.set_read_timeout(Some(wait))?;
                self.timeout = Some(wait);
            }
            match self.socket.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {
                    if wait >= self.idle {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no bytes for {:.0} s", self.idle.as_secs_f64()),
                        ));
                    }
                    // The gate's deadline cut this wait short: the loop reports it.
                }
                r => return r,
            }
        }
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.socket.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.socket.flush()
    }
}

/// A sender's connection, plain or TLS.
enum Conn {
    Plain(Timed),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, Timed>>),
}

impl Conn {
    fn socket(&mut self) -> &mut Timed {
        match self {
            Conn::Plain(t) => t,
            Conn::Tls(s) => &mut s.sock,
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(t) => t.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

/// The token line `line` as sent: without its line end (`\n` or `\r\n`), nothing else
/// taken off; `None` when it has no line end (the sender closed, or sent too much).
fn token_line(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\n")?;
    Some(line.strip_suffix(b"\r").unwrap_or(line))
}

/// The sender's stream once it has passed the gate: TLS set up if asked for, the token
/// line read and checked if one is required, both within [`Gate::admit_within`].
fn admit(stream: TcpStream, gate: &Gate) -> std::result::Result<Box<dyn Read + Send>, String> {
    stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_write_timeout(Some(gate.idle)))
        .map_err(|e| e.to_string())?;
    let timed = Timed {
        socket: stream,
        idle: gate.idle,
        admit_by: Some((Instant::now() + gate.admit_within, gate.admit_within)),
        timeout: None,
    };
    let conn = match &gate.tls {
        Some(cfg) => {
            let conn = rustls::ServerConnection::new(cfg.clone()).map_err(|e| e.to_string())?;
            let mut s = rustls::StreamOwned::new(conn, timed);
            while s.conn.is_handshaking() {
                s.conn
                    .complete_io(&mut s.sock)
                    .map_err(|e| format!("TLS handshake: {e}"))?;
            }
            Conn::Tls(Box::new(s))
        }
        None => Conn::Plain(timed),
    };
    let mut r = BufReader::with_capacity(64 * 1024, conn);
    if let Some(token) = &gate.token {
        let mut line = Vec::new();
        (&mut r)
            .take(MAX_TOKEN_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("no token line ({e})"))?;
        let given = token_line(&line).ok_or("no token line (no line end)")?;
        // Exactly the token: nothing trimmed but the line end. Constant time over the
        // token's length: the comparison tells nothing of how much of a wrong token was
        // right.
        let same: bool = given.len() == token.len() && bool::from(given.ct_eq(token));
        if !same {
            return Err("the first line is not the token".into());
        }
    }
    r.get_mut().socket().admit_by = None;
    Ok(Box::new(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_a_file_or_the_environment_and_are_never_empty() -> Result<()> {
        let d = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let f = d.path().join("t");
        std::fs::write(&f, "s3cret \nignored\n").map_err(|e| Error::io(None, e))?;
        assert_eq!(load_token(Some(&f), None)?.as_deref(), Some(&b"s3cret"[..]));
        std::fs::write(&f, "\n").map_err(|e| Error::io(None, e))?;
        assert!(load_token(Some(&f), None).is_err());
        assert!(load_token(None, Some("LITELOAD_TEST_NO_SUCH_VARIABLE")).is_err());
        assert!(load_token(None, None)?.is_none());
        let gate = Gate {
            token: Some(b"abc".as_slice().into()),
            tls: None,
            max_connections: 1,
            idle: Duration::from_secs(1),
            admit_within: Duration::from_secs(1),
        };
        assert!(!format!("{gate:?}").contains("abc"));
        Ok(())
    }
}
