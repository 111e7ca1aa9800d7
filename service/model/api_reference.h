// The API's matching semantics, stated directly on cohort.v1 messages: a
// brute-force reference for the front stage's lowering of typed predicates
// (typed_attributes.h) into the matcher's, in tests and fuzzers. It reads
// pubsub.proto's rules literally: types, missing attributes, strings as
// bytes, and no index.
//
// Test-only. Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_API_REFERENCE_H_
#define COHORT_SERVICE_MODEL_API_REFERENCE_H_

#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

// True iff predicate `p` holds for `event`.
bool ApiHolds(const v1::Predicate& p, const v1::Event& event);

// True iff every predicate of `spec` holds for `event`.
bool ApiMatches(const v1::SubscriptionSpec& spec, const v1::Event& event);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_API_REFERENCE_H_
