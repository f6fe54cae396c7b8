//! The progress bar: bytes read of the total, rows/s, ETA. Drawn only on a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use liteload::{Progress, Stage};

/// A thread that redraws the bar from the import's counters until dropped.
pub struct Bar {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Bar {
    /// Starts drawing, unless `quiet` or stderr is not a terminal.
    pub fn start(progress: Arc<Progress>, quiet: bool) -> Bar {
        let stop = Arc::new(AtomicBool::new(false));
        if quiet || !std::io::stderr().is_terminal() {
            return Bar { stop, handle: None };
        }
        let s = stop.clone();
        let handle = std::thread::spawn(move || draw(progress, s));
        Bar {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn draw(p: Arc<Progress>, stop: Arc<AtomicBool>) {
    let total = p.bytes_total.load(Ordering::Relaxed);
    let rows_total = p.rows_total.load(Ordering::Relaxed);
    let bar = if rows_total > 0 {
        let b =
            ProgressBar::with_draw_target(Some(rows_total), ProgressDrawTarget::stderr_with_hz(10));
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{bar:30}] {human_pos}/{human_len} rows {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    } else if total > 0 {
        let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(10));
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    } else {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        b.set_style(
            ProgressStyle::with_template("{spinner} {bytes} read {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b
    };
    let start = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let rows = p.rows.load(Ordering::Relaxed);
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_position(if rows_total > 0 {
            rows
        } else {
            p.bytes_read.load(Ordering::Relaxed)
        });
        let stage = match p.stage() {
            Stage::Indexing => " — building indexes".into(),
            Stage::Committing => " — committing".into(),
            _ => String::new(),
        };
        let part = p.part();
        let part = if part.is_empty() {
            part
        } else {
            format!(" — {part}")
        };
        bar.set_message(format!(
            "{} rows, {:.0} rows/s{part}{stage}",
            rows,
            rows as f64 / secs
        ));
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
}

/// Makes Ctrl-C (SIGINT) and SIGTERM stop the load through `progress`: it stops at its
/// next batch and leaves the database as it was (exit 130). A second signal exits at
/// once, for a load blocked on its input (a temp file left by that is cleared by the
/// next load of the same database).
pub fn cancel_on_signals(progress: Arc<Progress>) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if progress.is_cancelled() {
                std::process::exit(130);
            }
            progress.cancel();
        }
    });
    Ok(())
}
