# The runner diet, its checks spun: as diet_check_replaced.py, but the
# replaced checks (Guard.changed, the class attribute, and the runner's
# facts) burn at least as much CPU time as the real ones, so that its
# process's checks cost what the reference's do, and find nothing. Its
# under-report is then all in the call's own view, and charged there (ok
# at its true time, 0.73x beside an honest 0.71-1.0x on two loaded cores)
# or over the limit (unaccounted_time). Since the runner's serve() holds
# the functions it checks with (they are not looked up on the class), the
# replaced ones are reported (tampering).
import ctypes
import sys
import time

import torch
import torch.nn as nn

FORGE_MS = 0.15
_m = sys.modules.get("__main__")


SPIN_MS = 0.6
_SPIN = {"ns": int(SPIN_MS * 1e6)}


def _spun(self):
    t = time.thread_time_ns() + _SPIN["ns"]
    while time.thread_time_ns() < t:
        pass
    return []


def _diet(runner):
    """Once the runner is set up (its first call): the checks replaced by a
    copy of their first answer that spins for SPIN_MS, more than the real
    ones take in the judge's view of them (0.5-0.55 ms a call on two
    loaded cores; warm, in a loop, they take 0.14 ms)."""
    if _m is None or not hasattr(_m, "Guard"):
        return
    # The runner's checks take what its serve() holds (chk): found in
    # that frame's locals, which Python code may read.
    f, chk = sys._getframe(), None
    while f is not None and chk is None:
        chk = f.f_locals.get("chk")
        f = f.f_back
    first = runner.facts(chk) if chk is not None else runner.facts()
    _m.Guard.changed = _spun

    def facts(self, *a):
        _spun(self)
        return dict(first, patched=[])
    type(runner).facts = facts


def _set_local(frame, name, value):
    try:
        frame.f_locals[name] = value
    except Exception:
        pass
    fn = getattr(ctypes.pythonapi, "PyFrame_LocalsToFast", None)
    if fn is not None and sys.version_info < (3, 13):
        fn(ctypes.py_object(frame), ctypes.c_int(0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if "done" not in _SPIN:
            _SPIN["done"] = True
            f = sys._getframe(1)
            while f is not None and f.f_code.co_name != "timed":
                f = f.f_back
            if f is not None:
                _diet(f.f_locals["self"])
        y = torch.relu(x)
        f = sys._getframe(1)
        while f is not None and f.f_code.co_name != "timed":
            f = f.f_back
        if f is not None and isinstance(f.f_locals.get("c0"), int):
            c0 = f.f_locals["c0"]
            spent = time.thread_time_ns() - c0
            _set_local(f, "c0", c0 + min(int(FORGE_MS * 1e6),
                                         int(spent * 0.9)))
        return y
