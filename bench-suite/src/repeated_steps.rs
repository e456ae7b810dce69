//! `grammask-bench repeated-steps RUN.jsonl OTHER.jsonl... [--engines A,B] [--threshold-us T]`:
//! which slow masks of a corpus run are the engine's own cost and which the machine's.
//!
//! A step of one run that takes T µs or more (2,000 by default, the worst mask the tails
//! issue asks for) is *repeated* when the same step (schema, instance, step) takes at
//! least T / 2 in every other run, and *once* otherwise: a stall of the machine (the
//! process descheduled, a page fault storm) strikes a step at random, while a first
//! visit or a rule built on first use slows the same step in every run. Only the pairs
//! the `maskbench` summary compares count: the schemas every listed engine compiled and
//! the instances every one walked to the end without refusing a token, in the first run.
//!
//! The inputs are the JSONL of `maskbench --vocab V --details FILE`, one line per (schema,
//! engine) answer with `file`, `engine`, `ok` and, when `ok`, `walks`: per instance its
//! `steps_us` and `refused`.

use crate::details::{answers, Answer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One engine's step times of one run: per schema, per instance, the step times, or
/// `None` for an instance with a refused token.
type Walks = BTreeMap<String, Vec<Option<Vec<f64>>>>;

/// The walks of each engine of one details file, by engine, for the schemas it compiled.
fn walks_of(text: &str) -> Result<BTreeMap<String, Walks>, String> {
    let mut by_engine: BTreeMap<String, Walks> = BTreeMap::new();
    for Answer { line, file, engine, value: v } in answers(text)? {
        if v["ok"].as_bool() != Some(true) {
            continue;
        }
        let walks = v["walks"].as_array().ok_or_else(|| format!("line {line}: no `walks`"))?;
        let walks = walks
            .iter()
            .map(|w| {
                let steps = w["steps_us"].as_array()?.iter().map(Value::as_f64).collect();
                if w["refused"].is_null() {
                    steps
                } else {
                    None
                }
            })
            .collect();
        by_engine.entry(engine).or_default().insert(file, walks);
    }
    Ok(by_engine)
}

/// A step of the first run at or over the threshold, with its times in the other runs.
#[derive(Clone, Debug, PartialEq)]
struct SlowStep {
    file: String,
    instance: usize,
    step: usize,
    us: f64,
    /// The same step in each other run (`None` where that run has no such step).
    others: Vec<Option<f64>>,
}

impl SlowStep {
    /// Whether the step took at least half the threshold in every other run.
    fn repeated(&self, threshold_us: f64) -> bool {
        self.others.iter().all(|o| o.is_some_and(|us| us >= threshold_us / 2.0))
    }
}

/// The steps of `engine` at or over `threshold_us` in the first of `runs`, over the
/// instances every engine of `engines` walked to the end there, slowest first.
fn slow_steps<'a>(
    runs: &'a [BTreeMap<String, Walks>],
    engines: &[String],
    engine: &str,
    threshold_us: f64,
) -> Vec<SlowStep> {
    static NONE: Walks = Walks::new();
    let of =
        |run: &'a BTreeMap<String, Walks>, e: &str| -> &'a Walks { run.get(e).unwrap_or(&NONE) };
    let first: Vec<&Walks> = engines.iter().map(|e| of(&runs[0], e)).collect();
    let others: Vec<&Walks> = runs[1..].iter().map(|r| of(r, engine)).collect();
    let mut slow = Vec::new();
    for (file, walks) in of(&runs[0], engine) {
        if !first.iter().all(|w| w.contains_key(file)) {
            continue;
        }
        for (instance, steps) in walks.iter().enumerate() {
            let walked_by_all = first
                .iter()
                .all(|w| w.get(file).and_then(|ws| ws.get(instance)).is_some_and(|s| s.is_some()));
            let Some(steps) = steps.as_ref().filter(|_| walked_by_all) else { continue };
            for (step, &us) in steps.iter().enumerate().filter(|&(_, &us)| us >= threshold_us) {
                let others = others
                    .iter()
                    .map(|o| o.get(file)?.get(instance)?.as_ref()?.get(step).copied())
                    .collect();
                slow.push(SlowStep { file: file.clone(), instance, step, us, others });
            }
        }
    }
    slow.sort_by(|a, b| b.us.total_cmp(&a.us));
    slow
}

/// Prints, per engine, the slow steps of the first run, repeated and once, and the
/// slowest repeated ones.
pub fn run(
    runs: &[PathBuf],
    engines: &[String],
    threshold_us: f64,
    top: usize,
) -> Result<(), String> {
    if runs.len() < 2 {
        return Err("repeated-steps needs two runs or more".to_string());
    }
    let runs: Vec<BTreeMap<String, Walks>> = runs
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            walks_of(&text).map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, _>>()?;
    let engines: Vec<String> =
        if engines.is_empty() { runs[0].keys().cloned().collect() } else { engines.to_vec() };
    println!(
        "steps of {threshold_us} µs or more in the first run, over the instances {} all walked; \
         repeated: at least {} µs in each of the {} other runs",
        engines.join(", "),
        threshold_us / 2.0,
        runs.len() - 1
    );
    println!("| engine | slow steps | repeated | once | worst repeated (µs) | worst once (µs) |");
    println!("|---|---|---|---|---|---|");
    let mut tops = Vec::new();
    for engine in &engines {
        let slow = slow_steps(&runs, &engines, engine, threshold_us);
        let (repeated, once): (Vec<&SlowStep>, Vec<&SlowStep>) =
            slow.iter().partition(|s| s.repeated(threshold_us));
        let worst = |v: &[&SlowStep]| v.first().map_or("-".to_string(), |s| format!("{:.0}", s.us));
        println!(
            "| {engine} | {} | {} | {} | {} | {} |",
            slow.len(),
            repeated.len(),
            once.len(),
            worst(&repeated),
            worst(&once)
        );
        tops.push((engine, repeated.into_iter().take(top).cloned().collect::<Vec<_>>()));
    }
    for (engine, steps) in tops {
        println!("\n{engine}: slowest repeated steps (µs in this run; in the others)");
        for s in steps {
            let others: Vec<String> = s
                .others
                .iter()
                .map(|o| o.map_or("-".to_string(), |us| format!("{us:.0}")))
                .collect();
            println!(
                "  {:>8.0}  {} instance {} step {} ({})",
                s.us,
                s.file,
                s.instance,
                s.step,
                others.join(", ")
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(file: &str, engine: &str, walks: &str) -> String {
        format!(r#"{{"file":"{file}","engine":"{engine}","ok":true,"walks":{walks}}}"#)
    }

    fn run_of(lines: &[String]) -> BTreeMap<String, Walks> {
        walks_of(&lines.join("\n")).expect("parses")
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_step_slow_in_every_run_is_repeated_and_one_slow_once_is_not() {
        let walk = |a: f64, b: f64| format!(r#"[{{"steps_us":[1.0,{a},{b}],"refused":null}}]"#);
        let first = run_of(&[
            line("s.json", "grammask", &walk(2500.0, 3000.0)),
            line("s.json", "llguidance", &walk(5.0, 5.0)),
        ]);
        let second = run_of(&[line("s.json", "grammask", &walk(1200.0, 10.0))]);
        let engines = names(&["grammask", "llguidance"]);
        let slow = slow_steps(&[first, second], &engines, "grammask", 2000.0);
        assert_eq!(slow.len(), 2);
        assert_eq!(
            (slow[0].step, slow[0].us, slow[0].others.clone()),
            (2, 3000.0, vec![Some(10.0)])
        );
        assert!(!slow[0].repeated(2000.0), "fast in the other run: the machine's");
        assert_eq!((slow[1].step, slow[1].others.clone()), (1, vec![Some(1200.0)]));
        assert!(slow[1].repeated(2000.0), "over half the threshold in the other run");
    }

    #[test]
    fn only_instances_every_engine_walked_count() {
        let slow_walk =
            r#"[{"steps_us":[3000.0],"refused":null},{"steps_us":[4000.0],"refused":null}]"#;
        let refused_second =
            r#"[{"steps_us":[1.0],"refused":null},{"steps_us":[1.0],"refused":{"step":0}}]"#;
        let first = run_of(&[
            line("a.json", "grammask", slow_walk),
            line("a.json", "llguidance", refused_second),
            line("b.json", "grammask", slow_walk),
        ]);
        let second = run_of(&[line("a.json", "grammask", slow_walk)]);
        let engines = names(&["grammask", "llguidance"]);
        let slow = slow_steps(&[first, second], &engines, "grammask", 2000.0);
        assert_eq!(
            slow.len(),
            1,
            "b.json was compiled by one engine, a.json's second walk refused"
        );
        assert_eq!((slow[0].file.as_str(), slow[0].instance), ("a.json", 0));
        assert!(slow[0].repeated(2000.0));
    }

    #[test]
    fn a_step_missing_from_another_run_is_not_repeated() {
        let first =
            run_of(&[line("a.json", "grammask", r#"[{"steps_us":[3000.0],"refused":null}]"#)]);
        let second = run_of(&[]);
        let slow = slow_steps(&[first, second], &names(&["grammask"]), "grammask", 2000.0);
        assert_eq!(slow[0].others, vec![None]);
        assert!(!slow[0].repeated(2000.0));
    }

    #[test]
    fn lines_without_walks_are_refused() {
        let bad = r#"{"file":"a","engine":"grammask","ok":true}"#;
        assert!(walks_of(bad).unwrap_err().contains("walks"));
    }
}
