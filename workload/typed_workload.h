// Typed workloads: subscriptions and events with string and int64 values,
// as the API states them (issue 19), and their lowering into the matcher's
// int64 vocabulary through the service's own TypedAttributes, so that the
// matcher tools (matcher_bench, locality_probe) measure exactly what the
// server would run.
//
// The one typed preset, events-1m, models an application event bus
// (workload/presets.md has its parameters and operator mix): 13 attributes,
// half strings (Zipf-distributed event types, regions, tenants, sources and
// statuses; paths with shared prefixes; an optional coupon) and half
// numbers, 1M subscriptions from six templates, a handful of matches per
// event. It is deterministic like the int64 presets (workload.h's Rng and
// ZipfTable, its own stream tags).
//
// Text format (version 2, typed), one record per line:
//   # cohort-workload v2 preset=<preset> seed=<seed> typed
//   # knobs subscriptions=<n> events=<n> seed=<n>
//   S <subscription in the cohort CLI's grammar (filter/parse.h)>
//   E <event in the CLI's grammar>
// e.g. `S tenant = "tenant-00017" and type in ["order.created"]` and
// `E type="order.created" price=420`. Subscriptions come first, numbered
// 0... in file order; '#' lines after the header are comments; subscriber
// names (subscription n's is "s<n % 1000>") and payloads (EventPayload) are
// not recorded. `cohort workload --preset=events-1m` writes it; every
// tool's --workload reads either version (LoadOrGenerateAny).
//
// Stage: tools only; single-threaded; no gRPC calls.
#ifndef COHORT_WORKLOAD_TYPED_WORKLOAD_H_
#define COHORT_WORKLOAD_TYPED_WORKLOAD_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "workload/workload.h"

namespace cohort {
namespace workload {

struct TypedWorkload {
  WorkloadOptions options;  // preset, counts and seed; other knobs unused
  std::vector<v1::SubscriptionSpec> subscriptions;
  std::vector<v1::Event> events;  // without payloads (EventPayload)
};

// The typed presets' names, for messages: "events-1m".
inline constexpr absl::string_view kTypedPresets = "events-1m";

// Whether `preset` is a typed preset.
bool IsTypedPreset(absl::string_view preset);

// GenerateEvents1m() builds events-1m with `subscriptions` subscriptions
// and `events` events from `seed` (the defaults: 1M, 100k, 1).
TypedWorkload GenerateEvents1m(int64_t subscriptions, int64_t events,
                               uint64_t seed);

// Lower() turns `typed` into the matcher's workload as the server would
// (validation, BuildSubscriptions, BuildEvents): attribute names are the
// attribute dictionary's, derived ones included ("$s:type", ...); the
// result's `typed` points at a copy of `typed`. InvalidArgument (naming the
// subscription or event) if a spec does not validate.
absl::StatusOr<Workload> Lower(TypedWorkload typed);

// The typed text format: TypedWorkloadText() writes it, ReadTypedWorkload()
// parses it (InvalidArgument "line <n>: ..." on anything else; the knobs
// line's counts must match the records).
std::string TypedWorkloadText(const TypedWorkload& typed);
absl::StatusOr<TypedWorkload> ReadTypedWorkload(std::istream& in);

// GenerateTypedWorkloadFile() generates events-1m with these counts and
// seed, writes its text to `path` (stdout if empty) and reports it as
// workload.h's Summarize does for the lowered workload, over
// `report_sample` events, with the text's SHA-256 and sizes and times.
absl::StatusOr<WorkloadReport> GenerateTypedWorkloadFile(
    int64_t subscriptions, int64_t events, uint64_t seed,
    const std::string& path, size_t report_sample);

// LoadOrGenerateAny() is LoadOrGenerate (workload.h) that also knows the
// typed presets and reads either text format.
absl::StatusOr<Workload> LoadOrGenerateAny(const std::string& path,
                                           const std::string& preset,
                                           int64_t subscriptions,
                                           int64_t events);

}  // namespace workload
}  // namespace cohort

#endif  // COHORT_WORKLOAD_TYPED_WORKLOAD_H_
