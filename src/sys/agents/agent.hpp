// The node half of yeet's launcher transport: `ezpz __yeet-agent`, one per node, started by the
// job's launcher (srun, mpiexec, mpirun) with the run's secret and the head's address in its
// environment. It listens on a TCP port, tells the head (over a sealed connection) its names
// and port, gets every agent's address back, then runs each authenticated client's command
// (a relay, a sender) in a session of its own until the head's connection ends.
#pragma once

#include <string>
#include <vector>

namespace ezpz::sys {

/// `ezpz __yeet-agent`: returns its exit status.
int agent_main(const std::vector<std::string>& args);

}  // namespace ezpz::sys
