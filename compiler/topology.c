/* topology.c — machine descriptions for the task tier's cost model:
 * presets for common 8-GPU nodes, a PCIe box and this CPU machine, and a
 * key=value file format for others (`--topology=FILE`).
 *
 * Every number below says where it comes from. "spec" = the vendor's data
 * sheet; "assumed" = an engineering estimate, stated as such. The model
 * that uses them is in task_cost.c; docs/task.md explains it. */
#include "task.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Common to the Hopper presets (H100 SXM5 / H200 / H800 SXM5 share the
 * GH100 compute die):
 *   tflops_bf16 989   spec: H100 SXM5 dense BF16 tensor core 989.4 TFLOP/s
 *                     (H800 SXM5 has the same compute; only NVLink is cut)
 *   tflops_f32   67   spec: FP32 (non-tensor) 66.9 TFLOP/s
 *   gemm_eff   0.75   assumed: large cuBLAS/CUTLASS BF16 GEMMs reach
 *                     ~700-750 TFLOP/s on H100 SXM (about 75% of peak)
 *   sms         132   spec: H100 SXM5 has 132 SMs
 *   tile 128x256      assumed: the usual Hopper BF16 GEMM CTA tile
 *   link_eff   0.80   assumed: NCCL all_gather / reduce_scatter bus bandwidth
 *                     reaches ~80% of the NVLink per-direction rate on 8 GPUs
 *   link_lat_us   3   assumed: per ring step over NVLink/NVSwitch
 *   launch_us     5   assumed: kernel launch + tail of a large kernel
 *   chunk_us      2   assumed: signal set + poll per chunk in a fused kernel
 *   overlap_slowdown 0.05  assumed: GEMM tiles run ~5% slower while the
 *                     copy engines / comm warps share HBM bandwidth (comm at
 *                     ~160 GB/s is ~5% of 3.35 TB/s HBM) */
static const TkTopology presets[] = {
    {"h100-nvl8", 8, 450, 0.80, 3, 50, 10, 989, 67, 0.75, 3350, 132, 128, 256, 5, 2, 0.05,
     "H100 SXM5 x8, NVLink 4 via NVSwitch: 900 GB/s bidirectional per GPU = 450 GB/s per "
     "direction (spec); HBM3 3.35 TB/s (spec); inter-node 400 Gb/s NIC = 50 GB/s (spec, "
     "ConnectX-7); see topology.c for compute and efficiency assumptions", "", ""},
    {"h200-nvl8", 8, 450, 0.80, 3, 50, 10, 989, 67, 0.75, 4800, 132, 128, 256, 5, 2, 0.05,
     "H200 SXM x8, NVLink 4: 450 GB/s per direction (spec); HBM3e 4.8 TB/s (spec); compute as "
     "H100 SXM5 (spec)", "", ""},
    {"h800-nvl8", 8, 200, 0.80, 3, 50, 10, 989, 67, 0.75, 3350, 132, 128, 256, 5, 2, 0.05,
     "H800 SXM5 x8: NVLink cut to 400 GB/s bidirectional per GPU = 200 GB/s per direction "
     "(spec); compute and HBM as H100 SXM5 (spec); link_eff 0.80 -> ~160 GB/s bus bandwidth, "
     "the order NCCL reports on H800 nodes (assumed)", "", ""},
    {"mi300x", 8, 448, 0.70, 5, 50, 10, 1307, 163, 0.65, 5300, 304, 256, 256, 8, 3, 0.05,
     "MI300X x8, Infinity Fabric full mesh: 7 peer links x 64 GB/s per direction = 448 GB/s "
     "aggregate (spec); collectives reach ~70% of it (assumed); BF16 dense 1307 TFLOP/s, FP32 "
     "vector 163.4 TFLOP/s, HBM3 5.3 TB/s, 304 CUs (spec); GEMM efficiency 65% (assumed, "
     "hipBLASLt on large BF16 GEMMs)", "", ""},
    {"pcie", 8, 25, 0.80, 10, 12.5, 15, 312, 19.5, 0.70, 1935, 108, 128, 128, 5, 5, 0.02,
     "8 GPUs on PCIe Gen4 x16 without NVLink (A100 PCIe class): ~25 GB/s per direction "
     "(spec 32 GB/s raw, ~25 achievable), 10 us latency through the host bridge (assumed); "
     "BF16 312 TFLOP/s, FP32 19.5 TFLOP/s, HBM2e 1.935 TB/s, 108 SMs (spec)", "", ""},
    {"this-cpu", 64, 13.3, 1.0, 5, 13.3, 5, 0.095, 0.095, 1.0, 13.3, 2, 64, 128, 20, 5, 0.0,
     "this 2-core VM, ranks as threads: 'links' are memcpy, 13.3 GB/s (benchmarks/README.md, "
     "measured); compute is blkc's CPU GEMM, 95 GFLOP/s f32 on one core (benchmarks/README.md, "
     "measured; bf16 is computed in f32); 5 us per step is a thread barrier (assumed)", "", ""},
};

const char *tk_topology_presets(void)
{
    return "h100-nvl8, h200-nvl8, h800-nvl8, mi300x, pcie, this-cpu";
}

static const struct {
    const char *key;
    size_t off;
    bool is_int;
} keys[] = {
#define K(f, i) {#f, offsetof(TkTopology, f), i}
    K(ranks_per_node, true), K(link_gbs, false), K(link_eff, false), K(link_lat_us, false),
    K(net_gbs, false), K(net_lat_us, false), K(tflops_bf16, false), K(tflops_f32, false),
    K(gemm_eff, false), K(hbm_gbs, false), K(sms, true), K(tile_m, true), K(tile_n, true),
    K(launch_us, false), K(chunk_us, false), K(overlap_slowdown, false),
#undef K
};

/* key=value lines; '#' comments; `base = PRESET` starts from a preset. */
static int read_file(const char *path, TkTopology *t, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "unknown topology '%s': not a preset (%s) and not a readable "
                 "file (%s)", path, tk_topology_presets(), strerror(errno));
        return -1;
    }
    *t = presets[0];
    snprintf(t->name, sizeof t->name, "%.63s", path);
    snprintf(t->source, sizeof t->source, "file %.1000s", path);
    char line[512];
    int ln = 0;
    while (fgets(line, sizeof line, fp)) {
        ln++;
        char *h = strchr(line, '#');
        if (h)
            *h = 0;
        char *k = line;
        while (isspace((unsigned char)*k))
            k++;
        if (!*k)
            continue;
        char *eq = strchr(k, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected key = value", path, ln);
            fclose(fp);
            return -1;
        }
        char *ke = eq;
        while (ke > k && isspace((unsigned char)ke[-1]))
            ke--;
        *ke = 0;
        char *v = eq + 1;
        while (isspace((unsigned char)*v))
            v++;
        char *ve = v + strlen(v);
        while (ve > v && isspace((unsigned char)ve[-1]))
            *--ve = 0;
        if (strcmp(k, "base") == 0) {
            bool ok = false;
            for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
                if (strcmp(presets[i].name, v) == 0) {
                    char nm[64];
                    memcpy(nm, t->name, sizeof nm);
                    *t = presets[i];
                    memcpy(t->name, nm, sizeof nm);
                    snprintf(t->source, sizeof t->source, "file %.500s on preset %s", path, v);
                    ok = true;
                }
            if (!ok) {
                snprintf(err, errlen, "%s:%d: unknown base preset '%s' (%s)", path, ln, v,
                         tk_topology_presets());
                fclose(fp);
                return -1;
            }
            continue;
        }
        if (strcmp(k, "name") == 0) {
            snprintf(t->name, sizeof t->name, "%.63s", v);
            continue;
        }
        if (strcmp(k, "axis_net") == 0 || strcmp(k, "axis_link") == 0) {
            /* mesh axis names, comma separated (tk_axis_crosses_nodes) */
            char *f = k[5] == 'n' ? t->axis_net : t->axis_link;
            snprintf(f, sizeof t->axis_net, "%.127s", v);
            continue;
        }
        int found = -1;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            if (strcmp(keys[i].key, k) == 0)
                found = (int)i;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (found < 0 || !*v || *end || errno || x < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, ln,
                     found < 0 ? "unknown key (see docs/task.md)" : "expected a non-negative number");
            fclose(fp);
            return -1;
        }
        char *field = (char *)t + keys[found].off;
        if (keys[found].is_int)
            *(int *)field = (int)x;
        else
            *(double *)field = x;
    }
    fclose(fp);
    if (t->link_gbs <= 0 || t->hbm_gbs <= 0 || t->tflops_bf16 <= 0 || t->tflops_f32 <= 0 ||
        t->gemm_eff <= 0 || t->link_eff <= 0 || t->sms < 1 || t->tile_m < 1 || t->tile_n < 1) {
        snprintf(err, errlen, "%s: bandwidths, FLOP/s, efficiencies, sms and tiles must be positive",
                 path);
        return -1;
    }
    return 0;
}

int tk_topology_get(const char *name, TkTopology *t, char *err, size_t errlen)
{
    if (!name)
        name = "this-cpu";
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
        if (strcmp(presets[i].name, name) == 0) {
            *t = presets[i];
            return 0;
        }
    return read_file(name, t, err, errlen);
}
