#!/usr/bin/env bash
# npy_bad.sh BLKC DATADIR — .npy files that lie, made here at run time and
# passed to `blkc run vadd.blk A=@bad.npy`: each must exit 3 with one line
# `blkc: error: ...` naming the problem (never a crash, never a hang, never an
# allocation the size of what the header claims). Cases: bad magic, empty,
# magic only, unknown versions, header length past the file / absurd / zero,
# headers that are not a dict, lack a key, have unknown keys, NULs, bad
# descr (big-endian, object, string, complex), Fortran order, shapes that lie
# about the data size (larger, smaller, zero), overflow, negative, float,
# 9+ dims, a directory and /dev/null as the file. Good v1.0/2.0/3.0 files
# load, so the reader is not simply refusing everything.
set -u
BLKC=$1 DATA=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/blkc-npy.XXXXXX")
trap 'rm -rf "$T"' EXIT
n=0 bad=0

# hdr_v1 DICT: a version 1.0 preamble + header DICT padded to 64 bytes
hdr() { # VERSION DICT
  local v=$1 d=$2 pre=10
  [ "$v" = 1 ] || pre=12
  local total=$(( (pre + ${#d} + 1 + 63) / 64 * 64 ))
  local hl=$(( total - pre ))
  printf '\x93NUMPY'; printf "\\x0$v\\x00"
  printf "\\$(printf %03o $((hl & 255)))\\$(printf %03o $(((hl >> 8) & 255)))"
  [ "$v" = 1 ] || printf '\x00\x00'
  printf '%s' "$d"; printf '%*s' $((hl - ${#d} - 1)) ''; printf '\n'
}
f4data() { # COUNT: COUNT little-endian f32 ones
  local i; for ((i = 0; i < $1; i++)); do printf '\x00\x00\x80\x3f'; done
}
D8="{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }"

# case NAME PATTERN FILE: blkc exits 3, one line, matching PATTERN
case_() {
  local name=$1 pat=$2 file=$3; n=$((n + 1))
  timeout 60 "$BLKC" run "$DATA/vadd.blk" A=@"$file" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ $rc != 3 ] || [ "$(wc -l <"$T/err")" != 1 ] || ! grep -q '^blkc: error: ' "$T/err" ||
     ! grep -Eq -- "$pat" "$T/err"; then
    echo "FAIL $name: exit $rc (want 3, one line /$pat/):"; cat "$T/out" "$T/err"
    bad=$((bad + 1))
  else
    echo "ok   $name: $(cat "$T/err")"
  fi
}
good() {
  local name=$1 file=$2; n=$((n + 1))
  if "$BLKC" run "$DATA/vadd.blk" A=@"$file" >"$T/out" 2>"$T/err"; then
    echo "ok   $name: loads"
  else
    echo "FAIL $name: exit $?"; cat "$T/err"; bad=$((bad + 1))
  fi
}

{ hdr 1 "$D8"; f4data 8; } >"$T/good1.npy"; good "version 1.0" "$T/good1.npy"
{ hdr 2 "$D8"; f4data 8; } >"$T/good2.npy"; good "version 2.0 (4-byte header length)" "$T/good2.npy"
{ hdr 3 "$D8"; f4data 8; } >"$T/good3.npy"; good "version 3.0" "$T/good3.npy"

# --- preamble
printf 'NUMPY\x01\x00' >"$T/f"; f4data 8 >>"$T/f";       case_ "magic without 0x93" "bad magic" "$T/f"
printf '\x93NUMPX\x01\x00\x10\x00' >"$T/f";               case_ "wrong magic letter" "bad magic" "$T/f"
: >"$T/f";                                               case_ "empty file" "bad magic|truncated" "$T/f"
printf '\x93NUMPY' >"$T/f";                               case_ "magic only" "bad magic|truncated header" "$T/f"
printf '\x93NUMPY\x01' >"$T/f";                           case_ "magic and major version only" "bad magic|truncated header" "$T/f"
printf '\x93NUMPY\x01\x00\x40' >"$T/f";                   case_ "half a header length" "bad magic|truncated header" "$T/f"
{ hdr 1 "$D8"; f4data 8; } | sed '1s/^\x93NUMPY\x01/\x93NUMPY\x04/' >"$T/f"
                                                         case_ "version 4.0" "unsupported .npy format version 4" "$T/f"
{ hdr 1 "$D8"; f4data 8; } | sed '1s/^\x93NUMPY\x01/\x93NUMPY\x00/' >"$T/f"
                                                         case_ "version 0.0" "unsupported .npy format version 0" "$T/f"
# --- header length lies
{ printf '\x93NUMPY\x01\x00\xff\xff'; printf '%s\n' "$D8"; f4data 8; } >"$T/f"
                                                         case_ "header length 65535 past the end" "truncated header" "$T/f"
{ printf '\x93NUMPY\x02\x00\xff\xff\xff\x7f'; printf '%s\n' "$D8"; } >"$T/f"
                                                         case_ "v2 header length 2^31" "header length .* is absurd" "$T/f"
{ printf '\x93NUMPY\x01\x00\x00\x00'; f4data 8; } >"$T/f"; case_ "header length 0" "malformed header" "$T/f"
{ printf '\x93NUMPY\x01\x00\x10\x00'; printf '%s\n' "$D8"; f4data 8; } >"$T/f"
                                                         case_ "header length cuts the dict" "malformed header" "$T/f"
# --- header dict
{ hdr 1 "not a dict at all"; f4data 8; } >"$T/f";       case_ "header is not a dict" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, "; f4data 8; } >"$T/f"
                                                         case_ "unterminated dict" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False}"; f4data 8; } >"$T/f"
                                                         case_ "no shape key" "lacks 'shape'" "$T/f"
{ hdr 1 "{'fortran_order': False, 'shape': (8,)}"; f4data 8; } >"$T/f"
                                                         case_ "no descr key" "lacks 'descr'" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), 'extra': 1}"; f4data 8; } >"$T/f"
                                                         case_ "unknown key" "unexpected key 'extra'|malformed" "$T/f"
{ hdr 1 "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (8,)}"; f4data 8; } >"$T/f"
                                                         case_ "key given twice" "malformed|twice|duplicate|unexpected key .descr." "$T/f"
{ hdr 1 "{'descr': '<f4\", 'fortran_order': False, 'shape': (8,)}"; f4data 8; } >"$T/f"
                                                         case_ "mismatched quotes" "malformed header|unsupported dtype" "$T/f"
{ printf '\x93NUMPY\x01\x00\x36\x00'; printf "{'descr': '<f4',\0'fortran_order': False, 'shape': (8,)}\n"; f4data 8; } >"$T/f"
                                                         case_ "NUL byte in the header" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), } trailing"; f4data 8; } >"$T/f"
                                                         case_ "text after the dict" "trailing text|malformed" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (8,)}"; f4data 8; } >"$T/f"
                                                         case_ "fortran_order neither True nor False" "malformed header" "$T/f"
# --- descr
for d in '>f4:big-endian' '|O:unsupported dtype' '<U10:unsupported dtype' '<c16:unsupported dtype' \
         '<f16:unsupported dtype' '<V4:unsupported dtype' ':unsupported dtype|malformed' \
         '<M8[ns]:unsupported dtype'; do
  { hdr 1 "{'descr': '${d%%:*}', 'fortran_order': False, 'shape': (8,), }"; f4data 8; } >"$T/f"
  case_ "descr '${d%%:*}'" "${d#*:}" "$T/f"
done
{ hdr 1 "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (8,), }"; f4data 8; } >"$T/f"
                                                         case_ "structured descr" "malformed header|unsupported" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 4), }"; f4data 8; } >"$T/f"
                                                         case_ "Fortran order, 2-d" "Fortran-order" "$T/f"
# --- shapes that lie about the size
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }"; f4data 8; } >"$T/f"
                                                         case_ "shape says 1000, data holds 8" "header says 4000 data bytes, file has 32" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"; f4data 8; } >"$T/f"
                                                         case_ "shape says 4, data holds 8" "header says 16 data bytes, file has 32|extra data" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }"; f4data 8; } >"$T/f"
                                                         case_ "shape says 0, data holds 8" "header says 0 data bytes|extra data" "$T/f"
{ hdr 1 "$D8"; f4data 7; printf '\x00\x00'; } >"$T/f";   case_ "data ends mid-element" "file has 30" "$T/f"
{ hdr 1 "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }"; } >"$T/f"
                                                         case_ "shape 2^62 of f8 (bytes overflow)" "absurd|too large|truncated" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }"; } >"$T/f"
                                                         case_ "shape product overflows i64" "absurd|too large" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"; } >"$T/f"
                                                         case_ "shape extent past i64" "too large|malformed" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,), }"; f4data 8; } >"$T/f"
                                                         case_ "float extent" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (-8,), }"; f4data 8; } >"$T/f"
                                                         case_ "negative extent" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (8, }"; f4data 8; } >"$T/f"
                                                         case_ "unclosed shape tuple" "malformed header" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': ($(printf '1,%.0s' $(seq 100))), }"; f4data 1; } >"$T/f"
                                                         case_ "100 dimensions" "more than 8 dimensions" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"; f4data 1; } >"$T/f"
                                                         case_ "0-d array for a 1-d parameter" "shape mismatch: parameter A has 1 dims" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"; f4data 8; } >"$T/f"
                                                         case_ "2-d array for a 1-d parameter" "shape mismatch" "$T/f"
{ hdr 1 "{'descr': '<i4', 'fortran_order': False, 'shape': (8,), }"; f4data 8; } >"$T/f"
                                                         case_ "i4 data for an f32 parameter" "dtype mismatch" "$T/f"
{ hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (3000000000,), }"; } >"$T/f"
                                                         case_ "3e9 elements, no data" "header says|truncated" "$T/f"
# --- not files
mkdir "$T/dir.npy";                                      case_ "a directory" "not a regular file|cannot" "$T/dir.npy"
case_ "/dev/null" "not a regular file|bad magic|truncated" /dev/null
case_ "/dev/zero (endless)" "not a regular file|bad magic" /dev/zero
ln -s "$T/nowhere.npy" "$T/dangling.npy";                case_ "dangling symlink" "cannot open" "$T/dangling.npy"

echo "$n cases, $bad failed"
[ $bad = 0 ]
