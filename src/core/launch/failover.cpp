#include "core/launch/failover.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "core/base/strings.hpp"
#include "core/job/hostlist.hpp"
#include "core/launch/rank_output.hpp"

namespace ezpz::core {

Expected<std::optional<int>> parse_spare_nodes(std::string_view text) {
  if (text == "auto") {
    return std::optional<int>();
  }
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1) {
    return usage_error("--spare-nodes " + std::string(text) +
                       " is not a number of nodes: give a count of at least 1, or auto (every node the job's -n or "
                       "--nhosts does not need)");
  }
  return std::optional<int>(n);
}

Expected<NodeSplit> split_nodes(const TopologyRequest& topology, const HostList& hosts, int per_node,
                                const FailoverRequest& request) {
  const int total = static_cast<int>(hosts.size());
  int needed = 0;
  std::string by;
  if (topology.nhosts) {
    needed = *topology.nhosts;
    by = "--nhosts " + std::to_string(needed);
  } else if (topology.nprocs) {
    const int ppn = std::max(1, topology.ppn.value_or(per_node));
    needed = (*topology.nprocs + ppn - 1) / ppn;
    by = "-n " + std::to_string(*topology.nprocs);
  } else if (request.spares) {
    needed = total - *request.spares;
  } else {
    return usage_error(
        "--auto-retry keeps as spares the nodes that -n or --nhosts leave over, and neither is given: "
        "pass -n or --nhosts, or --spare-nodes N");
  }
  if (needed < 1) {
    return usage_error("--spare-nodes " + std::to_string(request.spares.value_or(0)) +
                       " leaves no node to run on: the job has " + count_of(static_cast<std::size_t>(total), "node"));
  }
  const int beyond = total - needed;
  if (beyond < 1 || (request.spares && *request.spares > beyond)) {
    const std::string asked = request.spares ? "--spare-nodes " + std::to_string(*request.spares) : "--auto-retry";
    return usage_error(asked + " but the job has " + count_of(static_cast<std::size_t>(std::max(beyond, 0)), "node") +
                       " beyond the " + std::to_string(needed) + " that " + (by.empty() ? "the launch" : by) +
                       " needs: ask for fewer ranks or a bigger allocation");
  }
  const int spares = request.spares.value_or(beyond);
  NodeSplit split;
  split.active.assign(hosts.begin(), hosts.begin() + needed);
  split.spare.assign(hosts.begin() + needed, hosts.begin() + needed + spares);
  return split;
}

Expected<LaunchPlan> plan_on_hosts(LaunchRequest request, const Env& env, ClusterInfo cluster,
                                   const LauncherInventory& inventory, const NodeSplit& split,
                                   const std::string& hostfile, const std::string& master_addr, AttemptAfter after) {
  cluster.hosts = split.active;
  cluster.master_addr = master_addr;
  cluster.host_source = {HostSource::Kind::file, "failover", hostfile};
  request.pin_hosts = true;
  request.topology.nhosts = static_cast<int>(split.active.size());
  EZPZ_TRY_ASSIGN(auto plan, plan_launch(request, env, cluster, inventory));
  if (after == AttemptAfter::swap && plan.style == LauncherStyle::srun) {
    plan.argv.insert(plan.argv.begin() + 1, "--overlap");
  }
  plan.write_hostfile = plan.style != LauncherStyle::srun && plan.style != LauncherStyle::local;
  if (!plan.write_hostfile) {
    plan.hostfile.clear();
  }
  plan.spare_hosts = split.spare;
  return plan;
}

std::string_view to_string(ClaimKind kind) {
  switch (kind) {
    case ClaimKind::node_failure:
      return "node_failure";
    case ClaimKind::tasks_killed:
      return "tasks_killed";
    case ClaimKind::shepherd_died:
      return "shepherd_died";
    case ClaimKind::rpc_child:
      return "rpc_child";
    case ClaimKind::daemon_lost:
      return "daemon_lost";
    case ClaimKind::unreachable:
      return "unreachable";
  }
  return "node_failure";
}

namespace {

/// The host-name word that starts at `pos` (up to a space, a colon, a comma, a quote, a bracket).
std::string word_at(std::string_view line, std::size_t pos) {
  const auto end = line.find_first_of(" \t:,;'\")(]", pos);
  return std::string(line.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
}

/// The word before `pos`'s ": " (a "host: message" line), past any "prog: " prefix.
std::string host_before(std::string_view line, std::size_t pos) {
  auto head = line.substr(0, pos);
  while (!head.empty() && (head.back() == ' ' || head.back() == ':')) {
    head.remove_suffix(1);
  }
  const auto start = head.find_last_of(" \t");
  return std::string(head.substr(start == std::string_view::npos ? 0 : start + 1));
}

std::optional<LauncherClaim> claim_in(std::string_view line, std::string_view next) {
  const std::string text(line);
  auto after = [&](std::string_view key) -> std::optional<std::string> {
    const auto at = line.find(key);
    if (at == std::string_view::npos) {
      return std::nullopt;
    }
    auto host = word_at(line, at + key.size());
    return host.empty() ? std::nullopt : std::optional<std::string>(host);
  };
  if (auto h = after("Node failure on ")) {  // srun
    return LauncherClaim{ClaimKind::node_failure, *h, text};
  }
  if (const auto at = line.find("shepherd died from signal"); at != std::string_view::npos) {  // PALS
    if (auto h = host_before(line, at); !h.empty()) {
      return LauncherClaim{ClaimKind::shepherd_died, h, text};
    }
  }
  if (line.find("Couldn't forward RPC") != std::string_view::npos) {  // PALS: the child, not the parent
    if (auto h = after("to child ")) {
      return LauncherClaim{ClaimKind::rpc_child, *h, text};
    }
  }
  if (line.find("Remote daemon") != std::string_view::npos) {  // Open MPI / PRRTE lost a daemon
    if (auto h = after(" on node ")) {
      return LauncherClaim{ClaimKind::daemon_lost, *h, text};
    }
  }
  // srun: "srun: error: nid001: tasks 0-3: Killed" (or "task 5: Killed").
  if (line.find("srun:") != std::string_view::npos && line.ends_with(": Killed")) {
    if (const auto at = line.find(": task"); at != std::string_view::npos) {
      if (auto h = host_before(line, at); !h.empty()) {
        return LauncherClaim{ClaimKind::tasks_killed, h, text};
      }
    }
  }
  // ssh, as MPICH's Hydra and Open MPI start their daemons: "ssh: connect to host nid001 port 22:
  // No route to host", "ssh: Could not resolve hostname nid001: Name or service not known".
  // And "user@nid001: Permission denied (publickey)." (no key for it).
  if (trim(line).starts_with("ssh: ")) {
    for (const auto key : {"ssh: connect to host ", "ssh: Could not resolve hostname "}) {
      if (auto h = after(key)) {
        return LauncherClaim{ClaimKind::unreachable, *h, std::string(trim(line))};
      }
    }
  }
  if (const auto at = line.find(": Permission denied (publickey"); at != std::string_view::npos) {
    const auto who = trim(line.substr(0, at));        // the whole head is one "user@host" word
    const auto host = who.substr(who.find('@') + 1);  // npos + 1: all of it
    if (!host.empty() && who.find_first_of(" \t") == std::string_view::npos) {
      return LauncherClaim{ClaimKind::unreachable, std::string(host), std::string(trim(line))};
    }
  }
  // MPICH Hydra: "=   PID 123 RUNNING AT nid001" then "=   EXIT CODE: 9".
  if (auto h = after("RUNNING AT "); h && trim(next).ends_with("EXIT CODE: 9")) {
    return LauncherClaim{ClaimKind::tasks_killed, *h, text + " / " + std::string(trim(next))};
  }
  return std::nullopt;
}

}  // namespace

std::vector<LauncherClaim> launcher_claims(std::string_view output) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < output.size();) {
    auto end = output.find('\n', pos);
    if (end == std::string_view::npos) {
      end = output.size();
    }
    auto line = output.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    lines.push_back(line);
    pos = end + 1;
  }
  std::vector<LauncherClaim> claims;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("ezpz: ")) {
      continue;  // ezpz's own words are not the launcher's
    }
    auto claim = claim_in(lines[i], i + 1 < lines.size() ? lines[i + 1] : std::string_view());
    if (claim && std::find(claims.begin(), claims.end(), *claim) == claims.end()) {
      claims.push_back(std::move(*claim));
    }
  }
  return claims;
}

std::optional<std::string> launcher_blocked(std::string_view launcher, const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    if (auto claim = claim_in(line, ""); claim && claim->kind == ClaimKind::unreachable) {
      return std::string(launcher) + " cannot reach " + claim->host + ": " + claim->line;
    }
  }
  return std::nullopt;
}

namespace {

/// The active host a launcher's name for it means (short names compared), "" when none.
std::string active_host(const HostList& active, const std::string& name) {
  for (const auto& h : active) {
    if (h == name || short_hostname(h) == short_hostname(name)) {
      return h;
    }
  }
  return "";
}

Suspect& suspect_of(std::vector<Suspect>& out, const std::string& host) {
  for (auto& s : out) {
    if (s.host == host) {
      return s;
    }
  }
  return out.emplace_back(Suspect{host, "", false});
}

void add_why(Suspect& s, const std::string& why) {
  s.why += (s.why.empty() ? "" : "; ") + why;
}

/// Hosts whose shims all went silent (core::silent_hosts): the node stopped, or its link went down.
void name_silent_hosts(const AttemptEvidence& evidence, const HostList& active, std::vector<Suspect>& out) {
  for (const auto& [name, why] : silent_hosts(evidence.ranks)) {
    if (const auto host = active_host(active, name); !host.empty()) {
      auto& s = suspect_of(out, host);
      s.named = true;
      add_why(s, why);
    }
  }
}

}  // namespace

std::vector<Suspect> find_suspects(const AttemptEvidence& evidence, const HostList& active) {
  std::vector<Suspect> out;
  // When the first rank reported a failure, or ezpz began to stop the job: ranks gone without a
  // word after that were stopped, by ezpz or by the launcher's cascade.
  double cutoff = evidence.stopped_at;
  for (const auto& r : evidence.ranks) {
    if (r.ended && r.exit_code > 0 && (cutoff == 0 || r.ended_at < cutoff)) {
      cutoff = r.ended_at;
    }
  }
  std::map<std::string, std::pair<int, int>> per_host;  // host -> {ranks, ranks gone without a word first}
  std::set<std::string> heard;
  for (const auto& r : evidence.ranks) {
    if (r.host.empty()) {
      continue;
    }
    const auto host = active_host(active, r.host);
    heard.insert(host);
    auto& [ranks, vanished] = per_host[host];
    ++ranks;
    if (r.ended && r.exit_code == -1 && (cutoff == 0 || r.ended_at < cutoff)) {
      ++vanished;
    }
  }
  std::set<std::string> killed_tasks;
  for (const auto& c : evidence.claims) {
    const auto host = active_host(active, c.host);
    if (host.empty()) {
      continue;
    }
    if (c.kind == ClaimKind::tasks_killed) {
      killed_tasks.insert(host);
      continue;
    }
    auto& s = suspect_of(out, host);
    s.named = true;
    add_why(s, "the launcher says: " + std::string(trim(c.line)));
  }
  for (const auto& [host, counts] : per_host) {
    if (host.empty() || counts.second == 0 || counts.second < counts.first) {
      continue;
    }
    auto& s = suspect_of(out, host);
    add_why(s, (counts.first == 1 ? std::string("its rank and its ezpz shim")
                                  : "its " + std::to_string(counts.first) + " ranks and their ezpz shims") +
                   " ended without a word, before any rank reported a failure");
    if (killed_tasks.count(host) > 0) {
      s.named = true;
      for (const auto& c : evidence.claims) {
        if (c.kind == ClaimKind::tasks_killed && active_host(active, c.host) == host) {
          add_why(s, "the launcher says: " + std::string(trim(c.line)));
        }
      }
    }
  }
  name_silent_hosts(evidence, active, out);
  if (!evidence.ranks.empty()) {
    for (const auto& host : active) {
      if (heard.count(host) == 0) {
        add_why(suspect_of(out, host), "none of its ranks ever reported");
      }
    }
  }
  return out;
}

Verdict decide(const AttemptEvidence& evidence, const std::vector<Suspect>& suspects,
               const std::vector<ProbeResult>& probes) {
  Verdict v;
  if (evidence.job_end && evidence.ended >= *evidence.job_end - 60) {
    v.kind = VerdictKind::walltime;
    return v;
  }
  auto probe_of = [&](const std::string& host) -> const ProbeResult* {
    for (const auto& p : probes) {
      if (p.host == host) {
        return &p;
      }
    }
    return nullptr;
  };
  const auto sign = evidence.sign.kind;
  for (const auto& s : suspects) {
    const auto* p = probe_of(s.host);
    const bool failed = p != nullptr && !p->ok;
    if (!(s.named && sign != FailureClass::systemic) && !failed) {
      continue;
    }
    Eviction e{s.host, failed ? "probe: " + p->why : s.why, {}};
    if (!s.why.empty()) {
      e.evidence.push_back(s.why);
    }
    if (p != nullptr) {
      e.evidence.push_back(p->ok ? "probe passed" : "probe failed: " + p->why);
    }
    v.evicted.push_back(std::move(e));
  }
  for (const auto& p : probes) {  // an active node probed for want of a suspect
    const bool listed =
        std::any_of(suspects.begin(), suspects.end(), [&](const Suspect& s) { return s.host == p.host; });
    if (!p.ok && !listed) {
      v.evicted.push_back({p.host, "probe: " + p.why, {"probe failed: " + p.why}});
    }
  }
  v.kind = !v.evicted.empty()               ? VerdictKind::bad_nodes
           : sign == FailureClass::storage  ? VerdictKind::storage
           : sign == FailureClass::systemic ? VerdictKind::systemic
                                            : VerdictKind::application;
  return v;
}

Goodput goodput(const std::vector<std::pair<double, double>>& attempts, bool succeeded) {
  Goodput g;
  if (attempts.empty()) {
    return g;
  }
  g.total_s = std::max(0.0, attempts.back().second - attempts.front().first);
  g.useful_s = succeeded ? std::max(0.0, attempts.back().second - attempts.back().first) : 0;
  g.lost_s = std::max(0.0, g.total_s - g.useful_s);
  g.share = g.total_s > 0 ? g.useful_s / g.total_s : (succeeded ? 1 : 0);
  return g;
}

std::string goodput_line(const Goodput& g) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "goodput: %.0f%% (%.1f s of %.1f s in the attempt that succeeded; %.1f s lost to failed attempts and "
                "restarts)",
                g.share * 100, g.useful_s, g.total_s, g.lost_s);
  return buf;
}

Expected<NodeSplit> swap_nodes(const NodeSplit& split, const std::vector<Eviction>& evicted) {
  if (evicted.size() > split.spare.size()) {
    std::string which;
    for (const auto& e : evicted) {
      which += (which.empty() ? "" : "; ") + e.host + " (" + e.why + ")";
    }
    return failure("no spare node left for " + count_of(evicted.size(), "failed node") + ": " + which + " (" +
                   count_of(split.spare.size(), "spare") +
                   " left): exclude them from the next job "
                   "(ezpz submit --exclude-from the record's bad-nodes file)");
  }
  NodeSplit out = split;
  for (const auto& e : evicted) {
    auto it = std::find(out.active.begin(), out.active.end(), e.host);
    if (it == out.active.end()) {
      continue;
    }
    *it = out.spare.front();
    out.spare.erase(out.spare.begin());
  }
  return out;
}

std::string swap_line(const Eviction& eviction, const std::string& replacement, std::size_t spares_left) {
  return "node " + eviction.host + " evicted: " + eviction.why + "; " + replacement + " takes its place (" +
         count_of(spares_left, "spare") + " left)";
}

Expected<std::string> exclusion_arg(bool slurm, std::string_view text, const std::string& path) {
  HostList hosts;
  for (std::size_t pos = 0; pos < text.size();) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    auto line = trim(text.substr(pos, end - pos).substr(0, text.substr(pos, end - pos).find('#')));
    pos = end + 1;
    if (line.empty()) {
      continue;
    }
    if (line.find_first_of(" \t,;'\"$`\\") != std::string_view::npos) {
      return usage_error("--exclude-from " + path + ": '" + std::string(line) +
                         "' is not a host name: one host a line, # for comments");
    }
    hosts.emplace_back(line);
  }
  if (hosts.empty()) {
    return usage_error("--exclude-from " + path + " names no host: one host a line (ezpz launch writes bad-nodes)");
  }
  if (!slurm) {
    return usage_error("--exclude-from: PBS's qsub cannot leave nodes out by name; ask the site to offline " +
                       join(hosts, ", ") + " (pbsnodes -o), or pick hosts with -l select=...:host=NAME");
  }
  return "--exclude=" + join(hosts, ",");
}

namespace {

/// "H:M:S" as PBS writes a walltime (hours may pass 24): the three numbers, all of the text.
std::optional<std::array<int, 3>> parse_hms(std::string_view v) {
  std::array<int, 3> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto colon = i + 1 < out.size() ? v.find(':') : v.size();
    if (colon == std::string_view::npos || colon == 0) {
      return std::nullopt;
    }
    const auto [end, ec] = std::from_chars(v.data(), v.data() + colon, out[i]);
    if (ec != std::errc() || end != v.data() + colon || out[i] < 0) {
      return std::nullopt;
    }
    v.remove_prefix(std::min(colon + 1, v.size()));
  }
  return out;
}

/// PBS's stime, in ctime's layout ("Fri Nov 27 18:00:00 2026"), as this node's local time.
std::optional<double> parse_ctime(std::string_view v) {
  std::vector<std::string_view> f;
  for (auto word : split(v, ' ')) {
    if (!word.empty()) {  // ctime pads a one-digit day with a second space
      f.push_back(word);
    }
  }
  if (f.size() != 5) {  // weekday, month, day, H:M:S, year
    return std::nullopt;
  }
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  const auto month = f[1].size() == 3 ? kMonths.find(f[1]) : std::string_view::npos;
  const auto hms = parse_hms(f[3]);
  const auto day = parse_positive_int(f[2]);
  const auto year = parse_positive_int(f[4]);
  if (month == std::string_view::npos || month % 3 != 0 || !hms || !day || !year || *day > 31 || (*hms)[0] > 23 ||
      (*hms)[1] > 59 || (*hms)[2] > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = static_cast<int>(month / 3);
  tm.tm_mday = *day;
  tm.tm_hour = (*hms)[0];
  tm.tm_min = (*hms)[1];
  tm.tm_sec = (*hms)[2];
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm));
}

}  // namespace

std::optional<double> pbs_end_time(std::string_view qstat_f) {
  std::optional<double> walltime;
  std::optional<double> start;
  for (std::size_t pos = 0; pos < qstat_f.size();) {
    auto end = qstat_f.find('\n', pos);
    if (end == std::string_view::npos) {
      end = qstat_f.size();
    }
    const auto line = trim(qstat_f.substr(pos, end - pos));
    pos = end + 1;
    const auto eq = line.find(" = ");
    if (eq == std::string_view::npos) {
      continue;
    }
    const auto key = line.substr(0, eq);
    const auto value = line.substr(eq + 3);
    if (key == "Resource_List.walltime") {
      if (const auto hms = parse_hms(value)) {
        walltime = (*hms)[0] * 3600.0 + (*hms)[1] * 60.0 + (*hms)[2];
      }
    } else if (key == "stime") {
      start = parse_ctime(value);
    }
  }
  if (!walltime || !start) {
    return std::nullopt;
  }
  return *start + *walltime;
}

std::optional<double> job_end_time(const std::optional<std::string>& slurm_end,
                                   const std::optional<std::string>& ezpz_end) {
  for (const auto& v : {ezpz_end, slurm_end}) {
    if (!v) {
      continue;
    }
    long long t = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), t);
    if (ec == std::errc() && end == v->data() + v->size() && t > 0) {
      return static_cast<double>(t);
    }
  }
  return std::nullopt;
}

}  // namespace ezpz::core
