package broker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// logDir is this broker's claim on its log directory: an exclusive lock
// (so two brokers never share one directory) and the directory's identity,
// kept in meta.properties as Kafka keeps node.id there.
type logDir struct {
	lock        *os.File
	incarnation string
}

// errLogDirInUse means another process holds the log directory.
var errLogDirInUse = errors.New("broker: log directory is in use by another process")

// openLogDir locks dir and reads (or creates) its meta.properties. A
// directory that belongs to another node id is refused.
func openLogDir(dir string, nodeID int32) (*logDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock of %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", errLogDirInUse, dir, err)
	}
	ld := &logDir{lock: f}
	path := filepath.Join(dir, "meta.properties")
	props := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
				props[k] = v
			}
		}
	}
	if id, ok := props["node.id"]; ok && id != fmt.Sprint(nodeID) {
		ld.close()
		return nil, fmt.Errorf("log dir %s belongs to node.id %s, not %d", dir, id, nodeID)
	}
	ld.incarnation = props["incarnation"]
	if ld.incarnation == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		ld.incarnation = hex.EncodeToString(b[:])
		body := fmt.Sprintf("# Written by strata; identifies this log directory.\nversion=1\nnode.id=%d\nincarnation=%s\n", nodeID, ld.incarnation)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			ld.close()
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return ld, nil
}

func (ld *logDir) close() error { return ld.lock.Close() }

// sameFilesystem reports whether directories a and b are on one
// filesystem (one device), so that filling one fills the other.
func sameFilesystem(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, fmt.Errorf("stat %s: %w", a, err)
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, fmt.Errorf("stat %s: %w", b, err)
	}
	return uint64(sa.Dev) == uint64(sb.Dev), nil
}
