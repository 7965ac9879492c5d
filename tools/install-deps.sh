#!/bin/sh
# Install the Debian packages dcpi needs when they are missing: with apt-get when root,
# otherwise print the exact command and stop. Usage: install-deps.sh PKG...
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "dcpi: installing missing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends $missing >/dev/null ||
        { apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing >/dev/null; } ||
        { echo "dcpi: apt-get failed for:$missing" >&2; exit 1; }
else
    echo "dcpi: missing Debian packages; run as root:" >&2
    echo "    sudo apt-get install -y$missing" >&2
    exit 1
fi
