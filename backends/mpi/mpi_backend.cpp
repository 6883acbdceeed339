// kc — the mpi backend (see mpi_backend.h, docs/backends/mpi.md).
//
// Declarations, and where they come from:
//   accumulator FP32   MPI_SUM over MPI_FLOAT combines in the datatype given
//                      (MPI-3.1 §5.9.2, "Predefined Reduction Operations"); Open
//                      MPI's operator is `out = in + out` in float
//                      (ompi/mca/op/base/op_base_functions.c, sum over float).
//                      The .f64wire impl runs on MPI_DOUBLE: FP64.
//   determinism        BITWISE. MPI-3.1 §5.9.1, advice to implementors: "It is
//                      strongly recommended that MPI_REDUCE be implemented so that
//                      the same result be obtained whenever the function is applied
//                      on the same arguments, appearing in the same order"
//                      (MPI_ALLREDUCE and MPI_REDUCE_SCATTER are defined through
//                      it, §5.9.6, §5.10). coll/tuned's algorithms are fixed message
//                      schedules for a given (ranks, count, algorithm), and receive
//                      from named peers, so Open MPI follows the advice; the order
//                      does change with K and with the algorithm, which is what
//                      C-ORD-03 bounds.
//   nan                IEEE_PROPAGATE: MPI_SUM is IEEE addition (the C `+` above).
//   denormal           IEEE: Open MPI does not touch the FP environment and
//                      Debian builds it without -ffast-math.
//   schedules          the op's schedule label nearest to the algorithm (the
//                      label only names the impl's order for the matrix; the
//                      algorithm is the impl's own, fixed). For the fixed
//                      decision rules, the label of what they ran here at
//                      n = 1024 (docs/backends/mpi.md: all_reduce's results match
//                      recursive doubling bit for bit at K = 2..32, reduce_scatter's
//                      recursive halving at K = 4..16).
// Algorithm numbers: `ompi_info --param coll tuned --level 9` on Open MPI 4.1.4
// (coll_tuned_allreduce_algorithm: 1 basic linear, 2 nonoverlapping (tuned
// reduce + tuned bcast), 3 recursive doubling, 4 ring, 5 segmented ring,
// 6 rabenseifner; coll_tuned_reduce_scatter_algorithm: 1 non-overlapping
// (Reduce + Scatterv), 2 recursive halving, 3 ring, 4 butterfly;
// coll_tuned_allgather_algorithm: 1 linear, 2 bruck, 3 recursive doubling,
// 4 ring, 5 neighbor exchange, 6 two proc only). 0 = the fixed decision rules
// (coll_tuned_decision_fixed.c): the path a default `mpirun` takes.
// Left out: allreduce 5 (segmented ring with segment size 0, the default, is
// the ring: same order, same bits) and allgather 6 (two ranks only; Open MPI
// returns MPI_ERR_UNSUPPORTED_OPERATION for any other K).
#include "backends/mpi/mpi_backend.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/mpi/mpi_job.h"

extern char** environ;

namespace kc::backends {
namespace {

namespace fs = std::filesystem;
using mpi::Job;
using mpi_wire::Collective;
using mpi_wire::WireType;

constexpr const char* kSource =
    "MPI-3.1 §5.9.1-5.9.2, §5.9.6, §5.10 (reduction order advice, MPI_SUM, MPI_ALLREDUCE, "
    "MPI_REDUCE_SCATTER); Open MPI 4.1 `ompi_info --param coll tuned --level 9` (algorithm "
    "numbers); ompi/mca/op/base/op_base_functions.c (MPI_SUM on MPI_FLOAT in float)";

struct Algorithm {
  const char* op;          ///< kc op
  Collective collective;
  int number;              ///< coll_tuned_<collective>_algorithm
  const char* suffix;      ///< impl name suffix ("" = the default decision rules)
  const char* schedule;    ///< op schedule label
  WireType wire;
  const char* description;
};

// One row per impl: the algorithms coll/tuned can be forced to (see the header comment).
constexpr Algorithm kAlgorithms[] = {
    {"all_reduce", Collective::kAllReduce, 0, "", "recursive_doubling", WireType::kFloat,
     "MPI_Allreduce(MPI_FLOAT, MPI_SUM), Open MPI's fixed decision rules"},
    {"all_reduce", Collective::kAllReduce, 1, ".basic_linear", "tree", WireType::kFloat,
     "MPI_Allreduce, basic linear (linear reduce to rank 0 + bcast)"},
    {"all_reduce", Collective::kAllReduce, 2, ".nonoverlapping", "tree", WireType::kFloat,
     "MPI_Allreduce, nonoverlapping (tuned reduce + tuned bcast)"},
    {"all_reduce", Collective::kAllReduce, 3, ".recursive_doubling", "recursive_doubling", WireType::kFloat,
     "MPI_Allreduce, recursive doubling"},
    {"all_reduce", Collective::kAllReduce, 4, ".ring", "ring", WireType::kFloat, "MPI_Allreduce, ring"},
    {"all_reduce", Collective::kAllReduce, 6, ".rabenseifner", "recursive_doubling", WireType::kFloat,
     "MPI_Allreduce, Rabenseifner (recursive-halving reduce-scatter + recursive-doubling allgather)"},
    {"all_reduce", Collective::kAllReduce, 0, ".f64wire", "recursive_doubling", WireType::kDouble,
     "MPI_Allreduce on MPI_DOUBLE (FP32 data widened, one rounding back), fixed decision rules"},
    {"reduce_scatter", Collective::kReduceScatter, 0, "", "recursive_doubling", WireType::kFloat,
     "MPI_Reduce_scatter(MPI_FLOAT, MPI_SUM), Open MPI's fixed decision rules"},
    {"reduce_scatter", Collective::kReduceScatter, 1, ".non_overlapping", "tree", WireType::kFloat,
     "MPI_Reduce_scatter, non-overlapping (reduce + scatterv)"},
    {"reduce_scatter", Collective::kReduceScatter, 2, ".recursive_halving", "recursive_doubling",
     WireType::kFloat, "MPI_Reduce_scatter, recursive halving"},
    {"reduce_scatter", Collective::kReduceScatter, 3, ".ring", "ring", WireType::kFloat,
     "MPI_Reduce_scatter, ring"},
    {"reduce_scatter", Collective::kReduceScatter, 4, ".butterfly", "recursive_doubling", WireType::kFloat,
     "MPI_Reduce_scatter, butterfly"},
    {"all_gather", Collective::kAllGather, 0, "", "tree", WireType::kFloat,
     "MPI_Allgather(MPI_FLOAT), Open MPI's fixed decision rules"},
    {"all_gather", Collective::kAllGather, 1, ".linear", "tree", WireType::kFloat, "MPI_Allgather, linear"},
    {"all_gather", Collective::kAllGather, 2, ".bruck", "recursive_doubling", WireType::kFloat,
     "MPI_Allgather, Bruck"},
    {"all_gather", Collective::kAllGather, 3, ".recursive_doubling", "recursive_doubling", WireType::kFloat,
     "MPI_Allgather, recursive doubling (Bruck when K is not a power of two)"},
    {"all_gather", Collective::kAllGather, 4, ".ring", "ring", WireType::kFloat, "MPI_Allgather, ring"},
    {"all_gather", Collective::kAllGather, 5, ".neighbor_exchange", "ring", WireType::kFloat,
     "MPI_Allgather, neighbor exchange (ring when K is odd)"},
};

class MpiImpl final : public Impl {
 public:
  MpiImpl(Declaration decl, const Algorithm& algo, std::shared_ptr<Job> job)
      : decl_(std::move(decl)), algo_(algo), job_(std::move(job)) {}
  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    KC_RETURN_IF_ERROR(Impl::can_implement(call));
    const std::string schedule = call.get("schedule", decl_.schedules.front());
    if (schedule != decl_.schedules.front())
      return unimplemented(decl_.name + " runs one algorithm (schedule " + decl_.schedules.front() + "), not " +
                           schedule);
    return ok_status();
  }

  Status run(Call& call) const override {
    if (!call.has("x") || !call.has("out")) return invalid_argument(decl_.name + ": call has no x / out");
    const Tensor& x = call.t("x");
    if (x.rank() != 2) return invalid_argument(decl_.name + ": x must be {ranks, n}, got " + x.shape_string());
    if (x.dim(0) > 4096 || x.dim(1) > (std::int64_t{1} << 28))
      return unimplemented(decl_.name + ": more ranks or elements than one mpirun job on this machine takes");
    const int ranks = static_cast<int>(x.dim(0)), n = static_cast<int>(x.dim(1));
    std::vector<float> in(static_cast<std::size_t>(x.numel()));
    for (std::int64_t i = 0; i < x.numel(); ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(x.at(i));
    KC_ASSIGN_OR_RETURN(std::vector<float> got,
                        job_->run(algo_.collective, ranks, n, algo_.number, algo_.wire, in));
    Tensor& out = call.t("out");
    if (static_cast<std::int64_t>(got.size()) != out.numel())
      return internal_error(decl_.name + ": kc-mpi-worker returned " + std::to_string(got.size()) +
                            " values for an output of " + std::to_string(out.numel()));
    for (std::int64_t i = 0; i < out.numel(); ++i) out.set(i, got[static_cast<std::size_t>(i)]);
    return ok_status();
  }

 private:
  Declaration decl_;
  Algorithm algo_;
  std::shared_ptr<Job> job_;
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

bool is_executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

std::string find_worker(const std::string& configured) {
  if (!configured.empty()) return configured;
  std::string p = env_or("KC_MPI_WORKER", "");
  if (!p.empty()) return p;
  // Beside kc first (an installed kc's bin/, or the build tree's bin/), then
  // where it was built.
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / "kc-mpi-worker";
    if (is_executable(beside.string())) return beside.string();
  }
#ifdef KC_MPI_WORKER_PATH
  if (is_executable(KC_MPI_WORKER_PATH)) return KC_MPI_WORKER_PATH;
#endif
  return {};
}

std::string find_mpirun(const std::string& configured) {
  if (!configured.empty()) return configured;
  std::string p = env_or("KC_MPIRUN", "");
  if (!p.empty()) return p;
#ifdef KC_MPIRUN_PATH
  if (is_executable(KC_MPIRUN_PATH)) return KC_MPIRUN_PATH;
#endif
  const std::string path = env_or("PATH", "/usr/local/bin:/usr/bin:/bin");
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = path.find(':', start);
    const std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string cand = (dir.empty() ? "." : dir) + "/mpirun";
    if (is_executable(cand)) return cand;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return {};
}

/// The first line `worker --version` prints (Open MPI's library version), or empty.
std::string worker_version(const std::string& worker) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  pid_t pid = -1;
  std::string arg0 = worker, arg1 = "--version";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  const int rc = ::posix_spawn(&pid, worker.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  std::string out;
  if (rc == 0) {
    char buf[256];
    ssize_t got;
    while ((got = ::read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(got));
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out.clear();
  }
  ::close(pipefd[0]);
  if (const auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
  return out;
}

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(MpiBackendOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "mpi"; }

  BackendInfo probe() override {
    BackendInfo info;
    info.name = "mpi";
    info.description = "OpenMPI collectives (all_reduce, reduce_scatter, all_gather) on K real ranks, one impl "
                       "per coll/tuned algorithm";
    worker_ = find_worker(options_.worker);
    mpirun_ = find_mpirun(options_.mpirun);
    if (worker_.empty()) {
      info.reason = "built without MPI (kc-mpi-worker was not built: find_package(MPI) failed at configure time; "
                    "install libopenmpi-dev, or set KC_MPI_WORKER)";
      return info;
    }
    if (!is_executable(worker_)) {
      info.reason = "kc-mpi-worker '" + worker_ + "' is not an executable file";
      return info;
    }
    if (mpirun_.empty() || !is_executable(mpirun_)) {
      info.reason = "no mpirun (not on $PATH; install openmpi-bin, or set KC_MPIRUN)";
      return info;
    }
    info.version = worker_version(worker_);
    if (info.version.empty()) {
      info.reason = "'" + worker_ + " --version' failed (is the MPI library it links installed?)";
      return info;
    }
    world_ = options_.world > 0 ? options_.world : std::atoi(env_or("KC_MPI_RANKS", "32").c_str());
    if (world_ < 1) world_ = 32;
    info.available = true;
    info.reason = mpirun_ + " -np " + std::to_string(world_) + " " + worker_ + " (one job, started on first use)";
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (worker_.empty() || mpirun_.empty()) return {};
    if (!job_) {
      mpi::JobOptions o;
      o.mpirun = mpirun_;
      o.worker = worker_;
      o.world = world_;
      o.verbose = !env_or("KC_MPI_VERBOSE", "").empty();
      job_ = std::make_shared<Job>(std::move(o));
    }
    std::vector<std::shared_ptr<const Impl>> out;
    for (const Algorithm& a : kAlgorithms) {
      Declaration d;
      d.name = std::string("mpi.") + a.op + a.suffix;
      d.op = a.op;
      d.backend = "mpi";
      // The kernel already runs outside kc, in the ranks of the mpirun job kept
      // for the whole kc process (mpi_job.h); a forked worker's exit would end
      // that job with it. The job's own deadline and crash detection stand in
      // for the worker's.
      d.runtime = {false, true, "the mpi backend's collectives run in a separate mpirun job kept across calls",
                   "mpi"};
      d.dtypes = {DType::kF32};
      d.accumulator = a.wire == WireType::kDouble ? DType::kF64 : DType::kF32;
      d.determinism = Determinism::kBitwise;
      d.nan = NanPolicy::kIeeePropagate;
      d.denormal = DenormalPolicy::kIeee;
      d.oob = OobPolicy::kUndefined;
      d.schedules = {a.schedule};
      d.extra["algorithm"] = a.number == 0 ? "fixed decision rules" : std::to_string(a.number);
      d.extra["wire"] = a.wire == WireType::kDouble ? "FP64" : "FP32";
      d.source = kSource;
      d.description = a.description;
      out.push_back(std::make_shared<MpiImpl>(std::move(d), a, job_));
    }
    return out;
  }

 private:
  MpiBackendOptions options_;
  std::string worker_, mpirun_;
  int world_ = 32;
  std::shared_ptr<Job> job_;
};

}  // namespace

namespace mpi {
std::string default_worker() { return find_worker(""); }
std::string default_mpirun() { return find_mpirun(""); }
}  // namespace mpi

std::unique_ptr<Backend> make_mpi_backend(MpiBackendOptions options) {
  return std::make_unique<MpiBackend>(std::move(options));
}

}  // namespace kc::backends
