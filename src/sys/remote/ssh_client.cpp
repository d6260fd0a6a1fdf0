#include "sys/remote/ssh_client.hpp"

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <unistd.h>

#include "sys/os/fd_io.hpp"

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

/// Pass what the remote command writes to ours: stderr at once, stdout through `held`. Our
/// stdout's reader (a relay's parent) reads only after the stream: a blocking write here once
/// the pipe filled would stop this loop from forwarding the stream too. False once the channel
/// is closed or broken.
/// Stdout is read last, and this is the last libssh call before poll(): whatever reads the
/// socket (here, a write, a flush) may take stdout data into libssh's buffer, where poll()
/// cannot see it. Read in the other order, a line that came while stderr was looked at waited
/// for the next packet (for a relay's first line after the stream: for ever).
bool drain(ssh_channel channel, std::vector<char>& buf, std::string& held) {
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
        held.append(buf.data(), static_cast<std::size_t>(n));
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
/// ends or the session breaks. Nothing here blocks but poll(): a slow or dead link never stops
/// the remote's lines from reaching our reader, nor makes us take more of stdin than we send.
void pump(ssh_session s, ssh_channel c, std::vector<char>& buf, std::string& held) {
  ssh_set_blocking(s, 0);
  Input in;
  while (push_input(s, c, in) && drain(c, buf, held)) {
    // A descriptor not waited on is left out (-1): with no events asked, poll() still reports
    // its hang-up (stdin after its end), which made this loop spin while the remote finished.
    // The socket's input is watched while a pass would read it into libssh (drain, or a
    // write waiting for the window to open), its output while libssh has bytes for it.
    const bool socket_in = held.size() < kHoldMax || !in.pending.empty();
    const auto socket_events = static_cast<short>((socket_in ? POLLIN : 0) | (in.unsent ? POLLOUT : 0));
    pollfd fds[3] = {{in.wanted() ? 0 : -1, POLLIN, 0},
                     {socket_events != 0 ? ssh_get_fd(s) : -1, socket_events, 0},
                     {held.empty() ? -1 : 1, POLLOUT, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) {
      break;
    }
    if (in.wanted() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      read_input(in, buf);
    }
  }
  ssh_set_blocking(s, 1);
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
  const int stdout_flags = ::fcntl(1, F_GETFL);
  ::fcntl(1, F_SETFL, stdout_flags | O_NONBLOCK);
  pump(s, c, buf, held);
  drain(c, buf, held);  // what arrived with the end of the stream
  ::fcntl(1, F_SETFL, stdout_flags);
  (void)write_all(1, held.data(), held.size());
  const int status = ssh_channel_get_exit_status(c);
  ssh_channel_send_eof(c);
  ssh_channel_close(c);
  return status < 0 ? 255 : status;
}

}  // namespace ezpz::sys
