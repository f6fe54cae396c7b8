//! The `rqlite://` database argument, shared by the commands that write rows.

use std::path::{Path, PathBuf};

use clap::Args;
use liteload::rqlite::{Boot, RqliteOptions, RqliteTarget};

use super::UsageError;

/// How rows reach an rqlite cluster.
#[derive(Args, Debug, Clone, Default)]
pub struct RqliteArgs {
    /// DB is rqlite://…: build the database here and send it whole to the node (POST
    /// /boot), which must be a single-node cluster with an empty database. Chosen by
    /// itself when the node is one.
    #[arg(long, help_heading = "rqlite", conflicts_with = "rqlite_no_boot")]
    pub rqlite_boot: bool,
    /// DB is rqlite://…: insert rows through /db/execute even into an empty single-node
    /// cluster.
    #[arg(long, help_heading = "rqlite")]
    pub rqlite_no_boot: bool,
    /// DB is rqlite://…: send a request once its body reaches this many bytes (default
    /// 4 MiB; bench/README.md shows how the size was chosen).
    #[arg(long, value_name = "BYTES", help_heading = "rqlite")]
    pub rqlite_request_bytes: Option<usize>,
    /// DB is rqlite://…: requests sent at once (default 1). With more, each request
    /// still commits only after the one before it (input order, rowids too), and none
    /// after a refused row's request commits.
    #[arg(long, value_name = "N", help_heading = "rqlite")]
    pub rqlite_in_flight: Option<usize>,
    #[command(flatten)]
    pub ca: RqliteCa,
}

/// The certificates an `rqlite+https://` client trusts.
#[derive(Args, Debug, Clone, Default)]
pub struct RqliteCa {
    /// DB is rqlite+https://…: trust the CA certificates in this PEM file (a cluster
    /// whose certificates a private CA signed) instead of the built-in web roots.
    #[arg(long, value_name = "FILE", help_heading = "rqlite")]
    pub rqlite_ca: Option<PathBuf>,
}

impl RqliteCa {
    /// Refuses the flag when DB is a file.
    pub fn check_file(&self) -> Result<(), UsageError> {
        if self.rqlite_ca.is_some() {
            return Err(UsageError(
                "--rqlite-ca applies to an rqlite+https://HOST:PORT database".into(),
            ));
        }
        Ok(())
    }
}

impl RqliteArgs {
    pub fn options(&self) -> RqliteOptions {
        let mut o = RqliteOptions::default();
        o.boot = if self.rqlite_boot {
            Boot::Always
        } else if self.rqlite_no_boot {
            Boot::Never
        } else {
            Boot::Auto
        };
        if let Some(b) = self.rqlite_request_bytes {
            o.request_bytes = b;
        }
        if let Some(n) = self.rqlite_in_flight {
            o.in_flight = n.max(1);
        }
        o.ca = self.ca.rqlite_ca.clone();
        o
    }

    /// Refuses the flags when DB is a file.
    pub fn check_file(&self) -> Result<(), UsageError> {
        if self.rqlite_boot
            || self.rqlite_no_boot
            || self.rqlite_request_bytes.is_some()
            || self.rqlite_in_flight.is_some()
        {
            return Err(UsageError(
                "the --rqlite-* flags apply to an rqlite://HOST:PORT database".into(),
            ));
        }
        self.ca.check_file()
    }
}

/// The cluster `db` names, if it is an `rqlite://` URL, with credentials from the URL
/// or else from the environment ([`RqliteTarget::from_db_arg`]).
pub fn target(db: &Path) -> Result<Option<RqliteTarget>, liteload::Error> {
    RqliteTarget::from_db_arg(db)
}

/// `db` as messages show it: an rqlite URL without its password.
pub fn shown(db: &Path) -> String {
    liteload::rqlite::redact(&db.display().to_string())
}
