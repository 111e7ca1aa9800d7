// Decodes a fuzzer's input bytes into the choices a fuzz target makes
// (tools/fuzz/README.md). Every read succeeds: past the end of the input a
// reader yields zeros and empty strings, so a target never needs to check
// lengths, and a short input simply ends the decoded sequence (`empty()`).
//
// Used by the libFuzzer targets in matcher/, service/ and client/; works the
// same whether the target is built with libFuzzer or with the corpus replay
// main (replay_main.cc), so a crash input reproduces under either.
//
// Thread safety: none; one reader per input.
#ifndef COHORT_TOOLS_FUZZ_BYTE_READER_H_
#define COHORT_TOOLS_FUZZ_BYTE_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cohort {
namespace fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size)
      : data_(reinterpret_cast<const char*>(data)), size_(size) {}
  explicit ByteReader(absl::string_view data)
      : data_(data.data()), size_(data.size()) {}

  // True once every byte has been read.
  bool empty() const { return pos_ >= size_; }
  size_t remaining() const { return empty() ? 0 : size_ - pos_; }

  uint8_t Byte() { return empty() ? 0 : static_cast<uint8_t>(data_[pos_++]); }

  // A value in [0, n) from one byte (two when n > 256). REQUIRES: n > 0.
  uint32_t Below(uint32_t n) {
    uint32_t v = Byte();
    if (n > 256) v = (v << 8) | Byte();
    return v % n;
  }

  // Little-endian integer of `bytes` bytes (1 to 8), sign-extended.
  int64_t Signed(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{Byte()} << (8 * i);
    const int shift = 64 - 8 * bytes;
    return static_cast<int64_t>(v << shift) >> shift;
  }

  // The next `n` bytes (fewer at the end of the input).
  absl::string_view Bytes(size_t n) {
    if (n > remaining()) n = remaining();
    absl::string_view out(data_ + pos_, n);
    pos_ += n;
    return out;
  }

  // Everything not read yet.
  absl::string_view Rest() { return Bytes(remaining()); }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace fuzz
}  // namespace cohort

#endif  // COHORT_TOOLS_FUZZ_BYTE_READER_H_
