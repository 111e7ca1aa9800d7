// Over 400 lines: phase 2's scans are templates over the emit
// (match_emits.h), so their bodies live in this header with the class.
//
// Clusters: phase 2 of the Fabret index.
//
// Every subscription lives in exactly one *cluster*: the set of subscriptions
// that share one *access predicate* (see index.h for how it is chosen) and
// the same class of the number of remaining entries (WidthClass: 0, 1, 2,
// 3-4, 5-8, ...), the widest of which is the cluster's *width*; a shorter
// row is padded with an entry that always holds (kPadEntry). A cluster stores
// its rows column-wise in one array: `capacity` subscription ids, then `width`
// columns of `capacity` entries each (an entry is a predicate id with flag
// bits: cohort_masks.h). Clusters of one access predicate form a singly linked
// list whose head the predicate table keeps.
//
// Checking a cluster for a cohort starts from the access predicate's cohort
// mask and streams the columns, ANDing each entry's mask into a per-row
// accumulator, in blocks so the accumulators stay in L1 and a block whose
// rows have all failed stops early. One visit serves every event of the
// cohort, so a cluster is pulled into cache once per cohort.
//
// The per-event path (`MatchListsForEvent`) checks one event's rows against
// a predicate bit vector instead (the classic Fabret phase 2): it streams
// the columns the same way, keeping a list of the rows still alive.
//
// Both paths walk a cohort's (or an event's) cluster lists as one sequence
// of clusters (WalkLists), asking for each cluster's header two clusters
// before its check and for its first cache lines one cluster before: a
// cohort visits thousands of short clusters (fabret-1m: 91 an event, of 17
// rows on average), and each used to wait for its header, then for its
// columns, one after the other.
//
// Rows under a "present" access predicate (subscriptions without an
// equality) also hold their lead range before their ids, and such a
// cluster keeps its rows sorted in runs by the lead's shape
// (cluster_layout.h says how).
//
// Inline ranges: a row's first columns may be ranges kept as their bounds
// (cluster_entry.h, IsInline) instead of predicates, where the row planner
// finds them unlikely to be shared (row_planner.h). A cluster whose rows
// have up to `bounds` of them keeps, after its columns, `bounds` arrays of
// (lo, hi) pairs, one pair a row: two int32 (narrow, NarrowBound) where
// every bound of the cluster fits one, else two int64. Such an
// entry is checked against the event's value of its attribute (per event:
// a table by attribute, EventPoints) or, for a cohort, against the
// cohort's values of it: all at once on vector registers where the CPU has
// AVX2 (InlineColumns over the attribute's EventLanes), else by counting
// its sorted values (LeadMask over CohortMasks::attribute_values). It
// takes no predicate, no mask slot and no phase-1
// work: on ranges-1m, whose ranges are nearly all distinct, phase 1
// marked tens of thousands of them an event and phase 2 read each one's
// bit through a slot table of 24 MB.
//
// Removal leaves a tombstone (id kDeadRow, first entry the false
// predicate; a lead row keeps its lead, for the order, and is skipped by
// its id); a cluster is compacted when tombstones pass a quarter of its
// rows.
//
// Stage: owned by one partition (one ClusterStore per partition of a
// PartitionedIndex); single-threaded by contract.
// Thread safety: const methods only read the store, so any number of threads
// may call them at once, provided no thread calls a non-const method
// meanwhile. Non-const methods need exclusive access.
#ifndef COHORT_MATCHER_CLUSTER_STORE_H_
#define COHORT_MATCHER_CLUSTER_STORE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/types/span.h"
#include "matcher/cluster_entry.h"
#include "matcher/cluster_layout.h"
#include "matcher/cohort_masks.h"
#include "matcher/lead_values.h"
#include "matcher/match_emits.h"
#include "matcher/cohort_matches.h"
#include "matcher/event_lanes.h"
#include "matcher/huge_pages.h"
#include "matcher/predicate_table.h"
#include "matcher/prefetch.h"
#include "matcher/simd.h"
#include "matcher/types.h"
#include "matcher/word_arena.h"

namespace cohort {
namespace matcher {
namespace internal {

// An event's value of an attribute as inline ranges read it: as a lead
// range does (LeadPoint), and clamped to int32 for narrow bounds
// (ClusterStore's NarrowBound).
struct EventPoint {
  int64_t value;
  int64_t upper;
  int32_t narrow_value;
  int32_t narrow_upper;
};

// An event's values by attribute, as inline ranges read them (per event):
// data()[a] is the event's EventPoint of attribute a, for each a below
// `limit`, or {INT64_MIN, INT64_MAX} where the event has no value of it
// (narrow: {INT32_MIN, INT32_MAX}),
// which no inline range holds (none is [INT64_MIN, INT64_MAX]: that is
// "present", never inlined), whichever way round an open one reads it
// (MatchBlockForEvent swaps the two only for a number with a fraction,
// upper == value + 1). A thread's one table, filled for the event and
// emptied again when this goes. Thread safety: one at a time per thread.
class EventPoints {
 public:
  EventPoints(EventView event, uint32_t limit);
  ~EventPoints();
  EventPoints(const EventPoints&) = delete;
  EventPoints& operator=(const EventPoints&) = delete;
  const EventPoint* data() const { return table_; }
  // Whether a value below the limit is a number with a fraction (inline
  // ranges that are open then take the slower check).
  bool fraction() const { return fraction_; }

 private:
  EventView event_;
  uint32_t limit_;
  EventPoint* table_;
  bool fraction_ = false;
};

class ClusterStore {
 public:
  ClusterStore() = default;
  ClusterStore(const ClusterStore&) = delete;
  ClusterStore& operator=(const ClusterStore&) = delete;
  ClusterStore(ClusterStore&&) = default;
  ClusterStore& operator=(ClusterStore&&) = default;
  ~ClusterStore();

  // Appends a row for `id` with `entries` (and `lead`, if any) to the
  // cluster of (`access`, WidthClass(entries.size())) whose list head is
  // `*head`, widening it if it is narrower and creating it if needed.
  // `moved(id, location)` is called with where the new row went, and for
  // each row that moved (a lead cluster merging its tail).
  // REQUIRES: all rows of one list have a lead, or none.
  // The first bounds.size() entries are inline ranges (IsInline), with
  // those bounds, in order; no later entry is one.
  template <typename Moved>
  void AddRow(uint32_t* head, PredicateId access, SubscriptionId id,
              absl::Span<const uint32_t> entries,
              absl::Span<const LeadRange> bounds,
              const std::optional<LeadRange>& lead, Moved&& moved);

  // The entries of a row, its lead range and its access predicate.
  PredicateId Access(uint32_t cluster) const {
    return access_[cluster];
  }
  // The row's own entries (its cluster's width, less the row's padding):
  // appends them to *entries and the bounds of its inline ones (IsInline;
  // open: kInlineOpenBit) to *bounds, in order, and returns how many
  // entries it appended (what Release and AddRow take).
  uint32_t AppendEntries(Location at, std::vector<uint32_t>* entries,
                         std::vector<LeadRange>* bounds) const;
  std::optional<LeadRange> Lead(Location at) const;

  // Bulk loading (Index::AddBatch): between BeginBulk and EndBulk, AddRow
  // merges no lead cluster's tail; EndBulk merges, once, each tail that
  // the batch made due (however many merges its rows would have made one
  // by one), calling moved(id, location) for each row that moved.
  // REQUIRES between the two: no phase 2 (a tail is checked row by row, so
  // it would be correct, but as long as the batch).
  void BeginBulk() { bulk_ = true; }
  template <typename Moved>
  void EndBulk(Moved&& moved);

  // Tombstones the row at `at`. If the cluster becomes empty it is unlinked
  // from the list at `*head` and freed; if tombstones pass a quarter of the
  // rows it is compacted. `moved(id, new_location)` is called for each row
  // that moves.
  template <typename Moved>
  void RemoveRow(uint32_t* head, Location at, Moved&& moved);

  // Phase 2 of a cohort kept in masks: checks every cluster on the lists of
  // `visits`, in order (AccessVisit: a list's head, its access predicate's
  // cohort mask, and its lead values, masks.lead_values(lead)), walked as
  // one sequence of clusters (WalkLists), and calls `emit(id, mask)` for
  // each row whose mask of satisfied events is non-zero: the access mask
  // ANDed with each entry's mask, masks.words()[slots[entry id]] (slots:
  // PredicateTable::slots()), and with a lead range's and each inline
  // range's, the events of masks.attribute_values() within it (on their
  // EventLanes, or by LeadMask without AVX2). Adds the
  // non-empty lists, the clusters and the rows checked to `*lists`,
  // `*clusters` and `*rows`.
  // REQUIRES: !masks.per_event(); masks.attribute_values() holds every
  // attribute of an inline entry (the table's, when the cohort began).
  template <typename Emit>
  void MatchVisits(absl::Span<const AccessVisit> visits,
                   const CohortMasks& masks, const uint32_t* slots,
                   Emit&& emit, uint64_t* lists, uint64_t* clusters,
                   uint64_t* rows) const;

  // Phase 2 of the per-event path, for the lists list_of(0), ...,
  // list_of(n - 1) (EventList), walked as one sequence of clusters as
  // MatchVisits walks them: appends to `*list.matches` the id of every live
  // row of the list whose lead range, if it has one, holds `list.value`
  // (the event's value of the access predicate's attribute) and whose
  // entries all hold in `*list.bits` (PredicateBits::Holds; a negated
  // entry holds when its bit is clear). The access predicate is taken to
  // hold; an inline entry holds where the event's value of its attribute
  // (`event`) lies within its bounds. Counts as MatchVisits counts.
  // REQUIRES: the bits can hold every entry's slot.
  template <typename ListOf>
  void MatchListsForEvent(EventView event, size_t n, ListOf&& list_of,
                          const uint32_t* slots, uint64_t* lists,
                          uint64_t* clusters, uint64_t* rows) const;

  size_t clusters() const { return clusters_.size() - free_.size(); }
  size_t MemoryBytes() const;

 private:
  struct Cluster {
    // With a lead: lo[capacity] and hi[capacity] (an int64 in two words
    // each); then ids[capacity], then width columns, then `bounds` arrays
    // of (lo, hi) pairs (bound_words() a row: two int32, or two int64
    // where `wide`). `capacity` words an array: arrays() of them.
    uint32_t* data = nullptr;  // from the store's arena_; words() of them
    uint32_t rows = 0;
    uint32_t capacity = 0;
    uint32_t dead = 0;
    // Lead clusters: rows [0, sorted) are in order, in three runs by the
    // shape of their lead (LeadRun): [0, sorted_low) with lo INT64_MIN, by
    // hi; [sorted_low, sorted_mid) with both bounds finite, by lo;
    // [sorted_mid, sorted) with hi INT64_MAX, by lo. mid_width bounds
    // hi - lo over the middle run (UINT32_MAX: not bounded), so that a
    // value v needs only its rows with lo >= v - mid_width. The three are
    // kept after the arrays (meta), not here: this header is read on every
    // visit of every cluster, and most clusters have no lead.
    uint32_t sorted = 0;
    uint16_t width = 0;   // at most kMaxPredicatesPerSubscription
    uint8_t lead : 1;     // 1: rows have lead ranges
    uint8_t wide : 1;     // 1: the bounds are int64 (else NarrowBound)
    uint8_t sets : 1;     // 1: some row has had a set's entry (IsSetEntry)
    uint8_t bounds = 0;   // columns [0, bounds) may be inline; <= width
    uint32_t next = kNoCluster;

    Cluster() : lead(0), wide(0), sets(0) {}
    uint32_t bound_words() const { return wide ? 4u : 2u; }
    uint32_t arrays() const {
      return width + 1u + (lead ? 4u : 0u) + bound_words() * bounds;
    }
    // Words of data: the arrays, and a lead cluster's meta.
    size_t words() const {
      return size_t{capacity} * arrays() + (lead ? kLeadMetaWords : 0);
    }
    // REQUIRES for meta and the three below: lead, capacity > 0.
    uint32_t* meta() { return data + size_t{capacity} * arrays(); }
    const uint32_t* meta() const {
      return data + size_t{capacity} * arrays();
    }
    uint32_t sorted_low() const { return meta()[0]; }
    uint32_t sorted_mid() const { return meta()[1]; }
    uint32_t mid_width() const { return meta()[2]; }
    // Words before the ids: the lead ranges'.
    size_t lead_words() const { return lead ? size_t{4} * capacity : 0; }
    uint32_t* ids() { return data + lead_words(); }
    const uint32_t* ids() const { return data + lead_words(); }
    uint32_t* column(uint32_t c) { return ids() + (c + 1) * capacity; }
    const uint32_t* column(uint32_t c) const {
      return ids() + (c + 1) * capacity;
    }
    // Column c's (lo, hi) pairs. REQUIRES: c < bounds.
    uint32_t* bound_pairs(uint32_t c) {
      return ids() +
             (size_t{width} + 1 + bound_words() * size_t{c}) * capacity;
    }
    const uint32_t* bound_pairs(uint32_t c) const {
      return ids() +
             (size_t{width} + 1 + bound_words() * size_t{c}) * capacity;
    }
    LeadRange GetBounds(uint32_t c, uint32_t row) const {
      const uint32_t* pair = bound_pairs(c) + bound_words() * size_t{row};
      const bool open = (column(c)[row] & kInlineOpenBit) != 0;
      if (wide) return {LoadInt64(pair), LoadInt64(pair + 2), open};
      return {WidenBound(static_cast<int32_t>(pair[0])),
              WidenBound(static_cast<int32_t>(pair[1])), open};
    }
    // REQUIRES: wide, or NarrowBounds(r).
    void SetBounds(uint32_t c, uint32_t row, const LeadRange& r) {
      uint32_t* pair = bound_pairs(c) + bound_words() * size_t{row};
      if (wide) {
        std::memcpy(pair, &r.lo, sizeof(int64_t));
        std::memcpy(pair + 2, &r.hi, sizeof(int64_t));
        return;
      }
      pair[0] = static_cast<uint32_t>(NarrowBound(r.lo));
      pair[1] = static_cast<uint32_t>(NarrowBound(r.hi));
    }
    // REQUIRES for the rest: lead.
    const uint32_t* lead_lo() const { return data; }
    const uint32_t* lead_hi() const { return data + 2 * capacity; }
    int64_t lo(uint32_t row) const { return LoadInt64(lead_lo() + 2 * row); }
    int64_t hi(uint32_t row) const { return LoadInt64(lead_hi() + 2 * row); }
    LeadRange GetLead(uint32_t row) const {
      return {lo(row), hi(row), (ids()[row] & kOpenLeadBit) != 0};
    }
    void SetLead(uint32_t row, LeadRange r) {
      std::memcpy(data + 2 * row, &r.lo, sizeof(int64_t));
      std::memcpy(data + 2 * (capacity + row), &r.hi, sizeof(int64_t));
    }
    // The rows of the sorted part whose lead may hold for some value in
    // [smallest, largest], one window a run: of the leads with lo
    // INT64_MIN (in order of hi) those with hi < smallest are a prefix; of
    // the others (in order of lo) those with lo > largest are a suffix,
    // and of the finite ones those with lo < smallest - mid_width a
    // prefix.
    struct Window {
      uint32_t from;
      uint32_t to;
    };
    struct Windows {
      Window run[3];
    };
    Windows SortedWindows(int64_t smallest, int64_t largest) const;
  };
  static_assert(sizeof(Cluster) == 32, "a header a half cache line");
  // Narrow bounds: a bound strictly within int32's range is kept as it is,
  // INT64_MIN as INT32_MIN and INT64_MAX as INT32_MAX (the unbounded
  // sides). An event's value is then compared clamped to int32 (
  // EventPoints), which keeps every comparison's answer: no finite bound
  // is INT32_MIN or INT32_MAX. On ranges-1m (values below a million) they
  // halve the bounds' bytes, which phase 2 streams for every live row.
  static bool NarrowBounds(const LeadRange& r) {
    auto fits = [](int64_t b, int64_t unbounded) {
      return b == unbounded || (b > INT32_MIN && b < INT32_MAX);
    };
    return fits(r.lo, INT64_MIN) && fits(r.hi, INT64_MAX);
  }
  static int32_t NarrowBound(int64_t b) {
    return b == INT64_MIN   ? INT32_MIN
           : b == INT64_MAX ? INT32_MAX
                            : static_cast<int32_t>(b);
  }
  static int64_t WidenBound(int32_t b) {
    return b == INT32_MIN ? INT64_MIN : b == INT32_MAX ? INT64_MAX : b;
  }
  static int64_t LoadInt64(const uint32_t* p) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // Calls visit(v, cluster) for each cluster of the lists whose heads are
  // head_of(0), ..., head_of(n - 1) (kNoCluster: an empty list), in order,
  // and returns how many of the lists were not empty. A cluster's header
  // is asked for three visits before it is checked, and its first lines
  // (PrefetchRows) two visits before (one visit before ran fabret-1m
  // 0.95-0.97x, once the prefetches were in the build: prefetch.h).
  template <typename HeadOf, typename Visit>
  size_t WalkLists(size_t n, HeadOf&& head_of, Visit&& visit) const;
  // Asks for the first cache lines of each of c's arrays (all of them for a
  // small cluster); nothing for a lead cluster.
  static void PrefetchRows(const Cluster& c);

  uint32_t NewCluster(uint32_t* head, PredicateId access, uint32_t width,
                      bool lead);
  // Finds or creates the cluster for a row and appends the row to it.
  Location AppendRow(uint32_t* head, PredicateId access, SubscriptionId id,
                     absl::Span<const uint32_t> entries,
                     absl::Span<const LeadRange> bounds,
                     const std::optional<LeadRange>& lead);
  // Lead clusters: whether the tail is due to be merged, and the merge:
  // sorts the live rows by lead (tombstones dropped) and lists in
  // moved_scratch_ the new row of each row that moved.
  static bool TailDue(const Cluster& c);
  void MergeTail(Cluster& c);
  // How many rows a full cluster grows to: by half again, but a lead
  // cluster in bulk of kBulkDoublingFrom rows or more doubles (EndBulk
  // merges it into an array of its size, or trims it: TrimBulkGrowth).
  uint32_t GrownCapacity(const Cluster& c) const;
  static constexpr uint32_t kBulkDoublingFrom = 1024;
  // A lead cluster that grew in bulk but is not merged at its end: back to
  // at most the room growth by half would have left.
  void TrimBulkGrowth(Cluster& c);
  // Row order[i] of c into row i of `into` for each i; `into` is as wide
  // as c (MergeTail).
  static void GatherRows(const Cluster& c, const std::vector<uint32_t>& order,
                         Cluster& into);
  // Copies row `from` of `c` to row `to` of `into` (same layout, any
  // capacity).
  static void CopyRow(const Cluster& c, uint32_t from, Cluster& into,
                      uint32_t to);
  void Unlink(uint32_t* head, uint32_t index);
  void Resize(Cluster& c, uint32_t capacity);
  // Gives cluster c `width` columns, padding every row, and `bounds`
  // arrays of bounds (at least what it has), of int64 if `wide` (which c's
  // must be if they are).
  void Widen(Cluster& c, uint32_t width, uint32_t bounds, bool wide);
  // Moves c's rows to new arrays of `capacity` rows, `width` columns and
  // `bounds` bounds arrays, wide or not (each at least c's; capacity at
  // least its rows), padding the new columns.
  void Relayout(Cluster& c, uint32_t capacity, uint32_t width,
                uint32_t bounds, bool wide);
  // What a cohort's check reads besides a cluster: the slots and masks of
  // predicates, the cohort's values by attribute for inline ranges and
  // sets, and the table, for the sets' values.
  struct MaskSources {
    const uint32_t* slots;
    const uint64_t* words;
    const LeadValues* by_attribute;
    const PredicateTable* table;
  };
  // The cohort mask of a set's entry (IsSetEntry), computed as it is read:
  // the events whose value of the set's attribute is one of its values,
  // flipped when negated. Phase 1 wrote every such set's mask instead,
  // for each of the cohort's values every set holding it: on events-1m,
  // whose popular event types are in thousands of lists, that was about
  // half of a cohort of 64, for the few rows phase 2 reaches.
  static uint64_t SetMask(uint32_t e, const MaskSources& from) {
    const PredicateId id = e & kEntryIdMask;
    const LeadValues& v = from.by_attribute[from.table->SetAttribute(id)];
    uint64_t mask = 0;
    if (v.count > 0) {
      for (int64_t x : from.table->SetValues(id)) mask |= LeadMask(v, x, x);
    }
    return mask ^ -static_cast<uint64_t>(e >> 31);
  }
  // An entry's cohort mask: a set's computed, else its predicate's.
  // kSets: the cluster may hold sets' entries (Cluster::sets); checking for
  // them in every entry of the others cost fabret-1m's cohort 64 11%.
  template <bool kSets>
  static uint64_t ColumnMask(uint32_t e, const MaskSources& from) {
    if (kSets && IsSetEntry(e)) return SetMask(e, from);
    return EntryMask(e, from.slots, from.words);
  }
  // A cluster's inline columns [k, c.bounds), rows [start, start + n),
  // for a cohort: ANDs into acc[j - start], for each row still alive, its
  // entry's mask. An inline range's is its attribute's events within its
  // bounds by `Lanes` (Mask for narrow bounds, kWide: c.wide, WideMask for
  // int64 ones), or, for an NE's (kInlineNotBit), the events with a value
  // outside them. Returns whether a row is still alive. On lanes, compiled
  // into one function a target (`flatten` inlines the kernels).
  template <bool kSets, bool kWide, typename Lanes>
  static bool InlineColumns(const Cluster& c, uint32_t start, uint32_t n,
                            uint32_t k, const MaskSources& from,
                            uint64_t* acc) {
    // The rows still alive, in order: a branch a row on whether it is
    // mispredicted about as often as not.
    uint32_t live[kMatchBlock];
    uint32_t count = 0;
    for (uint32_t j = 0; j < n; ++j) {
      live[count] = j;
      count += acc[j] != 0;
    }
    constexpr uint32_t kPair = kWide ? 4 : 2;  // words a row's bounds take
    for (; k < c.bounds && count != 0; ++k) {
      const uint32_t* col = c.column(k) + start;
      const uint32_t* pairs = c.bound_pairs(k) + kPair * size_t{start};
      uint32_t out = 0;
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t j = live[i];
        const uint32_t ahead = live[std::min(i + 16, count - 1)];
        __builtin_prefetch(col + ahead);
        __builtin_prefetch(pairs + kPair * ahead);
        const uint32_t e = col[j];
        uint64_t mask;
        if (IsInline(e)) {
          const LeadValues& v = from.by_attribute[InlineAttribute(e)];
          const uint32_t* pair = pairs + kPair * j;
          uint64_t within;
          if constexpr (kWide) {
            within = Lanes::WideMask(v, LoadInt64(pair), LoadInt64(pair + 2));
          } else {
            within = Lanes::Mask(v, static_cast<int32_t>(pair[0]),
                                 static_cast<int32_t>(pair[1]));
          }
          mask = (e & kInlineNotBit) == 0 ? within
                                          : Lanes::Present(v) & ~within;
        } else {
          mask = ColumnMask<kSets>(e, from);
        }
        acc[j] &= mask;
        live[out] = j;
        out += acc[j] != 0;
      }
      count = out;
    }
    return count != 0;
  }
  // A lead cluster's rows [start, start + n) for a cohort whose values of
  // the lead's attribute are `lead` (its EventLanes): acc[j - start] is
  // the row's lead mask, ANDed with access_mask where the row is alive;
  // returns the OR of acc. Where the lanes are exact the lead's bounds
  // compare clamped on the int32 lanes, else on the int64 ones.
  template <typename Lanes>
  static uint64_t LeadLaneMasks(const Cluster& c, uint32_t start, uint32_t n,
                                uint64_t access_mask, const LeadValues& lead,
                                uint64_t* acc) {
    const uint32_t* ids = c.ids();
    uint64_t any = 0;
    const bool exact = lead.lanes->exact;
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      if (j % 8 == 0) {
        __builtin_prefetch(c.lead_lo() + 2 * (row + 64));
        __builtin_prefetch(c.lead_hi() + 2 * (row + 64));
        __builtin_prefetch(ids + row + 64);
      }
      const uint64_t live = ids[row] == kDeadRow ? 0 : access_mask;
      const int64_t lo = c.lo(row);
      const int64_t hi = c.hi(row);
      acc[j] = live & (exact ? Lanes::Mask(lead, Clamp32(lo), Clamp32(hi))
                             : Lanes::WideMask(lead, lo, hi));
      any |= acc[j];
    }
    return any;
  }
  // How InlineColumns and LeadLaneMasks find the events of `v` within a
  // range (Mask, WideMask), and the events with a value of its attribute
  // (Present): on its EventLanes, by the AVX2 or the AVX-512 kernels, or,
  // on a CPU without AVX2, by counting its sorted values (LeadMask).
  // kAvx512: the AVX-512 kernels, else the AVX2 ones.
  template <bool kAvx512>
  struct VectorLanes {
    static uint64_t Mask(const LeadValues& v, int32_t lo, int32_t hi) {
      return Within(v.lanes->value, v.lanes->present, lo, hi);
    }
    static uint64_t WideMask(const LeadValues& v, int64_t lo, int64_t hi) {
      return Within(v.lanes->wide, v.lanes->present, lo, hi);
    }
    static uint64_t Present(const LeadValues& v) { return v.lanes->present; }

   private:
    template <typename T>
    static uint64_t Within(const T* values, uint64_t present, T lo, T hi) {
      if constexpr (kAvx512) {
        return LaneMaskAvx512(values, present, lo, hi);
      } else {
        return LaneMaskAvx2(values, present, lo, hi);
      }
    }
  };
  using Avx2Lanes = VectorLanes<false>;
  using Avx512Lanes = VectorLanes<true>;
  struct CountedLanes {
    static uint64_t Mask(const LeadValues& v, int32_t lo, int32_t hi) {
      return LeadMask(v, WidenBound(lo), WidenBound(hi));
    }
    static uint64_t WideMask(const LeadValues& v, int64_t lo, int64_t hi) {
      return LeadMask(v, lo, hi);
    }
    static uint64_t Present(const LeadValues& v) {
      return v.count == 0 ? 0 : v.prefix[v.count];
    }
  };
  __attribute__((target("avx2"), flatten)) static uint64_t LeadLaneMasksAvx2(
      const Cluster& c, uint32_t start, uint32_t n, uint64_t access_mask,
      const LeadValues& lead, uint64_t* acc) {
    return LeadLaneMasks<Avx2Lanes>(c, start, n, access_mask, lead, acc);
  }
  __attribute__((target("avx512f"), flatten)) static uint64_t
  LeadLaneMasksAvx512(const Cluster& c, uint32_t start, uint32_t n,
                      uint64_t access_mask, const LeadValues& lead,
                      uint64_t* acc) {
    return LeadLaneMasks<Avx512Lanes>(c, start, n, access_mask, lead, acc);
  }
  template <bool kSets, bool kWide>
  __attribute__((target("avx2"), flatten)) static bool InlineColumnsAvx2(
      const Cluster& c, uint32_t start, uint32_t n, uint32_t k,
      const MaskSources& from, uint64_t* acc) {
    return InlineColumns<kSets, kWide, Avx2Lanes>(c, start, n, k, from, acc);
  }
  template <bool kSets, bool kWide>
  __attribute__((target("avx512f"), flatten)) static bool InlineColumnsAvx512(
      const Cluster& c, uint32_t start, uint32_t n, uint32_t k,
      const MaskSources& from, uint64_t* acc) {
    return InlineColumns<kSets, kWide, Avx512Lanes>(c, start, n, k, from,
                                                    acc);
  }
  // InlineColumns for c's width of bounds, on the widest kernels the CPU
  // has (counting without AVX2).
  template <bool kSets>
  static bool InlineColumnsFor(const Cluster& c, uint32_t start, uint32_t n,
                               uint32_t k, const MaskSources& from,
                               uint64_t* acc) {
    if (UseAvx512()) {
      return c.wide ? InlineColumnsAvx512<kSets, true>(c, start, n, k, from,
                                                       acc)
                    : InlineColumnsAvx512<kSets, false>(c, start, n, k, from,
                                                        acc);
    }
    if (UseAvx2()) {
      return c.wide
                 ? InlineColumnsAvx2<kSets, true>(c, start, n, k, from, acc)
                 : InlineColumnsAvx2<kSets, false>(c, start, n, k, from, acc);
    }
    return c.wide ? InlineColumns<kSets, true, CountedLanes>(c, start, n, k,
                                                             from, acc)
                  : InlineColumns<kSets, false, CountedLanes>(c, start, n, k,
                                                              from, acc);
  }
  // Returns the rows visited.
  template <typename Emit>
  size_t MatchCluster(const Cluster& c, uint64_t access_mask,
                      const LeadValues* lead, const MaskSources& from,
                      bool every_row, Emit& emit) const;
  // Rows [start, start + n) of c; acc holds kMatchBlock words. every_row:
  // the columns after the first are read for every row of the block, dead
  // ones included, without a branch (MatchVisits says when).
  // kSets: c.sets.
  template <bool kSets, typename Emit>
  static void MatchBlock(const Cluster& c, uint32_t start, uint32_t n,
                         uint64_t access_mask, const LeadValues* lead,
                         lead_internal::SortedLeadMasks& sorted,
                         const MaskSources& from, bool every_row,
                         uint64_t* acc, Emit& emit);
  // Adds the rows visited to *visited. `open`: the event's open bits
  // (PredicateTable::MarkSatisfied), read by open entries; `points`: the
  // event's values by attribute, read by inline entries (EventPoints).
  static void MatchClusterForEvent(const Cluster& c, LeadPoint value,
                                   const uint32_t* slots,
                                   const PredicateBits& bits,
                                   const PredicateBits& open,
                                   const EventPoints& points,
                                   std::vector<SubscriptionId>* matches,
                                   uint64_t* visited);
  // What a lead row's check must still test of its lead, given the window
  // it lies in (MatchClusterForEvent says when each applies).
  enum class LeadTest : uint8_t { kBoth, kUpper, kNone };
  // Rows [start, start + n) of c; alive holds kEventBlock entries. kOpen:
  // the event holds a number with a fraction, so open entries also read
  // `open` (null otherwise) and open leads swap the value's two tests;
  // kRuns: `bits` or `open` keeps long runs (PredicateBits::has_runs);
  // kSelect: neither, and the slot table is cached
  // (!PredicateBits::large_slot_table), so entries are checked without a
  // branch on their kind (PredicateBits::HoldsBySelect); where the CPU has
  // AVX-512 and the cluster no inline columns, MatchClusterForEvent takes
  // MatchBlockForEventAvx512 instead.
  template <bool kOpen, bool kRuns, bool kSelect = false>
  static void MatchBlockForEvent(const Cluster& c, uint32_t start, uint32_t n,
                                 LeadTest test, LeadPoint value,
                                 const uint32_t* slots,
                                 const PredicateBits& bits,
                                 const PredicateBits* open,
                                 const EventPoint* points, uint32_t* alive,
                                 std::vector<SubscriptionId>* matches);

  // MatchBlockForEvent<false, false, true> with AVX-512 F, for a block of
  // at most kEventBlock rows and a cluster without inline columns
  // (c.bounds == 0): sixteen rows at a time, the rows still alive kept as
  // bits. REQUIRES: UseAvx512().
  __attribute__((target("avx512f,popcnt"))) static void
  MatchBlockForEventAvx512(const Cluster& c, uint32_t start, uint32_t n,
                           LeadTest test, LeadPoint value,
                           const uint32_t* slots, const PredicateBits& bits,
                           std::vector<SubscriptionId>* matches);

  // Frees c's arrays (if any) back to arena_.
  void FreeData(Cluster& c);

  WordArena arena_;  // every cluster's arrays
  // Read at every cluster visited: on 2 MB pages where it is large. Its
  // headers are 32 bytes, so none straddles two cache lines (WalkLists
  // prefetches one line a header; with a 40-byte header, one in five was
  // a miss on its second line).
  std::vector<Cluster, HugePageAllocator<Cluster>> clusters_;
  // Each cluster's access predicate (read on removals only), by index.
  std::vector<PredicateId> access_;
  std::vector<uint32_t> free_;
  // MergeTail's: a live row's lead and its run, sorted into the order.
  struct SortKey {
    int64_t lo;
    int64_t hi;
    uint32_t row;
    uint32_t run;
  };
  static constexpr size_t kKeptSortKeys = 4096;
  std::vector<SortKey> keys_scratch_;
  std::vector<uint32_t> order_scratch_;  // MergeTail's
  std::vector<uint32_t> moved_scratch_;  // MergeTail's: new rows that moved
  bool bulk_ = false;                    // between BeginBulk and EndBulk
  // One past the largest attribute of an inline entry ever added (0:
  // none): how much of EventPoints' table the per-event path fills.
  uint32_t inline_limit_ = 0;
  // Lead clusters added to in bulk, each once (bulk_marks_ by index).
  std::vector<uint32_t> bulk_clusters_;
  std::vector<bool> bulk_marks_;
};

template <typename Moved>
void ClusterStore::AddRow(uint32_t* head, PredicateId access,
                          SubscriptionId id,
                          absl::Span<const uint32_t> entries,
                          absl::Span<const LeadRange> bounds,
                          const std::optional<LeadRange>& lead,
                          Moved&& moved) {
  const Location at = AppendRow(head, access, id, entries, bounds, lead);
  moved(id, at);
  Cluster& c = clusters_[at.cluster];
  if (!c.lead) return;
  if (bulk_) {
    if (bulk_marks_.size() <= at.cluster) bulk_marks_.resize(at.cluster + 1);
    if (!bulk_marks_[at.cluster]) {
      bulk_marks_[at.cluster] = true;
      bulk_clusters_.push_back(at.cluster);
    }
    return;
  }
  if (!TailDue(c)) return;
  MergeTail(c);
  for (uint32_t row : moved_scratch_) {
    moved(c.ids()[row] & kRowIdMask, Location{at.cluster, row});
  }
}

template <typename Moved>
void ClusterStore::EndBulk(Moved&& moved) {
  bulk_ = false;
  std::sort(bulk_clusters_.begin(), bulk_clusters_.end());
  for (uint32_t index : bulk_clusters_) {
    Cluster& c = clusters_[index];
    if (!TailDue(c)) {
      TrimBulkGrowth(c);
      continue;
    }
    MergeTail(c);
    for (uint32_t row : moved_scratch_) {
      moved(c.ids()[row] & kRowIdMask, Location{index, row});
    }
  }
  bulk_clusters_.clear();
  bulk_clusters_.shrink_to_fit();
  bulk_marks_.clear();
  bulk_marks_.shrink_to_fit();
}

template <typename Moved>
void ClusterStore::RemoveRow(uint32_t* head, Location at, Moved&& moved) {
  Cluster& c = clusters_[at.cluster];
  c.ids()[at.row] = kDeadRow;
  if (c.width > 0) c.column(0)[at.row] = kFalsePredicate;
  ++c.dead;
  if (c.dead == c.rows) {
    Unlink(head, at.cluster);
    return;
  }
  // Compact at a quarter dead: tombstones cost a column read each per visit.
  if (c.dead * 4 <= c.rows || c.dead < 8) return;
  // In place and in order, so a lead cluster's sorted part stays sorted.
  const uint32_t old_low = c.lead ? c.sorted_low() : 0;
  const uint32_t old_mid = c.lead ? c.sorted_mid() : 0;
  uint32_t out = 0, sorted = 0, low = 0, mid = 0;
  for (uint32_t row = 0; row < c.rows; ++row) {
    const SubscriptionId id = c.ids()[row] & kRowIdMask;
    if (c.ids()[row] == kDeadRow) continue;
    if (out != row) {
      CopyRow(c, row, c, out);
      moved(id, Location{at.cluster, out});
    }
    ++out;
    if (row < c.sorted) sorted = out;
    if (row < old_low) low = out;
    if (row < old_mid) mid = out;
  }
  c.rows = out;
  c.sorted = sorted;
  if (c.lead) {
    c.meta()[0] = low;
    c.meta()[1] = mid;  // mid_width still bounds the middle run
  }
  c.dead = 0;
  if (c.capacity > 2 * c.rows) Resize(c, c.rows);
}

template <typename HeadOf, typename Visit>
size_t ClusterStore::WalkLists(size_t n, HeadOf&& head_of,
                               Visit&& visit) const {
  struct At {
    uint32_t cluster;  // kNoCluster: past the last list
    size_t list;
  };
  size_t lists = 0;  // non-empty lists found
  // The first cluster of lists [list, n).
  auto first_from = [&](size_t list) -> At {
    for (; list < n; ++list) {
      const uint32_t head = head_of(list);
      if (head != kNoCluster) {
        ++lists;
        return {head, list};
      }
    }
    return {kNoCluster, n};
  };
  // The cluster after `at` (whose header was asked for a visit ago): next
  // on its list, or the next list's head. Asks for that one's header and
  // for at's rows.
  auto after = [&](At at) -> At {
    const Cluster& c = clusters_[at.cluster];
    const At next =
        c.next != kNoCluster ? At{c.next, at.list} : first_from(at.list + 1);
    if (next.cluster != kNoCluster) PrefetchLine(&clusters_[next.cluster]);
    PrefetchRows(c);
    return next;
  };
  auto step = [&](At at) {
    return at.cluster == kNoCluster ? at : after(at);
  };
  // Rows asked for two visits ahead, headers three.
  At now = first_from(0);
  if (now.cluster == kNoCluster) return lists;
  At next = step(now);
  At later = step(next);
  while (true) {
    const At last = step(later);
    visit(now.list, clusters_[now.cluster]);
    if (next.cluster == kNoCluster) return lists;
    now = next;
    next = later;
    later = last;
  }
}

inline void ClusterStore::PrefetchRows(const Cluster& c) {
  // A lead cluster's check starts where its sorted windows do, found by
  // searches that need its meta (where the runs end) first: its first
  // lines are not what it reads first.
  if (c.lead) {
    if (c.capacity > 0) PrefetchLine(c.meta());
    return;
  }
  constexpr size_t kLine = 64 / sizeof(uint32_t);  // words per cache line
  const uint32_t* data = c.data;
  const size_t words = static_cast<size_t>(c.capacity) * c.arrays();
  if (words <= 8 * kLine) {
    for (size_t w = 0; w < words; w += kLine) PrefetchLine(data + w);
    return;
  }
  const uint32_t arrays = std::min<uint32_t>(c.arrays(), 8);
  for (uint32_t a = 0; a < arrays; ++a) {
    PrefetchLine(data + static_cast<size_t>(a) * c.capacity);
  }
}

template <typename Emit>
void ClusterStore::MatchVisits(absl::Span<const AccessVisit> visits,
                               const CohortMasks& masks,
                               const uint32_t* slots, Emit&& emit,
                               uint64_t* lists, uint64_t* clusters,
                               uint64_t* rows) const {
  const uint64_t* words = masks.words();
  // Once a block's first column has ANDed in, about half of fabret-1m's
  // rows are still alive, and a branch per row on whether it is
  // mispredicts about as often: reading every row's entry instead ran
  // cohorts of 64 at 1.05-1.08x. That pays only while the extra reads hit
  // the cache: with a slot table past kCachedSlots (ranges-1m: 5.9M
  // slots) every row's read cost 0.73x.
  const bool every_row = !SlotTableUncached(masks.slot_limit());
  const MaskSources from{slots, words, masks.attribute_values(),
                         masks.table()};
  *lists += WalkLists(
      visits.size(), [&](size_t v) { return visits[v].head; },
      [&](size_t v, const Cluster& c) {
        const LeadValues lead =
            c.lead ? masks.lead_values(visits[v].lead) : LeadValues{};
        *rows += MatchCluster(c, visits[v].mask, &lead, from, every_row,
                              emit);
        ++*clusters;
      });
}

template <typename ListOf>
void ClusterStore::MatchListsForEvent(EventView event, size_t n,
                                      ListOf&& list_of,
                                      const uint32_t* slots,
                                      uint64_t* lists, uint64_t* clusters,
                                      uint64_t* rows) const {
  const EventPoints points(event, inline_limit_);
  *lists += WalkLists(
      n, [&](size_t v) { return list_of(v).head; },
      [&](size_t v, const Cluster& c) {
        const EventList list = list_of(v);
        MatchClusterForEvent(c, list.value, slots, *list.bits, *list.open,
                             points, list.matches, rows);
        ++*clusters;
      });
}

template <typename Emit>
size_t ClusterStore::MatchCluster(const Cluster& c, uint64_t access_mask,
                                  const LeadValues* lead,
                                  const MaskSources& from, bool every_row,
                                  Emit& emit) const {
  const uint32_t* ids = c.ids();
  if (c.width == 0 && !c.lead) {
    for (uint32_t row = 0; row < c.rows; ++row) {
      if (ids[row] != kDeadRow) emit(ids[row], access_mask);
    }
    return c.rows;
  }
  uint64_t acc[kMatchBlock];
  // Four runs of rows: the sorted runs' windows for the cohort's values
  // (SortedWindows), and the tail (without a lead: one run, all rows).
  Cluster::Window runs[4] = {{0, 0}, {0, 0}, {0, 0}, {0, c.rows}};
  if (c.lead) {
    if (lead->count > 0) {
      const Cluster::Windows w =
          c.SortedWindows(lead->values[0], lead->values[lead->count - 1]);
      for (int r = 0; r < 3; ++r) runs[r] = w.run[r];
    }
    runs[3].from = c.sorted;
  }
  size_t visited = 0;
  for (const Cluster::Window& run : runs) {
    visited += run.to - run.from;
    // A sorted run's lo never decreases (SortedLeadMasks): one walk a run.
    lead_internal::SortedLeadMasks sorted(c.lead ? *lead : LeadValues{});
    for (uint32_t start = run.from, end; start < run.to; start = end) {
      end = std::min(start + kMatchBlock, run.to);
      if (c.sets) {
        MatchBlock<true>(c, start, end - start, access_mask, lead, sorted,
                         from, every_row, acc, emit);
      } else {
        MatchBlock<false>(c, start, end - start, access_mask, lead, sorted,
                          from, every_row, acc, emit);
      }
    }
  }
  return visited;
}

template <bool kSets, typename Emit>
void ClusterStore::MatchBlock(const Cluster& c, uint32_t start, uint32_t n,
                              uint64_t access_mask, const LeadValues* lead,
                              lead_internal::SortedLeadMasks& sorted,
                              const MaskSources& from, bool every_row,
                              uint64_t* acc, Emit& emit) {
  const uint32_t* ids = c.ids();
  uint64_t any = 0;
  uint32_t k = 0;  // the first column not yet ANDed in
  if (c.lead && lead->rank != nullptr) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      const uint64_t live = ids[row] == kDeadRow ? 0 : access_mask;
      acc[j] = live & RankedLeadMask(*lead, c.lo(row), c.hi(row));
      any |= acc[j];
    }
  } else if (c.lead && UseAvx512()) {
    any = LeadLaneMasksAvx512(c, start, n, access_mask, *lead, acc);
  } else if (c.lead && UseAvx2()) {
    any = LeadLaneMasksAvx2(c, start, n, access_mask, *lead, acc);
  } else if (c.lead) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      const uint64_t live = ids[row] == kDeadRow ? 0 : access_mask;
      acc[j] = live & (row < c.sorted ? sorted.Next(c.lo(row), c.hi(row))
                                      : LeadMask(*lead, c.lo(row), c.hi(row)));
      any |= acc[j];
    }
  } else if (c.bounds > 0) {
    // Column 0 may be inline: it is checked with the others (a tombstone's
    // is the false predicate).
    for (uint32_t j = 0; j < n; ++j) acc[j] = access_mask;
    any = access_mask;
  } else {
    const uint32_t* col = c.column(0) + start;
    for (uint32_t j = 0; j < n; ++j) {
      acc[j] = access_mask & ColumnMask<kSets>(col[j], from);
      any |= acc[j];
    }
    k = 1;
  }
  if (k < c.bounds && any != 0) {
    // Inline ranges against the cohort's values of their attributes; the
    // other entries of such columns (a shorter row's) as elsewhere.
    any = InlineColumnsFor<kSets>(c, start, n, k, from, acc) ? 1 : 0;
    k = c.bounds;  // only whether `any` is 0 is read below
  }
  for (; k < c.width && any != 0; ++k) {
    const uint32_t* col = c.column(k) + start;
    any = 0;
    if (every_row) {
      // A dead row's accumulator stays 0 whatever its entry holds; a set's
      // mask is computed only for a row still alive.
      for (uint32_t j = 0; j < n; ++j) {
        const uint32_t e = col[j];
        if constexpr (kSets) {
          acc[j] &= IsSetEntry(e) ? (acc[j] != 0 ? SetMask(e, from) : 0)
                                  : EntryMask(e, from.slots, from.words);
        } else {
          acc[j] &= EntryMask(e, from.slots, from.words);
        }
        any |= acc[j];
      }
      continue;
    }
    for (uint32_t j = 0; j < n; ++j) {
      if (acc[j] == 0) continue;
      acc[j] &= ColumnMask<kSets>(col[j], from);
      any |= acc[j];
    }
  }
  if (any == 0) return;
  if constexpr (EmitsBlocks<Emit>::value) {
    emit.AddBlock(ids + start, acc, n);
  } else {
    for (uint32_t j = 0; j < n; ++j) {
      if (acc[j] != 0) emit(ids[start + j] & kRowIdMask, acc[j]);
    }
  }
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_CLUSTER_STORE_H_
