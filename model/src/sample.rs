//! Sampling: greedy at temperature 0, else temperature and top-p (nucleus) with a seeded
//! generator, so that a run is reproducible.

/// SplitMix64: a tiny seeded generator, good enough for sampling.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How the next token is chosen from the logits.
#[derive(Clone, Debug)]
pub struct Sampler {
    temperature: f32,
    top_p: f32,
    rng: Rng,
}

impl Sampler {
    /// `temperature <= 0` is greedy; otherwise the logits are divided by the temperature
    /// and the token is drawn from the smallest set of most likely tokens whose
    /// probabilities add up to `top_p` (1 keeps them all).
    pub fn new(temperature: f32, top_p: f32, seed: u64) -> Sampler {
        Sampler { temperature, top_p: top_p.clamp(f32::MIN_POSITIVE, 1.0), rng: Rng::new(seed) }
    }

    /// Whether this sampler is greedy.
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0
    }

    /// The chosen token id; `None` when every logit is minus infinity (or NaN).
    pub fn sample(&mut self, logits: &[f32]) -> Option<u32> {
        if self.is_greedy() {
            return argmax(logits);
        }
        let max =
            logits.iter().copied().filter(|l| l.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return None;
        }
        let mut probs: Vec<(u32, f64)> = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(i, &l)| (i as u32, (((l - max) / self.temperature) as f64).exp()))
            .filter(|&(_, p)| p > 0.0)
            .collect();
        probs.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let total: f64 = probs.iter().map(|p| p.1).sum();
        let mut kept = 0.0;
        let mut cut = probs.len();
        for (i, p) in probs.iter().enumerate() {
            kept += p.1;
            if kept >= self.top_p as f64 * total {
                cut = i + 1;
                break;
            }
        }
        probs.truncate(cut);
        let mut r = self.rng.next_f64() * probs.iter().map(|p| p.1).sum::<f64>();
        for &(id, p) in &probs {
            if r < p {
                return Some(id);
            }
            r -= p;
        }
        probs.last().map(|p| p.0)
    }
}

/// The id of the largest finite logit (the lowest id among equals).
pub fn argmax(logits: &[f32]) -> Option<u32> {
    let mut best: Option<(u32, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_finite() && best.is_none_or(|(_, b)| l > b) {
            best = Some((i as u32, l));
        }
    }
    best.map(|b| b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_largest_allowed() {
        let mut s = Sampler::new(0.0, 1.0, 0);
        assert_eq!(s.sample(&[1.0, f32::NEG_INFINITY, 3.0, 2.0]), Some(2));
        assert_eq!(s.sample(&[f32::NEG_INFINITY; 3]), None);
    }

    #[test]
    fn seeded_sampling_is_reproducible_and_respects_the_mask() {
        let logits = [0.5, f32::NEG_INFINITY, 0.4, 0.3];
        let draw = |seed| {
            let mut s = Sampler::new(1.0, 1.0, seed);
            (0..50).map(|_| s.sample(&logits).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(draw(7).iter().all(|&t| t != 1));
        // top-p small enough keeps only the most likely token.
        let mut s = Sampler::new(1.0, 0.01, 3);
        assert!((0..20).all(|_| s.sample(&logits) == Some(0)));
    }
}
