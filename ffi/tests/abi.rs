//! Drives every entry point of the C ABI through its Rust symbols: a happy path over a
//! small vocabulary built from arrays, then bad arguments (NULL pointers, out-of-range
//! tokens, invalid grammars, handles of the wrong kind, freed handles, double frees), each
//! of which must give an error status and a message, never a crash.

use grammask_ffi::*;
use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

use GrammaskStatus as S;

fn last_error() -> String {
    // SAFETY: `grammask_last_error` returns a NUL-terminated string valid until the next
    // call on this thread.
    unsafe { CStr::from_ptr(grammask_last_error()) }.to_string_lossy().into_owned()
}

/// Asserts an error status with a non-empty message.
#[track_caller]
fn fails(status: GrammaskStatus, expected: GrammaskStatus) -> String {
    assert_eq!(status, expected, "message: {}", last_error());
    let message = last_error();
    assert!(!message.is_empty(), "no message for {expected:?}");
    message
}

#[track_caller]
fn ok(status: GrammaskStatus) {
    assert_eq!(status, S::Ok, "{}", last_error());
    assert_eq!(last_error(), "");
}

/// Tokens: 0 "{", 1 "}", 2 "a", 3 "ab", 4 "<0x62>" (byte b), 5 "</s>" (special, stop);
/// logits width 40.
fn vocab() -> *mut GrammaskVocab {
    let tokens: [&[u8]; 6] = [b"{", b"}", b"a", b"ab", b"<0x62>", b"</s>"];
    let ptrs: Vec<*const u8> = tokens.iter().map(|t| t.as_ptr()).collect();
    let lens: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
    let kinds = [0u8, 0, 0, 0, 2, 1];
    let stop = [5u32];
    let mut out = null_mut();
    // SAFETY: arrays of 6 elements, valid token pointers and lengths, writable `out`.
    ok(unsafe {
        grammask_vocab_from_tokens(
            ptrs.as_ptr(),
            lens.as_ptr(),
            kinds.as_ptr(),
            6,
            stop.as_ptr(),
            1,
            40,
            &mut out,
        )
    });
    assert!(!out.is_null());
    out
}

const GBNF: &str = "root ::= \"{\" [ab]* \"}\"\n";

fn grammar(v: *const GrammaskVocab) -> *mut GrammaskGrammar {
    let mut g = null_mut();
    // SAFETY: live vocabulary, text of the given length, writable `out`.
    ok(unsafe { grammask_compile_gbnf(v, GBNF.as_ptr().cast(), GBNF.len(), null(), &mut g) });
    g
}

#[test]
fn happy_path() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let v = vocab();
        ok(grammask_vocab_prepare(v));
        assert_eq!(grammask_vocab_prepare(null()), GrammaskStatus::NullPointer);
        let mut size = 0;
        ok(grammask_vocab_size(v, &mut size));
        assert_eq!(size, 40);
        let (mut bytes, mut len, mut kind) = (null(), 0usize, GrammaskTokenKind::Missing);
        ok(grammask_vocab_token(v, 4, &mut bytes, &mut len, &mut kind));
        assert_eq!(
            (std::slice::from_raw_parts(bytes, len), kind),
            (&b"b"[..], GrammaskTokenKind::Normal)
        );
        ok(grammask_vocab_token(v, 39, &mut bytes, &mut len, &mut kind));
        assert_eq!((len, kind), (0, GrammaskTokenKind::Missing));
        let mut stops = [0u32; 4];
        let mut n = 0;
        ok(grammask_vocab_stop_tokens(v, stops.as_mut_ptr(), 4, &mut n));
        assert_eq!(&stops[..n], &[5]);

        let g = grammar(v);
        ok(grammask_vocab_free(v)); // the grammar keeps the vocabulary alive
        let mut words = 0;
        ok(grammask_grammar_bitmask_words(g, &mut words));
        assert_eq!(words, 2);
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        ok(grammask_grammar_free(g)); // the matcher keeps the grammar alive

        let mut mask = [0u32; 2];
        ok(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), 2));
        assert_eq!(mask, [0b1, 0]);
        let mut jump = [0u8; 8];
        ok(grammask_matcher_jump_forward_bytes(m, jump.as_mut_ptr(), 8, &mut len));
        assert_eq!(&jump[..len], b"{");
        ok(grammask_matcher_accept_bytes(m, jump.as_ptr(), len));
        ok(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), 2));
        assert_eq!(mask, [0b11110, 0]);

        let mut cands: Vec<GrammaskTokenData> =
            (0..6).map(|id| GrammaskTokenData { id, logit: 1.0, p: 0.5 }).collect();
        ok(grammask_matcher_apply_to_candidates(m, cands.as_mut_ptr(), cands.len()));
        let logits: Vec<f32> = cands.iter().map(|c| c.logit).collect();
        assert_eq!(logits, [f32::NEG_INFINITY, 1.0, 1.0, 1.0, 1.0, f32::NEG_INFINITY]);
        assert!(cands.iter().all(|c| c.p == 0.5));

        ok(grammask_matcher_accept_token(m, 3));
        ok(grammask_matcher_accept_token(m, 4));
        let mut accepted = 0;
        ok(grammask_matcher_validate_tokens(m, [2, 1, 5, 0].as_ptr(), 4, &mut accepted));
        assert_eq!(accepted, 3);
        let mut fork = null_mut();
        ok(grammask_matcher_fork(m, &mut fork));
        ok(grammask_matcher_accept_token(fork, 1));
        let mut flag = false;
        ok(grammask_matcher_can_terminate(fork, &mut flag));
        assert!(flag);
        ok(grammask_matcher_can_terminate(m, &mut flag));
        assert!(!flag, "the fork is independent");
        ok(grammask_matcher_accept_token(fork, 5));
        ok(grammask_matcher_is_terminated(fork, &mut flag));
        assert!(flag);
        ok(grammask_matcher_rollback(fork, 2));
        ok(grammask_matcher_is_terminated(fork, &mut flag));
        assert!(!flag);
        ok(grammask_matcher_reset(fork));
        ok(grammask_matcher_fill_next_token_bitmask(fork, mask.as_mut_ptr(), 2));
        assert_eq!(mask, [0b1, 0]);
        ok(grammask_matcher_free(fork));
        ok(grammask_matcher_free(m));
        ok(grammask_matcher_free(null_mut()));
        let version = CStr::from_ptr(grammask_version()).to_str().unwrap();
        assert_eq!(version, env!("CARGO_PKG_VERSION"));
        let name = CStr::from_ptr(grammask_status_name(S::Rejected as i32));
        assert_eq!(name.to_str().unwrap(), "GRAMMASK_STATUS_REJECTED");
    }
}

#[test]
fn builtin_vocabulary_and_grammar_formats() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let mut v = null_mut();
        ok(grammask_vocab_load(c"r50k_base".as_ptr(), &mut v));
        let mut g = null_mut();
        let ebnf = "root ::= \"x\" | \"y\"";
        ok(grammask_compile_ebnf(v, ebnf.as_ptr().cast(), ebnf.len(), c"root".as_ptr(), &mut g));
        ok(grammask_grammar_free(g));
        let re = "[0-9]{1,3}";
        ok(grammask_compile_regex(v, re.as_ptr().cast(), re.len(), &mut g));
        ok(grammask_grammar_free(g));
        let schema = r#"{"type": "integer"}"#;
        match grammask_compile_json_schema(v, schema.as_ptr().cast(), schema.len(), &mut g) {
            S::Ok => ok(grammask_grammar_free(g)),
            status => {
                fails(status, S::Unsupported);
            }
        }
        ok(grammask_vocab_free(v));
    }
}

/// A GBNF token by its text (`<think>`, as llama.cpp writes it) is the vocabulary's token
/// with that text; one the vocabulary lacks is a grammar error at its position.
#[test]
fn gbnf_tokens_by_text_are_the_vocabularys() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let tokens: [&[u8]; 4] = [b"a", b"<think>", b"</think>", b"</s>"];
        let ptrs: Vec<*const u8> = tokens.iter().map(|t| t.as_ptr()).collect();
        let lens: Vec<usize> = tokens.iter().map(|t| t.len()).collect();
        let kinds = [0u8, 1, 1, 1];
        let mut v = null_mut();
        ok(grammask_vocab_from_tokens(
            ptrs.as_ptr(),
            lens.as_ptr(),
            kinds.as_ptr(),
            4,
            [3u32].as_ptr(),
            1,
            0,
            &mut v,
        ));
        let gbnf = "root ::= <think> \"a\"+ </think>\n";
        let mut g = null_mut();
        ok(grammask_compile_gbnf(v, gbnf.as_ptr().cast(), gbnf.len(), null(), &mut g));
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        let mut mask = [0u32; 1];
        for (id, expected) in [(1, 0b0010), (0, 0b0001), (2, 0b0101), (3, 0b1000)] {
            ok(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), 1));
            assert_eq!(mask[0], expected, "before token {id}");
            ok(grammask_matcher_accept_token(m, id));
        }
        ok(grammask_matcher_free(m));
        ok(grammask_grammar_free(g));

        let bad = "root ::= \"a\" <nope>\n";
        let message = fails(
            grammask_compile_gbnf(v, bad.as_ptr().cast(), bad.len(), null(), &mut g),
            S::Grammar,
        );
        assert!(message.contains("no token `<nope>`") && message.contains("1:14"), "{message}");
        ok(grammask_vocab_free(v));
    }
}

/// `apply_to_candidates` agrees with the bitmask however the candidates come: the whole
/// vocabulary in id order (masked a word at a time), the same ids reversed, a strided
/// subset, and one or a few at a time (each tried without the whole mask), at every step
/// of a JSON document on r50k.
#[test]
fn candidates_are_masked_as_the_bitmask_says() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let mut v = null_mut();
        ok(grammask_vocab_load(c"r50k_base".as_ptr(), &mut v));
        let mut n = 0;
        ok(grammask_vocab_size(v, &mut n));
        let gbnf = r#"root ::= "{\"name\": \"" [a-z ]{2,20} "\", \"n\": " [0-9]+ "}""#;
        let mut g = null_mut();
        ok(grammask_compile_gbnf(v, gbnf.as_ptr().cast(), gbnf.len(), null(), &mut g));
        let mut words = 0;
        ok(grammask_grammar_bitmask_words(g, &mut words));
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        let text = r#"{"name": "ada lovelace", "n": 1815}"#;
        let mut mask = vec![0u32; words];
        let allowed = |mask: &[u32], id: i32| mask[id as usize / 32] >> (id % 32) & 1 == 1;
        let check = |m: *mut GrammaskMatcher, mask: &[u32], ids: &[i32]| {
            let mut cands: Vec<GrammaskTokenData> =
                ids.iter().map(|&id| GrammaskTokenData { id, logit: 0.5, p: 0.25 }).collect();
            ok(grammask_matcher_apply_to_candidates(m, cands.as_mut_ptr(), cands.len()));
            for c in &cands {
                let expected = if allowed(mask, c.id) { 0.5 } else { f32::NEG_INFINITY };
                assert_eq!(c.logit, expected, "id {} of {} candidates", c.id, ids.len());
                assert_eq!(c.p, 0.25);
            }
        };
        for (i, byte) in text.bytes().enumerate() {
            ok(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), words));
            let all: Vec<i32> = (0..n as i32).collect();
            check(m, &mask, &all);
            check(m, &mask, &all.iter().rev().copied().collect::<Vec<_>>());
            check(m, &mask, &all.iter().step_by(7).copied().collect::<Vec<_>>());
            let some_allowed: Vec<i32> =
                all.iter().copied().filter(|&id| allowed(&mask, id)).take(3).collect();
            check(m, &mask, &some_allowed);
            check(m, &mask, &[some_allowed[0], 13, 50_000, 220]);
            for &id in all.iter().step_by(97) {
                check(m, &mask, &[id]);
            }
            ok(grammask_matcher_accept_bytes(m, [byte].as_ptr(), 1));
            assert!(i < text.len());
        }
        ok(grammask_matcher_free(m));
        ok(grammask_grammar_free(g));
        ok(grammask_vocab_free(v));
    }
}

#[test]
fn bad_arguments_give_error_statuses() {
    // SAFETY (whole test): the pointers passed are NULL, live handles, freed handles or
    // handles of another kind, which the library checks before any dereference; buffers
    // are valid for the lengths given.
    unsafe {
        let v = vocab();
        let g = grammar(v);
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        let (vc, gc, mc) = (v.cast_const(), g.cast_const(), m.cast_const());
        let mut size = 0usize;
        let mut flag = false;
        let mut mask = [0u32; 2];
        let mut buf = [0u8; 4];
        let one: [*const u8; 1] = [b"x".as_ptr()];

        // Vocabularies.
        fails(grammask_vocab_load(null(), &mut null_mut()), S::NullPointer);
        fails(grammask_vocab_load(c"o200k_base".as_ptr(), null_mut()), S::NullPointer);
        fails(
            grammask_vocab_load(c"/no/such/tokenizer.json".as_ptr(), &mut null_mut()),
            S::Vocabulary,
        );
        fails(grammask_vocab_load(c"\xff".as_ptr(), &mut null_mut()), S::InvalidArgument);
        fails(
            grammask_vocab_from_tokens(
                null(),
                [1].as_ptr(),
                null(),
                1,
                null(),
                0,
                0,
                &mut null_mut(),
            ),
            S::NullPointer,
        );
        fails(
            grammask_vocab_from_tokens(
                one.as_ptr(),
                null(),
                null(),
                1,
                null(),
                0,
                0,
                &mut null_mut(),
            ),
            S::NullPointer,
        );
        fails(
            grammask_vocab_from_tokens(
                one.as_ptr(),
                [1].as_ptr(),
                null(),
                1,
                null(),
                1,
                0,
                &mut null_mut(),
            ),
            S::NullPointer,
        );
        fails(
            grammask_vocab_from_tokens(
                [null()].as_ptr(),
                [1].as_ptr(),
                null(),
                1,
                null(),
                0,
                0,
                &mut null_mut(),
            ),
            S::NullPointer,
        );
        fails(
            grammask_vocab_from_tokens(
                one.as_ptr(),
                [1].as_ptr(),
                [7].as_ptr(),
                1,
                null(),
                0,
                0,
                &mut null_mut(),
            ),
            S::InvalidArgument,
        );
        fails(
            grammask_vocab_from_tokens(
                [b"xy".as_ptr()].as_ptr(),
                [2].as_ptr(),
                [2].as_ptr(),
                1,
                null(),
                0,
                0,
                &mut null_mut(),
            ),
            S::InvalidArgument,
        );
        fails(
            grammask_vocab_from_tokens(
                one.as_ptr(),
                [1].as_ptr(),
                null(),
                1,
                [3].as_ptr(),
                1,
                0,
                &mut null_mut(),
            ),
            S::Vocabulary,
        );
        fails(
            grammask_vocab_from_tokens(
                one.as_ptr(),
                [1].as_ptr(),
                null(),
                1,
                null(),
                0,
                0,
                null_mut(),
            ),
            S::NullPointer,
        );
        fails(grammask_vocab_size(null(), &mut size), S::NullPointer);
        fails(grammask_vocab_size(vc, null_mut()), S::NullPointer);
        fails(grammask_vocab_size(gc.cast(), &mut size), S::InvalidHandle);
        fails(grammask_vocab_token(vc, 40, &mut null(), &mut size, null_mut()), S::TokenOutOfRange);
        fails(grammask_vocab_token(vc, -1, &mut null(), &mut size, null_mut()), S::TokenOutOfRange);
        fails(grammask_vocab_token(vc, 0, null_mut(), &mut size, null_mut()), S::NullPointer);
        fails(
            grammask_vocab_token(mc.cast(), 0, &mut null(), &mut size, null_mut()),
            S::InvalidHandle,
        );
        fails(grammask_vocab_stop_tokens(vc, null_mut(), 0, &mut size), S::BufferTooSmall);
        assert_eq!(size, 1);
        fails(grammask_vocab_stop_tokens(vc, null_mut(), 1, &mut size), S::NullPointer);
        fails(grammask_vocab_stop_tokens(vc, null_mut(), 0, null_mut()), S::NullPointer);
        fails(grammask_vocab_free(g.cast()), S::InvalidHandle);

        // Compilation.
        let bad = "root ::= \"{\" value\n";
        let message = fails(
            grammask_compile_gbnf(vc, bad.as_ptr().cast(), bad.len(), null(), &mut null_mut()),
            S::Grammar,
        );
        assert!(message.contains(":1:"), "line:col in {message}");
        let message = fails(
            grammask_compile_ebnf(vc, "root ::= (".as_ptr().cast(), 10, null(), &mut null_mut()),
            S::Grammar,
        );
        assert!(message.contains("1:"), "line:col in {message}");
        fails(
            grammask_compile_gbnf(
                vc,
                GBNF.as_ptr().cast(),
                GBNF.len(),
                c"main".as_ptr(),
                &mut null_mut(),
            ),
            S::Grammar,
        );
        fails(grammask_compile_regex(vc, "(a".as_ptr().cast(), 2, &mut null_mut()), S::Grammar);
        let tok = "root ::= <[99]>";
        fails(
            grammask_compile_gbnf(vc, tok.as_ptr().cast(), tok.len(), null(), &mut null_mut()),
            S::TokenOutOfRange,
        );
        let not_json = "{";
        let status = grammask_compile_json_schema(vc, not_json.as_ptr().cast(), 1, &mut null_mut());
        assert!(matches!(status, S::Grammar | S::Unsupported), "{status:?}");
        fails(grammask_compile_gbnf(vc, null(), 3, null(), &mut null_mut()), S::NullPointer);
        fails(
            grammask_compile_gbnf(vc, b"\xff\xfe".as_ptr().cast(), 2, null(), &mut null_mut()),
            S::InvalidArgument,
        );
        fails(
            grammask_compile_gbnf(vc, GBNF.as_ptr().cast(), GBNF.len(), null(), null_mut()),
            S::NullPointer,
        );
        fails(
            grammask_compile_gbnf(
                null(),
                GBNF.as_ptr().cast(),
                GBNF.len(),
                null(),
                &mut null_mut(),
            ),
            S::NullPointer,
        );
        fails(
            grammask_compile_gbnf(
                gc.cast(),
                GBNF.as_ptr().cast(),
                GBNF.len(),
                null(),
                &mut null_mut(),
            ),
            S::InvalidHandle,
        );
        fails(
            grammask_compile_regex(mc.cast(), "a".as_ptr().cast(), 1, &mut null_mut()),
            S::InvalidHandle,
        );
        fails(
            grammask_compile_json_schema(gc.cast(), "{}".as_ptr().cast(), 2, &mut null_mut()),
            S::InvalidHandle,
        );
        fails(grammask_grammar_bitmask_words(vc.cast(), &mut size), S::InvalidHandle);
        fails(grammask_grammar_bitmask_words(gc, null_mut()), S::NullPointer);
        fails(grammask_grammar_free(m.cast()), S::InvalidHandle);

        // Matchers.
        fails(grammask_matcher_new(vc.cast(), &mut null_mut()), S::InvalidHandle);
        fails(grammask_matcher_new(gc, null_mut()), S::NullPointer);
        fails(grammask_matcher_fork(gc.cast(), &mut null_mut()), S::InvalidHandle);
        fails(grammask_matcher_fork(mc, null_mut()), S::NullPointer);
        fails(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), 1), S::BufferTooSmall);
        fails(grammask_matcher_fill_next_token_bitmask(m, null_mut(), 2), S::NullPointer);
        fails(
            grammask_matcher_fill_next_token_bitmask(g.cast(), mask.as_mut_ptr(), 2),
            S::InvalidHandle,
        );
        fails(grammask_matcher_accept_token(m, 40), S::TokenOutOfRange);
        fails(grammask_matcher_accept_token(m, -5), S::TokenOutOfRange);
        fails(grammask_matcher_accept_token(m, 1), S::Rejected);
        fails(grammask_matcher_accept_token(m, 5), S::Rejected);
        fails(grammask_matcher_accept_token(v.cast(), 0), S::InvalidHandle);
        fails(grammask_matcher_accept_bytes(m, b"}".as_ptr(), 1), S::Rejected);
        fails(grammask_matcher_accept_bytes(m, null(), 1), S::NullPointer);
        fails(grammask_matcher_accept_bytes(null_mut(), b"{".as_ptr(), 1), S::NullPointer);
        fails(grammask_matcher_rollback(m, 1), S::RollbackTooFar);
        fails(grammask_matcher_rollback(g.cast(), 0), S::InvalidHandle);
        fails(grammask_matcher_reset(null_mut()), S::NullPointer);
        fails(grammask_matcher_reset(v.cast()), S::InvalidHandle);
        fails(grammask_matcher_is_terminated(mc, null_mut()), S::NullPointer);
        fails(grammask_matcher_is_terminated(vc.cast(), &mut flag), S::InvalidHandle);
        fails(grammask_matcher_can_terminate(mc, null_mut()), S::NullPointer);
        fails(grammask_matcher_can_terminate(gc.cast(), &mut flag), S::InvalidHandle);
        fails(
            grammask_matcher_jump_forward_bytes(mc, buf.as_mut_ptr(), 0, &mut size),
            S::BufferTooSmall,
        );
        assert_eq!(size, 1);
        fails(grammask_matcher_jump_forward_bytes(mc, null_mut(), 4, &mut size), S::NullPointer);
        fails(
            grammask_matcher_jump_forward_bytes(mc, buf.as_mut_ptr(), 4, null_mut()),
            S::NullPointer,
        );
        fails(
            grammask_matcher_jump_forward_bytes(gc.cast(), buf.as_mut_ptr(), 4, &mut size),
            S::InvalidHandle,
        );
        fails(grammask_matcher_validate_tokens(mc, null(), 2, &mut size), S::NullPointer);
        fails(grammask_matcher_validate_tokens(mc, [0].as_ptr(), 1, null_mut()), S::NullPointer);
        fails(
            grammask_matcher_validate_tokens(vc.cast(), [0].as_ptr(), 1, &mut size),
            S::InvalidHandle,
        );
        ok(grammask_matcher_validate_tokens(mc, [0, -1, 1].as_ptr(), 3, &mut size));
        assert_eq!(size, 1);
        let mut cands = [
            GrammaskTokenData { id: 0, logit: 1.0, p: 0.0 },
            GrammaskTokenData { id: 40, logit: 1.0, p: 0.0 },
        ];
        fails(grammask_matcher_apply_to_candidates(m, cands.as_mut_ptr(), 2), S::TokenOutOfRange);
        assert_eq!(cands[0].logit, 1.0, "nothing changes on error");
        cands[1].id = -1;
        fails(grammask_matcher_apply_to_candidates(m, cands.as_mut_ptr(), 2), S::TokenOutOfRange);
        fails(grammask_matcher_apply_to_candidates(m, null_mut(), 2), S::NullPointer);
        fails(
            grammask_matcher_apply_to_candidates(g.cast(), cands.as_mut_ptr(), 1),
            S::InvalidHandle,
        );
        // After a stop token.
        ok(grammask_matcher_accept_bytes(m, b"{}".as_ptr(), 2));
        ok(grammask_matcher_accept_token(m, 5));
        fails(grammask_matcher_accept_token(m, 0), S::Terminated);
        fails(grammask_matcher_accept_bytes(m, b"a".as_ptr(), 1), S::Terminated);

        // A handle that was never one, freed handles and double frees.
        let mut not_a_handle = [0u64; 4];
        fails(grammask_matcher_reset(not_a_handle.as_mut_ptr().cast()), S::InvalidHandle);
        ok(grammask_matcher_free(m));
        fails(grammask_matcher_free(m), S::InvalidHandle);
        fails(grammask_matcher_accept_token(m, 0), S::InvalidHandle);
        ok(grammask_grammar_free(g));
        fails(grammask_grammar_free(g), S::InvalidHandle);
        fails(grammask_matcher_new(gc, &mut null_mut()), S::InvalidHandle);
        ok(grammask_vocab_free(v));
        fails(grammask_vocab_free(v), S::InvalidHandle);
        fails(
            grammask_compile_regex(vc, "a".as_ptr().cast(), 1, &mut null_mut()),
            S::InvalidHandle,
        );

        // Messages are per thread.
        let status = std::thread::spawn(|| {
            let s = grammask_vocab_size(null(), &mut 0);
            (s, last_error())
        })
        .join()
        .unwrap();
        assert_eq!(status.0, S::NullPointer);
        assert!(!status.1.is_empty());
        let _: *const c_char = grammask_last_error();
    }
}

#[test]
fn json_schema_options() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let v = vocab();
        let schema = r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#;
        let accepts = |options: *const GrammaskJsonSchemaOptions, text: &str| -> bool {
            let mut g = null_mut();
            ok(grammask_compile_json_schema_with_options(
                v,
                schema.as_ptr().cast(),
                schema.len(),
                options,
                &mut g,
            ));
            let accepted = accepts_text(g, text);
            ok(grammask_grammar_free(g));
            accepted
        };
        let mut options = GrammaskJsonSchemaOptions {
            whitespace: 9,
            max_whitespace_run: 0,
            strict: false,
            lenient: false,
            format_assert: false,
            any_order: false,
        };
        ok(grammask_json_schema_options_default(&mut options));
        assert_eq!((options.whitespace, options.max_whitespace_run), (1, 32));
        assert!(accepts(null(), r#"{"a": 1}"#), "NULL options are the defaults");
        assert!(accepts(&options, r#"{"a": 1}"#));
        options.whitespace = 0;
        assert!(!accepts(&options, r#"{"a": 1}"#), "compact refuses the space");
        assert!(accepts(&options, r#"{"a":1}"#));
        options.strict = true;
        assert!(!accepts(&options, r#"{"a":1,"b":2}"#), "strict: no additional properties");
        options.whitespace = 7;
        let mut g = null_mut();
        let status = grammask_compile_json_schema_with_options(
            v,
            schema.as_ptr().cast(),
            schema.len(),
            &options,
            &mut g,
        );
        assert!(fails(status, S::InvalidArgument).contains("whitespace"));
        fails(grammask_json_schema_options_default(null_mut()), S::NullPointer);
        ok(grammask_vocab_free(v));
    }
}

#[test]
fn limits_are_named_when_hit() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let v = vocab();
        let mut defaults = GrammaskLimits {
            max_grammar_size: 0,
            max_automaton_states: 0,
            max_live_stacks: 0,
            max_stack_depth: 0,
            max_rollback: 0,
            max_compile_ms: 0,
            max_mask_cache_bytes: 0,
            precompute_mask_cache: true,
        };
        ok(grammask_limits_default(&mut defaults));
        assert_eq!(defaults.max_grammar_size, 2_000_000);
        assert_eq!(defaults.max_compile_ms, 30_000);
        assert_eq!(defaults.max_mask_cache_bytes, 1 << 30);
        assert!(!defaults.precompute_mask_cache);
        fails(grammask_limits_default(null_mut()), S::NullPointer);

        // Every format compiles with the defaults (and with NULL limits).
        let gbnf = "root ::= \"{\" [ab]{0,300} \"}\"";
        let schema = r#"{"type": "array", "items": {"type": "string"}, "maxItems": 50}"#;
        let regex = "\\{[ab]{0,300}\\}";
        type Compile = dyn Fn(&str, *const GrammaskLimits, &mut *mut GrammaskGrammar) -> S;
        let formats: [(&str, &str, Box<Compile>); 4] = [
            (
                "gbnf",
                gbnf,
                Box::new(move |t: &str, l, g: &mut _| {
                    grammask_compile_gbnf_with_limits(v, t.as_ptr().cast(), t.len(), null(), l, g)
                }),
            ),
            (
                "ebnf",
                gbnf,
                Box::new(move |t: &str, l, g: &mut _| {
                    grammask_compile_ebnf_with_limits(v, t.as_ptr().cast(), t.len(), null(), l, g)
                }),
            ),
            (
                "regex",
                regex,
                Box::new(move |t: &str, l, g: &mut _| {
                    grammask_compile_regex_with_limits(v, t.as_ptr().cast(), t.len(), l, g)
                }),
            ),
            (
                "json",
                schema,
                Box::new(move |t: &str, l, g: &mut _| {
                    grammask_compile_json_schema_with_limits(
                        v,
                        t.as_ptr().cast(),
                        t.len(),
                        null(),
                        l,
                        g,
                    )
                }),
            ),
        ];
        for (name, text, compile) in &formats {
            for limits in [null(), &defaults as *const GrammaskLimits] {
                let mut g = null_mut();
                assert_eq!(compile(text, limits, &mut g), S::Ok, "{name}: {}", last_error());
                ok(grammask_grammar_free(g));
            }
            // Each compile-time limit, hit through every format, is named.
            let hit: [(&str, GrammaskLimits); 4] = [
                ("grammar_size", GrammaskLimits { max_grammar_size: 2, ..defaults }),
                ("automaton_states", GrammaskLimits { max_automaton_states: 50, ..defaults }),
                ("compile_time", GrammaskLimits { max_compile_ms: 0, ..defaults }),
                (
                    "mask_cache_bytes",
                    GrammaskLimits {
                        max_mask_cache_bytes: 1,
                        precompute_mask_cache: true,
                        ..defaults
                    },
                ),
            ];
            for (limit, limits) in &hit {
                let mut g = null_mut();
                let status = compile(text, limits, &mut g);
                assert_eq!(status, S::Limit, "{name}, {limit}: {}", last_error());
                let message = last_error();
                assert!(message.starts_with(&format!("limit: {limit}: ")), "{name}: {message}");
                assert!(g.is_null(), "no grammar on failure");
            }
        }
        // Precomputed within the bound, the grammar answers as usual.
        let precompute = GrammaskLimits { precompute_mask_cache: true, ..defaults };
        let mut g = null_mut();
        ok(formats[0].2(gbnf, &precompute, &mut g));
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        let mut mask = [0u32; 2];
        ok(grammask_matcher_accept_bytes(m, b"{".as_ptr(), 1));
        ok(grammask_matcher_fill_next_token_bitmask(m, mask.as_mut_ptr(), 2));
        assert_eq!(mask, [0b11110, 0]);
        ok(grammask_matcher_free(m));
        ok(grammask_grammar_free(g));

        // Run-time limits: nesting depth, parallel stacks, rollback history.
        let nested = "root ::= \"{\" root \"}\" | \"a\"";
        let shallow = GrammaskLimits { max_stack_depth: 10, ..defaults };
        ok(grammask_compile_gbnf_with_limits(
            v,
            nested.as_ptr().cast(),
            nested.len(),
            null(),
            &shallow,
            &mut g,
        ));
        ok(grammask_matcher_new(g, &mut m));
        ok(grammask_matcher_accept_bytes(m, b"{{{{{".as_ptr(), 5));
        let deep = [b'{'; 20];
        let message = fails(grammask_matcher_accept_bytes(m, deep.as_ptr(), 20), S::Limit);
        assert!(message.starts_with("limit: stack_depth: "), "{message}");
        ok(grammask_matcher_accept_bytes(m, b"a}}}}}".as_ptr(), 6));
        ok(grammask_matcher_free(m));
        ok(grammask_grammar_free(g));

        let ambiguous = "root ::= x | y\nx ::= \"{\" x \"}\" | \"a\"\ny ::= \"{\" y \"b\" | \"a\"";
        let one = GrammaskLimits { max_live_stacks: 1, ..defaults };
        for (limits, expected) in [(&defaults, S::Ok), (&one, S::Limit)] {
            ok(grammask_compile_gbnf_with_limits(
                v,
                ambiguous.as_ptr().cast(),
                ambiguous.len(),
                null(),
                limits,
                &mut g,
            ));
            ok(grammask_matcher_new(g, &mut m));
            let status = grammask_matcher_accept_bytes(m, b"{{a}".as_ptr(), 4);
            if expected == S::Ok {
                ok(status);
            } else {
                let message = fails(status, S::Limit);
                assert!(message.starts_with("limit: live_stacks: "), "{message}");
            }
            ok(grammask_matcher_free(m));
            ok(grammask_grammar_free(g));
        }

        let short = GrammaskLimits { max_rollback: 2, ..defaults };
        ok(grammask_compile_gbnf_with_limits(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            &short,
            &mut g,
        ));
        ok(grammask_matcher_new(g, &mut m));
        for id in [0, 2, 2, 2] {
            ok(grammask_matcher_accept_token(m, id));
        }
        let message = fails(grammask_matcher_rollback(m, 3), S::RollbackTooFar);
        assert!(message.contains("2 are kept"), "{message}");
        ok(grammask_matcher_rollback(m, 2));
        ok(grammask_matcher_free(m));
        ok(grammask_grammar_free(g));

        // Bad arguments of the new entry points.
        fails(
            grammask_compile_gbnf_with_limits(
                v,
                GBNF.as_ptr().cast(),
                GBNF.len(),
                null(),
                &defaults,
                null_mut(),
            ),
            S::NullPointer,
        );
        let g = grammar(v);
        fails(
            grammask_compile_regex_with_limits(
                g.cast(),
                "a".as_ptr().cast(),
                1,
                null(),
                &mut m.cast(),
            ),
            S::InvalidHandle,
        );
        ok(grammask_grammar_free(g));
        let mut options = GrammaskJsonSchemaOptions {
            whitespace: 0,
            max_whitespace_run: 0,
            strict: false,
            lenient: false,
            format_assert: true,
            any_order: false,
        };
        ok(grammask_json_schema_options_default(&mut options));
        options.whitespace = 5;
        let mut out = null_mut();
        fails(
            grammask_compile_json_schema_with_limits(
                v,
                schema.as_ptr().cast(),
                schema.len(),
                &options,
                &defaults,
                &mut out,
            ),
            S::InvalidArgument,
        );
        ok(grammask_vocab_free(v));
    }
}

/// Whether `text` is a whole output of the grammar `g` (a matcher made and freed here).
fn accepts_text(g: *mut GrammaskGrammar, text: &str) -> bool {
    // SAFETY: live grammar handle; text of the given length.
    unsafe {
        let mut m = null_mut();
        ok(grammask_matcher_new(g, &mut m));
        let mut end = false;
        let accepted = grammask_matcher_accept_bytes(m, text.as_ptr(), text.len()) == S::Ok
            && grammask_matcher_can_terminate(m, &mut end) == S::Ok
            && end;
        ok(grammask_matcher_free(m));
        accepted
    }
}

#[test]
fn structural_tags_and_lazy_grammars() {
    // SAFETY (whole test): every pointer passed is valid for the call as documented.
    unsafe {
        let v = vocab();
        let tag = r#"{"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["{"],
            "tags": [{"begin": "{", "content": {"type": "any_text"}, "end": "}"}]}}"#;
        let mut g = null_mut();
        ok(grammask_compile_structural_tag(v, tag.as_ptr().cast(), tag.len(), null(), &mut g));
        assert!(accepts_text(g, "ab{a}b"));
        assert!(accepts_text(g, "a"));
        assert!(!accepts_text(g, "a{b"));
        ok(grammask_grammar_free(g));
        let bad = r#"{"type": "structural_tag", "format": {"type": "tag", "begin": 3}}"#;
        let status =
            grammask_compile_structural_tag(v, bad.as_ptr().cast(), bad.len(), null(), &mut g);
        assert!(fails(status, S::Grammar).contains("/format/begin"));

        // Lazy: free text until `{`, then the grammar from the `{` on.
        let words = [c"{".as_ptr()];
        let mut g = null_mut();
        ok(grammask_compile_lazy_gbnf(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            words.as_ptr(),
            1,
            null(),
            0,
            null(),
            0,
            null(),
            &mut g,
        ));
        assert!(accepts_text(g, "ab"));
        assert!(accepts_text(g, "ba{ab}"));
        assert!(!accepts_text(g, "b{ab}a"));
        ok(grammask_grammar_free(g));
        let patterns = [c"[\\s\\S]*?(\\{)[\\s\\S]*".as_ptr()];
        let mut g = null_mut();
        ok(grammask_compile_lazy_gbnf(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            null(),
            0,
            patterns.as_ptr(),
            1,
            null(),
            0,
            null(),
            &mut g,
        ));
        assert!(accepts_text(g, "a{b}"));
        ok(grammask_grammar_free(g));
        let unsupported = [c"a|b".as_ptr()];
        let status = grammask_compile_lazy_gbnf(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            null(),
            0,
            unsupported.as_ptr(),
            1,
            null(),
            0,
            null(),
            &mut g,
        );
        assert!(fails(status, S::Unsupported).contains("not supported"));
        let never = [c"}".as_ptr()];
        let status = grammask_compile_lazy_gbnf(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            never.as_ptr(),
            1,
            null(),
            0,
            null(),
            0,
            null(),
            &mut g,
        );
        assert!(fails(status, S::Grammar).contains("cannot start"));
        // Trigger token 0 ("{").
        let tokens = [0i32];
        ok(grammask_compile_lazy_gbnf(
            v,
            GBNF.as_ptr().cast(),
            GBNF.len(),
            null(),
            null(),
            0,
            null(),
            0,
            tokens.as_ptr(),
            1,
            null(),
            &mut g,
        ));
        ok(grammask_grammar_free(g));
        ok(grammask_vocab_free(v));
    }
}
