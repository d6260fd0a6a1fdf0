"""ezpz launch --dry-run [--json] under PBS-like, Slurm-like and local environments."""
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import TempDirTest, base_env, main, plan, run  # noqa: E402

AURORA_BIND = "list:1-8:9-16:17-24:25-32:33-40:41-48:53-60:61-68:69-76:77-84:85-92:93-100"


class PbsLike(TempDirTest):
    def pbs_env(self, hosts, machine="aurora", **extra):
        nodefile = self.write("aux/nodefile", "".join(h + "\n" for h in hosts))
        return base_env(PBS_JOBID="8817.aurora-pbs-0001.hostmgmt.cm", PBS_NODEFILE=nodefile,
                        EZPZ_MACHINE=machine, **extra), nodefile

    def test_aurora_two_nodes_json(self):
        env, nodefile = self.pbs_env(["x4102c0s0b0n0", "x4102c0s1b0n0"])
        p = plan(["--no-rank-env", "--", "python3", "-m", "app.train"], env)
        self.assertEqual(p["scheduler"], "pbs")
        self.assertEqual(p["machine"], "aurora")
        self.assertEqual(p["machine_evidence"], "named by EZPZ_MACHINE=aurora")
        self.assertEqual(p["hosts"], ["x4102c0s0b0n0", "x4102c0s1b0n0"])
        self.assertEqual((p["nhosts"], p["ppn"], p["nprocs"]), (2, 12, 24))
        self.assertEqual(p["launcher"], "mpiexec")
        self.assertEqual(p["hostfile"], nodefile)
        self.assertEqual(p["argv"], ["mpiexec", "--envall", "--line-buffer", "--np=24", "--ppn=12",
                                     f"--hostfile={nodefile}", f"--cpu-bind={AURORA_BIND}",
                                     "python3", "-m", "app.train"])
        self.assertEqual(p["env"], {"CCL_PROCESS_LAUNCHER": "pmix", "FI_MR_CACHE_MONITOR": "userfaultfd"})

    def test_spares_check_tolerate_node_failures(self):
        """--spare-nodes under PBS asks qstat -f JOBID (a stand-in qstat: no PBS server here) whether the
        job outlives a node's failure; without tolerate_node_failures=all it warns, with the fix."""
        calls = os.path.join(self.tmp, "qstat-calls")
        for tolerate, warned in ((None, "unset"), ("none", "none"), ("all", None), ("job_start", None)):
            attr = f"    tolerate_node_failures = {tolerate}\n" if tolerate else ""
            self.write("bin/qstat", "#!/bin/sh\n" f"echo \"$@\" >>{shlex.quote(calls)}\n"
                       "printf 'Job Id: 8817.aurora-pbs-0001.hostmgmt.cm\\n    Job_Name = train\\n"
                       f"{attr}    Resource_List.walltime = 01:00:00\\n'\n", 0o755)
            env, _ = self.pbs_env(["x4102c0s0b0n0", "x4102c0s1b0n0", "x4102c0s2b0n0"],
                                  PATH=os.path.join(self.tmp, "bin") + ":" + os.environ["PATH"])
            proc = run(["launch", "--dry-run", "--spare-nodes", "1", "--", "python3", "t.py"], env, check=0)
            if warned:
                self.assertIn(f"this PBS job does not tolerate node failures (tolerate_node_failures={warned})",
                              proc.stderr)
                self.assertIn("qsub -W tolerate_node_failures=all", proc.stderr)
            else:
                self.assertNotIn("tolerate", proc.stderr)
            self.assertIn("x4102c0s2b0n0", proc.stderr)  # the spare, named, not in the line
        with open(calls) as f:
            self.assertEqual(f.read().splitlines(), ["-f 8817.aurora-pbs-0001.hostmgmt.cm"] * 4)
        # Without spares nothing is asked.
        run(["launch", "--dry-run", "--", "python3", "t.py"], env, check=0)
        with open(calls) as f:
            self.assertEqual(len(f.read().splitlines()), 4)

    def test_aurora_at_scale_settings_above_16_nodes(self):
        hosts = [f"x4102c0s{i}b0n0" for i in range(17)]
        env, _ = self.pbs_env(hosts[:16])
        self.assertNotIn("FI_CXI_DEFAULT_CQ_SIZE", plan(["--", "x"], env)["env"])
        env, _ = self.pbs_env(hosts, FI_CXI_CQ_FILL_PERCENT="30")
        p = plan(["--", "x"], env)
        self.assertEqual(p["nhosts"], 17)
        self.assertEqual(p["env"]["FI_CXI_DEFAULT_CQ_SIZE"], "131072")
        self.assertEqual(p["env"]["FI_CXI_OFLOW_BUF_SIZE"], "8388608")
        self.assertEqual(p["env"]["CCL_KVS_MODE"], "mpi")
        self.assertEqual(p["env"]["CCL_ALLREDUCE_SCALEOUT"], "direct:0-1048576;rabenseifner:1048577-max")
        self.assertNotIn("FI_CXI_CQ_FILL_PERCENT", p["env"])  # the user's value wins
        self.assertEqual(p["warnings"], [])
        # The text line sets them before the launcher, quoted for a shell.
        proc = run(["launch", "--dry-run", "--", "x"], env, check=0)
        words = shlex.split(proc.stdout.strip())
        self.assertIn("CCL_ALLREDUCE_SCALEOUT=direct:0-1048576;rabenseifner:1048577-max", words)
        self.assertIn("CCL_CONFIGURATION_PATH=", words)
        self.assertIn("FI_CXI_DEFAULT_CQ_SIZE=131072", words)
        self.assertNotIn("FI_CXI_CQ_FILL_PERCENT=20", proc.stdout)

    def test_aurora_composite_hierarchy(self):
        env, _ = self.pbs_env(["x4102c0s0b0n0", "x4102c0s1b0n0"], ZE_FLAT_DEVICE_HIERARCHY="COMPOSITE")
        p = plan(["--", "true"], env)
        self.assertEqual((p["gpus_per_node"], p["gpus_source"], p["ppn"], p["nprocs"]),
                         (6, "ZE_FLAT_DEVICE_HIERARCHY", 6, 12))
        self.assertIsNone(p["ppn_limit"])

    def test_text_line_is_shell_quoted(self):
        env, nodefile = self.pbs_env(["x3001c0s7b0n0", "x3001c0s7b1n0"], machine="polaris")
        proc = run(["launch", "--dry-run", "-n", "8", "-x", "A=1", "--", "python3", "-c", "print('a b')"],
                   env, check=0)
        words = shlex.split(proc.stdout.strip())
        shim = words.index("__rank-env")
        self.assertEqual(words[:shim - 1], ["mpiexec", "--envall", "--line-buffer", "--np=8", "--ppn=4",
                                            f"--hostfile={nodefile}", "--cpu-bind=depth", "--depth=8", "-x", "A=1"])
        self.assertEqual(words[shim - 1], os.path.realpath(os.environ["EZPZ_BIN"]))
        sep = words.index("--")
        # (a dry run looks nothing up: the name a launch on Polaris uses)
        self.assertEqual(words[shim + 1:shim + 5], ["--np=8", "--ppn=4", "--nhosts=2",
                                                    "--master-addr=x3001c0s7b0n0.hsn.cm.polaris.alcf.anl.gov"])
        self.assertRegex(words[shim + 5], r"^--master-port=\d+$")
        self.assertEqual(words[sep:], ["--", "python3", "-c", "print('a b')"])

    def test_cpu_bind_env_and_flag(self):
        env, _ = self.pbs_env(["a", "b"], machine="polaris", CPU_BIND="--cpu-bind=list:0-1")
        self.assertIn("--cpu-bind=list:0-1", plan(["--", "x"], env)["argv"])
        proc = run(["launch", "--dry-run", "--cpu-bind", "list:2-3", "--", "x"], env, check=0)
        self.assertIn("--cpu-bind=list:2-3", proc.stdout)
        self.assertNotIn("list:0-1", proc.stdout)
        self.assertIn("both --cpu-bind and CPU_BIND", proc.stderr)

    def test_topology_errors_exit_2(self):
        env, _ = self.pbs_env(["a", "b"])
        proc = run(["launch", "--dry-run", "-n", "13", "--", "x"], env, check=2)
        self.assertIn("-n 13 does not divide evenly over 2 hosts", proc.stderr)
        proc = run(["launch", "--dry-run", "--nhosts", "3", "--", "x"], env, check=2)
        self.assertIn("--nhosts 3 is more than the 2 hosts", proc.stderr)

    def test_missing_and_empty_hostfiles_exit_2(self):
        env = base_env(PBS_JOBID="1.x", PBS_NODEFILE=os.path.join(self.tmp, "gone"))
        proc = run(["launch", "--dry-run", "--", "x"], env, check=2)
        self.assertIn("PBS_NODEFILE=", proc.stderr)
        empty = self.write("empty", "\n# nothing\n")
        proc = run(["launch", "--dry-run", "--hostfile", empty, "--", "x"], base_env(), check=2)
        self.assertIn("lists no hosts", proc.stderr)
        self.assertEqual(proc.stdout, "")


class SlurmLike(TempDirTest):
    def test_perlmutter_subset_passes_nodelist(self):
        env = base_env(SLURM_JOB_ID="42", SLURM_NODELIST="nid[001-004]", EZPZ_MACHINE="perlmutter")
        p = plan(["--nhosts", "2", "--no-rank-env", "--", "python3", "train.py"], env)
        self.assertEqual(p["scheduler"], "slurm")
        # NERSC's binding: -c 32 --cpu-bind=cores for 4 ranks a node (128 CPUs).
        self.assertEqual(p["argv"], ["srun", "-N2", "-n8", "--cpus-per-task=32", "--gpus-per-node=4",
                                     "--nodelist=nid001,nid002", "--cpu-bind=cores", "python3", "train.py"])
        self.assertEqual(p["env"], {"FI_MR_CACHE_MONITOR": "userfaultfd"})  # NERSC's job scripts

    def test_frontier_full_allocation(self):
        env = base_env(SLURM_JOBID="42", SLURM_JOB_NODELIST="frontier[00001-00002]", EZPZ_MACHINE="frontier")
        p = plan(["--", "python3", "train.py"], env)
        self.assertEqual(p["hosts"], ["frontier00001", "frontier00002"])
        self.assertEqual(p["argv"][:5], ["srun", "-N2", "-n16", "--cpus-per-task=7", "--gpus-per-node=8"])

    def test_frontier_site_settings(self):
        env = base_env(SLURM_JOB_ID="4242", SLURM_JOB_NODELIST="frontier[00001-00002]", EZPZ_MACHINE="frontier")
        p = plan(["--", "python3", "train.py"], env)
        cache = f"/tmp/miopen-cache-{os.getuid()}-4242"
        self.assertEqual(p["env"], {"MIOPEN_CUSTOM_CACHE_DIR": cache, "MIOPEN_USER_DB_PATH": cache,
                                    "NCCL_SOCKET_IFNAME": "hsn0"})
        self.assertEqual(p["master_addr"], "frontier00001")
        env["NCCL_SOCKET_IFNAME"] = "hsn0,hsn1,hsn2,hsn3"
        self.assertNotIn("NCCL_SOCKET_IFNAME", plan(["--", "python3", "train.py"], env)["env"])

    def test_frontier_allocation_limits(self):
        env = base_env(SLURM_JOBID="42", SLURM_JOB_NODELIST="frontier[00001-00002]", EZPZ_MACHINE="frontier",
                       SLURM_NTASKS_PER_NODE="1", SLURM_JOB_CPUS_PER_NODE="1(x2)")
        p = plan(["--no-rank-env", "--", "python3", "train.py"], env)
        self.assertEqual(p["argv"], ["srun", "-N2", "-n2", "--gpus-per-node=1", "python3", "train.py"])
        self.assertEqual((p["gpus_per_node"], p["gpus_source"]), (8, "machine profile"))
        self.assertEqual((p["ppn_limit"], p["ppn_limit_source"]), (1, "SLURM_NTASKS_PER_NODE"))
        proc = run(["launch", "--dry-run", "-n", "16", "--", "true"], env, check=2)
        self.assertIn("allocate with --ntasks-per-node=8", proc.stderr)
        env.update(ROCR_VISIBLE_DEVICES="0,1,2,3", SLURM_JOB_CPUS_PER_NODE="128(x2)")
        p = plan(["--ppn", "4", "--", "true"], env)
        self.assertEqual((p["gpus_per_node"], p["gpus_source"], p["nprocs"]), (4, "ROCR_VISIBLE_DEVICES", 8))
        self.assertIn("srun ignores the job's --ntasks-per-node=1", " ".join(p["warnings"]))

    def test_generic_slurm_without_gpus(self):
        env = base_env(SLURM_JOB_ID="3", SLURM_NODELIST="node[1-2]", NGPU_PER_HOST="2")
        p = plan(["--", "hostname"], env)
        self.assertEqual(p["machine"], "local")
        self.assertEqual(p["launcher"], "srun")
        self.assertEqual(p["nprocs"], 4)

    def test_bad_nodelist(self):
        env = base_env(SLURM_JOB_ID="3", SLURM_NODELIST="nid[1-")
        proc = run(["launch", "--dry-run", "--", "x"], env, check=2)
        self.assertIn("bad nodelist 'nid[1-'", proc.stderr)


class Local(TempDirTest):
    def fake_mpi(self, flavour):
        """A PATH holding an mpiexec of the given flavour, recognised from its install dir."""
        bindir = os.path.join(self.tmp, flavour, "bin")
        self.write(f"{flavour}/bin/mpiexec", "#!/bin/sh\nexit 0\n", 0o755)
        self.write(f"{flavour}/bin/{'ompi_info' if flavour == 'ompi' else 'mpichversion'}", "", 0o755)
        return bindir + ":/usr/bin:/bin"

    def test_mpich_style_detected_from_install(self):
        env = base_env(PATH=self.fake_mpi("mpich"))
        p = plan(["--launcher", "mpiexec", "-n", "4", "--", "hostname"], env)
        self.assertEqual(p["style"], "mpich")
        self.assertEqual(p["argv"][:5], ["mpiexec", "-n", "4", "-ppn", "4"])

    def test_openmpi_style_detected_from_install(self):
        env = base_env(PATH=self.fake_mpi("ompi"))
        p = plan(["--launcher", "mpiexec", "-n", "2", "--", "hostname"], env)
        self.assertEqual(p["style"], "openmpi")
        self.assertEqual(p["argv"][:3], ["mpiexec", "-np", "2"])

    def test_builtin_launcher_without_mpi(self):
        env = base_env(PATH=os.path.join(self.tmp, "empty-bin"))
        p = plan(["-n", "3", "--", "python3", "t.py"], env)
        self.assertEqual((p["launcher"], p["style"], p["nprocs"]), ("local", "local", 3))
        self.assertEqual(p["argv"], ["python3", "t.py"])
        proc = run(["launch", "--dry-run", "-n", "3", "--", "python3", "t.py"], env, check=0)
        self.assertEqual(proc.stdout.strip(), "ezpz launch --launcher local --np=3 -- python3 t.py")

    def test_user_config_adds_a_machine(self):
        cfg = self.write("cfg.toml", '[[machine]]\nname = "box"\nlauncher = "srun"\nstyle = "srun"\n'
                                     'gpus_per_node = 2\n[machine.env]\nBOX = "1"\n')
        env = base_env(EZPZ_CONFIG=cfg, SLURM_JOB_ID="1", SLURM_NODELIST="b[1-2]")
        p = plan(["--machine", "box", "--", "x"], env)
        self.assertEqual(p["machine"], "box")
        self.assertEqual(p["argv"][:4], ["srun", "-N2", "-n4", "--gpus-per-node=2"])
        self.assertEqual(p["env"], {"BOX": "1"})

    def test_bad_config_names_file_line_key(self):
        cfg = self.write("cfg.toml", '[[machine]]\nname = "box"\nlancher = "srun"\n')
        proc = run(["launch", "--dry-run", "--", "x"], base_env(EZPZ_CONFIG=cfg), check=2)
        self.assertIn(f"{cfg}:3: key 'lancher'", proc.stderr)
        self.assertEqual(proc.stderr.count("\n"), 1)

    def test_xdg_config_is_read(self):
        self.write("xdg/ezpz/config.toml", '[[machine]]\nname = "aurora"\ngpus_per_node = 6\n')
        env = base_env(XDG_CONFIG_HOME=os.path.join(self.tmp, "xdg"), PBS_JOBID="1",
                       PBS_NODEFILE=self.write("nf", "x4000\n"), EZPZ_MACHINE="aurora")
        self.assertEqual(plan(["--", "x"], env)["ppn"], 6)


if __name__ == "__main__":
    main(verbosity=2)
