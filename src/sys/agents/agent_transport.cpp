#include "sys/agents/agent_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>
#include <poll.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/yeet/outcome.hpp"
#include "sys/agents/agent.hpp"
#include "sys/agents/exec_words.hpp"
#include "sys/agents/net.hpp"
#include "sys/agents/session.hpp"

namespace ezpz::sys {

/// Why the host an agent-stdio child is for has no agent (the head's open_nodes knows).
constexpr const char* kNoAgentVar = "EZPZ_NO_AGENT_WHY";
namespace {

using Clock = std::chrono::steady_clock;

/// A result line for `host` that failed with `why`, on stdout (the parent reads it as the node's).
void report_failure(const std::string& host, const std::string& why) {
  core::NodeResult r;
  r.host = host;
  r.error = why;
  const auto line = core::encode_result(r) + "\n";
  (void)write_all(1, line.data(), line.size());
}

}  // namespace

std::string AgentTransport::secret_hex() {
  if (secret_.empty()) {
    secret_ = env_or_empty(core::kSecretVar);
  }
  return secret_;
}

const core::AgentDirectory& AgentTransport::directory() {
  if (!have_directory_) {
    have_directory_ = true;
    if (auto d = core::decode_directory(env_or_empty(core::kDirectoryVar))) {
      directory_ = std::move(*d);
    }
  }
  return directory_;
}

core::RemoteProcess AgentTransport::start(const std::string& host, const core::RemoteCommand& command,
                                          const core::ReachSpec& spec, const std::string& report_as) {
  const bool with_stdin = command.in != core::Stdin::none;
  const bool gated = command.in == core::Stdin::gated_pipe;
  core::RemoteProcess p;
  OwnedPipe from_child;
  OwnedPipe to_child;
  OwnedFd null_in;
  const OwnedFd self = open_self_owned();
  if (!self.valid() || !from_child.open() ||
      (with_stdin ? !to_child.open() : !(null_in = open_null(O_RDONLY)).valid())) {
    return p;
  }
  if (with_stdin) {
    widen_pipe(to_child.write_end());  // a relay's stream
  }

  const auto& dir = directory();
  const auto it = dir.find(host);
  std::vector<std::string> words = {"ezpz",
                                    std::string(core::kAgentStdioRow),
                                    report_as,
                                    host,
                                    it == dir.end() ? std::string() : it->second,
                                    spec.encrypt ? "1" : "0"};
  words.insert(words.end(), command.args.begin(), command.args.end());
  auto argv = pointers(words);
  // The secret goes in the child's environment, never on its command line (and why the host
  // has no agent, when it has none).
  const auto why = missing_.find(host);
  auto env_words = environment_plus({std::string(core::kSecretVar) + "=" + secret_hex(),
                                     std::string(kNoAgentVar) + "=" + (why == missing_.end() ? "" : why->second)});
  auto envp = pointers(env_words);
  const int child_in = with_stdin ? to_child.read_end() : null_in.get();
  const pid_t pid = ::fork();
  if (pid == 0) {  // async-signal-safe calls only until exec (the caller may have threads)
    move_fd(child_in, 0);
    move_fd(from_child.write_end(), 1);
    if (gated && with_stdin && !wait_at_gate()) {
      ::_exit(0);
    }
    ::signal(SIGPIPE, SIG_DFL);
    exec_self(self.get(), argv.data(), envp.data());
    ::_exit(127);
  }
  if (pid < 0) {
    return p;
  }
  p.pid = pid;
  p.in = with_stdin ? to_child.take_write().release() : -1;
  p.out = from_child.take_read().release();
  return p;
}

int AgentTransport::child_main(core::TransportKind /*kind*/, const std::vector<std::string>& args) {
  if (args.size() < 5) {
    log::line("ezpz __agent-stdio: internal use (REPORT_AS HOST ADDRESS ENCRYPT ARGS...)");
    return 2;
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    ::signal(sig, SIG_DFL);
  }
  ::signal(SIGPIPE, SIG_IGN);  // a closed socket is an error return, not a death
  const auto& report_as = args[0];
  const auto& host = args[1];
  const auto& address = args[2];
  const std::vector<std::string> command(args.begin() + 4, args.end());
  const auto secret = secret_from_hex(secret_hex());
  if (!secret) {
    report_failure(report_as, "no run secret in the environment (" + std::string(core::kSecretVar) + ")");
    return 255;
  }
  if (address.empty()) {
    const char* why = std::getenv(kNoAgentVar);
    report_failure(report_as, "no agent on " + host + ": " +
                                  (why != nullptr && *why != '\0'
                                       ? std::string(why)
                                       : std::string("the launcher did not start one there, or it never called back")));
    return 255;
  }
  std::string why;
  auto fd = connect_to(address, 30000, why);
  if (!fd.valid()) {
    report_failure(report_as, host + ": " + why);
    return 255;
  }
  auto ch = SecureChannel::open(std::move(fd), SecureChannel::Role::client, *secret,
                                args[3] == "1" ? SecureChannel::Sealing::encrypt : SecureChannel::Sealing::authenticate,
                                30000, why);
  if (!ch) {
    report_failure(report_as, host + " (" + address + "): " + why);
    return 255;
  }
  const int rc = run_client(*ch, command, why);
  if (rc == 255 && !why.empty()) {
    report_failure(report_as, host + ": " + why);
  }
  return rc;
}

int AgentTransport::node_main(core::TransportKind /*kind*/, const std::vector<std::string>& args) {
  return agent_main(args);
}

}  // namespace ezpz::sys
