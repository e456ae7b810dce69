// grammask as a llama.cpp sampler: the `llama_sampler_i` callbacks over grammask's C ABI,
// and the grammask vocabulary built from a `llama_vocab`.

#include "grammask-sampler.h"

#include "grammask.h"

#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

thread_local std::string g_last_error;

std::string grammask_error(const char * what, GrammaskStatus status) {
    return std::string(what) + ": " + grammask_status_name(status) + ": " + grammask_last_error();
}

// The text llama.cpp's grammar sampler matches for a token: its piece with special tokens
// rendered (llama_vocab::token_to_piece, which that sampler reads).
std::string token_piece(const llama_vocab * vocab, llama_token id) {
    std::string piece(16, '\0');
    int32_t n = llama_token_to_piece(vocab, id, piece.data(), (int32_t) piece.size(), 0, true);
    if (n < 0) {
        piece.resize((size_t) -n);
        n = llama_token_to_piece(vocab, id, piece.data(), (int32_t) piece.size(), 0, true);
    }
    piece.resize(n < 0 ? 0 : (size_t) n);
    return piece;
}

// A fingerprint of a llama_vocab that tells whether a cached grammask vocabulary still
// describes it (another llama_vocab may be allocated where a freed one was): its size, its
// end-of-generation tokens' ids and the pieces of 64 tokens spread over it. Cheap next to
// a sampler's start, unlike reading every piece.
uint64_t fingerprint_of(const llama_vocab * vocab) {
    const int32_t n = llama_vocab_n_tokens(vocab);
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix((uint64_t) n);
    for (int32_t k = 0; k < 64 && n > 0; ++k) {
        const llama_token id = (llama_token) (((int64_t) n - 1) * k / 63);
        for (unsigned char c : token_piece(vocab, id)) {
            mix(c);
        }
        mix(llama_vocab_is_eog(vocab, id) ? 0x100u : 0x200u);
    }
    for (llama_token id : { llama_vocab_eos(vocab), llama_vocab_eot(vocab), llama_vocab_sep(vocab) }) {
        mix((uint64_t) (uint32_t) id);
    }
    return h;
}

// Builds the grammask vocabulary of `vocab` as llama.cpp's grammar sampler sees it:
// end-of-generation tokens are stop tokens (allowed exactly where the grammar can end);
// a token whose piece is empty or starts with a NUL byte is never allowed; every other
// token, control tokens included, is matched by its piece.
std::shared_ptr<GrammaskVocab> build_vocab(const llama_vocab * vocab) {
    const int32_t n = llama_vocab_n_tokens(vocab);
    std::vector<std::string> pieces((size_t) n);
    std::vector<const uint8_t *> bytes((size_t) n);
    std::vector<size_t> lens((size_t) n);
    std::vector<uint8_t> kinds((size_t) n);
    std::vector<uint32_t> stops;
    for (int32_t id = 0; id < n; ++id) {
        pieces[id] = token_piece(vocab, id);
        const std::string & piece = pieces[id];
        bytes[id] = (const uint8_t *) piece.data();
        lens[id] = piece.size();
        if (llama_vocab_is_eog(vocab, id)) {
            kinds[id] = GRAMMASK_TOKEN_KIND_SPECIAL;
            stops.push_back((uint32_t) id);
        } else if (piece.empty() || piece[0] == '\0') {
            kinds[id] = GRAMMASK_TOKEN_KIND_NORMAL;  // a normal token without bytes: no token
            lens[id] = 0;
        } else {
            kinds[id] = GRAMMASK_TOKEN_KIND_NORMAL;
        }
    }
    GrammaskVocab * raw = nullptr;
    GrammaskStatus status = grammask_vocab_from_tokens(bytes.data(), lens.data(), kinds.data(), (size_t) n,
                                                       stops.data(), stops.size(), (size_t) n, &raw);
    if (status != GRAMMASK_STATUS_OK) {
        throw std::runtime_error(grammask_error("grammask vocabulary", status));
    }
    std::shared_ptr<GrammaskVocab> shared(raw, grammask_vocab_free);
    status = grammask_vocab_prepare(raw);
    if (status != GRAMMASK_STATUS_OK) {
        throw std::runtime_error(grammask_error("grammask vocabulary", status));
    }
    return shared;
}

// The compiled grammars kept for reuse: a server compiles the same grammar or schema for
// request after request, and a kept grammar keeps the masks it has filled. Keyed by the
// vocabulary and the grammar's form and text; least recently used first out.
constexpr size_t GRAMMARS_KEPT = 16;

struct grammar_entry {
    std::string key;
    std::shared_ptr<GrammaskGrammar> grammar;
};

// The process's grammask vocabularies (one per llama_vocab) and kept grammars.
struct caches {
    std::mutex mutex;
    std::map<const llama_vocab *, std::pair<uint64_t, std::shared_ptr<GrammaskVocab>>> vocabs;
    std::vector<grammar_entry> grammars;  // most recently used last
};

caches & process_caches() {
    static caches c;
    return c;
}

std::shared_ptr<GrammaskVocab> vocab_for(const llama_vocab * vocab) {
    const uint64_t fingerprint = fingerprint_of(vocab);
    caches & c = process_caches();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto it = c.vocabs.find(vocab);
        if (it != c.vocabs.end() && it->second.first == fingerprint) {
            return it->second.second;
        }
    }
    std::shared_ptr<GrammaskVocab> built = build_vocab(vocab);
    std::lock_guard<std::mutex> lock(c.mutex);
    auto & slot = c.vocabs[vocab];
    if (slot.first != fingerprint || !slot.second) {
        slot = { fingerprint, built };
        // Grammars compiled for what was there before are of no use now.
        c.grammars.clear();
    }
    return slot.second;
}

// One sampler: the compiled grammar (shared with its clones) and this sequence's matcher.
// Both are null for an empty grammar, which constrains nothing.
struct sampler_ctx {
    const llama_vocab * vocab = nullptr;
    std::shared_ptr<GrammaskGrammar> grammar;
    GrammaskMatcher * matcher = nullptr;
};

const char * sampler_name(const llama_sampler * /*smpl*/) {
    return "grammask";
}

void sampler_accept(llama_sampler * smpl, llama_token token) {
    auto * ctx = (sampler_ctx *) smpl->ctx;
    if (!ctx->matcher) {
        return;
    }
    bool terminated = false;
    grammask_matcher_is_terminated(ctx->matcher, &terminated);
    if (terminated && llama_vocab_is_eog(ctx->vocab, token)) {
        return;  // a second end-of-generation token, as llama.cpp allows
    }
    const GrammaskStatus status = grammask_matcher_accept_token(ctx->matcher, token);
    if (status != GRAMMASK_STATUS_OK) {
        // llama.cpp's grammar sampler throws here too; the matcher is unchanged.
        throw std::runtime_error(grammask_error(("grammask: token " + std::to_string(token) + " (`" +
                                                 token_piece(ctx->vocab, token) + "`) not accepted")
                                                    .c_str(),
                                                status));
    }
}

void sampler_apply(llama_sampler * smpl, llama_token_data_array * cur_p) {
    auto * ctx = (sampler_ctx *) smpl->ctx;
    if (!ctx->matcher) {
        return;
    }
    static_assert(sizeof(GrammaskTokenData) == sizeof(llama_token_data), "GrammaskTokenData mirrors llama_token_data");
    const GrammaskStatus status =
        grammask_matcher_apply_to_candidates(ctx->matcher, (GrammaskTokenData *) cur_p->data, cur_p->size);
    if (status != GRAMMASK_STATUS_OK) {
        throw std::runtime_error(grammask_error("grammask: apply", status));
    }
}

void sampler_reset(llama_sampler * smpl) {
    auto * ctx = (sampler_ctx *) smpl->ctx;
    if (ctx->matcher) {
        grammask_matcher_reset(ctx->matcher);
    }
}

llama_sampler * sampler_clone(const llama_sampler * smpl);

void sampler_free(llama_sampler * smpl) {
    auto * ctx = (sampler_ctx *) smpl->ctx;
    grammask_matcher_free(ctx->matcher);
    delete ctx;
}

// The callbacks; the backend-sampling ones stay null (grammask masks on the CPU), and
// llama_sampler_copy falls back to clone.
llama_sampler_i make_iface() {
    llama_sampler_i iface{};
    iface.name = sampler_name;
    iface.accept = sampler_accept;
    iface.apply = sampler_apply;
    iface.reset = sampler_reset;
    iface.clone = sampler_clone;
    iface.free = sampler_free;
    return iface;
}

llama_sampler_i sampler_iface = make_iface();

llama_sampler * sampler_clone(const llama_sampler * smpl) {
    const auto * ctx = (const sampler_ctx *) smpl->ctx;
    auto copy = std::make_unique<sampler_ctx>();
    copy->vocab = ctx->vocab;
    copy->grammar = ctx->grammar;
    if (ctx->matcher && grammask_matcher_fork(ctx->matcher, &copy->matcher) != GRAMMASK_STATUS_OK) {
        throw std::runtime_error(grammask_error("grammask: clone", GRAMMASK_STATUS_INVALID_HANDLE));
    }
    return llama_sampler_init(&sampler_iface, copy.release());
}

// A sampler over the grammar `compile` makes for the grammask vocabulary of `vocab`
// (`compile` returns a status and sets its out-pointer), reusing a kept grammar of the same
// `key`; NULL with the reason recorded when it fails.
template <typename Compile>
llama_sampler * make_sampler(const llama_vocab * vocab, const char * what, const std::string & key,
                             Compile compile) {
    g_last_error.clear();
    try {
        auto ctx = std::make_unique<sampler_ctx>();
        ctx->vocab = vocab;
        std::shared_ptr<GrammaskVocab> gvocab = vocab_for(vocab);
        const std::string full_key =
            std::to_string((uintptr_t) gvocab.get()) + '\0' + what + '\0' + key;
        caches & c = process_caches();
        {
            std::lock_guard<std::mutex> lock(c.mutex);
            for (size_t i = 0; i < c.grammars.size(); ++i) {
                if (c.grammars[i].key == full_key) {
                    ctx->grammar = c.grammars[i].grammar;
                    std::rotate(c.grammars.begin() + i, c.grammars.begin() + i + 1, c.grammars.end());
                    break;
                }
            }
        }
        if (!ctx->grammar) {
            GrammaskGrammar * grammar = nullptr;
            const GrammaskStatus status = compile(gvocab.get(), &grammar);
            if (status != GRAMMASK_STATUS_OK) {
                throw std::runtime_error(grammask_error(what, status));
            }
            ctx->grammar = std::shared_ptr<GrammaskGrammar>(grammar, grammask_grammar_free);
            std::lock_guard<std::mutex> lock(c.mutex);
            if (c.grammars.size() >= GRAMMARS_KEPT) {
                c.grammars.erase(c.grammars.begin());
            }
            c.grammars.push_back(grammar_entry{ full_key, ctx->grammar });
        }
        if (grammask_matcher_new(ctx->grammar.get(), &ctx->matcher) != GRAMMASK_STATUS_OK) {
            throw std::runtime_error(grammask_error(what, GRAMMASK_STATUS_INVALID_HANDLE));
        }
        return llama_sampler_init(&sampler_iface, ctx.release());
    } catch (const std::exception & e) {
        g_last_error = e.what();
        fprintf(stderr, "%s\n", e.what());
        return nullptr;
    }
}

llama_sampler * empty_sampler(const llama_vocab * vocab) {
    auto ctx = std::make_unique<sampler_ctx>();
    ctx->vocab = vocab;
    return llama_sampler_init(&sampler_iface, ctx.release());
}

}  // namespace

extern "C" {

llama_sampler * llama_sampler_init_grammask(const llama_vocab * vocab, const char * grammar_str,
                                            const char * grammar_root) {
    if (grammar_str == nullptr || grammar_str[0] == '\0') {
        g_last_error.clear();
        return empty_sampler(vocab);
    }
    const std::string key = std::string(grammar_root ? grammar_root : "root") + '\0' + grammar_str;
    return make_sampler(vocab, "grammask: grammar", key, [&](GrammaskVocab * v, GrammaskGrammar ** out) {
        return grammask_compile_gbnf(v, grammar_str, strlen(grammar_str), grammar_root, out);
    });
}

llama_sampler * llama_sampler_init_grammask_json_schema(const llama_vocab * vocab, const char * schema_json) {
    if (schema_json == nullptr) {
        g_last_error = "grammask: JSON Schema: no schema";
        return nullptr;
    }
    return make_sampler(vocab, "grammask: JSON Schema", schema_json, [&](GrammaskVocab * v, GrammaskGrammar ** out) {
        return grammask_compile_json_schema(v, schema_json, strlen(schema_json), out);
    });
}

llama_sampler * llama_sampler_init_grammask_lazy(const llama_vocab * vocab, const char * grammar_str,
                                                 const char * grammar_root, const char * const * trigger_words,
                                                 size_t num_trigger_words, const char * const * trigger_patterns,
                                                 size_t num_trigger_patterns, const llama_token * trigger_tokens,
                                                 size_t num_trigger_tokens) {
    if (grammar_str == nullptr || grammar_str[0] == '\0') {
        g_last_error.clear();
        return empty_sampler(vocab);
    }
    std::string key = std::string(grammar_root ? grammar_root : "root") + '\0' + grammar_str;
    for (size_t i = 0; i < num_trigger_words; ++i) {
        key += std::string("\0w", 2) + trigger_words[i];
    }
    for (size_t i = 0; i < num_trigger_patterns; ++i) {
        key += std::string("\0p", 2) + trigger_patterns[i];
    }
    for (size_t i = 0; i < num_trigger_tokens; ++i) {
        key += std::string("\0t", 2) + std::to_string(trigger_tokens[i]);
    }
    return make_sampler(vocab, "grammask: lazy grammar", key, [&](GrammaskVocab * v, GrammaskGrammar ** out) {
        return grammask_compile_lazy_gbnf(v, grammar_str, strlen(grammar_str), grammar_root, trigger_words,
                                          num_trigger_words, trigger_patterns, num_trigger_patterns,
                                          trigger_tokens, num_trigger_tokens, nullptr, out);
    });
}

const char * llama_sampler_grammask_last_error(void) {
    return g_last_error.c_str();
}

}  // extern "C"
