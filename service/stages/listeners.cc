#include "service/stages/listeners.h"

#include <algorithm>
#include <utility>

namespace cohort {
namespace service {

ListenerRegistry::ListenerRegistry(uint32_t max_subscribers)
    : max_subscribers_(max_subscribers),
      pages_(new std::atomic<std::atomic<uint32_t>*>[PageCount()]) {
  for (uint64_t i = 0; i < PageCount(); ++i) {
    pages_[i].store(nullptr, std::memory_order_relaxed);
  }
}

ListenerRegistry::~ListenerRegistry() {
  for (uint64_t i = 0; i < PageCount(); ++i) {
    delete[] pages_[i].load(std::memory_order_relaxed);
  }
}

std::atomic<uint32_t>* ListenerRegistry::Counter(uint32_t subscriber) const {
  std::atomic<uint32_t>* page =
      pages_[subscriber >> kPageBits].load(std::memory_order_acquire);
  return page == nullptr ? nullptr : &page[subscriber & (kPageSize - 1)];
}

std::atomic<uint32_t>* ListenerRegistry::CounterCreated(uint32_t subscriber) {
  std::atomic<std::atomic<uint32_t>*>& slot = pages_[subscriber >> kPageBits];
  if (slot.load(std::memory_order_relaxed) == nullptr) {
    auto* page = new std::atomic<uint32_t>[kPageSize];
    for (uint32_t i = 0; i < kPageSize; ++i) {
      page[i].store(0, std::memory_order_relaxed);
    }
    slot.store(page, std::memory_order_release);
  }
  return Counter(subscriber);
}

bool ListenerRegistry::Register(uint32_t subscriber,
                                std::shared_ptr<DeliverySink> sink) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  std::atomic<uint32_t>* counter = CounterCreated(subscriber);
  sinks_[subscriber].push_back(std::move(sink));
  counter->fetch_add(1, std::memory_order_release);
  size_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ListenerRegistry::Unregister(uint32_t subscriber,
                                  const DeliverySink* sink) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sinks_.find(subscriber);
  if (it == sinks_.end()) return;
  auto& list = it->second;
  auto pos = std::find_if(list.begin(), list.end(),
                          [sink](const auto& s) { return s.get() == sink; });
  if (pos == list.end()) return;
  list.erase(pos);
  if (list.empty()) sinks_.erase(it);
  Counter(subscriber)->fetch_sub(1, std::memory_order_release);
  size_.fetch_sub(1, std::memory_order_relaxed);
}

bool ListenerRegistry::HasListeners(uint32_t subscriber) const {
  if (subscriber >= max_subscribers_) return false;
  const std::atomic<uint32_t>* counter = Counter(subscriber);
  return counter != nullptr &&
         counter->load(std::memory_order_acquire) != 0;
}

bool ListenerRegistry::HasRemoteListeners(uint32_t subscriber) const {
  if (subscriber >= max_subscribers_) return false;
  const std::atomic<uint32_t>* counter = Counter(subscriber);
  return counter != nullptr &&
         (counter->load(std::memory_order_acquire) & kRemote) != 0;
}

void ListenerRegistry::SetRemote(uint32_t subscriber, bool remote) {
  std::lock_guard<std::mutex> lock(mu_);
  std::atomic<uint32_t>* counter = CounterCreated(subscriber);
  if (remote) {
    if ((counter->fetch_or(kRemote, std::memory_order_release) & kRemote) ==
        0) {
      remote_subscribers_.fetch_add(1, std::memory_order_relaxed);
    }
  } else if ((counter->fetch_and(~kRemote, std::memory_order_release) &
              kRemote) != 0) {
    remote_subscribers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void ListenerRegistry::DeliverGap(uint32_t subscriber) {
  std::vector<std::shared_ptr<DeliverySink>> sinks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sinks_.find(subscriber);
    if (it == sinks_.end()) return;
    sinks = it->second;
  }
  for (const auto& sink : sinks) sink->Offer(PendingDelivery());
}

void ListenerRegistry::Deliver(uint32_t subscriber,
                               const std::shared_ptr<const v1::Event>& event,
                               std::vector<uint64_t> subscription_ids,
                               uint64_t* queued, uint64_t* dropped,
                               uint64_t* disconnected) {
  // Copy the sink list so that Offer runs without the registry lock: a sink
  // that disconnects unregisters itself, which takes the lock.
  std::vector<std::shared_ptr<DeliverySink>> sinks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sinks_.find(subscriber);
    if (it == sinks_.end()) return;
    sinks = it->second;
  }
  for (size_t i = 0; i < sinks.size(); ++i) {
    PendingDelivery delivery;
    delivery.event = event;
    // The last sink takes the ids; the others get copies. clang-tidy cannot
    // see that the move happens on the last iteration only.
    if (i + 1 == sinks.size()) {
      // NOLINTNEXTLINE(bugprone-use-after-move,clang-analyzer-cplusplus.Move)
      delivery.subscription_ids = std::move(subscription_ids);
    } else {
      // NOLINTNEXTLINE(clang-analyzer-cplusplus.Move)
      delivery.subscription_ids = subscription_ids;
    }
    switch (sinks[i]->Offer(std::move(delivery))) {
      case OfferResult::kQueued:
        ++*queued;
        break;
      case OfferResult::kDropped:
        ++*dropped;
        break;
      case OfferResult::kDisconnected:
        ++*disconnected;
        ++*dropped;
        break;
      case OfferResult::kClosed:
        break;
    }
  }
}

void ListenerRegistry::CloseAll(const absl::Status& status) {
  std::vector<std::shared_ptr<DeliverySink>> sinks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& [subscriber, list] : sinks_) {
      for (auto& sink : list) sinks.push_back(sink);
    }
  }
  // Close outside the lock: closing a stream unregisters it.
  for (auto& sink : sinks) sink->Close(status);
}

}  // namespace service
}  // namespace cohort
