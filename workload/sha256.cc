#include "workload/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

#include "absl/strings/escaping.h"

namespace cohort {
namespace workload {

// Owns the EVP_MD_CTX; an allocation failure or a failed init is not
// recoverable for a fingerprint, so it aborts.
struct Sha256::Context {
  Context() : ctx(EVP_MD_CTX_new()) {
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      std::abort();
    }
  }
  ~Context() { EVP_MD_CTX_free(ctx); }
  EVP_MD_CTX* ctx;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {}

Sha256::~Sha256() = default;

void Sha256::Update(absl::string_view data) {
  if (EVP_DigestUpdate(context_->ctx, data.data(), data.size()) != 1) {
    std::abort();
  }
  total_bytes_ += data.size();
}

std::string Sha256::HexFinal() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_->ctx, digest, &size) != 1) std::abort();
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

std::string Sha256Hex(absl::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.HexFinal();
}

}  // namespace workload
}  // namespace cohort
