#include "core/reach/spec.hpp"

#include "core/base/shell.hpp"

namespace ezpz::core {

std::string_view to_string(TransportKind kind) {
  return kind == TransportKind::launcher ? "launcher" : "ssh";
}

namespace {
/// Runs as `sh -c SCRIPT ezpz EXE DIGEST SIZE SHIP ARGS...`: nothing from the caller is pasted
/// into the script, so names with spaces, quotes or `$` stay data.
/// Nothing is run before it is known to be this user's own (docs/security.md): `safe P` holds when
/// P and every directory above it are no symlink, belong to this user or root, and no one else can
/// write them (a directory others can write must be sticky: there they cannot move what is ours).
/// Only then is a candidate asked for its digest (`ezpz __self-digest`: SHA-256 with the CPU's SHA
/// instructions, ~10 ms for 10 MB, where `sha256sum` takes ~100 ms, a tenth of a relay's CPU); an
/// older ezpz answers something else and is not run. `stat -c '%u %f'` gives each path's owner
/// and mode (hex: S_IFLNK 40960, S_IFDIR 16384, S_ISVTX 512, group/other write 18) in one call.
/// A head path with a symlink in it is taken as it resolves (`readlink -f`), so a link another
/// user could swap is never followed at exec. The cache $TMPDIR/.ezpz-<uid>-<digest16> (or
/// /tmp's) is used only when safe; when another user holds its name, a fresh `mktemp -d`
/// directory serves this run and is removed after it. A shipped copy is checked with `sha256sum`
/// before it is ever run.
constexpr std::string_view kStartScript =
    "e=$1; d=$2; n=$3; s=$4; shift 4; u=$(id -u); "
    "safe() { p=$1; set --; while :; do set -- \"$@\" \"$p\"; [ \"$p\" = / ] && break; p=${p%/*}; p=${p:-/}; done; "
    "m=$(stat -c '%u %f' -- \"$@\" 2>/dev/null) || return 1; set -- $m; while [ $# -ge 2 ]; do "
    "{ [ \"$1\" = \"$u\" ] || [ \"$1\" = 0 ]; } && [ $((0x$2 & 0170000)) != 40960 ] && "
    "{ [ $((0x$2 & 18)) = 0 ] || { [ $((0x$2 & 0170000)) = 16384 ] && [ $((0x$2 & 512)) != 0 ]; }; } || return 1; "
    "shift 2; done; }; "
    "ok() { [ -f \"$1\" ] && [ -x \"$1\" ] && safe \"$1\" && "
    "{ [ -z \"$d\" ] || [ \"$(\"$1\" __self-digest 2>/dev/null)\" = \"$d\" ]; }; }; "
    "case $e in /*) if ok \"$e\"; then exec \"$e\" \"$@\"; fi; "
    "r=$(readlink -f -- \"$e\" 2>/dev/null) && [ \"$r\" != \"$e\" ] && ok \"$r\" && exec \"$r\" \"$@\";; esac; "
    "[ -n \"$d\" ] || { echo \"ezpz: $e is missing on $(hostname), or another user could have written it\" >&2; exit "
    "127; }; "
    "t=${TMPDIR:-/tmp}; c=$t/.ezpz-$u-$(printf %.16s \"$d\"); b=$c/ezpz; x=; "
    "if ok \"$b\"; then exec \"$b\" \"$@\"; fi; "
    "[ \"$s\" = 1 ] || { echo \"ezpz: $e is missing on $(hostname) and no copy was shipped there\" >&2; exit 127; }; "
    "t=$(readlink -f -- \"$t\" 2>/dev/null) && safe \"$t\" || t=/tmp; c=$t/${c##*/}; b=$c/ezpz; "
    "mkdir -m 700 \"$c\" 2>/dev/null; "
    "if ! { [ -d \"$c\" ] && safe \"$c\"; }; then x=$c; c=$(mktemp -d \"$t/.ezpz-$u-XXXXXXXXXX\") && safe \"$c\" || "
    "{ echo \"ezpz: cannot make a private directory in $t on $(hostname)\" >&2; exit 126; }; b=$c/ezpz; "
    "echo \"ezpz: $x on $(hostname) is not this user's own: shipping to $c for this run\" >&2; fi; "
    "echo \"EZPZ-SHIP $n\"; w=$b.$$; "
    "if head -c \"$n\" > \"$w\" && chmod 700 \"$w\" && [ \"$(sha256sum < \"$w\" 2>/dev/null)\" = \"$d  -\" ] && "
    "mv -f \"$w\" \"$b\"; then [ -n \"$x\" ] || exec \"$b\" \"$@\"; \"$b\" \"$@\"; r=$?; rm -rf \"$c\"; exit $r; fi; "
    "rm -f \"$w\"; [ -z \"$x\" ] || rm -rf \"$c\"; "
    "echo \"ezpz: the shipped binary did not arrive intact on $(hostname)\" >&2; exit 126";
}  // namespace

std::string remote_command(const ReachSpec& spec, const std::vector<std::string>& args, Ship ship) {
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   std::string(kStartScript),
                                   "ezpz",
                                   spec.self_exe,
                                   spec.exe_digest,
                                   std::to_string(spec.exe_size),
                                   ship == Ship::when_missing ? "1" : "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  return shell_join(argv);
}

}  // namespace ezpz::core
