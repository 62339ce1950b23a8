/* jit.c — the CPU backend's driver: one-time target setup, the new pass
 * manager (default<On>) for the host CPU, ORC LLJIT compilation with a
 * fresh thread-safe context per module, and the --emit stages (llvm,
 * llvm-unopt, asm, obj). */
#include "cpu.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct BkCpuModule {
    LLVMOrcLLJITRef jit;     /* owns the compiled code */
    int n;                   /* functions */
    char **names;            /* kernel names */
    BkKernelFn *fns;         /* entry points */
    BkRangeFn *ranges;       /* NAME__range entry points */
    char jit_error[CPU_JIT_ERROR_LEN]; /* ORC's first error (cpu_lljit) */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char *host_cpu, *host_features;
static bool host_intel; /* the CPU's vendor is Intel (CPUID) */
static int host_vecw = 16;
static bool init_ok;

static const char *const switch_names[] = {
#define X(name, doc) "BLKC_CPU_" #name,
    CPU_SWITCHES(X)
#undef X
};

uint64_t cpu_switches(void)
{
    uint64_t mask = 0;
    for (int i = 0; i < CPU_SW_COUNT; i++) {
        const char *v = getenv(switch_names[i]);
        if (v && *v && strcmp(v, "0") != 0)
            mask |= (uint64_t)1 << i;
    }
    return mask;
}

static void say(const char *s)
{
    if (write(2, s, strlen(s)) < 0)
        return; /* nothing better to do: the process is ending */
}

/* LLVM's report_fatal_error ends the process after this returns; we can
 * only say who and what. (Out-of-memory inside LLVM does not come here: it
 * prints "LLVM ERROR: out of memory" or throws std::bad_alloc and aborts.)
 * write(2) only: the heap may be the problem. */
static void fatal_handler(const char *reason)
{
    say("blkc: fatal LLVM error while compiling in this process: ");
    say(reason ? reason : "?");
    say("\nblkc: LLVM ends the process now; in-process compilation cannot "
        "survive this. Compile in a worker process to survive it: "
        "BLKC_COMPILE_ISOLATE=1 or blkc_compile_options.isolate = 1 "
        "(docs/limits.md)\n");
}

static void init_targets(void)
{
    LLVMInstallFatalErrorHandler(fatal_handler);
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ||
        LLVMInitializeNativeAsmParser())
        return;
    host_cpu = LLVMGetHostCPUName();
    host_features = LLVMGetHostCPUFeatures();
    if (host_features && strstr(host_features, "+avx512f"))
        host_vecw = 64;
    else if (host_features && strstr(host_features, "+avx"))
        host_vecw = 32;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    host_intel = __builtin_cpu_is("intel");
#endif
    init_ok = host_cpu && host_features;
}

static int llvm_error(LLVMErrorRef e, const char *what, char *err, size_t errlen)
{
    char *msg = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "cpu backend: %s: %s", what, msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* LLVM cannot fail an allocation: it throws std::bad_alloc or prints "LLVM
 * ERROR: out of memory", and the process aborts. Compiling a small module
 * takes LLVM about 4 MB (vadd.blk under `ulimit -v`, faults_alloc_sweep), so
 * each compile first maps and unmaps twice that as a probe and fails
 * cleanly when the address space cannot hold it. A probe, not a guarantee:
 * a large module can need more, and other threads can take the memory
 * meanwhile (docs/limits.md). */
#define COMPILE_HEADROOM (8u << 20)

static bool have_headroom(void)
{
    void *p = mmap(NULL, COMPILE_HEADROOM, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    munmap(p, COMPILE_HEADROOM);
    return true;
}

/* "+name" is one of the comma-separated features */
static bool has_feature(const char *feat, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = feat; p && (p = strstr(p, name)); p += n)
        if (p > feat && p[-1] == '+' && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

static LLVMTargetMachineRef make_tm(const BkOptions *o, CpuIsa *isa,
                                    char *err, size_t errlen)
{
    pthread_once(&init_once, init_targets);
    if (!have_headroom()) {
        snprintf(err, errlen, "cpu backend: out of memory: compiling needs "
                 "about %u MB of free address space", COMPILE_HEADROOM >> 20);
        return NULL;
    }
    if (!init_ok) {
        snprintf(err, errlen, "cpu backend: cannot initialize the native target");
        return NULL;
    }
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "cpu backend: %s", msg ? msg : "no target");
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    const char *cpu = host_cpu, *feat = host_features;
    int *vecw = &isa->vecw;
    *vecw = host_vecw;
    char *nofeat = NULL;
    if (o && o->arch && o->arch[0]) {
        cpu = o->arch;
        feat = "";
        *vecw = 16;
    } else if (cpu_switch(CPU_SW_NOAVX512) && strstr(feat, "+avx512")) {
        /* every +avx512* feature turned off: code valgrind can run */
        nofeat = strdup(feat);
        for (char *p = nofeat; p && (p = strstr(p, "+avx512")); p++)
            *p = '-';
        feat = nofeat ? nofeat : feat;
        if (*vecw > 32)
            *vecw = 32;
    }
    /* the matvec's prefetch of its next row block: on AMD EPYC the decode
     * step's short rows gave the hardware prefetchers too little to train
     * on (1.02x -> 1.23-1.26x of the C loop, benchmarks/README.md round
     * 15); on an Intel Xeon the same prefetches cost 7-9% in and out of
     * cache (round 22). Off on Intel hosts (a named arch: on, as before) */
    isa->mvpf = !cpu_switch(CPU_SW_NOMVPF) &&
                (cpu_switch(CPU_SW_MVPF) || (o && o->arch && o->arch[0]) || !host_intel);
#if defined(__x86_64__)
    isa->scalef = has_feature(feat, "avx512f") && has_feature(feat, "avx512vl");
#else
    isa->scalef = false;
#endif
    int ol = o ? o->opt_level : 3;
    LLVMCodeGenOptLevel cl = ol <= 0 ? LLVMCodeGenLevelNone
                           : ol == 1 ? LLVMCodeGenLevelLess
                           : ol == 2 ? LLVMCodeGenLevelDefault
                                     : LLVMCodeGenLevelAggressive;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
        target, triple, cpu, feat, cl, LLVMRelocPIC, LLVMCodeModelJITDefault);
    free(nofeat);
    LLVMDisposeMessage(triple);
    if (!tm)
        snprintf(err, errlen, "cpu backend: cannot create a target machine");
    return tm;
}

/* Lower m into ctx and (unless unopt) optimize it for tm. */
static LLVMModuleRef build(const IrModule *m, const BkOptions *o,
                           LLVMTargetMachineRef tm, const CpuIsa *isa, LLVMContextRef ctx,
                           bool unopt, char *err, size_t errlen)
{
    LLVMModuleRef mod;
    if (cpu_lower_module(m, ctx, isa, &mod, err, errlen))
        return NULL;
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, dl);
    LLVMDisposeTargetData(dl);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        IR_BUG(err, errlen, "invalid LLVM IR: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    if (unopt)
        return mod;
    int ol = o ? o->opt_level : 3;
    char pipe[32];
    snprintf(pipe, sizeof pipe, "default<O%d>", ol < 0 ? 0 : ol > 3 ? 3 : ol);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    LLVMErrorRef e = LLVMRunPasses(mod, pipe, tm, po);
    /* vmath.c's helpers with vector variants: inlined now that the
     * vectorizer has chosen between them */
    if (!e && cpu_vm_finish(mod))
        e = LLVMRunPasses(mod, "always-inline,globaldce", tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        llvm_error(e, "optimization", err, errlen);
        LLVMDisposeModule(mod);
        return NULL;
    }
    return mod;
}

static int define_helpers(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd,
                          char *err, size_t errlen)
{
#if LLVM_VERSION_MAJOR >= 15 /* renamed in LLVM 15 */
    LLVMOrcCSymbolMapPair pairs[32];
#else
    LLVMJITCSymbolMapPair pairs[32];
#endif
    int n = 0;
    for (int i = 0; cpu_helpers[i].name && n < 32; i++, n++) {
        pairs[n].Name = LLVMOrcLLJITMangleAndIntern(jit, cpu_helpers[i].name);
        pairs[n].Sym.Address = (LLVMOrcJITTargetAddress)(uintptr_t)cpu_helpers[i].addr;
        pairs[n].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[n].Sym.Flags.TargetFlags = 0;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
    LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
    if (e) {
        LLVMOrcDisposeMaterializationUnit(mu);
        return llvm_error(e, "defining helpers", err, errlen);
    }
    return 0;
}

/* --------------------------------------------------- code memory guard */

/* RuntimeDyld's section memory manager ends the process (report_fatal_error
 * "Unable to allocate section memory!") when its mmap for the compiled code
 * fails, and LLVM 15's C API offers no other memory manager. Every object
 * passes the JIT's object transform first: there we add up what the manager
 * will map (each allocated section on its own pages, plus stub and GOT room
 * per relocation) and map twice that, plus 256 KiB for the linker's heap, as
 * a probe. If the address space cannot hold it the object is refused with an
 * error before the manager runs. (A probe, not a reservation: another thread
 * mapping memory between the probe and the link can still lose the race.) */
static size_t object_need(const char *b, size_t n)
{
    const size_t page = 4096;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(const void *)b;
    if (n < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > n || eh->e_shnum > (n - eh->e_shoff) / sizeof(Elf64_Shdr))
        return 2 * n + page; /* not an ELF64 object we can read: its size */
    size_t need = 0;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, b + eh->e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_flags & SHF_ALLOC)
            need += (sh.sh_size + sh.sh_addralign + page) / page * page;
        if ((sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL) && sh.sh_entsize)
            need += sh.sh_size / sh.sh_entsize * 24; /* a stub and a GOT slot */
    }
    return need + page;
}

static LLVMErrorRef probe_code_memory(void *ctx, LLVMMemoryBufferRef *obj)
{
    (void)ctx;
    size_t need = object_need(LLVMGetBufferStart(*obj), LLVMGetBufferSize(*obj));
    size_t probe = 2 * need + (256u << 10);
    void *p = mmap(NULL, probe, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        char msg[128];
        snprintf(msg, sizeof msg, "out of memory mapping the compiled code (%zu bytes)",
                 need);
        return LLVMCreateStringError(msg);
    }
    munmap(p, probe);
    return NULL;
}

/* ORC reports a failed materialization here and the lookup fails with a
 * generic "Failed to materialize symbols"; keep the first cause for the
 * lookup's error message (default: printed to stderr as "JIT session
 * error"). */
static void report_jit_error(void *ctx, LLVMErrorRef e)
{
    char *first = ctx;
    char *msg = LLVMGetErrorMessage(e);
    if (!first[0])
        snprintf(first, CPU_JIT_ERROR_LEN, "%s", msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
}

/* A new LLJIT for the host (tm: its target machine, taken over; NULL: the
 * default one) with blkc's helpers and the process's symbols defined, the
 * code memory probe on every object, and ORC's errors kept in first_error
 * (CPU_JIT_ERROR_LEN bytes, zeroed; it must outlive the JIT). */
int cpu_lljit(LLVMTargetMachineRef tm, char *first_error, LLVMOrcLLJITRef *out,
              char *err, size_t errlen)
{
    *out = NULL;
    LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
    if (tm)
        LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
            jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
    LLVMOrcLLJITRef jit;
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, jb);
    if (e)
        return llvm_error(e, "creating the JIT", err, errlen);
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit),
                                            report_jit_error, first_error);
    LLVMOrcObjectTransformLayerSetTransform(LLVMOrcLLJITGetObjTransformLayer(jit),
                                            probe_code_memory, NULL);
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    if (define_helpers(jit, jd, err, errlen)) {
        LLVMOrcDisposeLLJIT(jit);
        return -1;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (e) {
        LLVMOrcDisposeLLJIT(jit);
        return llvm_error(e, "process symbols", err, errlen);
    }
    LLVMOrcJITDylibAddGenerator(jd, gen);
    *out = jit;
    return 0;
}

/* "WHAT: why" for a failed lookup: ORC's first reported cause (not its
 * "Failed to materialize symbols"), else e's message; e is consumed */
int cpu_lljit_error(LLVMErrorRef e, const char *first_error, const char *what,
                    char *err, size_t errlen)
{
    char *msg = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "%s: %s", what,
             first_error[0] ? first_error : msg ? msg : "?");
    LLVMDisposeErrorMessage(msg);
    return -1;
}

int bk_cpu_jit(const IrModule *m, const BkOptions *o, BkCpuModule **out,
               char *err, size_t errlen)
{
    *out = NULL;
    CpuIsa isa;
    LLVMTargetMachineRef tm = make_tm(o, &isa, err, errlen);
    if (!tm)
        return -1;
    BkCpuModule *cm = calloc(1, sizeof *cm);
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
    LLVMModuleRef mod = NULL;
    if (!cm) {
        snprintf(err, errlen, "cpu backend: out of memory");
        goto fail;
    }
    mod = build(m, o, tm, &isa, ctx, false, err, errlen);
    if (!mod)
        goto fail;
    int rc = cpu_lljit(tm, cm->jit_error, &cm->jit, err, errlen);
    tm = NULL; /* the JIT took it over, or disposed of it */
    if (rc)
        goto fail;
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(cm->jit);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
    mod = NULL;
    LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(cm->jit, jd, tsm);
    if (e) {
        LLVMOrcDisposeThreadSafeModule(tsm);
        llvm_error(e, "adding the module", err, errlen);
        goto fail;
    }
    cm->n = m->nfuncs;
    cm->names = calloc((size_t)cm->n + 1, sizeof *cm->names);
    cm->fns = calloc((size_t)cm->n + 1, sizeof *cm->fns);
    cm->ranges = calloc((size_t)cm->n + 1, sizeof *cm->ranges);
    if (!cm->names || !cm->fns || !cm->ranges) {
        snprintf(err, errlen, "cpu backend: out of memory");
        goto fail;
    }
    for (int i = 0; i < cm->n; i++) {
        const char *name = m->funcs[i]->name;
        if (m->funcs[i]->is_device) { /* no code: the runtime interprets it */
            cm->names[i] = strdup("");
            if (!cm->names[i]) {
                snprintf(err, errlen, "cpu backend: out of memory");
                goto fail;
            }
            continue;
        }
        LLVMOrcExecutorAddress a1 = 0, a2 = 0;
        char *sym = bk_kernel_sym(name, ""), *rn = bk_kernel_sym(name, "__range");
        cm->names[i] = strdup(name);
        if (!sym || !rn || !cm->names[i]) {
            free(sym);
            free(rn);
            snprintf(err, errlen, "cpu backend: out of memory");
            goto fail;
        }
        e = LLVMOrcLLJITLookup(cm->jit, &a1, sym);
        if (!e)
            e = LLVMOrcLLJITLookup(cm->jit, &a2, rn);
        free(sym);
        free(rn);
        if (e) {
            cpu_lljit_error(e, cm->jit_error, "cpu backend: compiling", err, errlen);
            goto fail;
        }
        cm->fns[i] = (BkKernelFn)(uintptr_t)a1;
        cm->ranges[i] = (BkRangeFn)(uintptr_t)a2;
    }
    LLVMOrcDisposeThreadSafeContext(tsc);
    *out = cm;
    return 0;
fail:
    if (mod)
        LLVMDisposeModule(mod);
    if (tm)
        LLVMDisposeTargetMachine(tm);
    LLVMOrcDisposeThreadSafeContext(tsc);
    bk_cpu_free(cm);
    return -1;
}

static int find(BkCpuModule *cm, const char *name)
{
    for (int i = 0; cm && i < cm->n; i++)
        if (cm->names[i] && strcmp(cm->names[i], name) == 0)
            return i;
    return -1;
}

BkKernelFn bk_cpu_kernel(BkCpuModule *cm, const char *name)
{
    int i = find(cm, name);
    return i < 0 ? NULL : cm->fns[i];
}

BkRangeFn bk_cpu_kernel_range(BkCpuModule *cm, const char *name)
{
    int i = find(cm, name);
    return i < 0 ? NULL : cm->ranges[i];
}

void bk_cpu_free(BkCpuModule *cm)
{
    if (!cm)
        return;
    if (cm->jit)
        LLVMOrcDisposeLLJIT(cm->jit);
    for (int i = 0; cm->names && i < cm->n; i++)
        free(cm->names[i]);
    free(cm->names);
    free(cm->fns);
    free(cm->ranges);
    free(cm);
}

/* ------------------------------------------------------------ emit */

static const char *const cpu_stages[] = {"llvm", "llvm-unopt", "asm", "obj", NULL};

static bool cpu_stage_is_text(const char *stage)
{
    return strcmp(stage, "obj") != 0;
}

static int cpu_emit(const IrModule *m, const BkOptions *o, const char *stage,
                    DslBuf *out, char *err, size_t errlen)
{
    bool known = false;
    for (int i = 0; cpu_stages[i]; i++)
        known |= strcmp(stage, cpu_stages[i]) == 0;
    if (!known) {
        snprintf(err, errlen, "cpu backend: unknown stage '%s'", stage);
        return -1;
    }
    CpuIsa isa;
    LLVMTargetMachineRef tm = make_tm(o, &isa, err, errlen);
    if (!tm)
        return -1;
    LLVMContextRef ctx = LLVMContextCreate();
    int rc = -1;
    LLVMModuleRef mod = build(m, o, tm, &isa, ctx,
                              strcmp(stage, "llvm-unopt") == 0, err, errlen);
    if (!mod)
        goto done;
    if (strncmp(stage, "llvm", 4) == 0) {
        char *s = LLVMPrintModuleToString(mod);
        dsl_buf_put(out, s, strlen(s));
        LLVMDisposeMessage(s);
        rc = 0;
    } else {
        char *msg = NULL;
        LLVMMemoryBufferRef mb;
        if (LLVMTargetMachineEmitToMemoryBuffer(
                tm, mod, strcmp(stage, "asm") == 0 ? LLVMAssemblyFile : LLVMObjectFile,
                &msg, &mb)) {
            snprintf(err, errlen, "cpu backend: %s", msg ? msg : "emit failed");
            LLVMDisposeMessage(msg);
        } else {
            dsl_buf_put(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
            LLVMDisposeMemoryBuffer(mb);
            rc = 0;
        }
    }
    if (rc == 0 && out->oom) {
        snprintf(err, errlen, "cpu backend: out of memory");
        rc = -1;
    }
    LLVMDisposeModule(mod);
done:
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    return rc;
}

const BkBackend bk_cpu_backend = {
    .name = "cpu",
    .stages = cpu_stages,
    .default_stage = "obj",
    .stage_is_text = cpu_stage_is_text,
    .emit = cpu_emit,
};
