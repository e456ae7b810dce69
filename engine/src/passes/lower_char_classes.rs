//! Byte-level expansion of character classes.
//!
//! Each class becomes a choice of UTF-8 byte sequences ([`Expr::ByteRanges`] in a row),
//! computed by regex-syntax's `Utf8Sequences`. Automata then read bytes, and a token that
//! ends in the middle of a multi-byte character leaves the matcher in the middle of that
//! character's sequence.
//!
//! The compiler's pipeline keeps classes as they are and lowers them where automata are
//! built ([`ClassTable`]: each distinct class once per grammar, each occurrence a
//! reference to it), so the passes copy and walk one node per class where its lowered
//! form has about 35 (a JSON string's character); the passes that measure automaton size
//! count a class by the size of its lowered form. [`lower_char_classes`] is the same
//! expansion as a pass, for a byte-level IR.

use crate::automaton::SetHasher;
use crate::ids::TokenSetId;
use grammask_syntax::ir::{CharClass, Expr, FreeText, Grammar, RuleId, TokenSet};
use grammask_syntax::text::TextAutomaton;
use regex_syntax::utf8::Utf8Sequences;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, LazyLock, RwLock};

/// Invariant established: no [`Expr::Class`] remains; each became its UTF-8 byte
/// automaton.
pub fn lower_char_classes(mut grammar: Grammar) -> Grammar {
    // Inlined copies repeat the same classes (a JSON string's characters in every string):
    // each distinct class is lowered once.
    let table = ClassTable::of(&grammar);
    for rule in &mut grammar.rules {
        table.lower(&mut rule.body);
        if let Some(la) = &mut rule.lookahead {
            table.lower(la);
        }
    }
    grammar
}

/// A map keyed by character class, with the automata's fast hasher: a class's ranges
/// are few, and every occurrence is looked up.
pub(crate) type ByClass<V> = HashMap<CharClass, V, BuildHasherDefault<SetHasher>>;

/// The lowered form of every distinct class of a grammar, for automaton construction.
#[derive(Debug, Default)]
pub(crate) struct ClassTable {
    lowered: ByClass<Arc<Lowered>>,
    /// The automaton of each distinct free text.
    texts: HashMap<FreeText, TextAutomaton>,
    /// IR nodes of the grammar walked by [`ClassTable::of`] (its [`Grammar::size`]).
    pub(crate) nodes: usize,
    /// Per rule: the IR nodes of its body ([`ClassTable::rule_nodes`]).
    body_nodes: Vec<u32>,
    /// The distinct token sets met on the way, in the order first met, and the id of each
    /// (its index there): [`ClassTable::token_sets`].
    tokens: (Vec<TokenSet>, HashMap<TokenSet, TokenSetId>),
}

impl ClassTable {
    /// Lowers the classes of every rule of `grammar` (bodies and lookaheads), and gathers
    /// its token sets on the way (the one walk over the grammar automata are built from).
    pub(crate) fn of(grammar: &Grammar) -> ClassTable {
        let mut table = ClassTable::default();
        table.body_nodes.reserve(grammar.rules.len());
        for rule in &grammar.rules {
            let before = table.nodes;
            table.add(&rule.body);
            table.body_nodes.push(u32::try_from(table.nodes - before).unwrap_or(u32::MAX));
            if let Some(la) = &rule.lookahead {
                table.add(la);
            }
        }
        table
    }

    fn add(&mut self, expr: &Expr) {
        self.nodes += 1;
        match expr {
            Expr::Class(class) if !self.lowered.contains_key(class) => {
                self.lowered.insert(class.clone(), shared_lowering(class));
            }
            Expr::Seq(items) | Expr::Choice(items) => items.iter().for_each(|e| self.add(e)),
            Expr::Repeat { expr, .. } => self.add(expr),
            Expr::Tokens(set) if !self.tokens.1.contains_key(set) => {
                self.tokens.1.insert(set.clone(), TokenSetId(self.tokens.0.len() as u32));
                self.tokens.0.push(set.clone());
            }
            Expr::Text(text) if !self.texts.contains_key(&**text) => {
                let automaton = text.automaton();
                for (class, _) in automaton.states.iter().flat_map(|s| &s.edges) {
                    if !self.lowered.contains_key(class) {
                        self.lowered.insert(class.clone(), shared_lowering(class));
                    }
                }
                self.texts.insert((**text).clone(), automaton);
            }
            _ => {}
        }
    }

    /// The IR nodes of `rule`'s body, counted on the way (0 for a table not built by
    /// [`ClassTable::of`]).
    pub(crate) fn rule_nodes(&self, rule: RuleId) -> usize {
        self.body_nodes.get(rule.index()).map_or(0, |&n| n as usize)
    }

    /// The grammar's distinct token sets in the order first met (bodies and lookaheads,
    /// rule after rule), and the id of each: its index there.
    pub(crate) fn token_sets(&mut self) -> (Vec<TokenSet>, HashMap<TokenSet, TokenSetId>) {
        std::mem::take(&mut self.tokens)
    }

    /// The lowered form of `class` (one of the grammar's).
    pub(crate) fn get(&self, class: &CharClass) -> Option<&Expr> {
        self.lowered.get(class).map(|lowered| &lowered.expr)
    }

    /// Whether some free text of the grammar has a token budget.
    pub(crate) fn has_text_budget(&self) -> bool {
        self.texts.keys().any(|text| text.max_tokens.is_some())
    }

    /// The automaton of free text `text` (one of the grammar's), whose classes are in
    /// the table.
    pub(crate) fn text(&self, text: &FreeText) -> Option<&TextAutomaton> {
        self.texts.get(text)
    }

    /// Replaces every class of `expr` (all in the table) by its lowered form.
    fn lower(&self, expr: &mut Expr) {
        match expr {
            Expr::Class(class) => {
                if let Some(bytes) = self.get(class) {
                    *expr = bytes.clone();
                }
            }
            Expr::Seq(items) | Expr::Choice(items) => items.iter_mut().for_each(|e| self.lower(e)),
            Expr::Repeat { expr, .. } => self.lower(expr),
            _ => {}
        }
    }
}

/// The most classes [`shared_lowering`] keeps.
pub(crate) const SHARED_LOWERINGS_MAX: usize = 4_096;

/// Classes lowered by the compiles of this process, shared by the next ones: a class's
/// byte automaton depends on nothing else, and schemas repeat a few (a JSON string's
/// character, digits, hex digits). Past [`SHARED_LOWERINGS_MAX`] classes, a new one is
/// lowered for its compile alone.
/// (Keyed with a hasher seeded per process: the classes come from the grammars compiled.)
static SHARED_LOWERINGS: LazyLock<RwLock<SharedLowerings>> = LazyLock::new(Default::default);

/// The map behind [`SHARED_LOWERINGS`].
type SharedLowerings = HashMap<CharClass, Arc<Lowered>, foldhash::fast::RandomState>;

/// A class's lowered form and its size.
#[derive(Debug)]
pub(crate) struct Lowered {
    /// The class's UTF-8 byte automaton ([`class_to_bytes`]).
    pub(crate) expr: Expr,
    /// Its [`Expr::size`], which the passes weigh the class by.
    pub(crate) size: usize,
}

/// The lowered form of `class` ([`class_to_bytes`]), from the classes the process's
/// compiles lowered before.
pub(crate) fn shared_lowering(class: &CharClass) -> Arc<Lowered> {
    // A lock poisoned by a panicking thread holds whole entries only (an insert is one
    // call): it is read as it is.
    let read = SHARED_LOWERINGS.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(lowered) = read.get(class) {
        return lowered.clone();
    }
    drop(read);
    let expr = class_to_bytes(class);
    let lowered = Arc::new(Lowered { size: expr.size(), expr });
    let mut shared = SHARED_LOWERINGS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if shared.len() < SHARED_LOWERINGS_MAX {
        shared.entry(class.clone()).or_insert_with(|| lowered.clone());
    }
    lowered
}

/// The UTF-8 byte automaton of a class, as an expression.
pub(crate) fn class_to_bytes(class: &CharClass) -> Expr {
    let mut alternatives: Vec<Expr> = Vec::new();
    // Single-byte sequences are gathered into one range list, the common case for ASCII.
    let mut ascii: Vec<(u8, u8)> = Vec::new();
    for (lo, hi) in class.positive_ranges() {
        for seq in Utf8Sequences::new(lo, hi) {
            let ranges = seq.as_slice();
            if ranges.len() == 1 {
                ascii.push((ranges[0].start, ranges[0].end));
            } else {
                alternatives.push(Expr::Seq(
                    ranges.iter().map(|r| Expr::ByteRanges(vec![(r.start, r.end)])).collect(),
                ));
            }
        }
    }
    if !ascii.is_empty() {
        alternatives.insert(0, Expr::ByteRanges(ascii));
    }
    match alternatives.len() {
        // An empty class matches nothing: a byte range list with no range.
        0 => Expr::ByteRanges(Vec::new()),
        1 => alternatives.pop().unwrap_or(Expr::ByteRanges(Vec::new())),
        _ => Expr::Choice(alternatives),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_class_is_one_range_list() {
        let class = CharClass::new(false, vec![('a', 'z'), ('0', '9')]);
        assert_eq!(class_to_bytes(&class), Expr::ByteRanges(vec![(b'0', b'9'), (b'a', b'z')]));
    }

    #[test]
    fn any_char_covers_all_utf8_lengths() {
        match class_to_bytes(&CharClass::any()) {
            Expr::Choice(alts) => assert!(alts.len() >= 4),
            other => panic!("unexpected {other:?}"),
        }
    }
}
