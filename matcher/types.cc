#include "matcher/types.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
    case Op::kIn:
      return "IN";
    case Op::kNotIn:
      return "NOT_IN";
    case Op::kExists:
      return "EXISTS";
    case Op::kNotExists:
      return "NOT_EXISTS";
  }
  return "?";
}

bool ParseOp(absl::string_view name, Op* op) {
  static constexpr Op kAll[] = {Op::kEq, Op::kNe,    Op::kLt,     Op::kLe,
                                Op::kGt, Op::kGe,    Op::kBetween, Op::kIn,
                                Op::kNotIn, Op::kExists, Op::kNotExists};
  for (Op candidate : kAll) {
    if (OpName(candidate) == name) {
      *op = candidate;
      return true;
    }
  }
  return false;
}

std::string DebugString(const Predicate& p) {
  std::string out = absl::StrCat("a", p.attribute, " ", OpName(p.op));
  switch (p.op) {
    case Op::kExists:
    case Op::kNotExists:
      break;
    case Op::kIn:
    case Op::kNotIn:
      absl::StrAppend(&out, " ", absl::StrJoin(p.values, ","));
      break;
    case Op::kBetween:
      absl::StrAppend(&out, " ", p.value, " ", p.upper);
      break;
    default:
      absl::StrAppend(&out, " ", p.value);
  }
  return out;
}

}  // namespace matcher
}  // namespace cohort
