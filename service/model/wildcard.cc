#include "service/model/wildcard.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::StatusOr<Wildcard> ParseWildcard(absl::string_view pattern) {
  Wildcard w;
  // The parts between stars: left, then each middle, then right.
  std::vector<std::string> parts(1);
  bool after_star = false;  // the last token was a star (not "\*")
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const bool was_after_star = std::exchange(after_star, false);
    if (c == '\\') {
      if (i + 1 == pattern.size() ||
          (pattern[i + 1] != '*' && pattern[i + 1] != '\\')) {
        return absl::InvalidArgumentError(absl::StrCat(
            "byte ", i, " of the pattern: '\\' must be followed by '*' or "
            "'\\' (a literal star or backslash)"));
      }
      parts.back().push_back(pattern[++i]);
    } else if (c == '*') {
      if (was_after_star) {
        return absl::InvalidArgumentError(absl::StrCat(
            "byte ", i, " of the pattern: two stars in a row ('**' means "
            "no more than '*'; Event Ruler refuses it too)"));
      }
      if (w.stars == kMaxWildcardStars) {
        return absl::InvalidArgumentError(absl::StrCat(
            "byte ", i, " of the pattern: more than ", kMaxWildcardStars,
            " stars (write a literal star as \\*)"));
      }
      ++w.stars;
      parts.emplace_back();
      after_star = true;
    } else {
      parts.back().push_back(c);
    }
  }
  w.star = w.stars > 0;
  w.left = std::move(parts.front());
  if (parts.size() > 1) {
    w.right = std::move(parts.back());
    for (size_t k = 1; k + 1 < parts.size(); ++k) {
      w.middle.push_back(std::move(parts[k]));
    }
  }
  return w;
}

bool WildcardMatches(const Wildcard& w, absl::string_view s) {
  if (!w.star) return s == w.left;
  if (s.size() < w.left.size() + w.right.size() ||
      !absl::StartsWith(s, w.left) || !absl::EndsWith(s, w.right)) {
    return false;
  }
  absl::string_view rest =
      s.substr(w.left.size(), s.size() - w.left.size() - w.right.size());
  for (const std::string& part : w.middle) {
    const size_t at = rest.find(part);
    if (at == absl::string_view::npos) return false;
    rest.remove_prefix(at + part.size());
  }
  return true;
}

}  // namespace service
}  // namespace cohort
