#include "service/stages/engine_options.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::StatusOr<IndexLayout> ParseIndexLayout(absl::string_view name) {
  for (IndexLayout layout :
       {IndexLayout::kPartitioned, IndexLayout::kShardedPhase1,
        IndexLayout::kReplicated}) {
    if (name == IndexLayoutName(layout)) return layout;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--index: unknown layout \"", name,
                   "\"; use partitioned, sharded_phase1 or replicated"));
}

absl::string_view IndexLayoutName(IndexLayout layout) {
  switch (layout) {
    case IndexLayout::kPartitioned:
      return "partitioned";
    case IndexLayout::kShardedPhase1:
      return "sharded_phase1";
    case IndexLayout::kReplicated:
      return "replicated";
  }
  return "?";
}

uint32_t DefaultIndexCopies(uint32_t partitions, uint64_t subscriptions,
                            uint64_t budget_bytes, uint64_t machine_bytes) {
  partitions = std::max<uint32_t>(partitions, 1);
  if (budget_bytes == 0) budget_bytes = machine_bytes / 2;
  auto fits = [&](uint32_t g) {
    return g == 1 || budget_bytes == 0 ||
           subscriptions * kIndexBytesPerSubscription <= budget_bytes / g;
  };
  uint32_t copies = 1;
  for (uint32_t g = 1; g <= partitions; ++g) {
    if (partitions % g != 0) continue;
    copies = g;
    if (partitions / g <= kCoresPerCopy) break;
  }
  while (copies > 1 && !fits(copies)) {
    do {
      --copies;
    } while (partitions % copies != 0);
  }
  return copies;
}

absl::Status CheckIndexCopies(uint32_t partitions, uint32_t copies) {
  if (copies == 0 || partitions % copies == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--index_copies: ", copies, " does not divide --partitions (",
      partitions, "): each copy takes the same number of partition threads"));
}

uint32_t ResolveIndexCopies(const EngineOptions& options,
                            uint64_t subscriptions) {
  if (options.index_layout == IndexLayout::kReplicated) {
    return options.partitions;
  }
  if (options.index_copies > 0) return options.index_copies;
  return DefaultIndexCopies(options.partitions, subscriptions,
                            options.index_memory_budget_bytes,
                            MachineMemoryBytes());
}

uint64_t MachineMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

absl::Status CheckLatencyTarget(int64_t us) {
  if (us < 0 || us > kMaxLatencyTargetUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--latency_target_us: between 0 (off) and ",
                     kMaxLatencyTargetUs, " (one minute)"));
  }
  return absl::OkStatus();
}

}  // namespace service
}  // namespace cohort
