//! The compile time budget ([`crate::Limits::max_compile_time`]).
//!
//! Compilation checks its [`Deadline`] cooperatively: between passes, inside the passes
//! whose cost can grow faster than the grammar (left-recursion elimination), every few
//! hundred states of subset construction, every few thousand splitters of minimization,
//! after the productivity check, and before each position of the mask cache's eager precompute.
//! A compile past its budget stops at the next check with
//! [`CompileError::Limit`] named `compile_time`; the work between two checks is bounded,
//! so the overshoot is small.

use crate::error::CompileError;
use std::time::{Duration, Instant};

/// When a compilation must stop: a start instant and a budget.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    start: Instant,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub fn new(budget: Duration) -> Deadline {
        Deadline { start: Instant::now(), budget }
    }

    /// A deadline `budget` after `start` (time already spent, such as parsing, counts).
    pub fn starting_at(start: Instant, budget: Duration) -> Deadline {
        Deadline { start, budget }
    }

    /// No deadline.
    pub fn unlimited() -> Deadline {
        Deadline { start: Instant::now(), budget: Duration::MAX }
    }

    /// Whether the budget is spent.
    pub fn exceeded(&self) -> bool {
        self.start.elapsed() > self.budget
    }

    /// `Err(limit compile_time)` when the budget is spent; `stage` says where.
    pub fn check(&self, stage: &str) -> Result<(), CompileError> {
        if self.exceeded() {
            Err(self.error(stage))
        } else {
            Ok(())
        }
    }

    /// The error of a spent budget, at `stage`.
    pub fn error(&self, stage: &str) -> CompileError {
        CompileError::Limit {
            name: crate::compiler::LimitName::CompileTime.as_str(),
            message: format!(
                "compiling takes more than {} ms (stopped during {stage})",
                self.budget.as_millis()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_is_the_named_limit() {
        let d = Deadline::new(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        match d.check("the passes") {
            Err(CompileError::Limit { name: "compile_time", message }) => {
                assert!(message.contains("the passes"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(Deadline::unlimited().check("x").is_ok());
        assert!(Deadline::new(Duration::from_secs(60)).check("x").is_ok());
    }
}
