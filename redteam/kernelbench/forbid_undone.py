# Undoes the runner's own ban on new processes (replaces the function in
# the runner's script that installs it), then at every call forks a child
# that burns 8 ms of CPU (the work a helper would do outside the runner's
# clock) and waits for it. Caught: the runner's filter asks the judge's
# process for leave to start one, and after the load the answer is no
# (EPERM): the fork raises (runtime_error). Before that filter, the judge
# read from outside the CPU time of the children the runner waited for
# (rejected/processes).
import os
import sys
import time

import torch
import torch.nn as nn

sys.modules["__main__"].forbid_processes = lambda: None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        pid = os.fork()
        if pid == 0:
            t0 = time.process_time()
            while time.process_time() - t0 < 0.008:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        return torch.relu(x)
