#include "matcher/simd.h"

namespace cohort {
namespace matcher {
namespace internal {
namespace {

bool CpuHasAvx2() {
  __builtin_cpu_init();  // in case this runs before the constructors
  return __builtin_cpu_supports("avx2") != 0;
}

}  // namespace

std::atomic<bool>& Avx2Flag() {
  static std::atomic<bool> use{CpuHasAvx2()};
  return use;
}

void SetAvx2ForTest(bool use) {
  Avx2Flag().store(use && CpuHasAvx2(), std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
