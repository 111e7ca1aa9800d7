#include "service/journal_frame.h"

#include <array>


namespace cohort {
namespace service {
namespace {

// Byte-at-a-time table for the reflected Castagnoli polynomial 0x82F63B78.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint32_t Load32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 |
         uint32_t{b[3]} << 24;
}

void Store32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

uint32_t Crc32c(absl::string_view data, uint32_t crc) {
  crc = ~crc;
  for (unsigned char byte : data) {
    crc = kCrcTable[(crc ^ byte) & 0xff] ^ (crc >> 8);
  }
  return ~crc;
}

void AppendFrame(uint8_t type, absl::string_view payload, std::string* out) {
  const char type_byte = static_cast<char>(type);
  uint32_t crc = Crc32c(absl::string_view(&type_byte, 1));
  crc = Crc32c(payload, crc);
  char header[kFrameHeaderBytes];
  Store32(header, static_cast<uint32_t>(payload.size()));
  Store32(header + 4, MaskCrc(crc));
  header[8] = type_byte;
  out->append(header, kFrameHeaderBytes);
  out->append(payload.data(), payload.size());
}

bool FrameReader::Next(Frame* frame) {
  if (stop_ != Stop::kNone) return false;
  const size_t left = data_.size() - pos_;
  if (left == 0) {
    stop_ = Stop::kEnd;
    return false;
  }
  if (left < kFrameHeaderBytes) {
    stop_ = Stop::kTorn;
    return false;
  }
  const char* header = data_.data() + pos_;
  const uint32_t length = Load32(header);
  if (length > kMaxFramePayload) {
    stop_ = Stop::kCorrupt;
    return false;
  }
  if (left - kFrameHeaderBytes < length) {
    stop_ = Stop::kTorn;
    return false;
  }
  const absl::string_view payload(header + kFrameHeaderBytes, length);
  uint32_t crc = Crc32c(absl::string_view(header + 8, 1));
  crc = Crc32c(payload, crc);
  if (MaskCrc(crc) != Load32(header + 4)) {
    stop_ = Stop::kCorrupt;
    return false;
  }
  frame->type = static_cast<uint8_t>(header[8]);
  frame->payload = payload;
  frame->offset = pos_;
  pos_ += kFrameHeaderBytes + length;
  return true;
}

const char* StopName(FrameReader::Stop stop) {
  switch (stop) {
    case FrameReader::Stop::kNone:
      return "none";
    case FrameReader::Stop::kEnd:
      return "end";
    case FrameReader::Stop::kTorn:
      return "torn";
    case FrameReader::Stop::kCorrupt:
      return "corrupt";
  }
  return "?";
}

}  // namespace service
}  // namespace cohort
