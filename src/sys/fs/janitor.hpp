// A yeet's work directory (a relay's, or the head's) must not outlive its process, even one
// killed with SIGKILL (or by the OOM killer): node-local /tmp is often memory. A small watcher process removes it
// when the relay's end of a pipe closes, however the relay ended.
#pragma once

#include <string>
#include <string_view>

namespace ezpz::sys {

/// The hidden first argument that makes main() run janitor_main.
inline constexpr std::string_view kJanitor = "__yeet-janitor";

/// Start the watcher for `staging` (a work directory beside `destination`), a fresh image
/// of this binary in its own session that outlives this process by moments. False when it
/// could not be started (the next run still removes what is left: remove_stale_staging).
bool start_janitor(const std::string& destination, const std::string& staging);

/// `ezpz __yeet-janitor DST STAGING` (argv from DST on): wait for end of file on stdin, then
/// remove STAGING and every name made from it (STAGING.apply, .lift, .old, .delta, .pack...),
/// putting DST back from a .old when the relay died between moving it aside and moving the
/// new tree in.
int janitor_main(int argc, char** argv);

}  // namespace ezpz::sys
