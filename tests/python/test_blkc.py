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
