// The Fabret workload generator, its text file format and its summary report,
// exactly as specified in workload/fabret.md.
//
// Stage: tools only (bench/, the workload binary, tests); no threads, no gRPC.
// Everything here is single-threaded and works on plain values; a `Workload`
// may be handed to another thread by moving it.
//
// Determinism contract: `Generate(options)` and `WriteWorkload` produce
// byte-identical text for the same options on every machine and compiler.
// To keep that promise the generator uses only
//   * xoshiro256** seeded through splitmix64 (`internal::Rng`),
//   * integer sampling (Lemire's multiply-shift with rejection; Zipf by a
//     binary search in an integer cumulative table), never `std::`
//     distributions,
//   * a Zipf weight r^-s computed with +,-,*,/ only (`internal::
//     DeterministicPow`), in a file compiled with -ffp-contract=off, and never
//     with -ffast-math (which would flush subnormals and reassociate sums).
//
// Random streams. Each consumer draws from its own stream derived from the
// seed (see `internal::StreamRng`): stream 1 draws the per-attribute value
// permutations perm_a, stream 2 the subscriptions, stream 3 the events, and
// stream 4 + event number the payload. Changing --events therefore leaves the
// subscriptions untouched, and vice versa; a longer run extends a shorter one.
//
// Exact generation rules (beyond fabret.md):
//   * A subscription draws n = uniform[min_predicates, max_predicates], then
//     n distinct attributes (Zipf over attribute index, redrawing duplicates;
//     after `internal::kMaxRedraws` failed redraws for one slot it draws
//     exactly from the not-yet-chosen weights, which is the same distribution),
//     then for each predicate in that order: the operator, then its value(s).
//   * Operator: EQ iff (next output >> 11) < eq_fraction * 2^53; otherwise
//     uniform over LT, LE, GT, GE, BETWEEN, NE (in that order).
//   * EQ/NE value: Zipf rank index i (0 = most popular) -> perm_a[i].
//   * LT/LE/GT/GE bound: uniform [0, domain-1].
//   * BETWEEN: lower = uniform [0, domain-1], width = uniform
//     [1, between_max_width], upper = min(lower + width, domain - 1). So
//     0 <= upper - lower <= between_max_width, and upper == lower only when
//     lower == domain - 1. The range is inclusive at both ends.
//   * An event draws event_attributes distinct attributes as above, then for
//     each, in that order, a value: Zipf rank index i -> perm_a[i].
//   * perm_a: Fisher-Yates over the identity 0..domain-1, for a = 0, 1, ...
//     (i from domain-1 down to 1, swap with uniform [0, i]).
//
// Text format (one record per line, '\n' line ends, single spaces):
//   # cohort-workload v1 preset=<preset> seed=<seed>
//   # knobs subscriptions=<n> events=<n> seed=<n> attributes=<n> ...
//   S <n> <attr> <op> <value> [<upper>] ...    (n predicates)
//   E <n> <attr> <value> ...                   (n attribute values)
// The second line (our addition; a comment to other readers) lists every knob
// in the order above, doubles in their shortest round-trip form, so a file
// records how it was made. Subscriptions come first, numbered 0... in file
// order; events follow. Other '#' lines are comments. The reader also accepts
// tabs and runs of blanks between tokens, "\r\n" line ends and blank lines.
#ifndef COHORT_WORKLOAD_WORKLOAD_H_
#define COHORT_WORKLOAD_WORKLOAD_H_

#include <array>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "matcher/types.h"

namespace cohort {
namespace workload {

// Every knob of the generator. Defaults are the `fabret-1m` preset.
struct WorkloadOptions {
  std::string preset = "fabret-1m";  // recorded in the header; no spaces
  int64_t subscriptions = 1000000;
  int64_t events = 100000;
  uint64_t seed = 1;
  int64_t attributes = 32;  // named a0 ... a<attributes-1>
  int64_t domain = 1000;    // values are integers 0 ... domain-1
  int64_t min_predicates = 2;
  int64_t max_predicates = 6;
  double eq_fraction = 0.70;
  double zipf_attributes = 0.8;  // Zipf exponent over attribute index
  double zipf_values = 0.8;      // Zipf exponent over value rank
  int64_t event_attributes = 16;
  int64_t between_max_width = 100;
  int64_t payload_bytes = 64;

  friend bool operator==(const WorkloadOptions& a, const WorkloadOptions& b);
  friend bool operator!=(const WorkloadOptions& a, const WorkloadOptions& b) {
    return !(a == b);
  }
};

// Limits `Validate` enforces, so generation tables stay small.
inline constexpr int64_t kMaxSubscriptions = int64_t{1} << 31;
inline constexpr int64_t kMaxEvents = int64_t{1} << 31;
inline constexpr int64_t kMaxAttributes = int64_t{1} << 16;
inline constexpr int64_t kMaxDomain = int64_t{1} << 24;
// attributes * domain: the permutation tables (4 bytes per entry).
inline constexpr int64_t kMaxPermutationEntries = int64_t{1} << 26;
inline constexpr int64_t kMaxPayloadBytes = int64_t{1} << 20;

// The typed presets' names (typed_workload.h), for messages.
inline constexpr absl::string_view kTypedPresets =
    "events-1m, events-10m, eventbridge-1m";

// PresetOptions() returns the options of a preset (workload/presets.md):
// "fabret-1m"; "fabret-10m" (the same with 10,000,000 subscriptions);
// "fabret-uniform" (fabret-1m with both Zipf exponents 0);
// "selective-1m" (equality-heavy over 100,000 values, a handful of matches
// per event); "ranges-1m" (5-10 ranges per subscription over 1,000,000
// values). InvalidArgument for any other name.
absl::StatusOr<WorkloadOptions> PresetOptions(absl::string_view name);

// Validate() returns OK, or InvalidArgument naming the first offending field
// and its limit, e.g. "max_predicates (40) must be <= attributes (32)".
absl::Status Validate(const WorkloadOptions& options);

// A generated or parsed workload. Attribute ids in predicates and events
// index `attribute_names`.
struct TypedWorkload;  // typed_workload.h
struct Lowering;       // typed_workload.h

struct Workload {
  WorkloadOptions options;
  std::vector<std::string> attribute_names;
  std::vector<std::vector<matcher::Predicate>> subscriptions;
  std::vector<std::vector<matcher::AttributeValue>> events;
  // For a typed preset (events-1m), the workload as the API states it:
  // the fields above are its lowering (typed_workload.h), which matcher
  // tools use, and clients send this. Null for the int64 presets.
  std::shared_ptr<const TypedWorkload> typed;
  // A typed workload with "or" subscriptions (any_of): `subscriptions` are
  // the matcher's rows, a branch each (DESIGN 1.8), and row r is
  // typed->subscriptions[subscription_of_row[r]]'s. Empty when every
  // subscription is one row.
  std::vector<uint32_t> subscription_of_row;
  // A typed workload with JSON events (eventbridge-1m): `events` are the
  // matcher's records, one per combination of an event's arrays
  // (typed_attributes.h Encode), and record r is
  // typed->events[event_of_record[r]]'s. Empty when every event is one
  // record.
  std::vector<uint32_t> event_of_record;
  // A typed workload's dictionaries as Lower() left them (typed_workload.h),
  // to encode its events again; null for the int64 presets.
  std::shared_ptr<const Lowering> lowering;
};

// The subscriptions a client sends: one per row, or, with "or", the last
// row's subscription and those before it.
inline size_t SubscriptionCount(const Workload& w) {
  return w.subscription_of_row.empty()
             ? w.subscriptions.size()
             : size_t{w.subscription_of_row.back()} + 1;
}

// The events a client sends: one per record, or, with JSON events, the
// last record's event and those before it (every event lowers into one
// record or more).
inline size_t EventCount(const Workload& w) {
  return w.event_of_record.empty() ? w.events.size()
                                   : size_t{w.event_of_record.back()} + 1;
}

// Generate() builds the workload that `options` describe; attribute id i is
// named "a<i>". REQUIRES: Validate(options).ok() (aborts otherwise).
Workload Generate(const WorkloadOptions& options);

// EventPayload() returns the `payload_bytes` bytes of event `event_number`
// (0-based), derived from the seed and the event number only.
std::string EventPayload(const WorkloadOptions& options, uint64_t event_number);

// WriteWorkloadChunks() formats `workload` in the text format and hands it to
// `sink` in pieces of about 1 MiB, in order; the concatenation is the file.
void WriteWorkloadChunks(const Workload& workload,
                         absl::FunctionRef<void(absl::string_view)> sink);
// WriteWorkload() writes the text format to `out`.
void WriteWorkload(const Workload& workload, std::ostream& out);
// WorkloadText() returns the text format as one string.
std::string WorkloadText(const Workload& workload);

// ReadWorkload() parses the text format. Attribute names are interned to ids
// in order of first appearance. The first line must be the v1 header; if a
// "# knobs" line is present, `options` is restored from it and the counts of
// S and E lines must equal its subscriptions= and events=; otherwise
// `options` holds the header's preset and seed, the counts read and the
// number of attribute names, and defaults for the other knobs.
// Errors are InvalidArgument "line <n>: ..." naming the offending token.
absl::StatusOr<Workload> ReadWorkload(std::istream& in);
absl::StatusOr<Workload> ReadWorkloadFile(const std::string& path);

// What the benchmark tools' --workload/--preset/--subscriptions/--events
// flags select: the file `path` if non-empty, else the preset `preset` with
// its counts replaced by `subscriptions` and `events` where those are >= 0.
absl::StatusOr<Workload> LoadOrGenerate(const std::string& path,
                                        const std::string& preset,
                                        int64_t subscriptions, int64_t events);

// Summary of a workload, printed by the generator and repeated by benchmarks.
struct WorkloadReport {
  std::string preset;
  uint64_t seed = 0;
  int64_t subscriptions = 0;
  int64_t events = 0;
  int64_t attributes = 0;
  int64_t predicates = 0;
  // Predicates per operator, indexed by static_cast<int>(matcher::Op)
  // (IN to NOT_EXISTS occur in lowered typed workloads: typed_workload.h).
  std::array<int64_t, 13> op_counts = {};
  int64_t subscriptions_without_eq = 0;
  std::string text_sha256;
  int64_t text_bytes = -1;       // set by the caller; -1 = unknown
  double generate_seconds = -1;  // set by the caller; -1 = unknown
  double write_seconds = -1;     // set by the caller; -1 = unknown
  // Matches per event over `sample_events` events spread evenly over the
  // event list (event floor(i * events / sample), i = 0 ... sample-1).
  int64_t sample_events = 0;
  double mean_matches = 0;
  int64_t p99_matches = 0;  // nearest rank: ceil(0.99 * sample)-th smallest
  int64_t max_matches = 0;
};

inline constexpr size_t kDefaultReportSample = 200;

// Summarize() counts `workload` and matches the sampled events against every
// subscription with `matcher::Matches`: an event's matches are the distinct
// subscriptions of the rows (subscription_of_row) that one of its records
// (event_of_record) matches. Cost: sample_events * rows * records an event
// conjunction checks (several seconds for fabret-1m and 200 events).
WorkloadReport Summarize(const Workload& workload,
                         absl::string_view text_sha256,
                         size_t sample_events = kDefaultReportSample);

// Human-readable report, one "key: value" per line.
std::string FormatReportText(const WorkloadReport& report);
// The same as one JSON object (no trailing newline).
std::string FormatReportJson(const WorkloadReport& report);

// ---------------------------------------------------------------------------
// Building blocks, exposed for tests.
namespace internal {

// xoshiro256** 1.0 (Blackman & Vigna), state seeded from splitmix64.
class Rng {
 public:
  // The four state words are four successive splitmix64 outputs from
  // `splitmix_state`.
  explicit Rng(uint64_t splitmix_state);

  uint64_t Next();
  // Uniform in [0, n). REQUIRES: n > 0. Lemire's multiply-shift with
  // rejection, so exactly uniform.
  uint64_t Below(uint64_t n);
  // Uniform in [lo, hi]. REQUIRES: lo <= hi.
  int64_t InRange(int64_t lo, int64_t hi);

 private:
  uint64_t s_[4];
};

// The splitmix64 output function (a bijective 64-bit mixer).
uint64_t Mix64(uint64_t x);

// Stream tags; see the file comment.
inline constexpr uint64_t kPermutationStream = 1;
inline constexpr uint64_t kSubscriptionStream = 2;
inline constexpr uint64_t kEventStream = 3;
inline constexpr uint64_t kPayloadStream = 4;

// StreamKey() is the splitmix64 starting state of stream (`tag`, `index`):
// Mix64(Mix64(seed) ^ Mix64(tag)) + index * 0x9E3779B97F4A7C15.
uint64_t StreamKey(uint64_t seed, uint64_t tag, uint64_t index);
// StreamRng() is Rng(StreamKey(seed, tag, index)).
Rng StreamRng(uint64_t seed, uint64_t tag, uint64_t index = 0);

// ln(x) and e^x with +,-,*,/ only (range reduction and a fixed number of
// series terms), so bit-identical under IEEE-754 double without contraction.
// REQUIRES: DeterministicLog: x > 0 and finite.
double DeterministicLog(double x);
double DeterministicExp(double x);
// base^exponent = Exp(exponent * Log(base)). REQUIRES: base > 0.
double DeterministicPow(double base, double exponent);

// Zipf over rank indices 0 ... n-1: P(i) proportional to (i+1)^-exponent.
// Weights are scaled to integers (the rank-1 weight is 2^(62 - bits(n)),
// every weight at least 1) and sampled by a uniform draw below their sum and
// a binary search in the cumulative table.
class ZipfTable {
 public:
  // REQUIRES: n >= 1, exponent >= 0 and finite.
  ZipfTable(uint32_t n, double exponent);

  uint32_t Sample(Rng& rng) const;
  uint32_t size() const { return static_cast<uint32_t>(cumulative_.size()); }
  // Integer weight of rank index i.
  uint64_t weight(uint32_t i) const;
  uint64_t total() const { return cumulative_.back(); }

 private:
  std::vector<uint64_t> cumulative_;  // cumulative_[i] = sum of weights 0..i
};

// Redraws allowed per slot when sampling distinct attributes before falling
// back to an exact draw from the remaining weights. With fabret-1m (16 of 32
// attributes at exponent 0.8) a slot needs about 2 draws on average, so 64
// is reached essentially never; the bound only keeps extreme exponents fast.
inline constexpr int kMaxRedraws = 64;

// SampleDistinct() appends `count` distinct rank indices drawn from `table`
// without replacement to `*out`. `*used` is scratch of size table.size(), all
// false on entry and on return. REQUIRES: count <= table.size().
void SampleDistinct(const ZipfTable& table, int64_t count, Rng& rng,
                    std::vector<bool>* used, std::vector<uint32_t>* out);

// FormatKnobValue() is the shortest "%.<p>g" form of `x` that parses back to
// exactly `x` (p = 1 ... 17), as written in the knobs line.
std::string FormatKnobValue(double x);

}  // namespace internal
}  // namespace workload
}  // namespace cohort

#endif  // COHORT_WORKLOAD_WORKLOAD_H_
