// How each comparison op, and each operator of a word and a string, is
// spelled in the filter grammar: what the printer writes (format.cc) and
// every form the parser reads (parse.cc).
// Internal to filter/.
#ifndef COHORT_FILTER_SPELLINGS_H_
#define COHORT_FILTER_SPELLINGS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace filter {
namespace internal {

// How each comparison op is spelled: the symbol FormatPredicate() writes,
// and the word.
struct Spelling {
  absl::string_view symbol;
  absl::string_view word;
  v1::Op op;
};
constexpr Spelling kSpellings[] = {
    {"=", "eq", v1::OP_EQ},  {"==", "eq", v1::OP_EQ}, {"!=", "ne", v1::OP_NE},
    {"<>", "ne", v1::OP_NE}, {"<", "lt", v1::OP_LT},  {"<=", "le", v1::OP_LE},
    {">", "gt", v1::OP_GT},  {">=", "ge", v1::OP_GE},
};

// The operators written as a word and one string (or, for
// equals-ignore-case, a list of strings) after the name: `name word
// "..."`; those with a negation are also `name not word "..."`
// (OP_UNSPECIFIED: none). `in_patterns`: the word is also an operator key
// of Event Ruler patterns (pattern.cc), {"word": "..."}; prefix-ignore-case
// and suffix-ignore-case are not (a pattern writes them {"prefix":
// {"equals-ignore-case": "..."}}).
struct StringOpSpelling {
  absl::string_view word;
  v1::Op op;
  v1::Op negated;
  bool in_patterns;
};
constexpr StringOpSpelling kStringOps[] = {
    {"prefix", v1::OP_PREFIX, v1::OP_NOT_PREFIX, true},
    {"suffix", v1::OP_SUFFIX, v1::OP_NOT_SUFFIX, true},
    {"equals-ignore-case", v1::OP_EQUALS_IGNORE_CASE,
     v1::OP_NOT_EQUALS_IGNORE_CASE, true},
    {"prefix-ignore-case", v1::OP_PREFIX_IGNORE_CASE, v1::OP_UNSPECIFIED,
     false},
    {"suffix-ignore-case", v1::OP_SUFFIX_IGNORE_CASE, v1::OP_UNSPECIFIED,
     false},
    {"cidr", v1::OP_CIDR, v1::OP_UNSPECIFIED, true},
    {"wildcard", v1::OP_WILDCARD, v1::OP_NOT_WILDCARD, true},
};

// Why `name` breaks the API's rule for attribute names,
// [A-Za-z_][A-Za-z0-9_.-]{0,63}, as a clause ("it contains ' '; a name has
// only ...", "it is empty"), or "" if it does not (parse.cc).
std::string WhyBadName(absl::string_view name);

}  // namespace internal
}  // namespace filter
}  // namespace cohort

#endif  // COHORT_FILTER_SPELLINGS_H_
