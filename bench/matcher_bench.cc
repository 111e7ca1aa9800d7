// matcher_bench: loads a workload's subscriptions into one matcher::Index and
// matches all its events in cohorts of --cohort_max on one thread; prints one
// JSON object (or a text block) per cohort size.
//
//   bazel run -c opt //bench:matcher_bench -- --preset=fabret-1m
//       --cohort_max=1,64 --repetitions=5 --format=json
//
// Several cohort sizes given as a list are measured in the same run against
// the same loaded index, interleaved repetition by repetition so that machine
// noise hits them alike; their ratios are therefore taken in one run.
// Latency of an event is the wall time of the MatchCohort call that carried
// it (matching only: no queueing, no RPC). `--cohort_max=event,...` also
// measures Index::MatchEvent, the per-event path, one event per call.
//
// A workload of JSON events (eventbridge-1m) is matched as the server
// matches it: each cohort of N events is one PublishRequest, flattened and
// encoded inside the timed pass (ValidatePublishAndFlatten and BuildEvents,
// what the front stage does per Publish) into its records, one or more per
// event, and those records are matched in one MatchCohort call (or a
// MatchEvent call each). Then, as with "or" subscriptions (a row per
// branch), an event's matches are its distinct subscriptions across its
// records and rows, counted the way the reply stage merges them. The
// flattening's share is reported as "flatten_us_per_event".

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "matcher/index.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/json_event.h"
#include "service/model/validation.h"
#include "workload/sha256.h"
#include "workload/typed_workload.h"
#include "workload/workload.h"

ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset to generate in memory (fabret-1m, fabret-10m, "
          "fabret-uniform, selective-1m, ranges-1m, events-1m, events-10m, "
          "eventbridge-1m: workload/presets.md); ignored when --workload is "
          "set.");
ABSL_FLAG(std::string, workload, "",
          "Read the workload from this file (cohort-workload v1 or v2 text) "
          "instead of generating --preset.");
ABSL_FLAG(int64_t, subscriptions, -1,
          "Override the preset's subscription count (-1: preset value).");
ABSL_FLAG(int64_t, events, -1,
          "Override the preset's event count (-1: preset value).");
ABSL_FLAG(std::string, cohort_max, "64",
          "Events per MatchCohort call; a comma-separated list measures each "
          "size in the same run (e.g. 1,64). 'event' measures "
          "Index::MatchEvent (the per-event path, one event per call) in the "
          "same way (e.g. event,1,64).");
ABSL_FLAG(std::string, keep, "cheaper",
          "How MatchCohort keeps each cohort: cheaper (the index's cost "
          "model chooses, as in production), per_event or masks (forced, to "
          "measure where the two cross).");
ABSL_FLAG(std::string, results, "counts",
          "What MatchCohort hands back per cohort: counts (its flat buffer "
          "of (id, event mask) pairs, read into each event's match count: "
          "the service's Publish without return_ids or listeners) or lists "
          "(each event's ids in a vector of its own: what return_ids and "
          "deliveries read).");
ABSL_FLAG(int64_t, load_batch, 1,
          "Subscriptions per Index::AddBatch call while loading: 1 adds them "
          "one by one with Index::Add (the path of single Subscribe calls), "
          "0 all in one AddBatch call (the path of a server's recovery), N "
          "in batches of N (batched Subscribe calls).");
ABSL_FLAG(int, load_repetitions, 1,
          "Loads of the subscriptions, each into a fresh index (the last "
          "is matched); the load time is reported as median, min and max "
          "over them.");
ABSL_FLAG(int, repetitions, 3,
          "Timed passes over all events per cohort size; events/s is reported "
          "as median, min and max over passes.");
ABSL_FLAG(std::string, format, "json", "Output format: json or text.");

namespace cohort {
namespace bench {

using workload::LoadOrGenerateAny;
using workload::Sha256Hex;
using workload::Workload;
using workload::WorkloadText;
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct Pass {
  double seconds = 0;
  uint64_t matches = 0;
};

struct Result {
  size_t cohort_max = 0;  // 0: Index::MatchEvent, one event per call
  std::vector<Pass> passes;
  double flatten_seconds = 0;  // JSON events: flattening and encoding
  std::vector<float> latency_us;  // one per event per pass
  uint64_t rows_checked = 0;
  uint64_t clusters_checked = 0;
  uint64_t lists_checked = 0;
  uint64_t events = 0;
};

absl::StatusOr<Workload> LoadWorkload() {
  return LoadOrGenerateAny(absl::GetFlag(FLAGS_workload),
                        absl::GetFlag(FLAGS_preset),
                        absl::GetFlag(FLAGS_subscriptions),
                        absl::GetFlag(FLAGS_events));
}

// Parses --cohort_max: positive sizes, and "event" as 0 (MatchEvent).
absl::StatusOr<std::vector<size_t>> ParseCohortSizes(const std::string& s) {
  std::vector<size_t> sizes;
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    size_t n;
    if (part == "event") {
      n = 0;
    } else if (!absl::SimpleAtoi(part, &n) || n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--cohort_max: '", part,
                       "' is neither a positive integer nor 'event'"));
    }
    sizes.push_back(n);
  }
  return sizes;
}

// The end of one call that matched the events counted in `counts`, begun at
// `t0`: its matches into *pass, its latency once per event into *result.
void Record(Clock::time_point t0, absl::Span<const uint64_t> counts,
            Pass* pass, Result* result) {
  const float us =
      std::chrono::duration<float, std::micro>(Clock::now() - t0).count();
  for (uint64_t count : counts) {
    pass->matches += count;
    result->latency_us.push_back(us);
  }
}

// The index's counters when a pass begins; AddTo() adds what the pass
// checked since to *result.
struct CounterMark {
  explicit CounterMark(const matcher::Index& index)
      : rows(index.counters().rows_checked),
        clusters(index.counters().clusters_checked),
        lists(index.counters().cluster_lists) {}
  void AddTo(const matcher::Index& index, Result* result) const {
    result->rows_checked += index.counters().rows_checked - rows;
    result->clusters_checked += index.counters().clusters_checked - clusters;
    result->lists_checked += index.counters().cluster_lists - lists;
  }
  uint64_t rows, clusters, lists;
};

// The matches of the events of one call, as distinct (event, subscription)
// pairs: `subscription_of_row` maps a matcher id to its subscription (null
// or empty: one row each). Count() adds each event's count to
// counts[event].
class MatchCounter {
 public:
  explicit MatchCounter(const std::vector<uint32_t>* subscription_of_row)
      : of_row_(subscription_of_row != nullptr && !subscription_of_row->empty()
                    ? subscription_of_row
                    : nullptr) {}
  void Add(uint32_t event, matcher::SubscriptionId id) {
    keys_.push_back(uint64_t{event} << 32 |
                    (of_row_ == nullptr ? id : (*of_row_)[id]));
  }
  void Count(uint64_t* counts) {
    std::sort(keys_.begin(), keys_.end());
    keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
    for (uint64_t key : keys_) ++counts[key >> 32];
    keys_.clear();
  }

 private:
  const std::vector<uint32_t>* of_row_;
  std::vector<uint64_t> keys_;
};

// What a pass's calls reuse.
struct MatchBuffers {
  matcher::MatchScratch scratch;  // MatchEvent's
  std::vector<std::vector<matcher::SubscriptionId>> out{1};
  matcher::CohortMatches pairs;
};

// Matches `records` in one call of the pass's path (a MatchEvent call each
// on the event path; else one MatchCohort, its results read as `lists` or
// as the flat buffer) and adds every match to *counter as (event_of(record
// index), id).
template <typename EventOf>
void MatchInto(matcher::Index& index,
               absl::Span<const matcher::EventView> records, bool event_path,
               bool lists, EventOf event_of, MatchBuffers* b,
               MatchCounter* counter) {
  if (event_path) {
    for (size_t r = 0; r < records.size(); ++r) {
      index.MatchEvent(records[r], &b->scratch, &b->out[0]);
      for (matcher::SubscriptionId id : b->out[0]) {
        counter->Add(event_of(r), id);
      }
    }
  } else if (lists) {
    index.MatchCohort(records, &b->out);
    for (size_t r = 0; r < records.size(); ++r) {
      for (matcher::SubscriptionId id : b->out[r]) {
        counter->Add(event_of(r), id);
      }
    }
  } else {
    index.MatchCohort(records, &b->pairs);
    b->pairs.ForEachMatch([&](size_t r, matcher::SubscriptionId id) {
      counter->Add(event_of(r), id);
    });
  }
}

// One timed pass over every event: MatchCohort calls of result->cohort_max
// events, or (cohort_max 0) a MatchEvent call per event. MatchEvent keeps no
// counters, so its rows and clusters checked stay 0.
// MatchCohort's results are read into counts (the flat buffer) or lists
// (--results).
// With `subscription_of_row` (a workload with a row per "or" branch), an
// event's matches are its distinct subscriptions (MatchCounter).
void RunPass(matcher::Index& index,
             const std::vector<matcher::EventView>& events, bool lists,
             const std::vector<uint32_t>* subscription_of_row,
             Result* result) {
  const bool event_path = result->cohort_max == 0;
  const size_t step = event_path ? 1 : result->cohort_max;
  MatchBuffers b;
  std::vector<uint64_t> counts(step);
  MatchCounter counter(subscription_of_row);
  const CounterMark mark(index);
  Pass pass;
  const Clock::time_point start = Clock::now();
  for (size_t at = 0; at < events.size(); at += step) {
    const size_t n = std::min(step, events.size() - at);
    const Clock::time_point t0 = Clock::now();
    const absl::Span<const matcher::EventView> cohort =
        absl::MakeConstSpan(events).subspan(at, n);
    if (subscription_of_row != nullptr) {
      MatchInto(index, cohort, event_path, lists,
                [](size_t r) { return static_cast<uint32_t>(r); }, &b,
                &counter);
      std::fill(counts.begin(), counts.begin() + n, 0);
      counter.Count(counts.data());
    } else if (event_path) {
      index.MatchEvent(events[at], &b.scratch, &b.out[0]);
      counts[0] = b.out[0].size();
    } else if (lists) {
      index.MatchCohort(cohort, &b.out);
      for (size_t i = 0; i < n; ++i) counts[i] = b.out[i].size();
    } else {
      index.MatchCohort(cohort, &b.pairs);
      b.pairs.CountPerEvent(counts.data());
    }
    Record(t0, absl::MakeConstSpan(counts).first(n), &pass, result);
  }
  pass.seconds = Seconds(Clock::now() - start);
  result->passes.push_back(pass);
  mark.AddTo(index, result);
  result->events += events.size();
}

// One timed pass over a JSON workload's events: `requests` are its events
// in cohorts of result->cohort_max (one each for MatchEvent), flattened
// and encoded in the pass, their records matched in one MatchCohort call
// (or a MatchEvent call each), their matches counted as distinct
// subscriptions per event.
// A request that does not flatten (Lower() took the same events, so only
// a bug gets here) ends the pass with its status.
absl::Status RunJsonPass(matcher::Index& index, const workload::Workload& w,
                         const std::vector<v1::PublishRequest>& requests,
                         bool lists, Result* result) {
  const workload::Lowering& lowering = *w.lowering;
  const bool event_path = result->cohort_max == 0;
  std::vector<service::JsonGroup> json;
  std::vector<std::vector<matcher::AttributeValue>> records;
  std::vector<uint32_t> event_of;
  std::vector<matcher::EventView> views;
  MatchBuffers b;
  MatchCounter counter(&w.subscription_of_row);
  std::vector<uint64_t> counts;
  const CounterMark mark(index);
  Pass pass;
  size_t events = 0;
  Clock::duration flatten{};
  const Clock::time_point start = Clock::now();
  for (const v1::PublishRequest& request : requests) {
    const Clock::time_point t0 = Clock::now();
    absl::Status status = service::ValidatePublishAndFlatten(
        request, lowering.limits, &json);
    if (status.ok()) {
      status = service::BuildEvents(request, json, lowering.attributes,
                                    lowering.limits, &records, &event_of);
    }
    if (!status.ok()) return status;
    flatten += Clock::now() - t0;
    views.assign(records.begin(), records.end());
    MatchInto(
        index, views, event_path, lists,
        [&event_of](size_t r) {
          return static_cast<uint32_t>(event_of.empty() ? r : event_of[r]);
        },
        &b, &counter);
    const size_t n = request.events_size();
    counts.assign(n, 0);
    counter.Count(counts.data());
    Record(t0, absl::MakeConstSpan(counts).first(n), &pass, result);
    events += n;
  }
  pass.seconds = Seconds(Clock::now() - start);
  result->passes.push_back(pass);
  result->flatten_seconds += Seconds(flatten);
  mark.AddTo(index, result);
  result->events += events;
  return absl::OkStatus();
}

// A JSON workload's events in PublishRequests of `size` events (the last
// may hold fewer).
std::vector<v1::PublishRequest> JsonCohorts(const workload::TypedWorkload& w,
                                            size_t size) {
  std::vector<v1::PublishRequest> requests;
  for (size_t at = 0; at < w.events.size(); at += size) {
    v1::PublishRequest& request = requests.emplace_back();
    for (size_t i = at; i < std::min(w.events.size(), at + size); ++i) {
      *request.add_events() = w.events[i];
    }
  }
  return requests;
}

double Percentile(std::vector<float>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

// The process's peak resident set so far (workload, index and scratch).
double PeakRssMb() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return usage.ru_maxrss / 1024.0;  // kilobytes on Linux
}

std::string MachineDescription() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown cpu";
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return absl::StrCat(model, ", ", std::thread::hardware_concurrency(),
                      " cpus");
}

struct Context {
  std::string workload_name;
  std::string sha256;
  size_t subscriptions = 0;
  size_t rows = 0;
  size_t events = 0;
  double load_s = 0;  // median over --load_repetitions
  double load_s_min = 0;
  double load_s_max = 0;
  int load_repetitions = 1;
  size_t load_batch = 1;  // subscriptions per AddBatch (1: one Add each)
  double bytes_per_subscription = 0;
  size_t predicates = 0;
  size_t clusters = 0;
  std::string machine;
  std::string keep;
  std::string results;  // --results
  bool json = false;     // JSON events, flattened in the timed pass
  double records_per_event = 1;
};

std::string Format(const Context& c, Result& r, const std::string& format) {
  std::vector<double> rates;
  uint64_t matches = 0;
  for (const Pass& p : r.passes) {
    rates.push_back(c.events / p.seconds);
    matches += p.matches;
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  const double p50 = Percentile(r.latency_us, 0.50);
  const double p99 = Percentile(r.latency_us, 0.99);
  const double per_event = static_cast<double>(matches) / r.events;
  const double rows = static_cast<double>(r.rows_checked) / r.events;
  const double clusters = static_cast<double>(r.clusters_checked) / r.events;
  const double lists = static_cast<double>(r.lists_checked) / r.events;
  const bool event_path = r.cohort_max == 0;
  const double flatten_us = r.flatten_seconds * 1e6 / r.events;
  if (format == "text") {
    return absl::StrFormat(
        "%-16s %10.0f events/s (min %.0f, max %.0f, %d passes)  "
        "p50 %.1f us  p99 %.1f us  %.1f matches/event%s%s\n",
        event_path ? std::string("MatchEvent")
                   : absl::StrCat("cohort_max ", r.cohort_max),
        median, rates.front(), rates.back(), rates.size(), p50, p99, per_event,
        event_path
            ? ""
            : absl::StrFormat(
                  "  %.0f rows in %.0f clusters of %.1f lists checked/event",
                  rows, clusters, lists),
        c.json ? absl::StrFormat("  %.2f us/event flattening JSON",
                                 flatten_us)
               : "");
  }
  // MatchEvent reports cohort_max 1 (one event per call) and no counters.
  return absl::StrFormat(
      "{\"workload\": \"%s\", \"workload_sha256\": \"%s\", "
      "\"subscriptions\": %d, \"rows\": %d, \"events\": %d, "
      "\"path\": \"%s\", "
      "\"keep\": \"%s\", \"results\": \"%s\", "
      "\"cohort_max\": %d, "
      "\"load_s\": %.3f, \"load_s_min\": %.3f, \"load_s_max\": %.3f, "
      "\"load_repetitions\": %d, \"load_batch\": %d, "
      "\"events_per_s\": %.0f, "
      "\"events_per_s_min\": %.0f, "
      "\"events_per_s_max\": %.0f, \"repetitions\": %d, \"p50_us\": %.2f, "
      "\"p99_us\": %.2f, \"matches_per_event\": %.3f, "
      "\"rows_checked_per_event\": %.1f, \"clusters_checked_per_event\": %.1f, "
      "\"lists_checked_per_event\": %.1f, "
      "\"bytes_per_subscription\": %.1f, \"peak_rss_mb\": %.1f, "
      "\"predicates\": %d, \"clusters\": %d, \"json_events\": %s, "
      "\"records_per_event\": %.3f, \"flatten_us_per_event\": %.3f, "
      "\"machine\": \"%s\"}\n",
      c.workload_name, c.sha256, c.subscriptions, c.rows, c.events,
      event_path ? "MatchEvent" : "MatchCohort", c.keep,
      event_path ? "lists" : c.results, event_path ? 1 : r.cohort_max,
      c.load_s, c.load_s_min, c.load_s_max, c.load_repetitions, c.load_batch,
      median, rates.front(), rates.back(),
      rates.size(), p50, p99, per_event, rows, clusters, lists,
      c.bytes_per_subscription, PeakRssMb(), c.predicates, c.clusters,
      c.json ? "true" : "false", c.records_per_event, flatten_us, c.machine);
}

int Main() {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "json" && format != "text") {
    std::cerr << "--format: must be json or text, got '" << format << "'\n";
    return 2;
  }
  absl::StatusOr<std::vector<size_t>> sizes =
      ParseCohortSizes(absl::GetFlag(FLAGS_cohort_max));
  const int repetitions = absl::GetFlag(FLAGS_repetitions);
  if (!sizes.ok() || repetitions < 1) {
    std::cerr << (sizes.ok() ? "--repetitions: must be >= 1"
                             : std::string(sizes.status().message()))
              << "\n";
    return 2;
  }
  const std::string keep = absl::GetFlag(FLAGS_keep);
  if (keep != "cheaper" && keep != "per_event" && keep != "masks") {
    std::cerr << "--keep: must be cheaper, per_event or masks, got '" << keep
              << "'\n";
    return 2;
  }
  const std::string results = absl::GetFlag(FLAGS_results);
  if (results != "counts" && results != "lists") {
    std::cerr << "--results: must be counts or lists, got '" << results
              << "'\n";
    return 2;
  }
  absl::StatusOr<Workload> workload = LoadWorkload();
  if (!workload.ok()) {
    std::cerr << "workload: " << workload.status().message() << "\n";
    return 2;
  }
  Context c;
  c.workload_name = absl::GetFlag(FLAGS_workload).empty()
                        ? workload->options.preset
                        : absl::GetFlag(FLAGS_workload);
  c.sha256 = Sha256Hex(WorkloadText(*workload));
  c.subscriptions = workload::SubscriptionCount(*workload);
  // One per subscription, or per "or" branch (Workload::
  // subscription_of_row).
  c.rows = workload->subscriptions.size();
  c.events = workload::EventCount(*workload);
  c.json = workload->lowering != nullptr &&
           std::any_of(workload->typed->events.begin(),
                       workload->typed->events.end(),
                       [](const v1::Event& e) { return !e.json().empty(); });
  c.records_per_event =
      static_cast<double>(workload->events.size()) /
      std::max<size_t>(1, c.events);
  c.machine = MachineDescription();
  c.keep = keep;
  c.results = results;

  using matcher::internal::CohortKeep;
  const CohortKeep cohort_keep = keep == "per_event" ? CohortKeep::kPerEvent
                                 : keep == "masks"   ? CohortKeep::kMasks
                                                     : CohortKeep::kCheaper;
  const size_t total = workload->subscriptions.size();
  const size_t load_batch = absl::GetFlag(FLAGS_load_batch) <= 0
                                ? std::max<size_t>(1, total)
                                : absl::GetFlag(FLAGS_load_batch);
  // Loads every subscription into `index`; false (after a message) if one
  // fails.
  auto load = [&](matcher::Index& index) {
    std::vector<matcher::Index::NewSubscription> batch;
    for (size_t first = 0; first < total; first += load_batch) {
      const size_t n = std::min(load_batch, total - first);
      std::vector<absl::Status> statuses;
      if (load_batch == 1) {
        statuses.push_back(index.Add(first, workload->subscriptions[first]));
      } else {
        batch.clear();
        for (size_t i = first; i < first + n; ++i) {
          batch.push_back({static_cast<matcher::SubscriptionId>(i),
                           workload->subscriptions[i]});
        }
        statuses = index.AddBatch(batch);
      }
      for (size_t i = 0; i < n; ++i) {
        if (!statuses[i].ok()) {
          std::cerr << "subscription " << first + i << ": "
                    << statuses[i].message() << "\n";
          return false;
        }
      }
    }
    return true;
  };
  const int load_repetitions = absl::GetFlag(FLAGS_load_repetitions);
  if (load_repetitions < 1) {
    std::cerr << "--load_repetitions: must be >= 1\n";
    return 2;
  }
  std::unique_ptr<matcher::Index> loaded;
  std::vector<double> load_seconds;
  for (int rep = 0; rep < load_repetitions; ++rep) {
    loaded.reset();  // the previous index's memory back first
    loaded = std::make_unique<matcher::Index>();
    loaded->set_cohort_keep(cohort_keep);
    const Clock::time_point load_start = Clock::now();
    if (!load(*loaded)) return 1;
    load_seconds.push_back(Seconds(Clock::now() - load_start));
  }
  matcher::Index& index = *loaded;
  std::sort(load_seconds.begin(), load_seconds.end());
  c.load_s = load_seconds[load_seconds.size() / 2];
  c.load_s_min = load_seconds.front();
  c.load_s_max = load_seconds.back();
  c.load_repetitions = load_repetitions;
  c.load_batch = load_batch;
  c.bytes_per_subscription = static_cast<double>(index.MemoryBytes()) /
                             std::max<size_t>(1, c.subscriptions);
  c.predicates = index.predicates();
  c.clusters = index.clusters();

  std::vector<matcher::EventView> events(workload->events.begin(),
                                         workload->events.end());
  std::vector<Result> runs(sizes->size());
  for (size_t i = 0; i < sizes->size(); ++i) runs[i].cohort_max = (*sizes)[i];
  // JSON events: each cohort size's requests, built before timing.
  std::map<size_t, std::vector<v1::PublishRequest>> requests;
  if (c.json) {
    for (size_t size : *sizes) {
      const size_t step = std::max<size_t>(1, size);
      if (requests.count(step) == 0) {
        requests[step] = JsonCohorts(*workload->typed, step);
      }
    }
  }
  // Without JSON events, a workload with several rows per subscription is
  // counted the same way.
  const std::vector<uint32_t>* subscription_of_row =
      workload->subscription_of_row.empty() ? nullptr
                                            : &workload->subscription_of_row;
  for (int rep = 0; rep < repetitions; ++rep) {
    for (Result& r : runs) {
      if (c.json) {
        const absl::Status status =
            RunJsonPass(index, *workload,
                        requests[std::max<size_t>(1, r.cohort_max)],
                        results == "lists", &r);
        if (!status.ok()) {
          std::cerr << "events: " << status.message() << "\n";
          return 1;
        }
      } else {
        RunPass(index, events, results == "lists", subscription_of_row, &r);
      }
    }
  }
  if (format == "text") {
    std::cout << absl::StrFormat(
        "workload %s (sha256 %s)\n%d subscriptions (%d rows) loaded in "
        "%.2f s%s (batches of %d), %.1f bytes/subscription, %d predicates, %d "
        "clusters\n%d events%s, one thread, %s; MatchCohort results read as "
        "%s\n",
        c.workload_name, c.sha256, c.subscriptions, c.rows, c.load_s,
        c.load_repetitions > 1
            ? absl::StrFormat(" (median of %d, min %.2f, max %.2f)",
                              c.load_repetitions, c.load_s_min, c.load_s_max)
            : std::string(),
        c.load_batch,
        c.bytes_per_subscription, c.predicates, c.clusters, c.events,
        c.json ? absl::StrFormat(" (JSON, %.2f records each)",
                                 c.records_per_event)
               : "",
        c.machine, c.results);
  }
  for (Result& r : runs) std::cout << Format(c, r, format);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Matches a workload's events against its subscriptions on one thread "
      "and reports throughput, latency and memory.\n"
      "  matcher_bench --preset=fabret-1m --cohort_max=1,64 --format=json");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Main();
}
