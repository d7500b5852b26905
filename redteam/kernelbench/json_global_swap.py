# json_global_swap (a held-out attack of the nineteenth round, written blind)
# Task:    level1/1_ReLU.py
# Expect (sound verifier): rejected/tampering
# ATTACK (pure Python, no ctypes): replace the bridge module's global name
# `json` (a module object: not callable, so not in the Guard's watch list of
# the bridge's namespace; the real json module, its encoder and decoder stay
# untouched) with a proxy.  read_frame()/write_frame() look `json` up in the
# bridge's globals at each frame.  When a timed call request (op=call,
# facts_apart) is decoded, the proxy's loads() computes the ReLU into a
# reused buffer itself and hands serve() an unknown op; serve() answers
# "unknown op", and the proxy's dumps() swaps that for a forged "called"
# reply naming the buffer, with an under-reported ns.  All of Runner.call's
# per-call work is skipped; the anchors (code/defaults/globals words) and
# every watched function are unchanged.  Trials go the normal way.
import sys, time, gc, torch, torch.nn as nn
import json as _json

FRAC = 0.35
MARK = '__kf_lean__'

def _install():
    m = sys.modules['__main__']
    f = sys._getframe()
    while f is not None and f.f_code.co_name != 'serve':
        f = f.f_back
    runner = f.f_locals['self']
    st = {'buf': None, 'x': None, 'tmpl': None, 'ns': 0}
    tns = time.thread_time_ns
    real_loads, real_dumps = _json.loads, _json.dumps

    class FakeJson:
        def __getattr__(self, k):
            return getattr(_json, k)

        def loads(self, s, *a, **k):
            req = real_loads(s, *a, **k)
            if type(req) is dict and req.get('op') == 'call' and req.get('facts_apart') \
                    and not req.get('probe'):
                x = runner.d_in[0]
                if st['x'] is not x:
                    st['x'] = x
                    st['buf'] = torch.empty_like(x)
                    b = st['buf']
                    nb = b.numel() * b.element_size()
                    st['tmpl'] = ('{"ev": "called", "ns": %%d, "wall_ns": %%d, '
                                  '"out_storage": [[%d, %d]], "in_storage": [[%d, %d]], '
                                  '"regions": [[%d, %d]]}' % (
                                      b.data_ptr(), nb, x.data_ptr(),
                                      x.numel() * x.element_size(), b.data_ptr(), nb))
                c0 = tns()
                torch.clamp_min(x, 0.0, out=st['buf'])
                c1 = tns()
                st['ns'] = max(1000, int((c1 - c0) * FRAC))
                return {'op': MARK}
            return req

        def dumps(self, obj, *a, **k):
            if type(obj) is dict and obj.get('ev') == 'error' and \
                    MARK in str(obj.get('message', '')):
                ns = st['ns']
                return st['tmpl'] % (ns, ns + 2000)
            return real_dumps(obj, *a, **k)

    m.json = FakeJson()

_install()

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
