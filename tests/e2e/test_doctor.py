"""ezpz doctor on this host: text and --json formats, exit codes, checks that see the real system."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, counting_ssh, main, read_counts, run  # noqa: E402

FIELDS = {"name", "status", "message", "remedy", "duration_ms"}


class Doctor(TempDirTest):
    def doctor_json(self, args, env, rc):
        proc = run(["doctor", "--json", *args], env, check=rc)
        whole = json.loads(proc.stdout)
        self.assertEqual(set(whole), {"summary", "checks"})
        results = whole["checks"]
        self.assertEqual(whole["summary"], {s: sum(r["status"] == k for r in results)
                                            for s, k in (("ok", "ok"), ("warnings", "warning"), ("failed", "error"))})
        for r in results:
            self.assertTrue(FIELDS <= set(r), r)
            self.assertIn(r["status"], ("ok", "warning", "error"))
            self.assertGreaterEqual(r["duration_ms"], 0)
        return {r["name"]: r for r in results if "host" not in r}

    def test_clean_host_passes_with_the_documented_fields(self):
        env = base_env(WANDB_MODE="offline", TORCH_DEVICE="cpu")
        checks = self.doctor_json([], env, 0)
        for name in ("scheduler", "machine", "launcher", "python", "torch", "space", "ulimits", "wandb", "accelerators",
                     "network-env", "ezpz"):
            self.assertIn(name, checks)
        self.assertEqual(checks["wandb"]["status"], "ok")
        self.assertEqual(checks["scheduler"]["status"], "ok", checks["scheduler"])

    def test_an_error_exits_1_and_names_the_fix(self):
        env = base_env(NCCL_SOCKET_IFNAME="nosuchif9", WANDB_MODE="offline")
        checks = self.doctor_json([], env, 1)
        self.assertEqual(checks["network-env"]["status"], "error")
        self.assertIn("nosuchif9", checks["network-env"]["message"])
        self.assertIn("ip link", checks["network-env"]["remedy"])
        # Text: the tag, the name, the message, the remedy.
        proc = run(["doctor"], env, check=1)
        self.assertRegex(proc.stdout, r"\[FAIL\] network-env: NCCL_SOCKET_IFNAME=nosuchif9 .*\n       -> unset")
        self.assertRegex(proc.stdout, r"\[ OK \] scheduler: ")
        self.assertNotIn("\033[", proc.stdout)  # not a terminal: no colour

    def test_slurm_variables_that_disagree(self):
        env = base_env(SLURM_JOB_ID="12", SLURM_NODELIST="nid[01-03]", SLURM_NNODES="2", WANDB_MODE="offline")
        checks = self.doctor_json([], env, 1)
        self.assertEqual(checks["scheduler"]["status"], "error")
        self.assertIn("SLURM_NNODES=2", checks["scheduler"]["message"])

    def test_wandb_credentials_only_where_wandb_is_installed(self):
        # A wandb module the python3 on PATH finds (PYTHONPATH): its credentials are checked.
        site = os.path.join(self.tmp, "site")
        os.makedirs(os.path.join(site, "wandb"))
        with open(os.path.join(site, "wandb", "__init__.py"), "w") as f:
            f.write("")
        env = base_env(PYTHONPATH=site)
        with open(os.path.join(env["HOME"], ".netrc"), "w") as f:
            f.write("machine api.wandb.ai\n  login user\n  password secret\n")
        self.assertEqual(self.doctor_json([], env, None)["wandb"]["status"], "ok")
        os.remove(os.path.join(env["HOME"], ".netrc"))
        self.assertEqual(self.doctor_json([], env, None)["wandb"]["status"], "warning")
        # Not installed: nothing to check, no warning.
        env.pop("PYTHONPATH")
        wandb = self.doctor_json([], env, None)["wandb"]
        self.assertEqual(wandb["status"], "ok", wandb)
        self.assertIn("wandb is not installed for ", wandb["message"])

    def test_a_failing_launcher_is_quoted_by_its_error_not_its_usage_hint(self):
        # An mpiexec that refuses its flags, as Open MPI's does: its usage hint must not reach the
        # terminal raw; each node's result quotes the line that names the error.
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "mpiexec"), "w") as f:
            f.write("#!/bin/sh\necho 'mpiexec: Error: unknown option \"--envall\"' >&2\n"
                    "echo \"Type 'mpiexec --help' for usage.\" >&2\nexit 1\n")
        os.chmod(os.path.join(bin_dir, "mpiexec"), 0o755)
        nodes = self.write("nodes", "n1\nn2\n")
        env = base_env(WANDB_MODE="offline", PBS_JOBID="1.pbs", PBS_NODEFILE=nodes)
        env["PATH"] = bin_dir + ":" + env["PATH"]
        proc = subprocess.run([EZPZ, "doctor", "--nodes", "--transport", "launcher", "--timeout", "20"], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertNotIn("Type '", proc.stdout + proc.stderr)
        self.assertIn('(it said: mpiexec: Error: unknown option "--envall")', proc.stdout)
        self.assertIn("[FAIL] node (n1): no agent on n1: mpiexec ended", proc.stdout)

    def test_torch_is_imported_by_the_python_ranks_run(self):
        # A python3 first on PATH that cannot import torch: a warning naming that python.
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        fake = os.path.join(bin_dir, "python3")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
        os.chmod(fake, 0o755)
        env = base_env(WANDB_MODE="offline")
        env["PATH"] = bin_dir + ":" + env["PATH"]
        torch = self.doctor_json([], env, None)["torch"]
        self.assertEqual(torch["status"], "warning", torch)
        self.assertEqual(torch["message"],
                         f"python3 ({fake}) cannot import torch: ModuleNotFoundError: No module named 'torch'")
        # Debian's python3 has torch (python3-torch, from scripts/install-deps.sh).
        env["PATH"] = "/usr/bin:" + env["PATH"]
        torch = self.doctor_json([], env, None)["torch"]
        self.assertEqual(torch["status"], "ok", torch)
        self.assertRegex(torch["message"], r"^torch \S+ imports in python3 \(/usr/bin/python3\)$")

    def test_env_bigger_than_tmp_is_an_error(self):
        venv = os.path.join(self.tmp, "venv")
        os.makedirs(venv)
        with open(os.path.join(venv, "pyvenv.cfg"), "w") as f:
            f.write("home = /usr/bin\n")
        env = base_env(VIRTUAL_ENV=venv, WANDB_MODE="offline")
        checks = self.doctor_json([], env, None)
        self.assertIn("venv " + os.path.realpath(venv), checks["python"]["message"])
        self.assertIn("/usr/bin", checks["python"]["message"])
        self.assertIn("the active env takes", checks["space"]["message"])

    def test_launch_probe_with_the_built_in_launcher(self):
        env = base_env(WANDB_MODE="offline", TORCH_DEVICE="cpu")
        checks = self.doctor_json(["--launch", "--launcher", "local"], env, 0)
        self.assertEqual(checks["launch"]["status"], "ok", checks["launch"])
        self.assertIn("RANK", checks["launch"]["message"])

    def test_nodes_tier_with_a_single_host(self):
        env = base_env(WANDB_MODE="offline", TORCH_DEVICE="cpu")
        checks = self.doctor_json(["--nodes"], env, 0)
        self.assertEqual(checks["nodes"]["status"], "ok")

    def test_nodes_are_reached_a_bounded_number_at_a_time(self):
        # 40 hosts through a stand-in ssh that runs the node side here and notes how many of it
        # run at once: at most 32 connections are set up together (the rest wait at their gates),
        # and every host still answers (each one's timeout counts from its own start).
        fake, counts = counting_ssh(self.tmp)
        hosts = [f"host{i:02d}" for i in range(1, 41)]
        hostfile = self.write("hostfile", "\n".join(hosts) + "\n")
        env = base_env(WANDB_MODE="offline", TORCH_DEVICE="cpu", EZPZ_MACHINE="local")
        proc = run(["doctor", "--json", "--nodes", "--hostfile", hostfile, "--ssh-command", fake, "--no-hsn",
                    "--timeout", "30"], env)
        results = json.loads(proc.stdout)["checks"]
        nodes = [r for r in results if r["name"] == "node"]
        self.assertEqual(sorted(r["host"] for r in nodes), hosts)
        self.assertTrue(all(r["status"] == "ok" for r in nodes), [r for r in nodes if r["status"] != "ok"])
        checks = {r["name"]: r for r in results if "host" not in r}
        self.assertEqual(checks["nodes"]["status"], "ok", checks["nodes"])
        seen = read_counts(counts)
        self.assertEqual(len(seen), 40)
        self.assertLessEqual(max(seen), 32)
        self.assertGreater(max(seen), 1)  # but they do run side by side

    def test_node_side_answers_a_ping(self):
        env = base_env()
        proc = subprocess.run([EZPZ, "__doctor-node", "--dst", "/tmp/does/not/exist", "--exe", EZPZ],
                              input="ping\n", env=env, capture_output=True, text=True, timeout=30, check=True)
        ready, facts = proc.stdout.splitlines()
        self.assertEqual(ready, "EZPZ-READY")
        facts = json.loads(facts)
        self.assertEqual(facts["dst"], "/tmp")
        self.assertTrue(facts["exe_present"] and facts["exe_same"])
        self.assertLess(abs(facts["time_ns"] - time.time_ns()), 10e9)

    def test_site_traps_made_real(self):
        """Perlmutter's traps as a user meets them: no NCCL net plugin on LD_LIBRARY_PATH (then one in a
        real directory), an empty MODULEPATH, MPICH_GPU_SUPPORT_ENABLED=1 with no GTL preloaded."""
        libs = os.path.join(self.tmp, "nccl", "lib")
        os.makedirs(libs)
        env = base_env(EZPZ_MACHINE="perlmutter", WANDB_MODE="offline", MODULEPATH="", LD_LIBRARY_PATH=libs,
                       MPICH_GPU_SUPPORT_ENABLED="1")
        checks = self.doctor_json([], env, 0)
        self.assertEqual(checks["net-plugin"]["status"], "warning")
        self.assertIn("falls back to TCP", checks["net-plugin"]["message"])
        self.assertIn("module load nccl", checks["net-plugin"]["remedy"])
        self.assertEqual(checks["modules"]["status"], "warning")
        self.assertIn("MODULEPATH is empty on perlmutter", checks["modules"]["message"])
        self.assertEqual(checks["gpu-mpi"]["status"], "warning")
        self.assertIn("MPICH_GPU_SUPPORT_ENABLED=0", checks["gpu-mpi"]["remedy"])
        with open(os.path.join(libs, "libnccl-net.so"), "w"):
            pass
        env.update(MODULEPATH="/usr/share/modulefiles", MPICH_GPU_SUPPORT_ENABLED="0")
        checks = self.doctor_json([], env, 0)
        self.assertEqual(checks["net-plugin"]["status"], "ok", checks["net-plugin"])
        self.assertIn(os.path.join(libs, "libnccl-net.so"), checks["net-plugin"]["message"])
        self.assertEqual(checks["modules"]["status"], "ok")
        self.assertEqual(checks["gpu-mpi"]["status"], "ok")

    def test_script_traps(self):
        """--script FILE: each trap a warning at its line with the fix; a safe script one ok; a file
        that cannot be read stops doctor (exit 2) before any check."""
        bad = self.write("job.sh", "#!/bin/bash\n#PBS -l select=2\nset -eu\n"
                                   "source /usr/share/lmod/lmod/init/bash\nmodule load frameworks\n")
        proc = run(["doctor", "--json", "--script", bad], base_env(WANDB_MODE="offline"), check=0)
        found = [r for r in json.loads(proc.stdout)["checks"] if r["name"] == "script"]
        self.assertEqual([r["status"] for r in found], ["warning", "warning"], found)
        self.assertIn(f"{bad}: set -u (line 3) is on when line 4 loads modules", found[0]["message"])
        self.assertIn("line 4 sources Lmod's init in a non-login shell", found[1]["message"])
        self.assertIn("#!/bin/bash -l", found[1]["remedy"])
        good = self.write("good.sh", "#!/bin/bash -l\nmodule load frameworks\nset -eu\n")
        proc = run(["doctor", "--script", good], base_env(WANDB_MODE="offline"), check=0)
        self.assertIn(f"[ OK ] script: {good}: no set -u before its modules", proc.stdout)
        proc = run(["doctor", "--script", os.path.join(self.tmp, "nosuch.sh")], base_env(), check=2)
        self.assertIn("--script: cannot read", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_a_stale_munge_socket(self):
        """A munge socket whose daemon died (made in a private mount namespace over /run/munge: root
        needed, as for the shared-machine tests): doctor says it and the fix; a live one is fine."""
        self.assertEqual(os.geteuid(), 0, "this test makes a mount namespace: run it as root")
        make = ("import socket, subprocess, sys\n"
                "s = socket.socket(socket.AF_UNIX); s.bind('/run/munge/munge.socket.2')\n"
                "if sys.argv[1] == 'live':\n"
                "    s.listen()\n"
                "else:\n"
                "    s.close()\n"
                "sys.stdout.write(subprocess.run([sys.argv[2], 'doctor', '--json'], capture_output=True, "
                "text=True).stdout)\n")
        for state, status, said in (("stale", "warning", "PMIX_MCA_psec=native"), ("live", "ok", "munged answers")):
            script = 'mkdir -p /run/munge && mount -t tmpfs none /run/munge && exec python3 -c "$MAKE" "$@"'
            proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", state, EZPZ],
                                  env=base_env(WANDB_MODE="offline", MAKE=make), capture_output=True, text=True,
                                  timeout=120)
            checks = {r["name"]: r for r in json.loads(proc.stdout)["checks"]}
            self.assertEqual(checks["munge"]["status"], status, checks["munge"])
            self.assertIn(said, checks["munge"]["message"] + checks["munge"]["remedy"])

    def test_usage_error(self):
        run(["doctor", "--timeout", "0"], base_env(), check=2)


if __name__ == "__main__":
    main()
