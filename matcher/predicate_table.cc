#include "matcher/predicate_table.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace cohort {
namespace matcher {
namespace internal {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A group's unsorted tail is merged once it exceeds
// max(kMinTail, sorted / kTailDivisor). Phase 1 scans the tail linearly, so a
// short tail keeps events cheap; merging costs O(n log n), so a tail that is a
// fixed fraction of the group keeps inserts amortised O(kTailDivisor log n).
constexpr uint32_t kMinTail = 32;
constexpr uint32_t kTailDivisor = 16;

// Position marker for a removed range predicate (the false predicate is never
// stored in a group, so id 0 is free to mean "nothing here").
constexpr PredicateId kFreePosition = kFalsePredicate;

// The lo-order walk of AddCohort shared by kHigh and kRange groups: for each
// position i of a sorted part (keys ascending) whose key is at most the
// largest value, calls apply(i, the bits of the values >= key[i]), the
// count of values below key[i] only growing along the walk. Returns the end
// of those positions. `values` ascending, prefix as for WalkLow.
template <typename Apply>
uint32_t WalkKeysUpToLargest(const int64_t* key, uint32_t sorted,
                             absl::Span<const int64_t> values,
                             const uint64_t* prefix, Apply apply) {
  const uint64_t all = prefix[values.size()];
  const uint32_t end = static_cast<uint32_t>(
      std::upper_bound(key, key + sorted, values.back()) - key);
  for (uint32_t i = 0, j = 0; i < end; ++i) {
    while (values[j] < key[i]) ++j;  // stops at the largest value at least
    apply(i, all ^ prefix[j]);
  }
  return end;
}

}  // namespace

NormalPredicate FromInterval(AttributeId attribute, int64_t lo, int64_t hi) {
  NormalPredicate p;
  p.attribute = attribute;
  p.lo = lo;
  p.hi = hi;
  if (lo > hi) {
    p = NormalPredicate{};  // kFalse, canonical so that all share one id
  } else if (lo == hi) {
    p.kind = Kind::kEq;
  } else if (lo == kMin) {
    p.kind = Kind::kLow;
  } else if (hi == kMax) {
    p.kind = Kind::kHigh;
  } else {
    p.kind = Kind::kRange;
  }
  return p;
}

size_t PredicateTable::IdHash::operator()(PredicateId id) const {
  return (*this)(ToNormal((*info)[id]));
}

size_t PredicateTable::IdHash::operator()(const NormalPredicate& p) const {
  return absl::Hash<NormalPredicate>()(p);
}

bool PredicateTable::IdEq::operator()(PredicateId a,
                                      const NormalPredicate& b) const {
  return ToNormal((*info)[a]) == b;
}

NormalPredicate PredicateTable::ToNormal(const Info& info) {
  if (info.kind == Kind::kFalse) return NormalPredicate{};
  NormalPredicate p;
  p.kind = info.kind;
  p.attribute = info.attribute;
  p.lo = info.lo;
  p.hi = info.hi;
  return p;
}

PredicateTable::PredicateTable() : ids_(0, IdHash{&info_}, IdEq{&info_}) {
  Info false_info;
  false_info.kind = Kind::kFalse;
  false_info.refs = 1;  // never freed
  info_.push_back(false_info);
  eq_masks_.push_back(0);
  mask_ptr_.push_back(&eq_masks_[0]);
  ids_.insert(kFalsePredicate);
}

PredicateTable::~PredicateTable() = default;

PredicateTable::Group& PredicateTable::GroupOf(Kind kind,
                                               AttributeId attribute) {
  if (attribute >= attributes_.size()) attributes_.resize(attribute + 1);
  AttributeGroups& a = attributes_[attribute];
  switch (kind) {
    case Kind::kLow:
      return a.low;
    case Kind::kHigh:
      return a.high;
    default:
      return a.range;
  }
}

PredicateId PredicateTable::Acquire(const NormalPredicate& p) {
  if (auto it = ids_.find(p); it != ids_.end()) {
    ++info_[*it].refs;
    return *it;
  }
  PredicateId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<PredicateId>(info_.size());
    info_.emplace_back();
    eq_masks_.push_back(0);
    mask_ptr_.push_back(&eq_masks_[id]);
  }
  Info& info = info_[id];
  info = Info{};
  info.lo = p.lo;
  info.hi = p.hi;
  info.attribute = p.attribute;
  info.kind = p.kind;
  info.refs = 1;
  ids_.insert(id);
  ++live_;
  if (p.kind == Kind::kEq) {
    // Make sure the attribute has groups so AddEvent can index them.
    if (p.attribute >= attributes_.size()) {
      attributes_.resize(p.attribute + 1);
    }
  } else {
    InsertIntoGroup(id);
  }
  return id;
}

void PredicateTable::Release(PredicateId id) {
  Info& info = info_[id];
  assert(info.refs > 0);
  if (--info.refs > 0) return;
  ids_.erase(id);
  if (info.kind != Kind::kEq) RemoveFromGroup(id);
  mask_ptr_[id] = &eq_masks_[id];  // zero
  info.kind = Kind::kFree;
  free_ids_.push_back(id);
  --live_;
}

NormalPredicate PredicateTable::Get(PredicateId id) const {
  return ToNormal(info_[id]);
}

uint32_t* PredicateTable::AccessHead(PredicateId id) {
  Info& info = info_[id];
  // The false predicate heads the clusters of never-matching subscriptions;
  // it is never touched, so they are never visited.
  if (info.kind == Kind::kEq || info.kind == Kind::kFalse) return &info.head;
  return &GroupOf(info.kind, info.attribute).head[info.pos];
}

void PredicateTable::InsertIntoGroup(PredicateId id) {
  Info& info = info_[id];
  Group& g = GroupOf(info.kind, info.attribute);
  const uint64_t* old_masks = g.mask.data();
  info.pos = g.size();
  g.key.push_back(info.kind == Kind::kLow ? info.hi : info.lo);
  if (g.kind == Kind::kRange) g.hi.push_back(info.hi);
  g.pred.push_back(id);
  g.head.push_back(kNoCluster);
  g.mask.push_back(0);
  const uint32_t tail = g.size() - g.sorted;
  if (tail > std::max(kMinTail, g.sorted / kTailDivisor)) {
    Rebuild(g);
  } else if (g.mask.data() != old_masks) {
    RefreshPointers(g);
  } else {
    mask_ptr_[id] = &g.mask[info.pos];
  }
}

void PredicateTable::RefreshPointers(Group& g) {
  for (uint32_t i = 0; i < g.size(); ++i) {
    if (g.pred[i] != kFreePosition) mask_ptr_[g.pred[i]] = &g.mask[i];
  }
}

void PredicateTable::RemoveFromGroup(PredicateId id) {
  const Info& info = info_[id];
  Group& g = GroupOf(info.kind, info.attribute);
  g.pred[info.pos] = kFreePosition;
  g.head[info.pos] = kNoCluster;
  ++g.dead;
  // Dead positions still cost phase-1 work; drop them once they are half.
  if (g.dead * 2 > g.size()) Rebuild(g);
}

void PredicateTable::Rebuild(Group& g) {
  const bool has_hi = g.kind == Kind::kRange;
  std::vector<uint32_t> order;
  order.reserve(g.size() - g.dead);
  for (uint32_t i = 0; i < g.size(); ++i) {
    if (g.pred[i] != kFreePosition) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (g.key[a] != g.key[b]) return g.key[a] < g.key[b];
    return has_hi && g.hi[a] < g.hi[b];
  });
  Group rebuilt;
  rebuilt.kind = g.kind;
  const size_t n = order.size();
  rebuilt.key.reserve(n);
  rebuilt.pred.reserve(n);
  rebuilt.head.reserve(n);
  if (has_hi) rebuilt.hi.reserve(n);
  for (uint32_t i : order) {
    rebuilt.key.push_back(g.key[i]);
    rebuilt.pred.push_back(g.pred[i]);
    rebuilt.head.push_back(g.head[i]);
    if (has_hi) {
      rebuilt.hi.push_back(g.hi[i]);
      rebuilt.max_width =
          std::max(rebuilt.max_width, static_cast<uint64_t>(g.hi[i]) -
                                          static_cast<uint64_t>(g.key[i]));
    }
  }
  rebuilt.mask.assign(n, 0);
  if (has_hi) {
    rebuilt.by_hi.resize(n);
    for (uint32_t i = 0; i < n; ++i) rebuilt.by_hi[i] = i;
    std::sort(
        rebuilt.by_hi.begin(), rebuilt.by_hi.end(),
        [&](uint32_t a, uint32_t b) { return rebuilt.hi[a] < rebuilt.hi[b]; });
    rebuilt.hi_sorted.reserve(n);
    for (uint32_t i : rebuilt.by_hi) rebuilt.hi_sorted.push_back(rebuilt.hi[i]);
  }
  rebuilt.sorted = static_cast<uint32_t>(n);
  g = std::move(rebuilt);
  for (uint32_t i = 0; i < n; ++i) info_[g.pred[i]].pos = i;
  RefreshPointers(g);
}

void PredicateTable::MarkTail(Group& g) {
  if (g.sorted < g.size()) {
    MarkTouched(g, UINT32_MAX, 0);
    g.touched_tail = true;
  }
}

void PredicateTable::MarkTouched(Group& g, uint32_t begin, uint32_t end) {
  if (!g.on_touched_list) {
    g.on_touched_list = true;
    touched_groups_.push_back(&g);
  }
  g.touched_begin = std::min(g.touched_begin, begin);
  g.touched_end = std::max(g.touched_end, end);
}

PredicateTable::Run PredicateTable::SortedRun(const Group& g, int64_t v) {
  const int64_t* key = g.key.data();
  const uint32_t sorted = g.sorted;
  Run run{0, sorted};
  switch (g.kind) {
    case Kind::kLow:  // v <= hi: the suffix with key >= v
      run.begin =
          static_cast<uint32_t>(std::lower_bound(key, key + sorted, v) - key);
      break;
    case Kind::kHigh:  // lo <= v: the prefix with key <= v
      run.end =
          static_cast<uint32_t>(std::upper_bound(key, key + sorted, v) - key);
      break;
    default: {  // lo <= v, and lo >= v - max_width (hi >= v is left to check)
      const uint64_t span =
          static_cast<uint64_t>(v) - static_cast<uint64_t>(kMin);
      if (span > g.max_width) {
        const int64_t from =
            static_cast<int64_t>(static_cast<uint64_t>(v) - g.max_width);
        run.begin = static_cast<uint32_t>(
            std::lower_bound(key, key + sorted, from) - key);
      }
      run.end = static_cast<uint32_t>(
          std::upper_bound(key + run.begin, key + sorted, v) - key);
      break;
    }
  }
  return run;
}

void PredicateTable::ScanGroup(Group& g, int64_t v, uint64_t bit) {
  if (g.size() == 0) return;
  ScanRun(g, v, bit, SortedRun(g, v));
}

void PredicateTable::ScanRun(Group& g, int64_t v, uint64_t bit,
                             const Run& run) {
  if (g.size() == 0) return;
  const int64_t* key = g.key.data();
  uint64_t* mask = g.mask.data();
  const uint32_t sorted = g.sorted;
  switch (g.kind) {
    case Kind::kLow:
      for (uint32_t i = run.begin; i < run.end; ++i) mask[i] |= bit;
      for (uint32_t i = sorted; i < g.size(); ++i) {
        mask[i] |= key[i] >= v ? bit : 0;
      }
      break;
    case Kind::kHigh:
      for (uint32_t i = run.begin; i < run.end; ++i) mask[i] |= bit;
      for (uint32_t i = sorted; i < g.size(); ++i) {
        mask[i] |= key[i] <= v ? bit : 0;
      }
      break;
    default: {
      const int64_t* hi = g.hi.data();
      for (uint32_t i = run.begin; i < run.end; ++i) {
        mask[i] |= hi[i] >= v ? bit : 0;
      }
      for (uint32_t i = sorted; i < g.size(); ++i) {
        mask[i] |= (key[i] <= v && hi[i] >= v) ? bit : 0;
      }
      break;
    }
  }
  if (run.begin < run.end) MarkTouched(g, run.begin, run.end);
  MarkTail(g);
}

// The per-event twin of ScanGroup: the same positions, reported one at a
// time because their bits are scattered over the bit vector by predicate id.
template <typename F>
void PredicateTable::ForEachHolding(const Group& g, int64_t v, F&& f) {
  if (g.size() == 0) return;
  const int64_t* key = g.key.data();
  const uint32_t sorted = g.sorted;
  const Run run = SortedRun(g, v);
  switch (g.kind) {
    case Kind::kLow:
      for (uint32_t i = run.begin; i < run.end; ++i) f(i);
      for (uint32_t i = sorted; i < g.size(); ++i) {
        if (key[i] >= v) f(i);
      }
      break;
    case Kind::kHigh:
      for (uint32_t i = run.begin; i < run.end; ++i) f(i);
      for (uint32_t i = sorted; i < g.size(); ++i) {
        if (key[i] <= v) f(i);
      }
      break;
    default: {
      const int64_t* hi = g.hi.data();
      for (uint32_t i = run.begin; i < run.end; ++i) {
        if (hi[i] >= v) f(i);
      }
      for (uint32_t i = sorted; i < g.size(); ++i) {
        if (key[i] <= v && hi[i] >= v) f(i);
      }
      break;
    }
  }
}

void PredicateTable::MarkSatisfied(EventView event, PredicateBits* bits,
                                   std::vector<uint32_t>* access_heads) const {
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    // Never finds the false predicate: its kind is kFalse, not kEq.
    if (const PredicateId* id = FindEq(av.attribute, av.value)) {
      bits->Set(*id);
      const uint32_t head = info_[*id].head;
      if (head != kNoCluster) access_heads->push_back(head);
    }
    const AttributeGroups& groups = attributes_[av.attribute];
    // A removed position keeps its place until Rebuild; its id is
    // kFreePosition, the false predicate, whose bit must stay clear because
    // it marks tombstoned rows.
    auto mark = [bits](const Group& g) {
      return [&g, bits](uint32_t i) {
        if (g.pred[i] != kFreePosition) bits->Set(g.pred[i]);
      };
    };
    ForEachHolding(groups.high, av.value, mark(groups.high));
    ForEachHolding(groups.range, av.value, mark(groups.range));
    // Of the range kinds only "present" (kLow with hi = INT64_MAX) can be an
    // access predicate; it sorts last in the sorted part or sits in the tail
    // (as ForEachTouchedAccess relies on), so only those heads are read.
    const Group& low = groups.low;
    ForEachHolding(low, av.value, [&](uint32_t i) {
      if (low.pred[i] == kFreePosition) return;
      bits->Set(low.pred[i]);
      if (i + 1 >= low.sorted && low.head[i] != kNoCluster) {
        access_heads->push_back(low.head[i]);
      }
    });
  }
}

void PredicateTable::AddEvent(EventView event, uint64_t bit) {
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    if (const PredicateId* id = FindEq(av.attribute, av.value)) {
      uint64_t& mask = eq_masks_[*id];
      if (mask == 0) touched_eq_.push_back(*id);
      mask |= bit;
    }
    AttributeGroups& groups = attributes_[av.attribute];
    ScanGroup(groups.low, av.value, bit);
    ScanGroup(groups.high, av.value, bit);
    ScanGroup(groups.range, av.value, bit);
  }
}

void PredicateTable::AddCohort(absl::Span<const EventView> events) {
  assert(events.size() <= kMaxCohortChunk);
  if (events.size() == 1) {  // a walk is a run: skip the gathering
    AddEvent(events[0], 1);
    return;
  }
  if (cohort_values_.size() < attributes_.size()) {
    cohort_values_.resize(attributes_.size());
  }
  for (size_t e = 0; e < events.size(); ++e) {
    const uint64_t bit = uint64_t{1} << e;
    for (const AttributeValue& av : events[e]) {
      if (av.attribute >= attributes_.size()) continue;  // no predicates on it
      if (const PredicateId* id = FindEq(av.attribute, av.value)) {
        uint64_t& mask = eq_masks_[*id];
        if (mask == 0) touched_eq_.push_back(*id);
        mask |= bit;
      }
      std::vector<ValueBit>& values = cohort_values_[av.attribute];
      if (values.empty()) cohort_attributes_.push_back(av.attribute);
      values.push_back({av.value, bit});
    }
  }
  for (AttributeId attribute : cohort_attributes_) {
    std::vector<ValueBit>& values = cohort_values_[attribute];
    AttributeGroups& groups = attributes_[attribute];
    if (groups.low.size() + groups.high.size() + groups.range.size() > 0) {
      std::sort(values.begin(), values.end(),
                [](const ValueBit& a, const ValueBit& b) {
                  return a.value < b.value;
                });
      walk_values_.clear();
      walk_prefix_.assign(1, 0);
      for (const ValueBit& vb : values) {
        walk_values_.push_back(vb.value);
        walk_prefix_.push_back(walk_prefix_.back() | vb.bit);
      }
      WalkLow(groups.low, walk_values_, walk_prefix_.data());
      WalkHigh(groups.high, walk_values_, walk_prefix_.data());
      if (RangeWalkPays(groups.range, walk_values_, &walk_runs_)) {
        WalkRange(groups.range, walk_values_, walk_prefix_.data());
      } else {
        // walk_runs_[i] is the run of values[i] (sorted alike).
        for (size_t i = 0; i < values.size(); ++i) {
          ScanRun(groups.range, values[i].value, values[i].bit, walk_runs_[i]);
        }
      }
    }
    values.clear();
  }
  cohort_attributes_.clear();
}

// kLow (x <= key): position i holds for the values <= key[i], a prefix of
// the sorted values, so its mask is prefix[count of values <= key[i]]; the
// count only grows along the sorted part. Positions before the first key >=
// the smallest value hold for no value and are not touched.
void PredicateTable::WalkLow(Group& g, absl::Span<const int64_t> values,
                             const uint64_t* prefix) {
  if (g.size() == 0) return;
  const int64_t* key = g.key.data();
  uint64_t* mask = g.mask.data();
  const uint32_t sorted = g.sorted;
  const size_t k = values.size();
  const uint32_t begin = static_cast<uint32_t>(
      std::lower_bound(key, key + sorted, values[0]) - key);
  uint32_t i = begin;
  for (size_t j = 0; i < sorted && j < k; ++i) {
    while (j < k && values[j] <= key[i]) ++j;
    mask[i] |= prefix[j];
  }
  const uint64_t all = prefix[k];
  for (; i < sorted; ++i) mask[i] |= all;
  for (i = sorted; i < g.size(); ++i) {
    mask[i] |= prefix[std::upper_bound(values.begin(), values.end(), key[i]) -
                      values.begin()];
  }
  if (begin < sorted) MarkTouched(g, begin, sorted);
  MarkTail(g);
}

// kHigh (x >= key): position i holds for the values >= key[i], a suffix of
// the sorted values, so its mask is all bits but prefix[count of values <
// key[i]]. Positions after the last key <= the largest value hold for none.
void PredicateTable::WalkHigh(Group& g, absl::Span<const int64_t> values,
                              const uint64_t* prefix) {
  if (g.size() == 0) return;
  const int64_t* key = g.key.data();
  uint64_t* mask = g.mask.data();
  const uint64_t all = prefix[values.size()];
  const uint32_t end =
      WalkKeysUpToLargest(key, g.sorted, values, prefix,
                          [mask](uint32_t i, uint64_t m) { mask[i] |= m; });
  for (uint32_t i = g.sorted; i < g.size(); ++i) {
    mask[i] |=
        all ^ prefix[std::lower_bound(values.begin(), values.end(), key[i]) -
                     values.begin()];
  }
  if (end > 0) MarkTouched(g, 0, end);
  MarkTail(g);
}

// A kRange walk visits about every position whose hi reaches the smallest
// value (in hi order) and whose lo is at most the largest (in lo order); the
// per-event runs visit, for each value v, the positions with lo in
// [v - max_width, v]. Few or clustered values make the runs cheaper. A walk
// step costs about half a run step (BM_Phase1 with the walk always or never
// taken: at 16 events the walk won where weighing steps equally chose runs).
bool PredicateTable::RangeWalkPays(const Group& g,
                                   absl::Span<const int64_t> values,
                                   std::vector<Run>* runs) {
  runs->clear();
  const int64_t* hi_sorted = g.hi_sorted.data();
  const int64_t* key = g.key.data();
  const uint64_t walk =
      (g.sorted -
       (std::lower_bound(hi_sorted, hi_sorted + g.sorted, values.front()) -
        hi_sorted)) +
      (std::upper_bound(key, key + g.sorted, values.back()) - key);
  uint64_t run_steps = 0;
  for (int64_t v : values) {
    runs->push_back(SortedRun(g, v));
    run_steps += runs->back().end - runs->back().begin;
    if (2 * run_steps > walk) return true;
  }
  return false;
}

// kRange (lo <= x <= hi): position i holds for the values in [lo, hi], so
// its mask is prefix[count <= hi] & ~prefix[count < lo]. The first walk goes
// through the sorted part in hi order (counts grow) and stores the hi half
// in the masks of positions some value can reach (hi >= smallest value, lo
// <= largest); the second walks in lo order over positions with lo <=
// largest value and clears the bits of values below lo. The masks were zero
// (each group is walked once per cohort), so positions the first walk
// skipped stay zero.
void PredicateTable::WalkRange(Group& g, absl::Span<const int64_t> values,
                               const uint64_t* prefix) {
  if (g.size() == 0) return;
  const int64_t largest = values.back();
  const uint32_t sorted = g.sorted;
  const int64_t* hi_sorted = g.hi_sorted.data();
  const uint32_t* by_hi = g.by_hi.data();
  const int64_t* key = g.key.data();
  uint64_t* mask = g.mask.data();
  uint32_t q = static_cast<uint32_t>(
      std::lower_bound(hi_sorted, hi_sorted + sorted, values.front()) -
      hi_sorted);
  for (size_t j = 0; q < sorted; ++q) {
    while (j < values.size() && values[j] <= hi_sorted[q]) ++j;
    const uint32_t i = by_hi[q];
    if (key[i] <= largest) mask[i] = prefix[j];
  }
  const uint32_t end =
      WalkKeysUpToLargest(key, sorted, values, prefix,
                          [mask](uint32_t i, uint64_t m) { mask[i] &= m; });
  const int64_t* hi = g.hi.data();
  for (uint32_t i = sorted; i < g.size(); ++i) {
    const size_t below =
        std::lower_bound(values.begin(), values.end(), key[i]) - values.begin();
    const size_t upto =
        std::upper_bound(values.begin(), values.end(), hi[i]) - values.begin();
    mask[i] |= below < upto ? prefix[upto] ^ prefix[below] : 0;
  }
  if (end > 0) MarkTouched(g, 0, end);
  MarkTail(g);
}

template <typename F>
void PredicateTable::Group::ForEachTouched(F&& f) {
  for (uint32_t i = touched_begin; i < touched_end; ++i) f(i);
  if (touched_tail) {
    for (uint32_t i = sorted; i < size(); ++i) f(i);
  }
}

void PredicateTable::EndCohort() {
  for (PredicateId id : touched_eq_) eq_masks_[id] = 0;
  touched_eq_.clear();
  for (Group* g : touched_groups_) {
    g->ForEachTouched([&](uint32_t i) { g->mask[i] = 0; });
    g->touched_begin = UINT32_MAX;
    g->touched_end = 0;
    g->touched_tail = false;
    g->on_touched_list = false;
  }
  touched_groups_.clear();
}

size_t PredicateTable::MemoryBytes() const {
  size_t bytes = info_.capacity() * sizeof(Info) +
                 eq_masks_.size() * sizeof(uint64_t) +
                 mask_ptr_.capacity() * sizeof(uint64_t*) +
                 free_ids_.capacity() * sizeof(PredicateId) +
                 attributes_.capacity() * sizeof(AttributeGroups) +
                 cohort_attributes_.capacity() * sizeof(AttributeId) +
                 walk_values_.capacity() * sizeof(int64_t) +
                 walk_prefix_.capacity() * sizeof(uint64_t) +
                 walk_runs_.capacity() * sizeof(Run);
  for (const std::vector<ValueBit>& v : cohort_values_) {
    bytes += sizeof(std::vector<ValueBit>) + v.capacity() * sizeof(ValueBit);
  }
  // flat_hash_set: one slot plus one control byte per bucket.
  bytes += ids_.capacity() * (sizeof(PredicateId) + 1);
  for (const AttributeGroups& a : attributes_) {
    for (const Group* g : {&a.low, &a.high, &a.range}) {
      bytes += g->key.capacity() * sizeof(int64_t) +
               g->hi.capacity() * sizeof(int64_t) +
               g->pred.capacity() * sizeof(PredicateId) +
               g->head.capacity() * sizeof(uint32_t) +
               g->mask.capacity() * sizeof(uint64_t) +
               g->by_hi.capacity() * sizeof(uint32_t) +
               g->hi_sorted.capacity() * sizeof(int64_t);
    }
  }
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
