// No descriptor, child or thread outlives a failing call of the sys layer: each failing case is
// run between two snapshots of /proc/self/fd, this process's children (/proc/self/task/*/children)
// and its threads, which must be equal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/broadcast/broadcast.hpp"
#include "sys/fs/archive.hpp"
#include "sys/fs/local_transfer.hpp"
#include "sys/fs/remove.hpp"
#include "sys/fs/tree.hpp"
#include "sys/nodes/node_commands.hpp"
#include "sys/nodes/remote_process.hpp"
#include "sys/os/exec.hpp"
#include "sys/os/fd_io.hpp"
#include "sys/os/owned.hpp"
#include "sys/os/posix_probe.hpp"
#include "sys/ranks/rank_channels.hpp"
#include "sys/remote/remote.hpp"
#include "sys/remote/ssh_client.hpp"

namespace fs = std::filesystem;

namespace {

/// The names in a /proc directory (numbers), sorted.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Snapshot {
  std::vector<std::string> fds;       ///< "N -> target"
  std::vector<std::string> children;  ///< pids, zombies included
  std::size_t threads = 0;
};

Snapshot snapshot() {
  Snapshot s;
  // The iterator's own descriptor shows in both snapshots alike.
  for (const auto& fd : entries("/proc/self/fd")) {
    std::error_code ec;
    const auto target = fs::read_symlink(fs::path("/proc/self/fd") / fd, ec);
    if (!ec) {  // not the iterator's, closed by now
      s.fds.push_back(fd + " -> " + target.string());
    }
  }
  const auto tasks = entries("/proc/self/task");
  s.threads = tasks.size();
  for (const auto& task : tasks) {
    std::ifstream in(fs::path("/proc/self/task") / task / "children");
    for (std::string pid; in >> pid;) {
      s.children.push_back(pid);
    }
  }
  std::sort(s.children.begin(), s.children.end());
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::ostringstream out;
  for (const auto& x : v) {
    out << x << "; ";
  }
  return out.str();
}

/// Run `failing` (which must fail: it returns whether it did) between two snapshots.
void no_leak(const std::string& name, const std::function<bool()>& failing) {
  INFO(name);
  const auto before = snapshot();
  CHECK(failing());
  auto after = snapshot();
  // A joined thread can still show in /proc/self/task for a moment (pthread_join returns when
  // the kernel clears its id, before the task is released): wait for that state, up to 2 s.
  for (int i = 0; i < 200 && after.threads > before.threads; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after.threads = snapshot().threads;
  }
  INFO("descriptors before: " << joined(before.fds) << "\nafter: " << joined(after.fds));
  CHECK(after.fds == before.fds);
  INFO("children before: " << joined(before.children) << "\nafter: " << joined(after.children));
  CHECK(after.children == before.children);
  CHECK(after.threads == before.threads);
}

struct Scratch {
  Scratch() : dir(fs::temp_directory_path() / ("ezpz-leaks-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { (void)ezpz::sys::remove_tree(dir.string()); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path dir;
};

std::string path_env() {
  const char* p = std::getenv("PATH");
  return p != nullptr ? p : "/usr/bin:/bin";
}

ezpz::core::RunOptions quick_options() {
  ezpz::core::RunOptions o;
  o.kill_after_s = 0.5;
  o.label = true;  // pipes for every process
  return o;
}

/// A tar whose one entry is `name`, written to `path`.
void write_tar(const fs::path& path, const std::string& name) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, 1);
  archive_write_header(a, e);
  archive_write_data(a, "x", 1);
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
}

/// A core::Transport that runs `script` on this machine for every node (`sh -c SCRIPT sh HOST`):
/// a relay or a push that fails, never says it is ready, or goes silent. No script: nothing can
/// be started (pid -1).
class ScriptTransport final : public ezpz::core::Transport {
 public:
  explicit ScriptTransport(std::string script) : script_(std::move(script)) {}
  [[nodiscard]] ezpz::core::RemoteProcess start(const std::string& host, const ezpz::core::RemoteCommand& command,
                                                const ezpz::core::ReachSpec& /*spec*/,
                                                const std::string& /*report_as*/) override {
    const bool with_stdin = command.in != ezpz::core::Stdin::none;
    ezpz::core::RemoteProcess p;
    ezpz::sys::OwnedPipe to;
    ezpz::sys::OwnedPipe from;
    const auto null_in = ezpz::sys::open_null(O_RDONLY);
    if (script_.empty() || !from.open() || (with_stdin && !to.open()) || !null_in.valid()) {
      return p;
    }
    std::vector<std::string> words = {"/bin/sh", "-c", script_, "sh", host};
    std::vector<char*> argv;
    for (auto& w : words) {
      argv.push_back(w.data());
    }
    argv.push_back(nullptr);
    const int child_in = with_stdin ? to.read_end() : null_in.get();
    const pid_t pid = ::fork();
    if (pid == 0) {  // async-signal-safe calls only: the caller may have threads
      ::dup2(child_in, 0);
      ::dup2(from.write_end(), 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (pid > 0) {
      p.pid = pid;
      p.in = with_stdin ? to.take_write().release() : -1;
      p.out = from.take_read().release();
    }
    return p;
  }
  int child_main(ezpz::core::TransportKind /*kind*/, const std::vector<std::string>& /*args*/) override { return 0; }

 private:
  std::string script_;
};

/// No result is a success.
bool all_failed(const std::vector<ezpz::core::NodeResult>& results, std::size_t hosts) {
  return results.size() == hosts &&
         std::none_of(results.begin(), results.end(), [](const ezpz::core::NodeResult& r) { return r.ok(); });
}

}  // namespace

TEST_CASE("no leaks: PosixProcessControl::run and run_child that fail", "[leaks]") {
  using ezpz::core::ProcessSpec;
  no_leak("run: a program that does not exist, after one that started", [] {
    ezpz::sys::PosixProcessControl pc;
    const std::vector<ProcessSpec> job = {{{"sleep", "30"}, {}, {}, "[0] "},
                                          {{"/nonexistent/ezpz-no-such-program"}, {}, {}, "[1] "}};
    auto r = pc.run(job, quick_options());
    return !r && r.error().code == ezpz::ExitCode::not_found;
  });
  no_leak("run: a file that cannot be executed", [] {
    ezpz::sys::PosixProcessControl pc;
    auto r = pc.run({{{"/etc/passwd"}, {}, {}, "[0] "}}, quick_options());
    return !r && r.error().code == ezpz::ExitCode::cannot_execute;
  });
  no_leak("run: a rank exits non-zero, the other is stopped", [] {
    ezpz::sys::PosixProcessControl pc;
    const std::vector<ProcessSpec> job = {{{"sleep", "30"}, {}, {}, "[0] "},
                                          {{"sh", "-c", "exec 2>/dev/null; exit 3"}, {}, {}, "[1] "}};
    auto r = pc.run(job, quick_options());
    return r && r->exit_code == 3 && r->failed == 1;
  });
  no_leak("run: the watchdog stops a silent job (and its background child)", [] {
    ezpz::sys::PosixProcessControl pc;
    auto options = quick_options();
    options.timeout_s = 0.3;
    auto r = pc.run({{{"sh", "-c", "sleep 30 & sleep 30"}, {}, {}, "[0] "}}, options);
    return r && r->exit_code == 124;
  });
  no_leak("run_child: a program that does not exist", [] {
    ezpz::sys::PosixProcessControl pc;
    const auto exit = pc.run_child({"/nonexistent/ezpz-no-such-program"}, {}, {}, ezpz::core::ChildIo{"[0] "});
    return exit.exit_code == 127;
  });
  no_leak("run_child: a command that exits non-zero", [] {
    ezpz::sys::PosixProcessControl pc;
    const auto exit = pc.run_child({"sh", "-c", "echo out; exit 5"}, {}, {}, ezpz::core::ChildIo{"[0] "});
    return exit.exit_code == 5;
  });
  // ProcessSpec has no working directory: an unusable one is not a case of these calls.
}

TEST_CASE("no leaks: PosixProbe's failing queries and programs", "[leaks]") {
  Scratch s;
  const ezpz::sys::PosixProbe probe(path_env());
  no_leak("run_program: not on PATH", [&] { return !probe.run_program({"ezpz-no-such-program"}, {}, {}, 5); });
  no_leak("run_program: exits non-zero", [&] {
    auto r = probe.run_program({"sh", "-c", "echo x; exit 4"}, {}, {}, 5);
    return r && r->exit_code == 4;
  });
  no_leak("run_program: times out (a grandchild holds its output open)", [&] {
    auto r = probe.run_program({"sh", "-c", "sleep 30 & sleep 30"}, {}, {}, 0.3);
    return r && r->timed_out;
  });
  no_leak("read_file: a directory", [&] { return !probe.read_file(s.dir.string()); });
  no_leak("write_file: a directory in the way", [&] {
    fs::create_directories(s.dir / "taken");
    return !probe.write_file((s.dir / "taken").string(), "x");
  });
  no_leak("tree_bytes: missing", [&] { return !probe.tree_bytes((s.dir / "missing").string()); });
}

TEST_CASE("no leaks: starting ezpz on a node that cannot be reached", "[leaks]") {
  ezpz::core::ReachSpec spec;
  // What the callers (broadcast, node_query, node_commands) do with a RemoteProcess: own it at
  // once (RemoteChild: both ends closed, the child reaped).
  auto finish = [](const ezpz::sys::RemoteProcess& p) {
    ezpz::sys::RemoteChild owned(p);
    std::string early;
    const bool ready = ezpz::sys::await_ready(owned, early, 10);
    return !ready && owned.child.wait().has_value();
  };
  no_leak("start_remote: a host name ssh would read as an option", [&] {
    spec.ssh_command = {"ssh"};
    auto p = ezpz::sys::start_remote("-oProxyCommand=true", "true", spec, "bad", ezpz::core::Stdin::pipe);
    return p.pid > 0 && finish(p);
  });
  no_leak("start_remote: an ssh command that does not exist", [&] {
    spec.ssh_command = {"/nonexistent/ezpz-ssh"};
    auto p = ezpz::sys::start_remote("node1", "true", spec, "node1", ezpz::core::Stdin::none);
    return p.pid > 0 && finish(p);
  });
  no_leak("start_remote: a host that does not resolve", [&] {
    spec.ssh_command = {"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "-o", "LogLevel=QUIET"};
    auto p = ezpz::sys::start_remote("ezpz-no-such-host.invalid", "true", spec, "x", ezpz::core::Stdin::pipe);
    return p.pid > 0 && finish(p);
  });
  no_leak("ssh_run_stdio (libssh, in this process): a host that does not resolve", [] {
    std::string error;
    const ezpz::sys::SshOptions options{false, "nobody", 2};
    return ezpz::sys::ssh_run_stdio("ezpz-no-such-host.invalid", "true", options, error) == 255 && !error.empty();
  });
}

TEST_CASE("no leaks: rank hubs and links that fail", "[leaks]") {
  no_leak("connect_hub: nobody listening", [] {
    ezpz::sys::SecureRankChannels channels;
    auto env = ezpz::core::Env{};
    env.vars = {{"EZPZ_RANK_HUB", "127.0.0.1:1"}, {"EZPZ_RANK_HUB_KEY", std::string(64, 'a')}};
    std::string why;
    return channels.connect_hub(env, 0, "n", 1000, why) == nullptr && !why.empty();
  });
  no_leak("rank hub: a stranger refused, then the hub closed with another still waiting", [] {
    ezpz::sys::SecureRankChannels channels;
    auto hub = channels.open_hub({"127.0.0.1", 1, false, {}, 1});
    if (!hub) {
      return false;
    }
    const auto address = (*hub)->address();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto connected = [&a] {
      ezpz::sys::OwnedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      const bool ok = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
      return ok ? std::move(fd) : ezpz::sys::OwnedFd();
    };
    auto stranger = connected();
    const std::string junk(41, 'x');  // as long as a hello, and not one
    if (!stranger.valid() || ::write(stranger.get(), junk.data(), junk.size()) != 41) {
      return false;
    }
    (void)(*hub)->service((*hub)->fds().front());  // refused at once: nothing kept
    auto waiting = connected();
    const bool refused = (*hub)->ranks().front().host.empty() && waiting.valid();
    hub->reset();
    return refused;
  });
}

TEST_CASE("no leaks: archives that are damaged, hostile or missing", "[leaks]") {
  Scratch s;
  const auto staging = s.dir / "staging";
  auto extract = [&](const fs::path& archive) {
    fs::remove_all(staging);
    fs::create_directories(staging);
    ezpz::sys::StopSignals stop;
    ezpz::sys::PosixLocalTransfer transfer(stop);
    return !transfer.extract(archive.string(), staging.string(), 1ULL << 30, ezpz::core::ArchiveOrigin::foreign, {});
  };
  fs::create_directories(s.dir / "src" / "sub");
  for (int i = 0; i < 64; ++i) {
    std::ofstream(s.dir / "src" / "sub" / ("f" + std::to_string(i)))
        << std::string(4096, static_cast<char>('a' + i % 26));
  }
  std::atomic<bool> stop{false};
  const auto packed = s.dir / "whole.tar.gz";
  REQUIRE(ezpz::sys::pack_tree((s.dir / "src").string(), "src", packed.string(), ezpz::core::ArchiveFormat::gz, {}, {},
                               stop, false));
  const auto truncated = s.dir / "truncated.tar.gz";
  fs::copy_file(packed, truncated);
  fs::resize_file(truncated, fs::file_size(packed) / 2);
  no_leak("extract: a truncated .tar.gz", [&] { return extract(truncated); });

  const auto wrong_sum = s.dir / "summed.tar.gz";
  fs::copy_file(packed, wrong_sum);
  std::ofstream(wrong_sum.string() + ".sha256") << std::string(64, '0') << "  summed.tar.gz\n";
  no_leak("extract: a checksum that does not match", [&] { return extract(wrong_sum); });

  const auto hostile = s.dir / "hostile.tar";
  write_tar(hostile, "../escape");
  no_leak("extract: an entry leading outside", [&] { return extract(hostile); });
  CHECK_FALSE(fs::exists(s.dir / "escape"));

  no_leak("extract: a missing archive", [&] { return extract(s.dir / "missing.tar.gz"); });
  no_leak("extract: a directory as the archive", [&] { return extract(s.dir / "src"); });
  no_leak("pack_tree: an output that cannot be created", [&] {
    return !ezpz::sys::pack_tree((s.dir / "src").string(), "src", (s.dir / "no" / "x.tar.gz").string(),
                                 ezpz::core::ArchiveFormat::gz, {}, {}, stop, false);
  });
}

TEST_CASE("no leaks: copies and removals that fail", "[leaks]") {
  Scratch s;
  std::atomic<bool> stop{false};
  fs::create_directories(s.dir / "src");
  std::ofstream(s.dir / "src" / "f") << "x";
  no_leak("copy_tree: a missing source",
          [&] { return !ezpz::sys::copy_tree((s.dir / "missing").string(), (s.dir / "dst1").string(), {}, {}, stop); });
  no_leak("copy_tree: a file in the way of the copy", [&] {
    fs::create_directories(s.dir / "dst2");
    std::ofstream(s.dir / "dst2" / "f") << "already";
    return !ezpz::sys::copy_tree((s.dir / "src").string(), (s.dir / "dst2").string(), {}, {}, stop);
  });
  no_leak("remove_tree: a name too long to look at",
          [&] { return !ezpz::sys::remove_tree((s.dir / std::string(300, 'x')).string()); });

  // A removal refused part-way (a parent that is not writable) needs an unprivileged user: in a
  // child, with its own snapshots (dumpable again, so it can read its /proc/self after setuid).
  const auto top = s.dir / "p" / "top";
  fs::permissions(s.dir, fs::perms::all);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(90);
    }
    ::prctl(PR_SET_DUMPABLE, 1);
    std::error_code ec;
    fs::create_directories(top / "a" / "b", ec);
    std::ofstream(top / "a" / "b" / "f") << "x";
    if (ec || ::chmod((s.dir / "p").c_str(), 0555) != 0) {
      ::_exit(91);
    }
    const auto before = snapshot();
    const bool failed = !ezpz::sys::remove_tree(top.string());
    const auto after = snapshot();
    ::_exit(!failed ? 2 : after.fds != before.fds || after.children != before.children ? 1 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("no leaks: commands and questions to nodes that fail", "[leaks]") {
  ezpz::core::ReachSpec spec;
  ezpz::sys::SshTransport ssh;
  const ezpz::core::HostList hosts = {"node1", "node2"};
  auto run_on_nodes = [&](ezpz::core::Transport& transport, double timeout_s) {
    ezpz::sys::PosixNodeCommands nodes(transport);
    return nodes.run_on_nodes(hosts, {"--version"}, spec, timeout_s);
  };
  no_leak("run_on_nodes: an ssh command that does not exist", [&] {
    spec.ssh_command = {"/nonexistent/ezpz-ssh"};
    const auto r = run_on_nodes(ssh, 5);
    return r.size() == 2 && r[0].exit_code == 127 && r[1].exit_code == 127;
  });
  no_leak("run_on_nodes: an ssh command that exits at once", [&] {
    spec.ssh_command = {"false"};
    const auto r = run_on_nodes(ssh, 5);
    return r.size() == 2 && r[0].exit_code == 1 && r[1].exit_code == 1;
  });
  no_leak("run_on_nodes: nodes that never answer", [&] {
    spec.ssh_command = {"sh", "-c", "exec sleep 30", "sh"};
    const auto r = run_on_nodes(ssh, 0.3);
    return r.size() == 2 && !r[0].error.empty() && r[0].exit_code == 128 + SIGTERM;
  });
  no_leak("run_on_nodes: nothing can be started", [&] {
    ScriptTransport none("");
    const auto r = run_on_nodes(none, 5);
    return r.size() == 2 && !r[0].error.empty() && !r[1].error.empty();
  });

  auto ask_nodes = [&](int timeout_s) {
    ezpz::sys::PosixNodeQuery nodes(ssh);
    return nodes.ask_nodes(hosts, ezpz::core::RemoteCommand{{"true"}}, spec, timeout_s, {});
  };
  no_leak("ask_nodes: an ssh command that does not exist", [&] {
    spec.ssh_command = {"/nonexistent/ezpz-ssh"};
    const auto r = ask_nodes(5);
    return r.size() == 2 && !r[0].ready && r[0].exit_code == 127 && r[1].exit_code == 127;
  });
  no_leak("ask_nodes: nodes that never say they are ready", [&] {
    spec.ssh_command = {"sh", "-c", "exec sleep 30", "sh"};
    const auto r = ask_nodes(1);
    return r.size() == 2 && !r[0].ready && !r[1].ready && r[0].exit_code == 128 + SIGTERM;
  });
  no_leak("ask_nodes: nodes ready that never reply", [&] {
    spec.ssh_command = {"sh", "-c", "echo EZPZ-READY; exec sleep 30", "sh"};
    const auto r = ask_nodes(1);
    return r.size() == 2 && r[0].ready && r[0].reply.empty() && r[1].ready && r[1].reply.empty();
  });
}

TEST_CASE("no leaks: broadcasts to relays that fail", "[leaks]") {
  Scratch s;
  fs::create_directories(s.dir / "src");
  std::ofstream(s.dir / "src" / "f") << std::string(100000, 'x');
  ezpz::core::BroadcastSpec spec;
  spec.destination = (s.dir / "dst").string();
  spec.this_host = "head";
  spec.stall_timeout_s = 0.3;
  spec.stream_level = 1;
  const ezpz::core::HostList hosts = {"n1", "n2", "n3", "n4", "n5"};
  const auto tree = ezpz::core::relay_tree(hosts, 2);  // n1 and n2 feed the rest: re-attached here
  std::atomic<bool> stop{false};
  auto broadcast = [&](const std::string& relay) {
    ScriptTransport transport(relay);
    return ezpz::sys::broadcast_tree(transport, (s.dir / "src").string(), "src", tree, spec, {}, {}, stop);
  };
  no_leak("broadcast_tree: relays that exit at once", [&] { return all_failed(broadcast("exit 3"), hosts.size()); });
  no_leak("broadcast_tree: relays that cannot be started", [&] { return all_failed(broadcast(""), hosts.size()); });
  no_leak("broadcast_tree: relays that never say they are ready",
          [&] { return all_failed(broadcast("exec sleep 30"), hosts.size()); });
  no_leak("broadcast_tree: relays that are ready, then say nothing",
          [&] { return all_failed(broadcast("echo EZPZ-READY; exec sleep 30"), hosts.size()); });
  no_leak("broadcast_tree: first relays that end once ready, theirs re-attached and silent", [&] {
    return all_failed(broadcast(R"(case $1 in n1|n2) echo EZPZ-READY; exit 0;; *) exec sleep 30;; esac)"),
                      hosts.size());
  });
  no_leak("send_from_peer: a sender that exits at once", [&] {
    ScriptTransport transport("exit 3");
    return all_failed(ezpz::sys::send_from_peer(transport, "peer", tree, spec, {}), hosts.size());
  });
}

TEST_CASE("no leaks: greedy pushes that fail", "[leaks]") {
  Scratch s;
  ezpz::core::BroadcastSpec spec;
  spec.destination = (s.dir / "dst").string();
  const ezpz::core::HostList targets = {"n1", "n2", "n3", "n4"};
  std::atomic<bool> stop{false};
  no_leak("greedy_broadcast: this node's pushes cannot run ezpz", [&] {
    spec.reach.self_exe = "/nonexistent/ezpz";
    ScriptTransport transport("exit 3");
    return all_failed(ezpz::sys::greedy_broadcast(transport, targets, spec, 2, stop), targets.size());
  });
  // This node's pushes succeed (the nodes become sources), those from the nodes fail; a child of
  // this process that is not a push ends meanwhile and is left to its owner.
  const auto push = s.dir / "push.sh";
  {
    std::ofstream script(push);
    script << "#!/bin/sh\n";
    for (const auto& host : targets) {
      ezpz::core::NodeResult ok;
      ok.host = host;
      ok.outcome = ezpz::core::NodeOutcome::ok;
      script << "echo '" << ezpz::core::encode_result(ok) << "'\n";
    }
  }
  fs::permissions(push, fs::perms::owner_all);
  no_leak("greedy_broadcast: pushes from the nodes that fail, beside a child not its own", [&] {
    spec.reach.self_exe = push.string();
    const pid_t other = ::fork();
    if (other == 0) {
      ::_exit(7);
    }
    ScriptTransport transport("exit 3");
    const auto results = ezpz::sys::greedy_broadcast(transport, targets, spec, 1, stop);
    int status = 0;
    const bool left_alone =
        other > 0 && ::waitpid(other, &status, 0) == other && WIFEXITED(status) && WEXITSTATUS(status) == 7;
    const auto ok = std::count_if(results.begin(), results.end(), [](const auto& r) { return r.ok(); });
    INFO("ok: " << ok << " of " << results.size());
    return left_alone && results.size() == targets.size() && ok >= 2 && ok < 4;
  });
}
