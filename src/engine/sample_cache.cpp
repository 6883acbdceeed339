#include "engine/sample_cache.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>

namespace kc::engine {

/// Doubles in an anonymous private mapping advised MADV_WIPEONFORK (Linux
/// 4.14): a child forked after they were written reads zeros there.
class SampleCache::Sealed {
 public:
  /// nullptr when the mapping or the advice fails.
  static std::shared_ptr<const Sealed> make(const std::vector<std::vector<double>>& parts) {
    std::shared_ptr<Sealed> s(new Sealed());
    for (const auto& p : parts) {
      s->sizes_.push_back(p.size());
      s->bytes_ += p.size() * sizeof(double);
    }
    if (s->bytes_ == 0) return s;
    void* m = mmap(nullptr, s->bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    s->data_ = m;
    if (madvise(m, s->bytes_, MADV_WIPEONFORK) != 0) return nullptr;  // unmapped by the destructor
    auto* out = static_cast<double*>(m);
    for (const auto& p : parts) {
      if (!p.empty()) std::memcpy(out, p.data(), p.size() * sizeof(double));
      out += p.size();
    }
    return s;
  }
  ~Sealed() {
    if (data_) munmap(data_, bytes_);
  }
  Sealed(const Sealed&) = delete;
  Sealed& operator=(const Sealed&) = delete;

  std::vector<std::vector<double>> values() const {
    std::vector<std::vector<double>> parts;
    const auto* in = static_cast<const double*>(data_);
    for (std::size_t n : sizes_) {
      parts.emplace_back(in, in + n);
      in += n;
    }
    return parts;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  Sealed() = default;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  std::vector<std::size_t> sizes_;
};

namespace {

std::size_t call_bytes(const Call& call) {
  std::size_t b = 0;
  for (const Tensor& t : call.tensors) b += t.nbytes();
  return b;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string SampleCache::inputs_key(std::string_view op, const std::string& contract_hash, const std::string& config,
                                    std::int64_t sample, std::uint64_t seed, const FillSpec& fill,
                                    const std::optional<Probe>& probe) {
  std::string k(op);
  k.append("|").append(contract_hash);
  k.append("|").append(config).append("|s=").append(std::to_string(sample));
  k.append("|seed=").append(std::to_string(seed));
  k.append("|fill=").append(std::to_string(static_cast<int>(fill.kind)));
  k.append(",").append(number(fill.a)).append(",").append(number(fill.b));
  if (probe) {
    k.append("|probe=").append(probe->name).append(",").append(number(probe->density));
    for (double a : probe->args) k.append(",").append(number(a));
    for (const auto& t : probe->tensors) k.append(",").append(t);
  }
  return k;
}

std::string SampleCache::oracle_key(const std::string& inputs_key, const OracleOptions& options) {
  std::string k = inputs_key;
  k.append("|oracle");
  for (const auto& [name, value] : options.with) k.append(",").append(name).append("=").append(value);
  if (options.oob) k.append(",oob=").append(std::to_string(static_cast<int>(*options.oob)));
  return k;
}

SampleCache::List::iterator SampleCache::touch(std::unordered_map<std::string, List::iterator>::iterator it) {
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second;
}

void SampleCache::insert(Entry entry) {
  if (entry.bytes > max_bytes_) return;  // would evict everything else for one use
  if (auto it = index_.find(entry.key); it != index_.end()) {
    stats_.bytes -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  stats_.bytes += entry.bytes;
  lru_.push_front(std::move(entry));
  index_[lru_.front().key] = lru_.begin();
  while (stats_.bytes > max_bytes_ && !lru_.empty()) {
    stats_.bytes -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

std::optional<Call> SampleCache::find_inputs(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end() || !it->second->call) {
    ++stats_.inputs_generated;
    return std::nullopt;
  }
  ++stats_.inputs_reused;
  return *touch(it)->call;
}

void SampleCache::put_inputs(const std::string& key, const Call& call) {
  std::lock_guard<std::mutex> lock(mu_);
  insert(Entry{key, call, std::nullopt, nullptr, call_bytes(call)});
}

std::optional<OracleResult> SampleCache::find_oracle(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end() || !it->second->oracle) {
    ++stats_.oracles_computed;
    return std::nullopt;
  }
  ++stats_.oracles_reused;
  const Entry& e = *touch(it);
  OracleResult answer = *e.oracle;
  answer.outputs = e.sealed->values();
  return answer;
}

void SampleCache::put_oracle(const std::string& key, const OracleResult& answer) {
  std::shared_ptr<const Sealed> sealed = Sealed::make(answer.outputs);
  if (!sealed) return;  // no wipe-on-fork memory here: never leave an answer where a worker can read it
  OracleResult shell = answer;
  shell.outputs.clear();
  const std::size_t bytes = sealed->bytes();
  std::lock_guard<std::mutex> lock(mu_);
  insert(Entry{key, std::nullopt, std::move(shell), std::move(sealed), bytes});
}

SampleCacheStats SampleCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace kc::engine
