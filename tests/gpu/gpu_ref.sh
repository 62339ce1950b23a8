# gpu_ref.sh — sourced by gpu_exec.sh and gpu_ranks.sh (with BLKC and T
# set): where a case's CPU reference outputs come from.
#   default                 `blkc run` on the CPU, as always
#   BLKC_GPU_REFS=DIR       copied from DIR (the GPU build, preset gpu, has no
#                           CPU backend: scripts/gpu-prep.sh wrote DIR here)
#   BLKC_GPU_REFS_WRITE=DIR run on the CPU and also saved into DIR; no GPU
#                           part runs (scripts/gpu-prep.sh)
# A case's reference files are $T/NAME.cpu.* (one per output and rank).
REF_WRITE=${BLKC_GPU_REFS_WRITE:-}
REF_DIR=${BLKC_GPU_REFS:-}
[ -z "$REF_WRITE" ] || mkdir -p "$REF_WRITE"

# cpu_ref NAME RUN-ARGS...: NAME's reference outputs into $T
cpu_ref() {
  local name=$1 f; shift
  if [ -n "$REF_DIR" ]; then
    if ! ls "$REF_DIR/$name.cpu."* >/dev/null 2>&1; then
      echo "no reference $REF_DIR/$name.cpu.*.npy (run scripts/gpu-prep.sh and carry build-gpu-prep)"
      return 1
    fi
    cp "$REF_DIR/$name.cpu."* "$T/"
    return 0
  fi
  timeout 120 "$BLKC" run "$@" || return 1
  if [ -n "$REF_WRITE" ]; then
    for f in "$T/$name.cpu."*; do cp "$f" "$REF_WRITE/"; done
  fi
}
