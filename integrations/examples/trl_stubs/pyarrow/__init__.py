"""A stand-in for pyarrow's names (see ../README.md): any attribute is a
placeholder that raises when used. Only where pyarrow cannot be imported."""
__version__ = "0.0.0+kforge-stub"
KFORGE_STUB = True


class _Missing:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"pyarrow stub: {self._name}")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self._name}.{name}")

    def __or__(self, other):  # annotations such as pa.Table | None
        return self

    __ror__ = __or__

    def __getitem__(self, item):
        return self

    def __repr__(self):
        return f"<pyarrow stub {self._name}>"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)
