//go:build race

package blob_test

// raceDetector: the race detector slows byte loops ~40×; tests that only measure a
// property of data size run smaller under it.
const raceDetector = true
