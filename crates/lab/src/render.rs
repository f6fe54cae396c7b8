//! Experiments as a terminal table, an SVG chart, JSON records, a recommendation per
//! durability need, and one self-contained HTML page.

use std::fmt::Write as _;

use serde::Serialize;

use crate::durability::{CrashCost, Labels, Survives};
use crate::report::{Experiment, Machine};
use crate::stats::Step;
use crate::svg::{chart, Bar};

/// `1234567.8` as `1,234,568`; small rates keep a decimal or two.
pub fn rate(v: f64) -> String {
    if v >= 100.0 {
        count(v.round() as u64)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A count with thousands separators.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The slowest and fastest run's rate.
fn spread(s: &Step) -> (f64, f64) {
    let r = s.rates();
    let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = r.iter().copied().fold(0.0, f64::max);
    (lo, hi)
}

/// A step's speed-up over the experiment's baseline.
fn speedup(e: &Experiment, s: &Step) -> Option<f64> {
    Some(s.median_rate()? / e.baseline()?.median_rate()?)
}

fn published_speedup(e: &Experiment, s: &Step) -> Option<f64> {
    let base = e.steps.iter().find_map(|s| s.published)?;
    Some(s.published? / base)
}

fn extrapolation(e: &Experiment, s: &Step) -> Option<String> {
    let total = s.extrapolated_to?;
    let r = s.median_rate()?;
    Some(format!(
        "measured on {} of {} {}; the whole job would take about {:.0} s",
        count(s.items),
        count(total),
        e.unit,
        total as f64 / r
    ))
}

/// The experiment as a plain-text table.
pub fn text(e: &Experiment) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{} — write-up {}", e.title, e.writeup);
    let _ = writeln!(s, "{}; median of {} interleaved runs", e.setup, e.runs);
    let width = e
        .steps
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4)
        + 2;
    let unit = format!("{}/s", e.unit);
    let _ = writeln!(
        s,
        "  {:<width$} {:>13} {:>25} {:>9}   {:>13} {:>9}   a commit survives; a crash costs",
        "step", unit, "spread (min-max)", "speed-up", "write-up /s", "speed-up"
    );
    for st in &e.steps {
        let name = if st.extrapolated_to.is_some() {
            format!("{} *", st.name)
        } else {
            st.name.clone()
        };
        let published = st.published.map(rate).unwrap_or_default();
        let pub_x = published_speedup(e, st)
            .map(|x| format!("{x:.1}x"))
            .unwrap_or_default();
        let safety = labels(st.labels);
        match st.median_rate() {
            Some(m) => {
                let (lo, hi) = spread(st);
                let _ = writeln!(
                    s,
                    "  {:<width$} {:>13} {:>25} {:>9}   {:>13} {:>9}   {}",
                    name,
                    rate(m),
                    format!("{} - {}", rate(lo), rate(hi)),
                    speedup(e, st).map_or(String::new(), |x| format!("{x:.1}x")),
                    published,
                    pub_x,
                    safety
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {:<width$} FAILED: {}",
                    name,
                    st.failed.as_deref().unwrap_or("no runs")
                );
            }
        }
    }
    for st in &e.steps {
        if let Some(x) = extrapolation(e, st) {
            let _ = writeln!(s, "  * {}: {x}", st.name);
        }
    }
    let _ = writeln!(s, "  write-up figures: {}", e.published_by);
    for n in &e.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// A bar per step (median rate), on a log scale when the rates span more than 30x.
pub fn svg(e: &Experiment) -> String {
    let bars: Vec<Bar> = e
        .steps
        .iter()
        .map(|st| match st.median_rate() {
            Some(m) => Bar {
                label: st.name.clone(),
                value: m,
                note: match speedup(e, st) {
                    Some(x) => format!("{} /s  {x:.1}x", rate(m)),
                    None => format!("{} /s", rate(m)),
                },
            },
            None => Bar {
                label: st.name.clone(),
                value: 0.0,
                note: "FAILED".into(),
            },
        })
        .collect();
    let (lo, hi) = bars
        .iter()
        .filter(|b| b.value > 0.0)
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), b| {
            (lo.min(b.value), hi.max(b.value))
        });
    let log = hi / lo > 30.0;
    let sub = format!(
        "{} per second, median of {} runs{}",
        e.unit,
        e.runs,
        if log { "; log scale" } else { "" }
    );
    chart(&format!("{} ({})", e.title, e.id), &sub, &bars, None, log)
}

/// One durability need and the fastest verified step that meets it.
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    pub need: String,
    pub experiment: String,
    pub step: String,
    pub rate: f64,
    pub unit: String,
    pub speedup: Option<f64>,
}

/// A step's two labels in one cell, `-` for a step that keeps no data.
fn labels(l: Option<Labels>) -> String {
    l.map_or("-".into(), |l| l.describe())
}

/// The needs a user picks from: what a commit must survive, and the most a crash may
/// cost. A step meets a need when it is at least as good on both.
pub const NEEDS: [(&str, Survives, CrashCost); 5] = [
    (
        "every commit survives power loss (a crash may cost the run: run it again)",
        Survives::PowerLoss,
        CrashCost::WholeRun,
    ),
    (
        "every operation is committed as it happens and survives power loss",
        Survives::PowerLoss,
        CrashCost::NothingCommitted,
    ),
    (
        "commits survive a program crash; a crash costs at most the work since the last commit",
        Survives::ProgramCrash,
        CrashCost::SinceLastCommit,
    ),
    (
        "commits survive a program crash (a crash may cost the run)",
        Survives::ProgramCrash,
        CrashCost::WholeRun,
    ),
    (
        "speed only: the data can be rebuilt after a crash",
        Survives::Nothing,
        CrashCost::WholeRun,
    ),
];

/// For each need and experiment: the fastest step that verified and meets the need on
/// both labels, from the measured medians.
pub fn recommendations(exps: &[Experiment]) -> Vec<Recommendation> {
    let mut out = vec![];
    for (need, survives, cost) in NEEDS {
        for e in exps {
            let best = e
                .steps
                .iter()
                .filter(|s| {
                    s.labels
                        .is_some_and(|l| l.survives <= survives && l.crash_cost <= cost)
                })
                .filter_map(|s| Some((s, s.median_rate()?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((s, r)) = best {
                out.push(Recommendation {
                    need: need.into(),
                    experiment: e.id.clone(),
                    step: s.name.clone(),
                    rate: r,
                    unit: e.unit.clone(),
                    speedup: speedup(e, s),
                });
            }
        }
    }
    out
}

pub fn recommendations_text(recs: &[Recommendation]) -> String {
    let mut s = String::from("Fastest verified setting per need (from the medians above):\n");
    let mut last = "";
    for r in recs {
        if r.need != last {
            let _ = writeln!(s, "  {}:", r.need);
            last = &r.need;
        }
        let _ = writeln!(
            s,
            "    {:<9} {} — {} {}/s{}",
            r.experiment,
            r.step,
            rate(r.rate),
            r.unit,
            r.speedup
                .map_or(String::new(), |x| format!(", {x:.1}x the first step"))
        );
    }
    s
}

/// One record per timed run, with the experiment's context.
#[derive(Serialize)]
struct RunRecord<'a> {
    experiment: &'a str,
    step: &'a str,
    run: usize,
    seconds: f64,
    units: u64,
    per_second: f64,
}

/// The machine, every experiment (steps with all their timings), every run as a record,
/// and the recommendations, as pretty JSON.
pub fn json(machine: &Machine, exps: &[Experiment]) -> String {
    let mut runs = vec![];
    for e in exps {
        for st in &e.steps {
            for (i, (secs, r)) in st.seconds.iter().zip(st.rates()).enumerate() {
                runs.push(RunRecord {
                    experiment: &e.id,
                    step: &st.name,
                    run: i + 1,
                    seconds: *secs,
                    units: st.counts.get(i).copied().unwrap_or(st.items),
                    per_second: r,
                });
            }
        }
    }
    let v = serde_json::json!({
        "machine": machine,
        "experiments": exps,
        "runs": runs,
        "recommendations": recommendations(exps),
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One page, no external resources: the recommendations, each experiment's chart and
/// table with the write-up's figures beside ours, and the machine.
pub fn html(machine: &Machine, exps: &[Experiment]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>liteload bench report</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; padding: 0 1em; }}
table {{ border-collapse: collapse; margin: .5em 0 1em; font-size: 14px; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; }}
th:first-child, td:first-child, td.l, th.l {{ text-align: left; }}
td.fail {{ color: #b00; text-align: left; }}
.muted {{ color: #666; }} .note {{ color: #444; font-size: 14px; }}
section {{ margin-bottom: 2.5em; }} svg {{ max-width: 100%; height: auto; }}
</style></head><body>
<h1>liteload bench</h1>
<p class="muted">{}</p>
"#,
        esc(&machine.summary())
    );
    let failed: usize = exps.iter().map(|e| e.failed().len()).sum();
    if failed > 0 {
        let _ = writeln!(
            h,
            "<p class=\"fail\"><b>{failed} step(s) failed verification</b>; they are shown failed and not timed.</p>"
        );
    }
    h.push_str("<h2>Which settings won here</h2>\n<table><tr><th>need</th><th class=\"l\">experiment</th><th class=\"l\">fastest verified step</th><th>per second</th><th>speed-up</th></tr>\n");
    for r in recommendations(exps) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{} {}</td><td>{}</td></tr>",
            esc(&r.need),
            esc(&r.experiment),
            esc(&r.step),
            rate(r.rate),
            esc(&r.unit),
            r.speedup.map_or(String::new(), |x| format!("{x:.1}x"))
        );
    }
    h.push_str("</table>\n<p class=\"note\">Speed-ups are over each experiment's first step. Each step carries two labels computed from the settings it ran with: what a commit survives (");
    let survives: Vec<&str> = [
        Survives::PowerLoss,
        Survives::ProgramCrash,
        Survives::Nothing,
    ]
    .iter()
    .map(|s| s.describe())
    .collect();
    h.push_str(&esc(&survives.join(" / ")));
    h.push_str(") and what a crash costs (");
    let costs: Vec<&str> = [
        CrashCost::NothingCommitted,
        CrashCost::SinceLastCommit,
        CrashCost::WholeRun,
    ]
    .iter()
    .map(|s| s.describe())
    .collect();
    h.push_str(&esc(&costs.join(" / ")));
    h.push(')');
    h.push_str(".</p>\n");
    for e in exps {
        let _ = writeln!(
            h,
            "<section id=\"{}\"><h2>{}</h2>\n<p>Write-up {} — {}; median of {} interleaved runs.</p>",
            esc(&e.id),
            esc(&e.title),
            esc(&e.writeup),
            esc(&e.setup),
            e.runs
        );
        h.push_str(&svg(e));
        let _ = writeln!(
            h,
            "<table><tr><th>step</th><th>{} /s (median)</th><th>min – max</th><th>speed-up</th><th>write-up /s</th><th>write-up speed-up</th><th class=\"l\">a commit survives; a crash costs</th></tr>",
            esc(&e.unit)
        );
        for st in &e.steps {
            let star = if st.extrapolated_to.is_some() {
                " *"
            } else {
                ""
            };
            match st.median_rate() {
                Some(m) => {
                    let (lo, hi) = spread(st);
                    let _ = writeln!(
                        h,
                        "<tr><td>{}{star}</td><td>{}</td><td>{} – {}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                        esc(&st.name),
                        rate(m),
                        rate(lo),
                        rate(hi),
                        speedup(e, st).map_or(String::new(), |x| format!("{x:.1}x")),
                        st.published.map(rate).unwrap_or_default(),
                        published_speedup(e, st).map_or(String::new(), |x| format!("{x:.1}x")),
                        esc(&labels(st.labels))
                    );
                }
                None => {
                    let _ = writeln!(
                        h,
                        "<tr><td>{}{star}</td><td class=\"fail\" colspan=\"6\">FAILED: {}</td></tr>",
                        esc(&st.name),
                        esc(st.failed.as_deref().unwrap_or("no runs"))
                    );
                }
            }
        }
        h.push_str("</table>\n");
        for st in &e.steps {
            if let Some(x) = extrapolation(e, st) {
                let _ = writeln!(h, "<p class=\"note\">* {}: {}</p>", esc(&st.name), esc(&x));
            }
        }
        let _ = writeln!(
            h,
            "<p class=\"note\">Write-up figures: {}.</p>",
            esc(&e.published_by)
        );
        for n in &e.notes {
            let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
        }
        h.push_str("</section>\n");
    }
    let _ = writeln!(
        h,
        "<h2>Machine</h2><p>{}</p><p class=\"note\">SQLite compile options: {}</p></body></html>",
        esc(&machine.summary()),
        esc(&machine.sqlite_compile_options.join(", "))
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::durability::{Commits, Journal, Settings, Synchronous};

    fn step(name: &str, secs: &[f64], settings: Option<Settings>, published: Option<f64>) -> Step {
        let mut s = Step::new(name);
        s.items = 100;
        s.seconds = secs.to_vec();
        s.set_settings(settings);
        s.published = published;
        s
    }

    fn exp() -> Experiment {
        let file = Settings::default_file;
        let unsafe_ = file(Commits::WholeRun).with(Journal::Off, Synchronous::Off);
        let mut failed = step("broken", &[], Some(unsafe_), None);
        failed.failed = Some("3 rows, expected 4".into());
        Experiment {
            id: "x".into(),
            title: "T".into(),
            writeup: "000".into(),
            unit: "rows".into(),
            setup: "tiny".into(),
            published_by: "a P4 <2009>".into(),
            runs: 2,
            steps: vec![
                step(
                    "slow & safe",
                    &[10.0, 10.0],
                    Some(file(Commits::EachOperation).with(Journal::Wal, Synchronous::Full)),
                    Some(5.0),
                ),
                step(
                    "bounded",
                    &[1.0, 2.0],
                    Some(file(Commits::Batches).with(Journal::Wal, Synchronous::Normal)),
                    Some(50.0),
                ),
                step(
                    "one commit, durable",
                    &[0.5, 0.5],
                    Some(file(Commits::WholeRun).with(Journal::Wal, Synchronous::Full)),
                    None,
                ),
                step("fast", &[0.1, 0.1], Some(unsafe_), None),
                failed,
                step("floor", &[0.01, 0.01], None, None),
            ],
            notes: vec!["n".into()],
        }
    }

    #[test]
    fn rates_are_grouped() {
        assert_eq!(rate(1_234_567.8), "1,234,568");
        assert_eq!(rate(325.2), "325");
        assert_eq!(rate(19.94), "19.9");
        assert_eq!(count(20), "20");
        assert_eq!(count(864_913), "864,913");
    }

    #[test]
    fn the_table_shows_speedups_published_figures_and_failures() {
        let t = text(&exp());
        assert!(t.contains("7.5x") && t.contains("10.0x"), "{t}"); // ours 75/s vs 10/s; theirs 50 vs 5
        assert!(t.contains("100.0x"), "{t}");
        assert!(t.contains("FAILED: 3 rows, expected 4"), "{t}");
        assert!(t.contains("a P4 <2009>"));
    }

    #[test]
    fn recommendations_pick_the_fastest_step_safe_enough_and_skip_failures() {
        let r = recommendations(&[exp()]);
        let pick = |need: usize| r[need].step.as_str();
        // Power loss, the run may be lost: the single durable commit, not autocommit.
        assert_eq!(pick(0), "one commit, durable");
        assert_eq!(pick(1), "slow & safe");
        assert_eq!(pick(2), "bounded");
        assert_eq!(pick(3), "one commit, durable");
        assert_eq!(pick(4), "fast");
        assert_eq!(r.len(), 5);
    }

    #[test]
    fn html_is_one_page_with_escaped_text_and_a_chart_per_experiment() {
        let m = Machine::here();
        let h = html(&m, &[exp(), exp()]);
        assert!(h.starts_with("<!DOCTYPE html>") && h.trim_end().ends_with("</html>"));
        assert_eq!(h.matches("<svg").count(), 2);
        assert!(h.contains("slow &amp; safe") && h.contains("a P4 &lt;2009&gt;"));
        assert!(
            !h.contains("http://")
                || h.matches("http://").count()
                    == h.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        let j = json(&m, &[exp()]);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), 10);
    }

    #[test]
    fn wide_ranges_get_a_log_scale() {
        assert!(svg(&exp()).contains("log scale"));
    }
}
