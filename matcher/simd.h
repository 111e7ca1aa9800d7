// Whether the matcher's AVX2 and AVX-512 kernels run, and a bit count that
// uses POPCNT where the CPU has it. The kernels are compiled for their
// instructions alone (`__attribute__((target("avx2")))`, "avx512f"), so the
// binary runs on any x86-64, and called only where the CPU has them
// (checked once); each has a portable loop beside it, which tests can
// force.
//
// Thread safety: UseAvx2, UseAvx512 and CountBits may be called from any
// thread; SetAvx2ForTest, SetAvx512ForTest and UseKernelsForTest before
// matching starts.
#ifndef COHORT_MATCHER_SIMD_H_
#define COHORT_MATCHER_SIMD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cohort {
namespace matcher {
namespace internal {

// The flag behind UseAvx2 (inline, so the check is one relaxed load).
std::atomic<bool>& Avx2Flag();

inline bool UseAvx2() { return Avx2Flag().load(std::memory_order_relaxed); }

// Turns the AVX2 kernels off (false) or back on where the CPU has AVX2.
void SetAvx2ForTest(bool use);

// Likewise for the AVX-512 kernels (AVX-512 F, compiled with
// `__attribute__((target("avx512f")))`), where the CPU has it.
std::atomic<bool>& Avx512Flag();

inline bool UseAvx512() {
  return Avx512Flag().load(std::memory_order_relaxed);
}

void SetAvx512ForTest(bool use);

// Which kernels run, as far as the CPU has them: 0 all, 1 AVX2 but not
// AVX-512, 2 none (the portable loops). The differential tests and the
// index fuzzer pick one a cohort, so that every path is compared with the
// reference; they call it with 0 when done.
void UseKernelsForTest(uint64_t choice);

// The set bits of words[0, n): with the POPCNT instruction where the CPU has
// it (checked once; the binary is built for any x86-64, where
// __builtin_popcountll is a library call per word), else a portable loop.
uint64_t CountBits(const uint64_t* words, size_t n);

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_SIMD_H_
