/* kc — the plugin C ABI (stable, versioned).
 *
 * A shared library exposes impls to kc by exporting one function:
 *
 *     const kc_plugin* kc_plugin_init(uint32_t host_abi_version);
 *
 * It returns a static table describing its impls, or NULL if it cannot work
 * with the host's ABI version. kc loads it with `--plugin path/to/lib.so`.
 *
 * Rules (ABI version 1):
 *  - The table and every string it points to stay valid until the library is
 *    unloaded. kc never frees them.
 *  - kc owns every tensor buffer. A kernel writes only into tensors whose role is
 *    KC_ROLE_OUT or KC_ROLE_INOUT, only inside their storage, and does not keep
 *    pointers after `run` returns.
 *  - Tensors are host memory, strides in elements, row-major logical order.
 *    FP16/BF16 are uint16 bit patterns, FP8 uint8 bit patterns, TF32 is float.
 *  - `run` returns KC_OK, KC_RAISED (the kernel detected an error it is declared
 *    to raise, e.g. an out-of-range index; put a message in `message`) or
 *    KC_UNSUPPORTED (this call is outside the impl's shape class or dtypes).
 *  - `declares` uses the contract language's declaration syntax:
 *    "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE,
 *     denormal = IEEE, oob = RAISE". Unknown keys are kept as extras.
 *  - The library is loaded, and kc_plugin_init called, in more than one
 *    process: first in a short-lived probe child that reads the table, then in
 *    each worker process that runs one of its impls (kc's own process loads it
 *    only under --isolate none). Each call returns the same table (same impl
 *    names, in the same order). A library that aborts, crashes, exits or hangs
 *    while loading is reported unavailable; kc goes on without it.
 *  - New fields are only ever appended, guarded by a new ABI version. kc loads
 *    plugins built against ABI 1 or 2.
 *
 * ABI 2 appends `report_path` and `host` to kc_call. A kernel may call
 * `call->report_path(call->host, path, reason)` during `run` to say which of its
 * implementation paths served the call (the ISA-specific kernel it dispatched
 * to, or a fallback and why); kc judges it against the impl's declared `path`
 * and `fallback` (docs/capability.md). Both strings are copied before the call
 * returns. Use the fields only when kc_plugin_init was given a host ABI version
 * of 2 or more: an older host's kc_call ends before them.
 */
#ifndef KC_PLUGIN_H_
#define KC_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KC_PLUGIN_ABI_VERSION 2u
#define KC_PLUGIN_ABI_OLDEST 1u /* the oldest ABI this host still loads */

typedef enum kc_dtype {
  KC_DTYPE_F64 = 0,
  KC_DTYPE_F32 = 1,
  KC_DTYPE_TF32 = 2,
  KC_DTYPE_BF16 = 3,
  KC_DTYPE_F16 = 4,
  KC_DTYPE_FP8E4M3 = 5,
  KC_DTYPE_FP8E5M2 = 6,
  KC_DTYPE_I32 = 7,
  KC_DTYPE_I64 = 8
} kc_dtype;

typedef enum kc_role { KC_ROLE_IN = 0, KC_ROLE_OUT = 1, KC_ROLE_INOUT = 2 } kc_role;

typedef enum kc_status { KC_OK = 0, KC_RAISED = 1, KC_UNSUPPORTED = 2 } kc_status;

typedef struct kc_tensor {
  const char* name;       /* signature name: "A", "B", "C", "x", ... */
  int32_t dtype;          /* kc_dtype */
  int32_t role;           /* kc_role */
  int32_t rank;
  const int64_t* shape;   /* rank entries */
  const int64_t* strides; /* rank entries, in elements */
  void* data;
  int64_t storage_elems;  /* elements the buffer holds (>= reachable offsets) */
} kc_tensor;

typedef struct kc_attr {
  const char* key;   /* config parameter: "M", "trans_a", "alpha", ... */
  const char* value; /* its value as text */
} kc_attr;

typedef struct kc_call {
  const char* op; /* "matmul", "dot", ... */
  int32_t num_tensors;
  kc_tensor* tensors;
  int32_t num_attrs;
  const kc_attr* attrs;
  /* ABI 2: tells kc which implementation path served this call (see above). */
  void (*report_path)(void* host, const char* path, const char* reason);
  void* host;
} kc_call;

typedef int32_t (*kc_run_fn)(const kc_call* call, char* message, size_t message_size,
                             void* user_data);

typedef struct kc_impl_desc {
  const char* name;        /* unique impl name, e.g. "myplugin.matmul_tiled" */
  const char* op;          /* op it implements */
  const char* dtypes;      /* comma-separated precision names: "FP32" */
  const char* declares;    /* declaration list, see above */
  const char* description; /* one line */
  kc_run_fn run;
  void* user_data;
} kc_impl_desc;

typedef struct kc_plugin {
  uint32_t abi_version; /* KC_PLUGIN_ABI_VERSION the plugin was built against */
  const char* name;     /* plugin name, shown in `kc backends` */
  const char* version;
  int32_t num_impls;
  const kc_impl_desc* impls;
} kc_plugin;

typedef const kc_plugin* (*kc_plugin_init_fn)(uint32_t host_abi_version);

#define KC_PLUGIN_INIT_SYMBOL "kc_plugin_init"

#ifdef __cplusplus
}
#endif

#endif /* KC_PLUGIN_H_ */
