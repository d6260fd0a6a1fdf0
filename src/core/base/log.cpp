#include "core/base/log.hpp"

#include <cstdio>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "core/base/strings.hpp"

namespace ezpz::log {
namespace {

Level g_level = Level::warn;
std::string g_origin;

spdlog::logger& logger() {
  // Created on first use: runs that log nothing never build it.
  static auto instance = [] {
    auto l = std::make_shared<spdlog::logger>("ezpz", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("[%H:%M:%S.%f] [%^%l%$] " + (g_origin.empty() ? std::string() : g_origin + ": ") + "%v");
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

}  // namespace

Level level_from(int verbosity, const std::optional<std::string>& env_level) {
  Level from_flags = verbosity >= 3   ? Level::trace
                     : verbosity == 2 ? Level::debug
                     : verbosity == 1 ? Level::info
                                      : Level::warn;
  Level from_env = Level::warn;
  if (env_level) {
    auto v = core::to_lower(*env_level);
    if (v == "trace") {
      from_env = Level::trace;
    } else if (v == "debug") {
      from_env = Level::debug;
    } else if (v == "info") {
      from_env = Level::info;
    } else if (v == "off" || v == "error" || v == "critical") {
      from_env = Level::off;
    }
  }
  return std::min(from_flags, from_env);
}

void set_level(Level level) {
  g_level = level;
}
std::string level_name() {
  switch (g_level) {
    case Level::trace:
      return "trace";
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
    case Level::off:
      break;
  }
  return "";
}

void set_origin(std::string_view origin) {
  g_origin = std::string(origin);  // before the first line (the logger is built on first use)
}

bool enabled(Level level) {
  return level >= g_level && level != Level::off;
}

void debug(std::string_view message) {
  if (enabled(Level::debug)) {
    logger().debug("{}", message);
  }
}

void info(std::string_view message) {
  if (enabled(Level::info)) {
    logger().info("{}", message);
  }
}

void line(std::string_view text) {
  if (g_level == Level::off) {
    return;
  }
  std::string whole(text);
  whole += '\n';
  std::fwrite(whole.data(), 1, whole.size(), stderr);  // one write: lines of processes sharing stderr never mix
  std::fflush(stderr);
}

}  // namespace ezpz::log
