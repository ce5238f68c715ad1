/*===- FakeCuda.c - a stand-in libcuda.so.1 for tests without a GPU -------===
 *
 * Implements the driver entry points lib/runtime/cuda/CudaRuntime.cpp resolves,
 * with host memory for device memory and kernels that are not run, so that a
 * cuda artifact can be loaded and called on a machine without a GPU: the
 * test then checks what reached the driver (every kernel module handed over
 * as a fatbin and unloaded again, launches made, allocations freed), never
 * the numbers, which no kernel computed.
 *
 * Environment:
 *   TLM_FAKE_CUDA_LOG=path   at exit, append one line of counts to path;
 *   TLM_FAKE_CUDA_CC=NN      the compute capability reported (default 90);
 *   TLM_FAKE_CUDA_FAIL_LOAD  module loads fail with CUDA_ERROR_INVALID_PTX
 *                            and a line in the JIT error log;
 *   TLM_FAKE_CUDA_MEMORY=N   the device holds N bytes: an allocation past
 *                            them fails with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Stream capture records a stream's launches, copies and memsets into a
 * graph (they run, copies and memsets done, when the graph is launched), and
 * refuses a wait on the capturing stream or the context as the real driver
 * does (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated).
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kInvalidPtx = 218,
  kCaptureUnsupported = 900,
  kCaptureInvalidated = 901,
  kGraphUpdateFailure = 910
};
enum { kJitErrorLogBuffer = 5, kJitErrorLogBufferSize = 6 };

static long modulesLoaded, fatbins, modulesUnloaded, launches, allocs, frees;
/* A synchronous upload from pageable memory may still be in flight when
 * cuMemcpyHtoD returns; a launch before the legacy stream is synchronized
 * could read it half-landed (a race the real driver hides by timing). An
 * asynchronous upload is in flight on its stream until that stream is
 * synchronized: a launch on the same stream comes after it, a launch on
 * another one races it. */
enum { kMaxUploads = 16 };
static void *uploadStreams[kMaxUploads]; /* uploads in flight, by stream */
static int uploadsInFlight;
static long racyLaunches;
/* Asynchronous uploads from memory that cuMemAllocHost did not give:
 * the real driver stages them synchronously. */
static long pageableAsyncUploads;
static char *pinnedBlocks[64];
static size_t pinnedSizes[64];
/* Launches with more than 48 KiB of dynamic shared memory, and those whose
 * kernel had not been allowed it (the real driver refuses them). */
static long bigSharedLaunches, refusedSharedLaunches;
static int allowedShared = 48 * 1024;

/* Graphs: recorded, instantiated, updated in place, launched; waits refused
 * while recording; graphs and executable graphs not destroyed. */
static long graphsRecorded, graphsInstantiated, graphsUpdated, graphsLaunched;
static long refusedWhileRecording, graphsAlive;

static void report(void) {
  const char *path = getenv("TLM_FAKE_CUDA_LOG");
  if (!path)
    return;
  FILE *f = fopen(path, "a");
  if (!f)
    return;
  fprintf(f,
          "modules loaded %ld (fatbins %ld) unloaded %ld; launches %ld; "
          "allocations %ld freed %ld; launches racing an upload %ld; "
          "asynchronous uploads from pageable memory %ld\n",
          modulesLoaded, fatbins, modulesUnloaded, launches, allocs, frees,
          racyLaunches, pageableAsyncUploads);
  if (graphsRecorded || refusedWhileRecording)
    fprintf(f,
            "graphs recorded %ld instantiated %ld updated %ld launched %ld; "
            "waits refused while recording %ld; graphs left %ld\n",
            graphsRecorded, graphsInstantiated, graphsUpdated, graphsLaunched,
            refusedWhileRecording, graphsAlive);
  fclose(f);
}

/* What a graph holds, in the order it was queued. */
enum OpKind { kLaunch, kCopy, kMemset32, kMemset16 };
typedef struct {
  enum OpKind kind;
  void *dst;
  const void *src;
  size_t bytes; /* a copy's bytes, a memset's count */
  unsigned value;
  unsigned smem;
} Op;
typedef struct {
  Op *ops;
  size_t count, capacity;
} Graph;

static void *captureStream; /* the stream being recorded, or NULL */
static int captureInvalid;
static Graph *captured;

static int recording(void *stream) {
  return captured && stream == captureStream;
}
static void record(Op op) {
  if (captured->count == captured->capacity) {
    captured->capacity = captured->capacity ? 2 * captured->capacity : 64;
    captured->ops = realloc(captured->ops, captured->capacity * sizeof(Op));
  }
  captured->ops[captured->count++] = op;
}
/* A wait the real driver refuses while `stream` (or any, for NULL) is
 * recorded: the capture is invalidated too. */
static int refuseWhileRecording(void *stream) {
  if (!captured || (stream && stream != captureStream))
    return 0;
  ++refusedWhileRecording;
  captureInvalid = 1;
  return 1;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  atexit(report);
  return kSuccess;
}

CUresult cuGetErrorString(CUresult r, const char **text) {
  *text = r == kInvalidPtx    ? "a PTX JIT compilation failed (fake driver)"
          : r == kOutOfMemory ? "out of memory (fake driver)"
                              : "an error of the fake driver";
  return kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? kSuccess : kInvalidValue;
}

CUresult cuDeviceGetName(char *name, int size, int device) {
  (void)device;
  snprintf(name, (size_t)size, "tlm fake GPU");
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  const char *cc = getenv("TLM_FAKE_CUDA_CC");
  int capability = cc ? atoi(cc) : 90;
  /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (75) and _MINOR (76). */
  *value = attribute == 75   ? capability / 10
           : attribute == 76 ? capability % 10
                             : 0;
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  static int ctx;
  *context = &ctx;
  return kSuccess;
}

CUresult cuCtxSetCurrent(void *context) {
  (void)context;
  return kSuccess;
}

/* A fatbin starts with the magic 0xBA55ED50. */
static int isFatbin(const void *image) {
  uint32_t magic;
  memcpy(&magic, image, sizeof magic);
  return magic == 0xBA55ED50u;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                            int *options, void **values) {
  if (getenv("TLM_FAKE_CUDA_FAIL_LOAD")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == kJitErrorLogBuffer)
        for (unsigned j = 0; j < n; ++j)
          if (options[j] == kJitErrorLogBufferSize)
            snprintf((char *)values[i], (size_t)(uintptr_t)values[j],
                     "ptxas fatal: the fake driver refuses every module");
    return kInvalidPtx;
  }
  ++modulesLoaded;
  fatbins += isFatbin(image);
  *module = malloc(1);
  return kSuccess;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  return cuModuleLoadDataEx(module, image, 0, NULL, NULL);
}

CUresult cuModuleUnload(void *module) {
  ++modulesUnloaded;
  free(module);
  return kSuccess;
}

CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  (void)name;
  *fn = module;
  return kSuccess;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *stream, void **params, void **extra) {
  (void)fn, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz;
  (void)smem, (void)stream, (void)params, (void)extra;
  if (recording(stream)) {
    /* Refused when recorded, as when launched; counted when the graph
     * runs. */
    if (smem > 48 * 1024 && (int)smem > allowedShared)
      return kInvalidValue;
    Op op = {kLaunch, NULL, NULL, 0, 0, smem};
    record(op);
    return kSuccess;
  }
  ++launches;
  for (int i = 0; i < uploadsInFlight; ++i)
    if (uploadStreams[i] != stream) {
      ++racyLaunches;
      break;
    }
  if (smem > 48 * 1024) {
    ++bigSharedLaunches;
    if ((int)smem > allowedShared) {
      ++refusedSharedLaunches;
      return kInvalidValue;
    }
  }
  return kSuccess;
}

/* One kernel is enough for the tests: the attribute is kept for all. */
CUresult cuFuncSetAttribute(void *fn, int attribute, int value) {
  (void)fn;
  if (attribute == 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    allowedShared = value;
  return kSuccess;
}

/* For tests that drive the mgpu* functions directly: launches with more
 * than 48 KiB of shared memory, those refused, and all of them. */
long tlm_fake_cuda_big_shared_launches(void) { return bigSharedLaunches; }
long tlm_fake_cuda_launches(void) { return launches; }
long tlm_fake_cuda_refused_shared_launches(void) {
  return refusedSharedLaunches;
}

static int object;
/* Each stream its own address (the slots are reused only after 4096
 * streams), so that launches and copies can be told apart by stream. */
static char streams[4096];
static unsigned nextStream;
CUresult cuStreamCreate(void **stream, unsigned flags) {
  (void)flags;
  *stream = &streams[nextStream++ % sizeof(streams)];
  return kSuccess;
}
CUresult cuCtxSynchronize(void) {
  if (refuseWhileRecording(NULL))
    return kCaptureUnsupported;
  uploadsInFlight = 0;
  return kSuccess;
}
/* The uploads queued on `stream` (NULL: the legacy stream) have landed. */
CUresult cuStreamSynchronize(void *stream) {
  if (refuseWhileRecording(stream))
    return kCaptureUnsupported;
  int kept = 0;
  for (int i = 0; i < uploadsInFlight; ++i)
    if (uploadStreams[i] != stream)
      uploadStreams[kept++] = uploadStreams[i];
  uploadsInFlight = kept;
  return kSuccess;
}
static void uploadOn(void *stream) {
  if (uploadsInFlight < kMaxUploads)
    uploadStreams[uploadsInFlight++] = stream;
}
CUresult cuStreamDestroy_v2(void *stream) { return (void)stream, kSuccess; }
CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  return (void)stream, (void)event, (void)flags, kSuccess;
}
CUresult cuEventCreate(void **event, unsigned flags) {
  (void)flags;
  *event = &object;
  return kSuccess;
}
CUresult cuEventDestroy_v2(void *event) { return (void)event, kSuccess; }
CUresult cuEventRecord(void *event, void *stream) {
  return (void)event, (void)stream, kSuccess;
}
CUresult cuEventSynchronize(void *event) {
  (void)event;
  return refuseWhileRecording(NULL) ? kCaptureUnsupported : kSuccess;
}
/* Nothing runs: every timed launch takes 10 microseconds. */
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
  (void)start, (void)end;
  *ms = 0.01f;
  return kSuccess;
}

/* Device memory in use, and each block's size in front of it. */
static size_t deviceBytes;

/* Zeroed, so that what is copied back is finite. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  const char *limit = getenv("TLM_FAKE_CUDA_MEMORY");
  if (limit && deviceBytes + bytes > strtoull(limit, NULL, 10))
    return kOutOfMemory;
  char *memory = calloc(1, bytes + 16);
  if (!memory)
    return kOutOfMemory;
  ++allocs;
  deviceBytes += bytes;
  memcpy(memory, &bytes, sizeof(bytes));
  *p = (CUdeviceptr)(uintptr_t)(memory + 16);
  return kSuccess;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags) {
  (void)flags;
  return cuMemAlloc_v2(p, bytes);
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  char *memory = (char *)(uintptr_t)p - 16;
  size_t bytes;
  memcpy(&bytes, memory, sizeof(bytes));
  deviceBytes -= bytes;
  ++frees;
  free(memory);
  return kSuccess;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       void *stream) {
  if (recording(stream)) {
    Op op = {
        kCopy, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes, 0,
        0};
    record(op);
    return kSuccess;
  }
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  memcpy((void *)(uintptr_t)dst, src, bytes);
  uploadOn(NULL);
  return kSuccess;
}
static int pinned(const void *p, size_t bytes) {
  for (int i = 0; i < 64; ++i)
    if (pinnedBlocks[i] && (const char *)p >= pinnedBlocks[i] &&
        (const char *)p + bytes <= pinnedBlocks[i] + pinnedSizes[i])
      return 1;
  return 0;
}
CUresult cuMemAllocHost_v2(void **p, size_t bytes) {
  for (int i = 0; i < 64; ++i)
    if (!pinnedBlocks[i]) {
      if (!(pinnedBlocks[i] = malloc(bytes)))
        return kOutOfMemory;
      pinnedSizes[i] = bytes;
      *p = pinnedBlocks[i];
      return kSuccess;
    }
  return kOutOfMemory;
}
CUresult cuMemFreeHost(void *p) {
  for (int i = 0; i < 64; ++i)
    if (pinnedBlocks[i] == p) {
      free(p);
      pinnedBlocks[i] = NULL;
      return kSuccess;
    }
  return kInvalidValue;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              void *stream) {
  if (recording(stream)) {
    Op op = {kCopy, (void *)(uintptr_t)dst, src, bytes, 0, 0};
    record(op);
    return kSuccess;
  }
  memcpy((void *)(uintptr_t)dst, src, bytes);
  pageableAsyncUploads += !pinned(src, bytes);
  uploadOn(stream);
  return kSuccess;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                              void *stream) {
  if (recording(stream)) {
    Op op = {kCopy, dst, (const void *)(uintptr_t)src, bytes, 0, 0};
    record(op);
    return kSuccess;
  }
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return kSuccess;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return kSuccess;
}
static void memset32(void *dst, unsigned value, size_t count) {
  uint32_t *p = (uint32_t *)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
}
static void memset16(void *dst, unsigned value, size_t count) {
  uint16_t *p = (uint16_t *)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = (uint16_t)value;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count,
                          void *stream) {
  if (recording(stream)) {
    Op op = {kMemset32, (void *)(uintptr_t)dst, NULL, count, value, 0};
    record(op);
    return kSuccess;
  }
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return kSuccess;
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          void *stream) {
  if (recording(stream)) {
    Op op = {kMemset16, (void *)(uintptr_t)dst, NULL, count, value, 0};
    record(op);
    return kSuccess;
  }
  uint16_t *p = (uint16_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return kSuccess;
}
CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  return (void)p, (void)bytes, (void)flags, kSuccess;
}
CUresult cuMemHostUnregister(void *p) { return (void)p, kSuccess; }

/* Stream capture and graphs. */
CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  /* Only relaxed capture lets the host code allocate a new block. */
  if (captured || mode != 2)
    return kInvalidValue;
  captured = calloc(1, sizeof(Graph));
  captureStream = stream;
  captureInvalid = 0;
  return kSuccess;
}
static void destroyGraph(Graph *g) {
  free(g->ops);
  free(g);
  --graphsAlive;
}
CUresult cuStreamEndCapture(void *stream, void **graph) {
  if (!captured || stream != captureStream)
    return kInvalidValue;
  Graph *g = captured;
  captured = NULL;
  captureStream = NULL;
  ++graphsAlive;
  if (captureInvalid) {
    destroyGraph(g);
    *graph = NULL;
    return kCaptureInvalidated;
  }
  ++graphsRecorded;
  *graph = g;
  return kSuccess;
}
CUresult cuGraphDestroy(void *graph) {
  destroyGraph(graph);
  return kSuccess;
}
static Graph *copyGraph(const Graph *g) {
  Graph *c = calloc(1, sizeof(Graph));
  c->count = c->capacity = g->count;
  c->ops = malloc(g->count * sizeof(Op) + 1);
  memcpy(c->ops, g->ops, g->count * sizeof(Op));
  ++graphsAlive;
  return c;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                     unsigned long long flags) {
  (void)flags;
  *exec = copyGraph(graph);
  ++graphsInstantiated;
  return kSuccess;
}
CUresult cuGraphExecDestroy(void *exec) {
  destroyGraph(exec);
  return kSuccess;
}
/* The same operations in the same order: the new parameters are taken. */
CUresult cuGraphExecUpdate_v2(void *exec, void *graph, void *info) {
  Graph *e = exec, *g = graph;
  int same = e->count == g->count;
  for (size_t i = 0; same && i < g->count; ++i)
    same = e->ops[i].kind == g->ops[i].kind;
  /* CUgraphExecUpdateResultInfo: result first (1: CU_GRAPH_EXEC_UPDATE_ERROR).
   */
  *(int *)info = same ? 0 : 1;
  if (!same)
    return kGraphUpdateFailure;
  memcpy(e->ops, g->ops, g->count * sizeof(Op));
  ++graphsUpdated;
  return kSuccess;
}
CUresult cuGraphLaunch(void *exec, void *stream) {
  const Graph *e = exec;
  for (size_t i = 0; i < e->count; ++i) {
    const Op *op = &e->ops[i];
    switch (op->kind) {
    case kLaunch:
      cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, op->smem, stream, NULL, NULL);
      break;
    case kCopy:
      memmove(op->dst, op->src, op->bytes);
      break;
    case kMemset32:
      memset32(op->dst, op->value, op->bytes);
      break;
    case kMemset16:
      memset16(op->dst, op->value, op->bytes);
      break;
    }
  }
  ++graphsLaunched;
  return kSuccess;
}
