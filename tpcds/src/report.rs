//! `report`: a run directory's results as Markdown, CSV, JSON and charts.
//!
//! The four charts are the figures of the Ceph S3 Select blog post, measured: speedup per
//! query (sorted, with the 1× line), bytes transferred per query and mode, total bytes over
//! the network per mode, and the gateway's CPU seconds per mode. Each is written as SVG and
//! PNG; the PNG's text uses an embedded DejaVu Sans Mono, so no system font is needed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// One row of `results.json`, as read back.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Row {
    pub query: String,
    pub mode: String,
    pub seconds: f64,
    pub bytes_received: u64,
    pub bytes_scanned: u64,
    pub rows: u64,
    pub checksum: String,
}

/// The files a report wrote.
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
}

const MODES: [&str; 4] = ["fetch", "pushdown", "dynamic", "auto"];
const COLORS: [RGBColor; 4] = [
    RGBColor(0x88, 0x88, 0x88),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
];

fn mode_color(mode: &str) -> RGBColor {
    MODES
        .iter()
        .position(|m| *m == mode)
        .map(|i| COLORS[i])
        .unwrap_or(BLACK)
}

/// Writes `report.md`, `report.csv`, `report.json` and the charts into `dir`.
pub fn report(dir: &Path) -> Result<Written> {
    let read = |name: &str| -> Result<String> {
        std::fs::read_to_string(dir.join(name)).map_err(|e| {
            Error::Invalid(format!(
                "{}: {e} (is {} the --out directory of `sift tpcds run`?)",
                dir.join(name).display(),
                dir.display()
            ))
        })
    };
    let rows: Vec<Row> = serde_json::from_str(&read("results.json")?)?;
    let summary: Value = serde_json::from_str(&read("summary.json")?)?;
    let mut written = Written::default();
    let modes: Vec<&str> = MODES
        .into_iter()
        .filter(|m| rows.iter().any(|r| r.mode == *m))
        .collect();
    let by_query = group(&rows);

    let md = dir.join("report.md");
    std::fs::write(&md, markdown(&summary, &by_query, &modes))?;
    written.files.push(md);
    let csv = dir.join("report.csv");
    std::fs::write(&csv, csv_text(&by_query))?;
    written.files.push(csv);
    let json = dir.join("report.json");
    let combined = serde_json::json!({ "summary": summary, "results": rows });
    std::fs::write(&json, serde_json::to_string_pretty(&combined)? + "\n")?;
    written.files.push(json);

    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts)?;
    let link = summary["link"].as_str().unwrap_or("").to_string();
    for mode in modes.iter().filter(|m| **m != "fetch") {
        let mut speedups: Vec<(String, f64)> = by_query
            .iter()
            .filter_map(|(q, m)| {
                let speedup = m.get("fetch")?.seconds / m.get(*mode)?.seconds.max(1e-9);
                Some((q.clone(), speedup))
            })
            .collect();
        if speedups.is_empty() {
            continue;
        }
        speedups.sort_by(|a, b| b.1.total_cmp(&a.1));
        let chart = Bars {
            title: format!("{mode} vs fetch: speedup per query ({link})"),
            y_label: "speedup (×)".into(),
            labels: speedups.iter().map(|(q, _)| q.clone()).collect(),
            series: vec![(
                mode.to_string(),
                mode_color(mode),
                speedups.iter().map(|s| s.1).collect(),
            )],
            reference_line: Some(1.0),
            log_scale: false,
        };
        written
            .files
            .extend(chart.write(&charts.join(format!("speedup-{mode}")))?);
    }
    let queries: Vec<String> = by_query.iter().map(|(q, _)| q.clone()).collect();
    let per_query = Bars {
        title: format!("Bytes received per query ({link})"),
        y_label: "MB received (log scale)".into(),
        labels: queries.clone(),
        series: modes
            .iter()
            .map(|mode| {
                let values = by_query
                    .iter()
                    .map(|(_, m)| m.get(*mode).map_or(0.0, |r| r.bytes_received as f64 / 1e6))
                    .collect();
                (mode.to_string(), mode_color(mode), values)
            })
            .collect(),
        reference_line: None,
        log_scale: true,
    };
    written
        .files
        .extend(per_query.write(&charts.join("bytes-per-query"))?);
    let totals = Bars {
        title: "Total bytes over the network".into(),
        y_label: "GB received".into(),
        labels: modes.iter().map(|m| m.to_string()).collect(),
        series: vec![(
            "received".into(),
            COLORS[1],
            modes
                .iter()
                .map(|m| {
                    summary["modes"][*m]["bytes_received"]
                        .as_f64()
                        .unwrap_or(0.0)
                        / 1e9
                })
                .collect(),
        )],
        reference_line: None,
        log_scale: false,
    };
    written
        .files
        .extend(totals.write(&charts.join("network-total"))?);
    let cpu: Vec<f64> = modes
        .iter()
        .map(|m| {
            summary["modes"][*m]["gateway_cpu_seconds"]
                .as_f64()
                .unwrap_or(0.0)
        })
        .collect();
    if cpu.iter().any(|c| *c > 0.0) {
        let chart = Bars {
            title: "Gateway CPU time per mode".into(),
            y_label: "CPU seconds".into(),
            labels: modes.iter().map(|m| m.to_string()).collect(),
            series: vec![("gateway CPU".into(), COLORS[2], cpu)],
            reference_line: None,
            log_scale: false,
        };
        written
            .files
            .extend(chart.write(&charts.join("gateway-cpu"))?);
    }
    Ok(written)
}

/// query → mode → row, queries in numeric order (q2 before q10).
type ByQuery = Vec<(String, BTreeMap<String, Row>)>;

fn group(rows: &[Row]) -> ByQuery {
    let mut out: BTreeMap<u32, (String, BTreeMap<String, Row>)> = BTreeMap::new();
    for r in rows {
        let number = r
            .query
            .trim_start_matches('q')
            .parse::<u32>()
            .unwrap_or(u32::MAX);
        out.entry(number)
            .or_insert_with(|| (r.query.clone(), BTreeMap::new()))
            .1
            .insert(r.mode.clone(), r.clone());
    }
    out.into_values().collect()
}

fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1e6)
}

/// Each endpoint's requests and bytes per mode, for a run over several endpoints, and the
/// requests sent again after a busy or failed one.
fn endpoints_table(out: &mut String, summary: &Value, modes: &[&str]) {
    let per_mode = |mode: &str| summary["modes"][mode]["endpoints"].as_array().cloned();
    if let Some(first) = modes.first().and_then(|m| per_mode(m)) {
        let _ = write!(out, "| endpoint |");
        for mode in modes {
            let _ = write!(out, " {mode} requests | {mode} MB |");
        }
        let _ = writeln!(out, "\n|---|{}", "---:|".repeat(modes.len() * 2));
        for (i, endpoint) in first.iter().enumerate() {
            let _ = write!(out, "| {} |", endpoint["endpoint"].as_str().unwrap_or("?"));
            for mode in modes {
                let e = per_mode(mode).and_then(|list| list.get(i).cloned());
                let e = e.unwrap_or(Value::Null);
                let _ = write!(
                    out,
                    " {} | {} |",
                    e["requests"].as_u64().unwrap_or(0),
                    mb(e["bytes_received"].as_f64().unwrap_or(0.0))
                );
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out);
    }
    let retries: Vec<String> = modes
        .iter()
        .filter_map(|m| {
            let n = summary["modes"][*m]["retries"].as_u64()?;
            (n > 0).then(|| format!("{n} in {m} mode"))
        })
        .collect();
    if !retries.is_empty() {
        let _ = writeln!(
            out,
            "Requests sent again after a busy or failed endpoint: {}.\n",
            retries.join(", ")
        );
    }
}

/// How the pushed-down scans' answers came, as `, Arrow answers (LZ4)`; nothing for a
/// summary written before Sift asked for Arrow.
fn answers(summary: &Value) -> &'static str {
    match (
        summary["select_behaviour"]["arrow_results"].as_bool(),
        summary["answers_compressed"].as_bool(),
    ) {
        (Some(true), Some(true)) => ", Arrow answers (LZ4)",
        (Some(true), _) => ", Arrow answers",
        (Some(false), _) => ", CSV answers",
        (None, _) => "",
    }
}

fn markdown(summary: &Value, by_query: &ByQuery, modes: &[&str]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# TPC-DS on S3: fetch vs S3 Select pushdown\n");
    let _ = writeln!(
        out,
        "Scale factor {}, endpoint {}, {}{}, median of {} iteration(s).\n",
        summary["scale_factor"],
        summary["endpoint"].as_str().unwrap_or("?"),
        summary["link"].as_str().unwrap_or("?"),
        answers(summary),
        summary["iterations"]
    );
    let _ = writeln!(
        out,
        "| mode | queries | time (s) | received (MB) | scanned (MB) | gateway CPU (s) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for mode in modes {
        let m = &summary["modes"][*mode];
        let _ = writeln!(
            out,
            "| {mode} | {} | {:.2} | {} | {} | {} |",
            m["queries"],
            m["seconds"].as_f64().unwrap_or(0.0),
            mb(m["bytes_received"].as_f64().unwrap_or(0.0)),
            mb(m["bytes_scanned"].as_f64().unwrap_or(0.0)),
            m["gateway_cpu_seconds"]
                .as_f64()
                .map_or("–".into(), |c| format!("{c:.1}"))
        );
    }
    let _ = writeln!(out);
    endpoints_table(&mut out, summary, modes);
    for mode in modes.iter().filter(|m| **m != "fetch") {
        let c = &summary["against_fetch"][*mode];
        if c.is_null() {
            continue;
        }
        let _ = writeln!(
            out,
            "**{mode} vs fetch**: geometric-mean speedup {:.2}×, max {:.2}× ({}), min {:.2}×, bytes received {}.\n",
            c["geomean_speedup"].as_f64().unwrap_or(0.0),
            c["max_speedup"].as_f64().unwrap_or(0.0),
            c["max_speedup_query"].as_str().unwrap_or("?"),
            c["min_speedup"].as_f64().unwrap_or(0.0),
            bytes_change(c["bytes_reduction"].as_f64().unwrap_or(0.0))
        );
    }
    if let Some(auto) = modes.iter().find(|m| **m == "auto") {
        let m = &summary["modes"][*auto];
        let _ = writeln!(
            out,
            "**auto's choices**: {} scans pushed down, {} fetched by choice.\n",
            m["scans_pushed_by_choice"].as_u64().unwrap_or(0),
            m["scans_fetched_by_choice"].as_u64().unwrap_or(0)
        );
    }
    let _ = write!(out, "| query |");
    for mode in modes {
        let _ = write!(out, " {mode} s | {mode} MB |");
    }
    for mode in modes.iter().filter(|m| **m != "fetch") {
        let _ = write!(out, " {mode} speedup |");
    }
    let _ = writeln!(out, " rows |");
    let columns = modes.len() * 2 + modes.iter().filter(|m| **m != "fetch").count() + 1;
    let _ = writeln!(out, "|---|{}", "---:|".repeat(columns));
    for (query, by_mode) in by_query {
        let _ = write!(out, "| {query} |");
        for mode in modes {
            match by_mode.get(*mode) {
                Some(r) => {
                    let _ = write!(out, " {:.3} | {} |", r.seconds, mb(r.bytes_received as f64));
                }
                None => out.push_str(" – | – |"),
            }
        }
        for mode in modes.iter().filter(|m| **m != "fetch") {
            match (by_mode.get("fetch"), by_mode.get(*mode)) {
                (Some(f), Some(r)) => {
                    let _ = write!(out, " {:.2}× |", f.seconds / r.seconds.max(1e-9));
                }
                _ => out.push_str(" – |"),
            }
        }
        let rows = by_mode.values().next().map_or(0, |r| r.rows);
        let _ = writeln!(out, " {rows} |");
    }
    if let Some(failed) = summary["failed_statements"].as_array() {
        if !failed.is_empty() {
            let _ = writeln!(
                out,
                "\nStatements that failed (the same way in every mode):\n"
            );
            for f in failed.iter().filter_map(Value::as_str) {
                let _ = writeln!(out, "- {f}");
            }
        }
    }
    if let Some(empty) = summary["empty_statements"].as_array() {
        if !empty.is_empty() {
            let names: Vec<&str> = empty.iter().filter_map(Value::as_str).collect();
            let _ = writeln!(
                out,
                "\nStatements with no rows at this scale: {}.",
                names.join(", ")
            );
        }
    }
    // Older results (before the join trees were compared) have no such field: say nothing.
    if let Some(different) = summary["differently_planned"].as_array() {
        if different.is_empty() {
            let _ = writeln!(
                out,
                "\nEvery statement had the same join tree in every mode."
            );
        } else {
            let names: Vec<&str> = different.iter().filter_map(Value::as_str).collect();
            let _ = writeln!(
                out,
                "\nJoined in another order than in the first mode: {}.",
                names.join(", ")
            );
        }
    }
    out
}

fn csv_text(by_query: &ByQuery) -> String {
    let mut out = String::from(
        "query,mode,seconds,bytes_received,bytes_scanned,rows,checksum,speedup_vs_fetch\n",
    );
    for (query, by_mode) in by_query {
        for mode in MODES {
            let Some(r) = by_mode.get(mode) else { continue };
            let speedup = by_mode
                .get("fetch")
                .map(|f| format!("{:.4}", f.seconds / r.seconds.max(1e-9)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{query},{mode},{:.6},{},{},{},{},{speedup}",
                r.seconds, r.bytes_received, r.bytes_scanned, r.rows, r.checksum
            );
        }
    }
    out
}

/// A bar chart: one bar per label and series, grouped by label.
struct Bars {
    title: String,
    y_label: String,
    labels: Vec<String>,
    series: Vec<(String, RGBColor, Vec<f64>)>,
    reference_line: Option<f64>,
    /// Draw the values on a logarithmic axis (bars of several orders of magnitude: one
    /// query's gigabytes would otherwise flatten every other bar).
    log_scale: bool,
}

impl Bars {
    fn write(&self, stem: &Path) -> Result<Vec<PathBuf>> {
        sift_tpcds_data::font::register();
        let width = (200 + self.labels.len() as u32 * 14 * self.series.len().max(1) as u32)
            .clamp(640, 2400);
        let size = (width, 480);
        let svg = stem.with_extension("svg");
        let png = stem.with_extension("png");
        self.draw(SVGBackend::new(&svg, size).into_drawing_area())
            .map_err(|e| Error::Invalid(format!("drawing {}: {e}", svg.display())))?;
        self.draw(BitMapBackend::new(&png, size).into_drawing_area())
            .map_err(|e| Error::Invalid(format!("drawing {}: {e}", png.display())))?;
        Ok(vec![svg, png])
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let max = self
            .series
            .iter()
            .flat_map(|(_, _, v)| v.iter().copied())
            .chain(self.reference_line)
            .fold(0.0f64, f64::max);
        // On a log scale the axis holds log10 of the values, from a floor a thousandth of
        // the smallest positive value (so the smallest bar still shows), and its labels
        // name the values themselves.
        let floor = self
            .series
            .iter()
            .flat_map(|(_, _, v)| v.iter().copied())
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let floor = if floor.is_finite() {
            floor / 1000.0
        } else {
            1e-3
        };
        let axis = |v: f64| {
            if self.log_scale {
                v.max(floor).log10()
            } else {
                v
            }
        };
        let bottom = if self.log_scale { axis(floor) } else { 0.0 };
        let top = if max > 0.0 {
            bottom + (axis(max) - bottom) * 1.1
        } else {
            bottom + 1.0
        };
        let n = self.labels.len().max(1);
        let groups = self.series.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(60)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, bottom..top)
            .map_err(err)?;
        // Query labels are drawn by hand under each bar group: plotters' own x labels sit at
        // evenly spaced tick values that drift off the bar centres when n is not a round
        // number, and then name the wrong bar or none.
        let value_label = |y: &f64| {
            if self.log_scale {
                let v = 10f64.powf(*y);
                if v >= 1.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1e}")
                }
            } else {
                format!("{y}")
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(&self.y_label)
            .y_label_formatter(&value_label)
            .draw()
            .map_err(err)?;
        let label_font = ("sans-serif", 10)
            .into_font()
            .transform(FontTransform::Rotate90);
        for (i, label) in self.labels.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, bottom));
            root.draw(&Text::new(
                label.clone(),
                (x + 5, y + 6),
                label_font.clone(),
            ))
            .map_err(err)?;
        }
        let width = 0.8 / groups as f64;
        for (g, (name, color, values)) in self.series.iter().enumerate() {
            let color = *color;
            chart
                .draw_series(values.iter().enumerate().map(|(i, v)| {
                    let x0 = i as f64 + 0.1 + g as f64 * width;
                    Rectangle::new([(x0, bottom), (x0 + width, axis(*v))], color.filled())
                }))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        if let Some(line) = self.reference_line {
            chart
                .draw_series(LineSeries::new(
                    [(0.0, axis(line)), (n as f64, axis(line))],
                    BLACK.stroke_width(1),
                ))
                .map_err(err)?
                .label(format!("{line}×"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 10, y)], BLACK));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
        Ok(())
    }
}

/// A mode's bytes received against fetch's, from its reduction (0.9: a tenth of fetch's):
/// `-90.0%`, or `+12.5%` for a mode that received more.
pub fn bytes_change(reduction: f64) -> String {
    match reduction >= 0.0 {
        true => format!("-{:.1}%", reduction * 100.0),
        false => format!("+{:.1}%", -reduction * 100.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_that_received_more_shows_a_plus() {
        assert_eq!(bytes_change(0.9), "-90.0%");
        assert_eq!(bytes_change(-1.534), "+153.4%");
    }

    #[test]
    fn queries_are_ordered_numerically() {
        let row = |q: &str, mode: &str| Row {
            query: q.into(),
            mode: mode.into(),
            seconds: 1.0,
            bytes_received: 1,
            bytes_scanned: 1,
            rows: 1,
            checksum: String::new(),
        };
        let grouped = group(&[
            row("q10", "fetch"),
            row("q2", "fetch"),
            row("q2", "dynamic"),
        ]);
        let names: Vec<&str> = grouped.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(names, ["q2", "q10"]);
        assert_eq!(grouped[0].1.len(), 2);
    }

    #[test]
    fn a_report_is_written_from_a_run_directory() {
        let dir = std::env::temp_dir().join(format!("sift-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = serde_json::json!([
            {"query": "q1", "mode": "fetch", "seconds": 2.0, "bytes_received": 1000, "bytes_scanned": 1000, "rows": 3, "checksum": "a"},
            {"query": "q1", "mode": "pushdown", "seconds": 0.5, "bytes_received": 100, "bytes_scanned": 1000, "rows": 3, "checksum": "a"}
        ]);
        let summary = serde_json::json!({
            "scale_factor": 1.0, "endpoint": "http://x", "link": "1 Gbit/s emulated link", "iterations": 1,
            "modes": {"fetch": {"queries": 1, "seconds": 2.0, "bytes_received": 1000, "bytes_scanned": 1000, "gateway_cpu_seconds": 1.5,
                                "retries": 2, "endpoints": [{"endpoint": "http://x", "requests": 3, "bytes_received": 600},
                                                            {"endpoint": "http://y", "requests": 2, "bytes_received": 2400000}]},
                      "pushdown": {"queries": 1, "seconds": 0.5, "bytes_received": 100, "bytes_scanned": 1000, "gateway_cpu_seconds": 2.5,
                                   "endpoints": [{"endpoint": "http://x", "requests": 1, "bytes_received": 60},
                                                 {"endpoint": "http://y", "requests": 4, "bytes_received": 40}]}},
            "against_fetch": {"pushdown": {"geomean_speedup": 4.0, "max_speedup": 4.0, "max_speedup_query": "q1", "min_speedup": 4.0, "bytes_reduction": 0.9}},
            "empty_statements": [],
            "select_behaviour": {"arrow_results": true}, "answers_compressed": true
        });
        std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        let written = report(&dir).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("geometric-mean speedup 4.00×"), "{md}");
        assert!(
            md.contains("1 Gbit/s emulated link, Arrow answers (LZ4), median"),
            "{md}"
        );
        assert!(md.contains("| http://y | 2 | 2.4 | 4 | 0.0 |"), "{md}");
        assert!(
            md.contains("busy or failed endpoint: 2 in fetch mode."),
            "{md}"
        );
        assert!(
            md.contains("| q1 | 2.000 | 0.0 | 0.500 | 0.0 | 4.00× | 3 |"),
            "{md}"
        );
        for chart in [
            "speedup-pushdown",
            "bytes-per-query",
            "network-total",
            "gateway-cpu",
        ] {
            for ext in ["svg", "png"] {
                let path = dir.join("charts").join(format!("{chart}.{ext}"));
                assert!(
                    written.files.contains(&path),
                    "{} not written",
                    path.display()
                );
                assert!(std::fs::metadata(&path).unwrap().len() > 1000);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
