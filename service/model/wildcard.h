// Wildcard patterns for OP_WILDCARD (issue 44), as Event Ruler's
// "wildcard": '*' stands for any run of bytes, the empty one included;
// "\*" is a literal star and "\\" a literal backslash; any other byte
// stands for itself. Any other use of '\' is an error, and so, for now, is
// more than one '*': a pattern with one star is found in phase 1 as a
// prefix, a suffix and a length (typed_attributes.h); one with more would
// need a check of each candidate (docs/DESIGN.md section 1.6).
//
// Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_WILDCARD_H_
#define COHORT_SERVICE_MODEL_WILDCARD_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

// Most stars a pattern may have.
inline constexpr int kMaxWildcardStars = 1;

// A pattern with its escapes read: the bytes before the star, and after it
// (`star` false: the pattern is `left` exactly, `right` empty).
struct Wildcard {
  std::string left;
  std::string right;
  bool star = false;
};

// INVALID_ARGUMENT (a message without the field name) for a pattern that
// breaks the rules above.
absl::StatusOr<Wildcard> ParseWildcard(absl::string_view pattern);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_WILDCARD_H_
