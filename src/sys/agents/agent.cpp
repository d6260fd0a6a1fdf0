#include "sys/agents/agent.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/log.hpp"
#include "core/reach/agents.hpp"
#include "sys/agents/exec_words.hpp"
#include "sys/agents/net.hpp"
#include "sys/agents/session.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {
namespace {

/// Sessions at once on one node: a relay's parent, a sender, doctor's or kill's node half, and
/// re-attached relays, a handful in a run; anything past this is refused. Only clients through
/// the handshake (holding the run's secret) count: a stranger gets no process.
constexpr std::size_t kMaxSessions = 64;

/// A connection has this long to prove it holds the run's secret (a client does in a round
/// trip); the most handshakes under way at once (the oldest go first when more come).
constexpr auto kHandshakeWait = std::chrono::seconds(5);
constexpr std::size_t kMaxHandshakes = 256;

/// How long the run's end waits for sessions still at work (a relay removing its work
/// directory) before they are killed: this agent is the launcher's task, and a step's end kills
/// whatever of it is left (Slurm's proctrack, mpiexec), the commands of its sessions too.
constexpr auto kSessionsEndWait = std::chrono::seconds(10);

/// SIGTERM: the launcher or the scheduler ends the step. The agent ends as when its head
/// closes its connection: its sessions first.
volatile std::sig_atomic_t g_term = 0;
extern "C" void note_term(int /*signo*/) {
  g_term = 1;
}

/// The names this node goes by: the scheduler's name for it, its host name.
std::vector<std::string> my_names() {
  std::vector<std::string> names;
  for (const char* var : {"SLURMD_NODENAME", "PALS_NODE_NAME"}) {
    if (const auto v = env_or_empty(var); !v.empty()) {
      names.push_back(v);
    }
  }
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) {
    names.emplace_back(host);
  }
  return names;
}

/// A copy of this binary srun --bcast made for us is removed now that it runs: nothing is left
/// on the node (its sessions start it through /proc/self/exe, which outlives the name).
void remove_bcast_copy() {
  char path[4096] = {};
  const auto len = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  const std::string self(path, len > 0 ? static_cast<std::size_t>(len) : 0);
  const std::string prefix = std::string(core::kBcastDir) + std::string(core::kBcastPrefix);
  if (self.rfind(prefix, 0) == 0 && self.find('/', prefix.size()) == std::string::npos) {
    ::unlink(self.c_str());
  }
}

/// An agent says what went wrong on stderr and ends with 0: a non-zero exit makes some
/// launchers (Open MPI's mpirun) end every other agent of the step; the head reports the node.
int fail(const std::string& what) {
  log::line("ezpz agent: " + what);
  return 0;
}

/// Reap the sessions that have ended (each leaves the list).
void reap_ended(std::vector<OwnedChild>& sessions) {
  std::erase_if(sessions, [](OwnedChild& s) { return s.try_wait().has_value(); });
}

/// The run is over: each session still at work (a head that was stopped, a relay still
/// removing its work) passes SIGTERM to its command and ends when the command has cleaned up
/// and ended. Any still there after kSessionsEndWait is killed; each is reaped.
void end_sessions(std::vector<OwnedChild>& sessions) {
  for (const auto& s : sessions) {
    ::kill(s.pid(), SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + kSessionsEndWait;
  while (!sessions.empty() && std::chrono::steady_clock::now() < deadline) {
    reap_ended(sessions);
    if (!sessions.empty()) {
      ::poll(nullptr, 0, 10);
    }
  }
  sessions.clear();  // SIGKILL and reap what is left
}

/// A session process of its own for `ch`, a client through the handshake (this process has one
/// thread: a fork may go on without exec), owned until reaped; refused past kMaxSessions.
void start_session(SecureChannel& ch, std::vector<OwnedChild>& sessions) {
  if (sessions.size() >= kMaxSessions) {
    (void)ch.send('N', "too many sessions on this node at once");
    return;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {  // the session holds its connection alone (not the listener, not the head's)
    close_all_but(ch.fd());
    ::signal(SIGTERM, SIG_DFL);
    ::_exit(serve_session(ch));
  }
  if (pid > 0) {
    sessions.emplace_back(pid);
  }
}

/// Whether the head's control connection ended (what it says is not read: nothing is sent).
bool control_ended(SecureChannel& control) {
  char type = 0;
  std::string data;
  const auto filled = control.fill();
  while (control.next(type, data) == SecureChannel::Got::record) {
  }
  return filled == SecureChannel::Got::closed;
}

/// Serve connections until the head's control connection ends: each one's handshake here, as its
/// bytes come (a stranger, silent or without the secret, holds up none and goes at its deadline),
/// then a session for each client through it.
void serve(SecureChannel& control, const Listener& listener, const Secret& secret) {
  using Clock = Handshakes::Clock;
  std::vector<OwnedChild> sessions;
  Handshakes handshakes(secret, kHandshakeWait, kMaxHandshakes);
  std::vector<pollfd> fds;
  std::vector<SecureChannel> done;
  while (true) {
    const auto now = Clock::now();
    const bool listening = now >= handshakes.rest_until();
    const auto next =
        std::min(handshakes.drop_late(now), listening ? Clock::time_point::max() : handshakes.rest_until());
    fds = {{control.fd(), POLLIN, 0}};
    if (listening) {
      fds.push_back({listener.fd.get(), POLLIN, 0});
    }
    handshakes.add_fds(fds);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait, 0, 1000)));
    reap_ended(sessions);
    if (g_term != 0 || (ready < 0 && errno != EINTR) || (fds[0].revents != 0 && control_ended(control))) {
      break;  // the run is over (or its head is gone)
    }
    for (std::size_t i = 1; i < fds.size() && ready > 0; ++i) {
      if (fds[i].revents != 0 && fds[i].fd == listener.fd.get()) {
        (void)handshakes.accept_all(fds[i].fd, done);  // false: out of descriptors, the listener rests
      } else if (fds[i].revents != 0) {
        if (auto ch = handshakes.advance(fds[i].fd)) {
          done.push_back(std::move(*ch));
        }
      }
    }
    for (auto& ch : done) {
      start_session(ch, sessions);
    }
    done.clear();
  }
  end_sessions(sessions);
}

}  // namespace

int agent_main(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return fail("takes no arguments (started by yeet's launcher transport)");
  }
  ::signal(SIGPIPE, SIG_IGN);
  remove_bcast_copy();
  const auto secret = secret_from_hex(env_or_empty(core::kSecretVar));
  const auto head = env_or_empty(core::kHeadVar);
  if (!secret || head.empty()) {
    return fail("no " + std::string(core::kSecretVar) + " or " + std::string(core::kHeadVar) +
                " in the environment: the launcher did not carry them");
  }
  std::string why;
  auto fd = connect_to(head, 30000, why);
  if (!fd.valid()) {
    return fail(why);
  }
  // Where the head sees us is where it tells the run's clients to call: listen there alone.
  auto listener = listen_on(local_address(fd.get()), why);
  if (!listener) {
    return fail(why);
  }
  keep_alive(fd.get());  // a head whose node dies without a word is noticed
  auto control = SecureChannel::open(std::move(fd), SecureChannel::Role::client, *secret,
                                     SecureChannel::Sealing::encrypt, 120000, why);
  if (!control) {
    return fail(head + ": " + why);
  }
  const nlohmann::json hello = {{"names", my_names()}, {"port", listener->port}};
  char type = 0;
  std::string reply;
  if (!control->send('H', hello.dump()) || !control->await(type, reply, 24 * 3600 * 1000)) {
    return fail("the head closed the connection before it answered");
  }
  if (type != 'A') {
    return 0;  // not one of the run's targets (the head's own node, say): nothing to serve
  }
  ::setenv(std::string(core::kDirectoryVar).c_str(), reply.c_str(), 1);  // for the relays it starts
  struct sigaction term {};
  term.sa_handler = note_term;
  sigemptyset(&term.sa_mask);
  ::sigaction(SIGTERM, &term, nullptr);  // no SA_RESTART: the serving loop's wait breaks
  serve(*control, *listener, *secret);
  return 0;
}

}  // namespace ezpz::sys
