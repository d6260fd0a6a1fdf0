#include "cli/hidden_modes.hpp"

#include <cstdio>

#include <CLI/App.hpp>

namespace ezpz::cli {

// Both take their argv as it is (run_raw); parsed, they only say what they are for.
void TransportChildCommand::add_cli(CLI::App& app) {
  app.allow_extras();
}
int TransportChildCommand::run(Context& ctx) {
  return run_raw(ctx, {}).value_or(2);
}
std::optional<int> TransportChildCommand::run_raw(Context& ctx, const std::vector<std::string>& args) {
  return half_ == TransportHalf::node ? ctx.transport().node_main(kind_, args)
                                      : ctx.transport().child_main(kind_, args);
}

void SelfDigestCommand::add_cli(CLI::App& app) {
  app.allow_extras();
}
int SelfDigestCommand::run(Context& ctx) {
  return run_raw(ctx, {}).value_or(2);
}
std::optional<int> SelfDigestCommand::run_raw(Context& ctx, const std::vector<std::string>& /*args*/) {
  const auto digest = ctx.probe().self_digest().first;
  if (digest.empty()) {
    return 1;
  }
  std::printf("%s\n", digest.c_str());
  return 0;
}

void WatcherCommand::add_cli(CLI::App& app) {
  app.allow_extras();
}
int WatcherCommand::run(Context& ctx) {
  return ctx.staging().watcher_main({});
}
std::optional<int> WatcherCommand::run_raw(Context& ctx, const std::vector<std::string>& args) {
  return ctx.staging().watcher_main(args);
}

}  // namespace ezpz::cli
