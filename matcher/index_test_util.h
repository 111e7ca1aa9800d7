// Random workloads for the index's tests: a deterministic generator, random
// predicates, subscriptions and events over a small value domain (plus the
// int64 extremes), and text forms for reproducers. Shared by index_test,
// match_event_test and match_event_concurrency_test so they run the same
// workloads.
//
// Test-only. Thread safety: Rng is not synchronised; use one per thread.
#ifndef COHORT_MATCHER_INDEX_TEST_UTIL_H_
#define COHORT_MATCHER_INDEX_TEST_UTIL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "matcher/types.h"

namespace cohort {
namespace matcher {
namespace test_util {

using Subscription = std::vector<Predicate>;
using Event = std::vector<AttributeValue>;

// splitmix64: tiny, deterministic, good enough for test data.
class Rng {
 public:
  // Odd seeds' events have numbers with fractions (RandomEvent), even
  // seeds' integers only: cohorts holding such a number are kept per
  // event, so that the masks' paths stay tested too.
  explicit Rng(uint64_t seed) : state_(seed), fractions_((seed & 1) != 0) {}
  bool fractions() const { return fractions_; }
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Uniform(uint64_t n) { return Next() % n; }
  bool Chance(int percent) {
    return Uniform(100) < static_cast<uint64_t>(percent);
  }

 private:
  uint64_t state_;
  bool fractions_;
};

// Values cluster in a small domain so predicates often hold, plus the int64
// extremes and their neighbours.
inline int64_t RandomValue(Rng& rng, int64_t domain) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kEdges[] = {kMin, kMin + 1, kMax - 1, kMax, 0, -1};
  if (rng.Chance(8)) return kEdges[rng.Uniform(6)];
  return static_cast<int64_t>(rng.Uniform(2 * domain + 1)) - domain;
}

// Every operator: `set_percent` of the predicates are IN, NOT_IN (1 to 4
// values, repeats allowed), EXISTS or NOT_EXISTS, the rest EQ to BETWEEN.
inline Predicate RandomPredicate(Rng& rng, uint32_t attributes,
                                 int64_t domain, int set_percent = 25) {
  Predicate p;
  p.attribute = static_cast<AttributeId>(rng.Uniform(attributes));
  if (rng.Chance(set_percent)) {
    static constexpr Op kSetOps[] = {Op::kIn, Op::kNotIn, Op::kExists,
                                     Op::kNotExists};
    p.op = kSetOps[rng.Uniform(4)];
    if (p.op == Op::kIn || p.op == Op::kNotIn) {
      const uint64_t n = 1 + rng.Uniform(4);
      for (uint64_t i = 0; i < n; ++i) {
        p.values.push_back(RandomValue(rng, domain));
      }
    }
    return p;
  }
  p.op = static_cast<Op>(1 + rng.Uniform(7));
  p.value = RandomValue(rng, domain);
  if (p.op == Op::kBetween) {
    int64_t upper = rng.Chance(15) ? p.value : RandomValue(rng, domain);
    if (upper < p.value) std::swap(upper, p.value);
    p.upper = upper;
  }
  return p;
}

// The shape of a randomized differential workload. kMixed: every operator
// over up to 8 attributes and a tiny domain, so predicates are shared and
// often hold. kSets: the same, three predicates in four of them IN, NOT_IN,
// EXISTS or NOT_EXISTS. kRangeOnly: subscriptions without an equality
// (LT, LE, GT, GE, BETWEEN, NE) over 1-2 attributes, many of them, so that
// the per-attribute lists of lead ranges grow past their unsorted tails,
// merge and compact (cluster_store.h), over a wider domain, so the leads
// differ.
struct Shape {
  uint32_t max_attributes;
  int64_t max_domain;
  int min_adds;  // subscriptions added per round: min_adds + [0, add_span)
  int add_span;
  bool ranges_only;
  int set_percent = 25;  // RandomPredicate's
};
inline constexpr Shape kMixed = {8, 12, 20, 200, false};
inline constexpr Shape kRangeOnly = {2, 3000, 300, 1200, true};
// Mostly IN, NOT_IN, EXISTS and NOT_EXISTS, among the other operators.
inline constexpr Shape kSets = {8, 12, 20, 200, false, 75};

// A predicate of `shape`: kRangeOnly never draws EQ or IN.
inline Predicate RandomPredicate(Rng& rng, uint32_t attributes,
                                 int64_t domain, const Shape& shape) {
  Predicate p = RandomPredicate(rng, attributes, domain, shape.set_percent);
  while (shape.ranges_only && (p.op == Op::kEq || p.op == Op::kIn)) {
    p = RandomPredicate(rng, attributes, domain, shape.set_percent);
  }
  return p;
}

// A subscription of 1 to `max_predicates` predicates of any operator.
inline Subscription RandomSubscription(Rng& rng, uint32_t attributes,
                                       int64_t domain, int max_predicates) {
  Subscription s;
  for (int k = 0, n = 1 + rng.Uniform(max_predicates); k < n; ++k) {
    s.push_back(RandomPredicate(rng, attributes, domain));
  }
  return s;
}

inline Event RandomEvent(Rng& rng, uint32_t attributes, int64_t domain) {
  Event e;
  for (uint32_t a = 0; a < attributes; ++a) {
    if (!rng.Chance(60)) continue;
    AttributeValue av{a, RandomValue(rng, domain)};
    // With an odd seed, one value in five a number with a fraction
    // (between value and value + 1), beside integers.
    av.half_above = rng.fractions() &&
                    av.value != std::numeric_limits<int64_t>::max() &&
                    rng.Chance(20);
    e.push_back(av);
  }
  // Attribute order must not matter.
  for (size_t i = e.size(); i > 1; --i) std::swap(e[i - 1], e[rng.Uniform(i)]);
  return e;
}

inline std::string FormatSubscription(const Subscription& s) {
  std::string out = absl::StrCat("S ", s.size());
  for (const Predicate& p : s) absl::StrAppend(&out, " ", DebugString(p));
  return out;
}

inline std::string FormatEvent(const Event& e) {
  std::string out = absl::StrCat("E ", e.size());
  for (const AttributeValue& av : e) {
    // "5.5" for a number between 5 and 6, "-4.5" between -5 and -4: only
    // the floor is known.
    if (!av.half_above) {
      absl::StrAppend(&out, " a", av.attribute, " ", av.value);
    } else if (av.value >= 0) {
      absl::StrAppend(&out, " a", av.attribute, " ", av.value, ".5");
    } else {
      absl::StrAppend(&out, " a", av.attribute, " -", -(av.value + 1), ".5");
    }
  }
  return out;
}

}  // namespace test_util
}  // namespace matcher
}  // namespace cohort

#endif  // COHORT_MATCHER_INDEX_TEST_UTIL_H_
