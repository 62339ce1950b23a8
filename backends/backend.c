/* backend.c — the list of code generators (a backend is picked by name) and
 * the kernels' symbols. */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const BkBackend *const backends[] = {
    &bk_cpu_backend,
    &bk_cuda_backend,
    &bk_hip_backend,
};

const BkBackend *bk_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

char *bk_kernel_sym(const char *name, const char *suffix)
{
    size_t n = strlen(BK_KERNEL_PREFIX) + strlen(name) + strlen(suffix) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, BK_KERNEL_PREFIX "%s%s", name, suffix);
    return s;
}
