package broker

import (
	"errors"
	"testing"
)

func TestLogDirLockAndIdentity(t *testing.T) {
	dir := t.TempDir()
	ld, err := openLogDir(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openLogDir(dir, 1); !errors.Is(err, errLogDirInUse) {
		t.Fatalf("second open: %v, want errLogDirInUse", err)
	}
	inc := ld.incarnation
	ld.close()
	ld, err = openLogDir(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ld.incarnation != inc || inc == "" {
		t.Fatalf("incarnation %q, then %q", inc, ld.incarnation)
	}
	ld.close()
	if _, err := openLogDir(dir, 2); err == nil {
		t.Fatal("a directory of node 1 was opened as node 2")
	}
}
