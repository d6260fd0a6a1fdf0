// AgentTransport's run: the launcher step that starts the agents, their registrations, the end.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>
#include <thread>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/launch/failure.hpp"
#include "sys/agents/agent_transport.hpp"
#include "sys/agents/exec_words.hpp"
#include "sys/agents/net.hpp"

namespace ezpz::sys {
namespace {

using Clock = std::chrono::steady_clock;

/// How long the end of a run waits for its agents to end: longer than an agent waits for its
/// sessions (agent.cpp), so that one still cleaning up is not cut short.
constexpr auto kAgentsEndWait = std::chrono::seconds(12);

/// Whether the peer of connection `fd` has not acknowledged what was last sent to it, sent
/// twice more since (a segment lost once is not a dead node): a node whose link is down, which
/// will not answer within any wait.
bool unanswered(int fd) {
  tcp_info info{};
  socklen_t size = sizeof(info);
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 && info.tcpi_unacked > 0 &&
         info.tcpi_retransmits >= 2;
}

/// Half-close each agent's connection (the agent sees its end) and wait up to `wait` for each
/// to close its side; one whose node does not even acknowledge the end is not waited for.
/// True when every one closed.
bool await_agents_end(std::vector<SecureChannel>& controls, Clock::duration wait) {
  std::vector<pollfd> open;
  for (const auto& ch : controls) {
    if (::shutdown(ch.fd(), SHUT_WR) == 0) {
      open.push_back({ch.fd(), POLLIN, 0});
    }
  }
  const auto deadline = Clock::now() + wait;
  bool all = true;
  char sink[4096];
  while (!open.empty() && Clock::now() < deadline) {
    if (::poll(open.data(), open.size(), 100) < 0 && errno != EINTR) {
      return false;
    }
    std::erase_if(open, [&](const pollfd& p) {
      if (p.revents == 0) {
        const bool lost = unanswered(p.fd);
        all = all && !lost;
        return lost;
      }
      const auto n = ::read(p.fd, sink, sizeof(sink));  // anything it still says is not read
      return n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
    });
  }
  return all && open.empty();
}

/// Start `argv` (found on PATH) with `env`, stdin from /dev/null, stdout and stderr into `out`
/// (kept for a failure's message: a launcher's usage text is not the user's to read), or onto
/// our stderr when there is none.
OwnedChild start_step(std::vector<std::string> argv_words, std::vector<std::string> env_words, int out) {
  auto argv = pointers(argv_words);
  auto envp = pointers(env_words);
  const OwnedFd null = open_null(O_RDONLY);
  const pid_t pid = ::fork();
  if (pid == 0) {  // async-signal-safe calls only until exec
    if (null.valid()) {
      move_fd(null.get(), 0);
    }
    if (out >= 0) {
      ::dup2(out, 2);
    }
    ::dup2(2, 1);
    ::signal(SIGPIPE, SIG_DFL);
    cloexec_inherited();
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return OwnedChild(pid > 0 ? pid : -1);
}

/// One agent's registration on the accepted `conn`: its channel and the target it is, or nullopt.
std::optional<std::pair<std::string, SecureChannel>> registration(OwnedFd conn, const Secret& secret,
                                                                  const std::set<std::string>& waiting,
                                                                  std::string& address) {
  std::string why;
  // A short leash: registrations are taken one at a time, and a stranger must not hold up the
  // agents queued behind it (they wait for the head far longer: agent.cpp).
  auto ch = SecureChannel::open(std::move(conn), SecureChannel::Role::server, secret, true, 2000, why);
  char type = 0;
  std::string data;
  if (!ch || !ch->await(type, data, 2000) || type != 'H') {
    return std::nullopt;  // not an agent of this run: dropped, nothing sent
  }
  const auto hello = nlohmann::json::parse(data, nullptr, false);
  if (!hello.is_object() || !hello.contains("names") || !hello["names"].is_array() || !hello.contains("port") ||
      !hello["port"].is_number_integer()) {
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (const auto& n : hello["names"]) {
    if (n.is_string()) {
      names.push_back(n.get<std::string>());
    }
  }
  const auto target = core::match_agent(names, core::HostList(waiting.begin(), waiting.end()));
  if (!target) {
    (void)ch->send('N', "not a node this run sends to");
    return std::nullopt;
  }
  address = peer_address(ch->fd()) + ":" + std::to_string(hello["port"].get<int>());
  return std::make_pair(*target, std::move(*ch));
}

}  // namespace

std::map<std::string, std::string> AgentTransport::open_nodes(const core::HostList& hosts,
                                                              const core::BroadcastSpec& spec,
                                                              const std::atomic<bool>* stop,
                                                              const std::atomic<bool>* cancel) {
  missing_ = start_agents(hosts, spec, stop, cancel);  // a command started on one of them says why
  return missing_;
}

std::map<std::string, std::string> AgentTransport::start_agents(const core::HostList& hosts,
                                                                const core::BroadcastSpec& spec,
                                                                const std::atomic<bool>* stop,
                                                                const std::atomic<bool>* cancel) {
  std::map<std::string, std::string> missing;
  auto fail_all = [&](const std::string& why) {
    for (const auto& h : hosts) {
      missing[h] = why;
    }
    return missing;
  };
  close_nodes();
  have_directory_ = true;
  directory_.clear();
  if (hosts.empty()) {
    return missing;
  }
  const auto secret = new_secret();
  std::string why;
  auto listener = listen_any(why);
  if (!secret || !listener || spec.agent_step.empty()) {
    return fail_all(!secret ? "no random bytes for the run's secret" : !listener ? why : "no launcher step planned");
  }
  secret_ = sys::secret_hex(*secret);
  const std::string head = spec.agent_head + ":" + std::to_string(listener->port);
  step_output_ = OwnedFd(::memfd_create("ezpz-agent-step", MFD_CLOEXEC));
  step_ = start_step(
      spec.agent_step,
      environment_plus({std::string(core::kSecretVar) + "=" + secret_, std::string(core::kHeadVar) + "=" + head}),
      step_output_.get());
  if (!step_.owned()) {
    return fail_all("cannot start " + spec.agent_step.front());
  }
  // Each agent calls back once: a target it is, its address (as we see it) and port.
  std::set<std::string> waiting(hosts.begin(), hosts.end());
  std::map<std::string, SecureChannel> registered;
  std::optional<int> step_ended;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(spec.agent_timeout_s * 1000));
  const auto stopped = [stop, cancel] {
    return (stop != nullptr && stop->load()) || (cancel != nullptr && cancel->load());
  };
  while (!waiting.empty() && !step_ended && Clock::now() < deadline && !stopped()) {
    pollfd p{listener->fd.get(), POLLIN, 0};
    (void)::poll(&p, 1, 250);
    while (!waiting.empty()) {
      OwnedFd conn = accept_one(listener->fd.get());
      if (!conn.valid()) {
        break;
      }
      std::string address;
      if (auto r = registration(std::move(conn), *secret, waiting, address)) {
        directory_[r->first] = address;
        waiting.erase(r->first);
        registered.emplace(r->first, std::move(r->second));
      }
    }
    step_ended = step_.try_wait();
  }
  if (stopped()) {  // Ctrl-C, or not needed any more: the step goes now (it may be waiting for resources)
    end_step(true);
    return fail_all("interrupted");
  }
  const auto text = core::encode_directory(directory_);
  for (auto& [host, ch] : registered) {
    if (ch.send('A', text)) {
      controls_.push_back(std::move(ch));
    } else {
      missing[host] = "its agent closed its connection";
    }
  }
  const auto said = step_ended ? step_said() : std::string();
  if (registered.empty() && step_ended) {  // not one agent ran: the binary, most likely
    return fail_all(spec.agent_step.front() + " ended (wait status " + std::to_string(*step_ended) +
                    ") before any agent called back" + said + ": can every node run " + spec.agent_step.end()[-2] +
                    "? (srun ships it; mpiexec and mpirun need it on a shared filesystem: copy ezpz there)");
  }
  for (const auto& h : waiting) {
    missing[h] = step_ended ? spec.agent_step.front() + " ended (wait status " + std::to_string(*step_ended) +
                                  ") before an agent called back from " + h + said
                            : "no agent called back from " + h + " within " +
                                  std::to_string(static_cast<int>(spec.agent_timeout_s)) + " s (started by " +
                                  spec.agent_step.front() + ")";
  }
  return missing;
}

void AgentTransport::close_nodes() {
  // Each agent sees its connection end, waits for its sessions' commands to clean up, then
  // ends, and its end closes the connection: the step is ended only once every agent that can
  // still be heard from has ended (ending it kills whatever of it is left). One that does not
  // acknowledge the end, or says nothing within the wait, holds the step: it is ended at once.
  const bool all_ended = await_agents_end(controls_, kAgentsEndWait);
  controls_.clear();
  end_step(!all_ended);
}

std::string AgentTransport::step_said() const {
  if (!step_output_.valid()) {
    return "";
  }
  struct stat st {};
  const off_t size = ::fstat(step_output_.get(), &st) == 0 ? st.st_size : 0;
  const off_t from = std::max<off_t>(0, size - (64 << 10));  // the end of it is what it last said
  std::string text(static_cast<std::size_t>(size - from), '\0');
  const auto n = ::pread(step_output_.get(), text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const auto said = core::launcher_says(text);
  return said.empty() ? "" : " (it said: " + said + ")";
}

void AgentTransport::end_step(bool at_once) {
  if (!step_.owned()) {
    return;
  }
  // Agents end as soon as their connections do, and the step a moment later. One that does not
  // is asked to (srun passes SIGTERM on), then killed: srun waits for every node's task, and a
  // node whose link is down never hears of the end (its agent ends by itself when TCP notices).
  for (int signal : {at_once ? SIGTERM : 0, SIGTERM}) {
    if (signal != 0) {
      ::kill(step_.pid(), signal);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(3);
    while (Clock::now() < deadline) {
      if (step_.try_wait()) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  step_ = OwnedChild();  // SIGKILL and reap
}

}  // namespace ezpz::sys
