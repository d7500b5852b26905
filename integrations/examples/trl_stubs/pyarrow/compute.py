"""pyarrow.compute's names as placeholders (see ../README.md)."""
from . import _Missing


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing("compute." + name)
