// ezpz tar-env [ENV] [-o FILE] [--format zst|gz]: pack an env into <name>.tar.zst beside it.
#pragma once

#include <string>

#include "cli/command.hpp"
#include "core/base/expected.hpp"
#include "core/yeet/transfer.hpp"

namespace ezpz::cli {

/// What tar-env packs, where and how (its plan step).
struct TarEnvPlan {
  std::string env;   ///< the env directory, absolute
  std::string name;  ///< its name: the archive holds NAME/...
  std::string out;   ///< the archive, absolute
  core::ArchiveFormat format = core::ArchiveFormat::zst;
  std::vector<std::string> excludes;  ///< directory names left out (__pycache__)
  core::TreeStats stats;              ///< the env's size, less what is left out
};

class TarEnvCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  [[nodiscard]] Expected<TarEnvPlan> plan(Context& ctx) const;
  /// Pack into a private directory beside OUT and rename it into place: the archive's SHA-256.
  [[nodiscard]] Expected<std::string> pack(Context& ctx, const TarEnvPlan& p) const;

  std::string env_;
  std::string output_;
  std::string format_ = "zst";
  bool rebuild_ = false;
  bool include_pycache_ = false;
  bool json_ = false;
};

}  // namespace ezpz::cli
