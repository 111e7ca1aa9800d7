// Bearer tokens for cohortd (--auth_tokens): the token file, and who a token
// presented by a client is.
//
// The front stage (auth_service.h) reads the token a call carries in its
// `authorization: Bearer <token>` metadata and asks the TokenStore whose it
// is: a subscriber's (who may then Subscribe, Listen and Unsubscribe as that
// subscriber only) or a publisher's (who may publish when the file has
// publisher lines). The server never stores a token, only the SHA-256 of each
// one, and never prints a token or a hash: errors name the file and line.
//
// Token file format, one entry per line:
//
//   # comment (a line whose first non-blank character is '#')
//   subscriber alice 2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f...
//   publisher  feed  81b637d8fcd2c6da6359e6963113a1170de795e4b725b84d...
//
// (each hash is 64 hex digits; cut short here).
//
// Fields are separated by blanks (spaces or tabs): the kind (`subscriber` or
// `publisher`), a name (a subscriber's name as Subscribe and Listen use it;
// for a publisher just a label) and the lowercase hex SHA-256 of the token
// (`cohort token-hash` prints such a line). A name may have several tokens
// (to rotate one: add the new line and restart, move clients over, remove
// the old line and restart); a token (hash) may appear only once.
//
// Lookup hashes the presented token and finds the hash in a hash table whose
// key comparison is CRYPTO_memcmp (constant time); the table is keyed by the
// hash, not the token, so its probe sequence tells an attacker nothing about
// stored tokens.
//
// Thread safety: a TokenStore is immutable once built; Find may be called
// from any thread at once.
#ifndef COHORT_SERVICE_API_AUTH_H_
#define COHORT_SERVICE_API_AUTH_H_

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

enum class Role { kSubscriber, kPublisher };

// "subscriber" or "publisher".
absl::string_view RoleName(Role role);

// Whose a token is.
struct Principal {
  Role role = Role::kSubscriber;
  std::string name;
};

// Sha256Hex()
//
// The SHA-256 of `data` as 64 lowercase hex digits (OpenSSL's libcrypto).
std::string Sha256Hex(absl::string_view data);

// DigestsEqual()
//
// True iff `a` == `b`, in time that depends only on their lengths
// (CRYPTO_memcmp).
bool DigestsEqual(absl::string_view a, absl::string_view b);

// CheckToken()
//
// OK iff `token` can travel as gRPC metadata and be written in a file: 1 to
// 4096 printable ASCII characters without blanks. The error never contains
// the token.
absl::Status CheckToken(absl::string_view token);

// ReadSecretFile()
//
// The contents of `path`, a token file or a PEM file of at most 256 MiB.
// Errors name the path and the system's reason, never the contents.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

// TokenLine()
//
// The token file line for `token`: "<kind> <name> <sha256hex>". REQUIRES:
// CheckToken(token) and a name without blanks or control characters.
std::string TokenLine(Role role, absl::string_view name,
                      absl::string_view token);

class TokenStore {
 public:
  // Parse()
  //
  // Builds the store from a token file's `contents`. `file` names it in
  // errors: INVALID_ARGUMENT "<file>:<line>: <what is wrong>" for a line that
  // is not `kind name hash` (wrong field count, unknown kind, a name with
  // control characters, a hash that is not 64 lowercase hex digits, a hash
  // already on an earlier line), and for a file without any entry.
  static absl::StatusOr<TokenStore> Parse(absl::string_view contents,
                                          absl::string_view file);

  // Load()
  //
  // Reads `path` and parses it; a file that cannot be read is an error
  // naming the path and the system's reason.
  static absl::StatusOr<TokenStore> Load(const std::string& path);

  // Find()
  //
  // Whose `token` is, or null if it is not in the file. The pointer stays
  // valid as long as the store.
  const Principal* Find(absl::string_view token) const;

  // True iff the file has a publisher line: then Publish and PublishStream
  // need a publisher's token.
  bool publishing_needs_token() const { return publisher_tokens_ > 0; }
  size_t subscriber_tokens() const { return subscriber_tokens_; }
  size_t publisher_tokens() const { return publisher_tokens_; }

 private:
  // Map equality: the stored and the presented digest compared in constant
  // time.
  struct DigestEq {
    bool operator()(const std::string& a, const std::string& b) const {
      return DigestsEqual(a, b);
    }
  };

  TokenStore() = default;

  // Raw 32-byte SHA-256 -> principal.
  absl::flat_hash_map<std::string, Principal, absl::Hash<std::string>, DigestEq>
      by_digest_;
  size_t subscriber_tokens_ = 0;
  size_t publisher_tokens_ = 0;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_AUTH_H_
