//go:build race

package rest_test

// raceDetector: under the race detector the runtime allocates more per object (a REST
// listing about 1.5 times as much), so tests that compare allocations with an estimate
// allow for it.
const raceDetector = true
