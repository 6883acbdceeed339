// kc — what an impl states about itself (docs/language.md).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/dtype.h"
#include "kc/enum_table.h"

namespace kc {

enum class Determinism { kBitwise, kRunToRun, kNone };
/// RUN_TO_RUN: every invocation on identical inputs agrees with the first
/// within this relative difference, |a - b| <= 1e-7 max(|a|, |b|) (the
/// paper's definition of the class; NaN agrees with NaN, +0 with -0).
constexpr double kRunToRunRelative = 1e-7;
/// Whether two results of repeated invocations agree under a determinism class
/// (BITWISE: identical bits in format t; RUN_TO_RUN: within kRunToRunRelative; NONE: always).
bool runs_agree(double a, double b, DType t, Determinism d);
enum class NanPolicy { kIeeePropagate, kMask, kRaise };
enum class DenormalPolicy { kIeee, kFtz, kDaz, kFtzDaz };
enum class OobPolicy { kRaise, kClamp, kZero, kUndefined };

std::span<const EnumEntry<Determinism>> determinism_table();
std::span<const EnumEntry<NanPolicy>> nan_policy_table();
std::span<const EnumEntry<DenormalPolicy>> denormal_policy_table();
std::span<const EnumEntry<OobPolicy>> oob_policy_table();

/// What an impl's backend states about its runtime, for the worker that runs
/// it (kc/isolate.h, docs/isolation.md). The backend sets it on every
/// declaration it makes; the default is host code that survives fork().
/// Texts have static storage (string literals).
struct RuntimeTraits {
  bool survives_fork = true;   ///< usable in a child forked after the parent initialised it
  bool runs_on_host = true;    ///< kernels run on this CPU, so host peaks bound their time
  std::string_view note;       ///< why not, with the source
  /// The worker's sandbox profile (docs/isolation.md): "strict" unless the
  /// runtime needs more ("opencl", "cuda", "mpi").
  std::string_view sandbox = "strict";
  /// The compute capability of the CUDA device the kernels run on, as the
  /// backend found it (major * 10 + minor: 90 for sm_90); 0: none known.
  int device_cc = 0;
};

/// The declaration keys an impl may state, in `declares key = VALUE` form.
/// Keys: accumulator, determinism, nan, denormal, oob, plus free-form extras.
struct Declaration {
  std::string name;     ///< impl name: "openblas.sgemm", "calib.matmul_fp16acc"
  std::string op;       ///< op it implements: "matmul"
  std::string backend;  ///< backend family: "openblas"
  std::vector<DType> dtypes;                 ///< supported input/output dtypes
  std::optional<DType> accumulator;          ///< declared accumulator precision
  Determinism determinism = Determinism::kBitwise;
  NanPolicy nan = NanPolicy::kIeeePropagate;
  DenormalPolicy denormal = DenormalPolicy::kIeee;
  OobPolicy oob = OobPolicy::kUndefined;
  std::string shape_class = "any";           ///< "any", "multiple_of(16)", ...
  std::vector<std::string> schedules;        ///< schedule space, if the impl has one
  std::map<std::string, std::string> extra;  ///< other declared key = value pairs
  std::string source;                        ///< documentation the declaration is taken from
  std::string description;                   ///< one line for `kc list impls`
  RuntimeTraits runtime;                     ///< set by the backend, never by declaration text
  /// Why the impl is wrong on purpose (a calibration impl, an incident
  /// replay); empty: it is not. Such an impl is graded or climbs the ladder
  /// only when an --impl filter names it, and arbitrates nothing as an
  /// alternate stack unless named. `declares broken_on_purpose = WHY` sets it
  /// (and keeps it among the extras).
  std::string broken_on_purpose;

  /// Value of a declared key as text ("accumulator" -> "FP32"); empty if not declared.
  std::string get(const std::string& key) const;
  /// Sets a declared key from text; returns false (and leaves *this alone) on an
  /// unknown enum value, writing the allowed values into *error.
  bool set(const std::string& key, const std::string& value, std::string* error);
};

}  // namespace kc
