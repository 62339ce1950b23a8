#!/bin/bash
# task_test.sh — tests of the task tier through the blkc CLI.
#   task_test.sh BLKC TASK_REF DIR dist FILE SIZES...   run FILE on 1, 2, 4
#       and 8 ranks (placement by cost and forced overlap) and compare each
#       result with the 1-rank one (1e-4); mlp, rmsnorm_sp, two_results,
#       call_kernel and call_device also against C; moe_ep also with k = 1
#       and with all router logits tied (every token to experts 0 and 1)
#   task_test.sh BLKC TASK_REF DIR mesh FILE SIZES...   a task on a mesh
#       mesh(dp = DP, tp = TP): DP=1 TP=1 on 1 rank, then 1x2, 2x1, 2x2, 4x2,
#       2x4 local ranks (mlp_mesh3: meshes of 3 axes), placement by cost and
#       forced overlap (BLKC_TASK_OVERLAP=always), each compared with the
#       1-rank result (1e-4); mlp_mesh also against C, attention_mesh and
#       mlp_sp_mesh also against their 1-D files; moe_mesh, moe_group:
#       mesh(dp = DP, ep = EP), 1-rank result against moe_ep.blk's bit for bit
#   task_test.sh BLKC TASK_REF DIR mega dist|mesh FILE SIZES...   FILE with and
#       without --megakernel (1-D: 1, 2, 4 ranks; mesh: 1x1, 1x2, 2x1, 2x2),
#       placement by cost and forced overlap: the same bits (the megakernel
#       runs 3 times: its cached tile-task table reused)
#   task_test.sh BLKC TASK_REF DIR golden      plan and --emit=task outputs vs
#                                              tests/task/golden
#   task_test.sh BLKC TASK_REF DIR errors      bad shardings: exit 1 + message
# BLKC_TASK_GOLDEN_UPDATE=1 rewrites the golden files.
set -u
BLKC=$1 REF=$2 DIR=$3 MODE=$4
shift 4
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# the JIT cache of the run (make test: one for the suite), else its own
export BLKC_CACHE_DIR="${BLKC_CACHE_DIR:-$TMP/cache}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if [ "$MODE" = dist ]; then
    f=$1; shift
    name=$(basename "$f" .blk)
    # the results (CLI.md: `result`, or `result0`, `result1`, ... for several)
    case $name in
    two_results) outs="result0 result1";;
    *) outs="result";;
    esac
    outargs() { for o in $outs; do printf -- '--out\n%s=%s\n' "$o" "$TMP/$o.r$1.npy"; done; }
    mapfile -t oa < <(outargs 1)
    "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" "${oa[@]}" \
        || { echo "FAIL: $name on 1 rank"; exit 1; }
    [ "$outs" = result ] && cp "$TMP/result.r1.npy" "$TMP/r1.npy"
    case $name in
    mlp)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" \
            --out "w1=$TMP/w1.npy" --out "w2=$TMP/w2.npy" >/dev/null || bad "mlp inputs"
        "$REF" mlp "$TMP/x.npy" "$TMP/w1.npy" "$TMP/w2.npy" "$TMP/r1.npy" 1e-4 || bad "mlp vs C";;
    rmsnorm_sp)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" \
            --out "w=$TMP/w.npy" >/dev/null || bad "rmsnorm inputs"
        eps=$(printf '%s\n' "$@" | sed -n 's/^eps=//p')
        "$REF" rmsnorm "$TMP/x.npy" "$TMP/w.npy" "$eps" "$TMP/r1.npy" 1e-4 || bad "rmsnorm vs C";;
    call_kernel)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" \
            --out "w1=$TMP/w1.npy" --out "w2=$TMP/w2.npy" >/dev/null || bad "call_kernel inputs"
        "$REF" mlp "$TMP/x.npy" "$TMP/w1.npy" "$TMP/w2.npy" "$TMP/r1.npy" 1e-4 sqrelu \
            || bad "call_kernel vs C";;
    call_device)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" \
            --out "w=$TMP/w.npy" --out "g=$TMP/g.npy" >/dev/null || bad "call_device inputs"
        "$REF" gated "$TMP/x.npy" "$TMP/w.npy" "$TMP/g.npy" "$TMP/r1.npy" 1e-4 \
            || bad "call_device vs C";;
    fuse_chain) # fused elementwise kernels give the bits of one kernel per op
        BLKC_TASK_FUSE=0 "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" \
            --out "result=$TMP/unfused.npy" >/dev/null || bad "fuse_chain unfused"
        echo -n "fuse_chain fused vs unfused: "
        "$REF" cmp "$TMP/r1.npy" "$TMP/unfused.npy" 0 || bad "fuse_chain fused vs unfused";;
    moe_ep) # top-2 (the file's K) and top-1 against C; ties: all logits 0
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" --out "wr=$TMP/wr.npy" \
            --out "w1=$TMP/w1.npy" --out "w2=$TMP/w2.npy" >/dev/null || bad "moe inputs"
        echo -n "moe_ep k = 2, 1 rank vs C: "
        "$REF" moe "$TMP/x.npy" "$TMP/wr.npy" "$TMP/w1.npy" "$TMP/w2.npy" 2 "$TMP/r1.npy" 1e-5 \
            || bad "moe_ep vs C"
        H=$(printf '%s\n' "$@" | sed -n 's/^H=//p')
        E=$(printf '%s\n' "$@" | sed -n 's/^E=//p')
        "$REF" fill "$TMP/wr0.npy" 0 "$H" "$E" || bad "moe: zero router"
        for R in 1 2 4 8; do
            "$BLKC" run "$DIR/$f" --ranks=$R --random -D K=1 "$@" --out "result=$TMP/k1.npy" \
                >/dev/null || bad "moe_ep k = 1 on $R ranks"
            echo -n "moe_ep k = 1, $R ranks vs C: "
            "$REF" moe "$TMP/x.npy" "$TMP/wr.npy" "$TMP/w1.npy" "$TMP/w2.npy" 1 "$TMP/k1.npy" 1e-5 \
                || bad "moe_ep k = 1 on $R ranks vs C"
            "$BLKC" run "$DIR/$f" --ranks=$R --random "$@" "wr=@$TMP/wr0.npy" \
                --out "result=$TMP/tie.npy" >/dev/null || bad "moe_ep ties on $R ranks"
            echo -n "moe_ep all logits tied, $R ranks vs C: "
            "$REF" moe "$TMP/x.npy" "$TMP/wr0.npy" "$TMP/w1.npy" "$TMP/w2.npy" 2 "$TMP/tie.npy" 1e-5 \
                || bad "moe_ep ties on $R ranks vs C"
        done;;
    two_results)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" --out "x=$TMP/x.npy" \
            --out "w1=$TMP/w1.npy" --out "w2=$TMP/w2.npy" >/dev/null || bad "mlp2 inputs"
        "$REF" mlp "$TMP/x.npy" "$TMP/w1.npy" "$TMP/w2.npy" "$TMP/result0.r1.npy" 1e-4 \
            || bad "two_results result0 vs C";;
    esac
    for R in 2 4 8; do
        for ov in auto always; do
            mapfile -t oa < <(outargs "$R")
            if ! BLKC_TASK_OVERLAP=$ov "$BLKC" run "$DIR/$f" --ranks=$R --random "$@" \
                    "${oa[@]}"; then
                bad "$name on $R ranks ($ov)"
                continue
            fi
            for o in $outs; do
                echo -n "$name $o, $R ranks, overlap $ov: "
                "$REF" cmp "$TMP/$o.r$R.npy" "$TMP/$o.r1.npy" 1e-4 || bad "$name $o on $R ranks ($ov)"
            done
        done
    done
    exit $fail
fi

if [ "$MODE" = mesh ]; then
    f=$1; shift
    name=$(basename "$f" .blk)
    # the meshes, as size assignments; the first is the 1-rank reference
    case $name in
    mlp_mesh3) meshes=("DP=1 SP=1 TP=1" "DP=2 SP=2 TP=2" "DP=1 SP=2 TP=2" "DP=4 SP=1 TP=2"
                       "DP=2 SP=2 TP=1");;
    moe_mesh|moe_group) meshes=("DP=1 EP=1" "DP=1 EP=2" "DP=2 EP=1" "DP=2 EP=2" "DP=4 EP=2" "DP=2 EP=4");;
    *) meshes=("DP=1 TP=1" "DP=1 TP=2" "DP=2 TP=1" "DP=2 TP=2" "DP=4 TP=2" "DP=2 TP=4");;
    esac
    # shellcheck disable=SC2086
    "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" ${meshes[0]} --out "result=$TMP/r1.npy" \
        || { echo "FAIL: $name on 1 rank"; exit 1; }
    case $name in
    mlp_mesh)
        "$BLKC" run "$DIR/$f" --ranks=1 --random "$@" DP=1 TP=1 --out "x=$TMP/x.npy" \
            --out "w1=$TMP/w1.npy" --out "w2=$TMP/w2.npy" >/dev/null || bad "mlp_mesh inputs"
        echo -n "$name, 1 rank vs C: "
        "$REF" mlp "$TMP/x.npy" "$TMP/w1.npy" "$TMP/w2.npy" "$TMP/r1.npy" 1e-4 || bad "mlp_mesh vs C";;
    mlp_sp_mesh) # the same inputs (names, --random streams) as the 1-D task
        "$BLKC" run "$DIR/mlp_sp.blk" --ranks=1 --random "$@" --out "result=$TMP/a.npy" \
            >/dev/null || bad "mlp_sp on 1 rank"
        echo -n "$name, 1 rank vs mlp_sp.blk (1-D, 1 rank): "
        "$REF" cmp "$TMP/r1.npy" "$TMP/a.npy" 0 || bad "mlp_sp_mesh vs mlp_sp";;
    moe_mesh|moe_group) # the same inputs (names, --random streams) as the 1-D task
        "$BLKC" run "$DIR/moe_ep.blk" --ranks=1 --random "$@" --out "result=$TMP/a.npy" \
            >/dev/null || bad "moe_ep on 1 rank"
        echo -n "$name, 1 rank vs moe_ep.blk (1-D, 1 rank): "
        "$REF" cmp "$TMP/r1.npy" "$TMP/a.npy" 0 || bad "$name vs moe_ep";;
    attention_mesh) # the same inputs (names, --random streams) as the 1-D task
        "$BLKC" run "$DIR/attention.blk" --ranks=1 --random "$@" --out "result=$TMP/a.npy" \
            >/dev/null || bad "attention on 1 rank"
        echo -n "$name, 1 rank vs attention.blk (1-D, 1 rank): "
        "$REF" cmp "$TMP/r1.npy" "$TMP/a.npy" 0 || bad "attention_mesh vs attention";;
    esac
    for m in "${meshes[@]:1}"; do
        R=1
        for a in $m; do R=$((R * ${a#*=})); done
        for ov in auto always; do
            # shellcheck disable=SC2086
            if ! BLKC_TASK_OVERLAP=$ov "$BLKC" run "$DIR/$f" --ranks=$R --random "$@" $m \
                    --out "result=$TMP/r.npy"; then
                bad "$name on mesh $m ($ov)"
                continue
            fi
            echo -n "$name, mesh $m on $R ranks, overlap $ov, vs 1 rank: "
            "$REF" cmp "$TMP/r.npy" "$TMP/r1.npy" 1e-4 || bad "$name on mesh $m ($ov)"
        done
    done
    exit $fail
fi

if [ "$MODE" = mega ]; then
    # megakernel mode (docs/task.md "Megakernel mode"): every configuration
    # run with and without --megakernel must give the same bits
    kind=$1 f=$2; shift 2
    name=$(basename "$f" .blk)
    case $name in two_results) outs="result0 result1";; *) outs="result";; esac
    if [ "$kind" = mesh ]; then
        case $name in
        mlp_mesh3) confs=("1|DP=1 SP=1 TP=1" "8|DP=2 SP=2 TP=2" "4|DP=1 SP=2 TP=2");;
        moe_mesh|moe_group) confs=("1|DP=1 EP=1" "2|DP=1 EP=2" "2|DP=2 EP=1" "4|DP=2 EP=2");;
        *) confs=("1|DP=1 TP=1" "2|DP=1 TP=2" "2|DP=2 TP=1" "4|DP=2 TP=2");;
        esac
    else
        confs=("1|" "2|" "4|")
    fi
    for c in "${confs[@]}"; do
        R=${c%%|*} m=${c#*|}
        for ov in auto always; do
            for mk in off on; do
                # (--bench=2: the table cached by the first run is reused)
                flag=(); [ $mk = on ] && flag=(--megakernel --bench=2)
                oa=(); for o in $outs; do oa+=(--out "$o=$TMP/$o.$mk.npy"); done
                # shellcheck disable=SC2086
                if ! BLKC_TASK_OVERLAP=$ov "$BLKC" run "$DIR/$f" --ranks="$R" --random "$@" $m \
                        "${flag[@]}" "${oa[@]}" >/dev/null; then
                    bad "$name on $R ranks $m ($ov, megakernel $mk)"
                fi
            done
            for o in $outs; do
                echo -n "$name $o, $R ranks $m, overlap $ov, megakernel vs launch per op: "
                "$REF" cmp "$TMP/$o.on.npy" "$TMP/$o.off.npy" 0 || bad "$name $o $R ranks $m ($ov)"
            done
        done
    done
    exit $fail
fi

if [ "$MODE" = golden ]; then
    while read -r gname file entry ranks topo sizes; do
        [ -z "$gname" ] && continue
        case $gname in \#*) continue;; esac
        out="$TMP/$gname.txt"
        # shellcheck disable=SC2086
        "$BLKC" plan "$DIR/$file" --entry="$entry" --ranks="$ranks" --topology="$topo" \
            $sizes >"$out" 2>&1 || bad "plan $gname exited $?"
        if [ "${BLKC_TASK_GOLDEN_UPDATE:-}" = 1 ]; then
            cp "$out" "$DIR/golden/$gname.txt"
        elif ! diff -u "$DIR/golden/$gname.txt" "$out"; then
            bad "golden $gname"
        fi
    done <"$DIR/golden/plans.list"
    # --emit=task: the Task IR with shardings and fusion groups
    for f in fuse_chain two_results call_reshard mlp_mesh moe_mesh; do
        "$BLKC" compile "$DIR/$f.blk" --emit=task >"$TMP/$f.task" 2>&1 || bad "emit=task $f exited $?"
        if [ "${BLKC_TASK_GOLDEN_UPDATE:-}" = 1 ]; then
            cp "$TMP/$f.task" "$DIR/golden/${f}_emit.txt"
        elif ! diff -u "$DIR/golden/${f}_emit.txt" "$TMP/$f.task"; then
            bad "golden ${f}_emit"
        fi
    done
    # plan --megakernel: the tile-task graph (its section of the plan)
    while read -r gname ov file ranks sizes; do
        # shellcheck disable=SC2086
        BLKC_MEGA_WORKERS=2 BLKC_TASK_OVERLAP=$ov "$BLKC" plan "$DIR/$file" --ranks="$ranks" \
            --topology=this-cpu --megakernel $sizes >"$TMP/mk.txt" 2>&1 || bad "plan --megakernel $gname"
        sed -n '/^megakernel:/,$p' "$TMP/mk.txt" >"$TMP/$gname.txt"
        if [ "${BLKC_TASK_GOLDEN_UPDATE:-}" = 1 ]; then
            cp "$TMP/$gname.txt" "$DIR/golden/$gname.txt"
        elif ! diff -u "$DIR/golden/$gname.txt" "$TMP/$gname.txt"; then
            bad "golden $gname"
        fi
    done <<'EOL'
mlp_mega auto mlp.blk 2 T=64 H=32 F=128
mlp_sp_mega_overlap always mlp_sp.blk 2 T=64 H=32 F=64
attention_mega auto attention.blk 2 T=16 H=16 NH=8 D=8
mlp_mesh_mega auto mlp_mesh.blk 4 T=128 H=32 F=128 DP=2 TP=2
EOL
    "$BLKC" plan "$DIR/mlp.blk" --ranks=2 --megakernel --json T=16 H=16 F=32 >/dev/null 2>"$TMP/e"
    [ $? = 2 ] && grep -qF "plan --megakernel prints text only, not --json" "$TMP/e" \
        || bad "plan --megakernel --json: exit 2 and a message"
    # --json is well-formed enough to name every collective's choice
    "$BLKC" plan "$DIR/mlp_sp.blk" --entry=mlp_sp --ranks=8 --topology=h800-nvl8 --json \
        T=4096 H=12288 F=49152 >"$TMP/p.json" || bad "plan --json"
    grep -q '"chosen": "AllGather+GEMM"' "$TMP/p.json" || bad "json: AllGather+GEMM chosen"
    grep -q '"chosen": "GEMM+ReduceScatter"' "$TMP/p.json" || bad "json: GEMM+ReduceScatter chosen"
    # a mesh axis placed on the network by the topology file (axis_net)
    printf 'base = h100-nvl8\nname = h100-tp-net\naxis_net = tp\n' >"$TMP/tp_net.topo"
    "$BLKC" plan "$DIR/mlp_mesh.blk" --ranks=8 --topology="$TMP/tp_net.topo" T=4096 H=8192 \
        F=28672 DP=2 TP=4 >"$TMP/tp_net.txt" || bad "plan axis_net"
    grep -q 'axis tp     4 ranks per group, stride 1, network between nodes (50.0 GB/s, 10.0 us)' \
        "$TMP/tp_net.txt" || bad "axis_net = tp: tp on the network"
    grep -q 'all_reduce of %5 on tp (4 ranks, net)' "$TMP/tp_net.txt" || bad "axis_net: all_reduce on net"
    "$BLKC" plan "$DIR/mlp_mesh.blk" --ranks=8 --topology=h100-nvl8 --json T=4096 H=8192 \
        F=28672 DP=2 TP=4 >"$TMP/m.json" || bad "plan --json mesh"
    grep -q '"mesh": \[{"axis": "dp", "size": 2, "stride": 4, "link": "link"}, {"axis": "tp", "size": 4, "stride": 1, "link": "link"}\]' \
        "$TMP/m.json" || bad "json: mesh"
    grep -q '"kind": "all_reduce", "axis": "tp"' "$TMP/m.json" || bad "json: all_reduce on tp"
    # moe: dispatch and combine among the collectives, on the ep axis
    "$BLKC" plan "$DIR/moe_mesh.blk" --ranks=16 --topology=h100-nvl8 --json T=8192 H=4096 \
        F=14336 E=64 DP=2 EP=8 >"$TMP/moe.json" || bad "plan --json moe"
    grep -q '"kind": "moe_dispatch", "axis": "ep", "of": 4, "ranks": 8, "k": 2, "experts": 64' \
        "$TMP/moe.json" || bad "json: moe_dispatch on ep"
    grep -q '"kind": "moe_combine", "axis": "ep"' "$TMP/moe.json" || bad "json: moe_combine on ep"
    exit $fail
fi

if [ "$MODE" = errors ]; then
    # FILE | run args | expected message (grep -F) [| expected exit, default 1]
    while IFS='|' read -r file args want code; do
        code=${code:-1}
        [ -z "$file" ] && continue
        case $file in \#*) continue;; esac
        # shellcheck disable=SC2086
        "$BLKC" run "$DIR/$file" --random $args >"$TMP/out" 2>"$TMP/err"
        rc=$?
        if [ $rc != "$code" ]; then
            bad "$file $args: exit $rc, expected $code"; cat "$TMP/err"
        elif ! grep -qF -- "$want" "$TMP/err"; then
            bad "$file $args: message"; echo "  want: $want"; echo "  got:"; cat "$TMP/err"
        fi
    done <"$DIR/errors.list"
    exit $fail
fi
echo "usage: task_test.sh BLKC TASK_REF DIR dist|golden|errors ..." >&2
exit 2
