#include "filter/pattern.h"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
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

class Lowering {
 public:
  absl::StatusOr<std::vector<v1::Predicate>> Run(const element& root) {
    if (root.type() != element_type::OBJECT) {
      return Error("", absl::StrCat("a pattern is a JSON object, got ",
                                    Kind(root)));
    }
    absl::Status status = Object(root, "");
    if (!status.ok()) return status;
    return std::move(out_);
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

  // The refusal of a JSON literal (true, false, null) at `place`, in an
  // anything-but (Event Ruler refuses it there too) or among several
  // values (that needs `or`).
  static absl::Status LiteralError(absl::string_view place, const element& e,
                                   bool anything_but) {
    if (anything_but) {
      return Error(place, absl::StrCat(Literal(e),
                                       " in anything-but: it takes strings "
                                       "and numbers (Event Ruler refuses "
                                       "literals there too)"));
    }
    return Error(place, absl::StrCat(Literal(e),
                                     " among several values: a literal "
                                     "(true, false, null) is matched alone "
                                     "in its list; Cohort has no `or` "
                                     "between predicates yet (docs/DESIGN.md "
                                     "section 1.6)"));
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

  // The fields of one object of the pattern, whose path so far is `name`
  // (also its place).
  absl::Status Object(const element& e, const std::string& name) {
    simdjson::dom::object object = e.get_object().value_unsafe();
    if (object.size() == 0) {
      return Error(name.empty() ? "the top" : name,
                   "an empty object names no field to match");
    }
    absl::flat_hash_set<absl::string_view> keys;
    for (const simdjson::dom::key_value_pair field : object) {
      const std::string path = Member(name, Sv(field.key));
      if (!keys.insert(Sv(field.key)).second) {
        return Error(path, "this key appears twice in one object");
      }
      if (Sv(field.key) == "$or") {
        return Error(path,
                     "\"$or\" is not supported yet: Cohort has no `or` "
                     "between predicates (docs/DESIGN.md section 1.6); "
                     "subscribe each alternative as a subscription of its "
                     "own");
      }
      absl::Status status;
      switch (field.value.type()) {
        case element_type::OBJECT:
          status = Object(field.value, path);
          break;
        case element_type::ARRAY:
          status = Field(path, field.value);
          break;
        default:
          status = Error(path, absl::StrCat("expected a list of values or "
                                            "conditions, or an object, got ",
                                            Kind(field.value)));
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // The list of attribute `name` (also its place).
  absl::Status Field(const std::string& name, const element& list_element) {
    const std::string why = internal::WhyBadName(name);
    if (!why.empty()) {
      return Error(name, absl::StrCat(FormatString(name),
                                      " is not an attribute name Cohort "
                                      "accepts: ",
                                      why));
    }
    simdjson::dom::array list = list_element.get_array().value_unsafe();
    if (list.size() == 0) {
      return Error(name, "an empty list matches nothing");
    }
    if (list.size() == 1 && list.at(0).value_unsafe().type() ==
                                element_type::OBJECT) {
      return Condition(name, Index(name, 0), list.at(0).value_unsafe());
    }
    if (list.size() == 1) {
      const element only = list.at(0).value_unsafe();
      if (only.type() == element_type::BOOL ||
          only.type() == element_type::NULL_VALUE) {
        // [true], [false], [null]: EQ on the literal.
        v1::Predicate p;
        p.set_attribute(name);
        p.set_op(v1::OP_EQ);
        p.set_literal_value(only.type() == element_type::NULL_VALUE
                                ? v1::LITERAL_NULL
                            : only.get_bool().value_unsafe()
                                ? v1::LITERAL_TRUE
                                : v1::LITERAL_FALSE);
        out_.push_back(std::move(p));
        return absl::OkStatus();
      }
    }
    // A list of plain values: EQ or IN, of one type.
    v1::Predicate p;
    p.set_attribute(name);
    size_t i = 0;
    bool strings = false;
    for (const element item : list) {
      const std::string place = Index(name, i);
      if (item.type() == element_type::OBJECT) {
        return Error(place,
                     "a condition in a list of several entries: Cohort has "
                     "no `or` between predicates yet (docs/DESIGN.md "
                     "section 1.6); write the condition alone in its list, "
                     "or list plain values");
      }
      absl::Status status = AddValue(place, item, i == 0,
                                     /*anything_but=*/false, &strings, &p);
      if (!status.ok()) return status;
      ++i;
    }
    if (list.size() == 1) {
      p.set_op(v1::OP_EQ);
      if (strings) {
        std::string only = p.string_values().values(0);
        p.set_string_value(std::move(only));
      } else if (p.operand_case() == v1::Predicate::kDoubleValues) {
        const double only = p.double_values().values(0);
        p.set_double_value(only);
      } else {
        const int64_t only = p.int64_values().values(0);
        p.set_value(only);
      }
    } else {
      p.set_op(v1::OP_IN);
    }
    out_.push_back(std::move(p));
    return absl::OkStatus();
  }

  // Appends list entry `item` to p's int64_values or string_values; `first`
  // sets the list's type (*strings), which later entries must share.
  absl::Status AddValue(const std::string& place, const element& item,
                        bool first, bool anything_but, bool* strings,
                        v1::Predicate* p) {
    const element_type t = item.type();
    if (t == element_type::BOOL || t == element_type::NULL_VALUE) {
      return LiteralError(place, item, anything_but);
    }
    if (t != element_type::STRING && !IsNumber(item)) {
      return Error(place, absl::StrCat("expected a string or a number, got ",
                                       Kind(item)));
    }
    const bool is_string = t == element_type::STRING;
    if (first) {
      *strings = is_string;
    } else if (is_string != *strings) {
      return Error(place,
                   "a list that mixes strings and numbers needs `or` between "
                   "predicates, which Cohort does not have yet "
                   "(docs/DESIGN.md section 1.6)");
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
      if (Sv(op.key) != s.word) continue;
      if (op.value.type() == element_type::OBJECT) {
        return Error(at, absl::StrCat("\"", s.word,
                                      "\" with an operator inside is not "
                                      "supported yet; give it a string"));
      }
      absl::StatusOr<std::string> operand = String(at, op.value);
      if (!operand.ok()) return operand.status();
      p.set_op(s.op);
      p.set_string_value(*std::move(operand));
      out_.push_back(std::move(p));
      return absl::OkStatus();
    }
    if (Sv(op.key) == "exists") {
      if (op.value.type() != element_type::BOOL) {
        return Error(at, absl::StrCat("expected true or false, got ",
                                      Kind(op.value)));
      }
      p.set_op(op.value.get_bool().value_unsafe() ? v1::OP_EXISTS
                                                  : v1::OP_NOT_EXISTS);
      out_.push_back(std::move(p));
      return absl::OkStatus();
    }
    if (Sv(op.key) == "numeric") return Numeric(name, at, op.value);
    if (Sv(op.key) == "anything-but") return AnythingBut(name, at, op.value);
    return Error(at, absl::StrCat("unknown operator ", FormatString(Sv(op.key)),
                                  " (known: ", kKnownOperators, ")"));
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
      out_.push_back(std::move(p));
      return absl::OkStatus();
    }
    for (const Bound& b : bounds) {
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(b.op);
      b.value.SetOperand(&p);
      out_.push_back(std::move(p));
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
                       /*anything_but=*/true, &strings, &p);
          if (!status.ok()) return status;
          ++i;
        }
        break;
      }
      case element_type::OBJECT:
        return AnythingButOperator(name, place, e);
      case element_type::BOOL:
      case element_type::NULL_VALUE:
        return LiteralError(place, e, /*anything_but=*/true);
      default: {
        absl::StatusOr<Num> n = Number(place, e);
        if (!n.ok()) return n.status();
        p.set_op(v1::OP_NE);
        n->SetOperand(&p);
      }
    }
    out_.push_back(std::move(p));
    return absl::OkStatus();
  }

  // {"anything-but": {"prefix" | "suffix" | "equals-ignore-case": ...}}.
  absl::Status AnythingButOperator(const std::string& name,
                                   const std::string& place,
                                   const element& e) {
    absl::StatusOr<simdjson::dom::key_value_pair> only =
        OnlyOperator(place, e,
                     "expected an object of one operator (prefix, suffix or "
                     "equals-ignore-case), got ");
    if (!only.ok()) return only.status();
    const simdjson::dom::key_value_pair op = *only;
    const std::string at = Member(place, Sv(op.key));
    for (const internal::StringOpSpelling& s : internal::kStringOps) {
      if (Sv(op.key) != s.word) continue;
      if (s.negated == v1::OP_UNSPECIFIED) {
        return Error(at, absl::StrCat("anything-but \"", s.word,
                                      "\" is not supported yet (Cohort "
                                      "excludes prefixes, suffixes and "
                                      "equals-ignore-case)"));
      }
      v1::Predicate p;
      p.set_attribute(name);
      p.set_op(s.negated);
      if (s.op == v1::OP_EQUALS_IGNORE_CASE &&
          op.value.type() == element_type::ARRAY) {
        const simdjson::dom::array list = op.value.get_array().value_unsafe();
        size_t i = 0;
        for (const element item : list) {
          absl::StatusOr<std::string> value = String(Index(at, i), item);
          if (!value.ok()) return value.status();
          p.mutable_string_values()->add_values(*std::move(value));
          ++i;
        }
        if (i == 0) return Error(at, "an empty list excludes nothing");
      } else {
        absl::StatusOr<std::string> value = String(at, op.value);
        if (!value.ok()) return value.status();
        p.set_string_value(*std::move(value));
      }
      out_.push_back(std::move(p));
      return absl::OkStatus();
    }
    return Error(at, absl::StrCat("unknown operator ", FormatString(Sv(op.key)),
                                  " inside anything-but (known: prefix, "
                                  "suffix, equals-ignore-case)"));
  }

  std::vector<v1::Predicate> out_;
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

absl::StatusOr<std::vector<v1::Predicate>> ParsePattern(
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

}  // namespace filter
}  // namespace cohort
