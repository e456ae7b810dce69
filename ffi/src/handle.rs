//! Handles: heap objects whose first field is a per-kind tag, registered in a set of live
//! handles. A pointer is dereferenced only after the registry says it is a live handle of
//! the expected kind, so wrong-kind handles, freed handles and double frees are reported
//! as errors without reading freed memory. The tag is checked as well and overwritten on
//! free.

use crate::status::{Failure, GrammaskStatus};
use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

/// The kinds of handles, each with its tag (the first field of the handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Vocab,
    Grammar,
    Matcher,
}

impl Kind {
    const fn tag(self) -> u64 {
        match self {
            Kind::Vocab => 0x4D47_5643_4142_0001,   // "GM VOCAB" 1
            Kind::Grammar => 0x4D47_4752_414D_0002, // "GM GRAM" 2
            Kind::Matcher => 0x4D47_4D41_5443_0003, // "GM MATC" 3
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Vocab => "GrammaskVocab",
            Kind::Grammar => "GrammaskGrammar",
            Kind::Matcher => "GrammaskMatcher",
        }
    }
}

/// The tag written over a handle's tag when it is freed.
const FREED_TAG: u64 = 0xDEAD_DEAD_DEAD_DEAD;

/// A handle: the tag first (`repr(C)` keeps it at offset 0), then the value.
#[repr(C)]
pub(crate) struct Handle<T> {
    tag: u64,
    pub(crate) value: T,
}

/// Addresses of the live handles and their kinds.
static LIVE: LazyLock<RwLock<HashMap<usize, Kind>>> = LazyLock::new(Default::default);

fn live_kind(addr: usize) -> Option<Kind> {
    let live = LIVE.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    live.get(&addr).copied()
}

/// Things stored behind handles declare their kind.
pub(crate) trait HandleKind {
    const KIND: Kind;
}

/// Moves `value` to the heap, registers it, and returns the pointer given to C.
pub(crate) fn into_handle<T: HandleKind, C>(value: T) -> *mut C {
    let ptr = Box::into_raw(Box::new(Handle { tag: T::KIND.tag(), value }));
    let mut live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    live.insert(ptr as usize, T::KIND);
    ptr.cast()
}

fn check<T: HandleKind>(ptr: *const (), name: &str) -> Result<*mut Handle<T>, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(name));
    }
    let expected = T::KIND;
    match live_kind(ptr as usize) {
        Some(kind) if kind == expected => {}
        Some(kind) => {
            return Err(Failure::new(
                GrammaskStatus::InvalidHandle,
                format!("`{name}` is a {}, not a {}", kind.name(), expected.name()),
            ))
        }
        None => {
            return Err(Failure::new(
                GrammaskStatus::InvalidHandle,
                format!("`{name}` is not a live {} (freed, or not a handle)", expected.name()),
            ))
        }
    }
    let handle = ptr as *mut Handle<T>;
    // SAFETY: the registry holds this address as a live handle of kind `T::KIND`, created
    // by `into_handle::<T>` and not yet freed, so it points to an initialized `Handle<T>`.
    let tag = unsafe { (*handle).tag };
    if tag != expected.tag() {
        return Err(Failure::new(
            GrammaskStatus::InvalidHandle,
            format!("`{name}` has a corrupted tag {tag:#x}"),
        ));
    }
    Ok(handle)
}

/// Borrows the value behind a handle, after checking it.
///
/// # Safety
/// No other thread may free the handle or use it mutably during the borrow (the header
/// documents this rule for C callers).
pub(crate) unsafe fn borrow<'a, T: HandleKind, C>(
    ptr: *const C,
    name: &str,
) -> Result<&'a T, Failure> {
    let handle = check::<T>(ptr.cast(), name)?;
    // SAFETY: `check` verified a live `Handle<T>`; the caller guarantees no concurrent
    // free or mutable use.
    Ok(unsafe { &(*handle).value })
}

/// Borrows the value behind a handle mutably, after checking it.
///
/// # Safety
/// The caller has exclusive use of the handle for the borrow (one thread at a time).
pub(crate) unsafe fn borrow_mut<'a, T: HandleKind, C>(
    ptr: *mut C,
    name: &str,
) -> Result<&'a mut T, Failure> {
    let handle = check::<T>(ptr.cast_const().cast(), name)?;
    // SAFETY: `check` verified a live `Handle<T>`; the caller guarantees exclusive use.
    Ok(unsafe { &mut (*handle).value })
}

/// Unregisters and frees a handle; NULL is a no-op.
///
/// # Safety
/// No other thread uses the handle during or after the call.
pub(crate) unsafe fn free<T: HandleKind, C>(ptr: *mut C, name: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        return Ok(());
    }
    let handle = check::<T>(ptr.cast_const().cast(), name)?;
    {
        let mut live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let removed = live.remove(&(handle as usize));
        if live.is_empty() {
            // Release the table when no handle is live (leak checkers see a clean exit).
            live.shrink_to_fit();
        }
        if removed.is_none() {
            // Freed by another thread between the check and now.
            return Err(Failure::new(
                GrammaskStatus::InvalidHandle,
                format!("`{name}` was freed concurrently"),
            ));
        }
    }
    // SAFETY: the handle was live and is now unregistered by this call, so this is its only
    // owner; it came from `Box::into_raw` in `into_handle::<T>`.
    unsafe {
        (*handle).tag = FREED_TAG;
        drop(Box::from_raw(handle));
    }
    Ok(())
}
