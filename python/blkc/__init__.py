"""blkc — a ctypes binding over libblkc (include/blkc/blkc.h).

    import numpy as np, blkc
    ctx = blkc.Context("cpu")
    mod = ctx.compile(open("examples/vector_add.blk").read())
    k = mod.kernel("vector_add")
    a = np.ones(1000, np.float32); b = np.ones(1000, np.float32)
    c = np.empty_like(a)
    k(a, b, c)                      # tensors: numpy arrays or DLPack objects
    k.launch(a, b, c, grid=(1,))    # same, with a grid override

    # a task (LANGUAGE.md §6) on N local CPU ranks, full tensors in and out
    src = open("tests/task/mlp.blk").read()
    print(blkc.plan_task(src, "mlp", ranks=8, topology="h100-nvl8",
                         sizes={"T": 4096, "H": 8192, "F": 28672}))
    y = blkc.run_task(src, "mlp", x, w1, w2, ranks=4)   # one result: an array
    t = blkc.Task(src, "mlp2", ranks=4)                 # compiled once per shape
    y, h = t.run(x, w1, w2)                              # several: a tuple

libblkc.so is found through $BLKC_LIB, next to this package (where
`pip install ./python` puts it), or in the build directory of the source
tree (build/libblkc.so). Errors raise
blkc.Error (CompileError for diagnostics), carrying blkc_last_error().
Tensors with a __dlpack__ method (torch, jax, cupy on the host, numpy) are
consumed through the DLPack capsule; numpy arrays are passed directly.
"""
import ctypes
import os

__all__ = ["Context", "Module", "Kernel", "Error", "CompileError",
           "cache_stats", "cache_clear", "autotune", "version", "load",
           "Task", "plan_task", "run_task"]


class Error(RuntimeError):
    """A libblkc call failed; .status is the blkc_status code."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class CompileError(Error):
    """The program has errors; str(e) holds the diagnostics."""


# ---------------------------------------------------------------- DLPack

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _ArgV(ctypes.Union):
    _fields_ = [("tensor", ctypes.POINTER(_DLTensor)), ("i", ctypes.c_int64),
                ("f", ctypes.c_double)]


class _Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("v", _ArgV)]


class _LaunchOptions(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_int64 * 3), ("stream", ctypes.c_void_p)]


class _CompileOptions(ctypes.Structure):
    _fields_ = [("target", ctypes.c_int), ("arch", ctypes.c_char_p),
                ("defines", ctypes.POINTER(ctypes.c_char_p)),
                ("ndefines", ctypes.c_int), ("opt_level", ctypes.c_int),
                ("filename", ctypes.c_char_p), ("isolate", ctypes.c_int),
                ("compile_mem_mb", ctypes.c_int),
                ("ignore_unknown_defines", ctypes.c_int),
                ("specialize", ctypes.c_int)]


class _TaskOptions(ctypes.Structure):
    _fields_ = [("ranks", ctypes.c_int), ("topology", ctypes.c_char_p),
                ("overlap", ctypes.c_int), ("reserved", ctypes.c_int * 8)]


class _CacheStats(ctypes.Structure):
    _fields_ = [("entries", ctypes.c_int64), ("bytes", ctypes.c_int64),
                ("max_bytes", ctypes.c_int64), ("disk_hits", ctypes.c_int64),
                ("disk_misses", ctypes.c_int64),
                ("disk_corrupt", ctypes.c_int64),
                ("disk_writes", ctypes.c_int64), ("dir", ctypes.c_char * 1024)]


class _TuneOptions(ctypes.Structure):
    _fields_ = [("reps", ctypes.c_int), ("force", ctypes.c_int)]


_ARG_TENSOR, _ARG_INT, _ARG_FLOAT = 0, 1, 2
_kDLCPU = 1

# ---------------------------------------------------------------- library

_lib = None


def _candidates():
    env = os.environ.get("BLKC_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libblkc.so")
    root = os.path.dirname(os.path.dirname(here))
    for b in ("build", "build-asan", "build-tsan"):
        yield os.path.join(root, b, "libblkc.so")
    yield "libblkc.so.0"
    yield "libblkc.so"


def load():
    """Load libblkc (once) and return the ctypes handle."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("libblkc.so not found (set BLKC_LIB): " +
                      "; ".join(errors))
    P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    sigs = {
        "blkc_version": (S, []),
        "blkc_last_error": (S, []),
        "blkc_context_create": (I, [S, ctypes.POINTER(P)]),
        "blkc_context_destroy": (None, [P]),
        "blkc_module_create": (I, [P, S, ctypes.c_size_t,
                                   ctypes.POINTER(_CompileOptions),
                                   ctypes.POINTER(P)]),
        "blkc_module_destroy": (None, [P]),
        "blkc_module_kernel_count": (I, [P]),
        "blkc_module_kernel_name": (S, [P, I]),
        "blkc_module_get_kernel": (I, [P, S, ctypes.POINTER(P)]),
        "blkc_kernel_param_count": (I, [P]),
        "blkc_kernel_param_name": (S, [P, I]),
        "blkc_kernel_param_is_tensor": (I, [P, I]),
        "blkc_kernel_launch": (I, [P, ctypes.POINTER(_Arg), I,
                                   ctypes.POINTER(_LaunchOptions)]),
        "blkc_emit": (I, [S, ctypes.c_size_t, ctypes.POINTER(_CompileOptions),
                          S, ctypes.POINTER(ctypes.c_void_p),
                          ctypes.POINTER(ctypes.c_size_t)]),
        "blkc_free": (None, [P]),
        "blkc_cache_stats_get": (I, [ctypes.POINTER(_CacheStats)]),
        "blkc_cache_clear": (I, [ctypes.POINTER(I)]),
        "blkc_module_cache_source": (I, []),
        "blkc_kernel_autotune": (I, [P, S, ctypes.c_size_t,
                                     ctypes.POINTER(_CompileOptions), S,
                                     ctypes.POINTER(S), I,
                                     ctypes.POINTER(_Arg), I,
                                     ctypes.POINTER(_TuneOptions),
                                     ctypes.POINTER(P), S, ctypes.c_size_t]),
        "blkc_kernel_run_ranks": (I, [P, I, ctypes.POINTER(_Arg), I,
                                      ctypes.POINTER(_LaunchOptions)]),
        "blkc_task_create": (I, [S, ctypes.c_size_t,
                                 ctypes.POINTER(_CompileOptions), S,
                                 ctypes.POINTER(_TaskOptions),
                                 ctypes.POINTER(P)]),
        "blkc_task_destroy": (None, [P]),
        "blkc_task_param_count": (I, [P]),
        "blkc_task_param_name": (S, [P, I]),
        "blkc_task_param_is_tensor": (I, [P, I]),
        "blkc_task_result_count": (I, [P]),
        "blkc_task_result_shape": (I, [P, ctypes.POINTER(_Arg), I, I,
                                       ctypes.POINTER(_DLDataType),
                                       ctypes.POINTER(I),
                                       ctypes.POINTER(ctypes.c_int64)]),
        "blkc_task_plan": (I, [P, ctypes.POINTER(S), I, I,
                               ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_size_t)]),
        "blkc_task_run": (I, [P, ctypes.POINTER(_Arg), I,
                              ctypes.POINTER(ctypes.POINTER(_DLTensor)), I]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def _check(status):
    if status != 0:
        msg = load().blkc_last_error().decode("utf-8", "replace")
        raise (CompileError if status == 1 else Error)(status, msg)


def version():
    return load().blkc_version().decode()


def _options(defines, opt_level, filename, keep):
    o = _CompileOptions()
    if defines:
        items = [("%s=%s" % kv).encode() for kv in defines.items()] \
            if isinstance(defines, dict) else [d.encode() for d in defines]
        arr = (ctypes.c_char_p * len(items))(*items)
        keep.append(arr)
        o.defines = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        o.ndefines = len(items)
    o.opt_level = opt_level
    if filename:
        o.filename = filename.encode()
    return o


# ---------------------------------------------------------------- tensors

_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_NP_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}   # kDLFloat, kDLInt, kDLUInt, kDLBool


def _numpy_tensor(a, keep):
    kind = a.dtype.kind
    if kind not in _NP_CODES:
        raise Error(2, "unsupported numpy dtype %s" % a.dtype)
    t = _DLTensor()
    t.data = a.ctypes.data
    t.device = _DLDevice(_kDLCPU, 0)
    t.ndim = a.ndim
    t.dtype = _DLDataType(_NP_CODES[kind], a.dtype.itemsize * 8, 1)
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    isz = a.dtype.itemsize
    if any(s % isz for s in a.strides):
        raise Error(2, "array strides are not a multiple of the item size")
    strides = (ctypes.c_int64 * max(a.ndim, 1))(*[s // isz for s in a.strides])
    t.shape = shape
    t.strides = strides
    keep.extend([a, shape, strides, t])
    return t


def _dlpack_tensor(obj, keep):
    cap = obj.__dlpack__()
    ptr = _PyCapsule_GetPointer(cap, b"dltensor")
    if not ptr:
        raise Error(2, "__dlpack__ did not return a DLPack capsule")
    mt = _DLManagedTensor.from_address(ptr)
    # the capsule (kept alive below) owns the tensor: its destructor calls
    # the producer's deleter since we never rename it to "used_dltensor"
    keep.extend([obj, cap, mt])
    return mt.dl_tensor


def _tensor(x, keep):
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None and isinstance(x, np.ndarray):
        return _numpy_tensor(x, keep)
    if hasattr(x, "__dlpack__"):
        return _dlpack_tensor(x, keep)
    raise Error(2, "expected a numpy array or a DLPack tensor, got %s" %
                type(x).__name__)


# ---------------------------------------------------------------- objects

class Context:
    """A device ("cpu"); holds the in-memory JIT cache."""

    def __init__(self, device="cpu"):
        lib = load()
        h = ctypes.c_void_p()
        _check(lib.blkc_context_create(device.encode(), ctypes.byref(h)))
        self._h = h

    def compile(self, source, defines=None, opt_level=0, filename=None):
        """Compile .blk source (through the cache) into a Module."""
        lib, keep = load(), []
        data = source.encode() if isinstance(source, str) else bytes(source)
        o = _options(defines, opt_level, filename, keep)
        h = ctypes.c_void_p()
        _check(lib.blkc_module_create(self._h, data, len(data),
                                      ctypes.byref(o), ctypes.byref(h)))
        m = Module(h, self)
        m.cache_source = ("compiled", "disk", "memory")[
            lib.blkc_module_cache_source()]
        return m

    def close(self):
        if getattr(self, "_h", None):
            load().blkc_context_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()


class Module:
    def __init__(self, handle, ctx):
        self._h, self._ctx = handle, ctx

    @property
    def kernel_names(self):
        lib = load()
        return [lib.blkc_module_kernel_name(self._h, i).decode()
                for i in range(lib.blkc_module_kernel_count(self._h))]

    def kernel(self, name=None):
        h = ctypes.c_void_p()
        _check(load().blkc_module_get_kernel(
            self._h, name.encode() if name else None, ctypes.byref(h)))
        return Kernel(h, self)

    def close(self):
        if getattr(self, "_h", None):
            load().blkc_module_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()


def _set_arg(a, v, is_tensor, keep, tensor=None):
    """Fill blkc_arg a from value v: a tensor (through `tensor`, default
    _tensor) where the parameter is one, else a float or an int scalar."""
    if is_tensor:
        t = (tensor or _tensor)(v, keep)
        a.kind = _ARG_TENSOR
        a.v.tensor = ctypes.pointer(t)
    elif isinstance(v, float):
        a.kind, a.v.f = _ARG_FLOAT, v
    else:
        a.kind, a.v.i = _ARG_INT, int(v)


def _launch_options(grid):
    lo = _LaunchOptions()
    for i, g in enumerate(grid or ()):
        lo.grid[i] = g
    return lo


def _make_args(k, values, keep):
    lib = load()
    n = lib.blkc_kernel_param_count(k._h)
    if len(values) != n:
        raise Error(2, "kernel takes %d arguments, got %d" % (n, len(values)))
    args = (_Arg * max(n, 1))()
    for i, v in enumerate(values):
        _set_arg(args[i], v, lib.blkc_kernel_param_is_tensor(k._h, i), keep)
    return args


class Kernel:
    def __init__(self, handle, module):
        self._h, self._module = handle, module

    @property
    def params(self):
        lib = load()
        return [lib.blkc_kernel_param_name(self._h, i).decode()
                for i in range(lib.blkc_kernel_param_count(self._h))]

    def launch(self, *values, grid=None):
        keep = []
        args = _make_args(self, values, keep)
        lo = _launch_options(grid)
        _check(load().blkc_kernel_launch(self._h, args, len(values),
                                         ctypes.byref(lo)))

    __call__ = launch

    def run_ranks(self, per_rank, grid=None):
        """Run this kernel or device function on len(per_rank) local CPU
        ranks; per_rank[r] is rank r's argument list (numpy arrays written
        in place, scalars), as `blkc run --ranks=N` gives each rank its own
        tensors. Collectives run across the ranks."""
        lib, keep = load(), []
        R = len(per_rank)
        n = len(per_rank[0]) if R else 0
        if any(len(a) != n for a in per_rank):
            raise Error(2, "every rank needs the same number of arguments")
        args = (_Arg * max(R * n, 1))()
        for r, values in enumerate(per_rank):
            for i, v in enumerate(values):
                _set_arg(args[r * n + i], v,
                         lib.blkc_kernel_param_is_tensor(self._h, i), keep)
        lo = _launch_options(grid)
        _check(lib.blkc_kernel_run_ranks(self._h, R, args, n, ctypes.byref(lo)))


def autotune(ctx, source, kernel, space, *values, defines=None, reps=0,
             force=False):
    """Tune `kernel` over space ({"BM": [32, 64], ...} or ["BM=32,64"]) on
    the given arguments; returns (Kernel, "BM=64 ...")."""
    lib, keep = load(), []
    data = source.encode()
    o = _options(defines, 0, None, keep)
    if isinstance(space, dict):
        space = ["%s=%s" % (k, ",".join(str(x) for x in v))
                 for k, v in space.items()]
    sp = (ctypes.c_char_p * len(space))(*[s.encode() for s in space])
    # argument kinds need the kernel: compile the base config first
    base = ctx.compile(source, defines=defines)
    args = _make_args(base.kernel(kernel), values, keep)
    to = _TuneOptions(reps, 1 if force else 0)
    h = ctypes.c_void_p()
    cfg = ctypes.create_string_buffer(1024)
    _check(lib.blkc_kernel_autotune(ctx._h, data, len(data), ctypes.byref(o),
                                    kernel.encode() if kernel else None, sp,
                                    len(space), args, len(values),
                                    ctypes.byref(to), ctypes.byref(h), cfg,
                                    len(cfg)))
    m = Module(h, ctx)
    return m.kernel(kernel), cfg.value.decode()


def cache_stats():
    st = _CacheStats()
    _check(load().blkc_cache_stats_get(ctypes.byref(st)))
    return {"dir": st.dir.decode(), "entries": st.entries, "bytes": st.bytes,
            "max_bytes": st.max_bytes, "disk_hits": st.disk_hits,
            "disk_misses": st.disk_misses, "disk_corrupt": st.disk_corrupt,
            "disk_writes": st.disk_writes}


def cache_clear():
    n = ctypes.c_int()
    _check(load().blkc_cache_clear(ctypes.byref(n)))
    return n.value


# ---------------------------------------------------------------- tasks

_DL_TO_NP = {2: "f", 0: "i", 1: "u", 6: "b"}


class Task:
    """A task (LANGUAGE.md §6) of .blk source, planned and run on `ranks`
    local CPU ranks as `blkc plan` / `blkc run --entry=NAME --ranks=N` do.

    Task(source, name=None, ranks=1, topology=None, overlap=0,
         defines=None, filename=None); name None = the file's single task.
    run(*args) takes full (unsharded) numpy arrays and scalars in the
    task's parameter order and returns the full results: one array, or a
    tuple for a task with several results. It compiles on the first run
    with new sizes and reuses that for the next runs with the same sizes.
    plan(sizes, json=False) returns the plan text (sizes: {"T": 4096, ...}
    or ["T=4096", ...]). Errors raise blkc.Error / blkc.CompileError with
    the diagnostic text."""

    def __init__(self, source, name=None, ranks=1, topology=None, overlap=0,
                 defines=None, filename=None):
        lib, keep = load(), []
        data = source.encode() if isinstance(source, str) else bytes(source)
        o = _options(defines, 0, filename, keep)
        to = _TaskOptions()
        to.ranks = ranks
        to.topology = topology.encode() if topology else None
        to.overlap = overlap
        h = ctypes.c_void_p()
        _check(lib.blkc_task_create(data, len(data), ctypes.byref(o),
                                    name.encode() if name else None,
                                    ctypes.byref(to), ctypes.byref(h)))
        self._h = h

    @property
    def params(self):
        lib = load()
        return [lib.blkc_task_param_name(self._h, i).decode()
                for i in range(lib.blkc_task_param_count(self._h))]

    @property
    def result_count(self):
        return load().blkc_task_result_count(self._h)

    def plan(self, sizes=None, json=False):
        lib = load()
        if isinstance(sizes, dict):
            sizes = ["%s=%s" % kv for kv in sizes.items()]
        sizes = list(sizes or [])
        arr = (ctypes.c_char_p * max(len(sizes), 1))(
            *[s.encode() for s in sizes])
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        _check(lib.blkc_task_plan(self._h, arr, len(sizes), 1 if json else 0,
                                  ctypes.byref(out), ctypes.byref(n)))
        try:
            return ctypes.string_at(out.value, n.value).decode()
        finally:
            lib.blkc_free(out)

    def _args(self, values, keep):
        import numpy as np
        lib = load()
        n = lib.blkc_task_param_count(self._h)
        if len(values) != n:
            raise Error(2, "task takes %d arguments (%s), got %d" %
                        (n, ", ".join(self.params), len(values)))
        args = (_Arg * max(n, 1))()
        for i, v in enumerate(values):
            is_tensor = lib.blkc_task_param_is_tensor(self._h, i)
            if is_tensor and not isinstance(v, np.ndarray):
                raise Error(2, "argument '%s' must be a numpy array, got %s"
                            % (self.params[i], type(v).__name__))
            _set_arg(args[i], v, is_tensor, keep,
                     lambda x, k: _numpy_tensor(np.ascontiguousarray(x), k))
        return args

    def run(self, *values):
        import numpy as np
        lib, keep = load(), []
        args = self._args(values, keep)
        nres = lib.blkc_task_result_count(self._h)
        outs = []
        for i in range(nres):
            dt = _DLDataType()
            nd = ctypes.c_int()
            shp = (ctypes.c_int64 * 8)()
            _check(lib.blkc_task_result_shape(self._h, args, len(values), i,
                                              ctypes.byref(dt),
                                              ctypes.byref(nd), shp))
            if dt.code not in _DL_TO_NP or dt.bits % 8:
                raise Error(6, "result %d has a dtype numpy lacks (code %d, "
                            "%d bits)" % (i, dt.code, dt.bits))
            npdt = np.dtype("?" if dt.code == 6 else
                            "%s%d" % (_DL_TO_NP[dt.code], dt.bits // 8))
            outs.append(np.empty(tuple(shp[:nd.value]), npdt))
        res = (ctypes.POINTER(_DLTensor) * max(nres, 1))()
        for i, a in enumerate(outs):
            res[i] = ctypes.pointer(_numpy_tensor(a, keep))
        _check(lib.blkc_task_run(self._h, args, len(values), res, nres))
        return outs[0] if nres == 1 else tuple(outs)

    __call__ = run

    def close(self):
        if getattr(self, "_h", None):
            load().blkc_task_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()


def plan_task(source, name=None, ranks=1, topology=None, sizes=None,
              json=False, **kw):
    """The plan `blkc plan --entry=NAME --ranks=N --topology=T` prints."""
    t = Task(source, name, ranks=ranks, topology=topology, **kw)
    try:
        return t.plan(sizes, json=json)
    finally:
        t.close()


def run_task(source, name, *values, ranks=1, **kw):
    """Run task `name` (None: the single task) on `ranks` local ranks, as
    `blkc run --entry=NAME --ranks=N`: full numpy arrays in, full results
    out (one array, or a tuple for several results)."""
    t = Task(source, name, ranks=ranks, **kw)
    try:
        return t.run(*values)
    finally:
        t.close()
