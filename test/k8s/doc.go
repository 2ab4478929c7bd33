// Package k8s validates the Kubernetes manifests of deploy/k8s without a
// cluster: each kustomization is built with kustomize's own library (what
// `kubectl kustomize` runs), every object of the output and of each
// manifest file is decoded strictly into the k8s.io/api types as the API
// server would (unknown, duplicate or wrongly cased fields are errors),
// and the tests check what keeps the manifests true to the broker:
// container ports against listeners and metrics.listener as the config
// package parses them for each pod, probe paths against
// broker.HealthzPath and broker.ReadyzPath, the termination grace period
// against broker.ControlledShutdownTimeout, Services and
// PodDisruptionBudgets against the pods they select, the etcd members
// against each other, and every Secret, ConfigMap and $(VAR) reference
// against what exists. A patch must select an object (kustomize lets one
// that selects nothing pass silently).
//
// Concurrency: none; the tests read files only.
package k8s
