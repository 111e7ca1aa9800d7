// Typed workloads: subscriptions and events with string and int64 values,
// as the API states them (issue 19), and their lowering into the matcher's
// int64 vocabulary through the service's own TypedAttributes, so that the
// matcher tools (matcher_bench, locality_probe) measure exactly what the
// server would run.
//
// events-1m models an application event bus (workload/presets.md has its
// parameters and operator mix): 13 attributes,
// half strings (Zipf-distributed event types, regions, tenants, sources and
// statuses; paths with shared prefixes; an optional coupon) and half
// numbers, 1M subscriptions from six templates, a handful of matches per
// event. It is deterministic like the int64 presets (workload.h's Rng and
// ZipfTable, its own stream tags). eventbridge-1m (the same file) is 1M
// Event Ruler patterns over EventBridge-shaped JSON events, every operator
// of issue 44 in them.
//
// Text format (version 2, typed), one record per line:
//   # cohort-workload v2 preset=<preset> seed=<seed> typed
//   # knobs subscriptions=<n> events=<n> seed=<n>
//   S <subscription in the cohort CLI's grammar (filter/parse.h)>
//   E <event in the CLI's grammar>
//   P <subscription as an Event Ruler pattern, one line of JSON>
//   J <event as JSON (Event.json, no attributes), one line>
// e.g. `S tenant = "tenant-00017" and type in ["order.created"]` and
// `E type="order.created" price=420`, or `P {"source": ["aws.ec2"]}` and
// `J {"source": "aws.ec2", "detail": {"state": "running"}}`.
// Subscriptions come first, numbered 0... in file order (a file's are all
// S or all P lines); '#' lines after the header are comments; subscriber
// names (subscription n's is "s<n % 1000>") and payloads (EventPayload)
// are not recorded. `cohort workload --preset=events-1m` (or
// eventbridge-1m) writes it; every tool's --workload reads either version
// (LoadOrGenerateAny).
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
#include "service/model/interner.h"
#include "service/model/limits.h"
#include "service/model/typed_attributes.h"
#include "workload/workload.h"

namespace cohort {
namespace workload {

struct TypedWorkload {
  WorkloadOptions options;  // preset, counts and seed; other knobs unused
  std::vector<v1::SubscriptionSpec> subscriptions;
  std::vector<v1::Event> events;  // without payloads (EventPayload)
  // Subscription i as the Event Ruler pattern it was read from
  // (eventbridge-1m; the text format's "P" lines), or empty: every
  // subscription is in the CLI's grammar ("S" lines).
  std::vector<std::string> patterns;
};

namespace internal {
// What the typed presets share. The 40 entity names ("order", "payment",
// ...): events-1m's types and resources, eventbridge-1m's services (its
// first 30). The 5 statuses ("ok", "error", "retry", "timeout",
// "cancelled"). Region i of 20 ("eu-west-1", ...).
extern const char* const kEntities[40];
extern const char* const kStatuses[5];
std::string RegionName(uint32_t i);
}  // namespace internal

// Whether `preset` is a typed preset.
bool IsTypedPreset(absl::string_view preset);

// A typed preset's subscription count: 10,000,000 for events-10m (events-1m
// with ten times the subscriptions, its first million events-1m's), else
// 1,000,000.
int64_t TypedPresetSubscriptions(absl::string_view preset);

// GenerateEvents1m() builds events-1m with `subscriptions` subscriptions
// and `events` events from `seed` (the defaults: 1M, 100k, 1).
TypedWorkload GenerateEvents1m(int64_t subscriptions, int64_t events,
                               uint64_t seed);

// GenerateEventBridge1m() builds eventbridge-1m (workload/presets.md):
// `subscriptions` Event Ruler patterns (kept in `patterns`, and read into
// `subscriptions` by filter::ParsePatternSpec) and `events` JSON events
// (Event.json only), EventBridge-shaped: nested, with arrays (one of
// objects) and numbers with fractions. Stream tags 14 and 15.
TypedWorkload GenerateEventBridge1m(int64_t subscriptions, int64_t events,
                                    uint64_t seed);

// GenerateTyped() builds the typed preset `preset` (events-10m as
// events-1m, named events-10m). REQUIRES: IsTypedPreset(preset).
TypedWorkload GenerateTyped(absl::string_view preset, int64_t subscriptions,
                            int64_t events, uint64_t seed);

// What Lower() lowers with, kept in Workload::lowering so that a tool can
// encode the typed events again the way the server's front stage does
// for each Publish (ValidatePublishAndFlatten, then BuildEvents against
// `attributes`): matcher_bench times JSON events that way.
struct Lowering {
  Lowering() : names(1u << 20), attributes(&names, 1u << 24) {}
  Lowering(const Lowering&) = delete;
  Lowering& operator=(const Lowering&) = delete;

  service::Interner names;
  service::TypedAttributes attributes;
  service::Limits limits;  // the server's defaults
};


// Lower() turns `typed` into the matcher's workload as the server would
// (validation, BuildSubscriptions, BuildEvents; JSON events flattened by
// ValidatePublishAndFlatten, each into one record or more, with
// Workload::event_of_record): attribute names are the attribute
// dictionary's, derived ones included ("$s:type", ...); the result's
// `typed` points at a copy of `typed`, its `lowering` at the dictionaries.
// InvalidArgument (naming the subscriptions or events) if a spec or an
// event does not validate.
absl::StatusOr<Workload> Lower(TypedWorkload typed);

// The typed text format: TypedWorkloadText() writes it, ReadTypedWorkload()
// parses it (InvalidArgument "line <n>: ..." on anything else; the knobs
// line's counts must match the records).
std::string TypedWorkloadText(const TypedWorkload& typed);
absl::StatusOr<TypedWorkload> ReadTypedWorkload(std::istream& in);

// GenerateTypedWorkloadFile() generates the typed preset `preset` with
// these counts and seed, writes its text to `path` (stdout if empty) and
// reports it as workload.h's Summarize does for the lowered workload, over
// `report_sample` events (records, for JSON events), with the text's
// SHA-256 and sizes and times.
absl::StatusOr<WorkloadReport> GenerateTypedWorkloadFile(
    absl::string_view preset, int64_t subscriptions, int64_t events,
    uint64_t seed, const std::string& path, size_t report_sample);

// LoadOrGenerateAny() is LoadOrGenerate (workload.h) that also knows the
// typed presets and reads either text format.
absl::StatusOr<Workload> LoadOrGenerateAny(const std::string& path,
                                           const std::string& preset,
                                           int64_t subscriptions,
                                           int64_t events);

}  // namespace workload
}  // namespace cohort

#endif  // COHORT_WORKLOAD_TYPED_WORKLOAD_H_
