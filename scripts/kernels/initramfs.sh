#!/bin/sh
# initramfs.sh KDIR: KDIR/initrd.gz for a kernel unpacked by fetch.sh: busybox,
# the modules that mount the host's root (9p over virtio, overlayfs) and
# scripts/kernels/init.  Only what the kernel lacks built in goes in, in the
# order insmod needs (busybox's insmod does not resolve dependencies).
set -eu
kdir=${1:?usage: initramfs.sh KDIR}
here=$(cd "$(dirname "$0")" && pwd)
out=$kdir/initrd.gz
# Rebuilt when init or this script changed (their contents: a fresh clone's
# files are all newer than the cache), else kept.
sum=$(cat "$here/init" "$0" | sha256sum | cut -d' ' -f1)
if [ -f "$out" ] && [ "$(cat "$out.sum" 2>/dev/null)" = "$sum" ]; then
	echo "$out"
	exit 0
fi
busybox=$(command -v busybox || true)
# ldd fails on a static executable, which the initramfs needs (no libc there).
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
	{ echo "initramfs.sh: needs a static busybox (apt-get install busybox-static)" >&2; exit 1; }
ver=$(ls "$kdir/lib/modules")
mods=$kdir/lib/modules/$ver

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$tmp.cpio"' EXIT
mkdir -p "$tmp/bin" "$tmp/lib/modules" "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/mnt" "$tmp/new"
cp "$busybox" "$tmp/bin/busybox"
cp "$here/init" "$tmp/init"
chmod 0755 "$tmp/init"

# Dependencies first, each module once; modules.dep lists a module's
# dependencies transitively, so one level of depth-first suffices per
# name, and the walk is bounded by the depth limit anyway.
awk -v want="9p 9pnet_virtio overlay virtio_pci" '
	function base(p) { sub(/.*\//, "", p); sub(/\.ko(\.[a-z]+)?$/, "", p); gsub(/-/, "_", p); return p }
	{ sub(/:$/, "", $1); name = base($1); path[name] = $1; deps[name] = ""
	  for (i = 2; i <= NF; i++) deps[name] = deps[name] " " base($i) }
	function visit(n, depth,   d, k, i) {
		if (n in done || depth > 32) return
		done[n] = 1
		k = split(deps[n], d, " ")
		for (i = k; i >= 1; i--) visit(d[i], depth + 1)
		print path[n]
	}
	END { k = split(want, w, " "); for (i = 1; i <= k; i++) if (w[i] in path) visit(w[i], 0) }
' "$mods/modules.dep" >"$tmp/order"
: >"$tmp/lib/modules/order"
while read -r m; do
	b=$(basename "$m")
	case $b in
	*.ko.xz) xz -dc "$mods/$m" >"$tmp/lib/modules/${b%.xz}"; b=${b%.xz} ;;
	*.ko.zst) zstd -qdc "$mods/$m" >"$tmp/lib/modules/${b%.zst}"; b=${b%.zst} ;;
	*) cp "$mods/$m" "$tmp/lib/modules/$b" ;;
	esac
	echo "$b" >>"$tmp/lib/modules/order"
done <"$tmp/order"
echo "$ver" >"$tmp/lib/modules/version"
rm "$tmp/order"
# busybox's own cpio: one package less on the host.  A file, not a pipe, so
# that a failure stops here.
(cd "$tmp" && find . | "$busybox" cpio -o -H newc >"$tmp.cpio" 2>/dev/null)
# Under a name of its own, renamed into place: two builders at once (two
# guests of one kernel) each put a whole file there.
gzip -1 <"$tmp.cpio" >"$out.$$"
rm "$tmp.cpio"
mv "$out.$$" "$out"
echo "$sum" >"$out.sum.$$"
mv "$out.sum.$$" "$out.sum"
echo "$out"
