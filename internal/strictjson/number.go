package strictjson

import (
	"strconv"
	"strings"
)

// maxExponent bounds the exponent Decimal reads: a number of a longer exponent is
// zero, beyond a float64's range, or nearer zero than any float64 all the same.
const maxExponent = 1 << 30

// Decimal reports whether the text of a JSON number (-?digits[.digits][e[+-]digits]) is
// zero, and whether it is an integer, as decimal arithmetic reads it, not as a float64
// does: 1e-400 is not zero and 90.0000000000000001 not an integer, though their float64s
// are 0 and 90.
func Decimal(lit string) (zero, integral bool) {
	lit = strings.TrimPrefix(lit, "-")
	mant, expText := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, expText = lit[:i], lit[i+1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return true, true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
	if expText == "" {
		exp, err = 0, nil
	}
	if err != nil || exp > maxExponent || exp < -maxExponent {
		exp = maxExponent
		if strings.HasPrefix(expText, "-") {
			exp = -maxExponent
		}
	}
	// digits × 10^(exp - len(frac)): an integer when the power, with the trailing zeros
	// of digits moved into it, is not negative.
	scale := exp - len(frac) + len(digits) - len(strings.TrimRight(digits, "0"))
	return false, scale >= 0
}

// Underflows reports whether the text of a JSON number is not zero but nearer zero than
// any float64, so that encoding/json and strconv.ParseFloat read it as 0 (1e-400).
func Underflows(lit string) bool {
	if !strings.ContainsAny(lit, "eE.") {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	zero, _ := Decimal(lit)
	return err == nil && f == 0 && !zero
}
