// cohortd's TLS settings (--tls_cert, --tls_key, --tls_client_ca): checking
// them and turning them into gRPC server credentials.
//
// Used once, by CohortServer::Start, before the server listens. The files
// are read and parsed with OpenSSL's libcrypto first, so that a wrong path, a
// file that is not PEM, an encrypted key or a key that does not belong to the
// certificate stops the start with a message naming the flag and the file,
// instead of gRPC failing to listen without saying why. Certificates are
// read once: to rotate them, restart the server.
//
// Thread safety: every function may be called from any thread.
#ifndef COHORT_SERVICE_API_TLS_H_
#define COHORT_SERVICE_API_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace cohort {
namespace service {

struct ServerTlsOptions {
  // PEM files: the server's certificate chain (leaf first) and its private
  // key (unencrypted). Both set: TLS; both empty: plaintext.
  std::string cert_file;
  std::string key_file;
  // PEM CA certificates. Set: mutual TLS, every client must present a
  // certificate signed by one of them. REQUIRES cert_file and key_file.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// CheckServerTlsOptions()
//
// OK iff the combination of files is allowed: cert and key both or neither,
// and a client CA only with them. INVALID_ARGUMENT naming the flags.
absl::Status CheckServerTlsOptions(const ServerTlsOptions& options);

// ServerCredentialsFor()
//
// Insecure credentials when TLS is off; otherwise SSL credentials from the
// files, after checking them (see the header comment). Errors name the flag
// and the path: "--tls_key: /etc/cohortd/key.pem: ...".
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const ServerTlsOptions& options);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_TLS_H_
