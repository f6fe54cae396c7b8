//! Where the server is and how to log in: a libpq connection URI
//! (`postgresql://USER@HOST:PORT/DBNAME?…`, a socket directory as `host=/dir`), the
//! environment libpq reads (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`,
//! `PGPASSFILE`), the password file (`~/.pgpass`), and TLS as `sslmode` asks, through
//! rustls. A password is never part of what is shown.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::Client;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Config, NoTls};

use crate::error::{Error, Result};

/// Whether `arg` names a PostgreSQL database (a libpq URI) rather than a file.
pub fn is_postgres_url(arg: &str) -> bool {
    let lower = arg.get(..13).unwrap_or(arg).to_ascii_lowercase();
    lower.starts_with("postgresql://") || lower.starts_with("postgres://")
}

/// How the connection is encrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tls {
    /// `sslmode=disable`.
    Off,
    /// `prefer` (the default) and `require`: encrypted when the server offers it
    /// (`require`: or refused), its certificate not checked, as libpq does.
    Unchecked,
    /// `verify-ca` and `verify-full`: the certificate is checked against `sslrootcert`
    /// (or the system's roots) and the host name.
    Verified,
}

/// A PostgreSQL server and database, ready to be connected to as often as needed.
#[derive(Clone)]
pub(crate) struct Server {
    config: Config,
    tls: Tls,
    root_cert: Option<PathBuf>,
    /// `host:port/dbname`, for messages.
    pub(crate) shown: String,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({})", self.shown)
    }
}

impl Server {
    /// Reads a libpq URI, filling in what it leaves out from the environment and the
    /// password file.
    pub(crate) fn parse(url: &str) -> Result<Server> {
        let (url, tls, root_cert) = take_tls_options(url)?;
        let mut config: Config = url.parse().map_err(|e| {
            Error::usage(format!(
                "not a PostgreSQL connection URI ({e}): {}",
                redact(&url)
            ))
        })?;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if config.get_hosts().is_empty() {
            match env("PGHOST") {
                Some(h) => {
                    config.host(&h);
                }
                None => {
                    config.host_path("/var/run/postgresql");
                }
            }
        }
        if config.get_ports().is_empty() {
            let port = env("PGPORT").and_then(|p| p.parse().ok()).unwrap_or(5432);
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").into());
            config.dbname(&db);
        }
        let (host, port) = (shown_host(&config), config.get_ports()[0]);
        if config.get_password().is_none() {
            if let Some(pw) = env("PGPASSWORD").or_else(|| {
                password_file().and_then(|f| {
                    let user = config.get_user().unwrap_or("");
                    let db = config.get_dbname().unwrap_or("");
                    let h = match &config.get_hosts()[0] {
                        Host::Tcp(h) => h.clone(),
                        // libpq matches a socket connection as `localhost`.
                        Host::Unix(_) => "localhost".into(),
                    };
                    pgpass_lookup(&std::fs::read_to_string(f).ok()?, &h, port, db, user)
                })
            }) {
                config.password(pw);
            }
        }
        config.ssl_mode(match tls {
            Tls::Off => SslMode::Disable,
            Tls::Unchecked if url.contains("sslmode=require") => SslMode::Require,
            Tls::Unchecked => SslMode::Prefer,
            Tls::Verified => SslMode::Require,
        });
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(30));
        }
        config.application_name("liteload");
        let shown = format!("{host}:{port}/{}", config.get_dbname().unwrap_or(""));
        Ok(Server {
            config,
            tls,
            root_cert,
            shown,
        })
    }

    /// A new session, through the blocking client.
    pub(crate) fn connect(&self) -> Result<Client> {
        let config = postgres::Config::from(self.config.clone());
        let connected = match self.tls {
            Tls::Off => config.connect(NoTls),
            _ => config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(
                self.tls_config()?,
            )),
        };
        connected.map_err(|e| self.error("connecting", &e))
    }

    /// A new session on the tokio runtime this is called in, which drives its
    /// connection (a task of its own there).
    pub(crate) async fn connect_here(&self) -> Result<tokio_postgres::Client> {
        let failed = |e: tokio_postgres::Error| self.error("connecting", &e);
        Ok(match self.tls {
            Tls::Off => {
                let (client, connection) = self.config.connect(NoTls).await.map_err(failed)?;
                tokio::spawn(connection);
                client
            }
            _ => {
                let tls = tokio_postgres_rustls::MakeRustlsConnect::new(self.tls_config()?);
                let (client, connection) = self.config.connect(tls).await.map_err(failed)?;
                tokio::spawn(connection);
                client
            }
        })
    }

    /// A server error while doing `what`, with the server's own words.
    pub(crate) fn error(&self, what: &str, e: &postgres::Error) -> Error {
        Error::database(self.shown.clone(), format!("{what}: {}", describe(e)))
    }

    fn tls_config(&self) -> Result<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::internal(format!("TLS settings: {e}")))?;
        let config = match self.tls {
            Tls::Verified => {
                let mut roots = rustls::RootCertStore::empty();
                match &self.root_cert {
                    Some(path) => {
                        use rustls::pki_types::pem::PemObject;
                        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                            .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
                            .map_err(|e| {
                                Error::usage(format!(
                                    "sslrootcert {}: not a PEM certificate file ({e})",
                                    path.display()
                                ))
                            })?;
                        for c in certs {
                            let _ = roots.add(c);
                        }
                    }
                    None => {
                        for c in rustls_native_certs::load_native_certs().certs {
                            let _ = roots.add(c);
                        }
                    }
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            _ => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
        };
        Ok(config)
    }
}

/// The server's error in its own words: the message of a database error with its
/// detail, else the client's description and its cause.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = db.message().to_string();
        if let Some(d) = db.detail() {
            s.push_str(" (");
            s.push_str(d);
            s.push(')');
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

fn shown_host(config: &Config) -> String {
    match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => String::new(),
    }
}

/// The URI with its password (between `:` and `@` of the authority, or a `password=`
/// parameter) replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest = &out[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            if let Some(colon) = rest[..at].find(':') {
                let (a, b) = (scheme_end + 3 + colon + 1, scheme_end + 3 + at);
                out.replace_range(a..b, "***");
            }
        }
    }
    if let Some(p) = out.find("password=") {
        let end = out[p..].find('&').map_or(out.len(), |e| p + e);
        out.replace_range(p + 9..end, "***");
    }
    out
}

/// Takes `sslmode` and `sslrootcert` out of the URI's parameters (the client library
/// knows neither `verify-ca`/`verify-full` nor `sslrootcert`): the URI left, the TLS
/// asked for, and the root certificate file.
fn take_tls_options(url: &str) -> Result<(String, Tls, Option<PathBuf>)> {
    let Some(q) = url.find('?') else {
        return Ok((url.to_string(), Tls::Unchecked, None));
    };
    let (mut tls, mut root) = (Tls::Unchecked, None);
    let mut kept = vec![];
    let mut require = false;
    for pair in url[q + 1..].split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "sslmode" => {
                tls = match v {
                    "disable" => Tls::Off,
                    "allow" | "prefer" => Tls::Unchecked,
                    "require" => {
                        require = true;
                        Tls::Unchecked
                    }
                    "verify-ca" | "verify-full" => Tls::Verified,
                    other => {
                        return Err(Error::usage(format!(
                            "sslmode {other:?}: expected disable, allow, prefer, require, verify-ca or verify-full"
                        )))
                    }
                }
            }
            "sslrootcert" => root = Some(PathBuf::from(percent_decode(v))),
            _ => kept.push(pair),
        }
    }
    if require {
        kept.push("sslmode=require");
    }
    let mut out = url[..q].to_string();
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    Ok((out, tls, root))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The password file: `PGPASSFILE`, else `~/.pgpass`.
fn password_file() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os("PGPASSFILE") {
        return Some(PathBuf::from(f));
    }
    let home = std::env::var_os("HOME")?;
    let f = Path::new(&home).join(".pgpass");
    f.exists().then_some(f)
}

/// The password of the first line of a `.pgpass` file that matches: fields
/// `host:port:database:user:password`, `*` matching anything, `\:` and `\\` escapes.
pub(crate) fn pgpass_lookup(
    text: &str,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        fields.last_mut().expect("one field").push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut().expect("one field").push(c),
            }
        }
        if fields.len() != 5 {
            continue;
        }
        let want = [host, port.as_str(), db, user];
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

/// A server certificate taken as it is (`sslmode` prefer or require, as libpq does): the
/// connection is encrypted, the server not authenticated. The handshake's signatures
/// are still checked.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let file = "# comment\nother:5432:*:*:no\nlocalhost:*:db:u\\:x:p\\:w\\\\d\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_lookup(file, "localhost", 5433, "db", "u:x").as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            pgpass_lookup(file, "h", 1, "d", "u").as_deref(),
            Some("any")
        );
        assert_eq!(pgpass_lookup("a:1:b:c\n", "a", 1, "b", "c"), None);
    }

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(
            redact("postgresql://ann:s3cret@db:5432/x?sslmode=require"),
            "postgresql://ann:***@db:5432/x?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://db/x?password=s3cret&user=a"),
            "postgresql://db/x?password=***&user=a"
        );
        assert_eq!(redact("postgresql://ann@db/x"), "postgresql://ann@db/x");
    }

    #[test]
    fn tls_options_are_taken_out_of_the_uri() {
        let (url, tls, root) = take_tls_options(
            "postgresql://h/d?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(url, "postgresql://h/d?connect_timeout=3");
        assert_eq!(tls, Tls::Verified);
        assert_eq!(root, Some(PathBuf::from("/tmp/ca.pem")));
        assert!(take_tls_options("postgresql://h/d?sslmode=bogus").is_err());
        assert!(is_postgres_url("PostgreSQL://h/d"));
        assert!(!is_postgres_url("postgres.csv"));
    }
}
