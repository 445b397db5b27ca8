#!/bin/bash
# run.sh [-t SECS] [-m MEM] [-r overlay|plain] SERIES [-- COMMAND...]: boot Debian's newest
# SERIES kernel (6.1, 6.12; fetch.sh) under QEMU with this machine's root
# shared read-only and a throwaway tmpfs layer on top, run COMMAND there
# (from the current directory, as root) and power off.  The command's output
# comes on this terminal, its exit status is run.sh's: 124 if the guest ran
# past SECS (default 900), 125 if it gave no status (did not boot).  No
# COMMAND: an interactive shell (Ctrl-A X leaves QEMU).  -r plain: the 9p
# root without the overlay, tmpfs on /tmp, /root and /var/tmp only (files
# then have the st_dev /proc/PID/maps shows, unlike on overlayfs).
#   scripts/kernels/run.sh 6.1 -- build/heaptrace -v /bin/true
set -eu
here=$(cd "$(dirname "$0")" && pwd)
secs=${HEAPTRACE_KERNEL_TIMEOUT:-900}
mem=4G
root=${HEAPTRACE_KERNEL_ROOT:-overlay}
usage() { echo "usage: run.sh [-t SECS] [-m MEM] [-r overlay|plain] SERIES [-- COMMAND...]" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	-t) [ $# -ge 2 ] || usage; secs=$2; shift 2 ;;
	-m) [ $# -ge 2 ] || usage; mem=$2; shift 2 ;;
	-r) [ $# -ge 2 ] || usage; root=$2; shift 2 ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
case $root in overlay | plain) ;; *) usage ;; esac
series=$1
shift
if [ $# -gt 0 ]; then
	[ "$1" = -- ] || usage
	shift
fi
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "run.sh: needs qemu-system-x86_64 (apt-get install qemu-system-x86)" >&2; exit 1; }

# The guest's /tmp is a tmpfs of its own (guest.sh): a command run from a
# tree under the host's /tmp would find nothing there.
case $(pwd)/ in
/tmp/*) echo "run.sh: the guest's /tmp is its own: run from a directory outside /tmp (here $(pwd))" >&2; exit 2 ;;
esac
kdir=$(sh "$here/fetch.sh" "$series")
initrd=$(sh "$here/initramfs.sh" "$kdir")
vmlinuz=$(ls "$kdir"/boot/vmlinuz-*)

# The results share: the guest's second stage, what to run, and back from
# the guest the exit status.  Under /tmp, which the guest does not see
# through its own tmpfs /tmp, so nothing there leaks into the tests.
res=$(mktemp -d "${TMPDIR:-/tmp}/heaptrace-kernel.XXXXXX")
trap 'rm -rf "$res"' EXIT
trap 'exit 130' INT TERM
cp "$here/guest.sh" "$res/guest.sh"
printf 'KDIR=%q\nCWD=%q\n' "$kdir" "$(pwd)" >"$res/env"
# The tests' knobs (HEAPTRACE_KEEP_TMP, HT_TEST_BUDGET ...) cross over.
while IFS='=' read -r name _; do
	case $name in HEAPTRACE_* | HT_*) printf 'export %s=%q\n' "$name" "${!name}" >>"$res/env" ;; esac
done < <(env | grep -E '^(HEAPTRACE|HT)_[A-Za-z0-9_]*=' | head -n 100)
if [ $# -gt 0 ]; then
	printf '%q ' "$@" >"$res/cmd"
	echo >>"$res/cmd"
fi

# Emulated, one CPU: with two, QEMU's translated code may run a kernel
# text patch (a static key flipped as heaptrace attaches a tracepoint)
# before the other CPU sees it, and the guest dies on the patch's int3
# (seen once in 6.12's kernel_clone), a failure of the emulation's.
acc=$(sh "$here/accel.sh") || exit 2
if [ "$acc" = kvm ]; then
	accel="-accel kvm -cpu host" cpus=2
else
	accel="-accel tcg -cpu max" cpus=1
fi
# No firmware menus, devices or network: the serial console, two 9p shares.
# quiet/loglevel keep the boot off the console; panic=-1 with -no-reboot
# makes a guest that dies end QEMU instead of hanging until the timeout.
qemu=(qemu-system-x86_64 -nodefaults -no-user-config -machine q35 $accel -smp $cpus -m "$mem"
	-display none -serial mon:stdio -no-reboot
	-kernel "$vmlinuz" -initrd "$initrd"
	-append "console=ttyS0 rdinit=/init quiet loglevel=1 panic=-1 mitigations=off heaptrace.root=$root"
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
	-device virtio-9p-pci,fsdev=root,mount_tag=root
	-fsdev local,id=res,path="$res",security_model=none
	-device virtio-9p-pci,fsdev=res,mount_tag=results)
t0=$(date +%s.%N)
rc=0
# --foreground: QEMU stays in this process group, so Ctrl-C and a kill of
# the group (make, test.sh) reach it.
if [ $# -gt 0 ]; then
	timeout --foreground -k 10 "$secs" "${qemu[@]}" </dev/null || rc=$?
else
	timeout --foreground -k 10 "$secs" "${qemu[@]}" || rc=$?
fi
t1=$(date +%s.%N)
up=$(cut -d' ' -f1 "$res/uptime" 2>/dev/null || echo "?")
took=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')
if [ "$rc" -eq 124 ]; then
	echo "run.sh: $series: the guest ran past $secs s: stopped" >&2
	exit 124
fi
if [ ! -s "$res/status" ]; then
	echo "run.sh: $series: the guest gave no exit status (QEMU exit $rc, after ${took} s)" >&2
	exit 125
fi
echo "run.sh: $(cat "$res/uname" 2>/dev/null || echo "$series"): userland after ${up} s (guest uptime), exit $(cat "$res/status"), ${took} s in all" >&2
exit "$(cat "$res/status")"
