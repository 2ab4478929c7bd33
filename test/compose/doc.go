// Package compose runs deploy/compose.yaml for real: three Strata brokers,
// etcd and MinIO in containers, driven from the host through the ports the
// compose file publishes on loopback. scripts/compose-test.sh (`make
// compose-test`) installs Docker when missing, starts dockerd, builds the
// images FROM scratch from binaries built on this machine (no registry is
// needed) and runs TestCompose with STRATA_COMPOSE_TEST=1 and the images'
// names in STRATA_IMAGE, STRATA_ETCD_IMAGE and STRATA_MINIO_IMAGE; without
// them the test skips.
//
// The test brings the stack up under a project name of its own with free
// host ports, produces and consumes with kcat, kills one broker container
// and reads every acknowledged record back from the others, checks that
// tiered segments reach the MinIO bucket, and tears the stack down with
// its volumes.
package compose
