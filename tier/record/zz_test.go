package record

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZCorpus(t *testing.T) {
	files, _ := filepath.Glob("/tmp/fz/*")
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		lines := strings.Split(string(raw), "\n")
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		data, err := strconv.Unquote(s)
		if err != nil { t.Fatal(err) }
		start := time.Now()
		b := Batch(data)
		err = Validate(b, ValidateOptions{RequireKeys: true, MaxBatchBytes: 1 << 20, AllowControl: true})
		_, rerr := b.Records()
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Logf("%s: %v codec %v err %v rerr %v", filepath.Base(f), d, b.Codec(), err, rerr)
		}
	}
}
