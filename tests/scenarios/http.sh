# shellcheck shell=bash
# Area "http" of tests/run.sh (sourced by it; helpers in tests/lib.sh): who
# may read --http, and whether a local user can knock it out
# (docs/security.md, "HTTP endpoint"): scenarios httpauth, httpflood.
# The other local user is one each scenario creates and removes.

HTTP_USER=""
HTTP_DIR=""

# http_teardown: remove what http_setup made.
http_teardown() {
	[ -n "$HTTP_USER" ] && userdel "$HTTP_USER" 2>/dev/null
	[ -n "$HTTP_DIR" ] && rm -rf "$HTTP_DIR"
	HTTP_USER="" HTTP_DIR=""
	trap cleanup EXIT
}

# http_setup SCENARIO: a user that is not root (HTTP_USER) and a directory it
# may enter (HTTP_DIR: $TMP is root's alone), for the unix sockets; removed by
# http_teardown, or at exit if the run is interrupted.
http_setup() {
	HTTP_USER=ht-http-$$
	if ! useradd -M -s /usr/sbin/nologin "$HTTP_USER" 2>"$TMP/useradd.err"; then
		fail "$1: useradd $HTTP_USER (the other local user)" "$(cat "$TMP/useradd.err")"
		HTTP_USER=""
		return 1
	fi
	trap 'http_teardown; cleanup' EXIT
	HTTP_DIR=$(mktemp -d /tmp/heaptrace-http.XXXXXX) && chmod 755 "$HTTP_DIR"
	# A token only root can read.
	head -c 32 /dev/urandom | base64 >"$TMP/http.tok"
	chmod 600 "$TMP/http.tok"
	HTTP_TOKEN=$(cat "$TMP/http.tok")
}

# http_get KEY WHO CURL-ARG...: curl as WHO (root or HTTP_USER), at most 5 s.
# KEY.body: the body; KEY.cerr: curl -v; KEY.code: the status ("000": no
# answer); KEY.time: seconds.
http_get() {
	local key=$1 who=$2 run=() line
	shift 2
	[ "$who" = root ] || run=(runuser -u "$who" --)
	# The body goes to a file of root's shell: the user could not write in $TMP.
	"${run[@]}" curl -sv --max-time 5 -w '%{stderr}curl-result %{http_code} %{time_total}\n' "$@" \
		>"$TMP/$key.body" 2>"$TMP/$key.cerr" </dev/null
	line=$(grep '^curl-result ' "$TMP/$key.cerr" | tail -1)
	read -r _ HTTP_CODE HTTP_TIME <<<"${line:-x 000 99}"
	echo "$HTTP_CODE" >"$TMP/$key.code"
	echo "$HTTP_TIME" >"$TMP/$key.time"
}

# http_expect KEY CODE [IO IB AO AB]: the last http_get answered CODE, with a
# pprof text profile holding that record for 200; else a diagnostic.
http_expect() {
	local key=$1 code=$2
	if [ "$(cat "$TMP/$key.code")" != "$code" ]; then
		echo "status $(cat "$TMP/$key.code"), want $code"
		grep -E '^[*<] ' "$TMP/$key.cerr" | head -4
		return
	fi
	if [ "$code" = 200 ] && [ $# -ge 6 ] && ! pprof_has_record "$TMP/$key.body" "$3" "$4" "$5" "$6"; then
		echo "no record $3: $4 [$5: $6] (leak_fn) in: $(head -2 "$TMP/$key.body")"
	fi
	if [ "$code" = 401 ]; then
		grep -q 'heap profile' "$TMP/$key.body" && echo "a 401 with a profile in it"
		grep -qi '^< WWW-Authenticate: Bearer realm="heaptrace"' "$TMP/$key.cerr" ||
			echo "no 'WWW-Authenticate: Bearer realm=\"heaptrace\"' header"
	fi
}

# http_attach KEY NLISTEN ARG...: t_leaker, then "heaptrace -v ARG... -p PID"
# in the background; waits until NLISTEN listeners serve, then runs one leak
# step (leak_fn 3 x 12345 kept, churn 2 x 777 freed: "3: 37035 [3: 37035]"
# for leak_fn).  Sets HTTP_TP, HTTP_HP (the timeout wrapper), HTTP_PID
# (heaptrace), HTTP_PORT (the first TCP port).  Returns 1 after a failure.
http_attach() {
	local key=$1 n=$2 i
	shift 2
	mkfifo "$TMP/$key.fifo"
	"$TB/t_leaker" "$TMP/$key.fifo" >"$TMP/$key.target" 2>&1 &
	HTTP_TP=$!
	if ! wait_for "$TMP/$key.target" '^ready$' 10 "$HTTP_TP"; then
		fail "$key: t_leaker starts" "$(cat "$TMP/$key.target")"
		kill_tree "$HTTP_TP"
		return 1
	fi
	ht_bg "$key" -v "$@" -p "$HTTP_TP"
	HTTP_HP=$HPID
	for i in $(seq 300); do
		[ "$(grep -c '^heaptrace: serving ' "$TMP/$key.err")" -ge "$n" ] && break
		kill -0 "$HTTP_HP" 2>/dev/null || break
		sleep 0.1
	done
	HTTP_PID=$(pgrep -P "$HTTP_HP" | head -1)
	HTTP_PORT=$(sed -n 's|^heaptrace: serving .* on https\{0,1\}://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/$key.err" | head -1)
	if [ "$(grep -c '^heaptrace: serving ' "$TMP/$key.err")" != "$n" ] || [ -z "$HTTP_PID" ]; then
		fail "$key: heaptrace -v $(rel "$*") -p PID serves $n listeners" "$(ctx "$key")"
		kill_tree "$HTTP_HP" "$HTTP_TP"
		return 1
	fi
	if ! http_send "$TMP/$key.fifo" leak || ! wait_for "$TMP/$key.target" '^step 1$' 10 "$HTTP_TP"; then
		fail "$key: t_leaker runs a leak step" "$(cat "$TMP/$key.target")"
		kill_tree "$HTTP_HP" "$HTTP_TP"
		return 1
	fi
	return 0
}

# http_detach KEY: SIGINT to heaptrace (exit 0 wanted), then the target ends.
# Diagnostic in HTTP_DIAG.
http_detach() {
	local key=$1
	HTTP_DIAG=""
	kill -INT "$HTTP_PID" 2>/dev/null
	ht_bg_wait "$key" "$HTTP_HP" 15
	[ "$(cat "$TMP/$key.rc")" = 0 ] || HTTP_DIAG+="heaptrace exit status $(cat "$TMP/$key.rc"), want 0"$'\n'
	http_send "$TMP/$key.fifo" quit
	wait_exit "$HTTP_TP" 10 || kill_tree "$HTTP_TP"
}

# http_send FIFO LINE: a command line for t_leaker (bounded: the target may
# have died, and an open for writing with no reader blocks).
http_send() {
	# shellcheck disable=SC2016
	timeout 10 bash -c 'echo "$2" >"$1"' _ "$1" "$2"
}

# The socket file: "MODE UID GID TYPE".
http_stat() { stat -c '%a %u %g %F' "$1" 2>&1; }

# ---------------------------------------------------------------------------
# Access: a bearer token on every listener, a unix socket only its owner can
# open, TLS; the warning for an open TCP port; bad token files and socket
# paths refused.
scenario_httpauth() {
	http_setup httpauth || return
	local uid gid
	uid=$(id -u "$HTTP_USER") gid=$(id -g "$HTTP_USER")
	httpauth_token
	httpauth_tls "$uid" "$gid"
	httpauth_owner "$uid" "$gid"
	httpauth_files
	http_teardown
}

# TCP and a unix socket, one token.
httpauth_token() {
	local key=httpauth sock=$HTTP_DIR/a.sock d url k bad line
	http_attach $key 2 --http 127.0.0.1:0 --http "unix:$sock" --http-token "$TMP/http.tok" || return
	url=http://127.0.0.1:$HTTP_PORT

	http_get httpauth_u0 "$HTTP_USER" "$url/debug/pprof/heap?debug=1"
	report "httpauth: TCP, the other user without the token: 401, no profile" "$(http_expect httpauth_u0 401)"
	d=""
	for k in "heap?debug=1" "allocs" "" ; do
		http_get httpauth_r0 root "$url/debug/pprof/$k"
		d+=$(http_expect httpauth_r0 401 | sed "s|^|/debug/pprof/$k: |")
	done
	http_get httpauth_r0 root "$url/metrics"
	d+=$(http_expect httpauth_r0 401 | sed "s|^|/metrics: |")
	report "httpauth: TCP, root without the token: 401 for /debug/pprof/heap, allocs, the index and /metrics" "$d"
	# The same length, the last character changed; the right token under another scheme.
	bad=${HTTP_TOKEN%?}$([ "${HTTP_TOKEN: -1}" = A ] && echo B || echo A)
	http_get httpauth_r1 root -H "Authorization: Bearer $bad" "$url/debug/pprof/heap?debug=1"
	d=$(http_expect httpauth_r1 401 | sed 's/^/one wrong character: /')
	http_get httpauth_r1 root -H "Authorization: Basic $HTTP_TOKEN" "$url/debug/pprof/heap?debug=1"
	d+=$(http_expect httpauth_r1 401 | sed 's/^/scheme Basic: /')
	http_get httpauth_r1 root -H "Authorization: Bearer ${HTTP_TOKEN}x" "$url/debug/pprof/heap?debug=1"
	d+=$(http_expect httpauth_r1 401 | sed 's/^/the token and one more character: /')
	report "httpauth: TCP, a wrong token, the token with scheme Basic, the token plus a character: 401" "$d"

	# A body that never ends holds nothing: the answer comes with the
	# headers, and heaptrace closes the connection (not the client).
	# shellcheck disable=SC2016
	line=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc" >&3
		head -1 <&3; cat <&3 >/dev/null' _ "$HTTP_PORT" 2>/dev/null | tr -d '\r')
	report "httpauth: a body that never comes: 'HTTP/1.1 401 Unauthorized' at once, then heaptrace closes" \
		"$([ "$line" = "HTTP/1.1 401 Unauthorized" ] || echo "first line '$line' (or still open after 5 s)")"

	http_get httpauth_r2 root -H "Authorization: Bearer $HTTP_TOKEN" "$url/debug/pprof/heap?debug=1"
	report "httpauth: TCP, root with the token: 200, the profile (leak_fn 3: 37035 [3: 37035])" \
		"$(http_expect httpauth_r2 200 3 37035 3 37035)"
	http_get httpauth_u2 "$HTTP_USER" -H "authorization: bearer $HTTP_TOKEN" "$url/debug/pprof/heap?debug=1"
	report "httpauth: TCP, the other user with the token (scheme in lower case): 200, the profile" \
		"$(http_expect httpauth_u2 200 3 37035 3 37035)"

	d=""
	[ "$(http_stat "$sock")" = "600 0 0 socket" ] || d="got '$(http_stat "$sock")'"
	report "httpauth: --http unix:PATH as root: mode 600, owner root (uid 0, gid 0), a socket" "$d"
	http_get httpauth_s1 root --unix-socket "$sock" -H "Authorization: Bearer $HTTP_TOKEN" \
		"http://heaptrace/debug/pprof/heap?debug=1"
	report "httpauth: unix socket, root with the token: 200, the profile" "$(http_expect httpauth_s1 200 3 37035 3 37035)"
	http_get httpauth_s0 root --unix-socket "$sock" "http://heaptrace/metrics"
	report "httpauth: unix socket, root without the token: 401 (the token holds on every listener)" \
		"$(http_expect httpauth_s0 401)"
	http_get httpauth_su "$HTTP_USER" --unix-socket "$sock" -H "Authorization: Bearer $HTTP_TOKEN" \
		"http://heaptrace/debug/pprof/heap?debug=1"
	d=""
	[ "$(cat "$TMP/httpauth_su.code")" = 000 ] || d+="status $(cat "$TMP/httpauth_su.code"), want no answer"$'\n'
	grep -q 'Permission denied' "$TMP/httpauth_su.cerr" ||
		d+="curl does not say 'Permission denied': $(grep -m2 '^\*' "$TMP/httpauth_su.cerr")"$'\n'
	report "httpauth: unix socket, the other user, even with the token: EACCES (Permission denied)" "$d"

	# Another heaptrace on the same socket is refused; the first keeps it.
	ht httpauth_live --http "unix:$sock" -- "$TB/t_pprof"
	d=$(one_line_diag httpauth_live)
	[ "$RC" = 1 ] || d+="exit status $RC, want 1"$'\n'
	grep -q "unix:$sock: another server is listening on it" "$TMP/httpauth_live.err" ||
		d+="stderr: $(head -1 "$TMP/httpauth_live.err")"$'\n'
	http_get httpauth_s2 root --unix-socket "$sock" -H "Authorization: Bearer $HTTP_TOKEN" "http://heaptrace/metrics"
	d+=$(http_expect httpauth_s2 200)
	report "httpauth: a second heaptrace on the socket in use: one line, exit 1; the first still answers" "$d"

	d=$(grep '^heaptrace: warning' "$TMP/$key.err")
	report "httpauth: with --http-token, no warning" "$d"
	http_detach $key
	d=$HTTP_DIAG
	[ -e "$sock" ] && d+="the socket is still there after the exit: $(http_stat "$sock")"$'\n'
	report "httpauth: SIGINT: heaptrace exits 0 and removes its socket" "$d${d:+$(ctx $key)}"
}

# TLS on TCP with the token, and a unix socket left behind by a SIGKILL.
httpauth_tls() {
	local key=httpauth_tls d url
	if ! command -v openssl >/dev/null; then
		fail "httpauth: TLS: openssl (to make a certificate) is not installed" ""
		return
	fi
	if ! openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/http.key" -out "$TMP/http.crt" -days 2 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >"$TMP/openssl.err" 2>&1; then
		fail "httpauth: TLS: openssl makes a certificate" "$(cat "$TMP/openssl.err")"
		return
	fi
	chmod 600 "$TMP/http.key"
	# The certificate is public: the other user's curl reads it too.
	install -m 644 "$TMP/http.crt" "$HTTP_DIR/http.crt"
	# Launched, so that a SIGKILL takes the target too.
	mkfifo "$TMP/$key.fifo"
	ht_bg $key -v -o "$TMP/$key.heap" --http 127.0.0.1:0 --http "unix:$HTTP_DIR/c.sock" \
		--http-token "$TMP/http.tok" --http-cert "$TMP/http.crt" --http-key "$TMP/http.key" \
		-- "$TB/t_leaker" "$TMP/$key.fifo"
	if ! wait_for "$TMP/$key.tout" '^ready$' 30 "$HPID" ||
		[ "$(grep -c '^heaptrace: serving ' "$TMP/$key.err")" != 2 ]; then
		fail "httpauth: TLS: heaptrace --http-cert --http-key serves" "$(ctx $key)"
		kill_tree "$HPID"
		return
	fi
	http_send "$TMP/$key.fifo" leak
	wait_for "$TMP/$key.tout" '^step 1$' 10 "$HPID"
	url=https://127.0.0.1:$(sed -n 's|^heaptrace: serving .* on https://127\.0\.0\.1:\([0-9]*\)/ (token required)$|\1|p' "$TMP/$key.err")
	http_get httpauth_t1 root --cacert "$TMP/http.crt" -H "Authorization: Bearer $HTTP_TOKEN" \
		"$url/debug/pprof/heap?debug=1"
	report "httpauth: TLS: https with the certificate and the token: 200, the profile" \
		"$(http_expect httpauth_t1 200 3 37035 3 37035)"
	http_get httpauth_t0 "$HTTP_USER" --cacert "$HTTP_DIR/http.crt" "$url/debug/pprof/heap?debug=1"
	report "httpauth: TLS: the other user without the token: 401" "$(http_expect httpauth_t0 401)"
	http_get httpauth_tp root -H "Authorization: Bearer $HTTP_TOKEN" "http${url#https}/debug/pprof/heap?debug=1"
	report "httpauth: TLS: plain http to the TLS port: no HTTP answer" \
		"$([ "$(cat "$TMP/httpauth_tp.code")" = 000 ] || echo "status $(cat "$TMP/httpauth_tp.code")")"
	# SIGKILL: nothing removes the socket; the next run must replace it (httpauth_owner).
	kill_tree "$HPID"
	report "httpauth: after a SIGKILL the old socket stays behind (for the next run to replace)" \
		"$([ -S "$HTTP_DIR/c.sock" ] || echo "no socket at $HTTP_DIR/c.sock")"
}

# Under sudo: the socket is the invoking user's; two TCP ports without a token: one warning.
httpauth_owner() {
	local uid=$1 gid=$2 key=httpauth_sudo sock=$HTTP_DIR/c.sock d
	SUDO_UID=$uid SUDO_GID=$gid http_attach $key 3 --http 127.0.0.1:0 --http 127.0.0.1:0 --http "unix:$sock" || return
	d=""
	[ "$(http_stat "$sock")" = "600 $uid $gid socket" ] || d="got '$(http_stat "$sock")', want '600 $uid $gid socket'"
	report "httpauth: under sudo (SUDO_UID, SUDO_GID): the socket (replacing a killed run's) is mode 600, the user's" "$d"
	http_get httpauth_o1 "$HTTP_USER" --unix-socket "$sock" "http://heaptrace/debug/pprof/heap?debug=1"
	report "httpauth: under sudo: the invoking user reads the profile on the socket: 200" \
		"$(http_expect httpauth_o1 200 3 37035 3 37035)"
	d=""
	[ "$(grep -c 'warning' "$TMP/$key.err")" = 1 ] || d+="$(grep -c 'warning' "$TMP/$key.err") lines say warning, want 1"$'\n'
	grep -qx 'heaptrace: warning: --http 127.0.0.1:0 without --http-token: any local user can read the traced process'"'"'s heap profiles, memory map and command line (docs/security.md)' \
		"$TMP/$key.err" || d+="no warning line naming --http 127.0.0.1:0 and --http-token"$'\n'
	report "httpauth: two TCP listeners without --http-token: the warning, exactly once" "$d${d:+$(ctx $key)}"
	http_get httpauth_o2 "$HTTP_USER" "http://127.0.0.1:$HTTP_PORT/debug/pprof/heap?debug=1"
	report "httpauth: without a token, what the warning says: any user reads TCP (200)" "$(http_expect httpauth_o2 200)"
	http_detach $key
	report "httpauth: under sudo: SIGINT: exit 0, the socket removed" \
		"$HTTP_DIAG$([ -e "$sock" ] && echo "still there: $(http_stat "$sock")")"
}

# Bad token and key files, bad socket paths: one line, and nothing replaced.
httpauth_files() {
	local d f args want i=0 line
	cp "$TMP/http.tok" "$TMP/tok.644" && chmod 644 "$TMP/tok.644"
	cp "$TMP/http.tok" "$TMP/tok.640" && chmod 640 "$TMP/tok.640"
	cp "$TMP/http.tok" "$TMP/tok.user" && chown "$HTTP_USER" "$TMP/tok.user"
	echo 0123456789abcde >"$TMP/tok.short" && chmod 600 "$TMP/tok.short"
	printf 'a b c d e f g h i j\n' >"$TMP/tok.space" && chmod 600 "$TMP/tok.space"
	mkfifo -m 600 "$TMP/tok.fifo"
	cp "$TMP/http.key" "$TMP/key.644" 2>/dev/null && chmod 644 "$TMP/key.644"
	# "ARGS|what stderr says"
	for line in \
		"--http :0 --http-token $TMP/tok.644|--http-token $TMP/tok.644: mode 0644 lets group or other users read or change it" \
		"--http :0 --http-token $TMP/tok.640|--http-token $TMP/tok.640: mode 0640 lets group or other users" \
		"--http :0 --http-token $TMP/tok.user|--http-token $TMP/tok.user: owned by uid $(id -u "$HTTP_USER"), not by root or you" \
		"--http :0 --http-token $TMP/tok.fifo|--http-token $TMP/tok.fifo: not a regular file" \
		"--http :0 --http-token $TMP/tok.short|the token must be one line of 16 to 1024 characters" \
		"--http :0 --http-token $TMP/tok.space|the token must be one line of 16 to 1024 characters" \
		"--http-token $TMP/http.tok|--http-token configures --http, which is not given" \
		"--http :0 --http-cert $TMP/http.crt|--http-cert needs --http-key" \
		"--http :0 --http-cert $TMP/http.crt --http-key $TMP/key.644|--http-key $TMP/key.644: mode 0644" \
		"--http unix:$HTTP_DIR/x.sock --http-cert $TMP/http.crt --http-key $TMP/http.key|--http-cert: TLS is for TCP ports"; do
		i=$((i + 1))
		read -r -a args <<<"${line%%|*}"
		want=${line#*|}
		ht "httpauth_bad$i" "${args[@]}" -- "$TB/t_pprof"
		d=$(one_line_diag "httpauth_bad$i")$(rc_diag "httpauth_bad$i" 2)
		grep -qF -- "$want" "$TMP/httpauth_bad$i.err" || d+="stderr does not say '$want'"$'\n'
		report "httpauth: $(rel "${line%%|*}"): exit 2, one line: '$(rel "$want")'" "$d"
	done

	# Paths that are not sockets are never replaced.
	echo precious >"$HTTP_DIR/file"
	ln -s "$HTTP_DIR/file" "$HTTP_DIR/link"
	for f in file link; do
		ht "httpauth_path_$f" --http "unix:$HTTP_DIR/$f" -- "$TB/t_pprof"
		d=$(one_line_diag "httpauth_path_$f")
		[ "$RC" = 1 ] || d+="exit status $RC, want 1"$'\n'
		grep -qF "unix:$HTTP_DIR/$f: the path exists and is not a socket: not replacing it" "$TMP/httpauth_path_$f.err" ||
			d+="stderr: $(head -1 "$TMP/httpauth_path_$f.err")"$'\n'
		[ "$(cat "$HTTP_DIR/file" 2>&1)" = precious ] && [ -L "$HTTP_DIR/link" ] || d+="the file or the link changed"$'\n'
		report "httpauth: --http unix:PATH on an existing $f: one line, exit 1, left as it was" "$d"
	done
}

# ---------------------------------------------------------------------------
# Flood: the other user holds 1,100 connections whose requests never end
# (build/tests/t_flood, reconnecting as soon as a connection is dropped):
# first a slowloris flood (the request line, then a header byte every
# 0.5 s), then a silent one (connections that send nothing); meanwhile root
# scrapes over the unix socket and over TCP with the token.
scenario_httpflood() {
	http_setup httpflood || return
	httpflood_run
	http_teardown
}

# Threads and descriptors of a process: "THREADS FDS" (builtins only: it
# samples during the flood, when every fork is slow).
http_load() {
	local k v rest t="" fds
	while read -r k v rest; do
		[ "$k" = Threads: ] && t=$v
	done <"/proc/$1/status"
	fds=("/proc/$1/fd/"*)
	echo "$t ${#fds[@]}"
}

httpflood_run() {
	local key=httpflood sock=$HTTP_DIR/f.sock d i
	if [ ! -x "$TB/t_flood" ]; then
		fail "httpflood: $TB/t_flood not built (make test-targets)" ""
		return
	fi
	http_attach $key 2 --http 127.0.0.1:0 --http "unix:$sock" --http-token "$TMP/http.tok" || return
	HTTP_URL=http://127.0.0.1:$HTTP_PORT HTTP_SOCK=$sock
	# One scrape first: the symbolizer's files are then open for good.
	http_get httpflood_w root --unix-socket "$sock" -H "Authorization: Bearer $HTTP_TOKEN" \
		"http://heaptrace/debug/pprof/heap?debug=1"
	read -r HTTP_T0 HTTP_F0 <<<"$(http_load "$HTTP_PID")"
	# The main thread, 2 epoll threads for TCP, 1 for the unix socket, the
	# profile thread, the one that adds live-map levels (tracer.c), and on
	# the fast path in exact mode the event ring's drain (tracer/drain.c).
	local want=7
	{ [ -n "${HT_TEST_NO_INJECT:-}" ] || [ "${HEAPTRACE_BATCH:-}" = 0 ]; } && want=6
	report "httpflood: heaptrace with a TCP and a unix listener runs $want threads" \
		"$([ "$HTTP_T0" = $want ] || echo "Threads: $HTTP_T0")"

	# The other user cannot even open the unix socket: the flood only reaches TCP.
	runuser -u "$HTTP_USER" -- "$TB/t_flood" "unix:$sock" 10 1 >"$TMP/httpflood_unix.out" 2>&1
	i=$?
	d=""
	[ "$i" = 1 ] || d+="t_flood exit status $i, want 1 (no connection)"$'\n'
	grep -q 'opened=0 .*first_error=Permission denied$' "$TMP/httpflood_unix.out" ||
		d+="$(cat "$TMP/httpflood_unix.out")"$'\n'
	report "httpflood: the other user's flood on the unix socket: no connection (Permission denied)" "$d"

	httpflood_phase slowloris 500 5 && httpflood_phase silent 0 3

	http_detach $key
	d=$HTTP_DIAG
	grep -qE "^heaptrace: http: 127\.0\.0\.1:0: [0-9]+ connections without a complete request were dropped" "$TMP/$key.err" ||
		d+="no -v line on dropped connections"$'\n'
	report "httpflood: heaptrace exits 0 on SIGINT and says how many connections it dropped" "$d${d:+$(ctx $key)}"
}

# httpflood_phase NAME MS N: a flood of 1,100 connections on TCP ("t_flood
# ... 1100 60 MS", ended by SIGTERM after N scrapes on each listener) during
# which the scrapes are answered in < 3 s and threads and descriptors stay
# bounded, and after which everything is as before.  1 if the flood did not
# run.
httpflood_phase() {
	local name=$1 ms=$2 n=$3 p=httpflood_$1 d fp sp i k lat="" max_t max_f line started took
	local auth="Authorization: Bearer $HTTP_TOKEN" t0=$HTTP_T0 f0=$HTTP_F0
	runuser -u "$HTTP_USER" -- "$TB/t_flood" "${HTTP_URL#http://}" 1100 60 "$ms" >"$TMP/$p.out" 2>&1 &
	fp=$!
	# Threads and descriptors every 0.1 s while the flood lasts.
	(while kill -0 "$fp" 2>/dev/null; do http_load "$HTTP_PID"; sleep 0.1; done) >"$TMP/$p.load" &
	sp=$!
	started=$SECONDS
	if ! wait_for "$TMP/$p.out" '^flooding$' 10 "$fp"; then
		fail "httpflood: $name: t_flood opens its 1,100 connections" "$(cat "$TMP/$p.out")"
		kill_tree "$fp" "$sp"
		return 1
	fi
	# Only the scrapes while it lasts (every fork is slow then); their checks after.
	for i in $(seq "$n"); do
		http_get "${p}_s$i" root --unix-socket "$HTTP_SOCK" -H "$auth" "http://heaptrace/debug/pprof/heap?debug=1"
		http_get "${p}_t$i" root -H "$auth" "$HTTP_URL/debug/pprof/heap?debug=1"
	done
	took=$((SECONDS - started))
	d=""
	# runuser's child: the flood itself.
	i=$(pgrep -P "$fp" -x t_flood)
	[ -n "$i" ] && kill -TERM "$i" || d+="the flood ended before the last scrape (after $took s)"$'\n'
	for i in $(seq "$n"); do
		for k in s t; do
			d+=$(http_expect "${p}_$k$i" 200 3 37035 3 37035 | sed "s/^/scrape $k$i: /")
			HTTP_TIME=$(cat "$TMP/${p}_$k$i.time")
			awk -v t="$HTTP_TIME" 'BEGIN { exit !(t < 3) }' || d+="scrape $k$i took $HTTP_TIME s"$'\n'
			lat+=" $k$i=$HTTP_TIME"
		done
	done
	echo "# httpflood: $name: seconds per scrape (s: unix socket, t: TCP):$lat (within $took s of the start)"
	report "httpflood: $name flood: $n scrapes on the unix socket and $n on TCP with the token: 200 in < 3 s each" "$d"

	wait_exit "$fp" 10 || kill_tree "$fp"
	wait "$sp" 2>/dev/null
	# Right after: at once.
	http_get "${p}_after" root -H "$auth" "$HTTP_URL/debug/pprof/heap?debug=1"
	d=$(http_expect "${p}_after" 200 3 37035 3 37035)
	awk -v t="$HTTP_TIME" 'BEGIN { exit !(t < 1) }' || d+="took $HTTP_TIME s"$'\n'
	report "httpflood: $name: right after the flood, a TCP scrape: 200 in < 1 s ($HTTP_TIME s)" "$d"

	line=$(grep '^t_flood:' "$TMP/$p.out")
	echo "# httpflood: $name: $line"
	d=""
	[[ $line =~ opened=([0-9]+)\ closed_by_server=([0-9]+) ]] || d+="no summary: $(cat "$TMP/$p.out")"$'\n'
	[ "${BASH_REMATCH[1]:-0}" -ge 1100 ] || d+="fewer than 1100 connections opened"$'\n'
	[ "${BASH_REMATCH[2]:-0}" -ge 100 ] || d+="the server closed fewer than 100: it never had to make room"$'\n'
	report "httpflood: $name: the flood was real: at least 1,100 connections made, 100 dropped by heaptrace" "$d"

	max_t=$(awk 'NF == 2 && $1 > m { m = $1 } END { print m + 0 }' "$TMP/$p.load")
	max_f=$(awk 'NF == 2 && $2 > m { m = $2 } END { print m + 0 }' "$TMP/$p.load")
	echo "# httpflood: $name: before: $t0 threads, $f0 descriptors; during: at most $max_t threads, $max_f descriptors ($(grep -c . "$TMP/$p.load") samples)"
	report "httpflood: $name: threads during the flood: $t0, as before it (no thread per connection)" \
		"$([ "$max_t" = "$t0" ] || echo "at most $max_t threads, $t0 before")"
	# 64 connections per listener at most (CONN_HARD in serve/http.c), and a
	# few for the scrapes (a unix connection, /proc files while profiling);
	# and the flood did take most of the room: at least 40 of them.
	d=""
	[ "$max_f" -le $((f0 + 64 + 4)) ] || d+="at most $max_f descriptors, more than $f0 + 64 + 4"$'\n'
	[ "$max_f" -ge $((f0 + 40)) ] || d+="at most $max_f descriptors: the flood never held 40 connections"$'\n'
	report "httpflood: $name: descriptors during the flood: $f0 before, at most $f0 + 64 + 4" "$d"

	d=""
	for i in $(seq 30); do
		read -r max_t max_f <<<"$(http_load "$HTTP_PID")"
		[ "$max_t $max_f" = "$t0 $f0" ] && break
		sleep 0.1
	done
	[ "$max_t $max_f" = "$t0 $f0" ] || d="$max_t threads, $max_f descriptors 3 s after, want $t0 and $f0"
	report "httpflood: $name: within 3 s of the flood's end: the threads and descriptors of before ($t0, $f0)" "$d"
	return 0
}
