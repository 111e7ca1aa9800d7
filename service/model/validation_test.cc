// Over 800 lines: every request check's message, field by field, one suite
// per request; they share the helpers at the top.
#include "service/model/validation.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/interner.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void AddPredicate(v1::SubscriptionSpec* spec, const std::string& attribute,
                  v1::Op op, int64_t value, int64_t upper = 0) {
  v1::Predicate* p = spec->add_predicates();
  p->set_attribute(attribute);
  p->set_op(op);
  p->set_value(value);
  p->set_upper(upper);
}

void AddAttribute(v1::Event* event, const std::string& name, int64_t value) {
  v1::Attribute* a = event->add_attributes();
  a->set_name(name);
  a->set_value(value);
}

// Four valid subscriptions of two predicates each; cases break one field.
v1::SubscribeRequest BaseSubscribe() {
  v1::SubscribeRequest request;
  for (int i = 0; i < 4; ++i) {
    v1::SubscriptionSpec* spec = request.add_subscriptions();
    spec->set_subscriber(absl::StrCat("sub", i));
    AddPredicate(spec, "price", v1::OP_GE, 10);
    AddPredicate(spec, "volume", v1::OP_BETWEEN, 1, 100);
  }
  return request;
}

// Three valid events of two attributes each; cases break one field.
v1::PublishRequest BasePublish() {
  v1::PublishRequest request;
  for (int i = 0; i < 3; ++i) {
    v1::Event* event = request.add_events();
    AddAttribute(event, "price", i);
    AddAttribute(event, "volume", 2 * i);
    event->set_payload("data");
  }
  return request;
}

v1::UnsubscribeRequest Unsubscribe(std::vector<uint64_t> ids) {
  v1::UnsubscribeRequest request;
  for (uint64_t id : ids) request.add_subscription_ids(id);
  return request;
}

v1::ListenRequest Listen(const std::string& subscriber) {
  v1::ListenRequest request;
  request.set_subscriber(subscriber);
  return request;
}

v1::Predicate* PredicateOf(v1::SubscribeRequest* r, int i, int j) {
  return r->mutable_subscriptions(i)->mutable_predicates(j);
}

// One malformed request: `mutate` breaks a valid base request; the status
// must have `code` and its message must contain every string of `expected`.
template <typename Request>
struct BadCase {
  std::string name;
  std::function<void(Request*)> mutate;
  absl::StatusCode code;
  std::vector<std::string> expected;
};

template <typename Request>
void ExpectRejected(
    const Request& base, const std::vector<BadCase<Request>>& cases,
    const std::function<absl::Status(const Request&, const Limits&)>&
        validate) {
  for (const BadCase<Request>& c : cases) {
    SCOPED_TRACE(c.name);
    Request request = base;
    c.mutate(&request);
    const absl::Status status = validate(request, Limits());
    EXPECT_EQ(status.code(), c.code) << status;
    for (const std::string& part : c.expected) {
      EXPECT_THAT(std::string(status.message()), HasSubstr(part));
    }
  }
}

const char kOpList[] =
    "is not an operator; use OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, "
    "OP_BETWEEN, OP_IN, OP_NOT_IN, OP_PREFIX, OP_SUFFIX, "
    "OP_EQUALS_IGNORE_CASE, OP_NOT_PREFIX, OP_NOT_SUFFIX, OP_CIDR, "
    "OP_WILDCARD, OP_NOT_WILDCARD, OP_NOT_EQUALS_IGNORE_CASE, "
    "OP_PREFIX_IGNORE_CASE, OP_SUFFIX_IGNORE_CASE, OP_EXISTS or "
    "OP_NOT_EXISTS";
constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

TEST(ValidateSubscribe, RejectsEachMalformedRequestNamingFieldAndRule) {
  using R = v1::SubscribeRequest;
  const std::vector<BadCase<R>> cases = {
      {"op unspecified",
       [](R* r) { PredicateOf(r, 3, 0)->set_op(v1::OP_UNSPECIFIED); },
       kInvalid,
       {absl::StrCat("subscriptions[3].predicates[0].op: OP_UNSPECIFIED (0) ",
                     kOpList)}},
      {"op 99 (open enum)",
       [](R* r) { PredicateOf(r, 1, 1)->set_op(static_cast<v1::Op>(99)); },
       kInvalid,
       {absl::StrCat("subscriptions[1].predicates[1].op: unknown value 99 ",
                     kOpList)}},
      {"a literal for OP_LT",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_LT);
         PredicateOf(r, 1, 0)->set_literal_value(v1::LITERAL_TRUE);
       },
       kInvalid,
       {"subscriptions[1].predicates[0].literal_value: OP_LT does not take "
        "a literal; only OP_EQ and OP_NE do"}},
      {"LITERAL_UNSPECIFIED",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_NE);
         PredicateOf(r, 1, 0)->set_literal_value(v1::LITERAL_UNSPECIFIED);
       },
       kInvalid,
       {"subscriptions[1].predicates[0].literal_value: 0 is not a literal; "
        "use LITERAL_TRUE, LITERAL_FALSE or LITERAL_NULL"}},
      {"a literal in OP_IN",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_IN);
         PredicateOf(r, 1, 0)->set_literal_value(v1::LITERAL_NULL);
       },
       kInvalid,
       {"subscriptions[1].predicates[0]: OP_IN needs a list operand "
        "(int64_values, double_values or string_values), got "
        "literal_value"}},
      {"op 23, just past OP_SUFFIX_IGNORE_CASE",
       [](R* r) { PredicateOf(r, 0, 0)->set_op(static_cast<v1::Op>(23)); },
       kInvalid,
       {"subscriptions[0].predicates[0].op: unknown value 23"}},
      {"PREFIX_IGNORE_CASE of an int64",
       [](R* r) { PredicateOf(r, 2, 0)->set_op(v1::OP_PREFIX_IGNORE_CASE); },
       kInvalid,
       {"subscriptions[2].predicates[0]: OP_PREFIX_IGNORE_CASE needs a "
        "string_value operand, got value"}},
      {"NOT_EQUALS_IGNORE_CASE of an int64",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_NOT_EQUALS_IGNORE_CASE);
       },
       kInvalid,
       {"subscriptions[3].predicates[0]: OP_NOT_EQUALS_IGNORE_CASE needs a "
        "string_value or string_values operand, got value"}},
      {"EQUALS_IGNORE_CASE of an int64 list",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_EQUALS_IGNORE_CASE);
         PredicateOf(r, 3, 0)->mutable_int64_values()->add_values(1);
       },
       kInvalid,
       {"subscriptions[3].predicates[0]: OP_EQUALS_IGNORE_CASE needs a "
        "string_value or string_values operand, got int64_values"}},
      {"EQUALS_IGNORE_CASE of an empty list",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_EQUALS_IGNORE_CASE);
         PredicateOf(r, 3, 0)->mutable_string_values();
       },
       kInvalid,
       {"subscriptions[3].predicates[0].string_values.values: empty; "
        "OP_EQUALS_IGNORE_CASE needs 1 to 64 values"}},
      // Issue 19: operands by op, string and list limits.
      {"IN with a single value",
       [](R* r) { PredicateOf(r, 0, 0)->set_op(v1::OP_IN); },
       kInvalid,
       {"subscriptions[0].predicates[0]: OP_IN needs a list operand "
        "(int64_values, double_values or string_values), got value"}},
      {"NOT_IN without an operand",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_NOT_IN);
         PredicateOf(r, 1, 0)->clear_value();
       },
       kInvalid,
       {"subscriptions[1].predicates[0]: OP_NOT_IN needs a list operand",
        "got nothing"}},
      {"IN with an empty int64 list",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_IN);
         PredicateOf(r, 2, 0)->mutable_int64_values();
       },
       kInvalid,
       {"subscriptions[2].predicates[0].int64_values.values: empty; OP_IN "
        "needs 1 to 64 values"}},
      {"NOT_IN with an empty string list",
       [](R* r) {
         PredicateOf(r, 2, 1)->set_op(v1::OP_NOT_IN);
         PredicateOf(r, 2, 1)->mutable_string_values();
       },
       kInvalid,
       {"subscriptions[2].predicates[1].string_values.values: empty"}},
      {"IN with 65 values",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_IN);
         for (int i = 0; i < 65; ++i) {
           PredicateOf(r, 3, 0)->mutable_int64_values()->add_values(i);
         }
       },
       kInvalid,
       {"subscriptions[3].predicates[0].int64_values.values: 65 values; the "
        "limit is 64 (--max_set_size)"}},
      {"IN with a 257-byte string",
       [](R* r) {
         PredicateOf(r, 0, 1)->set_op(v1::OP_IN);
         PredicateOf(r, 0, 1)->mutable_string_values()->add_values("a");
         PredicateOf(r, 0, 1)->mutable_string_values()->add_values(
             std::string(257, 'x'));
       },
       kInvalid,
       {"subscriptions[0].predicates[1].string_values.values[1]: 257 bytes; "
        "the limit is 256 (--max_string_bytes)"}},
      {"EQ with a list",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_op(v1::OP_EQ);
         PredicateOf(r, 1, 1)->mutable_string_values()->add_values("a");
       },
       kInvalid,
       {"subscriptions[1].predicates[1].string_values: OP_EQ takes one "
        "value; lists are for OP_IN and OP_NOT_IN"}},
      {"NE with an int64 list",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_NE);
         PredicateOf(r, 1, 0)->mutable_int64_values()->add_values(1);
       },
       kInvalid,
       {"subscriptions[1].predicates[0].int64_values: OP_NE takes one "
        "value"}},
      {"EQ with a 257-byte string",
       [](R* r) {
         PredicateOf(r, 3, 1)->set_op(v1::OP_EQ);
         PredicateOf(r, 3, 1)->set_string_value(std::string(257, 'y'));
       },
       kInvalid,
       {"subscriptions[3].predicates[1].string_value: 257 bytes; the limit "
        "is 256 (--max_string_bytes)"}},
      {"PREFIX of an int64",
       [](R* r) { PredicateOf(r, 0, 0)->set_op(v1::OP_PREFIX); },
       kInvalid,
       {"subscriptions[0].predicates[0]: OP_PREFIX needs a string_value "
        "operand, got value"}},
      {"PREFIX without an operand",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_PREFIX);
         PredicateOf(r, 2, 0)->clear_value();
       },
       kInvalid,
       {"subscriptions[2].predicates[0]: OP_PREFIX needs a string_value "
        "operand, got nothing"}},
      {"PREFIX of 257 bytes",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_PREFIX);
         PredicateOf(r, 2, 0)->set_string_value(std::string(257, '/'));
       },
       kInvalid,
       {"subscriptions[2].predicates[0].string_value: 257 bytes"}},
      {"SUFFIX of an int64",
       [](R* r) { PredicateOf(r, 0, 0)->set_op(v1::OP_SUFFIX); },
       kInvalid,
       {"subscriptions[0].predicates[0]: OP_SUFFIX needs a string_value "
        "operand, got value"}},
      {"SUFFIX of a list",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_SUFFIX);
         PredicateOf(r, 1, 0)->mutable_string_values()->add_values("x");
       },
       kInvalid,
       {"subscriptions[1].predicates[0]: OP_SUFFIX needs a string_value "
        "operand, got string_values"}},
      {"EQUALS_IGNORE_CASE of an int64",
       [](R* r) { PredicateOf(r, 3, 1)->set_op(v1::OP_EQUALS_IGNORE_CASE); },
       kInvalid,
       {"subscriptions[3].predicates[1]: OP_EQUALS_IGNORE_CASE needs a "
        "string_value or string_values operand, got value"}},
      {"EQUALS_IGNORE_CASE of 257 bytes",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_EQUALS_IGNORE_CASE);
         PredicateOf(r, 1, 0)->set_string_value(std::string(257, 'A'));
       },
       kInvalid,
       {"subscriptions[1].predicates[0].string_value: 257 bytes; the limit "
        "is 256 (--max_string_bytes)"}},
      {"WILDCARD with nine stars",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_WILDCARD);
         PredicateOf(r, 2, 0)->set_string_value("*a*b*c*d*e*f*g*h\\**");
       },
       kInvalid,
       {"subscriptions[2].predicates[0].string_value: byte 18 of the "
        "pattern: more than 8 stars (write a literal star as \\*)"}},
      {"NOT_WILDCARD with two stars in a row",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_NOT_WILDCARD);
         PredicateOf(r, 2, 0)->set_string_value("a\\**b**");
       },
       kInvalid,
       {"subscriptions[2].predicates[0].string_value: byte 6 of the "
        "pattern: two stars in a row ('**' means no more than '*'; Event "
        "Ruler refuses it too)"}},
      {"NOT_WILDCARD of an int64",
       [](R* r) { PredicateOf(r, 2, 0)->set_op(v1::OP_NOT_WILDCARD); },
       kInvalid,
       {"subscriptions[2].predicates[0]: OP_NOT_WILDCARD needs a "
        "string_value operand, got value"}},
      {"WILDCARD with a stray backslash",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_WILDCARD);
         PredicateOf(r, 2, 0)->set_string_value("a\\b*");
       },
       kInvalid,
       {"subscriptions[2].predicates[0].string_value: byte 1 of the "
        "pattern: '\\' must be followed by '*' or '\\'"}},
      {"WILDCARD of an int64",
       [](R* r) { PredicateOf(r, 2, 0)->set_op(v1::OP_WILDCARD); },
       kInvalid,
       {"subscriptions[2].predicates[0]: OP_WILDCARD needs a string_value "
        "operand, got value"}},
      {"CIDR of an int64",
       [](R* r) { PredicateOf(r, 1, 1)->set_op(v1::OP_CIDR); },
       kInvalid,
       {"subscriptions[1].predicates[1]: OP_CIDR needs a string_value "
        "operand, got value"}},
      {"CIDR of no network",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_op(v1::OP_CIDR);
         PredicateOf(r, 1, 1)->set_string_value("10.0.0.0/33");
       },
       kInvalid,
       {"subscriptions[1].predicates[1].string_value: \"10.0.0.0/33\" is not "
        "an IPv4 or IPv6 network (an address, and optionally \"/\" and a "
        "prefix length: 10.0.0.0/8, 2001:db8::/32)"}},
      {"CIDR of a name",
       [](R* r) {
         PredicateOf(r, 0, 1)->set_op(v1::OP_CIDR);
         PredicateOf(r, 0, 1)->set_string_value("host\n.example/8");
       },
       kInvalid,
       {"subscriptions[0].predicates[1].string_value: \"host\\n.example/8\" "
        "is not an IPv4 or IPv6 network"}},
      {"NOT_PREFIX of an int64",
       [](R* r) { PredicateOf(r, 2, 1)->set_op(v1::OP_NOT_PREFIX); },
       kInvalid,
       {"subscriptions[2].predicates[1]: OP_NOT_PREFIX needs a "
        "string_value operand, got value"}},
      {"NOT_PREFIX of the empty string",
       [](R* r) {
         PredicateOf(r, 2, 1)->set_op(v1::OP_NOT_PREFIX);
         PredicateOf(r, 2, 1)->set_string_value("");
       },
       kInvalid,
       {"subscriptions[2].predicates[1].string_value: empty; OP_NOT_PREFIX "
        "needs 1 byte or more"}},
      {"NOT_SUFFIX of the empty string",
       [](R* r) {
         PredicateOf(r, 0, 0)->set_op(v1::OP_NOT_SUFFIX);
         PredicateOf(r, 0, 0)->set_string_value("");
       },
       kInvalid,
       {"subscriptions[0].predicates[0].string_value: empty; OP_NOT_SUFFIX "
        "needs 1 byte or more"}},
      {"NOT_SUFFIX of 257 bytes",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_NOT_SUFFIX);
         PredicateOf(r, 3, 0)->set_string_value(std::string(257, 'z'));
       },
       kInvalid,
       {"subscriptions[3].predicates[0].string_value: 257 bytes; the limit "
        "is 256 (--max_string_bytes)"}},
      {"SUFFIX of 257 bytes",
       [](R* r) {
         PredicateOf(r, 2, 0)->set_op(v1::OP_SUFFIX);
         PredicateOf(r, 2, 0)->set_string_value(std::string(257, '.'));
       },
       kInvalid,
       {"subscriptions[2].predicates[0].string_value: 257 bytes; the limit "
        "is 256 (--max_string_bytes)"}},
      {"EXISTS with a value",
       [](R* r) { PredicateOf(r, 1, 0)->set_op(v1::OP_EXISTS); },
       kInvalid,
       {"subscriptions[1].predicates[0].value: OP_EXISTS takes no operand"}},
      {"NOT_EXISTS with a string",
       [](R* r) {
         PredicateOf(r, 3, 0)->set_op(v1::OP_NOT_EXISTS);
         PredicateOf(r, 3, 0)->set_string_value("x");
       },
       kInvalid,
       {"subscriptions[3].predicates[0].string_value: OP_NOT_EXISTS takes "
        "no operand"}},
      {"BETWEEN of an int64 and a string",
       [](R* r) { PredicateOf(r, 0, 1)->set_string_upper("z"); },
       kInvalid,
       {"subscriptions[0].predicates[1].string_upper: a string upper bound "
        "for a number lower bound"}},
      {"BETWEEN of strings, reversed in byte order",
       [](R* r) {
         PredicateOf(r, 2, 1)->set_string_value("b");
         PredicateOf(r, 2, 1)->set_string_upper("a\xff");
       },
       kInvalid,
       {"subscriptions[2].predicates[1]: OP_BETWEEN needs string_value <= "
        "string_upper (byte order), got \"b\" > \"a\\xff\""}},
      {"a NaN operand",
       [](R* r) { PredicateOf(r, 3, 0)->set_double_value(std::nan("")); },
       kInvalid,
       {"subscriptions[3].predicates[0].double_value: nan is not a number "
        "(numbers must be finite, within the int64 range)"}},
      {"an infinite operand",
       [](R* r) {
         PredicateOf(r, 0, 0)->set_double_value(
             -std::numeric_limits<double>::infinity());
       },
       kInvalid,
       {"subscriptions[0].predicates[0].double_value: -inf is beyond the "
        "int64 range numbers compare in (-2^63 to 2^63, 2^63 excluded)"}},
      {"an operand of 2^63",
       [](R* r) { PredicateOf(r, 2, 0)->set_double_value(0x1p63); },
       kInvalid,
       {"subscriptions[2].predicates[0].double_value: 9223372036854775808 is "
        "beyond the int64 range"}},
      {"BETWEEN whose double upper bound is below the lower",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_value(5);
         PredicateOf(r, 1, 1)->set_double_upper(4.5);
       },
       kInvalid,
       {"subscriptions[1].predicates[1]: OP_BETWEEN needs value <= upper, "
        "got value 5 > upper 4.5"}},
      {"BETWEEN whose double lower bound is above the upper",
       [](R* r) { PredicateOf(r, 1, 1)->set_double_value(100.25); },
       kInvalid,
       {"subscriptions[1].predicates[1]: OP_BETWEEN needs value <= upper, "
        "got value 100.25 > upper 100"}},
      {"BETWEEN with a NaN upper bound",
       [](R* r) { PredicateOf(r, 0, 1)->set_double_upper(std::nan("")); },
       kInvalid,
       {"subscriptions[0].predicates[1].double_upper: nan is not a number"}},
      {"a list with a fraction and 2^53",
       [](R* r) {
         v1::Predicate* p = PredicateOf(r, 3, 0);
         p->set_op(v1::OP_NOT_IN);
         p->mutable_double_values()->add_values(0.5);
         p->mutable_double_values()->add_values(-0x1p53);
       },
       kInvalid,
       {"subscriptions[3].predicates[0].double_values.values[1]: "
        "-9007199254740992 is an integer of magnitude 2^53 or more in a list "
        "with a number with a fraction"}},
      {"a list with NaN",
       [](R* r) {
         v1::Predicate* p = PredicateOf(r, 2, 1);
         p->set_op(v1::OP_IN);
         p->mutable_double_values()->add_values(1);
         p->mutable_double_values()->add_values(std::nan(""));
       },
       kInvalid,
       {"subscriptions[2].predicates[1].double_values.values[1]: nan is not "
        "a number"}},
      {"an empty double list",
       [](R* r) {
         v1::Predicate* p = PredicateOf(r, 2, 1);
         p->set_op(v1::OP_IN);
         p->mutable_double_values();
       },
       kInvalid,
       {"subscriptions[2].predicates[1].double_values.values: empty; OP_IN "
        "needs 1 to"}},
      {"PREFIX of a double",
       [](R* r) {
         PredicateOf(r, 1, 0)->set_op(v1::OP_PREFIX);
         PredicateOf(r, 1, 0)->set_double_value(1.5);
       },
       kInvalid,
       {"subscriptions[1].predicates[0]: OP_PREFIX needs a string_value "
        "operand, got double_value"}},
      {"BETWEEN of a string and a double",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_string_value("a");
         PredicateOf(r, 1, 1)->set_double_upper(2.5);
       },
       kInvalid,
       {"subscriptions[1].predicates[1].double_upper: a number upper bound "
        "for a string lower bound"}},
      {"BETWEEN of a string and an int64",
       [](R* r) { PredicateOf(r, 1, 1)->set_string_value("a"); },
       kInvalid,
       {"subscriptions[1].predicates[1].upper: a number upper bound for a "
        "string lower bound"}},
      {"BETWEEN of a string with a 257-byte upper bound",
       [](R* r) {
         PredicateOf(r, 3, 1)->set_string_value("a");
         PredicateOf(r, 3, 1)->set_string_upper(std::string(257, 'z'));
       },
       kInvalid,
       {"subscriptions[3].predicates[1].string_upper: 257 bytes; the limit "
        "is 256 (--max_string_bytes)"}},
      {"op negative",
       [](R* r) { PredicateOf(r, 2, 0)->set_op(static_cast<v1::Op>(-1)); },
       kInvalid,
       {"subscriptions[2].predicates[0].op: unknown value -1"}},
      {"between with value > upper",
       [](R* r) {
         PredicateOf(r, 0, 1)->set_value(10);
         PredicateOf(r, 0, 1)->set_upper(5);
       },
       kInvalid,
       {"subscriptions[0].predicates[1]: OP_BETWEEN needs value <= upper, "
        "got value 10 > upper 5"}},
      {"between with default upper 0 and positive value",
       [](R* r) { PredicateOf(r, 2, 1)->clear_upper(); },
       kInvalid,
       {"subscriptions[2].predicates[1]: OP_BETWEEN needs value <= upper, "
        "got value 1 > upper 0"}},
      {"between at the int64 extremes, reversed",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_value(kMax);
         PredicateOf(r, 1, 1)->set_upper(kMin);
       },
       kInvalid,
       {absl::StrCat("got value ", kMax, " > upper ", kMin)}},
      {"no predicates",
       [](R* r) { r->mutable_subscriptions(0)->clear_predicates(); },
       kInvalid,
       {"subscriptions[0].predicates: empty; a subscription needs 1 to 32 "
        "predicates"}},
      {"33 predicates",
       [](R* r) {
         for (int j = 2; j < 33; ++j) {
           AddPredicate(r->mutable_subscriptions(2), "x", v1::OP_EQ, j);
         }
       },
       kInvalid,
       {"subscriptions[2].predicates: has 33 predicates; the limit is 32 "
        "(--max_predicates)"}},
      {"attribute empty",
       [](R* r) { PredicateOf(r, 0, 0)->clear_attribute(); },
       kInvalid,
       {"subscriptions[0].predicates[0].attribute: empty",
        "1 to 64 characters"}},
      {"attribute 65 characters",
       [](R* r) { PredicateOf(r, 1, 0)->set_attribute(std::string(65, 'a')); },
       kInvalid,
       {"subscriptions[1].predicates[0].attribute: 65 characters long; the "
        "limit is 64"}},
      {"attribute with '%'",
       [](R* r) { PredicateOf(r, 3, 1)->set_attribute("pri%ce"); },
       kInvalid,
       {"subscriptions[3].predicates[1].attribute: \"pri%ce\" has '%' at "
        "position 3, which is not allowed",
        "[A-Za-z_][A-Za-z0-9_.-]{0,63}"}},
      {"attribute starting with a digit",
       [](R* r) { PredicateOf(r, 0, 1)->set_attribute("1price"); },
       kInvalid,
       {"subscriptions[0].predicates[1].attribute: \"1price\" starts with "
        "'1'; an attribute name starts with a letter or '_'"}},
      {"attribute starting with '.'",
       [](R* r) { PredicateOf(r, 0, 0)->set_attribute(".price"); },
       kInvalid,
       {"subscriptions[0].predicates[0].attribute: \".price\" starts with "
        "'.'"}},
      {"attribute with a space",
       [](R* r) { PredicateOf(r, 2, 0)->set_attribute("a b"); },
       kInvalid,
       {"subscriptions[2].predicates[0].attribute: \"a b\" has ' ' at "
        "position 1"}},
      {"attribute with a non-ASCII letter",
       [](R* r) { PredicateOf(r, 2, 1)->set_attribute("caf\xc3\xa9"); },
       kInvalid,
       {"subscriptions[2].predicates[1].attribute:",
        "has byte 0xc3 at position 3"}},
      {"attribute with a NUL byte",
       [](R* r) {
         PredicateOf(r, 1, 1)->set_attribute(std::string("ab\0c", 4));
       },
       kInvalid,
       {"subscriptions[1].predicates[1].attribute:",
        "byte 0x00 at position 2"}},
      {"subscriber empty",
       [](R* r) { r->mutable_subscriptions(1)->clear_subscriber(); },
       kInvalid,
       {"subscriptions[1].subscriber: empty; a subscriber name is required "
        "(1 to 256 bytes)"}},
      {"subscriber 257 bytes",
       [](R* r) {
         r->mutable_subscriptions(0)->set_subscriber(std::string(257, 's'));
       },
       kInvalid,
       {"subscriptions[0].subscriber: 257 bytes; the limit is 256"}},
      {"subscriber with a newline",
       [](R* r) { r->mutable_subscriptions(3)->set_subscriber("bob\nx"); },
       kInvalid,
       {"subscriptions[3].subscriber: control character 0x0a at position 3"}},
      {"subscriber with DEL",
       [](R* r) { r->mutable_subscriptions(2)->set_subscriber("\x7f"); },
       kInvalid,
       {"subscriptions[2].subscriber: control character 0x7f at position 0"}},
      {"10001 subscriptions",
       [](R* r) {
         while (r->subscriptions_size() < 10001) {
           *r->add_subscriptions() = r->subscriptions(0);
         }
       },
       kInvalid,
       {"subscriptions: 10001 entries; the limit is 10000 (--max_batch)"}},
      {"first problem in request order is reported",
       [](R* r) {
         r->mutable_subscriptions(2)->clear_subscriber();
         PredicateOf(r, 3, 0)->set_op(v1::OP_UNSPECIFIED);
       },
       kInvalid,
       {"subscriptions[2].subscriber: empty"}},
  };
  ExpectRejected<R>(BaseSubscribe(), cases, ValidateSubscribe);
}

TEST(ValidateUnsubscribe, RejectsEachMalformedRequestNamingFieldAndRule) {
  using R = v1::UnsubscribeRequest;
  const std::vector<BadCase<R>> cases = {
      {"id listed twice",
       [](R* r) { *r = Unsubscribe({5, 7, 5}); },
       kInvalid,
       {"subscription_ids[2]: 5 is also subscription_ids[0]"}},
      {"id 0",
       [](R* r) { *r = Unsubscribe({1, 2, 0}); },
       absl::StatusCode::kNotFound,
       {"subscription_ids[2]: 0 is never a subscription id"}},
      {"a repeat outranks id 0",
       [](R* r) { *r = Unsubscribe({0, 3, 3}); },
       kInvalid,
       {"subscription_ids[2]: 3 is also subscription_ids[1]"}},
      {"id 0 listed twice",
       [](R* r) { *r = Unsubscribe({9, 0, 0}); },
       kInvalid,
       {"subscription_ids[2]: 0 is also subscription_ids[1]"}},
      {"10001 ids",
       [](R* r) {
         for (uint64_t id = 1; id <= 10001; ++id) r->add_subscription_ids(id);
       },
       kInvalid,
       {"subscription_ids: 10001 entries; the limit is 10000 (--max_batch)"}},
  };
  ExpectRejected<R>(R(), cases, ValidateUnsubscribe);
}

TEST(ValidatePublish, RejectsEachMalformedRequestNamingFieldAndRule) {
  using R = v1::PublishRequest;
  const std::vector<BadCase<R>> cases = {
      {"event without attributes",
       [](R* r) { r->mutable_events(1)->clear_attributes(); },
       kInvalid,
       {"events[1].attributes: empty; an event needs 1 to 256 attributes"}},
      {"a NaN value",
       [](R* r) {
         r->mutable_events(2)->mutable_attributes(1)->set_double_value(
             std::nan(""));
       },
       kInvalid,
       {"events[2].attributes[1].double_value: nan is not a number"}},
      {"a value past the int64 range",
       [](R* r) {
         r->mutable_events(0)->mutable_attributes(0)->set_double_value(1e300);
       },
       kInvalid,
       {"events[0].attributes[0].double_value: 1e+300 is beyond the int64 "
        "range numbers compare in"}},
      {"literal value 4",
       [](R* r) {
         r->mutable_events(1)->mutable_attributes(0)->set_literal_value(
             static_cast<v1::Literal>(4));
       },
       kInvalid,
       {"events[1].attributes[0].literal_value: 4 is not a literal"}},
      {"string value of 257 bytes",
       [](R* r) {
         r->mutable_events(2)->mutable_attributes(1)->set_string_value(
             std::string(257, 's'));
       },
       kInvalid,
       {"events[2].attributes[1].string_value: 257 bytes; the limit is 256 "
        "(--max_string_bytes)"}},
      {"257 attributes",
       [](R* r) {
         for (int i = 2; i < 257; ++i) {
           AddAttribute(r->mutable_events(0), absl::StrCat("a", i), i);
         }
       },
       kInvalid,
       {"events[0].attributes: has 257 attributes; the limit is 256 "
        "(--max_event_attributes)"}},
      {"duplicate name in a small event",
       [](R* r) { AddAttribute(r->mutable_events(2), "price", 1); },
       kInvalid,
       {"events[2].attributes[2].name: \"price\" is also the name of "
        "events[2].attributes[0]"}},
      {"duplicate name in a large event",
       [](R* r) {
         v1::Event* event = r->mutable_events(1);
         for (int i = 2; i < 100; ++i) {
           AddAttribute(event, absl::StrCat("a", i), i);
         }
         AddAttribute(event, "a40", 0);
       },
       kInvalid,
       {"events[1].attributes[100].name: \"a40\" is also the name of "
        "events[1].attributes[40]"}},
      {"payload 65537 bytes",
       [](R* r) { r->mutable_events(0)->set_payload(std::string(65537, 'p')); },
       kInvalid,
       {"events[0].payload: 65537 bytes; the limit is 65536 "
        "(--max_payload_bytes)"}},
      {"attribute name empty",
       [](R* r) { r->mutable_events(2)->mutable_attributes(1)->clear_name(); },
       kInvalid,
       {"events[2].attributes[1].name: empty"}},
      {"attribute name with '/'",
       [](R* r) {
         r->mutable_events(1)->mutable_attributes(0)->set_name("a/b");
       },
       kInvalid,
       {"events[1].attributes[0].name: \"a/b\" has '/' at position 1"}},
      {"attribute name 65 characters",
       [](R* r) {
         r->mutable_events(0)->mutable_attributes(1)->set_name(
             std::string(65, 'z'));
       },
       kInvalid,
       {"events[0].attributes[1].name: 65 characters long; the limit is 64"}},
      {"10001 events",
       [](R* r) {
         while (r->events_size() < 10001) *r->add_events() = r->events(0);
       },
       kInvalid,
       {"events: 10001 entries; the limit is 10000 (--max_batch)"}},
  };
  ExpectRejected<R>(BasePublish(), cases, ValidatePublish);
}

TEST(ValidateListen, RejectsEachMalformedRequestNamingFieldAndRule) {
  using R = v1::ListenRequest;
  const std::vector<BadCase<R>> cases = {
      {"subscriber empty",
       [](R* r) { r->clear_subscriber(); },
       kInvalid,
       {"subscriber: empty; a subscriber name is required"}},
      {"subscriber 257 bytes",
       [](R* r) { r->set_subscriber(std::string(257, 'x')); },
       kInvalid,
       {"subscriber: 257 bytes; the limit is 256"}},
      {"subscriber with a tab",
       [](R* r) { r->set_subscriber("a\tb"); },
       kInvalid,
       {"subscriber: control character 0x09 at position 1"}},
  };
  ExpectRejected<R>(Listen("alice"), cases, ValidateListen);
}

TEST(Validate, MessagesQuoteTheConfiguredLimits) {
  Limits limits;
  limits.max_predicates = 2;
  limits.max_batch = 3;
  limits.max_event_attributes = 1;
  limits.max_payload_bytes = 3;
  limits.max_subscriber_bytes = 4;

  v1::SubscribeRequest subscribe = BaseSubscribe();
  subscribe.mutable_subscriptions()->RemoveLast();
  EXPECT_TRUE(ValidateSubscribe(subscribe, limits).ok());
  AddPredicate(subscribe.mutable_subscriptions(1), "x", v1::OP_EQ, 1);
  EXPECT_THAT(std::string(ValidateSubscribe(subscribe, limits).message()),
              HasSubstr("subscriptions[1].predicates: has 3 predicates; the "
                        "limit is 2 (--max_predicates)"));
  subscribe.mutable_subscriptions(1)->clear_predicates();
  EXPECT_THAT(std::string(ValidateSubscribe(subscribe, limits).message()),
              HasSubstr("needs 1 to 2 predicates"));
  subscribe = BaseSubscribe();
  EXPECT_THAT(std::string(ValidateSubscribe(subscribe, limits).message()),
              HasSubstr("subscriptions: 4 entries; the limit is 3"));

  v1::PublishRequest publish;
  AddAttribute(publish.add_events(), "a", 1);
  publish.mutable_events(0)->set_payload("abc");
  EXPECT_TRUE(ValidatePublish(publish, limits).ok());
  publish.mutable_events(0)->set_payload("abcd");
  EXPECT_THAT(std::string(ValidatePublish(publish, limits).message()),
              HasSubstr("events[0].payload: 4 bytes; the limit is 3"));
  AddAttribute(publish.mutable_events(0), "b", 1);
  EXPECT_THAT(std::string(ValidatePublish(publish, limits).message()),
              HasSubstr("has 2 attributes; the limit is 1"));

  EXPECT_TRUE(ValidateListen(Listen("abcd"), limits).ok());
  EXPECT_THAT(std::string(ValidateListen(Listen("abcde"), limits).message()),
              HasSubstr("subscriber: 5 bytes; the limit is 4"));
}

TEST(IsValidAttributeName, FollowsTheRegularExpression) {
  EXPECT_TRUE(IsValidAttributeName("a"));
  EXPECT_TRUE(IsValidAttributeName("_"));
  EXPECT_TRUE(IsValidAttributeName("Z"));
  EXPECT_TRUE(IsValidAttributeName("a.b-c_d9"));
  EXPECT_TRUE(IsValidAttributeName("_-."));
  EXPECT_TRUE(IsValidAttributeName(std::string(64, 'x')));
  EXPECT_FALSE(IsValidAttributeName(""));
  EXPECT_FALSE(IsValidAttributeName(std::string(65, 'x')));
  EXPECT_FALSE(IsValidAttributeName("9a"));
  EXPECT_FALSE(IsValidAttributeName("-a"));
  EXPECT_FALSE(IsValidAttributeName(".a"));
  EXPECT_FALSE(IsValidAttributeName("a b"));
  EXPECT_FALSE(IsValidAttributeName("a:b"));
  EXPECT_FALSE(IsValidAttributeName("a\n"));
  EXPECT_FALSE(IsValidAttributeName(std::string("a\0", 2)));
  EXPECT_FALSE(IsValidAttributeName("\xc3\xa9"));
}

TEST(ValidateSubscribe, AcceptsEdgeCases) {
  const Limits limits;
  EXPECT_TRUE(ValidateSubscribe(v1::SubscribeRequest(), limits).ok());

  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber(std::string(256, 's'));  // exactly the limit
  AddPredicate(spec, "a", v1::OP_EQ, kMin);
  AddPredicate(spec, "a", v1::OP_EQ, kMax);
  AddPredicate(spec, "b", v1::OP_BETWEEN, 7, 7);  // equal bounds
  AddPredicate(spec, "c", v1::OP_BETWEEN, kMin, kMax);
  AddPredicate(spec, "d", v1::OP_EQ, 10, 5);    // upper ignored, even < value
  AddPredicate(spec, "e", v1::OP_LT, kMin, 3);  // upper ignored
  AddPredicate(spec, std::string(64, 'n'), v1::OP_NE, 0);
  AddPredicate(spec, "a.b-c_d", v1::OP_GT, -1);
  AddPredicate(spec, "_", v1::OP_LE, 0);
  AddPredicate(spec, "X-", v1::OP_GE, 0);
  // Numbers with fractions at the edges: -2^63 is in range, 2^53 may share
  // a list with integers alone, a double bound may meet an int64 one.
  spec->mutable_predicates(2)->set_double_value(-0x1p63);
  spec->mutable_predicates(3)->set_double_upper(0x1p63 - 1024);
  v1::Predicate* list = spec->add_predicates();
  list->set_attribute("f");
  list->set_op(v1::OP_IN);
  list->mutable_double_values()->add_values(0x1p53);
  list->mutable_double_values()->add_values(-0x1p62);
  v1::Predicate* fractions = spec->add_predicates();
  fractions->set_attribute("f");
  fractions->set_op(v1::OP_NOT_IN);
  fractions->mutable_double_values()->add_values(0.5);
  fractions->mutable_double_values()->add_values(0x1p53 - 1);
  v1::Predicate* point = spec->add_predicates();
  point->set_attribute("g");
  point->set_op(v1::OP_BETWEEN);
  point->set_double_value(7);
  point->set_upper(7);
  while (spec->predicates_size() < 32) {
    AddPredicate(spec, "a", v1::OP_EQ, spec->predicates_size());
  }
  v1::SubscriptionSpec* other = request.add_subscriptions();
  other->set_subscriber("caf\xc3\xa9 listener #1");  // UTF-8 and spaces
  AddPredicate(other, "a", v1::OP_EQ, 1);
  absl::Status status = ValidateSubscribe(request, limits);
  EXPECT_TRUE(status.ok()) << status;

  while (request.subscriptions_size() < 10000) {
    *request.add_subscriptions() = request.subscriptions(1);
  }
  status = ValidateSubscribe(request, limits);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ValidateUnsubscribe, AcceptsEdgeCases) {
  const Limits limits;
  EXPECT_TRUE(ValidateUnsubscribe(v1::UnsubscribeRequest(), limits).ok());
  EXPECT_TRUE(
      ValidateUnsubscribe(Unsubscribe({1, UINT64_MAX, 2}), limits).ok());
  v1::UnsubscribeRequest request;
  for (uint64_t id = 1; id <= 10000; ++id) request.add_subscription_ids(id);
  EXPECT_TRUE(ValidateUnsubscribe(request, limits).ok());
}

TEST(ValidatePublish, AcceptsEdgeCases) {
  const Limits limits;
  EXPECT_TRUE(ValidatePublish(v1::PublishRequest(), limits).ok());

  v1::PublishRequest request;
  v1::Event* full = request.add_events();
  for (int i = 0; i < 256; ++i) {
    AddAttribute(full, absl::StrCat("attr.", i), i % 2 ? kMin : kMax);
  }
  full->set_payload(std::string(65536, '\0'));  // exactly the limit
  v1::Event* small = request.add_events();      // no payload is fine
  AddAttribute(small, std::string(64, 'q'), 0);
  AddAttribute(small, "Price", 1);
  AddAttribute(small, "price", 2);  // names are case-sensitive
  absl::Status status = ValidatePublish(request, limits);
  EXPECT_TRUE(status.ok()) << status;

  while (request.events_size() < 10000) *request.add_events() = *small;
  status = ValidatePublish(request, limits);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ValidateListen, AcceptsEdgeCases) {
  EXPECT_TRUE(ValidateListen(Listen("a"), Limits()).ok());
  EXPECT_TRUE(ValidateListen(Listen(std::string(256, 'x')), Limits()).ok());
  EXPECT_TRUE(ValidateListen(Listen("team:ops / caf\xc3\xa9"), Limits()).ok());
}

TEST(BuildSubscriptions, MapsOpsAndKeepsUpperOnlyForBetween) {
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber("alice");
  const v1::Op ops[] = {v1::OP_EQ, v1::OP_NE, v1::OP_LT,     v1::OP_LE,
                        v1::OP_GT, v1::OP_GE, v1::OP_BETWEEN};
  const matcher::Op expected_ops[] = {matcher::Op::kEq,     matcher::Op::kNe,
                                      matcher::Op::kLt,     matcher::Op::kLe,
                                      matcher::Op::kGt,     matcher::Op::kGe,
                                      matcher::Op::kBetween};
  for (int i = 0; i < 7; ++i) {
    AddPredicate(spec, i % 2 ? "b" : "a", ops[i], -i, 100 + i);
  }
  ASSERT_TRUE(ValidateSubscribe(request, Limits()).ok());

  Interner attributes(10), subscribers(10);

  TypedAttributes typed(&attributes, 1000);
  std::vector<SubscriptionInput> out;
  ASSERT_TRUE(
      BuildSubscriptions(request, &typed, &subscribers, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subscriber, 0u);
  ASSERT_EQ(out[0].predicates.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    const matcher::Predicate& p = out[0].predicates[i];
    EXPECT_EQ(p.attribute, i % 2 ? 1u : 0u);
    EXPECT_EQ(p.op, expected_ops[i]);
    EXPECT_EQ(p.value, -i);
    EXPECT_EQ(p.upper, ops[i] == v1::OP_BETWEEN ? 100 + i : 0);
  }
  EXPECT_EQ(attributes.Name(0), "a");
  EXPECT_EQ(attributes.Name(1), "b");
  EXPECT_EQ(subscribers.Name(0), "alice");
}

// A group of any_of: alternative k holds `sizes[k]` predicates on
// "g<group>" (EQ k, then EXISTS on "e<i>").
void AddGroup(v1::SubscriptionSpec* spec, const std::vector<int>& sizes) {
  v1::AnyOf* group = spec->add_any_of();
  const std::string name = absl::StrCat("g", spec->any_of_size() - 1);
  for (size_t k = 0; k < sizes.size(); ++k) {
    v1::Conjunction* alternative = group->add_alternatives();
    for (int i = 0; i < sizes[k]; ++i) {
      v1::Predicate* p = alternative->add_predicates();
      p->set_attribute(i == 0 ? name : absl::StrCat("e", i));
      p->set_op(i == 0 ? v1::OP_EQ : v1::OP_EXISTS);
      if (i == 0) p->set_value(static_cast<int64_t>(k));
    }
  }
}

absl::Status ValidateOne(const v1::SubscriptionSpec& spec,
                         const Limits& limits = Limits()) {
  v1::SubscribeRequest request;
  *request.add_subscriptions() = spec;
  return ValidateSubscribe(request, limits);
}

TEST(ValidateSubscribe, AnyOfRules) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber("s");
  // No predicates of its own: fine with groups, not without.
  EXPECT_THAT(ValidateOne(spec).message(),
              HasSubstr("subscriptions[0].predicates: empty"));
  AddGroup(&spec, {1, 2});
  EXPECT_TRUE(ValidateOne(spec).ok());
  // A group with one alternative is allowed (a plain conjunction).
  AddGroup(&spec, {1});
  EXPECT_TRUE(ValidateOne(spec).ok());

  v1::SubscriptionSpec bad = spec;
  bad.mutable_any_of(1)->clear_alternatives();
  absl::Status s = ValidateOne(bad);
  EXPECT_EQ(s.code(), kInvalid);
  EXPECT_THAT(s.message(),
              HasSubstr("subscriptions[0].any_of[1].alternatives: empty; a "
                        "group of any_of needs 1 or more alternatives"));

  bad = spec;
  bad.mutable_any_of(0)->mutable_alternatives(1)->clear_predicates();
  s = ValidateOne(bad);
  EXPECT_EQ(s.code(), kInvalid);
  EXPECT_THAT(s.message(),
              HasSubstr("subscriptions[0].any_of[0].alternatives[1]."
                        "predicates: empty; an alternative needs 1 to 32 "
                        "predicates"));

  bad = spec;
  bad.mutable_any_of(0)->mutable_alternatives(1)->mutable_predicates(1)->set_op(
      v1::OP_UNSPECIFIED);
  s = ValidateOne(bad);
  EXPECT_EQ(s.code(), kInvalid);
  EXPECT_THAT(s.message(),
              HasSubstr("subscriptions[0].any_of[0].alternatives[1]."
                        "predicates[1].op: OP_UNSPECIFIED"));

  bad = spec;
  bad.mutable_any_of(0)->mutable_alternatives(0)->mutable_predicates(0)
      ->set_attribute("9x");
  EXPECT_THAT(ValidateOne(bad).message(),
              HasSubstr("subscriptions[0].any_of[0].alternatives[0]."
                        "predicates[0].attribute"));
  // The spec's own predicates are checked as ever.
  bad = spec;
  AddPredicate(&bad, "", v1::OP_EQ, 1);
  EXPECT_THAT(ValidateOne(bad).message(),
              HasSubstr("subscriptions[0].predicates[0].attribute"));
}

TEST(ValidateSubscribe, AnyOfExpansionIsBounded) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber("s");
  AddGroup(&spec, std::vector<int>(15, 1));
  AddGroup(&spec, std::vector<int>(10, 1));
  EXPECT_TRUE(ValidateOne(spec).ok());  // 150: the default limit
  AddGroup(&spec, {1, 1});
  absl::Status s = ValidateOne(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(),
              HasSubstr("subscriptions[0].any_of: expands into 300 "
                        "conjunctions (the product of its groups' "
                        "alternatives); the limit is 150 "
                        "(--max_or_expansion)"));
  Limits limits;
  limits.max_or_expansion = 300;
  EXPECT_TRUE(ValidateOne(spec, limits).ok());
  // A product past 2^32 neither overflows nor passes.
  v1::SubscriptionSpec huge;
  huge.set_subscriber("s");
  for (int g = 0; g < 40; ++g) AddGroup(&huge, {1, 1, 1});
  EXPECT_THAT(ValidateOne(huge).message(),
              HasSubstr("expands into over 4294967295 conjunctions"));

  // Each conjunction of the expansion has at most --max_predicates: the
  // spec's predicates and the largest alternative of every group.
  v1::SubscriptionSpec wide;
  wide.set_subscriber("s");
  for (int i = 0; i < 28; ++i) AddPredicate(&wide, "w", v1::OP_GE, i);
  AddGroup(&wide, {1, 3});
  AddGroup(&wide, {1, 1});
  EXPECT_TRUE(ValidateOne(wide).ok());  // 28 + 3 + 1 = 32
  wide.mutable_any_of(1)->mutable_alternatives(0)->add_predicates()->CopyFrom(
      wide.predicates(0));
  s = ValidateOne(wide);
  EXPECT_EQ(s.code(), kInvalid);
  EXPECT_THAT(s.message(),
              HasSubstr("subscriptions[0].any_of: its largest conjunction "
                        "(the predicates and the largest alternative of "
                        "each group) has 33 predicates; the limit is 32 "
                        "(--max_predicates)"));
}

TEST(BuildSubscriptions, AnyOfExpandsFirstGroupSlowest) {
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber("s");
  AddPredicate(spec, "x", v1::OP_EQ, 7);
  AddGroup(spec, {1, 1});
  AddGroup(spec, {1, 1, 2});
  v1::SubscriptionSpec* plain = request.add_subscriptions();
  plain->set_subscriber("s");
  AddGroup(plain, {2});
  AddPredicate(plain, "x", v1::OP_EQ, 8);
  ASSERT_TRUE(ValidateSubscribe(request, Limits()).ok());
  Interner attributes(10), subscribers(10);
  TypedAttributes typed(&attributes, 1000);
  std::vector<SubscriptionInput> out;
  ASSERT_TRUE(BuildSubscriptions(request, &typed, &subscribers, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].predicates.empty());
  ASSERT_EQ(out[0].branches.size(), 6u);
  EXPECT_EQ(out[0].conjunctions(), 6u);
  const uint32_t x = *attributes.Find("x");
  const uint32_t g0 = *attributes.Find("g0");
  const uint32_t g1 = *attributes.Find("g1");
  for (size_t b = 0; b < 6; ++b) {
    SCOPED_TRACE(b);
    const std::vector<matcher::Predicate>& branch = out[0].branches[b];
    const size_t k1 = b % 3;
    ASSERT_EQ(branch.size(), k1 == 2 ? 4u : 3u);
    EXPECT_EQ(branch[0].attribute, x);
    EXPECT_EQ(branch[0].value, 7);
    EXPECT_EQ(branch[1].attribute, g0);
    EXPECT_EQ(branch[1].value, static_cast<int64_t>(b / 3));
    EXPECT_EQ(branch[2].attribute, g1);
    EXPECT_EQ(branch[2].value, static_cast<int64_t>(k1));
  }
  // Every group of one alternative: plain predicates, the spec's first.
  EXPECT_TRUE(out[1].branches.empty());
  EXPECT_EQ(out[1].conjunctions(), 1u);
  ASSERT_EQ(out[1].predicates.size(), 3u);
  EXPECT_EQ(out[1].predicates[0].attribute, x);
  EXPECT_EQ(out[1].predicates[0].value, 8);
}

TEST(ParseFilter, OrGivesAnyOfCheckedAsSubscribeChecksIt) {
  v1::ParseFilterRequest request;
  request.set_filter("x = 1 and (y = 2 or z = 3 and w = 4)");
  absl::StatusOr<v1::SubscriptionSpec> spec = ParseFilter(request, Limits());
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->predicates_size(), 1);
  ASSERT_EQ(spec->any_of_size(), 1);
  ASSERT_EQ(spec->any_of(0).alternatives_size(), 2);
  EXPECT_EQ(spec->any_of(0).alternatives(1).predicates_size(), 2);
  // Over the expansion limit: the limit's message, at the top level.
  std::string text = "(a = 1 or a = 2)";
  for (int i = 0; i < 7; ++i) absl::StrAppend(&text, " and (a = 1 or a = 2)");
  request.set_filter(text);
  spec = ParseFilter(request, Limits());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("any_of: expands into 256 conjunctions"));
  request.set_filter("{\"$or\": [{\"a\": [1]}, {\"b\": [\"x\"]}]}");
  spec = ParseFilter(request, Limits());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->predicates_size(), 0);
  ASSERT_EQ(spec->any_of_size(), 1);
  EXPECT_EQ(spec->any_of(0).alternatives_size(), 2);
}

TEST(BuildSubscriptions, IdsAreStableAcrossRequests) {
  Interner attributes(10), subscribers(10);
  TypedAttributes typed(&attributes, 1000);
  v1::SubscribeRequest first;
  v1::SubscriptionSpec* spec = first.add_subscriptions();
  spec->set_subscriber("alice");
  AddPredicate(spec, "x", v1::OP_EQ, 1);
  spec = first.add_subscriptions();
  spec->set_subscriber("bob");
  AddPredicate(spec, "y", v1::OP_EQ, 2);
  AddPredicate(spec, "x", v1::OP_EQ, 3);

  std::vector<SubscriptionInput> out;
  ASSERT_TRUE(BuildSubscriptions(first, &typed, &subscribers, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].subscriber, 0u);
  EXPECT_EQ(out[1].subscriber, 1u);
  EXPECT_EQ(out[1].predicates[0].attribute, 1u);  // y
  EXPECT_EQ(out[1].predicates[1].attribute, 0u);  // x

  v1::SubscribeRequest second;
  spec = second.add_subscriptions();
  spec->set_subscriber("bob");
  AddPredicate(spec, "z", v1::OP_EQ, 1);
  AddPredicate(spec, "x", v1::OP_EQ, 1);
  ASSERT_TRUE(BuildSubscriptions(second, &typed, &subscribers, &out).ok());
  ASSERT_EQ(out.size(), 1u);  // replaced, not appended
  EXPECT_EQ(out[0].subscriber, 1u);
  EXPECT_EQ(out[0].predicates[0].attribute, 2u);  // z is new
  EXPECT_EQ(out[0].predicates[1].attribute, 0u);  // x kept its id

  std::vector<SubscriptionInput> empty_out(3);
  ASSERT_TRUE(BuildSubscriptions(v1::SubscribeRequest(), &typed,
                                 &subscribers, &empty_out)
                  .ok());
  EXPECT_TRUE(empty_out.empty());
}

TEST(BuildSubscriptions, FullAttributeDictionaryIsResourceExhausted) {
  Interner attributes(2), subscribers(10);
  TypedAttributes typed(&attributes, 1000);
  v1::SubscribeRequest request;
  v1::SubscriptionSpec* spec = request.add_subscriptions();
  spec->set_subscriber("alice");
  AddPredicate(spec, "a", v1::OP_EQ, 1);
  spec = request.add_subscriptions();
  spec->set_subscriber("bob");
  AddPredicate(spec, "b", v1::OP_EQ, 1);
  AddPredicate(spec, "c", v1::OP_EQ, 1);
  ASSERT_TRUE(ValidateSubscribe(request, Limits()).ok());

  std::vector<SubscriptionInput> out(1);
  out[0].subscriber = 42;
  const absl::Status status =
      BuildSubscriptions(request, &typed, &subscribers, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("subscriptions[1].predicates[1].attribute:"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("the limit is 2"));
  // Names interned before the failure stay; *out is untouched.
  EXPECT_EQ(attributes.size(), 2u);
  EXPECT_EQ(attributes.Find("c"), std::nullopt);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subscriber, 42u);
}

TEST(BuildSubscriptions, FullSubscriberDictionaryIsResourceExhausted) {
  Interner attributes(10), subscribers(1);
  TypedAttributes typed(&attributes, 1000);
  v1::SubscribeRequest request;
  for (const char* name : {"alice", "alice", "bob"}) {
    v1::SubscriptionSpec* spec = request.add_subscriptions();
    spec->set_subscriber(name);
    AddPredicate(spec, "a", v1::OP_EQ, 1);
  }
  std::vector<SubscriptionInput> out;
  const absl::Status status =
      BuildSubscriptions(request, &typed, &subscribers, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("subscriptions[2].subscriber:"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("the limit is 1"));
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(subscribers.Find("alice"), std::optional<uint32_t>(0));
}

TEST(BuildEvents, DropsAttributesNoSubscriptionNamed) {
  Interner attributes(10);
  TypedAttributes typed(&attributes, 1000);
  ASSERT_TRUE(attributes.Intern("price").ok());   // 0
  ASSERT_TRUE(attributes.Intern("volume").ok());  // 1

  v1::PublishRequest request;
  v1::Event* event = request.add_events();
  AddAttribute(event, "unknown", 5);
  AddAttribute(event, "volume", kMin);
  AddAttribute(event, "price", kMax);
  event = request.add_events();
  AddAttribute(event, "other", 1);  // nothing known: empty record
  event = request.add_events();
  AddAttribute(event, "price", -3);
  ASSERT_TRUE(ValidatePublish(request, Limits()).ok());

  std::vector<std::vector<matcher::AttributeValue>> out;
  BuildEvents(request, typed, &out);
  ASSERT_EQ(out.size(), 3u);
  ASSERT_EQ(out[0].size(), 2u);
  EXPECT_EQ(out[0][0].attribute, 1u);
  EXPECT_EQ(out[0][0].value, kMin);
  EXPECT_EQ(out[0][1].attribute, 0u);
  EXPECT_EQ(out[0][1].value, kMax);
  EXPECT_TRUE(out[1].empty());
  ASSERT_EQ(out[2].size(), 1u);
  EXPECT_EQ(out[2][0].attribute, 0u);
  EXPECT_EQ(out[2][0].value, -3);
  EXPECT_EQ(attributes.size(), 2u);  // BuildEvents does not intern
}

TEST(BuildEvents, ReusesOutputAndResizesIt) {
  Interner attributes(10);
  TypedAttributes typed(&attributes, 1000);
  ASSERT_TRUE(attributes.Intern("a").ok());
  v1::PublishRequest request;
  AddAttribute(request.add_events(), "a", 1);

  std::vector<std::vector<matcher::AttributeValue>> out(4);
  out[0].assign(100, {7, 7});  // stale content, capacity to reuse
  const size_t capacity = out[0].capacity();
  BuildEvents(request, typed, &out);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), 1u);
  EXPECT_EQ(out[0][0].attribute, 0u);
  EXPECT_EQ(out[0][0].value, 1);
  EXPECT_EQ(out[0].capacity(), capacity);

  BuildEvents(v1::PublishRequest(), typed, &out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace service
}  // namespace cohort
