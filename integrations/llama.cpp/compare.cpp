// The compare program: one greedy generation through llama.cpp, constrained by llama.cpp's
// grammar sampler or by grammask's, printed as one JSON line.
//
//   grammask-compare --model GGUF --grammar FILE --sampler grammask|llama --prompt TEXT
//                    --n-predict N [--json] [--grammar-first] [--threads N] [--verbose]
//                    [--trigger-word WORD]... [--trigger-token ID]...
//
// The prompt is the user message of the GGUF's chat template. `--grammar` takes GBNF, or a
// JSON Schema when the file name ends in `.json` (llama.cpp's json_schema_to_grammar for
// `llama`, grammask's converter for `grammask`). Each step samples as llama.cpp's
// common_sampler_sample does (greedy here): the highest logit, checked alone by the grammar
// sampler, and only when the grammar refuses it the whole vocabulary masked and the highest
// allowed logit taken (`--grammar-first`: the whole vocabulary masked at every step); then
// the grammar sampler accepts the token. The output is {"tokens", "text", "stop",
// "sampler_us_per_token", "tokens_per_s", ...}; the time in the grammar sampler's apply and
// accept calls is the sampler's.

#include "common.h"
#include "grammask-sampler.h"
#include "json-schema-to-grammar.h"
#include "llama.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct options {
    std::string model;
    std::string grammar;
    std::string sampler;
    std::string prompt;
    int n_predict = -1;
    int threads = 2;
    bool json = false;
    bool verbose = false;
    bool grammar_first = false;
    std::vector<std::string> trigger_words;   // lazy grammar: its trigger words
    std::vector<llama_token> trigger_tokens;  // and trigger tokens
};

[[noreturn]] void usage(const char * message) {
    fprintf(stderr,
            "error: %s\n"
            "usage: grammask-compare --model GGUF --grammar FILE --sampler grammask|llama --prompt TEXT\n"
            "                        --n-predict N [--json] [--grammar-first] [--threads N] [--verbose]\n"
            "                        [--trigger-word WORD]... [--trigger-token ID]...\n",
            message);
    exit(2);
}

options parse_args(int argc, char ** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage((arg + " needs a value").c_str());
            }
            return argv[++i];
        };
        auto number = [&]() -> int {
            const std::string v = value();
            char * end = nullptr;
            const long n = strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 0 || n > 1000000) {
                usage((arg + " takes a number from 0 to 1000000, not `" + v + "`").c_str());
            }
            return (int) n;
        };
        if (arg == "--model") {
            o.model = value();
        } else if (arg == "--grammar") {
            o.grammar = value();
        } else if (arg == "--sampler") {
            o.sampler = value();
        } else if (arg == "--prompt") {
            o.prompt = value();
        } else if (arg == "--n-predict") {
            o.n_predict = number();
        } else if (arg == "--threads") {
            o.threads = number();
        } else if (arg == "--json") {
            o.json = true;
        } else if (arg == "--trigger-word") {
            o.trigger_words.push_back(value());
        } else if (arg == "--trigger-token") {
            o.trigger_tokens.push_back(number());
        } else if (arg == "--grammar-first") {
            o.grammar_first = true;
        } else if (arg == "--verbose") {
            o.verbose = true;
        } else {
            usage(("unknown argument `" + arg + "`").c_str());
        }
    }
    if (o.model.empty() || o.grammar.empty() || o.prompt.empty() || o.n_predict < 0) {
        usage("--model, --grammar, --prompt and --n-predict are required");
    }
    if (o.sampler != "grammask" && o.sampler != "llama") {
        usage("--sampler is grammask or llama");
    }
    if (o.threads == 0) {
        usage("--threads is at least 1");
    }
    return o;
}

std::string read_file(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool ends_with(const std::string & s, const std::string & suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The length of the valid UTF-8 sequence at s[i] (0 when the byte there starts none).
size_t utf8_length(const std::string & s, size_t i) {
    const unsigned char c = (unsigned char) s[i];
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) {
        return 0;
    }
    for (size_t k = 1; k < n; ++k) {
        if (((unsigned char) s[i + k] >> 6) != 0x2) {
            return 0;
        }
    }
    return n;
}

// A JSON string of `s`; a byte that is not part of valid UTF-8 (the text may end inside a
// character) is written as U+FFFD.
std::string json_string(const std::string & s) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = (unsigned char) s[i];
        const size_t n = utf8_length(s, i);
        if (n == 0) {
            out += "\\ufffd";
            i += 1;
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out.append(s, i, n);
                }
        }
        i += n;
    }
    return out + "\"";
}

// The prompt as the model's chat template writes a user message, with the assistant's turn
// opened.
std::string chat_prompt(const llama_model * model, const std::string & user) {
    const char * tmpl = llama_model_chat_template(model, nullptr);
    if (tmpl == nullptr) {
        throw std::runtime_error("the model has no chat template");
    }
    llama_chat_message message = { "user", user.c_str() };
    std::vector<char> buf(user.size() * 2 + 1024);
    int32_t n = llama_chat_apply_template(tmpl, &message, 1, true, buf.data(), (int32_t) buf.size());
    if (n > (int32_t) buf.size()) {
        buf.resize((size_t) n);
        n = llama_chat_apply_template(tmpl, &message, 1, true, buf.data(), (int32_t) buf.size());
    }
    if (n < 0) {
        throw std::runtime_error("the model's chat template is not one llama_chat_apply_template knows");
    }
    return std::string(buf.data(), (size_t) n);
}

llama_sampler * make_grammar_sampler(const options & o, const llama_vocab * vocab) {
    const std::string text = read_file(o.grammar);
    const bool schema = ends_with(o.grammar, ".json");
    llama_sampler * s = nullptr;
    if (!o.trigger_words.empty() || !o.trigger_tokens.empty()) {
        if (schema) {
            throw std::runtime_error("a lazy grammar (--trigger-word, --trigger-token) is GBNF");
        }
        // Trigger words as llama.cpp's common_sampler_init passes them: escaped patterns.
        std::vector<std::string> patterns;
        for (const auto & word : o.trigger_words) {
            patterns.push_back(regex_escape(word));
        }
        std::vector<const char *> patterns_c;
        for (const auto & p : patterns) {
            patterns_c.push_back(p.c_str());
        }
        s = o.sampler == "grammask"
                ? llama_sampler_init_grammask_lazy(vocab, text.c_str(), "root", nullptr, 0, patterns_c.data(),
                                                   patterns_c.size(), o.trigger_tokens.data(), o.trigger_tokens.size())
                : llama_sampler_init_grammar_lazy_patterns(vocab, text.c_str(), "root", patterns_c.data(),
                                                           patterns_c.size(), o.trigger_tokens.data(),
                                                           o.trigger_tokens.size());
        if (s == nullptr) {
            throw std::runtime_error(std::string("the lazy grammar was refused: ") +
                                     (o.sampler == "grammask" ? llama_sampler_grammask_last_error() : ""));
        }
        return s;
    }
    if (o.sampler == "grammask") {
        s = schema ? llama_sampler_init_grammask_json_schema(vocab, text.c_str())
                   : llama_sampler_init_grammask(vocab, text.c_str(), "root");
        if (s == nullptr) {
            throw std::runtime_error(std::string("grammask refused the grammar: ") + llama_sampler_grammask_last_error());
        }
    } else {
        const std::string gbnf = schema ? json_schema_to_grammar(common_json::parse(text)) : text;
        s = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
        if (s == nullptr) {
            throw std::runtime_error("llama.cpp's grammar sampler refused the grammar");
        }
    }
    return s;
}

// Greedy: the first highest logit among the candidates not masked out (size when none).
size_t greedy(const llama_token_data_array & cur_p) {
    size_t best = cur_p.size;
    for (size_t k = 0; k < cur_p.size; ++k) {
        if (cur_p.data[k].logit != -INFINITY && (best == cur_p.size || cur_p.data[k].logit > cur_p.data[best].logit)) {
            best = k;
        }
    }
    return best;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int run(const options & o) {
    if (!o.verbose) {
        llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    }
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    std::unique_ptr<llama_model, decltype(&llama_model_free)> model_owner(
        llama_model_load_from_file(o.model.c_str(), mparams), llama_model_free);
    llama_model * model = model_owner.get();
    if (model == nullptr) {
        throw std::runtime_error("cannot load the model " + o.model);
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);

    const std::string prompt = chat_prompt(model, o.prompt);
    std::vector<llama_token> tokens(prompt.size() + 16);
    int32_t n_prompt = llama_tokenize(vocab, prompt.c_str(), (int32_t) prompt.size(), tokens.data(),
                                      (int32_t) tokens.size(), true, true);
    if (n_prompt < 0) {
        throw std::runtime_error("the prompt does not tokenize");
    }
    tokens.resize((size_t) n_prompt);

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t) (n_prompt + o.n_predict + 8);
    cparams.n_batch = cparams.n_ctx;
    cparams.n_threads = o.threads;
    cparams.n_threads_batch = o.threads;
    cparams.no_perf = true;
    std::unique_ptr<llama_context, decltype(&llama_free)> ctx_owner(llama_init_from_model(model, cparams), llama_free);
    llama_context * ctx = ctx_owner.get();
    if (ctx == nullptr) {
        throw std::runtime_error("cannot create a llama.cpp context");
    }

    const auto compile_start = std::chrono::steady_clock::now();
    std::unique_ptr<llama_sampler, decltype(&llama_sampler_free)> grammar_owner(make_grammar_sampler(o, vocab),
                                                                                 llama_sampler_free);
    llama_sampler * grammar = grammar_owner.get();
    const double compile_s = seconds_since(compile_start);

    if (llama_decode(ctx, llama_batch_get_one(tokens.data(), n_prompt)) != 0) {
        throw std::runtime_error("llama_decode failed on the prompt");
    }

    std::vector<llama_token_data> candidates((size_t) n_vocab);
    std::vector<llama_token> generated;
    std::string text;
    std::string stop = "length";
    double sampler_s = 0.0;
    size_t resampled = 0;     // steps where the grammar refused the model's own choice
    std::vector<double> step_us;  // apply + accept of each step
    const auto generation_start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.n_predict; ++i) {
        const float * logits = llama_get_logits_ith(ctx, -1);
        for (int32_t id = 0; id < n_vocab; ++id) {
            candidates[id] = llama_token_data{ id, logits[id], 0.0f };
        }
        llama_token_data_array cur_p = { candidates.data(), candidates.size(), -1, false };

        double step_s = 0.0;
        size_t best = cur_p.size;
        if (!o.grammar_first) {
            // llama.cpp's common_sampler_sample: sample without the grammar, then check the
            // sampled token alone; only when the grammar refuses it, mask every candidate.
            best = greedy(cur_p);
            llama_token_data single = cur_p.data[best];
            llama_token_data_array single_p = { &single, 1, -1, false };
            auto t = std::chrono::steady_clock::now();
            llama_sampler_apply(grammar, &single_p);
            step_s += seconds_since(t);
            if (single.logit == -INFINITY) {
                ++resampled;
                best = cur_p.size;
            }
        }
        if (best == cur_p.size) {
            auto t = std::chrono::steady_clock::now();
            llama_sampler_apply(grammar, &cur_p);
            step_s += seconds_since(t);
            best = greedy(cur_p);
        }
        if (best == cur_p.size) {
            sampler_s += step_s;
            step_us.push_back(step_s * 1e6);
            stop = "no_token";  // the grammar allows nothing (a dead end)
            break;
        }
        llama_token token = cur_p.data[best].id;

        auto t = std::chrono::steady_clock::now();
        llama_sampler_accept(grammar, token);
        step_s += seconds_since(t);
        sampler_s += step_s;
        step_us.push_back(step_s * 1e6);

        if (llama_vocab_is_eog(vocab, token)) {
            stop = "eog";
            break;
        }
        generated.push_back(token);
        text += common_token_to_piece(vocab, token, true);  // as the grammar samplers see it
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) {
            throw std::runtime_error("llama_decode failed");
        }
    }
    const double generation_s = seconds_since(generation_start);
    const size_t steps = generated.size() + (stop == "eog" ? 1 : 0);

    if (o.json) {
        std::string ids;
        for (size_t k = 0; k < generated.size(); ++k) {
            ids += (k ? "," : "") + std::to_string(generated[k]);
        }
        std::string per_step;
        for (size_t k = 0; k < step_us.size(); ++k) {
            char buf[32];
            snprintf(buf, sizeof buf, "%s%.1f", k ? "," : "", step_us[k]);
            per_step += buf;
        }
        printf("{\"tokens\": [%s], \"text\": %s, \"stop\": \"%s\", \"sampler_us_per_token\": %.3f, "
               "\"tokens_per_s\": %.3f, \"sampler\": \"%s\", \"steps\": %zu, \"prompt_tokens\": %d, "
               "\"grammar_init_ms\": %.3f, \"mode\": \"%s\", \"resampled\": %zu, \"sampler_us_steps\": [%s]}\n",
               ids.c_str(), json_string(text).c_str(), stop.c_str(), steps ? sampler_s * 1e6 / steps : 0.0,
               generation_s > 0 ? steps / generation_s : 0.0, o.sampler.c_str(), steps, n_prompt,
               compile_s * 1e3, o.grammar_first ? "grammar_first" : "rejection", resampled, per_step.c_str());
    } else {
        printf("%s\n", text.c_str());
        fprintf(stderr, "stop: %s; %zu steps; sampler %.1f us/token; %.1f tokens/s\n", stop.c_str(), steps,
                steps ? sampler_s * 1e6 / steps : 0.0, generation_s > 0 ? steps / generation_s : 0.0);
    }

    return 0;
}

}  // namespace

int main(int argc, char ** argv) {
    const options o = parse_args(argc, argv);
    int status = 1;
    try {
        status = run(o);
    } catch (const std::exception & e) {
        fprintf(stderr, "error: %s\n", e.what());
    }
    llama_backend_free();
    return status;
}
