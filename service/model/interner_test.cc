#include "service/model/interner.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

TEST(Interner, AssignsDenseIdsInFirstSeenOrder) {
  Interner interner(10);
  EXPECT_EQ(interner.size(), 0u);
  EXPECT_EQ(*interner.Intern("price"), 0u);
  EXPECT_EQ(*interner.Intern("volume"), 1u);
  EXPECT_EQ(*interner.Intern("price"), 0u);
  EXPECT_EQ(*interner.Intern("symbol"), 2u);
  EXPECT_EQ(interner.size(), 3u);
  EXPECT_EQ(interner.max_size(), 10u);
}

TEST(Interner, FindDoesNotAdd) {
  Interner interner(10);
  EXPECT_EQ(interner.Find("a"), std::nullopt);
  EXPECT_EQ(interner.size(), 0u);
  ASSERT_TRUE(interner.Intern("a").ok());
  EXPECT_EQ(interner.Find("a"), std::optional<uint32_t>(0));
  EXPECT_EQ(interner.Find("A"), std::nullopt);  // case matters
}

TEST(Interner, NameInvertsIntern) {
  Interner interner(10);
  const std::vector<std::string> names = {"x", "", "a.b-c_d", "y"};
  for (const std::string& name : names) ASSERT_TRUE(interner.Intern(name).ok());
  for (uint32_t id = 0; id < names.size(); ++id) {
    EXPECT_EQ(interner.Name(id), names[id]);
  }
  EXPECT_EQ(interner.Name(4), "");
  EXPECT_EQ(interner.Name(UINT32_MAX), "");
}

TEST(Interner, FindAllMatchesFindPerName) {
  Interner interner(10);
  ASSERT_TRUE(interner.Intern("a").ok());
  ASSERT_TRUE(interner.Intern("b").ok());
  const absl::string_view names[] = {"b", "zz", "a", "b"};
  std::optional<uint32_t> ids[4] = {7u, 7u, 7u, 7u};
  interner.FindAll(names, absl::MakeSpan(ids));
  EXPECT_EQ(ids[0], std::optional<uint32_t>(1));
  EXPECT_EQ(ids[1], std::nullopt);
  EXPECT_EQ(ids[2], std::optional<uint32_t>(0));
  EXPECT_EQ(ids[3], std::optional<uint32_t>(1));
}

TEST(Interner, FullDictionaryRejectsNewNamesAndKeepsOldOnes) {
  Interner interner(2);
  ASSERT_TRUE(interner.Intern("a").ok());
  ASSERT_TRUE(interner.Intern("b").ok());
  absl::StatusOr<uint32_t> full = interner.Intern("c");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(), HasSubstr("the limit is 2"));
  EXPECT_EQ(*interner.Intern("b"), 1u);
  EXPECT_EQ(interner.Find("c"), std::nullopt);
  EXPECT_EQ(interner.size(), 2u);
}

TEST(Interner, ZeroCapacityHoldsNothing) {
  Interner interner(0);
  EXPECT_EQ(interner.Intern("a").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(interner.size(), 0u);
}

TEST(Interner, NamesAreStoredByValue) {
  Interner interner(10000);
  std::string name = "temporary";
  ASSERT_TRUE(interner.Intern(name).ok());
  name.assign("overwritten");
  EXPECT_EQ(interner.Find("temporary"), std::optional<uint32_t>(0));
  EXPECT_EQ(interner.Name(0), "temporary");
  // Enough names to grow the hash table and the deque several times, so a
  // key that pointed into moved storage would be caught (under ASan).
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(interner.Intern(absl::StrCat("name_", i)).ok());
  }
  EXPECT_EQ(interner.Find("temporary"), std::optional<uint32_t>(0));
  EXPECT_EQ(interner.Find("name_0"), std::optional<uint32_t>(1));
  EXPECT_EQ(interner.Find("name_4999"), std::optional<uint32_t>(5000));
}

// Checks that concurrent Intern calls on overlapping names give each name
// exactly one id, that the ids are dense (0 .. distinct names - 1) and that
// readers running at the same time only ever see consistent name/id pairs.
// Run under --config=tsan to check the locking as well.
TEST(Interner, ConcurrentInternGivesEachNameOneDenseId) {
  constexpr int kThreads = 8;
  constexpr int kNames = 2000;
  Interner interner(kNames);
  // ids[t][n] is the id thread t got for name n.
  std::vector<std::vector<uint32_t>> ids(kThreads,
                                         std::vector<uint32_t>(kNames));
  std::atomic<bool> writers_done{false};
  std::atomic<int> inconsistencies{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the names from a different start and direction so
      // that threads race on adding the same names.
      for (int k = 0; k < kNames; ++k) {
        const int n = (t % 2 == 0) ? (k + t * 250) % kNames
                                   : (kNames - 1 - k + t * 250) % kNames;
        absl::StatusOr<uint32_t> id = interner.Intern(absl::StrCat("n", n));
        ASSERT_TRUE(id.ok()) << id.status();
        ids[t][n] = *id;
      }
    });
  }
  std::thread reader([&] {
    while (!writers_done.load(std::memory_order_acquire)) {
      const size_t size = interner.size();
      for (uint32_t id = 0; id < size; ++id) {
        const std::string name = interner.Name(id);
        if (interner.Find(name) != std::optional<uint32_t>(id)) {
          inconsistencies.fetch_add(1);
        }
      }
    }
  });
  for (std::thread& thread : threads) thread.join();
  writers_done.store(true, std::memory_order_release);
  reader.join();

  EXPECT_EQ(inconsistencies.load(), 0);
  EXPECT_EQ(interner.size(), static_cast<size_t>(kNames));
  std::vector<bool> seen(kNames, false);
  for (int n = 0; n < kNames; ++n) {
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(ids[t][n], ids[0][n]) << n;
    const uint32_t id = ids[0][n];
    ASSERT_LT(id, static_cast<uint32_t>(kNames));
    EXPECT_FALSE(seen[id]) << "id " << id << " given to two names";
    seen[id] = true;
    EXPECT_EQ(interner.Name(id), absl::StrCat("n", n));
  }
}

// Property: with 4 threads interning overlapping names, the hook sees each
// new name exactly once, in id order (what replaying a journal needs).
TEST(InternerTest, OnNewNameSeesEachNewNameOnceInIdOrder) {
  Interner interner(1000);
  std::vector<std::pair<uint32_t, std::string>> seen;  // under the lock
  interner.SetOnNewName([&seen](uint32_t id, absl::string_view name) {
    seen.emplace_back(id, std::string(name));
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&interner, t] {
      for (int n = 0; n < 200; ++n) {
        ASSERT_TRUE(interner.Intern(absl::StrCat("n", (n * (t + 1)) % 300))
                        .ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(seen.size(), interner.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].first, i);
    EXPECT_EQ(interner.Name(seen[i].first), seen[i].second);
  }
  const size_t before = seen.size();
  ASSERT_TRUE(interner.Intern("n0").ok());  // known: no call
  EXPECT_EQ(seen.size(), before);
}

}  // namespace
}  // namespace service
}  // namespace cohort
