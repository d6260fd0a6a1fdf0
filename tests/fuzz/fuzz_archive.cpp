// Archive entry validation. Even first byte: the rest is a stream extracted with
// extract_archive_from (tar, plain or zstd) into a fresh directory; afterwards nothing may exist
// beside it, and every relative symlink it holds must resolve inside it. Odd first byte: the rest
// is "ENTRY\0TARGET" for symlink_stays_inside, checked against a lexical model.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "fuzz_common.hpp"
#include "sys/fs/archive.hpp"

using namespace ezpz;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  for (auto& part : fuzz::split_all(path, '/')) {
    if (!part.empty() && part != ".") {
      out.push_back(std::move(part));
    }
  }
  return out;
}

/// Whether TARGET, read from the directory of ENTRY (relative, no ".."), stays inside the tree.
bool model_stays_inside(std::string_view entry, std::string_view target) {
  if (target.empty() || target.front() == '/') {
    return true;
  }
  // The link's directory: its components but the last ("." or "" alone name the top directory).
  auto dir = components(entry);
  long depth = std::max(static_cast<long>(dir.size()) - 1, 0L);
  for (const auto& part : components(target)) {
    depth += part == ".." ? -1 : 1;
    if (depth < 0) {
      return false;
    }
  }
  return true;
}

const fs::path& work_root() {
  static const fs::path root = [] {
    std::string tmpl = (fs::temp_directory_path() / "ezpz-fuzz-archive-XXXXXX").string();
    EZPZ_FUZZ_CHECK(::mkdtemp(tmpl.data()) != nullptr);
    return fs::path(tmpl);
  }();
  return root;
}

void check_links_inside(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_symlink(ec)) {
      continue;
    }
    auto target = fs::read_symlink(it->path(), ec).string();
    auto rel = fs::relative(it->path(), root, ec).string();
    EZPZ_FUZZ_CHECK(model_stays_inside(rel, target));
  }
}

/// chmod u+rwx every directory below `dir` before reading it, so remove_all can empty it.
void make_removable(const fs::path& dir) {
  std::error_code ec;
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add, ec);
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && !e.is_symlink(ec)) {
      make_removable(e.path());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const auto text = fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 1) {
    auto nul = text.find('\0');
    if (nul == std::string_view::npos) {
      return 0;
    }
    std::string entry(text.substr(0, nul));
    std::string target(text.substr(nul + 1));
    target = target.substr(0, target.find('\0'));  // a C string in an archive entry
    const auto parts = fuzz::split_all(entry, '/');
    const bool dotdot = std::find(parts.begin(), parts.end(), "..") != parts.end();
    if (!entry.empty() && entry.front() != '/' && !dotdot && sys::symlink_stays_inside(entry, target)) {
      EZPZ_FUZZ_CHECK(model_stays_inside(entry, target));
    }
    return 0;
  }
  const auto& root = work_root();
  const auto dst = root / "out";
  fs::create_directory(dst);
  bool served = false;
  sys::ArchiveSource source = [&]() -> std::optional<std::string_view> {
    if (served) {
      return std::string_view();
    }
    served = true;
    return text;
  };
  std::atomic<bool> stop{false};
  auto r = sys::extract_archive_from(source, "fuzz", dst.string(), stop);
  if (r) {
    check_links_inside(dst);
  } else {
    EZPZ_FUZZ_CHECK(!r.error().message.empty());
  }
  // Nothing was written beside the destination.
  std::size_t beside = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(root)) {
    ++beside;
  }
  EZPZ_FUZZ_CHECK(beside == 1);
  // Make everything removable (extracted modes may lack u+rwx), then remove it.
  make_removable(dst);
  std::error_code ec;
  fs::remove_all(dst, ec);
  EZPZ_FUZZ_CHECK(!fs::exists(dst));
  return 0;
}
