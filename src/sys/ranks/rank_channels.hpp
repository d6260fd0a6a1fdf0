// The rank channel over sealed TCP (sys/agents' SecureChannel): the launch's hub and each
// shim's link. Records: shim -> hub 'H' "RANK HOST" (hello), 'O'/'E' output bytes of stdout and
// stderr as they came, 'X' how the rank ended (core::exit_report_json); hub -> shim 'A' the grace
// in seconds, then " stops" where the hub stops ranks itself (the answer to the hello), 'K' kill
// the rank now, 'T' SIGNO pass the signal to the rank and hold the shim's end until 'R' (release:
// every rank ended; from a hub that stops ranks also the answer to each 'X'). A shim dials before
// its rank starts (its handshake's first bytes go at once) and takes 'A' before it sends any output.
// CMake target ezpz_sys_ranks.
#pragma once

#include "core/launch/rank_channel.hpp"

namespace ezpz::sys {

class SecureRankChannels final : public core::RankChannels {
 public:
  [[nodiscard]] Expected<std::unique_ptr<core::RankHub>> open_hub(const core::HubOptions& options) override;
  [[nodiscard]] std::unique_ptr<core::PendingRankLink> begin_hub(const core::Env& env, int rank,
                                                                 const std::string& host, std::string& why) override;
};

}  // namespace ezpz::sys
