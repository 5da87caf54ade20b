# Shared by the scripts/deps*.sh installers (sourced, not run): idempotent installs that make no
# network call when everything is already there.

# apt_ensure PKG...: installs the Debian packages that are missing.
apt_ensure() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "deps: installing Debian packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# venv_ensure DIR SITE CHECK PKG...: a venv at DIR made from Debian's /usr/bin/python3 (SITE is
# --system-site-packages to see Debian's torch/numpy, or "" to stay apart from them) in which the
# Python snippet CHECK succeeds, installing the pinned PyPI packages PKG... when it does not.
venv_ensure() {
  local dir=$1 site=$2 check=$3
  shift 3
  if [ -x "$dir/bin/python3" ] && "$dir/bin/python3" -c "$check" >/dev/null 2>&1; then
    return 0
  fi
  [ -x "$dir/bin/python3" ] || /usr/bin/python3 -m venv $site "$dir"
  echo "deps: installing into $dir: $*" >&2
  "$dir/bin/pip" install -q --disable-pip-version-check "$@"
  "$dir/bin/python3" -c "$check"
}
