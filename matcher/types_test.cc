#include "matcher/types.h"

#include <limits>

#include "gtest/gtest.h"
#include "matcher/reference_matcher.h"

namespace cohort {
namespace matcher {
namespace {

TEST(Op, NamesRoundTrip) {
  for (int i = 1; i <= 7; ++i) {
    const Op op = static_cast<Op>(i);
    Op parsed;
    ASSERT_TRUE(ParseOp(OpName(op), &parsed)) << i;
    EXPECT_EQ(parsed, op);
  }
  Op unused;
  EXPECT_FALSE(ParseOp("eq", &unused));
  EXPECT_FALSE(ParseOp("", &unused));
}

TEST(Holds, EveryOperatorAtItsBoundary) {
  EXPECT_TRUE(Holds({0, Op::kEq, 5, 0}, 5));
  EXPECT_FALSE(Holds({0, Op::kEq, 5, 0}, 6));
  EXPECT_TRUE(Holds({0, Op::kNe, 5, 0}, 6));
  EXPECT_FALSE(Holds({0, Op::kNe, 5, 0}, 5));
  EXPECT_FALSE(Holds({0, Op::kLt, 5, 0}, 5));
  EXPECT_TRUE(Holds({0, Op::kLe, 5, 0}, 5));
  EXPECT_FALSE(Holds({0, Op::kGt, 5, 0}, 5));
  EXPECT_TRUE(Holds({0, Op::kGe, 5, 0}, 5));
  EXPECT_TRUE(Holds({0, Op::kBetween, 5, 5}, 5));
  EXPECT_FALSE(Holds({0, Op::kBetween, 5, 6}, 7));
  const int64_t min = std::numeric_limits<int64_t>::min();
  EXPECT_FALSE(Holds({0, Op::kLt, min, 0}, min));
}

TEST(ReferenceMatcher, PredicateOnMissingAttributeDoesNotHold) {
  const AttributeValue event[] = {{1, 5}};
  EXPECT_FALSE(Matches({{{0, Op::kNe, 5, 0}}}, event));
  EXPECT_TRUE(Matches({{{1, Op::kNe, 4, 0}}}, event));
  ReferenceMatcher reference;
  EXPECT_TRUE(reference.Add(3, {{{1, Op::kEq, 5, 0}}}));
  EXPECT_FALSE(reference.Add(3, {{{1, Op::kEq, 5, 0}}}));
  EXPECT_EQ(reference.Match(event), std::vector<SubscriptionId>{3});
  EXPECT_TRUE(reference.Remove(3));
  EXPECT_FALSE(reference.Remove(3));
  EXPECT_TRUE(reference.Match(event).empty());
}

}  // namespace
}  // namespace matcher
}  // namespace cohort
