#include "workload/workload.h"

// Options, the generator and the report. The text format (the writer and the
// reader, and the knob table they share) is in workload_format.cc.
//
// This file must be compiled with -ffp-contract=off and without -ffast-math
// (see BUILD.bazel): the Zipf weights are computed in double precision and
// must round the same way everywhere (a fused multiply-add rounds once
// instead of twice, and changes the generated workload).
#if defined(__FAST_MATH__)
#error "workload/workload.cc must not be compiled with -ffast-math"
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // GCC ignores this pragma; it needs the flag
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "matcher/reference_matcher.h"

namespace cohort {
namespace workload {

using matcher::AttributeValue;
using matcher::Op;
using matcher::Predicate;

// ---------------------------------------------------------------------------
// Options, presets, validation.
//
// operator== is in workload_format.cc, beside the knob table it walks.

absl::StatusOr<WorkloadOptions> PresetOptions(absl::string_view name) {
  WorkloadOptions options;  // the defaults are fabret-1m
  if (name == "fabret-1m") return options;
  if (name == "fabret-10m") {
    // fabret-1m's knobs with ten times the subscriptions: the first million
    // are fabret-1m's, and each event matches about ten times as many
    // (workload/presets.md).
    options.preset = "fabret-10m";
    options.subscriptions = 10000000;
    return options;
  }
  if (name == "fabret-uniform") {
    options.preset = "fabret-uniform";
    options.zipf_attributes = 0;
    options.zipf_values = 0;
    return options;
  }
  if (name == "selective-1m") {
    // What most publish/subscribe users have: mostly equalities over large
    // domains, a handful of matches per event (workload/presets.md).
    options.preset = "selective-1m";
    options.domain = 100000;
    options.min_predicates = 3;
    options.max_predicates = 6;
    options.eq_fraction = 0.9;
    options.zipf_values = 0.5;
    return options;
  }
  if (name == "ranges-1m") {
    // Ranges only, over a domain of a million values, so that nearly every
    // range is a predicate of its own (workload/presets.md).
    options.preset = "ranges-1m";
    options.domain = 1000000;
    options.min_predicates = 5;
    options.max_predicates = 10;
    options.eq_fraction = 0;
    options.event_attributes = 20;
    options.between_max_width = 100000;
    return options;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown preset '", name,
                   "' (known: fabret-1m, fabret-10m, fabret-uniform, "
                   "selective-1m, ranges-1m; and the typed presets ",
                   kTypedPresets, ": workload/typed_workload.h)"));
}

namespace {

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo,
                        int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (", value, ") must be in [", lo, ", ", hi, "]"));
}

absl::Status CheckNotAbove(absl::string_view field, int64_t value,
                           absl::string_view limit_field, int64_t limit) {
  if (value <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " (", value, ") must be <= ", limit_field, " (", limit, ")"));
}

absl::Status CheckExponent(absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (", value, ") must be finite and >= 0"));
}

}  // namespace

absl::Status Validate(const WorkloadOptions& o) {
  if (o.preset.empty() ||
      o.preset.find_first_of(" \t\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "preset ('", o.preset, "') must be non-empty without whitespace"));
  }
  for (absl::Status s : {
           CheckRange("subscriptions", o.subscriptions, 0, kMaxSubscriptions),
           CheckRange("events", o.events, 0, kMaxEvents),
           CheckRange("attributes", o.attributes, 1, kMaxAttributes),
           CheckRange("domain", o.domain, 1, kMaxDomain),
       }) {
    if (!s.ok()) return s;
  }
  if (o.attributes * o.domain > kMaxPermutationEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("attributes * domain (", o.attributes, " * ", o.domain,
                     ") must be <= ", kMaxPermutationEntries));
  }
  for (absl::Status s : {
           CheckRange("min_predicates", o.min_predicates, 1, o.attributes),
           CheckNotAbove("min_predicates", o.min_predicates, "max_predicates",
                         o.max_predicates),
           CheckNotAbove("max_predicates", o.max_predicates, "attributes",
                         o.attributes),
           CheckRange("event_attributes", o.event_attributes, 1,
                      kMaxAttributes),
           CheckNotAbove("event_attributes", o.event_attributes, "attributes",
                         o.attributes),
           CheckRange("between_max_width", o.between_max_width, 1, kMaxDomain),
           CheckRange("payload_bytes", o.payload_bytes, 0, kMaxPayloadBytes),
           CheckExponent("zipf_attributes", o.zipf_attributes),
           CheckExponent("zipf_values", o.zipf_values),
       }) {
    if (!s.ok()) return s;
  }
  if (!(o.eq_fraction >= 0 && o.eq_fraction <= 1)) {  // also rejects NaN
    return absl::InvalidArgumentError(
        absl::StrCat("eq_fraction (", o.eq_fraction, ") must be in [0, 1]"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Random numbers and sampling.

namespace internal {

uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

namespace {
constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;  // splitmix64 step

inline uint64_t RotateLeft(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
}  // namespace

Rng::Rng(uint64_t splitmix_state) {
  for (uint64_t& word : s_) {
    splitmix_state += kGoldenGamma;
    word = Mix64(splitmix_state);
  }
}

uint64_t Rng::Next() {
  const uint64_t result = RotateLeft(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = RotateLeft(s_[3], 45);
  return result;
}

uint64_t Rng::Below(uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

int64_t Rng::InRange(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == ~uint64_t{0}) return static_cast<int64_t>(Next());
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + Below(span + 1));
}

uint64_t StreamKey(uint64_t seed, uint64_t tag, uint64_t index) {
  return Mix64(Mix64(seed) ^ Mix64(tag)) + index * kGoldenGamma;
}

Rng StreamRng(uint64_t seed, uint64_t tag, uint64_t index) {
  return Rng(StreamKey(seed, tag, index));
}

namespace {
// ln 2 and sqrt 2 as exact hexadecimal literals, rounded to nearest double.
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;
// Series lengths: after reduction |z| <= 0.172 (so z^2 <= 0.0295) for the log
// and |r| <= 0.347 for the exponential; 14 and 22 terms are well past the
// point where terms drop below 2^-60 relative, and being fixed keeps the
// result independent of any convergence test.
constexpr int kLogTerms = 14;
constexpr int kExpTerms = 22;
// Below this e^x is 0 in double (the smallest subnormal is about e^-744.4).
constexpr double kExpUnderflow = -746.0;
constexpr double kExpOverflow = 709.0;
}  // namespace

double DeterministicLog(double x) {
  // x = m * 2^k with m in [sqrt(1/2), sqrt(2)]; scaling by 2 is exact.
  int k = 0;
  double m = x;
  while (m >= 2.0) {
    m *= 0.5;
    ++k;
  }
  while (m < 1.0) {
    m *= 2.0;
    --k;
  }
  if (m > kSqrt2) {
    m *= 0.5;
    ++k;
  }
  // ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m-1)/(m+1).
  const double z = (m - 1.0) / (m + 1.0);
  const double z2 = z * z;
  double sum = 0.0;
  for (int j = kLogTerms - 1; j >= 0; --j) {  // Horner, smallest terms first
    sum = sum * z2 + 1.0 / static_cast<double>(2 * j + 1);
  }
  return 2.0 * z * sum + static_cast<double>(k) * kLn2;
}

double DeterministicExp(double x) {
  if (x < kExpUnderflow) return 0.0;
  if (x > kExpOverflow) x = kExpOverflow;
  // x = k ln2 + r, k = round(x / ln2), |r| <= ln2 / 2 (plus rounding).
  const double q = x / kLn2;
  const int64_t k = static_cast<int64_t>(q + (q >= 0 ? 0.5 : -0.5));
  const double r = x - static_cast<double>(k) * kLn2;
  double p = 1.0;
  for (int j = kExpTerms; j >= 1; --j) {  // 1 + r(1 + r/2(1 + r/3(...)))
    p = 1.0 + p * r / static_cast<double>(j);
  }
  // Scale by 2^k one factor at a time: exact until the result is subnormal,
  // and IEEE-rounded (hence still deterministic) after that.
  for (int64_t i = 0; i < k; ++i) p *= 2.0;
  for (int64_t i = 0; i > k; --i) p *= 0.5;
  return p;
}

double DeterministicPow(double base, double exponent) {
  if (exponent == 0.0 || base == 1.0) return 1.0;
  return DeterministicExp(exponent * DeterministicLog(base));
}

ZipfTable::ZipfTable(uint32_t n, double exponent) : cumulative_(n) {
  int bits = 0;
  while (bits < 32 && (uint64_t{1} << bits) <= n) ++bits;
  // The rank-1 weight is 1.0 exactly; scaling by a power of two is exact,
  // and n weights of at most 2^(62-bits) sum to less than 2^62 + n.
  const double scale = static_cast<double>(uint64_t{1} << (62 - bits));
  uint64_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double w = DeterministicPow(static_cast<double>(i) + 1.0, -exponent);
    sum += std::max<uint64_t>(1, static_cast<uint64_t>(w * scale));
    cumulative_[i] = sum;
  }
}

uint64_t ZipfTable::weight(uint32_t i) const {
  return i == 0 ? cumulative_[0] : cumulative_[i] - cumulative_[i - 1];
}

uint32_t ZipfTable::Sample(Rng& rng) const {
  const uint64_t u = rng.Below(total());
  // The first rank whose cumulative weight exceeds u.
  return static_cast<uint32_t>(
      std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
      cumulative_.begin());
}

void SampleDistinct(const ZipfTable& table, int64_t count, Rng& rng,
                    std::vector<bool>* used, std::vector<uint32_t>* out) {
  std::vector<bool>& is_used = *used;
  const size_t first = out->size();
  uint64_t used_weight = 0;
  for (int64_t slot = 0; slot < count; ++slot) {
    uint32_t pick = 0;
    bool found = false;
    for (int attempt = 0; attempt < kMaxRedraws && !found; ++attempt) {
      pick = table.Sample(rng);
      found = !is_used[pick];
    }
    if (!found) {
      // Exact draw from the weights not yet chosen (the same distribution
      // that redrawing converges to), by a linear scan.
      uint64_t u = rng.Below(table.total() - used_weight);
      for (pick = 0; is_used[pick] || u >= table.weight(pick); ++pick) {
        if (!is_used[pick]) u -= table.weight(pick);
      }
    }
    is_used[pick] = true;
    used_weight += table.weight(pick);
    out->push_back(pick);
  }
  for (size_t i = first; i < out->size(); ++i) is_used[(*out)[i]] = false;
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Generation.

namespace {

using internal::Rng;
using internal::ZipfTable;

// Operators drawn when the predicate is not EQ, equally likely, in this order.
constexpr Op kNonEqOps[] = {Op::kLt, Op::kLe,      Op::kGt,
                            Op::kGe, Op::kBetween, Op::kNe};

class Generator {
 public:
  explicit Generator(const WorkloadOptions& options)
      : o_(options),
        attribute_zipf_(static_cast<uint32_t>(options.attributes),
                        options.zipf_attributes),
        value_zipf_(static_cast<uint32_t>(options.domain), options.zipf_values),
        used_(options.attributes, false),
        // eq_fraction * 2^53 is exact (a power-of-two scaling) and <= 2^53.
        eq_threshold_(static_cast<uint64_t>(options.eq_fraction * 0x1p53)) {
    BuildPermutations();
  }

  std::vector<Predicate> Subscription(Rng& rng) {
    const int64_t n = rng.InRange(o_.min_predicates, o_.max_predicates);
    picks_.clear();
    internal::SampleDistinct(attribute_zipf_, n, rng, &used_, &picks_);
    std::vector<Predicate> predicates(picks_.size());
    for (size_t i = 0; i < picks_.size(); ++i) {
      Predicate& p = predicates[i];
      p.attribute = picks_[i];
      const bool eq = (rng.Next() >> 11) < eq_threshold_;
      p.op = eq ? Op::kEq : kNonEqOps[rng.Below(std::size(kNonEqOps))];
      if (p.op == Op::kEq || p.op == Op::kNe) {
        p.value = PopularValue(p.attribute, rng);
      } else if (p.op == Op::kBetween) {
        p.value = rng.InRange(0, o_.domain - 1);
        const int64_t width = rng.InRange(1, o_.between_max_width);
        p.upper = std::min(p.value + width, o_.domain - 1);
      } else {
        p.value = rng.InRange(0, o_.domain - 1);
      }
    }
    return predicates;
  }

  std::vector<AttributeValue> Event(Rng& rng) {
    picks_.clear();
    internal::SampleDistinct(attribute_zipf_, o_.event_attributes, rng, &used_,
                             &picks_);
    std::vector<AttributeValue> event(picks_.size());
    for (size_t i = 0; i < picks_.size(); ++i) {
      event[i].attribute = picks_[i];
      event[i].value = PopularValue(picks_[i], rng);
    }
    return event;
  }

 private:
  void BuildPermutations() {
    Rng rng = internal::StreamRng(o_.seed, internal::kPermutationStream);
    const size_t domain = static_cast<size_t>(o_.domain);
    permutations_.resize(static_cast<size_t>(o_.attributes) * domain);
    for (size_t a = 0; a < static_cast<size_t>(o_.attributes); ++a) {
      uint32_t* perm = &permutations_[a * domain];
      for (size_t i = 0; i < domain; ++i) perm[i] = static_cast<uint32_t>(i);
      for (size_t i = domain - 1; i >= 1; --i) {
        std::swap(perm[i], perm[rng.Below(i + 1)]);
      }
    }
  }

  // Zipf rank through the attribute's permutation.
  int64_t PopularValue(uint32_t attribute, Rng& rng) const {
    const uint32_t rank = value_zipf_.Sample(rng);
    return permutations_[static_cast<size_t>(attribute) * o_.domain + rank];
  }

  const WorkloadOptions& o_;
  const ZipfTable attribute_zipf_;
  const ZipfTable value_zipf_;
  std::vector<uint32_t> permutations_;  // perm_a[i] at [a * domain + i]
  std::vector<bool> used_;
  std::vector<uint32_t> picks_;
  const uint64_t eq_threshold_;
};

}  // namespace

Workload Generate(const WorkloadOptions& options) {
  if (absl::Status status = Validate(options); !status.ok()) {
    std::fprintf(stderr, "cohort::workload::Generate: invalid options: %s\n",
                 status.ToString().c_str());
    std::abort();
  }
  Workload w;
  w.options = options;
  w.attribute_names.reserve(options.attributes);
  for (int64_t a = 0; a < options.attributes; ++a) {
    w.attribute_names.push_back(absl::StrCat("a", a));
  }
  Generator generator(options);
  Rng subscription_rng =
      internal::StreamRng(options.seed, internal::kSubscriptionStream);
  w.subscriptions.reserve(options.subscriptions);
  for (int64_t i = 0; i < options.subscriptions; ++i) {
    w.subscriptions.push_back(generator.Subscription(subscription_rng));
  }
  Rng event_rng = internal::StreamRng(options.seed, internal::kEventStream);
  w.events.reserve(options.events);
  for (int64_t i = 0; i < options.events; ++i) {
    w.events.push_back(generator.Event(event_rng));
  }
  return w;
}

std::string EventPayload(const WorkloadOptions& options,
                         uint64_t event_number) {
  // Little-endian bytes of successive splitmix64 outputs.
  uint64_t state =
      internal::StreamKey(options.seed, internal::kPayloadStream, event_number);
  std::string payload(static_cast<size_t>(options.payload_bytes), '\0');
  uint64_t word = 0;
  for (size_t i = 0; i < payload.size(); ++i) {
    if (i % 8 == 0) {
      state += internal::kGoldenGamma;
      word = internal::Mix64(state);
    }
    payload[i] = static_cast<char>(word >> (8 * (i % 8)));
  }
  return payload;
}

// ---------------------------------------------------------------------------
// Report.

WorkloadReport Summarize(const Workload& w, absl::string_view text_sha256,
                         size_t sample_events) {
  WorkloadReport r;
  r.preset = w.options.preset;
  r.seed = w.options.seed;
  r.subscriptions = static_cast<int64_t>(SubscriptionCount(w));
  const uint64_t events = EventCount(w);  // not records
  r.events = static_cast<int64_t>(events);
  r.attributes = static_cast<int64_t>(w.attribute_names.size());
  r.text_sha256 = std::string(text_sha256);
  for (const std::vector<Predicate>& subscription : w.subscriptions) {
    bool has_eq = false;
    for (const Predicate& p : subscription) {
      ++r.op_counts[static_cast<int>(p.op)];
      has_eq = has_eq || p.op == Op::kEq;
    }
    r.predicates += static_cast<int64_t>(subscription.size());
    if (!has_eq) ++r.subscriptions_without_eq;
  }
  const uint64_t sample = std::min<uint64_t>(sample_events, events);
  // Each sampled event's records (adjacent in w.events).
  std::vector<std::vector<matcher::EventView>> sampled(sample);
  for (uint64_t i = 0; i < sample; ++i) {
    const uint32_t e = static_cast<uint32_t>(
        static_cast<unsigned __int128>(i) * events / sample);
    if (w.event_of_record.empty()) {
      sampled[i].emplace_back(w.events[e]);
      continue;
    }
    const auto range = std::equal_range(w.event_of_record.begin(),
                                        w.event_of_record.end(), e);
    for (auto it = range.first; it != range.second; ++it) {
      sampled[i].emplace_back(w.events[it - w.event_of_record.begin()]);
    }
  }
  // Rows in the outer loop: each is fetched from memory once while the few
  // sampled events stay in cache. A subscription's rows are adjacent, so
  // the last subscription counted for an event is enough to count each
  // once.
  std::vector<int64_t> matches(sample, 0);
  std::vector<int64_t> counted(sample, -1);
  for (size_t row = 0; row < w.subscriptions.size(); ++row) {
    const int64_t owner = w.subscription_of_row.empty()
                              ? static_cast<int64_t>(row)
                              : w.subscription_of_row[row];
    for (uint64_t i = 0; i < sample; ++i) {
      if (counted[i] == owner) continue;
      for (const matcher::EventView& record : sampled[i]) {
        if (matcher::Matches(w.subscriptions[row], record)) {
          ++matches[i];
          counted[i] = owner;
          break;
        }
      }
    }
  }
  r.sample_events = static_cast<int64_t>(sample);
  if (sample > 0) {
    std::sort(matches.begin(), matches.end());
    int64_t total = 0;
    for (int64_t m : matches) total += m;
    r.mean_matches = static_cast<double>(total) / static_cast<double>(sample);
    r.p99_matches = matches[(99 * sample + 99) / 100 - 1];
    r.max_matches = matches.back();
  }
  return r;
}

namespace {

constexpr Op kAllOps[] = {Op::kEq, Op::kNe, Op::kLt,     Op::kLe,
                          Op::kGt, Op::kGe, Op::kBetween};
constexpr Op kTypedOps[] = {Op::kIn, Op::kNotIn, Op::kExists, Op::kNotExists};

double PerSubscription(const WorkloadReport& r) {
  return r.subscriptions == 0 ? 0.0
                              : static_cast<double>(r.predicates) /
                                    static_cast<double>(r.subscriptions);
}

double Percent(int64_t part, int64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, absl::StrFormat("\\u%04x", static_cast<int>(c)));
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string FormatReportText(const WorkloadReport& r) {
  std::string out = absl::StrFormat(
      "preset: %s\nseed: %d\nsubscriptions: %d\nevents: %d\nattributes: %d\n"
      "predicates: %d (%.3f per subscription)\n",
      r.preset, r.seed, r.subscriptions, r.events, r.attributes, r.predicates,
      PerSubscription(r));
  for (Op op : kAllOps) {
    const int64_t n = r.op_counts[static_cast<int>(op)];
    absl::StrAppend(
        &out, absl::StrFormat("  %-7s %d (%.2f%%)\n", matcher::OpName(op), n,
                              Percent(n, r.predicates)));
  }
  for (Op op : kTypedOps) {  // only where present, so old reports stay
    const int64_t n = r.op_counts[static_cast<int>(op)];
    if (n == 0) continue;
    absl::StrAppend(
        &out, absl::StrFormat("  %-7s %d (%.2f%%)\n", matcher::OpName(op), n,
                              Percent(n, r.predicates)));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("subscriptions without EQ: %d (%.2f%%)\n",
                      r.subscriptions_without_eq,
                      Percent(r.subscriptions_without_eq, r.subscriptions)),
      "sha256: ", r.text_sha256, "\n");
  if (r.text_bytes >= 0) absl::StrAppend(&out, "bytes: ", r.text_bytes, "\n");
  if (r.generate_seconds >= 0) {
    absl::StrAppend(
        &out, absl::StrFormat("generate_seconds: %.3f\n", r.generate_seconds));
  }
  if (r.write_seconds >= 0) {
    absl::StrAppend(&out,
                    absl::StrFormat("write_seconds: %.3f\n", r.write_seconds));
  }
  absl::StrAppend(
      &out, absl::StrFormat("matches per event (%d sampled events): mean %.2f, "
                            "p99 %d, max %d\n",
                            r.sample_events, r.mean_matches, r.p99_matches,
                            r.max_matches));
  return out;
}

std::string FormatReportJson(const WorkloadReport& r) {
  std::string ops;
  for (Op op : kAllOps) {
    absl::StrAppend(&ops, ops.empty() ? "" : ", ",
                    JsonString(matcher::OpName(op)), ": ",
                    r.op_counts[static_cast<int>(op)]);
  }
  for (Op op : kTypedOps) {
    if (r.op_counts[static_cast<int>(op)] == 0) continue;
    absl::StrAppend(&ops, ", ", JsonString(matcher::OpName(op)), ": ",
                    r.op_counts[static_cast<int>(op)]);
  }
  return absl::StrFormat(
      "{\"preset\": %s, \"seed\": %d, \"subscriptions\": %d, \"events\": %d, "
      "\"attributes\": %d, \"predicates\": %d, "
      "\"predicates_per_subscription\": %.4f, \"op_counts\": {%s}, "
      "\"subscriptions_without_eq\": %d, \"sha256\": %s, \"bytes\": %d, "
      "\"generate_seconds\": %.3f, \"write_seconds\": %.3f, "
      "\"sample_events\": %d, \"mean_matches_per_event\": %.4f, "
      "\"p99_matches_per_event\": %d, \"max_matches_per_event\": %d}",
      JsonString(r.preset), r.seed, r.subscriptions, r.events, r.attributes,
      r.predicates, PerSubscription(r), ops, r.subscriptions_without_eq,
      JsonString(r.text_sha256), r.text_bytes, r.generate_seconds,
      r.write_seconds, r.sample_events, r.mean_matches, r.p99_matches,
      r.max_matches);
}

absl::StatusOr<Workload> LoadOrGenerate(const std::string& path,
                                        const std::string& preset,
                                        int64_t subscriptions,
                                        int64_t events) {
  if (!path.empty()) return ReadWorkloadFile(path);
  absl::StatusOr<WorkloadOptions> options = PresetOptions(preset);
  if (!options.ok()) return options.status();
  if (subscriptions >= 0) options->subscriptions = subscriptions;
  if (events >= 0) options->events = events;
  if (absl::Status s = Validate(*options); !s.ok()) return s;
  return Generate(*options);
}

}  // namespace workload
}  // namespace cohort
