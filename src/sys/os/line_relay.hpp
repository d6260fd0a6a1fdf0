// Output of a child passed on whole lines at a time, each with its label, in one write, so
// lines of several processes never interleave (the built-in launcher and the per-rank shim).
#pragma once

#include <string>

#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// One output stream of one process.
struct LineStream {
  OwnedFd fd;      ///< read end of the child's pipe (closed at its end)
  int out_fd = 1;  ///< where its lines go
  std::string label;
  std::string pending;  ///< bytes of an unfinished line
  bool whole = true;    ///< lines at a time (a line ends at \n or \r); false: bytes as they come
};

/// Pass on the complete lines of `s.pending`, each prefixed with its label and written with one
/// write; with `flush`, also what is left. An unfinished line over 1 MiB goes as it is. A line
/// ends at \n, \r\n or \r (a progress bar redrawn with \r shows as it is drawn).
void emit_lines(LineStream& s, bool flush);

enum class Pumped { data, nothing, ended };
/// Read what `s.fd` has (one read): data, nothing yet (EINTR, EAGAIN), or its end or an error
/// (the rest was flushed, the descriptor closed).
Pumped pump_lines(LineStream& s);

/// After the process ended: what is left in its pipe, without waiting for its own children
/// that may hold it open; everything flushed, the descriptor closed.
void drain_lines(LineStream& s);

}  // namespace ezpz::sys
