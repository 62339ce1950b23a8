/* t_print.c — print(...) in a kernel (LANGUAGE.md §7): one line per program
 * instance on stderr, `pid (x, y, z):` then the pieces separated by spaces;
 * tiles in full, row-major, with their shape when rank >= 2; floats %g,
 * bools true/false. The stream (stderr on the CPU, stdout from a GPU
 * device's printf: backends/gpu/gpu_print.c) is redirected to a file and
 * compared line by line (instances may interleave, so each expected line
 * must appear once). */
#include "harness.h"

#include <unistd.h>

static const char *src =
    "kernel k<BLOCK = 4>(X: f32[N], Y: i32[N])\n"
    "    grid(cdiv(N, BLOCK), 1, 2) {\n"
    "    let p = program_id(0);\n"
    "    let x = X[p * BLOCK +: BLOCK];\n"
    "    if program_id(2) == 1 {\n"
    "        print(\"x\", x, \"p+1 =\", p + 1, reshape(x > 1.0, 2, 2), \"end\");\n"
    "    }\n"
    "    Y[p * BLOCK +: BLOCK] = arange(0, BLOCK) + p;\n"
    "}\n";

int main(void)
{
    enum { N = 8 };
    blkc_kernel *k = h_build(src, NULL);
    float x[N] = {0, 1, 2, 3.5f, -4, 5, 6, 7};
    int32_t y[N];
    const char *dev = getenv("BLKC_TEST_DEVICE");
    int sfd = dev && *dev && strcmp(dev, "cpu") ? 1 : 2;
    FILE *sf = sfd == 1 ? stdout : stderr;
    char path[] = "/tmp/blkc-print-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        h_die("mkstemp");
    fflush(sf);
    int saved = dup(sfd);
    dup2(fd, sfd);
    H_LAUNCH(k, h_ten(h_t1(x, H_F32, N)), h_ten(h_t1(y, H_I32, N)));
    fflush(sf);
    dup2(saved, sfd);
    close(saved);
    char got[4096] = "";
    ssize_t n = pread(fd, got, sizeof got - 1, 0);
    got[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    static const char *const want[] = {
        "pid (0, 0, 1): x [0, 1, 2, 3.5] p+1 = 1 [[false, false], [true, true]] (shape [2, 2]) end\n",
        "pid (1, 0, 1): x [-4, 5, 6, 7] p+1 = 2 [[false, true], [true, true]] (shape [2, 2]) end\n",
    };
    size_t total = 0;
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(got, want[i]);
        h_ok(at && !strstr(at + 1, want[i]), "line %d once in:\n%s", i, got);
        total += strlen(want[i]);
    }
    h_ok(strlen(got) == total, "nothing else printed (%zu bytes, want %zu)", strlen(got), total);
    int64_t ry[N];
    for (int i = 0; i < N; i++)
        ry[i] = i % 4 + i / 4;
    h_check_i("the stores after print", y, H_I32, ry, N);
    return h_done();
}
