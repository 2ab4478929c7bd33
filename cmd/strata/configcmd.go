package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/strata-broker/strata/config"
)

// runConfig prints the effective broker configuration (file, --set and
// defaults) as a properties file with each key's doc line; secrets are
// hidden. With --changed, only keys set explicitly.
func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var changed bool
	cfg, err := loadConfig("config", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&changed, "changed", false, "print only the keys set in the file or with --set")
	})
	if err != nil {
		return err
	}
	for _, e := range cfg.DescribeBroker() {
		if changed && e.Source != config.SourceStaticBroker {
			continue
		}
		v, set := cfg.Raw[e.Name]
		switch {
		case e.Sensitive && v != "":
			v = "[hidden]"
		case !set:
			fmt.Fprintf(stdout, "# %s\n#%s=\n", e.Doc, e.Name)
			continue
		}
		fmt.Fprintf(stdout, "# %s\n%s=%s\n", e.Doc, e.Name, v)
	}
	return nil
}
