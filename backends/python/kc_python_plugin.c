/* kc — Python impls as a kc plugin (libkc_python.so).
 *
 * A plugin (include/kc/kc_plugin.h) whose impls are Python callables. kc never
 * runs Python in its own process: like every plugin this library is loaded in
 * kc's probe child (which only reads the impl table) and in each worker, where
 * the first call starts an embedded interpreter, imports the callable's module
 * and calls it through kc/_worker.py on NumPy arrays (or torch tensors) that are
 * views of the worker's guarded buffers. So a crash, a hang, a write past a
 * buffer or a stale output is the worker's and becomes a verdict; the Python
 * interpreter that asked kc for the check is a different process.
 *
 * The impl table comes from a manifest that the kc Python package writes:
 * $KC_PYTHON_MANIFEST if set, else this library's own path with ".so" replaced
 * by ".manifest" (the package places a copy of the library beside each
 * manifest, so a repro line's `--plugin PATH` finds its impls again).
 * The manifest is text, one record per line, fields separated by tabs:
 *
 *     kc-python-manifest 1
 *     path  DIR                                   (sys.path entries, in order)
 *     impl  NAME OP DTYPES DECLARES DESCRIPTION MODULE FILE QUALNAME KIND
 *
 * KIND is "numpy" (arrays) or "torch" (CPU tensors sharing the buffers); a
 * QUALNAME starting with "torch.ops." names a torch.library custom op.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kc/kc_plugin.h"

#define KC_PY_EXPORT __attribute__((visibility("default")))

enum { kFields = 10 };

/* The embedded Python's version, for the package to read from the file
   (python/kc/__init__.py refuses a caller of another major.minor). */
__attribute__((used)) static const char kEmbedsTag[] = "kc-python-embeds " PY_VERSION "\n";

typedef struct PyImpl {
  char* fields[kFields]; /* NAME OP DTYPES DECLARES DESCRIPTION MODULE FILE QUALNAME KIND */
} PyImpl;

static PyImpl* g_impls = NULL;
static int32_t g_num_impls = 0;
static char** g_paths = NULL;
static int32_t g_num_paths = 0;
static kc_impl_desc* g_descs = NULL;
static kc_plugin g_plugin;
static char g_load_error[4096 + 256];

static char* dup_range(const char* b, const char* e) {
  char* s = (char*)malloc((size_t)(e - b) + 1);
  if (!s) return NULL;
  memcpy(s, b, (size_t)(e - b));
  s[e - b] = '\0';
  return s;
}

/* Splits `line` (no newline) at tabs into at most `max` fields; returns the count. */
static int split_tabs(char* line, char** out, int max) {
  int n = 0;
  char* p = line;
  while (n < max) {
    out[n++] = p;
    char* t = strchr(p, '\t');
    if (!t) break;
    *t = '\0';
    p = t + 1;
  }
  return n;
}

static int manifest_path(char* buf, size_t size) {
  const char* env = getenv("KC_PYTHON_MANIFEST");
  if (env && *env) return snprintf(buf, size, "%s", env) < (int)size;
  Dl_info info;
  if (!dladdr((void*)&manifest_path, &info) || !info.dli_fname) return 0;
  const size_t len = strlen(info.dli_fname);
  if (len < 3 || strcmp(info.dli_fname + len - 3, ".so") != 0) return 0;
  return snprintf(buf, size, "%.*s.manifest", (int)(len - 3), info.dli_fname) < (int)size;
}

static int read_manifest(void) {
  char path[4096];
  if (!manifest_path(path, sizeof path)) {
    snprintf(g_load_error, sizeof g_load_error, "no manifest: set KC_PYTHON_MANIFEST");
    return 0;
  }
  FILE* f = fopen(path, "r");
  if (!f) {
    snprintf(g_load_error, sizeof g_load_error, "cannot read manifest %s", path);
    return 0;
  }
  char* line = NULL;
  size_t cap = 0;
  ssize_t got;
  int lineno = 0, ok = 1;
  while ((got = getline(&line, &cap, f)) >= 0) {
    ++lineno;
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
    if (lineno == 1) {
      if (strcmp(line, "kc-python-manifest 1") != 0) {
        snprintf(g_load_error, sizeof g_load_error, "%s:1: not a kc-python-manifest 1", path);
        ok = 0;
        break;
      }
      continue;
    }
    if (got == 0) continue;
    char* fields[kFields + 1];
    const int n = split_tabs(line, fields, kFields + 1);
    if (n == 2 && strcmp(fields[0], "path") == 0) {
      char** p = (char**)realloc(g_paths, sizeof(char*) * (size_t)(g_num_paths + 1));
      if (!p) { ok = 0; break; }
      g_paths = p;
      g_paths[g_num_paths++] = dup_range(fields[1], fields[1] + strlen(fields[1]));
    } else if (n == kFields && strcmp(fields[0], "impl") == 0) {
      PyImpl* q = (PyImpl*)realloc(g_impls, sizeof(PyImpl) * (size_t)(g_num_impls + 1));
      if (!q) { ok = 0; break; }
      g_impls = q;
      PyImpl* im = &g_impls[g_num_impls++];
      for (int i = 1; i < kFields; ++i) im->fields[i - 1] = dup_range(fields[i], fields[i] + strlen(fields[i]));
      im->fields[kFields - 1] = NULL;
    } else {
      snprintf(g_load_error, sizeof g_load_error, "%s:%d: malformed record", path, lineno);
      ok = 0;
      break;
    }
  }
  free(line);
  fclose(f);
  return ok;
}

/* ---- the interpreter (workers only: started by the first call) ---- */

static PyObject* g_worker_mod = NULL; /* kc._worker */
static char g_init_error[1024];

static void fetch_error(char* out, size_t size, const char* what) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* s = value ? PyObject_Str(value) : NULL;
  const char* text = s ? PyUnicode_AsUTF8(s) : NULL;
  const char* tname = type ? ((PyTypeObject*)type)->tp_name : "error";
  snprintf(out, size, "%s: %s: %s", what, tname, text ? text : "?");
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
}

static pthread_mutex_t g_start_lock = PTHREAD_MUTEX_INITIALIZER;

static int start_interpreter_locked(void);

/* kc may make a worker's first calls from several threads at once (a
   concurrency sweep): one of them starts the interpreter. Same returns as
   start_interpreter_locked. */
static int start_interpreter(void) {
  pthread_mutex_lock(&g_start_lock);
  const int ok = start_interpreter_locked();
  pthread_mutex_unlock(&g_start_lock);
  return ok;
}

static int g_started = 0; /* this plugin started the interpreter */

/* 1: ready; 0: it failed (g_init_error says why); -1: the process already ran
   Python before this plugin was called. */
static int start_interpreter_locked(void) {
  if (g_worker_mod) return 1;
  if (g_init_error[0]) return 0;
  if (!g_started && Py_IsInitialized()) return -1;
  g_started = 1;
  {
    /* Extension modules (NumPy's, torch's) do not link libpython: they expect
       its symbols in the global scope, where a python3 executable has them.
       kc loaded this plugin RTLD_LOCAL, so promote libpython to global. */
    Dl_info info;
    if (dladdr((void*)&Py_InitializeFromConfig, &info) && info.dli_fname &&
        !dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) {
      snprintf(g_init_error, sizeof g_init_error, "cannot make %s global: %s", info.dli_fname, dlerror());
      return 0;
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
#ifdef KC_PYTHON_EXECUTABLE
    /* The interpreter this plugin was built for (not the first python3 on
       PATH): its prefix, and so its site-packages, follow from it. */
    PyConfig_SetBytesString(&config, &config.program_name, KC_PYTHON_EXECUTABLE);
#endif
    config.install_signal_handlers = 0; /* kc owns the worker's signals */
    config.write_bytecode = 0;          /* the worker's file system is read-only */
    config.parse_argv = 0;
    config.buffered_stdio = 0;
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
      snprintf(g_init_error, sizeof g_init_error, "Python did not start: %s",
               st.err_msg ? st.err_msg : "unknown reason");
      return 0;
    }
  }
  PyObject* sys_path = PySys_GetObject("path"); /* borrowed */
  for (int32_t i = g_num_paths - 1; sys_path && i >= 0; --i) {
    PyObject* p = PyUnicode_FromString(g_paths[i]);
    if (p) PyList_Insert(sys_path, 0, p);
    Py_XDECREF(p);
  }
  g_worker_mod = PyImport_ImportModule("kc._worker");
  if (!g_worker_mod) fetch_error(g_init_error, sizeof g_init_error, "import kc._worker");
  /* Calls come from whichever thread kc runs the kernel on: release the GIL
     here and take it per call. */
  PyEval_SaveThread();
  return g_worker_mod != NULL;
}

static Py_ssize_t elem_size(int32_t dtype) {
  switch (dtype) {
    case KC_DTYPE_F64:
    case KC_DTYPE_I64:
      return 8;
    case KC_DTYPE_F32:
    case KC_DTYPE_TF32:
    case KC_DTYPE_I32:
      return 4;
    case KC_DTYPE_BF16:
    case KC_DTYPE_F16:
      return 2;
    default:
      return 1;
  }
}

static PyObject* int64_tuple(const int64_t* v, int32_t n) {
  PyObject* t = PyTuple_New(n);
  for (int32_t i = 0; t && i < n; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(v[i]));
  return t;
}

static PyObject* describe_call(const kc_call* call) {
  PyObject* tensors = PyList_New(call->num_tensors);
  for (int32_t i = 0; tensors && i < call->num_tensors; ++i) {
    const kc_tensor* t = &call->tensors[i];
    PyObject* mv = PyMemoryView_FromMemory((char*)t->data, t->storage_elems * elem_size(t->dtype), PyBUF_WRITE);
    PyObject* item = Py_BuildValue("(siiNNN)", t->name, (int)t->dtype, (int)t->role, int64_tuple(t->shape, t->rank),
                                   int64_tuple(t->strides, t->rank), mv);
    PyList_SET_ITEM(tensors, i, item);
  }
  PyObject* attrs = PyDict_New();
  for (int32_t i = 0; attrs && i < call->num_attrs; ++i) {
    PyObject* v = PyUnicode_FromString(call->attrs[i].value);
    PyDict_SetItemString(attrs, call->attrs[i].key, v);
    Py_XDECREF(v);
  }
  return Py_BuildValue("(sNN)", call->op, tensors, attrs);
}

static int32_t run_impl(const kc_call* call, char* message, size_t message_size, void* user_data) {
  const PyImpl* im = &g_impls[(intptr_t)user_data];
  const int started = start_interpreter();
  if (started < 0) {
    /* Only a process that is not Python itself hosts the callables (never end
       a Python host: this is --isolate none under an interpreter). */
    snprintf(message, message_size, "a Python interpreter already runs in this process; kc runs Python impls in "
             "its own worker processes");
    return KC_UNSUPPORTED;
  }
  if (!started) {
    /* Not a refusal by the kernel: the impl cannot run at all. Ending the
       worker makes the case an error verdict (CRASH(exit 70)) whose evidence
       carries this line. */
    fprintf(stderr, "kc_python: %s\n", g_init_error);
    fflush(stderr);
    _exit(70);
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int32_t status = KC_RAISED;
  PyObject* args = describe_call(call);
  PyObject* res = args ? PyObject_CallMethod(g_worker_mod, "run", "(sssssN)", im->fields[0], im->fields[5],
                                             im->fields[6], im->fields[7], im->fields[8], args)
                       : NULL;
  /* kc._worker.run returns (status, message): it turns the callable's
     exceptions into KC_RAISED / KC_UNSUPPORTED itself. */
  if (res && PyTuple_Check(res) && PyTuple_Size(res) == 2) {
    status = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
    const char* text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(res, 1));
    if (text && *text) snprintf(message, message_size, "%s", text);
  } else {
    fetch_error(message, message_size, "kc._worker.run");
  }
  Py_XDECREF(res);
  PyGILState_Release(gil);
  return status;
}

KC_PY_EXPORT const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  if (host_abi_version < 1) return NULL;
  if (g_descs) return &g_plugin;
  if (!read_manifest()) {
    fprintf(stderr, "kc_python: %s\n", g_load_error);
    return NULL;
  }
  g_descs = (kc_impl_desc*)calloc((size_t)(g_num_impls > 0 ? g_num_impls : 1), sizeof(kc_impl_desc));
  if (!g_descs) return NULL;
  for (int32_t i = 0; i < g_num_impls; ++i) {
    g_descs[i].name = g_impls[i].fields[0];
    g_descs[i].op = g_impls[i].fields[1];
    g_descs[i].dtypes = g_impls[i].fields[2];
    g_descs[i].declares = g_impls[i].fields[3];
    g_descs[i].description = g_impls[i].fields[4];
    g_descs[i].run = run_impl;
    g_descs[i].user_data = (void*)(intptr_t)i;
  }
  g_plugin.abi_version = KC_PLUGIN_ABI_VERSION;
  g_plugin.name = "kc_python";
  g_plugin.version = PY_VERSION;
  g_plugin.num_impls = g_num_impls;
  g_plugin.impls = g_descs;
  return &g_plugin;
}
