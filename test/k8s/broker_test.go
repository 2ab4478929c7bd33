package k8s

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// shutdownMargin is what the grace period must leave after the controlled
// shutdown's bound: connections drain, logs are flushed with their
// clean-shutdown marker and the etcd lease is revoked.
const shutdownMargin = 10 * time.Second

// brokerPod is one Strata pod of a build as the broker sees it.
type brokerPod struct {
	pod
	sts  *appsv1.StatefulSet
	c    *corev1.Container
	cfg  *config.Broker
	conf string // --config, the path in the container
}

// brokerPods loads the configuration of every pod of the StatefulSet
// strata: the ConfigMap's server.properties with the pod's --set flags,
// the downward API and Secrets resolved for that pod, as `strata serve`
// would, through the config package.
func brokerPods(t *testing.T, objs []*object) []brokerPod {
	t.Helper()
	return brokerPodsIn(t, objs, zone)
}

// brokerPodsIn is brokerPods with the nodes in zone z ("": no zone label).
func brokerPodsIn(t *testing.T, objs []*object, z string) []brokerPod {
	t.Helper()
	sts := named[appsv1.StatefulSet](objs, "strata")
	if sts == nil {
		t.Fatal("no StatefulSet strata")
	}
	c := container(t, &sts.Spec.Template, "strata")
	var out []brokerPod
	for i := range int(*sts.Spec.Replicas) {
		bp := brokerPod{pod: statefulPodIn(sts.Name, i, &sts.Spec.Template, z), sts: sts, c: c}
		vars, err := env(objs, bp.pod, c)
		if err != nil {
			t.Fatalf("%s: %v", bp.name, err)
		}
		conf, sets := serveFlags(t, commandLine(t, c, vars))
		bp.conf = conf
		props := configFile(t, objs, sts, c, conf)
		bp.cfg, err = config.Load(props, sets)
		if err != nil {
			t.Fatalf("%s: strata serve would refuse its configuration: %v", bp.name, err)
		}
		out = append(out, bp)
	}
	return out
}

// serveFlags parses `strata serve --config F --set k=v ...`, in either
// flag form; anything else fails the test.
func serveFlags(t *testing.T, argv []string) (conf string, sets []string) {
	t.Helper()
	if len(argv) < 2 || path.Base(argv[0]) != "strata" || argv[1] != "serve" {
		t.Fatalf("command line %q: want strata serve ...", argv)
	}
	for i := 2; i < len(argv); i++ {
		name, val, ok := strings.Cut(strings.TrimLeft(argv[i], "-"), "=")
		if !ok && i+1 < len(argv) {
			i++
			val = argv[i]
		}
		switch name {
		case "config":
			conf = val
		case "set":
			sets = append(sets, val)
		default:
			t.Fatalf("command line %q: flag %q is not one of strata serve's", argv, argv[i])
		}
	}
	if conf == "" {
		t.Fatalf("command line %q: no --config", argv)
	}
	return conf, sets
}

// configFile finds the ConfigMap key mounted at path conf in container c
// and writes it to a temporary file, whose name it returns.
func configFile(t *testing.T, objs []*object, sts *appsv1.StatefulSet, c *corev1.Container, conf string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if path.Dir(conf) != path.Clean(m.MountPath) {
			continue
		}
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			if len(v.ConfigMap.Items) > 0 {
				t.Fatalf("volume %s: items are not modelled", v.Name)
			}
			cm := named[corev1.ConfigMap](objs, v.ConfigMap.Name)
			if cm == nil {
				t.Fatalf("--config %s: volume %s: no ConfigMap %q", conf, v.Name, v.ConfigMap.Name)
			}
			data, ok := cm.Data[path.Base(conf)]
			if !ok {
				t.Fatalf("--config %s: ConfigMap %s has no key %s", conf, cm.Name, path.Base(conf))
			}
			p := filepath.Join(t.TempDir(), path.Base(conf))
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("--config %s is not in a ConfigMap volume of container %s", conf, c.Name)
	return ""
}

// hostPort splits host:port, failing the test on error.
func hostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return h, int32(n)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestBrokerMatchesConfig checks each Strata pod of every build against
// its configuration as the broker parses it: node.id is the ordinal,
// broker.rack the zone, every listener binds all interfaces on a container
// port and advertises the pod's own name under the headless Service,
// metrics.listener is a container port reachable from the kubelet, the
// probes ask it for the broker's health and readiness paths, Prometheus is
// pointed at it, and the grace period covers the controlled shutdown.
func TestBrokerMatchesConfig(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.dir, func(t *testing.T) {
			pods := brokerPods(t, b.objs)
			for i, bp := range pods {
				checkBroker(t, b.objs, i, bp)
			}
			checkReplication(t, b.objs, pods[0])
		})
	}
}

// TestBrokerWithoutZoneLabel checks the pods on a cluster that does not
// copy the node's zone onto pods (before Kubernetes 1.35): the broker
// still starts, with no rack.
func TestBrokerWithoutZoneLabel(t *testing.T) {
	for _, b := range buildAll(t) {
		for _, bp := range brokerPodsIn(t, b.objs, "") {
			if bp.cfg.Rack != "" {
				t.Errorf("%s %s: broker.rack %q without a zone label, want empty", b.dir, bp.name, bp.cfg.Rack)
			}
		}
	}
}

func checkBroker(t *testing.T, objs []*object, ordinal int, bp brokerPod) {
	cfg, c, sts := bp.cfg, bp.c, bp.sts
	if cfg.NodeID != int32(ordinal) {
		t.Errorf("%s: node.id %d, want its ordinal %d", bp.name, cfg.NodeID, ordinal)
	}
	if cfg.Rack != zone {
		t.Errorf("%s: broker.rack %q, want its node's zone %q", bp.name, cfg.Rack, zone)
	}
	ports := map[int32]string{} // container port → what uses it
	for _, cp := range c.Ports {
		if cp.Protocol != "" && cp.Protocol != corev1.ProtocolTCP {
			t.Errorf("%s: container port %s is %s", bp.name, cp.Name, cp.Protocol)
		}
		ports[cp.ContainerPort] = ""
	}
	use := func(port int32, what string) {
		if prev, ok := ports[port]; !ok {
			t.Errorf("%s: %s port %d is not a container port", bp.name, what, port)
		} else if prev != "" {
			t.Errorf("%s: port %d is used by %s and %s", bp.name, port, prev, what)
		} else {
			ports[port] = what
		}
	}
	wantHost := fmt.Sprintf("%s.%s.%s.svc", bp.name, sts.Spec.ServiceName, namespace)
	for _, l := range cfg.KafkaListeners {
		host, port := hostPort(t, l.Addr)
		if host != "" && host != "0.0.0.0" && host != "::" {
			t.Errorf("%s: listener %s binds %q; other pods could not reach it", bp.name, l.Name, host)
		}
		use(port, "listener "+l.Name)
		if l.Advertised == "" {
			t.Errorf("%s: listener %s is not advertised", bp.name, l.Name)
			continue
		}
		ahost, aport := hostPort(t, l.Advertised)
		if ahost != wantHost || aport != port {
			t.Errorf("%s: listener %s advertises %s, want %s:%d, the pod's name under its headless Service", bp.name, l.Name, l.Advertised, wantHost, port)
		}
	}
	mhost, mport := hostPort(t, cfg.MetricsListener)
	if ip := net.ParseIP(mhost); mhost == "localhost" || (ip != nil && ip.IsLoopback()) {
		t.Errorf("%s: metrics.listener %s is loopback; the kubelet's probes and Prometheus could not reach it", bp.name, cfg.MetricsListener)
	}
	use(mport, "metrics.listener")
	for port, what := range ports {
		if what == "" {
			t.Errorf("%s: container port %d serves nothing in the configuration", bp.name, port)
		}
	}

	scheme := corev1.URISchemeHTTP
	if cfg.Metrics.SecurityProtocol == config.ProtocolSSL {
		scheme = corev1.URISchemeHTTPS
	}
	probes := []struct {
		name string
		p    *corev1.Probe
		path string
	}{
		{"startupProbe", c.StartupProbe, broker.HealthzPath},
		{"livenessProbe", c.LivenessProbe, broker.HealthzPath},
		{"readinessProbe", c.ReadinessProbe, broker.ReadyzPath},
	}
	for _, pr := range probes {
		if pr.p == nil || pr.p.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s", bp.name, pr.name)
			continue
		}
		g := pr.p.HTTPGet
		if g.Path != pr.path {
			t.Errorf("%s: %s asks %s, want %s", bp.name, pr.name, g.Path, pr.path)
		}
		if port, _ := containerPort(c, g.Port); port != mport {
			t.Errorf("%s: %s on port %s (%d), want metrics.listener's %d", bp.name, pr.name, g.Port.String(), port, mport)
		}
		if s := g.Scheme; s != scheme && !(s == "" && scheme == corev1.URISchemeHTTP) {
			t.Errorf("%s: %s scheme %s, want %s (metrics.listener.security.protocol %s)", bp.name, pr.name, s, scheme, cfg.Metrics.SecurityProtocol)
		}
	}

	ann := sts.Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != itoa(mport) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("%s: Prometheus annotations %v, want scrape true on port %d, path /metrics", bp.name, ann, mport)
	}

	grace := sts.Spec.Template.Spec.TerminationGracePeriodSeconds
	min := broker.ControlledShutdownTimeout + shutdownMargin
	if grace == nil {
		t.Errorf("%s: no terminationGracePeriodSeconds, want at least %v", bp.name, min)
	} else if time.Duration(*grace)*time.Second < min {
		t.Errorf("%s: terminationGracePeriodSeconds %d, want at least %v (the controlled shutdown's %v and %v to drain and flush)",
			bp.name, *grace, min, broker.ControlledShutdownTimeout, shutdownMargin)
	}

	pvcs := map[string]bool{}
	for _, v := range sts.Spec.VolumeClaimTemplates {
		pvcs[v.Name] = true
	}
	for _, dir := range cfg.LogDirs {
		if m := mountOf(c, dir); m == nil || !pvcs[m.Name] || m.ReadOnly {
			t.Errorf("%s: log dir %s is not on a writable volumeClaimTemplate", bp.name, dir)
		}
	}
	if cfg.RemoteLogStorageSystemEnable && cfg.RemoteLogStorageBackend == "local" {
		t.Errorf("%s: the tier is a local directory; each pod would have its own", bp.name)
	}
}

// mountOf returns the volume mount holding path p, the deepest one.
func mountOf(c *corev1.Container, p string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && (best == nil || len(mp) > len(path.Clean(best.MountPath))) {
			best = &c.VolumeMounts[i]
		}
	}
	return best
}

// checkReplication checks that the cluster's replication survives what
// the manifests allow: the pods spread over zones and nodes, and the
// disruption budget never takes more brokers than min.insync.replicas
// leaves to spare.
func checkReplication(t *testing.T, objs []*object, bp brokerPod) {
	cfg, sts := bp.cfg, bp.sts
	replicas := *sts.Spec.Replicas
	if int32(cfg.DefaultReplicationFactor) > replicas || int32(cfg.OffsetsTopicReplicationFactor) > replicas || int32(cfg.TransactionStateLogReplicationFactor) > replicas {
		t.Errorf("replication factors (default %d, offsets %d, transactions %d) exceed the %d brokers",
			cfg.DefaultReplicationFactor, cfg.OffsetsTopicReplicationFactor, cfg.TransactionStateLogReplicationFactor, replicas)
	}
	spare := int32(cfg.DefaultReplicationFactor) - cfg.MinInsyncReplicas
	if spare < 1 {
		t.Errorf("default.replication.factor %d with min.insync.replicas %d: no broker may stop without stopping acks=all producers", cfg.DefaultReplicationFactor, cfg.MinInsyncReplicas)
	}
	var pdb *policyv1.PodDisruptionBudget
	for _, p := range all[policyv1.PodDisruptionBudget](objs) {
		if labelSelector(t, p.Spec.Selector).Matches(labelsOf(sts)) {
			pdb = p
		}
	}
	switch {
	case pdb == nil:
		t.Error("no PodDisruptionBudget selects the brokers")
	case pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.Type != intstr.Int || pdb.Spec.MaxUnavailable.IntVal > spare:
		t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want a number up to %d (replication factor less min.insync.replicas)", pdb.Name, pdb.Spec.MaxUnavailable, spare)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: after a full restart pod 0 is ready only once other brokers are up; OrderedReady would wait for it forever", sts.Spec.PodManagementPolicy)
	}
	spec := sts.Spec.Template.Spec
	byZone := slices.ContainsFunc(spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.TopologyKey == corev1.LabelTopologyZone && c.LabelSelector != nil && labelSelector(t, c.LabelSelector).Matches(labelsOf(sts))
	})
	if !byZone {
		t.Error("the brokers' pods are not spread over zones (topologySpreadConstraints on topology.kubernetes.io/zone)")
	}
}

func labelsOf(sts *appsv1.StatefulSet) labels.Set { return labels.Set(sts.Spec.Template.Labels) }

// TestEtcdCluster checks the etcd StatefulSet of every build: three
// members, each naming itself and its peers by their names under the
// headless Service on the ports the containers expose, limits fit for
// Strata's writes, and the brokers' metadata.etcd.endpoints naming each
// member's client port.
func TestEtcdCluster(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.dir, func(t *testing.T) {
			sts := named[appsv1.StatefulSet](b.objs, "etcd")
			if sts == nil {
				t.Fatal("no StatefulSet etcd")
			}
			if *sts.Spec.Replicas != 3 {
				t.Errorf("etcd has %d members, want 3", *sts.Spec.Replicas)
			}
			c := container(t, &sts.Spec.Template, "etcd")
			port := func(name string) int32 {
				p, ok := containerPort(c, intstr.FromString(name))
				if !ok {
					t.Fatalf("etcd container has no port %q", name)
				}
				return p
			}
			client, peer := port("client"), port("peer")
			members := map[string]string{} // name → peer URL
			for i := range int(*sts.Spec.Replicas) {
				name := fmt.Sprintf("%s-%d", sts.Name, i)
				members[name] = fmt.Sprintf("http://%s.%s.%s.svc:%d", name, sts.Spec.ServiceName, namespace, peer)
			}
			for i := range int(*sts.Spec.Replicas) {
				p := statefulPod(sts.Name, i, &sts.Spec.Template)
				vars, err := env(b.objs, p, c)
				if err != nil {
					t.Fatal(err)
				}
				flags := etcdFlags(t, commandLine(t, c, vars))
				checkEtcdMember(t, p.name, flags, members, sts, client, peer)
			}
			want := map[string]bool{}
			for name := range members {
				want[fmt.Sprintf("%s.%s:%d", name, sts.Spec.ServiceName, client)] = true
			}
			for _, bp := range brokerPods(t, b.objs) {
				got := map[string]bool{}
				for _, e := range bp.cfg.EtcdEndpoints {
					u, err := url.Parse(e)
					if err != nil {
						t.Fatalf("metadata.etcd.endpoints %q: %v", e, err)
					}
					host, p := hostPort(t, u.Host)
					host = strings.TrimSuffix(strings.TrimSuffix(host, "."+namespace+".svc"), "."+namespace)
					got[fmt.Sprintf("%s:%d", host, p)] = true
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s: metadata.etcd.endpoints %q, want one client URL per etcd member %v", bp.name, bp.cfg.EtcdEndpoints, slices.Sorted(maps.Keys(want)))
				}
			}
		})
	}
}

func checkEtcdMember(t *testing.T, name string, flags map[string]string, members map[string]string, sts *appsv1.StatefulSet, client, peer int32) {
	if flags["name"] != name {
		t.Errorf("%s: --name %q", name, flags["name"])
	}
	cluster := map[string]string{}
	for _, m := range strings.Split(flags["initial-cluster"], ",") {
		n, u, _ := strings.Cut(m, "=")
		cluster[n] = u
	}
	if !maps.Equal(cluster, members) {
		t.Errorf("%s: --initial-cluster %q, want %v", name, flags["initial-cluster"], members)
	}
	if flags["initial-advertise-peer-urls"] != members[name] {
		t.Errorf("%s: --initial-advertise-peer-urls %q, want %q", name, flags["initial-advertise-peer-urls"], members[name])
	}
	if want := fmt.Sprintf("http://%s.%s.%s.svc:%d", name, sts.Spec.ServiceName, namespace, client); flags["advertise-client-urls"] != want {
		t.Errorf("%s: --advertise-client-urls %q, want %q", name, flags["advertise-client-urls"], want)
	}
	for flag, port := range map[string]int32{"listen-client-urls": client, "listen-peer-urls": peer} {
		u, err := url.Parse(flags[flag])
		if err != nil {
			t.Fatalf("%s: --%s: %v", name, flag, err)
		}
		if host, p := hostPort(t, u.Host); p != port || (host != "0.0.0.0" && host != "") {
			t.Errorf("%s: --%s %q, want all interfaces on the container port %d", name, flag, flags[flag], port)
		}
	}
	if ops, _ := strconv.Atoi(flags["max-txn-ops"]); ops <= metadata.MaxPartitionsPerWrite {
		t.Errorf("%s: --max-txn-ops %q, want more than metadata.MaxPartitionsPerWrite (%d): a topic is written in one transaction", name, flags["max-txn-ops"], metadata.MaxPartitionsPerWrite)
	}
	if flags["auto-compaction-retention"] == "" {
		t.Errorf("%s: no --auto-compaction-retention: etcd's history would grow until its quota", name)
	}
}

// etcdFlags parses etcd's --key=value command line.
func etcdFlags(t *testing.T, argv []string) map[string]string {
	t.Helper()
	if len(argv) == 0 || path.Base(argv[0]) != "etcd" {
		t.Fatalf("command line %q: want etcd ...", argv)
	}
	flags := map[string]string{}
	for _, a := range argv[1:] {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			t.Fatalf("etcd argument %q: want --key=value", a)
		}
		flags[k] = v
	}
	return flags
}

// TestTierStore checks where each build sends the tier: an S3 endpoint in
// the cluster is a Service port, and a Job creating the bucket creates
// the one the brokers use.
func TestTierStore(t *testing.T) {
	for _, b := range buildAll(t) {
		t.Run(b.dir, func(t *testing.T) {
			cfg := brokerPods(t, b.objs)[0].cfg
			s3 := cfg.RemoteLogStorageS3
			if !cfg.RemoteLogStorageSystemEnable || cfg.RemoteLogStorageBackend != "s3" || s3.Bucket == "" {
				t.Fatalf("tier: enable %v backend %q bucket %q, want S3 with a bucket", cfg.RemoteLogStorageSystemEnable, cfg.RemoteLogStorageBackend, s3.Bucket)
			}
			if s3.Endpoint == "" {
				t.Logf("tier: AWS S3 bucket %s in %s", s3.Bucket, s3.Region)
				return
			}
			u, err := url.Parse(s3.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			host, port := hostPort(t, u.Host)
			svc := named[corev1.Service](b.objs, strings.TrimSuffix(host, "."+namespace+".svc"))
			if svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port }) {
				t.Errorf("remote.log.storage.s3.endpoint %s: no Service %s with port %d", s3.Endpoint, host, port)
			}
			made := false
			for _, w := range workloads(b.objs) {
				for _, c := range w.tmpl.Spec.Containers {
					argv := slices.Concat(c.Command, c.Args)
					if len(argv) > 2 && argv[0] == "mc" && argv[1] == "mb" {
						_, bucket, _ := strings.Cut(argv[len(argv)-1], "/")
						made = made || bucket == s3.Bucket
					}
				}
			}
			if !made {
				t.Errorf("nothing creates the bucket %s on %s", s3.Bucket, s3.Endpoint)
			}
			if !s3.PathStyle {
				t.Errorf("remote.log.storage.s3.path.style is false; MinIO at %s wants path-style", s3.Endpoint)
			}
		})
	}
}
