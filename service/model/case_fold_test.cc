#include "service/model/case_fold.h"

#include <string>

#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

TEST(CaseFold, TableIsUnicode15) { EXPECT_EQ(CaseFoldVersion(), "15.0.0"); }

TEST(CaseFold, AsciiFoldsToLowerCase) {
  EXPECT_EQ(FoldCase("Hello, WORLD 42_-.!"), "hello, world 42_-.!");
  EXPECT_EQ(FoldCase(""), "");
  for (int c = 0; c < 0x80; ++c) {
    const uint32_t want = c >= 'A' && c <= 'Z' ? c + 32 : c;
    EXPECT_EQ(FoldCodePoint(c), want) << c;
  }
}

// Code points of CaseFolding.txt's statuses C and S, and some it leaves.
TEST(CaseFold, SimpleFoldingOfCodePoints) {
  EXPECT_EQ(FoldCodePoint(0xC9), 0xE9u);     // É -> é
  EXPECT_EQ(FoldCodePoint(0xE9), 0xE9u);     // é stays
  EXPECT_EQ(FoldCodePoint(0x3A3), 0x3C3u);   // Σ -> σ
  EXPECT_EQ(FoldCodePoint(0x3C2), 0x3C3u);   // final ς -> σ
  EXPECT_EQ(FoldCodePoint(0x212A), 0x6Bu);   // Kelvin sign -> k
  EXPECT_EQ(FoldCodePoint(0x1E9E), 0xDFu);   // ẞ -> ß (S, not F's "ss")
  EXPECT_EQ(FoldCodePoint(0xDF), 0xDFu);     // ß has only a full folding
  EXPECT_EQ(FoldCodePoint(0x130), 0x130u);   // İ: T and F only
  EXPECT_EQ(FoldCodePoint(0xAB70), 0x13A0u);  // Cherokee folds to capitals
  EXPECT_EQ(FoldCodePoint(0x10400), 0x10428u);  // Deseret, 4 bytes
  EXPECT_EQ(FoldCodePoint(0x1F600), 0x1F600u);  // no case
}

TEST(CaseFold, FoldsUtf8Strings) {
  EXPECT_EQ(FoldCase("Caf\xC3\x89"), "caf\xC3\xA9");  // CafÉ
  EXPECT_EQ(FoldCase("\xCE\xA3\xCE\xBF\xCF\x82"),      // Σος
            "\xCF\x83\xCE\xBF\xCF\x83");
  // Ⱥ (2 bytes) folds to ⱥ (3 bytes).
  EXPECT_EQ(FoldCase("\xC8\xBA"), "\xE2\xB1\xA5");
  EXPECT_EQ(FoldCase("\xF0\x90\x90\x80"), "\xF0\x90\x90\xA8");
  // Equal ignoring case: the folds are equal.
  EXPECT_EQ(FoldCase("STRA\xE1\xBA\x9E" "E"), FoldCase("stra\xC3\x9F" "e"));
  EXPECT_NE(FoldCase("STRASSE"), FoldCase("stra\xC3\x9F" "e"));
}

// Bytes that are not well-formed UTF-8 stay as they are; the letters
// around them still fold.
TEST(CaseFold, KeepsBytesThatAreNotUtf8) {
  const std::string cases[] = {
      "\xFF",             // never a lead byte
      "\x80",             // a stray continuation byte
      "\xC3",             // a truncated sequence
      "\xE2\x84",         // likewise, 2 of 3
      "\xC0\x80",         // an overlong NUL
      "\xE0\x80\x80",     // an overlong 3-byte form
      "\xED\xA0\x80",     // a surrogate
      "\xF4\x90\x80\x80",  // above U+10FFFF
      "\xF8\x88\x80\x80\x80",
  };
  for (const std::string& bad : cases) {
    SCOPED_TRACE(bad.size());
    EXPECT_EQ(FoldCase(bad), bad);
    EXPECT_EQ(FoldCase("A" + bad + "B"), "a" + bad + "b");
  }
  // A lead byte whose continuation is missing does not swallow the letter
  // after it.
  EXPECT_EQ(FoldCase("\xC3" "A"), "\xC3" "a");
}

TEST(CaseFold, FoldingTwiceChangesNothing) {
  for (uint32_t c = 0; c < 0x20000; ++c) {
    const uint32_t once = FoldCodePoint(c);
    ASSERT_EQ(FoldCodePoint(once), once) << c;
  }
}

}  // namespace
}  // namespace service
}  // namespace cohort
