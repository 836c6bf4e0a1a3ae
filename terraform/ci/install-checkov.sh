#!/bin/bash
# Installs checkov (pinned, with its whole dependency set) into its own virtualenv: checkov's pins clash with the
# harness's dependencies.  The virtualenv is named by the lock's hash under CHECKOV_HOME (the Makefile and the tests
# pass the harness's cache, so every clone on the machine shares one; by default .cache/checkov under the
# repository).  Idempotent, and safe beside another clone's install: does nothing when that lock's venv is complete.
# Prints the path of the checkov executable on its last line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
home=${CHECKOV_HOME:-$repo/.cache/checkov}
lock=$here/checkov-requirements.txt
python=${PYTHON:-python3}
venv=$home/$(sha256sum "$lock" | cut -c1-16)
mkdir -p "$home"
exec 9>"$home/.install.lock"
flock 9
if [[ ! -f $venv/.complete || ! -x $venv/bin/checkov ]]; then
  echo "installing checkov into $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$lock" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/checkov"
