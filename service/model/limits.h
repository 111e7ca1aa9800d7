// The request limits of the API (the "Limits" paragraph of
// proto/cohort/v1/pubsub.proto; docs/DESIGN.md section 2): set once from
// cohortd's flags, read by the front stage's checks (validation.h) and the
// server.
//
// Thread safety: plain values; copy freely.
#ifndef COHORT_SERVICE_MODEL_LIMITS_H_
#define COHORT_SERVICE_MODEL_LIMITS_H_

#include <cstddef>

namespace cohort {
namespace service {

// Request limits, from the server flags named in the comments (see the
// "Limits" paragraph of pubsub.proto).
struct Limits {
  size_t max_predicates = 32;         // per subscription (--max_predicates)
  size_t max_event_attributes = 256;  // per event (--max_event_attributes)
  size_t max_payload_bytes = 65536;   // per event payload (--max_payload_bytes)
  // Subscriptions per Subscribe, events per Publish request and ids per
  // Unsubscribe (--max_batch).
  size_t max_batch = 10000;
  size_t max_subscriber_bytes = 256;  // length of a subscriber name
  // Bytes of a string value, in an event or an operand (--max_string_bytes).
  size_t max_string_bytes = 256;
  // Values in an OP_IN or OP_NOT_IN list (--max_set_size).
  size_t max_set_size = 64;
};

// Longest attribute name, in characters (the API's rule, not a flag).
inline constexpr size_t kMaxAttributeNameLength = 64;

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_LIMITS_H_
