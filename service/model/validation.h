// Request checks and conversions of the front stage (docs/DESIGN.md sections 1,
// 2 and 5).
//
// The front stage runs every request through a `Validate*` function first,
// so that a bad request is rejected whole before anything is applied
// (INVALID_ARGUMENT, or NOT_FOUND for subscription id 0), with a message that
// names the offending field with its indexes, e.g.
// "subscriptions[3].predicates[0].op", and the limit or rule it broke, as
// proto/cohort/v1/pubsub.proto promises. Only then does it convert the
// request into the matcher's vocabulary: `BuildSubscriptions` interns
// attribute and subscriber names; `BuildEvents` turns events into compact
// (attribute id, value) records without interning anything.
//
// Thread safety: every function here may be called from any thread. The
// Validate functions only read their arguments. The Build functions write
// only `*out` (owned by the caller) and the Interners, which are thread-safe.
#ifndef COHORT_SERVICE_MODEL_VALIDATION_H_
#define COHORT_SERVICE_MODEL_VALIDATION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "matcher/types.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/model/interner.h"
#include "service/model/json_event.h"
#include "service/model/limits.h"
#include "service/model/subscription_input.h"
#include "service/model/typed_attributes.h"

namespace cohort {
namespace service {

// CheckOperandRules()
//
// The rules on a string operand that only the server checks (the CLI grammar
// takes any string there): OP_NOT_PREFIX and OP_NOT_SUFFIX need 1 byte or more,
// OP_CIDR a network (ip_network.h), OP_WILDCARD and OP_NOT_WILDCARD a pattern
// (wildcard.h). INVALID_ARGUMENT whose message says what is wrong but names no
// field (ValidateSubscribe puts it after the operand's field); OK for every
// other predicate. REQUIRES: a string_value operand for those ops.
absl::Status CheckOperandRules(const v1::Predicate& predicate);

// IsValidAttributeName(): limits.h.

// ValidateSubscribe()
//
// OK iff every subscription of `request` may be added: at most limits.max_batch
// subscriptions (none is fine); each with a subscriber name of 1 to
// limits.max_subscriber_bytes bytes and no control characters, and 1 to
// limits.max_predicates predicates, or "or" groups (any_of: each with 1 or more
// alternatives of 1 or more predicates) whose expansion, the product of the
// groups' sizes, is at most limits.max_or_expansion (RESOURCE_EXHAUSTED naming
// "subscriptions[i].any_of") and whose largest conjunction has at most
// limits.max_predicates; each predicate with a valid attribute name, an op from
// OP_EQ to OP_SUFFIX_IGNORE_CASE, the operand its op takes (the table in
// pubsub.proto's Predicate), strings of at most limits.max_string_bytes, lists
// of 1 to limits.max_set_size values, and value <= upper for OP_BETWEEN
// (strings in byte order; `upper` is ignored for the other ops). Else
// INVALID_ARGUMENT for the first problem found, in request order.
absl::Status ValidateSubscribe(const v1::SubscribeRequest& request,
                               const Limits& limits);

// ValidateUnsubscribe()
//
// OK iff `request` lists at most limits.max_batch ids (none is fine), no id
// twice and no id 0. An id listed twice is INVALID_ARGUMENT naming both
// indexes; failing that, id 0 is NOT_FOUND ("subscription_ids[2]: 0 is never a
// subscription id"). Whether the other ids are live is for the caller to check.
absl::Status ValidateUnsubscribe(const v1::UnsubscribeRequest& request,
                                 const Limits& limits);

// ValidatePublish()
//
// OK iff `request` holds at most limits.max_batch events (none is fine), each
// with 1 to limits.max_event_attributes attributes of valid, distinct names
// and a payload of at most limits.max_payload_bytes bytes. Else
// INVALID_ARGUMENT for the first problem found, in request order.
absl::Status ValidatePublish(const v1::PublishRequest& request,
                             const Limits& limits);
// As above, and events[i].json flattened into (*json)[i] (json_event.h;
// an empty group for an event without json): an event may then have no
// attributes, and its document must pass FlattenJson's checks and name no
// path that is one of its attributes' names.
absl::Status ValidatePublishAndFlatten(const v1::PublishRequest& request,
                                       const Limits& limits,
                                       std::vector<JsonGroup>* json);

// ValidateListen()
//
// OK iff the subscriber name is 1 to limits.max_subscriber_bytes bytes with no
// control characters; else INVALID_ARGUMENT.
absl::Status ValidateListen(const v1::ListenRequest& request,
                            const Limits& limits);

// Longest ParseFilterRequest.filter, in bytes (the API's rule, not a flag).
inline constexpr size_t kMaxFilterBytes = 65536;

// ParseFilter()
//
// The predicates and "or" groups of `request.filter`, written in the
// `cohort` CLI's grammar (filter/parse.h, ParseSubscriptionSpec) or, when
// its first character other than whitespace is '{', an Event Ruler pattern
// or SNS filter policy (filter/pattern.h, ParsePatternSpec), as the
// `predicates` and `any_of` of a spec (no subscriber), checked as
// ValidateSubscribe checks a spec's: 1 to limits.max_predicates
// predicates, or groups whose expansion passes limits.max_or_expansion
// (RESOURCE_EXHAUSTED) and limits.max_predicates, each predicate valid for
// CheckPredicate's rules and limits. Errors are INVALID_ARGUMENT: "filter:
// at most 65536 bytes, got N", "filter: " and the parser's three-line
// message (column, the input echoed, carets) or the pattern's message
// ("filter: pattern: at detail.state[0]: ..."), or "predicates[j]..." or
// "any_of[j]..." for a broken limit (the same messages Subscribe gives
// under "subscriptions[i].").
absl::StatusOr<v1::SubscriptionSpec> ParseFilter(
    const v1::ParseFilterRequest& request, const Limits& limits);

// BuildSubscriptions()
//
// Converts request.subscriptions[i] into (*out)[i] (replacing what `out` held),
// lowering its predicates into matcher predicates with `attributes`
// (typed_attributes.h: names, derived names and strings interned; a predicate
// may become two) and interning subscriber names into `subscribers`. A spec
// with any_of becomes its expansion (SubscriptionInput::branches: the first
// group's choice varying slowest), or plain predicates if every group has one
// alternative. Fails with RESOURCE_EXHAUSTED, naming the field and the limit,
// if a dictionary is full; then names and strings already interned stay
// interned, and nothing else changes (`*out` included).
// REQUIRES: ValidateSubscribe(request, limits) is OK for some `limits`.
absl::Status BuildSubscriptions(const v1::SubscribeRequest& request,
                                TypedAttributes* attributes,
                                Interner* subscribers,
                                std::vector<SubscriptionInput>* out);

// BuildEvents()
//
// Converts request.events[i] into (*out)[i], the compact event record the
// matcher uses: the (attribute id, value) pairs of the event's attributes
// whose names are interned, in request order, an int64 value as itself and
// a string as its codes, followed by the derived attributes
// (typed_attributes.h: TypedAttributes::Encode). Attributes no subscription
// ever named are dropped: no predicate can refer to them, so they cannot
// affect matching (an event may thus become empty). Does not intern.
// Resizes `out` to the number of events and reuses its inner vectors'
// capacity. Looks all names up under one lock of `attributes`.
// REQUIRES: ValidatePublish(request, limits) is OK for some `limits` (so the
// attribute ids of each record are distinct, as matcher::EventView requires).
void BuildEvents(const v1::PublishRequest& request,
                 const TypedAttributes& attributes,
                 std::vector<std::vector<matcher::AttributeValue>>* out);

// As above, with the events' json documents (`json`, from ValidatePublishAndFlatten;
// empty when no event has one): an event becomes one record per distinct
// combination of its arrays' elements that subscriptions name
// (typed_attributes.h Encode), a request event's records adjacent and in
// request order. *event_of is empty when every event became one record;
// else (*event_of)[r] is the request event of record r. RESOURCE_EXHAUSTED
// naming "events[i].json" when an event has more than
// limits.max_json_combinations combinations; *out is then unspecified.
absl::Status BuildEvents(
    const v1::PublishRequest& request, absl::Span<const JsonGroup> json,
    const TypedAttributes& attributes, const Limits& limits,
    std::vector<std::vector<matcher::AttributeValue>>* out,
    std::vector<uint32_t>* event_of);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_VALIDATION_H_
