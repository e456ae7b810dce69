//! grammask-bench: benchmarks and corpus runners for grammask.
