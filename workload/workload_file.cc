#include "workload/workload_file.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "workload/sha256.h"
#include "workload/workload.h"

namespace cohort {
namespace workload {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

absl::StatusOr<WrittenFile> WriteTextFile(
    const std::string& path,
    absl::FunctionRef<void(absl::FunctionRef<void(absl::string_view)>)>
        produce) {
  FILE* file = path.empty() ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  Sha256 hash;
  bool write_failed = false;
  produce([&](absl::string_view chunk) {
    hash.Update(chunk);
    if (std::fwrite(chunk.data(), 1, chunk.size(), file) != chunk.size()) {
      write_failed = true;
    }
  });
  const bool close_failed =
      path.empty() ? std::fflush(file) != 0 : std::fclose(file) != 0;
  if (write_failed || close_failed) {
    return absl::DataLossError(
        absl::StrCat("write failed: ", path.empty() ? "<stdout>" : path));
  }
  WrittenFile written;
  written.bytes = static_cast<int64_t>(hash.bytes());
  written.sha256 = hash.HexFinal();
  return written;
}

absl::StatusOr<WrittenFile> WriteWorkloadFile(const Workload& workload,
                                              const std::string& path) {
  return WriteTextFile(path,
                       [&](absl::FunctionRef<void(absl::string_view)> sink) {
                         WriteWorkloadChunks(workload, sink);
                       });
}

absl::StatusOr<WorkloadReport> GenerateWorkloadFile(
    const WorkloadOptions& options, const std::string& path,
    size_t report_sample) {
  auto start = std::chrono::steady_clock::now();
  const Workload workload = Generate(options);
  const double generate_seconds = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  absl::StatusOr<WrittenFile> written = WriteWorkloadFile(workload, path);
  if (!written.ok()) return written.status();
  const double write_seconds = SecondsSince(start);

  WorkloadReport report = Summarize(workload, written->sha256, report_sample);
  report.text_bytes = written->bytes;
  report.generate_seconds = generate_seconds;
  report.write_seconds = write_seconds;
  return report;
}

}  // namespace workload
}  // namespace cohort
