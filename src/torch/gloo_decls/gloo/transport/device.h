// Declarations only, for c10d's ProcessGroupGloo.hpp where torch ships no gloo headers
// (src/torch/gloo_decls/README.md).
#pragma once

namespace gloo::transport {

class Device;         ///< a transport endpoint (c10d creates it: ProcessGroupGloo::createDefaultDevice)
class UnboundBuffer;  ///< a send or receive buffer (held by c10d's SendWork and RecvWork)

}  // namespace gloo::transport
