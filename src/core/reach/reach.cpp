#include "core/reach/reach.hpp"

#include <tuple>

#include "core/base/shell.hpp"
#include "core/base/strings.hpp"

namespace ezpz::core {

Expected<ReachPlan> plan_reach_spec(const ReachOptions& options, const Env& env, const SystemProbe& probe,
                                    const ClusterInfo* cluster) {
  ReachPlan out;
  auto ask = transport_request(options.transport, options.ssh_command, env, probe);
  if (!ask) {
    auto e = ask.error();
    e.kind = ErrorKind::config;
    return e;
  }
  out.ask = *ask;
  const auto hsn = options.no_hsn ? HsnNames::never : HsnNames::prefer;
  const auto down = options.leave_out_down ? DownNodes::leave_out : DownNodes::keep;
  EZPZ_TRY_ASSIGN(auto reach, cluster != nullptr ? reach_from(*cluster, env, probe, hsn, *ask, down)
                                                 : plan_reach(env, probe, options.hostfile, hsn, *ask, down));
  out.reach = std::move(reach);
  auto& spec = out.spec;
  spec.transport = out.reach.choice.kind;
  spec.agent_step = out.reach.agent_step;
  spec.agent_head = out.reach.agent_head;
  spec.self_exe = env.self_exe;
  spec.ssh_command = split_command(options.ssh_command);
  spec.accept_new_host_keys = options.accept_new_host_keys;
  spec.user = env.get("USER").value_or("");
  if (!out.reach.targets.empty()) {  // what nodes check, or are sent (tens of ms: not for nothing)
    std::tie(spec.exe_digest, spec.exe_size) = probe.self_digest();
  }
  return out;
}

std::string reach_transport_text(const ReachPlan& reach) {
  if (reach.spec.transport == TransportKind::launcher) {
    return "the job's launcher (agents over TCP)";
  }
  if (reach.spec.ssh_command.empty()) {
    return "ssh (built-in libssh)";
  }
  return "ssh (" + join(reach.spec.ssh_command, " ") + ")";
}

}  // namespace ezpz::core
