//go:build linux || darwin

package etcdstore

import "syscall"

// diskAvailable is the free space of dir's filesystem that an
// unprivileged process may use.
func diskAvailable(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
