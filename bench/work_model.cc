#include "bench/work_model.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace cohort {
namespace bench {
namespace {

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

}  // namespace

const char* Phase1SplitName(Phase1Split split) {
  switch (split) {
    case Phase1Split::kTasks:
      return "tasks";
    case Phase1Split::kCohorts:
      return "cohorts";
    case Phase1Split::kAttributes:
      return "attributes";
  }
  return "?";
}

bool ParsePhase1Split(const std::string& name, Phase1Split* split) {
  for (Phase1Split s : kPhase1Splits) {
    if (name == Phase1SplitName(s)) {
      *split = s;
      return true;
    }
  }
  return false;
}

double SharedLayoutWork::SlowestCore(Phase1Split split) const {
  const std::vector<double>& cores = Cores(split);
  return cores.empty() ? 0 : *std::max_element(cores.begin(), cores.end());
}

bool CoreShare::RunsTask(uint64_t cohort, matcher::AttributeId attribute,
                         uint32_t part) const {
  switch (split) {
    case Phase1Split::kTasks:
      return part == core;
    case Phase1Split::kCohorts:
      return cohort % partitions == core;
    case Phase1Split::kAttributes:
      return attribute < attribute_core.size() &&
             attribute_core[attribute] == core;
  }
  return false;
}

std::vector<uint32_t> AttributeCores(
    const std::vector<double>& attribute_seconds, uint32_t partitions) {
  std::vector<uint32_t> order(attribute_seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return attribute_seconds[a] > attribute_seconds[b];
  });
  std::vector<double> load(partitions, 0);
  std::vector<uint32_t> core(attribute_seconds.size(), 0);
  for (uint32_t a : order) {
    const uint32_t least = static_cast<uint32_t>(
        std::min_element(load.begin(), load.end()) - load.begin());
    core[a] = least;
    load[least] += attribute_seconds[a];
  }
  return core;
}

SharedLayoutWork TimeSharedLayout(const matcher::PartitionedIndex& index,
                                  absl::Span<const matcher::EventView> events,
                                  size_t cohort_max,
                                  const matcher::PartitionedIndex* baseline,
                                  uint64_t batch_positions,
                                  double steal_after_seconds,
                                  uint32_t units) {
  const uint32_t p_count = index.partitions();
  const size_t chunk = std::min(cohort_max, matcher::internal::kMaxCohortChunk);
  SharedLayoutWork w;
  w.partitions = p_count;
  struct TaskTime {
    uint64_t cohort;
    uint32_t part;
    matcher::AttributeId attribute;
    double seconds;
  };
  std::vector<TaskTime> task_times;
  std::vector<double> begin_times;
  std::vector<double> partition_times(p_count, 0);
  w.stealing_seconds.assign(p_count, 0);
  std::vector<double>& stealing = w.stealing_seconds;
  w.phase2_stealing_seconds.assign(p_count, 0);
  std::vector<double>& both = w.phase2_stealing_seconds;
  w.units = units;
  if (units > 1) w.phase2_units_seconds.assign(p_count, 0);
  std::vector<double>& by_units = w.phase2_units_seconds;
  auto least_of = [](const std::vector<double>& load) {
    return std::min_element(load.begin(), load.end()) - load.begin();
  };
  // A piece of phase 1: to the least-loaded core, in both schedules.
  auto place = [&](double seconds) {
    stealing[least_of(stealing)] += seconds;
    both[least_of(both)] += seconds;
    if (units > 1) by_units[least_of(by_units)] += seconds;
  };
  // Phase-2 stealing: a piece of partition p's share to its own core, or
  // to the least-loaded one if p's core is too far behind it.
  auto steal = [&](std::vector<double>& load, uint32_t p, double seconds) {
    const auto thief = least_of(load);
    if (load[p] - load[thief] > steal_after_seconds) {
      load[thief] += seconds;
      return true;
    }
    load[p] += seconds;
    return false;
  };
  w.partition_matches.assign(p_count, 0);
  w.partition_rows.assign(p_count, 0);
  w.partition_clusters.assign(p_count, 0);
  matcher::internal::CohortMasks masks, baseline_masks;
  std::vector<uint32_t> batch_bounds;
  // A partition's matches, read into per-event counts as the service's
  // partition stage does for a Publish without ids or listeners
  // (FillPartials); timed with the partition.
  matcher::CohortMatches out;
  std::vector<uint64_t> counts(chunk);
  // With `units` > 1, unit `unit` of p's share (MatchPartitionUnit).
  auto match = [&](const matcher::PartitionedIndex& in, uint32_t p,
                   const matcher::internal::CohortMasks& m, size_t events,
                   matcher::IndexCounters* counters, uint32_t unit = 0,
                   uint32_t units = 1) {
    out.Reset(events);
    out.BeginChunk(0);
    in.MatchPartitionUnit(p, unit, units, m, &out, counters);
    out.CountPerEvent(counts.data());
  };
  matcher::IndexCounters baseline_counters;
  matcher::IndexCounters unit_counters;  // the units' (not w.counters)
  // The whole cohort on the baseline, timed as one piece.
  auto time_baseline = [&](absl::Span<const matcher::EventView> cohort) {
    const auto start = std::chrono::steady_clock::now();
    baseline->BeginCohort(cohort, &baseline_masks);
    for (size_t t = 0; t < baseline_masks.tasks(); ++t) {
      baseline->RunTask(t, &baseline_masks);
    }
    match(*baseline, 0, baseline_masks, cohort.size(), &baseline_counters);
    w.baseline_seconds += Since(start);
    for (size_t i = 0; i < cohort.size(); ++i) {
      w.baseline_matches += counts[i];
    }
  };
  for (size_t at = 0; at < events.size(); at += chunk) {
    const auto cohort = events.subspan(at, chunk);
    const uint64_t k = w.cohorts++;
    if (baseline != nullptr && k % 2 == 0) time_baseline(cohort);
    auto start = std::chrono::steady_clock::now();
    index.BeginCohort(cohort, &masks);
    begin_times.push_back(Since(start));
    place(begin_times.back());
    masks.BatchTasks(batch_positions, &batch_bounds);
    for (size_t b = 0; b + 1 < batch_bounds.size(); ++b) {
      const uint32_t first = batch_bounds[b], end = batch_bounds[b + 1];
      const uint32_t part = masks.batch_part(first, end, p_count);
      double batch_seconds = 0;
      for (uint32_t t = first; t < end; ++t) {
        start = std::chrono::steady_clock::now();
        index.RunTask(t, &masks);
        task_times.push_back({k, part, masks.task_attribute(t), Since(start)});
        batch_seconds += task_times.back().seconds;
      }
      place(batch_seconds);
    }
    // Partitions in a rotating order, so none always runs first after
    // phase 1 (with its masks freshest in the cache).
    auto whole_shares = [&] {
      for (uint32_t q = 0; q < p_count; ++q) {
        const uint32_t p = static_cast<uint32_t>((q + k) % p_count);
        const uint64_t rows_before = w.counters.rows_checked;
        const uint64_t clusters_before = w.counters.clusters_checked;
        start = std::chrono::steady_clock::now();
        match(index, p, masks, cohort.size(), &w.counters);
        const double seconds = Since(start);
        partition_times[p] += seconds;
        stealing[p] += seconds;
        if (steal(both, p, seconds)) ++w.stolen_shares;
        w.partition_rows[p] += w.counters.rows_checked - rows_before;
        w.partition_clusters[p] +=
            w.counters.clusters_checked - clusters_before;
        for (size_t i = 0; i < cohort.size(); ++i) {
          w.partition_matches[p] += counts[i];
          w.matches += counts[i];
        }
      }
    };
    // Every share again in steal units, each timed on its own.
    auto unit_shares = [&] {
      for (uint32_t q = 0; q < p_count; ++q) {
        const uint32_t p = static_cast<uint32_t>((q + k) % p_count);
        for (uint32_t u = 0; u < units; ++u) {
          start = std::chrono::steady_clock::now();
          match(index, p, masks, cohort.size(), &unit_counters, u, units);
          const double unit_seconds = Since(start);
          w.phase2_unit_seconds += unit_seconds;
          if (steal(by_units, p, unit_seconds)) ++w.stolen_units;
          for (size_t i = 0; i < cohort.size(); ++i) {
            w.unit_matches += counts[i];
          }
        }
      }
    };
    // With units, the two passes take turns going first: the second
    // finds clusters the first left in the cache.
    if (units > 1 && k % 2 == 1) unit_shares();
    whole_shares();
    if (units > 1 && k % 2 == 0) unit_shares();
    w.events += cohort.size();
    if (baseline != nullptr && k % 2 == 1) time_baseline(cohort);
  }
  std::vector<double> attribute_seconds;
  for (const TaskTime& t : task_times) {
    if (t.attribute >= attribute_seconds.size()) {
      attribute_seconds.resize(t.attribute + 1, 0);
    }
    attribute_seconds[t.attribute] += t.seconds;
    w.task_seconds += t.seconds;
  }
  for (double s : begin_times) w.begin_seconds += s;
  for (double s : partition_times) w.phase2_seconds += s;
  w.partition_seconds = partition_times;
  w.tasks = task_times.size();
  for (Phase1Split split : kPhase1Splits) {
    std::vector<double>& cores = w.core_seconds[static_cast<int>(split)];
    cores = partition_times;
    for (uint32_t c = 0; c < p_count; ++c) {
      CoreShare share{p_count, c, split, {}};
      if (split == Phase1Split::kAttributes) {
        share.attribute_core = AttributeCores(attribute_seconds, p_count);
      }
      for (uint64_t k = 0; k < begin_times.size(); ++k) {
        if (share.Begins(k)) cores[c] += begin_times[k];
      }
      for (const TaskTime& t : task_times) {
        if (share.RunsTask(t.cohort, t.attribute, t.part)) {
          cores[c] += t.seconds;
        }
      }
    }
  }
  return w;
}

}  // namespace bench
}  // namespace cohort
