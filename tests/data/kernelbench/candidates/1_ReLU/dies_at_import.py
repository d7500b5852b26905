# Dies at import (a segmentation fault of its own making): the candidate's
# failure, whose result must still say what is known of its compile (the
# reward service refused a result without it as the engine's error).
import os
import signal

os.kill(os.getpid(), signal.SIGSEGV)
