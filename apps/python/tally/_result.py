"""The solvers' results: a dict whose keys are also attributes (r.status, r["status"])."""


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
