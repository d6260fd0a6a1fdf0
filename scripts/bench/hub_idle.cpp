// The rank hub with many quiet ranks connected (scripts/bench/hub_idle.sh runs it), served as a
// launch's supervision serves it (wait on the descriptors it gives, then service each ready
// one). At 4,096 nodes x 12 ranks the head holds 49,152 connections, nearly all quiet at any
// moment, each saying it is alive every 2 s (core::kAliveEveryS): neither what a line costs nor
// what the quiet cost should grow with them.
// Usage: ezpz_bench_hub lines IDLE LINES  one rank sends LINES lines while IDLE others are connected
//        ezpz_bench_hub alive N SECONDS   N ranks, each alive every 2 s, for SECONDS
// (the hub writes the lines to stdout: send it to /dev/null). Prints one JSON line on stderr with
// the serving thread's CPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/resource.h>
#include <time.h>

#include "sys/ranks/rank_channels.hpp"

using namespace ezpz;

namespace {

/// One wake of the job runner: wait on the hub's descriptors, then service each ready one.
void serve_once(core::RankHub& hub) {
  std::vector<pollfd> fds;
  for (int fd : hub.fds()) {
    fds.push_back({fd, POLLIN, 0});
  }
  if (::poll(fds.data(), fds.size(), 10) > 0) {
    for (const auto& p : fds) {
      if (p.revents != 0) {
        (void)hub.service(p.fd);
      }
    }
  }
}

template <typename T>
T serve_until(core::RankHub& hub, std::future<T>& done) {
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    serve_once(hub);
  }
  return done.get();
}

/// CPU seconds of the calling thread (the one serving the hub, as the head's only thread does).
double cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

/// Ranks 1..n connect (each a handshake and a hello) while the hub is served.
bool connect_quiet(core::RankHub& hub, core::RankChannels& channels, const core::Env& env, int n,
                   std::vector<std::unique_ptr<core::RankLink>>& quiet) {
  auto connected = std::async(std::launch::async, [&] {
    std::string why;
    for (int r = 1; r <= n; ++r) {
      quiet.push_back(channels.connect_hub(env, r, "bench", 10000, why));
      if (!quiet.back()) {
        return false;
      }
    }
    return true;
  });
  return serve_until(hub, connected);
}

/// Rank 0 sends `lines` lines and its end; the clock stops when the hub has taken the end.
int lines_mode(core::RankHub& hub, core::RankChannels& channels, const core::Env& env, int idle, int lines) {
  const std::string line(100, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  auto sent = std::async(std::launch::async, [&] {
    std::string why;
    auto link = channels.connect_hub(env, 0, "bench", 10000, why);
    for (int i = 0; link && i < lines; ++i) {
      if (!link->send_output(1, line + " " + std::to_string(i) + "\n")) {
        return false;
      }
    }
    return link && link->send_exit(core::RankExit{0, 0, "bench", 0, 0, 0, "bench", 0, 0, {}});
  });
  const bool ok = serve_until(hub, sent);
  while (ok && hub.exits().empty()) {
    serve_once(hub);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  std::fprintf(stderr, "{\"idle\": %d, \"lines\": %d, \"seconds\": %.3f, \"lines_per_s\": %.0f, \"cpu_s\": %.3f}\n",
               idle, lines, secs, lines / secs, cpu);
  return ok ? 0 : 1;
}

/// Every quiet rank says it is alive once every kAliveEveryS, spread evenly, for `seconds`.
int alive_mode(core::RankHub& hub, std::vector<std::unique_ptr<core::RankLink>>& quiet, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  auto said = std::async(std::launch::async, [&] {
    const auto gap = std::chrono::duration<double>(core::kAliveEveryS / static_cast<double>(quiet.size()));
    long n = 0;
    for (auto next = t0; std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(seconds);) {
      std::this_thread::sleep_until(next);
      for (; next <= std::chrono::steady_clock::now();
           next += std::chrono::duration_cast<std::chrono::nanoseconds>(gap)) {
        (void)quiet[static_cast<std::size_t>(n++ % static_cast<long>(quiet.size()))]->send_alive();
      }
    }
    return n;
  });
  const long n = serve_until(hub, said);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  std::fprintf(stderr,
               "{\"ranks\": %zu, \"alive_per_s\": %.0f, \"seconds\": %.1f, \"cpu_s\": %.3f, \"core_busy\": %.3f}\n",
               quiet.size(), static_cast<double>(n) / secs, secs, cpu, cpu / secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[1] : "";
  if (mode != "lines" && mode != "alive") {
    std::fprintf(stderr, "usage: ezpz_bench_hub lines IDLE LINES | alive N SECONDS\n");
    return 2;
  }
  const int n = std::atoi(argv[2]);
  if (n < (mode == "alive" ? 1 : 0)) {
    std::fprintf(stderr, "ezpz_bench_hub: %s needs %s ranks, not %s\n", mode.c_str(),
                 mode == "alive" ? "1 or more" : "0 or more", argv[2]);
    return 2;
  }
  rlimit files{};  // both ends of every connection live in this process
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  if (static_cast<rlim_t>(2 * n + 64) > files.rlim_cur) {
    std::fprintf(stderr, "ezpz_bench_hub: %d ranks need %d descriptors, the limit is %llu\n", n, 2 * n + 64,
                 static_cast<unsigned long long>(files.rlim_cur));
    return 2;
  }
  sys::SecureRankChannels channels;
  core::HubOptions options;
  options.host = "127.0.0.1";
  options.nprocs = n + 1;
  auto opened = channels.open_hub(options);
  if (!opened) {
    std::fprintf(stderr, "ezpz_bench_hub: %s\n", opened.error().message.c_str());
    return 1;
  }
  auto& hub = **opened;
  core::Env env;
  env.vars = {{std::string(core::kHubVar), hub.address()}, {std::string(core::kHubKeyVar), hub.key()}};
  env.hostname = "bench";
  std::vector<std::unique_ptr<core::RankLink>> quiet;
  if (!connect_quiet(hub, channels, env, n, quiet)) {
    std::fprintf(stderr, "ezpz_bench_hub: a quiet rank could not connect\n");
    return 1;
  }
  return mode == "lines" ? lines_mode(hub, channels, env, n, std::atoi(argv[3]))
                         : alive_mode(hub, quiet, std::atof(argv[3]));
}
