#include "matcher/cluster_store.h"

#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "matcher/growth.h"

namespace cohort {
namespace matcher {
namespace internal {

namespace {

// EventPoints' table, one a thread: at least as long as the largest limit
// asked of it, every entry absent between uses.
constexpr EventPoint kAbsentPoint = {INT64_MIN, INT64_MAX, INT32_MIN,
                                     INT32_MAX};

std::vector<EventPoint>& PointsTable(uint32_t limit) {
  thread_local std::vector<EventPoint> table;
  if (table.size() < limit) table.resize(limit, kAbsentPoint);
  return table;
}

}  // namespace

EventPoints::EventPoints(EventView event, uint32_t limit)
    : event_(event), limit_(limit), table_(nullptr) {
  if (limit == 0) return;
  table_ = PointsTable(limit).data();
  for (const AttributeValue& av : event) {
    if (av.attribute >= limit) continue;
    const int64_t upper = UpperTest(av);
    table_[av.attribute] = {av.value, upper, Clamp32(av.value), Clamp32(upper)};
    fraction_ |= av.half_above;
  }
}

EventPoints::~EventPoints() {
  if (table_ == nullptr) return;
  for (const AttributeValue& av : event_) {
    if (av.attribute < limit_) table_[av.attribute] = kAbsentPoint;
  }
}

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
  Relayout(c, capacity, c.width, c.bounds, c.wide);
}

void ClusterStore::Widen(Cluster& c, uint32_t width, uint32_t bounds,
                         bool wide) {
  if (c.capacity == 0) {  // no arrays yet
    c.width = static_cast<uint16_t>(width);
    c.bounds = static_cast<uint8_t>(bounds);
    c.wide = wide ? 1 : 0;
    return;
  }
  Relayout(c, c.capacity, width, bounds, wide);
}

void ClusterStore::Relayout(Cluster& c, uint32_t capacity, uint32_t width,
                            uint32_t bounds, bool wide) {
  assert(width >= c.width && bounds >= c.bounds && capacity >= c.rows);
  assert(wide || !c.wide);
  Cluster to;
  to.width = static_cast<uint16_t>(width);
  to.lead = c.lead;
  to.wide = wide ? 1 : 0;
  to.bounds = static_cast<uint8_t>(bounds);
  to.capacity = capacity;
  to.data = arena_.Allocate(to.words());
  const size_t rows = c.rows;
  auto copy = [&](const uint32_t* from, uint32_t* into, size_t words) {
    if (words > 0) std::memcpy(into, from, words * sizeof(uint32_t));
  };
  if (c.data != nullptr) {
    // Array by array: the lead's (two words a row), the ids and columns
    // (one), the bounds (four).
    if (c.lead) {
      copy(c.data, to.data, 2 * rows);
      copy(c.data + 2 * size_t{c.capacity}, to.data + 2 * size_t{capacity},
           2 * rows);
    }
    for (uint32_t a = 0; a <= c.width; ++a) {
      copy(c.ids() + a * size_t{c.capacity}, to.ids() + a * size_t{capacity},
           rows);
    }
    for (uint32_t k = 0; k < c.bounds; ++k) {
      if (c.wide == to.wide) {
        copy(c.bound_pairs(k), to.bound_pairs(k), c.bound_words() * rows);
        continue;
      }
      // Narrow to wide. A row whose column k is not inline has no bounds
      // there: what it holds is copied too, and never read.
      for (uint32_t row = 0; row < rows; ++row) {
        to.SetBounds(k, row, c.GetBounds(k, row));
      }
    }
  }
  // The new columns are padding, for the rows there are and to come.
  for (uint32_t k = c.width; k < width; ++k) {
    std::fill(to.column(k), to.column(k) + capacity, kPadEntry);
  }
  if (c.lead) {
    uint32_t* meta = to.meta();
    if (c.data != nullptr) {
      std::memcpy(meta, c.meta(), kLeadMetaWords * sizeof(uint32_t));
    } else {
      std::fill(meta, meta + kLeadMetaWords, 0u);
    }
  }
  FreeData(c);
  c.data = to.data;
  c.capacity = capacity;
  c.width = to.width;
  c.wide = to.wide;
  c.bounds = to.bounds;
}

uint32_t ClusterStore::AppendEntries(Location at,
                                     std::vector<uint32_t>* entries,
                                     std::vector<LeadRange>* bounds) const {
  const Cluster& c = clusters_[at.cluster];
  uint32_t width = c.width;
  while (width > 0 && c.column(width - 1)[at.row] == kPadEntry) --width;
  for (uint32_t col = 0; col < width; ++col) {
    entries->push_back(c.column(col)[at.row]);
    if (IsInline(entries->back())) bounds->push_back(c.GetBounds(col, at.row));
  }
  return width;
}

void ClusterStore::CopyRow(const Cluster& c, uint32_t from, Cluster& into,
                           uint32_t to) {
  into.ids()[to] = c.ids()[from];
  for (uint32_t col = 0; col < c.width; ++col) {
    into.column(col)[to] = c.column(col)[from];
  }
  // into's bounds are as wide as c's (MergeTail, RemoveRow).
  const uint32_t words = c.bound_words();
  for (uint32_t col = 0; col < c.bounds; ++col) {
    std::memcpy(into.bound_pairs(col) + words * size_t{to},
                c.bound_pairs(col) + words * size_t{from},
                words * sizeof(uint32_t));
  }
  if (c.lead) into.SetLead(to, c.GetLead(from));
}

namespace {

// to[i] = from[order[i]] for rows of kWords words.
template <size_t kWords>
void Gather(const uint32_t* from, uint32_t* to,
            const std::vector<uint32_t>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    std::memcpy(to + kWords * i, from + kWords * size_t{order[i]},
                kWords * sizeof(uint32_t));
  }
}

}  // namespace

void ClusterStore::GatherRows(const Cluster& c,
                              const std::vector<uint32_t>& order,
                              Cluster& into) {
  // What CopyRow does for each row, array by array: each pass reads one
  // array, where a row at a time read all of them at once.
  if (c.lead) {
    Gather<2>(c.lead_lo(), into.data, order);
    Gather<2>(c.lead_hi(), into.data + 2 * size_t{into.capacity}, order);
  }
  Gather<1>(c.ids(), into.ids(), order);
  for (uint32_t col = 0; col < c.width; ++col) {
    Gather<1>(c.column(col), into.column(col), order);
  }
  for (uint32_t col = 0; col < c.bounds; ++col) {
    if (c.wide) {
      Gather<4>(c.bound_pairs(col), into.bound_pairs(col), order);
    } else {
      Gather<2>(c.bound_pairs(col), into.bound_pairs(col), order);
    }
  }
}

Location ClusterStore::AppendRow(uint32_t* head, PredicateId access,
                                 SubscriptionId id,
                                 absl::Span<const uint32_t> entries,
                                 absl::Span<const LeadRange> bounds,
                                 const std::optional<LeadRange>& lead) {
  const uint32_t width = static_cast<uint32_t>(entries.size());
  const uint32_t inline_columns = static_cast<uint32_t>(bounds.size());
  assert(inline_columns <= width && inline_columns <= UINT8_MAX);
  const bool wide_bounds = !std::all_of(bounds.begin(), bounds.end(),
                                        &ClusterStore::NarrowBounds);
  // One cluster a width class: a narrower row is padded (kPadEntry), a
  // wider one widens the cluster.
  const uint32_t wanted = WidthClass(width);
  uint32_t index = *head;
  while (index != kNoCluster && WidthClass(clusters_[index].width) != wanted) {
    index = clusters_[index].next;
  }
  if (index == kNoCluster) {
    index = NewCluster(head, access, width, lead.has_value());
    clusters_[index].bounds = static_cast<uint8_t>(inline_columns);
    clusters_[index].wide = wide_bounds ? 1 : 0;
  } else if (clusters_[index].width < width ||
             clusters_[index].bounds < inline_columns ||
             (wide_bounds && !clusters_[index].wide)) {
    Cluster& c = clusters_[index];
    Widen(c, std::max<uint32_t>(c.width, width),
          std::max<uint32_t>(c.bounds, inline_columns),
          wide_bounds || c.wide);
  }
  Cluster& c = clusters_[index];
  assert(c.lead == lead.has_value());
  if (c.rows == c.capacity) Resize(c, GrownCapacity(c));
  const uint32_t row = c.rows++;
  // An LT's or GT's lead flags the id (cluster_entry.h, kOpenLeadBit).
  c.ids()[row] = id | (lead.has_value() && lead->open ? kOpenLeadBit : 0);
  for (uint32_t col = 0; col < width; ++col) {
    c.column(col)[row] = entries[col];
    if (IsSetEntry(entries[col])) c.sets = 1;
  }
  for (uint32_t col = width; col < c.width; ++col) {
    c.column(col)[row] = kPadEntry;
  }
  for (uint32_t col = 0; col < inline_columns; ++col) {
    assert(IsInline(entries[col]));
    c.SetBounds(col, row, bounds[col]);
    inline_limit_ =
        std::max(inline_limit_, InlineAttribute(entries[col]) + 1);
  }
  if (lead.has_value()) c.SetLead(row, *lead);
  return Location{index, row};
}

uint32_t ClusterStore::GrownCapacity(const Cluster& c) const {
  // Most clusters stay tiny, so grow from 1; by half again rather than
  // doubling, so unused capacity averages ~1/6 of a cluster instead of ~1/4
  // (it is most of the index's memory) at the price of more re-layouts. A
  // bulk load's large lead clusters double: each re-layout copies the
  // cluster, and EndBulk gives the room back (MergeTail, TrimBulkGrowth).
  // Small ones grow by half still: fabret-1m's hundreds of lead clusters
  // under 64 rows are not merged, and doubled and trimmed they held 2.1
  // bytes a subscription more.
  const uint32_t by_half = c.capacity + std::max<uint32_t>(1, c.capacity / 2);
  if (!bulk_ || !c.lead || c.capacity < kBulkDoublingFrom) return by_half;
  return static_cast<uint32_t>(std::min<uint64_t>(
      std::max<uint64_t>(by_half, uint64_t{2} * c.capacity), UINT32_MAX));
}

void ClusterStore::TrimBulkGrowth(Cluster& c) {
  const uint32_t room = c.rows + std::max<uint32_t>(1, c.rows / 2);
  if (c.capacity > room) Resize(c, room);
}

bool ClusterStore::TailDue(const Cluster& c) {
  return c.rows - c.sorted >
         std::max(kMinLeadTail, c.sorted / kLeadTailDivisor);
}

void ClusterStore::MergeTail(Cluster& c) {
  // The live rows' leads, read once in row order.
  std::vector<SortKey>& keys = keys_scratch_;
  keys.clear();
  for (uint32_t row = 0; row < c.rows; ++row) {
    if (c.ids()[row] == kDeadRow) continue;
    const LeadRange r = c.GetLead(row);
    keys.push_back({r.lo, r.hi, row, static_cast<uint32_t>(LeadRun(r))});
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
  for (const SortKey& k : keys) {
    low += k.run == 0;
    if (k.run != 1) continue;
    ++finite;
    widest = std::max(widest, static_cast<uint64_t>(k.hi) -
                                  static_cast<uint64_t>(k.lo));
    lo_min = std::min(lo_min, k.lo);
    lo_max = std::max(lo_max, k.lo);
  }
  const bool mid_run =
      finite >= kMidRunRows &&
      widest < (static_cast<uint64_t>(lo_max) - static_cast<uint64_t>(lo_min)) /
                   kMidRunSpan;
  if (!mid_run) {
    for (SortKey& k : keys) k.run = k.run == 1 ? 2 : k.run;
  }
  // Sorted as keys, not as row numbers read through the lead arrays: a
  // bulk load merges a million rows at once (ranges-1m), and the
  // comparisons' reads of the arrays were most of the merge.
  std::sort(keys.begin(), keys.end(), [](const SortKey& x, const SortKey& y) {
    if (x.run != y.run) return x.run < y.run;
    if (x.lo != y.lo) return x.lo < y.lo;
    return x.hi != y.hi ? x.hi < y.hi : x.row < y.row;
  });
  const uint32_t live = static_cast<uint32_t>(keys.size());
  std::vector<uint32_t>& order = order_scratch_;
  order.resize(live);
  moved_scratch_.clear();
  for (uint32_t to = 0; to < live; ++to) {
    order[to] = keys[to].row;
    if (order[to] != to) moved_scratch_.push_back(to);
  }
  // The keys are 24 bytes a row, six times the order: a large merge's go
  // back (a cluster's merges come at every eighth more rows, so their
  // allocations are rare), a small one's stay for the next.
  if (keys.capacity() > kKeptSortKeys) std::vector<SortKey>().swap(keys);
  Cluster merged;
  merged.width = c.width;
  merged.lead = c.lead;
  merged.wide = c.wide;
  merged.bounds = c.bounds;
  // Room for the tail to grow until the next merge, and no more: a lead
  // list of a range-heavy index holds most of its rows.
  merged.capacity = live + std::max(kMinLeadTail, live / kLeadTailDivisor) + 1;
  merged.data = arena_.Allocate(merged.words());
  GatherRows(c, order, merged);
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

std::optional<LeadRange> ClusterStore::Lead(Location at) const {
  const Cluster& c = clusters_[at.cluster];
  if (!c.lead) return std::nullopt;
  return c.GetLead(at.row);
}

void ClusterStore::MatchClusterForEvent(const Cluster& c, LeadPoint value,
                                        const uint32_t* slots,
                                        const PredicateBits& bits,
                                        const PredicateBits& open,
                                        const EventPoints& event_points,
                                        std::vector<SubscriptionId>* matches,
                                        uint64_t* visited) {
  const EventPoint* points = event_points.data();
  if (c.width == 0 && !c.lead) {  // nothing carries a tombstone: test the id
    const uint32_t* ids = c.ids();
    const size_t at = matches->size();  // sized once (MatchBlockForEvent)
    matches->resize(at + c.rows);
    SubscriptionId* out = matches->data() + at;
    uint32_t kept = 0;
    for (uint32_t row = 0; row < c.rows; ++row) {  // no lead: no flag
      out[kept] = ids[row];
      kept += ids[row] != kDeadRow;
    }
    matches->resize(at + kept);
    *visited += c.rows;
    return;
  }
  // Rows of the block still alive, compacted without branches: each row is
  // written at the end of the list and kept only if its entry holds.
  // Tombstones die by their id in a lead cluster, else in column 0 (the
  // false predicate's bit is never set).
  uint32_t alive[kEventBlock];
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
  const bool fraction = value.value != value.upper || open.any() ||
                        (c.bounds > 0 && event_points.fraction());
  // Long runs (PredicateBits::has_runs) are checked only where kept.
  const bool long_runs = bits.has_runs() || (fraction && open.has_runs());
  // What a window's rows must still test of their lead, for a value
  // without a fraction (else both bounds, as in the tail): none in the
  // first run (lo is INT64_MIN, and the window is hi >= value), the upper
  // bound in the others (the window is lo <= value). A tombstone then dies
  // in column 0 (RemoveRow), so only a cluster without columns tests its
  // ids. On ranges-1m the lead tests were a fifth of the rows' reads.
  const bool lead_integer = value.value == value.upper && c.width > 0;
  static constexpr LeadTest kWindowTest[4] = {
      LeadTest::kNone, LeadTest::kUpper, LeadTest::kUpper, LeadTest::kBoth};
  for (int r = 0; r < 4; ++r) {
    const Cluster::Window& run = runs[r];
    const LeadTest test = lead_integer ? kWindowTest[r] : LeadTest::kBoth;
    *visited += run.to - run.from;
    for (uint32_t start = run.from, end; start < run.to; start = end) {
      end = std::min(start + kEventBlock, run.to);
      const uint32_t n = end - start;
      if (fraction && long_runs) {
        MatchBlockForEvent<true, true>(c, start, n, test, value, slots, bits,
                                       &open, points, alive, matches);
      } else if (fraction) {
        MatchBlockForEvent<true, false>(c, start, n, test, value, slots, bits,
                                        &open, points, alive, matches);
      } else if (long_runs) {
        MatchBlockForEvent<false, true>(c, start, n, test, value, slots, bits,
                                        nullptr, points, alive, matches);
      } else if (!bits.large_slot_table() && c.bounds == 0 && UseAvx512()) {
        MatchBlockForEventAvx512(c, start, n, test, value, slots, bits,
                                 matches);
      } else if (!bits.large_slot_table()) {
        MatchBlockForEvent<false, false, true>(c, start, n, test, value,
                                               slots, bits, nullptr, points,
                                               alive, matches);
      } else {
        MatchBlockForEvent<false, false>(c, start, n, test, value, slots,
                                         bits, nullptr, points, alive,
                                         matches);
      }
    }
  }
}

namespace {

// Of eight int64 bounds at `at` (two words each), the lanes of `in` whose
// bound is at least `x` (kAtLeast) or at most `x`; of sixteen, with a
// mask of sixteen lanes.
template <bool kAtLeast>
__attribute__((target("avx512f"))) inline __mmask8 BoundsAvx512(
    const uint32_t* at, __mmask8 in, __m512i x) {
  const __m512i b = _mm512_maskz_loadu_epi64(in, at);
  return kAtLeast ? _mm512_mask_cmpge_epi64_mask(in, b, x)
                  : _mm512_mask_cmple_epi64_mask(in, b, x);
}
template <bool kAtLeast>
__attribute__((target("avx512f"))) inline __mmask16 BoundsAvx512(
    const uint32_t* at, __mmask16 in, __m512i x) {
  const __mmask8 a =
      BoundsAvx512<kAtLeast>(at, static_cast<__mmask8>(in), x);
  const __mmask8 b =
      BoundsAvx512<kAtLeast>(at + 16, static_cast<__mmask8>(in >> 8), x);
  return static_cast<__mmask16>(a | (b << 8));
}

}  // namespace

void ClusterStore::MatchBlockForEventAvx512(
    const Cluster& c, uint32_t start, uint32_t n, LeadTest test,
    LeadPoint value, const uint32_t* slots, const PredicateBits& bits,
    std::vector<SubscriptionId>* matches) {
  constexpr uint32_t kChunks = kEventBlock / 16;
  uint16_t alive[kChunks];  // bit i of alive[q]: row start + 16 q + i
  const uint32_t chunks = (n + 15) / 16;
  const auto lanes = [n](uint32_t q) -> __mmask16 {
    const uint32_t left = n - 16 * q;
    return left >= 16 ? __mmask16{0xffff}
                      : static_cast<__mmask16>((1u << left) - 1);
  };
  const uint32_t* ids = c.ids() + start;
  if (!c.lead || test == LeadTest::kNone) {
    // Every row to the columns (a tombstone dies in column 0).
    for (uint32_t q = 0; q < chunks; ++q) alive[q] = lanes(q);
  } else {
    // Both halves of a chunk's leads (eight int64 bounds a vector).
    const __m512i lower = _mm512_set1_epi64(value.value);
    const __m512i upper = _mm512_set1_epi64(value.upper);
    const __m512i dead = _mm512_set1_epi32(static_cast<int>(kDeadRow));
    const uint32_t* lo = c.lead_lo() + 2 * size_t{start};
    const uint32_t* hi = c.lead_hi() + 2 * size_t{start};
    for (uint32_t q = 0; q < chunks; ++q) {
      const __mmask16 in = lanes(q);
      __mmask16 keep = BoundsAvx512<true>(hi + 32 * q, in, upper);
      if (test == LeadTest::kBoth) {
        keep &= BoundsAvx512<false>(lo + 32 * q, in, lower);
        keep &= _mm512_mask_cmpneq_epi32_mask(
            in, _mm512_maskz_loadu_epi32(in, ids + 16 * q), dead);
      }
      alive[q] = keep;
    }
  }
  uint32_t any = 0;
  for (uint32_t q = 0; q < chunks; ++q) any |= alive[q];
  for (uint32_t k = 0; k < c.width && any != 0; ++k) {
    const uint32_t* col = c.column(k) + start;
    any = 0;
    for (uint32_t q = 0; q < chunks; ++q) {
      const __mmask16 in = alive[q];
      if (in == 0) continue;
      alive[q] = bits.HeldAvx512(_mm512_maskz_loadu_epi32(in, col + 16 * q),
                                 in, slots);
      any |= alive[q];
    }
  }
  if (any == 0) return;
  uint32_t live = 0;
  for (uint32_t q = 0; q < chunks; ++q) live += _mm_popcnt_u32(alive[q]);
  const size_t at = matches->size();
  matches->resize(at + live);
  SubscriptionId* out = matches->data() + at;
  const __m512i id_mask = _mm512_set1_epi32(static_cast<int>(kRowIdMask));
  for (uint32_t q = 0; q < chunks; ++q) {
    const __mmask16 in = alive[q];
    if (in == 0) continue;
    const __m512i id = _mm512_and_si512(
        _mm512_maskz_loadu_epi32(in, ids + 16 * q), id_mask);
    _mm512_mask_compressstoreu_epi32(out, in, id);
    out += _mm_popcnt_u32(in);
  }
}

template <bool kOpen, bool kRuns, bool kSelect>
void ClusterStore::MatchBlockForEvent(const Cluster& c, uint32_t start,
                                      uint32_t n, LeadTest test,
                                      LeadPoint value,
                                      const uint32_t* slots,
                                      const PredicateBits& bits,
                                      const PredicateBits* open,
                                      const EventPoint* points,
                                      uint32_t* alive,
                                      std::vector<SubscriptionId>* matches) {
  // An entry holds by its bit, or, with kOpen, an open entry by its open
  // bit too (cluster_entry.h; open entries are never negated).
  // kRuns: either vector may keep long runs (PredicateBits::has_runs).
  // kSelect: without a branch on the entry's kind.
  static_assert(!kSelect || (!kOpen && !kRuns));
  const auto held = [&](const PredicateBits& b, uint32_t e) {
    if constexpr (kRuns) return b.Holds(e, slots);
    if constexpr (kSelect) return b.HoldsBySelect(e, slots);
    return b.HoldsByBit(e, slots);
  };
  const auto holds = [&](uint32_t e) {
    if (!kOpen) return held(bits, e);
    return held(bits, e) |
           static_cast<uint32_t>(
               (e & (kOpenBit | kRangeEntryBit)) ==
                   (kOpenBit | kRangeEntryBit) &&
               held(*open, e) != 0);
  };
  const uint32_t* ids = c.ids();
  uint32_t live = 0;
  uint32_t k = 0;  // the first column not yet checked
  if (c.lead && test == LeadTest::kNone) {
    for (uint32_t j = 0; j < n; ++j) alive[j] = j;
    live = n;
  } else if (c.lead && test == LeadTest::kUpper) {
    const uint32_t* hi = c.lead_hi() + 2 * size_t{start};
    for (uint32_t j = 0; j < n; ++j) {
      alive[live] = j;
      live += value.upper <= LoadInt64(hi + 2 * j);
    }
  } else if (c.lead) {
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
  } else if (c.bounds > 0) {
    // Column 0 may be inline: checked below (a tombstone's is the false
    // predicate).
    for (uint32_t j = 0; j < n; ++j) alive[j] = j;
    live = n;
  } else {
    const uint32_t* col = c.column(0) + start;
    for (uint32_t j = 0; j < n; ++j) {
      alive[live] = j;
      live += holds(col[j]);
    }
    k = 1;
  }
  for (; k < c.bounds && live > 0; ++k) {
    // Inline ranges against the event's value of their attribute; the
    // other entries of such a column (a shorter row's) by their bits.
    const uint32_t* col = c.column(k) + start;
    const uint32_t* pairs = c.bound_pairs(k) + c.bound_words() * size_t{start};
    // An open range takes a number with a fraction's two tests the other
    // way round (cluster_entry.h); an absent value is not such a number
    // (EventPoints).
    const auto swapped = [](uint32_t e, const EventPoint& p) {
      return kOpen && (e & kInlineOpenBit) &&
             static_cast<uint64_t>(p.upper) - static_cast<uint64_t>(p.value) ==
                 1;
    };
    // Whether inline entry e holds, given whether the value lies within its
    // bounds: an NE's (kInlineNotBit) where it does not, and the event has
    // a value (EventPoints: only an absent one is {INT64_MIN, INT64_MAX};
    // a number with a fraction lies within no NE's bounds).
    const auto holds_inline = [](uint32_t e, const EventPoint& p,
                                 uint32_t within) -> uint32_t {
      if ((e & kInlineNotBit) == 0) return within;
      const uint32_t present = (p.value != INT64_MIN) | (p.upper != INT64_MAX);
      return present & (within ^ 1u);
    };
    uint32_t kept = 0;
    // One loop for either width of bounds: `value_of` gives an event's
    // (lower, upper) and `bounds_of` row j's (lo, hi), as int64 or int32.
    const auto check = [&](auto value_of, auto bounds_of) {
      for (uint32_t m = 0; m < live; ++m) {
        const uint32_t j = alive[m];
        const uint32_t e = col[j];
        alive[kept] = j;
        if (!IsInline(e)) {
          kept += holds(e);
          continue;
        }
        const EventPoint& p = points[InlineAttribute(e)];
        auto [lower, upper] = value_of(p);
        if (swapped(e, p)) std::swap(lower, upper);
        const auto [lo, hi] = bounds_of(j);
        kept += holds_inline(e, p, (lo <= lower) & (upper <= hi));
      }
    };
    if (c.wide) {
      check([](const EventPoint& p) { return std::pair(p.value, p.upper); },
            [pairs](uint32_t j) {
              return std::pair(LoadInt64(pairs + 4 * j),
                               LoadInt64(pairs + 4 * j + 2));
            });
    } else {
      check(
          [](const EventPoint& p) {
            return std::pair(p.narrow_value, p.narrow_upper);
          },
          [pairs](uint32_t j) {
            return std::pair(static_cast<int32_t>(pairs[2 * j]),
                             static_cast<int32_t>(pairs[2 * j + 1]));
          });
    }
    live = kept;
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
        if ((e & kRangeEntryBit) && !IsInline(e)) {
          __builtin_prefetch(slots + (e & kEntryIdMask));
        }
      }
    }
    for (uint32_t m = 0; m < live; ++m) {
      const uint32_t j = alive[m];
      alive[kept] = j;
      kept += holds(col[j]);
    }
    live = kept;
  }
  // Sized once, then written: a push_back a match was a call each (GCC 12
  // kept vector growth out of line), 3.5% of fabret-1m's cohort 1.
  if (live == 0) return;
  const size_t at = matches->size();
  matches->resize(at + live);
  SubscriptionId* out = matches->data() + at;
  for (uint32_t m = 0; m < live; ++m) {
    out[m] = ids[start + alive[m]] & kRowIdMask;
  }
}

size_t ClusterStore::MemoryBytes() const {
  size_t bytes = HugeBytes(clusters_.capacity() * sizeof(Cluster)) +
                 access_.capacity() * sizeof(PredicateId) +
                 free_.capacity() * sizeof(uint32_t) +
                 keys_scratch_.capacity() * sizeof(SortKey) +
                 order_scratch_.capacity() * sizeof(uint32_t) +
                 moved_scratch_.capacity() * sizeof(uint32_t);
  return bytes + arena_.MemoryBytes();
}

}  // namespace internal
}  // namespace matcher
}  // namespace cohort
