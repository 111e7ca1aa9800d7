// Over 800 lines: every form of the grammar and every error message with
// its column, which share the helpers at the top.
#include "filter/parse.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kName64(64, 'n');
const std::string kName65(65, 'n');

// A string in C escapes: "a\"b\001" (Quote) or a list of them ("a","b").
std::string Quote(absl::string_view s) {
  return absl::StrCat("\"", absl::CEscape(s), "\"");
}
std::string QuoteAll(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::vector<std::string> quoted;
  for (const std::string& s : v) quoted.push_back(Quote(s));
  return absl::StrJoin(quoted, ",");
}

// A double field as "d:" and 17 significant digits (exact), so that the
// expectations tell a double from an int64.
std::string Double(double d) { return absl::StrFormat("d:%.17g", d); }

// "price OP_LE 500 -": attribute, op, operand, upper; the operand and upper
// show which oneof field is set: an int64 as a number, a string quoted,
// a list in brackets, none as "-". Independent of FormatPredicate().
std::string Format(const v1::Predicate& p) {
  std::string operand = "-";
  switch (p.operand_case()) {
    case v1::Predicate::kValue:
      operand = absl::StrCat(p.value());
      break;
    case v1::Predicate::kStringValue:
      operand = Quote(p.string_value());
      break;
    case v1::Predicate::kInt64Values:
      operand = absl::StrCat("[", absl::StrJoin(p.int64_values().values(), ","),
                             "]");
      break;
    case v1::Predicate::kStringValues:
      operand = absl::StrCat("[", QuoteAll(p.string_values().values()), "]");
      break;
    case v1::Predicate::kDoubleValue:
      operand = Double(p.double_value());
      break;
    case v1::Predicate::kDoubleValues: {
      std::vector<std::string> texts;
      for (double d : p.double_values().values()) texts.push_back(Double(d));
      operand = absl::StrCat("[", absl::StrJoin(texts, ","), "]");
      break;
    }
    case v1::Predicate::kLiteralValue:
      operand = v1::Literal_Name(p.literal_value());
      break;
    case v1::Predicate::OPERAND_NOT_SET:
      break;
  }
  std::string upper = "-";
  if (p.upper_operand_case() == v1::Predicate::kUpper) {
    upper = absl::StrCat(p.upper());
  } else if (p.upper_operand_case() == v1::Predicate::kStringUpper) {
    upper = Quote(p.string_upper());
  } else if (p.upper_operand_case() == v1::Predicate::kDoubleUpper) {
    upper = Double(p.double_upper());
  }
  return absl::StrCat(p.attribute(), " ", v1::Op_Name(p.op()), " ", operand,
                      " ", upper);
}

// "price 420", "type \"order\"", or "x -" if neither field is set.
std::string Format(const v1::Attribute& a) {
  switch (a.kind_case()) {
    case v1::Attribute::kValue:
      return absl::StrCat(a.name(), " ", a.value());
    case v1::Attribute::kStringValue:
      return absl::StrCat(a.name(), " ", Quote(a.string_value()));
    case v1::Attribute::kDoubleValue:
      return absl::StrCat(a.name(), " ", Double(a.double_value()));
    case v1::Attribute::kLiteralValue:
      return absl::StrCat(a.name(), " ", v1::Literal_Name(a.literal_value()));
    case v1::Attribute::KIND_NOT_SET:
      break;
  }
  return absl::StrCat(a.name(), " -");
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
    {"price = 5", {"price OP_EQ 5 -"}},
    {"price == 5", {"price OP_EQ 5 -"}},
    {"price != 5", {"price OP_NE 5 -"}},
    {"price <> 5", {"price OP_NE 5 -"}},
    // Literals (true, false, null) with = and !=.
    {"ok = true and x != null and y == false",
     {"ok OP_EQ LITERAL_TRUE -", "x OP_NE LITERAL_NULL -",
      "y OP_EQ LITERAL_FALSE -"}},
    {"true = \"true\"", {"true OP_EQ \"true\" -"}},
    {"price < 5", {"price OP_LT 5 -"}},
    {"price <= 5", {"price OP_LE 5 -"}},
    {"price > 5", {"price OP_GT 5 -"}},
    {"price >= 5", {"price OP_GE 5 -"}},
    {"price eq 5", {"price OP_EQ 5 -"}},
    {"price NE 5", {"price OP_NE 5 -"}},
    {"price Lt 5", {"price OP_LT 5 -"}},
    {"price le 5", {"price OP_LE 5 -"}},
    {"price GT 5", {"price OP_GT 5 -"}},
    {"price gE 5", {"price OP_GE 5 -"}},
    // Operators need no surrounding spaces.
    {"price<=5", {"price OP_LE 5 -"}},
    {"price>=-5", {"price OP_GE -5 -"}},
    {"price!=-1", {"price OP_NE -1 -"}},
    {"price<>+7", {"price OP_NE 7 -"}},
    {"price==0", {"price OP_EQ 0 -"}},
    // BETWEEN and its `in lo..hi` form, inclusive; lo == hi is allowed.
    {"price between 10 and 20", {"price OP_BETWEEN 10 20"}},
    {"price BETWEEN -5 AND -5", {"price OP_BETWEEN -5 -5"}},
    {"price Between 1 And 2", {"price OP_BETWEEN 1 2"}},
    {"price in 10..20", {"price OP_BETWEEN 10 20"}},
    {"price in -20..-10", {"price OP_BETWEEN -20 -10"}},
    {"price in -20 .. +10", {"price OP_BETWEEN -20 10"}},
    // Numbers: signs, the int64 limits, '_' separators, leading zeros.
    {"x = -9223372036854775808", {"x OP_EQ -9223372036854775808 -"}},
    {"x = 9223372036854775807", {"x OP_EQ 9223372036854775807 -"}},
    {"x = +9223372036854775807", {"x OP_EQ 9223372036854775807 -"}},
    {"x between -9223372036854775808 and 9223372036854775807",
     {"x OP_BETWEEN -9223372036854775808 9223372036854775807"}},
    {"x in -9_223_372_036_854_775_808..9_223_372_036_854_775_807",
     {"x OP_BETWEEN -9223372036854775808 9223372036854775807"}},
    {"x = 1_000_000", {"x OP_EQ 1000000 -"}},
    {"x = -1_0", {"x OP_EQ -10 -"}},
    {"x = 007", {"x OP_EQ 7 -"}},
    {"x = -0", {"x OP_EQ 0 -"}},
    // Names: the server's rule, up to 64 characters.
    {kName64 + " = 1", {kName64 + " OP_EQ 1 -"}},
    {"a.b-c_d = 1", {"a.b-c_d OP_EQ 1 -"}},
    {"_ = 1", {"_ OP_EQ 1 -"}},
    {"Z9.-_ = 1", {"Z9.-_ OP_EQ 1 -"}},
    {"a..b in 1..2", {"a..b OP_BETWEEN 1 2"}},
    {"price-usd<-5", {"price-usd OP_LT -5 -"}},
    // Connectors, in any case and mixed.
    {"price <= 500 and kind = 7", {"price OP_LE 500 -", "kind OP_EQ 7 -"}},
    {"a=1 AND b=2 && c=3 , d=4 And e=5",
     {"a OP_EQ 1 -", "b OP_EQ 2 -", "c OP_EQ 3 -", "d OP_EQ 4 -",
      "e OP_EQ 5 -"}},
    {"a=1,b=2&&c=3", {"a OP_EQ 1 -", "b OP_EQ 2 -", "c OP_EQ 3 -"}},
    {"x >= 1 and x <= 9", {"x OP_GE 1 -", "x OP_LE 9 -"}},
    {"x between 1 and 5 and y in 2..3, z > 0",
     {"x OP_BETWEEN 1 5", "y OP_BETWEEN 2 3", "z OP_GT 0 -"}},
    // Keywords are names where a name is expected.
    {"and = 1 and between = 2", {"and OP_EQ 1 -", "between OP_EQ 2 -"}},
    {"in in 1..2 AND AND between 3 and 4",
     {"in OP_BETWEEN 1 2", "AND OP_BETWEEN 3 4"}},
    {"eq eq 1", {"eq OP_EQ 1 -"}},
    // Whitespace of any kind, anywhere.
    {"  \tprice\n<=\t500  ", {"price OP_LE 500 -"}},
    // Strings with every comparison.
    {"type = \"order\"", {"type OP_EQ \"order\" -"}},
    {"type == \"\"", {"type OP_EQ \"\" -"}},
    {"type != \"a b\"", {"type OP_NE \"a b\" -"}},
    {"type ne \"x\"", {"type OP_NE \"x\" -"}},
    {"name < \"m\"", {"name OP_LT \"m\" -"}},
    {"name<=\"m\"", {"name OP_LE \"m\" -"}},
    {"name GT \"m\"", {"name OP_GT \"m\" -"}},
    {"name >= \"m\"", {"name OP_GE \"m\" -"}},
    {"name between \"a\" and \"m\"", {"name OP_BETWEEN \"a\" \"m\""}},
    {"name between \"a\" and \"a\"", {"name OP_BETWEEN \"a\" \"a\""}},
    {"name in \"a\"..\"m\"", {"name OP_BETWEEN \"a\" \"m\""}},
    {"name between \"\" and \"\\xff\"",
     {"name OP_BETWEEN \"\" \"\\377\""}},
    // Escapes, any byte, raw bytes (UTF-8, a tab) and lookalikes of syntax.
    {"s = \"a\\\"b\\\\c\\n\\t\\r\\0\\x41\\xff\\xFe\\x00\"",
     {"s OP_EQ \"a\\\"b\\\\c\\n\\t\\r\\000A\\377\\376\\000\" -"}},
    {"s = \"caf\xc3\xa9\"", {"s OP_EQ \"caf\\303\\251\" -"}},
    {"s = \"a\tb\"", {"s OP_EQ \"a\\tb\" -"}},
    {"s = \"x = 1 and ] , \\\"\"", {"s OP_EQ \"x = 1 and ] , \\\"\" -"}},
    {"a=\"x\"and b=\"y\"", {"a OP_EQ \"x\" -", "b OP_EQ \"y\" -"}},
    // Lists: IN and NOT IN, one value or more, repeats kept.
    {"price in [10, 20]", {"price OP_IN [10,20] -"}},
    {"price IN [10,20]", {"price OP_IN [10,20] -"}},
    {"price in[ -3 , -3 ]", {"price OP_IN [-3,-3] -"}},
    {"price in [7]", {"price OP_IN [7] -"}},
    {"x in [-9223372036854775808, 9223372036854775807, 1_000]",
     {"x OP_IN [-9223372036854775808,9223372036854775807,1000] -"}},
    {"region in [\"eu-west\", \"eu-north\"]",
     {"region OP_IN [\"eu-west\",\"eu-north\"] -"}},
    {"region in[\"\"]", {"region OP_IN [\"\"] -"}},
    {"kind not in [1, 2]", {"kind OP_NOT_IN [1,2] -"}},
    {"kind NOT IN [1]", {"kind OP_NOT_IN [1] -"}},
    {"kind Not In [\"a\", \"a\"]", {"kind OP_NOT_IN [\"a\",\"a\"] -"}},
    // PREFIX takes a string, possibly empty.
    {"path prefix \"/api/\"", {"path OP_PREFIX \"/api/\" -"}},
    {"path PREFIX \"\"", {"path OP_PREFIX \"\" -"}},
    // SUFFIX likewise (issue 44).
    {"file suffix \".png\"", {"file OP_SUFFIX \".png\" -"}},
    {"file Suffix \"\" and path prefix \"/\"",
     {"file OP_SUFFIX \"\" -", "path OP_PREFIX \"/\" -"}},
    {"suffix suffix \"s\"", {"suffix OP_SUFFIX \"s\" -"}},
    {"exists suffix", {"suffix OP_EXISTS - -"}},
    // EQUALS-IGNORE-CASE, Event Ruler's spelling (issue 44).
    {"name equals-ignore-case \"Alice\"",
     {"name OP_EQUALS_IGNORE_CASE \"Alice\" -"}},
    {"name EQUALS-Ignore-Case \"\"", {"name OP_EQUALS_IGNORE_CASE \"\" -"}},
    // PREFIX-IGNORE-CASE and SUFFIX-IGNORE-CASE: Event Ruler's prefix and
    // suffix with equals-ignore-case inside; a string, possibly empty.
    {"path prefix-ignore-case \"/Api/\"",
     {"path OP_PREFIX_IGNORE_CASE \"/Api/\" -"}},
    {"file SUFFIX-Ignore-Case \".PNG\", f prefix-ignore-case \"\"",
     {"file OP_SUFFIX_IGNORE_CASE \".PNG\" -",
      "f OP_PREFIX_IGNORE_CASE \"\" -"}},
    {"prefix-ignore-case suffix-ignore-case \"x\"",
     {"prefix-ignore-case OP_SUFFIX_IGNORE_CASE \"x\" -"}},
    {"exists prefix-ignore-case", {"prefix-ignore-case OP_EXISTS - -"}},
    // NOT PREFIX and NOT SUFFIX: anything-but a prefix or a suffix.
    {"path not prefix \"/int/\"", {"path OP_NOT_PREFIX \"/int/\" -"}},
    {"f NOT Suffix \".tmp\", not not suffix \"x\"",
     {"f OP_NOT_SUFFIX \".tmp\" -", "not OP_NOT_SUFFIX \"x\" -"}},
    // CIDR: the parser takes any string; the server checks the network.
    {"src CIDR \"10.0.0.0/8\"", {"src OP_CIDR \"10.0.0.0/8\" -"}},
    {"cidr cidr \"::/0\"", {"cidr OP_CIDR \"::/0\" -"}},
    {"f wildcard \"img-*.png\"", {"f OP_WILDCARD \"img-*.png\" -"}},
    // WILDCARD with several stars, and NOT WILDCARD (anything-but
    // wildcard): the parser takes any string; the server checks the stars
    // and escapes.
    {"f wildcard \"*a*b\\\\*c*\"", {"f OP_WILDCARD \"*a*b\\\\*c*\" -"}},
    {"f not wildcard \"*.tmp\", wildcard NOT Wildcard \"\"",
     {"f OP_NOT_WILDCARD \"*.tmp\" -", "wildcard OP_NOT_WILDCARD \"\" -"}},
    {"c equals-ignore-case [\"Red\", \"green\"]",
     {"c OP_EQUALS_IGNORE_CASE [\"Red\",\"green\"] -"}},
    {"c not equals-ignore-case \"x\" and d NOT equals-ignore-case [\"y\"]",
     {"c OP_NOT_EQUALS_IGNORE_CASE \"x\" -",
      "d OP_NOT_EQUALS_IGNORE_CASE [\"y\"] -"}},
    // EXISTS and NOT EXISTS: no operand.
    {"exists coupon", {"coupon OP_EXISTS - -"}},
    {"EXISTS coupon", {"coupon OP_EXISTS - -"}},
    {"not exists coupon", {"coupon OP_NOT_EXISTS - -"}},
    {"NOT Exists coupon and x = 1",
     {"coupon OP_NOT_EXISTS - -", "x OP_EQ 1 -"}},
    {"x = 1, exists a && not exists b",
     {"x OP_EQ 1 -", "a OP_EXISTS - -", "b OP_NOT_EXISTS - -"}},
    // "exists" and "not" are names when an operator follows them ...
    {"exists = 1", {"exists OP_EQ 1 -"}},
    {"exists in [1]", {"exists OP_IN [1] -"}},
    {"exists between 1 and 2", {"exists OP_BETWEEN 1 2"}},
    {"exists prefix \"p\"", {"exists OP_PREFIX \"p\" -"}},
    {"exists ne 1", {"exists OP_NE 1 -"}},
    {"not = 1", {"not OP_EQ 1 -"}},
    {"not in [1]", {"not OP_IN [1] -"}},
    {"not not in [1]", {"not OP_NOT_IN [1] -"}},
    {"not between 1 and 2", {"not OP_BETWEEN 1 2"}},
    // ... but "exists", one word and the end of the predicate is EXISTS.
    {"exists in", {"in OP_EXISTS - -"}},
    {"exists not, exists eq and exists between",
     {"not OP_EXISTS - -", "eq OP_EXISTS - -", "between OP_EXISTS - -"}},
    {"exists exists", {"exists OP_EXISTS - -"}},
    {"not exists not", {"not OP_NOT_EXISTS - -"}},
    {"not exists exists", {"exists OP_NOT_EXISTS - -"}},
    {"exists and and exists = 1", {"and OP_EXISTS - -", "exists OP_EQ 1 -"}},
    {"prefix prefix \"p\"", {"prefix OP_PREFIX \"p\" -"}},
    // Numbers with fractions: a double operand; written with a fraction or
    // an exponent but an integer, an int64.
    {"price <= 19.99", {"price OP_LE d:19.989999999999998 -"}},
    {"price < -0.5", {"price OP_LT d:-0.5 -"}},
    {"x = 1.5e-7 and y = 2.5E+3", {"x OP_EQ d:1.4999999999999999e-07 -",
                                   "y OP_EQ 2500 -"}},
    {"price = 3.0 and n = 1e3 and m = -0.0", {"price OP_EQ 3 -",
                                              "n OP_EQ 1000 -",
                                              "m OP_EQ 0 -"}},
    {"x = 1_000.000_5", {"x OP_EQ d:1000.0005 -"}},
    {"price between 9.5 and 20", {"price OP_BETWEEN d:9.5 20"}},
    {"price in 0.5..1.5", {"price OP_BETWEEN d:0.5 d:1.5"}},
    {"price between 1 and 1.5", {"price OP_BETWEEN 1 d:1.5"}},
    {"price in [1, 2.5, -3]", {"price OP_IN [d:1,d:2.5,d:-3] -"}},
    {"price not in [1.25]", {"price OP_NOT_IN [d:1.25] -"}},
    {"price in [1.0, 2]", {"price OP_IN [1,2] -"}},
    // The example of issue 19.
    {"type = \"order\" and region in [\"eu-west\", \"eu-north\"] and path "
     "prefix \"/api/\" and price between 10 and 20 and not exists coupon",
     {"type OP_EQ \"order\" -", "region OP_IN [\"eu-west\",\"eu-north\"] -",
      "path OP_PREFIX \"/api/\" -", "price OP_BETWEEN 10 20",
      "coupon OP_NOT_EXISTS - -"}},
};

const ValidCase kValidEvents[] = {
    {"price=420 kind=7", {"price 420", "kind 7"}},
    {"ok=true gone=null no=false s=\"null\"",
     {"ok LITERAL_TRUE", "gone LITERAL_NULL", "no LITERAL_FALSE",
      "s \"null\""}},
    {"price = 420, kind = 7", {"price 420", "kind 7"}},
    {"a=1,b=2", {"a 1", "b 2"}},
    {"a=1 ,b=2 , c=3", {"a 1", "b 2", "c 3"}},
    {"  a=1\tb=2\n", {"a 1", "b 2"}},
    {"x=-9223372036854775808 y=9223372036854775807",
     {"x -9223372036854775808", "y 9223372036854775807"}},
    {"n=1_000 m=+5 z=-0", {"n 1000", "m 5", "z 0"}},
    {"a.b-c_d=0 _=1", {"a.b-c_d 0", "_ 1"}},
    {"price=19.99 n=2.0 t=-1e-3", {"price d:19.989999999999998", "n 2",
                                   "t d:-0.001"}},
    {kName64 + "=64", {kName64 + " 64"}},
    {"and=1 between=2 in=3", {"and 1", "between 2", "in 3"}},
    {"Price=1 price=2", {"Price 1", "price 2"}},  // names are case-sensitive
    // Strings.
    {"type=\"order\" price=5 path=\"/api/x\"",
     {"type \"order\"", "price 5", "path \"/api/x\""}},
    {"a = \"x\", b = \"y\"", {"a \"x\"", "b \"y\""}},
    {"a=\"\" b=\"\\x00\\\"\\\\\"", {"a \"\"", "b \"\\000\\\"\\\\\""}},
    {"a=\"x y=1\",b=\"\"", {"a \"x y=1\"", "b \"\""}},
    {"n=\"42\" m=42", {"n \"42\"", "m 42"}},
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
            "in, not in, prefix, suffix, equals-ignore-case, "
            "prefix-ignore-case, suffix-ignore-case, cidr, wildcard), got "
            "\"is\"\n"
            "  price is 5\n"
            "        ^^");
}

// kSubscription: ParseSubscription() and ParseSubscriptionSpec() alike;
// kSpec: ParseSubscriptionSpec() only.
enum class Grammar { kSubscription, kSpec, kEvent };

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
constexpr Grammar kSpec = Grammar::kSpec;
constexpr Grammar kEvent = Grammar::kEvent;

// clang-format off
const ErrorCase kErrors[] = {
    // Literals compare with = and != only.
    {kSub, "ok < true",
           "     ^^^^", 6,
     "\"true\" is a literal (true, false, null), which only = and != "
     "compare"},
    {kSub, "ok in [1, null]",
           "          ^^^^", 11,
     "\"null\" is a literal"},
    // Operators.
    {kSub, "price is 5",
           "      ^^", 7,
     "expected an operator (=, !=, <, <=, >, >=, between, in, not in, "
     "prefix, suffix, equals-ignore-case, prefix-ignore-case, "
     "suffix-ignore-case, cidr, wildcard), got \"is\""},
    {kSub, "price",
           "     ^", 6, "expected an operator (=, !=, <, <=, >, >=, between, "
                        "in, not in, prefix, suffix, equals-ignore-case, "
                        "prefix-ignore-case, suffix-ignore-case, cidr, "
                        "wildcard), got end of input"},
    {kSub, "price and 5",
           "      ^^^", 7, "expected an operator"},
    {kSub, "price ≥ 5",
           "      ^", 7, "expected an operator (=, !=, <, <=, >, >=, between, "
                         "in, not in, prefix, suffix, equals-ignore-case, "
                         "prefix-ignore-case, suffix-ignore-case, cidr, "
                         "wildcard), got \"≥\""},
    {kSub, "price \"eq\" 5",
           "      ^^^^", 7, "got \"\\\"eq\\\"\""},
    {kSub, "price\tis\n5",
           "      ^^", 7, "got \"is\""},
    // Values.
    {kSub, "price <=",
           "        ^", 9, "missing value after \"<=\""},
    {kSub, "price <= abc",
           "         ^^^", 10,
     "bad value \"abc\": expected a number (42, -7, 1_000, 19.99) or a "
     "string in double quotes (\"abc\")"},
    {kSub, "price = 1.",
           "        ^^", 9, "bad number \"1.\""},
    {kSub, "price = 1.5.2",
           "        ^^^^^", 9, "bad number \"1.5.2\""},
    {kSub, "price = 5e",
           "        ^^", 9, "bad number \"5e\""},
    {kSub, "price = 1._5",
           "        ^^^^", 9, "bad number \"1._5\""},
    {kSub, "price = 1e19",
           "        ^^^^", 9,
     "number 1e19 is out of the int64 range numbers compare in (-2^63 to "
     "2^63, 2^63 excluded)"},
    {kSub, "price = -1e999",
           "        ^^^^^^", 9, "number -1e999 is out of the int64 range"},
    {kSub, "price in [0.5, 9007199254740992]",
           "               ^^^^^^^^^^^^^^^^", 16,
     "the integer 9007199254740992 cannot share a list with a number with a "
     "fraction"},
    {kSub, "price between 2.5 and 2",
           "              ^^^^^^^^^", 15,
     "empty range: the lower bound 2.5 is greater than the upper bound 2"},
    {kSub, "price = -",
           "        ^", 9, "bad number \"-\""},
    {kSub, "price = 1__000",
           "        ^^^^^^", 9, "'_' may only separate two digits"},
    {kSub, "price = 1_",
           "        ^^", 9, "'_' may only separate two digits"},
    {kSub, "price = _1",
           "        ^^", 9, "bad value \"_1\""},
    {kSub, "price = $1",
           "        ^^", 9,
     "bad value \"$1\": expected a number (42, -7, 1_000, 19.99) or a "
     "string in double quotes"},
    {kSub, "price =< 5",
           "       ^", 8, "expected a value after \"=\", got \"<\""},
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
           "              ^", 15,
     "expected \",\" or \"]\" after a value of the list, got end of input"},
    {kSub, "price in [1 5]",
           "            ^", 13, "expected \",\" or \"]\""},
    {kSub, "price in 1 5",
           "           ^", 12,
     "expected \"..\" between the bounds of \"in lo..hi\", got \"5\""},
    {kSub, "price in",
           "        ^", 9, "missing value after \"in\""},
    {kSub, "price in [",
           "          ^", 11, "missing value after \"[\""},
    {kSub, "price in ..5",
           "         ^^", 10, "expected a value after \"in\""},
    // Connectors and what follows a predicate.
    {kSub, "price = 5 kind = 7",
           "          ^^^^", 11, "missing \"and\" between predicates"},
    {kSub, "price = 5 kind between 1 and 2",
           "          ^^^^", 11, "missing \"and\" between predicates"},
    {kSub, "price = 5 6",
           "          ^", 11,
     "unexpected \"6\" after a complete predicate; expected \"and\""},
    {kSub, "price = 5 | kind = 7",
           "          ^", 11, "unexpected \"|\""},
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
             "      ^^^", 7, "bad value \"abc\""},
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

// The errors of strings, lists, PREFIX and EXISTS, with their whole first
// line: `message` is all that follows "column N: ".
// clang-format off
const ErrorCase kTypedErrors[] = {
    // Strings that cannot be read: from the opening quote to the end, or the
    // bad escape.
    {kSub, "type = \"order",
           "       ^^^^^^", 8,
     "unterminated string: no closing '\"' before the end of the input"},
    {kSub, "type = \"ord\\\"",
           "       ^^^^^^", 8,
     "unterminated string: no closing '\"' before the end of the input"},
    {kSub, "x = \"a\\",
           "    ^^^", 5,
     "unterminated string: no closing '\"' before the end of the input"},
    {kSub, "s = \"a\\qb\"",
           "      ^^", 7,
     "bad escape \\q; the escapes are \\\" \\\\ \\n \\t \\r \\0 and \\xHH"},
    {kSub, "s = \"\\x4g\"",
           "     ^^^^", 6,
     "bad escape \\x: it takes two hex digits (\\x00 to \\xFF)"},
    {kSub, "s = \"\\x\"",
           "     ^^", 6,
     "bad escape \\x: it takes two hex digits (\\x00 to \\xFF)"},
    {kSub, "s = \"\\\t\"",
           "     ^^", 6,
     "bad escape: \\ followed by byte 0x09; the escapes are \\\" \\\\ \\n \\t "
     "\\r \\0 and \\xHH"},
    {kSub, "s = \"\\é\"",
           "     ^^", 6,
     "bad escape: \\ followed by 'é'; the escapes are \\\" \\\\ \\n \\t \\r "
     "\\0 and \\xHH"},
    {kSub, "x = 5 and \"abc",
           "          ^^^^", 11,
     "unterminated string: no closing '\"' before the end of the input"},
    // Errors are reported in the order of the input: the junk "6" first.
    {kSub, "x = 5 6 \"abc",
           "      ^", 7,
     "unexpected \"6\" after a complete predicate; expected \"and\", \"&&\", "
     "\",\", \"or\", \"||\" or end of input"},
    {kSub, "type = order",
           "       ^^^^^", 8,
     "bad value \"order\": expected a number (42, -7, 1_000, 19.99) or a "
     "string in double quotes (\"order\")"},
    {kSub, "\"price\" = 5",
           "^^^^^^^", 1, "expected an attribute name, got \"\\\"price\\\"\""},
    // Lists.
    {kSub, "price in []",
           "         ^^", 10, "empty list: \"in\" needs at least one value"},
    {kSub, "price not in [ ]",
           "             ^^^", 14,
     "empty list: \"not in\" needs at least one value"},
    {kSub, "x in [1, \"a\"]",
           "         ^^^", 10,
     "mixed types in the list: expected a number like the first value, got "
     "the string \"a\""},
    {kSub, "x in [\"a\", 2]",
           "           ^", 12,
     "mixed types in the list: expected a string like the first value, got "
     "the number 2"},
    {kSub, "x not in [\"a\", 1]",
           "               ^", 16,
     "mixed types in the list: expected a string like the first value, got "
     "the number 1"},
    {kSub, "x in [1,]",
           "        ^", 9, "expected a value after \",\", got \"]\""},
    {kSub, "x not in 5",
           "         ^", 10,
     "expected \"[\" to start the list of \"not in\" (\"not in [1, 2]\"), got "
     "\"5\""},
    {kSub, "x not 5",
           "      ^", 7,
     "expected \"in\", \"prefix\", \"suffix\", \"equals-ignore-case\" or "
     "\"wildcard\" after \"not\", got \"5\""},
    {kSub, "c equals-ignore-case [1, 2]",
           "                     ^", 22,
     "expected a list of strings after \"equals-ignore-case\", got numbers"},
    {kSub, "x not prefix 5",
           "             ^", 14,
     "expected a string after \"prefix\", got the number 5"},
    // PREFIX.
    {kSub, "path prefix 5",
           "            ^", 13,
     "expected a string after \"prefix\", got the number 5"},
    {kSub, "path prefix",
           "           ^", 12, "missing value after \"prefix\""},
    // SUFFIX.
    {kSub, "file suffix -1",
           "            ^^", 13,
     "expected a string after \"suffix\", got the number -1"},
    {kSub, "n equals-ignore-case 7",
           "                     ^", 22,
     "expected a string after \"equals-ignore-case\", got the number 7"},
    {kSub, "file suffix [\"a\"]",
           "            ^", 13,
     "expected a value after \"suffix\", got \"[\""},
    // PREFIX-IGNORE-CASE and SUFFIX-IGNORE-CASE: one string, no negation.
    {kSub, "p prefix-ignore-case 5",
           "                     ^", 22,
     "expected a string after \"prefix-ignore-case\", got the number 5"},
    {kSub, "p suffix-ignore-case [\"a\"]",
           "                     ^", 22,
     "expected a value after \"suffix-ignore-case\", got \"[\""},
    {kSub, "p not prefix-ignore-case \"a\"",
           "      ^^^^^^^^^^^^^^^^^^", 7,
     "expected \"in\", \"prefix\", \"suffix\", \"equals-ignore-case\" or "
     "\"wildcard\" after \"not\", got \"prefix-ignore-case\""},
    // BETWEEN with strings.
    {kSub, "x between 1 and \"m\"",
           "                ^^^", 17,
     "bounds of mixed types: the lower bound is the number 1, the upper the "
     "string \"m\"; both must be numbers or both strings"},
    {kSub, "x in \"a\"..5",
           "          ^", 11,
     "bounds of mixed types: the lower bound is the string \"a\", the upper "
     "the number 5; both must be numbers or both strings"},
    {kSub, "x between \"m\" and \"a\"",
           "          ^^^^^^^^^^^", 11,
     "empty range: the lower bound \"m\" is greater than the upper bound "
     "\"a\""},
    // Bytes compare unsigned: 0xFF is above 'a'.
    {kSub, "x between \"\\xff\" and \"a\"",
           "          ^^^^^^^^^^^^^^", 11,
     "empty range: the lower bound \"\\xFF\" is greater than the upper bound "
     "\"a\""},
    // EXISTS and NOT EXISTS.
    {kSub, "not coupon",
           "    ^^^^^^", 5,
     "expected \"exists\" after \"not\" at the start of a predicate, got "
     "\"coupon\""},
    {kSub, "not",
           "   ^", 4,
     "expected \"exists\" after \"not\" at the start of a predicate, got end "
     "of input"},
    {kSub, "x = 1 and not 5",
           "              ^", 15,
     "expected \"exists\" after \"not\" at the start of a predicate, got "
     "\"5\""},
    {kSub, "coupon exists",
           "       ^^^^^^", 8,
     "expected an operator (=, !=, <, <=, >, >=, between, in, not in, "
     "prefix, suffix, equals-ignore-case, prefix-ignore-case, "
     "suffix-ignore-case, cidr, wildcard), got \"exists\"; "
     "\"exists\" "
     "goes before the name: exists coupon"},
    {kSub, "coupon not exists",
           "           ^^^^^^", 12,
     "expected \"in\", \"prefix\", \"suffix\", \"equals-ignore-case\" or "
     "\"wildcard\" after \"not\", got \"exists\"; \"not exists\" goes "
     "before the name: not exists coupon"},
    {kSub, "exists",
           "      ^", 7, "expected an attribute name, got end of input"},
    {kSub, "exists 5",
           "       ^", 8,
     "bad attribute name \"5\": it starts with '5'; a name starts with a "
     "letter or '_'"},
    {kSub, "price = 5 exists x",
           "          ^^^^^^", 11,
     "missing \"and\" between predicates: expected \"and\", \"&&\" or \",\" "
     "before \"exists\""},
    {kSub, "price = 5 not exists x",
           "          ^^^", 11,
     "missing \"and\" between predicates: expected \"and\", \"&&\" or \",\" "
     "before \"not\""},
    // Events with strings.
    {kEvent, "a=\"x\"b=1",
             "     ^", 6,
     "expected \",\" or whitespace between name=value pairs, got \"b\""},
    {kEvent, "a=\"x\"\"y\"",
             "     ^^^", 6,
     "expected \",\" or whitespace between name=value pairs, got "
     "\"\\\"y\\\"\""},
    {kEvent, "a=\"x",
             "  ^^", 3,
     "unterminated string: no closing '\"' before the end of the input"},
    {kEvent, "a=1 b=\"x\\y\"",
             "        ^^", 9,
     "bad escape \\y; the escapes are \\\" \\\\ \\n \\t \\r \\0 and \\xHH"},
    {kEvent, "a=x",
             "  ^", 3,
     "bad value \"x\": expected a number (42, -7, 1_000, 19.99) or a "
     "string in double quotes (\"x\")"},
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

// Checks the error `c` describes; with `exact`, its whole first line.
void ExpectError(const ErrorCase& c, bool exact) {
  SCOPED_TRACE(c.input);
  const absl::Status status = c.grammar == Grammar::kEvent
                                  ? ParseEvent(c.input).status()
                                  : ParseSubscriptionSpec(c.input).status();
  if (c.grammar == Grammar::kSubscription) {
    EXPECT_EQ(ParseSubscription(c.input).status(), status);
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::vector<std::string> lines = absl::StrSplit(status.message(), '\n');
  ASSERT_EQ(lines.size(), 3u) << status.message();
  if (exact) {
    EXPECT_EQ(lines[0], absl::StrCat("column ", c.column, ": ", c.message));
  } else {
    EXPECT_THAT(lines[0], StartsWith(absl::StrCat("column ", c.column, ": ")));
    EXPECT_THAT(lines[0], HasSubstr(c.message));
  }
  EXPECT_EQ(lines[1], "  " + Echo(c.input));
  EXPECT_EQ(lines[2], "  " + c.carets);
}

TEST(Parse, InvalidInputsPointAtTheOffendingToken) {
  for (const ErrorCase& c : kErrors) ExpectError(c, /*exact=*/false);
}

TEST(Parse, InvalidTypedInputsGiveExactMessagesAndCarets) {
  for (const ErrorCase& c : kTypedErrors) ExpectError(c, /*exact=*/true);
}

TEST(Parse, TableHasAtLeastTwentyInvalidInputs) {
  EXPECT_GE(sizeof(kErrors) / sizeof(kErrors[0]), 20u);
}

// ---------------------------------------------------------------------------
// "or" and parentheses (ParseSubscriptionSpec)

// "a OP_EQ 1 -; {b OP_EQ 2 - / c OP_EQ 3 -; d OP_EQ 4 -}": the predicates,
// then each group, its alternatives split by " / ". Independent of
// FormatSubscription().
std::string FormatSpec(const v1::SubscriptionSpec& spec) {
  const auto join = [](const auto& predicates) {
    std::vector<std::string> texts;
    for (const v1::Predicate& p : predicates) texts.push_back(Format(p));
    return absl::StrJoin(texts, "; ");
  };
  std::vector<std::string> parts;
  if (!spec.predicates().empty()) parts.push_back(join(spec.predicates()));
  for (const v1::AnyOf& group : spec.any_of()) {
    std::vector<std::string> alternatives;
    for (const v1::Conjunction& c : group.alternatives()) {
      alternatives.push_back(join(c.predicates()));
    }
    parts.push_back(absl::StrCat("{", absl::StrJoin(alternatives, " / "), "}"));
  }
  return absl::StrJoin(parts, "; ");
}

struct SpecCase {
  std::string input;
  std::string expected;  // FormatSpec
};

// clang-format off
const SpecCase kValidSpecs[] = {
    // No "or": predicates only, parentheses flattened.
    {"a = 1 and b = 2", "a OP_EQ 1 -; b OP_EQ 2 -"},
    {"(a = 1 and b = 2)", "a OP_EQ 1 -; b OP_EQ 2 -"},
    {"((a = 1)) , (b = 2)", "a OP_EQ 1 -; b OP_EQ 2 -"},
    // "or" at the top: one group, no predicates.
    {"a = 1 or b = 2", "{a OP_EQ 1 - / b OP_EQ 2 -}"},
    {"a=1||b=2", "{a OP_EQ 1 - / b OP_EQ 2 -}"},
    {"a = 1 OR b = 2 || c = 3 Or d = 4",
     "{a OP_EQ 1 - / b OP_EQ 2 - / c OP_EQ 3 - / d OP_EQ 4 -}"},
    // "and" binds tighter.
    {"a = 1 or b = 2 and c = 3",
     "{a OP_EQ 1 - / b OP_EQ 2 -; c OP_EQ 3 -}"},
    {"a = 1 && b = 2 or c = 3",
     "{a OP_EQ 1 -; b OP_EQ 2 - / c OP_EQ 3 -}"},
    // One conjunction at the top: its predicates, and a group for each
    // parenthesized "or", in the order written.
    {"a = 1 and (b = 2 or c = 3)",
     "a OP_EQ 1 -; {b OP_EQ 2 - / c OP_EQ 3 -}"},
    {"(b = 2 or c = 3) and a = 1",
     "a OP_EQ 1 -; {b OP_EQ 2 - / c OP_EQ 3 -}"},
    {"a = 1 and (b = 2 or c = 3) and (d = 4 or e = 5)",
     "a OP_EQ 1 -; {b OP_EQ 2 - / c OP_EQ 3 -}; {d OP_EQ 4 - / e OP_EQ 5 -}"},
    {"(a = 1 or b = 2)", "{a OP_EQ 1 - / b OP_EQ 2 -}"},
    {"((a = 1 or b = 2))", "{a OP_EQ 1 - / b OP_EQ 2 -}"},
    // Parentheses of one alternative are flattened, groups in them kept.
    {"x = 1 and (a = 1 and (b = 2 or c = 3)) and y = 2",
     "x OP_EQ 1 -; a OP_EQ 1 -; y OP_EQ 2 -; {b OP_EQ 2 - / c OP_EQ 3 -}"},
    {"((a = 1 or b = 2) and (c = 3 or d = 4))",
     "{a OP_EQ 1 - / b OP_EQ 2 -}; {c OP_EQ 3 - / d OP_EQ 4 -}"},
    // Nested groups are distributed, the first choice varying slowest and
    // the predicates in the order written.
    {"((a = 1 or b = 2) and c = 3 or d = 4)",
     "{a OP_EQ 1 -; c OP_EQ 3 - / b OP_EQ 2 -; c OP_EQ 3 - / d OP_EQ 4 -}"},
    {"(x = 1 and (a = 1 or b = 2) and y = 1 or z = 1)",
     "{x OP_EQ 1 -; a OP_EQ 1 -; y OP_EQ 1 - / x OP_EQ 1 -; b OP_EQ 2 -; "
     "y OP_EQ 1 - / z OP_EQ 1 -}"},
    {"(a = 1 or b = 2) and (c = 3 or d = 4) or e = 5",
     "{a OP_EQ 1 -; c OP_EQ 3 - / a OP_EQ 1 -; d OP_EQ 4 - / b OP_EQ 2 -; "
     "c OP_EQ 3 - / b OP_EQ 2 -; d OP_EQ 4 - / e OP_EQ 5 -}"},
    {"(a = 1 or (b = 2 or c = 3))",
     "{a OP_EQ 1 - / b OP_EQ 2 - / c OP_EQ 3 -}"},
    {"(a = 1 or a = 1)", "{a OP_EQ 1 - / a OP_EQ 1 -}"},
    // Keywords are names where a name is expected.
    {"or = 1 or or = 2", "{or OP_EQ 1 - / or OP_EQ 2 -}"},
    {"OR in [1] and and = 2", "OR OP_IN [1] -; and OP_EQ 2 -"},
    {"exists in or exists or", "{in OP_EXISTS - - / or OP_EXISTS - -}"},
    {"(exists in)", "in OP_EXISTS - -"},
    {"(exists not or not exists or)",
     "{not OP_EXISTS - - / or OP_NOT_EXISTS - -}"},
    {"x between 1 and 5 or y in 1..2",
     "{x OP_BETWEEN 1 5 / y OP_BETWEEN 1 2}"},
    {"s = \"(a or b)\" or t in [\")\"]",
     "{s OP_EQ \"(a or b)\" - / t OP_IN [\")\"] -}"},
};
// clang-format on

TEST(ParseSubscriptionSpec, ValidInputsGiveExactSpecs) {
  for (const SpecCase& c : kValidSpecs) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<v1::SubscriptionSpec> got = ParseSubscriptionSpec(c.input);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(FormatSpec(*got), c.expected);
    EXPECT_TRUE(got->subscriber().empty());
  }
}

TEST(ParseSubscriptionSpec, AgreesWithParseSubscriptionWithoutOr) {
  for (const ValidCase& c : kValidSubscriptions) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<v1::SubscriptionSpec> got = ParseSubscriptionSpec(c.input);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->any_of_size(), 0);
    EXPECT_THAT(FormatAll(std::vector<v1::Predicate>(got->predicates().begin(),
                                                     got->predicates().end())),
                ElementsAreArray(c.expected));
  }
}

TEST(ParseSubscription, RefusesOrUnderTheFirstOr) {
  absl::StatusOr<std::vector<v1::Predicate>> got =
      ParseSubscription("a = 1 and (b = 2 || c = 3) or d = 4");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "column 18: \"||\" is not supported here: expected predicates "
            "joined by \"and\" only\n"
            "  a = 1 and (b = 2 || c = 3) or d = 4\n"
            "                   ^^");
  // Parentheses without "or" are fine.
  got = ParseSubscription("(a = 1 and (b = 2))");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(FormatAll(*got), ElementsAre("a OP_EQ 1 -", "b OP_EQ 2 -"));
}

// clang-format off
const ErrorCase kOrErrors[] = {
    {kSpec, "(a = 1",
            "^", 1, "unclosed \"(\": no \")\" before the end of the input"},
    {kSpec, "a = 1 and (b = 2 or c = 3",
            "          ^", 11,
     "unclosed \"(\": no \")\" before the end of the input"},
    {kSpec, "((a = 1)",
            "^", 1, "unclosed \"(\": no \")\" before the end of the input"},
    {kSpec, "a = 1 or (b = 2",
            "         ^", 10,
     "unclosed \"(\": no \")\" before the end of the input"},
    {kSpec, "a = 1)",
            "     ^", 6, "unmatched \")\": no \"(\" is open"},
    {kSpec, ")",
            "^", 1, "unmatched \")\": no \"(\" is open"},
    {kSpec, "(a = 1))",
            "       ^", 8, "unmatched \")\": no \"(\" is open"},
    {kSpec, "()",
            "^^", 1,
     "empty parentheses: expected a predicate between \"(\" and \")\""},
    {kSpec, "a = 1 and ( )",
            "          ^^^", 11,
     "empty parentheses: expected a predicate between \"(\" and \")\""},
    {kSpec, "or a = 1",
            "   ^", 4,
     "expected an operator (=, !=, <, <=, >, >=, between, in, not in, "
     "prefix, suffix, equals-ignore-case, prefix-ignore-case, "
     "suffix-ignore-case, cidr, wildcard), got \"a\"; "
     "\"or\" is read as an attribute name here, where a predicate "
     "starts"},
    {kSpec, "|| a = 1",
            "^^", 1, "expected an attribute name, got \"||\""},
    {kSpec, "a = 1 or",
            "        ^", 9, "expected a predicate after \"or\", got end of "
                            "input"},
    {kSpec, "a = 1 ||",
            "        ^", 9, "expected a predicate after \"||\", got end of "
                            "input"},
    {kSpec, "(a = 1 or)",
            "         ^", 10, "expected a predicate after \"or\", got \")\""},
    {kSpec, "(a = 1 and)",
            "          ^", 11, "expected a predicate after \"and\", got \")\""},
    {kSpec, "a = 1 or or",
            "           ^", 12,
     "expected an operator (=, !=, <, <=, >, >=, between, in, not in, "
     "prefix, suffix, equals-ignore-case, prefix-ignore-case, "
     "suffix-ignore-case, cidr, wildcard), got end of "
     "input; \"or\" is read as an attribute name here, where a predicate "
     "starts"},
    {kSpec, "a = 1 (b = 2)",
            "      ^", 7, "missing \"and\" or \"or\" before \"(\""},
    {kSpec, "(a = 1 b = 2)",
            "       ^", 8,
     "missing \"and\" between predicates: expected \"and\", \"&&\" or \",\" "
     "before \"b\""},
    {kSpec, "(a = 1 6)",
            "       ^", 8,
     "unexpected \"6\" after a complete predicate; expected \"and\", \"&&\", "
     "\",\", \"or\", \"||\" or \")\""},
    {kSpec, "n=(5) or m=-1)",
            "  ^", 3, "expected a value after \"=\", got \"(\""},
};
// clang-format on

TEST(ParseSubscriptionSpec, InvalidOrInputsGiveExactMessagesAndCarets) {
  for (const ErrorCase& c : kOrErrors) ExpectError(c, /*exact=*/true);
}

// `n` binary groups joined by "and": 2^n alternatives when distributed.
std::string BinaryGroups(int n) {
  std::vector<std::string> groups;
  for (int i = 0; i < n; ++i) {
    groups.push_back(absl::StrCat("(g", i, " = 1 or g", i, " = 2)"));
  }
  return absl::StrJoin(groups, " and ");
}

TEST(ParseSubscriptionSpec, DistributesUpToTheCap) {
  // One alternative, flattened: ten groups of two, kept apart.
  absl::StatusOr<v1::SubscriptionSpec> got = ParseSubscriptionSpec(
      absl::StrCat("x = 0 and (", BinaryGroups(10), " and y = 1)"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->predicates_size(), 2);
  EXPECT_EQ(got->any_of_size(), 10);
  // 2^9 + 1 alternatives, each the nine choices and w in the order
  // written.
  got = ParseSubscriptionSpec(
      absl::StrCat("x = 0 and (", BinaryGroups(9), " and w = 1 or y = 1)"));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->any_of_size(), 1);
  ASSERT_EQ(got->any_of(0).alternatives_size(), 513);
  EXPECT_EQ(got->any_of(0).alternatives(0).predicates_size(), 10);
  EXPECT_EQ(got->any_of(0).alternatives(1).predicates(8).value(), 2);
  EXPECT_EQ(got->any_of(0).alternatives(1).predicates(7).value(), 1);
  EXPECT_EQ(got->any_of(0).alternatives(1).predicates(9).attribute(), "w");
  EXPECT_EQ(got->any_of(0).alternatives(512).predicates(0).attribute(), "y");
  // 2^10 = 1024 alternatives: the most a group may have.
  got = ParseSubscriptionSpec(
      absl::StrCat("x = 0 and ((", BinaryGroups(10), ") or (", BinaryGroups(1),
                   "))"));
  EXPECT_FALSE(got.ok());  // 1024 + 2
  got = ParseSubscriptionSpec(absl::StrCat("x = 0 and (", BinaryGroups(10),
                                           " or y = 1)"));
  EXPECT_FALSE(got.ok());  // 1024 + 1
  got = ParseSubscriptionSpec(
      absl::StrCat("x = 0 and (", BinaryGroups(10), " and y = 1 or z = 1)"));
  EXPECT_FALSE(got.ok());
  got = ParseSubscriptionSpec(absl::StrCat(BinaryGroups(10), " or y = 1"));
  EXPECT_FALSE(got.ok());
  got = ParseSubscriptionSpec(
      absl::StrCat("(", BinaryGroups(9), ") or (", BinaryGroups(9), ")"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->any_of(0).alternatives_size(), 1024);
}

TEST(ParseSubscriptionSpec, TooLargeAGroupIsAnErrorUnderIt) {
  const std::string group = absl::StrCat("(", BinaryGroups(11), " or y = 1)");
  const std::string text = absl::StrCat("x = 0 and ", group);
  absl::StatusOr<v1::SubscriptionSpec> got = ParseSubscriptionSpec(text);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            absl::StrCat("column 11: the group in these parentheses is too "
                         "large: it expands into more than 1024 alternatives "
                         "(every \"and\" of groups taken one alternative of "
                         "each); the limit is 1024\n  ",
                         text, "\n  ", std::string(10, ' '),
                         std::string(group.size(), '^')));
  // At the top, under the whole filter.
  const std::string top = absl::StrCat(BinaryGroups(10), " or y = 1");
  got = ParseSubscriptionSpec(top);
  EXPECT_EQ(got.status().message(),
            absl::StrCat("column 1: the filter is too large: it expands into "
                         "more than 1024 alternatives (every \"and\" of "
                         "groups taken one alternative of each); the limit "
                         "is 1024\n  ",
                         top, "\n  ", std::string(top.size(), '^')));
}

TEST(ParseSubscriptionSpec, TooManyDistributedPredicatesIsAnError) {
  // Two halves of 512 alternatives of `plain` + 9 predicates.
  const auto halves = [](int plain) {
    std::vector<std::string> predicates;
    for (int i = 0; i < plain; ++i) {
      predicates.push_back(absl::StrCat("p", i, " = 1"));
    }
    const std::string half =
        absl::StrCat("(", absl::StrJoin(predicates, " and "), " and ",
                     BinaryGroups(9), ")");
    return absl::StrCat("x = 0 and (", half, " or ", half, ")");
  };
  // 1024 alternatives of 60 + 9 predicates: 70656, past 65536.
  absl::StatusOr<v1::SubscriptionSpec> got =
      ParseSubscriptionSpec(halves(60));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()),
              StartsWith("column 11: the group in these parentheses is too "
                         "large: it expands into more than 65536 "
                         "predicates"));
  // Of 50 + 9: 60416, within the limit.
  got = ParseSubscriptionSpec(halves(50));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->any_of_size(), 1);
  EXPECT_EQ(got->any_of(0).alternatives_size(), 1024);
  EXPECT_EQ(got->any_of(0).alternatives(1023).predicates_size(), 59);
}

TEST(ParseSubscriptionSpec, ParenthesesNestAtMost64Deep) {
  const auto nested = [](size_t depth) {
    return absl::StrCat(std::string(depth, '('), "a = 1 or b = 2",
                        std::string(depth, ')'));
  };
  absl::StatusOr<v1::SubscriptionSpec> got =
      ParseSubscriptionSpec(nested(kMaxParenDepth));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(FormatSpec(*got), "{a OP_EQ 1 - / b OP_EQ 2 -}");
  got = ParseSubscriptionSpec(nested(kMaxParenDepth + 1));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()),
              StartsWith("column 65: parentheses nested more than 64 deep"));
}

TEST(ParseSubscription, NonBetweenOpsLeaveUpperUnset) {
  absl::StatusOr<std::vector<v1::Predicate>> got = ParseSubscription(
      "a = 1, b != \"x\", c < 3, d <= 4, e > 5, f >= 6, g in [1], h not in "
      "[\"y\"], i prefix \"z\", exists j, not exists k");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 11u);
  for (const v1::Predicate& p : *got) {
    EXPECT_EQ(p.upper_operand_case(), v1::Predicate::UPPER_OPERAND_NOT_SET)
        << Format(p);
  }
  // EXISTS and NOT EXISTS have no operand at all.
  EXPECT_EQ((*got)[9].operand_case(), v1::Predicate::OPERAND_NOT_SET);
  EXPECT_EQ((*got)[10].operand_case(), v1::Predicate::OPERAND_NOT_SET);
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

TEST(ParseSubscription, EveryByteRoundTripsThroughAnEscape) {
  for (int b = 0; b < 256; ++b) {
    const std::string byte(1, static_cast<char>(b));
    absl::StatusOr<std::vector<v1::Predicate>> got =
        ParseSubscription(absl::StrFormat("x = \"\\x%02x\"", b));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].string_value(), byte) << b;
    got = ParseSubscription(absl::StrCat("x = ", FormatString(byte)));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].string_value(), byte) << b;
  }
}

TEST(ParseEvent, AnEventWithOneAttributeIsFine) {
  absl::StatusOr<std::vector<v1::Attribute>> got = ParseEvent("x=1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(FormatAll(*got), ElementsAre("x 1"));
}

// ---------------------------------------------------------------------------
// Printing

TEST(FormatString, QuotesAndEscapes) {
  EXPECT_EQ(FormatString(""), "\"\"");
  EXPECT_EQ(FormatString("order"), "\"order\"");
  EXPECT_EQ(FormatString(" /api/x?a=1&b=~ "), "\" /api/x?a=1&b=~ \"");
  EXPECT_EQ(FormatString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(FormatString(std::string("\n\t\r\0\x01\x7f", 6)),
            "\"\\x0A\\x09\\x0D\\x00\\x01\\x7F\"");
  EXPECT_EQ(FormatString("caf\xc3\xa9 \xff"), "\"caf\\xC3\\xA9 \\xFF\"");
}

v1::Predicate ParseOne(absl::string_view text) {
  absl::StatusOr<std::vector<v1::Predicate>> got = ParseSubscription(text);
  EXPECT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got.ok() ? got->size() : 0, 1u) << text;
  return got.ok() && !got->empty() ? (*got)[0] : v1::Predicate();
}

TEST(FormatPredicate, WritesTheCanonicalForm) {
  const std::pair<std::string, std::string> kCases[] = {
      {"price le 500", "price <= 500"},
      {"price == -7", "price = -7"},
      {"price <> 1_000", "price != 1000"},
      {"price lt 1", "price < 1"},
      {"price GT 1", "price > 1"},
      {"price ge 1", "price >= 1"},
      {"type eq \"order\"", "type = \"order\""},
      {"name<\"m\"", "name < \"m\""},
      {"price in 10 .. 20", "price between 10 and 20"},
      {"name BETWEEN \"a\" AND \"m\"", "name between \"a\" and \"m\""},
      {"region IN[\"eu-west\",\"eu-north\"]",
       "region in [\"eu-west\", \"eu-north\"]"},
      {"kind NOT IN [1,2,2]", "kind not in [1, 2, 2]"},
      {"path PREFIX \"/api/\"", "path prefix \"/api/\""},
      {"file SUFFIX \".png\"", "file suffix \".png\""},
      {"n Equals-Ignore-Case \"x\"", "n equals-ignore-case \"x\""},
      {"n Prefix-Ignore-Case \"Ab\"", "n prefix-ignore-case \"Ab\""},
      {"n SUFFIX-IGNORE-CASE \"\\x00\"", "n suffix-ignore-case \"\\x00\""},
      {"p NOT PREFIX \"/\"", "p not prefix \"/\""},
      {"p not  suffix \"/\"", "p not suffix \"/\""},
      {"ip Cidr \"2001:db8::/32\"", "ip cidr \"2001:db8::/32\""},
      {"f WILDCARD \"*.png\"", "f wildcard \"*.png\""},
      {"f wildcard \"a*b*\\\\*c\"", "f wildcard \"a*b*\\\\*c\""},
      {"f NOT  Wildcard \"*/bin/*.jar\"", "f not wildcard \"*/bin/*.jar\""},
      {"c not Equals-Ignore-Case [\"a\",\"B\"]",
       "c not equals-ignore-case [\"a\", \"B\"]"},
      {"EXISTS coupon", "exists coupon"},
      {"Not Exists coupon", "not exists coupon"},
      {"s = \"a\\tb\\\\\\\"\\x7f\"", "s = \"a\\x09b\\\\\\\"\\x7F\""},
  };
  for (const auto& [input, canonical] : kCases) {
    SCOPED_TRACE(input);
    EXPECT_EQ(FormatPredicate(ParseOne(input)), canonical);
  }
}

TEST(FormatPredicate, PrintsWhatTheApiReadsForUnsetOperands) {
  v1::Predicate p;
  p.set_attribute("x");
  p.set_op(v1::OP_EQ);
  EXPECT_EQ(FormatPredicate(p), "x = 0");
  p.set_op(v1::OP_BETWEEN);
  EXPECT_EQ(FormatPredicate(p), "x between 0 and 0");
  p.set_op(v1::OP_IN);
  EXPECT_EQ(FormatPredicate(p), "x in []");
  p.set_op(v1::OP_EXISTS);
  p.set_value(5);  // an operand EXISTS does not take is not printed
  EXPECT_EQ(FormatPredicate(p), "exists x");
}

TEST(FormatSubscription, JoinsWithAnd) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber("alice");
  absl::StatusOr<std::vector<v1::Predicate>> parsed = ParseSubscription(
      "type = \"order\" && not exists coupon, price between 1 and 2");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (v1::Predicate& p : *parsed) *spec.add_predicates() = std::move(p);
  EXPECT_EQ(FormatSubscription(spec),
            "type = \"order\" and not exists coupon and price between 1 and 2");
}

TEST(FormatSubscription, WritesGroupsInParentheses) {
  absl::StatusOr<v1::SubscriptionSpec> spec = ParseSubscriptionSpec(
      "(b = 2 or c = 3 && d = 4) and a = 1 and (e = 5 or exists f)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(FormatSubscription(*spec),
            "a = 1 and (b = 2 or c = 3 and d = 4) and (e = 5 or exists f)");
  // One group and no predicates: "or" at the top, no parentheses.
  spec = ParseSubscriptionSpec("(a = 1 or b = 2 and c = 3)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(FormatSubscription(*spec), "a = 1 or b = 2 and c = 3");
  // Two groups and no predicates.
  spec = ParseSubscriptionSpec("(a = 1 or b = 2) and (c = 3 or d = 4)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(FormatSubscription(*spec), "(a = 1 or b = 2) and (c = 3 or d = 4)");
  // A spec the parser would not return keeps its shape.
  v1::SubscriptionSpec odd;
  v1::AnyOf* group = odd.add_any_of();
  *group->add_alternatives()->add_predicates() = ParseOne("x = 1");
  *odd.add_any_of()->add_alternatives()->add_predicates() = ParseOne("y = 2");
  EXPECT_EQ(FormatSubscription(odd), "(x = 1) and (y = 2)");
}

TEST(FormatEvent, WritesPairsParseEventReads) {
  v1::Event event;
  absl::StatusOr<std::vector<v1::Attribute>> parsed =
      ParseEvent("type=\"order\", price = 5 path=\"/api/\\x00\"");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (v1::Attribute& a : *parsed) *event.add_attributes() = std::move(a);
  event.set_payload("not printed");
  EXPECT_EQ(FormatEvent(event), "type=\"order\" price=5 path=\"/api/\\x00\"");
  EXPECT_EQ(FormatAttribute(event.attributes(1)), "price=5");
  v1::Attribute unset;
  unset.set_name("z");
  EXPECT_EQ(FormatAttribute(unset), "z=0");
}

// Random typed predicates and events, of every op and operand type, with
// names that are also keywords and strings of any bytes.
class RandomMessages {
 public:
  explicit RandomMessages(uint64_t seed) : rng_(seed) {}

  v1::Predicate Predicate() {
    v1::Predicate p;
    p.set_attribute(Name());
    p.set_op(static_cast<v1::Op>(Uniform(1, 22)));
    const bool is_string = Uniform(0, 1) == 1;
    switch (p.op()) {
      case v1::OP_BETWEEN:
        if (is_string) {
          std::string lo = String(), hi = String();
          if (lo > hi) std::swap(lo, hi);
          p.set_string_value(lo);
          p.set_string_upper(hi);
        } else {
          int64_t lo = Int(), hi = Int();
          if (lo > hi) std::swap(lo, hi);
          p.set_value(lo);
          p.set_upper(hi);
        }
        break;
      case v1::OP_IN:
      case v1::OP_NOT_IN:
        for (int n = Uniform(1, 5); n > 0; --n) {
          if (is_string) {
            p.mutable_string_values()->add_values(String());
          } else {
            p.mutable_int64_values()->add_values(Int());
          }
        }
        break;
      case v1::OP_PREFIX:
      case v1::OP_SUFFIX:
      case v1::OP_EQUALS_IGNORE_CASE:
      case v1::OP_NOT_PREFIX:
      case v1::OP_NOT_SUFFIX:
      case v1::OP_CIDR:
      case v1::OP_WILDCARD:
      case v1::OP_NOT_EQUALS_IGNORE_CASE:
      case v1::OP_NOT_WILDCARD:
      case v1::OP_PREFIX_IGNORE_CASE:
      case v1::OP_SUFFIX_IGNORE_CASE:
        p.set_string_value(String());
        break;
      case v1::OP_EXISTS:
      case v1::OP_NOT_EXISTS:
        break;
      default:
        if (is_string) {
          p.set_string_value(String());
        } else {
          p.set_value(Int());
        }
    }
    return p;
  }

  // An event of 1 to 6 attributes with distinct names.
  v1::Event Event() {
    v1::Event event;
    std::vector<std::string> names;
    for (int n = Uniform(1, 6); n > 0; --n) {
      std::string name = Name();
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      names.push_back(name);
      v1::Attribute* a = event.add_attributes();
      a->set_name(name);
      if (Uniform(0, 1) == 1) {
        a->set_string_value(String());
      } else {
        a->set_value(Int());
      }
    }
    return event;
  }

 private:
  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }

  // Keywords in any case, or [A-Za-z_][A-Za-z0-9_.-]{0,63}.
  std::string Name() {
    static const char* const kKeywords[] = {
        "and", "AND", "between", "in",  "IN",     "not", "Not", "exists",
        "EXISTS", "prefix", "suffix", "equals-ignore-case", "cidr", "wildcard",
        "prefix-ignore-case", "Suffix-Ignore-Case",
        "eq", "ne", "lt", "le", "gt", "ge", "or", "OR", "Or"};
    if (Uniform(0, 2) == 0) {
      return kKeywords[Uniform(0, std::size(kKeywords) - 1)];
    }
    static constexpr absl::string_view kFirst =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    static constexpr absl::string_view kRest =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789.-";
    std::string name(1, kFirst[Uniform(0, kFirst.size() - 1)]);
    const int length = Uniform(0, 3) == 0 ? Uniform(0, 63) : Uniform(0, 5);
    for (int i = 0; i < length; ++i) {
      name.push_back(kRest[Uniform(0, kRest.size() - 1)]);
    }
    return name;
  }

  // The int64 limits, small numbers, or any int64.
  int64_t Int() {
    switch (Uniform(0, 3)) {
      case 0:
        return Uniform(0, 1) == 0 ? std::numeric_limits<int64_t>::min()
                                  : std::numeric_limits<int64_t>::max();
      case 1:
        return Uniform(-3, 3);
      default:
        return static_cast<int64_t>(rng_());
    }
  }

  // 0 to 12 bytes, often the ones that need escaping.
  std::string String() {
    static constexpr absl::string_view kTricky = "\"\\x0n ,]&.[";
    std::string s;
    for (int n = Uniform(0, 12); n > 0; --n) {
      s.push_back(Uniform(0, 1) == 0
                      ? kTricky[Uniform(0, kTricky.size() - 1)]
                      : static_cast<char>(Uniform(0, 255)));
    }
    return s;
  }

  std::mt19937_64 rng_;
};

TEST(Format, RandomSubscriptionsRoundTrip) {
  RandomMessages random(19);
  for (int i = 0; i < 3000; ++i) {
    v1::SubscriptionSpec spec;
    for (int n = 1 + i % 4; n > 0; --n) {
      *spec.add_predicates() = random.Predicate();
    }
    const std::string text = FormatSubscription(spec);
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<v1::Predicate>> got = ParseSubscription(text);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), static_cast<size_t>(spec.predicates_size()));
    for (int k = 0; k < spec.predicates_size(); ++k) {
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          (*got)[k], spec.predicates(k)))
          << Format((*got)[k]) << " vs " << Format(spec.predicates(k));
    }
  }
}

// Specs of the shape ParseSubscriptionSpec() returns (0 to 3 predicates, 0
// to 3 groups of 2 to 4 alternatives of 1 to 3 predicates, not empty), of
// random predicates whose names may be keywords ("or" among them), print
// to a text that parses back to them.
TEST(Format, RandomSpecsWithGroupsRoundTrip) {
  RandomMessages random(21);
  std::mt19937_64 rng(22);
  const auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int with_groups = 0;
  int one_group_alone = 0;
  for (int i = 0; i < 3000; ++i) {
    v1::SubscriptionSpec spec;
    for (int n = uniform(0, 3); n > 0; --n) {
      *spec.add_predicates() = random.Predicate();
    }
    for (int g = uniform(spec.predicates().empty() ? 1 : 0, 3); g > 0; --g) {
      v1::AnyOf* group = spec.add_any_of();
      for (int a = uniform(2, 4); a > 0; --a) {
        v1::Conjunction* alternative = group->add_alternatives();
        for (int n = uniform(1, 3); n > 0; --n) {
          *alternative->add_predicates() = random.Predicate();
        }
      }
    }
    with_groups += spec.any_of_size() > 0;
    one_group_alone += spec.predicates().empty() && spec.any_of_size() == 1;
    const std::string text = FormatSubscription(spec);
    SCOPED_TRACE(text);
    absl::StatusOr<v1::SubscriptionSpec> got = ParseSubscriptionSpec(text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*got, spec))
        << FormatSpec(*got) << "\n vs " << FormatSpec(spec);
  }
  // Both shapes of the printed text were met.
  EXPECT_GT(with_groups, 2000);
  EXPECT_GT(one_group_alone, 150);
}

// What ParseSubscriptionSpec() returns prints back to itself.
TEST(Format, ParsedSpecsRoundTrip) {
  for (const SpecCase& c : kValidSpecs) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<v1::SubscriptionSpec> first = ParseSubscriptionSpec(c.input);
    ASSERT_TRUE(first.ok()) << first.status();
    const std::string text = FormatSubscription(*first);
    absl::StatusOr<v1::SubscriptionSpec> again = ParseSubscriptionSpec(text);
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
    EXPECT_EQ(FormatSpec(*again), c.expected) << text;
  }
}

TEST(Format, RandomEventsRoundTrip) {
  RandomMessages random(20);
  for (int i = 0; i < 3000; ++i) {
    const v1::Event event = random.Event();
    const std::string text = FormatEvent(event);
    SCOPED_TRACE(text);
    absl::StatusOr<std::vector<v1::Attribute>> got = ParseEvent(text);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), static_cast<size_t>(event.attributes_size()));
    for (int k = 0; k < event.attributes_size(); ++k) {
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          (*got)[k], event.attributes(k)))
          << Format((*got)[k]) << " vs " << Format(event.attributes(k));
    }
  }
}

// What the parser returns prints back to itself: parse, print, parse again.
TEST(Format, ParsedInputsRoundTrip) {
  for (const ValidCase& c : kValidSubscriptions) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<std::vector<v1::Predicate>> first =
        ParseSubscription(c.input);
    ASSERT_TRUE(first.ok()) << first.status();
    v1::SubscriptionSpec spec;
    for (const v1::Predicate& p : *first) *spec.add_predicates() = p;
    absl::StatusOr<std::vector<v1::Predicate>> again =
        ParseSubscription(FormatSubscription(spec));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_THAT(FormatAll(*again), ElementsAreArray(FormatAll(*first)));
  }
  for (const ValidCase& c : kValidEvents) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<std::vector<v1::Attribute>> first = ParseEvent(c.input);
    ASSERT_TRUE(first.ok()) << first.status();
    v1::Event event;
    for (const v1::Attribute& a : *first) *event.add_attributes() = a;
    absl::StatusOr<std::vector<v1::Attribute>> again =
        ParseEvent(FormatEvent(event));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_THAT(FormatAll(*again), ElementsAreArray(FormatAll(*first)));
  }
}

}  // namespace
}  // namespace filter
}  // namespace cohort
