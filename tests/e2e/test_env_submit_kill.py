"""ezpz env (PBS, Slurm, local), ezpz submit (--dry-run, --submit through a stand-in qsub/sbatch,
bad input), ezpz kill on real processes started by ezpz launch."""
import glob
import json
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from ezpz_e2e import EZPZ, TempDirTest, base_env, counting_ssh, main, read_counts, run, wait_until  # noqa: E402


class Env(TempDirTest):
    def values(self, env, *extra):
        return json.loads(run(["env", "--json", *extra], env, check=0).stdout)

    def test_pbs_job(self):
        hostfile = self.write("nodefile", "x1001c0s0b0n0\nx1001c0s0b0n0\nx1001c0s0b1n0\n")
        env = base_env(PBS_JOBID="123.aurora-pbs", PBS_NODEFILE=hostfile, EZPZ_MACHINE="aurora")
        v = self.values(env)
        self.assertEqual(v["HOSTFILE"], hostfile)
        self.assertEqual((v["NHOSTS"], v["NGPU_PER_HOST"], v["NGPUS"], v["MACHINE"]), (2, 12, 24, "aurora"))  # counts are numbers
        self.assertTrue(v["DIST_LAUNCH"].startswith("mpiexec "), v)
        self.assertIn("--np=24", v["DIST_LAUNCH"])
        self.assertEqual(v["EZPZ_LAUNCH"], f"{EZPZ} launch --")

    def test_slurm_job(self):
        env = base_env(SLURM_JOB_ID="77", SLURM_NODELIST="nid[001000-001002]", SLURM_NNODES="3",
                       EZPZ_MACHINE="frontier")
        v = self.values(env)
        self.assertEqual((v["NHOSTS"], v["NGPU_PER_HOST"], v["NGPUS"], v["MACHINE"]), (3, 8, 24, "frontier"))
        self.assertTrue(v["DIST_LAUNCH"].startswith("srun "), v)
        self.assertNotIn("HOSTFILE", v)

    def test_local_and_shells(self):
        env = base_env()
        v = self.values(env)
        self.assertEqual((v["NHOSTS"], v["MACHINE"]), (1, "local"))
        # The lines work when evaluated: bash (and zsh), fish.
        out = subprocess.run(["bash", "-c", f'eval "$("{EZPZ}" env)"; echo "$NHOSTS $MACHINE $EZPZ_LAUNCH"'],
                             env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), f"1 local {EZPZ} launch --")
        out = subprocess.run(["fish", "-c", f'"{EZPZ}" env --shell fish | source; echo $NHOSTS $MACHINE'],
                             env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "1 local")
        # $EZPZ_LAUNCH and $DIST_LAUNCH run a command as written, in each shell (zsh does not split
        # a string, fish runs a list: each gets its own form).
        lines = {"bash": 'eval "$(EZ env --shell bash)"; $EZPZ_LAUNCH sh -c \'echo rank=$RANK\'',
                 "zsh": 'eval "$(EZ env --shell zsh)"; $EZPZ_LAUNCH sh -c \'echo rank=$RANK\'',
                 "fish": "EZ env --shell fish | source; $EZPZ_LAUNCH sh -c 'echo rank=$RANK'"}
        for shell, line in lines.items():
            for var in ("EZPZ_LAUNCH", "DIST_LAUNCH"):
                with self.subTest(shell=shell, var=var):
                    script = line.replace("EZ ", f"'{EZPZ}' ").replace("EZPZ_LAUNCH", var)
                    out = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True)
                    self.assertEqual(out.returncode, 0, f"{script}: {out.stderr}")
                    self.assertIn("rank=0", out.stdout)
        # The shell is $SHELL's when not named.
        out = run(["env"], base_env(SHELL="/usr/bin/zsh"), check=0).stdout
        self.assertIn("typeset -ga EZPZ_LAUNCH; EZPZ_LAUNCH=(", out)
        out = run(["env"], base_env(SHELL="/usr/bin/fish"), check=0).stdout
        self.assertIn("set -gx EZPZ_LAUNCH ", out)

    def test_safe_under_set_u(self):
        """`eval "$(ezpz env)"` in a job's shell that set -u (bash, zsh's nounset; fish has none but
        must take it too): no unbound variable, every line evaluated, in a PBS job and a local one."""
        hostfile = self.write("nodefile", "x1001c0s0b0n0\nx1001c0s0b1n0\n")
        for env in (base_env(PBS_JOBID="123.aurora-pbs", PBS_NODEFILE=hostfile, EZPZ_MACHINE="aurora"), base_env()):
            for shell, line in (("bash", 'set -u; eval "$(EZ env --shell bash)"; echo "$NHOSTS $EZPZ_LAUNCH"'),
                                ("zsh", 'set -u; eval "$(EZ env --shell zsh)"; echo "$NHOSTS $EZPZ_LAUNCH"'),
                                ("fish", "EZ env --shell fish | source; echo $NHOSTS $EZPZ_LAUNCH")):
                with self.subTest(shell=shell, pbs="PBS_JOBID" in env):
                    script = line.replace("EZ ", f"'{EZPZ}' ")
                    out = subprocess.run([shell, "-c", script], env=env, capture_output=True, text=True)
                    self.assertEqual(out.returncode, 0, f"{script}: {out.stderr}")
                    self.assertEqual(out.stderr, "")
                    nhosts = "2" if "PBS_JOBID" in env else "1"
                    self.assertEqual(out.stdout.split()[:3], [nhosts, EZPZ, "launch"], out.stdout)


class Submit(TempDirTest):
    def test_a_command_the_job_would_not_find_is_refused_before_the_queue(self):
        env = base_env(PWD=self.tmp)
        out = os.path.join(self.tmp, "job.sh")
        for command, named in ((["python3", "nosuch.py"], "nosuch.py does not exist in " + self.tmp),
                               (["nosuchprog", "--x"], "nosuchprog is not on PATH"),
                               (["bash", "missing.sh"], "missing.sh does not exist"),
                               (["./run.sh"], "./run.sh does not exist")):
            with self.subTest(command=command):
                proc = run(["submit", "--scheduler", "pbs", "-o", out, "--", *command], env, check=2)
                self.assertIn(named, proc.stderr)
                self.assertIn("--force", proc.stderr)
                self.assertFalse(os.path.exists(out), "a script was written")
        # What is there passes: a script beside, a module, a program on PATH.
        self.write("train.py", "print(1)\n")
        for command in (["python3", "-u", "train.py"], ["python3", "-m", "app.train"], ["hostname"]):
            with self.subTest(command=command):
                run(["submit", "--scheduler", "pbs", "--dry-run", "--", *command], env, check=0)
        # --force: written, with a warning.
        proc = run(["submit", "--scheduler", "pbs", "-o", out, "--force", "--", "python3", "nosuch.py"], env, check=0)
        self.assertIn("nosuch.py does not exist", proc.stderr)
        self.assertTrue(os.path.exists(out))

    def test_a_shell_script_is_checked_for_traps(self):
        """The job's command is a shell script that sets -u before its modules: said before the
        queue, with the fix (written all the same); a safe script says nothing."""
        env = base_env(PWD=self.tmp)
        self.write("run.sh", "#!/bin/bash -l\nset -euo pipefail\nmodule load frameworks\npython3 t.py\n", 0o755)
        for command in (["./run.sh"], ["bash", "run.sh"]):
            with self.subTest(command=command):
                proc = run(["submit", "--scheduler", "pbs", "--dry-run", "--", *command], env, check=0)
                self.assertIn("run.sh: set -u (line 2) is on when line 3 loads modules", proc.stderr)
                self.assertIn("move set -u after the module lines", proc.stderr)
        self.write("safe.sh", "#!/bin/bash -l\nmodule load frameworks\nset -euo pipefail\npython3 t.py\n", 0o755)
        proc = run(["submit", "--scheduler", "pbs", "--dry-run", "--", "./safe.sh"], env, check=0)
        self.assertNotIn("safe.sh:", proc.stderr)

    def test_yeet_and_machine(self):
        """--yeet writes the copy of the active env (or of a directory or tarball given) and its
        activation before the launch; --machine picks the profile's directives and is named to the
        launch; what cannot work is refused before any script is written."""
        venv = os.path.join(self.tmp, "proj", "venv")
        self.write("proj/venv/bin/activate", "")
        env = base_env(PWD=self.tmp, VIRTUAL_ENV=venv, USER="alice")
        out = run(["submit", "--scheduler", "pbs", "--machine", "polaris", "--yeet", "--dry-run", "--",
                   "hostname"], env, check=0).stdout
        dst = run(["yeet", "--where"], env, check=0).stdout.strip()  # where yeet puts it: the same place
        self.assertRegex(dst, r"^/tmp/alice/venv-[0-9a-f]{8}$")
        self.assertIn(f"yeet --compress --src {venv} --dst {dst}\n", out)
        self.assertIn(f"if [ -f {dst}/bin/activate ]; then . {dst}/bin/activate;", out)
        self.assertIn("#PBS -l filesystems=home:eagle", out)
        self.assertIn("launch --machine=polaris -- hostname", out)
        self.assertLess(out.index(f". {venv}/bin/activate"), out.index("yeet --compress"))
        self.write("env.tar.zst", "x")
        out = run(["submit", "--scheduler", "slurm", "--yeet", "env.tar.zst", "--dry-run", "--", "hostname"],
                  base_env(PWD=self.tmp, USER="bob"), check=0).stdout
        dst = run(["yeet", "env.tar.zst", "--where"], base_env(PWD=self.tmp, USER="bob"), check=0).stdout.strip()
        self.assertRegex(dst, r"^/tmp/bob/env-[0-9a-f]{8}$")
        self.assertIn(f"--src {self.tmp}/env.tar.zst --dst {dst}\n", out)
        for args, said in ((["--yeet"], "none is active: activate it, or pass --yeet PATH"),
                           (["--yeet", "nosuch"], "does not exist"),
                           (["--yeet", "env.tar.zst.bak"], "neither a directory nor"),
                           (["--machine", "polaros"], "(did you mean 'polaris'?)")):
            if args[-1] == "env.tar.zst.bak":
                self.write("env.tar.zst.bak", "x")
            with self.subTest(args=args):
                proc = run(["submit", "--scheduler", "pbs", *args, "-o", os.path.join(self.tmp, "s.sh"), "--",
                            "hostname"], base_env(PWD=self.tmp), check=2)
                self.assertIn(said, proc.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "s.sh")))

    def test_scheduler_lines_from_the_machine_and_sched_arg(self):
        env = base_env(PWD=self.tmp, EZPZ_MACHINE="perlmutter")
        out = run(["submit", "--scheduler", "slurm", "--dry-run", "--sched-arg", "-q regular", "--sched-arg",
                   "--gpus-per-node=4", "--", "hostname"], env, check=0).stdout
        self.assertIn("#SBATCH -C gpu\n#SBATCH -q regular\n#SBATCH --gpus-per-node=4\n", out)
        env = base_env(PWD=self.tmp, EZPZ_MACHINE="polaris")
        out = run(["submit", "--scheduler", "pbs", "--dry-run", "--", "hostname"], env, check=0).stdout
        self.assertEqual(out.count("filesystems="), 1, out)
        self.assertIn("#PBS -l filesystems=home:eagle\n#PBS -l place=scatter\n", out)
        out = run(["submit", "--scheduler", "pbs", "--dry-run", "--filesystems", "home:grand", "--", "hostname"],
                  env, check=0).stdout
        self.assertIn("#PBS -l filesystems=home:grand\n", out)  # the user's wins over the machine's
        self.assertEqual(out.count("filesystems="), 1, out)
        proc = run(["submit", "--scheduler", "pbs", "--dry-run", "--sched-arg", "gpu", "--", "hostname"], env,
                   check=2)
        self.assertIn("--sched-arg 'gpu' must be one line of scheduler options", proc.stderr)

    def test_dry_run_pbs_and_slurm(self):
        env = base_env(PWD=self.tmp)
        out = run(["submit", "--scheduler", "pbs", "-N", "2", "-t", "30", "-q", "debug", "-A", "P", "--dry-run",
                   "--", "python3", "-c", "print('hi there')"], env, check=0).stdout
        lines = out.splitlines()
        self.assertEqual(lines[0], "#!/bin/bash -l")
        self.assertIn("#PBS -l select=2", lines)
        self.assertIn("#PBS -l walltime=00:30:00", lines)
        self.assertEqual(lines[-1], f"exec {EZPZ} launch -- python3 -c 'print('\\''hi there'\\'')'")
        out = run(["submit", "--scheduler", "slurm", "-N", "4", "-t", "1-00:00:00", "--dry-run", "--", "true"],
                  env, check=0).stdout
        self.assertIn("#SBATCH --nodes=4", out)
        self.assertIn("#SBATCH --time=24:00:00", out)
        self.assertFalse(os.listdir(self.tmp), "dry run wrote a file")

    def test_submit_with_qsub_and_bad_input(self):
        log = os.path.join(self.tmp, "qsub.log")
        self.write("bin/qsub", f"#!/bin/sh\necho \"$@\" > '{log}'\necho 4242.pbs01\n", 0o755)
        env = base_env(PWD=self.tmp, PATH=f"{self.tmp}/bin:" + os.environ["PATH"])
        self.write("train.py", "print('hi')\n")  # the command's script, found where the job runs
        script = os.path.join(self.tmp, "job.sh")
        proc = run(["submit", "-N", "1", "-o", script, "--submit", "--", "python3", "train.py"], env, check=0)
        self.assertIn("4242.pbs01", proc.stdout)
        self.assertEqual(open(log).read().strip(), script)
        self.assertIn("#PBS -l select=1", open(script).read())
        for bad, word in ((["-t", "1h"], "walltime"), (["-N", "0"], "--nodes"), (["--env", "1X=2"], "--env")):
            proc = run(["submit", "--scheduler", "pbs", "--dry-run", *bad, "--", "true"], env)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
            self.assertIn(word, proc.stderr)
        proc = run(["submit", "--dry-run", "--", "true"], base_env(PATH="/nonexistent"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--scheduler", proc.stderr)

    def test_submit_carries_the_env_names_scripts_apart_and_prints_the_job_id(self):
        self.write("bin/sbatch", "#!/bin/sh\necho 'Submitted batch job 77'\n", 0o755)
        venv = os.path.join(self.tmp, "my venv")
        os.makedirs(os.path.join(venv, "bin"))
        env = base_env(PWD=self.tmp, PATH=f"{self.tmp}/bin:" + os.environ["PATH"], VIRTUAL_ENV=venv)
        self.write("t.py", "print('hi')\n")

        def submit(env):
            return subprocess.run([EZPZ, "submit", "--scheduler", "slurm", "--submit", "--", "python3", "t.py"],
                                  env=env, cwd=self.tmp, capture_output=True, text=True, timeout=60)
        first, second = submit(env), submit(env)  # the same second, most likely
        for proc in (first, second):
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("submitted job 77 (sbatch ezpz-submit-", proc.stdout)
            self.assertIn("watch it with squeue -j 77", proc.stdout)
            self.assertIn(f"(it activates {venv})", proc.stdout)
        scripts = sorted(glob.glob(os.path.join(self.tmp, "ezpz-submit-*.sh")))  # visible, one per submit
        self.assertEqual(len(scripts), 2, scripts)
        for s in scripts:
            self.assertIn(f"\n. '{venv}/bin/activate'\n", open(s).read())
        # No env active: said, and nothing activated.
        env.pop("VIRTUAL_ENV")
        proc = run(["submit", "--scheduler", "slurm", "--dry-run", "--", "true"], env, check=0)
        self.assertIn("no virtual env or conda env is active", proc.stderr)
        self.assertNotIn("activate", proc.stdout)
        # A refusal from the scheduler: its words, the script kept, its exit code.
        self.write("bin/sbatch", "#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n", 0o755)
        proc = run(["submit", "--scheduler", "slurm", "-o", os.path.join(self.tmp, "j.sh"), "--submit", "--", "true"],
                   env, check=1)
        self.assertIn("invalid partition", proc.stderr)
        self.assertIn("the script is kept", proc.stderr)


def job_pids(pattern):
    """pids of this user's processes with EZPZ_JOB_ID whose command line has `pattern`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if b"EZPZ_JOB_ID=" in environ and pattern in cmdline:
            pids.append(int(d))
    return pids


def term_ignored(pid):
    """whether process `pid` ignores SIGTERM (bit 15 of SigIgn in /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(line.split()[1] for line in f if line.startswith("SigIgn:"))
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


class Kill(TempDirTest):
    def start_job(self, *cmd):
        env = base_env()
        job = subprocess.Popen([EZPZ, "launch", "--launcher", "local", "-n", "2", "--", *cmd], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.addCleanup(lambda: (os.killpg(job.pid, signal.SIGKILL) if job.poll() is None else None))
        wait_until(lambda: len(job_pids(cmd[-1])) >= 2)  # generous: the asan preset starts slowly
        self.assertEqual(len(job_pids(cmd[-1])), 2, "the job's ranks did not start")
        return job, env

    def test_dry_run_then_kill(self):
        # A pattern no other test's processes have (ctest runs test files side by side).
        token = f"kill-{uuid.uuid4().hex[:12]}"
        job, env = self.start_job(sys.executable, "-c", f"import time; time.sleep(300)  # {token}")
        out = run(["kill", "--dry-run", "--json", token], env, check=0).stdout
        report = json.loads(out)
        self.assertEqual(sorted(p["pid"] for p in report["processes"]), sorted(job_pids(token)))
        self.assertTrue(all(p["job"].count(":") == 1 for p in report["processes"]), report)
        self.assertEqual(len(job_pids(token)), 2, "--dry-run killed something")
        out = run(["kill", token], env, check=0).stdout
        self.assertEqual(out.count("sent SIGTERM"), 2, out)
        job.wait(timeout=20)
        self.assertEqual(job_pids(token), [])
        # Nothing matched: exit 1, as pkill (and the same with --dry-run).
        self.assertIn("no ezpz-launched processes", run(["kill", token], env, check=1).stdout)
        run(["kill", "--dry-run", token], env, check=1)

    def test_term_ignored_then_kill(self):
        # A rank that never forks: a shell loop's `sleep` children carry the shell's command line
        # between fork and exec, so they would be counted (and signalled) as a third rank.
        token = f"kill-{uuid.uuid4().hex[:12]}"
        job, env = self.start_job(sys.executable, "-c",
                                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                  f"[time.sleep(0.1) for _ in iter(int, 1)]  # {token}")
        self.assertTrue(wait_until(lambda: all(term_ignored(pid) for pid in job_pids(token))),
                        "the ranks never came to ignore SIGTERM: the escalation to SIGKILL would go untested")
        out = run(["kill", "--grace", "0.5", token], env, check=0).stdout
        # It says what it did: SIGTERM, then SIGKILL for each rank that ignored it.
        self.assertEqual(out.count("sent SIGTERM, then SIGKILL after 0.5 s, to "), 2, out)
        job.wait(timeout=20)
        self.assertEqual(job_pids(token), [])

    def test_all_nodes_reached_a_bounded_number_at_a_time(self):
        # 40 other hosts through a stand-in ssh that runs `ezpz kill` here: every one reports,
        # at most 32 connections are set up together.
        fake, counts = counting_ssh(self.tmp)
        hosts = [f"host{i:02d}" for i in range(1, 41)]
        hostfile = self.write("hostfile", "\n".join(hosts) + "\n")
        out = run(["kill", "--all-nodes", "--hostfile", hostfile, "--ssh-command", fake, "--dry-run", "--json",
                   "no-such-job-304"], base_env(EZPZ_MACHINE="local"), check=1).stdout
        reports = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(reports), 41)
        self.assertEqual(sorted(r["host"] for r in reports[1:]), hosts)
        self.assertTrue(all("error" not in r and r["processes"] == [] for r in reports), reports)
        seen = read_counts(counts)
        self.assertEqual(len(seen), 40)
        self.assertLessEqual(max(seen), 32)
        self.assertGreater(max(seen), 1)

    def test_all_nodes_forks_only_its_connections_at_once(self):
        # 300 nodes are never 300 processes of the user's at once (a login node's process limit):
        # a connection is forked when its turn comes, at most 32 at a time.
        fake, _ = counting_ssh(self.tmp)
        hostfile = self.write("hostfile", "".join(f"n{i:03d}\n" for i in range(300)))
        proc = subprocess.Popen([EZPZ, "kill", "--all-nodes", "--hostfile", hostfile, "--ssh-command", fake,
                                 "--dry-run", "--json", "no-such-job-305"], env=base_env(EZPZ_MACHINE="local"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        children = f"/proc/{proc.pid}/task/{proc.pid}/children"
        most = 0
        while proc.poll() is None:
            try:
                with open(children) as f:
                    most = max(most, len(f.read().split()))
            except OSError:
                break
            time.sleep(0.005)
        out, err = proc.communicate(timeout=600)
        self.assertEqual(len(out.splitlines()), 301, err)
        self.assertGreater(most, 1)
        self.assertLessEqual(most, 34)  # 32 connections, the watcher and a moment's overlap

    def test_bad_signal(self):
        proc = run(["kill", "--signal", "STOP"])
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--signal", proc.stderr)


if __name__ == "__main__":
    main(verbosity=2)
