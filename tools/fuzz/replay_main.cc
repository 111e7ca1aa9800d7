// A main() for fuzz targets built without libFuzzer (the default and the
// sanitizer configurations): runs LLVMFuzzerTestOneInput once on every file
// named on the command line, recursing into directories, so `bazel test`
// replays the committed seed corpora and crash reproducers. Arguments that
// start with '-' (libFuzzer flags) are ignored, so the same command line works
// for both builds. Fails if a path cannot be read or if no input was found.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    std::filesystem::path path(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      for (const auto& entry :
           std::filesystem::recursive_directory_iterator(path, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else if (std::filesystem::is_regular_file(path, error)) {
      files.push_back(path);
    }
    if (error) {
      std::fprintf(stderr, "replay: %s: %s\n", argv[i],
                   error.message().c_str());
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no input files (give files or folders)\n");
    return 1;
  }
  std::string data;
  for (const auto& file : files) {
    if (!ReadFile(file, &data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 1;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()),
                           data.size());
  }
  std::printf("replay: %zu inputs ran clean\n", files.size());
  return 0;
}
