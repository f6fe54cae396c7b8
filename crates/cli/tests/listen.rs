//! `ingest --listen`: only senders with the token write; TLS; bounded connections; idle
//! senders closed. Every connection here is to 127.0.0.1.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use rusqlite::types::Value;
use tempfile::TempDir;

use common::{checked_rows, listening_addr, spawn_ingest, terminate};

type R = Result<(), Box<dyn std::error::Error>>;

const TOKEN: &str = "correct horse battery staple";

/// A self-signed certificate for `localhost` written as PEM files, and a client
/// configuration that trusts it.
fn tls_files(dir: &Path) -> Result<Arc<rustls::ClientConfig>, Box<dyn std::error::Error>> {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    std::fs::write(dir.join("cert.pem"), cert.pem())?;
    std::fs::write(dir.join("key.pem"), key_pair.serialize_pem())?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone())?;
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// Sends `text` over TLS and closes cleanly.
fn send_tls(addr: &str, cfg: &Arc<rustls::ClientConfig>, text: &str) -> R {
    let tcp = TcpStream::connect(addr)?;
    let name = rustls::pki_types::ServerName::try_from("localhost")?;
    let conn = rustls::ClientConnection::new(cfg.clone(), name)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    s.write_all(text.as_bytes())?;
    s.conn.send_close_notify();
    s.flush()?;
    // Wait for the server to close its side: the message was read by then.
    let mut rest = vec![];
    let _ = s.sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.read_to_end(&mut rest);
    Ok(())
}

/// Whether the server closes `s` within `within` (reads EOF or an error).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let _ = s.set_read_timeout(Some(within));
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn rows(db: &Path) -> Vec<Vec<Value>> {
    checked_rows(db, "SELECT id, v FROM t ORDER BY id").unwrap_or_default()
}

#[test]
fn only_senders_with_the_token_write_and_connections_are_bounded() -> R {
    let d = TempDir::new()?;
    let client = tls_files(d.path())?;
    std::fs::write(d.path().join("token"), format!("{TOKEN}\n"))?;
    let mut child = spawn_ingest(
        d.path(),
        &[
            "s.db",
            "--table",
            "t",
            "--key",
            "id",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            "token",
            "--tls-cert",
            "cert.pem",
            "--tls-key",
            "key.pem",
            "--max-connections",
            "2",
            "--idle-timeout",
            "3s",
            "--commit-interval",
            "50ms",
        ],
    )?;
    let (addr, mut err) = listening_addr(&mut child)?;
    // Keep reading stderr so the child never blocks on it; the token must not appear.
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let db = d.path().join("s.db");

    send_tls(&addr, &client, &format!("{TOKEN}\n{{\"id\":1,\"v\":1}}\n"))?;
    // A wrong token, no token, and the right token without TLS: nothing is written.
    send_tls(&addr, &client, "wrong token\n{\"id\":2,\"v\":2}\n")?;
    send_tls(&addr, &client, "{\"id\":3,\"v\":3}\n")?;
    let mut plain = TcpStream::connect(&addr)?;
    plain.write_all(format!("{TOKEN}\n{{\"id\":4,\"v\":4}}\n").as_bytes())?;
    assert!(closed_within(&mut plain, Duration::from_secs(10)));
    send_tls(&addr, &client, &format!("{TOKEN}\n{{\"id\":5,\"v\":5}}\n"))?;
    let want = vec![
        vec![Value::Integer(1), Value::Integer(1)],
        vec![Value::Integer(5), Value::Integer(5)],
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && rows(&db) != want {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(rows(&db), want);

    // Two silent senders fill the listener; a third is closed at once, while the two
    // stay open until the idle timeout closes them.
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&addr))
        .collect::<Result<_, _>>()?;
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(&addr)?;
    assert!(
        closed_within(&mut third, Duration::from_secs(2)),
        "the third sender is closed"
    );
    assert!(
        !closed_within(&mut held[0], Duration::from_millis(200)),
        "the first stays"
    );
    let start = Instant::now();
    for h in &mut held {
        assert!(
            closed_within(h, Duration::from_secs(15)),
            "idle senders are closed"
        );
    }
    assert!(start.elapsed() < Duration::from_secs(15));

    assert!(terminate(&mut child)?);
    let log = log.join().map_err(|_| "the log reader panicked")?;
    assert!(!log.contains(TOKEN), "the token is never printed: {log}");
    assert!(log.contains("not the token"), "{log}");
    assert_eq!(rows(&db), want);
    Ok(())
}

#[test]
fn a_listener_other_hosts_reach_needs_a_token() {
    let d = TempDir::new().expect("a temp dir");
    let mut c = Command::cargo_bin("liteload").expect("the binary builds");
    c.current_dir(d.path())
        .args(["ingest", "s.db", "--table", "t", "--key", "id"])
        .args(["--listen", "0.0.0.0:0", "--listen-any"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("needs a token"));
    assert!(!d.path().join("s.db").exists());
}

/// SplitMix64: a fixed seed gives the same population of clients every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// A connection to the listener, TLS or not, that can end in any way.
enum Client {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Client {
    fn connect(addr: &str, tls: Option<&Arc<rustls::ClientConfig>>) -> Result<Client, E> {
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(Duration::from_secs(20)))?;
        Ok(match tls {
            Some(cfg) => {
                let name = rustls::pki_types::ServerName::try_from("localhost")?;
                let conn = rustls::ClientConnection::new(cfg.clone(), name)?;
                Client::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
            }
            None => Client::Plain(tcp),
        })
    }

    fn socket(&self) -> &TcpStream {
        match self {
            Client::Plain(s) => s,
            Client::Tls(s) => &s.sock,
        }
    }

    fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Client::Plain(s) => s.write_all(b).and_then(|()| s.flush()),
            Client::Tls(s) => s.write_all(b).and_then(|()| s.flush()),
        }
    }

    /// Says goodbye properly, then waits for the listener to close: by then it has
    /// read every line sent.
    fn finish(mut self) -> R {
        if let Client::Tls(s) = &mut self {
            s.conn.send_close_notify();
            s.flush()?;
        }
        self.socket().shutdown(std::net::Shutdown::Write)?;
        let mut rest = [0u8; 256];
        let start = Instant::now();
        loop {
            let n = match &mut self {
                Client::Plain(s) => s.read(&mut rest),
                Client::Tls(s) => s.read(&mut rest),
            };
            if !matches!(n, Ok(k) if k > 0) || start.elapsed() > Duration::from_secs(20) {
                return Ok(());
            }
        }
    }

    /// Ends with a reset: `SO_LINGER` 0, then close.
    fn reset(self) -> R {
        socket2::SockRef::from(self.socket()).set_linger(Some(Duration::ZERO))?;
        Ok(())
    }

    /// Closes the TCP connection with no TLS `close_notify` (as a plain socket's close).
    fn abrupt(self) -> R {
        self.socket().shutdown(std::net::Shutdown::Both)?;
        Ok(())
    }
}

type E = Box<dyn std::error::Error>;

/// One hostile client: never a whole message line (only garbage, a wrong token, or a
/// line cut off), ended in one of many ways. Nothing it does may cost a good client a
/// message or stop the listener.
fn hostile(addr: &str, tls: Option<&Arc<rustls::ClientConfig>>, kind: u64, rng: &mut Rng) -> R {
    let token = format!("{TOKEN}\n");
    // A message line cut off before its end: never a whole message.
    let cut = b"{\"id\": 999999, \"v\": \"cut \xc3\xa9 off";
    let cut = &cut[..1 + rng.below(cut.len() as u64 - 1) as usize];
    let with_token = |c: &mut Client| c.send(token.as_bytes());
    match kind {
        // A reset before sending a byte.
        0 => Client::connect(addr, tls)?.reset(),
        // A reset after the token and a cut line.
        1 => {
            let mut c = Client::connect(addr, tls)?;
            with_token(&mut c)?;
            c.send(cut)?;
            std::thread::sleep(Duration::from_millis(rng.below(50)));
            c.reset()
        }
        // An abrupt close (TLS: no close_notify) inside a line.
        2 => {
            let mut c = Client::connect(addr, tls)?;
            with_token(&mut c)?;
            c.send(cut)?;
            c.abrupt()
        }
        // Garbage bytes from the first byte (TLS: not a handshake), then a reset or not.
        3 => {
            let mut s = TcpStream::connect(addr)?;
            let junk: Vec<u8> = (0..1 + rng.below(3000))
                .map(|_| rng.below(256) as u8)
                .collect();
            let _ = s.write_all(&junk);
            if rng.below(2) == 0 {
                socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO))?;
            }
            Ok(())
        }
        // Whole lines that are not messages, then a half-close and a cut line.
        4 => {
            let mut c = Client::connect(addr, tls)?;
            with_token(&mut c)?;
            c.send(b"not json\n[1,2]\n\"x\"\n\x00\xff\xfe\n")?;
            c.send(cut)?;
            c.finish()
        }
        // A wrong token: with a space before it, or after it; its message is not read.
        5 => {
            let mut c = Client::connect(addr, tls)?;
            let wrong = if rng.below(2) == 0 {
                format!(" {TOKEN}\n")
            } else {
                format!("{TOKEN} \n")
            };
            if tls.is_some() {
                c.send(wrong.as_bytes())?;
                c.send(b"{\"id\": 888888, \"v\": \"wrong token\"}\n")?;
            }
            c.finish()
        }
        // A connection that says nothing, held until the listener closes it.
        _ => {
            let c = Client::connect(addr, tls)?;
            let mut b = [0u8; 16];
            let _ = (&mut c.socket()).read(&mut b);
            Ok(())
        }
    }
}

/// One good client: `rounds` connections of `per` messages each, every one ended
/// properly; keys in its own range, each updated many times. Returns the messages.
fn good(
    addr: &str,
    tls: Option<&Arc<rustls::ClientConfig>>,
    who: i64,
    rounds: usize,
    per: usize,
) -> Result<Vec<(i64, String)>, E> {
    let mut sent = vec![];
    for r in 0..rounds {
        let mut c = Client::connect(addr, tls)?;
        let mut text = String::new();
        if tls.is_some() {
            text.push_str(TOKEN);
            text.push('\n');
        }
        for i in 0..per {
            let id = who * 1000 + (i as i64 % 37);
            let v = format!("é{who}-{r}-{i}\u{1F600}\t\"");
            text.push_str(&serde_json::json!({"id": id, "v": v}).to_string());
            text.push('\n');
            sent.push((id, v));
        }
        c.send(text.as_bytes())?;
        c.finish()?;
    }
    Ok(sent)
}

/// The class: a population of hostile clients (resets before and after sending, abrupt
/// TLS closes, garbage, wrong tokens, a token line trickled forever, a message line
/// trickled forever, idle sockets) against a running listener while good clients send
/// their messages: the table is exactly the good messages' model, the listener still
/// serves, and SIGTERM ends it with exit 0.
fn hostile_clients_cost_nobody_a_message(tls: bool) -> R {
    let d = TempDir::new()?;
    let client = tls_files(d.path())?;
    std::fs::write(d.path().join("token"), format!("{TOKEN}\n"))?;
    let mut args = vec![
        "h.db",
        "--table",
        "t",
        "--key",
        "id",
        "--listen",
        "127.0.0.1:0",
        "--max-connections",
        "64",
        "--idle-timeout",
        "2s",
        "--gate-timeout",
        "1s",
        "--commit-interval",
        "50ms",
    ];
    if tls {
        args.extend([
            "--token-file",
            "token",
            "--tls-cert",
            "cert.pem",
            "--tls-key",
            "key.pem",
        ]);
    }
    let mut child = spawn_ingest(d.path(), &args)?;
    let (addr, mut err) = listening_addr(&mut child)?;
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let cfg = tls.then_some(client);
    let db = d.path().join("h.db");

    // Trickled forever: a token line (closed at the gate's deadline) and, past the
    // gate, a message line (closed when the test ends).
    let trickle_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut trickles = vec![];
    for past_gate in [false, true] {
        let (addr, cfg, stop) = (addr.clone(), cfg.clone(), trickle_stop.clone());
        // Returns how long it took the listener to close it; `None`: never closed.
        trickles.push(std::thread::spawn(
            move || -> Result<Option<Duration>, String> {
                let mut c = Client::connect(&addr, cfg.as_ref()).map_err(|e| e.to_string())?;
                if past_gate && cfg.is_some() {
                    c.send(format!("{TOKEN}\n").as_bytes())
                        .map_err(|e| e.to_string())?;
                }
                let first = if past_gate || cfg.is_none() {
                    b"{\"id\": 777777, \"v\": \"".as_slice()
                } else {
                    TOKEN.as_bytes()
                };
                let start = Instant::now();
                for b in first.iter().cycle() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Ok(None);
                    }
                    if c.send(&[*b]).is_err() {
                        return Ok(Some(start.elapsed()));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Ok(None)
            },
        ));
    }

    let hostiles: Vec<_> = (0..3u64)
        .map(|t| {
            let (addr, cfg) = (addr.clone(), cfg.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(100 + t);
                for _ in 0..40 {
                    let kind = rng.below(7);
                    let _ = hostile(&addr, cfg.as_ref(), kind, &mut rng);
                }
            })
        })
        .collect();
    let goods: Vec<_> = (0..4i64)
        .map(|who| {
            let (addr, cfg) = (addr.clone(), cfg.clone());
            std::thread::spawn(move || {
                good(&addr, cfg.as_ref(), who, 6, 50).map_err(|e| e.to_string())
            })
        })
        .collect();
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    for g in goods {
        for (id, v) in g.join().map_err(|_| "a good client panicked")?? {
            model.insert(id, v);
        }
    }
    for h in hostiles {
        h.join().map_err(|_| "a hostile client panicked")?;
    }
    let want: Vec<Vec<Value>> = model
        .iter()
        .map(|(k, v)| vec![Value::Integer(*k), Value::Text(v.clone())])
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && rows(&db) != want {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(rows(&db), want);

    // The listener still serves.
    let after = good(&addr, cfg.as_ref(), 9, 1, 3)?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let last = after.last().ok_or("no message")?.clone();
    let landed =
        |db: &Path| rows(db).contains(&vec![Value::Integer(last.0), Value::Text(last.1.clone())]);
    while Instant::now() < deadline && !landed(&db) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(landed(&db), "the listener serves after the hostile clients");

    trickle_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let token_trickle = trickles.remove(0).join().map_err(|_| "panicked")??;
    if tls {
        assert!(
            token_trickle.is_some_and(|t| t < Duration::from_secs(10)),
            "a token line trickled forever is closed at the gate's deadline: {token_trickle:?}"
        );
    }
    assert!(
        terminate(&mut child)?,
        "SIGTERM ends the listener with exit 0"
    );
    let log = log.join().map_err(|_| "the log reader panicked")?;
    assert!(!log.contains(TOKEN), "the token is never printed");
    assert!(log.contains("connection"), "failures are reported: {log}");
    let mut final_rows = rows(&db);
    final_rows.retain(|r| {
        r[0] != Value::Integer(9000) && r[0] != Value::Integer(9001) && r[0] != Value::Integer(9002)
    });
    assert_eq!(final_rows, want, "no hostile line became a row");
    Ok(())
}

#[test]
fn hostile_clients_cost_a_tls_token_listener_nothing() -> R {
    hostile_clients_cost_nobody_a_message(true)
}

#[test]
fn hostile_clients_cost_a_plain_listener_nothing() -> R {
    hostile_clients_cost_nobody_a_message(false)
}
