// Shards: parsing I/N, reading it from a scheduler's environment, and the split.
#include "kc/shard.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "kc/diff.h"

namespace kc::shard {

namespace {

/// A non-negative decimal integer, all of `s`.
std::optional<long long> whole_number(std::string_view s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

Result<Shard> make(long long index, long long count, std::string source) {
  if (count < 1 || count > 100000)
    return invalid_argument(source + ": the shard count must be in [1, 100000], not " + std::to_string(count));
  if (index < 0 || index >= count)
    return invalid_argument(source + ": shard index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(count - 1) + "] (shards are numbered from 0)");
  Shard s;
  s.index = static_cast<int>(index);
  s.count = static_cast<int>(count);
  s.source = std::move(source);
  return s;
}

}  // namespace

Result<Shard> parse(std::string_view text) {
  const std::size_t slash = text.find('/');
  const auto i = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(0, slash));
  const auto n = slash == std::string_view::npos ? std::nullopt : whole_number(text.substr(slash + 1));
  if (!i || !n)
    return invalid_argument("--shard '" + std::string(text) +
                            "': expected I/N, shard I (from 0) of N, e.g. 0/4; or 'auto' to read it from "
                            "Slurm, Kubernetes or GoogleTest variables");
  return make(*i, *n, "--shard " + std::string(text));
}

Result<Shard> from_environment(const Getenv& get) {
  auto var = [&](const char* name) -> std::optional<std::string> {
    const char* v = get(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  auto number = [&](const char* name, long long* out) -> Status {
    const auto v = var(name);
    const auto n = v ? whole_number(*v) : std::nullopt;
    if (!n) return invalid_argument(std::string(name) + "='" + v.value_or("") + "' is not a whole number");
    *out = *n;
    return ok_status();
  };
  long long index = 0, count = 0;
  if (var("GTEST_SHARD_INDEX") || var("GTEST_TOTAL_SHARDS")) {
    KC_RETURN_IF_ERROR(number("GTEST_SHARD_INDEX", &index));
    KC_RETURN_IF_ERROR(number("GTEST_TOTAL_SHARDS", &count));
    KC_ASSIGN_OR_RETURN(Shard s, make(index, count, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS"));
    s.status_file = var("GTEST_SHARD_STATUS_FILE").value_or("");
    return s;
  }
  if (var("SLURM_ARRAY_TASK_ID")) {
    long long id = 0, min = 0;
    KC_RETURN_IF_ERROR(number("SLURM_ARRAY_TASK_ID", &id));
    KC_RETURN_IF_ERROR(number("SLURM_ARRAY_TASK_COUNT", &count));
    if (var("SLURM_ARRAY_TASK_MIN")) KC_RETURN_IF_ERROR(number("SLURM_ARRAY_TASK_MIN", &min));
    // Task ids are the --array range; a stepped or sparse range (1-7:2, 1,5,9)
    // has ids that are not min + 0..count-1, so the index would be wrong.
    if (var("SLURM_ARRAY_TASK_STEP") && var("SLURM_ARRAY_TASK_STEP") != "1")
      return invalid_argument("SLURM_ARRAY_TASK_STEP=" + *var("SLURM_ARRAY_TASK_STEP") +
                              ": kc shards need a contiguous array, e.g. sbatch --array=0-" +
                              std::to_string(count - 1));
    if (var("SLURM_ARRAY_TASK_MAX")) {
      long long max = 0;
      KC_RETURN_IF_ERROR(number("SLURM_ARRAY_TASK_MAX", &max));
      if (max - min + 1 != count)
        return invalid_argument("SLURM_ARRAY_TASK_MIN..MAX = " + std::to_string(min) + ".." + std::to_string(max) +
                                " holds " + std::to_string(max - min + 1) + " ids but SLURM_ARRAY_TASK_COUNT is " +
                                std::to_string(count) + ": kc shards need a contiguous array, e.g. --array=0-" +
                                std::to_string(count - 1));
    }
    return make(id - min, count, "SLURM_ARRAY_TASK_ID");
  }
  if (var("JOB_COMPLETION_INDEX")) {
    KC_RETURN_IF_ERROR(number("JOB_COMPLETION_INDEX", &index));
    if (!var("KC_SHARD_COUNT"))
      return invalid_argument(
          "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but KC_SHARD_COUNT is not: pass the Job's "
          "completions to the pod as KC_SHARD_COUNT (deploy/k8s/kc-shards.yaml does)");
    KC_RETURN_IF_ERROR(number("KC_SHARD_COUNT", &count));
    return make(index, count, "JOB_COMPLETION_INDEX");
  }
  if (var("KC_SHARD_INDEX") || var("KC_SHARD_COUNT")) {
    KC_RETURN_IF_ERROR(number("KC_SHARD_INDEX", &index));
    KC_RETURN_IF_ERROR(number("KC_SHARD_COUNT", &count));
    return make(index, count, "KC_SHARD_INDEX/KC_SHARD_COUNT");
  }
  return invalid_argument(
      "--shard auto: no shard in the environment; looked for GTEST_SHARD_INDEX + GTEST_TOTAL_SHARDS, "
      "SLURM_ARRAY_TASK_ID + SLURM_ARRAY_TASK_COUNT, JOB_COMPLETION_INDEX + KC_SHARD_COUNT, and "
      "KC_SHARD_INDEX + KC_SHARD_COUNT; give --shard I/N instead");
}

Result<Shard> from_environment() {
  return from_environment([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

std::vector<int> assign(const std::vector<double>& durations, int count) {
  const std::size_t n = durations.size();
  std::vector<int> owner(n, 0);
  if (count <= 1) return owner;
  std::vector<double> known;
  for (double d : durations)
    if (d >= 0) known.push_back(d);
  if (known.empty()) {
    for (std::size_t i = 0; i < n; ++i) owner[i] = static_cast<int>(i % static_cast<std::size_t>(count));
    return owner;
  }
  std::sort(known.begin(), known.end());
  const double median = known[known.size() / 2];
  std::vector<double> d(durations);
  for (double& x : d)
    if (x < 0) x = median;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return d[a] > d[b]; });
  std::vector<double> load(static_cast<std::size_t>(count), 0.0);
  for (std::size_t i : order) {
    const auto least = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = static_cast<int>(least);
    load[least] += d[i];
  }
  return owner;
}

Result<std::map<std::string, double>> read_durations(const std::string& record_path) {
  KC_ASSIGN_OR_RETURN(const report::RunRecord r, report::read_record(record_path));
  std::map<std::string, double> out;
  for (const auto& c : r.cases)
    if (c.seconds >= 0) out[c.key()] = c.seconds;
  return out;
}

}  // namespace kc::shard
