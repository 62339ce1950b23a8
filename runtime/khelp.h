/* khelp.h — helpers called by name from compiled CPU kernels (JIT and AOT):
 * small-float conversions and signal cells. See khelp.c. In libblkc they are
 * hidden (the JIT is given their addresses); libblkc_runtime exports them
 * for AOT output. */
#ifndef BLKC_KHELP_H
#define BLKC_KHELP_H

#include "../backends/backend.h"

#if defined(BLKC_RT_BUILDING)
#define KH_API __attribute__((visibility("default")))
#else
#define KH_API
/* a failed assert: records the first one in ctx (the launch reports it) */
KH_API void blkc_cpu_assert(BkLaunchCtx *ctx, const int32_t *pid, int32_t msg,
                            int32_t line);
/* print(...): one line per call sequence begin, text/val..., end, built
 * in a per-thread buffer and written to stderr with one write */
KH_API void blkc_cpu_print_begin(const int32_t *pid);
KH_API void blkc_cpu_print_text(const char *s);
KH_API void blkc_cpu_print_val(const void *p, int32_t dtype, int32_t rank,
                               const int64_t *shape);
KH_API void blkc_cpu_print_end(void);

#endif

KH_API uint16_t blkc_cpu_f64_to_f16(double x);
KH_API uint16_t blkc_cpu_f64_to_bf16(double x);
KH_API uint8_t blkc_cpu_f64_to_e4m3(double x);
KH_API uint8_t blkc_cpu_f64_to_e5m2(double x);
KH_API uint8_t blkc_cpu_f32_to_e4m3(float x);
KH_API uint8_t blkc_cpu_f32_to_e5m2(float x);
KH_API float blkc_cpu_e4m3_to_f32(uint8_t x);
KH_API float blkc_cpu_e5m2_to_f32(uint8_t x);
KH_API float blkc_cpu_f16_to_f32(uint16_t x);
KH_API uint16_t blkc_cpu_f32_to_f16(float x);
/* notify: op 0 = set, 1 = add (release); wait: cmp 0 = >=, 1 = ==
 * (acquire); returns 0 when satisfied, 1 after a timeout or abort */
KH_API void blkc_cpu_notify(uint64_t *cell, int32_t op, uint64_t v);
KH_API int32_t blkc_cpu_wait(BkLaunchCtx *ctx, uint64_t *cell, int32_t cmp,
                             uint64_t v, int64_t param, int64_t index);

/* a failed assert: records the first one in ctx (the launch reports it) */
KH_API void blkc_cpu_assert(BkLaunchCtx *ctx, const int32_t *pid, int32_t msg,
                            int32_t line);
/* print(...): one line per call sequence begin, text/val..., end, built
 * in a per-thread buffer and written to stderr with one write */
KH_API void blkc_cpu_print_begin(const int32_t *pid);
KH_API void blkc_cpu_print_text(const char *s);
KH_API void blkc_cpu_print_val(const void *p, int32_t dtype, int32_t rank,
                               const int64_t *shape);
KH_API void blkc_cpu_print_end(void);

#endif
