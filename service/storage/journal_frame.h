// The journal's on-disk framing (docs/DESIGN.md section 7): a journal file is a
// sequence of frames, each
//
//   uint32 length   payload bytes, little endian
//   uint32 crc      CRC-32C (Castagnoli) of the type byte and the payload,
//                   masked (see MaskCrc), little endian
//   uint8  type     what the payload holds (the journal's record kinds)
//   payload         `length` bytes
//
// A crash can leave the last frame torn (its header or payload cut short)
// or, if the disk reorders writes, garbage after the last durable frame.
// FrameReader therefore stops at the first frame that is incomplete or fails
// its checksum and reports how many bytes from there on it did not accept;
// it never yields a frame that was not written whole. Frames are limited to
// kMaxFramePayload bytes, so a corrupt length cannot make the reader claim
// (or a writer emit) an absurd frame.
//
// Pure functions and a read-only cursor; no I/O, no threads.
#ifndef COHORT_SERVICE_STORAGE_JOURNAL_FRAME_H_
#define COHORT_SERVICE_STORAGE_JOURNAL_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

inline constexpr size_t kFrameHeaderBytes = 9;
inline constexpr uint32_t kMaxFramePayload = 64u << 20;  // 64 MiB

// CRC-32C of `data`, continuing from `crc` (0 to start). On x86-64 with
// SSE4.2 (checked once at start) the crc32 instruction computes it, else a
// table does; both give the same value.
uint32_t Crc32c(absl::string_view data, uint32_t crc = 0);

namespace internal {
// The table's CRC-32C, and whether Crc32c uses the instruction instead
// (for journal_frame_test, which compares the two).
uint32_t Crc32cPortable(absl::string_view data, uint32_t crc = 0);
bool Crc32cIsHardware();
}  // namespace internal

// Stored checksums are masked, as LevelDB does, so that a frame whose
// payload embeds frames (a snapshot of journal bytes) does not checksum to
// itself by accident.
inline uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// Little-endian fixed-width integers: the encoding of every integer in
// frame headers, journal records and snapshots.
inline void PutFixed(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}
inline void PutFixed32(uint32_t v, std::string* out) { PutFixed(v, 4, out); }
inline void PutFixed64(uint64_t v, std::string* out) { PutFixed(v, 8, out); }
// Reads `bytes` (at most 8) bytes at p. REQUIRES: they exist.
inline uint64_t LoadFixed(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  }
  return v;
}

// Appends one frame to *out. REQUIRES: payload.size() <= kMaxFramePayload.
void AppendFrame(uint8_t type, absl::string_view payload, std::string* out);

struct Frame {
  uint8_t type = 0;
  absl::string_view payload;  // points into the reader's data
  size_t offset = 0;          // where the frame starts in the data
};

// Reads frames from a byte range (e.g. a journal file read into memory).
class FrameReader {
 public:
  enum class Stop {
    kNone,       // still reading
    kEnd,        // the data ended exactly after a whole frame
    kTorn,       // the last frame is incomplete (header or payload cut)
    kCorrupt,    // a frame failed its checksum or has an impossible length
  };

  explicit FrameReader(absl::string_view data) : data_(data) {}

  // Sets *frame to the next whole, checksummed frame and returns true, or
  // returns false and records why in stop().
  bool Next(Frame* frame);

  Stop stop() const { return stop_; }
  // Bytes of whole frames accepted so far: the length a recovering writer
  // should truncate the file to.
  size_t valid_bytes() const { return pos_; }
  // Bytes after the last accepted frame (0 unless stopped torn or corrupt).
  size_t discarded_bytes() const {
    return stop_ == Stop::kNone ? 0 : data_.size() - pos_;
  }

 private:
  absl::string_view data_;
  size_t pos_ = 0;
  Stop stop_ = Stop::kNone;
};

// "end", "torn" or "corrupt" (for messages).
const char* StopName(FrameReader::Stop stop);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_JOURNAL_FRAME_H_
