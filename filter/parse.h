// Parsers for what a person types into the `cohort` CLI, and the printers
// that write messages back in the same syntax: a subscription such as
// `price <= 500 and (type = "order" or type = "quote")` becomes a
// SubscriptionSpec (its predicates and its any_of groups), and an event
// such as `price=420 type="order"` becomes the v1::Attribute messages of
// an Event.
//
// Client side (client/), run by the CLI before any RPC is made. Every
// function here is pure: no state, no I/O, callable from any thread. The
// messages the parsers return own their strings and do not point into
// `text`.
//
// The parsers apply the API's rules for single items, so that a mistake is
// reported against what was typed (with a caret under it) instead of as a
// server error naming a field index: attribute names match
// [A-Za-z_][A-Za-z0-9_.-]{0,63} (the server's rule, service/model/validation.h),
// numbers are int64 or doubles within the int64 range, the bounds of
// BETWEEN have one type (numbers, or strings) and value <= upper
// (strings compare byte by byte, unsigned), a list is not empty and has
// values of one type, a prefix is a string, and an event names each
// attribute once. Limits that are server flags (--max_predicates,
// --max_event_attributes, --max_string_bytes, --max_set_size) are left to
// the server, which knows their values.
//
// Grammar. Tokens may be separated by whitespace, which is otherwise ignored;
// keywords and word operators are case-insensitive ("and", "AND", "And").
//
//   subscription := disjunction
//   disjunction  := conjunction { ( "or" | "||" ) conjunction }
//   conjunction  := term { connector term }
//   connector    := "and" | "&&" | ","
//   term         := predicate | "(" disjunction ")"
//   predicate    := name op value                        op (below)
//                 | name ( "=" | "==" | "!=" | "<>" | "eq" | "ne" ) literal
//                                              OP_EQ, OP_NE on a literal
//                 | name "between" value "and" value     OP_BETWEEN, inclusive
//                 | name "in" value ".." value           OP_BETWEEN, inclusive
//                 | name "in" list                       OP_IN
//                 | name "not" "in" list                 OP_NOT_IN
//                 | name "prefix" string                 OP_PREFIX
//                 | name "suffix" string                 OP_SUFFIX
//                 | name "equals-ignore-case" string     OP_EQUALS_IGNORE_CASE
//                 | name "equals-ignore-case" list       OP_EQUALS_IGNORE_CASE
//                 | name "not" "equals-ignore-case" string_or_list
//                                              OP_NOT_EQUALS_IGNORE_CASE
//                 | name "not" "prefix" string           OP_NOT_PREFIX
//                 | name "not" "suffix" string           OP_NOT_SUFFIX
//                 | name "prefix-ignore-case" string     OP_PREFIX_IGNORE_CASE
//                 | name "suffix-ignore-case" string     OP_SUFFIX_IGNORE_CASE
//                 | name "cidr" string                   OP_CIDR
//                 | name "wildcard" string               OP_WILDCARD
//                 | name "not" "wildcard" string         OP_NOT_WILDCARD
//                 | "exists" name                        OP_EXISTS
//                 | "not" "exists" name                  OP_NOT_EXISTS
//   op           := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//                 | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
//   list         := "[" value { "," value } "]"          values of one type
//   string_or_list := string | list                      strings only
//
//   event        := pair { [ "," ] pair }
//   pair         := name "=" ( value | literal )
//
//   name         := [A-Za-z_][A-Za-z0-9_.-]{0,63}
//   value        := integer | decimal | string
//   literal      := "true" | "false" | "null"            literal_value
//   integer      := [ "+" | "-" ] digits                  decimal int64
//   decimal      := [ "+" | "-" ] digits [ "." digits ]
//                   [ ( "e" | "E" ) [ "+" | "-" ] digits ]
//                                    with a "." or an exponent: a double
//                                    (an integral one, 3.0 or 1e3, is the
//                                    int64), in [-2^63, 2^63)
//   digits       := digit { [ "_" ] digit }
//   string       := '"' { byte | escape } '"'            any bytes
//   escape       := '\"' | '\\' | '\n' | '\t' | '\r' | '\0'
//                 | '\x' hex hex                          one byte, 00 to FF
//
// The bounds of a BETWEEN are both numbers or both strings, and so are the
// values of a list; an operand's type selects the Predicate field it goes
// to (value, double_value or string_value; upper, double_upper or
// string_upper; int64_values, or double_values when a number in the list
// has a fraction (its integers then below 2^53 in magnitude), or
// string_values), and likewise a value's the Attribute field (value,
// double_value or string_value). Inside a string every byte but '"' and
// '\' stands for itself (UTF-8 or not; a raw tab or newline too); a string
// is bytes, not text. hex is a digit or a letter a-f or A-F.
//
// Changed: `name in [a, b]` used to mean BETWEEN a and b. It is now OP_IN
// over the list: the value is a or b. A range is written `name between a
// and b` or `name in a .. b`, as before.
//
// "and" binds tighter than "or": `a = 1 or b = 2 and c = 3` is a = 1, or
// b = 2 and c = 3. Parentheses group, nested at most kMaxParenDepth deep.
//
// A word is a keyword only where the grammar expects one: in `and = 1 and
// between = 2` and `or = 1 or or = 2` the first word of each predicate is
// an attribute name, and in `x between 1 and 5` the "and" belongs to the
// BETWEEN. At the start of a predicate, "exists" and "not" are names if an
// operator follows them (`exists = 1`, `not in [1, 2]`), except that
// "exists", one word and then a connector, "or", "||", ")" or the end of
// the input is OP_EXISTS on that word (`exists in`). There is no postfix
// form (`name exists`). "=" and "==" are OP_EQ, "!=" and "<>" are OP_NE.
// `_` may only separate two digits (1_000_000). A string is a token of its
// own (`x="a"` is three tokens, like `x=5`), but in an event the pairs are
// still separated by whitespace or a comma (`a="x"b=1` is an error).
//
// "Or" in a SubscriptionSpec (ParseSubscriptionSpec). When the whole filter
// is one conjunction, its predicates (those in parentheses of one
// alternative too: `(a = 1 and b = 2)` is flattened) are the spec's
// predicates, in the order written, and each parenthesized disjunction of
// two alternatives or more is one group of any_of, in the order written.
// A group's alternatives are its disjunctive normal form: an "and" of
// nested groups is distributed, `((a or b) and c or d)` giving the
// alternatives [a, c], [b, c], [d] (the first group's choice varies
// slowest; the predicates of each keep the order written). When the
// filter is two conjunctions or more at the top (`a = 1 or b = 2`), the
// spec has no predicates and one group: the alternatives of every
// conjunction, distributed likewise, in order. A group that would
// distribute into more than kMaxOrAlternatives alternatives is an error
// under it (for the top level, under the whole filter).
//
// Errors are INVALID_ARGUMENT with a three-line message: the 1-based byte
// column of the offending token and what is wrong with it, the input indented
// by two spaces, and carets under the token, e.g.
//
//   column 7: expected an operator (=, !=, <, <=, >, >=, between, in, not
//   in, prefix), got "is"
//     price is 5
//           ^^
//
// (the first line is one line; it is wrapped here). A string that is not
// closed is reported from its opening '"' to the end of the input, a bad
// escape under the escape (`\q`, `\x4g`). Something missing at the end
// (`price <=`) is reported at the column just past the input, a "(" that is
// not closed under the "(", an empty "()" under both. In the echoed
// input, control characters (tab, newline) are shown as spaces; the carets
// are placed by UTF-8 code point, so they line up under non-ASCII text in a
// terminal even though the column counts bytes.
//
// Printing. FormatPredicate(), FormatSubscription(), FormatAttribute() and
// FormatEvent() write messages in this grammar, strings as FormatString()
// quotes them (printable ASCII as is but '"' and '\' escaped, every other
// byte as \xHH), so that what the CLI prints (e.g. a delivery in `cohort
// listen`) can be pasted back into `cohort subscribe` or `cohort publish`:
// for whatever ParseSubscriptionSpec(), ParseSubscription() and
// ParseEvent() return, parsing the printed text gives the same messages
// back.
#ifndef COHORT_FILTER_PARSE_H_
#define COHORT_FILTER_PARSE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {

// Most alternatives one group may distribute into (one parenthesized
// disjunction, or the whole filter when "or" is at its top; pattern.h's
// "$or" and lists likewise). The server's --max_or_expansion can be at
// most this (service/model/limits.h, kMaxOrExpansionLimit), so a larger
// group could never be subscribed.
inline constexpr size_t kMaxOrAlternatives = 1024;

// Deepest nesting of parentheses. A filter nested deeper says nothing a
// flatter one cannot, and the parser recurses once per level.
inline constexpr size_t kMaxParenDepth = 64;

// ParseSubscriptionSpec()
//
// Parses a filter like `price <= 500 and (type = "order" or type =
// "quote")` into a SubscriptionSpec's predicates and any_of ("Or" above);
// the subscriber is left empty. Every group has two alternatives or more,
// every alternative one predicate or more, and the spec at least one
// predicate or one group. Each predicate is as ParseSubscription() gives
// it.
absl::StatusOr<v1::SubscriptionSpec> ParseSubscriptionSpec(
    absl::string_view text);

// ParseSubscription()
//
// Parses a conjunction like `price <= 500 and type = "order"` into its
// predicates, in the order written (at least one); parentheses may group
// it, but a filter with "or" or "||" is an error under the first of them
// (ParseSubscriptionSpec() reads it). Each predicate has the
// operand fields its op takes (pubsub.proto, Predicate) and no others: for
// OP_BETWEEN `value` or `string_value` is the lower and `upper` or
// `string_upper` the upper bound; every other op leaves `upper_operand`
// unset, and OP_EXISTS and OP_NOT_EXISTS leave `operand` unset too. A list
// keeps its values in the order written, repeats included. The same
// attribute may appear in several predicates (`x >= 1 and x <= 9`).
absl::StatusOr<std::vector<v1::Predicate>> ParseSubscription(
    absl::string_view text);

// ParseEvent()
//
// Parses an event like `price=420 type="order"` (also `price = 420, type =
// "order"`) into its attributes, in the order written (at least one), each
// with `value` (an integer), `double_value` (a number with a fraction) or
// `string_value` (a string) set. Pairs are
// separated by whitespace, a comma, or both; a name given twice is an error.
absl::StatusOr<std::vector<v1::Attribute>> ParseEvent(absl::string_view text);

// FormatString()
//
// `bytes` as a string literal of the grammar: in double quotes, printable
// ASCII (0x20 to 0x7E) as is except '"' and '\' (written \" and \\), every
// other byte as \xHH with upper-case hex digits (a tab is written \x09).
std::string FormatString(absl::string_view bytes);

// A number with a fraction as the grammar writes it: the shortest decimal
// text that reads back as `d` ("19.99", "-0.5", "1e-07").
std::string FormatDouble(double d);

// FormatPredicate()
//
// `p` in the grammar's canonical form: `price <= 500`, `type = "order"`,
// `price between 10 and 20`, `region in ["eu-west", "eu-north"]`, `kind not
// in [1, 2]`, `path prefix "/api/"`, `exists coupon`, `not exists coupon`.
// Comparisons use the symbols (=, !=, <, <=, >, >=). An operand that is not
// set is printed as the API reads it (0, or an empty list); operand fields
// the op does not take are not printed. For every predicate that
// ParseSubscription() returns, ParseSubscription(FormatPredicate(p)) gives
// `p` back.
std::string FormatPredicate(const v1::Predicate& p);

// FormatSubscription()
//
// The predicates of `spec` formatted and joined by " and ", then each group
// of its any_of as " and (alt or alt ...)", where an alternative is its
// predicates joined by " and "; a spec of one group and no predicates is
// written without parentheses, `a = 1 or b = 2 and c = 3`. The subscriber
// is not part of it. For every spec ParseSubscriptionSpec() returns,
// ParseSubscriptionSpec(FormatSubscription(spec)) gives it back (a spec it
// would not return, say a group of one alternative, is written in the
// same shape but may read back otherwise, or not at all).
std::string FormatSubscription(const v1::SubscriptionSpec& spec);

// FormatAttribute()
//
// `price=420` or `type="order"`; an attribute with neither field set is
// printed with its API value, `name=0`.
std::string FormatAttribute(const v1::Attribute& a);

// FormatEvent()
//
// The attributes of `event` formatted and joined by spaces (the payload is
// not part of it): `price=420 type="order"`, a text ParseEvent() reads back.
std::string FormatEvent(const v1::Event& event);

}  // namespace filter
}  // namespace cohort

#endif  // COHORT_FILTER_PARSE_H_
