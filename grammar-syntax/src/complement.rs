//! Boolean combinations of regular expressions over characters (the complement of one,
//! one minus others), as right-linear rules: the texts a `pattern` does not match, for
//! `not`, and the keys beside `patternProperties` that are not listed properties.
//!
//! The expressions (regular IR: literals, classes, sequences, choices, repetitions) become
//! one character NFA, determinized over the disjoint character ranges their classes cut
//! the alphabet into (a DFA state knows which expressions accept; a length bound among
//! them, as `minLength`/`maxLength` give, is a count of characters beside the NFA states,
//! see `Length`), completed, pruned to the states that can still accept the combination,
//! and written as one rule per state:
//! `state ::= "" (when accepting) | class next-state ...`,
//! except where only the length bound still decides (a pattern's free end): that rest is
//! one repetition of the characters it reads ([`CountedRest`]), not a rule per count.
//! Every call is in tail position, so the matcher keeps its stack flat. Characters are
//! written in the requested [`CharEncoding`] (escapes included in a JSON string).
//! Past [`MAX_NFA_STATES`] or [`MAX_DFA_STATES`] there is no answer (`None`), never a wrong
//! one.

use crate::ir::{CharClass, Expr, GrammarBuilder, RuleId};
use crate::regex::{encode_class, is_unicode_tail, CharEncoding};
use rustc_hash::FxHashMap;

/// Most NFA states the expression may need (bounded repetitions are copied).
pub const MAX_NFA_STATES: usize = 20_000;
/// Most DFA states the complement may have.
pub const MAX_DFA_STATES: usize = 2_000;

/// The end of the code point space, exclusive.
const END: u32 = 0x11_0000;

#[derive(Default)]
struct Nfa {
    eps: Vec<Vec<usize>>,
    /// Edges on code point ranges (inclusive).
    edges: Vec<Vec<(u32, u32, usize)>>,
}

impl Nfa {
    fn state(&mut self) -> Option<usize> {
        if self.eps.len() >= MAX_NFA_STATES {
            return None;
        }
        self.eps.push(Vec::new());
        self.edges.push(Vec::new());
        Some(self.eps.len() - 1)
    }

    /// Adds `e` from `from`; returns its end state.
    fn build(&mut self, e: &Expr, from: usize) -> Option<usize> {
        Some(match e {
            Expr::Empty => from,
            Expr::Bytes(bytes) => {
                let text = std::str::from_utf8(bytes).ok()?;
                let mut at = from;
                for c in text.chars() {
                    let next = self.state()?;
                    self.edges[at].push((c as u32, c as u32, next));
                    at = next;
                }
                at
            }
            Expr::Class(class) => {
                let to = self.state()?;
                for (lo, hi) in class.positive_ranges() {
                    self.edges[from].push((lo as u32, hi as u32, to));
                }
                to
            }
            Expr::Seq(items) => {
                let mut at = from;
                for item in items {
                    at = self.build(item, at)?;
                }
                at
            }
            Expr::Choice(alts) => {
                let to = self.state()?;
                for alt in alts {
                    let start = self.state()?;
                    self.eps[from].push(start);
                    let end = self.build(alt, start)?;
                    self.eps[end].push(to);
                }
                to
            }
            Expr::Repeat { expr, min, max } => {
                let mut at = from;
                for _ in 0..*min {
                    at = self.build(expr, at)?;
                }
                match max {
                    None => {
                        // at -> loop start -> body -> back; the loop start is the end.
                        let start = self.state()?;
                        self.eps[at].push(start);
                        let end = self.build(expr, start)?;
                        self.eps[end].push(start);
                        start
                    }
                    Some(max) => {
                        let to = self.state()?;
                        for _ in *min..*max {
                            self.eps[at].push(to);
                            at = self.build(expr, at)?;
                        }
                        self.eps[at].push(to);
                        to
                    }
                }
            }
            Expr::Rule(_) | Expr::Tokens(_) | Expr::Text(_) | Expr::ByteRanges(_) => return None,
        })
    }

    /// One NFA of `exprs` side by side from one start: the NFA, its start and each
    /// expression's end state (`usize::MAX` for an expression left out, `None`).
    fn of_each<'e>(
        exprs: impl Iterator<Item = Option<&'e Expr>>,
    ) -> Option<(Nfa, usize, Vec<usize>)> {
        let mut nfa = Nfa::default();
        let start = nfa.state()?;
        let mut ends = Vec::new();
        for e in exprs {
            let Some(e) = e else {
                ends.push(usize::MAX);
                continue;
            };
            let own = nfa.state()?;
            nfa.eps[start].push(own);
            ends.push(nfa.build(e, own)?);
        }
        Some((nfa, start, ends))
    }

    /// Where the alphabet is cut (unsorted, with repeats): at every edge's range
    /// boundaries, and around the surrogate code points, which hold no character and are
    /// an atom of their own.
    fn cuts(&self) -> Vec<u32> {
        let mut cuts = vec![0, 0xd800, 0xe000, END];
        for &(lo, hi, _) in self.edges.iter().flatten() {
            cuts.push(lo);
            cuts.push(hi + 1);
        }
        cuts
    }

    /// Adds to `states` every state their ε-edges reach, sorted and without repeats;
    /// `seen` is all false on entry and on return.
    fn closure(&self, states: &mut Vec<usize>, seen: &mut [bool]) {
        for &s in states.iter() {
            seen[s] = true;
        }
        let mut i = 0;
        while i < states.len() {
            for &n in &self.eps[states[i]] {
                if !seen[n] {
                    seen[n] = true;
                    states.push(n);
                }
            }
            i += 1;
        }
        for &s in states.iter() {
            seen[s] = false;
        }
        states.sort_unstable();
        states.dedup();
    }
}

/// A length bound among the expressions of a [`combination`] (`.{min,max}`, as
/// `minLength`/`maxLength` are written), read as a count of the characters so far beside
/// the NFA states: written as states, its `max` optional copies would put the rest of
/// their chain in every subset.
#[derive(Clone, Copy)]
struct Length {
    min: u32,
    max: Option<u32>,
}

impl Length {
    /// No length bound: every length is long enough, so the count stays 0.
    const NONE: Length = Length { min: 0, max: None };

    /// The bound `e` is, if it is one: any character, repeated.
    fn of(e: &Expr) -> Option<Length> {
        match e {
            Expr::Repeat { expr, min, max } if matches!(&**expr, Expr::Class(c) if *c == CharClass::any()) => {
                Some(Length { min: *min, max: *max })
            }
            _ => None,
        }
    }

    /// The count after one more character: counts past `max` are one (too long), and
    /// without `max`, counts past `min` are one (long enough).
    fn after_one_more(self, count: u32) -> u32 {
        match self.max {
            Some(max) => count.saturating_add(1).min(max.saturating_add(1)),
            None => count.saturating_add(1).min(self.min),
        }
    }

    /// Whether a text of `count` characters has a length within the bound.
    fn holds(self, count: u32) -> bool {
        count >= self.min && self.max.is_none_or(|max| count <= max)
    }
}

/// Atoms `from..until` that an NFA state set steps to the set `to` on (by its number);
/// `to` is `None` for the surrogates' atom, which holds no character: the state stays.
#[derive(Clone, Copy)]
struct AtomRun {
    from: usize,
    until: usize,
    to: Option<usize>,
}

/// A state of a [`combination`] past which only the length bound decides (after a
/// pattern's `.*`, `[a-z]+$` or unanchored end): `item`, one of the characters read
/// there, `min..=max` more times. Its rule is declared and left for the caller to define,
/// as a counted repetition of its own kind (the JSON Schema converter's chunks): written
/// as states, one rule per count, it would cost `max` rules.
pub struct CountedRest {
    /// The rule to define.
    pub rule: RuleId,
    /// One character of those the rest reads, in the combination's encoding.
    pub item: Expr,
    /// Fewest more characters.
    pub min: u32,
    /// Most more characters (`None`: no limit).
    pub max: Option<u32>,
}

/// What a counted rest costs written out, in items (a chunk in place, its remainder and
/// the chunk calls): a chain of states entered at more counts than its length allows for
/// at this cost stays states.
const REST_COST: u32 = 64;

/// A chain of DFA states that [`combination`] writes as a [`CountedRest`]: the fewest and
/// most characters more, its last state and how many steps lead there.
struct Rest {
    min: u32,
    max: Option<u32>,
    end: usize,
    steps: u32,
}

/// Where a DFA state of a [`combination`] leads when it is part of a chain that only the
/// length bound decides: the chain's last state (which reads nothing, or loops), and
/// whether it loops (a bound without `max`, past its `min`).
#[derive(Clone, Copy)]
struct Chain {
    end: usize,
    looped: bool,
}

/// A [`combination`]: the expression, and the rules it calls that its caller defines.
pub struct Combined {
    /// The texts the combination accepts.
    pub expr: Expr,
    /// The counted rests, each to be defined once.
    pub rests: Vec<CountedRest>,
}

impl Combined {
    /// The expression, with each counted rest defined as a plain IR repetition.
    pub fn with_plain_rests(self, b: &mut GrammarBuilder) -> Expr {
        for r in self.rests {
            b.define(r.rule, Expr::repeat(r.item, r.min, r.max));
        }
        self.expr
    }
}

/// The texts `e` does not match, as rules added to `b` (named after `name`), in
/// `encoding`: `None` when `e` is not regular or its automata pass the limits.
pub fn complement(
    e: &Expr,
    encoding: CharEncoding,
    b: &mut GrammarBuilder,
    name: &str,
) -> Option<Expr> {
    let combined = combination(std::slice::from_ref(e), |m| !m[0], encoding, b, name)?;
    Some(combined.with_plain_rests(b))
}

/// The texts `accepts` says yes to, given which of `exprs` match each (in order), as rules
/// added to `b`: `None` when an expression is not regular or the automata pass the limits.
pub fn combination(
    exprs: &[Expr],
    accepts: impl Fn(&[bool]) -> bool,
    encoding: CharEncoding,
    b: &mut GrammarBuilder,
    name: &str,
) -> Option<Combined> {
    // The first length bound is read as a count; the other expressions as NFA states.
    let (counted, length) = exprs
        .iter()
        .enumerate()
        .find_map(|(i, e)| Length::of(e).map(|l| (Some(i), l)))
        .unwrap_or((None, Length::NONE));
    let automata = exprs.iter().enumerate().map(|(i, e)| (Some(i) != counted).then_some(e));
    let (nfa, start, ends) = Nfa::of_each(automata)?;
    // The alphabet cut at every range boundary: atom `i` is `cuts[i]..cuts[i + 1]`.
    let mut cuts = nfa.cuts();
    cuts.sort_unstable();
    cuts.dedup();
    let atoms: Vec<(u32, u32)> = cuts.windows(2).map(|w| (w[0], w[1] - 1)).collect();
    let atom_of = |c: u32| cuts.partition_point(|&x| x <= c) - 1;
    let surrogates = atom_of(0xd800);
    // Each edge as the atoms it spans, first and last.
    let spans: Vec<Vec<(usize, usize, usize)>> = nfa
        .edges
        .iter()
        .map(|edges| edges.iter().map(|&(lo, hi, t)| (atom_of(lo), atom_of(hi), t)).collect())
        .collect();
    // Subset construction; the empty set is the dead state, which the complement accepts.
    let mut seen = vec![false; nfa.eps.len()];
    // Which expressions match at a DFA state: its NFA states and whether its count is
    // within the length bound.
    let matched = |set: &[usize], length_holds: bool| -> Vec<bool> {
        let each = |(i, end): (usize, &usize)| {
            if Some(i) == counted {
                length_holds
            } else {
                set.contains(end)
            }
        };
        ends.iter().enumerate().map(each).collect()
    };
    // Past the empty set no expression but the length bound can match: when nothing is
    // accepted there whatever the length, its counts are one dead state.
    let empty_is_dead = !accepts(&matched(&[], true)) && !accepts(&matched(&[], false));
    let mut first = vec![start];
    nfa.closure(&mut first, &mut seen);
    // The NFA state sets met, each once; what a set steps to on each run of atoms does
    // not depend on the count, so it is found once per set (a length bound meets each
    // set at many counts).
    let mut set_index: FxHashMap<Vec<usize>, usize> = FxHashMap::default();
    let mut set_list: Vec<Vec<usize>> = Vec::new();
    let mut intern = |set: Vec<usize>, list: &mut Vec<Vec<usize>>| -> usize {
        *set_index.entry(set).or_insert_with_key(|set| {
            list.push(set.clone());
            list.len() - 1
        })
    };
    let first = intern(first, &mut set_list);
    // The set each list of NFA states stepped to (sorted, before its closure) became.
    let mut stepped: FxHashMap<Vec<usize>, usize> = FxHashMap::default();
    // Per set met: the runs of atoms it steps to one set on.
    let mut set_rows: Vec<Option<Vec<AtomRun>>> = Vec::new();
    // A DFA state: the characters counted (see `Length`) and a set of NFA states.
    let mut index: FxHashMap<(u32, usize), usize> = FxHashMap::default();
    let mut sets = vec![(0, first)];
    index.insert((0, first), 0);
    let mut delta: Vec<Vec<usize>> = Vec::new();
    // Where an edge of the set starts (+1) or stops (-1) applying, by atom.
    let mut events: Vec<(usize, bool, usize)> = Vec::new();
    let mut active: Vec<u32> = vec![0; nfa.eps.len()];
    // The sorted targets of a run of atoms, and a set's runs, reused.
    let mut key: Vec<usize> = Vec::new();
    let mut runs: Vec<AtomRun> = Vec::new();
    let mut targets: Vec<usize> = Vec::new();
    let mut closed: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < sets.len() {
        let (count, set) = sets[i];
        if set_rows.len() <= set {
            set_rows.resize(set + 1, None);
        }
        if set_rows[set].is_none() {
            events.clear();
            for &s in &set_list[set] {
                for &(a, z, t) in &spans[s] {
                    events.push((a, true, t));
                    events.push((z + 1, false, t));
                }
            }
            events.sort_unstable();
            // The atoms between two event positions lead to the same set: one closure each.
            runs.clear();
            targets.clear();
            let mut e = 0;
            let mut at = 0;
            while at < atoms.len() {
                while e < events.len() && events[e].0 == at {
                    let (_, starts, t) = events[e];
                    if starts {
                        active[t] += 1;
                        if active[t] == 1 {
                            targets.push(t);
                        }
                    } else {
                        active[t] -= 1;
                    }
                    e += 1;
                }
                targets.retain(|&t| active[t] > 0);
                let mut until = events.get(e).map_or(atoms.len(), |ev| ev.0.min(atoms.len()));
                if at == surrogates {
                    // No character: the state stays (the atom is never written, nor counted).
                    runs.push(AtomRun { from: at, until: at + 1, to: None });
                    at += 1;
                    continue;
                }
                if at < surrogates {
                    until = until.min(surrogates);
                }
                // Runs of many sets step to the same states (every character of a
                // `.*`): each such target list is closed and looked up once.
                key.clear();
                key.extend_from_slice(&targets);
                key.sort_unstable();
                let to = match stepped.get(key.as_slice()) {
                    Some(&to) => to,
                    None => {
                        closed.clear();
                        closed.extend_from_slice(&key);
                        nfa.closure(&mut closed, &mut seen);
                        let to = intern(closed.clone(), &mut set_list);
                        stepped.insert(key.clone(), to);
                        to
                    }
                };
                runs.push(AtomRun { from: at, until, to: Some(to) });
                at = until;
            }
            for &t in &targets {
                active[t] = 0;
            }
            set_rows[set] = Some(runs.clone());
        }
        let after = length.after_one_more(count);
        let mut row = vec![0; atoms.len()];
        for &AtomRun { from, until, to } in set_rows[set].iter().flatten() {
            let id = match to {
                None => i,
                Some(to) => {
                    let key =
                        (if set_list[to].is_empty() && empty_is_dead { 0 } else { after }, to);
                    match index.get(&key) {
                        Some(&id) => id,
                        None => {
                            if sets.len() >= MAX_DFA_STATES {
                                return None;
                            }
                            sets.push(key);
                            index.insert(key, sets.len() - 1);
                            sets.len() - 1
                        }
                    }
                }
            };
            row[from..until].fill(id);
        }
        delta.push(row);
        i += 1;
    }
    let accepting: Vec<bool> = sets
        .iter()
        .map(|&(count, set)| accepts(&matched(&set_list[set], length.holds(count))))
        .collect();
    // The states that can still reach an accepting one, through atoms that hold a
    // character (an atom of surrogate code points alone holds none).
    let n = sets.len();
    let scalars: Vec<Vec<(char, char)>> = atoms.iter().map(|&a| scalar_ranges(a)).collect();
    let usable: Vec<bool> = scalars.iter().map(|r| !r.is_empty()).collect();
    // Found backwards from the accepting states along the reversed transitions, each
    // state's row read once (a sweep over all rows per step back would read a long
    // pattern's chain of states once per state of it).
    // The states before each, `before[starts[t]..starts[t + 1]]` for state `t`.
    let mut starts = vec![0usize; n + 1];
    let mut last = vec![usize::MAX; n];
    let each_step = |f: &mut dyn FnMut(usize, usize)| {
        for (s, row) in delta.iter().enumerate() {
            for (&t, _) in row.iter().zip(&usable).filter(|&(_, &u)| u) {
                f(s, t);
            }
        }
    };
    each_step(&mut |s, t| {
        if last[t] != s {
            last[t] = s;
            starts[t + 1] += 1;
        }
    });
    for t in 0..n {
        starts[t + 1] += starts[t];
    }
    let mut before = vec![0usize; starts[n]];
    let mut filled = starts.clone();
    last.fill(usize::MAX);
    each_step(&mut |s, t| {
        if last[t] != s {
            last[t] = s;
            before[filled[t]] = s;
            filled[t] += 1;
        }
    });
    let mut live: Vec<bool> = accepting.clone();
    let mut work: Vec<usize> = (0..n).filter(|&s| live[s]).collect();
    while let Some(t) = work.pop() {
        for &s in &before[starts[t]..starts[t + 1]] {
            if !live[s] {
                live[s] = true;
                work.push(s);
            }
        }
    }
    if !live[0] {
        return Some(Combined { expr: crate::regex::never(), rests: Vec::new() });
    }
    let rep = same_futures(&delta, &accepting, &live, &usable);
    // The counted rests: a chain of states, each reading the same characters into the
    // next count and nothing else, accepting exactly where the length bound holds (a
    // pattern's `.*`, `[a-z]+$` or unanchored end under `maxLength`). The chain's NFA sets
    // may differ (the first character of `x+` and the others), not its future. Found for
    // every state at once, from the highest counts down (a chain's counts rise by one a
    // step), so each state is read once.
    let reads = |u: usize, a: usize| usable[a] && live[delta[u][a]];
    let chains = counted.map(|_| {
        let mut order: Vec<usize> = (0..n).filter(|&u| live[u]).collect();
        order.sort_unstable_by_key(|&u| std::cmp::Reverse(sets[u].0));
        let mut chain: Vec<Option<Chain>> = vec![None; n];
        for u in order {
            if accepting[u] != length.holds(sets[u].0) {
                continue;
            }
            // The one state every character read leads to, if one.
            let mut targets = (0..atoms.len()).filter(|&a| reads(u, a)).map(|a| delta[u][a]);
            let Some(next) = targets.next() else {
                chain[u] = Some(Chain { end: u, looped: false });
                continue;
            };
            if targets.any(|t| t != next) {
                continue;
            }
            if next == u {
                chain[u] = length.max.is_none().then_some(Chain { end: u, looped: true });
                continue;
            }
            let reads_alike = |v: usize| (0..atoms.len()).all(|a| reads(u, a) == reads(v, a));
            chain[u] = match chain[next] {
                Some(c)
                    if sets[next].0 == sets[u].0 + 1 && (c.end == next || reads_alike(next)) =>
                {
                    Some(Chain { end: c.end, looped: c.looped })
                }
                _ => None,
            };
        }
        chain
    });
    let rest_of = |s: usize| -> Option<Rest> {
        let c = chains.as_ref()?[s]?;
        if c.end == s {
            return None;
        }
        let count = sets[s].0;
        let steps = sets[c.end].0 - count;
        let max = length.max.map(|max| max.saturating_sub(count));
        if !c.looped && max != Some(steps) {
            return None;
        }
        let min = length.min.saturating_sub(count);
        Some(Rest { min, max, end: c.end, steps })
    };
    // The states written: those the start reaches through states that are not rests. A
    // chain entered at many counts (after a loop: `^[a-z]+:[a-z]+$`) stays states, one
    // rule per count shared by every entry, where a rest per entry would cost more.
    let mut whole_chain = vec![false; n];
    let (written, rests) = loop {
        let mut written = vec![false; n];
        let mut rests: Vec<(usize, Rest)> = Vec::new();
        let mut work = vec![rep[0]];
        written[rep[0]] = true;
        while let Some(s) = work.pop() {
            if let Some(rest) = rest_of(s).filter(|r| !whole_chain[r.end]) {
                rests.push((s, rest));
                continue;
            }
            for (&t, _) in delta[s].iter().zip(&usable).filter(|&(&t, &u)| u && live[t]) {
                if !written[rep[t]] {
                    written[rep[t]] = true;
                    work.push(rep[t]);
                }
            }
        }
        // Per chain (by its last state): the rests entering it, and the longest.
        let mut entered: FxHashMap<usize, (u32, u32)> = FxHashMap::default();
        for (_, r) in &rests {
            let c = entered.entry(r.end).or_default();
            *c = (c.0 + 1, c.1.max(r.steps));
        }
        let mut again = false;
        for (&end, &(entries, longest)) in &entered {
            if entries > 1 && entries.saturating_mul(REST_COST) > longest {
                whole_chain[end] = true;
                again = true;
            }
        }
        if !again {
            break (written, rests);
        }
    };
    let mut ids: Vec<Option<RuleId>> = vec![None; n];
    for s in (0..n).filter(|&s| written[s]) {
        let fresh = b.fresh_name(&format!("{name}-not"));
        ids[s] = Some(b.declare(&fresh));
    }
    let mut is_rest = vec![false; n];
    for (s, _) in &rests {
        is_rest[*s] = true;
    }
    let rests = rests
        .into_iter()
        .map(|(s, Rest { min, max, .. })| {
            let chars = (0..atoms.len()).filter(|&a| reads(s, a));
            let ranges = chars.flat_map(|a| scalars[a].iter().copied());
            let item = encode_class(&CharClass::new(false, ranges), encoding);
            Some(CountedRest { rule: ids[s]?, item, min, max })
        })
        .collect::<Option<Vec<_>>>()?;
    let mut states = StateWriter::new(encoding, name);
    for s in (0..n).filter(|&s| written[s] && !is_rest[s]) {
        let steps = delta[s].iter().enumerate().filter(|&(_, &t)| live[t]);
        let body = states.body(accepting[s], steps.map(|(a, &t)| (&scalars[a], ids[rep[t]])), b)?;
        b.define(ids[s]?, body);
    }
    Some(Combined { expr: Expr::Rule(ids[rep[0]]?), rests })
}

/// Writes the states of an automaton over characters as rules, `state ::= "" (when
/// accepting) | class next-state ...`. The states of a key complement mostly read the
/// same few classes ("any character but these"), each encoded once, with what follows
/// `\u` in its escapes a rule of its own (see [`outline_unicode_tail`]).
struct StateWriter<'a> {
    encoding: CharEncoding,
    name: &'a str,
    encoded: FxHashMap<Vec<(char, char)>, Expr>,
    tails: FxHashMap<Expr, RuleId>,
}

impl<'a> StateWriter<'a> {
    fn new(encoding: CharEncoding, name: &'a str) -> Self {
        StateWriter { encoding, name, encoded: FxHashMap::default(), tails: FxHashMap::default() }
    }

    /// The body of a state reading each of `steps` (characters, the rule of the state
    /// they lead to), the characters of one target read as one class; `None` when a
    /// target has no rule.
    fn body<'r>(
        &mut self,
        accepting: bool,
        steps: impl Iterator<Item = (&'r Vec<(char, char)>, Option<RuleId>)>,
        b: &mut GrammarBuilder,
    ) -> Option<Expr> {
        // Ranges by target, in order.
        let mut by_target: Vec<(RuleId, Vec<(char, char)>)> = Vec::new();
        for (ranges, t) in steps.filter(|(ranges, _)| !ranges.is_empty()) {
            let t = t?;
            match by_target.iter_mut().find(|(x, _)| *x == t) {
                Some((_, r)) => r.extend_from_slice(ranges),
                None => by_target.push((t, ranges.clone())),
            }
        }
        let mut alts = Vec::new();
        if accepting {
            alts.push(Expr::Empty);
        }
        for (t, ranges) in by_target {
            let (encoding, name, tails) = (self.encoding, self.name, &mut self.tails);
            let class = self
                .encoded
                .entry(ranges)
                .or_insert_with_key(|ranges| {
                    let class = CharClass::new(false, ranges.iter().copied());
                    outline_unicode_tail(encode_class(&class, encoding), tails, b, name)
                })
                .clone();
            alts.push(Expr::Seq(vec![class, Expr::Rule(t)]));
        }
        Some(Expr::choice(alts))
    }
}

/// Most states of a [`product_with_format`].
pub const MAX_PRODUCT_STATES: usize = 256;

/// The texts that every one of `patterns` and `format` match, as rules added to `b`
/// (named after `name`), in `encoding`. The patterns are determinized, the format is
/// followed by its derivatives ([`crate::derivative`]); a state in which the patterns
/// accept whatever follows (a free end: `^https?://`) is what is left of the format,
/// written as it stands. A [`combination`] of the same expressions determinizes the
/// format whole (a `uri`'s IPv6 addresses alone are about a thousand states, for a
/// pattern that only says how the text starts). `None` when an expression is not regular
/// or the product passes [`MAX_PRODUCT_STATES`] (a pattern that follows the format far).
pub fn product_with_format(
    patterns: &[Expr],
    format: &Expr,
    encoding: CharEncoding,
    b: &mut GrammarBuilder,
    name: &str,
) -> Option<Expr> {
    let (nfa, start, ends) = Nfa::of_each(patterns.iter().map(Some))?;
    // The alphabet cut where a pattern's edge or the format's class or literal does.
    let mut cuts = nfa.cuts();
    crate::derivative::boundaries(format, &mut |c| cuts.push(c));
    cuts.sort_unstable();
    cuts.dedup();
    cuts.retain(|&c| c <= END);
    let atoms: Vec<(u32, u32)> = cuts.windows(2).map(|w| (w[0], w[1] - 1)).collect();
    let scalars: Vec<Vec<(char, char)>> = atoms.iter().map(|&a| scalar_ranges(a)).collect();
    let atom_char: Vec<Option<char>> = scalars.iter().map(|r| r.first().map(|r| r.0)).collect();
    let mut first = vec![start];
    let mut seen = vec![false; nfa.eps.len()];
    nfa.closure(&mut first, &mut seen);
    let mut pats = PatternSets {
        nfa: &nfa,
        ends: &ends,
        atoms: &atoms,
        atom_char: &atom_char,
        seen,
        sets: vec![first.clone()],
        ids: FxHashMap::from_iter([(first, 0)]),
        rows: Vec::new(),
        universal: FxHashMap::default(),
    };
    // Patterns that never accept whatever follows (anchored at both ends) would have the
    // product follow the format to their end: the combination serves them.
    let mut i = 0;
    while !pats.universal(i) {
        pats.row(i);
        i += 1;
        if i >= pats.sets.len() || i >= MAX_PRODUCT_STATES {
            return None;
        }
    }
    // The product: a pattern state set and what is left of the format.
    let mut states: Vec<(usize, Expr)> = vec![(0, format.clone())];
    let mut index: FxHashMap<(usize, Expr), usize> = FxHashMap::default();
    index.insert((0, format.clone()), 0);
    let mut steps: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut free: Vec<bool> = Vec::new();
    let mut i = 0;
    while i < states.len() {
        let (set, rest) = states[i].clone();
        let u = pats.universal(set);
        free.push(u);
        let mut out = Vec::new();
        if !u {
            for (a, next) in pats.row(set).into_iter().enumerate() {
                let (Some(next), Some(c)) = (next, atom_char[a]) else { continue };
                let d = crate::derivative::derivative(&rest, c)?;
                if crate::regex::is_never(&d) {
                    continue;
                }
                let key = (next, d);
                let to = match index.get(&key) {
                    Some(&to) => to,
                    None => {
                        if states.len() >= MAX_PRODUCT_STATES {
                            return None;
                        }
                        states.push(key.clone());
                        index.insert(key, states.len() - 1);
                        states.len() - 1
                    }
                };
                out.push((a, to));
            }
        }
        steps.push(out);
        i += 1;
    }
    let n = states.len();
    let accepting: Vec<bool> = (0..n)
        .map(|s| {
            free[s] || (pats.all_match(states[s].0) && crate::derivative::nullable(&states[s].1))
        })
        .collect();
    // The states that can still end (a free state always can: its rest is not never).
    let mut live = accepting.clone();
    loop {
        let mut changed = false;
        for s in 0..n {
            if !live[s] && steps[s].iter().any(|&(_, t)| live[t]) {
                live[s] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if !live[0] {
        return Some(crate::regex::never());
    }
    let mut ids: Vec<Option<RuleId>> = vec![None; n];
    for s in (0..n).filter(|&s| live[s]) {
        let fresh = b.fresh_name(&format!("{name}-with"));
        ids[s] = Some(b.declare(&fresh));
    }
    let mut writer = StateWriter::new(encoding, name);
    for s in (0..n).filter(|&s| live[s]) {
        let body = if free[s] {
            crate::derivative::encoded(&states[s].1, encoding)?
        } else {
            let out = steps[s].iter().filter(|&&(_, t)| live[t]);
            writer.body(accepting[s], out.map(|&(a, t)| (&scalars[a], ids[t])), b)?
        };
        b.define(ids[s]?, body);
    }
    Some(Expr::Rule(ids[0]?))
}

/// The state sets of the patterns of a [`product_with_format`], met as it goes.
struct PatternSets<'a> {
    nfa: &'a Nfa,
    ends: &'a [usize],
    atoms: &'a [(u32, u32)],
    /// A character of each atom (`None`: the atom holds none).
    atom_char: &'a [Option<char>],
    seen: Vec<bool>,
    sets: Vec<Vec<usize>>,
    ids: FxHashMap<Vec<usize>, usize>,
    /// Per set met: the set it steps to on each atom (`None`: no pattern can go on).
    rows: Vec<Option<Vec<Option<usize>>>>,
    /// Per set asked: whether the patterns accept every text from it on.
    universal: FxHashMap<usize, bool>,
}

impl PatternSets<'_> {
    fn all_match(&self, set: usize) -> bool {
        self.ends.iter().all(|e| self.sets[set].contains(e))
    }

    fn row(&mut self, set: usize) -> Vec<Option<usize>> {
        if self.rows.len() <= set {
            self.rows.resize(set + 1, None);
        }
        if let Some(row) = &self.rows[set] {
            return row.clone();
        }
        let mut row = Vec::with_capacity(self.atoms.len());
        for a in 0..self.atoms.len() {
            let lo = self.atoms[a].0;
            if self.atom_char[a].is_none() {
                row.push(None);
                continue;
            }
            let mut next: Vec<usize> = self.sets[set]
                .iter()
                .flat_map(|&s| self.nfa.edges[s].iter())
                .filter(|&&(l, h, _)| l <= lo && lo <= h)
                .map(|&(_, _, t)| t)
                .collect();
            next.sort_unstable();
            next.dedup();
            self.nfa.closure(&mut next, &mut self.seen);
            if next.is_empty() {
                row.push(None);
                continue;
            }
            let n = self.sets.len();
            let id = *self.ids.entry(next.clone()).or_insert(n);
            if id == n {
                self.sets.push(next);
            }
            row.push(Some(id));
        }
        self.rows[set] = Some(row.clone());
        row
    }

    /// Whether the patterns accept every text from `set` on: every set it reaches
    /// matches them all and steps on every character.
    fn universal(&mut self, set: usize) -> bool {
        if let Some(&u) = self.universal.get(&set) {
            return u;
        }
        let mut reached = vec![set];
        let mut i = 0;
        let mut u = true;
        while u && i < reached.len() && reached.len() <= MAX_PRODUCT_STATES {
            let s = reached[i];
            i += 1;
            if !self.all_match(s) {
                u = false;
                break;
            }
            for (a, next) in self.row(s).into_iter().enumerate() {
                match next {
                    None if self.atom_char[a].is_some() => u = false,
                    Some(n) if !reached.contains(&n) => reached.push(n),
                    _ => {}
                }
            }
        }
        let u = u && i == reached.len();
        self.universal.insert(set, u);
        u
    }
}

/// `class` (a character class as [`encode_class`] writes it) with what follows `\u` in
/// its escapes (`"\\" (... | "u" hex...)`, the four hex digits and surrogate pairs: most
/// of a JSON string character's expression) replaced by a call of a rule holding it, one
/// rule per distinct tail in `tails`. A complement's states each read such a class
/// ("any character but these"); in place, each state would hold its own copy of the
/// tail, and the grammar, every pass over it and the automaton entering the states
/// would walk them all. Engines read the call as the escapes' own (the engine's
/// `outline_unicode_escapes` gives every copied escape this shape).
fn outline_unicode_tail(
    class: Expr,
    tails: &mut FxHashMap<Expr, RuleId>,
    b: &mut GrammarBuilder,
    name: &str,
) -> Expr {
    match class {
        Expr::Choice(alts) => Expr::Choice(
            alts.into_iter().map(|alt| outline_unicode_tail(alt, tails, b, name)).collect(),
        ),
        Expr::Seq(mut items) => {
            let escape = items.len() == 2 && items[0].is_literal("\\");
            if let (true, Expr::Choice(after)) = (escape, &mut items[1]) {
                for alt in after.iter_mut().filter(|a| is_unicode_tail(a)) {
                    let tail = std::mem::replace(alt, Expr::Empty);
                    let rule = *tails.entry(tail).or_insert_with_key(|tail| {
                        let fresh = b.fresh_name(&format!("{name}-unicode-escape"));
                        let id = b.declare(&fresh);
                        b.define(id, tail.clone());
                        id
                    });
                    *alt = Expr::Rule(rule);
                }
            }
            Expr::Seq(items)
        }
        other => other,
    }
}

/// For each live state of a DFA (`delta[s][atom]`), a state with the same future: the
/// first met with the same acceptance and, on every atom that holds a character
/// (`usable`), the same target up to such representatives (the product of a pattern and
/// a length bound reaches one position of the pattern by many ways). States are settled
/// after their targets (a reverse topological order, a state's loops on itself
/// compared as loops); states on longer cycles stay their own. One rule is then written
/// per representative.
fn same_futures(
    delta: &[Vec<usize>],
    accepting: &[bool],
    live: &[bool],
    usable: &[bool],
) -> Vec<usize> {
    const DEAD: usize = usize::MAX;
    const ITSELF: usize = usize::MAX - 1;
    let n = delta.len();
    let mut rep: Vec<usize> = (0..n).collect();
    // The live states each state leads to (not itself), and the reverse.
    let targets = |s: usize| {
        let mut ts: Vec<usize> = delta[s]
            .iter()
            .zip(usable)
            .filter(|&(&t, &u)| u && live[t] && t != s)
            .map(|(&t, _)| t)
            .collect();
        ts.sort_unstable();
        ts.dedup();
        ts
    };
    let mut pending: Vec<usize> = vec![0; n];
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut ready = Vec::new();
    for s in (0..n).filter(|&s| live[s]) {
        let ts = targets(s);
        pending[s] = ts.len();
        for t in ts {
            preds[t].push(s);
        }
        if pending[s] == 0 {
            ready.push(s);
        }
    }
    let mut by_future: FxHashMap<(bool, Vec<usize>), usize> = FxHashMap::default();
    while let Some(s) = ready.pop() {
        let row = delta[s]
            .iter()
            .zip(usable)
            .map(|(&t, &u)| match (u && live[t], t == s) {
                (false, _) => DEAD,
                (true, true) => ITSELF,
                (true, false) => rep[t],
            })
            .collect();
        rep[s] = *by_future.entry((accepting[s], row)).or_insert(s);
        for &p in &preds[s] {
            pending[p] -= 1;
            if pending[p] == 0 {
                ready.push(p);
            }
        }
    }
    rep
}

/// The characters of a code point range (surrogates left out).
fn scalar_ranges((lo, hi): (u32, u32)) -> Vec<(char, char)> {
    let mut out = Vec::new();
    for (a, z) in [(lo, hi.min(0xd7ff)), (lo.max(0xe000), hi)] {
        if a <= z {
            if let (Some(a), Some(z)) = (char::from_u32(a), char::from_u32(z)) {
                out.push((a, z));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_schema::matcher::ReferenceMatcher;
    use crate::regex::{regex_to_ir, RegexOptions};

    fn complement_of(pattern: &str) -> crate::ir::Grammar {
        complement_in(pattern, CharEncoding::Raw)
    }

    /// The complement of `pattern`, its characters written in `encoding`.
    fn complement_in(pattern: &str, encoding: CharEncoding) -> crate::ir::Grammar {
        let mut b = GrammarBuilder::new();
        let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let e = regex_to_ir(pattern, &mut b, opts).unwrap();
        let c = complement(&e, encoding, &mut b, "p").unwrap();
        let root = b.declare("root");
        b.define(root, c);
        b.finish(root).unwrap()
    }

    #[test]
    fn texts_of_surrogate_code_points_alone_are_none() {
        // A range across the surrogate code points, and two ranges that end and start
        // around them: what the first matches and the others do not holds no character.
        let class = |lo, hi| Expr::Class(CharClass::new(false, [(lo, hi)]));
        let exprs =
            [class('b', '\u{10ffff}'), class('b', '\u{d7ff}'), class('\u{e000}', '\u{10ffff}')];
        let mut b = GrammarBuilder::new();
        let only_first = |m: &[bool]| m[0] && !m[1] && !m[2];
        let e = combination(&exprs, only_first, CharEncoding::Raw, &mut b, "p");
        assert!(e.is_some_and(|e| crate::regex::is_never(&e.expr)));
    }

    #[test]
    fn complements_are_exact() {
        let texts = ["", "a", "ab", "abc", "a:b", "a:b:c", "x-1", "é", ":", "aa:bb:cc:dd", "12"];
        for pattern in ["^[a-z]+:[a-z]+$", "a.c", "^(ab|c)*$", "[0-9]{2}", "^$", "b", "^a?$"] {
            let g = complement_of(pattern);
            let re = regex_lite_search(pattern);
            for t in texts {
                assert_eq!(ReferenceMatcher::new(&g).matches(t), !re(t), "{pattern} on {t:?}");
            }
        }
    }

    /// In a JSON string every state of a complement reads "any character but these",
    /// escapes included: what follows `\u` is one rule that every state calls, not a copy
    /// per state (the grammar of a key pattern's complement was most of its size).
    #[test]
    fn a_json_complements_unicode_escapes_are_one_rule() {
        let pattern = "^[a-z]{2,3}(-[A-Z]{2})?$";
        let g = complement_in(pattern, CharEncoding::JsonString);
        let tails: Vec<usize> =
            (0..g.rules.len()).filter(|&r| is_unicode_tail(&g.rules[r].body)).collect();
        // The classes read: any character but a lowercase letter, but an uppercase one,
        // but `-`, and any at all (past a mismatch); each with its own `\u` forms.
        assert!(!tails.is_empty() && tails.len() <= 4, "{} tail rules", tails.len());
        let mut calls = vec![0usize; g.rules.len()];
        for rule in &g.rules {
            rule.body.for_each_rule_ref(&mut |r: RuleId| calls[r.index()] += 1);
        }
        assert!(tails.iter().map(|&t| calls[t]).sum::<usize>() > 2 * tails.len());
        // No state holds `\u` forms of its own.
        fn holds_tail(e: &Expr) -> bool {
            match e {
                _ if is_unicode_tail(e) => true,
                Expr::Seq(items) | Expr::Choice(items) => items.iter().any(holds_tail),
                Expr::Repeat { expr, .. } => holds_tail(expr),
                _ => false,
            }
        }
        let mut states = (0..g.rules.len()).filter(|r| !tails.contains(r));
        assert!(states.all(|r| !holds_tail(&g.rules[r].body)));
        let re = regex_lite_search(pattern);
        let texts = ["ab", "abc", "abcd", "ab-CD", "ab-C", "a", "", "AB", "ab-cd", "\\u0061b"];
        for t in texts {
            let decoded = t.replace("\\u0061", "a");
            let expected = !re(&decoded);
            assert_eq!(ReferenceMatcher::new(&g).matches(t), expected, "{t:?}");
        }
    }

    /// A pattern within a length bound: the product reaches each position of the
    /// pattern by many ways (after `a:` and two letters, or `ab:` and one), written once.
    #[test]
    fn states_with_the_same_future_are_one_rule() {
        let pattern = "^[a-z0-9-]+:[a-z]+$";
        let mut b = GrammarBuilder::new();
        let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let e = regex_to_ir(pattern, &mut b, opts).unwrap();
        let bounded = Expr::repeat(Expr::Class(CharClass::any()), 0, Some(12));
        let both = |m: &[bool]| m[0] && m[1];
        let c = combination(&[e, bounded], both, CharEncoding::Raw, &mut b, "p").unwrap();
        let c = c.with_plain_rests(&mut b);
        let root = b.declare("root");
        b.define(root, c);
        let g = b.finish(root).unwrap();
        // 41 rules when every state of the product is written (root included), 32 with
        // the states of the same future merged.
        assert!(g.rules.len() <= 32, "{} rules", g.rules.len());
        let re = regex_lite_search(pattern);
        let texts = [
            "a:b",
            "ab:c",
            "a:bc",
            "abcdefghij:k",
            "abcdefghij:kl",
            "a:bcdefghijk",
            "a:bcdefghijkl",
            ":",
            "a:",
            "a-b:c9",
        ];
        for t in texts {
            let expected = re(t) && t.chars().count() <= 12;
            assert_eq!(ReferenceMatcher::new(&g).matches(t), expected, "{t:?}");
        }
    }

    /// A length bound is a count beside the NFA states, not `max` states of its own: a
    /// bound past the NFA's limit is no limit to it, a bound without a maximum counts
    /// only up to its minimum, and no state is written that only the surrogate code
    /// points (no character) would reach.
    #[test]
    fn length_bounds_are_counted() {
        let cases: [(&str, u32, Option<u32>, bool); 7] = [
            ("^(ab|c)$", 0, Some(MAX_NFA_STATES as u32 + 10_000), true),
            ("^[0-9]+$", 3, Some(5), true),
            ("[^a-c]", 2, None, false),
            ("[^a-c]", 0, Some(3), false),
            ("^a", 2, Some(4), true),
            ("^c", 4, None, true),
            ("^[a-c]+[0-9]", 0, Some(4), true),
        ];
        let texts = [
            "", "a", "ab", "c", "abc", "1", "12", "123", "12345", "123456", "x", "bx", "cab",
            "a\n", "abcd", "abcde", "cabbage", "ab1", "ab12", "abc12", "c1x", "b\u{e9}1",
        ];
        for (pattern, min, max, positive) in cases {
            let mut b = GrammarBuilder::new();
            let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
            let e = regex_to_ir(pattern, &mut b, opts).unwrap();
            let bounded = Expr::repeat(Expr::Class(CharClass::any()), min, max);
            let wanted = |m: &[bool]| m[1] && m[0] == positive;
            let c = combination(&[e, bounded], wanted, CharEncoding::Raw, &mut b, "p").unwrap();
            let c = c.with_plain_rests(&mut b);
            let root = b.declare("root");
            b.define(root, c);
            let g = b.finish(root).unwrap();
            let re = regex_lite_search(pattern);
            for t in texts {
                let n = t.chars().count() as u32;
                let expected = re(t) == positive && n >= min && max.is_none_or(|m| n <= m);
                let got = ReferenceMatcher::new(&g).matches(t);
                assert_eq!(got, expected, "{pattern} {min}..{max:?} on {t:?}");
            }
            let mut referred = vec![false; g.rules.len()];
            referred[g.root.index()] = true;
            for rule in &g.rules {
                rule.body.for_each_rule_ref(&mut |r: RuleId| referred[r.index()] = true);
            }
            assert!(referred.iter().all(|&r| r), "{pattern}: a rule no other refers to");
        }
    }

    /// Where only the length bound decides (past `^id:`), the rest is one counted
    /// repetition, not a rule per count; a chain entered at every count of a loop before
    /// it (`^[a-z]+:`) stays one rule per count, which every entry shares.
    #[test]
    fn free_ends_are_counted_rests() {
        for (pattern, max, rules_at_most) in [("^id:", 300, 8), ("^[a-z]+:[a-z]+$", 300, 910)] {
            let mut b = GrammarBuilder::new();
            let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
            let e = regex_to_ir(pattern, &mut b, opts).unwrap();
            let bounded = Expr::repeat(Expr::Class(CharClass::any()), 0, Some(max));
            let both = |m: &[bool]| m[0] && m[1];
            let c = combination(&[e, bounded], both, CharEncoding::Raw, &mut b, "p").unwrap();
            let rests = c.rests.len();
            let c = c.with_plain_rests(&mut b);
            let root = b.declare("root");
            b.define(root, c);
            let g = b.finish(root).unwrap();
            assert!(g.rules.len() <= rules_at_most, "{pattern}: {} rules", g.rules.len());
            assert_eq!(rests, usize::from(pattern == "^id:"), "{pattern}");
            let re = regex_lite_search(pattern);
            let long = "x".repeat(max as usize);
            for t in [
                "id:",
                "id:x",
                "ab:cd",
                "a:b",
                "id",
                &format!("id:{long}")[..max as usize],
                &format!("id:{long}"),
            ] {
                let expected = re(t) && t.chars().count() <= max as usize;
                assert_eq!(
                    ReferenceMatcher::new(&g).matches(t),
                    expected,
                    "{pattern} on {}",
                    t.len()
                );
            }
        }
    }

    /// A search with the same pattern through the converter's own (positive) lowering.
    /// A format followed through patterns by its derivatives matches what both match (as
    /// an independent regex engine judges them), and the part after a pattern's free end
    /// is the format's own expression: a handful of states for `uri` under `^https?://`,
    /// where the combination writes the format's whole automaton.
    #[test]
    fn formats_followed_through_patterns_match_both() {
        let uri = crate::json_schema::formats::regex_for("uri").unwrap();
        let texts = [
            "https://a.b/c?d#e",
            "http://x",
            "https://",
            "https://[::1]:80/p",
            "https://[1:2::3]/",
            "https://[1:2:3]/",
            "file:///etc",
            "ftp://a",
            "https://a b",
            "http:/x",
            "",
            "h",
            "https://ü.example/",
            "mailto:x@y",
            "https://%zz",
            "https://%41",
            "ab1",
            "a1b2",
        ];
        let mut built = 0;
        for pattern in ["^https?://", "^(https|file)://", "^[a-z]+:", "1", "^a[0-9]b"] {
            for format in [uri.as_str(), "[a-z0-9]+", "a[0-9]b[0-9]*"] {
                let mut b = GrammarBuilder::new();
                let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
                let whole = RegexOptions { whole_match: true, encoding: CharEncoding::Raw };
                let p = regex_to_ir(pattern, &mut b, raw).unwrap();
                let f = regex_to_ir(format, &mut b, whole).unwrap();
                let product = product_with_format(&[p], &f, CharEncoding::Raw, &mut b, "p");
                let Some(product) = product else { continue };
                built += 1;
                let root = b.declare("root");
                b.define(root, product);
                let g = b.finish(root).unwrap();
                let search = ::regex::Regex::new(pattern).unwrap();
                let whole = ::regex::Regex::new(&format!("^(?:{format})$")).unwrap();
                for t in texts {
                    let expected = search.is_match(t) && whole.is_match(t);
                    let got = ReferenceMatcher::new(&g).matches(t);
                    assert_eq!(got, expected, "{pattern} with {format} on {t:?}");
                }
            }
        }
        // Only `1`, searched anywhere in a `uri`, has the product follow the format past
        // its limit.
        assert_eq!(built, 14);
        let mut b = GrammarBuilder::new();
        let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let whole = RegexOptions { whole_match: true, encoding: CharEncoding::Raw };
        let p = regex_to_ir("^https?://", &mut b, raw).unwrap();
        let f = regex_to_ir(&uri, &mut b, whole).unwrap();
        let e = product_with_format(&[p], &f, CharEncoding::JsonString, &mut b, "p").unwrap();
        let root = b.declare("root");
        b.define(root, e);
        let g = b.finish(root).unwrap();
        assert!(g.rules.len() < 16, "{} rules", g.rules.len());
        // Anchored at both ends, a pattern never lets the format go on alone.
        let mut b = GrammarBuilder::new();
        let p = regex_to_ir("^https://[a-z]+\\.jpg$", &mut b, raw).unwrap();
        let f = regex_to_ir(&uri, &mut b, whole).unwrap();
        assert!(product_with_format(&[p], &f, CharEncoding::JsonString, &mut b, "p").is_none());
    }

    fn regex_lite_search(pattern: &str) -> impl Fn(&str) -> bool {
        let mut b = GrammarBuilder::new();
        let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let e = regex_to_ir(pattern, &mut b, opts).unwrap();
        let root = b.declare("root");
        b.define(root, e);
        let g = b.finish(root).unwrap();
        move |t: &str| ReferenceMatcher::new(&g).matches(t)
    }
}
