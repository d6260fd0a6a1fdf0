// Batch-script traps sites have written down: set -u before modules, Lmod's init in a non-login
// shell, a fetch from the network on a compute node. Each found at its line; safe scripts pass.
#include <catch2/catch.hpp>

#include "core/doctor/script_traps.hpp"

using namespace ezpz::core;

TEST_CASE("script traps: set -u before the script loads modules", "[script_traps]") {
  for (const auto* script : {"#!/bin/bash -l\nset -euo pipefail\nmodule load frameworks\npython3 t.py\n",
                             "#!/bin/bash -l\nset -o nounset\ncd x && module use /soft/modulefiles\n",
                             "#!/bin/bash -lu\nsource /etc/profile\n", "#!/bin/sh\nset -eu; ml conda\n"}) {
    INFO(script);
    const auto traps = script_traps(script);
    REQUIRE(traps.size() == 1);
    CHECK_THAT(traps[0].problem, Catch::Contains("set -u (line") && Catch::Contains("abort under it"));
    CHECK_THAT(traps[0].remedy, Catch::Contains("move set -u after the module lines"));
  }
  const auto traps = script_traps("#!/bin/bash -l\n#PBS -l select=2\nset -eu\n\nmodule load frameworks\n");
  REQUIRE(traps.size() == 1);
  CHECK(traps[0].line == 5);
  CHECK_THAT(traps[0].problem, Catch::StartsWith("set -u (line 3) is on when line 5 loads modules"));
  // After the modules, switched off before them, or none at all: safe.
  for (const auto* safe :
       {"#!/bin/bash -l\nmodule load frameworks\nset -euo pipefail\npython3 t.py\n",
        "#!/bin/bash -l\nset -eu\nset +u\nmodule load x\n", "#!/bin/bash -l\nset -eo pipefail\nmodule load x\n",
        "#!/bin/bash -l\n# set -u would break module load\nmodule load x\n",
        "#!/bin/bash -l\nset -u\npython3 -m app.train --set -u\n"}) {
    INFO(safe);
    CHECK(script_traps(safe).empty());
  }
}

TEST_CASE("script traps: Lmod's init in a non-login shell, a fetch from the network", "[script_traps]") {
  const auto lmod = script_traps("#!/bin/bash\nsource /usr/share/lmod/lmod/init/bash\nmodule load x\n");
  REQUIRE(lmod.size() == 1);
  CHECK(lmod[0].line == 2);
  CHECK_THAT(lmod[0].problem, Catch::Contains("MODULEPATH stays empty"));
  CHECK_THAT(lmod[0].remedy, Catch::Contains("#!/bin/bash -l"));
  CHECK(script_traps("#!/bin/bash -l\nsource /usr/share/lmod/lmod/init/bash\n").empty());
  CHECK(script_traps("#!/bin/bash\nsource /etc/profile\n. /usr/share/lmod/lmod/init/bash\n").empty());

  const auto fetch = script_traps("#!/bin/bash -l\nsource <(curl -fsSL https://bit.ly/ezpz-utils)\nezpz_setup_env\n");
  REQUIRE(fetch.size() == 1);
  CHECK_THAT(fetch[0].problem, Catch::Contains("no outbound network"));
  CHECK(script_traps("#!/bin/bash\ncurl -fsSL https://x/install.sh | bash\n").size() == 1);
  CHECK(script_traps("#!/bin/bash\n# curl -fsSL https://x | bash\ncurl -o data.bin https://x/data\n").empty());
}

TEST_CASE("script traps: what counts as a shell script", "[script_traps]") {
  CHECK(is_shell_script("#!/bin/bash -l\n"));
  CHECK(is_shell_script("#!/usr/bin/env bash\necho"));
  CHECK(is_shell_script("#!/bin/sh"));
  CHECK_FALSE(is_shell_script("#!/usr/bin/env python3\n"));
  CHECK_FALSE(is_shell_script("import torch\n"));
}
