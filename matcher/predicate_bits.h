// The per-event path's phase-1 output (PredicateBits): one event's
// satisfied predicates as a bit vector, for a cohort kept per event
// (cohort_keep.h) and for Index::MatchEvent. Phase 2 reads it through
// cluster entries (cluster_entry.h).
#ifndef COHORT_MATCHER_PREDICATE_BITS_H_
#define COHORT_MATCHER_PREDICATE_BITS_H_

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "matcher/cluster_entry.h"
#include "matcher/cohort_keep.h"

namespace cohort {
namespace matcher {
namespace internal {

// The predicates one event satisfies, for the per-event path, as two bit
// vectors in one array: equalities by predicate id, then range predicates
// by mask slot (PredicateTable::slots()). A range group's satisfied
// predicates are one run of consecutive slots (a suffix for kLow, a prefix
// for kHigh), so phase 1 sets them a word at a time: a word per 64
// satisfied range predicates instead of a bit write each. Equalities stay
// by id, so checking an equality entry (most entries, on most workloads)
// reads one bit of a small vector with no slot lookup; a range entry's bit
// is read through its slot, as the cohort masks are. Remembers which words
// it set, so `Clear` touches only those (the vector is cleared lazily, not
// zeroed whole per event).
//
// With long runs on (set_long_runs), a run of kLongRun slots or more is kept
// as its bounds, up to kMaxRuns of them, and a range entry holds if its
// slot's bit is set or its slot lies in one of the runs. The satisfied runs
// of large groups are a few thousand words an event, and on eventbridge-1m
// writing, clearing and copying them (64 records a cohort, each vector its
// own cache footprint) was most of phase 1.
// Thread safety: none; each thread owns its own.
// Invariants: words_[w] != 0 implies w lies in a range listed in dirty_;
// the slot part starts at word id_words_; runs_ holds at most kMaxRuns
// runs of the slot part, each at least kLongRun long.
class PredicateBits {
 public:
  // Makes room for equality ids below `id_limit` and slots below
  // `slot_limit`. REQUIRES: no bit is set.
  void Resize(size_t id_limit, size_t slot_limit) {
    large_slot_table_ = SlotTableUncached(slot_limit);
    id_words_ =
        std::max(id_words_, static_cast<uint32_t>((id_limit + 63) / 64));
    const size_t words = id_words_ + (slot_limit + 63) / 64;
    if (words > words_.size()) words_.resize(words, 0);
  }
  // Whether long runs are kept as bounds (else every run is written a word
  // at a time). They pay where many vectors are filled before any is read
  // (a cohort kept per event, on several threads: each vector's words are
  // its own cache footprint); where one vector is filled, read and cleared
  // per event in cache (Index, serially), checking the runs costs every
  // range entry more than the words it saves (ranges-1m per event 0.43x).
  // REQUIRES: no bit is set.
  void set_long_runs(bool on) { long_runs_ = on; }
  // Sets the bit of equality `id`. REQUIRES: id < the id_limit of Resize.
  void SetId(uint32_t id) { Or(id >> 6, uint64_t{1} << (id & 63)); }
  // ORs `bits` into word `w` of the slot part (slots [64 w, 64 w + 64)).
  void OrSlots(uint32_t w, uint64_t bits) {
    if (bits != 0) Or(id_words_ + w, bits);
  }
  // Sets slots [begin, end). REQUIRES: end is at most the slot_limit of
  // Resize.
  void SetSlotRun(uint32_t begin, uint32_t end) {
    if (long_runs_ && end >= begin + kLongRun && runs_.size() < kMaxRuns) {
      runs_.push_back({begin, end});
      return;
    }
    SetWords(begin, end);
  }
  // 1 if cluster entry `e` holds: its predicate's bit (by id for an
  // equality, by slots[id] for a range kind), flipped when negated.
  uint32_t Holds(uint32_t e, const uint32_t* slots) const {
    return runs_.empty() ? HoldsByBit(e, slots) : HoldsInRuns(e, slots);
  }
  // Whether long runs are kept now, so that entries must take Holds: a
  // caller checking many entries asks once and takes HoldsByBit where not
  // (a check of the runs per entry cost ranges-1m's MatchEvent 3-4%).
  bool has_runs() const { return !runs_.empty(); }
  // Holds without long runs. REQUIRES: !has_runs().
  uint32_t HoldsByBit(uint32_t e, const uint32_t* slots) const {
    const uint32_t id = e & kEntryIdMask;
    const uint32_t bit = (e & kRangeEntryBit) ? id_words_ * 64 + slots[id] : id;
    return HoldsAt(bit, e);
  }
  // HoldsByBit without a branch on the entry's kind: slots[id] is read for
  // an equality too (slots() covers every id) and the bit chosen by a
  // mask. Where a row's columns mix equalities and ranges at random
  // (fabret-1m), the branch was guessed wrong often enough to cost its
  // cohort 1 about 1.08x; where the slot table is not cached (selective-1m:
  // 1.8M predicates, nearly all equalities), the extra read cost
  // MatchEvent 0.93x. Callers choose by large_slot_table().
  // REQUIRES: !has_runs().
  uint32_t HoldsBySelect(uint32_t e, const uint32_t* slots) const {
    const uint32_t id = e & kEntryIdMask;
    const uint32_t by_slot = id_words_ * 64 + slots[id];
    const uint32_t range =
        0u - static_cast<uint32_t>((e & kRangeEntryBit) != 0);
    const uint32_t bit = id ^ ((id ^ by_slot) & range);
    return HoldsAt(bit, e);
  }
  // HoldsBySelect of sixteen entries at once, for the lanes of `in`: their
  // slots and bits gathered. Returns the lanes that hold.
  // REQUIRES: !has_runs(); the CPU has AVX-512 F (UseAvx512).
  __attribute__((target("avx512f"))) __mmask16 HeldAvx512(
      __m512i e, __mmask16 in, const uint32_t* slots) const {
    const __m512i id = _mm512_and_si512(e, _mm512_set1_epi32(kEntryIdMask));
    const __mmask16 range = _mm512_mask_test_epi32_mask(
        in, e, _mm512_set1_epi32(static_cast<int>(kRangeEntryBit)));
    const __m512i slot = _mm512_mask_i32gather_epi32(id, range, id, slots, 4);
    const __m512i bit = _mm512_mask_add_epi32(
        id, range, slot, _mm512_set1_epi32(static_cast<int>(id_words_ * 64)));
    // The bit from its 32-bit half of the word (little-endian).
    const __m512i word = _mm512_mask_i32gather_epi32(
        _mm512_setzero_si512(), in, _mm512_maskz_srli_epi32(in, bit, 5),
        words_.data(), 4);
    const __m512i held = _mm512_xor_si512(
        _mm512_maskz_srlv_epi32(
            in, word, _mm512_and_si512(bit, _mm512_set1_epi32(31))),
        _mm512_maskz_srli_epi32(in, e, 31));
    return _mm512_mask_test_epi32_mask(in, held, _mm512_set1_epi32(1));
  }
  // Whether any bit is set (since the last Clear).
  bool any() const { return !dirty_.empty() || !runs_.empty(); }
  // SlotTableUncached of the last Resize's slot_limit: range entries' slot
  // lookups are then cache misses worth fetching ahead.
  bool large_slot_table() const { return large_slot_table_; }
  // A long run of slots [begin, end).
  struct SlotRun {
    uint32_t begin;
    uint32_t end;
  };
  // Bits set elsewhere, to be ORed in whole (Export, OrExported): words
  // [begin, end) of the vector are words[offset, offset + end - begin) of
  // the export's word array.
  struct WordRun {
    uint32_t begin;
    uint32_t end;
    uint32_t offset;
  };
  // Appends every bit set since the last Clear to *runs and *words (a
  // word may appear twice) and *slot_runs.
  void Export(std::vector<WordRun>* runs, std::vector<uint64_t>* words,
              std::vector<SlotRun>* slot_runs) const {
    for (const WordRange& r : dirty_) {
      runs->push_back(
          {r.begin, r.end, static_cast<uint32_t>(words->size())});
      words->insert(words->end(), words_.begin() + r.begin,
                    words_.begin() + r.end);
    }
    slot_runs->insert(slot_runs->end(), runs_.begin(), runs_.end());
  }
  // ORs in what Export gave: the words `runs` give from `words`, and
  // `slot_runs`. REQUIRES: the exporting vector had the same Resize.
  void OrExported(absl::Span<const WordRun> runs, const uint64_t* words,
                  absl::Span<const SlotRun> slot_runs) {
    for (const WordRun& r : runs) {
      dirty_.push_back({r.begin, r.end});
      const uint64_t* from = words + r.offset;
      for (uint32_t w = r.begin; w < r.end; ++w) words_[w] |= *from++;
    }
    for (const SlotRun& r : slot_runs) SetSlotRun(r.begin, r.end);
  }
  // Clears every bit set since the last call.
  void Clear() {
    for (const WordRange& r : dirty_) {
      std::fill(words_.begin() + r.begin, words_.begin() + r.end, 0);
    }
    dirty_.clear();
    runs_.clear();
  }
  size_t MemoryBytes() const {
    return words_.capacity() * sizeof(uint64_t) +
           dirty_.capacity() * sizeof(WordRange) +
           runs_.capacity() * sizeof(SlotRun);
  }
  // Runs at least this long are kept as bounds, up to kMaxRuns of them
  // (set_long_runs).
  static constexpr uint32_t kLongRun = 2048;
  static constexpr size_t kMaxRuns = 8;

 private:
  // Whether entry e holds given its predicate's bit `bit` (flipped when
  // e is negated).
  uint32_t HoldsAt(uint32_t bit, uint32_t e) const {
    return static_cast<uint32_t>(
        ((words_[bit >> 6] >> (bit & 63)) ^ (e >> 31)) & 1);
  }
  struct WordRange {
    uint32_t begin;
    uint32_t end;
  };
  // Holds with long runs kept: a range entry by its bit or a run.
  uint32_t HoldsInRuns(uint32_t e, const uint32_t* slots) const {
    if ((e & kRangeEntryBit) == 0) return HoldsByBit(e, slots);
    const uint32_t slot = slots[e & kEntryIdMask];
    const uint32_t bit = id_words_ * 64 + slot;
    uint64_t held = words_[bit >> 6] >> (bit & 63);
    for (const SlotRun& r : runs_) {
      held |= static_cast<uint64_t>(slot - r.begin < r.end - r.begin);
    }
    return static_cast<uint32_t>((held ^ (e >> 31)) & 1);
  }
  // Sets slots [begin, end) a word at a time.
  void SetWords(uint32_t begin, uint32_t end) {
    if (begin >= end) return;
    const uint32_t first = id_words_ + (begin >> 6);
    const uint32_t last = id_words_ + ((end - 1) >> 6);
    const uint64_t head = ~uint64_t{0} << (begin & 63);
    const uint64_t tail = ~uint64_t{0} >> (63 - ((end - 1) & 63));
    dirty_.push_back({first, last + 1});
    if (first == last) {
      words_[first] |= head & tail;
      return;
    }
    words_[first] |= head;
    for (uint32_t w = first + 1; w < last; ++w) words_[w] = ~uint64_t{0};
    words_[last] |= tail;
  }
  void Or(uint32_t w, uint64_t bits) {
    uint64_t& word = words_[w];
    if (word == 0) dirty_.push_back({w, w + 1});
    word |= bits;
  }

  std::vector<uint64_t> words_;
  uint32_t id_words_ = 0;         // words of the equality part
  bool large_slot_table_ = false;
  std::vector<WordRange> dirty_;  // ranges of words that may be non-zero
  std::vector<SlotRun> runs_;     // long runs of set slots
  bool long_runs_ = false;        // set_long_runs
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PREDICATE_BITS_H_
