#!/usr/bin/env bash
# After the api is healthy: the console's address and how to get the demo key's secret (the
# api made the key on the first start; its secret is never logged, so a new one is issued).
set -euo pipefail
url=${MEDIAGEN_PUBLIC_URL:-http://localhost:8080}
id=$(mediagen admin key list --tenant demo 2>/dev/null | awk 'NR>1 && $1 ~ /^key_/ {print $1; exit}')
cat <<MSG
mediagen is up: api and worker on PostgreSQL and MinIO.
  console   $url/console/
  demo key  docker compose exec api mediagen admin key rotate ${id:-<id from: docker compose exec api mediagen admin key list --tenant demo>}
            (prints a secret for the demo tenant's key; sign in to the console with it)
  try       curl -s $url/v1/videos -H "Authorization: Bearer \$KEY" -H 'Content-Type: application/json' -d '{"model":"demo-video-fast","prompt":"a lighthouse at dusk"}'
MSG
