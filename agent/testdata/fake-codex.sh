#!/bin/sh
# A stand-in for the codex CLI, installed as "codex" first on PATH by the
# tests. It records its arguments (NUL-separated) and stdin, checks the
# `codex exec` flags Stratum relies on, writes FAKE_LAST_MESSAGE (a file,
# if set) to the --output-last-message path, prints the JSONL events of
# the file FAKE_EVENTS (if set) and exits FAKE_EXIT (0). FAKE_MODE=hang
# prints FAKE_EVENTS, then waits with a background sleep whose pid goes to
# FAKE_PIDFILE.
: > "$FAKE_ARGS"
for a in "$@"; do printf '%s\0' "$a" >> "$FAKE_ARGS"; done
cat > "$FAKE_STDIN"

if [ "$1" != "exec" ]; then
	echo "fake codex: want the exec subcommand, got '$1'" >&2
	exit 64
fi
shift
json= skip= sandbox= last=
while [ $# -gt 1 ]; do
	case $1 in
	--json) json=1 ;;
	--skip-git-repo-check) skip=1 ;;
	--sandbox) sandbox=$2; shift ;;
	-C) [ -d "$2" ] || { echo "fake codex: -C $2 is not a directory" >&2; exit 64; }; shift ;;
	--output-last-message) last=$2; shift ;;
	--model) shift ;;
	-c)
		case $2 in
		model_reasoning_effort=*) ;;
		*) echo "fake codex: unexpected -c '$2'" >&2; exit 64 ;;
		esac
		shift
		;;
	*) echo "fake codex: unexpected argument '$1'" >&2; exit 64 ;;
	esac
	shift
done
if [ -z "$json" ] || [ -z "$skip" ] || [ -z "$last" ]; then
	echo "fake codex: missing --json, --skip-git-repo-check or --output-last-message" >&2
	exit 64
fi
case $sandbox in
read-only | workspace-write | danger-full-access) ;;
*) echo "fake codex: bad --sandbox '$sandbox'" >&2; exit 64 ;;
esac

if [ "${FAKE_MODE:-respond}" = hang ]; then
	[ -n "$FAKE_EVENTS" ] && cat "$FAKE_EVENTS"
	sleep 300 &
	echo $! > "$FAKE_PIDFILE"
	wait
fi
[ -n "$FAKE_LAST_MESSAGE" ] && cat "$FAKE_LAST_MESSAGE" > "$last"
[ -n "$FAKE_STDERR" ] && printf '%s\n' "$FAKE_STDERR" >&2
[ -n "$FAKE_EVENTS" ] && cat "$FAKE_EVENTS"
exit "${FAKE_EXIT:-0}"
