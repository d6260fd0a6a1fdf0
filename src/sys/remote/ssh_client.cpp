#include "sys/remote/ssh_client.hpp"

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <unistd.h>

#include "sys/agents/net.hpp"
#include "sys/agents/session.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/remote/ssh_tcp.hpp"

namespace ezpz::sys {
namespace {

struct SessionDeleter {
  void operator()(ssh_session s) const {
    if (ssh_is_connected(s) != 0) {
      ssh_disconnect(s);
    }
    ssh_free(s);
  }
};
struct ChannelDeleter {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
using Session = std::unique_ptr<ssh_session_struct, SessionDeleter>;
using Channel = std::unique_ptr<ssh_channel_struct, ChannelDeleter>;

std::string why(ssh_session s) {
  return ssh_get_error(s);
}

/// Host key policy: a known key must match; an unknown one is added only when asked.
bool check_host_key(ssh_session s, const std::string& host, const SshOptions& options, std::string& error) {
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      return true;
    case SSH_KNOWN_HOSTS_CHANGED:
      error = "the host key of " + host +
              " does not match ~/.ssh/known_hosts (the node was reinstalled, or someone is in between): check it, "
              "then remove the old key with `ssh-keygen -R " +
              host + "`";
      return false;
    case SSH_KNOWN_HOSTS_OTHER:
      error = "~/.ssh/known_hosts holds a key of another type for " + host +
              " (possible attack, or a reinstalled node): check it, then `ssh-keygen -R " + host + "`";
      return false;
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      if (options.accept_new_host_keys) {
        if (ssh_session_update_known_hosts(s) != SSH_OK) {
          error = "cannot add the host key of " + host + " to ~/.ssh/known_hosts: " + why(s);
          return false;
        }
        return true;
      }
      error = host + " is not in ~/.ssh/known_hosts: connect once with `ssh " + host +
              "` to check its key, or pass --accept-new-host-keys";
      return false;
    case SSH_KNOWN_HOSTS_ERROR:
      break;
  }
  error = "cannot check the host key of " + host + ": " + why(s);
  return false;
}

/// Most of the remote's stdout held here while our reader is not reading (see drain).
constexpr std::size_t kHoldMax = 1 << 20;

/// The node half's offer (ssh_tcp.hpp) among the first lines of the remote's stdout: the lines
/// before it go on as usual (a request for the binary, core::kShipLine); the offer is taken out.
struct OfferWatch {
  bool active = false;
  std::string partial;  ///< the start of a line not yet whole
  std::optional<TcpOffer> offer;

  /// Stdout data from the remote, to `held` unless it is (part of) the offer.
  void take(std::string_view data, std::string& held) {
    if (!active) {
      held.append(data);
      return;
    }
    partial.append(data);
    for (auto nl = partial.find('\n'); active && nl != std::string::npos; nl = partial.find('\n')) {
      offer = parse_tcp_offer(std::string_view(partial).substr(0, nl));
      active = !offer;
      if (offer) {
        partial.erase(0, nl + 1);
      } else {
        held.append(partial, 0, nl + 1);
        partial.erase(0, nl + 1);
      }
    }
    if (!active || partial.size() > 4096) {  // no offer line is that long
      active = active && partial.size() <= 4096;
      held += partial;
      partial.clear();
    }
  }
};

/// Pass what the remote command writes to ours: stderr at once, stdout through `held`. Our
/// stdout's reader (a relay's parent) reads only after the stream: a blocking write here once
/// the pipe filled would stop this loop from forwarding the stream too. False once the channel
/// is closed or broken.
/// Stdout is read last, and this is the last libssh call before poll(): whatever reads the
/// socket (here, a write, a flush) may take stdout data into libssh's buffer, where poll()
/// cannot see it. Read in the other order, a line that came while stderr was looked at waited
/// for the next packet (for a relay's first line after the stream: for ever).
bool drain(ssh_channel channel, std::vector<char>& buf, std::string& held, OfferWatch& watch) {
  for (int is_stderr = 1; is_stderr >= 0; --is_stderr) {
    while (is_stderr != 0 || held.size() < kHoldMax) {
      const int n =
          ssh_channel_read_nonblocking(channel, buf.data(), static_cast<std::uint32_t>(buf.size()), is_stderr);
      if (n == SSH_ERROR) {
        return false;
      }
      if (n <= 0) {
        break;
      }
      if (is_stderr == 0) {
        watch.take(std::string_view(buf.data(), static_cast<std::size_t>(n)), held);
      } else if (!write_all(2, buf.data(), static_cast<std::size_t>(n))) {
        return false;
      }
    }
  }
  return flush_some(1, held) && ssh_channel_is_eof(channel) == 0 && ssh_channel_is_closed(channel) == 0;
}

/// Our stdin on its way to the channel (the session is non-blocking).
struct Input {
  std::string pending;    ///< read from stdin, not yet taken by the channel (its window is full)
  bool open = true;       ///< stdin has not ended
  bool eof_sent = false;  ///< the channel was told it ended
  bool unsent = false;    ///< libssh holds bytes the socket has not taken yet
  /// Read stdin again only once libssh has handed everything to the kernel. A blocking write
  /// waited up to SSH_OPTIONS_TIMEOUT (30 s) for that, gave up quietly and took 256 KB more:
  /// behind a dead link our parent saw progress every 30 s and never judged us stalled. Now
  /// a dead link stops us reading within the remote window (2 MB), the parent's pipe fills,
  /// and its stall timeout runs from there.
  [[nodiscard]] bool wanted() const { return open && pending.empty() && !unsent; }
};

/// Hand what is pending to the channel (as much as its window takes), the end once all of it
/// went, and let libssh write what the socket takes, all without blocking; false once the
/// session or channel failed.
bool push_input(ssh_session s, ssh_channel c, Input& in) {
  if (!in.pending.empty()) {
    const int n = ssh_channel_write(c, in.pending.data(), static_cast<std::uint32_t>(in.pending.size()));
    if (n < 0) {
      return false;  // the remote end is gone
    }
    in.pending.erase(0, static_cast<std::size_t>(n));
  }
  if (!in.open && !in.eof_sent && in.pending.empty()) {
    if (ssh_channel_send_eof(c) == SSH_ERROR) {
      return false;
    }
    in.eof_sent = true;
  }
  const int flushed = ssh_blocking_flush(s, 0);
  in.unsent = flushed == SSH_AGAIN;
  return flushed != SSH_ERROR;
}

/// Read what stdin has now into `in.pending`.
void read_input(Input& in, std::vector<char>& buf) {
  const auto n = ::read(0, buf.data(), buf.size());
  if (n > 0) {
    in.pending.assign(buf.data(), static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    in.open = false;
  }
}

/// Pump stdin to the channel and the channel to stdout and stderr until the remote command
/// ends, the session breaks or the watch finds an offer. Nothing here blocks but poll(): a slow
/// or dead link never stops the remote's lines from reaching our reader, nor makes us take more
/// of stdin than we send.
void pump(ssh_session s, ssh_channel c, std::vector<char>& buf, std::string& held, Input& in, OfferWatch& watch) {
  ssh_set_blocking(s, 0);
  while (push_input(s, c, in) && drain(c, buf, held, watch) && !watch.offer) {
    // A descriptor not waited on is left out (-1): with no events asked, poll() still reports
    // its hang-up (stdin after its end), which made this loop spin while the remote finished.
    // The socket's input is watched while a pass would read it into libssh (drain, or a
    // write waiting for the window to open), its output while libssh has bytes for it.
    const bool socket_in = held.size() < kHoldMax || !in.pending.empty();
    const auto socket_events = static_cast<short>((socket_in ? POLLIN : 0) | (in.unsent ? POLLOUT : 0));
    pollfd fds[3] = {{in.wanted() ? 0 : -1, POLLIN, 0},
                     {socket_events != 0 ? ssh_get_fd(s) : -1, socket_events, 0},
                     {held.empty() ? -1 : 1, POLLOUT, 0}};
    // A window the peer opened while libssh read the socket (a flush, a drain) is in libssh's
    // state, not in the socket: with input pending and room for it, go round at once. Waiting
    // then for the socket hung a ship (the node's `head -c` waits for the rest, we for it).
    const bool room = !in.pending.empty() && ssh_channel_window_size(c) > 0;
    if (::poll(fds, 3, room ? 0 : -1) < 0 && errno != EINTR) {
      break;
    }
    if (in.wanted() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      read_input(in, buf);
    }
  }
  ssh_set_blocking(s, 1);
}

/// Keep the SSH session served while the command's data goes over TCP: the node half's own
/// words on stderr pass on, keepalives are answered. False once the channel has ended.
bool serve_channel(ssh_channel c) {
  char buf[4096];
  for (int is_stderr = 1; is_stderr >= 0; --is_stderr) {
    int n = 0;
    while ((n = ssh_channel_read_nonblocking(c, buf, sizeof(buf), is_stderr)) > 0) {
      if (is_stderr != 0) {
        (void)write_all(2, buf, static_cast<std::size_t>(n));
      }
    }
    if (n == SSH_ERROR) {
      return false;
    }
  }
  return ssh_channel_is_eof(c) == 0 && ssh_channel_is_closed(c) == 0;
}

/// Take the node half's offer: connect to its port at the address this session reached, prove
/// the secret and carry over that connection until the command ends (its exit status, 255 with
/// `error`). -1 when it cannot be taken: the node half is told so and runs the command in place.
int carry_offered(ssh_session s, ssh_channel c, const TcpOffer& offer, Input& in, std::string& held,
                  const SshOptions& options, std::string& error) {
  const auto node = peer_address(ssh_get_fd(s));  // "" behind a ProxyCommand: no TCP of ours
  std::string why;
  std::optional<SecureChannel> ch;
  if (offer.port > 0 && !node.empty()) {
    if (auto fd = connect_to(node + ":" + std::to_string(offer.port), 3000, why); fd.valid()) {
      ch = SecureChannel::open(std::move(fd), SecureChannel::Role::client, offer.secret,
                               options.carry == SshCarry::tcp_sealed ? SecureChannel::Sealing::encrypt
                                                                     : SecureChannel::Sealing::authenticate,
                               5000, why);
    }
  }
  if (!ch) {
    if (offer.port > 0) {
      in.pending.insert(0, kTcpDecline);
    }
    return -1;
  }
  (void)write_all(1, held.data(), held.size());  // what came before the offer goes first
  held.clear();
  ClientSide side{std::move(in.pending), ssh_get_fd(s), [c] { return serve_channel(c); }};
  in.pending.clear();
  const int rc = carry_client(*ch, side, why);
  if (rc == 255 && !why.empty()) {
    error = why;  // the result line names the node
  }
  return rc;
}

/// The ciphers offered, best first for bulk streams on CPUs with AES instructions.
constexpr const char* kCiphers =
    "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr";

}  // namespace

int ssh_run_stdio(const std::string& host, const std::string& command, const SshOptions& options, std::string& error) {
  ssh_init();
  Session session(ssh_new());
  if (!session) {
    error = "cannot start an ssh session (out of memory)";
    return 255;
  }
  ssh_session s = session.get();
  ssh_options_set(s, SSH_OPTIONS_HOST, host.c_str());
  // AES-GCM first: with AES-NI (every HPC CPU) it costs the receiving sshd and this end a
  // fraction of chacha20-poly1305 (OpenSSH's own Poly1305), which libssh would pick first. Set
  // before ~/.ssh/config is read, so a Ciphers line there still wins.
  ssh_options_set(s, SSH_OPTIONS_CIPHERS_C_S, kCiphers);
  ssh_options_set(s, SSH_OPTIONS_CIPHERS_S_C, kCiphers);
  if (ssh_options_parse_config(s, nullptr) != SSH_OK) {
    error = "cannot read ~/.ssh/config for " + host + ": " + why(s);
    return 255;
  }
  char* user = nullptr;
  if (ssh_options_get(s, SSH_OPTIONS_USER, &user) == SSH_OK) {
    ssh_string_free_char(user);
  } else if (!options.user.empty()) {
    ssh_options_set(s, SSH_OPTIONS_USER, options.user.c_str());
  }
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &options.connect_timeout_s);
  // Small writes (a ping, a result line) go out at once: with Nagle on, one waited for the
  // ACK of libssh's previous window-adjust packet, which the peer delays by ~40 ms.
  const int nodelay = 1;
  ssh_options_set(s, SSH_OPTIONS_NODELAY, &nodelay);
  if (ssh_connect(s) != SSH_OK) {
    error = "cannot connect to " + host + ": " + why(s);
    return 255;
  }
  if (!check_host_key(s, host, options, error)) {
    return 255;
  }
  if (ssh_userauth_publickey_auto(s, nullptr, nullptr) != SSH_AUTH_SUCCESS) {
    error = "cannot log in to " + host +
            " with the ssh agent or ~/.ssh keys (libssh): set up key login, or pass --ssh-command ssh for "
            "host-based or GSSAPI sites";
    return 255;
  }
  Channel channel(ssh_channel_new(s));
  if (!channel || ssh_channel_open_session(channel.get()) != SSH_OK ||
      ssh_channel_request_exec(channel.get(), command.c_str()) != SSH_OK) {
    error = "cannot run a command on " + host + ": " + why(s);
    return 255;
  }
  ssh_channel c = channel.get();
  std::vector<char> buf(256 * 1024);
  std::string held;
  Input in;
  OfferWatch watch{options.carry != SshCarry::channel, {}, std::nullopt};
  const int stdout_flags = ::fcntl(1, F_GETFL);
  ::fcntl(1, F_SETFL, stdout_flags | O_NONBLOCK);
  pump(s, c, buf, held, in, watch);
  if (watch.offer) {
    ::fcntl(1, F_SETFL, stdout_flags);
    const int rc = carry_offered(s, c, *watch.offer, in, held, options, error);
    if (rc >= 0) {
      ssh_channel_close(c);
      return rc;
    }
    ::fcntl(1, F_SETFL, stdout_flags | O_NONBLOCK);
    watch.offer.reset();
    pump(s, c, buf, held, in, watch);  // declined: the command runs in place, over the channel
  }
  drain(c, buf, held, watch);  // what arrived with the end of the stream
  ::fcntl(1, F_SETFL, stdout_flags);
  (void)write_all(1, held.data(), held.size());
  const int status = ssh_channel_get_exit_status(c);
  ssh_channel_send_eof(c);
  ssh_channel_close(c);
  return status < 0 ? 255 : status;
}

}  // namespace ezpz::sys
