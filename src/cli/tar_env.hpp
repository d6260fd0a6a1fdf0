// ezpz tar-env [ENV] [-o FILE] [--format zst|gz]: pack an env into <name>.tar.zst beside it.
#pragma once

#include <string>

#include "cli/command.hpp"

namespace ezpz::cli {

class TarEnvCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string env_;
  std::string output_;
  std::string format_ = "zst";
  bool rebuild_ = false;
  bool include_pycache_ = false;
  bool json_ = false;
};

}  // namespace ezpz::cli
