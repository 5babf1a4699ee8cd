package schemas

import (
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MatchTimeout bounds one pattern match. regexp2 backtracks, so a hostile instance string
// could otherwise make a published pattern run for a long time; a match that times out
// counts as a mismatch, so the instance is rejected rather than accepted.
const MatchTimeout = 100 * time.Millisecond

// ecmaRegexp adapts regexp2 in ECMAScript mode to jsonschema.Regexp. JSON Schema 2020-12
// §6.4 makes "pattern" an ECMA-262 regular expression; Go's regexp (RE2) rejects the
// lookahead upstream uses (error-envelope.schema.json's vendor-code pattern).
type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return err == nil && ok
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
