# root.sh — clean Debian 12 roots for scripts/fresh-check.sh and
# scripts/gpu-dry-run.sh (sourced, not run). A pristine base (debootstrap
# minbase + git, make, ca-certificates) is built once and kept as a tarball
# under build/fresh/; each run unpacks a fresh copy. The .deb files apt
# downloads are kept in build/fresh/debs between runs.
#
# Mounts: every run happens inside a private mount namespace (the caller
# re-executes itself under `unshare --mount`), so the bind mounts of /proc,
# /sys, /dev, /dev/pts, /dev/shm and the CUDA toolkit are never visible outside it
# and vanish with it, whatever ends the run. A trap unmounts them too, and
# before a root is deleted the script checks that nothing under it is still
# mounted (a later `rm -rf build` must never follow a mount into /dev).
#
# Needs: root and debootstrap (installed with apt-get if missing).

FR_DIR=${FR_DIR:-$FR_REPO/build/fresh}
FR_SUITE=bookworm
FR_MOUNTS=()

fr_die() { echo "$FR_NAME: FAIL — $*" >&2; exit 1; }

# fr_in_namespace "$@": re-execute the calling script in a private mount
# namespace (once; FR_NS marks the child).
fr_in_namespace() {
  [ "$(id -u)" -eq 0 ] || fr_die "needs root (run it as root: it builds a chroot)"
  if [ -z "${FR_NS:-}" ]; then
    command -v unshare >/dev/null || fr_die "unshare not found (apt-get install util-linux)"
    FR_NS=1 exec unshare --mount --propagation private -- bash "$0" "$@"
  fi
}

# The host's Debian mirror: the first URI of a bookworm stanza in
# /etc/apt/sources.list.d/*.sources, else the first `deb` line of
# /etc/apt/sources.list, else deb.debian.org.
fr_mirror() {
  local m=""
  m=$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ && u { print u; exit }' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1) || true
  [ -n "$m" ] || m=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null) || true
  echo "${m:-http://deb.debian.org/debian}"
}

# fr_copy_apt_config ROOT: the host's sources (only the active ones), so
# the root installs from the same mirror and snapshot as the host.
fr_copy_apt_config() {
  local r=$1 f
  rm -f "$r"/etc/apt/sources.list "$r"/etc/apt/sources.list.d/*
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$r/etc/apt/sources.list"
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # only Debian's own archive is reachable: skip third-party lists
    grep -qE 'debian\.org|debian-security|/debian' "$f" || continue
    cp "$f" "$r/etc/apt/sources.list.d/"
  done
  cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

# fr_base: build.../base.tar if it is missing.
fr_base() {
  local tar=$FR_DIR/base.tar tmp=$FR_DIR/base.tmp
  [ -s "$tar" ] && return 0
  if ! command -v debootstrap >/dev/null; then
    echo "$FR_NAME: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } ||
      fr_die "cannot install debootstrap (apt-get install debootstrap)"
  fi
  fr_assert_unmounted "$tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp" "$FR_DIR/debs"
  local mirror
  mirror=$(fr_mirror)
  echo "$FR_NAME: building the base root (debootstrap minbase $FR_SUITE from $mirror; once, then cached)"
  debootstrap --variant=minbase --include=git,make,ca-certificates \
      --cache-dir="$FR_DIR/debs" "$FR_SUITE" "$tmp" "$mirror" >"$FR_DIR/debootstrap.log" 2>&1 ||
    fr_die "debootstrap failed (see $FR_DIR/debootstrap.log)"
  fr_copy_apt_config "$tmp"
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
  tar -C "$tmp" -cf "$tar.part" . && mv "$tar.part" "$tar"
  rm -rf "$tmp"
}

# fr_assert_unmounted DIR: fail when anything is mounted at or below DIR.
fr_assert_unmounted() {
  local d
  d=$(readlink -m "$1")
  if awk -v d="$d" '$5 == d || index($5, d "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    fr_die "something is still mounted under $d (umount -R $d first)"
  fi
}

# fr_fresh ROOT [TAR]: a new copy of the base (or of TAR) at ROOT.
fr_fresh() {
  local r=$1 tar=${2:-$FR_DIR/base.tar}
  fr_assert_unmounted "$r"
  rm -rf "$r"
  mkdir -p "$r"
  tar -C "$r" -xf "$tar"
  fr_copy_apt_config "$r"
}

# fr_bind SRC DST [ro]
fr_bind() {
  mkdir -p "$2"
  mount --bind "$1" "$2"
  FR_MOUNTS+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

# fr_mount ROOT: /proc, /sys (read-only), /dev, /dev/pts, /dev/shm, the apt
# cache and the CUDA toolkit (when the host has one), and /etc/hosts as a
# machine or container has it: debootstrap writes none, so the root's own
# host name went to DNS and every mpirun waited 5 s for the answer (10 s
# a -np 4 job in the third fresh-check; 0.1 s with the file).
fr_mount() {
  local r=$1
  mkdir -p "$r/proc"
  mount -t proc proc "$r/proc"
  FR_MOUNTS+=("$r/proc")
  [ -d /sys/devices ] && fr_bind /sys "$r/sys" ro
  [ -s "$r/etc/hosts" ] || cp /etc/hosts "$r/etc/hosts"
  fr_bind /dev "$r/dev"
  [ -d /dev/pts ] && fr_bind /dev/pts "$r/dev/pts"
  [ -d /dev/shm ] && fr_bind /dev/shm "$r/dev/shm"
  mkdir -p "$FR_DIR/debs/partial"
  fr_bind "$FR_DIR/debs" "$r/var/cache/apt/archives"
  [ -d /usr/local/cuda/bin ] && fr_cuda "$r"
  return 0
}

# fr_cuda ROOT: the host's CUDA toolkit as the machine image has it: the
# real folder bound at its own path (read-only), the /usr/local/cuda link,
# and the loader's configuration for it (/etc/ld.so.conf.d: NVRTC loads
# libnvrtc-builtins by name), then ldconfig.
fr_cuda() {
  local r=$1 real f
  real=$(readlink -f /usr/local/cuda)
  fr_bind "$real" "$r$real" ro
  if [ -L /usr/local/cuda ]; then
    rm -rf "$r/usr/local/cuda"
    ln -s "$(readlink /usr/local/cuda)" "$r/usr/local/cuda"
  fi
  for f in /etc/ld.so.conf.d/*.conf; do
    grep -qE "^(/usr/local/cuda|$real)" "$f" 2>/dev/null && cp "$f" "$r/etc/ld.so.conf.d/"
  done
  chroot "$r" /sbin/ldconfig
}

# fr_umount: everything fr_mount did, innermost first (trap on every exit).
fr_umount() {
  local i
  for ((i = ${#FR_MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${FR_MOUNTS[i]}" 2>/dev/null || umount -l "${FR_MOUNTS[i]}" 2>/dev/null || true
  done
  FR_MOUNTS=()
}

# fr_chroot ROOT CMD: run CMD (a bash -c string) in ROOT as a new user's
# root shell: a clean environment, CI=true, no standard input.
fr_chroot() {
  local r=$1; shift
  env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI=true \
      ${FR_EXTRA_ENV:-} chroot "$r" /bin/bash -c "$1" </dev/null
}

# fmt_secs N -> 23m10s
fr_fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
