#!/usr/bin/env python3
# kforge_bridge.py: the PyTorch bridge. The supervisor spawns it for
# KernelBench-format tasks; it speaks the worker protocol (docs/results.md,
# "Worker frames") on stdin/stdout, measures, and never judges.
"""Runs a KernelBench task (Model, get_inputs, get_init_inputs) and a
candidate (a ModelNew file, a compiled kf_entry kernel, or a baseline made
from the task's Model) under kforge's worker protocol.

Three processes (docs/kernelbench.md, "Processes"):

- the judge (this script as the supervisor starts it) makes every input,
  holds every comparison and hash, and never runs a model;
- the reference's runner (this script with --runner) imports the task
  only: the candidate's code never runs in it, so it can neither change
  the reference's results nor its time;
- the candidate's runner imports the task and the candidate.

Each runner maps an arena, a memory file the judge passes it alone, where
the judge writes the inputs and reads the outputs. A runner copies the
inputs to its device, times one call, and copies the outputs back; the
judge also times each request from outside and compares what the two
runners' own measurements leave out (unaccounted_time).

Frames are a 4-byte little-endian length followed by one JSON object.
Requests from the supervisor: load, trial, time, quit. Replies: loaded,
load_error, trial, samples, fault, error. Standard library and torch only.
"""

import ctypes
import importlib.util
import json
import math
import mmap
import os
import signal
import struct
import subprocess
import sys
import time
import traceback

FRAME_CAP = 16 << 20
MASK64 = (1 << 64) - 1
KB_TOL = 1e-2
ALIGN = 256
# A runner's measurement may leave out this much more of the judge's view
# of the candidate's calls than of the reference's (as the native worker:
# src/eval/eval.c, unaccounted()).
UNACCOUNTED_ABS_NS = 100e3
UNACCOUNTED_REL = 0.10
# Pairs before the check above is made.
MIN_PAIRS = 20
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


def pin_here():
    """Pins this process (and the runners it starts) to the core it runs
    on: on the host the judge's cache flush is then the runners'."""
    try:
        cpu = ctypes.CDLL(None).sched_getcpu()
        if cpu >= 0:
            os.sched_setaffinity(0, {cpu})
    except (OSError, AttributeError, ValueError):
        pass


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
        redraws every float input uniformly over the range get_inputs()
        gave it."""
        torch = self.torch
        self.seed_all(seed)
        out = []
        for x in list(get_inputs()):
            if isinstance(x, torch.Tensor):
                x = x.detach().to("cpu")
                if dist == 1 and x.is_floating_point() and x.numel() > 1:
                    lo, hi = float(x.min()), float(x.max())
                    x = torch.rand(x.shape, dtype=x.dtype) * (hi - lo) + lo
                x = x.contiguous()
            out.append(x)
        return out

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


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError("%s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


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

    def __init__(self, tt, so_path, ref, out_like):
        self.tt = tt
        self.lib = ctypes.CDLL(so_path)
        self.fn = self.lib.kf_entry
        self.fn.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        self.params = [t.detach().clone().contiguous()
                       for t in ref.state_dict().values()
                       if isinstance(t, tt.torch.Tensor)]
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


class Runner:
    """One side's process: loads the task (and, on the candidate's side,
    the candidate), then calls it on the inputs the judge writes into its
    arena, timing each call."""

    def __init__(self, out, arena_fd):
        self.out = out
        self.arena_fd = arena_fd
        self.tt = None
        self.model = None
        self.prev = []
        self.trusted = True  # the reference, or a baseline

    def global_state(self):
        """The process-wide flags a candidate could flip to gain speed."""
        torch = self.tt.torch
        st = [
            ("torch.backends.cudnn.benchmark",
             torch.backends.cudnn.benchmark),
            ("torch.backends.cudnn.allow_tf32",
             torch.backends.cudnn.allow_tf32),
            ("torch.backends.cuda.matmul.allow_tf32",
             torch.backends.cuda.matmul.allow_tf32),
            ("torch.get_float32_matmul_precision()",
             torch.get_float32_matmul_precision()),
            ("torch.are_deterministic_algorithms_enabled()",
             torch.are_deterministic_algorithms_enabled()),
            ("torch.backends.cudnn.deterministic",
             torch.backends.cudnn.deterministic),
        ]
        mm = getattr(torch.backends.cuda.matmul,
                     "allow_fp16_reduced_precision_reduction", None)
        if mm is not None:
            st.append(("torch.backends.cuda.matmul."
                       "allow_fp16_reduced_precision_reduction", mm))
        if self.tt.cuda:
            st.append(("the current CUDA stream",
                       torch.cuda.current_stream().cuda_stream))
        return st

    def state_violation(self):
        now = self.global_state()
        if now == self.state0:
            return None
        diff = [(a, b) for a, b in zip(now, self.state0) if a != b]
        return {
            "check": "global_state",
            "detail": "the candidate changed global state: %s, was %s" % (
                " ".join("%s=%s" % (k, v) for (k, v), _ in diff),
                " ".join("%s=%s" % (k, v) for _, (k, v) in diff)),
        }

    def load(self, req):
        self.tt = tt = Torch(req.get("backend"))
        torch = tt.torch
        if tt.cuda and not torch.cuda.is_available():
            return {"ev": "load_error", "what": "backend",
                    "message": "torch %s sees no CUDA device"
                    % torch.__version__}
        role = req.get("role")
        protocol = req.get("protocol") or "kforge"
        seed = int(req.get("seed", "42")) % (1 << 63)
        task = req["task"]
        try:
            mod = import_file(task, "kforge_task")
            tt.seed_all(seed)
            init = list(mod.get_init_inputs())
            ref = None
            if role == "ref" or req.get("kernel") or req.get("baseline"):
                tt.seed_all(seed)
                with torch.no_grad():
                    ref = mod.Model(*init).to(tt.dev)
            self.get_inputs = mod.get_inputs
            ins = tt.make_inputs(mod.get_inputs, seed, 0)
            # get_inputs()'s values other than tensors, in their places.
            self.others = [None if isinstance(x, torch.Tensor) else x
                           for x in ins]
            outs = None
            if role == "ref":
                ins = [x.to(tt.dev) if isinstance(x, torch.Tensor) else x
                       for x in ins]
                with torch.no_grad():
                    outs = as_outputs(torch, ref(*ins))
                tt.sync()
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "task",
                    "message": "%s: %s: %s" % (task, type(e).__name__, e)}
        if protocol == "kforge":
            # The reference computes in full float32: cuDNN's TF32
            # default would make an exact candidate look imprecise. The
            # candidate's process starts from the same flags.
            torch.backends.cudnn.allow_tf32 = False
        self.state0 = self.global_state()
        if role == "ref":
            self.model = ref
            meta = []
            for j, y in enumerate(outs):
                if y.dtype not in tt.names:
                    return {"ev": "load_error", "what": "task",
                            "message": "%s: output %d is %s, which kforge "
                            "cannot compare" % (task, j, y.dtype)}
                meta.append({"dtype": tt.names[y.dtype],
                             "shape": list(y.shape)})
            return {"ev": "loaded", "outputs": meta}
        t0 = time.perf_counter_ns()
        err = self.load_candidate(req, ref, init, seed)
        if err:
            return err
        return {"ev": "loaded", "load_ns": time.perf_counter_ns() - t0}

    def load_candidate(self, req, ref, init, seed):
        tt = self.tt
        torch = tt.torch
        if req.get("kernel"):
            self.trusted = False
            out_like = [(tuple(o["shape"]), tt.dtypes[o["dtype"]])
                        for o in req["out_like"]]
            try:
                self.model = KernelModel(tt, req["kernel"], ref, out_like)
            except (OSError, AttributeError, KernelError) as e:
                return {"ev": "load_error", "what": "candidate",
                        "message": "%s: %s" % (type(e).__name__, e)}
            return None
        if req.get("baseline"):
            return self.load_baseline(req["baseline"], ref, seed)
        self.trusted = False
        try:
            cand = import_file(req["candidate"], "kforge_candidate")
            if not hasattr(cand, "ModelNew"):
                raise AttributeError("the candidate defines no ModelNew")
            tt.seed_all(seed)
            with torch.no_grad():
                self.model = cand.ModelNew(*init).to(tt.dev)
            tt.sync()
        except Exception as e:
            traceback.print_exc()
            build = "Error building extension" in str(e) or \
                type(e).__name__ == "CalledProcessError"
            return {"ev": "load_error",
                    "what": "compile" if build else "candidate",
                    "message": "%s: %s" % (type(e).__name__, e)}
        return None

    def load_baseline(self, name, ref, seed):
        """A baseline made from the task's own Model: compiled or captured
        here, and run a few times on the first inputs so that the
        compilation is done before anything is timed."""
        tt = self.tt
        torch = tt.torch
        if name not in BASELINES:
            return {"ev": "load_error", "what": "baseline",
                    "message": "unknown baseline '%s' (one of %s)"
                    % (name, ", ".join(BASELINES))}
        try:
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
            ins = [x.to(tt.dev) if isinstance(x, torch.Tensor) else x
                   for x in tt.make_inputs(self.get_inputs, seed, 0)]
            with torch.no_grad():
                for _ in range(3):
                    model(*ins)
            tt.sync()
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "baseline",
                    "message": "%s: %s: %s" % (name, type(e).__name__, e)}
        self.model = model
        return None

    def set_layout(self, req):
        tt = self.tt
        torch = tt.torch
        self.arena = Arena(tt, self.arena_fd)
        self.arena.map(int(req["size"]))
        self.a_in = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                     e["shape"]) for e in req["inputs"]]
        self.a_out = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                      e["shape"]) for e in req["outputs"]]
        self.in_names = [e["name"] for e in req["inputs"]]
        self.out_names = [e["name"] for e in req["outputs"]]
        # The device's copies of the inputs: the arena's values are copied
        # in before each call.
        self.d_in = [torch.empty(e["shape"], dtype=tt.dtypes[e["dtype"]],
                                 device=tt.dev) for e in req["inputs"]]
        return {"ev": "ok"}

    def inputs(self):
        """The call's arguments: the device's copies of the tensors, with
        get_inputs()'s other values in their places."""
        args, k = [], 0
        for v in self.others:
            if v is None:
                args.append(self.d_in[k])
                k += 1
            else:
                args.append(v)
        return args

    def timed(self, ins, kb):
        """One call: on CUDA, events on the current stream; kforge's
        protocol joins the whole device before the end event, so that work
        on other streams is counted; KernelBench's (kb) records the end
        event right after the call and synchronises after it. On the CPU,
        the wall clock."""
        torch = self.tt.torch
        if self.tt.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            with torch.no_grad():
                r = self.model(*ins)
            if not kb:
                torch.cuda.synchronize()
            end.record()
            torch.cuda.synchronize()
            return as_outputs(torch, r), int(start.elapsed_time(end) * 1e6)
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            r = self.model(*ins)
        return as_outputs(torch, r), time.perf_counter_ns() - t0

    def watched(self, ins):
        """A call, and on CUDA a look at the outputs once the engine's
        stream has caught up with it: if they still change after that, the
        candidate left work on another stream, which the engine never
        waits for. Returns (outputs, ns, violation)."""
        torch = self.tt.torch
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            r = self.model(*ins)
        outs = as_outputs(torch, r)
        torch.cuda.current_stream().synchronize()
        early = [o.clone() for o in outs]
        torch.cuda.current_stream().synchronize()
        j0 = time.perf_counter_ns()
        torch.cuda.synchronize()
        join_ns = time.perf_counter_ns() - j0
        ns = time.perf_counter_ns() - t0
        # With nothing left on other streams the join returns at once;
        # a join that takes milliseconds waited for the candidate's work.
        if join_ns > max(2e6, 0.5 * ns):
            return outs, ns, {
                "check": "side_stream",
                "detail": "the device was still busy %.2f ms after the "
                "engine's stream had finished the call: the candidate "
                "works on another stream without joining it, so its time "
                "and results escape the engine" % (join_ns / 1e6)}
        for j, (a, b) in enumerate(zip(early, outs)):
            if not torch.equal(a, b) and not (
                    a.is_floating_point() and
                    torch.equal(torch.isnan(a), torch.isnan(b)) and
                    torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))):
                return outs, ns, {
                    "check": "side_stream",
                    "detail": "output '%s' was still being written after "
                    "the engine's stream had finished the call: the "
                    "candidate works on another stream without joining "
                    "it, so its time and results escape the engine"
                    % (self.out_names[j] if j < len(self.out_names)
                       else j)}
        return outs, ns, None

    def shares(self, a, b):
        if a.numel() == 0 or b.numel() == 0:
            return False

        def rng(t):
            try:
                s = t.untyped_storage()
            except AttributeError:
                s = t.storage()
            return s.data_ptr(), s.nbytes()
        pa, na = rng(a)
        pb, nb = rng(b)
        return pa < pb + nb and pb < pa + na

    def aliasing(self, outs, ins):
        """(an output that is a tensor this side returned before, the name
        of an input an output shares memory with)."""
        torch = self.tt.torch
        cached = alias = None
        for j, y in enumerate(outs):
            name = self.out_names[j] if j < len(self.out_names) else str(j)
            if not cached and not self.trusted:
                for p in self.prev:
                    if self.shares(y, p):
                        cached = {
                            "check": "cached_output",
                            "detail": "output '%s' shares memory with an "
                            "output of the candidate's previous call: it "
                            "returns a cached tensor, not one computed "
                            "from these inputs" % name}
                        break
            for i, x in enumerate(ins):
                if alias is None and isinstance(x, torch.Tensor) and \
                        self.shares(y, x):
                    alias = "output '%s' shares memory with input '%s'" % (
                        name, self.in_names[i] if i < len(self.in_names)
                        else i)
        return cached, alias

    def stage(self, req=None):
        """Copies the arena's inputs to the device's copies."""
        for d, a in zip(self.d_in, self.a_in):
            d.copy_(a)
        self.tt.sync()
        return {"ev": "staged"}

    def call(self, req):
        """Calls on the staged inputs (staging them first unless the judge
        did in a request of its own; flushing first when asked), checks
        what the call left, copies the outputs to the arena."""
        tt = self.tt
        kb = bool(req.get("kb"))
        if not req.get("staged"):
            self.stage()
        rep = {"ev": "called", "ns": 0}
        try:
            ins = self.inputs()
            if req.get("flush"):
                tt.flush(wait=kb or not tt.cuda)
            viol = None
            if req.get("watch") and tt.cuda:
                outs, ns, viol = self.watched(ins)
            else:
                outs, ns = self.timed(ins, kb)
        except Exception as e:
            traceback.print_exc()
            rep["error"] = "%s: %s" % (type(e).__name__, e)
            if tt.cuda and "CUDA" in rep["error"] and self.device_broken():
                return {"ev": "fault", "message": rep["error"]}
            return rep
        rep["ns"] = ns
        if not req.get("kb"):
            viol = viol or self.state_violation()
            cached, alias = self.aliasing(outs, ins)
            viol = viol or cached
            if alias:
                rep["alias"] = alias
            if viol:
                rep["violation"] = viol
        if not self.trusted:
            self.prev = outs
        if len(outs) != len(self.a_out):
            rep["shapes"] = [list(y.shape) for y in outs]
            return rep
        for y, a in zip(outs, self.a_out):
            if tuple(y.shape) != tuple(a.shape):
                rep["shapes"] = [list(y.shape) for y in outs]
                return rep
        for y, a in zip(outs, self.a_out):
            a.copy_(y.detach())
        if req.get("hash_inputs"):
            rep["inputs_after"] = [tt.hash_tensor(d) for d in self.d_in]
        return rep

    def kbtime(self, req):
        """KernelBench's timing of this side: 3 synchronised warm-up calls,
        then calls timed one by one, each after the flush."""
        tt = self.tt
        for d, a in zip(self.d_in, self.a_in):
            d.copy_(a)
        tt.sync()
        ins = self.inputs()
        try:
            for _ in range(3):
                with tt.torch.no_grad():
                    self.model(*ins)
                tt.sync()
            ns = []
            outs = None
            for _ in range(int(req.get("calls", 101))):
                tt.flush()
                outs, t = self.timed(ins, True)
                ns.append(t)
        except Exception as e:
            traceback.print_exc()
            msg = "%s: %s" % (type(e).__name__, e)
            if tt.cuda and "CUDA" in msg and self.device_broken():
                return {"ev": "fault", "message": msg}
            return {"ev": "kbtimes", "error": msg}
        rep = {"ev": "kbtimes", "ns": ns}
        if len(outs) == len(self.a_out) and all(
                tuple(y.shape) == tuple(a.shape)
                for y, a in zip(outs, self.a_out)):
            for y, a in zip(outs, self.a_out):
                a.copy_(y.detach())
        else:
            rep["shapes"] = [list(y.shape) for y in outs]
        return rep

    def device_broken(self):
        """True when the device of this process is unusable."""
        try:
            self.tt.torch.cuda.synchronize()
            self.tt.torch.zeros(1, device=self.tt.dev).add_(1).item()
            return False
        except Exception:
            return True

    def serve(self, inp):
        while True:
            req = read_frame(inp)
            if req is None or req.get("op") == "quit":
                return 0
            op = req.get("op")
            ops = {"load": self.load, "layout": self.set_layout,
                   "stage": self.stage, "call": self.call,
                   "kbtime": self.kbtime}
            try:
                if op in ops:
                    rep = ops[op](req)
                else:
                    rep = {"ev": "error", "message": "unknown op %s" % op}
            except Exception as e:
                traceback.print_exc()
                rep = {"ev": "error",
                       "message": "%s: %s: %s" % (op, type(e).__name__, e)}
            write_frame(self.out, rep)
            if rep.get("ev") == "fault":
                return 0


# -- the judge ---------------------------------------------------------------


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


def ro_dirs():
    """The read-only directories every runner sees."""
    dirs = ["/usr", "/etc/ld.so.cache", "/etc/alternatives", "/sys"]
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


def build_dir(files):
    """The candidate's writable build directory (torch's load_inline),
    shared only with candidates of the same content."""
    import hashlib
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            h.update(fh.read())
    root = os.environ.get("KFORGE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "kforge")
    d = os.path.join(root, "torch_extensions", h.hexdigest()[:32])
    os.makedirs(d, exist_ok=True)
    return d


def confined_argv(python, script, fd, files, writable, cuda):
    """The command line that starts one runner under bwrap, and its
    environment."""
    bwrap = find_bwrap()
    a = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
         "--cap-drop", "ALL"]
    for top in ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            a += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            a += ["--ro-bind", top, top]
    for d in ro_dirs():
        a += ["--ro-bind", d, d]
    a += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if cuda:
        for n in sorted(os.listdir("/dev")):
            if n.startswith("nvidia"):
                a += ["--dev-bind", "/dev/" + n, "/dev/" + n]
    for f in [script, python] + list(files):
        f = os.path.abspath(f)
        a += ["--ro-bind", f, f]
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
    a += ["--remount-ro", "/", "--chdir", os.getcwd(), "--"]
    a += [python, "-B", script, "--runner", str(fd)]
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

    def __init__(self, tt, name, python, files=(), builds=False):
        self.name = name
        self.tt = tt
        self.fd = os.memfd_create("kforge-" + name, 0)
        script = os.path.abspath(__file__)
        argv, env = confined_argv(
            python, script, self.fd, files,
            build_dir(files) if builds else None, bool(tt and tt.cuda))
        self.proc = subprocess.Popen(
            argv, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            pass_fds=(self.fd,), close_fds=True)
        self.arena = Arena(tt, self.fd) if tt else None
        self.views = []  # wall ns of each call request, seen from here
        self.ns = []     # the runner's own measurement of the same calls

    def ask(self, req):
        try:
            write_frame(self.proc.stdin, req)
            rep = read_frame(self.proc.stdout)
        except (BrokenPipeError, ConnectionResetError):
            rep = None
        if rep is None:
            raise RunnerDied(self.name, runner_status(self.proc.wait()))
        return rep

    def lay_out(self, size, ins, outs):
        os.ftruncate(self.fd, max(size, ALIGN))
        self.arena.map(size)
        tt = self.tt
        self.a_in = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                     e["shape"]) for e in ins]
        self.a_out = [self.arena.view(e["off"], tt.dtypes[e["dtype"]],
                                      e["shape"]) for e in outs]
        return self.ask({"op": "layout", "size": size, "inputs": ins,
                         "outputs": outs})

    def put(self, tensors):
        for a, x in zip(self.a_in, tensors):
            a.copy_(x)

    def call(self, **req):
        """A call request, timed from here as well."""
        req["op"] = "call"
        t0 = time.perf_counter_ns()
        rep = self.ask(req)
        rep["view_ns"] = time.perf_counter_ns() - t0
        if rep.get("ev") == "error":
            rep["error"] = rep.get("message") or "no message"
        return rep

    def timed_call(self, flush_here, **req):
        """A timed call as two requests, staging then calling, both timed
        from here; on the host the judge flushes the caches in between (the
        judge and the runners share one core), on a device the runner
        flushes in its own queue right before the call."""
        t0 = time.perf_counter_ns()
        rep = self.ask({"op": "stage"})
        view = time.perf_counter_ns() - t0
        if rep.get("ev") != "staged":
            rep.setdefault("error", rep.get("message") or "staging failed")
            return rep
        if flush_here:
            self.tt.flush()
        rep = self.call(staged=True, flush=not flush_here, **req)
        rep["view_ns"] += view
        return rep

    def outputs(self):
        """Copies of the outputs the runner left in the arena."""
        return [a.clone() for a in self.a_out]

    def quit(self):
        try:
            write_frame(self.proc.stdin, {"op": "quit"})
        except (BrokenPipeError, ValueError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Judge:
    def __init__(self, out):
        self.out = out
        self.tt = None
        self.loaded = False
        self.ref = self.cand = None

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

    def load(self, req):
        self.tt = tt = Torch(req.get("backend"))
        torch = tt.torch
        self.protocol = req.get("protocol") or "kforge"
        if self.protocol not in ("kforge", "kernelbench"):
            return {"ev": "error",
                    "message": "load: unknown protocol '%s'" % self.protocol}
        if tt.cuda and not torch.cuda.is_available():
            return {"ev": "load_error", "what": "backend",
                    "message": "torch %s sees no CUDA device"
                    % torch.__version__}
        seed = int(req.get("seed", "42")) % (1 << 63)
        self.kb_seed = seed
        task = req["task"]
        if not tt.cuda:
            pin_here()
        try:
            mod = import_file(task, "kforge_task")
            for name in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(mod, name):
                    raise AttributeError("the task defines no %s" % name)
            self.get_inputs = mod.get_inputs
            ins = tt.make_inputs(mod.get_inputs, seed, 0)
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "task",
                    "message": "%s: %s: %s" % (task, type(e).__name__, e)}
        common = {"op": "load", "backend": req.get("backend"),
                  "protocol": self.protocol, "seed": req.get("seed", "42"),
                  "task": task}
        files = [task] + [req[k] for k in ("candidate", "kernel")
                          if req.get(k)]
        try:
            self.ref = Side(tt, "reference", sys.executable, [task])
        except ConfineError as e:
            return {"ev": "load_error", "what": "sandbox",
                    "message": str(e)}
        rep = self.ref.ask(dict(common, role="ref"))
        if rep.get("ev") != "loaded":
            return rep
        out_meta = rep["outputs"]
        names = self.input_names(mod.Model, len(ins))
        self.in_names = [names[i] for i, x in enumerate(ins)
                         if isinstance(x, torch.Tensor)]
        self.out_names = ["out" if len(out_meta) == 1 else "out%d" % j
                          for j in range(len(out_meta))]
        tens = [x for x in ins if isinstance(x, torch.Tensor)]
        in_specs, end = layout(tt, [(n, tt.names[x.dtype], list(x.shape))
                                    for n, x in zip(self.in_names, tens)],
                               0)
        out_specs, end = layout(tt, [(n, o["dtype"], o["shape"])
                                     for n, o in zip(self.out_names,
                                                     out_meta)], end)
        self.layout = (end, in_specs, out_specs)
        rep = self.ref.lay_out(*self.layout)
        if rep.get("ev") != "ok":
            return rep
        self.cand = Side(tt, "candidate", sys.executable, files,
                         builds=True)
        creq = dict(common, role="cand",
                    out_like=[{"dtype": o["dtype"], "shape": o["shape"]}
                              for o in out_meta])
        for key in ("candidate", "kernel", "baseline"):
            if req.get(key):
                creq[key] = req[key]
        self.kernel = bool(req.get("kernel"))
        self.baseline = bool(req.get("baseline"))
        rep = self.cand.ask(creq)
        if rep.get("ev") != "loaded":
            return rep
        load_ns = rep.get("load_ns", 0)
        rep = self.cand.lay_out(*self.layout)
        if rep.get("ev") != "ok":
            return rep
        tens_in = [{"name": n, "dtype": self.dtype_name(x.dtype),
                    "shape": list(x.shape)}
                   for n, x in zip(self.in_names, tens)]
        tens_out = [{"name": n, "dtype": self.dtype_name(
                     tt.dtypes[o["dtype"]]), "shape": o["shape"]}
                    for n, o in zip(self.out_names, out_meta)]
        self.loaded = True
        return {"ev": "loaded", "device": self.device_desc(),
                "inputs": tens_in, "outputs": tens_out,
                "candidate_load_ns": load_ns,
                "python": sys.version.split()[0]}

    def tensors(self, seed, dist):
        return [x for x in self.tt.make_inputs(self.get_inputs, seed, dist)
                if isinstance(x, self.tt.torch.Tensor)]

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

    def shape_violation(self, rep):
        """The violation of a call whose outputs do not have the
        reference's shapes (the runner then copies none of them)."""
        shapes = rep.get("shapes")
        if shapes is None:
            return None
        want = [list(a.shape) for a in self.cand.a_out]
        if len(shapes) != len(want):
            return {"check": "output_shape",
                    "detail": "the candidate returned %d outputs, the "
                    "reference %d" % (len(shapes), len(want))}
        for j, (g, w) in enumerate(zip(shapes, want)):
            if g != w:
                return {"check": "output_shape",
                        "detail": "output '%s' has shape %s, the "
                        "reference's %s" % (self.out_names[j], g, w)}
        return None

    # -- trials ----------------------------------------------------------

    def fault(self, rep):
        """Forwards a runner's fault (its device is unusable); True when
        there was one."""
        if rep.get("ev") == "fault":
            self.send(rep)
            return True
        return False

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
        rep = {"ev": "trial", "index": index, "input_seed": str(seed)}
        if kb:
            # KernelBench runs the reference first.
            r = self.ref.call(kb=True)
            c = self.cand.call(kb=True, hash_inputs=True)
        else:
            c = self.cand.call(watch=True, hash_inputs=True)
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
        viol = None if kb else c.get("violation")
        if not kb and not viol and c.get("alias") and not r.get("alias"):
            # An input alias is allowed when the reference's output is
            # one too.
            viol = {"check": "cached_output",
                    "detail": "%s, which the reference's does not"
                    % c["alias"]}
        if viol:
            rep["violation"] = viol
            return rep
        shape = self.shape_violation(c)
        if shape:
            rep["violation"] = shape
            return rep
        got, want = self.cand.outputs(), self.ref.outputs()
        outs = []
        for j, (g, w) in enumerate(zip(got, want)):
            st = self.compare(g, w, kb)
            st["unwritten"] = self.unwritten(g, w)
            st["name"] = self.out_names[j]
            st["checksum_ref"] = self.tt.hash_tensor(w)
            st["checksum_1"] = self.tt.hash_tensor(g)
            outs.append(st)
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
        # The second call, on the same inputs.
        self.cand.put(base)
        c2 = self.cand.call()
        if self.fault(c2):
            return None
        rep["cand_rc_2"] = 1 if c2.get("error") else 0
        if c2.get("error"):
            rep["cand_error"] = c2["error"]
            return rep
        if c2.get("violation"):
            rep["violation"] = c2["violation"]
            return rep
        if c2.get("shapes") is not None:
            for o in outs:
                o["checksum_2"] = "shape"
                o["mismatches_2"] = o["n"]
            return rep
        for j, g in enumerate(self.cand.outputs()):
            o = outs[j]
            o["checksum_2"] = self.tt.hash_tensor(g)
            if o["checksum_2"] != o["checksum_1"]:
                o["mismatches_2"] = self.compare(g, want[j],
                                                 False)["mismatches"]
        return rep

    # -- timing ----------------------------------------------------------

    def unaccounted(self):
        """A violation when the candidate's runner left out of its own
        measurement more of the judge's view than the reference's did: the
        median over the pairs of the difference between the two sides'
        shares, so that load on the machine, which reaches both calls of a
        pair alike, cancels, while a runner that under-reports moves every
        pair."""
        c, r = self.cand, self.ref
        uc = [v - n for v, n in zip(c.views, c.ns)]
        ur = [v - n for v, n in zip(r.views, r.ns)]
        d = median([a - b for a, b in zip(uc, ur)])
        cm = median(c.ns)
        limit = UNACCOUNTED_ABS_NS + UNACCOUNTED_REL * cm
        if d <= limit:
            return None
        return {"check": "unaccounted_time",
                "detail": "the candidate's process reported %.4f ms per "
                "call, but the judge saw each call take %.4f ms longer "
                "than that, against %.4f ms for the reference (medians; "
                "the median difference within a pair, %.4f ms, is more "
                "than %.4f ms): time the candidate's own measurement left "
                "out" % (cm / 1e6, median(uc) / 1e6, median(ur) / 1e6,
                         d / 1e6, limit / 1e6)}

    def time_kernelbench(self, req):
        """KernelBench's timing: each side alone, on the same inputs, its
        runner timing the calls; the outputs of the last calls are
        compared."""
        calls = int(req.get("calls", 101))
        base = self.tensors(self.kb_seed, 0)
        res = {}
        for side in (self.ref, self.cand):
            side.put(base)
            rep = side.ask({"op": "kbtime", "calls": calls})
            if self.fault(rep):
                return None
            if rep.get("error"):
                return {"ev": "error", "message": "timing: the %s raised %s"
                        % (side.name, rep["error"])}
            res[side.name] = (rep, 0)
        c, r = res["candidate"], res["reference"]
        n = len(c[0]["ns"]) - 1
        chk = {"mismatches": 0, "unwritten": 0, "first_bad_pair": -1,
               "inputs_intact": True}
        out = {"ev": "samples", "cand_ns": c[0]["ns"][1:],
               "ref_ns": r[0]["ns"][1:], "cand_mhz": [0] * n,
               "ref_mhz": [0] * n, "cand_throttled": [False] * n,
               "ref_throttled": [False] * n, "cand_kernels": [-1] * n,
               "cand_streams": [-1] * n, "cand_rc_nonzero": 0,
               "cand_cuda_errors": 0, "check": chk}
        if c[0].get("shapes") is not None:
            chk["mismatches"] = 1
            chk["first_bad_pair"] = calls - 1
            return out
        for g, w in zip(self.cand.outputs(), self.ref.outputs()):
            chk["mismatches"] += self.compare(g, w, False)["mismatches"]
            chk["unwritten"] += self.unwritten(g, w)
        if chk["mismatches"] or chk["unwritten"]:
            chk["first_bad_pair"] = calls - 1
        return out

    def time_pairs(self, req):
        """kforge's timing: interleaved pairs, fresh inputs for each pair,
        every candidate output checked against the reference's."""
        if req.get("protocol") == "kernelbench":
            return self.time_kernelbench(req)
        seed = int(req.get("seed", "1")) % (1 << 62)
        pairs = int(req.get("pairs", 10))
        warmup = int(req.get("warmup", 0))
        if not hasattr(self, "pair_index"):
            self.pair_index = 0
        rep = {"cand_ns": [], "ref_ns": [], "cand_rc_nonzero": 0,
               "cand_cuda_errors": 0}
        chk = {"mismatches": 0, "unwritten": 0, "first_bad_pair": -1,
               "inputs_intact": True}
        first = self.pair_index
        for k in range(warmup + pairs):
            p = first if k < warmup else self.pair_index
            base = self.tensors(seed + 7919 * p, 0)
            self.ref.put(base)
            self.cand.put(base)
            last = k == warmup + pairs - 1
            order = (self.cand, self.ref) if p % 4 in (0, 1) else \
                (self.ref, self.cand)
            got = {}
            for side in order:
                got[side.name] = side.timed_call(not self.tt.cuda,
                                                 hash_inputs=last)
                if self.fault(got[side.name]):
                    return None
            c, r = got["candidate"], got["reference"]
            if r.get("error"):
                return {"ev": "error", "message": "timing: the reference "
                        "raised %s" % r["error"]}
            if c.get("error"):
                rep["cand_rc_nonzero"] += 1
                chk["first_bad_pair"] = p
                break
            viol = c.get("violation") or self.shape_violation(c)
            if viol:
                rep["violation"] = viol
                chk["first_bad_pair"] = p
                break
            bad = unw = 0
            for g, w in zip(self.cand.outputs(), self.ref.outputs()):
                bad += self.compare(g, w, False)["mismatches"]
                unw += self.unwritten(g, w)
            if bad or unw:
                chk["mismatches"] += bad
                chk["unwritten"] += unw
                chk["first_bad_pair"] = p
                break
            if last:
                want = [self.tt.hash_tensor(x) for x in base]
                chk["inputs_intact"] = c.get("inputs_after") == want
            if k >= warmup:
                rep["cand_ns"].append(c["ns"])
                rep["ref_ns"].append(r["ns"])
                for side, x in ((self.cand, c), (self.ref, r)):
                    side.views.append(x["view_ns"])
                    side.ns.append(x["ns"])
                self.pair_index += 1
        # A baseline is kforge's own code: its process forges nothing.
        if "violation" not in rep and chk["first_bad_pair"] < 0 and \
                not self.baseline and len(self.cand.ns) >= MIN_PAIRS:
            viol = self.unaccounted()
            if viol:
                rep["violation"] = viol
        n = len(rep["cand_ns"])
        rep.update({"ev": "samples", "cand_mhz": [0] * n, "ref_mhz": [0] * n,
                    "cand_throttled": [False] * n,
                    "ref_throttled": [False] * n,
                    "cand_kernels": [-1] * n, "cand_streams": [-1] * n,
                    "check": chk})
        return rep

    # -- the loop --------------------------------------------------------

    def died(self, e):
        """A runner ended. The candidate's end is mirrored as this
        process's own, so that the supervisor reports a crash, a CPU limit
        or an exit as for any candidate; the reference's is an error."""
        st = e.status
        if e.side == "reference":
            self.send({"ev": "error", "message": "the reference's process "
                       "ended (%s)" % (
                           "signal %d" % -st if st < 0 else "exit %d" % st)})
            return 1
        self.shutdown()
        if st < 0:
            signal.signal(-st, signal.SIG_DFL)
            os.kill(os.getpid(), -st)
            time.sleep(1)
        os._exit(st if st > 0 else 1)

    def shutdown(self):
        for side in (self.cand, self.ref):
            if side:
                side.quit()

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
                return 0
            ops = {"load": self.load, "trial": self.trial,
                   "time": self.time_pairs}
            try:
                if op not in ops:
                    rep = {"ev": "error", "message": "unknown op '%s'" % op}
                elif op != "load" and not self.loaded:
                    rep = {"ev": "error", "message": "nothing loaded"}
                else:
                    rep = ops[op](req)
            except RunnerDied as e:
                return self.died(e)
            except Exception as e:
                traceback.print_exc()
                rep = {"ev": "error",
                       "message": "%s: %s: %s" % (op, type(e).__name__, e)}
            if rep is None:  # a fault was sent: the device is unusable
                return 0
            self.send(rep)


def main():
    # Frames go to a private copy of stdout; whatever the task or the
    # candidate prints goes to stderr, the supervisor's log.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = os.fdopen(os.dup(0), "rb")
    not_dumpable()
    if len(sys.argv) == 3 and sys.argv[1] == "--runner":
        # Its parent is bubblewrap's init (pid 1 of the runner's own pid
        # namespace), which dies with the judge (--die-with-parent).
        die_with_parent()
        return Runner(out, int(sys.argv[2])).serve(inp)
    judge = Judge(out)
    try:
        return judge.serve(inp)
    finally:
        judge.shutdown()


if __name__ == "__main__":
    sys.exit(main())
