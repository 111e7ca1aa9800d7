#include "service/model/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "filter/parse.h"
#include "filter/pattern.h"
#include "service/model/ip_network.h"
#include "service/model/json_event.h"
#include "service/model/numbers.h"
#include "service/model/wildcard.h"

namespace cohort {
namespace service {
namespace {

// The matcher numbers its operators as the proto does, so a validated op
// converts with a cast.
static_assert(static_cast<int>(matcher::Op::kEq) == v1::OP_EQ, "");
static_assert(static_cast<int>(matcher::Op::kNe) == v1::OP_NE, "");
static_assert(static_cast<int>(matcher::Op::kLt) == v1::OP_LT, "");
static_assert(static_cast<int>(matcher::Op::kLe) == v1::OP_LE, "");
static_assert(static_cast<int>(matcher::Op::kGt) == v1::OP_GT, "");
static_assert(static_cast<int>(matcher::Op::kGe) == v1::OP_GE, "");
static_assert(static_cast<int>(matcher::Op::kBetween) == v1::OP_BETWEEN, "");
static_assert(static_cast<int>(matcher::Op::kIn) == v1::OP_IN, "");
static_assert(static_cast<int>(matcher::Op::kNotIn) == v1::OP_NOT_IN, "");
static_assert(static_cast<int>(matcher::Op::kExists) == v1::OP_EXISTS, "");
static_assert(static_cast<int>(matcher::Op::kNotExists) == v1::OP_NOT_EXISTS,
              "");

// Up to this many attributes, an event's names are checked for duplicates by
// comparing every pair: for the small events that dominate real workloads
// that is faster than filling a hash map. Larger events use the map, so the
// cost stays linear up to --max_event_attributes.
constexpr int kPairwiseDuplicateScanMax = 16;

constexpr absl::string_view kAttributeNameRule =
    "[A-Za-z_][A-Za-z0-9_.-]{0,63}";

// The path of a field in a request, e.g. "subscriptions[3].predicates[0].op",
// kept as a chain of stack-allocated segments so that checking a valid
// request formats nothing; ToString() runs only for an error message.
struct FieldPath {
  static constexpr size_t kNoIndex = SIZE_MAX;

  const FieldPath* parent = nullptr;
  absl::string_view field;
  size_t index = kNoIndex;  // kNoIndex: the field itself, not an element

  std::string ToString() const {
    std::string out = parent == nullptr ? "" : parent->ToString() + ".";
    absl::StrAppend(&out, field);
    if (index != kNoIndex) absl::StrAppend(&out, "[", index, "]");
    return out;
  }
};

// "<path>: <message...>" as INVALID_ARGUMENT.
template <typename... Args>
absl::Status Invalid(const FieldPath& path, const Args&... message) {
  return absl::InvalidArgumentError(
      absl::StrCat(path.ToString(), ": ", message...));
}

// A character for an error message: 'x' if printable ASCII, else its byte
// value, so that messages stay readable whatever the input.
std::string DescribeChar(char c) {
  const unsigned char byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) {
    return absl::StrCat("'", std::string(1, c), "'");
  }
  return absl::StrCat("byte 0x", absl::Hex(byte, absl::kZeroPad2));
}

// Explains why `name` (known to be invalid) breaks the attribute name rule.
absl::Status InvalidAttributeName(const FieldPath& path,
                                  absl::string_view name) {
  if (name.empty()) {
    return Invalid(path, "empty; an attribute name is 1 to ",
                   kMaxAttributeNameLength, " characters matching ",
                   kAttributeNameRule);
  }
  if (name.size() > kMaxAttributeNameLength) {
    return Invalid(path, name.size(), " characters long; the limit is ",
                   kMaxAttributeNameLength, " (an attribute name matches ",
                   kAttributeNameRule, ")");
  }
  const std::string quoted = absl::StrCat("\"", absl::CHexEscape(name), "\"");
  if (!IsLetterOrUnderscore(name[0])) {
    return Invalid(path, quoted, " starts with ", DescribeChar(name[0]),
                   "; an attribute name starts with a letter or '_' (",
                   kAttributeNameRule, ")");
  }
  size_t i = 1;
  while (i < name.size() && IsAttributeNameChar(name[i])) ++i;
  return Invalid(path, quoted, " has ", DescribeChar(name[i]), " at position ",
                 i, ", which is not allowed; an attribute name matches ",
                 kAttributeNameRule);
}

absl::Status CheckAttributeName(const FieldPath& path, absl::string_view name) {
  if (IsValidAttributeName(name)) return absl::OkStatus();
  return InvalidAttributeName(path, name);
}

absl::Status CheckSubscriber(const FieldPath& path, absl::string_view name,
                             const Limits& limits) {
  if (name.empty()) {
    return Invalid(path, "empty; a subscriber name is required (1 to ",
                   limits.max_subscriber_bytes, " bytes)");
  }
  if (name.size() > limits.max_subscriber_bytes) {
    return Invalid(path, name.size(), " bytes; the limit is ",
                   limits.max_subscriber_bytes);
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char byte = static_cast<unsigned char>(name[i]);
    if (byte < 0x20 || byte == 0x7f) {
      return Invalid(path, "control character 0x",
                     absl::Hex(byte, absl::kZeroPad2), " at position ", i,
                     "; a subscriber name may not contain control characters");
    }
  }
  return absl::OkStatus();
}

// "subscriptions: 10001 entries; the limit is 10000 (--max_batch)".
absl::Status CheckBatch(absl::string_view field, int size,
                        const Limits& limits) {
  if (static_cast<size_t>(size) <= limits.max_batch) return absl::OkStatus();
  return Invalid(FieldPath{nullptr, field}, size, " entries; the limit is ",
                 limits.max_batch, " (--max_batch)");
}

absl::Status CheckString(const FieldPath& path, absl::string_view bytes,
                         const Limits& limits) {
  if (bytes.size() <= limits.max_string_bytes) return absl::OkStatus();
  return Invalid(path, bytes.size(), " bytes; the limit is ",
                 limits.max_string_bytes, " (--max_string_bytes)");
}

// The operand field a predicate set, for messages.
absl::string_view OperandName(const v1::Predicate& p) {
  switch (p.operand_case()) {
    case v1::Predicate::kValue:
      return "value";
    case v1::Predicate::kStringValue:
      return "string_value";
    case v1::Predicate::kInt64Values:
      return "int64_values";
    case v1::Predicate::kStringValues:
      return "string_values";
    case v1::Predicate::kDoubleValue:
      return "double_value";
    case v1::Predicate::kDoubleValues:
      return "double_values";
    case v1::Predicate::kLiteralValue:
      return "literal_value";
    default:
      return "nothing";
  }
}

// A literal value or operand: LITERAL_TRUE, LITERAL_FALSE or LITERAL_NULL.
absl::Status CheckLiteral(const FieldPath& path, int literal) {
  if (literal >= v1::LITERAL_TRUE && literal <= v1::LITERAL_NULL) {
    return absl::OkStatus();
  }
  return Invalid(path, literal,
                 " is not a literal; use LITERAL_TRUE, LITERAL_FALSE or "
                 "LITERAL_NULL");
}

// A double value or operand the API compares (numbers.h), or
// INVALID_ARGUMENT naming it.
absl::Status CheckDouble(const FieldPath& path, double d) {
  const std::string why = WhyNotComparable(d);
  if (why.empty()) return absl::OkStatus();
  return Invalid(path, why);
}

// A numeric operand: an int64 or a double.
struct NumberOperand {
  bool is_double;
  int64_t integer;
  double d;
};

}  // namespace

absl::Status CheckOperandRules(const v1::Predicate& predicate) {
  const v1::Op op = predicate.op();
  const std::string& value = predicate.string_value();
  if ((op == v1::OP_NOT_PREFIX || op == v1::OP_NOT_SUFFIX) && value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "empty; ", v1::Op_Name(op),
        " needs 1 byte or more (every string starts and ends with the empty "
        "string, so it would never hold)"));
  }
  if (op == v1::OP_CIDR && !ParseIpNetwork(value).has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", absl::CHexEscape(value.substr(0, 64)),
        "\" is not an IPv4 or IPv6 network (an address, and optionally \"/\" "
        "and a prefix length: 10.0.0.0/8, 2001:db8::/32)"));
  }
  if (op == v1::OP_WILDCARD || op == v1::OP_NOT_WILDCARD) {
    return ParseWildcard(value).status();
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckPredicate(const FieldPath& path,
                            const v1::Predicate& predicate,
                            const Limits& limits) {
  absl::Status status =
      CheckAttributeName(FieldPath{&path, "attribute"}, predicate.attribute());
  if (!status.ok()) return status;
  const int op = predicate.op();
  if (op < v1::OP_EQ || op > v1::OP_SUFFIX_IGNORE_CASE) {
    const std::string what = op == v1::OP_UNSPECIFIED
                                 ? std::string("OP_UNSPECIFIED (0)")
                                 : absl::StrCat("unknown value ", op);
    return Invalid(FieldPath{&path, "op"}, what,
                   " is not an operator; use OP_EQ, OP_NE, OP_LT, OP_LE, "
                   "OP_GT, OP_GE, OP_BETWEEN, OP_IN, OP_NOT_IN, OP_PREFIX, "
                   "OP_SUFFIX, OP_EQUALS_IGNORE_CASE, OP_NOT_PREFIX, "
                   "OP_NOT_SUFFIX, OP_CIDR, OP_WILDCARD, OP_NOT_WILDCARD, "
                   "OP_NOT_EQUALS_IGNORE_CASE, OP_PREFIX_IGNORE_CASE, "
                   "OP_SUFFIX_IGNORE_CASE, OP_EXISTS or OP_NOT_EXISTS");
  }
  const absl::string_view op_name = v1::Op_Name(predicate.op());
  const auto operand = predicate.operand_case();
  const bool list = operand == v1::Predicate::kInt64Values ||
                    operand == v1::Predicate::kStringValues ||
                    operand == v1::Predicate::kDoubleValues;
  const bool folds =
      op == v1::OP_EQUALS_IGNORE_CASE || op == v1::OP_NOT_EQUALS_IGNORE_CASE;
  switch (op) {
    case v1::OP_EQUALS_IGNORE_CASE:
    case v1::OP_NOT_EQUALS_IGNORE_CASE:
      if (operand == v1::Predicate::kStringValue) {
        return CheckString(FieldPath{&path, "string_value"},
                           predicate.string_value(), limits);
      }
      if (operand != v1::Predicate::kStringValues) {
        return Invalid(path, op_name,
                       " needs a string_value or string_values operand, "
                       "got ",
                       OperandName(predicate));
      }
      [[fallthrough]];  // the list's checks
    case v1::OP_IN:
    case v1::OP_NOT_IN: {
      if (!list && !folds) {
        return Invalid(path, op_name,
                       " needs a list operand (int64_values, double_values "
                       "or string_values), got ",
                       OperandName(predicate));
      }
      const bool strings = operand == v1::Predicate::kStringValues;
      const bool doubles = operand == v1::Predicate::kDoubleValues;
      const FieldPath values_path{&path, strings   ? "string_values.values"
                                         : doubles ? "double_values.values"
                                                   : "int64_values.values"};
      const size_t n = strings   ? predicate.string_values().values_size()
                       : doubles ? predicate.double_values().values_size()
                                 : predicate.int64_values().values_size();
      if (n == 0) {
        return Invalid(values_path, "empty; ", op_name, " needs 1 to ",
                       limits.max_set_size, " values");
      }
      if (n > limits.max_set_size) {
        return Invalid(values_path, n, " values; the limit is ",
                       limits.max_set_size, " (--max_set_size)");
      }
      if (strings) {
        for (size_t i = 0; i < n; ++i) {
          status = CheckString(FieldPath{&path, "string_values.values", i},
                               predicate.string_values().values(i), limits);
          if (!status.ok()) return status;
        }
      }
      if (doubles) {
        const auto& values = predicate.double_values().values();
        bool fractions = false;
        for (size_t i = 0; i < n; ++i) {
          status = CheckDouble(FieldPath{&path, "double_values.values", i},
                               values[i]);
          if (!status.ok()) return status;
          int64_t integer;
          fractions |= !IntegralDouble(values[i], &integer);
        }
        // With a fraction in it, the list is compared on "$d:" as doubles
        // (typed_attributes.h), where integers from 2^53 on are not exact.
        for (size_t i = 0; fractions && i < n; ++i) {
          if (std::fabs(values[i]) >= kExactDoubleIntegers) {
            return Invalid(
                FieldPath{&path, "double_values.values", i},
                filter::FormatDouble(values[i]),
                " is an integer of magnitude 2^53 or more in a list with a "
                "number with a fraction, which Cohort cannot compare "
                "exactly together; put it in a predicate of its own");
          }
        }
      }
      return absl::OkStatus();
    }
    case v1::OP_EXISTS:
    case v1::OP_NOT_EXISTS:
      if (operand != v1::Predicate::OPERAND_NOT_SET) {
        return Invalid(FieldPath{&path, OperandName(predicate)}, op_name,
                       " takes no operand");
      }
      return absl::OkStatus();
    case v1::OP_PREFIX:
    case v1::OP_SUFFIX:
    case v1::OP_PREFIX_IGNORE_CASE:
    case v1::OP_SUFFIX_IGNORE_CASE:
    case v1::OP_NOT_PREFIX:
    case v1::OP_NOT_SUFFIX:
    case v1::OP_CIDR:
    case v1::OP_WILDCARD:
    case v1::OP_NOT_WILDCARD:
      if (operand != v1::Predicate::kStringValue) {
        return Invalid(path, op_name, " needs a string_value operand, got ",
                       OperandName(predicate));
      }
      if (absl::Status rules = CheckOperandRules(predicate); !rules.ok()) {
        return Invalid(FieldPath{&path, "string_value"}, rules.message());
      }
      return CheckString(FieldPath{&path, "string_value"},
                         predicate.string_value(), limits);
    default:
      break;
  }
  // EQ to BETWEEN: one value (or none: the int64 0).
  if (list) {
    return Invalid(FieldPath{&path, OperandName(predicate)}, op_name,
                   " takes one value; lists are for OP_IN and OP_NOT_IN");
  }
  if (operand == v1::Predicate::kLiteralValue) {
    if (op != v1::OP_EQ && op != v1::OP_NE) {
      return Invalid(FieldPath{&path, "literal_value"}, op_name,
                     " does not take a literal; only OP_EQ and OP_NE do");
    }
    return CheckLiteral(FieldPath{&path, "literal_value"},
                        predicate.literal_value());
  }
  if (operand == v1::Predicate::kStringValue) {
    status = CheckString(FieldPath{&path, "string_value"},
                         predicate.string_value(), limits);
    if (!status.ok()) return status;
    if (op != v1::OP_BETWEEN) return absl::OkStatus();
    if (predicate.upper_operand_case() == v1::Predicate::kUpper ||
        predicate.upper_operand_case() == v1::Predicate::kDoubleUpper) {
      const bool d =
          predicate.upper_operand_case() == v1::Predicate::kDoubleUpper;
      return Invalid(FieldPath{&path, d ? "double_upper" : "upper"},
                     "a number upper bound for a string lower bound; both "
                     "bounds must have one type");
    }
    status = CheckString(FieldPath{&path, "string_upper"},
                         predicate.string_upper(), limits);
    if (!status.ok()) return status;
    // Byte order, unsigned, as std::string compares.
    if (predicate.string_value() > predicate.string_upper()) {
      return Invalid(path,
                     "OP_BETWEEN needs string_value <= string_upper (byte "
                     "order), got \"",
                     absl::CHexEscape(predicate.string_value()), "\" > \"",
                     absl::CHexEscape(predicate.string_upper()), "\"");
    }
    return absl::OkStatus();
  }
  // A number: an int64, or a double the API compares.
  const NumberOperand lower{operand == v1::Predicate::kDoubleValue,
                            predicate.value(), predicate.double_value()};
  if (lower.is_double) {
    status = CheckDouble(FieldPath{&path, "double_value"}, lower.d);
    if (!status.ok()) return status;
  }
  if (op == v1::OP_BETWEEN) {
    if (predicate.upper_operand_case() == v1::Predicate::kStringUpper) {
      return Invalid(FieldPath{&path, "string_upper"},
                     "a string upper bound for a number lower bound; both "
                     "bounds must have one type");
    }
    const NumberOperand upper{
        predicate.upper_operand_case() == v1::Predicate::kDoubleUpper,
        predicate.upper(), predicate.double_upper()};
    if (upper.is_double) {
      status = CheckDouble(FieldPath{&path, "double_upper"}, upper.d);
      if (!status.ok()) return status;
    }
    if (CompareNumbers(lower.is_double, lower.integer, lower.d,
                       upper.is_double, upper.integer, upper.d) > 0) {
      const auto text = [](const NumberOperand& n) {
        return n.is_double ? filter::FormatDouble(n.d)
                           : absl::StrCat(n.integer);
      };
      return Invalid(path, "OP_BETWEEN needs value <= upper, got value ",
                     text(lower), " > upper ", text(upper));
    }
  }
  return absl::OkStatus();
}

// A subscription's predicates, under `parent` (nullptr: at the top level,
// as ParseFilter's response has them): 1 to limits.max_predicates of them,
// each valid. `Predicates` is any container of v1::Predicate.
template <typename Predicates>
absl::Status CheckPredicates(const FieldPath* parent,
                             const Predicates& predicates,
                             const Limits& limits) {
  const FieldPath list{parent, "predicates"};
  const size_t count = static_cast<size_t>(predicates.size());
  if (count == 0) {
    return Invalid(list, "empty; a subscription needs 1 to ",
                   limits.max_predicates, " predicates");
  }
  if (count > limits.max_predicates) {
    return Invalid(list, "has ", count, " predicates; the limit is ",
                   limits.max_predicates, " (--max_predicates)");
  }
  size_t j = 0;
  for (const v1::Predicate& predicate : predicates) {
    absl::Status status =
        CheckPredicate(FieldPath{parent, "predicates", j++}, predicate, limits);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A spec's predicates and "or" groups (`any_of`), under `parent` (nullptr:
// ParseFilter's response): without groups, CheckPredicates; with them,
// each predicate valid, each group with 1 or more alternatives of 1 or
// more valid predicates, the expansion (the product of the groups' sizes)
// at most limits.max_or_expansion (RESOURCE_EXHAUSTED) and its largest
// conjunction (the predicates and each group's largest alternative) at
// most limits.max_predicates.
template <typename Predicates, typename Groups>
absl::Status CheckConditions(const FieldPath* parent,
                             const Predicates& predicates,
                             const Groups& any_of, const Limits& limits) {
  if (any_of.empty()) return CheckPredicates(parent, predicates, limits);
  size_t largest = static_cast<size_t>(predicates.size());
  size_t j = 0;
  for (const v1::Predicate& predicate : predicates) {
    absl::Status status =
        CheckPredicate(FieldPath{parent, "predicates", j++}, predicate, limits);
    if (!status.ok()) return status;
  }
  uint64_t expansion = 1;
  j = 0;
  for (const v1::AnyOf& group : any_of) {
    const FieldPath at{parent, "any_of", j++};
    const FieldPath alternatives{&at, "alternatives"};
    if (group.alternatives().empty()) {
      return Invalid(alternatives,
                     "empty; a group of any_of needs 1 or more alternatives");
    }
    size_t widest = 0;
    for (int k = 0; k < group.alternatives_size(); ++k) {
      const FieldPath alternative{&at, "alternatives", static_cast<size_t>(k)};
      const auto& list = group.alternatives(k).predicates();
      if (list.empty()) {
        return Invalid(FieldPath{&alternative, "predicates"},
                       "empty; an alternative needs 1 to ",
                       limits.max_predicates, " predicates");
      }
      for (int m = 0; m < list.size(); ++m) {
        absl::Status status = CheckPredicate(
            FieldPath{&alternative, "predicates", static_cast<size_t>(m)},
            list[m], limits);
        if (!status.ok()) return status;
      }
      widest = std::max(widest, static_cast<size_t>(list.size()));
    }
    largest += widest;
    // Saturates above the limit (at most 1024), so no overflow.
    expansion = std::min<uint64_t>(
        expansion * static_cast<uint64_t>(group.alternatives_size()),
        uint64_t{1} << 32);
  }
  const FieldPath groups{parent, "any_of"};
  if (expansion > limits.max_or_expansion) {
    return absl::ResourceExhaustedError(absl::StrCat(
        groups.ToString(), ": expands into ",
        expansion >= (uint64_t{1} << 32) ? "over 4294967295"
                                         : absl::StrCat(expansion),
        " conjunctions (the product of its groups' alternatives); the "
        "limit is ",
        limits.max_or_expansion, " (--max_or_expansion)"));
  }
  if (largest > limits.max_predicates) {
    return Invalid(groups, "its largest conjunction (the predicates and the "
                   "largest alternative of each group) has ", largest,
                   " predicates; the limit is ", limits.max_predicates,
                   " (--max_predicates)");
  }
  return absl::OkStatus();
}

absl::Status CheckSubscription(const FieldPath& path,
                               const v1::SubscriptionSpec& spec,
                               const Limits& limits) {
  absl::Status status = CheckSubscriber(FieldPath{&path, "subscriber"},
                                        spec.subscriber(), limits);
  if (!status.ok()) return status;
  return CheckConditions(&path, spec.predicates(), spec.any_of(), limits);
}

// "events[0].attributes[3].name: "x" is also the name of
// events[0].attributes[1]; ...".
absl::Status DuplicateAttribute(const FieldPath& event, size_t first,
                                size_t second, absl::string_view name) {
  const FieldPath earlier{&event, "attributes", first};
  const FieldPath later{&event, "attributes", second};
  return Invalid(FieldPath{&later, "name"}, "\"", name,
                 "\" is also the name of ", earlier.ToString(),
                 "; attribute names in an event must be distinct");
}

// REQUIRES: every attribute name of `event` is valid. `seen` is scratch space
// reused across events.
absl::Status CheckDistinctNames(
    const FieldPath& path, const v1::Event& event,
    absl::flat_hash_map<absl::string_view, size_t>* seen) {
  const int n = event.attributes_size();
  if (n <= kPairwiseDuplicateScanMax) {
    for (int i = 1; i < n; ++i) {
      for (int j = 0; j < i; ++j) {
        if (event.attributes(i).name() == event.attributes(j).name()) {
          return DuplicateAttribute(path, j, i, event.attributes(i).name());
        }
      }
    }
    return absl::OkStatus();
  }
  seen->clear();
  for (int i = 0; i < n; ++i) {
    auto [it, inserted] = seen->emplace(event.attributes(i).name(), i);
    if (!inserted) {
      return DuplicateAttribute(path, it->second, i, it->first);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEvent(const FieldPath& path, const v1::Event& event,
                        const Limits& limits,
                        absl::flat_hash_map<absl::string_view, size_t>* seen,
                        JsonGroup* json) {
  const FieldPath attributes{&path, "attributes"};
  const size_t count = static_cast<size_t>(event.attributes_size());
  if (count == 0 && event.json().empty()) {
    return Invalid(attributes, "empty; an event needs 1 to ",
                   limits.max_event_attributes, " attributes, or a json");
  }
  if (count > limits.max_event_attributes) {
    return Invalid(attributes, "has ", count, " attributes; the limit is ",
                   limits.max_event_attributes, " (--max_event_attributes)");
  }
  for (int i = 0; i < event.attributes_size(); ++i) {
    const FieldPath attribute{&path, "attributes", static_cast<size_t>(i)};
    absl::Status status = CheckAttributeName(FieldPath{&attribute, "name"},
                                             event.attributes(i).name());
    if (!status.ok()) return status;
    if (event.attributes(i).kind_case() == v1::Attribute::kStringValue) {
      status = CheckString(FieldPath{&attribute, "string_value"},
                           event.attributes(i).string_value(), limits);
      if (!status.ok()) return status;
    } else if (event.attributes(i).kind_case() ==
               v1::Attribute::kDoubleValue) {
      status = CheckDouble(FieldPath{&attribute, "double_value"},
                           event.attributes(i).double_value());
      if (!status.ok()) return status;
    } else if (event.attributes(i).kind_case() ==
               v1::Attribute::kLiteralValue) {
      status = CheckLiteral(FieldPath{&attribute, "literal_value"},
                            event.attributes(i).literal_value());
      if (!status.ok()) return status;
    }
  }
  absl::Status status = CheckDistinctNames(path, event, seen);
  if (!status.ok()) return status;
  if (event.payload().size() > limits.max_payload_bytes) {
    return Invalid(FieldPath{&path, "payload"}, event.payload().size(),
                   " bytes; the limit is ", limits.max_payload_bytes,
                   " (--max_payload_bytes)");
  }
  if (event.json().empty()) {
    *json = JsonGroup();
    return absl::OkStatus();
  }
  status = FlattenJson(path.ToString(), event.json(), limits, json);
  if (!status.ok()) return status;
  if (count > 0) {
    // The document's paths and the attributes' names are one namespace.
    std::vector<absl::string_view> paths;
    CollectPaths(*json, &paths);
    for (const absl::string_view p : paths) {
      for (int i = 0; i < event.attributes_size(); ++i) {
        if (event.attributes(i).name() == p) {
          return Invalid(FieldPath{&path, "json"}, "at ", p,
                         ": the path is also the name of ",
                         FieldPath{&path, "attributes",
                                   static_cast<size_t>(i)}.ToString());
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSubscribe(const v1::SubscribeRequest& request,
                               const Limits& limits) {
  absl::Status status =
      CheckBatch("subscriptions", request.subscriptions_size(), limits);
  if (!status.ok()) return status;
  for (int i = 0; i < request.subscriptions_size(); ++i) {
    status = CheckSubscription(
        FieldPath{nullptr, "subscriptions", static_cast<size_t>(i)},
        request.subscriptions(i), limits);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SubscriptionSpec> ParseFilter(
    const v1::ParseFilterRequest& request, const Limits& limits) {
  const FieldPath filter{nullptr, "filter"};
  if (request.filter().size() > kMaxFilterBytes) {
    return Invalid(filter, "at most ", kMaxFilterBytes, " bytes, got ",
                   request.filter().size());
  }
  absl::StatusOr<v1::SubscriptionSpec> spec =
      filter::IsPattern(request.filter())
          ? filter::ParsePatternSpec(request.filter())
          : filter::ParseSubscriptionSpec(request.filter());
  if (!spec.ok()) return Invalid(filter, spec.status().message());
  absl::Status status =
      CheckConditions(nullptr, spec->predicates(), spec->any_of(), limits);
  if (!status.ok()) return status;
  return spec;
}

absl::Status ValidateUnsubscribe(const v1::UnsubscribeRequest& request,
                                 const Limits& limits) {
  absl::Status status =
      CheckBatch("subscription_ids", request.subscription_ids_size(), limits);
  if (!status.ok()) return status;
  // A repeated id is a malformed request (INVALID_ARGUMENT) and outranks id 0,
  // which is merely an id that names no subscription (NOT_FOUND).
  std::optional<size_t> first_zero;
  absl::flat_hash_map<uint64_t, size_t> seen;
  seen.reserve(request.subscription_ids_size());
  for (int i = 0; i < request.subscription_ids_size(); ++i) {
    const uint64_t id = request.subscription_ids(i);
    if (id == 0 && !first_zero.has_value()) first_zero = i;
    auto [it, inserted] = seen.emplace(id, i);
    if (!inserted) {
      return Invalid(
          FieldPath{nullptr, "subscription_ids", static_cast<size_t>(i)}, id,
          " is also subscription_ids[", it->second,
          "]; an id may be listed only once");
    }
  }
  if (first_zero.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        FieldPath{nullptr, "subscription_ids", *first_zero}.ToString(),
        ": 0 is never a subscription id"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePublish(const v1::PublishRequest& request,
                             const Limits& limits) {
  std::vector<JsonGroup> json;
  return ValidatePublishAndFlatten(request, limits, &json);
}

absl::Status ValidatePublishAndFlatten(const v1::PublishRequest& request,
                                       const Limits& limits,
                                       std::vector<JsonGroup>* json) {
  absl::Status status = CheckBatch("events", request.events_size(), limits);
  if (!status.ok()) return status;
  absl::flat_hash_map<absl::string_view, size_t> seen;
  json->resize(request.events_size());
  for (int i = 0; i < request.events_size(); ++i) {
    status = CheckEvent(FieldPath{nullptr, "events", static_cast<size_t>(i)},
                        request.events(i), limits, &seen, &(*json)[i]);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ValidateListen(const v1::ListenRequest& request,
                            const Limits& limits) {
  return CheckSubscriber(FieldPath{nullptr, "subscriber"}, request.subscriber(),
                         limits);
}

absl::Status BuildSubscriptions(const v1::SubscribeRequest& request,
                                TypedAttributes* attributes,
                                Interner* subscribers,
                                std::vector<SubscriptionInput>* out) {
  // Built aside and moved into *out only on success, so that a full
  // dictionary leaves *out as it was.
  std::vector<SubscriptionInput> built(request.subscriptions_size());
  for (int i = 0; i < request.subscriptions_size(); ++i) {
    const v1::SubscriptionSpec& spec = request.subscriptions(i);
    const FieldPath path{nullptr, "subscriptions", static_cast<size_t>(i)};
    absl::StatusOr<uint32_t> subscriber =
        subscribers->Intern(spec.subscriber());
    if (!subscriber.ok()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(FieldPath{&path, "subscriber"}.ToString(),
                       ": cannot add a new subscriber name: ",
                       subscriber.status().message()));
    }
    SubscriptionInput& input = built[i];
    input.subscriber = *subscriber;
    input.predicates.reserve(spec.predicates_size());
    for (int j = 0; j < spec.predicates_size(); ++j) {
      const FieldPath predicate{&path, "predicates", static_cast<size_t>(j)};
      absl::Status status = attributes->Lower(
          predicate.ToString(), spec.predicates(j), &input.predicates);
      if (!status.ok()) return status;
    }
    if (spec.any_of().empty()) continue;
    // Each alternative lowered once, then the expansion: one conjunction
    // per choice of an alternative from every group, the first group's
    // choice varying slowest.
    std::vector<std::vector<std::vector<matcher::Predicate>>> groups(
        spec.any_of_size());
    size_t expansion = 1;
    for (int j = 0; j < spec.any_of_size(); ++j) {
      const v1::AnyOf& group = spec.any_of(j);
      const FieldPath at{&path, "any_of", static_cast<size_t>(j)};
      groups[j].resize(group.alternatives_size());
      for (int k = 0; k < group.alternatives_size(); ++k) {
        const FieldPath alternative{&at, "alternatives",
                                    static_cast<size_t>(k)};
        const auto& list = group.alternatives(k).predicates();
        for (int m = 0; m < list.size(); ++m) {
          const FieldPath predicate{&alternative, "predicates",
                                    static_cast<size_t>(m)};
          absl::Status status = attributes->Lower(predicate.ToString(),
                                                  list[m], &groups[j][k]);
          if (!status.ok()) return status;
        }
      }
      expansion *= groups[j].size();
    }
    std::vector<matcher::Predicate> base = std::move(input.predicates);
    input.predicates.clear();
    if (expansion == 1) {
      // Every group has one alternative: a plain conjunction.
      input.predicates = std::move(base);
      for (auto& group : groups) {
        for (matcher::Predicate& p : group[0]) {
          input.predicates.push_back(std::move(p));
        }
      }
      continue;
    }
    input.branches.resize(expansion);
    for (size_t b = 0; b < expansion; ++b) {
      std::vector<matcher::Predicate>& branch = input.branches[b];
      branch = base;
      size_t rest = b;
      size_t stride = expansion;
      for (const auto& group : groups) {
        stride /= group.size();
        const auto& taken = group[rest / stride];
        rest %= stride;
        branch.insert(branch.end(), taken.begin(), taken.end());
      }
    }
  }
  *out = std::move(built);
  return absl::OkStatus();
}

void BuildEvents(const v1::PublishRequest& request,
                 const TypedAttributes& attributes,
                 std::vector<std::vector<matcher::AttributeValue>>* out) {
  std::vector<uint32_t> event_of;
  // Without json, no combinations to bound.
  attributes.Encode(request, {}, SIZE_MAX, out, &event_of).IgnoreError();
}

absl::Status BuildEvents(
    const v1::PublishRequest& request, absl::Span<const JsonGroup> json,
    const TypedAttributes& attributes, const Limits& limits,
    std::vector<std::vector<matcher::AttributeValue>>* out,
    std::vector<uint32_t>* event_of) {
  return attributes.Encode(request, json, limits.max_json_combinations, out,
                           event_of);
}

}  // namespace service
}  // namespace cohort
