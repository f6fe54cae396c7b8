//! Where a job writes: a database file, or an rqlite cluster (`rqlite://HOST:PORT`, as
//! the command takes it), and running the job there.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use pyo3::prelude::*;

use liteload::rqlite::{RqliteOptions, RqliteTarget};
use liteload::{FileSettings, ImportOptions, Input, Progress, Summary};

/// A job's target.
pub enum Dest {
    File(PathBuf),
    Cluster(RqliteTarget),
}

impl Dest {
    /// The target `db` names. `durability` says whether the caller set it, `file` the
    /// file settings it gave: they apply to a file, and with a cluster they are a usage
    /// error.
    pub fn of(
        function: &str,
        db: PathBuf,
        durability: bool,
        file: Option<&FileSettings>,
    ) -> PyResult<Dest> {
        let cluster =
            RqliteTarget::from_db_arg(&db).map_err(|e| crate::errors::library_error(&e))?;
        let page_size = file.is_some_and(|f| f.page_size.is_some());
        let set = [("durability", durability), ("page_size", page_size)];
        match cluster {
            None => Ok(Dest::File(db)),
            Some(t) => match set.iter().find(|(_, set)| *set) {
                Some((name, _)) => Err(crate::errors::usage(format!(
                    "{function}(): {name}= applies to a database file; a cluster keeps its own settings"
                ))),
                None => Ok(Dest::Cluster(t)),
            },
        }
    }

    /// Runs the job with the GIL released ([`crate::run::run`]): `file` for a file
    /// (refused first while another SQLite in this process has it open, see
    /// [`crate::same_file`]), `cluster` for a cluster (with the library's default
    /// request size, requests in flight and boot rule).
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        progress: &Arc<Progress>,
        stop: Option<&Arc<AtomicBool>>,
        callback: Option<&Bound<'_, PyAny>>,
        file: impl FnOnce(&Path) -> anyhow::Result<T> + Send,
        cluster: impl FnOnce(&RqliteTarget, &RqliteOptions) -> anyhow::Result<T> + Send,
    ) -> PyResult<T> {
        match self {
            Dest::File(path) => crate::same_file::job(path, || {
                crate::run::run(py, progress, stop, callback, move || file(path))
            }),
            Dest::Cluster(target) => {
                let ropts = RqliteOptions::default();
                crate::run::run(py, progress, stop, callback, move || {
                    cluster(target, &ropts)
                })
            }
        }
    }

    /// `inputs` loaded with `opts`, into the file or the cluster.
    pub fn import(
        &self,
        py: Python<'_>,
        progress: &Arc<Progress>,
        callback: Option<&Bound<'_, PyAny>>,
        inputs: &[Input],
        opts: &ImportOptions,
    ) -> PyResult<Summary> {
        let counters = progress.clone();
        self.run(
            py,
            progress,
            None,
            callback,
            |path| Ok(liteload::import(path, inputs, opts, &counters)?),
            |cluster, ropts| {
                Ok(liteload::rqlite::import(
                    cluster, inputs, opts, ropts, &counters,
                )?)
            },
        )
    }
}
