//! Medians and spreads of repeated timings.

use serde::Serialize;

use crate::durability::{Labels, Settings};

/// The timings of one step over its runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Step {
    pub name: String,
    /// Seconds of each run that verified.
    pub seconds: Vec<f64>,
    /// Why the step failed, if it did (then it has no timings that count).
    pub failed: Option<String>,
    /// Units of work per run (blobs read or written), the same for every run.
    pub items: u64,
    /// Bytes moved per run.
    pub bytes: u64,
    /// Units of work of each run, for steps that run for a fixed time (then `items` is
    /// 0 and the rate of run `i` is `counts[i] / seconds[i]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<u64>,
    /// The settings the step ran with (`None`: not a way to keep data, e.g. a floor
    /// that writes nothing, or files written outside SQLite).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
    /// What those settings promise, computed from them (never set by hand).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    /// The write-up's own figure for this step, in units per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<f64>,
    /// The whole job's size when the step was measured on only part of it (too slow to
    /// run in full): the report extrapolates the time from the measured rate and says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extrapolated_to: Option<u64>,
}

impl Step {
    pub fn new(name: &str) -> Step {
        Step {
            name: name.to_string(),
            ..Step::default()
        }
    }

    /// Records the settings the step runs with, and the labels they earn.
    pub fn set_settings(&mut self, settings: Option<Settings>) {
        self.settings = settings;
        self.labels = settings.map(|s| s.labels());
    }

    /// The median run, or `None` for a failed or empty step.
    pub fn median(&self) -> Option<f64> {
        if self.failed.is_some() || self.seconds.is_empty() {
            return None;
        }
        Some(median(&self.seconds))
    }

    /// Units per second of each run that verified.
    pub fn rates(&self) -> Vec<f64> {
        if self.failed.is_some() {
            return vec![];
        }
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = self.counts.get(i).copied().unwrap_or(self.items);
                n as f64 / s.max(1e-9)
            })
            .collect()
    }

    /// The median rate in units per second, or `None` for a failed or empty step.
    pub fn median_rate(&self) -> Option<f64> {
        let r = self.rates();
        (!r.is_empty()).then(|| median(&r))
    }

    pub fn min_max(&self) -> (f64, f64) {
        let min = self.seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.seconds.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

/// The median of `v` (the mean of the middle two for an even count). `v` is not empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn medians() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
