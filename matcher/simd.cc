#include "matcher/simd.h"

namespace cohort {
namespace matcher {
namespace internal {
namespace {

bool CpuHasAvx2() {
  __builtin_cpu_init();  // in case this runs before the constructors
  return __builtin_cpu_supports("avx2") != 0;
}

bool CpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
}

// The loop of both CountBits versions, inlined into each so that it is
// compiled for that one's target.
__attribute__((always_inline)) inline uint64_t SumPopcounts(
    const uint64_t* words, size_t n) {
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) bits += __builtin_popcountll(words[i]);
  return bits;
}

__attribute__((target("popcnt"))) uint64_t CountBitsPopcnt(
    const uint64_t* words, size_t n) {
  return SumPopcounts(words, n);
}

uint64_t CountBitsPortable(const uint64_t* words, size_t n) {
  return SumPopcounts(words, n);
}

}  // namespace

uint64_t CountBits(const uint64_t* words, size_t n) {
  static const bool popcnt = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("popcnt") != 0;
  }();
  return popcnt ? CountBitsPopcnt(words, n) : CountBitsPortable(words, n);
}

std::atomic<bool>& Avx2Flag() {
  static std::atomic<bool> use{CpuHasAvx2()};
  return use;
}

void SetAvx2ForTest(bool use) {
  Avx2Flag().store(use && CpuHasAvx2(), std::memory_order_relaxed);
}

std::atomic<bool>& Avx512Flag() {
  static std::atomic<bool> use{CpuHasAvx512()};
  return use;
}

void SetAvx512ForTest(bool use) {
  Avx512Flag().store(use && CpuHasAvx512(), std::memory_order_relaxed);
}

void UseKernelsForTest(uint64_t choice) {
  SetAvx512ForTest(choice == 0);
  SetAvx2ForTest(choice <= 1);
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
