package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
)

// repo is the repository root.
func repo(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// underAny reports whether path is one of dirs or below one of them.
func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		d = filepath.Clean(strings.TrimPrefix(strings.TrimPrefix(d, "-"), "+"))
		if p := filepath.Clean(path); p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// TestSystemdUnit checks deploy/systemd/strata.service against its sample
// configuration and the broker: the config ExecStart names is the sample
// (installed there), and it loads; the stop timeout outlasts the
// controlled shutdown; the open-file limit leaves room for
// max.broker.partitions; log.dirs is writable under ProtectSystem=strict;
// the hardening options are on.
func TestSystemdUnit(t *testing.T) {
	dir := filepath.Join(repo(t), "deploy", "systemd")
	u, err := parseUnit(filepath.Join(dir, "strata.service"))
	if err != nil {
		t.Fatal(err)
	}
	exec := strings.Fields(u.get("Service", "ExecStart"))
	if len(exec) != 4 || filepath.Base(exec[0]) != "strata" || exec[1] != "serve" || exec[2] != "--config" {
		t.Fatalf("ExecStart = %q, want strata serve --config <file>", exec)
	}
	cfgPath := exec[3]
	sample := filepath.Join(dir, filepath.Base(cfgPath))
	raw, err := os.ReadFile(filepath.Join(dir, "strata.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "deploy/systemd/"+filepath.Base(cfgPath)+" "+cfgPath) {
		t.Errorf("the unit's install steps do not copy deploy/systemd/%s to %s", filepath.Base(cfgPath), cfgPath)
	}
	cfg, err := config.Load(sample, nil)
	if err != nil {
		t.Fatalf("sample config %s: %v", sample, err)
	}

	stop, err := systemdDuration(u.get("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatal(err)
	}
	if stop <= broker.ControlledShutdownTimeout {
		t.Errorf("TimeoutStopSec %v does not exceed the controlled shutdown's %v", stop, broker.ControlledShutdownTimeout)
	}
	if sig := u.get("Service", "KillSignal"); sig != "" && sig != "SIGTERM" && sig != "SIGINT" {
		t.Errorf("KillSignal=%s: the broker stops in order on SIGTERM or SIGINT", sig)
	}

	nofile, err := strconv.ParseUint(u.get("Service", "LimitNOFILE"), 10, 64)
	if err != nil {
		t.Fatalf("LimitNOFILE: %v", err)
	}
	if b := partition.NewBudget(cfg, nofile); b.MaxPartitions < cfg.MaxBrokerPartitions {
		t.Errorf("LimitNOFILE=%d hosts %d partitions, less than max.broker.partitions=%d: %s", nofile, b.MaxPartitions, cfg.MaxBrokerPartitions, b.Describe())
	}

	if got := u.get("Service", "ProtectSystem"); got != "strict" {
		t.Errorf("ProtectSystem=%q, want strict", got)
	}
	for _, k := range []string{"NoNewPrivileges", "ProtectHome", "PrivateTmp", "PrivateDevices"} {
		if got := u.get("Service", k); got != "yes" && got != "true" {
			t.Errorf("%s=%q, want yes", k, got)
		}
	}
	if u.get("Service", "User") == "" || u.get("Service", "User") == "root" {
		t.Errorf("User=%q: the broker must not run as root", u.get("Service", "User"))
	}
	for _, d := range append(append([]string{}, cfg.LogDirs...), cfg.EtcdDir) {
		if d != "" && !underAny(d, u["Service"]["ReadWritePaths"]) {
			t.Errorf("%s (log.dirs or the embedded etcd) is not under ReadWritePaths %q", d, u["Service"]["ReadWritePaths"])
		}
	}
	if cfg.MetricsListener == "" {
		t.Error("the sample has no metrics.listener: strata probe has nothing to ask")
	}
}

// TestSystemdAnalyzeVerify runs `systemd-analyze verify` on the unit, with
// ExecStart pointed at a strata built here (verify wants it to exist).
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := filepath.Join(repo(t), "deploy", "systemd")
	raw, err := os.ReadFile(filepath.Join(dir, "strata.service"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	unit := strings.Replace(string(raw), "ExecStart=/usr/local/bin/strata", "ExecStart="+harness.Binary(t), 1)
	path := filepath.Join(tmp, "strata.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	// Outside a booted systemd, verify also reports on the host's other
	// units; only the lines about this one count.
	var ours []string
	for l := range strings.Lines(string(out)) {
		if strings.Contains(l, "strata.service") {
			ours = append(ours, strings.TrimSpace(l))
		}
	}
	if len(ours) > 0 {
		t.Errorf("systemd-analyze verify (exit %v):\n%s", err, strings.Join(ours, "\n"))
	}
	if err != nil {
		t.Logf("systemd-analyze verify exited %v (not about strata.service):\n%s", err, out)
	}
}
