#include "core/launch/job_stop.hpp"

#include <algorithm>
#include <csignal>

#include "core/base/strings.hpp"
#include "core/job/hostlist.hpp"
#include "core/job/kill.hpp"

namespace ezpz::core {
namespace {

/// Nodes named to sinfo at most (beyond, it is asked for every node): 2,000 names of up to 40
/// characters stay well inside one argument's 128 KiB.
constexpr std::size_t kNamedNodesMax = 2000;

/// `host` when it is one of `hosts` (by short name), as the job names it; "" otherwise.
std::string job_host(std::string_view host, const std::vector<std::string>& hosts) {
  const auto name = short_hostname(host);
  for (const auto& h : hosts) {
    if (short_hostname(h) == name) {
      return h;
    }
  }
  return "";
}

/// A Slurm state (sinfo's %T) that runs no step: down, drained or draining, failing, not
/// responding ("*"), or a node Slurm does not know the state of.
bool slurm_not_up(std::string_view state) {
  const auto s = to_lower(state);
  return s.find("down") != std::string::npos || s.find("drain") != std::string::npos ||
         s.find("fail") != std::string::npos || s.find("unk") != std::string::npos ||
         s.find("inval") != std::string::npos || (!s.empty() && s.back() == '*');
}

std::vector<NodeDown> parse_sinfo(std::string_view text, const std::vector<std::string>& hosts) {
  std::vector<NodeDown> out;
  for (auto line : split(text, '\n')) {
    const auto fields = split(trim(line), '|');
    if (fields.size() < 2) {
      continue;
    }
    auto host = job_host(trim(fields[0]), hosts);
    const auto state = std::string(trim(fields[1]));
    const bool seen = std::any_of(out.begin(), out.end(), [&](const NodeDown& d) { return d.host == host; });
    if (!host.empty() && !seen && slurm_not_up(state)) {
      auto reason = fields.size() > 2 ? std::string(trim(fields[2])) : std::string();
      out.push_back({std::move(host), state, reason == "none" ? "" : std::move(reason)});
    }
  }
  return out;
}

/// `pbsnodes -l`: "node2    down    the reason" (offline, down, unknown, state-unknown...).
std::vector<NodeDown> parse_pbsnodes(std::string_view text, const std::vector<std::string>& hosts) {
  std::vector<NodeDown> out;
  for (auto line : split(text, '\n')) {
    std::vector<std::string_view> words;
    for (auto w : split(trim(line), ' ')) {
      if (!trim(w).empty()) {
        words.push_back(trim(w));
      }
    }
    if (words.size() < 2) {
      continue;
    }
    if (auto host = job_host(words[0], hosts); !host.empty()) {
      std::string reason;
      for (std::size_t i = 2; i < words.size(); ++i) {
        reason += (reason.empty() ? "" : " ") + std::string(words[i]);
      }
      out.push_back({std::move(host), std::string(words[1]), std::move(reason)});
    }
  }
  return out;
}

}  // namespace

std::string stop_notice(int signo, std::string_view whom, bool many, double grace_s) {
  const auto grace = std::to_string(static_cast<long>(grace_s));
  if (signo == SIGINT) {
    return "SIGINT sent to " + std::string(whom) + ": waiting up to " + grace + " s for " + (many ? "them" : "it") +
           " to stop, then SIGKILL (Ctrl-C again to kill now)";
  }
  const std::string why = signo == SIGTERM  ? " (walltime or scancel?)"
                          : signo == SIGHUP ? " (the terminal closed?)"
                                            : "";
  return signal_name(signo) + " received" + why + ": sent to " + std::string(whom) + ", SIGKILL in " + grace + " s";
}

int ranks_heard(const std::vector<RankWatch>& ranks) {
  return static_cast<int>(
      std::count_if(ranks.begin(), ranks.end(), [](const RankWatch& w) { return !w.host.empty(); }));
}

bool every_rank_succeeded(const std::vector<RankWatch>& ranks, int nprocs) {
  return nprocs > 0 && static_cast<int>(ranks.size()) == nprocs &&
         std::all_of(ranks.begin(), ranks.end(), [](const RankWatch& w) { return w.ended && w.exit_code == 0; });
}

std::vector<std::string> node_state_command(Scheduler scheduler, const std::vector<std::string>& hosts) {
  if (hosts.empty()) {
    return {};
  }
  if (scheduler == Scheduler::slurm) {
    if (hosts.size() > kNamedNodesMax) {  // one argument holds at most 128 KiB: every node, filtered here
      return {"sinfo", "-h", "-N", "-o", "%N|%T|%E"};
    }
    std::vector<std::string> names;
    for (const auto& h : hosts) {
      names.push_back(short_hostname(h));
    }
    return {"sinfo", "-h", "-N", "-n", join(names, ","), "-o", "%N|%T|%E"};
  }
  if (scheduler == Scheduler::pbs) {
    return {"pbsnodes", "-l"};
  }
  return {};
}

std::vector<NodeDown> parse_node_states(Scheduler scheduler, std::string_view text,
                                        const std::vector<std::string>& hosts) {
  return scheduler == Scheduler::slurm ? parse_sinfo(text, hosts)
         : scheduler == Scheduler::pbs ? parse_pbsnodes(text, hosts)
                                       : std::vector<NodeDown>{};
}

std::vector<std::string> not_started_report(std::string_view launcher, double seconds, int nprocs,
                                            const std::vector<NodeDown>& down, bool asked) {
  std::vector<std::string> lines;
  const auto after = std::to_string(static_cast<long>(seconds)) + " s";
  lines.push_back("no rank of " + count_of(static_cast<std::size_t>(nprocs), "rank") + " has started " + after +
                  " after " + std::string(launcher) + " began (--start-timeout)");
  if (!down.empty()) {
    std::vector<std::string> names;
    for (const auto& d : down) {
      names.push_back(d.host);
      lines.push_back("  " + d.host + ": " + d.state + (d.reason.empty() ? "" : " (" + d.reason + ")"));
    }
    const auto list = join(names, ",");
    lines.insert(lines.begin() + 1, "the scheduler has " + std::string(down.size() == 1 ? "this node" : "these nodes") +
                                        " of the job down:");
    lines.push_back("leave " + std::string(down.size() == 1 ? "it" : "them") +
                    " out: --spare-nodes N (ezpz keeps N nodes back and swaps a bad one in), a --hostfile without " +
                    list + ", or a new job without " + std::string(down.size() == 1 ? "it" : "them") +
                    " (sbatch/qsub with the node excluded, ezpz submit --exclude-from FILE)");
  } else {
    lines.push_back(asked ? "the scheduler has every node of the job up: is " + std::string(launcher) +
                                " waiting for resources (another step holding them) or unable to reach a node?"
                          : "is " + std::string(launcher) + " waiting for resources, or unable to reach a node?");
    lines.push_back("check the job's nodes: ezpz doctor --nodes; wait longer: --start-timeout SECONDS (0: forever)");
  }
  return lines;
}

}  // namespace ezpz::core
