package config

import (
	"flag"
	"testing"
)

// TestSettingsFlag: repeated key=value flags collect into the map, later
// ones win, and a value without "=" is refused.
func TestSettingsFlag(t *testing.T) {
	s := Settings{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(s, "set", "")
	if err := fs.Parse([]string{"-set", "a=1", "-set", "b=x=y", "-set", "a=2"}); err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s["a"] != "2" || s["b"] != "x=y" || s.String() != "a=2 b=x=y" {
		t.Fatalf("settings %v (%q)", map[string]string(s), s.String())
	}
	if err := s.Set("novalue"); err == nil {
		t.Fatal("a setting without = was accepted")
	}
}
