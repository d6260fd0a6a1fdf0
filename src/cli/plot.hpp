// ezpz plot FILE.jsonl [--key loss]...: a metrics file (ezpz's History, C++ or Python, or any
// JSONL with numeric fields) as a plot in the terminal.
#pragma once

#include <string>
#include <vector>

#include "cli/command.hpp"

namespace ezpz::cli {

class PlotCommand final : public Command {
 public:
  void add_cli(CLI::App& app) override;
  int run(Context& ctx) override;

 private:
  std::vector<std::string> files_;
  std::vector<std::string> keys_;
  int width_ = 72;
  int height_ = 16;
  bool list_ = false;
};

}  // namespace ezpz::cli
