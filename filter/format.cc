// The printing half of the grammar (parse.h: FormatString, FormatPredicate,
// FormatSubscription, FormatAttribute, FormatEvent): messages back into the
// text the parser reads.
#include "filter/parse.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "filter/spellings.h"

namespace cohort {
namespace filter {
namespace {

// A double operand or value: an integer as one ("3" for 3.0, as the
// parser reads it back), else FormatDouble.
std::string NumberText(double d) {
  if (std::trunc(d) == d && d >= -0x1p63 && d < 0x1p63) {
    return absl::StrCat(static_cast<int64_t>(d));
  }
  return FormatDouble(d);
}

// true, false or null.
std::string LiteralText(int literal) {
  switch (literal) {
    case v1::LITERAL_TRUE:
      return "true";
    case v1::LITERAL_FALSE:
      return "false";
    case v1::LITERAL_NULL:
      return "null";
    default:  // not in the grammar, but printed rather than hidden
      return absl::StrCat("literal", literal);
  }
}

// "[1, 2]" or "[\"a\", \"b\"]"; a scalar operand as a list of one, and no
// operand as the empty list, so that the text keeps the grammar's shape.
std::string ListText(const v1::Predicate& p) {
  switch (p.operand_case()) {
    case v1::Predicate::kInt64Values:
      return absl::StrCat("[", absl::StrJoin(p.int64_values().values(), ", "),
                          "]");
    case v1::Predicate::kStringValues:
      return absl::StrCat(
          "[",
          absl::StrJoin(p.string_values().values(), ", ",
                        [](std::string* out, const std::string& s) {
                          out->append(FormatString(s));
                        }),
          "]");
    case v1::Predicate::kStringValue:
      return absl::StrCat("[", FormatString(p.string_value()), "]");
    case v1::Predicate::kValue:
      return absl::StrCat("[", p.value(), "]");
    case v1::Predicate::kDoubleValues:
      return absl::StrCat(
          "[",
          absl::StrJoin(p.double_values().values(), ", ",
                        [](std::string* out, double d) {
                          out->append(NumberText(d));
                        }),
          "]");
    case v1::Predicate::kDoubleValue:
      return absl::StrCat("[", NumberText(p.double_value()), "]");
    case v1::Predicate::kLiteralValue:
      return absl::StrCat("[", LiteralText(p.literal_value()), "]");
    case v1::Predicate::OPERAND_NOT_SET:
      break;
  }
  return "[]";
}

// The scalar operand: a string, or the int64 (0 when none is set). A list
// operand is printed as a list.
std::string ScalarText(const v1::Predicate& p) {
  switch (p.operand_case()) {
    case v1::Predicate::kStringValue:
      return FormatString(p.string_value());
    case v1::Predicate::kInt64Values:
    case v1::Predicate::kStringValues:
    case v1::Predicate::kDoubleValues:
      return ListText(p);
    case v1::Predicate::kDoubleValue:
      return NumberText(p.double_value());
    case v1::Predicate::kLiteralValue:
      return LiteralText(p.literal_value());
    case v1::Predicate::kValue:
    case v1::Predicate::OPERAND_NOT_SET:
      break;
  }
  return absl::StrCat(p.value());
}


}  // namespace

std::string FormatDouble(double d) {
  char buffer[32];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), d);
  return std::string(buffer, r.ptr);
}

std::string FormatString(absl::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte >= 0x20 && byte < 0x7f) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, absl::StrFormat("\\x%02X", byte));
    }
  }
  out.push_back('"');
  return out;
}

std::string FormatPredicate(const v1::Predicate& p) {
  const std::string& name = p.attribute();
  switch (p.op()) {
    case v1::OP_EXISTS:
      return absl::StrCat("exists ", name);
    case v1::OP_NOT_EXISTS:
      return absl::StrCat("not exists ", name);
    case v1::OP_BETWEEN:
      return absl::StrCat(
          name, " between ", ScalarText(p), " and ",
          p.upper_operand_case() == v1::Predicate::kStringUpper
              ? FormatString(p.string_upper())
          : p.upper_operand_case() == v1::Predicate::kDoubleUpper
              ? NumberText(p.double_upper())
              : absl::StrCat(p.upper()));
    case v1::OP_IN:
      return absl::StrCat(name, " in ", ListText(p));
    case v1::OP_NOT_IN:
      return absl::StrCat(name, " not in ", ListText(p));
    default:
      break;
  }
  for (const internal::StringOpSpelling& s : internal::kStringOps) {
    if (s.op == p.op() ||
        (s.negated != v1::OP_UNSPECIFIED && s.negated == p.op())) {
      return absl::StrCat(name, s.op == p.op() ? " " : " not ", s.word, " ",
                          ScalarText(p));
    }
  }
  for (const internal::Spelling& s : internal::kSpellings) {
    if (s.op == p.op()) {
      return absl::StrCat(name, " ", s.symbol, " ", ScalarText(p));
    }
  }
  // OP_UNSPECIFIED or a number this client does not know: not in the
  // grammar, but printed rather than hidden.
  return absl::StrCat(name, " op", static_cast<int>(p.op()), " ",
                      ScalarText(p));
}

std::string FormatSubscription(const v1::SubscriptionSpec& spec) {
  const auto predicates = [](const auto& list) {
    return absl::StrJoin(list, " and ",
                         [](std::string* out, const v1::Predicate& p) {
                           out->append(FormatPredicate(p));
                         });
  };
  const auto alternatives = [&](const v1::AnyOf& group) {
    return absl::StrJoin(group.alternatives(), " or ",
                         [&](std::string* out, const v1::Conjunction& c) {
                           out->append(predicates(c.predicates()));
                         });
  };
  // One group alone reads back without parentheses: "or" at the top.
  if (spec.predicates().empty() && spec.any_of_size() == 1) {
    return alternatives(spec.any_of(0));
  }
  std::string out = predicates(spec.predicates());
  for (const v1::AnyOf& group : spec.any_of()) {
    absl::StrAppend(&out, out.empty() ? "" : " and ", "(",
                    alternatives(group), ")");
  }
  return out;
}

std::string FormatAttribute(const v1::Attribute& a) {
  return absl::StrCat(a.name(), "=",
                      a.kind_case() == v1::Attribute::kStringValue
                          ? FormatString(a.string_value())
                      : a.kind_case() == v1::Attribute::kDoubleValue
                          ? NumberText(a.double_value())
                      : a.kind_case() == v1::Attribute::kLiteralValue
                          ? LiteralText(a.literal_value())
                          : absl::StrCat(a.value()));
}

std::string FormatEvent(const v1::Event& event) {
  return absl::StrJoin(event.attributes(), " ",
                       [](std::string* out, const v1::Attribute& a) {
                         out->append(FormatAttribute(a));
                       });
}


}  // namespace filter
}  // namespace cohort
