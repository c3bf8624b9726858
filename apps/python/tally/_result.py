"""The solvers' results (a dict whose keys are also attributes: r.status, r["status"]) and what their
HDF5 files need from Python (the out path, the call recorded as provenance)."""
import os


class Result(dict):
    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        brief = {k: v for k, v in self.items() if not hasattr(v, "shape")}
        return f"{type(self).__name__}({brief})"


def count_text(n):
    """A sample count as the executables take it: an int, or a string such as '1e8' or '2^30'."""
    if isinstance(n, bool):
        raise TypeError("expected an int or a string such as '1e8' or '2^30'")
    return str(n) if isinstance(n, (int, str)) else str(int(n)) if float(n).is_integer() else str(n)


def out_path(out):
    """The out= keyword as the module takes it: None, or a path (str or os.PathLike)."""
    if out is None:
        return None
    try:
        return os.fsdecode(os.fspath(out))
    except TypeError:
        raise TypeError(f"out: expected None or a path (str or os.PathLike), got {type(out).__name__}") from None


def call_text(function, **kwargs):
    """The call as the file's provenance records it (its command_line attribute), e.g.
    "tally.mcpi.estimate(n='2^21', backend='cpu', ...)"; arrays by dtype and shape."""
    def show(v):
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return f"<{type(v).__module__.split('.')[0]}.{type(v).__name__} {v.dtype} {tuple(v.shape)}>"
        return repr(os.fspath(v)) if isinstance(v, os.PathLike) else repr(v)
    return f"{function}(" + ", ".join(f"{k}={show(v)}" for k, v in kwargs.items()) + ")"
