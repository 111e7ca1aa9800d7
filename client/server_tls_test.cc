// End-to-end tests of cohortd's TLS (--tls_cert, --tls_key, --tls_client_ca)
// through a real server on 127.0.0.1 and the client library: a client that
// trusts the server's CA is served; a plaintext client, a client trusting
// another CA and (with mutual TLS) a client without a certificate from the
// right CA are not. Also the startup checks of the files, and
// IsLoopbackListen. The files are service/api/testdata/tls (make_certs.sh).
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "service/api/auth.h"
#include "service/api/server.h"
#include "service/api/server_test_util.h"
#include "service/api/tls.h"

namespace cohort {
namespace service {
namespace {

using client::Client;
using client::ClientOptions;
using ::testing::HasSubstr;
using testing::StartServer;

std::string TlsPath(const std::string& name) {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/",
                      std::getenv("TEST_WORKSPACE"), "/service/api/testdata/tls/",
                      name);
}

std::string Pem(const std::string& name) {
  absl::StatusOr<std::string> pem = ReadSecretFile(TlsPath(name));
  EXPECT_TRUE(pem.ok()) << pem.status();
  return pem.ok() ? *pem : "";
}

ServerOptions TlsOptions(bool mutual) {
  ServerOptions options = testing::LocalServerOptions();
  options.tls.cert_file = TlsPath("server.pem");
  options.tls.key_file = TlsPath("server.key");
  if (mutual) options.tls.client_ca_file = TlsPath("ca.pem");
  return options;
}

// How a test client connects: plaintext, or TLS trusting `ca`, with the
// client certificate `cert` (and its key) if set.
struct ClientTls {
  bool tls = true;
  std::string ca = "ca.pem";
  std::string cert;  // "client" -> client.pem + client.key
  // The name to expect in the server's certificate instead of 127.0.0.1
  // (the tests do not resolve "localhost": c-ares leaks a few bytes per
  // process, which LeakSanitizer reports).
  std::string server_name;
};

absl::StatusOr<std::unique_ptr<Client>> Connect(const CohortServer& server,
                                                const ClientTls& how) {
  ClientOptions options;
  options.target = absl::StrCat("127.0.0.1:", server.port());
  // Long enough for ASan, short enough that a refusal is quick: a failed
  // handshake is reported as soon as it fails, not at the deadline.
  options.deadline = absl::Seconds(10);
  options.security.tls = how.tls;
  options.security.tls_server_name = how.server_name;
  if (how.tls) options.security.tls_ca_pem = Pem(how.ca);
  if (!how.cert.empty()) {
    options.security.tls_cert_pem = Pem(how.cert + ".pem");
    options.security.tls_key_pem = Pem(how.cert + ".key");
  }
  return Client::Connect(options);
}

// Connects and makes one call of each kind that matters here.
absl::Status SubscribeAndPublish(const CohortServer& server,
                                 const ClientTls& how) {
  absl::StatusOr<std::unique_ptr<Client>> client = Connect(server, how);
  if (!client.ok()) return client.status();
  v1::SubscriptionSpec spec;
  spec.set_subscriber("tls");
  v1::Predicate* p = spec.add_predicates();
  p->set_attribute("key");
  p->set_op(v1::OP_EQ);
  p->set_value(1);
  absl::StatusOr<std::vector<uint64_t>> ids = (*client)->Subscribe({spec});
  if (!ids.ok()) return ids.status();
  absl::StatusOr<v1::PublishResponse> response =
      (*client)->Publish(testing::KeyEvent(1));
  if (!response.ok()) return response.status();
  if (response->results(0).match_count() < 1) {
    return absl::InternalError("the subscription did not match");
  }
  return absl::OkStatus();
}

TEST(ServerTls, ServesClientsThatTrustItsCa) {
  std::unique_ptr<CohortServer> server = StartServer(TlsOptions(false));
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->security_summary(), "TLS on, auth off");
  EXPECT_TRUE(SubscribeAndPublish(*server, ClientTls{}).ok());
  // By name too: the certificate has localhost and 127.0.0.1...
  ClientTls by_name;
  by_name.server_name = "localhost";
  EXPECT_TRUE(SubscribeAndPublish(*server, by_name).ok());
  // ...and no other name.
  ClientTls wrong_name;
  wrong_name.server_name = "cohort.example.com";
  EXPECT_EQ(SubscribeAndPublish(*server, wrong_name).code(),
            absl::StatusCode::kUnavailable);
  // A client certificate is not asked for, and does no harm.
  ClientTls with_cert;
  with_cert.cert = "client";
  EXPECT_TRUE(SubscribeAndPublish(*server, with_cert).ok());
}

TEST(ServerTls, RefusesPlaintextAndUntrustingClients) {
  std::unique_ptr<CohortServer> server = StartServer(TlsOptions(false));
  ASSERT_NE(server, nullptr);
  ClientTls plaintext;
  plaintext.tls = false;
  absl::Status status = SubscribeAndPublish(*server, plaintext);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("or it wants TLS?"));

  ClientTls other_ca;
  other_ca.ca = "other_ca.pem";
  status = SubscribeAndPublish(*server, other_ca);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("TLS handshake failed"));

  // A raw plaintext call (no Connect in front) fails too.
  testing::Client raw(server->port());
  grpc::ClientContext context;
  testing::SetDeadline(&context, 5);
  v1::Stats stats;
  EXPECT_FALSE(
      raw.stub()->GetStats(&context, v1::GetStatsRequest(), &stats).ok());
  v1::Stats server_stats;
  server->FillStats(&server_stats);
  EXPECT_EQ(server_stats.subscriptions(), 0u);
}

TEST(ServerTls, MutualTlsNeedsAClientCertificateFromItsCa) {
  std::unique_ptr<CohortServer> server = StartServer(TlsOptions(true));
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->security_summary(), "mTLS on, auth off");

  absl::Status status = SubscribeAndPublish(*server, ClientTls{});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;

  ClientTls other_client;
  other_client.cert = "other_client";
  status = SubscribeAndPublish(*server, other_client);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;

  v1::Stats stats;
  server->FillStats(&stats);
  EXPECT_EQ(stats.subscriptions(), 0u);

  ClientTls good;
  good.cert = "client";
  status = SubscribeAndPublish(*server, good);
  EXPECT_TRUE(status.ok()) << status;
  server->FillStats(&stats);
  EXPECT_EQ(stats.subscriptions(), 1u);
}

TEST(ServerTls, TokensWorkOverTls) {
  const std::string tokens =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/tls-tokens.txt");
  std::ofstream(tokens) << TokenLine(Role::kSubscriber, "tls", "tls-token")
                        << "\n";
  ServerOptions options = TlsOptions(false);
  options.auth_tokens_file = tokens;
  std::unique_ptr<CohortServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->security_summary(),
            "TLS on, auth on (1 subscriber tokens, 0 publisher tokens)");
  ClientOptions client_options;
  client_options.target = absl::StrCat("127.0.0.1:", server->port());
  client_options.security.tls = true;
  client_options.security.tls_ca_pem = Pem("ca.pem");
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  v1::SubscriptionSpec spec;
  spec.set_subscriber("tls");
  v1::Predicate* p = spec.add_predicates();
  p->set_attribute("key");
  p->set_op(v1::OP_EQ);
  EXPECT_EQ((*client)->Subscribe({spec}).status().code(),
            absl::StatusCode::kUnauthenticated);
  client_options.security.token = "tls-token";
  client = Client::Connect(client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<uint64_t>> ids = (*client)->Subscribe({spec});
  EXPECT_TRUE(ids.ok()) << ids.status();
}

struct BadTls {
  std::string cert, key, client_ca;
  absl::StatusCode code;
  std::string message;  // must occur in the error
};

TEST(ServerTls, BadFilesStopTheStartNamingTheFlag) {
  const std::string missing =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/missing.pem");
  const std::string server_pem = TlsPath("server.pem");
  const std::string server_key = TlsPath("server.key");
  const std::string not_pem =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/not.pem");
  std::ofstream(not_pem) << "not a certificate\n";
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const BadTls cases[] = {
      {server_pem, "", "", kInvalid, "--tls_cert needs --tls_key"},
      {"", server_key, "", kInvalid, "--tls_key needs --tls_cert"},
      {"", "", TlsPath("ca.pem"), kInvalid,
       "--tls_client_ca needs --tls_cert and --tls_key"},
      {missing, server_key, "", absl::StatusCode::kNotFound,
       absl::StrCat("--tls_cert: cannot read ", missing)},
      {server_pem, missing, "", absl::StatusCode::kNotFound,
       absl::StrCat("--tls_key: cannot read ", missing)},
      {server_pem, server_key, missing, absl::StatusCode::kNotFound,
       absl::StrCat("--tls_client_ca: cannot read ", missing)},
      {server_key, server_key, "", kInvalid,
       absl::StrCat("--tls_cert: ", server_key, ": no PEM certificate")},
      {server_pem, server_pem, "", kInvalid,
       absl::StrCat("--tls_key: ", server_pem,
                    ": no unencrypted PEM private key")},
      {server_pem, TlsPath("client.key"), "", kInvalid,
       absl::StrCat("--tls_key: ", TlsPath("client.key"),
                    ": not the private key of the certificate in "
                    "--tls_cert=",
                    server_pem)},
      {server_pem, server_key, not_pem, kInvalid,
       absl::StrCat("--tls_client_ca: ", not_pem, ": no PEM certificate")},
  };
  for (const BadTls& c : cases) {
    ServerOptions options = testing::LocalServerOptions();
    options.tls.cert_file = c.cert;
    options.tls.key_file = c.key;
    options.tls.client_ca_file = c.client_ca;
    absl::StatusOr<std::unique_ptr<CohortServer>> server =
        CohortServer::Start(options);
    ASSERT_FALSE(server.ok()) << c.message;
    EXPECT_EQ(server.status().code(), c.code) << server.status();
    EXPECT_THAT(server.status().message(), HasSubstr(c.message));
  }
}

TEST(IsLoopbackListen, OnlyLocalAddresses) {
  for (const char* local :
       {"127.0.0.1:50051", "127.0.0.1:0", "127.1.2.3:80", "localhost:50051",
        "LOCALHOST:1", "[::1]:50051", "unix:/run/cohortd.sock",
        "unix-abstract:cohortd"}) {
    EXPECT_TRUE(IsLoopbackListen(local)) << local;
  }
  for (const char* remote :
       {"0.0.0.0:50051", "[::]:50051", ":50051", "10.0.0.5:50051",
        "128.0.0.1:1", "127.0.0:1", "127.0.0.256:1", "example.com:50051",
        "[::2]:1", "localhost.example.com:1"}) {
    EXPECT_FALSE(IsLoopbackListen(remote)) << remote;
  }
}

}  // namespace
}  // namespace service
}  // namespace cohort
