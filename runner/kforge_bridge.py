#!/usr/bin/env python3
# kforge_bridge.py: the PyTorch bridge. The supervisor spawns it for
# KernelBench-format tasks; it speaks the worker protocol (docs/results.md,
# "Worker frames") on stdin/stdout, measures, and never judges.
"""Runs a KernelBench task (Model, get_inputs, get_init_inputs) and a
candidate (a ModelNew file, a compiled kf_entry kernel, or a baseline made
from the task's Model) under kforge's worker protocol.

Three processes (docs/kernelbench.md, "Processes"):

- the judge (this script as the supervisor starts it) makes every input
  and the reference's parameters' values, holds every comparison, hash and
  check, and never runs a model;
- the reference's runner (this script with --runner) imports the task
  only: the candidate's code never runs in it, so it can neither change
  the reference's results nor its time;
- the candidate's runner imports the task and the candidate. It never
  receives the seed: its inputs and parameters come from the judge.

Each runner maps an arena, a memory file the judge passes it alone, where
the judge writes the inputs (and the parameters, once). A runner copies the
inputs to its device, times one call, and replies with its measurement,
the facts only its process can see, and the outputs' bytes after the
reply's frame: the judge compares what the runner sent, which nothing the
runner does later can change. The judge also sees each call from outside
(on the host the runner's CPU time, on CUDA the wall time), for the
supervisor's unaccounted_time rule.

Frames are a 4-byte little-endian length followed by one JSON object.
Requests from the supervisor: load, trial, time, quit. Replies: loaded,
load_error, trial, samples, fault, error. Standard library and torch only.
"""

import builtins
import ctypes
import errno
import gc
import fcntl
import importlib.util
import json
import math
import mmap
import operator
import os
import random
import shutil
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

FRAME_CAP = 16 << 20
MASK64 = (1 << 64) - 1
KB_TOL = 1e-2
ALIGN = 256
# The intra-op threads of every process of the bridge: both sides get the
# same budget, on the same core (docs/kernelbench.md, "Threads").
THREADS = 1
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
BASELINES = ("eager", "compile", "compile_ro", "cudagraph")


def read_frame(f):
    head = f.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    if n > FRAME_CAP:
        raise ValueError("frame of %d bytes exceeds the cap" % n)
    body = f.read(n)
    if len(body) < n:
        return None
    return json.loads(body.decode("utf-8"))


def write_frame(f, obj):
    data = json.dumps(obj, allow_nan=False).encode("utf-8")
    f.write(struct.pack("<I", len(data)) + data)
    f.flush()


# The fields of a Python function object that decide what calling it runs:
# its code, defaults, keyword defaults, closure and globals.
FUNC_FIELDS = ("__code__", "__defaults__", "__kwdefaults__", "__closure__",
               "__globals__")


def func_offsets():
    """{field: byte offset} of FUNC_FIELDS in this interpreter's function
    objects, found in a probe whose fields are all distinct objects: each
    one's address appears once among the object's words. None where that
    does not hold (an interpreter of another layout)."""
    held = object()

    def probe(a=held, *, b=held):
        return held
    size = sys.getsizeof(probe)
    raw = ctypes.string_at(id(probe), size)
    offs = {}
    for name in FUNC_FIELDS:
        word = struct.pack("<Q", id(getattr(probe, name)))
        hits = [k for k in range(0, size - 7, 8) if raw[k:k + 8] == word]
        if len(hits) != 1:
            return None
        offs[name] = hits[0]
    return offs


def anchor_words(funcs):
    """[[address, value, label], ...]: for each (label, function), the words
    of FUNC_FIELDS in its object as they are now, for the judge to read
    again from outside the process (Side.anchors_moved). [] where the
    interpreter's layout is not known (func_offsets)."""
    offs = func_offsets()
    if offs is None or struct.calcsize("P") != 8:
        return []
    out = []
    for label, f in funcs:
        for name, off in offs.items():
            a = id(f) + off
            (v,) = struct.unpack("<Q", ctypes.string_at(a, 8))
            out.append([a, v, "%s (its %s)" % (label, name.strip("_"))])
    return out


def held_regions(sealed, roots=(), limit=20000):
    """[[address, bytes, hex, label], ...]: the item arrays of the tuples the
    Guard checks with (its sealed state, every tuple in it, a tuple's
    tuples; not the labels' list, funcs), of roots' tuples ((label, tuple)
    pairs: serve()'s dispatch tuples) and theirs, and of the names and
    constants of this script's own code objects (what a function's code
    looks up and loads: a name rewritten in place makes it call something
    else), as they are now, for the judge to read from outside the
    process (ctypes can write a tuple's items). [] where a tuple's layout
    is not the expected one (items after a 24-byte head)."""
    out, seen = [], set()
    here = os.path.abspath(__file__)

    def add(label, t, skip=None):
        if id(t) in seen or len(out) >= limit:
            return
        seen.add(id(t))
        if t:
            a, n = id(t) + 24, 8 * len(t)
            raw = ctypes.string_at(a, n)
            if raw != b"".join(struct.pack("<Q", id(v)) for v in t):
                raise ValueError("tuple layout")
            out.append([a, n, raw.hex(), label])
        for v in t:
            if type(v) is tuple and v is not skip:
                add(label, v, skip)

    def code(label, c):
        if id(c) in seen or c.co_filename != here:
            return
        seen.add(id(c))
        add(label + " (its names)", c.co_names)
        add(label + " (its constants)", c.co_consts)
        for k in c.co_consts:
            if type(k) is type(c):
                code(label, k)
    try:
        funcs = dict(sealed)["funcs"]
        add("the Guard's sealed state", sealed, funcs)
        for label, t in roots:
            add(label, t)
        for label, f, c, _, _ in funcs:
            code(label, c)
    except (ValueError, KeyError):
        return []
    return out


def frame_words(frame, names):
    """The words of frame's local variables names ({name: value}) in the
    interpreter's frame, for the judge to read from outside: ctypes
    (PyFrame_LocalsToFast) can rebind a running frame's locals. On CPython
    3.11 and 3.12 only, whose frame object's fourth word (its type the
    second, f_back the third or 0) points at the interpreter's frame: a
    header of at most 80 bytes that points back at the frame object, then
    the locals; each value must appear once there. [] where any of that
    does not hold."""
    if sys.implementation.name != "cpython" or \
            sys.version_info[:2] not in ((3, 11), (3, 12)):
        return []
    raw = ctypes.string_at(id(frame), 32)
    typ, back, inner = struct.unpack_from("<QQQ", raw, 8)
    if typ != id(type(frame)) or back not in (0, id(frame.f_back)) or \
            inner < 4096:
        return []
    span = 80 + 8 * frame.f_code.co_nlocals
    mem = ctypes.string_at(inner, span)
    if struct.pack("<Q", id(frame)) not in [mem[k:k + 8]
                                            for k in range(0, 80, 8)]:
        return []
    out = []
    for name, v in names.items():
        w = struct.pack("<Q", id(v))
        hits = [k for k in range(0, span - 7, 8) if mem[k:k + 8] == w]
        if len(hits) != 1:
            return []
        out.append([inner + hits[0], id(v),
                    "Runner.serve's local %s" % name])
    return out


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class MemoryUnreadable(Exception):
    """The judge may not read a runner's memory at all (not a bad address
    of the runner's: a machine whose policy forbids it)."""


READ_CHUNK = 64 << 10
HUGE_PAGE = 2 << 20
READ_ORDER = random.Random(int.from_bytes(os.urandom(8), "little"))
LIBC = ctypes.CDLL(None, use_errno=True)


def read_memory(pid, regions, buf):
    """Copies regions ([address, bytes] pairs) of process pid's memory, one
    after another, into buf (a bytearray of their total size) with
    process_vm_readv: the copy is this process's work, not the runner's.
    It reads pieces of 64 KiB in an order of its own drawing, so that
    values the runner writes after its reply (from a thread or a signal
    handler) are read before they are all there: where they arrive behind
    the read, the outputs differ from the reference's.
    False where a region is not mapped there (or the process is gone);
    MemoryUnreadable where the kernel refuses the read itself."""
    total = len(buf)
    if total == 0:
        return True
    base = ctypes.addressof((ctypes.c_char * total).from_buffer(buf))
    pieces, off = [], 0
    for a, n in regions:
        for k in range(0, n, READ_CHUNK):
            m = min(READ_CHUNK, n - k)
            pieces.append((a + k, base + off + k, m))
        off += n
    READ_ORDER.shuffle(pieces)
    for k in range(0, len(pieces), 1024):
        batch = pieces[k:k + 1024]
        want = sum(m for _, _, m in batch)
        local = (IOVec * len(batch))(*[IOVec(b, m) for _, b, m in batch])
        remote = (IOVec * len(batch))(*[IOVec(a, m) for a, _, m in batch])
        got = LIBC.process_vm_readv(pid, local, len(batch), remote,
                                    len(batch), 0)
        if got < 0:
            e = ctypes.get_errno()
            if e in (errno.EPERM, errno.EACCES, errno.ENOSYS):
                raise MemoryUnreadable(os.strerror(e))
            return False
        if got != want:
            return False
    return True


# The judge's view of a call ends with a sample of its outputs, not all of
# them (Side.ask; on CUDA the view is wall time): SAMPLE_PIECES pieces of SAMPLE_PIECE bytes at
# places of its own drawing; the whole is read after the view and must agree
# with the sample. Outputs up to SAMPLE_PIECE * SAMPLE_PIECES bytes are read
# whole inside the view, as before.
SAMPLE_PIECE = 4096
SAMPLE_PIECES = 64


def sample_pieces(regions, total):
    """SAMPLE_PIECES pieces ([address, offset in the payload, bytes]) of
    regions (the [address, bytes] pairs of a payload of total bytes),
    each at a place drawn uniformly over the payload (aligned to
    SAMPLE_PIECE, cut at its region's end)."""
    out = []
    for _ in range(SAMPLE_PIECES):
        o = READ_ORDER.randrange(total) // SAMPLE_PIECE * SAMPLE_PIECE
        j, s0 = region_at(regions, o)
        a, n = regions[j]
        out.append([a + o - s0, o, min(SAMPLE_PIECE, s0 + n - o)])
    return out


def region_at(regions, o):
    """(index, payload offset) of the region of regions ([address, bytes]
    pairs, one after another in a payload) that holds payload offset o."""
    s0 = 0
    for j, (_, n) in enumerate(regions):
        if s0 <= o < s0 + n:
            return j, s0
        s0 += n
    raise ValueError("offset %d is past the payload" % o)


def read_pieces(pid, pieces):
    """The bytes of pieces ([address, offset, bytes]) of process pid's
    memory, as one bytes object each, or None where a piece is not mapped
    there; MemoryUnreadable as read_memory."""
    buf = bytearray(sum(m for _, _, m in pieces))
    if not read_memory(pid, [[a, m] for a, _, m in pieces], buf):
        return None
    out, at = [], 0
    for _, _, m in pieces:
        out.append(bytes(buf[at:at + m]))
        at += m
    return out


MESSAGE_CAP = 16 << 10
# What a runner's layout reply shows the judge in its memory (Side.lay_out).
PROBE_BYTES = bytes(range(1, 33))


def said(e, what=None):
    """What a reply says of exception e ("Type: message", after what), cut
    to MESSAGE_CAP characters: a candidate's message of any size still
    fits in a frame."""
    m = "%s: %s" % (type(e).__name__, e)
    if what is not None:
        m = "%s: %s" % (what, m)
    if len(m) > MESSAGE_CAP:
        m = m[:MESSAGE_CAP] + " ... (%d characters in all)" % len(m)
    return m


def jnum(v):
    """A JSON-safe number: non-finite values travel as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def not_dumpable():
    """Neither ptrace nor /proc/PID/mem nor /proc/PID/fd of this process
    is open to another process of the same user (the candidate's)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (OSError, AttributeError):
        pass


def die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def this_cpu():
    """The core this thread runs on, or None."""
    try:
        cpu = LIBC.sched_getcpu()
    except AttributeError:
        return None
    return cpu if cpu >= 0 else None


def pin_here():
    """Pins this process (and the runners it starts) to the core it runs
    on: on the host the judge's cache flush is then the runners'."""
    cpu = this_cpu()
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {cpu})
        except (OSError, ValueError):
            pass


def nbytes(tt, dt, shape):
    n = 1
    for d in shape:
        n *= d
    return n * tt.torch.empty(0, dtype=dt).element_size()


def task_figure(mod, name):
    """A task's own FLOP or byte count (get_flops(), get_bytes()), or
    None: KernelBench's tasks state neither."""
    f = getattr(mod, name, None)
    try:
        v = float(f()) if callable(f) else None
    except Exception:
        return None
    return v if v is not None and math.isfinite(v) and v > 0 else None


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return 0.0
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class KernelError(Exception):
    pass


class Torch:
    """What the judge and the runners share: torch, the device, dtypes,
    poison, hashes and the inputs of get_inputs()."""

    def __init__(self, backend):
        import torch
        self.torch = torch
        torch.set_num_threads(THREADS)
        try:
            torch.set_num_interop_threads(THREADS)
        except RuntimeError:
            pass
        self.cuda = backend == "cuda"
        self.dev = torch.device("cuda" if self.cuda else "cpu")
        self.dtypes = {"float32": torch.float32, "float64": torch.float64,
                       "float16": torch.float16, "bfloat16": torch.bfloat16,
                       "int32": torch.int32, "int64": torch.int64,
                       "int16": torch.int16, "int8": torch.int8,
                       "uint8": torch.uint8, "bool": torch.bool}
        self.names = {v: k for k, v in self.dtypes.items()}

    def seed_all(self, seed):
        self.torch.manual_seed(seed)
        if self.cuda:
            self.torch.cuda.manual_seed(seed)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def flush(self, wait=True):
        """Evicts the caches: a buffer larger than the last-level cache
        is written, outside the timed window. wait=False (CUDA) leaves the
        write queued, so that the device goes from it straight into the
        call: an idle device lowers its clocks (docs/measuring.md)."""
        torch = self.torch
        if not hasattr(self, "flush_buf"):
            n = (256 << 20) if self.cuda else (32 << 20)
            self.flush_buf = torch.empty(n // 4, dtype=torch.int32,
                                         device=self.dev)
        self.flush_buf.zero_()
        if wait:
            self.sync()

    def make_inputs(self, get_inputs, seed, dist):
        """get_inputs() under KernelBench's seeding, on the CPU; dist 1
        reshapes the values of every float input (reshaped()), dist 2 the
        same with a range at least twice as wide."""
        torch = self.torch
        self.seed_all(seed)
        out = []
        for i, x in enumerate(list(get_inputs())):
            if isinstance(x, torch.Tensor):
                x = x.detach().to("cpu")
                if dist in (1, 2) and x.is_floating_point() and \
                        x.numel() > 1:
                    x = self.reshaped(x, mix64(seed, i), dist == 2)
                x = x.contiguous()
            out.append(x)
        return out

    def reshaped(self, x, key, wide=False):
        """x with its values' distribution changed by one odd, strictly
        increasing map of each element, y = sign(x) m s (|x| / m)^p, with m
        the largest magnitude, p drawn log-uniformly from [0.5, 2] and s
        from [0.25, 4] ([2, 4] when wide: values beyond any that
        get_inputs() gives, where a shortcut that holds only inside its
        range shows): tails grow or shrink and the range moves, while
        what get_inputs() built into the tensor stays: zeros, signs, order
        and ties, so symmetric, triangular, sorted or positive inputs stay
        so. A tensor of few distinct values (labels of +-1, masks) is left
        as it is."""
        torch = self.torch
        flat = x.reshape(-1)
        if torch.unique(flat[:65536]).numel() <= 16:
            return x
        r = random.Random(key)
        p = math.exp(r.uniform(math.log(0.5), math.log(2.0)))
        sc = math.exp(r.uniform(math.log(2.0 if wide else 0.25),
                                math.log(4.0)))
        wide = x.to(torch.float64)
        m = float(wide.abs().max())
        if not math.isfinite(m) or m == 0:
            return x
        y = wide.abs().div_(m).pow_(p).mul_(m * sc)
        return torch.copysign(y, wide).to(x.dtype)

    def poison_bits(self, dt):
        """The poison pattern of a dtype, as the signed integer of its
        width: a signalling NaN for floats, 0xa5 bytes for integers."""
        torch = self.torch
        pat = {torch.float32: (torch.int32, 0x7fa5a5a5),
               torch.float64: (torch.int64, 0x7ff4a5a5a5a5a5a5),
               torch.float16: (torch.int16, 0x7da5),
               torch.bfloat16: (torch.int16, 0x7fa5),
               torch.int32: (torch.int32, 0xa5a5a5a5),
               torch.int64: (torch.int64, 0xa5a5a5a5a5a5a5a5),
               torch.int16: (torch.int16, 0xa5a5),
               torch.int8: (torch.int8, 0xa5),
               torch.uint8: (torch.uint8, 0xa5),
               torch.bool: (torch.uint8, 0xa5)}
        it, v = pat[dt]
        bits = {torch.int8: 8, torch.uint8: 8, torch.int16: 16,
                torch.int32: 32, torch.int64: 64}[it]
        if it != torch.uint8 and v >= 1 << (bits - 1):
            v -= 1 << bits
        return it, v

    def poisoned(self, shape, dt):
        t = self.torch.empty(shape, dtype=dt, device=self.dev)
        it, v = self.poison_bits(dt)
        t.view(it).fill_(v)
        return t

    def hash_tensor(self, t):
        torch = self.torch
        b = t.detach().contiguous().reshape(-1).view(torch.uint8)
        n = b.numel()
        pad = (-n) % 8
        if pad:
            b = torch.cat([b, torch.zeros(pad, dtype=torch.uint8,
                                          device=b.device)])
        w = b.view(torch.int64)
        idx = torch.arange(w.numel(), dtype=torch.int64, device=w.device)
        # Each word mixed with its position (splitmix64's constants as
        # signed 64-bit values; torch wraps on overflow).
        k1 = -7046029254386353131  # 0x9e3779b97f4a7c15
        k2 = -4658895280553007687  # 0xbf58476d1ce4e5b9
        x = (w ^ (idx * k1)) * k2
        x = x ^ (x >> 31)
        h = (int(x.sum().item()) ^ n) & MASK64
        return "%016x" % h


class Arena:
    """A memory file shared by the judge and one runner: tensors at fixed
    offsets, laid out once the shapes are known."""

    def __init__(self, tt, fd):
        self.tt = tt
        self.fd = fd
        self.mm = None

    def map(self, size):
        if self.mm is None:
            self.mm = mmap.mmap(self.fd, max(size, ALIGN))

    def view(self, off, dtype, shape):
        torch = self.tt.torch
        n = 1
        for d in shape:
            n *= d
        nbytes = n * torch.empty(0, dtype=dtype).element_size()
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        u8 = torch.frombuffer(self.mm, dtype=torch.uint8, count=nbytes,
                              offset=off)
        return u8.view(dtype).reshape(shape)


def layout(tt, specs, start):
    """Offsets for (name, dtype name, shape) specs from start; returns the
    entries and the end."""
    torch = tt.torch
    out, off = [], start
    for name, dt, shape in specs:
        n = 1
        for d in shape:
            n *= d
        size = n * torch.empty(0, dtype=tt.dtypes[dt]).element_size()
        out.append({"name": name, "dtype": dt, "shape": list(shape),
                    "off": off})
        off += (size + ALIGN - 1) // ALIGN * ALIGN
    return out, off


def watch_builds():
    """Wraps torch.utils.cpp_extension's load_inline and load so that each
    build's outcome is recorded, while the candidate sees them as PyTorch
    documents them: the same arguments, results and exceptions (a build
    that fails still raises; a candidate that catches it and falls back to
    PyTorch is told apart in the report, not changed). Returns the list the
    records go to: {"name", "ok", "seconds", "error"}."""
    import functools
    import torch.utils.cpp_extension as ce
    builds = []

    def wrap(fn):
        @functools.wraps(fn)
        def watched(*a, **k):
            name = k.get("name", a[0] if a else "?")
            t0 = time.perf_counter()
            key = failed_call_key(fn, a, k)
            before = failed_call(key)
            if before is not None:
                builds.append({"name": str(name), "ok": False,
                               "seconds": time.perf_counter() - t0,
                               "error": before[:4096], "cached": True})
                raise RuntimeError(
                    "not built again: this build failed before with the "
                    "same sources, options and toolchain (kforge's record "
                    "of failed builds): " + before)
            try:
                r = fn(*a, **k)
            except BaseException as e:
                builds.append({"name": str(name), "ok": False,
                               "seconds": time.perf_counter() - t0,
                               "error": said(e)[:4096]})
                if isinstance(e, Exception):
                    remember_failed_call(key, said(e))
                raise
            builds.append({"name": str(name), "ok": True,
                           "seconds": time.perf_counter() - t0})
            CUSTOM.built(fn, r, a, k)
            return r
        return watched
    ce.load_inline = wrap(ce.load_inline)
    ce.load = wrap(ce.load)
    return builds


class CustomCode:
    """The candidate's own native code, for --require-custom-kernel's look
    at what its forward calls (raw for the judge: judge.c,
    kf_judge_custom_calls): the functions of the extensions it built
    (load_inline, load), the operators their sources register
    (TORCH_LIBRARY), ctypes functions of libraries it loaded by path
    outside the system's and Python's directories, and Triton kernels it
    launches. Counted in one untimed call (probe), not in timed ones."""

    def __init__(self):
        self.ext = {}      # id(function) -> extension name
        self.keep = []     # the functions, so that their ids stay theirs
        self.ns = set()    # operator namespaces the builds' sources define
        self.libs = []     # ctypes libraries loaded by path
        self.classes = {}  # id(class of an extension) -> extension name

    def built(self, fn, mod, a, k):
        import inspect
        import re
        try:
            ba = inspect.signature(fn).bind(*a, **k)
            args = ba.arguments
        except (TypeError, ValueError):
            args = {}
        name = str(args.get("name", "?"))
        if mod is not None:
            for attr in dir(mod):
                obj = getattr(mod, attr, None)
                if isinstance(obj, type):
                    # A class of the extension's (pybind11): calls of its
                    # methods count (CustomCode.probe, by the type of the
                    # method's self).
                    self.classes[id(obj)] = name
                    self.keep.append(obj)
                    # Its methods as the call sees them (pybind11 wraps
                    # each function in an instancemethod).
                    for v in list(vars(obj).values()):
                        f = getattr(v, "__func__", v)
                        if callable(f) and not isinstance(f, type):
                            self.ext[id(f)] = name
                            self.keep.append(f)
                elif callable(obj) and not attr.startswith("__"):
                    self.ext[id(obj)] = name
                    self.keep.append(obj)
        texts = []
        for key in ("cpp_sources", "cuda_sources", "sycl_sources"):
            v = args.get(key)
            texts.extend([v] if isinstance(v, str) else list(v or []))
        src = args.get("sources")
        for path in ([src] if isinstance(src, str) else list(src or [])):
            try:
                with open(path, errors="replace") as f:
                    texts.append(f.read())
            except (OSError, TypeError):
                pass
        for t in texts:
            if isinstance(t, str):
                self.ns.update(re.findall(
                    r"TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)", t))

    def watch_load_library(self):
        """torch.ops.load_library of a library the candidate built by
        itself: the operator namespaces it registers (the schemas that
        were not there before) are its own."""
        import torch
        ops = getattr(torch, "ops", None)
        load = getattr(ops, "load_library", None)
        schemas = getattr(torch._C, "_jit_get_all_schemas", None)
        if load is None or schemas is None:
            return
        mine = self

        def names():
            return {str(x.name) for x in schemas()}

        def watched(path, *a, **k):
            before = names()
            r = load(path, *a, **k)
            for n in names() - before:
                mine.ns.add(n.split("::")[0])
            return r
        ops.load_library = watched

    def watch_ctypes(self):
        """Records the libraries the candidate loads through ctypes by a
        path that is not the system's, Python's or torch's."""
        cdll = ctypes.CDLL
        init = cdll.__init__
        mine = self

        def watched(lib, name, *a, **k):
            init(lib, name, *a, **k)
            if isinstance(name, (str, bytes, os.PathLike)):
                path = os.fsdecode(name)
                if "/" in path and not system_path(path):
                    mine.libs.append(lib)
        cdll.__init__ = watched

    def probe(self, fn, *ins):
        """fn(*ins) with its calls into the candidate's code counted."""
        counts = {"extension": 0, "operator": 0, "ctypes": 0, "triton": 0}
        names = set()
        ext, ns, classes = self.ext, self.ns, self.classes
        jit = os.path.join("triton", "runtime", "jit.py")
        ops = set()
        try:
            import torch._ops as to
            for cls in ("OpOverloadPacket", "OpOverload"):
                c = getattr(to, cls, None)
                f = getattr(c, "__call__", None) if c else None
                if getattr(f, "__code__", None) is not None:
                    ops.add(f.__code__)
        except ImportError:
            pass

        def prof(frame, event, arg):
            if event == "c_call":
                n = ext.get(id(arg))
                if n is None:
                    n = classes.get(id(type(getattr(arg, "__self__", None))))
                if n is not None:
                    counts["extension"] += 1
                    names.add(n)
            elif event == "call":
                co = frame.f_code
                if co in ops:
                    op = frame.f_locals.get("self")
                    q = getattr(op, "_qualified_op_name", None) or \
                        getattr(op, "_name", "")
                    if str(q).split("::")[0] in ns:
                        counts["operator"] += 1
                        names.add(str(q))
                elif co.co_name == "run" and co.co_filename.endswith(jit) \
                        and system_path(co.co_filename):
                    counts["triton"] += 1
                    names.add("triton")

        def counted(f, *a, **k):
            counts["ctypes"] += 1
            return ctypes._CFuncPtr.__call__(f, *a, **k)
        libs = list(self.libs)
        for lib in libs:
            lib._FuncPtr.__call__ = counted
        sys.setprofile(prof)
        try:
            r = fn(*ins)
        finally:
            sys.setprofile(None)
            for lib in libs:
                try:
                    del lib._FuncPtr.__call__
                except AttributeError:
                    pass
        return r, dict(counts, names=sorted(names))


def system_roots():
    roots = {"/usr/", "/lib/", "/lib64/", "/lib32/"}
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        roots.add(os.path.join(os.path.realpath(p), ""))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            roots.add(os.path.join(os.path.realpath(p), ""))
    return tuple(sorted(roots))


# Taken when the bridge starts, before any candidate runs: a candidate that
# adds a ".../site-packages" of its own to sys.path does not make its files
# the system's.
SYSTEM_ROOTS = system_roots()


def system_path(path):
    """A library file of the system, of Python or of its packages (torch's
    included): not the candidate's own code."""
    real = os.path.realpath(path)
    return any(real.startswith(r) for r in SYSTEM_ROOTS)


CUSTOM = CustomCode()


FAILED_CALLS = "kforge-failed-calls"


def failed_call_key(fn, a, k):
    """What one load_inline call's outcome depends on: its arguments (all
    but verbose) and the toolchain. None where its sources are not all in
    the arguments (load's files, extra include paths: what they hold may
    change), so that such a build is always run."""
    import hashlib
    import inspect
    if getattr(fn, "__name__", "") != "load_inline":
        return None
    try:
        ba = inspect.signature(fn).bind(*a, **k)
        ba.apply_defaults()
        args = {n: v for n, v in ba.arguments.items() if n != "verbose"}
        if args.get("extra_include_paths"):
            return None
        blob = json.dumps(args, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return None
    h = hashlib.sha256(toolchain_key().encode())
    h.update(blob.encode())
    return h.hexdigest()


def failed_call_path(key):
    d = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not key or not d:
        return None
    return os.path.join(d, FAILED_CALLS, key + ".json")


def failed_call(key):
    """The message of a load_inline call that failed before with the same
    key (failed_call_key), or None."""
    p = failed_call_path(key)
    if not p:
        return None
    try:
        with open(p) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    return rec.get("message") if isinstance(rec, dict) and \
        isinstance(rec.get("message"), str) else None


def transient_failure(message):
    """A build that failed for want of the machine's resources (a compiler
    killed, a full disk, no memory), which another try may not meet: not
    remembered as failed."""
    return any(m in message for m in (
        "Killed signal", "signal terminated", "No space left",
        "Cannot allocate memory", "out of memory", "Resource temporarily"))


def remember_failed_call(key, message):
    p = failed_call_path(key)
    if not p or transient_failure(message):
        return
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p + ".tmp", "w") as f:
            json.dump({"message": message[:16384]}, f)
        os.replace(p + ".tmp", p)
    except OSError:
        pass


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError("%s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def type_name(x):
    """The qualified name of x's type, read without running any of the
    type's own code."""
    t = type(x)
    return "%s.%s" % (type.__getattribute__(t, "__module__"),
                      type.__getattribute__(t, "__qualname__"))


def plain_types(torch):
    """The exact types of a plain output: torch.Tensor, and torch's own
    nn.Parameter (a model may return a parameter, as the reference may).
    Their methods are torch's, so that calling them runs none of a
    candidate's code."""
    return (torch.Tensor, torch.nn.Parameter)


def plain_outputs(torch, r, dev):
    """A call's result as a list of tensors, and those that are not plain
    dense tensors of the device ([{index, type}]). Only exact types are
    tested, so that none of the candidate's code (a tensor subclass's
    __torch_function__ or __torch_dispatch__, a lazy sequence) runs
    outside the timed call: a plain torch.Tensor holds its values when the
    call returns (plain_types)."""
    plain = plain_types(torch)
    items = list(r) if type(r) in (tuple, list) else [r]
    bad = []
    for j, y in enumerate(items):
        if type(y) not in plain:
            bad.append({"index": j, "type": type_name(y)})
        elif y.layout != torch.strided or y.is_quantized or \
                y.device.type != dev.type:
            bad.append({"index": j, "type": "torch.Tensor (layout %s, "
                        "device %s%s)" % (str(y.layout), str(y.device),
                                          ", quantized" if y.is_quantized
                                          else "")})
    return items, bad


def dense_outputs(torch, r):
    """r with each plain strided tensor that is not contiguous made so,
    inside the call's timing: the judge reads dense outputs, and the copy
    a strided result needs is its call's work, not its runner's (outside
    the timing it was read as time the candidate hid: 3.5 ms for a
    transposed 12 MiB output). Only exact plain types are touched, so that
    none of a candidate's code runs here (plain_types)."""
    plain = plain_types(torch)

    def one(y):
        if type(y) in plain and y.layout == torch.strided and \
                not y.is_contiguous():
            return y.contiguous()
        return y
    if type(r) in (tuple, list):
        return type(r)(one(y) for y in r)
    return one(r)


def storage_range(t):
    """[address, bytes] of the storage t views ([0, 0] when empty)."""
    if t.numel() == 0:
        return [0, 0]
    try:
        s = t.untyped_storage()
    except AttributeError:
        s = t.storage()
    return [s.data_ptr(), s.nbytes()]


def overlaps(a, b):
    return a[1] > 0 and b[1] > 0 and a[0] < b[0] + b[1] and \
        b[0] < a[0] + a[1]


def mapped_slots(pid, inode, regions, slots):
    """Which slots of a memfd (inode; slots: [file offset, bytes] pairs)
    the memory at regions ([address, bytes] pairs) of process pid maps,
    read from /proc/PID/maps, outside the process: [(region index, slot
    index)]. An output that maps an input's own pages a second time (an
    mremap of the arena, a second mmap of its memfd) is at an address of
    its own, so comparing addresses does not see it; the pages are the
    same, and the "output" follows every new input without being
    written."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            text = f.read()
    except OSError:
        return []
    key = " %d " % inode
    if key not in text:
        return []
    out = []
    for line in text.splitlines():
        if key not in line:
            continue
        part = line.split()
        if len(part) < 5 or part[4] != str(inode):
            continue
        lo, hi = (int(x, 16) for x in part[0].split("-"))
        base = int(part[2], 16)
        for j, (a, n) in enumerate(regions):
            s0, s1 = max(a, lo), min(a + n, hi)
            if n <= 0 or s0 >= s1:
                continue
            mapped = [base + (s0 - lo), s1 - s0]
            for k, slot in enumerate(slots):
                if overlaps(mapped, slot) and (j, k) not in out:
                    out.append((j, k))
    return out


def dense_cpu(t, dt=None):
    """t's values (as dt) in a dense row-major tensor in host memory: t
    itself where it is one already, else a copy."""
    t = t.detach()
    if dt is not None and t.dtype != dt:
        t = t.to(dt)
    if t.device.type != "cpu":
        t = t.to("cpu")
    return t if t.is_contiguous() else t.contiguous()


def regions_of(ts):
    """[address, bytes] of dense host tensors, for the judge to read."""
    return [[t.data_ptr(), t.numel() * t.element_size()] if t.numel()
            else [0, 0] for t in ts]


def randomize(torch, model, seed):
    """Draws every floating parameter and buffer of the reference's model
    at random from the seed, so that a default init (LayerNorm's weight 1
    and bias 0, BatchNorm's running statistics) cannot be assumed: a
    tensor whose values are all positive (norm weights, running_var) is
    multiplied elementwise by U(0.5, 1.5), so it stays positive; any other
    gets s * N(0, 1) added, s its standard deviation, or 0.5 where it is
    constant (biases at zero, running_mean). Integer tensors, and buffers
    that are masks (two distinct values, or any non-finite one), are
    kept."""
    g = torch.Generator().manual_seed((seed * 0x9E3779B1 + 0x5EED) %
                                      (1 << 63))
    params = {n for n, _ in model.named_parameters()}
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if not t.is_floating_point() or t.numel() == 0:
                continue
            d = t.detach().to("cpu", torch.float64)
            if name not in params and (
                    not bool(torch.isfinite(d).all()) or
                    torch.unique(d).numel() == 2):
                continue
            if bool((d > 0).all()):
                new = d * (0.5 + torch.rand(d.shape, generator=g,
                                            dtype=torch.float64))
            else:
                s = float(d.std()) if d.numel() > 1 else 0.0
                if not s > 0:
                    s = 0.5
                new = d + s * torch.randn(d.shape, generator=g,
                                          dtype=torch.float64)
            t.copy_(new.to(t.dtype))


def os_threads(pid):
    """The number of threads of process pid (/proc/PID/status), or -1."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return -1


def runner_pid(info_fd, fallback):
    """(init, runner): the pids, as this process sees them, of the
    namespace's init, which bwrap writes to --info-fd ({"child-pid": N}),
    and of the runner, its child. fallback for either when bwrap said
    nothing or the runner did not appear within 10 s."""
    buf = b""
    init = None
    while init is None:
        try:
            init = int(json.loads(buf.decode())["child-pid"])
        except (ValueError, KeyError, UnicodeDecodeError):
            chunk = os.read(info_fd, 4096)
            if not chunk:
                return fallback, fallback
            buf += chunk
    for _ in range(10000):
        try:
            with open("/proc/%d/task/%d/children" % (init, init)) as f:
                kids = f.read().split()
        except OSError:
            return init, fallback
        if kids:
            return init, int(kids[0])
        time.sleep(0.001)
    return init, fallback


def process_tree(pid):
    """pid and every process below it, read from /proc (each thread's
    children), from outside the processes themselves."""
    out, pending = [], [pid]
    while pending and len(out) < 4096:
        p = pending.pop()
        out.append(p)
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    pending += [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                pass
    return out


CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_ticks(pid):
    """The CPU time, in clock ticks, of pid and every process below it
    (their own and that of the children they waited for), and whether any
    of them is running or waiting for a CPU (state R)."""
    ticks, runnable = 0, False
    for p in process_tree(pid):
        try:
            with open("/proc/%d/stat" % p) as f:
                st = f.read()
            fields = st[st.rindex(")") + 2:].split()
            runnable = runnable or fields[0] == "R"
            ticks += sum(int(fields[k]) for k in (11, 12, 13, 14))
        except (OSError, ValueError, IndexError):
            pass
    return ticks, runnable


def children_cpu_ns(pid):
    """The CPU time of process pid's children that it has waited for
    (cutime + cstime of /proc/PID/stat), in ns; 0 when unreadable."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
        fields = st[st.rindex(")") + 2:].split()
        return (int(fields[13]) + int(fields[14])) * 1000000000 // CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0


def cpu_clock(pid):
    """The clock id of process pid's CPU time (clock_getcpuclockid), or
    None where the system gives none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        c = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(c)) == 0:
            return c.value
    except (OSError, AttributeError):
        pass
    return None


def mix64(*xs):
    """A 64-bit mix of integers (splitmix64's finaliser over each)."""
    h = 0
    for x in xs:
        h = (h ^ (x & MASK64)) * 0xbf58476d1ce4e5b9 & MASK64
        h = (h ^ (h >> 31)) * 0x94d049bb133111eb & MASK64
        h ^= h >> 29
    return h


def as_outputs(torch, r):
    items = list(r) if isinstance(r, (tuple, list)) else [r]
    return [x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
            for x in items]


# -- the runners ------------------------------------------------------------


class KernelModel:
    """A kforge candidate (kf_entry, include/kforge/kernel.h) called like a
    model. Its inputs are the tensors get_inputs() returns, in order, then
    the reference model's state_dict() tensors (parameters and buffers), in
    order; its outputs are the reference's, allocated here and poisoned
    before every call."""

    def __init__(self, tt, so_path, out_like):
        self.tt = tt
        self.lib = ctypes.CDLL(so_path)
        self.fn = self.lib.kf_entry
        self.fn.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        # The reference's state_dict() tensors, which the judge hands
        # over after loading (Runner.import_state).
        self.params = []
        self.out_like = out_like

    def describe(self, t, keep):
        torch = self.tt.torch
        codes = {torch.float32: (2, 32), torch.float64: (2, 64),
                 torch.float16: (2, 16), torch.bfloat16: (4, 16),
                 torch.int32: (0, 32), torch.int64: (0, 64),
                 torch.int16: (0, 16), torch.int8: (0, 8),
                 torch.uint8: (1, 8), torch.bool: (1, 8)}
        if t.dtype not in codes:
            raise KernelError("no DLPack type for %s" % t.dtype)
        code, bits = codes[t.dtype]
        shape = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
        keep.append(shape)
        d = DLTensor()
        d.data = t.data_ptr()
        d.device = DLDevice(2 if t.is_cuda else 1, t.device.index or 0)
        d.ndim = t.dim()
        d.dtype = DLDataType(code, bits, 1)
        d.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        d.strides = None
        d.byte_offset = 0
        return d

    def __call__(self, *ins):
        torch = self.tt.torch
        tens = [x.contiguous() for x in ins
                if isinstance(x, torch.Tensor)] + self.params
        outs = [self.tt.poisoned(shape, dt) for shape, dt in self.out_like]
        keep = []
        arr_in = (DLTensor * max(len(tens), 1))(
            *[self.describe(t, keep) for t in tens])
        arr_out = (DLTensor * max(len(outs), 1))(
            *[self.describe(t, keep) for t in outs])
        stream = torch.cuda.current_stream().cuda_stream \
            if self.tt.cuda else None
        rc = self.fn(arr_in, len(tens), arr_out, len(outs), stream)
        if rc != 0:
            raise KernelError("kf_entry returned %d" % rc)
        return outs


def entry_of(torch, model, who):
    """What each call of a side calls: the model's forward, bound once at
    load, on both sides alike. nn.Module.__call__ (hook dispatch, a few
    microseconds of Python a call) is not run on either side: a ModelNew
    that skipped it (a plain class, or __call__ replaced) while the
    reference paid it was 1.16-1.27x faster on 1_ReLU doing the
    reference's own torch.relu. Hooks are therefore not run; neither is
    __call__ of ModelNew's own class."""
    f = getattr(model, "forward", None)
    unimpl = getattr(torch.nn.Module, "forward", None)
    if f is None or not callable(f) or \
            getattr(f, "__func__", None) is unimpl:
        raise AttributeError(
            "%s defines no forward: kforge calls forward(*inputs) on both "
            "sides, as KernelBench's nn.Module does through __call__ (a "
            "__call__ of its own is not called)" % who)
    return f


class GraphModel:
    """The cudagraph baseline: the model's forward captured once in a CUDA
    graph on static input buffers, replayed on each call after the inputs
    are copied in (the copy is part of the call, as it would be for a user
    whose inputs change)."""

    def __init__(self, tt, model):
        self.tt = tt
        self.model = model
        self.graph = None

    def capture(self, ins):
        torch = self.tt.torch
        self.static_in = [x.clone() if isinstance(x, torch.Tensor) else x
                          for x in ins]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), torch.no_grad():
            for _ in range(3):
                self.model(*self.static_in)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self.static_out = as_outputs(torch, self.model(*self.static_in))
        torch.cuda.synchronize()

    def __call__(self, *ins):
        torch = self.tt.torch
        if self.graph is None:
            self.capture(ins)
        for s, x in zip(self.static_in, ins):
            if isinstance(s, torch.Tensor):
                s.copy_(x)
        self.graph.replay()
        return self.static_out


# -- no new processes once loaded ---------------------------------------------

# The judge's outside view of a runner is its process's CPU clock: work in a
# process of its own (a fork, a raw clone without CLONE_THREAD) would escape
# it (a forked helper doing the matmul gave 11.6x). Once the candidate is
# loaded (load_inline's compiler has run and exited), its runner forbids new
# processes to all its threads with a seccomp filter. The candidate's code
# runs in that process and could undo what it does there, so the judge
# also looks from outside (Side.outside): the processes in the sandbox, and
# the CPU time of those its runner or init waited for after the load.
_SECCOMP_ARCH = {"x86_64": (0xC000003E, {"fork": 57, "vfork": 58, "clone": 56,
                                         "clone3": 435, "shmget": 29,
                                         "msgget": 68}),
                 "aarch64": (0xC00000B7, {"clone": 220, "clone3": 435,
                                          "shmget": 194, "msgget": 186})}


def _bpf(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)


def process_filter(action, flags):
    """Installs a seccomp filter under which fork, vfork and clone without
    CLONE_THREAD get action (a SECCOMP_RET_ value), clone3 fails with
    ENOSYS (so that the C library falls back to clone, whose flags a filter
    can read), System V shared memory and message queues fail with EPERM
    (their memory is the kernel's, held by the runner's IPC namespace
    until it ends, and no limit counts it) and system calls of any other
    ABI are refused; threads go on through clone. flags are seccomp(2)'s.
    Returns what seccomp returned (0, or a listener's descriptor); raises
    OSError with why it could not."""
    machine = os.uname().machine
    if machine not in _SECCOMP_ARCH:
        raise OSError("no seccomp filter for %s" % machine)
    arch, nr = _SECCOMP_ARCH[machine]
    LD, JEQ, JSET, JGE, RET = 0x20, 0x15, 0x45, 0x35, 0x06
    ALLOW, ERRNO, ENOSYS = 0x7FFF0000, 0x00050000, 38
    prog = [_bpf(LD, 0, 0, 4),                      # arch
            _bpf(JEQ, 1, 0, arch),
            _bpf(RET, 0, 0, ERRNO | ENOSYS),
            _bpf(LD, 0, 0, 0)]                      # nr
    if machine == "x86_64":                          # the x32 ABI
        prog += [_bpf(JGE, 0, 1, 0x40000000), _bpf(RET, 0, 0, ERRNO | ENOSYS)]
    for name in ("fork", "vfork"):
        if name in nr:
            prog += [_bpf(JEQ, 0, 1, nr[name]), _bpf(RET, 0, 0, action)]
    for name in ("shmget", "msgget"):
        prog += [_bpf(JEQ, 0, 1, nr[name]), _bpf(RET, 0, 0, ERRNO | 1)]
    prog += [_bpf(JEQ, 0, 1, nr["clone3"]), _bpf(RET, 0, 0, ERRNO | ENOSYS),
             _bpf(JEQ, 0, 3, nr["clone"]),
             _bpf(LD, 0, 0, 16),                    # clone's flags, low word
             _bpf(JSET, 1, 0, 0x00010000),          # CLONE_THREAD
             _bpf(RET, 0, 0, action),
             _bpf(RET, 0, 0, ALLOW)]
    code = b"".join(prog)
    buf = ctypes.create_string_buffer(code, len(code))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fp = Fprog(len(prog), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0):                  # PR_SET_NO_NEW_PRIVS
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS): %s" %
                      os.strerror(ctypes.get_errno()))
    sys_seccomp = 317 if machine == "x86_64" else 277
    r = libc.syscall(sys_seccomp, 1, flags, ctypes.byref(fp))
    if r < 0:
        raise OSError("seccomp: %s" % os.strerror(ctypes.get_errno()))
    return r


def processes_by_leave(sock_fd):
    """Before any code of the task's or the candidate's runs: installs, for
    every thread of this process and of all it starts, the process filter
    with fork, vfork and clone without CLONE_THREAD waiting for the judge's
    leave (a seccomp user notification), and sends the filter's listener
    to the judge over sock_fd, keeping no copy. The judge gives leave
    while the candidate loads (its builds start compilers) and refuses it
    (EPERM) from the end of the load on, a decision made in the judge's
    process, which no code in this one can reach. Returns None, or why it
    could not."""
    sock = socket.socket(fileno=sock_fd)
    try:
        # SECCOMP_RET_USER_NOTIF; NEW_LISTENER, TSYNC, TSYNC_ESRCH.
        fd = process_filter(0x7FC00000, 8 | 1 | 16)
        try:
            socket.send_fds(sock, [b"n"], [fd])
        finally:
            os.close(fd)
        return None
    except OSError as e:
        try:
            sock.sendall(b"e" + str(e).encode()[:400])
        except OSError:
            pass
        return str(e)
    finally:
        sock.close()


# The most processes a runner's sandbox may start while its candidate loads
# (its load_inline builds: ninja, the compilers and their passes, some ten a
# CUDA source, some thirty a typical extension): past it fork fails with
# EAGAIN, as past RLIMIT_NPROC, which a user namespace's root cannot be held
# to. A fork bomb at import could otherwise take every pid of the machine
# while the load lasts. Each start is a round trip to the judge's thread
# (20-80 ms with torch loaded, on two busy cores), so the cap also bounds
# the time such a bomb takes.
LOAD_PROCESS_CAP = 1024


class Leave:
    """The judge's end of a runner's filter (processes_by_leave): a thread
    that answers each of its requests to start a process, yes until
    refuse() or LOAD_PROCESS_CAP starts (EAGAIN), and no (EPERM) after
    refuse()."""

    RECV, SEND = 0xC0502100, 0xC0182101  # SECCOMP_IOCTL_NOTIF_RECV, _SEND

    def __init__(self, sock):
        self.sock = sock
        self.fd = None
        self.why = None      # why the runner has no filter, if it said so
        self.started = 0     # processes it let start
        self.capped = False  # whether it refused one for LOAD_PROCESS_CAP
        self.ready = threading.Event()
        self.no = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def refuse(self):
        self.no.set()

    def serve(self):
        try:
            msg, fds, _, _ = socket.recv_fds(self.sock, 512, 1)
        except OSError as e:
            msg, fds = b"e" + str(e).encode(), []
        finally:
            self.sock.close()
        if not fds:
            self.why = (msg[1:].decode(errors="replace") if msg else
                        "the runner ended before it sent its filter")
            self.ready.set()
            return
        self.fd = fds[0]
        self.ready.set()
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        try:
            while True:
                ev = poll.poll()
                if any(e & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                       for _, e in ev):
                    return
                req = bytearray(80)
                try:
                    fcntl.ioctl(self.fd, self.RECV, req, True)
                except OSError:
                    continue  # the asking process is gone
                nid = struct.unpack_from("=Q", req, 0)[0]
                if self.no.is_set():
                    rep = struct.pack("=QqiI", nid, 0, -1, 0)  # -EPERM
                elif self.started >= LOAD_PROCESS_CAP:
                    # As fork(2) past RLIMIT_NPROC: -EAGAIN.
                    self.capped = True
                    rep = struct.pack("=QqiI", nid, 0, -11, 0)
                else:
                    self.started += 1
                    rep = struct.pack("=QqiI", nid, 0, 0, 1)  # CONTINUE
                try:
                    fcntl.ioctl(self.fd, self.SEND, rep)
                except OSError:
                    pass
        finally:
            os.close(self.fd)


def forbid_processes():
    """Installs, for every thread of this process, the process filter with
    fork, vfork and clone without CLONE_THREAD failing with EPERM (a second
    wall behind the judge's refusal). Returns None, or why it could not."""
    try:
        # SECCOMP_RET_ERRNO | EPERM; SECCOMP_FILTER_FLAG_TSYNC.
        r = process_filter(0x00050000 | 1, 1)
    except OSError as e:
        return str(e)
    if r != 0:
        return "seccomp: thread %d could not take the filter" % r
    return None


class Guard:
    """The functions a candidate's runner times, synchronises, copies and
    compares with, as they were before the candidate's code ran: the
    callables of the time module, torch.cuda, torch._C and this script's
    own namespace, and the attributes of torch.Tensor, torch.cuda.Event
    and torch.cuda.Stream (and of this script's classes), looked up as
    Python looks them up (a name set on a class shadows its base's); each
    Python function's code, defaults and closure too (a function whose
    __code__ was swapped is the same object); the operators the runner
    flushes and copies with as torch's dispatcher has them (a torch.library
    kernel registered over aten::zero_ makes the flush a no-op); torch's
    function and dispatch modes (none active); and, once watch() names
    them, the runner's own objects (no method shadowed on the object, the
    flush buffer the same). changed() names each that differs: a candidate
    that replaces one (Event.elapsed_time made to report less,
    torch.cuda.synchronize made to skip a stream, Tensor.copy_ made to wait
    for work the timing did not see) is reported (facts "patched"; judge.c:
    tampering). What a candidate does below Python (ctypes into the
    interpreter's memory) this does not see; the judge's own view of each
    call from outside the process (the unaccounted-time rule) bounds what
    that could gain."""

    OPS = ("aten::zero_", "aten::copy_")

    def __init__(self, torch):
        here = sys.modules[__name__]
        self.torch = torch
        # Of torch's own namespace, the names this script's code calls
        # (torch.X in its code, not its comments or strings: a candidate
        # may change torch.relu in its own process, which the runner never
        # calls); of torch._C, the device's functions (torch.cuda's call
        # them).
        used = set()
        try:
            import tokenize
            with open(__file__, "rb") as f:
                toks = [t.string for t in tokenize.tokenize(f.readline)
                        if t.type in (tokenize.NAME, tokenize.OP)]
            for a, b, c in zip(toks, toks[1:], toks[2:]):
                if a == "torch" and b == ".":
                    used.add(c)
        except (OSError, SyntaxError, tokenize.TokenError):
            pass
        # (label, module, which names, every value or callables only,
        # names added seen too). Every value of this script's namespace
        # (a module it calls through, json or time, rebound to a proxy is
        # as much a replaced function as a function is), and no name added
        # to it (a global named len shadows the builtin); every value of
        # json's and struct's modules (json's own decoder rebound), and of
        # the torch.X this script names (torch.cuda rebound to a proxy).
        mods = [("time", time, None, False, False),
                ("torch", torch, used.__contains__, True, False),
                ("builtins", builtins, GUARD_TOOLS.__contains__, False,
                 False),
                ("operator", operator, GUARD_TOOLS.__contains__, False,
                 False),
                ("torch._C", torch._C, lambda k: "cuda" in k.lower(), False,
                 False),
                ("kforge_bridge", here, None, True, True),
                ("json", json, None, True, False),
                ("json.encoder", json.encoder, None, True, False),
                ("json.decoder", json.decoder, None, True, False),
                ("json.scanner", json.scanner, None, True, False),
                ("struct", struct, None, True, False)]
        if hasattr(torch, "cuda"):
            mods.append(("torch.cuda", torch.cuda, None, False, False))
        funcs = []
        out = []
        for label, m, keep, every, closed in mods:
            d = vars(m)
            items = tuple((k, v) for k, v in list(d.items())
                          if (every or callable(v)) and
                          (keep is None or keep(k)))
            out.append((label, d, tuple(k for k, _ in items),
                        tuple(v for _, v in items),
                        len(d) if closed else -1))
            funcs += [("%s.%s" % (label, k), v) for k, v in items
                      if callable(v)]
        self.mods = tuple(out)
        classes = [("torch.Tensor", torch.Tensor)]
        for name in ("Event", "Stream"):
            c = getattr(getattr(torch, "cuda", None), name, None)
            if isinstance(c, type):
                classes.append(("torch.cuda." + name, c))
        for k, v in list(vars(here).items()):
            if isinstance(v, type) and v.__module__ == here.__name__:
                classes.append(("kforge_bridge." + k, v))
        out = []
        for label, c in classes:
            # Every class of the MRO that Python code can change: a name
            # set on any of them is found before the C base's.
            # (heap types; a static type's attributes cannot be set).
            dicts = tuple(vars(k) for k in c.__mro__
                          if k.__flags__ & (1 << 9))
            out.append((label, c, tuple((d, len(d), tuple(d.keys()),
                                         tuple(d.values()), tuple(d.items()))
                                        for d in dicts)))
            for d in dicts:
                for k, v in list(d.items()):
                    for f in (v, getattr(v, "__func__", None),
                              getattr(v, "fget", None),
                              getattr(v, "fset", None)):
                        funcs.append(("%s.%s" % (label, k), f))
        self.classes = tuple(out)
        seen = set()
        out = []
        cells = []
        for label, f in funcs:
            code = getattr(f, "__code__", None)
            if code is None or id(f) in seen:
                continue
            seen.add(id(f))
            out.append((label, f, code, f.__defaults__, f.__kwdefaults__))
            # (__closure__ cannot be set; what its cells hold can.)
            for c in f.__closure__ or ():
                try:
                    cells.append((label, c, c.cell_contents))
                except ValueError:  # an empty cell
                    pass
        self.funcs = tuple(out)
        self.fns = tuple(x[1] for x in out)
        self.codes = tuple(x[2] for x in out)
        self.dflts = tuple(x[3] for x in out)
        self.kws = tuple(x[4] for x in out)
        self.cells = tuple(cells)
        self.ops = tuple((op, self.dispatch(op)) for op in self.OPS)
        self.objects = ()
        self.pinned = ()
        # Objects whose every attribute stays the same object: the json
        # module's own encoder and decoder, which frames pass through.
        self.held = tuple((label, o, tuple(vars(o).items()))
                          for label, o in (
                              ("json's encoder", json._default_encoder),
                              ("json's decoder", json._default_decoder)))
        self.hooks0 = self.hooks()
        self.modes = self.mode_depths()
        self.seal()

    def dispatch(self, op):
        dump = getattr(self.torch._C, "_dispatch_dump", None)
        try:
            return dump(op) if dump else None
        except RuntimeError:
            return None

    @staticmethod
    def hooks():
        """What the interpreter calls on its own, between any two lines of
        the runner's code: a trace or profile function, Python signal
        handlers, gc callbacks, sys.monitoring's tools. A candidate's code
        that runs there could change what the runner calls next and
        change it back before these checks."""
        sigs = []
        for n in range(1, getattr(signal, "NSIG", 65)):
            try:
                sigs.append(signal.getsignal(n))
            except (ValueError, OSError):
                sigs.append(None)
        mon = getattr(sys, "monitoring", None)
        tools = tuple(mon.get_tool(i) for i in range(6)) if mon else ()
        return (sys.gettrace(), sys.getprofile(), tuple(gc.callbacks),
                tuple(sigs), tools, threading.gettrace()
                if hasattr(threading, "gettrace") else None,
                threading.getprofile()
                if hasattr(threading, "getprofile") else None)

    def mode_depths(self):
        C = self.torch._C
        return tuple(f() if f else 0 for f in (
            getattr(C, "_len_torch_function_stack", None),
            getattr(C, "_len_torch_dispatch_stack", None)))

    def watch(self, label, obj):
        """The runner's own object: no method of its class shadowed on it."""
        self.objects += ((label, obj),)
        self.seal()

    def pin(self, label, obj, attr):
        """An attribute of the runner's own object that stays as it is
        now (the flush buffer: the same tensor, of the same size, at the
        same address, so that resizing it in place is seen too)."""
        v = getattr(obj, attr, None)
        self.pinned += ((label, obj, attr, v, self.shape_of(v)),)
        self.seal()

    @staticmethod
    def shape_of(v):
        try:
            return (v.numel(), v.data_ptr())
        except (AttributeError, RuntimeError):
            return None

    def seal(self):
        """What this object holds now, for changed() to find as it is."""
        self.own = tuple((k, v) for k, v in vars(self).items()
                         if k != "own")

    # The functions changed() works with, bound when it is defined: a
    # candidate that replaces operator.is_ or builtins.all (watched too,
    # GUARD_TOOLS) leaves this check's own as they were.
    def changed(self, sealed, _is=operator.is_, _all=all, _any=any,
                _map=map, _len=len, _zip=zip, _set=set, _dict=dict,
                _vars=vars, _type=type, _list=list, _callable=callable,
                _getattr=getattr, _sorted=sorted):
        """What differs from sealed (seal(): this object's state when the
        runner's serve() sealed it, before any task's or candidate's code
        ran, and held in serve()'s own frame since): what is checked comes
        from sealed, not from this object's attributes, which a candidate
        could set to nothing to check."""
        out = []
        st = _dict(sealed)
        own = _vars(self)
        if _len(own) != _len(sealed) + 1 or \
                _any(own.get(k) is not v for k, v in sealed):
            out.append("the runner's Guard (its state)")
        for label, d, keys, vals, n in st["mods"]:
            if n >= 0 and _len(d) != n:
                # (a dunder name is Python's own: __warningregistry__
                # appears once a warning is raised from this script)
                added = _sorted(k for k in d if k not in keys and not (
                    k[:2] == "__" and k[-2:] == "__"))
                if added:
                    out.append("%s (a name added: %s)" % (
                        label, ", ".join(added[:4])))
            if _all(_map(_is, _map(d.get, keys), vals)):
                continue
            for k, v in _zip(keys, vals):
                if d.get(k) is not v:
                    out.append("%s.%s" % (label, k))
        for label, c, dicts in st["classes"]:
            for d, n, keys, vals, items in dicts:
                if _len(d) == n and _all(_map(_is, _map(d.get, keys),
                                           vals)):
                    continue
                was = _dict(items)
                for k in _set(d) | _set(was):
                    if d.get(k) is not was.get(k):
                        out.append("%s.%s" % (label, k))
        fns = st["fns"]
        if not _all(_map(_is, _map(CODE_OF, fns), st["codes"])):
            for label, f, code, dflt, kw in st["funcs"]:
                if f.__code__ is not code:
                    out.append(label + " (its code)")
        if not (_all(_map(_is, _map(DEFAULTS_OF, fns), st["dflts"])) and
                _all(_map(_is, _map(KWDEFAULTS_OF, fns), st["kws"]))):
            for label, f, code, dflt, kw in st["funcs"]:
                if f.__defaults__ is not dflt or f.__kwdefaults__ is not kw:
                    out.append(label + " (its code)")
        for label, c, v in st["cells"]:
            if _getattr(c, "cell_contents", None) is not v:
                out.append(label + " (its code)")
        for op, dump in st["ops"]:
            if self.dispatch(op) != dump:
                out.append(op + "'s kernels in torch's dispatcher")
        for label, obj, attrs in st["held"]:
            now = _vars(obj)
            if _len(now) != _len(attrs) or \
                    _any(now.get(k) is not v for k, v in attrs):
                out.append(label)
        if self.hooks() != st["hooks0"]:
            out.append("the interpreter's hooks (a trace or profile "
                       "function, a signal handler, a gc callback, a "
                       "monitoring tool)")
        if self.mode_depths() != st["modes"]:
            out.append("torch's mode stack (a TorchFunctionMode or "
                       "TorchDispatchMode left active)")
        for label, obj in st["objects"]:
            cls = _type(obj)
            for k, v in _list(_vars(obj).items()):
                if _callable(v) and _callable(_getattr(cls, k, None)):
                    out.append("%s.%s (on the object)" % (label, k))
        for label, obj, attr, v, shape in st["pinned"]:
            if _getattr(obj, attr, None) is not v or \
                    self.shape_of(v) != shape:
                out.append("%s.%s" % (label, attr))
        return _sorted(_set(out))[:16]


# The builtins and operator functions the Guard checks with (its own
# copies are bound in changed()'s defaults) and the timing code calls.
GUARD_TOOLS = frozenset((
    "is_", "attrgetter", "all", "any", "map", "len", "zip", "set", "dict",
    "vars", "type", "list", "callable", "getattr", "sorted", "isinstance",
    "max", "min", "int", "float"))
CODE_OF = operator.attrgetter("__code__")
DEFAULTS_OF = operator.attrgetter("__defaults__")
KWDEFAULTS_OF = operator.attrgetter("__kwdefaults__")


class Runner:
    """One side's process: loads the task (and, on the candidate's side,
    the candidate), then calls it on the inputs the judge writes into its
    arena, timing each call. It reports what it saw (its own time, the
    global flags, its thread count, where its outputs live) and where in
    its memory the judge reads the outputs from; it decides nothing."""

    def __init__(self, out, arena_fd):
        self.out = out
        self.arena_fd = arena_fd
        self.tt = None
        self.model = None
        self.module = None  # the nn.Module whose state the judge sets
        self.kernel = False
        self.events_swapped = False  # timed(): an event's class changed
        self.entry = None  # what a call calls: entry_of(model)
        self.keep = None  # what the judge reads after a reply (call())
        self.last_outs = None  # the last call's outputs, for facts_apart

    def global_state(self):
        """The process-wide flags a candidate could flip to gain speed, as
        [name, value] pairs."""
        torch = self.tt.torch
        st = [
            ["torch.backends.cudnn.benchmark",
             torch.backends.cudnn.benchmark],
            ["torch.backends.cudnn.allow_tf32",
             torch.backends.cudnn.allow_tf32],
            ["torch.backends.cuda.matmul.allow_tf32",
             torch.backends.cuda.matmul.allow_tf32],
            ["torch.get_float32_matmul_precision()",
             torch.get_float32_matmul_precision()],
            ["torch.are_deterministic_algorithms_enabled()",
             torch.are_deterministic_algorithms_enabled()],
            ["torch.backends.cudnn.deterministic",
             torch.backends.cudnn.deterministic],
            ["torch.backends.mkldnn.enabled",
             torch.backends.mkldnn.enabled],
        ]
        mm = getattr(torch.backends.cuda.matmul,
                     "allow_fp16_reduced_precision_reduction", None)
        if mm is not None:
            st.append(["torch.backends.cuda.matmul."
                       "allow_fp16_reduced_precision_reduction", mm])
        if self.tt.cuda:
            st.append(["the current CUDA stream",
                       torch.cuda.current_stream().cuda_stream])
        return st

    def load(self, req, chk):
        # A warm bridge's reference loads once per evaluation, on the same
        # device (its flush buffer kept); the runner's Torch is serve()'s.
        tt = self.tt
        torch = tt.torch
        if tt.cuda != (req.get("backend") == "cuda"):
            return {"ev": "error", "message": "load: a %s runner asked to "
                    "load for %s" % ("cuda" if tt.cuda else "host",
                                     req.get("backend"))}
        if tt.cuda and not torch.cuda.is_available():
            return {"ev": "load_error", "what": "backend",
                    "message": "torch %s sees no CUDA device"
                    % torch.__version__}
        role = req.get("role")
        protocol = req.get("protocol") or "kforge"
        task = req["task"]
        try:
            mod = import_file(task, "kforge_task")
            self.mod = mod
            if role == "ref":
                # Only the reference's process knows the seed: it draws
                # the parameters, which the judge hands to the candidate.
                seed = int(req.get("seed", "42")) % (1 << 63)
                tt.seed_all(seed)
                init = list(mod.get_init_inputs())
                tt.seed_all(seed)
                with torch.no_grad():
                    ref = mod.Model(*init).to(tt.dev)
                randomize(torch, ref, seed)
                ins = [x.to(tt.dev) if isinstance(x, torch.Tensor) else x
                       for x in tt.make_inputs(mod.get_inputs, seed, 0)]
                with torch.no_grad():
                    outs = as_outputs(torch, ref(*ins))
                tt.sync()
            else:
                init = list(mod.get_init_inputs())
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "task",
                    "message": said(e, task)}
        if protocol == "kforge":
            # The reference computes in full float32: cuDNN's TF32
            # default would make an exact candidate look imprecise. The
            # candidate's process starts from the same flags.
            torch.backends.cudnn.allow_tf32 = False
        state0 = self.global_state()
        if role == "ref":
            self.model = self.module = ref
            self.entry = entry_of(torch, ref, "the task's Model")
            meta = []
            for j, y in enumerate(outs):
                if y.dtype not in tt.names:
                    return {"ev": "load_error", "what": "task",
                            "message": "%s: output %d is %s, which kforge "
                            "cannot compare" % (task, j, y.dtype)}
                meta.append({"dtype": tt.names[y.dtype],
                             "shape": list(y.shape)})
            state = []
            for name, t in ref.state_dict().items():
                if t.dtype not in tt.names:
                    return {"ev": "load_error", "what": "task",
                            "message": "%s: state '%s' is %s, which kforge "
                            "cannot pass" % (task, name, t.dtype)}
                state.append({"name": name, "dtype": tt.names[t.dtype],
                              "shape": list(t.shape)})
            return {"ev": "loaded", "outputs": meta, "state": state}
        t0 = time.perf_counter_ns()
        err = self.load_candidate(req, init)
        if err:
            return err
        load_ns = time.perf_counter_ns() - t0
        facts = chk[0](self, chk)
        if not req.get("baseline"):
            # The task's own Model compiled by torch (a baseline) is the
            # engine's: its compile workers may stay.
            why = forbid_processes()
            if why:
                return {"ev": "load_error", "what": "confinement",
                        "message": "the candidate's runner could not forbid "
                        "new processes: %s" % why}
        return {"ev": "loaded", "load_ns": load_ns,
                "state0": state0, "facts": facts,
                "builds": getattr(self, "builds", [])}

    def build(self, req):
        """A prebuild: imports the candidate with its builds watched, on
        no device, so that the builds it asks for (torch's load_inline,
        load) are done in its build directory before its evaluation. What
        else its import does (or fails to do without a device) does not
        matter here: the evaluation imports it again."""
        self.builds = watch_builds()
        err = None
        try:
            cand = import_file(req["candidate"], "kforge_candidate")
            # Builds asked for in ModelNew's constructor are done too.
            if req.get("task") and hasattr(cand, "ModelNew"):
                task = import_file(req["task"], "kforge_task")
                import torch
                with torch.no_grad():
                    cand.ModelNew(*list(task.get_init_inputs()))
        except BaseException as e:  # noqa: the import's own failure
            err = said(e)[:4096]
        return {"ev": "built", "builds": self.builds, "error": err}

    def load_candidate(self, req, init):
        tt = self.tt
        torch = tt.torch
        if req.get("kernel"):
            self.kernel = True
            out_like = [(tuple(o["shape"]), tt.dtypes[o["dtype"]])
                        for o in req["out_like"]]
            try:
                self.model = KernelModel(tt, req["kernel"], out_like)
            except (OSError, AttributeError, KernelError) as e:
                return {"ev": "load_error", "what": "candidate",
                        "message": said(e)}
            self.entry = self.model
            return None
        if req.get("baseline"):
            return self.load_baseline(req["baseline"], init)
        self.builds = []
        try:
            with open(req["candidate"], "rb") as f:
                src = f.read()
            if b"cpp_extension" in src or b"load_inline" in src:
                self.builds = watch_builds()
        except (OSError, ImportError):
            pass
        CUSTOM.watch_ctypes()
        CUSTOM.watch_load_library()
        try:
            cand = import_file(req["candidate"], "kforge_candidate")
            if not hasattr(cand, "ModelNew"):
                raise AttributeError("the candidate defines no ModelNew")
            with torch.no_grad():
                self.model = cand.ModelNew(*init).to(tt.dev)
            self.module = self.model
            tt.sync()
        except Exception as e:
            traceback.print_exc()
            build = "Error building extension" in str(e) or \
                type(e).__name__ == "CalledProcessError" or \
                any(not b["ok"] for b in self.builds)
            return {"ev": "load_error",
                    "what": "compile" if build else "candidate",
                    "message": said(e), "builds": self.builds}
        try:
            self.entry = entry_of(torch, self.model, "ModelNew")
        except AttributeError as e:
            return {"ev": "load_error", "what": "candidate",
                    "message": str(e), "builds": self.builds}
        return None

    def load_baseline(self, name, init):
        """A baseline made from the task's own Model: compiled or captured
        here, and run a few times on inputs of get_inputs() so that the
        compilation is done before anything is timed."""
        tt = self.tt
        torch = tt.torch
        if name not in BASELINES:
            return {"ev": "load_error", "what": "baseline",
                    "message": "unknown baseline '%s' (one of %s)"
                    % (name, ", ".join(BASELINES))}
        try:
            with torch.no_grad():
                ref = self.mod.Model(*init).to(tt.dev)
            self.module = ref
            if name in ("compile", "compile_ro"):
                if not hasattr(torch, "compile"):
                    raise RuntimeError("torch %s has no torch.compile "
                                       "(torch 2.0 or later)"
                                       % torch.__version__)
                model = torch.compile(ref) if name == "compile" else \
                    torch.compile(ref, mode="reduce-overhead")
            elif name == "cudagraph":
                if not tt.cuda:
                    raise RuntimeError("a CUDA graph needs the cuda "
                                       "backend")
                model = GraphModel(tt, ref)
            else:
                model = ref
            self.warm = model
            # eager is the task's Model, called as the reference is.
            self.entry = entry_of(torch, ref, "the task's Model") \
                if model is ref else model
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "baseline",
                    "message": said(e, name)}
        self.model = model
        return None

    def facts(self, chk):
        """What only this process can see, reported raw for the judge:
        torch's intra-op thread count and the global flags. chk: serve()'s
        (this function, Guard.changed, the Guard, its sealed state), held
        in serve()'s frame since before any task's or candidate's code ran;
        called as chk[0], not through the class, which a candidate can
        change. Checks that raise, once the candidate's code has run in
        this process, are checks it broke: reported as replaced (patched),
        not as the engine's failure."""
        try:
            _, changed, guard, sealed = chk
            patched = changed(guard, sealed)
            if self.events_swapped:
                patched.append("the class of the runner's CUDA events")
            return {"threads": self.tt.torch.get_num_threads(),
                    "state": self.global_state(), "patched": patched}
        except Exception as e:
            traceback.print_exc()
            return {"patched": ["the runner's own checks (they raised %s)"
                                % said(e)]}

    def facts_apart(self, req, chk):
        """The facts of the last call in a request of their own (timed
        calls), with where its outputs and inputs live (storage ranges):
        the judge's view of this process sees them apart from the call's
        (Side.timed_call)."""
        rep = {"ev": "facts"}
        rep.update(chk[0](self, chk))
        outs, self.last_outs = self.last_outs, None
        if outs is not None:
            rep["out_storage"] = [storage_range(y) for y in outs]
            rep["in_storage"] = [storage_range(d) for d in self.d_in]
        return rep

    def set_layout(self, req):
        tt = self.tt
        torch = tt.torch
        self.arena = Arena(tt, self.arena_fd)
        self.arena.map(int(req["size"]))
        self.a_in = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                     e["shape"]) for e in req["inputs"]]
        self.a_state = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                        e["shape"]) for e in req["state"]]
        self.state_names = [e["name"] for e in req["state"]]
        self.out_like = [(tuple(e["shape"]), tt.dtypes[e["dtype"]])
                         for e in req["outputs"]]
        self.others = req.get("others") or []
        # The inputs a call gets. On the host, the arena's own tensors:
        # the judge writes them there before each call, so that no copy
        # of theirs is this process's work (its view of the call would
        # count it, and a candidate could skip it). On CUDA, the device's
        # copies, which the arena's values are copied into before each
        # call.
        self.d_in = self.a_in if not tt.cuda else \
            [torch.empty(e["shape"], dtype=tt.dtypes[e["dtype"]],
                         device=tt.dev) for e in req["inputs"]]
        # On CUDA the copies in and out go by DMA from and to page-locked
        # memory: the arena is registered with the driver, and each output
        # (and input, read back after a call) has a buffer in the
        # registered outbox, which the judge reads.
        # Pageable copies of a few MiB took milliseconds a call with
        # jitter of tenths of one, which the judge's wall-time view of a
        # call (the unaccounted_time rule) reads as the runner's.
        self.h_out, self.h_in = None, None
        if tt.cuda:
            self.pin_arena(int(req["size"]))
            bufs = self.outbox(self.out_like + [
                (tuple(d.shape), d.dtype) for d in self.d_in])
            self.h_out = bufs[:len(self.out_like)]
            self.h_in = bufs[len(self.out_like):]
            # The reply names known bytes for the judge to read back: on
            # CUDA in the outbox itself, so that a machine where the judge
            # cannot read registered pages fails here, by name, and not in
            # a call.
            self.outbox_mm[:len(PROBE_BYTES)] = PROBE_BYTES
            probe = torch.frombuffer(self.outbox_mm, dtype=torch.uint8,
                                     count=len(PROBE_BYTES))
        else:
            probe = torch.frombuffer(bytearray(PROBE_BYTES),
                                     dtype=torch.uint8)
        rep = {"ev": "ok"}
        self.deliver(rep, [probe])
        return rep

    def pin_arena(self, size):
        """Registers the arena's pages with the CUDA driver (best effort:
        a copy from pageable memory is correct, only slower)."""
        torch = self.tt.torch
        try:
            buf = (ctypes.c_char * max(size, ALIGN)).from_buffer(
                self.arena.mm)
            self.arena_pin = buf
            torch.cuda.cudart().cudaHostRegister(
                ctypes.addressof(buf), max(size, ALIGN), 0)
        except Exception:  # noqa: an older torch, no cudart binding
            traceback.print_exc()

    def outbox(self, like):
        """Host tensors of the given (shape, dtype)s, each at a page
        boundary of one anonymous mapping registered with the driver, so
        that copies to them go by DMA, and the judge reads them from this
        process's memory (read_memory) as on the host. Memory torch pins
        itself (cudaHostAlloc) is the driver's mapping, which
        process_vm_readv need not be able to read; registered pages of an
        ordinary mapping are this process's own."""
        torch = self.tt.torch
        offs, total = [], 0
        for sh, dt in like:
            offs.append(total)
            total += (nbytes(self.tt, dt, sh) + mmap.PAGESIZE - 1) // \
                mmap.PAGESIZE * mmap.PAGESIZE
        # Outputs of megabytes go in huge pages where the kernel has them:
        # the judge's read of a call's outputs (inside its view) took 1.4
        # ms for 8 MiB in 4 KiB pages on an H100, most of it the pages'.
        huge = total >= HUGE_PAGE
        self.outbox_mm = mm = mmap.mmap(-1, max(total, mmap.PAGESIZE) +
                                        (HUGE_PAGE if huge else 0))
        pad = 0
        if huge:
            try:
                mm.madvise(mmap.MADV_HUGEPAGE)
            except (AttributeError, OSError):
                pass
            at = ctypes.addressof((ctypes.c_char * 1).from_buffer(mm))
            pad = -at % HUGE_PAGE
            offs = [o + pad for o in offs]
        try:
            buf = (ctypes.c_char * len(mm)).from_buffer(mm)
            self.outbox_pin = buf
            torch.cuda.cudart().cudaHostRegister(
                ctypes.addressof(buf), len(mm), 0)
        except Exception:  # noqa: unregistered copies are only slower
            traceback.print_exc()
        out = []
        for (sh, dt), off in zip(like, offs):
            k = math.prod(sh)
            out.append(torch.frombuffer(mm, dtype=dt, count=k, offset=off)
                       .view(sh) if k else torch.empty(sh, dtype=dt))
        return out

    def host_copy(self, pinned, k, t, dt):
        """t's values as dt in host memory: on the host t itself (a copy
        only where it is not dense or not of dt), on CUDA the k-th pinned
        buffer where there is one of t's shape (dense_cpu otherwise)."""
        h = pinned[k] if pinned is not None and k < len(pinned) else None
        if h is None or tuple(h.shape) != tuple(t.shape):
            if t.dtype is dt and not t.is_cuda and t.is_contiguous():
                return t  # dense on the host already: nothing to copy
            return dense_cpu(t, dt)
        h.copy_(t.detach())
        return h

    def export_state(self, req):
        """The reference's parameters and buffers into the arena, for the
        judge to hand to the candidate."""
        for a, t in zip(self.a_state, self.module.state_dict().values()):
            a.copy_(t.detach().to("cpu"))
        return {"ev": "ok"}

    def import_state(self, req):
        """The reference's parameters and buffers (from the arena) into
        this side's model: by name where the names and shapes agree, else
        by position where every shape and dtype agrees in order. Returns
        the names left as the model made them."""
        tt = self.tt
        torch = tt.torch
        src = list(zip(self.state_names, self.a_state))
        if self.kernel:
            self.model.params = [a.to(tt.dev).clone().contiguous()
                                 for _, a in src]
            return {"ev": "ok", "copied": len(src), "unmatched": []}
        sd = self.module.state_dict() if hasattr(self.module,
                                                 "state_dict") else {}
        by_name = dict(src)

        def same(v, a):
            return tuple(v.shape) == tuple(a.shape) and v.dtype == a.dtype
        pairs, unmatched = [], []
        if len(sd) == len(src) and not all(
                k in by_name and same(v, by_name[k]) for k, v in sd.items()
        ) and all(same(v, a) for v, (_, a) in zip(sd.values(), src)):
            pairs = [(v, a) for v, (_, a) in zip(sd.values(), src)]
        else:
            for k, v in sd.items():
                if k in by_name and same(v, by_name[k]):
                    pairs.append((v, by_name[k]))
                else:
                    unmatched.append(k)
        with torch.no_grad():
            for v, a in pairs:
                v.copy_(a)
        tt.sync()
        if getattr(self, "warm", None) is not None:
            # A baseline is compiled or captured on its final weights.
            ins = self.inputs_of([x.to(tt.dev) for x in self.a_in])
            with torch.no_grad():
                for _ in range(3):
                    self.warm(*ins)
            tt.sync()
            self.warm = None
        return {"ev": "ok", "copied": len(pairs), "unmatched": unmatched}

    def inputs_of(self, tensors):
        args, k = [], 0
        for v in self.others:
            if v is None:
                args.append(tensors[k])
                k += 1
            else:
                args.append(v)
        args.extend(tensors[k:])
        return args

    def inputs(self):
        """The call's arguments: the device's copies of the tensors, with
        get_inputs()'s other values in their places."""
        return self.inputs_of(self.d_in)

    def timed(self, ins, kb):
        """One call: on CUDA, events on the current stream; kforge's
        protocol joins the whole device before the end event, so that work
        on other streams is counted; KernelBench's (kb) records the end
        event right after the call and synchronises after it. On the CPU,
        this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which load on
        the machine does not inflate. Returns (result, ns, wall ns)."""
        torch = self.tt.torch
        if self.tt.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            w0 = time.perf_counter_ns()
            start.record()
            with torch.no_grad():
                r = dense_outputs(torch, self.entry(*ins))
            if not kb:
                torch.cuda.synchronize()
            end.record()
            torch.cuda.synchronize()
            # The class's own function, whatever class the events were
            # given during the call (their __class__ can be set); one that
            # changed is reported (facts, "patched").
            ev = torch.cuda.Event
            if type(start) is not ev or type(end) is not ev:
                self.events_swapped = True
            return r, int(ev.elapsed_time(start, end) * 1e6), \
                time.perf_counter_ns() - w0
        w0 = time.perf_counter_ns()
        c0 = time.thread_time_ns()
        # The last call's outputs go inside the timing: freeing them is
        # this side's allocator's work (a candidate that changes how its
        # process allocates changes that), and outside it the work would
        # count against the harness's share of the judge's view (judge.c,
        # kf_judge_unaccounted).
        self.keep = None
        with torch.no_grad():
            r = dense_outputs(torch, self.entry(*ins))
        c1 = time.thread_time_ns()
        return r, c1 - c0, time.perf_counter_ns() - w0

    def watched(self, ins):
        """A call, and on CUDA a look at the outputs once the engine's
        stream has caught up with it: how long the device's join took
        after the stream's, and the first output that still changed after
        it (-1: none), raw for the judge (judge.c: work left on another
        stream escapes the engine). Returns (result, ns, wall ns, watch)."""
        torch = self.tt.torch
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            r = self.entry(*ins)
        outs, bad = plain_outputs(torch, r, self.tt.dev)
        if bad:
            ns = time.perf_counter_ns() - t0
            return r, ns, ns, None
        torch.cuda.current_stream().synchronize()
        early = [o.clone() for o in outs]
        torch.cuda.current_stream().synchronize()
        j0 = time.perf_counter_ns()
        torch.cuda.synchronize()
        join_ns = time.perf_counter_ns() - j0
        ns = time.perf_counter_ns() - t0
        late = -1
        for j, (a, b) in enumerate(zip(early, outs)):
            if not torch.equal(a, b) and not (
                    a.is_floating_point() and
                    torch.equal(torch.isnan(a), torch.isnan(b)) and
                    torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))):
                late = j
                break
        return r, ns, ns, {"join_ns": join_ns, "ns": ns,
                           "late_output": late}

    def stage(self):
        """Copies the arena's inputs to the device's copies (on the host
        the arena's are the call's: nothing to do)."""
        if not self.tt.cuda:
            return
        for d, a in zip(self.d_in, self.a_in):
            d.copy_(a)
        self.tt.sync()

    def call(self, req, chk):
        """Stages the inputs and calls on them (flushing first when
        asked), in one request: the judge's view of a timed call is its
        one round trip. The reply
        carries the call's own time, the facts the judge checks, and is
        followed by the outputs' bytes (and, when asked, the inputs'
        after the call): once written, nothing this process does can
        change them."""
        tt = self.tt
        torch = tt.torch
        kb = bool(req.get("kb"))
        self.stage()
        rep = {"ev": "called", "ns": 0}
        try:
            ins = self.inputs()
            if req.get("flush"):
                tt.flush(wait=kb or not tt.cuda)
            watch = None
            entry, custom = self.entry, None
            if req.get("probe"):
                # An untimed call with the candidate's own code counted
                # (CustomCode.probe).
                def probed(*a):
                    nonlocal custom
                    r, custom = CUSTOM.probe(entry, *a)
                    return r
                self.entry = probed
            try:
                if req.get("watch") and tt.cuda:
                    r, ns, wall, watch = self.watched(ins)
                else:
                    r, ns, wall = self.timed(ins, kb)
            finally:
                self.entry = entry
            if custom is not None:
                rep["custom"] = custom
            outs, bad = plain_outputs(torch, r, tt.dev)
        except Exception as e:
            traceback.print_exc()
            rep["error"] = said(e)
            if tt.cuda and "CUDA" in rep["error"] and self.device_broken():
                return {"ev": "fault", "message": rep["error"]}
            return rep
        rep["ns"] = ns
        rep["wall_ns"] = wall
        if not req.get("facts_apart"):
            rep.update(chk[0](self, chk))
        if watch:
            rep["watch"] = watch
        if bad:
            rep["bad_outputs"] = bad
            return rep
        if req.get("facts_apart"):
            # Where the outputs and inputs live is part of the facts, in
            # their own request (facts_apart): not the runner's work
            # inside the call's view, which a runner rewritten to skip it
            # could spend on an under-report.
            self.last_outs = outs
        else:
            rep["out_storage"] = [storage_range(y) for y in outs]
            rep["in_storage"] = [storage_range(d) for d in self.d_in]
        if len(outs) != len(self.out_like) or any(
                tuple(y.shape) != s for y, (s, _) in zip(outs, self.out_like)):
            rep["shapes"] = [list(y.shape) for y in outs]
            return rep
        keep = [self.host_copy(self.h_out, k, y, dt)
                for k, (y, (_, dt)) in enumerate(zip(outs, self.out_like))]
        if tt.cuda and req.get("inputs_after"):
            keep += [self.host_copy(self.h_in, k, d, d.dtype)
                     for k, d in enumerate(self.d_in)]
        self.deliver(rep, keep, r)
        return rep

    def deliver(self, rep, keep, r=None):
        """Hands the judge dense host tensors with the reply: the judge
        reads them from this process's memory once it has the reply
        (read_memory), so no copy or transfer of theirs is this process's
        work. They are kept until the next request. On the host timed()
        lets the call's result go inside its timing, and CPU time this
        process uses after its reply counts in its next call's view. On
        CUDA the judge's view of a call is wall time up to the end of its
        read: whatever the bytes it read hold was written before the view
        ended, by this process or by the device (on CUDA the outputs are
        the outbox's pinned copies; the device's result is let go at
        once)."""
        rep["regions"] = regions_of(keep)
        self.keep = (None if self.tt.cuda else r, keep)

    def call64(self, req):
        """The model (the reference's: only its runner is asked) on the
        staged inputs in float64, a copy of it kept: outputs of float
        noise around zero are compared at the noise this measures, not at
        a guess. Its outputs follow the reply, as float64."""
        torch = self.tt.torch
        try:
            if getattr(self, "model64", None) is None:
                import copy
                self.model64 = copy.deepcopy(self.model).double()
            ins = [x.double() if isinstance(x, torch.Tensor) and
                   x.is_floating_point() else x for x in self.inputs()]
            with torch.no_grad():
                outs, bad = plain_outputs(torch, self.model64(*ins),
                                          self.tt.dev)
        except Exception as e:
            return {"ev": "error", "message": said(e)}
        if bad or len(outs) != len(self.out_like):
            return {"ev": "error", "message": "no outputs in float64"}
        rep = {"ev": "called64"}
        self.deliver(rep, [dense_cpu(y, torch.float64) for y in outs])
        return rep

    def device_broken(self):
        """True when the device of this process is unusable."""
        try:
            self.tt.torch.cuda.synchronize()
            self.tt.torch.zeros(1, device=self.tt.dev).add_(1).item()
            return False
        except Exception:
            return True

    def serve(self, inp, backend):
        """Before any task's or candidate's code runs: the runner's Torch,
        its Guard (watching this object and the Torch, the device's flush
        buffer made and pinned), the Guard sealed, and the functions that
        serve requests, all held in this frame's locals, which Python code
        run later cannot rebind: a candidate that replaces Runner.facts or
        Runner.call on the class, the Guard's state, or a module's name for
        either changes nothing this loop calls, and the Guard (run with
        what was sealed here) reports it. The first frame out names the
        words of those functions' objects (their code, defaults, globals)
        for the judge to read from outside the process after each check
        (anchor_words): a function whose __code__ was swapped is the same
        object, with one word changed."""
        self.tt = tt = Torch(backend)
        torch = tt.torch
        guard = Guard(torch)
        guard.watch("the runner", self)
        guard.watch("the runner's torch", tt)
        if tt.cuda and torch.cuda.is_available():
            try:
                tt.flush(wait=True)  # its buffer made before any candidate
                guard.pin("the runner's torch", tt, "flush_buf")
            except RuntimeError:
                pass  # the load reports what is wrong with the device
        guard.seal()
        chk = (Runner.facts, Guard.changed, guard, guard.own)
        R = Runner
        ops = (("load", R.load, True), ("build", R.build, False),
               ("layout", R.set_layout, False),
               ("export_state", R.export_state, False),
               ("import_state", R.import_state, False),
               ("call", R.call, True), ("facts", R.facts_apart, True),
               ("call64", R.call64, False))
        read, write, out = read_frame, write_frame, self.out
        words = anchor_words(
            [("Guard.changed", Guard.changed), ("Runner.facts", R.facts),
             ("read_frame", read), ("write_frame", write)] +
            [("Runner." + f.__name__, f) for _, f, _ in ops])
        regions = []
        if words:
            words += frame_words(sys._getframe(), {
                "ops": ops, "chk": chk, "read": read, "write": write,
                "out": out})
            regions = held_regions(guard.own, (
                ("Runner.serve's ops", ops), ("Runner.serve's chk", chk)))
        write(out, {"ev": "anchors", "words": words, "regions": regions})
        while True:
            req = read(inp)
            if req is None or req.get("op") == "quit":
                return 0
            op = req.get("op")
            if op not in ("call", "facts"):
                self.keep = None
            fn = None
            for name, f, with_chk in ops:
                if name == op:
                    fn = f
                    break
            try:
                if fn is None:
                    rep = {"ev": "error", "message": "unknown op %s" % op}
                elif with_chk:
                    rep = fn(self, req, chk)
                else:
                    rep = fn(self, req)
            except Exception as e:
                traceback.print_exc()
                rep = {"ev": "error",
                       "message": said(e, op)}
            write(out, rep)
            if rep.get("ev") == "fault":
                return 0


# -- the judge ---------------------------------------------------------------


class RunnerBroke(Exception):
    """A runner's reply that the judge cannot read."""

    def __init__(self, side, why):
        super().__init__(why)
        self.side = side
        self.why = why


class RunnerDied(Exception):
    def __init__(self, side, status):
        Exception.__init__(self, "%s runner ended with %s" % (side, status))
        self.side = side
        self.status = status


# -- the runners' confinement -----------------------------------------------
#
# Each runner runs under bubblewrap: user, pid, mount, network, IPC, UTS and
# cgroup namespaces of its own, no capabilities, a root that holds read-only
# only the system's directories, Python's, the files the runner opens and
# (cuda) the device nodes; a private /tmp and, for the candidate, one
# writable build directory for load_inline keyed by its content. Both sides
# get the same confinement, the same CPU affinity (the judge's) and the same
# thread settings, so that neither has resources the other lacks. A missing
# bwrap is an error, never an unconfined runner.

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
# What a runner's environment keeps of the judge's: what Python, torch, the
# compilers and the device read; never a key or a token.
ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "PYTHONPATH",
            "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
            "TORCH_CUDA_ARCH_LIST", "KFORGE_SANDBOX_WEAK", "CC", "CXX")


# Where a spare candidate runner finds its candidate's files (Side.adopt).
SPARE_INBOX = "/kforge-candidate"


class ConfineError(Exception):
    pass


def find_bwrap():
    """bubblewrap: KFORGE_BWRAP alone when set, else the system's, else the
    copy the build ships beside kforge (build/bin/bwrap)."""
    here = os.path.dirname(os.path.abspath(__file__))
    k = os.environ.get("KFORGE_BWRAP")
    for cand in ((k,) if k is not None else
                 ("/usr/bin/bwrap", os.path.join(here, "..", "bin", "bwrap"))):
        if cand and os.access(cand, os.X_OK):
            return os.path.realpath(cand)
    raise ConfineError("bubblewrap (bwrap) not found (KFORGE_BWRAP, "
                       "/usr/bin/bwrap, build/bin/bwrap): the runners of "
                       "KernelBench-format tasks run confined in it; see "
                       "kforge doctor")


def compiler_prefixes():
    """The install prefixes of the compilers torch's builds call (CC, CXX,
    else c++ and gcc; nvcc) where they are outside /usr: a compiler finds
    its own programs and headers under its prefix (/opt/gcc/bin/g++ under
    /opt/gcc). A prefix without lib/ or libexec/ beside bin/ is not a
    toolchain's (a wrapper in ~/bin): only the program's own directory is
    shown then, not what is around it."""
    out = []
    for name in (os.environ.get("CXX"), os.environ.get("CC"), "c++", "gcc",
                 "nvcc"):
        p = shutil.which(name) if name else None
        if not p:
            continue
        for q in (os.path.abspath(p), os.path.realpath(p)):
            bindir = os.path.dirname(q)
            prefix = os.path.dirname(bindir)
            if prefix not in ("/", "") and any(
                    os.path.isdir(os.path.join(prefix, d))
                    for d in ("lib", "lib64", "libexec")):
                out.append(prefix)
            elif bindir not in ("/", ""):
                out.append(bindir)
    return out


def ro_dirs():
    """The read-only directories every runner sees."""
    dirs = ["/usr", "/etc/ld.so.cache", "/etc/alternatives", "/sys"]
    dirs += compiler_prefixes()
    for d in [sys.prefix, sys.base_prefix, sys.exec_prefix] + sys.path + \
            os.environ.get("LD_LIBRARY_PATH", "").split(":") + \
            [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")]:
        if d and os.path.isabs(d) and os.path.exists(d):
            dirs.append(os.path.realpath(d))
    out = []
    for d in sorted(set(dirs), key=len):
        if not any(d == o or d.startswith(o.rstrip("/") + "/") for o in out):
            out.append(d)
    return out


def extensions_root():
    """Where the candidates' build directories are: <cache>/torch_extensions."""
    root = os.environ.get("KFORGE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "kforge")
    return os.path.join(root, "torch_extensions")


# The build directories' bound: KFORGE_CACHE_MAX_MB (default 20480), as the
# compile cache's (src/compile/compile.c). A candidate writes what it likes
# into its own directory, which is kept for its next evaluation: past the
# bound the directories used longest ago go, down to 90 %, none used in the
# last EXT_KEEP_S seconds, checked at most once a minute on the machine.
EXT_KEEP_S = 120
EXT_TRIM_GAP_S = 60


def cache_max_bytes():
    v = os.environ.get("KFORGE_CACHE_MAX_MB", "")
    try:
        mb = int(v) if v else 20480
    except ValueError:
        mb = 20480  # kforge refuses it before any bridge starts
    return max(mb, 1) << 20


def bound_extensions(root, now=None):
    """Removes the build directories under root used longest ago until
    they hold at most 90 % of cache_max_bytes(); returns how many went."""
    now = time.time() if now is None else now
    stamp = os.path.join(root, ".trimmed")
    try:
        if now - os.stat(stamp).st_mtime < EXT_TRIM_GAP_S:
            return 0
    except OSError:
        pass
    try:
        with open(stamp, "a"):
            pass
        os.utime(stamp, (now, now))
        names = os.listdir(root)
    except OSError:
        return 0
    entries, total = [], 0
    for n in names:
        d = os.path.join(root, n)
        if n.startswith(".") or os.path.islink(d) or not os.path.isdir(d):
            continue
        size, used = 0, os.stat(d).st_mtime
        for r, _, fs in os.walk(d):
            for f in fs:
                try:
                    st = os.lstat(os.path.join(r, f))
                except OSError:
                    continue
                size += st.st_size
                used = max(used, st.st_mtime)
        entries.append((used, size, d))
        total += size
    cap, gone = cache_max_bytes(), 0
    if total <= cap:
        return 0
    for used, size, d in sorted(entries):
        if total <= cap // 10 * 9 or now - used < EXT_KEEP_S:
            break
        shutil.rmtree(d, ignore_errors=True)
        total -= size
        gone += 1
    return gone


def build_dir(files):
    """The candidate's writable build directory (torch's load_inline),
    shared only with candidates of the same content; marked used now, and
    the directories' bound kept."""
    import hashlib
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            h.update(fh.read())
    d = os.path.join(extensions_root(), h.hexdigest()[:32])
    os.makedirs(d, exist_ok=True)
    try:
        os.utime(d)
    except OSError:
        pass
    bound_extensions(extensions_root())
    return d


def link_tree(src, dst, only_new=False):
    """dst gets src's tree: directories made, files and links hard-linked
    (a copy where a link cannot be made). only_new: names dst has are
    left as they are. A spare candidate runner's build directory is bound
    before its candidate is known; the candidate's own directory (keyed by
    its content, build_dir) is linked into it when it arrives, and what it
    built that the directory lacks is linked back when it ends. A file
    linked in is the same file as in the candidate's own directory, which
    the candidate may write in any case (a cold runner gets that directory
    itself); a name it adds or replaces stays in the spare's directory
    until it is linked back."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        out = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(out, exist_ok=True)
        for n in list(dirs) + files:
            a, b = os.path.join(root, n), os.path.join(out, n)
            if os.path.isdir(a) and not os.path.islink(a):
                continue  # walked into
            if os.path.lexists(b):
                if only_new:
                    continue
                try:
                    os.unlink(b)
                except OSError:
                    continue
            try:
                if os.path.islink(a):
                    os.symlink(os.readlink(a), b)
                else:
                    os.link(a, b, follow_symlinks=False)
            except OSError:
                try:
                    shutil.copy2(a, b, follow_symlinks=False)
                except OSError:
                    pass


def toolchain_key():
    """What a build's outcome depends on beside its sources: this script,
    Python, torch, the compilers named and found, CUDA's and the arch
    list. A failed build is remembered under this key only."""
    import hashlib
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    h.update(sys.version.encode())
    try:
        import torch
        h.update(str(torch.__version__).encode())
    except ImportError:
        pass
    for k in ("CC", "CXX", "CUDA_HOME", "CUDA_PATH",
              "TORCH_CUDA_ARCH_LIST"):
        h.update(("%s=%s;" % (k, os.environ.get(k, ""))).encode())
    for name in ("c++", "gcc", "nvcc", "ninja"):
        p = shutil.which(name)
        h.update(("%s=%s;" % (name, os.path.realpath(p) if p else ""))
                 .encode())
    return h.hexdigest()


FAILED_BUILD = "kforge-failed-build.json"


def failed_build(d):
    """The load_error of a build that failed before in build directory d
    under this toolchain, marked as remembered; None otherwise."""
    if not d:
        return None
    try:
        with open(os.path.join(d, FAILED_BUILD)) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("key") != toolchain_key():
        return None
    return {"ev": "load_error", "what": "compile",
            "message": "not built again: this build failed before with "
                       "the same sources and toolchain (kforge's record of "
                       "failed builds): %s" % rec.get("message", "?"),
            "builds": rec.get("builds") or [], "cached": True}


def remember_failed_build(d, rep):
    """Records a failed build in its directory, for failed_build()."""
    if not d or transient_failure(rep.get("message", "")):
        return
    rec = {"key": toolchain_key(), "message": rep.get("message", ""),
           "builds": rep.get("builds") or []}
    tmp = os.path.join(d, FAILED_BUILD + ".tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.replace(tmp, os.path.join(d, FAILED_BUILD))
    except OSError:
        pass


# The runner's memory-backed file systems: /tmp (its HOME and TMPDIR, where
# Triton and Inductor keep their caches) and /dev/shm.
RUNNER_TMP_BYTES = 1 << 30
RUNNER_SHM_BYTES = 256 << 20
# The largest file a runner may write (RLIMIT_FSIZE): an extension it builds
# itself is tens of MiB.
RUNNER_FILE_BYTES = 1 << 30
# The most memory a runner may hold resident (RSS: its own pages and the
# shared ones it touched, its arena's among them), KFORGE_RUNNER_MEM_MB
# (default 8192 MiB) plus four times its arena: no limit of the process can
# say it (CUDA's address-space reservations rule out RLIMIT_AS, and there
# is no memory cgroup to lean on), so the judge reads it every
# RUNNER_MEM_POLL_S from outside and stops the runner past it.
RUNNER_MEM_POLL_S = 0.05
# The most wall time a candidate's load may spend waiting, its sandbox using
# no CPU and none of its processes running or waiting for one (a sleep at
# import, a blocking call): past it the runner is stopped, the candidate's
# timeout/load_time. Its builds (compilers at work) and a busy machine
# (processes waiting for a CPU) are not waiting; the load's own deadline
# stays for those.
LOAD_IDLE_S = 10
# The most entries (files, directories, links) a candidate's build directory
# may hold: a load_inline build leaves tens. The directory is on the disk
# and kept for the candidate's next evaluation, and the bytes bound
# (KFORGE_CACHE_MAX_MB) does not see empty files: 300,000 of them took
# 12 s and 6.9 MB. Counted every BUILD_COUNT_EVERY polls while the runner
# lives; past it the runner is stopped and the directory removed.
BUILD_ENTRIES_CAP = 10000
BUILD_COUNT_EVERY = 20


def count_entries(top, most):
    """How many entries are under top (not following links), counting no
    further than most."""
    n, pending = 0, [top]
    while pending and n <= most:
        try:
            with os.scandir(pending.pop()) as it:
                for e in it:
                    n += 1
                    if n > most:
                        break
                    if e.is_dir(follow_symlinks=False):
                        pending.append(e.path)
        except OSError:
            pass
    return n


def runner_mem_base():
    """KFORGE_RUNNER_MEM_MB in bytes (kforge refuses a bad value before any
    bridge starts: src/eval/bridge.c)."""
    v = os.environ.get("KFORGE_RUNNER_MEM_MB", "")
    try:
        mb = int(v) if v else 8192
    except ValueError:
        mb = 8192
    return max(mb, 256) << 20


def confined_argv(python, script, fd, files, writable, cuda, info_fd,
                  leave_fd, inbox=None):
    """The command line that starts one runner under bwrap, and its
    environment. bwrap writes the runner's pid, as this process sees it,
    to info_fd; the runner sends its filter's listener over leave_fd
    (processes_by_leave). inbox: a directory shown read-only at
    SPARE_INBOX, where a spare runner's candidate is put when it comes."""
    bwrap = find_bwrap()
    a = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
         "--cap-drop", "ALL", "--info-fd", str(info_fd)]
    for top in ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            a += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            a += ["--ro-bind", top, top]
    # /tmp first: a directory below it bound next (a virtual
    # environment's) stays visible over the empty one. Both it and
    # /dev/shm are memory, which no process's limit counts: each is held
    # to a size (a candidate reserved 12.6 GB of each before).
    a += ["--proc", "/proc", "--dev", "/dev",
          "--size", str(RUNNER_TMP_BYTES), "--tmpfs", "/tmp",
          "--size", str(RUNNER_SHM_BYTES), "--tmpfs", "/dev/shm"]
    dirs = ro_dirs()
    for d in dirs:
        a += ["--ro-bind", d, d]
    if cuda:
        for n in sorted(os.listdir("/dev")):
            if n.startswith("nvidia"):
                a += ["--dev-bind", "/dev/" + n, "/dev/" + n]
    for f in [script, python] + list(files):
        f = os.path.abspath(f)
        # A file inside a directory bound above is there already; binding
        # it again fails where it is a link (a virtual environment's
        # bin/python3 -> /usr/bin/python3: bwrap cannot create the file).
        if not any(f.startswith(d.rstrip("/") + "/") for d in dirs):
            a += ["--ro-bind", f, f]
    if inbox:
        a += ["--ro-bind", inbox, SPARE_INBOX]
    env = {k: os.environ[k] for k in ENV_KEPT if k in os.environ}
    if writable:
        # At a path of its own, so that no directory of the machine's
        # (the user's cache) shows in the runner's root.
        a += ["--bind", writable, "/kforge-build"]
        env["TORCH_EXTENSIONS_DIR"] = "/kforge-build"
    cpus = len(os.sched_getaffinity(0))
    for k in THREAD_VARS:
        env[k] = str(cpus)
    env.update({"HOME": "/tmp", "USER": "kforge", "TMPDIR": "/tmp"})
    # glibc's malloc by fixed rules in both runners: by default it moves its
    # mmap threshold as large blocks are freed and trims the heap's top, so
    # that one process of an A/A pair reused a large output's memory while
    # the other took it from the kernel again on every call (page faults:
    # sin over 1M floats on the host, 1.4 against 3.8 ms a call, and the
    # slower side's time outside its report got it rejected
    # unaccounted_time). Now blocks under 32 MiB come from the heap, kept.
    env.update({"MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                "MALLOC_TRIM_THRESHOLD_": str(1 << 30)})
    # Its working directory is its own /tmp: the caller's need not exist
    # in its root (a kforge run from a directory under /tmp found none).
    # /dev, a memory file system bwrap makes, read-only like the rest (a
    # candidate filled it with 600 MiB): its device nodes stay usable, and
    # /dev/shm is a mount of its own, held to its size.
    a += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp",
          "--"]
    a += [python, "-B", script, "--runner", str(fd), str(leave_fd),
          "cuda" if cuda else "cpu"]
    return a, env


def runner_status(rc):
    """A runner's end as Popen reports it (negative: the signal). bwrap's
    init exits with 128 plus the signal that killed the runner: that is
    the runner's signal, not an exit code."""
    if rc is not None and 128 < rc < 128 + 65:
        return -(rc - 128)
    return rc


class Side:
    """The judge's end of one runner."""

    def __init__(self, cuda, name, python, files=(), builds=False,
                 spare=False):
        """Starts the runner; attach() gives it the judge's torch once
        that is imported (the runner's start does not wait for it).

        spare: a candidate's runner started before its candidate is known
        (a warm bridge's next evaluation, Judge.next): files holds the
        task alone; an empty inbox directory is shown read-only at
        SPARE_INBOX and an empty build directory of its own at
        /kforge-build, filled when the candidate comes (adopt). Its
        messages go to a file of its own, added to this process's (the
        evaluation's log) when it ends: no later runner shares it."""
        self.name = name
        self.tt = None
        self.inbox = bytearray(0)
        self.pending = None  # a deferred read's sample (ask, finish_read)
        self.anchors = None  # the runner's first frame (take_anchors)
        self.maps_for = None  # a deferred read's regions (check_maps)
        self.payload = None
        self.spare = spare
        self.inbox_dir = self.spare_build = None
        self.shown = {}  # paths in the runner's root -> the user's
        self.fd = os.memfd_create("kforge-" + name, 0)
        script = os.path.abspath(__file__)
        info_r, info_w = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if spare:
            self.build_dir = None  # the candidate's own, once adopted
            self.inbox_dir = tempfile.mkdtemp(prefix="kforge-candidate-")
            root = extensions_root()
            os.makedirs(root, exist_ok=True)
            self.spare_build = tempfile.mkdtemp(prefix=".spare-", dir=root)
            writable = self.spare_build
        else:
            self.build_dir = build_dir(files) if builds else None
            writable = self.build_dir
            if self.build_dir:
                # A directory of its own with the candidate's linked in
                # (link_tree), what it builds linked back when it ends
                # (release_build), as a spare's: two runners of one
                # content never share one, so neither waits on the other's
                # build lock, a wait the load's idle rule would count.
                self.spare_build = tempfile.mkdtemp(
                    prefix=".spare-", dir=extensions_root())
                link_tree(self.build_dir, self.spare_build)
                writable = self.spare_build
        argv, env = confined_argv(
            python, script, self.fd, files, writable,
            cuda, info_w, theirs.fileno(), inbox=self.inbox_dir)
        # The reference's messages are kept, for the error if it ends; the
        # candidate's go where this process's go (the evaluation's log).
        self.err = tempfile.TemporaryFile() if name == "reference" else None
        self.own_err = tempfile.TemporaryFile() if spare else None
        self.proc = subprocess.Popen(
            argv, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.err if self.err is not None else self.own_err,
            pass_fds=(self.fd, info_w, theirs.fileno()), close_fds=True)
        os.close(info_w)
        theirs.close()
        self.leave = Leave(mine)
        self.arena = None
        # The runner is bwrap's child, not bwrap: its CPU clock is the
        # outside view of its calls (bwrap's own would see none of them).
        self.init, self.pid = runner_pid(info_r, self.proc.pid)
        # Handles on the namespace's init and the runner that a reused pid
        # cannot stand for: end() kills and checks through them.
        self.pidfds = []
        for p in (self.init, self.pid):
            try:
                self.pidfds.append(os.pidfd_open(p))
            except (AttributeError, OSError):
                self.pidfds.append(None)
        self.children0 = 0  # children's CPU time when loaded
        os.close(info_r)
        # Why the judge stopped the runner, as (event, message): its memory
        # or a load that waited; else None.
        self.over = None
        self.loading = False  # the candidate's load is under way
        self.mem_base = runner_mem_base()
        threading.Thread(target=self.watch_memory, daemon=True).start()
        self.clock = cpu_clock(self.pid)
        self.cpu_reply = self.cpu_ns()  # its CPU time at its last reply
        self.cap = 0       # the most payload bytes a reply may carry
        self.got = []      # the outputs of its last call, taken at reply

    def attach(self, tt):
        self.tt = tt
        self.arena = Arena(tt, self.fd)

    def writable_build(self):
        """The build directory the runner writes: a spare's own, else the
        candidate's (None for the reference)."""
        return self.spare_build or self.build_dir

    def watch_memory(self):
        """Until the runner ends: its resident memory read every
        RUNNER_MEM_POLL_S; past the limit (RUNNER_MEM_POLL_S's comment) it
        is killed and self.over says why, which the judge reports as the
        candidate's failure (Judge.died). Through a pidfd of its own,
        whose readiness says the runner ended, so that a reused pid is
        never read or signalled."""
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return
        page = os.sysconf("SC_PAGE_SIZE")
        path = "/proc/%d/statm" % self.pid
        p = select.poll()
        p.register(fd, select.POLLIN)
        idle, last, t_last = 0.0, None, time.monotonic()
        polls = 0
        try:
            while not p.poll(int(RUNNER_MEM_POLL_S * 1000)):
                polls += 1
                try:
                    with open(path) as f:
                        rss = int(f.read().split()[1]) * page
                    arena = os.fstat(self.fd).st_size
                except (OSError, ValueError, IndexError):
                    return
                now = time.monotonic()
                if self.loading:
                    ticks, runnable = tree_ticks(self.init)
                    if last is not None and ticks == last and not runnable:
                        idle += now - t_last
                    last = ticks
                else:
                    last = None
                t_last = now
                limit = self.mem_base + 4 * arena
                if rss > limit:
                    self.over = ("memory", (
                        "the %s's process held %d MiB of memory resident, "
                        "over the limit of %d MiB (KFORGE_RUNNER_MEM_MB=%d "
                        "plus four times its %.1f MiB of tensors): it was "
                        "stopped" % (
                            self.name, rss >> 20, limit >> 20,
                            self.mem_base >> 20, arena / 1048576.0)))
                elif polls % BUILD_COUNT_EVERY == 0 and \
                        self.writable_build() and count_entries(
                            self.writable_build(),
                            BUILD_ENTRIES_CAP) > BUILD_ENTRIES_CAP:
                    self.over = ("files", (
                        "the candidate's build directory held more than "
                        "%d entries (a load_inline build leaves tens): "
                        "it was stopped and the directory removed" %
                        BUILD_ENTRIES_CAP))
                elif idle > LOAD_IDLE_S:
                    self.over = ("load_time", (
                        "the candidate's load waited %.1f s without using "
                        "a CPU (a sleep or a blocking call at import or in "
                        "its constructor), past the limit of %d s: it was "
                        "stopped" % (idle, LOAD_IDLE_S)))
                else:
                    continue
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass
                return
        finally:
            os.close(fd)

    def cpu_ns(self):
        """The runner process's CPU time in ns, read from here: all its
        threads (clock_getcpuclockid), or its main thread's
        (/proc/PID/schedstat) where that clock is missing."""
        if self.clock is not None:
            try:
                return time.clock_gettime_ns(self.clock)
            except OSError:
                pass
        try:
            with open("/proc/%d/schedstat" % self.pid) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return 0

    def outside(self):
        """What the judge sees of the runner's sandbox from outside, where
        the candidate's code cannot change it: the processes in it other
        than the runner (and bubblewrap's init), and the CPU time of the
        processes that the runner and the init have waited for since the
        load (a helper that did work and ended)."""
        procs = [p for p in process_tree(self.init)
                 if p not in (self.init, self.pid)]
        spent = children_cpu_ns(self.pid) + children_cpu_ns(self.init)
        return procs, max(0, spent - self.children0)

    def loaded(self, refuse=True):
        """Marks the end of the load: children's CPU time from here on is
        work done outside the runner's own clock, and (with refuse) no
        process may start in the runner's sandbox any more. Returns None,
        or why the runner has no filter for that."""
        self.children0 = children_cpu_ns(self.pid) + \
            children_cpu_ns(self.init)
        if not refuse:
            return None
        self.leave.refuse()
        if not self.leave.ready.wait(60) or self.leave.fd is None:
            return self.leave.why or "its filter never came"
        return None

    def regions(self, rep):
        """The [address, bytes] pairs a reply names, checked: their total
        is at most what the layout allows."""
        g = rep.get("regions")
        if not isinstance(g, list) or not all(
                isinstance(x, list) and len(x) == 2 and
                all(type(v) is int and v >= 0 for v in x) for x in g):
            raise ValueError("its reply names its outputs' memory "
                             "wrongly: %.200r" % (g,))
        n = sum(x[1] for x in g)
        if n > self.cap:
            raise ValueError("its reply names %d bytes as its outputs, "
                             "more than their %d" % (n, self.cap))
        return g, n

    def ask(self, req, deferred=False):
        """A request and its reply, with what the reply delivers (deliver)
        in the judge's own memory, self.payload: the memory the reply names
        (regions) read at once from the runner's process, which waits for
        its next request meanwhile. On CUDA, where the read is inside the
        wall-time view of a call, it goes to this side's inbox, kept for
        the whole evaluation, so that it costs the same on every call and
        on both sides (a fresh buffer's page faults would not); payload is
        then a view of it, good until the next request (kept() copies it).
        On the host the view is the runner's CPU time and a fresh buffer
        needs no copy. A reply naming memory
        the runner does not have, or more than the layout allows, is not
        one the judge can use (RunnerBroke).

        deferred (a call's request; on CUDA the view is wall time up to
        this method's return, on the host the runner's CPU time, which the
        reads do not touch): outputs over SAMPLE_PIECE *
        SAMPLE_PIECES bytes are only sampled here (sample_pieces), and
        read whole by finish_read once the caller has ended its view. The
        whole read of 8 MiB took 1.4 ms with a spread of 0.15 ms inside
        the view, over the device rule's limit between honest sides; the
        sample's cost does not grow with the outputs. A process that
        writes its outputs after replying (a thread, or the device on a
        stream nobody joined) must leave every sampled piece as the whole
        read finds it, without knowing which pieces are sampled."""
        self.pending = self.maps_for = None
        try:
            write_frame(self.proc.stdin, req)
            rep = read_frame(self.proc.stdout)
            if self.anchors is None and rep is not None:
                # The runner's first frame, written before it read a
                # request: its anchors (Runner.serve).
                self.anchors = self.take_anchors(rep)
                rep = read_frame(self.proc.stdout)
            # The replies that carry the runner's checks (facts): a call's,
            # a facts request's, a load's (under "facts").
            fr = rep if isinstance(rep, dict) and "patched" in rep else \
                rep.get("facts") if isinstance(rep, dict) else None
            if isinstance(fr, dict) and "patched" in fr and self.anchors:
                moved = self.anchors_moved()
                if moved:
                    fr["patched"] = list(fr["patched"] or []) + moved
            self.payload = None
            if isinstance(rep, dict) and "regions" in rep:
                g, n = self.regions(rep)
                self.cpu_reply = self.cpu_ns()
                if self.tt is not None and self.tt.cuda:
                    if len(self.inbox) < n:
                        self.inbox = bytearray(n)
                    buf = memoryview(self.inbox)[:n]
                else:
                    buf = bytearray(n)
                if deferred and n > SAMPLE_PIECE * SAMPLE_PIECES:
                    pieces = sample_pieces(g, n)
                    got = self.read(lambda: read_pieces(self.pid, pieces))
                    self.pending = (g, buf, pieces, got)
                else:
                    self.read(lambda: read_memory(self.pid, g, buf))
                self.payload = buf
                rep["payload"] = n
                if deferred:
                    self.maps_for = g
                else:
                    self.check_maps(rep, g)
                return rep
        except (BrokenPipeError, ConnectionResetError):
            rep = None
        except (ValueError, UnicodeDecodeError) as e:
            # A reply that is not a frame (too large, not JSON): the
            # stream is lost; the runner is stopped and blamed.
            self.broke(e)
        if rep is not None and not isinstance(rep, dict):
            self.broke("its reply is not a JSON object")
        if rep is None:
            raise RunnerDied(self.name, runner_status(self.proc.wait()))
        self.cpu_reply = self.cpu_ns()
        return rep

    def take_anchors(self, rep):
        """The memory of the runner's own functions and checks its first
        frame names (anchor_words: 8-byte words; held_regions: the Guard's
        tuples, its code's names and constants), checked for form, as
        (address, bytes, expected, label) with the read's buffers made
        once (anchors_moved)."""
        ok = isinstance(rep, dict) and rep.get("ev") == "anchors"
        w = rep.get("words") if ok else None
        g = rep.get("regions", []) if ok else None
        if not isinstance(w, list) or len(w) > 512 or not all(
                isinstance(x, list) and len(x) == 3 and
                type(x[0]) is int and type(x[1]) is int and
                isinstance(x[2], str) and 0 < x[0] < 1 << 64 and
                0 <= x[1] < 1 << 64 for x in w) or \
                not isinstance(g, list) or len(g) > 20000 or not all(
                isinstance(x, list) and len(x) == 4 and
                type(x[0]) is int and type(x[1]) is int and
                0 < x[0] < 1 << 64 and 0 < x[1] <= 1 << 20 and
                isinstance(x[2], str) and len(x[2]) == 2 * x[1] and
                isinstance(x[3], str) for x in g):
            self.broke("its first frame does not name its own functions' "
                       "memory (%.200r)" % (rep,))
        try:
            items = [(a, 8, struct.pack("<Q", v), label)
                     for a, v, label in w] + \
                [(a, n, bytes.fromhex(h), label) for a, n, h, label in g]
        except ValueError:
            self.broke("its first frame names its functions' memory "
                       "wrongly")
        if sum(n for _, n, _, _ in items) > 4 << 20:
            self.broke("its first frame names over 4 MiB of its memory")
        self.anchor_want = b"".join(x[2] for x in items)
        self.anchor_buf = bytearray(len(self.anchor_want))
        base = ctypes.addressof(
            (ctypes.c_char * max(1, len(self.anchor_buf))).from_buffer(
                self.anchor_buf)) if items else 0
        self.anchor_iov, off = [], 0
        for k in range(0, len(items), 1024):
            part = items[k:k + 1024]
            loc, rem = [], []
            for a, n, _, _ in part:
                loc.append(IOVec(base + off, n))
                rem.append(IOVec(a, n))
                off += n
            self.anchor_iov.append(((IOVec * len(part))(*loc),
                                    (IOVec * len(part))(*rem), len(part),
                                    sum(n for _, n, _, _ in part)))
        return items

    def anchors_moved(self):
        """The labels of the runner's anchored memory (take_anchors) that
        differs now, read from outside its process in one or a few calls
        of process_vm_readv: a function on the path of its checks whose
        code, defaults or globals were swapped, a tuple of the Guard's or
        of serve()'s written in place, a local of serve() rebound."""
        for loc, rem, k, want in self.anchor_iov:
            got = LIBC.process_vm_readv(self.pid, loc, k, rem, k, 0)
            if got != want:
                return ["the runner's own functions (their memory could "
                        "not be read back: %s)" % (
                            os.strerror(ctypes.get_errno()) if got < 0
                            else "%d of %d bytes" % (got, want))]
        if self.anchor_buf == self.anchor_want:
            return []
        out, off = [], 0
        for a, n, v, label in self.anchors:
            if self.anchor_buf[off:off + n] != v:
                line = "%s, read from outside its process" % label
                if line not in out:
                    out.append(line)
            off += n
        return out[:16]

    def read(self, how):
        """how() reads the runner's memory; its result, or the errors of a
        read that failed."""
        try:
            got = how()
        except MemoryUnreadable as e:
            raise ConfineError(
                "the judge cannot read the %s runner's memory "
                "(process_vm_readv: %s), where it takes the "
                "outputs of each call from" % (self.name, e))
        if got is None or got is False:
            raise ValueError("its reply names as its outputs "
                             "memory its process does not have")
        return got

    def broke(self, why):
        self.proc.kill()
        self.proc.wait()
        raise RunnerBroke(self.name, str(why))

    def check_maps(self, rep, g):
        """rep["mapped_inputs"]: the outputs (regions g) that map the
        arena's inputs, seen from here, on the candidate's side (the
        reference is the task's own code). Reading a process's map takes
        about 2 ms (a CUDA process maps thousands of ranges), so a call's
        map is read after its view has ended (finish_read, before
        anything else): a map read by one side only inside the view
        would be time the other side never pays."""
        rep["mapped_inputs"] = mapped_slots(
            self.pid, getattr(self, "inode", -1), g,
            getattr(self, "in_slots", [])) \
            if self.name == "candidate" else []

    def finish_read(self, rep):
        """After a deferred ask, once the caller's view has ended: the
        memory map (check_maps), then the whole read of sampled outputs:
        rep["late_write"] names the first output (its index among the
        regions) where a sampled piece differs from what the whole read
        found there. An output mapping an input when the reply came and
        unmapped since would have to be rewritten with the input's
        values between the reply and the map's read here: inside the
        view, or nearly, for outputs of any size worth the trouble."""
        g, self.maps_for = self.maps_for, None
        if g is not None and "payload" in rep:
            self.check_maps(rep, g)
        if self.pending is None:
            return
        g, buf, pieces, got = self.pending
        self.pending = None
        try:
            self.read(lambda: read_memory(self.pid, g, buf))
        except ValueError as e:
            self.broke(e)
        for (_, o, m), b in zip(pieces, got):
            if bytes(buf[o:o + m]) != b:
                rep["late_write"] = region_at(g, o)[0]
                return

    def kept(self):
        """The last reply's payload as bytes of the judge's own, or None: a
        copy where it is a view of the inbox (read again at the next
        request)."""
        if isinstance(self.payload, memoryview):
            return bytearray(self.payload)
        return self.payload

    def lay_out(self, size, ins, outs, state, others):
        os.ftruncate(self.fd, max(size, ALIGN))
        self.arena.map(size)
        tt = self.tt
        # The arena's slots an output must not map (mapped_slots): the
        # inputs', then the parameters'.
        self.inode = os.fstat(self.fd).st_ino
        self.in_slots = [[e["off"], nbytes(tt, tt.dtypes[e["dtype"]],
                                           e["shape"])]
                         for e in list(ins) + list(state)]
        self.a_in = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                     e["shape"]) for e in ins]
        self.a_state = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                        e["shape"]) for e in state]
        self.outs = [(tt.dtypes[e["dtype"]], tuple(e["shape"]))
                     for e in outs]
        self.ins = [(tt.dtypes[e["dtype"]], tuple(e["shape"]))
                    for e in ins]
        self.cap = max(sum(nbytes(tt, dt, sh) for dt, sh in
                           self.outs + self.ins),
                       sum(8 * math.prod(sh) for _, sh in self.outs),
                       len(PROBE_BYTES))
        # The reply names a buffer of known bytes in the runner: that the
        # judge can read its memory at all is known before any call.
        try:
            rep = self.ask({"op": "layout", "size": size, "inputs": ins,
                            "outputs": outs, "state": state,
                            "others": others})
        except ConfineError as e:
            return {"ev": "load_error", "what": "sandbox",
                    "message": str(e)}
        if rep.get("ev") == "ok" and self.kept() != PROBE_BYTES:
            return {"ev": "error", "message": "the %s runner's memory "
                    "did not read back as written" % self.name}
        return rep

    def put(self, tensors):
        for a, x in zip(self.a_in, tensors):
            a.copy_(x)

    def take(self, rep, inputs_after):
        """The outputs (and the inputs after the call) from the reply's
        payload: the values as they were when the runner replied."""
        self.got = []
        buf = self.kept()
        # On the host the inputs are the arena's, read here.
        after = inputs_after and self.tt.cuda
        want = self.outs + (self.ins if after else [])
        if buf is None or len(buf) != sum(nbytes(self.tt, dt, sh)
                                          for dt, sh in want):
            return False
        torch = self.tt.torch
        off, ts = 0, []
        for dt, sh in want:
            n = nbytes(self.tt, dt, sh)
            if n == 0:
                ts.append(torch.empty(sh, dtype=dt))
            else:
                ts.append(torch.frombuffer(buf, dtype=torch.uint8, count=n,
                                           offset=off).view(dt).reshape(sh))
            off += n
        self.got = ts[:len(self.outs)]
        if after:
            rep["inputs_after"] = [self.tt.hash_tensor(x)
                                   for x in ts[len(self.outs):]]
        elif inputs_after:
            rep["inputs_after"] = [self.tt.hash_tensor(x)
                                   for x in self.a_in]
        return True

    def call64(self):
        """The reference's outputs in float64 on the staged inputs, or
        None where its model does not run in float64."""
        rep = self.ask({"op": "call64"})
        buf = self.kept()
        torch = self.tt.torch
        if rep.get("ev") != "called64" or buf is None:
            return None
        sizes = [math.prod(sh) for _, sh in self.outs]
        if len(buf) != 8 * sum(sizes):
            return None
        out, off = [], 0
        for (_, sh), k in zip(self.outs, sizes):
            out.append(torch.frombuffer(buf, dtype=torch.float64, count=k,
                                        offset=off).reshape(sh)
                       if k else torch.empty(sh, dtype=torch.float64))
            off += 8 * k
        return out

    def call(self, **req):
        """A call request, timed from here as well (to its reply); its
        outputs are read from the runner's memory after the reply."""
        req["op"] = "call"
        t0 = time.perf_counter_ns()
        rep = self.ask(req, deferred=True)
        rep["view_ns"] = time.perf_counter_ns() - t0
        self.finish_read(rep)
        if rep.get("ev") == "error":
            rep["error"] = self.show(rep.get("message") or "no message")
        if "payload" in rep and not self.take(
                rep, bool(req.get("inputs_after"))):
            rep["error"] = "the runner's reply is incomplete"
        return rep

    def timed_call(self, flush_here, **req):
        """A timed call: on CUDA one request, timed from here, in which
        the runner stages the inputs, flushes in its own queue and calls
        (one round trip: each one is a wake-up of the runner, whose jitter
        the view would hold twice); on the host the inputs are in the
        arena already (put) and the judge flushes the caches before the
        call (the judge and the runners share one core). view_cpu_ns: the
        runner's CPU time from its reply before the call to its reply to
        the call, so that CPU it used between requests counts too.

        The runner's checks of its own process after the call (facts: the
        replaced functions, the global state; on the host a third of its
        work a call and more) come in a request of their own, seen as the
        call is (facts_ns: on the host the runner's CPU time from the
        call's reply to this one's, on CUDA this request's wall time): the
        call's view holds only what the runner must do to call, and a
        candidate that makes its runner skip the checks frees nothing in
        that view to hide an under-report in (the judge compares the two
        sides' checks apart, judge.c kf_judge_checks_view). On the host the
        views tile the runner's time: work left running after a reply is
        in the next view."""
        c0 = self.cpu_reply
        if flush_here:
            self.tt.flush()
        rep = self.call(flush=not flush_here, facts_apart=True, **req)
        rep["view_cpu_ns"] = self.cpu_reply - c0
        if rep.get("ev") == "called" and "error" not in rep:
            c1 = self.cpu_reply
            w0 = time.perf_counter_ns()
            f = self.ask({"op": "facts"})
            rep["facts_ns"] = time.perf_counter_ns() - w0 \
                if self.tt.cuda else self.cpu_reply - c1
            if f.get("ev") == "facts":
                for k in ("threads", "state", "patched", "out_storage",
                          "in_storage"):
                    if k in f:
                        rep[k] = f[k]
            else:
                rep["patched"] = ["the runner's facts request (%s)" %
                                  (f.get("message") or f.get("ev"))]
        return rep

    def quit(self):
        if self.spare:
            self.end()
            return
        try:
            write_frame(self.proc.stdin, {"op": "quit"})
        except (BrokenPipeError, ValueError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.release_build()

    def release_build(self):
        """Once the runner has ended: what it built in its own build
        directory that the candidate's lacks linked back, and its own
        removed (none of it kept when it was stopped for its entries)."""
        self.drop_build_if_over()
        if self.spare_build:
            if self.build_dir:
                try:
                    link_tree(self.spare_build, self.build_dir,
                              only_new=True)
                except OSError:
                    pass
            shutil.rmtree(self.spare_build, ignore_errors=True)
            self.spare_build = None

    def drop_build_if_over(self):
        """A build directory stopped for its entries (BUILD_ENTRIES_CAP):
        nothing of it is kept for a next evaluation."""
        if self.over and self.over[0] == "files":
            for d in (self.spare_build, self.build_dir):
                if d:
                    shutil.rmtree(d, ignore_errors=True)
            self.build_dir = None

    def adopt(self, files):
        """A spare runner's candidate (files: the task, then the candidate's
        files): each file copied into the inbox, and the candidate's own
        build directory (build_dir, keyed by the same content as a cold
        runner's) linked into the spare's (link_tree). Returns the paths
        the runner opens them by."""
        inside = {}
        for k, f in enumerate(files[1:]):
            name = os.path.basename(f) if k == 0 else \
                "%d-%s" % (k, os.path.basename(f))
            shutil.copyfile(f, os.path.join(self.inbox_dir, name))
            inside[f] = SPARE_INBOX + "/" + name
            self.shown[inside[f]] = f
        self.build_dir = build_dir(files)
        link_tree(self.build_dir, self.spare_build)
        return inside

    def show(self, text):
        """text with the runner's paths of a spare's files as the user
        named them (a message that names the candidate's file)."""
        if isinstance(text, str):
            for a, b in self.shown.items():
                text = text.replace(a, b)
        return text

    def end(self):
        """Ends the runner and everything in its sandbox: SIGKILL to the
        init of its pid namespace (the kernel kills every process of the
        namespace with it, and the init's exit waits for them), then to
        bwrap, which is reaped. True when both the init and the runner
        are seen gone through their pidfds; False where that cannot be
        told (no pidfd: the caller must not reuse what it shares with
        this runner). A spare's files are then removed, what it built that
        its candidate's build directory lacks linked back, and its
        messages added to this process's."""
        gone = all(fd is not None for fd in self.pidfds)
        for fd in self.pidfds[:1]:
            if fd is not None:
                try:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                except OSError:
                    pass  # it has ended already
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            gone = False
        for fd in self.pidfds:
            if fd is None:
                continue
            p = select.poll()
            p.register(fd, select.POLLIN)
            if not p.poll(10000):
                gone = False
            os.close(fd)
        self.pidfds = [None, None]
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.fd = -1
        self.release_build()
        if self.inbox_dir:
            shutil.rmtree(self.inbox_dir, ignore_errors=True)
            self.inbox_dir = None
        if self.own_err is not None:
            try:
                self.own_err.seek(0)
                while True:
                    b = memoryview(self.own_err.read(1 << 16))
                    if not b:
                        break
                    while b:
                        b = b[os.write(2, b):]
            except OSError:
                pass
            self.own_err.close()
            self.own_err = None
        self.spare = False
        return gone


class Judge:
    def __init__(self, out):
        self.out = out
        self.tt = None
        self.loaded = False
        self.ref = self.cand = None
        self.cand_gone = True  # end_candidate(): the last one seen gone
        # A warm bridge (the load's "warm"): the judge and the reference's
        # runner serve one evaluation after another of the same task
        # (next), each candidate in a runner of its own, started as a
        # spare while the one before was measured.
        self.warm = False
        self.spare = None
        self.fresh()

    def fresh(self):
        """What one evaluation's checks keep between requests, as at the
        judge's start: nothing of an earlier candidate's evaluation is
        read by a later one's."""
        self.loaded = False
        self.noise_rate = {}     # per output: the trials' float noise / n
        self.noise_rel = {}      # per output: the trials' noise / l1_want
        self.timed_scale = None  # the timed inputs' scale, from pair 0
        self.pair_index = 0      # kforge's timing: the next pair's index
        self.ref_idle = []       # the reference's waits between its calls
        self.ref_end = None      # in the pairs (ns; timed_pair, alone)
        self.state0 = None
        self.load_facts = {}
        self.builds = []
        self.kernel = self.baseline = False
        self.near_zero = 0.0     # the trials' near-zero share, for check calls

    def send(self, obj):
        write_frame(self.out, obj)

    def device_desc(self):
        torch = self.tt.torch
        if self.tt.cuda:
            p = torch.cuda.get_device_properties(0)
            return {"kind": "cuda", "name": p.name,
                    "memory_bytes": p.total_memory,
                    "sm_count": p.multi_processor_count,
                    "capability": "%d.%d" % (p.major, p.minor),
                    "torch": torch.__version__,
                    "torch_cuda": torch.version.cuda}
        name = "cpu"
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        name = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return {"kind": "cpu", "name": name, "cores": os.cpu_count() or 0,
                "torch": torch.__version__}

    def input_names(self, model, n):
        import inspect
        names = []
        try:
            params = list(inspect.signature(model.forward).parameters)
            names = [p for p in params if p != "self"]
        except (TypeError, ValueError):
            pass
        if len(names) < n or any(p.startswith("*") for p in names[:n]):
            names = ["in%d" % i for i in range(n)]
        return names[:n]

    def dtype_name(self, dt):
        """The dtype the supervisor compares as: bool and the narrow
        integers compare exactly, like int32."""
        torch = self.tt.torch
        names = {torch.float32: "float32", torch.float64: "float64",
                 torch.float16: "float16", torch.bfloat16: "bfloat16",
                 torch.int32: "int32", torch.int64: "int64"}
        return names.get(dt, "int32")

    # -- loading ---------------------------------------------------------

    # -- loading ---------------------------------------------------------

    def load(self, req):
        task = req["task"]
        # The runners work in their own /tmp: they get absolute paths.
        task_abs = os.path.abspath(task)
        files = [task_abs] + [os.path.abspath(req[k])
                              for k in ("candidate", "kernel") if req.get(k)]
        if self.ref is not None:
            return {"ev": "error", "message": "load: loaded already (a "
                    "warm bridge's next evaluation is next)"}
        self.warm = bool(req.get("warm"))
        try:
            # Both runners start first, so that their start (torch's
            # import, the device's context) and this process's own import
            # of torch are paid side by side, not one after the other.
            cuda = req.get("backend") == "cuda"
            set_cuda_arch_list(req.get("backend"))
            if not cuda:
                pin_here()  # before the runners start: they inherit it
            self.ref = Side(cuda, "reference", sys.executable, [task_abs])
            self.cand = Side(cuda, "candidate", sys.executable, files,
                             builds=True)
        except ConfineError as e:
            return {"ev": "load_error", "what": "sandbox",
                    "message": str(e)}
        self.tt = tt = Torch(req.get("backend"))
        self.ref.attach(tt)
        self.cand.attach(tt)
        self.task_abs, self.backend = task_abs, req.get("backend")
        self.protocol = req.get("protocol") or "kforge"
        self.ref_layout = None
        return self.load_pair(req, {})

    def next(self, req):
        """A warm bridge's next evaluation of its task: the candidate's
        runner of the evaluation before ended (end), every per-evaluation
        state fresh, the reference's model made again under this
        evaluation's seed (its parameters drawn again) in the same
        runner, and the candidate loaded into the spare runner, started
        when the candidate before was loaded. The reply is load's."""
        if not self.warm or self.ref is None or self.tt is None:
            return {"ev": "error", "message": "next: not a warm bridge "
                    "with its reference loaded"}
        task_abs = os.path.abspath(req["task"])
        if task_abs != self.task_abs or \
                req.get("backend") != self.backend or \
                (req.get("protocol") or "kforge") != self.protocol:
            return {"ev": "error", "message": "next: this bridge serves "
                    "%s (%s, %s protocol) only" % (
                        self.task_abs, self.backend, self.protocol)}
        if self.cand is not None and not self.end_candidate():
            return {"ev": "error", "message": "next: the candidate "
                    "runner before could not be seen ended"}
        files = [task_abs] + [os.path.abspath(req[k])
                              for k in ("candidate", "kernel") if req.get(k)]
        spare, self.spare = self.spare, None
        if spare is not None and spare.proc.poll() is not None:
            spare.end()  # it ended while it waited: another one
            spare = None
        try:
            if spare is None:
                spare = self.new_spare()
            inside = spare.adopt(files)
        except (ConfineError, OSError) as e:
            if spare is not None:
                spare.end()
            return {"ev": "load_error", "what": "sandbox",
                    "message": "the candidate's runner: %s" % e}
        self.cand = spare
        if not self.tt.cuda:
            pin_here()
        return self.load_pair(req, inside)

    def new_spare(self):
        """A candidate's runner for the next evaluation, started now, with
        this process's affinity as the first runners had theirs."""
        side = Side(self.tt.cuda, "candidate", sys.executable,
                    [self.task_abs], spare=True)
        side.attach(self.tt)
        return side

    def start_spare(self):
        """A warm bridge starts the next candidate's runner as soon as this
        candidate is loaded: its start (torch's import, the device's
        context) runs while this one is measured."""
        if self.warm and self.spare is None:
            try:
                self.spare = self.new_spare()
            except (ConfineError, OSError):
                self.spare = None  # next starts one and says why

    def end_candidate(self):
        """Ends the candidate's runner and its sandbox (Side.end); True
        when they were seen gone (when it had ended already: whether it
        was seen gone then)."""
        cand, self.cand = self.cand, None
        self.loaded = False
        if cand is not None:
            self.cand_gone = cand.end()
        return self.cand_gone

    def alone(self, req):
        """The reference alone, once the candidate's runner and its sandbox
        have ended (end_candidate: with them every context, stream and
        kernel of the candidate's): calls timed as the pairs' are, on
        inputs of their own. The judge holds the reference's calls beside
        the candidate to these (judge.c, kf_judge_interference): a
        candidate that keeps the device busy while the reference is timed
        makes its own speedup."""
        n = int(req.get("calls", 15))
        kb = req.get("protocol") == "kernelbench"
        seed = int(req.get("seed", "1")) % (1 << 62)
        gone = self.end_candidate()
        # Each call after the reference's runner waited as long as it did
        # between its calls in the pairs (the median wait, at most 50 ms),
        # while the candidate's side called and the judge compared: on a
        # loaded machine a process woken after a wait runs its first
        # microseconds slower (caches, a core to find), and a launch-bound
        # reference called back to back was measured faster alone than
        # beside an honest candidate, by 0.038 ms (4_Constant_relu, eight
        # busy loops and four evaluations on 16 cores, H100, 2026-12-07).
        idle = sorted(self.ref_idle)
        wait = min(idle[len(idle) // 2], 50_000_000) if idle else 0
        ns = []
        for k in range(n):
            if wait > 0:
                time.sleep(wait / 1e9)
            self.ref.put(self.timing_tensors(seed, (1 << 42) + k))
            r = self.ref.timed_call(not self.tt.cuda, kb=kb)
            if self.fault(r):
                return None
            if r.get("error"):
                return {"ev": "error", "message": "timing (the reference "
                        "alone): the reference raised %s" % r["error"]}
            ns.append(r["ns"])
        return {"ev": "alone", "ref_ns": ns, "gone": bool(gone)}

    def end(self, req):
        """After a warm bridge's evaluation: every process back on the
        cores it had before the pin (unpin), then the candidate's runner
        ended (end_candidate). The reply says whether it was seen gone:
        only then may the bridge serve another candidate."""
        self.unpin()
        gone = self.end_candidate()
        return {"ev": "ended", "gone": bool(gone),
                "spare": self.spare is not None}

    def load_pair(self, req, inside):
        """The task's inputs and reference, then the candidate (in
        self.cand; inside: the paths of a spare's files in its root),
        for one evaluation."""
        self.fresh()
        tt = self.tt
        torch = tt.torch
        task = req["task"]
        task_abs = self.task_abs
        if self.protocol not in ("kforge", "kernelbench"):
            return {"ev": "error",
                    "message": "load: unknown protocol '%s'" % self.protocol}
        if tt.cuda and not torch.cuda.is_available():
            return {"ev": "load_error", "what": "backend",
                    "message": "torch %s sees no CUDA device"
                    % torch.__version__}
        seed = int(req.get("seed", "42")) % (1 << 63)
        self.kb_seed = seed
        # Timed inputs come from a secret of this process as well as the
        # seed: even a candidate that knows the seed cannot predict them.
        self.salt = int.from_bytes(os.urandom(8), "little")
        try:
            mod = import_file(task, "kforge_task")
            for name in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(mod, name):
                    raise AttributeError("the task defines no %s" % name)
            self.get_inputs = mod.get_inputs
            ins = tt.make_inputs(mod.get_inputs, seed, 0)
            others = [None if isinstance(x, torch.Tensor) else x
                      for x in ins]
            json.dumps(others, allow_nan=False)
        except (TypeError, ValueError) as e:
            return {"ev": "load_error", "what": "task",
                    "message": "%s: get_inputs() returns a value that is "
                    "neither a tensor nor plain JSON data (%s)" % (task, e)}
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "task",
                    "message": said(e, task)}
        # The candidate's runner never receives the seed: it gets its
        # inputs and its parameters from here, as tensors.
        common = {"op": "load", "backend": req.get("backend"),
                  "protocol": self.protocol, "task": task_abs}
        rep = self.ref.ask(dict(common, role="ref",
                                seed=req.get("seed", "42")))
        if rep.get("ev") != "loaded":
            return rep
        out_meta = rep["outputs"]
        state_meta = rep["state"]
        names = self.input_names(mod.Model, len(ins))
        self.in_names = [names[i] for i, x in enumerate(ins)
                         if isinstance(x, torch.Tensor)]
        self.out_names = ["out" if len(out_meta) == 1 else "out%d" % j
                          for j in range(len(out_meta))]
        self.out_shapes = [list(o["shape"]) for o in out_meta]
        tens = [x for x in ins if isinstance(x, torch.Tensor)]
        in_specs, end = layout(tt, [(n, tt.names[x.dtype], list(x.shape))
                                    for n, x in zip(self.in_names, tens)],
                               0)
        st_specs, end = layout(tt, [(s["name"], s["dtype"], s["shape"])
                                    for s in state_meta], end)
        out_specs, _ = layout(tt, [(n, o["dtype"], o["shape"])
                                   for n, o in zip(self.out_names,
                                                   out_meta)], 0)
        self.layout = (end, in_specs, out_specs, st_specs, others)
        # The reference's arena keeps its layout while the task's shapes
        # do (a warm bridge's next evaluation): its runner registered it
        # with the device once.
        if self.layout != self.ref_layout:
            self.ref_layout = None
            rep = self.ref.lay_out(*self.layout)
            if rep.get("ev") != "ok":
                return rep
            self.ref_layout = self.layout
        rep = self.ref.ask({"op": "export_state"})
        if rep.get("ev") != "ok":
            return rep
        self.state = [a.clone() for a in self.ref.a_state]
        creq = dict(common, role="cand",
                    out_like=[{"dtype": o["dtype"], "shape": o["shape"]}
                              for o in out_meta])
        for key in ("candidate", "kernel", "baseline"):
            if req.get(key):
                creq[key] = req[key] if key == "baseline" else \
                    os.path.abspath(req[key])
                creq[key] = inside.get(creq[key], creq[key])
        self.kernel = bool(req.get("kernel"))
        self.baseline = bool(req.get("baseline"))
        failed = failed_build(self.cand.build_dir)
        if failed and req.get("candidate"):
            self.start_spare()
            return failed
        self.cand.loading = True
        try:
            rep = self.cand.ask(creq)
        finally:
            self.cand.loading = False
        self.start_spare()
        if "message" in rep:
            rep["message"] = self.cand.show(rep["message"])
        if rep.get("ev") == "load_error" and rep.get("what") == "compile":
            remember_failed_build(self.cand.build_dir, rep)
        if rep.get("ev") != "loaded":
            return rep
        self.builds = rep.get("builds") or []
        load_ns = rep.get("load_ns", 0)
        self.state0 = rep.get("state0")
        self.load_facts = rep.get("facts") or {}
        why = self.cand.loaded(refuse=not self.baseline)
        if why:
            return {"ev": "load_error", "what": "confinement",
                    "message": "the candidate's runner could not have its "
                    "new processes refused: %s" % why}
        rep = self.cand.lay_out(*self.layout)
        if rep.get("ev") != "ok":
            return rep
        for a, x in zip(self.cand.a_state, self.state):
            a.copy_(x)
        rep = self.cand.ask({"op": "import_state"})
        if rep.get("ev") != "ok":
            return rep
        unmatched = rep.get("unmatched") or []
        tens_in = [{"name": n, "dtype": self.dtype_name(x.dtype),
                    "shape": list(x.shape)}
                   for n, x in zip(self.in_names, tens)]
        tens_out = [{"name": n, "dtype": self.dtype_name(
                     tt.dtypes[o["dtype"]]), "shape": o["shape"]}
                    for n, o in zip(self.out_names, out_meta)]
        self.loaded = True
        flops, bytes_ = task_figure(mod, "get_flops"), \
            task_figure(mod, "get_bytes")
        return {"ev": "loaded", "device": self.device_desc(),
                "builds": getattr(self, "builds", []),
                "inputs": tens_in, "outputs": tens_out,
                "candidate_load_ns": load_ns,
                "state": {"tensors": len(self.state),
                          "randomized": "reference", "unmatched":
                          unmatched[:32]},
                "flops": flops, "bytes": bytes_,
                "python": sys.version.split()[0],
                "runners": {"reference": self.ref.pid,
                            "candidate": self.cand.pid}}

    def pin(self, req):
        """Before the trials: every thread of this process and of both
        runners on one core, the request's ("core") or the one this
        process runs on (pin_sides). A batch loads the next evaluations
        while one is measured, and names a core none of them may use."""
        core = req.get("core")
        if core is not None and (not isinstance(core, int) or core < 0 or
                                 core >= (os.cpu_count() or 1)):
            return {"ev": "error", "message": "pin: no core %r" % (core,)}
        try:
            self.unpinned = os.sched_getaffinity(0)
        except OSError:
            self.unpinned = None
        self.pin_sides(core)
        return {"ev": "pinned", "core": this_cpu()}

    def unpin(self):
        """On quit: every thread of this process and of both runners back
        on the cores they had before the pin (a batch's loading cores), so
        that their exit (interpreters, device contexts: 2.1 s a bridge on
        an H100) runs beside the next evaluation's measurement, not on its
        core."""
        cores = getattr(self, "unpinned", None)
        self.unpinned = None
        if cores:
            self.pin_sides(cores)

    def pin_sides(self, cpu=None):
        """Once both runners are loaded (their builds done, which may use
        every core): every thread of this process and of both runners on
        one core, cpu or the one this process runs on. A call's view
        is wall time through three processes; spread over the machine,
        each request woke a runner on a core of the scheduler's choice,
        idle or not, and the two sides of an A/A pair differed by 0.1-0.25
        ms a call in their views (lower deciles, an H100, 2026-12-06),
        over the device rule's limit. On one core the two sides share
        every condition, and neither has a core the other lacks; judge.c
        then compares their affinities on CUDA as on the host. On the
        host the runners started on the judge's core already (pin_here);
        the batch's core moves all three."""
        if cpu is None:
            cpu = this_cpu()
        if cpu is None:
            return
        cores = set(cpu) if isinstance(cpu, (set, frozenset)) else {cpu}
        for side in (None, self.ref, self.cand):
            pid = os.getpid() if side is None else getattr(side, "pid", None)
            if pid is None:
                continue
            try:
                tids = os.listdir("/proc/%d/task" % pid)
            except OSError:
                continue
            for tid in tids:
                try:
                    os.sched_setaffinity(int(tid), cores)
                except (OSError, ValueError):
                    pass  # a thread that ended meanwhile

    def tensors(self, seed, dist):
        return [x for x in self.tt.make_inputs(self.get_inputs, seed, dist)
                if isinstance(x, self.tt.torch.Tensor)]

    def timing_tensors(self, seed, p):
        """Fresh inputs of timed call p: get_inputs() under a seed of
        their own, mixed with this process's secret."""
        return self.tensors(mix64(self.salt, seed, p) % (1 << 62), 0)

    def in_scale(self, base):
        """The mean magnitude of the floating inputs (else of the floating
        parameters): the scale of the computation, which the precision
        check's floor is taken from when an output is near zero."""
        torch = self.tt.torch
        for group in (base, self.state):
            fl = [x for x in group if x.is_floating_point() and x.numel()]
            if fl:
                tot = sum(float(x.detach().to(torch.float64).abs().sum())
                          for x in fl)
                n = sum(x.numel() for x in fl)
                return tot / n if math.isfinite(tot) else 0.0
        return 0.0

    # -- the checks of a candidate's call --------------------------------

    def call_facts(self, c, r, kb):
        """What the judge's checks of the candidate's process look at
        (judge.c, kf_judge_bridge_facts), raw: nothing is decided here.
        c: the reply to a candidate's call (None: the process as loaded),
        r: the reference's reply on the same inputs (None where it did
        not run); kb: the call ran under KernelBench's protocol. The thread and core
        budget (torch's intra-op threads as the runner reports them, its
        affinity and its threads as seen from here), the processes left in
        its namespace, the global flags against those it was loaded with,
        outputs sharing memory with an input where the reference's do
        not, the outputs' types and shapes, and the watch of a CUDA
        call."""
        src = self.load_facts if c is None else c
        f = {"when": "when loaded" if c is None else "during its calls",
             "kb": bool(kb), "baseline": self.baseline,
             "cuda": bool(self.tt.cuda), "threads_budget": THREADS,
             "threads": src.get("threads", THREADS)}
        f["processes"], f["children_cpu_ns"] = self.cand.outside()
        try:
            f["cpus"] = sorted(os.sched_getaffinity(self.cand.pid))
            f["cpus_ref"] = sorted(os.sched_getaffinity(self.ref.pid))
        except OSError:
            pass
        f["os_threads"] = os_threads(self.cand.pid)
        f["os_threads_ref"] = os_threads(self.ref.pid)
        if src.get("patched"):
            f["patched"] = src["patched"]
        if c is None:
            return f
        if c.get("bad_outputs"):
            f["bad_outputs"] = c["bad_outputs"]
        if c.get("watch"):
            f["watch"] = c["watch"]
        lw = c.get("late_write")
        if lw is not None:
            n = len(self.out_names)
            f["late_write"] = self.out_names[lw] if lw < n else \
                "the copy of input %d" % (lw - n)
        if self.state0 is not None and "state" in c:
            f["state"], f["state0"] = c["state"], self.state0
        ins = c.get("in_storage") or []
        r = r or {}
        rins = r.get("in_storage") or []
        alias = []
        for j, y in enumerate(c.get("out_storage") or []):
            for i, x in enumerate(ins):
                if not overlaps(y, x):
                    continue
                ry = r.get("out_storage") or []
                ref_too = j < len(ry) and i < len(rins) and \
                    overlaps(ry[j], rins[i])
                alias.append({
                    "output": self.out_names[j] if j < len(self.out_names)
                    else str(j),
                    "input": self.in_names[i] if i < len(self.in_names)
                    else str(i), "reference_too": ref_too})
        # Seen from outside: an output region that maps an input's (or a
        # parameter's) pages of the arena, at any address.
        n_in = len(self.in_names)
        for j, k in c.get("mapped_inputs") or []:
            if j >= len(self.out_names):
                continue  # the inputs' own regions (CUDA: after the call)
            name = self.in_names[k] if k < n_in else \
                "parameter %d" % (k - n_in)
            item = {"output": self.out_names[j], "input": name,
                    "reference_too": False}
            if item not in alias:
                alias.append(item)
        if alias:
            f["aliases"] = alias
        if c.get("shapes") is not None:
            f["shapes"] = c["shapes"]
            f["shapes_want"] = [list(w) for w in self.out_shapes]
            f["output_names"] = list(self.out_names)
        return f

    def add_facts(self, rep, f):
        """Appends f to rep's facts unless it equals the last one there
        (the judge reads each distinct one)."""
        fl = rep.setdefault("facts", [])
        if not fl or fl[-1] != f:
            fl.append(f)

    @staticmethod
    def nothing_to_compare(c):
        """A reply with no outputs to compare: not plain tensors, or not
        of the reference's shapes (the runner then copies none)."""
        return bool(c.get("bad_outputs")) or c.get("shapes") is not None

    # -- comparisons -----------------------------------------------------

    def on_device(self, t):
        return t.to(self.tt.dev) if self.tt.cuda else t

    def compare(self, got, want, kb):
        """The match rule of docs/results.md over two tensors of one
        shape; kb: KernelBench's rule (torch.allclose, NaN never equal)."""
        torch = self.tt.torch
        g = self.on_device(got).to(torch.float64).reshape(-1)
        w = self.on_device(want).to(torch.float64).reshape(-1)
        n = w.numel()
        fl = want.is_floating_point()
        atol = KB_TOL if fl else 0.0
        rtol = KB_TOL if fl else 0.0
        gn, wn = torch.isnan(g), torch.isnan(w)
        gi, wi = torch.isinf(g), torch.isinf(w)
        fin = torch.isfinite(g) & torch.isfinite(w)
        diff = torch.where(fin, (g - w).abs(), torch.zeros_like(w))
        allowed = atol + rtol * w.abs()
        ok = fin & (diff <= torch.where(fin, allowed, diff))
        ok = ok | ((gi | wi) & (g == w))
        if not kb:
            ok = ok | (gn & wn)
        bad = ~ok
        # The worst element: furthest outside the tolerance; a non-finite
        # disagreement counts as infinitely far.
        score = torch.where(fin, diff / allowed.clamp_min(1e-300),
                            torch.full_like(w, math.inf))
        score = torch.where(bad, score, torch.full_like(w, -1.0))
        st = {"n": n, "mismatches": int(bad.sum().item()), "unwritten": 0,
              "nan_got": int(gn.sum().item()),
              "inf_got": int(gi.sum().item()),
              "nan_want": int(wn.sum().item()),
              "inf_want": int(wi.sum().item())}
        if n:
            worst = int(score.argmax().item()) if st["mismatches"] else \
                int(diff.argmax().item())
            st["worst_index"] = worst
            st["worst_got"] = jnum(float(g[worst].item()))
            st["worst_want"] = jnum(float(w[worst].item()))
        else:
            st["worst_index"] = -1
            st["worst_got"] = st["worst_want"] = 0
        st["max_abs"] = float(diff.max().item()) if n else 0.0
        rel = torch.where(fin & (w != 0), diff / w.abs().clamp_min(1e-300),
                          torch.zeros_like(w))
        st["max_rel"] = float(rel.max().item()) if n else 0.0
        st["l1_err"] = float(diff.sum().item())
        st["l1_want"] = float(torch.where(fin, w.abs(),
                                          torch.zeros_like(w)).sum().item())
        wf = w[torch.isfinite(w)]
        if wf.numel():
            st["want_mean"] = float(wf.mean().item())
            st["want_std"] = float(wf.std(unbiased=False).item())
            st["want_min"] = float(wf.min().item())
            st["want_max"] = float(wf.max().item())
        else:
            st["want_mean"] = st["want_std"] = 0.0
            st["want_min"] = st["want_max"] = 0.0
        return st

    def noise(self, want, exact):
        """sum |want - exact| over the elements finite in both: how far the
        reference's output is from its float64 run."""
        torch = self.tt.torch
        w = self.on_device(want).to(torch.float64).reshape(-1)
        x = self.on_device(exact).to(torch.float64).reshape(-1)
        fin = torch.isfinite(w) & torch.isfinite(x)
        return float(torch.where(fin, (w - x).abs(),
                                 torch.zeros_like(w)).sum().item())

    def unwritten(self, got, want):
        """Elements of got that still hold the poison where want does
        not: only a kforge kernel's outputs are allocated and poisoned
        here; a model's are its own."""
        if not self.kernel:
            return 0
        it, v = self.tt.poison_bits(got.dtype)
        g = got.contiguous().view(it).reshape(-1) == v
        w = want.contiguous().view(it).reshape(-1) == v
        return int((g & ~w).sum().item())

    # -- trials ----------------------------------------------------------

    def fault(self, rep):
        """Forwards a runner's fault (its device is unusable); True when
        there was one."""
        if rep.get("ev") == "fault":
            self.send(rep)
            return True
        return False

    # -- trials ----------------------------------------------------------

    def trial(self, req):
        torch = self.tt.torch
        kb = self.protocol == "kernelbench"
        index = int(req.get("index", 0))
        seed = int(req.get("seed", "1")) % (1 << 63)
        dists = req.get("dists") or [0]
        dist = int(dists[0]) if dists else 0
        if kb:
            # KernelBench's trial seeds: drawn from a generator seeded
            # with the base seed.
            g = torch.Generator().manual_seed(self.kb_seed)
            seeds = [int(torch.randint(0, 2 ** 32 - 1, (1,),
                                       generator=g).item())
                     for _ in range(index + 1)]
            seed, dist = seeds[index], 0
        base = self.tensors(seed, dist)
        before = [self.tt.hash_tensor(x) for x in base]
        self.ref.put(base)
        self.cand.put(base)
        rep = {"ev": "trial", "index": index, "input_seed": str(seed),
               "in_scale": self.in_scale(base)}
        probe = bool(req.get("probe_custom"))
        # The near-zero share, for the check calls among the timed ones.
        self.near_zero = float(req.get("near_zero", 0))
        if kb:
            # KernelBench runs the reference first.
            r = self.ref.call(kb=True)
            c = self.cand.call(kb=True, inputs_after=True, probe=probe)
            if probe:
                rep["custom_calls"] = c.get("custom")
        else:
            c = self.cand.call(watch=True, inputs_after=True)
            r = self.ref.call()
        for x in (c, r):
            if self.fault(x):
                return None
        rep["ref_rc"] = 1 if r.get("error") else 0
        rep["ref_ns"] = r.get("ns", 0)
        if r.get("error"):
            rep["ref_error"] = r["error"]
            return rep
        rep["cand_rc"] = 1 if c.get("error") else 0
        rep["cand_ns"] = c.get("ns", 0)
        if c.get("error"):
            rep["cand_error"] = c["error"]
            return rep
        if index == 0:
            self.add_facts(rep, self.call_facts(None, None, kb))
        self.add_facts(rep, self.call_facts(c, r, kb))
        if self.nothing_to_compare(c):
            return rep
        want = self.ref.got
        outs = self.trial_outputs(rep, req, kb, True)
        after = c.get("inputs_after") or before
        rep["inputs"] = [{"name": self.in_names[i], "before": b,
                          "after": a}
                         for i, (b, a) in enumerate(zip(before, after))]
        rep["outputs"] = outs
        if kb:
            rep["cand_rc_2"] = 0
            for o in outs:
                o["checksum_2"] = o["checksum_1"]
            return rep
        # The second call, on the same inputs (with the candidate's own
        # code counted, when the judge asks).
        self.cand.put(base)
        c2 = self.cand.call(probe=probe)
        if self.fault(c2):
            return None
        if probe:
            rep["custom_calls"] = c2.get("custom")
        rep["cand_rc_2"] = 1 if c2.get("error") else 0
        if c2.get("error"):
            rep["cand_error"] = c2["error"]
            return rep
        self.add_facts(rep, self.call_facts(c2, r, False))
        if c2.get("bad_outputs"):
            return rep
        if c2.get("shapes") is not None:
            for o in outs:
                o["checksum_2"] = "shape"
                o["mismatches_2"] = o["n"]
            return rep
        for j, g in enumerate(self.cand.got):
            o = outs[j]
            o["checksum_2"] = self.tt.hash_tensor(g)
            if o["checksum_2"] != o["checksum_1"]:
                o["mismatches_2"] = self.compare(g, want[j],
                                                 False)["mismatches"]
        return rep

    def trial_outputs(self, rep, req, kb, learn):
        """The comparisons of a trial's outputs (the candidate's last call
        against the reference's on the same inputs; kb: KernelBench's
        rule), with the reference's float noise; learn: keep that noise as
        the yardstick of the timed outputs (trials only, not the check
        calls among the timed ones). KernelBench's protocol does not judge
        its trials by it, but its timed outputs are held to it too."""
        got, want = self.cand.got, self.ref.got
        outs = []
        exact = None
        # The share of the inputs' scale under which the judge calls an
        # output near zero and compares it at the reference's own float
        # noise (judge.c, KF_BRIDGE_NEAR_ZERO).
        near_zero = float(req.get("near_zero", 0))
        for j, (g, w) in enumerate(zip(got, want)):
            st = self.compare(g, w, kb)
            st["unwritten"] = self.unwritten(g, w)
            st["name"] = self.out_names[j]
            st["checksum_ref"] = self.tt.hash_tensor(w)
            st["checksum_1"] = self.tt.hash_tensor(g)
            if w.is_floating_point() and st["n"]:
                # The reference's own float noise on these inputs, from
                # its float64 run, for the judge's precision check: its
                # floor where the output is near zero, and the yardstick
                # for errors that lower-precision operands leave once a
                # reduction has averaged them below the fixed bound.
                if exact is None:
                    exact = self.ref.call64() or []
                if j < len(exact):
                    noise = self.noise(w, exact[j])
                    st["l1_noise64"] = noise
                    if st["l1_want"] > 0 and learn:
                        self.noise_rel[j] = max(
                            self.noise_rel.get(j, 0.0),
                            noise / st["l1_want"])
                    if st["l1_want"] < near_zero * st["n"] * \
                            rep["in_scale"]:
                        # Near zero against the inputs' scale: compared
                        # at that noise (judge.c); its rate per element,
                        # for the timed outputs.
                        st["l1_noise"] = noise
                        if learn:
                            self.noise_rate[j] = max(
                                self.noise_rate.get(j, 0.0),
                                noise / st["n"])
            outs.append(st)
        return outs

    def check_call(self, ck, near_zero, ref_before=False):
        """A check call among the timed pairs (the supervisor's "checks",
        judge.c): inputs drawn as the timed calls' are (ck["like"] is
        "timed": get_inputs() under a seed of the check's own, mixed with
        this process's secret, so that neither their values nor their
        statistics tell them from a timed call's), or fresh inputs drawn as
        for trial ck["trial"] (its values reshaped) under the check's own
        seed; the candidate called exactly as in a timed call (the same
        request and flush), then the reference and its float64 run. The
        frame has a trial's form, one call of the candidate (checksum_2 is
        checksum_1); None after a fault was sent. ref_before: the next
        pair calls the reference first, and so does this (a throwaway
        call), so that the time since the candidate's last call is a
        pair's."""
        timed = ck.get("like") == "timed"
        dist = 0 if timed else int((ck.get("dists") or [0])[0])
        seed = int(ck.get("seed", "1")) % (1 << 63)
        base = self.timing_tensors(seed, 1 << 43) if timed else \
            self.tensors(seed, dist)
        before = [self.tt.hash_tensor(x) for x in base]
        self.ref.put(base)
        self.cand.put(base)
        rep = {"ev": "check", "at": ck.get("at"),
               "like": "timed" if timed else "trial",
               "seed": str(seed), "dists": [dist],
               "in_scale": self.in_scale(base)}
        if not timed:
            rep["trial"] = ck.get("trial")
        rep["ref_before"] = bool(ref_before)
        # Asked exactly as a timed call is (the request a runner serves is
        # within reach of the candidate's code, sys._getframe: a check
        # call without inputs_after told itself apart, blind round 25).
        if ref_before:
            r0 = self.ref.timed_call(not self.tt.cuda, kb=False,
                                     inputs_after=False)
            if self.fault(r0):
                return None
        c = self.cand.timed_call(not self.tt.cuda, kb=False,
                                 inputs_after=False)
        if self.fault(c):
            return None
        r = self.ref.call()
        if self.fault(r):
            return None
        rep["ref_rc"] = 1 if r.get("error") else 0
        if r.get("error"):
            rep["ref_error"] = r["error"]
            return rep
        rep["cand_rc"] = 1 if c.get("error") else 0
        if c.get("error"):
            rep["cand_error"] = c["error"]
            return rep
        self.add_facts(rep, self.call_facts(c, r, False))
        if self.nothing_to_compare(c):
            return rep
        outs = self.trial_outputs(rep, {"near_zero": near_zero}, False,
                                  False)
        for o in outs:
            o["checksum_2"] = o["checksum_1"]
        rep["outputs"] = outs
        rep["cand_rc_2"] = 0
        rep["inputs"] = [{"name": self.in_names[i], "before": b, "after": b}
                         for i, b in enumerate(before)]
        return rep

    # -- timing ----------------------------------------------------------

    def samples(self, kb):
        """An empty samples frame. The raw numbers of each call (docs/
        results.md, "Worker frames"): cand_ns and ref_ns are each runner's
        own measurement (ns_clock: on the host the CPU time of its calling
        thread, on CUDA its events), cand_wall_ns and ref_wall_ns the
        judge's view of the same call from outside (view_clock: on the
        host the runner process's CPU time, all threads, from its reply
        before the call's staging to its reply to the call; on CUDA the
        wall time of the two requests)."""
        cuda = self.tt.cuda
        return {"ev": "samples", "cand_ns": [], "ref_ns": [],
                "protocol": "kernelbench" if kb else "kforge",
                "cand_wall_ns": [], "ref_wall_ns": [],
                "ns_source": "runner",
                "ns_clock": "cuda_event" if cuda else "thread_cpu",
                "view_clock": "wall" if cuda else "process_cpu",
                "cand_rc_nonzero": 0, "cand_cuda_errors": 0,
                "check": {"mismatches": 0, "unwritten": 0,
                          "first_bad_pair": -1, "inputs_intact": True}}

    def finish_samples(self, rep):
        n = len(rep["cand_ns"])
        rep.update({"cand_mhz": [0] * n, "ref_mhz": [0] * n,
                    "cand_throttled": [False] * n,
                    "ref_throttled": [False] * n,
                    "cand_kernels": [-1] * n, "cand_streams": [-1] * n})
        return rep

    def timed_pair(self, p, base, order, kb, last):
        """Calls both sides on base; returns (candidate's reply,
        reference's reply), or None after a fault was sent."""
        if self.timed_scale is None:
            # The timed inputs' scale (their distribution is one): from
            # the first pair's, for the precision floor.
            self.timed_scale = self.in_scale(base)
        self.ref.put(base)
        self.cand.put(base)
        got = {}
        for side in order:
            t0 = time.perf_counter_ns()
            got[side.name] = side.timed_call(not self.tt.cuda, kb=kb,
                                             inputs_after=last)
            if side is self.ref:
                if self.ref_end is not None and len(self.ref_idle) < 4096:
                    self.ref_idle.append(t0 - self.ref_end)
                self.ref_end = time.perf_counter_ns()
            if self.fault(got[side.name]):
                return None
        return got["candidate"], got["reference"]

    def judge_pair(self, rep, p, c, r, kb):
        """Adds the checks of one timed pair to rep; False when the pair
        failed (the batch ends there)."""
        chk = rep["check"]
        if c.get("error"):
            rep["cand_rc_nonzero"] += 1
            # What it raised, for the reason (judge.c).
            rep.setdefault("cand_error", c["error"])
            chk["first_bad_pair"] = p
            return False
        self.add_facts(rep, self.call_facts(c, r, kb))
        if self.nothing_to_compare(c):
            chk["first_bad_pair"] = p
            return False
        bad = unw = 0
        worst = chk.setdefault("outputs", [{"pair": -1} for _ in
                                           self.cand.got])
        for j, (g, w) in enumerate(zip(self.cand.got, self.ref.got)):
            st = self.compare(g, w, False)
            bad += st["mismatches"]
            unw += self.unwritten(g, w)
            # Each output's pair with the largest L1 relative error, for
            # the precision check of timed outputs (judge.c).
            rel = st["l1_err"] / max(st["l1_want"], 1e-300)
            if w.is_floating_point() and rel > worst[j].get("rel", -1.0):
                o = {"pair": p, "rel": rel, "n": st["n"],
                     "l1_err": st["l1_err"], "l1_want": st["l1_want"],
                     "max_abs": st["max_abs"],
                     "want_absmax": max(abs(st["want_min"]),
                                        abs(st["want_max"])),
                     "in_scale": self.timed_scale}
                rate = self.noise_rate.get(j)
                if rate is not None:
                    o["l1_noise"] = rate * st["n"]
                # The trials' largest noise relative to the norm, scaled
                # to this output: the yardstick of the precision check.
                nrel = self.noise_rel.get(j)
                if nrel is not None:
                    o["l1_noise64"] = nrel * st["l1_want"]
                worst[j] = o
        if bad or unw:
            chk["mismatches"] += bad
            chk["unwritten"] += unw
            chk["first_bad_pair"] = p
            return False
        return True

    def record(self, rep, c, r):
        view = "view_ns" if self.tt.cuda else "view_cpu_ns"
        rep["cand_ns"].append(c["ns"])
        rep["ref_ns"].append(r["ns"])
        rep["cand_wall_ns"].append(c.get(view, 0))
        rep["ref_wall_ns"].append(r.get(view, 0))
        if "facts_ns" in c and "facts_ns" in r:
            rep.setdefault("cand_facts_ns", []).append(c["facts_ns"])
            rep.setdefault("ref_facts_ns", []).append(r["facts_ns"])

    def time_kernelbench(self, req):
        """KernelBench's timing, with fresh inputs for every call: 3
        warm-up calls, then calls timed one by one, each after the flush,
        the reference's call and the candidate's on the same new inputs,
        every output of the candidate compared with the reference's; the
        first timed call is dropped. The two sides take turns going first,
        as in kforge's protocol: with the reference always first, an
        honest candidate's share of its view ran 8-11 us a call below the
        reference's on the host, room under the charge (the mean
        difference) that a forged clock filled for a gain of up to 1.17x
        on a 0.12 ms call."""
        calls = int(req.get("calls", 101))
        rep = self.samples(True)
        for k in range(3 + calls):
            base = self.timing_tensors(self.kb_seed, (1 << 40) + k)
            order = (self.ref, self.cand) if k % 2 == 0 else \
                (self.cand, self.ref)
            pair = self.timed_pair(k, base, order, True, k == 2 + calls)
            if pair is None:
                return None
            c, r = pair
            if r.get("error"):
                return {"ev": "error", "message": "timing: the reference "
                        "raised %s" % r["error"]}
            if not self.judge_pair(rep, k, c, r, True):
                break
            if k == 2 + calls:
                # The inputs after the last call, as kforge's protocol
                # checks them after each batch's last pair.
                want = [self.tt.hash_tensor(x) for x in base]
                rep["check"]["inputs_intact"] = \
                    c.get("inputs_after") == want
            # KernelBench drops the first timed call.
            if k >= 4:
                self.record(rep, c, r)
        return self.finish_samples(rep)

    def time_pairs(self, req):
        """kforge's timing: interleaved pairs, fresh inputs for each pair,
        every candidate output checked against the reference's."""
        if req.get("protocol") == "kernelbench":
            return self.time_kernelbench(req)
        seed = int(req.get("seed", "1")) % (1 << 62)
        pairs = int(req.get("pairs", 10))
        warmup = int(req.get("warmup", 0))
        rep = self.samples(False)
        rep["checks"] = []
        checks = req.get("checks") or []
        first = self.pair_index
        for k in range(warmup + pairs):
            nxt = first if k < warmup else self.pair_index
            for ck in checks:
                if int(ck.get("at", -1)) != k:
                    continue
                f = self.check_call(ck, getattr(self, "near_zero", 0.0),
                                    ref_before=nxt % 4 not in (0, 1))
                if f is None:
                    return None
                f["pair"] = self.pair_index if k >= warmup else -1
                rep["checks"].append(f)
            p = first if k < warmup else self.pair_index
            # Warm-up pairs get inputs of their own: none repeats.
            base = self.timing_tensors(seed, p if k >= warmup else
                                       (1 << 41) + first + k)
            last = k == warmup + pairs - 1
            order = (self.cand, self.ref) if p % 4 in (0, 1) else \
                (self.ref, self.cand)
            pair = self.timed_pair(p, base, order, False, last)
            if pair is None:
                return None
            c, r = pair
            if r.get("error"):
                return {"ev": "error", "message": "timing: the reference "
                        "raised %s" % r["error"]}
            if not self.judge_pair(rep, p, c, r, False):
                break
            if last:
                want = [self.tt.hash_tensor(x) for x in base]
                rep["check"]["inputs_intact"] = \
                    c.get("inputs_after") == want
            if k >= warmup:
                self.record(rep, c, r)
                self.pair_index += 1
        return self.finish_samples(rep)

    # -- the loop --------------------------------------------------------

    def died(self, e):
        """A runner ended. The candidate's end is mirrored as this
        process's own, so that the supervisor reports a crash, a CPU limit
        or an exit as for any candidate; the reference's is an error."""
        st = e.status
        side = self.ref if e.side == "reference" else self.cand
        over = side.over if side is not None else None
        if over and e.side != "reference":
            # Stopped by the judge for its memory or a load that waited:
            # the candidate's failure, said as such (judge.c's
            # kf_judge_event: runtime_error/memory, timeout/load_time).
            self.send({"ev": over[0], "message": over[1]})
            return 1
        if e.side == "reference":
            said = over[1] if over else ""
            err = self.ref.err if self.ref else None
            if err is not None:
                try:
                    err.seek(0, os.SEEK_END)
                    err.seek(max(0, err.tell() - 800))
                    said = err.read().decode("utf-8", "replace").strip()
                except OSError:
                    pass
            self.send({"ev": "error", "message": "the reference's process "
                       "ended (%s)%s" % (
                           "signal %d" % -st if st < 0 else "exit %d" % st,
                           ": " + said if said else "")})
            return 1
        # Said first, so that the messages name the candidate's process
        # rather than the bridge (session.c).
        self.send({"ev": "died", "side": "candidate"})
        self.shutdown()
        if st < 0:
            signal.signal(-st, signal.SIG_DFL)
            os.kill(os.getpid(), -st)
            time.sleep(1)
        os._exit(st if st > 0 else 1)

    def broke(self, e):
        """A runner sent what is not a frame. The candidate's is its own
        failure (judge.c: runtime_error, bad_reply); the reference's is an
        error."""
        if e.side == "reference":
            self.send({"ev": "error", "message": "the reference's process "
                       "sent a reply the judge cannot use: %s" % e.why})
            return 1
        self.send({"ev": "broken", "message": "the candidate's process "
                   "sent a reply the judge cannot use (%s): it was stopped"
                   % e.why})
        return 1

    def shutdown(self):
        for side in (self.cand, self.ref, self.spare):
            if side:
                side.quit()
        self.cand = self.spare = None

    def serve(self, inp):
        while True:
            try:
                req = read_frame(inp)
            except (ValueError, UnicodeDecodeError) as e:
                self.send({"ev": "error", "message": "bad request: %s" % e})
                return 1
            if req is None:
                return 0
            if not isinstance(req, dict) or "op" not in req:
                self.send({"ev": "error", "message": "request has no op"})
                continue
            op = req["op"]
            if op == "quit":
                self.unpin()
                return 0
            ops = {"load": self.load, "pin": self.pin, "trial": self.trial,
                   "time": self.time_pairs, "next": self.next,
                   "end": self.end, "alone": self.alone}
            try:
                if op not in ops:
                    rep = {"ev": "error", "message": "unknown op '%s'" % op}
                elif op not in ("load", "next", "end") and not self.loaded:
                    rep = {"ev": "error", "message": "nothing loaded"}
                else:
                    rep = ops[op](req)
            except RunnerDied as e:
                return self.died(e)
            except RunnerBroke as e:
                return self.broke(e)
            except Exception as e:
                traceback.print_exc()
                rep = {"ev": "error",
                       "message": said(e, op)}
            if rep is None:  # a fault was sent: the device is unusable
                return 0
            self.send(rep)


def cuda_arch_list():
    """TORCH_CUDA_ARCH_LIST as torch would derive it from the visible
    devices (each one's capability, the highest with +PTX), read without
    a device context (nvidia-smi); None when unknown. Set once for every
    process of the bridge, so that a prebuild, which sees no device,
    writes the same build as the evaluation's runner."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap",
             "--format=csv,noheader"], capture_output=True, text=True,
            timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    caps = sorted({c.strip() for c in out.split() if c.strip()},
                  key=lambda c: tuple(int(x) for x in c.split(".")))
    if not caps or not all(c.replace(".", "").isdigit() for c in caps):
        return None
    caps[-1] += "+PTX"
    return ";".join(caps)


def set_cuda_arch_list(backend):
    """On cuda, TORCH_CUDA_ARCH_LIST for this process and the runners it
    starts (kept in their environment), unless the user set it."""
    if backend == "cuda" and "TORCH_CUDA_ARCH_LIST" not in os.environ:
        arch = cuda_arch_list()
        if arch:
            os.environ["TORCH_CUDA_ARCH_LIST"] = arch


def prebuild(task, candidate, backend):
    """Builds what the candidate asks torch to build, in a runner of its
    own with no device, before its evaluation (kforge's farm does this on
    its compile threads while the device times other candidates). Prints
    one JSON line: the builds and how long they took. A failure is not
    recorded here: the evaluation builds again and decides."""
    t0 = time.perf_counter()
    # Background work: the compilers it starts inherit the idle policy, so
    # they take no core from an evaluation being timed beside them.
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.nice(19)
        except OSError:
            pass
    set_cuda_arch_list(backend)
    files = [os.path.abspath(task), os.path.abspath(candidate)]
    try:
        side = Side(False, "candidate", sys.executable, files, builds=True)
    except ConfineError as e:
        print(json.dumps({"ev": "error", "message": str(e)}))
        return 1
    rep = None
    try:
        rep = side.ask({"op": "build", "task": files[0],
                        "candidate": files[1]})
    except (RunnerDied, RunnerBroke) as e:
        rep = {"ev": "error", "message": str(e)}
    finally:
        side.quit()
    rep["seconds"] = time.perf_counter() - t0
    rep["backend"] = backend
    rep["idle"] = os.sched_getscheduler(0) == getattr(os, "SCHED_IDLE", -1)
    print(json.dumps(rep))
    return 0


def warm_up(backend):
    """What every runner needs before its first request, done as soon as
    it starts: torch imported and, on a device, its context made. The
    judge starts both runners at once, so this is paid once, in parallel,
    not twice in a row. A KernelBench harness has the device's context
    made before the candidate's module runs, as here."""
    import torch
    if backend == "cuda" and torch.cuda.is_available():
        try:
            torch.cuda.init()
            torch.empty(1, device="cuda")
        except RuntimeError:
            pass  # the load reports what is wrong with the device


def main():
    # Frames go to a private copy of stdout; whatever the task or the
    # candidate prints goes to stderr, the supervisor's log.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = os.fdopen(os.dup(0), "rb")
    not_dumpable()
    # One thread of computation in every process of the bridge, set
    # before torch is imported (its OpenMP pool reads these once); the
    # runners inherit them.
    for k in THREAD_ENV:
        os.environ[k] = str(THREADS)
    if len(sys.argv) == 5 and sys.argv[1] == "--prebuild":
        sys.stdout = out_text = os.fdopen(out.fileno(), "w")
        try:
            return prebuild(sys.argv[2], sys.argv[3], sys.argv[4])
        finally:
            out_text.flush()
    if len(sys.argv) == 5 and sys.argv[1] == "--runner":
        # Its parent is bubblewrap's init (pid 1 of the runner's own pid
        # namespace), which dies with the judge (--die-with-parent).
        die_with_parent()
        # Every file it writes (a memfd, its build directory's) at most
        # RUNNER_FILE_BYTES, before any code of the candidate's runs:
        # a write past it fails (Python ignores SIGXFSZ).
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (RUNNER_FILE_BYTES, RUNNER_FILE_BYTES))
        processes_by_leave(int(sys.argv[3]))
        warm_up(sys.argv[4])
        return Runner(out, int(sys.argv[2])).serve(inp, sys.argv[4])
    judge = Judge(out)
    try:
        return judge.serve(inp)
    finally:
        judge.shutdown()


if __name__ == "__main__":
    sys.exit(main())
