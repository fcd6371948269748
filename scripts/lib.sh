# Sourced by scripts/run and scripts/test: find a Python the bot supports, keep the virtualenv
# built by one and installed from a lock, and skip work whose inputs have not changed.
# Setup messages go to stderr, so that the bot's own output stays clean.
#   PYTHON  the interpreter to build the virtualenv with (default: python3, else the newest
#           python3.X on PATH that is recent enough)
#   VENV    the virtualenv (default: .venv in the clone)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
script="scripts/$(basename "$0")"
venv="${VENV:-$root/.venv}"
[[ "$venv" = /* ]] || venv="$PWD/$venv"
stamps="$venv/.bot-stamps" # what was installed or checked, by content hash
# pyproject's requires-python, e.g. 3.11
needed="$(sed -n 's/^requires-python *= *">= *\([0-9]*\.[0-9]*\)".*/\1/p' "$root/pyproject.toml")"

say() { printf '%s\n' "$*" >&2; }
fail() {
    say "$script: $*"
    exit 1
}

# The folder as the user would type it: relative to where they stand when inside it.
shown() { if [[ "$1" == "$PWD/"* ]]; then printf '%s' "${1#"$PWD/"}"; else printf '%s' "$1"; fi; }

# X.Y of the interpreter $1, or nothing when it does not run.
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }

# at_least X.Y A.B: whether version X.Y is A.B or newer.
at_least() {
    local have want
    IFS=. read -r -a have <<<"$1"
    IFS=. read -r -a want <<<"$2"
    [ "${#have[@]}" -ge 2 ] || return 1
    ((have[0] > want[0] || (have[0] == want[0] && have[1] >= want[1])))
}

# Sets python and python_version: PYTHON if given, else python3, else the newest python3.X.
choose_python() {
    local candidate version first=""
    if [ -n "${PYTHON:-}" ]; then
        command -v "$PYTHON" >/dev/null || fail "PYTHON=$PYTHON: no such command"
        version="$(version_of "$PYTHON")"
        [ -n "$version" ] || fail "PYTHON=$PYTHON does not run"
        at_least "$version" "$needed" ||
            fail "PYTHON=$PYTHON is Python $version; the bot needs Python $needed or newer"
        python="$PYTHON" python_version="$version"
        return
    fi
    for candidate in python3 python3.14 python3.13 python3.12 python3.11; do
        command -v "$candidate" >/dev/null || continue
        version="$(version_of "$candidate")"
        if [ -n "$version" ] && at_least "$version" "$needed"; then
            [ -z "$first" ] || say "$first; using $candidate (Python $version) instead"
            python="$candidate" python_version="$version"
            return
        fi
        [ -n "$first" ] || first="$candidate is Python ${version:-that does not run}"
    done
    fail "the bot needs Python $needed or newer, and ${first:-there is no python3 on PATH}." \
        "Install one and choose it with PYTHON, e.g. PYTHON=python$needed $script${1:+ $1}"
}

# Why the virtualenv cannot be used as it is (nothing when it can).
venv_problem() {
    local version
    version="$(version_of "$venv/bin/python")"
    if [ -z "$version" ]; then
        echo "its Python no longer runs"
    elif ! at_least "$version" "$needed"; then
        echo "it was made by Python $version, and the bot needs $needed or newer"
    elif [ -n "${PYTHON:-}" ] && [ "$version" != "$python_version" ]; then
        echo "it was made by Python $version, and PYTHON=$PYTHON is Python $python_version"
    elif ! compgen -G "$stamps/*.lock" >/dev/null && [ ! -e "$venv/bin/bot" ]; then
        echo "its setup never finished"
    fi
}

# Makes the virtualenv, or rebuilds one that a wrong Python made or whose setup failed.
ensure_venv() {
    local problem=""
    [ -z "${PYTHON:-}" ] || choose_python "${1:-}"
    if [ -e "$venv" ]; then
        problem="$(venv_problem)"
        [ -n "$problem" ] || return 0
        [ -f "$venv/pyvenv.cfg" ] || [ -z "$(ls -A "$venv")" ] ||
            fail "$(shown "$venv") is not a virtualenv; move it away, or choose another with VENV="
    fi
    [ -n "${python:-}" ] || choose_python "${1:-}"
    if [ -n "$problem" ]; then
        say "Rebuilding $(shown "$venv"): $problem"
        rm -rf -- "$venv"
    fi
    say "Creating $(shown "$venv") with $python (Python $python_version) …"
    created=1
    if ! "$python" -m venv "$venv" >&2; then
        rm -rf -- "$venv"
        fail "could not create $(shown "$venv") with $python" \
            "(on Debian or Ubuntu: apt install python$python_version-venv)"
    fi
}

# A hash of the files (and of every file in the folders) named, skipping caches.
content_hash() {
    "$venv/bin/python" -I -S - "$@" <<'EOF'
import hashlib
import sys
from pathlib import Path

digest = hashlib.sha256()
for name in sys.argv[1:]:
    top = Path(name)
    if top.is_dir():
        files = sorted(
            p for p in top.rglob("*")
            if p.is_file()
            and not any(s.startswith(".") or s == "__pycache__" for s in p.relative_to(top).parts)
        )
    else:
        files = [top]
    for path in files:
        digest.update(f"{path}\0".encode())
        digest.update(path.read_bytes() if path.is_file() else b"\0missing\0")
print(digest.hexdigest())
EOF
}

# install LOCK [LOCK...]: installs the first lock and the bot itself, unless the stamp of one of
# the locks named says it was installed, with this pyproject.toml, into this virtualenv.
install() {
    local lock want note=""
    for lock in "$@"; do
        want="$(content_hash "$root/$lock" "$root/pyproject.toml")"
        [ "$(cat "$stamps/$lock" 2>/dev/null)" != "$want" ] || return 0
    done
    lock="$1"
    want="$(content_hash "$root/$lock" "$root/pyproject.toml")"
    if [ -n "${created:-}" ]; then
        note=" (first time: a few minutes)"
    elif [ -e "$stamps/$lock" ]; then
        note=" ($lock or pyproject.toml changed since the last install)"
    fi
    say "Installing dependencies from $lock$note …"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
        -r "$root/$lock" || fail "installing from $lock failed (pip says why above)"
    say "Installing the bot into $(shown "$venv") …"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e "$root" ||
        fail "installing the bot failed (pip says why above)"
    mkdir -p "$stamps"
    printf '%s\n' "$want" >"$stamps/$lock"
}

# check TITLE INPUT... -- COMMAND...: runs COMMAND unless the INPUT files and folders (and the
# tools' lock) are as they were when it last passed. A fresh clone has no stamps: all run.
check() {
    local title="$1" inputs=() want stamp
    shift
    while [ "$1" != -- ]; do
        inputs+=("$1")
        shift
    done
    shift
    stamp="$stamps/check-${title//[^A-Za-z0-9]/-}"
    want="$(content_hash "${inputs[@]}" "$root/requirements-dev.lock")"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        echo "== $title: nothing it checks changed since it passed, skipped"
        return 0
    fi
    echo "== $title"
    "$@"
    mkdir -p "$stamps"
    printf '%s\n' "$want" >"$stamp"
}
