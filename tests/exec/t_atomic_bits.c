/* t_atomic_bits.c — atomic_and / atomic_or / atomic_xor (LANGUAGE.md §7)
 * on i32 and u64 tensors from 7 program instances hitting the same 45
 * cells (a tail), with sem = / scope = options; the old values of one
 * instance that runs alone are checked too; and atomic_add on f16 and bf16
 * (quarters, so every order of the adds is exact). Reference in C. */
#include "harness.h"

static const char *src =
    "kernel bits(A: i32[N], O: i32[N], X: u64[N], V: i32[P, N], W: u64[P, N]) grid(P) {\n"
    "    let p = program_id(0);\n"
    "    let v = V[p, 0 +: 45];\n"
    "    atomic_and(A[0 +: 45], v | (1 << (p + 3)), sem = relaxed, scope = gpu);\n"
    "    atomic_or(O[0 +: 45], v & 0x0f0f0f0f, sem = acq_rel, scope = sys);\n"
    "    atomic_xor(X[0 +: 45], W[p, 0 +: 45], scope = cta);\n"
    "}\n"
    "kernel hadd(H: f16[N], B: bf16[N], V: f32[P, N]) grid(P) {\n"
    "    let v = V[program_id(0), 0 +: 45];\n"
    "    atomic_add(H[0 +: 45], v);\n"
    "    atomic_add(B[0 +: 45], v);\n"
    "}\n"
    "kernel olds(A: i32[N], R: i32[N]) {\n"
    "    R[0 +: 45] = atomic_xor(A[0 +: 45], 0x55, sem = release);\n"
    "}\n";

enum { P = 7, N = 45 };

int main(void)
{
    h_seed(11);
    blkc_module *m = h_compile(src, NULL);
    int32_t *a = h_array(H_I32, N), *o = h_array(H_I32, N), *v = h_array(H_I32, P * N);
    uint64_t *x = h_array(H_U64, N), *w = h_array(H_U64, P * N);
    int64_t ra[N], ro[N], rx[N];
    for (int i = 0; i < N; i++) {
        a[i] = -1;
        o[i] = (int32_t)h_rand_u64();
        x[i] = h_rand_u64();
        ra[i] = a[i];
        ro[i] = o[i];
        rx[i] = (int64_t)x[i];
    }
    for (int i = 0; i < P * N; i++) {
        v[i] = (int32_t)h_rand_u64();
        w[i] = h_rand_u64();
    }
    for (int p = 0; p < P; p++)
        for (int i = 0; i < N; i++) {
            ra[i] &= v[p * N + i] | (1 << (p + 3));
            ro[i] |= v[p * N + i] & 0x0f0f0f0f;
            rx[i] = (int64_t)((uint64_t)rx[i] ^ w[p * N + i]);
        }
    H_LAUNCH(h_kernel(m, "bits"), h_ten(h_t1(a, H_I32, N)), h_ten(h_t1(o, H_I32, N)),
             h_ten(h_t1(x, H_U64, N)), h_ten(h_t2(v, H_I32, P, N)), h_ten(h_t2(w, H_U64, P, N)));
    h_check_i("atomic_and i32 from 7 instances", a, H_I32, ra, N);
    h_check_i("atomic_or i32 from 7 instances", o, H_I32, ro, N);
    h_check_i("atomic_xor u64 from 7 instances", x, H_U64, rx, N);
    int32_t *r = h_array(H_I32, N);
    int64_t rr[N], ra2[N];
    for (int i = 0; i < N; i++) {
        rr[i] = a[i];
        ra2[i] = a[i] ^ 0x55;
    }
    H_LAUNCH(h_kernel(m, "olds"), h_ten(h_t1(a, H_I32, N)), h_ten(h_t1(r, H_I32, N)));
    h_check_i("atomic_xor returns the old values", r, H_I32, rr, N);
    h_check_i("atomic_xor wrote", a, H_I32, ra2, N);

    uint16_t *hf = h_array(H_F16, N), *hb = h_array(H_BF16, N);
    float *fv = h_array(H_F32, P * N);
    double rhf[N], rhb[N];
    for (int i = 0; i < N; i++) {
        float s0 = (float)h_randi(-8, 8) / 4;
        hf[i] = h_f32_to_f16(s0);
        hb[i] = h_f32_to_bf16(s0);
        rhf[i] = rhb[i] = s0;
    }
    for (int i = 0; i < P * N; i++) {
        fv[i] = (float)h_randi(-8, 8) / 4;
        rhf[i % N] += fv[i];
        rhb[i % N] += fv[i];
    }
    H_LAUNCH(h_kernel(m, "hadd"), h_ten(h_t1(hf, H_F16, N)), h_ten(h_t1(hb, H_BF16, N)),
             h_ten(h_t2(fv, H_F32, P, N)));
    h_check("atomic_add f16 from 7 instances", hf, H_F16, rhf, N, 0, 0);
    h_check("atomic_add bf16 from 7 instances", hb, H_BF16, rhb, N, 0, 0);
    return h_done();
}
