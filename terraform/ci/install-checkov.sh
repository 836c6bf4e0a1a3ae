#!/bin/bash
# Installs checkov (pinned, with its whole dependency set) into its own virtualenv, by default
# .cache/checkov-venv under the repository: checkov's pins clash with the harness's dependencies.
# Idempotent: does nothing when the venv already matches checkov-requirements.txt.
# Prints the path of the checkov executable on its last line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${CHECKOV_VENV:-$repo/.cache/checkov-venv}
lock=$here/checkov-requirements.txt
python=${PYTHON:-python3}
stamp=$venv/.lock-$(sha256sum "$lock" | cut -c1-16)
if [[ ! -f $stamp || ! -x $venv/bin/checkov ]]; then
  echo "installing checkov into $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$lock" >&2
  touch "$stamp"
fi
echo "$venv/bin/checkov"
