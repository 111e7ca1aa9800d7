// Microbenchmarks of the Fabret index on a scaled-down fabret-1m workload
// (100k subscriptions, the preset's distributions): phase 1 alone, phase 2
// alone, whole cohorts of several sizes, the per-event MatchEvent path, and
// add/remove.
//
//   bazel run -c opt //matcher:index_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Per-event figures are reported as items/s (items = events) so cohort sizes
// compare directly. End-to-end figures on the full workload come from
// //bench:matcher_bench.
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "matcher/index.h"
#include "workload/workload.h"

namespace cohort {
namespace matcher {
namespace {

// Google Benchmark's timing loop, `for (auto _ : state)`, never reads its
// variable; the analyzer calls that a dead store.
// NOLINTBEGIN(clang-analyzer-deadcode.DeadStores)

// 100k subscriptions: big enough that clusters fall out of L2 like the full
// workload's, small enough that setup takes well under a second.
constexpr int64_t kSubscriptions = 100000;
constexpr int64_t kEvents = 4096;

struct Fixture {
  workload::Workload workload;
  std::vector<EventView> events;
  Index index;
};

Fixture& Shared() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    workload::WorkloadOptions options = *workload::PresetOptions("fabret-1m");
    options.subscriptions = kSubscriptions;
    options.events = kEvents;
    f->workload = workload::Generate(options);
    for (const auto& e : f->workload.events) f->events.emplace_back(e);
    for (size_t i = 0; i < f->workload.subscriptions.size(); ++i) {
      if (!f->index.Add(i, f->workload.subscriptions[i]).ok()) std::abort();
    }
    return f;
  }();
  return *fixture;
}

void BM_MatchCohort(benchmark::State& state) {
  Fixture& f = Shared();
  const size_t cohort = state.range(0);
  std::vector<std::vector<SubscriptionId>> out;
  size_t next = 0;
  for (auto _ : state) {
    if (next + cohort > f.events.size()) next = 0;
    f.index.MatchCohort(absl::MakeConstSpan(f.events).subspan(next, cohort),
                        &out);
    next += cohort;
  }
  state.SetItemsProcessed(state.iterations() * cohort);
}
BENCHMARK(BM_MatchCohort)->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Arg(256);

// The classic per-event path (predicate bit vector, const Index), to compare
// with MatchCohort/1: same events, one at a time.
void BM_MatchEvent(benchmark::State& state) {
  Fixture& f = Shared();
  MatchScratch scratch;
  std::vector<SubscriptionId> out;
  size_t next = 0;
  for (auto _ : state) {
    if (next == f.events.size()) next = 0;
    f.index.MatchEvent(f.events[next++], &scratch, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchEvent);

// Phase 1: computing cohort masks for `cohort` events (BeginCohort and
// every task, as MatchCohort does: one walk per range group for the cohort).
void BM_Phase1(benchmark::State& state) {
  Fixture& f = Shared();
  const size_t cohort = state.range(0);
  const internal::PredicateTable& table = f.index.table_for_benchmark();
  internal::CohortMasks masks;
  size_t next = 0;
  for (auto _ : state) {
    if (next + cohort > f.events.size()) next = 0;
    table.ComputeCohort(absl::MakeConstSpan(f.events).subspan(next, cohort),
                        &masks, [&f](internal::PredicateId id) {
                          return f.index.RowsUnder(id);
                        });
    next += cohort;
  }
  state.SetItemsProcessed(state.iterations() * cohort);
}
BENCHMARK(BM_Phase1)->Arg(1)->Arg(4)->Arg(16)->Arg(64);

// Phase 1 of the per-event path (MarkSatisfied into a predicate bit
// vector), per event, for the ratio with BM_Phase1 in one run.
void BM_Phase1PerEvent(benchmark::State& state) {
  Fixture& f = Shared();
  const internal::PredicateTable& table = f.index.table_for_benchmark();
  internal::PredicateBits bits, open;
  std::vector<internal::AccessHit> access;
  size_t next = 0;
  for (auto _ : state) {
    if (next == f.events.size()) next = 0;
    bits.Resize(table.id_limit(), table.slot_limit());
    access.clear();
    table.MarkSatisfied(f.events[next++], &bits, &access, &open);
    bits.Clear();
    open.Clear();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Phase1PerEvent);

// Phase 2: checking the touched clusters for one cohort whose masks phase 1
// computed once, outside the timed loop.
void BM_Phase2(benchmark::State& state) {
  Fixture& f = Shared();
  const size_t cohort = state.range(0);
  internal::CohortMasks masks;
  f.index.table_for_benchmark().ComputeCohort(
      absl::MakeConstSpan(f.events).subspan(0, cohort), &masks,
      [&f](internal::PredicateId id) { return f.index.RowsUnder(id); });
  size_t emitted = 0;
  auto emit = [&](SubscriptionId, uint64_t mask) {
    emitted += __builtin_popcountll(mask);
  };
  for (auto _ : state) f.index.MatchMasksForBenchmark(masks, emit);
  benchmark::DoNotOptimize(emitted);
  state.SetItemsProcessed(state.iterations() * cohort);
}
BENCHMARK(BM_Phase2)->Arg(1)->Arg(64);

// Add then remove one subscription of the workload, on the loaded index
// (ids above the loaded range so they never collide).
void BM_AddRemove(benchmark::State& state) {
  Fixture& f = Shared();
  size_t next = 0;
  for (auto _ : state) {
    const auto& s = f.workload.subscriptions[next % kSubscriptions];
    const SubscriptionId id = kSubscriptions + (next % 1024);
    if (!f.index.Add(id, s).ok() || !f.index.Remove(id).ok()) std::abort();
    ++next;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddRemove);

// Bulk load of the whole 100k-subscription workload into an empty index.
void BM_Load(benchmark::State& state) {
  Fixture& f = Shared();
  for (auto _ : state) {
    auto index = std::make_unique<Index>();
    for (size_t i = 0; i < f.workload.subscriptions.size(); ++i) {
      if (!index->Add(i, f.workload.subscriptions[i]).ok()) std::abort();
    }
    benchmark::DoNotOptimize(index->size());
  }
  state.SetItemsProcessed(state.iterations() * kSubscriptions);
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond);

// NOLINTEND(clang-analyzer-deadcode.DeadStores)

}  // namespace
}  // namespace matcher
}  // namespace cohort
