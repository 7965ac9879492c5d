#!/bin/sh
# Install the Debian packages dcpi needs when they are missing.
#   install-deps.sh REQUIRED... [-- OPTIONAL...]
# As root: apt-get installs every missing package of both lists. As another user: prints the
# exact apt-get command for what is missing; exits 1 when a REQUIRED package is missing, and
# goes on (exit 0) when only OPTIONAL ones are (what they would give is said by cmake).
# DCPI_DEPS_ROOT=0 acts as another user even as root (tests/e2e/build_deps.sh).
req="" opt="" list=req
for p in "$@"; do
    if [ "$p" = "--" ]; then
        list=opt
        continue
    fi
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    case " $req $opt " in *" $p "*) continue ;; esac
    if [ $list = req ]; then req="$req $p"; else opt="$opt $p"; fi
done
[ -z "$req$opt" ] && exit 0
if [ "$(id -u)" = 0 ] && [ "${DCPI_DEPS_ROOT:-1}" != 0 ]; then
    echo "dcpi: installing missing Debian packages:$req$opt"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends $req$opt >/dev/null ||
        { apt-get update >/dev/null && apt-get install -y --no-install-recommends $req$opt >/dev/null; } ||
        { echo "dcpi: apt-get failed for:$req$opt" >&2; exit 1; }
elif [ -n "$req" ]; then
    echo "dcpi: missing Debian packages; run as root:" >&2
    echo "    sudo apt-get install -y$req$opt" >&2
    exit 1
else
    echo "dcpi: optional Debian packages missing, building without them; to have them:" >&2
    echo "    sudo apt-get install -y$opt" >&2
fi
exit 0
