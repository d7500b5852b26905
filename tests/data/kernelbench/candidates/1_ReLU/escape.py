# At import time, reaches out of its runner: lists other processes and reads
# their command lines (the judge's, the supervisor's --seed), stops them with
# SIGSTOP, opens the machine's files, the network. Wins (computes ReLU) if any
# of that works; confined, it finds nothing and returns zeros: wrong_answer.
import os
import signal
import socket

import torch
import torch.nn as nn

WON = []
me = os.getpid()
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) in (me, 1):
        continue
    try:
        with open("/proc/%s/cmdline" % name, "rb") as f:
            if f.read():
                WON.append("cmdline of " + name)
        os.kill(int(name), signal.SIGSTOP)
        os.kill(int(name), signal.SIGCONT)
        WON.append("signal to " + name)
    except OSError:
        pass
for path in ("/etc/passwd", "/etc/hostname", "/root", "/home",
             os.path.expanduser("~/.cache/kforge")):
    if os.path.exists(path):
        WON.append(path)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=0.5).close()
    WON.append("network")
except OSError:
    pass
for path in ("/root/kforge-left-behind", "/usr/kforge-left-behind"):
    try:
        open(path, "w").close()
        WON.append("wrote " + path)
    except OSError:
        pass
print("escape:", WON, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if WON:
            return torch.clamp(x, min=0.0)
        return torch.zeros_like(x)
