#include "matcher/cohort_matches.h"

#include <algorithm>
#include <cstring>

#include "matcher/simd.h"

namespace cohort {
namespace matcher {

void CohortMatches::Reset(size_t events) {
  pairs_ = 0;
  chunks_.clear();
  run_ids_.clear();
  runs_.clear();
  events_ = events;
}

void CohortMatches::BeginChunk(size_t base) {
  chunks_.push_back({pairs_, base});
}

void CohortMatches::Grow(size_t more) {
  const size_t room =
      std::max(pairs_ + more, std::max<size_t>(1024, 2 * ids_.size()));
  ids_.resize(room);
  masks_.resize(room);
}

uint64_t CohortMatches::matches() const {
  return MatchesFrom(0) + run_ids_.size();
}

uint64_t CohortMatches::MatchesFrom(size_t first) const {
  return first < pairs_
             ? internal::CountBits(masks_.data() + first, pairs_ - first)
             : 0;
}

namespace {

// A carry-save adder of three bit vectors, lane by lane: *high and *low are
// the two bits of a + b + c in each of the 64 lanes.
inline void CarrySave(uint64_t a, uint64_t b, uint64_t c, uint64_t* high,
                      uint64_t* low) {
  const uint64_t u = a ^ b;
  *high = (a & b) | (u & c);
  *low = u ^ c;
}

// Per-lane counts of many 64-bit masks, bit-sliced: the count of lane i is
// ones_i + 2 twos_i + 4 fours_i + 8 eights_i + 16 (sum of plane k's bit i
// times 2^k). Sixteen masks at a time go through a tree of carry-save
// adders (Harley and Seal's, as popcounts of long arrays use it) into the
// low four weights, with no branch; what carries past eight, one mask per
// sixteen, ripples through the planes.
class LaneCounter {
 public:
  void AddSixteen(const uint64_t* m) {
    const uint64_t eights_a = AddEight(m);
    const uint64_t eights_b = AddEight(m + 8);
    uint64_t sixteens;
    CarrySave(eights_, eights_a, eights_b, &sixteens, &eights_);
    Ripple(sixteens);
  }
  // Adds one mask at weight one (fewer than sixteen left).
  void AddOne(uint64_t m) {
    uint64_t twos, fours, eights, sixteens;
    twos = ones_ & m;
    ones_ ^= m;
    fours = twos_ & twos;
    twos_ ^= twos;
    eights = fours_ & fours;
    fours_ ^= fours;
    sixteens = eights_ & eights;
    eights_ ^= eights;
    Ripple(sixteens);
  }
  // Adds lane i's count to out[i], for i < n.
  void AddTo(uint64_t* out, size_t n) const {
    for (size_t i = 0; i < n; ++i) {
      uint64_t c = ((ones_ >> i) & 1) | ((twos_ >> i) & 1) << 1 |
                   ((fours_ >> i) & 1) << 2 | ((eights_ >> i) & 1) << 3;
      for (int p = 0; p < kPlanes; ++p) c += ((planes_[p] >> i) & 1) << (p + 4);
      out[i] += c;
    }
  }

 private:
  // Adds eight masks into the low three weights; returns what carries
  // into weight eight.
  uint64_t AddEight(const uint64_t* m) {
    uint64_t twos_a, twos_b, fours_a, fours_b, eights;
    CarrySave(ones_, m[0], m[1], &twos_a, &ones_);
    CarrySave(ones_, m[2], m[3], &twos_b, &ones_);
    CarrySave(twos_, twos_a, twos_b, &fours_a, &twos_);
    CarrySave(ones_, m[4], m[5], &twos_a, &ones_);
    CarrySave(ones_, m[6], m[7], &twos_b, &ones_);
    CarrySave(twos_, twos_a, twos_b, &fours_b, &twos_);
    CarrySave(fours_, fours_a, fours_b, &eights, &fours_);
    return eights;
  }
  // Adds `sixteens` (weight 16 in each lane) to the planes.
  void Ripple(uint64_t sixteens) {
    for (int p = 0; sixteens != 0; ++p) {
      const uint64_t carry = planes_[p] & sixteens;
      planes_[p] ^= sixteens;
      sixteens = carry;
    }
  }

  static constexpr int kPlanes = 60;
  uint64_t ones_ = 0, twos_ = 0, fours_ = 0, eights_ = 0;
  uint64_t planes_[kPlanes] = {};  // weights 16, 32, ...
};

}  // namespace

void CohortMatches::CountPerEvent(uint64_t* counts) const {
  std::memset(counts, 0, events_ * sizeof(uint64_t));
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const size_t to = ChunkEnd(c);
    LaneCounter counter;
    size_t k = chunks_[c].from;
    for (; k + 16 <= to; k += 16) counter.AddSixteen(masks_.data() + k);
    for (; k < to; ++k) counter.AddOne(masks_[k]);
    const size_t base = chunks_[c].base;
    counter.AddTo(counts + base, std::min<size_t>(64, events_ - base));
  }
  for (const Run& run : runs_) counts[run.event] += run.to - run.from;
}

void CohortMatches::ToLists(
    std::vector<std::vector<SubscriptionId>>* lists) const {
  lists->resize(events_);
  for (std::vector<SubscriptionId>& list : *lists) list.clear();
  std::vector<SubscriptionId>* out = lists->data();
  for (const Run& run : runs_) {
    out[run.event].insert(out[run.event].end(), run_ids_.begin() + run.from,
                          run_ids_.begin() + run.to);
  }
  ForEachPairMatch(
      [out](size_t event, SubscriptionId id) { out[event].push_back(id); });
}

size_t CohortMatches::MemoryBytes() const {
  return (ids_.capacity() + run_ids_.capacity()) * sizeof(SubscriptionId) +
         masks_.capacity() * sizeof(uint64_t) +
         chunks_.capacity() * sizeof(Chunk) + runs_.capacity() * sizeof(Run);
}

}  // namespace matcher
}  // namespace cohort
