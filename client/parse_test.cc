#include "client/parse.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kName64(64, 'n');
const std::string kName65(65, 'n');

// "price OP_LE 500 0": attribute, op, value, upper.
std::string Format(const v1::Predicate& p) {
  return absl::StrCat(p.attribute(), " ", v1::Op_Name(p.op()), " ", p.value(),
                      " ", p.upper());
}

// "price 420".
std::string Format(const v1::Attribute& a) {
  return absl::StrCat(a.name(), " ", a.value());
}

template <typename Message>
std::vector<std::string> FormatAll(const std::vector<Message>& messages) {
  std::vector<std::string> out;
  for (const Message& m : messages) out.push_back(Format(m));
  return out;
}

struct ValidCase {
  std::string input;
  std::vector<std::string> expected;
};

// clang-format off
const ValidCase kValidSubscriptions[] = {
    // Every operator spelling.
    {"price = 5", {"price OP_EQ 5 0"}},
    {"price == 5", {"price OP_EQ 5 0"}},
    {"price != 5", {"price OP_NE 5 0"}},
    {"price <> 5", {"price OP_NE 5 0"}},
    {"price < 5", {"price OP_LT 5 0"}},
    {"price <= 5", {"price OP_LE 5 0"}},
    {"price > 5", {"price OP_GT 5 0"}},
    {"price >= 5", {"price OP_GE 5 0"}},
    {"price eq 5", {"price OP_EQ 5 0"}},
    {"price NE 5", {"price OP_NE 5 0"}},
    {"price Lt 5", {"price OP_LT 5 0"}},
    {"price le 5", {"price OP_LE 5 0"}},
    {"price GT 5", {"price OP_GT 5 0"}},
    {"price gE 5", {"price OP_GE 5 0"}},
    // Operators need no surrounding spaces.
    {"price<=5", {"price OP_LE 5 0"}},
    {"price>=-5", {"price OP_GE -5 0"}},
    {"price!=-1", {"price OP_NE -1 0"}},
    {"price<>+7", {"price OP_NE 7 0"}},
    {"price==0", {"price OP_EQ 0 0"}},
    // BETWEEN and its `in` forms, inclusive; lo == hi is allowed.
    {"price between 10 and 20", {"price OP_BETWEEN 10 20"}},
    {"price BETWEEN -5 AND -5", {"price OP_BETWEEN -5 -5"}},
    {"price Between 1 And 2", {"price OP_BETWEEN 1 2"}},
    {"price in [10, 20]", {"price OP_BETWEEN 10 20"}},
    {"price IN [10,20]", {"price OP_BETWEEN 10 20"}},
    {"price in[ -3 , -3 ]", {"price OP_BETWEEN -3 -3"}},
    {"price in 10..20", {"price OP_BETWEEN 10 20"}},
    {"price in -20..-10", {"price OP_BETWEEN -20 -10"}},
    {"price in -20 .. +10", {"price OP_BETWEEN -20 10"}},
    // Numbers: signs, the int64 limits, '_' separators, leading zeros.
    {"x = -9223372036854775808", {"x OP_EQ -9223372036854775808 0"}},
    {"x = 9223372036854775807", {"x OP_EQ 9223372036854775807 0"}},
    {"x = +9223372036854775807", {"x OP_EQ 9223372036854775807 0"}},
    {"x between -9223372036854775808 and 9223372036854775807",
     {"x OP_BETWEEN -9223372036854775808 9223372036854775807"}},
    {"x in -9_223_372_036_854_775_808..9_223_372_036_854_775_807",
     {"x OP_BETWEEN -9223372036854775808 9223372036854775807"}},
    {"x = 1_000_000", {"x OP_EQ 1000000 0"}},
    {"x = -1_0", {"x OP_EQ -10 0"}},
    {"x = 007", {"x OP_EQ 7 0"}},
    {"x = -0", {"x OP_EQ 0 0"}},
    // Names: the server's rule, up to 64 characters.
    {kName64 + " = 1", {kName64 + " OP_EQ 1 0"}},
    {"a.b-c_d = 1", {"a.b-c_d OP_EQ 1 0"}},
    {"_ = 1", {"_ OP_EQ 1 0"}},
    {"Z9.-_ = 1", {"Z9.-_ OP_EQ 1 0"}},
    {"a..b in 1..2", {"a..b OP_BETWEEN 1 2"}},
    {"price-usd<-5", {"price-usd OP_LT -5 0"}},
    // Connectors, in any case and mixed.
    {"price <= 500 and kind = 7", {"price OP_LE 500 0", "kind OP_EQ 7 0"}},
    {"a=1 AND b=2 && c=3 , d=4 And e=5",
     {"a OP_EQ 1 0", "b OP_EQ 2 0", "c OP_EQ 3 0", "d OP_EQ 4 0",
      "e OP_EQ 5 0"}},
    {"a=1,b=2&&c=3", {"a OP_EQ 1 0", "b OP_EQ 2 0", "c OP_EQ 3 0"}},
    {"x >= 1 and x <= 9", {"x OP_GE 1 0", "x OP_LE 9 0"}},
    {"x between 1 and 5 and y in [2, 3], z > 0",
     {"x OP_BETWEEN 1 5", "y OP_BETWEEN 2 3", "z OP_GT 0 0"}},
    // Keywords are names where a name is expected.
    {"and = 1 and between = 2", {"and OP_EQ 1 0", "between OP_EQ 2 0"}},
    {"in in [1, 2] AND AND between 3 and 4",
     {"in OP_BETWEEN 1 2", "AND OP_BETWEEN 3 4"}},
    {"eq eq 1", {"eq OP_EQ 1 0"}},
    // Whitespace of any kind, anywhere.
    {"  \tprice\n<=\t500  ", {"price OP_LE 500 0"}},
};

const ValidCase kValidEvents[] = {
    {"price=420 kind=7", {"price 420", "kind 7"}},
    {"price = 420, kind = 7", {"price 420", "kind 7"}},
    {"a=1,b=2", {"a 1", "b 2"}},
    {"a=1 ,b=2 , c=3", {"a 1", "b 2", "c 3"}},
    {"  a=1\tb=2\n", {"a 1", "b 2"}},
    {"x=-9223372036854775808 y=9223372036854775807",
     {"x -9223372036854775808", "y 9223372036854775807"}},
    {"n=1_000 m=+5 z=-0", {"n 1000", "m 5", "z 0"}},
    {"a.b-c_d=0 _=1", {"a.b-c_d 0", "_ 1"}},
    {kName64 + "=64", {kName64 + " 64"}},
    {"and=1 between=2 in=3", {"and 1", "between 2", "in 3"}},
    {"Price=1 price=2", {"Price 1", "price 2"}},  // names are case-sensitive
};
// clang-format on

TEST(ParseSubscription, ValidInputsGiveExactPredicates) {
  for (const ValidCase& c : kValidSubscriptions) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<std::vector<v1::Predicate>> got = ParseSubscription(c.input);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_THAT(FormatAll(*got), ElementsAreArray(c.expected));
  }
}

TEST(ParseEvent, ValidInputsGiveExactAttributes) {
  for (const ValidCase& c : kValidEvents) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<std::vector<v1::Attribute>> got = ParseEvent(c.input);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_THAT(FormatAll(*got), ElementsAreArray(c.expected));
  }
}

TEST(ParseSubscription, ErrorMessageHasColumnEchoAndCarets) {
  absl::StatusOr<std::vector<v1::Predicate>> got =
      ParseSubscription("price is 5");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "column 7: expected an operator (=, !=, <, <=, >, >=, between, "
            "in), got \"is\"\n"
            "  price is 5\n"
            "        ^^");
}

enum class Grammar { kSubscription, kEvent };

struct ErrorCase {
  Grammar grammar;
  std::string input;
  // The caret line without its two-space indent, so that it lines up with
  // `input` in the table below.
  std::string carets;
  int column;
  std::string message;  // a substring of the first line
};

constexpr Grammar kSub = Grammar::kSubscription;
constexpr Grammar kEvent = Grammar::kEvent;

// clang-format off
const ErrorCase kErrors[] = {
    // Operators.
    {kSub, "price is 5",
           "      ^^", 7,
     "expected an operator (=, !=, <, <=, >, >=, between, in), got \"is\""},
    {kSub, "price",
           "     ^", 6, "expected an operator (=, !=, <, <=, >, >=, between, "
                        "in), got end of input"},
    {kSub, "price and 5",
           "      ^^^", 7, "expected an operator"},
    {kSub, "price ≥ 5",
           "      ^", 7, "expected an operator (=, !=, <, <=, >, >=, between, "
                         "in), got \"≥\""},
    {kSub, "price \"eq\" 5",
           "      ^^^^", 7, "got \"\\\"eq\\\"\""},
    {kSub, "price\tis\n5",
           "      ^^", 7, "got \"is\""},
    // Values.
    {kSub, "price <=",
           "        ^", 9, "missing value after \"<=\""},
    {kSub, "price <= abc",
           "         ^^^", 10,
     "bad number \"abc\": expected a decimal integer"},
    {kSub, "price = 1.5",
           "        ^^^", 9, "bad number \"1.5\""},
    {kSub, "price = 5e3",
           "        ^^^", 9, "bad number \"5e3\""},
    {kSub, "price = -",
           "        ^", 9, "bad number \"-\""},
    {kSub, "price = 1__000",
           "        ^^^^^^", 9, "'_' may only separate two digits"},
    {kSub, "price = 1_",
           "        ^^", 9, "'_' may only separate two digits"},
    {kSub, "price = _1",
           "        ^^", 9, "bad number \"_1\""},
    {kSub, "price =< 5",
           "       ^", 8, "expected an integer value after \"=\", got \"<\""},
    {kSub, "price = 9223372036854775808",
           "        ^^^^^^^^^^^^^^^^^^^", 9,
     "number 9223372036854775808 is out of the int64 range "
     "[-9223372036854775808, 9223372036854775807]"},
    {kSub, "price = -9223372036854775809",
           "        ^^^^^^^^^^^^^^^^^^^^", 9, "out of the int64 range"},
    {kSub, "price = 99999999999999999999999",
           "        ^^^^^^^^^^^^^^^^^^^^^^^", 9, "out of the int64 range"},
    // Attribute names, with the reason.
    {kSub, "9lives = 1",
           "^^^^^^", 1,
     "bad attribute name \"9lives\": it starts with '9'; a name starts with a "
     "letter or '_'"},
    {kSub, "-x = 1",
           "^^", 1, "it starts with '-'"},
    {kSub, "pr$ice = 1",
           "^^^^^^", 1,
     "it contains '$'; a name has only ASCII letters, digits, '_', '.' and "
     "'-'"},
    {kSub, "prïce = 1",
           "^^^^^", 1, "bad attribute name \"prïce\": it contains 'ï'"},
    {kSub, "a\x01" "b = 1",
           "^^^", 1, "bad attribute name \"a\\x01b\": it contains byte 0x01"},
    {kSub, kName65 + " = 1",
           std::string(65, '^'), 1,
     "it is 65 characters long; the limit is 64"},
    {kSub, "= 5",
           "^", 1, "expected an attribute name, got \"=\""},
    // Ranges: lo > hi points at the whole range.
    {kSub, "price between 10 and 5",
           "              ^^^^^^^^", 15,
     "empty range: the lower bound 10 is greater than the upper bound 5"},
    {kSub, "price in [10, 5]",
           "         ^^^^^^^", 10, "empty range"},
    {kSub, "price IN 10..5 and x = 1",
           "         ^^^^^", 10, "empty range"},
    {kSub, "price between 1 5",
           "                ^", 17,
     "expected \"and\" between the bounds of \"between lo and hi\", got \"5\""},
    {kSub, "price between 1 && 5",
           "                ^^", 17, "expected \"and\""},
    {kSub, "price between 1 and",
           "                   ^", 20, "missing value after \"and\""},
    {kSub, "price in [1, 5",
           "              ^", 15, "expected \"]\" to close \"in [lo, hi]\""},
    {kSub, "price in [1 5]",
           "            ^", 13, "expected \",\" between the bounds"},
    {kSub, "price in 1 5",
           "           ^", 12,
     "expected \"..\" between the bounds of \"in lo..hi\", got \"5\""},
    {kSub, "price in",
           "        ^", 9, "missing value after \"in\""},
    {kSub, "price in [",
           "          ^", 11, "missing value after \"[\""},
    {kSub, "price in ..5",
           "         ^^", 10, "expected an integer value after \"in\""},
    // Connectors and what follows a predicate.
    {kSub, "price = 5 kind = 7",
           "          ^^^^", 11, "missing \"and\" between predicates"},
    {kSub, "price = 5 kind between 1 and 2",
           "          ^^^^", 11, "missing \"and\" between predicates"},
    {kSub, "price = 5 6",
           "          ^", 11,
     "unexpected \"6\" after a complete predicate; expected \"and\""},
    {kSub, "price = 5 || kind = 7",
           "          ^^", 11, "unexpected \"||\""},
    {kSub, "price = 5 and",
           "             ^", 14,
     "expected a predicate after \"and\", got end of input"},
    {kSub, "price = 5,",
           "          ^", 11, "expected a predicate after \",\""},
    {kSub, "price = 5 && && kind = 1",
           "             ^^", 14,
     "expected an attribute name, got \"&&\""},
    // Empty input.
    {kSub, "",
           "^", 1, "empty subscription"},
    {kSub, "   ",
           "   ^", 4, "empty subscription"},
    // Events.
    {kEvent, "",
             "^", 1, "empty event"},
    {kEvent, "price=420 price=1",
             "          ^^^^^", 11,
     "duplicate attribute \"price\" (first given at column 1)"},
    {kEvent, "a=1, b=2, a=3",
             "          ^", 11, "duplicate attribute \"a\""},
    {kEvent, "price=",
             "      ^", 7, "missing value after \"price=\""},
    {kEvent, "price= kind=7",
             "       ^^^^", 8,
     "missing value after \"price=\"; \"kind\" starts the next pair"},
    {kEvent, "price 420",
             "      ^^^", 7, "expected \"=\" after \"price\", got \"420\""},
    {kEvent, "price<5",
             "     ^", 6, "expected \"=\" after \"price\", got \"<\""},
    {kEvent, "price",
             "     ^", 6, "got end of input"},
    {kEvent, "price=abc",
             "      ^^^", 7, "bad number \"abc\""},
    {kEvent, "price=5kind=7",
             "      ^^^^^", 7, "bad number \"5kind\""},
    {kEvent, "price=18446744073709551616",
             "      ^^^^^^^^^^^^^^^^^^^^", 7, "out of the int64 range"},
    {kEvent, "price=1,,kind=2",
             "        ^", 9, "expected an attribute name, got \",\""},
    {kEvent, "price=1,",
             "        ^", 9,
     "expected a name=value pair after \",\", got end of input"},
    {kEvent, "price=1 && kind=2",
             "        ^^", 9,
     "expected \",\" or whitespace between name=value pairs, got \"&&\""},
    {kEvent, "1x=5",
             "^^", 1, "bad attribute name \"1x\": it starts with '1'"},
    {kEvent, kName65 + "=1",
             std::string(65, '^'), 1, "it is 65 characters long"},
};
// clang-format on

// Control characters are echoed as spaces so that the carets line up.
std::string Echo(absl::string_view input) {
  std::string echo(input);
  for (char& c : echo) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return echo;
}

TEST(Parse, InvalidInputsPointAtTheOffendingToken) {
  for (const ErrorCase& c : kErrors) {
    SCOPED_TRACE(c.input);
    const absl::Status status = c.grammar == Grammar::kSubscription
                                    ? ParseSubscription(c.input).status()
                                    : ParseEvent(c.input).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    const std::vector<std::string> lines =
        absl::StrSplit(status.message(), '\n');
    ASSERT_EQ(lines.size(), 3u) << status.message();
    EXPECT_THAT(lines[0], StartsWith(absl::StrCat("column ", c.column, ": ")));
    EXPECT_THAT(lines[0], HasSubstr(c.message));
    EXPECT_EQ(lines[1], "  " + Echo(c.input));
    EXPECT_EQ(lines[2], "  " + c.carets);
  }
}

TEST(Parse, TableHasAtLeastTwentyInvalidInputs) {
  EXPECT_GE(sizeof(kErrors) / sizeof(kErrors[0]), 20u);
}

TEST(ParseSubscription, NonBetweenOpsLeaveUpperZero) {
  absl::StatusOr<std::vector<v1::Predicate>> got =
      ParseSubscription("a = 1, b != 2, c < 3, d <= 4, e > 5, f >= 6");
  ASSERT_TRUE(got.ok()) << got.status();
  for (const v1::Predicate& p : *got) EXPECT_EQ(p.upper(), 0) << Format(p);
}

TEST(ParseSubscription, EveryInt64LimitRoundTrips) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t v :
       {kMin, kMin + 1, int64_t{-1}, int64_t{0}, int64_t{1}, kMax - 1, kMax}) {
    absl::StatusOr<std::vector<v1::Predicate>> got =
        ParseSubscription(absl::StrCat("x=", v));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ((*got)[0].value(), v);
  }
}

TEST(ParseEvent, AnEventWithOneAttributeIsFine) {
  absl::StatusOr<std::vector<v1::Attribute>> got = ParseEvent("x=1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(FormatAll(*got), ElementsAre("x 1"));
}

}  // namespace
}  // namespace client
}  // namespace cohort
