// Phase 1 of a cohort (PredicateTable::BeginCohort, RunTask): how the
// cohort is kept (the cost model, cohort_keep.h), its equality masks and
// access predicates, and the range groups' walks cut into tasks.
//
// `BeginCohort` gathers the cohort's values per attribute and sorts them,
// does the equality lookups, and cuts the range groups' work into tasks of
// at most kTaskPositions positions; `RunTask` runs one. A task fills its
// positions with merge walks of the group's bounds against the sorted
// values: every position is written once per cohort, not once per event
// satisfying it. A kLow or kHigh mask is a prefix or suffix of the sorted
// values' bits; a kRange mask is (values >= lo) & (values <= hi), the first
// from a walk in lo order, the second from a walk in hi order within each
// block of kRangeBlock positions (each block keeps its own hi order, so
// blocks are independent tasks). When a kRange group's values are few, the
// per-value runs are cheaper and are used instead. Tasks of one cohort write
// disjoint slots, so threads may run them at once: this is how the staged
// server splits phase 1 of a cohort over its cores.
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

// Events share their first values (ListAccessHits, ShareRangeMarks) when
// they have at least this many in common.
constexpr uint32_t kMinSharedValues = 2;

// How many first values events `a` and `b` have in common.
uint32_t CommonPrefix(EventView a, EventView b) {
  const size_t n = std::min(a.size(), b.size());
  uint32_t k = 0;
  while (k < n && a[k].attribute == b[k].attribute &&
         a[k].value == b[k].value && a[k].half_above == b[k].half_above) {
    ++k;
  }
  return k;
}

}  // namespace

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
    for (PredicateBits& bits : m->event_open_bits_) bits.Clear();
  } else {
    for (const CohortMasks::Task& t : m->tasks_) {
      std::memset(words + t.slot_base + t.begin, 0,
                  (t.end - t.begin) * sizeof(uint64_t));
      std::memset(words + t.tail_slot, 0, t.tail_size * sizeof(uint64_t));
    }
  }
  m->event_views_.clear();
  for (const CohortMasks::AttributeValues& a : m->attributes_) {
    if (a.attribute < m->attribute_values_.size()) {
      m->attribute_values_[a.attribute] = LeadValues{};
    }
  }
  m->dirty_eq_slots_.clear();
  m->tasks_.clear();
  m->total_positions_ = 0;
  m->attributes_.clear();
  m->values_.clear();
  m->upper_.clear();
  m->prefix_.clear();
  m->ranks_.clear();
  m->lanes_.clear();
  m->runs_.clear();
  m->touched_access_.clear();
}

void PredicateTable::BeginCohort(absl::Span<const EventView> events,
                                 CohortMasks* m, ListRows rows,
                                 CohortKeep keep) const {
  assert(!events.empty() && events.size() <= kMaxCohortChunk);
  ClearPrevious(m);
  m->slot_limit_ = slot_limit_;
  m->table_ = this;
  m->events_ = events.size();
  if (m->by_attribute_.size() < attributes_.size()) {
    m->by_attribute_.resize(attributes_.size());
  }
  if (m->attribute_values_.size() < attributes_.size()) {
    m->attribute_values_.resize(attributes_.size(), LeadValues{});
  }
  // A number with a fraction (AttributeValue::half_above) is matched per
  // event: the masks and their walks know integers only.
  for (const EventView& event : events) {
    for (const AttributeValue& av : event) {
      if (av.half_above) keep = CohortKeep::kPerEvent;
    }
  }
  // A lone event is kept per event (unless told otherwise) and needs no
  // values by attribute: the masks would share nothing.
  const bool lone = events.size() == 1 && keep != CohortKeep::kMasks;
  // Whether the model weighs the rows (else the masks are taken).
  const bool weigh =
      keep == CohortKeep::kCheaper && events.size() <= kMaxCheaperPerEvent;
  CohortCost cost;
  ListAccessHits(events, lone, weigh, rows, m, &cost);
  const double per_event_cost = cost.PerEvent(slot_limit_);
  m->per_event_ =
      keep == CohortKeep::kPerEvent ||
      (keep == CohortKeep::kCheaper &&
       (lone || (weigh && per_event_cost <= cost.MaskFloor(events.size()))));
  if (m->per_event_) {
    KeepPerEvent(events, m);
    return;
  }
  const double rows_union =
      SetEqualityMasks(events, rows, weigh, cost.rows_present, m);
  if (weigh && per_event_cost <= cost.Masks(rows_union)) {
    m->per_event_ = true;  // its equality words go with the next cohort
    KeepPerEvent(events, m);
    return;
  }
  const uint64_t* words = m->words_.data();
  for (TouchedAccess& t : m->touched_access_) t.mask = words[slot_of_[t.id]];
  ListAttributeWork(m);
}

// A first pass over the events: each event's access hits (one FindEq per
// attribute, for either way of keeping the cohort), the cohort's values by
// attribute (unless `lone`), and, where the model weighs them (`weigh`),
// the sizes it prices (cohort_keep.h).
void PredicateTable::ListAccessHits(absl::Span<const EventView> events,
                                    bool lone, bool weigh, ListRows rows,
                                    CohortMasks* m, CohortCost* cost) const {
  m->event_access_.clear();
  m->event_hits_begin_.clear();
  // Each event's first values in common with the event before (the
  // records of one JSON event with arrays), for this and ShareRangeMarks;
  // a value in common by chance (the same first attribute's value) is not
  // worth the bookkeeping.
  std::vector<uint32_t>& shared = m->shared_values_;
  shared.assign(events.size(), 0);
  for (size_t e = 1; e < events.size(); ++e) {
    const uint32_t common = CommonPrefix(events[e - 1], events[e]);
    if (common >= kMinSharedValues) shared[e] = common;
  }
  // Such an event takes those values' hits from the event before instead
  // of looking them up again; not where the model weighs the rows, which it
  // would have to count again anyway.
  const bool share_hits =
      !weigh &&
      std::any_of(shared.begin(), shared.end(), [](uint32_t k) { return k; });
  // The equality lookups below are each a few cache misses in a large
  // table (its control bytes, then its slot): ask for them all first, so
  // that they overlap instead of following one another.
  if (!lone) {
    for (size_t e = 0; e < events.size(); ++e) {
      for (size_t k = share_hits ? shared[e] : 0; k < events[e].size(); ++k) {
        const AttributeValue& av = events[e][k];
        eq_ids_.prefetch(EqKey{av.attribute, av.value});
        // The sets holding the value (HoldersOf), where the attribute
        // has any.
        if (av.attribute < attributes_.size() &&
            attributes_[av.attribute].sets > 0) {
          in_ids_.prefetch(std::make_pair(av.attribute, av.value));
        }
      }
    }
  }
  // Without a shared value, the loop without the bookkeeping.
  if (share_hits) {
    ListHitsOf<true>(events, lone, weigh, rows, m, cost);
  } else {
    ListHitsOf<false>(events, lone, weigh, rows, m, cost);
  }
  m->event_hits_begin_.push_back(
      static_cast<uint32_t>(m->event_access_.size()));
}

// ListAccessHits' loop over the events; kShare: some event shares its
// first values with the event before (m->shared_values_).
template <bool kShare>
void PredicateTable::ListHitsOf(absl::Span<const EventView> events, bool lone,
                                bool weigh, ListRows rows, CohortMasks* m,
                                CohortCost* cost) const {
  const std::vector<uint32_t>& shared = m->shared_values_;
  // ends[k]: where the hits of the event's value k end in event_access_
  // (prev_ends: the event before's).
  std::vector<uint32_t>& ends = m->value_hits_end_;
  std::vector<uint32_t>& prev_ends = m->prev_value_hits_end_;
  uint32_t prev_first = 0;  // where the event before's values' hits begin
  for (size_t e = 0; e < events.size(); ++e) {
    m->event_hits_begin_.push_back(
        static_cast<uint32_t>(m->event_access_.size()));
    const uint64_t bit = uint64_t{1} << e;
    if (true_ != kFalsePredicate) {
      m->event_access_.push_back({true_, /*present=*/false, {}});
      if (weigh) cost->rows_sum += rows(true_);
    }
    const uint32_t first = static_cast<uint32_t>(m->event_access_.size());
    const uint32_t share = kShare ? shared[e] : 0;
    if (kShare) ends.resize(events[e].size());
    if (kShare && share > 0) {
      // Copied by index: the vector may grow meanwhile.
      const uint32_t to = prev_ends[share - 1];
      for (uint32_t h = prev_first; h < to; ++h) {
        m->event_access_.push_back(m->event_access_[h]);
      }
      for (uint32_t k = 0; k < share; ++k) {
        ends[k] = prev_ends[k] - prev_first + first;
      }
    }
    for (size_t k = 0; k < events[e].size(); ++k) {
      const AttributeValue& av = events[e][k];
      if (av.attribute >= attributes_.size()) {  // no predicates on it
        if (kShare && k >= share) {
          ends[k] = static_cast<uint32_t>(m->event_access_.size());
        }
        continue;
      }
      const AttributeGroups& groups = attributes_[av.attribute];
      const double positions =
          groups.low.size() + groups.high.size() + groups.range.size();
      cost->positions_sum += positions;
      cost->searches_sum += (groups.low.sorted > 0) +
                            (groups.high.sorted > 0) +
                            2 * (groups.range.sorted > 0);
      const double present = !weigh || groups.present == kFalsePredicate
                                 ? 0
                                 : rows(groups.present);
      if (!kShare || k >= share) {
        const LeadPoint point{av.value, UpperTest(av)};
        // A number with a fraction equals no operand (all are integers).
        if (!av.half_above) {
          // Never finds the false predicate: its kind is kFalse, not kEq.
          if (const PredicateId* id = FindEq(av.attribute, av.value)) {
            m->event_access_.push_back({*id, /*present=*/false, point});
            if (weigh) cost->rows_sum += rows(*id);
          }
          if (const SetHolders* h = HoldersOf(av.attribute, av.value)) {
            for (uint32_t i = 0; i < h->accesses; ++i) {
              m->event_access_.push_back({h->ids[i], /*present=*/false,
                                          point});
              if (weigh) cost->rows_sum += rows(h->ids[i]);
            }
            // Kept per event, every set holding the value gets its bit.
            cost->set_ids_sum += h->ids.size();
          }
        }
        if (groups.present != kFalsePredicate) {
          m->event_access_.push_back(
              {groups.present, /*present=*/true, point});
        }
        if (kShare) ends[k] = static_cast<uint32_t>(m->event_access_.size());
      }
      if (groups.present != kFalsePredicate) {
        // A list whose rows' ranges are mostly inline (cluster_store.h):
        // at least as many inline ranges on the attribute as rows.
        if (groups.inline_uses >= present) {
          cost->inline_lead_rows_sum += present;
        } else {
          cost->lead_rows_sum += present;
        }
      }
      if (lone) continue;
      std::vector<CohortMasks::ValueBit>& values =
          m->by_attribute_[av.attribute];
      if (values.empty()) {
        m->present_attributes_.push_back(av.attribute);
        cost->positions_all += positions;
        cost->rows_present += present;
      }
      values.push_back({av.value, bit});
    }
    if (kShare) {
      prev_ends.swap(ends);
      prev_first = first;
    }
  }
}

// The equality masks, and the access predicates touched. Returns the rows
// of the touched lists' union, starting from `rows_present` (counted only
// where `weigh`: the second look of the cost model).
double PredicateTable::SetEqualityMasks(absl::Span<const EventView> events,
                                        ListRows rows, bool weigh,
                                        double rows_present,
                                        CohortMasks* m) const {
  if (m->words_.size() < slot_limit_) m->words_.resize(slot_limit_, 0);
  uint64_t* words = m->words_.data();
  double rows_union = rows_present;
  for (size_t e = 0; e < events.size(); ++e) {
    const uint64_t bit = uint64_t{1} << e;
    for (uint32_t h = m->event_hits_begin_[e]; h < m->event_hits_begin_[e + 1];
         ++h) {
      const AccessHit& hit = m->event_access_[h];
      if (hit.present) continue;  // "present": below
      const PredicateId id = hit.id;
      const uint32_t slot = slot_of_[id];
      if (words[slot] == 0) {
        m->dirty_eq_slots_.push_back(slot);
        m->touched_access_.push_back({id, kNoLead, 0});
        if (weigh) rows_union += rows(id);
      }
      words[slot] |= bit;
    }
  }
  return rows_union;
}

// Per attribute the cohort carries, in attribute order so that the tasks
// are listed in the same order in every cohort (CohortMasks::task_part):
// its values sorted, and for its range groups, inline ranges and sets the
// values with their prefix bits (what phase 2 computes the sets' masks
// from: ClusterStore::SetMask), the "present" list's lead values, the rank
// or bucket table, and the tasks.
void PredicateTable::ListAttributeWork(CohortMasks* m) const {
  std::sort(m->present_attributes_.begin(), m->present_attributes_.end());
  for (AttributeId attribute : m->present_attributes_) {
    std::vector<CohortMasks::ValueBit>& values = m->by_attribute_[attribute];
    const AttributeGroups& groups = attributes_[attribute];
    // Values by attribute for range groups, inline ranges and sets (whose
    // masks phase 2 computes as it reads them: ClusterStore::SetMask).
    const bool ranges =
        groups.low.size() + groups.high.size() + groups.range.size() > 0 ||
        groups.inline_uses > 0 || groups.sets > 0;
    if (ranges) {
      std::sort(values.begin(), values.end(),
                [](const CohortMasks::ValueBit& a,
                   const CohortMasks::ValueBit& b) {
                  return a.value < b.value;
                });
    }
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
      if (groups.inline_uses > 0 || groups.present != kFalsePredicate) {
        m->attributes_.back().lanes = static_cast<uint32_t>(m->lanes_.size());
        EventLanes& lanes = m->lanes_.emplace_back();
        for (const CohortMasks::ValueBit& vb : values) {
          const int event = __builtin_ctzll(vb.bit);
          lanes.value[event] = Clamp32(vb.value);
          lanes.wide[event] = vb.value;
          lanes.present |= vb.bit;
          lanes.exact &= vb.value > INT32_MIN && vb.value < INT32_MAX;
        }
      }
      if (groups.present != kFalsePredicate) {
        m->touched_access_.push_back(
            {groups.present, index, m->prefix_.back()});
      }
      if (groups.present != kFalsePredicate || groups.inline_uses > 0 ||
          groups.sets > 0) {
        AddRankTable(index, m);
      }
      for (const Group* g : {&groups.low, &groups.high, &groups.range}) {
        if (g->size() > 0) AddTasks(*g, index, m);
      }
    }
    values.clear();
  }
  m->present_attributes_.clear();
  // Inline ranges read the values by attribute (the arrays are complete).
  for (uint32_t i = 0; i < m->attributes_.size(); ++i) {
    m->attribute_values_[m->attributes_[i].attribute] = m->lead_values(i);
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
      if (av.attribute >= attributes_.size() || av.half_above) continue;
      ForEachColumnSet(av.attribute, av.value,
                       [&](PredicateId id) { m->event_sets_.push_back(id); });
    }
  }
  m->event_sets_begin_.push_back(static_cast<uint32_t>(m->event_sets_.size()));
  const size_t vectors = m->serial_ ? 1 : events.size();
  if (m->event_bits_.size() < vectors) m->event_bits_.resize(vectors);
  if (m->event_open_bits_.size() < vectors) {
    m->event_open_bits_.resize(vectors);
  }
  for (size_t b = 0; b < vectors; ++b) {
    m->event_bits_[b].Resize(id_limit(), slot_limit_);
    m->event_bits_[b].set_long_runs(!m->serial_);
    m->event_open_bits_[b].set_long_runs(!m->serial_);
  }
  m->event_views_.assign(events.begin(), events.end());
  ShareRangeMarks(events, m);
  for (size_t e = 0; e < events.size(); ++e) {
    const uint64_t bit = uint64_t{1} << e;
    for (uint32_t h = m->event_hits_begin_[e]; h < m->event_hits_begin_[e + 1];
         ++h) {
      const AccessHit& hit = m->event_access_[h];
      uint32_t lead = kNoLead;
      if (hit.present) {
        // "present": its rows' leads are checked against one value
        lead = static_cast<uint32_t>(m->attributes_.size());
        m->attributes_.push_back({info_[hit.id].attribute,
                                  static_cast<uint32_t>(m->values_.size()), 1,
                                  static_cast<uint32_t>(m->prefix_.size()),
                                  0});
        m->values_.push_back(hit.value.value);
        m->upper_.push_back(hit.value.upper);
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


// Runs of consecutive events that each begin with at least
// kMinSharedValues values of the event before: the run's common first
// values are marked once, into the scratch vectors, and exported
// (CohortMasks::SharedMarks); each event's task ORs them in and marks the
// rest of its values. The records of one JSON event with arrays are such
// a run (TypedAttributes::Encode: the event's values, then one element of
// each array), and eventbridge-1m's numbers are mostly the event's own.
void PredicateTable::ShareRangeMarks(absl::Span<const EventView> events,
                                     CohortMasks* m) const {
  m->event_share_.assign(events.size(), CohortMasks::kNoShare);
  m->shared_.clear();
  m->shared_runs_.clear();
  m->shared_words_.clear();
  m->shared_slot_runs_.clear();
  // ListAccessHits' count of each event's values in common with the event
  // before.
  const std::vector<uint32_t>& common = m->shared_values_;
  for (size_t first = 0; first < events.size();) {
    uint32_t prefix = ~uint32_t{0};
    size_t end = first + 1;
    for (; end < events.size() && common[end] > 0; ++end) {
      prefix = std::min(prefix, common[end]);
    }
    const size_t begin = first;
    first = end;
    if (end - begin < 2) continue;
    const EventView shared = events[begin].first(prefix);
    // Only values on attributes with range groups are marked.
    const bool ranges = std::any_of(
        shared.begin(), shared.end(), [&](const AttributeValue& av) {
          if (av.attribute >= attributes_.size()) return false;
          const AttributeGroups& g = attributes_[av.attribute];
          return g.low.size() + g.high.size() + g.range.size() > 0;
        });
    if (!ranges) continue;
    PredicateBits& bits = m->share_scratch_;
    PredicateBits& open = m->share_open_scratch_;
    bits.Resize(id_limit(), slot_limit_);
    bits.set_long_runs(!m->serial_);
    open.set_long_runs(!m->serial_);
    MarkRanges(shared, &bits, &open);
    CohortMasks::SharedMarks marks;
    marks.prefix = prefix;
    // MarkRanges sizes an event's open bits for any number with a fraction
    // on an attribute with ranges, and phase 2 may read them then.
    marks.fractions = std::any_of(
        shared.begin(), shared.end(), [&](const AttributeValue& av) {
          return av.half_above && av.attribute < attributes_.size();
        });
    marks.bits_begin = static_cast<uint32_t>(m->shared_runs_.size());
    marks.slot_runs_begin = static_cast<uint32_t>(m->shared_slot_runs_.size());
    bits.Export(&m->shared_runs_, &m->shared_words_, &m->shared_slot_runs_);
    marks.bits_end = static_cast<uint32_t>(m->shared_runs_.size());
    marks.slot_runs_end = static_cast<uint32_t>(m->shared_slot_runs_.size());
    open.Export(&m->shared_runs_, &m->shared_words_, &m->shared_slot_runs_);
    marks.open_end = static_cast<uint32_t>(m->shared_runs_.size());
    marks.open_slot_runs_end =
        static_cast<uint32_t>(m->shared_slot_runs_.size());
    bits.Clear();
    open.Clear();
    for (size_t e = begin; e < end; ++e) {
      m->event_share_[e] = static_cast<uint32_t>(m->shared_.size());
    }
    m->shared_.push_back(marks);
  }
}

void PredicateTable::AddBucketTable(uint64_t last,
                                    CohortMasks::AttributeValues& a,
                                    CohortMasks* m) {
  if (a.count < kMinBucketValues) return;
  const uint32_t shift = BucketShift(last);
  const uint64_t buckets = BucketTableSize(last, shift);
  a.rank_first = static_cast<uint32_t>(m->ranks_.size());
  a.buckets = true;
  a.bucket_shift = shift;
  m->ranks_.resize(m->ranks_.size() + buckets);
  FillBuckets(m->values_.data() + a.first, a.count, shift, buckets,
              m->ranks_.data() + a.rank_first);
}

void PredicateTable::AddRankTable(uint32_t index, CohortMasks* m) {
  CohortMasks::AttributeValues& a = m->attributes_[index];
  const int64_t* values = m->values_.data() + a.first;
  // The largest offset; checked before adding 1, which wraps to 0 when
  // the values span all of int64.
  const uint64_t last = static_cast<uint64_t>(values[a.count - 1]) -
                        static_cast<uint64_t>(values[0]);
  if (last >= kMaxRankTable) {
    AddBucketTable(last, a, m);
    return;
  }
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
  switch (g.kind) {
    case Kind::kLow: {  // positions with key >= the smallest value
      const uint32_t begin = FirstAtLeast(g, values.front());
      AddPieces(g, index, false, begin, g.sorted, 1, m);
      break;
    }
    case Kind::kHigh: {  // positions with key <= the largest value
      const uint32_t end = FirstAbove(g, values.back());
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
  Run span{0, 0};
  const uint64_t reach =
      static_cast<uint64_t>(values.front()) - static_cast<uint64_t>(kMinValue);
  if (reach > g.max_width) {
    const int64_t from = static_cast<int64_t>(
        static_cast<uint64_t>(values.front()) - g.max_width);
    span.begin = FirstAtLeast(g, from);
  }
  span.end = FirstAbove(g, values.back(), span.begin);
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
    PredicateBits& open = m->event_open_bits_[m->serial_ ? 0 : task];
    if (m->serial_) {  // the previous event's
      bits.Clear();
      open.Clear();
    }
    for (uint32_t h = m->event_hits_begin_[task];
         h < m->event_hits_begin_[task + 1]; ++h) {
      const AccessHit& hit = m->event_access_[h];
      if (!hit.present) bits.SetId(hit.id);
    }
    for (uint32_t h = m->event_sets_begin_[task];
         h < m->event_sets_begin_[task + 1]; ++h) {
      bits.SetId(m->event_sets_[h]);
    }
    EventView view = m->event_views_[task];
    if (const uint32_t share = m->event_share_[task];
        share != CohortMasks::kNoShare) {
      const CohortMasks::SharedMarks& s = m->shared_[share];
      const PredicateBits::WordRun* runs = m->shared_runs_.data();
      const uint64_t* words = m->shared_words_.data();
      const PredicateBits::SlotRun* slot_runs = m->shared_slot_runs_.data();
      bits.OrExported(
          absl::MakeConstSpan(runs + s.bits_begin, runs + s.bits_end), words,
          absl::MakeConstSpan(slot_runs + s.slot_runs_begin,
                              slot_runs + s.slot_runs_end));
      if (s.fractions) open.Resize(id_limit(), slot_limit_);
      if (s.open_slot_runs_end > s.slot_runs_end ||
          s.open_end > s.bits_end) {
        open.OrExported(
            absl::MakeConstSpan(runs + s.bits_end, runs + s.open_end),
            words,
            absl::MakeConstSpan(slot_runs + s.slot_runs_end,
                                slot_runs + s.open_slot_runs_end));
      }
      view = view.subspan(s.prefix);
    }
    MarkRanges(view, &bits, &open);
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
        words[i] = LeadMask(lead, kMinValue, key[i]);
      }
      break;
    case Kind::kHigh:
      WalkHigh(key, t.begin, t.end, values, prefix, words);
      for (uint32_t i = g.sorted; i < tail_end; ++i) {
        words[i] = LeadMask(lead, key[i], kMaxValue);
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
      } else if (lead.rank != nullptr) {
        // Through the attribute's rank table (LeadValues::rank), position
        // by position: two reads of the table and two of the prefix masks,
        // without WalkRangeBlock's two walks and its reads through by_hi.
        // At cohort 64 on fabret-1m: 4.5 cycles a position against 6.9.
        // (kLow and kHigh gained nothing that way: their walks take 2.6
        // cycles a position, about what writing the masks costs.)
        for (uint32_t i = t.begin; i < t.end; ++i) {
          words[i] = RankedLeadMask(lead, key[i], hi[i]);
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

size_t CohortMasks::MemoryBytes() const {
  size_t bytes = words_.capacity() * sizeof(uint64_t) +
                 tasks_.capacity() * sizeof(Task) +
                 attributes_.capacity() * sizeof(AttributeValues) +
                 attribute_values_.capacity() * sizeof(LeadValues) +
                 values_.capacity() * sizeof(int64_t) +
                 upper_.capacity() * sizeof(int64_t) +
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
  for (const PredicateBits& b : event_open_bits_) bytes += b.MemoryBytes();
  bytes += (event_share_.capacity() + shared_values_.capacity() +
            value_hits_end_.capacity() + prev_value_hits_end_.capacity()) *
               sizeof(uint32_t) +
           shared_.capacity() * sizeof(SharedMarks) +
           shared_runs_.capacity() * sizeof(PredicateBits::WordRun) +
           shared_words_.capacity() * sizeof(uint64_t) +
           shared_slot_runs_.capacity() * sizeof(PredicateBits::SlotRun) +
           share_scratch_.MemoryBytes() + share_open_scratch_.MemoryBytes();
  for (const auto& v : by_attribute_) bytes += v.capacity() * sizeof(ValueBit);
  return bytes;
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
