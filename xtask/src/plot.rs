//! `cargo xtask bench scale --plot FILE`: the `scale` group's curves as an
//! SVG line chart (latency against records, both axes logarithmic), drawn
//! from its `BENCH scale_<series>_<size> <value> us` lines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A series' points: records → microseconds.
type Series = BTreeMap<u64, f64>;

/// `10k` → 10,000; `1m` → 1,000,000.
fn size(label: &str) -> Option<u64> {
    let (digits, scale) = match label.as_bytes().last()? {
        b'k' => (&label[..label.len() - 1], 1_000),
        b'm' => (&label[..label.len() - 1], 1_000_000),
        _ => (label, 1),
    };
    digits.parse::<u64>().ok().map(|d| d * scale)
}

/// The `scale_` series of BENCH `lines`, by name (`mem_sem_query_p50_us`).
pub fn series(lines: &str) -> BTreeMap<String, Series> {
    let mut out: BTreeMap<String, Series> = BTreeMap::new();
    for line in lines.lines() {
        let mut words = line.split_whitespace();
        let (Some("BENCH"), Some(name), Some(value)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Some(rest) = name.strip_prefix("scale_") else {
            continue;
        };
        let Some((series, label)) = rest.rsplit_once('_') else {
            continue;
        };
        if let (Some(n), Ok(v)) = (size(label), value.parse::<f64>()) {
            out.entry(series.to_owned()).or_default().insert(n, v);
        }
    }
    out
}

const COLOURS: [&str; 7] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
];

/// An SVG chart of `series` (log–log), titled `title`.
pub fn svg(title: &str, series: &BTreeMap<String, Series>) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 440.0, 70.0, 250.0, 40.0, 50.0);
    let points = series.values().flat_map(|s| s.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (n, v) in points {
        #[allow(clippy::cast_precision_loss)]
        let n = *n as f64;
        x0 = x0.min(n);
        x1 = x1.max(n);
        y0 = y0.min(v.max(0.01));
        y1 = y1.max(v.max(0.01));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 10.0, 1.0, 10.0);
    }
    // Whole decades around the data.
    let (lx0, lx1) = (
        x0.log10().floor(),
        x1.log10().ceil().max(x0.log10().floor() + 1.0),
    );
    let (ly0, ly1) = (
        y0.log10().floor(),
        y1.log10().ceil().max(y0.log10().floor() + 1.0),
    );
    let px = |n: f64| left + (n.log10() - lx0) / (lx1 - lx0) * (w - left - right);
    let py = |v: f64| h - bottom - (v.max(0.01).log10() - ly0) / (ly1 - ly0) * (h - top - bottom);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"##,
        (w - right + left) / 2.0,
        escape(title)
    );
    #[allow(clippy::cast_possible_truncation)]
    for d in (lx0 as i32)..=(lx1 as i32) {
        let x = px(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            h - bottom,
            h - bottom + 18.0,
            records(10f64.powi(d))
        );
    }
    #[allow(clippy::cast_possible_truncation)]
    for d in (ly0 as i32)..=(ly1 as i32) {
        let y = py(10f64.powi(d));
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - right,
            left - 6.0,
            y + 4.0,
            micros(10f64.powi(d))
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">records</text><text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">latency (log)</text>"##,
        (w - right + left) / 2.0,
        h - 10.0,
        (h - bottom + top) / 2.0,
        (h - bottom + top) / 2.0
    );
    for (i, (name, points)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        #[allow(clippy::cast_precision_loss)]
        let path: Vec<String> = points
            .iter()
            .map(|(n, v)| format!("{:.1},{:.1}", px(*n as f64), py(*v)))
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"##,
            path.join(" ")
        );
        for (n, v) in points {
            #[allow(clippy::cast_precision_loss)]
            let (x, y) = (px(*n as f64), py(*v));
            #[allow(clippy::cast_precision_loss)]
            let at = records(*n as f64);
            let _ = writeln!(
                s,
                r##"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"><title>{} at {at}: {}</title></circle>"##,
                escape(name),
                micros(*v)
            );
        }
        #[allow(clippy::cast_precision_loss)]
        let ly = top + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            w - right + 15.0,
            w - right + 35.0,
            w - right + 40.0,
            ly + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn records(n: f64) -> String {
    match n {
        n if n >= 1e6 => format!("{}M", n / 1e6),
        n if n >= 1e3 => format!("{}k", n / 1e3),
        n => format!("{n}"),
    }
}

fn micros(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{} s", v / 1e6),
        v if v >= 1e3 => format!("{} ms", v / 1e3),
        v if v >= 1.0 => format!("{v:.0} µs"),
        v => format!("{v} µs"),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_lines_become_series_and_a_chart() {
        let lines = "BENCH scale_mem_sem_query_p50_us_10k 120.5 us\n\
                     BENCH scale_mem_sem_query_p50_us_1m 300 us\n\
                     noise\nBENCH mem_fact_query_p50_us 3 us\n\
                     BENCH scale_pg_fact_query_p50_us_10m 180 us\n";
        let series = series(lines);
        assert_eq!(series.len(), 2);
        assert_eq!(
            series["mem_sem_query_p50_us"].iter().collect::<Vec<_>>(),
            [(&10_000, &120.5), (&1_000_000, &300.0)]
        );
        assert_eq!(series["pg_fact_query_p50_us"][&10_000_000], 180.0);
        let chart = svg("a & b", &series);
        assert!(chart.starts_with("<svg"));
        assert!(chart.contains("a &amp; b"));
        assert_eq!(chart.matches("<polyline").count(), 2);
        assert!(chart.contains("10M") && chart.contains("10k"));
        assert!(chart.trim_end().ends_with("</svg>"));
    }
}
