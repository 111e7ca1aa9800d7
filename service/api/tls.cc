#include "service/api/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "service/api/auth.h"

namespace cohort {
namespace service {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// OpenSSL's default asks for a passphrase on the terminal; a server must
// fail instead.
int NoPassphrase(char*, int, int, void*) { return 0; }

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of `pem`, or null.
X509Ptr FirstCertificate(const std::string& pem) {
  BioPtr bio = MemoryBio(pem);
  if (bio == nullptr) return nullptr;
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
}

absl::Status FileError(absl::string_view flag, absl::string_view path,
                       absl::string_view what) {
  // The failed parse left errors in OpenSSL's thread-local queue; gRPC's
  // own TLS code on this thread must not find them later.
  ERR_clear_error();
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, ": ", what));
}

// The contents of `path`, with the flag named in the error.
absl::StatusOr<std::string> ReadPem(absl::string_view flag,
                                    const std::string& path) {
  absl::StatusOr<std::string> pem = ReadSecretFile(path);
  if (!pem.ok()) {
    return absl::Status(pem.status().code(),
                        absl::StrCat(flag, ": ", pem.status().message()));
  }
  return pem;
}

// Checks that `cert` and `key` are PEM and belong together.
absl::Status CheckPair(const ServerTlsOptions& options, const std::string& cert,
                       const std::string& key) {
  X509Ptr x509 = FirstCertificate(cert);
  if (x509 == nullptr) {
    return FileError("--tls_cert", options.cert_file,
                     "no PEM certificate (-----BEGIN CERTIFICATE-----) in it");
  }
  BioPtr bio = MemoryBio(key);
  PkeyPtr pkey(bio == nullptr ? nullptr
                              : PEM_read_bio_PrivateKey(bio.get(), nullptr,
                                                        NoPassphrase, nullptr));
  if (pkey == nullptr) {
    return FileError("--tls_key", options.key_file,
                     "no unencrypted PEM private key in it");
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return FileError("--tls_key", options.key_file,
                     absl::StrCat("not the private key of the certificate in "
                                  "--tls_cert=",
                                  options.cert_file));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckServerTlsOptions(const ServerTlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        options.cert_file.empty()
            ? "--tls_key needs --tls_cert (the certificate for the key)"
            : "--tls_cert needs --tls_key (the certificate's private key)");
  }
  if (!options.client_ca_file.empty() && !options.enabled()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca needs --tls_cert and --tls_key (client certificates "
        "are checked only over TLS)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerTlsOptions& options) {
  if (absl::Status status = CheckServerTlsOptions(options); !status.ok()) {
    return status;
  }
  if (!options.enabled()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadPem("--tls_cert", options.cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls_key", options.key_file);
  if (!key.ok()) return key.status();
  if (absl::Status status = CheckPair(options, *cert, *key); !status.ok()) {
    return status;
  }
  grpc::SslServerCredentialsOptions ssl(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!options.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadPem("--tls_client_ca", options.client_ca_file);
    if (!ca.ok()) return ca.status();
    if (FirstCertificate(*ca) == nullptr) {
      return FileError("--tls_client_ca", options.client_ca_file,
                       "no PEM certificate (-----BEGIN CERTIFICATE-----) in "
                       "it");
    }
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    ssl.pem_root_certs = *std::move(ca);
  }
  ssl.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace service
}  // namespace cohort
