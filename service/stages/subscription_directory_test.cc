#include "service/stages/subscription_directory.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

TEST(SubscriptionDirectoryTest, RestoreRecreatesLivenessAndTheNextId) {
  SubscriptionDirectory directory(3, 1000);
  ASSERT_TRUE(directory.Restore(11, {2, 5, 10}).ok());
  EXPECT_EQ(directory.live(), 3u);
  // Ids continue after the restored ones.
  absl::StatusOr<uint64_t> first = directory.Assign(2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 11u);
  // Exactly the restored ids (and the new ones) are live.
  EXPECT_TRUE(directory.Kill({2, 5, 10, 11, 12}).ok());
  EXPECT_TRUE(absl::IsNotFound(directory.Kill({1})));
  EXPECT_TRUE(absl::IsNotFound(directory.Kill({3})));
  EXPECT_EQ(directory.live(), 0u);
}

TEST(SubscriptionDirectoryTest, RestoreRejectsImpossibleStates) {
  {
    SubscriptionDirectory directory(1, 100);
    EXPECT_THAT(directory.Restore(5, {5}).message(),
                HasSubstr("live id 5 not below next id 5"));
    EXPECT_THAT(directory.Restore(5, {0}).message(), HasSubstr("live id 0"));
    EXPECT_THAT(directory.Restore(5, {3, 3}).message(), HasSubstr("twice"));
    EXPECT_THAT(directory.Restore(0, {}).message(), HasSubstr("next id 0"));
    EXPECT_THAT(directory.Restore(103, {}).message(), HasSubstr("outside"));
    EXPECT_EQ(directory.live(), 0u);  // nothing changed by the failures
    ASSERT_TRUE(directory.Restore(1, {}).ok());
  }
  SubscriptionDirectory assigned(1, 100);
  ASSERT_TRUE(assigned.Assign(1).ok());
  EXPECT_THAT(assigned.Restore(5, {}).message(),
              HasSubstr("after ids were assigned"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
