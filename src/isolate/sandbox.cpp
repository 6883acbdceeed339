// kc — the worker's sandbox (see isolate/sandbox.h, docs/isolation.md).
#include "isolate/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kc/child.h"

#if defined(KC_HAVE_SECCOMP)
#include <seccomp.h>
#endif

#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

namespace kc::isolate::detail {

namespace {

// The profiles, one row each; a backend names its row in the runtime it declares
// (Declaration::runtime.sandbox, kc/declaration.h).
//   strict: host compute kernels (BLAS, Eigen, oneDNN, plugins, kc vet).
//   opencl: PoCL writes its kernel cache under $HOME, so the file system stays writable.
//   cuda:   the driver opens /dev/nvidia* read-write, keeps a JIT cache under
//           $HOME and may talk to nvidia-persistenced or MPS over Unix sockets.
//   mpi:    the ranks talk over sockets (the mpi backend runs outside workers today).
// Only strict has a seccomp allow-list: the device runtimes' calls (ioctls on
// /dev/nvidia*, PoCL's compiler) were not measured, so they keep the list of refusals.
constexpr SandboxProfile kProfiles[] = {
    {"strict", true, true, true, false, true},
    {"opencl", false, true, true, true, false},
    {"cuda", false, true, false, true, false},
    {"mpi", false, false, false, true, false},
};

void append_why(std::string* why, const std::string& what) {
  if (!why) return;
  if (!why->empty()) *why += "; ";
  *why += what + ": " + std::strerror(errno);
}

struct BitName {
  std::uint32_t bit;
  const char* name;
};
constexpr BitName kBitNames[] = {
    {kPidNs, "no PID namespace (kernel processes are ended through the process group)"},
    {kMountNs, "no mount namespace"},
    {kIpcNs, "no IPC namespace"},
    {kNetNs, "no network namespace"},
    {kOwnProc, "kc's /proc entries visible"},
    {kReadOnlyFs, "no read-only file system (write-opens refused by seccomp instead)"},
    {kUnprivileged, "kernel runs as kc's user"},
    {kNoNewPrivs, "no no_new_privs"},
    {kNoCapabilities, "capabilities not dropped"},
    {kSeccomp, "no seccomp filter"},
    {kAllowList, "seccomp filter refuses only a list of calls (no allow-list enforced)"},
};

#if defined(KC_HAVE_SECCOMP)
/// The strict profile's allow-list: what compute kernels and their runtimes
/// (glibc, libstdc++, libgomp, OpenBLAS, BLIS, oneDNN, Eigen, libtorch) call
/// at start and during calls, found by running the strict-profile tests and a
/// grade of those backends with KC_SECCOMP_LOG=1 (docs/isolation.md). Calls
/// with conditions (clone, signals, open) are added by install_seccomp.
std::vector<int> allowed_calls() {
  return {
      // memory
      SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect), SCMP_SYS(madvise), SCMP_SYS(brk), SCMP_SYS(mremap),
      SCMP_SYS(msync), SCMP_SYS(mincore), SCMP_SYS(membarrier), SCMP_SYS(get_mempolicy), SCMP_SYS(set_mempolicy),
      SCMP_SYS(mbind),
      // threads and scheduling
      SCMP_SYS(futex), SCMP_SYS(futex_waitv), SCMP_SYS(set_robust_list), SCMP_SYS(get_robust_list),
      SCMP_SYS(rseq), SCMP_SYS(set_tid_address), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
      SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_getparam), SCMP_SYS(sched_getscheduler),
      SCMP_SYS(sched_get_priority_max), SCMP_SYS(sched_get_priority_min), SCMP_SYS(sched_getattr),
      SCMP_SYS(getpriority), SCMP_SYS(arch_prctl), SCMP_SYS(prctl), SCMP_SYS(getcpu),
      // identity
      SCMP_SYS(gettid), SCMP_SYS(getpid), SCMP_SYS(getppid), SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
      SCMP_SYS(getegid), SCMP_SYS(getresuid), SCMP_SYS(getresgid), SCMP_SYS(getgroups), SCMP_SYS(getpgrp),
      SCMP_SYS(getpgid), SCMP_SYS(getsid), SCMP_SYS(capget),
      // clocks and timers
      SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
      SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(times), SCMP_SYS(getitimer), SCMP_SYS(setitimer),
      SCMP_SYS(alarm), SCMP_SYS(timer_create), SCMP_SYS(timer_settime), SCMP_SYS(timer_gettime),
      SCMP_SYS(timer_getoverrun), SCMP_SYS(timer_delete),
      // descriptors the worker holds: reading, writing, waiting
      SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(preadv), SCMP_SYS(preadv2), SCMP_SYS(write),
      SCMP_SYS(pwrite64), SCMP_SYS(writev), SCMP_SYS(pwritev), SCMP_SYS(pwritev2), SCMP_SYS(lseek),
      SCMP_SYS(close), SCMP_SYS(close_range), SCMP_SYS(dup), SCMP_SYS(dup2), SCMP_SYS(dup3), SCMP_SYS(fcntl),
      SCMP_SYS(fsync), SCMP_SYS(fdatasync), SCMP_SYS(ftruncate), SCMP_SYS(fallocate), SCMP_SYS(fadvise64),
      SCMP_SYS(pipe), SCMP_SYS(pipe2), SCMP_SYS(eventfd2), SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(select),
      SCMP_SYS(pselect6), SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait),
      SCMP_SYS(epoll_pwait), SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(shutdown), SCMP_SYS(getsockopt),
      // the file system, by name, for reading
      SCMP_SYS(fstat), SCMP_SYS(stat), SCMP_SYS(lstat), SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(statfs),
      SCMP_SYS(fstatfs), SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(readlink),
      SCMP_SYS(readlinkat), SCMP_SYS(getdents64), SCMP_SYS(getcwd), SCMP_SYS(chdir), SCMP_SYS(fchdir),
      SCMP_SYS(umask),
      // signals (kill and friends: install_seccomp)
      SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
      SCMP_SYS(rt_sigpending), SCMP_SYS(rt_sigsuspend), SCMP_SYS(rt_sigtimedwait), SCMP_SYS(pause),
      // the process: ending, reaping (PID 1 reaps what the kernel started), limits, facts
      SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(wait4), SCMP_SYS(waitid), SCMP_SYS(getrusage),
      SCMP_SYS(getrlimit), SCMP_SYS(setrlimit), SCMP_SYS(prlimit64), SCMP_SYS(getrandom), SCMP_SYS(sysinfo),
      SCMP_SYS(uname),
  };
}

/// Calls that change the file system by name: refused where no read-only file
/// system stands in; with one, they work on the scratch /tmp only (EROFS elsewhere).
constexpr int kFsChanges[] = {SCMP_SYS(creat),    SCMP_SYS(openat2),   SCMP_SYS(unlink),    SCMP_SYS(unlinkat),
                              SCMP_SYS(rename),   SCMP_SYS(renameat),  SCMP_SYS(renameat2), SCMP_SYS(mkdir),
                              SCMP_SYS(mkdirat),  SCMP_SYS(rmdir),     SCMP_SYS(truncate),  SCMP_SYS(chmod),
                              SCMP_SYS(fchmodat), SCMP_SYS(chown),     SCMP_SYS(lchown),    SCMP_SYS(fchownat),
                              SCMP_SYS(link),     SCMP_SYS(linkat),    SCMP_SYS(symlink),   SCMP_SYS(symlinkat),
                              SCMP_SYS(mknod),    SCMP_SYS(mknodat),   SCMP_SYS(utimes),    SCMP_SYS(utimensat)};

/// The filter. Strict profile: an allow-list, everything else EPERM. Other
/// profiles: everything allowed but what reaches outside the worker. Either
/// way a refusal is EPERM (ENOSYS for clone3), never a kill, so a kernel that
/// tries is observed failing rather than crashed.
bool install_seccomp(const SandboxProfile& p, std::uint32_t bits, pid_t self, bool* allow_list_enforced,
                     std::string* why) {
  const std::uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  const bool log = p.allow_list && seccomp_log_mode();
  const std::uint32_t fallthrough = !p.allow_list ? SCMP_ACT_ALLOW : log ? SCMP_ACT_LOG : deny;
  scmp_filter_ctx ctx = seccomp_init(fallthrough);
  if (!ctx) {
    errno = ENOMEM;
    append_why(why, "seccomp_init");
    return false;
  }
  // A syscall of another ABI (int 0x80, x32) is refused as well.
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny);
  int rc = 0;
  auto note = [&](int r) {
    if (r != 0 && rc == 0) rc = r;
  };
  // A rule whose action is the filter's default is redundant (libseccomp refuses it).
  auto refuse = [&](int nr) {
    if (nr >= 0 && fallthrough != deny) note(seccomp_rule_add(ctx, deny, nr, 0));
  };
  auto refuse_if = [&](int nr, scmp_arg_cmp cmp) {
    if (nr >= 0 && fallthrough != deny) note(seccomp_rule_add(ctx, deny, nr, 1, cmp));
  };
  auto allow = [&](int nr) {
    if (nr >= 0) note(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0));
  };
  auto allow_if = [&](int nr, scmp_arg_cmp cmp) {
    if (nr >= 0) note(seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, cmp));
  };
  constexpr unsigned kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;
  const bool fs_guarded = p.allow_writes || (bits & kReadOnlyFs);
  const auto me = static_cast<scmp_datum_t>(self);
  constexpr int kSignalling[] = {SCMP_SYS(kill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo),
                                 SCMP_SYS(rt_tgsigqueueinfo)};

  if (p.allow_list) {
    for (int nr : allowed_calls()) allow(nr);
    // Threads, not processes: clone only with CLONE_THREAD. clone3 passes its
    // flags in memory the filter cannot read; ENOSYS makes glibc fall back to clone.
    allow_if(SCMP_SYS(clone), SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    note(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0));
    // Signals: anywhere in the worker's own PID namespace; without one, only
    // to the worker itself.
    for (int nr : kSignalling) {
      if (bits & kPidNs) allow(nr);
      else allow_if(nr, SCMP_A0_32(SCMP_CMP_EQ, me));
    }
    // Opening: read-only, unless a read-only file system stands in (then
    // writes reach the scratch /tmp only).
    if (fs_guarded) {
      allow(SCMP_SYS(open));
      allow(SCMP_SYS(openat));
      for (int nr : kFsChanges)
        if (nr != SCMP_SYS(openat2)) allow(nr);  // openat2's flags are in memory: never
    } else {
      allow_if(SCMP_SYS(open), SCMP_A1_32(SCMP_CMP_MASKED_EQ, kWriteFlags, 0));
      allow_if(SCMP_SYS(openat), SCMP_A2_32(SCMP_CMP_MASKED_EQ, kWriteFlags, 0));
    }
  }

  // The explicit refusals: the whole filter on a default-allow profile; on an
  // allow-list in log mode, what must stay refused while the rest is logged.
  // Reading or writing another process, stealing its descriptors, or
  // changing what the kernel is allowed.
  for (int nr : {SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(kcmp),
                 SCMP_SYS(pidfd_getfd), SCMP_SYS(pidfd_send_signal), SCMP_SYS(tkill)})
    refuse(nr);
  // io_uring performs opens and connects the filter never sees; bpf, perf and
  // userfaultfd are kernel attack surface no compute kernel needs.
  for (int nr : {SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register), SCMP_SYS(bpf),
                 SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(keyctl), SCMP_SYS(add_key),
                 SCMP_SYS(request_key)})
    refuse(nr);
  // The sandbox itself: no leaving the namespaces or the process group, no mounts.
  for (int nr : {SCMP_SYS(unshare), SCMP_SYS(setns), SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root),
                 SCMP_SYS(chroot), SCMP_SYS(mount_setattr), SCMP_SYS(move_mount), SCMP_SYS(open_tree),
                 SCMP_SYS(fsopen), SCMP_SYS(fsmount), SCMP_SYS(fsconfig), SCMP_SYS(fspick), SCMP_SYS(setsid),
                 SCMP_SYS(setpgid), SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at),
                 SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module), SCMP_SYS(kexec_load),
                 SCMP_SYS(kexec_file_load), SCMP_SYS(reboot), SCMP_SYS(swapon), SCMP_SYS(swapoff),
                 SCMP_SYS(acct)})
    refuse(nr);
  if (p.refuse_sockets || p.allow_list) {
    refuse(SCMP_SYS(socket));
    refuse(SCMP_SYS(connect));
  }
  if (p.allow_list) {
    // Log mode: processes stay refused too (clone without CLONE_THREAD, fork, exec).
    refuse_if(SCMP_SYS(clone), SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    for (int nr : {SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat)}) refuse(nr);
  } else {
    if (!(bits & kPidNs)) {
      // Without a PID namespace kc is visible: signals go to the worker itself and nowhere else.
      for (int nr : kSignalling) refuse_if(nr, SCMP_A0_32(SCMP_CMP_NE, me));
    }
    if (!fs_guarded) {
      // No read-only file system stands in: refuse opening for writing, and
      // every call that changes the file system by name.
      for (unsigned flag : {unsigned{O_WRONLY}, unsigned{O_RDWR}, unsigned{O_CREAT}, unsigned{O_TRUNC}}) {
        refuse_if(SCMP_SYS(open), SCMP_A1_32(SCMP_CMP_MASKED_EQ, flag, flag));
        refuse_if(SCMP_SYS(openat), SCMP_A2_32(SCMP_CMP_MASKED_EQ, flag, flag));
      }
      for (int nr : kFsChanges) refuse(nr);
    }
  }
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    errno = -rc;
    append_why(why, "seccomp filter");
    return false;
  }
  *allow_list_enforced = p.allow_list && !log;
  if (log && why) {
    if (!why->empty()) *why += "; ";
    *why += "seccomp allow-list in log mode (KC_SECCOMP_LOG): calls outside it are logged, not refused";
  }
  return true;
}
#endif

}  // namespace

const SandboxProfile& sandbox_profile(std::string_view name) {
  for (const auto& p : kProfiles)
    if (p.name == name) return p;
  return kProfiles[0];
}

bool seccomp_built() {
#if defined(KC_HAVE_SECCOMP)
  return true;
#else
  return false;
#endif
}

bool seccomp_log_mode() {
  const char* v = std::getenv("KC_SECCOMP_LOG");
  return v && *v && std::strcmp(v, "0") != 0;
}

std::uint32_t wanted_bits(const SandboxProfile& p) {
  std::uint32_t b = kPidNs | kMountNs | kIpcNs | kOwnProc | kNoNewPrivs | kNoCapabilities | kSeccomp;
  if (p.allow_list) b |= kAllowList;
  if (p.private_network) b |= kNetNs;
  if (p.read_only_fs) b |= kReadOnlyFs | kUnprivileged;
  return b;
}

std::string describe_missing(std::uint32_t wanted, std::uint32_t got) {
  std::string s;
  for (const auto& n : kBitNames) {
    if (!(wanted & n.bit) || (got & n.bit)) continue;
    if (n.bit == kAllowList && !(got & kSeccomp)) continue;  // "no seccomp filter" says it
    if (!s.empty()) s += ", ";
    s += n.name;
  }
  return s;
}

namespace {

/// For tests and for hosts where namespaces misbehave: the fallback on demand.
bool namespaces_turned_off(std::string* why) {
  const char* off = std::getenv("KC_ISOLATE_NO_NAMESPACES");
  if (!off || !*off || std::strcmp(off, "0") == 0) return false;
  if (why) *why = "namespaces: turned off by KC_ISOLATE_NO_NAMESPACES";
  return true;
}

/// kc's own PID namespace, opened once (close-on-exec; a worker closes it).
int own_pid_namespace_fd() {
  static const int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  return fd;
}

}  // namespace

bool pid_namespace_for_next_child(std::string* why) {
  if (namespaces_turned_off(why)) return false;
  // Without a way back, the thread's later children would all land in the
  // worker's namespace, dead once the worker ends.
  if (own_pid_namespace_fd() < 0) {
    append_why(why, "open /proc/self/ns/pid");
    return false;
  }
  if (unshare(CLONE_NEWPID) == 0) return true;
  append_why(why, "unshare(CLONE_NEWPID)");
  return false;
}

bool own_pid_namespace_for_children() { return setns(own_pid_namespace_fd(), CLONE_NEWPID) == 0; }

std::uint32_t unshare_other_namespaces(const SandboxProfile& p, std::string* why) {
  int flags = CLONE_NEWNS | CLONE_NEWIPC;
  std::uint32_t bits = kMountNs | kIpcNs;
  if (p.private_network) {
    flags |= CLONE_NEWNET;
    bits |= kNetNs;
  }
  if (unshare(flags) == 0) return kPidNs | bits;
  append_why(why, "unshare(CLONE_NEWNS|CLONE_NEWIPC|CLONE_NEWNET)");
  return kPidNs;
}

std::uint32_t unshare_namespaces(const SandboxProfile& p, std::string* why) {
  if (namespaces_turned_off(why)) return 0;
  int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC;
  std::uint32_t bits = kPidNs | kMountNs | kIpcNs;
  if (p.private_network) {
    flags |= CLONE_NEWNET;
    bits |= kNetNs;
  }
  if (unshare(flags) == 0) return bits;
  append_why(why, "unshare(CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWIPC|CLONE_NEWNET)");
  return 0;
}

std::uint32_t set_up_mounts(const SandboxProfile& p, std::uint32_t bits, std::int64_t scratch_bytes,
                            std::string* why) {
  if (!(bits & kMountNs)) return bits;
  // Nothing mounted here propagates back to kc's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    append_why(why, "mount --make-rprivate /");
    return bits;
  }
  if (p.read_only_fs) {
    struct {
      std::uint64_t attr_set, attr_clr, propagation, userns_fd;
    } attr{MOUNT_ATTR_RDONLY, 0, 0, 0};
    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr) != 0) {
      append_why(why, "mount_setattr(/, AT_RECURSIVE, MOUNT_ATTR_RDONLY)");
    } else {
      // The kernel's scratch directory: a private, size-limited /tmp.
      const std::string opts = "size=" + std::to_string(std::max<std::int64_t>(scratch_bytes, 1 << 20)) +
                               ",mode=1777";
      if (mount("kc-scratch", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
        append_why(why, "mount tmpfs /tmp");
      bits |= kReadOnlyFs;
    }
  }
  const unsigned long proc_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (p.read_only_fs ? MS_RDONLY : 0);
  if (mount("proc", "/proc", "proc", proc_flags, nullptr) == 0) bits |= kOwnProc;
  else append_why(why, "mount proc /proc");
  return bits;
}

std::uint32_t lock_down(const SandboxProfile& p, std::uint32_t bits, pid_t self, std::string* why) {
  // The bounding set first: dropping it needs CAP_SETPCAP, gone after setuid.
  for (int cap = 0; cap <= 63; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (p.read_only_fs && geteuid() == 0) {
    // nobody: kc's files, kc's /proc entries and root-owned devices are
    // out of reach by plain permissions too.
    constexpr uid_t kNobody = 65534;
    if (setgroups(0, nullptr) == 0 && setresgid(kNobody, kNobody, kNobody) == 0 &&
        setresuid(kNobody, kNobody, kNobody) == 0)
      bits |= kUnprivileged;
    else
      append_why(why, "setresuid(nobody)");
  }
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capset, &hdr, data) == 0) {
    bits |= kNoCapabilities;
  } else {
    // A capset that fails (an old kernel) still leaves an unprivileged user without capabilities.
    append_why(why, "capset(empty)");
    if (syscall(SYS_capget, &hdr, data) == 0 && data[0].effective == 0 && data[0].permitted == 0 &&
        data[1].effective == 0 && data[1].permitted == 0)
      bits |= kNoCapabilities;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) bits |= kNoNewPrivs;
  else append_why(why, "prctl(PR_SET_NO_NEW_PRIVS)");
#if defined(KC_HAVE_SECCOMP)
  bool allow_list = false;
  if (install_seccomp(p, bits, self, &allow_list, why)) {
    bits |= kSeccomp;
    if (allow_list) bits |= kAllowList;
  }
#else
  (void)self;
  if (why) {
    if (!why->empty()) *why += "; ";
    *why += "seccomp: kc was built without libseccomp";
  }
#endif
  return bits;
}

namespace {

/// Signals whose default action ends a process. PID 1 of a namespace ignores
/// them when sent from inside (abort()'s raise(SIGABRT)); there each gets a
/// handler that records it, so the probe child can die the way PID 1 meant to.
constexpr int kProbeDeadlySignals[] = {SIGABRT, SIGTERM, SIGINT,  SIGHUP,    SIGQUIT, SIGUSR1, SIGUSR2,
                                       SIGALRM, SIGPIPE, SIGTRAP, SIGFPE,    SIGILL,  SIGSYS,  SIGXCPU,
                                       SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR,  SIGSTKFLT};
volatile sig_atomic_t* g_probe_signal = nullptr;

void on_probe_signal(int sig) {
  if (g_probe_signal) *g_probe_signal = sig;
  _exit(125);
}

[[noreturn]] void die_by(int sig) {
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(125);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

[[maybe_unused]] const bool kChildSandboxSet = (kc::set_child_sandbox(&run_sandboxed), true);

}  // namespace

Result<std::string> run_sandboxed(const std::function<Result<std::string>()>& fn) {
  const SandboxProfile& p = sandbox_profile("strict");
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a library aborting while it loads is data, not a core file
  kc::pin_library_files();
  const pid_t parent = getppid();
  std::string why;
  const std::uint32_t ns = unshare_namespaces(p, &why);
  if (!(ns & kPidNs)) {
    lock_down(p, ns, getpid(), &why);
    // The uid change cleared the parent-death signal: set it again.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    return fn();
  }
  void* shared = mmap(nullptr, sizeof(sig_atomic_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return internal_error(errno_text("mmap"));
  auto* killed_by = static_cast<volatile sig_atomic_t*>(shared);
  *killed_by = 0;
  int fds[2], life[2];  // life: closed by this process's death, seen by PID 1
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(life, O_CLOEXEC) != 0) return internal_error(errno_text("pipe"));
  const pid_t k = fork();
  if (k < 0) return internal_error(errno_text("fork into the probe's PID namespace"));
  if (k == 0) {
    close(fds[0]);
    close(life[1]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setsid();  // kill(0, ...) stays inside the namespace
    g_probe_signal = killed_by;
    struct sigaction die {};
    die.sa_handler = on_probe_signal;
    sigemptyset(&die.sa_mask);
    for (int sig : kProbeDeadlySignals) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) sigaction(sig, &die, nullptr);
    }
    const std::uint32_t bits = set_up_mounts(p, ns, std::int64_t{64} << 20, &why);
    if (bits & kReadOnlyFs) setenv("TMPDIR", "/tmp", 1);
    lock_down(p, bits, getpid(), &why);
    // The uid change cleared the parent-death signal: set it again, then make
    // sure the parent did not die before (its end of `life` is then closed).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pollfd alive{life[0], POLLIN, 0};
    if (poll(&alive, 1, 0) != 0) _exit(125);
    const Result<std::string> r = fn();
    std::fflush(nullptr);
    std::string out(1, static_cast<char>(r.ok() ? 0 : static_cast<int>(r.status().code())));
    out += r.ok() ? *r : r.status().message();
    for (std::size_t off = 0; off < out.size();) {
      const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  close(life[0]);
  std::string got;
  for (;;) {
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(k, &st, __WALL) < 0)
    if (errno != EINTR) break;
  if (*killed_by > 0) die_by(*killed_by);
  if (WIFSIGNALED(st)) die_by(WTERMSIG(st));
  if (got.empty()) _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 125);
  const int code = static_cast<unsigned char>(got[0]);
  std::string text = got.substr(1);
  if (code == 0) return text;
  if (code > static_cast<int>(StatusCode::kInternal)) return internal_error(text);
  return Status(static_cast<StatusCode>(code), text);
}

}  // namespace kc::isolate::detail
