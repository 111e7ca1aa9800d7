#include "bench/intervals.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "matcher/types.h"

namespace cohort {
namespace bench {

using workload::Workload;

using matcher::AttributeValue;
using matcher::Op;
using matcher::Predicate;

absl::StatusOr<NePolicy> ParseNePolicy(absl::string_view name) {
  if (name == "drop_subscriptions") return NePolicy::kDropSubscriptions;
  if (name == "drop_predicates") return NePolicy::kDropPredicates;
  return absl::InvalidArgumentError(
      absl::StrCat("--ne: '", name,
                   "' is neither 'drop_subscriptions' nor 'drop_predicates'"));
}

Workload DropNe(const Workload& in, NePolicy policy, DropNeStats* stats) {
  Workload out;
  out.attribute_names = in.attribute_names;
  out.events = in.events;
  out.subscriptions.reserve(in.subscriptions.size());
  for (const std::vector<Predicate>& sub : in.subscriptions) {
    const int64_t ne = std::count_if(
        sub.begin(), sub.end(), [](const Predicate& p) { return p.op == Op::kNe; });
    if (ne == 0) {
      out.subscriptions.push_back(sub);
      continue;
    }
    stats->predicates_dropped += ne;
    if (policy == NePolicy::kDropSubscriptions ||
        ne == static_cast<int64_t>(sub.size())) {
      ++stats->subscriptions_dropped;
      continue;
    }
    std::vector<Predicate> kept;
    kept.reserve(sub.size() - ne);
    for (const Predicate& p : sub) {
      if (p.op != Op::kNe) kept.push_back(p);
    }
    out.subscriptions.push_back(std::move(kept));
  }
  out.options = in.options;
  out.options.preset = absl::StrCat(in.options.preset, "-no-ne");
  out.options.subscriptions = static_cast<int64_t>(out.subscriptions.size());
  out.options.events = static_cast<int64_t>(out.events.size());
  return out;
}

absl::StatusOr<IntervalWorkload> ToIntervals(const Workload& w) {
  const size_t attributes = w.attribute_names.size();
  // Every value an attribute's predicates or events name, sorted, unique.
  std::vector<std::vector<int64_t>> values(attributes);
  for (const std::vector<Predicate>& sub : w.subscriptions) {
    for (const Predicate& p : sub) {
      if (p.op == Op::kNe) {
        return absl::InvalidArgumentError(
            "an NE predicate has no interval form; drop it first (DropNe)");
      }
      if (p.op == Op::kIn || p.op == Op::kNotIn || p.op == Op::kExists ||
          p.op == Op::kNotExists) {
        return absl::InvalidArgumentError(absl::StrCat(
            "an ", matcher::OpName(p.op),
            " predicate has no interval form (typed workloads such as "
            "events-1m are not for the interval matchers)"));
      }
      values[p.attribute].push_back(p.value);
      if (p.op == Op::kBetween) values[p.attribute].push_back(p.upper);
    }
  }
  for (const std::vector<AttributeValue>& event : w.events) {
    for (const AttributeValue& av : event) {
      values[av.attribute].push_back(av.value);
    }
  }
  size_t widest = 0;
  for (std::vector<int64_t>& v : values) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    widest = std::max(widest, v.size());
  }
  constexpr size_t kMaxValues = std::numeric_limits<int32_t>::max() - 2;
  if (widest > kMaxValues) {
    return absl::InvalidArgumentError(
        absl::StrCat("an attribute has ", widest, " distinct values; at most ",
                     kMaxValues, " fit the interval form"));
  }
  // rank(x) = 1 + the index of x among its attribute's values.
  auto rank = [&values](uint32_t attribute, int64_t x) {
    const std::vector<int64_t>& v = values[attribute];
    return static_cast<int32_t>(
        1 + (std::lower_bound(v.begin(), v.end(), x) - v.begin()));
  };

  IntervalWorkload out;
  out.attributes = static_cast<uint32_t>(attributes);
  out.domain = static_cast<int32_t>(widest + 2);
  const int32_t top = out.domain - 1;
  out.subscriptions.reserve(w.subscriptions.size());
  for (const std::vector<Predicate>& sub : w.subscriptions) {
    std::vector<IntervalPredicate> intervals;
    intervals.reserve(sub.size());
    for (const Predicate& p : sub) {
      const int32_t r = rank(p.attribute, p.value);
      IntervalPredicate ip{p.attribute, 0, top};
      switch (p.op) {
        case Op::kEq:
          ip.lo = ip.hi = r;
          break;
        case Op::kLt:
          ip.hi = r - 1;
          break;
        case Op::kLe:
          ip.hi = r;
          break;
        case Op::kGt:
          ip.lo = r + 1;
          break;
        case Op::kGe:
          ip.lo = r;
          break;
        case Op::kBetween:
          ip.lo = r;
          ip.hi = rank(p.attribute, p.upper);
          break;
        case Op::kNe:
        case Op::kIn:
        case Op::kNotIn:
        case Op::kExists:
        case Op::kNotExists:
          break;  // refused above
      }
      intervals.push_back(ip);
    }
    out.subscriptions.push_back(std::move(intervals));
  }
  out.events.reserve(w.events.size());
  for (const std::vector<AttributeValue>& event : w.events) {
    std::vector<std::pair<uint32_t, int32_t>> ranked;
    ranked.reserve(event.size());
    for (const AttributeValue& av : event) {
      ranked.emplace_back(av.attribute, rank(av.attribute, av.value));
    }
    out.events.push_back(std::move(ranked));
  }
  return out;
}

bool MatchesIntervals(const std::vector<IntervalPredicate>& subscription,
                      const std::vector<std::pair<uint32_t, int32_t>>& event) {
  for (const IntervalPredicate& p : subscription) {
    bool holds = false;
    for (const auto& [attribute, r] : event) {
      if (attribute == p.attribute) {
        holds = p.lo <= r && r <= p.hi;
        break;
      }
    }
    if (!holds) return false;
  }
  return true;
}

void WriteIntervals(const IntervalWorkload& w,
                    const std::vector<int64_t>& expected, std::ostream& out) {
  std::string buffer = absl::StrCat(
      "intervals v1 attributes=", w.attributes, " domain=", w.domain,
      " subscriptions=", w.subscriptions.size(), " events=", w.events.size(),
      "\n");
  auto flush = [&]() {
    if (buffer.size() < (1 << 20)) return;
    out << buffer;
    buffer.clear();
  };
  for (const std::vector<IntervalPredicate>& sub : w.subscriptions) {
    absl::StrAppend(&buffer, "S ", sub.size());
    for (const IntervalPredicate& p : sub) {
      absl::StrAppend(&buffer, " ", p.attribute, " ", p.lo, " ", p.hi);
    }
    buffer.push_back('\n');
    flush();
  }
  for (size_t i = 0; i < w.events.size(); ++i) {
    absl::StrAppend(&buffer, "E ", expected[i], " ", w.events[i].size());
    for (const auto& [attribute, r] : w.events[i]) {
      absl::StrAppend(&buffer, " ", attribute, " ", r);
    }
    buffer.push_back('\n');
    flush();
  }
  out << buffer;
}

}  // namespace bench
}  // namespace cohort
