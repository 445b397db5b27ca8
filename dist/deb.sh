#!/bin/sh
# heaptrace_VERSION_ARCH.deb from an installed tree (make deb: make install
# DESTDIR=ROOT PREFIX=/usr): the binary stripped, the man page gzipped, the
# copyright file, the changelog, md5sums, and Depends from the libraries
# the binary links (dpkg-shlibdeps).  No debhelper: dpkg-deb alone.
# usage: dist/deb.sh ROOT OUTDIR
set -e
root=$(cd "$1" && pwd) outdir=$2
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/usr/bin/heaptrace
version=$("$bin" --version | sed 's/^heaptrace //')
# The changelog names the version: a package whose changelog says another is a mistake.
clversion=$(dpkg-parsechangelog -l "$top/dist/changelog" -S Version)
if [ "$clversion" != "$version" ]; then
	echo "deb: dist/changelog is at $clversion, heaptrace --version says $version" >&2
	exit 1
fi
arch=$(dpkg --print-architecture)
maintainer=$(dpkg-parsechangelog -l "$top/dist/changelog" -S Maintainer)
year=$(date -u -d "$(dpkg-parsechangelog -l "$top/dist/changelog" -S Date)" +%Y)

# What dh_strip does: no debug info, no .comment or .note in the package.
strip --remove-section=.comment --remove-section=.note "$bin"
gzip -9n "$root/usr/share/man/man8/heaptrace.8"
doc=$root/usr/share/doc/heaptrace
mkdir -p "$doc"
gzip -9nc "$top/dist/changelog" >"$doc/changelog.gz"
{
	echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
	echo "Upstream-Name: heaptrace"
	echo
	echo "Files: *"
	echo "Copyright: $year the heaptrace authors"
	echo "License: GPL-2 or BSD-2-clause"
	echo
	echo "License: GPL-2"
	echo " On Debian systems, the full text of the GNU General Public License"
	echo " version 2 is in /usr/share/common-licenses/GPL-2."
	echo
	echo "License: BSD-2-clause"
	sed -e 's/^/ /' -e 's/^ $/ ./' "$top/LICENSES/BSD-2-Clause.txt"
} >"$doc/copyright"
install -D -m 0644 "$top/dist/lintian-overrides" "$root/usr/share/lintian/overrides/heaptrace"
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr" -type f -exec chmod 0644 {} +
chmod 0755 "$bin"

# Depends: the packages of the libraries heaptrace links, at the versions
# their shlibs and symbols files ask (dpkg-shlibdeps wants a debian/control).
work=$(mktemp -d "${TMPDIR:-/tmp}/heaptrace-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/debian"
printf 'Source: heaptrace\n\nPackage: heaptrace\nArchitecture: any\n' >"$work/debian/control"
mkdir -p "$root/DEBIAN"     # how dpkg-shlibdeps knows the package's root
depends=$(cd "$work" && dpkg-shlibdeps -O "$bin" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

(cd "$root" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<EOC
Package: heaptrace
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: devel
Priority: optional
Description: heap allocation tracer for running Linux processes (eBPF)
 heaptrace traces every heap allocation of a Linux process from outside,
 a running process (-p PID) or a command it launches, with no restart, no
 rebuild and no LD_PRELOAD. A stub it places in the process decides there
 which calls to record; recorded calls reach CO-RE eBPF programs that walk
 the stack and keep per-stack counters in the kernel.
 .
 It writes the pprof heap profile (text or protobuf), collapsed stacks for
 flame graphs, a readable report, an HTML page or an SVG flame graph; it
 serves /debug/pprof/heap while tracing, and gates CI on leaks and peaks.
 Needs root (or CAP_BPF and CAP_PERFMON) and a kernel with BTF.
EOC
chmod 0644 "$root/DEBIAN/control"
mkdir -p "$outdir"
dpkg-deb --root-owner-group -Zxz --build "$root" "$outdir/heaptrace_${version}_$arch.deb"
