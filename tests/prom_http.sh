# shellcheck shell=bash
# HTTP and PromQL helpers of the shell tests that talk to Prometheus and /metrics on 127.0.0.1,
# with bash's /dev/tcp rather than curl (a fresh Debian 12 may not have curl). Source it.

# http PORT PATH -> the whole HTTP/1.0 reply (status line, headers, body) on stdout.
http() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1" &&
        printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3 &&
        timeout 10 cat <&3) 2>/dev/null
}
# http_body PORT PATH -> the body of a 200 reply; fails on any other status.
http_body() {
    local reply
    reply=$(http "$1" "$2") || return 1
    [[ ${reply%%$'\n'*} =~ ^HTTP/1\.[01]\ 200 ]] || return 1
    printf '%s' "${reply#*$'\r\n\r\n'}"
}
# urlencode TEXT -> TEXT percent-encoded for a query string.
urlencode() {
    local LC_ALL=C s=$1 out='' c h i
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
            [a-zA-Z0-9._~-]) out+=$c ;;
            *) printf -v h '%%%02X' "'$c" && out+=$h ;;
        esac
    done
    printf '%s' "$out"
}
# values JSON -> the sample values of a vector or scalar answer of /api/v1/query, one per line.
values() { grep -o '"value":\[[^]]*\]' <<<"$1" | sed 's/.*,"\([^"]*\)"\]$/\1/' || true; }
