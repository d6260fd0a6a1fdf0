// Output of a child passed on whole lines at a time, each with its label, in one write, so
// lines of several processes never interleave (the built-in launcher, the per-rank shim and the
// rank hub); on the way, a copy in the rank's log file and its last lines.
#pragma once

#include <string>
#include <string_view>

#include "core/launch/rank_output.hpp"
#include "sys/os/fd_io.hpp"

namespace ezpz::sys {

/// One output stream of one process.
struct LineStream {
  OwnedFd fd;      ///< read end of the child's pipe (closed at its end); none for a stream fed by feed()
  int out_fd = 1;  ///< where its lines go; -1: not shown (the log file and the tail still get them)
  std::string label;
  std::string pending;   ///< bytes of an unfinished line
  bool whole = true;     ///< lines at a time (a line ends at \n or \r); false: bytes as they come
  std::string log_path;  ///< a file that gets every byte, made at the first ("": none)
  OwnedFd log;
  core::LineTail tail{};  ///< its last lines
  bool keep_tail = true;  ///< false: no tail kept (the shim's stdout: the hub keeps its last line)
  double last_time = 0;   ///< when its latest bytes came (seconds since the epoch; 0: none yet)
};

/// An unfinished line longer than this goes as it is (a line is never held without bound).
inline constexpr std::size_t kMaxHeldLine = 16U << 20;

/// Take `bytes` of the stream: into its log file and its tail, then its complete lines out.
void feed(LineStream& s, std::string_view bytes);

/// Pass on the complete lines of `s.pending`, each prefixed with its label and written with one
/// write; with `flush` (the stream ended), also what is left, ended with a newline so that the
/// next line is never glued to it. A line ends at \n, \r\n or \r (a progress bar redrawn with \r
/// shows as it is drawn).
/// Whether emit_lines writes only whole lines, or everything (the stream ended).
enum class LineEnd { whole_lines, flush };
void emit_lines(LineStream& s, LineEnd end);

enum class Pumped { data, nothing, ended };
/// Read what `s.fd` has (one read): data, nothing yet (EINTR, EAGAIN), or its end or an error
/// (the rest was flushed, the descriptor closed).
Pumped pump_lines(LineStream& s);

/// After the process ended: what is left in its pipe, without waiting for its own children
/// that may hold it open; everything flushed, the descriptor closed.
void drain_lines(LineStream& s);

}  // namespace ezpz::sys
