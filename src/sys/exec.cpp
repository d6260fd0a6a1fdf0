#include "sys/exec.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace ezpz::sys {

Error PosixProcessControl::exec_replace(const std::vector<std::string>& argv,
                                        const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) {
    return Error{ExitCode::internal, "exec_replace: empty argv"};
  }
  for (const auto& [name, value] : env) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execvp's signature
  }
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  if (err == ENOENT) {
    return Error{ExitCode::not_found, argv[0] + ": command not found: load the module that provides it or check PATH"};
  }
  return Error{ExitCode::cannot_execute, "cannot execute " + argv[0] + ": " + std::strerror(err)};
}

}  // namespace ezpz::sys
