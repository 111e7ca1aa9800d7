// RangeFilter: which range predicates (kLow, kHigh, kRange) the predicate
// table may hold, as a Bloom filter of two bits a predicate. It answers
// "not interned" for certain and "maybe" otherwise, so that the table's
// lookup of a range it does not hold costs a hash and two bit reads
// instead of a probe of its hash set.
//
// The row planner asks the table, for every range it would keep inline,
// whether that range is already a predicate (RowPlanner::KeepInline, and
// SplitIfShared for its halves). Where ranges are distinct (ranges-1m),
// nearly every answer is "no": 5.2M lookups in a bulk load of ranges-1m,
// 1,521 of them found. Those probes, with the hash set's comparisons
// reading the predicate table, were about 15% of the load.
//
// A removed predicate's bits stay set (a "maybe" that the hash set then
// answers), until the filter is rebuilt: when the keys added since the
// last rebuild pass kKeysPerWord a word, it is rebuilt from the live ones,
// with room for as many again.
//
// Stage: the predicate stage (a member of PredicateTable).
// Thread safety: MayContain is const and only reads; Add and Rebuild need
// exclusive access, as PredicateTable's non-const methods do.
#ifndef COHORT_MATCHER_RANGE_FILTER_H_
#define COHORT_MATCHER_RANGE_FILTER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "matcher/normal_predicate.h"

namespace cohort {
namespace matcher {
namespace internal {

// Whether the filter covers predicates of `kind`.
inline bool FilteredKind(Kind kind) {
  return kind == Kind::kLow || kind == Kind::kHigh || kind == Kind::kRange;
}

class RangeFilter {
 public:
  // 8 bits a key at most before a rebuild, 16 just after it (two bits set
  // a key: about 5% of absent keys answer "maybe" when full, 1.4% just
  // after a rebuild).
  static constexpr size_t kKeysPerWord = 8;
  static constexpr size_t kMinWords = 16;

  RangeFilter() { Rebuild(0); }

  // False only if no predicate equal to `p` was added since the last
  // Rebuild (or was live at it). REQUIRES: FilteredKind(p.kind).
  bool MayContain(const NormalPredicate& p) const {
    const auto [a, b] = Positions(p);
    return ((words_[a >> 6] >> (a & 63)) & (words_[b >> 6] >> (b & 63)) &
            1) != 0;
  }
  // Adds `p`. Returns true when the filter is due for a Rebuild (its keys
  // since the last one passed kKeysPerWord a word).
  // REQUIRES: FilteredKind(p.kind).
  bool Add(const NormalPredicate& p) {
    const auto [a, b] = Positions(p);
    words_[a >> 6] |= uint64_t{1} << (a & 63);
    words_[b >> 6] |= uint64_t{1} << (b & 63);
    return ++keys_ > kKeysPerWord * words_.size();
  }
  // Empties the filter, sized for `live` keys with room for as many more,
  // for the caller to Add the live ones again.
  void Rebuild(size_t live) {
    const size_t words =
        std::max(kMinWords, (2 * live + kKeysPerWord - 1) / kKeysPerWord);
    words_.assign(words, 0);
    words_.shrink_to_fit();
    bits_ = words * 64;
    keys_ = 0;
  }
  size_t MemoryBytes() const { return words_.capacity() * sizeof(uint64_t); }

 private:
  // p's two bits: each half of its hash scaled to [0, bits_) (a multiply
  // and a shift rather than a modulo, so the filter need not be a power
  // of two).
  std::pair<uint64_t, uint64_t> Positions(const NormalPredicate& p) const {
    const uint64_t h = Hash(p);
    return {((h & 0xffffffffull) * bits_) >> 32, ((h >> 32) * bits_) >> 32};
  }
  // A multiply-xorshift mix of the four fields (kind and attribute share a
  // word).
  static uint64_t Hash(const NormalPredicate& p) {
    constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
    uint64_t h = (static_cast<uint64_t>(p.attribute) << 8 |
                  static_cast<uint64_t>(p.kind)) * kMul;
    h = (h ^ static_cast<uint64_t>(p.lo)) * kMul;
    h ^= h >> 29;
    h = (h ^ static_cast<uint64_t>(p.hi)) * kMul;
    h ^= h >> 32;
    return h * 0xbf58476d1ce4e5b9ull;
  }
  std::vector<uint64_t> words_;
  uint64_t bits_ = 0;
  size_t keys_ = 0;  // added since the last Rebuild
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_RANGE_FILTER_H_
