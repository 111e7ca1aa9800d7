#include "matcher/word_arena.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "matcher/huge_pages.h"
#include "matcher/index_test_util.h"

namespace cohort {
namespace matcher {
namespace internal {
namespace {

using test_util::Rng;

// Classes hold what was asked, waste at most an eighth (and 3 words), and
// grow with the request.
TEST(WordArena, SizeClassesHoldTheRequestWithBoundedWaste) {
  size_t last = 0;
  for (size_t words = 1; words <= (size_t{1} << 14); ++words) {
    const size_t rounded = WordArena::RoundedWords(words);
    ASSERT_GE(rounded, words);
    ASSERT_LE(rounded, words + words / 8 + 4) << words;
    ASSERT_GE(rounded, last) << words;
    last = rounded;
  }
}

// Random allocations and frees of many sizes, large ones included: every
// live allocation keeps its own contents, a freed one is handed out again
// for its class, and MemoryBytes covers what is live.
TEST(WordArena, AllocationsKeepTheirContentsAndAreReused) {
  Rng rng(9);
  WordArena arena;
  struct Live {
    uint32_t* p;
    size_t words;
    uint32_t tag;
  };
  std::vector<Live> live;
  uint32_t tag = 0;
  size_t live_words = 0;
  auto fill = [](const Live& l) {
    for (size_t i = 0; i < l.words; ++i) {
      l.p[i] = l.tag + static_cast<uint32_t>(i);
    }
  };
  auto intact = [](const Live& l) {
    for (size_t i = 0; i < l.words; ++i) {
      if (l.p[i] != l.tag + static_cast<uint32_t>(i)) return false;
    }
    return true;
  };
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && rng.Chance(45)) {
      const size_t k = rng.Uniform(live.size());
      ASSERT_TRUE(intact(live[k])) << "step " << step;
      const Live freed = live[k];
      arena.Free(freed.p, freed.words);
      live_words -= freed.words;
      live[k] = live.back();
      live.pop_back();
      // The next allocation of the same size gets the freed one back
      // (when the arena carves).
      uint32_t* again = arena.Allocate(freed.words);
      Live l{again, freed.words, tag += 1000003};
      fill(l);
      live.push_back(l);
      live_words += l.words;
      continue;
    }
    const size_t words =
        rng.Chance(1) ? (size_t{1} << 17) + rng.Uniform(99)
                      : 1 + rng.Uniform(rng.Chance(10) ? 5000 : 80);
    Live l{arena.Allocate(words), words, tag += 1000003};
    ASSERT_EQ(reinterpret_cast<uintptr_t>(l.p) % 16, 0u);
    fill(l);
    live.push_back(l);
    live_words += words;
  }
  for (const Live& l : live) ASSERT_TRUE(intact(l));
  EXPECT_GE(arena.MemoryBytes(), live_words * sizeof(uint32_t));
  for (const Live& l : live) arena.Free(l.p, l.words);
}

TEST(WordArena, AFreedAllocationIsReusedForItsClass) {
  WordArena arena;
  uint32_t* a = arena.Allocate(10);
  uint32_t* other = arena.Allocate(10);
  arena.Free(a, 10);
  uint32_t* b = arena.Allocate(11);  // the same class (12 words)
#if !defined(__SANITIZE_ADDRESS__) && !defined(ADDRESS_SANITIZER)
  EXPECT_EQ(a, b);
#endif
  arena.Free(b, 11);
  arena.Free(other, 10);
}

TEST(WordArena, MovedArenaOwnsTheBlocks) {
  WordArena a;
  uint32_t* p = a.Allocate(100);
  p[99] = 7;
  WordArena b(std::move(a));
  EXPECT_EQ(p[99], 7u);
  EXPECT_EQ(a.MemoryBytes(), 0u);  // NOLINT: moved-from is empty
  EXPECT_GE(b.MemoryBytes(), 100 * sizeof(uint32_t));
  b.Free(p, 100);
}

TEST(HugePages, LargeAllocationsAreAlignedAndWritable) {
  for (size_t bytes : {size_t{100}, size_t{3} << 20, (size_t{4} << 20) + 1}) {
    void* p = AllocateHuge(bytes);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0xab, bytes);
    EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0xab);
    if (bytes >= kHugeAllocationMin) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
      EXPECT_EQ(HugeBytes(bytes) % kHugePageBytes, 0u);
    }
    EXPECT_GE(HugeBytes(bytes), bytes);
    FreeHuge(p, bytes);
  }
  std::vector<int, HugePageAllocator<int>> v(size_t{1} << 20, 5);
  v.push_back(6);
  EXPECT_EQ(v[12345], 5);
  EXPECT_EQ(v.back(), 6);
}

}  // namespace
}  // namespace internal
}  // namespace matcher
}  // namespace cohort
