// The relay's wire protocol: the --children tree, result lines, frame headers, manifests and
// delta headers a node receives from its peers. The first byte picks the decoder.
// Properties: no crash or exception; what decodes re-encodes to something that decodes the same.
#include <algorithm>

#include "core/yeet/manifest.hpp"
#include "core/yeet/outcome.hpp"
#include "core/yeet/relay_tree.hpp"
#include "core/yeet/stream_wire.hpp"
#include "fuzz_common.hpp"

using namespace ezpz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const auto text = fuzz::as_text(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto tree = core::decode_tree(text);
      if (tree) {
        auto again = core::decode_tree(core::encode_tree(*tree));
        EZPZ_FUZZ_CHECK(again && *again == *tree);
        for (const auto& node : *tree) {
          EZPZ_FUZZ_CHECK(!core::subtree_hosts(node).empty());
        }
      }
      break;
    }
    case 1: {
      if (auto r = core::decode_result(text)) {
        auto again = core::decode_result(core::encode_result(*r));
        EZPZ_FUZZ_CHECK(again.has_value());
        EZPZ_FUZZ_CHECK(again->host == r->host && again->outcome == r->outcome && again->bytes == r->bytes &&
                        again->error == r->error && again->digest_ok == r->digest_ok);
      }
      break;
    }
    case 2: {
      if (text.size() >= 4) {
        const auto* h = reinterpret_cast<const unsigned char*>(text.data());
        const auto length = core::frame_length(h);
        const auto header = core::frame_header(length);
        EZPZ_FUZZ_CHECK(std::equal(header.begin(), header.end(), h));
      }
      break;
    }
    case 3: {
      if (auto m = core::decode_manifest(text)) {
        for (const auto& [path, entry] : m->entries) {
          EZPZ_FUZZ_CHECK(path == entry.path);
          EZPZ_FUZZ_CHECK(core::safe_relative_path(path));
        }
        auto again = core::decode_manifest(core::encode_manifest(*m));
        EZPZ_FUZZ_CHECK(again.has_value());
        EZPZ_FUZZ_CHECK(again->entries.size() == m->entries.size());
        (void)core::diff_manifests(*m, *again);
      }
      break;
    }
    default: {
      if (auto h = core::decode_delta_header(text)) {
        for (const auto& p : h->removed) {
          EZPZ_FUZZ_CHECK(core::safe_relative_path(p));
        }
        auto again = core::decode_delta_header(core::encode_delta_header(*h));
        EZPZ_FUZZ_CHECK(again.has_value());
        EZPZ_FUZZ_CHECK(again->removed == h->removed && again->deltas == h->deltas);
      }
      break;
    }
  }
  return 0;
}
