// Test helpers for service/: random subscriptions and events at the API
// level (cohort.v1 messages) and an oracle that evaluates them directly from
// the API's definition, independent of interning and of the matcher.
//
// Thread safety: the functions are pure; each caller passes its own Rng.
#ifndef COHORT_SERVICE_STAGES_TEST_UTIL_H_
#define COHORT_SERVICE_STAGES_TEST_UTIL_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/api_reference.h"
#include "service/stages/engine_options.h"

namespace cohort {
namespace service {
namespace testing {

using Rng = std::mt19937_64;

// One engine/server configuration of a parameterised test.
struct Config {
  std::string mode;  // "staged" or "threaded"
  uint32_t partitions;
  uint32_t cohort_max;
  // staged: --index ("partitioned", "sharded_phase1" or "replicated")
  std::string layout = "partitioned";
  // partitioned: --cohorts_in_flight (0: the default for `partitions`)
  uint32_t cohorts_in_flight = 0;
  // partitioned: 0, or EngineOptions' phase1_inline_positions and
  // phase1_batch_positions both, so that small indexes' cohorts hand their
  // phase-1 tasks out (1: every task alone)
  uint64_t handout_positions = 0;
  // partitioned: --index_copies (must divide `partitions`)
  uint32_t copies = 1;
  // partitioned and replicated: --phase2_stealing
  bool steal = true;
  // partitioned and replicated: --steal_units (0: the default)
  uint32_t units = 0;
};

// Sets what `config` says of the staged engine's layout in *options.
inline void ApplyLayout(const Config& config, EngineOptions* options) {
  options->index_layout = *ParseIndexLayout(config.layout);
  options->cohorts_in_flight = config.cohorts_in_flight;
  if (config.handout_positions > 0) {
    options->phase1_inline_positions = config.handout_positions;
    options->phase1_batch_positions = config.handout_positions;
  }
  options->index_copies = config.copies;
  options->phase2_stealing = config.steal;
  options->steal_units = config.units;
}

inline std::string ConfigName(const ::testing::TestParamInfo<Config>& info) {
  return absl::StrCat(info.param.mode, "_p", info.param.partitions, "_c",
                      info.param.cohort_max,
                      info.param.mode == "staged"
                          ? absl::StrCat("_", info.param.layout)
                          : "",
                      info.param.cohorts_in_flight > 0
                          ? absl::StrCat("_b", info.param.cohorts_in_flight)
                          : "",
                      info.param.handout_positions > 0
                          ? absl::StrCat("_h", info.param.handout_positions)
                          : "",
                      info.param.copies > 1
                          ? absl::StrCat("_g", info.param.copies)
                          : "",
                      info.param.steal ? "" : "_nosteal",
                      info.param.units > 0
                          ? absl::StrCat("_u", info.param.units)
                          : "");
}

// Values from a small domain, so that predicates are often satisfied, plus
// the int64 extremes now and then.
inline int64_t RandomValue(Rng& rng, int domain) {
  switch (rng() % 16) {
    case 0:
      return std::numeric_limits<int64_t>::min();
    case 1:
      return std::numeric_limits<int64_t>::max();
    default:
      return static_cast<int64_t>(rng() % (2 * domain + 1)) - domain;
  }
}

inline std::string AttributeName(int i) { return absl::StrCat("a", i); }

// A few strings, some prefixes or suffixes of others, some equal to
// others but for case ("\xc3\x89" is É, "\xc3\xa9" é), one with a byte
// that is not UTF-8, and IP addresses.
inline std::string RandomString(Rng& rng) {
  static const char* const kStrings[] = {
      "",         "a",           "ab",          "abc",
      "b",        "bc",          "\xff",       "b\xff",
      "A",        "aB",          "\xc3\x89",  "\xc3\xa9",
      "10.1.2.3", "10.200.0.1",  "2001:db8::1", "2001:db8::8000:0:0:1",
      "::ffff:10.1.2.3", "2001:db9::8000:0:0:1"};
  return kStrings[rng() % 18];
}

// Patterns for OP_WILDCARD and OP_NOT_WILDCARD: a star at either end, in
// the middle, alone, with overlapping sides ("a*a" needs 2 bytes),
// escaped, none, and several stars.
inline std::string RandomPattern(Rng& rng) {
  static const char* const kPatterns[] = {
      "*",   "a*",   "*b",   "a*b",  "a*a",   "ab",  "\\*",
      "*\xff", "b\\**", "*c", "a*b*", "*a*a*", "a*\xff*b", "*b*"};
  return kPatterns[rng() % 14];
}

// Networks for OP_CIDR, of both families and prefix lengths around the
// byte and word edges.
inline std::string RandomNetwork(Rng& rng) {
  static const char* const kNetworks[] = {
      "10.0.0.0/8",    "10.1.0.0/16", "0.0.0.0/0",   "10.1.2.3",
      "10.128.0.0/9",  "::/0",        "2001:db8::/32", "2001:db8::1/128",
      "2001:db8::8000:0:0:0/65", "2001:db8::/64"};
  return kNetworks[rng() % 10];
}

// One predicate in three is typed (issue 19): a string operand (EQ, NE,
// IN, NOT_IN, PREFIX, SUFFIX, EQUALS_IGNORE_CASE, NOT_PREFIX, NOT_SUFFIX,
// CIDR, WILDCARD, NOT_WILDCARD, NOT_EQUALS_IGNORE_CASE, LT, GE, BETWEEN;
// the two ignoring case also with lists), an int64 set, or EXISTS /
// NOT_EXISTS.
inline v1::Predicate RandomPredicate(Rng& rng, int attributes, int domain) {
  v1::Predicate p;
  p.set_attribute(AttributeName(static_cast<int>(rng() % attributes)));
  if (rng() % 3 == 0) {
    static const v1::Op kOps[] = {
        v1::OP_EQ,     v1::OP_NE,     v1::OP_IN,         v1::OP_NOT_IN,
        v1::OP_PREFIX, v1::OP_EXISTS, v1::OP_NOT_EXISTS, v1::OP_LT,
        v1::OP_GE,     v1::OP_BETWEEN, v1::OP_SUFFIX,
        v1::OP_EQUALS_IGNORE_CASE, v1::OP_NOT_PREFIX, v1::OP_NOT_SUFFIX,
        v1::OP_CIDR,   v1::OP_WILDCARD, v1::OP_NOT_EQUALS_IGNORE_CASE,
        v1::OP_NOT_WILDCARD, v1::OP_PREFIX_IGNORE_CASE,
        v1::OP_SUFFIX_IGNORE_CASE};
    p.set_op(kOps[rng() % 20]);
    if ((p.op() == v1::OP_EQUALS_IGNORE_CASE ||
         p.op() == v1::OP_NOT_EQUALS_IGNORE_CASE) &&
        rng() % 2 == 0) {
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        p.mutable_string_values()->add_values(RandomString(rng));
      }
      return p;
    }
    if (p.op() == v1::OP_CIDR) {
      p.set_string_value(RandomNetwork(rng));
      return p;
    }
    if (p.op() == v1::OP_WILDCARD || p.op() == v1::OP_NOT_WILDCARD) {
      p.set_string_value(RandomPattern(rng));
      return p;
    }
    const bool excluded =
        p.op() == v1::OP_NOT_PREFIX || p.op() == v1::OP_NOT_SUFFIX;
    const bool strings = rng() % 4 != 0 || p.op() == v1::OP_PREFIX ||
                         p.op() == v1::OP_SUFFIX ||
                         p.op() == v1::OP_EQUALS_IGNORE_CASE ||
                         p.op() == v1::OP_NOT_EQUALS_IGNORE_CASE ||
                         p.op() == v1::OP_PREFIX_IGNORE_CASE ||
                         p.op() == v1::OP_SUFFIX_IGNORE_CASE || excluded;
    switch (p.op()) {
      case v1::OP_EXISTS:
      case v1::OP_NOT_EXISTS:
        break;
      case v1::OP_IN:
      case v1::OP_NOT_IN:
        for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
          if (strings) {
            p.mutable_string_values()->add_values(RandomString(rng));
          } else {
            p.mutable_int64_values()->add_values(RandomValue(rng, domain));
          }
        }
        break;
      default:
        if (strings) {
          std::string low = RandomString(rng);
          if (p.op() == v1::OP_BETWEEN) {
            std::string high = RandomString(rng);
            if (high < low) std::swap(low, high);
            p.set_string_upper(high);
          }
          if (excluded && low.empty()) low = "a";  // 1 byte or more
          p.set_string_value(low);
        } else {
          int64_t low = RandomValue(rng, domain);
          if (p.op() == v1::OP_BETWEEN) {
            int64_t high = RandomValue(rng, domain);
            if (high < low) std::swap(low, high);
            p.set_upper(high);
          }
          p.set_value(low);
        }
    }
    return p;
  }
  p.set_op(static_cast<v1::Op>(1 + rng() % 7));
  int64_t a = RandomValue(rng, domain);
  int64_t b = RandomValue(rng, domain);
  if (p.op() == v1::OP_BETWEEN && a > b) std::swap(a, b);
  p.set_value(a);
  if (p.op() == v1::OP_BETWEEN) p.set_upper(b);
  return p;
}

// 1 to 4 predicates; or, one time in four, an "or" subscription: 0 to 2
// predicates and 1 or 2 groups of any_of, each of 2 or 3 alternatives of 1
// or 2 predicates (several of its branches often match one event).
inline v1::SubscriptionSpec RandomSpec(Rng& rng, const std::string& subscriber,
                                       int attributes, int domain) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber(subscriber);
  const bool any_of = rng() % 4 == 0;
  const int n = any_of ? static_cast<int>(rng() % 3)
                       : 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    *spec.add_predicates() = RandomPredicate(rng, attributes, domain);
  }
  if (!any_of) return spec;
  const int groups = 1 + static_cast<int>(rng() % 2);
  for (int g = 0; g < groups; ++g) {
    v1::AnyOf* group = spec.add_any_of();
    const int alternatives = 2 + static_cast<int>(rng() % 2);
    for (int k = 0; k < alternatives; ++k) {
      v1::Conjunction* alternative = group->add_alternatives();
      const int m = 1 + static_cast<int>(rng() % 2);
      for (int i = 0; i < m; ++i) {
        *alternative->add_predicates() =
            RandomPredicate(rng, attributes, domain);
      }
    }
  }
  return spec;
}

// An event over a random subset of `attributes` (+1: an attribute no
// subscription names, which must not matter), with `payload`.
inline v1::Event RandomEvent(Rng& rng, int attributes, int domain,
                             const std::string& payload) {
  v1::Event event;
  for (int a = 0; a <= attributes; ++a) {
    if (rng() % 4 == 0) continue;
    v1::Attribute* attribute = event.add_attributes();
    attribute->set_name(AttributeName(a));
    if (rng() % 3 == 0) {
      attribute->set_string_value(RandomString(rng));
    } else {
      attribute->set_value(RandomValue(rng, domain));
    }
  }
  if (event.attributes_size() == 0) {
    v1::Attribute* attribute = event.add_attributes();
    attribute->set_name(AttributeName(0));
    attribute->set_value(0);
  }
  event.set_payload(payload);
  return event;
}

// The API's definition of a match (docs/DESIGN.md section 1; pubsub.proto for
// types, strings and existence): api_reference.h.
// A random JSON event (Event.json) over the same attributes and values as
// RandomEvent: each present attribute a number, a string (the UTF-8 ones
// of RandomString) or an array of 1 to 3 of them, so that an event becomes
// several records (the engine merges them back).
inline v1::Event RandomJsonEvent(Rng& rng, int attributes, int domain,
                                 const std::string& payload) {
  auto scalar = [&]() -> std::string {
    if (rng() % 3 == 0) {
      const std::string s = RandomString(rng);
      if (s.find('\xff') == std::string::npos) {
        return absl::StrCat("\"", s, "\"");
      }
    }
    return absl::StrCat(RandomValue(rng, domain));
  };
  std::vector<std::string> fields;
  for (int a = 0; a <= attributes; ++a) {
    if (rng() % 4 == 0) continue;
    std::string value;
    if (rng() % 2 == 0) {
      value = scalar();
    } else {
      std::vector<std::string> elements;
      for (uint64_t n = 1 + rng() % 3; n > 0; --n) elements.push_back(scalar());
      value = absl::StrCat("[", absl::StrJoin(elements, ","), "]");
    }
    fields.push_back(absl::StrCat("\"", AttributeName(a), "\":", value));
  }
  v1::Event event;
  event.set_json(absl::StrCat("{", absl::StrJoin(fields, ","), "}"));
  event.set_payload(payload);
  return event;
}

inline bool Matches(const v1::SubscriptionSpec& spec, const v1::Event& event) {
  return ApiMatches(spec, event);
}

// Matches for one event against many subscriptions: a JSON event's
// readings are worked out once (ApiJsonEvent), not per subscription.
class EventOracle {
 public:
  explicit EventOracle(const v1::Event& event) : event_(event) {
    if (!event.json().empty()) json_.emplace(event);
  }
  bool Matches(const v1::SubscriptionSpec& spec) const {
    return json_.has_value() ? json_->Matches(spec) : ApiMatches(spec, event_);
  }

 private:
  const v1::Event& event_;
  std::optional<ApiJsonEvent> json_;
};

}  // namespace testing
}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_TEST_UTIL_H_
