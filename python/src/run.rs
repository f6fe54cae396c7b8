//! Running a job off the interpreter: the job runs on a thread of its own while the
//! calling thread, without the GIL, wakes every tenth of a second to report progress and
//! to let Python see Ctrl-C.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use liteload::Progress;

/// How often progress is reported and signals are looked at.
const TICK: Duration = Duration::from_millis(100);

/// Runs `job` with the GIL released. Every tick (and once at the end) `callback`, if
/// given, is called as `callback(rows, rows_total, bytes_read, bytes_total)` (a total is
/// `None` when not known). Ctrl-C, or an exception from the callback, cancels the job
/// through `progress` (which leaves the target as it was, see [`Progress::cancel`]) and
/// `stop`, when given, and is raised once the job has stopped.
pub fn run<T: Send>(
    py: Python<'_>,
    progress: &Arc<Progress>,
    stop: Option<&Arc<AtomicBool>>,
    callback: Option<&Bound<'_, PyAny>>,
    job: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        let worker = scope.spawn(move || {
            let result = job();
            // The receiver outlives the job; a send error cannot happen.
            let _ = done_tx.send(());
            result
        });
        let mut raised: Option<PyErr> = None;
        loop {
            let waited = py.detach(|| done_rx.recv_timeout(TICK));
            if !matches!(waited, Err(crossbeam_channel::RecvTimeoutError::Timeout)) {
                break;
            }
            if raised.is_some() {
                continue;
            }
            let seen = py.check_signals().and_then(|()| report(progress, callback));
            if let Err(e) = seen {
                progress.cancel();
                if let Some(stop) = stop {
                    stop.store(true, Ordering::Relaxed);
                }
                raised = Some(e);
            }
        }
        let result = py
            .detach(|| worker.join())
            .map_err(|_| PyRuntimeError::new_err("liteload's worker thread panicked"))?;
        if let Some(e) = raised {
            return Err(e);
        }
        let value = result.map_err(crate::errors::to_py)?;
        report(progress, callback)?;
        Ok(value)
    })
}

fn report(progress: &Progress, callback: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(cb) = callback else { return Ok(()) };
    let known = |n: u64| (n > 0).then_some(n);
    cb.call1((
        progress.rows.load(Ordering::Relaxed),
        known(progress.rows_total.load(Ordering::Relaxed)),
        progress.bytes_read.load(Ordering::Relaxed),
        known(progress.bytes_total.load(Ordering::Relaxed)),
    ))?;
    Ok(())
}
