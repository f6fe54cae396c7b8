//! A feed's client: connects to a feed provider over TLS (plain TCP only on loopback),
//! sends an init line saying where to start, reads newline-delimited JSON, and
//! reconnects with backoff when the connection drops, stalls or cannot be made.
//!
//! Positions: a feed's messages may carry their position in a field (a timestamp, an
//! offset, a sequence number). The engine stores the last applied position with each
//! window, in the window's transaction (see [`super::FileSource::position_field`]). The
//! init line's `{position}` is replaced by where to start:
//! - on a run's first connection, the stored position (else the configured start);
//! - on a reconnect, the position of the last message read: every message read is
//!   applied by this run, and if the process dies first, the next run asks from the
//!   stored one.
//!
//! Messages the feed sends at or before the position asked for are applied again
//! (harmless: applying an update twice gives the same row) and counted as replayed.
//! Positions compare as numbers when both are numbers, else as text.
//!
//! Secrets: the init line (credentials) is never printed, logged, or put in an error;
//! [`InitLine`]'s `Debug` shows none of it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

pub use super::reading::compare_positions;
use super::reading::{read_lines, Batch, Buffered, Notice, Parsing, Tracker};
use super::{timed_out, FileSource};
use crate::error::{Error, Result};

/// The placeholder of an init line that the start position replaces.
pub const POSITION_PLACEHOLDER: &str = "{position}";

/// How the client talks to the feed.
#[derive(Clone)]
pub enum Transport {
    /// TLS with this client configuration ([`tls_config`]).
    Tls(Arc<rustls::ClientConfig>),
    /// Plain TCP: only to a loopback address (anything else is refused before
    /// connecting, so credentials never cross a network in the clear).
    Plain,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Tls(_) => "Tls",
            Transport::Plain => "Plain",
        })
    }
}

/// Verifies a server's certificate as WebPKI does from the given roots; a certificate
/// that is byte for byte one of `pinned` (a self-signed server certificate given as the
/// CA, which WebPKI refuses as a CA used as an end entity) is trusted as that exact
/// certificate, its name still checked against the name connected to.
#[derive(Debug)]
struct PinnedOrWebPki {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl rustls::client::danger::ServerCertVerifier for PinnedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let checked = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match checked {
            Err(_)
                if self
                    .pinned
                    .iter()
                    .any(|p| p.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// A TLS client configuration that trusts the CA certificates in the PEM file `ca`, or,
/// without one, the system's trusted roots. A certificate in `ca` that the server
/// presents itself (a self-signed server certificate, also one marked as a CA) is
/// trusted as an exact pin: those bytes, for the name connected to.
pub fn tls_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    match ca {
        Some(ca) => {
            let pinned = crate::tls::ca_certificates(ca)?;
            for c in &pinned {
                roots.add(c.clone()).map_err(|e| {
                    Error::usage(format!(
                        "{}: a certificate is not usable: {e}",
                        ca.display()
                    ))
                })?;
            }
            let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| Error::usage(format!("{}: {e}", ca.display())))?;
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::usage(format!("setting up TLS: {e}")))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedOrWebPki { webpki, pinned }))
                .with_no_client_auth();
            return Ok(Arc::new(config));
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            // Some unreadable system certificates are no reason to fail; none at all is.
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(Error::usage(
                    "no trusted root certificates found on this system: give the feed's CA certificate",
                ));
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::usage(format!("setting up TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The first line(s) sent on each connection: credentials and where to start. Holds a
/// secret: it is never shown, and its `Debug` prints `<secret>`.
#[derive(Clone)]
pub struct InitLine(Arc<str>);

impl std::fmt::Debug for InitLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InitLine(<secret>)")
    }
}

impl InitLine {
    /// An init line from its template: `{position}` in it is replaced by where to start.
    /// A line end after it is added when sent. Refused when empty.
    pub fn new(template: impl Into<String>) -> Result<InitLine> {
        let mut t: String = template.into();
        while t.ends_with(['\n', '\r']) {
            t.pop();
        }
        if t.trim().is_empty() {
            return Err(Error::usage("the init line is empty"));
        }
        Ok(InitLine(t.into()))
    }

    /// The template in the file `path` (its whole text, final line end dropped). An
    /// error names the file, never its content.
    pub fn from_file(path: &Path) -> Result<InitLine> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(Some(path.to_path_buf()), e))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::usage(format!("{}: the init line is not UTF-8", path.display())))?;
        InitLine::new(text)
            .map_err(|_| Error::usage(format!("{}: the file is empty", path.display())))
    }

    /// Whether the template has the `{position}` placeholder.
    pub fn needs_position(&self) -> bool {
        self.0.contains(POSITION_PLACEHOLDER)
    }

    /// The bytes to send, `{position}` replaced by `position`.
    fn render(&self, position: Option<&str>) -> Vec<u8> {
        let mut out = match position {
            Some(p) => self.0.replace(POSITION_PLACEHOLDER, p),
            None => self.0.to_string(),
        }
        .into_bytes();
        out.push(b'\n');
        out
    }
}

/// A feed to connect to.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Connect {
    /// `HOST:PORT`. With TLS, `HOST` is also the name the certificate must carry.
    pub addr: String,
    /// TLS or plain TCP.
    pub transport: Transport,
    /// Sent first on each connection.
    pub init: Option<InitLine>,
    /// The message field that holds the feed's position.
    pub position_field: Option<String>,
    /// Where to start when no position is stored (the first run).
    pub start: Option<String>,
    /// No bytes for this long: the connection is dropped and made again.
    pub stall: Duration,
    /// Failed connection attempts in a row before the run fails. `None`: the first
    /// attempt of a run must succeed (a wrong address fails at once), and once connected
    /// the client retries for as long as it runs.
    pub retries: Option<u32>,
    /// The first wait before reconnecting; it doubles per failed attempt up to
    /// `backoff_max` (each wait is jittered to between half and all of it).
    pub backoff_min: Duration,
    /// The longest wait between attempts.
    pub backoff_max: Duration,
    /// How long connecting, the TLS handshake and sending the init line may take.
    pub connect_timeout: Duration,
}

impl Connect {
    /// A feed at `addr` (`HOST:PORT`) with the default timings: a 60 s stall timeout,
    /// backoff from 0.5 s to 30 s, a 10 s connect timeout.
    pub fn new(addr: impl Into<String>, transport: Transport) -> Connect {
        Connect {
            addr: addr.into(),
            transport,
            init: None,
            position_field: None,
            start: None,
            stall: Duration::from_secs(60),
            retries: None,
            backoff_min: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }

    /// The name its resume position is stored under.
    pub fn source_name(&self) -> String {
        format!("connect:{}", self.addr)
    }

    /// The host part of `addr` (without the brackets of an IPv6 address).
    fn host(&self) -> Result<&str> {
        let (host, port) = self
            .addr
            .rsplit_once(':')
            .ok_or_else(|| Error::usage(format!("{}: expected HOST:PORT", self.addr)))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(Error::usage(format!("{}: expected HOST:PORT", self.addr)));
        }
        Ok(host.trim_start_matches('[').trim_end_matches(']'))
    }

    /// Checks what can be checked before connecting; `stored` is the stored position.
    pub(super) fn check(&self, stored: Option<&str>, keys: &[String]) -> Result<()> {
        let host = self.host()?;
        if let Transport::Tls(_) = self.transport {
            rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| {
                Error::usage(format!("{}: not a name TLS can check: {e}", self.addr))
            })?;
        }
        if let Some(f) = &self.position_field {
            if f.is_empty() {
                return Err(Error::usage("the position field's name is empty"));
            }
            if keys.iter().any(|k| k.eq_ignore_ascii_case(f)) {
                return Err(Error::usage(format!(
                    "the position field {f:?} is a key field: a position names where the feed stands, not a row"
                )));
            }
        }
        if let Some(init) = &self.init {
            if init.needs_position() {
                if self.position_field.is_none() {
                    return Err(Error::usage(
                        "the init line has {position} but no position field is named: name the message field that holds it",
                    ));
                }
                if stored.is_none() && self.start.is_none() {
                    return Err(Error::usage(
                        "the init line has {position} and no position is stored yet: give the position to start from on this first run",
                    ));
                }
            }
        }
        if let Some(s) = &self.start {
            if s.chars().any(char::is_control) {
                return Err(Error::usage("the start position has a control character"));
            }
        }
        if self.stall.is_zero() || self.connect_timeout.is_zero() {
            return Err(Error::usage(
                "the stall and connect timeouts must be above 0",
            ));
        }
        Ok(())
    }
}

/// Why an attempt ended.
enum Failure {
    /// Worth another attempt (refused, reset, closed, stalled).
    Retry(std::io::Error),
    /// Will not get better by trying again (an untrusted certificate, a server that does
    /// not speak TLS, an init line it rejects).
    Fatal(Error),
}

/// Waits for I/O by polling, so a stop is seen within this long.
const POLL: Duration = Duration::from_millis(200);

/// A connection's bytes: waits out read timeouts (the socket's are short, to see a
/// stop), reports end of input on stop, and a stall when no byte came for `stall`.
struct Stalls<R> {
    inner: R,
    stall: Duration,
    stop: Arc<AtomicBool>,
    last: Instant,
}

impl<R: Read> Read for Stalls<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    self.last = Instant::now();
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if timed_out(&e) => {
                    if self.stop.load(Ordering::Relaxed) {
                        return Ok(0);
                    }
                    if self.last.elapsed() >= self.stall {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no bytes for {:.0} s", self.stall.as_secs_f64()),
                        ));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The rustls error inside an I/O error, if any.
fn tls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
}

/// Opens one connection and sends the init line.
fn open(
    c: &Connect,
    addrs: &[SocketAddr],
    position: Option<&str>,
) -> std::result::Result<Box<dyn Read + Send>, Failure> {
    let mut last = None;
    let mut tcp = None;
    for a in addrs {
        match TcpStream::connect_timeout(a, c.connect_timeout) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(tcp) = tcp else {
        return Err(Failure::Retry(last.unwrap_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
        })));
    };
    let setup = |s: &TcpStream| -> std::io::Result<()> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(POLL))?;
        s.set_write_timeout(Some(c.connect_timeout))
    };
    setup(&tcp).map_err(Failure::Retry)?;
    let init = c.init.as_ref().map(|i| i.render(position));
    let deadline = Instant::now() + c.connect_timeout;
    let stream: Box<dyn ReadWrite> = match &c.transport {
        Transport::Plain => Box::new(tcp),
        Transport::Tls(cfg) => {
            let host = c.host().map_err(Failure::Fatal)?;
            let name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| Failure::Fatal(Error::usage(format!("{}: {e}", c.addr))))?;
            let conn = rustls::ClientConnection::new(cfg.clone(), name)
                .map_err(|e| Failure::Fatal(Error::internal(format!("setting up TLS: {e}"))))?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            while s.conn.is_handshaking() {
                match s.conn.complete_io(&mut s.sock) {
                    Ok(_) => {}
                    Err(e) if timed_out(&e) && Instant::now() < deadline => {}
                    Err(e) => {
                        return Err(match tls_error(&e) {
                            Some(t) => Failure::Fatal(Error::peer(&c.addr, tls_failure(t))),
                            None if timed_out(&e) => Failure::Retry(std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                "the TLS handshake took too long",
                            )),
                            None => Failure::Retry(e),
                        })
                    }
                }
            }
            Box::new(s)
        }
    };
    let mut stream = stream;
    if let Some(line) = init {
        // The error says nothing of the line: it holds credentials.
        stream
            .write_all(&line)
            .and_then(|()| stream.flush())
            .map_err(|e| {
                Failure::Retry(std::io::Error::new(
                    e.kind(),
                    format!("sending the init line: {e}"),
                ))
            })?;
    }
    Ok(Box::new(stream))
}

/// What a TLS failure means, in words (never a credential: none is sent before it).
fn tls_failure(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(why) => format!(
            "the server's certificate is not trusted ({why:?}): give the certificate of the CA that signed it, or connect to the name it was issued for"
        ),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateHandshakeMessage { .. } => {
            format!("the server does not answer in TLS ({e}); a plain-TCP feed on loopback needs TLS turned off")
        }
        _ => format!("the TLS handshake failed: {e}"),
    }
}

trait ReadWrite: Read + Write + Send {}
impl<T: Read + Write + Send> ReadWrite for T {}

/// A small xorshift for backoff jitter (no need for a good generator here).
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Jitter(t | 1)
    }

    /// Between half and all of `d`.
    fn of(&mut self, d: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let f = 0.5 + (self.0 % 1000) as f64 / 2000.0;
        d.mul_f64(f)
    }
}

/// Sleeps `d`, waking early on stop. Returns whether to go on.
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    !stop.load(Ordering::Relaxed)
}

/// Connections that closed in a row right after the init line, sending nothing, before
/// the init line is taken as rejected.
const SILENT_CLOSES: u32 = 3;

/// The client: runs until `stop` or a failure that retrying cannot mend (sent as a
/// fatal batch). `stored` is the position the last committed window stored.
pub(super) fn run(
    c: Connect,
    stored: Option<String>,
    how: Parsing,
    tx: Sender<Batch>,
    notices: Sender<Notice>,
    replayed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) {
    let fail = |e: Error| {
        let _ = tx.send(Batch::Fatal(e));
    };
    let addrs: Vec<SocketAddr> = match c.addr.to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return fail(Error::io(
                None,
                std::io::Error::new(e.kind(), format!("{}: {e}", c.addr)),
            ))
        }
    };
    if matches!(c.transport, Transport::Plain) && !addrs.iter().all(|a| a.ip().is_loopback()) {
        return fail(Error::usage(format!(
            "{}: not a loopback address; plain TCP is only for loopback (credentials and data would cross the network in the clear)",
            c.addr
        )));
    }
    let source = FileSource {
        path: c.source_name().into(),
        file: None,
        position_field: c.position_field.as_deref().map(Into::into),
    };
    let mut last_read: Option<String> = None;
    let mut jitter = Jitter::new();
    let mut delay = c.backoff_min;
    let (mut failures, mut silent, mut connections) = (0u32, 0u32, 0u64);
    let mut ever_connected = false;
    while !stop.load(Ordering::Relaxed) {
        let asked = last_read
            .clone()
            .or_else(|| stored.clone())
            .or_else(|| c.start.clone());
        let why = match open(&c, &addrs, asked.as_deref()) {
            Err(Failure::Fatal(e)) => return fail(e),
            Err(Failure::Retry(e)) => e,
            Ok(stream) => {
                ever_connected = true;
                connections += 1;
                let _ = notices.send(Notice::Connected {
                    to: c.addr.clone(),
                    from: asked.clone(),
                });
                let name: Arc<str> = format!("{} (connection {connections})", c.addr).into();
                let (reader, held) = Buffered::new(Stalls {
                    inner: stream,
                    stall: c.stall,
                    stop: stop.clone(),
                    last: Instant::now(),
                });
                let mut lines = how.lines(reader, 1, 0).holding_partial_lines();
                // A start given for the first run is no replay point: nothing was read.
                let seen = last_read.is_some() || stored.is_some();
                let mut track = Tracker::new(
                    c.position_field.as_deref(),
                    asked.clone().filter(|_| seen),
                    &replayed,
                );
                let ended = read_lines(
                    &mut lines,
                    &held,
                    &name,
                    Some(&source),
                    &how,
                    &tx,
                    &stop,
                    Some(&mut track),
                );
                if track.last.is_some() {
                    last_read = track.last.take();
                }
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                if track.good > 0 {
                    failures = 0;
                    silent = 0;
                    delay = c.backoff_min;
                } else if let Some(answer) = &track.first_bad {
                    return fail(Error::peer(
                        &c.addr,
                        format!(
                            "the server closed the connection{} without sending a message; it answered: {}",
                            if c.init.is_some() { " after the init line" } else { "" },
                            shorten(answer)
                        ),
                    ));
                } else if ended.is_ok() {
                    silent += 1;
                    if silent >= SILENT_CLOSES {
                        return fail(Error::peer(
                            &c.addr,
                            format!(
                                "the server closed {SILENT_CLOSES} connections in a row {}, sending nothing{}",
                                if c.init.is_some() { "right after the init line" } else { "at once" },
                                if c.init.is_some() { ": it does not accept the init line" } else { "" }
                            ),
                        ));
                    }
                }
                match ended {
                    Ok(()) => std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the server closed the connection",
                    ),
                    Err(e) => std::io::Error::other(e.to_string()),
                }
            }
        };
        failures += 1;
        let give_up = match c.retries {
            Some(r) => failures > r,
            None => !ever_connected,
        };
        if give_up {
            let text = if ever_connected {
                format!(
                    "{}: {why} ({failures} failed attempt(s) in a row, the most allowed)",
                    c.addr
                )
            } else {
                format!("connecting to {}: {why}", c.addr)
            };
            return fail(Error::io(None, std::io::Error::new(why.kind(), text)));
        }
        let wait = jitter.of(delay);
        let _ = notices.send(Notice::Reconnecting {
            to: c.addr.clone(),
            why: why.to_string(),
            after: wait,
        });
        if !pause(wait, &stop) {
            return;
        }
        delay = (delay * 2).min(c.backoff_max);
    }
}

/// At most 200 characters of a server's answer, lossy UTF-8.
fn shorten(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering as CmpOrdering;

    #[test]
    fn positions_compare_as_numbers_when_both_are() {
        assert_eq!(compare_positions("9", "10"), CmpOrdering::Less);
        assert_eq!(
            compare_positions("1700000000.5", "1700000000"),
            CmpOrdering::Greater
        );
        assert_eq!(compare_positions("b", "a"), CmpOrdering::Greater);
        assert_eq!(compare_positions("10", "9x"), CmpOrdering::Less);
    }

    #[test]
    fn the_init_line_is_never_shown() -> Result<()> {
        let i = InitLine::new("live password s3cret pitr {position}\n")?;
        assert!(!format!("{i:?}").contains("s3cret"));
        assert!(i.needs_position());
        assert_eq!(i.render(Some("17")), b"live password s3cret pitr 17\n");
        assert!(InitLine::new("\n").is_err());
        Ok(())
    }

    #[test]
    fn plans_that_cannot_work_are_refused_before_connecting() -> Result<()> {
        let keys = vec!["id".to_string()];
        let mut c = Connect::new("localhost:1", Transport::Plain);
        assert!(c.check(None, &keys).is_ok());
        c.init = Some(InitLine::new("from {position}")?);
        assert!(c.check(None, &keys).is_err(), "no position field");
        c.position_field = Some("pitr".into());
        assert!(c.check(None, &keys).is_err(), "no start and nothing stored");
        assert!(c.check(Some("5"), &keys).is_ok());
        c.start = Some("0".into());
        assert!(c.check(None, &keys).is_ok());
        c.position_field = Some("ID".into());
        assert!(c.check(None, &keys).is_err(), "a key field");
        assert!(Connect::new("nohost", Transport::Plain)
            .check(None, &keys)
            .is_err());
        Ok(())
    }
}
