package strictjson

import "testing"

// A number's text is read as decimal arithmetic reads it: zero in any spelling, an
// integer in any spelling, and a number nearer zero than any float64 is not zero.
func TestNumbersAreReadAsDecimals(t *testing.T) {
	for _, c := range []struct {
		lit                        string
		zero, integral, underflows bool
	}{
		{"0", true, true, false}, {"-0.000e-99999999999999999999", true, true, false}, {"1.50e1", false, true, false},
		{"1.5e1", false, true, false}, {"15e-1", false, false, false}, {"1.0", false, true, false}, {"1e2", false, true, false},
		{"90.0000000000000001", false, false, false}, {"1e-400", false, false, true}, {"-2e-324", false, false, true},
		{"5e-324", false, false, false}, {"1e-99999999999999999999", false, false, true}, {"12e99999999999999999999", false, true, false},
	} {
		zero, integral := Decimal(c.lit)
		if zero != c.zero || integral != c.integral || Underflows(c.lit) != c.underflows {
			t.Errorf("%s: zero %v integral %v underflows %v; want %v %v %v", c.lit, zero, integral, Underflows(c.lit), c.zero, c.integral, c.underflows)
		}
	}
}
