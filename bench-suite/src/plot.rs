//! `grammask-bench plot RESULT.json [--extra OTHER.json] --out steps.svg`: the CDF of the
//! per-step mask time of every engine (the `mask_cdf` quantiles of each entry of
//! `engines`), time on a log axis.

use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One curve: the engine's name (with its step count) and its (time µs, fraction) points.
type Curve = (String, Vec<(f64, f64)>);

fn curves_of(path: &Path) -> Result<Vec<Curve>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let engines = v["engines"]
        .as_object()
        .ok_or_else(|| format!("{}: no `engines` object", path.display()))?;
    let mut out = Vec::new();
    for (name, e) in engines {
        let points: Vec<(f64, f64)> = e["mask_cdf"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p[1].as_f64()?.max(0.01), p[0].as_f64()?)))
            .collect();
        if !points.is_empty() {
            let steps = e["mask_us"]["count"].as_u64().unwrap_or(0);
            out.push((format!("{name} ({steps} steps)"), points));
        }
    }
    Ok(out)
}

/// Draws the CDFs of `result` and `extra` into `out` (SVG).
pub fn run(result: &Path, extra: &[PathBuf], out: &Path) -> Result<(), String> {
    let mut curves = curves_of(result)?;
    for p in extra {
        curves.extend(curves_of(p)?);
    }
    if curves.is_empty() {
        return Err("no engine has a `mask_cdf`".to_string());
    }
    let lo = curves.iter().flat_map(|c| c.1.iter().map(|p| p.0)).fold(f64::MAX, f64::min);
    let hi = curves.iter().flat_map(|c| c.1.iter().map(|p| p.0)).fold(0.0, f64::max);
    let (lo, hi) = (lo.max(0.01) / 1.5, hi * 1.5);
    let root = SVGBackend::new(out, (960, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Mask time per step (CDF)", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("µs per mask (log scale)")
        .y_desc("fraction of steps")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, points)) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // A step function: each quantile holds until the next one.
        let mut line = Vec::with_capacity(points.len() * 2);
        for (j, &(x, y)) in points.iter().enumerate() {
            if j > 0 {
                line.push((x, points[j - 1].1));
            }
            line.push((x, y));
        }
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    finish(&mut chart, &root, SeriesLabelPosition::LowerRight)
}

/// Draws `chart`'s legend at `position` on a light box and writes the file of `root`.
pub(crate) fn finish<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
