/* fatal_handler.c — in-process compilation cannot survive a fatal LLVM
 * error, but the message must name blkc and point at compile isolation
 * (backends/cpu/jit.c installs LLVMInstallFatalErrorHandler). A child
 * process sets up the CPU backend, then makes LLVM's X86 code generator
 * call report_fatal_error (llvm.read_register of a register that does not
 * exist); the parent checks the child's stderr and that it did end. */
#include "compiler/ir.h"
#include "backends/backend.h"

#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *bad_ir =
    "declare i64 @llvm.read_register.i64(metadata)\n"
    "define i64 @f() {\n"
    "  %r = call i64 @llvm.read_register.i64(metadata !0)\n"
    "  ret i64 %r\n"
    "}\n"
    "!0 = !{!\"blkc-no-such-register\"}\n";

static int child(void)
{
    /* the backend's one-time setup installs blkc's handler */
    IrModule *m = ir_module_new();
    DslBuf b;
    memset(&b, 0, sizeof b);
    char err[256];
    if (!m || bk_cpu_backend.emit(m, NULL, "llvm-unopt", &b, err, sizeof err))
        return 10;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(
        bad_ir, strlen(bad_ir), "bad");
    LLVMModuleRef mod;
    char *msg = NULL;
    if (LLVMParseIRInContext(ctx, mb, &mod, &msg))
        return fprintf(stderr, "parse: %s\n", msg), 11;
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef t;
    if (LLVMGetTargetFromTriple(triple, &t, &msg))
        return 12;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
        t, triple, "", "", LLVMCodeGenLevelDefault, LLVMRelocPIC,
        LLVMCodeModelDefault);
    LLVMSetTarget(mod, triple);
    LLVMMemoryBufferRef out;
    LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &out);
    return 13; /* not reached: LLVM ends the process */
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' child 2>&1", argv[0]);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 1;
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    printf("child: %s, output:\n%s\n",
           WIFSIGNALED(st) ? "killed by a signal" : "ended", out);
    int bad = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) >= 10 && WEXITSTATUS(st) <= 13) {
        printf("FAIL: the child did not reach LLVM's fatal error (exit %d)\n",
               WEXITSTATUS(st));
        bad = 1;
    }
    const char *want[] = {
        "blkc: fatal LLVM error while compiling in this process: Invalid "
        "register name",
        "in-process compilation cannot survive this",
        "BLKC_COMPILE_ISOLATE=1",
    };
    for (int i = 0; i < 3; i++)
        if (!strstr(out, want[i])) {
            printf("FAIL: missing \"%s\"\n", want[i]);
            bad = 1;
        }
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad;
}
