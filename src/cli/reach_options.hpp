// The flags with which yeet, doctor --nodes, kill --all-nodes and launch (its failover probes)
// reach other nodes: one set, one help text, one core::ReachOptions.
#pragma once

#include <string>

#include "core/reach/reach.hpp"

namespace CLI {
class App;
}

namespace ezpz::cli {

/// --transport, --ssh-command, --accept-new-host-keys and (with `hsn_flag`) --no-hsn into
/// `options`; `when` starts each help text ("With --nodes: "; "" for a command that always
/// reaches nodes). Without `hsn_flag` the command keeps options.no_hsn as it set it.
void add_reach_options(CLI::App& app, core::ReachOptions& options, const std::string& when, bool hsn_flag = true);

}  // namespace ezpz::cli
