// The rank channel: every rank's shim sends its output and its end to the launching ezpz over
// one sealed TCP connection (the rank hub), beside the launcher instead of through it. Lines
// of ranks then never cut or glue under any launcher, every line can name its host, a failing
// rank's last words and a quiet rank are known, and a shim whose hub is gone stops its rank:
// no rank outlives ezpz. Port (sys/ranks); the hub is also what a launcher's supervision waits
// on (JobSideChannel).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/env.hpp"
#include "core/launch/failure.hpp"
#include "core/launch/rank_output.hpp"
#include "core/ports/process.hpp"

namespace ezpz::core {

/// The shim's end: its rank's output goes to the hub.
/// How often a quiet shim says it is alive, and the silence that names its node (failover).
inline constexpr double kAliveEveryS = 2;
inline constexpr double kShimSilenceS = 8;

class RankLink {
 public:
  virtual ~RankLink() = default;
  /// Send bytes of stream 1 (stdout) or 2 (stderr) as they came; false once the hub is gone.
  virtual bool send_output(int stream, std::string_view bytes) = 0;
  /// For a rank the console does not show: only that stream 1 or 2 had output, and its last
  /// line (who went quiet, the watchdog), not the bytes (its files have them); false once the
  /// hub is gone.
  virtual bool send_progress(int stream, std::string_view last_line) = 0;
  /// Send how the rank ended (exit_report_json); false once the hub is gone.
  virtual bool send_exit(const RankExit& exit) = 0;
  /// "Still here" when the shim has sent nothing for kAliveEvery: a node whose shims go silent
  /// is stopped or cut off (failover's evidence); false once the hub is gone.
  virtual bool send_alive() = 0;
  /// The descriptor to wait on: readable when the hub speaks or is gone.
  [[nodiscard]] virtual int fd() const = 0;
  enum class Heard { nothing, kill, stop, gone };
  /// What the hub said: nothing yet, kill the rank now, stop it (pass it stop_signal(), then
  /// hold this shim's end until await_release() says), or it is gone (ezpz ended or died).
  virtual Heard hear() = 0;
  /// The signal the hub's stop asked to pass on (0: none yet).
  [[nodiscard]] virtual int stop_signal() const = 0;
  /// After the rank's end (reported): wait until the hub lets this shim end (after its stop:
  /// once every rank ended; under a hub that stops ranks: its answer to the report), kills, or
  /// is gone, for at most `seconds`. At once under any other hub without a stop, and for a rank
  /// that `ended_well` (exit 0) without a stop once the hub's node has every byte of the report.
  virtual void await_release(double seconds, bool ended_well) = 0;
  /// The launch's grace between SIGTERM and SIGKILL (--kill-after), as the hub said.
  [[nodiscard]] virtual double kill_after() const = 0;
};

/// A shim's connection to the hub, begun before its rank starts (its hello on the way while the
/// command starts), finished once the command runs.
class PendingRankLink {
 public:
  virtual ~PendingRankLink() = default;
  /// The link, the hub told who we are; nullptr, with `why`, when it cannot be reached in `timeout_ms`.
  [[nodiscard]] virtual std::unique_ptr<RankLink> finish(int timeout_ms, std::string& why) = 0;
};

/// What the hub does with what the shims send.
struct HubOptions {
  std::string host;          ///< the address the shims connect to (this node's, as other nodes see it)
  int nprocs = 0;            ///< ranks expected
  bool label = false;        ///< prefix every line with "[host rank] "
  RankRanges console;        ///< ranks whose lines show (empty: all)
  double kill_after_s = 10;  ///< told to every shim: its grace when the hub is gone
  /// ezpz stops these ranks through their shims (stop_ranks): every shim's end report is
  /// answered, and the shim ends only once it has the answer (a stop that crossed its report
  /// then holds it), so no stop is left unread when it closes: a socket closed with bytes
  /// unread is reset, and what it had not yet sent is lost.
  bool stops_ranks = false;
};

/// The launch's end: one per attempt.
class RankHub : public JobSideChannel {
 public:
  /// "address:port" and the secret (hex) for kHubVar and kHubKeyVar.
  [[nodiscard]] virtual std::string address() const = 0;
  [[nodiscard]] virtual std::string key() const = 0;
  /// How the ranks that reported an end ended, with their last stderr lines.
  [[nodiscard]] virtual std::vector<RankExit> exits() const = 0;
};

class RankChannels {
 public:
  virtual ~RankChannels() = default;
  /// A hub listening on `options.host` when it is an IPv4 address (127.0.0.1 when every rank is
  /// on this node), else on every address of this node; strangers' connections (anyone on a
  /// shared node can connect) hold up no rank's and go at their deadline. An Error when none can
  /// be opened.
  [[nodiscard]] virtual Expected<std::unique_ptr<RankHub>> open_hub(const HubOptions& options) = 0;
  /// The shim's connection to the hub kHubVar names (with kHubKeyVar's secret), begun: nullptr,
  /// with `why`, when it cannot be (`why` empty: no hub planned, a line run by hand).
  [[nodiscard]] virtual std::unique_ptr<PendingRankLink> begin_hub(const Env& env, int rank, const std::string& host,
                                                                   std::string& why) = 0;
  /// begin_hub, finished at once: saying who it is; nullptr, with `why`, when there is none or
  /// it cannot be reached in `timeout_ms`.
  [[nodiscard]] std::unique_ptr<RankLink> connect_hub(const Env& env, int rank, const std::string& host, int timeout_ms,
                                                      std::string& why) {
    auto pending = begin_hub(env, rank, host, why);
    return pending ? pending->finish(timeout_ms, why) : nullptr;
  }
};

}  // namespace ezpz::core
