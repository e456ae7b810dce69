//! grammask-engine.
