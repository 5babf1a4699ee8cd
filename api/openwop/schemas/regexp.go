package schemas

import (
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MatchTimeout bounds one pattern match in wall-clock time. regexp2 backtracks, so a
// hostile instance string could otherwise make a published pattern run for a long time; a
// match still unanswered once MatchTimeout has passed counts as a mismatch, so the instance
// is rejected rather than accepted.
//
// Wall-clock time includes the time the matching goroutine waits for a CPU: on a loaded
// 2-core node (a dozen validations at once, the race detector) matching "persona" against
// a one-class pattern took up to 430 ms, so a budget of 100 ms refused valid packs. A
// second keeps such waits far from a verdict; no published pattern backtracks
// catastrophically, so the bound is a guard that honest instances never reach.
const MatchTimeout = time.Second

// ecmaRegexp adapts regexp2 in ECMAScript mode to jsonschema.Regexp. JSON Schema 2020-12
// §6.4 makes "pattern" an ECMA-262 regular expression; Go's regexp (RE2) rejects the
// lookahead upstream uses (error-envelope.schema.json's vendor-code pattern).
type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) MatchString(s string) bool {
	return matchWithin(r.re.MatchString, s, MatchTimeout, time.Now)
}

// matchWithin runs match on s until it answers, or until budget has passed on now's clock
// since the first run: then s is a mismatch.
//
// A timeout regexp2 reports is not proof that budget passed. regexp2 measures its
// deadlines on one shared coarse clock that a goroutine of its own advances every 100 ms
// and stops when no match needs it; the clock lags behind the wall clock while it stands
// still and while its goroutine waits to be scheduled on a loaded machine, then jumps. A
// match whose deadline was computed from the lagging value reports a timeout at the jump,
// however briefly it ran (a valid pack refused as malformed, found by
// TestParallelAppliesOfUnrelatedPacksAllInstall under load). Such an answer is no
// verdict, so the match runs again; each run is itself bounded by regexp2's deadline, so
// the whole wait is bounded too.
func matchWithin(match func(string) (bool, error), s string, budget time.Duration, now func() time.Time) bool {
	start := now()
	for {
		ok, err := match(s)
		if err == nil {
			return ok
		}
		if now().Sub(start) >= budget {
			return false
		}
	}
}

func (r ecmaRegexp) String() string { return r.re.String() }

func compileECMA(pattern string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = MatchTimeout
	return ecmaRegexp{re: re}, nil
}
