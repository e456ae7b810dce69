//! Resource limits from the command line: a limit that is hit ends the command with
//! exit 1 and `limit: NAME: ...`; without the flag the defaults apply.

mod support;

fn grammask(args: &[&str]) -> (i32, String) {
    let out = support::grammask(args, None);
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn limits_from_the_command_line_are_named_when_hit() {
    let deep = support::temp_file("cli-limits", "deep.gbnf", "root ::= \"(\" root \")\" | \"x\"\n");
    let input = support::temp_file(
        "cli-limits",
        "input.txt",
        &format!("{}x{}", "(".repeat(50), ")".repeat(50)),
    );
    let (deep, input) = (deep.to_str().unwrap(), input.to_str().unwrap());

    let (code, text) = grammask(&["match", deep, input, "--max-stack-depth", "20"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: stack_depth"), "{text}");
    let (code, text) = grammask(&["match", deep, input]);
    assert_eq!((code, text.trim()), (0, "accepted"));

    let big = support::temp_file("cli-limits", "big.gbnf", "root ::= [a-z]{0,5000}\n");
    let big = big.to_str().unwrap();
    let (code, text) = grammask(&["check", big, "--max-automaton-states", "100"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: automaton_states"), "{text}");
    let (code, text) = grammask(&["check", big]);
    assert_eq!(code, 0, "{text}");
    let (code, _) = grammask(&["check", big, "--max-automaton-states", "lots"]);
    assert_eq!(code, 2, "a malformed limit is a usage error");

    let (code, text) = grammask(&["check", big, "--max-compile-ms", "0"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: compile_time"), "{text}");
    let (code, text) = grammask(&["check", big, "--max-compile-ms", "60000"]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn mask_cache_bound_from_the_command_line() {
    let g = support::temp_file("cli-limits", "words.gbnf", "root ::= [a-z]+ (\" \" [a-z]+)*\n");
    let g = g.to_str().unwrap();
    let args = ["mask", g, "--vocab", "o200k", "--prefix", "ab", "--json"];
    let (code, text) = grammask(
        &[&args[..], &["--precompute-mask-cache", "--max-mask-cache-bytes", "1000"]].concat(),
    );
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: mask_cache_bytes"), "{text}");
    // Lazily filled within a tiny bound, the mask is the same as with the default cache.
    let (code, bounded) = grammask(&[&args[..], &["--max-mask-cache-bytes", "1000"]].concat());
    assert_eq!(code, 0, "{bounded}");
    let (code, default) = grammask(&[&args[..], &["--precompute-mask-cache"]].concat());
    assert_eq!(code, 0, "{default}");
    let allowed = |json: &str| {
        let v: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        (v["count"].clone(), v["allowed"].clone())
    };
    assert_eq!(allowed(&bounded), allowed(&default));
    assert!(allowed(&bounded).0.as_u64().unwrap() > 1000, "{bounded}");
}
