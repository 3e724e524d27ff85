// Package deploy holds no code: its tests check the deployment files beside it and the ways
// the docs use them — scripts/cluster.sh (`make cluster`) is run, the recipe of
// docs/deploy.md is pasted into a shell against a PostgreSQL and a MinIO of the test's own, and
// the units of deploy/systemd are checked with systemd-analyze and started the way systemd
// would start them.
package deploy
