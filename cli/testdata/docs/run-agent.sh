#!/bin/sh
# The agent of run.yaml: it changes the workspace, so that stratum diff
# RUN STEP has a patch to print.
cat >/dev/null
printf 'hello, world\n' > greeting.txt
echo '{"v": "fixed"}'
