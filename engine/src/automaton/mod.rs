//! Per-rule byte automata.
//!
//! - [`nfa`]: Thompson construction from a lowered rule body.
//! - [`dfa`]: subset construction over byte classes, rule calls and token sets;
//!   Hopcroft minimization; NFA states that cannot finish are left out of every state set.
//!
//! A PDA position is a rule with a state of that rule's [`Dfa`]; the matcher keeps the
//! return positions on persistent stacks.

pub(crate) mod dfa;
pub(crate) mod nfa;

pub use dfa::Dfa;
