// kc — the wire protocol between the mpi backend (in kc) and kc-mpi-worker
// (an MPI program that mpirun starts). Shared by both sides; plain C++ with no
// MPI or kc headers, so kc never includes mpi.h.
//
// kc listens on a Unix socket; rank 0 of the worker job connects to it. Each
// request is a RequestHeader followed by ranks * n floats (row r = rank r's
// buffer); each reply is a ReplyHeader followed by `count` floats (row r =
// what rank r ends with) or, when status != 0, `count` bytes of error text.
// Native byte order: both ends run on this machine.
#pragma once

#include <cstdint>

namespace kc::mpi_wire {

inline constexpr std::uint32_t kMagic = 0x4b434d50;  // "KCMP"

enum class Collective : std::int32_t { kShutdown = 0, kAllReduce = 1, kReduceScatter = 2, kAllGather = 3 };
enum class WireType : std::int32_t { kFloat = 0, kDouble = 1 };

struct RequestHeader {
  std::uint32_t magic = kMagic;
  std::int32_t collective = 0;  ///< a Collective
  std::int32_t ranks = 0;       ///< K: the request runs on ranks 0..K-1 of the job
  std::int32_t n = 0;           ///< elements per rank buffer
  std::int32_t algorithm = 0;   ///< coll_tuned_<collective>_algorithm; 0 = the fixed decision rules
  std::int32_t wire = 0;        ///< a WireType: the MPI datatype the collective runs on
};

struct ReplyHeader {
  std::uint32_t magic = kMagic;
  std::int32_t status = 0;  ///< 0 = ok; otherwise an MPI error class, or -1 for a bad request
  std::int64_t count = 0;   ///< floats (ok) or bytes of error text (not ok) that follow
};

}  // namespace kc::mpi_wire
