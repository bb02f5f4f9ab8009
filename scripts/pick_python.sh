#!/bin/sh
# Prints the interpreter `make install` builds .venv with: the newest CPython 3.13 / 3.12
# that runs here, else `python3` (3.11 or newer, pyproject's floor).
#
# Why newer is preferred: `make test` measures coverage. On 3.11 coverage.py can only
# trace (sys.settrace), which slows every Python line -- pandas', scikit-learn's and
# Dash's included, though they are not measured (a pandas loop: 2.2x). From 3.12,
# coverage uses sys.monitoring (COVERAGE_CORE=sysmon, set by the Makefile), which stops
# reporting a code object once it has nothing left to record. Measured on 2 cores, same
# hour (bench/suite_speed.py): the suite before on 3.11 11 min 30 s, 1,089 CPU s; after
# on 3.13 9 min 45 s, 855 CPU s; the same tests without coverage on 3.11: 849 CPU s.
#
# Looked for: python3.13 / python3.12 on PATH (a pyenv shim that is not selected fails
# its trial run and is skipped), then pyenv's installed versions (found without pyenv on
# PATH too: $PYENV_ROOT, else ~/.pyenv).
set -u
try() { "$1" -c 'import sys, venv; assert sys.version_info >= (3, 12)' >/dev/null 2>&1; }
for cmd in python3.13 python3.12; do
  if command -v "$cmd" >/dev/null 2>&1 && try "$cmd"; then
    command -v "$cmd"
    exit 0
  fi
done
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
if [ -d "$root/versions" ]; then
  for minor in 13 12; do
    for py in $(ls -d "$root"/versions/3."$minor".*/bin/python3 2>/dev/null | sort -rV); do
      if try "$py"; then
        echo "$py"
        exit 0
      fi
    done
  done
fi
echo python3
