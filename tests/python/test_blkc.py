"""pytest suite of the ctypes binding (python/blkc)."""
import numpy as np
import pytest

import blkc

VADD = """
kernel vadd<BLOCK = 64>(A: f32[N], B: f32[N], C: f32[N], s: f32)
    grid(cdiv(N, BLOCK))
{
    let o = program_id(0) * BLOCK;
    C[o +: BLOCK] = A[o +: BLOCK] + B[o +: BLOCK] * s;
}
"""


@pytest.fixture(scope="module")
def ctx():
    return blkc.Context("cpu")


def test_version():
    assert blkc.version().count(".") == 2


def test_numpy_launch(ctx):
    k = ctx.compile(VADD).kernel("vadd")
    assert k.params == ["A", "B", "C", "s"]
    a = np.arange(1000, dtype=np.float32)
    b = np.ones(1000, dtype=np.float32)
    c = np.zeros(1000, dtype=np.float32)
    k(a, b, c, 3.0)
    np.testing.assert_array_equal(c, a + 3)


def test_strided_and_offset(ctx):
    k = ctx.compile(VADD).kernel()
    base = np.arange(600, dtype=np.float32)
    a = base[1::3]                  # strided view with a byte offset
    b = np.full(a.shape, 2, np.float32)
    c = np.zeros(a.shape, np.float32)
    k(a, b, c, 0.5)
    np.testing.assert_array_equal(c, a + 1)


def test_cache_hot(ctx):
    m1 = ctx.compile(VADD, defines={"BLOCK": 128})
    m2 = ctx.compile(VADD, defines={"BLOCK": 128})
    assert m2.cache_source == "memory"
    ctx2 = blkc.Context()
    assert ctx2.compile(VADD, defines={"BLOCK": 128}).cache_source == "disk"
    assert blkc.cache_stats()["entries"] >= 1
    del m1


class Wrapped:
    """Only the DLPack protocol (as torch/jax tensors offer)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_dlpack(ctx):
    if not hasattr(np.ndarray, "__dlpack__"):
        pytest.skip("numpy without DLPack")
    k = ctx.compile(VADD).kernel()
    a = np.arange(256, dtype=np.float32)
    b = np.ones(256, dtype=np.float32)
    c = np.zeros(256, dtype=np.float32)
    k(Wrapped(a), Wrapped(b), Wrapped(c), 1.0)
    np.testing.assert_array_equal(c, a + 1)


def test_torch(ctx):
    torch = pytest.importorskip("torch")
    k = ctx.compile(VADD).kernel()
    a = torch.arange(300, dtype=torch.float32)
    b = torch.ones(300)
    c = torch.zeros(300)
    k(a, b, c, 2.0)
    assert torch.equal(c, a + 2)


def test_compile_error(ctx):
    with pytest.raises(blkc.CompileError) as e:
        ctx.compile("kernel k(A: f32[N]) grid(1) { A[0] = ; }",
                    filename="bad.blk")
    assert "bad.blk:1:" in str(e.value)
    assert "error" in str(e.value)


def test_launch_errors(ctx):
    k = ctx.compile(VADD).kernel()
    a = np.zeros(10, np.float32)
    with pytest.raises(blkc.Error, match="dtype mismatch"):
        k(a, np.zeros(10, np.float64), a, 1.0)
    with pytest.raises(blkc.Error, match="size mismatch"):
        k(a, np.zeros(11, np.float32), a, 1.0)
    with pytest.raises(blkc.Error, match="takes 4 arguments"):
        k(a, a)
    with pytest.raises(blkc.Error, match="no kernel named"):
        ctx.compile(VADD).kernel("nope")


def test_autotune(ctx):
    a = np.arange(4096, dtype=np.float32)
    b = np.ones(4096, np.float32)
    c = np.full(4096, -1, np.float32)
    k, cfg = blkc.autotune(ctx, VADD, "vadd", {"BLOCK": [64, 512]},
                           a, b, c, 1.0)
    assert cfg in ("BLOCK=64", "BLOCK=512")
    assert c[0] == -1                # restored after timing
    k(a, b, c, 1.0)
    np.testing.assert_array_equal(c, a + 1)
    k2, cfg2 = blkc.autotune(ctx, VADD, "vadd", ["BLOCK=64,512"],
                             a, b, c, 1.0)
    assert cfg2 == cfg


# ---------------------------------------------------------------- tasks

import os  # noqa: E402

_TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "task")


def _read(name):
    with open(os.path.join(_TASKS, name)) as f:
        return f.read()


def _mlp_ref(x, w1, w2):
    a = x.astype(np.float64) @ w1.astype(np.float64)
    h = a / (1 + np.exp(-a))
    return h @ w2.astype(np.float64), h


def _mlp_inputs(T=8, H=16, F=32):
    rng = np.random.default_rng(3)
    return (rng.uniform(-1, 1, (T, H)).astype(np.float32),
            rng.uniform(-1, 1, (H, F)).astype(np.float32),
            rng.uniform(-1, 1, (F, H)).astype(np.float32))


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_run_task_mlp(ranks):
    x, w1, w2 = _mlp_inputs()
    y = blkc.run_task(_read("mlp.blk"), "mlp", x, w1, w2, ranks=ranks)
    want, _ = _mlp_ref(x, w1, w2)
    assert y.shape == (8, 16) and y.dtype == np.float32
    np.testing.assert_allclose(y, want, atol=1e-3)


def test_task_two_results_and_reuse():
    x, w1, w2 = _mlp_inputs()
    t = blkc.Task(_read("two_results.blk"), ranks=4)
    assert t.params == ["x", "w1", "w2"] and t.result_count == 2
    for _ in range(2):
        y, h = t.run(x, w1, w2)
        want_y, want_h = _mlp_ref(x, w1, w2)
        np.testing.assert_allclose(y, want_y, atol=1e-3)
        np.testing.assert_allclose(h, want_h, atol=1e-4)
    # other sizes: compiled again
    x2, w12, w22 = _mlp_inputs(T=4, H=8, F=16)
    y, h = t.run(x2, w12, w22)
    np.testing.assert_allclose(y, _mlp_ref(x2, w12, w22)[0], atol=1e-3)
    t.close()


def test_plan_task_matches_cli_golden():
    plan = blkc.plan_task(_read("mlp.blk"), "mlp", ranks=8,
                          topology="h100-nvl8",
                          sizes={"T": 4096, "H": 8192, "F": 28672})
    assert plan == _read("golden/mlp_h100.txt")
    assert "decision: GEMM+AllReduce, 1 chunk per shard" in plan
    js = blkc.plan_task(_read("mlp.blk"), "mlp", ranks=8,
                        topology="h100-nvl8", json=True,
                        sizes=["T=4096", "H=8192", "F=28672"])
    import json
    assert json.loads(js)


def test_task_errors():
    src = _read("mlp.blk")
    x, w1, w2 = _mlp_inputs()
    with pytest.raises(blkc.Error, match="no task named 'nope'.*tasks: mlp"):
        blkc.Task(src, "nope")
    t = blkc.Task(src, "mlp", ranks=4)
    with pytest.raises(blkc.Error, match="takes 3 arguments"):
        t.run(x, w1)
    with pytest.raises(blkc.Error, match="'w1' of task mlp has dtype f64, "
                                         "expected f32"):
        t.run(x, w1.astype(np.float64), w2)
    with pytest.raises(blkc.Error, match="dim 0 is 8, but size H is 16"):
        t.run(x, w1.reshape(8, 64), w2)
    w1o = np.ones((16, 30), np.float32)
    w2o = np.ones((30, 16), np.float32)
    with pytest.raises(blkc.CompileError,
                       match="30 is not divisible by 4"):
        t.run(x, w1o, w2o)
    with pytest.raises(blkc.Error, match="needs the size F"):
        t.plan({"T": 8, "H": 16})
    # still usable after errors
    np.testing.assert_allclose(t.run(x, w1, w2), _mlp_ref(x, w1, w2)[0],
                               atol=1e-3)
    t.close()


def test_device_function_run_ranks(ctx):
    src = """
device ar2(x: f32[N], y: f32[N]) {
    let s = symmetric(f32, N);
    copy(s[0 +: N], x[0 +: N]);
    all_reduce(s, op = sum);
    copy(y[0 +: N], s[0 +: N]);
}
"""
    k = ctx.compile(src).kernel("ar2")
    xs = [np.arange(32, dtype=np.float32) * (r + 1) for r in range(4)]
    ys = [np.zeros(32, np.float32) for _ in range(4)]
    k.run_ranks([[x, y] for x, y in zip(xs, ys)])
    for y in ys:
        np.testing.assert_array_equal(y, np.arange(32, dtype=np.float32) * 10)
    with pytest.raises(blkc.Error, match="ar2 takes 2 arguments per rank"):
        k.run_ranks([[xs[0]], [xs[1]]])


GRID_RANK = """
kernel k(Y: i32[8]) grid(world() + 2) {
    Y[program_id(0)] = num_programs(0) * 10 + rank();
}
"""


def _grid_rank_ref(rank, world):
    y = np.full(8, -1, np.int32)
    y[:world + 2] = (world + 2) * 10 + rank
    return y


@pytest.mark.parametrize("device", ["cpu", "cuda-emu", "hip-emu"])
def test_grid_rank_single_launch(device):
    """rank() and world() in grid(...) outside a world: rank 0 of 1."""
    try:
        c = blkc.Context(device)
    except blkc.Error as e:
        if e.status != 6:               # BLKC_ERR_UNSUPPORTED: no C++ here
            raise
        pytest.skip("%s: %s" % (device, e))
    y = np.full(8, -1, np.int32)
    c.compile(GRID_RANK).kernel("k")(y)
    np.testing.assert_array_equal(y, _grid_rank_ref(0, 1))


def test_grid_rank_run_ranks(ctx):
    """A kernel whose grid depends on the rank, on 3 local ranks."""
    k = ctx.compile(GRID_RANK).kernel("k")
    ys = [np.full(8, -1, np.int32) for _ in range(3)]
    k.run_ranks([[y] for y in ys])
    for r, y in enumerate(ys):
        np.testing.assert_array_equal(y, _grid_rank_ref(r, 3))
