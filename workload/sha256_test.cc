#include "workload/sha256.h"

#include <string>

#include "gtest/gtest.h"

namespace cohort {
namespace workload {
namespace {

// Test vectors from FIPS 180-4 / NIST "SHA-256 examples".
TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(
      Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, OneMillionA) {
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesEqualOneShotForEverySplit) {
  std::string message;
  for (int i = 0; i < 300; ++i) message.push_back(static_cast<char>(i * 7));
  const std::string expected = Sha256Hex(message);
  for (size_t split = 0; split <= message.size(); split += 13) {
    Sha256 hash;
    hash.Update(absl::string_view(message).substr(0, split));
    hash.Update(absl::string_view(message).substr(split));
    EXPECT_EQ(hash.HexFinal(), expected) << "split at " << split;
  }
}

TEST(Sha256, ByteAtATimeOneMillionA) {
  Sha256 hash;
  for (int i = 0; i < 1000000; ++i) hash.Update("a");
  EXPECT_EQ(hash.bytes(), 1000000u);
  EXPECT_EQ(hash.HexFinal(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace workload
}  // namespace cohort
