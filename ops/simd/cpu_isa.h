// The widest x86 vector ISA placeflow's CPU kernels may use (docs/simd.md), like oneDNN's
// ONEDNN_MAX_CPU_ISA: PF_MAX_CPU_ISA=sse4|avx2|avx512 caps placeflow's own kernels (the Highway
// kernels of vec_kernels.h and SimdFor's clones) and, when ONEDNN_MAX_CPU_ISA is unset, oneDNN's
// JIT too. So every target runs, and is benchmarked, on one AVX-512 machine.
#ifndef PLACEFLOW_OPS_SIMD_CPU_ISA_H_
#define PLACEFLOW_OPS_SIMD_CPU_ISA_H_

#include <atomic>
#include <optional>
#include <string_view>

namespace pf::simd {

// Ordered: a cap admits its own level and every lower one.
enum class CpuIsa { kSse4 = 0, kAvx2 = 1, kAvx512 = 2 };

// "sse4", "avx2", "avx512".
const char* CpuIsaName(CpuIsa isa);
// The names above (and oneDNN's spellings: sse41, avx512_core); nullopt for anything else.
std::optional<CpuIsa> ParseCpuIsa(std::string_view name);

// What this CPU supports (and the OS enables).
CpuIsa HostCpuIsa();
// The cap: PF_MAX_CPU_ISA, read once (a bad value is logged with the valid ones and ignored), or
// the last SetMaxCpuIsa. kAvx512 when nothing caps.
CpuIsa MaxCpuIsa();
namespace internal {
extern std::atomic<int> g_active_isa;  // -1 until first read
int InitActiveIsa();
}  // namespace internal

// min(HostCpuIsa(), MaxCpuIsa()): what the kernels run now. One relaxed load: SimdFor asks on
// every call.
inline CpuIsa ActiveCpuIsa() {
  int isa = internal::g_active_isa.load(std::memory_order_relaxed);
  if (isa < 0) isa = internal::InitActiveIsa();
  return static_cast<CpuIsa>(isa);
}

// Caps placeflow's own kernels from now on, in this process (tests and pf-bench run each target
// in turn). oneDNN's cap is fixed by its first primitive, so this leaves oneDNN as it is.
void SetMaxCpuIsa(CpuIsa isa);

// The ISA oneDNN's JIT uses (dnnl::get_effective_cpu_isa), on the same scale: AVX2 (with or
// without VNNI) is kAvx2, any AVX-512 kAvx512, anything less (SSE4.1, AVX) kSse4.
CpuIsa OneDnnCpuIsa();

// Gives oneDNN PF_MAX_CPU_ISA's cap before its first primitive (called when the library loads,
// before any kernel runs); a set ONEDNN_MAX_CPU_ISA wins. Idempotent.
void ApplyCpuIsaCapToOneDnn();

}  // namespace pf::simd

#endif  // PLACEFLOW_OPS_SIMD_CPU_ISA_H_
