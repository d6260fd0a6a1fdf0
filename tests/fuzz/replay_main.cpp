// The fuzz targets without libFuzzer (any compiler, any preset; tests/CMakeLists.txt): every
// target's LLVMFuzzerTestOneInput is compiled in, renamed ezpz_fuzz_one_<name>.
// `ezpz_fuzz_replay NAME CORPUS_DIR_OR_FILE...` feeds that target every file named or found in
// the directories, in name order. A broken property aborts (EZPZ_FUZZ_CHECK): the test fails.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#define EZPZ_REPLAY_TARGET(name) extern "C" int ezpz_fuzz_one_##name(const std::uint8_t* data, std::size_t size);
#include "fuzz_replay_targets.inc"
#undef EZPZ_REPLAY_TARGET

namespace fs = std::filesystem;

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

struct Named {
  std::string_view name;
  Target one;
};

#define EZPZ_REPLAY_TARGET(name) Named{#name, &ezpz_fuzz_one_##name},
constexpr Named kTargets[] = {
#include "fuzz_replay_targets.inc"
};
#undef EZPZ_REPLAY_TARGET

}  // namespace

int main(int argc, char** argv) {
  const auto usage = [&] {
    std::fprintf(stderr, "usage: %s TARGET CORPUS_DIR_OR_FILE...; targets:", argv[0]);
    for (const auto& t : kTargets) {
      std::fprintf(stderr, " %.*s", static_cast<int>(t.name.size()), t.name.data());
    }
    std::fprintf(stderr, "\n");
    return 2;
  };
  if (argc < 3) {
    return usage();
  }
  const auto* target =
      std::find_if(std::begin(kTargets), std::end(kTargets), [&](const Named& t) { return t.name == argv[1]; });
  if (target == std::end(kTargets)) {
    return usage();
  }
  std::vector<fs::path> inputs;
  for (int i = 2; i < argc; ++i) {
    const fs::path arg = argv[i];
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::directory_iterator(arg, ec)) {
        if (e.is_regular_file(ec)) {
          inputs.push_back(e.path());
        }
      }
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such corpus file or directory\n", arg.c_str());
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs: an empty corpus replays nothing\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  // What a target writes (archive extracts below $TMPDIR) goes to a private directory, removed after.
  std::string tmp = (fs::temp_directory_path() / "ezpz-fuzz-replay-XXXXXX").string();
  if (::mkdtemp(tmp.data()) == nullptr || ::setenv("TMPDIR", tmp.c_str(), 1) != 0) {
    std::perror("mkdtemp");
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay %s (%zu bytes)\n", path.c_str(), bytes.size());
    target->one(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  std::printf("%s: replayed %zu inputs\n", argv[1], inputs.size());
  return 0;
}
