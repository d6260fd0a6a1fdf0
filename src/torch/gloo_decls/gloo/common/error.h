// Declarations only, for c10d's ProcessGroupGloo.hpp where torch ships no gloo headers
// (src/torch/gloo_decls/README.md).
#pragma once
