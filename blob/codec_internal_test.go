package blob

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The probe keeps zstd off incompressible segments and lets compressible ones through.
func TestProbeDecidesBeforeCompressingTheWhole(t *testing.T) {
	random := make([]byte, 4<<20)
	rand.NewChaCha8([32]byte{5}).Read(random)
	zeros := make([]byte, 4<<20)
	text := bytes.Repeat([]byte("step 7: wrote outputs/result-3.json\n"), 1<<17)
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"random bytes fail the probe", random, false},
		{"zeros pass it", zeros, true},
		{"text passes it", text, true},
		{"a body shorter than the probe's threshold always passes", random[:probeMinBytes-1], true},
	} {
		if got := worthCompressing(tc.data); got != tc.want {
			t.Errorf("%s: worthCompressing = %v", tc.name, got)
		}
	}
}
