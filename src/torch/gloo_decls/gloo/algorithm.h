// Used only where torch ships c10d's ProcessGroupGloo.hpp but not the gloo headers it includes (a pip
// wheel; Debian's libgloo-dev has the real ones): src/torch/CMakeLists.txt then puts this folder on the
// include path. libezpz_torch passes gloo's objects around only by shared_ptr and calls no gloo code, so
// declaring the few names that header mentions is enough: sizes and layouts are never taken from here.
#pragma once

#include "gloo/context.h"
#include "gloo/rendezvous/store.h"
#include "gloo/transport/device.h"
