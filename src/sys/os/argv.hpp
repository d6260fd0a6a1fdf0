// Calling a C-style main (argc, argv) with a vector of words: the hidden modes' entry points.
#pragma once

#include <string>
#include <vector>

namespace ezpz::sys {

template <typename Main>
int call_main(const std::vector<std::string>& args, Main main) {
  std::vector<std::string> words(args);
  std::vector<char*> argv;
  for (auto& w : words) {
    argv.push_back(w.data());
  }
  argv.push_back(nullptr);
  return main(static_cast<int>(words.size()), argv.data());
}

}  // namespace ezpz::sys
