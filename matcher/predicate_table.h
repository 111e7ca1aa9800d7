// The predicate table and phase 1 of the Fabret index.
//
// Subscriptions are normalised into *entries*: each predicate becomes one
// interned, reference-counted predicate of one of four kinds —
//   kEq     x == v
//   kLow    x <= hi          (LT/LE; "attribute present" is kLow with hi=MAX)
//   kHigh   x >= lo          (GT/GE)
//   kRange  lo <= x <= hi    (BETWEEN with both bounds finite)
// — and NE v becomes two entries: "present" and a *negated* reference to
// EQ v. Identical predicates are stored once and shared.
//
// Phase 1 (`AddCohort`, or `AddEvent` per event) computes, for a cohort of
// up to 64 events, one 64-bit *cohort mask* per predicate: bit i is set iff
// the predicate holds for event i. Equality predicates are found by hash
// lookup; each range kind lives in a per-attribute group sorted by its bound,
// and its masks are stored in that same order, so the predicates satisfied
// by a value form a contiguous run (a suffix for kLow, a prefix for kHigh, a
// window for kRange). `AddEvent` ORs one event's bit over its run. `AddCohort`
// gathers the cohort's values per attribute, sorts them, and fills each group
// with merge walks of its bounds against those values: every position is
// written once per cohort, not once per event satisfying it, so a cohort of k
// events costs a walk or two instead of k runs (runs average half a group,
// and phase 1 dominated partitioned matching before this). A kLow or kHigh
// mask is a prefix or suffix of the sorted values' bits; a kRange mask is
// (values >= lo) & (values <= hi), the first from a walk in lo order, the
// second from a walk in hi order (each kRange group keeps that order too);
// when the cohort's values are few, the per-event runs are cheaper and are
// used instead.
// Phase 2 finds a predicate's mask word through a
// table of pointers indexed by predicate id (into the group's array, or a
// per-id word for equalities). Masks are cleared after the cohort
// (`EndCohort`), touching only the words that were set.
//
// The per-event path (`MarkSatisfied`) is the classic Fabret phase 1: it
// sets the bits of the satisfied predicates in a caller-owned PredicateBits,
// indexed by predicate id, and writes nothing in the table.
//
// Stage: owned by one partition; single-threaded by contract.
// Thread safety: const methods (`MarkSatisfied` included) only read the
// table, so any number of threads may call them at once, provided no thread
// calls a non-const method meanwhile (the caller's readers/writer lock).
// Non-const methods (`AddEvent` and `EndCohort` too) need exclusive access.
// Invariants:
//   - Between cohorts every mask is zero.
//   - *mask_pointers()[id] is the cohort mask of predicate id (always zero
//     for free ids and the false predicate).
//   - mask_pointers() and AccessHead pointers are invalidated by
//     Acquire/Release, which the caller only makes between cohorts.
#ifndef COHORT_MATCHER_PREDICATE_TABLE_H_
#define COHORT_MATCHER_PREDICATE_TABLE_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {

using PredicateId = uint32_t;

// Predicate id 0 never holds (its mask is always zero). It stands for
// unsatisfiable predicates (LT INT64_MIN) and marks removed rows.
inline constexpr PredicateId kFalsePredicate = 0;
// A cluster entry is a predicate id, with this bit set when negated.
inline constexpr uint32_t kNegatedBit = 1u << 31;
inline constexpr uint32_t kNoCluster = UINT32_MAX;
// Largest cohort phase 1 can hold at once: one bit per event in a mask.
inline constexpr size_t kMaxCohortChunk = 64;

enum class Kind : uint8_t { kFree, kFalse, kEq, kLow, kHigh, kRange };

// One bit per predicate id: the predicates one event satisfies, for the
// per-event path. Remembers which words it set, so `Clear` touches only
// those (the vector is cleared lazily, not zeroed whole per event).
// Thread safety: none; each thread owns its own.
// Invariant: words_[w] != 0 implies w is in dirty_.
class PredicateBits {
 public:
  // Makes room for ids below `limit`. REQUIRES: no bit is set.
  void Resize(size_t limit) {
    const size_t words = (limit + 63) / 64;
    if (words > words_.size()) words_.resize(words, 0);
  }
  // REQUIRES: id is below a limit passed to Resize.
  void Set(PredicateId id) {
    uint64_t& word = words_[id >> 6];
    if (word == 0) dirty_.push_back(id >> 6);
    word |= uint64_t{1} << (id & 63);
  }
  // Clears every bit set since the last call.
  void Clear() {
    for (uint32_t w : dirty_) words_[w] = 0;
    dirty_.clear();
  }
  const uint64_t* words() const { return words_.data(); }
  size_t MemoryBytes() const {
    return words_.capacity() * sizeof(uint64_t) +
           dirty_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint64_t> words_;
  std::vector<uint32_t> dirty_;  // indices of the non-zero words
};

// A normalised predicate: the interval [lo, hi] of its attribute (for kEq,
// lo == hi).
struct NormalPredicate {
  Kind kind = Kind::kFalse;
  AttributeId attribute = 0;
  int64_t lo = 0;
  int64_t hi = 0;

  template <typename H>
  friend H AbslHashValue(H h, const NormalPredicate& p) {
    return H::combine(std::move(h), p.kind, p.attribute, p.lo, p.hi);
  }
  friend bool operator==(const NormalPredicate& a, const NormalPredicate& b) {
    return a.kind == b.kind && a.attribute == b.attribute && a.lo == b.lo &&
           a.hi == b.hi;
  }
};

// Normalises an interval [lo, hi] on `attribute` into one predicate kind
// (lo > hi gives kFalse, lo == hi gives kEq).
NormalPredicate FromInterval(AttributeId attribute, int64_t lo, int64_t hi);

class PredicateTable {
 public:
  PredicateTable();
  ~PredicateTable();
  PredicateTable(const PredicateTable&) = delete;
  PredicateTable& operator=(const PredicateTable&) = delete;

  // Interns `p` (creating it if new) and takes one reference to it.
  PredicateId Acquire(const NormalPredicate& p);
  // Drops one reference; the predicate is freed (and its id reused later)
  // when the last reference goes. REQUIRES: id was acquired.
  void Release(PredicateId id);

  // The predicate with id `id`. REQUIRES: id is live.
  NormalPredicate Get(PredicateId id) const;
  // Number of references to `id` (0 if free).
  uint32_t References(PredicateId id) const { return info_[id].refs; }

  // The head of the access cluster list of `id` (kNoCluster if none).
  // The pointer is invalidated by Acquire/Release.
  uint32_t* AccessHead(PredicateId id);

  // Pointers to the cohort masks, indexed by predicate id, for phase 2.
  const uint64_t* const* mask_pointers() const { return mask_ptr_.data(); }

  // One more than the largest predicate id issued: a PredicateBits resized
  // to this can hold every id a cluster entry names.
  size_t id_limit() const { return info_.size(); }

  // Phase 1 of the per-event path: sets in `bits` the bit of every predicate
  // `event` satisfies (the same predicates AddEvent marks), and appends to
  // `access_heads` the access cluster list head of each of them that heads
  // one. Writes nothing in the table.
  // REQUIRES: bits was resized to id_limit(); event's attributes are
  // distinct.
  void MarkSatisfied(EventView event, PredicateBits* bits,
                     std::vector<uint32_t>* access_heads) const;

  // Phase 1, one event: sets bit `bit` in the mask of every predicate `event`
  // satisfies.
  void AddEvent(EventView event, uint64_t bit);

  // Phase 1, a whole cohort: the same masks as AddEvent(events[i], 1 << i)
  // for every i, computed with one walk per kLow and kHigh group (see the
  // file comment). REQUIRES: events.size() <= kMaxCohortChunk; each event's
  // attributes are distinct; the masks are clear (EndCohort was called).
  void AddCohort(absl::Span<const EventView> events);

  // Calls `visit(head, mask)` for every predicate satisfied by some event of
  // the current cohort that heads an access cluster list.
  template <typename Visit>
  void ForEachTouchedAccess(Visit&& visit) const;

  // Clears every mask set since the last call.
  void EndCohort();

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
    uint32_t pos = 0;            // range kinds: position in the group
    uint32_t head = kNoCluster;  // kEq, kFalse: access cluster list head
  };

  // All range predicates of one kind on one attribute. Positions [0, sorted)
  // are sorted by (key, hi); [sorted, size) is an unsorted tail of recent
  // inserts, merged in when it grows past a fraction of the sorted part.
  struct Group {
    Group() = default;
    explicit Group(Kind k) : kind(k) {}

    Kind kind = Kind::kLow;
    std::vector<int64_t> key;       // hi for kLow, lo for kHigh and kRange
    std::vector<int64_t> hi;        // kRange only
    std::vector<PredicateId> pred;  // kFreePosition where removed
    std::vector<uint32_t> head;     // access cluster list head
    std::vector<uint64_t> mask;
    // kRange only: the sorted part's positions in order of hi, and their hi
    // values in that order (AddCohort's second walk).
    std::vector<uint32_t> by_hi;
    std::vector<int64_t> hi_sorted;
    uint32_t sorted = 0;
    uint32_t dead = 0;
    uint64_t max_width = 0;  // kRange: max hi - lo over the sorted part
    // Cohort state: positions [touched_begin, touched_end) and the tail
    // (when touched_tail) may hold non-zero masks.
    uint32_t touched_begin = UINT32_MAX;
    uint32_t touched_end = 0;
    bool touched_tail = false;
    bool on_touched_list = false;

    uint32_t size() const { return static_cast<uint32_t>(pred.size()); }
    // Calls f(position) for each position that may hold a non-zero mask.
    template <typename F>
    void ForEachTouched(F&& f);
  };
  struct AttributeGroups {
    Group low = Group(Kind::kLow);
    Group high = Group(Kind::kHigh);
    Group range = Group(Kind::kRange);
  };

  Group& GroupOf(Kind kind, AttributeId attribute);
  void InsertIntoGroup(PredicateId id);
  void RemoveFromGroup(PredicateId id);
  void Rebuild(Group& g);
  void MarkTouched(Group& g, uint32_t begin, uint32_t end);
  // Marks the group's unsorted tail (if any) as holding masks to clear.
  void MarkTail(Group& g);
  // Positions [begin, end) of a group's sorted part that may hold for a
  // value: all of them hold for kLow and kHigh; for kRange each must still
  // pass hi >= value.
  struct Run {
    uint32_t begin = 0;
    uint32_t end = 0;
  };
  void ScanGroup(Group& g, int64_t v, uint64_t bit);
  // ScanGroup with the run already found (SortedRun(g, v)).
  void ScanRun(Group& g, int64_t v, uint64_t bit, const Run& run);
  // AddCohort's walks over one group, given the cohort's values for its
  // attribute sorted ascending and prefix[j] = OR of the bits of values
  // [0, j) (so prefix[values.size()] holds every bit).
  void WalkLow(Group& g, absl::Span<const int64_t> values,
               const uint64_t* prefix);
  void WalkHigh(Group& g, absl::Span<const int64_t> values,
                const uint64_t* prefix);
  void WalkRange(Group& g, absl::Span<const int64_t> values,
                 const uint64_t* prefix);
  // Whether WalkRange is cheaper than one ScanGroup per value. When it
  // returns false, (*runs)[i] is SortedRun(g, values[i]) for every i.
  static bool RangeWalkPays(const Group& g, absl::Span<const int64_t> values,
                            std::vector<Run>* runs);

  static Run SortedRun(const Group& g, int64_t v);
  // Calls `f(position)` for each position of `g` whose predicate holds for
  // `v`, removed positions (pred == kFreePosition) included.
  template <typename F>
  static void ForEachHolding(const Group& g, int64_t v, F&& f);

  // Hashes and compares predicate ids by the predicate they stand for, and
  // looks up a NormalPredicate directly, so the set holds 4-byte ids only.
  struct IdHash {
    using is_transparent = void;
    const std::vector<Info>* info;
    size_t operator()(PredicateId id) const;
    size_t operator()(const NormalPredicate& p) const;
  };
  struct IdEq {
    using is_transparent = void;
    const std::vector<Info>* info;
    bool operator()(PredicateId a, PredicateId b) const { return a == b; }
    bool operator()(PredicateId a, const NormalPredicate& b) const;
    bool operator()(const NormalPredicate& a, PredicateId b) const {
      return (*this)(b, a);
    }
  };
  static NormalPredicate ToNormal(const Info& info);

  std::vector<Info> info_;
  void RefreshPointers(Group& g);

  std::deque<uint64_t> eq_masks_;    // by predicate id; stable addresses
  std::vector<uint64_t*> mask_ptr_;  // by predicate id
  std::vector<PredicateId> free_ids_;
  absl::flat_hash_set<PredicateId, IdHash, IdEq> ids_;
  // The id of the equality predicate `attribute == value`, if live.
  const PredicateId* FindEq(AttributeId attribute, int64_t value) const {
    auto it = ids_.find(NormalPredicate{Kind::kEq, attribute, value, value});
    return it == ids_.end() ? nullptr : &*it;
  }
  std::vector<AttributeGroups> attributes_;
  std::vector<PredicateId> touched_eq_;
  std::vector<Group*> touched_groups_;
  // AddCohort scratch: the cohort's (value, bit) pairs by attribute, the
  // attributes that have some, and one attribute's sorted values and
  // prefix masks. Empty between calls (capacity kept).
  struct ValueBit {
    int64_t value;
    uint64_t bit;
  };
  std::vector<std::vector<ValueBit>> cohort_values_;
  std::vector<AttributeId> cohort_attributes_;
  std::vector<int64_t> walk_values_;
  std::vector<uint64_t> walk_prefix_;
  std::vector<Run> walk_runs_;
  size_t live_ = 0;
};

template <typename Visit>
void PredicateTable::ForEachTouchedAccess(Visit&& visit) const {
  for (PredicateId id : touched_eq_) {
    const Info& info = info_[id];
    if (info.head != kNoCluster) visit(info.head, eq_masks_[id]);
  }
  // Access predicates are kEq, the false predicate, or "present" (kLow with
  // hi = INT64_MAX), which sorts last in the sorted part of its kLow group or
  // sits in the tail, so only those positions are looked at.
  for (const Group* g : touched_groups_) {
    if (g->kind != Kind::kLow) continue;
    auto check = [&](uint32_t i) {
      if (g->mask[i] != 0 && g->head[i] != kNoCluster) {
        visit(g->head[i], g->mask[i]);
      }
    };
    if (g->sorted > 0 && g->touched_end == g->sorted) check(g->sorted - 1);
    if (g->touched_tail) {
      for (uint32_t i = g->sorted; i < g->size(); ++i) check(i);
    }
  }
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_PREDICATE_TABLE_H_
