# tests/e2e/lib/web.sh - helpers of dcpiweb's tests (web_http.sh, web_browser.sh, web_fleet.sh):
# sourced after common.sh (needs $BIN, $T, fail).
#
# web_start NAME ARGS...: start `dcpiweb ARGS -http 127.0.0.1:0` (ARGS' own -http instead) in the background (log in
# $T/NAME.log), wait (polling, at most 30 s) for the URL it prints, and set WEB_URL
# (http://127.0.0.1:PORT, no trailing slash) and WEB_PID. Fails and exits when it does not come up.
web_start() {
    local name=$1 i
    shift
    local http=(-http 127.0.0.1:0)
    case " $* " in *" -http "*) http=() ;; esac
    "$BIN/dcpiweb" "$@" "${http[@]}" >"$T/$name.log" 2>&1 &
    WEB_PID=$!
    WEB_URL=
    for i in $(seq 300); do
        WEB_URL=$(grep -o 'http://[0-9.]*:[0-9]*' "$T/$name.log" | head -1)
        [ -n "$WEB_URL" ] && return 0
        kill -0 "$WEB_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL: dcpiweb $* did not come up: $(cat "$T/$name.log")"
    exit 1
}

# web_stop PID: SIGTERM, and its exit status must be 0 (a clean stop).
web_stop() {
    kill -TERM "$1" 2>/dev/null || return 0
    wait "$1" || fail "dcpiweb (pid $1) did not stop cleanly on SIGTERM (status $?)"
}

# web_hostile_prog DIR: a program whose hot function's symbol is "<img src=x onerror=alert(1)>"
# (HTML that runs a script if a page ever writes it as markup) and that names its command
# c"o'm<i> (quotes for attributes and JavaScript strings); it runs MS milliseconds of CPU (its
# argument). Prints the program's path.
web_hostile_prog() {
    cat >"$1/xs.s" <<'ASM'
    .text
    .globl "<img src=x onerror=alert(1)>"
    .type "<img src=x onerror=alert(1)>", @function
"<img src=x onerror=alert(1)>":
.Lx:
    leal (%rdi,%rdi,2), %eax
    imull %eax, %eax
    imull %eax, %eax
    ret
    .size "<img src=x onerror=alert(1)>", .-.Lx
    .globl call_x
    .type call_x, @function
call_x:
    jmp .Lx
    .size call_x, .-call_x
    .section .note.GNU-stack,"",@progbits
ASM
    cat >"$1/xm.c" <<'C'
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
int call_x(int);
int main(int argc, char **argv)
{
    prctl(PR_SET_NAME, "c\"o'm<i>");
    volatile long s = 0;
    clock_t cpu = (clock_t)(argc > 1 ? atol(argv[1]) : 300) * (CLOCKS_PER_SEC / 1000);
    while (clock() < cpu)
        for (long i = 0; i < 1000000; i++)
            s += call_x((int)i);
    return (int)(s & 0);
}
C
    gcc -O1 -g -Wl,--build-id -o "$1/xprog" "$1/xm.c" "$1/xs.s" 2>"$1/xgcc.err" ||
        { echo "FAIL: gcc: $(grep -v Warning "$1/xgcc.err" | head -3)" >&2; return 1; }
    printf '%s\n' "$1/xprog"
}
