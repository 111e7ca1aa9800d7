// Storage for the clusters' arrays, carved from large blocks that the
// kernel may back with 2 MB pages.
//
// A cohort's phase 2 visits thousands of small clusters (fabret-1m: 58 an
// event, 17 rows on average), each array a separate heap allocation, so
// 44 MB of clusters lie on about 11,000 4 KB pages and nearly every visit
// starts with a TLB miss (a two-level page walk on a VM). Allocated from
// 2 MB-aligned blocks marked MADV_HUGEPAGE, the same clusters lie on about
// 22 pages. (glibc's malloc does as much for the whole process with
// GLIBC_TUNABLES=glibc.malloc.hugetlb=1: fabret-1m's cohorts of 64 then
// matched at 1.10-1.17x, bench/HISTORY.md, issue 18 step 17.) Where the
// kernel leaves transparent huge pages off, the blocks are ordinary pages
// and only the packing remains.
//
// The first block stays on 4 KB pages (a small store fits the TLB, and a
// 2 MB page would hold 2 MB for a few clusters); the blocks after it are
// marked for 2 MB pages, and MemoryBytes counts what those pages hold.
//
// Allocations are rounded up to size classes (multiples of 4 words up to
// 128 words, then steps of an eighth up to 16 KB), freed ones kept on a
// list per class for the next allocation of that class. An allocation past
// 16 KB goes to operator new: such a cluster is read as a stream (a TLB
// miss per 4 KB is little against its rows), and a cluster growing through
// larger classes would leave a freed block in each that few others reuse
// (ranges-1m, whose 100 clusters hold 10,000 rows each, held 11% more with
// classes up to 256 KB). Memory comes back to the system only when the
// arena is destroyed.
//
// Stage: owned by one ClusterStore (one per partition), so a partition's
// clusters are allocated, and first touched, by its own thread and land on
// its NUMA node. Thread safety: none; the owner's.
#ifndef COHORT_MATCHER_WORD_ARENA_H_
#define COHORT_MATCHER_WORD_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cohort {
namespace matcher {
namespace internal {

class WordArena {
 public:
  WordArena() = default;
  WordArena(const WordArena&) = delete;
  WordArena& operator=(const WordArena&) = delete;
  WordArena(WordArena&& other) noexcept;
  WordArena& operator=(WordArena&& other) noexcept;
  // Unmaps every block. REQUIRES: every allocation past the largest class
  // was freed (the blocks' allocations need not be).
  ~WordArena();

  // Room for `words` words (> 0), uninitialised.
  uint32_t* Allocate(size_t words);
  // Returns what Allocate(words) gave. REQUIRES: the same `words`.
  void Free(uint32_t* p, size_t words);

  // Bytes held: the blocks' space handed out (in use or on a free list),
  // what 2 MB pages hold beyond it, and the allocations past the largest
  // class; the untouched 4 KB pages of a block are not counted.
  size_t MemoryBytes() const;

  // The words an allocation of `words` takes (its class's size).
  static size_t RoundedWords(size_t words);

 private:
  struct Block {
    void* base;
    size_t bytes;
    bool huge;          // marked MADV_HUGEPAGE
    size_t carved = 0;  // bytes handed out from it
  };
  // Under AddressSanitizer every allocation comes from operator new, so
  // that it checks each cluster's bounds as it did before the arena.
#if defined(__SANITIZE_ADDRESS__) || defined(ADDRESS_SANITIZER)
  static constexpr bool kCarve = false;
#else
  static constexpr bool kCarve = true;
#endif
  static constexpr size_t kBlockBytes = size_t{4} << 20;  // 2 huge pages

  // The size class of `words` words, or -1 past the largest.
  static int ClassOf(size_t words);
  // Maps a new block (MapAligned) and makes it the one carved from.
  void NewBlock();

  std::vector<Block> blocks_;
  char* next_ = nullptr;  // the current block's first uncarved byte
  char* end_ = nullptr;
  // Per class, the freed allocations, linked through their first 8 bytes.
  std::vector<void*> free_;
  size_t carved_bytes_ = 0;
  size_t large_bytes_ = 0;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_WORD_ARENA_H_
