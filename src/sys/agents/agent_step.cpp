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

/// A connection has this long to prove it holds the run's secret (an agent does so in a round
/// trip), then this long to say its hello; past them it is not an agent, and goes.
constexpr auto kHandshakeWait = std::chrono::seconds(10);
constexpr auto kHelloWait = std::chrono::seconds(10);
/// The most handshakes under way at once (the oldest go first when more come).
constexpr std::size_t kMaxHandshakes = 512;

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

/// The target an agent's hello (`data`) names among `waiting`, and the agent's address (as we
/// see it, with the port it said); nullopt, the agent told so, when it names none.
std::optional<std::pair<std::string, std::string>> registration(SecureChannel& ch, const std::string& data,
                                                                const std::set<std::string>& waiting) {
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
    (void)ch.send('N', "not a node this run sends to");
    return std::nullopt;
  }
  return std::make_pair(*target, peer_address(ch.fd()) + ":" + std::to_string(hello["port"].get<int>()));
}

/// The agents' registrations, taken as their bytes come: a stranger at the port (anyone on the
/// node can find it), silent or with a hello it cannot follow with the secret, holds up no agent
/// and is dropped at its deadline.
class Registrations {
 public:
  Registrations(Listener listener, const Secret& secret)
      : listener_(std::move(listener)), handshakes_(secret, kHandshakeWait, kMaxHandshakes) {}

  /// Wait up to `ms` for what comes and take it: each agent that registers as one of `waiting`
  /// leaves it, its channel in `registered`, its address in `directory`.
  void serve(int ms, std::set<std::string>& waiting, std::map<std::string, SecureChannel>& registered,
             core::AgentDirectory& directory) {
    auto now = Clock::now();
    const bool listening = now >= handshakes_.rest_until();
    const auto next =
        std::min(handshakes_.drop_late(now), listening ? Clock::time_point::max() : handshakes_.rest_until());
    std::vector<pollfd> fds;
    if (listening) {
      fds.push_back({listener_.fd.get(), POLLIN, 0});
    }
    for (const auto& h : hellos_) {
      fds.push_back({h.first.fd(), POLLIN, 0});
    }
    handshakes_.add_fds(fds);
    const auto until_next = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    (void)::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(until_next, 0, ms)));
    std::vector<SecureChannel> done;
    for (const auto& p : fds) {
      if (p.revents != 0 && p.fd == listener_.fd.get()) {
        (void)handshakes_.accept_all(p.fd, done);  // false: out of descriptors, the listener rests
      } else if (p.revents != 0) {
        if (auto ch = handshakes_.advance(p.fd)) {
          done.push_back(std::move(*ch));
        }
      }
    }
    now = Clock::now();
    for (auto& ch : done) {
      heard_agent_ = true;  // it holds the run's secret: an agent of this run ran
      hellos_.emplace_back(std::move(ch), now + kHelloWait);
    }
    take_hellos(now, waiting, registered, directory);
  }

  /// Whether a connection proved it holds the run's secret (an agent ran, wherever it failed after).
  [[nodiscard]] bool heard_agent() const { return heard_agent_; }

 private:
  /// Each authenticated connection's hello, read as far as it came: a registration once whole.
  void take_hellos(Clock::time_point now, std::set<std::string>& waiting,
                   std::map<std::string, SecureChannel>& registered, core::AgentDirectory& directory) {
    for (std::size_t i = 0; i < hellos_.size();) {
      auto& [ch, by] = hellos_[i];
      const auto filled = ch.fill();
      char type = 0;
      std::string data;
      const auto got = ch.next(type, data);
      if (got == SecureChannel::Got::need_more && filled != SecureChannel::Got::closed && now <= by) {
        ++i;  // its hello is still to come
        continue;
      }
      if (got == SecureChannel::Got::record && type == 'H') {
        if (auto r = registration(ch, data, waiting)) {
          directory[r->first] = r->second;
          waiting.erase(r->first);
          registered.emplace(r->first, std::move(ch));
        }
      }
      // Registered, or gone, late, or not an agent for this run: dropped, nothing more said.
      hellos_.erase(hellos_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  Listener listener_;
  Handshakes handshakes_;
  std::vector<std::pair<SecureChannel, Clock::time_point>> hellos_;  ///< through the handshake, hello awaited
  bool heard_agent_ = false;
};

}  // namespace

std::map<std::string, std::string> AgentTransport::open_nodes(const core::HostList& hosts, const core::ReachSpec& spec,
                                                              const std::atomic<bool>* stop,
                                                              const std::atomic<bool>* cancel) {
  missing_ = start_agents(hosts, spec, stop, cancel);  // a command started on one of them says why
  return missing_;
}

std::map<std::string, std::string> AgentTransport::start_agents(const core::HostList& hosts,
                                                                const core::ReachSpec& spec,
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
  auto listener = listen_on(spec.agent_head, why);  // an address the agents dial: that alone
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
  Registrations registrations(std::move(*listener), *secret);
  while (!waiting.empty() && !step_ended && Clock::now() < deadline && !stopped()) {
    registrations.serve(250, waiting, registered, directory_);
    step_ended = step_.try_wait();
  }
  if (stopped()) {  // Ctrl-C, or not needed any more: the step goes now (it may be waiting for resources)
    end_step(StepEnd::at_once);
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
  if (registered.empty() && step_ended) {
    // An agent that ran says why it failed ("ezpz agent: ...") or got through the handshake; when
    // none did, the binary most likely could not run there.
    const bool ran = registrations.heard_agent() || step_text().find("ezpz agent:") != std::string::npos;
    return fail_all(spec.agent_step.front() + " ended (wait status " + std::to_string(*step_ended) +
                    ") before any agent called back" + said +
                    (ran ? ""
                         : ": can every node run " + spec.agent_step.end()[-2] +
                               "? (srun ships it; mpiexec and mpirun need it on a shared filesystem: copy ezpz "
                               "there)"));
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
  end_step(all_ended ? StepEnd::wait_first : StepEnd::at_once);
}

std::string AgentTransport::step_text() const {
  if (!step_output_.valid()) {
    return "";
  }
  struct stat st {};
  const off_t size = ::fstat(step_output_.get(), &st) == 0 ? st.st_size : 0;
  const off_t from = std::max<off_t>(0, size - (64 << 10));  // the end of it is what it last said
  std::string text(static_cast<std::size_t>(size - from), '\0');
  const auto n = ::pread(step_output_.get(), text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

std::string AgentTransport::step_said() const {
  const auto said = core::launcher_says(step_text());
  return said.empty() ? "" : " (it said: " + said + ")";
}

void AgentTransport::end_step(StepEnd how) {
  const bool at_once = how == StepEnd::at_once;
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
