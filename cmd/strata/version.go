package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time: go build -ldflags "-X main.version=v0.1.0".
var version = "dev"

// runVersion prints the version, the Go toolchain and the VCS revision
// when the build recorded one.
func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = " " + s.Value
			}
		}
	}
	fmt.Fprintf(stdout, "strata %s (%s %s/%s%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
	return nil
}
