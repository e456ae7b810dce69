//! Resource limits from the command line: a limit that is hit ends the command with
//! exit 1 and `limit: NAME: ...`; without the flag the defaults apply.

use std::process::Command;

fn grammask(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_grammask")).args(args).output().expect("runs");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn limits_from_the_command_line_are_named_when_hit() {
    let dir = std::env::temp_dir().join(format!("grammask-cli-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deep = dir.join("deep.gbnf");
    std::fs::write(&deep, "root ::= \"(\" root \")\" | \"x\"\n").unwrap();
    let input = dir.join("input.txt");
    std::fs::write(&input, format!("{}x{}", "(".repeat(50), ")".repeat(50))).unwrap();
    let (deep, input) = (deep.to_str().unwrap(), input.to_str().unwrap());

    let (code, text) = grammask(&["match", deep, input, "--max-stack-depth", "20"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: stack_depth"), "{text}");
    let (code, text) = grammask(&["match", deep, input]);
    assert_eq!((code, text.trim()), (0, "accepted"));

    let big = dir.join("big.gbnf");
    std::fs::write(&big, "root ::= [a-z]{0,5000}\n").unwrap();
    let big = big.to_str().unwrap();
    let (code, text) = grammask(&["check", big, "--max-automaton-states", "100"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("limit: automaton_states"), "{text}");
    let (code, text) = grammask(&["check", big]);
    assert_eq!(code, 0, "{text}");
    let (code, _) = grammask(&["check", big, "--max-automaton-states", "lots"]);
    assert_eq!(code, 2, "a malformed limit is a usage error");
    std::fs::remove_dir_all(&dir).ok();
}
