#!/usr/bin/env python3
# kforge_bridge.py: the PyTorch bridge. The supervisor spawns it for
# KernelBench-format tasks; it speaks the worker protocol (docs/results.md,
# "Worker frames") on stdin/stdout, measures, and never judges.
"""Runs a KernelBench task (Model, get_inputs, get_init_inputs) and a
candidate (a ModelNew file) under kforge's worker protocol.

Frames are a 4-byte little-endian length followed by one JSON object.
Requests: load, trial, time, quit. Replies: loaded, load_error, trial,
samples, fault, error. Standard library and torch only.
"""

import ctypes
import importlib.util
import json
import math
import os
import struct
import sys
import time
import traceback

FRAME_CAP = 16 << 20
MASK64 = (1 << 64) - 1
KB_TOL = 1e-2


def read_frame(f):
    head = f.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    if n > FRAME_CAP:
        raise ValueError("request frame of %d bytes exceeds the cap" % n)
    body = f.read(n)
    if len(body) < n:
        return None
    return json.loads(body.decode("utf-8"))


def jnum(v):
    """A JSON-safe number: non-finite values travel as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


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


class KernelModel:
    """A kforge candidate (kf_entry, include/kforge/kernel.h) called like a
    model. Its inputs are the tensors get_inputs() returns, in order, then
    the reference model's state_dict() tensors (parameters and buffers), in
    order; its outputs are the reference's, allocated here and poisoned
    before every call."""

    def __init__(self, bridge, so_path, ref, out_like):
        torch = bridge.torch
        self.b = bridge
        self.lib = ctypes.CDLL(so_path)
        self.fn = self.lib.kf_entry
        self.fn.argtypes = [ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.POINTER(DLTensor), ctypes.c_int,
                            ctypes.c_void_p]
        self.fn.restype = ctypes.c_int
        self.params = [t.detach().clone().contiguous()
                       for t in ref.state_dict().values()
                       if isinstance(t, torch.Tensor)]
        self.out_like = [(tuple(y.shape), y.dtype) for y in out_like]

    def describe(self, t, keep):
        torch = self.b.torch
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
        torch = self.b.torch
        tens = [x.contiguous() for x in ins
                if isinstance(x, torch.Tensor)] + self.params
        outs = [self.b.poisoned(shape, dt) for shape, dt in self.out_like]
        keep = []
        arr_in = (DLTensor * max(len(tens), 1))(
            *[self.describe(t, keep) for t in tens])
        arr_out = (DLTensor * max(len(outs), 1))(
            *[self.describe(t, keep) for t in outs])
        stream = torch.cuda.current_stream().cuda_stream \
            if self.b.cuda else None
        rc = self.fn(arr_in, len(tens), arr_out, len(outs), stream)
        if rc != 0:
            raise KernelError("kf_entry returned %d" % rc)
        return outs


class Bridge:
    def __init__(self, out):
        self.out = out
        self.torch = None
        self.loaded = False
        self.prev = []  # the candidate's outputs of its previous call

    def send(self, obj):
        data = json.dumps(obj, allow_nan=False).encode("utf-8")
        self.out.write(struct.pack("<I", len(data)) + data)
        self.out.flush()

    # -- loading ---------------------------------------------------------

    def import_file(self, path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            raise ImportError("%s: not a Python file" % path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    def seed_all(self, seed):
        torch = self.torch
        torch.manual_seed(seed)
        if self.cuda:
            torch.cuda.manual_seed(seed)

    def global_state(self):
        """The process-wide flags a candidate could flip to gain speed."""
        torch = self.torch
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
        if self.cuda:
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

    def device_desc(self):
        torch = self.torch
        if self.cuda:
            p = torch.cuda.get_device_properties(self.dev)
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

    def unwritten(self, got, want):
        """Elements of got that still hold the poison where want does
        not."""
        it, v = self.poison_bits(got.dtype)
        g = got.detach().contiguous().view(it).reshape(-1) == v
        w = want.detach().contiguous().view(it).reshape(-1) == v
        return int((g & ~w).sum().item())

    def dtype_name(self, dt):
        torch = self.torch
        names = {torch.float32: "float32", torch.float64: "float64",
                 torch.float16: "float16", torch.bfloat16: "bfloat16",
                 torch.int32: "int32", torch.int64: "int64"}
        if dt in names:
            return names[dt]
        if dt.is_complex:
            return None
        # bool and the narrow integers compare exactly, like int32.
        return "int32"

    def as_outputs(self, r):
        torch = self.torch
        if isinstance(r, (tuple, list)):
            items = list(r)
        else:
            items = [r]
        outs = []
        for x in items:
            if not isinstance(x, torch.Tensor):
                x = torch.as_tensor(x)
            outs.append(x)
        return outs

    def load(self, req):
        import torch
        self.torch = torch
        self.protocol = req.get("protocol") or "kforge"
        if self.protocol not in ("kforge", "kernelbench"):
            return {"ev": "error",
                    "message": "load: unknown protocol '%s'" % self.protocol}
        self.cuda = req.get("backend") == "cuda"
        if self.cuda and not torch.cuda.is_available():
            return {"ev": "load_error", "what": "backend",
                    "message": "torch %s sees no CUDA device"
                    % torch.__version__}
        self.dev = torch.device("cuda" if self.cuda else "cpu")
        seed = int(req.get("seed", "42")) % (1 << 63)
        self.kb_seed = seed
        task = req["task"]
        try:
            ref = self.import_file(task, "kforge_task")
            for name in ("Model", "get_inputs", "get_init_inputs"):
                if not hasattr(ref, name):
                    raise AttributeError("the task defines no %s" % name)
            self.seed_all(seed)
            init = list(ref.get_init_inputs())
            self.seed_all(seed)
            with torch.no_grad():
                self.ref = ref.Model(*init).to(self.dev)
            self.get_inputs = ref.get_inputs
            self.seed_all(seed)
            ins = self.make_inputs(seed, 0)
            with torch.no_grad():
                outs = self.as_outputs(self.ref(*ins))
        except Exception as e:
            traceback.print_exc()
            return {"ev": "load_error", "what": "task",
                    "message": "%s: %s: %s" % (task, type(e).__name__, e)}
        if self.protocol == "kforge":
            # The reference computes in full float32: cuDNN's TF32
            # default would make an exact candidate look imprecise.
            torch.backends.cudnn.allow_tf32 = False
        self.state0 = self.global_state()
        t0 = time.perf_counter_ns()
        self.kernel = bool(req.get("kernel"))
        err = self.load_kernel(req["kernel"], outs) if self.kernel else \
            self.load_modelnew(req["candidate"], init, seed)
        if err:
            return err
        load_ns = time.perf_counter_ns() - t0
        names = self.input_names(ref.Model, len(ins))
        tens_in = []
        self.in_names = []
        for i, x in enumerate(ins):
            if isinstance(x, torch.Tensor):
                self.in_names.append(names[i])
                tens_in.append({"name": names[i],
                                "dtype": self.dtype_name(x.dtype) or "",
                                "shape": list(x.shape)})
        tens_out = []
        for j, y in enumerate(outs):
            dt = self.dtype_name(y.dtype)
            if dt is None:
                return {"ev": "load_error", "what": "task",
                        "message": "%s: output %d is %s: complex outputs "
                        "are not supported" % (task, j, y.dtype)}
            tens_out.append({"name": "out" if len(outs) == 1 else
                             "out%d" % j, "dtype": dt,
                             "shape": list(y.shape)})
        self.out_names = [o["name"] for o in tens_out]
        self.loaded = True
        return {"ev": "loaded", "device": self.device_desc(),
                "inputs": tens_in, "outputs": tens_out,
                "candidate_load_ns": load_ns,
                "python": sys.version.split()[0]}

    def load_kernel(self, so_path, outs):
        """A compiled kforge candidate; a load_error reply on failure."""
        try:
            self.cand = KernelModel(self, so_path, self.ref, outs)
        except (OSError, AttributeError, KernelError) as e:
            return {"ev": "load_error", "what": "candidate",
                    "message": "%s: %s" % (type(e).__name__, e)}
        return None

    def load_modelnew(self, path, init, seed):
        """Imports a ModelNew file and builds it (load_inline compiles
        here); a load_error reply on failure."""
        torch = self.torch
        try:
            cand = self.import_file(path, "kforge_candidate")
            if not hasattr(cand, "ModelNew"):
                raise AttributeError("the candidate defines no ModelNew")
            self.seed_all(seed)
            with torch.no_grad():
                self.cand = cand.ModelNew(*init).to(self.dev)
            if self.cuda:
                torch.cuda.synchronize()
        except Exception as e:
            traceback.print_exc()
            build = "Error building extension" in str(e) or \
                type(e).__name__ == "CalledProcessError"
            return {"ev": "load_error",
                    "what": "compile" if build else "candidate",
                    "message": "%s: %s" % (type(e).__name__, e)}
        return None

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

    # -- inputs, hashes, comparison --------------------------------------

    def make_inputs(self, seed, dist):
        """get_inputs() under KernelBench's seeding; dist 1 redraws every
        float input uniformly over the range get_inputs() gave it."""
        torch = self.torch
        self.seed_all(seed)
        ins = list(self.get_inputs())
        out = []
        for x in ins:
            if isinstance(x, torch.Tensor):
                if dist == 1 and x.is_floating_point() and x.numel() > 1:
                    lo, hi = float(x.min()), float(x.max())
                    x = torch.rand(x.shape, dtype=x.dtype,
                                   device=x.device) * (hi - lo) + lo
                x = x.to(self.dev)
            out.append(x)
        return out

    def clone_inputs(self, ins):
        torch = self.torch
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in ins]

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

    def storage_range(self, t):
        try:
            s = t.untyped_storage()
            return s.data_ptr(), s.nbytes()
        except AttributeError:
            s = t.storage()
            return s.data_ptr(), s.nbytes()

    def shares(self, a, b):
        if a.numel() == 0 or b.numel() == 0:
            return False
        pa, na = self.storage_range(a)
        pb, nb = self.storage_range(b)
        return pa < pb + nb and pb < pa + na

    def aliasing(self, outs, ins, ref_aliases):
        """A violation when an output is a tensor the candidate returned
        before, or (unless the reference does the same) one of its
        inputs."""
        torch = self.torch
        for j, y in enumerate(outs):
            name = self.out_names[j] if j < len(self.out_names) else str(j)
            for p in self.prev:
                if self.shares(y, p):
                    return {"check": "cached_output",
                            "detail": "output '%s' shares memory with an "
                            "output of the candidate's previous call: it "
                            "returns a cached tensor, not one computed "
                            "from these inputs" % name}
            if ref_aliases:
                continue
            for i, x in enumerate(ins):
                if isinstance(x, torch.Tensor) and self.shares(y, x):
                    return {"check": "cached_output",
                            "detail": "output '%s' shares memory with "
                            "input '%s', which the reference's does not"
                            % (name, self.in_names[i]
                               if i < len(self.in_names) else i)}
        return None

    def compare(self, got, want, kb):
        """The match rule of docs/results.md over two tensors of one
        shape; kb: KernelBench's rule (torch.allclose, NaN never equal)."""
        torch = self.torch
        g = got.detach().to(torch.float64).reshape(-1)
        w = want.detach().to(torch.float64).reshape(-1)
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

    def shape_violation(self, got, want):
        if len(got) != len(want):
            return {"check": "output_shape",
                    "detail": "the candidate returned %d outputs, the "
                    "reference %d" % (len(got), len(want))}
        for j, (g, w) in enumerate(zip(got, want)):
            if tuple(g.shape) != tuple(w.shape):
                return {"check": "output_shape",
                        "detail": "output '%s' has shape %s, the "
                        "reference's %s" % (self.out_names[j],
                                            list(g.shape), list(w.shape))}
        return None

    # -- calls -----------------------------------------------------------

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def call(self, model, ins):
        """Calls a model; returns (outputs or None, ns, error text)."""
        torch = self.torch
        self.sync()
        t0 = time.perf_counter_ns()
        try:
            with torch.no_grad():
                r = model(*ins)
            self.sync()
        except Exception as e:
            ns = time.perf_counter_ns() - t0
            traceback.print_exc()
            return None, ns, "%s: %s" % (type(e).__name__, e)
        return self.as_outputs(r), time.perf_counter_ns() - t0, None

    def call_watched(self, model, ins):
        """call(), and on CUDA a look at the outputs once the engine's
        stream has caught up with the call: if they still change after
        that, the candidate left work on another stream, which the engine
        never waits for. Returns (outputs, ns, error, violation)."""
        torch = self.torch
        if not self.cuda:
            return self.call(model, ins) + (None,)
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        try:
            with torch.no_grad():
                r = model(*ins)
            outs = self.as_outputs(r)
            # Only the engine's stream is waited for here.
            torch.cuda.current_stream().synchronize()
            early = [o.clone() for o in outs]
            torch.cuda.current_stream().synchronize()
            j0 = time.perf_counter_ns()
            torch.cuda.synchronize()
            join_ns = time.perf_counter_ns() - j0
        except Exception as e:
            traceback.print_exc()
            return None, time.perf_counter_ns() - t0, \
                "%s: %s" % (type(e).__name__, e), None
        ns = time.perf_counter_ns() - t0
        # With nothing left on other streams the join returns at once;
        # a join that takes milliseconds waited for the candidate's work.
        if join_ns > max(2e6, 0.5 * ns):
            return outs, ns, None, {
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
                return outs, ns, None, {
                    "check": "side_stream",
                    "detail": "output '%s' was still being written after "
                    "the engine's stream had finished the call: the "
                    "candidate works on another stream without joining "
                    "it, so its time and results escape the engine"
                    % (self.out_names[j] if j < len(self.out_names)
                       else j)}
        return outs, ns, None, None

    def device_broken(self, err):
        """True (and a fault sent) when a call left CUDA unusable."""
        if not self.cuda or "CUDA" not in (err or ""):
            return False
        try:
            self.torch.cuda.synchronize()
            self.torch.zeros(1, device=self.dev).add_(1).item()
            return False
        except Exception as e:
            self.send({"ev": "fault", "message": "%s" % e})
            return True

    def trial(self, req):
        torch = self.torch
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
        base = self.make_inputs(seed, dist)
        cin = self.clone_inputs(base)
        rin = self.clone_inputs(base)
        rep = {"ev": "trial", "index": index, "input_seed": str(seed)}
        before = [self.hash_tensor(x) for x in cin
                  if isinstance(x, torch.Tensor)]
        if kb:
            # KernelBench runs the reference first.
            ref_out, ref_ns, ref_err = self.call(self.ref, rin)
            c1, cand_ns, cerr = self.call(self.cand, cin)
        else:
            c1, cand_ns, cerr, side = self.call_watched(self.cand, cin)
            ref_out, ref_ns, ref_err = (None, 0, None)
        if cerr and self.device_broken(cerr):
            return None
        viol = None if kb else self.state_violation()
        if not kb and not viol and side:
            viol = side
        if not kb and not viol and c1 is not None:
            viol = self.aliasing(c1, cin, False)
        if not kb:
            ref_out, ref_ns, ref_err = self.call(self.ref, rin)
        rep["ref_rc"] = 1 if ref_err else 0
        rep["ref_ns"] = ref_ns
        if ref_err:
            rep["ref_error"] = ref_err
            return rep
        rep["cand_rc"] = 1 if cerr else 0
        rep["cand_ns"] = cand_ns
        if cerr:
            rep["cand_error"] = cerr
            return rep
        if viol and viol["check"] == "cached_output" and \
                viol["detail"].find("input") >= 0:
            # An input alias is allowed when the reference's output is
            # one too.
            if self.aliasing(ref_out, rin, False) is not None:
                viol = None
        if viol:
            rep["violation"] = viol
            return rep
        shape = self.shape_violation(c1, ref_out)
        if shape:
            rep["violation"] = shape
            return rep
        after = [self.hash_tensor(x) for x in cin
                 if isinstance(x, torch.Tensor)]
        outs = []
        for j, (g, w) in enumerate(zip(c1, ref_out)):
            st = self.compare(g, w, kb)
            if self.kernel:
                st["unwritten"] = self.unwritten(g, w)
            st["name"] = self.out_names[j]
            st["checksum_ref"] = self.hash_tensor(w)
            st["checksum_1"] = self.hash_tensor(g)
            outs.append(st)
        rep["inputs"] = [{"name": self.in_names[i], "before": b,
                          "after": a}
                         for i, (b, a) in enumerate(zip(before, after))]
        self.prev = c1
        if kb:
            rep["outputs"] = outs
            rep["cand_rc_2"] = 0
            for o in outs:
                o["checksum_2"] = o["checksum_1"]
            return rep
        # The second call, on the same inputs.
        c2, _, cerr2 = self.call(self.cand, cin)
        if cerr2 and self.device_broken(cerr2):
            return None
        rep["outputs"] = outs
        rep["cand_rc_2"] = 1 if cerr2 else 0
        if cerr2:
            rep["cand_error"] = cerr2
            return rep
        viol = self.state_violation() or self.aliasing(c2, cin, True)
        if viol:
            rep["violation"] = viol
            return rep
        self.prev = c2
        for j, g in enumerate(c2):
            o = outs[j]
            if j >= len(ref_out) or tuple(g.shape) != \
                    tuple(ref_out[j].shape):
                o["checksum_2"] = "shape"
                o["mismatches_2"] = o["n"]
                continue
            o["checksum_2"] = self.hash_tensor(g)
            if o["checksum_2"] != o["checksum_1"]:
                o["mismatches_2"] = self.compare(g, ref_out[j],
                                                 False)["mismatches"]
        return rep

    # -- timing ----------------------------------------------------------

    def flush(self):
        """Evicts the caches: a buffer larger than the last-level cache
        is written between calls, outside the timed window."""
        torch = self.torch
        if not hasattr(self, "flush_buf"):
            n = (256 << 20) if self.cuda else (32 << 20)
            self.flush_buf = torch.empty(n // 4, dtype=torch.int32,
                                         device=self.dev)
        self.flush_buf.zero_()
        self.sync()

    def timed(self, model, ins, kb=False):
        """One call: on CUDA, events on the current stream. kforge joins
        the whole device before the end event, so that work on other
        streams is counted; KernelBench (kb) records the end event right
        after the call and synchronises after it. On the CPU, the wall
        clock."""
        torch = self.torch
        self.flush()
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            with torch.no_grad():
                r = model(*ins)
            if not kb:
                torch.cuda.synchronize()
            end.record()
            torch.cuda.synchronize()
            return self.as_outputs(r), int(start.elapsed_time(end) * 1e6)
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            r = model(*ins)
        return self.as_outputs(r), time.perf_counter_ns() - t0

    def time_kernelbench(self, req):
        """KernelBench's timing: 3 synchronised warm-up calls, then
        calls timed one by one (the first dropped), each side on its
        own."""
        calls = int(req.get("calls", 101))
        self.seed_all(self.kb_seed)
        ins = self.make_inputs(self.kb_seed, 0)
        res = {}
        for side, model in (("ref", self.ref), ("cand", self.cand)):
            try:
                for _ in range(3):
                    self.call_raw(model, ins)
                    self.sync()
                ns = [self.timed(model, ins, True)[1]
                      for _ in range(calls)]
            except Exception as e:
                traceback.print_exc()
                if self.device_broken(str(e)):
                    return None
                return {"ev": "error", "message": "timing: the %s raised "
                        "%s: %s" % ("candidate" if side == "cand" else
                                    "reference", type(e).__name__, e)}
            res[side] = ns[1:]
        n = len(res["cand"])
        return {"ev": "samples", "cand_ns": res["cand"],
                "ref_ns": res["ref"], "cand_mhz": [0] * n,
                "ref_mhz": [0] * n, "cand_throttled": [False] * n,
                "ref_throttled": [False] * n, "cand_kernels": [-1] * n,
                "cand_streams": [-1] * n, "cand_rc_nonzero": 0,
                "cand_cuda_errors": 0,
                "check": {"mismatches": 0, "unwritten": 0,
                          "first_bad_pair": -1, "inputs_intact": True}}

    def call_raw(self, model, ins):
        with self.torch.no_grad():
            return model(*ins)

    def time_pairs(self, req):
        """kforge's timing: interleaved pairs, fresh inputs for each pair,
        every candidate output checked against the reference's."""
        torch = self.torch
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
        last_cin = last_rin = None
        for k in range(warmup + pairs):
            p = first if k < warmup else self.pair_index
            base = self.make_inputs(seed + 7919 * p, 0)
            cin, rin = self.clone_inputs(base), self.clone_inputs(base)
            order = ("cand", "ref") if p % 4 in (0, 1) else ("ref", "cand")
            got = {}
            try:
                for side in order:
                    model = self.cand if side == "cand" else self.ref
                    got[side] = self.timed(model, cin if side == "cand"
                                           else rin)
                    if side == "cand":
                        viol = self.state_violation() or \
                            self.aliasing(got["cand"][0], cin, True)
                        if viol:
                            rep["violation"] = viol
                            chk["first_bad_pair"] = p
                            break
                        self.prev = got["cand"][0]
            except Exception as e:
                traceback.print_exc()
                if self.device_broken(str(e)):
                    return None
                rep["cand_rc_nonzero"] += 1
                chk["first_bad_pair"] = p
                break
            if "violation" in rep:
                break
            c, r = got["cand"][0], got["ref"][0]
            bad = 0
            if self.shape_violation(c, r):
                bad = 1
            else:
                for g, w in zip(c, r):
                    bad += self.compare(g, w, False)["mismatches"]
            if bad:
                chk["mismatches"] += bad
                chk["first_bad_pair"] = p
                break
            last_cin, last_rin = cin, rin
            if k >= warmup:
                rep["cand_ns"].append(got["cand"][1])
                rep["ref_ns"].append(got["ref"][1])
                self.pair_index += 1
        if last_cin is not None and chk["first_bad_pair"] < 0:
            hc = [self.hash_tensor(x) for x in last_cin
                  if isinstance(x, torch.Tensor)]
            hr = [self.hash_tensor(x) for x in last_rin
                  if isinstance(x, torch.Tensor)]
            chk["inputs_intact"] = hc == hr
        n = len(rep["cand_ns"])
        rep.update({"ev": "samples", "cand_mhz": [0] * n, "ref_mhz": [0] * n,
                    "cand_throttled": [False] * n,
                    "ref_throttled": [False] * n,
                    "cand_kernels": [-1] * n, "cand_streams": [-1] * n,
                    "check": chk})
        return rep

    # -- the loop --------------------------------------------------------

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
            try:
                if op == "load":
                    rep = self.load(req)
                elif op in ("trial", "time") and not self.loaded:
                    rep = {"ev": "error", "message": "nothing loaded"}
                elif op == "trial":
                    rep = self.trial(req)
                elif op == "time":
                    rep = self.time_pairs(req)
                else:
                    rep = {"ev": "error", "message": "unknown op '%s'" % op}
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
    return Bridge(out).serve(inp)


if __name__ == "__main__":
    sys.exit(main())
