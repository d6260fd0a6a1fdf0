// The ports through which yeet and tar-env move trees and archives, here and to other nodes.
// sys/ implements it (libarchive, zstd, openat/copy_file_range); cli/ drives it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/expected.hpp"
#include "core/yeet/broadcast_spec.hpp"
#include "core/yeet/manifest.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/plan.hpp"
#include "core/yeet/relay_tree.hpp"
#include "core/yeet/spare.hpp"
#include "core/yeet/stream_wire.hpp"
#include "core/yeet/venv_patch.hpp"

namespace ezpz::core {

class NodeInstall;  // core/yeet/install.hpp

/// What sits between a destination and a process id in the name of that process's work
/// beside it: <dst>.ezpz-tmp-<pid>, and names made from it (.apply, .delta, .pack.tar.zst...).
/// A run that is gone is recognised by it (the next run's sweep, a relay's watcher).
inline constexpr std::string_view kWorkInfix = ".ezpz-tmp-";

/// <destination>.ezpz-tmp-<pid>.
inline std::string work_path(const std::string& destination, long pid) {
  return destination + std::string(kWorkInfix) + std::to_string(pid);
}

/// Called with the bytes done so far (of the total the caller measured).
using ProgressFn = std::function<void(unsigned long long)>;
/// Called as each node's result arrives.
using ResultFn = std::function<void(const NodeResult&)>;

/// What protected an archive's bytes as they were extracted.
struct ArchiveChecks {
  std::string compression = "none";  ///< gzip, zstd, xz or none
  bool layer_checked = false;        ///< the compression layer carries a check (CRC-32, frame checksum, xz check)
  bool sha256 = false;               ///< ARCHIVE.sha256 was found and verified
  /// Neither: damage to the archive cannot be detected.
  [[nodiscard]] bool unchecked() const { return !layer_checked && !sha256; }
};

struct TreeStats {
  unsigned long long files = 0;
  unsigned long long dirs = 0;
  unsigned long long links = 0;
  unsigned long long bytes = 0;           ///< regular-file bytes
  unsigned long long copied_files = 0;    ///< files actually written (sync skips unchanged ones)
  unsigned long long deleted = 0;         ///< entries removed because the source lost them (sync)
  unsigned long long skipped = 0;         ///< FIFOs, sockets and devices in the source: not copied
  std::string first_skipped;              ///< the first of them, relative to the source
  long long newest_mtime = 0;             ///< newest modification time seen, in seconds
  unsigned long long excluded_dirs = 0;   ///< measure: directories left out by name (__pycache__)
  unsigned long long excluded_files = 0;  ///< ...and the files and bytes under them
  unsigned long long excluded_bytes = 0;
  std::optional<ArchiveChecks> checks;  ///< extract: what verified the archive
  std::string sha256;                   ///< pack with a digest: the archive file's SHA-256 (hex)
};

enum class ArchiveFormat { zst, gz, tar };  /// tar: uncompressed (the caller compresses)

/// Trees on this node: look at a source, measure it, copy or sync it, patch a moved env.
/// Port (sys/fs/local_transfer).
class Trees {
 public:
  virtual ~Trees() = default;

  /// Whether `path` exists, is a directory, looks like a venv or conda env; its real path.
  [[nodiscard]] virtual SourceFacts inspect(const std::string& path) = 0;
  /// What is at a destination now (core::check_replaceable decides whether yeet may replace it).
  [[nodiscard]] virtual DestinationFacts inspect_destination(const std::string& path) = 0;
  /// Size and newest mtime of a tree (or of one file), skipping `excludes` directory names.
  [[nodiscard]] virtual Expected<TreeStats> measure(const std::string& path,
                                                    const std::vector<std::string>& excludes) = 0;
  /// A full copy of `src` into `staging` (symlinks, modes, mtimes and hard links kept).
  [[nodiscard]] virtual Expected<TreeStats> copy_tree(const std::string& src, const std::string& staging,
                                                      const std::vector<std::string>& excludes,
                                                      const ProgressFn& progress) = 0;
  /// `staging` = `previous` (hard-linked, untouched) updated to match `src`: files whose size,
  /// mtime or mode differ are written anew, entries gone from `src` removed.
  [[nodiscard]] virtual Expected<TreeStats> sync_tree(const std::string& src, const std::string& previous,
                                                      const std::string& staging,
                                                      const std::vector<std::string>& excludes,
                                                      const ProgressFn& progress) = 0;
  /// What sync_tree would do to `dst` to make it `src`: files to write (new, or size, mtime or
  /// mode differ) and entries to remove. For --dry-run.
  [[nodiscard]] virtual Expected<ChangeEstimate> estimate_sync(const std::string& /*src*/, const std::string& /*dst*/,
                                                               const std::vector<std::string>& /*excludes*/) {
    return failure("no estimate here");
  }
  /// Rewrite the old prefixes in a moved env rooted at `root`, now to live at `new_prefix`.
  [[nodiscard]] virtual Expected<PatchReport> patch_env(const std::string& root, EnvKind kind,
                                                        const std::vector<std::string>& old_prefixes,
                                                        const std::string& new_prefix) = 0;
  /// The prefix a venv at `root` records in bin/activate, if any.
  [[nodiscard]] virtual std::optional<std::string> recorded_prefix(const std::string& root) = 0;
};

/// Whether make_staging takes the destination's lock (<dst>.ezpz-lock), waiting while another
/// yeet holds it: the head does, so two jobs never both report success with one tree; a relay
/// does not (a repair's relay must not wait on a first one the head already gave up on).
enum class WorkLock { wait, none };

/// Work beside a destination, put in place atomically, or removed however the run ends.
/// Port (sys/fs/local_transfer).
class Staging {
 public:
  virtual ~Staging() = default;
  /// A new empty directory beside `destination` for the work (<dst>.ezpz-tmp-<pid>, 0700), its
  /// parents made (private, below /tmp), earlier runs' work swept, and watched (watch).
  [[nodiscard]] virtual Expected<std::string> make_staging(const std::string& destination, WorkLock lock) = 0;
  /// Put `staging` in place of `destination` (atomically swapping an existing one); the old
  /// tree becomes the destination's spare (`previous` keep_as_spare) or is removed, the spare
  /// then a twin of the new tree when it holds a manifest (core/yeet/spare.hpp). One that cannot
  /// be removed is a warning (take_warnings).
  [[nodiscard]] virtual Expected<void> commit(const std::string& staging, const std::string& destination,
                                              Previous previous) = 0;
  /// From now on, commit removes the previous tree in the background, when a CPU is idle: the
  /// head's yeet, whose old copy goes while the other nodes get theirs. take_warnings waits for
  /// that removal. Here: nothing (commit removes it at once).
  virtual void remove_old_trees_later() {}
  /// Remove a tree or file this run created (never follows symlinks). What could not be
  /// removed is a warning (take_warnings).
  virtual void discard(const std::string& path) = 0;
  /// The warnings the calls so far left, each once: removals that failed (make_staging's sweep
  /// of earlier runs' work, commit's previous tree, discard), each naming what is left to be
  /// removed by hand.
  [[nodiscard]] virtual std::vector<std::string> take_warnings() { return {}; }
  /// `work` (a work path beside `destination`, <dst>.ezpz-tmp-<pid>) and the names made from it
  /// are removed once this process has ended, however it ended (SIGKILL included).
  virtual void watch(const std::string& destination, const std::string& work) = 0;
  /// Be the watcher `watch` starts (`ezpz __yeet-janitor ARGS`); returns its exit status.
  virtual int watcher_main(const std::vector<std::string>& args) = 0;
  /// A new directory named `prefix` + ".XXXXXX" (mkdtemp: a name no one could have made in
  /// advance, mode 0700), for files no other user may replace or read while ezpz works on them.
  [[nodiscard]] virtual Expected<std::string> make_private_dir(const std::string& prefix) = 0;
  /// Rename a finished file into place, with the mode a new file of the user's has (umask).
  [[nodiscard]] virtual Expected<void> rename_file(const std::string& from, const std::string& to) = 0;
  /// The signal (SIGINT, SIGTERM, SIGHUP) that arrived since the transfer started, 0 when none:
  /// work stops at once, and the command ends with 128 + it.
  [[nodiscard]] virtual int interrupted() const = 0;
};

/// Whether pack also takes the archive file's SHA-256 (TreeStats::sha256): tar-env writes it beside.
enum class PackDigest { none, sha256 };
/// Whose archive extract reads: anyone's (modes tightened, symlinks resolved through the tree),
/// or one yeet made of a tree on this node (--compress: modes kept, symlinks judged by their text).
enum class ArchiveOrigin { foreign, own };

/// Tarballs: pack a tree, write its checksum, extract one safely. Port (sys/fs/local_transfer).
class Archives {
 public:
  virtual ~Archives() = default;
  /// Pack `src` as `top_name/...` into the archive file `out` (written via a temporary file);
  /// zstd frames carry their checksum; `digest` sha256: TreeStats::sha256 is the file's SHA-256.
  [[nodiscard]] virtual Expected<TreeStats> pack(const std::string& src, const std::string& top_name,
                                                 const std::string& out, ArchiveFormat format,
                                                 const std::vector<std::string>& excludes, PackDigest digest,
                                                 const ProgressFn& progress) = 0;
  /// Write ARCHIVE.sha256 (sha256sum's format, naming the archive) atomically.
  [[nodiscard]] virtual Expected<void> write_checksum(const std::string& archive, const std::string& sha256) = 0;
  /// Extract a tar, tar.gz, tar.zst or tar.xz into `staging`, refusing absolute paths, "..",
  /// writes through symlinks, relative symlinks that leave the tree, FIFOs, sockets and
  /// devices, names past a depth or length, and more than the free space or `max_bytes` (> 0);
  /// modes lose setuid/setgid and group/other write. The archive is verified to its end
  /// (compression layer, ARCHIVE.sha256) before this returns; a single top-level directory
  /// is stripped. Progress counts archive (compressed) bytes. `origin` own: an archive yeet made
  /// of a tree on this node (--compress): modes kept as they are, symlinks judged by their text.
  [[nodiscard]] virtual Expected<TreeStats> extract(const std::string& archive, const std::string& staging,
                                                    unsigned long long max_bytes, ArchiveOrigin origin,
                                                    const ProgressFn& progress) = 0;
};

/// What applying a delta bundle did: its steps' times, and whether this node's copy already was
/// the new one (nothing changed: nothing to put in place).
struct BundleApplied {
  StepTimes steps;
  bool unchanged = false;
  Previous previous = Previous::replace;  ///< what the commit does with the copy it replaces
};

/// Incremental yeet: what a copy holds, and the delta from one copy to the next. Port (sys/fs).
class Manifests {
 public:
  virtual ~Manifests() = default;
  /// Incremental yeet: the manifest `root` holds when the tree still matches it (else why not).
  [[nodiscard]] virtual Expected<HeldManifest> held_manifest(const std::string& root) = 0;
  /// Write the manifest of `root` there (digests reused from `reuse` for unchanged files;
  /// `source_root` records each file's source size and mtime; `ignore`d names are not part of it).
  [[nodiscard]] virtual Expected<HeldManifest> write_manifest(const std::string& root, const Manifest* reuse,
                                                              const std::string& source_root,
                                                              const std::vector<std::string>& ignore) = 0;
  /// yeet's marker (kYeetMarkerName, holding `text`) at the top of the tree `root`.
  [[nodiscard]] virtual Expected<void> write_marker(const std::string& root, const std::string& text) = 0;
  /// The delta bundle (a new directory `bundle`) that turns `old_root` into `new_root`.
  [[nodiscard]] virtual Expected<BundleStats> make_bundle(const std::string& old_root, const HeldManifest& old,
                                                          const std::string& new_root, const HeldManifest& now,
                                                          const std::string& bundle) = 0;
  /// Whether the directory `dir` holds a delta bundle (what a relay received instead of a tree).
  [[nodiscard]] virtual bool is_bundle(const std::string& dir) = 0;
  /// In the background, from now: `out` = the copy at `dst` as hard links, when `dst` holds the
  /// manifest whose SHA-256 is `base_digest` (the head announced a delta from it), for the
  /// apply_bundle into `out` to start from. Here: nothing (apply_bundle does it all).
  virtual void prepare_apply(const std::string& /*dst*/, const std::string& /*out*/,
                             const std::string& /*base_digest*/) {}
  /// `out` (a new directory) = the copy at `dst` with the bundle in `bundle_dir` applied; an
  /// error of kind needs_full_copy when `dst` is not the copy the bundle was made against.
  /// Returns how long its steps took (check_s, clone_s, apply_s, verify_s), and `unchanged`
  /// when the bundle changes nothing: `dst` was checked and is the new copy (`out` is left empty).
  [[nodiscard]] virtual Expected<BundleApplied> apply_bundle(const std::string& bundle_dir, const std::string& dst,
                                                             const std::string& out) = 0;
  /// The head's new tree when the source changed since `dst`'s copy (which `base` describes, as
  /// held_manifest checked): `out` (an empty directory) = that copy as hard links (dst's spare
  /// brought up to it, when it has one) with `changes` (estimate_changes against `base`) brought
  /// over from `source`; the new tree's totals.
  [[nodiscard]] virtual Expected<TreeStats> sync_changes(const std::string& source, const std::string& dst,
                                                         const HeldManifest& base, const ChangeEstimate& changes,
                                                         const std::string& out, const ProgressFn& progress) = 0;
  /// The manifest of `root` written there, when `root` is the copy `base` describes but for the
  /// `touched` paths (as they are now; files hashed, their source's size and mtime from
  /// `source_root`) and the `gone` ones: what write_manifest would write, without its walk.
  [[nodiscard]] virtual Expected<HeldManifest> update_manifest(const std::string& root, const HeldManifest& base,
                                                               const std::string& source_root,
                                                               const std::vector<std::string>& touched,
                                                               const std::vector<std::string>& gone) = 0;
  /// How the source differs from what the manifest recorded of it (--dry-run's estimate; nothing:
  /// the copy the manifest describes is the source's as it is now).
  [[nodiscard]] virtual Expected<ChangeEstimate> estimate_changes(const std::string& source,
                                                                  const std::vector<std::string>& excludes,
                                                                  const Manifest& m) = 0;
};

/// Other nodes: stream a tree through relays started over a transport, repair from a peer, and
/// be a relay. Port (sys/broadcast).
class Broadcaster {
 public:
  virtual ~Broadcaster() = default;
  /// Make `hosts` reachable over spec's transport for this run (the launcher transport starts its
  /// agents); the hosts that cannot be, with why. close_nodes ends the run's reach.
  [[nodiscard]] virtual std::map<std::string, std::string> open_nodes(const HostList& hosts,
                                                                      const BroadcastSpec& spec) = 0;
  virtual void close_nodes() = 0;
  /// Open `hosts` (open_nodes) and start the relays of `tree` (none: an empty tree) now, in the
  /// background, for the next broadcast() of that tree: the agents' launcher step and the
  /// relays' start (connect, log in, ship ezpz, ready) overlap what this node does first. The
  /// relays wait for the stream, kept alive meanwhile. Here: the hosts opened in the foreground,
  /// no relay started.
  virtual void start_nodes(const HostList& hosts, const std::vector<RelayNode>& /*tree*/, const BroadcastSpec& spec) {
    opened_ = open_nodes(hosts, spec);
  }
  /// What start_nodes' open_nodes said (the hosts that cannot be reached, with why), once it is done.
  [[nodiscard]] virtual std::map<std::string, std::string> nodes_opened() { return std::exchange(opened_, {}); }
  /// How long start_nodes took to reach the nodes and have the first level's relays ready
  /// (reach_s, open_s: the relays' part), in yeet's steps; none here.
  [[nodiscard]] virtual StepTimes start_steps() { return {}; }
  /// Tell the relays start_nodes started (now, or once they are) that the stream will be a delta
  /// bundle starting from the manifest whose SHA-256 is `base_digest` (hex): each whose copy
  /// holds it starts its clone while this node builds the bundle. Here: nothing.
  virtual void announce_delta(const std::string& /*base_digest*/) {}
  /// Stop what start_nodes started that no broadcast() took (this node's copy failed): the
  /// opening gives up, the relays end before their stream began and leave nothing on their nodes.
  virtual void abandon_relays() {}
  /// Stream the tree at `root` (as `name/...`) through the relays of `tree`; one result per host.
  [[nodiscard]] virtual std::vector<NodeResult> broadcast(const std::string& root, const std::string& name,
                                                          const std::vector<RelayNode>& tree, const BroadcastSpec& spec,
                                                          const ProgressFn& progress, const ResultFn& on_result = {},
                                                          StreamStats* stats = nullptr) = 0;
  /// Repair from a peer: `peer` (which has the copy) streams it to the relays of `tree`.
  [[nodiscard]] virtual std::vector<NodeResult> send_from_peer(const std::string& peer,
                                                               const std::vector<RelayNode>& tree,
                                                               const BroadcastSpec& spec,
                                                               const ResultFn& on_result = {}) = 0;
  /// ezpz's store-and-forward algorithm (--strategy greedy), for comparison.
  [[nodiscard]] virtual std::vector<NodeResult> greedy_broadcast(const HostList& targets, const BroadcastSpec& spec,
                                                                 int per_source) = 0;
  /// Be a relay: the stream on stdin, into the work `install` opens and then placed by it
  /// (core/yeet/install.hpp); results on `out`; 0 when this node succeeded.
  virtual int relay(const std::string& this_host, const std::vector<RelayNode>& children, const BroadcastSpec& spec,
                    NodeInstall& install, std::ostream& out) = 0;
  /// Be a peer's sender (`ezpz __yeet-send`): stream this node's copy at `root` to `tree`,
  /// results on `out` as they arrive; 0 when every host succeeded.
  virtual int serve_copy(const std::string& root, const std::vector<RelayNode>& tree, const BroadcastSpec& spec,
                         std::ostream& out) = 0;

 protected:
  std::map<std::string, std::string> opened_;  ///< start_nodes' answer, until nodes_opened takes it
};

}  // namespace ezpz::core
