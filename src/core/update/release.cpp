#include "core/update/release.hpp"

#include <algorithm>
#include <cctype>

#include "core/base/strings.hpp"

namespace ezpz::core {

std::vector<ReleaseFile> parse_sha256sums(std::string_view text) {
  std::vector<ReleaseFile> files;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const auto line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.size() < 67 || line.substr(64, 2) != "  ") {
      continue;
    }
    const auto hex = line.substr(0, 64);
    if (!std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
      continue;
    }
    files.push_back({std::string(hex), std::string(line.substr(66))});
  }
  return files;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& v) {
    unsigned long n = 0;
    std::size_t i = 0;
    for (; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) != 0; ++i) {
      n = n * 10 + static_cast<unsigned long>(v[i] - '0');
    }
    v = i < v.size() ? v.substr(i + 1) : std::string_view();
    return n;
  };
  while (!a.empty() || !b.empty()) {
    const auto x = next(a);
    const auto y = next(b);
    if (x != y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

Expected<ReleaseChoice> choose_release(const std::vector<ReleaseFile>& files, const std::string& arch,
                                       const std::optional<std::string>& want, const std::string& where) {
  const std::string prefix = "ezpz-";
  const std::string suffix = "-linux-" + arch + ".tar.gz";
  std::optional<ReleaseChoice> best;
  for (const auto& f : files) {
    if (f.name.size() <= prefix.size() + suffix.size() || f.name.rfind(prefix, 0) != 0 ||
        f.name.compare(f.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const auto version = f.name.substr(prefix.size(), f.name.size() - prefix.size() - suffix.size());
    if (want ? version == *want : (!best || compare_versions(version, best->version) > 0)) {
      best = ReleaseChoice{version, f.name, f.sha256};
    }
  }
  if (best) {
    return *best;
  }
  if (want) {
    return failure(where + " does not list " + prefix + *want + suffix + ": no such version for linux-" + arch);
  }
  return failure(where + " lists no build for linux-" + arch);
}

Expected<void> check_release_url(std::string_view url) {
  if (url.rfind("https://", 0) == 0) {
    return {};
  }
  if (url.rfind("http://", 0) == 0) {
    auto host = url.substr(7);
    host = host.substr(0, host.find('/'));
    const bool bracketed = host.rfind("[::1]", 0) == 0;
    host = bracketed ? "[::1]" : host.substr(0, host.find(':'));
    const bool loopback_v4 =
        host.rfind("127.", 0) == 0 && std::count(host.begin(), host.end(), '.') == 3 &&
        std::all_of(host.begin(), host.end(), [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
    if (bracketed || host == "localhost" || loopback_v4) {  // not 127.0.0.1.example.com
      return {};
    }
  }
  return usage_error(std::string(url) +
                     ": not HTTPS (plain HTTP is accepted from this machine only): pass an https:// --base-url");
}

std::string batch_job_variable(const Env& env) {
  const auto set = env.first_of({"SLURM_JOB_ID", "PBS_JOBID"});
  return set ? set->first + "=" + set->second : "";
}

std::vector<std::string> fetch_argv(const std::string& tool, const std::string& url, const std::string& file) {
  if (tool.size() >= 4 && tool.compare(tool.size() - 4, 4, "wget") == 0) {
    return {tool, "-q", "-T", "20", "-O", file, url};
  }
  return {tool, "-fsSL", "--retry", "2", "--connect-timeout", "20", "-o", file, url};
}

namespace {

/// `text` as 64 lowercase hex digits, nullopt when it is not that (spaces around it ignored).
std::optional<std::string> key_hex(std::string_view text) {
  text = trim(text);
  if (text.size() != 64 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
    return std::nullopt;
  }
  std::string hex(text);
  std::transform(hex.begin(), hex.end(), hex.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  return hex;
}

}  // namespace

Expected<std::optional<std::string>> release_key(std::string_view embedded,
                                                 const std::optional<std::string>& variable) {
  if (variable && !trim(*variable).empty()) {
    if (auto hex = key_hex(*variable)) {
      return std::optional<std::string>(*hex);
    }
    return failure(
        "EZPZ_RELEASE_PUBLIC_KEY is not an Ed25519 public key as 64 hex digits: "
        "print one with `openssl pkey -pubin -in KEY.pub -outform DER | tail -c 32 | od -An -tx1 | tr -d ' \\n'`");
  }
  return key_hex(embedded);
}

}  // namespace ezpz::core
