//go:build !linux && !darwin

package etcdstore

import "errors"

// diskAvailable is not measured on this system: the reserve is not
// enforced.
func diskAvailable(string) (int64, error) {
	return 0, errors.New("free space not measured on this system")
}
