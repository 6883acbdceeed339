// kc — the worker process (see kc/isolate.h).
//
// Parent side: Worker::run copies a call into the transfer region, sends one
// byte over a socketpair and waits for one byte back, with a wall-clock
// deadline and a resident-memory watch; a dead or killed worker is decoded
// into a named failure from its wait status and the shared block it wrote.
// Worker side (child_main / kernel_process / serve): the sandbox
// (isolate/sandbox.h), guarded buffers, fault handlers, limits, and one kernel
// thread that serves calls until the socket closes.
#include "kc/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "isolate/fork_cost.h"
#include "isolate/guard.h"
#include "isolate/sandbox.h"
#include "kc/canary.h"
#include "kc/capability.h"
#include "kc/child.h"
#include "kc/interrupt.h"
#include "kc/memcheck.h"
#include "kc/message.h"
#include "kc/signature.h"

#if defined(__SANITIZE_ADDRESS__)
#define KC_ISOLATE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KC_ISOLATE_ASAN 1
#endif
#endif

namespace kc::isolate {

namespace {

constexpr std::array<EnumEntry<Mode>, 3> kModes{{
    {Mode::kProcess, "process",
     "each impl runs in a worker process: a crash, hang or memory blow-up becomes an error verdict"},
    {Mode::kNone, "none", "impls run inside kc's process (for debugging; a crash ends kc)"},
    {Mode::kValgrind, "valgrind",
     "as process, then (kc check) each case again in a kc process under valgrind memcheck: an invalid access or "
     "uninitialised read during a kernel call, in the library's own buffers too, is an error verdict (MEMCHECK)"},
}};

// --- The shared block: what the worker tells the parent about the current call.

enum class Fault : std::int32_t {
  kNone = 0,
  kGuardPage,   ///< a fault on a guard page (fault_tensor, fault_side, fault_access)
  kCanary,      ///< canary bytes changed (fault_tensor, fault_side)
  kBadAlloc,    ///< std::bad_alloc escaped the kernel
  kException,   ///< another exception escaped the kernel (message)
  kSignal,      ///< SIGSEGV/SIGBUS elsewhere (signo, fault_addr, saved_errno)
  kSetup,       ///< the worker could not set itself up (message)
  kLateWrite,   ///< a tensor was written after the call returned (fault_tensor)
};

struct SharedBlock {
  std::int32_t status_code;
  Fault fault;
  std::int32_t fault_tensor;
  std::int32_t fault_side;    ///< 0 before, 1 after
  std::int32_t fault_access;  ///< 0 read, 1 write, -1 unknown
  std::int32_t signo;
  std::int32_t saved_errno;
  std::int32_t reserved;
  std::uint64_t fault_addr;
  std::uint64_t fault_distance;  ///< bytes between the fault and the data
  double seconds;
  std::int32_t killed_by;  ///< the signal PID 1 of the worker's namespace was to die by
  char message[4096];
  char path[512];          ///< the implementation path the kernel reported (kc/capability.h)
  char path_reason[1024];  ///< and why its library chose it
  // Set once by the worker, before its first call (the parent clears only what is above).
  std::uint32_t sandbox_bits;
  char sandbox_why[1024];
};
constexpr std::size_t kPerCallBytes = offsetof(SharedBlock, sandbox_bits);

constexpr int kExitFault = 70;   ///< the worker recorded a fault in the block and exited
constexpr int kExitSignal = 71;  ///< PID 1 of the namespace recorded killed_by and exited

void set_message(SharedBlock* b, std::string_view text) {
  const std::size_t n = std::min(text.size(), sizeof b->message - 1);
  std::memcpy(b->message, text.data(), n);
  b->message[n] = '\0';
}

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

std::int64_t page_size() { return sysconf(_SC_PAGESIZE); }

/// Field `field` (0 size, 1 resident) of /proc/<pid>/statm (pid 0: this
/// process), in bytes; -1 if unreadable.
std::int64_t statm_bytes(pid_t pid, int field) {
  char path[64];
  if (pid == 0) std::snprintf(path, sizeof path, "/proc/self/statm");
  else std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  long long v[2] = {0, 0};
  if (std::sscanf(buf, "%lld %lld", &v[0], &v[1]) != 2) return -1;
  return v[field] * page_size();
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string layout_key(const Call& call) {
  std::string k = call.op + "|" + call.config.to_string();
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    const Tensor& t = call.tensors[i];
    k += "|" + call.names[i] + ":" + std::to_string(static_cast<int>(call.roles[i])) + ":" +
         std::to_string(static_cast<int>(t.dtype())) + ":" + t.shape_string() + ":";
    for (auto s : t.strides()) k += std::to_string(s) + ",";
    k += std::to_string(t.nbytes());
  }
  return k;
}

/// Where each tensor's bytes sit in the region kc shares with the worker (each
/// 64-byte aligned); `total` is the region's size for that layout.
std::vector<std::size_t> transfer_offsets(const Call& call, std::size_t* total) {
  std::vector<std::size_t> offsets;
  *total = 0;
  for (const Tensor& t : call.tensors) {
    offsets.push_back(*total);
    *total += round_up(t.nbytes(), 64);
  }
  return offsets;
}

// --- A layout as bytes: what a running worker needs to take on its case's next
// layout (op, config, names, roles, dtypes, shapes, strides) instead of kc
// forking a new worker for it.

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

std::string encode_layout(const Call& call) {
  std::string out;
  put_str(out, call.op);
  put_u64(out, static_cast<std::uint64_t>(call.config.dtype));
  put_u64(out, call.config.accumulator ? 1 + static_cast<std::uint64_t>(*call.config.accumulator) : 0);
  put_u64(out, call.config.params.size());
  for (const auto& [key, value] : call.config.params) {
    put_str(out, key);
    put_str(out, value);
  }
  put_u64(out, call.tensors.size());
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    const Tensor& t = call.tensors[i];
    put_str(out, call.names[i]);
    put_u64(out, static_cast<std::uint64_t>(call.roles[i]));
    put_u64(out, static_cast<std::uint64_t>(t.dtype()));
    put_u64(out, t.rank());
    for (std::size_t d = 0; d < t.rank(); ++d) {
      put_u64(out, static_cast<std::uint64_t>(t.shape()[d]));
      put_u64(out, static_cast<std::uint64_t>(t.strides()[d]));
    }
  }
  return out;
}

struct LayoutReader {
  std::string_view in;
  bool ok = true;
  std::uint64_t u64() {
    std::uint64_t v = 0;
    if (in.size() < sizeof v) {
      ok = false;
      return 0;
    }
    std::memcpy(&v, in.data(), sizeof v);
    in.remove_prefix(sizeof v);
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (!ok || n > in.size()) {
      ok = false;
      return {};
    }
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
};

/// The call `bytes` describes; its tensors are views of no storage yet.
bool decode_layout(std::string_view bytes, Call* call) {
  LayoutReader r{bytes};
  *call = Call{};
  call->op = r.str();
  call->config.dtype = static_cast<DType>(r.u64());
  if (const std::uint64_t acc = r.u64()) call->config.accumulator = static_cast<DType>(acc - 1);
  for (std::uint64_t n = r.u64(); r.ok && n > 0; --n) {
    std::string key = r.str();
    call->config.params[key] = r.str();
  }
  const std::uint64_t count = r.u64();
  for (std::uint64_t i = 0; r.ok && i < count; ++i) {
    call->names.push_back(r.str());
    call->roles.push_back(static_cast<Role>(r.u64()));
    const auto dtype = static_cast<DType>(r.u64());
    const std::uint64_t rank = r.u64();
    if (rank > 64) return false;
    std::vector<std::int64_t> shape, strides;
    for (std::uint64_t d = 0; r.ok && d < rank; ++d) {
      shape.push_back(static_cast<std::int64_t>(r.u64()));
      strides.push_back(static_cast<std::int64_t>(r.u64()));
    }
    if (!r.ok) return false;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0 || strides[d] < 0) return false;
    call->tensors.push_back(Tensor::view(dtype, std::move(shape), std::move(strides), nullptr));
  }
  return r.ok && r.in.empty();
}

/// Bytes of address space a worker may keep for the buffers of the layouts it
/// served before its current one (kept mapped, read-only and emptied, so a late
/// write to them is still caught). Past this a new layout gets a new worker.
constexpr std::size_t kRetiredBytes = std::size_t{256} << 20;
/// The shared transfer region is reserved this large (untouched pages cost
/// nothing), so most of a case's later layouts fit the first worker's region.
constexpr std::size_t kTransferReserve = std::size_t{64} << 20;

// --- Worker side. Everything below runs only in the forked child.

struct GuardRange {
  std::uintptr_t data_begin = 0, data_end = 0;
  detail::GuardedBuffer buffer;
};

SharedBlock* g_block = nullptr;
std::vector<GuardRange>* g_guards = nullptr;
bool g_pid1 = false;                         ///< the kernel process is PID 1 of its own namespace
volatile sig_atomic_t g_after_return = 0;    ///< the tensors are read-only: the call has returned

/// What could still write a tensor after a call returned: a thread besides
/// the worker's own (its main thread and the serving thread), or an armed
/// timer (an interval timer's signal handler, a POSIX timer's thread). Read
/// through /proc/self descriptors opened before the lock-down; what cannot be
/// read counts as "could".
struct Aftermath {
  int stat_fd = -1;
  int timers_fd = -1;
  long own_threads = 0;  ///< 0: unknown, the settle window always applies
};
Aftermath g_aftermath;

/// Field 20 of /proc/self/stat (num_threads), or -1.
long proc_thread_count(int stat_fd) {
  if (stat_fd < 0) return -1;
  char buf[1024];
  const ssize_t n = pread(stat_fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: fields are
  // counted from its closing parenthesis, the last one in the line.
  const char* q = std::strrchr(buf, ')');
  if (!q) return -1;
  int field = 2;
  for (++q; *q; ++q) {
    if (*q == ' ' && ++field == 20) return std::strtol(q + 1, nullptr, 10);
  }
  return -1;
}

/// True when nothing the kernel started can run after its call returned, so a
/// late write cannot come and the settle window has nothing to wait for.
bool nothing_left_running() {
  const Aftermath& a = g_aftermath;
  if (a.own_threads <= 0 || a.timers_fd < 0) return false;
  if (proc_thread_count(a.stat_fd) != a.own_threads) return false;
  char c;
  if (pread(a.timers_fd, &c, 1, 0) != 0) return false;  // a POSIX timer is listed
  for (const int which : {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF}) {
    itimerval t{};
    if (getitimer(which, &t) != 0 || t.it_value.tv_sec != 0 || t.it_value.tv_usec != 0) return false;
  }
  return true;
}

/// The buffers of layouts this worker served before (read-only, emptied): a
/// write there by a thread the kernel left running is a late write too.
struct RetiredRange {
  std::uintptr_t begin = 0, end = 0;
  std::int32_t tensor = 0;
};
constexpr std::size_t kMaxRetired = 4096;
RetiredRange g_retired[kMaxRetired];
volatile sig_atomic_t g_retired_count = 0;
std::size_t g_retired_bytes = 0;

/// Ends the kernel process by `sig`, as kc must see it. PID 1 of a namespace
/// cannot be killed by a signal sent from inside it (a raise() is ignored), so
/// it records the signal and exits with kExitSignal; kc reads it as a death by
/// that signal (signal_of).
[[noreturn]] void die_by(int sig) {
  if (g_pid1) {
    if (g_block) g_block->killed_by = sig;
    _exit(kExitSignal);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  _exit(128 + sig);
}

void on_deadly_signal(int sig) { die_by(sig); }

int access_kind(void* context) {
#if defined(__x86_64__)
  // Bit 1 of the page-fault error code: the access was a write.
  const auto* uc = static_cast<const ucontext_t*>(context);
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
  (void)context;
  return -1;
#endif
}

// Async-signal-safe: reads prebuilt tables, writes the shared block, _exit()s or
// re-raises with the default action so the parent sees the real signal.
void on_fault(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (g_block) {
    for (sig_atomic_t i = 0; i < g_retired_count; ++i) {
      if (addr >= g_retired[i].begin && addr < g_retired[i].end) {
        g_block->fault = Fault::kLateWrite;
        g_block->fault_tensor = g_retired[i].tensor;
        g_block->fault_addr = addr;
        _exit(kExitFault);
      }
    }
  }
  if (g_block && g_guards && g_after_return) {
    // The tensors are read-only between a call's return and the next call.
    for (std::size_t i = 0; i < g_guards->size(); ++i) {
      const detail::GuardedBuffer& b = (*g_guards)[i].buffer;
      if (addr >= reinterpret_cast<std::uintptr_t>(b.body) && addr < reinterpret_cast<std::uintptr_t>(b.rear)) {
        g_block->fault = Fault::kLateWrite;
        g_block->fault_tensor = static_cast<std::int32_t>(i);
        g_block->fault_addr = addr;
        _exit(kExitFault);
      }
    }
  }
  if (g_block && g_guards) {
    for (std::size_t i = 0; i < g_guards->size(); ++i) {
      const GuardRange& g = (*g_guards)[i];
      const auto side = detail::guard_page_side(g.buffer, addr);
      if (!side) continue;
      g_block->fault = Fault::kGuardPage;
      g_block->fault_tensor = static_cast<std::int32_t>(i);
      g_block->fault_side = *side == detail::Side::kAfter ? 1 : 0;
      g_block->fault_access = access_kind(context);
      g_block->fault_addr = addr;
      g_block->fault_distance =
          *side == detail::Side::kAfter ? addr - g.data_end : g.data_begin - addr;
      _exit(kExitFault);
    }
    g_block->fault = Fault::kSignal;
    g_block->signo = sig;
    g_block->fault_addr = addr;
    g_block->saved_errno = saved_errno;
  }
  die_by(sig);
}

[[noreturn]] void setup_failed(const std::string& what) {
  g_block->fault = Fault::kSetup;
  set_message(g_block, what);
  _exit(kExitFault);
}

/// RLIMIT_CPU backstop for one call: the CPU time used so far plus timeout x
/// hardware threads (a multithreaded kernel burns CPU that fast), plus 1 s.
/// Only the soft limit moves, so it can be raised again for the next call.
void set_cpu_limit(double timeout_s) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double used = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  const double hw = std::max(1u, std::thread::hardware_concurrency());
  rlimit rl{};
  getrlimit(RLIMIT_CPU, &rl);
  const auto want = static_cast<rlim_t>(std::ceil(used + timeout_s * hw + 1));
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, rl.rlim_max);
  setrlimit(RLIMIT_CPU, &rl);
}

struct ServeArgs {
  const Impl* impl;
  const Call* tmpl;
  Call* view;
  std::vector<GuardRange>* guards;
  std::byte* transfer;
  std::size_t transfer_bytes;
  std::vector<std::size_t>* offsets;
  int sock;
  double timeout_s;
  double settle_s;
};

/// Reaps every child that has ended (the kernel's, and in a namespace, every
/// orphan: PID 1 inherits them).
void reap_ended() {
  while (waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
  }
}

/// Ends every other process of the namespace (what the kernel started) and
/// reaps them: nothing the kernel forked outlives its call.
void end_kernel_processes() {
  if (!g_pid1) return;  // without a namespace kc ends them by process group (sweep_process_group)
  if (kill(-1, SIGKILL) != 0) return;  // ESRCH: there were none
  for (;;) {
    const pid_t r = waitpid(-1, nullptr, __WALL);
    if (r > 0 || (r < 0 && errno == EINTR)) continue;
    break;  // ECHILD: all gone
  }
}

/// Makes the call's tensors read-only (after the call) or writable again (before the next).
void protect_tensors(std::vector<GuardRange>& guards, bool read_only) {
  for (GuardRange& g : guards) {
    const detail::GuardedBuffer& b = g.buffer;
    if (b.rear > b.body) mprotect(b.body, static_cast<std::size_t>(b.rear - b.body), read_only ? PROT_READ : PROT_READ | PROT_WRITE);
  }
}

/// Reads exactly n bytes from the socket; false at its end or on an error.
bool recv_all(int sock, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = recv(sock, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/// Takes on the layout kc sends after an 'L' request: new guarded buffers and
/// views for it, in place of the old ones. The old buffers stay mapped,
/// read-only and emptied, so a thread the kernel left running that writes to
/// them is still caught (LATE_WRITE). Replies 'L', or 'E' when this worker
/// cannot take the layout (kc then starts a new worker for it).
void take_layout(ServeArgs& a) {
  std::uint64_t len = 0;
  if (!recv_all(a.sock, &len, sizeof len) || len > (std::uint64_t{1} << 24)) setup_failed("a truncated layout from kc");
  std::string bytes(len, '\0');
  if (!recv_all(a.sock, bytes.data(), bytes.size())) setup_failed("a truncated layout from kc");
  static Call owned[2];
  static int which = 0;
  which ^= 1;  // the other one: a.tmpl may point at the current one
  Call& next = owned[which];
  if (!decode_layout(bytes, &next)) setup_failed("a malformed layout from kc");
  std::size_t total = 0;
  std::vector<std::size_t> offsets = transfer_offsets(next, &total);
  std::vector<GuardRange>& old = *a.guards;
  std::size_t old_bytes = 0;
  for (const GuardRange& g : old) old_bytes += g.buffer.map_bytes;
  char reply = 'E';
  auto* fresh = new std::vector<GuardRange>(next.tensors.size());  // never freed: on_fault may read the old set
  bool made = total <= a.transfer_bytes && g_retired_count + old.size() <= kMaxRetired &&
              g_retired_bytes + old_bytes <= kRetiredBytes;
  for (std::size_t i = 0; made && i < next.tensors.size(); ++i) {
    GuardRange& g = (*fresh)[i];
    const Result<std::optional<std::size_t>> placement = requested_placement(next, i);  // kc/capability.h
    made = placement.ok() && detail::make_guarded(next.tensors[i].nbytes(), &g.buffer, *placement).ok();
    g.data_begin = reinterpret_cast<std::uintptr_t>(g.buffer.data);
    g.data_end = g.data_begin + g.buffer.nbytes;
  }
  if (made) {
    // A late write to the old buffers faults and is classified before they are emptied.
    for (std::size_t i = 0; i < old.size(); ++i) {
      const detail::GuardedBuffer& b = old[i].buffer;
      g_retired[g_retired_count] = {reinterpret_cast<std::uintptr_t>(b.body), reinterpret_cast<std::uintptr_t>(b.rear),
                                    static_cast<std::int32_t>(i)};
      g_retired_count = g_retired_count + 1;
      if (b.rear > b.body) {
        mprotect(b.body, static_cast<std::size_t>(b.rear - b.body), PROT_READ);
        madvise(b.body, static_cast<std::size_t>(b.rear - b.body), MADV_DONTNEED);
      }
    }
    g_retired_bytes += old_bytes;
    Call& view = *a.view;
    view.op = next.op;
    view.config = next.config;
    view.names = next.names;
    view.roles = next.roles;
    view.tensors.clear();
    for (std::size_t i = 0; i < next.tensors.size(); ++i)
      view.tensors.push_back(Tensor::view(next.tensors[i], (*fresh)[i].buffer.data));
    *a.offsets = std::move(offsets);
    a.tmpl = &next;
    a.guards = fresh;
    g_guards = fresh;
    // As after a call: read-only until the next call, so a write by a thread
    // the kernel left running is caught here too.
    protect_tensors(*fresh, true);
    g_after_return = 1;
    reply = 'L';
  } else {
    for (GuardRange& g : *fresh) detail::free_guarded(&g.buffer);
    delete fresh;
  }
  if (send(a.sock, &reply, 1, MSG_NOSIGNAL) != 1) _exit(0);
}

void serve(ServeArgs a) {
  // Own alternate signal stack, so a stack overflow in the kernel still runs on_fault.
  const std::size_t alt_bytes = std::max<std::size_t>(SIGSTKSZ, 64 * 1024);
  void* alt = mmap(nullptr, alt_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (alt != MAP_FAILED) {
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = alt_bytes;
    sigaltstack(&ss, nullptr);
  }
  for (;;) {
    char req = 0;
    const ssize_t n = recv(a.sock, &req, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent closed the socket: done
    if (req == 'L') {
      reap_ended();
      take_layout(a);
      continue;
    }
    auto& guards = *a.guards;
    if (g_after_return) {
      g_after_return = 0;
      protect_tensors(guards, false);
    }
    reap_ended();
    g_block->fault = Fault::kNone;
    g_block->status_code = 0;
    g_block->message[0] = '\0';
    for (std::size_t i = 0; i < guards.size(); ++i) {
      GuardRange& g = guards[i];
      if (g.buffer.nbytes) std::memcpy(g.buffer.data, a.transfer + (*a.offsets)[i], g.buffer.nbytes);
      detail::fill_canaries(g.buffer);
      // A kernel may have replaced a tensor object on an earlier call; every
      // call starts from the guarded views again.
      if (a.view->tensors[i].raw() != g.buffer.data || !a.view->tensors[i].is_view())
        a.view->tensors[i] = Tensor::view(a.tmpl->tensors[i], g.buffer.data);
    }
    set_cpu_limit(a.timeout_s);
    // The kernel has no business in the transfer region.
    if (a.transfer_bytes) mprotect(a.transfer, a.transfer_bytes, PROT_NONE);
    Status status;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      status = a.impl->run(*a.view);
    } catch (const std::bad_alloc&) {
      g_block->fault = Fault::kBadAlloc;
      _exit(kExitFault);
    } catch (const std::exception& e) {
      g_block->fault = Fault::kException;
      set_message(g_block, e.what());
      _exit(kExitFault);
    } catch (...) {
      g_block->fault = Fault::kException;
      set_message(g_block, "an exception of unknown type");
      _exit(kExitFault);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // What the kernel started ends with its call, before kc reads the results
    // (a forked copy could otherwise write the shared transfer region later).
    end_kernel_processes();
    std::fflush(nullptr);  // what the kernel printed goes to kc's capture now
    if (a.transfer_bytes) mprotect(a.transfer, a.transfer_bytes, PROT_READ | PROT_WRITE);
    for (std::size_t i = 0; i < guards.size(); ++i) {
      if (auto side = detail::damaged_canary(guards[i].buffer)) {
        g_block->fault = Fault::kCanary;
        g_block->fault_tensor = static_cast<std::int32_t>(i);
        g_block->fault_side = *side == detail::Side::kAfter ? 1 : 0;
        _exit(kExitFault);
      }
    }
    for (std::size_t i = 0; i < guards.size(); ++i) {
      const Tensor& t = a.view->tensors[i];
      const std::size_t nb = guards[i].buffer.nbytes;
      // A tensor the kernel replaced with one of its own: take its bytes if the
      // layout matches (what an in-process run would have seen).
      const std::byte* src = t.raw() == guards[i].buffer.data ? guards[i].buffer.data
                             : (t.nbytes() == nb ? t.raw() : nullptr);
      if (!src) {
        g_block->fault = Fault::kException;
        set_message(g_block, "the kernel replaced tensor " + a.view->names[i] + " with one of another size");
        _exit(kExitFault);
      }
      if (nb) std::memcpy(a.transfer + (*a.offsets)[i], src, nb);
    }
    g_block->status_code = static_cast<std::int32_t>(status.code());
    set_message(g_block, status.message());
    g_block->seconds = seconds;
    {
      const SelectedPath selected = take_selected_path();
      std::snprintf(g_block->path, sizeof g_block->path, "%s", selected.path.c_str());
      std::snprintf(g_block->path_reason, sizeof g_block->path_reason, "%s", selected.reason.c_str());
    }
    // From here to the next call the tensors are read-only: a write by a
    // thread the kernel left running faults (on_fault: LATE_WRITE). One that
    // comes within the settle window ends this call; a later one, the next.
    protect_tensors(guards, true);
    g_after_return = 1;
    if (a.settle_s > 0 && !nothing_left_running())
      std::this_thread::sleep_for(std::chrono::duration<double>(a.settle_s));
    const char done = 'D';
    if (send(a.sock, &done, 1, MSG_NOSIGNAL) != 1) return;
  }
}

}  // namespace

// --- Parent side.

namespace {

/// Ends, where the worker has no PID namespace, every process the kernel left
/// in the worker's process group (found through /proc), the worker itself
/// excepted. With a namespace, its PID 1 does this after every call.
void sweep_process_group(pid_t pgid) {
  for_each_process([&](long pid, long, long pgrp) {
    if (pid != pgid && pgrp == pgid) kill(static_cast<pid_t>(pid), SIGKILL);
  });
}

}  // namespace

struct Worker::Child {
  pid_t pid = -1;
  int sock = -1;
  int out = -1;               ///< read end of the kernel's stdout/stderr
  Capture* capture = nullptr;
  bool sandbox_seen = false;  ///< the worker's sandbox bits were read
  SharedBlock* block = nullptr;
  std::size_t block_bytes = 0;
  std::byte* transfer = nullptr;
  std::size_t transfer_bytes = 0;
  std::vector<std::size_t> offsets, sizes;
  std::vector<std::string> names;
  std::string layout;
  std::int64_t rss_floor = 0;         ///< kc's resident memory when it forked the worker, plus 64 MiB
  std::int64_t max_tensor_bytes = 0;  ///< the largest layout's tensor bytes so far
  std::int64_t rss_baseline = 0;      ///< rss_floor plus the worker's own copies (guards, transfer)

  /// Takes `call`'s layout as the worker's current one, on kc's side.
  void adopt(const Call& call, const std::string& key) {
    std::size_t total = 0;
    layout = key;
    names = call.names;
    offsets = transfer_offsets(call, &total);
    sizes.clear();
    std::int64_t tensor_bytes = 0;
    for (const Tensor& t : call.tensors) {
      sizes.push_back(t.nbytes());
      tensor_bytes += static_cast<std::int64_t>(t.nbytes());
    }
    // The worker's own copies (guarded buffers, its touch of the transfer
    // region) are kc's doing, not the kernel's: the baseline includes them.
    max_tensor_bytes = std::max(max_tensor_bytes, tensor_bytes);
    rss_baseline = rss_floor + 2 * max_tensor_bytes;
  }
  bool reaped = false;
  int wait_status = 0;

  /// Reads what the kernel printed without waiting: the first
  /// Capture::kCaptureKeep bytes are kept, the rest counted.
  void drain() {
    if (out < 0) return;
    char buf[16384];
    for (;;) {
      const ssize_t n = read(out, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      if (capture) {
        capture->bytes += n;
        const std::size_t room = Capture::kCaptureKeep - std::min(Capture::kCaptureKeep, capture->head.size());
        capture->head.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
      }
    }
  }

  /// Tells the worker to exit: closes the socket (it exits on EOF). stop() reaps it.
  void release() {
    if (sock >= 0) close(sock);
    sock = -1;
  }

  /// Ends the worker: closes the socket (it exits on EOF), waits up to
  /// grace_s, then kills its process group; unmaps the regions.
  void stop(double grace_s) {
    release();
    if (pid > 0 && !reaped) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
      while (!reaped) {
        drain();  // a kernel blocked on a full pipe would never exit
        const pid_t r = waitpid(pid, &wait_status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
          reaped = true;
          break;
        }
        if (std::chrono::steady_clock::now() >= until) {
          kill(-pid, SIGKILL);
          kill(pid, SIGKILL);
          while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
          }
          reaped = true;
          break;
        }
        usleep(1000);
      }
    }
    if (pid > 0 && !(block && (block->sandbox_bits & detail::kPidNs))) sweep_process_group(pid);
    drain();
    if (out >= 0) close(out);
    out = -1;
    if (block) munmap(block, block_bytes);
    if (transfer) munmap(transfer, transfer_bytes);
    block = nullptr;
    transfer = nullptr;
  }

  /// Kills the whole process group now and reaps the worker.
  void kill_now() {
    if (pid > 0 && !reaped) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
      reaped = true;
    }
  }
};

namespace {

/// Signals whose default action ends a process. PID 1 of a namespace ignores
/// them when sent from inside (abort()'s raise(SIGABRT), RLIMIT_CPU's SIGXCPU),
/// so there each gets a handler that ends the process the way kc expects.
constexpr int kDeadlySignals[] = {SIGABRT, SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,   SIGUSR1, SIGUSR2,
                                  SIGALRM, SIGPIPE, SIGTRAP, SIGFPE,  SIGILL,    SIGSYS,  SIGXCPU,
                                  SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR, SIGSTKFLT};

[[noreturn]] void kernel_process(const Impl& impl, const Call& tmpl, Worker::Child& c, int sock,
                                 const Limits& limits, const detail::SandboxProfile& profile,
                                 std::uint32_t bits, std::string why);

/// The worker, kc's child. With `pid_ns` it is PID 1 of a PID namespace of
/// its own (kc's thread unshared it for this child: Worker::prepare) and
/// enters the profile's other namespaces; without, it runs the kernel with
/// none, and `why` says why not.
[[noreturn]] void child_main(const Impl& impl, const Call& tmpl, Worker::Child& c, int sock, const Limits& limits,
                             pid_t parent, bool pid_ns, std::string why) {
  const detail::SandboxProfile& profile = detail::sandbox_profile(runtime_traits(impl.declaration()).sandbox);
  g_block = c.block;
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a crashing kernel is data, not a core file
  if (pid_ns) {
    // PID 1: the namespace, and every process the kernel starts, ends with it.
    // Die with kc: an orphaned worker spinning in a kernel would outlive it
    // (should kc be gone already, the first read of the socket ends the worker).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    g_pid1 = true;
    setsid();  // its own process group and session: kill(0, ...) stays inside
    kernel_process(impl, tmpl, c, sock, limits, profile, detail::unshare_other_namespaces(profile, &why), why);
  }
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(kExitFault);
  // One process; what the kernel forks stays in its process group (setsid
  // and setpgid are refused), and orphans come back to it.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  kernel_process(impl, tmpl, c, sock, limits, profile, 0, why);
}

[[noreturn]] void kernel_process(const Impl& impl, const Call& tmpl, Worker::Child& c, int sock,
                                 const Limits& limits, const detail::SandboxProfile& profile,
                                 std::uint32_t bits, std::string why) {
  if (g_pid1) {
    struct sigaction die {};
    die.sa_handler = on_deadly_signal;
    sigemptyset(&die.sa_mask);
    for (int sig : kDeadlySignals) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(sig, &die, nullptr);
    }
  }
  // A plugin's file may vanish behind the mounts below (under /tmp) or the
  // uid change (a directory nobody cannot search): it is opened now, and
  // loaded after lock_down through the descriptor (kc/child.h).
  kc::pin_library_files();
  // The kernel's scratch space counts against nothing else: keep it small.
  const std::int64_t scratch =
      std::min<std::int64_t>(limits.memory_bytes > 0 ? limits.memory_bytes : std::int64_t{1} << 30, std::int64_t{256} << 20);
  bits = detail::set_up_mounts(profile, bits, scratch, &why);
  if (bits & detail::kReadOnlyFs) setenv("TMPDIR", "/tmp", 1);
  // Before the lock-down and before any of the impl's code runs here: the
  // threads now are the worker's own, plus the serving thread to come.
  g_aftermath.stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  g_aftermath.timers_fd = open("/proc/self/timers", O_RDONLY | O_CLOEXEC);
  if (const long threads = proc_thread_count(g_aftermath.stat_fd); threads > 0) g_aftermath.own_threads = threads + 1;

  static std::vector<GuardRange> guards;
  guards.resize(tmpl.tensors.size());
  for (std::size_t i = 0; i < tmpl.tensors.size(); ++i) {
    // misalign_<tensor> asks for the tensor at an offset from a 64-byte line (kc/capability.h).
    const Result<std::optional<std::size_t>> placement = requested_placement(tmpl, i);
    if (!placement.ok()) setup_failed(placement.status().message());
    if (Status s = detail::make_guarded(tmpl.tensors[i].nbytes(), &guards[i].buffer, *placement); !s.ok())
      setup_failed("guarded buffer for " + tmpl.names[i] + ": " + s.message());
    guards[i].data_begin = reinterpret_cast<std::uintptr_t>(guards[i].buffer.data);
    guards[i].data_end = guards[i].data_begin + guards[i].buffer.nbytes;
  }
  static Call view;
  view.op = tmpl.op;
  view.config = tmpl.config;
  view.names = tmpl.names;
  view.roles = tmpl.roles;
  view.tensors.clear();
  for (std::size_t i = 0; i < tmpl.tensors.size(); ++i)
    view.tensors.push_back(Tensor::view(tmpl.tensors[i], guards[i].buffer.data));
  g_guards = &guards;

  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);

#ifndef KC_ISOLATE_ASAN
  // Address-space limit: what the worker maps now, plus the memory limit, plus
  // an allowance per hardware thread for what an honest multithreaded kernel
  // reserves without using (8 MiB stack, a 64 MiB malloc arena, BLAS buffers).
  // Under ASan the shadow reservation makes RLIMIT_AS unusable, and so does a
  // device runtime (CUDA reserves virtual address space for all of the GPU's
  // memory when it starts, unified addressing); the parent's resident-memory
  // watch still applies to both.
  if (limits.memory_bytes > 0 && runtime_traits(impl.declaration()).runs_on_host) {
    const std::int64_t vm = statm_bytes(0, 0);
    const std::int64_t hw = std::max(1u, std::thread::hardware_concurrency());
    if (vm > 0) {
      const std::int64_t cap = vm + limits.memory_bytes + (hw + 1) * (std::int64_t{256} << 20) +
                               static_cast<std::int64_t>(kRetiredBytes);
      rlimit as{};
      getrlimit(RLIMIT_AS, &as);
      if (as.rlim_max == RLIM_INFINITY || static_cast<std::int64_t>(as.rlim_max) > cap) {
        as.rlim_cur = static_cast<rlim_t>(cap);
        setrlimit(RLIMIT_AS, &as);
      }
    }
  }
#endif

  // Last: nothing after this needs a privilege, and the kernel gets none.
  bits = detail::lock_down(profile, bits, getpid(), &why);
  // The uid change cleared the parent-death signal: set it again, so a kernel
  // spinning in a call still ends with kc. Should kc die before this line, the
  // worker's next read of its socket sees the end and it exits.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  c.block->sandbox_bits = bits;
  {
    const std::size_t n = std::min(why.size(), sizeof c.block->sandbox_why - 1);
    std::memcpy(c.block->sandbox_why, why.data(), n);
    c.block->sandbox_why[n] = '\0';
  }
  // A plugin's library is loaded here, in the worker, never in kc's process
  // (kc/backend.h), and only now: its constructors and kc_plugin_init run
  // inside the whole sandbox, as its kernels do.
  if (Status s = impl.load_in_worker(); !s.ok()) setup_failed("loading the impl: " + s.message());

  ServeArgs args{&impl,      &tmpl, &view, &guards,          c.transfer,     c.transfer_bytes,
                 &c.offsets, sock,  limits.timeout_s, limits.settle_s};
  try {
    // Never the main thread: see kc/isolate.h on libgomp and fork().
    std::thread kernel_thread(serve, args);
    kernel_thread.join();
  } catch (const std::exception& e) {
    setup_failed(std::string("cannot start the kernel thread: ") + e.what());
  }
  std::fflush(nullptr);  // what the kernel printed
  _exit(0);
}


/// `text` quoted for a note: printable ASCII kept, the rest escaped, cut at `max` characters.
std::string quote_output(std::string_view text, std::size_t max) {
  std::string q = "\"";
  for (const char ch : text.substr(0, max)) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '\n') q += "\\n";
    else if (ch == '"' || ch == '\\') (q += '\\') += ch;
    else if (u >= 0x20 && u < 0x7f) q += ch;
    else {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", u);
      q += esc;
    }
  }
  q += text.size() > max ? "\"..." : "\"";
  return q;
}

Outcome failed(StatusCode code, std::string message, Signature failure) {
  Outcome o;
  o.status = Status(code, std::move(message));
  o.failure = std::move(failure);
  return o;
}

}  // namespace

std::span<const EnumEntry<Mode>> mode_table() { return kModes; }

std::string format_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (u < 4 && v >= 1024 && std::fmod(v, 1024) == 0) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.0f%s", v, kUnits[u]);
  return buf;
}

std::optional<std::int64_t> parse_bytes(std::string_view text) {
  std::string s(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno || end == s.c_str() || !(v >= 0)) return std::nullopt;
  std::string unit(end);
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  const double bytes = v * scale;
  if (bytes > 9.0e18) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

Worker::Worker(const Impl& impl, Mode mode, Limits limits) : impl_(impl), limits_(limits) {
  if (mode == Mode::kNone) {
    isolated_ = false;
    in_process_reason_ = "--isolate=none";
    return;
  }
  const RuntimeTraits traits = runtime_traits(impl.declaration());
  if (!traits.survives_fork) {
    isolated_ = false;
    in_process_reason_ = std::string(traits.note);
  }
  if (auto device = impl.declaration().extra.find(std::string(kDeviceRuntimeKey));
      device != impl.declaration().extra.end())
    device_runtime_ = device->second;
}

std::vector<std::string> Worker::evidence_notes() const {
  std::vector<std::string> notes;
  if (!sandbox_note_.empty()) notes.push_back(sandbox_note_);
  if (capture_.bytes > 0)
    notes.push_back("the kernel wrote " + std::to_string(capture_.bytes) +
                    " bytes to its stdout/stderr (captured, not passed to kc's): " + quote_output(capture_.head, 200));
  if (!fp_env_note_.empty()) notes.push_back(fp_env_note_);
  return notes;
}

Worker::~Worker() {
  if (retiring_) retiring_->stop(1.0);
  if (child_) child_->stop(1.0);
}

namespace {

/// Hands a running worker the next layout of its case (it remakes its buffers
/// in place): no fork, no new sandbox. False when this worker cannot take it
/// (the shared region is too small, the layout does not survive the trip, the
/// worker refused or died) and kc starts a new worker instead.
bool relayout(Worker::Child& c, const Call& call, const std::string& key, double timeout_s) {
  if (c.reaped || c.sock < 0 || !c.block) return false;
  std::size_t total = 0;
  transfer_offsets(call, &total);
  if (total > c.transfer_bytes) return false;
  const std::string bytes = encode_layout(call);
  if (Call back; !decode_layout(bytes, &back) || layout_key(back) != key) return false;
  // A write after the previous call returned ended the worker: the next call reports it.
  if (c.block->fault == Fault::kLateWrite) {
    c.adopt(call, key);
    return true;
  }
  std::string msg(1, 'L');
  const std::uint64_t len = bytes.size();
  msg.append(reinterpret_cast<const char*>(&len), sizeof len);
  msg += bytes;
  if (send(c.sock, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(1.0, timeout_s));
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p[2] = {{c.sock, POLLIN, 0}, {c.out, POLLIN, 0}};
    const int pr = poll(p, c.out >= 0 ? 2 : 1, 20);
    if (pr < 0 && errno != EINTR) break;
    if (pr > 0 && p[1].revents) c.drain();
    if (pr <= 0 || !p[0].revents) continue;
    char reply = 0;
    const ssize_t n = recv(c.sock, &reply, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n == 1 && reply == 'L') {
      c.adopt(call, key);
      return true;
    }
    if (n == 0 && c.block->fault == Fault::kLateWrite) {
      c.adopt(call, key);
      return true;
    }
    break;
  }
  return false;
}

}  // namespace

Status Worker::prepare(const Call& call) {
  if (!isolated_) return ok_status();
  const std::string key = layout_key(call);
  if (child_ && child_->layout == key) return ok_status();
  if (child_ && relayout(*child_, call, key, limits_.timeout_s)) {
    ++relayouts_;
    return ok_status();
  }
  // The worker of the previous layout is told to exit (its socket closes) and
  // reaped at the next layout change or with this Worker, so its exit — the
  // teardown of a copy of kc and of its namespaces — overlaps the next calls
  // instead of delaying them. One at a time: an older one is reaped first.
  // Without a PID namespace, what its kernel left running is swept only when
  // it is reaped, so that one is stopped now.
  if (retiring_) {
    retiring_->stop(1.0);
    retiring_.reset();
  }
  if (child_) {
    if (child_->block && (child_->block->sandbox_bits & detail::kPidNs)) {
      child_->release();
      retiring_ = std::move(child_);
    } else {
      child_->stop(1.0);
      child_.reset();
    }
  }
  // After Ctrl-C (or SIGTERM) no worker starts: the case ends now, and is not recorded.
  if (kc::interrupted()) return {StatusCode::kUnavailable, "kc was interrupted (SIGINT or SIGTERM)"};
  // What every worker of this impl would load again (libtorch), mapped once in
  // kc, while no other thread forks: a worker forked in the middle of a dlopen
  // would inherit the loader's lock held, and its own dlopen would wait for ever.
  {
    detail::ForkExclusive exclusive;
    if (Status s = impl_.load_before_fork(); !s.ok()) return s;
  }
  detail::collapse_for_fork();
  auto c = std::make_unique<Child>();
  c->rss_floor = std::max<std::int64_t>(0, statm_bytes(getpid(), 1)) + (std::int64_t{64} << 20);
  c->adopt(call, key);
  std::size_t total = 0;
  transfer_offsets(call, &total);
  c->block_bytes = round_up(sizeof(SharedBlock), static_cast<std::size_t>(page_size()));
  void* b = mmap(nullptr, c->block_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) return {StatusCode::kResourceExhausted, std::string("mmap: ") + std::strerror(errno)};
  c->block = static_cast<SharedBlock*>(b);
  c->transfer_bytes = std::max(total, kTransferReserve);
  void* t = mmap(nullptr, c->transfer_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (t == MAP_FAILED) {
    c->stop(0);
    return {StatusCode::kResourceExhausted,
            "mmap of a " + std::to_string(total) + "-byte transfer region: " + std::strerror(errno)};
  }
  c->transfer = static_cast<std::byte*>(t);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    c->stop(0);
    return internal_error(std::string("socketpair: ") + std::strerror(errno));
  }
  // The kernel's stdout and stderr: a pipe kc drains while a call runs, never kc's own.
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    c->stop(0);
    return internal_error(std::string("pipe: ") + std::strerror(errno));
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(out[1], F_SETPIPE_SZ, 1 << 20);  // room for a burst while kc is between polls
  c->out = out[0];
  c->capture = &capture_;
  std::fflush(nullptr);  // the worker must not inherit (and repeat) buffered output
  const pid_t parent = getpid();
  const std::string cgroup_procs = detail::worker_cgroup_procs();  // the memory budget's cgroup, if any
  pid_t pid;
  std::string why_no_ns;
  bool pid_ns = false;
  {
    // No other thread's oracle is in memory while the worker's copy is taken.
    detail::ForkExclusive exclusive;
    pid_ns = detail::pid_namespace_for_next_child(&why_no_ns);
    pid = fork();
    if (pid == 0) exclusive.disown();  // the child's copy of the gate is never touched
    if (pid != 0 && pid_ns && !detail::own_pid_namespace_for_children()) {
      // This thread's later children would land in the worker's namespace.
      if (pid > 0) c->pid = pid;  // killed and reaped by stop
      close(sv[0]);
      close(sv[1]);
      close(out[1]);
      c->stop(0);
      return internal_error(std::string("setns back to kc's PID namespace: ") + std::strerror(errno));
    }
  }
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    close(out[1]);
    c->stop(0);
    return internal_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // stdin is nothing, stdout and stderr the capture pipe: what the kernel
    // prints never reaches kc's output (a --format json stream stays valid),
    // and a process it leaves behind cannot hold kc's stdout open.
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    // Only the worker's own socket: with cases on several threads, kc holds
    // other workers' sockets, and a copy kept open here would keep those
    // workers from seeing their socket close.
    if (sv[1] > 3) close_range(3, static_cast<unsigned>(sv[1]) - 1, 0);
    close_range(static_cast<unsigned>(sv[1]) + 1, ~0u, 0);
    // Into the memory budget's cgroup before anything else is allocated.
    if (!detail::join_cgroup(cgroup_procs)) {
      c->block->fault = Fault::kSetup;
      set_message(c->block, "cannot join the memory budget's cgroup (" + cgroup_procs + "): " + std::strerror(errno));
      _exit(kExitFault);
    }
    child_main(impl_, call, *c, sv[1], limits_, parent, pid_ns, why_no_ns);
  }
  close(sv[1]);
  close(out[1]);
  // The kernel runs in kc's child itself. Its process group: PID 1 makes one
  // with setsid (which a group leader may not call); otherwise the child's
  // setpgid or this one, whichever runs first.
  if (!pid_ns) setpgid(pid, pid);
  c->pid = pid;
  c->sock = sv[0];
  child_ = std::move(c);
  ++spawned_;
  return ok_status();
}

Outcome Worker::run(Call& call) {
  Outcome o = run_once(call);
  // A device backend reports a damaged canary band as a Status carrying
  // GUARD_OVERWRITTEN(tensor, side) (kc/canary.h): the same failure, and the
  // same verdict, as a host kernel caught by the guard pages.
  if (!o.failure) o.failure = canary::guard_signature(o.status);
  return o;
}

namespace {

/// A call on kc's own thread (--isolate none, or an impl that cannot leave
/// kc's process): the kernel's time, the path it reported, and a note when it
/// left the floating-point environment changed (the first time only).
Outcome run_in_process(const Impl& impl, Call& call, std::string* fp_env_note) {
  Outcome o;
  // The kernel runs on kc's thread. It starts from the default FP
  // environment (as on a worker's fresh thread), and whatever it leaves (FTZ,
  // DAZ, a rounding mode) ends with the scope: kc's arithmetic stays kc's.
  const FpEnvScope fp_env;
  // Tensors the call places off kc's default alignment (misalign_<tensor>).
  const PlacedTensors placed(call);
  if (!placed.status().ok()) {
    o.status = placed.status();
    return o;
  }
  const auto t0 = std::chrono::steady_clock::now();
  memcheck::mark_kernel_begin();  // under valgrind: the window its errors are counted in
  take_selected_path();           // a report left by an earlier, failed call is not this call's
  o.status = impl.run(call);
  memcheck::mark_kernel_end();
  {
    SelectedPath selected = take_selected_path();
    o.path = std::move(selected.path);
    o.path_reason = std::move(selected.reason);
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (std::string left; fp_env_note->empty() && fp_env_changed(&left))
    *fp_env_note =
        "the kernel left the floating-point environment changed (" + left + "); kc restored its own after the call";
  return o;
}

/// How a call to a worker ended.
enum class End { kDone, kDied, kTimeout, kMemory };

/// Waits for the worker's reply to a call, until the time limit, draining
/// what the kernel prints and watching its resident memory (*rss_seen: the
/// last reading) every 20 ms.
End await_reply(Worker::Child& c, const Limits& limits, std::int64_t* rss_seen) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.timeout_s);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return End::kTimeout;
    // Wake at least every 20 ms to watch the worker's memory.
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd p[2] = {{c.sock, POLLIN, 0}, {c.out, POLLIN, 0}};
    const int pr = poll(p, c.out >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left_ms, 20)));
    if (pr < 0 && errno != EINTR) return End::kDied;
    if (pr > 0 && p[1].revents) {
      c.drain();
      // Every writer gone (the worker is ending): stop watching the pipe.
      if ((p[1].revents & (POLLHUP | POLLERR)) && !(p[1].revents & POLLIN)) {
        close(c.out);
        c.out = -1;
      }
    }
    if (pr > 0 && p[0].revents) {
      char reply = 0;
      const ssize_t n = recv(c.sock, &reply, 1, MSG_DONTWAIT);
      if (n == 1) return End::kDone;
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return End::kDied;
      continue;
    }
    if (limits.memory_bytes > 0) {
      *rss_seen = statm_bytes(c.pid, 1);
      if (*rss_seen > 0 && *rss_seen - c.rss_baseline > limits.memory_bytes) return End::kMemory;
    }
    if (waitpid(c.pid, &c.wait_status, WNOHANG) == c.pid) {
      c.reaped = true;
      return End::kDied;
    }
  }
}

/// The signal the worker died by, or 0: one it was killed by, or the one PID 1
/// of its namespace recorded before it exited (die_by).
int signal_of(int wait_status, const SharedBlock& blk) {
  if (WIFSIGNALED(wait_status)) return WTERMSIG(wait_status);
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == kExitSignal && blk.killed_by > 0) return blk.killed_by;
  return 0;
}

/// Why a call whose worker did not reply ended: the time or memory limit,
/// the fault the worker recorded (guard page, canary, late write...), or how
/// the process ended (signal, OOM kill, exit).
Outcome explain_end(End end, const SharedBlock& blk, int ws, const std::vector<std::string>& names,
                    std::int64_t rss_growth, bool late_before, std::int64_t oom_kills_before, std::int64_t budget_bytes,
                    const Limits& limits) {
  auto tensor_name = [&](std::int32_t i) {
    return i >= 0 && static_cast<std::size_t>(i) < names.size() ? names[i] : std::string("?");
  };
  const std::string mem = format_bytes(limits.memory_bytes);
  if (end == End::kTimeout) {
    return failed(StatusCode::kDeadlineExceeded,
                  "no result after " + fmt_seconds(limits.timeout_s) + "; the worker was killed",
                  {sig::kTimeout, {fmt_seconds(limits.timeout_s)}});
  }
  if (end == End::kMemory) {
    return failed(StatusCode::kResourceExhausted,
                  "the worker's resident memory grew " + std::to_string(rss_growth >> 20) +
                      " MiB beyond kc's own use, past the " + mem + " limit; the worker was killed",
                  {sig::kMemoryLimit, {mem}});
  }
  switch (blk.fault) {
    case Fault::kGuardPage: {
      const std::string t = tensor_name(blk.fault_tensor);
      const std::string side = blk.fault_side ? "after" : "before";
      const bool read = blk.fault_access == 0;
      const std::string where = std::to_string(blk.fault_distance) + " byte(s) " +
                                (blk.fault_side ? "past the end of " : "before the start of ") + t;
      return failed(StatusCode::kCrashed,
                    std::string("the kernel ") + (read ? "read" : blk.fault_access == 1 ? "wrote" : "touched") +
                        " the guard page " + where,
                    {read ? sig::kGuardRead : sig::kGuardOverwritten, {t, side}});
    }
    case Fault::kCanary: {
      const std::string t = tensor_name(blk.fault_tensor);
      const std::string side = blk.fault_side ? "after" : "before";
      return failed(StatusCode::kCrashed,
                    "canary bytes " + side + " " + t + " changed: the kernel wrote outside the buffer",
                    {sig::kGuardOverwritten, {t, side}});
    }
    case Fault::kBadAlloc:
      return failed(StatusCode::kResourceExhausted,
                    "an allocation failed (std::bad_alloc) under the " + mem + " memory limit",
                    {sig::kMemoryLimit, {mem}});
    case Fault::kException:
      return failed(StatusCode::kCrashed, std::string("an exception escaped the kernel: ") + blk.message,
                    {sig::kCrash, {"exception"}});
    case Fault::kSetup:
      return failed(StatusCode::kInternal, std::string("the worker could not start: ") + blk.message,
                    {sig::kWorkerFailed, {}});
    case Fault::kLateWrite: {
      const std::string t = tensor_name(blk.fault_tensor);
      return failed(StatusCode::kCrashed,
                    "the kernel wrote " + t + " after " + (late_before ? "the previous call" : "the call") +
                        " returned (a thread or process it left running): the caller would read a result that "
                        "changes under it",
                    {sig::kLateWrite, {t}});
    }
    case Fault::kSignal:
    case Fault::kNone:
      break;
  }
  if (const int sig = signal_of(ws, blk); sig > 0) {
    if (sig == SIGXCPU) {
      return failed(StatusCode::kDeadlineExceeded, "the worker used up its CPU-time limit (SIGXCPU)",
                    {sig::kTimeout, {"cpu"}});
    }
    if (blk.fault == Fault::kSignal && blk.saved_errno == ENOMEM) {
      return failed(StatusCode::kResourceExhausted,
                    "the kernel crashed with " + signal_name(sig) + " after an allocation failed (ENOMEM) under the " +
                        mem + " memory limit",
                    {sig::kMemoryLimit, {mem}});
    }
    std::string msg = "the worker died with " + signal_name(sig);
    if (blk.fault == Fault::kSignal && (sig == SIGSEGV || sig == SIGBUS)) {
      char addr[32];
      std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(blk.fault_addr));
      msg += std::string(" at address ") + addr;
    }
    if (sig == SIGKILL && oom_kills_before >= 0 && detail::cgroup_oom_kills(nullptr) > oom_kills_before) {
      // The kc cgroup's OOM killer: the workers together reached the memory budget.
      const std::string budget = format_bytes(budget_bytes);
      return failed(StatusCode::kResourceExhausted,
                    "the worker was killed by the OOM killer of kc's memory-budget cgroup: the workers running at "
                    "once reached the " + budget + " budget",
                    {"MEMORY_LIMIT", {budget}});
    }
    if (sig == SIGKILL) msg += " (not sent by kc: the system's OOM killer, or another process)";
    return failed(StatusCode::kCrashed, msg, {sig::kCrash, {signal_name(sig)}});
  }
  if (WIFEXITED(ws)) {
    const int code = WEXITSTATUS(ws);
    return failed(StatusCode::kCrashed,
                  "the kernel ended the worker process with exit(" + std::to_string(code) + ")",
                  {sig::kCrash, {"exit " + std::to_string(code)}});
  }
  return failed(StatusCode::kCrashed, "the worker ended without a result", {sig::kCrash, {"unknown"}});
}

}  // namespace

Outcome Worker::run_once(Call& call) {
  if (!isolated_) return run_in_process(impl_, call, &fp_env_note_);
  if (!device_runtime_.empty() && runtime_started(device_runtime_)) {
    return failed(StatusCode::kUnavailable,
                  device_runtime_ + " was started in kc's process (the " + device_runtime_ +
                      " backend's impls ran there), so a worker forked now cannot use it: check " +
                      impl_.declaration().name + " in a kc run without the " + device_runtime_ +
                      " backend's impls (--impl, or kc vet)",
                  {sig::kWorkerFailed, {}});
  }
  if (Status s = prepare(call); !s.ok())
    return failed(s.code(), "cannot start a worker: " + s.message(), {sig::kWorkerFailed, {}});
  Child& c = *child_;
  for (std::size_t i = 0; i < call.tensors.size(); ++i)
    if (c.sizes[i]) std::memcpy(c.transfer + c.offsets[i], call.tensors[i].raw(), c.sizes[i]);
  End end = End::kDied;
  // A write after the previous call returned ended the worker in between: this call reports it.
  const bool late_before = c.block->fault == Fault::kLateWrite;
  if (!late_before) std::memset(c.block, 0, kPerCallBytes);
  std::int64_t rss_seen = 0;
  std::int64_t budget_bytes = 0;
  const std::int64_t oom_kills_before = detail::cgroup_oom_kills(&budget_bytes);
  const char req = 'R';
  if (!late_before && send(c.sock, &req, 1, MSG_NOSIGNAL) == 1) end = await_reply(c, limits_, &rss_seen);

  c.drain();
  if (end == End::kDone) {
    if (!c.sandbox_seen) {
      c.sandbox_seen = true;
      const detail::SandboxProfile& profile = detail::sandbox_profile(runtime_traits(impl_.declaration()).sandbox);
      const std::string missing = detail::describe_missing(detail::wanted_bits(profile), c.block->sandbox_bits);
      if (!missing.empty()) {
        c.block->sandbox_why[sizeof c.block->sandbox_why - 1] = '\0';
        const std::string why = c.block->sandbox_why;
        sandbox_note_ = "worker sandbox weaker than the '" + std::string(profile.name) + "' profile: " + missing +
                        (why.empty() ? "" : " (" + why + ")");
        say_once(sandbox_note_ + "; see docs/isolation.md");  // each distinct shortfall once
      }
    }
    // Without a PID namespace, what the kernel forked is ended here.
    if (!(c.block->sandbox_bits & detail::kPidNs)) sweep_process_group(c.pid);
    for (std::size_t i = 0; i < call.tensors.size(); ++i)
      if (c.sizes[i]) std::memcpy(call.tensors[i].raw(), c.transfer + c.offsets[i], c.sizes[i]);
    Outcome o;
    const auto code = c.block->status_code;
    const bool known = code >= 0 && code <= static_cast<std::int32_t>(StatusCode::kInternal);
    c.block->message[sizeof c.block->message - 1] = '\0';
    o.status = code == 0 ? ok_status()
                         : Status(known ? static_cast<StatusCode>(code) : StatusCode::kInternal, c.block->message);
    o.seconds = c.block->seconds;
    c.block->path[sizeof c.block->path - 1] = '\0';
    c.block->path_reason[sizeof c.block->path_reason - 1] = '\0';
    o.path = c.block->path;
    o.path_reason = c.block->path_reason;
    return o;
  }

  // The worker is gone or must go. A worker that died is reaped (briefly
  // waited for: its socket closes just before it exits); one that must go, or
  // that closed its socket and kept running, is killed with its process group.
  if (end == End::kDied) {
    for (int i = 0; i < 500 && !c.reaped; ++i) {
      if (waitpid(c.pid, &c.wait_status, WNOHANG) == c.pid)
        c.reaped = true;
      else
        usleep(1000);
    }
  }
  c.kill_now();
  const SharedBlock blk = *c.block;
  const int ws = c.wait_status;
  const std::vector<std::string> names = c.names;
  const std::int64_t rss_growth = rss_seen - c.rss_baseline;
  child_->stop(0);
  child_.reset();

  return explain_end(end, blk, ws, names, rss_growth, late_before, oom_kills_before, budget_bytes, limits_);
}

}  // namespace kc::isolate
