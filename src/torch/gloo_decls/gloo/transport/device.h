// Used only where torch ships c10d's ProcessGroupGloo.hpp but not the gloo headers it includes (a pip
// wheel; Debian's libgloo-dev has the real ones): src/torch/CMakeLists.txt then puts this folder on the
// include path. libezpz_torch passes gloo's objects around only by shared_ptr and calls no gloo code, so
// declaring the few names that header mentions is enough: sizes and layouts are never taken from here.
#pragma once

namespace gloo::transport {

class Device;         ///< a transport endpoint (c10d creates it: ProcessGroupGloo::createDefaultDevice)
class UnboundBuffer;  ///< a send or receive buffer (held by c10d's SendWork and RecvWork)

}  // namespace gloo::transport
