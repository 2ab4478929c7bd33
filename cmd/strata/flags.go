package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/strata-broker/strata/config"
)

// setFlags collects repeated --set key=value flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// loadConfig parses the --config and --set flags shared by the commands
// that need a broker configuration, and loads it.
func loadConfig(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*config.Broker, error) {
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "Kafka-style properties file (default: built-in defaults)")
	var sets setFlags
	fs.Var(&sets, "set", "override one key: --set key=value (repeatable, applied after the file)")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return config.Load(*path, sets)
}
