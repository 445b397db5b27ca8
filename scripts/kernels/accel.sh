#!/bin/sh
# accel.sh: prints how the guests run here, "kvm" or "tcg".  KVM only with
# the CPU's own virtualization (vmx or svm): a /dev/kvm without it is a
# software KVM such as kvm-pvm (seen on a Firecracker VM), which runs only
# kernels built for it and stops Debian's on their first emulated
# instruction ("KVM internal error. Suberror: 1", QEMU then hangs until
# killed).  HEAPTRACE_ACCEL=kvm or tcg overrides.
case ${HEAPTRACE_ACCEL:-} in
kvm | tcg) echo "$HEAPTRACE_ACCEL"; exit 0 ;;
'') ;;
*) echo "accel.sh: HEAPTRACE_ACCEL must be kvm or tcg, not '$HEAPTRACE_ACCEL'" >&2; exit 2 ;;
esac
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
	echo kvm
else
	echo tcg
fi
