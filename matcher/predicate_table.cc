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

// How many sets ahead phase 1 asks for a set's mask word (and twice that
// for its slot) when it sets the masks of the sets holding a value.
constexpr size_t kSetPrefetch = 16;

// The slots a group of `sorted` positions needs until its next merge: the
// tail may grow to max(kMinTail, sorted / kTailDivisor) + 1 before it is.
uint32_t SlotsNeeded(uint32_t sorted, uint32_t size) {
  return std::max(size,
                  sorted + std::max(kMinTail, sorted / kTailDivisor) + 1);
}

// kLow (x <= key): position i holds for the values <= key[i], a prefix of
// the sorted values, so its mask is prefix[count of values <= key[i]]; the
// count only grows along the sorted part. REQUIRES: key[begin] >= values[0].
void WalkLow(const int64_t* key, uint32_t begin, uint32_t end,
             absl::Span<const int64_t> values, const uint64_t* prefix,
             uint64_t* words) {
  const size_t k = values.size();
  uint32_t i = begin;
  for (size_t j = 0; i < end && j < k; ++i) {
    while (j < k && values[j] <= key[i]) ++j;
    words[i] = prefix[j];
  }
  for (; i < end; ++i) words[i] = prefix[k];
}

// kHigh (x >= key): position i holds for the values >= key[i], a suffix of
// the sorted values: all bits but prefix[count of values < key[i]].
// REQUIRES: key[end - 1] <= values.back().
void WalkHigh(const int64_t* key, uint32_t begin, uint32_t end,
              absl::Span<const int64_t> values, const uint64_t* prefix,
              uint64_t* words) {
  const uint64_t all = prefix[values.size()];
  for (uint32_t i = begin, j = 0; i < end; ++i) {
    while (values[j] < key[i]) ++j;  // stops at the largest value at least
    words[i] = all ^ prefix[j];
  }
}

// kRange (lo <= x <= hi), one block of n sorted positions starting at s:
// position i holds for the values in [lo, hi], so its mask is
// prefix[count <= hi] & ~prefix[count < lo]. The first walk goes through the
// block in hi order (counts grow) and stores the hi half in the masks of
// positions some value can reach (hi >= smallest value, lo <= largest); the
// second walks in lo order over positions with lo <= largest value and
// clears the bits of values below lo. Positions the first walk skipped stay
// zero (the buffer was cleared).
void WalkRangeBlock(const int64_t* key, const uint16_t* by_hi,
                    const int64_t* hi_sorted, uint32_t s, uint32_t n,
                    absl::Span<const int64_t> values, const uint64_t* prefix,
                    uint64_t* words) {
  const size_t k = values.size();
  const int64_t largest = values.back();
  const int64_t* hs = hi_sorted + s;
  const uint16_t* order = by_hi + s;
  uint32_t q =
      static_cast<uint32_t>(std::lower_bound(hs, hs + n, values[0]) - hs);
  for (size_t j = 0; q < n; ++q) {
    while (j < k && values[j] <= hs[q]) ++j;
    const uint32_t i = s + order[q];
    // Without a branch: in hi order, whether lo passes the largest value is
    // a coin toss (fabret-1m: a quarter of phase 1's time went to that
    // branch). Writing 0 where it does leaves the cleared word as it was.
    words[i] = prefix[j] & -static_cast<uint64_t>(key[i] <= largest);
  }
  const uint64_t all = prefix[k];
  const uint32_t end =
      static_cast<uint32_t>(std::upper_bound(key + s, key + s + n, largest) -
                            key);
  for (uint32_t i = s, j = 0; i < end; ++i) {
    while (values[j] < key[i]) ++j;
    words[i] &= all ^ prefix[j];
  }
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

NormalPredicate TruePredicate() {
  NormalPredicate p;
  p.kind = Kind::kTrue;
  return p;
}

NormalPredicate FromSet(AttributeId attribute, absl::Span<const int64_t> set) {
  if (set.empty()) return NormalPredicate{};
  if (set.size() == 1) return FromInterval(attribute, set[0], set[0]);
  NormalPredicate p;
  p.kind = Kind::kIn;
  p.attribute = attribute;
  p.lo = static_cast<int64_t>(absl::HashOf(set));
  p.hi = static_cast<int64_t>(set.size());
  p.set = set;
  return p;
}

size_t PredicateTable::IdHash::operator()(PredicateId id) const {
  return (*this)(table->ToNormal(id));
}

size_t PredicateTable::IdHash::operator()(const NormalPredicate& p) const {
  return absl::Hash<NormalPredicate>()(p);
}

bool PredicateTable::IdEq::operator()(PredicateId a,
                                      const NormalPredicate& b) const {
  return table->ToNormal(a) == b;
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
    in_sets_[id].values.assign(p.set.begin(), p.set.end());
  }
  if (p.kind == Kind::kEq) {
    eq_ids_.insert(EqEntry{p.lo, p.attribute, id});
  } else {
    ids_.insert(id);
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
    if (p.kind == Kind::kLow && p.hi == kMax) {
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

void PredicateTable::MarkSatisfied(EventView event, PredicateBits* bits,
                                   std::vector<AccessHit>* access) const {
  MarkEqualities(event, bits, access);
  MarkRanges(event, bits);
}

void PredicateTable::MarkEqualities(EventView event, PredicateBits* bits,
                                    std::vector<AccessHit>* access) const {
  if (true_ != kFalsePredicate) {
    bits->SetId(true_);
    access->push_back({true_, 0});
  }
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    // Never finds the false predicate: its kind is kFalse, not kEq.
    if (const PredicateId* id = FindEq(av.attribute, av.value)) {
      bits->SetId(*id);
      access->push_back({*id, av.value});
    }
    if (const SetHolders* h = HoldersOf(av.attribute, av.value)) {
      for (size_t i = 0; i < h->ids.size(); ++i) {
        bits->SetId(h->ids[i]);
        if (i < h->accesses) access->push_back({h->ids[i], av.value});
      }
    }
    const PredicateId present = attributes_[av.attribute].present;
    if (present != kFalsePredicate) access->push_back({present, av.value});
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

// A group's positions have the consecutive slots [base, base + size), so
// the sorted part's satisfied run of a kLow or kHigh group is one run of
// slots, set a word at a time. A removed position keeps its place (and its
// slot) until Rebuild; no live predicate has that slot, so setting its bit
// is harmless, as in the cohort masks. The false predicate (whose bit must
// stay clear: it marks tombstoned rows) is read by id, in the equality
// part, which this never writes.
void PredicateTable::MarkRanges(EventView event, PredicateBits* bits) const {
  for (const AttributeValue& av : event) {
    if (av.attribute >= attributes_.size()) continue;  // no predicates on it
    const AttributeGroups& groups = attributes_[av.attribute];
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
          SetBetween<false, true>(g->base, run.begin, run.end, nullptr, hi,
                                  v, bits);
          SetBetween<true, true>(g->base, g->sorted, g->size(), key, hi, v,
                                 bits);
          break;
        }
      }
    }
  }
}

// Every word a cohort sets lies in a range it recorded (its tasks' pieces
// and tails, its equality slots), so clearing those ranges leaves the whole
// buffer zero: recorded slots are indexes into the buffer, valid whatever
// the table did since.
void PredicateTable::ClearPrevious(CohortMasks* m) {
  uint64_t* words = m->words_.data();
  // Set in both ways of keeping a cohort (BeginCohort may set them and then
  // keep the cohort per event after all).
  for (uint32_t slot : m->dirty_eq_slots_) words[slot] = 0;
  if (m->per_event_) {
    for (PredicateBits& bits : m->event_bits_) bits.Clear();
  } else {
    for (const CohortMasks::Task& t : m->tasks_) {
      std::memset(words + t.slot_base + t.begin, 0,
                  (t.end - t.begin) * sizeof(uint64_t));
      std::memset(words + t.tail_slot, 0, t.tail_size * sizeof(uint64_t));
    }
  }
  m->event_views_.clear();
  m->dirty_eq_slots_.clear();
  m->tasks_.clear();
  m->total_positions_ = 0;
  m->attributes_.clear();
  m->values_.clear();
  m->prefix_.clear();
  m->ranks_.clear();
  m->runs_.clear();
  m->touched_access_.clear();
}

void PredicateTable::BeginCohort(absl::Span<const EventView> events,
                                 CohortMasks* m, ListRows rows,
                                 CohortKeep keep) const {
  assert(!events.empty() && events.size() <= kMaxCohortChunk);
  ClearPrevious(m);
  m->slot_limit_ = slot_limit_;
  m->events_ = events.size();
  if (m->by_attribute_.size() < attributes_.size()) {
    m->by_attribute_.resize(attributes_.size());
  }
  // A first pass over the events: each event's access hits (one FindEq
  // per attribute, for either way of keeping the cohort), the cohort's
  // values by attribute, and the sizes the cost model weighs (CohortKeep).
  double rows_sum = 0, lead_rows_sum = 0, rows_present = 0, positions_sum = 0,
         positions_all = 0;
  // A lone event is kept per event (unless told otherwise) and needs no
  // values by attribute: the masks would share nothing.
  const bool lone = events.size() == 1 && keep != CohortKeep::kMasks;
  // Whether the model weighs the rows (else the masks are taken).
  const bool weigh =
      keep == CohortKeep::kCheaper && events.size() <= kMaxCheaperPerEvent;
  m->event_access_.clear();
  m->event_hits_begin_.clear();
  // The equality lookups below are each a few cache misses in a large
  // table (its control bytes, then its slot): ask for them all first, so
  // that they overlap instead of following one another.
  if (!lone) {
    for (const EventView& event : events) {
      for (const AttributeValue& av : event) {
        eq_ids_.prefetch(EqKey{av.attribute, av.value});
      }
    }
  }
  for (size_t e = 0; e < events.size(); ++e) {
    m->event_hits_begin_.push_back(
        static_cast<uint32_t>(m->event_access_.size()));
    const uint64_t bit = uint64_t{1} << e;
    if (true_ != kFalsePredicate) {
      m->event_access_.push_back({true_, 0});
      if (weigh) rows_sum += rows(true_);
    }
    for (const AttributeValue& av : events[e]) {
      if (av.attribute >= attributes_.size()) continue;  // no predicates on it
      const AttributeGroups& groups = attributes_[av.attribute];
      const double positions =
          groups.low.size() + groups.high.size() + groups.range.size();
      positions_sum += positions;
      // Never finds the false predicate: its kind is kFalse, not kEq.
      if (const PredicateId* id = FindEq(av.attribute, av.value)) {
        m->event_access_.push_back({*id, av.value});
        if (weigh) rows_sum += rows(*id);
      }
      ForEachAccessSet(av.attribute, av.value, [&](PredicateId id) {
        m->event_access_.push_back({id, av.value});
        if (weigh) rows_sum += rows(id);
      });
      const double present = !weigh || groups.present == kFalsePredicate
                                  ? 0
                                  : rows(groups.present);
      if (groups.present != kFalsePredicate) {
        m->event_access_.push_back({groups.present, av.value});
        lead_rows_sum += present;
      }
      if (lone) continue;
      std::vector<CohortMasks::ValueBit>& values =
          m->by_attribute_[av.attribute];
      if (values.empty()) {
        m->present_attributes_.push_back(av.attribute);
        positions_all += positions;
        rows_present += present;
      }
      values.push_back({av.value, bit});
    }
  }
  m->event_hits_begin_.push_back(
      static_cast<uint32_t>(m->event_access_.size()));
  const double per_event_cost =
      kPerEventRowCost * rows_sum +
      (SlotTableUncached(slot_limit_) ? kPerEventLeadRowCostUncached
                                      : kPerEventRowCost) *
          lead_rows_sum +
      kPerEventPositionCost * positions_sum;
  // The masks check each list once: at least the rows of an average event's
  // lists; exactly, the union, which the equality masks below give.
  const double mask_floor =
      kMaskPositionCost * positions_all +
      kMaskRowCost *
          std::max(rows_present, (rows_sum + lead_rows_sum) / events.size());
  m->per_event_ = keep == CohortKeep::kPerEvent ||
                  (keep == CohortKeep::kCheaper &&
                   (lone || (weigh && per_event_cost <= mask_floor)));
  if (m->per_event_) {
    KeepPerEvent(events, m);
    return;
  }
  // The equality masks, and the access predicates touched.
  if (m->words_.size() < slot_limit_) m->words_.resize(slot_limit_, 0);
  uint64_t* words = m->words_.data();
  double rows_union = rows_present;
  for (size_t e = 0; e < events.size(); ++e) {
    const uint64_t bit = uint64_t{1} << e;
    for (uint32_t h = m->event_hits_begin_[e]; h < m->event_hits_begin_[e + 1];
         ++h) {
      const PredicateId id = m->event_access_[h].id;
      if (!EqualityLike(info_[id].kind)) continue;  // "present", below
      const uint32_t slot = slot_of_[id];
      if (words[slot] == 0) {
        m->dirty_eq_slots_.push_back(slot);
        m->touched_access_.push_back({id, kNoLead, 0});
        if (weigh) rows_union += rows(id);
      }
      words[slot] |= bit;
    }
  }
  if (weigh && per_event_cost <= kMaskPositionCost * positions_all +
                                      kMaskRowCost * rows_union) {
    m->per_event_ = true;  // its equality words go with the next cohort
    KeepPerEvent(events, m);
    return;
  }
  for (TouchedAccess& t : m->touched_access_) t.mask = words[slot_of_[t.id]];
  // In attribute order, so that the tasks are listed in the same order in
  // every cohort (CohortMasks::task_part).
  std::sort(m->present_attributes_.begin(), m->present_attributes_.end());
  for (AttributeId attribute : m->present_attributes_) {
    std::vector<CohortMasks::ValueBit>& values = m->by_attribute_[attribute];
    const AttributeGroups& groups = attributes_[attribute];
    const bool ranges =
        groups.low.size() + groups.high.size() + groups.range.size() > 0;
    if (ranges || groups.sets > 0) {
      std::sort(values.begin(), values.end(),
                [](const CohortMasks::ValueBit& a,
                   const CohortMasks::ValueBit& b) {
                  return a.value < b.value;
                });
    }
    if (groups.sets > 0) SetColumnMasks(attribute, values, m);
    if (ranges) {
      const uint32_t index = static_cast<uint32_t>(m->attributes_.size());
      m->attributes_.push_back(
          {attribute, static_cast<uint32_t>(m->values_.size()),
           static_cast<uint32_t>(values.size()),
           static_cast<uint32_t>(m->prefix_.size()), 0});
      m->prefix_.push_back(0);
      for (const CohortMasks::ValueBit& vb : values) {
        m->values_.push_back(vb.value);
        m->prefix_.push_back(m->prefix_.back() | vb.bit);
      }
      if (groups.present != kFalsePredicate) {
        m->touched_access_.push_back(
            {groups.present, index, m->prefix_.back()});
        AddRankTable(index, m);
      }
      for (const Group* g : {&groups.low, &groups.high, &groups.range}) {
        if (g->size() > 0) AddTasks(*g, index, m);
      }
    }
    values.clear();
  }
  m->present_attributes_.clear();
}

// The sets that are only columns get a mask each and no access hit, set
// once per distinct value of the cohort (events share popular values, and
// each set's mask word is a cache miss in a large table).
void PredicateTable::SetColumnMasks(
    AttributeId attribute, absl::Span<const CohortMasks::ValueBit> values,
    CohortMasks* m) const {
  uint64_t* words = m->words_.data();
  for (size_t i = 0; i < values.size();) {
    uint64_t mask = 0;
    size_t j = i;
    for (; j < values.size() && values[j].value == values[i].value; ++j) {
      mask |= values[j].bit;
    }
    if (const SetHolders* h = HoldersOf(attribute, values[i].value)) {
      // A popular value is in thousands of sets, each mask word a cache
      // miss: ask for the slots and the words a few sets ahead, so that
      // the misses overlap.
      const PredicateId* ids = h->ids.data();
      const size_t n = h->ids.size();
      for (size_t k = h->accesses; k < n; ++k) {
        if (k + 2 * kSetPrefetch < n) {
          __builtin_prefetch(&slot_of_[ids[k + 2 * kSetPrefetch]]);
        }
        if (k + kSetPrefetch < n) {
          __builtin_prefetch(&words[slot_of_[ids[k + kSetPrefetch]]], 1);
        }
        const uint32_t slot = slot_of_[ids[k]];
        if (words[slot] == 0) m->dirty_eq_slots_.push_back(slot);
        words[slot] |= mask;
      }
    }
    i = j;
  }
}

// Any equality words BeginCohort set stay until the next cohort's
// ClearPrevious (dirty_eq_slots_); the cohort's values by attribute are
// dropped, and each event's hits become its touched entries (and, in its
// task, its bits).
void PredicateTable::KeepPerEvent(absl::Span<const EventView> events,
                                  CohortMasks* m) const {
  for (AttributeId attribute : m->present_attributes_) {
    m->by_attribute_[attribute].clear();
  }
  m->present_attributes_.clear();
  m->touched_access_.clear();
  // Each event's sets that are only columns, for its bits.
  m->event_sets_.clear();
  m->event_sets_begin_.clear();
  for (const EventView& event : events) {
    m->event_sets_begin_.push_back(
        static_cast<uint32_t>(m->event_sets_.size()));
    for (const AttributeValue& av : event) {
      if (av.attribute >= attributes_.size()) continue;
      ForEachColumnSet(av.attribute, av.value,
                       [&](PredicateId id) { m->event_sets_.push_back(id); });
    }
  }
  m->event_sets_begin_.push_back(static_cast<uint32_t>(m->event_sets_.size()));
  const size_t vectors = m->serial_ ? 1 : events.size();
  if (m->event_bits_.size() < vectors) m->event_bits_.resize(vectors);
  for (size_t b = 0; b < vectors; ++b) {
    m->event_bits_[b].Resize(id_limit(), slot_limit_);
  }
  m->event_views_.assign(events.begin(), events.end());
  for (size_t e = 0; e < events.size(); ++e) {
    const uint64_t bit = uint64_t{1} << e;
    for (uint32_t h = m->event_hits_begin_[e]; h < m->event_hits_begin_[e + 1];
         ++h) {
      const AccessHit& hit = m->event_access_[h];
      uint32_t lead = kNoLead;
      if (!EqualityLike(info_[hit.id].kind)) {
        // "present": its rows' leads are checked against one value
        lead = static_cast<uint32_t>(m->attributes_.size());
        m->attributes_.push_back({info_[hit.id].attribute,
                                  static_cast<uint32_t>(m->values_.size()), 1,
                                  static_cast<uint32_t>(m->prefix_.size()),
                                  0});
        m->values_.push_back(hit.value);
        m->prefix_.push_back(0);
        m->prefix_.push_back(bit);
      }
      m->touched_access_.push_back({hit.id, lead, bit});
    }
    // Each event's bits are a task: its equalities (from its hits) and its
    // range groups.
    m->tasks_.push_back({static_cast<uint32_t>(e), 0, false, 0, 0, 0, 0, 0});
  }
}

void PredicateTable::AddRankTable(uint32_t index, CohortMasks* m) {
  CohortMasks::AttributeValues& a = m->attributes_[index];
  const int64_t* values = m->values_.data() + a.first;
  // The largest offset; checked before adding 1, which wraps to 0 when
  // the values span all of int64.
  const uint64_t last = static_cast<uint64_t>(values[a.count - 1]) -
                        static_cast<uint64_t>(values[0]);
  if (last >= kMaxRankTable) return;
  const uint64_t span = last + 1;
  a.rank_first = static_cast<uint32_t>(m->ranks_.size());
  a.rank_size = static_cast<uint32_t>(span);
  m->ranks_.resize(m->ranks_.size() + span + 1);
  uint8_t* rank = m->ranks_.data() + a.rank_first;
  // rank[x] is the number of values below values[0] + x: i over the
  // offsets x in (offset of value i - 1, offset of value i], written a run
  // at a time (a byte a position, one loop step a value).
  uint64_t x = 0;
  for (uint32_t i = 0; i < a.count; ++i) {
    const uint64_t offset = static_cast<uint64_t>(values[i]) -
                            static_cast<uint64_t>(values[0]);
    if (offset < x) continue;  // a repeated value
    std::memset(rank + x, static_cast<int>(i), offset + 1 - x);
    x = offset + 1;
  }
  rank[span] = static_cast<uint8_t>(a.count);  // RankedLeadMask's clamp
}

void PredicateTable::AddTasks(const Group& g, uint32_t index,
                              CohortMasks* m) const {
  const CohortMasks::AttributeValues& av = m->attributes_[index];
  const absl::Span<const int64_t> values(m->values_.data() + av.first,
                                         av.count);
  const int64_t* key = g.key.data();
  switch (g.kind) {
    case Kind::kLow: {  // positions with key >= the smallest value
      const uint32_t begin = static_cast<uint32_t>(
          std::lower_bound(key, key + g.sorted, values.front()) - key);
      AddPieces(g, index, false, begin, g.sorted, 1, m);
      break;
    }
    case Kind::kHigh: {  // positions with key <= the largest value
      const uint32_t end = static_cast<uint32_t>(
          std::upper_bound(key, key + g.sorted, values.back()) - key);
      AddPieces(g, index, false, 0, end, 1, m);
      break;
    }
    default: {
      const Run span = RangeWalkSpan(g, values);
      std::vector<Run> runs;
      if (RangeWalkPays(g, values, span, &runs)) {
        AddPieces(g, index, false, span.begin, span.end, kRangeBlock, m);
        break;
      }
      m->attributes_[index].runs_first =
          static_cast<uint32_t>(m->runs_.size());
      Run all{g.sorted, 0};
      for (const Run& r : runs) {
        m->runs_.push_back(r);
        if (r.begin < r.end) {
          all.begin = std::min(all.begin, r.begin);
          all.end = std::max(all.end, r.end);
        }
      }
      if (all.begin > all.end) all = Run{g.sorted, g.sorted};
      AddPieces(g, index, true, all.begin, all.end, 1, m);
      break;
    }
  }
}

void PredicateTable::AddPieces(const Group& g, uint32_t index, bool runs,
                               uint32_t begin, uint32_t end, uint32_t align,
                               CohortMasks* m) {
  if (align > 1 && begin < end) {
    begin -= begin % align;
    end = std::min(g.sorted, (end + align - 1) / align * align);
  }
  if (begin >= end) begin = end = g.sorted;
  const uint32_t tail = g.size() - g.sorted;
  if (begin == end && tail == 0) return;
  // Pieces end at multiples of kTaskPositions, so piece j of a group covers
  // the same positions in every cohort.
  uint32_t s = begin;
  do {
    const uint32_t e = std::min(end, (s / kTaskPositions + 1) * kTaskPositions);
    const uint32_t t = e == end ? tail : 0;
    m->tasks_.push_back({index, static_cast<uint8_t>(g.kind), runs, s, e, t,
                         g.base, g.base + g.sorted, m->total_positions_});
    m->total_positions_ += (e - s) + t;
    s = e;
  } while (s < end);
}

PredicateTable::Run PredicateTable::RangeWalkSpan(
    const Group& g, absl::Span<const int64_t> values) {
  const int64_t* key = g.key.data();
  Run span{0, 0};
  const uint64_t reach =
      static_cast<uint64_t>(values.front()) - static_cast<uint64_t>(kMin);
  if (reach > g.max_width) {
    const int64_t from = static_cast<int64_t>(
        static_cast<uint64_t>(values.front()) - g.max_width);
    span.begin = static_cast<uint32_t>(
        std::lower_bound(key, key + g.sorted, from) - key);
  }
  span.end = static_cast<uint32_t>(
      std::upper_bound(key + span.begin, key + g.sorted, values.back()) - key);
  return span;
}

// The walk visits each position of its span about twice (once in hi order,
// once in lo order); the per-value runs visit, for each value v, the
// positions with lo in [v - max_width, v]. Few or clustered values make the
// runs cheaper. A walk step costs about half a run step (BM_Phase1 with the
// walk always or never taken: at 16 events the walk won where weighing
// steps equally chose runs).
bool PredicateTable::RangeWalkPays(const Group& g,
                                   absl::Span<const int64_t> values, Run walk,
                                   std::vector<Run>* runs) {
  runs->clear();
  const uint64_t walk_steps = 2 * uint64_t{walk.end - walk.begin};
  uint64_t run_steps = 0;
  for (int64_t v : values) {
    runs->push_back(SortedRun(g, v));
    run_steps += runs->back().end - runs->back().begin;
    if (2 * run_steps > walk_steps) return true;
  }
  return false;
}

void PredicateTable::RunTask(size_t task, CohortMasks* m) const {
  if (m->per_event_) {
    PredicateBits& bits = m->event_bits_[m->serial_ ? 0 : task];
    if (m->serial_) bits.Clear();  // the previous event's
    for (uint32_t h = m->event_hits_begin_[task];
         h < m->event_hits_begin_[task + 1]; ++h) {
      const AccessHit& hit = m->event_access_[h];
      if (EqualityLike(info_[hit.id].kind)) bits.SetId(hit.id);
    }
    for (uint32_t h = m->event_sets_begin_[task];
         h < m->event_sets_begin_[task + 1]; ++h) {
      bits.SetId(m->event_sets_[h]);
    }
    MarkRanges(m->event_views_[task], &bits);
    return;
  }
  const CohortMasks::Task& t = m->tasks_[task];
  const CohortMasks::AttributeValues& av = m->attributes_[t.attribute_index];
  const Group& g = GroupOf(static_cast<Kind>(t.kind), av.attribute);
  const absl::Span<const int64_t> values(m->values_.data() + av.first,
                                         av.count);
  const uint64_t* prefix = m->prefix_.data() + av.prefix_first;
  uint64_t* words = m->words_.data() + t.slot_base;
  const int64_t* key = g.key.data();
  const int64_t* hi = g.hi.data();
  const uint32_t tail_end = g.sorted + t.tail_size;
  // The unsorted tail's masks, position by position: through the rank
  // table where the cohort has one for the attribute, else by a binary
  // search without branches (LeadMask; at cohort 64 on fabret-1m, 6% of
  // the samples were std::lower_bound and std::upper_bound here).
  const LeadValues lead = m->lead_values(t.attribute_index);
  switch (g.kind) {
    case Kind::kLow:
      WalkLow(key, t.begin, t.end, values, prefix, words);
      for (uint32_t i = g.sorted; i < tail_end; ++i) {
        words[i] = LeadMask(lead, kMin, key[i]);
      }
      break;
    case Kind::kHigh:
      WalkHigh(key, t.begin, t.end, values, prefix, words);
      for (uint32_t i = g.sorted; i < tail_end; ++i) {
        words[i] = LeadMask(lead, key[i], kMax);
      }
      break;
    default:
      if (t.runs) {
        const CohortMasks::Run* runs = m->runs_.data() + av.runs_first;
        for (uint32_t v = 0; v < av.count; ++v) {
          const uint64_t bit = prefix[v + 1] ^ prefix[v];
          const int64_t x = values[v];
          const uint32_t end = std::min(runs[v].end, t.end);
          for (uint32_t i = std::max(runs[v].begin, t.begin); i < end; ++i) {
            words[i] |= hi[i] >= x ? bit : 0;
          }
        }
      } else {
        for (uint32_t s = t.begin; s < t.end; s += kRangeBlock) {
          WalkRangeBlock(key, g.by_hi.data(), g.hi_sorted.data(), s,
                         std::min(s + kRangeBlock, g.sorted) - s, values,
                         prefix, words);
        }
      }
      for (uint32_t i = g.sorted; i < tail_end; ++i) {
        words[i] = LeadMask(lead, key[i], hi[i]);
      }
      break;
  }
}

void PredicateTable::ComputeCohort(absl::Span<const EventView> events,
                                   CohortMasks* masks, ListRows rows,
                                   CohortKeep keep) const {
  BeginCohort(events, masks, rows, keep);
  for (size_t t = 0; t < masks->tasks(); ++t) RunTask(t, masks);
}

size_t PredicateTable::MemoryBytes() const {
  size_t bytes = info_.capacity() * sizeof(Info) +
                 slot_of_.capacity() * sizeof(uint32_t) +
                 free_ids_.capacity() * sizeof(PredicateId) +
                 free_eq_slots_.capacity() * sizeof(uint32_t) +
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
               g->hi_sorted.capacity() * sizeof(int64_t);
    }
  }
  return bytes;
}

size_t CohortMasks::MemoryBytes() const {
  size_t bytes = words_.capacity() * sizeof(uint64_t) +
                 tasks_.capacity() * sizeof(Task) +
                 attributes_.capacity() * sizeof(AttributeValues) +
                 values_.capacity() * sizeof(int64_t) +
                 prefix_.capacity() * sizeof(uint64_t) + ranks_.capacity() +
                 runs_.capacity() * sizeof(Run) +
                 dirty_eq_slots_.capacity() * sizeof(uint32_t) +
                 touched_access_.capacity() * sizeof(TouchedAccess) +
                 event_sets_.capacity() * sizeof(PredicateId) +
                 present_attributes_.capacity() * sizeof(AttributeId);
  bytes += visits_.capacity() * sizeof(std::vector<AccessVisit>);
  for (const auto& v : visits_) bytes += v.capacity() * sizeof(AccessVisit);
  bytes += by_attribute_.capacity() * sizeof(std::vector<ValueBit>) +
           event_access_.capacity() * sizeof(AccessHit) +
           event_views_.capacity() * sizeof(EventView);
  for (const PredicateBits& b : event_bits_) bytes += b.MemoryBytes();
  for (const auto& v : by_attribute_) bytes += v.capacity() * sizeof(ValueBit);
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
