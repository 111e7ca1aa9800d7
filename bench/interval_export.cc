// interval_export: restates a workload for the public interval matchers
// (bench/public_matchers.sh). It drops what they cannot express (NE, as
// --ne says), writes the rest twice, and counts each event's matches with
// Cohort's own index so that every matcher is held to the same counts:
//
//   bazel run -c opt //bench:interval_export -- --preset=fabret-1m
//       --events=2000 --ne=drop_subscriptions
//       --out_workload=/tmp/f.txt --out_intervals=/tmp/f.intervals
//
// --out_workload is the kept workload in the workload file format, for
// matcher_bench --workload; --out_intervals is the rank form that
// bench/public_driver.cc reads (bench/intervals.h), each event's line
// carrying its expected match count. Prints one JSON line of counts.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "bench/intervals.h"
#include "matcher/index.h"
#include "workload/workload.h"
#include "workload/workload_file.h"

ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset (workload/presets.md) when --workload is empty.");
ABSL_FLAG(std::string, workload, "", "Workload file to read instead.");
ABSL_FLAG(int64_t, subscriptions, -1,
          "With --preset: subscriptions to generate (-1: the preset's).");
ABSL_FLAG(int64_t, events, -1,
          "With --preset: events to generate (-1: the preset's).");
ABSL_FLAG(std::string, ne, "drop_subscriptions",
          "What to do with NE, which interval matchers cannot express: "
          "drop_subscriptions (leave out every subscription with an NE) or "
          "drop_predicates (leave out the NE predicates only).");
ABSL_FLAG(std::string, out_workload, "",
          "Where to write the kept workload (workload file format).");
ABSL_FLAG(std::string, out_intervals, "",
          "Where to write the interval form with expected match counts.");

namespace cohort {
namespace bench {

using workload::LoadOrGenerate;
using workload::Workload;
using workload::WriteWorkloadFile;
using workload::WrittenFile;
namespace {

absl::Status Run() {
  const std::string out_workload = absl::GetFlag(FLAGS_out_workload);
  const std::string out_intervals = absl::GetFlag(FLAGS_out_intervals);
  if (out_workload.empty() || out_intervals.empty()) {
    return absl::InvalidArgumentError(
        "--out_workload and --out_intervals are both required");
  }
  absl::StatusOr<NePolicy> policy = ParseNePolicy(absl::GetFlag(FLAGS_ne));
  if (!policy.ok()) return policy.status();
  absl::StatusOr<Workload> in = LoadOrGenerate(
      absl::GetFlag(FLAGS_workload), absl::GetFlag(FLAGS_preset),
      absl::GetFlag(FLAGS_subscriptions), absl::GetFlag(FLAGS_events));
  if (!in.ok()) return in.status();

  DropNeStats dropped;
  const Workload kept = DropNe(*in, *policy, &dropped);
  const size_t original = in->subscriptions.size();
  in->subscriptions.clear();
  absl::StatusOr<IntervalWorkload> intervals = ToIntervals(kept);
  if (!intervals.ok()) return intervals.status();

  matcher::Index index;
  for (size_t i = 0; i < kept.subscriptions.size(); ++i) {
    if (absl::Status s = index.Add(static_cast<matcher::SubscriptionId>(i),
                                   kept.subscriptions[i]);
        !s.ok()) {
      return s;
    }
  }
  matcher::MatchScratch scratch;
  std::vector<matcher::SubscriptionId> matches;
  std::vector<int64_t> expected;
  expected.reserve(kept.events.size());
  int64_t total = 0;
  for (const std::vector<matcher::AttributeValue>& event : kept.events) {
    index.MatchEvent(event, &scratch, &matches);
    expected.push_back(static_cast<int64_t>(matches.size()));
    total += static_cast<int64_t>(matches.size());
  }

  if (absl::StatusOr<WrittenFile> w = WriteWorkloadFile(kept, out_workload);
      !w.ok()) {
    return w.status();
  }
  std::ofstream out(out_intervals, std::ios::binary | std::ios::trunc);
  WriteIntervals(*intervals, expected, out);
  out.close();
  if (!out) {
    return absl::UnavailableError(
        absl::StrFormat("cannot write %s", out_intervals));
  }
  absl::PrintF(
      "{\"preset\": \"%s\", \"ne\": \"%s\", \"subscriptions\": %d, "
      "\"kept\": %d, \"subscriptions_dropped\": %d, "
      "\"predicates_dropped\": %d, \"attributes\": %d, \"domain\": %d, "
      "\"events\": %d, \"matches_per_event\": %.3f}\n",
      kept.options.preset, absl::GetFlag(FLAGS_ne), original,
      kept.subscriptions.size(), dropped.subscriptions_dropped,
      dropped.predicates_dropped, intervals->attributes, intervals->domain,
      kept.events.size(),
      kept.events.empty() ? 0.0
                          : static_cast<double>(total) / kept.events.size());
  return absl::OkStatus();
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Restates a workload for the public interval matchers: "
      "interval_export --preset=P --out_workload=F --out_intervals=G");
  absl::ParseCommandLine(argc, argv);
  absl::Status s = cohort::bench::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "interval_export: %s\n", s.ToString().c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
