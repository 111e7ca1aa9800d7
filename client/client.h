// The C++ client library for cohort.v1.PubSub (proto/cohort/v1/pubsub.proto):
// what applications and the `cohort` CLI use to talk to cohortd.
//
// A Client owns one gRPC channel to one server and offers blocking calls
// (Subscribe, Unsubscribe, Publish, Stats, ParseFilter) plus two long-lived
// streams: a Publisher (PublishStream, with a bounded number of requests
// outstanding) and a Listening (Listen, delivering events to a callback).
// Errors are the server's gRPC status converted to absl::Status with the
// same code and message (see the error list at the top of pubsub.proto).
//
// Security: ClientOptions::security turns on TLS (verifying the server's
// certificate, optionally presenting a client certificate for mutual TLS)
// and a bearer token, which every call and stream carries as the metadata
// "authorization: Bearer <token>" (cohortd --auth_tokens). Without TLS the
// token crosses the network in plaintext: use it without TLS only on
// loopback.
//
// Deadlines and retries: every blocking call carries ClientOptions::deadline.
// Stats and ParseFilter, which change nothing, are retried (on UNAVAILABLE,
// a few times with a short backoff). Against a single node, Subscribe,
// Unsubscribe and Publish are never retried, since a call that timed out may
// still have been applied.
//
// Clusters (docs/DESIGN.md section 11): a target of several addresses
// ("127.0.0.1:50051,127.0.0.1:50052") or a DNS name ("dns:///cohort:50051")
// spreads calls over the nodes with gRPC's round_robin policy, skipping
// nodes whose health is NOT_SERVING. With such a target, Subscribe and
// Unsubscribe carry a request_id and are retried on UNAVAILABLE (on another
// node): the log applies a retried request once. Publish is retried only
// when a node refused it before matching anything (UNAVAILABLE "not
// serving"). The client remembers the highest log position its Subscribes
// and Unsubscribes were answered with and sends it with every Publish
// (min_log_position), so it reads its own writes on any node.
//
//   absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect({});
//   if (!client.ok()) return client.status();
//   absl::StatusOr<std::vector<uint64_t>> ids = (*client)->Subscribe(specs);
//   absl::StatusOr<v1::PublishResponse> r = (*client)->Publish(request);
//
// Thread safety: a Client may be used by several threads at once. A
// Publisher's Publish and Finish may be called from any threads; a
// Listening's Stop and Wait too. Callbacks (a Publisher's `done`, a
// Listening's `on_delivery`) run on gRPC's threads (rarely inline, inside
// the stream's own Publish or Finish), one at a time per stream; they must
// not block, must not call that stream's Publish, Finish or Wait,
// and must not destroy the stream, the Client, or any other Publisher or
// Listening of it. Calls on the Client from a callback would block a gRPC
// thread: avoid them too.
//
// Lifetime: the Client must outlive every Publisher and Listening it opened.
// Destroy those, and the Client, on the application's own threads (never in
// a callback): the channel's last reference must not be dropped on a gRPC
// callback thread.
#ifndef COHORT_CLIENT_CLIENT_H_
#define COHORT_CLIENT_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"

namespace cohort {
namespace client {

// TLS and the bearer token. Contents, not file names: the `cohort` CLI reads
// its --tls_ca, --tls_cert, --tls_key and --token_file into these.
struct ClientSecurity {
  // TLS on: the server's certificate must chain to `tls_ca_pem` (empty: the
  // system's root certificates) and name the target's host (or
  // `tls_server_name`). Off: plaintext.
  bool tls = false;
  std::string tls_ca_pem;
  // Mutual TLS: the client's certificate chain and private key, PEM; both or
  // neither. REQUIRES tls.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // The name the server's certificate must carry instead of the target's
  // host (tests, or a server reached through an address not in its
  // certificate). REQUIRES tls.
  std::string tls_server_name;
  // Sent with every call as "authorization: Bearer <token>"; empty: none.
  // 1 to 4096 printable ASCII characters without blanks.
  std::string token;
};

// CheckSecurity() is OK iff `security` is usable: the REQUIRES above and a
// well-formed token. INVALID_ARGUMENT naming the field otherwise (never the
// token).
absl::Status CheckSecurity(const ClientSecurity& security);

// NewSecureChannel() creates a channel to `target` with `security`'s
// credentials (insecure ones without TLS) and `args` (plus the TLS name
// override). REQUIRES: CheckSecurity(security) is OK.
std::shared_ptr<grpc::Channel> NewSecureChannel(const std::string& target,
                                                const ClientSecurity& security,
                                                grpc::ChannelArguments args);

// AddToken() adds `security`'s token, if any, to the metadata of the call
// `context` will make; every call made with a context of its own (stub()
// users, the load driver) needs it.
void AddToken(const ClientSecurity& security, grpc::ClientContext* context);

struct ClientOptions {
  // The server's address, host:port (any gRPC target string), or a cluster:
  // several IP host:port addresses, comma separated, or dns:///NAME:PORT.
  std::string target = "127.0.0.1:50051";
  // Deadline of each blocking call, and how long Connect waits. > 0.
  absl::Duration deadline = absl::Seconds(10);
  // Specs per Subscribe request and ids per Unsubscribe request; at most the
  // server's --max_batch (default 10000). >= 1.
  size_t subscribe_batch = 5000;
  // Publisher: requests sent on its stream and not yet answered. >= 1.
  int max_in_flight = 8;
  // TLS and the bearer token (off and none by default).
  ClientSecurity security;
};

// FromGrpc() converts a gRPC status to an absl::Status with the same code
// (gRPC and Abseil number their codes alike) and message.
absl::Status FromGrpc(const grpc::Status& status);

class Client {
 public:
  // Connect() checks `options`, creates the channel and waits for it to be
  // ready. Returns INVALID_ARGUMENT for bad options, and UNAVAILABLE naming
  // the target if the channel is not ready within options.deadline, or as
  // soon as the connection attempt fails (e.g. refused): it does not wait
  // for gRPC's reconnection backoff.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  // Subscribe() adds `specs` in requests of options.subscribe_batch specs,
  // one after another; each request is all-or-nothing on the server. Returns
  // the new ids, one per spec, in order. When a request fails, returns its
  // error; if `specs` needed more than one request, the message says which
  // request failed (the server's field indexes count from that request's
  // first spec) and how many subscriptions the earlier requests created:
  // those stay. An empty `specs` sends nothing.
  absl::StatusOr<std::vector<uint64_t>> Subscribe(
      absl::Span<const v1::SubscriptionSpec> specs);

  // Unsubscribe() removes the subscriptions `ids`, in requests of
  // options.subscribe_batch ids (each all-or-nothing). An unknown id fails
  // its request with NOT_FOUND; errors are reported as for Subscribe
  // (removals by earlier requests stay).
  absl::Status Unsubscribe(absl::Span<const uint64_t> ids);

  // Publish() matches and publishes `request` with one unary call.
  absl::StatusOr<v1::PublishResponse> Publish(
      const v1::PublishRequest& request);

  // Stats() returns the server's counters and stage profile. Retried (up to
  // 3 attempts, short backoff) on UNAVAILABLE, all within options.deadline.
  absl::StatusOr<v1::Stats> Stats();

  // ParseFilterSpec() parses `filter`, written in the CLI's grammar
  // (parse.h) or an Event Ruler pattern (pattern.h), on the server (rpc
  // ParseFilter), checked against the server's limits: a SubscriptionSpec
  // with its predicates and "or" groups (any_of), the subscriber left empty.
  // Retried as Stats is.
  absl::StatusOr<v1::SubscriptionSpec> ParseFilterSpec(
      const std::string& filter);

  // ParseFilter() is ParseFilterSpec() for a caller that takes predicates
  // only: a filter with "or" (the server answers any_of) is
  // INVALID_ARGUMENT, rather than its groups dropped.
  absl::StatusOr<std::vector<v1::Predicate>> ParseFilter(
      const std::string& filter);

  // A stream of PublishRequests (rpc PublishStream). Obtain with
  // OpenPublisher(); the Client must outlive it.
  class Publisher {
   public:
    using DoneCallback =
        std::function<void(absl::StatusOr<v1::PublishResponse>)>;

    // Destroying a Publisher that was not finished cancels its stream; the
    // `done` callbacks of unanswered requests are called (with CANCELLED)
    // before the destructor returns.
    virtual ~Publisher() = default;

    // Publish() sends `request` and returns at once, unless max_in_flight
    // requests are unanswered: then it blocks until one is answered. On OK,
    // `done` (may be empty) is called exactly once, on a gRPC thread, with
    // the response, or with the stream's error if the stream ends before the
    // answer (INTERNAL if it ended with OK); calls to `done` follow request
    // order. On error `done` is never called: FAILED_PRECONDITION after
    // Finish(), or the stream's final status once it has ended.
    virtual absl::Status Publish(v1::PublishRequest request,
                                 DoneCallback done) = 0;

    // Finish() half-closes the stream after the requests already accepted,
    // waits until every `done` has been called and the stream has ended, and
    // returns its final status (INVALID_ARGUMENT for an invalid request, see
    // PublishStream in pubsub.proto). May be called more than once.
    virtual absl::Status Finish() = 0;
  };

  // OpenPublisher() opens a PublishStream (no deadline: it lives until
  // Finish). Never null; a stream that cannot be opened reports its error
  // from Publish and Finish.
  std::unique_ptr<Publisher> OpenPublisher();

  // An open Listen stream. Obtain with Listen(); the Client must outlive it.
  class Listening {
   public:
    // Destroying a Listening cancels the stream and waits until it has
    // ended; no `on_delivery` call runs after the destructor returns.
    virtual ~Listening() = default;

    // Stop() cancels the stream (non-blocking; may be called again, and
    // from `on_delivery`).
    virtual void Stop() = 0;

    // Wait() blocks until the stream has ended and every `on_delivery` call
    // has returned, and returns its final status: CANCELLED after Stop(),
    // UNAVAILABLE when the server shuts down, RESOURCE_EXHAUSTED for a
    // listener disconnected for falling behind, INVALID_ARGUMENT for a bad
    // subscriber name.
    virtual absl::Status Wait() = 0;
  };

  // Listen() opens a Listen stream for `subscriber` (no deadline: it lives
  // until stopped). `on_delivery` is called for each Delivery, one at a time
  // on gRPC threads, in stream order. Deliveries are at most once and start
  // once the server has registered the stream (Stats().listeners() counts
  // it); events published before are not delivered. Never null; errors are
  // reported by Wait().
  std::unique_ptr<Listening> Listen(
      const std::string& subscriber,
      std::function<void(const v1::Delivery&)> on_delivery);

  const ClientOptions& options() const { return options_; }
  // The highest subscription log position this client's changes were
  // answered with (0 from a single node), which its publishes wait for.
  uint64_t log_position() const { return log_position_->load(); }
  // The gRPC target `target` names: a comma list of IP addresses becomes
  // gRPC's ipv4: (or ipv6:) form; anything else is unchanged.
  // INVALID_ARGUMENT for a list with a host name (use dns:///NAME:PORT).
  static absl::StatusOr<std::string> ChannelTarget(const std::string& target);
  // Whether `target` names a cluster (several addresses, or dns:), and the
  // channel arguments such a target gets: round_robin over the nodes with
  // client-side health checking (NOT_SERVING nodes are skipped).
  static bool IsClusterTarget(const std::string& target);
  static void AddClusterArguments(grpc::ChannelArguments* args);
  // The generated stub on this Client's channel, for calls not wrapped
  // here (give their contexts the token with AddToken). Valid while the
  // Client lives.
  v1::PubSub::Stub* stub() { return stub_.get(); }

 private:
  Client(const ClientOptions& options, std::shared_ptr<grpc::Channel> channel);

  const ClientOptions options_;
  // A cluster target (several addresses or dns:): changes are retried.
  const bool cluster_;
  // The highest log position a change was answered with (0: none).
  // Shared with the Publishers this client opens.
  const std::shared_ptr<std::atomic<uint64_t>> log_position_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  // Kept here for as long as the Client lives: Publishers and Listenings
  // rely on it so that no channel is released on a gRPC callback thread.
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::PubSub::Stub> stub_;
};

}  // namespace client
}  // namespace cohort

#endif  // COHORT_CLIENT_CLIENT_H_
