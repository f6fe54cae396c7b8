//! A horizontal bar chart as a self-contained SVG.
//!
//! Written out by hand rather than with a plotting crate: a bar chart is a few
//! rectangles and labels, and SVG text needs no font machinery.

use std::fmt::Write as _;

/// One bar: a label, a value, and the text shown at its end.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub note: String,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A chart titled `title`, bars scaled to the largest value, with a dashed reference line
/// at `reference` (e.g. 1.0 for a ratio) when given.
pub fn bar_chart(
    title: &str,
    subtitle: &str,
    bars: &[Bar],
    reference: Option<(f64, &str)>,
) -> String {
    chart(title, subtitle, bars, reference, false)
}

/// Like [`bar_chart`], on a log scale when `log` (for values that span decades): a bar's
/// length is then proportional to log10(value / floor), the floor a third of a decade
/// below the smallest value, so every bar stays visible.
pub fn chart(
    title: &str,
    subtitle: &str,
    bars: &[Bar],
    reference: Option<(f64, &str)>,
    log: bool,
) -> String {
    // About 7.2 px a character at 13 px sans-serif: room for the longest label.
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let (left, width, row, top) = ((longest * 7.2 + 24.0).max(120.0), 460.0, 28.0, 64.0);
    let longest_note = bars
        .iter()
        .map(|b| b.note.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let total_width = left + width + (longest_note * 7.2 + 16.0).max(90.0);
    let max = bars
        .iter()
        .map(|b| b.value)
        .chain(reference.map(|r| r.0))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let floor = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min)
        .min(max)
        / 10f64.powf(1.0 / 3.0);
    let scale = |v: f64| -> f64 {
        if log {
            (v.max(floor) / floor).log10() / (max / floor).log10()
        } else {
            v / max
        }
    };
    let height = top + row * bars.len() as f64 + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_width:.0}" height="{height}" font-family="sans-serif" font-size="13">"#
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#fff"/>"##);
    let _ = writeln!(
        s,
        r#"<text x="20" y="26" font-size="17" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="20" y="46" fill="#555">{}</text>"##,
        esc(subtitle)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let w = (scale(b.value) * width).max(1.0);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + 17.0,
            esc(&b.label)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{}" width="{w:.1}" height="20" fill="#3b7dd8"/>"##,
            y + 3.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}">{}</text>"#,
            left + w + 6.0,
            y + 17.0,
            esc(&b.note)
        );
    }
    if let Some((v, label)) = reference {
        let x = left + scale(v) * width;
        let y2 = top + row * bars.len() as f64;
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{y2}" stroke="#c33" stroke-dasharray="4 3"/>"##,
            top - 4.0
        );
        let _ = writeln!(
            s,
            r##"<text x="{x:.1}" y="{}" fill="#c33" text-anchor="middle">{}</text>"##,
            y2 + 16.0,
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_text_is_escaped() {
        let svg = bar_chart(
            "t <1>",
            "s",
            &[
                Bar {
                    label: "a&b".into(),
                    value: 2.0,
                    note: "2x".into(),
                },
                Bar {
                    label: "c".into(),
                    value: 1.0,
                    note: "1x".into(),
                },
            ],
            Some((1.0, "equal")),
        );
        assert!(svg.contains("t &lt;1&gt;") && svg.contains("a&amp;b"));
        assert!(svg.contains(r#"width="460.0""#) && svg.contains(r#"width="230.0""#));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
