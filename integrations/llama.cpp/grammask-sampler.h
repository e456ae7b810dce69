/* grammask as a llama.cpp sampler: constructors of a `llama_sampler` that constrains the
 * next token with a grammask grammar, built from the model's own vocabulary.
 *
 * Drop-in for llama.cpp's grammar sampler: the same arguments as
 * `llama_sampler_init_grammar` and `llama_sampler_init_grammar_lazy_patterns`, the same
 * tokens allowed (a token is matched by its text as llama.cpp prints it with special
 * tokens rendered; end-of-generation tokens are allowed exactly where the grammar can
 * end), and the same failures: NULL from a constructor, an exception from `accept` when
 * the token is not allowed. The reason of the last NULL is in
 * `llama_sampler_grammask_last_error()`. */
#ifndef GRAMMASK_SAMPLER_H
#define GRAMMASK_SAMPLER_H

#include "llama.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A GBNF grammar (llama.cpp's dialect) with `grammar_root` (NULL: "root") as its start.
 * An empty grammar constrains nothing, as in llama.cpp. */
struct llama_sampler * llama_sampler_init_grammask(const struct llama_vocab * vocab,
                                                   const char * grammar_str,
                                                   const char * grammar_root);

/* A JSON Schema (JSON text), compiled by grammask's converter. */
struct llama_sampler * llama_sampler_init_grammask_json_schema(const struct llama_vocab * vocab,
                                                               const char * schema_json);

/* llama.cpp's lazy grammar: unconstrained until a trigger word, a trigger pattern (a
 * literal, optionally as `[\s\S]*?(LITERAL)[\s\S]*`, which is how llama.cpp writes
 * trigger words and chat templates' patterns) or a trigger token, then the grammar from
 * the trigger on. */
struct llama_sampler * llama_sampler_init_grammask_lazy(const struct llama_vocab * vocab,
                                                        const char * grammar_str,
                                                        const char * grammar_root,
                                                        const char * const * trigger_words,
                                                        size_t num_trigger_words,
                                                        const char * const * trigger_patterns,
                                                        size_t num_trigger_patterns,
                                                        const llama_token * trigger_tokens,
                                                        size_t num_trigger_tokens);

/* Why the last constructor on this thread returned NULL ("" when it did not). */
const char * llama_sampler_grammask_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GRAMMASK_SAMPLER_H */
