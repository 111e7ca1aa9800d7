#include "service/storage/journal_frame.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 and the common check value.
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(""), 0u);
}

// The instruction path against the table over every length up to 80 at
// every offset within a word, and long random pieces continued in turn.
TEST(Crc32cTest, InstructionAgreesWithTheTable) {
  if (!internal::Crc32cIsHardware()) {
    GTEST_SKIP() << "no SSE4.2: Crc32c is the table";
  }
  std::mt19937 rng(7);
  std::string bytes(4096, '\0');
  for (char& b : bytes) b = static_cast<char>(rng());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t len = 0; len <= 80; ++len) {
      const absl::string_view piece(bytes.data() + offset, len);
      ASSERT_EQ(Crc32c(piece), internal::Crc32cPortable(piece))
          << offset << " " << len;
      ASSERT_EQ(Crc32c(piece, 0x12345678u),
                internal::Crc32cPortable(piece, 0x12345678u))
          << offset << " " << len;
    }
  }
  uint32_t hardware = 0, table = 0;
  for (int i = 0; i < 200; ++i) {
    const size_t from = rng() % bytes.size();
    const absl::string_view piece(bytes.data() + from,
                                  rng() % (bytes.size() - from + 1));
    hardware = Crc32c(piece, hardware);
    table = internal::Crc32cPortable(piece, table);
    ASSERT_EQ(hardware, table) << i;
  }
  EXPECT_EQ(internal::Crc32cPortable("123456789"), 0xE3069283u);
}

TEST(Crc32cTest, ContinuesAcrossPieces) {
  EXPECT_EQ(Crc32c("6789", Crc32c("12345")), Crc32c("123456789"));
}

TEST(Crc32cTest, MaskRoundTripsAndChangesTheValue) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
    EXPECT_NE(MaskCrc(crc), crc);
  }
}

std::vector<std::string> Payloads() {
  return {"", "a", std::string(1000, 'x'), std::string("\0\1\2", 3)};
}

std::string Journal(const std::vector<std::string>& payloads) {
  std::string out;
  for (size_t i = 0; i < payloads.size(); ++i) {
    AppendFrame(static_cast<uint8_t>(i + 1), payloads[i], &out);
  }
  return out;
}

TEST(FrameReaderTest, ReadsBackWhatWasAppended) {
  const std::vector<std::string> payloads = Payloads();
  const std::string data = Journal(payloads);
  FrameReader reader(data);
  Frame frame;
  size_t offset = 0;
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_TRUE(reader.Next(&frame)) << i;
    EXPECT_EQ(frame.type, i + 1);
    EXPECT_EQ(frame.payload, payloads[i]);
    EXPECT_EQ(frame.offset, offset);
    offset += kFrameHeaderBytes + payloads[i].size();
  }
  EXPECT_FALSE(reader.Next(&frame));
  EXPECT_EQ(reader.stop(), FrameReader::Stop::kEnd);
  EXPECT_EQ(reader.valid_bytes(), data.size());
  EXPECT_EQ(reader.discarded_bytes(), 0u);
}

TEST(FrameReaderTest, EmptyDataEndsAtOnce) {
  FrameReader reader("");
  Frame frame;
  EXPECT_FALSE(reader.Next(&frame));
  EXPECT_EQ(reader.stop(), FrameReader::Stop::kEnd);
}

// Property: cutting the data anywhere yields exactly the frames that were
// whole before the cut, then kTorn (or kEnd at a frame boundary), and the
// discarded bytes are those after the last whole frame.
TEST(FrameReaderTest, EveryTruncationStopsAtTheLastWholeFrame) {
  const std::vector<std::string> payloads = Payloads();
  const std::string data = Journal(payloads);
  std::vector<size_t> ends;  // where each frame ends
  size_t at = 0;
  for (const std::string& p : payloads) {
    at += kFrameHeaderBytes + p.size();
    ends.push_back(at);
  }
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    FrameReader reader(absl::string_view(data).substr(0, cut));
    Frame frame;
    size_t read = 0;
    while (reader.Next(&frame)) ++read;
    size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    ASSERT_EQ(read, whole) << "cut " << cut;
    const size_t valid = whole == 0 ? 0 : ends[whole - 1];
    EXPECT_EQ(reader.valid_bytes(), valid) << "cut " << cut;
    EXPECT_EQ(reader.discarded_bytes(), cut - valid) << "cut " << cut;
    EXPECT_EQ(reader.stop(), cut == valid ? FrameReader::Stop::kEnd
                                          : FrameReader::Stop::kTorn)
        << "cut " << cut;
  }
}

// Property: flipping any bit of a frame makes the reader stop before that
// frame (checksum, or a length that no longer fits), never yield it altered.
TEST(FrameReaderTest, AnyFlippedBitIsNeverAccepted) {
  const std::vector<std::string> payloads = {"hello", "world!", "x"};
  const std::string data = Journal(payloads);
  const size_t second = kFrameHeaderBytes + payloads[0].size();
  const size_t second_end = second + kFrameHeaderBytes + payloads[1].size();
  for (size_t byte = second; byte < second_end; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = data;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      FrameReader reader(bad);
      Frame frame;
      ASSERT_TRUE(reader.Next(&frame));
      EXPECT_EQ(frame.payload, "hello");
      EXPECT_FALSE(reader.Next(&frame)) << "byte " << byte << " bit " << bit;
      EXPECT_NE(reader.stop(), FrameReader::Stop::kEnd);
      EXPECT_EQ(reader.valid_bytes(), second);
      EXPECT_EQ(reader.discarded_bytes(), bad.size() - second);
    }
  }
}

TEST(FrameReaderTest, ImpossibleLengthIsCorrupt) {
  std::string data;
  AppendFrame(1, "abc", &data);
  data[3] = static_cast<char>(0x7f);  // length > kMaxFramePayload
  FrameReader reader(data);
  Frame frame;
  EXPECT_FALSE(reader.Next(&frame));
  EXPECT_EQ(reader.stop(), FrameReader::Stop::kCorrupt);
  EXPECT_STREQ(StopName(reader.stop()), "corrupt");
}

TEST(FrameReaderTest, RandomGarbageAfterFramesIsDiscarded) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::string data = Journal({"one", "two"});
    const size_t good = data.size();
    const size_t extra = 1 + rng() % 64;
    for (size_t i = 0; i < extra; ++i) data.push_back(static_cast<char>(rng()));
    FrameReader reader(data);
    Frame frame;
    int read = 0;
    while (reader.Next(&frame)) ++read;
    // Random bytes pass a 32-bit checksum with negligible probability.
    EXPECT_EQ(read, 2) << "trial " << trial;
    EXPECT_EQ(reader.valid_bytes(), good);
    EXPECT_EQ(reader.discarded_bytes(), extra);
  }
}

}  // namespace
}  // namespace service
}  // namespace cohort
