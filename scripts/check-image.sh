#!/usr/bin/env bash
# Builds the image and checks it the way docs/deployment.md runs it: migrations as their own step,
# two API instances and one worker instance on one PostgreSQL, each healthy and non-root; a hold
# submitted on one instance is read on the other, the chain verifies, and SIGTERM exits 0. Then the
# embedded default: SQLite on a volume. Needs a Docker daemon and a PostgreSQL the containers reach
# on the host network.
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/approvals_image scripts/check-image.sh
#   NODE_IMAGE=<another Node.js 24 image> ...   (passed to the build)
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DATABASE_URL:?set DATABASE_URL to an empty PostgreSQL database}"
IMAGE=approvals:check
PORTS=(18201 18202 18203)
SECRETS_KEY=$(head -c 32 /dev/urandom | base64)
containers=()
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  docker volume rm -f approvals-check-data >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

docker build --network host ${NODE_IMAGE:+--build-arg NODE_IMAGE="$NODE_IMAGE"} -t "$IMAGE" . >/dev/null
echo "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MB", $1/1e6}'))"

run() { docker run --rm --network host -e DATABASE_URL="$DATABASE_URL" -e SECRETS_KEY="$SECRETS_KEY" "$IMAGE" "$@"; }
run node bin/approvals.js migrate
run node bin/approvals.js workspace create image-check --name "Image check" >/dev/null
KEY=$(run node bin/approvals.js keys create --workspace image-check --env live --json |
  sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$KEY" ] || fail "no key created"

start() { # name port role
  containers+=("$1")
  docker run -d --name "$1" --network host -e DATABASE_URL="$DATABASE_URL" -e SECRETS_KEY="$SECRETS_KEY" \
    -e PORT="$2" -e ROLE="$3" -e PUBLIC_URL="http://127.0.0.1:$2" "$IMAGE" >/dev/null
}
healthy() { # name: waits for the image's HEALTHCHECK to pass
  for _ in $(seq 1 60); do
    [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ] && return 0
    sleep 1
  done
  docker logs "$1" | tail -20 >&2
  fail "$1 is not healthy within 60 s"
}
start check-api-1 "${PORTS[0]}" api
start check-api-2 "${PORTS[1]}" api
start check-workers "${PORTS[2]}" workers
for c in check-api-1 check-api-2 check-workers; do
  healthy "$c"
  [ "$(docker exec "$c" id -u)" != 0 ] || fail "$c runs as root"
done
echo "three instances healthy, none as root"

api() { # port method path [body]
  curl -sf -X "$2" "http://127.0.0.1:$1$3" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    ${4:+-d "$4"}
}
HOLD=$(api "${PORTS[0]}" POST /api/v1/holds \
  '{"tool_name":"deploy","arguments":{"v":1},"agent_identity":{"id":"image-check"},"idempotency_key":"k1"}' |
  sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$HOLD" ] || fail "no hold created"
api "${PORTS[1]}" GET "/api/v1/holds/$HOLD" | grep -q '"status":"pending"' || fail "the other instance does not see the hold"
api "${PORTS[1]}" GET /api/v1/audit/verify | grep -q '"valid":true' || fail "the chain does not verify"
code=$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $KEY" \
  "http://127.0.0.1:${PORTS[2]}/api/v1/holds/$HOLD")
[ "$code" = 404 ] ||
  fail "the workers instance answers the API with $code, not 404"
echo "a hold made on one instance is read on the other; the chain verifies; workers serve no API"

for c in check-api-1 check-api-2 check-workers; do
  docker stop -t 20 "$c" >/dev/null
  [ "$(docker inspect -f '{{.State.ExitCode}}' "$c")" = 0 ] || fail "$c did not exit 0 on SIGTERM"
done
echo "SIGTERM: every instance exits 0"

# The embedded default: SQLite under /data, a volume the non-root user can write.
containers+=(check-sqlite)
docker run -d --name check-sqlite -p "${PORTS[0]}:8080" -v approvals-check-data:/data "$IMAGE" >/dev/null
healthy check-sqlite
docker exec check-sqlite test -s /data/approvals.db || fail "no database under /data"
echo "SQLite on a volume: healthy"
echo "image check passed"
