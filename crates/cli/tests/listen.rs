//! `ingest --listen`: only senders with the token write; TLS; bounded connections; idle
//! senders closed. Every connection here is to 127.0.0.1.

mod common;

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
