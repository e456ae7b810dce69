use super::*;
use crate::{CompiledGrammar, Compiler};
use grammask_tokenset::bitmask_len;
use std::sync::Arc;

const TOKENS: &[&str] = &[
    "{\"", "a", "b", "n", "\":", " \"", "\"", "bill", "ing", "auth", "search", "s", "\",", " true",
    " false", ",", " ", "4", "2", "}", "</s>", "t", "e", "r", "u", "f", "l", "c", "h", "g", "i",
    "o",
];

fn vocab() -> Arc<Vocabulary> {
    let tokens = TOKENS.iter().map(|t| t.as_bytes().to_vec()).collect();
    let stop = TOKENS.iter().position(|t| *t == "</s>").unwrap() as u32;
    Arc::new(Vocabulary::from_byte_tokens(tokens, &[stop], &[stop], None).unwrap())
}

fn id(t: &str) -> u32 {
    TOKENS.iter().position(|x| *x == t).unwrap() as u32
}

fn grammar(vocab: &Arc<Vocabulary>) -> Arc<CompiledGrammar> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "a": {"enum": ["auth", "billing", "search"]},
            "b": {"type": "boolean"},
            "n": {"type": "integer"}
        },
        "required": ["a", "b", "n"],
        "additionalProperties": false
    });
    let options = grammask_syntax::JsonSchemaOptions::default();
    Compiler::new(vocab).compile_json_schema_value(&schema, &options).unwrap()
}

/// Logits where the chosen token scores 3, the listed others their own scores, every other
/// token -2.
fn logits(chosen: u32, others: &[(&str, f32)]) -> Vec<f32> {
    let mut l = vec![-2.0f32; TOKENS.len()];
    for (t, s) in others {
        l[id(t) as usize] = *s;
    }
    l[chosen as usize] = 3.0;
    l
}

/// Runs the planned tokens through a matcher and a recorder; returns the fields and the
/// steps.
fn run(plan: &[(&str, &[(&str, f32)])]) -> (Vec<Field>, Vec<StepDistribution>) {
    let vocab = vocab();
    let mut matcher = Matcher::new(grammar(&vocab));
    let mut recorder = FieldRecorder::new();
    let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
    let mut steps = Vec::new();
    for (token, others) in plan {
        let chosen = id(token);
        matcher.fill_next_token_bitmask(&mut mask).unwrap();
        let step = StepDistribution::from_logits(&logits(chosen, others), &mask, chosen);
        recorder.observe(&matcher, &step);
        matcher.accept_token(chosen).unwrap();
        steps.push(step);
    }
    (recorder.finish(), steps)
}

#[test]
fn step_probabilities_are_renormalized_over_the_allowed_tokens() {
    let mask = [0b0111u32];
    let logits = [1.0f32, 1.0, 0.0, 5.0];
    let s = StepDistribution::from_logits(&logits, &mask, 0);
    let e = std::f64::consts::E;
    let allowed = 2.0 * e + 1.0;
    assert!((s.p_chosen - e / allowed).abs() < 1e-9);
    assert!((s.mass_removed - e.powi(5) / (allowed + e.powi(5))).abs() < 1e-9);
    assert_eq!(s.alternatives.iter().map(|a| a.0).collect::<Vec<_>>(), vec![1, 2]);
    let total: f64 = s.p_chosen + s.alternatives.iter().map(|a| a.1).sum::<f64>();
    assert!((total - 1.0).abs() < 1e-9);
}

#[test]
fn an_enum_a_boolean_and_a_number() {
    let plan: &[(&str, &[(&str, f32)])] = &[
        ("{\"", &[]),
        ("a", &[]),
        ("\":", &[]),
        (" \"", &[("\"", 1.0)]),
        ("bill", &[("auth", 2.0), ("s", 1.0), ("search", 0.5)]),
        ("ing", &[]),
        ("\",", &[]),
        (" \"", &[]),
        ("b", &[]),
        ("\":", &[]),
        (" true", &[(" false", 2.5), (" ", 1.0)]),
        (",", &[]),
        (" \"", &[]),
        ("n", &[]),
        ("\":", &[]),
        (" ", &[]),
        ("4", &[("2", 1.0)]),
        ("2", &[("}", 2.0)]),
        ("}", &[]),
        ("</s>", &[]),
    ];
    let (fields, steps) = run(plan);
    let pointers: Vec<_> = fields.iter().map(|f| (f.pointer.as_str(), f.value.as_str())).collect();
    assert_eq!(pointers, [("/a", "\"billing\""), ("/b", "true"), ("/n", "42")]);

    // The enum: every token holding one of its bytes, steps 3 to 6.
    let a = &fields[0];
    let product: f64 = steps[3..=6].iter().map(|s| s.p_chosen).product();
    assert!((a.p_chosen - product).abs() < 1e-12, "{} vs {product}", a.p_chosen);
    assert_eq!(a.kind, ScalarKind::String);
    assert_eq!(a.choices, 3);
    assert_eq!(a.mass_removed, steps[3].mass_removed);
    // `auth` at step 4 is the likeliest way off `billing`; `s` and `search` both lead to
    // `"search"`.
    assert_eq!(a.runner_up.as_deref(), Some("\"auth\""));
    let p = |step: usize, t: &str| {
        steps[step].alternatives.iter().find(|x| x.0 == id(t)).map_or(0.0, |x| x.1)
    };
    // Every token at step 4 that can only lead to `auth`: `auth` and `a`.
    let expected = steps[3].p_chosen * (p(4, "auth") + p(4, "a"));
    assert!((a.p_runner_up.unwrap() - expected).abs() < 1e-12);
    assert!(p(4, "auth") > 0.0 && p(4, "s") + p(4, "search") < p(4, "auth"));

    // The boolean: ` false` and `f` are the ways off, ` ` keeps both values open.
    let b = &fields[1];
    assert_eq!((b.kind, b.choices), (ScalarKind::Boolean, 2));
    assert_eq!(b.runner_up.as_deref(), Some("false"));
    assert!((b.p_runner_up.unwrap() - p(10, " false") - p(10, "f")).abs() < 1e-12);
    assert!((b.p_chosen - steps[10].p_chosen).abs() < 1e-12);

    // The integer: too many values for a runner-up; its tokens are `4`, `2` and `}`, which
    // ends it.
    let n = &fields[2];
    assert_eq!((n.kind, n.choices, n.runner_up.clone()), (ScalarKind::Number, 0, None));
    let product: f64 = steps[16..=18].iter().map(|s| s.p_chosen).product();
    assert!((n.p_chosen - product).abs() < 1e-12);
    for f in &fields {
        assert!((0.0..=1.0).contains(&f.p_chosen) && (0.0..=1.0).contains(&f.mass_removed));
    }
}

#[test]
fn a_value_cut_off_is_not_reported() {
    let plan: &[(&str, &[(&str, f32)])] =
        &[("{\"", &[]), ("a", &[]), ("\":", &[]), (" \"", &[]), ("bill", &[])];
    let (fields, _) = run(plan);
    assert!(fields.is_empty());
}
