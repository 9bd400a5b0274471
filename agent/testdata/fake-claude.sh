#!/bin/sh
# A stand-in for the claude CLI, installed as "claude" first on PATH by the
# tests. It records its arguments (NUL-separated) and stdin, checks the
# flags Stratum relies on, then behaves as FAKE_MODE says:
#   respond (default): print the file FAKE_RESPONSE, exit FAKE_EXIT (0)
#   hang: start a background sleep (pid written to FAKE_PIDFILE) and wait
: > "$FAKE_ARGS"
for a in "$@"; do printf '%s\0' "$a" >> "$FAKE_ARGS"; done
cat > "$FAKE_STDIN"

if [ "$1" != "-p" ]; then
	echo "fake claude: the first argument must be -p, got '$1'" >&2
	exit 64
fi
format=
prev=
for a in "$@"; do
	[ "$prev" = "--output-format" ] && format=$a
	prev=$a
done
if [ "$format" != "json" ]; then
	echo "fake claude: want --output-format json, got '$format'" >&2
	exit 64
fi

[ -n "$FAKE_STDERR" ] && printf '%s\n' "$FAKE_STDERR" >&2
case "${FAKE_MODE:-respond}" in
respond)
	cat "$FAKE_RESPONSE"
	exit "${FAKE_EXIT:-0}"
	;;
hang)
	sleep 300 &
	echo $! > "$FAKE_PIDFILE"
	wait
	;;
esac
