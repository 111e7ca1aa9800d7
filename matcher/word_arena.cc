#include "matcher/word_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "matcher/huge_pages.h"

namespace cohort {
namespace matcher {
namespace internal {
namespace {

constexpr size_t kSmallStep = 4;    // words: classes of 4, 8, ..., 128
constexpr size_t kSmallLimit = 128;
constexpr size_t kLargestClass = size_t{1} << 12;  // words (16 KB)

// The class sizes in words, ascending: multiples of kSmallStep up to
// kSmallLimit, then each an eighth (rounded up to kSmallStep) past the one
// before, up to kLargestClass.
const std::vector<size_t>& ClassSizes() {
  static const std::vector<size_t>* sizes = [] {
    auto* s = new std::vector<size_t>;
    for (size_t w = kSmallStep; w <= kSmallLimit; w += kSmallStep) {
      s->push_back(w);
    }
    while (s->back() < kLargestClass) {
      const size_t step =
          (s->back() / 8 + kSmallStep - 1) / kSmallStep * kSmallStep;
      s->push_back(std::min(kLargestClass, s->back() + step));
    }
    return s;
  }();
  return *sizes;
}

}  // namespace

WordArena::WordArena(WordArena&& other) noexcept { *this = std::move(other); }

WordArena& WordArena::operator=(WordArena&& other) noexcept {
  if (this != &other) {
    this->~WordArena();
    blocks_ = std::exchange(other.blocks_, {});
    next_ = std::exchange(other.next_, nullptr);
    end_ = std::exchange(other.end_, nullptr);
    free_ = std::exchange(other.free_, {});
    carved_bytes_ = std::exchange(other.carved_bytes_, 0);
    large_bytes_ = std::exchange(other.large_bytes_, 0);
  }
  return *this;
}

WordArena::~WordArena() {
  for (const Block& b : blocks_) munmap(b.base, b.bytes);
  blocks_.clear();
}

int WordArena::ClassOf(size_t words) {
  if (words <= kSmallLimit) {
    return static_cast<int>((std::max<size_t>(words, 1) + kSmallStep - 1) /
                            kSmallStep) -
           1;
  }
  if (words > kLargestClass) return -1;
  const std::vector<size_t>& sizes = ClassSizes();
  return static_cast<int>(
      std::lower_bound(sizes.begin(), sizes.end(), words) - sizes.begin());
}

size_t WordArena::RoundedWords(size_t words) {
  const int c = ClassOf(words);
  return c < 0 ? words : ClassSizes()[c];
}

void WordArena::NewBlock() {
  // The first block stays on 4 KB pages: a small store (a partition of a
  // many-core server) fits the TLB anyway, and a 2 MB page would hold a
  // whole 2 MB for a few clusters.
  const bool huge = !blocks_.empty();
  void* base = MapAligned(kBlockBytes, huge);
  blocks_.push_back({base, kBlockBytes, huge});
  next_ = static_cast<char*>(base);
  end_ = next_ + kBlockBytes;
}

size_t WordArena::MemoryBytes() const {
  // A huge block's 2 MB pages are held whole once touched: every huge
  // block but the last is counted whole (its untouched tail is under one
  // class), the last up to the end of the 2 MB page being carved.
  size_t bytes = carved_bytes_ + large_bytes_;
  if (blocks_.empty() || !blocks_.back().huge) return bytes;
  for (size_t b = 0; b + 1 < blocks_.size(); ++b) {
    if (blocks_[b].huge) bytes += blocks_[b].bytes - blocks_[b].carved;
  }
  const Block& last = blocks_.back();
  const size_t used =
      static_cast<size_t>(next_ - static_cast<char*>(last.base));
  const size_t held =
      (used + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  return bytes + (held - used);
}

uint32_t* WordArena::Allocate(size_t words) {
  const int c = ClassOf(words);
  if (c < 0 || !kCarve) {
    large_bytes_ += words * sizeof(uint32_t);
    return new uint32_t[words];
  }
  if (free_.size() <= static_cast<size_t>(c)) free_.resize(c + 1, nullptr);
  if (void* p = free_[c]) {
    std::memcpy(&free_[c], p, sizeof(void*));
    return static_cast<uint32_t*>(p);
  }
  const size_t bytes = ClassSizes()[c] * sizeof(uint32_t);
  if (next_ == nullptr || static_cast<size_t>(end_ - next_) < bytes) {
    NewBlock();  // the old block's tail (under one class) stays unused
  }
  void* p = next_;
  next_ += bytes;
  carved_bytes_ += bytes;
  blocks_.back().carved += bytes;
  return static_cast<uint32_t*>(p);
}

void WordArena::Free(uint32_t* p, size_t words) {
  if (p == nullptr) return;
  const int c = ClassOf(words);
  if (c < 0 || !kCarve) {
    large_bytes_ -= words * sizeof(uint32_t);
    delete[] p;
    return;
  }
  std::memcpy(p, &free_[c], sizeof(void*));
  free_[c] = p;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
