// The predicate table's upkeep: interning and releasing predicates, the
// range groups' sorted parts and tails, the slot space and its compaction
// (predicate_table.h). Phase 1 is in predicate_table_event.cc (one event)
// and predicate_table_cohort.cc (a cohort).
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

namespace {


// A group's unsorted tail is merged once it exceeds
// max(kMinTail, sorted / kTailDivisor). Phase 1 scans the tail linearly, so a
// short tail keeps events cheap; merging costs O(n log n), so a tail that is a
// fixed fraction of the group keeps inserts amortised O(kTailDivisor log n).
constexpr uint32_t kMinTail = 32;
constexpr uint32_t kTailDivisor = 16;
// A group's rank table (BuildRank) is at most 4 bytes a value its sorted
// keys span: kept where that is at most kRankSpanPerKey values a key, plus
// kRankSpanSlack, so that it costs at most 16 bytes a key and 256 a group
// over the keys' own 12 or 20.
constexpr uint32_t kRankSpanPerKey = 4;
constexpr uint32_t kRankSpanSlack = 64;

// Position marker for a removed range predicate (the false predicate is never
// stored in a group, so id 0 is free to mean "nothing here").
constexpr PredicateId kFreePosition = kFalsePredicate;

// Slot space upkeep. A group that outgrows its region moves to the end of
// the slot space with a quarter more room than it needs, so a growing group
// moves every few merges instead of at each; the regions left behind (and
// freed equality slots) are wasted until a compaction renumbers everything.
// Compacting once the waste passes a quarter of the slots in use keeps every
// cohort buffer within about 1.5x of the live predicates, at an amortised
// O(1) renumbering per slot. Small tables are never compacted: their waste
// is a few KB.
constexpr uint32_t kHeadroomDivisor = 4;
constexpr uint64_t kWasteDivisor = 4;
constexpr uint64_t kMinWasteToCompact = 4096;


// The slots a group of `sorted` positions needs until its next merge: the
// tail may grow to max(kMinTail, sorted / kTailDivisor) + 1 before it is.
uint32_t SlotsNeeded(uint32_t sorted, uint32_t size) {
  return std::max(size,
                  sorted + std::max(kMinTail, sorted / kTailDivisor) + 1);
}

}  // namespace

size_t PredicateTable::IdHash::operator()(PredicateId id) const {
  return (*this)(table->ToNormal(id));
}

size_t PredicateTable::IdHash::operator()(const NormalPredicate& p) const {
  return absl::Hash<NormalPredicate>()(p);
}

bool PredicateTable::IdEq::operator()(PredicateId a,
                                      const NormalPredicate& b) const {
  // ToNormal(a) == b, field by field without building it (a bulk load
  // asks for every range it keeps inline).
  const Info& info = table->info_[a];
  if (info.kind != b.kind) return false;
  if (b.kind == Kind::kFalse) return true;
  if (info.attribute != b.attribute || info.lo != b.lo || info.hi != b.hi) {
    return false;
  }
  return b.kind != Kind::kIn ||
         absl::MakeConstSpan(table->in_sets_.at(a).values) == b.set;
}

NormalPredicate PredicateTable::ToNormal(PredicateId id) const {
  const Info& info = info_[id];
  if (info.kind == Kind::kFalse) return NormalPredicate{};
  NormalPredicate p;
  p.kind = info.kind;
  p.attribute = info.attribute;
  p.lo = info.lo;
  p.hi = info.hi;
  if (info.kind == Kind::kIn) p.set = in_sets_.at(id).values;
  return p;
}

PredicateTable::PredicateTable() : ids_(0, IdHash{this}, IdEq{this}) {
  Info false_info;
  false_info.kind = Kind::kFalse;
  false_info.refs = 1;  // never freed
  info_.push_back(false_info);
  slot_of_.push_back(0);  // slot 0: the false predicate's, always zero
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

const PredicateTable::Group& PredicateTable::GroupOf(
    Kind kind, AttributeId attribute) const {
  const AttributeGroups& a = attributes_[attribute];
  switch (kind) {
    case Kind::kLow:
      return a.low;
    case Kind::kHigh:
      return a.high;
    default:
      return a.range;
  }
}

uint32_t PredicateTable::NewEqSlot() {
  if (!free_eq_slots_.empty()) {
    const uint32_t slot = free_eq_slots_.back();
    free_eq_slots_.pop_back();
    return slot;
  }
  return slot_limit_++;
}

PredicateId PredicateTable::Acquire(const NormalPredicate& p) {
  if (const PredicateId* found = Find(p)) {
    ++info_[*found].refs;
    return *found;
  }
  PredicateId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<PredicateId>(info_.size());
    ReserveGrowingByQuarter(info_, info_.size() + 1);
    ReserveGrowingByQuarter(slot_of_, slot_of_.size() + 1);
    info_.emplace_back();
    slot_of_.push_back(0);
  }
  Info& info = info_[id];
  info = Info{};
  info.lo = p.lo;
  info.hi = p.hi;
  info.attribute = p.attribute;
  info.kind = p.kind;
  info.refs = 1;
  if (p.kind == Kind::kIn) {
    // Before ids_ hashes the id: its hash needs the set.
    std::vector<int64_t>& values = in_sets_[id].values;
    values.assign(p.set.begin(), p.set.end());
    if (set_values_.size() <= id) {
      ResizeGrowingByQuarter(set_values_, info_.size(),
                             static_cast<const int64_t*>(nullptr));
    }
    set_values_[id] = values.data();
  }
  if (p.kind == Kind::kEq) {
    eq_ids_.insert(EqEntry{p.lo, p.attribute, id});
  } else {
    ids_.insert(id);
    if (FilteredKind(p.kind) && range_filter_.Add(p)) RebuildRangeFilter();
  }
  ++live_;
  // Every attribute with a predicate has groups, so phase 1 can index them.
  if (p.attribute >= attributes_.size()) attributes_.resize(p.attribute + 1);
  if (p.kind == Kind::kIn) {
    for (int64_t v : p.set) {
      in_ids_[std::make_pair(p.attribute, v)].ids.push_back(id);
    }
    ++attributes_[p.attribute].sets;
  }
  if (p.kind == Kind::kTrue) true_ = id;
  if (EqualityLike(p.kind)) {
    slot_of_[id] = NewEqSlot();
  } else {
    InsertIntoGroup(id);
    if (p.kind == Kind::kLow && p.hi == kMaxValue) {
      attributes_[p.attribute].present = id;
    }
  }
  MaybeCompact();
  return id;
}

void PredicateTable::Release(PredicateId id) {
  Info& info = info_[id];
  assert(info.refs > 0);
  if (--info.refs > 0) return;
  if (info.kind == Kind::kEq) {
    eq_ids_.erase(EqKey{info.attribute, info.lo});
  } else {
    ids_.erase(id);  // a kIn's while its set is there to hash it
  }
  if (info.kind == Kind::kIn) {
    auto set = in_sets_.find(id);
    assert(set->second.access_rows == 0);
    for (int64_t v : set->second.values) {
      auto it = in_ids_.find(std::make_pair(info.attribute, v));
      std::vector<PredicateId>& holders = it->second.ids;
      // A column: past the access part, so its order may change.
      *std::find(holders.begin() + it->second.accesses, holders.end(), id) =
          holders.back();
      holders.pop_back();
      if (holders.empty()) in_ids_.erase(it);
    }
    in_sets_.erase(set);
    set_values_[id] = nullptr;
    --attributes_[info.attribute].sets;
  }
  if (info.kind == Kind::kTrue) true_ = kFalsePredicate;
  if (EqualityLike(info.kind)) {
    free_eq_slots_.push_back(slot_of_[id]);
  } else {
    RemoveFromGroup(id);
    if (attributes_[info.attribute].present == id) {
      attributes_[info.attribute].present = kFalsePredicate;
    }
  }
  slot_of_[id] = 0;
  info.kind = Kind::kFree;
  free_ids_.push_back(id);
  --live_;
  MaybeCompact();
}

void PredicateTable::AddInlineUse(AttributeId attribute) {
  if (attribute >= attributes_.size()) attributes_.resize(attribute + 1);
  ++attributes_[attribute].inline_uses;
}

void PredicateTable::DropInlineUse(AttributeId attribute) {
  assert(attributes_[attribute].inline_uses > 0);
  --attributes_[attribute].inline_uses;
}

void PredicateTable::AddAccessUse(PredicateId id) {
  if (info_[id].kind != Kind::kIn) return;
  if (in_sets_.at(id).access_rows++ == 0) SetAccess(id, true);
}

void PredicateTable::DropAccessUse(PredicateId id) {
  if (info_[id].kind != Kind::kIn) return;
  if (--in_sets_.at(id).access_rows == 0) SetAccess(id, false);
}

void PredicateTable::SetAccess(PredicateId id, bool access) {
  const AttributeId attribute = info_[id].attribute;
  for (int64_t v : in_sets_.at(id).values) {
    SetHolders& h = in_ids_.at(std::make_pair(attribute, v));
    auto at = std::find(h.ids.begin(), h.ids.end(), id);
    // The boundary between the access part [0, accesses) and the rest.
    if (access) {
      std::iter_swap(at, h.ids.begin() + h.accesses);
      ++h.accesses;
    } else {
      --h.accesses;
      std::iter_swap(at, h.ids.begin() + h.accesses);
    }
  }
}

NormalPredicate PredicateTable::Get(PredicateId id) const {
  return ToNormal(id);
}

void PredicateTable::InsertIntoGroup(PredicateId id) {
  Info& info = info_[id];
  Group& g = GroupOf(info.kind, info.attribute);
  info.pos = g.size();
  g.key.push_back(info.kind == Kind::kLow ? info.hi : info.lo);
  if (g.kind == Kind::kRange) g.hi.push_back(info.hi);
  g.pred.push_back(id);
  if (bulk_) {
    slot_of_[id] = 0;  // EndBulk gives it its slot
    bulk_groups_.emplace_back(info.attribute, info.kind);
    bulk_ranges_.push_back(id);
  } else if (TailDue(g)) {
    Rebuild(g);
  } else if (g.size() > g.capacity) {
    Place(g, SlotsNeeded(g.sorted, g.size()));
  } else {
    slot_of_[id] = g.base + info.pos;
  }
}

void PredicateTable::RemoveFromGroup(PredicateId id) {
  const Info& info = info_[id];
  Group& g = GroupOf(info.kind, info.attribute);
  g.pred[info.pos] = kFreePosition;
  ++g.dead;
  // Dead positions still cost phase-1 work; drop them once they are half
  // (in bulk, EndBulk does).
  if (bulk_) {
    bulk_groups_.emplace_back(info.attribute, info.kind);
  } else if (g.dead * 2 > g.size()) {
    Rebuild(g);
  }
}

void PredicateTable::BuildRank(Group& g) {
  g.rank.reset();
  if (g.sorted == 0) return;
  const int64_t* key = g.key.data();
  const uint64_t span = static_cast<uint64_t>(key[g.sorted - 1]) -
                        static_cast<uint64_t>(key[0]);
  if (span >= uint64_t{kRankSpanPerKey} * g.sorted + kRankSpanSlack) return;
  auto table = std::make_unique<RankTable>();
  table->low = key[0];
  table->at.resize(span + 1);
  uint32_t at = 0;
  for (uint64_t d = 0; d <= span; ++d) {
    const int64_t x = static_cast<int64_t>(static_cast<uint64_t>(key[0]) + d);
    while (key[at] < x) ++at;  // key[sorted - 1] >= x: stays in the part
    table->at[d] = at;
  }
  g.rank = std::move(table);
}

bool PredicateTable::TailDue(const Group& g) {
  return g.size() - g.sorted > std::max(kMinTail, g.sorted / kTailDivisor);
}

void PredicateTable::Rebuild(Group& g) {
  const bool has_hi = g.kind == Kind::kRange;
  // The live positions in order: the sorted part's are in order already,
  // so only the tail is sorted, then merged in (a merge every
  // sorted / kTailDivisor inserts costs O(sorted), not O(sorted log sorted)).
  auto before = [&](uint32_t a, uint32_t b) {
    if (g.key[a] != g.key[b]) return g.key[a] < g.key[b];
    return has_hi && g.hi[a] < g.hi[b];
  };
  std::vector<uint32_t> order;
  order.reserve(g.size() - g.dead);
  for (uint32_t i = 0; i < g.size(); ++i) {
    if (g.pred[i] != kFreePosition) order.push_back(i);
  }
  const auto tail = std::lower_bound(order.begin(), order.end(), g.sorted);
  std::sort(tail, order.end(), before);
  std::inplace_merge(order.begin(), tail, order.end(), before);
  Group rebuilt;
  rebuilt.kind = g.kind;
  rebuilt.base = g.base;
  rebuilt.capacity = g.capacity;
  const uint32_t n = static_cast<uint32_t>(order.size());
  // Room for the tail that may grow before the next merge, so that its
  // first insert does not double the arrays.
  const uint32_t room = n + std::max(kMinTail, n / kTailDivisor) + 1;
  rebuilt.key.reserve(room);
  rebuilt.pred.reserve(room);
  if (has_hi) rebuilt.hi.reserve(room);
  for (uint32_t i : order) {
    rebuilt.key.push_back(g.key[i]);
    rebuilt.pred.push_back(g.pred[i]);
    if (has_hi) {
      rebuilt.hi.push_back(g.hi[i]);
      rebuilt.max_width =
          std::max(rebuilt.max_width, static_cast<uint64_t>(g.hi[i]) -
                                          static_cast<uint64_t>(g.key[i]));
    }
  }
  if (has_hi) {
    rebuilt.by_hi.resize(n);
    rebuilt.hi_sorted.resize(n);
    for (uint32_t s = 0; s < n; s += kRangeBlock) {
      const uint32_t e = std::min(n, s + kRangeBlock);
      uint16_t* order_begin = rebuilt.by_hi.data() + s;
      for (uint32_t i = s; i < e; ++i) order_begin[i - s] = uint16_t(i - s);
      std::sort(order_begin, order_begin + (e - s),
                [&](uint16_t a, uint16_t b) {
                  return rebuilt.hi[s + a] < rebuilt.hi[s + b];
                });
      for (uint32_t q = s; q < e; ++q) {
        rebuilt.hi_sorted[q] = rebuilt.hi[s + rebuilt.by_hi[q]];
      }
    }
  }
  rebuilt.sorted = n;
  BuildRank(rebuilt);
  g = std::move(rebuilt);
  for (uint32_t i = 0; i < n; ++i) info_[g.pred[i]].pos = i;
  Place(g, SlotsNeeded(n, n));
}

void PredicateTable::EndBulk() {
  bulk_ = false;
  std::sort(bulk_groups_.begin(), bulk_groups_.end());
  bulk_groups_.erase(std::unique(bulk_groups_.begin(), bulk_groups_.end()),
                     bulk_groups_.end());
  for (const auto& [attribute, kind] : bulk_groups_) {
    Group* g = &GroupOf(kind, attribute);
    if (TailDue(*g) || g->dead * 2 > g->size()) {
      Rebuild(*g);
    } else if (g->size() > g->capacity) {
      Place(*g, SlotsNeeded(g->sorted, g->size()));
    }
  }
  // The batch's new predicates in groups that were neither merged nor
  // placed still lack their slots (the others' are set again, as they are).
  for (PredicateId id : bulk_ranges_) {
    const Info& info = info_[id];
    if (info.kind == Kind::kLow || info.kind == Kind::kHigh ||
        info.kind == Kind::kRange) {
      slot_of_[id] = GroupOf(info.kind, info.attribute).base + info.pos;
    }
  }
  bulk_groups_.clear();
  bulk_groups_.shrink_to_fit();
  bulk_ranges_.clear();
  bulk_ranges_.shrink_to_fit();
  MaybeCompact();
}

void PredicateTable::Place(Group& g, uint32_t needed) {
  // A region more than twice too big after removals is given back too.
  if (g.capacity < needed || g.capacity > 2 * needed + kMinTail) {
    wasted_ += g.capacity;
    g.base = slot_limit_;
    g.capacity = needed + needed / kHeadroomDivisor;
    slot_limit_ += g.capacity;
  }
  RefreshSlots(g);
}

void PredicateTable::RefreshSlots(const Group& g) {
  for (uint32_t i = 0; i < g.size(); ++i) {
    if (g.pred[i] != kFreePosition) slot_of_[g.pred[i]] = g.base + i;
  }
}

void PredicateTable::MaybeCompact() {
  const uint64_t waste = wasted_ + free_eq_slots_.size();
  if (bulk_ || waste < kMinWasteToCompact ||
      waste * kWasteDivisor < slot_limit_ - waste) {
    return;
  }
  Compact();
}

void PredicateTable::Compact() {
  uint32_t next = 1;
  for (AttributeGroups& a : attributes_) {
    for (Group* g : {&a.low, &a.high, &a.range}) {
      if (g->size() == 0) {
        g->base = g->capacity = 0;
        continue;
      }
      g->base = next;
      g->capacity = SlotsNeeded(g->sorted, g->size());
      next += g->capacity;
      RefreshSlots(*g);
    }
  }
  for (PredicateId id = 1; id < info_.size(); ++id) {
    if (EqualityLike(info_[id].kind)) slot_of_[id] = next++;
  }
  slot_limit_ = next;
  wasted_ = 0;
  free_eq_slots_.clear();
  ++generation_;
}

void PredicateTable::RebuildRangeFilter() {
  size_t live = 0;
  for (PredicateId id : ids_) live += FilteredKind(info_[id].kind);
  range_filter_.Rebuild(live);
  for (PredicateId id : ids_) {
    if (FilteredKind(info_[id].kind)) range_filter_.Add(ToNormal(id));
  }
}

size_t PredicateTable::MemoryBytes() const {
  size_t bytes = range_filter_.MemoryBytes() +
                 info_.capacity() * sizeof(Info) +
                 slot_of_.capacity() * sizeof(uint32_t) +
                 free_ids_.capacity() * sizeof(PredicateId) +
                 free_eq_slots_.capacity() * sizeof(uint32_t) +
                 set_values_.capacity() * sizeof(const int64_t*) +
                 attributes_.capacity() * sizeof(AttributeGroups);
  // flat_hash_set: one slot plus one control byte per bucket.
  bytes += ids_.capacity() * (sizeof(PredicateId) + 1) +
           eq_ids_.capacity() * (sizeof(EqEntry) + 1);
  bytes += in_sets_.capacity() *
               (sizeof(PredicateId) + sizeof(SetInfo) + 1) +
           in_ids_.capacity() * (sizeof(std::pair<AttributeId, int64_t>) +
                                 sizeof(SetHolders) + 1);
  for (const auto& [id, set] : in_sets_) {
    bytes += set.values.capacity() * sizeof(int64_t);
  }
  for (const auto& [key, holders] : in_ids_) {
    bytes += holders.ids.capacity() * sizeof(PredicateId);
  }
  for (const AttributeGroups& a : attributes_) {
    for (const Group* g : {&a.low, &a.high, &a.range}) {
      bytes += g->key.capacity() * sizeof(int64_t) +
               g->hi.capacity() * sizeof(int64_t) +
               g->pred.capacity() * sizeof(PredicateId) +
               g->by_hi.capacity() * sizeof(uint16_t) +
               g->hi_sorted.capacity() * sizeof(int64_t) +
               (g->rank ? sizeof(RankTable) +
                              g->rank->at.capacity() * sizeof(uint32_t)
                        : 0);
    }
  }
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
