// The output of phase 1 for one cohort (up to 64 events): one 64-bit *cohort
// mask* per predicate (bit i set iff the predicate holds for event i), the
// access predicates the cohort satisfies, and the phase-1 work still to do,
// cut into *tasks* that several threads may run at once.
//
// A cohort whose events share little is kept per event instead
// (per_event(); BeginCohort chooses by a cost model, cohort_keep.h): a
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
#include "matcher/cluster_entry.h"
#include "matcher/cohort_keep.h"
#include "matcher/lead_values.h"
#include "matcher/predicate_bits.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

class PredicateTable;

// Largest cohort phase 1 can hold at once: one bit per event in a mask.
inline constexpr size_t kMaxCohortChunk = 64;

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
// ranges are checked against). `present`: id is "present" on the attribute,
// the one kind of hit that is not an equality (EqualityLike), said here so
// that phase 1 need not read the predicate's kind: in a large table that
// read was a cache miss a hit, 61% of SetEqualityMasks on events-1m.
struct AccessHit {
  PredicateId id;
  bool present;
  LeadPoint value;
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
  // Event i's open bits (PredicateTable::MarkSatisfied): the boundary
  // predicates of its numbers with fractions, which open entries read.
  // REQUIRES: per_event(), i < events().
  const PredicateBits& event_open_bits(size_t i) const {
    return event_open_bits_[serial_ ? 0 : i];
  }

  // Event i, as BeginCohort saw it. REQUIRES: per_event(), i < events().
  EventView event_view(size_t i) const { return event_views_[i]; }

  // Runs of consecutive events kept per event whose shared first values'
  // range marks were made once (SharedMarks below).
  size_t shared_prefixes() const { return shared_.size(); }

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
  LeadPoint event_value(uint32_t lead) const {
    if (lead == kNoLead) return {};
    const uint32_t first = attributes_[lead].first;
    return {values_[first], upper_[first]};
  }
  // The cohort's values of each attribute, by attribute id, for inline
  // ranges (ClusterStore): as lead_values, for every attribute the table
  // has inline ranges or range predicates on, and no values for the
  // others. As long as the table's attributes when BeginCohort ran.
  // REQUIRES: !per_event(); phase 1 is done.
  const LeadValues* attribute_values() const {
    return attribute_values_.data();
  }
  LeadValues lead_values(uint32_t lead) const {
    if (lead == kNoLead) return {nullptr, nullptr, 0, 0, nullptr};
    const AttributeValues& a = attributes_[lead];
    return {values_.data() + a.first, prefix_.data() + a.prefix_first,
            a.count, a.rank_size,
            a.rank_size > 0 ? ranks_.data() + a.rank_first : nullptr,
            a.buckets ? ranks_.data() + a.rank_first : nullptr,
            a.bucket_shift,
            a.lanes == kNoLanes ? &kAbsentLanes : &lanes_[a.lanes]};
  }

  // Cluster lists to visit, by partition: filled by the index that owns the
  // clusters (Index, PartitionedIndex) from touched_access().
  std::vector<std::vector<AccessVisit>>& visits() { return visits_; }
  const std::vector<AccessVisit>& visits(size_t partition) const {
    return visits_[partition];
  }

  // The table that filled the buffer (BeginCohort), for the sets' values
  // that phase 2 reads (ClusterStore::SetMask).
  const PredicateTable* table() const { return table_; }

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
    uint32_t rank_first = 0;  // into ranks_, when rank_size > 0 or buckets
    uint32_t rank_size = 0;
    bool buckets = false;     // ranks_ holds a bucket table (LeadValues)
    uint32_t bucket_shift = 0;
    uint32_t lanes = kNoLanes;  // into lanes_ (lead_values: LeadValues)
  };
  static constexpr uint32_t kNoLanes = UINT32_MAX;
  struct Run {
    uint32_t begin;
    uint32_t end;
  };
  struct ValueBit {
    int64_t value;
    uint64_t bit;
  };

  std::vector<uint64_t> words_;
  const PredicateTable* table_ = nullptr;  // table()
  size_t slot_limit_ = 0;  // the table's slot_limit() when filled
  size_t events_ = 0;
  bool per_event_ = false;
  bool serial_ = false;
  std::vector<PredicateBits> event_bits_;  // by event (one if serial_)
  std::vector<PredicateBits> event_open_bits_;  // likewise
  // Per event kept, the range marks that consecutive events share: an
  // event whose first values are those of the event before (the records of
  // one JSON event with arrays begin with the event's own values) takes
  // the marks of that shared prefix, made once in BeginCohort, and marks
  // only the rest of its values (PredicateTable::KeepPerEvent, RunTask).
  struct SharedMarks {
    uint32_t prefix;       // the values shared (the events' first ones)
    uint32_t bits_begin;   // into shared_runs_: its range marks
    uint32_t bits_end;
    uint32_t open_end;     // its open bits: shared_runs_ up to here
    uint32_t slot_runs_begin;  // into shared_slot_runs_: its long runs
    uint32_t slot_runs_end;
    uint32_t open_slot_runs_end;  // and its open bits' after them
    bool fractions;        // some shared value has one (open is sized)
  };
  static constexpr uint32_t kNoShare = ~uint32_t{0};
  std::vector<uint32_t> event_share_;  // by event: into shared_, or kNoShare
  // By event, how many first values it shares with the event before
  // (ListAccessHits, ShareRangeMarks); ListAccessHits' scratch: by value
  // of an event and of the one before, where its access hits end.
  std::vector<uint32_t> shared_values_;
  std::vector<uint32_t> value_hits_end_;
  std::vector<uint32_t> prev_value_hits_end_;
  std::vector<SharedMarks> shared_;
  std::vector<PredicateBits::WordRun> shared_runs_;
  std::vector<uint64_t> shared_words_;
  std::vector<PredicateBits::SlotRun> shared_slot_runs_;
  PredicateBits share_scratch_;       // a prefix's marks, then exported
  PredicateBits share_open_scratch_;  // likewise, its open bits
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
  // attribute_values(): by attribute id, set for attributes_' ones.
  std::vector<LeadValues> attribute_values_;
  std::vector<int64_t> values_;
  // Per event, each "present" hit's value as an upper bound sees it
  // (LeadPoint), by values_' index; empty for cohorts kept in masks, which
  // never hold numbers with fractions.
  std::vector<int64_t> upper_;
  std::vector<uint64_t> prefix_;
  // LeadValues::rank tables, each rank_size + 1 entries (the last: count),
  // and bucket tables.
  std::vector<uint8_t> ranks_;
  // EventLanes of the attributes with inline ranges or a "present" list
  // (AttributeValues::lanes).
  std::vector<EventLanes> lanes_;
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
