package minio

import "syscall"

// sysProcAttr kills the server when the test process dies without cleanup
// (a panic or timeout), so no MinIO outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
