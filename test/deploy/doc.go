// Package deploy checks the deployment files under deploy/ against the
// broker they deploy, without running them: the systemd unit (its
// hardening, the stop timeout against the controlled shutdown, the open
// file limit against the partitions, the writable paths against log.dirs,
// and `systemd-analyze verify` where systemd is installed), its sample
// configuration, and the two Dockerfiles (the same runtime, ports and
// volume matching the image's configuration, a health check on the
// broker's readiness endpoint). Compose runs for real in test/compose.
package deploy
