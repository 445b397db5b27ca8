#!/bin/bash
# The guest's second stage, PID 1 on the host's root (init mounted it):
# mounts what a Debian system has and heaptrace uses (proc, sys, tracefs,
# debugfs, bpffs, cgroup2), runs the command the host left in cmd on the
# console, writes its exit status to status, and powers off.  The host's
# run.sh copies this file into the results share (/run/heaptrace-kernel).
set -u
R=/run/heaptrace-kernel
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=${TERM:-dumb}
# Whatever happens, the guest ends; PID 1 exiting would only panic.
trap 'sync; /bin/busybox poweroff -f' EXIT

mount -t proc proc /proc
mount -t sysfs sys /sys
# The host's /tmp shows through 9p: the guest's own, empty.
mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmp /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
# What udev would make: bash's <(...) needs /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do [ -e "/dev/${i#*:}" ] || ln -s "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"; done
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# How long the kernel and the first stage took (run.sh says it).
cat /proc/uptime >"$R/uptime"

# KDIR, CWD and the host's HEAPTRACE_* and HT_* variables.
. "$R/env"
# modprobe finds the guest kernel's modules in the unpacked package, and
# what reads /boot/config-* (bpftool feature) this kernel's config; not on
# a plain root, which is read-only there.
if [ -w /lib ]; then
	mkdir -p /lib/modules
	ln -sfn "$KDIR/lib/modules/$(uname -r)" "/lib/modules/$(uname -r)"
	ln -sf "$KDIR/boot/config-$(uname -r)" "$KDIR/boot/System.map-$(uname -r)" /boot/
fi
hostname "heaptrace-$(uname -r | cut -d. -f1-2)"
ip link set lo up
# The host reads the console raw: no CR before each LF.
stty -onlcr -F /dev/console 2>/dev/null

cd "$CWD" || cd /
if [ -s "$R/cmd" ]; then
	# A session of its own with the console as its terminal: job control and
	# Ctrl-C work as on a login shell.
	setsid -cw bash "$R/cmd" </dev/console >/dev/console 2>&1
else
	setsid -cw bash -i </dev/console >/dev/console 2>&1
fi
echo $? >"$R/status"
