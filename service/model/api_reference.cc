#include "service/model/api_reference.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <simdjson.h>

#include "absl/strings/match.h"
#include "service/model/case_fold.h"
#include "service/model/ip_network.h"
#include "service/model/limits.h"

namespace cohort {
namespace service {
namespace {

// Byte-wise order, unsigned, the shorter first on a common prefix.
int Compare(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = static_cast<unsigned char>(a[i]);
    const unsigned char y = static_cast<unsigned char>(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

template <typename T, typename Cmp>
bool Compares(v1::Op op, const T& x, const T& value, const T& upper,
              Cmp cmp) {
  switch (op) {
    case v1::OP_EQ:
      return cmp(x, value) == 0;
    case v1::OP_NE:
      return cmp(x, value) != 0;
    case v1::OP_LT:
      return cmp(x, value) < 0;
    case v1::OP_LE:
      return cmp(x, value) <= 0;
    case v1::OP_GT:
      return cmp(x, value) > 0;
    case v1::OP_GE:
      return cmp(x, value) >= 0;
    case v1::OP_BETWEEN:
      return cmp(value, x) <= 0 && cmp(x, upper) <= 0;
    default:
      return false;
  }
}

// Numbers compare as numbers, int64 and double alike: an x87 long double
// (a 64-bit significand) holds every int64 and every double exactly.
int CompareNumbers(long double a, long double b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

long double NumberOf(const v1::Attribute& a) {
  return a.kind_case() == v1::Attribute::kDoubleValue
             ? static_cast<long double>(a.double_value())
             : static_cast<long double>(a.value());
}

// Event Ruler's wildcard over bytes, read straight from the pattern (any
// number of stars; "\*" and "\\" literal): the plain backtracking glob,
// apart from the lowering's prefix, suffix and length.
bool Glob(absl::string_view pattern, absl::string_view s) {
  size_t p = 0, i = 0;
  size_t star_p = absl::string_view::npos, star_i = 0;
  while (i < s.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star_p = ++p;
      star_i = i;
      continue;
    }
    if (p < pattern.size()) {
      const bool escaped = pattern[p] == '\\' && p + 1 < pattern.size();
      const char want = escaped ? pattern[p + 1] : pattern[p];
      if (want == s[i]) {
        p += escaped ? 2 : 1;
        ++i;
        continue;
      }
    }
    if (star_p == absl::string_view::npos) return false;
    p = star_p;
    i = ++star_i;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool ApiHolds(const v1::Predicate& p, const v1::Event& event) {
  const v1::Attribute* found = nullptr;
  for (const v1::Attribute& a : event.attributes()) {
    if (a.name() == p.attribute()) {
      found = &a;
      break;
    }
  }
  if (found == nullptr) return p.op() == v1::OP_NOT_EXISTS;
  if (p.op() == v1::OP_NOT_EXISTS) return false;
  if (p.op() == v1::OP_EXISTS) return true;
  // A literal is a type of its own: only EQ and NE with a literal operand
  // compare it, and they compare nothing else.
  const bool event_literal =
      found->kind_case() == v1::Attribute::kLiteralValue;
  const bool operand_literal =
      p.operand_case() == v1::Predicate::kLiteralValue;
  if (event_literal || operand_literal) {
    if (!event_literal || !operand_literal) return false;
    const bool same = found->literal_value() == p.literal_value();
    return p.op() == v1::OP_EQ ? same : p.op() == v1::OP_NE && !same;
  }
  const bool event_string = found->kind_case() == v1::Attribute::kStringValue;
  const bool operand_string =
      p.operand_case() == v1::Predicate::kStringValue ||
      p.operand_case() == v1::Predicate::kStringValues;
  if (p.op() == v1::OP_PREFIX) {
    return event_string && operand_string &&
           absl::StartsWith(found->string_value(), p.string_value());
  }
  if (p.op() == v1::OP_SUFFIX) {
    return event_string && operand_string &&
           absl::EndsWith(found->string_value(), p.string_value());
  }
  if (p.op() == v1::OP_PREFIX_IGNORE_CASE ||
      p.op() == v1::OP_SUFFIX_IGNORE_CASE) {
    if (!event_string || !operand_string) return false;
    const std::string x = FoldCase(found->string_value());
    const std::string v = FoldCase(p.string_value());
    return p.op() == v1::OP_PREFIX_IGNORE_CASE ? absl::StartsWith(x, v)
                                               : absl::EndsWith(x, v);
  }
  if (p.op() == v1::OP_NOT_PREFIX) {
    return event_string && operand_string &&
           !absl::StartsWith(found->string_value(), p.string_value());
  }
  if (p.op() == v1::OP_NOT_SUFFIX) {
    return event_string && operand_string &&
           !absl::EndsWith(found->string_value(), p.string_value());
  }
  if (p.op() == v1::OP_WILDCARD || p.op() == v1::OP_NOT_WILDCARD) {
    return event_string && operand_string &&
           Glob(p.string_value(), found->string_value()) ==
               (p.op() == v1::OP_WILDCARD);
  }
  if (p.op() == v1::OP_CIDR) {
    if (!event_string || !operand_string) return false;
    const std::optional<IpAddress> address =
        ParseIpAddress(found->string_value());
    const std::optional<IpNetwork> network = ParseIpNetwork(p.string_value());
    return address.has_value() && network.has_value() &&
           InNetwork(*address, *network);
  }
  if (p.op() == v1::OP_EQUALS_IGNORE_CASE ||
      p.op() == v1::OP_NOT_EQUALS_IGNORE_CASE) {
    if (!event_string || !operand_string) return false;
    const std::string x = FoldCase(found->string_value());
    bool equal = false;
    if (p.operand_case() == v1::Predicate::kStringValue) {
      equal = x == FoldCase(p.string_value());
    }
    for (const std::string& v : p.string_values().values()) {
      equal = equal || x == FoldCase(v);
    }
    return equal == (p.op() == v1::OP_EQUALS_IGNORE_CASE);
  }
  if (event_string != operand_string) return false;
  if (p.op() == v1::OP_IN || p.op() == v1::OP_NOT_IN) {
    bool in;
    if (event_string) {
      const auto& values = p.string_values().values();
      in = std::find(values.begin(), values.end(), found->string_value()) !=
           values.end();
    } else {
      // Numbers as numbers: an int64 list or a double list, either way.
      const long double x = NumberOf(*found);
      in = false;
      for (int64_t v : p.int64_values().values()) in |= x == v;
      for (double v : p.double_values().values()) {
        in |= x == static_cast<long double>(v);
      }
    }
    return p.op() == v1::OP_IN ? in : !in;
  }
  if (event_string) {
    return Compares(p.op(), found->string_value(), p.string_value(),
                    p.string_upper(), Compare);
  }
  const long double value = p.operand_case() == v1::Predicate::kDoubleValue
                                ? static_cast<long double>(p.double_value())
                                : static_cast<long double>(p.value());
  const long double upper =
      p.upper_operand_case() == v1::Predicate::kDoubleUpper
          ? static_cast<long double>(p.double_upper())
          : static_cast<long double>(p.upper());
  return Compares(p.op(), NumberOf(*found), value, upper, CompareNumbers);
}

namespace {

// True iff every predicate of `predicates` holds by `holds`, and every
// group of `any_of` has an alternative whose predicates all do.
template <typename Holds>
bool AllHold(const v1::SubscriptionSpec& spec, const Holds& holds) {
  for (const v1::Predicate& p : spec.predicates()) {
    if (!holds(p)) return false;
  }
  for (const v1::AnyOf& group : spec.any_of()) {
    bool some = false;
    for (const v1::Conjunction& alternative : group.alternatives()) {
      some = true;
      for (const v1::Predicate& p : alternative.predicates()) {
        if (!holds(p)) {
          some = false;
          break;
        }
      }
      if (some) break;
    }
    if (!some) return false;
  }
  return true;
}

}  // namespace

bool ApiMatches(const v1::SubscriptionSpec& spec, const v1::Event& event) {
  if (!event.json().empty()) return ApiMatchesJson(spec, event);
  return AllHold(spec, [&event](const v1::Predicate& p) {
    return ApiHolds(p, event);
  });
}

namespace {

// One way to read a JSON value: the attributes it gives.
using Reading = std::vector<v1::Attribute>;

// Every reading of `e` at `path`: a scalar one, an object the product of
// its fields' readings, an array the union of its elements' (none: one
// empty reading).
std::vector<Reading> Readings(const simdjson::dom::element& e,
                              const std::string& path) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT: {
      std::vector<Reading> all = {Reading()};
      const simdjson::dom::object fields = e.get_object().value_unsafe();
      for (const auto [key, value] : fields) {
        const std::string child = path.empty()
                                      ? std::string(key)
                                      : path + "." + std::string(key);
        std::vector<Reading> next;
        for (const Reading& left : all) {
          for (const Reading& right : Readings(value, child)) {
            Reading r = left;
            r.insert(r.end(), right.begin(), right.end());
            next.push_back(std::move(r));
          }
        }
        all = std::move(next);
      }
      return all;
    }
    case element_type::ARRAY: {
      std::vector<Reading> all;
      const simdjson::dom::array elements = e.get_array().value_unsafe();
      for (const simdjson::dom::element x : elements) {
        for (Reading& r : Readings(x, path)) all.push_back(std::move(r));
      }
      if (all.empty()) all.push_back(Reading());
      return all;
    }
    default:
      break;
  }
  if (!IsValidAttributeName(path)) return {Reading()};
  v1::Attribute a;
  a.set_name(path);
  switch (e.type()) {
    case element_type::INT64:
      a.set_value(e.get_int64().value_unsafe());
      break;
    case element_type::UINT64:
      a.set_double_value(static_cast<double>(e.get_uint64().value_unsafe()));
      break;
    case element_type::DOUBLE:
      a.set_double_value(e.get_double().value_unsafe());
      break;
    case element_type::STRING:
      a.set_string_value(std::string(e.get_string().value_unsafe()));
      break;
    case element_type::BOOL:
      a.set_literal_value(e.get_bool().value_unsafe() ? v1::LITERAL_TRUE
                                                      : v1::LITERAL_FALSE);
      break;
    default:
      a.set_literal_value(v1::LITERAL_NULL);
      break;
  }
  return {Reading{a}};
}

}  // namespace

ApiJsonEvent::ApiJsonEvent(const v1::Event& event) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(event.json().data(), event.json().size()).get(root) !=
      simdjson::SUCCESS) {
    return;
  }
  // EXISTS and NOT_EXISTS: a value at the path in any reading, or an
  // attribute of that name.
  for (const v1::Attribute& a : event.attributes()) present_.insert(a.name());
  for (const Reading& r : Readings(root, "")) {
    v1::Event one;
    *one.mutable_attributes() = event.attributes();
    for (const v1::Attribute& a : r) {
      present_.insert(a.name());
      *one.add_attributes() = a;
    }
    readings_.push_back(std::move(one));
  }
}

bool ApiJsonEvent::Matches(const v1::SubscriptionSpec& spec) const {
  for (const v1::Event& one : readings_) {
    const bool all = AllHold(spec, [this, &one](const v1::Predicate& p) {
      if (p.op() == v1::OP_EXISTS || p.op() == v1::OP_NOT_EXISTS) {
        const bool here = present_.count(p.attribute()) > 0;
        return here == (p.op() == v1::OP_EXISTS);
      }
      return ApiHolds(p, one);
    });
    if (all) return true;
  }
  return false;
}

bool ApiMatchesJson(const v1::SubscriptionSpec& spec,
                    const v1::Event& event) {
  return ApiJsonEvent(event).Matches(spec);
}

}  // namespace service
}  // namespace cohort
