//! Memory written between two timed runs, so that each finds none of its code and data
//! in the caches, as a server's compile finds them after other work: the `POLLUTE_MB`
//! of the in-process TTFM examples.

/// A buffer of `POLLUTE_MB` MiB (from the environment; none when unset), written whole
/// at each [`CachePolluter::pollute`].
pub struct CachePolluter {
    scratch: Vec<u8>,
}

impl CachePolluter {
    /// The buffer `POLLUTE_MB` asks for.
    pub fn from_env() -> CachePolluter {
        let mb: usize = std::env::var("POLLUTE_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        CachePolluter { scratch: vec![0; mb << 20] }
    }

    /// Writes every byte of the buffer (nothing when it is empty).
    pub fn pollute(&mut self) {
        for (i, byte) in self.scratch.iter_mut().enumerate() {
            *byte = byte.wrapping_add(i as u8);
        }
        std::hint::black_box(&self.scratch);
    }
}
