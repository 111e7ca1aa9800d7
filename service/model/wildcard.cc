#include "service/model/wildcard.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::StatusOr<Wildcard> ParseWildcard(absl::string_view pattern) {
  Wildcard w;
  std::string* part = &w.left;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 == pattern.size() ||
          (pattern[i + 1] != '*' && pattern[i + 1] != '\\')) {
        return absl::InvalidArgumentError(absl::StrCat(
            "byte ", i, " of the pattern: '\\' must be followed by '*' or "
            "'\\' (a literal star or backslash)"));
      }
      part->push_back(pattern[++i]);
    } else if (c == '*') {
      if (w.star) {
        return absl::InvalidArgumentError(absl::StrCat(
            "byte ", i, " of the pattern: a second '*'; the limit is ",
            kMaxWildcardStars, " (write a literal star as \\*)"));
      }
      w.star = true;
      part = &w.right;
    } else {
      part->push_back(c);
    }
  }
  return w;
}

}  // namespace service
}  // namespace cohort
