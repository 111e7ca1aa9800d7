#include "matcher/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace cohort {
namespace matcher {
namespace internal {

void* MapAligned(size_t bytes, bool huge) {
  // A page more than asked, then the excess unmapped, so the mapping
  // starts on a 2 MB boundary.
  const size_t mapped = bytes + kHugePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned =
      (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = aligned + bytes;
  if (start + mapped > end) {
    munmap(reinterpret_cast<void*>(end), start + mapped - end);
  }
  void* p = reinterpret_cast<void*>(aligned);
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

void* AllocateHuge(size_t bytes) {
  if (bytes < kHugeAllocationMin) return ::operator new(bytes);
  return MapAligned(HugeBytes(bytes), /*huge=*/true);
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
