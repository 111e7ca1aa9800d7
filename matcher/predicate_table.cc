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
  rebuilt.sorted = static_cast<uint32_t>(n);
  g = std::move(rebuilt);
  for (uint32_t i = 0; i < n; ++i) info_[g.pred[i]].pos = i;
  RefreshPointers(g);
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
  const int64_t* key = g.key.data();
  uint64_t* mask = g.mask.data();
  const uint32_t sorted = g.sorted;
  const Run run = SortedRun(g, v);
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
  if (sorted < g.size()) {
    MarkTouched(g, UINT32_MAX, 0);
    g.touched_tail = true;
  }
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
    auto it =
        ids_.find(NormalPredicate{Kind::kEq, av.attribute, av.value, av.value});
    if (it != ids_.end()) {
      bits->Set(*it);
      const uint32_t head = info_[*it].head;
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
    auto it =
        ids_.find(NormalPredicate{Kind::kEq, av.attribute, av.value, av.value});
    if (it != ids_.end()) {
      uint64_t& mask = eq_masks_[*it];
      if (mask == 0) touched_eq_.push_back(*it);
      mask |= bit;
    }
    AttributeGroups& groups = attributes_[av.attribute];
    ScanGroup(groups.low, av.value, bit);
    ScanGroup(groups.high, av.value, bit);
    ScanGroup(groups.range, av.value, bit);
  }
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
                 attributes_.capacity() * sizeof(AttributeGroups);
  // flat_hash_set: one slot plus one control byte per bucket.
  bytes += ids_.capacity() * (sizeof(PredicateId) + 1);
  for (const AttributeGroups& a : attributes_) {
    for (const Group* g : {&a.low, &a.high, &a.range}) {
      bytes += g->key.capacity() * sizeof(int64_t) +
               g->hi.capacity() * sizeof(int64_t) +
               g->pred.capacity() * sizeof(PredicateId) +
               g->head.capacity() * sizeof(uint32_t) +
               g->mask.capacity() * sizeof(uint64_t);
    }
  }
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
