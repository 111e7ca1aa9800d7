#include "filter/pattern.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "filter/parse.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {
namespace {

using ::testing::HasSubstr;

// The spec of `json` in the CLI grammar (FormatSubscription: its
// predicates, then each group in parentheses, or one group alone without
// them), or the error message.
std::string Lower(const std::string& json) {
  absl::StatusOr<v1::SubscriptionSpec> spec = ParsePatternSpec(json);
  if (!spec.ok()) {
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
        << spec.status();
    return std::string(spec.status().message());
  }
  EXPECT_TRUE(spec->subscriber().empty());
  // ParsePattern() agrees where there is no "or", and refuses it.
  absl::StatusOr<std::vector<v1::Predicate>> predicates = ParsePattern(json);
  EXPECT_EQ(predicates.ok(), spec->any_of().empty()) << json;
  if (predicates.ok()) {
    EXPECT_EQ(predicates->size(),
              static_cast<size_t>(spec->predicates_size()));
  }
  return FormatSubscription(*spec);
}

TEST(IsPattern, FirstCharacterOtherThanWhitespace) {
  EXPECT_TRUE(IsPattern("{}"));
  EXPECT_TRUE(IsPattern(" \n\t{\"a\": [1]}"));
  EXPECT_FALSE(IsPattern("a = 1"));
  EXPECT_FALSE(IsPattern(""));
  EXPECT_FALSE(IsPattern("   "));
  EXPECT_FALSE(IsPattern("[{}]"));
}

TEST(ParsePattern, EventBridgeRuleAsWritten) {
  EXPECT_EQ(Lower(R"({
    "source": ["aws.ec2"],
    "detail-type": ["EC2 Instance State-change Notification"],
    "detail": {"state": ["running", "stopped"]}
  })"),
            "source = \"aws.ec2\" and detail-type = \"EC2 Instance "
            "State-change Notification\" and detail.state in [\"running\", "
            "\"stopped\"]");
}

TEST(ParsePattern, ValuesAndLists) {
  EXPECT_EQ(Lower(R"({"n": [5]})"), "n = 5");
  // A literal alone in its list: an equality on it, apart from strings.
  EXPECT_EQ(Lower(R"({"a": {"b": [true]}, "c": [false], "d": [null],
                      "e": ["true"]})"),
            "a.b = true and c = false and d = null and e = \"true\"");
  EXPECT_EQ(Lower(R"({"n": [-5, 7, 7]})"), "n in [-5, 7, 7]");
  EXPECT_EQ(Lower(R"({"s": ["a"]})"), "s = \"a\"");
  EXPECT_EQ(Lower(R"({"s": ["caf\u00e9", "x\"y"]})"),
            "s in [\"caf\\xC3\\xA9\", \"x\\\"y\"]");
  // Integral numbers however written; the int64 extremes.
  EXPECT_EQ(Lower(R"({"n": [3.0e2, 4.0, -0.0]})"), "n in [300, 4, 0]");
  EXPECT_EQ(Lower(R"({"n": [9223372036854775807, -9223372036854775808]})"),
            "n in [9223372036854775807, -9223372036854775808]");
}

TEST(ParsePattern, NestingNamesByPath) {
  EXPECT_EQ(Lower(R"({"a": {"b": {"c": [1]}, "d": [2]}, "e": [3]})"),
            "a.b.c = 1 and a.d = 2 and e = 3");
}

TEST(ParsePattern, StringOperators) {
  EXPECT_EQ(Lower(R"({"t": [{"prefix": "2017-10-02"}]})"),
            "t prefix \"2017-10-02\"");
  EXPECT_EQ(Lower(R"({"f": [{"suffix": ".png"}]})"), "f suffix \".png\"");
  EXPECT_EQ(Lower(R"({"n": [{"equals-ignore-case": "Alice"}]})"),
            "n equals-ignore-case \"Alice\"");
  EXPECT_EQ(Lower(R"({"f": [{"wildcard": "img-*.png"}]})"),
            "f wildcard \"img-*.png\"");
  // Several stars, escapes, even "**": passed through as written (the
  // server checks the pattern, as Event Ruler does).
  EXPECT_EQ(Lower(R"({"f": [{"wildcard": "*/bin/*.jar*"}]})"),
            "f wildcard \"*/bin/*.jar*\"");
  EXPECT_EQ(Lower(R"({"f": [{"wildcard": "a\\*b**\\\\"}]})"),
            "f wildcard \"a\\\\*b**\\\\\\\\\"");
  EXPECT_EQ(Lower(R"({"ip": [{"cidr": "10.0.0.0/24"}]})"),
            "ip cidr \"10.0.0.0/24\"");
}

TEST(ParsePattern, PrefixAndSuffixWithEqualsIgnoreCase) {
  EXPECT_EQ(Lower(R"({"t": [{"prefix": {"equals-ignore-case": "Ab"}}]})"),
            "t prefix-ignore-case \"Ab\"");
  EXPECT_EQ(Lower(R"({"f": [{"suffix": {"equals-ignore-case": ".PNG"}}]})"),
            "f suffix-ignore-case \".PNG\"");
  EXPECT_EQ(Lower(R"({"f": [{"suffix": {"equals-ignore-case": ""}}]})"),
            "f suffix-ignore-case \"\"");
  // Beside other conditions of the same list: alternatives.
  EXPECT_EQ(Lower(R"({"f": [{"prefix": {"equals-ignore-case": "a"}},
                            {"suffix": {"equals-ignore-case": "b"}}]})"),
            "f prefix-ignore-case \"a\" or f suffix-ignore-case \"b\"");
  absl::StatusOr<std::vector<v1::Predicate>> got =
      ParsePattern(R"({"d": {"p": [{"prefix": {"equals-ignore-case": "x"}}],
                            "s": [{"suffix": {"equals-ignore-case": "Y"}}]}})");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].attribute(), "d.p");
  EXPECT_EQ((*got)[0].op(), v1::OP_PREFIX_IGNORE_CASE);
  EXPECT_EQ((*got)[0].string_value(), "x");
  EXPECT_EQ((*got)[1].attribute(), "d.s");
  EXPECT_EQ((*got)[1].op(), v1::OP_SUFFIX_IGNORE_CASE);
  EXPECT_EQ((*got)[1].string_value(), "Y");
}

TEST(ParsePattern, RefusesOtherOperatorsInsidePrefixAndSuffix) {
  // Event Ruler 1.8.1 takes equals-ignore-case alone there, and a string.
  EXPECT_EQ(Lower(R"({"a": [{"prefix": {"wildcard": "x*"}}]})"),
            "pattern: at a[0].prefix.wildcard: operator \"wildcard\" inside "
            "\"prefix\" is not supported (only equals-ignore-case is; Event "
            "Ruler refuses it too)");
  EXPECT_EQ(Lower(R"({"a": [{"suffix": {"prefix": "x"}}]})"),
            "pattern: at a[0].suffix.prefix: operator \"prefix\" inside "
            "\"suffix\" is not supported (only equals-ignore-case is; Event "
            "Ruler refuses it too)");
  EXPECT_EQ(Lower(R"({"a": [{"prefix": {"equals-ignore-case": ["x"]}}]})"),
            "pattern: at a[0].prefix.equals-ignore-case: expected a string, "
            "got a list");
  EXPECT_EQ(Lower(R"({"a": [{"suffix": {"equals-ignore-case": 5}}]})"),
            "pattern: at a[0].suffix.equals-ignore-case: expected a string, "
            "got a number");
  EXPECT_EQ(Lower(R"({"a": [{"prefix": {}}]})"),
            "pattern: at a[0].prefix: expected a string, or an object of one "
            "operator (equals-ignore-case) inside \"prefix\", got 0 keys");
  EXPECT_EQ(
      Lower(R"({"a": [{"prefix": {"equals-ignore-case": "x", "x": "y"}}]})"),
      "pattern: at a[0].prefix: expected a string, or an object of one "
      "operator (equals-ignore-case) inside \"prefix\", got 2 keys");
  // No other operator takes an object.
  EXPECT_EQ(Lower(R"({"a": [{"equals-ignore-case": {"prefix": "x"}}]})"),
            "pattern: at a[0].equals-ignore-case: expected a string, got an "
            "object");
  EXPECT_EQ(Lower(R"({"a": [{"wildcard": {"equals-ignore-case": "x"}}]})"),
            "pattern: at a[0].wildcard: expected a string, got an object");
  // Nor anything-but prefix.
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"prefix":
                                {"equals-ignore-case": "x"}}}]})"),
            "pattern: at a[0].anything-but.prefix: expected a string, got an "
            "object");
  // The CLI grammar's words are no pattern operators.
  EXPECT_EQ(Lower(R"({"a": [{"prefix-ignore-case": "x"}]})"),
            "pattern: at a[0].prefix-ignore-case: unknown operator "
            "\"prefix-ignore-case\" (known: prefix, suffix, "
            "equals-ignore-case, wildcard, cidr, exists, numeric, "
            "anything-but)");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"suffix-ignore-case": "x"}}]})"),
            "pattern: at a[0].anything-but.suffix-ignore-case: unknown "
            "operator \"suffix-ignore-case\" inside anything-but (known: "
            "prefix, suffix, equals-ignore-case, wildcard)");
}

TEST(ParsePattern, Exists) {
  EXPECT_EQ(Lower(R"({"c": [{"exists": true}], "d": [{"exists": false}]})"),
            "exists c and not exists d");
}

TEST(ParsePattern, Numeric) {
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["<", 10]}]})"), "n < 10");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["<=", 10]}]})"), "n <= 10");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">", 10]}]})"), "n > 10");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">=", 10]}]})"), "n >= 10");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["=", 3.018e3]}]})"), "n = 3018");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">=", 1, "<=", 5]}]})"),
            "n between 1 and 5");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">", 0, "<=", 5]}]})"),
            "n > 0 and n <= 5");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["<", 5, ">=", 0]}]})"),
            "n >= 0 and n < 5");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">=", 5, "<=", 5]}]})"),
            "n between 5 and 5");
}

TEST(ParsePattern, AnythingBut) {
  EXPECT_EQ(Lower(R"({"s": [{"anything-but": "init"}]})"),
            "s != \"init\"");
  EXPECT_EQ(Lower(R"({"n": [{"anything-but": 123}]})"), "n != 123");
  EXPECT_EQ(Lower(R"({"s": [{"anything-but": ["a", "b"]}]})"),
            "s not in [\"a\", \"b\"]");
  EXPECT_EQ(Lower(R"({"n": [{"anything-but": [100, 200]}]})"),
            "n not in [100, 200]");
  EXPECT_EQ(Lower(R"({"s": [{"anything-but": {"prefix": "init"}}]})"),
            "s not prefix \"init\"");
  EXPECT_EQ(Lower(R"({"s": [{"anything-but": {"suffix": ".tmp"}}]})"),
            "s not suffix \".tmp\"");
  EXPECT_EQ(
      Lower(R"({"s": [{"anything-but": {"equals-ignore-case": "Bob"}}]})"),
      "s not equals-ignore-case \"Bob\"");
  EXPECT_EQ(Lower(
                R"({"s": [{"anything-but": {"equals-ignore-case": ["a", "B"]}}]})"),
            "s not equals-ignore-case [\"a\", \"B\"]");
  EXPECT_EQ(
      Lower(R"({"s": [{"anything-but": {"wildcard": "*/bin/*.jar"}}]})"),
      "s not wildcard \"*/bin/*.jar\"");
  // A list: none of the patterns matches, one predicate each.
  EXPECT_EQ(
      Lower(R"({"s": [{"anything-but": {"wildcard": ["a*", "*b", "a*"]}}]})"),
      "s not wildcard \"a*\" and s not wildcard \"*b\" and s not wildcard "
      "\"a*\"");
  EXPECT_EQ(Lower(R"({"s": [{"anything-but": {"wildcard": [""]}}]})"),
            "s not wildcard \"\"");
  // Beside other entries, the list is one alternative of them all.
  EXPECT_EQ(
      Lower(R"({"s": ["x", {"anything-but": {"wildcard": ["a*", "*b"]}}]})"),
      "s = \"x\" or s not wildcard \"a*\" and s not wildcard \"*b\"");
}

// The README's complex example, whole.
TEST(ParsePattern, ComplexExample) {
  EXPECT_EQ(Lower(R"({
    "time": [{"prefix": "2017-10-02"}],
    "detail": {
      "state": [{"anything-but": "initializing"}],
      "c-count": [{"numeric": [">", 0, "<=", 5]}],
      "d-count": [{"numeric": ["<", 10]}],
      "x-limit": [{"anything-but": [100, 200, 300]}],
      "source-ip": [{"cidr": "10.0.0.0/8"}]
    }
  })"),
            "time prefix \"2017-10-02\" and detail.state != \"initializing\" "
            "and detail.c-count > 0 and detail.c-count <= 5 and "
            "detail.d-count < 10 and detail.x-limit not in [100, 200, 300] "
            "and detail.source-ip cidr \"10.0.0.0/8\"");
}

// Every lowered pattern reads back through the CLI grammar unchanged.
TEST(ParsePattern, PrintedFormParsesBack) {
  const std::string json = R"({"a": {"b": ["x", "y"]},
      "n": [{"numeric": [">", -3, "<", 9]}],
      "s": [{"anything-but": {"equals-ignore-case": ["q"]}}],
      "w": [{"anything-but": {"wildcard": ["a*", "*b\\*"]}}],
      "v": [{"wildcard": "a*b*c"}],
      "e": [{"exists": false}]})";
  absl::StatusOr<std::vector<v1::Predicate>> lowered = ParsePattern(json);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  v1::SubscriptionSpec spec;
  for (const v1::Predicate& p : *lowered) *spec.add_predicates() = p;
  absl::StatusOr<std::vector<v1::Predicate>> parsed =
      ParseSubscription(FormatSubscription(spec));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), lowered->size());
  for (size_t i = 0; i < parsed->size(); ++i) {
    EXPECT_EQ((*parsed)[i].SerializeAsString(),
              (*lowered)[i].SerializeAsString())
        << i;
  }
}

TEST(ParsePattern, RefusesWhatCohortCannotSayYet) {
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": false}]})"),
            "pattern: at a[0].anything-but: false in anything-but: it takes "
            "strings and numbers (Event Ruler refuses literals there too)");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": ["x", null]}]})"),
            "pattern: at a[0].anything-but[1]: null in anything-but: it "
            "takes strings and numbers (Event Ruler refuses literals there "
            "too)");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"cidr": "10.0.0.0/8"}}]})"),
            "pattern: at a[0].anything-but.cidr: anything-but \"cidr\" is "
            "not supported (Cohort excludes prefixes, suffixes, "
            "equals-ignore-case and wildcards; Event Ruler refuses it too)");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"wildcard": []}}]})"),
            "pattern: at a[0].anything-but.wildcard: an empty list excludes "
            "nothing");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"wildcard": ["x", 5]}}]})"),
            "pattern: at a[0].anything-but.wildcard[1]: expected a string, "
            "got a number");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"wildcard": null}}]})"),
            "pattern: at a[0].anything-but.wildcard: expected a string, got "
            "null");
  EXPECT_EQ(
      Lower(R"({"a": [{"anything-but": {"wildcard": "x", "prefix": "y"}}]})"),
      "pattern: at a[0].anything-but: expected an object of one operator "
      "(prefix, suffix, equals-ignore-case or wildcard), got 2 keys");
}

TEST(ParsePattern, NumbersWithFractions) {
  EXPECT_EQ(Lower(R"({"p": [19.99]})"), "p = 19.99");
  EXPECT_EQ(Lower(R"({"p": [19.99, 5, -0.5]})"), "p in [19.99, 5, -0.5]");
  EXPECT_EQ(Lower(R"({"p": [5, 3.0]})"), "p in [5, 3]");
  EXPECT_EQ(Lower(R"({"p": [{"numeric": ["<", 0.5]}]})"), "p < 0.5");
  EXPECT_EQ(Lower(R"({"p": [{"numeric": [">=", 0, "<=", 9.75]}]})"),
            "p between 0 and 9.75");
  EXPECT_EQ(Lower(R"({"p": [{"numeric": [">", 0.25, "<", 1e2]}]})"),
            "p > 0.25 and p < 100");
  EXPECT_EQ(Lower(R"({"p": [{"anything-but": 2.5}]})"), "p != 2.5");
  EXPECT_EQ(Lower(R"({"p": [{"anything-but": [1, 2.5]}]})"),
            "p not in [1, 2.5]");
  EXPECT_EQ(Lower(R"({"p": [{"numeric": [">=", 1.5, "<=", 1.25]}]})"),
            "pattern: at p[0].numeric: the range is empty: 1.5 > 1.25");
  // An integer from 2^53 on is not exact beside a fraction.
  EXPECT_EQ(Lower(R"({"p": [9007199254740992, 0.5]})"),
            "pattern: at p[1]: the integer 9007199254740992 cannot share a "
            "list with a number with a fraction (integers there must be below "
            "2^53 in magnitude); put it in a condition of its own");
  EXPECT_EQ(Lower(R"({"p": [0.5, -9007199254740993]})"),
            "pattern: at p[1]: the integer -9007199254740993 cannot share a "
            "list with a number with a fraction (integers there must be below "
            "2^53 in magnitude); put it in a condition of its own");
}

TEST(ParsePattern, RefusesNumbersBeyondInt64) {
  EXPECT_EQ(Lower(R"({"n": [9223372036854775808]})"),
            "pattern: at n[0]: 9223372036854775808 is beyond the int64 range "
            "numbers compare in (-2^63 to 2^63, 2^63 excluded)");
  EXPECT_EQ(Lower(R"({"n": [1e19]})"),
            "pattern: at n[0]: 1e+19 is beyond the int64 range numbers "
            "compare in (-2^63 to 2^63, 2^63 excluded)");
  EXPECT_EQ(Lower(R"({"n": [-9.3e18]})"),
            "pattern: at n[0]: -9.3e+18 is beyond the int64 range numbers "
            "compare in (-2^63 to 2^63, 2^63 excluded)");
  EXPECT_THAT(Lower(R"({"n": [1e400]})"), HasSubstr("pattern: not valid JSON"));
}

TEST(ParsePattern, RefusesMalformedPatterns) {
  EXPECT_THAT(Lower("{\"a\": [1]"), HasSubstr("pattern: not valid JSON: "));
  EXPECT_THAT(Lower("{\"a\": [\"\xff\"]}"),
              HasSubstr("pattern: not valid JSON: "));
  EXPECT_EQ(Lower("[1]"), "pattern: a pattern is a JSON object, got a list");
  EXPECT_EQ(Lower("{}"),
            "pattern: at the top: an empty object names no field to match");
  EXPECT_EQ(Lower(R"({"a": {}})"),
            "pattern: at a: an empty object names no field to match");
  EXPECT_EQ(Lower(R"({"a": []})"),
            "pattern: at a: an empty list matches nothing");
  EXPECT_EQ(Lower(R"({"a": "x"})"),
            "pattern: at a: expected a list of values or conditions, or an "
            "object, got a string");
  EXPECT_EQ(Lower(R"({"a": [[1]]})"),
            "pattern: at a[0]: expected a string, a number, true, false, "
            "null or a condition, got a list");
  EXPECT_EQ(Lower(R"({"a": [1], "a": [2]})"),
            "pattern: at a: this key appears twice in one object");
  EXPECT_EQ(Lower(R"({"a b": [1]})"),
            "pattern: at a b: \"a b\" is not an attribute name Cohort "
            "accepts: it contains byte 0x20; a name has only ASCII letters, "
            "digits, '_', '.' and '-'");
  // A message stays one line whatever the keys hold.
  EXPECT_EQ(Lower(R"({"a\nb": {"c": [1]}})"),
            "pattern: at a\\x0Ab.c: \"a\\x0Ab.c\" is not an attribute name "
            "Cohort accepts: it contains byte 0x0A; a name has only ASCII "
            "letters, digits, '_', '.' and '-'");
  EXPECT_EQ(Lower(R"({"a": [{"x\ty": 1}]})"),
            "pattern: at a[0].x\\x09y: unknown operator \"x\\x09y\" (known: "
            "prefix, suffix, equals-ignore-case, wildcard, cidr, exists, "
            "numeric, anything-but)");
  EXPECT_EQ(Lower(R"({"@t": [1]})"),
            "pattern: at @t: \"@t\" is not an attribute name Cohort accepts: "
            "it starts with '@'; a name starts with a letter or '_'");
  EXPECT_EQ(Lower(R"({"a": [{"regex": "x"}]})"),
            "pattern: at a[0].regex: unknown operator \"regex\" (known: "
            "prefix, suffix, equals-ignore-case, wildcard, cidr, exists, "
            "numeric, anything-but)");
  EXPECT_EQ(Lower(R"({"a": [{"prefix": "x", "suffix": "y"}]})"),
            "pattern: at a[0]: a condition is an object of one operator, got "
            "2 keys");
  EXPECT_EQ(Lower(R"({"a": [{}]})"),
            "pattern: at a[0]: a condition is an object of one operator, got "
            "0 keys");
  EXPECT_EQ(Lower(R"({"a": [{"prefix": 5}]})"),
            "pattern: at a[0].prefix: expected a string, got a number");
  EXPECT_EQ(Lower(R"({"a": [{"exists": "yes"}]})"),
            "pattern: at a[0].exists: expected true or false, got a string");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": []}]})"),
            "pattern: at a[0].anything-but: an empty list excludes nothing; "
            "drop the condition or use {\"exists\": true}");
  EXPECT_EQ(Lower(R"({"a": [{"anything-but": {"regex": "x"}}]})"),
            "pattern: at a[0].anything-but.regex: unknown operator \"regex\" "
            "inside anything-but (known: prefix, suffix, equals-ignore-case, "
            "wildcard)");
}

TEST(ParsePattern, RefusesMalformedNumeric) {
  EXPECT_EQ(Lower(R"({"n": [{"numeric": 5}]})"),
            "pattern: at n[0].numeric: expected a list such as [\">\", 0, "
            "\"<=\", 5], got a number");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">", 1, "<"]}]})"),
            "pattern: at n[0].numeric: expected one comparison and a number, "
            "or a lower and an upper bound ([\">\", 0, \"<=\", 5]), got 3 "
            "entries");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["~", 1]}]})"),
            "pattern: at n[0].numeric[0]: unknown comparison \"~\" (known: "
            "=, <, <=, >, >=)");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">", 1, ">=", 2]}]})"),
            "pattern: at n[0].numeric[2]: two lower bounds; the second must "
            "be an upper bound (< or <=)");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["<", 1, "<=", 2]}]})"),
            "pattern: at n[0].numeric[2]: two upper bounds; the first must be "
            "a lower bound (> or >=)");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": ["=", 1, "<=", 2]}]})"),
            "pattern: at n[0].numeric[0]: \"=\" stands alone: [\"=\", n]");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">=", 3, "<=", 2]}]})"),
            "pattern: at n[0].numeric: the range is empty: 3 > 2");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [">", "1"]}]})"),
            "pattern: at n[0].numeric[1]: expected a number, got a string");
  EXPECT_EQ(Lower(R"({"n": [{"numeric": [1, 1]}]})"),
            "pattern: at n[0].numeric[0]: expected a string, got a number");
}

TEST(ParsePattern, RefusesDeepNesting) {
  std::string deep;
  for (size_t i = 0; i < kMaxPatternDepth + 1; ++i) deep += "{\"a\":";
  deep += "[1]";
  for (size_t i = 0; i < kMaxPatternDepth + 1; ++i) deep += "}";
  EXPECT_THAT(Lower(deep), HasSubstr("pattern: not valid JSON: "));
  // Within the depth limit, the path's length is what stops it.
  std::string long_path;
  for (int i = 0; i < 40; ++i) long_path += "{\"ab\":";
  long_path += "[1]";
  for (int i = 0; i < 40; ++i) long_path += "}";
  EXPECT_THAT(Lower(long_path),
              HasSubstr("characters long; the limit is 64"));
}

// ---------------------------------------------------------------------------
// "Or": lists of several kinds of entry, and "$or"

TEST(ParsePatternSpec, ListOfSeveralKindsIsOneGroup) {
  // Strings together, numbers together, each literal and each condition
  // alone, in the order of their first entries.
  EXPECT_EQ(Lower(R"({"a": ["x", 5, "y", true, {"prefix": "p"}, null, 2.5,
                           {"numeric": [">", 0, "<", 9]}]})"),
            "a in [\"x\", \"y\"] or a in [5, 2.5] or a = true or a prefix "
            "\"p\" or a = null or a > 0 and a < 9");
  EXPECT_EQ(Lower(R"({"s": ["aws.ec2"], "a": [1, "one"]})"),
            "s = \"aws.ec2\" and (a = 1 or a = \"one\")");
  EXPECT_EQ(Lower(R"({"a": [{"prefix": "x"}, {"prefix": "y"}]})"),
            "a prefix \"x\" or a prefix \"y\"");
  EXPECT_EQ(Lower(R"({"a": {"b": [true, "x"]}})"),
            "a.b = true or a.b = \"x\"");
  EXPECT_EQ(Lower(R"({"a": [1, null, null]})"),
            "a = 1 or a = null or a = null");
  EXPECT_EQ(Lower(R"({"a": [false, true]})"), "a = false or a = true");
  EXPECT_EQ(Lower(R"({"a": [{"exists": false}, "", {"anything-but": "x"}]})"),
            "not exists a or a = \"\" or a != \"x\"");
  // A list of one kind stays plain predicates.
  EXPECT_EQ(Lower(R"({"a": ["x", "y"], "b": [1, 2.5],
                      "c": [{"exists": true}]})"),
            "a in [\"x\", \"y\"] and b in [1, 2.5] and exists c");
}

TEST(ParsePatternSpec, OrAtTheTop) {
  EXPECT_EQ(Lower(R"({"a": [1], "$or": [{"b": [1]}, {"c": [2]}]})"),
            "a = 1 and (b = 1 or c = 2)");
  // Event Ruler's own example.
  EXPECT_EQ(Lower(R"({
      "source": ["aws.cloudwatch"],
      "$or": [
        {"metricName": ["CPUUtilization", "ReadLatency"]},
        {"metricType": ["MetricType"], "namespace": ["AWS/EC2", "AWS/ES"]},
        {"scope": ["Service"]}
      ]})"),
            "source = \"aws.cloudwatch\" and (metricName in "
            "[\"CPUUtilization\", \"ReadLatency\"] or metricType = "
            "\"MetricType\" and namespace in [\"AWS/EC2\", \"AWS/ES\"] or "
            "scope = \"Service\")");
  // Fields after "$or" are ANDed too.
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}, {"b": [2]}], "z": [0]})"),
            "z = 0 and (a = 1 or b = 2)");
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}, {"b": [2]}, {"a": [3]}]})"),
            "a = 1 or b = 2 or a = 3");
}

TEST(ParsePatternSpec, OrAtANestedLevelExtendsItsPath) {
  EXPECT_EQ(Lower(R"({"detail": {"$or": [
                 {"c-count": [{"numeric": [">", 0, "<=", 5]}]},
                 {"d-count": [{"numeric": ["<", 10]}]},
                 {"x-limit": [{"numeric": ["=", 301.8]}]}]}})"),
            "detail.c-count > 0 and detail.c-count <= 5 or detail.d-count < "
            "10 or detail.x-limit = 301.8");
  // Each "$or" outside another is a group of its own, in the order written.
  EXPECT_EQ(Lower(R"({"detail": {"$or": [{"a": [1]}, {"b": [2]}]},
                      "$or": [{"c": [3]}, {"d": {"e": [4]}}]})"),
            "(detail.a = 1 or detail.b = 2) and (c = 3 or d.e = 4)");
}

TEST(ParsePatternSpec, NestedOrIsDistributed) {
  EXPECT_EQ(Lower(R"({"$or": [
                 {"a": [1], "$or": [{"b": [2]}, {"c": [3, "x"]}]},
                 {"d": [4]}]})"),
            "a = 1 and b = 2 or a = 1 and c = 3 or a = 1 and c = \"x\" or "
            "d = 4");
  EXPECT_EQ(Lower(R"({"$or": [
                 {"detail": {"$or": [{"a": [1]}, {"b": [2]}]}, "e": [5]},
                 {"f": [6]}]})"),
            "detail.a = 1 and e = 5 or detail.b = 2 and e = 5 or f = 6");
  // Two groups in one entry: the first one's choice varies slowest.
  EXPECT_EQ(Lower(R"({"x": [0], "$or": [
                 {"a": [1, "1"], "b": [2, true]}, {"c": [3]}]})"),
            "x = 0 and (a = 1 and b = 2 or a = 1 and b = true or a = \"1\" "
            "and b = 2 or a = \"1\" and b = true or c = 3)");
}

TEST(ParsePatternSpec, RefusesWhatEventRulerRefusesInOr) {
  EXPECT_EQ(Lower(R"({"$or": {"a": [1]}})"),
            "pattern: at $or: \"$or\" takes a list of two objects or more, "
            "got an object");
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}]})"),
            "pattern: at $or: \"$or\" takes a list of two objects or more, "
            "got 1 entry (Event Ruler refuses it too)");
  EXPECT_EQ(Lower(R"({"d": {"$or": []}})"),
            "pattern: at d.$or: \"$or\" takes a list of two objects or more, "
            "got 0 entries (Event Ruler refuses it too)");
  EXPECT_EQ(Lower(R"({"detail": {"$or": [{"a": [1]}, 5]}})"),
            "pattern: at detail.$or[1]: an entry of \"$or\" is an object of "
            "fields, got a number");
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}, {}]})"),
            "pattern: at $or[1]: an empty object names no field to match");
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}, {"x": {"prefix": [1]}}]})"),
            "pattern: at $or[1].x.prefix: \"prefix\" names an operator, which "
            "Event Ruler refuses as a key inside \"$or\"");
  EXPECT_EQ(Lower(R"({"$or": [{"numeric": [1]}, {"b": [2]}]})"),
            "pattern: at $or[0].numeric: \"numeric\" names an operator, "
            "which Event Ruler refuses as a key inside \"$or\"");
  // Outside "$or", Event Ruler takes such keys as names, and so does this.
  EXPECT_EQ(Lower(R"({"prefix": [1], "a": {"exists": [true]}})"),
            "prefix = 1 and a.exists = true");
  EXPECT_EQ(Lower(R"({"$or": [{"a": [1]}, {"b": [2]}],
                      "$or": [{"c": [1]}, {"d": [2]}]})"),
            "pattern: at $or: this key appears twice in one object");
  // Errors inside an entry name the place with its "$or[i]" steps.
  EXPECT_EQ(Lower(R"({"detail": {"$or": [{"a": [1]},
                                         {"b": [{"regex": "x"}]}]}})"),
            "pattern: at detail.$or[1].b[0].regex: unknown operator "
            "\"regex\" (known: prefix, suffix, equals-ignore-case, wildcard, "
            "cidr, exists, numeric, anything-but)");
  EXPECT_EQ(Lower(R"({"$or": [{"a b": [1]}, {"b": [2]}]})"),
            "pattern: at $or[0].a b: \"a b\" is not an attribute name Cohort "
            "accepts: it contains byte 0x20; a name has only ASCII letters, "
            "digits, '_', '.' and '-'");
}

// A JSON object of `fields` fields f0, f1, ..., each a list of a number
// and a string (a group of two).
std::string Pairs(int fields) {
  std::vector<std::string> out;
  for (int i = 0; i < fields; ++i) {
    out.push_back(absl::StrCat("\"f", i, "\": [1, \"a\"]"));
  }
  return absl::StrCat("{", absl::StrJoin(out, ", "), "}");
}

TEST(ParsePatternSpec, DistributesUpToTheCap) {
  // Not in a "$or": eleven groups, kept apart (the server checks their
  // product).
  absl::StatusOr<v1::SubscriptionSpec> spec = ParsePatternSpec(Pairs(11));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->any_of_size(), 11);
  // 512 + 512 alternatives: the most one group may have.
  spec = ParsePatternSpec(
      absl::StrCat("{\"$or\": [", Pairs(9), ", ", Pairs(9), "]}"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->any_of_size(), 1);
  EXPECT_EQ(spec->any_of(0).alternatives_size(), 1024);
  EXPECT_EQ(spec->any_of(0).alternatives(1023).predicates_size(), 9);
  const std::string kTooLarge =
      "pattern: at $or: \"$or\" is too large: it expands into more than 1024 "
      "alternatives (every \"and\" of groups taken one alternative of "
      "each); the limit is 1024";
  EXPECT_EQ(Lower(absl::StrCat("{\"$or\": [", Pairs(10), ", {\"z\": [1]}]}")),
            kTooLarge);
  EXPECT_EQ(Lower(absl::StrCat("{\"$or\": [", Pairs(11), ", {\"z\": [1]}]}")),
            kTooLarge);
  // A list of 1024 conditions, and of 1025.
  std::vector<std::string> conditions;
  for (int i = 0; i < 1025; ++i) {
    conditions.push_back(absl::StrCat("{\"prefix\": \"", i, "\"}"));
  }
  const auto list = [&conditions](size_t n) {
    return absl::StrCat(
        "{\"a\": [",
        absl::StrJoin(conditions.begin(), conditions.begin() + n, ", "),
        "]}");
  };
  spec = ParsePatternSpec(list(1024));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->any_of(0).alternatives_size(), 1024);
  EXPECT_EQ(Lower(list(1025)),
            "pattern: at a: a list of 1025 alternatives (conditions, "
            "literals, and its strings and its numbers); the limit is 1024");
}

TEST(ParsePattern, RefusesWhatNeedsOr) {
  absl::StatusOr<std::vector<v1::Predicate>> got =
      ParsePattern(R"({"a": [1, "x"]})");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "pattern: it needs \"or\" (a \"$or\", or a list of several kinds "
            "of condition), which is read here as predicates only");
  got = ParsePattern(R"({"a": [1, 2], "b": [{"numeric": [">", 1, "<", 2]}]})");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 3u);
}

TEST(ParsePatternSpec, PrintedFormParsesBack) {
  const std::string json = R"({"a": {"b": ["x", 5, null]},
      "$or": [{"n": [{"numeric": [">", -3, "<", 9]}, "q"]},
              {"s": [{"anything-but": {"equals-ignore-case": ["q"]}}],
               "$or": [{"e": [{"exists": false}]}, {"or": [true]}]}]})";
  absl::StatusOr<v1::SubscriptionSpec> lowered = ParsePatternSpec(json);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->any_of_size(), 2);
  const std::string text = FormatSubscription(*lowered);
  absl::StatusOr<v1::SubscriptionSpec> parsed = ParseSubscriptionSpec(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(parsed->SerializeAsString(), lowered->SerializeAsString())
      << text;
}

}  // namespace
}  // namespace filter
}  // namespace cohort
