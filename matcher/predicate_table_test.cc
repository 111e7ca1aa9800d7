// Tests of phase 1: the cohort walk (PredicateTable::AddCohort) must set
// exactly the masks that ORing each event's runs (AddEvent) sets, on tables
// with sorted parts, unsorted tails, removed positions and int64 extremes,
// for every cohort size up to a chunk; and masks must be clear after
// EndCohort. Index-level differential tests (index_test) cover phase 2.
#include "matcher/predicate_table.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "matcher/index_test_util.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace internal {
namespace {

using test_util::Event;
using test_util::FormatEvent;
using test_util::RandomEvent;
using test_util::RandomValue;
using test_util::Rng;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

NormalPredicate RandomNormal(Rng& rng, uint32_t attributes, int64_t domain) {
  const AttributeId a = static_cast<AttributeId>(rng.Uniform(attributes));
  const int64_t v = RandomValue(rng, domain);
  switch (rng.Uniform(5)) {
    case 0:
      return FromInterval(a, v, v);
    case 1:
      return FromInterval(a, kMin, v);
    case 2:
      return FromInterval(a, v, kMax);
    case 3:
      return FromInterval(a, kMin, kMax);  // "present"
    default:
      return FromInterval(a, v, RandomValue(rng, domain));
  }
}

// The masks of ids [0, limit) as one vector.
std::vector<uint64_t> Masks(const PredicateTable& table) {
  std::vector<uint64_t> out;
  for (size_t id = 0; id < table.id_limit(); ++id) {
    out.push_back(*table.mask_pointers()[id]);
  }
  return out;
}

// One seed: grow a table by random acquires and releases (so groups have
// sorted parts, tails and tombstones), and after each step compare the two
// ways of computing one random cohort's masks.
void RunSeed(uint64_t seed, uint64_t* compared) {
  Rng rng(seed);
  const uint32_t attributes = 1 + rng.Uniform(6);
  const int64_t domain = 1 + rng.Uniform(rng.Chance(50) ? 12 : 2000);
  PredicateTable table;
  std::vector<PredicateId> held;
  for (int step = 0; step < 60; ++step) {
    for (int i = 0, n = rng.Uniform(80); i < n; ++i) {
      held.push_back(table.Acquire(RandomNormal(rng, attributes, domain)));
    }
    for (int i = 0, n = rng.Uniform(held.size() / 3 + 1); i < n; ++i) {
      const size_t at = rng.Uniform(held.size());
      table.Release(held[at]);
      held[at] = held.back();
      held.pop_back();
    }
    const size_t k = 1 + rng.Uniform(kMaxCohortChunk);
    std::vector<Event> events(k);
    for (Event& e : events) e = RandomEvent(rng, attributes + 1, domain);
    std::vector<EventView> views(events.begin(), events.end());

    for (size_t i = 0; i < k; ++i) table.AddEvent(views[i], uint64_t{1} << i);
    const std::vector<uint64_t> want = Masks(table);
    table.EndCohort();
    ASSERT_EQ(Masks(table), std::vector<uint64_t>(want.size(), 0))
        << "seed " << seed << " step " << step << ": AddEvent left masks set";

    table.AddCohort(views);
    const std::vector<uint64_t> got = Masks(table);
    table.EndCohort();
    ASSERT_EQ(Masks(table), std::vector<uint64_t>(want.size(), 0))
        << "seed " << seed << " step " << step << ": AddCohort left masks set";
    for (size_t id = 0; id < want.size(); ++id) {
      ASSERT_EQ(got[id], want[id])
          << "seed " << seed << " step " << step << " cohort of " << k
          << ": predicate " << id << " (kind "
          << static_cast<int>(table.Get(id).kind) << ", attribute "
          << table.Get(id).attribute << ", [" << table.Get(id).lo << ", "
          << table.Get(id).hi << "]), first event " << FormatEvent(events[0]);
    }
    *compared += want.size();
  }
}

TEST(PredicateTableCohort, CohortWalkSetsTheMasksOfPerEventRuns) {
  uint64_t compared = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    RunSeed(seed, &compared);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(compared, 100000u);
}

// Ties, duplicates and the extremes: every event carrying the same value,
// values equal to bounds, and INT64_MIN/MAX against "present".
TEST(PredicateTableCohort, EqualValuesAndExtremes) {
  PredicateTable table;
  const PredicateId le5 = table.Acquire(FromInterval(0, kMin, 5));
  const PredicateId ge5 = table.Acquire(FromInterval(0, 5, kMax));
  const PredicateId present = table.Acquire(FromInterval(0, kMin, kMax));
  const PredicateId ge_max = table.Acquire(FromInterval(0, kMax, kMax));
  const PredicateId le_min = table.Acquire(FromInterval(0, kMin, kMin));
  const std::vector<Event> events = {
      {{0, 5}}, {{0, 5}}, {{0, kMin}}, {{0, kMax}}, {{1, 5}}};
  std::vector<EventView> views(events.begin(), events.end());
  table.AddCohort(views);
  const uint64_t* const* m = table.mask_pointers();
  EXPECT_EQ(*m[le5], 0b00111u);
  EXPECT_EQ(*m[ge5], 0b01011u);
  EXPECT_EQ(*m[present], 0b01111u);
  EXPECT_EQ(*m[ge_max], 0b01000u);  // kEq at INT64_MAX
  EXPECT_EQ(*m[le_min], 0b00100u);  // kEq at INT64_MIN
  table.EndCohort();
  EXPECT_EQ(*m[le5] | *m[ge5] | *m[present], 0u);
}

}  // namespace
}  // namespace internal
}  // namespace matcher
}  // namespace cohort
