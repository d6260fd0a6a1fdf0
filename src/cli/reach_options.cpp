#include "cli/reach_options.hpp"

#include <CLI/App.hpp>
#include <CLI/Validators.hpp>

#include "core/base/log.hpp"

namespace ezpz::cli {

void add_reach_options(CLI::App& app, core::ReachOptions& options, const std::string& when, HsnFlag hsn) {
  // "With --nodes: launcher ..." reads well; alone, the text starts with a capital.
  auto text = [&](std::string s) {
    if (when.empty() && !s.empty()) {
      s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    }
    return when + s;
  };
  app.add_option("--transport", options.transport,
                 text("how ezpz starts on other nodes: launcher (the job's srun/mpiexec/mpirun starts one agent per "
                      "node; TCP, no SSH), ssh, or auto (default: the launcher inside a job; [yeet] transport in "
                      "config.toml sets another)"))
      ->check(CLI::IsMember({"auto", "launcher", "ssh"}));
  app.add_option("--ssh-command", options.ssh_command,
                 text("reach the nodes with this ssh client (e.g. ssh, for host-based or GSSAPI login) instead of "
                      "the built-in libssh"))
      ->type_name("CMD");
  app.add_flag("--accept-new-host-keys", options.accept_new_host_keys,
               text("add host keys of nodes not yet in ~/.ssh/known_hosts (a changed key is always an error)"));
  if (hsn == HsnFlag::offered) {
    app.add_flag("--no-hsn", options.no_hsn, text("use the hostfile's names, not <host>-hsn0 when that resolves"));
  }
}

void add_node_log_level(CLI::App& app, std::string& level) {
  app.add_option("--log-level", level,
                 "Diagnostics on stderr, named by this node: info, debug or trace (the head's -v)")
      ->check(CLI::IsMember({"info", "debug", "trace"}))
      ->group("");  // the head's business, not the user's: -v there
}

void pass_log_level(std::vector<std::string>& args) {
  if (log::enabled(log::Level::info)) {
    args.push_back("--log-level=" + log::level_name());
  }
}

void start_node_logging(const std::string& level, const std::string& host) {
  if (!level.empty()) {
    log::set_origin(host);
    log::set_level(log::level_from(0, level));
  }
}

}  // namespace ezpz::cli
