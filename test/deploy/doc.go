// Package deploy tests the files under deploy/ against a running broker:
// every metric and label the Grafana dashboard (deploy/grafana) and the
// Prometheus alert rules (deploy/prometheus) reference must be exported
// by a broker's /metrics, so a renamed metric breaks a test rather than a
// dashboard. PromQL is read by a small tokenizer (promql.go) that knows
// the forms those files use, not by Prometheus's own parser, which would
// pull in most of Prometheus.
package deploy
