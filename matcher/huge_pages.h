// Memory the kernel may back with 2 MB pages, for the index's large
// randomly read tables.
//
// Phase 2 reads a cluster's header (ClusterStore's table of them: 122,000
// headers, about 5 MB, on fabret-1m) at every cluster it visits, in no
// order, so on 4 KB pages nearly every visit is a TLB miss too (a two-level
// page walk on a VM). HugePageAllocator gives a std::vector of at least
// kHugeAllocationMin bytes its own mapping, 2 MB-aligned, rounded up to
// whole 2 MB pages and marked MADV_HUGEPAGE; smaller ones come from
// operator new as usual. Where transparent huge pages are off the mapping
// stays on 4 KB pages. The rounding is memory held: HugeBytes tells the
// memory accounting how much.
//
// Thread safety: stateless; as operator new.
#ifndef COHORT_MATCHER_HUGE_PAGES_H_
#define COHORT_MATCHER_HUGE_PAGES_H_

#include <cstddef>

namespace cohort {
namespace matcher {
namespace internal {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// Below this an allocation is not worth a 2 MB page: rounding it up would
// hold up to twice its size. Under AddressSanitizer every allocation comes
// from operator new, so that it checks their bounds.
#if defined(__SANITIZE_ADDRESS__) || defined(ADDRESS_SANITIZER)
inline constexpr size_t kHugeAllocationMin = ~size_t{0};
#else
inline constexpr size_t kHugeAllocationMin = size_t{2} << 20;
#endif

// Maps `bytes` (a multiple of kHugePageBytes) of zeroed memory starting on
// a 2 MB boundary, marked MADV_HUGEPAGE if `huge` (best effort: THP may be
// off). Throws std::bad_alloc if no memory; munmap(p, bytes) frees it.
void* MapAligned(size_t bytes, bool huge);

// `bytes` on 2 MB pages where bytes >= kHugeAllocationMin, else from
// operator new. Throws std::bad_alloc if no memory.
void* AllocateHuge(size_t bytes);
// Frees what AllocateHuge(bytes) returned. REQUIRES: the same `bytes`.
void FreeHuge(void* p, size_t bytes);
// The bytes AllocateHuge(bytes) holds.
inline size_t HugeBytes(size_t bytes) {
  return bytes >= kHugeAllocationMin
             ? (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes
             : bytes;
}

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: as std's

  T* allocate(size_t n) { return static_cast<T*>(AllocateHuge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeHuge(p, n * sizeof(T)); }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) {
    return true;
  }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) {
    return false;
  }
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_HUGE_PAGES_H_
