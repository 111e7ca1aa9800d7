#include "matcher/types.h"

#include "absl/strings/str_cat.h"

namespace cohort {
namespace matcher {

absl::string_view OpName(Op op) {
  switch (op) {
    case Op::kEq:
      return "EQ";
    case Op::kNe:
      return "NE";
    case Op::kLt:
      return "LT";
    case Op::kLe:
      return "LE";
    case Op::kGt:
      return "GT";
    case Op::kGe:
      return "GE";
    case Op::kBetween:
      return "BETWEEN";
  }
  return "?";
}

bool ParseOp(absl::string_view name, Op* op) {
  static constexpr Op kAll[] = {Op::kEq, Op::kNe, Op::kLt,     Op::kLe,
                                Op::kGt, Op::kGe, Op::kBetween};
  for (Op candidate : kAll) {
    if (OpName(candidate) == name) {
      *op = candidate;
      return true;
    }
  }
  return false;
}

std::string DebugString(const Predicate& p) {
  std::string out =
      absl::StrCat("a", p.attribute, " ", OpName(p.op), " ", p.value);
  if (p.op == Op::kBetween) absl::StrAppend(&out, " ", p.upper);
  return out;
}

}  // namespace matcher
}  // namespace cohort
