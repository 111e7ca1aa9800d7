#include "matcher/cluster_store.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "matcher/growth.h"

namespace cohort {
namespace matcher {
namespace internal {
ClusterStore::~ClusterStore() {
  // Blocks go with the arena; allocations past its largest class do not.
  for (Cluster& c : clusters_) FreeData(c);
}

void ClusterStore::FreeData(Cluster& c) {
  if (c.data != nullptr) arena_.Free(c.data, c.words());
  c.data = nullptr;
}

uint32_t ClusterStore::NewCluster(uint32_t* head, PredicateId access,
                                  uint32_t width, bool lead) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<uint32_t>(clusters_.size());
    ReserveGrowingByQuarter(clusters_, clusters_.size() + 1);
    ReserveGrowingByQuarter(access_, access_.size() + 1);
    clusters_.emplace_back();
    access_.push_back(kFalsePredicate);
  }
  Cluster& c = clusters_[index];
  c = Cluster{};
  c.width = static_cast<uint16_t>(width);
  c.lead = lead ? 1 : 0;
  access_[index] = access;
  c.next = *head;
  *head = index;
  return index;
}

void ClusterStore::Unlink(uint32_t* head, uint32_t index) {
  uint32_t* link = head;
  while (*link != index) link = &clusters_[*link].next;
  *link = clusters_[index].next;
  FreeData(clusters_[index]);
  clusters_[index] = Cluster{};
  free_.push_back(index);
}

void ClusterStore::Resize(Cluster& c, uint32_t capacity) {
  Cluster grown;
  grown.width = c.width;
  grown.lead = c.lead;
  grown.capacity = capacity;
  grown.data = arena_.Allocate(grown.words());
  // Array by array: the lead's (two words a row), the ids, the columns.
  const uint32_t arrays = c.arrays();
  for (uint32_t a = 0; a < arrays && c.rows > 0;) {
    const uint32_t words = c.lead && a < 4 ? 2 : 1;  // words per row
    std::memcpy(grown.data + static_cast<size_t>(a) * capacity,
                c.data + static_cast<size_t>(a) * c.capacity,
                static_cast<size_t>(c.rows) * words * sizeof(uint32_t));
    a += words;
  }
  if (c.lead) {
    uint32_t* to = grown.meta();
    if (c.data != nullptr) {
      std::memcpy(to, c.meta(), kLeadMetaWords * sizeof(uint32_t));
    } else {
      std::fill(to, to + kLeadMetaWords, 0u);
    }
  }
  FreeData(c);
  c.data = grown.data;
  c.capacity = capacity;
}

void ClusterStore::Widen(Cluster& c, uint32_t width) {
  if (c.capacity == 0) {  // no arrays yet
    c.width = static_cast<uint16_t>(width);
    return;
  }
  Cluster wide;
  wide.width = static_cast<uint16_t>(width);
  wide.lead = c.lead;
  wide.capacity = c.capacity;
  wide.data = arena_.Allocate(wide.words());
  // The lead's arrays (if any), the ids and the old columns keep their
  // places; the new columns are padding.
  const size_t kept = size_t{c.capacity} * c.arrays();
  std::memcpy(wide.data, c.data, kept * sizeof(uint32_t));
  std::fill(wide.data + kept,
            wide.data + size_t{wide.capacity} * wide.arrays(),
            kPadEntry);
  if (c.lead) {
    std::memcpy(wide.meta(), c.meta(), kLeadMetaWords * sizeof(uint32_t));
  }
  FreeData(c);
  c.data = wide.data;
  c.width = wide.width;
}

uint32_t ClusterStore::RowWidth(Location at) const {
  const Cluster& c = clusters_[at.cluster];
  uint32_t width = c.width;
  while (width > 0 && c.column(width - 1)[at.row] == kPadEntry) --width;
  return width;
}

void ClusterStore::CopyRow(const Cluster& c, uint32_t from, Cluster& into,
                           uint32_t to) {
  into.ids()[to] = c.ids()[from];
  for (uint32_t col = 0; col < c.width; ++col) {
    into.column(col)[to] = c.column(col)[from];
  }
  if (c.lead) into.SetLead(to, c.GetLead(from));
}

Location ClusterStore::AppendRow(uint32_t* head, PredicateId access,
                                 SubscriptionId id,
                                 absl::Span<const uint32_t> entries,
                                 const std::optional<LeadRange>& lead) {
  const uint32_t width = static_cast<uint32_t>(entries.size());
  // One cluster a width class: a narrower row is padded (kPadEntry), a
  // wider one widens the cluster.
  const uint32_t wanted = WidthClass(width);
  uint32_t index = *head;
  while (index != kNoCluster && WidthClass(clusters_[index].width) != wanted) {
    index = clusters_[index].next;
  }
  if (index == kNoCluster) {
    index = NewCluster(head, access, width, lead.has_value());
  } else if (clusters_[index].width < width) {
    Widen(clusters_[index], width);
  }
  Cluster& c = clusters_[index];
  assert(c.lead == lead.has_value());
  if (c.rows == c.capacity) {
    // Most clusters stay tiny, so grow from 1; by half again rather than
    // doubling, so unused capacity averages ~1/6 of a cluster instead of ~1/4
    // (it is most of the index's memory) at the price of more re-layouts.
    Resize(c, c.capacity + std::max<uint32_t>(1, c.capacity / 2));
  }
  const uint32_t row = c.rows++;
  // An LT's or GT's lead flags the id (cluster_entry.h, kOpenLeadBit).
  c.ids()[row] = id | (lead.has_value() && lead->open ? kOpenLeadBit : 0);
  for (uint32_t col = 0; col < width; ++col) c.column(col)[row] = entries[col];
  for (uint32_t col = width; col < c.width; ++col) {
    c.column(col)[row] = kPadEntry;
  }
  if (lead.has_value()) c.SetLead(row, *lead);
  return Location{index, row};
}

bool ClusterStore::TailDue(const Cluster& c) {
  return c.rows - c.sorted >
         std::max(kMinLeadTail, c.sorted / kLeadTailDivisor);
}

void ClusterStore::MergeTail(Cluster& c) {
  std::vector<uint32_t>& order = order_scratch_;
  order.clear();
  for (uint32_t row = 0; row < c.rows; ++row) {
    if (c.ids()[row] != kDeadRow) order.push_back(row);
  }
  // The finite leads get a run of their own only where their width bounds
  // a value's window to a small part of a long run (kMidRunSpan,
  // kMidRunRows): otherwise the run's extra searches cost more than the
  // rows they skip (fabret-1m, whose lead clusters hold hundreds of rows,
  // matched 8% slower per event with a middle run in every lead cluster),
  // and they sort by lo with the leads that have no upper bound.
  uint64_t widest = 0;
  int64_t lo_min = INT64_MAX, lo_max = INT64_MIN;
  uint32_t low = 0, finite = 0;  // rows of runs 0 and 1
  for (uint32_t row : order) {
    const LeadRange r = c.GetLead(row);
    const int run = LeadRun(r);
    low += run == 0;
    if (run != 1) continue;
    ++finite;
    widest = std::max(widest, static_cast<uint64_t>(r.hi) -
                                  static_cast<uint64_t>(r.lo));
    lo_min = std::min(lo_min, r.lo);
    lo_max = std::max(lo_max, r.lo);
  }
  const bool mid_run =
      finite >= kMidRunRows &&
      widest < (static_cast<uint64_t>(lo_max) - static_cast<uint64_t>(lo_min)) /
                   kMidRunSpan;
  auto run_of = [mid_run](const LeadRange& r) {
    const int run = LeadRun(r);
    return run == 1 && !mid_run ? 2 : run;
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const LeadRange x = c.GetLead(a), y = c.GetLead(b);
    const int run_x = run_of(x), run_y = run_of(y);
    if (run_x != run_y) return run_x < run_y;
    if (x.lo != y.lo) return x.lo < y.lo;
    return x.hi != y.hi ? x.hi < y.hi : a < b;
  });
  const uint32_t live = static_cast<uint32_t>(order.size());
  Cluster merged;
  merged.width = c.width;
  merged.lead = c.lead;
  // Room for the tail to grow until the next merge, and no more: a lead
  // list of a range-heavy index holds most of its rows.
  merged.capacity = live + std::max(kMinLeadTail, live / kLeadTailDivisor) + 1;
  merged.data = arena_.Allocate(merged.words());
  moved_scratch_.clear();
  for (uint32_t to = 0; to < live; ++to) {
    CopyRow(c, order[to], merged, to);
    if (order[to] != to) moved_scratch_.push_back(to);
  }
  FreeData(c);
  c.data = merged.data;
  c.capacity = merged.capacity;
  c.rows = c.sorted = live;
  c.dead = 0;
  // The runs' ends and the middle run's width (Cluster::meta), from the
  // counts taken before sorting.
  uint32_t* meta = c.meta();
  meta[0] = low;
  meta[1] = mid_run ? low + finite : low;
  meta[2] = mid_run ? static_cast<uint32_t>(
                          std::min<uint64_t>(widest, UINT32_MAX))
                    : UINT32_MAX;
}

ClusterStore::Cluster::Windows ClusterStore::Cluster::SortedWindows(
    int64_t smallest, int64_t largest) const {
  // The first row of [begin, end) past the rows for which `before` holds
  // (a prefix of it). The ends are checked first: a window often starts
  // at its run's start or ends at its run's end, and a check is one load
  // where a search is several.
  auto first_not = [](uint32_t begin, uint32_t end, auto&& before) {
    if (begin == end || !before(begin)) return begin;
    if (before(end - 1)) return end;
    ++begin;
    --end;
    while (begin < end) {
      const uint32_t mid = begin + (end - begin) / 2;
      if (before(mid)) {
        begin = mid + 1;
      } else {
        end = mid;
      }
    }
    return begin;
  };
  const uint32_t sorted_low = this->sorted_low();
  const uint32_t sorted_mid = this->sorted_mid();
  const uint32_t mid_width = this->mid_width();
  Windows w;
  w.run[0] = {first_not(0, sorted_low,
                        [&](uint32_t r) { return hi(r) < smallest; }),
              sorted_low};
  uint32_t mid_from = sorted_low;
  if (mid_width != UINT32_MAX &&
      static_cast<uint64_t>(smallest) - static_cast<uint64_t>(INT64_MIN) >
          mid_width) {
    const int64_t from = static_cast<int64_t>(static_cast<uint64_t>(smallest) -
                                              mid_width);
    mid_from = first_not(sorted_low, sorted_mid,
                         [&](uint32_t r) { return lo(r) < from; });
  }
  w.run[1] = {mid_from, first_not(mid_from, sorted_mid, [&](uint32_t r) {
                return lo(r) <= largest;
              })};
  w.run[2] = {sorted_mid, first_not(sorted_mid, sorted, [&](uint32_t r) {
                return lo(r) <= largest;
              })};
  return w;
}

uint32_t ClusterStore::Entry(Location at, uint32_t column) const {
  return clusters_[at.cluster].column(column)[at.row];
}

std::optional<LeadRange> ClusterStore::Lead(Location at) const {
  const Cluster& c = clusters_[at.cluster];
  if (!c.lead) return std::nullopt;
  return c.GetLead(at.row);
}

void ClusterStore::MatchClusterForEvent(const Cluster& c, LeadPoint value,
                                        const uint32_t* slots,
                                        const PredicateBits& bits,
                                        const PredicateBits& open,
                                        std::vector<SubscriptionId>* matches,
                                        uint64_t* visited) {
  if (c.width == 0 && !c.lead) {  // nothing carries a tombstone: test the id
    const uint32_t* ids = c.ids();
    for (uint32_t row = 0; row < c.rows; ++row) {  // no lead: no flag
      if (ids[row] != kDeadRow) matches->push_back(ids[row]);
    }
    *visited += c.rows;
    return;
  }
  // Rows of the block still alive, compacted without branches: each row is
  // written at the end of the list and kept only if its entry holds.
  // Tombstones die by their id in a lead cluster, else in column 0 (the
  // false predicate's bit is never set).
  uint32_t alive[kMatchBlock];
  // Four runs of rows: the sorted runs' windows for the value
  // (SortedWindows), and the tail (without a lead: one run, all rows).
  Cluster::Window runs[4] = {{0, 0}, {0, 0}, {0, 0}, {0, c.rows}};
  if (c.lead) {
    const Cluster::Windows w =
        c.SortedWindows(std::min(value.value, value.upper),
                        std::max(value.value, value.upper));
    for (int r = 0; r < 3; ++r) runs[r] = w.run[r];
    runs[3].from = c.sorted;
  }
  // A number with a fraction: open entries and open leads (cluster_entry.h)
  // take the slower check.
  const bool fraction = value.value != value.upper || open.any();
  // Long runs (PredicateBits::has_runs) are checked only where kept.
  const bool long_runs = bits.has_runs() || (fraction && open.has_runs());
  for (const Cluster::Window& run : runs) {
    *visited += run.to - run.from;
    for (uint32_t start = run.from, end; start < run.to; start = end) {
      end = std::min(start + kMatchBlock, run.to);
      const uint32_t n = end - start;
      if (fraction && long_runs) {
        MatchBlockForEvent<true, true>(c, start, n, value, slots, bits, &open,
                                       alive, matches);
      } else if (fraction) {
        MatchBlockForEvent<true, false>(c, start, n, value, slots, bits,
                                        &open, alive, matches);
      } else if (long_runs) {
        MatchBlockForEvent<false, true>(c, start, n, value, slots, bits,
                                        nullptr, alive, matches);
      } else {
        MatchBlockForEvent<false, false>(c, start, n, value, slots, bits,
                                         nullptr, alive, matches);
      }
    }
  }
}

template <bool kOpen, bool kRuns>
void ClusterStore::MatchBlockForEvent(const Cluster& c, uint32_t start,
                                      uint32_t n, LeadPoint value,
                                      const uint32_t* slots,
                                      const PredicateBits& bits,
                                      const PredicateBits* open,
                                      uint32_t* alive,
                                      std::vector<SubscriptionId>* matches) {
  // An entry holds by its bit, or, with kOpen, an open entry by its open
  // bit too (cluster_entry.h; open entries are never negated).
  // kRuns: either vector may keep long runs (PredicateBits::has_runs).
  const auto held = [&](const PredicateBits& b, uint32_t e) {
    return kRuns ? b.Holds(e, slots) : b.HoldsByBit(e, slots);
  };
  const auto holds = [&](uint32_t e) {
    if (!kOpen) return held(bits, e);
    return held(bits, e) |
           static_cast<uint32_t>((e & kOpenBit) != 0 && held(*open, e) != 0);
  };
  const uint32_t* ids = c.ids();
  uint32_t live = 0;
  uint32_t k = 0;  // the first column not yet checked
  if (c.lead) {
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t row = start + j;
      int64_t lower = value.value;
      int64_t upper = value.upper;
      if constexpr (kOpen) {  // an open lead takes the two tests swapped
        if (ids[row] & kOpenLeadBit) std::swap(lower, upper);
      }
      alive[live] = j;
      live += (c.lo(row) <= lower) & (upper <= c.hi(row)) &
              (ids[row] != kDeadRow);
    }
  } else {
    const uint32_t* col = c.column(0) + start;
    for (uint32_t j = 0; j < n; ++j) {
      alive[live] = j;
      live += holds(col[j]);
    }
    k = 1;
  }
  for (; k < c.width && live > 0; ++k) {
    const uint32_t* col = c.column(k) + start;
    uint32_t kept = 0;
    // A range entry's slot is a load from a table as large as the
    // predicates, and its bit a second, dependent one. Where that table is
    // too large for the cache (ranges-1m: 5.9M slots), in a lead cluster,
    // whose entries are ranges or NE, ask for every live row's slot first,
    // so that the misses overlap, then check: ranges-1m's MatchEvent 1.56x.
    // Elsewhere the extra pass only costs (most entries are equalities, or
    // the slots are cached: fabret-1m's MatchEvent lost 5% to it).
    // A range entry's slot is started here, by hand: through a helper
    // function GCC 12's -O2 (ipa-modref) took the calls in this template
    // for free of effects and dropped the pass, and ranges-1m's MatchEvent
    // ran at 0.55x.
    if (c.lead && bits.large_slot_table()) {
      for (uint32_t m = 0; m < live; ++m) {
        const uint32_t e = col[alive[m]];
        if (e & kRangeEntryBit) __builtin_prefetch(slots + (e & kEntryIdMask));
      }
    }
    for (uint32_t m = 0; m < live; ++m) {
      const uint32_t j = alive[m];
      alive[kept] = j;
      kept += holds(col[j]);
    }
    live = kept;
  }
  for (uint32_t m = 0; m < live; ++m) {
    matches->push_back(ids[start + alive[m]] & kRowIdMask);
  }
}

size_t ClusterStore::MemoryBytes() const {
  size_t bytes = HugeBytes(clusters_.capacity() * sizeof(Cluster)) +
                 access_.capacity() * sizeof(PredicateId) +
                 free_.capacity() * sizeof(uint32_t) +
                 order_scratch_.capacity() * sizeof(uint32_t) +
                 moved_scratch_.capacity() * sizeof(uint32_t);
  return bytes + arena_.MemoryBytes();
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
