//! Free text up to a stop string ([`FreeText`], the IR's [`Expr::Text`](crate::Expr::Text))
//! and its automaton: the Aho-Corasick automaton of the strings the text must avoid,
//! over characters.
//!
//! Free text is what a model writes between tool calls, inside `<think>…</think>`, or
//! before a trigger. It is a regular language, so it becomes part of the automaton of
//! the rule holding it: a handful of states (one per proper prefix of the strings),
//! whose token masks are precomputed like any other state's.

use crate::ir::CharClass;
use std::collections::BTreeMap;

/// A run of characters (well-formed UTF-8) in which none of `avoid` occurs; with
/// `until`, followed by `avoid[until]`, written where the first occurrence of any of them
/// starts.
///
/// So `<tool_call>` ends the text at the first place it is written, and a grammar
/// continuing after `FreeText { avoid: [E, T], until: Some(1) }` sees exactly the texts
/// in which `T` starts before any `E` does. Strings starting at the same place are all
/// allowed: with `</a>` and `</a>!` both end strings, either may end the text. A string
/// starting inside the end string (an excluded `a>` inside `</a>`) is part of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FreeText {
    /// Strings that may not occur in the text, none empty.
    pub avoid: Vec<String>,
    /// The index in `avoid` of the string that follows the text (read as part of it), or
    /// `None`: the text ends anywhere.
    pub until: Option<usize>,
    /// The most tokens the text may take (its budget), `None` for no bound. A matcher
    /// that has spent it in this text allows only tokens that go on to end it: towards
    /// its end string (or a trigger), out of it, or the end of the output.
    pub max_tokens: Option<u32>,
}

/// Where an edge of a [`TextAutomaton`] leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TextTarget {
    /// Another state.
    State(usize),
    /// The end string has been read: the text is over.
    End,
}

/// One state of a [`TextAutomaton`]: the characters it reads and where each leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextState {
    /// Classes with their targets; a character may lead to several (the automaton is
    /// nondeterministic where the end string may start).
    pub edges: Vec<(CharClass, TextTarget)>,
    /// How many characters of the end string this state has read (0: a free state).
    pub read: usize,
}

/// The automaton of a [`FreeText`]: the free states (the first `free`, one per proper
/// prefix of the strings that can be read with no occurrence yet; state 0 the start),
/// then, with an end string, the states reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextAutomaton {
    /// The states; 0 is the start.
    pub states: Vec<TextState>,
    /// How many of the first states are free text (the others read the end string).
    pub free: usize,
    /// Whether every free state may end the text (no end string).
    pub open: bool,
}

impl FreeText {
    /// Free text holding none of `avoid`, ending anywhere.
    pub fn avoiding(avoid: Vec<String>) -> FreeText {
        FreeText { avoid, until: None, max_tokens: None }
    }

    /// Free text up to the first occurrence of any of `avoid`, which must be
    /// `avoid[until]`, that string included.
    pub fn until(avoid: Vec<String>, until: usize) -> FreeText {
        FreeText { avoid, until: Some(until), max_tokens: None }
    }

    /// The same text with the budget `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: Option<u32>) -> FreeText {
        self.max_tokens = max_tokens;
        self
    }

    /// The automaton.
    pub fn automaton(&self) -> TextAutomaton {
        TextAutomaton::new(&self.avoid, self.until)
    }

    /// Whether some text matches: always without `until`; with it, unless every way of
    /// writing `avoid[until]` holds an earlier occurrence of another string.
    pub fn can_end(&self) -> bool {
        let automaton = self.automaton();
        if automaton.open {
            return true;
        }
        // Breadth first from the start.
        let mut seen = vec![false; automaton.states.len()];
        let mut work = vec![0];
        seen[0] = true;
        while let Some(s) = work.pop() {
            for (_, t) in &automaton.states[s].edges {
                match *t {
                    TextTarget::End => return true,
                    TextTarget::State(n) if !seen[n] => {
                        seen[n] = true;
                        work.push(n);
                    }
                    TextTarget::State(_) => {}
                }
            }
        }
        false
    }
}

/// A node of the strings' trie.
struct TrieNode {
    children: BTreeMap<char, usize>,
    /// Characters from the root.
    depth: usize,
    /// The length in characters of the longest string that is a suffix of this node's
    /// prefix (0: none).
    output: usize,
    fail: usize,
}

impl TextAutomaton {
    /// The automaton of text avoiding `strings`, up to `strings[until]` when given
    /// (Aho-Corasick over characters, with the end string read beside it).
    pub fn new(strings: &[String], until: Option<usize>) -> TextAutomaton {
        let node = |depth| TrieNode { children: BTreeMap::new(), depth, output: 0, fail: 0 };
        let mut trie = vec![node(0)];
        for s in strings {
            let mut at = 0;
            for c in s.chars() {
                at = match trie[at].children.get(&c) {
                    Some(&next) => next,
                    None => {
                        let depth = trie[at].depth + 1;
                        trie.push(node(depth));
                        let next = trie.len() - 1;
                        trie[at].children.insert(c, next);
                        next
                    }
                };
            }
            trie[at].output = trie[at].depth;
        }
        // Failure links breadth first; a node's output is its own string, or the longest
        // string ending at its failure node.
        let mut order = vec![0usize];
        let mut head = 0;
        while head < order.len() {
            let at = order[head];
            head += 1;
            let children: Vec<(char, usize)> =
                trie[at].children.iter().map(|(&c, &n)| (c, n)).collect();
            for (c, child) in children {
                let fail = if at == 0 { 0 } else { step(&trie, trie[at].fail, c) };
                trie[child].fail = fail;
                if trie[child].output == 0 {
                    trie[child].output = trie[fail].output;
                }
                order.push(child);
            }
        }
        let alphabet: Vec<char> = {
            let mut all: Vec<char> = strings.iter().flat_map(|s| s.chars()).collect();
            all.sort_unstable();
            all.dedup();
            all
        };
        // Free states: the nodes where no string has occurred, in breadth-first order.
        let mut free_of = vec![usize::MAX; trie.len()];
        let mut free_nodes = Vec::new();
        for &at in &order {
            if trie[at].output == 0 {
                free_of[at] = free_nodes.len();
                free_nodes.push(at);
            }
        }
        let free = free_nodes.len();
        let mut states: Vec<TextState> = free_nodes
            .iter()
            .map(|&at| {
                // Characters of the strings leading elsewhere than the start (or nowhere:
                // an occurrence); every other character leads back to it.
                let mut groups: BTreeMap<Option<usize>, Vec<char>> = BTreeMap::new();
                for &c in &alphabet {
                    let next = step(&trie, at, c);
                    let target = (trie[next].output == 0).then(|| free_of[next]);
                    if target != Some(0) {
                        groups.entry(target).or_default().push(c);
                    }
                }
                let others: Vec<(char, char)> =
                    groups.values().flatten().map(|&c| (c, c)).collect();
                let mut edges = vec![(CharClass::new(true, others), TextTarget::State(0))];
                edges.extend(groups.into_iter().filter_map(|(t, cs)| {
                    Some((
                        CharClass::new(false, cs.into_iter().map(|c| (c, c))),
                        TextTarget::State(t?),
                    ))
                }));
                edges.retain(|(class, _)| !class.is_empty());
                TextState { edges, read: 0 }
            })
            .collect();
        let Some(end) = until.and_then(|i| strings.get(i)) else {
            return TextAutomaton { states, free, open: true };
        };
        // The end string, started from each free state: `k` of its characters read, and
        // the node of everything read while an earlier start may still complete a string
        // (`None` once every suffix that could starts inside the end string).
        let end: Vec<char> = end.chars().collect();
        let mut reading: BTreeMap<(Option<usize>, usize), usize> = BTreeMap::new();
        let mut work: Vec<(usize, usize, usize)> = Vec::new(); // (state, node, k)
        for (q, &at) in free_nodes.iter().enumerate() {
            work.push((q, at, 0));
        }
        while let Some((state, at, k)) = work.pop() {
            let c = end[k];
            let next = if at == usize::MAX { usize::MAX } else { step(&trie, at, c) };
            // A string that started before the end string completes here: not allowed.
            if next != usize::MAX && trie[next].output > k + 1 {
                continue;
            }
            let target = if k + 1 == end.len() {
                TextTarget::End
            } else {
                let tracked = (next != usize::MAX && trie[next].depth > k + 1).then_some(next);
                let key = (tracked, k + 1);
                let id = match reading.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = states.len();
                        states.push(TextState { edges: Vec::new(), read: k + 1 });
                        reading.insert(key, id);
                        work.push((id, tracked.unwrap_or(usize::MAX), k + 1));
                        id
                    }
                };
                TextTarget::State(id)
            };
            let edge = (CharClass::new(false, [(c, c)]), target);
            if !states[state].edges.contains(&edge) {
                states[state].edges.push(edge);
            }
        }
        TextAutomaton { states, free, open: false }
    }

    /// Whether the automaton reads all of `text` and may end there.
    pub fn accepts(&self, text: &str) -> bool {
        let mut current = vec![0usize];
        let mut ended = false;
        for c in text.chars() {
            let mut next = Vec::new();
            ended = false;
            for &s in &current {
                for (class, target) in &self.states[s].edges {
                    match *target {
                        _ if !class.contains(c) => {}
                        TextTarget::State(n) if !next.contains(&n) => next.push(n),
                        TextTarget::State(_) => {}
                        TextTarget::End => ended = true,
                    }
                }
            }
            current = next;
        }
        ended || (self.open && current.iter().any(|&s| s < self.free))
    }
}

/// The trie node reached from `node` by `c`, following failure links.
fn step(trie: &[TrieNode], mut node: usize, c: char) -> usize {
    loop {
        if let Some(&next) = trie[node].children.get(&c) {
            return next;
        }
        if node == 0 {
            return 0;
        }
        node = trie[node].fail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    /// The definition, by brute force: no string occurs starting before the end string.
    fn accepts(text: &str, avoid: &[String], until: Option<usize>) -> bool {
        let limit = match until {
            None => text.len() + 1,
            Some(i) => match text.strip_suffix(avoid[i].as_str()) {
                Some(w) => w.len(),
                None => return false,
            },
        };
        avoid.iter().all(|s| {
            (0..limit.min(text.len()))
                .all(|at| !text.get(at..).is_some_and(|t| t.starts_with(s.as_str())))
        })
    }

    #[test]
    fn the_automaton_is_the_definition() {
        let sets = [
            strings(&["<tool_call>"]),
            strings(&["<tool_call>", "</think>"]),
            strings(&["aa"]),
            strings(&["aab"]),
            strings(&["abab", "bab", "b"]),
            strings(&["</a>", "</a>!"]),
            strings(&["abcd", "bc"]),
            strings(&["<｜tool▁call▁begin｜>", "é"]),
            strings(&["he", "she", "his", "hers"]),
        ];
        let texts = [
            "",
            "a",
            "aa",
            "aaa",
            "aab",
            "aaab",
            "xx<tool_call>",
            "xx<tool_call>y",
            "<tool_ca",
            "</thin</think>",
            "ababab",
            "abab",
            "bab",
            "b",
            "ab",
            "ushers",
            "his",
            "she",
            "héé",
            "x<｜tool▁call▁begin｜>",
            "<｜tool",
            "1</a>",
            "1</a>!",
            "1</a>!</a>",
            "xabcd",
            "xabc",
            "xbc",
            "abcbc",
        ];
        for avoid in &sets {
            for until in std::iter::once(None).chain((0..avoid.len()).map(Some)) {
                let automaton = TextAutomaton::new(avoid, until);
                for text in texts {
                    assert_eq!(
                        automaton.accepts(text),
                        accepts(text, avoid, until),
                        "{avoid:?} until {until:?}: {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn free_states_are_the_prefixes_and_cover_every_character() {
        let automaton = TextAutomaton::new(&strings(&["<tool_call>"]), None);
        assert_eq!(automaton.free, 11);
        // Each character leads to one state, but `>` after `<tool_call`, which would
        // complete the string.
        for (i, state) in automaton.states.iter().enumerate() {
            for c in ['a', '<', '>', 'é', '\u{10FFFF}', '\0'] {
                let n = state.edges.iter().filter(|(class, _)| class.contains(c)).count();
                assert_eq!(n, usize::from(!(i == 10 && c == '>')), "{c:?} in {state:?}");
            }
        }
    }

    #[test]
    fn a_string_inside_the_end_string_is_part_of_it() {
        let text = FreeText::until(strings(&["b", "abc"]), 1);
        assert!(text.can_end());
        assert!(text.automaton().accepts("xabc"));
        assert!(!text.automaton().accepts("xbabc"));
    }
}
