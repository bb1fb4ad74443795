//! Charts of benchmark results, as SVG (plotters' SVG backend needs no fonts installed).

use plotters::prelude::*;

/// The gateway sweep: per number of concurrent clients, aggregate input GB/s and latency.
pub struct Sweep {
    pub clients: Vec<f64>,
    pub gbps: Vec<f64>,
    /// Seconds.
    pub p50: Vec<f64>,
    /// Seconds.
    pub p99: Vec<f64>,
}

/// Two panels side by side: throughput, and p50/p99 latency, against clients (log scale).
pub fn sweep_svg(s: &Sweep) -> String {
    // Plotters lays text out with the registered font (the workspace builds it with
    // ab_glyph for the TPC-DS report's PNGs); without one, labels would be dropped.
    sift_tpcds_data::font::register();
    let mut svg = String::new();
    // Drawing into a String cannot fail for I/O reasons; a plotting error leaves a partial
    // chart, which is still worth looking at, so errors are only reported.
    if let Err(e) = draw_sweep(s, &mut svg) {
        eprintln!("chart: {e}");
    }
    svg
}

fn draw_sweep<'a>(s: &Sweep, svg: &'a mut String) -> Result<(), Box<dyn std::error::Error + 'a>> {
    let root = SVGBackend::with_string(svg, (960, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(480);
    let max_clients = s.clients.iter().copied().fold(1.0, f64::max);
    let xs = || (1f64..max_clients.max(2.0)).log_scale();

    let top = s.gbps.iter().copied().fold(0.1, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&left)
        .caption("aggregate input throughput", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(xs(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("concurrent clients")
        .y_desc("GB/s of input")
        .draw()?;
    let points: Vec<(f64, f64)> = s
        .clients
        .iter()
        .copied()
        .zip(s.gbps.iter().copied())
        .collect();
    chart.draw_series(LineSeries::new(points.clone(), &BLUE))?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))?;

    let top = s.p99.iter().copied().fold(0.01, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&right)
        .caption("select latency", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(xs(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("concurrent clients")
        .y_desc("seconds")
        .draw()?;
    for (values, color, label) in [(&s.p50, &BLUE, "p50"), (&s.p99, &RED, "p99")] {
        let points: Vec<(f64, f64)> = s
            .clients
            .iter()
            .copied()
            .zip(values.iter().copied())
            .collect();
        chart
            .draw_series(LineSeries::new(points, color))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_chart_has_both_panels_and_every_point() {
        let svg = sweep_svg(&Sweep {
            clients: vec![1.0, 2.0, 4.0],
            gbps: vec![1.0, 1.8, 1.9],
            p50: vec![0.2, 0.2, 0.4],
            p99: vec![0.3, 0.3, 0.6],
        });
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("aggregate input throughput") && svg.contains("select latency"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("p99"));
    }
}
