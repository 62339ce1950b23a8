/* t_atomic_cas_lock.c — a spin lock built from atomic_cas: every program
 * takes the lock ITERS times and does a plain (non-atomic) read-modify-
 * write of two counters inside it; with the thread pool running programs
 * concurrently, any lost update shows. */
#include "harness.h"

static const char *src =
    "kernel locked<ITERS = 50>(L: i32[1], C: i64[2], g: i32) grid(g) {\n"
    "    let p = program_id(0);\n"
    "    for it in 0 .. ITERS {\n"
    "        while atomic_cas(L[0], 0, 1) != 0 { }\n"
    "        C[0] = C[0] + 1;\n"
    "        C[1] = C[1] + (p as i64);\n"
    "        atomic_xchg(L[0], 0);\n"
    "    }\n"
    "}\n";

int main(void)
{
    blkc_kernel *k = h_build(src, NULL);
    for (int g = 1; g <= 64; g *= 4) {
        int32_t lock = 0;
        int64_t c[2] = {0, 0};
        H_LAUNCH(k, h_ten(h_t1(&lock, H_I32, 1)), h_ten(h_t1(c, H_I64, 2)), h_int(g));
        int64_t ref[2] = {50LL * g, 50LL * g * (g - 1) / 2};
        char what[64];
        snprintf(what, sizeof what, "CAS spin lock, %d programs x 50", g);
        h_check_i(what, c, H_I64, ref, 2);
        h_ok(lock == 0, "lock released (%d)", lock);
    }
    return h_done();
}
