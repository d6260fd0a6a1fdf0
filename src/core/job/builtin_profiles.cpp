// Written by scripts/gen-builtin-machines.sh from src/core/job/machines.toml (as merge_toml reads
// it): do not edit. tests/unit/core/job/test_builtin_profiles.cpp fails when the two differ.
#include "core/job/machine.hpp"

namespace ezpz::core {
namespace {

MachineProfile profile_aurora() {
  MachineProfile m;
  m.name = R"ezpz(aurora)ezpz";
  m.description = R"ezpz(ALCF Aurora (Intel Max GPUs, 12 tiles per node, PBS + PALS))ezpz";
  m.match_prefix = {R"ezpz(aurora)ezpz"};
  m.scheduler = Scheduler::pbs;
  m.launcher = R"ezpz(mpiexec)ezpz";
  m.style = LauncherStyle::pals;
  m.cpu_bind = R"ezpz(list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100)ezpz";
  m.gpus_per_node = 12;
  m.sched_args = {R"ezpz(-l filesystems=flare:home)ezpz", R"ezpz(-l place=scatter)ezpz"};
  m.gpu_bind = R"ezpz(ze)ezpz";
  m.master_addr_suffix = R"ezpz(.hsn.cm.aurora.alcf.anl.gov)ezpz";
  m.env = {{R"ezpz(CCL_PROCESS_LAUNCHER)ezpz", R"ezpz(pmix)ezpz"},
           {R"ezpz(FI_MR_CACHE_MONITOR)ezpz", R"ezpz(userfaultfd)ezpz"}};
  m.shared_prefix = {R"ezpz(x4)ezpz"};
  m.match_env = {{R"ezpz(PBS_JOBID)ezpz", R"ezpz(aurora)ezpz"}, {R"ezpz(PBS_O_HOST)ezpz", R"ezpz(aurora)ezpz"}};
  m.guess_from_prefix = true;
  m.at_scale_nodes = 16;
  m.env_at_scale = {{R"ezpz(CCL_ALLREDUCE_SCALEOUT)ezpz", R"ezpz(direct:0-1048576;rabenseifner:1048577-max)ezpz"},
                    {R"ezpz(CCL_ATL_TRANSPORT)ezpz", R"ezpz(mpi)ezpz"},
                    {R"ezpz(CCL_BCAST)ezpz", R"ezpz(double_tree)ezpz"},
                    {R"ezpz(CCL_CONFIGURATION)ezpz", R"ezpz(cpu_gpu_dpcpp)ezpz"},
                    {R"ezpz(CCL_CONFIGURATION_PATH)ezpz", R"ezpz()ezpz"},
                    {R"ezpz(CCL_KVS_CONNECTION_TIMEOUT)ezpz", R"ezpz(600)ezpz"},
                    {R"ezpz(CCL_KVS_MODE)ezpz", R"ezpz(mpi)ezpz"},
                    {R"ezpz(CCL_KVS_USE_MPI_RANKS)ezpz", R"ezpz(1)ezpz"},
                    {R"ezpz(CCL_ZE_CACHE_OPEN_IPC_HANDLES_THRESHOLD)ezpz", R"ezpz(1024)ezpz"},
                    {R"ezpz(FI_CXI_CQ_FILL_PERCENT)ezpz", R"ezpz(20)ezpz"},
                    {R"ezpz(FI_CXI_DEFAULT_CQ_SIZE)ezpz", R"ezpz(131072)ezpz"},
                    {R"ezpz(FI_CXI_OFLOW_BUF_SIZE)ezpz", R"ezpz(8388608)ezpz"}};
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_sunspot() {
  MachineProfile m;
  m.name = R"ezpz(sunspot)ezpz";
  m.description = R"ezpz(ALCF SunSpot (Aurora test system, PBS + PALS))ezpz";
  m.match_prefix = {R"ezpz(sunspot)ezpz"};
  m.scheduler = Scheduler::pbs;
  m.launcher = R"ezpz(mpiexec)ezpz";
  m.style = LauncherStyle::pals;
  m.cpu_bind = R"ezpz(list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100)ezpz";
  m.gpus_per_node = 12;
  m.gpu_bind = R"ezpz(ze)ezpz";
  m.master_addr_suffix = R"ezpz(.hsn.cm.sunspot.alcf.anl.gov)ezpz";
  m.env = {{R"ezpz(CCL_PROCESS_LAUNCHER)ezpz", R"ezpz(pmix)ezpz"}};
  m.shared_prefix = {R"ezpz(x1)ezpz"};
  m.match_env = {{R"ezpz(PBS_JOBID)ezpz", R"ezpz(sunspot)ezpz"}, {R"ezpz(PBS_O_HOST)ezpz", R"ezpz(sunspot)ezpz"}};
  m.guess_from_prefix = true;
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_sirius() {
  MachineProfile m;
  m.name = R"ezpz(sirius)ezpz";
  m.description = R"ezpz(ALCF Sirius (4 NVIDIA GPUs per node, PBS + PALS))ezpz";
  m.match_prefix = {R"ezpz(sirius)ezpz", R"ezpz(x3)ezpz"};
  m.match_contains = R"ezpz(sirius)ezpz";
  m.scheduler = Scheduler::pbs;
  m.launcher = R"ezpz(mpiexec)ezpz";
  m.style = LauncherStyle::pals;
  m.cpu_bind = R"ezpz(depth)ezpz";
  m.depth = 8;
  m.gpus_per_node = 4;
  m.gpu_bind = R"ezpz(cuda)ezpz";
  m.gpu_reverse = true;
  m.master_addr_suffix = R"ezpz(.hsn.cm.sirius.alcf.anl.gov)ezpz";
  m.shared_prefix = {R"ezpz(x3)ezpz"};
  m.match_env = {{R"ezpz(PBS_JOBID)ezpz", R"ezpz(sirius)ezpz"}, {R"ezpz(PBS_O_HOST)ezpz", R"ezpz(sirius)ezpz"}};
  m.net_plugin = {R"ezpz(libnccl-net)ezpz"};
  m.net_plugin_hint =
      R"ezpz(put the aws-ofi-nccl plugin's lib directory on LD_LIBRARY_PATH (ALCF: /soft/libraries/aws-ofi-nccl))ezpz";
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_polaris() {
  MachineProfile m;
  m.name = R"ezpz(polaris)ezpz";
  m.description = R"ezpz(ALCF Polaris (4 NVIDIA A100 per node, PBS + PALS))ezpz";
  m.match_prefix = {R"ezpz(polaris)ezpz"};
  m.scheduler = Scheduler::pbs;
  m.launcher = R"ezpz(mpiexec)ezpz";
  m.style = LauncherStyle::pals;
  m.cpu_bind = R"ezpz(depth)ezpz";
  m.depth = 8;
  m.gpus_per_node = 4;
  m.sched_args = {R"ezpz(-l filesystems=home:eagle)ezpz", R"ezpz(-l place=scatter)ezpz"};
  m.gpu_bind = R"ezpz(cuda)ezpz";
  m.gpu_reverse = true;
  m.master_addr_suffix = R"ezpz(.hsn.cm.polaris.alcf.anl.gov)ezpz";
  m.shared_prefix = {R"ezpz(x3)ezpz"};
  m.match_env = {{R"ezpz(PBS_JOBID)ezpz", R"ezpz(polaris)ezpz"}, {R"ezpz(PBS_O_HOST)ezpz", R"ezpz(polaris)ezpz"}};
  m.guess_from_prefix = true;
  m.net_plugin = {R"ezpz(libnccl-net)ezpz"};
  m.net_plugin_hint =
      R"ezpz(put the aws-ofi-nccl plugin's lib directory on LD_LIBRARY_PATH (ALCF: /soft/libraries/aws-ofi-nccl))ezpz";
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_sophia() {
  MachineProfile m;
  m.name = R"ezpz(sophia)ezpz";
  m.description = R"ezpz(ALCF Sophia (8 NVIDIA A100 per node, PBS + Open MPI))ezpz";
  m.match_prefix = {R"ezpz(sophia)ezpz"};
  m.scheduler = Scheduler::pbs;
  m.launcher = R"ezpz(mpirun)ezpz";
  m.style = LauncherStyle::sophia;
  m.gpus_per_node = 8;
  m.gpu_bind = R"ezpz(cuda)ezpz";
  m.master_addr_suffix = R"ezpz(.lab.alcf.anl.gov)ezpz";
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_frontier() {
  MachineProfile m;
  m.name = R"ezpz(frontier)ezpz";
  m.description = R"ezpz(OLCF Frontier (8 AMD MI250X GCDs per node, Slurm))ezpz";
  m.match_prefix = {R"ezpz(frontier)ezpz"};
  m.scheduler = Scheduler::slurm;
  m.launcher = R"ezpz(srun)ezpz";
  m.style = LauncherStyle::srun;
  m.gpus_per_node = 8;
  m.cpus_per_node = 56;
  m.gpu_bind = R"ezpz(rocr)ezpz";
  m.env = {{R"ezpz(MIOPEN_CUSTOM_CACHE_DIR)ezpz", R"ezpz(/tmp/miopen-cache-{uid}-{job_id})ezpz"},
           {R"ezpz(MIOPEN_USER_DB_PATH)ezpz", R"ezpz(/tmp/miopen-cache-{uid}-{job_id})ezpz"},
           {R"ezpz(NCCL_SOCKET_IFNAME)ezpz", R"ezpz(hsn0)ezpz"}};
  m.shared_prefix = {R"ezpz(login)ezpz"};
  m.match_env = {{R"ezpz(LMOD_SYSTEM_NAME)ezpz", R"ezpz(frontier)ezpz"},
                 {R"ezpz(SLURM_CLUSTER_NAME)ezpz", R"ezpz(frontier)ezpz"}};
  m.net_plugin = {R"ezpz(librccl-net)ezpz", R"ezpz(libnccl-net)ezpz"};
  m.net_plugin_hint =
      R"ezpz(put the aws-ofi-rccl plugin's lib directory on LD_LIBRARY_PATH (OLCF's PyTorch on Frontier page))ezpz";
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_perlmutter() {
  MachineProfile m;
  m.name = R"ezpz(perlmutter)ezpz";
  m.description = R"ezpz(NERSC Perlmutter (4 NVIDIA A100 per node, Slurm))ezpz";
  m.match_prefix = {R"ezpz(perlmutter)ezpz"};
  m.scheduler = Scheduler::slurm;
  m.launcher = R"ezpz(srun)ezpz";
  m.style = LauncherStyle::srun;
  m.cpu_bind = R"ezpz(cores)ezpz";
  m.gpus_per_node = 4;
  m.cpus_per_node = 128;
  m.sched_args = {R"ezpz(-C gpu)ezpz"};
  m.gpu_bind = R"ezpz(cuda)ezpz";
  m.env = {{R"ezpz(FI_MR_CACHE_MONITOR)ezpz", R"ezpz(userfaultfd)ezpz"}};
  m.shared_prefix = {R"ezpz(nid)ezpz", R"ezpz(login)ezpz"};
  m.match_env = {{R"ezpz(NERSC_HOST)ezpz", R"ezpz(perlmutter)ezpz"},
                 {R"ezpz(SLURM_CLUSTER_NAME)ezpz", R"ezpz(perlmutter)ezpz"}};
  m.net_plugin = {R"ezpz(libnccl-net)ezpz"};
  m.net_plugin_hint = R"ezpz(module load nccl/2.24.3 (the nccl module puts its OFI plugin on LD_LIBRARY_PATH))ezpz";
  m.modules = true;
  m.yeet_above_nodes = 16;
  return m;
}

MachineProfile profile_local() {
  MachineProfile m;
  m.name = R"ezpz(local)ezpz";
  m.description = R"ezpz(any other machine: a laptop, a workstation or an unknown cluster)ezpz";
  m.yeet_above_nodes = 16;
  return m;
}

}  // namespace

std::vector<MachineProfile> builtin_profiles() {
  std::vector<MachineProfile> out;
  out.reserve(8);
  out.push_back(profile_aurora());
  out.push_back(profile_sunspot());
  out.push_back(profile_sirius());
  out.push_back(profile_polaris());
  out.push_back(profile_sophia());
  out.push_back(profile_frontier());
  out.push_back(profile_perlmutter());
  out.push_back(profile_local());
  return out;
}

}  // namespace ezpz::core
