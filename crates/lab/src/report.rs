//! One experiment's result, the machine it ran on, and the loop that runs steps
//! interleaved and keeps only verified runs.

use serde::Serialize;

use crate::durability::Settings;
use crate::stats::Step;

/// What an experiment measured: its steps in the order they are shown, the first one
/// (that did not fail) being the baseline of every speed-up.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// Short name: `ladder`, `pragmas`, `upsert`, `kv-reads`, …
    pub id: String,
    pub title: String,
    /// The write-up it reproduces.
    pub writeup: String,
    /// What one unit of work is: "rows", "operations", "messages", "blobs".
    pub unit: String,
    /// The sizes and settings of this run.
    pub setup: String,
    /// The machine and year behind the write-up's figures.
    pub published_by: String,
    pub runs: usize,
    pub steps: Vec<Step>,
    /// Findings worth reading next to the table (some measured while running).
    pub notes: Vec<String>,
}

impl Experiment {
    /// The first step with a rate: what the speed-ups are relative to.
    pub fn baseline(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.median_rate().is_some())
    }

    /// Steps that failed verification.
    pub fn failed(&self) -> Vec<&Step> {
        self.steps.iter().filter(|s| s.failed.is_some()).collect()
    }
}

/// The machine and build a report comes from.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub os: String,
    pub kernel: String,
    pub sqlite_version: String,
    pub sqlite_compile_options: Vec<String>,
    pub liteload_version: String,
    /// UTC, as `YYYY-MM-DD HH:MM`.
    pub date: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Machine {
    /// Reads what Linux says about this machine (fields it cannot read stay empty).
    pub fn here() -> Machine {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let mem_kib: f64 = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        let (sqlite_version, sqlite_compile_options) =
            liteload::sqlite_info::build_info().unwrap_or_default();
        Machine {
            cpu,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_gib: mem_kib / 1024.0 / 1024.0,
            os,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            sqlite_version,
            sqlite_compile_options,
            liteload_version: env!("CARGO_PKG_VERSION").to_string(),
            date: utc_now(),
        }
    }

    pub fn summary(&self) -> String {
        format!(
            "{} ({} cores), {:.0} GiB, {} (Linux {}); SQLite {}; liteload {}; {} UTC",
            self.cpu,
            self.cores,
            self.memory_gib,
            self.os,
            self.kernel,
            self.sqlite_version,
            self.liteload_version,
            self.date
        )
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = liteload::generate::spec::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// The outcome of one verified run: seconds, and the units done when they vary from run
/// to run (fixed-time steps).
pub struct Run {
    pub seconds: f64,
    pub count: Option<u64>,
}

impl Run {
    pub fn timed(seconds: f64) -> Run {
        Run {
            seconds,
            count: None,
        }
    }
}

/// A step to measure: how to describe it, and a closure that runs it once, verifies the
/// result and returns the time of the work alone (setup and verification excluded), or
/// why the result was wrong.
pub struct Plan<'a> {
    pub step: Step,
    pub run: Box<dyn FnMut() -> Result<Run, String> + 'a>,
}

impl<'a> Plan<'a> {
    pub fn new(
        name: &str,
        settings: Option<Settings>,
        items: u64,
        published: Option<f64>,
        run: impl FnMut() -> Result<Run, String> + 'a,
    ) -> Plan<'a> {
        let mut step = Step::new(name);
        step.items = items;
        step.set_settings(settings);
        step.published = published;
        Plan {
            step,
            run: Box::new(run),
        }
    }

    /// Marks the step as measured on `items` units of a job of `total`.
    pub fn extrapolated_to(mut self, total: u64) -> Self {
        self.step.extrapolated_to = Some(total);
        self
    }
}

/// Runs every plan `runs` times, interleaved (run 1 of every step, then run 2, …), so
/// that a change in the machine's state weighs on all steps alike. A step whose result
/// fails verification once is failed: its timings are dropped and it is not run again.
pub fn measure(plans: Vec<Plan<'_>>, runs: usize, log: &mut dyn FnMut(&str)) -> Vec<Step> {
    let mut plans = plans;
    for r in 0..runs.max(1) {
        for p in plans.iter_mut() {
            if p.step.failed.is_some() {
                continue;
            }
            log(&format!("run {}/{}: {}", r + 1, runs.max(1), p.step.name));
            match (p.run)() {
                Ok(run) => {
                    p.step.seconds.push(run.seconds);
                    if let Some(c) = run.count {
                        p.step.counts.push(c);
                    }
                }
                Err(e) => {
                    log(&format!("{} FAILED: {e}", p.step.name));
                    p.step.failed = Some(e);
                    p.step.seconds.clear();
                    p.step.counts.clear();
                }
            }
        }
    }
    plans.into_iter().map(|p| p.step).collect()
}

/// `PRAGMA integrity_check` must say `ok`.
pub fn integrity_ok(conn: &rusqlite::Connection) -> Result<(), String> {
    let r: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| format!("integrity_check: {e}"))?;
    if r == "ok" {
        Ok(())
    } else {
        Err(format!("integrity_check: {r}"))
    }
}

/// Removes a database file and its journal, WAL and shared-memory files.
pub fn remove_db(path: &std::path::Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_step_is_dropped_and_not_rerun_and_the_rest_interleave() {
        let order = std::cell::RefCell::new(vec![]);
        let mut n = 0;
        let plans = vec![
            Plan::new("a", None, 10, None, || {
                order.borrow_mut().push("a");
                Ok(Run::timed(0.5))
            }),
            Plan::new("b", None, 10, None, || {
                order.borrow_mut().push("b");
                n += 1;
                if n == 2 {
                    Err("wrong rows".into())
                } else {
                    Ok(Run::timed(0.25))
                }
            }),
        ];
        let steps = measure(plans, 3, &mut |_| {});
        assert_eq!(*order.borrow(), ["a", "b", "a", "b", "a"]);
        assert_eq!(steps[0].seconds, [0.5, 0.5, 0.5]);
        assert_eq!(steps[0].median_rate(), Some(20.0));
        assert!(steps[1].seconds.is_empty() && steps[1].median_rate().is_none());
        assert_eq!(steps[1].failed.as_deref(), Some("wrong rows"));
    }

    #[test]
    fn the_date_is_a_plausible_utc_timestamp() {
        let d = utc_now();
        assert_eq!(d.len(), 16, "{d}");
        assert!(d.as_str() >= "2024-01-01", "{d}");
    }
}
