#!/bin/sh
# A stand-in for the claude CLI, installed as "claude" first on PATH by the
# tests. It records its arguments (NUL-separated) and stdin, checks the
# flags Stratum relies on (-p first; --output-format stream-json, which the
# real CLI accepts in print mode only with --verbose), then behaves as
# FAKE_MODE says:
#   respond (default): print the file FAKE_RESPONSE, exit FAKE_EXIT (0)
#   hang: print FAKE_RESPONSE if set, start a background sleep (pid written
#         to FAKE_PIDFILE) and wait
: > "$FAKE_ARGS"
for a in "$@"; do printf '%s\0' "$a" >> "$FAKE_ARGS"; done
cat > "$FAKE_STDIN"

if [ "$1" != "-p" ]; then
	echo "fake claude: the first argument must be -p, got '$1'" >&2
	exit 64
fi
format= verbose= prev=
for a in "$@"; do
	[ "$prev" = "--output-format" ] && format=$a
	[ "$a" = "--verbose" ] && verbose=1
	prev=$a
done
if [ "$format" != "stream-json" ]; then
	echo "fake claude: want --output-format stream-json, got '$format'" >&2
	exit 64
fi
if [ -z "$verbose" ]; then
	echo "Error: When using --print, --output-format=stream-json requires --verbose" >&2
	exit 1
fi

[ -n "$FAKE_STDERR" ] && printf '%s\n' "$FAKE_STDERR" >&2
case "${FAKE_MODE:-respond}" in
respond)
	cat "$FAKE_RESPONSE"
	exit "${FAKE_EXIT:-0}"
	;;
hang)
	[ -n "$FAKE_RESPONSE" ] && cat "$FAKE_RESPONSE"
	sleep 300 &
	echo $! > "$FAKE_PIDFILE"
	wait
	;;
esac
