//! `grammask-bench plot-ttfm DETAILS.jsonl --out ttfm.svg [--engines A,B]`: cold time to
//! first mask against schema size (log-log scatter, one colour per engine, with each
//! engine's median per doubling of size), over the schemas every listed engine compiled,
//! and a markdown table on stdout of each engine's TTFM percentiles over those schemas
//! with the ratios grammask / other.
//!
//! The input is the JSONL of `maskbench --vocab V --details FILE`: one line per (schema,
//! engine) answer with `file`, `engine`, `schema_bytes`, `ok` and, when `ok`, `ttfm_us`.

use crate::details::{answers, Answer};
use grammask_bench::stats::Summary;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Fewest schemas in a size bucket for its median to be drawn.
const MIN_BUCKET: usize = 3;

/// One schema every engine compiled.
#[derive(Clone, Debug, PartialEq)]
struct Schema {
    /// The MaskBench file's name.
    file: String,
    /// Length of the schema's JSON.
    bytes: usize,
    /// Cold TTFM of each engine (in the order of [`Common::engines`]), µs.
    ttfm_us: Vec<f64>,
}

/// The schemas every engine compiled, in file order.
#[derive(Clone, Debug, PartialEq)]
struct Common {
    /// The engines compared, grammask first when present.
    engines: Vec<String>,
    /// The schemas all of them compiled.
    schemas: Vec<Schema>,
}

impl Common {
    /// The cold TTFMs of engine `e`, µs, one per common schema.
    fn ttfm_of(&self, e: usize) -> Vec<f64> {
        self.schemas.iter().map(|s| s.ttfm_us[e]).collect()
    }
}

/// Reads the details lines of `text` and keeps the schemas that every engine of `engines`
/// compiled (`ok` with a `ttfm_us`); with no engines, every engine of the file (grammask
/// first, then in order of appearance). A (file, engine) seen twice keeps its last line.
fn common_schemas(text: &str, engines: &[String]) -> Result<Common, String> {
    let mut names: Vec<String> = engines.to_vec();
    let mut seen: BTreeMap<String, (usize, BTreeMap<String, f64>)> = BTreeMap::new();
    for Answer { line, file, engine, value: v } in answers(text)? {
        if engines.is_empty() && !names.contains(&engine) {
            names.push(engine.clone());
        }
        let ttfm = v["ttfm_us"].as_f64().filter(|_| v["ok"].as_bool() == Some(true));
        let Some(ttfm) = ttfm else { continue };
        let bytes = v["schema_bytes"].as_u64().ok_or_else(|| {
            format!(
                "line {line}: no `schema_bytes` (details written by an older grammask-bench: \
                 run maskbench --details again)"
            )
        })?;
        let entry = seen.entry(file).or_insert_with(|| (bytes as usize, BTreeMap::new()));
        entry.1.insert(engine, ttfm);
    }
    names.sort_by_key(|e| e != "grammask");
    if names.is_empty() {
        return Err("no engine in the details".to_string());
    }
    let schemas = seen
        .into_iter()
        .filter_map(|(file, (bytes, by_engine))| {
            let ttfm_us: Option<Vec<f64>> =
                names.iter().map(|n| by_engine.get(n).copied()).collect();
            Some(Schema { file, bytes, ttfm_us: ttfm_us? })
        })
        .collect();
    Ok(Common { engines: names, schemas })
}

/// Each engine's TTFM summary over the common schemas, µs.
fn summaries(common: &Common) -> Vec<Summary> {
    (0..common.engines.len()).map(|e| Summary::of(&common.ttfm_of(e))).collect()
}

/// The figures of one table row: p50, mean, p99, p99.9, max.
fn row_figures(s: &Summary) -> [f64; 5] {
    [s.p50, s.mean, s.p99, s.p999, s.max]
}

/// The markdown table: per engine its TTFM p50, mean, p99, p99.9 and max over the common
/// schemas (ms), then grammask / other for each other engine.
fn table(common: &Common) -> String {
    let sums = summaries(common);
    let n = common.schemas.len();
    let mut out = String::new();
    let _ = writeln!(out, "| cold TTFM (ms) | schemas | p50 | mean | p99 | p99.9 | max |");
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|");
    for (name, s) in common.engines.iter().zip(&sums) {
        let cells: Vec<String> = row_figures(s).iter().map(|us| format_ms(us / 1000.0)).collect();
        let _ = writeln!(out, "| {name} | {n} | {} |", cells.join(" | "));
    }
    if let Some(g) = common.engines.iter().position(|e| e == "grammask") {
        for (p, peer) in common.engines.iter().enumerate().filter(|&(p, _)| p != g) {
            let cells: Vec<String> = row_figures(&sums[g])
                .iter()
                .zip(row_figures(&sums[p]))
                .map(|(a, b)| if b > 0.0 { format!("{:.2}×", a / b) } else { "-".to_string() })
                .collect();
            let _ = writeln!(out, "| grammask / {peer} | {n} | {} |", cells.join(" | "));
        }
    }
    out
}

/// A time in ms, with fewer decimals as it grows.
fn format_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// A log axis label: no trailing zeros.
fn axis_label(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The median of `values` (the lower one of an even count); `None` when empty.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len().saturating_sub(1) / 2).copied()
}

/// Engine `e`'s median TTFM (ms) per bucket of schema sizes doubling in size, at the
/// bucket's geometric centre (bytes); buckets with fewer than [`MIN_BUCKET`] schemas are
/// left out.
fn bucket_medians(common: &Common, e: usize) -> Vec<(f64, f64)> {
    let mut buckets: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for s in &common.schemas {
        buckets.entry(s.bytes.max(1).ilog2()).or_default().push(s.ttfm_us[e] / 1000.0);
    }
    buckets
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_BUCKET)
        .filter_map(|(k, mut v)| Some((2f64.powf(f64::from(k) + 0.5), median(&mut v)?)))
        .collect()
}

/// Reads `details`, prints the table and draws the plot into `out` (SVG).
pub fn run(details: &Path, engines: &[String], out: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(details).map_err(|e| format!("{}: {e}", details.display()))?;
    let common =
        common_schemas(&text, engines).map_err(|e| format!("{}: {e}", details.display()))?;
    if common.schemas.is_empty() {
        return Err(format!(
            "{}: no schema that every engine ({}) compiled",
            details.display(),
            common.engines.join(", ")
        ));
    }
    print!("{}", table(&common));
    draw(&common, out)
}

/// Draws the scatter and the bucket medians of every engine into `out` (SVG).
fn draw(common: &Common, out: &Path) -> Result<(), String> {
    let n = common.schemas.len();
    let xs = common.schemas.iter().map(|s| s.bytes.max(1) as f64);
    let ys = common.schemas.iter().flat_map(|s| s.ttfm_us.iter().map(|us| us / 1000.0));
    let (x_lo, x_hi) = xs.fold((f64::MAX, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (y_lo, y_hi) = ys.fold((f64::MAX, 0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let floor = 1e-3;
    let (y_lo, y_hi) = (y_lo.max(floor) / 1.5, y_hi.max(floor) * 1.5);
    let root = SVGBackend::new(out, (960, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Cold TTFM against schema size ({n} schemas all engines compiled)"),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x_lo / 1.5..x_hi * 1.5).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("schema size, bytes (log scale)")
        .y_desc("cold TTFM, ms (log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| axis_label(*y))
        .draw()
        .map_err(|e| err(&e))?;
    for (e, name) in common.engines.iter().enumerate() {
        let color = Palette99::pick(e).to_rgba();
        let dots = common
            .schemas
            .iter()
            .map(|s| (s.bytes.max(1) as f64, (s.ttfm_us[e] / 1000.0).max(floor)));
        chart
            .draw_series(dots.map(|p| Circle::new(p, 2, color.mix(0.45).filled())))
            .map_err(|e| err(&e))?
            .label(format!("{name} ({n} schemas)"))
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], color.stroke_width(2))
                    + Circle::new((10, 0), 3, color.filled())
            });
    }
    // The medians on top of every cloud, so no engine's dots hide another's line.
    for e in 0..common.engines.len() {
        let color = Palette99::pick(e).to_rgba();
        let line = bucket_medians(common, e);
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .draw_series(LineSeries::new(std::iter::empty(), BLACK.stroke_width(2)))
        .map_err(|e| err(&e))?
        .label("line: median per doubling of size")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    crate::plot::finish(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: &str = r#"
{"file":"a.json","engine":"grammask","schema_bytes":100,"ok":true,"ttfm_us":1000.0}
{"file":"a.json","engine":"llguidance","schema_bytes":100,"ok":true,"ttfm_us":4000.0}
{"file":"b.json","engine":"grammask","schema_bytes":200,"ok":true,"ttfm_us":2000.0}
{"file":"b.json","engine":"llguidance","schema_bytes":200,"ok":false,"error":"refused"}
{"file":"c.json","engine":"llguidance","schema_bytes":300,"ok":true,"ttfm_us":500.0}
{"file":"c.json","engine":"grammask","schema_bytes":300,"ok":false,"error":"timeout"}
{"file":"d.json","engine":"llguidance","schema_bytes":5000,"ok":true,"ttfm_us":2000.0}
{"file":"d.json","engine":"grammask","schema_bytes":5000,"ok":true,"ttfm_us":3000.0}
"#;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn keeps_the_schemas_every_engine_compiled() {
        let common = common_schemas(LINES, &[]).expect("parses");
        assert_eq!(common.engines, names(&["grammask", "llguidance"]));
        let files: Vec<&str> = common.schemas.iter().map(|s| s.file.as_str()).collect();
        assert_eq!(files, ["a.json", "d.json"]);
        assert_eq!(common.schemas[1].bytes, 5000);
        assert_eq!(common.schemas[1].ttfm_us, [3000.0, 2000.0]);
        // One engine alone: every schema it compiled.
        let alone = common_schemas(LINES, &names(&["grammask"])).expect("parses");
        assert_eq!(alone.schemas.len(), 3);
    }

    #[test]
    fn table_figures_and_ratios() {
        let common = common_schemas(LINES, &names(&["grammask", "llguidance"])).expect("parses");
        let sums = summaries(&common);
        assert_eq!((sums[0].p50, sums[0].mean, sums[0].max), (1000.0, 2000.0, 3000.0));
        assert_eq!((sums[1].p50, sums[1].mean, sums[1].max), (2000.0, 3000.0, 4000.0));
        let table = table(&common);
        assert!(table.contains("| grammask | 2 | 1.00 | 2.00 | 3.00 | 3.00 | 3.00 |"), "{table}");
        assert!(table.contains("| llguidance | 2 | 2.00 | 3.00 | 4.00 | 4.00 | 4.00 |"), "{table}");
        assert!(
            table.contains("| grammask / llguidance | 2 | 0.50× | 0.67× | 0.75× | 0.75× | 0.75× |"),
            "{table}"
        );
    }

    #[test]
    fn medians_per_doubling_of_size() {
        let line = |file: &str, bytes: usize, us: f64| {
            format!(
                r#"{{"file":"{file}","engine":"grammask","schema_bytes":{bytes},"ok":true,"ttfm_us":{us}}}"#
            )
        };
        let text = [
            line("a", 64, 1000.0),
            line("b", 100, 3000.0),
            line("c", 127, 2000.0),
            line("d", 128, 9000.0),
        ]
        .join("\n");
        let common = common_schemas(&text, &[]).expect("parses");
        let medians = bucket_medians(&common, 0);
        assert_eq!(medians.len(), 1, "the bucket of one schema is left out");
        assert!((medians[0].0 - 2f64.powf(6.5)).abs() < 1e-9);
        assert_eq!(medians[0].1, 2.0);
    }

    #[test]
    fn older_details_without_sizes_are_refused() {
        let old = r#"{"file":"a","engine":"grammask","ok":true,"ttfm_us":1.0}"#;
        assert!(common_schemas(old, &[]).unwrap_err().contains("schema_bytes"));
    }
}
