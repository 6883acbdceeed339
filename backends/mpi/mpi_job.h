// kc — one long-lived mpirun job running kc-mpi-worker, and kc's end of its
// socket (protocol.h). The mpi backend's impls share one job: starting
// mpirun costs ~0.5-2 s on this machine, a collective a few milliseconds, so
// a grade run pays for one launch (two if a call needs more ranks than the
// job has), not one per call.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kc/status.h"
#include "backends/mpi/protocol.h"

namespace kc::backends::mpi {

struct JobOptions {
  std::string mpirun;       ///< path of mpirun
  std::string worker;       ///< path of kc-mpi-worker
  int world = 32;           ///< ranks started (at least the largest K asked for)
  double timeout_s = 120;   ///< per request; a hung collective kills the job
  double start_timeout_s = 120;
  bool verbose = false;     ///< one message per launch, kc::say (KC_MPI_VERBOSE)
};

/// The mpirun command line for a job of `world` ranks serving `socket_path`.
std::vector<std::string> mpirun_argv(const JobOptions& options, int world, const std::string& socket_path);

class Job {
 public:
  explicit Job(JobOptions options) : options_(std::move(options)) {}
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  /// Runs one collective over `ranks` buffers of `n` floats (row r = rank r)
  /// and returns what every rank ended with (row r = rank r). Starts the job
  /// on first use, and again with more ranks when `ranks` exceeds it. An MPI
  /// error is kKernelRaised; a job that dies or hangs is kCrashed /
  /// kDeadlineExceeded with the tail of mpirun's output (and the job is gone:
  /// the next call starts a fresh one).
  Result<std::vector<float>> run(mpi_wire::Collective collective, int ranks, int n, int algorithm,
                                 mpi_wire::WireType wire, std::span<const float> in);

  /// Ends the job (if one runs) the way the destructor does: a shutdown
  /// request, then a wait for every rank to finalize. Not OK when mpirun did
  /// not exit with status 0 (with its output), e.g. a rank that crashed in
  /// MPI_Finalize.
  Status shutdown();

  int launches() const { return launches_; }
  double launch_seconds() const { return launch_seconds_; }

 private:
  Status start(int world);
  /// Ends the job; returns what went wrong on the way out (empty: mpirun exited 0).
  std::string stop(bool graceful);
  std::string log_tail() const;
  Status fail(StatusCode code, const std::string& what);

  JobOptions options_;
  std::mutex mu_;
  pid_t pid_ = -1;
  int fd_ = -1;
  int world_ = 0;
  std::string dir_;
  int launches_ = 0;
  double launch_seconds_ = 0;
};

}  // namespace kc::backends::mpi
