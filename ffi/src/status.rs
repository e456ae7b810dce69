//! Status codes, the thread-local error message, and the guard every entry point runs in
//! (null checks and `catch_unwind`, so that no panic crosses the C boundary).

use grammask::syntax::Category;
use grammask::{CompileError, Diagnostics, MatchError};
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The result of every call. `GRAMMASK_STATUS_OK` is 0; on any other value,
/// `grammask_last_error()` describes the failure.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrammaskStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullPointer = 1,
    /// A handle is not a live handle of the expected kind (wrong kind, freed, double free,
    /// or not a handle at all).
    InvalidHandle = 2,
    /// An argument is out of its domain (not UTF-8, inconsistent sizes, unknown kind).
    InvalidArgument = 3,
    /// A vocabulary could not be loaded or built.
    Vocabulary = 4,
    /// The grammar text or schema is invalid; the message lists every error with line:col.
    Grammar = 5,
    /// A documented resource limit was reached (the message names it).
    Limit = 6,
    /// The grammar or input is valid but asks for something grammask does not support.
    Unsupported = 7,
    /// A token id is not below the vocabulary size.
    TokenOutOfRange = 8,
    /// The token or bytes are not allowed by the grammar here; nothing changed.
    Rejected = 9,
    /// The matcher already accepted a stop token.
    Terminated = 10,
    /// Rollback asked for more steps than the matcher keeps.
    RollbackTooFar = 11,
    /// A caller buffer is too small; the needed size is reported through the length
    /// out-pointer when the function has one.
    BufferTooSmall = 12,
    /// An internal error (a caught panic). The handle involved should be freed.
    Panic = 13,
}

/// Why a call failed: a status and its message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: GrammaskStatus,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: GrammaskStatus, message: impl Into<String>) -> Failure {
        Failure { status, message: message.into() }
    }

    pub(crate) fn null(name: &str) -> Failure {
        Failure::new(GrammaskStatus::NullPointer, format!("`{name}` is NULL"))
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(GrammaskStatus::InvalidArgument, message)
    }

    /// Grammar diagnostics, rendered with line:col against the grammar text.
    pub(crate) fn diagnostics(d: &Diagnostics, text: &str) -> Failure {
        let mut status = GrammaskStatus::Grammar;
        for e in d.errors() {
            match e.category {
                Category::Unsupported => status = GrammaskStatus::Unsupported,
                Category::Limit(_) => status = GrammaskStatus::Limit,
                Category::Invalid => {
                    status = GrammaskStatus::Grammar;
                    break;
                }
            }
        }
        Failure::new(status, d.render("<grammar>", text))
    }

    pub(crate) fn compile(e: &CompileError, text: &str) -> Failure {
        match e {
            CompileError::Grammar(d) => Failure::diagnostics(d, text),
            CompileError::Limit { .. } => Failure::new(GrammaskStatus::Limit, e.to_string()),
            CompileError::Unsupported(_) => {
                Failure::new(GrammaskStatus::Unsupported, e.to_string())
            }
            CompileError::TokenOutOfRange { .. } => {
                Failure::new(GrammaskStatus::TokenOutOfRange, e.to_string())
            }
            CompileError::Load(_) => Failure::new(GrammaskStatus::InvalidArgument, e.to_string()),
        }
    }
}

impl From<MatchError> for Failure {
    fn from(e: MatchError) -> Failure {
        let status = match e {
            MatchError::TokenOutOfRange { .. } => GrammaskStatus::TokenOutOfRange,
            MatchError::TokenRejected { .. } | MatchError::BytesRejected { .. } => {
                GrammaskStatus::Rejected
            }
            MatchError::Terminated => GrammaskStatus::Terminated,
            MatchError::RollbackTooFar { .. } => GrammaskStatus::RollbackTooFar,
            MatchError::BitmaskTooShort { .. } => GrammaskStatus::BufferTooSmall,
            MatchError::Limit { .. } => GrammaskStatus::Limit,
        };
        Failure::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the status still reports.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = c);
}

/// The calling thread's last error message; valid until the next grammask call on this
/// thread.
pub(crate) fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(c"thread-local storage is not available".as_ptr())
}

/// Runs one entry point: clears the thread's message, runs `f` under `catch_unwind`, and
/// turns a failure or a panic into a status with a message.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> GrammaskStatus {
    set_last_error("");
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => GrammaskStatus::Ok,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!("internal error: {what}"));
            GrammaskStatus::Panic
        }
    }
}
