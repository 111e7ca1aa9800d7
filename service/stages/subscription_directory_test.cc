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

TEST(SubscriptionDirectoryTest, BranchesMapBackAndAreReusedOnceReleased) {
  // Room for 5 branch ids: kFirstBranchId .. kFirstBranchId + 4.
  SubscriptionDirectory directory(2, 100, kFirstBranchId + 4);
  EXPECT_FALSE(directory.has_branches());
  EXPECT_TRUE(directory.BranchesOf(1).empty());
  absl::StatusOr<std::vector<uint32_t>> a = directory.AssignBranches(7, 3, 2);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<uint32_t>{kFirstBranchId, kFirstBranchId + 1}));
  absl::StatusOr<std::vector<uint32_t>> b = directory.AssignBranches(9, 4, 3);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(directory.has_branches());
  EXPECT_EQ(directory.branches(), 5u);
  for (uint32_t id : *a) {
    EXPECT_TRUE(SubscriptionDirectory::IsBranch(id));
    EXPECT_EQ(directory.BranchOwner(id), 7u);
    EXPECT_EQ(directory.BranchSubscriber(id), 3u);
  }
  for (uint32_t id : *b) EXPECT_EQ(directory.BranchOwner(id), 9u);
  EXPECT_EQ(directory.BranchesOf(9), *b);
  EXPECT_FALSE(SubscriptionDirectory::IsBranch(kFirstBranchId - 1));
  // Full: nothing assigned.
  absl::StatusOr<std::vector<uint32_t>> full =
      directory.AssignBranches(11, 0, 1);
  EXPECT_TRUE(absl::IsResourceExhausted(full.status()));
  EXPECT_THAT(full.status().message(), HasSubstr("5 of 5 in use"));
  EXPECT_TRUE(directory.BranchesOf(11).empty());
  // Released ids serve again, for another subscription.
  directory.ReleaseBranches(7);
  directory.ReleaseBranches(7);  // twice: nothing more
  EXPECT_TRUE(directory.BranchesOf(7).empty());
  EXPECT_EQ(directory.branches(), 3u);
  absl::StatusOr<std::vector<uint32_t>> c = directory.AssignBranches(11, 5, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, *a);
  for (uint32_t id : *c) {
    EXPECT_EQ(directory.BranchOwner(id), 11u);
    EXPECT_EQ(directory.BranchSubscriber(id), 5u);
  }
  directory.ReleaseBranches(9);
  directory.ReleaseBranches(11);
  EXPECT_FALSE(directory.has_branches());
}

TEST(SubscriptionDirectoryTest, PlainIdsStayBelowTheBranchIds) {
  // The engine's bounds: a partition's plain local ids end where the
  // branch ids begin.
  SubscriptionDirectory directory(1, kFirstBranchId - 1);
  ASSERT_TRUE(directory.Restore(kFirstBranchId, {kFirstBranchId - 1}).ok());
  EXPECT_EQ(directory.Place(kFirstBranchId - 1).local_id, kFirstBranchId - 2);
  ASSERT_TRUE(directory.Assign(1).ok());
  EXPECT_EQ(directory.Place(kFirstBranchId).local_id, kFirstBranchId - 1);
  EXPECT_FALSE(SubscriptionDirectory::IsBranch(kFirstBranchId - 1));
  EXPECT_TRUE(absl::IsResourceExhausted(directory.Assign(1).status()));
}

}  // namespace
}  // namespace service
}  // namespace cohort
