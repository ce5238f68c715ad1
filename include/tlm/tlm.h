/*===- tlm.h - tlm's C API --------------------------------------*- C -*-===*\
|*                                                                            *|
|* Runs a compiled model (an artifact written by `tlm-run compile`) from C:   *|
|* load the artifact, bind weights, open a session with its KV cache, step    *|
|* tokens through it, sample. Every call that can fail returns a tlm_status   *|
|* and leaves a message for tlm_last_error(); nothing aborts. See             *|
|* docs/c-api.md.                                                             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef TLM_TLM_H
#define TLM_TLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; tlm_version() is the library's. They differ
 * when a program was compiled against another header than it runs with. */
/* 3: each sequence of a session has a position of its own
 * (tlm_session_sequence_position, tlm_session_truncate). */
#define TLM_API_VERSION 3
int tlm_version(void);

typedef enum tlm_status {
  TLM_OK = 0,
  TLM_ERROR_ARGUMENT = 1, /* a null pointer, a size out of range */
  TLM_ERROR_FILE = 2,     /* a file that cannot be read or is malformed */
  TLM_ERROR_MISMATCH = 3, /* an artifact, weights or host that do not fit */
  TLM_ERROR_MEMORY = 4,   /* not enough memory */
  TLM_ERROR_INTERNAL = 5  /* a failure inside tlm */
} tlm_status;

/* The message of the last call on this thread that did not return TLM_OK
 * (an empty string before any). Valid until the next tlm call here. */
const char *tlm_last_error(void);

/* A loaded artifact. The model outlives the weights and sessions made for
 * it. */
typedef struct tlm_model tlm_model;
tlm_status tlm_model_load(const char *artifact_path, tlm_model **model);
void tlm_model_free(tlm_model *model);
/* The config the artifact was compiled for, as JSON. */
const char *tlm_model_config(const tlm_model *model);
int64_t tlm_model_vocab_size(const tlm_model *model);
int64_t tlm_model_context_length(const tlm_model *model);
/* The threads the artifact runs on. */
int tlm_model_threads(const tlm_model *model);
/* The weight tensors it takes, in order: name, element count (as stored)
 * and dtype as safetensors spells it ("F32", or for the matrices of a
 * bf16 / f16 model "BF16" / "F16"; version 2). A q8_0 / q4_0 matrix is two
 * tensors: its codes ("I8", or "U8" holding two a byte) and then its
 * "NAME.scale" ("F32"), as docs/spec/config.md#quantized-weights says. */
size_t tlm_model_num_weights(const tlm_model *model);
const char *tlm_model_weight_name(const tlm_model *model, size_t i);
size_t tlm_model_weight_elements(const tlm_model *model, size_t i);
const char *tlm_model_weight_dtype(const tlm_model *model, size_t i);

/* Weights for a model: read from a safetensors file, drawn from a seed (as
 * `tlm-run --seed`), or the caller's own tensors, used in place without a
 * copy (they must outlive every session using them). They outlive the
 * sessions made with them. */
typedef struct tlm_weights tlm_weights;
tlm_status tlm_weights_from_file(const tlm_model *model, const char *path,
                                 tlm_weights **weights);
tlm_status tlm_weights_from_seed(const tlm_model *model, uint64_t seed,
                                 tlm_weights **weights);
/* Each tensor's data is in its tlm_model_weight_dtype (version 2: the
 * pointers were `const float *` in version 1). */
tlm_status tlm_weights_from_memory(const tlm_model *model,
                                   const void *const *tensors, size_t count,
                                   tlm_weights **weights);
void tlm_weights_free(tlm_weights *weights);

/* A session: `batch` sequences, each with its KV cache, starting at
 * position 0. */
typedef struct tlm_session tlm_session;
tlm_status tlm_session_create(const tlm_model *model,
                              const tlm_weights *weights, int64_t batch,
                              tlm_session **session);
void tlm_session_free(tlm_session *session);
/* Runs `count` new tokens of each sequence (`ids` is batch x count) and
 * writes the logits of every new position (batch x count x vocab). */
tlm_status tlm_session_prefill(tlm_session *session, const int64_t *ids,
                               int64_t count, float *logits);
/* The same, writing only the last position's logits (batch x vocab): what
 * generation needs, for the prompt and for every token after it. */
tlm_status tlm_session_decode(tlm_session *session, const int64_t *ids,
                              int64_t count, float *logits);
/* Tokens run so far: the most of any sequence; reset forgets them all. */
int64_t tlm_session_position(const tlm_session *session);
void tlm_session_reset(tlm_session *session);
/* Each sequence has a position of its own: a step runs every sequence on
 * from its own. Sequence `b`'s position, and cutting it back to `length`
 * (at most its position): how prompts of different lengths share one
 * right-padded prefill, each cut back to its own length, and then decode
 * together (tlm-run generate --prompts-file). */
int64_t tlm_session_sequence_position(const tlm_session *session, int64_t b);
tlm_status tlm_session_truncate(tlm_session *session, int64_t b,
                                int64_t length);

/* Picks a token from one row of logits: the largest at temperature 0,
 * else from the softmax at `temperature`, cut to the `top_p` nucleus, with
 * a generator seeded by `seed` (as tlm-run generate). */
typedef struct tlm_sampler tlm_sampler;
tlm_status tlm_sampler_create(double temperature, double top_p, uint64_t seed,
                              tlm_sampler **sampler);
int64_t tlm_sampler_sample(tlm_sampler *sampler, const float *logits,
                           int64_t vocab);
void tlm_sampler_free(tlm_sampler *sampler);

#ifdef __cplusplus
}
#endif

#endif /* TLM_TLM_H */
