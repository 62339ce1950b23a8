/* t_int_ops.c — integer division truncates, % is C's remainder (negative
 * operands), >> is arithmetic on signed and logical on unsigned, << ~ & | ^
 * and unary minus. */
#include "harness.h"

static const char *src =
    "kernel iops<BLOCK = 64>(A: i32[N], B: i32[N], U: u32[N], S: i32[N],\n"
    "                        O: i32[8, N], OU: u32[3, N]) grid(cdiv(N, BLOCK)) {\n"
    "    let o = program_id(0) * BLOCK;\n"
    "    let a = A[o +: BLOCK];\n"
    "    let b = B[o +: BLOCK];\n"
    "    let u = U[o +: BLOCK];\n"
    "    let s = S[o +: BLOCK];\n"
    "    O[0, o +: BLOCK] = a / b;\n"
    "    O[1, o +: BLOCK] = a % b;\n"
    "    O[2, o +: BLOCK] = a >> s;\n"
    "    O[3, o +: BLOCK] = a << s;\n"
    "    O[4, o +: BLOCK] = ~a;\n"
    "    O[5, o +: BLOCK] = -a;\n"
    "    O[6, o +: BLOCK] = (a & b) | (a ^ s);\n"
    "    O[7, o +: BLOCK] = a / 4 + a % 4;\n"
    "    OU[0, o +: BLOCK] = u >> s;\n"
    "    OU[1, o +: BLOCK] = u / 7;\n"
    "    OU[2, o +: BLOCK] = u % 7;\n"
    "}\n";

int main(void)
{
    enum { N = 700 };
    h_seed(4);
    blkc_kernel *k = h_build(src, NULL);
    int32_t *a = h_array(H_I32, N), *b = h_array(H_I32, N), *s = h_array(H_I32, N);
    uint32_t *u = h_array(H_U32, N);
    int32_t *o = h_array(H_I32, 8 * N);
    uint32_t *ou = h_array(H_U32, 3 * N);
    int64_t *r = h_alloc(8 * 8 * N), *ru = h_alloc(8 * 3 * N);
    for (int i = 0; i < N; i++) {
        a[i] = (int32_t)h_randi(-100000000, 100000000);
        b[i] = (int32_t)h_randi(-1000, 1000);
        if (b[i] == 0)
            b[i] = -7;
        s[i] = (int32_t)h_randi(0, 31);
        u[i] = (uint32_t)h_randi(0, 4294967295LL);
        r[0 * N + i] = a[i] / b[i];
        r[1 * N + i] = a[i] % b[i];
        r[2 * N + i] = a[i] >> s[i];
        r[3 * N + i] = (int32_t)((uint32_t)a[i] << s[i]);
        r[4 * N + i] = ~a[i];
        r[5 * N + i] = -a[i];
        r[6 * N + i] = (a[i] & b[i]) | (a[i] ^ s[i]);
        r[7 * N + i] = a[i] / 4 + a[i] % 4;
        ru[0 * N + i] = u[i] >> s[i];
        ru[1 * N + i] = u[i] / 7;
        ru[2 * N + i] = u[i] % 7;
    }
    H_LAUNCH(k, h_ten(h_t1(a, H_I32, N)), h_ten(h_t1(b, H_I32, N)),
             h_ten(h_t1(u, H_U32, N)), h_ten(h_t1(s, H_I32, N)),
             h_ten(h_t2(o, H_I32, 8, N)), h_ten(h_t2(ou, H_U32, 3, N)));
    static const char *names[8] = {"i32 /", "i32 %", "i32 >> (arithmetic)", "i32 <<",
                                   "~", "unary -", "& | ^", "a / 4 + a % 4"};
    for (int j = 0; j < 8; j++)
        h_check_i(names[j], o + j * N, H_I32, r + j * N, N);
    h_check_i("u32 >> (logical)", ou, H_U32, ru, N);
    h_check_i("u32 / 7", ou + N, H_U32, ru + N, N);
    h_check_i("u32 % 7", ou + 2 * N, H_U32, ru + 2 * N, N);
    return h_done();
}
