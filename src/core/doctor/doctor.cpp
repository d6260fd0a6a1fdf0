// ezpz doctor: results and their output, mount tables, the per-node and launch-probe decisions.
// The local checks are in doctor_local.cpp.
#include "core/doctor/doctor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/strings.hpp"
#include "core/launch/failure.hpp"
#include "core/reach/transport.hpp"
#include "core/yeet/outcome.hpp"

namespace ezpz::core {
namespace {
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  for (auto line : split(text, '\n')) {
    out.emplace_back(line);
  }
  return out;
}
std::vector<std::string> split_words(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    const auto start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    if (i > start) {
      out.emplace_back(line.substr(start, i - start));
    }
  }
  return out;
}
}  // namespace

std::string_view to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::ok:
      return "ok";
    case CheckStatus::warning:
      return "warning";
    case CheckStatus::error:
      return "error";
  }
  return "error";
}

CheckResult check_ok(std::string name, std::string message) {
  return CheckResult{std::move(name), CheckStatus::ok, std::move(message), "", "", 0};
}
CheckResult check_warning(std::string name, std::string message, std::string remedy) {
  return CheckResult{std::move(name), CheckStatus::warning, std::move(message), std::move(remedy), "", 0};
}
CheckResult check_error(std::string name, std::string message, std::string remedy) {
  return CheckResult{std::move(name), CheckStatus::error, std::move(message), std::move(remedy), "", 0};
}

int doctor_exit_code(const std::vector<CheckResult>& results) {
  return std::any_of(results.begin(), results.end(), [](const auto& r) { return r.status == CheckStatus::error; }) ? 1
                                                                                                                   : 0;
}

DoctorSummary summarize_checks(const std::vector<CheckResult>& results) {
  DoctorSummary s;
  for (const auto& r : results) {
    (r.status == CheckStatus::ok ? s.ok : r.status == CheckStatus::warning ? s.warnings : s.failed) += 1;
  }
  return s;
}

std::string summary_line(const DoctorSummary& s) {
  return std::to_string(s.ok) + " ok, " + count_of(s.warnings, "warning") + ", " + std::to_string(s.failed) + " failed";
}

std::string doctor_json(const std::vector<CheckResult>& results) {
  auto checks = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json j = {{"name", r.name},
                        {"status", to_string(r.status)},
                        {"message", r.message},
                        {"remedy", r.remedy},
                        {"duration_ms", std::round(r.duration_ms * 1000) / 1000}};
    if (!r.host.empty()) {
      j["host"] = r.host;
    }
    checks.push_back(std::move(j));
  }
  const auto s = summarize_checks(results);
  const nlohmann::json out = {{"summary", {{"ok", s.ok}, {"warnings", s.warnings}, {"failed", s.failed}}},
                              {"checks", std::move(checks)}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string doctor_text(const std::vector<CheckResult>& results, bool color, bool all) {
  std::string out;
  int hidden = 0;
  for (const auto& r : results) {
    if (!all && !r.host.empty() && r.status == CheckStatus::ok) {
      ++hidden;
      continue;
    }
    const char* tag = r.status == CheckStatus::ok ? "[ OK ]" : r.status == CheckStatus::warning ? "[WARN]" : "[FAIL]";
    const char* code = r.status == CheckStatus::ok ? "32" : r.status == CheckStatus::warning ? "1;33" : "1;31";
    out += color ? std::string("\033[") + code + "m" + tag + "\033[0m" : std::string(tag);
    out += " " + r.name;
    if (!r.host.empty()) {
      out += " (" + r.host + ")";
    }
    out += ": " + r.message + "\n";
    if (!r.remedy.empty() && r.status != CheckStatus::ok) {
      out += "       -> " + r.remedy + "\n";
    }
  }
  if (hidden > 0) {
    out += "       (" + count_of(hidden, "node") + " ok; --json or -v lists each)\n";
  }
  return out + summary_line(summarize_checks(results)) + "\n";
}

// ------------------------------------------------------------------ mounts

namespace {
std::string unescape_mount(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        s.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
      out += static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}
}  // namespace

std::vector<Mount> parse_mounts(std::string_view text) {
  std::vector<Mount> out;
  for (const auto& line : split_lines(text)) {
    auto words = split_words(line);
    if (words.size() < 3) {
      continue;
    }
    out.push_back(Mount{unescape_mount(words[0]), unescape_mount(words[1]), words[2]});
  }
  return out;
}

std::optional<Mount> mount_of(const std::vector<Mount>& mounts, std::string_view path) {
  std::optional<Mount> best;
  for (const auto& m : mounts) {
    const std::string_view p = m.point;
    const bool inside =
        p == "/" || path == p || (path.substr(0, p.size()) == p && path.size() > p.size() && path[p.size()] == '/');
    if (inside && (!best || p.size() >= best->point.size())) {
      best = m;
    }
  }
  return best;
}

bool is_shared_fs(std::string_view type) {
  static const std::set<std::string_view> shared = {
      "nfs",      "nfs4",  "lustre",        "gpfs",   "beegfs", "ceph",     "cifs",       "smb3",           "smbfs",
      "dvs",      "panfs", "afs",           "wekafs", "9p",     "virtiofs", "fuse.sshfs", "fuse.glusterfs", "glusterfs",
      "orangefs", "pvfs2", "fuse.ceph-fuse"};
  return shared.count(type) != 0 || type.rfind("nfs", 0) == 0;
}

// ------------------------------------------------------------------ per-node tier

std::string encode_node_facts(const NodeFacts& f) {
  return nlohmann::json{{"hostname", f.hostname}, {"time_ns", f.time_ns}, {"dst", f.dst},
                        {"dst_free", f.dst_free}, {"version", f.version}, {"exe_present", f.exe_present},
                        {"exe_same", f.exe_same}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<NodeFacts> decode_node_facts(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("time_ns")) {
    return std::nullopt;
  }
  NodeFacts f;
  f.hostname = j.value("hostname", "");
  f.time_ns = j.value("time_ns", 0LL);
  f.dst = j.value("dst", "");
  f.dst_free = j.value("dst_free", 0ULL);
  f.version = j.value("version", "");
  f.exe_present = j.value("exe_present", false);
  f.exe_same = j.value("exe_same", false);
  return f;
}

std::string existing_ancestor(const std::string& path, const FileProbe& probe) {
  std::string p = path.empty() ? "/" : path;
  while (p.size() > 1 && !probe.disk_space(p)) {
    const auto slash = p.rfind('/');
    p = slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }
  return p;
}

namespace {
std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), v < 10 ? "%.2f ms" : "%.0f ms", v);
  return buf;
}
std::string join_hosts(const std::vector<std::string>& hosts) {
  std::string out;
  for (std::size_t i = 0; i < hosts.size() && i < 8; ++i) {
    out += (i ? ", " : "") + hosts[i];
  }
  if (hosts.size() > 8) {
    out += " and " + std::to_string(hosts.size() - 8) + " more";
  }
  return out;
}

/// Why a node did not answer, in one line.
std::string no_answer(const NodeReply& r, int timeout_s) {
  if (r.timed_out) {
    std::string said;
    for (const auto& line : split_lines(r.early)) {
      said = trim(line).empty() ? said : std::string(trim(line));
    }
    return "no answer from " + r.host + " within " + std::to_string(timeout_s) + " s" +
           (r.ready        ? " (ezpz started there)"
            : said.empty() ? ""
                           : " (it said: " + said + ")");
  }
  for (const auto& line : split_lines(r.early)) {
    if (auto res = decode_result(line); res && !res->error.empty()) {
      return res->error;
    }
  }
  std::string said;
  for (const auto& line : split_lines(r.early)) {
    if (!trim(line).empty()) {
      said = std::string(trim(line));
    }
  }
  if (!said.empty()) {
    return said;
  }
  if (r.exit_code == 255) {
    return "ssh could not connect to " + r.host;
  }
  if (r.exit_code == 127) {
    return "ezpz could not be started on " + r.host;
  }
  if (r.ready) {
    return "ezpz started on " + r.host + " but did not answer in time";
  }
  return "no answer from " + r.host + (r.exit_code >= 0 ? " (exit " + std::to_string(r.exit_code) + ")" : "");
}
}  // namespace

namespace {

/// What the per-host checks found, for the summary lines.
struct NodeTally {
  std::vector<std::string> unreachable, skewed, low_space, missing_exe, other_exe, other_version;
  double worst_skew = 0, worst_rtt = 0;
  std::string worst_skew_host, worst_rtt_host;
  std::vector<double> rtts;
  unsigned long long least_free = ~0ULL;
  std::string least_free_host;
};

/// One host's line: round trip, clock, free space, its ezpz.
CheckResult check_one_node(const NodeReply& r, const NodeTierOptions& o, NodeTally& t) {
  auto facts = r.reply.empty() ? std::nullopt : decode_node_facts(r.reply);
  if (!facts) {
    t.unreachable.push_back(r.host);
    auto c = check_error("node", no_answer(r, o.timeout_s),
                         "check `ssh " + r.host + " true` from this host (keys, known_hosts, sshd running)");
    c.host = r.host;
    return c;
  }
  const double rtt = static_cast<double>(r.reply_ns - r.ping_ns) / 1e6;
  const double connect = static_cast<double>(r.ready_ns - r.start_ns) / 1e6;
  const auto midway_ns = r.ping_ns + (r.reply_ns - r.ping_ns) / 2;  // when the node read its clock, as we see it
  const double skew = static_cast<double>(facts->time_ns - midway_ns) / 1e6;
  t.rtts.push_back(rtt);
  if (rtt > t.worst_rtt) {
    t.worst_rtt = rtt;
    t.worst_rtt_host = r.host;
  }
  if (std::abs(skew) > std::abs(t.worst_skew) || t.worst_skew_host.empty()) {
    t.worst_skew = skew;
    t.worst_skew_host = r.host;
  }
  if (facts->dst_free < t.least_free) {
    t.least_free = facts->dst_free;
    t.least_free_host = r.host;
  }
  CheckStatus status = CheckStatus::ok;
  std::vector<std::string> remedies;
  auto raise = [&status](CheckStatus s) { status = std::max(status, s); };
  if (std::abs(skew) > o.skew_warning_ms) {
    t.skewed.push_back(r.host);
    raise(std::abs(skew) > o.skew_error_ms ? CheckStatus::error : CheckStatus::warning);
    remedies.push_back("sync the clock (chronyd/ntpd)");
  }
  if (o.need_bytes > 0 && facts->dst_free < o.need_bytes) {
    t.low_space.push_back(r.host);
    raise(CheckStatus::error);
    remedies.push_back("free space in " + facts->dst + " or yeet elsewhere (--dst)");
  }
  if (facts->version != o.version) {
    t.other_version.push_back(r.host);
    raise(CheckStatus::error);
  }
  if (!facts->exe_present) {
    t.missing_exe.push_back(r.host);
    raise(CheckStatus::warning);
    remedies.push_back("put ezpz at " + o.exe + " on every node (a shared filesystem)");
  } else if (!facts->exe_same) {
    t.other_exe.push_back(r.host);
    raise(CheckStatus::warning);
    remedies.push_back("install the same ezpz at " + o.exe);
  }
  char skew_text[32];
  std::snprintf(skew_text, sizeof(skew_text), "%+.1f ms", skew);
  std::string msg = "round trip " + ms(rtt) + " (connect " + ms(connect) + "), clock " + skew_text + ", " +
                    human_bytes(facts->dst_free) + " free in " + facts->dst + ", ezpz " + facts->version +
                    (facts->exe_same      ? " (same binary)"
                     : facts->exe_present ? " (a different binary at " + o.exe + ")"
                                          : " (not at " + o.exe + ")");
  CheckResult c{"node", status, msg, "", r.host, 0};
  for (const auto& rem : remedies) {
    c.remedy += (c.remedy.empty() ? "" : "; ") + rem;
  }
  return c;
}

/// The lines over every host that answered: clocks, space, ezpz versions.
void summarize_nodes(const NodeTally& t, const NodeTierOptions& o, int reached, std::vector<CheckResult>& out) {
  char skew_text[32];
  std::snprintf(skew_text, sizeof(skew_text), "%+.1f ms", t.worst_skew);
  const std::string worst = std::string("largest clock offset ") + skew_text + " (" + t.worst_skew_host + ")";
  if (t.skewed.empty()) {
    out.push_back(check_ok("clock", worst));
  } else {
    out.push_back(CheckResult{"clock",
                              std::abs(t.worst_skew) > o.skew_error_ms ? CheckStatus::error : CheckStatus::warning,
                              worst + "; off by more than " + ms(o.skew_warning_ms) + ": " + join_hosts(t.skewed),
                              "sync their clocks (chronyd or ntpd): logs, W&B timestamps and yeet's mtime "
                              "comparison assume one clock",
                              "", 0});
  }
  const std::string free_text = "least free in " + o.dst + ": " + human_bytes(t.least_free) + " (" + t.least_free_host +
                                ")" + (o.need_bytes > 0 ? "; the active env needs " + human_bytes(o.need_bytes) : "");
  if (t.low_space.empty()) {
    out.push_back(check_ok("node-space", free_text));
  } else {
    out.push_back(check_error("node-space", free_text + "; too little on " + join_hosts(t.low_space),
                              "free space there or yeet to another destination (--dst)"));
  }
  if (!t.other_version.empty()) {
    out.push_back(check_error(
        "ezpz-version",
        "a different ezpz version answered on " + join_hosts(t.other_version) + " (this is " + o.version + ")",
        "use one ezpz build on every node"));
  } else if (!t.missing_exe.empty() || !t.other_exe.empty()) {
    std::string msg = "ezpz " + o.version + " everywhere, but ";
    if (!t.missing_exe.empty()) {
      msg += o.exe + " is missing on " + join_hosts(t.missing_exe);
    }
    if (!t.other_exe.empty()) {
      msg +=
          std::string(t.missing_exe.empty() ? "" : "; ") + o.exe + " is another binary on " + join_hosts(t.other_exe);
    }
    out.push_back(check_warning("ezpz-version", msg + " (a copy was shipped for this check)",
                                "launch's per-rank shim runs " + o.exe +
                                    " on every node: put ezpz on a shared filesystem or the same path everywhere"));
  } else {
    out.push_back(check_ok("ezpz-version", "ezpz " + o.version + " at " + o.exe + " is the same binary on all " +
                                               std::to_string(reached) + " hosts that answered"));
  }
}

}  // namespace

void settle_ezpz_check(std::vector<CheckResult>& results) {
  auto named = [&](std::string_view name) {
    return std::find_if(results.begin(), results.end(),
                        [&](const auto& r) { return r.name == name && r.host.empty(); });
  };
  const auto nodes = named("nodes");
  const auto same = named("ezpz-version");
  const auto local = named("ezpz");
  if (nodes == results.end() || same == results.end() || local == results.end() || nodes->status != CheckStatus::ok ||
      same->status != CheckStatus::ok || local->status != CheckStatus::warning) {
    return;
  }
  local->status = CheckStatus::ok;
  local->message = local->message.substr(0, local->message.find(": not on a shared filesystem")) +
                   ": node-local, and doctor --nodes found the same binary at its path on every host";
  local->remedy.clear();
}

std::vector<CheckResult> node_checks(const std::vector<NodeReply>& replies, const NodeTierOptions& o) {
  std::vector<CheckResult> per_host;
  NodeTally t;
  for (const auto& r : replies) {
    per_host.push_back(check_one_node(r, o, t));
  }
  std::vector<CheckResult> out;
  const int total = static_cast<int>(replies.size());
  const int reached = total - static_cast<int>(t.unreachable.size());
  if (total == 0) {
    out.push_back(check_ok("nodes", "no other hosts in the job: nothing to reach over ssh"));
    return out;
  }
  std::sort(t.rtts.begin(), t.rtts.end());
  if (!t.unreachable.empty()) {
    out.push_back(check_error(
        "nodes",
        std::to_string(reached) + " of " + std::to_string(total) + " hosts answered over " + o.transport +
            "; no answer from " + join_hosts(t.unreachable),
        "see the per-host lines; fix the way to those hosts (ssh, or --transport) or leave them out of the hostfile"));
  } else {
    out.push_back(check_ok("nodes", "all " + std::to_string(total) + " hosts answered over " + o.transport +
                                        "; round trip median " + ms(t.rtts[t.rtts.size() / 2]) + ", max " +
                                        ms(t.worst_rtt) + " (" + t.worst_rtt_host + ")"));
  }
  if (reached > 0) {
    summarize_nodes(t, o, reached, out);
  }
  out.insert(out.end(), per_host.begin(), per_host.end());
  return out;
}

// ------------------------------------------------------------------ launch probe

std::string encode_rank_line(const Env& env) {
  nlohmann::json j = {{"host", env.hostname}};
  for (const char* name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    if (auto v = env.get(name)) {
      j[name] = *v;
    }
  }
  return std::string(kRankLinePrefix) + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

CheckResult launch_check(const LaunchProbeOutcome& o) {
  const std::string remedy_base = "run the launch line by hand: ezpz launch --ppn 1 -- hostname";
  if (!o.start_error.empty()) {
    return check_error("launch", "the launch probe could not start: " + o.start_error, remedy_base);
  }
  const int want = static_cast<int>(o.hosts.size());
  std::map<int, nlohmann::json> ranks;
  std::vector<std::string> incomplete;
  for (const auto& raw : split_lines(o.output.output)) {
    const auto pos = raw.find(kRankLinePrefix);
    if (pos == std::string::npos) {
      continue;
    }
    auto j = nlohmann::json::parse(raw.substr(pos + kRankLinePrefix.size()), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      continue;
    }
    bool complete = true;
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
      complete = complete && j.contains(name);
    }
    if (!complete) {
      incomplete.push_back(j.value("host", "?"));
      continue;
    }
    ranks[std::atoi(j.value("RANK", "0").c_str())] = j;
  }
  auto tail = [&] {
    const auto said = launcher_says(o.output.output, kRankLinePrefix);
    return said.empty() ? std::string() : ": " + said;
  };
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.2f s", o.seconds);
  if (o.output.timed_out) {
    return check_error("launch",
                       o.launcher + " did not finish in time; " + std::to_string(ranks.size()) + " of " +
                           std::to_string(want) + " ranks reported" + tail(),
                       remedy_base + " (a hang at start is often ssh to a node or a firewall between nodes)");
  }
  std::set<std::string> hosts_seen;
  std::set<std::string> ports, addrs;
  for (const auto& [rank, j] : ranks) {
    hosts_seen.insert(short_hostname(j.value("host", "")));
    ports.insert(j.value("MASTER_PORT", ""));
    addrs.insert(j.value("MASTER_ADDR", ""));
  }
  std::vector<std::string> silent;
  for (const auto& h : o.hosts) {
    if (hosts_seen.count(short_hostname(h)) == 0) {
      silent.push_back(h);
    }
  }
  if (o.output.exit_code != 0 || static_cast<int>(ranks.size()) != want || !silent.empty()) {
    std::string msg = o.launcher + " exited " + std::to_string(o.output.exit_code) + " after " + secs + "; " +
                      std::to_string(ranks.size()) + " of " + std::to_string(want) + " ranks reported";
    if (!silent.empty()) {
      msg += "; none from " + join_hosts(silent);
    }
    if (!incomplete.empty()) {
      msg += "; without the rank variables on " + join_hosts(incomplete);
    }
    return check_error("launch", msg + tail(), remedy_base);
  }
  bool ranks_ok = true;
  for (int r = 0; r < want; ++r) {
    ranks_ok = ranks_ok && ranks.count(r) != 0 && ranks.at(r).value("WORLD_SIZE", "") == std::to_string(want);
  }
  if (!ranks_ok || ports.size() != 1 || addrs.size() != 1) {
    return check_error("launch",
                       "the ranks disagree: RANK 0.." + std::to_string(want - 1) + ", WORLD_SIZE " +
                           std::to_string(want) + " and one MASTER_ADDR:PORT expected, got " +
                           count_of(addrs.size(), "address", "addresses") + " and " + count_of(ports.size(), "port"),
                       "compare `ezpz launch --print-env` with what the launcher sets (PMI_RANK, PALS_RANKID, ...)");
  }
  return check_ok("launch", count_of(want, "rank") + ", one per host, through " + o.launcher + " in " + secs +
                                "; each reported RANK, WORLD_SIZE=" + std::to_string(want) + ", LOCAL_RANK and " +
                                "MASTER_ADDR:PORT " + *addrs.begin() + ":" + *ports.begin());
}

// A local check, but over plain file texts only (no gathered facts).
CheckResult check_user(const Env& env, std::string_view passwd, std::string_view nsswitch) {
  const std::string name = "user";
  const std::string uid = std::to_string(env.uid);
  for (auto line : split(passwd, '\n')) {
    auto fields = split(line, ':');
    if (fields.size() > 2 && fields[2] == uid) {
      return check_ok(name, "uid " + uid + " (" + std::string(fields[0]) + ") is in /etc/passwd");
    }
  }
  std::string sources;
  for (auto line : split(nsswitch, '\n')) {
    line = trim(line);
    if (line.substr(0, 7) == "passwd:") {
      sources = std::string(trim(line.substr(7)));
    }
  }
  const bool user = env.get("USER").has_value() && !env.get("USER")->empty();
  const bool home = env.get("HOME").has_value() && !env.get("HOME")->empty();
  const std::string where = sources.empty() ? "a directory service" : "'" + sources + "' (nsswitch)";
  if (user && home) {
    return check_warning(name,
                         "uid " + uid + " is not in /etc/passwd (it comes from " + where +
                             "), which a static binary cannot query; ezpz uses USER=" + *env.get("USER") +
                             " and HOME=" + *env.get("HOME"),
                         "keep USER and HOME set in batch scripts and ssh sessions (they normally are)");
  }
  return check_error(name, "uid " + uid + " is not in /etc/passwd and USER or HOME is unset: ezpz cannot name you",
                     "export USER=$(id -un) HOME=~ before running ezpz");
}

}  // namespace ezpz::core
