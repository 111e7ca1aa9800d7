// The predicate table and phase 1 of the Fabret index.
//
// Subscriptions are normalised into *entries*: each predicate becomes one
// interned, reference-counted predicate of one of five kinds —
//   kEq     x == v
//   kIn     x is one of a set of values (IN with 2 or more distinct values)
//   kLow    x <= hi          (LT/LE; "attribute present" is kLow with hi=MAX)
//   kHigh   x >= lo          (GT/GE)
//   kRange  lo <= x <= hi    (BETWEEN with both bounds finite)
// — NE v becomes two entries: "present" and a *negated* reference to EQ v;
// NOT_IN s likewise "present" and a negated IN s; NOT_EXISTS is a negated
// "present" alone. One more kind, kTrue, holds for every event: it is the
// access predicate of subscriptions whose every entry is negated (NOT_EXISTS
// alone: no attribute an event carries can lead to them), so their rows
// are checked for every event, which is what they cost. Identical
// predicates are stored once and shared. A BETWEEN whose kLow and kHigh
// halves are both live already becomes those two entries instead of a
// kRange (RowPlanner::SplitIfShared).
//
// Phase 1 computes, for a cohort of up to 64 events, one 64-bit *cohort
// mask* per predicate (bit i set iff the predicate holds for event i) into a
// CohortMasks buffer (cohort_masks.h), which is separate from the table so
// that several cohorts can be in flight at once. Equality predicates are
// found by hash lookup, and so are set predicates (kIn): a multimap from
// (attribute, value) to the sets holding the value gives the satisfied sets
// of an event value at once. Equalities and sets ("equality-like") have a
// mask slot each and may be access predicates. Each range kind lives in a
// per-attribute *group* sorted by its bound, and its masks occupy
// consecutive mask slots in that order, so the predicates satisfied by a
// value form a contiguous run (a suffix for kLow, a prefix for kHigh, a
// window for kRange).
//
// `BeginCohort` lists a cohort's work and `RunTask` runs one task of it;
// tasks write disjoint slots, so threads may run them at once: this is how
// the staged server splits phase 1 of a cohort over its cores
// (predicate_table_cohort.cc says how the walks go).
//
// Phase 2 finds a predicate's mask at words()[slots()[id]]; slot 0 belongs
// to the false predicate and is always zero.
//
// The per-event path (`MarkSatisfied`) is the classic Fabret phase 1: it
// sets the bits of one event's satisfied predicates in a caller-owned
// PredicateBits and writes nothing in the table.
//
// Stage: the predicate stage (shared by the partitions of a staged server);
// no threads, no gRPC.
// Thread safety: const methods (MarkSatisfied, BeginCohort, RunTask
// included) only read the table, so any number of threads may call them at
// once (each BeginCohort on its own CohortMasks), provided no thread calls a
// non-const method meanwhile. Non-const methods (Acquire, Release) need
// exclusive access: callers apply subscription changes between cohorts.
// Invariants:
//   - slots()[id] is the mask slot of live predicate id (0 for free ids and
//     the false predicate); the slots of a group's positions are
//     [base, base + size) and distinct from every other live slot.
//   - Slots are only appended (slot_limit() grows) until a compaction, which
//     renumbers them and bumps layout_generation().
#ifndef COHORT_MATCHER_PREDICATE_TABLE_H_
#define COHORT_MATCHER_PREDICATE_TABLE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "matcher/cluster_entry.h"
#include "matcher/cohort_keep.h"
#include "matcher/cohort_masks.h"
#include "matcher/equality_entries.h"
#include "matcher/normal_predicate.h"
#include "matcher/range_filter.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

// Most positions of one phase-1 task: big enough that handing a task to
// another core costs little next to running it (about 10 us of walking),
// small enough that the biggest group of a skewed workload splits into
// several tasks. A multiple of kRangeBlock.
inline constexpr uint32_t kTaskPositions = 4096;
// kRange groups keep their hi order per block of this many positions, so a
// block is walked without looking outside it (block-local indexes fit 16
// bits).
inline constexpr uint32_t kRangeBlock = 1024;

class PredicateTable {
 public:
  PredicateTable();
  ~PredicateTable();
  PredicateTable(const PredicateTable&) = delete;
  PredicateTable& operator=(const PredicateTable&) = delete;

  // Interns `p` (creating it if new) and takes one reference to it.
  // REQUIRES: p is interned, or fewer than kMaxPredicates - 1 predicates
  // are live (RowPlanner::Plan checks this).
  PredicateId Acquire(const NormalPredicate& p);
  // The cluster entry of predicate `id`: the id, kRangeEntryBit for a range
  // kind, kNegatedBit if `negated`, and kOpenBit if `open` (an LT's or GT's
  // kLow or kHigh) or a set (kIn: IsSetEntry; cluster_entry.h).
  // REQUIRES: id is live.
  uint32_t EntryOf(PredicateId id, bool negated, bool open = false) const {
    const Kind kind = info_[id].kind;
    return id |
           (kind == Kind::kLow || kind == Kind::kHigh || kind == Kind::kRange
                ? kRangeEntryBit
                : 0u) |
           (negated ? kNegatedBit : 0u) |
           (open || kind == Kind::kIn ? kOpenBit : 0u);
  }
  // The attribute and the sorted values of set (kIn) predicate `id`, for a
  // cohort's masks computed when read (ClusterStore::SetMask); no values
  // if `id` is no live set (a tombstoned row's entries keep the ids they
  // released, and phase 2 may read them). Const: any number of threads,
  // while no non-const method runs. REQUIRES: id < id_limit().
  AttributeId SetAttribute(PredicateId id) const {
    return info_[id].attribute;
  }
  // (Phase 2 computes a set entry's mask from them: set_values_ makes that
  // one read, where in_sets_ took a hash probe's two misses first.)
  absl::Span<const int64_t> SetValues(PredicateId id) const {
    if (id >= set_values_.size() || set_values_[id] == nullptr) return {};
    return {set_values_[id], static_cast<size_t>(info_[id].hi)};
  }
  // Drops one reference; the predicate is freed (and its id reused later)
  // when the last reference goes. REQUIRES: id was acquired.
  void Release(PredicateId id);
  // A row takes (AddAccessUse) or gives up (DropAccessUse) `id` as its
  // access predicate (RowPlanner): phase 1 lists a satisfied set as an
  // access hit only while some row uses it so. REQUIRES: id is live; drops
  // match adds.
  void AddAccessUse(PredicateId id);
  void DropAccessUse(PredicateId id);
  // A row takes (AddInlineUse) or gives up (DropInlineUse) an inline range
  // on `attribute` (cluster_store.h), which is no predicate of the table:
  // phase 1 of a cohort kept in masks then sorts the cohort's values of
  // the attribute for phase 2 (CohortMasks::attribute_values), even where
  // no predicate is on it. REQUIRES: drops match adds.
  void AddInlineUse(AttributeId attribute);
  void DropInlineUse(AttributeId attribute);

  // Bulk loading (Index::AddBatch): between BeginBulk and EndBulk, Acquire
  // and Release keep no slot layout (a new range predicate joins its
  // group's tail with slot 0; nothing is sorted, placed or compacted), and
  // EndBulk does for each changed group what its last insert would have
  // done one by one, once: merge its tail if due, else give the tail its
  // slots; then compact the slot space if due. REQUIRES between the two:
  // no phase 1 and no use of slots() (not valid until EndBulk).
  void BeginBulk() { bulk_ = true; }
  void EndBulk();

  // The predicate with id `id` (a kIn's set is the table's, valid until
  // the next Acquire or Release). REQUIRES: id is live.
  NormalPredicate Get(PredicateId id) const;
  // Number of references to `id` (0 if free).
  uint32_t References(PredicateId id) const { return info_[id].refs; }
  // Number of references to the predicate `p` stands for (0 if it is not
  // interned).
  uint32_t References(const NormalPredicate& p) const {
    const PredicateId* id = Find(p);
    return id == nullptr ? 0 : info_[*id].refs;
  }
  // References(p), but a range (kLow, kHigh, kRange) is first looked up
  // in a Bloom filter of the table's ranges (RangeFilter): cheaper where p
  // is likely not interned (the row planner's distinct ranges), dearer by
  // the filter's reads where it likely is (fabret-1m's shared ranges: its
  // load ran 0.92-0.96x with every lookup filtered).
  uint32_t ReferencesUnlikely(const NormalPredicate& p) const {
    if (FilteredKind(p.kind) && !range_filter_.MayContain(p)) return 0;
    return References(p);
  }

  // One more than the largest predicate id issued; ids stay below
  // kMaxPredicates (2^29), a cluster entry's room (cluster_entry.h).
  size_t id_limit() const { return info_.size(); }

  // Mask slots by predicate id (see the file comment), one past the largest
  // slot in use, and the layout's generation (bumped when slots are
  // renumbered). Valid until the next Acquire or Release.
  const uint32_t* slots() const { return slot_of_.data(); }
  size_t slot_limit() const { return slot_limit_; }
  uint64_t layout_generation() const { return generation_; }

  // Phase 1 of the per-event path: sets in `bits` the bit of every
  // predicate `event` satisfies (an equality's or set's by id, a range
  // predicate's by its mask slot, slots()), and appends to `access` every
  // satisfied predicate that may be an access predicate (equalities, sets
  // and "present"), each once, with the event's value of its attribute.
  // May also set the bits of slots no live predicate holds (removed
  // positions of a group). Writes nothing in the table.
  // A number with a fraction (AttributeValue::half_above) satisfies no
  // equality or set, and the range predicates as closed intervals; in
  // `open` it sets the bits of the kLow with hi == its floor and the kHigh
  // with lo == its floor + 1, which an open entry (an LT's or GT's,
  // cluster_entry.h) takes as holding besides `bits`.
  // REQUIRES: bits was resized to id_limit() and slot_limit() (open is
  // resized here when needed); open has no bit set; event's attributes are
  // distinct.
  void MarkSatisfied(EventView event, PredicateBits* bits,
                     std::vector<AccessHit>* access,
                     PredicateBits* open) const;

  // The rows listed under an access predicate (0 if none), which the
  // index owning the clusters knows: BeginCohort weighs them.
  using ListRows = absl::FunctionRef<uint32_t(PredicateId)>;

  // Phase 1 of a cohort, first step: clears what `masks` held, decides how
  // to keep the cohort (per event or in masks: `keep`, CohortKeep, weighing
  // `rows`), sets the equality masks (or bits) and
  // masks->touched_access(), and lists the tasks.
  // REQUIRES: 1 <= events.size() <= kMaxCohortChunk; each event's
  // attributes are distinct; no task of masks' previous cohort is running.
  void BeginCohort(absl::Span<const EventView> events, CohortMasks* masks,
                   ListRows rows, CohortKeep keep = CohortKeep::kCheaper) const;
  // Runs task `task` of the cohort BeginCohort set up in `masks`.
  // REQUIRES: task < masks->tasks(); each task runs once; the table has not
  // changed since BeginCohort.
  void RunTask(size_t task, CohortMasks* masks) const;
  // BeginCohort and every task, on the calling thread.
  void ComputeCohort(absl::Span<const EventView> events, CohortMasks* masks,
                     ListRows rows,
                     CohortKeep keep = CohortKeep::kCheaper) const;

  // Live predicates (excluding the false predicate).
  size_t size() const { return live_; }
  // Heap bytes held by the table.
  size_t MemoryBytes() const;

 private:
  struct Info {
    int64_t lo = 0;
    int64_t hi = 0;
    AttributeId attribute = 0;
    Kind kind = Kind::kFree;
    uint32_t refs = 0;
    uint32_t pos = 0;  // range kinds: position in the group
  };

  // All range predicates of one kind on one attribute. Positions [0, sorted)
  // are sorted by (key, hi); [sorted, size) is an unsorted tail of recent
  // inserts, merged in when it grows past a fraction of the sorted part.
  struct RankTable {
    int64_t low = 0;
    std::vector<uint32_t> at;
  };
  // Position i's mask is at slot base + i; [base, base + capacity) is the
  // group's region of the slot space.
  struct Group {
    Group() = default;
    explicit Group(Kind k) : kind(k) {}

    Kind kind = Kind::kLow;
    std::vector<int64_t> key;       // hi for kLow, lo for kHigh and kRange
    // Where the sorted part's keys are dense (BuildRank): rank->at[x -
    // rank->low] is the first sorted position with key >= x, for x from
    // the first sorted key to the last, so that phase 1's searches
    // (FirstAtLeast) are one read each. Null elsewhere (a pointer, not the
    // table: selective-1m's many groups are read per event, and a larger
    // Group cost its cohort 64 about 3%).
    std::unique_ptr<const RankTable> rank;
    std::vector<int64_t> hi;        // kRange only
    std::vector<PredicateId> pred;  // kFreePosition where removed
    // kRange only: per block of kRangeBlock positions of the sorted part,
    // its positions (block-local) in order of hi, and their hi values in
    // that order (the hi-order walk).
    std::vector<uint16_t> by_hi;
    std::vector<int64_t> hi_sorted;
    uint32_t sorted = 0;
    uint32_t dead = 0;
    uint64_t max_width = 0;  // kRange: max hi - lo over the sorted part
    uint32_t base = 0;
    uint32_t capacity = 0;

    uint32_t size() const { return static_cast<uint32_t>(pred.size()); }
  };
  struct AttributeGroups {
    Group low = Group(Kind::kLow);
    Group high = Group(Kind::kHigh);
    Group range = Group(Kind::kRange);
    // "present" (kLow with hi = INT64_MAX), if live: always the last
    // position of the sorted part of `low` or in its tail.
    PredicateId present = kFalsePredicate;
    // Live kIn predicates on the attribute (phase 1 looks an event's value
    // up in in_ids_ only if there are any).
    uint32_t sets = 0;
    // Live inline ranges on the attribute (AddInlineUse): a cohort then
    // lists its values of it (CohortMasks::attribute_values).
    uint32_t inline_uses = 0;
  };
  using Run = CohortMasks::Run;

  Group& GroupOf(Kind kind, AttributeId attribute);
  const Group& GroupOf(Kind kind, AttributeId attribute) const;
  void InsertIntoGroup(PredicateId id);
  void RemoveFromGroup(PredicateId id);
  void Rebuild(Group& g);
  // Whether g's unsorted tail is due to be merged.
  static bool TailDue(const Group& g);
  // Slot layout: gives `g` a region of at least `needed` slots (moving it
  // to the end of the slot space if it does not fit), and points the
  // group's predicates at their slots.
  void Place(Group& g, uint32_t needed);
  void RefreshSlots(const Group& g);
  // Renumbers every slot densely once moved regions and freed equality
  // slots waste too much of the slot space.
  void MaybeCompact();
  void Compact();
  uint32_t NewEqSlot();

  // BeginCohort's steps: the first pass over the events (access hits,
  // values by attribute, the cost model's sizes), the equality masks (the
  // rows of the touched lists' union, for the model's second look), and
  // each attribute's range work and rank table (ListAttributeWork).
  void ListAccessHits(absl::Span<const EventView> events, bool lone,
                      bool weigh, ListRows rows, CohortMasks* m,
                      CohortCost* cost) const;
  template <bool kShare>
  void ListHitsOf(absl::Span<const EventView> events, bool lone, bool weigh,
                  ListRows rows, CohortMasks* m, CohortCost* cost) const;
  double SetEqualityMasks(absl::Span<const EventView> events, ListRows rows,
                          bool weigh, double rows_present,
                          CohortMasks* m) const;
  void ListAttributeWork(CohortMasks* m) const;
  void AddTasks(const Group& g, uint32_t attribute_index,
                CohortMasks* m) const;
  static void AddPieces(const Group& g, uint32_t attribute_index, bool runs,
                        uint32_t begin, uint32_t end, uint32_t align,
                        CohortMasks* m);
  static void ClearPrevious(CohortMasks* m);
  // BeginCohort's end when the cohort is kept per event.
  void KeepPerEvent(absl::Span<const EventView> events, CohortMasks* m) const;
  // KeepPerEvent's range marks of the first values that consecutive events
  // share (CohortMasks::SharedMarks), made once. REQUIRES: ListAccessHits
  // counted them for `events` (m->shared_values_).
  void ShareRangeMarks(absl::Span<const EventView> events,
                       CohortMasks* m) const;
  // Builds the rank table (LeadValues::rank) of m's attribute `index` if
  // its values span at most kMaxRankTable integers.
  static void AddRankTable(uint32_t index, CohortMasks* m);
  // Where the values span more (`last`: the largest offset from the
  // smallest), the bucket table (LeadValues::buckets).
  static void AddBucketTable(uint64_t last, CohortMasks::AttributeValues& a,
                             CohortMasks* m);
  // MarkSatisfied in two halves: the equalities (and the access
  // predicates), and the range groups.
  void MarkEqualities(EventView event, PredicateBits* bits,
                      std::vector<AccessHit>* access) const;
  void MarkRanges(EventView event, PredicateBits* bits,
                  PredicateBits* open) const;
  // MarkRanges for a number with a fraction (AttributeValue::half_above).
  static void MarkHalfRanges(const AttributeGroups& groups,
                             const AttributeValue& av, PredicateBits* bits,
                             PredicateBits* open);

  // The first position of g's sorted part with key >= x (> x): a read of
  // g.rank where it has one, else a binary search.
  // `from`: a position known to be at most the answer, where the search
  // starts (a kRange window's end searched from its start).
  static uint32_t FirstAtLeast(const Group& g, int64_t x, uint32_t from = 0) {
    if (const RankTable* r = g.rank.get()) {
      if (x <= r->low) return 0;
      const uint64_t d =
          static_cast<uint64_t>(x) - static_cast<uint64_t>(r->low);
      return d < r->at.size() ? r->at[d] : g.sorted;
    }
    const int64_t* key = g.key.data();
    return static_cast<uint32_t>(
        std::lower_bound(key + from, key + g.sorted, x) - key);
  }
  static uint32_t FirstAbove(const Group& g, int64_t x, uint32_t from = 0) {
    if (x == std::numeric_limits<int64_t>::max()) return g.sorted;
    return FirstAtLeast(g, x + 1, from);
  }
  // Fills g.rank for its sorted part where that part's keys span at most
  // kRankSpanPerKey values a position (plus kRankSpanSlack); empties it
  // elsewhere.
  static void BuildRank(Group& g);
  static Run SortedRun(const Group& g, int64_t v);
  // The positions of `run`, a sorted run of kRange group `g` (lo within
  // reach), whose hi may be at least `least`, a block of kRangeBlock
  // positions at a time: a block whose every hi is below it is skipped, one
  // whose every hi is at least it is set in `bits` as a run of slots, and
  // the others go to check(begin, end) position by position. Distinct wide
  // ranges (bounds with cents on a double's ordered key, whose widths span
  // exponents) give a run of most of the group, of which few blocks
  // straddle the value (predicate_table_event.cc).
  template <typename Check>
  static void ForEachRangeBlock(const Group& g, Run run, int64_t least,
                                Check&& check, PredicateBits* bits);
  // Whether the kRange walk over `g` is cheaper than one run per value.
  // When it returns false, (*runs)[i] is SortedRun(g, values[i]).
  static bool RangeWalkPays(const Group& g, absl::Span<const int64_t> values,
                            Run walk, std::vector<Run>* runs);
  // The positions [begin, end) of the sorted part a kRange walk must visit:
  // lo within [smallest - max_width, largest].
  static Run RangeWalkSpan(const Group& g, absl::Span<const int64_t> values);

  // Hashes and compares predicate ids by the predicate they stand for, and
  // looks up a NormalPredicate directly, so the set holds 4-byte ids only.
  struct IdHash {
    using is_transparent = void;
    const PredicateTable* table;
    size_t operator()(PredicateId id) const;
    size_t operator()(const NormalPredicate& p) const;
  };
  struct IdEq {
    using is_transparent = void;
    const PredicateTable* table;
    bool operator()(PredicateId a, PredicateId b) const { return a == b; }
    bool operator()(PredicateId a, const NormalPredicate& b) const;
    bool operator()(const NormalPredicate& a, PredicateId b) const {
      return (*this)(b, a);
    }
  };
  NormalPredicate ToNormal(PredicateId id) const;
  // A kIn predicate's set and the rows it is the access predicate of; the
  // sets holding one (attribute, value), access predicates first (in_ids_).
  struct SetInfo {
    std::vector<int64_t> values;
    uint32_t access_rows = 0;
  };
  struct SetHolders {
    std::vector<PredicateId> ids;
    uint32_t accesses = 0;  // ids[0, accesses) are access predicates
  };
  // The live kIn predicates on `attribute` whose set holds `value` (null if
  // none; the first `accesses` are some row's access predicate), and
  // ForEachColumnSet's f(id) for each of the others. REQUIRES: attribute <
  // attributes_.size().
  const SetHolders* HoldersOf(AttributeId attribute, int64_t value) const {
    if (attributes_[attribute].sets == 0) return nullptr;
    auto it = in_ids_.find(std::make_pair(attribute, value));
    return it == in_ids_.end() ? nullptr : &it->second;
  }
  template <typename F>
  void ForEachColumnSet(AttributeId attribute, int64_t value, F f) const {
    if (const SetHolders* h = HoldersOf(attribute, value)) {
      for (size_t i = h->accesses; i < h->ids.size(); ++i) f(h->ids[i]);
    }
  }
  // The kTrue predicate, if live.
  PredicateId true_ = kFalsePredicate;
  // Equality predicates are interned apart, each entry holding its key
  // (equality_entries.h).
  // The id of the equality predicate `attribute == value`, if live. Always
  // inlined: phase 1 looks up every value of a cohort here, and called out
  // of line from ListHitsOf the lookups ran 3.9% more instructions
  // (cachegrind, selective-1m at cohort 64).
  ABSL_ATTRIBUTE_ALWAYS_INLINE const PredicateId* FindEq(AttributeId attribute,
                                                         int64_t value) const {
    auto it = eq_ids_.find(EqKey{attribute, value});
    return it == eq_ids_.end() ? nullptr : &it->id;
  }
  // The id of the predicate `p` stands for, if interned.
  const PredicateId* Find(const NormalPredicate& p) const {
    if (p.kind == Kind::kEq) return FindEq(p.attribute, p.lo);
    auto it = ids_.find(p);
    return it == ids_.end() ? nullptr : &*it;
  }

  std::vector<Info> info_;
  std::vector<uint32_t> slot_of_;  // by predicate id
  std::vector<PredicateId> free_ids_;
  // Every interned predicate but the equalities, which are in eq_ids_.
  absl::flat_hash_set<PredicateId, IdHash, IdEq> ids_;
  absl::flat_hash_set<EqEntry, EqHash, EqSame> eq_ids_;
  // The range predicates ids_ may hold: every live one is in it.
  RangeFilter range_filter_;
  // Refills range_filter_ from the live range predicates (RangeFilter::Add
  // asks for it as the filter fills).
  void RebuildRangeFilter();
  // kIn predicates: the set of each (sorted, distinct) and the rows it is
  // the access predicate of, and for each (attribute, value) the sets
  // holding the value: those that are access predicates first. Most sets
  // are only columns (a subscription is found by a more selective
  // predicate), and phase 1 gives those a bit (per event) but no access
  // hit, so that phase 2 does not look for their (empty) cluster lists: on
  // events-1m an event's type is in thousands of sets. In a cohort kept in
  // masks such a set gets no mask in phase 1: phase 2 computes it from the
  // cohort's values when a row reads it (ClusterStore::SetMask).
  absl::flat_hash_map<PredicateId, SetInfo> in_sets_;
  // By predicate id, a live kIn's values (its SetInfo's, whose heap block
  // stays where it is while in_sets_ moves the SetInfo), else nullptr; as
  // long as the largest such id requires (empty without sets).
  std::vector<const int64_t*> set_values_;
  absl::flat_hash_map<std::pair<AttributeId, int64_t>, SetHolders> in_ids_;
  // Moves set `id` into or out of the access part of its holders' lists.
  void SetAccess(PredicateId id, bool access);
  std::vector<AttributeGroups> attributes_;
  // The slot space: [1, slot_limit_) is in use or wasted; wasted_ counts
  // the slots of regions groups moved out of.
  uint32_t slot_limit_ = 1;
  uint64_t wasted_ = 0;
  std::vector<uint32_t> free_eq_slots_;
  uint64_t generation_ = 0;
  size_t live_ = 0;
  bool bulk_ = false;  // between BeginBulk and EndBulk
  // The groups a bulk load changed, as (attribute, kind) (repeats allowed;
  // not pointers: attributes_ may grow meanwhile), and the range
  // predicates it created.
  std::vector<std::pair<AttributeId, Kind>> bulk_groups_;
  std::vector<PredicateId> bulk_ranges_;
};

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PREDICATE_TABLE_H_
