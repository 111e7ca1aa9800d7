// public_driver: times one public interval matcher, TAMA or REIN from the
// xizeroplus matching-algorithm collection (MIT), on the interval form of a
// workload that //bench:interval_export wrote, and checks every event's
// match count against the count Cohort's index found.
//
// It is built by bench/public_matchers.sh, not by Bazel, because it compiles
// against a checkout of that collection that stays outside this repository:
//
//   g++ -O3 -DCOHORT_PUBLIC_TAMA -I<checkout>/Tama bench/public_driver.cc \
//       <checkout>/Tama/tama.cpp -o tama_driver
//   tama_driver <intervals file> <repetitions>
//
// Prints one JSON line: load seconds, resident memory added by the load,
// events/s of each repetition (every event matched alone, in file order),
// per-event latency quantiles, and the number of events whose count differed
// (any difference exits 3: a matcher that is not exact is not compared).
//
// Exactness settings (the collection's defaults are approximate or assume
// that every event carries every attribute):
// - TAMA's tree is as deep as the domain needs for one value per leaf
//   (2^(level-1) >= domain); at its default depth of 13, a leaf cell holds
//   many values and partly covered cells count as matched.
// - REIN marks the subscriptions that an event's values rule out. An event
//   that lacks an attribute must rule out every subscription constrained on
//   it, so the driver hands REIN a value below the domain (-1) for each such
//   attribute, which its buckets treat as outside every interval.

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#if defined(COHORT_PUBLIC_TAMA)
#include "tama.h"
#elif defined(COHORT_PUBLIC_REIN)
#include "rein.h"
#else
#error "define COHORT_PUBLIC_TAMA or COHORT_PUBLIC_REIN"
#endif

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Bad input: main() prints the message and exits 2.
struct InputError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& message) {
  throw InputError{message};
}

// A whole decimal integer, or Fail().
long ParseLong(const char* s) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') {
    Fail(std::string("not an integer: '") + s + "'");
  }
  return value;
}

// Resident set size in MiB, from /proc/self/statm.
double ResidentMib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0;
  long pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * 4096.0 / (1 << 20);
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t at = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  return v[at];
}

struct Input {
  int attributes = 0;
  int domain = 0;
  std::vector<IntervalSub> subscriptions;
  std::vector<Pub> events;
  std::vector<long> expected;
};

Input Read(const char* path) {
  std::ifstream in(path);
  if (!in) Fail(std::string("cannot open ") + path);
  Input input;
  std::string magic, version, field;
  size_t subscriptions = 0, events = 0;
  in >> magic >> version;
  if (magic != "intervals" || version != "v1") Fail("not an intervals v1 file");
  for (int i = 0; i < 4; ++i) {
    in >> field;
    const size_t eq = field.find('=');
    if (eq == std::string::npos) Fail("bad header field " + field);
    const long value = ParseLong(field.c_str() + eq + 1);
    const std::string name = field.substr(0, eq);
    if (name == "attributes") input.attributes = static_cast<int>(value);
    else if (name == "domain") input.domain = static_cast<int>(value);
    else if (name == "subscriptions") subscriptions = value;
    else if (name == "events") events = value;
  }
  input.subscriptions.resize(subscriptions);
  for (size_t s = 0; s < subscriptions; ++s) {
    std::string tag;
    int n = 0;
    if (!(in >> tag >> n) || tag != "S") Fail("expected an S line");
    IntervalSub& sub = input.subscriptions[s];
    sub.id = static_cast<int>(s);
    sub.size = n;
    sub.constraints.resize(n);
    for (IntervalCnt& c : sub.constraints) {
      in >> c.att >> c.lowValue >> c.highValue;
    }
  }
  input.events.resize(events);
  input.expected.resize(events);
  for (size_t e = 0; e < events; ++e) {
    std::string tag;
    int n = 0;
    if (!(in >> tag >> input.expected[e] >> n) || tag != "E") {
      Fail("expected an E line");
    }
    Pub& pub = input.events[e];
    pub.size = n;
    pub.pairs.resize(n);
    for (Pair& p : pub.pairs) in >> p.att >> p.value;
  }
  if (!in) Fail("file ends early");
  if (input.attributes > MAX_ATTS) Fail("more attributes than MAX_ATTS");
  if (static_cast<long>(subscriptions) >= MAX_SUBS) Fail("more than MAX_SUBS");
  return input;
}

int Run(int argc, char** argv) {
  if (argc != 3) Fail("usage: public_driver <intervals file> <repetitions>");
  const int repetitions = static_cast<int>(std::max(1L, ParseLong(argv[2])));
  Input input = Read(argv[1]);

  const double rss_before = ResidentMib();
  const Clock::time_point load_start = Clock::now();
#if defined(COHORT_PUBLIC_TAMA)
  int level = 1;
  while ((1L << (level - 1)) < input.domain) ++level;
  const char* name = "TAMA";
  auto matcher = std::make_unique<Tama>(input.attributes, input.domain, level);
  for (const IntervalSub& sub : input.subscriptions) matcher->insert(sub);
  std::vector<Pub>& events = input.events;
#else
  const int level = 0;
  const char* name = "REIN";
  auto matcher = std::make_unique<Rein>(input.domain);
  for (const IntervalSub& sub : input.subscriptions) matcher->insert(sub);
  // Every attribute some subscription constrains, on every event.
  std::vector<bool> constrained(input.attributes, false);
  for (const IntervalSub& sub : input.subscriptions) {
    for (const IntervalCnt& c : sub.constraints) constrained[c.att] = true;
  }
  std::vector<Pub> events;
  events.reserve(input.events.size());
  for (const Pub& pub : input.events) {
    Pub full = pub;
    std::vector<bool> present(input.attributes, false);
    for (const Pair& p : pub.pairs) present[p.att] = true;
    for (int a = 0; a < input.attributes; ++a) {
      if (constrained[a] && !present[a]) full.pairs.push_back(Pair{a, -1});
    }
    full.size = static_cast<int>(full.pairs.size());
    events.push_back(std::move(full));
  }
#endif
  const double load_s = Seconds(Clock::now() - load_start);
  const double rss_after = ResidentMib();

  std::vector<double> rates;
  std::vector<double> latency_us;
  latency_us.reserve(events.size() * repetitions);
  size_t mismatches = 0;
  long total = 0;
  for (int r = 0; r < repetitions; ++r) {
    const Clock::time_point start = Clock::now();
    for (size_t e = 0; e < events.size(); ++e) {
      int count = 0;
      const Clock::time_point t0 = Clock::now();
      matcher->match(events[e], count, input.subscriptions);
      latency_us.push_back(Seconds(Clock::now() - t0) * 1e6);
      if (count != input.expected[e]) ++mismatches;
      if (r == 0) total += count;
    }
    rates.push_back(events.size() / Seconds(Clock::now() - start));
  }
  std::sort(rates.begin(), rates.end());
  std::printf(
      "{\"matcher\": \"%s\", \"level\": %d, \"subscriptions\": %zu, "
      "\"events\": %zu, \"domain\": %d, \"load_s\": %.3f, "
      "\"rss_added_mb\": %.1f, \"repetitions\": %d, "
      "\"events_per_s\": %.1f, \"events_per_s_min\": %.1f, "
      "\"events_per_s_max\": %.1f, \"us_per_event\": %.2f, "
      "\"p50_us\": %.2f, \"p99_us\": %.2f, \"matches_per_event\": %.3f, "
      "\"mismatched_events\": %zu}\n",
      name, level, input.subscriptions.size(), events.size(), input.domain,
      load_s, rss_after - rss_before, repetitions, rates[rates.size() / 2],
      rates.front(), rates.back(), 1e6 / rates[rates.size() / 2],
      Quantile(latency_us, 0.5), Quantile(latency_us, 0.99),
      events.empty() ? 0.0 : static_cast<double>(total) / events.size(),
      mismatches);
  return mismatches == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "public_driver: %s\n", e.message.c_str());
    return 2;
  }
}
