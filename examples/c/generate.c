/*===- generate.c - greedy generation through tlm's C API -----------------===*\
|*                                                                            *|
|*   tlm-c-generate MODEL.so [--weights W.safetensors | --seed S]             *|
|*                  [--max-new-tokens N] ID...                                *|
|*                                                                            *|
|* Loads an artifact written by `tlm-run compile`, binds weights, runs the    *|
|* prompt ids and prints N more ids, greedily, one line. A failure prints     *|
|* one `error:` line and exits 1.                                             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "include/tlm/tlm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "error: %s: %s\n", what, tlm_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s MODEL.so [--weights W | --seed S] "
            "[--max-new-tokens N] ID...\n",
            argv[0]);
    return 1;
  }
  if (tlm_version() != TLM_API_VERSION) {
    fprintf(stderr, "error: built for tlm API %d, running with %d\n",
            TLM_API_VERSION, tlm_version());
    return 1;
  }
  const char *weightsPath = NULL;
  uint64_t seed = 0;
  long maxNew = 16;
  int64_t *ids = calloc((size_t)argc, sizeof(int64_t));
  int64_t count = 0;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--weights") && i + 1 < argc)
      weightsPath = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--max-new-tokens") && i + 1 < argc)
      maxNew = strtol(argv[++i], NULL, 10);
    else
      ids[count++] = strtoll(argv[i], NULL, 10);
  }
  if (count == 0) {
    fprintf(stderr, "error: no prompt ids\n");
    return 1;
  }

  tlm_model *model = NULL;
  tlm_weights *weights = NULL;
  tlm_session *session = NULL;
  tlm_sampler *sampler = NULL;
  int rc = 0;
  if (tlm_model_load(argv[1], &model) != TLM_OK) {
    rc = fail("loading the model");
    goto done;
  }
  if ((weightsPath ? tlm_weights_from_file(model, weightsPath, &weights)
                   : tlm_weights_from_seed(model, seed, &weights)) != TLM_OK) {
    rc = fail("binding the weights");
    goto done;
  }
  if (tlm_session_create(model, weights, 1, &session) != TLM_OK) {
    rc = fail("creating the session");
    goto done;
  }
  if (tlm_sampler_create(0.0, 1.0, seed, &sampler) != TLM_OK) {
    rc = fail("creating the sampler");
    goto done;
  }
  int64_t vocab = tlm_model_vocab_size(model);
  float *logits = malloc((size_t)vocab * sizeof(float));
  if (tlm_session_decode(session, ids, count, logits) != TLM_OK) {
    rc = fail("running the prompt");
    free(logits);
    goto done;
  }
  for (long n = 0; n < maxNew; ++n) {
    int64_t next = tlm_sampler_sample(sampler, logits, vocab);
    printf(n ? " %lld" : "%lld", (long long)next);
    if (n + 1 == maxNew)
      break;
    if (tlm_session_decode(session, &next, 1, logits) != TLM_OK) {
      printf("\n");
      rc = fail("decoding");
      break;
    }
  }
  if (rc == 0)
    printf("\n");
  free(logits);

done:
  tlm_sampler_free(sampler);
  tlm_session_free(session);
  tlm_weights_free(weights);
  tlm_model_free(model);
  free(ids);
  return rc;
}
