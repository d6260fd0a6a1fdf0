#include "core/doctor/python_answers.hpp"

#include <nlohmann/json.hpp>

#include "core/base/strings.hpp"

namespace ezpz::core {
namespace {

using nlohmann::json;

/// The line the probe prints first: its sys.path, whose directories' stamps keep the answer.
constexpr std::string_view kPathLine = "EZPZ-SYS-PATH ";
/// A python3 smaller than this is a wrapper script (pyenv's shim), whose choice may depend on
/// the directory it runs in.
constexpr unsigned long long kWrapperBytes = 64 * 1024;

json stamp_json(const std::optional<FileStamp>& s) {
  return s ? json::array({s->mtime_ns, s->size, s->inode}) : json(nullptr);
}

/// What the answer depends on besides sys.path: the python itself and the variables that choose it.
json key_of(const Env& env, const FileProbe& probe, const std::string& python) {
  const auto stamp = probe.file_stamp(python);
  json key = {{"python", python}, {"stamp", stamp_json(stamp)}};
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME", "PYENV_VERSION"}) {
    key[var] = env.get(var).value_or("");
  }
  if (!stamp || stamp->size < kWrapperBytes) {  // pyenv's shim: the directory's .python-version, its global one
    key["pwd"] = env.get("PWD").value_or("");
    const auto shims = python.substr(0, python.rfind('/'));
    key["global"] = stamp_json(probe.file_stamp(shims.substr(0, shims.rfind('/')) + "/version"));
  }
  return key;
}

/// The kept answer, when its key matches and every directory it lists is as it was.
std::optional<ProgramOutput> kept_answer(const FileProbe& probe, const std::string& file, const json& key) {
  auto text = probe.read_file(file);
  if (!text) {
    return std::nullopt;
  }
  const auto kept = json::parse(*text, nullptr, false);
  if (!kept.is_object() || kept.value("key", json()) != key || !kept.contains("dirs") || !kept["dirs"].is_array() ||
      !kept.contains("exit_code") || !kept["exit_code"].is_number_integer() || !kept.contains("output") ||
      !kept["output"].is_string()) {
    return std::nullopt;
  }
  for (const auto& d : kept["dirs"]) {
    if (!d.is_array() || d.size() != 2 || !d[0].is_string() ||
        stamp_json(probe.file_stamp(d[0].get<std::string>())) != d[1]) {
      return std::nullopt;
    }
  }
  return ProgramOutput{kept["exit_code"].get<int>(), kept["output"].get<std::string>(), false};
}

}  // namespace

std::optional<std::string> cache_dir(const Env& env) {
  if (auto h = env.get("EZPZ_HOME")) {
    return *h + "/cache";
  }
  if (auto x = env.get("XDG_CACHE_HOME")) {
    return *x + "/ezpz";
  }
  if (auto h = env.get("HOME")) {
    return *h + "/.cache/ezpz";
  }
  return std::nullopt;
}

Expected<PythonAnswer> ask_python(const Env& env, const SystemProbe& probe, const std::string& python,
                                  const std::string& question, const std::string& code, double timeout_s) {
  const auto dir = cache_dir(env);
  const auto file = dir ? *dir + "/python-" + question + ".json" : "";
  const auto key = key_of(env, probe, python);
  if (!file.empty()) {
    if (auto kept = kept_answer(probe, file, key)) {
      return PythonAnswer{*kept, true};
    }
  }
  EZPZ_TRY_ASSIGN(auto ran, probe.run_program({python, "-c", std::string(kSysPathProbe) + code}, {}, {}, timeout_s));
  // Its sys.path line out of what it said; each directory's stamp kept with the answer.
  json dirs = json::array();
  std::string said;
  for (auto line : split(ran.output, '\n')) {
    if (starts_with(line, kPathLine)) {
      const auto paths = json::parse(line.substr(kPathLine.size()), nullptr, false);
      for (const auto& p : paths.is_array() ? paths : json::array()) {
        if (p.is_string()) {
          dirs.push_back({p, stamp_json(probe.file_stamp(p.get<std::string>()))});
        }
      }
    } else {
      said += std::string(line) + "\n";
    }
  }
  ran.output = said.empty() ? said : said.substr(0, said.size() - 1);
  if (!file.empty() && !ran.timed_out && !dirs.empty()) {  // (a python that never ran our line: not kept)
    if (probe.make_dirs(*dir)) {
      const json kept = {{"key", key}, {"dirs", dirs}, {"exit_code", ran.exit_code}, {"output", ran.output}};
      (void)probe.write_file(file, kept.dump() + "\n");
    }
  }
  return PythonAnswer{ran, false};
}

}  // namespace ezpz::core
