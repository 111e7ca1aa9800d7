// Wildcard patterns for OP_WILDCARD and OP_NOT_WILDCARD (issue 44), as
// Event Ruler's "wildcard": '*' stands for any run of bytes, the empty one
// included; "\*" is a literal star and "\\" a literal backslash; any other
// byte stands for itself. Any other use of '\' is an error, and so are two
// stars in a row ("**", which Event Ruler refuses) and more than
// kMaxWildcardStars stars. How the index finds them: typed_attributes.h (a
// pattern of one star as a prefix, a suffix and a length; the others, and
// every pattern of OP_NOT_WILDCARD, by a check of the candidates its first
// and last parts select; docs/DESIGN.md section 1.6).
//
// Thread safety: pure functions.
#ifndef COHORT_SERVICE_MODEL_WILDCARD_H_
#define COHORT_SERVICE_MODEL_WILDCARD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

// Most stars a pattern may have.
inline constexpr int kMaxWildcardStars = 8;

// A pattern with its escapes read: the bytes before the first star, after
// the last one, and between stars (`star` false: the pattern is `left`
// exactly, `right` and `middle` empty).
struct Wildcard {
  std::string left;
  std::string right;
  std::vector<std::string> middle;  // stars - 1 parts, none empty
  int stars = 0;
  bool star = false;  // stars > 0
};

// INVALID_ARGUMENT (a message without the field name) for a pattern that
// breaks the rules above.
absl::StatusOr<Wildcard> ParseWildcard(absl::string_view pattern);

// Whether `w` matches `s`: s starts with left and ends with right, apart
// (at least |left| + |right| bytes), and holds the middle parts in order
// between them (the leftmost place of each, which is enough for stars).
bool WildcardMatches(const Wildcard& w, absl::string_view s);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_WILDCARD_H_
