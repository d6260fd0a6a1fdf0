#!/usr/bin/env python3
"""Corrupt one TCP segment on the wire. Run inside a node's network namespace:

    tap_flip.py DEV SOURCE-IP AFTER

Every IPv4 TCP packet that arrives on DEV from SOURCE-IP is redirected (tc mirred) into a tap
device, read here and handed back to the stack through it. The first segment whose payload
goes past AFTER bytes (counted over those packets) has two different 16-bit words of its
payload swapped: its TCP checksum still holds, so TCP delivers the altered bytes and only the
application can notice. Prints "ready" once the redirect is in place and "flipped" once done;
forwards until killed. Remove the redirect first (tc qdisc del dev DEV ingress): without this
process, the packets it redirects are dropped."""
import fcntl, os, struct, subprocess, sys

dev, source, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
TUNSETIFF, IFF_TAP, IFF_NO_PI = 0x400454CA, 0x0002, 0x1000
tap = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(tap, TUNSETIFF, struct.pack("16sH", b"flip0", IFF_TAP | IFF_NO_PI))
subprocess.run(["ip", "link", "set", "flip0", "up"], check=True)
for conf in ("all", "default", "flip0", dev):  # packets for DEV's address come in through flip0
    with open(f"/proc/sys/net/ipv4/conf/{conf}/rp_filter", "w") as f:
        f.write("0")
mac = bytes.fromhex(open("/sys/class/net/flip0/address").read().strip().replace(":", ""))
subprocess.run(["tc", "qdisc", "add", "dev", dev, "ingress"], check=True)
subprocess.run(["tc", "filter", "add", "dev", dev, "parent", "ffff:", "protocol", "ip", "u32",
                "match", "ip", "src", source + "/32", "match", "ip", "protocol", "6", "0xff",
                "action", "mirred", "egress", "redirect", "dev", "flip0"], check=True)
print("ready", flush=True)
seen, flipped = 0, False
while True:
    frame = bytearray(os.read(tap, 65536))
    if len(frame) > 34 and frame[12:14] == b"\x08\x00" and frame[23] == 6:
        tcp = 14 + (frame[14] & 0x0F) * 4
        data = tcp + (frame[tcp + 12] >> 4) * 4
        n = 14 + struct.unpack("!H", frame[16:18])[0] - data
        if not flipped and n >= 4 and seen + n > after and frame[data:data + 2] != frame[data + 2:data + 4]:
            frame[data:data + 2], frame[data + 2:data + 4] = frame[data + 2:data + 4], frame[data:data + 2]
            flipped = True
            print("flipped", flush=True)
        seen += max(n, 0)
    frame[0:6] = mac  # addressed to flip0, or the stack drops it as another host's
    os.write(tap, bytes(frame))
