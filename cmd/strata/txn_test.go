package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTxnArgumentErrors(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"txn"}, 1, "missing txn command"},
		{[]string{"txn", "frob"}, 1, `unknown txn command "frob"`},
		{[]string{"txn", "help"}, 0, ""},
		{[]string{"txn", "list", "-h"}, 0, "--min-age"},
		{[]string{"txn", "list", "extra"}, 1, "unexpected arguments"},
		{[]string{"txn", "describe"}, 1, "want one transactional id"},
		{[]string{"txn", "describe", "a", "b"}, 1, "want one transactional id"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, errOut.String(), tc.code, tc.stderr)
		}
	}
}
