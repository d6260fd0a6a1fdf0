// The flags with which yeet, doctor --nodes, kill --all-nodes and launch (its failover probes)
// reach other nodes: one set, one help text, one core::ReachOptions.
#pragma once

#include <string>
#include <vector>

#include "core/reach/reach.hpp"

namespace CLI {
class App;
}

namespace ezpz::cli {

/// Whether a command offers --no-hsn with the reach options (launch and kill probe over the
/// management network only, and keep options.no_hsn as they set it).
enum class HsnFlag { offered, none };
/// --transport, --ssh-command, --accept-new-host-keys and (HsnFlag::offered) --no-hsn into
/// `options`; `when` starts each help text ("With --nodes: "; "" for a command that always
/// reaches nodes).
void add_reach_options(CLI::App& app, core::ReachOptions& options, const std::string& when,
                       HsnFlag hsn = HsnFlag::offered);

/// The head's -v for the node halves it starts (kill --all-nodes, doctor --nodes): a hidden
/// --log-level (info, debug or trace) into `level`.
void add_node_log_level(CLI::App& app, std::string& level);
/// What the head passes down: `--log-level=NAME` appended to `args` under -v, else nothing.
void pass_log_level(std::vector<std::string>& args);
/// A node half told --log-level: its diagnostics on stderr (which the transport carries to the
/// head's terminal), every line named by `host`.
void start_node_logging(const std::string& level, const std::string& host);

}  // namespace ezpz::cli
