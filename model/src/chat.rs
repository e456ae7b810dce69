//! Chat prompts: the chat template a GGUF file stores (`tokenizer.chat_template`, Jinja),
//! rendered with minijinja, and ChatML when a file has none.

use crate::Error;
use minijinja::{context, Environment, ErrorKind};
use serde::Serialize;

/// One message of a chat.
#[derive(Clone, Debug, Serialize)]
pub struct Message<'a> {
    /// `system`, `user` or `assistant`.
    pub role: &'a str,
    /// The text.
    pub content: &'a str,
}

/// Renders a chat template for `messages`, ending with the opened assistant turn
/// (`add_generation_prompt`). The template sees `messages`, `bos_token`, `eos_token`,
/// `add_generation_prompt`, Python's string methods (`.strip()`, ...), `raise_exception`
/// and `strftime_now`, as Hugging Face's `apply_chat_template` provides them.
pub fn render(
    template: &str,
    messages: &[Message<'_>],
    bos_token: &str,
    eos_token: &str,
) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |message: String| -> Result<String, minijinja::Error> {
        Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
    });
    env.add_function("strftime_now", |format: String| -> String {
        // Templates ask for today's date; a fixed one keeps prompts reproducible.
        format
            .replace("%Y", "2026")
            .replace("%m", "01")
            .replace("%d", "01")
            .replace("%b", "Jan")
            .replace("%B", "January")
    });
    let fail = |e: minijinja::Error| Error::Gguf(format!("tokenizer.chat_template: {e:#}"));
    env.add_template("chat", template).map_err(fail)?;
    let tmpl = env.get_template("chat").map_err(fail)?;
    tmpl.render(context! {
        messages => messages,
        bos_token => bos_token,
        eos_token => eos_token,
        add_generation_prompt => true,
    })
    .map_err(fail)
}

/// ChatML (`<|im_start|>role\n...<|im_end|>\n`), ending with the opened assistant turn.
pub fn chatml(messages: &[Message<'_>]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content));
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hugging_face_template_renders_like_chatml() {
        let template = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are helpful<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'].strip() + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
        let user = [Message { role: "user", content: " hi " }];
        let out = render(template, &user, "<s>", "</s>").unwrap();
        let system = [
            Message { role: "system", content: "You are helpful" },
            Message { role: "user", content: "hi" },
        ];
        assert_eq!(out, chatml(&system));
    }

    #[test]
    fn a_template_error_is_reported() {
        let e = render("{{ raise_exception('no system role') }}", &[], "", "").unwrap_err();
        assert!(e.to_string().contains("no system role"), "{e}");
        assert!(render("{% for %}", &[], "", "").is_err());
    }
}
