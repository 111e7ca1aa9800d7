// SHA-256 fingerprints of workload files, computed by OpenSSL's libcrypto
// (the same library the server's --auth_tokens hashes tokens with): every
// benchmark report repeats the SHA-256 of the workload text so results taken
// on different machines can be tied to the same input.
//
// Stage: tools only; not on any serving path.
//
// Thread safety: a `Sha256` object is not thread-safe; use one per thread.
//
// Example:
//   Sha256 hash;
//   hash.Update("ab");
//   hash.Update("c");
//   std::string hex = hash.HexFinal();  // == Sha256Hex("abc")
#ifndef COHORT_WORKLOAD_SHA256_H_
#define COHORT_WORKLOAD_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace cohort {
namespace workload {

// Incremental SHA-256: feed bytes with `Update` any number of times, then
// call `HexFinal` exactly once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Update() appends `data` to the message. REQUIRES: HexFinal() not called
  // yet.
  void Update(absl::string_view data);

  // HexFinal() pads the message and returns its digest as 64 lowercase hex
  // digits. The object must not be used afterwards (except to destroy it).
  std::string HexFinal();

  // Total number of bytes passed to Update() so far.
  uint64_t bytes() const { return total_bytes_; }

 private:
  struct Context;  // OpenSSL's EVP_MD_CTX
  std::unique_ptr<Context> context_;
  uint64_t total_bytes_ = 0;
};

// Sha256Hex() returns the SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

}  // namespace workload
}  // namespace cohort

#endif  // COHORT_WORKLOAD_SHA256_H_
