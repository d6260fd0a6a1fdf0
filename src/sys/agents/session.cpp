#include "sys/agents/session.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/reach/agents.hpp"
#include "core/yeet/relay_args.hpp"
#include "sys/agents/exec_words.hpp"
#include "sys/os/owned.hpp"

namespace ezpz::sys {
namespace {

/// The most that waits for a slow local reader before the socket is no longer read.
constexpr std::size_t kHold = 4U << 20;

/// The command this node half runs, while it runs (0 before and after).
volatile std::sig_atomic_t g_command = 0;

/// SIGTERM (the agent ending, a launcher or scheduler ending the step): the command is told
/// (a relay then removes its work and reports) and this process goes on carrying until the
/// command ends; with no command running, this process ends at once.
extern "C" void pass_term(int /*signo*/) {
  if (g_command > 0) {
    ::kill(static_cast<pid_t>(g_command), SIGTERM);
  } else {
    ::_exit(128 + SIGTERM);
  }
}

void pass_term_to_command() {
  struct sigaction sa {};
  sa.sa_handler = pass_term;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);  // no SA_RESTART: a wait it breaks is retried
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/// The command a client asked for, when it is one an agent runs.
bool read_request(SecureChannel& ch, std::vector<std::string>& args, std::string& why) {
  char type = 0;
  std::string data;
  if (!ch.await_one(type, data, 10000)) {  // the stream after it is the command's to read
    return false;
  }
  const auto j = nlohmann::json::parse(data, nullptr, false);
  if (type != 'Q' || !j.is_array() || !std::all_of(j.begin(), j.end(), [](const auto& a) { return a.is_string(); })) {
    why = "not a command";
    return false;
  }
  args = j.get<std::vector<std::string>>();
  if (!core::agent_may_run(args)) {
    why = "an agent runs only yeet's relays and senders, doctor's and kill's node halves";
    return false;
  }
  return true;
}

/// This binary with `args`, its stdout and stderr pipes to us; its stdin a pipe we fill, or
/// (`direct`) the connection itself.
struct Command {
  OwnedChild child;
  OwnedFd in;
  OwnedFd out;
  OwnedFd err;
  bool direct = false;  ///< it reads the client's records itself: we only send
};

/// Whether the command reads its stream from the connection itself: yeet's relay (the stream's
/// bytes then pass through no other process and no pipe on this node).
bool reads_connection(const std::vector<std::string>& args) {
  return !args.empty() && args[0] == core::kRelayRow;
}

std::optional<Command> start_command(std::vector<std::string> args, const SecureChannel& ch) {
  OwnedPipe in;
  OwnedPipe out;
  OwnedPipe err;
  OwnedPipe keys;  // direct: the receiving keys, read once by the command
  const OwnedFd self = open_self_owned();
  const auto rk = reads_connection(args) ? ch.receive_keys() : std::nullopt;
  if (!out.open() || !err.open() || !self.valid() || !(rk ? keys.open() : in.open())) {
    return std::nullopt;
  }
  if (rk) {  // 41 bytes: the pipe takes them before the command runs
    const auto b = rk->bytes();
    if (!write_all(keys.write_end(), b.data(), b.size())) {
      return std::nullopt;
    }
    keys.close_write();
    args.insert(args.end(), {std::string(core::kSealedStdinFlag), std::to_string(keys.read_end())});
  } else {
    widen_pipe(in.write_end());  // a relay's stream
  }
  auto words = self_words(args);  // argv[0] is this binary's path, as a relay started over SSH shows in ps
  auto argv = pointers(words);
  const pid_t pid = ::fork();
  if (pid == 0) {  // this process has one thread: still, only what exec needs
    if (rk) {
      ::dup2(ch.fd(), 0);
      ::fcntl(keys.read_end(), F_SETFD, 0);
    } else {
      move_fd(in.read_end(), 0);
    }
    move_fd(out.write_end(), 1);
    move_fd(err.write_end(), 2);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // serve_command blocks SIGTERM around this fork
    exec_self(self.get(), argv.data(), environ, rk ? keys.read_end() : -1);
    ::_exit(127);
  }
  if (pid < 0) {
    return std::nullopt;
  }
  Command c{OwnedChild(pid), rk ? OwnedFd() : in.take_write(), out.take_read(), err.take_read(), rk.has_value()};
  if (c.in.valid()) {
    set_nonblocking(c.in.get());
  }
  return c;
}

/// After the last record: say so, and take (and drop) what the client still sends for up to 2 s,
/// so that closing with its data unread does not reset the connection before our last records
/// arrive.
void linger(SecureChannel& ch) {
  ::shutdown(ch.fd(), SHUT_WR);
  pollfd p{ch.fd(), POLLIN, 0};
  char dropped[16 * 1024];
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until && ::poll(&p, 1, 100) >= 0) {
    const auto n = (p.revents & POLLIN) != 0 ? ::read(ch.fd(), dropped, sizeof(dropped)) : 1;
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      return;
    }
  }
}

/// Carry the client's records to the command's stdin and its output back, until its output ends.
/// False once the connection is gone (the command then sees its stdin end).
bool carry(SecureChannel& ch, Command& c) {
  ByteQueue to_child;
  bool end_pending = false;
  bool connected = true;
  std::string data;
  char buf[64 * 1024];
  while (c.out.valid() || c.err.valid()) {
    pollfd fds[4] = {{connected && !c.direct && to_child.size() < kHold ? ch.fd() : -1, POLLIN, 0},
                     {c.in.valid() && !to_child.empty() ? c.in.get() : -1, POLLOUT, 0},
                     {c.out.get(), POLLIN, 0},
                     {c.err.get(), POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0 && errno != EINTR) {
      return false;
    }
    if (fds[0].revents != 0) {
      const auto filled = ch.fill();
      char type = 0;
      SecureChannel::Got got;
      while ((got = ch.next(type, data)) == SecureChannel::Got::record) {
        if (type == 'D' && c.in.valid()) {
          to_child.append(data);
        } else if (type == 'E') {
          end_pending = true;
        }
      }
      if (got == SecureChannel::Got::forged) {  // say why before going: the client names it
        (void)ch.send('N', "a record failed its authentication (altered in flight, or not from this run)");
        linger(ch);
      }
      if (got == SecureChannel::Got::forged || filled == SecureChannel::Got::closed) {
        connected = false;  // nothing more from it: the command sees its input end, unfinished,
        to_child.clear();   // and its next line out breaks its pipe, as over a lost ssh link
        c.in.reset();
        c.out.reset();
        c.err.reset();
      }
    }
    if (c.in.valid() && !to_child.flush_to(c.in.get())) {
      to_child.clear();
      c.in.reset();
    }
    if (c.in.valid() && end_pending && to_child.empty()) {
      c.in.reset();
    }
    for (int k = 2; k < 4; ++k) {
      if (fds[k].revents == 0) {
        continue;
      }
      auto& fd = k == 2 ? c.out : c.err;
      const auto n = ::read(fd.get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        fd.reset();
      } else if (connected && !ch.send(k == 2 ? 'O' : 'R', std::string_view(buf, static_cast<std::size_t>(n)))) {
        connected = false;
        to_child.clear();
        c.in.reset();
      }
    }
  }
  return connected;
}

}  // namespace

int serve_session(SecureChannel& ch) {
  std::string why;
  std::vector<std::string> args;
  if (!read_request(ch, args, why)) {
    (void)ch.send('N', why);
    return 1;
  }
  (void)serve_command(ch, args);
  return 0;
}

int serve_command(SecureChannel& ch, const std::vector<std::string>& args) {
  pass_term_to_command();
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &term, nullptr);  // a SIGTERM now is passed on once the command is known
  auto c = start_command(args, ch);
  g_command = c ? c->child.pid() : 0;
  ::sigprocmask(SIG_UNBLOCK, &term, nullptr);
  if (!c) {
    (void)ch.send('N', "cannot start ezpz on this node");
    return 255;
  }
  const bool connected = carry(ch, *c);
  const auto status = c->child.wait();
  g_command = 0;
  const int code = !status ? 255 : WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  if (connected && ch.send('X', std::to_string(code))) {
    linger(ch);
  }
  return connected ? code : 255;
}

int run_client(SecureChannel& ch, const std::vector<std::string>& args, std::string& why) {
  if (!ch.send('Q', nlohmann::json(args).dump())) {
    why = "the agent closed the connection";
    return 255;
  }
  return carry_client(ch, ClientSide{}, why);
}

namespace {

/// The records the node half sent, to our stdout (through `held`) and stderr; the exit status
/// once one came (-1 before; 255 when refused or lost, with `why`).
int take_records(SecureChannel& ch, ByteQueue& held, std::string& why) {
  const auto filled = ch.fill();
  char type = 0;
  std::string data;
  SecureChannel::Got got;
  while ((got = ch.next(type, data)) == SecureChannel::Got::record) {
    if (type == 'O') {
      held.append(data);
    } else if (type == 'R') {
      (void)write_all(2, data.data(), data.size());
    } else if (type == 'X') {
      return std::atoi(data.c_str());
    } else if (type == 'N') {
      why = "refused by the node: " + data;
      return 255;
    }
  }
  if (got == SecureChannel::Got::forged || filled == SecureChannel::Got::closed) {
    why = got == SecureChannel::Got::forged ? "a record from the node failed its check" : "the node's connection ended";
    return 255;
  }
  return -1;
}

}  // namespace

int carry_client(SecureChannel& ch, const ClientSide& side, std::string& why) {
  const int out_flags = ::fcntl(1, F_GETFL);
  set_nonblocking(1);
  ByteQueue held;
  bool input_open = true;
  bool watching = side.watch_fd >= 0 && side.on_watch;
  std::vector<char> buf(64 * 1024);  // records of what a pipe holds: sent as they come
  int status = -1;
  if (!side.first_input.empty() && !ch.send('D', side.first_input)) {
    why = "the connection to the node broke";
    status = 255;
  }
  while (status < 0) {
    pollfd fds[4] = {{input_open ? 0 : -1, POLLIN, 0},
                     {held.size() < kHold ? ch.fd() : -1, POLLIN, 0},
                     {held.empty() ? -1 : 1, POLLOUT, 0},
                     {watching ? side.watch_fd : -1, POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0 && errno != EINTR) {
      break;
    }
    if (fds[0].revents != 0) {
      const auto n = ::read(0, buf.data(), buf.size());
      if (n > 0 && !ch.send('D', std::string_view(buf.data(), static_cast<std::size_t>(n)))) {
        why = "the connection to the node broke";
        break;
      }
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        input_open = false;
        (void)ch.send('E', {});
      }
    }
    if (fds[1].revents != 0) {
      status = take_records(ch, held, why);
    }
    if (fds[3].revents != 0 && !side.on_watch()) {
      watching = false;
    }
    if (!held.flush_to(1)) {
      held.clear();
    }
  }
  ::fcntl(1, F_SETFL, out_flags);
  (void)write_all(1, held.view().data(), held.size());
  return status < 0 ? 255 : status;
}

}  // namespace ezpz::sys
