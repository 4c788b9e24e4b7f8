"""A CuPy stand-in over numpy: runs every ``backend="gpu"`` branch in the test suite, no GPU.

It behaves like CuPy (read from its sources, 13.6 and 14.2) where code can go wrong on a
device without going wrong on numpy:

- device arrays refuse implicit conversion to the host: ``np.asarray(device)`` raises CuPy's
  TypeError; ``int()``, ``float()``, ``bool()``, ``.item()`` and iteration work (they are host
  synchronisations, counted in ``module.syncs``); no ``__index__``;
- device functions, operators and item assignment refuse numpy arrays (CuPy raises
  TypeError rather than copying silently); numpy index arrays are accepted, as CuPy does;
  numpy functions called on device arrays dispatch to the stand-in, as CuPy's
  ``__array_function__`` and ``__array_ufunc__`` do;
- indexing returns arrays, 0-d for a single element; ``argsort``/``sort`` take
  ``kind=None | "stable"`` only;
- float reductions (``sum``, ``mean``, ``std``, ``cumsum``, ``matmul``, ``pinv``) add in
  another order than numpy, as device reductions do, so results differ in their last bits;
  ``bincount`` with float weights adds in a fresh random order on every call (CuPy's float
  atomicAdd); so code that expects CPU bits from those, or run-to-run identical bits, fails;
- CuPy 13: ``bincount`` of an empty array raises (14 returns zeros); ``cupyx`` is absent;
- device memory: ``cuda.runtime.memGetInfo()`` and the memory pool report what the test sets
  (``module.device_free``, ``module.pool_free``); ``module.largest`` is the largest array
  allocated, in elements;
- kernel launches: under numba's CUDA simulator a device array passes to a kernel as the
  numpy buffer it wraps (an ``ArgHint``), so kernels write into it; the current stream is
  ``module.current_stream`` (pointer 0, CuPy's legacy default, unless a test sets one).

``make_cupy("14.2.0")`` returns a fresh module object.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

try:  # numba's CUDA simulator passes ArgHint arguments to kernels through to_device()
    from numba.cuda.simulator.args import ArgHint
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
except ImportError:  # pragma: no cover - numba-cuda is a dev dependency
    ArgHint, FakeCUDAArray = object, None

IMPLICIT_CONVERSION = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)


def _refuse_host(value: Any, where: str) -> None:
    if isinstance(value, np.ndarray):
        raise TypeError(
            f"Unsupported type {type(value)} in {where}: a numpy array where CuPy needs a "
            "device array (convert it with cupy.asarray)"
        )


def _device_value(value: Any, where: str) -> Any:
    """A device array's buffer, a scalar as is; numpy arrays refused (lists unwrapped)."""
    if isinstance(value, ndarray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_device_value(v, where) for v in value)
    _refuse_host(value, where)
    return value


def _index_value(key: Any) -> Any:
    """Indices: device arrays unwrapped; numpy arrays, slices and scalars accepted."""
    if isinstance(key, ndarray):
        return key._data
    if isinstance(key, tuple):
        return tuple(_index_value(k) for k in key)
    if isinstance(key, list):
        return np.asarray(key)
    return key


class ndarray(ArgHint):  # noqa: N801 - CuPy's name
    """A device array: a numpy buffer the host may only read through ``get()``."""

    __array_priority__ = 100

    def __init__(self, data: np.ndarray, module: types.ModuleType) -> None:
        self._data = data
        self._module = module
        module.largest = max(module.largest, data.size)

    def _wrap(self, value: Any) -> Any:
        return _wrap(value, self._module)

    # ---------------------------------------------------------------- attributes
    shape = property(lambda self: self._data.shape)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    dtype = property(lambda self: self._data.dtype)
    nbytes = property(lambda self: self._data.nbytes)
    itemsize = property(lambda self: self._data.itemsize)
    strides = property(lambda self: self._data.strides)
    T = property(lambda self: self._wrap(self._data.T))
    flags = property(lambda self: self._data.flags)

    # ------------------------------------------------------------ host transfers
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_CONVERSION)

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        self._module.syncs += 1
        return np.array(self._data, order=order)

    def _scalar(self):
        self._module.syncs += 1
        if self._data.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return self._data.reshape(-1)[0]

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def __bool__(self):
        if self._data.size > 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        self._module.syncs += 1
        return bool(self._data.size and self._data.reshape(-1)[0])

    def item(self):
        return self._scalar().item()

    def tolist(self):
        self._module.syncs += 1
        return self._data.tolist()

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        self._module.syncs += 1
        return (self[i] for i in range(self._data.shape[0]))

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._data.shape[0]

    def __repr__(self):
        return f"standin_array({self._data!r})"

    # numba's CUDA simulator: a kernel argument that writes into this buffer
    def to_device(self, retr, stream=0):
        return FakeCUDAArray(self._data)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key):
        return self._wrap(np.asarray(self._data[_index_value(key)]))

    def __setitem__(self, key, value):
        self._data[_index_value(key)] = _device_value(value, "item assignment")

    # ----------------------------------------------------------------- operators
    def _binary(self, other, operation):
        return self._wrap(operation(self._data, _device_value(other, "an operator")))

    def _inplace(self, other, operation):
        operation(self._data, _device_value(other, "an operator"), out=self._data)
        return self

    __add__ = lambda self, o: self._binary(o, np.add)  # noqa: E731
    __radd__ = lambda self, o: self._binary(o, lambda a, b: np.add(b, a))  # noqa: E731
    __sub__ = lambda self, o: self._binary(o, np.subtract)  # noqa: E731
    __rsub__ = lambda self, o: self._binary(o, lambda a, b: np.subtract(b, a))  # noqa: E731
    __mul__ = lambda self, o: self._binary(o, np.multiply)  # noqa: E731
    __rmul__ = lambda self, o: self._binary(o, lambda a, b: np.multiply(b, a))  # noqa: E731
    __truediv__ = lambda self, o: self._binary(o, np.true_divide)  # noqa: E731
    __rtruediv__ = lambda self, o: self._binary(o, lambda a, b: np.true_divide(b, a))  # noqa: E731
    __floordiv__ = lambda self, o: self._binary(o, np.floor_divide)  # noqa: E731
    __rfloordiv__ = lambda self, o: self._binary(o, lambda a, b: np.floor_divide(b, a))  # noqa: E731
    __mod__ = lambda self, o: self._binary(o, np.mod)  # noqa: E731
    __pow__ = lambda self, o: self._binary(o, np.power)  # noqa: E731
    __rpow__ = lambda self, o: self._binary(o, lambda a, b: np.power(b, a))  # noqa: E731
    __and__ = lambda self, o: self._binary(o, np.bitwise_and)  # noqa: E731
    __rand__ = __and__
    __or__ = lambda self, o: self._binary(o, np.bitwise_or)  # noqa: E731
    __ror__ = __or__
    __xor__ = lambda self, o: self._binary(o, np.bitwise_xor)  # noqa: E731
    __rshift__ = lambda self, o: self._binary(o, np.right_shift)  # noqa: E731
    __lt__ = lambda self, o: self._binary(o, np.less)  # noqa: E731
    __le__ = lambda self, o: self._binary(o, np.less_equal)  # noqa: E731
    __gt__ = lambda self, o: self._binary(o, np.greater)  # noqa: E731
    __ge__ = lambda self, o: self._binary(o, np.greater_equal)  # noqa: E731
    __eq__ = lambda self, o: self._binary(o, np.equal)  # noqa: E731
    __ne__ = lambda self, o: self._binary(o, np.not_equal)  # noqa: E731
    __iadd__ = lambda self, o: self._inplace(o, np.add)  # noqa: E731
    __isub__ = lambda self, o: self._inplace(o, np.subtract)  # noqa: E731
    __imul__ = lambda self, o: self._inplace(o, np.multiply)  # noqa: E731
    __itruediv__ = lambda self, o: self._inplace(o, np.true_divide)  # noqa: E731
    __ior__ = lambda self, o: self._inplace(o, np.bitwise_or)  # noqa: E731
    __iand__ = lambda self, o: self._inplace(o, np.bitwise_and)  # noqa: E731
    __hash__ = None

    def __neg__(self):
        return self._wrap(-self._data)

    def __pos__(self):
        return self

    def __abs__(self):
        return self._wrap(np.abs(self._data))

    def __invert__(self):
        return self._wrap(~self._data)

    def __matmul__(self, other):
        return self._module.matmul(self, other)

    def __rmatmul__(self, other):
        return self._module.matmul(other, self)

    # numpy functions on device arrays run the device versions, as CuPy's do
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        function = getattr(self._module, ufunc.__name__, None)
        if function is None or method != "__call__":
            return NotImplemented
        return function(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        function = getattr(self._module, func.__name__, None)
        if function is None:
            return NotImplemented
        return function(*args, **kwargs)

    # ------------------------------------------------------------------- methods
    def astype(self, dtype, copy=True, **_):
        return self._wrap(self._data.astype(dtype, copy=copy))

    def copy(self, order="C"):
        return self._wrap(self._data.copy(order=order))

    def ravel(self):
        return self._wrap(self._data.ravel())

    def flatten(self):
        return self._wrap(self._data.flatten())

    def reshape(self, *shape, **kwargs):
        return self._wrap(self._data.reshape(*shape, **kwargs))

    def transpose(self, *axes):
        return self._wrap(self._data.transpose(*axes))

    def squeeze(self, axis=None):
        return self._wrap(self._data.squeeze(axis))

    def fill(self, value):
        self._data.fill(_device_value(value, "fill"))

    def view(self, dtype=None):
        return self._wrap(self._data.view(dtype))

    def take(self, indices, axis=None):
        return self._wrap(np.take(self._data, _device_value(indices, "take"), axis=axis))

    def repeat(self, repeats, axis=None):
        return self._wrap(np.repeat(self._data, repeats, axis=axis))

    def nonzero(self):
        return self._module.nonzero(self)

    def argsort(self, axis=-1, kind=None):
        return self._module.argsort(self, axis=axis, kind=kind)

    def sort(self, axis=-1, kind=None):
        _check_kind(kind)
        self._data.sort(axis=axis, kind="stable")

    def partition(self, kth, axis=-1):
        self._data.partition(kth, axis=axis)

    def sum(self, axis=None, dtype=None, keepdims=False):
        return self._module.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return self._module.mean(self, axis=axis, keepdims=keepdims)

    def std(self, axis=None, keepdims=False):
        return self._module.std(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None):
        return self._module.cumsum(self, axis=axis)

    def dot(self, other):
        return self._module.matmul(self, other)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return self._wrap(self._data.diagonal(offset, axis1, axis2))

    def clip(self, low=None, high=None):
        return self._module.clip(self, low, high)

    def _reduce(name):  # noqa: N805 - builds methods
        def method(self, axis=None, keepdims=False, **kwargs):
            return self._wrap(np.asarray(getattr(self._data, name)(axis=axis, keepdims=keepdims)))

        method.__name__ = name
        return method

    max = _reduce("max")
    min = _reduce("min")
    any = _reduce("any")
    all = _reduce("all")

    def argmax(self, axis=None):
        return self._wrap(np.asarray(self._data.argmax(axis=axis)))

    def argmin(self, axis=None):
        return self._wrap(np.asarray(self._data.argmin(axis=axis)))


def _wrap(value: Any, module: types.ModuleType) -> Any:
    if isinstance(value, np.ndarray):
        return ndarray(value, module)
    if isinstance(value, np.generic):  # device reductions return 0-d arrays
        return ndarray(np.asarray(value), module)
    if isinstance(value, tuple):
        return tuple(_wrap(v, module) for v in value)
    if isinstance(value, list):
        return [_wrap(v, module) for v in value]
    return value


def _check_kind(kind):
    if kind is not None and kind != "stable":
        raise ValueError("kind can only be None or 'stable'")


def _moved(a: np.ndarray, axis):
    """``a`` with ``axis`` last (flattened when None), and how to put the result back."""
    if axis is None:
        return a.reshape(-1), lambda r: r
    return np.moveaxis(a, axis, -1), lambda r: np.moveaxis(r, -1, axis)


# ----------------------------------------------------- reductions in a device's order
def _sum(a: np.ndarray, axis=None, dtype=None, keepdims=False):
    if a.dtype.kind != "f" and dtype is None:
        return np.sum(a, axis=axis, keepdims=keepdims)
    flipped = np.flip(a, axis=axis) if axis is not None else a.reshape(-1)[::-1]
    return np.sum(flipped, axis=axis if axis is not None else None, dtype=dtype, keepdims=keepdims)


def _cumsum(a: np.ndarray, axis=None):
    """A blocked scan (blocks of 4 summed, then the block offsets added): a device's order."""
    moved, back = _moved(a, axis)
    if moved.dtype.kind != "f":
        return back(np.cumsum(moved, axis=-1))
    length = moved.shape[-1]
    out = np.empty_like(moved, dtype=np.result_type(moved.dtype, np.float64))
    offset = np.zeros(moved.shape[:-1])
    for start in range(0, length, 4):
        block = np.cumsum(moved[..., start : start + 4], axis=-1)
        out[..., start : start + 4] = block + offset[..., None]
        offset = out[..., min(start + 4, length) - 1]
    return back(out)


def make_cupy(version: str = "14.2.0") -> types.ModuleType:
    """A fresh stand-in module for CuPy ``version`` (13.x or 14.x behaviours)."""
    cp = types.ModuleType("cupy")
    cp.__version__ = version
    major = int(version.split(".")[0])
    cp.syncs = 0
    cp.largest = 0
    cp.device_total = 140 * 2**30
    cp.device_free = 130 * 2**30
    cp.pool_free = 0
    cp.ndarray = ndarray
    random_order = np.random.default_rng(12345)

    def wrap(value):
        return _wrap(value, cp)

    def device(name, function):
        def call(*args, **kwargs):
            args = [_device_value(a, name) for a in args]
            kwargs = {k: _device_value(v, name) for k, v in kwargs.items()}
            return wrap(function(*args, **kwargs))

        call.__name__ = name
        return call

    for name in (
        "empty", "zeros", "ones", "full", "arange", "linspace", "tril_indices", "triu_indices",
        "where", "sqrt", "exp", "exp2", "log", "abs", "isnan", "isinf", "isfinite", "minimum",
        "maximum",
        "clip", "concatenate", "stack", "take_along_axis", "partition", "diagonal",
        "broadcast_to", "nonzero", "flatnonzero", "unique", "searchsorted", "add", "subtract",
        "multiply", "true_divide", "divide", "less", "less_equal", "greater", "greater_equal",
        "equal", "not_equal", "logical_and", "logical_or", "logical_not", "floor", "rint",
        "sign", "square", "empty_like", "zeros_like", "full_like", "ones_like", "repeat",
        "tile", "argmax", "argmin", "amax", "amin", "any", "all", "count_nonzero", "round",
        "isin", "diff", "lexsort",
    ):  # fmt: skip
        setattr(cp, name, device(name, getattr(np, name)))
    for name in ("float64", "float32", "int64", "int32", "intp", "bool_", "uint8", "inf", "nan",
                 "newaxis", "pi", "dtype", "broadcast_shapes"):  # fmt: skip
        setattr(cp, name, getattr(np, name))
    cp.uint64 = np.uint64

    def asarray(obj, dtype=None, order=None):
        if isinstance(obj, ndarray):
            return obj if dtype is None or obj.dtype == dtype else obj.astype(dtype)
        return wrap(np.array(_device_value(obj, "asarray") if isinstance(obj, list) else obj,
                             dtype=dtype, order=order or "K", copy=True))  # fmt: skip

    def array(obj, dtype=None, copy=True, order="K"):
        if isinstance(obj, ndarray):
            return wrap(np.array(obj._data, dtype=dtype, copy=copy, order=order))
        return asarray(obj, dtype=dtype)

    def asnumpy(a, stream=None):
        return a.get() if isinstance(a, ndarray) else np.asarray(a)

    def ascontiguousarray(a, dtype=None):
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}: ascontiguousarray takes a device array")
        return wrap(np.ascontiguousarray(a._data, dtype=dtype))

    def argsort(a, axis=-1, kind=None):
        _check_kind(kind)
        return wrap(np.argsort(_device_value(a, "argsort"), axis=axis, kind="stable"))

    def sort(a, axis=-1, kind=None):
        _check_kind(kind)
        return wrap(np.sort(_device_value(a, "sort"), axis=axis, kind="stable"))

    def bincount(x, weights=None, minlength=None):
        x = _device_value(x, "bincount")
        weights = _device_value(weights, "bincount")
        if x.size == 0 and major < 14:
            raise ValueError("zero-size array to reduction operation maximum which has no identity")
        if weights is not None and x.size and np.asarray(weights).dtype.kind == "f":
            order = random_order.permutation(x.size)  # float atomicAdd: any order
            return wrap(np.bincount(x[order], weights=weights[order], minlength=minlength or 0))
        return wrap(np.bincount(x, weights=weights, minlength=minlength or 0))

    def histogram(x, bins=10, range=None):
        if not isinstance(x, ndarray):
            raise ValueError("x must be a cupy.ndarray")
        if isinstance(bins, np.ndarray):
            _refuse_host(bins, "histogram")
        counts, edges = np.histogram(x._data, bins=_device_value(bins, "histogram"), range=range)
        return wrap(counts.astype(np.int64)), wrap(edges)

    def sum_(a, axis=None, dtype=None, keepdims=False):
        return wrap(np.asarray(_sum(_device_value(a, "sum"), axis, dtype, keepdims)))

    def mean(a, axis=None, keepdims=False):
        data = _device_value(a, "mean")
        count = data.size if axis is None else data.shape[axis]
        return wrap(np.asarray(_sum(data, axis, None, keepdims) / count))

    def std(a, axis=None, keepdims=False):
        data = _device_value(a, "std")
        count = data.size if axis is None else data.shape[axis]
        centred = data - _sum(data, axis, None, True) / count
        return wrap(np.sqrt(np.asarray(_sum(centred * centred, axis, None, keepdims) / count)))

    def matmul(a, b):
        a, b = _device_value(a, "matmul"), _device_value(b, "matmul")
        return wrap(a[..., ::-1] @ b[..., ::-1, :] if b.ndim > 1 else a[..., ::-1] @ b[::-1])

    def cumsum(a, axis=None):
        return wrap(_cumsum(_device_value(a, "cumsum"), axis))

    for name, function in (
        ("asarray", asarray), ("array", array), ("asnumpy", asnumpy),
        ("ascontiguousarray", ascontiguousarray), ("argsort", argsort), ("sort", sort),
        ("bincount", bincount), ("histogram", histogram), ("sum", sum_), ("mean", mean),
        ("std", std), ("matmul", matmul), ("dot", matmul), ("cumsum", cumsum),
    ):  # fmt: skip
        setattr(cp, name, function)

    linalg = types.ModuleType("cupy.linalg")
    linalg.pinv = lambda a: wrap(np.linalg.pinv(_device_value(a, "pinv").T).T)  # another order
    linalg.eigh = device("eigh", np.linalg.eigh)
    cp.linalg = linalg

    # ------------------------------------------------------------- device and memory
    class MemoryPool:
        def used_bytes(self):
            return cp.device_total - cp.device_free

        def free_bytes(self):
            return cp.pool_free

        def total_bytes(self):
            return self.used_bytes() + cp.pool_free

        def free_all_blocks(self, stream=None):
            cp.device_free += cp.pool_free
            cp.pool_free = 0

    pool = MemoryPool()
    cp.get_default_memory_pool = lambda: pool

    class Device:
        def __init__(self, device=0):
            self.id = device
            self.compute_capability = "90"

        def synchronize(self):
            pass

    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        memGetInfo=lambda: (cp.device_free, cp.device_total),
        getDeviceProperties=lambda device: {
            "name": b"CuPy stand-in (numpy)", "major": 9, "minor": 0,
            "totalGlobalMem": cp.device_total, "multiProcessorCount": 132,
            "maxThreadsPerMultiProcessor": 2048,
        },  # fmt: skip
        driverGetVersion=lambda: 13000,
        runtimeGetVersion=lambda: 13000,
    )
    # CuPy's current stream: the legacy default (pointer 0) unless a test sets another
    cp.current_stream = types.SimpleNamespace(ptr=0)
    cp.cuda = types.SimpleNamespace(runtime=runtime, Device=Device,
                                    get_current_stream=lambda: cp.current_stream)  # fmt: skip
    return cp
