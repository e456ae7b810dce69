//! Counts of which path decided each token, so that a test comparing a fast path with
//! the plain walk can show that the fast path ran; and the time masks spent on each kind
//! of work, so that a slow mask can be told apart by its cause.
//!
//! Counting happens only with the feature `path-counters` (the engine's own tests turn it
//! on); without it [`snapshot`] reads zeros and counting compiles to nothing. Counts are
//! per thread: a test reads those of the masks it computed itself.

/// A way a token's answer is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Path {
    /// Accepted by the shared bitmask of the vocabulary slices a string position reads
    /// whole.
    Slices,
    /// Classified by its tail, from the state its run of string characters leads to.
    Tails,
    /// Classified by its tail once its run reached a state that reads every string
    /// character back to itself.
    LoopState,
    /// A token of the slices holding a character that leaves a pattern's loop, walked.
    Diverted,
    /// A token of the slices longer than a position's chunk of a string has left,
    /// context-dependent whole without a walk.
    LeftWhole,
    /// A context-dependent token of the slices accepted whole by a parent entry: read
    /// to its end through the return to the caller (the caller reads on where a
    /// string's chunk ends).
    ThroughReturn,
    /// Read on inside the one callee whose start reads its next byte.
    CalleeEntry,
    /// Read on inside each of the several callees whose starts read its next byte, and
    /// decided by what they found together.
    Fork,
    /// Decided by a position's own cache entry.
    PositionEntry,
    /// Decided by the entry of a position inside a rule walked through, with its return
    /// position.
    ThroughEntry,
    /// Decided by an entry narrowed under the return positions below the position.
    ParentEntry,
    /// Walked against the real stacks.
    StackWalk,
    /// Classified, while a parent entry is filled, from the remembered outcomes of its
    /// rests past the top frame (`super::suffixes`), none read again; such a token is
    /// counted once more by the entry that decides it.
    RememberedRest,
}

impl Path {
    /// Every path, in declaration order.
    pub const ALL: [Path; 13] = [
        Path::Slices,
        Path::Tails,
        Path::LoopState,
        Path::Diverted,
        Path::LeftWhole,
        Path::ThroughReturn,
        Path::CalleeEntry,
        Path::Fork,
        Path::PositionEntry,
        Path::ThroughEntry,
        Path::ParentEntry,
        Path::StackWalk,
        Path::RememberedRest,
    ];
}

/// A kind of work a mask spends time on, timed apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// Classifying a position on its first visit (its own entry).
    PositionFill,
    /// Classifying a position inside a rule walked through on its first visit.
    ThroughFill,
    /// Classifying a position's context-dependent tokens under its return positions on
    /// their first visit.
    ParentFill,
    /// Walking context-dependent tokens (or, without the cache, every token) against
    /// the real stacks.
    StackWalk,
    /// Building a rule's automaton on first use; the other kinds' times leave out the
    /// construction done within them.
    Construction,
}

impl Work {
    /// Every kind, in declaration order.
    pub const ALL: [Work; 5] = [
        Work::PositionFill,
        Work::ThroughFill,
        Work::ParentFill,
        Work::StackWalk,
        Work::Construction,
    ];
}

/// Tokens counted per path, and nanoseconds per kind of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    tokens: [u64; Path::ALL.len()],
    nanos: [u64; Work::ALL.len()],
}

impl Counts {
    /// Tokens counted for `path`.
    pub fn get(&self, path: Path) -> u64 {
        self.tokens[path as usize]
    }

    /// Time spent on `work`, in nanoseconds.
    pub fn nanos(&self, work: Work) -> u64 {
        self.nanos[work as usize]
    }

    /// The counts since `earlier` (a snapshot taken before).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let mut out = *self;
        for (o, e) in out.tokens.iter_mut().zip(earlier.tokens) {
            *o -= e;
        }
        for (o, e) in out.nanos.iter_mut().zip(earlier.nanos) {
            *o -= e;
        }
        out
    }
}

#[cfg(feature = "path-counters")]
thread_local! {
    static COUNTS: std::cell::Cell<Counts> = const {
        std::cell::Cell::new(Counts { tokens: [0; Path::ALL.len()], nanos: [0; Work::ALL.len()] })
    };
}

/// Whether counting is compiled in.
pub const ENABLED: bool = cfg!(feature = "path-counters");

/// This thread's counts so far.
pub fn snapshot() -> Counts {
    #[cfg(feature = "path-counters")]
    return COUNTS.with(std::cell::Cell::get);
    #[cfg(not(feature = "path-counters"))]
    Counts::default()
}

/// Counts `tokens()` tokens for `path` (evaluated only when counting is compiled in).
#[inline(always)]
pub(crate) fn add(path: Path, tokens: impl FnOnce() -> usize) {
    #[cfg(feature = "path-counters")]
    COUNTS.with(|c| {
        let mut counts = c.get();
        counts.tokens[path as usize] += tokens() as u64;
        c.set(counts);
    });
    #[cfg(not(feature = "path-counters"))]
    let _ = (path, tokens);
}

/// Runs `f`, timing it as `work` (timed only when counting is compiled in).
#[inline(always)]
pub(crate) fn timed<T>(work: Work, f: impl FnOnce() -> T) -> T {
    #[cfg(feature = "path-counters")]
    {
        let built = Work::Construction as usize;
        let start = std::time::Instant::now();
        let built_before = COUNTS.with(|c| c.get().nanos[built]);
        let out = f();
        let nanos = start.elapsed().as_nanos() as u64;
        COUNTS.with(|c| {
            let mut counts = c.get();
            let nested =
                if work == Work::Construction { 0 } else { counts.nanos[built] - built_before };
            counts.nanos[work as usize] += nanos.saturating_sub(nested);
            c.set(counts);
        });
        out
    }
    #[cfg(not(feature = "path-counters"))]
    {
        let _ = work;
        f()
    }
}
