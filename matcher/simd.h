// Whether the matcher's AVX2 kernels run. They are compiled for AVX2 alone
// (`__attribute__((target("avx2")))`), so the binary runs on any x86-64,
// and called only where the CPU has AVX2 (checked once); each has a
// portable loop beside it, which tests can force.
//
// Thread safety: UseAvx2 may be called from any thread; SetAvx2ForTest
// before matching starts.
#ifndef COHORT_MATCHER_SIMD_H_
#define COHORT_MATCHER_SIMD_H_

#include <atomic>

namespace cohort {
namespace matcher {
namespace internal {

// The flag behind UseAvx2 (inline, so the check is one relaxed load).
std::atomic<bool>& Avx2Flag();

inline bool UseAvx2() { return Avx2Flag().load(std::memory_order_relaxed); }

// Turns the AVX2 kernels off (false) or back on where the CPU has AVX2.
void SetAvx2ForTest(bool use);

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_SIMD_H_
