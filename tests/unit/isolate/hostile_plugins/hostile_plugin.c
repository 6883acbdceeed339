/* A plugin that attacks kc while it is being loaded, built five ways
 * (tests/CMakeLists.txt): it aborts, or loops forever, in its constructor
 * (KC_HOSTILE_ABORT_IN_CTOR, KC_HOSTILE_LOOP_IN_CTOR) or in kc_plugin_init
 * (KC_HOSTILE_ABORT_IN_INIT, KC_HOSTILE_LOOP_IN_INIT), or its constructor
 * tries to reach out of its process (KC_HOSTILE_ESCAPE_IN_CTOR). Before
 * looping it tries to fork a process of its own, so the tests can see that
 * nothing it started is left running. Its one impl (a correct FP32 dot) is
 * reached only in the escape build, where it reports what the constructor saw. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kc/kc_plugin.h"

/* Names the tests look for in /proc: the looping loader and what it forked,
 * tagged with KC_HOSTILE_TAG (the test's pid), so tests running at once do not
 * see each other's. */
static void spin(void) {
  const char* tag = getenv("KC_HOSTILE_TAG");
  char name[16];
  snprintf(name, sizeof name, "kch_ld_%s", tag ? tag : "");
  prctl(PR_SET_NAME, name, 0, 0, 0);
  if (fork() == 0) {
    snprintf(name, sizeof name, "kch_kid_%s", tag ? tag : "");
    prctl(PR_SET_NAME, name, 0, 0, 0);
    for (;;) pause();
  }
  volatile unsigned long n = 0;
  for (;;) ++n;
}

/* KC_HOSTILE_ESCAPE_IN_CTOR: the constructor tries to reach out of its
 * process (signal its parent and kc, whose pid is in KC_HOSTILE_KC_PID; create
 * the file KC_HOSTILE_WRITE; open a socket) and records what each attempt
 * returned, with its uid, for kc_hostile_observed and for run_dot's message. */
static char observed[512];

static void escape(void) {
  const char* kc_pid = getenv("KC_HOSTILE_KC_PID");
  const char* target = getenv("KC_HOSTILE_WRITE");
  errno = 0;
  const int kill_parent = kill(getppid(), SIGKILL);
  const int kill_parent_errno = errno;
  errno = 0;
  const int kill_kc = kc_pid ? kill((pid_t)atol(kc_pid), SIGSTOP) : -2;
  const int kill_kc_errno = errno;
  errno = 0;
  const int fd = target ? open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -2;
  const int open_errno = errno;
  if (fd >= 0) {
    (void)!write(fd, "escaped\n", 8);
    close(fd);
  }
  errno = 0;
  const int sock = socket(AF_INET, SOCK_STREAM, 0);
  const int sock_errno = errno;
  if (sock >= 0) close(sock);
  snprintf(observed, sizeof observed,
           "ran uid=%d kill_parent=%d/%d kill_kc=%d/%d open=%d/%d socket=%d/%d", (int)getuid(), kill_parent,
           kill_parent_errno, kill_kc, kill_kc_errno, fd >= 0 ? 0 : fd, open_errno, sock >= 0 ? 0 : sock,
           sock_errno);
}

const char* kc_hostile_observed(void) { return observed; }

__attribute__((constructor)) static void hostile_constructor(void) {
#if defined(KC_HOSTILE_ESCAPE_IN_CTOR)
  escape();
#endif
#if defined(KC_HOSTILE_ABORT_IN_CTOR)
  abort();
#elif defined(KC_HOSTILE_LOOP_IN_CTOR)
  spin();
#endif
}

static int32_t run_dot(const kc_call* call, char* message, size_t message_size, void* user_data) {
  (void)message;
  (void)message_size;
  (void)user_data;
#if defined(KC_HOSTILE_ESCAPE_IN_CTOR)
  snprintf(message, message_size, "%s", observed);
  return KC_RAISED;
#endif
  if (call->num_tensors != 3) return KC_UNSUPPORTED;
  const kc_tensor* x = &call->tensors[0];
  const kc_tensor* y = &call->tensors[1];
  float* out = (float*)call->tensors[2].data;
  float sum = 0;
  for (int64_t i = 0; i < x->shape[0]; ++i)
    sum += ((const float*)x->data)[i * x->strides[0]] * ((const float*)y->data)[i * y->strides[0]];
  *out = sum;
  return KC_OK;
}

static const kc_impl_desc kImpls[] = {
    {"hostile.dot", "dot", "FP32", "accumulator = FP32", "a dot behind a hostile loader", run_dot, 0},
};
static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "hostile", "1", 1, kImpls};

const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
#if defined(KC_HOSTILE_ABORT_IN_INIT)
  abort();
#elif defined(KC_HOSTILE_LOOP_IN_INIT)
  spin();
#endif
  return host_abi_version >= KC_PLUGIN_ABI_VERSION ? &kPlugin : 0;
}
