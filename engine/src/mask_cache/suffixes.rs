//! Token rests read from return positions: the part of a parent entry that does not
//! depend on the position above them, shared by every position that returns there.
//!
//! A parent entry classifies a position's context-dependent tokens under the return
//! positions below it. A token that leaves the top frame after `d` bytes reads its other
//! bytes from the frames below, whatever the top was: the characters of a counted string
//! are states of their own, each met once, yet every one of them is left by the same
//! tokens (`",` `"}` `"\n`) at the same offsets into the same return position, where
//! reading the rest may cost a closure over many stacks (an object's optional
//! properties). So a parent entry is computed in two parts:
//! - where each token may leave the top frame, read from that frame alone
//!   ([`crate::mask::token_exits`]), which is cheap;
//! - what each rest gives from the frames below ([`crate::mask::read_texts`]),
//!   remembered by those frames (by their representatives, [`super::equivalent`]), the
//!   token and the offset, and so read once for all the positions above them.

use super::counters::{self, Path};
use super::{MaskCache, ParentKey, ParentMask, TokenList};
use crate::compiler::CompiledGrammar;
use crate::error::MatchError;
use crate::ids::SortedPos;
use crate::mask::{read_texts, token_exits, Outcome, TokenExits};
use crate::stack::Position;
use rustc_hash::FxHashMap as HashMap;
use std::sync::PoisonError;

/// The frames below a top, by their representatives, top first (`None` for unused
/// frames): the part of a [`ParentKey`] past its top.
pub(crate) type BelowKey = [Option<Position>; 2];

/// A token's rest, under the frames below the top it leaves: the token and the bytes it
/// read before leaving.
pub(crate) type Rest = (SortedPos, u16);

/// What the rests of tokens give, by the frames below the tops they leave.
pub(crate) type Rests = HashMap<BelowKey, HashMap<Rest, Outcome>>;

/// Heap bytes one remembered outcome is counted for (its map slot, with the map's
/// spare room).
const OUTCOME_BYTES: usize = 2 * std::mem::size_of::<(Rest, Outcome)>();

/// The frames below the top of a parent entry's key.
pub(crate) fn below_key(key: &ParentKey) -> BelowKey {
    [key[1], key[2]]
}

impl MaskCache {
    /// The classification of `dependent` (the context-dependent tokens of the top of
    /// `frames`, bottom first, at least two) under the frames below the top, as
    /// [`crate::mask::classify_below`] gives it, from where each token leaves the top and
    /// the outcomes of its rests, remembered under `below`.
    pub(super) fn classify_split(
        &self,
        grammar: &CompiledGrammar,
        frames: &[Position],
        below: BelowKey,
        dependent: &[SortedPos],
    ) -> Result<ParentMask, MatchError> {
        let (&top, under) = frames.split_last().expect("a top and the frames below it");
        let exits = {
            let slots = self.slots(grammar, top.rule);
            let mut walks = slots.exit_walks.lock().unwrap_or_else(PoisonError::into_inner);
            let before = walks.memory();
            let exits = token_exits(grammar, top, dependent, &mut walks);
            self.refix(before, walks.memory());
            exits?
        };
        // One outcome per (token, offset) of the tokens not read inside the top, in
        // order: those remembered, then those read now.
        let rests: Vec<Rest> = exits
            .iter()
            .filter(|e| !e.read_whole)
            .flat_map(|e| e.offsets.iter().map(move |&offset| (e.token, offset)))
            .collect();
        let mut outcomes: Vec<Option<Outcome>> = {
            let known = self.rests.lock().unwrap_or_else(PoisonError::into_inner);
            match known.get(&below) {
                Some(known) => rests.iter().map(|k| known.get(k).copied()).collect(),
                None => vec![None; rests.len()],
            }
        };
        counters::add(Path::RememberedRest, || {
            let mut known = outcomes.iter();
            let mut all_known = |e: &TokenExits| {
                let n = e.offsets.len();
                n > 0 && known.by_ref().take(n).filter(|o| o.is_some()).count() == n
            };
            exits.iter().filter(|e| !e.read_whole).filter(|e| all_known(e)).count()
        });
        let sorted = grammar.vocab.sorted();
        let rest_bytes = |&(token, offset): &Rest| &sorted.bytes(token.index())[offset as usize..];
        let mut missing: Vec<usize> = (0..rests.len()).filter(|&i| outcomes[i].is_none()).collect();
        if !missing.is_empty() {
            missing.sort_by(|&a, &b| rest_bytes(&rests[a]).cmp(rest_bytes(&rests[b])));
            let texts: Vec<&[u8]> = missing.iter().map(|&i| rest_bytes(&rests[i])).collect();
            let read = read_texts(grammar, under, &texts)?;
            for (&i, &outcome) in missing.iter().zip(&read) {
                outcomes[i] = Some(outcome);
            }
            // Past the memory bound the outcomes serve this entry only.
            let _ = self.keep((), missing.len() * OUTCOME_BYTES, |()| {
                let mut known = self.rests.lock().unwrap_or_else(PoisonError::into_inner);
                let known = known.entry(below).or_default();
                for (&i, &outcome) in missing.iter().zip(&read) {
                    known.insert(rests[i], outcome);
                }
                ((), true)
            });
        }
        let mut accepted = Vec::new();
        let mut still = Vec::new();
        let mut outcomes = outcomes.into_iter().map(|o| o.expect("every rest read"));
        for e in &exits {
            if e.read_whole {
                accepted.push(sorted.token_id(e.token.index()));
                continue;
            }
            // Every outcome of the token is taken, so that the next token's come next.
            let mut read = false;
            let mut below_bottom = false;
            for outcome in outcomes.by_ref().take(e.offsets.len()) {
                read |= outcome == Outcome::Read;
                below_bottom |= outcome == Outcome::Below;
            }
            if read {
                accepted.push(sorted.token_id(e.token.index()));
            } else if below_bottom {
                still.push(e.token);
            }
        }
        Ok(ParentMask { accepted: TokenList::Ids(accepted), dependent: still })
    }
}
