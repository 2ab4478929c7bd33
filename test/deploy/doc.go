// Package deploy checks the deployment files under deploy/ against the
// broker they deploy, without running them: every metric and label the
// Grafana dashboard (deploy/grafana) and the Prometheus alert rules
// (deploy/prometheus) reference must be exported by a running broker's
// /metrics, so a renamed metric breaks a test rather than a dashboard;
// PromQL is read by a small tokenizer (promql.go) that knows the forms
// those files use, not by Prometheus's own parser, which would pull in
// most of Prometheus. The systemd unit (its hardening, the stop timeout
// against the controlled shutdown, the open file limit against the
// partitions, the writable paths against log.dirs, and `systemd-analyze
// verify` where systemd is installed), its sample configuration, and the
// two Dockerfiles (the same runtime, ports and volume matching the image's
// configuration, a health check on the broker's readiness endpoint) are
// checked too. Compose runs for real in test/compose.
package deploy
