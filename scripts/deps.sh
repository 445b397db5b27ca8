#!/bin/sh
# Install, from Debian's archive, whatever heaptrace needs to build and test
# that is not already there.  Idempotent: a machine that has everything runs
# no apt-get at all.  Arguments: more packages (make test-kernels's QEMU).
set -e
pkgs="clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libcapstone-dev libmicrohttpd-dev curl
      make gcc g++ google-perftools golang-go heaptrack libjemalloc2 libtcmalloc-minimal4
      valgrind bpftrace gdb python3 elfutils libc6-dbg chromium imagemagick libxml2-utils openssl
      man-db groff-base bash-completion dpkg-dev lintian $*"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
