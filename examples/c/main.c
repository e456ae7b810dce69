/*
 * grammask C example: seeded, grammar-masked random walks.
 *
 * Usage (from the repository root): main [WALKS [VOCAB]]
 *   WALKS  walks per grammar (default 8)
 *   VOCAB  a vocabulary spec for grammask_vocab_load (default "o200k_base"), or "bytes"
 *          for a small vocabulary built here from arrays (the 95 printable ASCII bytes,
 *          tab and newline, a few multi-byte tokens and an EOS token)
 *
 * For each grammar (llama.cpp's json.gbnf, then a JSON Schema), runs WALKS walks: at each step the
 * matcher's bitmask gives the allowed tokens; the walk samples one (xorshift, biased
 * toward tokens that close strings, objects and arrays, and toward EOS), accepts it, and
 * also accepts the bytes the grammar forces next. A walk that reaches EOS within the step
 * cap prints its document on stdout followed by a line holding only "---", and prints the
 * grammar file it belongs to on stderr as "grammar: PATH".
 */
#include "grammask.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_CAP 300
#define JSON_GBNF "grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf"
#define PERSON_SCHEMA "examples/c/person.schema.json"

static void die(const char *what, GrammaskStatus status) {
    fprintf(stderr, "error: %s: %s: %s\n", what, grammask_status_name((int32_t)status),
            grammask_last_error());
    exit(1);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        GrammaskStatus status_ = (call);                                                   \
        if (status_ != GRAMMASK_STATUS_OK) die(#call, status_);                            \
    } while (0)

static uint64_t xorshift(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "error: cannot open %s (run from the repository root)\n", path);
        exit(1);
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "error: out of memory\n");
        exit(1);
    }
    *len = n;
    return buf;
}

/* A growable byte buffer. */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buffer;

static void buffer_push(Buffer *b, const uint8_t *bytes, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        uint8_t *data = realloc(b->data, cap);
        if (!data) {
            fprintf(stderr, "error: out of memory\n");
            exit(1);
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

/* The small vocabulary of the "bytes" mode, built from arrays. */
static GrammaskVocab *array_vocabulary(void) {
    static const char *extra[] = {"{\"", "\":", "\",", "\"}", "true", "false", "null", "\"name\"",
                                  "\"age\"", "\"tags\"", "[\"", "\"]", "\n  ", "</s>"};
    enum { N_EXTRA = sizeof extra / sizeof extra[0] };
    const uint8_t *tokens[128 + N_EXTRA];
    size_t lens[128 + N_EXTRA];
    uint8_t kinds[128 + N_EXTRA];
    static uint8_t bytes[128];
    size_t n = 0;
    for (int b = 0; b < 128; b++) {
        bytes[b] = (uint8_t)b;
        int printable = (b >= 32 && b < 127) || b == '\t' || b == '\n';
        tokens[n] = &bytes[b];
        lens[n] = printable ? 1 : 0; /* an empty normal token marks an unused id */
        kinds[n] = GRAMMASK_TOKEN_KIND_NORMAL;
        n++;
    }
    for (size_t i = 0; i < N_EXTRA; i++) {
        tokens[n] = (const uint8_t *)extra[i];
        lens[n] = strlen(extra[i]);
        kinds[n] = GRAMMASK_TOKEN_KIND_NORMAL;
        n++;
    }
    kinds[n - 1] = GRAMMASK_TOKEN_KIND_SPECIAL;
    uint32_t stop = (uint32_t)(n - 1);
    GrammaskVocab *vocab = NULL;
    /* A logits width above the token count: the padding ids are never allowed. */
    CHECK(grammask_vocab_from_tokens(tokens, lens, kinds, n, &stop, 1, n + 50, &vocab));
    return vocab;
}

/* Whether a token closes something: it holds a quote, a brace or a bracket. */
static int is_closing(const uint8_t *bytes, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (bytes[i] == '"' || bytes[i] == '}' || bytes[i] == ']') return 1;
    return 0;
}

typedef struct {
    const GrammaskVocab *vocab;
    size_t vocab_size, words;
    uint32_t *mask;
    int32_t *allowed, *closing;
    uint8_t *is_stop, *is_closing;
    GrammaskTokenData *candidates;
} Walker;

/* At the first step, checks the llama.cpp-style helper against the bitmask. */
static void check_candidates(Walker *w, GrammaskMatcher *m) {
    size_t n = w->vocab_size < 4096 ? w->vocab_size : 4096;
    for (size_t i = 0; i < n; i++) {
        w->candidates[i].id = (int32_t)i;
        w->candidates[i].logit = 0.5f;
        w->candidates[i].p = 0.0f;
    }
    CHECK(grammask_matcher_apply_to_candidates(m, w->candidates, n));
    for (size_t i = 0; i < n; i++) {
        int allowed = (w->mask[i / 32] >> (i % 32)) & 1u;
        if (allowed != !isinf(w->candidates[i].logit)) {
            fprintf(stderr, "error: candidate %zu disagrees with the bitmask\n", i);
            exit(1);
        }
    }
}

/* One walk; returns 1 and fills `doc` when it reached EOS. */
static int walk(Walker *w, GrammaskMatcher *m, uint64_t seed, Buffer *doc) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    uint8_t jump[4096];
    doc->len = 0;
    CHECK(grammask_matcher_reset(m));
    for (int step = 0; step < STEP_CAP; step++) {
        CHECK(grammask_matcher_fill_next_token_bitmask(m, w->mask, w->words));
        if (step == 0) check_candidates(w, m);
        size_t n_allowed = 0, n_closing = 0;
        int32_t stop = -1;
        for (size_t word = 0; word < w->words; word++) {
            uint32_t bits = w->mask[word];
            while (bits) {
                int bit = 0;
                while (!((bits >> bit) & 1u)) bit++;
                bits &= bits - 1;
                int32_t id = (int32_t)(word * 32 + (size_t)bit);
                if (w->is_stop[id]) {
                    stop = id;
                    continue;
                }
                w->allowed[n_allowed++] = id;
                if (w->is_closing[id]) w->closing[n_closing++] = id;
            }
        }
        int32_t id;
        if (stop >= 0 && (n_allowed == 0 || xorshift(&rng) % 10 < 7)) {
            id = stop;
        } else if (n_allowed == 0) {
            return 0; /* cannot happen with a grammar without dead ends */
        } else if (n_closing > 0 && xorshift(&rng) % 10 < 6) {
            id = w->closing[xorshift(&rng) % n_closing];
        } else {
            id = w->allowed[xorshift(&rng) % n_allowed];
        }
        CHECK(grammask_matcher_accept_token(m, id));
        if (id == stop) return 1;
        const uint8_t *bytes;
        size_t len;
        CHECK(grammask_vocab_token(w->vocab, id, &bytes, &len, NULL));
        buffer_push(doc, bytes, len);
        size_t n_jump = 0;
        CHECK(grammask_matcher_jump_forward_bytes(m, jump, sizeof jump, &n_jump));
        if (n_jump > 0) {
            CHECK(grammask_matcher_accept_bytes(m, jump, n_jump));
            buffer_push(doc, jump, n_jump);
        }
    }
    return 0;
}

static int run_grammar(Walker *w, GrammaskGrammar *grammar, const char *path, int walks,
                       uint64_t seed0) {
    GrammaskMatcher *m = NULL;
    CHECK(grammask_matcher_new(grammar, &m));
    Buffer doc = {NULL, 0, 0};
    int done = 0;
    for (int i = 0; i < walks; i++) {
        if (!walk(w, m, seed0 + (uint64_t)i, &doc)) continue;
        fwrite(doc.data, 1, doc.len, stdout);
        fputs("\n---\n", stdout);
        fprintf(stderr, "grammar: %s\n", path);
        done++;
    }
    free(doc.data);
    CHECK(grammask_matcher_free(m));
    return done;
}

int main(int argc, char **argv) {
    int walks = argc > 1 ? atoi(argv[1]) : 8;
    const char *spec = argc > 2 ? argv[2] : "o200k_base";
    if (walks < 0) walks = 0;

    GrammaskVocab *vocab = NULL;
    if (strcmp(spec, "bytes") == 0)
        vocab = array_vocabulary();
    else
        CHECK(grammask_vocab_load(spec, &vocab));

    CHECK(grammask_vocab_prepare(vocab));

    Walker w;
    memset(&w, 0, sizeof w);
    w.vocab = vocab;
    CHECK(grammask_vocab_size(vocab, &w.vocab_size));
    size_t n_stop = 0;
    GrammaskStatus st = grammask_vocab_stop_tokens(vocab, NULL, 0, &n_stop);
    if (st != GRAMMASK_STATUS_OK && st != GRAMMASK_STATUS_BUFFER_TOO_SMALL)
        die("grammask_vocab_stop_tokens", st);
    uint32_t *stops = calloc(n_stop ? n_stop : 1, sizeof *stops);
    w.is_stop = calloc(w.vocab_size, 1);
    w.is_closing = calloc(w.vocab_size, 1);
    w.allowed = calloc(w.vocab_size, sizeof *w.allowed);
    w.closing = calloc(w.vocab_size, sizeof *w.closing);
    w.candidates = calloc(w.vocab_size < 4096 ? w.vocab_size : 4096, sizeof *w.candidates);
    if (!stops || !w.is_stop || !w.is_closing || !w.allowed || !w.closing || !w.candidates) {
        fprintf(stderr, "error: out of memory\n");
        return 1;
    }
    CHECK(grammask_vocab_stop_tokens(vocab, stops, n_stop, &n_stop));
    for (size_t i = 0; i < n_stop; i++) w.is_stop[stops[i]] = 1;
    for (size_t id = 0; id < w.vocab_size; id++) {
        const uint8_t *bytes;
        size_t n;
        CHECK(grammask_vocab_token(vocab, (int32_t)id, &bytes, &n, NULL));
        w.is_closing[id] = (uint8_t)is_closing(bytes, n);
    }

    /* The first grammar: llama.cpp's json.gbnf. */
    size_t len;
    char *text = read_file(JSON_GBNF, &len);
    GrammaskGrammar *json = NULL;
    CHECK(grammask_compile_gbnf(vocab, text, len, NULL, &json));
    free(text);

    /* The second: a JSON Schema, compiled within explicit limits. */
    text = read_file(PERSON_SCHEMA, &len);
    GrammaskLimits limits;
    CHECK(grammask_limits_default(&limits));
    limits.max_compile_ms = 10000;
    GrammaskGrammar *person = NULL;
    CHECK(grammask_compile_json_schema_with_limits(vocab, text, len, NULL, &limits, &person));
    /* A limit that is hit is a status and a message naming it, never a crash. */
    limits.max_grammar_size = 10;
    GrammaskGrammar *refused = NULL;
    st = grammask_compile_json_schema_with_limits(vocab, text, len, NULL, &limits, &refused);
    if (st != GRAMMASK_STATUS_LIMIT || refused != NULL ||
        strncmp(grammask_last_error(), "limit: grammar_size: ", 21) != 0) {
        fprintf(stderr, "error: expected limit grammar_size, got %s: %s\n",
                grammask_status_name(st), grammask_last_error());
        return 1;
    }
    free(text);

    /* Both grammars share the vocabulary; the handles are refcounted, so the vocabulary
     * may be released while matchers still use it. */
    CHECK(grammask_grammar_bitmask_words(json, &w.words));
    w.mask = calloc(w.words, sizeof *w.mask);
    if (!w.mask) return 1;

    int done = run_grammar(&w, json, JSON_GBNF, walks, 1);
    done += run_grammar(&w, person, PERSON_SCHEMA, walks, 1000);
    fprintf(stderr, "%d of %d walks reached EOS\n", done, 2 * walks);

    CHECK(grammask_grammar_free(json));
    CHECK(grammask_grammar_free(person));
    CHECK(grammask_vocab_free(vocab));
    free(stops);
    free(w.is_stop);
    free(w.is_closing);
    free(w.allowed);
    free(w.closing);
    free(w.candidates);
    free(w.mask);
    return done > 0 ? 0 : 1;
}
