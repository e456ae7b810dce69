//! The grammar IR: what every frontend (GBNF, EBNF, JSON Schema, regex) produces and
//! what the engine compiles.
//!
//! A [`Grammar`] is a list of [`Rule`]s, addressed by [`RuleId`], with one root. A rule's
//! body is an [`Expr`]: byte strings, character classes over Unicode scalar values,
//! sequences, choices, rule references, counted repetitions, the empty string, and
//! token-id sets (GBNF's `<[id]>`). Byte-level ranges ([`Expr::ByteRanges`]) exist for the
//! engine's passes, which lower character classes to UTF-8 byte automata; frontends do not
//! produce them.
//!
//! The IR is plain data with structural equality, so a frontend's output can be compared
//! with the result of printing it and parsing it back.
//!
//! ```
//! use grammask_syntax::ir::{Expr, GrammarBuilder};
//! let mut b = GrammarBuilder::new();
//! let digit = b.declare("digit");
//! b.define(digit, Expr::class(false, vec![('0', '9')]));
//! let root = b.declare("root");
//! b.define(root, Expr::repeat(Expr::Rule(digit), 1, None));
//! let grammar = b.finish(root).unwrap();
//! assert_eq!(grammar.rules.len(), 2);
//! ```

pub use crate::text::FreeText;
use rustc_hash::FxHashMap as HashMap;
use std::fmt;

/// Identifies a rule of one [`Grammar`]: an index into [`Grammar::rules`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(u32);

impl RuleId {
    /// The id of the rule at `index`.
    ///
    /// # Panics
    /// When `index` does not fit in 32 bits; grammars are limited far below that.
    pub fn new(index: usize) -> Self {
        RuleId(u32::try_from(index).expect("rule index fits in u32"))
    }

    /// The index of this rule in [`Grammar::rules`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A byte range `start..end` in the source text a grammar was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
}

/// A set of Unicode scalar values, as written: inclusive ranges, possibly negated.
///
/// `ranges` are kept sorted by start with overlapping and adjacent ranges merged
/// (see [`CharClass::new`]), so equal sets written differently compare equal.
/// A negated class matches every scalar value outside `ranges`; `.` is the negated
/// empty class.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CharClass {
    /// Whether the class matches the complement of `ranges`.
    pub negated: bool,
    /// Sorted, merged, inclusive ranges.
    pub ranges: Box<[(char, char)]>,
}

impl CharClass {
    /// A class from ranges in any order; ranges with `start > end` are dropped (frontends
    /// report them as errors before building the IR).
    pub fn new(negated: bool, ranges: impl IntoIterator<Item = (char, char)>) -> Self {
        let mut ranges: Vec<(char, char)> = ranges.into_iter().filter(|(a, b)| a <= b).collect();
        ranges.sort();
        let mut merged: Vec<(char, char)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            if let Some(last) = merged.last_mut() {
                let next = (last.1 as u32).saturating_add(1);
                if (lo as u32) <= next || (last.1 == '\u{D7FF}' && lo == '\u{E000}') {
                    if hi > last.1 {
                        last.1 = hi;
                    }
                    continue;
                }
            }
            merged.push((lo, hi));
        }
        CharClass { negated, ranges: merged.into_boxed_slice() }
    }

    /// Any one character: `.` in GBNF.
    pub fn any() -> Self {
        CharClass { negated: true, ranges: Box::default() }
    }

    /// Whether `c` is in the set.
    pub fn contains(&self, c: char) -> bool {
        let inside = self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        inside != self.negated
    }

    /// Whether the set holds no character (`[]`, or a negated class of every scalar
    /// value), without building [`CharClass::positive_ranges`].
    pub fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    /// The smallest character in the set, without building
    /// [`CharClass::positive_ranges`].
    pub fn first(&self) -> Option<char> {
        if !self.negated {
            return self.ranges.first().map(|&(lo, _)| lo);
        }
        // The first scalar value in `lo..hi` (surrogates are none).
        let first = |lo: u32, hi: u32| {
            let c = if (0xD800..0xE000).contains(&lo) { 0xE000 } else { lo };
            if c < hi {
                char::from_u32(c)
            } else {
                None
            }
        };
        let mut next: u32 = 0;
        for &(lo, hi) in &self.ranges {
            if let Some(c) = first(next, lo as u32) {
                return Some(c);
            }
            next = next.max(hi as u32 + 1);
        }
        first(next, 0x11_0000)
    }

    /// The set as positive, sorted, merged ranges (the complement taken when negated).
    pub fn positive_ranges(&self) -> Vec<(char, char)> {
        if !self.negated {
            return self.ranges.to_vec();
        }
        let mut out = Vec::new();
        let mut next: u32 = 0;
        for &(lo, hi) in &self.ranges {
            push_scalar_range(&mut out, next, lo as u32);
            next = hi as u32 + 1;
        }
        push_scalar_range(&mut out, next, 0x11_0000);
        out
    }
}

/// Pushes the scalar values in `lo..hi` (exclusive end) as char ranges, skipping surrogates.
fn push_scalar_range(out: &mut Vec<(char, char)>, lo: u32, hi: u32) {
    let parts = [(lo, hi.min(0xD800)), (lo.max(0xE000), hi)];
    for (a, b) in parts {
        if a < b {
            if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b - 1)) {
                out.push((a, b));
            }
        }
    }
}

/// A set of token ids named by a grammar (GBNF `<[id]>`, `!<[id]>`): matches exactly one
/// whole token, never bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenSet {
    /// Whether the set matches every token except `ids`.
    pub negated: bool,
    /// Sorted, deduplicated token ids.
    pub ids: Box<[u32]>,
}

/// A rule body.
///
/// Grammars hold tens of thousands of nodes, and a compiled grammar keeps its IR (each
/// rule's automaton is built from it on first use), so a node is kept at 32 bytes: the
/// lists inside classes and token sets are boxed slices, not vectors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// A literal byte string (a string literal, UTF-8 encoded).
    Bytes(Vec<u8>),
    /// One character of a class.
    Class(CharClass),
    /// One byte in one of these inclusive ranges (sorted, merged). Produced by the engine's
    /// passes only.
    ByteRanges(Vec<(u8, u8)>),
    /// Each item in turn.
    Seq(Vec<Expr>),
    /// Any one of the alternatives.
    Choice(Vec<Expr>),
    /// The body of another rule.
    Rule(RuleId),
    /// `expr` repeated at least `min` and at most `max` times (`None`: unbounded).
    Repeat {
        /// What is repeated.
        expr: Box<Expr>,
        /// Minimum count.
        min: u32,
        /// Maximum count, `None` when unbounded.
        max: Option<u32>,
    },
    /// One whole token from a set of token ids.
    Tokens(TokenSet),
    /// Free text avoiding a set of strings, possibly up to the first of them
    /// ([`crate::text`]).
    Text(Box<FreeText>),
}

const _: () = assert!(std::mem::size_of::<Expr>() == 32);

impl Expr {
    /// A literal string.
    pub fn literal(s: &str) -> Expr {
        if s.is_empty() {
            Expr::Empty
        } else {
            Expr::Bytes(s.as_bytes().to_vec())
        }
    }

    /// Whether this is [`Expr::literal`]`(s)`, compared without building it.
    pub fn is_literal(&self, s: &str) -> bool {
        match self {
            Expr::Empty => s.is_empty(),
            Expr::Bytes(b) => !s.is_empty() && b == s.as_bytes(),
            _ => false,
        }
    }

    /// A character class.
    pub fn class(negated: bool, ranges: impl IntoIterator<Item = (char, char)>) -> Expr {
        Expr::Class(CharClass::new(negated, ranges))
    }

    /// A sequence; a single item stands for itself and no items for [`Expr::Empty`].
    pub fn seq(mut items: Vec<Expr>) -> Expr {
        match items.len() {
            0 => Expr::Empty,
            1 => items.pop().unwrap_or(Expr::Empty),
            _ => Expr::Seq(items),
        }
    }

    /// A choice; a single alternative stands for itself.
    ///
    /// # Panics
    /// With no alternatives: a choice of nothing matches nothing, which the IR cannot say.
    pub fn choice(mut alternatives: Vec<Expr>) -> Expr {
        assert!(!alternatives.is_empty(), "a choice needs at least one alternative");
        if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Expr::Empty)
        } else {
            Expr::Choice(alternatives)
        }
    }

    /// `expr{min,max}`.
    pub fn repeat(expr: Expr, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat { expr: Box::new(expr), min, max }
    }

    /// `expr?`.
    pub fn optional(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, Some(1))
    }

    /// `expr*`.
    pub fn star(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, None)
    }

    /// `expr+`.
    pub fn plus(expr: Expr) -> Expr {
        Expr::repeat(expr, 1, None)
    }

    /// This expression with every reference to a rule `r` renumbered to `new_id[r]`; a
    /// reference to a rule whose `new_id` is `None` (a dropped rule) becomes the empty
    /// class, which matches nothing.
    pub fn renumber_rules(mut self, new_id: &[Option<RuleId>]) -> Expr {
        self.renumber_rules_in_place(new_id);
        self
    }

    /// [`Expr::renumber_rules`] in place: nothing is allocated but the empty classes of
    /// dropped references.
    pub fn renumber_rules_in_place(&mut self, new_id: &[Option<RuleId>]) {
        match self {
            Expr::Rule(r) => match new_id[r.index()] {
                Some(id) => *r = id,
                None => *self = Expr::Class(CharClass::new(false, [])),
            },
            Expr::Seq(items) | Expr::Choice(items) => {
                items.iter_mut().for_each(|e| e.renumber_rules_in_place(new_id))
            }
            Expr::Repeat { expr, .. } => expr.renumber_rules_in_place(new_id),
            _ => {}
        }
    }

    /// Calls `f` on every reference to a rule this expression holds directly, in the
    /// order of [`Expr::for_each_rule_ref`], to read or rewrite it.
    pub fn for_each_rule_ref_mut(&mut self, f: &mut impl FnMut(&mut RuleId)) {
        match self {
            Expr::Rule(id) => f(id),
            Expr::Seq(items) | Expr::Choice(items) => {
                items.iter_mut().for_each(|e| e.for_each_rule_ref_mut(f))
            }
            Expr::Repeat { expr, .. } => expr.for_each_rule_ref_mut(f),
            Expr::Empty
            | Expr::Bytes(_)
            | Expr::Class(_)
            | Expr::ByteRanges(_)
            | Expr::Tokens(_)
            | Expr::Text(_) => {}
        }
    }

    /// Calls `f` on every rule this expression refers to directly.
    pub fn for_each_rule_ref(&self, f: &mut impl FnMut(RuleId)) {
        self.for_each_rule_ref_at_end(false, &mut |id, _| f(id));
    }

    /// Calls `f` on every rule this expression refers to directly, with whether the
    /// reference is in tail position (nothing is read after it: the last item of a
    /// sequence, an alternative, never inside a repetition), given whether the expression
    /// itself is (`at_end`).
    pub fn for_each_rule_ref_at_end(&self, at_end: bool, f: &mut impl FnMut(RuleId, bool)) {
        match self {
            Expr::Rule(id) => f(*id, at_end),
            Expr::Seq(items) => {
                let last = items.len().saturating_sub(1);
                for (i, item) in items.iter().enumerate() {
                    item.for_each_rule_ref_at_end(at_end && i == last, f);
                }
            }
            Expr::Choice(items) => items.iter().for_each(|e| e.for_each_rule_ref_at_end(at_end, f)),
            Expr::Repeat { expr, .. } => expr.for_each_rule_ref_at_end(false, f),
            Expr::Empty
            | Expr::Bytes(_)
            | Expr::Class(_)
            | Expr::ByteRanges(_)
            | Expr::Tokens(_)
            | Expr::Text(_) => {}
        }
    }

    /// Number of nodes in the expression tree (a size measure for limits).
    pub fn size(&self) -> usize {
        1 + match self {
            Expr::Seq(items) | Expr::Choice(items) => items.iter().map(Expr::size).sum(),
            Expr::Repeat { expr, .. } => expr.size(),
            // One automaton state per character of the strings, at most.
            Expr::Text(text) => text.avoid.iter().map(|s| s.chars().count()).sum(),
            _ => 0,
        }
    }

    /// The nodes of [`Expr::size`] with each bounded repetition counted as many times as
    /// its largest count (`x{2,255}`: 255 copies of `x`), as an automaton holds them: a
    /// measure of the states a copy of the expression costs. Saturates at `usize::MAX`
    /// (repetitions nested with huge counts).
    pub fn weight(&self) -> usize {
        self.weight_with(&|_| 1)
    }

    /// [`Expr::weight`] with each reference to a rule weighing `reference(rule)` (1 in
    /// [`Expr::weight`]): a call that an automaton reads as the callee's states in place
    /// weighs what those states do.
    pub fn weight_with(&self, reference: &impl Fn(RuleId) -> usize) -> usize {
        match self {
            Expr::Seq(items) | Expr::Choice(items) => items
                .iter()
                .fold(0usize, |sum, e| sum.saturating_add(e.weight_with(reference)))
                .saturating_add(1),
            Expr::Repeat { expr, min, max } => {
                expr.weight_with(reference).saturating_mul(copies(*min, *max)).saturating_add(1)
            }
            Expr::Rule(rule) => reference(*rule),
            _ => self.size(),
        }
    }
}

/// The copies of its body an automaton holds for a repetition `min..=max` (`None`:
/// unbounded, whose last copy loops).
pub fn copies(min: u32, max: Option<u32>) -> usize {
    max.unwrap_or(min).max(1) as usize
}

/// A named rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The rule's name, unique in its grammar.
    pub name: String,
    /// What the rule matches.
    pub body: Expr,
    /// EBNF lookahead assertion `(= ...)`: what must follow the rule.
    pub lookahead: Option<Expr>,
    /// Where the rule is defined in the source (empty for generated rules).
    pub span: Span,
}

/// A grammar: rules and the root rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Grammar {
    /// The rules; a [`RuleId`] indexes this list.
    pub rules: Vec<Rule>,
    /// The rule a whole document must match.
    pub root: RuleId,
}

impl Grammar {
    /// The rule with id `id`.
    ///
    /// # Panics
    /// When `id` is not of this grammar.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.index()]
    }

    /// The id of the rule called `name`.
    pub fn rule_id(&self, name: &str) -> Option<RuleId> {
        self.rules.iter().position(|r| r.name == name).map(RuleId::new)
    }

    /// Total size of all rule bodies (a measure for limits).
    pub fn size(&self) -> usize {
        self.rules.iter().map(|r| r.body.size() + r.lookahead.as_ref().map_or(0, Expr::size)).sum()
    }
}

/// Builds a [`Grammar`] rule by rule; rules may be referred to before they are defined.
#[derive(Debug, Default)]
pub struct GrammarBuilder {
    rules: Vec<Rule>,
    defined: Vec<bool>,
    by_name: HashMap<String, RuleId>,
    /// Per prefix, the suffix [`GrammarBuilder::fresh_name`] tries first (the ones below
    /// it are taken), so that naming many rules of one prefix stays linear.
    next_suffix: std::cell::RefCell<HashMap<String, u64>>,
}

/// Appends the decimal digits of `n` to `out`.
fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// A rule that was referred to but never defined, returned by [`GrammarBuilder::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedRule(pub String);

impl GrammarBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of rule `name`, declaring it if needed.
    pub fn declare(&mut self, name: &str) -> RuleId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = RuleId::new(self.rules.len());
        self.rules.push(Rule {
            name: name.to_string(),
            body: Expr::Empty,
            lookahead: None,
            span: Span::default(),
        });
        self.defined.push(false);
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The id of rule `name` if it was declared.
    pub fn lookup(&self, name: &str) -> Option<RuleId> {
        self.by_name.get(name).copied()
    }

    /// How many rules are declared.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The name of rule `id`.
    pub fn name(&self, id: RuleId) -> &str {
        &self.rules[id.index()].name
    }

    /// The body of rule `id`, as defined so far.
    pub fn body(&self, id: RuleId) -> &Expr {
        &self.rules[id.index()].body
    }

    /// Whether `id` has a body already.
    pub fn is_defined(&self, id: RuleId) -> bool {
        self.defined[id.index()]
    }

    /// A new rule name starting with `prefix` that no rule has.
    pub fn fresh_name(&self, prefix: &str) -> String {
        if !self.by_name.contains_key(prefix) {
            return prefix.to_string();
        }
        let mut next = self.next_suffix.borrow_mut();
        let first = next.get(prefix).copied().unwrap_or(1);
        // `prefix-i` (rules are named by the thousand: no formatting machinery).
        let mut name = String::with_capacity(prefix.len() + 8);
        let mut i = first;
        loop {
            name.clear();
            name.push_str(prefix);
            name.push('-');
            push_decimal(&mut name, i);
            if !self.by_name.contains_key(&name) {
                break;
            }
            i += 1;
        }
        // The name is not declared yet: a caller may not use it, so this suffix is
        // tried again next time.
        match next.get_mut(prefix) {
            Some(suffix) => *suffix = i,
            None => {
                next.insert(prefix.to_string(), i);
            }
        }
        name
    }

    /// Declares a rule with a fresh name from `prefix` and defines it as `body`.
    pub fn add_fresh(&mut self, prefix: &str, body: Expr) -> RuleId {
        let name = self.fresh_name(prefix);
        let id = self.declare(&name);
        self.define(id, body);
        id
    }

    /// Sets the body of `id`.
    pub fn define(&mut self, id: RuleId, body: Expr) {
        self.rules[id.index()].body = body;
        self.defined[id.index()] = true;
    }

    /// Sets the body, lookahead and source span of `id`.
    pub fn define_at(&mut self, id: RuleId, body: Expr, lookahead: Option<Expr>, span: Span) {
        let rule = &mut self.rules[id.index()];
        rule.body = body;
        rule.lookahead = lookahead;
        rule.span = span;
        self.defined[id.index()] = true;
    }

    /// Copies the rules of `grammar` into this builder under fresh names starting with
    /// `prefix`, its references renumbered; returns the id of its root's copy.
    pub fn embed(&mut self, grammar: &Grammar, prefix: &str) -> RuleId {
        let ids: Vec<Option<RuleId>> = grammar
            .rules
            .iter()
            .map(|rule| {
                let name = self.fresh_name(&format!("{prefix}-{}", rule.name));
                Some(self.declare(&name))
            })
            .collect();
        for (rule, id) in grammar.rules.iter().zip(&ids) {
            let id = id.expect("every rule has a copy");
            let body = rule.body.clone().renumber_rules(&ids);
            let lookahead = rule.lookahead.clone().map(|la| la.renumber_rules(&ids));
            self.define_at(id, body, lookahead, Span::default());
        }
        ids[grammar.root.index()].expect("the root has a copy")
    }

    /// The grammar, or the first rule referred to but never defined.
    pub fn finish(self, root: RuleId) -> Result<Grammar, UndefinedRule> {
        if let Some(i) = self.defined.iter().position(|d| !d) {
            return Err(UndefinedRule(self.rules[i].name.clone()));
        }
        Ok(Grammar { rules: self.rules, root })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn scalar() -> impl Strategy<Value = char> {
        prop_oneof![
            Just('\0'),
            Just('\u{D7FF}'),
            Just('\u{E000}'),
            Just('\u{10FFFF}'),
            any::<char>(),
            (0u32..0x80).prop_map(|c| char::from_u32(c).unwrap_or('a')),
        ]
    }

    /// Fresh names are the prefix, then the prefix and the first free number, past the
    /// names declared by hand and past ten.
    #[test]
    fn fresh_names_number_past_the_taken_ones() {
        let mut b = GrammarBuilder::new();
        b.declare("item-2");
        let names: Vec<String> = (0..12)
            .map(|_| {
                let id = b.add_fresh("item", Expr::Empty);
                b.name(id).to_string()
            })
            .collect();
        let expected = ["item", "item-1", "item-3", "item-4", "item-5", "item-6", "item-7"];
        assert_eq!(names[..7], expected);
        assert_eq!(names[11], "item-12");
        let mut out = String::new();
        push_decimal(&mut out, 0);
        push_decimal(&mut out, u64::MAX);
        assert_eq!(out, format!("0{}", u64::MAX));
    }

    #[test]
    fn weight_counts_the_copies_of_bounded_repetitions() {
        let pair = Expr::seq(vec![Expr::literal("a"), Expr::class(false, vec![('0', '9')])]);
        assert_eq!(pair.size(), 3);
        assert_eq!(pair.weight(), 3);
        assert_eq!(Expr::repeat(pair.clone(), 2, Some(255)).weight(), 1 + 3 * 255);
        assert_eq!(Expr::repeat(pair.clone(), 0, None).weight(), 1 + 3);
        assert_eq!(Expr::repeat(pair.clone(), 4, None).weight(), 1 + 3 * 4);
        assert_eq!(Expr::repeat(pair.clone(), 2, Some(255)).size(), 4);
        let huge = |e: Expr| Expr::repeat(e, 0, Some(u32::MAX));
        assert_eq!(huge(huge(huge(pair))).weight(), usize::MAX);
    }

    proptest! {
        #[test]
        fn emptiness_and_first_agree_with_the_positive_ranges(
            negated in any::<bool>(),
            ranges in proptest::collection::vec((scalar(), scalar()), 0..4),
        ) {
            let class = CharClass::new(negated, ranges);
            let positive = class.positive_ranges();
            prop_assert_eq!(class.is_empty(), positive.is_empty(), "{:?}", class);
            prop_assert_eq!(class.first(), positive.first().map(|&(lo, _)| lo), "{:?}", class);
        }
    }

    #[test]
    fn full_and_empty_classes() {
        assert!(CharClass::new(false, []).is_empty());
        assert!(!CharClass::any().is_empty());
        assert!(CharClass::new(true, [('\0', '\u{10FFFF}')]).is_empty());
        assert!(CharClass::new(true, [('\0', '\u{D7FF}'), ('\u{E000}', '\u{10FFFF}')]).is_empty());
        assert!(!CharClass::new(true, [('\0', '\u{D7FF}'), ('\u{E001}', '\u{10FFFF}')]).is_empty());
    }
}
