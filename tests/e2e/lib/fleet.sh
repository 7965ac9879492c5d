# tests/e2e/lib/fleet.sh - a private ClickHouse server for the fleet tests (and bench/fleet.sh):
# sourced after common.sh. fleet_start DIR [CLUSTER_PORTS...] writes a config into DIR (data,
# logs, a users file with "default" (no password) and "pusher" (password in DIR/password)), picks
# free ports on 127.0.0.1, starts clickhouse-server in the background and waits for /ping.
# It sets FLEET_HTTP (http://127.0.0.1:PORT/), FLEET_TCP (its native port) and FLEET_PID.
# With FLEET_TLS=1 it also serves https with a self-signed certificate for 127.0.0.1
# (DIR/crt.pem, made with openssl): FLEET_HTTPS is https://127.0.0.1:PORT/.
# With CLUSTER_PORTS (native ports of other servers), remote_servers holds the cluster "two"
# of this server and those as shards. fleet_stop DIR stops the one started in DIR.
# With FLEET_TMPFS=1 (the tests) the server's data directory DIR/data is a link to a directory in
# /dev/shm when that is a writable tmpfs: each insert makes a part of many small files, and on a
# busy ext4 /tmp the kernel's inode allocation took most of the servers' CPU (measured: 3/4 of
# it, in find_inode_bit/recently_deleted). fleet_rm DIR removes that directory (the tests' exit).
# clickhouse-server is a Debian package make deps installs: its absence is a failure.

# fleet_free_port: a port nothing listens on, below the kernel's ephemeral range (where an
# outgoing connection may take a port between this check and the server's bind)
fleet_free_port() {
    local p lo
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${lo:-0}" -gt 12000 ] || lo=32768
    for _ in $(seq 1 50); do
        p=$((10000 + RANDOM % (lo - 10000)))
        (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return 0; }
    done
    return 1
}

fleet_start() {
    local try
    for try in 1 2 3; do
        fleet_start_once "$@" && return 0
    done
    echo "FAIL: clickhouse-server did not start in 3 tries: $FLEET_NOTE"
    exit 1
}

# fleet_start_once DIR [CLUSTER_PORTS...]: one start on fresh ports; returns 1 with FLEET_NOTE
# (its exit status and last log lines) when the server exited before answering (a port taken
# between fleet_free_port's check and the server's bind: status 70, "Address already in use";
# seen once in an ASan run of fleet_query), and fails when it runs but never answers.
fleet_start_once() {
    local dir=$1 http tcp inter i st
    shift
    e2e_require clickhouse-server clickhouse-server
    if [ "${FLEET_TMPFS:-0}" = 1 ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
        [ -w /dev/shm ] && [ ! -e "$dir/data" ]; then
        local shm
        shm=$(mktemp -d /dev/shm/dcpi-fleet.XXXXXX) || { echo "FAIL: mktemp in /dev/shm"; exit 1; }
        ln -s "$shm" "$dir/data"
    fi
    mkdir -p "$dir/data/tmp" "$dir/data/user_files"
    http=$(fleet_free_port) && tcp=$(fleet_free_port) && inter=$(fleet_free_port) ||
        { echo "FAIL: no free port"; exit 1; }
    local tls=""
    FLEET_HTTPS=""
    if [ "${FLEET_TLS:-0}" = 1 ]; then
        e2e_require openssl openssl
        local hp
        hp=$(fleet_free_port) || { echo "FAIL: no free port"; exit 1; }
        openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 \
            -addext "subjectAltName=IP:127.0.0.1" -keyout "$dir/key.pem" -out "$dir/crt.pem" \
            -days 2 >/dev/null 2>&1 || { echo "FAIL: openssl req"; exit 1; }
        tls="<https_port>$hp</https_port><openSSL><server><certificateFile>$dir/crt.pem</certificateFile><privateKeyFile>$dir/key.pem</privateKeyFile><verificationMode>none</verificationMode><loadDefaultCAFile>false</loadDefaultCAFile><disableProtocols>sslv2,sslv3</disableProtocols></server></openSSL>"
        FLEET_HTTPS="https://127.0.0.1:$hp/"
    fi
    echo 'pw-"q\uote' >"$dir/password"
    local shards="<shard><replica><host>127.0.0.1</host><port>$tcp</port></replica></shard>"
    for p in "$@"; do
        shards="$shards<shard><replica><host>127.0.0.1</host><port>$p</port></replica></shard>"
    done
    cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/server.err</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http</http_port><tcp_port>$tcp</tcp_port><interserver_http_port>$inter</interserver_http_port>
  <path>$dir/data/</path><tmp_path>$dir/data/tmp/</tmp_path><user_files_path>$dir/data/user_files/</user_files_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size><uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
  <remote_servers><two>$shards</two></remote_servers>
  $tls
</yandex>
XML
    cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
    <pusher><password>pw-&quot;q\uote</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></pusher>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
XML
    clickhouse-server --config-file="$dir/config.xml" >"$dir/stdout" 2>&1 &
    FLEET_PID=$!
    echo $FLEET_PID >"$dir/pid"
    FLEET_HTTP="http://127.0.0.1:$http/"
    FLEET_TCP=$tcp
    for i in $(seq 1 200); do
        [ "$(curl -s "$FLEET_HTTP"ping 2>/dev/null)" = "Ok." ] && return 0
        if ! kill -0 $FLEET_PID 2>/dev/null; then
            wait $FLEET_PID
            st=$?
            FLEET_NOTE="exit status $st, ports $http $tcp $inter: $(tail -q -n 3 "$dir/server.err" "$dir/stdout" 2>/dev/null)"
            echo "note: clickhouse-server exited at start ($FLEET_NOTE); again on other ports"
            return 1
        fi
        sleep 0.1
    done
    echo "FAIL: clickhouse-server did not answer in 20 s: $(tail -q -n 3 "$dir/server.err" "$dir/stdout" 2>/dev/null)"
    exit 1
}

fleet_stop() {
    local pid
    pid=$(cat "$1/pid" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
}

# fleet_rm DIR: remove the data directory in /dev/shm of the server of DIR (FLEET_TMPFS=1).
fleet_rm() {
    local shm
    shm=$(readlink "$1/data" 2>/dev/null) || return 0
    case "$shm" in /dev/shm/dcpi-fleet.*) rm -rf "$shm" ;; esac
}

# fleet_sql URL SQL: run one statement, print its TabSeparated result.
fleet_sql() {
    curl -sS --fail-with-body "$1" --data-binary "$2"
}

# fleet_restart DIR: start the server of DIR again on the same ports (after fleet_stop, or after
# the test killed it). The old server must have exited first: its listening sockets close only
# then, and a server started before that cannot bind its ports and exits (make test, once: "did
# not start again"). A server that exits at start is tried again, 3 times.
fleet_restart() {
    local url old st try
    old=$(cat "$1/pid" 2>/dev/null)
    for _ in $(seq 1 100); do # gone, or a zombie (its files closed)
        st=$(awk '{ print $3 }' "/proc/$old/stat" 2>/dev/null)
        [ -z "$st" ] || [ "$st" = Z ] && break
        sleep 0.1
    done
    url=$(sed -n 's|.*<http_port>\([0-9]*\)</http_port>.*|http://127.0.0.1:\1/|p' "$1/config.xml")
    for try in 1 2 3; do
        clickhouse-server --config-file="$1/config.xml" >>"$1/stdout" 2>&1 &
        FLEET_PID=$!
        echo $FLEET_PID >"$1/pid"
        for _ in $(seq 1 200); do
            [ "$(curl -s "${url}ping" 2>/dev/null)" = "Ok." ] && return 0
            kill -0 $FLEET_PID 2>/dev/null || break
            sleep 0.1
        done
        kill -0 $FLEET_PID 2>/dev/null && break # running, not answering in 20 s
        wait $FLEET_PID
        echo "note: clickhouse-server exited at restart $try (status $?): $(tail -q -n 3 "$1/server.err" "$1/stdout" 2>/dev/null)"
        sleep 1
    done
    echo "FAIL: clickhouse-server did not start again: $(tail -q -n 3 "$1/server.err" "$1/stdout" 2>/dev/null)"
    exit 1
}

# fleet_hostile_prog DIR: build a program whose hot function's symbol name holds a quote, a
# double quote and backslashes ("q'uo\"te\back\ttab\nnl", the \t and \n as two characters each)
# at a path with a quote, a double quote, a backslash, a tab and a space; it sets its command
# name to "c'o\"m\m<TAB>x" and runs for MS milliseconds of CPU time (its argument; 1000 without
# one). Prints the program's path.
fleet_hostile_prog() {
    local d="$1/we'ird \"dir\\	x"
    mkdir -p "$d"
    cat >"$1/hn.s" <<'ASM'
    .text
    .globl "q'uo\"te\\back\ttab\nnl"
    .type "q'uo\"te\\back\ttab\nnl", @function
"q'uo\"te\\back\ttab\nnl":
.Lhq:
    leal (%rdi,%rdi,2), %eax
    imull %eax, %eax
    imull %eax, %eax
    ret
    .size "q'uo\"te\\back\ttab\nnl", .-.Lhq
    .globl call_hq
    .type call_hq, @function
call_hq:
    jmp .Lhq
    .size call_hq, .-call_hq
    .section .note.GNU-stack,"",@progbits
ASM
    cat >"$1/hm.c" <<'C'
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
int call_hq(int);
int main(int argc, char **argv)
{
    prctl(PR_SET_NAME, "c'o\"m\\m\tx");
    volatile long s = 0;
    clock_t cpu = (clock_t)(argc > 1 ? atol(argv[1]) : 1000) * (CLOCKS_PER_SEC / 1000);
    while (clock() < cpu) /* MS of CPU, however loaded the machine */
        for (long i = 0; i < 1000000; i++)
            s += call_hq((int)i);
    return (int)(s & 0);
}
C
    gcc -O1 -Wl,--build-id -o "$d/prog" "$1/hm.c" "$1/hn.s" 2>"$1/gcc.err" ||
        { echo "FAIL: gcc: $(grep -v Warning "$1/gcc.err" | head -3)" >&2; return 1; }
    printf '%s\n' "$d/prog"
}
