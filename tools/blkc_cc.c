/* blkc_cc.c — `blkc-cc`, blkc's compile worker: libblkc starts it (with
 * posix_spawn) to run the LLVM stage in a separate process when compile
 * isolation is on (BLKC_COMPILE_ISOLATE=1, docs/limits.md). The work is in
 * compiler/isolate_worker.c. */
#include "../compiler/isolate.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    /* _exit: the reply is written with write(2), nothing is buffered; skip
     * LLVM's static destructors and, in sanitizer builds, a leak check of
     * memory the worker leaves to the OS on purpose */
    _exit(iso_worker_main(argc, argv));
}
