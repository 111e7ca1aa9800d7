// The workload generator binary: writes a Fabret workload file (see
// workload/fabret.md and workload/workload.h) and prints its report.
//
//   bazel run -c opt //bench:workload -- --preset=fabret-1m --out=/tmp/f.txt
//
// Every knob is a flag; an unset flag keeps the preset's value. When a knob
// other than --seed differs from the preset, the header records the preset as
// "<preset>+custom" (the knobs line always records every value). The report
// goes to stdout when --out is given, else to stderr (the file goes to
// stdout). The SHA-256 in the report is over exactly the bytes written.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "workload/workload.h"
#include "workload/workload_file.h"

ABSL_FLAG(std::string, preset, "fabret-1m",
          "Workload preset: fabret-1m, fabret-10m, fabret-uniform, "
          "selective-1m or ranges-1m (workload/presets.md).");
ABSL_FLAG(std::optional<int64_t>, subscriptions, std::nullopt,
          "Number of subscriptions (default: the preset's).");
ABSL_FLAG(std::optional<int64_t>, events, std::nullopt, "Number of events.");
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt, "Random seed.");
ABSL_FLAG(std::optional<int64_t>, attributes, std::nullopt,
          "Number of attributes, named a0 ... a<n-1>.");
ABSL_FLAG(std::optional<int64_t>, domain, std::nullopt,
          "Values are integers 0 ... domain-1.");
ABSL_FLAG(std::optional<int64_t>, min_predicates, std::nullopt,
          "Fewest predicates per subscription.");
ABSL_FLAG(std::optional<int64_t>, max_predicates, std::nullopt,
          "Most predicates per subscription.");
ABSL_FLAG(std::optional<double>, eq_fraction, std::nullopt,
          "Probability that a predicate is EQ.");
ABSL_FLAG(std::optional<double>, zipf_attributes, std::nullopt,
          "Zipf exponent over attribute index (0 = uniform).");
ABSL_FLAG(std::optional<double>, zipf_values, std::nullopt,
          "Zipf exponent over value rank (0 = uniform).");
ABSL_FLAG(std::optional<int64_t>, event_attributes, std::nullopt,
          "Distinct attributes per event.");
ABSL_FLAG(std::optional<int64_t>, between_max_width, std::nullopt,
          "Largest BETWEEN width (upper - lower before clipping).");
ABSL_FLAG(std::optional<int64_t>, payload_bytes, std::nullopt,
          "Bytes of payload per event (not written to the file).");
ABSL_FLAG(std::string, out, "",
          "Output file; empty writes the workload to stdout. A relative path "
          "is resolved against $BUILD_WORKING_DIRECTORY under `bazel run`.");
ABSL_FLAG(int64_t, report_sample, 200,
          "Events sampled (evenly spread) for matches-per-event; 0 skips.");
ABSL_FLAG(std::string, report_format, "text", "Report format: text or json.");

namespace cohort {
namespace bench {

using workload::FormatReportJson;
using workload::FormatReportText;
using workload::GenerateWorkloadFile;
using workload::PresetOptions;
using workload::Validate;
using workload::WorkloadOptions;
using workload::WorkloadReport;
namespace {

template <typename T>
void Override(const absl::Flag<std::optional<T>>& flag, T* knob,
              bool* changed) {
  const std::optional<T> value = absl::GetFlag(flag);
  if (!value.has_value()) return;
  *changed = *changed || *value != *knob;
  *knob = *value;
}

// The preset's options with every set flag applied.
absl::StatusOr<WorkloadOptions> OptionsFromFlags() {
  absl::StatusOr<WorkloadOptions> options =
      PresetOptions(absl::GetFlag(FLAGS_preset));
  if (!options.ok()) return options.status();
  WorkloadOptions& o = *options;
  bool changed = false;
  Override(FLAGS_subscriptions, &o.subscriptions, &changed);
  Override(FLAGS_events, &o.events, &changed);
  Override(FLAGS_attributes, &o.attributes, &changed);
  Override(FLAGS_domain, &o.domain, &changed);
  Override(FLAGS_min_predicates, &o.min_predicates, &changed);
  Override(FLAGS_max_predicates, &o.max_predicates, &changed);
  Override(FLAGS_eq_fraction, &o.eq_fraction, &changed);
  Override(FLAGS_zipf_attributes, &o.zipf_attributes, &changed);
  Override(FLAGS_zipf_values, &o.zipf_values, &changed);
  Override(FLAGS_event_attributes, &o.event_attributes, &changed);
  Override(FLAGS_between_max_width, &o.between_max_width, &changed);
  Override(FLAGS_payload_bytes, &o.payload_bytes, &changed);
  bool seed_changed = false;  // a different seed is still the same preset
  Override(FLAGS_seed, &o.seed, &seed_changed);
  if (changed) o.preset = absl::StrCat(o.preset, "+custom");
  if (absl::Status status = Validate(o); !status.ok()) return status;
  return options;
}

std::string OutputPath() {
  std::string path = absl::GetFlag(FLAGS_out);
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (!path.empty() && path[0] != '/' && cwd != nullptr && *cwd != '\0') {
    path = absl::StrCat(cwd, "/", path);
  }
  return path;
}

int Run() {
  const std::string format = absl::GetFlag(FLAGS_report_format);
  const int64_t sample = absl::GetFlag(FLAGS_report_sample);
  if ((format != "text" && format != "json") || sample < 0) {
    std::fprintf(stderr,
                 "--report_format must be text or json and "
                 "--report_sample >= 0\n");
    return 2;
  }
  absl::StatusOr<WorkloadOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n", options.status().ToString().c_str());
    return 2;
  }
  const std::string path = OutputPath();
  absl::StatusOr<WorkloadReport> report =
      GenerateWorkloadFile(*options, path, static_cast<size_t>(sample));
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  const std::string text = format == "json" ? FormatReportJson(*report) + "\n"
                                            : FormatReportText(*report);
  std::fputs(text.c_str(), path.empty() ? stderr : stdout);
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace cohort

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes a Fabret workload file and prints its report. Example:\n"
      "  workload --preset=fabret-1m --out=/tmp/fabret-1m.txt");
  absl::ParseCommandLine(argc, argv);
  return cohort::bench::Run();
}
