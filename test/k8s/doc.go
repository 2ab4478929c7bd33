// Package k8s validates the Kubernetes manifests of deploy/k8s without a
// cluster: no kubectl or kustomize runs here, so the tests build each
// kustomization themselves (resources, configMapGenerator, JSON 6902
// patches; any other kustomize field is refused, so the model cannot
// silently drift from what kubectl would do), decode every object
// strictly into the k8s.io/api types as the API server would (unknown or
// duplicate fields are errors), and check what keeps the manifests true
// to the broker: container ports against listeners and metrics.listener
// as the config package parses them, probe paths against
// broker.HealthzPath and broker.ReadyzPath, the termination grace period
// against broker.ControlledShutdownTimeout, Services against the pods
// they select, the etcd members against each other, and every Secret
// and ConfigMap reference against what exists.
//
// Concurrency: none; the tests read files only.
package k8s
