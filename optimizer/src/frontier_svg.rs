//! The frontier figure: every fixed subset, the fixed subsets' frontier,
//! the policies and their frontier, and the oracle, in shares of all
//! five's tokens (x) and J (y), with labels placed so that none overlaps
//! another label or a marker.

use crate::frontier::{pareto, Point, SplitFrontier};
use crate::svg::{escape, Frame};
use std::fmt::Write as _;

/// A box on the canvas: left, top, right, bottom.
type Rect = (f64, f64, f64, f64);

fn overlaps(a: Rect, b: Rect) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Approximate text extent at 11 px sans-serif.
fn text_width(text: &str) -> f64 {
    6.2 * text.chars().count() as f64
}

/// Places one label per anchor (x, y, text): the first of a ring of
/// positions around the anchor, at growing distances, whose box is inside
/// `area` and meets no placed label and no marker. Returns each label's
/// box (its text starts at the box's left edge, baseline at bottom - 3),
/// and whether it needed a leader line (placed away from its anchor).
pub fn place_labels(anchors: &[(f64, f64, String)], area: Rect) -> Vec<(Rect, bool)> {
    let markers: Vec<Rect> = anchors
        .iter()
        .map(|(x, y, _)| (x - 4.0, y - 4.0, x + 4.0, y + 4.0))
        .collect();
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (x, y, text) in anchors {
        let (w, h) = (text_width(text), 13.0);
        let mut chosen = None;
        'search: for ring in 0..12 {
            let d = 6.0 + 9.0 * ring as f64;
            let spots = [
                (x + d, y - h / 2.0),
                (x - d - w, y - h / 2.0),
                (x - w / 2.0, y - d - h),
                (x - w / 2.0, y + d),
                (x + d, y - d - h),
                (x - d - w, y - d - h),
                (x + d, y + d),
                (x - d - w, y + d),
            ];
            for (left, top) in spots {
                let r = (left, top, left + w, top + h);
                let inside = r.0 >= area.0 && r.1 >= area.1 && r.2 <= area.2 && r.3 <= area.3;
                if inside
                    && !placed.iter().any(|p| overlaps(*p, r))
                    && !markers.iter().any(|m| overlaps(*m, r))
                {
                    chosen = Some((r, ring > 1));
                    break 'search;
                }
            }
        }
        // Nowhere free: below the plot area's bottom-most label, in a
        // column, with a leader line (never on top of another label).
        let (r, lead) = chosen.unwrap_or_else(|| {
            let bottom = placed.iter().map(|p| p.3).fold(area.1, f64::max);
            ((area.0, bottom, area.0 + w, bottom + h), true)
        });
        placed.push(r);
        out.push((r, lead));
    }
    out
}

/// The figure of one split's frontier.
pub fn frontier_svg(title: &str, f: &SplitFrontier) -> String {
    let (w, h) = (820.0, 560.0);
    let (left, right, top, bottom) = (70.0, 30.0, 50.0, 55.0);
    let all = &f.all_five;
    let share = |p: &Point| {
        let sx = if all.c > 0.0 { p.c / all.c } else { 0.0 };
        let sy = if all.j > 0.0 { p.j / all.j } else { 0.0 };
        (100.0 * sx, 100.0 * sy)
    };
    let fixed: Vec<(f64, f64)> = f.fixed.iter().map(share).collect();
    let policies: Vec<(f64, f64)> = f.policies.iter().map(share).collect();
    let oracle = share(&f.oracle);
    let points = || fixed.iter().chain(&policies).chain([&oracle]);
    let y0 = (points().map(|p| p.1).fold(f64::MAX, f64::min) - 5.0).clamp(0.0, 95.0);
    // All five is at (100%, 100%); a utility where a subset beats it (a
    // judge) needs more room above.
    let y1 = points().map(|p| p.1 + 3.0).fold(103.0, f64::max);
    let x1 = points().map(|p| p.0 + 5.0).fold(105.0, f64::max);
    let x0 = 0.0;
    let frame = Frame {
        size: (w, h),
        margins: (left, right, top, bottom),
        range: (x0, x1, y0, y1),
    };
    let (sx, sy) = (|x: f64| frame.sx(x), |y: f64| frame.sy(y));
    let mut s = frame.open(title, 20.0);
    frame.axes(
        &mut s,
        (10.0, 8.0),
        (&|x| format!("{x:.0}%"), &|y| format!("{y:.0}%")),
        (
            "evidence tokens, share of all five's",
            "J, share of all five's",
        ),
    );
    let path = |pts: &[(f64, f64)]| {
        let mut d = String::new();
        for (i, (x, y)) in pts.iter().enumerate() {
            let c = if i == 0 { 'M' } else { 'L' };
            let _ = write!(d, "{c}{:.1},{:.1} ", sx(*x), sy(*y));
        }
        d
    };
    let front = |pts: &[Point]| -> Vec<(f64, f64)> {
        pareto(pts).into_iter().map(|k| share(&pts[k])).collect()
    };
    let _ = writeln!(
        s,
        r##"<path d="{}" fill="none" stroke="#3366cc" stroke-width="1.5" stroke-dasharray="5 3"/>"##,
        path(&front(&f.fixed))
    );
    if f.policies.len() > 1 {
        let _ = writeln!(
            s,
            r##"<path d="{}" fill="none" stroke="#d62728" stroke-width="1.5"/>"##,
            path(&front(&f.policies))
        );
    }
    let mut anchors: Vec<(f64, f64, String)> = Vec::new();
    for (k, (x, y)) in fixed.iter().enumerate() {
        let (px, py) = (sx(*x), sy(*y));
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="6" height="6" fill="#3366cc"/>"##,
            px - 3.0,
            py - 3.0
        );
        anchors.push((px, py, f.fixed[k].name.replace(", ", "")));
    }
    for (k, (x, y)) in policies.iter().enumerate() {
        let (px, py) = (sx(*x), sy(*y));
        let _ = writeln!(
            s,
            r##"<path d="M{px:.1},{:.1} L{:.1},{py:.1} L{px:.1},{:.1} L{:.1},{py:.1} Z" fill="#d62728"/>"##,
            py - 6.0,
            px + 6.0,
            py + 6.0,
            px - 6.0
        );
        anchors.push((px, py, format!("policy {}", k + 1)));
    }
    let (ox, oy) = (sx(oracle.0), sy(oracle.1));
    let _ = writeln!(
        s,
        r##"<circle cx="{ox:.1}" cy="{oy:.1}" r="5" fill="#2a9d48"/>"##
    );
    anchors.push((ox, oy, "oracle".into()));
    let area = (left + 2.0, top + 22.0, w - right - 2.0, h - bottom - 2.0);
    labels_and_legend(&mut s, &anchors, area, (left + 10.0, top + 12.0));
    s.push_str("</svg>\n");
    s
}

/// Each marker's label where it overlaps no other (with a leader line
/// when it had to move away), and the legend at `legend`.
fn labels_and_legend(
    s: &mut String,
    anchors: &[(f64, f64, String)],
    area: (f64, f64, f64, f64),
    legend: (f64, f64),
) {
    for ((r, lead), (ax, ay, text)) in place_labels(anchors, area).into_iter().zip(anchors) {
        if lead {
            let _ = writeln!(
                s,
                r##"<line x1="{ax:.1}" y1="{ay:.1}" x2="{:.1}" y2="{:.1}" stroke="#bbb"/>"##,
                r.0,
                (r.1 + r.3) / 2.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            r.0,
            r.3 - 3.0,
            escape(text)
        );
    }
    let _ = writeln!(
        s,
        r##"<g transform="translate({:.1},{:.1})"><rect x="0" y="-3" width="6" height="6" fill="#3366cc"/><text x="10" y="4">fixed subsets (dashed: their frontier)</text><path d="M230,-6 L236,0 L230,6 L224,0 Z" fill="#d62728"/><text x="242" y="4">policies (line: their frontier)</text><circle cx="425" cy="0" r="5" fill="#2a9d48"/><text x="435" y="4">oracle</text></g>"##,
        legend.0, legend.1
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_overlap_even_when_anchors_crowd() {
        // 40 anchors, many on the same spot.
        let anchors: Vec<(f64, f64, String)> = (0..40)
            .map(|i| {
                let x = 100.0 + f64::from(i % 5) * 3.0;
                let y = 200.0 + f64::from(i / 8) * 2.0;
                (x, y, format!("{{S, T, G}} #{i}"))
            })
            .collect();
        let boxes = place_labels(&anchors, (0.0, 0.0, 800.0, 600.0));
        assert_eq!(boxes.len(), anchors.len());
        for (i, (a, _)) in boxes.iter().enumerate() {
            for (b, _) in &boxes[i + 1..] {
                assert!(!overlaps(*a, *b), "{a:?} meets {b:?}");
            }
            for (x, y, _) in &anchors {
                assert!(!overlaps(*a, (x - 4.0, y - 4.0, x + 4.0, y + 4.0)));
            }
        }
    }
}
