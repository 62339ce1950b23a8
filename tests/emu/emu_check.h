/* emu_check.h — the check macro of the emulator's hand-written tests
 * (t_tma.cpp, t_wgrace.cpp, t_ws.cpp, t_wgf8.cpp): CHECK(ok, fmt, ...)
 * counts a failure in `fails` and prints the first 12. */
#ifndef BLK_EMU_CHECK_H
#define BLK_EMU_CHECK_H
#include <stdio.h>

static int fails;
#define CHECK(ok, ...)                                                                           \
    do {                                                                                         \
        if (!(ok) && fails++ < 12) {                                                             \
            printf("FAIL ");                                                                     \
            printf(__VA_ARGS__);                                                                 \
            printf("\n");                                                                        \
        }                                                                                        \
    } while (0)

#endif
