//! Medians and spreads of repeated timings.

use serde::Serialize;

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
}

impl Step {
    pub fn new(name: &str) -> Step {
        Step {
            name: name.to_string(),
            ..Step::default()
        }
    }

    /// The median run, or `None` for a failed or empty step.
    pub fn median(&self) -> Option<f64> {
        if self.failed.is_some() || self.seconds.is_empty() {
            return None;
        }
        Some(median(&self.seconds))
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
