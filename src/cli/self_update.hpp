// ezpz self-update [--check] [--version V] [--base-url URL] [--rollback] [--force] [--json]: the
// installer's rules (install.sh) from inside the binary: the release's SHA256SUMS and tarball
// fetched with curl or wget, checked, and the running binary replaced atomically, the previous
// one kept as ezpz.old for one --rollback. Refused inside a job, and where the binary is not the
// user's own (a site install).
#pragma once

#include <optional>
#include <string>

#include "cli/command.hpp"

namespace ezpz::cli {

class SelfUpdateCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::optional<std::string> version_;
  std::optional<std::string> base_url_;
  bool check_ = false;
  bool rollback_ = false;
  bool force_ = false;
  bool json_ = false;
};

}  // namespace ezpz::cli
