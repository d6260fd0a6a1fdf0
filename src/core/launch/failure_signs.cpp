#include "core/launch/failure_signs.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace ezpz::core {
namespace {

struct Sign {
  std::string_view text;  ///< as the line says it
  std::string_view what;
  std::string_view remedy;
};

constexpr std::string_view kKvsRemedy =
    "start-up at scale: raise PMI_MMAP_SYNC_WAIT_TIME (Aurora: 600), and keep the Python env on node-local "
    "storage (ezpz yeet) so that every rank imports it in time";
constexpr std::array<Sign, 10> kSystemic = {{
    {"kvs_get_value", "PMI/CCL KVS timeout", kKvsRemedy},
    {"KVS get timed out", "PMI/CCL KVS timeout", kKvsRemedy},
    {"Couldn't forward RPC launch", "PALS could not forward the launch",
     "retry the job; if it persists, tell the "
     "site (PALS's launch tree)"},
    {"RendezvousTimeoutError", "a rendezvous timeout",
     "every rank must reach MASTER_ADDR:MASTER_PORT: ezpz doctor --nodes; a slow start-up: the env on "
     "node-local storage (ezpz yeet)"},
    {"DistStoreError", "a rendezvous timeout (the TCP store)",
     "every rank must reach MASTER_ADDR:MASTER_PORT: ezpz doctor --nodes"},
    {"ncclSystemError", "an NCCL start-up error", "NCCL_DEBUG=INFO names the interface or device; ezpz doctor --nodes"},
    {"ncclInternalError", "an NCCL start-up error",
     "NCCL_DEBUG=INFO names the interface or device; ezpz doctor --nodes"},
    {"ncclUnhandledCudaError", "an NCCL start-up error", "NCCL_DEBUG=INFO names the device; ezpz doctor --nodes"},
    {"CCL_ERROR", "a oneCCL start-up error", "CCL_LOG_LEVEL=info names the transport; ezpz doctor --nodes"},
    {"MPIDI_CRAY_init", "a Cray MPICH start-up abort (GTL)",
     "MPICH_GPU_SUPPORT_ENABLED=1 needs the GTL library linked or loaded on every node (module list)"},
}};
constexpr std::array<std::string_view, 4> kStorage = {"No space left on device", "[Errno 28]", "Disk quota exceeded",
                                                      "[Errno 122]"};

/// The first systemic sign in `lines`, and its line; nullptr when none.
const Sign* systemic_sign(const std::vector<std::string>& lines, std::string& line) {
  for (const auto& l : lines) {
    for (const auto& s : kSystemic) {
      if (l.find(s.text) != std::string::npos) {
        line = l;
        return &s;
      }
    }
  }
  return nullptr;
}

FailureSign storage_sign(const std::vector<RankExit>& exits) {
  const auto first = std::min_element(exits.begin(), exits.end(), [](const RankExit& a, const RankExit& b) {
    return a.time != b.time ? a.time < b.time : a.rank < b.rank;
  });
  for (const auto& l : first == exits.end() ? std::vector<std::string>{} : first->last_lines) {
    for (auto s : kStorage) {
      if (l.find(s) != std::string::npos) {
        const bool full = s == kStorage[0] || s == kStorage[1];
        return {FailureClass::storage,
                full ? "No space left on device" : "Disk quota exceeded",
                {where(*first) + ": " + l},
                "a full parallel filesystem (its OSTs, whatever df says) or quota: lfs df -h, lfs quota -h -u $USER"};
      }
    }
  }
  return {};
}

}  // namespace

bool has_systemic_sign(const std::vector<std::string>& lines) {
  std::string line;
  return systemic_sign(lines, line) != nullptr;
}

FailureSign classify_failure(const std::vector<RankExit>& exits, const std::vector<std::string>& launcher, int nprocs) {
  std::vector<RankExit> failed;
  std::copy_if(exits.begin(), exits.end(), std::back_inserter(failed),
               [](const RankExit& e) { return e.exit_code != 0; });
  // Every rank failed, each with the same systemic sign.
  std::string line;
  const Sign* common = nullptr;
  std::vector<std::string> shown;
  bool all_same = nprocs > 0 && static_cast<int>(failed.size()) >= nprocs;
  for (const auto& e : failed) {
    const auto* s = systemic_sign(e.last_lines, line);
    all_same = all_same && s != nullptr && (common == nullptr || s->what == common->what);
    common = s != nullptr ? s : common;
    if (s != nullptr && shown.size() < 3) {
      shown.push_back(where(e) + ": " + line);
    }
  }
  if (all_same && common != nullptr) {
    return {FailureClass::systemic, std::string(common->what), shown, std::string(common->remedy)};
  }
  // The launcher's own words, when no rank ended well.
  const bool none_ok = std::none_of(exits.begin(), exits.end(), [](const RankExit& e) { return e.exit_code == 0; });
  if (const auto* s = systemic_sign(launcher, line); s != nullptr && none_ok) {
    return {FailureClass::systemic, std::string(s->what), {line}, std::string(s->remedy)};
  }
  return storage_sign(failed);
}

}  // namespace ezpz::core
