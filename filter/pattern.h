// Event Ruler patterns and SNS filter policies as they are written: a JSON
// object such as
//
//   {"source": ["aws.ec2"],
//    "detail": {"state": [{"anything-but": "initializing"}],
//               "c-count": [{"numeric": [">", 0, "<=", 5]}]}}
//
// becomes a SubscriptionSpec, its predicates and its "or" groups (any_of)
// (issue 44), or is refused with a message pointing at the part Cohort
// cannot express.
//
// Used by the server's ParseFilter (a filter whose first character other
// than whitespace is '{' is a pattern) and by the `cohort` CLI; pure
// functions, callable from any thread. The JSON is read by simdjson (its
// DOM parser), so it must be well-formed UTF-8 JSON, nested at most
// kMaxPatternDepth deep.
//
// Mapping. Nested objects name attributes by path, joined with '.':
// {"detail": {"state": [...]}} is about the attribute `detail.state` (which
// must then be an attribute name the API accepts:
// [A-Za-z_][A-Za-z0-9_.-]{0,63}). Every field must match (a predicate
// each, in the order written); within a field, one of the listed values or
// conditions. A list of one kind of entry is plain predicates:
//
//   ["a"] / [5]                     OP_EQ (a string, or an int64)
//   ["a", "b"] / [1, 2]             OP_IN (all strings or all numbers)
//   [{"prefix": "a"}]               OP_PREFIX
//   [{"suffix": "a"}]               OP_SUFFIX
//   [{"equals-ignore-case": "a"}]   OP_EQUALS_IGNORE_CASE
//   [{"prefix": {"equals-ignore-case": "a"}}]  OP_PREFIX_IGNORE_CASE
//   [{"suffix": {"equals-ignore-case": "a"}}]  OP_SUFFIX_IGNORE_CASE
//   [{"wildcard": "a*b*c"}]         OP_WILDCARD (as written; the server
//                                   checks the stars and escapes)
//   [{"cidr": "10.0.0.0/8"}]        OP_CIDR
//   [{"exists": true}]              OP_EXISTS
//   [{"exists": false}]             OP_NOT_EXISTS
//   [{"numeric": ["<", 5]}]         OP_LT (also "<=", ">", ">=", "=")
//   [{"numeric": [">=", 1, "<=", 5]}]  OP_BETWEEN 1 5
//   [{"numeric": [">", 0, "<=", 5]}]   OP_GT 0 and OP_LE 5 (two
//                                   predicates; a bound that is exclusive
//                                   stays exclusive)
//   [{"anything-but": "a"}] / 5     OP_NE
//   [{"anything-but": ["a", "b"]}]  OP_NOT_IN (all strings or all numbers)
//   [{"anything-but": {"prefix": "a"}}]   OP_NOT_PREFIX
//   [{"anything-but": {"suffix": "a"}}]   OP_NOT_SUFFIX
//   [{"anything-but": {"equals-ignore-case": "a" or ["a", ...]}}]
//                                   OP_NOT_EQUALS_IGNORE_CASE
//   [{"anything-but": {"wildcard": "a*"}}]  OP_NOT_WILDCARD
//   [{"anything-but": {"wildcard": ["a*", "*b"]}}]  OP_NOT_WILDCARD "a*"
//                                   and OP_NOT_WILDCARD "*b" (a predicate
//                                   each: none of them matches)
//   [true] / [false] / [null]       OP_EQ on the literal (literal_value)
//
// "Or" (SubscriptionSpec.any_of, one group each, in the order written):
//
//   ["a", 5, "b", true, {"prefix": "x"}]   a list of several kinds of
//                                   entry: one group, whose alternatives
//                                   are all its strings (OP_EQ or OP_IN,
//                                   here IN ["a", "b"]), all its numbers
//                                   (likewise), each literal (OP_EQ) and
//                                   each condition (its one predicate or
//                                   two), in the order of their first
//                                   entries. Two conditions are two
//                                   alternatives: [{"prefix": "a"},
//                                   {"prefix": "b"}].
//   {"$or": [{...}, {...}, ...]}    at any level (Event Ruler's and SNS's
//                                   syntax): one group, whose alternatives
//                                   are those of each entry, an object
//                                   read at that level (its keys extend
//                                   the same path; "$or" is no step of
//                                   it); the fields beside "$or" are ANDed
//                                   with it. Inside an entry, a nested
//                                   "$or" or list of several kinds is
//                                   distributed: {"a": [1], "$or": [{"b":
//                                   [2]}, {"c": [3, "x"]}]} inside a "$or"
//                                   gives the alternatives [a, b], [a, c =
//                                   3], [a, c = "x"], the first choice
//                                   varying slowest and the predicates in
//                                   the order written.
//
// A group may distribute into kMaxOrAlternatives (parse.h) alternatives at
// most; the server checks the product of the groups
// (--max_or_expansion). Where Event Ruler keeps the last list when a
// field is given both beside a "$or" and in one of its entries, Cohort
// ANDs both.
//
// Numbers: an integral JSON number (also 3.0e2) is an int64 operand, one
// with a fraction (19.99) a double_value (double_values in a list, whose
// integers must then be below 2^53 in magnitude); both compare as numbers,
// exactly. A number beyond the int64 range is refused.
//
// One difference from Event Ruler, deliberate: its anything-but holds for a
// value of the other type (anything-but 503 holds for the string "301"),
// where OP_NE and OP_NOT_IN hold only for values of their operand's type
// (pubsub.proto's typing rule). bench/eventruler.sh measures every other
// answer to agree. Event Ruler 1.8.1 also refuses some patterns this
// accepts: a range whose bottom is not below its top, a CIDR of /32 (or
// /128) or without a '/'.
//
// Refused (INVALID_ARGUMENT), each naming the place: what Cohort has no
// predicate for yet, namely anything-but prefix or suffix with a list;
// what Event Ruler 1.8.1 refuses too, namely an operator other than
// equals-ignore-case inside prefix or suffix (and an object inside any
// other operator), anything-but cidr, a literal in anything-but, an
// anything-but list of both strings and numbers, a "$or" that is not a
// list of two objects or more
// (`pattern: at detail.$or[1]: an entry of "$or" is an object of fields,
// got a number`), and inside an entry of "$or" (at any depth) a key that
// Event Ruler reserves for its operators ("prefix", "numeric", "exists",
// "=", "regex", ...: its RESERVED_FIELD_NAMES_IN_OR_RELATIONSHIP); a group
// of more than kMaxOrAlternatives alternatives, or of more predicates in
// all than the parser allows one group (65536); and what is malformed: a
// leaf that is not a list, an empty list or object, an unknown operator,
// an operator object with more than one key, a key given twice in one
// object, a numeric list that is not one comparison or a lower and an
// upper bound.
//
// Errors are INVALID_ARGUMENT, "pattern: " then either "not valid JSON: "
// and simdjson's message, or "at PLACE: " and what is wrong, where PLACE is
// the path of keys and list indexes from the top (`detail.state[0]`,
// `detail.c-count[0].numeric[2]`). Limits that are server flags
// (--max_predicates, --max_set_size, --max_string_bytes) are left to the
// server, as for the CLI grammar (parse.h).
#ifndef COHORT_FILTER_PATTERN_H_
#define COHORT_FILTER_PATTERN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {

// Deepest nesting of objects and arrays a pattern may have (an attribute
// path is at most 64 bytes, so a valid pattern is far shallower).
inline constexpr size_t kMaxPatternDepth = 64;

// IsPattern()
//
// True iff the first character of `text` other than ASCII whitespace is
// '{': a JSON pattern rather than the CLI grammar (which cannot start so).
bool IsPattern(absl::string_view text);

// ParsePatternSpec()
//
// The Event Ruler pattern or SNS filter policy `json` as a
// SubscriptionSpec (mapping above): its predicates, in the order written,
// and its groups of any_of; the subscriber is left empty. At least one
// predicate or one group; every group has two alternatives or more, each
// of one predicate or more.
absl::StatusOr<v1::SubscriptionSpec> ParsePatternSpec(absl::string_view json);

// ParsePattern()
//
// The predicates of `json` as ParsePatternSpec() reads them (at least
// one), for a caller that takes no "or": a pattern that needs it (a
// "$or", a list of several kinds of entry) is INVALID_ARGUMENT.
absl::StatusOr<std::vector<v1::Predicate>> ParsePattern(absl::string_view json);

// ShowControlBytes()
//
// `text` with its control bytes (below 0x20, and 0x7F) as \xHH and every
// other byte as it is: a JSON key, which may hold any character, in a
// one-line message ("at a\x01.b: ..."). Also used for JSON events'
// messages (service/model/json_event.h).
std::string ShowControlBytes(absl::string_view text);

}  // namespace filter
}  // namespace cohort

#endif  // COHORT_FILTER_PATTERN_H_
