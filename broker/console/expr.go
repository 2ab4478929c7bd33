package console

// The message browser's expression filter: a CEL expression
// (https://cel.dev) evaluated on each record, for what substrings cannot
// say ("json.user.id == 42 && headers['region'] == 'eu'"). CEL is not
// Turing-complete and every evaluation is metered, so a visitor's
// expression cannot hang or crash the broker: it is compiled once per
// request and type-checked to a bool, its cost per record is capped, and
// the request's context interrupts it.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// Bounds of an expression filter: its length in bytes, the parser's
// nesting depth, the cost of one record's evaluation, and how many
// iterations of a comprehension run between checks of the request's
// context. The cost is in cel-go's units, about one per operation and
// per ten bytes a string function reads: a regular expression over a
// 1 MiB value fits, and the costliest expression stops after some tens
// of milliseconds of one core per record.
const (
	maxExprLen     = 2 << 10
	maxExprDepth   = 32
	exprCostLimit  = 200_000
	exprCheckEvery = 100
)

// exprEnv declares the variables an expression sees; see recordVars.
var exprEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("key", cel.StringType),
		cel.Variable("value", cel.StringType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("partition", cel.IntType),
		cel.Variable("offset", cel.IntType),
		cel.Variable("timestamp", cel.IntType),
		cel.Variable("json", cel.DynType),
		cel.ParserExpressionSizeLimit(maxExprLen),
		cel.ParserRecursionLimit(maxExprDepth),
	)
})

// exprFilter is a compiled expression filter.
type exprFilter struct {
	prg   cel.Program
	spent atomic.Uint64 // the cost of every evaluation so far
}

// compileExpr compiles src, which must be a bool (or a dyn, such as a
// JSON field, that is a bool when it runs); its errors are the user's.
func compileExpr(src string) (*exprFilter, error) {
	if len(src) > maxExprLen {
		return nil, fmt.Errorf("expr filter: %d bytes, at most %d", len(src), maxExprLen)
	}
	env, err := exprEnv()
	if err != nil {
		return nil, fmt.Errorf("expr filter: environment: %w", err)
	}
	ast, iss := env.Compile(src)
	if err := iss.Err(); err != nil {
		return nil, fmt.Errorf("expr filter does not compile:\n%w", err)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("expr filter has type %s, want bool (e.g. json.id == 42)", t)
	}
	prg, err := env.Program(ast,
		cel.CostLimit(exprCostLimit),
		cel.InterruptCheckFrequency(exprCheckEvery),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("expr filter: %w", err)
	}
	return &exprFilter{prg: prg}, nil
}

// match evaluates the filter on m. An error (a missing map key, the cost
// limit, a cancelled ctx) or a result other than true is no match.
func (e *exprFilter) match(ctx context.Context, m *message) bool {
	if ctx.Err() != nil {
		return false
	}
	out, det, err := e.prg.ContextEval(ctx, &recordVars{m: m})
	if det != nil && det.ActualCost() != nil {
		e.spent.Add(*det.ActualCost())
	} else if err != nil {
		e.spent.Add(exprCostLimit) // cut short at the limit
	}
	return err == nil && out == types.True
}

// spentCost is the cost of every evaluation so far: a live tail, which
// has no scan limit of its own, ends when it passes tailExprBudget.
func (e *exprFilter) spentCost() uint64 {
	if e == nil {
		return 0
	}
	return e.spent.Load()
}

// recordVars are one record's variables: key and value as strings (""
// when null, invalid UTF-8 replaced by U+FFFD); headers as a map (the
// last of a repeated key wins); partition, offset and timestamp (ms) as
// ints; json the value parsed as JSON, null when it does not parse. Each
// is made only when the expression reads it.
type recordVars struct {
	m      *message
	json   any
	parsed bool
}

// ResolveName implements interpreter.Activation.
func (r *recordVars) ResolveName(name string) (any, bool) {
	switch name {
	case "key":
		return text(r.m.Key), true
	case "value":
		return text(r.m.Value), true
	case "headers":
		hs := make(map[string]string, len(r.m.Headers))
		for _, h := range r.m.Headers {
			hs[text([]byte(h.Key))] = text(h.Value)
		}
		return hs, true
	case "partition":
		return int64(r.m.Partition), true
	case "offset":
		return r.m.Offset, true
	case "timestamp":
		return r.m.Timestamp, true
	case "json":
		if !r.parsed {
			r.parsed = true
			r.json = parseJSON(r.m.Value)
		}
		return r.json, true
	}
	return nil, false
}

// Parent implements interpreter.Activation: there is none.
func (r *recordVars) Parent() interpreter.Activation { return nil }

// text is b as a CEL string, which must be valid UTF-8.
func text(b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// parseJSON is b decoded as JSON (numbers as doubles, which CEL compares
// equal to ints: json.id == 42), or null.
func parseJSON(b []byte) any {
	var v any
	if len(b) == 0 || json.Unmarshal(b, &v) != nil || v == nil {
		return types.NullValue
	}
	return v
}
