/* t_logical.c — comparisons give bool tiles; && || ! elementwise on bool
 * tiles; bool tiles loaded from and stored to bool tensors; bool & | ^. */
#include "harness.h"

static const char *src =
    "kernel l<BLOCK = 64>(X: f32[N], B: bool[N], O: bool[6, N], C: i32[N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let x = X[o +: BLOCK];\n"
    "    let b = B[o +: BLOCK];\n"
    "    let pos = x > 0.0;\n"
    "    O[0, o +: BLOCK] = pos && b;\n"
    "    O[1, o +: BLOCK] = pos || !b;\n"
    "    O[2, o +: BLOCK] = !(x <= 0.5) && (x != 0.75);\n"
    "    O[3, o +: BLOCK] = x == x;\n"
    "    O[4, o +: BLOCK] = (pos ^ b) | (b & pos);\n"
    "    O[5, o +: BLOCK] = x >= -0.5 && x < 0.5 || b;\n"
    "    C[o +: BLOCK] = where(pos, 1, 0) + where(b, 10, 0);\n"
    "}\n";

int main(void)
{
    enum { N = 300 };
    h_seed(35);
    blkc_kernel *k = h_build(src, NULL);
    float x[N];
    uint8_t b[N], o[6 * N];
    int32_t c[N];
    for (int i = 0; i < N; i++) {
        x[i] = i % 17 == 0 ? 0.75f : i % 19 == 0 ? NAN : (float)h_randu(-1, 1);
        b[i] = (uint8_t)h_randi(0, 1);
    }
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(b, H_BOOL, N)),
             h_ten(h_t2(o, H_BOOL, 6, N)), h_ten(h_t1(c, H_I32, N)));
    int64_t r[6 * N], rc[N];
    for (int i = 0; i < N; i++) {
        int pos = x[i] > 0, bb = b[i];
        r[i] = pos && bb;
        r[N + i] = pos || !bb;
        r[2 * N + i] = !(x[i] <= 0.5f) && x[i] != 0.75f;
        r[3 * N + i] = x[i] == x[i];
        r[4 * N + i] = (pos ^ bb) | (bb & pos);
        r[5 * N + i] = (x[i] >= -0.5f && x[i] < 0.5f) || bb;
        rc[i] = pos + 10 * bb;
    }
    static const char *names[6] = {"pos && b", "pos || !b", "!(x <= 0.5) && x != 0.75 (NaN)",
                                   "x == x (NaN false)", "bool ^ | &", "precedence && over ||"};
    for (int j = 0; j < 6; j++)
        h_check_i(names[j], o + j * N, H_BOOL, r + j * N, N);
    h_check_i("where on bool tiles", c, H_I32, rc, N);
    return h_done();
}
