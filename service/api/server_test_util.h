// Test helpers for end-to-end tests against a CohortServer on 127.0.0.1: a
// blocking client, a Listen stream reader on its own thread, request
// builders, and a one-shot HTTP GET.
//
// Thread safety: a Client may be used by several threads at once (gRPC
// stubs are thread-safe). A Listener's methods may be called from any thread.
#ifndef COHORT_SERVICE_API_SERVER_TEST_UTIL_H_
#define COHORT_SERVICE_API_SERVER_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "service/api/server.h"

namespace cohort {
namespace service {
namespace testing {

inline ServerOptions LocalServerOptions() {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.engine.cohort_wait_us = 100;
  options.engine.max_subscribers = 1 << 12;
  options.max_attributes = 1 << 12;
  return options;
}

// Starts a server; on failure records it in the running test and returns
// null.
inline std::unique_ptr<CohortServer> StartServer(
    const ServerOptions& options = LocalServerOptions()) {
  absl::StatusOr<std::unique_ptr<CohortServer>> server =
      CohortServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

inline std::vector<uint64_t> Ids(const v1::EventResult& result) {
  return std::vector<uint64_t>(result.subscription_ids().begin(),
                               result.subscription_ids().end());
}

// A subscription "key = k" for `subscriber`.
inline v1::SubscriptionSpec KeySpec(const std::string& subscriber,
                                    int64_t key) {
  v1::SubscriptionSpec spec;
  spec.set_subscriber(subscriber);
  v1::Predicate* p = spec.add_predicates();
  p->set_attribute("key");
  p->set_op(v1::OP_EQ);
  p->set_value(key);
  return spec;
}

// One subscription "key = k" for subscriber "subscriber".
inline v1::SubscribeRequest KeySubscription(int64_t key) {
  v1::SubscribeRequest request;
  *request.add_subscriptions() = KeySpec("subscriber", key);
  return request;
}

// One event {key = k}, with ids returned.
inline v1::PublishRequest KeyEvent(int64_t key, const std::string& payload = "") {
  v1::PublishRequest request;
  request.set_return_ids(true);
  v1::Event* event = request.add_events();
  v1::Attribute* a = event->add_attributes();
  a->set_name("key");
  a->set_value(key);
  event->set_payload(payload);
  return request;
}

inline std::shared_ptr<grpc::Channel> Connect(int port) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), args);
}

inline void SetDeadline(grpc::ClientContext* context, int seconds = 30) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(seconds));
}

class Client {
 public:
  explicit Client(int port)
      : channel_(Connect(port)), stub_(v1::PubSub::NewStub(channel_)) {}

  grpc::Status Subscribe(const v1::SubscribeRequest& request,
                         v1::SubscribeResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context);
    return stub_->Subscribe(&context, request, response);
  }
  grpc::Status Unsubscribe(const v1::UnsubscribeRequest& request) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::UnsubscribeResponse response;
    return stub_->Unsubscribe(&context, request, &response);
  }
  grpc::Status Publish(const v1::PublishRequest& request,
                       v1::PublishResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context);
    return stub_->Publish(&context, request, response);
  }
  v1::Stats Stats() {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::Stats stats;
    grpc::Status status =
        stub_->GetStats(&context, v1::GetStatsRequest(), &stats);
    return stats;
  }
  grpc::Status ParseFilter(const std::string& filter,
                           v1::ParseFilterResponse* response) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ParseFilterRequest request;
    request.set_filter(filter);
    return stub_->ParseFilter(&context, request, response);
  }
  bool WaitForListeners(uint64_t n) {
    for (int i = 0; i < 1000; ++i) {
      if (Stats().listeners() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Sends all requests on one stream (writes and reads on separate threads,
  // so the server's flow control is exercised), collects the responses.
  grpc::Status PublishStream(const std::vector<v1::PublishRequest>& requests,
                             std::vector<v1::PublishResponse>* responses) {
    grpc::ClientContext context;
    SetDeadline(&context, 60);
    auto stream = stub_->PublishStream(&context);
    std::thread writer([&] {
      for (const v1::PublishRequest& request : requests) {
        if (!stream->Write(request)) break;
      }
      stream->WritesDone();
    });
    v1::PublishResponse response;
    while (stream->Read(&response)) responses->push_back(response);
    writer.join();
    return stream->Finish();
  }

  // A unary call of `method` with the request `bytes` as they are, through
  // the generic stub; the response's bytes go to *response.
  grpc::Status RawUnary(const std::string& method, const std::string& bytes,
                        std::string* response) {
    grpc::GenericStub generic(channel_);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request_buffer(&slice, 1);
    grpc::ByteBuffer response_buffer;
    grpc::ClientContext context;
    SetDeadline(&context, 5);
    grpc::CompletionQueue cq;
    auto call = generic.PrepareUnaryCall(&context, method, request_buffer, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&response_buffer, &status, reinterpret_cast<void*>(1));
    void* tag;
    bool ok;
    cq.Next(&tag, &ok);
    response->clear();
    std::vector<grpc::Slice> slices;
    if (status.ok() && response_buffer.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        response->append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    return status;
  }

  // cohort.v1.PubSub/Publish with the request `bytes` as they are (the
  // server's Publish takes bytes: PubSubService::Publish).
  grpc::Status PublishBytes(const std::string& bytes) {
    std::string response;
    return RawUnary("/cohort.v1.PubSub/Publish", bytes, &response);
  }

  // grpc.health.v1.Health/Check through the generic stub (the health
  // proto's generated code is not installed): the status enum, or -1.
  int HealthCheck(const std::string& service) {
    std::string request;
    if (!service.empty()) {
      request = absl::StrCat(
          "\x0a", std::string(1, static_cast<char>(service.size())), service);
    }
    std::string bytes;
    if (!RawUnary("/grpc.health.v1.Health/Check", request, &bytes).ok()) {
      return -1;
    }
    if (bytes.empty()) return 0;  // status 0 = UNKNOWN is the default
    return bytes.size() >= 2 && bytes[0] == 0x08 ? bytes[1] : -1;
  }

  v1::PubSub::Stub* stub() { return stub_.get(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PubSub::Stub> stub_;
};

// A Listen stream read on its own thread.
class Listener {
 public:
  // `read_delay` slows the reader down (a slow consumer); `start_reading`
  // false leaves the stream unread until StartReading.
  Listener(int port, const std::string& subscriber, bool start_reading = true)
      : channel_(Connect(port)), stub_(v1::PubSub::NewStub(channel_)) {
    v1::ListenRequest request;
    request.set_subscriber(subscriber);
    reader_ = stub_->Listen(&context_, request);
    if (start_reading) StartReading();
  }
  ~Listener() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }

  void StartReading() {
    thread_ = std::thread([this] {
      v1::Delivery delivery;
      while (reader_->Read(&delivery)) {
        std::lock_guard<std::mutex> lock(mu_);
        deliveries_.push_back(delivery);
        cv_.notify_all();
      }
      grpc::Status status = reader_->Finish();
      std::lock_guard<std::mutex> lock(mu_);
      status_ = status;
      done_ = true;
      cv_.notify_all();
    });
  }

  // Waits (up to 10 s) for n deliveries; returns what arrived.
  std::vector<v1::Delivery> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10),
                 [&] { return deliveries_.size() >= n || done_; });
    return deliveries_;
  }
  size_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return deliveries_.size();
  }
  std::vector<v1::Delivery> deliveries() {
    std::lock_guard<std::mutex> lock(mu_);
    return deliveries_;
  }
  // Waits (up to 10 s) for the server to end the stream.
  grpc::Status Finish() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return done_; })) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "not ended");
    }
    return status_;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PubSub::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::Delivery>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1::Delivery> deliveries_;
  grpc::Status status_;
  bool done_ = false;
};

// GET http://127.0.0.1:port/path; the whole response, headers included.
inline std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ==
      0) {
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    (void)!write(fd, request.data(), request.size());
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  }
  close(fd);
  return response;
}

}  // namespace testing
}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_API_SERVER_TEST_UTIL_H_
