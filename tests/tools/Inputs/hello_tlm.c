/* A program that uses tlm as an installed library: <tlm/tlm.h> and -ltlm,
 * nothing else of tlm's (tests/tools/install.test). It loads an artifact,
 * binds seeded weights, runs one token and prints the likeliest next one. */
#include <tlm/tlm.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2 || tlm_version() != TLM_API_VERSION) {
    fprintf(stderr, "usage: hello_tlm MODEL.so (header %d, library %d)\n",
            TLM_API_VERSION, tlm_version());
    return 2;
  }
  tlm_model *model = NULL;
  tlm_weights *weights = NULL;
  tlm_session *session = NULL;
  if (tlm_model_load(argv[1], &model) != TLM_OK ||
      tlm_weights_from_seed(model, 1, &weights) != TLM_OK ||
      tlm_session_create(model, weights, 1, &session) != TLM_OK) {
    fprintf(stderr, "error: %s\n", tlm_last_error());
    return 1;
  }
  int64_t vocab = tlm_model_vocab_size(model), id = 1, best = 0;
  float *logits = malloc(sizeof(float) * (size_t)vocab);
  if (!logits || tlm_session_decode(session, &id, 1, logits) != TLM_OK) {
    fprintf(stderr, "error: %s\n", tlm_last_error());
    return 1;
  }
  for (int64_t i = 1; i < vocab; ++i)
    if (logits[i] > logits[best])
      best = i;
  printf("vocab %lld, next after 1: %lld\n", (long long)vocab,
         (long long)best);
  free(logits);
  tlm_session_free(session);
  tlm_weights_free(weights);
  tlm_model_free(model);
  return 0;
}
