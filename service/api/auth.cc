#include "service/api/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "service/errno_status.h"

namespace cohort {
namespace service {
namespace {

constexpr size_t kDigestBytes = 32;  // SHA-256
constexpr size_t kHexDigits = 2 * kDigestBytes;
// Far more than any generated token needs (`openssl rand -hex 32` is 64),
// small enough that a token always fits in gRPC's metadata limit (8 KiB).
constexpr size_t kMaxTokenBytes = 4096;
// A token file of a million subscribers is about 100 MiB; PEM files are a
// few KiB. The cap only stops a wrong path (a device, a huge log) from
// being read into memory.
constexpr size_t kMaxSecretFileBytes = size_t{256} << 20;

// The raw SHA-256 of `data`. EVP_Digest cannot fail for SHA-256 on a
// working libcrypto; if it ever did, an all-zero digest matches no entry
// (entries are parsed from 64 hex digits, and a zero hash has no preimage
// anyone knows).
std::string Sha256(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(),
                 nullptr) != 1 ||
      size != kDigestBytes) {
    return std::string(kDigestBytes, '\0');
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

absl::Status LineError(absl::string_view file, size_t line,
                       absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", line, ": ", what));
}

// The raw digest from 64 lowercase hex digits; the error never quotes the
// text (an operator may have pasted a token where the hash belongs).
absl::StatusOr<std::string> ParseHash(absl::string_view hex) {
  if (hex.size() != kHexDigits) {
    return absl::InvalidArgumentError(
        absl::StrCat("the hash has ", hex.size(),
                     " characters; a SHA-256 is 64 lowercase hex digits "
                     "(cohort token-hash prints it)"));
  }
  for (char c : hex) {
    if (c >= 'A' && c <= 'F') {
      return absl::InvalidArgumentError(
          "the hash has uppercase hex digits; write it in lowercase");
    }
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError(
          "the hash has a character that is not a hex digit");
    }
  }
  return absl::HexStringToBytes(hex);
}

}  // namespace

absl::string_view RoleName(Role role) {
  return role == Role::kPublisher ? "publisher" : "subscriber";
}

std::string Sha256Hex(absl::string_view data) {
  return absl::BytesToHexString(Sha256(data));
}

bool DigestsEqual(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::Status CheckToken(absl::string_view token) {
  if (token.empty()) return absl::InvalidArgumentError("the token is empty");
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token is longer than ", kMaxTokenBytes, " characters"));
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "the token has a blank, control or non-ASCII character; use "
          "printable ASCII (e.g. openssl rand -hex 32)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
  std::string contents;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return ErrnoStatus(error, absl::StrCat("cannot read ", path));
    }
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > kMaxSecretFileBytes) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": larger than ", kMaxSecretFileBytes >> 20, " MiB"));
    }
  }
  close(fd);
  return contents;
}

std::string TokenLine(Role role, absl::string_view name,
                      absl::string_view token) {
  return absl::StrCat(RoleName(role), " ", name, " ", Sha256Hex(token));
}

absl::StatusOr<TokenStore> TokenStore::Parse(absl::string_view contents,
                                             absl::string_view file) {
  TokenStore store;
  absl::flat_hash_map<std::string, size_t> line_of;  // digest -> line
  size_t number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);  // also a CRLF file's '\r'
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 3) {
      return LineError(file, number,
                       absl::StrCat("expected 3 fields (subscriber|publisher "
                                    "NAME SHA256HEX), found ",
                                    fields.size()));
    }
    Principal principal;
    if (fields[0] == "subscriber") {
      principal.role = Role::kSubscriber;
    } else if (fields[0] == "publisher") {
      principal.role = Role::kPublisher;
    } else {
      return LineError(file, number,
                       "the first field must be subscriber or publisher");
    }
    for (char c : fields[1]) {
      if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
        return LineError(file, number, "the name has a control character");
      }
    }
    principal.name = std::string(fields[1]);
    absl::StatusOr<std::string> digest = ParseHash(fields[2]);
    if (!digest.ok()) return LineError(file, number, digest.status().message());
    const auto [earlier, added] = line_of.emplace(*digest, number);
    if (!added) {
      return LineError(file, number,
                       absl::StrCat("the same hash as line ", earlier->second,
                                    "; every token must be different"));
    }
    ++(principal.role == Role::kPublisher ? store.publisher_tokens_
                                          : store.subscriber_tokens_);
    store.by_digest_.emplace(*std::move(digest), std::move(principal));
  }
  if (store.by_digest_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file,
                     ": no subscriber or publisher lines; every token would be "
                     "refused"));
  }
  return store;
}

absl::StatusOr<TokenStore> TokenStore::Load(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadSecretFile(path);
  if (!contents.ok()) return contents.status();
  return Parse(*contents, path);
}

const Principal* TokenStore::Find(absl::string_view token) const {
  const auto it = by_digest_.find(Sha256(token));
  return it == by_digest_.end() ? nullptr : &it->second;
}

}  // namespace service
}  // namespace cohort
