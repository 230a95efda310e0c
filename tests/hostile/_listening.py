"""Listening TCP sockets of a process, read from /proc (Linux): for the loopback-only checks."""

from __future__ import annotations

import os
import socket
import struct


def listening_addresses(pid: int) -> list[str]:
    """``host:port`` of each TCP socket ``pid`` listens on (IPv4 and IPv6)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open(f"/proc/{pid}/net/{table}") as handle:
            for line in handle.read().splitlines()[1:]:
                parts = line.split()
                if parts[3] != "0A" or parts[9] not in inodes:  # 0A: LISTEN
                    continue
                host_hex, port_hex = parts[1].split(":")
                raw = bytes.fromhex(host_hex)
                if family == socket.AF_INET:
                    host = socket.inet_ntop(family, struct.pack("<I", int.from_bytes(raw, "big")))
                else:
                    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
                    host = socket.inet_ntop(family, b"".join(words))
                found.append(f"{host}:{int(port_hex, 16)}")
    return found


def probe_worker() -> dict[str, list[str]]:
    """A worker for :func:`mlsysim.calibrate.torch_measure.launch`: joins gloo, reports what listens."""
    from mlsysim.calibrate.torch_measure import init_worker

    dist, _, _ = init_worker("gloo", 1)
    try:
        dist.barrier()
        mine = listening_addresses(os.getpid())
        parent = listening_addresses(os.getppid())
        dist.barrier()
        return {"worker": mine, "parent": parent}
    finally:
        dist.destroy_process_group()
