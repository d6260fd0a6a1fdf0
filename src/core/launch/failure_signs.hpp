// What a failed attempt's ranks and launcher said, read for what no spare node can fix: a full
// or over-quota filesystem (retried in place: the Python ezpz's RETRYABLE_UNATTRIBUTED), and a
// failure every rank shares before training (PMI/CCL KVS timeouts, PALS unable to forward its
// launch, a rendezvous or NCCL/CCL start-up that timed out): systemic, never a node's fault.
// Pure: the lines in, the class out.
#pragma once

#include <string>
#include <vector>

#include "core/launch/failure.hpp"

namespace ezpz::core {

enum class FailureClass {
  other,     ///< for the probes and claims to decide (a node, or the application)
  storage,   ///< the filesystem was full or over quota: the same nodes again may do (bounded)
  systemic,  ///< every rank failed the same way at start-up: no node is at fault
};

struct FailureSign {
  FailureClass kind = FailureClass::other;
  std::string what;                ///< "PMI/CCL KVS timeout", "No space left on device"
  std::vector<std::string> lines;  ///< the lines that show it (at most a few)
  std::string remedy;              ///< what is known to help ("" when nothing is)
};

/// How many storage failures in a row are retried on the same nodes.
inline constexpr int kStorageRetries = 3;

/// Whether `lines` (a rank's last words) carry a systemic start-up sign (a KVS timeout...): the
/// other ranks most often fail alike within moments.
[[nodiscard]] bool has_systemic_sign(const std::vector<std::string>& lines);

/// The sign of a failed attempt: storage when the first failed rank's last lines say ENOSPC or
/// EDQUOT ("No space left on device", "[Errno 28]", "Disk quota exceeded", "[Errno 122]"; not
/// "Permission denied", "Read-only file system" or "No such file or directory": configuration);
/// systemic when every one of `nprocs` ranks failed with one systemic sign in its last lines, or
/// the launcher's lines carry one and no rank ended well; other otherwise.
[[nodiscard]] FailureSign classify_failure(const std::vector<RankExit>& exits, const std::vector<std::string>& launcher,
                                           int nprocs);

}  // namespace ezpz::core
