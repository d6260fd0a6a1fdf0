#include "core/job/job_record.hpp"

#include <algorithm>

#include "core/base/strings.hpp"

namespace ezpz::core {

std::string job_run_id(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  std::optional<std::string> job;
  if (scheduler == Scheduler::pbs) {
    job = pbs_job_id(env);
  } else if (scheduler == Scheduler::slurm) {
    job = slurm_job_id(env);
  }
  return job.value_or("local-" + std::string(timestamp));
}

std::optional<std::string> jobs_dir(const Env& env) {
  if (auto h = env.get("EZPZ_HOME")) {
    return *h + "/jobs";
  }
  if (auto user_home = env.get("HOME")) {
    return *user_home + "/.ezpz/jobs";
  }
  return std::nullopt;
}

std::optional<std::string> record_dir(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  const auto jobs = jobs_dir(env);
  if (!jobs) {
    return std::nullopt;
  }
  const std::string ts(timestamp);
  return *jobs + "/" + job_run_id(env, scheduler, ts) + "/launch-" + ts + "-" + std::to_string(env.pid);
}

bool records_wanted(const Env& env, bool no_record) {
  return !no_record && env.get("EZPZ_NO_RECORD").value_or("0") == "0";
}

std::size_t records_to_keep(const Env& env) {
  const auto text = env.get("EZPZ_KEEP_RECORDS");
  if (!text || text->size() > 9 || text->find_first_not_of("0123456789") != std::string::npos) {
    return kDefaultKeptRecords;
  }
  return static_cast<std::size_t>(std::stoul(*text));
}

std::vector<std::string> records_to_prune(const std::string& jobs,
                                          const std::map<std::string, std::vector<std::string>>& listing,
                                          std::size_t keep, std::size_t coming) {
  struct Record {
    std::string stamp;  ///< <timestamp>-<pid>: oldest sorts first
    std::string base;   ///< <jobs>/<job>/launch-<stamp>
  };
  std::vector<Record> records;
  for (const auto& [job, entries] : listing) {
    for (const auto& name : entries) {
      if (starts_with(name, "launch-") && name.size() > 12 && name.substr(name.size() - 5) == ".json") {
        const auto base = name.substr(0, name.size() - 5);
        records.push_back({base.substr(7), jobs + "/" + job + "/" + base});
      }
    }
  }
  std::vector<std::string> paths;
  const std::size_t kept = keep - std::min(keep, coming);  // of those written already
  if (keep == 0 || records.size() <= kept) {
    return paths;
  }
  std::sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.stamp < b.stamp; });
  for (std::size_t i = 0; i + kept < records.size(); ++i) {
    paths.push_back(records[i].base + ".json");
    paths.push_back(records[i].base);
  }
  return paths;
}

std::vector<std::string> emptied_job_folders(const std::string& jobs,
                                             const std::map<std::string, std::vector<std::string>>& listing,
                                             const std::vector<std::string>& pruned, const std::string& current) {
  std::vector<std::string> folders;
  for (const auto& [job, entries] : listing) {
    const auto dir = jobs + "/" + job;
    const auto gone = [&](const std::string& e) {
      return std::find(pruned.begin(), pruned.end(), dir + "/" + e) != pruned.end();  // a few a launch
    };
    if (dir != current && std::all_of(entries.begin(), entries.end(), gone)) {
      folders.push_back(dir);
    }
  }
  return folders;
}

std::optional<std::string> record_path(const Env& env, Scheduler scheduler, std::string_view timestamp) {
  auto dir = record_dir(env, scheduler, timestamp);
  return dir ? std::optional<std::string>(*dir + ".json") : std::nullopt;
}

}  // namespace ezpz::core
