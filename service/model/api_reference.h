// The API's matching semantics, stated directly on cohort.v1 messages: a
// brute-force reference for the front stage's lowering of typed predicates
// (typed_attributes.h) into the matcher's, in tests and fuzzers. It reads
// pubsub.proto's rules literally: types, missing attributes, strings as
// bytes, and no index.
//
// Test-only. Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_API_REFERENCE_H_
#define COHORT_SERVICE_MODEL_API_REFERENCE_H_

#include <set>
#include <string>
#include <vector>

#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace service {

// True iff predicate `p` holds for `event`.
bool ApiHolds(const v1::Predicate& p, const v1::Event& event);

// True iff every predicate of `spec` holds for `event` and every group of
// its any_of has an alternative whose predicates all hold (with a json,
// ApiMatchesJson).
bool ApiMatches(const v1::SubscriptionSpec& spec, const v1::Event& event);

// An event with a json (pubsub.proto's Event.json, read literally): true iff
// some way of reading the document, one element of each array at a time, gives
// attributes that with event.attributes match `spec` (its predicates, and an
// alternative of each group), EXISTS and NOT_EXISTS asking whether the path has
// a value in any reading. False for a document that is not JSON.
bool ApiMatchesJson(const v1::SubscriptionSpec& spec, const v1::Event& event);

// ApiMatchesJson for many subscriptions: the event's readings once.
class ApiJsonEvent {
 public:
  explicit ApiJsonEvent(const v1::Event& event);
  bool Matches(const v1::SubscriptionSpec& spec) const;

 private:
  std::vector<v1::Event> readings_;  // each with event.attributes
  std::set<std::string> present_;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_API_REFERENCE_H_
