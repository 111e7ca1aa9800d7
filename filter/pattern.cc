#include "filter/pattern.h"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "filter/any_of.h"
#include "filter/parse.h"
#include "filter/spellings.h"

namespace cohort {
namespace filter {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// The operators of one condition object, as Event Ruler spells them.
constexpr absl::string_view kKnownOperators =
    "prefix, suffix, equals-ignore-case, wildcard, cidr, exists, numeric, "
    "anything-but";

// simdjson's std::string_view as Abseil's (not the same type in this build).
absl::string_view Sv(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// What a JSON value is, for messages.
absl::string_view Kind(const element& e) {
  switch (e.type()) {
    case element_type::ARRAY:
      return "a list";
    case element_type::OBJECT:
      return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return "a number";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a boolean";
    case element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

// `d` with the fewest significant digits that read back as `d` (19.99,
// not 19.989999999999998).
std::string Shortest(double d) {
  for (int digits = 1; digits < 17; ++digits) {
    const std::string text = absl::StrFormat("%.*g", digits, d);
    if (std::strtod(text.c_str(), nullptr) == d) return text;
  }
  return absl::StrFormat("%.17g", d);
}

bool IsNumber(const element& e) {
  const element_type t = e.type();
  return t == element_type::INT64 || t == element_type::UINT64 ||
         t == element_type::DOUBLE;
}

// A JSON literal (true, false, null) as written.
std::string Literal(const element& e) {
  if (e.type() == element_type::NULL_VALUE) return "null";
  return e.get_bool().value_unsafe() ? "true" : "false";
}

// The keys Event Ruler 1.8.1 refuses inside "$or" (its
// RESERVED_FIELD_NAMES_IN_OR_RELATIONSHIP): its operators, and words it
// keeps for operators to come.
bool IsReservedInOr(absl::string_view key) {
  static constexpr absl::string_view kReserved[] = {
      "exactly", "equals-ignore-case", "prefix", "suffix", "anything-but",
      "exists", "wildcard", "numeric", "cidr", "=", "<", "<=", ">", ">=",
      "regex", "not-wildcard", "not-equals-ignore-case", "date-after",
      "date-on-or-after", "date-before", "date-on-or-before",
      "in-date-range", "ip-address-in-range", "ip-address-not-in-range",
  };
  for (const absl::string_view reserved : kReserved) {
    if (key == reserved) return true;
  }
  return false;
}

class Lowering {
 public:
  absl::StatusOr<v1::SubscriptionSpec> Run(const element& root) {
    if (root.type() != element_type::OBJECT) {
      return Error("", absl::StrCat("a pattern is a JSON object, got ",
                                    Kind(root)));
    }
    absl::Status status = Object(root, "", "", /*in_or=*/false);
    if (!status.ok()) return status;
    v1::SubscriptionSpec spec;
    internal::AddTerms(std::move(top_), &spec);
    return spec;
  }

 private:
  // Keys are any JSON strings; a message shows their control bytes as
  // \xHH, so that it stays one line.
  static absl::Status Error(absl::string_view place, absl::string_view what) {
    if (place.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("pattern: ", what));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("pattern: at ", ShowControlBytes(place), ": ", what));
  }

  // The refusal of a JSON literal (true, false, null) in an anything-but at
  // `place` (Event Ruler refuses it there too).
  static absl::Status LiteralError(absl::string_view place, const element& e) {
    return Error(place, absl::StrCat(Literal(e),
                                     " in anything-but: it takes strings "
                                     "and numbers (Event Ruler refuses "
                                     "literals there too)"));
  }

  // The one key of the operator object `e` at `place`; with any other
  // number of keys, the refusal `expected` followed by the count.
  static absl::StatusOr<simdjson::dom::key_value_pair> OnlyOperator(
      absl::string_view place, const element& e, absl::string_view expected) {
    simdjson::dom::object object = e.get_object().value_unsafe();
    if (object.size() != 1) {
      return Error(place, absl::StrCat(expected, object.size(), " keys"));
    }
    return *object.begin();
  }

  static std::string Index(absl::string_view place, size_t i) {
    return absl::StrCat(place, "[", i, "]");
  }
  static std::string Member(absl::string_view place, absl::string_view key) {
    return place.empty() ? std::string(key) : absl::StrCat(place, ".", key);
  }

  // Appends `p` to the conjunction being lowered.
  void Add(v1::Predicate p) {
    terms_->emplace_back().predicate = std::move(p);
  }

  // Lowers what `lower` adds into a conjunction of its own, returned in
  // `*out`, then goes back to the one being lowered.
  template <typename Lower>
  absl::Status LowerApart(std::vector<internal::Term>* out, Lower lower) {
    std::vector<internal::Term>* const outer = terms_;
    terms_ = out;
    absl::Status status = lower();
    terms_ = outer;
    return status;
  }

  // The fields of one object of the pattern: `name` is its path of keys
  // (what its fields' attribute names start with), `place` where it is in
  // the pattern (with the "$or[i]" steps, for messages), `in_or` whether
  // it is inside an element of a "$or".
  absl::Status Object(const element& e, const std::string& name,
                      const std::string& place, bool in_or) {
    simdjson::dom::object object = e.get_object().value_unsafe();
    if (object.size() == 0) {
      return Error(place.empty() ? "the top" : place,
                   "an empty object names no field to match");
    }
    absl::flat_hash_set<absl::string_view> keys;
    for (const simdjson::dom::key_value_pair field : object) {
      const absl::string_view key = Sv(field.key);
      const std::string at = Member(place, key);
      if (!keys.insert(key).second) {
        return Error(at, "this key appears twice in one object");
      }
      if (key == "$or") {
        absl::Status status = Or(name, at, field.value);
        if (!status.ok()) return status;
        continue;
      }
      if (in_or && IsReservedInOr(key)) {
        return Error(at, absl::StrCat(FormatString(key),
                                      " names an operator, which Event "
                                      "Ruler refuses as a key inside "
                                      "\"$or\""));
      }
      const std::string path = Member(name, key);
      absl::Status status;
      switch (field.value.type()) {
        case element_type::OBJECT:
          status = Object(field.value, path, at, in_or);
          break;
        case element_type::ARRAY:
          status = Field(path, at, field.value);
          break;
        default:
          status = Error(at, absl::StrCat("expected a list of values or "
                                          "conditions, or an object, got ",
                                          Kind(field.value)));
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // {"$or": [{...}, {...}, ...]} at `place`, in the object whose path is
  // `name`: one group, each element's alternatives distributed.
  absl::Status Or(const std::string& name, const std::string& place,
                  const element& e) {
    const char* const kTakes = "\"$or\" takes a list of two objects or more";
    if (e.type() != element_type::ARRAY) {
      return Error(place, absl::StrCat(kTakes, ", got ", Kind(e)));
    }
    simdjson::dom::array list = e.get_array().value_unsafe();
    if (list.size() < 2) {
      return Error(place, absl::StrCat(kTakes, ", got ", list.size(),
                                       list.size() == 1 ? " entry" : " entries",
                                       " (Event Ruler refuses it too)"));
    }
    internal::Term group;
    group.is_group = true;
    size_t i = 0;
    for (const element item : list) {
      const std::string at = Index(place, i++);
      if (item.type() != element_type::OBJECT) {
        return Error(at, absl::StrCat("an entry of \"$or\" is an object of "
                                      "fields, got ",
                                      Kind(item)));
      }
      std::vector<internal::Term> alternative;
      absl::Status status = LowerApart(&alternative, [&] {
        return Object(item, name, at, /*in_or=*/true);
      });
      if (!status.ok()) return status;
      const std::string why =
          internal::AppendDistributed(alternative, &group.group);
      if (!why.empty()) {
        return Error(place, absl::StrCat("\"$or\" is too large: ", why));
      }
    }
    terms_->push_back(std::move(group));
    return absl::OkStatus();
  }

  // The list of attribute `name`, at `place`: one of its entries holds. All
  // its strings are one alternative (EQ, or IN), all its numbers another,
  // and each literal and each condition one of its own, in the order of
  // their first entries; several alternatives are a group.
  absl::Status Field(const std::string& name, const std::string& place,
                     const element& list_element) {
    const std::string why = internal::WhyBadName(name);
    if (!why.empty()) {
      return Error(place, absl::StrCat(FormatString(name),
                                       " is not an attribute name Cohort "
                                       "accepts: ",
                                       why));
    }
    simdjson::dom::array list = list_element.get_array().value_unsafe();
    if (list.size() == 0) {
      return Error(place, "an empty list matches nothing");
    }
    internal::Alternatives alternatives;
    // Where the alternative of the strings, and of the numbers, is.
    size_t strings = alternatives.max_size();
    size_t numbers = alternatives.max_size();
    size_t i = 0;
    for (const element item : list) {
      const std::string at = Index(place, i++);
      const element_type t = item.type();
      if (t == element_type::OBJECT) {
        std::vector<internal::Term> condition;
        absl::Status status = LowerApart(
            &condition, [&] { return Condition(name, at, item); });
        if (!status.ok()) return status;
        std::vector<v1::Predicate>& alternative = alternatives.emplace_back();
        for (internal::Term& term : condition) {
          alternative.push_back(std::move(term.predicate));
        }
      } else if (t == element_type::BOOL || t == element_type::NULL_VALUE) {
        // true, false, null: EQ on the literal.
        v1::Predicate& p = alternatives.emplace_back(1)[0];
        p.set_attribute(name);
        p.set_op(v1::OP_EQ);
        p.set_literal_value(t == element_type::NULL_VALUE ? v1::LITERAL_NULL
                            : item.get_bool().value_unsafe()
                                ? v1::LITERAL_TRUE
                                : v1::LITERAL_FALSE);
      } else if (t == element_type::STRING || IsNumber(item)) {
        bool is_string = t == element_type::STRING;
        size_t& index = is_string ? strings : numbers;
        const bool first = index == alternatives.max_size();
        if (first) {
          index = alternatives.size();
          alternatives.emplace_back(1)[0].set_attribute(name);
        }
        absl::Status status =
            AddValue(at, item, first, &is_string, &alternatives[index][0]);
        if (!status.ok()) return status;
      } else {
        return Error(at, absl::StrCat("expected a string, a number, true, "
                                      "false, null or a condition, got ",
                                      Kind(item)));
      }
    }
    for (const size_t index : {strings, numbers}) {
      if (index != alternatives.max_size()) {
        OneOrIn(&alternatives[index][0]);
      }
    }
    if (alternatives.size() == 1) {
      for (v1::Predicate& p : alternatives[0]) Add(std::move(p));
      return absl::OkStatus();
    }
    if (alternatives.size() > kMaxOrAlternatives) {
      return Error(place, absl::StrCat("a list of ", alternatives.size(),
                                       " alternatives (conditions, literals, "
                                       "and its strings and its numbers); "
                                       "the limit is ",
                                       kMaxOrAlternatives));
    }
    internal::Term group;
    group.is_group = true;
    group.group = std::move(alternatives);
    terms_->push_back(std::move(group));
    return absl::OkStatus();
  }

  // Makes `p`, whose list AddValue() filled, OP_EQ on its one value, or
  // OP_IN.
  static void OneOrIn(v1::Predicate* p) {
    const int size = p->operand_case() == v1::Predicate::kStringValues
                         ? p->string_values().values_size()
                     : p->operand_case() == v1::Predicate::kDoubleValues
                         ? p->double_values().values_size()
                         : p->int64_values().values_size();
    if (size > 1) {
      p->set_op(v1::OP_IN);
      return;
    }
    p->set_op(v1::OP_EQ);
    if (p->operand_case() == v1::Predicate::kStringValues) {
      std::string only = p->string_values().values(0);
      p->set_string_value(std::move(only));
    } else if (p->operand_case() == v1::Predicate::kDoubleValues) {
      const double only = p->double_values().values(0);
      p->set_double_value(only);
    } else {
      const int64_t only = p->int64_values().values(0);
      p->set_value(only);
    }
  }

  // Appends list entry `item` to p's int64_values, double_values or
  // string_values; `first` sets the list's type (*strings), which later
  // entries must share. Field() gives it one type of value only, so what it
  // refuses (a literal, strings with numbers) is anything-but's list.
  absl::Status AddValue(const std::string& place, const element& item,
                        bool first, bool* strings,
                        v1::Predicate* p) {
    const element_type t = item.type();
    if (t == element_type::BOOL || t == element_type::NULL_VALUE) {
      return LiteralError(place, item);  // Field() takes them apart
    }
    if (t != element_type::STRING && !IsNumber(item)) {
      return Error(place, absl::StrCat("expected a string or a number, got ",
                                       Kind(item)));
    }
    const bool is_string = t == element_type::STRING;
    if (first) {
      *strings = is_string;
    } else if (is_string != *strings) {  // Field() takes them apart
      return Error(place,
                   "anything-but takes all strings or all numbers, not both "
                   "(Event Ruler refuses it too)");
    }
    if (is_string) {
      p->mutable_string_values()->add_values(
          std::string(item.get_string().value_unsafe()));
      return absl::OkStatus();
    }
    absl::StatusOr<Num> n = Number(place, item);
    if (!n.ok()) return n.status();
    // int64_values while the list is integers, double_values once a number
    // has a fraction; an integer there must be exact as a double.
    const auto exact = [](int64_t v) {
      return v > -(int64_t{1} << 53) && v < (int64_t{1} << 53);
    };
    const char* const kInexact =
        " cannot share a list with a number with a fraction (integers there "
        "must be below 2^53 in magnitude); put it in a condition of its own";
    if (n->is_double && p->operand_case() != v1::Predicate::kDoubleValues) {
      std::vector<int64_t> before(p->int64_values().values().begin(),
                                  p->int64_values().values().end());
      p->mutable_double_values();  // the oneof's case, even before a value
      for (int64_t v : before) {
        if (!exact(v)) {
          return Error(place, absl::StrCat("the integer ", v, kInexact));
        }
        p->mutable_double_values()->add_values(static_cast<double>(v));
      }
    }
    if (p->operand_case() == v1::Predicate::kDoubleValues) {
      if (!n->is_double && !exact(n->integer)) {
        return Error(place, absl::StrCat("the integer ", n->integer, kInexact));
      }
      p->mutable_double_values()->add_values(
          n->is_double ? n->d : static_cast<double>(n->integer));
    } else {
      p->mutable_int64_values()->add_values(n->integer);
    }
    return absl::OkStatus();
  }

  // A JSON number: an int64 if it is an integer, else a double with a
  // fraction.
  struct Num {
    bool is_double = false;
    int64_t integer = 0;
    double d = 0;
    // Exact order (x87 long double holds every int64 and double).
    long double exact() const {
      return is_double ? static_cast<long double>(d)
                       : static_cast<long double>(integer);
    }
    std::string text() const {
      return is_double ? FormatDouble(d) : absl::StrCat(integer);
    }
    void SetOperand(v1::Predicate* p) const {
      if (is_double) {
        p->set_double_value(d);
      } else {
        p->set_value(integer);
      }
    }
  };
  static absl::StatusOr<Num> Number(const std::string& place,
                                    const element& e) {
    const char* const kRange =
        " is beyond the int64 range numbers compare in (-2^63 to 2^63, 2^63 "
        "excluded)";
    switch (e.type()) {
      case element_type::INT64:
        return Num{false, e.get_int64().value_unsafe(), 0};
      case element_type::UINT64:
        return Error(place,
                     absl::StrCat(e.get_uint64().value_unsafe(), kRange));
      case element_type::DOUBLE: {
        const double d = e.get_double().value_unsafe();
        // [-2^63, 2^63): the doubles that are int64 values when integral.
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
          return Error(place, absl::StrCat(Shortest(d), kRange));
        }
        if (std::floor(d) == d) return Num{false, static_cast<int64_t>(d), 0};
        return Num{true, 0, d};
      }
      default:
        return Error(place, absl::StrCat("expected a number, got ", Kind(e)));
    }
  }

  // A string operand at `place`.
  static absl::StatusOr<std::string> String(const std::string& place,
                                            const element& e) {
    if (e.type() != element_type::STRING) {
      return Error(place, absl::StrCat("expected a string, got ", Kind(e)));
    }
    return std::string(e.get_string().value_unsafe());
  }

  // The one condition object of attribute `name`'s list, at `place`.
  absl::Status Condition(const std::string& name, const std::string& place,
                         const element& e) {
    absl::StatusOr<simdjson::dom::key_value_pair> only = OnlyOperator(
        place, e, "a condition is an object of one operator, got ");
    if (!only.ok()) return only.status();
    const simdjson::dom::key_value_pair op = *only;
    const std::string at = Member(place, Sv(op.key));
    v1::Predicate p;
    p.set_attribute(name);
    for (const internal::StringOpSpelling& s : internal::kStringOps) {
      if (!s.in_patterns || Sv(op.key) != s.word) continue;
      if (op.value.type() == element_type::OBJECT &&
          (s.op == v1::OP_PREFIX || s.op == v1::OP_SUFFIX)) {
        return AffixIgnoringCase(name, at, s, op.value);
      }
      absl::StatusOr<std::string> operand = String(at, op.value);
      if (!operand.ok()) return operand.status();
      p.set_op(s.op);
      p.set_string_value(*std::move(operand));
      Add(std::move(p));
      return absl::OkStatus();
    }
    if (Sv(op.key) == "exists") {
      if (op.value.type() != element_type::BOOL) {
        return Error(at, absl::StrCat("expected true or false, got ",
                                      Kind(op.value)));
      }
      p.set_op(op.value.get_bool().value_unsafe() ? v1::OP_EXISTS
                                                  : v1::OP_NOT_EXISTS);
      Add(std::move(p));
      return absl::OkStatus();
    }
    if (Sv(op.key) == "numeric") return Numeric(name, at, op.value);
    if (Sv(op.key) == "anything-but") return AnythingBut(name, at, op.value);
    return Error(at, absl::StrCat("unknown operator ", FormatString(Sv(op.key)),
                                  " (known: ", kKnownOperators, ")"));
  }

  // {"prefix" | "suffix": {"equals-ignore-case": "..."}} at `place` (`s`
  // is prefix's or suffix's spelling): OP_PREFIX_IGNORE_CASE or
  // OP_SUFFIX_IGNORE_CASE. Event Ruler 1.8.1 takes no other operator
  // inside prefix or suffix, and neither does Cohort.
  absl::Status AffixIgnoringCase(const std::string& name,
                                 const std::string& place,
                                 const internal::StringOpSpelling& s,
                                 const element& e) {
    absl::StatusOr<simdjson::dom::key_value_pair> only = OnlyOperator(
        place, e,
        absl::StrCat("expected a string, or an object of one operator "
                     "(equals-ignore-case) inside \"",
                     s.word, "\", got "));
    if (!only.ok()) return only.status();
    const simdjson::dom::key_value_pair op = *only;
    const std::string at = Member(place, Sv(op.key));
    if (Sv(op.key) != "equals-ignore-case") {
      return Error(at, absl::StrCat("operator ", FormatString(Sv(op.key)),
                                    " inside \"", s.word,
                                    "\" is not supported (only "
                                    "equals-ignore-case is; Event Ruler "
                                    "refuses it too)"));
    }
    absl::StatusOr<std::string> operand = String(at, op.value);
    if (!operand.ok()) return operand.status();
    v1::Predicate p;
    p.set_attribute(name);
    p.set_op(s.op == v1::OP_PREFIX ? v1::OP_PREFIX_IGNORE_CASE
                                   : v1::OP_SUFFIX_IGNORE_CASE);
    p.set_string_value(*std::move(operand));
    Add(std::move(p));
    return absl::OkStatus();
  }

  // {"numeric": [op, n] or [op, n, op, n]} at `place`.
  absl::Status Numeric(const std::string& name, const std::string& place,
                       const element& e) {
    if (e.type() != element_type::ARRAY) {
      return Error(place, absl::StrCat("expected a list such as [\">\", 0, "
                                       "\"<=\", 5], got ",
                                       Kind(e)));
    }
    simdjson::dom::array list = e.get_array().value_unsafe();
    if (list.size() != 2 && list.size() != 4) {
      return Error(place,
                   absl::StrCat("expected one comparison and a number, or a "
                                "lower and an upper bound ([\">\", 0, \"<=\", "
                                "5]), got ",
                                list.size(), " entries"));
    }
    struct Bound {
      v1::Op op;
      Num value;
      bool lower;
    };
    std::vector<Bound> bounds;
    for (size_t i = 0; i < list.size(); i += 2) {
      const std::string op_place = Index(place, i);
      const element op_element = list.at(i).value_unsafe();
      absl::StatusOr<std::string> word = String(op_place, op_element);
      if (!word.ok()) return word.status();
      Bound b;
      if (*word == "=") {
        b = {v1::OP_EQ, {}, false};
      } else if (*word == "<") {
        b = {v1::OP_LT, {}, false};
      } else if (*word == "<=") {
        b = {v1::OP_LE, {}, false};
      } else if (*word == ">") {
        b = {v1::OP_GT, {}, true};
      } else if (*word == ">=") {
        b = {v1::OP_GE, {}, true};
      } else {
        return Error(op_place, absl::StrCat("unknown comparison ",
                                            FormatString(*word),
                                            " (known: =, <, <=, >, >=)"));
      }
      if (b.op == v1::OP_EQ && list.size() != 2) {
        return Error(op_place, "\"=\" stands alone: [\"=\", n]");
      }
      absl::StatusOr<Num> n =
          Number(Index(place, i + 1), list.at(i + 1).value_unsafe());
      if (!n.ok()) return n.status();
      b.value = *n;
      bounds.push_back(b);
    }
    if (bounds.size() == 2 && bounds[0].lower == bounds[1].lower) {
      return Error(Index(place, 2),
                   bounds[0].lower ? "two lower bounds; the second must be "
                                     "an upper bound (< or <=)"
                                   : "two upper bounds; the first must be a "
                                     "lower bound (> or >=)");
    }
    if (bounds.size() == 2 && !bounds[0].lower) std::swap(bounds[0], bounds[1]);
    if (bounds.size() == 2 && bounds[0].op == v1::OP_GE &&
        bounds[1].op == v1::OP_LE) {
      if (bounds[0].value.exact() > bounds[1].value.exact()) {
        return Error(place, absl::StrCat("the range is empty: ",
                                         bounds[0].value.text(), " > ",
                                         bounds[1].value.text()));
      }
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(v1::OP_BETWEEN);
      bounds[0].value.SetOperand(&p);
      if (bounds[1].value.is_double) {
        p.set_double_upper(bounds[1].value.d);
      } else {
        p.set_upper(bounds[1].value.integer);
      }
      Add(std::move(p));
      return absl::OkStatus();
    }
    for (const Bound& b : bounds) {
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(b.op);
      b.value.SetOperand(&p);
      Add(std::move(p));
    }
    return absl::OkStatus();
  }

  // {"anything-but": ...} at `place`.
  absl::Status AnythingBut(const std::string& name, const std::string& place,
                           const element& e) {
    v1::Predicate p;
    p.set_attribute(name);
    switch (e.type()) {
      case element_type::STRING:
        p.set_op(v1::OP_NE);
        p.set_string_value(std::string(e.get_string().value_unsafe()));
        break;
      case element_type::ARRAY: {
        simdjson::dom::array list = e.get_array().value_unsafe();
        if (list.size() == 0) {
          return Error(place, "an empty list excludes nothing; drop the "
                              "condition or use {\"exists\": true}");
        }
        p.set_op(v1::OP_NOT_IN);
        size_t i = 0;
        bool strings = false;
        for (const element item : list) {
          absl::Status status =
              AddValue(Index(place, i), item, i == 0,
                       &strings, &p);
          if (!status.ok()) return status;
          ++i;
        }
        break;
      }
      case element_type::OBJECT:
        return AnythingButOperator(name, place, e);
      case element_type::BOOL:
      case element_type::NULL_VALUE:
        return LiteralError(place, e);
      default: {
        absl::StatusOr<Num> n = Number(place, e);
        if (!n.ok()) return n.status();
        p.set_op(v1::OP_NE);
        n->SetOperand(&p);
      }
    }
    Add(std::move(p));
    return absl::OkStatus();
  }

  // {"anything-but": {"prefix" | "suffix" | "equals-ignore-case" |
  // "wildcard": ...}}.
  absl::Status AnythingButOperator(const std::string& name,
                                   const std::string& place,
                                   const element& e) {
    absl::StatusOr<simdjson::dom::key_value_pair> only =
        OnlyOperator(place, e,
                     "expected an object of one operator (prefix, suffix, "
                     "equals-ignore-case or wildcard), got ");
    if (!only.ok()) return only.status();
    const simdjson::dom::key_value_pair op = *only;
    const std::string at = Member(place, Sv(op.key));
    for (const internal::StringOpSpelling& s : internal::kStringOps) {
      if (!s.in_patterns || Sv(op.key) != s.word) continue;
      if (s.negated == v1::OP_UNSPECIFIED) {
        return Error(at, absl::StrCat("anything-but \"", s.word,
                                      "\" is not supported (Cohort excludes "
                                      "prefixes, suffixes, equals-ignore-case "
                                      "and wildcards; Event Ruler refuses it "
                                      "too)"));
      }
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(s.negated);
      if (op.value.type() == element_type::ARRAY &&
          (s.op == v1::OP_EQUALS_IGNORE_CASE || s.op == v1::OP_WILDCARD)) {
        // equals-ignore-case: one predicate, none of the list. wildcard: a
        // predicate for each pattern (none of them matches, a
        // conjunction), in the order written.
        const simdjson::dom::array list = op.value.get_array().value_unsafe();
        size_t i = 0;
        for (const element item : list) {
          absl::StatusOr<std::string> value = String(Index(at, i), item);
          if (!value.ok()) return value.status();
          if (s.op == v1::OP_WILDCARD) {
            v1::Predicate each = p;
            each.set_string_value(*std::move(value));
            Add(std::move(each));
          } else {
            p.mutable_string_values()->add_values(*std::move(value));
          }
          ++i;
        }
        if (i == 0) return Error(at, "an empty list excludes nothing");
        if (s.op == v1::OP_WILDCARD) return absl::OkStatus();
      } else {
        absl::StatusOr<std::string> value = String(at, op.value);
        if (!value.ok()) return value.status();
        p.set_string_value(*std::move(value));
      }
      Add(std::move(p));
      return absl::OkStatus();
    }
    return Error(at, absl::StrCat("unknown operator ", FormatString(Sv(op.key)),
                                  " inside anything-but (known: prefix, "
                                  "suffix, equals-ignore-case, wildcard)"));
  }

  // The pattern's conjunction, and the one being lowered: it, an
  // alternative of a "$or", or a condition of a list (LowerApart()).
  std::vector<internal::Term> top_;
  std::vector<internal::Term>* terms_ = &top_;
};

}  // namespace

std::string ShowControlBytes(absl::string_view text) {
  std::string shown;
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppendFormat(&shown, "\\x%02X", byte);
    } else {
      shown.push_back(c);
    }
  }
  return shown;
}

bool IsPattern(absl::string_view text) {
  for (const char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) continue;
    return c == '{';
  }
  return false;
}

absl::StatusOr<v1::SubscriptionSpec> ParsePatternSpec(
    absl::string_view json) {
  simdjson::dom::parser parser;
  if (parser.allocate(json.size() + 1, kMaxPatternDepth) != simdjson::SUCCESS) {
    return absl::ResourceExhaustedError(
        absl::StrCat("pattern: cannot allocate a parser for ", json.size(),
                     " bytes"));
  }
  element root;
  const simdjson::error_code error =
      parser.parse(json.data(), json.size(), /*realloc_if_needed=*/true)
          .get(root);
  if (error != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pattern: not valid JSON: ", simdjson::error_message(error)));
  }
  return Lowering().Run(root);
}

absl::StatusOr<std::vector<v1::Predicate>> ParsePattern(
    absl::string_view json) {
  absl::StatusOr<v1::SubscriptionSpec> spec = ParsePatternSpec(json);
  if (!spec.ok()) return spec.status();
  if (spec->any_of_size() > 0) {
    return absl::InvalidArgumentError(
        "pattern: it needs \"or\" (a \"$or\", or a list of several kinds "
        "of condition), which is read here as predicates only");
  }
  return std::vector<v1::Predicate>(
      std::make_move_iterator(spec->mutable_predicates()->begin()),
      std::make_move_iterator(spec->mutable_predicates()->end()));
}

}  // namespace filter
}  // namespace cohort
