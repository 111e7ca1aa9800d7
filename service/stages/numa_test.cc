#include "service/stages/numa.h"

#include <numa.h>
#include <numaif.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/errno_status.h"

namespace cohort {
namespace service {
namespace {

// Property: after PreferNodeOfCpu, the pages a thread faults in lie on the
// node it returned (on a one-node machine, node 0: the path still runs).
TEST(NumaTest, PagesFaultedAfterwardsLieOnTheCpusNode) {
  if (numa_available() < 0) GTEST_SKIP() << "no kernel NUMA support";
  std::thread thread([] {
    const int cpu = sched_getcpu();
    ASSERT_GE(cpu, 0);
    absl::StatusOr<int> node = PreferNodeOfCpu(cpu);
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ(*node, numa_node_of_cpu(cpu));
    constexpr size_t kBytes = 8 << 20;
    // Freed however the lambda returns (an ASSERT returns early).
    std::unique_ptr<char, decltype(&std::free)> owner(
        static_cast<char*>(std::malloc(kBytes)), &std::free);
    char* block = owner.get();
    ASSERT_NE(block, nullptr);
    std::memset(block, 1, kBytes);
    for (size_t offset = 0; offset < kBytes; offset += 1 << 20) {
      int page_node = -1;
      ASSERT_EQ(get_mempolicy(&page_node, nullptr, 0, block + offset,
                              MPOL_F_NODE | MPOL_F_ADDR),
                0)
          << ErrnoText(errno);
      EXPECT_EQ(page_node, *node) << "offset " << offset;
    }
  });
  thread.join();
}

TEST(NumaTest, ACpuThatDoesNotExistIsAnError) {
  if (numa_available() < 0) GTEST_SKIP() << "no kernel NUMA support";
  std::thread thread([] {
    absl::StatusOr<int> node = PreferNodeOfCpu(1 << 20);
    EXPECT_FALSE(node.ok());
    EXPECT_THAT(node.status().message(), ::testing::HasSubstr("CPU 1048576"));
  });
  thread.join();
}

TEST(NumaTest, SummaryCountsNodes) {
  if (numa_available() < 0) {
    EXPECT_THAT(NumaSummary(), ::testing::HasSubstr("unavailable"));
    return;
  }
  EXPECT_THAT(NumaSummary(),
              ::testing::MatchesRegex("[1-9][0-9]* nodes? \\(0: [1-9].*"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
