// How each comparison op is spelled in the filter grammar: the symbol the
// printer writes (format.cc) and every form the parser reads (parse.cc).
// Internal to filter/.
#ifndef COHORT_FILTER_SPELLINGS_H_
#define COHORT_FILTER_SPELLINGS_H_

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

}  // namespace internal
}  // namespace filter
}  // namespace cohort

#endif  // COHORT_FILTER_SPELLINGS_H_
