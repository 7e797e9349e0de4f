#include "placeflow/ops/simd/cpu_isa.h"

#include <hwy/targets.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <dnnl.hpp>
#include <mutex>
#include <string>

#include "placeflow/core/logging.h"

namespace pf::simd {
namespace {

// Highway's targets above a cap: AVX3 is AVX-512 (F, VL, DQ, BW), AVX3_DL its Ice Lake form.
int64_t TargetsAbove(CpuIsa cap) {
  int64_t mask = 0;
  if (cap < CpuIsa::kAvx512) mask |= HWY_AVX3 | HWY_AVX3_DL;
  if (cap < CpuIsa::kAvx2) mask |= HWY_AVX2;
  return mask;
}

// PF_MAX_CPU_ISA, read and (when bad) reported once.
std::optional<CpuIsa> EnvCap() {
  static const std::optional<CpuIsa> cap = []() -> std::optional<CpuIsa> {
    const char* env = std::getenv("PF_MAX_CPU_ISA");
    if (env == nullptr || *env == '\0') return std::nullopt;
    std::optional<CpuIsa> isa = ParseCpuIsa(env);
    if (!isa) {
      PF_LOG_ERROR("PF_MAX_CPU_ISA='{}' is not one of sse4, avx2, avx512: ignored, no cap", env);
    }
    return isa;
  }();
  return cap;
}

struct IsaState {
  std::mutex mu;
  CpuIsa host = CpuIsa::kSse4;
  CpuIsa cap = CpuIsa::kAvx512;
};

// Read once, before Highway sees any cap (DisableTargets changes what SupportedTargets says).
IsaState& State() {
  static IsaState* state = [] {
    auto* s = new IsaState;
    const int64_t targets = hwy::SupportedTargets();
    s->host = (targets & HWY_AVX3)   ? CpuIsa::kAvx512
              : (targets & HWY_AVX2) ? CpuIsa::kAvx2
                                     : CpuIsa::kSse4;
    s->cap = EnvCap().value_or(CpuIsa::kAvx512);
    hwy::DisableTargets(TargetsAbove(s->cap));
    return s;
  }();
  return *state;
}

}  // namespace

namespace internal {
std::atomic<int> g_active_isa{-1};

int InitActiveIsa() {
  IsaState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  const int active = static_cast<int>(std::min(s.host, s.cap));
  g_active_isa.store(active, std::memory_order_relaxed);
  return active;
}
}  // namespace internal

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kSse4:
      return "sse4";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<CpuIsa> ParseCpuIsa(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "sse4" || n == "sse41" || n == "sse4.1" || n == "sse4.2") return CpuIsa::kSse4;
  if (n == "avx2") return CpuIsa::kAvx2;
  if (n == "avx512" || n == "avx512_core" || n == "all") return CpuIsa::kAvx512;
  return std::nullopt;
}

CpuIsa HostCpuIsa() { return State().host; }

CpuIsa MaxCpuIsa() {
  IsaState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.cap;
}

void SetMaxCpuIsa(CpuIsa isa) {
  IsaState& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.cap = isa;
    hwy::DisableTargets(TargetsAbove(isa));
  }
  internal::InitActiveIsa();
}

void ApplyCpuIsaCapToOneDnn() {
  static const bool applied = [] {
    const std::optional<CpuIsa> cap = EnvCap();  // reports a bad value in every case
    if (std::getenv("ONEDNN_MAX_CPU_ISA") != nullptr || std::getenv("DNNL_MAX_CPU_ISA") != nullptr)
      return false;
    if (!cap || *cap == CpuIsa::kAvx512) return false;
    try {
      dnnl::set_max_cpu_isa(*cap == CpuIsa::kAvx2 ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::sse41);
    } catch (const dnnl::error& e) {
      PF_LOG_WARN("PF_MAX_CPU_ISA={}: oneDNN kept its ISA ({}): it ran before the cap",
                  CpuIsaName(*cap), e.what());
      return false;
    }
    return true;
  }();
  (void)applied;
}

CpuIsa OneDnnCpuIsa() {
  ApplyCpuIsaCapToOneDnn();
  // oneDNN's ISAs are bit sets: 0x4 is AVX2's bit, 0x8 and 0x20 those of AVX-512 (MIC, core).
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  if (isa & 0x28u) return CpuIsa::kAvx512;
  if (isa & 0x4u) return CpuIsa::kAvx2;
  return CpuIsa::kSse4;
}

namespace {
// When the library loads, before any kernel asks oneDNN for its ISA.
[[maybe_unused]] const bool kOneDnnCapped = (ApplyCpuIsaCapToOneDnn(), true);
}  // namespace

}  // namespace pf::simd
