// Parsers for what a person types into the `cohort` CLI: a subscription such
// as `price <= 500 and kind = 7` becomes the v1::Predicate messages of a
// SubscriptionSpec, and an event such as `price=420 kind=7` becomes the
// v1::Attribute messages of an Event.
//
// Client side (client/), run by the CLI before any RPC is made. Both functions
// are pure: no state, no I/O, callable from any thread. The messages they
// return own their strings and do not point into `text`.
//
// The parsers apply the API's rules for single items, so that a mistake is
// reported against what was typed (with a caret under it) instead of as a
// server error naming a field index: attribute names match
// [A-Za-z_][A-Za-z0-9_.-]{0,63} (the server's rule, service/api/validation.h),
// values are int64, BETWEEN needs value <= upper, and an event names each
// attribute once. Limits that are server flags (--max_predicates,
// --max_event_attributes) are left to the server, which knows their values.
//
// Grammar. Tokens may be separated by whitespace, which is otherwise ignored;
// keywords and word operators are case-insensitive ("and", "AND", "And").
//
//   subscription := predicate { connector predicate }
//   connector    := "and" | "&&" | ","
//   predicate    := name op value
//                 | name "between" value "and" value     BETWEEN, inclusive
//                 | name "in" "[" value "," value "]"    same as between
//                 | name "in" value ".." value           same as between
//   op           := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//                 | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
//
//   event        := pair { [ "," ] pair }
//   pair         := name "=" value
//
//   name         := [A-Za-z_][A-Za-z0-9_.-]{0,63}
//   value        := [ "+" | "-" ] digit { [ "_" ] digit }   decimal int64
//
// A word is a keyword only where the grammar expects one: in `and = 1 and
// between = 2` the first word of each predicate is an attribute name, and in
// `x between 1 and 5` the "and" belongs to the BETWEEN. "=" and "==" are OP_EQ,
// "!=" and "<>" are OP_NE. `_` may only separate two digits (1_000_000).
//
// Errors are INVALID_ARGUMENT with a three-line message: the 1-based byte
// column of the offending token and what is wrong with it, the input indented
// by two spaces, and carets under the token, e.g.
//
//   column 7: expected an operator (=, !=, <, <=, >, >=, between, in), got "is"
//     price is 5
//           ^^
//
// Something missing at the end (`price <=`) is reported at the column just
// past the input. In the echoed input, control characters (tab, newline) are
// shown as spaces; the carets are placed by UTF-8 code point, so they line up
// under non-ASCII text in a terminal even though the column counts bytes.
#ifndef COHORT_CLIENT_PARSE_H_
#define COHORT_CLIENT_PARSE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {

// ParseSubscription()
//
// Parses a conjunction like `price <= 500 and kind = 7` into its predicates,
// in the order written (at least one). For OP_BETWEEN, `value` is the lower
// and `upper` the upper bound; every other op leaves `upper` 0. The same
// attribute may appear in several predicates (`x >= 1 and x <= 9`).
absl::StatusOr<std::vector<v1::Predicate>> ParseSubscription(
    absl::string_view text);

// ParseEvent()
//
// Parses an event like `price=420 kind=7` (also `price = 420, kind = 7`) into
// its attributes, in the order written (at least one). Pairs are separated by
// whitespace, a comma, or both; a name given twice is an error.
absl::StatusOr<std::vector<v1::Attribute>> ParseEvent(absl::string_view text);

}  // namespace client
}  // namespace cohort

#endif  // COHORT_CLIENT_PARSE_H_
