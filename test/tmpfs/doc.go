// Package tmpfs mounts small tmpfs filesystems for tests that need a disk
// that really fills up (ENOSPC from the kernel, not from a fake): the log
// appends, the embedded etcd's free-space guard and the broker's
// disk-full end-to-end test. Mounting needs root (CAP_SYS_ADMIN) and
// Linux; elsewhere the test is skipped. Dir, for tests that only want
// fast scratch files, takes a directory on the machine's shared tmpfs
// without mounting anything.
//
// Every mount is undone when its test ends, before the test's temporary
// directory is removed. Concurrency: each call belongs to one test.
package tmpfs
