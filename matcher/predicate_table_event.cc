// Phase 1 of the per-event path, for Index::MatchEvent and for cohorts kept
// per event (predicate_bits.h).
//
// The per-event path (`MarkSatisfied`) is the classic Fabret phase 1: it
// sets the bits of the satisfied predicates in a caller-owned PredicateBits
// and writes nothing in the table. Range predicates' bits are indexed by
// mask slot, like the masks, so a range group's satisfied run is set a word
// at a time.
#include "matcher/predicate_table.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>

#include "matcher/growth.h"
#include "matcher/simd.h"

namespace cohort {
namespace matcher {
namespace internal {

PredicateTable::Run PredicateTable::SortedRun(const Group& g, int64_t v) {
  Run run{0, g.sorted};
  switch (g.kind) {
    case Kind::kLow:  // v <= hi: the suffix with key >= v
      run.begin = FirstAtLeast(g, v);
      break;
    case Kind::kHigh:  // lo <= v: the prefix with key <= v
      run.end = FirstAbove(g, v);
      break;
    default: {  // lo <= v, and lo >= v - max_width (hi >= v is left to check)
      const uint64_t span =
          static_cast<uint64_t>(v) - static_cast<uint64_t>(kMinValue);
      if (span > g.max_width) {
        run.begin = FirstAtLeast(
            g, static_cast<int64_t>(static_cast<uint64_t>(v) - g.max_width));
      }
      run.end = FirstAbove(g, v, run.begin);
      break;
    }
  }
  return run;
}

void PredicateTable::MarkSatisfied(EventView event, PredicateBits* bits,
                                   std::vector<AccessHit>* access,
                                   PredicateBits* open) const {
  MarkEqualities(event, bits, access);
  MarkRanges(event, bits, open);
}

void PredicateTable::MarkEqualities(EventView event, PredicateBits* bits,
                                    std::vector<AccessHit>* access) const {
  if (true_ != kFalsePredicate) {
    bits->SetId(true_);
    access->push_back({true_, /*present=*/false, {}});
  }
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    const LeadPoint point{av.value, UpperTest(av)};
    // A number with a fraction equals no operand (all are integers).
    if (!av.half_above) {
      // Never finds the false predicate: its kind is kFalse, not kEq.
      if (const PredicateId* id = FindEq(av.attribute, av.value)) {
        bits->SetId(*id);
        access->push_back({*id, /*present=*/false, point});
      }
      if (const SetHolders* h = HoldersOf(av.attribute, av.value)) {
        for (size_t i = 0; i < h->ids.size(); ++i) {
          bits->SetId(h->ids[i]);
          if (i < h->accesses) {
            access->push_back({h->ids[i], /*present=*/false, point});
          }
        }
      }
    }
    const PredicateId present = attributes_[av.attribute].present;
    if (present != kFalsePredicate) {
      access->push_back({present, /*present=*/true, point});
    }
  }
}

namespace {

// Calls word_of(i, stop, shift) for each run [i, stop) of [begin, end) whose
// slots (base + i on) lie in one 64-bit word, slot base + i at bit `shift`,
// and ORs the word it returns into `bits`.
template <typename WordOf>
void ForEachSlotWord(uint32_t base, uint32_t begin, uint32_t end,
                     WordOf&& word_of, PredicateBits* bits) {
  for (uint32_t i = begin; i < end;) {
    const uint32_t slot = base + i;
    const uint32_t shift = slot & 63;
    const uint32_t stop = std::min(end, i + (64 - shift));
    bits->OrSlots(slot >> 6, word_of(i, stop, shift));
    i = stop;
  }
}

// The bits, from bit `shift` on, of the positions k in [i, stop) for which
// lo[k] <= v <= hi[k] (kLo: lo is checked, else taken as INT64_MIN; kHi
// likewise for hi), one position at a time, without a branch.
template <bool kLo, bool kHi>
uint64_t BetweenWord(const int64_t* lo, const int64_t* hi, uint32_t i,
                     uint32_t stop, uint32_t shift, int64_t v) {
  uint64_t word = 0;
  for (uint32_t k = i; k < stop; ++k) {
    const bool holds = (!kLo || lo[k] <= v) & (!kHi || hi[k] >= v);
    word |= static_cast<uint64_t>(holds) << (k - i + shift);
  }
  return word;
}

// BetweenWord four positions an instruction. The per-event path
// tests range groups' unsorted tails and kRange windows position by
// position, and on an index loaded one subscription at a time those tests
// were most of MarkRanges (issue 18 step 11).
template <bool kLo, bool kHi>
__attribute__((target("avx2"))) uint64_t BetweenWordAvx2(
    const int64_t* lo, const int64_t* hi, uint32_t i, uint32_t stop,
    uint32_t shift, int64_t v) {
  const __m256i value = _mm256_set1_epi64x(v);
  uint64_t word = 0;
  uint32_t k = i;
  for (; k + 4 <= stop; k += 4) {
    __m256i holds = _mm256_set1_epi64x(-1);
    if (kLo) {  // not lo > v
      const __m256i l =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo + k));
      holds = _mm256_andnot_si256(_mm256_cmpgt_epi64(l, value), holds);
    }
    if (kHi) {  // not v > hi
      const __m256i h =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi + k));
      holds = _mm256_andnot_si256(_mm256_cmpgt_epi64(value, h), holds);
    }
    const uint64_t four = static_cast<uint32_t>(
        _mm256_movemask_pd(_mm256_castsi256_pd(holds)));
    word |= four << (k - i + shift);
  }
  return word | BetweenWord<kLo, kHi>(lo, hi, k, stop, shift + (k - i), v);
}

// Sets bit base + i of `bits` for each position i in [begin, end) where
// lo[i] <= v <= hi[i] (see BetweenWord), a word of bits at a time: with
// AVX2 where the CPU has it.
template <bool kLo, bool kHi>
void SetBetween(uint32_t base, uint32_t begin, uint32_t end,
                const int64_t* lo, const int64_t* hi, int64_t v,
                PredicateBits* bits) {
  if (UseAvx2()) {
    ForEachSlotWord(
        base, begin, end,
        [&](uint32_t i, uint32_t stop, uint32_t shift) {
          return BetweenWordAvx2<kLo, kHi>(lo, hi, i, stop, shift, v);
        },
        bits);
    return;
  }
  ForEachSlotWord(
      base, begin, end,
      [&](uint32_t i, uint32_t stop, uint32_t shift) {
        return BetweenWord<kLo, kHi>(lo, hi, i, stop, shift, v);
      },
      bits);
}

}  // namespace

// Where a sorted run's blocks lie wholly on one side of `least`, no
// position is checked: a block's smallest and largest hi are the ends of
// its hi order (hi_sorted).
template <typename Check>
void PredicateTable::ForEachRangeBlock(const Group& g, Run run, int64_t least,
                                       Check&& check, PredicateBits* bits) {
  const int64_t* hs = g.hi_sorted.data();
  // Blocks set whole one after another are set as one run (a long one is
  // kept as its bounds, PredicateBits).
  uint32_t whole = run.begin;  // [whole, b) is set whole so far
  for (uint32_t b = run.begin; b < run.end;) {
    const uint32_t block = b - b % kRangeBlock;
    const uint32_t block_end = std::min(block + kRangeBlock, g.sorted);
    const uint32_t e = std::min(block_end, run.end);
    if (hs[block] < least) {
      bits->SetSlotRun(g.base + whole, g.base + b);
      if (hs[block_end - 1] >= least) check(b, e);
      whole = e;
    }
    b = e;
  }
  bits->SetSlotRun(g.base + whole, g.base + run.end);
}

// A group's positions have the consecutive slots [base, base + size), so
// the sorted part's satisfied run of a kLow or kHigh group is one run of
// slots, set a word at a time. A removed position keeps its place (and its
// slot) until Rebuild; no live predicate has that slot, so setting its bit
// is harmless, as in the cohort masks. The false predicate (whose bit must
// stay clear: it marks tombstoned rows) is read by id, in the equality
// part, which this never writes.
void PredicateTable::MarkRanges(EventView event, PredicateBits* bits,
                                PredicateBits* open) const {
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    const AttributeGroups& groups = attributes_[av.attribute];
    if (av.half_above) {
      // Sized only for events with such numbers (it is empty, and stays
      // unread, for the others).
      open->Resize(id_limit(), slot_limit_);
      MarkHalfRanges(groups, av, bits, open);
      continue;
    }
    const int64_t v = av.value;
    for (const Group* g : {&groups.low, &groups.high, &groups.range}) {
      if (g->size() == 0) continue;
      const int64_t* key = g->key.data();
      const Run run = SortedRun(*g, v);
      switch (g->kind) {
        case Kind::kLow:  // key is hi
          bits->SetSlotRun(g->base + run.begin, g->base + run.end);
          SetBetween<false, true>(g->base, g->sorted, g->size(), nullptr,
                                  key, v, bits);
          break;
        case Kind::kHigh:  // key is lo
          bits->SetSlotRun(g->base + run.begin, g->base + run.end);
          SetBetween<true, false>(g->base, g->sorted, g->size(), key,
                                  nullptr, v, bits);
          break;
        default: {  // key is lo; the sorted run's lo are at most v
          const int64_t* hi = g->hi.data();
          ForEachRangeBlock(*g, run, v, [&](uint32_t b, uint32_t e) {
            SetBetween<false, true>(g->base, b, e, nullptr, hi, v, bits);
          }, bits);
          SetBetween<true, true>(g->base, g->sorted, g->size(), key, hi, v,
                                 bits);
          break;
        }
      }
    }
  }
}

// A number in (f, f + 1) against the closed intervals: x <= hi iff f + 1 <=
// hi, x >= lo iff lo <= f, lo <= x <= hi iff both. An open entry (LT, GT;
// cluster_entry.h) shares its kLow or kHigh with an LE or GE for integers,
// and holds besides where that interval's bound is the number's floor (LT
// f + 1, kLow hi == f) or the floor + 1 (GT f, kHigh lo == f + 1): those
// positions' bits go to `open`. Removed positions may get bits, as in
// MarkRanges. Position by position outside the sorted runs: numbers with
// fractions are not what this path is tuned for.
void PredicateTable::MarkHalfRanges(const AttributeGroups& groups,
                                    const AttributeValue& av,
                                    PredicateBits* bits, PredicateBits* open) {
  const int64_t f = av.value;  // REQUIRES: f < INT64_MAX
  const auto set = [](PredicateBits* to, const Group& g, uint32_t i) {
    to->SetSlotRun(g.base + i, g.base + i + 1);
  };
  if (const Group& g = groups.low; g.size() > 0) {
    const int64_t* key = g.key.data();
    const auto at = [&](int64_t x) {
      return static_cast<uint32_t>(std::lower_bound(key, key + g.sorted, x) -
                                   key);
    };
    const uint32_t boundary = at(f);
    const uint32_t begin = at(f + 1);  // hi >= f + 1
    bits->SetSlotRun(g.base + begin, g.base + g.sorted);
    open->SetSlotRun(g.base + boundary, g.base + begin);  // hi == f
    for (uint32_t i = g.sorted; i < g.size(); ++i) {
      if (key[i] > f) set(bits, g, i);
      if (key[i] == f) set(open, g, i);
    }
  }
  if (const Group& g = groups.high; g.size() > 0) {
    const int64_t* key = g.key.data();
    const auto after = [&](int64_t x) {
      return static_cast<uint32_t>(std::upper_bound(key, key + g.sorted, x) -
                                   key);
    };
    const uint32_t end = after(f);  // lo <= f
    bits->SetSlotRun(g.base, g.base + end);
    open->SetSlotRun(g.base + end, g.base + after(f + 1));  // lo == f + 1
    for (uint32_t i = g.sorted; i < g.size(); ++i) {
      if (key[i] <= f) set(bits, g, i);
      if (key[i] == f + 1) set(open, g, i);
    }
  }
  if (const Group& g = groups.range; g.size() > 0) {
    const int64_t* key = g.key.data();
    const int64_t* hi = g.hi.data();
    const Run run = SortedRun(g, f);  // lo <= f, within max_width of it
    ForEachRangeBlock(g, run, f + 1, [&](uint32_t b, uint32_t e) {
      for (uint32_t i = b; i < e; ++i) {
        if (hi[i] > f) set(bits, g, i);
      }
    }, bits);
    for (uint32_t i = g.sorted; i < g.size(); ++i) {
      if (key[i] <= f && hi[i] > f) set(bits, g, i);
    }
  }
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
