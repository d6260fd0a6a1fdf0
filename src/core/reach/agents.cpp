#include "core/reach/agents.hpp"

#include <algorithm>

#include "core/base/strings.hpp"
#include "core/reach/spec.hpp"
#include "core/reach/targets.hpp"

namespace ezpz::core {

std::optional<TransportRequest> transport_request_from_string(std::string_view name) {
  if (name == "ssh") {
    return TransportRequest::ssh;
  }
  if (name == "launcher") {
    return TransportRequest::launcher;
  }
  if (name == "auto") {
    return TransportRequest::automatic;
  }
  return std::nullopt;
}

namespace {

/// The launcher this job's agents would be started by, or why there is none.
Expected<LauncherChoice> job_launcher(const ClusterInfo& cluster, const LauncherInventory& inventory) {
  if (cluster.scheduler == Scheduler::local) {
    return usage_error("no PBS or Slurm job here: the launcher transport starts its relays with the job's launcher");
  }
  EZPZ_TRY_ASSIGN(auto choice, choose_launcher(LaunchRequest{}, cluster, inventory));
  if (choice.program == "local") {
    return usage_error("no launcher found on PATH for this " + std::string(to_string(cluster.scheduler)) + " job");
  }
  const auto* found = choice.program == "srun"     ? &inventory.srun
                      : choice.program == "mpirun" ? &inventory.mpirun
                                                   : &inventory.mpiexec;
  if (!found->has_value() || !(*found)->path) {
    return usage_error(choice.program + " is not on PATH in this " + std::string(to_string(cluster.scheduler)) +
                       " job");
  }
  return choice;
}

}  // namespace

Expected<TransportChoice> choose_transport(const TransportAsk& ask, const ClusterInfo& cluster,
                                           const LauncherInventory& inventory) {
  TransportChoice choice;
  const auto by = [&](std::string_view otherwise) { return ask.origin.empty() ? std::string(otherwise) : ask.origin; };
  if (ask.request == TransportRequest::ssh) {
    choice.why = by("--transport ssh");
    return choice;
  }
  auto launcher = job_launcher(cluster, inventory);
  if (!launcher) {
    if (ask.request == TransportRequest::launcher) {
      return usage_error(by("--transport launcher") + ": " + launcher.error().message +
                         " (run yeet inside the job, or use --transport ssh)");
    }
    choice.why = by("auto") + ": " + launcher.error().message + ", so SSH";
    return choice;
  }
  choice.kind = TransportKind::launcher;
  choice.launcher = *launcher;
  choice.why = by(ask.request == TransportRequest::launcher ? "--transport launcher" : "auto") + ": " +
               std::string(to_string(cluster.scheduler)) + " job, agents started by " + launcher->program + " (" +
               std::string(to_string(launcher->style)) + ")";
  return choice;
}

std::vector<std::string> agent_step_argv(const LauncherChoice& launcher, const HostList& hosts,
                                         const std::string& hostfile, const std::string& exe,
                                         AgentStepOptions options) {
  const bool ship = options.ship;
  const bool as_root = options.as_root;
  const auto n = std::to_string(hosts.size());
  std::vector<std::string> argv;
  switch (launcher.style) {
    case LauncherStyle::srun:
      // --overlap: beside a training step that holds the job's CPUs; no stdin for any task.
      // --bcast (`ship`): Slurm copies this binary to each node's /tmp first (the nodes need not
      // share its path); each agent removes its copy once it runs (nothing is left on the nodes).
      argv = {launcher.program,
              "--overlap",
              "--quiet",
              "--input=none",
              "--chdir=/",
              "--kill-on-bad-exit=0",
              "--export=ALL",
              "-N" + n,
              "-n" + n,
              "--ntasks-per-node=1",
              "--nodelist=" + join(hosts, ",")};
      if (ship) {
        argv.insert(argv.begin() + 7, "--bcast=" + std::string(kBcastDir));
      }
      break;
    case LauncherStyle::openmpi:
    case LauncherStyle::sophia:
      argv = {launcher.program, "-np", n, "--hostfile", hostfile, "--map-by", "ppr:1:node"};
      if (as_root) {
        argv.emplace_back("--allow-run-as-root");
      }
      argv.insert(argv.end(), {"-x", std::string(kSecretVar), "-x", std::string(kHeadVar)});
      break;
    case LauncherStyle::mpich:
      argv = {launcher.program, "-n", n, "-ppn", "1", "-f", hostfile};
      break;
    case LauncherStyle::pals:
    case LauncherStyle::auto_detect:
    case LauncherStyle::local:
      argv = {launcher.program, "--envall", "--np=" + n, "--ppn=1", "--hostfile=" + hostfile};
      break;
  }
  argv.insert(argv.end(), {exe, std::string(kAgentRow)});
  return argv;
}

Expected<NodeReach> plan_reach(const Env& env, const SystemProbe& probe, const std::string& hostfile, HsnNames hsn,
                               const TransportAsk& ask, DownNodes down) {
  EZPZ_TRY_ASSIGN(auto machines, load_machines(env, probe));
  EZPZ_TRY_ASSIGN(auto cluster,
                  discover_cluster(env, machines, std::nullopt,
                                   hostfile.empty() ? std::nullopt : std::optional<std::string>(hostfile), probe));
  return reach_from(cluster, env, probe, hsn, ask, down);
}

namespace {

/// Which of `targets` the job's scheduler has down (none asked outside a job, or when it cannot be).
std::vector<NodeDown> nodes_down(const ClusterInfo& cluster, const HostList& targets, const SystemProbe& probe) {
  const auto command = node_state_command(cluster.scheduler, targets);
  if (command.empty() || !probe.find_program(command.front())) {
    return {};
  }
  auto out = probe.run_program(command, {}, {}, 10);
  return out && out->exit_code == 0 ? parse_node_states(cluster.scheduler, out->output, targets)
                                    : std::vector<NodeDown>{};
}

}  // namespace

Expected<NodeReach> reach_from(const ClusterInfo& cluster, const Env& env, const SystemProbe& probe, HsnNames hsn,
                               const TransportAsk& ask, DownNodes down) {
  NodeReach reach;
  auto choice = choose_transport(ask, cluster, find_launchers(probe));
  if (!choice && ask.configured && reach_targets(cluster.hosts, env.hostname, HsnNames::never, probe).empty()) {
    // The config's launcher outside a job, with no other node to reach: a copy here only.
    choice = choose_transport(TransportAsk(), cluster, find_launchers(probe));
  }
  if (!choice) {
    return choice.error();
  }
  reach.choice = std::move(*choice);
  const bool launcher = reach.choice.kind == TransportKind::launcher;
  reach.targets = reach_targets(cluster.hosts, env.hostname, launcher ? HsnNames::never : hsn, probe);
  // srun starts the agents on the targets by name; an MPI launcher on every host of the job's
  // hostfile (this node's agent hears it is not a target and ends).
  const bool by_name = reach.choice.launcher.style == LauncherStyle::srun;
  reach.down = down == DownNodes::leave_out ? nodes_down(cluster, reach.targets, probe) : std::vector<NodeDown>{};
  if (!launcher || by_name) {  // a down node left out: srun would start no agent at all, ssh waits for it
    std::erase_if(reach.targets, [&](const std::string& h) {
      return std::any_of(reach.down.begin(), reach.down.end(), [&](const NodeDown& d) { return d.host == h; });
    });
  }
  if (!launcher || reach.targets.empty()) {
    return reach;
  }
  const bool have_file = cluster.host_source.kind == HostSource::Kind::file;
  if (!by_name && !have_file) {
    return usage_error("--transport launcher with " + reach.choice.launcher.program +
                       " needs the job's hosts in a file: pass --hostfile");
  }
  reach.agent_step = agent_step_argv(reach.choice.launcher, by_name ? reach.targets : cluster.hosts,
                                     have_file ? cluster.host_source.value : "", env.self_exe,
                                     {.as_root = env.uid == 0, .ship = node_local_binary(env.self_exe)});
  reach.agent_head = master_address({env.hostname.empty() ? "localhost" : env.hostname}, cluster.machine, probe);
  return reach;
}

Expected<TransportAsk> transport_request(const std::string& transport, const std::string& ssh_command, const Env& env,
                                         const SystemProbe& probe) {
  if (!transport.empty() && transport != "auto") {
    return TransportAsk(transport_request_from_string(transport).value_or(TransportRequest::automatic),
                        "--transport " + transport);
  }
  if (!ssh_command.empty()) {
    return TransportAsk(TransportRequest::ssh, "--ssh-command");
  }
  if (transport == "auto") {  // asked for by name: the config file does not override it
    return TransportAsk();
  }
  EZPZ_TRY_ASSIGN(auto settings, load_yeet_settings(env, probe));
  if (settings.transport.empty() || settings.transport == "auto") {
    return TransportAsk();
  }
  return TransportAsk(*transport_request_from_string(settings.transport),
                      "transport = \"" + settings.transport + "\" in " + settings.source, TransportAsk::Asker::config);
}

std::string encode_directory(const AgentDirectory& directory) {
  std::string out;
  for (const auto& [host, address] : directory) {
    out += (out.empty() ? "" : ",") + host + "=" + address;
  }
  return out;
}

Expected<AgentDirectory> decode_directory(std::string_view text) {
  AgentDirectory out;
  for (const auto part : split(text, ',')) {
    const std::string entry(part);
    if (entry.empty()) {
      continue;
    }
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      return usage_error("not an agent directory entry (node=address:port): " + entry);
    }
    out[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return out;
}

std::optional<std::string> match_agent(const std::vector<std::string>& names, const HostList& targets) {
  auto short_name = [](const std::string& h) { return h.substr(0, h.find('.')); };
  for (const auto& t : targets) {
    if (std::find(names.begin(), names.end(), t) != names.end()) {
      return t;
    }
  }
  for (const auto& t : targets) {
    for (const auto& n : names) {
      if (!n.empty() && short_name(n) == short_name(t)) {
        return t;
      }
    }
  }
  return std::nullopt;
}

bool agent_may_run(const std::vector<std::string>& args) {
  static const std::vector<std::string_view> rows = {kRelayRow, "__yeet-send", "__doctor-node", "kill"};
  return !args.empty() && std::find(rows.begin(), rows.end(), args[0]) != rows.end();
}

}  // namespace ezpz::core
