// The request limits of the API (the "Limits" paragraph of
// proto/cohort/v1/pubsub.proto; docs/DESIGN.md section 2): set once from
// cohortd's flags, read by the front stage's checks (validation.h) and the
// server.
//
// Thread safety: plain values; copy freely.
#ifndef COHORT_SERVICE_MODEL_LIMITS_H_
#define COHORT_SERVICE_MODEL_LIMITS_H_

#include <cstddef>

#include "absl/strings/string_view.h"

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
  // An Event.json document (json_event.h): its bytes (--max_json_bytes),
  // how deep its objects and arrays nest (--max_json_depth), its values,
  // every array element counted (--max_json_values), and the combinations
  // of array elements one event is matched as (--max_json_combinations).
  size_t max_json_bytes = 65536;
  size_t max_json_depth = 32;
  size_t max_json_values = 1024;
  size_t max_json_combinations = 256;
  // The conjunctions an "or" subscription expands into
  // (SubscriptionSpec.any_of; --max_or_expansion).
  size_t max_or_expansion = 150;
};

// Largest --max_or_expansion: the parsers (filter/) distribute a group
// into at most this many alternatives.
inline constexpr size_t kMaxOrExpansionLimit = 1024;

// Longest attribute name, in characters (the API's rule, not a flag).
inline constexpr size_t kMaxAttributeNameLength = 64;

inline bool IsLetterOrUnderscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

inline bool IsAttributeNameChar(char c) {
  return IsLetterOrUnderscore(c) || (c >= '0' && c <= '9') || c == '.' ||
         c == '-';
}

// IsValidAttributeName()
//
// True iff `name` matches [A-Za-z_][A-Za-z0-9_.-]{0,63}: 1 to 64 characters,
// the first a letter or '_', the rest letters, digits, '_', '.' or '-'.
inline bool IsValidAttributeName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxAttributeNameLength) return false;
  if (!IsLetterOrUnderscore(name[0])) return false;
  for (size_t i = 1; i < name.size(); ++i) {
    if (!IsAttributeNameChar(name[i])) return false;
  }
  return true;
}

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_LIMITS_H_
