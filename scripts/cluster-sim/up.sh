#!/usr/bin/env bash
# up.sh N: simulate N HPC nodes on this machine (root; network + mount namespaces).
#   node I: own network namespace at $EZSIM_NET.(10+I) on a bridge, own hostname nodeI,
#           private tmpfs /tmp (size $EZSIM_TMP_SIZE, default 1g; node I may override with
#           EZSIM_TMP_SIZE_nodeI), a real sshd with key auth, /root/.ssh shared like an NFS home,
#           and a plain ~/.bashrc of its own (sshd's `bash -c` reads ~/.bashrc: this machine's own,
#           which may run pyenv or conda init, costs ~0.5 s of CPU per login, and every node's
#           login shares these cores; EZSIM_BASHRC=host keeps it, to measure that case).
#   login:  the bridge's namespace ($EZSIM_NET.1, hostname login): run commands there with exec.sh.
# Only addresses inside these namespaces are used; the machine's own network is untouched.
# State lives in $EZSIM_DIR (default /var/tmp/ezsim; never under /tmp, which is per node),
# including $EZSIM_DIR/hostfile. down.sh removes exactly what this made.
set -euo pipefail
N=${1:?usage: up.sh N}
D=${EZSIM_DIR:-/var/tmp/ezsim}
P=${EZSIM_PREFIX:-ezsim}
NET=${EZSIM_NET:-10.250.0}
TMP_SIZE=${EZSIM_TMP_SIZE:-1g}
export PATH=$PATH:/usr/sbin:/sbin

die() { echo "cluster-sim: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network and mount namespaces)"
command -v ip >/dev/null || die "ip (iproute2) is missing: run scripts/install-deps.sh"
command -v sshd >/dev/null || die "sshd (openssh-server) is missing: run scripts/install-deps.sh"
[ -e "$D/hostfile" ] && die "already up in $D: run down.sh first"
ip netns add "$P-probe" 2>/dev/null || die "cannot create a network namespace (ip netns add failed): this machine or container does not allow it"
ip netns del "$P-probe"
unshare -m -u true 2>/dev/null || die "cannot create mount/UTS namespaces (unshare -m -u failed)"

mkdir -p "$D/dotssh" "$D/nodes" /run/sshd
echo "# the simulated nodes' ~/.bashrc (scripts/cluster-sim/up.sh)" > "$D/bashrc"
BASHRC=""
if [ "${EZSIM_BASHRC:-}" != host ] && [ -f /root/.bashrc ]; then BASHRC="mount --bind '$D/bashrc' /root/.bashrc; "; fi
chmod 700 "$D/dotssh"
ssh-keygen -q -t ed25519 -N '' -f "$D/dotssh/id_ed25519" -C ezsim
cp "$D/dotssh/id_ed25519.pub" "$D/dotssh/authorized_keys"
cat > "$D/dotssh/config" <<CFG
Host node* login $NET.*
  User root
  IdentityFile /root/.ssh/id_ed25519
  UserKnownHostsFile /root/.ssh/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 10
CFG
: > "$D/dotssh/known_hosts"
{ echo "127.0.0.1 localhost"; echo "$NET.1 login"; } > "$D/hosts"
: > "$D/hostfile.tmp"
for i in $(seq 1 "$N"); do
  echo "$NET.$((10 + i)) node$i" >> "$D/hosts"
  echo "node$i" >> "$D/hostfile.tmp"
done

# `ip netns exec` remounts /sys and hides the cgroup mounts, which slurmd needs: replay them.
CG=""
while read -r _dev mnt type opts _rest; do
  case "$mnt" in /sys/fs/cgroup*) ;; *) continue ;; esac
  if [ "$type" = tmpfs ]; then CG+="mount -t tmpfs cgroup_root $mnt; "; continue; fi
  o=$(echo "$opts" | tr , '\n' | grep -vxE 'rw|ro|relatime|nosuid|nodev|noexec|nsdelegate|memory_recursiveprot' | paste -sd, || true)
  case "$o" in name=*) o="none,$o" ;; esac
  CG+="mkdir -p $mnt; mount -t $type ${o:+-o $o} $type $mnt; "
done < /proc/self/mounts
echo "$CG" > "$D/cgroup-mounts.sh"

# The login node: holds the bridge.
ip netns add "$P-hub"
mkdir -p "/etc/netns/$P-hub"
cp "$D/hosts" "/etc/netns/$P-hub/hosts"
ip -n "$P-hub" link set lo up
ip -n "$P-hub" link add br0 type bridge
ip -n "$P-hub" addr add "$NET.1/24" dev br0
ip -n "$P-hub" link set br0 up
ip netns exec "$P-hub" unshare -m -u --propagation private sh -c \
  "hostname login; mkdir -p /root/.ssh; mount --bind '$D/dotssh' /root/.ssh; mount -t tmpfs -o size=$TMP_SIZE tmpfs /tmp; sh '$D/cgroup-mounts.sh' || true; exec sleep infinity" \
  > "$D/hub.log" 2>&1 &
echo $! > "$D/hub.pid"

for i in $(seq 1 "$N"); do
  ns="$P-node$i"; nd="$D/nodes/node$i"; ip4="$NET.$((10 + i))"
  size_var="EZSIM_TMP_SIZE_node$i"; size=${!size_var:-$TMP_SIZE}
  mkdir -p "$nd"
  ip netns add "$ns"
  mkdir -p "/etc/netns/$ns"
  cp "$D/hosts" "/etc/netns/$ns/hosts"
  ip -n "$P-hub" link add "v$i" type veth peer name eth0 netns "$ns"
  ip -n "$P-hub" link set "v$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$ip4/24" dev eth0
  ip -n "$ns" link set eth0 up
  ssh-keygen -q -t ed25519 -N '' -f "$nd/ssh_host_ed25519_key" -C "node$i"
  echo "node$i,$ip4 $(cut -d' ' -f1,2 "$nd/ssh_host_ed25519_key.pub")" >> "$D/dotssh/known_hosts"
  cat > "$nd/sshd_config" <<CFG
ListenAddress $ip4
Port 22
HostKey $nd/ssh_host_ed25519_key
PidFile $nd/sshd.pid
AuthorizedKeysFile $D/dotssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 200:30:400
MaxSessions 200
AcceptEnv LANG LC_* EZPZ_*
SetEnv EZSIM_NODE=node$i
Subsystem sftp internal-sftp
CFG
  ip netns exec "$ns" unshare -m -u --propagation private sh -c \
    "hostname node$i; mkdir -p /root/.ssh; mount --bind '$D/dotssh' /root/.ssh; ${BASHRC}mount -t tmpfs -o size=$size tmpfs /tmp; sh '$D/cgroup-mounts.sh' || true; exec /usr/sbin/sshd -D -e -f '$nd/sshd_config'" \
    > "$nd/sshd.log" 2>&1 &
  echo $! > "$nd/launcher.pid"
done
mv "$D/hostfile.tmp" "$D/hostfile"
for i in $(seq 1 "$N"); do
  for _ in $(seq 1 200); do
    ip netns exec "$P-hub" bash -c "exec 3<>/dev/tcp/$NET.$((10 + i))/22" 2>/dev/null && continue 2
    sleep 0.05
  done
  die "sshd on node$i did not come up (see $D/nodes/node$i/sshd.log)"
done
echo "cluster-sim: $N nodes up; hostfile $D/hostfile"
