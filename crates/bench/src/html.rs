//! A self-contained HTML page of a report: inline SVG charts drawn here, no scripts, nothing
//! fetched. Three charts: latency percentiles against load (log scale), throughput against
//! load, and the latency percentile spectrum of every level. Hovering a point shows its value
//! (SVG `<title>`).

use std::fmt::Write as _;

use crate::report::{fmt_us, group, group_f, Level, Report};

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 380.0;
/// Plot area margins: left, right, top, bottom.
const MARGIN: (f64, f64, f64, f64) = (72.0, 150.0, 40.0, 56.0);
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

struct Series {
    name: String,
    color: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

enum YScale {
    /// Latency in µs, decades.
    LogMicros,
    /// Requests per second from 0.
    Linear,
}

struct Chart {
    title: String,
    x_label: String,
    y_label: String,
    /// Tick positions and labels; points use the same x values.
    x_ticks: Vec<(f64, String)>,
    x_range: (f64, f64),
    y: YScale,
    series: Vec<Series>,
}

pub(crate) fn render(report: &Report) -> String {
    let run = &report.run;
    let mut page = String::new();
    let title = format!("{} · {}", run.tool, run.urls[0]);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title>\n<style>{CSS}</style></head><body>\n<h1>{}</h1>\n<p class=\"sub\">{}</p>\n",
        escape(&title),
        escape(&title),
        escape(&subtitle(report)),
    );
    page.push_str(&table(report));
    let levels = &report.levels;
    if levels.len() > 1 {
        page.push_str(&chart_svg(&latency_vs_load(report)));
        page.push_str(&chart_svg(&throughput_vs_load(report)));
    }
    page.push_str(&chart_svg(&spectrum(report)));
    if report.run.mode == "rate" {
        page.push_str(
            "<p class=\"note\">Latency is measured from each request's scheduled send time \
             (corrected for coordinated omission); <i>service</i> is measured from its actual \
             send, as closed-loop tools do.</p>\n",
        );
    }
    page.push_str("</body></html>\n");
    page
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;\
max-width:800px;color:#222}h1{font-size:1.3em;margin-bottom:.2em}.sub{color:#666;margin-top:0}\
table{border-collapse:collapse;font-size:.9em;margin:1em 0}td,th{padding:.25em .7em;text-align:right;\
border-bottom:1px solid #eee}th{background:#f6f6f6}td:first-child,th:first-child{text-align:left}\
.bad{color:#c00;font-weight:600}svg{display:block;margin:1.5em 0}.note{color:#555;font-size:.9em}";

fn subtitle(report: &Report) -> String {
    let run = &report.run;
    let mut parts = vec![format!(
        "{} thread{}",
        run.threads,
        if run.threads == 1 { "" } else { "s" }
    )];
    parts.push(match run.mode.as_str() {
        "rate" => "constant rate".into(),
        _ if run.pipeline > 1 => format!("closed loop, pipeline {}", run.pipeline),
        _ => "closed loop".into(),
    });
    if run.sweep.is_none() {
        parts.push(format!("{} connections", run.connections));
    }
    if let Some(d) = run.duration_s {
        parts.push(format!("{d}s per level"));
    }
    if !run.keepalive {
        parts.push("new connection per request".into());
    }
    parts.join(" · ")
}

fn level_name(report: &Report, level: &Level) -> String {
    if level.label.is_empty() {
        match level.rate {
            Some(r) if report.run.mode == "rate" => format!("rate={}", group_f(r)),
            _ => format!("conns={}", level.connections),
        }
    } else {
        level.label.clone()
    }
}

fn table(report: &Report) -> String {
    let mut t = String::from(
        "<table><tr><th>level</th><th>req/s</th><th>errors</th><th>non-2xx</th>\
         <th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n",
    );
    for l in &report.levels {
        let p = &l.latency_us;
        let bad = |n: u64| {
            if n > 0 {
                format!("<td class=\"bad\">{}</td>", group(n))
            } else {
                "<td>0</td>".into()
            }
        };
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{}</td>{}{}",
            escape(&level_name(report, l)),
            group_f(l.rps),
            bad(l.errors.total),
            bad(l.non_2xx)
        );
        for v in [p.p50, p.p90, p.p99, p.p99_9, p.max] {
            let _ = write!(t, "<td>{}</td>", fmt_us(v as f64));
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

/// The x axis of the load charts: levels evenly spaced, labelled by their value.
fn load_axis(report: &Report) -> (Vec<(f64, String)>, String) {
    let ticks = report
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let label = match report.run.sweep.as_deref() {
                Some("rate") => group_f(l.rate.unwrap_or(0.0)),
                _ => l.connections.to_string(),
            };
            (i as f64, label)
        })
        .collect();
    let name = match report.run.sweep.as_deref() {
        Some("rate") => "target rate (req/s)",
        _ => "connections",
    };
    (ticks, name.to_string())
}

fn latency_vs_load(report: &Report) -> Chart {
    let (x_ticks, x_label) = load_axis(report);
    type Pick = fn(&Level) -> u64;
    let picks: [(&str, Pick); 5] = [
        ("p50", |l| l.latency_us.p50),
        ("p90", |l| l.latency_us.p90),
        ("p99", |l| l.latency_us.p99),
        ("p99.9", |l| l.latency_us.p99_9),
        ("max", |l| l.latency_us.max),
    ];
    let mut series: Vec<Series> = picks
        .iter()
        .enumerate()
        .map(|(i, (name, pick))| Series {
            name: name.to_string(),
            color: PALETTE[i],
            dashed: false,
            points: report
                .levels
                .iter()
                .enumerate()
                .filter(|(_, l)| l.latency_us.count > 0)
                .map(|(x, l)| (x as f64, pick(l) as f64))
                .collect(),
        })
        .collect();
    if report.levels.iter().any(|l| l.service_time_us.is_some()) {
        series.push(Series {
            name: "service p99".into(),
            color: PALETTE[2],
            dashed: true,
            points: report
                .levels
                .iter()
                .enumerate()
                .filter_map(|(x, l)| {
                    let s = l.service_time_us.as_ref()?;
                    (s.count > 0).then_some((x as f64, s.p99 as f64))
                })
                .collect(),
        });
    }
    let n = report.levels.len() as f64;
    Chart {
        title: "Latency percentiles against load".into(),
        x_label,
        y_label: "latency".into(),
        x_ticks,
        x_range: (-0.3, n - 0.7),
        y: YScale::LogMicros,
        series,
    }
}

fn throughput_vs_load(report: &Report) -> Chart {
    let (x_ticks, x_label) = load_axis(report);
    let mut series = vec![Series {
        name: "achieved".into(),
        color: PALETTE[0],
        dashed: false,
        points: report
            .levels
            .iter()
            .enumerate()
            .map(|(x, l)| (x as f64, l.rps))
            .collect(),
    }];
    if report.run.sweep.as_deref() == Some("rate") {
        series.push(Series {
            name: "target".into(),
            color: "#999999",
            dashed: true,
            points: report
                .levels
                .iter()
                .enumerate()
                .filter_map(|(x, l)| Some((x as f64, l.rate?)))
                .collect(),
        });
    }
    if report.levels.iter().any(|l| l.errors.total > 0) {
        series.push(Series {
            name: "errors/s".into(),
            color: PALETTE[1],
            dashed: false,
            points: report
                .levels
                .iter()
                .enumerate()
                .map(|(x, l)| (x as f64, l.errors.total as f64 / l.duration_s.max(1e-9)))
                .collect(),
        });
    }
    let n = report.levels.len() as f64;
    Chart {
        title: "Throughput against load".into(),
        x_label,
        y_label: "requests per second".into(),
        x_ticks,
        x_range: (-0.3, n - 0.7),
        y: YScale::Linear,
        series,
    }
}

/// x = log10(1 / (1 - p)): 0 at 0%, 1 at 90%, 2 at 99%, ...
fn spectrum(report: &Report) -> Chart {
    const LAST: f64 = 5.0;
    const MAX_AT: f64 = LAST + 0.6;
    let x_of = |pct: f64| {
        if pct >= 100.0 {
            MAX_AT
        } else {
            (1.0 / (1.0 - pct / 100.0)).log10().min(LAST)
        }
    };
    let series = report
        .levels
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.spectrum.is_empty())
        .map(|(i, l)| Series {
            name: level_name(report, l),
            color: PALETTE[i % PALETTE.len()],
            dashed: false,
            points: l
                .spectrum
                .iter()
                .map(|p| (x_of(p.percentile), p.latency_us as f64))
                .collect(),
        })
        .collect();
    let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"];
    let mut x_ticks: Vec<(f64, String)> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (i as f64, l.to_string()))
        .collect();
    x_ticks.push((MAX_AT, "max".into()));
    Chart {
        title: "Latency distribution (percentile spectrum)".into(),
        x_label: "percentile".into(),
        y_label: "latency".into(),
        x_ticks,
        x_range: (0.0, MAX_AT),
        y: YScale::LogMicros,
        series,
    }
}

fn chart_svg(chart: &Chart) -> String {
    let (ml, mr, mt, mb) = MARGIN;
    let (pw, ph) = (WIDTH - ml - mr, HEIGHT - mt - mb);
    let values = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1));
    let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">\
         <text x=\"{ml}\" y=\"22\" font-size=\"15\" font-weight=\"600\">{}</text>",
        escape(&chart.title)
    );
    if !lo.is_finite() {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"#888\">no data</text></svg>",
            ml + pw / 2.0 - 20.0,
            mt + ph / 2.0
        );
        return svg;
    }
    // y mapping and grid lines.
    let (y_axis, y_ticks) = match chart.y {
        YScale::LogMicros => {
            let lo_dec = lo.max(1.0).log10().floor();
            let hi_dec = hi.max(10.0).log10().ceil().max(lo_dec + 1.0);
            let ticks = (lo_dec as i32..=hi_dec as i32)
                .map(|d| (10f64.powi(d), fmt_us(10f64.powi(d))))
                .collect::<Vec<_>>();
            (YAxis::Log { lo_dec, hi_dec }, ticks)
        }
        YScale::Linear => {
            let top = nice_ceiling(hi.max(1.0));
            let ticks = (0..=5)
                .map(|i| {
                    let v = top * i as f64 / 5.0;
                    let label = if v.fract() == 0.0 {
                        group(v as u64)
                    } else {
                        format!("{v:.1}")
                    };
                    (v, label)
                })
                .collect::<Vec<_>>();
            (YAxis::Linear { top }, ticks)
        }
    };
    let y_of = |v: f64| mt + ph - y_axis.fraction(v) * ph;
    let (x0, x1) = chart.x_range;
    let x_of = |x: f64| ml + (x - x0) / (x1 - x0) * pw;

    svg.push_str("<g stroke=\"#e5e5e5\">");
    for (v, _) in &y_ticks {
        let y = y_of(*v);
        let _ = write!(
            svg,
            "<line x1=\"{ml}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>",
            ml + pw
        );
    }
    for (x, _) in &chart.x_ticks {
        let x = x_of(*x);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{mt}\" y2=\"{}\"/>",
            mt + ph
        );
    }
    svg.push_str("</g>");
    let _ = write!(
        svg,
        "<rect x=\"{ml}\" y=\"{mt}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>"
    );
    svg.push_str("<g fill=\"#444\">");
    for (v, label) in &y_ticks {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            ml - 6.0,
            y_of(*v) + 4.0,
            escape(label)
        );
    }
    for (x, label) in &chart.x_ticks {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x_of(*x),
            mt + ph + 16.0,
            escape(label)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        ml + pw / 2.0,
        HEIGHT - 14.0,
        escape(&chart.x_label),
        mt + ph / 2.0,
        escape(&chart.y_label)
    );
    svg.push_str("</g>");

    for (i, s) in chart.series.iter().enumerate() {
        if s.points.is_empty() {
            continue;
        }
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", x_of(x), y_of(y)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>",
            s.color,
            if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            },
            path.join(" ")
        );
        // Dots mark the measured points; on a dense line they would only blur it.
        let radius = if s.points.len() > 12 { 1.5 } else { 3.0 };
        for &(x, y) in &s.points {
            let value = match chart.y {
                YScale::LogMicros => fmt_us(y),
                YScale::Linear => group_f(y),
            };
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\" fill=\"{}\"><title>{}: {}</title></circle>",
                x_of(x),
                y_of(y),
                s.color,
                escape(&s.name),
                value
            );
        }
        // Legend, right of the plot.
        let ly = mt + 10.0 + i as f64 * 20.0;
        let lx = ml + pw + 16.0;
        let _ = write!(
            svg,
            "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{}\" stroke-width=\"2\"{}/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            lx + 22.0,
            s.color,
            if s.dashed {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            },
            lx + 28.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Where a value sits on the y axis, as a fraction of the plot height from the bottom.
enum YAxis {
    Log { lo_dec: f64, hi_dec: f64 },
    Linear { top: f64 },
}

impl YAxis {
    fn fraction(&self, v: f64) -> f64 {
        match *self {
            YAxis::Log { lo_dec, hi_dec } => (v.max(1.0).log10() - lo_dec) / (hi_dec - lo_dec),
            YAxis::Linear { top } => v / top,
        }
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k that is at least `v`.
fn nice_ceiling(v: f64) -> f64 {
    let base = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * base)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * base)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(1.2), 2.0);
        assert_eq!(nice_ceiling(2100.0), 2500.0);
        assert_eq!(nice_ceiling(7000.0), 10000.0);
    }

    #[test]
    fn escapes() {
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
