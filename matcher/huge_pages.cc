#include "matcher/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace cohort {
namespace matcher {
namespace internal {

void* AllocateHuge(size_t bytes) {
  if (bytes < kHugeAllocationMin) return ::operator new(bytes);
  const size_t held = HugeBytes(bytes);
  // A page more than held, then the excess unmapped, so the mapping starts
  // on a 2 MB boundary.
  const size_t mapped = held + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned =
      (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + held;
  if (start + mapped > end) {
    munmap(reinterpret_cast<void*>(end), start + mapped - end);
  }
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, held, MADV_HUGEPAGE);  // best effort: THP may be off
  return p;
}

void FreeHuge(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes < kHugeAllocationMin) {
    ::operator delete(p);
    return;
  }
  munmap(p, HugeBytes(bytes));
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
