// What yeet's relays are told: how to reach the nodes (core/reach's spec) and yeet's own
// settings for the stream and the destination.
#pragma once

#include <string>

#include "core/reach/spec.hpp"

namespace ezpz::core {

struct BroadcastSpec {
  ReachSpec reach;              ///< how each node is reached and ezpz started there
  std::string destination;      ///< the same path on every node
  std::string this_host;        ///< the node running this (names it in `reattached_to`)
  bool reattach = true;         ///< re-attach a failed relay's children mid-stream (spooling)
  bool force = false;           ///< replace a destination yeet did not make (core::check_replaceable)
  double stall_timeout_s = 30;  ///< a child that takes no data for this long (or, after the stream, says
                                ///< nothing for this long) is dropped; mid-stream its nodes are re-attached
  int stream_level = 0;         ///< zstd level of the stream; 0: adaptive (see AdaptiveZstd)
  double parent_silence_s = 0;  ///< a relay: give up when its parent sends nothing for this long
                                ///< (its node or link is gone: no end of file comes); 0: no limit
  std::string log_level;        ///< what the relays log on stderr (log::level_name: the head's -v); empty: warnings
  int sealed_stdin_fd = -1;     ///< a relay: stdin is a sealed connection, its receiving keys on this descriptor
};

}  // namespace ezpz::core
