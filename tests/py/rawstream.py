"""Test helper: write raw per-process streams (docs/formats.md §2) by hand, so the
finalize step can be tested on exactly known inputs."""

from __future__ import annotations

import struct
from pathlib import Path

MAGIC = 0x31524D48
PROC, MODULE, THREAD, STACK, CALL, FREE, TEND, PEND, SAMPLE, SAMPLER = range(1, 11)
SAMPLE_STREAM = 0x80000000
# sample flags
STORE, ADDR_OK, TIME_NS, BREAKPOINT, REJECTED, NO_MEMOP, LOST = 1, 2, 4, 8, 16, 32, 64
AHEAD, VERIFY_SAME, VERIFY_DIFF = 0x80, 0x40000, 0x80000
# instruction class bits of a sample (struct hmr_sample's iclass)
ATOMIC, SPIN, VECTOR, STRING, CHASE, STRIDE = 1, 2, 4, 8, 16, 32


def why(code: int) -> int:
    """Software sampler: why the sampled instruction gave no address (bits 24..31)."""
    return code << 24


def look(value: int) -> int:
    """Software sampler: look-ahead distance, or why it found nothing (bits 20..23)."""
    return value << 20


def _rec(rtype: int, kind: int, aux: int, body: bytes) -> bytes:
    body += b"\0" * (-(len(body) + 8) % 8)
    return struct.pack("<BBHI", rtype, kind, (len(body) + 8) // 8, aux) + body


class Stream:
    """Records of one stream, written as one chunk."""

    def __init__(self, stream_id: int) -> None:
        self.id = stream_id
        self.recs: list[bytes] = []

    def thread(self, t: int, tid: int, stack: tuple[int, int] = (0, 0)) -> Stream:
        self.recs.append(_rec(THREAD, 0, 0, struct.pack("<QIIQQ", t, tid, 0, *stack)))
        return self

    def stack(self, sid: int, frames: list[tuple[int, int]]) -> Stream:
        packed = b"".join(struct.pack("<Q", (m << 48) | off) for m, off in frames)
        self.recs.append(_rec(STACK, len(frames), sid, packed))
        return self

    def call(self, kind: int, sid: int, t0: int, t1: int, size: int, out: int, inp: int = 0,
             align: int = 0) -> Stream:
        self.recs.append(_rec(CALL, kind, sid, struct.pack("<QQQQQQ", t0, t1, size, align,
                                                            inp, out)))
        return self

    def free(self, t0: int, t1: int, ptr: int) -> Stream:
        self.recs.append(_rec(FREE, 2, 0, struct.pack("<QQQ", t0, t1, ptr)))
        return self

    def sample(self, t: int, ip: int, addr: int, weight: int = 4_000_000, flags: int = ADDR_OK,
               src: int = 3, data_src: int = 0, iclass: int | None = None) -> Stream:
        """A sample record; without iclass in the older, shorter form (no class)."""
        body = struct.pack("<QQQQQ", t, ip, addr, weight, data_src)
        body += struct.pack("<Q", iclass) if iclass is not None else b""
        self.recs.append(_rec(SAMPLE, src, flags, body))
        return self

    def tend(self, t: int) -> Stream:
        self.recs.append(_rec(TEND, 0, 0, struct.pack("<QQQQQ", t, 0, 0, 0, 0)))
        return self


def proc_record(pid: int, t_start: int, min_size: int = 4096, rank: int = -1,
                exe: str = "/bin/app") -> bytes:
    host, cmd = b"testhost", exe.encode() + b"\0"
    body = struct.pack("<IIIiiIQQQQHHHHII", 1, pid, 1, rank, 0, 8, min_size, t_start, 0,
                       t_start, len(host), len(exe), len(cmd), 0, 1, 0)
    return _rec(PROC, 0, 0, body + host + exe.encode() + cmd)


def module_record(mid: int, path: str, base: int, lo: int, hi: int) -> bytes:
    p = path.encode()
    return _rec(MODULE, 0, mid, struct.pack("<QQQII", base, lo, hi, len(p), 0) + p)


def end_record(t: int) -> bytes:
    return _rec(PEND, 0, 0, struct.pack("<QQII", t, t, 0, 0))


def sampler_record(src: int, name: str) -> bytes:
    return _rec(SAMPLER, src, 0, name.encode())


def chunk(stream: int, seq: int, recs: list[bytes], t: int = 0) -> bytes:
    body = b"".join(recs)
    return struct.pack("<IIIIQQ", MAGIC, stream, len(body), seq, t, t) + body


def write(path: Path, proc: list[bytes], streams: list[Stream]) -> None:
    """One process file: the process records, then each stream as one chunk."""
    data = b"".join(chunk(0, i, [r]) for i, r in enumerate(proc))
    data += b"".join(chunk(s.id, 0, s.recs) for s in streams)
    path.write_bytes(data)
