// A small, self-contained SHA-256 (FIPS 180-4) used to fingerprint workload
// files: every benchmark report repeats the SHA-256 of the workload text so
// results taken on different machines can be tied to the same input.
//
// Stage: tools only (bench/); not on any serving path. It is not hardened
// against side channels and must not be used for anything secret.
//
// Thread safety: a `Sha256` object is not thread-safe; use one per thread.
//
// Example:
//   Sha256 hash;
//   hash.Update("ab");
//   hash.Update("c");
//   std::string hex = hash.HexFinal();  // == Sha256Hex("abc")
#ifndef COHORT_BENCH_SHA256_H_
#define COHORT_BENCH_SHA256_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cohort {
namespace bench {

// Incremental SHA-256: feed bytes with `Update` any number of times, then
// call `Final` (or `HexFinal`) exactly once.
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();

  // Update() appends `data` to the message. REQUIRES: Final() not called yet.
  void Update(absl::string_view data);

  // Final() pads the message and returns its digest. The object must not be
  // used afterwards (except to destroy it).
  Digest Final();

  // HexFinal() is Final() as 64 lowercase hex digits.
  std::string HexFinal();

  // Total number of bytes passed to Update() so far.
  uint64_t bytes() const { return total_bytes_; }

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;  // bytes in buffer_, always < 64 between calls
  uint64_t total_bytes_ = 0;
};

// Sha256Hex() returns the SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

// DigestToHex() formats a digest as 64 lowercase hex digits.
std::string DigestToHex(const Sha256::Digest& digest);

}  // namespace bench
}  // namespace cohort

#endif  // COHORT_BENCH_SHA256_H_
