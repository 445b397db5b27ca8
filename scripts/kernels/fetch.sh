#!/bin/sh
# fetch.sh SERIES: Debian's newest amd64 kernel of SERIES (6.1, 6.12), fetched
# with apt-get download and unpacked into the cache, never installed: the
# guest kernels of `make test-kernels` must not touch this machine's /boot.
# Prints the unpacked directory.  Idempotent: a kernel already unpacked is
# not fetched again; without network the newest one in the cache is used.
set -eu
series=${1:?usage: fetch.sh SERIES (6.1, 6.12)}
cache=${HEAPTRACE_KERNELS:-/var/cache/heaptrace-kernels}
mkdir -p "$cache"
cd "$cache"

# The amd64 flavour: the cloud one has no 9p modules, rt is not what people
# run.  6.1 is named 6.1.0-ABI, 6.12 on bookworm 6.12.N+deb12.
esc=$(printf '%s' "$series" | sed 's/\./\\./g')
re="^linux-image-$esc\\.[0-9]+(-[0-9]+)?(\\+deb[0-9]+)?-amd64-unsigned\$"
newest() { apt-cache search --names-only "$re" | cut -d' ' -f1 | sort -V | tail -n 1; }

pkg=$(newest)
if [ -z "$pkg" ]; then
	# Indexes never fetched, or too old to list this series.
	apt-get update -qq >&2 || true
	pkg=$(newest)
fi
if [ -n "$pkg" ] && [ ! -f "$pkg/.unpacked" ]; then
	if ! ls "$pkg"_*.deb >/dev/null 2>&1; then
		# apt's sandbox user cannot write here; root downloads directly.
		apt-get download -q "$pkg" >&2 2>&1 || {
			echo "fetch.sh: apt-get download $pkg failed" >&2
			pkg=""
		}
	fi
fi
if [ -n "$pkg" ] && [ ! -f "$pkg/.unpacked" ]; then
	rm -rf "$pkg.tmp"
	dpkg-deb -x "$(ls "$pkg"_*.deb | sort -V | tail -n 1)" "$pkg.tmp"
	# modules.dep is made at install time; the initramfs's modules need it.
	depmod -b "$cache/$pkg.tmp" "$(ls "$pkg.tmp/lib/modules")"
	: >"$pkg.tmp/.unpacked"
	rm -rf "$pkg"
	mv "$pkg.tmp" "$pkg"
fi
if [ -z "$pkg" ]; then
	# Offline, or the suite is gone from the sources: what the cache holds.
	pkg=$(ls -d linux-image-"$series".*-amd64-unsigned 2>/dev/null | grep -E "$re" | sort -V | tail -n 1 || true)
	if [ -z "$pkg" ] || [ ! -f "$pkg/.unpacked" ]; then
		echo "fetch.sh: no linux-image-$series.*-amd64-unsigned in apt's indexes nor in $cache." >&2
		echo "fetch.sh: on Debian 12, 6.1 comes from bookworm and bookworm-security, 6.12 from" >&2
		echo "fetch.sh: bookworm-security (linux-6.12, +deb12) or bookworm-backports: add the suite to /etc/apt/sources.list.d/ and apt-get update." >&2
		exit 1
	fi
	echo "fetch.sh: using $pkg from the cache" >&2
fi
echo "$cache/$pkg"
