//! [`RqliteTarget`]: where a cluster is, and who asks. The password is never shown.

use std::fmt;

use crate::error::{Error, Result};

/// An rqlite cluster as a load's target: `rqlite://HOST:PORT` (plain HTTP) or
/// `rqlite+https://HOST:PORT`, with `USER:PASSWORD@` for basic auth and more nodes after
/// commas (`rqlite://a:4001,b:4001`). Every node of the cluster is learnt from the first
/// one that answers, so one address is enough; more help when that one may be down.
///
/// Invariant: at least one node, each `host:port` with a port; `Display` and `Debug`
/// never show the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RqliteTarget {
    pub(crate) https: bool,
    pub(crate) nodes: Vec<String>,
    pub(crate) user: Option<String>,
    pub(crate) password: Option<String>,
}

/// The environment variable that names the user when the target names none.
pub const USER_VAR: &str = "LITELOAD_RQLITE_USER";
/// The environment variable that holds the password when the target holds none (with
/// the target's user, or with [`USER_VAR`]'s).
pub const PASSWORD_VAR: &str = "LITELOAD_RQLITE_PASSWORD";

impl RqliteTarget {
    /// The cluster that `db` names, if it is an rqlite URL rather than a file path, with
    /// the credentials of [`USER_VAR`] and [`PASSWORD_VAR`] where the URL has none (so
    /// that a password need not be on a command line). A URL that does not parse is a
    /// usage error; anything else is a file (`None`).
    pub fn from_db_arg(db: &std::path::Path) -> Result<Option<RqliteTarget>> {
        let Some(s) = db.to_str().filter(|s| RqliteTarget::is_url(s)) else {
            return Ok(None);
        };
        let mut t = RqliteTarget::parse(s)?;
        let env_user = std::env::var(USER_VAR).ok().filter(|u| !u.is_empty());
        let env_pass = std::env::var(PASSWORD_VAR).ok();
        match (t.user().map(String::from), t.has_password()) {
            (Some(u), false) => {
                if let Some(p) = env_pass {
                    t = t.with_auth(u, p);
                }
            }
            (None, _) => {
                if let Some(u) = env_user {
                    t = t.with_auth(u, env_pass.unwrap_or_default());
                }
            }
            (Some(_), true) => {}
        }
        Ok(Some(t))
    }

    /// Whether `s` names an rqlite cluster (by its scheme) rather than a file.
    pub fn is_url(s: &str) -> bool {
        let lower = s.to_ascii_lowercase();
        lower.starts_with("rqlite://") || lower.starts_with("rqlite+https://")
    }

    /// Parses `rqlite://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT…]` (or `rqlite+https://…`).
    /// `%XX` escapes in the user and password are decoded.
    pub fn parse(s: &str) -> Result<RqliteTarget> {
        let bad = |why: &str| Error::usage(format!("{}: {why}", redact(s)));
        let lower = s.to_ascii_lowercase();
        let (https, rest) = if lower.starts_with("rqlite://") {
            (false, &s["rqlite://".len()..])
        } else if lower.starts_with("rqlite+https://") {
            (true, &s["rqlite+https://".len()..])
        } else {
            return Err(bad(
                "expected rqlite://HOST:PORT or rqlite+https://HOST:PORT",
            ));
        };
        let rest = rest.trim_end_matches('/');
        if rest.contains(['/', '?', '#']) {
            return Err(bad(
                "an rqlite target is HOST:PORT; it has no path or query",
            ));
        }
        let (userinfo, hosts) = match rest.rfind('@') {
            Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
            None => (None, rest),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => {
                let (name, pass) = match u.find(':') {
                    Some(i) => (&u[..i], Some(&u[i + 1..])),
                    None => (u, None),
                };
                let name = percent_decode(name).ok_or_else(|| bad("a bad %-escape in the user"))?;
                if name.is_empty() {
                    return Err(bad("the user before '@' is empty"));
                }
                let pass = pass
                    .map(|p| percent_decode(p).ok_or_else(|| bad("a bad %-escape in the password")))
                    .transpose()?;
                (Some(name), pass)
            }
        };
        let mut nodes = vec![];
        for h in hosts.split(',') {
            let h = h.trim();
            let port_ok = h
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !port_ok {
                return Err(bad(&format!("{h:?} is not HOST:PORT")));
            }
            nodes.push(h.to_string());
        }
        Ok(RqliteTarget {
            https,
            nodes,
            user,
            password,
        })
    }

    /// This target with basic-auth credentials (replacing any from the URL).
    pub fn with_auth(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self.password = Some(password.into());
        self
    }

    /// The user it authenticates as, if any.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Whether a password is set.
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// The nodes given (`host:port`), first first.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }
}

impl fmt::Display for RqliteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}",
            if self.https {
                "rqlite+https://"
            } else {
                "rqlite://"
            }
        )?;
        if let Some(u) = &self.user {
            write!(f, "{u}")?;
            if self.password.is_some() {
                write!(f, ":***")?;
            }
            write!(f, "@")?;
        }
        write!(f, "{}", self.nodes.join(","))
    }
}

impl fmt::Debug for RqliteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RqliteTarget({self})")
    }
}

/// `s` with any password after `user:` and before `@` replaced by `***`, for messages
/// about a target that did not parse.
pub fn redact(s: &str) -> String {
    let Some(scheme_end) = s.find("://").map(|i| i + 3) else {
        return s.to_string();
    };
    match s[scheme_end..].rfind('@') {
        Some(at) => {
            let info = &s[scheme_end..scheme_end + at];
            let user = info.split(':').next().unwrap_or("");
            let masked = if info.contains(':') {
                format!("{user}:***")
            } else {
                user.to_string()
            };
            format!("{}{masked}{}", &s[..scheme_end], &s[scheme_end + at..])
        }
        None => s.to_string(),
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nodes_and_credentials_and_never_shows_the_password() {
        let t = RqliteTarget::parse("rqlite://ada:p%40ss:w@127.0.0.1:4001,localhost:4011").unwrap();
        assert!(!t.https);
        assert_eq!(t.nodes, ["127.0.0.1:4001", "localhost:4011"]);
        assert_eq!(t.user(), Some("ada"));
        assert_eq!(t.password.as_deref(), Some("p@ss:w"));
        let shown = format!("{t} {t:?}");
        assert!(
            !shown.contains("p@ss") && !shown.contains("p%40ss"),
            "{shown}"
        );
        assert_eq!(
            t.to_string(),
            "rqlite://ada:***@127.0.0.1:4001,localhost:4011"
        );
        let s = RqliteTarget::parse("RQLITE+HTTPS://db.example:443/").unwrap();
        assert!(s.https);
        assert_eq!(s.user(), None);
    }

    #[test]
    fn refuses_what_is_not_host_and_port_without_echoing_the_password() {
        for bad in [
            "rqlite://",
            "rqlite://host",
            "rqlite://host:99999",
            "rqlite://u:secret@host",
            "rqlite://host:4001/db",
            "sqlite://host:4001",
            "rqlite://:secret@host:1",
        ] {
            let e = RqliteTarget::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("secret"), "{bad}: {e}");
        }
        assert!(RqliteTarget::is_url("rqlite://h:1"));
        assert!(!RqliteTarget::is_url("data.db"));
    }
}
