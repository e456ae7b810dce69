//! JSON Schema → IR.
pub mod matcher;
pub mod numbers;
