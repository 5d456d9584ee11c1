//! A hand-written SVG scatter plot: evidence tokens against utility for
//! the archive's candidates and the baselines, with the Pareto front (the
//! most utility for at most that many tokens).

use std::fmt::Write as _;

/// What a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// An archived candidate.
    Candidate,
    /// A baseline (labelled).
    Baseline,
    /// The frozen best candidate (labelled).
    Best,
}

/// One point: `x` mean tokens, `y` mean utility.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Mean evidence tokens.
    pub x: f64,
    /// Mean utility.
    pub y: f64,
    /// The label drawn next to it.
    pub label: Option<String>,
    /// What it is.
    pub kind: PointKind,
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step for a range of `span` with about `n` ticks.
pub(crate) fn step(span: f64, n: f64) -> f64 {
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A plot's canvas: its size, margins and data range, mapping data to
/// pixels, and the grid, ticks, frame and axis titles every plot here draws.
pub(crate) struct Frame {
    /// Width, height.
    pub size: (f64, f64),
    /// Left, right, top, bottom.
    pub margins: (f64, f64, f64, f64),
    /// x0, x1, y0, y1.
    pub range: (f64, f64, f64, f64),
}

/// Tick label formatters for x and y.
pub(crate) type TickLabels<'a> = (&'a dyn Fn(f64) -> String, &'a dyn Fn(f64) -> String);

impl Frame {
    /// A new document of the frame's size: the `<svg>` tag, a white
    /// background, and `title` centred at height `title_y`.
    pub fn open(&self, title: &str, title_y: f64) -> String {
        let (w, h) = self.size;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{title_y}" text-anchor="middle" font-size="14">{}</text>"#,
            w / 2.0,
            escape(title)
        );
        s
    }

    /// The pixel column of `x`.
    pub fn sx(&self, x: f64) -> f64 {
        let ((w, _), (left, right, _, _), (x0, x1, _, _)) = (self.size, self.margins, self.range);
        left + (x - x0) / (x1 - x0) * (w - left - right)
    }

    /// The pixel row of `y`.
    pub fn sy(&self, y: f64) -> f64 {
        let ((_, h), (_, _, top, bottom), (_, _, y0, y1)) = (self.size, self.margins, self.range);
        h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom)
    }

    /// The grid with about `ticks` lines per axis, their labels, the
    /// frame and the axis titles.
    pub fn axes(
        &self,
        s: &mut String,
        ticks: (f64, f64),
        labels: TickLabels<'_>,
        titles: (&str, &str),
    ) {
        let ((w, h), (left, right, top, bottom), (x0, x1, y0, y1)) =
            (self.size, self.margins, self.range);
        let xs = step(x1 - x0, ticks.0);
        let mut x = (x0 / xs).ceil() * xs;
        while x <= x1 {
            let px = self.sx(x);
            let _ = writeln!(
                s,
                r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{:.1}" stroke="#eee"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                h - bottom,
                h - bottom + 16.0,
                (labels.0)(x)
            );
            x += xs;
        }
        let ys = step(y1 - y0, ticks.1);
        let mut y = (y0 / ys).ceil() * ys;
        while y <= y1 {
            let py = self.sy(y);
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                w - right,
                left - 6.0,
                py + 4.0,
                (labels.1)(y)
            );
            y += ys;
        }
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{top}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
            w - left - right,
            h - top - bottom
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            (left + w - right) / 2.0,
            h - 14.0,
            escape(titles.0)
        );
        let _ = writeln!(
            s,
            r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
            (top + h - bottom) / 2.0,
            (top + h - bottom) / 2.0,
            escape(titles.1)
        );
    }
}

/// The points on the Pareto front (no other point has at most the tokens
/// and more utility), sorted by tokens.
pub fn pareto_front(points: &[Point]) -> Vec<(f64, f64)> {
    let v: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .map(|p| (p.x, p.y))
        .collect();
    pareto_indices(&v).into_iter().map(|i| v[i]).collect()
}

/// The indices of the `(x, y)` points that no other point beats with at
/// most its x and more y, by increasing x (ties: the higher y first, and
/// only it is kept).
pub(crate) fn pareto_indices(points: &[(f64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|&a, &b| {
        points[a]
            .0
            .total_cmp(&points[b].0)
            .then(points[b].1.total_cmp(&points[a].1))
    });
    let mut best = f64::NEG_INFINITY;
    order
        .into_iter()
        .filter(|&i| {
            let keep = points[i].1 > best;
            best = best.max(points[i].1);
            keep
        })
        .collect()
}

/// The plot as an SVG document.
pub fn pareto_svg(title: &str, points: &[Point]) -> String {
    let (w, h) = (760.0, 500.0);
    let (left, right, top, bottom) = (70.0, 30.0, 40.0, 55.0);
    let finite: Vec<&Point> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    let (x0, x1, y0, y1) = padded_range(&finite);
    let frame = Frame {
        size: (w, h),
        margins: (left, right, top, bottom),
        range: (x0, x1, y0, y1),
    };
    let (sx, sy) = (|x: f64| frame.sx(x), |y: f64| frame.sy(y));
    let mut s = frame.open(title, 22.0);
    frame.axes(
        &mut s,
        (6.0, 6.0),
        (&|x| x.round().to_string(), &|y| format!("{y:.3}")),
        ("mean evidence tokens per question (C)", "mean utility (J)"),
    );
    // The front as a staircase.
    let front = pareto_front(points);
    if front.len() > 1 {
        let mut d = String::new();
        for (i, (fx, fy)) in front.iter().enumerate() {
            if i == 0 {
                let _ = write!(d, "M{:.1},{:.1}", sx(*fx), sy(*fy));
            } else {
                let _ = write!(d, " H{:.1} V{:.1}", sx(*fx), sy(*fy));
            }
        }
        let _ = writeln!(
            s,
            r##"<path d="{d}" fill="none" stroke="#2a9d48" stroke-width="1.5" stroke-dasharray="4 3"/>"##
        );
    }
    for kind in [PointKind::Candidate, PointKind::Baseline, PointKind::Best] {
        for p in finite.iter().filter(|p| p.kind == kind) {
            marker(&mut s, kind, (sx(p.x), sy(p.y)), p.label.as_deref());
        }
    }
    let _ = writeln!(
        s,
        r##"<g transform="translate({:.1},{:.1})"><circle cx="0" cy="0" r="3" fill="#999"/><text x="8" y="4">candidates</text><rect x="85" y="-3.5" width="7" height="7" fill="#3366cc"/><text x="98" y="4">baselines</text><path d="M175,-6 L181,0 L175,6 L169,0 Z" fill="#d62728"/><text x="186" y="4">best</text><line x1="225" y1="0" x2="245" y2="0" stroke="#2a9d48" stroke-dasharray="4 3"/><text x="250" y="4">Pareto front</text></g>"##,
        left + 10.0,
        top + 14.0
    );
    s.push_str("</svg>\n");
    s
}

/// The plotted range: the points' extent (the unit square without any),
/// padded, with tokens from 0 up.
fn padded_range(finite: &[&Point]) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1) = (f64::MAX, f64::MIN);
    let (mut y0, mut y1) = (f64::MAX, f64::MIN);
    for p in finite {
        x0 = x0.min(p.x);
        x1 = x1.max(p.x);
        y0 = y0.min(p.y);
        y1 = y1.max(p.y);
    }
    if finite.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let pad_x = ((x1 - x0) * 0.06).max(1.0);
    let pad_y = ((y1 - y0) * 0.08).max(0.005);
    ((x0 - pad_x).max(0.0), x1 + pad_x, y0 - pad_y, y1 + pad_y)
}

/// One point's marker at `(px, py)` (pixels), and its label.
fn marker(s: &mut String, kind: PointKind, (px, py): (f64, f64), label: Option<&str>) {
    match kind {
        PointKind::Candidate => {
            let _ = writeln!(
                s,
                r##"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="#999" fill-opacity="0.6"/>"##
            );
        }
        PointKind::Baseline => {
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="#3366cc"/>"##,
                px - 3.5,
                py - 3.5
            );
        }
        PointKind::Best => {
            let _ = writeln!(
                s,
                r##"<path d="M{px:.1},{:.1} L{:.1},{py:.1} L{px:.1},{:.1} L{:.1},{py:.1} Z" fill="#d62728"/>"##,
                py - 7.0,
                px + 7.0,
                py + 7.0,
                px - 7.0
            );
        }
    }
    if let Some(l) = label {
        let color = if kind == PointKind::Best {
            "#d62728"
        } else {
            "#223"
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}">{}</text>"#,
            px + 8.0,
            py - 6.0,
            escape(l)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_and_document() {
        let p = |x, y, kind| Point {
            x,
            y,
            label: None,
            kind,
        };
        let pts = vec![
            p(100.0, 0.5, PointKind::Candidate),
            p(200.0, 0.4, PointKind::Candidate),
            p(300.0, 0.7, PointKind::Baseline),
            p(50.0, 0.2, PointKind::Best),
        ];
        assert_eq!(
            pareto_front(&pts),
            vec![(50.0, 0.2), (100.0, 0.5), (300.0, 0.7)]
        );
        let mut labelled = pts.clone();
        labelled[2].label = Some("all <five>".into());
        let svg = pareto_svg("t & u", &labelled);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("all &lt;five&gt;") && svg.contains("t &amp; u"));
        assert!(!pareto_svg("empty", &[]).contains("NaN"));
    }
}
