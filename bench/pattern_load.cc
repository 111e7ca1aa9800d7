// pattern_load: how long Cohort takes to load Event Ruler patterns, one
// thread, the whole way: each line of --rules (one JSON pattern a line)
// parsed and lowered into a cohort.v1 spec (filter::ParsePatternSpec, as
// ParseFilter does; "$or" and lists of several kinds become any_of),
// validated and lowered into the matcher's predicates as Subscribe does
// (workload::Lower: ValidateSubscribe, BuildSubscriptions, a request per
// 1,000), and added to a matcher::Index in one AddBatch (a
// server's recovery path). bench/eventruler.sh sets it beside Event
// Ruler's addRule loop on the same file.
//
//   pattern_load --rules=FILE [--repetitions=N]
//                [--events=FILE --workload_out=FILE]
//
// Prints one JSON line: the pattern count, and for each part and the total
// the median seconds over the repetitions (with min and max of the
// total). A pattern that does not lower stops it (exit 1), naming its line.
// With --events (one event a line in the CLI's grammar, filter/parse.h)
// and --workload_out, also writes the patterns' predicates and those
// events as a typed workload file (workload/typed_workload.h) for
// matcher_bench.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "matcher/index.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "workload/typed_workload.h"
#include "workload/workload.h"

ABSL_FLAG(std::string, rules, "", "One Event Ruler pattern (JSON) a line.");
ABSL_FLAG(int, repetitions, 3, "Loads timed; the median is reported.");
ABSL_FLAG(std::string, events, "",
          "With --workload_out: events, one a line in the CLI's grammar.");
ABSL_FLAG(std::string, workload_out, "",
          "Writes the patterns and --events as a typed workload file.");

namespace cohort {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

struct Times {
  double parse = 0;
  double lower = 0;
  double index = 0;
  double Total() const { return parse + lower + index; }
};

// The patterns of `lines` as a typed workload's subscriptions.
absl::StatusOr<workload::TypedWorkload> ParseAll(
    const std::vector<std::string>& lines) {
  workload::TypedWorkload typed;
  typed.options.preset = "eventruler";
  typed.subscriptions.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<v1::SubscriptionSpec> spec =
        filter::ParsePatternSpec(lines[i]);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", i + 1, ": ", spec.status().message()));
    }
    spec->set_subscriber(absl::StrCat("s", i % 1000));
    typed.subscriptions.push_back(*std::move(spec));
  }
  typed.options.subscriptions = static_cast<int64_t>(lines.size());
  typed.options.events = 0;
  return typed;
}

absl::StatusOr<Times> LoadOnce(const std::vector<std::string>& lines,
                               size_t* loaded) {
  Times t;
  Clock::time_point start = Clock::now();
  absl::StatusOr<workload::TypedWorkload> typed = ParseAll(lines);
  if (!typed.ok()) return typed.status();
  Clock::time_point now = Clock::now();
  t.parse = Seconds(now - start);
  start = now;
  absl::StatusOr<workload::Workload> lowered =
      workload::Lower(*std::move(typed));
  if (!lowered.ok()) return lowered.status();
  now = Clock::now();
  t.lower = Seconds(now - start);
  start = now;
  matcher::Index index;
  std::vector<matcher::Index::NewSubscription> batch;
  batch.reserve(lowered->subscriptions.size());
  for (size_t i = 0; i < lowered->subscriptions.size(); ++i) {
    batch.push_back({static_cast<matcher::SubscriptionId>(i),
                     lowered->subscriptions[i]});
  }
  const std::vector<absl::Status> statuses = index.AddBatch(batch);
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!statuses[i].ok()) {
      // A row is a pattern's, or a branch of an "or" pattern's.
      const size_t line = lowered->subscription_of_row.empty()
                              ? i
                              : lowered->subscription_of_row[i];
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line + 1, ": ", statuses[i].message()));
    }
  }
  t.index = Seconds(Clock::now() - start);
  *loaded = workload::SubscriptionCount(*lowered);
  return t;
}

// The patterns and --events as a typed workload file at --workload_out.
absl::Status WriteWorkload(const std::vector<std::string>& lines) {
  absl::StatusOr<workload::TypedWorkload> typed = ParseAll(lines);
  if (!typed.ok()) return typed.status();
  std::ifstream in(absl::GetFlag(FLAGS_events));
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read --events=", absl::GetFlag(FLAGS_events)));
  }
  int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    absl::StatusOr<std::vector<v1::Attribute>> attributes =
        filter::ParseEvent(line);
    if (!attributes.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--events line ", number, ": ", attributes.status().message()));
    }
    v1::Event& event = typed->events.emplace_back();
    for (v1::Attribute& a : *attributes) *event.add_attributes() = std::move(a);
  }
  typed->options.events = static_cast<int64_t>(typed->events.size());
  std::ofstream out(absl::GetFlag(FLAGS_workload_out));
  out << workload::TypedWorkloadText(*typed);
  if (!out) {
    return absl::InternalError(absl::StrCat(
        "cannot write --workload_out=", absl::GetFlag(FLAGS_workload_out)));
  }
  return absl::OkStatus();
}

int Main() {
  std::ifstream in(absl::GetFlag(FLAGS_rules));
  if (!in) {
    std::cerr << "pattern_load: cannot read --rules="
              << absl::GetFlag(FLAGS_rules) << "\n";
    return 2;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(std::move(line));
  }
  if (!absl::GetFlag(FLAGS_workload_out).empty()) {
    absl::Status written = WriteWorkload(lines);
    if (!written.ok()) {
      std::cerr << "pattern_load: " << written.message() << "\n";
      return 1;
    }
  }
  std::vector<Times> times;
  size_t loaded = 0;
  for (int r = 0; r < std::max(1, absl::GetFlag(FLAGS_repetitions)); ++r) {
    absl::StatusOr<Times> t = LoadOnce(lines, &loaded);
    if (!t.ok()) {
      std::cerr << "pattern_load: " << t.status().message() << "\n";
      return 1;
    }
    times.push_back(*t);
  }
  std::sort(times.begin(), times.end(), [](const Times& a, const Times& b) {
    return a.Total() < b.Total();
  });
  const Times& median = times[times.size() / 2];
  std::printf(
      "{\"patterns\": %zu, \"repetitions\": %zu, \"parse_s\": %.3f, "
      "\"lower_s\": %.3f, \"index_s\": %.3f, \"total_s\": %.3f, "
      "\"total_s_min\": %.3f, \"total_s_max\": %.3f}\n",
      loaded, times.size(), median.parse, median.lower, median.index,
      median.Total(), times.front().Total(), times.back().Total());
  return 0;
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return cohort::Main();
}
