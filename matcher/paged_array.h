// A table indexed by subscription id whose memory comes in pages allocated
// on first use, so that sparse ids cost a page each, not the whole range:
// the location tables of Index and PartitionedIndex.
//
// Thread safety: none of its own. Find and Existing only read the page
// table; Slot may allocate a page and so needs exclusive access. Entries of
// distinct ids are distinct objects: threads may write different entries of
// pages that already exist at once (PartitionedIndex's partitions do).
#ifndef COHORT_MATCHER_PAGED_ARRAY_H_
#define COHORT_MATCHER_PAGED_ARRAY_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

template <typename T>
class PagedArray {
 public:
  // The entry of `id`, or nullptr if its page was never allocated.
  const T* Find(SubscriptionId id) const {
    const size_t page = id >> kPageBits;
    if (page >= pages_.size() || pages_[page] == nullptr) return nullptr;
    return &pages_[page][id & (kPageSize - 1)];
  }
  // The entry of `id`. REQUIRES: Slot(id) was called before (its page
  // exists).
  T& Existing(SubscriptionId id) const {
    return pages_[id >> kPageBits][id & (kPageSize - 1)];
  }
  // The entry of `id`, allocating its page (default-constructed entries).
  T& Slot(SubscriptionId id) {
    const size_t page = id >> kPageBits;
    if (page >= pages_.size()) pages_.resize(page + 1);
    if (pages_[page] == nullptr) {
      pages_[page] = std::make_unique<T[]>(kPageSize);
      ++allocated_pages_;
    }
    return pages_[page][id & (kPageSize - 1)];
  }

  size_t MemoryBytes() const {
    return pages_.capacity() * sizeof(pages_[0]) +
           allocated_pages_ * kPageSize * sizeof(T);
  }

 private:
  // 4096 entries per page: big enough that the page table stays small for a
  // million ids, small enough that a sparse id wastes little.
  static constexpr size_t kPageBits = 12;
  static constexpr size_t kPageSize = size_t{1} << kPageBits;

  std::vector<std::unique_ptr<T[]>> pages_;
  size_t allocated_pages_ = 0;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PAGED_ARRAY_H_
