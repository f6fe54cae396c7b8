//! A MySQL or MariaDB server named by a URI, filled in as the `mysql` client fills in
//! what a command line leaves out: the password from the URI, else `MYSQL_PWD`, else
//! the option files' `[client]` groups; the user likewise, else the login name.
//!
//! `mysql://USER:PASSWORD@HOST:PORT/DATABASE?ssl-mode=…&ssl-ca=…&socket=…`
//! (`mariadb://` the same). With no host, or `localhost`, the server's Unix socket is
//! used as the client uses it (`socket=`, the option files', else
//! `/run/mysqld/mysqld.sock`), TCP to 127.0.0.1 where there is none. TLS modes are the
//! client's: `DISABLED`; `PREFERRED` (the default: encrypted where the server offers
//! it, its certificate not checked); `REQUIRED` (encrypted or refused, not checked);
//! `VERIFY_CA` (checked against `ssl-ca`, else the bundled roots); `VERIFY_IDENTITY`
//! (and the host name). A socket is never encrypted.

use std::path::{Path, PathBuf};

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, SslOpts};

use crate::error::{Error, Result};

/// Whether `arg` is a `mysql://` or `mariadb://` URI (ASCII case ignored).
pub fn is_mysql_url(arg: &str) -> bool {
    let lower = arg.get(..10).unwrap_or(arg).to_ascii_lowercase();
    lower.starts_with("mysql://") || lower.starts_with("mariadb://")
}

/// The client's TLS modes (`ssl-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tls {
    Disabled,
    Preferred,
    Required,
    VerifyCa,
    VerifyIdentity,
}

/// Where and how to connect, read once from the URI and the client's defaults.
#[derive(Clone)]
pub(crate) struct Server {
    host: Option<String>,
    port: u16,
    socket: Option<String>,
    user: String,
    password: Option<String>,
    /// The database the URI names (`None`: none).
    pub(crate) database: Option<String>,
    tls: Tls,
    ca: Option<PathBuf>,
    /// The URI without its password, for messages.
    pub(crate) shown: String,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({})", self.shown)
    }
}

/// The `[client]`-like groups of the option files the `mysql` client reads, later
/// files overriding earlier ones: `user`, `password` and `socket`.
#[derive(Default)]
struct OptionFiles {
    user: Option<String>,
    password: Option<String>,
    socket: Option<String>,
}

impl OptionFiles {
    fn read() -> OptionFiles {
        let mut o = OptionFiles::default();
        let mut files = vec![
            PathBuf::from("/etc/my.cnf"),
            PathBuf::from("/etc/mysql/my.cnf"),
        ];
        if let Some(f) = std::env::var_os("MYSQL_HOME") {
            files.push(Path::new(&f).join("my.cnf"));
        }
        if let Some(home) = std::env::var_os("HOME") {
            files.push(Path::new(&home).join(".my.cnf"));
        }
        for f in files {
            if let Ok(text) = std::fs::read_to_string(&f) {
                o.take(&text);
            }
        }
        o
    }

    /// Takes the settings of `text`'s client groups (`[client]`, `[mysql]`,
    /// `[client-server]`, `[client-mariadb]`).
    fn take(&mut self, text: &str) {
        let mut on = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
                continue;
            }
            if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                on = matches!(
                    group.trim(),
                    "client" | "mysql" | "client-server" | "client-mariadb"
                );
                continue;
            }
            if !on {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value)
                .to_string();
            match key.trim().replace('-', "_").as_str() {
                "user" => self.user = Some(value),
                "password" => self.password = Some(value),
                "socket" => self.socket = Some(value),
                _ => {}
            }
        }
    }
}

/// Where the Debian and MariaDB packages put the server's socket.
const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

impl Server {
    /// Reads a `mysql://` or `mariadb://` URI (see the module's docs).
    pub(crate) fn parse(uri: &str) -> Result<Server> {
        let bad = |why: String| Error::usage(format!("not a MySQL URI ({why})"));
        // `mysql://ann@/db` (a user, no host: the local socket) is refused by the URL
        // parser, whose host after a user may not be empty: it is `localhost` here.
        let authority_end = uri
            .find("://")
            .map(|i| i + 3)
            .and_then(|a| uri[a..].find(['/', '?']).map(|e| a + e));
        let filled;
        let uri = match authority_end {
            Some(e) if uri[..e].ends_with('@') => {
                filled = format!("{}localhost{}", &uri[..e], &uri[e..]);
                filled.as_str()
            }
            _ => uri,
        };
        let url = url::Url::parse(uri).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "mysql" | "mariadb") {
            return Err(bad(format!("the scheme is {:?}", url.scheme())));
        }
        let decode = |s: &str| -> Result<String> {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|e| bad(e.to_string()))
        };
        let files = OptionFiles::read();
        let mut tls = Tls::Preferred;
        let mut ca = None;
        let mut socket = None;
        for (k, v) in url.query_pairs() {
            match k.replace('_', "-").to_ascii_lowercase().as_str() {
                "ssl-mode" | "sslmode" => {
                    tls = match v.to_ascii_uppercase().replace('-', "_").as_str() {
                        "DISABLED" => Tls::Disabled,
                        "PREFERRED" => Tls::Preferred,
                        "REQUIRED" => Tls::Required,
                        "VERIFY_CA" => Tls::VerifyCa,
                        "VERIFY_IDENTITY" => Tls::VerifyIdentity,
                        other => {
                            return Err(bad(format!(
                                "ssl-mode {other:?}: DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
                            )))
                        }
                    }
                }
                "ssl-ca" => ca = Some(PathBuf::from(v.as_ref())),
                "socket" => socket = Some(v.into_owned()),
                other => return Err(bad(format!("an unknown option {other:?}"))),
            }
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string());
        let local = host.as_deref().is_none_or(|h| h == "localhost");
        let socket = match (local, socket) {
            (_, Some(s)) => Some(s),
            (true, None) => files.socket.clone().or_else(|| {
                Path::new(DEFAULT_SOCKET)
                    .exists()
                    .then(|| DEFAULT_SOCKET.into())
            }),
            (false, None) => None,
        };
        let user = match url.username() {
            "" => files
                .user
                .clone()
                .or_else(|| std::env::var("USER").ok())
                .unwrap_or_else(|| "root".into()),
            u => decode(u)?,
        };
        let password = match url.password() {
            Some(p) => Some(decode(p)?),
            None => std::env::var("MYSQL_PWD").ok().or(files.password),
        };
        let database = match url.path().trim_start_matches('/') {
            "" => None,
            d => Some(decode(d)?),
        };
        let mut shown = url.clone();
        let _ = shown.set_password(None);
        Ok(Server {
            host,
            port: url.port().unwrap_or(3306),
            socket,
            user,
            password,
            database,
            tls,
            ca,
            shown: shown.to_string(),
        })
    }

    /// A message about `what` failing with `e`, naming the server.
    pub(crate) fn error(&self, what: &str, e: &mysql::Error) -> Error {
        Error::database(self.shown.clone(), format!("{what}: {}", describe(e)))
    }

    fn builder(&self, tls: Option<SslOpts>) -> OptsBuilder {
        let b = OptsBuilder::new()
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .db_name(self.database.clone())
            .prefer_socket(false)
            .tcp_connect_timeout(Some(std::time::Duration::from_secs(30)))
            .stmt_cache_size(Some(32));
        match &self.socket {
            Some(s) => b.socket(Some(s.clone())),
            None => b
                .ip_or_hostname(Some(
                    self.host.clone().unwrap_or_else(|| "127.0.0.1".into()),
                ))
                .tcp_port(self.port)
                .ssl_opts(tls),
        }
    }

    fn ssl(&self) -> Option<SslOpts> {
        let o = SslOpts::default();
        let o = match &self.ca {
            Some(p) => o.with_root_cert_path(Some(p.clone())),
            None => o,
        };
        match self.tls {
            Tls::Disabled => None,
            Tls::Preferred | Tls::Required => Some(o.with_danger_accept_invalid_certs(true)),
            Tls::VerifyCa => Some(o.with_danger_skip_domain_validation(true)),
            Tls::VerifyIdentity => Some(o),
        }
    }

    /// A connection set up for reading: UTF-8 (utf8mb4) text, times in UTC, the default
    /// `sql_mode` semantics of reading (no `PAD_CHAR_TO_FULL_LENGTH`, no `ANSI_QUOTES`:
    /// CHAR values lose their trailing spaces as MySQL returns them by default).
    pub(crate) fn connect(&self) -> Result<Conn> {
        let setup = |c: &mut Conn| -> std::result::Result<(), mysql::Error> {
            c.query_drop("SET NAMES utf8mb4")?;
            c.query_drop("SET time_zone = '+00:00'")?;
            c.query_drop("SET SESSION sql_mode = ''")
        };
        let mut conn = match Conn::new(self.builder(self.ssl())) {
            Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported))
                if self.tls == Tls::Preferred =>
            {
                Conn::new(self.builder(None))
            }
            Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported)) => {
                return Err(Error::database(
                    self.shown.clone(),
                    "connecting: the server does not offer TLS, which ssl-mode asks for",
                ))
            }
            other => other,
        }
        .map_err(|e| self.error("connecting", &e))?;
        setup(&mut conn).map_err(|e| self.error("setting up the session", &e))?;
        Ok(conn)
    }
}

/// The server's message, or the client's.
pub(crate) fn describe(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => format!("{} ({})", m.message, m.code),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_read_as_the_client_reads_them() {
        let s = Server::parse(
            "mysql://ann:p%40ss@db.example.com:3307/shop?ssl-mode=VERIFY_CA&ssl-ca=/x.pem",
        )
        .unwrap();
        assert_eq!(s.host.as_deref(), Some("db.example.com"));
        assert_eq!((s.port, s.user.as_str()), (3307, "ann"));
        assert_eq!(s.password.as_deref(), Some("p@ss"));
        assert_eq!(s.database.as_deref(), Some("shop"));
        assert_eq!(
            (s.tls, s.ca.as_deref()),
            (Tls::VerifyCa, Some(Path::new("/x.pem")))
        );
        assert!(!s.shown.contains("p%40ss") && s.shown.contains("db.example.com"));
        let s = Server::parse("mariadb://bob@/shop?socket=/tmp/m.sock").unwrap();
        assert_eq!(s.socket.as_deref(), Some("/tmp/m.sock"));
        assert!(is_mysql_url("MySQL://x") && is_mysql_url("mariadb://") && !is_mysql_url("my.csv"));
        for bad in [
            "mysql://h/db?ssl-mode=SOMETIMES",
            "mysql://h/db?colour=red",
            "postgresql://h/db",
        ] {
            assert!(Server::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn option_files_give_the_client_groups() {
        let mut o = OptionFiles::default();
        o.take("[mysqld]\npassword=server\n[client]\nuser = ann\npassword=\"s e\"\n# c\n[mysqldump]\nuser=x\n");
        assert_eq!(o.user.as_deref(), Some("ann"));
        assert_eq!(o.password.as_deref(), Some("s e"));
    }
}
