// ezpz help [COMMAND]
#pragma once

#include <string>

#include "cli/command.hpp"

namespace ezpz::cli {

class HelpCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::string topic_;
};

}  // namespace ezpz::cli
