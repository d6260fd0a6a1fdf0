// doctor's checks of the traps sites have written down: a collective library without its network
// plugin (a silent fall back to TCP), an empty MODULEPATH where the site's software comes as
// modules, Cray MPICH's GPU support without its GTL library, a munge socket its daemon left, and
// whether the job outlives a node's failure (--spare-nodes).
#include <algorithm>

#include "core/base/strings.hpp"
#include "core/doctor/doctor.hpp"
#include "core/job/node_failure.hpp"

namespace ezpz::core {
namespace {

/// `dir/name` for the first file in a LD_LIBRARY_PATH directory whose name starts with one of
/// `prefixes`; "" when none does.
std::string find_library(const Env& env, const FileProbe& probe, const std::vector<std::string>& prefixes) {
  const auto path = env.get("LD_LIBRARY_PATH").value_or("");  // (split's views point into it)
  for (auto dir : split(path, ':')) {
    if (dir.empty()) {
      continue;
    }
    for (const auto& name : probe.list_dir(std::string(dir))) {
      if (std::any_of(prefixes.begin(), prefixes.end(), [&](const auto& p) { return starts_with(name, p); })) {
        return std::string(dir) + "/" + name;
      }
    }
  }
  return "";
}

}  // namespace

CheckResult check_net_plugin(const Env& env, const FileProbe& probe, const LocalFacts& facts) {
  const std::string name = "net-plugin";
  if (!facts.cluster || facts.cluster->machine.net_plugin.empty()) {
    return check_ok(name, "machine " + (facts.cluster ? facts.cluster->machine.name : std::string("local")) +
                              " needs no network plugin for its collectives");
  }
  const auto& m = facts.cluster->machine;
  const auto wanted = join(m.net_plugin, "*.so or ") + "*.so";
  const auto chosen = env.get("NCCL_NET_PLUGIN").value_or("");
  if (to_lower(chosen) == "none") {
    return check_warning(name, "NCCL_NET_PLUGIN=none on " + m.name + ": NCCL uses TCP sockets between nodes",
                         "unset NCCL_NET_PLUGIN");
  }
  if (!chosen.empty() && chosen.front() == '/' && probe.is_file(chosen)) {
    return check_ok(name, "NCCL_NET_PLUGIN=" + chosen + ": traffic between nodes takes the fabric");
  }
  auto prefixes = m.net_plugin;
  if (!chosen.empty() && chosen.front() != '/') {  // NCCL loads libnccl-net-NAME.so (or NAME itself)
    prefixes = {"libnccl-net-" + chosen, chosen};
  }
  if (const auto found = find_library(env, probe, prefixes); !found.empty()) {
    return check_ok(name, found + " is on LD_LIBRARY_PATH: traffic between nodes takes the fabric");
  }
  return check_warning(name,
                       "no " + (chosen.empty() ? wanted : "NCCL_NET_PLUGIN=" + chosen) + " on LD_LIBRARY_PATH (" +
                           m.name +
                           "): NCCL falls back to TCP sockets between nodes with no error (8.3x slower on Perlmutter)",
                       m.net_plugin_hint.empty() ? "put the plugin's directory on LD_LIBRARY_PATH" : m.net_plugin_hint);
}

CheckResult check_modules(const Env& env, const LocalFacts& facts) {
  const std::string name = "modules";
  if (!facts.cluster || !facts.cluster->machine.modules) {
    return check_ok(name, "machine " + (facts.cluster ? facts.cluster->machine.name : std::string("local")) +
                              " has no module system to check");
  }
  const auto path = env.get("MODULEPATH").value_or("");
  if (trim(path).empty()) {
    return check_warning(name,
                         "MODULEPATH is empty on " + facts.cluster->machine.name +
                             ": every `module load` does nothing, silently (a batch script's non-login shell that "
                             "sourced Lmod's init leaves it so)",
                         "start the batch script with #!/bin/bash -l (or source /etc/profile) before any module "
                         "command, and never set -u before it");
  }
  return check_ok(name, "MODULEPATH holds " + count_of(split(path, ':').size(), "directory", "directories"));
}

CheckResult check_gpu_mpi(const Env& env, const FileProbe& probe) {
  const std::string name = "gpu-mpi";
  if (env.get("MPICH_GPU_SUPPORT_ENABLED").value_or("") != "1") {
    return check_ok(name, "MPICH_GPU_SUPPORT_ENABLED is not 1: no GTL library needed");
  }
  const auto preload = env.get("LD_PRELOAD").value_or("");
  for (auto lib : split(preload, ':')) {
    if (lib.find("libmpi_gtl_") != std::string_view::npos) {
      return check_ok(name, "MPICH_GPU_SUPPORT_ENABLED=1 and " + std::string(lib) + " is preloaded");
    }
  }
  const auto gtl = find_library(env, probe, {"libmpi_gtl_"});
  return check_warning(
      name,
      "MPICH_GPU_SUPPORT_ENABLED=1 but no GTL library is preloaded" +
          (gtl.empty() ? std::string() : " (" + gtl + " is on LD_LIBRARY_PATH, not linked)") +
          ": every rank whose MPI was built without it aborts at init ('GTL library is not linked', rc 139; "
          "Perlmutter's pytorch module)",
      "export MPICH_GPU_SUPPORT_ENABLED=0 unless your MPI calls pass GPU buffers (torch.distributed over "
      "NCCL/CCL does not); else LD_PRELOAD the GTL library");
}

CheckResult check_munge(const HostProbe& probe) {
  const std::string name = "munge";
  const std::string socket = "/run/munge/munge.socket.2";
  switch (probe.unix_socket(socket)) {
    case SocketState::absent:
      return check_ok(name, "no munge socket here: nothing to check");
    case SocketState::answers:
      return check_ok(name, "munged answers at " + socket);
    case SocketState::stale:
      return check_warning(name,
                           socket +
                               " is left by a munge daemon that is not running: every Open MPI mpirun waits about "
                               "2.4 s in PMIx's munge plugin",
                           "export PMIX_MCA_psec=native (or start munged)");
    case SocketState::other:
      break;
  }
  return check_ok(name, socket + " is not a socket ezpz can connect to: nothing to check");
}

CheckResult check_failover(const Env& env, const SystemProbe& probe) {
  const std::string name = "failover";
  using Kind = NodeFailureTolerance::Kind;
  const auto t = node_failure_tolerance(env, probe);
  switch (t.kind) {
    case Kind::no_job:
      return check_ok(name, "not in a Slurm or PBS job: nothing to check for --spare-nodes");
    case Kind::tolerant:
      return check_ok(name, t.message);
    case Kind::ends_job:
    case Kind::not_known:
      break;
  }
  // Not a fault for a job that does not swap nodes: said, with what --spare-nodes would need.
  return check_ok(name, t.message + " (for --spare-nodes: " + t.remedy + ")");
}

}  // namespace ezpz::core
