// The output of phase 1 for one cohort (up to 64 events): one 64-bit *cohort
// mask* per predicate (bit i set iff the predicate holds for event i), the
// access predicates the cohort satisfies, and the phase-1 work still to do,
// cut into *tasks* that several threads may run at once.
//
// A cohort whose events share little is kept per event instead
// (per_event(); BeginCohort chooses by a cost model, CohortKeep): a
// PredicateBits of each event's satisfied predicates — its equalities set
// by BeginCohort, its range predicates by one task per event; phase 2 then
// checks each event's cluster lists against its bits
// (ClusterStore::MatchListsForEvent). Where few rows are shared a bit
// vector per event (in cache, read without the slot table for equalities)
// beats a 64-bit mask per predicate read through its slot, and marking an
// event's range predicates a word at a time beats writing a mask per
// position.
//
// Subscriptions without an equality keep their lead range in their row
// (LeadRange) instead of a predicate; for the lists of "present" access
// predicates, a cohort records each attribute's sorted values with their
// event bits (lead_values), and, where they span few integers, a rank
// table that turns a lead range into its events with two reads.
//
// Masks live in a flat array indexed by *mask slot*; PredicateTable maps
// predicate ids to slots (PredicateTable::slots()). Equalities have a slot
// each; the range predicates of one group (one kind on one attribute) have a
// run of consecutive slots in the group's sorted order, so phase 1 writes
// them front to back. A CohortMasks is separate from the table so that one
// table can have several cohorts in flight: phase 1 of the next cohort fills
// one buffer while phase 2 of the previous one still reads another.
//
// Lifecycle: PredicateTable::BeginCohort clears what the buffer's previous
// cohort wrote, computes the equality masks and the access predicates, and
// lists the tasks; PredicateTable::RunTask runs one task (the range groups'
// walks); once every task has run, words() holds every mask and phase 2 may
// read it. The buffer needs no clearing after use: the next BeginCohort
// clears exactly what was written (or all of it, if the table's slot layout
// changed in between).
//
// Thread safety: BeginCohort needs the buffer exclusively. After it, tasks
// may run on different threads at once, each task exactly once (each writes
// its own slots). Reads (words(), access lists) are safe from any number of
// threads once every task has finished and that is synchronised with the
// readers (the caller's queue or barrier). Distinct buffers are independent.
#ifndef COHORT_MATCHER_COHORT_MASKS_H_
#define COHORT_MATCHER_COHORT_MASKS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

using PredicateId = uint32_t;

// Largest cohort phase 1 can hold at once: one bit per event in a mask.
inline constexpr size_t kMaxCohortChunk = 64;
// How BeginCohort keeps a cohort: per event or in masks, or whichever its
// cost model expects to be cheaper (kCheaper, what the indexes use; the
// others are for tests and for measuring the crossover).
enum class CohortKeep { kCheaper, kPerEvent, kMasks };

// The cost model of CohortKeep::kCheaper, in about nanoseconds on the
// development machine. Kept per event, each event checks the rows of its
// own access lists (rows_sum) against a bit vector that stays in cache,
// and marks its attributes' range predicates a word of 64 at a time (or a
// bit at a time within kRange runs): positions_sum over all events. In
// masks, each access list the cohort touches is checked once for all its
// events (rows_union), reading a 64-bit mask per entry through the slot
// table, and every range position of the cohort's attributes is written
// once (positions_all) and cleared by the next cohort. A lone event is
// always kept per event: the masks share nothing then.
// (The constants were fitted with matcher_bench --keep=per_event and
// --keep=masks at cohorts of 2 to 64 on fabret-1m, selective-1m and
// ranges-1m; bench/README.md, issue 18 step 3; refitted in step 12, after
// steps 7-11 had made both ways faster: per event 0.075 -> 0.06 a
// position, in masks 8 -> 20 a row. With the old constants fabret-1m's
// cohorts of 16 and selective-1m's of 32 went to masks at 0.93x and 0.85x
// of per event; the refit chooses the faster way at 4, 8, 16 and 32 events
// on all three presets.)
// Past kMaxCheaperPerEvent events the masks are taken without weighing:
// at 32 events they already win on all three presets (1.1-2.6x), and the
// weighing costs a look at every access list's size, a cache miss each
// on a large index (a 64-event cohort on selective-1m ran at 0.84x with
// it, in one run against the build without).
inline constexpr size_t kMaxCheaperPerEvent = 32;
inline constexpr double kPerEventRowCost = 4.0;
// A row of a "present" list (lead ranges, cluster_store.h) costs an event
// less where the slot table is too large for the cache (more than
// kCachedSlots slots): its range entries' slots are then cache misses, and
// the per-event check fetches a block's slots together so that the misses
// overlap (ClusterStore::MatchBlockForEvent), while the masks pay a miss
// for the slot and another for its mask word. Fitted on ranges-1m (5.9M
// slots) after that prefetch: per event beats masks up to 16 events, masks
// win from 32; ranges-1m's first 100,000 subscriptions (about 630,000
// slots) chose masks at 8 events with the old cost, at 0.68x of MatchEvent,
// and go per event with this one. Below the threshold (fabret-1m: 271,000
// slots) a lead row costs kPerEventRowCost, as fitted before.
inline constexpr double kPerEventLeadRowCostUncached = 1.0;
inline constexpr size_t kCachedSlots = size_t{1} << 19;
// Whether a slot table of `slot_limit` slots is past kCachedSlots: the one
// test both the cost model and the per-event prefetch make.
inline bool SlotTableUncached(size_t slot_limit) {
  return slot_limit > kCachedSlots;
}
inline constexpr double kPerEventPositionCost = 0.06;
inline constexpr double kMaskRowCost = 20.0;
inline constexpr double kMaskPositionCost = 1.5;

// A cluster entry (cluster_store.h) is a predicate id below 2^30, with
// kNegatedBit set when negated and kRangeEntryBit set when the predicate is
// of a range kind (kLow, kHigh or kRange; "present" included), so that the
// per-event check knows, without a lookup, where the predicate's bit lies
// (see PredicateBits).
inline constexpr uint32_t kNegatedBit = 1u << 31;
inline constexpr uint32_t kRangeEntryBit = 1u << 30;
inline constexpr uint32_t kEntryIdMask = kRangeEntryBit - 1;

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
// Thread safety: none; each thread owns its own.
// Invariants: words_[w] != 0 implies w lies in a range listed in dirty_;
// the slot part starts at word id_words_.
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
  // Sets the bit of equality `id`. REQUIRES: id < the id_limit of Resize.
  void SetId(uint32_t id) { Or(id >> 6, uint64_t{1} << (id & 63)); }
  // ORs `bits` into word `w` of the slot part (slots [64 w, 64 w + 64)).
  void OrSlots(uint32_t w, uint64_t bits) {
    if (bits != 0) Or(id_words_ + w, bits);
  }
  // Sets slots [begin, end). REQUIRES: end is at most the slot_limit of
  // Resize.
  void SetSlotRun(uint32_t begin, uint32_t end) {
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
  // 1 if cluster entry `e` holds: its predicate's bit (by id for an
  // equality, by slots[id] for a range kind), flipped when negated.
  uint32_t Holds(uint32_t e, const uint32_t* slots) const {
    const uint32_t id = e & kEntryIdMask;
    const uint32_t bit = (e & kRangeEntryBit) ? id_words_ * 64 + slots[id] : id;
    return static_cast<uint32_t>(
        ((words_[bit >> 6] >> (bit & 63)) ^ (e >> 31)) & 1);
  }
  // SlotTableUncached of the last Resize's slot_limit: range entries' slot
  // lookups are then cache misses worth fetching ahead.
  bool large_slot_table() const { return large_slot_table_; }
  // Clears every bit set since the last call.
  void Clear() {
    for (const WordRange& r : dirty_) {
      std::fill(words_.begin() + r.begin, words_.begin() + r.end, 0);
    }
    dirty_.clear();
  }
  size_t MemoryBytes() const {
    return words_.capacity() * sizeof(uint64_t) +
           dirty_.capacity() * sizeof(WordRange);
  }

 private:
  struct WordRange {
    uint32_t begin;
    uint32_t end;
  };
  void Or(uint32_t w, uint64_t bits) {
    uint64_t& word = words_[w];
    if (word == 0) dirty_.push_back({w, w + 1});
    word |= bits;
  }

  std::vector<uint64_t> words_;
  uint32_t id_words_ = 0;         // words of the equality part
  bool large_slot_table_ = false;
  std::vector<WordRange> dirty_;  // ranges of words that may be non-zero
};

// The lead range of a row under a "present" access predicate: the row's
// most selective range entry, kept in the row (cluster_store.h) instead of
// being interned as a predicate: lo <= x <= hi. Nearly every range of a
// range-heavy workload is distinct, and a predicate of its own costs a
// table entry, a mask slot and a phase-1 write per cohort, where two
// bounds in the row cost 16 bytes and a comparison against the event's
// value.
struct LeadRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

// A cohort's values of one attribute, sorted (count of them), with
// prefix[j] the OR of the event bits of the first j values (count + 1
// words). Each event carries an attribute once, so the events whose value
// lies in [lo, hi] are prefix[values <= hi] & ~prefix[values < lo].
// Where the values span at most kMaxRankTable integers, rank[x - values[0]]
// is the count of values below x, for x within the span, so that a lead's
// events are two table reads instead of two searches (rank is null
// otherwise).
struct LeadValues {
  const int64_t* values;
  const uint64_t* prefix;
  uint32_t count;
  uint32_t rank_size;
  const uint8_t* rank;
};

// The largest span of a cohort's values of an attribute for which phase 1
// builds the rank table of its "present" list: 4 KiB, about as many writes
// as the table saves in searches once some hundred lead rows are checked
// (fabret-1m's 1,000-value domain fits; a million-value domain does not).
inline constexpr uint64_t kMaxRankTable = 4096;

namespace lead_internal {

// The number of the n sorted values below x (strictly, or at most x), by a
// binary search without branches: n is at most 64, so six steps.
template <bool kOrEqual>
inline uint32_t CountUpTo(const int64_t* v, uint32_t n, int64_t x) {
  uint32_t count = 0;
  for (uint32_t step = n == 0 ? 0 : 1u << (31 - __builtin_clz(n)); step != 0;
       step >>= 1) {
    const uint32_t next = count + step;
    const bool below = next <= n && (kOrEqual ? v[next - 1] <= x
                                             : v[next - 1] < x);
    count = below ? next : count;
  }
  return count;
}

}  // namespace lead_internal

// LeadMask through the rank table. REQUIRES: v.rank. No branches: lead
// rows are checked in a loop where the bounds' cases (below the cohort's
// values, within, past them) mix unpredictably, and as branches they were
// half of phase 2's mispredictions on fabret-1m at cohort 64 (callgrind's
// branch simulation).
inline uint64_t RankedLeadMask(const LeadValues& v, int64_t lo, int64_t hi) {
  // Offsets from the smallest value, wrapping below it: a bound below the
  // smallest value, or past the largest, lies outside [0, rank_size).
  // rank[rank_size] is count, so an offset past the table is clamped to
  // it; a bound below the smallest value reads rank[0], which is 0.
  const uint64_t span = v.rank_size;
  const uint64_t l = static_cast<uint64_t>(lo) -
                     static_cast<uint64_t>(v.values[0]);
  const uint64_t h = static_cast<uint64_t>(hi) -
                     static_cast<uint64_t>(v.values[0]);
  const uint64_t below_at =
      (l < span ? l : span) & -static_cast<uint64_t>(lo > v.values[0]);
  const uint64_t upto_at = ((h < span - 1 ? h : span - 1) + 1) &
                           -static_cast<uint64_t>(hi >= v.values[0]);
  // prefix only grows, so upto <= below gives 0 here too.
  return v.prefix[v.rank[upto_at]] & ~v.prefix[v.rank[below_at]];
}

// The events of a cohort whose value of the attribute lies in [lo, hi]
// (INT64_MIN, INT64_MAX: unbounded): a row's lead range
// (cluster_store.h), or a range predicate of a group's unsorted tail
// (PredicateTable::RunTask).
inline uint64_t LeadMask(const LeadValues& v, int64_t lo, int64_t hi) {
  if (v.rank != nullptr) return RankedLeadMask(v, lo, hi);
  // Unbounded sides (kLow and kHigh leads) need no search.
  const uint32_t upto =
      hi == INT64_MAX ? v.count
                      : lead_internal::CountUpTo<true>(v.values, v.count, hi);
  const uint32_t below =
      lo == INT64_MIN ? 0
                      : lead_internal::CountUpTo<false>(v.values, v.count, lo);
  return upto <= below ? 0 : v.prefix[upto] & ~v.prefix[below];
}

// No lead values: the access predicate is an equality.
inline constexpr uint32_t kNoLead = UINT32_MAX;

// A satisfied predicate that may be an access predicate (an equality, or
// "present" on an attribute) and the events that satisfy it; for
// "present", `lead` indexes the cohort's values of that attribute
// (CohortMasks::lead_values), which the rows' lead ranges are checked
// against.
struct TouchedAccess {
  PredicateId id;
  uint32_t lead;
  uint64_t mask;
};

// One cluster list to check in phase 2: its head, the access mask and the
// lead values (as in TouchedAccess).
struct AccessVisit {
  uint32_t head;
  uint32_t lead;
  uint64_t mask;
};

// A satisfied access predicate of one event (the per-event path), with the
// event's value of its attribute (for "present": what the rows' lead
// ranges are checked against).
struct AccessHit {
  PredicateId id;
  int64_t value;
};

class CohortMasks {
 public:
  CohortMasks() = default;
  CohortMasks(const CohortMasks&) = delete;
  CohortMasks& operator=(const CohortMasks&) = delete;

  // Events of the cohort (set by BeginCohort).
  size_t events() const { return events_; }
  // Phase-1 tasks of the cohort and the positions each walks (a cost
  // estimate for schedulers).
  size_t tasks() const { return tasks_.size(); }
  uint32_t task_positions(size_t task) const {
    return tasks_[task].end - tasks_[task].begin + tasks_[task].tail_size;
  }
  // The attribute whose group a task walks (per event: 0).
  AttributeId task_attribute(size_t task) const {
    return per_event_ ? 0 : attributes_[tasks_[task].attribute_index].attribute;
  }
  // Which of `parts` consecutive parts of the cohort's phase-1 positions
  // (each about total_positions() / parts long) the middle of a task falls
  // in. Tasks are listed in the same order in every cohort (attribute id,
  // then group, then position), so part p walks about the same slice of
  // the predicate table and writes about the same masks from cohort to
  // cohort: a scheduler that runs part p's tasks on core p keeps each slice
  // in one core's caches, and gives the cores about equal work. (Cutting
  // the mask slot space into equal parts instead left fabret-1m's busiest
  // of 16 cores with 1.56-1.59x the mean core's phase-1 work, BeginCohort
  // included, since equality slots, which no task walks, lie unevenly in
  // it; by positions, 1.24-1.37x: bench/locality_probe --partitions=16.)
  // REQUIRES: parts >= 1.
  uint32_t task_part(size_t task, uint32_t parts) const {
    if (parts <= 1) return 0;  // one part (or, against the contract, none)
    if (per_event_) return static_cast<uint32_t>(task % parts);
    const Task& t = tasks_[task];
    const uint64_t middle = 2 * t.before + (t.end - t.begin) + t.tail_size;
    return static_cast<uint32_t>(middle * parts / (2 * total_positions_ + 1));
  }
  // Sum of task_positions over all tasks.
  uint64_t total_positions() const { return total_positions_; }
  // Consecutive tasks gathered into batches of at least `min_positions`
  // positions each (the last may hold fewer), for schedulers that hand
  // work to other cores: fabret-1m's 96 tasks a cohort walk about 900
  // positions each, a microsecond or so, less than handing one over costs.
  // Per-event tasks stay one a batch. Sets *bounds so that batch b is
  // tasks [(*bounds)[b], (*bounds)[b + 1]): bounds->size() - 1 batches,
  // the first bound 0 and the last tasks().
  void BatchTasks(uint64_t min_positions,
                  std::vector<uint32_t>* bounds) const {
    bounds->assign(1, 0);
    uint64_t positions = 0;
    for (uint32_t t = 0; t < tasks_.size(); ++t) {
      positions += task_positions(t);
      if (per_event_ || positions >= min_positions) {
        bounds->push_back(t + 1);
        positions = 0;
      }
    }
    if (bounds->back() != tasks_.size()) {
      bounds->push_back(static_cast<uint32_t>(tasks_.size()));
    }
  }
  // task_part of the batch of tasks [first, end): the part its middle
  // position falls in. REQUIRES: parts >= 1; first < end <= tasks().
  uint32_t batch_part(size_t first, size_t end, uint32_t parts) const {
    if (parts <= 1) return 0;
    if (per_event_) return static_cast<uint32_t>(first % parts);
    const Task& last = tasks_[end - 1];
    const uint64_t middle = tasks_[first].before + last.before +
                            (last.end - last.begin) + last.tail_size;
    return static_cast<uint32_t>(middle * parts / (2 * total_positions_ + 1));
  }

  // The masks, indexed by mask slot. Complete once every task has run.
  // REQUIRES: !per_event().
  const uint64_t* words() const { return words_.data(); }
  // The table's slot_limit() when BeginCohort filled the buffer.
  size_t slot_limit() const { return slot_limit_; }

  // Whether the cohort is kept per event, and event i's satisfied
  // predicates then. REQUIRES for event_bits: per_event(), i < events().
  bool per_event() const { return per_event_; }
  const PredicateBits& event_bits(size_t i) const {
    return event_bits_[serial_ ? 0 : i];
  }

  // Serial use (one thread runs each event's task and then that event's
  // phase 2, event by event, as Index does): a cohort kept per event then
  // holds one bit vector, which each task clears and refills, so that the
  // events share one cache footprint. Set before BeginCohort.
  // REQUIRES while set: phase 2 of event i finishes before task i + 1 runs.
  void set_serial(bool serial) { serial_ = serial; }

  // Every equality and "present" predicate some event of the cohort
  // satisfies, with its mask (known after BeginCohort, before the tasks;
  // per event, one entry per event satisfying it, with that event's bit).
  absl::Span<const TouchedAccess> touched_access() const {
    return touched_access_;
  }
  // The values a "present" access's rows check their lead ranges against,
  // for the `lead` of a TouchedAccess or AccessVisit: all the cohort's
  // values of the attribute, or, per event, the one event's value
  // (event_value). For kNoLead (an equality's list, whose rows have no
  // leads) no values and 0, so that callers need not branch.
  int64_t event_value(uint32_t lead) const {
    return lead == kNoLead ? 0 : values_[attributes_[lead].first];
  }
  LeadValues lead_values(uint32_t lead) const {
    if (lead == kNoLead) return {nullptr, nullptr, 0, 0, nullptr};
    const AttributeValues& a = attributes_[lead];
    return {values_.data() + a.first, prefix_.data() + a.prefix_first,
            a.count, a.rank_size,
            a.rank_size > 0 ? ranks_.data() + a.rank_first : nullptr};
  }

  // Cluster lists to visit, by partition: filled by the index that owns the
  // clusters (Index, PartitionedIndex) from touched_access().
  std::vector<std::vector<AccessVisit>>& visits() { return visits_; }
  const std::vector<AccessVisit>& visits(size_t partition) const {
    return visits_[partition];
  }

  // Heap bytes held.
  size_t MemoryBytes() const;

 private:
  friend class PredicateTable;

  // A piece of phase-1 work: positions [begin, end) of the sorted part of
  // one group of one attribute of the cohort, and the group's unsorted tail
  // when tail_size > 0. Slot ranges are recorded so that the next cohort
  // can clear them whatever the table did in between.
  struct Task {
    uint32_t attribute_index;  // into attributes_
    uint8_t kind;              // internal::Kind of the group
    bool runs;                 // kRange: per-value runs, not the walk
    uint32_t begin;
    uint32_t end;
    uint32_t tail_size;
    uint32_t slot_base;        // the group's first slot
    uint32_t tail_slot;        // first slot of the tail
    uint64_t before = 0;       // positions of the tasks listed before it
  };
  // The cohort's values of one attribute, sorted: values_[first, first +
  // count) and prefix_[prefix_first, prefix_first + count + 1), where
  // prefix_[prefix_first + j] ORs the bits of the first j values.
  struct AttributeValues {
    AttributeId attribute;
    uint32_t first;
    uint32_t count;
    uint32_t prefix_first;
    uint32_t runs_first;  // kRange runs (RangeWalkPays said no), one per value
    uint32_t rank_first = 0;  // into ranks_, when rank_size > 0
    uint32_t rank_size = 0;
  };
  struct Run {
    uint32_t begin;
    uint32_t end;
  };
  struct ValueBit {
    int64_t value;
    uint64_t bit;
  };

  std::vector<uint64_t> words_;
  size_t slot_limit_ = 0;  // the table's slot_limit() when filled
  size_t events_ = 0;
  bool per_event_ = false;
  bool serial_ = false;
  std::vector<PredicateBits> event_bits_;  // by event (one if serial_)
  std::vector<EventView> event_views_;     // by event, when per_event_
  // Each event's access hits, in event order, and where each event's
  // begin (BeginCohort's first pass; per event, the tasks read them).
  std::vector<AccessHit> event_access_;
  std::vector<uint32_t> event_hits_begin_;
  // Each event's satisfied sets (kIn) that are no access predicate, which
  // phase 2 reads as columns only, in event order, and where each event's
  // begin: their bits and masks, without an access hit each.
  std::vector<PredicateId> event_sets_;
  std::vector<uint32_t> event_sets_begin_;
  std::vector<Task> tasks_;
  uint64_t total_positions_ = 0;
  std::vector<AttributeValues> attributes_;
  std::vector<int64_t> values_;
  std::vector<uint64_t> prefix_;
  // LeadValues::rank tables, each rank_size + 1 entries (the last: count).
  std::vector<uint8_t> ranks_;
  std::vector<Run> runs_;
  std::vector<uint32_t> dirty_eq_slots_;
  std::vector<TouchedAccess> touched_access_;
  std::vector<std::vector<AccessVisit>> visits_;
  // BeginCohort scratch: (value, bit) pairs by attribute id, and the
  // attributes that have some. Empty between calls (capacity kept).
  std::vector<std::vector<ValueBit>> by_attribute_;
  std::vector<AttributeId> present_attributes_;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_COHORT_MASKS_H_
