//! How sure the model was of each value it wrote under a JSON grammar.
//!
//! A [`FieldRecorder`] follows a constrained generation step by step. For every scalar
//! value of the document (a string, number, boolean or null, named by its JSON pointer) it
//! reports `p_chosen`, the probability of the tokens written under the masked,
//! renormalized distribution; `mass_removed`, the probability the mask took away at the
//! value's first token; and, where the grammar left only a few values to choose from (an
//! enum, a boolean), the runner-up and the probability of leaving the chosen value's path
//! toward it. The values the grammar allows at a point are read off the matcher itself, so
//! no schema is needed.
//!
//! Probabilities are the model's own (softmax of the raw logits), whatever temperature the
//! sampler used.

mod cursor;

pub use cursor::{CursorEvent, JsonCursor, ScalarKind};

use crate::Matcher;
use grammask_tokenset::Vocabulary;

/// The most values a choice may have for its runner-up to be reported.
pub const MAX_CHOICES: usize = 16;
/// The most grammar states visited to list the values of one choice.
pub const MAX_CHOICE_NODES: usize = 1024;
/// Alternatives of a step below this probability are not followed.
pub const MIN_ALTERNATIVE_P: f64 = 1e-6;
/// The most alternatives of a step that are followed.
pub const MAX_ALTERNATIVES: usize = 256;

/// One sampling step as the model saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepDistribution {
    /// The sampled token.
    pub chosen: u32,
    /// Its probability under the masked, renormalized distribution.
    pub p_chosen: f64,
    /// The probability mass of the tokens the mask forbade.
    pub mass_removed: f64,
    /// The other allowed tokens, most likely first, with their masked probabilities (at
    /// most [`MAX_ALTERNATIVES`], none below [`MIN_ALTERNATIVE_P`]).
    pub alternatives: Vec<(u32, f64)>,
}

impl StepDistribution {
    /// The step from the raw logits (before masking), the mask the grammar filled (bit
    /// `i` of word `i / 32` set: token `i` allowed) and the sampled token.
    pub fn from_logits(logits: &[f32], mask: &[u32], chosen: u32) -> StepDistribution {
        let allowed = |i: usize| mask.get(i / 32).is_some_and(|w| w & (1 << (i % 32)) != 0);
        StepDistribution::over(logits, allowed, chosen)
    }

    /// The step of an unconstrained run: every token allowed, nothing removed.
    pub fn unmasked(logits: &[f32], chosen: u32) -> StepDistribution {
        StepDistribution::over(logits, |_| true, chosen)
    }

    fn over(logits: &[f32], allowed: impl Fn(usize) -> bool, chosen: u32) -> StepDistribution {
        let max =
            logits.iter().copied().filter(|l| l.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        let mut all = 0.0f64;
        let mut kept = 0.0f64;
        let mut weights: Vec<(u32, f64)> = Vec::new();
        for (i, &l) in logits.iter().enumerate() {
            if !l.is_finite() {
                continue;
            }
            let w = ((l - max) as f64).exp();
            all += w;
            if allowed(i) {
                kept += w;
                weights.push((i as u32, w));
            }
        }
        if kept <= 0.0 {
            return StepDistribution {
                chosen,
                p_chosen: 0.0,
                mass_removed: 1.0,
                alternatives: Vec::new(),
            };
        }
        let mut p_chosen = 0.0;
        let mut alternatives: Vec<(u32, f64)> = Vec::new();
        for (id, w) in weights {
            let p = w / kept;
            if id == chosen {
                p_chosen = p;
            } else if p >= MIN_ALTERNATIVE_P {
                alternatives.push((id, p));
            }
        }
        alternatives.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        alternatives.truncate(MAX_ALTERNATIVES);
        StepDistribution {
            chosen,
            p_chosen,
            mass_removed: (1.0 - kept / all).max(0.0),
            alternatives,
        }
    }
}

/// One value of the document and how sure the model was of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Its JSON pointer (RFC 6901); the empty string for the whole document.
    pub pointer: String,
    /// Its JSON text, as written.
    pub value: String,
    /// What kind of value it is.
    pub kind: ScalarKind,
    /// The product of its tokens' probabilities under the masked distribution: every token
    /// holding one of its bytes and, for a number, the token after it that ends it.
    pub p_chosen: f64,
    /// The value the model came closest to writing instead, when the grammar allowed at
    /// most [`MAX_CHOICES`] values here.
    pub runner_up: Option<String>,
    /// The probability of leaving the chosen value's path toward the runner-up (an upper
    /// bound when one token could still lead to several values).
    pub p_runner_up: Option<f64>,
    /// The probability mass the mask removed at the value's first token.
    pub mass_removed: f64,
    /// How many values the grammar allowed here (0 when more than [`MAX_CHOICES`]).
    pub choices: usize,
}

/// A way off the chosen path, seen at one step.
struct Branch {
    /// The values it can still lead to (bit `i`: `choices[i]`).
    reaches: u32,
    /// The probability of taking it.
    p: f64,
}

struct OpenField {
    pointer: String,
    kind: ScalarKind,
    start: usize,
    log_p: f64,
    mass_removed: f64,
    /// The values the grammar allowed at the value's start, when few.
    choices: Option<Vec<Vec<u8>>>,
    branches: Vec<Branch>,
}

/// Follows a generation's tokens and the model's distributions, and reports every value's
/// confidence ([`Field`]).
#[derive(Default)]
pub struct FieldRecorder {
    cursor: JsonCursor,
    text: Vec<u8>,
    open: Option<OpenField>,
    fields: Vec<Field>,
}

impl FieldRecorder {
    /// A recorder before the document's first token.
    pub fn new() -> FieldRecorder {
        FieldRecorder::default()
    }

    /// Records one step. `matcher` is the grammar's matcher *before* it accepts
    /// `step.chosen`; call this, then accept the token.
    pub fn observe(&mut self, matcher: &Matcher, step: &StepDistribution) {
        let vocab = matcher.grammar().vocabulary().clone();
        if vocab.is_stop(step.chosen) {
            self.end_text();
            return;
        }
        let bytes = vocab.token_bytes(step.chosen).unwrap_or_default();
        let before = self.cursor.clone();
        let base = self.text.len();
        if let Some(open) = self.open.as_mut() {
            let path_p = open.log_p.exp();
            follow_alternatives(
                open,
                step,
                &vocab,
                &before,
                &self.text[open.start..],
                path_p,
                false,
            );
            open.log_p += step.p_chosen.ln();
        }
        for (i, &b) in bytes.iter().enumerate() {
            let at_byte = self.cursor.clone();
            match self.cursor.push(b) {
                Some(CursorEvent::Start(kind)) => {
                    let choices = list_choices(matcher, &bytes[..i], &at_byte);
                    let mut open = OpenField {
                        pointer: self.cursor.pointer(),
                        kind,
                        start: base + i,
                        log_p: step.p_chosen.ln(),
                        mass_removed: step.mass_removed,
                        choices,
                        branches: Vec::new(),
                    };
                    follow_alternatives(&mut open, step, &vocab, &before, &[], 1.0, true);
                    self.open = Some(open);
                }
                Some(CursorEvent::EndWith) => {
                    self.text.push(b);
                    self.close(base + i + 1);
                    continue;
                }
                Some(CursorEvent::EndBefore) => self.close(base + i),
                None => {}
            }
            self.text.push(b);
        }
    }

    /// Ends the text (a stop token, or the end of the generation): a number at the end is
    /// complete. A value cut off before its end is not reported.
    pub fn end_text(&mut self) {
        if let Some(CursorEvent::EndBefore) = self.cursor.finish() {
            self.close(self.text.len());
        }
        self.open = None;
    }

    /// The values completed so far, in the order they were written.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The values completed, after [`FieldRecorder::end_text`].
    pub fn finish(mut self) -> Vec<Field> {
        self.end_text();
        self.fields
    }

    fn close(&mut self, end: usize) {
        let Some(open) = self.open.take() else { return };
        let value = &self.text[open.start..end.min(self.text.len())];
        let mut field = Field {
            pointer: open.pointer,
            value: String::from_utf8_lossy(value).into_owned(),
            kind: open.kind,
            p_chosen: open.log_p.exp().clamp(0.0, 1.0),
            runner_up: None,
            p_runner_up: None,
            mass_removed: open.mass_removed,
            choices: open.choices.as_ref().map_or(0, Vec::len),
        };
        if let Some(choices) = &open.choices {
            if let Some(chosen) = choices.iter().position(|c| c == value) {
                let mut mass = vec![0.0f64; choices.len()];
                for b in open.branches.iter().filter(|b| b.reaches & (1 << chosen) == 0) {
                    for (i, m) in mass.iter_mut().enumerate() {
                        if b.reaches & (1 << i) != 0 {
                            *m += b.p;
                        }
                    }
                }
                let best = (0..choices.len())
                    .filter(|&i| i != chosen)
                    .max_by(|&a, &b| mass[a].total_cmp(&mass[b]).then(b.cmp(&a)));
                if let Some(best) = best {
                    field.runner_up = Some(String::from_utf8_lossy(&choices[best]).into_owned());
                    field.p_runner_up = Some(mass[best].clamp(0.0, 1.0));
                }
            }
        }
        self.fields.push(field);
    }
}

/// Where each likely alternative token of `step` would have taken the open value: the
/// choices it can still reach. `written` is the value's bytes before this step; `starts`
/// when the value starts in this step (an alternative must start a value at the same
/// pointer to count).
fn follow_alternatives(
    open: &mut OpenField,
    step: &StepDistribution,
    vocab: &Vocabulary,
    before: &JsonCursor,
    written: &[u8],
    path_p: f64,
    starts: bool,
) {
    let Some(choices) = &open.choices else { return };
    for &(id, p) in &step.alternatives {
        if vocab.is_stop(id) {
            continue;
        }
        let Some(bytes) = vocab.token_bytes(id) else { continue };
        let mut cursor = before.clone();
        let mut value = written.to_vec();
        let mut inside = !starts;
        let mut ended = false;
        for &b in bytes {
            match cursor.push(b) {
                Some(CursorEvent::Start(_)) if !inside => {
                    if cursor.pointer() != open.pointer {
                        break;
                    }
                    inside = true;
                    value.push(b);
                }
                Some(CursorEvent::EndWith) if inside => {
                    value.push(b);
                    ended = true;
                    break;
                }
                Some(CursorEvent::EndBefore) if inside => {
                    ended = true;
                    break;
                }
                _ if inside => value.push(b),
                _ => {}
            }
        }
        if !inside || cursor.is_lost() {
            continue;
        }
        let reaches = choices.iter().enumerate().fold(0u32, |acc, (i, c)| {
            let fits = if ended { *c == value } else { c.starts_with(&value) };
            acc | ((fits as u32) << i)
        });
        if reaches != 0 {
            open.branches.push(Branch { reaches, p: path_p * p });
        }
    }
}

/// The values the grammar allows at a value's start, when there are at most
/// [`MAX_CHOICES`]: `matcher` is before the step's token, `prefix` the token's bytes before
/// the value, `cursor` the document's state just before the value's first byte.
fn list_choices(matcher: &Matcher, prefix: &[u8], cursor: &JsonCursor) -> Option<Vec<Vec<u8>>> {
    let mut start = matcher.fork();
    start.accept_bytes(prefix).ok()?;
    let mut choices: Vec<Vec<u8>> = Vec::new();
    let mut stack = vec![(start, cursor.clone(), Vec::<u8>::new())];
    let mut visited = 0;
    while let Some((m, c, written)) = stack.pop() {
        visited += 1;
        if visited > MAX_CHOICE_NODES {
            return None;
        }
        if !written.is_empty() && m.can_terminate() {
            // A value at the very end of the document (a top-level number) ends with it.
            let mut c2 = c.clone();
            if c2.finish() == Some(CursorEvent::EndBefore) && !choices.contains(&written) {
                choices.push(written.clone());
            }
        }
        let next = m.next_bytes().ok()?;
        // Children pushed in reverse so that choices come out in byte order.
        for b in (0..=255u8).rev().filter(|&b| next[b as usize]) {
            let mut c2 = c.clone();
            let event = c2.push(b);
            let mut value = written.clone();
            match event {
                Some(CursorEvent::EndBefore) => {
                    if !choices.contains(&value) {
                        choices.push(value);
                    }
                    continue;
                }
                Some(CursorEvent::EndWith) => {
                    value.push(b);
                    if !choices.contains(&value) {
                        choices.push(value);
                    }
                    continue;
                }
                // The walk starts at the value's first byte: whitespace before it is not
                // one of its bytes.
                Some(CursorEvent::Start(_)) => {}
                _ if written.is_empty() => continue,
                _ => {}
            }
            if c2.is_lost() {
                continue;
            }
            value.push(b);
            let mut m2 = m.fork();
            if m2.accept_bytes(&[b]).is_err() {
                continue;
            }
            stack.push((m2, c2, value));
        }
        if choices.len() > MAX_CHOICES || stack.len() > MAX_CHOICE_NODES {
            return None;
        }
    }
    choices.sort();
    Some(choices)
}

#[cfg(test)]
mod tests;
