//! Summary statistics of timings.

/// Mean and percentiles of a sample, in the sample's unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarizes `values` (nearest-rank percentiles); all zero when empty.
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary { count: 0, mean: 0.0, p50: 0.0, p99: 0.0, p999: 0.0, max: 0.0 };
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let rank = |q: f64| {
            let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[i]
        };
        Summary {
            count: sorted.len(),
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: rank(0.5),
            p99: rank(0.99),
            p999: rank(0.999),
            max: sorted[sorted.len() - 1],
        }
    }

    /// As a JSON object with fields `mean`, `p50`, `p99`, `p999`, `max` (and `count`).
    pub fn to_json(&self) -> serde_json::Value {
        let r = |x: f64| (x * 10.0).round() / 10.0;
        serde_json::json!({
            "count": self.count, "mean": r(self.mean), "p50": r(self.p50),
            "p99": r(self.p99), "p999": r(self.p999), "max": r(self.max),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&v);
        assert_eq!((s.p50, s.p99, s.max), (50.0, 99.0, 100.0));
        assert!((s.mean - 50.5).abs() < 1e-9);
    }
}
