//! grammask: grammar-constrained decoding.
pub use grammask_engine as engine;
pub use grammask_syntax as syntax;
pub use grammask_tokenset as tokenset;
